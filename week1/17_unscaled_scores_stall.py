"""Without 1/sqrt(d_k) a wide head starts one-hot, its gradients go quiet, and its learning stalls.

Page: Week 1, section 4 "Why divide by sqrt(d_k) (scaled dot-product)": "Big spread makes
softmax nearly one-hot (one weight near 1, the rest near 0), and then the gradients are
close to zero, so learning stalls. The fix: divide by sqrt(d_k)."

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V      scaled
    Attention(Q, K, V) = softmax(Q K^T) V                  unscaled
    one step of learning: W <- W - lr dL/dW                (plain gradient descent: torch.optim.SGD)

One head learns a look-up: each query is one of 8 words, blurred, and must put its weight on
that word to fetch the word's value. Both heads start from the same W_Q and W_K and see the
same batches at the same rate; the only difference is the 1/sqrt(d_k). Prints, per head: how
one-hot the softmax starts, the gradient reaching W_Q and W_K at step 1 and late in training,
the held-out loss and right words found after training (each trained number beside the band
its claim needs); a verdict on each part of the claim; and what a 10 times smaller rate does
for the unscaled head.
Setup (choices; the page gives none): d_k = 1024, words of 16 numbers, values of 8, 150
steps of 4 sentences of 8 words, lr = 1, float64. Notes: week1/NOTES.md, section 17.
"""
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, float_range, int_range, knob
from common.printing import readable
from common.records import measured, record, said

import torch

D_MODEL = 16  # numbers per word: small, so a step costs little even at d_k 1024
T = 8  # words per sentence: the keys each query chooses among
D_V = 8  # numbers per value
BLUR = 0.5  # a query is its word plus noise of this standard deviation
SENTENCES = 4  # sentences per step: 32 queries
STEPS = 150  # steps of gradient descent
LR = 1.0  # the learning rate of both heads: it trains the scaled one
SLOWER = 10  # the unscaled head once more, at a rate this many times smaller
HELD_OUT = 125  # held-out sentences: 1,000 queries, never trained on
HELD_OUT_SEED = 2**32 + 12345  # their own generator, the same for every --seed, past every seed + 1
LATE = 50  # "late in training": the last 50 steps
ONE_HOT = 0.9  # nearly one-hot: a mean largest weight above this (as in week1/11)
QUIET = 1e-3  # close to zero: the gradient's late median below this fraction of its size at step 1
UNTOUCHED = 1e-3  # a query whose own word gets less weight than this can hardly push that weight up
STALLED = 0.5  # learning stalls: the held-out loss still above this fraction of its start
TRAINED = 0.1  # learning works: the held-out loss below this fraction of its start
NOT_FOUND = 0.5  # a stalled head finds the right word for fewer than half the held-out queries
FOUND = 0.9  # a trained one for more than 90%


def attention(X_q, X, V, W_Q, W_K, scaled):
    """softmax(Q K^T [/ sqrt(d_k)]) V for the words X [S, T, d], their values V [S, T, d_v]
    and the queries X_q [S, T, d]; returns (Z [S, T, d_v], A [S, T, T])."""
    Q = X_q @ W_Q  # [S, T, d_k]
    K = X @ W_K  # [S, T, d_k]
    scores = Q @ K.transpose(-2, -1)  # [S, T, T]: query i against every word j
    if scaled:
        scores = scores / math.sqrt(K.shape[-1])
    A = torch.softmax(scores, dim=-1)  # [S, T, T], each row sums to 1
    return A @ V, A  # Z [S, T, d_v]


def loss_of(Z, V):
    """Query i should fetch word i's value: the squared distance, averaged over the queries."""
    return (Z - V).pow(2).sum(-1).mean()


def sentences(g, n):
    """n sentences: queries X_q [n, T, d] (query i is word i, blurred), words X [n, T, d], values V [n, T, d_v]."""
    X = torch.randn(n, T, D_MODEL, generator=g, dtype=torch.float64)
    V = torch.randn(n, T, D_V, generator=g, dtype=torch.float64)
    return X + BLUR * torch.randn(n, T, D_MODEL, generator=g, dtype=torch.float64), X, V


def starting_weights(seed, d_k):
    """W_Q, W_K [d, d_k] from N(0, 1/d): every q and k entry has variance about 1, the page's premise."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(D_MODEL, d_k, generator=g, dtype=torch.float64) / math.sqrt(D_MODEL) for _ in range(2)]


def measure(W_Q, W_K, scaled, held_out):
    """On the held-out queries: the loss; the share whose own word gets the largest weight;
    the mean largest weight; the share whose own word gets under UNTOUCHED."""
    X_q, X, V = held_out
    with torch.no_grad():
        Z, A = attention(X_q, X, V, W_Q, W_K, scaled)
    own = A.diagonal(dim1=-2, dim2=-1)  # [S, T]: query i's weight on word i
    return {"loss": loss_of(Z, V).item(), "found": (A.argmax(-1) == torch.arange(T)).double().mean().item(),
            "largest": A.max(-1).values.mean().item(), "untouched": (own < UNTOUCHED).double().mean().item()}


def train(seed, d_k, scaled, lr, held_out, steps=STEPS):
    """Gradient descent, W <- W - lr dL/dW (torch.optim.SGD), from the seed's W_Q, W_K on the
    seed's batches. Returns the held-out measures before and after, the sizes |dL/dW_Q|,
    |dL/dW_K| at every step, and the weights."""
    W_Q, W_K = (W.requires_grad_() for W in starting_weights(seed, d_k))
    optimizer = torch.optim.SGD([W_Q, W_K], lr=lr)
    g = torch.Generator().manual_seed(seed + 1)  # the batches: the same for every head
    before, grads = measure(W_Q, W_K, scaled, held_out), []
    for _ in range(steps):
        X_q, X, V = sentences(g, SENTENCES)
        optimizer.zero_grad()
        loss_of(attention(X_q, X, V, W_Q, W_K, scaled)[0], V).backward()
        grads.append((W_Q.grad.norm().item(), W_K.grad.norm().item()))
        optimizer.step()
    return {"before": before, "after": measure(W_Q, W_K, scaled, held_out), "grads": grads, "weights": (W_Q, W_K)}


def late_shares(run_):
    """[W_Q, W_K]: the gradient's median size over the last LATE steps / its size at step 1."""
    return [statistics.median(g[k] for g in run_["grads"][-LATE:]) / run_["grads"][0][k] for k in (0, 1)]


def loss_left(run_):
    """The held-out loss after training, as a share of its start."""
    return run_["after"]["loss"] / run_["before"]["loss"]


def starts_one_hot(un, sc):
    return un["before"]["largest"] > ONE_HOT >= sc["before"]["largest"]


def goes_quiet(un, sc):
    return max(late_shares(un)) < QUIET <= min(late_shares(sc))


def stalls(un, sc):
    """The unscaled head barely moves at a rate that trains the scaled one; None (not tested)
    when the scaled head did not train at this rate: the claim is about such a rate."""
    return None if loss_left(sc) >= TRAINED else loss_left(un) > STALLED


def lesson(args):
    """The same start, the same batches, the same rate: unscaled against scaled."""
    torch.set_num_threads(1)  # matrices this small run faster on one thread; the numbers do not change
    d_k, lr = args.d_k, args.lr
    held_out = sentences(torch.Generator().manual_seed(HELD_OUT_SEED), HELD_OUT)
    un, sc = (train(args.seed, d_k, scaled, lr, held_out) for scaled in (False, True))
    slow = train(args.seed, d_k, False, lr / SLOWER, held_out)

    print(f"One head learns a look-up: each query is one of {T} words, blurred, and must put its weight on")
    print(f"that word to fetch the word's value. d_k = {d_k}. Both heads start from the same W_Q and W_K and")
    print(f"take {STEPS} steps of W <- W - lr dL/dW, lr = {lr:g}, on the same batches ({STEPS * SENTENCES * T:,} "
          "queries).")
    print(f"\n{'':44}{'unscaled Q K^T':>16}{'scaled Q K^T / sqrt(d_k)':>28}")
    print(f"At the start, on {HELD_OUT * T:,} held-out queries:")
    for label, key, form in (("largest weight (mean)", "largest", "{:.3f}"),
                             (f"queries whose word gets under {UNTOUCHED:g}", "untouched", "{:.0%}"),
                             ("right word found (largest weight)", "found", "{:.0%}"), ("loss", "loss", "{:.2f}")):
        print(f"  {label:42}{form.format(un['before'][key]):>16}{form.format(sc['before'][key]):>28}")
    for k, W in enumerate(("W_Q", "W_K")):
        print(f"{f'Step 1: the gradient reaching {W}, |dL/d{W}|':44}{un['grads'][0][k]:>16.1f}"
              f"{sc['grads'][0][k]:>28.1f}")
    one_hot = starts_one_hot(un, sc)
    print(f"Verdict: big spread makes softmax nearly one-hot (largest weight above {ONE_HOT:g})\n"
          f"  without the scaling, not with it: {said(one_hot)}")
    record("without scaling the softmax starts nearly one-hot", one_hot,
           value=f"unscaled {un['before']['largest']:.3f}, scaled {sc['before']['largest']:.3f}",
           threshold=f"mean largest weight: unscaled above {ONE_HOT:g}, scaled {ONE_HOT:g} or less")
    ratio = un["grads"][0][0] / sc["grads"][0][0]
    print(f"At step 1 the gradient reaching W_Q is {readable(ratio, 1)} times the scaled head's: "
          f"{'larger, not close to zero' if ratio > 1 else 'smaller'}.")
    record("at step 1 the unscaled head's gradient is larger, not close to zero", None, value=ratio,
           threshold="the gradient reaching W_Q, unscaled / scaled, above 1",
           why="the page says nothing of step 1: its 'then the gradients are close to zero' is judged late in "
           "training (below); this line shows where that 'then' does not yet hold")
    print(f"  (an unscaled score moves sqrt(d_k) = {math.sqrt(d_k):.0f} times as far when W_Q moves; but "
          f"{un['before']['untouched']:.0%} of the\n   queries give their own word under {UNTOUCHED:g} of "
          "their weight, and can hardly push it up)")

    print(f"\nLate in training (steps {STEPS - LATE + 1} to {STEPS}), the gradient's median size / at step 1:")
    (un_Q, un_K), (sc_Q, sc_K) = late_shares(un), late_shares(sc)
    for W, un_share, sc_share in (("W_Q", un_Q, sc_Q), ("W_K", un_K, sc_K)):
        unscaled = measured(f"late gradient reaching {W}, unscaled", un_share < QUIET, f"{un_share:.2g}",
                            f"below {QUIET:g}", value=un_share)
        scaled = measured(f"late gradient reaching {W}, scaled", sc_share >= QUIET, f"{sc_share:.2g}",
                          f"{QUIET:g} or more", value=sc_share)
        print(f"  reaching {W}: unscaled {unscaled}, scaled {scaled}")
    quiet = goes_quiet(un, sc)
    print(f"Verdict: then the gradients are close to zero (below {QUIET:g} of their size at step 1)\n"
          f"  without the scaling, not with it: {said(quiet)}")
    record("without scaling the gradients then go close to zero", quiet,
           value=f"unscaled {max(late_shares(un)):.2g}, scaled {min(late_shares(sc)):.2g}",
           threshold=f"late median / step 1: unscaled below {QUIET:g}, scaled {QUIET:g} or more")

    print(f"\nAfter {STEPS} steps, on the held-out queries:")
    stuck = measured("held-out loss after / before, unscaled", loss_left(un) > STALLED, f"{loss_left(un):.2f}",
                     f"above {STALLED:g}", value=loss_left(un))
    learned = measured("held-out loss after / before, scaled", loss_left(sc) < TRAINED, f"{loss_left(sc):.3f}",
                       f"below {TRAINED:g}", value=loss_left(sc))
    print(f"  loss, as a share of its start: unscaled {stuck}, scaled {learned}")
    missed = measured("right word found after training, unscaled", un["after"]["found"] < NOT_FOUND,
                      f"{un['after']['found']:.0%}", f"below {NOT_FOUND:.0%}", value=un["after"]["found"])
    found = measured("right word found after training, scaled", sc["after"]["found"] > FOUND,
                     f"{sc['after']['found']:.0%}", f"above {FOUND:.0%}", value=sc["after"]["found"])
    print(f"  right word found: unscaled {missed}, scaled {found}")
    stalled = stalls(un, sc)
    if stalled is None:
        print(f"Verdict: not tested: at this rate the scaled head did not train either\n  (its loss stayed at "
              f"{TRAINED:g} of its start or more)")
    else:
        print(f"Verdict: at the rate that trains the scaled head (loss below {TRAINED:g} of its start), the\n"
              f"  unscaled head's loss barely moves (above {STALLED:g} of its start),\n  so learning stalls: "
              f"{said(stalled)}")
    record("without scaling learning stalls", stalled,
           value=f"unscaled {loss_left(un):.2f}, scaled {loss_left(sc):.3f}",
           threshold=f"held-out loss after / before: unscaled above {STALLED:g}, scaled below {TRAINED:g}")

    left = measured("the unscaled head at a smaller rate: held-out loss after / before", None,
                    f"{loss_left(slow):.2f}", value=loss_left(slow), why="the page makes no claim about a smaller rate")
    learns, slower = loss_left(slow) < STALLED, slow["after"]["loss"] > sc["after"]["loss"]
    pace = "above the scaled head's at {:g} (more slowly)" if slower else "below the scaled head's at {:g} (as fast)"
    print(f"With a {SLOWER} times smaller rate ({lr / SLOWER:g}) the unscaled head's loss ends at {left} of its start\n"
          f"  ({'below' if learns else 'above'} {STALLED:g}: {'it learns' if learns else 'it stalls too'}), "
          f"{pace.format(lr)}: how much it stalls depends on the rate.")
    record("a smaller rate lets the unscaled head learn, more slowly", None,
           value=f"{loss_left(slow):.2f} of its start; {slow['after']['loss']:.2f} against {sc['after']['loss']:.2f}",
           threshold=f"held-out loss after / before below {STALLED:g}; after above the scaled head's",
           why="the page makes no claim about a smaller rate")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("One attention head trained with and without 1/sqrt(d_k): how one-hot its softmax starts, its "
               "gradients, and whether it learns (Week 1, section 4).")
KNOBS = [knob("--d-k", type=int_range(16, 1024), default=1024, help="d_k, the width of the queries and keys"),
         knob("--lr", type=float_range(0.01, 2.0), default=LR,
              help=f"the learning rate of both heads (the extra unscaled run takes it / {SLOWER})"),
         knob("--seed", type=SEED, default=42, help="torch generator seed of the starting weights and the batches")]
TRY_IT = [("--lr 0.1", "both heads at a 10 times smaller rate: the unscaled one learns too, slowly, and the stall "
           "verdict turns"),
          ("--d-k 64", "a narrower head: the unscaled softmax starts under 0.9 (that verdict turns), yet at this "
           "rate its gradients still go quiet; the scaled head learns only partly, so the stall is not tested"),
          ("--seed 7", "other starting weights and batches: the same picture")]


LESSON = Lesson(__file__, page=("week1", 4), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
