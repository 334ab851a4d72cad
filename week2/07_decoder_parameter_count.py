"""Counting one Transformer decoder layer, and the output layer, by formula and by torch.

Page: Week 2, section 4 "The decoder's output layer and counting parameters",
07_decoder_parameter_count.py.

A decoder layer has two full-width attention blocks (masked self-attention and
cross-attention), one feed-forward net and three LayerNorms:
    attention (x2) = 2 (4 d^2 + 4 d)     W^Q, W^K, W^V, W^O [d, d] and biases, twice
    feed-forward   = 2 d f + f + d       W_1 [d, f], W_2 [f, d], b_1, b_2
    3 LayerNorms   = 6 d                 gamma and beta [d] each
The output layer maps each position's d numbers to V vocabulary scores: d x V weights,
plus V with a bias.

Prints the page's table (its tiny layer, then the real one) beside torch's counts, the
formula against torch, six layers, what a decoder layer adds to an encoder layer, and the
output layer. Setup: torch's modules are built on the "meta" device (shapes only), so
any size counts instantly. Notes: week2/NOTES.md, section 07.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import Lesson, int_range, knob
from common.printing import n_params
from common.records import record

import torch.nn as nn


def decoder_layer_params(d, f):
    """(attention x2, feed-forward, 3 LayerNorms) counts of one decoder layer."""
    attention = 2 * (4 * d * d + 4 * d)
    ffn = 2 * d * f + f + d
    norms = 3 * 2 * d
    return attention, ffn, norms


def lesson(args):
    """The page's table (its tiny layer and the real one), torch's counts, six layers, the output layer."""
    d, f, h, V = args.d_model, args.d_ff, args.heads, args.vocab
    print("N_layer = 2 (4d^2 + 4d) + (2df + f + d) + 6d")
    print(f"{'size':<16}{'attention (x2)':>16}{'feed-forward':>14}{'3 LayerNorms':>14}"
          f"{'total':>12}{'torch count':>13}")
    for size_d, size_f, size_h in ((4, 8, 1), (d, f, h)):  # the page's tiny layer, then the real one
        attention, ffn, norms = decoder_layer_params(size_d, size_f)
        counted = n_params(nn.TransformerDecoderLayer(size_d, size_h, size_f, device="meta"))
        print(f"{f'd={size_d}, f={size_f}':<16}{attention:>16,}{ffn:>14,}{norms:>14,}"
              f"{attention + ffn + norms:>12,}{counted:>13,}")

    total = sum(decoder_layer_params(d, f))
    layer = nn.TransformerDecoderLayer(d, h, f, device="meta")
    counted = n_params(layer)
    print(f"decoder layer formula={total:,}; torch count={counted:,}; equal={total == counted}")
    record("the formula counts torch's decoder layer", total == counted, value=counted,
           threshold=f"= {total:,}, 2(4d^2 + 4d) + (2df + f + d) + 6d")

    stack = n_params(nn.TransformerDecoder(layer, args.layers))  # deep copies: each layer its own weights
    print(f"{args.layers} layers={stack:,}; {args.layers} x {total:,}={args.layers * total:,}; "
          f"equal={stack == args.layers * total}")
    print("  (embeddings and the output layer not included)")
    record("every decoder layer has its own weights", stack == args.layers * total, value=stack,
           threshold=f"= {args.layers} x {total:,}")

    extra = counted - n_params(nn.TransformerEncoderLayer(d, h, f, device="meta"))
    cross, norm3 = n_params(layer.multihead_attn), n_params(layer.norm3)  # what the encoder layer lacks
    print(f"decoder layer - encoder layer={extra:,};")
    print(f"  torch's cross-attention block {cross:,} (4d^2+4d={4 * d * d + 4 * d:,})")
    print(f"  + its third LayerNorm {norm3:,} (2d={2 * d:,}) = {cross + norm3:,}; equal={extra == cross + norm3}")
    record("the decoder's extra is cross-attention and a third LayerNorm", extra == cross + norm3, value=extra,
           threshold=f"= {cross + norm3:,}, the cross-attention block and LN3")

    out_layer = nn.Linear(d, V, device="meta")  # [B, T, d] -> [B, T, V]
    print(f"output layer d x V={d:,} x {V:,}={d * V:,} weights;")
    print(f"  with a bias {d * V + V:,} (torch nn.Linear count {n_params(out_layer):,})")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("Decoder-layer parameter formula vs torch's TransformerDecoderLayer, six layers, and the output layer "
               "(Week 2, section 4).")
KNOBS = [knob("--d-model", type=int_range(1, 8192), default=512, help="d, numbers per word (a multiple of --heads)"),
         knob("--d-ff", type=int_range(1, 32768), default=2048, help="f, the FFN's hidden width"),
         knob("--heads", type=int_range(1, 128), default=8,
              help="h, heads (must divide --d-model; does not change the count)"),
         knob("--layers", type=int_range(1, 48), default=6, help="decoder layers"),
         knob("--vocab", type=int_range(1, 10**6), default=37_000, help="V, vocabulary size")]
TRY_IT = [("--d-model 768 --d-ff 3072 --heads 12", "BERT-base widths in a decoder layer"),
          ("--vocab 50257", "GPT-2's vocabulary: a much bigger output layer"),
          ("--layers 12", "twelve layers: twelve times the layer count")]


def heads_divide(args):
    return f"--d-model {args.d_model} is not divisible by --heads {args.heads}" if args.d_model % args.heads else None


LESSON = Lesson(__file__, page=("week2", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=heads_divide)


def main(argv=None):
    return lesson(LESSON.args(argv))
    # The course shorthand "about 4M per layer" is this count rounded.


if __name__ == "__main__":
    run(main)
