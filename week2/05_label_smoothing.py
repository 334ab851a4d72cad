"""Label smoothing: the gold word gets about 1 - epsilon, the others share a little.

Page: Week 2, section 7 "Training tricks: label smoothing and the warm-up schedule",
05_label_smoothing.py.

Uniform-mixture rule (what torch's label_smoothing=epsilon uses):
    q_i = (1 - epsilon) [i = y] + epsilon / V
    loss = -sum_i q_i log softmax(z)_i
The other convention gives the gold class exactly 1 - epsilon and spreads epsilon over
the V - 1 others; the two differ, so always say which one you use.

Setup: V = 4, gold index 2, epsilon = 0.1, float32 as torch does by default. The page's
logits are not known: [0.6, 0.1, 1.8, 0.5] is a reconstruction from the page's loss (the
gold logit exceeds the others by 1.2, 1.7 and 1.3; REPRODUCTION.md). Only these gaps
matter, not the logits themselves, up to float32 rounding in the last digit.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import float_range, int_range  # noqa: E402
from common.printing import vec  # noqa: E402


def smoothed_target(V, gold, epsilon):
    """Uniform mixture: (1 - epsilon) on the gold class plus epsilon / V everywhere."""
    q = torch.full((V,), epsilon / V)
    q[gold] += 1 - epsilon
    return q


def gold_exact_target(V, gold, epsilon):
    """The other convention: exactly 1 - epsilon on gold, epsilon / (V - 1) on each other."""
    q = torch.full((V,), epsilon / (V - 1))
    q[gold] = 1 - epsilon
    return q


def main():
    parser = argparse.ArgumentParser(
        description="Label-smoothed cross-entropy by hand vs torch's label_smoothing "
        "(Week 2, section 7).",
        epilog="Try it: --epsilon 0 (plain cross-entropy), --epsilon 0.3, "
        "--logits 0 0 9 0 (sure and right: smoothing still charges for the certainty).")
    parser.add_argument("--logits", type=float, nargs="+", default=[0.6, 0.1, 1.8, 0.5],
                        help="model scores z, one per vocabulary word (0.6 0.1 1.8 0.5)")
    parser.add_argument("--gold", type=int_range(0, 1000), default=2, help="index of the right word (2)")
    parser.add_argument("--epsilon", type=float_range(0.0, 1.0), default=0.1, help="epsilon (0.1)")
    args = parser.parse_args()
    V, gold, epsilon = len(args.logits), args.gold, args.epsilon
    if V < 2 or gold >= V:
        parser.error(f"need at least 2 logits and --gold below their number ({V})")

    z = torch.tensor(args.logits)  # [V], float32
    q = smoothed_target(V, gold, epsilon)
    print(f"V={V}, gold index={gold}, epsilon={epsilon:g}: q_i = (1 - epsilon)[i = y] + epsilon / V")
    print(f"target={vec(q, 3)}; sum={q.sum().item():.3f}")

    hand = -(q * torch.log_softmax(z, dim=-1)).sum()
    by_torch = F.cross_entropy(z[None], torch.tensor([gold]), label_smoothing=epsilon)
    equal = abs(hand.item() - by_torch.item()) <= 1e-6  # agree to float32 rounding
    print(f"hand-built loss={hand.item():.8f}; torch label_smoothing={epsilon:g} loss="
          f"{by_torch.item():.8f}; equal={equal}")
    print(f"plain cross-entropy (no smoothing)={F.cross_entropy(z[None], torch.tensor([gold])).item():.8f}")

    q5 = smoothed_target(5, 2, 0.1)  # the page's hand-check: V = 5, gold 3rd
    print(f"V=5 hand-check, gold 3rd: target={vec(q5, 2)}; sum={q5.sum().item():.2f}")

    other = gold_exact_target(V, gold, epsilon)
    other_loss = -(other * torch.log_softmax(z, dim=-1)).sum()
    print(f"other convention (gold exactly 1 - epsilon): target={vec(other, 3)}; "
          f"loss={other_loss.item():.8f}; equal to torch={abs(other_loss.item() - by_torch.item()) <= 1e-6}")
    # torch's label_smoothing is the uniform mixture: the gold word keeps 1 - epsilon + epsilon/V.


if __name__ == "__main__":
    main()
