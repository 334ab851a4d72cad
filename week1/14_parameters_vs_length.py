"""Parameters do not grow with sentence length; activations do, and the scores like T^2.

Page: Week 1, section 7 "Counting the learnable numbers (parameters)": "Weights only:
4d^2 + 2df. Fully counted (as PyTorch does): 4d^2 + 2df + f + 9d." And: "Length does not
matter for the layer's weights: a longer sentence changes activations and compute, not
shared projection weights", "Score entries for a dense layer: B h T^2 ... Doubling T
quadruples the score entries", "Attention is not linear in length".

    weight matrices:  W^Q, W^K, W^V, W^O [d, d] each, W_1 [d, f], W_2 [f, d]  -> 4d^2 + 2df
    plus biases:      4d (attention) + f + d (FFN); plus two LayerNorms 4d   -> + f + 9d

Prints torch's encoder layer counted two ways beside the two formulas, then the same
layer run by hand on a 5-word and a 500-word sentence, every tensor counted, and a
verdict on each claim. Setup: the page's sizes d = 512, f = 2048, h = 8; one layer from
torch.manual_seed(42), float64, run on both sentences; its parameters (names, shapes,
values) are compared with a copy taken before, so "the same weights" is measured, not
assumed. Notes: week1/NOTES.md, section 14.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import join_heads, split_heads
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.printing import n_params
from common.records import record, said

import torch
import torch.nn as nn

SAME = 1e-9  # the by-hand layer is torch's if no output number differs by more
PAGE_NAMES = {"self_attn.in_proj_weight": "W^Q, W^K, W^V stacked", "self_attn.out_proj.weight": "W^O",
              "linear1.weight": "W_1 (torch stores [out, in])", "linear2.weight": "W_2"}


def weights_only(d, f):
    """The page's count without biases or LayerNorms."""
    return 4 * d * d + 2 * d * f


def fully_counted(d, f):
    """The page's count with biases and the two LayerNorms, as PyTorch counts."""
    return 4 * d * d + 2 * d * f + f + 9 * d


def times(new, old):
    """How many times bigger `new` is than `old`, e.g. 'x100' or 'x2.50'."""
    return f"x{new // old:,}" if new % old == 0 else f"x{new / old:,.2f}"


def build_layer(d, h, f):
    """torch's encoder layer (post-norm, as the paper), float64, without dropout: a fixed function."""
    return nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True, dtype=torch.float64).eval()


def encoder_layer_by_hand(X, layer):
    """Post-norm encoder layer, U = LN_1(X + MHA(X)), Y = LN_2(U + FFN(U)), on X [B, T, d]
    with `layer`'s own weights. Returns Y and {name: activation} for every intermediate tensor."""
    h = layer.self_attn.num_heads
    W_Q, W_K, W_V = layer.self_attn.in_proj_weight.chunk(3)  # [d, d] each, stored [out, in]
    b_Q, b_K, b_V = layer.self_attn.in_proj_bias.chunk(3)

    acts = {}
    acts["Q"] = X @ W_Q.T + b_Q  # [B, T, d]
    acts["K"] = X @ W_K.T + b_K  # [B, T, d]
    acts["V"] = X @ W_V.T + b_V  # [B, T, d]
    Q = split_heads(acts["Q"], h)  # [B, h, T, d_k]: a view of Q, not counted again
    K = split_heads(acts["K"], h)  # [B, h, T, d_k]
    V = split_heads(acts["V"], h)  # [B, h, T, d_k]
    d_k = Q.shape[-1]  # d / h
    acts["scores"] = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # [B, h, T, T]: every query against every key
    acts["A"] = torch.softmax(acts["scores"], dim=-1)  # [B, h, T, T]: softmax over the keys
    acts["heads"] = acts["A"] @ V  # [B, h, T, d_k]
    concat = join_heads(acts["heads"])  # [B, T, d]: Concat(H_1, ..., H_h), not counted again
    acts["MHA"] = layer.self_attn.out_proj(concat)  # concat W^O + b^O, [B, T, d]
    acts["U"] = layer.norm1(X + acts["MHA"])  # [B, T, d]
    acts["hidden"] = torch.relu(layer.linear1(acts["U"]))  # ReLU(U W_1 + b_1), [B, T, f]
    acts["FFN"] = layer.linear2(acts["hidden"])  # [B, T, d]
    acts["Y"] = layer.norm2(acts["U"] + acts["FFN"])  # [B, T, d]
    return acts["Y"], acts


def unchanged(layer, before):
    """Are the layer's parameters still `before` ({name: tensor}): the same names, shapes and values?"""
    now = dict(layer.named_parameters())
    return now.keys() == before.keys() and all(torch.equal(now[name], before[name]) for name in now)


SHAPES = {"Q": "[B, T, d]", "K": "[B, T, d]", "V": "[B, T, d]", "scores": "[B, h, T, T]",
          "A": "[B, h, T, T]", "heads": "[B, h, T, d_k]", "MHA": "[B, T, d]", "U": "[B, T, d]",
          "hidden": "[B, T, f]", "FFN": "[B, T, d]", "Y": "[B, T, d]"}


def lesson(args):
    """The counts, then one layer on a short and a long sentence, every tensor counted."""
    d, f, h, lengths = args.d_model, args.d_ff, args.heads, (args.short, args.long)
    torch.manual_seed(args.seed)
    layer = build_layer(d, h, f)
    matrices = [(name, p) for name, p in layer.named_parameters() if p.dim() == 2]
    print(f"One encoder layer, torch.nn.TransformerEncoderLayer(d_model={d}, nhead={h}, dim_feedforward={f}):")
    print("  its weight matrices (the 2-D parameters):")
    for name, p in matrices:
        print(f"    {name:<26}{str(list(p.shape)):<13}{PAGE_NAMES.get(name, '')}")
    counts = {"weights only": ("4d^2 + 2df", weights_only(d, f), sum(p.numel() for _, p in matrices),
                               "weight matrices"),
              "fully counted": ("4d^2 + 2df + f + 9d", fully_counted(d, f), n_params(layer), "parameters")}
    for label, (formula, by_formula, by_torch, what) in counts.items():
        print(f"  {label + ':':<14} {formula:<19} = {by_formula:>11,}; torch's {what:<15} = {by_torch:>11,}")
    print(f"  (biases and LayerNorms add f + 9d = {f + 9 * d:,} numbers: "
          f"{(f + 9 * d) / fully_counted(d, f):.1%} of the layer)")

    before = {name: p.detach().clone() for name, p in layer.named_parameters()}  # the weights before any sentence
    acts, outputs, params, kept = {}, {}, {}, {}
    with torch.no_grad():
        for T in lengths:  # the one layer on a sentence of each length
            X = torch.randn(1, T, d, dtype=torch.float64)  # [B, T, d]: one sentence of T words
            outputs[T], acts[T] = encoder_layer_by_hand(X, layer)
            if T == args.short:
                gap = (outputs[T] - layer(X)).abs().max().item()
            params[T], kept[T] = n_params(layer), unchanged(layer, before)  # counted and compared after this length
    short, long = lengths
    same_weights = all(kept.values())
    print(f"\nThe same layer run by hand on one sentence (B=1) of {short} and of {long} words:")
    print(f"  {'':<26}{f'T={short}':>12}{f'T={long}':>14}  grows")
    print(f"  {'parameters':<26}{params[short]:>12,}{params[long]:>14,}  {times(params[long], params[short])}")
    # the page's "unless": a table of T rows, on "meta" (shapes only) and given its empty weight,
    # so no starting values are drawn (drawing them on meta costs a second of imports)
    table = {T: n_params(nn.Embedding(T, d, _weight=torch.empty(T, d, device="meta"))) for T in lengths}
    print(f"  {'a learned position table':<26}{table[short]:>12,}{table[long]:>14,}  "
          f"{times(table[long], table[short])}\n"
          "    (one row per position: the exception the page names; sinusoids need none)")
    for name, shape in SHAPES.items():
        n_short, n_long = acts[short][name].numel(), acts[long][name].numel()
        print(f"  {name + ' ' + shape:<26}{n_short:>12,}{n_long:>14,}  {times(n_long, n_short)}")
    total = {T: sum(a.numel() for a in acts[T].values()) for T in lengths}
    print(f"  {'all activations':<26}{total[short]:>12,}{total[long]:>14,}  {times(total[long], total[short])}")
    share = {T: sum(acts[T][n].numel() for n in ("scores", "A")) / total[T] for T in lengths}
    print(f"  (scores and A, one number per pair of words and head, are {share[short]:.0%} of the activations\n"
          f"   at T={short} and {share[long]:.0%} at T={long})")
    print(f"  output Y: {list(outputs[short].shape)} and {list(outputs[long].shape)}: one vector of d numbers "
          "per word")
    print(f"max |by hand - torch layer on {short} words|={gap:.8f}")

    formulas_ok = all(by_formula == by_torch for _, by_formula, by_torch, _ in counts.values())
    print("\nClaim: weights only 4d^2 + 2df; fully counted (as PyTorch) 4d^2 + 2df + f + 9d.")
    print(f"Verdict: {said(True)}" if formulas_ok else f"Verdict: {said(False)} (a count differs)")
    record("both counting formulas give torch's counts", formulas_ok,
           value="; ".join(f"{by_formula:,} vs {by_torch:,}" for _, by_formula, by_torch, _ in counts.values()),
           threshold="each formula's count = torch's")

    by_hand = gap <= SAME
    pairs = [name for name, shape in SHAPES.items() if shape.endswith("T, T]")]  # one number per pair of words
    quadratic = all(acts[long][n].numel() * short ** 2 == acts[short][n].numel() * long ** 2 for n in pairs)
    linear = all(acts[long][n].numel() * short == acts[short][n].numel() * long
                 for n in SHAPES if n not in pairs)
    holds = same_weights and by_hand and quadratic and linear
    print(f"Claim: length changes activations, not parameters; the scores grow like T^2\n"
          f"  ({times(long, short)} words: scores {times(long ** 2, short ** 2)}, the rest {times(long, short)}).")
    print(f"Verdict: {said(True)}" if holds else
          f"Verdict: {said(False)} (the same weights: {same_weights}; by hand = torch's layer: {by_hand}; "
          f"scores like T^2: {quadratic}; the rest like T: {linear})")
    record("length changes activations, not parameters; scores grow like T^2", holds,
           value=f"same weights {same_weights}; by hand {gap:.2g}; T^2 {quadratic}; T {linear}",
           threshold=f"the same weights at both lengths; by hand = torch's layer within {SAME:g}; scores x (T "
           "ratio)^2, the rest x (T ratio)")
    # The weights are shared by every position, so one set serves any length; the scores
    # hold one number per pair of words per head, so they are what long sentences fill up.


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--seed", type=SEED, default=42, help="torch seed for the weights and the words"),
         knob("--d-model", type=int_range(1, 1024), default=512, help="d, numbers per word (a multiple of --heads; "
              "above 512, the size limit may ask for a smaller --long or --d-ff)"),
         knob("--d-ff", type=int_range(1, 4096), default=2048, help="f, FFN hidden width (above 2,048, the size "
              "limit may ask for a smaller --long or --d-model)"),
         knob("--heads", type=int_range(1, 64), default=8, help="h, attention heads (must divide --d-model)"),
         knob("--short", type=int_range(1, 4096), default=5, help="T of the short sentence (below --long)"),
         knob("--long", type=int_range(1, 4096), default=500, help="T of the long sentence (above --short; above "
              "500, the size limit may ask for a smaller --d-model or --d-ff)")]
TRY_IT = [("--short 250 --long 500", "doubling T quadruples the score entries"),
          ("--heads 1", "one head: the same parameters, 8 times fewer scores"),
          ("--heads 16", "16 heads: the same parameters, twice the scores"),
          ("--d-model 64 --d-ff 256 --heads 4 --long 1000",
           "a small layer on 1,000 words: the scores are most of the activations")]


def limits(args):
    d, f, h, T = args.d_model, args.d_ff, args.heads, args.long
    if d % h:
        return f"--d-model {d} is not divisible by --heads {h}"
    if args.short >= args.long:
        return f"--short {args.short} must be less than --long {args.long}"
    return too_big(numbers=h * T * T + T * f, work=T * (4 * d * d + 2 * d * f + 2 * T * d) + 4 * d * d + 2 * d * f,
                   knobs=("--long", "--d-model", "--d-ff", "--heads"))


DESCRIPTION = ("Parameter counts of one encoder layer (weights only and full) and what grows when the sentence gets "
               "longer (Week 1, section 7).")
LESSON = Lesson(__file__, page=("week1", 7), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
