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

from tests.notebook_views import drawn_plainly, ends, handed, in_a_kernel, let_go, open_view, picture_of  # noqa: E402

# One lesson for each kind of control a view has (tests/test_live.py tests every view itself):
# sliders whose range another moves (week2/01), in steps of 2 (week2/03), over a list of values
# (week2/06), writing beside them what their place means (week1/02, week1/07), RadioButtons
# (week1/15, after a training cut short).
KINDS = ["week2/01_causal_mask", "week2/03_sinusoidal_pe", "week2/06_warmup_schedule",
         "week1/02_dot_product_variance", "week1/07_eli5_one_block", "week1/15_context_decides"]
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


@pytest.mark.parametrize("name", KINDS)
def test_the_controls_move_the_view_and_it_shows_what_a_full_draw_shows(monkeypatch, name):
    """One control per widget, opening where the window opens; moving each to its last value
    (then the first back to its first) moves the widget it stands for, and the picture shown
    is what matplotlib draws of the figure at that setting (its alt text the figure's titles)."""
    view, driven, shown, stack = open_view(monkeypatch, name)
    with stack:
        assert shown == [driven.box] and isinstance(driven, notebook.WidgetView)
        assert list(driven.controls) == list(view.widgets) and agrees(driven)
        image, alt = picture_of(driven)
        assert np.array_equal(image, drawn_plainly(view)[:driven.rows]) and alt == notebook.titles(view.fig)
        first = next(iter(driven.controls))
        moves = [(name_, ends(control)[0]) for name_, control in driven.controls.items()]
        for name_, value in moves + [(first, ends(driven.controls[first])[1])]:
            let_go(driven.controls[name_], value)
            assert agrees(driven), f"after moving {name_} to {value}"
            image, alt = picture_of(driven)
            assert np.array_equal(image, drawn_plainly(view)[:driven.rows]), f"after moving {name_} to {value}"
            assert alt == notebook.titles(view.fig)


@pytest.mark.parametrize("name", ["week2/01_causal_mask", "week1/15_context_decides"])
def test_the_picture_leaves_out_the_figures_own_sliders_and_nothing_else(monkeypatch, name):
    """Its controls are below it: the picture is the figure above its sliders (everything else
    stands there whole), or all of it when a widget stands elsewhere (week1/15's pickers)."""
    view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        renderer, height = view.fig.canvas.get_renderer(), view.fig.bbox.height
        widget_axes = {widget.ax for widget in view.widgets.values()}
        if name == "week1/15_context_decides":
            assert driven.rows is None
            return
        for ax in view.fig.axes:
            extent = ax.get_tightbbox(renderer)
            assert (height - extent.y0 < driven.rows) if ax not in widget_axes else (height - extent.y1 > driven.rows)
        assert picture_of(driven)[0].shape[0] == driven.rows


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
        assert not np.array_equal(picture_of(driven)[0], drawn_plainly(view)[:driven.rows])
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


# ---------------------------------------------------------------- under ipympl: matplotlib's own widgets

class FrontEnd:
    """ipympl's front end, headless: the messages it sends the canvas, in the order it sends
    them (a reply waits until the kernel has handled what came before), and the picture it
    shows from what the canvas sends back (a whole image, or a diff drawn over the last
    picture where it is not transparent), as its canvas view does."""

    def __init__(self, canvas):
        self.canvas, self.picture, self.images, self.outbox = canvas, None, 0, []
        canvas.send = self.receive  # (the comm to the front end)
        for kind in ("refresh", "send_image_mode", "initialized"):  # what the front end sends once shown
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

    def key(self, key):
        self.send(type="key_press", key=f"k{key}", guiEvent={})
        self.send(type="key_release", key=f"k{key}", guiEvent={})


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
