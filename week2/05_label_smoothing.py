"""Label smoothing: the gold word gets about 1 - epsilon, the others share a little.

Page: Week 2, section 7 "Training tricks: label smoothing and the warm-up schedule",
05_label_smoothing.py.

Uniform-mixture rule (what torch's label_smoothing=epsilon uses):
    q_i = (1 - epsilon) [i = y] + epsilon / V
    loss = -sum_i q_i log softmax(z)_i
The other convention gives the gold class exactly 1 - epsilon and spreads epsilon over
the V - 1 others; the two differ, so always say which one you use.

Prints the smoothed target and its sum, the loss by hand beside torch's, the page's V = 5
hand-check, the other convention's target and loss; then a small classifier trained with and
without smoothing (its confidence, its score gap). Setup: V = 4, gold index 2,
epsilon = 0.1, float32 as torch by default; the logits [0.6, 0.1, 1.8, 0.5] are a
reconstruction (the page gives the loss, not the logits). Notes: week2/NOTES.md, section 05.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, float_range, int_range, knob
from common.printing import vec
from common.records import measured, record, said

import numpy as np
import torch
import torch.nn.functional as F

EQUAL = 1e-6  # two float32 losses are "equal" within this relative gap: float32 keeps about 7 digits
NEAR = 0.03  # the smoothed model's median confidence sits near its target's gold share: within this, either way
PUSHED = 0.99  # the plain model's median confidence above this: its probabilities pushed toward 1
SETTLED = 0.2  # the smoothed model's score gap settles: it moves less than this over the training's second half
GROWING = 0.4  # the plain model's score gap keeps growing: by more than this over the second half
RIGHT = 0.95  # both classifiers must get this share right: smoothing must not cost the answers
CLASSES, STEPS, TESTED = 4, 300, 1000  # the trained classifier: its classes, training steps and fresh test points
DEFAULT_LOGITS = [0.6, 0.1, 1.8, 0.5]  # chosen to print the page's loss 0.66827178 (NOTES.md, section 05)

def smoothed_target(V, gold, epsilon, dtype=torch.float32):
    """Uniform mixture: (1 - epsilon) on the gold class plus epsilon / V everywhere: [V]."""
    q = torch.full((V,), epsilon / V, dtype=dtype)
    q[gold] += 1 - epsilon
    return q


def gold_exact_target(V, gold, epsilon, dtype=torch.float32):
    """The other convention: exactly 1 - epsilon on gold, epsilon / (V - 1) on each other: [V]."""
    q = torch.full((V,), epsilon / (V - 1), dtype=dtype)
    q[gold] = 1 - epsilon
    return q


def smoothed_loss(z, q):
    """-sum_i q_i log softmax(z)_i: the cross-entropy of the scores z [V] against the target q [V]."""
    return -(q * torch.log_softmax(z, dim=-1)).sum()


def torch_loss(z, gold, epsilon):
    """torch's own: cross_entropy with label_smoothing=epsilon."""
    return F.cross_entropy(z[None], torch.tensor([gold]), label_smoothing=epsilon)


def relative_gap(a, b):
    """|a - b| / |b|, or |a - b| when b is below 1: float32 keeps about 7 significant digits,
    so two float32 computations of one number agree to about 1e-7 of its size."""
    return abs(a - b) / max(1.0, abs(b))


def conventions_apart(z, gold, epsilon):
    """How far apart the two conventions' losses are in exact arithmetic (float64, relative to
    the loss). Below EQUAL, float32 cannot tell them apart, and "equal to torch" then says
    nothing about the convention (logits 1e9 0 0 -1e9 give both exactly the loss 1e9)."""
    z64, V = z.double(), len(z)  # [V]
    return relative_gap(smoothed_loss(z64, gold_exact_target(V, gold, epsilon, torch.float64)).item(),
                        smoothed_loss(z64, smoothed_target(V, gold, epsilon, torch.float64)).item())


def lesson(args):
    """The smoothed target, the loss by hand beside torch's, the page's V = 5 hand-check, the other convention."""
    V, gold, epsilon = len(args.logits), args.gold, args.epsilon
    z = torch.tensor(args.logits)  # [V], float32
    q = smoothed_target(V, gold, epsilon)  # [V]
    print(f"V={V}, gold index={gold}, epsilon={epsilon:g}: q_i = (1 - epsilon)[i = y] + epsilon / V")
    print(f"logits z={args.logits} " + ("(a reconstruction: the page gives its loss, not its logits; these print "
                                        "its digits)" if args.logits == DEFAULT_LOGITS else "(--logits)"))
    print(f"target={vec(q, 3)}; sum={q.sum().item():.3f}")
    record("the smoothed target sums to 1", abs(q.sum().item() - 1) < EQUAL, value=q.sum().item(),
           threshold="within 1e-6 of 1")

    hand, by_torch = smoothed_loss(z, q).item(), torch_loss(z, gold, epsilon).item()
    gap = relative_gap(hand, by_torch)
    print(f"hand-built loss={hand:.8f}; torch label_smoothing={epsilon:g} loss={by_torch:.8f}; equal={gap <= EQUAL}")
    record("the hand-built loss is torch's label_smoothing loss", gap <= EQUAL, value=gap,
           threshold="relative gap at most 1e-6")
    print(f"max |(hand-built - torch) / torch|={gap:.8f}")
    print("  (equal means: the same up to float32 rounding, a relative gap of at most 0.000001)")
    print(f"plain cross-entropy (no smoothing)={torch_loss(z, gold, 0.0).item():.8f}")

    q5 = smoothed_target(5, 2, 0.1)  # [5]: the page's hand-check, V = 5, gold 3rd
    print("the page's V=5 hand-check (epsilon 0.1, whatever the flags): gold 3rd:")
    print(f"  target={vec(q5, 2)}; sum={q5.sum().item():.2f}")

    other = gold_exact_target(V, gold, epsilon)  # [V]
    other_loss = smoothed_loss(z, other).item()
    other_gap = relative_gap(other_loss, by_torch)
    told_apart = epsilon > 0 and conventions_apart(z, gold, epsilon) > EQUAL
    print(f"other convention (gold exactly 1 - epsilon): target={vec(other, 3)};")
    print(f"  loss={other_loss:.8f}; equal to torch={other_gap <= EQUAL}")
    if epsilon == 0:
        why = "at epsilon 0 both conventions are the plain one-hot target"
        print(f"  (not tested here: {why})")
    elif not told_apart:
        why = "with these logits the two conventions cannot be told apart"
        print(f"  (not tested here: {why}:\n"
              "   their exact losses differ by less than 1e-6 of the loss, finer than float32 resolves)")
    record("the other convention is not torch's", other_gap > EQUAL if told_apart else None, value=other_gap,
           threshold="relative gap above 1e-6 (epsilon > 0)", why=None if told_apart else why)
    # torch's label_smoothing is the uniform mixture: the gold word keeps 1 - epsilon + epsilon/V.

    over_confidence(epsilon, args.seed)


def train_classifier(epsilon, seed, steps=STEPS, n_words=CLASSES, d=8, batch=64, lr=0.1):
    """A linear classifier (scores x W + b) trained by gradient descent (torch.optim.SGD) on
    torch's label-smoothed cross-entropy, for points scattered around one centre per class.
    Returns, on TESTED fresh points: its median largest probability, how much the median gap
    between each point's two largest scores grew from the middle of the training to its end,
    and its share right."""
    g = torch.Generator().manual_seed(seed)
    centres = 3 * torch.randn(n_words, d, generator=g, dtype=torch.float64)  # [n_words, d]
    W = torch.zeros(d, n_words, dtype=torch.float64, requires_grad=True)  # [d, n_words]
    b = torch.zeros(n_words, dtype=torch.float64, requires_grad=True)  # [n_words]
    optimizer = torch.optim.SGD([W, b], lr=lr)

    def points(n):
        y = torch.randint(0, n_words, (n,), generator=g)  # [n]
        return centres[y] + torch.randn(n, d, generator=g, dtype=torch.float64), y  # [n, d], [n]

    for step in range(1, steps + 1):
        x, y = points(batch)
        loss = F.cross_entropy(x @ W + b, y, label_smoothing=epsilon)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == steps // 2:
            W_half, b_half = W.detach().clone(), b.detach().clone()
    with torch.no_grad():
        x, y = points(TESTED)
        z = x @ W + b  # [TESTED, n_words]
        p = torch.softmax(z, dim=-1)  # [TESTED, n_words]
        growth = top_two_gap(z) - top_two_gap(x @ W_half + b_half)
    return p.max(-1).values.median().item(), growth, (p.argmax(-1) == y).double().mean().item()


def top_two_gap(z):
    """The median over the points of the gap between each point's two largest scores z [N, V]:
    how sure the model is, in scores (a gap of ln 37 = 3.61 gives the gold 0.925 of 4 classes)."""
    top = z.topk(2, dim=-1).values  # [N, 2]
    return (top[:, 0] - top[:, 1]).median().item()


def over_confidence(epsilon, seed):
    """The page's "it stops the model from becoming over-confident", trained: the same small
    classifier with the run's epsilon and without smoothing, each run's numbers printed beside
    the band it is judged by. Over-confidence is measured as the page describes it: a one-hot
    target pushes the probabilities toward 1, and its scores keep growing."""
    (sure, settles, right), (plain, grows, plain_right) = train_classifier(epsilon, seed), train_classifier(0.0, seed)
    cap = smoothed_target(CLASSES, 0, epsilon, torch.float64)[0].item()  # the smoothed target's gold share
    smoothing = epsilon > 0  # else nothing is smoothed: no contrast to judge
    why = None if smoothing else "epsilon 0: nothing smoothed"
    print(f"trained: a small classifier, {CLASSES} classes, {STEPS} steps, with epsilon={epsilon:g} and without "
          f"smoothing\ntested on {TESTED:,} new points:")
    near = f"within {NEAR:g} of its target's gold share {cap:.3f}"
    no_contrast = "" if smoothing else " (epsilon 0: nothing smoothed, no contrast)"
    shown = measured("the smoothed model's median confidence sits near its target",
                     abs(sure - cap) <= NEAR if smoothing else None, f"{sure:.3f}", near if smoothing else None,
                     value=sure, why=why)
    print(f"  median largest probability with smoothing {shown}{no_contrast}")
    shown = measured("without smoothing, the probabilities are pushed toward 1", plain > PUSHED, f"{plain:.3f}",
                     f"above {PUSHED:g}", value=plain)
    print(f"  median largest probability without        {shown}, pushed toward 1")
    print(f"  growth of the median gap between the two largest scores, step {STEPS // 2} to {STEPS}:")
    shown = measured("with smoothing, the scores settle", abs(settles) < SETTLED if smoothing else None,
                     f"{settles:.3f}", f"less than {SETTLED:g} either way" if smoothing else None, value=settles,
                     why=why)
    print(f"    with smoothing {shown}" + (", it settles" if smoothing else no_contrast))
    shown = measured("without smoothing, the scores keep growing", grows > GROWING, f"{grows:.3f}",
                     f"more than {GROWING:g}", value=grows)
    print(f"    without        {shown}, they keep growing")
    shown = measured("the smoothed model is right", right > RIGHT, f"{right:.1%}", f"above {RIGHT:.0%}", value=right)
    plain_shown = measured("the plain model is right", plain_right > RIGHT, f"{plain_right:.1%}", f"above {RIGHT:.0%}",
                           value=plain_right)
    print(f"  right: {shown} with smoothing, {plain_shown} without")
    holds = (abs(sure - cap) <= NEAR and abs(settles) < SETTLED and plain > PUSHED and grows > GROWING
             and min(right, plain_right) > RIGHT) if smoothing else None
    print("Verdict: with smoothing the model's confidence settles near its target; without it the\n"
          f"  probabilities are pushed toward 1 and the scores keep growing; both right: {said(holds)}\n"
          "  (over-confidence as the page means it: a model driven to certainty. Whether a model is more\n"
          "   sure than it is right, its calibration, is not measured here.)")
    record("label smoothing stops the push toward certainty", holds,
           value=f"median {sure:.3f} smoothed, {plain:.3f} plain; gap growth {settles:.3f} smoothed, {grows:.3f} plain",
           threshold=f"smoothed: median within {NEAR:g} of its target, gap growth less than {SETTLED:g} either way; "
                     f"plain: median above {PUSHED:g}, gap growth more than {GROWING:g}; both right above {RIGHT:.0%}",
           why=None if smoothing else "epsilon 0: nothing smoothed, no contrast")


# ---------------------------------------------------------------- optional: knobs, Try it, live window

def live_view(logits, gold, epsilon):
    """An epsilon slider: the smoothed target q beside the model's softmax(z), and the
    hand-built loss beside torch's (and the plain cross-entropy, epsilon 0). It opens at the
    printed run's epsilon."""
    from common.live import Blit, View, add_slider, allowed  # the Try it view, loaded only for --live
    z = torch.tensor(logits)  # [V], float32
    V = len(z)
    from common.figures import plt  # only for the window: a run without --live skips its import

    fig, (target_ax, loss_ax) = plt.subplots(1, 2, figsize=(12, 5.5), width_ratios=(3, 2))
    fig.subplots_adjust(bottom=0.22 if V <= 12 else 0.28, top=0.82, wspace=0.3)  # room for turned labels
    steps = allowed(np.round(np.arange(0, 100) / 100, 2), epsilon)  # every 0.01 below 1, and the run's own
    slider = add_slider(fig, "epsilon", 0, steps[-1], epsilon, step=steps)
    blit = Blit(fig)
    blit.add(slider)
    words = [f"{'gold ' if i == gold else ''}{i}" for i in range(V)]
    q_bars = target_ax.bar(np.arange(V) - 0.2, np.zeros(V), width=0.4, color="tab:green", label="target q (smoothed)")
    target_ax.bar(np.arange(V) + 0.2, torch.softmax(z, dim=-1).numpy(), width=0.4, color="0.6",
                  label="model softmax(z)")
    target_ax.set_xticks(range(V), words, rotation=90 if V > 12 else 0)
    target_ax.set(ylim=(0, 1.3), yticks=np.linspace(0, 1, 6), ylabel="probability")
    target_ax.legend(loc="upper left", ncols=2)  # above 1, where no bar reaches
    plain = torch_loss(z, gold, 0.0).item()
    loss_bars = loss_ax.bar([0, 1, 2], [0, 0, plain], color=["tab:green", "tab:blue", "0.6"])
    loss_ax.set_xticks([0, 1, 2], ["by hand", "torch", "plain CE\n(epsilon 0)"])
    loss_ax.set(ylabel="loss", ylim=(0, 1.15 * max(plain, torch_loss(z, gold, steps[-1]).item())))
    title = fig.suptitle("")
    blit.add(*q_bars, *loss_bars[:2], target_ax.title, loss_ax.title, title)

    def update(epsilon):
        q = smoothed_target(V, gold, epsilon)
        hand, by_torch = smoothed_loss(z, q).item(), torch_loss(z, gold, epsilon).item()
        for bar, height in zip(q_bars, q.tolist(), strict=True):
            bar.set_height(height)
        target_ax.set_title(f"q = {q[gold]:.3f} on gold, {q[(gold + 1) % V]:.3f} on each other")
        loss_bars[0].set_height(hand)
        loss_bars[1].set_height(by_torch)
        loss_ax.set_title(f"loss: by hand {hand:.8f}\ntorch {by_torch:.8f}")
        title.set_text(f"Label smoothing, epsilon = {epsilon:g}: the target q beside the model's softmax(z)")
        blit.update()

    slider.on_changed(update)
    update(slider.val)
    return View(fig, {"epsilon": slider}, blit)



DESCRIPTION = "Label-smoothed cross-entropy by hand vs torch's label_smoothing (Week 2, section 7)."
KNOBS = [knob("--logits", type=float_range(-1e30, 1e30), nargs="+", default=DEFAULT_LOGITS,
              help="model scores z, one per vocabulary word"),
         knob("--gold", type=int_range(0, 999), default=2,
              help="index of the right word: 0 to the number of --logits minus 1"),
         knob("--epsilon", type=float_range(0.0, 1.0), default=0.1, help="epsilon, the smoothing"),
         knob("--seed", type=SEED, default=0, help="seed of the small classifier trained with and without smoothing")]
LIVE = "an epsilon slider: the smoothed target, and the loss by hand beside torch's"
TRY_IT = [("--epsilon 0", "no smoothing: the loss is plain cross-entropy"),
          ("--epsilon 0.3", "more smoothing: the gold word's target drops to 0.775"),
          ("--logits 0 0 9 0", "sure and right: smoothing still charges for the certainty"),
          ("--logits 1e9 0 0 -1e9", "huge logits: the hand-built loss still agrees with torch's to float32 "
           "rounding, but the two conventions cannot be told apart")]


def limits(args):
    V, gold = len(args.logits), args.gold
    if not 2 <= V <= 1000:
        return f"give 2 to 1000 --logits, one score per vocabulary word (got {V})"
    if gold >= V:
        return f"--gold is an index into the {V} --logits: 0 to {V - 1} here (got {gold})"
    return None


LESSON = Lesson(__file__, page=("week2", 7), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, args.logits, args.gold, args.epsilon)


if __name__ == "__main__":
    run(main)
