"""The residual path x + F(x): the gradient keeps a direct route down a deep stack.

Page: Week 2, section 6 "Residual connections and normalization": "Each sublayer's output
is added to its own input: x + F(x) ... the signal (and the gradient on the way back)
always has a direct route"; and its "Mistakes people make": "A residual connection
guarantees gradients never vanish" is wrong: it gives an extra path, not a guarantee.

A stack of L sublayers, each a small random feed-forward net F(x) = W_2 relu(W_1 x + b_1) + b_2,
wired two ways with the very same sublayers:
    plain      x_{l+1} = F_l(x_l)            gradient: J_1^T J_2^T ... J_L^T g
    residual   x_{l+1} = x_l + F_l(x_l)      gradient: (I + J_1)^T ... (I + J_L)^T g
where J_l is sublayer l's Jacobian. Small weights make each J small: a product of many
small J shrinks towards 0, while each I + J stays close to I. torch's autograd computes
the gradient of (u . output) for a fixed unit vector u per token, and the size of the
gradient is read at the input of every sublayer on its way down (1 at the top).

Prints the gradient's size at the input of every sublayer, plain and residual, the
average factor per sublayer and a verdict; saves a figure. Setup (choices): d = 32,
f = 128, 8 token vectors, L = 24 sublayers (a 12-layer encoder has 24), torch's default
nn.Linear weights, float64; nothing is trained. Notes: week2/NOTES.md, section 15.
"""
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, float_range, int_range, knob, too_big
from common.figures import figure_path, plt, save_figure
from common.printing import readable
from common.records import record, said

import numpy as np
import torch
import torch.nn as nn
from matplotlib.ticker import MaxNLocator

FIGURE = Path(__file__).resolve().parent / "figures" / "residual_gradient_depth.png"
TOKENS = 8
VANISHED, EXPLODED = 1e-2, 1e2  # the plain stack's gradient at the input, outside these: lost
NEAR_ONE = 4.0  # the residual stack's gradient at the input within 1/4..4: kept its size


def plain(x, F):
    return F(x)


def residual(x, F):
    return x + F(x)


def gradient_sizes(sublayers, x0, u, wiring):
    """[L + 1]: size of d(u . output)/dx at the input of sublayer L, L-1, ..., 1: entry k is
    the gradient after it has passed k sublayers on its way down (entry 0 = at the top)."""
    xs = [x0.clone().requires_grad_(True)]  # x_0 [T, d]
    for F in sublayers:
        xs.append(wiring(xs[-1], F))  # x_{l+1} [T, d]
        xs[-1].retain_grad()
    (u * xs[-1]).sum().backward()  # u: one unit vector per token, so the top gradient has size 1
    sizes = [x.grad.norm(dim=1).pow(2).mean().sqrt().item() for x in xs]  # RMS over tokens
    return np.array(sizes[::-1])


def e_notation(values):
    """A line reading the table's e-notation out, on the run's own number farthest from 1
    (None when every number printed has exponent 0)."""
    farthest = max((v for v in values if np.isfinite(v) and v > 0), key=lambda v: abs(np.log10(v)))
    text = f"{farthest:.2e}"
    places = int(text.split("e")[1])
    if places == 0:
        return None
    spelled = f"{Decimal(text):f}" if abs(places) <= 20 else f"{text.split('e')[0]} x 10^{places}"
    return (f"  ({text} means {spelled}: the e{text.split('e')[1]} moves the point {abs(places)} "
            f"place{'s' * (abs(places) > 1)} {'left' if places < 0 else 'right'})")


def verdict_words(size):
    if size < VANISHED:
        return "vanished"
    return "exploded" if size > EXPLODED or not np.isfinite(size) else "kept its size"


def lesson(args):
    """The same random sublayers wired plain and residual; the gradient down each."""
    L, d, scale = args.depth, args.d_model, args.scale
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    torch.manual_seed(args.seed)
    sublayers = []
    for _ in range(L):
        F = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d)).double()
        with torch.no_grad():
            for layer in (F[0], F[2]):
                layer.weight.mul_(scale)  # --scale: bigger or smaller sublayers
        sublayers.append(F)
    x0 = torch.randn(TOKENS, d, dtype=torch.float64)  # [T, d] the stack's input
    u = torch.randn(TOKENS, d, dtype=torch.float64)
    u = u / u.norm(dim=1, keepdim=True)  # [T, d] one unit direction per token

    sizes = {name: gradient_sizes(sublayers, x0, u, wiring) for name, wiring in (("plain", plain),
                                                                                ("residual", residual))}
    print(f"{L} random feed-forward sublayer{'s' * (L > 1)}, d={d}, weights x {scale:g}; "
          f"gradient of (u . output), size 1 at the top")
    print(f"  {'sublayers passed':>16}  {'plain F(x)':>12}  {'residual x + F(x)':>18}")
    shown = sorted({0, L} | {2 ** j for j in range(10) if 2 ** j < L})
    for k in shown:
        print(f"  {k:>16}  {sizes['plain'][k]:>12.2e}  {sizes['residual'][k]:>18.2e}")
    reading = e_notation([sizes[name][k] for name in sizes for k in shown])
    if reading:
        print(reading)
    if not all(np.isfinite(s).all() for s in sizes.values()):
        print("  (inf or nan: the numbers grew past float64's largest, about 1e308)")
    per = {name: sizes[name][L] ** (1 / L) for name in ("plain", "residual")}
    print(f"on average each sublayer multiplied the gradient by {per['plain']:.2f} (plain) "
          f"and by {per['residual']:.2f} (residual)")

    at_input = {name: s[L] for name, s in sizes.items()}
    residual_near = 1 / NEAR_ONE <= at_input["residual"] <= NEAR_ONE
    plain_lost = verdict_words(at_input["plain"]) != "kept its size"
    print(f"at the input: plain {verdict_words(at_input['plain'])} ({readable(at_input['plain'], 2)}); "
          f"residual {'stayed near 1' if residual_near else verdict_words(at_input['residual'])} "
          f"({readable(at_input['residual'], 2)})")
    print(f"  (lost = below 1/100 or above 100; near 1 = between 1/{NEAR_ONE:g} and {NEAR_ONE:g})")
    carried = plain_lost and residual_near
    if carried:
        print(f"Verdict: {said(carried)}: the residual path carried the gradient down; the plain stack lost it")
    else:
        print(f"Verdict: {said(carried)}: it needs the plain stack to lose the gradient and the residual one to keep "
              "it near 1")
    record("the residual path carries the gradient down; the plain stack loses it", carried,
           value=f"plain {at_input['plain']:.2g}, residual {at_input['residual']:.2g}",
           threshold=f"plain below 1/100 or above 100; residual between 1/{NEAR_ONE:g} and {NEAR_ONE:g}")

    print("Not a guarantee: a sublayer that cancels its input, F(x) = FFN(x) - x, makes x + F(x) the plain\n"
          "  stack again (week2/11_mistakes_shown.py, belief 17, measures such a block beside a shortcut\n"
          "  nothing can cancel)")
    # The shortcut adds I to every sublayer's Jacobian; it keeps the gradient only while the
    # sublayers stay small and do not undo it. Real Transformers add LayerNorm and careful
    # initialisation on top.

    print(save_figure(plot(sizes, scale, d), figure_path(args, FIGURE)))


# ---------------------------------------------------------------- optional: knobs, Try it, figure

def plot(sizes, scale, d):
    L = len(sizes["plain"]) - 1
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    k = np.arange(L + 1)
    ax.axhspan(1 / NEAR_ONE, NEAR_ONE, color="tab:blue", alpha=0.08,
               label=f"near 1 (1/{NEAR_ONE:g} to {NEAR_ONE:g})")
    ax.axhline(VANISHED, color="0.5", linestyle=":", linewidth=1)
    ax.axhline(EXPLODED, color="0.5", linestyle=":", linewidth=1, label="lost: below 1/100, above 100")
    marker = 3 if L <= 50 else 0  # dots for each sublayer while they can be told apart
    ax.plot(k, sizes["residual"], "o-", color="tab:blue", markersize=marker, label="residual: x + F(x)")
    ax.plot(k, sizes["plain"], "s-", color="tab:red", markersize=marker, label="plain: F(x)")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("sublayers the gradient has passed on its way down to the input")
    ax.set_ylabel("size of the gradient (1 at the top)")
    ax.set_title(f"Gradient size through {L} random feed-forward sublayer{'s' if L > 1 else ''} "
                 f"(d = {d}, weights x {scale:g})", fontsize=11)
    ax.grid(alpha=0.3, which="major")
    ax.legend(loc="best", fontsize=9)
    fig.tight_layout()
    return fig


DESCRIPTION = ("Gradient size at the input of a deep stack of random sublayers, plain F(x) vs residual x + F(x), "
               "with torch autograd (Week 2, section 6; saves a figure).")
KNOBS = [knob("--depth", type=int_range(1, 300), default=24, help="L, sublayers in the stack"),
         knob("--scale", type=float_range(0.01, 4.0), default=1.0,
                                 help="every weight times this (1 = torch's default nn.Linear initialisation)"),
         knob("--d-model", type=int_range(4, 256), default=32, help="d; the hidden width is 4d"),
         knob("--seed", type=SEED, default=42, help="torch.manual_seed of the sublayers and inputs")]
TRY_IT = [("--depth 6", "a shallow stack: the plain gradient is already down to a few ten-thousandths"),
          ("--scale 2.06", "sublayers scaled so the plain stack keeps its size on average: now the residual one "
           "explodes; the shortcut helps while F is small"),
          ("--depth 200", "200 sublayers: even the residual gradient drifts up: an extra path, not a guarantee"),
          ("--seed 1", "other random sublayers: the same picture")]


def limits(args):
    L, d = args.depth, args.d_model
    return too_big(numbers=TOKENS * 4 * d * L, work=3 * 3 * L * TOKENS * 2 * d * 4 * d, knobs=("--depth", "--d-model"))
FIGURE_HELP = ("where to save the figure (a run with every other flag at its default saves "
               "week2/figures/residual_gradient_depth.png)")


LESSON = Lesson(__file__, page=("week2", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                figure=FIGURE_HELP)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
