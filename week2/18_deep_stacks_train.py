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
of the stack at the start and the held-out loss after training (beside the band the page's
picture needs), with torch's starting weights and with the sublayers' matrices doubled
(shortcut and both); a verdict on each claim; and what LayerNorm alone did.
Setup (choices; the page gives none): d = 16, f = 32, 12 sublayers; the task: a point's
coordinates along 4 fixed directions; 150 steps of plain gradient descent (torch.optim.SGD,
lr 0.1) on 32 points; float64. Notes: week2/NOTES.md, section 18.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import feed_forward
from common.cli import SEED, Lesson, int_range, knob
from common.printing import readable
from common.records import measured, record, said

import torch
import torch.nn as nn
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
# the stacks: (wiring, formula, shortcut wire, LayerNorm, sublayer matrices times)
STACKS = [("plain", "F(x)", False, False, 1.0), ("shortcut", "x + F(x)", True, False, 1.0),
          ("LayerNorm", "LN(F(x))", False, True, 1.0), ("both", "LN(x + F(x))", True, True, 1.0),
          ("shortcut", "x + F(x)", True, False, DOUBLED), ("both", "LN(x + F(x))", True, True, DOUBLED)]


class Stack(nn.Module):
    """`depth` sublayers F(x) = W_2 relu(W_1 x + b_1) + b_2, each wired x <- F(x), plus x where
    `shortcut`, then LN(...) where `norm`; then a linear read-out."""

    def __init__(self, depth, shortcut, norm):
        super().__init__()
        self.sublayers = nn.ModuleList(feed_forward(D, D_FF) for _ in range(depth))  # F, one per sublayer
        self.norms = nn.ModuleList(nn.LayerNorm(D) for _ in range(depth))  # LN: gamma 1, beta 0, learned
        self.read_out = nn.Linear(D, OUTPUTS)
        self.shortcut, self.norm = shortcut, norm

    def top(self, x):
        """x [N, d] through every sublayer: the numbers at the top of the stack, [N, d]."""
        for sublayer, LN in zip(self.sublayers, self.norms, strict=True):
            y = x + sublayer(x) if self.shortcut else sublayer(x)  # x + F(x): the direct route
            x = LN(y) if self.norm else y  # each point's d numbers: mean 0, variance 1, then gamma, beta
        return x

    def forward(self, x):
        return self.read_out(self.top(x))  # [N, outputs]


def starting_stack(seed, depth, shortcut, norm, times=1.0):
    """The seed's start, as torch's layers draw it (nn.Linear uniform in +-1/sqrt(fan_in)), the
    same for every wiring; its sublayer matrices W_1, W_2 times `times`. Drawn in float64
    (float32 draws widened to float64 made the doubled stacks' trainings hang on the kernels'
    last bits: week2/NOTES.md, section 18)."""
    torch.manual_seed(seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        stack = Stack(depth, shortcut, norm)
    finally:
        torch.set_default_dtype(before)
    with torch.no_grad():
        for sublayer in stack.sublayers:
            sublayer[0].weight.mul_(times)  # W_1
            sublayer[2].weight.mul_(times)  # W_2
    return stack


def points(g, n, directions):
    """n random points x [n, d] and their answers: their coordinates along the directions [n, outputs]."""
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, x @ directions


def train(stack, batches, lr=LR):
    """Plain gradient descent, W <- W - lr dL/dW, on the squared error of every batch."""
    optimizer = torch.optim.SGD(stack.parameters(), lr=lr)
    for x, y in batches:
        optimizer.zero_grad()
        F.mse_loss(stack(x), y).backward()
        optimizer.step()


def train_and_measure(seed, depth, stacks, batches, held_out):
    """Each stack from the seed's start, trained on the batches: the size (RMS) of the numbers
    at its top before any step, and its held-out loss after, as a share of always answering 0's."""
    x_held, y_held = held_out
    results = []
    for _, _, shortcut, norm, times in stacks:
        stack = starting_stack(seed, depth, shortcut, norm, times)
        with torch.no_grad():
            top = stack.top(x_held).pow(2).mean().sqrt().item()
        train(stack, batches)
        with torch.no_grad():
            left = (F.mse_loss(stack(x_held), y_held) / y_held.pow(2).mean()).item()
        results.append({"top": top, "left": left})
    return results


def trains(result):
    return result["left"] < TRAINS


def stuck(result):
    return not result["left"] <= STUCK  # not a number (blown up) counts as stuck


def page_says_it_trains(shortcut, norm, times):
    """The page's picture of a stack: from torch's start the ones with shortcuts train; with
    the matrices doubled, only the ones with LayerNorm too."""
    return shortcut if times == 1.0 else norm


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
    g = torch.Generator().manual_seed(args.seed + 1)  # the batches, the same for every stack
    batches = [points(g, BATCH, directions) for _ in range(STEPS)]
    results = train_and_measure(args.seed, args.depth, STACKS, batches, held_out)
    start = {s[0]: r for s, r in zip(STACKS, results, strict=True) if s[4] == 1.0}
    doubled = {s[0]: r for s, r in zip(STACKS, results, strict=True) if s[4] == DOUBLED}

    print(f"A stack of {args.depth} sublayers F(x) = W_2 relu(W_1 x + b_1) + b_2 (d = {D}, f = {D_FF}), then a "
          f"read-out that")
    print(f"gives a point's coordinates along {OUTPUTS} fixed directions. Each stack takes {STEPS} steps of\n"
          f"W <- W - lr dL/dW, lr = {LR:g}, from the same starting weights,\n"
          f"on the same batches of {BATCH} random points.")
    print(f"\n{'wiring':26}{'size at top':>12}   loss after")
    worlds = {1.0: "torch's starting weights:", DOUBLED: f"sublayer matrices x {DOUBLED:g}:"}
    for (wiring, formula, shortcut, norm, times), r in zip(STACKS, results, strict=True):
        if times in worlds:
            print(worlds.pop(times))  # the first stack of each start
        should_train = page_says_it_trains(shortcut, norm, times)
        band = f"trains: below {TRAINS:g}" if should_train else f"stuck: above {STUCK:g} or nan"
        held = measured(f"held-out loss, {wiring}" + ("" if times == 1.0 else f", matrices x {DOUBLED:g}"),
                        trains(r) if should_train else stuck(r), f"{r['left']:.3f}", band, value=r["left"])
        print(f"{wiring:>9}  {formula:15}{readable(r['top'], 2):>12}   {held}")
    print("  (size at top: the RMS of the numbers after the last sublayer, before any step;\n"
          "   the input's is about 1.\n"
          f"   loss after: {HELD_OUT} held-out points' squared error after training / always answering 0's;\n"
          "   1 is no better than that; nan: not a number, the stack blew up;\n"
          "   in brackets, what the page's picture needs of each stack)")

    helped = shortcuts_help(start)
    print(f"Verdict: shortcuts help a deep stack train (with them the loss ends below {TRAINS:g}, without them\n"
          f"  above {STUCK:g}, with and without LayerNorm): {said(helped)}")
    record("shortcuts help a deep stack train", helped,
           value=", ".join(f"{w} {r['left']:.2f}" for w, r in start.items()),
           threshold=f"shortcut and both below {TRAINS:g}; plain and LayerNorm above {STUCK:g}")
    normalized = normalization_helps(doubled)
    print(f"Verdict: normalization helps when the sublayers change the numbers' size (matrices x {DOUBLED:g}):\n"
          f"  without it the shortcut stack ends above {STUCK:g} or blows up, with it below {TRAINS:g}: "
          f"{said(normalized)}")
    record("normalization helps a deep stack train", normalized,
           value=", ".join(f"{w} {r['left']:.2f}" for w, r in doubled.items()),
           threshold=f"matrices x {DOUBLED:g}: both below {TRAINS:g}; shortcut above {STUCK:g} or not a number")
    alone, same = trains(start["LayerNorm"]), trains(start["shortcut"]) == trains(start["both"])
    print(f"Not the whole story: LayerNorm alone {'trained' if alone else 'did not train'} the plain stack, and "
          f"with torch's starting\n  weights adding it to the shortcuts "
          f"{'changed nothing here (both trained)' if same else 'made the difference'}:\n"
          "  LayerNorm keeps the numbers' size steady; the shortcut is the direct route.")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("A deep stack trained four ways: plain, with shortcuts, with LayerNorm, with both; "
               "and with bigger sublayers (Week 2, the Note and section 6).")
KNOBS = [knob("--depth", type=int_range(2, 24), default=12, help="sublayers in every stack"),
         knob("--seed", type=SEED, default=42, help="torch seed of the starting weights, batches and directions")]
TRY_IT = [("--depth 2", "a shallow stack: every wiring trains, and both verdicts turn"),
          ("--depth 4", "LayerNorm alone trains the plain stack at this depth; at 12 sublayers it no longer does"),
          ("--depth 24", "twice as deep: the shortcut stack blows up even from torch's starting weights; only "
           "shortcut and LayerNorm together train"),
          ("--seed 7", "other starting weights, batches and directions: the same picture")]


LESSON = Lesson(__file__, page=("week2", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
