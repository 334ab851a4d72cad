"""Why saturation stalls learning: without 1/sqrt(d_k) the softmax turns one-hot as d_k grows.

Page: Week 1, section 4 "Why divide by sqrt(d_k) (scaled dot-product)": "Big spread makes
softmax nearly one-hot (one weight near 1, the rest near 0), and then the gradients are
close to zero, so learning stalls. The fix: divide by sqrt(d_k)."

    scores = Q K^T            (unscaled: variance d_k)
    scores = Q K^T / sqrt(d_k) (scaled: variance about 1)
    A = softmax(scores), one row per query, over the T keys

For each width d_k and both kinds of score, two measurements over every row of A:
  - the largest weight of the row (1/T if all keys get the same share, 1 if one-hot);
  - the gradient of the softmax: the size (Frobenius norm) of the Jacobian d A_row /
    d scores_row, by torch autograd, one backward pass per key. In training, every gradient
    on its way from the loss back to the scores, and through them to W_Q and W_K, is
    multiplied by this Jacobian; one-hot rows make it 0 (week1/17 trains a head to see what follows).

Prints, for each width, both measurements unscaled and scaled, then a verdict on each claim;
saves a figure. Setup (choices; the page gives no sizes): 256 random sentences of 16 words,
Q and K standard normal (mean 0, variance 1, as in the page's argument), float64. The
thresholds are constants below. Notes: week1/NOTES.md, section 11.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.figures import figure_path, plt, save_figure
from common.records import record, said

import numpy as np
import torch

FIGURE = Path(__file__).resolve().parent / "figures" / "softmax_saturation.png"
ONE_HOT = 0.9  # a mean largest weight above this is nearly one-hot
VANISHED = 0.1  # a mean gradient size below this has nearly vanished
STEADY = 0.25  # the weights keep their spread: largest weight within 25% of its widest-d_k value
MIN_ROWS = 512  # fewer rows give means too noisy to judge
WIDE = 1024  # the widest head allowed: the width at which "one-hot as d_k grows" is judged
LIVE_WIDTHS = [2 ** j for j in range(11)]  # the live window's d_k: 1, 2, 4, ..., 1024 (and those printed)


def scores(Q, K, scaled):
    """Q K^T [B, T, T], divided by sqrt(d_k) if scaled."""
    raw = Q @ K.transpose(-2, -1)  # [B, T, T]: one dot product q.k per (query, key)
    return raw / math.sqrt(Q.shape[-1]) if scaled else raw


def queries_and_keys(rng, B, T, d_k):
    """Q then K, each [B, T, d_k] of standard normals (float64), from the generator rng."""
    Q = torch.from_numpy(rng.standard_normal((B, T, d_k)))  # [B, T, d_k]
    K = torch.from_numpy(rng.standard_normal((B, T, d_k)))  # [B, T, d_k]
    return Q, K


def one_query(S):
    """The softmax weights of sentence 1's first query, [T], from scores S [B, T, T]."""
    return torch.softmax(S[0, 0], dim=-1).numpy()


def looks(weight, gradient):
    """What the means show, in words, judged with the table's thresholds."""
    return (("nearly one-hot" if weight > ONE_HOT else "not one-hot") + ", gradient " +
            ("nearly gone" if gradient < VANISHED else "alive"))


def saturation(S):
    """Mean largest weight and mean softmax-gradient size over the rows of softmax(S)."""
    S = S.detach().requires_grad_()  # [B, T, T]
    A = torch.softmax(S, dim=-1)  # each row sums to 1 over the keys
    grad2 = 0  # [B, T]: squared size of d A_row / d S_row, summed key by key
    for j in range(A.shape[-1]):  # one backward pass per key j: d A[..., j] / d S
        (g,) = torch.autograd.grad(A[..., j].sum(), S, retain_graph=True)  # rows do not mix
        grad2 = grad2 + g.pow(2).sum(dim=-1)
    return A.max(dim=-1).values.mean().item(), grad2.sqrt().mean().item()


def lesson(args):
    """For each width, the largest weight and the softmax's gradient, unscaled and scaled; a verdict on each claim."""
    B, T, widths = args.sentences, args.tokens, sorted(set(args.d_k))
    torch.set_num_threads(1)  # small matrices: more threads only add waiting
    rng = np.random.default_rng(args.seed)
    results = {"unscaled": [], "scaled": []}  # name -> [(largest weight, gradient size)] per d_k
    print(f"softmax of random scores over T={T} keys: means over {B * T:,} rows "
          f"(B={B} sentences x T={T} queries)")
    print(f"{'d_k':>6} | {'unscaled: largest weight':>24} {'gradient':>9} | {'scaled: largest weight':>22} "
          f"{'gradient':>9}")
    drawn = {}  # d_k -> what the window shows at that width: ({(d_k, name): one query's weights}, {(d_k, name): means})
    for d_k in widths:
        Q, K = queries_and_keys(rng, B, T, d_k)
        for name in results:
            results[name].append(saturation(scores(Q, K, scaled=name == "scaled")))
        if args.live:
            drawn[d_k] = ({(d_k, name): one_query(scores(Q, K, scaled=name == "scaled")) for name in results},
                          {(d_k, name): results[name][-1] for name in results})
        (w_u, g_u), (w_s, g_s) = results["unscaled"][-1], results["scaled"][-1]
        print(f"{d_k:6d} | {w_u:24.3f} {g_u:9.3f} | {w_s:22.3f} {g_s:9.3f}")
    print("  (gradient: how much the weights move when the scores move a little: the size of the")
    print("   softmax's slope, written |d softmax / d scores|)")
    print(f"  (all {T} weights equal: largest weight 1/T = {1 / T:.4f}, gradient sqrt(T-1)/T = "
          f"{math.sqrt(T - 1) / T:.4f};")
    two = torch.zeros(T, dtype=torch.float64)
    two[:2] = 0.5  # two equal weights, the rest 0
    print(f"   one-hot: largest weight 1, gradient 0; two equal weights, the rest 0: gradient "
          f"{(torch.diag(two) - torch.outer(two, two)).norm().item():.4f})")
    print("  (so the slope is largest between even and one-hot: a row a little sharper than even, as the")
    print("   unscaled ones are at small d_k, slopes more than an even row; only near one-hot does it fade.")
    print("   Whether learning then stalls is trained, not assumed, in week1/17_unscaled_scores_stall.py)")

    wide = widths[-1]
    narrow, (w_narrow, _), (w, g) = widths[0], results["unscaled"][0], results["unscaled"][-1]
    grows = w_narrow <= ONE_HOT  # "turns" one-hot: not one-hot yet at the narrowest width
    one_hot, vanished = w > ONE_HOT, g < VANISHED
    print("\nClaim: unscaled, the softmax turns nearly one-hot as d_k grows and its gradient nearly vanishes.")
    print(f"  at d_k={narrow}: largest weight {w_narrow:.3f} "
          + ("(not one-hot yet, for it to turn)" if grows else f"(already one-hot: above {ONE_HOT:g})"))
    print(f"  at d_k={wide}: largest weight {w:.3f} (one-hot if above {ONE_HOT:g}), "
          f"gradient {g:.3f} (vanished if below {VANISHED:g})")
    untested = None  # why this run cannot judge the claim, if it cannot
    if wide < WIDE:  # "as d_k grows": a narrow head is not expected to be one-hot yet
        untested = f"the page says this happens as d_k grows, and it is judged at d_k={WIDE} (add {WIDE} to --d-k)"
    elif not grows and not args.at_defaults:
        untested = f"already one-hot at d_k={narrow}, so nothing turns (add a narrow width such as 4 to --d-k)"
    saturates = None if untested else grows and one_hot and vanished
    if untested:
        print(f"Verdict: {said(None)} at these widths: {untested}")
    elif saturates:
        print(f"Verdict: {said(True)}")
    else:
        print(f"Verdict: {said(False)} (not one-hot at d_k={narrow}: {grows}; nearly one-hot at d_k={wide}: "
              f"{one_hot}; gradient nearly gone: {vanished})")
    record("unscaled, the softmax turns one-hot and its gradient vanishes", saturates,
           value=f"largest weight {w_narrow:.3f} -> {w:.3f}, gradient {g:.3f}",
           threshold=f"not one-hot at the narrowest width, above {ONE_HOT:g} and gradient below {VANISHED:g} "
           "at the widest", why=untested)

    rows = results["scaled"]
    w_wide = rows[-1][0]
    w_lo, w_hi = min(w for w, _ in rows), max(w for w, _ in rows)
    g_lo = min(g for _, g in rows)
    healthy = w_hi < ONE_HOT and g_lo >= VANISHED
    steady = all(abs(w - w_wide) <= STEADY * w_wide for w, _ in rows)
    print("Claim: scaled by 1/sqrt(d_k), both stay healthy at every width.")
    print(f"  largest weight {w_lo:.3f}..{w_hi:.3f} (healthy if below {ONE_HOT:g} and within {STEADY:.0%} "
          f"of d_k={wide}'s {w_wide:.3f}:\n"
          "    the same spread at every width)")
    print(f"  gradient at least {g_lo:.3f} (healthy if {VANISHED:g} or more)")
    print(f"Verdict: {said(True)}" if healthy and steady else
          f"Verdict: {said(False)} (not one-hot, gradient alive: {healthy}; same spread: {steady})")
    record("scaled, the softmax stays healthy at every width", healthy and steady,
           value=f"largest weight {w_lo:.3f}..{w_hi:.3f}, gradient at least {g_lo:.3f}",
           threshold=f"largest weight below {ONE_HOT:g} and within {STEADY:.0%} of the widest's; gradient "
           f"{VANISHED:g} or more")
    # The scores' spread grows like sqrt(d_k); dividing by sqrt(d_k) gives the softmax the
    # same spread at every width, so it neither saturates nor stops passing gradient back.

    print(save_figure(plot(widths, T, results), figure_path(args, FIGURE)))
    return drawn, wide


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live window

def live_view(seed, B, T, printed, d_k):
    """A d_k slider, opening at d_k; one query's softmax weights over its T keys, unscaled
    and scaled; the means over all B x T rows of the largest weight and of the gradient,
    computed as the table computes them. printed: {d_k: (rows, means)} as below, the printed
    run's own, shown at those widths; every other width is drawn from a fresh generator with
    `seed`, as the first width of a run would be."""
    from common.live import Blit, View, add_slider, allowed, whole_ticks  # the Try it view, loaded only for --live
    widths = allowed(LIVE_WIDTHS, *printed)
    rows, means = {}, {}  # (d_k, "unscaled" or "scaled") -> one query's weights [T]; (largest weight, gradient)
    for width in widths:
        if width in printed:
            rows.update(printed[width][0])
            means.update(printed[width][1])
            continue
        Q, K = queries_and_keys(np.random.default_rng(seed), B, T, width)
        for name in ("unscaled", "scaled"):
            S = scores(Q, K, scaled=name == "scaled")
            rows[width, name] = one_query(S)
            means[width, name] = saturation(S)
    fig, (row_ax, mean_ax) = plt.subplots(1, 2, figsize=(12, 5.5), width_ratios=(3, 2))
    fig.subplots_adjust(bottom=0.25, top=0.8, wspace=0.3)
    slider = add_slider(fig, "d_k", 0, len(widths) - 1, widths.index(d_k))
    blit = Blit(fig)
    blit.add(slider)
    colors = {"unscaled": "tab:red", "scaled": "tab:blue"}
    bars = {name: row_ax.bar(np.arange(T) + shift, np.zeros(T), width=0.4, color=colors[name], label=name)
            for shift, name in ((-0.2, "unscaled"), (0.2, "scaled"))}
    row_ax.set(ylim=(0, 1), xlabel="key", ylabel="softmax weight", title="one query's weights over its keys")
    whole_ticks(row_ax.xaxis, T, first=1)
    row_ax.legend(loc="upper right")
    mean_bars = mean_ax.bar([-0.2, 0.2, 0.8, 1.2], np.zeros(4), width=0.35, edgecolor="white",
                            color=[colors["unscaled"]] * 2 + [colors["scaled"]] * 2, hatch=["", "//"] * 2)
    mean_ax.set_xticks([-0.2, 0.2, 0.8, 1.2], ["largest\nweight", "gradient"] * 2)
    mean_ax.set_ylim(0, 1)
    title = fig.suptitle("")
    blit.add(*bars["unscaled"], *bars["scaled"], *mean_bars, mean_ax.title, title)

    def update(j):
        d_k = widths[int(j)]
        slider.valtext.set_text(str(d_k))
        for name, bar_set in bars.items():
            for bar, height in zip(bar_set, rows[d_k, name], strict=True):
                bar.set_height(height)
        (w_u, g_u), (w_s, g_s) = means[d_k, "unscaled"], means[d_k, "scaled"]
        for bar, height in zip(mean_bars, (w_u, g_u, w_s, g_s), strict=True):
            bar.set_height(height)
        mean_ax.set_title(f"means over {B * T:,} rows\nunscaled {w_u:.3f}, {g_u:.3f}; scaled {w_s:.3f}, {g_s:.3f}")
        title.set_text(f"d_k = {d_k}: unscaled, {looks(w_u, g_u)}; scaled, {looks(w_s, g_s)}")
        blit.update()

    slider.on_changed(update)
    update(slider.val)
    return View(fig, {"d_k": slider}, blit)


def plot(widths, T, results):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.6))
    style = {"unscaled": dict(color="tab:red", marker="o", label="unscaled: Q K^T"),
             "scaled": dict(color="tab:blue", marker="s", label="scaled: Q K^T / sqrt(d_k)")}
    for name, rows in results.items():
        left.plot(widths, [r[0] for r in rows], **style[name])
        right.plot(widths, [r[1] for r in rows], **style[name])
    even = dict(color="0.4", linestyle="--", label=f"all {T} weights equal: weight 1/T, gradient sqrt(T-1)/T")
    left.axhline(1, color="0.4", linestyle=":", label="one-hot")
    left.axhline(1 / T, **even)
    right.axhline(math.sqrt(T - 1) / T, **even)
    left.set_ylim(0, 1.05)
    left.set_ylabel("largest weight in a row (mean)")
    left.set_title("How one-hot the softmax is")
    right.set_ylim(bottom=0)
    right.set_ylabel("size of d softmax / d scores (mean)")
    right.set_title("How much gradient gets through")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(widths, [str(d) for d in widths])
        ax.minorticks_off()
        ax.set_xlabel("d_k, numbers per query and key")
        ax.grid(alpha=0.3)
    fig.legend(*left.get_legend_handles_labels(), loc="lower center", ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


DESCRIPTION = ("Largest softmax weight and softmax gradient for d_k = 4 .. 1024, with and without 1/sqrt(d_k) (Week "
               "1, section 4).")
KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the NumPy generator"),
         knob("--d-k", type=int_range(1, WIDE), nargs="+", default=[4, 16, 64, 256, 1024],
              help="widths d_k to try"),
         knob("--sentences", type=int_range(1, 4096), default=256,
              help="B, random sentences per width (B x --tokens must be at least 512; above 1,024, the "
              "size limit may ask for fewer --tokens or narrower --d-k)"),
         knob("--tokens", type=int_range(2, 64), default=16,
              help="T, words (keys) per sentence (above 32, the size limit may ask for fewer --sentences)")]
LIVE = ("a d_k slider over 1..1024: one query's weights, and the means of the table (it computes every "
        "width: the size limit counts them)")
TRY_IT = [("--seed 7", "other random queries and keys: the third decimal moves, the verdicts do not"),
          ("--d-k 1 2 4 8 16 32 64 128 256 512 1024", "every power of two"),
          ("--tokens 64 --sentences 64", "64 keys per row (still 4,096 rows): the unscaled softmax still turns "
           "nearly one-hot"),
          ("--tokens 2 --sentences 2048", "two keys per row: the same story")]


def limits(args):
    B, T, widths = args.sentences, args.tokens, sorted(set(args.d_k))
    if len(widths) < 2:
        return "--d-k needs at least two different widths to compare"
    if B * T < MIN_ROWS:
        return f"--sentences x --tokens is {B * T}; at least {MIN_ROWS} rows are needed for steady means"
    computed = widths + (LIVE_WIDTHS if args.live else [])  # the window computes every width its slider has
    return too_big(numbers=B * T * max(computed + [T]),
                   work=sum(2 * B * T * T * d_k + 2 * T * B * T * T for d_k in computed),
                   knobs=("--sentences", "--tokens") if args.live else ("--sentences", "--tokens", "--d-k"))


FIGURE_HELP = "where to save the figure"


LESSON = Lesson(__file__, page=("week1", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                figure=FIGURE_HELP, live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    drawn, wide = lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.seed, args.sentences, args.tokens, drawn, wide)  # opens at the widest width printed


if __name__ == "__main__":
    run(main)
