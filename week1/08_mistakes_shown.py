"""The Week 1 page's "Mistakes people make", each tested by an experiment.

Page: Week 1, the Warning boxes of sections 2 to 7. For each misconception that a
computation can refute: the belief, the experiment that tests it, what happened, and a
verdict computed from the result (not asserted by a print). The script exits 1 if any
experiment contradicts the page.

Bullets left out because no computation settles them: what a weight "explains", whether
heads find readable roles, and the exam-wording ones ("seq2seq means two RNNs", "long
sentences always get worse").
Setup: np.random.default_rng(42) / torch.manual_seed(42); small random sizes.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED  # noqa: E402
from common.maths import softmax  # noqa: E402
from common.printing import n_params, vec  # noqa: E402
from common.report import Ledger  # noqa: E402


def self_attention(X, W_Q, W_K, W_V):
    """Single-head self-attention, no positions: softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return softmax(Q @ K.T / np.sqrt(K.shape[1]), axis=-1) @ V


def main():
    parser = argparse.ArgumentParser(
        description="Week 1's 'Mistakes people make', refuted (or not) by experiment.",
        epilog="Try it: --seed 1 (different random inputs, same verdicts).")
    parser.add_argument("--seed", type=SEED, default=42, help="seed for the random inputs (42)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    ledger = Ledger()
    print("Week 1: mistakes people make, tested")

    # Section 2: the weights are over the source positions.
    T_target, T_source, d = 3, 4, 5
    S, H = rng.standard_normal((T_target, d)), rng.standard_normal((T_source, d))
    alpha = softmax(S @ H.T, axis=-1)  # [T_target, T_source]: one row per decoder step
    ledger.belief(1, "attention weights are spread over the decoder states",
                  f"score {T_target} decoder steps against {T_source} encoder states; softmax per step",
                  f"alignment table {list(alpha.shape)} = [T_target, T_source]; every row sums to 1 over the "
                  f"{T_source} source positions: {np.allclose(alpha.sum(1), 1)}",
                  alpha.shape == (T_target, T_source) and np.allclose(alpha.sum(1), 1))

    # Section 3: the weighted sum is over the values.
    q, k, v = np.array([1.0]), np.zeros((2, 1)), np.array([[1.0, 0.0], [0.0, 2.0]])
    weights = softmax(k @ q)
    z, keys_mix = weights @ v, weights @ k
    ledger.belief(2, "the output is a weighted sum of the keys",
                  "the notes' example q = 1, k_1 = k_2 = 0, v_1 = [1, 0], v_2 = [0, 2]",
                  f"weights {weights.tolist()}; output {z.tolist()}; a sum of keys would be {keys_mix.tolist()}",
                  np.allclose(z, [0.5, 1.0]) and not np.allclose(z, keys_mix[0]))

    X = rng.standard_normal((5, 8))  # 5 tokens, width 8, no positional information
    W_Q, W_K, W_V = (rng.standard_normal((8, 8)) for _ in range(3))
    A = softmax((X @ W_Q) @ (X @ W_K).T / np.sqrt(8), axis=-1)  # [query, key]
    rows, cols = A.sum(axis=1), A.sum(axis=0)
    ledger.belief(3, "softmax normalizes over the queries",
                  "5 tokens: sum the weight matrix along each row (one query) and each column (one key)",
                  f"row sums {rows.min():.6f}..{rows.max():.6f}; column sums {cols.min():.4f}..{cols.max():.4f}",
                  np.allclose(rows, 1) and not np.allclose(cols, 1))

    perm = rng.permutation(5)
    out, out_shuffled = self_attention(X, W_Q, W_K, W_V), self_attention(X[perm], W_Q, W_K, W_V)
    ledger.belief(4, "self-attention alone can tell word order",
                  f"shuffle the 5 input rows (order {perm.tolist()}) and attend again",
                  f"output rows are the old output rows in the new order: {np.allclose(out_shuffled, out[perm])}",
                  np.allclose(out_shuffled, out[perm]))

    # Section 4: what scaling by sqrt(d_k) does and does not do.
    d_k = 64
    scores = rng.standard_normal(6) * np.sqrt(d_k)  # raw scores with variance d_k
    raw, scaled = softmax(scores), softmax(scores / np.sqrt(d_k))
    same_order = (np.argsort(raw) == np.argsort(scaled)).all()
    ledger.belief(5, "scaling by sqrt(d_k) makes every row uniform",
                  f"6 raw scores of variance {d_k}; softmax before and after dividing by sqrt({d_k})",
                  f"weights {vec(raw, 3)} -> {vec(scaled, 3)}; "
                  f"order kept: {same_order}; uniform would be {1 / 6:.3f} each",
                  same_order and not np.allclose(scaled, 1 / 6, atol=0.01))
    ledger.belief(6, "scaling is what makes each row sum to 1",
                  "sum the softmax weights with and without the scaling",
                  f"unscaled sum {raw.sum():.6f}; scaled sum {scaled.sum():.6f}",
                  np.isclose(raw.sum(), 1) and np.isclose(scaled.sum(), 1))
    k_big = rng.standard_normal((6, d_k))
    q_big = 4 * k_big[0]  # a query strongly aligned with key 1, as trained projections can make it
    top = softmax(k_big @ q_big / np.sqrt(d_k)).max()
    ledger.belief(7, "after scaling, softmax can no longer saturate",
                  "a query aligned with one key (q = 4 k_1), d_k = 64, scaled scores",
                  f"largest weight {top:.6f}",
                  top > 0.99)
    mha_scaled = nn.MultiheadAttention(64, 8, device="meta")
    ledger.belief(8, "scaling adds parameters or changes a shape",
                  "shapes of scores before and after dividing by sqrt(d_k); what the division needs",
                  f"shape {scores.shape} -> {(scores / np.sqrt(d_k)).shape}; the divisor is the constant "
                  f"sqrt(d_k) = {np.sqrt(d_k):g}; torch's MHA (64, 8 heads) holds {n_params(mha_scaled):,} "
                  f"parameters = 4 d^2 + 4 d = {4 * 64 * 64 + 4 * 64:,}, none for the scale",
                  (scores / np.sqrt(d_k)).shape == scores.shape and n_params(mha_scaled) == 4 * 64 * 64 + 4 * 64)

    # Section 5 and 7: heads do not add weights at fixed d_model.
    counts = {h: n_params(nn.MultiheadAttention(512, h, device="meta")) for h in (1, 2, 4, 8, 16)}
    ledger.belief(9, "more heads mean more weights",
                  "count torch's MultiheadAttention(512, h) parameters for h = 1, 2, 4, 8, 16",
                  "; ".join(f"h={h}: {n:,}" for h, n in counts.items()),
                  len(set(counts.values())) == 1)

    # Section 6: the FFN works on each position alone; layers do not share weights.
    ffn = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))
    tokens = torch.randn(5, 8)
    changed = tokens.clone()
    changed[2] += 1.0  # change token 3 only
    with torch.no_grad():
        moved = (ffn(changed) - ffn(tokens)).abs().amax(dim=1) > 0  # which outputs changed
    ledger.belief(10, "the FFN looks at neighbouring tokens",
                  "change token 3 of 5 and run the FFN again",
                  f"outputs that changed: {[i + 1 for i in range(5) if moved[i]]}",
                  moved.tolist() == [False, False, True, False, False])
    stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32), 6, enable_nested_tensor=False)
    W_1, W_2 = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight  # torch starts them as copies
    before = W_2.clone()
    with torch.no_grad():
        W_1.add_(0.1)  # a training update to layer 1 only
    ledger.belief(11, "identical layers share weights",
                  "build a 6-layer torch encoder, update layer 1's W_1, look at layer 2's; count the stack",
                  f"layer 2 unchanged: {torch.equal(W_2, before)}; "
                  f"total {n_params(stack):,} = 6 x {n_params(stack.layers[0]):,}",
                  torch.equal(W_2, before) and n_params(stack) == 6 * n_params(stack.layers[0]))

    # Section 7: attention is not linear in length.
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    entries = {}
    for T in (12, 24, 48):
        x = torch.zeros(4, T, 8)
        _, w = mha(x, x, x, average_attn_weights=False)  # [B, h, T, T]
        entries[T] = w.numel()
    ledger.belief(12, "attention cost grows linearly with length",
                  "count score entries B h T^2 in torch's weights for B = 4, h = 2, T = 12, 24, 48",
                  "; ".join(f"T={T}: {n:,}" for T, n in entries.items()),
                  entries[24] == 4 * entries[12] and entries[48] == 4 * entries[24])
    return ledger.finish()


if __name__ == "__main__":
    sys.exit(main())
