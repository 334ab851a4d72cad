"""A lesson run in a notebook kernel (JupyterLab, Notebook 7, VS Code, Colab): `%run
week2/01_causal_mask.py --live` prints the lines a terminal prints, shows the figure inline,
and opens the live view inline instead of a window.

The live view is the View the terminal's window shows (common/live.py), built by the same
lesson function, opening at the run's settings. Which controls drive it, the lesson picks
from the kernel's matplotlib backend, as the learner set it (it is never switched):
  - under ipympl (`%matplotlib widget`): matplotlib's own sliders and buttons, in the
    figure, the arrow keys too (ipympl's canvas forwards the mouse and the keys);
  - otherwise (the plain inline backend; Colab, where ipympl needs a restart): one
    ipywidgets control per Slider or RadioButtons below the figure, which is shown as an
    image after each move, with the figure's titles as its text alternative.
Either way the view is kept out of pyplot: the learner's next `plt.plot` draws a figure of
its own, not into the view. A training's window (week1/09, week2/12) is an image refreshed
while the cell trains (ipympl draws nothing while a cell is still running), then the final
figure.

Inline, a view is drawn at most WIDTH pixels wide and HEIGHT tall (fit: a smaller dpi, the
same picture scaled), so that it fits a notebook's output area on a laptop, about 1,000 px
wide, and shows with its controls at once.

ipywidgets and ipympl are optional (requirements-notebook.txt); without ipywidgets a live
view is shown once, as a still image, with one line that says what to install. JupyterLab 4
and Notebook 7 draw ipywidgets 8 only (their widget manager registers the controls of version
2.0.0, which ipywidgets 8 sends; ipywidgets 7 sends 1.5.0): a kernel with ipywidgets 7, outside
Colab (which draws ipywidgets 7 with its own manager), says so in one line, with the fix.
"""
import base64
import html
import io
import sys

from common.figures import window_style
from common.kernel import display, png_image

WIDTH = 980  # pixels: the widest a view is drawn inline (JupyterLab with its side bar open and Notebook 7 give
#              an output area of about 1,000 px on a laptop; a wider picture is scaled down, or cut)
HEIGHT = 540  # pixels: the tallest; with a notebook's bars above it, a view and its controls then show at once
#               in a laptop's browser window (660 px inside: tests/test_browser.py)
BESIDE = 240  # pixels left beside a picture that make room for its pickers there (RadioButtons)
MARGIN = 8  # pixels of the figure kept around what the picture shows
# What the sliders' caption says to press. Notebook 7 runs its shortcuts before a focused control sees the key, and
# takes the plain arrows for moving between cells; with Shift held, an arrow moves the slider (JupyterLab: either).
KEYS = "Drag a knob, or click it and press \u2190 or \u2192 (in Notebook 7: Shift+\u2190 or Shift+\u2192)."
WIDGETS_7 = ("(this kernel has ipywidgets {version}: JupyterLab 4 and Notebook 7 draw ipywidgets 8 only, and show an "
             "error in place of the view below; there, run %pip install -U ipywidgets in a cell, then restart the "
             "kernel)")


def ipympl_active():
    """True when the kernel draws figures with ipympl (`%matplotlib widget` or `%matplotlib ipympl`)."""
    import matplotlib

    backend = matplotlib.get_backend().lower()
    return backend in ("widget", "ipympl") or "ipympl" in backend


def fit(fig):
    """The figure drawn at most WIDTH pixels wide and HEIGHT tall, as a notebook shows it: a
    smaller dpi, the same picture scaled (its layout and its sizes in points are kept). The dpi
    is a whole number that makes the figure a whole number of pixels each way (else a front end
    that lays it out in whole pixels, ipympl's, sends back a size a fraction off, and the figure
    is laid out again): 13 x 7 inches are drawn at 75 dpi, 975 x 525 px. A canvas that follows
    the screen's pixel ratio (ipympl's, on a HiDPI screen) scales from this dpi too."""
    width, height = fig.get_size_inches()
    if width * fig.dpi <= WIDTH and height * fig.dpi <= HEIGHT:
        return fig
    dpi = next(dpi for dpi in range(int(min(WIDTH / width, HEIGHT / height)), 0, -1)
               if all(abs(side * dpi - round(side * dpi)) < 1e-6 for side in (width, height)) or dpi == 1)
    fig._original_dpi = dpi  # (matplotlib's canvases multiply it by the device pixel ratio)
    fig.set_dpi(dpi)
    return fig


def widgets_7_note():
    """The one line an ipywidgets 7 kernel shows before a view, outside Colab; else None."""
    import ipywidgets

    if ipywidgets.__version__.split(".")[0] != "7" or "google.colab" in sys.modules:
        return None
    return WIDGETS_7.format(version=ipywidgets.__version__)


def titles(fig):
    """The figure's title and its axes' titles, in words: the text alternative of its image."""
    found = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
    return " | ".join(" ".join(t.split()) for t in found if t.strip())


def buffer_png(fig, box=None):
    """What the figure's canvas holds now (its last full draw, and every blit since), as PNG
    bytes (the pixels in `box`, if given: (left, top, right, bottom), counted from the top left):
    a live view's picture after a move, drawn by its Blit as a window draws it."""
    import numpy as np
    from matplotlib.image import imsave

    pixels = np.asarray(fig.canvas.buffer_rgba())
    if box is not None:
        left, top, right, bottom = box
        pixels = pixels[top:bottom, left:right]
    out = io.BytesIO()
    imsave(out, pixels, format="png")
    return out.getvalue()


def image_html(fig, box=None):
    """The figure's picture (the pixels in `box`) as an <img> that fits the notebook's width, its
    titles as the alt text (screen readers, tests)."""
    png = base64.b64encode(buffer_png(fig, box)).decode("ascii")
    return (f'<img src="data:image/png;base64,{png}" alt="{html.escape(titles(fig))}" '
            'style="max-width: 100%; height: auto"/>')


def leave_out_widgets(view):
    """The figure's own widgets are no longer drawn (their axes, and the moving parts its Blit
    draws): in a picture they could not be moved, and the controls beside or below it stand for
    them. Their values, ranges and texts stay, for the controls to read."""
    widget_axes = {widget.ax for widget in view.widgets.values()}
    for ax in widget_axes:
        ax.set_visible(False)
    for layer in (view.blit.layers.values() if view.blit else ()):
        for artist in layer:
            if artist.axes in widget_axes:
                artist.set_visible(False)


def picture_box(view):
    """The part of the figure that holds what it draws besides its widgets, with MARGIN pixels
    around it: (left, top, right, bottom), in pixels from the top left. Measured on the figure as
    drawn."""
    import math

    renderer = view.fig.canvas.get_renderer()
    widget_axes = {widget.ax for widget in view.widgets.values()}
    extents = [ax.get_tightbbox(renderer) for ax in view.fig.axes if ax not in widget_axes and ax.get_visible()] + [
        artist.get_window_extent(renderer) for artist in [*view.fig.texts, *view.fig.legends] if artist.get_visible()]
    extents = [extent for extent in extents if extent.width > 0 and extent.height > 0]
    width, height = view.fig.canvas.get_width_height()
    x0, y0 = min(e.x0 for e in extents) - MARGIN, min(e.y0 for e in extents) - MARGIN
    x1, y1 = max(e.x1 for e in extents) + MARGIN, max(e.y1 for e in extents) + MARGIN
    return (max(0, math.floor(x0)), max(0, math.floor(height - y1)),  # (pixel rows count from the top)
            min(width, math.ceil(x1)), min(height, math.ceil(height - y0)))


def is_slider(widget):
    return hasattr(widget, "valmin")


def control_for(name, widget):
    """The ipywidgets control that stands in for one of matplotlib's widgets, at its value. A
    slider's number is shown beside it as the window shows it (its valtext: a lesson may
    write there what its position means: week1/02's d_k = 64 at position 6)."""
    import ipywidgets

    if not is_slider(widget):  # RadioButtons
        labels = [text.get_text() for text in widget.labels]
        return ipywidgets.RadioButtons(options=labels, value=widget.value_selected, description=name)
    shared = {"description": widget.label.get_text() or name, "style": {"description_width": "initial"},
              "layout": {"width": "min(100%, 640px)"},  # about as long as the window's slider
              "continuous_update": False, "readout": False}  # a move draws once, when the knob is let go
    steps = widget.valstep
    if steps is not None and not isinstance(steps, (int, float)):  # a list of allowed values
        options = sorted(float(v) for v in steps)
        value = min(options, key=lambda v: abs(v - widget.val))
        return ipywidgets.SelectionSlider(options=[(f"{v:g}", v) for v in options], value=value, **shared)
    if steps is not None and float(steps).is_integer() and float(widget.valmin).is_integer():
        return ipywidgets.IntSlider(min=int(widget.valmin), max=int(widget.valmax), step=int(steps),
                                    value=int(widget.val), **shared)
    step = steps if steps is not None else (widget.valmax - widget.valmin) / 100
    return ipywidgets.FloatSlider(min=widget.valmin, max=widget.valmax, step=step, value=widget.val, **shared)


def set_value(widget, value):
    """Move one of matplotlib's widgets as a learner would: its own callbacks draw the move."""
    if is_slider(widget):
        widget.set_val(value)
    else:
        widget.set_active([text.get_text() for text in widget.labels].index(value))


class WidgetView:
    """A View driven by ipywidgets controls: each move sets the matplotlib widget it stands for
    (whose callbacks redraw, through the View's Blit, what the move changed), then shows the
    canvas as an image: the part `crop` of the figure, which its own widgets are left out of.
    Sliders stand below the picture, as along a window's bottom, with a caption that says
    which keys move them; pickers (RadioButtons) beside it where it leaves room, else below.
    `controls` and `readouts` by the View's widget names; `picture` the image; `box` all of it."""

    def __init__(self, view):
        import ipywidgets

        self.view, self.syncing = view, False
        self.controls = {name: control_for(name, w) for name, w in view.widgets.items()}
        self.readouts = {name: ipywidgets.Label() for name, w in view.widgets.items() if is_slider(w)}
        leave_out_widgets(view)
        view.fig.canvas.draw()  # the first full draw, as a window's first (a Blit keeps its backgrounds)
        self.crop = picture_box(view)
        self.picture = ipywidgets.HTML(image_html(view.fig, self.crop))
        self.sync()
        for name, control in self.controls.items():
            control.observe(self.mover(name), names="value")
        rows = [ipywidgets.HBox([control, self.readouts[name]]) if name in self.readouts else control
                for name, control in self.controls.items()]
        left, _, right, _ = self.crop
        if not self.readouts and right - left + BESIDE <= WIDTH:  # pickers only, and room for them beside it
            self.box = ipywidgets.VBox([ipywidgets.HBox([self.picture, ipywidgets.VBox(rows)])])
        else:
            caption = [ipywidgets.Label(KEYS)] if self.readouts else []
            self.box = ipywidgets.VBox([self.picture, *rows, *caption])

    def mover(self, name):
        def moved(change):
            if self.syncing:
                return
            with window_style():  # as the window draws, so a label made by the move matches the rest
                set_value(self.view.widgets[name], change["new"])
            self.sync()
            self.picture.value = image_html(self.view.fig, self.crop)
        return moved

    def sync(self):
        """Every control at its widget's value and range, every readout at the widget's text: a
        move may move another (the row stays within T, and so does its slider's end)."""
        self.syncing = True
        try:
            for name, control in self.controls.items():
                widget = self.view.widgets[name]
                if not is_slider(widget):
                    control.value = widget.value_selected
                    continue
                if hasattr(control, "max"):  # (a SelectionSlider's values are fixed)
                    low, high = type(control.value)(widget.valmin), type(control.value)(widget.valmax)
                    if low > control.max:  # (ipywidgets refuses a minimum above the maximum)
                        control.max, control.min = high, low
                    else:
                        control.min, control.max = low, high
                    control.value = type(control.value)(widget.val)
                else:
                    control.value = min(control.options, key=lambda option: abs(option[1] - widget.val))[1]
                self.readouts[name].value = widget.valtext.get_text()
        finally:
            self.syncing = False


def off_pyplot(fig):
    """The figure kept out of pyplot (the backend shows every figure pyplot holds at the cell's
    end, or after %run), drawn by an Agg canvas of its own; its callbacks stay connected."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    plt.close(fig)
    FigureCanvasAgg(fig)
    return fig


def on_ipympl(fig):
    """The figure kept out of pyplot on an ipympl canvas of its own, shown once, here; returns
    the canvas. Every action of its front end (a drag, a key, a resize, a draw) runs in the
    window's style, as a window's callbacks do."""
    import matplotlib.pyplot as plt
    from ipympl.backend_nbagg import new_figure_manager_given_figure

    plt.close(fig)  # (pyplot's canvas for it, never shown, goes with it)
    with plt.ioff():  # (ipympl would queue an interactive figure to show it again at the cell's end)
        manager = new_figure_manager_given_figure(getattr(fig, "number", 0), fig)
    handle = manager.handle_json

    def styled(content):
        with window_style():
            return handle(content)

    manager.handle_json = styled
    canvas = manager.canvas
    canvas.header_visible = False  # ("Figure 1": the cell says which lesson this is)
    changes = canvas.get_diff_image

    def whole():  # every image whole: ipympl's front end starts loading each image as it comes, dropping the one
        canvas._force_full = True  # still loading, and a lost difference image leaves pieces of an earlier picture
        return changes()  # (seen once in a browser here, after a drag); a lost whole image is replaced by the next

    canvas.get_diff_image = whole
    display(canvas)
    return canvas


def show_view(view):
    """Show a live View in the notebook; returns what drives it (its ipympl canvas, or a
    WidgetView). A View with no controls is the figure the run saved (a training's last
    figure): shown inline already, where it was saved."""
    import matplotlib.pyplot as plt

    if not view.widgets:
        plt.close(view.fig)
        return None
    fit(view.fig)
    try:
        note = widgets_7_note()
    except ImportError:  # no ipywidgets in this kernel
        off_pyplot(view.fig).canvas.draw()
        display(png_image(buffer_png(view.fig)))
        print("(a still picture: for its controls, install ipywidgets: pip install -r requirements-notebook.txt)",
              file=sys.stderr)
        return None
    if note:
        print(note, file=sys.stderr)
    if ipympl_active():
        return on_ipympl(view.fig)
    off_pyplot(view.fig)
    driven = WidgetView(view)
    display(driven.box)
    return driven


class TrainingDisplay:
    """Where a training's window draws in a notebook: one image output, replaced at each redraw."""

    def __init__(self, fig):
        fit(off_pyplot(fig)).canvas.draw()
        self.fig, self.handle = fig, display(png_image(buffer_png(fig)), display_id=True)

    def refresh(self):
        self.handle.update(png_image(buffer_png(self.fig)))

