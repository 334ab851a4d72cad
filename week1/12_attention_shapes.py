"""The shapes of self-attention when d_k differs from d_v: A is [B, T, T], Z is [B, T, d_v].

Page: Week 1, section 3 "Self-attention and the three roles Q, K, V": "Shapes for one head,
with X of shape [B, T, d_model]: Q and K are [B, T, d_k], V is [B, T, d_v], the weight
matrix A is [B, T, T], and the output Z = AV is [B, T, d_v]."

    Q = X W^Q,  K = X W^K,  V = X W^V,  A = softmax(Q K^T / sqrt(d_k)),  Z = A V

Q and K must have the same width d_k, because every score is a dot product q.k; that
width is summed away, so A has one number per (query word, key word) pair: [B, T, T].
V may have another width d_v, and Z = A V, a weighted mix of the rows of V, has V's width.
Every shape printed below is read off a tensor the run computed; torch's own
scaled_dot_product_attention, given the same Q, K, V, returns the same Z.

Prints every shape beside the page's formula, A's row sums, torch's answer beside Z, and
a verdict. Setup (the page gives no sizes; these are choices): B = 2, T = 5, d_model = 8,
d_k = 4 and d_v = 6 (unequal, so the two widths cannot be confused). Notes:
week1/NOTES.md, section 12.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import attention
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.records import record, said

import numpy as np
import torch
import torch.nn.functional as F

ROW_SUM = 1e-6  # a row of A "sums to 1" within this (float64 rounding of T numbers is ~1e-16)
SAME = 1e-9  # Z and torch's answer agree if no entry differs by more (float64 rounding is ~1e-16)


def self_attention(X, W_Q, W_K, W_V):
    """One head of self-attention; returns every intermediate, by the page's names."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # [B, T, d_k], [B, T, d_k], [B, T, d_v]
    Z, A = attention(Q, K, V)  # softmax(Q K^T / sqrt(d_k)) V: A [B, T, T] (d_k summed away), Z [B, T, d_v]
    return {"Q": Q, "K": K, "V": V, "A": A, "Z": Z}


def lesson(args):
    """Random words through one head, every shape read off the tensors the run computed."""
    B, T, d_model, d_k, d_v = args.batch, args.tokens, args.d_model, args.d_k, args.d_v
    rng = np.random.default_rng(args.seed)
    X = torch.from_numpy(rng.standard_normal((B, T, d_model)))  # [B, T, d_model], float64
    W_Q = torch.from_numpy(rng.standard_normal((d_model, d_k))) / math.sqrt(d_model)  # [d_model, d_k]
    W_K = torch.from_numpy(rng.standard_normal((d_model, d_k))) / math.sqrt(d_model)  # [d_model, d_k]
    W_V = torch.from_numpy(rng.standard_normal((d_model, d_v))) / math.sqrt(d_model)  # [d_model, d_v]
    out = self_attention(X, W_Q, W_K, W_V)

    page = {"X": ("[B, T, d_model]", [B, T, d_model]), "Q": ("[B, T, d_k]", [B, T, d_k]),
            "K": ("[B, T, d_k]", [B, T, d_k]), "V": ("[B, T, d_v]", [B, T, d_v]),
            "A": ("[B, T, T]", [B, T, T]), "Z": ("[B, T, d_v]", [B, T, d_v])}
    how = {"X": "the input: B sentences, T words, d_model numbers per word",
           "Q": "X W^Q: what each word is looking for", "K": "X W^K: what each word offers",
           "V": "X W^V: what each word hands over", "A": "softmax(Q K^T / sqrt(d_k)): d_k is summed away",
           "Z": "A V: a mix of value rows, so V's width"}
    shapes = {"X": list(X.shape), **{name: list(t.shape) for name, t in out.items()}}
    print(f"B={B} sentences, T={T} words, d_model={d_model}, d_k={d_k}, d_v={d_v}")
    for name, (formula, _) in page.items():
        print(f"  {name} {formula:<15} = {str(shapes[name]):<16} {how[name]}")
    rows = out["A"].sum(dim=-1)  # [B, T]: one sum per query
    print(f"  every row of A sums to 1: {rows.min().item():.6f}..{rows.max().item():.6f}")
    worst = (rows - 1).abs().max().item()
    record("every row of A sums to 1", worst < ROW_SUM, value=worst, threshold="within 1e-6 of 1")

    Q, K, V = out["Q"], out["K"], out["V"]
    reference = F.scaled_dot_product_attention(Q, K, V)  # torch's own attention, [B, T, d_v]
    print(f"torch scaled_dot_product_attention(Q, K, V) returns {list(reference.shape)}")
    same_shape = reference.shape == out["Z"].shape
    gap = (out["Z"] - reference).abs().max().item() if same_shape else math.inf
    if same_shape:
        print(f"max |Z - torch SDPA|={gap:.8f}")

    wrong = [name for name, (_, expected) in page.items() if shapes[name] != expected]
    holds = not wrong and gap <= SAME
    print("\nClaim: Q, K are [B, T, d_k], V is [B, T, d_v], A is [B, T, T], Z = A V is [B, T, d_v].")
    print(f"Verdict: {said(True)} (every shape above, and Z is what torch computes)" if holds else
          f"Verdict: {said(False)} (shapes not as the page says: {', '.join(wrong) or 'none'}; "
          f"Z differs from torch's answer: {gap > SAME})")
    record("the shapes are the page's, and Z is torch's attention", holds,
           value=f"shapes off: {', '.join(wrong) or 'none'}; max |Z - SDPA| {gap:.2g}",
           threshold=f"every shape as the page writes it; max |Z - SDPA| at most {SAME:g}")
    # A never depends on d_k or d_v: it is T x T, one weight per pair of words. That is why
    # attention costs grow with T^2 (section 7), whatever the head width.


# ---------------------------------------------------------------- optional: knobs and Try it

SIZE = int_range(1, 512)
KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the NumPy generator"),
         knob("--batch", type=SIZE, default=2, help="B, sentences"),
         knob("--tokens", type=SIZE, default=5, help="T, words per sentence"),
         knob("--d-model", type=SIZE, default=8, help="d_model, numbers per word"),
         knob("--d-k", type=SIZE, default=4, help="d_k, width of each query and key"),
         knob("--d-v", type=SIZE, default=6, help="d_v, width of each value")]
TRY_IT = [("--d-k 3 --d-v 7", "other widths: A stays [B, T, T], Z follows d_v"),
          ("--tokens 9", "longer sentences: A grows to [B, 9, 9]"),
          ("--d-k 6 --d-v 6", "equal widths, as in the paper (d_k = d_v = 64)"),
          ("--batch 1 --tokens 1", "one word: A is [1, 1, 1], a single weight of 1")]


def limits(args):
    B, T, d_model, d_k, d_v = args.batch, args.tokens, args.d_model, args.d_k, args.d_v
    work = 2 * B * T * (d_model * (2 * d_k + d_v) + T * (d_k + d_v))  # the projections, then Q K^T and A V
    return too_big(numbers=B * T * max(T, d_model, d_k, d_v), work=work,
                   knobs=("--batch", "--tokens", "--d-model", "--d-k", "--d-v"))


DESCRIPTION = ("The shapes of X, Q, K, V, A and Z in one self-attention head, with d_k different from d_v (Week 1, "
               "section 3).")
LESSON = Lesson(__file__, page=("week1", 3), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
