"""Warm-up is a training choice, not a universal stability proof: one training breaks with it, one is fine without.

Page: Week 2, section 7 "Training tricks: label smoothing and the warm-up schedule": "Start
the learning rate tiny, ramp it up linearly, then let it fall slowly", and its "Mistakes
people make": "Claiming warm-up is a universal stability proof. It is a training choice."

    with warm-up      eta(s) = peak * min(s / w, sqrt(w / s))   (week2/06's schedule, scaled to its peak)
    without warm-up   eta(s) = peak * min(1, sqrt(w / s))       (the same fall, no ramp)

Four trainings of one small model, the same start and the same batches, differing only in
the peak rate and the warm-up: a modest rate without warm-up; a higher rate without and with
warm-up; ten times that rate with warm-up. Prints the schedules' first rates, each training's
held-out loss after training (beside what the verdicts need of it), and a verdict on
the belief and on warm-up as a choice.
Setup (choices; the page gives none): week2/18's post-LN stack, 12 sublayers LN(x + F(x)),
d = 16, and its task (a point's coordinates along 4 directions); torch.optim.Adam, its rate
set from the schedule each step, 150 steps of 32 points, w = 50 (--warmup); float64.
Notes: week2/NOTES.md, section 20.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import feed_forward
from common.cli import SEED, Lesson, int_range, knob
from common.records import measured, record, said

import torch
import torch.nn as nn
import torch.nn.functional as F

D = 16  # d, numbers per point
D_FF = 32  # f, the sublayer's hidden width
DEPTH = 12  # sublayers
OUTPUTS = 4  # the read-out gives a point's coordinates along 4 directions
BATCH = 32  # points per step
STEPS = 150  # steps of Adam
WARMUP = 50  # w, the warm-up's length in steps (a third of the training)
HELD_OUT = 500  # held-out points, never trained on
HELD_OUT_SEED = 2**32 + 12345  # their own generator, the same for every --seed, past every seed + 1
TRAINED = 0.5  # a training worked: held-out loss below this share of always answering 0
BROKE = 0.8  # a training broke: held-out loss above this share (no better than a guess), or not a number
RUNS = [  # the trainings: (what it is, peak rate, warm-up, what the verdicts need of it: trains or breaks)
    ("a modest rate, no warm-up", 0.01, False, "trains"),
    ("a higher rate, no warm-up", 0.05, False, "breaks"),
    ("the higher rate, warm-up", 0.05, True, "trains"),
    ("ten times that, warm-up", 0.5, True, "breaks"),
]


def learning_rate(s, peak, warmup, w=WARMUP):
    """eta(s) at step s (from 1): the ramp s / w (with warm-up only), then the fall sqrt(w / s).
    The page's eta(s) = d^(-1/2) min(s^(-1/2), s w^(-3/2)) is this with peak = (d w)^(-1/2)."""
    return peak * min(s / w if warmup else 1.0, math.sqrt(w / s))


class PostLNStack(nn.Module):
    """Post-LN: x <- LN(x + F(x)) for every sublayer, F(x) = W_2 relu(W_1 x + b_1) + b_2; then
    a linear read-out."""

    def __init__(self):
        super().__init__()
        self.sublayers = nn.ModuleList(feed_forward(D, D_FF) for _ in range(DEPTH))  # F, one per sublayer
        self.norms = nn.ModuleList(nn.LayerNorm(D) for _ in range(DEPTH))  # LN: gamma 1, beta 0, learned
        self.read_out = nn.Linear(D, OUTPUTS)

    def forward(self, x):
        for sublayer, LN in zip(self.sublayers, self.norms, strict=True):
            x = LN(x + sublayer(x))  # x [N, d]
        return self.read_out(x)  # [N, outputs]


def starting_stack(seed):
    """The seed's start, as torch's layers draw it (nn.Linear uniform in +-1/sqrt(fan_in)), the
    same for every training. Drawn in float64 (as week2/18's: float32 draws widened to float64
    made trainings hang on the kernels' last bits)."""
    torch.manual_seed(seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return PostLNStack()
    finally:
        torch.set_default_dtype(before)


def train(stack, peak, warmup, batches, w=WARMUP, fused=True):
    """Adam (torch's betas and eps) on the squared error of every batch, its rate set by the
    schedule at each step. fused: torch's one-kernel Adam, the same steps as its plain one in
    about 40% less CPU time here (tests/test_warmup_not_universal.py holds the two equal)."""
    optimizer = torch.optim.Adam(stack.parameters(), lr=peak, fused=fused)
    for s, (x, y) in enumerate(batches, start=1):
        optimizer.param_groups[0]["lr"] = learning_rate(s, peak, warmup, w)
        optimizer.zero_grad()
        F.mse_loss(stack(x), y).backward()
        optimizer.step()


def lesson(args):
    """The schedule with and without warm-up; four trainings, one start, one stream of batches,
    only the schedule differing; then the page's mistake, tested on them."""
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    w = args.warmup
    batches, held_out = training_and_held_out(args.seed)
    after = held_out_losses(args.seed, RUNS, batches, held_out, w)  # each training's held-out loss, in RUNS' order

    print(f"week2/18's post-LN stack ({DEPTH} sublayers LN(x + F(x)), d = {D}) learns a point's coordinates "
          f"along {OUTPUTS}")
    print(f"directions: {STEPS} steps of Adam on the same batches of {BATCH} points, from the same start. "
          f"Only the\nschedule differs: the rate rises from tiny to its peak over w = {w} steps (warm-up) or "
          f"starts at its\npeak (no warm-up); after step {w} both fall as sqrt(w / s).")
    peak = RUNS[1][1]  # the higher rate, trained both with and without warm-up
    shown = sorted({1, 10, w, STEPS})
    print("  rate at step   " + "".join(f"{s:>9}" for s in shown) + f"   (peak {peak:g})")
    for label, warmup in (("warm-up", True), ("no warm-up", False)):
        print(f"  {label:13}" + "".join(f"{learning_rate(s, peak, warmup, w):>9.4f}" for s in shown))

    print(f"\n  {'training':30}{'peak':>6}   held-out loss after")
    for (label, peak, _, needs), loss in zip(RUNS, after, strict=True):
        if needs == "trains":
            text = measured(f"held-out loss, {label}", trained(loss), f"{loss:.3f}", f"trains: below {TRAINED:g}",
                            value=loss)
        else:
            text = measured(f"held-out loss, {label}", broke(loss), f"{loss:.3f}", f"breaks: above {BROKE:g} or nan",
                            value=loss)
        print(f"  {label:30}{peak:>6g}   {text}")
    print(f"  (loss: {HELD_OUT} held-out points' squared error / always answering 0's; 1 is no better than that;\n"
          "   in brackets, what the verdicts below need of each training: to train, or to break, ending no\n"
          "   better than a guess or blowing up (nan: not a number))")

    # Mistakes people make: "Claiming warm-up is a universal stability proof. It is a training choice."
    refuted = not_universal(after)
    found = ("wrong: a training\n  broke with warm-up in place, and one trained well without it" if refuted else
             "not refuted here: it needs a\n  training that broke with warm-up and one that trained without it")
    print(f"Verdict on 'warm-up is a universal stability proof': {found}: {said(refuted)}")
    record("warm-up is not a universal stability proof", refuted,
           value=", ".join(f"{label} {loss:.2f}" for (label, *_), loss in zip(RUNS, after, strict=True)),
           threshold=f"a warm-up training above {BROKE:g} (broke); a training without warm-up below {TRAINED:g}")
    rescued = warmup_rescues(after)
    found = ("matters: at the same peak\n  it turned a training that broke into one that trained" if rescued else
             "would matter if at the same peak it\n  turned a training that broke into one that trained; it did not")
    print(f"Verdict: it is a training choice, and here one that {found}: {said(rescued)}")
    record("warm-up is a training choice that can matter", rescued,
           value=", ".join(f"{loss:.2f}" for loss in after[1:3]),
           threshold=f"same peak: without warm-up above {BROKE:g}, with it below {TRAINED:g}")


# ---------------------------------------------------------------- optional: data, measures, verdicts, knobs and Try it

def training_and_held_out(seed):
    """The batches [(x [BATCH, d], y [BATCH, outputs])] * STEPS, the same for every training, and
    HELD_OUT points from a generator of their own: a point's coordinates along OUTPUTS unit
    directions, drawn from the seed."""
    directions = F.normalize(torch.randn(D, OUTPUTS, generator=torch.Generator().manual_seed(seed + 2),
                                         dtype=torch.float64), dim=0)  # [d, outputs], unit columns
    held_out = points(torch.Generator().manual_seed(HELD_OUT_SEED), HELD_OUT, directions)
    g = torch.Generator().manual_seed(seed + 1)  # the batches
    return [points(g, BATCH, directions) for _ in range(STEPS)], held_out


def points(g, n, directions):
    """n random points x [n, d] and their coordinates along the directions [n, outputs]."""
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, x @ directions


def held_out_losses(seed, runs, batches, held_out, w=WARMUP):
    """Each training from the seed's start on the batches: its held-out loss after training,
    as a share of always answering 0's."""
    x_held, y_held = held_out
    after = []
    for _, peak, warmup, _ in runs:
        stack = starting_stack(seed)
        train(stack, peak, warmup, batches, w)
        with torch.no_grad():
            after.append((F.mse_loss(stack(x_held), y_held) / y_held.pow(2).mean()).item())
    return after


def trained(loss):
    return loss < TRAINED


def broke(loss):
    return not loss <= BROKE  # not a number counts as broken


def not_universal(after):
    """The belief is refuted by a training that broke with warm-up and one fine without it."""
    warmups = [warmup for _, _, warmup, _ in RUNS]
    return (any(broke(loss) and warmup for loss, warmup in zip(after, warmups, strict=True))
            and any(trained(loss) and not warmup for loss, warmup in zip(after, warmups, strict=True)))


def warmup_rescues(after):
    """The same peak rate: broke without warm-up, trained with it."""
    by_run = {(peak, warmup): loss for loss, (_, peak, warmup, _) in zip(after, RUNS, strict=True)}
    return any(broke(by_run[peak, False]) and trained(by_run[peak, True])
               for peak, warmup in by_run if warmup and (peak, False) in by_run)


DESCRIPTION = ("Four trainings that differ only in the peak rate and the warm-up: one breaks with warm-up, one is "
               "fine without it, one is rescued by it (Week 2, section 7).")
KNOBS = [knob("--warmup", type=int_range(1, STEPS - 1), default=WARMUP, help=f"w, the warm-up's steps (of {STEPS})"),
         knob("--seed", type=SEED, default=42, help="torch seed of the starting weights, batches and directions")]
TRY_IT = [("--warmup 1", "a warm-up of one step is none: the two higher-rate trainings are the same, and the rescue "
           "verdict turns"),
          ("--warmup 5", "a warm-up of 5 steps already rescues the higher rate, and still cannot carry ten times it"),
          ("--seed 7", "another start, other batches and directions: the same four outcomes")]


LESSON = Lesson(__file__, page=("week2", 7), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
