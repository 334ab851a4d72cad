"""Teacher forcing makes training fast; it does not remove the training-versus-inference mismatch.

Page: Week 2, section 1 "Teacher forcing", and its "Mistakes people make": "Believing teacher
forcing removes the training-versus-inference mismatch. It does not; it only makes training
fast and stable." And: "with gold inputs, every position can be computed at the same time".

    teacher-forced input   [<s>, y_1, ..., y_(T-1)]       (the gold prefix: one pass for all T)
    own-guesses input      [<s>, g_1, ..., g_(T-1)]       g_t = its own guess at t: T passes in a row
    labels                 [y_1, ..., y_T] in both

The task: under each of 6 digits write the running total's last digit (3 1 4 1 5 9 -> 3 4 8 9
4 3); a total is the total before it plus the digit. One small decoder (causal self-attention
and a feed-forward net) is trained twice from the same start on the same strings, teacher-
forced and on its own guesses. Prints the decoder passes a training step needs, the loss
curves' steadiness, the held-out strings each writes alone, the teacher-forced decoder's
totals with the gold prefix and alone; a verdict on each claim.
Setup (choices; the page gives none): d = 32, one head, no positions (the rule is the same at
every place), 50 steps of Adam (lr 0.01) on 64 strings, float64. Notes: week2/NOTES.md,
section 19.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import adam_state, adam_step, causal_mask
from common.cli import SEED, int_range, knob, lesson_args
from common.records import check, said

import torch
import torch.nn.functional as F

T = 6  # digits per string, and totals to write
START = 10  # the start symbol <s>; tokens 0..9 are digits
D = 32  # d_model
BATCH = 64  # strings per step
STEPS = 50  # steps of training: enough for the teacher-forced decoder to write most totals right alone
MAX_STEPS = 150  # --steps allows up to this; the held-out strings are none of that many steps' strings
LR = 0.01  # Adam's learning rate
BETAS, EPS = (0.9, 0.999), 1e-8  # Adam's (torch's defaults)
HELD_OUT = 500  # held-out strings, none of them in any training batch
HELD_OUT_SEED = 12345  # their own generator, the same for every --seed
LEARNED = 0.75  # a decoder has learned the task: above this share of totals right writing alone
NOT_YET = 0.5  # it has not: below this share
JUMP = 0.25  # a loss curve jumps: the loss rises more than this above its lowest so far
SLIP_AT = 2  # the slip handed in: the total before place 3 (index 2) is off by one
# [T, T]: -inf hides later places (week2/01)
MASK = torch.zeros(T, T, dtype=torch.float64).masked_fill(causal_mask(T), -math.inf)


def totals(x):
    """The labels: the running total's last digit under each digit of x [N, T]."""
    return x.cumsum(1) % 10


def masked_self_attention(a, w):
    """softmax(Q K^T / sqrt(d) + M) V W_O for a [N, T, d]: each place reads itself and the places before."""
    Q, K, V = a @ w["W_Q"], a @ w["W_K"], a @ w["W_V"]  # [N, T, d] each
    A = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(D) + MASK, dim=-1)  # [N, T, T], no look ahead
    return (A @ V) @ w["W_O"]  # [N, T, d]


def decoder(w, x, y_in, passes):
    """Scores for the total at every place, [N, T, 10], from the digits x [N, T] and the totals
    before them y_in [N, T] (starting with <s>). One pass over all T places; passes[0] counts them."""
    passes[0] += 1
    h = w["E_y"][y_in] + w["E_x"][x]  # [N, T, d]: the total before, and this place's digit
    h = h + masked_self_attention(F.layer_norm(h, (D,)), w)  # pre-norm, as the ELI5 block
    h = h + torch.relu(F.layer_norm(h, (D,)) @ w["W_1"] + w["b_1"]) @ w["W_2"]  # the feed-forward net
    return F.layer_norm(h, (D,)) @ w["W_out"]  # [N, T, 10]


def gold_prefix(y):
    """[<s>, y_1, ..., y_(T-1)]: the labels shifted right, <s> in front."""
    return torch.cat([torch.full((len(y), 1), START), y[:, :-1]], dim=1)


def own_guesses(w, x, passes, given=None):
    """[<s>, g_1, ..., g_(T-1)]: the decoder's own guesses, written one place at a time: the
    guess at place t needs the guesses before it, so T - 1 passes run one after another.
    given [N, k]: the first k inputs handed in instead ([<s>] if None)."""
    y_in = torch.full(x.shape, START)
    k = 1 if given is None else given.shape[1]
    if given is not None:
        y_in[:, :k] = given
    with torch.no_grad():
        for t in range(k, T):
            y_in[:, t] = decoder(w, x, y_in, passes)[:, t - 1].argmax(-1)
    return y_in


# ---------------------------------------------------------------- the weights

SHAPES = {"E_y": (11, D), "E_x": (10, D), "W_Q": (D, D), "W_K": (D, D), "W_V": (D, D), "W_O": (D, D),
          "W_1": (D, 2 * D), "b_1": (2 * D,), "W_2": (2 * D, D), "W_out": (D, 10)}


def starting_weights(seed):
    """One vector of all weights: embeddings from N(0, 1), matrices from N(0, 1/fan_in), biases 0."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.zeros(shape, dtype=torch.float64) if name.startswith("b") else
             torch.randn(shape, generator=g, dtype=torch.float64) / (1 if name.startswith("E") else math.sqrt(shape[0]))
             for name, shape in SHAPES.items()]
    return torch.cat([p.reshape(-1) for p in parts])


def views(flat):
    pieces = flat.split([math.prod(shape) for shape in SHAPES.values()])
    return {name: piece.view(shape) for (name, shape), piece in zip(SHAPES.items(), pieces, strict=True)}


# ---------------------------------------------------------------- training and measuring

def strings(g, n):
    return torch.randint(0, 10, (n, T), generator=g)


def training_and_held_out(seed, steps=STEPS):
    """The training batches [steps, BATCH, T], and HELD_OUT strings none of which is in the
    longest training --steps allows (so they are the same for every --steps)."""
    batches = strings(torch.Generator().manual_seed(seed + 1), MAX_STEPS * BATCH).view(MAX_STEPS, BATCH, T)
    seen = set(map(tuple, batches.reshape(-1, T).tolist()))
    candidates = strings(torch.Generator().manual_seed(HELD_OUT_SEED), 2 * HELD_OUT)
    unseen = torch.tensor([row not in seen for row in map(tuple, candidates.tolist())])
    return batches[:steps], candidates[unseen][:HELD_OUT]


def train(seed, batches, teacher_forced):
    """Adam from the seed's start; each step's decoder input is the gold prefix or the
    decoder's own guesses. Returns the weights, the loss at every step, the passes per step."""
    flat = starting_weights(seed).requires_grad_()
    state, losses, passes = adam_state([flat]), [], [0]
    for step, x in enumerate(batches, start=1):
        y = totals(x)
        w = views(flat)
        y_in = gold_prefix(y) if teacher_forced else own_guesses(w, x, passes)
        loss = F.cross_entropy(decoder(w, x, y_in, passes).transpose(1, 2), y)
        (grad,) = torch.autograd.grad(loss, flat)
        with torch.no_grad():
            adam_step([flat], [grad], state, step, LR, BETAS, EPS)
        losses.append(loss.item())
    return flat.detach(), losses, passes[0] / len(batches)


def written(flat, x):
    """The totals right per place [N, T]: with the gold prefix, writing alone, and writing
    alone after one slip handed in (the total before place SLIP_AT + 1 off by one; from there
    on only the places after it count: [N, T - SLIP_AT])."""
    w, y, passes = views(flat), totals(x), [0]
    slipped = gold_prefix(y)[:, :SLIP_AT + 1].clone()
    slipped[:, SLIP_AT] = (slipped[:, SLIP_AT] + 1) % 10
    with torch.no_grad():
        with_gold = decoder(w, x, gold_prefix(y), passes).argmax(-1) == y
        alone = decoder(w, x, own_guesses(w, x, passes), passes).argmax(-1) == y
        after_slip = decoder(w, x, own_guesses(w, x, passes, slipped), passes).argmax(-1) == y
    return with_gold, alone, after_slip[:, SLIP_AT:]


def largest_rise(losses):
    """The most the loss ever rose above its lowest value so far."""
    lowest, rise = math.inf, 0.0
    for loss in losses:
        lowest = min(lowest, loss)
        rise = max(rise, loss - lowest)
    return rise


def learns_faster(tf, own):
    return tf["passes"] < own["passes"] and tf["alone"] > LEARNED and own["alone"] < NOT_YET


def steadier(tf, own):
    """True: only the own-guesses curve jumped; None: neither did (no difference to judge);
    False: the teacher-forced one jumped."""
    if tf["rise"] > JUMP:
        return False
    return True if own["rise"] > JUMP else None


def mismatch_shows(tf):
    return tf["gold"] > LEARNED and tf["after slip"] < NOT_YET


def lesson(args):
    """One decoder, one start, the same strings: teacher-forced and on its own guesses."""
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    steps = args.steps
    batches, held_out = training_and_held_out(args.seed, steps)
    runs = {}
    for name, teacher_forced in (("tf", True), ("own", False)):
        flat, losses, passes = train(args.seed, batches, teacher_forced)
        with_gold, alone, after_slip = written(flat, held_out)
        runs[name] = {"passes": passes, "rise": largest_rise(losses), "alone": alone.double().mean().item(),
                      "whole": alone.all(1).double().mean().item(), "gold": with_gold.double().mean().item(),
                      "slips": (with_gold & ~alone).double().mean().item(),
                      "after slip": after_slip.double().mean().item(), "start": losses[0]}
    tf, own = runs["tf"], runs["own"]

    print(f"The task: under each of {T} digits write the running total's last digit, "
          f"3 1 4 1 5 9 -> {' '.join(map(str, totals(torch.tensor([[3, 1, 4, 1, 5, 9]]))[0].tolist()))}.")
    print(f"A small decoder writes total t from digit t and the total before it. Two copies, one start, "
          f"{steps} steps\nof Adam on the same {BATCH} strings a step: teacher-forced (the total before is the gold "
          "one) and on its\nown guesses (the total before is the one it wrote).")
    print(f"\n{'':44}{'teacher-forced':>16}{'own guesses':>14}")
    row("decoder passes one after another, a step", f"{tf['passes']:g}", f"{own['passes']:g}")
    row(f"  in all {steps} steps", f"{tf['passes'] * steps:g}", f"{own['passes'] * steps:g}")
    row(f"held-out strings ({len(held_out)}), writing alone:")
    row("  totals right", share_band(tf["alone"]), share_band(own["alone"]))
    row("  whole strings right", share_band(tf["whole"]), share_band(own["whole"]))
    row("largest rise of the loss above its lowest", rise_band(tf["rise"]), rise_band(own["rise"]))
    print(f"  (the loss starts near {tf['start']:.1f}; a rise of more than {JUMP:g} would be a jump)")

    fast = learns_faster(tf, own)
    check("teacher forcing makes training fast", f"Verdict: teacher forcing makes training fast: one pass a step, "
          f"not {own['passes']:g}, and after {steps} steps\n  it writes above {LEARNED:.0%} of the totals right, "
          f"the own-guesses decoder below {NOT_YET:.0%}: {said(fast)}", fast,
          value=f"passes {tf['passes']:g} vs {own['passes']:g}; right alone {tf['alone']:.3f} vs {own['alone']:.3f}",
          threshold=f"fewer passes; teacher-forced above {LEARNED:.0%}, own guesses below {NOT_YET:.0%}")
    steady = steadier(tf, own)
    words = {True: "only the own-guesses curve jumped", False: "the teacher-forced curve jumped",
             None: "neither curve jumped: not a difference at this size (on its own guesses it was\n  slower, "
                   "not jumpier)"}[steady]
    check("teacher forcing makes training stable", f"Stable: {words}.", steady,
          value=f"largest rise {tf['rise']:.3f} vs {own['rise']:.3f}",
          threshold=f"a jump: a rise of more than {JUMP:g} above the lowest loss so far")

    print("\nThe mismatch, in the teacher-forced decoder (it trained only on gold prefixes):")
    row("  totals right with the gold prefix", share_band(tf["gold"]))
    row("  totals right writing alone", share_band(tf["alone"]))
    row("  right with the gold prefix, wrong alone", slip_band(tf["slips"]))
    row(f"  right from place {SLIP_AT + 1} on, after one slip", share_band(tf["after slip"]))
    print(f"  (the slip: the total before place {SLIP_AT + 1} handed in off by one, as its own slips would be; "
          "a wrong\n   total before never came up in training, and the rule it learned carries the slip on)")
    shows = mismatch_shows(tf)
    check("teacher forcing does not remove the mismatch", "Verdict: teacher forcing does not remove the training-"
          f"versus-inference mismatch:\n  above {LEARNED:.0%} right with the gold prefix, below {NOT_YET:.0%} after "
          f"one slip of its kind: {said(shows)}", shows,
          value=f"gold prefix {tf['gold']:.3f}, after a slip {tf['after slip']:.3f}",
          threshold=f"gold prefix above {LEARNED:g}; after a slip below {NOT_YET:g}")


# ---------------------------------------------------------------- optional: knobs, Try it, wording

def row(label, left="", right=""):
    print(f"{label:44}{left:>16}{right:>14}".rstrip())


def share_band(share):
    if share < NOT_YET:
        return f"below {NOT_YET:.0%}"
    return f"above {LEARNED:.0%}" if share > LEARNED else f"{NOT_YET:.0%} to {LEARNED:.0%}"


def slip_band(share):
    return "below 1%" if share < 0.01 else "1% or more"


def rise_band(rise):
    return f"above {JUMP:g}" if rise > JUMP else f"{JUMP:g} or less"


DESCRIPTION = ("One small decoder trained teacher-forced and on its own guesses: passes per step, steadiness, "
               "held-out strings, and the mismatch that remains (Week 2, section 1).")
KNOBS = [knob("--steps", type=int_range(10, MAX_STEPS), default=STEPS, help="training steps of each copy"),
         knob("--seed", type=SEED, default=42, help="torch generator seed of the weights and the training strings")]
TRY_IT = [("--steps 150", "three times the steps: on its own guesses the decoder gets there too, with 6 times the "
           "passes a step, and the fast verdict turns"),
          ("--seed 7", "another start and other strings: the same picture")]


def main():
    return lesson(lesson_args(__file__, DESCRIPTION, KNOBS, TRY_IT))


if __name__ == "__main__":
    run(main)
