"""Cross-attention: decoder queries read the encoder's output. Every shape, from a real call.

Page: Week 2, section 3 "Cross-attention: the decoder reading the source",
02_cross_attention_shapes.py.

    weights = softmax(Q K^T / sqrt(d_k)),   Q [B, h, T, d_k] from the decoder,
                                            K, V [B, h, S, d_k] from the encoder's output

Queries come from the decoder's T target positions, keys and values from the encoder's
S source positions. So the weight table has one row per target word and one column per
source word: [B, h, T, S]. No causal mask over the source (it is all known already);
only source padding is hidden.

Prints every shape, the rows' sums, the smallest weight on a source word (no mask in this
call), and what source padding does. Setup: the shapes are deterministic; the values (torch.manual_seed(42),
randn) do not matter. Notes: week2/NOTES.md, section 02.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.records import record

import torch
import torch.nn as nn

ROW_SUM = 1e-6  # a row "sums to 1" within this: float32 rounding of its sum is about 1e-7


def lesson(args):
    """Random decoder states read random encoder output through torch's own cross-attention."""
    B, S, T, d, h = args.batch, args.source_len, args.target_len, args.d_model, args.heads
    torch.manual_seed(args.seed)
    decoder_states = torch.randn(B, T, d)  # [B, T, d]: where the queries come from
    memory = torch.randn(B, S, d)  # [B, S, d]: the encoder's final output, the keys' and values' source
    cross = nn.MultiheadAttention(d, h, batch_first=True)
    out, weights = cross(decoder_states, memory, memory, average_attn_weights=False)  # [B, T, d], [B, h, T, S]

    print(f"[B, S, T, d, h] = {[B, S, T, d, h]}")
    print(f"  ({B} sentence pairs, {S} source words, {T} target words, {d} numbers per word, {h} heads)")
    print(f"decoder states (queries)      {list(decoder_states.shape)}")
    print(f"encoder output (keys, values) {list(memory.shape)}")
    print(f"attention weights, all heads  {list(weights.shape)} = [B, h, T, S]")
    record("rows come from the queries, columns from the keys", list(weights.shape) == [B, h, T, S],
           value=str(list(weights.shape)), threshold=f"= [B, h, T, S] = {[B, h, T, S]}")
    print(f"output                        {list(out.shape)}")
    # Rows come from the queries (target), columns from the keys (source): T x S per head.

    row_sums = weights.sum(-1)  # [B, h, T]
    print(f"each row (one target word) sums to 1 over the {S} source words: "
          f"{row_sums.min().item():.6f}..{row_sums.max().item():.6f}")
    worst = (row_sums - 1).abs().max().item()
    record("each row sums to 1 over the source words", worst < ROW_SUM, value=worst,
           threshold="every row within 1e-6 of 1")
    print(f"no mask over the source in this call: the smallest weight on a source word is {weights.min().item():.4f}\n"
          "  (why cross-attention needs no causal mask over the source: week2/11_mistakes_shown.py, belief 6)")

    # Padding is the one thing hidden in the source: pretend the last source word of
    # batch item 1 is padding (with S = 1 that would leave a row with nothing to see).
    if S > 1:
        padding = torch.zeros(B, S, dtype=torch.bool)  # [B, S], True = padding (hidden)
        padding[0, -1] = True
        _, padded = cross(decoder_states, memory, memory, key_padding_mask=padding,
                          average_attn_weights=False)  # [B, h, T, S]
        hidden, sums = padded[0, :, :, -1].abs().max().item(), padded.sum(-1)  # sums [B, h, T]
        print(f"with the last source word of item 1 marked as padding: its weight={hidden};")
        print(f"  rows still sum to {sums.min().item():.6f}..{sums.max().item():.6f}")
        record("source padding gets no weight, rows still sum to 1",
               hidden == 0 and (sums - 1).abs().max().item() < ROW_SUM, value=hidden,
               threshold="the padding's weight exactly 0; rows within 1e-6 of 1")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = "Shapes of cross-attention from a real torch call (Week 2, section 3)."
SIZE = int_range(1, 512)
KNOBS = [knob("--batch", type=SIZE, default=2, help="B, sentence pairs"),
         knob("--source-len", type=SIZE, default=5, help="S, source words"),
         knob("--target-len", type=SIZE, default=3, help="T, target words"),
         knob("--d-model", type=SIZE, default=16, help="d, numbers per word (a multiple of --heads)"),
         knob("--heads", type=SIZE, default=4, help="h, heads (must divide --d-model)"),
         knob("--seed", type=SEED, default=42, help="torch seed")]
TRY_IT = [("--source-len 6 --target-len 3 --heads 1", "the Check-yourself question: a [3, 6] table"),
          ("--heads 8 --d-model 64", "more heads: one T x S table each")]


def limits(args):
    B, S, T, d, h = args.batch, args.source_len, args.target_len, args.d_model, args.heads
    if d % h:
        return f"--d-model {d} is not divisible by --heads {h}"
    return too_big(numbers=2 * B * h * T * S + B * (S + T) * d, work=4 * B * (S + T) * d * d + 4 * B * T * S * d,
                   knobs=("--batch", "--source-len", "--target-len", "--d-model", "--heads"))


LESSON = Lesson(__file__, page=("week2", 3), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
