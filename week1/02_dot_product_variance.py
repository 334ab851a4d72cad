"""Why divide by sqrt(d_k): the variance of a dot product grows like d_k.

Page: Week 1, section 4 "Why divide by sqrt(d_k)", executed evidence 02_dot_product_variance.

If the d_k entries of q and k are independent with mean 0 and variance 1, then
q.k = sum_i q_i k_i adds d_k terms of variance 1, so Var(q.k) = d_k. Dividing the score by
sqrt(d_k) divides its variance by d_k, back to about 1, whatever the width.

Setup (the pages' own, reproduced exactly): one np.random.default_rng(42); for each d_k,
q then k, 20,000 standard normal rows each; Var is the population variance.

Prints, for each width, Var(q.k), the target d_k and the scaled variance; then how far the
scaled variances stray from 1, and what "near 1" allows. Notes: week1/NOTES.md, section 02.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.records import record

import numpy as np

WIDTHS = [2 ** j for j in range(11)]  # the live window's d_k: 1, 2, 4, ..., 1024
RAW_REACH = 5 * 32  # the raw scores' axis: 5 standard deviations at d_k = 1024
NEAR = 5  # "near 1": within 5 times a measured variance's own error (a right formula strays that far < 1 in 10^6)


def dot_products(rng, pairs, d_k):
    """`pairs` raw scores q.k, for q and k with d_k random entries of mean 0 and variance 1."""
    q = rng.standard_normal((pairs, d_k))  # [pairs, d_k], mean 0, variance 1
    k = rng.standard_normal((pairs, d_k))  # [pairs, d_k]
    return (q * k).sum(axis=1)  # [pairs]: one raw score q.k per pair


def lesson(args):
    """Var(q.k) at each width, raw and scaled, from the page's draws."""
    rng = np.random.default_rng(args.seed)
    printed = {}  # d_k -> the raw scores printed (the window shows these at that width)
    rows = []
    for d_k in args.d_k:
        printed[d_k] = dot_products(rng, args.pairs, d_k)
        var = printed[d_k].var()  # Var(q.k): about d_k
        scaled_var = var / d_k  # Var(q.k / sqrt(d_k)) = Var(q.k) / d_k: about 1
        rows.append((d_k, var, scaled_var))

    wide = max(3, *(len(str(d_k)) for d_k, _, _ in rows))  # the d_k columns: 3 digits on the page, 4 for 1024
    var_wide = max(8, *(len(f"{var:.2f}") for _, var, _ in rows))  # Var(q.k)'s column: 8 on the page
    print(f"{args.pairs:,} random pairs (q, k) per row; Var(q.k) is how widely their dot products spread,\n"
          "  target is what theory says (d_k), scaled_var is Var(q.k) / d_k:")
    for d_k, var, scaled_var in rows:
        print(f"d_k={d_k:{wide}d} Var(q.k)={var:{var_wide}.2f} target={d_k:{wide}d} scaled_var={scaled_var:.3f}")
    # The raw variance tracks d_k; after dividing the scores by sqrt(d_k) it stays near 1,
    # so softmax sees scores of the same spread whatever the head width.
    error = (8 / args.pairs) ** 0.5  # a variance measured on --pairs pairs is off by about this share of it: 0.02
    near = NEAR * error  # 0.10 at 20,000 pairs; at the page's widths a wrong scaling (by d_k, or none) is 0.75 off
    gap = max(abs(scaled_var - 1) for _, _, scaled_var in rows)
    print(f"largest |scaled_var - 1|={gap:.3f}, near 1 (under {near:.3f} = {NEAR} x sqrt(8 / {args.pairs:,}): "
          f"{NEAR} times the error\n  of a variance measured on {args.pairs:,} pairs; fewer pairs, a looser limit)")
    record("Var(q.k) tracks d_k: scaled, it stays near 1", gap < near, value=gap,
           threshold=f"every |scaled_var - 1| under {near:.3f}")
    return printed


# ---------------------------------------------------------------- optional: knobs, Try it, live window

def live_view(seed, pairs, printed, d_k):
    """A d_k slider, opening at d_k; the raw scores' spread and the scaled scores' spread,
    with their variances. printed: {d_k: the printed run's raw scores}, shown at those
    widths; the other widths are drawn from a fresh generator with `seed`, as a run with
    that one --d-k would draw them."""
    from common.live import Blit, View, add_slider, allowed  # the Try it view, loaded only for --live
    widths = allowed(WIDTHS, *printed)
    dots = {d_k: printed.get(d_k) for d_k in widths}
    dots.update({d_k: dot_products(np.random.default_rng(seed), pairs, d_k) for d_k, v in dots.items() if v is None})
    from common.figures import plt  # only for the window: a run without --live skips its import

    fig, (raw_ax, scaled_ax) = plt.subplots(1, 2, figsize=(11, 5.5))
    fig.subplots_adjust(bottom=0.25, wspace=0.3)
    slider = add_slider(fig, "d_k", 0, len(widths) - 1, widths.index(d_k))
    blit = Blit(fig)
    blit.add(slider)
    panels = []
    for ax, title, color, reach, scale in ((raw_ax, "raw q.k", "tab:red", RAW_REACH, lambda d_k: 1),
                                           (scaled_ax, "scaled q.k / sqrt(d_k)", "tab:blue", 5, np.sqrt)):
        edges = np.linspace(-reach, reach, 61)
        counts = {d_k: np.histogram(dots[d_k] / scale(d_k), bins=edges)[0] for d_k in widths}
        shape = ax.stairs(np.zeros(60), edges, fill=True, color=color)  # the histogram, as one shape
        tallest = max(c.max() for c in counts.values())  # fixed axes for every width: the raw spread visibly widens
        ax.set(xlim=(-reach, reach), ylim=(0, 1.05 * tallest), xlabel="score")
        panels.append((ax, title, scale, counts, shape))
        blit.add(shape, ax.title)
    raw_ax.set_ylabel(f"pairs (of {pairs:,})")
    suptitle = blit.add(fig.suptitle(""))

    def update(j):
        d_k = widths[int(j)]
        slider.valtext.set_text(str(d_k))
        for ax, title, scale, counts, shape in panels:
            shape.set_data(counts[d_k])
            ax.set_title(f"{title}: Var = {(dots[d_k] / scale(d_k)).var():.2f}")
        suptitle.set_text(f"d_k = {d_k}: the raw spread grows like d_k, the scaled one stays near 1")
        blit.update()

    slider.on_changed(update)
    update(slider.val)
    return View(fig, {"d_k": slider}, blit)



DESCRIPTION = "Var(q.k) grows like d_k; scaling by sqrt(d_k) brings it back to about 1 (Week 1, section 4)."
KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the NumPy generator"),
         knob("--pairs", type=int_range(2, 100_000), default=20_000, help="random (q, k) pairs per row"),
         knob("--d-k", type=int_range(1, 1024), nargs="+", default=[4, 16, 64, 256], help="widths to try")]
LIVE = "a d_k slider over 1..1024 and the two spreads (it computes every width: --pairs up to 31,250)"
TRY_IT = [("--pairs 200", "fewer pairs: noisier estimates, the same trend"),
          ("--d-k 1 2 512 1024", "wider heads: the raw variance keeps growing, the scaled one does not"),
          ("--seed 0", "other random vectors: other last digits, same story")]


def limits(args):
    widths = [*args.d_k, *WIDTHS] if args.live else args.d_k  # the window computes every width its slider has
    return too_big(numbers=args.pairs * max(widths), work=args.pairs * sum(widths),
                   knobs=("--pairs",) if args.live else ("--pairs", "--d-k"))


LESSON = Lesson(__file__, page=("week1", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    printed = lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.seed, args.pairs, printed, args.d_k[-1])  # opens at the last width printed


if __name__ == "__main__":
    run(main)
