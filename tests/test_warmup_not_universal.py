"""week2/20_warmup_not_universal: its schedule is week2/06's scaled to its peak (and without
the ramp, the same fall), its stack is torch's layers wired post-LN, its Adam is torch's, its
side-by-side trainings are each training alone, every threshold of its verdicts is pinned by a
value on each side, and each verdict turns in a world where warm-up is what the belief says or
where it changes nothing (its default output is the same bytes under the kernel settings of
tests/test_portability.py)."""
import math

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


def test_the_stack_is_torchs_layers_wired_post_ln(wu):
    w, x = wu.starting_weights(5, 2), torch.randn(7, wu.D, dtype=torch.float64)
    with torch.no_grad():
        for p in ("gamma", "beta"):
            w[p] += 0.3 * torch.randn_like(w[p])
    mine = wu.stack(x.expand(2, -1, -1), w)
    for r in range(2):
        h = x
        with torch.no_grad():
            for layer in range(wu.DEPTH):
                F = nn.Sequential(nn.Linear(wu.D, wu.D_FF), nn.ReLU(), nn.Linear(wu.D_FF, wu.D)).double()
                LN = nn.LayerNorm(wu.D).double()
                F[0].weight.copy_(w["W_1"][layer, r].T)
                F[0].bias.copy_(w["b_1"][layer, r, 0])
                F[2].weight.copy_(w["W_2"][layer, r].T)
                F[2].bias.copy_(w["b_2"][layer, r, 0])
                LN.weight.copy_(w["gamma"][layer, r, 0])
                LN.bias.copy_(w["beta"][layer, r, 0])
                h = LN(h + F(h))
            out = h @ w["W_out"][r] + w["b_out"][r]
        assert (mine[r] - out).abs().max() < 1e-12


def test_adam_is_torchs(wu):
    mine = torch.randn(3, 4, 5, dtype=torch.float64)
    theirs = mine.clone().requires_grad_()
    optimizer = torch.optim.Adam([theirs], lr=0.02, betas=wu.BETAS, eps=wu.EPS)
    m, v = torch.zeros_like(mine), torch.zeros_like(mine)
    g = torch.Generator().manual_seed(1)
    for step in range(1, 8):
        grad = torch.randn(mine.shape, generator=g, dtype=torch.float64)
        wu.adam_step(mine, grad, m, v, step, torch.tensor(0.02, dtype=torch.float64))
        theirs.grad = grad.clone()
        optimizer.step()
    assert (mine - theirs.detach()).abs().max() < 1e-12


def test_side_by_side_is_each_training_alone(wu):
    held_out, directions = task(wu)
    together = wu.train(3, wu.RUNS, held_out, directions, steps=8)
    alone = [wu.train(3, [run], held_out, directions, steps=8)[0] for run in wu.RUNS]
    for a, b in zip(together, alone, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9)


def test_held_out_points_are_never_trained_on(wu):
    (held, _), directions = task(wu, n=wu.HELD_OUT)
    g = torch.Generator().manual_seed(42 + 1)
    trained = torch.cat([wu.points(g, wu.BATCH, directions)[0] for _ in range(wu.STEPS)])
    assert torch.cdist(held, trained).min() > 0.1


# ---------------------------------------------------------------- thresholds, on both sides

def test_trained_and_broke_thresholds(wu):
    assert (wu.TRAINED, wu.BROKE) == (0.5, 0.8)
    assert wu.trained(0.499) and not wu.trained(0.5) and not wu.trained(math.nan)
    assert wu.broke(0.801) and wu.broke(math.nan) and not wu.broke(0.8)
    assert [wu.loss_band(x) for x in (0.499, 0.5, 0.8, 0.801, math.nan)] == [
        "below 0.5", "0.5 to 0.8", "0.5 to 0.8", "above 0.8", "not a number"]


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
    runs = wu.RUNS[:3] + [("the higher rate, warm-up, again", wu.RUNS[2][1], True)]
    _, outcomes = run_main(wu, RUNS=runs)
    assert outcomes[CHECKS[0]] == CONTRADICTS


def test_a_warm_up_that_changes_nothing_turns_the_second_verdict(wu):
    right = wu.learning_rate
    _, outcomes = run_main(wu, learning_rate=lambda step, peak, warmup, w: right(step, peak, False, w))
    assert outcomes[CHECKS[1]] == CONTRADICTS
    assert outcomes[CHECKS[0]] == UPHOLDS  # the too-high rate breaks with or without its ramp


# ---------------------------------------------------------------- the run

@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page(runs):
    result = runs[DEFAULT]
    assert [r["name"] for r in result.records] == CHECKS
    assert [r["outcome"] for r in result.records] == [UPHOLDS, UPHOLDS]
    table = [line.split()[-1] for line in result.stdout.splitlines() if line.startswith(("  a ", "  the ", "  ten "))]
    assert table == ["trained", "broke", "trained", "broke"]


NO_RAMP = lesson_run(NAME, "--warmup", "1")


@pytest.mark.reads(NO_RAMP)
def test_a_one_step_warm_up_is_none_and_turns_the_rescue_verdict(runs):
    result = runs[NO_RAMP]
    assert [r["outcome"] for r in result.records] == [UPHOLDS, CONTRADICTS]
    higher = [line for line in result.stdout.splitlines() if line.startswith(("  a higher", "  the higher"))]
    assert len(higher) == 2 and higher[0].split()[-3:] == higher[1].split()[-3:]  # the same training twice
