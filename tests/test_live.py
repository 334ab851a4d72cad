"""--live: every widget drives the lesson's own functions, and what is drawn is what the
lesson computes for that setting (headless, with Agg); a window opens and closes where a
display can be had (Xvfb here); where none can, one line and status 2.

Each window is built as the lesson's main() builds it, from a run with --live (run_live):
it must open at that run's settings and show that run's printed numbers there. Each drawn
value (titles, every bar, every image's array, the histograms, the boxes) is compared with
the printed line of a run of the lesson at the same setting, or with the lesson's own
function for that setting, so a window that stopped redrawing, drew something else, or was
handed something else (an untrained model, a flag ignored) fails. A window redraws only what
a move changed (common/live.py's Blit): what it shows after any moves is what a full draw of
the figure shows, pixel for pixel; so the tests read the drawn artists' data."""
import math
import re
import sys

import common.live as live
from common import OUTPUT_ROOT
from common.figures import plt

import numpy as np
import pytest

import run_all
from check import comparing
from tests.conftest import LESSONS, SCRATCH, SCRIPTS, lesson_run, load_script
from tests.drawing import QUICKER, drawn_plainly, pixels, run_live

LIVE = [name for name in SCRIPTS if LESSONS[name].live]
TRAININGS = [name for name in LIVE if LESSONS[name].training]
SLIDERS = [name for name in LIVE if name not in TRAININGS]  # windows with widgets


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def printed(monkeypatch, capsys, name, *argv):
    """What the lesson prints for these arguments (its main() run in-process, no window)."""
    load_script(name).main(list(argv))
    return capsys.readouterr().out


def window(name, *argv):
    """A fresh window, as the run with --live and argv opens it: (the View, the run's module,
    what the run printed, the arguments main() handed the window)."""
    module, out, build, args, _ = run_live(name, *argv)
    with live.window_style():
        return build(*args), module, out, args


def full_draws(fig):
    """A counter of the figure's full draws from now on."""
    count = [0]
    fig.canvas.mpl_connect("draw_event", lambda event: count.__setitem__(0, count[0] + 1))
    return count


def whole(ax, axis="x"):
    """The ticks shown on one axis of ax (those inside its limits) are whole numbers."""
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = [t for t in (ax.get_xticks() if axis == "x" else ax.get_yticks()) if low <= t <= high]
    return all(float(t).is_integer() for t in ticks)


def test_at_least_ten_lessons_go_live():
    assert len(LIVE) >= 10, LIVE


# Runs lessons (their paths the arguments) one after another without --live, in one fresh
# interpreter, and says after each its exit status, whether matplotlib has been imported so far,
# and whether anything of the live views has (common.live, common.notebook).
LOADS_MATPLOTLIB = SCRATCH / "loads_matplotlib.py"
LOADS_MATPLOTLIB.write_text("""
import contextlib, io, runpy, sys
sys.path.insert(0, %r)
for path in sys.argv[1:]:
    sys.argv, code = [path], 0
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as end:  # a lesson ends by run(main), which exits with main()'s status
            code = end.code or 0
    print(code, "matplotlib" in sys.modules, any(m in sys.modules for m in ("common.live", "common.notebook")))
""" % str(run_all.ROOT))
# week2/06 last: it draws a figure (saved under the check's folder), so it does import it.
LOADING = ("week1/02_dot_product_variance", "week2/05_label_smoothing", "week2/06_warmup_schedule")
MATPLOTLIB_LOADED = lesson_run(LOADING[0], *(SCRIPTS[name] for name in LOADING), path=LOADS_MATPLOTLIB, fresh=True)


@pytest.mark.reads(MATPLOTLIB_LOADED)
def test_a_lesson_without_a_figure_loads_no_matplotlib_unless_live(runs):
    """matplotlib costs about a second to import; a lesson that draws nothing at its defaults
    imports it only for its window, and no lesson run without --live imports the live views.
    (week2/06, run after them, draws a figure: it imports matplotlib, not the views.)"""
    result = runs[MATPLOTLIB_LOADED]
    assert result.stdout.split() == ["0", "False", "False", "0", "False", "False", "0", "True", "False"], (
        LOADING, result.stderr[-500:])


# ---------------------------------------------------------------- every window: blitting

def moves(view):
    """Each control to its first, middle and last value, one control after another."""
    for name, widget in view.widgets.items():
        if hasattr(widget, "valmin"):
            low, high, step = widget.valmin, widget.valmax, widget.valstep
            values = sorted(step) if np.iterable(step) else np.arange(low, high + step / 2, step)  # those it allows
            for value in (values[0], values[len(values) // 2], values[-1]):
                yield name, lambda w=widget, v=value: w.set_val(v)
        else:
            for i in (0, len(widget.labels) // 2, len(widget.labels) - 1):
                yield name, lambda w=widget, i=i: w.set_active(i)


@pytest.mark.parametrize("name", SLIDERS)
def test_a_move_redraws_only_what_it_changed_and_shows_what_a_full_draw_shows(name):
    """No move draws the whole figure (each redraws its layers of moving artists on the
    backgrounds kept at the first draw), and the window as it opens and after each move is
    the picture matplotlib draws of the figure without blitting, pixel for pixel: nothing a
    move changed was left in the background, and nothing moving covers what a full draw
    puts over it (an axes' frame, a zero line)."""
    view = window(name, *QUICKER.get(name, ()))[0]
    view.fig.canvas.draw()
    count = full_draws(view.fig)
    for control, move in [("nothing (as it opens)", lambda: None), *moves(view)]:
        move()
        assert count[0] == 0, f"moving {control} drew the whole figure"
        blitted = pixels(view.fig)
        assert np.array_equal(blitted, drawn_plainly(view)), f"after moving {control}, the window is not the figure"
        count[0] = 0


def test_a_layer_redraws_from_the_picture_below_it():
    """Blit itself: a move of a high layer keeps the low layers' picture, one of a low layer
    redraws the layers above it; a wrong layer number leaves the picture stale."""
    fig, ax = plt.subplots()
    low, high = ax.text(0.2, 0.5, "low"), ax.text(0.6, 0.5, "high")
    blit = live.Blit(fig)
    blit.add(low)
    blit.add(high, layer=1)
    count = full_draws(fig)
    high.set_text("high?")
    blit.update(1)
    assert count[0] == 0  # nothing shown yet: the figure's first draw (a window's, as it opens) shows it all
    fig.canvas.draw()
    for text, layer, right in ((high, 1, True), (low, 0, True), (low, 1, False)):
        text.set_text(text.get_text() + "!")
        blit.update(layer)
        blitted = pixels(fig)
        fig.canvas.draw()
        assert np.array_equal(blitted, pixels(fig)) is right
    count[0] = 0
    blit.add(ax.text(0.2, 0.2, "added"), layer=2)  # a layer added since the first draw: one full draw shows it
    blit.update(2)
    assert count[0] == 1
    fig.set_size_inches(5, 3)  # a resized window: one full draw again
    blit.update(1)
    assert count[0] == 2


def test_a_slider_asks_for_no_draw_as_it_is_built_and_redraws_when_moved():
    """add_slider: building it draws nothing (the window's first draw does); moved, outside a
    Blit, it redraws the figure as matplotlib's Slider does."""
    fig = plt.figure()
    count = full_draws(fig)
    slider = live.add_slider(fig, "x", 0, 10, 5)
    assert count[0] == 0
    slider.set_val(7)
    assert count[0] == 1


# ---------------------------------------------------------------- week1/02: the d_k slider

MANY_PAIRS = [lesson_run("week1/02_dot_product_variance", "--pairs", "100000", *extra) for extra in ((), ("--live",))]


@pytest.mark.reads(*MANY_PAIRS)
def test_the_d_k_window_counts_its_own_widths_in_the_size_limit(runs):
    """The window computes every width of its slider (up to 1024) for --pairs pairs: a size
    the printed run alone could afford (--d-k up to 256) is refused with --live."""
    alone, live_run = map(runs.__getitem__, MANY_PAIRS)
    assert alone.returncode == 0 and "--pairs" not in alone.stderr
    assert live_run.returncode == 2 and live_run.stderr.strip().endswith("the limit is 32,000,000 (about 256 MB): "
                                                                         "lower one of --pairs")


@pytest.mark.parametrize("argv, seed, pairs", [((), 42, 20_000),
                                               (("--d-k", "3", "100", "--pairs", "2000", "--seed", "7"), 7, 2000)])
def test_the_d_k_window_opens_at_the_last_width_printed_with_the_printed_draws(argv, seed, pairs):
    """At each printed width the window shows the printed run's own scores (one generator
    for the whole run): its variance is the printed one, digit for digit; it opens at the
    last width printed. Other widths are drawn as a run with that one --d-k would draw them."""
    name = "week1/02_dot_product_variance"
    view, module, out, _ = window(name, *argv)
    rows = re.findall(r"d_k=\s*(\d+) Var\(q\.k\)=\s*([\d.]+) target=\s*\d+ scaled_var=([\d.]+)", out)
    widths = live.allowed(module.WIDTHS, *(int(d_k) for d_k, _, _ in rows))
    slider = view.widgets["d_k"]
    assert slider.valtext.get_text() == rows[-1][0]  # where it opens
    rng = np.random.default_rng(seed)
    drawn = {int(d_k): module.dot_products(rng, pairs, int(d_k)) for d_k, _, _ in rows}  # as the printed run draws
    for d_k in [*drawn, 1024]:
        slider.set_val(widths.index(d_k))
        raw_title, scaled_title = (ax.get_title() for ax in view.fig.axes[:2])
        assert slider.valtext.get_text() == str(d_k)
        row = [r for r in rows if int(r[0]) == d_k]
        if row:
            assert raw_title == f"raw q.k: Var = {row[0][1]}"
            assert float(scaled_title.split("= ")[1]) == pytest.approx(float(row[0][2]), abs=0.006)
        dots = drawn.get(d_k)
        if dots is None:  # not printed: a fresh generator
            dots = module.dot_products(np.random.default_rng(seed), pairs, d_k)
        for ax, values in zip(view.fig.axes[:2], (dots, dots / np.sqrt(d_k)), strict=True):
            counts, edges, _ = ax.patches[0].get_data()
            assert counts.tolist() == np.histogram(values, bins=edges)[0].tolist()
            assert counts.max() <= ax.get_ylim()[1]  # the tallest bar inside the axes, at every width


# ---------------------------------------------------------------- no window: one line, status 2

NO_DISPLAY = {name: lesson_run(name, "--live", env={"DISPLAY": None, "WAYLAND_DISPLAY": None, "MPLBACKEND": None})
              for name in LIVE}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.reads(NO_DISPLAY[name])) for name in LIVE])
def test_without_a_display_live_says_so_in_one_line(runs, name):
    result = runs[NO_DISPLAY[name]]
    if sys.platform.startswith("linux"):
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "--live cannot open a window here" in result.stderr
        assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- a real window, where one can open

# Runs the lesson (its path the first argument, then its arguments) with --live, closing the
# window show() opens one second after it opens: only that one (a training's window must close
# with it: one `q` ends the run).
CLOSE_SOON = SCRATCH / "close_soon.py"
CLOSE_SOON.write_text(f"""
import runpy, sys
sys.path.insert(0, {str(run_all.ROOT)!r})
import common.live as live
show = live.show

def show_briefly(build, *args):
    import matplotlib.pyplot as plt

    def build_and_close_soon():
        view = build(*args)
        assert plt.get_backend().lower() != "agg", "a window was asked for, but the figure draws with Agg"
        timer = view.fig.canvas.new_timer(interval=1000)
        timer.add_callback(plt.close, view.fig)
        timer.start()
        return view
    show(build_and_close_soon)

live.show = show_briefly
sys.argv = [sys.argv[1], "--live", *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
""")
# A training opens its window on a short run (a training at its defaults costs 10 to 17 s), with
# its figure saved; the same short run without --live is the reference.
SHORT = {"week1/09_bottleneck_experiment": ("--steps", "20", "--figure", "figure.png"),
         "week2/12_train_tiny_transformer": ("--steps", "50", "--figure", "figure.png")}
WINDOW_FOLDERS = {name: SCRATCH / "windows" / name for name in LIVE}
WINDOWS, ALONE = {}, {}
for name, folder in WINDOW_FOLDERS.items():
    folder.mkdir(parents=True)
    # a real window (on this session's display, or on Xvfb), figures saved as the check saves them,
    # under a scratch folder; killed after 90 s (a window left open never ends)
    WINDOWS[name] = lesson_run(name, SCRIPTS[name], *SHORT.get(name, ()), path=CLOSE_SOON, window=True, cwd=folder,
                               env={OUTPUT_ROOT: str(folder)}, timeout=90)
    if name in SHORT:
        (folder / "alone").mkdir()
        ALONE[name] = lesson_run(name, *SHORT[name], cwd=folder / "alone")


def window_reads(name):
    return pytest.mark.reads(WINDOWS[name], *([ALONE[name]] if name in ALONE else []))


@pytest.mark.parametrize("name", [pytest.param(name, marks=window_reads(name)) for name in LIVE])
def test_the_window_opens_after_the_printed_lines_and_closing_it_ends_the_run(runs, name, outputs):
    """The printed lines are those of the run without --live; then the window; closing it
    (and it alone: a training's window closes with it) ends the script with status 0. The
    figure the run saves is the one the run without --live saves, byte for byte: the
    window's larger text stays in the window (the same machine and kernel settings draw a
    trained model's figure alike)."""
    result = runs[WINDOWS[name]]
    assert result.returncode == 0, result.stderr[-2000:] or "killed: the run did not end when its window closed"
    if name in ALONE:
        alone = runs[ALONE[name]]
        assert alone.returncode == 0 and result.stdout == alone.stdout
        assert (WINDOW_FOLDERS[name] / "figure.png").read_bytes() == (
            WINDOW_FOLDERS[name] / "alone" / "figure.png").read_bytes()
        return
    assert comparing.outputs_match(outputs[name].stdout, result.stdout)
    for png in WINDOW_FOLDERS[name].rglob("*.png"):
        relative = png.relative_to(WINDOW_FOLDERS[name])
        assert png.read_bytes() == (run_all.check_folder() / relative).read_bytes(), relative


# ---------------------------------------------------------------- week1/07: click the stages

def test_one_block_stage_slider_draws_each_printed_sat_row():
    name = "week1/07_eli5_one_block"
    view, module, out, _ = window(name, "--d-model", "8", "--heads", "2", "--d-ff", "12")
    rows = [line.split("] ", 1)[1].strip() for line in out.splitlines() if line.startswith("  ") and "[3 x " in line]
    x, block, _ = module.build(8, 2, 12, 42)  # the run's own settings
    with module.torch.no_grad():
        grids = list(module.stages(block, x).values())
    names = list(module.stages(block, x))
    assert len(rows) == 8
    for i in (*range(8), 3, 5, 0):
        view.widgets["stage"].set_val(i)
        title = view.fig.axes[0].get_title().splitlines()
        assert title[1] == f"'sat' row: {rows[i]}"
        made_from = module.MADE_FROM.get(names[i], [])
        assert title[2:] == [f"from {part}: {rows[names.index(part)]}" for part in made_from]
        assert len(made_from) == (0 if i == 0 else 2 if i in (3, 7) else 1)  # the residual stages add two
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), grids[i][0].numpy())
        width = grids[i].shape[-1]
        written = [t.get_text() for t in view.fig.axes[0].texts if t.get_visible()]
        assert written == [f"{v:.2f}" for v in grids[i][0].flatten().tolist()]  # every number in its cell
        assert view.fig.axes[0].get_xlim() == (-0.5, width - 0.5) and view.fig.axes[0].patches[0].get_width() == width


@pytest.mark.parametrize("argv", [(), ("--d-ff", "4")], ids=["defaults", "d_ff = d_model"])
def test_one_block_names_the_ffns_hidden_columns_and_redraws_the_name(argv):
    """The learner trial: the FFN's 16 hidden columns were labelled "meaning columns". Each
    stage's axis says what its columns are; with --d-ff equal to --d-model only the name
    changes between stages (no width does), and the window still shows it, pixel for pixel."""
    view, module, _, (d, h, f, seed) = window("week1/07_eli5_one_block", *argv)
    x, block, _ = module.build(d, h, f, seed)
    names = list(module.stages(block, x))
    ax = view.fig.axes[0]
    view.fig.canvas.draw()
    for i in (*range(len(names)), 4, 5, 6, 5):
        view.widgets["stage"].set_val(i)
        hidden = names[i] == "FFN widened"
        assert ax.get_xlabel() == (f"the FFN's hidden columns ({f})" if hidden else f"meaning columns ({d})")
        assert np.array_equal(pixels(view.fig), drawn_plainly(view)), f"after stage {i + 1}"


# ---------------------------------------------------------------- week1/11: saturation

def test_saturation_window_shows_the_printed_means_and_says_what_they_show(monkeypatch, capsys):
    """At the printed widths the window's means are the printed ones (it opens at the widest);
    at another width, the first width of a run's (a fresh generator). Its title says what the
    means show, judged with the table's thresholds: at d_k = 1 nothing is one-hot."""
    name = "week1/11_softmax_saturation"
    figure = str(SCRATCH / "saturation.png")
    view, module, out, _ = window(name, "--d-k", "2", "4", "256", "512", "--sentences", "32", "--figure", figure)
    slider = view.widgets["d_k"]
    widths = live.allowed(module.LIVE_WIDTHS, 2, 4, 256, 512)
    assert slider.valtext.get_text() == "512"
    rng = np.random.default_rng(42)
    drawn = {d_k: module.queries_and_keys(rng, 32, 16, d_k) for d_k in (2, 4, 256, 512)}  # as the run draws them
    alone = printed(monkeypatch, capsys, name, "--d-k", "16", "1024", "--sentences", "32", "--figure", figure)
    for d_k, out_of in ((512, out), (2, out), (256, out), (16, alone), (1, None)):
        slider.set_val(widths.index(d_k))
        mean_ax = view.fig.axes[1]
        heights = [bar.get_height() for bar in mean_ax.patches]
        if out_of is not None:
            numbers = re.findall(r"\d\.\d{3}", next(line for line in out_of.splitlines()
                                                    if line.strip().startswith(f"{d_k} |")))
            assert mean_ax.get_title().endswith(f"unscaled {numbers[0]}, {numbers[1]}; scaled {numbers[2]}, "
                                                f"{numbers[3]}")
            assert [f"{h:.3f}" for h in heights] == numbers
        Q, K = drawn[d_k] if d_k in drawn else module.queries_and_keys(np.random.default_rng(42), 32, 16, d_k)
        one_query = [module.torch.softmax(module.scores(Q, K, scaled)[0, 0], -1).tolist() for scaled in (False, True)]
        assert [bar.get_height() for bar in view.fig.axes[0].patches] == one_query[0] + one_query[1]
        w_u, g_u, w_s, g_s = heights
        said = view.fig._suptitle.get_text()
        for (w, g), side in (((w_u, g_u), "unscaled"), ((w_s, g_s), "scaled")):
            words = ("nearly one-hot" if w > module.ONE_HOT else "not one-hot") + ", gradient " + (
                "nearly gone" if g < module.VANISHED else "alive")
            assert f"{side}, {words}" in said
        if d_k == 1:
            assert "one-hot," not in said.replace("not one-hot,", "") and "gone" not in said


# ---------------------------------------------------------------- week2/01: the causal mask

def test_causal_mask_window_opens_on_the_printed_rows():
    """At the defaults the printed weights come from the hand-written 4 x 4 scores: the
    window opens at T = 4 on row 2 (the row of the zeroed-values line), with those weights."""
    view, module, out, _ = window("week2/01_causal_mask")
    T, row = view.widgets["T"].val, view.widgets["row"].val
    assert (T, row) == (4, 2)
    line = next(line for line in out.splitlines() if line.startswith("row 2: "))
    drawn = [bar.get_height() for bar in view.fig.axes[1].patches if bar.get_visible()]
    assert line.startswith(f"row 2: [{', '.join(f'{w:.4f}' for w in drawn)}]; sum=")
    assert "the printed run's scores" in view.fig._suptitle.get_text()


def causal_grid(view):
    """week2/01's window as drawn: (the weights image's array, the numbers written in its
    cells by (row, column) from 1, the row sums beside it)."""
    grid_ax = view.fig.axes[0]
    texts = [t for t in grid_ax.texts if t.get_text()]
    cells = {(round(t.get_position()[1]) + 1, round(t.get_position()[0]) + 1): t.get_text()
             for t in texts if not t.get_text().startswith("sum ")}
    return grid_ax.images[0].get_array(), cells, [t.get_text() for t in texts if t.get_text().startswith("sum ")]


def test_causal_mask_sliders_draw_the_printed_rows(monkeypatch, capsys):
    """One slider moved at a time (as a learner drags them), and after each move everything
    drawn is checked: the grid, the numbers in its cells, the chosen row's bars, its title,
    its box, and the row picker's end (row T)."""
    name = "week2/01_causal_mask"
    view, module, _, _ = window(name, "--seed", "3", "--seq-len", "9")
    assert view.widgets["T"].val == 9
    runs = {T: printed(monkeypatch, capsys, name, "--seed", "3", "--seq-len", str(T)) for T in (4, 6, 9, 10)}
    for slider, value in (("row", 2), ("T", 9), ("row", 9), ("T", 4), ("row", 12), ("T", 10), ("T", 6)):
        view.widgets[slider].set_val(value)
        T, i = int(view.widgets["T"].val), int(view.widgets["row"].val)
        assert i <= T and view.widgets["row"].valmax == T
        out = runs[T]
        box = next(p for p in view.fig.axes[0].patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0))
        assert box.get_y() == i - 1.5 and box.get_width() == T  # the red box on the chosen row
        line = next(line for line in out.splitlines() if line.startswith(f"row {i}: "))
        drawn = [bar.get_height() for bar in view.fig.axes[1].patches if bar.get_visible()]
        assert line.startswith(f"row {i}: [{', '.join(f'{w:.4f}' for w in drawn)}]; sum=")
        assert view.fig.axes[1].get_title() == (f"row {i}: {i} visible word{'s' * (i > 1)}; "
                                                f"sum = {line.split('sum=')[1]}")
        mask = module.causal_mask(T)
        weights = module.masked_weights(module.score_table(3)[:T, :T], mask)
        image, cells, sums = causal_grid(view)
        assert np.array_equal(image.mask, mask == 1) and np.array_equal(image.data[mask == 0], weights[mask == 0])
        assert cells == {(r + 1, c + 1): f"{weights[r, c]:.2f}" for r in range(T) for c in range(r + 1)}
        assert sums == [f"sum {total:.2f}" for total in weights.sum(axis=1)]
        printed_rows = [line for line in out.splitlines() if line.startswith("row ")]
        assert printed_rows == [f"row {r + 1}: {module.vec(weights[r])}; sum={weights[r].sum():.4f}" for r in range(T)]


@pytest.mark.parametrize("argv", [(), ("--seed", "3", "--seq-len", "9")])
def test_moving_T_never_changes_an_earlier_row(argv, monkeypatch, capsys):
    """The learner trial's finding: a later word must not change an earlier row. The scores
    are drawn once, at the largest T, and T shows their first T rows and columns: row i's
    weights (drawn, and printed by a run at that T) are the same at every T from i to 12,
    whichever way T moves. (Drawing T x T new scores for each T moved row 2 from 0.92/0.08 at
    T = 11 to 0.11/0.89 at T = 12.) Same to float rounding: a longer row's softmax sums its
    zeros too, in another order."""
    name = "week2/01_causal_mask"
    view, module, _, _ = window(name, *argv)
    seen = {}  # row -> its drawn weights, the first time a T showed it
    for T in (*range(1, module.MOST + 1), *range(module.MOST - 1, 0, -1)):
        view.widgets["T"].set_val(T)
        image = causal_grid(view)[0]
        for i in range(T):
            row = image.data[i, : i + 1].tolist()
            assert seen.setdefault(i, row) == pytest.approx(row, rel=0, abs=1e-15), \
                f"row {i + 1} changed when T moved to {T}"
    if argv:  # runs at other T print the same rows as the window draws
        for T in (2, 11, 12):
            out = printed(monkeypatch, capsys, name, "--seed", "3", "--seq-len", str(T))
            for i in range(T):
                assert f"row {i + 1}: {module.vec(seen[i] + [0.0] * (T - i - 1))};" in out


def test_the_row_picker_ends_at_T_and_the_grid_has_a_colour_scale():
    """The row picker's track runs from row 1 to row T (not to 12 while T is 4), and the
    grid's colours have their scale beside it: weight 0 to 1."""
    view = window("week2/01_causal_mask")[0]
    row_slider, weights_image = view.widgets["row"], view.fig.axes[0].images[0]
    for T in (4, 12, 1, 7):
        view.widgets["T"].set_val(T)
        assert (row_slider.valmin, row_slider.valmax) == (1, T)
        assert row_slider.ax.get_xlim() == ((0, 2) if T == 1 else (1, T))
    scale = weights_image.colorbar
    assert scale is not None and scale.ax in view.fig.axes and (scale.vmin, scale.vmax) == (0, 1)
    assert "weight" in scale.ax.get_ylabel()


def test_the_row_knob_follows_the_row_shown_when_T_shrinks():
    """After T shrinks below the row, the row's knob, its number and the box are all on the
    last row; dragging or stepping the knob past the last row stops there."""
    from matplotlib.backend_bases import MouseEvent

    view = window("week2/01_causal_mask")[0]
    T_slider, row_slider = view.widgets["T"], view.widgets["row"]
    T_slider.set_val(10)
    row_slider.set_val(9)
    T_slider.set_val(5)
    box = next(p for p in view.fig.axes[0].patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0))
    knob = row_slider.poly.get_x() + row_slider.poly.get_width()
    assert (row_slider.val, knob, row_slider.valtext.get_text(), box.get_y()) == (5, 5, "5", 3.5)
    live.move(row_slider, 1)
    assert row_slider.val == 5
    canvas = view.fig.canvas
    for kind, value in (("button_press_event", 4), ("motion_notify_event", 11), ("button_release_event", 11)):
        x, y = row_slider.ax.transData.transform((value, 0.5))
        canvas.callbacks.process(kind, MouseEvent(kind, canvas, x, y, button=1))
    assert row_slider.val == 5 and view.fig.axes[1].get_title().startswith("row 5:")


# ---------------------------------------------------------------- week2/03: positions

def test_positional_encoding_sliders_draw_the_printed_tags(monkeypatch, capsys):
    name = "week2/03_sinusoidal_pe"
    view, module, out, _ = window(name)
    assert view.widgets["d_model"].val == 16  # the run's own d
    hand_check = re.search(r"PE\(1\)=(\[[^\]]+\])", out).group(1)
    view.widgets["d_model"].set_val(4)
    view.widgets["position"].set_val(1)
    shown = [b for b in view.fig.axes[1].patches if b.get_visible()]
    assert "[" + ", ".join(f"{b.get_height():.4f}" for b in shown) + "]" == hand_check
    for slider, value in (("position", 7), ("d_model", 16), ("position", 49), ("d_model", 64), ("d_model", 2),
                          ("position", 0)):  # one slider at a time, everything drawn checked after each
        view.widgets[slider].set_val(value)
        p, d = int(view.widgets["position"].val), int(view.widgets["d_model"].val)
        table_ax, row_ax = view.fig.axes[:2]
        box, above, below = table_ax.patches[:3]
        assert box.get_y() == p - 0.5 and box.get_width() == d  # the box on row p of the table
        assert (above.get_y(), above.get_height(), below.get_y(), below.get_height()) == (-0.5, p, p + 0.5, 49 - p)
        assert above.get_width() == below.get_width() == d  # every row but p faded, right across the table
        assert list(table_ax.lines[0].get_ydata()) == [p]  # the pointer beside the table, at row p
        drawn = [b.get_height() for b in row_ax.patches if b.get_visible()]
        torch_form = module.torch_pe(50, d)[p].tolist()  # the lesson's independent torch form
        assert drawn == pytest.approx(torch_form, abs=1e-5)
        assert row_ax.get_title() == f"PE({p}): squared length {d / 2:.4f} = d/2 = {d / 2:g}"
        assert np.array_equal(table_ax.images[0].get_array(), module.sinusoidal_pe(50, d))
        assert whole(table_ax, "x") and whole(table_ax, "y") and whole(row_ax, "x")  # no tick between two cells


def test_the_position_table_has_its_colour_scale_and_the_chosen_row_stands_out():
    """The learner trial's finding: the table had no colour scale, and its marked row was a
    thin black line. Now the scale beside it runs from -1 to 1, and the chosen row is the one
    row drawn in full colour (the others faded), pointed at from beside the table."""
    view = window("week2/03_sinusoidal_pe")[0]
    table_ax = view.fig.axes[0]
    scale = table_ax.images[0].colorbar
    assert scale is not None and (scale.vmin, scale.vmax) == (-1, 1) and "PE(p, c)" in scale.ax.get_ylabel()
    view.widgets["position"].set_val(20)
    view.fig.canvas.draw()
    picture = pixels(view.fig).astype(float)
    x0, x1 = table_ax.transData.transform([(0, 0), (15, 0)])[:, 0].round().astype(int)
    height = picture.shape[0]

    def row_colour(p):  # the mean colour of row p's middle, across the table
        y = int(round(height - table_ax.transData.transform((0, p))[1]))
        return picture[y, x0:x1, :3]

    faded, shown = row_colour(10), row_colour(20)
    assert np.abs(shown - 255).mean() > 2 * np.abs(faded - 255).mean()  # the chosen row far from white
    marker = table_ax.lines[0]
    assert marker.get_marker() == "<" and marker.get_markersize() >= 10 and not marker.get_clip_on()


def test_positional_encoding_window_opens_at_the_printed_d():
    view, module, _, _ = window("week2/03_sinusoidal_pe", "--d-model", "8", "--max-len", "70", "--offset", "5")
    assert (view.widgets["d_model"].val, view.widgets["position"].valmax) == (8, 69)
    drawn = [b.get_height() for b in view.fig.axes[1].patches if b.get_visible()]
    assert drawn == pytest.approx(module.sinusoidal_pe(70, 8)[1].tolist())


# ---------------------------------------------------------------- week2/05: label smoothing

def test_label_smoothing_slider_draws_the_printed_target_and_losses(monkeypatch, capsys):
    name = "week2/05_label_smoothing"
    for opening in ("0.3", "0.123"):  # the window opens at the run's epsilon, on the slider's steps or not
        view, module, out, _ = window(name, "--epsilon", opening)
        assert view.widgets["epsilon"].val == float(opening)
        outs = {opening: out}
        for epsilon in (opening, "0.1", "0.99", "0"):
            view.widgets["epsilon"].set_val(float(epsilon))
            out = outs.get(epsilon) or printed(monkeypatch, capsys, name, "--epsilon", epsilon)
            target = re.search(r"^target=\[([^\]]+)\]", out, flags=re.M).group(1).split(", ")
            hand, by_torch = re.search(r"hand-built loss=([\d.]+); torch label_smoothing=\S+ loss=([\d.]+)",
                                       out).groups()
            target_ax, loss_ax = view.fig.axes[:2]
            assert [f"{bar.get_height():.3f}" for bar in target_ax.patches[:4]] == target
            z = module.torch.tensor([0.6, 0.1, 1.8, 0.5])
            assert [bar.get_height() for bar in target_ax.patches[4:]] == module.torch.softmax(z, -1).tolist()
            assert loss_ax.get_title() == f"loss: by hand {hand}\ntorch {by_torch}"
            assert target_ax.get_title() == f"q = {target[2]} on gold, {target[0]} on each other"  # read off q
            assert [f"{bar.get_height():.8f}" for bar in loss_ax.patches[:2]] == [hand, by_torch]
            assert max(bar.get_height() for bar in loss_ax.patches) <= loss_ax.get_ylim()[1]


# ---------------------------------------------------------------- week2/06: the warm-up schedule

def test_warmup_window_opens_at_the_printed_settings():
    out_path = str(SCRATCH / "warmup.png")
    view, module, out, _ = window("week2/06_warmup_schedule", "--warmup", "1234", "--d-model", "256", "512",
                                  "--figure", out_path)
    assert (view.widgets["warmup"].val, view.widgets["d_model"].val) == (1234, 256)
    peak = re.search(r"peak: d=256 at step (\d+)", out).group(1)
    lr = module.learning_rate(int(peak), 256, 1234)
    assert view.fig.axes[0].get_title() == f"d = 256, w = 1234: peak at step {peak}, lr = {lr:.10f}"


def test_warmup_sliders_draw_the_printed_peak(monkeypatch, capsys):
    name = "week2/06_warmup_schedule"
    view, module, _, _ = window(name)
    for slider, value in (("warmup", 2000), ("d_model", 256), ("warmup", 7500), ("d_model", 64), ("warmup", 4000),
                          ("d_model", 512)):  # one slider at a time, everything drawn checked after each
        view.widgets[slider].set_val(value)
        w, d = int(view.widgets["warmup"].val), int(view.widgets["d_model"].val)
        out = printed(monkeypatch, capsys, name, "--warmup", str(w), "--d-model", str(d), "--steps", str(w),
                      "--figure", str(SCRATCH / "warmup.png"))
        lr = out.splitlines()[1].split()[1]
        peak = re.search(r"peak: d=\d+ at step (\d+)", out).group(1)
        assert view.fig.axes[0].get_title() == f"d = {d}, w = {w}: peak at step {peak}, lr = {lr}"
        curve = view.fig.axes[0].lines[0]
        assert f"{curve.get_ydata()[list(curve.get_xdata()).index(int(peak))]:.10f}" == lr
        assert np.array_equal(curve.get_ydata(), module.learning_rate(curve.get_xdata(), d, w))
        dot, marker = view.fig.axes[0].lines[1:3]  # the peak: a dot on the curve and a dashed line
        assert list(dot.get_xdata()) == [int(peak)] and f"{dot.get_ydata()[0]:.10f}" == lr
        assert list(marker.get_xdata()) == [int(peak)] * 2


# ---------------------------------------------------------------- week2/10: a head picker

def test_head_picker_draws_each_printed_head_and_the_blend():
    name = "week2/10_eli5_causal_self_attention"
    view, module, out, _ = window(name, "--seq", "6", "--heads", "4")  # the run's own sizes
    _, q, k, v, mask, _, _, _ = module.snippet(6, 8, 42)
    W_O = module.nn.Linear(8, 8)  # drawn right after the snippet, as the view draws it
    concat = module.split_into_heads(q, k, v, 4, mask)[-1]
    heads_alone = []
    for i in range(1, 5):
        view.widgets["head"].set_val(i)
        last_row = re.search(rf"^head {i}: .*\n  last row=\[([^\]]+)\]", out, flags=re.M).group(1).split(", ")
        assert view.fig.axes[0].get_title() == (f"head {i}, the last row's weights:\n"
                                                f"[{', '.join(f'{float(w):.2f}' for w in last_row)}]")
        bars = view.fig.axes[1].patches
        alone = [bar.get_height() for bar in bars[8:]]
        blended = [bar.get_height() for bar in bars[:8]]
        assert alone != blended
        assert alone == module.from_heads(W_O, concat, [i - 1], 4)[-1].tolist()  # this head's, not another's
        heads_alone.append(alone)
        head_weights = module.split_into_heads(q, k, v, 4, mask)[3][i - 1].detach().numpy()
        future = np.triu(np.ones((6, 6), dtype=bool), 1)
        drawn = np.ma.masked_invalid(view.fig.axes[0].images[0].get_array())  # the blocked cells are not drawn
        assert np.array_equal(np.ma.getmaskarray(drawn), future) and np.array_equal(drawn.data[~future],
                                                                                   head_weights[~future])
    # The four heads alone add up to the blend, plus the bias counted three times too many.
    total = [sum(column) - 3 * b for column, b in zip(zip(*heads_alone, strict=True), W_O.bias.tolist(), strict=True)]
    assert total == pytest.approx(W_O(concat)[-1].tolist(), abs=1e-5)


@pytest.mark.parametrize("argv", [(), ("--seq", "1", "--d-model", "1", "--heads", "1"),
                                  ("--seq", "64", "--d-model", "64", "--heads", "64")])
def test_head_picker_labels_stay_clear_at_every_size(argv):
    """The legend covers no bar; the tokens are numbered 1, 2, ... (no tick between two
    tokens), the output numbers are whole; the title stays above its own panel."""
    view = window("week2/10_eli5_causal_self_attention", *argv)[0]
    grid_ax, out_ax = view.fig.axes[:2]
    renderer = view.fig.canvas.get_renderer()
    for head in sorted({1, int(view.widgets["head"].valmax)}):
        view.widgets["head"].set_val(head)
        view.fig.canvas.draw()
        legend = out_ax.get_legend().get_window_extent(renderer)
        assert not any(legend.overlaps(bar.get_window_extent(renderer)) for bar in out_ax.patches)
        assert whole(grid_ax, "x") and whole(grid_ax, "y") and whole(out_ax, "x")
        labels = [t.get_text() for t in grid_ax.get_xticklabels()]
        assert labels[0] in ("1", "10") and all(label.isdigit() for label in labels)
        title = grid_ax.title.get_window_extent(renderer)
        assert not title.overlaps(out_ax.title.get_window_extent(renderer))
        assert title.x0 >= 0 and title.x1 <= view.fig.bbox.x1


# ---------------------------------------------------------------- week1/16: pick a head

def role_boxes(module, sentence, role):
    """Where a role says a head should look, row by row: {(column, row)}, written out from
    the blanks (a) the word just before, (b) the first noun so far."""
    before, first, first_at = (t[0] for t in module.answers(sentence[None]))
    if role == "before":
        return {(i - 1, i) for i in range(1, len(sentence))}
    if role == "nouns":
        return {(int(first_at[i]), i) for i in range(len(sentence)) if first[i] != module.NONE}
    return set()


def red_boxes(ax):
    return {(round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in ax.patches
            if p.get_visible() and p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)}


def test_head_picker_opens_on_the_printed_sentence_and_shows_each_printed_role_and_knock_out():
    """main() hands the window the trained model and what measure() found: the window opens
    at head 1 on the figure's sentence, where each head looks hardest as the printed table
    says; its titles are the printed roles, its bars the printed bands."""
    name = "week1/16_heads_take_roles"
    view, module, out, (model, held, heads, m, example, _) = window(name)
    assert (view.widgets["head"].val, view.widgets["sentence"].val) == (1, 1 + next(
        k for k, row in enumerate(held) if module.torch.equal(row[row != module.PAD], example)))
    words = [module.WORDS[t] for t in example.tolist()]
    lines = out.split("(the figure shows every weight):\n")[1].splitlines()
    columns = re.findall(r"head (\d+)", lines[0])  # the heads with a role have a column: "  word     head 1  ..."
    assert columns == [str(h) for h in (1, 2)]
    for h in (1, 2):
        view.widgets["head"].set_val(h)
        role = re.search(rf"^  head {h}: .*:\n    (it looks at .*|no single role)$", out, flags=re.M).group(1)
        assert view.fig.axes[0].get_title() == f"head {h}: {role.removeprefix('it ')}"
        top = view.fig.axes[0].images[0].get_array().argmax(-1)  # where it looks hardest, row by row
        c = columns.index(str(h))
        for i, row in enumerate(lines[1:1 + len(words)]):
            cell = row[11 + 17 * c:11 + 17 * c + 16].strip()  # f"  {word:8} " then f"{cell:16} " per head
            if not cell.startswith("-"):  # "- (no noun yet)": no place to look
                assert words[top[i]] == cell.split()[0] and (top[i] == i) == cell.endswith("(itself)")
        row = r"\(a\) (\S+%)(?: \(.*?\))?, \(b\) (\S+%)"  # "(a) 22.9% (below 50%), (b) 100.0% (above 80%)"
        knocked = re.search(rf"^  head {h} knocked out +{row}", out, flags=re.M).groups()
        everything = re.search(rf"^  all heads +{row}", out, flags=re.M).groups()  # (the first: the lesson's heads)
        bars = [bar.get_height() for bar in view.fig.axes[1].patches[:4]]
        assert tuple(f"{bar:.1%}" for bar in bars[:2]) == everything  # the printed numbers
        assert tuple(f"{bar:.1%}" for bar in bars[2:]) == knocked
        assert bars[:2] == [m["all"]["a"], m["all"]["b"]]  # all heads: measure()'s own numbers
        own = dict(m["knocked"])[(h - 1,)]
        assert bars[2:] == [own["a"], own["b"]]  # this head's own knock-out, not another's


def test_the_red_boxes_are_where_each_role_says_in_the_window_and_the_figure():
    name = "week1/16_heads_take_roles"
    view, module, _, (model, held, heads, m, example, _) = window(name)
    assert set(m["roles"]) == {"before", "nouns"}  # both roles are drawn below
    figure = module.plot(module.attention_maps(model, example), example, m["roles"], new_from=1)
    for h, ax in enumerate(figure.axes[:heads]):
        assert red_boxes(ax) == role_boxes(module, example, m["roles"][h])
    for slider, value in (("head", 1), ("sentence", 9), ("head", 2), ("sentence", 30), ("head", 1), ("sentence", 1)):
        view.widgets[slider].set_val(value)
        h, k = int(view.widgets["head"].val), int(view.widgets["sentence"].val)
        sentence = held[k - 1][held[k - 1] != module.PAD]
        assert red_boxes(view.fig.axes[0]) == role_boxes(module, sentence, m["roles"][h - 1])
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), module.attention_maps(model, sentence)[h - 1])
        words = [t.get_text() for t in view.fig.axes[0].texts if t.get_text()]
        assert words == [module.WORDS[t] for t in sentence.tolist()] * 2  # along both sides of the map


# ---------------------------------------------------------------- week1/15: pick the adjective

def tenths(weights):
    """The printed table's bars, from weights."""
    return ["#" * min(9, math.floor(10 * w)) or "." for w in weights]


def sentence_shown(view):
    """week1/15's window: the words of its left column ("it" reads from them), of its right
    column (the words looked at), and the weights written beside them."""
    texts = view.fig.axes[0].texts  # draw_sentence's three per word: left, right, weight
    return [[t.get_text() for t in texts[k::3]] for k in range(3)]


def check_sentence(module, view, out, model, adjective, hide):
    """The window shows the page's sentence with `adjective` as the printed run does."""
    lines = out.splitlines()
    line = next(line + lines[i + 1] for i, line in enumerate(lines) if line.startswith(f"  {adjective} -> it "))
    answer = re.search(r"answers \"(\w+)\"", line).group(1)
    noun = re.search(r"leans on (\w+) \(more", line)
    title = view.fig.axes[0].get_title()
    assert title.endswith(f"; the model answers \"{answer}\"") and (noun is None or f"at {noun.group(1)};" in title)
    words = module.sentence_words(*module.PAGE, adjective)
    weights, _ = module.it_attention(model, words, hide)
    left, right, drawn = sentence_shown(view)
    assert left == right == words  # the sentence, in both columns
    assert drawn == [f"{w:.2f}" for w in weights]  # the weight written beside each word
    widths = [line.get_linewidth() for line in view.fig.axes[0].lines]  # 0.3 + 8 x the weight, exactly
    assert widths == pytest.approx([0.3 + 8 * w for w in weights], abs=1e-9)
    table = out.split("\"it\"'s attention in layer 2")[1].splitlines()
    first = table[1].split()[1] == adjective  # "                  too tired     too wide": its column
    for i, row in enumerate(table[2:2 + len(words)]):  # f"    {word:13} {cell:13} {cell}"
        if i != module.ADJECTIVE_AT:
            assert (row[18:31] if first else row[32:]).strip() == tenths(weights)[i]  # the printed bar, from these


def test_adjective_picker_opens_at_the_printed_adjective_and_moves_as_the_printed_run_says():
    name = "week1/15_context_decides"
    view, module, out, (model, hide, _) = window(name, "--adjectives", "scared", "busy")
    assert view.widgets["adjective"].value_selected == "scared" and not hide
    assert view.widgets["pair"].value_selected == "/".join(module.PAGE)
    check_sentence(module, view, out, model, "scared", False)
    view.widgets["adjective"].set_active(module.ADJECTIVES.index("busy"))
    check_sentence(module, view, out, model, "busy", False)
    view.widgets["pair"].set_active(1)  # dog/river, with "busy" still picked
    assert "answers \"river\"" in view.fig.axes[0].get_title()
    words = module.sentence_words(*module.HELD_OUT_PAIRS[1], "busy")
    weights, _ = module.it_attention(model, words)
    assert sentence_shown(view) == [words, words, [f"{w:.2f}" for w in weights]]  # both columns: the new pair
    widths = [line.get_linewidth() for line in view.fig.axes[0].lines]
    assert widths == pytest.approx([0.3 + 8 * w for w in weights], abs=1e-9) and words[1] == "dog"


def test_the_adjective_window_hides_the_adjective_when_the_run_did():
    name = "week1/15_context_decides"
    view, module, out, (model, hide, _) = window(name, "--hide-adjective")
    assert hide and "--hide-adjective" in view.fig._suptitle.get_text()
    check_sentence(module, view, out, model, "tired", True)
    view.widgets["adjective"].set_active(module.ADJECTIVES.index("wide"))
    check_sentence(module, view, out, model, "wide", True)


def test_the_adjective_window_changes_draw_sentences_picture_in_place():
    """The window changes the artists draw_sentence drew, in place: after any choice, they
    are what draw_sentence draws for that sentence on a fresh axes."""
    name = "week1/15_context_decides"
    view, module, _, (model, hide, _) = window(name)
    for pair, adjective in ((3, 7), (3, 0), (0, 11), (5, 2)):
        view.widgets["pair"].set_active(pair)
        view.widgets["adjective"].set_active(adjective)
        words = module.sentence_words(*module.HELD_OUT_PAIRS[pair], module.ADJECTIVES[adjective])
        fresh = plt.figure().add_subplot()
        module.draw_sentence(fresh, words, *module.it_attention(model, words, hide))
        ax = view.fig.axes[0]
        assert [(t.get_text(), t.get_color(), t.get_fontweight(), t.get_position()) for t in ax.texts] == [
            (t.get_text(), t.get_color(), t.get_fontweight(), t.get_position()) for t in fresh.texts]
        assert [(line.get_linewidth(), line.get_alpha(), tuple(line.get_ydata())) for line in ax.lines] == [
            (line.get_linewidth(), line.get_alpha(), tuple(line.get_ydata())) for line in fresh.lines]
        assert ax.get_title() == fresh.get_title()


# ---------------------------------------------------------------- trainings, watched

def test_the_training_window_follows_the_printed_training():
    """main() feeds the window the training as it goes: at the end it shows the printed
    run's losses and the trained model's cross-attention (the printed peaks); a blitted
    redraw shows what matplotlib draws of the figure without blitting."""
    name = "week2/12_train_tiny_transformer"
    module, out, _, _, (window_,) = run_live(name, "--steps", "50")
    step, losses, model = window_.last
    loss_ax, map_ax = window_.view.fig.axes[:2]
    curve = list(loss_ax.lines[0].get_ydata())
    assert step == 50 and curve == losses and loss_ax.get_title().startswith("step 50 of 50")
    first = re.search(r"step 1, before any update: ([\d.]+)", out).group(1)
    late = re.search(r"mean of the last 20 steps, 31-50: ([\d.]+) ", out).group(1)
    assert (f"{curve[0]:.2f}", f"{np.mean(curve[-20:]):.4f}") == (first, late)
    sources, targets, (held_src, held_tgt) = module.training_and_held_out(42, 50, "reverse")
    full = (held_src > module.EOS).sum(1) == module.MAX_LEN
    learned = module.cross_attention_maps(model, held_src[full], held_tgt[full], True).mean(0)
    assert np.array_equal(map_ax.images[0].get_array(), learned.numpy())
    peaks = re.search(r"look most at source positions ([\d ]+)", out).group(1).split()
    assert learned[:module.MAX_LEN].argmax(-1).tolist() == list(map(int, peaks))
    assert np.array_equal(pixels(window_.view.fig), drawn_plainly(window_.view))


def test_the_bottleneck_window_follows_both_printed_trainings():
    name = "week1/09_bottleneck_experiment"
    module, out, _, _, (window_,) = run_live(name, "--steps", "20", "--table")
    loss_ax, table_ax = window_.view.fig.axes[:2]
    drawn = {line.get_label(): list(line.get_ydata()) for line in loss_ax.lines}
    assert [len(losses) for losses in drawn.values()] == [20, 20] and drawn["fixed-context"] != drawn["attention"]
    assert drawn["attention"] == window_.last[3]  # the attention model's own losses
    assert table_ax.get_title() == "its alignment table, step 20"
    rows = re.findall(r"^    writes \d:  ([\d. ]+)$", out, flags=re.M)  # the printed table of the trained model
    assert [" ".join(f"{a:.2f}" for a in row) for row in table_ax.images[0].get_array()] == rows
    assert np.array_equal(pixels(window_.view.fig), drawn_plainly(window_.view))


def test_the_bottleneck_windows_table_says_it_fills_in_when_the_attention_model_trains():
    """The fixed-context model trains first: its redraws leave the attention model's table blank,
    and the table's title says so from the first; the attention model's first redraw fills it."""
    module, _, _, _, (window_,) = run_live("week1/09_bottleneck_experiment", "--steps", "20", "--table")
    view, redraw = module.live_training(20, "all")
    table_ax = view.fig.axes[1]
    redraw("fixed-context", False, 1, [2.3], None)
    assert not table_ax.images[0].get_array().any()
    assert table_ax.get_title().endswith("(blank until it trains, second)")
    redraw("attention", True, 1, [2.3], window_.last[4])
    assert table_ax.images[0].get_array().any() and table_ax.get_title() == "its alignment table, step 1"
    plt.close(view.fig)


def test_watching_a_training_takes_a_bounded_share_of_its_time(monkeypatch):
    """Each redraw is followed by a wait of at least cost / 0.05: with redraws that cost 0.2 s,
    at most one in every 4 s of training."""

    clock = [0.0]
    monkeypatch.setattr(live.time, "monotonic", lambda: clock[0])
    drawn = []

    def redraw(step):  # a redraw that takes 0.2 s
        drawn.append(step)
        clock[0] += 0.2

    window_ = live.TrainingWindow(lambda: (live.View(plt.figure()), redraw))
    for step in range(1, 1001):  # 1000 steps of 0.01 s: 10 s of training
        window_.watch(step, last=step == 1000)
        clock[0] += 0.01
    gaps = np.diff(drawn[1:-1])
    assert drawn[0] == 1 and drawn[-1] == 1000 and (gaps >= 0.2 / 0.05 / 0.01 - 1).all()
    assert 0.2 * len(drawn) <= 0.15 * (10 + 0.2 * len(drawn))  # drawing: under 15% of the wall time


def test_closing_one_window_closes_the_others():
    """show() links every open window: closing one (the final figure, or a training's
    window) closes them all, so one `q` ends the run."""
    training, final = plt.figure(), plt.figure()
    live.close_together([training, final])
    final.canvas.callbacks.process("close_event", None)
    assert not plt.fignum_exists(training.number)


# ---------------------------------------------------------------- the keyboard

def test_the_arrow_keys_move_the_active_slider_one_step():

    from matplotlib.backend_bases import KeyEvent, MouseEvent

    view = window("week2/06_warmup_schedule")[0]
    warmup, d_model = view.widgets["warmup"], view.widgets["d_model"]
    live.arrow_keys(view.fig, [warmup, d_model])
    canvas = view.fig.canvas

    def press(key):
        canvas.callbacks.process("key_press_event", KeyEvent("key_press_event", canvas, key))

    press("right")
    assert (warmup.val, d_model.val) == (4500, 512)  # the first slider is active at first
    x, y = d_model.ax.transAxes.transform((0.5, 0.5))
    canvas.callbacks.process("button_press_event", MouseEvent("button_press_event", canvas, x, y, button=1))
    value = d_model.val  # the click itself may move it
    press("left")
    press("left")
    assert d_model.val == value - 128 and warmup.val == 4500
    assert view.fig.axes[0].get_title().startswith(f"d = {int(d_model.val)}, w = 4500")


# ---------------------------------------------------------------- labels at the extremes

def test_the_sums_stay_clear_of_the_bars_at_every_T():
    """week2/01: the row sums written beside the table never run into the colour scale or the
    bars' panel (its numbers or its "weight" label), at T = 1 as at T = 12; the numbers in
    the cells stay inside their cells."""
    view = window("week2/01_causal_mask")[0]
    grid_ax, row_ax = view.fig.axes[:2]
    scale_ax = grid_ax.images[0].colorbar.ax
    renderer = view.fig.canvas.get_renderer()
    for T in (1, 2, 6, 12):
        view.widgets["T"].set_val(T)
        view.fig.canvas.draw()
        bars_panel, scale = row_ax.get_tightbbox(renderer), scale_ax.get_tightbbox(renderer)
        cell = grid_ax.get_window_extent(renderer).width / T
        for text in grid_ax.texts:
            if text.get_text().startswith("sum "):
                extent = text.get_window_extent(renderer)
                assert not extent.overlaps(bars_panel) and not extent.overlaps(scale), (T, text.get_text())
            elif text.get_text():
                assert text.get_window_extent(renderer).width < cell, (T, text.get_text())
        assert whole(grid_ax, "x") and whole(grid_ax, "y") and whole(row_ax, "x")
