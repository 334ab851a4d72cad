"""week2/18_deep_stacks_train: its stacks are torch's layers wired four ways, its side-by-side
training is the same as training each stack alone, its step is torch's SGD, its held-out
points are never trained on, every threshold of its verdicts is pinned by a value on each
side, each verdict turns when the shortcut wire or LayerNorm is taken out of the stacks that
claim it, and its depth knob turns the verdicts its Try-it lines say (its default output is the
same bytes under the kernel settings of tests/test_portability.py)."""
import math

from common.records import CONTRADICTS, NOT_TESTED, UPHOLDS

import pytest
import torch
import torch.nn as nn

from tests.conftest import lesson_run, load_script
from tests.conftest import main_outcomes as run_main

NAME = "week2/18_deep_stacks_train"
DEFAULT = lesson_run(NAME)
SHALLOW = lesson_run(NAME, "--depth", "2")
DEEPER = lesson_run(NAME, "--depth", "24")
VERDICTS = ["shortcuts help a deep stack train", "normalization helps a deep stack train"]
ALONE = "LayerNorm alone trains the plain stack"


@pytest.fixture(scope="module")
def ds():
    return load_script(NAME)


def directions(ds, seed=42):
    return torch.nn.functional.normalize(torch.randn(ds.D, ds.OUTPUTS, generator=torch.Generator().manual_seed(
        seed + 2), dtype=torch.float64), dim=0)


# ---------------------------------------------------------------- the pieces against torch's

def test_each_stack_is_torchs_layers_wired_its_way(ds):
    depth, x = 3, torch.randn(7, ds.D, dtype=torch.float64)
    weights = ds.starting_weights(5, depth, [s[4] for s in ds.STACKS])
    with torch.no_grad():
        for p in ("gamma", "beta"):  # away from 1 and 0, so that a LayerNorm left out shows
            weights[p] += 0.3 * torch.randn_like(weights[p])
    shortcut = torch.tensor([float(s[2]) for s in ds.STACKS], dtype=torch.float64)[:, None, None]
    norm = torch.tensor([s[3] for s in ds.STACKS])[:, None, None]
    mine = ds.stack(x.expand(len(ds.STACKS), -1, -1), weights, shortcut, norm)
    for s, (_, _, has_shortcut, has_norm, _) in enumerate(ds.STACKS):
        h = x
        for layer in range(depth):
            F = nn.Sequential(nn.Linear(ds.D, ds.D_FF), nn.ReLU(), nn.Linear(ds.D_FF, ds.D)).double()
            LN = nn.LayerNorm(ds.D).double()
            with torch.no_grad():
                F[0].weight.copy_(weights["W_1"][layer, s].T)
                F[0].bias.copy_(weights["b_1"][layer, s, 0])
                F[2].weight.copy_(weights["W_2"][layer, s].T)
                F[2].bias.copy_(weights["b_2"][layer, s, 0])
                LN.weight.copy_(weights["gamma"][layer, s, 0])
                LN.bias.copy_(weights["beta"][layer, s, 0])
                h = (h + F(h)) if has_shortcut else F(h)
                h = LN(h) if has_norm else h
        assert (mine[s] - h).abs().max() < 1e-12, ds.STACKS[s]


def test_the_doubled_stacks_start_from_the_same_weights_times_two(ds):
    weights = ds.starting_weights(5, 4, [1.0, ds.DOUBLED])
    for part in ds.LAYER_PARTS + ("W_out", "b_out"):
        axis = 0 if part in ("W_out", "b_out") else 1
        one, two = weights[part].unbind(axis)
        assert torch.equal(two, one * ds.DOUBLED if part in ("W_1", "W_2") else one), part


def test_side_by_side_training_is_each_stack_trained_alone(ds):
    d = directions(ds)
    held_out = ds.points(torch.Generator().manual_seed(ds.HELD_OUT_SEED), 50, d)
    together = ds.train(3, 4, ds.STACKS, held_out, d, steps=6)
    alone = [ds.train(3, 4, [s], held_out, d, steps=6)[0] for s in ds.STACKS]
    for a, b in zip(together, alone, strict=True):
        assert math.isclose(a["top"], b["top"], rel_tol=1e-12)
        assert math.isclose(a["left"], b["left"], rel_tol=1e-9) or (math.isnan(a["left"]) and math.isnan(b["left"]))


def test_the_step_is_torchs_sgd(ds, monkeypatch):
    """train()'s update, W <- W - lr dW for every part, against torch.optim.SGD."""
    d, stacks = directions(ds), ds.STACKS[:4]
    held_out = ds.points(torch.Generator().manual_seed(ds.HELD_OUT_SEED), 50, d)
    kept = {}
    original = ds.starting_weights

    def keep(*args):
        kept.update(original(*args))
        return kept

    monkeypatch.setattr(ds, "starting_weights", keep)
    ds.train(3, 4, stacks, held_out, d, steps=5)
    theirs = {k: W.detach().clone().requires_grad_() for k, W in original(3, 4, [s[4] for s in stacks]).items()}
    optimizer = torch.optim.SGD(list(theirs.values()), lr=ds.LR)
    shortcut = torch.tensor([float(s[2]) for s in stacks], dtype=torch.float64)[:, None, None]
    norm = torch.tensor([s[3] for s in stacks])[:, None, None]
    g = torch.Generator().manual_seed(3 + 1)
    for _ in range(5):
        x, y = ds.points(g, ds.BATCH, d)
        optimizer.zero_grad()
        ds.losses(x, y, theirs, shortcut, norm).sum().backward()
        optimizer.step()
    assert max((kept[k] - theirs[k]).abs().max().item() for k in theirs) < 1e-12
    assert (kept["W_1"] - original(3, 4, [1.0] * 4)["W_1"]).abs().max() > 1e-4  # they moved


def test_held_out_points_are_never_trained_on(ds):
    d = directions(ds)
    held = ds.points(torch.Generator().manual_seed(ds.HELD_OUT_SEED), ds.HELD_OUT, d)[0]
    g = torch.Generator().manual_seed(42 + 1)
    trained = torch.cat([ds.points(g, ds.BATCH, d)[0] for _ in range(ds.STEPS)])
    assert torch.cdist(held, trained).min() > 0.1


# ---------------------------------------------------------------- thresholds, on both sides

def r(left):
    return {"left": left, "top": 1.0}


def test_train_and_stuck_thresholds(ds):
    assert (ds.TRAINS, ds.STUCK) == (0.5, 0.8)
    assert ds.trains(r(0.499)) and not ds.trains(r(0.5)) and not ds.trains(r(math.nan))
    assert ds.stuck(r(0.801)) and ds.stuck(r(math.nan)) and not ds.stuck(r(0.8))
    assert [ds.loss_band(x) for x in (0.499, 0.5, 0.8, 0.801, math.nan)] == [
        "below 0.5", "0.5 to 0.8", "0.5 to 0.8", "above 0.8", "blew up"]


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
    right = ds.stack
    _, outcomes = run_main(ds, stack=lambda x, weights, shortcut, norm: right(x, weights, 0 * shortcut, norm))
    assert outcomes[VERDICTS[0]] == CONTRADICTS


def test_no_layernorm_turns_the_normalization_verdict(ds):
    right = ds.stack
    _, outcomes = run_main(ds, stack=lambda x, weights, shortcut, norm: right(x, weights, shortcut, norm & False))
    assert outcomes[VERDICTS[1]] == CONTRADICTS
    assert outcomes[VERDICTS[0]] == UPHOLDS  # "LayerNorm" is then plain, "both" the shortcut stack: still so


# ---------------------------------------------------------------- the runs

@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page(runs):
    result = runs[DEFAULT]
    assert [r["name"] for r in result.records] == VERDICTS + [ALONE]
    assert [r["outcome"] for r in result.records] == [UPHOLDS, UPHOLDS, NOT_TESTED]
    assert "Not the whole story: LayerNorm alone did not train the plain stack" in result.stdout
    assert " shortcut  x + F(x)                 1.53     below 0.5           47.25       blew up" in result.stdout


@pytest.mark.reads(SHALLOW)
def test_a_shallow_stack_trains_every_way_and_both_verdicts_turn(runs):
    result = runs[SHALLOW]
    assert [r["outcome"] for r in result.records] == [CONTRADICTS, CONTRADICTS, NOT_TESTED]
    table = result.stdout.split("wiring", 1)[1].split("(size at top")[0]
    assert table.count("below 0.5") == 6 and "CONTRADICTS" not in result.stdout


@pytest.mark.reads(DEEPER)
def test_at_24_sublayers_only_shortcut_and_layernorm_together_train(runs):
    result = runs[DEEPER]
    shortcut = next(line for line in result.stdout.splitlines() if line.startswith(" shortcut"))
    assert shortcut.split()[5:7] == ["blew", "up"]  # from torch's starting weights
    assert {r["name"]: r["outcome"] for r in result.records}[VERDICTS[0]] == CONTRADICTS
