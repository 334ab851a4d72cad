"""Warm-up is a training choice, not a universal stability proof: one training breaks with it, one is fine without.

Page: Week 2, section 7 "Training tricks: label smoothing and the warm-up schedule": "Start
the learning rate tiny, ramp it up linearly, then let it fall slowly", and its "Mistakes
people make": "Claiming warm-up is a universal stability proof. It is a training choice."

    with warm-up      lr(s) = peak * min(s / w, sqrt(w / s))   (week2/06's schedule, scaled to its peak)
    without warm-up   lr(s) = peak * min(1, sqrt(w / s))       (the same fall, no ramp)

Four trainings of one small model, the same start and the same batches, differing only in
the peak rate and the warm-up: a modest rate without warm-up; a higher rate without and with
warm-up; ten times that rate with warm-up. Prints the schedules' first rates, each training's
held-out loss after training, and a verdict on the belief and on warm-up as a choice.
Setup (choices; the page gives none): week2/18's post-LN stack, 12 sublayers LN(x + F(x)),
d = 16, and its task (a point's coordinates along 4 directions); Adam, 150 steps of 32
points, w = 50 (--warmup); float64. Notes: week2/NOTES.md, section 20.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, int_range, knob, lesson_args
from common.records import check, said

import torch
import torch.nn.functional as F

D = 16  # d, numbers per point
D_FF = 32  # f, the sublayer's hidden width
DEPTH = 12  # sublayers
OUTPUTS = 4  # the read-out gives a point's coordinates along 4 directions
BATCH = 32  # points per step
STEPS = 150  # steps of Adam
WARMUP = 50  # w, the warm-up's length in steps (a third of the training)
BETAS, EPS = (0.9, 0.999), 1e-8  # Adam's (torch's defaults)
HELD_OUT = 500  # held-out points, never trained on
HELD_OUT_SEED = 2**32 + 12345  # their own generator, the same for every --seed, past every seed + 1
TRAINED = 0.5  # a training worked: held-out loss below this share of always answering 0
BROKE = 0.8  # a training broke: held-out loss above this share (no better than a guess), or not a number
# the trainings, side by side: (what it is, peak rate, warm-up)
RUNS = [("a modest rate, no warm-up", 0.01, False), ("a higher rate, no warm-up", 0.05, False),
        ("the higher rate, warm-up", 0.05, True), ("ten times that, warm-up", 0.5, True)]


def learning_rate(step, peak, warmup, w=WARMUP):
    """The rate at step s (from 1): the ramp s / w only with warm-up, then the fall sqrt(w / s)."""
    return peak * min(step / w if warmup else 1.0, math.sqrt(w / step))


def stack(x, w):
    """Post-LN: x <- LN(x + F(x)) for every sublayer, F(x) = W_2 relu(W_1 x + b_1) + b_2, for
    every training's points x [R, N, d] at once; then the read-out, [R, N, outputs]."""
    for W_1, b_1, W_2, b_2, gamma, beta in zip(*(w[k].unbind(0) for k in LAYER_PARTS), strict=True):
        F_x = torch.baddbmm(b_2, torch.relu(torch.baddbmm(b_1, x, W_1)), W_2)  # [R, N, d]
        x = torch.addcmul(beta, F.layer_norm(x + F_x, (D,)), gamma)
    return torch.baddbmm(w["b_out"], x, w["W_out"])


LAYER_PARTS = ("W_1", "b_1", "W_2", "b_2", "gamma", "beta")


def starting_weights(seed, runs):
    """One start, as torch's nn.Linear draws it (uniform in +-1/sqrt(fan_in)); gamma 1, beta 0;
    a copy per training: {part: [DEPTH, R, ...] or [R, ...]}."""
    g = torch.Generator().manual_seed(seed)

    def uniform(shape, fan_in):
        return (2 * torch.rand(shape, generator=g, dtype=torch.float64) - 1) / math.sqrt(fan_in)

    one = {"W_1": uniform((DEPTH, 1, D, D_FF), D), "b_1": uniform((DEPTH, 1, 1, D_FF), D),
           "W_2": uniform((DEPTH, 1, D_FF, D), D_FF), "b_2": uniform((DEPTH, 1, 1, D), D_FF),
           "gamma": torch.ones(DEPTH, 1, 1, D, dtype=torch.float64),
           "beta": torch.zeros(DEPTH, 1, 1, D, dtype=torch.float64),
           "W_out": uniform((1, D, OUTPUTS), D), "b_out": uniform((1, 1, OUTPUTS), D)}
    return {name: torch.cat([p] * runs, dim=0 if name in ("W_out", "b_out") else 1) for name, p in one.items()}


def points(g, n, directions):
    """n random points x [n, d] and their coordinates along the directions [n, outputs]."""
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, x @ directions


def losses(x, y, w, runs):
    """Each training's squared error on the points x [N, d] with answers y [N, outputs]: [R]."""
    return (stack(x.expand(runs, -1, -1), w) - y).pow(2).mean((1, 2))


def adam_step(W, grad, m, v, step, lr):
    """m, v: running means of the gradient and its square; each weight moves about lr.
    lr [R]: each training's own rate, on the axis of W that holds the trainings (a tensor of
    rates, which common.blocks.adam_step, one float rate, cannot take: hence this copy)."""
    m.mul_(BETAS[0]).add_(grad, alpha=1 - BETAS[0])
    v.mul_(BETAS[1]).addcmul_(grad, grad, value=1 - BETAS[1])
    W.sub_(lr * (m / (1 - BETAS[0] ** step)) / ((v / (1 - BETAS[1] ** step)).sqrt() + EPS))


def train(seed, runs, held_out, directions, w_steps=WARMUP, steps=STEPS):
    """Adam on every training at once, from the seed's start on the seed's batches, each at its
    own schedule (each loss reads only its own weights). Returns each training's held-out
    loss after training, as a share of always answering 0's."""
    w = starting_weights(seed, len(runs))
    for W in w.values():
        W.requires_grad_()
    moments = {name: (torch.zeros_like(W), torch.zeros_like(W)) for name, W in w.items()}
    g = torch.Generator().manual_seed(seed + 1)  # the batches
    for step in range(1, steps + 1):
        x, y = points(g, BATCH, directions)
        grads = torch.autograd.grad(losses(x, y, w, len(runs)).sum(), list(w.values()))
        lr = torch.tensor([learning_rate(step, peak, warmup, w_steps) for _, peak, warmup in runs],
                          dtype=torch.float64)
        with torch.no_grad():
            for (name, W), grad in zip(w.items(), grads, strict=True):
                axis = 0 if name in ("W_out", "b_out") else 1  # the trainings' axis
                adam_step(W, grad, *moments[name], step, lr.view([-1] + [1] * (W.dim() - axis - 1)))
    x_held, y_held = held_out
    with torch.no_grad():
        return (losses(x_held, y_held, w, len(runs)) / y_held.pow(2).mean()).tolist()


def trained(share):
    return share < TRAINED


def broke(share):
    return not share <= BROKE  # not a number counts as broken


def not_universal(after):
    """The belief is refuted by a training that broke with warm-up and one fine without it."""
    return any(broke(a) and warmup for a, (_, _, warmup) in zip(after, RUNS, strict=True)) and any(
        trained(a) and not warmup for a, (_, _, warmup) in zip(after, RUNS, strict=True))


def warmup_rescues(after):
    """The same peak rate: broke without warm-up, trained with it."""
    by_run = {(peak, warmup): a for a, (_, peak, warmup) in zip(after, RUNS, strict=True)}
    return any(broke(by_run[peak, False]) and trained(by_run[peak, True])
               for peak, warmup in by_run if warmup and (peak, False) in by_run)


def lesson(args):
    """Four trainings, one start, one stream of batches; only the schedule differs."""
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    directions = F.normalize(torch.randn(D, OUTPUTS, generator=torch.Generator().manual_seed(args.seed + 2),
                                         dtype=torch.float64), dim=0)  # [d, outputs], unit columns
    held_out = points(torch.Generator().manual_seed(HELD_OUT_SEED), HELD_OUT, directions)
    w_steps = args.warmup
    after = train(args.seed, RUNS, held_out, directions, w_steps)

    print(f"week2/18's post-LN stack ({DEPTH} sublayers LN(x + F(x)), d = {D}) learns a point's coordinates "
          f"along {OUTPUTS}")
    print(f"directions: {STEPS} steps of Adam on the same batches of {BATCH} points, from the same start. "
          f"Only the\nschedule differs: the rate rises from tiny to its peak over w = {w_steps} steps (warm-up) or "
          f"starts at its\npeak (no warm-up); after step {w_steps} both fall as sqrt(w / s).")
    peak = RUNS[1][1]
    shown = sorted({1, 10, w_steps, STEPS})
    print("  rate at step   " + "".join(f"{s:>9}" for s in shown) + f"   (peak {peak:g})")
    for label, warmup in (("warm-up", True), ("no warm-up", False)):
        print(f"  {label:13}" + "".join(f"{learning_rate(s, peak, warmup, w_steps):>9.4f}" for s in shown))
    print(f"\n  {'training':30}{'peak':>6}{'held-out loss after':>22}")
    for (label, peak, _), share in zip(RUNS, after, strict=True):
        print(f"  {label:30}{peak:>6g}{loss_band(share):>22}   {outcome_words(share)}")
    print(f"  (loss: {HELD_OUT} held-out points' squared error / always answering 0's; 1 is no better than that;\n"
          f"   trained: below {TRAINED:g}; broke: above {BROKE:g}, it ended no better than a guess)")

    refuted = not_universal(after)
    check("warm-up is not a universal stability proof", "Verdict on 'warm-up is a universal stability proof': "
          + ("wrong: a training\n  broke with warm-up in place, and one trained well without it" if refuted else
             "not refuted here: it needs a\n  training that broke with warm-up and one that trained without it")
          + f": {said(refuted)}", refuted,
          value=", ".join(f"{peak:g}{' warm-up' * warmup} {a:.2f}" for a, (_, peak, warmup) in zip(after, RUNS,
                                                                                                  strict=True)),
          threshold=f"a warm-up training above {BROKE:g} (broke); a training without warm-up below {TRAINED:g}")
    rescued = warmup_rescues(after)
    check("warm-up is a training choice that can matter", "Verdict: it is a training choice, and here one that "
          + ("matters: at the same peak\n  it turned a training that broke into one that trained" if rescued else
             "would matter if at the same peak it\n  turned a training that broke into one that trained; it did not")
          + f": {said(rescued)}",
          rescued, value=", ".join(f"{a:.2f}" for a in after[1:3]),
          threshold=f"same peak: without warm-up above {BROKE:g}, with it below {TRAINED:g}")


# ---------------------------------------------------------------- optional: knobs, Try it, wording

def loss_band(share):
    if not math.isfinite(share):
        return "not a number"
    if share < TRAINED:
        return f"below {TRAINED:g}"
    return f"above {BROKE:g}" if share > BROKE else f"{TRAINED:g} to {BROKE:g}"


def outcome_words(share):
    return "trained" if trained(share) else "broke" if broke(share) else "neither"


DESCRIPTION = ("Four trainings that differ only in the peak rate and the warm-up: one breaks with warm-up, one is "
               "fine without it, one is rescued by it (Week 2, section 7).")
KNOBS = [knob("--warmup", type=int_range(1, STEPS - 1), default=WARMUP, help=f"w, the warm-up's steps (of {STEPS})"),
         knob("--seed", type=SEED, default=42, help="torch generator seed of the weights, batches and directions")]
TRY_IT = [("--warmup 1", "a warm-up of one step is none: the two higher-rate trainings are the same, and the rescue "
           "verdict turns"),
          ("--warmup 5", "a warm-up of 5 steps already rescues the higher rate, and still cannot carry ten times it"),
          ("--seed 7", "another start, other batches and directions: the same four outcomes")]


def main():
    return lesson(lesson_args(__file__, DESCRIPTION, KNOBS, TRY_IT))


if __name__ == "__main__":
    run(main)
