"""Shortcut wires and normalization so deep stacks train: a deep stack trained with and without each.

Page: Week 2, the Note: "shortcut wires and normalization so deep stacks train", and
section 6 "Residual connections and normalization": x + F(x), "the signal (and the gradient
on the way back) always has a direct route"; LayerNorm "rescales one token's d numbers to
mean 0 and variance 1" (then gamma, beta).

    plain        x <- F(x)              shortcut   x <- x + F(x)
    LayerNorm    x <- LN(F(x))          both       x <- LN(x + F(x))   (post-LN, the page's wiring)
    F(x) = W_2 relu(W_1 x + b_1) + b_2, one sublayer; the stack is 12 of them, then a read-out

The stacks start from the same weights, train on the same batches at the same rate, and are
scored on the same held-out points. Prints, per wiring, the size of the numbers at the top
of the stack at the start and the held-out loss after training, with torch's starting
weights and with the sublayers' matrices doubled (shortcut and both); a verdict on each
claim; and what LayerNorm alone did.
Setup (choices; the page gives none): d = 16, f = 32, 12 sublayers; the task: a point's
coordinates along 4 fixed directions; 150 steps of plain gradient descent (lr 0.1) on 32
points; float64. Notes: week2/NOTES.md, section 18.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, int_range, knob, lesson_args
from common.printing import readable
from common.records import check, said

import torch
import torch.nn.functional as F

D = 16  # d, numbers per point: narrow, so that a step costs little
D_FF = 32  # f, the sublayer's hidden width
OUTPUTS = 4  # the read-out gives 4 numbers: the point's coordinates along 4 directions
BATCH = 32  # points per step
STEPS = 150  # steps of gradient descent
LR = 0.1  # the learning rate of every stack
DOUBLED = 2.0  # the other world: every sublayer matrix times this
HELD_OUT = 500  # held-out points, never trained on
HELD_OUT_SEED = 2**32 + 12345  # their own generator, the same for every --seed, past every seed + 1
TRAINS = 0.5  # a stack trains: held-out loss below this share of always answering 0
STUCK = 0.8  # a stack does not train: held-out loss above this share (or not a number: it blew up)
# the stacks, trained side by side: (wiring, formula, shortcut wire, LayerNorm, sublayer matrices times)
STACKS = [("plain", "F(x)", False, False, 1.0), ("shortcut", "x + F(x)", True, False, 1.0),
          ("LayerNorm", "LN(F(x))", False, True, 1.0), ("both", "LN(x + F(x))", True, True, 1.0),
          ("shortcut", "x + F(x)", True, False, DOUBLED), ("both", "LN(x + F(x))", True, True, DOUBLED)]
LAYER_PARTS = ("W_1", "b_1", "W_2", "b_2", "gamma", "beta")


def sublayer(x, W_1, b_1, W_2, b_2):
    """F(x) = W_2 relu(W_1 x + b_1) + b_2 for every stack's points x [S, N, d] at once (as rows: x W_1)."""
    return torch.baddbmm(b_2, torch.relu(torch.baddbmm(b_1, x, W_1)), W_2)  # [S, N, f] inside, [S, N, d] out


def stack(x, weights, shortcut, norm):
    """x [S, N, d] through every sublayer: y = F(x), plus x where shortcut is 1; then LN(y)
    where norm is True."""
    for W_1, b_1, W_2, b_2, gamma, beta in zip(*(weights[k].unbind(0) for k in LAYER_PARTS), strict=True):
        y = sublayer(x, W_1, b_1, W_2, b_2)  # [S, N, d]
        y = torch.addcmul(y, shortcut, x)  # x + F(x): the direct route
        normed = torch.addcmul(beta, F.layer_norm(y, (D,)), gamma)  # each point's d numbers: mean 0, variance 1
        x = torch.where(norm, normed, y)
    return x


def losses(x, y, weights, shortcut, norm):
    """Each stack's squared error on the points x [N, d] with answers y [N, outputs]: [S]."""
    top = stack(x.expand(len(shortcut), -1, -1), weights, shortcut, norm)  # [S, N, d]
    return (torch.baddbmm(weights["b_out"], top, weights["W_out"]) - y).pow(2).mean((1, 2))


def starting_weights(seed, depth, scales):
    """One start, as torch's nn.Linear draws it (uniform in +-1/sqrt(fan_in)); gamma 1, beta 0;
    a copy per stack, its sublayer matrices times its scale. {part: [depth, S, ...]}."""
    g = torch.Generator().manual_seed(seed)

    def uniform(shape, fan_in):
        return (2 * torch.rand(shape, generator=g, dtype=torch.float64) - 1) / math.sqrt(fan_in)

    one = {"W_1": uniform((depth, 1, D, D_FF), D), "b_1": uniform((depth, 1, 1, D_FF), D),
           "W_2": uniform((depth, 1, D_FF, D), D_FF), "b_2": uniform((depth, 1, 1, D), D_FF),
           "gamma": torch.ones(depth, 1, 1, D, dtype=torch.float64),
           "beta": torch.zeros(depth, 1, 1, D, dtype=torch.float64),
           "W_out": uniform((1, D, OUTPUTS), D), "b_out": uniform((1, 1, OUTPUTS), D)}
    parts = {name: torch.cat([p] * len(scales), dim=0 if name in ("W_out", "b_out") else 1)  # the stacks' axis
             for name, p in one.items()}
    times = torch.tensor(scales, dtype=torch.float64)[:, None, None]  # [S, 1, 1]
    return {name: p * times if name in ("W_1", "W_2") else p for name, p in parts.items()}


def points(g, n, directions):
    """n random points x [n, d] and their answers: their coordinates along the directions [n, outputs]."""
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, x @ directions


def train(seed, depth, stacks, held_out, directions, steps=STEPS, lr=LR):
    """Gradient descent on every stack at once, from the seed's start and on the seed's batches.
    Each stack's loss reads only its own weights, so summing them trains each as if alone.
    Returns per stack: the size (RMS) of the numbers at the top at the start, and the held-out
    loss after training as a share of always answering 0's."""
    shortcut = torch.tensor([float(s[2]) for s in stacks], dtype=torch.float64)[:, None, None]  # [S, 1, 1]: 1 or 0
    norm = torch.tensor([s[3] for s in stacks])[:, None, None]  # [S, 1, 1]
    weights = starting_weights(seed, depth, [s[4] for s in stacks])
    x_held, y_held = held_out
    with torch.no_grad():
        top = stack(x_held.expand(len(stacks), -1, -1), weights, shortcut, norm).pow(2).mean((1, 2)).sqrt()
    for W in weights.values():
        W.requires_grad_()
    g = torch.Generator().manual_seed(seed + 1)  # the batches
    for _ in range(steps):
        x, y = points(g, BATCH, directions)
        gradients = torch.autograd.grad(losses(x, y, weights, shortcut, norm).sum(), list(weights.values()))
        with torch.no_grad():
            for W, dW in zip(weights.values(), gradients, strict=True):
                W -= lr * dW
    with torch.no_grad():
        left = losses(x_held, y_held, weights, shortcut, norm) / y_held.pow(2).mean()
    return [{"top": t, "left": v} for t, v in zip(top.tolist(), left.tolist(), strict=True)]


def trains(result):
    return result["left"] < TRAINS


def stuck(result):
    return not result["left"] <= STUCK  # not a number (blown up) counts as stuck


def shortcuts_help(start):
    return trains(start["shortcut"]) and trains(start["both"]) and stuck(start["plain"]) and stuck(start["LayerNorm"])


def normalization_helps(doubled):
    return trains(doubled["both"]) and stuck(doubled["shortcut"])


def lesson(args):
    """Four wirings from one start; the two with shortcuts again, sublayers doubled."""
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    directions = F.normalize(torch.randn(D, OUTPUTS, generator=torch.Generator().manual_seed(args.seed + 2),
                                         dtype=torch.float64), dim=0)  # [d, outputs], unit columns
    held_out = points(torch.Generator().manual_seed(HELD_OUT_SEED), HELD_OUT, directions)
    results = train(args.seed, args.depth, STACKS, held_out, directions)
    start = {s[0]: r for s, r in zip(STACKS, results, strict=True) if s[4] == 1.0}
    doubled = {s[0]: r for s, r in zip(STACKS, results, strict=True) if s[4] == DOUBLED}

    print(f"A stack of {args.depth} sublayers F(x) = W_2 relu(W_1 x + b_1) + b_2 (d = {D}, f = {D_FF}), then a "
          f"read-out that")
    print(f"gives a point's coordinates along {OUTPUTS} fixed directions. Each stack takes {STEPS} steps of\n"
          f"W <- W - lr dL/dW, lr = {LR:g}, from the same starting weights,\n"
          f"on the same batches of {BATCH} random points.")
    print(f"\n{'':26}{'torch starting weights':^28}{f'sublayer matrices x {DOUBLED:g}':^30}".rstrip())
    print(f"{'wiring':26}{'size at top':>14}{'loss after':>14}{'':2}{'size at top':>14}{'loss after':>14}")
    for wiring, formula, *_ in STACKS[:4]:
        cells = f"{readable(start[wiring]['top'], 2):>14}{loss_band(start[wiring]['left']):>14}"
        if wiring in doubled:
            cells += f"{'':2}{readable(doubled[wiring]['top'], 2):>14}{loss_band(doubled[wiring]['left']):>14}"
        print(f"{wiring:>9}  {formula:15}{cells}")
    print("  (size at top: the RMS of the numbers after the last sublayer, before any step;\n"
          "   the input's is about 1.\n"
          f"   loss after: {HELD_OUT} held-out points' squared error after training / always answering 0's;\n"
          "   1 is no better than that)")

    helped = shortcuts_help(start)
    check("shortcuts help a deep stack train", f"Verdict: shortcuts help a deep stack train (with them the loss "
          f"ends below {TRAINS:g}, without them\n  above {STUCK:g}, with and without LayerNorm): {said(helped)}",
          helped, value=", ".join(f"{w} {r['left']:.2f}" for w, r in start.items()),
          threshold=f"shortcut and both below {TRAINS:g}; plain and LayerNorm above {STUCK:g}")
    normalized = normalization_helps(doubled)
    check("normalization helps a deep stack train", "Verdict: normalization helps when the sublayers change the "
          f"numbers' size (matrices x {DOUBLED:g}):\n  without it the shortcut stack ends above {STUCK:g} or blows "
          f"up, with it below {TRAINS:g}: {said(normalized)}", normalized,
          value=", ".join(f"{w} {r['left']:.2f}" for w, r in doubled.items()),
          threshold=f"matrices x {DOUBLED:g}: both below {TRAINS:g}; shortcut above {STUCK:g} or not a number")
    alone, same = trains(start["LayerNorm"]), trains(start["shortcut"]) == trains(start["both"])
    check("LayerNorm alone trains the plain stack", f"Not the whole story: LayerNorm alone "
          f"{'trained' if alone else 'did not train'} the plain stack, and with torch's starting\n  weights adding "
          f"it to the shortcuts {'changed nothing here (both trained)' if same else 'made the difference'}:\n  "
          "LayerNorm keeps the numbers' size steady; the shortcut is the direct route.", None,
          value=f"LayerNorm {start['LayerNorm']['left']:.2f}; shortcut {start['shortcut']['left']:.2f}, "
          f"both {start['both']['left']:.2f}", threshold=f"LayerNorm below {TRAINS:g}")


# ---------------------------------------------------------------- optional: knobs, Try it, wording

def loss_band(share):
    if not math.isfinite(share):
        return "blew up"
    if share < TRAINS:
        return f"below {TRAINS:g}"
    return f"above {STUCK:g}" if share > STUCK else f"{TRAINS:g} to {STUCK:g}"


DESCRIPTION = ("A deep stack trained four ways, side by side: plain, with shortcuts, with LayerNorm, with both; "
               "and with bigger sublayers (Week 2, the Note and section 6).")
KNOBS = [knob("--depth", type=int_range(2, 24), default=12, help="sublayers in every stack"),
         knob("--seed", type=SEED, default=42, help="torch generator seed of the weights, batches and directions")]
TRY_IT = [("--depth 2", "a shallow stack: every wiring trains, and both verdicts turn"),
          ("--depth 4", "LayerNorm alone trains the plain stack at this depth; at 12 sublayers it no longer does"),
          ("--depth 24", "twice as deep: the shortcut stack blows up even from torch's starting weights; only "
           "shortcut and LayerNorm together train"),
          ("--seed 7", "other starting weights, batches and directions: the same picture")]


def main():
    return lesson(lesson_args(__file__, DESCRIPTION, KNOBS, TRY_IT))


if __name__ == "__main__":
    run(main)
