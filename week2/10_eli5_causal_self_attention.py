"""The ELI5 page's single-head causal self-attention, run, then split into several heads.

Page: ELI5 Part 3 "One block: mix, then think", first PyTorch snippet ("Each token builds
a query, key, and value ..."), and its claims "each row sums to 1" and "a word can only
look back". Week 2, section 2 has the same mask.

The snippet, as on the page: 4 tokens of width 8; q, k, v from three nn.Linear layers;
scores = q k^T / sqrt(d_k); the future (upper triangle) filled with -inf; softmax over
each row; out = weights @ v. The several-head version splits the same q, k, v into h
heads of width 8 / h, runs the same masked attention in each, concatenates, and blends
the heads with an output projection W_O ("The block blends them all": without W_O each
output number would still come from one head only).

Setup: torch.manual_seed(42) before the snippet (the page draws without a seed); W_O is
an nn.Linear(d_model, d_model) built after the snippet's three.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED, int_range, lesson_parser
from common.printing import vec

import torch
import torch.nn as nn
import torch.nn.functional as F

SHOWN = 8  # rows, numbers per row and heads printed in full; longer ones are shortened


def shown_rows(n):
    """Which of n rows to print: all, or the first SHOWN - 1, a gap (None), and the last."""
    return list(range(n)) if n <= SHOWN else [*range(SHOWN - 1), None, n - 1]


def main():
    parser = lesson_parser(__file__, "The ELI5 single-head causal self-attention snippet, and a "
                           "several-head version (ELI5 Part 3; Week 2, section 2).", try_it=[
                               ("--heads 4", "four heads of width 2: each its own pattern, all causal"),
                               ("--seq 6", "six tokens: a bigger staircase"),
                               ("--seed 1", "other numbers; rows still sum to 1, the future still gets 0")])
    parser.add_argument("--seq", type=int_range(1, 64), default=4, help="number of tokens")
    parser.add_argument("--d-model", type=int_range(1, 512), default=8, help="token width (a multiple of --heads)")
    parser.add_argument("--heads", type=int_range(1, 64), default=2,
                        help="heads in the second part (must divide --d-model)")
    parser.add_argument("--seed", type=SEED, default=42, help="torch seed")
    args = parser.parse_args()
    seq, d_model, h = args.seq, args.d_model, args.heads
    if d_model % h:
        parser.error(f"--d-model {d_model} is not divisible by --heads {h}")
    torch.manual_seed(args.seed)

    # ---- the page's snippet ----
    x = torch.randn(seq, d_model)  # (seq, d_model): the input tokens
    to_q, to_k, to_v = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
    q, k, v = to_q(x), to_k(x), to_v(x)  # each (seq, d_model)
    d_k = q.size(-1)
    scores = q @ k.mT / d_k ** 0.5  # (seq, seq)
    mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)  # True = future
    scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)  # (seq, seq)
    out = weights @ v  # (seq, d_model)

    print(f"x {list(x.shape)} -> q, k, v {list(q.shape)} -> scores {list(scores.shape)} -> out {list(out.shape)}")
    print("weights (row = token, column = the token it looks at):")
    for i in shown_rows(seq):
        print(f"  {vec(weights[i].detach(), shown=SHOWN)}" if i is not None else f"  ... {seq - SHOWN} more rows")
    sums = weights.sum(-1)
    print(f"row sums {sums.min().item():.6f}..{sums.max().item():.6f}; "
          f"weight on the future={weights[mask].sum().item()}")
    # Row 1 can only look at itself (weight 1); the last row may look at everyone.

    # ---- several heads: the same q, k, v, split into h heads of width d_model / h ----
    def split(t):  # (seq, d_model) -> (h, seq, d_model / h)
        return t.view(seq, h, d_model // h).transpose(0, 1)

    qh, kh, vh = split(q), split(k), split(v)
    head_scores = (qh @ kh.mT / (d_model // h) ** 0.5).masked_fill(mask, float("-inf"))  # (h, seq, seq)
    head_weights = F.softmax(head_scores, dim=-1)  # (h, seq, seq): one pattern per head
    heads = head_weights @ vh  # (h, seq, d_model / h)
    concat = heads.transpose(0, 1).reshape(seq, d_model)  # (seq, d_model): same shape as x
    print(f"{h} head{'s' * (h > 1)}: q, k, v split to {list(qh.shape)}; weights {list(head_weights.shape)}; "
          f"concat {list(concat.shape)}")
    for i in range(min(h, SHOWN)):
        w = head_weights[i].detach()
        print(f"head {i + 1}: rows sum to {w.sum(-1).min().item():.6f}..{w.sum(-1).max().item():.6f}; "
              f"weight on the future={w[mask].sum().item()}; last row={vec(w[-1], shown=SHOWN)}")
    if h > SHOWN:
        w = head_weights[SHOWN:].detach()
        print(f"heads {SHOWN + 1}..{h}: rows sum to {w.sum(-1).min().item():.6f}..{w.sum(-1).max().item():.6f}; "
              f"weight on the future={w[:, mask].sum().item()}")
    fused = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)  # torch's own causal kernel
    print(f"max |heads by hand - torch SDPA(is_causal=True)|={(heads - fused).abs().max().item():.8f}")

    W_O = nn.Linear(d_model, d_model)  # blends the heads: every output number reads every head
    blended = W_O(concat)  # (seq, d_model)
    with torch.no_grad():
        W_O.weight[:, d_model // h:] = 0  # cut W_O off from every head but the first ...
    from_head_1 = W_O(concat)
    print(f"W_O blends the {h} heads into {list(blended.shape)}; reading head 1 only, the output "
          f"would differ: {not torch.allclose(blended, from_head_1)}" if h > 1 else
          f"W_O mixes the head's numbers into {list(blended.shape)}")
    print("  (these heads are untrained: random weights, so their patterns are random too; trained heads")
    print("   take roles, one on the previous word, one on the nouns: week1/16_heads_take_roles.py)")
    # Each head has its own weight pattern over the same tokens; all obey the causal rule;
    # W_O then blends what the heads found into each token's new vector.


if __name__ == "__main__":
    main()
