"""--live: every widget drives the lesson's own functions, and what is drawn is what the
lesson computes for that setting (headless, with Agg); a window opens and closes where a
display can be had (Xvfb here); where none can, one line and status 2.

Each drawn value (titles, every bar, every image's array, the histograms) is compared with
the printed line of a run of the lesson at the same setting, or with the lesson's own
function for that setting, so a window that stopped redrawing, or drew something else,
fails."""
import os
import re
import sys

import common.live as live
from common import OUTPUT_ROOT
from common.figures import plt

import numpy as np
import pytest

import run_all
from tests.conftest import SCRATCH, SCRIPTS, lesson_run, load_script
from tests.test_figures import FIGURES

LIVE = [name for name, path in SCRIPTS.items() if "add_live(" in path.read_text(encoding="utf-8")]


@pytest.fixture(autouse=True)
def close_figures():
    from common.figures import plt

    yield
    plt.close("all")


def printed(monkeypatch, capsys, name, *argv):
    """What the lesson prints for these arguments (its main() run in-process, no window)."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS[name]), *argv])
    load_script(name).main()
    return capsys.readouterr().out


def titles(fig):
    return [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]


def test_at_least_ten_lessons_go_live():
    assert len(LIVE) >= 10, LIVE


# Runs a lesson (its path the first argument) without --live, in a fresh interpreter, and
# says whether matplotlib was imported.
LOADS_MATPLOTLIB = SCRATCH / "loads_matplotlib.py"
LOADS_MATPLOTLIB.write_text("""
import contextlib, io, runpy, sys
sys.path.insert(0, %r)
sys.argv = sys.argv[1:]
with contextlib.redirect_stdout(io.StringIO()):
    runpy.run_path(sys.argv[0], run_name="__main__")
print("matplotlib" in sys.modules)
""" % str(run_all.ROOT))
MATPLOTLIB_LOADED = {name: lesson_run(name, SCRIPTS[name], path=LOADS_MATPLOTLIB, fresh=True) for name in
                     ("week1/02_dot_product_variance", "week2/05_label_smoothing", "week2/06_warmup_schedule")}


@pytest.mark.parametrize("name", ["week1/02_dot_product_variance", "week2/05_label_smoothing"])
@pytest.mark.reads(*MATPLOTLIB_LOADED.values())
def test_a_lesson_without_a_figure_loads_no_matplotlib_unless_live(runs, name):
    """matplotlib costs about a second to import; a lesson that draws nothing at its defaults
    imports it only for its window. (week2/06 draws a figure, saved under the check's folder: it does.)"""
    results = [runs[MATPLOTLIB_LOADED[lesson]] for lesson in (name, "week2/06_warmup_schedule")]
    assert [run.stdout.split()[-1] for run in results] == ["False", "True"], [run.stderr[-500:] for run in results]


# ---------------------------------------------------------------- week1/02: the d_k slider

MANY_PAIRS = [lesson_run("week1/02_dot_product_variance", "--pairs", "100000", *extra) for extra in ((), ("--live",))]


@pytest.mark.reads(*MANY_PAIRS)
def test_the_d_k_window_counts_its_own_widths_in_the_size_limit(runs):
    """The window computes every width of its slider (up to 1024) for --pairs pairs: a size
    the printed run alone could afford (--d-k up to 256) is refused with --live."""
    alone, live = map(runs.__getitem__, MANY_PAIRS)
    assert alone.returncode == 0 and "--pairs" not in alone.stderr
    assert live.returncode == 2 and live.stderr.strip().endswith("the limit is 32,000,000 (about 256 MB): "
                                                                 "lower one of --pairs")


def test_dot_product_variance_slider_draws_the_printed_variances(monkeypatch, capsys):
    name = "week1/02_dot_product_variance"
    module = load_script(name)
    view = module.live_view(42, 2_000)
    slider = view.widgets["d_k"]
    for j, d_k in ((6, 64), (2, 4), (10, 1024)):
        slider.set_val(j)
        line = printed(monkeypatch, capsys, name, "--d-k", str(d_k), "--pairs", "2000").splitlines()[1]
        var, scaled = re.search(r"Var\(q\.k\)=\s*([\d.]+) .* scaled_var=([\d.]+)", line).groups()
        raw_title, scaled_title = (ax.get_title() for ax in view.fig.axes[:2])
        assert raw_title == f"raw q.k: Var = {float(var):.2f}"
        assert float(scaled_title.split("= ")[1]) == pytest.approx(float(scaled), abs=0.006)
        assert slider.valtext.get_text() == str(d_k)
        dots = module.dot_products(np.random.default_rng(42), 2_000, d_k)  # as the view draws that width
        for ax, values in zip(view.fig.axes[:2], (dots, dots / np.sqrt(d_k)), strict=True):
            counts, edges, _ = ax.patches[0].get_data()
            assert counts.tolist() == np.histogram(values, bins=edges)[0].tolist()


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

UNTRAINED_FIGURES = set(FIGURES.values())  # drawn from fixed numbers: the same bytes on one machine


# Runs the lesson (its path the first argument) with --live, closing its windows one second
# after show() opens them.
CLOSE_SOON = SCRATCH / "close_soon.py"
CLOSE_SOON.write_text(f"""
import runpy, sys
sys.path.insert(0, {str(run_all.ROOT)!r})
import common.live as live
from common.figures import plt
show = live.show

def show_briefly(build, *args):
    def build_and_close_soon():
        view = build(*args)
        timer = view.fig.canvas.new_timer(interval=1000)
        timer.add_callback(plt.close, "all")  # a training has its own window too
        timer.start()
        return view
    show(build_and_close_soon)

live.show = show_briefly
sys.argv = [sys.argv[1], "--live"]
runpy.run_path(sys.argv[0], run_name="__main__")
""")
WINDOW_FOLDERS = {name: SCRATCH / "windows" / name for name in LIVE}
WINDOWS = {}
for name, folder in WINDOW_FOLDERS.items():
    folder.mkdir(parents=True)
    # a real window (on this session's display, or on Xvfb), figures saved as the check saves them,
    # under a scratch folder
    WINDOWS[name] = lesson_run(name, SCRIPTS[name], path=CLOSE_SOON, window=True, cwd=folder,
                               env={OUTPUT_ROOT: str(folder)})


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.reads(WINDOWS[name])) for name in LIVE])
def test_the_window_opens_after_the_printed_lines_and_closing_it_ends_the_run(runs, name, outputs):
    """The printed lines are those of the run without --live; then the window; closing it
    ends the script with status 0."""
    result = runs[WINDOWS[name]]
    assert result.returncode == 0, result.stderr[-2000:]
    assert run_all.outputs_match(outputs[name].stdout, result.stdout)
    # The figure it saved is the one the run without --live saves, byte for byte (the
    # window's larger text stays in the window). Trained models' figures may differ by a
    # pixel with the thread count, so those are left to their own tests.
    for png in WINDOW_FOLDERS[name].rglob("*.png"):
        relative = png.relative_to(WINDOW_FOLDERS[name])
        if relative.as_posix() in UNTRAINED_FIGURES:
            assert png.read_bytes() == (run_all.check_folder() / relative).read_bytes(), relative


# ---------------------------------------------------------------- week1/07: click the stages

def test_one_block_stage_slider_draws_each_printed_sat_row(monkeypatch, capsys):
    name = "week1/07_eli5_one_block"
    out = printed(monkeypatch, capsys, name)
    rows = [line.split("] ", 1)[1].strip() for line in out.splitlines() if line.startswith("  ") and "[3 x " in line]
    module = load_script(name)
    view = module.live_view(4, 1, 16, 42)
    x, block, _ = module.build(4, 1, 16, 42)
    with module.torch.no_grad():
        grids = list(module.stages(block, x).values())
    assert len(rows) == 8
    for i, row in enumerate(rows):
        view.widgets["stage"].set_val(i)
        title = view.fig.axes[0].get_title().splitlines()
        assert title[1] == f"'sat' row: {row}"
        made_from = module.MADE_FROM.get(list(module.stages(block, x))[i], [])
        assert title[2:] == [f"from {part}: {rows[list(module.stages(block, x)).index(part)]}" for part in made_from]
        assert len(made_from) == (0 if i == 0 else 2 if i in (3, 7) else 1)  # the residual stages add two
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), grids[i][0].numpy())


# ---------------------------------------------------------------- week1/11: saturation

def test_saturation_slider_draws_the_printed_means(monkeypatch, capsys):
    name = "week1/11_softmax_saturation"
    module = load_script(name)
    view = module.live_view(42, 32, 16)
    for j, d_k in ((2, 4), (8, 256), (9, 512)):
        view.widgets["d_k"].set_val(j)
        out = printed(monkeypatch, capsys, name, "--d-k", str(d_k), "1024", "--sentences", "32",
                      "--figure", os.devnull + ".png" if os.name != "nt" else "NUL.png")
        row = next(line for line in out.splitlines() if line.strip().startswith(f"{d_k} |"))
        numbers = re.findall(r"\d\.\d{3}", row)
        assert view.fig.axes[1].get_title().endswith(
            f"unscaled {numbers[0]}, {numbers[1]}; scaled {numbers[2]}, {numbers[3]}")
        heights = [bar.get_height() for bar in view.fig.axes[1].patches]
        assert [f"{h:.3f}" for h in heights] == numbers
        Q, K = module.queries_and_keys(np.random.default_rng(42), 32, 16, d_k)
        one_query = [module.torch.softmax(module.scores(Q, K, scaled)[0, 0], -1).tolist() for scaled in (False, True)]
        assert [bar.get_height() for bar in view.fig.axes[0].patches] == one_query[0] + one_query[1]


# ---------------------------------------------------------------- week2/01: the causal mask

def test_causal_mask_sliders_draw_the_printed_rows(monkeypatch, capsys):
    """One slider moved at a time (as a learner drags them), and after each move everything
    drawn is checked: the grid, the chosen row's bars, its title and its box."""
    name = "week2/01_causal_mask"
    module = load_script(name)
    view = module.live_view(3)
    runs = {T: printed(monkeypatch, capsys, name, "--seed", "3", "--seq-len", str(T)) for T in (4, 6, 9, 10)}
    for slider, value in (("row", 2), ("T", 9), ("row", 9), ("T", 4), ("row", 12), ("T", 10), ("T", 6)):
        view.widgets[slider].set_val(value)
        T, i = int(view.widgets["T"].val), int(view.widgets["row"].val)
        out = runs[T]
        row = min(i, T)
        box = next(p for p in view.fig.axes[0].patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0))
        assert box.get_y() == row - 1.5 and box.get_width() == T  # the red box on the chosen row
        line = next(line for line in out.splitlines() if line.startswith(f"row {row}: "))
        drawn = [bar.get_height() for bar in view.fig.axes[1].patches]
        assert line.startswith(f"row {row}: [{', '.join(f'{w:.4f}' for w in drawn)}]; sum=")
        assert view.fig.axes[1].get_title() == (f"row {row}: {row} visible word{'s' * (row > 1)}; "
                                                f"sum = {line.split('sum=')[1]}")
        mask = module.causal_mask(T)
        weights = module.masked_weights(np.random.default_rng(3).standard_normal((T, T)), mask)
        drawn = view.fig.axes[0].images[0].get_array()
        assert np.array_equal(drawn.mask, mask == 1) and np.array_equal(drawn.data[mask == 0], weights[mask == 0])


# ---------------------------------------------------------------- week2/03: positions

def test_positional_encoding_sliders_draw_the_printed_tags(monkeypatch, capsys):
    name = "week2/03_sinusoidal_pe"
    module = load_script(name)
    view = module.live_view()
    out = printed(monkeypatch, capsys, name)
    hand_check = re.search(r"PE\(1\)=(\[[^\]]+\])", out).group(1)
    view.widgets["d_model"].set_val(4)
    view.widgets["position"].set_val(1)
    assert "[" + ", ".join(f"{b.get_height():.4f}" for b in view.fig.axes[1].patches) + "]" == hand_check
    for slider, value in (("position", 7), ("d_model", 16), ("position", 49), ("d_model", 64), ("d_model", 2),
                          ("position", 0)):  # one slider at a time, everything drawn checked after each
        view.widgets[slider].set_val(value)
        p, d = int(view.widgets["position"].val), int(view.widgets["d_model"].val)
        box = view.fig.axes[0].patches[0]
        assert box.get_y() == p - 0.5 and box.get_width() == d  # the box on row p of the table
        drawn = [b.get_height() for b in view.fig.axes[1].patches]
        torch_form = module.torch_pe(50, d)[p].tolist()  # the lesson's independent torch form
        assert drawn == pytest.approx(torch_form, abs=1e-5)
        assert view.fig.axes[1].get_title() == f"PE({p}): squared length {d / 2:.4f} = d/2 = {d / 2:g}"
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), module.sinusoidal_pe(50, d))


# ---------------------------------------------------------------- week2/05: label smoothing

def test_label_smoothing_slider_draws_the_printed_target_and_losses(monkeypatch, capsys):
    name = "week2/05_label_smoothing"
    module = load_script(name)
    view = module.live_view([0.6, 0.1, 1.8, 0.5], 2)
    for epsilon in ("0.1", "0.3", "0"):
        view.widgets["epsilon"].set_val(float(epsilon))
        out = printed(monkeypatch, capsys, name, "--epsilon", epsilon)
        target = re.search(r"^target=\[([^\]]+)\]", out, flags=re.M).group(1).split(", ")
        hand, by_torch = re.search(r"hand-built loss=([\d.]+); torch label_smoothing=\S+ loss=([\d.]+)", out).groups()
        target_ax, loss_ax = view.fig.axes[:2]
        assert [f"{bar.get_height():.3f}" for bar in target_ax.patches[:4]] == target
        z = module.torch.tensor([0.6, 0.1, 1.8, 0.5])
        assert [bar.get_height() for bar in target_ax.patches[4:]] == module.torch.softmax(z, -1).tolist()
        assert loss_ax.get_title() == f"loss: by hand {hand}\ntorch {by_torch}"
        assert target_ax.get_title() == f"q = {target[2]} on gold, {target[0]} on each other"  # read off q
        assert [f"{bar.get_height():.8f}" for bar in loss_ax.patches[:2]] == [hand, by_torch]


# ---------------------------------------------------------------- week2/06: the warm-up schedule

def test_warmup_sliders_draw_the_printed_peak(monkeypatch, capsys):
    name = "week2/06_warmup_schedule"
    module = load_script(name)
    view = module.live_view()
    for slider, value in (("warmup", 2000), ("d_model", 256), ("warmup", 7500), ("d_model", 64), ("warmup", 4000),
                          ("d_model", 512)):  # one slider at a time, everything drawn checked after each
        view.widgets[slider].set_val(value)
        w, d = int(view.widgets["warmup"].val), int(view.widgets["d_model"].val)
        out = printed(monkeypatch, capsys, name, "--warmup", str(w), "--d-model", str(d), "--steps", str(w),
                      "--figure", str(run_all.ROOT / "build" / "live_test.png"))
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

def test_head_picker_draws_each_printed_head_and_the_blend(monkeypatch, capsys):
    name = "week2/10_eli5_causal_self_attention"
    module = load_script(name)
    view = module.live_view(6, 8, 4, 42)
    out = printed(monkeypatch, capsys, name, "--seq", "6", "--heads", "4")
    for i in range(1, 5):
        view.widgets["head"].set_val(i)
        last_row = re.search(rf"^head {i}: .* last row=\[([^\]]+)\]", out, flags=re.M).group(1)
        at_2_decimals = ", ".join(f"{float(w):.2f}" for w in last_row.split(", "))
        assert view.fig.axes[0].get_title() == f"head {i}: last row=[{at_2_decimals}]"
        bars = view.fig.axes[1].patches
        alone = [bar.get_height() for bar in bars[8:]]
        blended = [bar.get_height() for bar in bars[:8]]
        assert alone != blended
        drawn = view.fig.axes[0].images[0].get_array()
        _, q, k, v, mask = module.snippet(6, 8, 42)[:5]
        W_O = module.nn.Linear(8, 8)  # drawn right after the snippet, as the view draws it
        concat = module.split_into_heads(q, k, v, 4, mask)[-1]
        assert alone == module.head_alone(W_O, concat, i - 1, 4)[-1].tolist()  # this head's, not another's
        head_weights = module.split_into_heads(q, k, v, 4, mask)[3][i - 1].detach().numpy()
        future = np.triu(np.ones((6, 6), dtype=bool), 1)
        drawn = np.ma.masked_invalid(drawn)  # the blocked cells are not drawn
        assert np.array_equal(np.ma.getmaskarray(drawn), future) and np.array_equal(drawn.data[~future],
                                                                                   head_weights[~future])
    # The four heads alone add up to the blend, plus the bias counted three times too many.
    heads_alone = []
    for i in range(1, 5):
        view.widgets["head"].set_val(i)
        heads_alone.append([bar.get_height() for bar in view.fig.axes[1].patches[8:]])
    _, q, k, v, mask, _, _, _ = module.snippet(6, 8, 42)
    concat = module.split_into_heads(q, k, v, 4, mask)[-1]
    W_O = module.nn.Linear(8, 8)  # drawn right after the snippet, as the view draws it
    total = [sum(column) - 3 * b for column, b in zip(zip(*heads_alone, strict=True), W_O.bias.tolist(), strict=True)]
    assert total == pytest.approx(W_O(concat)[-1].tolist(), abs=1e-5)


# ---------------------------------------------------------------- week1/16: pick a head

def test_head_picker_shows_each_printed_role_and_knock_out(monkeypatch, capsys):
    name = "week1/16_heads_take_roles"
    module = load_script(name)
    out = printed(monkeypatch, capsys, name, "--figure", str(run_all.ROOT / "build" / "live_test.png"))
    stream, held = module.training_and_held_out(42, module.STEPS)
    model = module.train(42, 2, "both", stream)
    m = module.measure(model, held, 2)
    view = module.live_view(model, held, 2, m)
    for h in (1, 2):
        view.widgets["head"].set_val(h)
        role = re.search(rf"^  head {h}: .*: (it looks at .*|no single role)$", out, flags=re.M).group(1)
        assert view.fig.axes[0].get_title() == f"head {h}: {role.removeprefix('it ')}"
        knocked = re.search(rf"^  head {h} knocked out +(\S+ \S+) +(\S+ \S+)$", out, flags=re.M).groups()
        a, b = (bar.get_height() for bar in view.fig.axes[1].patches[2:4])
        assert (module.band(a), module.band(b)) == knocked
        own = dict(m["knocked"])[(h - 1,)]
        assert (a, b) == (own["a"], own["b"])  # this head's own knock-out, not another's
    for slider, value in (("sentence", 5), ("head", 1), ("sentence", 9), ("head", 2), ("sentence", 1)):
        view.widgets[slider].set_val(value)  # one slider at a time
        h, k = int(view.widgets["head"].val), int(view.widgets["sentence"].val)
        sentence = held[k - 1][held[k - 1] != module.PAD]
        maps = module.attention_maps(model, sentence, 2)
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), maps[h - 1])


# ---------------------------------------------------------------- week1/15: pick the adjective

def test_adjective_picker_moves_where_it_looks_as_the_printed_run_says(monkeypatch, capsys):
    name = "week1/15_context_decides"
    module = load_script(name)
    model = module.train(42, module.make_data(42, module.STEPS))
    view = module.live_view(model)
    out = printed(monkeypatch, capsys, name, "--adjectives", "scared", "busy",
                  "--figure", str(run_all.ROOT / "build" / "live_test.png"))
    for adjective in ("scared", "busy"):
        view.widgets["adjective"].set_active(module.ADJECTIVES.index(adjective))
        line = next(line for line in out.splitlines() if line.startswith(f"  {adjective} -> it leans on "))
        noun, answer = re.search(r"leans on (\w+) .* answers \"(\w+)\"", line).groups()
        assert view.fig.axes[0].get_title().endswith(f"looks hardest at {noun}; the model answers \"{answer}\"")
        words = module.sentence_words("chicken", "road", adjective)
        weights, _ = module.it_attention(model, words)
        drawn = [text.get_text() for text in view.fig.axes[0].texts if text.get_position()[0] == 1.85]
        assert drawn == [f"{w:.2f}" for w in weights]  # the weight written beside each word
        widths = [line.get_linewidth() for line in view.fig.axes[0].lines]  # 0.3 + 8 x the weight, exactly
        assert widths == pytest.approx([0.3 + 8 * w for w in weights], abs=1e-9)
    view.widgets["pair"].set_active(1)  # dog/river, with "busy" still picked
    assert "answers \"river\"" in view.fig.axes[0].get_title()
    words = module.sentence_words(*module.HELD_OUT_PAIRS[1], "busy")
    weights, _ = module.it_attention(model, words)
    widths = [line.get_linewidth() for line in view.fig.axes[0].lines]
    assert widths == pytest.approx([0.3 + 8 * w for w in weights], abs=1e-9) and words[1] == "dog"


# ---------------------------------------------------------------- trainings, watched

def test_the_training_window_draws_every_loss_and_the_attention_learned_so_far():
    module = load_script("week2/12_train_tiny_transformer")
    sources, targets, (held_src, held_tgt) = module.training_and_held_out(42, 60, "reverse")
    window = live.TrainingWindow(module.live_training, 60, held_src, held_tgt, True)
    model, losses = module.train(42, sources, targets, True,
                                 lambda step, losses, model: window.watch(step, losses, model, last=step == 60))
    loss_ax, map_ax = window.view.fig.axes[:2]
    assert list(loss_ax.lines[0].get_ydata()) == losses and loss_ax.get_title().startswith("step 60 of 60")
    full = (held_src > module.EOS).sum(1) == module.MAX_LEN
    learned = module.cross_attention_maps(model, held_src[full], held_tgt[full], True)[:, :7, :7].mean(0)
    assert np.array_equal(map_ax.images[0].get_array(), learned.numpy())


def test_watching_a_training_takes_a_bounded_share_of_its_time(monkeypatch):
    """Each redraw is followed by a wait of at least cost / 0.05: with redraws that cost 0.2 s,
    at most one in every 4 s of training."""

    clock = [0.0]
    monkeypatch.setattr(live.time, "monotonic", lambda: clock[0])
    drawn = []

    def redraw(step):  # a redraw that takes 0.2 s
        drawn.append(step)
        clock[0] += 0.2

    window = live.TrainingWindow(lambda: (live.View(plt.figure()), redraw))
    for step in range(1, 1001):  # 1000 steps of 0.01 s: 10 s of training
        window.watch(step, last=step == 1000)
        clock[0] += 0.01
    gaps = np.diff(drawn[1:-1])
    assert drawn[0] == 1 and drawn[-1] == 1000 and (gaps >= 0.2 / 0.05 / 0.01 - 1).all()
    assert 0.2 * len(drawn) <= 0.15 * (10 + 0.2 * len(drawn))  # drawing: under 15% of the wall time


def test_the_bottleneck_window_follows_both_trainings():
    module = load_script("week1/09_bottleneck_experiment")
    window = live.TrainingWindow(module.live_training, 20, "all")
    train, losses = module.train, []
    module.train = lambda *args, **kwargs: losses.append(train(*args, **kwargs)) or losses[-1]
    try:
        accuracy, _, _, example_alpha = module.experiment(8, 8, 20, 42, window=window)
    finally:
        module.train = train
    loss_ax, table_ax = window.view.fig.axes[:2]
    drawn = {line.get_label(): list(line.get_ydata()) for line in loss_ax.lines}
    assert drawn == {"fixed-context": losses[0], "attention": losses[1]} and losses[0] != losses[1]
    assert table_ax.get_title() == "its alignment table, step 20"
    assert np.array_equal(table_ax.images[0].get_array(), example_alpha)  # the trained model's own table


def test_the_arrow_keys_move_the_active_slider_one_step():

    from matplotlib.backend_bases import KeyEvent, MouseEvent

    view = load_script("week2/06_warmup_schedule").live_view()
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
