"""Sinusoidal positional encoding: a tag of sines and cosines for "where am I?".

Page: Week 2, section 5 "Sinusoidal positional encoding: a tag for where am I?",
03_sinusoidal_pe.py.

    PE(p, 2i) = sin(p w_i),   PE(p, 2i+1) = cos(p w_i),   w_i = 10000^(-2i/d)

Each pair (sin p w_i, cos p w_i) is a point on a circle turning at its own speed, like
the hands of a clock. Consequences checked below: PE(0) = [0, 1, 0, 1, ...]; every entry
lies in [-1, 1]; each tag has squared length d/2 (one sin^2 + cos^2 = 1 per pair); and
PE(p + k) is PE(p) turned by the angles k w_i: a fixed rotation that depends on k only.

Prints the gap between the page's formula and the form common in PyTorch code (rounding
noise), the page's d = 4 hand-check, the bounds and the squared length, and the rotation.
Setup (prints the page's line; not proven to be the original): d_model 16, positions
0..9. Notes: week2/NOTES.md, section 03.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import Lesson, int_range, knob, too_big
from common.printing import vec
from common.records import record

import numpy as np
import torch

LENGTH = 1e-9  # a tag's squared length "is d/2" within this: float64 rounding of d squares stays far below
LIVE_POSITIONS = 50  # rows of the live window's table, at least (all of --max-len's if more)


def sinusoidal_pe(max_len, d):
    """[max_len, d] table, row p = PE(p), straight from the formula (float64)."""
    p = np.arange(max_len)[:, None]  # [max_len, 1]
    i = np.arange(d // 2)[None, :]  # [1, d/2]: the pair index
    omega = 10000.0 ** (-2 * i / d)  # [1, d/2]: one speed per pair
    pe = np.zeros((max_len, d))
    pe[:, 0::2] = np.sin(p * omega)  # even coordinates 2i
    pe[:, 1::2] = np.cos(p * omega)  # odd coordinates 2i + 1
    return pe


def torch_pe(max_len, d):
    """The common PyTorch way to write it (float32, exp/log form of the speeds)."""
    position = torch.arange(max_len).unsqueeze(1).float()  # [max_len, 1]
    div_term = torch.exp(torch.arange(0, d, 2).float() * -(math.log(10000.0) / d))  # [d/2]
    pe = torch.zeros(max_len, d)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def rotation(k, d):
    """Block-diagonal [d, d]: pair i turned by the angle k w_i. Built from k alone, no p."""
    R = np.zeros((d, d))
    for i in range(d // 2):
        angle = k * 10000.0 ** (-2 * i / d)
        c, s = np.cos(angle), np.sin(angle)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        R[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = [[c, s], [-s, c]]
    return R


def lesson(args):
    """The table by the formula beside torch's form, the page's d = 4 hand-check, bounds, length, rotation."""
    d, max_len = args.d_model, args.max_len
    pe = sinusoidal_pe(max_len, d)  # [max_len, d]
    gap = np.abs(pe - torch_pe(max_len, d).double().numpy()).max()
    print(f"PE table [max_len, d]=[{max_len}, {d}]")
    print(f"max |formula (NumPy) - div_term form (torch)|={gap:.8f}")
    print("  (the page's formula vs the way PyTorch code usually writes it, with the speeds as")
    print("   exp(-2i ln(10000) / d): the same table up to float32 rounding;")
    print("   float32 keeps p w_i to about 7 significant digits, so this gap grows with the position:")
    print(f"   up to about {(max_len - 1) * 2 ** -24:.0e} here)")

    small = sinusoidal_pe(2, 4)  # [2, 4]: the page's hand-check, d = 4
    omega = 10000.0 ** (-2 * np.arange(2) / 4)  # [2]: w_0, w_1
    print(f"the page's hand-check, d=4 (whatever --d-model is): omega={vec(omega)};")
    print(f"  PE(0)={vec(small[0])}; PE(1)={vec(small[1])}")
    print(f"  their squared lengths: {(small[0] ** 2).sum():.4f} and {(small[1] ** 2).sum():.4f} = d/2 (here 2)")

    bounded = bool((np.abs(pe) <= 1).all())
    print(f"every entry in [-1, 1]: {bounded} (min {pe.min():.4f}, max {pe.max():.4f})")
    record("every entry lies in [-1, 1]", bounded, value=np.abs(pe).max(), threshold="every |entry| at most 1")
    sq_len = (pe ** 2).sum(axis=1)  # [max_len]
    print(f"squared length of every PE(p) in the d={d} table: {sq_len.min():.6f}..{sq_len.max():.6f} = d/2 = {d / 2:g}")
    worst = np.abs(sq_len - d / 2).max()
    record("the squared length of every tag is d/2", worst < LENGTH, value=worst,
           threshold=f"every one within 1e-9 of d/2 = {d / 2:g}")

    print("R(k) below turns each (sin, cos) pair by the angle k w_i; it is built from k alone:")
    for k in args.offset:
        R = rotation(k, d)  # [d, d]: one matrix for every p
        err = np.abs(pe[k:] - pe[:-k] @ R.T).max()  # rows p = 0..max_len-1-k
        print(f"max |PE(p+{k}) - R({k}) PE(p)|={err:.8f}")
    # Zero up to float rounding for every p: "k steps later" is the same linear map
    # (a rotation of each sin/cos pair) wherever you are in the sentence.

    # The clock: its hands together tell every position apart (no two tags alike).
    distinct = len(np.unique(np.round(pe, 9), axis=0))
    print(f"the hands together tell the positions apart: the {max_len} tags are {distinct} different ones "
          "(to 9 decimals)")
    record("every position gets a tag of its own", distinct == max_len, value=distinct,
           threshold=f"= {max_len}, one per position")


# ---------------------------------------------------------------- optional: knobs, Try it, live window

def live_view(d, positions):
    """A position slider and a d_model slider: the PE table of positions 0..positions-1 beside
    its colour scale, row p boxed and pointed at, the other rows faded; and PE(p) itself as
    bars, with its squared length (always d/2). It opens at the printed run's d."""
    from common.figures import plt  # only for the window: a run without --live skips its import
    from common.live import Blit, View, add_slider  # the Try it view, loaded only for --live

    from matplotlib.ticker import MaxNLocator

    widest = max(64, d)
    fig, (table_ax, row_ax) = plt.subplots(1, 2, figsize=(12, 6), width_ratios=(3, 2))
    fig.subplots_adjust(bottom=0.28, wspace=0.25)
    p_slider = add_slider(fig, "position p", 0, positions - 1, 1, row=1)
    d_slider = add_slider(fig, "d_model", 2, widest, d, step=2)
    table = table_ax.imshow(np.zeros((positions, 1)), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    fig.colorbar(table, ax=table_ax, pad=0.06, label="entry PE(p, c): blue -1, white 0, red +1")
    table_ax.set(xlabel="coordinate c (even: sin, odd: cos)", ylabel="position p")
    box = table_ax.add_patch(plt.Rectangle((-0.5, -0.5), d, 1, fill=False, edgecolor="black", linewidth=1.2))
    faded = [table_ax.add_patch(plt.Rectangle((-0.5, -0.5), d, 1, facecolor="white", alpha=0.7, edgecolor="none"))
             for _ in range(2)]  # the rows above p and those below it
    (pointer,) = table_ax.plot([1.02], [0], marker="<", markersize=12, color="black", clip_on=False,
                               transform=table_ax.get_yaxis_transform())  # beside the table, at row p
    bars = row_ax.bar(range(widest), np.zeros(widest), color=["tab:orange", "tab:purple"] * (widest // 2))
    for axis in (table_ax.xaxis, table_ax.yaxis, row_ax.xaxis):  # whole coordinates and positions only
        axis.set_major_locator(MaxNLocator(integer=True))
    row_ax.set(ylim=(-1.05, 1.05), xlabel="coordinate c (orange: sin, purple: cos)")
    fig.suptitle("Each sin/cos pair turns at its own speed; every entry stays in [-1, 1]")
    blit = Blit(fig)
    # layer 0, what d changes: the table and the coordinates' numbering; layer 1, what the position changes
    blit.add(d_slider, table, table_ax.xaxis, table_ax.title, row_ax.xaxis)
    blit.add(p_slider, box, *faded, pointer, *bars, row_ax.title, layer=1)
    drawn = {}  # the table the d_model slider drew last

    def update_d(_):
        d = int(d_slider.val)
        pe = drawn["pe"] = sinusoidal_pe(positions, d)  # [positions, d]
        table.set_data(pe)
        table.set_extent((-0.5, d - 0.5, positions - 0.5, -0.5))
        table_ax.set(xlim=(-0.5, d - 0.5), title=f"PE table, positions 0..{positions - 1}, d = {d}")
        for patch in (box, *faded):
            patch.set_width(d)
        for i, bar in enumerate(bars):
            bar.set_visible(i < d)
        row_ax.set_xlim(-0.6, d - 0.4)
        show_p()
        blit.update(0)

    def show_p():
        p, pe = int(p_slider.val), drawn["pe"]
        box.set_y(p - 0.5)
        faded[0].set_height(p)  # rows 0..p-1
        faded[1].set(y=p + 0.5, height=positions - 1 - p)  # rows p+1..positions-1
        pointer.set_ydata([p])
        for bar, value in zip(bars[:len(pe[p])], pe[p], strict=True):  # the first d bars
            bar.set_height(value)
        row_ax.set_title(f"PE({p}): squared length {(pe[p] ** 2).sum():.4f} = d/2 = {pe.shape[1] / 2:g}")

    def update_p(_):
        show_p()
        blit.update(1)

    p_slider.on_changed(update_p)
    d_slider.on_changed(update_d)
    update_d(None)
    return View(fig, {"position": p_slider, "d_model": d_slider}, blit)


DESCRIPTION = "Sinusoidal positional encoding: formula, hand-check, bounds, length, rotation (Week 2, section 5)."
KNOBS = [knob("--d-model", type=int_range(2, 4096), default=16, help="d, even"),
         knob("--max-len", type=int_range(2, 10000), default=10,
              help="positions 0..max_len-1 (above every --offset)"),
         knob("--offset", type=int_range(1, 9999), nargs="+", default=[1, 3],
              help="offsets k for the rotation check, each below --max-len")]
LIVE = "a position slider and a d_model slider: the PE table and its colour scale, the chosen row marked"
TRY_IT = [("--d-model 64 --max-len 100", "a bigger table: every property still holds"),
          ("--max-len 100 --offset 1 5 50", "the rotation check for offsets 1, 5 and 50")]


def limits(args):
    d, max_len = args.d_model, args.max_len
    if d % 2:
        return f"--d-model must be even (sin/cos pairs), got {d}"
    if max(args.offset) >= max_len:
        return f"--offset must be below --max-len {max_len} (got {max(args.offset)})"
    return too_big(numbers=max_len * d, work=len(args.offset) * max_len * d * d,
                   knobs=("--max-len", "--d-model", "--offset (fewer values)"))


LESSON = Lesson(__file__, page=("week2", 5), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.d_model, max(LIVE_POSITIONS, args.max_len))


if __name__ == "__main__":
    run(main)
