"""Why divide by sqrt(d_k): the variance of a dot product grows like d_k.

Page: Week 1, section 4 "Why divide by sqrt(d_k)", executed evidence 02_dot_product_variance.

If the d_k entries of q and k are independent with mean 0 and variance 1, then
q.k = sum_i q_i k_i adds d_k terms of variance 1, so Var(q.k) = d_k. Dividing the score by
sqrt(d_k) divides its variance by d_k, back to about 1, whatever the width.

Setup (the pages' own, reproduced exactly): one np.random.default_rng(42) for the whole
loop; for each d_k, q then k, each standard_normal((20000, d_k)); Var is the population
variance (.var()) of the 20,000 row-wise dot products. Drawing all the q's first, or
using the sample variance (ddof=1), prints other last digits.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED, check_size, int_range, lesson_parser

import numpy as np


def main():
    parser = lesson_parser(__file__, "Var(q.k) grows like d_k; scaling by sqrt(d_k) brings it back "
                           "to about 1 (Week 1, section 4).", try_it=[
                               ("--pairs 200", "fewer pairs: noisier estimates, the same trend"),
                               ("--d-k 1 2 512 1024", "wider heads: the raw variance keeps growing, the "
                                "scaled one does not"),
                               ("--seed 0", "other random vectors: other last digits, same story")])
    parser.add_argument("--seed", type=SEED, default=42, help="seed of the NumPy generator")
    parser.add_argument("--pairs", type=int_range(2, 100_000), default=20_000,
                        help="random (q, k) pairs per row")
    parser.add_argument("--d-k", type=int_range(1, 1024), nargs="+", default=[4, 16, 64, 256],
                        help="widths to try")
    args = parser.parse_args()
    check_size(parser, numbers=args.pairs * max(args.d_k), work=args.pairs * sum(args.d_k),
               knobs=("--pairs", "--d-k"))

    rng = np.random.default_rng(args.seed)
    print(f"{args.pairs:,} random pairs (q, k) per row; Var(q.k) is how widely their dot products spread, "
          "target is what theory says (d_k), scaled_var is Var(q.k) / d_k:")
    for d_k in args.d_k:
        q = rng.standard_normal((args.pairs, d_k))  # [pairs, d_k], mean 0, variance 1
        k = rng.standard_normal((args.pairs, d_k))  # [pairs, d_k]
        dots = (q * k).sum(axis=1)  # [pairs]: one raw score q.k per pair
        var = dots.var()
        scaled_var = var / d_k  # Var(q.k / sqrt(d_k)) = Var(q.k) / d_k
        print(f"d_k={d_k:3d} Var(q.k)={var:8.2f} target={d_k:3d} scaled_var={scaled_var:.3f}")
    # The raw variance tracks d_k; after dividing the scores by sqrt(d_k) it stays near 1,
    # so softmax sees scores of the same spread whatever the head width.


if __name__ == "__main__":
    main()
