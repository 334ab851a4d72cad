"""Masked (causal) self-attention: hiding the future with -inf before the softmax.

Page: Week 2, section 2 "Masked (causal) self-attention: hiding the future",
01_causal_mask.py and Figure 1 (causal attention probabilities).

    weights = softmax(scores + M),   M[i, j] = -inf where j > i (1 in the mask), else 0

Query i may look at keys j <= i only: the blocked keys get weight exp(-inf) = 0 exactly,
and the visible weights of each row still add up to 1. The diagonal (a word looking at
itself) is not blocked.

Prints the mask, its blocked cells, the masked weights and each row's sum, torch's own mask
beside it, and what zeroing future values instead does; saves Figure 1. Setup (a
reconstruction: the page's scores are not known): hand-written 4 x 4 scores whose row 2
gives the page's 0.3100, 0.6900; --seed S --seq-len T: the first T rows and columns of one
12 x 12 draw. Notes: week2/NOTES.md, section 01.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.maths import softmax
from common.printing import vec
from common.records import record

import numpy as np
import torch
import torch.nn as nn

ROW_SUM = 1e-9  # a row "sums to 1" within this: float64 rounding of T <= 12 weights is about 1e-16
MOST = 12  # the largest T (--seq-len, and the live window's T slider)
SCORES = np.array([[0.9, 0.3, 1.5, 0.2],  # row i: query i's raw scores q_i . k_j / sqrt(d_k)
                   [0.2, 1.0, 0.6, 1.4],
                   [0.5, 1.1, 0.7, 0.9],
                   [1.2, 0.4, 0.8, 1.6]])
FIGURE = Path(__file__).resolve().parent / "figures" / "causal_mask.png"


def causal_mask(T):
    """[T, T] with 1 where key j is in query i's future (j > i): the cells to block."""
    return np.triu(np.ones((T, T), dtype=int), k=1)


def masked_weights(scores, mask):
    """softmax(scores + M) over each row (the keys), M = -inf where mask == 1, else 0: [T, T]."""
    M = np.where(mask == 1, -np.inf, 0.0)  # [T, T]: -inf on the future
    return softmax(scores + M, axis=-1)  # exp(-inf) = 0


def score_table(seed):
    """[MOST, MOST] raw scores, drawn once: rng(seed) standard normals, or (seed None) the
    hand-written SCORES in the top-left 4 x 4 of rng(0)'s. A run at T takes the first T rows
    and columns, so a larger T only adds rows and columns: no earlier row changes."""
    table = np.random.default_rng(0 if seed is None else seed).standard_normal((MOST, MOST))
    if seed is None:
        table[:4, :4] = SCORES
    return table


def lesson(args):
    """The mask, the masked weights row by row, torch's own mask beside it, and the wrong way."""
    T = args.seq_len
    scores = score_table(args.seed)[:T, :T]  # [T, T]: query i's scores against keys 1..T
    mask = causal_mask(T)  # [T, T], 1 = blocked
    print(f"causal mask for T={T} (1 = blocked):")
    print(np.array2string(mask, separator=", "))
    blocked, diagonal = int(mask.sum()), bool(mask.diagonal().any())
    print(f"blocked cells={blocked} = T(T-1)/2 = {T * (T - 1) // 2}; diagonal blocked={diagonal}")
    record("the mask blocks T(T-1)/2 cells, and not the diagonal", blocked == T * (T - 1) // 2 and not diagonal,
           value=blocked, threshold=f"= {T * (T - 1) // 2}, the diagonal open")

    weights = masked_weights(scores, mask)  # [T, T]
    print("weights after masking the scores (rows = queries, columns = keys):")
    print("  (the scores: hand-written, a reconstruction: the page does not give its own; row 2's were\n"
          "   chosen to give the page's weights)" if args.seed is None else
          f"  (the scores: rng({args.seed}) standard normals)")
    for i in range(T):
        print(f"row {i + 1}: {vec(weights[i])}; sum={weights[i].sum():.4f}")
    worst = np.abs(weights.sum(axis=-1) - 1).max()
    print(f"max |row sum - 1|={worst:.8f}")
    record("every row's weights sum to 1", worst < ROW_SUM, value=worst, threshold="every row within 1e-9 of 1")
    future = weights[mask == 1].sum()
    print(f"summed future weight={future}")
    print("  (all the weight on blocked cells, added up: exactly zero, because exp(-inf) = 0)")
    record("the future gets exactly zero weight", future == 0, value=future, threshold="exactly 0")

    # The same with torch's own pieces: the mask nn.Transformer builds, and torch's softmax.
    torch_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)  # [T, T], -inf = blocked
    same = bool(((torch_mask == -np.inf).numpy() == (mask == 1)).all())
    print(f"torch's generate_square_subsequent_mask blocks the same cells: {same}")
    record("torch's own causal mask blocks the same cells", same, value=same, threshold="the same cells blocked")
    torch_weights = torch.softmax(torch.from_numpy(scores) + torch_mask, dim=-1).numpy()  # [T, T]
    print(f"max |these weights - torch softmax(scores + torch's mask)|={np.abs(weights - torch_weights).max():.8f}")

    # The wrong way: leave the scores alone and zero the future *values* instead. The
    # future scores still sit in the softmax denominator and take their share.
    i = min(1, T - 1)  # row 2, the page's (row 1 if T = 1)
    visible = softmax(scores, axis=-1)[i, : i + 1]  # row i + 1 without a mask: its visible keys' weights
    print(f"zeroing future values instead, row {i + 1} visible weights={vec(visible)}; sum={visible.sum():.4f}")
    print(f"  (masked: {vec(weights[i, : i + 1])}; sum={weights[i].sum():.4f}. The scores left unmasked, the future "
          f"keeps {1 - visible.sum():.4f} of\n   row {i + 1}'s softmax, as for any finite scores; "
          "week2/11_mistakes_shown.py, belief 4, measures what\n   zeroing the values does to the output)")
    # With masking, row 2 spreads all its attention over words 1 and 2; with zeroed values
    # the same two words get less, and the missing share is simply lost.

    print(save_figure(plot(weights, mask), figure_path(args, FIGURE)))


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live window

def live_view(seed, printed_T):
    """A T slider and a row picker: the mask and the masked weights of the first T rows and
    columns of score_table(seed) (the printed run's own scores at its T), each cell's weight
    written in it, beside a colour scale; the chosen row's weights as bars, with their sum.
    The scores are drawn once, at the largest T: moving T adds or drops later rows and
    columns and never changes an earlier row. It opens at the printed run's T and at the row
    whose zeroed-values line it printed."""
    from common.live import Blit, View, add_slider, set_quietly  # the Try it view, loaded only for --live
    table = score_table(seed)  # [MOST, MOST]
    fig, (grid_ax, row_ax) = plt.subplots(1, 2, figsize=(13, 7), width_ratios=(3, 2))
    fig.subplots_adjust(bottom=0.24, top=0.86, left=0.07, right=0.97, wspace=0.3)
    T_slider = add_slider(fig, "T", 1, MOST, printed_T, row=1)
    row_slider = add_slider(fig, "row i", 1, MOST, min(2, printed_T))  # its end follows T (fit_rows)
    title = fig.suptitle("")
    weights_image = grid_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, aspect="auto",
                                   interpolation="none")
    blocked_image = grid_ax.imshow(np.zeros((1, 1)), cmap="Greys", vmin=0, vmax=3, aspect="auto",
                                   interpolation="none")  # blocked: grey
    grid_ax.set_box_aspect(1)  # square whatever T is: the table's frame never moves
    fig.colorbar(weights_image, ax=grid_ax, fraction=0.05, pad=0.2, label="weight (grey: blocked, 0)")
    cells = [[grid_ax.text(j, i, "", ha="center", va="center") for j in range(MOST)] for i in range(MOST)]
    sums = [grid_ax.text(1.03, r, "", va="center", fontsize=9, transform=grid_ax.get_yaxis_transform())
            for r in range(MOST)]  # beside the grid, whatever its size
    grid_ax.set(xlabel="key j (the word looked at)", ylabel="query i (the word being written)")
    box = grid_ax.add_patch(plt.Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor="red", linewidth=3))
    bars = row_ax.bar(np.arange(1, MOST + 1), np.zeros(MOST))
    row_ax.set(ylim=(0, 1), xlabel="key j", ylabel="weight")
    blit = Blit(fig)
    # layer 0, what T changes: the table, its numbers, sums and numbering, the bars' numbering, the row
    # slider's end; layer 1, what the row changes
    blit.add(T_slider, title, weights_image, blocked_image, *(text for row in cells for text in row), *sums,
             grid_ax.xaxis, grid_ax.yaxis, grid_ax.title, row_ax.xaxis)
    blit.add(row_slider, box, *bars, row_ax.title, layer=1)
    drawn = {}  # what the T slider drew last: the weights

    def update_T(_):
        T = int(T_slider.val)
        mask = causal_mask(T)
        weights = drawn["weights"] = masked_weights(table[:T, :T], mask)  # [T, T]
        title.set_text(f"Causal mask: row i sees words 1..i only ({scores_said(T)})")
        for image, shown in ((weights_image, np.ma.masked_where(mask == 1, weights)),
                             (blocked_image, np.ma.masked_where(mask == 0, mask))):
            image.set_data(shown)
            image.set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
        size = min(12, 100 / T)  # the numbers fit their cells at every T
        for i, row in enumerate(cells):
            for j, text in enumerate(row):
                visible = i < T and j <= i
                text.set_text(f"{weights[i, j]:.2f}" if visible else "")
                text.set(fontsize=size, color="white" if visible and weights[i, j] < 0.6 else "black")
        for r, text in enumerate(sums):
            text.set_text(f"sum {weights[r].sum():.2f}" if r < T else "")
        grid_ax.set(xlim=(-0.5, T - 0.5), ylim=(T - 0.5, -0.5))
        grid_ax.set_xticks(range(T), [str(j + 1) for j in range(T)])
        grid_ax.set_yticks(range(T), [str(r + 1) for r in range(T)])
        blocked = int(mask.sum())
        grid_ax.set_title(f"weights, T = {T}: {blocked} grey cell{'s' * (blocked != 1)} blocked\n"
                          f"(T(T-1)/2 = {T * (T - 1) // 2})")
        box.set_width(T)
        for j, bar in enumerate(bars):
            bar.set_visible(j < T)
        row_ax.set_xlim(0.4, T + 0.6)
        row_ax.set_xticks(range(1, T + 1))
        fit_rows(T)
        show_row()
        blit.update(0)

    def scores_said(T):
        if T == printed_T:
            return "the printed run's scores"
        if seed is not None:
            return f"{first(T)} of one {MOST} x {MOST} draw, seed {seed}"
        return (f"{first(T)} of the hand-written scores" if T < 4 else
                f"the hand-written 4 x 4, then random scores for words 5..{T}, seed 0")

    def first(T):
        return "the first row and column" if T == 1 else f"the first {T} rows and columns"

    def fit_rows(T):
        """The row slider runs over rows 1..T, its knob on a row there is."""
        row_slider.valmax = T
        row_slider.ax.set_xlim((0, 2) if T == 1 else (1, T))  # (one row: the knob in the middle)
        if row_slider.val > T:
            set_quietly(row_slider, T)

    def show_row():
        weights = drawn["weights"]
        i = int(row_slider.val)
        if i > len(weights):  # set past the last row (a drag or a step stops there)
            set_quietly(row_slider, len(weights))
            i = len(weights)
        box.set_y(i - 1.5)
        for j, bar in enumerate(bars[:len(weights)]):
            bar.set_height(weights[i - 1, j])
            bar.set_color("tab:blue" if j < i else "0.8")
        row_ax.set_title(f"row {i}: {i} visible word{'s' * (i > 1)}; sum = {weights[i - 1].sum():.4f}")

    def update_row(_):
        show_row()
        blit.update(1)

    T_slider.on_changed(update_T)
    row_slider.on_changed(update_row)
    update_T(None)
    return View(fig, {"T": T_slider, "row": row_slider}, blit)


def plot(weights, mask):
    T = len(weights)
    fig, ax = plt.subplots(figsize=(max(5.6, 1.6 + 0.75 * T), max(4.6, 1.4 + 0.65 * T)))  # cells stay legible
    image = ax.imshow(np.ma.masked_where(mask == 1, weights), cmap="viridis", vmin=0, vmax=1)
    for i in range(T):
        for j in range(T):
            if mask[i, j]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85",
                                           edgecolor="0.5", hatch="xx"))
            else:
                ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center",
                        color="white" if weights[i, j] < 0.6 else "black", fontsize=11)
    ax.set_xticks(range(T), [str(j + 1) for j in range(T)])
    ax.set_yticks(range(T), [str(i + 1) for i in range(T)])
    ax.set_xlabel("key position j (the word looked at)")
    ax.set_ylabel("query position i (the word being written)")
    ax.set_title("Causal attention probabilities")
    fig.colorbar(image, ax=ax, label="attention weight (each row sums to 1)")
    fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, facecolor="0.85", edgecolor="0.5", hatch="xx")],
               labels=["blocked: score set to -inf, weight 0"], loc="lower center", frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


DESCRIPTION = ("The causal mask, masked softmax, and why zeroing future values is not masking (Week 2, section 2; "
               "saves Figure 1).")
KNOBS = [knob("--seed", type=SEED, help="draw random scores with this seed instead of the "
              "hand-written 4x4 scores (a reconstruction: the page constrains only row 2)"),
         knob("--seq-len", type=int_range(1, MOST), default=4,
              help="T: the first T rows and columns of the random scores (needs --seed)")]
LIVE = ("a T slider and a row picker: the mask, the weights and each row's sum (the scores drawn once for T up "
        "to 12: a larger T adds later words and changes no earlier row)")
TRY_IT = [("--seed 0 --seq-len 6", "random scores, a bigger staircase (the figure is not saved: add --figure "
           "PATH.png)"),
          ("--seed 0 --seq-len 12 --figure mask12.png", "the largest staircase, saved to mask12.png in this directory")]


def limits(args):
    if args.seed is None and args.seq_len != 4:
        return "--seq-len needs --seed (the hand-written scores are 4x4)"
    return None


FIGURE_HELP = "save Figure 1 here; a default run saves it to week2/figures/causal_mask.png"


LESSON = Lesson(__file__, page=("week2", 2), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                figure=FIGURE_HELP, live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.seed, args.seq_len)


if __name__ == "__main__":
    run(main)
