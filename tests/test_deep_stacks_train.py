"""week2/18_deep_stacks_train: its stacks compute the page's formulas wired four ways, all from
one start (the doubled ones times two), its torch.optim.SGD step is the page's W <- W - lr dL/dW,
its held-out points are never trained on, every threshold of its verdicts is pinned by a value
on each side, each verdict turns when the shortcut wire or LayerNorm is taken out of the stacks that
claim it, and its depth knob turns the verdicts its Try-it lines say (its default output is the
same bytes under the kernel settings of tests/test_portability.py)."""
import math

from common.cli import SEED
from common.records import CONTRADICTS, UPHOLDS, collected, measured

import pytest
import torch
import torch.nn as nn

from check import comparing
from tests.conftest import lesson_run, load_script
from tests.conftest import main_outcomes as run_main

NAME = "week2/18_deep_stacks_train"
DEFAULT = lesson_run(NAME)
SHALLOW = lesson_run(NAME, "--depth", "2")
DEEPER = lesson_run(NAME, "--depth", "24")
VERDICTS = ["shortcuts help a deep stack train", "normalization helps a deep stack train"]


@pytest.fixture(scope="module")
def ds():
    return load_script(NAME)


def directions(ds, seed=42):
    return torch.nn.functional.normalize(torch.randn(ds.D, ds.OUTPUTS, generator=torch.Generator().manual_seed(
        seed + 2), dtype=torch.float64), dim=0)


# ---------------------------------------------------------------- the pieces against the page's formulas

def by_hand(stack, x):
    """The stack's numbers at the top, from its weights by the page's formulas: F(x) = W_2
    relu(W_1 x + b_1) + b_2; x + F(x) where it has the shortcut; LN(y) = gamma (y - mean) /
    sqrt(variance + eps) + beta over each point's d numbers where it has LayerNorm."""
    for sublayer, LN in zip(stack.sublayers, stack.norms, strict=True):
        W_1, b_1, W_2, b_2 = sublayer[0].weight, sublayer[0].bias, sublayer[2].weight, sublayer[2].bias
        y = torch.relu(x @ W_1.T + b_1) @ W_2.T + b_2
        y = x + y if stack.shortcut else y
        if stack.norm:
            mean, variance = y.mean(-1, keepdim=True), y.var(-1, unbiased=False, keepdim=True)
            y = LN.weight * (y - mean) / torch.sqrt(variance + LN.eps) + LN.bias
        x = y
    return x


def test_each_stack_is_the_pages_wiring(ds):
    x = torch.randn(7, ds.D, dtype=torch.float64)
    for _, _, shortcut, norm, times in ds.STACKS:
        stack = ds.starting_stack(5, 3, shortcut, norm, times)
        with torch.no_grad():
            for LN in stack.norms:  # away from 1 and 0, so that a LayerNorm left out shows
                LN.weight += 0.3 * torch.randn_like(LN.weight)
                LN.bias += 0.3 * torch.randn_like(LN.bias)
            assert (stack.top(x) - by_hand(stack, x)).abs().max() < 1e-12, (shortcut, norm, times)
            assert (stack(x) - stack.read_out(by_hand(stack, x))).abs().max() < 1e-12


def test_every_stack_starts_from_the_same_weights_the_doubled_ones_times_two(ds):
    one, two = ds.starting_stack(5, 4, True, True), ds.starting_stack(5, 4, False, False, ds.DOUBLED)
    for (name, a), (_, b) in zip(one.named_parameters(), two.named_parameters(), strict=True):
        doubled = name.startswith("sublayers") and name.endswith("weight")  # W_1, W_2
        assert torch.equal(b, a * ds.DOUBLED if doubled else a), name
    assert a.dtype == torch.float64 and isinstance(one.sublayers[0][1], nn.ReLU)


def test_the_step_is_the_pages_gradient_descent(ds):
    """train()'s torch.optim.SGD is W <- W - lr dL/dW on every weight, and nothing more."""
    d = directions(ds)
    g = torch.Generator().manual_seed(3 + 1)
    batches = [ds.points(g, ds.BATCH, d) for _ in range(5)]
    mine = ds.starting_stack(3, 4, True, True)
    ds.train(mine, batches)
    theirs = ds.starting_stack(3, 4, True, True)
    weights = list(theirs.parameters())
    for x, y in batches:
        grads = torch.autograd.grad(torch.nn.functional.mse_loss(theirs(x), y), weights)
        with torch.no_grad():
            for W, dW in zip(weights, grads, strict=True):
                W -= ds.LR * dW
    assert max((a - b).abs().max().item() for a, b in zip(mine.parameters(), weights, strict=True)) < 1e-12
    assert (mine.sublayers[0][0].weight - ds.starting_stack(3, 4, True, True).sublayers[0][0].weight).abs().max() > 1e-4


def test_each_held_out_loss_is_taken_on_the_held_out_points(ds, monkeypatch):
    """The real train_and_measure, on a few batches: every loss it takes while training targets a
    batch's points, and every loss it takes after (no gradient) is the stack's error on the
    held-out points, one per stack (the test above holds only what it is handed)."""
    dirs = directions(ds)
    held = ds.points(torch.Generator().manual_seed(ds.HELD_OUT_SEED), 50, dirs)
    g = torch.Generator().manual_seed(43)
    batches = [ds.points(g, ds.BATCH, dirs) for _ in range(3)]
    targets = []

    class WatchedF:  # torch.nn.functional, its mse_loss noting its target
        def __getattr__(self, name):
            return getattr(torch.nn.functional, name)

        def mse_loss(self, scores, target, *args, **kwargs):
            targets.append((torch.is_grad_enabled(), target))
            return torch.nn.functional.mse_loss(scores, target, *args, **kwargs)

    monkeypatch.setattr(ds, "F", WatchedF())
    ds.train_and_measure(42, 4, ds.STACKS, batches, held)
    after = [y for grad, y in targets if not grad]
    assert len(after) == len(ds.STACKS) and all(torch.equal(y, held[1]) for y in after), \
        "a held-out loss was taken against other targets than the held-out points'"
    during = [y for grad, y in targets if grad]
    assert len(during) == len(ds.STACKS) * len(batches)
    assert all(any(torch.equal(y, b) for _, b in batches) for y in during), "a training step took a held-out loss"


@pytest.mark.parametrize("seed", [SEED.lo, 42, SEED.hi])
def test_held_out_points_are_never_trained_on(ds, seed):
    """What the run hands its trainings (train_and_measure, intercepted): the held-out points
    are drawn from a generator of their own, HELD_OUT_SEED, the same at every --seed, a seed no
    --seed draws its batches from (they come from --seed + 1), and not one of them is a point of
    the batches trained on."""
    handed = []

    def intercepted(seed, depth, stacks, batches, held_out):
        handed.append((batches, held_out))
        return [{"top": 1.0, "left": 0.1}] * len(stacks)  # (no training: only what it was handed is read)

    run_main(ds, "--seed", str(seed), train_and_measure=intercepted)
    ((batches, (held, _)),) = handed
    own = ds.points(torch.Generator().manual_seed(ds.HELD_OUT_SEED), ds.HELD_OUT,
                    torch.zeros(ds.D, ds.OUTPUTS, dtype=torch.float64))[0]
    assert torch.equal(held, own), "the held-out points are not HELD_OUT_SEED's own draw"
    assert ds.HELD_OUT_SEED > SEED.hi + 1  # past every --seed + 1
    trained = torch.cat([x for x, _ in batches])
    assert len(batches) == ds.STEPS and torch.cdist(held, trained).min() > 0.1, "a held-out point was trained on"


# ---------------------------------------------------------------- thresholds, on both sides

def r(left):
    return {"left": left, "top": 1.0}


def test_train_and_stuck_thresholds(ds):
    assert (ds.TRAINS, ds.STUCK) == (0.5, 0.8)
    assert ds.trains(r(0.499)) and not ds.trains(r(0.5)) and not ds.trains(r(math.nan))
    assert ds.stuck(r(0.801)) and ds.stuck(r(math.nan)) and not ds.stuck(r(0.8))
    page = [ds.page_says_it_trains(shortcut, norm, times) for _, _, shortcut, norm, times in ds.STACKS]
    assert page == [False, True, False, True, False, True]  # plain, shortcut, LayerNorm, both; doubled: shortcut, both


def test_the_shortcut_verdict_needs_every_pair(ds):
    page = {"plain": r(0.81), "shortcut": r(0.49), "LayerNorm": r(0.81), "both": r(0.49)}
    assert ds.shortcuts_help(page)
    for wiring, value in (("plain", 0.8), ("LayerNorm", 0.8), ("shortcut", 0.5), ("both", 0.5)):
        assert not ds.shortcuts_help({**page, wiring: r(value)}), wiring


def test_the_normalization_verdict(ds):
    assert ds.normalization_helps({"shortcut": r(math.nan), "both": r(0.49)})
    assert ds.normalization_helps({"shortcut": r(0.81), "both": r(0.49)})
    assert not ds.normalization_helps({"shortcut": r(0.8), "both": r(0.1)})  # trained without it
    assert not ds.normalization_helps({"shortcut": r(math.nan), "both": r(0.5)})  # not trained with it


# ---------------------------------------------------------------- wrong worlds turn the verdicts

def test_no_shortcut_wire_turns_the_shortcut_verdict(ds):
    _, outcomes = run_main(ds, STACKS=[(w, f, False, norm, times) for w, f, _, norm, times in ds.STACKS])
    assert outcomes[VERDICTS[0]] == CONTRADICTS


def test_no_layernorm_turns_the_normalization_verdict(ds):
    _, outcomes = run_main(ds, STACKS=[(w, f, shortcut, False, times) for w, f, shortcut, _, times in ds.STACKS])
    assert outcomes[VERDICTS[1]] == CONTRADICTS
    assert outcomes[VERDICTS[0]] == UPHOLDS  # "LayerNorm" is then plain, "both" the shortcut stack: still so


# ---------------------------------------------------------------- the runs

COUNTED = [f"held-out loss, {w}" for w in ("plain", "shortcut", "LayerNorm", "both")] + [
    f"held-out loss, {w}, matrices x 2" for w in ("shortcut", "both")]  # each number beside its band


@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page(runs):
    result = runs[DEFAULT]
    assert [r["name"] for r in result.records] == COUNTED + VERDICTS
    assert [r["outcome"] for r in result.records] == [UPHOLDS] * 8
    assert "Not the whole story: LayerNorm alone did not train the plain stack" in result.stdout
    compared = result.compared()[0]
    shortcut = [line for line in compared.splitlines() if line.startswith(" shortcut")]
    assert shortcut == [" shortcut  x + F(x)               1.44 ‹this run's number› (trains: below 0.5)",
                        " shortcut  x + F(x)              29.99 ‹this run's number› (stuck: above 0.8 or nan)"]
    for r in result.records[:6]:  # the run's own number, beside the band its record judges it by
        assert f"   {r['shown']} ({r['threshold']})" in result.stdout
        assert r["shown"] == f"{r['value']:.3f}"


def test_a_loss_is_never_read_in_the_size_column(ds, monkeypatch):
    """A loss printed as 1.000 beside a LayerNorm stack's size at top of 1.00 (seed 8, under
    ATEN_CPU_CAPABILITY=default): the check reads the loss where measured() put it, and the
    size column, which holds the same digits, stays as printed."""
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    with collected() as records:
        loss = measured("held-out loss, LayerNorm", False, f"{1.0:.3f}", "stuck: above 0.8 or nan", value=1.0)
        line = f"LayerNorm  LN(F(x))  {ds.readable(1.0, 2):>12}   {loss}\n"
    text, problems = comparing.compared(line, records)
    assert not problems and text == "LayerNorm  LN(F(x))          1.00 ‹this run's number› (stuck: above 0.8 or nan)\n"


@pytest.mark.reads(SHALLOW)
def test_a_shallow_stack_trains_every_way_and_both_verdicts_turn(runs):
    result = runs[SHALLOW]
    assert [r["outcome"] for r in result.records][6:] == [CONTRADICTS, CONTRADICTS]
    assert all(r["value"] < 0.5 for r in result.records[:6])  # every stack trained


@pytest.mark.reads(DEEPER)
def test_at_24_sublayers_only_shortcut_and_layernorm_together_train(runs):
    result = runs[DEEPER]
    left = {r["name"]: r["value"] for r in result.records[:6]}
    assert math.isnan(left["held-out loss, shortcut"])  # from torch's starting weights
    assert left["held-out loss, both"] < 0.5
    assert min(left["held-out loss, plain"], left["held-out loss, LayerNorm"]) > 0.8
    assert {r["name"]: r["outcome"] for r in result.records}[VERDICTS[0]] == CONTRADICTS
