"""week2/20_warmup_not_universal: its schedule is week2/06's scaled to its peak (and without
the ramp, the same fall) and sets torch.optim.Adam's rate at every step, its stack is the
page's post-LN wiring, its fused Adam is torch's plain one, every threshold of its verdicts is pinned by a
value on each side, and each verdict turns in a world where warm-up is what the belief says or
where it changes nothing (its default output is the same bytes under the kernel settings of
tests/test_portability.py)."""
import math

from common.cli import SEED
from common.records import CONTRADICTS, UPHOLDS

import pytest
import torch
import torch.nn as nn

from tests.conftest import lesson_run, load_script
from tests.conftest import main_outcomes as run_main

NAME = "week2/20_warmup_not_universal"
DEFAULT = lesson_run(NAME)
CHECKS = ["warm-up is not a universal stability proof", "warm-up is a training choice that can matter"]


@pytest.fixture(scope="module")
def wu():
    return load_script(NAME)


def task(wu, seed=42, n=50):
    directions = torch.nn.functional.normalize(torch.randn(wu.D, wu.OUTPUTS, generator=torch.Generator().manual_seed(
        seed + 2), dtype=torch.float64), dim=0)
    return wu.points(torch.Generator().manual_seed(wu.HELD_OUT_SEED), n, directions), directions


# ---------------------------------------------------------------- the pieces against torch's and week2/06

def test_the_schedule_is_week2_06s_scaled_to_its_peak(wu):
    page = load_script("week2/06_warmup_schedule").learning_rate
    for step in (1, 7, wu.WARMUP, 51, 149, 300):
        ratio = page(step, wu.D, wu.WARMUP) / page(wu.WARMUP, wu.D, wu.WARMUP)
        assert math.isclose(wu.learning_rate(step, 0.05, True), 0.05 * ratio, rel_tol=1e-12)
        after = 0.05 * min(1.0, math.sqrt(wu.WARMUP / step))  # without warm-up: no ramp, the same fall
        assert math.isclose(wu.learning_rate(step, 0.05, False), after, rel_tol=1e-12)
    assert wu.learning_rate(1, 0.05, True) == 0.05 / wu.WARMUP  # the ramp starts tiny


def test_the_stack_is_the_pages_post_ln_wiring(wu):
    """x <- LN(x + F(x)) by the page's formulas, from the stack's own weights: F(x) = W_2
    relu(W_1 x + b_1) + b_2, LN(y) = gamma (y - mean) / sqrt(variance + eps) + beta."""
    stack, x = wu.starting_stack(5), torch.randn(7, wu.D, dtype=torch.float64)
    with torch.no_grad():
        for LN in stack.norms:  # away from 1 and 0, so that a LayerNorm left out shows
            LN.weight += 0.3 * torch.randn_like(LN.weight)
            LN.bias += 0.3 * torch.randn_like(LN.bias)
        h = x
        for sublayer, LN in zip(stack.sublayers, stack.norms, strict=True):
            y = h + torch.relu(h @ sublayer[0].weight.T + sublayer[0].bias) @ sublayer[2].weight.T + sublayer[2].bias
            mean, variance = y.mean(-1, keepdim=True), y.var(-1, unbiased=False, keepdim=True)
            h = LN.weight * (y - mean) / torch.sqrt(variance + LN.eps) + LN.bias
        out = h @ stack.read_out.weight.T + stack.read_out.bias
        assert (stack(x) - out).abs().max() < 1e-12
    assert len(stack.sublayers) == wu.DEPTH and isinstance(stack.sublayers[0][1], nn.ReLU)


def test_every_training_starts_from_the_same_weights(wu):
    one, two = wu.starting_stack(5), wu.starting_stack(5)
    assert all(torch.equal(a, b) for a, b in zip(one.parameters(), two.parameters(), strict=True))
    assert next(one.parameters()).dtype == torch.float64


def test_each_step_takes_the_schedules_rate(wu, monkeypatch):
    """train() hands Adam the schedule's rate at steps 1, 2, ...; torch.optim.Adam does the rest."""
    _, directions = task(wu)
    g = torch.Generator().manual_seed(4)
    batches = [wu.points(g, wu.BATCH, directions) for _ in range(7)]
    rates, step = [], torch.optim.Adam.step

    def noted(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        assert self.defaults["betas"] == (0.9, 0.999) and self.defaults["eps"] == 1e-8  # torch's
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", noted)
    wu.train(wu.starting_stack(3), 0.05, True, batches, w=4)
    assert rates == [wu.learning_rate(s, 0.05, True, 4) for s in range(1, 8)]


def test_the_fused_adam_is_the_plain_one(wu):
    """torch's one-kernel Adam (fused=True, the lesson's) takes the same steps as its plain
    for-loop one: from the same gradients at every rate of the lesson's schedules, to rounding;
    and along a training that does not break, the same trajectory."""
    g = torch.Generator().manual_seed(4)
    for peak, warmup in ((0.01, False), (0.05, False), (0.05, True), (0.5, True)):
        fused, plain = wu.starting_stack(3), wu.starting_stack(3)
        optimizers = [torch.optim.Adam(stack.parameters(), lr=peak, fused=is_fused)
                      for stack, is_fused in ((fused, True), (plain, False))]
        for step in range(1, wu.STEPS + 1):
            grads = [torch.randn(W.shape, generator=g, dtype=torch.float64) for W in fused.parameters()]
            for stack, optimizer in zip((fused, plain), optimizers, strict=True):
                optimizer.param_groups[0]["lr"] = wu.learning_rate(step, peak, warmup)
                for W, grad in zip(stack.parameters(), grads, strict=True):
                    W.grad = grad.clone()
                optimizer.step()
        gap = max((a - b).abs().max().item() for a, b in zip(fused.parameters(), plain.parameters(), strict=True))
        assert gap < 1e-12, (peak, warmup, gap)
        assert (fused.read_out.weight - wu.starting_stack(3).read_out.weight).abs().max() > 1e-3  # it moved
    _, directions = task(wu)
    batches = [wu.points(g, wu.BATCH, directions) for _ in range(wu.STEPS)]
    fused, plain = wu.starting_stack(3), wu.starting_stack(3)
    wu.train(fused, 0.05, True, batches)
    wu.train(plain, 0.05, True, batches, fused=False)
    assert max((a - b).abs().max().item() for a, b in zip(fused.parameters(), plain.parameters(), strict=True)) < 1e-9


@pytest.mark.parametrize("seed", [SEED.lo, 42, SEED.hi])
def test_held_out_points_are_never_trained_on(wu, seed):
    """What the run hands its trainings (held_out_losses, wrapped: the real one runs): the
    held-out points are drawn from a generator of their own, HELD_OUT_SEED, the same at every
    --seed, a seed no --seed draws its batches from (they come from --seed + 1), and not one
    of them is a point of the batches trained on. And what the real held_out_losses measures
    each training on (the points its stack reads outside training, and the targets of the
    loss it takes there; every stack built by starting_stack and every loss by the module's
    F, both wrapped) is those held-out points, never a batch. (The run is cut to 10 steps,
    STEPS patched, so that it trains for a moment; each batch is still one the run draws.)"""
    handed, read, targets = [], [], []  # held_out_losses' arguments; what the stacks read and the losses target
    right_losses, right_start = wu.held_out_losses, wu.starting_stack

    def wrapped(seed, runs, batches, held_out, w):
        handed.append((batches, held_out))
        return right_losses(seed, runs, batches, held_out, w)

    def watched_start(seed):
        stack = right_start(seed)
        stack.register_forward_pre_hook(lambda _, args: read.append((torch.is_grad_enabled(), args[0])))
        return stack

    class WatchedF:  # torch.nn.functional, its mse_loss noting its target
        def __getattr__(self, name):
            return getattr(torch.nn.functional, name)

        def mse_loss(self, scores, target, *args, **kwargs):
            targets.append((torch.is_grad_enabled(), target))
            return torch.nn.functional.mse_loss(scores, target, *args, **kwargs)

    run_main(wu, "--seed", str(seed), STEPS=10, held_out_losses=wrapped, starting_stack=watched_start, F=WatchedF())
    ((batches, (held, held_y)),) = handed
    own = wu.points(torch.Generator().manual_seed(wu.HELD_OUT_SEED), wu.HELD_OUT,
                    torch.zeros(wu.D, wu.OUTPUTS, dtype=torch.float64))[0]
    assert torch.equal(held, own), "the held-out points are not HELD_OUT_SEED's own draw"
    assert wu.HELD_OUT_SEED > SEED.hi + 1  # past every --seed + 1
    trained = torch.cat([x for x, _ in batches])
    assert len(batches) == 10 and torch.cdist(held, trained).min() > 0.1, "a held-out point was trained on"
    measured = [x for grad, x in read if not grad]  # one read per training, after it
    assert len(measured) == len(wu.RUNS) and all(torch.equal(x, held) for x in measured), \
        "a held-out loss was measured on other points than the held-out ones"
    measured = [y for grad, y in targets if not grad]
    assert len(measured) == len(wu.RUNS) and all(torch.equal(y, held_y) for y in measured), \
        "a held-out loss was taken against other targets than the held-out points'"
    stepped = torch.cat([x for grad, x in read if grad])  # every point a training step read
    assert len(stepped) == len(wu.RUNS) * 10 * wu.BATCH and torch.cdist(held, stepped).min() > 0.1


def test_held_out_points_are_none_of_a_whole_runs_batches(wu):
    """At the default 150 steps, the held-out points are none of the batches' points."""
    batches, (held, _) = wu.training_and_held_out(42)
    assert len(batches) == wu.STEPS
    assert torch.cdist(held, torch.cat([x for x, _ in batches])).min() > 0.1


# ---------------------------------------------------------------- thresholds, on both sides

def test_trained_and_broke_thresholds(wu):
    assert (wu.TRAINED, wu.BROKE) == (0.5, 0.8)
    assert wu.trained(0.499) and not wu.trained(0.5) and not wu.trained(math.nan)
    assert wu.broke(0.801) and wu.broke(math.nan) and not wu.broke(0.8)


def test_the_verdicts_need_each_world(wu):
    # RUNS: modest no warm-up, higher no warm-up, higher warm-up, ten times warm-up
    assert wu.not_universal([0.49, 0.9, 0.1, 0.81]) and wu.warmup_rescues([0.49, 0.81, 0.49, 0.81])
    assert not wu.not_universal([0.49, 0.9, 0.1, 0.8])  # nothing broke with warm-up
    assert not wu.not_universal([0.5, 0.9, 0.1, 0.9])  # nothing trained without warm-up
    assert not wu.warmup_rescues([0.1, 0.8, 0.1, 0.9])  # the higher rate did not break without warm-up
    assert not wu.warmup_rescues([0.1, 0.9, 0.5, 0.9])  # warm-up did not make it train


# ---------------------------------------------------------------- wrong worlds turn the verdicts

def test_a_peak_warm_up_can_carry_turns_the_first_verdict(wu):
    """The belief's world: every warm-up training has a peak it survives."""
    runs = wu.RUNS[:3] + [("the higher rate, warm-up, again", wu.RUNS[2][1], True, "breaks")]
    _, outcomes = run_main(wu, RUNS=runs)
    assert outcomes[CHECKS[0]] == CONTRADICTS


def test_a_warm_up_that_changes_nothing_turns_the_second_verdict(wu):
    right = wu.learning_rate
    _, outcomes = run_main(wu, learning_rate=lambda step, peak, warmup, w: right(step, peak, False, w))
    assert outcomes[CHECKS[1]] == CONTRADICTS
    assert outcomes[CHECKS[0]] == UPHOLDS  # the too-high rate breaks with or without its ramp


# ---------------------------------------------------------------- the run

COUNTED = [f"held-out loss, {run[0]}" for run in load_script(NAME).RUNS]  # each number beside its band


@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page(runs):
    result = runs[DEFAULT]
    assert [r["name"] for r in result.records] == COUNTED + CHECKS
    assert [r["outcome"] for r in result.records] == [UPHOLDS] * 6
    assert [r["threshold"] for r in result.records[:4]] == ["trains: below 0.5", "breaks: above 0.8 or nan"] * 2
    for r in result.records[:4]:  # the run's own number, beside the band its record judges it by
        assert f"   {r['shown']} ({r['threshold']})\n" in result.stdout and r["shown"] == f"{r['value']:.3f}"
    compared = result.compared()[0]
    assert "  a higher rate, no warm-up       0.05 ‹this run's number› (breaks: above 0.8 or nan)" in compared
    # three places: a loss of 0.05 is never read in the peak column 0.05 before it
    assert "  the higher rate, warm-up        0.05 ‹this run's number› (trains: below 0.5)" in compared


NO_RAMP = lesson_run(NAME, "--warmup", "1")


@pytest.mark.reads(NO_RAMP)
def test_a_one_step_warm_up_is_none_and_turns_the_rescue_verdict(runs):
    result = runs[NO_RAMP]
    assert [r["outcome"] for r in result.records][4:] == [UPHOLDS, CONTRADICTS]
    higher = [r["value"] for r in result.records[1:3]]
    assert higher[0] == higher[1]  # the same training twice


@pytest.mark.parametrize("warmup, written", [(True, [0.05 / 50, 0.05 * 2 / 50, 0.05 * 3 / 50]),
                                             (False, [0.05, 0.05, 0.05])])
def test_the_schedules_first_three_steps_written_out(wu, rates_used, warmup, written):
    """A peak of 0.05, w = 50: with warm-up the ramp s / w from step 1 (0.001, 0.002, 0.003),
    without it the peak from the first step (sqrt(w / s) is above 1 until step 50)."""
    g = torch.Generator().manual_seed(1)
    batches = [wu.points(g, wu.BATCH, torch.eye(wu.D, wu.OUTPUTS, dtype=torch.float64)) for _ in range(3)]
    wu.train(wu.starting_stack(0), 0.05, warmup, batches)
    assert rates_used == pytest.approx(written, rel=1e-12)
