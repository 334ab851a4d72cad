"""Counting the learnable numbers in one Transformer encoder layer, by formula and by torch.

Page: Week 1, section 7 "Counting the learnable numbers (parameters)", executed in
04_encoder_parameter_count.

With d = d_model and f = d_ff, fully counted (as PyTorch does):
    MHA    = 4 d^2 + 4 d         W^Q, W^K, W^V, W^O, each [d, d], and their biases
    FFN    = 2 d f + f + d       W_1 [d, f], W_2 [f, d], b_1 [f], b_2 [d]
    norms  = 2 * 2 d             two LayerNorms, each with gamma [d] and beta [d]
    layer  = 4 d^2 + 2 d f + f + 9 d
The number of heads does not appear: h heads of width d/h still total d^2 per projection.

Prints the three parts and their sum beside torch's own count, the count at another head
count, a stack of layers, and how much bigger the FFN is than attention.
Setup: torch's modules are built on the "meta" device (shapes only, no memory, no random
draws), so any size counts instantly. Notes: week1/NOTES.md, section 04.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import Lesson, int_range, knob
from common.printing import n_params
from common.records import record

import torch.nn as nn

ABOUT_TWICE = (1.9, 2.1)  # the page's "about twice" (FFN / MHA), at its shape f = 4d: 2.00 at d = 512


def encoder_layer_params(d, f):
    """(MHA, FFN, two LayerNorms) parameter counts of one post-norm encoder layer."""
    mha = 4 * d * d + 4 * d
    ffn = 2 * d * f + f + d
    norms = 2 * 2 * d
    return mha, ffn, norms


def torch_count(d, h, f):
    """Learnable numbers in torch's own encoder layer (built on "meta": shapes only)."""
    return n_params(nn.TransformerEncoderLayer(d, h, f, device="meta"))


def encoder_stack(d, h, f, layers):
    """torch's encoder of `layers` layers (built on "meta"): it deep-copies the layer it is given."""
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, f, device="meta"), layers, enable_nested_tensor=False)


def lesson(args):
    """The page's count, then what it says about heads, stacks and the FFN's share."""
    d, f, h = args.d_model, args.d_ff, args.heads
    mha, ffn, norms = encoder_layer_params(d, f)
    total, counted = mha + ffn + norms, torch_count(d, h, f)
    print(f"MHA formula={mha:,}; FFN formula={ffn:,}; two LayerNorms={norms:,}")
    print(f"encoder-layer formula={total:,}; torch count={counted:,}; equal={total == counted}")
    record("the formula counts torch's encoder layer", total == counted, value=counted,
           threshold=f"= {total:,}, 4d^2 + 2df + f + 9d")
    if (d, f) == (512, 2048):  # the shorthand is about the paper's base layer only
        print(f"Course shorthand: about {total / 1e6:.2f}M with FFN biases; "
              "original paper's base layer count is approximate.")

    other_h = 1 if h != 1 else d  # one wide head, or (for h = 1) d heads of width 1
    other = torch_count(d, other_h, f)
    print(f"heads: h={h} (each head {d // h} wide) counts {counted:,};\n"
          f"       h={other_h} (each head {d // other_h} wide) counts {other:,}; same: {counted == other}")
    print("  (h heads of width d/h still make d x d numbers per projection, so h is not in the formula)")
    record("the head count is not in the count", counted == other, value=other,
           threshold=f"= {counted:,}, the count with h={h}")

    stack = n_params(encoder_stack(d, h, f, args.layers))  # a tensor shared by two layers would count once
    print(f"{args.layers} layers={stack:,}; {args.layers} x {total:,}={args.layers * total:,}; "
          f"equal={stack == args.layers * total} (every layer has its own weights)")
    record("every layer has its own weights", stack == args.layers * total, value=stack,
           threshold=f"= {args.layers} x {total:,}")

    ratio = ffn / mha
    print(f"FFN / MHA={ratio:.2f} (the FFN holds {ratio:.2f} times as many numbers as attention)")
    # The page's "about twice" is about the paper's shape, f = 4d; other shapes do not test it.
    low, high = ABOUT_TWICE
    record("the FFN holds about twice attention's numbers", low <= ratio <= high if f == 4 * d else None,
           value=ratio, threshold=f"between {low} and {high} where f = 4d",
           why=None if f == 4 * d else f"f = {f} is not 4d = {4 * d}: the page's \"about twice\" is about f = 4d")
    # The FFN, each token's private "brain", holds about twice the numbers of attention.


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--d-model", type=int_range(1, 8192), default=512, help="d, numbers per word (a multiple of --heads)"),
         knob("--d-ff", type=int_range(1, 32768), default=2048, help="f, the FFN's hidden width"),
         knob("--heads", type=int_range(1, 128), default=8, help="h, heads (must divide --d-model)"),
         knob("--layers", type=int_range(1, 48), default=6, help="layers in the stack")]
TRY_IT = [("--heads 1", "one wide head: the count does not move"),
          ("--heads 16", "sixteen narrow heads: still the same count"),
          ("--d-model 768 --d-ff 3072 --heads 12", "BERT-base sizes")]


def heads_divide(args):
    return f"--d-model {args.d_model} is not divisible by --heads {args.heads}" if args.d_model % args.heads else None


DESCRIPTION = "Encoder-layer parameter formula vs torch's TransformerEncoderLayer count (Week 1, section 7)."
LESSON = Lesson(__file__, page=("week1", 7), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=heads_divide)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
