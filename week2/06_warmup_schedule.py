"""The Transformer's warm-up learning-rate schedule: a linear ramp, then a slow decay.

Page: Week 2, section 7 "Training tricks: label smoothing and the warm-up schedule",
06_warmup_schedule.py and Figure 3 (learning-rate schedule).

    lr(s) = d^(-1/2) * min(s^(-1/2), s * w^(-3/2)),   w = 4000 warm-up steps

For s < w the second term is smaller: lr grows linearly in s. For s > w the first is
smaller: lr decays like 1/sqrt(s). The two meet at s = w, the peak.

Prints the page's table, where each width peaks, and the ratios the page works out by hand;
saves Figure 3. Setup (the page's table, exactly): this formula, printed with 10 decimals.
Notes: week2/NOTES.md, section 06.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.records import record

import numpy as np

SAME = 1e-12  # two ratios are "the same" within this: float64 rounding of the formula is about 1e-16
FIGURE = Path(__file__).resolve().parent / "figures" / "warmup_schedule.png"


def learning_rate(step, d_model, warmup=4000):
    """lr(s) = d^(-1/2) min(s^(-1/2), s w^(-3/2)), for one step s or an array of them."""
    step = np.asarray(step, dtype=float)
    return d_model ** -0.5 * np.minimum(step ** -0.5, step * warmup ** -1.5)


def peak_step(d_model, warmup):
    """The step with the largest rate, searched over the first 5 w steps."""
    horizon = np.arange(1, 5 * warmup + 1)
    return int(horizon[np.argmax(learning_rate(horizon, d_model, warmup))])


def lesson(args):
    """The page's table, the peak, the ratios the page works out by hand; saves Figure 3."""
    widths, w = args.d_model, args.warmup
    print("step     " + "".join(f"{f'd={d}':<15}" for d in widths).rstrip())
    for s in args.steps:
        print(f"{s:<9}" + "".join(f"{learning_rate(s, d, w):<15.10f}" for d in widths).rstrip())

    horizon = np.arange(1, 5 * w + 1)  # the first 5w steps: the ratios and the figure's curves
    peaks = [peak_step(d, w) for d in widths]
    where = ", ".join(f"d={d} at step {p}" for d, p in zip(widths, peaks, strict=True))
    print(f"peak: {where} (w = {w})")
    record("the rate peaks at step w", all(p == w for p in peaks), value=str(peaks),
           threshold=f"every peak at step w = {w}")

    d = widths[0]
    peak = learning_rate(w, d, w)
    if w % 4 == 0:  # step w/4 exists: a quarter of the way up the ramp
        quarter = learning_rate(w // 4, d, w) / peak
        print(f"d={d}: lr(w/4) / peak={quarter:.4f} (a quarter of the way up the linear ramp)")
        record("step w/4 is a quarter of the peak", abs(quarter - 0.25) < SAME, value=quarter,
               threshold="0.25, within 1e-12")
    else:  # w/4 is no step the schedule takes: the nearest one, s/w of the way up
        s = max(1, round(w / 4))
        share = learning_rate(s, d, w) / peak
        print(f"d={d}: w/4 = {w / 4:g} is not a step; lr({s}) / peak={share:.4f}; {s}/{w}={s / w:.4f} "
              "(the ramp is linear)")
        record("step w/4 is a quarter of the peak", None, value=share, threshold="0.25, within 1e-12",
               why=f"w = {w} is not a multiple of 4: no step w/4")
    twice = learning_rate(2 * w, d, w) / peak
    print(f"d={d}: lr(2w) / peak={twice:.4f}; 1/sqrt(2)={2 ** -0.5:.4f}")
    record("step 2w is 1/sqrt(2) of the peak", abs(twice - 2 ** -0.5) < SAME, value=twice,
           threshold="1/sqrt(2), within 1e-12")
    for other in widths[1:]:
        ratio = learning_rate(horizon, d, w) / learning_rate(horizon, other, w)  # [5w]
        print(f"d={d} / d={other} at every step: {ratio.min():.4f}..{ratio.max():.4f}; "
              f"sqrt({other}/{d})={(other / d) ** 0.5:.4f}")
        worst = np.abs(ratio - (other / d) ** 0.5).max()
        record(f"d={d} runs at sqrt({other}/{d}) of d={other}'s rate", worst < SAME, value=worst,
               threshold="every step's ratio within 1e-12 of it")
    # A wider model gets a smaller rate at every step, by the factor sqrt(d_other / d).

    print(save_figure(plot(widths, w, horizon, peaks), figure_path(args, FIGURE)))


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live window

def live_view(d_model, warmup):
    """A warm-up slider (w every 500 from 500 to 8000, twice the page's 4000) and a d_model
    slider (every 64 from 64 to 1024), each with the run's own value among them: the schedule
    over 5 times the largest w, its peak marked. It opens at the printed run's w and its first d."""
    from common.live import Blit, View, add_slider, allowed  # the Try it view, loaded only for --live
    fig, ax = plt.subplots(figsize=(11, 6))
    fig.subplots_adjust(bottom=0.3)
    w_steps, d_steps = allowed(range(500, 8001, 500), warmup), allowed(range(64, 1025, 64), d_model)
    w_slider = add_slider(fig, "warm-up w", w_steps[0], w_steps[-1], warmup, row=1, step=w_steps)
    d_slider = add_slider(fig, "d_model", d_steps[0], d_steps[-1], d_model, step=d_steps)
    blit = Blit(fig)
    blit.add(w_slider, d_slider)  # either changes the curve, its peak and the title
    horizon = 5 * w_steps[-1]
    # about 4,000 points to draw (a tenth of the steps at the usual sliders), and every peak a w slider gives
    steps = np.union1d(np.linspace(0, horizon, 4001)[1:].round(), w_steps)
    highest = learning_rate(w_steps[0], d_steps[0], w_steps[0])  # the earliest peak of the narrowest model
    (curve,) = ax.plot(steps, learning_rate(steps, d_model, warmup), color="tab:blue")
    (dot,) = ax.plot([], [], "o", color="black", markersize=9)
    line = ax.axvline(warmup, color="0.6", linestyle="--")
    ax.set(xlabel="training step s", ylabel="learning rate", ylim=(0, 1.15 * highest), xlim=(0, horizon))
    ax.grid(alpha=0.3)
    blit.add(curve, dot, line, ax.title)

    def update(_):
        w, d = int(w_slider.val), int(d_slider.val)
        peak = peak_step(d, w)
        curve.set_ydata(learning_rate(steps, d, w))
        dot.set_data([peak], [learning_rate(peak, d, w)])
        line.set_xdata([peak, peak])
        ax.set_title(f"d = {d}, w = {w}: peak at step {peak}, lr = {learning_rate(peak, d, w):.10f}")
        blit.update()

    w_slider.on_changed(update)
    d_slider.on_changed(update)
    update(None)
    fig.suptitle("lr = d^-0.5 min(s^-0.5, s w^-1.5): a ramp up to step w, then a slow fall")
    return View(fig, {"warmup": w_slider, "d_model": d_slider}, blit)


def plot(widths, warmup, steps, peaks):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for d, peak in sorted(zip(widths, peaks, strict=True)):
        ax.plot(steps, learning_rate(steps, d, warmup), label=f"d = {d}")
        ax.plot(peak, learning_rate(peak, d, warmup), "o", color="black")
    ax.axvline(peaks[0], color="0.6", linestyle="--", label=f"peak at step {peaks[0]}")
    ax.set_xlabel("training step s")
    ax.set_ylabel("learning rate")
    ax.set_title(f"Transformer learning-rate schedule (warm-up w = {warmup})")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


DESCRIPTION = "The warm-up schedule: table, peak, ratios (Week 2, section 7; saves Figure 3)."
KNOBS = [knob("--d-model", type=int_range(1, 65536), nargs="+", default=[512, 256],
              help="model widths d, up to 6"),
         knob("--warmup", type=int_range(1, 10**6), default=4000, help="w, warm-up steps"),
         knob("--steps", type=int_range(1, 10**7), nargs="+", default=[1, 1000, 4000, 8000],
              help="steps for the table")]
LIVE = "a warm-up slider and a d_model slider: the schedule with its peak marked"
TRY_IT = [("--warmup 1000", "an earlier, higher peak (the figure is not saved: add --figure PATH.png)"),
          ("--d-model 1024 64 --figure widths.png", "two other widths, the figure saved to widths.png in this "
           "directory"),
          ("--steps 1 2000 4000 16000", "the rate at other steps")]


def limits(args):
    return "give at most 6 widths and 50 steps" if len(args.d_model) > 6 or len(args.steps) > 50 else None


FIGURE_HELP = "save Figure 3 here; a default run saves it to week2/figures/warmup_schedule.png"


LESSON = Lesson(__file__, page=("week2", 7), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                figure=FIGURE_HELP, live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.d_model[0], args.warmup)


if __name__ == "__main__":
    run(main)
