"""Every live view at every flag: what the view shows equals what the run prints, at every
setting a learner can give it, not only at the defaults.

A rule, not a list of cases: for each lesson with --live, the settings tried are each of its
Try it lines and, for each flag those leave at its default, one other value of it (the other
choice, the flag set, the low end of its range); a training's are run shorter (its --steps
is a flag like the others). Each lesson has one reader below: it holds the view as it opens
(a training's: as its training ends) to the printed lines of the same run, and where the
printed lines give no number, to the lesson's own functions called with the flags as parsed
here (never with what main() handed the view). So a view that drew as if a flag were off,
or ignored one, fails at that flag."""
import re

import common.live as live
from common.figures import plt

import numpy as np
import pytest

from tests.conftest import LESSONS, SCRATCH, SCRIPTS, TRY_ITS
from tests.drawing import run_live
from tests.test_live import causal_grid, check_sentence, red_boxes, role_boxes, sentence_shown

LIVE = [name for name in SCRIPTS if LESSONS[name].live]
# A training's view at a shorter training: what it shows does not depend on how long it trained.
SHORTER = {"week1/09_bottleneck_experiment": ("--steps", "20"), "week1/15_context_decides": ("--steps", "10"),
           "week1/16_heads_take_roles": ("--steps", "20"), "week2/12_train_tiny_transformer": ("--steps", "50")}
# Flags that change only what is printed, given so that the reader has the lines to read.
PRINTED = {"week1/09_bottleneck_experiment": ("--table",)}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def flag_of(knob):
    return knob.flags[-1]


def other_values(knob):
    """Values of the knob other than its default, to try in turn: the other choices, the flag
    set, the low end of its range and its high end."""
    options = knob.options
    if options.get("action") == "store_true":
        return [[]]
    count = options.get("nargs") or 1
    count = count if isinstance(count, int) else 1
    default = options.get("default")
    if options.get("choices"):
        defaults = default if isinstance(default, list) else [default]
        return [[str(c)] * count for c in options["choices"] if c not in defaults]
    kind = options["type"]
    return [[str(end)] * count for end in (kind.lo, kind.hi) if [end] * count != default and end != default]


def sets(argv, knob):
    return any(word in knob.flags for word in argv)


def settings(name):
    """The settings a lesson's view is tried at: its Try it lines, and one other value of each
    flag they leave alone (but those that change only what is printed, and --figure)."""
    lesson = LESSONS[name]
    cases = [list(run.argv) for run in TRY_ITS[name] if runs(name, run.argv)]  # (those a window can show)
    for knob in lesson.knobs:
        if knob.options.get("dest", flag_of(knob)[2:].replace("-", "_")) in lesson.print_only:
            continue
        if not any(sets(argv, knob) for argv in cases):  # the first other value the lesson accepts
            cases.append(next(argv for value in other_values(knob) if runs(name, argv := [flag_of(knob), *value])))
    tried = []
    for argv in [[], *cases]:  # the defaults too
        if "--figure" in argv:  # a figure goes under the scratch folder, never into the repo
            at = argv.index("--figure")
            argv = argv[:at] + ["--figure", str(SCRATCH / "every_flag" / argv[at + 1])] + argv[at + 2:]
        if "--steps" not in argv:
            argv = [*argv, *SHORTER.get(name, ())]
        tried.append((*argv, *(flag for flag in PRINTED.get(name, ()) if flag not in argv)))
    return list(dict.fromkeys(tried))  # each once


def parsed(name, argv):
    """The flags as the lesson's parser reads them: what the view must show is computed from these."""
    return LESSONS[name].parser().parse_args(list(argv))


def runs(name, argv):
    """The lesson accepts these flags with --live (its joint limits too)."""
    limits = LESSONS[name].limits
    return not (limits and limits(parsed(name, [*argv, "--live"])))


pytestmark = pytest.mark.filterwarnings("error")  # a view that warns is a fault, as a run that warns is
CASES = [(name, argv) for name in LIVE for argv in settings(name)]


# ---------------------------------------------------------------- each view's reader

def slider_values(slider):
    """The values a slider lets a learner choose, in order."""
    step = slider.valstep
    return sorted(step) if np.iterable(step) else list(np.arange(slider.valmin, slider.valmax + step / 2, step))


def week1_02(view, module, out, a, windows):
    rows = re.findall(r"d_k=\s*(\d+) Var\(q\.k\)=\s*([\d.]+) target=\s*\d+ scaled_var=([\d.]+)", out)
    assert [int(d_k) for d_k, _, _ in rows] == a.d_k
    slider = view.widgets["d_k"]
    assert slider.valtext.get_text() == str(a.d_k[-1])  # it opens at the last width printed
    widths = live.allowed(module.WIDTHS, *a.d_k)
    assert slider_values(slider) == list(range(len(widths)))  # one notch per width: WIDTHS and the printed ones
    rng = np.random.default_rng(a.seed)
    for d_k, var, scaled in rows:
        dots = module.dot_products(rng, a.pairs, int(d_k))  # the printed run's draws, in its order
        slider.set_val(widths.index(int(d_k)))
        raw_title, scaled_title = (ax.get_title() for ax in view.fig.axes[:2])
        assert raw_title == f"raw q.k: Var = {var}"
        assert float(scaled_title.split("= ")[1]) == pytest.approx(float(scaled), abs=0.006)
        counts, edges, _ = view.fig.axes[0].patches[0].get_data()
        assert counts.tolist() == np.histogram(dots, bins=edges)[0].tolist()


def week1_07(view, module, out, a, windows):
    rows = [line.split("] ", 1)[1].strip() for line in out.splitlines() if line.startswith("  ") and "[3 x " in line]
    x, block, _ = module.build(a.d_model, a.heads, a.d_ff, a.seed)
    with module.torch.no_grad():
        grids = list(module.stages(block, x).values())
    assert len(rows) == len(grids) == view.widgets["stage"].valmax + 1
    for i, grid in enumerate(grids):
        view.widgets["stage"].set_val(i)
        assert view.fig.axes[0].get_title().splitlines()[1] == f"'sat' row: {rows[i]}"
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), grid[0].numpy())


def week1_09(view, module, out, a, windows):
    (window,) = windows
    loss_ax, table_ax = window.view.fig.axes[:2]
    drawn = {line.get_label(): list(line.get_ydata()) for line in loss_ax.lines}
    batches = module.training_and_test_rows(a.seed, a.max_len, a.steps)[0]
    for name, attention in module.MODELS:  # each training again, without a window (no line prints its losses)
        alone = module.train(module.build(a.hidden, a.seed, attention), batches, a.look_back)
        assert len(alone) == a.steps and drawn[name] == alone, f"the {name} curve is not its training's losses"
    assert table_ax.get_title() == f"its alignment table, step {a.steps}"
    rows = re.findall(r"^    writes \d:  ([\d. ]+)$", out, flags=re.M)  # the printed table of the trained model
    assert [" ".join(f"{x:.2f}" for x in row) for row in table_ax.images[0].get_array()] == rows


def week1_11(view, module, out, a, windows):
    slider = view.widgets["d_k"]
    widths = live.allowed(module.LIVE_WIDTHS, *a.d_k)
    assert slider_values(slider) == list(range(len(widths)))  # one notch per width: LIVE_WIDTHS and the printed ones
    widest = max(a.d_k)
    assert slider.valtext.get_text() == str(widest)
    rng = np.random.default_rng(a.seed)
    drawn = {d_k: module.queries_and_keys(rng, a.sentences, a.tokens, d_k) for d_k in a.d_k}  # the run's draws
    for d_k in a.d_k:
        slider.set_val(widths.index(d_k))
        numbers = re.findall(r"\d\.\d{3}", next(line for line in out.splitlines()
                                                if line.strip().startswith(f"{d_k} |")))
        heights = [bar.get_height() for bar in view.fig.axes[1].patches]
        assert [f"{h:.3f}" for h in heights] == numbers[:4]
        Q, K = drawn[d_k]
        one_query = [module.torch.softmax(module.scores(Q, K, scaled)[0, 0], -1).tolist() for scaled in (False, True)]
        assert [bar.get_height() for bar in view.fig.axes[0].patches] == one_query[0] + one_query[1]


def week1_15(view, module, out, a, windows):
    first, second = a.adjectives
    assert view.widgets["adjective"].value_selected == first
    assert view.widgets["pair"].value_selected == "/".join(module.PAGE)
    assert ("--hide-adjective" in view.fig._suptitle.get_text()) == a.hide_adjective
    model = view_model(view)
    check_sentence(module, view, out, model, first, a.hide_adjective)
    view.widgets["adjective"].set_active(module.ADJECTIVES.index(second))
    check_sentence(module, view, out, model, second, a.hide_adjective)
    for pair in range(len(module.HELD_OUT_PAIRS)):  # the other held-out pairs, with the second adjective
        view.widgets["pair"].set_active(pair)
        words = module.sentence_words(*module.HELD_OUT_PAIRS[pair], second)
        weights, answer = module.it_attention(model, words, a.hide_adjective)
        assert sentence_shown(view) == [words, words, [f"{w:.2f}" for w in weights]]
        assert view.fig.axes[0].get_title().endswith(f"the model answers \"{answer}\"")


def view_model(view):
    """The trained model a view was built with (its widgets' callbacks hold it)."""
    return VIEW_ARGS[id(view)][0]


def week1_16(view, module, out, a, windows):
    model, held, heads, m, example, trained = VIEW_ARGS[id(view)]
    assert heads == a.heads and trained == module.TASKS[a.task]
    assert slider_values(view.widgets["head"]) == list(range(1, a.heads + 1))
    assert slider_values(view.widgets["sentence"])[0] == 1 and slider_values(view.widgets["sentence"])[-1] >= 50
    row = r"\(a\) (\S+%|not trained)(?: \(.*?\))?, \(b\) (\S+%|not trained)"
    everything = re.search(rf"^  all heads +{row}", out, flags=re.M).groups()
    for h in range(1, a.heads + 1):
        view.widgets["head"].set_val(h)
        role = re.search(rf"^  head {h}: .*:\n    (it looks at .*|no single role)$", out, flags=re.M)
        if role:  # (the printed lines name each head's role where the run has two heads or more)
            assert view.fig.axes[0].get_title() == f"head {h}: {role.group(1).removeprefix('it ')}"
        assert np.array_equal(view.fig.axes[0].images[0].get_array(), module.attention_maps(model, example)[h - 1])
        assert red_boxes(view.fig.axes[0]) == role_boxes(module, example, m["roles"][h - 1])  # where its role says
        knocked = re.search(rf"^  head {h} knocked out +{row}", out, flags=re.M)
        bars = view.fig.axes[1].patches[:4]
        drawn = [f"{bar.get_height():.1%}" if bar.get_visible() else "not trained" for bar in bars]
        assert tuple(drawn[:2]) == everything
        if knocked:
            assert tuple(drawn[2:]) == knocked.groups()
            assert view.fig.axes[1].get_title().startswith(
                f"(a) word before: {knocked.group(1)}, (b) first noun: {knocked.group(2)}\n")
    # A short training finds no roles: the same view, handed each role for some head (the first heads
    # cycling through the word before, the first noun and none), boxes where each role says.
    roles = [("before", "nouns", None)[h % 3] for h in range(a.heads)]
    with live.window_style():
        given = module.live_view(model, held, heads, {**m, "roles": roles}, example, trained)
    sentences = [row[row != module.PAD] for row in held]
    for k in (int(given.widgets["sentence"].val), 1, 7):  # the sentence it opens on, then two others
        given.widgets["sentence"].set_val(k)
        sentence = sentences[int(given.widgets["sentence"].val) - 1]
        for h in range(1, a.heads + 1):
            given.widgets["head"].set_val(h)
            assert red_boxes(given.fig.axes[0]) == role_boxes(module, sentence, roles[h - 1]), (k, h, roles[h - 1])


def week2_01(view, module, out, a, windows):
    T = a.seq_len
    assert view.widgets["T"].val == T and slider_values(view.widgets["T"]) == list(range(1, module.MOST + 1))
    assert slider_values(view.widgets["row"]) == list(range(1, T + 1))  # its end follows T
    mask = module.causal_mask(T)
    weights = module.masked_weights(module.score_table(a.seed)[:T, :T], mask)
    image, cells, _ = causal_grid(view)
    assert np.array_equal(image.mask, mask == 1) and np.array_equal(image.data[mask == 0], weights[mask == 0])
    rows = [line for line in out.splitlines() if re.match(r"row \d+: \[", line)]
    assert len(rows) == T
    for i, line in enumerate(rows, start=1):
        view.widgets["row"].set_val(i)
        drawn = [bar.get_height() for bar in view.fig.axes[1].patches if bar.get_visible()]
        assert line.startswith(f"row {i}: [{', '.join(f'{w:.4f}' for w in drawn)}]; sum=")


def week2_03(view, module, out, a, windows):
    d = a.d_model
    positions = max(module.LIVE_POSITIONS, a.max_len)
    assert view.widgets["d_model"].val == d and view.widgets["position"].valmax == positions - 1
    assert f"in the d={d} table: {d / 2:.6f}..{d / 2:.6f} = d/2 = {d / 2:g}" in out
    for p in sorted({0, 1, a.max_len - 1, *(o for o in a.offset if o < positions)}):
        view.widgets["position"].set_val(p)
        drawn = [b.get_height() for b in view.fig.axes[1].patches if b.get_visible()]
        assert drawn == pytest.approx(module.torch_pe(positions, d)[p].tolist(), abs=1e-5)
        assert view.fig.axes[1].get_title() == f"PE({p}): squared length {d / 2:.4f} = d/2 = {d / 2:g}"


def week2_05(view, module, out, a, windows):
    assert view.widgets["epsilon"].val == pytest.approx(a.epsilon)
    assert slider_values(view.widgets["epsilon"]) == live.allowed([k / 100 for k in range(100)], a.epsilon)
    target = re.search(r"^target=\[([^\]]+)\]", out, flags=re.M).group(1).split(", ")
    hand, by_torch = re.search(r"hand-built loss=([\d.]+); torch label_smoothing=\S+ loss=([\d.]+)", out).groups()
    target_ax, loss_ax = view.fig.axes[:2]
    V = len(a.logits)
    assert [f"{bar.get_height():.3f}" for bar in target_ax.patches[:V]] == target
    z = module.torch.tensor(a.logits)
    assert [bar.get_height() for bar in target_ax.patches[V:2 * V]] == module.torch.softmax(z, -1).tolist()
    assert loss_ax.get_title() == f"loss: by hand {hand}\ntorch {by_torch}"


def week2_06(view, module, out, a, windows):
    d, w = a.d_model[0], a.warmup
    # as live_view's docstring says: w every 500 from 500 to 8000, d every 64 from 64 to 1024, each with the run's own
    assert slider_values(view.widgets["warmup"]) == live.allowed(range(500, 8001, 500), w)
    assert slider_values(view.widgets["d_model"]) == live.allowed(range(64, 1025, 64), d)
    assert (view.widgets["warmup"].val, view.widgets["d_model"].val) == (w, d)
    peak = re.search(rf"peak: d={d} at step (\d+)", out).group(1)
    assert view.fig.axes[0].get_title() == (f"d = {d}, w = {w}: peak at step {peak}, "
                                            f"lr = {module.learning_rate(int(peak), d, w):.10f}")
    curve, dot, dashed = view.fig.axes[0].lines
    assert list(dashed.get_xdata()) == [int(peak)] * 2 and list(dot.get_xdata()) == [int(peak)]
    for slider, value in (("warmup", 500), ("d_model", 64), ("warmup", 8000), ("d_model", 1024), ("warmup", w)):
        view.widgets[slider].set_val(value)
        d_now, w_now = int(view.widgets["d_model"].val), int(view.widgets["warmup"].val)
        at = module.peak_step(d_now, w_now)  # the peak at step w, as the run's check says
        assert at == w_now and view.fig.axes[0].get_title().startswith(f"d = {d_now}, w = {w_now}: peak at step {at},")
        assert list(dashed.get_xdata()) == [at] * 2 and list(dot.get_xdata()) == [at]
        assert list(curve.get_ydata()) == list(module.learning_rate(curve.get_xdata(), d_now, w_now))
    view.widgets["d_model"].set_val(d)
    for step, lrs in re.findall(r"^ *(\d+) +([\d. ]+)$", out, flags=re.M):
        if int(step) in curve.get_xdata():
            at = list(curve.get_xdata()).index(int(step))
            assert f"{curve.get_ydata()[at]:.10f}" == lrs.split()[0]


def week2_10(view, module, out, a, windows):
    _, q, k, v, mask, _, _, _ = module.snippet(a.seq, a.d_model, a.seed)
    weights = module.split_into_heads(q, k, v, a.heads, mask)[3]
    assert view.widgets["head"].valmax == a.heads
    for i in range(1, a.heads + 1):
        view.widgets["head"].set_val(i)
        last_row = re.search(rf"^head {i}: .*\n  last row=\[([^\]]+)\]", out, flags=re.M).group(1).split(", ")
        assert view.fig.axes[0].get_title() == (f"head {i}, the last row's weights:\n"
                                                f"[{', '.join(f'{float(w):.2f}' for w in last_row)}]")
        drawn = np.ma.masked_invalid(view.fig.axes[0].images[0].get_array())
        seen = ~np.triu(np.ones((a.seq, a.seq), dtype=bool), 1)
        assert np.array_equal(drawn.data[seen], weights[i - 1].detach().numpy()[seen])


def week2_12(view, module, out, a, windows):
    (window,) = windows
    step, losses, model = window.last
    loss_ax, map_ax = window.view.fig.axes[:2]
    curve = list(loss_ax.lines[0].get_ydata())
    assert step == a.steps and curve == losses
    assert loss_ax.get_title() == f"step {a.steps} of {a.steps}: loss {curve[-1]:.2f}"  # the last step's loss
    first = re.search(r"step 1, before any update: ([\d.]+)", out).group(1)
    late = re.search(rf"mean of the last 20 steps, {a.steps - 19}-{a.steps}: ([\d.]+) ", out).group(1)
    assert (f"{curve[0]:.2f}", f"{np.mean(curve[-20:]):.4f}") == (first, late)  # the printed losses
    _, _, (held_src, held_tgt) = module.training_and_held_out(a.seed, a.steps, a.task)
    full = (held_src > module.EOS).sum(1) == module.MAX_LEN
    learned = module.cross_attention_maps(model, held_src[full], held_tgt[full], not a.no_mask).mean(0)
    assert np.array_equal(map_ax.images[0].get_array(), learned.numpy())
    peaks = re.search(r"look most at source positions ([\d ]+)", out).group(1).split()
    assert learned[:module.MAX_LEN].argmax(-1).tolist() == list(map(int, peaks))


READERS = {"week1/02_dot_product_variance": week1_02, "week1/07_eli5_one_block": week1_07,
           "week1/09_bottleneck_experiment": week1_09, "week1/11_softmax_saturation": week1_11,
           "week1/15_context_decides": week1_15, "week1/16_heads_take_roles": week1_16,
           "week2/01_causal_mask": week2_01, "week2/03_sinusoidal_pe": week2_03, "week2/05_label_smoothing": week2_05,
           "week2/06_warmup_schedule": week2_06, "week2/10_eli5_causal_self_attention": week2_10,
           "week2/12_train_tiny_transformer": week2_12}
VIEW_ARGS = {}  # id(view) -> what main() handed the view (a trained model the printed lines were made with)


def test_every_live_lesson_has_a_reader_and_every_flag_is_tried():
    """The rule covers every view and every flag: a new live lesson needs a reader, and every
    flag of every live lesson (but those that change only what is printed) is set away from its
    default in some setting tried, as is every Try it line."""
    assert set(READERS) == set(LIVE)
    for name in LIVE:
        lesson, tried = LESSONS[name], settings(name)
        for knob in lesson.knobs:
            dest = flag_of(knob)[2:].replace("-", "_")
            if dest not in lesson.print_only:
                assert any(getattr(parsed(name, argv), dest) != LESSONS[name].parser().get_default(dest)
                           for argv in tried), f"{name}: {flag_of(knob)} is never tried with its view"
        for run in (run for run in TRY_ITS[name] if runs(name, run.argv)):
            assert any(set(run.argv) - {"--figure"} <= set(argv) | {run.argv[run.argv.index("--figure") + 1]
                                                                     if "--figure" in run.argv else ""}
                       for argv in tried), f"{name}: the Try it line {' '.join(run.argv)} is not tried"


@pytest.mark.parametrize("name, argv", CASES, ids=[f"{name} {' '.join(argv)}" for name, argv in CASES])
def test_the_view_shows_what_the_run_prints_at_this_setting(name, argv):
    module, out, build, args, windows = run_live.__wrapped__(name, *argv)  # (not the cached run the others read)
    with live.window_style():
        view = build(*args)
    for slider in (widget for widget in view.widgets.values() if hasattr(widget, "valmin")):
        values = slider_values(slider)  # its ends and where it opens: values a learner can choose
        assert values[0] == slider.valmin and values[-1] == slider.valmax and slider.val in values, slider.label
    VIEW_ARGS[id(view)] = args
    READERS[name](view, module, out, parsed(name, argv), windows)
