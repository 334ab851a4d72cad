"""Where post-norm puts the three LayerNorms of a decoder layer, checked against torch.

Page: Week 2, section 6 "Residual connections and normalization": "The original wiring
(post-LN): z = LN(x + Sublayer(x)), at each of the three decoder sublayers (masked
self-attention, cross-attention, FFN)."

Written out by hand, a post-norm decoder layer is
    z1  = LN1(x  + MaskedSelfAttention(x))          after masked self-attention + residual
    z2  = LN2(z1 + CrossAttention(z1, memory))      after cross-attention + residual
    out = LN3(z2 + FFN(z2))                         after the feed-forward net + residual
and the pre-norm one (torch's norm_first=True) moves each LayerNorm into the branch, in
front of its sublayer: z1 = x + MaskedSelfAttention(LN1(x)), and so on; the encoder's
memory is not normalised there. Both are computed below with plain tensor operations
(the LayerNorm formula, the FFN, common/blocks.py's masked attention and heads) from the
weights of one torch nn.TransformerDecoderLayer, and compared with torch's own forward pass with
norm_first=False and norm_first=True. Wrong placements written the same way (the
LayerNorm inside the branch, x + LN(F(x)); LN2 and LN3 swapped) are compared too: they
must not match, or the check could not tell placements apart.

Prints each placement's largest gap to torch's layer with norm_first=False and True, the
two noise lines, and a verdict. Setup (choices): d = 8, h = 2, f = 16, 2 sentences of 4
target words reading 5 source words, float64, every parameter redrawn from N(0, 0.5^2).
Notes: week2/NOTES.md, section 17.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import blocks, run
from common.blocks import causal_mask, join_heads, split_heads
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.records import record, said

import torch
import torch.nn as nn

TOLERANCE = 1e-6  # a gap at most this is rounding: the two computations agree


def attention(x, source, mha, causal):
    """Multi-head attention wired to the weights of torch's `mha` (its W^Q, W^K, W^V stacked in
    in_proj_weight): queries from x [B, T, d], keys and values from source [B, S, d]; causal
    hides the later positions. Heads and formula: common/blocks.py's (taught in week1/03, week1/01)."""
    h = mha.num_heads
    W_Q, W_K, W_V = mha.in_proj_weight.chunk(3)  # each [d, d]
    b_Q, b_K, b_V = mha.in_proj_bias.chunk(3)  # each [d]
    Q = split_heads(x @ W_Q.T + b_Q, h)  # [B, h, T, d_k]
    K = split_heads(source @ W_K.T + b_K, h)  # [B, h, S, d_k]
    V = split_heads(source @ W_V.T + b_V, h)  # [B, h, S, d_k]
    mask = causal_mask(x.shape[1]) if causal else None  # [T, T], True = a later word, hidden
    Z, _ = blocks.attention(Q, K, V, mask)  # [B, h, T, d_k]: softmax(Q K^T / sqrt(d_k) + M) V
    return join_heads(Z) @ mha.out_proj.weight.T + mha.out_proj.bias  # [B, T, d]


def layer_norm(x, norm):
    """gamma * (x - mean) / sqrt(var + eps) + beta over each token's d numbers."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return norm.weight * (x - mean) / torch.sqrt(var + norm.eps) + norm.bias


def ffn(x, layer):
    """W_2 relu(W_1 x + b_1) + b_2."""
    return torch.relu(x @ layer.linear1.weight.T + layer.linear1.bias) @ layer.linear2.weight.T + layer.linear2.bias


def post_norm(x, memory, layer, norms=(1, 2, 3)):
    """The original wiring: a LayerNorm after each residual add. norms: which of the
    layer's norm1..norm3 is used after sublayer 1, 2, 3."""
    LN1, LN2, LN3 = (getattr(layer, f"norm{i}") for i in norms)
    z1 = layer_norm(x + attention(x, x, layer.self_attn, causal=True), LN1)  # after masked self-attention
    z2 = layer_norm(z1 + attention(z1, memory, layer.multihead_attn, causal=False), LN2)  # after cross-attention
    return layer_norm(z2 + ffn(z2, layer), LN3)  # after the feed-forward net


def pre_norm(x, memory, layer):
    """norm_first: each LayerNorm in front of its sublayer, the residual path left bare."""
    y = layer_norm(x, layer.norm1)
    z1 = x + attention(y, y, layer.self_attn, causal=True)
    z2 = z1 + attention(layer_norm(z1, layer.norm2), memory, layer.multihead_attn, causal=False)  # memory as is
    return z2 + ffn(layer_norm(z2, layer.norm3), layer)


def norm_in_branch(x, memory, layer):
    """A wrong placement: the LayerNorm on the sublayer's output, before the add."""
    z1 = x + layer_norm(attention(x, x, layer.self_attn, causal=True), layer.norm1)
    z2 = z1 + layer_norm(attention(z1, memory, layer.multihead_attn, causal=False), layer.norm2)
    return z2 + layer_norm(ffn(z2, layer), layer.norm3)


def lesson(args):
    """One torch decoder layer's weights, the placements written by hand, each against torch's forward."""
    B, T, S, d, h, f = args.batch, args.tgt_len, args.src_len, args.d_model, args.heads, args.d_ff
    torch.manual_seed(args.seed)
    kwargs = dict(dropout=0.0, batch_first=True, dtype=torch.float64)
    torch_post = nn.TransformerDecoderLayer(d, h, f, norm_first=False, **kwargs)
    with torch.no_grad():
        for p in torch_post.parameters():
            p.copy_(0.5 * torch.randn_like(p))  # every weight, bias, gamma and beta random
    torch_pre = nn.TransformerDecoderLayer(d, h, f, norm_first=True, **kwargs)
    torch_pre.load_state_dict(torch_post.state_dict())  # the very same weights
    x = torch.randn(B, T, d, dtype=torch.float64)  # [B, T, d] the decoder's input
    memory = torch.randn(B, S, d, dtype=torch.float64)  # [B, S, d] the encoder's output
    future = causal_mask(T)  # [T, T] bool, True = hidden from the query (torch's convention too)

    print(f"decoder layer d={d}, h={h}, f={f}; target [B, T, d]=[{B}, {T}, {d}], "
          f"memory [B, S, d]=[{B}, {S}, {d}]")
    print("post-norm by hand (the page's original wiring):")
    print("  z1  = LN1(x  + MaskedSelfAttention(x))")
    print("  z2  = LN2(z1 + CrossAttention(z1, memory))")
    print("  out = LN3(z2 + FFN(z2))")
    print("pre-norm by hand (torch's norm_first=True):")
    print("  z1  = x  + MaskedSelfAttention(LN1(x))")
    print("  z2  = z1 + CrossAttention(LN2(z1), memory)")
    print("  out = z2 + FFN(LN3(z2))")

    placements = {"post-norm LN(x + F(x))": post_norm,
                  "pre-norm x + F(LN(x))": pre_norm,
                  "LN in the branch x + LN(F(x))": norm_in_branch,
                  "post-norm, LN2 and LN3 swapped": lambda x, m, layer: post_norm(x, m, layer, norms=(1, 3, 2))}
    with torch.no_grad():
        reference = {layer.norm_first: layer(x, memory, tgt_mask=future) for layer in (torch_post, torch_pre)}
        gaps = {name: {norm_first: (wiring(x, memory, torch_post) - out).abs().max().item()
                       for norm_first, out in reference.items()}
                for name, wiring in placements.items()}
    print(f"\n{'':<34}largest gap to torch's layer with")
    print(f"{'placement written by hand':<34}{'norm_first=False':>16}{'norm_first=True':>17}")
    for name, gap in gaps.items():
        print(f"{name:<34}{gap[False]:>16.4f}{gap[True]:>17.4f}")
    print("  (0.0000 = the same output; the same weights and words go into every row)")
    print(f"max |post-norm by hand - torch norm_first=False|={gaps['post-norm LN(x + F(x))'][False]:.8f}")
    print(f"max |pre-norm by hand - torch norm_first=True|={gaps['pre-norm x + F(LN(x))'][True]:.8f}")

    post_ok = gaps["post-norm LN(x + F(x))"][False] <= TOLERANCE
    pre_ok = gaps["pre-norm x + F(LN(x))"][True] <= TOLERANCE
    wrong_apart = all(gap[False] > TOLERANCE for name, gap in gaps.items() if name != "post-norm LN(x + F(x))")
    holds = post_ok and pre_ok and wrong_apart
    if holds:
        print(f"Verdict: {said(holds)}: torch's post-norm decoder layer puts LN1, LN2, LN3 after the residual\n"
              f"  adds of self-attention, cross-attention and the FFN (gap at most {TOLERANCE:g});\n"
              "  no other placement matches it")
    else:
        print(f"Verdict: {said(holds)}: post-norm matches: {post_ok}; pre-norm matches: {pre_ok}; "
              f"the wrong placements all differ: {wrong_apart}")
    record("the post-norm decoder layer puts LN after each residual add", holds,
           value=f"post-norm gap {gaps['post-norm LN(x + F(x))'][False]:.2g}",
           threshold=f"post-norm and pre-norm by hand within {TOLERANCE:g} of torch's; every other placement not")
    # Same weights, same words: only the position of the three LayerNorms differs, and that
    # alone changes the output, so "where the norm goes" is part of the architecture.
    return 0 if holds else 1


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("A post-norm decoder layer written out by hand against torch's "
               "TransformerDecoderLayer(norm_first=False), pre-norm against norm_first=True, and wrong placements "
               "that must not match (Week 2, section 6).")
KNOBS = [knob("--seed", type=SEED, default=42, help="torch.manual_seed of weights and inputs"),
         knob("--batch", type=int_range(1, 64), default=2, help="B, sentences"),
         knob("--tgt-len", type=int_range(1, 256), default=4, help="T, target words"),
         knob("--src-len", type=int_range(1, 256), default=5, help="S, source words (the memory)"),
         knob("--d-model", type=int_range(1, 512), default=8,
                                 help="d, numbers per word (a multiple of --heads)"),
         knob("--heads", type=int_range(1, 64), default=2, help="h, heads (must divide --d-model)"),
         knob("--d-ff", type=int_range(1, 2048), default=16, help="f, feed-forward width")]
TRY_IT = [("--seed 7", "other weights and words: the same placements match"),
          ("--d-model 64 --heads 8 --d-ff 256 --tgt-len 10 --src-len 12", "a bigger layer: still a match at rounding "
           "level, the wrong ones still far off"),
          ("--tgt-len 1", "one target word: the causal mask hides nothing, placement still matters")]


def limits(args):
    B, T, S, d, h, f = args.batch, args.tgt_len, args.src_len, args.d_model, args.heads, args.d_ff
    if d % h:
        return f"--d-model {d} is not divisible by --heads {h}"
    return too_big(numbers=max(B * h * T * S, B * h * T * T, B * max(T, S) * max(d, f)),
                   work=6 * B * (T * (8 * d * d + 2 * d * f) + S * 2 * d * d + 2 * T * (T + S) * d),  # 6 passes
                   knobs=("--batch", "--tgt-len", "--src-len", "--d-model", "--heads", "--d-ff"))


LESSON = Lesson(__file__, page=("week2", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
