"""Why divide by sqrt(d_k): the variance of a dot product grows like d_k.

Page: Week 1, section 4 "Why divide by sqrt(d_k)", executed evidence 02_dot_product_variance.

If the d_k entries of q and k are independent with mean 0 and variance 1, then
q.k = sum_i q_i k_i adds d_k terms of variance 1, so Var(q.k) = d_k. Dividing the score by
sqrt(d_k) divides its variance by d_k, back to about 1, whatever the width.

Setup (the pages' own, reproduced exactly): one np.random.default_rng(42) for the whole
loop; for each d_k, q then k, each standard_normal((20000, d_k)); Var is the population
variance (.var()) of the 20,000 row-wise dot products. Drawing all the q's first, or
using the sample variance (ddof=1), prints other last digits.

--live opens a window with a d_k slider and the two spreads side by side; each width there
is drawn from a fresh generator with --seed, as a run with that one --d-k would draw it.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED, check_size, int_range, lesson_parser
from common.live import View, add_live, add_slider, need_window, show
from common.records import outcome, record

import numpy as np

WIDTHS = [2 ** j for j in range(11)]  # the live window's d_k: 1, 2, 4, ..., 1024
RAW_REACH = 5 * 32  # the raw scores' axis: 5 standard deviations at d_k = 1024


def dot_products(rng, pairs, d_k):
    """`pairs` raw scores q.k, for q and k with d_k random entries of mean 0 and variance 1."""
    q = rng.standard_normal((pairs, d_k))  # [pairs, d_k], mean 0, variance 1
    k = rng.standard_normal((pairs, d_k))  # [pairs, d_k]
    return (q * k).sum(axis=1)  # [pairs]: one raw score q.k per pair


def live_view(seed, pairs):
    """A d_k slider; the raw scores' spread and the scaled scores' spread, with their variances."""
    dots = {d_k: dot_products(np.random.default_rng(seed), pairs, d_k) for d_k in WIDTHS}
    from common.figures import plt  # only for the window: a run without --live skips its import

    fig, (raw_ax, scaled_ax) = plt.subplots(1, 2, figsize=(11, 5.5))
    fig.subplots_adjust(bottom=0.25, wspace=0.3)
    slider = add_slider(fig, "d_k", 0, len(WIDTHS) - 1, 6)

    panels = {}
    for ax, title, color, reach in ((raw_ax, "raw q.k", "tab:red", RAW_REACH),
                                    (scaled_ax, "scaled q.k / sqrt(d_k)", "tab:blue", 5)):
        edges = np.linspace(-reach, reach, 61)
        shape = ax.stairs(np.zeros(60), edges, fill=True, color=color)  # the histogram, as one shape
        ax.set(xlim=(-reach, reach), ylim=(0, pairs / 4), xlabel="score")  # fixed: the raw spread visibly widens
        panels[title] = (ax, edges, shape)
    raw_ax.set_ylabel(f"pairs (of {pairs:,})")

    def update(j):
        d_k = WIDTHS[int(j)]
        slider.valtext.set_text(str(d_k))
        raw = dots[d_k]
        for (title, (ax, edges, shape)), values in zip(panels.items(), (raw, raw / np.sqrt(d_k)), strict=True):
            shape.set_data(np.histogram(values, bins=edges)[0])
            ax.set_title(f"{title}: Var = {values.var():.2f}")
        fig.suptitle(f"d_k = {d_k}: the raw spread grows like d_k, the scaled one stays near 1")
        fig.canvas.draw_idle()

    slider.on_changed(update)
    update(slider.val)
    return View(fig, {"d_k": slider})


def main():
    parser = lesson_parser(__file__, "Var(q.k) grows like d_k; scaling by sqrt(d_k) brings it back "
                           "to about 1 (Week 1, section 4).", try_it=[
                               ("--pairs 200", "fewer pairs: noisier estimates, the same trend"),
                               ("--d-k 1 2 512 1024", "wider heads: the raw variance keeps growing, the "
                                "scaled one does not"),
                               ("--seed 0", "other random vectors: other last digits, same story")])
    parser.add_argument("--seed", type=SEED, default=42, help="seed of the NumPy generator")
    parser.add_argument("--pairs", type=int_range(2, 100_000), default=20_000,
                        help="random (q, k) pairs per row")
    parser.add_argument("--d-k", type=int_range(1, 1024), nargs="+", default=[4, 16, 64, 256],
                        help="widths to try")
    add_live(parser, "a d_k slider over 1..1024 and the two spreads (it computes every width: --pairs up to 31,250)")
    args = parser.parse_args()
    widths = [*args.d_k, *WIDTHS] if args.live else args.d_k  # the window computes every width its slider has
    check_size(parser, numbers=args.pairs * max(widths), work=args.pairs * sum(widths),
               knobs=("--pairs",) if args.live else ("--pairs", "--d-k"))
    if args.live:
        need_window(parser)

    rng = np.random.default_rng(args.seed)
    print(f"{args.pairs:,} random pairs (q, k) per row; Var(q.k) is how widely their dot products spread, "
          "target is what theory says (d_k), scaled_var is Var(q.k) / d_k:")
    # "near 1": within 5 standard errors of a variance measured on this many pairs (q.k of
    # width 1 has kurtosis 9, so its variance's relative error is sqrt(8 / pairs); wider is less)
    near = 5 * (8 / args.pairs) ** 0.5
    scaled = []
    for d_k in args.d_k:
        var = dot_products(rng, args.pairs, d_k).var()
        scaled_var = var / d_k  # Var(q.k / sqrt(d_k)) = Var(q.k) / d_k
        scaled.append(scaled_var)
        print(f"d_k={d_k:3d} Var(q.k)={var:8.2f} target={d_k:3d} scaled_var={scaled_var:.3f}")
    gap = max(abs(v - 1) for v in scaled)
    record("Var(q.k) tracks d_k: scaled, it stays near 1", gap, f"every |scaled_var - 1| under {near:.3f}",
           outcome(gap < near))
    # The raw variance tracks d_k; after dividing the scores by sqrt(d_k) it stays near 1,
    # so softmax sees scores of the same spread whatever the head width.
    if args.live:
        show(live_view, args.seed, args.pairs)


if __name__ == "__main__":
    main()
