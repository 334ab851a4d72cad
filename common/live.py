"""--live: a lesson's "Try it" in a window, with matplotlib's own sliders and buttons.

How a lesson uses it:

    add_live(parser, "drag d_k and watch the two spreads")
    args = parser.parse_args()
    if args.live:
        need_window(parser)          # before any work: one line and status 2 if no window can open
    ... the lesson computes and prints its lines, exactly as without --live ...
    if args.live:
        show(live_view, args)        # the window; closing it ends the script with status 0

A lesson's `live_view` builds a figure, draws it with the lesson's own functions (the ones
its printed lines come from), adds widgets with one small update function each, and
returns a View: the figure and its widgets by name, so that a test can drive every widget
headless (Agg) and read back what is drawn. A live window never saves a file, and the
figure the lesson saves is the same with --live as without: the window's larger text is
set only while the window is built and while it runs (window_style).

Keyboard: the arrow keys move the active slider (the last one clicked; at first, the
first one) by one step; `q` closes the window (matplotlib's own key).
"""
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

# matplotlib (about a second to import here) is imported by the functions below, when a
# window is wanted: a lesson run without --live does not load it for a window it never opens.

FONT_SIZE = 12  # readable on a laptop screen at the window sizes the lessons use
REDRAW_EVERY = 0.5  # seconds, at least, between redraws of a window that watches a training
DRAWING_SHARE = 0.05  # ... and at most this share of the training's time spent drawing it


@dataclass
class View:
    fig: object
    widgets: dict = field(default_factory=dict)  # name -> widget (Slider, RadioButtons, Button)


def add_live(parser, what):
    """The --live flag, its help saying what the window lets you try."""
    parser.add_argument("--live", action="store_true",
                        help=f"after the printed lines, open a window to try it: {what} (needs a display)")


def why_no_window(instead):
    """None if a window can open here (the figures made next will be windows); else the
    reason in words, ending with `instead`: what to do without a window."""
    from common.figures import plt

    backend = os.environ.get("MPLBACKEND", "")
    if backend.lower() in ("agg", "pdf", "svg", "ps", "cairo", "template"):
        return f"MPLBACKEND={backend} draws no window; run without it set, or {instead}"
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return f"there is no display (DISPLAY is not set); run it on a desktop, or {instead}"
    if sys.platform == "darwin":
        try:
            plt.switch_backend("macosx")  # the Mac's own windows
            return None
        except ImportError:
            pass
    try:
        import tkinter  # the window toolkit elsewhere: part of most Pythons, not all
    except ImportError:
        return ("this Python has no Tk (tkinter), which the window needs; install it (Debian and Ubuntu: "
                f"sudo apt install python3-tk; macOS with Homebrew: brew install python-tk), or {instead}")
    try:
        tkinter.Tk().destroy()  # the display really answers (a window made and dropped, never shown)
        plt.switch_backend("TkAgg")
    except Exception as error:  # a Tk that cannot reach its display raises TclError
        return f"no window could open ({error}); {instead}"
    return None


def need_window(parser):
    """Exit with one line and status 2 if no window can open; else make the next figures windows."""
    from common.figures import plt

    saves = any("--figure" in action.option_strings for action in parser._actions)
    problem = why_no_window("save the picture with --figure PATH.png" if saves else
                            "run it without --live for the printed lines and the other flags to try")
    if problem:
        parser.exit(2, f"{parser.prog}: --live cannot open a window here: {problem}\n")
    for name, key in (("keymap.back", "left"), ("keymap.forward", "right")):  # the arrows move sliders
        plt.rcParams[name] = [k for k in plt.rcParams[name] if k != key]


@contextmanager
def window_style():
    """Text readable on a laptop screen, for what is drawn inside (and only inside) the block."""
    from common.figures import plt

    with plt.rc_context({"font.size": FONT_SIZE}):
        yield


def add_slider(fig, label, lo, hi, value, row=0, step=1):
    """A slider along the bottom of the window (row 0 lowest), moving in whole steps unless
    `step` says otherwise; the figure leaves room below its plots for one row per slider."""
    from matplotlib.widgets import Slider

    return Slider(fig.add_axes((0.2, 0.05 + 0.07 * row, 0.6, 0.04)), label, lo, hi, valinit=value, valstep=step,
                  initcolor="none")


def arrow_keys(fig, sliders):
    """Left/right (or down/up) move the active slider one step; clicking a slider makes it active."""
    active = [sliders[0]]

    def choose(event):
        for slider in sliders:
            if event.inaxes is slider.ax:
                active[0] = slider

    def step(event):
        direction = {"right": 1, "up": 1, "left": -1, "down": -1}.get(event.key)
        if direction:
            move(active[0], direction)

    fig.canvas.mpl_connect("button_press_event", choose)
    fig.canvas.mpl_connect("key_press_event", step)


def move(slider, direction):
    """One step of the slider: to the next allowed value if it has a list of them."""
    steps = slider.valstep
    if steps is None:
        value = slider.val + direction * (slider.valmax - slider.valmin) / 100
    elif isinstance(steps, (int, float)):
        value = slider.val + direction * steps
    else:  # a list of allowed values, in order
        values = sorted(steps)
        here = min(range(len(values)), key=lambda i: abs(values[i] - slider.val))
        value = values[max(0, min(len(values) - 1, here + direction))]
    slider.set_val(min(max(value, slider.valmin), slider.valmax))


def show(build, *args):
    """Build the window's View, build(*args), and hand it to the learner; return when it is closed."""
    from common.figures import plt

    with window_style():  # the widgets' callbacks run inside plt.show(), so they draw in the style too
        view = build(*args)
        sliders = [w for w in view.widgets.values() if hasattr(w, "valmin")]
        if sliders:
            arrow_keys(view.fig, sliders)
        plt.show()


class TrainingWindow:
    """A window that follows a training: build(*args) gives its View and a redraw function,
    and watch(step, ...) calls redraw(step, ...) now and then.
    Drawing is the slow part, so after each redraw the next one waits until drawing has taken
    at most DRAWING_SHARE of the time since (and at least REDRAW_EVERY seconds): the training
    runs at most about that much slower for being watched. watch(..., last=True) always
    redraws, to show where the training ended. Closing the window lets the training finish."""

    def __init__(self, build, *args):
        from common.figures import plt

        with window_style():
            self.view, self.redraw = build(*args)
            self.view.fig.canvas.mpl_connect("close_event", self.closed)
            if plt.get_backend().lower() != "agg":  # (Agg, in the tests, has no window to open)
                plt.show(block=False)  # the window opens now; the script goes on training
        self.next, self.open = 0.0, True

    def closed(self, event):
        self.open = False

    def watch(self, *state, last=False):
        start = time.monotonic()
        if self.open and (last or start >= self.next):
            first = self.next == 0.0  # the first draw also sets the window up: not a redraw's cost
            with window_style():
                self.redraw(*state)
                self.view.fig.canvas.draw_idle()
                self.view.fig.canvas.flush_events()  # the window draws, and can be moved or closed
            cost = 0.0 if first else time.monotonic() - start
            self.next = time.monotonic() + max(REDRAW_EVERY, cost / DRAWING_SHARE)
