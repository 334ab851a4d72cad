"""LayerNorm vs BatchNorm: the same formula, pooled over different axes.

Page: Week 2, section 6 "Residual connections and normalization", 04_norm_axes.py and
Figure 2 (normalization axes).

    y = gamma * (x - mean) / sqrt(var + eps) + beta

LayerNorm takes mean and variance over the d features of one token: each token alone.
BatchNorm takes them over the batch (and time) for one feature at a time: each value
then depends on the other examples in the batch. With gamma = 1, beta = 0 below.

Prints the page's LayerNorm and BatchNorm hand-checks by hand and by torch, what torch
does with one value per feature, and each norm on a [2, 3, 4] tensor beside torch's;
saves Figure 2. Setup: the page's own examples; the [2, 3, 4] tensor is rng(42) standard
normals as float32. Notes: week2/NOTES.md, section 04.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, knob
from common.figures import figure_path, plt, save_figure
from common.printing import readable
from common.records import record

import numpy as np
import torch
import torch.nn as nn

SAME = 1e-12  # float64 rounding is about 1e-16: a larger change is a different computation

FIGURE = Path(__file__).resolve().parent / "figures" / "norm_axes.png"
# Axes of a [B, T, d] tensor that one mean/variance is pooled over.
POOL_AXES = {"LayerNorm": (2,), "BatchNorm": (0, 1)}
# Light colours (black digits stay readable), and no colour shared between the two panels:
# a colour means one group of one norm.
PALETTE = {"LayerNorm": [1, 3, 5, 7, 9, 11], "BatchNorm": [13, 15, 17, 19]}  # tab20's light shades


def normalize(x, axes, eps=0.0):
    """(x - mean) / sqrt(var + eps), with mean and population variance over `axes`."""
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def fmt(values):
    """1-D: '-1.2247, 0.0000, 1.2247'; 2-D: '[[-1.0000, -1.0000], [1.0000, 1.0000]]'."""
    values = np.asarray(values)
    if values.ndim == 2:
        return "[" + ", ".join(f"[{fmt(r)}]" for r in values) + "]"
    return ", ".join(f"{v:.4f}" for v in values)


def lesson(args):
    """The page's hand-checks, both norms by hand and by torch, then the axes each pools."""
    token = np.array([1.0, 2.0, 3.0])  # [d]: one token, d = 3
    by_hand = normalize(token, axes=(0,))  # [d]
    by_torch = fmt(nn.LayerNorm(3)(torch.tensor(token, dtype=torch.float32)).detach().numpy())  # eps = 1e-5
    print(f"LayerNorm of one token (1, 2, 3): mean={token.mean():.4f}; variance={token.var():.4f}")
    print(f"  by hand: {fmt(by_hand)}")
    print(f"  torch nn.LayerNorm: {by_torch}")
    record("LayerNorm by hand is torch's on one token", by_torch == fmt(by_hand), value=by_torch,
           threshold=f"= {fmt(by_hand)}, at 4 decimals")

    X = np.array([[1.0, 2.0], [3.0, 4.0]])  # [samples, features]
    batch_norm = fmt(normalize(X, axes=0))  # each feature over the batch
    theirs = fmt(nn.BatchNorm1d(2, affine=False)(torch.tensor(X, dtype=torch.float32)).numpy())  # training mode
    rows = fmt(normalize(X, axes=1))  # each row alone: LayerNorm
    print("batch X=[[1, 2], [3, 4]] (rows = samples):")
    print(f"  BatchNorm by hand (each feature over the batch, eps=0): {batch_norm}")
    print(f"  torch nn.BatchNorm1d: {theirs}")
    record("BatchNorm by hand is torch's on the batch", theirs == batch_norm, value=theirs,
           threshold=f"= {batch_norm}, at 4 decimals")
    print(f"  LayerNorm on the same rows (each row alone): {rows}")
    record("LayerNorm on the same rows answers otherwise", rows != batch_norm, value=rows,
           threshold="not BatchNorm's answer")

    one = np.array([[1.0, 2.0, 3.0]])  # [1, 3]: a batch of a single sample, 3 features
    single = normalize(one, axes=0, eps=1e-5)  # x - mean = 0 in every feature
    print(f"BatchNorm with one value per feature, by hand (eps=1e-5): {fmt(single)}")
    print("  (x - mean = 0, so the output is beta)")
    record("BatchNorm of one value gives zero (beta)", np.abs(single).max() == 0,
           value=np.abs(single).max(), threshold="every output exactly 0")
    try:
        nn.BatchNorm1d(3)(torch.tensor(one, dtype=torch.float32))
        refused = None
    except ValueError as error:
        refused = error
    print(f"  torch raises ValueError:\n    {refused}" if refused else "  torch: no error")
    record("torch refuses BatchNorm of one value per feature", refused is not None,
           value="ValueError" if refused else "no error", threshold="a ValueError")

    # The same two formulas on a [B, T, d] tensor, against torch's modules.
    x = np.random.default_rng(args.seed).standard_normal((2, 3, 4)).astype(np.float32)  # [B, T, d]
    ln = nn.LayerNorm(4, elementwise_affine=False)(torch.from_numpy(x))  # [B, T, d]
    bn = nn.BatchNorm1d(4, affine=False)(torch.from_numpy(x).transpose(1, 2)).transpose(1, 2)  # torch's [B, d, T]
    for name, by_torch in (("LayerNorm", ln), ("BatchNorm", bn)):
        mine = normalize(x.astype(np.float64), POOL_AXES[name], eps=1e-5)  # [B, T, d]
        what = "d: the features of one token" if name == "LayerNorm" else "B and T: one feature over every token"
        print(f"[B, T, d]=[2, 3, 4], {name} pools axes {POOL_AXES[name]} ({what}):")
        print(f"max |by hand - torch {name}|={np.abs(mine - by_torch.detach().numpy()).max():.8f}")
    # LayerNorm: 6 groups of 4 (each token alone); BatchNorm: 4 groups of 6 (each feature
    # across every token of every example), hence its dependence on the rest of the batch.

    # The table's "train vs evaluation": the same tensor through each module in both modes.
    moved = {}
    for name, module, shaped in (("LayerNorm", nn.LayerNorm(4), lambda t: t),
                                 ("BatchNorm", nn.BatchNorm1d(4), lambda t: t.transpose(1, 2))):
        t = shaped(torch.from_numpy(x.astype(np.float64)))
        module = module.double()
        trained = module.train()(t)  # BatchNorm: this batch's statistics (and a first update of its running ones)
        evaluated = module.eval()(t)  # BatchNorm: the running statistics gathered so far
        moved[name] = (trained - evaluated).abs().max().item()
    print("train vs evaluation mode, the same [2, 3, 4] tensor through each module:")
    still = "not at all: the same numbers" if moved["LayerNorm"] == 0 else f"by {readable(moved['LayerNorm'])}"
    print(f"  LayerNorm's output moves {still}")
    record("LayerNorm is the same computation in training and evaluation", moved["LayerNorm"] <= SAME,
           value=moved["LayerNorm"], threshold=f"moves by at most {SAME:g}")
    print(f"  BatchNorm's output moves by {readable(moved['BatchNorm'])}")
    print("    (evaluation uses the running mean and variance, not this batch's)")
    record("BatchNorm in evaluation uses its running statistics", moved["BatchNorm"] > SAME,
           value=moved["BatchNorm"], threshold=f"moves by more than {SAME:g}")

    print(save_figure(plot(x.shape), figure_path(args, FIGURE)))


# ---------------------------------------------------------------- optional: knobs, Try it, figure

def plot(shape):
    """For each norm, colour the cells of a [B, T, d] tensor by the group they are pooled in."""
    B, T, d = shape
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.4))
    for ax, (name, pool) in zip(axes, POOL_AXES.items(), strict=True):
        kept = [a for a in range(3) if a not in pool]  # a group = one index on the kept axes
        index = np.indices(shape)  # [3, B, T, d]
        group = np.ravel_multi_index([index[a] for a in kept], [shape[a] for a in kept])
        grid = group.reshape(B * T, d)  # rows = tokens (b, t), columns = features
        n_groups = grid.max() + 1
        colours = plt.get_cmap("tab20")(PALETTE[name])  # one colour per group
        ax.imshow(colours[grid], aspect="auto")
        for r in range(B * T):
            for c in range(d):
                ax.text(c, r, f"{name[0]}{grid[r, c] + 1}", ha="center", va="center", fontsize=9)
        ax.axhline(T - 0.5, color="black", linewidth=2)  # between batch items
        ax.set_xticks(range(d), [str(c + 1) for c in range(d)])
        ax.set_yticks(range(B * T), [f"b={r // T + 1}, t={r % T + 1}" for r in range(B * T)])
        ax.set_xlabel("feature (1..d)")
        ax.set_ylabel("token (batch item b, position t)")
        what = "one token's d features" if name == "LayerNorm" else "one feature over B and T"
        ax.set_title(f"{name}: {n_groups} groups, {grid.size // n_groups} cells each\n"
                     f"(a group = {what})", fontsize=10)
    fig.suptitle(f"Which cells share one mean and variance, [B, T, d] = {list(shape)}")
    fig.text(0.5, 0.02, "same colour and label = one mean and variance (L = LayerNorm group, "
             "B = BatchNorm group); thick line = next batch item", ha="center")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


DESCRIPTION = ("LayerNorm vs BatchNorm by hand and with torch, and which axes each pools (Week 2, section 6; saves "
               "Figure 2).")
KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the [2, 3, 4] tensor")]
TRY_IT = [("--seed 7", "another [2, 3, 4] tensor: the by-hand norms still match torch's"),
          ("--figure axes.png", "save Figure 2 to axes.png in this directory")]
FIGURE_HELP = "save Figure 2 here; a default run saves it to week2/figures/norm_axes.png"


LESSON = Lesson(__file__, page=("week2", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, figure=FIGURE_HELP)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
