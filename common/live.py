"""--live: a lesson's "Try it" in a window, with matplotlib's own sliders and buttons.

How a lesson uses it:

    LESSON = Lesson(..., live="drag d_k and watch the two spreads")   # adds --live (common/cli.py)
    args = LESSON.args(argv)         # with --live: one line and status 2 if no window can open
    ... the lesson computes and prints its lines, exactly as without --live ...
    if args.live:
        show(live_view, ...)         # the window, at the run's settings; closing it ends the script

A lesson's `live_view` builds a figure, draws it with the lesson's own functions (the ones
its printed lines come from), adds widgets with one small update function each, and
returns a View: the figure and its widgets by name, so that a test can drive every widget
headless (Agg) and read back what is drawn. It opens at the printed run's own settings, and
shows the printed run's numbers there. A live window never saves a file, and the figure the
lesson saves is the same with --live as without: the window's larger text is set only while
the window is built and while it runs (window_style).

A move redraws only what it changed (Blit): each control's update function changes the
drawn artists in place (set_data, set_height, set_text) and then calls blit.update(layer),
the lowest layer of moving artists it changed.

Keyboard: the arrow keys (with Shift or without) move the active slider (the last one
clicked; at first, the first one) by one step; `q` closes the window (matplotlib's own key).

In a notebook kernel the same View opens inline instead (common/notebook.py), and a
training's window is an image refreshed while the cell runs.
"""
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from common.figures import window_style
from common.kernel import kernel
from common.notebook import TrainingDisplay, ipympl_active, show_view

REDRAW_EVERY = 0.5  # seconds, at least, between redraws of a window that watches a training
DRAWING_SHARE = 0.05  # ... and at most this share of the training's time spent drawing it


@dataclass
class View:
    fig: object
    widgets: dict = field(default_factory=dict)  # name -> widget (Slider, RadioButtons, Button)
    blit: object = None  # the window's Blit (a training's window: its redraw is shown through it)


class Blit:
    """Redraws only what moves: matplotlib's blitting (its guide "Faster rendering by using
    blitting"). The artists a move can change are marked animated, in layers: a full draw of
    the figure (its first, or after a resize) leaves them out and keeps that
    picture as the background, then draws the layers on it one by one, keeping the picture
    below each. A move then puts back the picture below the lowest layer it changed, draws
    that layer and the ones above, and sends the result to the screen. So a control that
    changes much (T, say) is a low layer, and one that changes little (the row) a high one:
    moving the row redraws the row's box, bars and title, not the T x T table.

    Each layer draws its artists in matplotlib's z-order, and the frame of every axes with a
    moving artist is drawn with the highest layer drawn there, so the window shows what a full
    draw without blitting shows (a moving image does not cover its frame). That axes' ticks,
    drawn in the background below every moving artist, are put below them in a full draw too
    (their z-order lowered): at a dpi where a tick's edge falls on a moving image's pixels (a
    notebook's 75 to 89 dpi), both then draw the image over it.

    A widget added (a Slider, RadioButtons) stops drawing itself (a Slider's own redraw is a
    full draw_idle: Slider.drawon) and is drawn with its layer: its knob and number, or its
    buttons; its label and track stay in the background."""

    def __init__(self, fig):
        self.fig, self.layers, self.backgrounds, self.size = fig, {}, {}, None
        self.frames = {}  # axes -> the layer its frame (spines) is drawn with
        fig.canvas.mpl_connect("draw_event", self.drawn)

    def add(self, *artists, layer=0):
        """Draw these artists (or widgets) with `layer`, from now on (and the frames of their
        axes, with the highest layer drawn there); returns the first."""
        for artist in artists:
            if hasattr(artist, "drawon"):  # a widget: its moving parts
                artist.drawon = False
                parts = [artist.poly, artist.valtext, *artist.ax.lines] if hasattr(artist, "valtext") else \
                    artist.ax.collections  # a slider's knob (a line) and number; a radio's buttons
            else:
                parts = [artist]
            for part in parts:
                part.set_animated(True)
            self.forget(*parts)  # (drawn once, with the layer given last)
            self.layers.setdefault(layer, []).extend(parts)
            for ax in {part.axes for part in parts} - {None}:
                moving = [part.get_zorder() for part in parts if part.axes is ax and not hasattr(part, "get_ticklocs")]
                for axis in (ax.xaxis, ax.yaxis) if moving else ():  # (its ticks stand in the kept background)
                    axis.set_zorder(min(axis.get_zorder(), min(moving) - 0.5))
                if ax.axison and self.frames.get(ax, -1) < layer:
                    self.frames[ax] = layer
                    self.add(*ax.spines.values(), layer=layer)
        return artists[0] if artists else None

    def forget(self, *artists):
        """Stop drawing these (removed from the figure, say)."""
        for layer in self.layers.values():
            layer[:] = [a for a in layer if a not in artists]

    def drawn(self, event):
        """After a full draw: keep the picture below each layer, and draw the layers."""
        canvas = self.fig.canvas
        if canvas.is_saving():
            return
        self.size = tuple(self.fig.bbox.size)
        self.draw_layers(min(self.layers, default=0), fresh=True)

    def draw_layers(self, lowest, fresh=False):
        canvas = self.fig.canvas
        for k, number in enumerate(sorted(n for n in self.layers if n >= lowest)):
            if fresh or k > 0:  # the pictures above the lowest layer drawn change with it
                self.backgrounds[number] = canvas.copy_from_bbox(self.fig.bbox)
            else:
                canvas.restore_region(self.backgrounds[number])
            for artist in sorted(self.layers[number], key=lambda a: a.get_zorder()):  # as a full draw orders them
                self.fig.draw_artist(artist)

    def update(self, layer=0):
        """Show a move: `layer` is the lowest layer it changed."""
        canvas = self.fig.canvas
        if self.size is None:  # nothing drawn yet: the window's first draw will show it all
            return
        if self.size != tuple(self.fig.bbox.size) or self.layers.keys() - self.backgrounds.keys():
            canvas.draw_idle()  # after a resize, or with a layer added since: a full draw
            return
        self.draw_layers(layer)
        canvas.blit(self.fig.bbox)


def why_no_window(instead):
    """None if a window can open here (the figures made next will be windows); else the
    reason in words, ending with `instead`: what to do without a window."""
    import matplotlib.pyplot as plt

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


def need_window(parser, saves=False):
    """Exit with one line and status 2 if no window can open; else make the next figures windows.
    In a notebook kernel the view opens inline, with the backend the learner chose: nothing to do."""
    import matplotlib.pyplot as plt  # (common.figures, imported above, chose Agg; the window is chosen below)

    if kernel() is not None:
        return
    problem = why_no_window("save the picture with --figure PATH.png" if saves else
                            "run it without --live for the printed lines and the other flags to try")
    if problem:
        parser.exit(2, f"{parser.prog}: --live cannot open a window here: {problem}\n")
    for name, key in (("keymap.back", "left"), ("keymap.forward", "right")):  # the arrows move sliders
        plt.rcParams[name] = [k for k in plt.rcParams[name] if k != key]


def add_slider(fig, label, lo, hi, value, row=0, step=1, **options):
    """A slider along the bottom of the window (row 0 lowest), moving in whole steps unless
    `step` says otherwise (a number, or the list of allowed values); the figure leaves room
    below its plots for one row per slider. options: more of matplotlib's Slider arguments."""
    from matplotlib.widgets import Slider

    class Quiet(Slider):
        drawon = False  # its constructor's set_val asks for no full draw: the window's first draw draws it

    ax = fig.add_axes((0.2, 0.05 + 0.07 * row, 0.6, 0.04))
    options.setdefault("valfmt", "%g")  # its number as plain text: 5, 0.1 (not drawn as a formula)
    if lo == hi:  # one choice (--heads 1, say): the knob stands in the middle of its track, and stays
        slider = Quiet(ax, label, lo - 1, hi + 1, valinit=value, valstep=step, initcolor="none", **options)
        slider.valmin = slider.valmax = lo
    else:
        slider = Quiet(ax, label, lo, hi, valinit=value, valstep=step, initcolor="none", **options)
    slider.drawon = True  # from now on a move redraws it (a Blit it is added to turns this off)
    return slider


def whole_ticks(axis, n, first=0):
    """Ticks at whole positions 0..n-1 of an axis (cells, tokens), labelled from `first`: all
    of them up to 12, else at most about 8 at round numbers; never a tick between two cells."""
    every = 1 if n <= 12 else next(step for step in (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000) if n / step <= 8)
    ticks = [i for i in range(n) if (first + i) % every == 0]
    axis.set_ticks(ticks, [str(first + i) for i in ticks])


def allowed(values, *own):
    """A slider's allowed values: `values`, and the run's own settings `own` among them."""
    return sorted(set(values) | set(own))


def arrow_keys(fig, sliders):
    """Left/right (or down/up) move the active slider one step, with Shift held too (Notebook 7
    keeps the plain arrows for moving between cells); clicking a slider makes it active."""
    active = [sliders[0]]

    def choose(event):
        for slider in sliders:
            if event.inaxes is slider.ax:
                active[0] = slider

    def step(event):
        direction = {"right": 1, "up": 1, "left": -1, "down": -1}.get((event.key or "").removeprefix("shift+"))
        if direction:
            move(active[0], direction)

    fig.canvas.mpl_connect("button_press_event", choose)
    fig.canvas.mpl_connect("key_press_event", step)


def set_quietly(slider, value):
    """Move the slider's knob without calling its update functions (the caller draws)."""
    slider.eventson = False
    try:
        slider.set_val(value)
    finally:
        slider.eventson = True


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
    low = max(slider.valmin, slider.slidermin.val if slider.slidermin else slider.valmin)
    high = min(slider.valmax, slider.slidermax.val if slider.slidermax else slider.valmax)
    slider.set_val(min(max(value, low), high))


def window_title():
    """The lesson's name, to title its windows: week2/01_causal_mask (not matplotlib's "Figure 1")."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    return f"{script.parent.name}/{script.stem}" if script is not None and script.suffix == ".py" else "Try it"


def show(build, *args):
    """Build the window's View, build(*args), and hand it to the learner; return when it is
    closed. Closing any open window (a training's, say) closes them all: one `q` ends the run.
    In a notebook kernel the View is shown inline and this returns at once, with what drives it
    (common/notebook.py's show_view): its controls stay live."""
    import matplotlib.pyplot as plt

    notebook = kernel() is not None
    with window_style():  # the widgets' callbacks run inside plt.show(), so they draw in the style too
        with plt.ioff() if notebook else nullcontext():  # (ipympl would show it twice)
            view = build(*args)
        sliders = [w for w in view.widgets.values() if hasattr(w, "valmin")]
        if sliders and (not notebook or ipympl_active()):
            arrow_keys(view.fig, sliders)
        if notebook:
            return show_view(view)
        view.fig.canvas.manager.set_window_title(window_title())
        close_together([plt.figure(number) for number in plt.get_fignums()])
        plt.show()


def close_together(figures):
    """Closing one of these windows closes the others."""
    import matplotlib.pyplot as plt

    def close_all(event):
        for fig in figures:
            if plt.fignum_exists(fig.number):
                plt.close(fig)

    for fig in figures:
        fig.canvas.mpl_connect("close_event", close_all)


class TrainingWindow:
    """A window that follows a training: build(*args) gives its View and a redraw function,
    and watch(step, ...) calls redraw(step, ...) now and then, then shows it through the
    View's Blit (what redraw changed, on the kept background) if it has one. The window opens
    at the first watch, with the training's first state drawn: after the lines printed before
    the training starts (in a notebook, below them).
    Drawing is the slow part, so after each redraw the next one waits until drawing has taken
    at most DRAWING_SHARE of the time since (and at least REDRAW_EVERY seconds): the training
    runs at most about that much slower for being watched. watch(..., last=True) always
    redraws, to show where the training ended. Closing the window lets the training finish."""

    def __init__(self, build, *args):
        import matplotlib.pyplot as plt

        self.inline = None  # in a notebook: the image that stands for the window
        with window_style():
            with plt.ioff() if kernel() is not None else nullcontext():
                self.view, self.redraw = build(*args)
            self.view.fig.canvas.mpl_connect("close_event", self.closed)
        self.next, self.open = 0.0, True

    def opening(self):
        """Open the window, drawn whole (in a notebook: its image, shown below the cell's lines)."""
        import matplotlib.pyplot as plt

        if kernel() is not None:
            self.inline = TrainingDisplay(self.view.fig)
        elif plt.get_backend().lower() != "agg":
            self.view.fig.canvas.manager.set_window_title(window_title() + ": training")
            plt.show(block=False)  # the window opens now; the script goes on training
        else:  # (Agg, in the tests, has no window to open: its first draw, as opening one draws)
            self.view.fig.canvas.draw()

    def closed(self, event):
        self.open = False

    def watch(self, *state, last=False):
        start = time.monotonic()
        if self.open and (last or start >= self.next):
            first = self.next == 0.0  # the first draw also opens the window: not a redraw's cost
            with window_style():
                self.redraw(*state)
                if first:
                    self.opening()
                elif self.view.blit:
                    self.view.blit.update()
                else:
                    self.view.fig.canvas.draw_idle()
                if self.inline is None:
                    self.view.fig.canvas.flush_events()  # the window draws, and can be moved or closed
                elif not first:
                    self.inline.refresh()
            cost = 0.0 if first else time.monotonic() - start
            self.next = time.monotonic() + max(REDRAW_EVERY, cost / DRAWING_SHARE)
