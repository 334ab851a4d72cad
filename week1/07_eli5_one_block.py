"""One Transformer block, stage by stage: "the cat sat" goes in as [3 x 4], comes out [3 x 4].

Page: ELI5 Part 3 "One block: mix, then think" (its second PyTorch snippet, the pre-norm
TransformerBlock), beside Week 1, section 6 "The encoder layer" (post-norm).

Pre-norm, the ELI5 block:      x = x + attention(LN1(x));   x = x + ffn(LN2(x))
Post-norm, Week 1 section 6:   U = LN1(X + MHA(X));         Y = LN2(U + FFN(U))
Same sublayers, same parameters, same shape; only where LayerNorm sits differs. The
original paper ("Attention Is All You Need") uses post-norm. Both wirings here use the
ELI5 block's causal attention (the Week 1 encoder's is unmasked), so that LayerNorm's
place is the only difference.

Prints the 'sat' row at every stage, the attention weights the block used and their sums,
how far 'sat' moves when 'the' changes, whether the wiring changes the output, three
comparisons with torch's own layer, and the parameter count.
Setup: 3 words, d_model 4, one causal head, FFN width 16, torch.manual_seed(42), float64,
LayerNorms with random gamma and beta. Notes: week1/NOTES.md, section 07.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import causal_mask
from common.cli import SEED, Lesson, int_range, knob
from common.printing import n_params, vec
from common.records import record

import torch
import torch.nn as nn

WORDS = ["the", "cat", "sat"]
WRITTEN = 16  # the live window writes every number of a grid at most this wide in its cell
STEADY = 0.01  # LayerNorm is steady if its output moves by under 1% of what its input moved
ROW_SUM = 1e-6  # a row "sums to 1" within this: the six decimals printed (float64 rounds at about 1e-16)
MOVED = 1e-9  # a row "moves" if a number in it changes by more than this (float64 rounds at about 1e-16)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where a word may look only at itself and earlier words.
    Keeps the weights of its last call in self.attn [batch, h, seq, seq] (The Annotated
    Transformer's habit), so the lesson prints the weights the block used."""

    def __init__(self, mha):
        super().__init__()
        self.mha = mha
        self.attn = None

    def forward(self, x):  # x: (batch, seq, d_model)
        out, self.attn = self.mha(x, x, x, attn_mask=causal_mask(x.size(1)),  # True = blocked: the future
                                  need_weights=True, average_attn_weights=False)  # attn: one table per head
        return out


class TransformerBlock(nn.Module):
    """The ELI5 page's block, as printed there: pre-norm, residual around each move."""

    def __init__(self, d_model, attention, ffn):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)  # steadies values before attention
        self.norm2 = nn.LayerNorm(d_model)  # steadies values before the ffn
        self.attention = attention  # tokens look at each other
        self.ffn = ffn  # each token thinks for itself

    def forward(self, x):  # x: (batch, seq, d_model)
        x = x + self.attention(self.norm1(x))  # step 1: mix info across tokens
        x = x + self.ffn(self.norm2(x))  # step 2: refine each token alone
        return x  # (batch, seq, d_model), same shape in = out


def post_norm(block, x):
    """The same sublayers wired as in Week 1, section 6 (and the original paper)."""
    u = block.norm1(x + block.attention(x))
    return block.norm2(u + block.ffn(u))


def give_norms_their_own_values(block, torch_layer):
    """Random gamma and beta for the block's LN1 and LN2, copied into torch's layer, so
    that each LayerNorm is told apart from the other by what it does."""
    with torch.no_grad():
        for mine, theirs in ((block.norm1, torch_layer.norm1), (block.norm2, torch_layer.norm2)):
            mine.weight.uniform_(0.5, 1.5)  # gamma
            mine.bias.uniform_(-0.5, 0.5)  # beta
            theirs.load_state_dict(mine.state_dict())


def build(d, h, f, seed):
    """The words x [1, 3, d], the ELI5 block, and the torch layer whose sublayers it re-uses."""
    torch.manual_seed(seed)
    x = torch.randn(1, len(WORDS), d).double()  # (batch 1, 3 words, d): "the cat sat" as a grid
    torch_layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True).double().eval()
    attention = CausalSelfAttention(torch_layer.self_attn)
    ffn = nn.Sequential(torch_layer.linear1, nn.ReLU(), torch_layer.linear2)  # widen to f, fold back
    block = TransformerBlock(d, attention, ffn).double().eval()
    give_norms_their_own_values(block, torch_layer)
    return x, block, torch_layer


def torch_wiring(torch_layer, norm_first):
    """torch's own encoder layer with the same weights, wired pre-norm (norm_first=True) or
    post-norm (norm_first=False), built as such (not switched on a built layer)."""
    d, f = torch_layer.linear1.in_features, torch_layer.linear1.out_features
    layer = nn.TransformerEncoderLayer(d, torch_layer.self_attn.num_heads, f, dropout=0.0, batch_first=True,
                                       norm_first=norm_first).double().eval()
    layer.load_state_dict(torch_layer.state_dict())
    return layer


def stages(block, x):
    """The grid after each stage of the block, in order: {stage name: [1, 3, d] (or [1, 3, f])}."""
    normed = block.norm1(x)
    attended = block.attention(normed)
    mixed = x + attended  # move 1 done: words have looked at each other
    normed2 = block.norm2(mixed)
    hidden = torch.relu(block.ffn[0](normed2))  # the FFN widens each word to f numbers ...
    thought = block.ffn[2](hidden)  # ... and folds it back to d
    return {"input x": x, "LN1(x)": normed, "attention(LN1(x))": attended, "x + attention": mixed,
            "LN2(x + attention)": normed2, "FFN widened": hidden,
            "FFN folded back": thought, "x + FFN = block output": mixed + thought}  # move 2 done


# What each stage is computed from (a residual stage adds two grids).
MADE_FROM = {"LN1(x)": ["input x"], "attention(LN1(x))": ["LN1(x)"], "x + attention": ["input x", "attention(LN1(x))"],
             "LN2(x + attention)": ["x + attention"], "FFN widened": ["LN2(x + attention)"],
             "FFN folded back": ["FFN widened"], "x + FFN = block output": ["x + attention", "FFN folded back"]}


def grid(t):
    return " x ".join(map(str, t.shape[-2:]))


def week1_formula(d, f):
    """Week 1, section 7: one layer's learnable numbers, fully counted, 4d^2 + 2df + f + 9d."""
    return 4 * d * d + 2 * d * f + f + 9 * d


def lesson(args):
    """'the cat sat' through the block stage by stage, its weights, and the checks against torch."""
    d, h, f = args.d_model, args.heads, args.d_ff
    x, block, torch_layer = build(d, h, f, args.seed)

    with torch.no_grad():
        grids = stages(block, x)
        A = block.attention.attn[0]  # [h, 3, 3]: the weights the block's attention used on LN1(x) just now
        print(f"words {WORDS}: a [{grid(x)}] grid, one row per word, columns = meaning")
        print(f"  {'stage':<24}{'grid':<10}the 'sat' row")
        for name, value in grids.items():
            print(f"  {name:<24}{f'[{grid(value)}]':<9} {vec(value[0, -1], 2, shown=8)}")
        print("  (LN1, LN2 = LayerNorm; their gamma and beta are random, as after training, so a row need not")
        print("   average 0. FFN widened = ReLU(row W_1 + b_1): negatives set to 0; folded back = row W_2 + b_2)")
        print(f"  (attention rewrites the sat row by mixing in the words before it;\n"
              f"   the FFN widens it to {f} numbers and folds it back to {d})")

        for i, head in enumerate(A, start=1):
            print(f"attention weights{f' of head {i}' if h > 1 else ''} "
                  "(row = word, column = the word it looks at):")
            for word, values in zip(WORDS, head.tolist(), strict=True):
                print(f"  {word:<4}{vec(values)}")
        sums, future = A.sum(-1), A.triu(diagonal=1).sum().item()  # [h, 3]; the weight above the diagonal
        print(f"each row's sum: smallest {sums.min().item():.6f}, largest {sums.max().item():.6f}; "
              f"weight on future words: {future}")
        worst = (sums - 1).abs().max().item()
        record("each row sums to 1, none of it on future words", worst < ROW_SUM and future == 0, value=worst,
               threshold="every row within 1e-6 of 1; future weight exactly 0")

        back = A[:, -1, :-1].sum(-1)  # [h]: sat's weight on the words before it, per head
        changed = x.clone()
        changed[0, 0, 0] += 1.0  # 'the' changed: 1 added to its first number (LN1 would undo a shift of all)
        moved = (block.attention(block.norm1(changed)) - grids["attention(LN1(x))"])[0, -1].abs().max().item()
        print(f"'sat' mixes in the words before it: its weight on 'the' and 'cat' "
              f"{f'{back[0]:.4f}' if h == 1 else f'{vec(back)} (one per head)'};\n"
              f"  with 1 added to the first number of 'the', its attention(LN1(x)) row moves by {moved:.4f}")
        record("attention rewrites the sat row", back.min().item() > 0 and moved > MOVED, value=moved,
               threshold="sat's weight on the earlier words above 0 in every head, and its attention(LN1(x)) row "
               "moves (by more than 1e-9) when 'the' changes")

        pre, post = block(x), post_norm(block, x)
        same = torch.allclose(pre, post)
        print(f"pre-norm block output [{grid(pre)}]; post-norm layer output [{grid(post)}]; same values: {same}")
        record("pre-norm and post-norm are different wirings", not same, value=same,
               threshold="the two outputs differ (torch.allclose)")
        print("three checks that the block is what it says (0 = the same numbers, up to rounding):")
        print(f"max |the stages above, last one - block(x)|="
              f"{(grids['x + FFN = block output'] - pre).abs().max().item():.8f}")
        torch_mask = nn.Transformer.generate_square_subsequent_mask(len(WORDS), dtype=torch.float64)  # torch's own
        for wiring, mine, norm_first in (("pre-norm", pre, True), ("post-norm", post, False)):
            theirs = torch_wiring(torch_layer, norm_first)(x, src_mask=torch_mask, is_causal=True)
            print(f"max |{wiring} by hand - torch TransformerEncoderLayer(norm_first={norm_first})|="
                  f"{(mine - theirs).abs().max().item():.8f}")

    formula = week1_formula(d, f)
    print(f"parameters: ELI5 block={n_params(block):,}; torch layer={n_params(torch_layer):,}; "
          f"Week 1 formula 4d^2+2df+f+9d={formula:,}")
    record("the block holds the Week 1 formula's numbers", n_params(block) == formula, value=n_params(block),
           threshold=f"= {formula:,}, 4d^2 + 2df + f + 9d (torch's layer is no second check: the block re-uses "
           "its attention and FFN)")
    print("LayerNorm placement: ELI5 block = pre-norm (before each sublayer);\n"
          "  original paper = post-norm (after each residual addition)")

    with torch.no_grad():
        shortcuts_and_norms(block, x, grids)


def shortcuts_and_norms(block, x, grids):
    """The snippet's comments, measured: the "+ x" keeps the original; the two things added
    must have one shape; LayerNorm steadies the values before each sublayer."""
    added = grids["attention(LN1(x))"] + grids["FFN folded back"]  # all the two sublayers contributed
    kept = (block(x) - added - x).abs().max().item()
    print("the \"+ x\" shortcuts: block output - what the two sublayers added = x itself, to rounding:")
    print(f"max |block(x) - attention part - FFN part - x|={kept:.8f}")
    print("  \"never lost\" holds while the sublayers let it: a sublayer that had learned F(x) = -x\n"
          "    would leave x + F(x) = 0, and x would be lost (an illustration: no such sublayer here)")
    widened = grids["FFN widened"]  # [1, 3, f]
    print(f"the two things added must have one shape: x [{grid(x)}] + FFN widened [{grid(widened)}]:")
    residual_widths(x, widened)

    moved_in = (10 * x + 3 - x).abs().max().item()  # the input scaled by 10 and shifted by 3
    moved_out = (block.norm1(10 * x + 3) - block.norm1(x)).abs().max().item()
    print(f"LN1 steadies the values: x scaled by 10 and shifted by 3 moves by {moved_in:.2f}; "
          f"LN1's output by {moved_out:.4f}\n"
          "  (eps = 1e-5 is all that tells them apart)")
    record("LayerNorm steadies the values", moved_out < STEADY * moved_in, value=moved_out / moved_in,
           threshold=f"the output moves by less than {STEADY:.0%} of the input's move")


def residual_widths(x, widened):
    """What torch does with x [1, 3, d] + a grid of another width f, in words, and its record."""
    name, threshold = "the residual add needs matching widths", "torch refuses unequal widths"
    d, f = x.shape[-1], widened.shape[-1]
    if d == f:
        print(f"  one width, {d}: torch adds them (--d-ff equals --d-model here, so there is nothing to refuse)")
        record(name, None, threshold=threshold, why="--d-ff equals --d-model: the two widths match")
        return
    try:
        total = x + widened  # [1, 3, d] + [1, 3, f]
    except RuntimeError as error:
        print(f"  torch refuses ({str(error).split(' at ')[0]});\n    so the FFN folds back to d")
        record(name, True, value="refused", threshold=threshold)
        return
    if 1 in (d, f):  # broadcasting: a grid one column wide is copied across the other's columns
        if d == 1:
            print(f"  x is one column wide, so torch broadcasts it (copies it across all {f} columns) and adds:\n"
                  f"    the sum is [{grid(total)}], no longer x's shape [{grid(x)}]: not a residual;")
        else:
            print(f"  FFN widened is one column wide, so torch broadcasts it (copies it across all {d} of x's "
                  f"columns)\n    and adds: each word's {d} numbers get one same number, not a change of their "
                  "own: not a residual;")
        print("    so the FFN folds back to d")
        record(name, None, value="broadcast", threshold=threshold,
               why="a width of 1 is broadcast: torch copies that column instead of refusing, so this run cannot "
               "show the refusal (any two widths above 1 can)")
        return
    print(f"  torch adds them: [{grid(total)}]")  # (no torch does: a silent add of unequal widths)
    record(name, False, value="added", threshold=threshold)


# ---------------------------------------------------------------- optional: knobs, Try it, live window

def columns(stage, width):
    """What a stage's columns are: the word's meaning (d of them), or the FFN's f hidden numbers."""
    return f"the FFN's hidden columns ({width})" if stage == "FFN widened" else f"meaning columns ({width})"


def live_view(d, h, f, seed):
    """The page's "click the stages": a stage slider; the grid at that stage, the 'sat' row
    boxed, its numbers written out."""
    from common.live import Blit, View, add_slider  # the Try it view, loaded only for --live
    x, block, _ = build(d, h, f, seed)
    with torch.no_grad():
        grids = {name: value[0].numpy() for name, value in stages(block, x).items()}  # name -> [3, width]
    names = list(grids)
    from common.figures import plt  # only for the window: a run without --live skips its import

    fig = plt.figure(figsize=(11, 5.5))
    ax = fig.add_axes((0.12, 0.24, 0.76, 0.44))  # room above for the title and the rows a stage is made from
    slider = add_slider(fig, "stage", 0, len(names) - 1, 0)
    blit = Blit(fig)
    reach = max(abs(g).max() for g in grids.values())
    image = ax.imshow(grids[names[0]], cmap="coolwarm", vmin=-reach, vmax=reach, aspect="auto", interpolation="none")
    numbers = [ax.text(col, row, "", ha="center", va="center", fontsize=9)  # small grids: every number in its cell
               for row in range(len(WORDS)) for col in range(WRITTEN)]
    box = ax.add_patch(plt.Rectangle((-0.5, 1.5), 1, 1, fill=False, edgecolor="black", linewidth=3))
    ax.set_yticks(range(len(WORDS)), WORDS)
    ax.xaxis.get_major_locator().set_params(integer=True)
    blit.add(ax.xaxis)  # layer 0: the columns' numbering changes with the width
    blit.add(slider, image, *numbers, box, ax.title, layer=1)

    def update(i):
        name = names[int(i)]
        values = grids[name]  # [3 words, width]
        width = values.shape[1]
        slider.valtext.set_text(f"{int(i) + 1} of {len(names)}")
        label = columns(name, width)
        relabel = width != image.get_array().shape[1] or label != ax.get_xlabel()  # (the axis is layer 0)
        image.set_data(values)
        image.set_extent((-0.5, width - 0.5, len(WORDS) - 0.5, -0.5))
        ax.set_xlim(-0.5, width - 0.5)
        for k, text in enumerate(numbers):
            row, col = divmod(k, WRITTEN)
            text.set_visible(width <= WRITTEN and col < width)
            text.set_text(f"{values[row, col]:.2f}" if text.get_visible() else "")
        box.set_width(width)
        ax.set_xlabel(label)
        made_from = "".join(f"\nfrom {part}: {vec(grids[part][-1], 2, shown=8)}" for part in MADE_FROM.get(name, []))
        ax.set_title(f"{name}: [{values.shape[0]} x {width}]\n'sat' row: {vec(values[-1], 2, shown=8)}" + made_from)
        blit.update(0 if relabel else 1)

    slider.on_changed(update)
    update(0)
    fig.suptitle("One block: attention rewrites the sat row; the FFN widens it and folds it back")
    return View(fig, {"stage": slider}, blit)



DESCRIPTION = ("'The cat sat' through the ELI5 pre-norm block, stage by stage, beside the post-norm encoder layer of "
               "Week 1 (ELI5 Part 3; Week 1, section 6).")
KNOBS = [knob("--d-model", type=int_range(1, 512), default=4,
              help="meaning width per word (a multiple of --heads)"),
         knob("--heads", type=int_range(1, 64), default=1, help="attention heads (must divide --d-model)"),
         knob("--d-ff", type=int_range(1, 4096), default=16, help="FFN hidden width"),
         knob("--seed", type=SEED, default=42, help="torch seed")]
LIVE = "a stage slider: the [3 x d] grid at each stage, the 'sat' row boxed"
TRY_IT = [("--d-model 8 --heads 2 --d-ff 32", "every stage keeps [3 x 8]; one weight table per head"),
          ("--seed 1", "other word vectors, the same shapes")]


def limits(args):
    return f"--d-model {args.d_model} is not divisible by --heads {args.heads}" if args.d_model % args.heads else None


LESSON = Lesson(__file__, page=("eli5", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.d_model, args.heads, args.d_ff, args.seed)


if __name__ == "__main__":
    run(main)
