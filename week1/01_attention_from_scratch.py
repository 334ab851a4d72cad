"""Scaled dot-product attention from scratch in NumPy, checked against PyTorch.

Page: Week 1, section 4 "Why divide by sqrt(d_k)", executed check 01_attention_from_scratch.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Every row of the weight matrix is one query's distribution over the keys, so it sums to 1.
PyTorch's fused kernel (torch.nn.functional.scaled_dot_product_attention) computes the
same thing; the two differ only by float rounding.

Setup (known and reconstructed): one np.random.default_rng(42), Q then K then V drawn with
standard_normal, NumPy in float64, torch on float32 copies (the pages' habit, see
REPRODUCTION.md). The page does not give the shapes: 1 batch, 2 heads, 3 queries
attending to 4 keys, d_k = 6, is a reconstruction that prints both of the page's lines;
the printed shape is that of the attention weights [B, h, T_q, T_k]. The max |...| line
is rounding noise and may move by a unit or two on another CPU.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED, int_range  # noqa: E402
from common.maths import softmax  # noqa: E402


def attention(Q, K, V):
    """softmax(Q K^T / sqrt(d_k)) V for Q [..., T_q, d_k], K [..., T_k, d_k], V [..., T_k, d_v]."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # [..., T_q, T_k]
    weights = softmax(scores, axis=-1)  # softmax over the keys, one row per query
    return weights @ V, weights  # [..., T_q, d_v], [..., T_q, T_k]


def main():
    parser = argparse.ArgumentParser(
        description="Scaled dot-product attention in NumPy vs torch's SDPA (Week 1, section 4).",
        epilog="Try it: --seed 7, or --queries 5 --keys 9 --d-k 64; the rows still sum to 1 "
        "and the difference stays at rounding level.")
    size = int_range(1, 256)
    parser.add_argument("--seed", type=SEED, default=42, help="seed of the NumPy generator (42)")
    parser.add_argument("--batch", type=size, default=1, help="B (1)")
    parser.add_argument("--heads", type=size, default=2, help="h (2)")
    parser.add_argument("--queries", type=size, default=3, help="T_q, number of queries (3)")
    parser.add_argument("--keys", type=size, default=4, help="T_k, number of keys and values (4)")
    parser.add_argument("--d-k", type=size, default=6, help="width of a query/key/value (6)")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    Q = rng.standard_normal((args.batch, args.heads, args.queries, args.d_k))  # [B, h, T_q, d_k]
    K = rng.standard_normal((args.batch, args.heads, args.keys, args.d_k))  # [B, h, T_k, d_k]
    V = rng.standard_normal((args.batch, args.heads, args.keys, args.d_k))  # [B, h, T_k, d_v]

    out, weights = attention(Q, K, V)
    row_sums = weights.sum(axis=-1)
    print(f"attention shape={weights.shape}; row-sum range={row_sums.min():.6f}..{row_sums.max():.6f}")

    Q32, K32, V32 = (torch.from_numpy(a.astype(np.float32)) for a in (Q, K, V))
    out_torch = F.scaled_dot_product_attention(Q32, K32, V32)  # [B, h, T_q, d_v]
    print(f"max |NumPy - torch SDPA|={np.abs(out - out_torch.numpy()).max():.8f}")
    # Same numbers up to float32 rounding (about 1e-7): the formula above is all SDPA does
    # when there is no mask and no dropout.


if __name__ == "__main__":
    main()
