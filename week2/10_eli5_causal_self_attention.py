"""The ELI5 page's single-head causal self-attention, run, then split into several heads.

Page: ELI5 Part 3 "One block: mix, then think", first PyTorch snippet ("Each token builds
a query, key, and value ..."), and its claims "each row sums to 1" and "a word can only
look back". Week 2, section 2 has the same mask.

    scores = q @ k.mT / d_k ** 0.5      then the future (the upper triangle) filled with -inf
    weights = F.softmax(scores, dim=-1)   each row sums to 1
    out = weights @ v
    several heads: the same q, k, v cut into h heads of width d_model / h, the same masked
    attention in each, the heads side by side (concat), blended by W_O

Prints the snippet's shapes and weights, each row's sum and the weight on future tokens (the
future cells built apart from the snippet's mask), the heads' weights beside torch's own
causal attention, and whether W_O blends every head into the output (leaving out any one
head changes it). Setup: the page's snippet with torch.manual_seed(42) first (the page draws
without a seed); W_O is an nn.Linear(d_model, d_model) built after the snippet's three.
Notes: week2/NOTES.md, section 10.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import attention, causal_mask, join_heads, split_heads
from common.cli import SEED, Lesson, int_range, knob
from common.printing import vec
from common.records import record

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SHOWN = 8  # rows, numbers per row and heads printed in full; longer ones are shortened
ROW_SUM = 1e-6  # a row "sums to 1" within this: float32 rounding of a few numbers is about 1e-7


def snippet(seq, d_model, seed):
    """The page's snippet, as printed there (after torch.manual_seed(seed))."""
    torch.manual_seed(seed)
    x = torch.randn(seq, d_model)  # (seq, d_model): the input tokens
    to_q, to_k, to_v = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
    q, k, v = to_q(x), to_k(x), to_v(x)  # each (seq, d_model)
    d_k = q.size(-1)
    scores = q @ k.mT / d_k ** 0.5  # (seq, seq)
    mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)  # True = future
    scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)  # (seq, seq)
    out = weights @ v  # (seq, d_model)
    return x, q, k, v, mask, scores, weights, out


def split_into_heads(q, k, v, h, mask):
    """The same q, k, v cut into h heads of width d_model / h, the snippet's masked attention
    in each head, and the heads' outputs side by side again ("concat"). The blocks are
    common/blocks.py's (split_heads and join_heads taught in week1/03, attention in week1/01);
    they take a batch, here a batch of one sentence."""
    qh, kh, vh = (split_heads(t[None], h)[0] for t in (q, k, v))  # each (h, seq, d_model / h)
    heads, head_weights = attention(qh, kh, vh, mask)  # (h, seq, d_model / h); (h, seq, seq): one pattern per head
    concat = join_heads(heads[None])[0]  # (seq, d_model): same shape as x
    return qh, kh, vh, head_weights, heads, concat


def from_heads(W_O, concat, kept, h):
    """What W_O makes of the heads in `kept` only: its columns for every other head's slice set
    to 0, as if those heads had written zeros."""
    width = concat.shape[1] // h
    with torch.no_grad():
        keep = torch.zeros_like(W_O.weight)  # (d_model, d_model)
        for i in kept:
            keep[:, i * width:(i + 1) * width] = W_O.weight[:, i * width:(i + 1) * width]
        return F.linear(concat, keep, W_O.bias)  # (seq, d_model)


def lesson(args):
    """The snippet's weights, then the same q, k, v split into heads and blended by W_O."""
    seq, d_model, h = args.seq, args.d_model, args.heads
    x, q, k, v, mask, scores, weights, out = snippet(seq, d_model, args.seed)
    print(f"x {list(x.shape)} -> q, k, v {list(q.shape)} -> scores {list(scores.shape)} -> out {list(out.shape)}")
    print(f"  ({seq} tokens of {d_model} numbers; a score for every token against every token; "
          "out: one new row per token)")
    print("weights (row = token, column = the token it looks at):")
    for i in shown_rows(seq):
        print(f"  {vec(weights[i].detach(), shown=SHOWN)}" if i is not None else f"  ... {seq - SHOWN} more rows")
    future_cells = causal_mask(seq)  # (seq, seq): the future, built apart from the snippet's mask
    sums, future = weights.sum(-1), weights[future_cells].sum().item()  # (seq,); the weight on the future
    print(f"each row's sum: smallest {sums.min().item():.6f}, largest {sums.max().item():.6f}; "
          f"weight on future tokens: {future}")
    worst = (sums - 1).abs().max().item()
    record("each row sums to 1, none of it on the future", worst < ROW_SUM and future == 0,
           value=f"largest row-sum gap {worst:.2g}; future weight {future}",
           threshold="every row within 1e-6 of 1; future weight exactly 0")
    # Row 1 can only look at itself (weight 1); the last row may look at everyone.

    # ---- several heads: the same q, k, v, split into h heads of width d_model / h ----
    qh, kh, vh, head_weights, heads, concat = split_into_heads(q, k, v, h, mask)
    print(f"{h} head{'s' * (h > 1)}: q, k, v split to {list(qh.shape)}; weights {list(head_weights.shape)}; "
          f"concat {list(concat.shape)}")
    for i in range(min(h, SHOWN)):
        w = head_weights[i].detach()
        print(f"head {i + 1}: rows sum to {w.sum(-1).min().item():.6f} to {w.sum(-1).max().item():.6f}; "
              f"weight on future tokens: {w[future_cells].sum().item()};\n  last row={vec(w[-1], shown=SHOWN)}")
    if h > SHOWN:
        w = head_weights[SHOWN:].detach()
        print(f"heads {SHOWN + 1} to {h}: rows sum to {w.sum(-1).min().item():.6f} to {w.sum(-1).max().item():.6f}; "
              f"weight on future tokens: {w[:, future_cells].sum().item()}")
    fused = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)  # torch's own causal kernel
    print("the heads by hand beside torch's own causal attention, F.scaled_dot_product_attention (SDPA):")
    print(f"max |heads by hand - torch SDPA(is_causal=True)|={(heads - fused).abs().max().item():.8f}")

    W_O = nn.Linear(d_model, d_model)  # blends the heads: every output number reads every head
    blended = W_O(concat)  # (seq, d_model)
    others = [[j for j in range(h) if j != i] for i in range(h)]  # every head but head i
    changes = [not torch.allclose(blended, from_heads(W_O, concat, others[i], h)) for i in range(h)]
    if h > 1:
        print(f"W_O blends the {h} heads into {list(blended.shape)}; leaving out one head at a time (its columns "
              f"of W_O set to 0),\n  the output changes for {sum(changes)} of the {h} heads")
    else:
        print(f"W_O mixes the head's numbers into {list(blended.shape)}")
    record("W_O blends every head into the output", all(changes) if h > 1 else None, value=sum(changes),
           threshold="leaving out any one head changes the output (two heads or more)",
           why=None if h > 1 else "one head: there is nothing to blend")
    print("  (these heads are untrained: random weights, so their patterns are random too. Trained in")
    print("   week1/16_heads_take_roles.py at its seed, two heads took roles, one on the previous word, one")
    print("   on the nouns; other runs need not: with four heads there, three took the same role)")
    # Each head has its own weight pattern over the same tokens; all obey the causal rule;
    # W_O then blends what the heads found into each token's new vector.


# ---------------------------------------------------------------- optional: knobs, Try it, live window

def shown_rows(n):
    """Which of n rows to print: all, or the first SHOWN - 1, a gap (None), and the last."""
    return list(range(n)) if n <= SHOWN else [*range(SHOWN - 1), None, n - 1]


def live_view(seq, d_model, h, seed):
    """A head picker: that head's weights (causal), and the last token's output from W_O
    reading that head alone beside W_O blending them all."""
    from common.live import Blit, View, add_slider, whole_ticks  # the Try it view, loaded only for --live
    _, q, k, v, mask, _, _, _ = snippet(seq, d_model, seed)
    _, _, _, head_weights, _, concat = split_into_heads(q, k, v, h, mask)
    W_O = nn.Linear(d_model, d_model)  # drawn after the snippet, as lesson() draws it
    with torch.no_grad():
        blended = W_O(concat)[-1].numpy()  # [d_model]: the last token, every head blended
    from common.figures import plt  # only for the window: a run without --live skips its import
    fig, (grid_ax, out_ax) = plt.subplots(1, 2, figsize=(12, 5.8))
    fig.subplots_adjust(bottom=0.22, top=0.8, wspace=0.3)
    slider = add_slider(fig, "head", 1, h, 1)
    blit = Blit(fig)
    blit.add(slider)
    image = grid_ax.imshow(np.zeros((seq, seq)), cmap="viridis", vmin=0, vmax=1, interpolation="none")
    grid_ax.set(xlabel="token it looks at", ylabel="token")
    for axis in (grid_ax.xaxis, grid_ax.yaxis):
        whole_ticks(axis, seq, first=1)  # tokens 1..seq
    out_ax.bar(np.arange(d_model) - 0.2, blended, width=0.4, color="tab:purple", label="W_O, all heads")
    alone_bars = out_ax.bar(np.arange(d_model) + 0.2, np.zeros(d_model), width=0.4, color="tab:orange",
                            label="W_O, one head alone")
    reach = max(abs(blended).max(), *(from_heads(W_O, concat, [i], h)[-1].abs().max().item() for i in range(h)))
    out_ax.set(xlabel="output number", ylim=(-1.1 * reach, 1.6 * reach), title="the last token's new vector")
    whole_ticks(out_ax.xaxis, d_model)
    zero = out_ax.axhline(0, color="0.5", linewidth=0.8)
    out_ax.legend(loc="upper left", fontsize="small")  # above the tallest bar: the y range leaves it room
    fig.suptitle(f"{h} untrained head{'s' * (h > 1)} over {seq} token{'s' * (seq > 1)}: each its own pattern, all "
                 "causal; W_O blends them")
    blit.add(image, *alone_bars, zero, grid_ax.title)  # (the zero line drawn over the bars, as a full draw does)

    def update(head):
        i = int(head) - 1
        w = head_weights[i].detach()
        image.set_data(w.masked_fill(mask, float("nan")).numpy())
        grid_ax.set_title(f"head {i + 1}, the last row's weights:\n{vec(w[-1], 2, shown=6)}")  # fits above the grid
        for bar, height in zip(alone_bars, from_heads(W_O, concat, [i], h)[-1].tolist(), strict=True):
            bar.set_height(height)
        blit.update()

    slider.on_changed(update)
    update(1)
    return View(fig, {"head": slider}, blit)


DESCRIPTION = ("The ELI5 single-head causal self-attention snippet, and a several-head version (ELI5 Part 3; "
               "Week 2, section 2).")
KNOBS = [knob("--seq", type=int_range(1, 64), default=4, help="number of tokens"),
         knob("--d-model", type=int_range(1, 512), default=8, help="token width (a multiple of --heads)"),
         knob("--heads", type=int_range(1, 64), default=2, help="heads in the second part (must divide --d-model)"),
         knob("--seed", type=SEED, default=42, help="torch seed")]
TRY_IT = [("--heads 4", "four heads of width 2: each its own pattern, all causal"),
          ("--seq 6", "six tokens: a bigger staircase"),
          ("--seed 1", "other numbers; rows still sum to 1, the future still gets 0")]
LIVE = "a head picker: each head's weights, and W_O's output from that head alone and from all"


def limits(args):
    if args.d_model % args.heads:
        return f"--d-model {args.d_model} is not divisible by --heads {args.heads}"
    return None


LESSON = Lesson(__file__, page=("eli5", 3), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.seq, args.d_model, args.heads, args.seed)


if __name__ == "__main__":
    run(main)
