"""Why the FFN needs its ReLU: two linear layers in a row are just one linear layer.

Page: Week 1, section 6 "The encoder layer: attention, then a per-word brain (FFN)":
"FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2 ... The ReLU in the middle is what makes two stacked
affine maps more expressive than one."

Without the ReLU the two layers collapse into one, by plain algebra:
    (x W_1 + b_1) W_2 + b_2 = x (W_1 W_2) + (b_1 W_2 + b_2) = x W + b
with W = W_1 W_2 of shape [d_model, d_model] and b = b_1 W_2 + b_2. All the numbers of W_1,
b_1, W_2, b_2 then do no more than the d_model^2 + d_model numbers of W and b. With the
ReLU in between, no single map x W + b can reproduce the FFN: not this W, nor the best one
that least squares can find for the inputs at hand.

Both worlds are torch's own layers, nn.Sequential(nn.Linear(d_model, d_ff), act,
nn.Linear(d_ff, d_model)), sharing the same two Linear layers; act is nn.Identity() in
one world and nn.ReLU() in the other. torch stores a Linear's weight as [out, in], so the
page's W_1 is first.weight transposed.

Prints the two layers' sizes, how far x W + b and the best linear map are from the FFN
on random inputs with and without the ReLU, and a verdict on each claim.
Setup (choices; the page gives no sizes): d_model = 8, d_ff = 32, torch's default
initialisation after torch.manual_seed(42), 1,000 random inputs, float64. Notes:
week1/NOTES.md, section 13.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.records import record, said

import torch
import torch.nn as nn

WORLDS = {"without the ReLU": nn.Identity, "with the ReLU": nn.ReLU}  # what sits between the layers
SAME = 1e-9  # two answers agree if no entry differs by more
MISSES = 0.1  # a best linear fit that misses by more than this cannot stand in for the FFN


def ffn(first, act, second):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, the same weights at every position: `first` widens
    to d_ff, `act` (nn.ReLU or nn.Identity) sits between, `second` folds back to d_model."""
    return nn.Sequential(first, act(), second)


def collapse(first, second):
    """The single linear layer x W + b that two linear layers in a row amount to."""
    W_1, b_1 = first.weight.T, first.bias  # [d_model, d_ff], [d_ff]
    W_2, b_2 = second.weight.T, second.bias  # [d_ff, d_model], [d_model]
    return W_1 @ W_2, b_1 @ W_2 + b_2  # W [d_model, d_model], b [d_model]


def best_linear_miss(X, Y):
    """Relative error of the best map x W + b (least squares) from inputs X to outputs Y."""
    X1 = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1)  # [N, d_model + 1]
    Wb = torch.linalg.lstsq(X1, Y).solution  # [d_model + 1, d_model]: W with b as its last row
    return ((X1 @ Wb - Y).norm() / (Y - Y.mean(dim=0)).norm()).item()


def lesson(args):
    """The same two layers with and without the ReLU, against one linear layer."""
    d_model, d_ff, N = args.d_model, args.d_ff, args.inputs
    torch.set_num_threads(1)  # small matrices: more threads only add waiting
    torch.manual_seed(args.seed)
    first = nn.Linear(d_model, d_ff, dtype=torch.float64)  # x W_1 + b_1
    second = nn.Linear(d_ff, d_model, dtype=torch.float64)  # h W_2 + b_2
    X = torch.randn(N, d_model, dtype=torch.float64)  # [N, d_model]: N random words
    W, b = collapse(first, second)  # [d_model, d_model], [d_model]
    stacked = 2 * d_model * d_ff + d_ff + d_model

    print(f"FFN(x) = act(x W_1 + b_1) W_2 + b_2, W_1 [{d_model}, {d_ff}], W_2 [{d_ff}, {d_model}]: "
          f"{stacked:,} numbers")
    print(f"one linear layer x W + b, W = W_1 W_2 [{d_model}, {d_model}], b = b_1 W_2 + b_2 [{d_model}]: "
          f"{d_model * d_model + d_model:,} numbers")
    print(f"tested on {N:,} random inputs x:")
    gap, miss = {}, {}
    with torch.no_grad():
        for name, act in WORLDS.items():
            Y = ffn(first, act, second)(X)  # [N, d_model]: the same two layers, act in between
            gap[name] = (Y - (X @ W + b)).abs().max().item()
            miss[name] = best_linear_miss(X, Y)
            print(f"  {name + ':':<18} largest |FFN(x) - (x W + b)| = {gap[name]:.6f}; "
                  f"the best linear map misses by {miss[name]:.3f}")
    print("  (misses: 0 = exact, 1 = no better than always answering the average output)")

    linear, relu = WORLDS
    collapses = gap[linear] <= SAME and miss[linear] <= SAME
    print("\nClaim: without the ReLU, two linear layers are one linear layer (W = W_1 W_2 reproduces them).")
    print(f"Verdict: {said(True)}" if collapses else f"Verdict: {said(False)} (x W + b is off by {gap[linear]:.6f})")
    record("without the ReLU the FFN is one linear layer", collapses,
           value=f"off by {gap[linear]:.2g}, best linear miss {miss[linear]:.3f}", threshold=f"both at most {SAME:g}")

    bends = miss[relu] > MISSES
    print(f"Claim: with the ReLU, no linear map reproduces the FFN (the best one misses by more "
          f"than {MISSES:g}).")
    print(f"Verdict: {said(True)}" if bends else
          f"Verdict: {said(False)} (a linear map comes within {miss[relu]:.3f})")
    record("with the ReLU no linear map reproduces the FFN", bends, value=miss[relu],
           threshold=f"the best linear map misses by more than {MISSES:g}")
    # The ReLU bends the map: it zeroes each hidden number below 0 and keeps the rest, so
    # the FFN can treat different inputs differently; a stack of linear maps cannot.


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--seed", type=SEED, default=42, help="torch seed for the weights and inputs"),
         knob("--d-model", type=int_range(1, 512), default=8,
              help="d_model, numbers per word (--inputs must be at least 2 x (d_model + 1))"),
         knob("--d-ff", type=int_range(1, 4096), default=32, help="d_ff, width of the hidden layer"),
         knob("--inputs", type=int_range(2, 100_000), default=1000,
              help="random inputs x (at least 2 x (--d-model + 1))")]
TRY_IT = [("--seed 7", "other weights and inputs: same verdicts"),
          ("--d-model 64 --d-ff 256", "wider layers: 33,088 numbers collapse to 4,160 without the ReLU; with it, "
           "still no linear map fits"),
          ("--d-model 1 --d-ff 4", "one number in, one out: the ReLU FFN is a bent line that no straight line fits")]


def limits(args):
    d_model, d_ff, N = args.d_model, args.d_ff, args.inputs
    if N < 2 * (d_model + 1):
        return (f"--inputs must be at least 2 x (--d-model + 1) = {2 * (d_model + 1)}, so that a linear map cannot "
                "fit them just by having enough numbers")
    return too_big(numbers=N * max(d_ff, d_model + 1),
                   work=4 * N * d_model * d_ff + d_model * d_model * d_ff + 2 * N * (d_model + 1) ** 2,
                   knobs=("--inputs", "--d-model", "--d-ff"))


DESCRIPTION = "Two linear layers are one linear layer; the ReLU between them breaks that (Week 1, section 6)."
LESSON = Lesson(__file__, page=("week1", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
