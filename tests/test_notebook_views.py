"""--live in a notebook, headless: the lesson's View driven as a notebook drives it, and what
the notebook shows compared, pixel for pixel, with matplotlib's own full draw of the figure
(as tests/test_live.py does for a window).

Each view is built as `%run lesson.py --live` builds it in a kernel: the lesson's main() runs
here with --live, and its show() takes the notebook's way (a kernel is stood in for; nothing
else is). Then:
  - under ipympl, the figure's ipympl canvas is fed the messages ipympl's front end sends (a
    drag: the mouse moved, pressed, moved and let go; a key pressed), and the picture the
    front end would show is put together from the images the canvas sends back, as the front
    end puts them together (a whole image, or a diff over the last one);
  - otherwise, each ipywidgets control is fed the update its front end sends when the learner
    lets go of it, and the picture is the image the view then shows.
"""
import importlib.util
import io
import json
import sys

import common.live as live
import common.notebook as notebook
from common.figures import plt

import numpy as np
import pytest

# (find_spec, not import: importing ipympl switches matplotlib to its backend, for every test after)
MISSING = [tool for tool in ("ipywidgets", "ipympl") if importlib.util.find_spec(tool) is None]
if MISSING:
    pytest.skip(f"{', '.join(MISSING)} not installed: pip install -r requirements-test.txt", allow_module_level=True)
from PIL import Image  # noqa: E402  (matplotlib's own dependency)

from tests import drawing  # noqa: E402
from tests.conftest import LESSONS  # noqa: E402
from tests.notebook_views import cropped, drawn_plainly, ends, handed, in_a_kernel, let_go, open_view, picture_of  # noqa: E402

# Every view (a training's window is an image: below), each drawn at the notebook's dpi (tests/test_live.py tests
# each at the window's): sliders whose range another moves (week2/01), in steps of 2 (week2/03), over a list of
# values (week2/06), writing beside them what their place means (week1/02, week1/07), RadioButtons (week1/15,
# after a training cut short), ...
VIEWS = [name for name, lesson in LESSONS.items() if lesson.live and not lesson.training]
TRAININGS = [name for name, lesson in LESSONS.items() if lesson.training]
# (ipympl's toolbar, built by matplotlib's, passes traitlets an argument it does not take)
pytestmark = pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")


@pytest.fixture(autouse=True)
def close_figures():
    """Each test closes its figures, and leaves pyplot's backend as it found it (the other tests
    draw with Agg)."""
    backend = plt.get_backend()
    yield
    plt.close("all")
    assert plt.get_backend() == backend


# ---------------------------------------------------------------- without ipympl: ipywidgets controls

def agrees(driven):
    """Every control where its matplotlib widget is (value, range, the number the window writes
    beside it)."""
    for name, control in driven.controls.items():
        widget = driven.view.widgets[name]
        if notebook.is_slider(widget):
            if not (np.isclose(control.value, widget.val) and driven.readouts[name].value == widget.valtext.get_text()):
                return False
            if hasattr(control, "max") and (control.min, control.max) != (widget.valmin, widget.valmax):
                return False
        elif control.value != widget.value_selected:
            return False
    return True


@pytest.mark.parametrize("name", VIEWS)
def test_the_controls_move_the_view_and_it_shows_what_a_full_draw_shows(monkeypatch, name):
    """One control per widget, opening where the window opens; moving each to its last value
    (then the first back to its first) moves the widget it stands for, and the picture shown
    is what matplotlib draws of the figure at that setting (its alt text the figure's titles)."""
    view, driven, shown, stack = open_view(monkeypatch, name)
    with stack:
        assert shown == [driven.box] and isinstance(driven, notebook.WidgetView)
        assert list(driven.controls) == list(view.widgets) and agrees(driven)
        image, alt = picture_of(driven)
        assert np.array_equal(image, cropped(drawn_plainly(view), driven.crop)) and alt == notebook.titles(view.fig)
        first = next(iter(driven.controls))
        moves = [(name_, ends(control)[0]) for name_, control in driven.controls.items()]
        for name_, value in moves + [(first, ends(driven.controls[first])[1])]:
            let_go(driven.controls[name_], value)
            assert agrees(driven), f"after moving {name_} to {value}"
            image, alt = picture_of(driven)
            assert np.array_equal(image, cropped(drawn_plainly(view), driven.crop)), f"after moving {name_} to {value}"
            assert alt == notebook.titles(view.fig)


@pytest.mark.parametrize("name", ["week2/01_causal_mask", "week1/15_context_decides"])
def test_the_picture_leaves_out_the_figures_own_widgets_and_nothing_else(monkeypatch, name):
    """Its controls stand for the figure's own widgets, which are not drawn (sliders along the
    bottom in week2/01, pickers at the right in week1/15): the picture holds every other axes
    and text of the figure whole, and no pixel of a widget."""
    view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        renderer = view.fig.canvas.get_renderer()
        widget_axes = {widget.ax for widget in view.widgets.values()}
        left, top, right, bottom = driven.crop
        height = view.fig.bbox.height
        for extent in [ax.get_tightbbox(renderer) for ax in view.fig.axes if ax not in widget_axes] + \
                [text.get_window_extent(renderer) for text in view.fig.texts if text.get_text()]:
            assert left <= extent.x0 and extent.x1 <= right
            assert top <= height - extent.y1 and height - extent.y0 <= bottom  # (rows count from the top)
        assert not any(ax.get_visible() for ax in widget_axes)
        assert not any(artist.get_visible() for layer in view.blit.layers.values() for artist in layer
                       if artist.axes in widget_axes)
        assert picture_of(driven)[0].shape[:2] == (bottom - top, right - left)


def test_a_picture_that_kept_the_figures_widgets_is_told_apart(monkeypatch):
    """The checks above can fail: week1/15's pickers stand inside the part of its figure shown;
    a view that kept them draws them there."""
    view, driven, _, stack = open_view(monkeypatch, "week1/15_context_decides")
    with stack:
        without = picture_of(driven)[0]
    monkeypatch.setattr(notebook, "leave_out_widgets", lambda view: None)
    view, driven, _, stack = open_view(monkeypatch, "week1/15_context_decides")
    with stack:
        assert all(widget.ax.get_visible() for widget in view.widgets.values())
        kept = picture_of(driven)[0]
        assert kept.shape == without.shape and not np.array_equal(kept, without)


def test_a_control_follows_a_range_another_control_changes(monkeypatch):
    """week2/01: the row's control ends at T, as the window's row slider does; a row set at
    12 comes down to T when T comes down."""
    view, driven, _, stack = open_view(monkeypatch, "week2/01_causal_mask")
    with stack:
        T, row = driven.controls["T"], driven.controls["row"]
        assert (T.value, row.value, row.max) == (4, 2, 4)
        let_go(T, 12)
        let_go(row, 12)
        let_go(T, 3)
        assert (row.value, row.max, driven.readouts["row"].value) == (3, 3, "3")
        assert view.fig.axes[1].get_title().startswith("row 3: 3 visible words")


def test_a_picture_not_redrawn_after_a_move_is_told_apart(monkeypatch):
    """The comparison above can fail: a widget moved behind the controls' back (as a view
    that forgot to show the move would leave it) shows the old picture, and the controls
    disagree with it."""
    view, driven, _, stack = open_view(monkeypatch, "week2/01_causal_mask")
    with stack:
        view.widgets["T"].set_val(9)
        assert not np.array_equal(picture_of(driven)[0], cropped(drawn_plainly(view), driven.crop))
        assert not agrees(driven)


def test_a_slider_shows_the_number_the_window_writes_beside_it(monkeypatch):
    """week1/02's slider runs over the widths' places; beside it stands the width, as in the
    window: it opens at the run's last width, 256, and position 0 reads 1."""
    view, driven, _, stack = open_view(monkeypatch, "week1/02_dot_product_variance")
    with stack:
        slider = view.widgets["d_k"]
        assert driven.readouts["d_k"].value == slider.valtext.get_text() == "256"
        let_go(driven.controls["d_k"], 0)
        assert driven.readouts["d_k"].value == "1"


def test_without_ipywidgets_the_view_is_a_still_picture_and_says_what_to_install(monkeypatch, capsys):
    build, args = handed("week2/06_warmup_schedule")
    with in_a_kernel(monkeypatch) as shown:
        monkeypatch.setitem(sys.modules, "ipywidgets", None)  # (import ipywidgets raises ImportError)
        assert live.show(build, *args) is None
    (image,) = shown
    assert image.data.startswith(b"\x89PNG")
    assert capsys.readouterr().err.strip().endswith("install ipywidgets: pip install -r requirements-notebook.txt)")


@pytest.mark.parametrize("name", VIEWS)
def test_each_view_fits_the_notebooks_width_and_its_controls_show_with_it(monkeypatch, name):
    """Drawn for a notebook, the view is at most WIDTH pixels wide (980: an output area is about
    1,000 px on a laptop) and HEIGHT tall (540); its picture too, and the pickers beside it fit
    that width with it. Sliders stand below the picture, with the caption that says which keys
    move them."""
    view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        image = picture_of(driven)[0]
        width, height = view.fig.canvas.get_width_height()
        assert width <= notebook.WIDTH and height <= notebook.HEIGHT
        assert image.shape[1] <= notebook.WIDTH and image.shape[0] <= notebook.HEIGHT
        first, *rest = driven.box.children
        if driven.readouts:  # sliders: below the picture, then the caption
            assert first is driven.picture and rest[-1].value == notebook.KEYS
        else:  # pickers only (week1/15): beside the picture, room left for them
            picture, pickers = first.children
            assert picture is driven.picture and image.shape[1] + notebook.BESIDE <= notebook.WIDTH
            assert list(pickers.children) == list(driven.controls.values())


def test_a_figure_is_fitted_to_whole_pixels_and_one_small_enough_is_drawn_as_it_is():
    """fit() only ever lowers the dpi, to a whole number that leaves no fraction of a pixel: 13 x 7
    inches at 75 dpi (975 x 525 px; at 980 / 13, 75.4 dpi, it would be 527.7 px tall), 12 x 5.5 at
    80 (960 x 440); 11 x 6.5 at 82, its height's bound (902 x 533); a figure of 9 x 4 inches at 100
    dpi stays 900 x 400 px."""
    for size, dpi, pixels in (((13, 7), 75, (975, 525)), ((12, 5.5), 80, (960, 440)), ((11, 6.5), 82, (902, 533)),
                              ((9, 4), 100, (900, 400))):
        fig = notebook.fit(plt.figure(figsize=size, dpi=100))
        assert (fig.dpi, fig.canvas.get_width_height(), tuple(fig.bbox.size)) == (dpi, pixels, pixels)


@pytest.mark.parametrize("name", TRAININGS)
def test_a_trainings_window_is_an_image_that_fits_the_notebooks_width(monkeypatch, name):
    (window,) = drawing.run_live(name, "--steps", "10" if name == "week1/09_bottleneck_experiment" else "50")[4]
    with in_a_kernel(monkeypatch) as shown:
        notebook.TrainingDisplay(window.view.fig)
    (image,) = shown
    width, height = Image.open(io.BytesIO(image.data)).size
    assert width <= notebook.WIDTH and height <= notebook.HEIGHT


def test_an_ipywidgets_7_kernel_says_in_one_line_where_its_view_may_not_show(monkeypatch, capsys):
    """JupyterLab 4 and Notebook 7 register only the controls of ipywidgets 8 (version 2.0.0):
    in a kernel with ipywidgets 7, outside Colab, the view is shown after one line that says
    so and how to fix it; on Colab (its own manager draws ipywidgets 7), and with ipywidgets 8,
    no line."""
    import ipywidgets

    for version, colab, said in (("7.7.1", False, True), ("7.7.1", True, False), ("8.1.9", False, False)):
        monkeypatch.setattr(ipywidgets, "__version__", version)
        if colab:
            monkeypatch.setitem(sys.modules, "google.colab", object())
        else:
            monkeypatch.delitem(sys.modules, "google.colab", raising=False)
        view, driven, shown, stack = open_view(monkeypatch, "week2/06_warmup_schedule")
        with stack:
            assert shown == [driven.box]
        err = capsys.readouterr().err
        if said:
            assert err == notebook.WIDGETS_7.format(version="7.7.1") + "\n"
            assert "%pip install -U ipywidgets" in err and "restart the kernel" in err
        else:
            assert err == ""


# ---------------------------------------------------------------- under ipympl: matplotlib's own widgets

class FrontEnd:
    """ipympl's front end, headless: the messages it sends the canvas, in the order it sends
    them (a reply waits until the kernel has handled what came before), and the picture it
    shows from what the canvas sends back (a whole image, or a diff drawn over the last
    picture where it is not transparent), as its canvas view does."""

    def __init__(self, canvas, ratio=1):
        self.canvas, self.picture, self.images, self.outbox, self.size = canvas, None, 0, [], None
        canvas.send = self.receive  # (the comm to the front end)
        if ratio != 1:  # what the front end sends once shown (on a screen of `ratio` device pixels to a CSS pixel)
            self.outbox += [{"type": "set_dpi_ratio", "dpi_ratio": ratio},
                            {"type": "set_device_pixel_ratio", "device_pixel_ratio": ratio}]
        for kind in ("refresh", "send_image_mode", "initialized"):
            self.outbox.append({"type": kind})
        self.send(type="draw")

    def send(self, **content):
        """Send `content`, then what the front end has to send next, one message after another."""
        self.outbox.append(content)
        while self.outbox:
            self.canvas._handle_message(self.canvas, self.outbox.pop(0), [])

    def receive(self, content, buffers=None):
        message = json.loads(content["data"])
        if message["type"] == "draw":  # the canvas asks for a draw: the front end asks back
            self.outbox.append({"type": "draw"})
        elif message["type"] == "resize":  # the size it gives the canvas on the page, in CSS pixels
            self.size = message["size"]
        elif message["type"] == "binary":
            self.images += 1
            image = np.asarray(Image.open(io.BytesIO(bytes(buffers[0]))).convert("RGBA"))
            if self.canvas._image_mode == "full" or self.picture is None:
                self.picture = image.copy()
            else:
                self.picture[image[..., 3] > 0] = image[image[..., 3] > 0]

    def shown(self):
        return self.picture[..., :3]

    def mouse(self, kind, x, y, button=0, buttons=0):
        """(x, y): figure pixels from the bottom left, as matplotlib counts; the front end counts
        from the top left."""
        height = self.canvas.figure.bbox.height
        self.send(type=kind, x=x, y=height - y, button=button, buttons=buttons, modifiers=[], guiEvent={})

    def drag(self, start, end, steps=4):
        self.mouse("motion_notify", *start)
        self.mouse("button_press", *start, buttons=1)
        for k in range(1, steps + 1):
            self.mouse("motion_notify", *(np.add(start, np.subtract(end, start) * k / steps)), buttons=1)
        self.mouse("button_release", *end)

    def key(self, key, shift=False):
        """A key pressed (with Shift held), as matplotlib's web canvas writes it ("shift+kArrowRight")."""
        written = f"{'shift+' if shift else ''}k{key}"
        self.send(type="key_press", key=written, guiEvent={})
        self.send(type="key_release", key=written, guiEvent={})


def knob(slider, value=None):
    """Where a slider's knob is drawn (at `value`, if given), in figure pixels."""
    return tuple(slider.ax.transData.transform((slider.val if value is None else value, 0.5)))


def test_under_ipympl_a_drag_and_an_arrow_key_move_the_view_and_it_shows_what_a_full_draw_shows(monkeypatch):
    """week2/01 under ipympl: the figure's own canvas, shown once and kept out of pyplot; a
    drag of the T knob from 4 to 9 and the right arrow key (T is the slider last clicked) move
    it to T = 10; what the front end shows after each is what matplotlib draws of the figure,
    with the printed run's numbers where the lesson says (the title counts the grey cells)."""
    view, canvas, shown, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        from ipympl.backend_nbagg import Canvas  # (imported, ipympl is matplotlib's backend: here, it is)

        assert isinstance(canvas, Canvas) and shown == [canvas] and view.fig.canvas is canvas
        assert plt.get_fignums() == [] and not canvas.header_visible  # pyplot's next figure is the learner's own
        front = FrontEnd(canvas)
        assert np.array_equal(front.shown(), drawn_plainly(view))
        T = view.widgets["T"]
        front.drag(knob(T), knob(T, 9))
        assert T.val == 9 and np.array_equal(front.shown(), drawn_plainly(view))
        images = front.images
        front.key("ArrowRight")
        assert T.val == 10 and front.images > images  # (a blit sends the whole figure)
        assert np.array_equal(front.shown(), drawn_plainly(view))
        assert view.fig.axes[0].get_title() == "weights, T = 10: 45 grey cells blocked\n(T(T-1)/2 = 45)"
        front.drag(knob(view.widgets["row"]), knob(view.widgets["row"], 7))  # the other slider: the row
        front.key("ArrowLeft")
        assert view.widgets["row"].val == 6 and T.val == 10
        assert np.array_equal(front.shown(), drawn_plainly(view))


def test_under_ipympl_a_picture_missing_a_move_is_told_apart(monkeypatch):
    """The comparison above can fail: a front end that drops the images a move sends keeps
    the picture from before it."""
    view, canvas, _, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        front = FrontEnd(canvas)
        canvas.send = lambda content, buffers=None: None
        T = view.widgets["T"]
        front.drag(knob(T), knob(T, 9))
        assert T.val == 9 and not np.array_equal(front.shown(), drawn_plainly(view))


def test_under_ipympl_a_radio_button_clicked_moves_the_view(monkeypatch):
    """week1/15's pickers are RadioButtons: a click on another adjective, sent as the front end
    sends it, picks it, and the picture is what a full draw shows."""
    view, canvas, _, stack = open_view(monkeypatch, "week1/15_context_decides", "module://ipympl.backend_nbagg")
    with stack:
        front = FrontEnd(canvas)
        picker = view.widgets["adjective"]
        target = next(label for label in picker.labels if label.get_text() != picker.value_selected)
        x, y = target.get_window_extent().get_points().mean(axis=0)  # on its label
        front.mouse("button_press", x, y, buttons=1)
        front.mouse("button_release", x, y)
        assert picker.value_selected == target.get_text()
        assert np.array_equal(front.shown(), drawn_plainly(view))


def test_under_ipympl_the_arrow_keys_move_the_slider_with_shift_held_too(monkeypatch):
    """Notebook 7 keeps the plain arrows for moving between cells, and lets Shift+arrow through:
    with Shift held, an arrow moves the active slider one step, as without."""
    view, canvas, _, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        front = FrontEnd(canvas)
        T = view.widgets["T"]
        front.key("ArrowRight", shift=True)
        assert T.val == 5 and np.array_equal(front.shown(), drawn_plainly(view))
        front.key("ArrowLeft", shift=True)
        front.key("ArrowLeft")
        assert T.val == 3


@pytest.mark.parametrize("ratio", [1, 2])
def test_under_ipympl_the_canvas_fits_the_notebooks_width_on_any_screen(monkeypatch, ratio):
    """week2/01 (13 inches wide): the canvas the front end lays out is at most WIDTH CSS pixels wide,
    on a screen of one or two device pixels to a CSS pixel (a HiDPI screen: the figure is drawn
    at twice the dpi, and shown at the same size)."""
    view, canvas, _, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        dpi = view.fig.dpi
        front = FrontEnd(canvas, ratio)
        assert view.fig.dpi == ratio * dpi and front.size[0] <= notebook.WIDTH
        assert front.picture.shape[1] == int(ratio * front.size[0])


def test_under_ipympl_a_figure_fitted_without_its_original_dpi_is_too_wide_on_a_hidpi_screen(monkeypatch):
    """The check above can fail: a dpi lowered without the one a canvas scales from (matplotlib's
    _original_dpi) comes back at the window's size on a HiDPI screen."""
    fit = notebook.fit

    def forgetting(fig):
        original = fig._original_dpi
        fit(fig)
        fig._original_dpi = original
        return fig

    monkeypatch.setattr(notebook, "fit", forgetting)
    view, canvas, _, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        assert FrontEnd(canvas, 2).size[0] > notebook.WIDTH
