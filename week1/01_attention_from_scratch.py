"""Scaled dot-product attention from scratch in NumPy, checked against PyTorch.

Page: Week 1, section 4 "Why divide by sqrt(d_k)", executed check 01_attention_from_scratch.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Every row of the weight matrix A is one query's distribution over the keys, so it sums
to 1. PyTorch's fused kernel (torch.nn.functional.scaled_dot_product_attention) computes
the same thing; the two differ only by float rounding.

Prints the output's shape and the range of A's row sums, then the largest gap between the
NumPy answer and torch's (rounding noise, judged by the check as such).
Setup (a reconstruction: the page gives the printed lines, not the inputs): the page's
section-3 identity projections, Q = K = V = x, x = np.random.default_rng(42) standard
normals of shape [B, h, T, d_k] = [1, 2, 3, 4] in float32. Notes: week1/NOTES.md, section 01.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.maths import softmax
from common.records import record

import numpy as np
import torch
import torch.nn.functional as F

ROW_SUM = 1e-6  # a row "sums to 1" within this: float32 rounding of T numbers is about 1e-7


def attention(Q, K, V):
    """softmax(Q K^T / sqrt(d_k)) V for Q [..., T_q, d_k], K [..., T_k, d_k], V [..., T_k, d_v]."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # [..., T_q, T_k]
    A = softmax(scores, axis=-1)  # softmax over the keys, one row per query
    return A @ V, A  # Z [..., T_q, d_v], A [..., T_q, T_k]


def lesson(args):
    """The formula on random words, its rows' sums, and the same computed by torch."""
    B, h, T, d_k = args.batch, args.heads, args.tokens, args.d_k
    x = np.random.default_rng(args.seed).standard_normal((B, h, T, d_k)).astype(np.float32)  # [B, h, T, d_k]
    Q = K = V = x  # identity projections: each word is its own query, key and value

    Z, A = attention(Q, K, V)  # Z [B, h, T, d_k], A [B, h, T, T]
    row_sums = A.sum(axis=-1)  # [B, h, T]
    print(f"attention shape={Z.shape}; row-sum range={row_sums.min():.6f}..{row_sums.max():.6f}")
    print(f"  (output Z = A V is [B, h, T, d_k] = [{B}, {h}, {T}, {d_k}];\n"
          "   each row of the weights A adds up to 1, smallest and largest shown)")
    worst = np.abs(row_sums - 1).max()
    record("every softmax row sums to 1", worst < ROW_SUM, value=worst, threshold="every row within 1e-6 of 1")

    x32 = torch.from_numpy(x)
    Z_torch = F.scaled_dot_product_attention(x32, x32, x32)  # [B, h, T, d_k], float32
    print(f"max |NumPy - torch SDPA|={np.abs(Z - Z_torch.numpy()).max():.8f}")
    print("  (the largest gap between the two answers: float32 rounding, about 1e-7 at these sizes)")
    # Same numbers up to float32 rounding: the formula above is all SDPA does when there
    # is no mask and no dropout. (run_all judges a `max |...|=` line by its noise ceiling.)


# ---------------------------------------------------------------- optional: knobs and Try it

SIZE = int_range(1, 512)
KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the NumPy generator"),
         knob("--batch", type=SIZE, default=1, help="B, sentences"),
         knob("--heads", type=SIZE, default=2, help="h, heads"),
         knob("--tokens", type=SIZE, default=3, help="T, words per sentence"),
         knob("--d-k", type=SIZE, default=4, help="d_k, numbers per word in each head")]
TRY_IT = [("--seed 7", "other random words: the rows still sum to 1, the gap stays at rounding level"),
          ("--tokens 9 --d-k 64", "longer sentence, wider heads: same story")]


def limits(args):
    B, h, T, d_k = args.batch, args.heads, args.tokens, args.d_k
    return too_big(numbers=B * h * T * max(T, d_k), work=2 * B * h * T * T * d_k,
                   knobs=("--batch", "--heads", "--tokens", "--d-k"))


DESCRIPTION = "Scaled dot-product attention in NumPy vs torch's SDPA (Week 1, section 4)."
LESSON = Lesson(__file__, page=("week1", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
