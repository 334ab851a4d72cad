"""Counting a decoder layer the way exam questions ask: without biases, without LayerNorms.

Page: Week 2, section 4 "The decoder's output layer and counting parameters", and its
"Mistakes people make": use the question's exclusions, not a library total; count a
shared (tied) weight once.

torch's TransformerDecoderLayer is walked parameter by parameter, and each one is sorted
into one of three kinds:
    weight matrices           W^Q, W^K, W^V, W^O twice (self- and cross-attention), W_1, W_2
                              8 d^2 + 2 d f
    biases                    4 d per attention block (3d in-projection + d output), twice,
                              and b_1 [f], b_2 [d] of the feed-forward net:   9 d + f
    LayerNorm gamma and beta  three LayerNorms, [d] each:                      6 d
The formulas are then checked against the numbers walked out of torch's module, and the
"weights only" count against torch's own TransformerDecoderLayer(bias=False), which drops
every bias, LayerNorm beta included, and keeps W and gamma: 8 d^2 + 2 d f + 3 d.
The output layer maps d numbers to V scores: d x V weights, plus V with a bias. Tied to
the embedding [V, d], the two share one tensor, so the model holds V d numbers, not 2 V d.

Prints the layer's tensors by kind, each kind's formula beside the count walked out of
torch, the counts an exam's exclusions give, the output layer, tied embeddings, and a
verdict. Setup: the page's sizes, d = 512, f = 2048, h = 8, V = 37,000, on torch's "meta"
device (shapes only). Notes: week2/NOTES.md, section 13.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import Lesson, int_range, knob
from common.printing import n_params
from common.records import record, said

import torch
import torch.nn as nn

KINDS = ("weight matrices", "biases", "LayerNorm gamma and beta")


def kind_of(model, name):
    """Sort one parameter, by the module that owns it and by its name, into one of KINDS."""
    owner = model.get_submodule(name.rpartition(".")[0])
    if isinstance(owner, nn.LayerNorm):
        return KINDS[2]
    return KINDS[1] if name.endswith("bias") else KINDS[0]


def walk(model):
    """{kind: number of learnable numbers}. named_parameters() yields a shared tensor once."""
    counts = dict.fromkeys(KINDS, 0)
    for name, p in model.named_parameters():
        counts[kind_of(model, name)] += p.numel()
    return counts


def formulas(d, f):
    """{kind: (formula, value)} for one decoder layer: two attention blocks, an FFN, 3 LayerNorms."""
    return {KINDS[0]: ("8d^2 + 2df", 2 * 4 * d * d + 2 * d * f),
            KINDS[1]: ("9d + f", 2 * (3 * d + d) + f + d),
            KINDS[2]: ("6d", 3 * 2 * d)}


def lesson(args):
    """torch's decoder layer walked and sorted by kind, the exclusions exams ask for, the output layer."""
    d, f, h, V = args.d_model, args.d_ff, args.heads, args.vocab
    layer = nn.TransformerDecoderLayer(d, h, f, device="meta")
    print(f"torch's TransformerDecoderLayer(d={d}, h={h}, f={f}), walked parameter by parameter:")
    print(f"  {'parameter':<30}{'shape':>14}  {'kind':<26}{'numbers':>12}")
    for name, p in layer.named_parameters():
        print(f"  {name:<30}{str(list(p.shape)):>14}  {kind_of(layer, name):<26}{p.numel():>12,}")
    print("  (in_proj_weight is W^Q, W^K and W^V stacked into one [3d, d] tensor;")
    print("   a LayerNorm's weight is its gamma, its bias is its beta)")

    walked, formula = walk(layer), formulas(d, f)
    print(f"\n{'kind':<28}{'walked from torch':>18}  {'formula':<16}{'formula value':>14}  equal")
    equal = {}
    for kind in KINDS:
        text, value = formula[kind]
        equal[kind] = walked[kind] == value
        print(f"{kind:<28}{walked[kind]:>18,}  {text:<16}{value:>14,}  {equal[kind]}")
        record(f"{kind}: the formula counts torch's", equal[kind], value=walked[kind],
               threshold=f"= {text} = {value:,}")
    total, formula_total = n_params(layer), sum(value for _, value in formula.values())
    equal["all"] = total == formula_total
    print(f"{'all (torch total)':<28}{total:>18,}  {'8d^2+2df+15d+f':<16}{formula_total:>14,}  {equal['all']}")
    record("the whole layer: the formula counts torch's", equal["all"], value=total,
           threshold=f"= 8d^2+2df+15d+f = {formula_total:,}")

    weights, biases, norms = (walked[kind] for kind in KINDS)
    gammas = norms // 2
    no_bias_layer = nn.TransformerDecoderLayer(d, h, f, bias=False, device="meta")
    without_bias = n_params(no_bias_layer)
    print("\nWhat the question asks to count:")
    print(f"  everything (torch's total)                   {total:>14,}")
    print(f"  leave out the biases, keep the LayerNorms    {weights + norms:>14,}  = 8d^2 + 2df + 6d")
    print(f"  leave out the biases and the LayerNorms      {weights:>14,}  = 8d^2 + 2df")
    print(f"  leave out every bias, LayerNorm beta too     {weights + gammas:>14,}  = 8d^2 + 2df + 3d")
    print(f"    torch's TransformerDecoderLayer(bias=False) holds {without_bias:,} "
          "(it drops every bias, beta included)")
    record("torch without biases holds 8d^2 + 2df + 3d", without_bias == weights + gammas, value=without_bias,
           threshold=f"= {weights + gammas:,}")
    print(f"  a 'weights only' answer taken from torch's total would be {total - weights:,} too many")

    out_layer, out_no_bias = nn.Linear(d, V, device="meta"), nn.Linear(d, V, bias=False, device="meta")
    print(f"\nOutput layer d x V = {d:,} x {V:,}: walked {walk(out_no_bias)[KINDS[0]]:,} weights; "
          f"with a bias {n_params(out_layer):,} (+ V = {V:,})")
    print("  (torch stores the matrix as [V, d], out x in; the page writes [d, V]: the same numbers)")
    # from_pretrained: an Embedding around an existing [V, d] tensor (a meta-device normal_ init
    # would pull in torch's compiler for a second of start-up)
    embedding = nn.Embedding.from_pretrained(torch.empty(V, d, device="meta"), freeze=False)
    output = nn.Linear(d, V, bias=False, device="meta")
    untied = nn.ModuleDict({"embedding": embedding, "output": output})
    n_untied = n_params(untied)
    output.weight = embedding.weight  # tie: the output layer re-uses the embedding's [V, d] tensor
    n_tied = n_params(untied)
    print(f"Embedding [V, d] + output layer without bias: untied {n_untied:,} = 2Vd;\n"
          f"  tied {n_tied:,} = Vd (one shared tensor, counted once)")
    record("a tied weight counts once, untied twice", n_tied == V * d and n_untied == 2 * V * d,
           value=f"tied {n_tied:,}, untied {n_untied:,}", threshold=f"tied = Vd = {V * d:,}; untied = 2Vd")

    counts = [*equal.values(), without_bias == weights + gammas, n_tied == V * d, n_untied == 2 * V * d]
    differ = counts.count(False)
    holds = differ == 0
    print(f"Verdict: {said(holds)}: every count by formula equals torch's own count" if holds else
          f"Verdict: {said(holds)}: {differ} of the {len(counts)} counts differ from torch's")
    record("every count by formula equals torch's", holds, value=differ, threshold="0 counts differ")
    # The weight matrices are almost all of a layer; the biases and LayerNorms are a few
    # thousand numbers, which is exactly the gap an exam's "exclude biases" is asking about.
    return 0 if holds else 1


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("One decoder layer counted by kind (weights, biases, LayerNorms), the exam's exclusions beside "
               "torch's total, the output layer and tied embeddings (Week 2, section 4).")
KNOBS = [knob("--d-model", type=int_range(1, 8192), default=512,
                                 help="d, numbers per word (a multiple of --heads)"),
         knob("--d-ff", type=int_range(1, 32768), default=2048, help="f, feed-forward width"),
         knob("--heads", type=int_range(1, 128), default=8, help="h, attention heads (must divide --d-model)"),
         knob("--vocab", type=int_range(1, 10**6), default=37_000, help="V, vocabulary size")]
TRY_IT = [("--d-model 4 --d-ff 8 --heads 1", "the page's tiny layer: 260 in all, 192 without biases and LayerNorms, "
           "small enough to count by hand"),
          ("--d-model 768 --d-ff 3072 --heads 12 --vocab 50257", "GPT-2 small's widths and vocabulary: the biases "
           "are still a tiny share of the total"),
          ("--heads 1", "one wide head: no count moves")]


def heads_divide(args):
    return f"--d-model {args.d_model} is not divisible by --heads {args.heads}" if args.d_model % args.heads else None


LESSON = Lesson(__file__, page=("week2", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=heads_divide)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
