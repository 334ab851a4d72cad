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
A training's window (week1/09, week2/12) is an image refreshed while the cell trains (ipympl
draws nothing while a cell is still running), then the final figure.

ipywidgets and ipympl are optional (requirements-notebook.txt); without ipywidgets a live
view is shown once, as a still image, with one line that says what to install.
"""
import base64
import html
import io
import sys


def kernel():
    """The IPython kernel's shell this runs in, or None (a terminal, a script, a plain IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


def ipympl_active():
    """True when the kernel draws figures with ipympl (`%matplotlib widget` or `%matplotlib ipympl`)."""
    import matplotlib

    backend = matplotlib.get_backend().lower()
    return backend in ("widget", "ipympl") or "ipympl" in backend


def display(*objects, **options):
    from IPython.display import display as show

    return show(*objects, **options)


def png_image(png):
    from IPython.display import Image

    return Image(data=png, format="png")


def titles(fig):
    """The figure's title and its axes' titles, in words: the text alternative of its image."""
    found = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
    return " | ".join(" ".join(t.split()) for t in found if t.strip())


def buffer_png(fig):
    """What the figure's canvas holds now (its last full draw, and every blit since), as PNG
    bytes: a live view's picture after a move, drawn by its Blit as a window draws it."""
    import numpy as np
    from matplotlib.image import imsave

    out = io.BytesIO()
    imsave(out, np.asarray(fig.canvas.buffer_rgba()), format="png")
    return out.getvalue()


def image_html(fig):
    """The figure's picture as an <img>, its titles as the alt text (screen readers, tests)."""
    png = base64.b64encode(buffer_png(fig)).decode("ascii")
    return f'<img src="data:image/png;base64,{png}" alt="{html.escape(titles(fig))}"/>'


def control_for(name, widget):
    """The ipywidgets control that stands in for one of matplotlib's widgets, at its value."""
    import ipywidgets

    if hasattr(widget, "valmin"):  # a Slider
        label = widget.label.get_text() or name
        steps = widget.valstep
        style = {"description_width": "initial"}
        if steps is not None and not isinstance(steps, (int, float)):  # a list of allowed values
            options = sorted(float(v) for v in steps)
            value = min(options, key=lambda v: abs(v - widget.val))
            return ipywidgets.SelectionSlider(options=[(f"{v:g}", v) for v in options], value=value,
                                              description=label, style=style, continuous_update=False)
        whole = steps is not None and float(steps).is_integer() and float(widget.valmin).is_integer()
        if whole:
            return ipywidgets.IntSlider(min=int(widget.valmin), max=int(widget.valmax), step=int(steps),
                                        value=int(widget.val), description=label, style=style,
                                        continuous_update=False)
        step = steps if steps is not None else (widget.valmax - widget.valmin) / 100
        return ipywidgets.FloatSlider(min=widget.valmin, max=widget.valmax, step=step, value=widget.val,
                                      description=label, style=style, continuous_update=False)
    labels = [text.get_text() for text in widget.labels]  # RadioButtons
    return ipywidgets.RadioButtons(options=labels, value=widget.value_selected, description=name)


def value_of(widget):
    """A matplotlib widget's value, as its ipywidgets control holds it."""
    if hasattr(widget, "valmin"):
        return widget.val
    return widget.value_selected


def set_value(widget, value):
    """Move one of matplotlib's widgets as a learner would: its own callbacks draw the move."""
    if hasattr(widget, "valmin"):
        widget.set_val(value)
    else:
        widget.set_active([text.get_text() for text in widget.labels].index(value))


class WidgetView:
    """A View driven by ipywidgets controls: each move sets the matplotlib widget it stands for
    (whose callbacks redraw, through the View's Blit, what the move changed), then shows the
    canvas as an image. `controls` by the View's widget names; `picture` the image."""

    def __init__(self, view):
        import ipywidgets

        self.view, self.syncing = view, False
        self.controls = {name: control_for(name, w) for name, w in view.widgets.items()}
        view.fig.canvas.draw()  # the first full draw, as a window's first (a Blit keeps its backgrounds)
        self.picture = ipywidgets.HTML(image_html(view.fig))
        for name, control in self.controls.items():
            control.observe(self.mover(name), names="value")
        self.box = ipywidgets.VBox([self.picture, *self.controls.values()])

    def mover(self, name):
        def moved(change):
            if self.syncing:
                return
            set_value(self.view.widgets[name], change["new"])
            self.sync()
            self.picture.value = image_html(self.view.fig)
        return moved

    def sync(self):
        """Every control at its widget's value (a move may move another: the row stays within T)."""
        self.syncing = True
        try:
            for name, control in self.controls.items():
                control.value = value_of(self.view.widgets[name])
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


def show_view(view):
    """Show a live View in the notebook; returns what drives it (its canvas under ipympl, else a
    WidgetView). A View with no controls is the figure the run saved (a training's last figure):
    shown inline already, where it was saved."""
    import matplotlib.pyplot as plt

    if not view.widgets:
        plt.close(view.fig)
        return None
    if ipympl_active():
        import matplotlib

        canvas = view.fig.canvas
        canvas.header_visible = False  # ("Figure 1": the cell says which lesson this is)
        plt.figure(view.fig)  # the active figure, which plt.show() shows
        if matplotlib.is_interactive():  # main() called in a cell: show it now
            display(canvas)
        # else inside %run (interactive off while the script runs): %run's own plt.show() shows it
        return canvas
    off_pyplot(view.fig)
    try:
        driven = WidgetView(view)
    except ImportError:  # no ipywidgets in this kernel
        view.fig.canvas.draw()
        display(png_image(buffer_png(view.fig)))
        print("(a still picture: for its controls, install ipywidgets: pip install -r requirements-notebook.txt)",
              file=sys.stderr)
        return None
    display(driven.box)
    return driven


class TrainingDisplay:
    """Where a training's window draws in a notebook: one image output, replaced at each redraw."""

    def __init__(self, fig):
        off_pyplot(fig).canvas.draw()
        self.fig, self.handle = fig, display(png_image(buffer_png(fig)), display_id=True)

    def refresh(self):
        self.handle.update(png_image(buffer_png(self.fig)))


def show_png(png):
    """A figure's PNG bytes, inline."""
    display(png_image(png))
