"""Multi-head attention by hand, shape by shape, checked against torch.nn.MultiheadAttention.

Page: Week 1, section 5 "Several readers at once (multi-head attention and W^O)",
executed shape check 03_multihead_shape_check.

    MHA(X) = Concat(H_1, ..., H_h) W^O,   H_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i

With d_model = 16 and h = 4 heads, each head works in d_k = d_model / h = 4 dimensions;
the 4 heads of width 4 concatenate back to width 16, and W^O [16, 16] mixes them.

Prints the input's, the heads' and the concatenation's shapes, and the largest gap between
the hand-built layer and torch's module (rounding noise).
Setup (prints the page's lines; not proven to be the original): torch.manual_seed(42),
then x = torch.randn(2, 5, 16), then the module, whose own weights the hand-built layer
re-uses. Notes: week1/NOTES.md, section 03.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big

import torch
import torch.nn as nn


def split_heads(t, h):
    """[B, T, d_model] -> [B, h, T, d_k]: head i takes numbers i d_k .. (i + 1) d_k - 1 of each word."""
    B, T, d_model = t.shape
    return t.view(B, T, h, d_model // h).transpose(1, 2)


def join_heads(H):
    """[B, h, T, d_k] -> [B, T, h d_k]: Concat(H_1, ..., H_h), the heads side by side."""
    B, h, T, d_k = H.shape
    return H.transpose(1, 2).reshape(B, T, h * d_k)


def multi_head_attention(x, mha):
    """Self-attention of x [B, T, d_model] by hand, with the weights of `mha`.

    Returns the output [B, T, d_model], the per-head outputs [B, h, T, d_k] and their
    concatenation [B, T, d_model]."""
    h = mha.num_heads
    W_Q, W_K, W_V = mha.in_proj_weight.chunk(3)  # each [d_model, d_model]: all heads side by side
    b_Q, b_K, b_V = mha.in_proj_bias.chunk(3)  # each [d_model]
    W_O, b_O = mha.out_proj.weight, mha.out_proj.bias  # [d_model, d_model], [d_model]
    # (torch stores each matrix as [out, in] and computes x @ W.T + b)

    Q = split_heads(x @ W_Q.T + b_Q, h)  # [B, h, T, d_k]
    K = split_heads(x @ W_K.T + b_K, h)  # [B, h, T, d_k]
    V = split_heads(x @ W_V.T + b_V, h)  # [B, h, T, d_k]
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # [B, h, T, T]
    A = torch.softmax(scores, dim=-1)  # [B, h, T, T]: softmax over the keys
    heads = A @ V  # [B, h, T, d_k]: H_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i, one per head
    concat = join_heads(heads)  # [B, T, h * d_k] = [B, T, d_model]
    return concat @ W_O.T + b_O, heads, concat  # [B, T, d_model]


def lesson(args):
    """Random words through the formula, with the shapes on the way, and through torch's layer."""
    torch.manual_seed(args.seed)
    x = torch.randn(args.batch, args.seq_len, args.d_model)  # [B, T, d_model]
    mha = nn.MultiheadAttention(args.d_model, args.heads, batch_first=True)  # its weights: W^Q, W^K, W^V, W^O

    out, heads, concat = multi_head_attention(x, mha)  # [B, T, d_model], [B, h, T, d_k], [B, T, d_model]
    print(f"input [B,T,d_model]=[{','.join(map(str, x.shape))}]")
    print(f"heads [B,h,T,d_k]=[{','.join(map(str, heads.shape))}]; concat={list(concat.shape)}")
    print(f"  ({args.heads} heads, each reading {heads.shape[-1]} of the {args.d_model} numbers per word; "
          f"glued side by side they are {concat.shape[-1]} wide again)")

    reference, _ = mha(x, x, x, need_weights=False)  # [B, T, d_model]: torch's own layer
    print(f"max |manual - torch.nn.MultiheadAttention|={(out - reference).abs().max().item():.8f}")
    print("  (the largest gap between the hand-built layer and torch's: float32 rounding)")
    # h heads of width d_k = d_model / h concatenate back to d_model, the width the
    # residual connection needs; the hand-built layer is the module, up to rounding.
    # (run_all judges a `max |...|=` line by its noise ceiling.)


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--seed", type=SEED, default=42, help="torch seed"),
         knob("--batch", type=int_range(1, 64), default=2, help="B, sentences"),
         knob("--seq-len", type=int_range(1, 512), default=5, help="T, words per sentence"),
         knob("--d-model", type=int_range(1, 1024), default=16, help="d_model, numbers per word (a multiple of "
              "--heads)"),
         knob("--heads", type=int_range(1, 64), default=4, help="h, heads (must divide --d-model)")]
TRY_IT = [("--heads 2", "2 heads of width 8: d_k changes, the concat width does not"),
          ("--heads 8", "8 heads of width 2: still 16 after the concat"),
          ("--d-model 512 --heads 8", "the paper's base sizes: heads of width 64")]


def limits(args):
    B, T, d, h = args.batch, args.seq_len, args.d_model, args.heads
    if d % h:
        return f"--d-model {d} is not divisible by --heads {h}"
    return too_big(numbers=B * h * T * T + 3 * B * T * d, work=8 * B * T * d * d + 2 * B * T * T * d,
                   knobs=("--batch", "--seq-len", "--d-model", "--heads"))


DESCRIPTION = ("Manual multi-head attention vs torch.nn.MultiheadAttention, with the shapes of heads and "
               "concatenation (Week 1, section 5).")
LESSON = Lesson(__file__, page=("week1", 5), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
