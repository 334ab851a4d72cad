"""Live views opened as a notebook kernel opens them, in this process, for the notebook tests
(tests/test_notebook_views.py, tests/test_browser.py): a kernel is stood in for, nothing else is.
"""
import base64
import contextlib
import html
import io
import re

import common.live as live
import common.notebook as notebook
from common.figures import plt

import ipywidgets
import numpy as np
from PIL import Image  # (matplotlib's own dependency)

from tests import drawing


@contextlib.contextmanager
def in_a_kernel(monkeypatch, backend="agg"):
    """As in a notebook kernel drawing with `backend`: show() takes the notebook's way, and
    what it displays is kept (not printed)."""
    shown = []
    monkeypatch.setattr(live, "kernel", lambda: object())
    monkeypatch.setattr(notebook, "display", lambda *objects, **options: shown.extend(objects))
    before = plt.get_backend()
    plt.switch_backend(backend)
    try:
        yield shown
    finally:
        plt.close("all")
        plt.switch_backend(before)


def handed(name):
    """What the lesson's main() hands show() in a run with --live: its build function and its
    arguments (the run's figure saved under the scratch folder)."""
    return drawing.run_live(name, *drawing.QUICKER.get(name, ()))[2:4]


def open_view(monkeypatch, name, backend="agg"):
    """(the View, what drives it, what was displayed) as `%run name.py --live` opens it in a
    kernel drawing with `backend`."""
    build, args = handed(name)
    views = []

    def building(*a):
        views.append(build(*a))
        return views[-1]

    stack = contextlib.ExitStack()
    shown = stack.enter_context(in_a_kernel(monkeypatch, backend))
    driver = live.show(building, *args)
    return views[0], driver, shown, stack


def drawn_plainly(view):
    """matplotlib's own full draw of the view's figure (tests/drawing.py), in RGB: what a front
    end's PNG holds."""
    return drawing.drawn_plainly(view)[..., :3]


def cropped(pixels, box):
    """The pixels in box (left, top, right, bottom, from the top left): a WidgetView's `crop`."""
    left, top, right, bottom = box
    return pixels[top:bottom, left:right]


def picture_of(driven):
    """The image a WidgetView shows, as pixels, and its alt text (compared with its `crop` of a
    full draw: the figure without its widgets)."""
    found = re.search(r'src="data:image/png;base64,([^"]+)" alt="([^"]*)"', driven.picture.value)
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(found.group(1)))).convert("RGB"))
    return image, html.unescape(found.group(2))


def let_go(control, value):
    """What the front end sends when the learner lets go of a control at `value`."""
    if isinstance(control, ipywidgets.SelectionSlider):
        state = {"index": [v for _, v in control.options].index(value)}
    elif isinstance(control, ipywidgets.RadioButtons):
        state = {"index": list(control.options).index(value)}
    else:
        state = {"value": value}
    control._handle_msg({"content": {"data": {"method": "update", "state": state, "buffer_paths": []}},
                         "buffers": []})
    assert control.value == value  # (ipywidgets logs an error in handling it, and goes on)


def ends(control):
    """A control's last and first values."""
    if isinstance(control, ipywidgets.SelectionSlider):
        values = [v for _, v in control.options]
    elif isinstance(control, ipywidgets.RadioButtons):
        values = list(control.options)
    else:
        return control.max, control.min
    return values[-1], values[0]


