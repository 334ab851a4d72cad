"""Bahdanau (additive) attention: the decoder looks back at every encoder state.

Page: Week 1, section 2 "Looking back instead of remembering (Bahdanau attention)",
executed output 05_additive_attention (four encoder states of size 3).

    e_i     = v_a . tanh(s W_a + h_i U_a)     score of source position i ("additive": s and
                                              h_i are added inside the tanh)
    alpha_i = exp(e_i) / sum_j exp(e_j)       softmax: positive, summing to 1
    c       = sum_i alpha_i h_i               a fresh context for this decoder step

Here s is the previous decoder state s_{t-1}; vectors are rows, so W_a s becomes s W_a.

Prints the scores, the weights and their sum, and the context.
Setup (the pages' own, reproduced exactly): one np.random.default_rng(42), standard
normal draws in the order H [4, 3], s [3], U_a [3, 5], W_a [3, 5], v_a [5]; arrays
printed with NumPy at 3 decimals. Notes: week1/NOTES.md, section 05.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.maths import softmax
from common.records import record

import numpy as np

SUM_TO_1 = 1e-6  # "sum=1.000000": the weights' sum within 1e-6 of 1, the six decimals printed (float64: 1e-16)


def additive_attention(s, H, W_a, U_a, v_a):
    """Scores e [T], weights alpha [T] and context c [d_h] for decoder state s [d_s]
    over encoder states H [T, d_h]; W_a [d_s, n], U_a [d_h, n], v_a [n]."""
    e = np.tanh(s @ W_a + H @ U_a) @ v_a  # [n] + [T, n] broadcasts to [T, n]; then [T]
    alpha = softmax(e)  # [T]
    c = alpha @ H  # [d_h]: the weighted mix of the encoder states
    return e, alpha, c


def lesson(args):
    """The page's draws through the three formulas, printed as the page prints them."""
    T, d, n = args.source_len, args.hidden, args.attn_width
    rng = np.random.default_rng(args.seed)
    H = rng.standard_normal((T, d))  # [T, d]: encoder states h_1..h_T, one per row
    s = rng.standard_normal(d)  # [d]: previous decoder state s_{t-1}
    U_a = rng.standard_normal((d, n))  # [d, n]
    W_a = rng.standard_normal((d, n))  # [d, n]
    v_a = rng.standard_normal(n)  # [n]

    e, alpha, c = additive_attention(s, H, W_a, U_a, v_a)  # [T], [T], [d]
    print(f"alignment scores={np.array2string(e, precision=3)}")
    print(f"alpha={np.array2string(alpha, precision=3)}; sum={alpha.sum():.6f}")
    record("the weights sum to 1", abs(alpha.sum() - 1) < SUM_TO_1, value=alpha.sum(), threshold="within 1e-6 of 1")
    top_score, top_weight = int(np.argmax(e)), int(np.argmax(alpha))  # places, counted from 0
    record("the highest score gets the biggest weight", top_weight == top_score, value=top_weight,
           threshold=f"= {top_score}, the highest score's place")
    print(f"context={np.array2string(c, precision=3)}")
    print(f"  (one score e and one weight alpha per source word;\n"
          f"   the context is {d} numbers, like each encoder state)")
    # The highest score gets the biggest weight, the weights add to 1, and the context
    # is their weighted mix of the encoder states.


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the NumPy generator"),
         knob("--source-len", type=int_range(1, 1000), default=4, help="T, number of encoder states"),
         knob("--hidden", type=int_range(1, 1000), default=3, help="size of each encoder state and of the decoder "
              "state"),
         knob("--attn-width", type=int_range(1, 1000), default=5, help="n, width inside the tanh")]
TRY_IT = [("--seed 1", "other random states: the largest score still gets the largest weight"),
          ("--source-len 10", "ten source words share the attention"),
          ("--attn-width 1", "a single tanh unit scores every word")]


def limits(args):
    T, d, n = args.source_len, args.hidden, args.attn_width
    return too_big(numbers=T * max(d, n) + d * n, work=T * d * n, knobs=("--source-len", "--hidden", "--attn-width"))


DESCRIPTION = "Bahdanau additive attention over a few encoder states (Week 1, section 2)."
LESSON = Lesson(__file__, page=("week1", 2), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
