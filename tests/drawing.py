"""A lesson's live view as its run with --live builds it, what the view shows, and what
matplotlib's own full draw of its figure shows: the two pictures the window tests
(tests/test_live.py) and the notebook tests (tests/test_notebook_views.py, tests/test_browser.py)
compare."""
import contextlib
import functools
import io
import os

import common.live as live
from common import OUTPUT_ROOT

import numpy as np

from tests.conftest import SCRATCH, load_script

# The same views, quicker to build (the window tests and the notebook tests): fewer draws, a
# shorter training; what a move redraws does not depend on how long the model trained.
QUICKER = {"week1/02_dot_product_variance": ("--pairs", "2000"), "week1/15_context_decides": ("--steps", "10"),
           "week1/16_heads_take_roles": ("--steps", "20")}


def pixels(fig):
    """The figure's canvas as it holds it now, [height, width, RGBA]."""
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def drawn_plainly(view):
    """The picture matplotlib draws of the figure with nothing animated and no Blit (every
    artist in its axes' z-order, each frame over what is inside it), as a window without
    blitting would show it, in the window's style. The Blit keeps its backgrounds (they hold
    no moving artist), so the next move blits as it would have; an ipympl canvas sends this
    draw to no front end."""
    blit, layers = view.blit, view.blit.layers
    moving = [artist for layer in layers.values() for artist in layer]
    manager = getattr(view.fig.canvas, "manager", None)
    refresh = getattr(manager, "refresh_all", None)
    blit.layers = {}  # (its draw_event handler then keeps no background from this picture)
    try:
        for artist in moving:
            artist.set_animated(False)
        if refresh is not None:
            manager.refresh_all = lambda: None
        with live.window_style():
            view.fig.canvas.draw()
        return pixels(view.fig)
    finally:
        for artist in moving:
            artist.set_animated(True)
        blit.layers = layers
        if refresh is not None:
            del manager.refresh_all


@functools.cache
def run_live(name, *argv):
    """The lesson's main() run here with --live and argv (no window opens: show() and the
    display check are replaced, figures go under the scratch folder). Returns its module,
    what it printed, what it handed show() (the build function and its arguments) and the
    TrainingWindows it made, each with the state it last watched (.last)."""
    module = load_script(name)
    handed, windows = [], []

    class Watched(live.TrainingWindow):
        def __init__(self, *args):
            super().__init__(*args)
            windows.append(self)

        def watch(self, *state, last=False):
            self.last = state
            super().watch(*state, last=last)

    # (a lesson imports show and TrainingWindow from common.live when --live asks for them; Lesson.args
    # asks common.live whether a window can open)
    saved = os.environ.get(OUTPUT_ROOT), live.show, live.TrainingWindow, live.need_window
    live.show, live.TrainingWindow = (lambda build, *args: handed.append((build, args))), Watched
    os.environ[OUTPUT_ROOT] = str(SCRATCH / "live_runs")
    live.need_window = lambda parser, saves=False: None
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            module.main([*argv, "--live"])
    finally:
        live.show, live.TrainingWindow, live.need_window = saved[1:]
        if saved[0] is None:
            del os.environ[OUTPUT_ROOT]
        else:
            os.environ[OUTPUT_ROOT] = saved[0]
    (build, args), = handed
    return module, out.getvalue(), build, args, windows
