"""Every worked number on the Week 2 page, recomputed and set beside the page's value.

Page: Week 2, all sections: the hand-checks, the counts and tables, the warm-up values,
the "Where the exam asks this" answers and the "Check yourself" answers, in page order.

Each line shows what is computed, the result at the page's own precision, the page's
value, and whether they agree. Values whose inputs are not on the page (the executed
4x4 scores, the label-smoothing logits, exam items the page leaves to the question bank)
are not computed, and the line says why. The script exits 1 if any value disagrees.
Conventions: parameter counts include biases and LayerNorm gamma/beta, as the page's
table does; label smoothing is the uniform mixture q_i = (1 - eps)[i = y] + eps / V
unless a line says otherwise; LayerNorm/BatchNorm hand-checks use eps = 0.
"""
import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.maths import softmax  # noqa: E402
from common.printing import n_params  # noqa: E402
from common.report import Ledger  # noqa: E402


def shift_right(tokens, bos):
    return [bos] + list(tokens[:-1])


def layer_norm(x):
    """Mean 0, variance 1 over the last axis (gamma = 1, beta = 0, eps = 0)."""
    return (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)


def pe(p, d):
    """Sinusoidal position tag PE(p) of width d."""
    omega = 10000.0 ** (-2 * np.arange(d // 2) / d)
    return np.ravel(np.column_stack([np.sin(p * omega), np.cos(p * omega)]))  # sin, cos, sin, cos, ...


def lr(step, d, warmup=4000):
    return d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def main():
    argparse.ArgumentParser(
        description="Recompute every worked number on the Week 2 page and compare it with "
        "the page's value.",
        epilog="Try it: run it while reading the page; each line names its section.").parse_args()
    ledger = Ledger()
    print("Week 2 worked examples, recomputed: each computed value beside the page's value")

    ledger.section("1. Teacher forcing")
    gold = [1, 2, 3, 4]
    ledger.check("teacher-forced decoder input for gold [1, 2, 3, 4] (0 = start)", shift_right(gold, 0), "[0, 1, 2, 3]")
    ledger.check("labels", gold, "[1, 2, 3, 4]")
    guesses = np.random.default_rng(42).integers(1, 10, size=4).tolist()  # 08_teacher_forcing's draws
    ledger.check("free-running input from the stand-in guesses", shift_right(guesses, 0), "[0, 1, 7, 6]")
    words = ["A", "B", "EOS"]
    ledger.check("hand-check: step 3 input under teacher forcing, step 2 guessed C",
                 shift_right(words, "BOS")[2], "B")

    ledger.section("2. Masked (causal) self-attention")
    mask = np.triu(np.ones((4, 4), dtype=int), k=1)  # 1 = blocked
    ledger.check("blocked cells for T = 4", mask.sum(), "6")
    ledger.check("T(T-1)/2 for T = 4", 4 * 3 // 2, "6")
    ledger.check("blocked cells on the diagonal", mask.diagonal().sum(), "0")
    row = softmax(np.array([2.0, 1.0, -np.inf, -np.inf]))  # scores [2, 1, 5, 3], last two masked
    ledger.check("weights of the masked row [2, 1, -inf, -inf]", row, "[0.7311, 0.2689, 0, 0]")
    ledger.skip("row 2 of the executed 4x4 run", "the page does not give that run's score matrix")

    ledger.section("3. Cross-attention")
    queries, keys = np.zeros((3, 16)), np.zeros((5, 16))  # 3 target words, 5 source words
    ledger.check("weight table for 3 target and 5 source words", str(list((queries @ keys.T).shape)), "[3, 5]")

    ledger.section("4. Output layer and decoder parameters (biases counted)")
    ledger.check("output layer weights d x V, d = 512, V = 37,000", 512 * 37_000, "18,944,000")
    ledger.check("output layer with a bias (torch nn.Linear)",
                 n_params(nn.Linear(512, 37_000, device="meta")), "18,981,000")
    for d, f, h, page in ((4, 8, 1, ["160", "76", "24", "260"]),
                          (512, 2048, 8, ["2,101,248", "2,099,712", "3,072", "4,204,032"])):
        layer = nn.TransformerDecoderLayer(d, h, f, device="meta")
        ledger.check(f"d={d}, f={f}: attention 2 (4 d^2 + 4 d)", 2 * (4 * d * d + 4 * d), page[0])
        ledger.check(f"d={d}, f={f}: feed-forward 2 d f + f + d", 2 * d * f + f + d, page[1])
        ledger.check(f"d={d}, f={f}: 3 LayerNorms 6 d", 6 * d, page[2])
        ledger.check(f"d={d}, f={f}: total (torch TransformerDecoderLayer({d}, {h}, {f}))", n_params(layer), page[3])
    ledger.check("six decoder layers (torch)", n_params(nn.TransformerDecoder(layer, 6)), "25,224,192")
    ledger.check("one layer in millions (course: about 4M)", f"{n_params(layer) / 1e6:.3f}M", "4.204M")
    ledger.skip("2024 T3 Quiz 1, Q277-Q280", "the page leaves them to the bank (three are marked ambiguous)")

    ledger.section("5. Sinusoidal positional encoding, d = 4")
    ledger.check("omega_0, omega_1 = 10000^(-2i/4)", 10000.0 ** (-2 * np.arange(2) / 4), "[1, 0.01]")
    ledger.check("PE(0)", pe(0, 4), "[0, 1, 0, 1]")
    ledger.check("PE(1)", pe(1, 4), "[0.8415, 0.5403, 0.0100, 1.0000]")
    tags = np.array([pe(p, 4) for p in range(100)])
    ledger.check("squared length of PE(p), p = 0..99 (min, max)",
                 [(tags ** 2).sum(1).min(), (tags ** 2).sum(1).max()], "[2, 2]")
    ledger.check("all entries in [-1, 1] (p = 0..99)", str(bool((np.abs(tags) <= 1).all())), "True")

    ledger.section("6. LayerNorm and BatchNorm (gamma = 1, beta = 0, eps = 0)")
    x = np.array([1.0, 2.0, 3.0])
    ledger.check("mean of (1, 2, 3)", Fraction(int(x.sum()), len(x)), "2")
    ledger.check("variance of (1, 2, 3)", sum((Fraction(int(v)) - 2) ** 2 for v in x) / len(x), "2/3")
    ledger.check("LayerNorm(1, 2, 3)", layer_norm(x), "[-1.2247, 0, 1.2247]")
    by_torch = nn.LayerNorm(3)(torch.tensor(x, dtype=torch.float32)).tolist()
    ledger.check("torch nn.LayerNorm(1, 2, 3) (eps = 1e-5)", by_torch, "[-1.2247, 0.0000, 1.2247]")
    X = np.array([[1.0, 2.0], [3.0, 4.0]])  # rows = samples
    ledger.check("feature 1 (values 1 and 3): mean, standard deviation", [X[:, 0].mean(), X[:, 0].std()], "[2, 1]")
    ledger.check("BatchNorm of [[1, 2], [3, 4]], row 1", layer_norm(X.T).T[0], "[-1, -1]")
    ledger.check("BatchNorm of [[1, 2], [3, 4]], row 2", layer_norm(X.T).T[1], "[1, 1]")
    ledger.check("LayerNorm of the same rows, row 1", layer_norm(X)[0], "[-1, 1]")
    ledger.check("LayerNorm of the same rows, row 2", layer_norm(X)[1], "[-1, 1]")
    one = np.array([5.0])  # a single observation of one feature
    ledger.check("BatchNorm of a single value (eps = 1e-5): normalized value, so output = beta",
                 ((one - one.mean()) / np.sqrt(one.var() + 1e-5)).item(), "0")
    try:
        nn.BatchNorm1d(3)(torch.ones(1, 3))
        message = "no error"
    except ValueError as error:
        message = str(error).split(",")[0]
    ledger.check("torch's error for one value per channel", message,
                 "Expected more than 1 value per channel when training")

    ledger.section("7. Label smoothing and the warm-up schedule")
    q5 = np.full(5, 0.1 / 5)
    q5[2] += 0.9
    ledger.check("V = 5, gold 3rd, eps = 0.1: target", q5, "[0.02, 0.02, 0.92, 0.02, 0.02]")
    ledger.check("its sum", q5.sum(), "1")
    q4 = np.full(4, 0.1 / 4)
    q4[2] += 0.9
    ledger.check("V = 4, gold index 2: target", q4, "[0.025, 0.025, 0.925, 0.025]")
    ledger.skip("the executed V = 4 loss", "the page does not give the logits")
    ledger.check("other convention: gold gets exactly 1 - eps", 1 - 0.1, "0.9")
    for step, page_512, page_256 in ((1, "0.0000001747", "0.0000002471"), (1000, "0.0001746928", "0.0002470529"),
                                     (4000, "0.0006987712", "0.0009882118"), (8000, "0.0004941059", "0.0006987712")):
        ledger.check(f"lr at step {step}, d = 512", lr(step, 512), page_512)
        ledger.check(f"lr at step {step}, d = 256", lr(step, 256), page_256)
    steps = range(1, 20_001)
    ledger.check("step with the highest lr, d = 512", max(steps, key=lambda s: lr(s, 512)), "4000")
    ledger.check("peak / 4 (a quarter of the way up the ramp)", lr(4000, 512) / 4, "0.0001746928")
    ledger.check("lr(8000) / lr(4000) vs sqrt(4000/8000) = 1/sqrt(2)",
                 lr(8000, 512) / lr(4000, 512), f"{math.sqrt(4000 / 8000):.10f}")
    ledger.check("lr(d = 512) / lr(d = 256) at step 8000 vs 1/sqrt(2) (Figure 3)",
                 lr(8000, 512) / lr(8000, 256), f"{1 / math.sqrt(2):.10f}")
    ledger.skip("2025 T2 End Term FN, Q142", "a choice among options the page does not list")

    ledger.section("Check yourself")
    ledger.check("1. training input for gold [A, B, EOS]", "[" + ", ".join(shift_right(words, "BOS")) + "]",
                 "[BOS, A, B]")
    ledger.check("1. step 3 input when step 2 was predicted as C", shift_right(words, "BOS")[2], "B")
    ledger.check("2. blocked cells in a 5-word causal mask", np.triu(np.ones((5, 5), dtype=int), k=1).sum(), "10")
    cross = nn.MultiheadAttention(8, 1, batch_first=True)
    _, w = cross(torch.zeros(1, 3, 8), torch.zeros(1, 6, 8), torch.zeros(1, 6, 8))
    ledger.check("3. weight table, 3 target words, 6 source words, one head", str(list(w.shape[1:])), "[3, 6]")
    ledger.check("4. PE(0) for d = 4", pe(0, 4), "[0, 1, 0, 1]")
    ledger.check("5. LayerNorm of [1, 2, 3]", layer_norm(x), "[-1.2247, 0, 1.2247]")
    batch = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 9.0]])
    other = torch.tensor([[1.0, 2.0, 3.0], [5.0, 1.0, 0.0]])  # same first token, another neighbour
    bn = nn.BatchNorm1d(3, affine=False)
    ln_same = torch.equal(nn.functional.layer_norm(batch, (3,))[0], nn.functional.layer_norm(other, (3,))[0])
    bn_same = torch.equal(bn(batch)[0], bn(other)[0])
    ledger.check("5. first token's output unchanged when the other example changes: LayerNorm, BatchNorm",
                 f"{ln_same}, {bn_same}", "True, False")
    return ledger.finish()


if __name__ == "__main__":
    sys.exit(main())
