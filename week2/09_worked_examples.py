"""Every worked number on the Week 2 page, recomputed and set beside the page's value.

Page: Week 2, all sections: the hand-checks, the counts and tables, the warm-up values,
the "Where the exam asks this" answers and the "Check yourself" answers, in page order.

Each line runs the operation the page describes on the page's own inputs (a shift, a
mask, a softmax, a real torch module) and prints the result at the page's precision beside
the page's value, as the page writes it: `agree`, or `DISAGREE` when they differ. A wrong
operation would show up as DISAGREE (the tests feed some in and see it). Values whose
inputs are not on the page (the executed 4x4 scores, the label-smoothing logits, exam
items the page leaves to the question bank) are not computed, and the line says why. The
script exits 1 if any value disagrees.

Setup: the choices the page does not make are in week2/NOTES.md, section 09.
"""
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import causal_mask, sinusoidal_pe
from common.cli import Lesson
from common.printing import n_params
from common.report import Ledger

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BOS = 0


def shape(tensor):
    return str(list(tensor.shape))


def bracket(words):
    return "[" + ", ".join(map(str, words)) + "]"


def training_example(target, bos=BOS):
    """[y_1, ..., y_T] -> (decoder input [bos, y_1, ..., y_(T-1)], labels [y_1, ..., y_T])."""
    sequence = [bos, *target]
    return sequence[:-1], sequence[1:]


def decoder_input(gold, guesses, teacher_forced, bos=BOS):
    """What the decoder reads at each step: [bos], then the word before the step: the gold one
    under teacher forcing, the model's own guess when it runs free."""
    return training_example(gold if teacher_forced else guesses, bos)[0]


def section_1(ledger, example=training_example, decoder_input=decoder_input):
    ledger.section("1. Teacher forcing")
    gold = [1, 2, 3, 4]
    forced, labels = example(gold)
    ledger.check("teacher-forced decoder input for gold [1, 2, 3, 4] (0 = start)", forced, "[0, 1, 2, 3]")
    ledger.check("labels", labels, "[1, 2, 3, 4]")
    guesses = np.random.default_rng(42).integers(1, 10, size=4).tolist()  # 08_teacher_forcing's stand-ins
    ledger.check("free-running input: the decoder reads the guesses instead (rng(42) stand-ins, as in 08)",
                 decoder_input(gold, guesses, teacher_forced=False), "[0, 1, 7, 6]")
    gold_words, guessed = ["A", "B", "EOS"], ["A", "C", "EOS"]  # step 2 wrongly predicts C
    ledger.check("hand-check: step 3 input under teacher forcing, step 2 guessed C",
                 decoder_input(gold_words, guessed, teacher_forced=True, bos="BOS")[2], "B")
    ledger.check("hand-check: step 3 input running free instead (the guess C, the page's premise)",
                 decoder_input(gold_words, guessed, teacher_forced=False, bos="BOS")[2], "C")


def blocked(mask):
    """How many cells a mask blocks (True = blocked, the page's 1)."""
    return int(mask.sum())


def minus_inf(row):
    return "[" + ", ".join("-inf" if math.isinf(v) else f"{v:g}" for v in row.tolist()) + "]"


def section_2(ledger, causal_mask=causal_mask):
    ledger.section("2. Masked (causal) self-attention")
    mask = causal_mask(4)  # [4, 4] bool: True above the diagonal, where key j is in query i's future
    T = mask.shape[0]
    ledger.check("blocked cells for T = 4 (the causal mask, True = blocked)", blocked(mask), "6")
    ledger.check("the page's formula T(T-1)/2 for T = 4", T * (T - 1) // 2, "6")
    ledger.check("blocked cells on the diagonal", blocked(mask.diagonal()), "0")
    scores = torch.tensor([2.0, 1.0, 5.0, 3.0], dtype=torch.float64)  # the page's scores
    masked = scores.masked_fill(mask[1], -math.inf)  # query 2 may see keys 1 and 2 only
    ledger.check("the page's scores [2, 1, 5, 3] with query 2's mask", minus_inf(masked), "[2, 1, -inf, -inf]")
    ledger.check("softmax of the masked row", torch.softmax(masked, dim=-1), "[0.7311, 0.2689, 0, 0]")
    ledger.skip("row 2 of the executed 4x4 run", "the page does not give that run's score matrix")


def cross_attention(n_target, n_source, d=16):
    """Weights [T, S] of one cross-attention head: queries from the decoder, keys from the encoder."""
    torch.manual_seed(0)
    attend = nn.MultiheadAttention(d, 1, batch_first=True)
    decoder, encoder = torch.randn(1, n_target, d), torch.randn(1, n_source, d)  # [B, T, d], [B, S, d]
    with torch.no_grad():
        _, weights = attend(decoder, encoder, encoder)  # query, key, value; weights [B, T, S]
    return weights[0]


def section_3(ledger, cross_attention=cross_attention):
    ledger.section("3. Cross-attention")
    ledger.check("weight table for 3 target and 5 source words (torch)", shape(cross_attention(3, 5)), "[3, 5]")


def decoder_counts(d, f, h):
    """(attention x2, feed-forward, 3 LayerNorms, total) of torch's TransformerDecoderLayer."""
    layer = nn.TransformerDecoderLayer(d, h, f, device="meta")  # shapes only, no numbers
    return (n_params(layer.self_attn) + n_params(layer.multihead_attn),
            n_params(layer.linear1) + n_params(layer.linear2),
            n_params(layer.norm1) + n_params(layer.norm2) + n_params(layer.norm3),
            n_params(layer)), layer


def section_4(ledger, decoder_counts=decoder_counts, n_params=n_params):
    ledger.section("4. Output layer and decoder parameters (biases counted)")
    ledger.check("output layer weights d x V, d = 512, V = 37,000 (torch nn.Linear, no bias)",
                 nn.Linear(512, 37_000, bias=False, device="meta").weight.numel(), "18,944,000")
    ledger.check("output layer with a bias (torch nn.Linear)",
                 n_params(nn.Linear(512, 37_000, device="meta")), "18,981,000")
    for d, f, h, page in ((4, 8, 1, ["160", "76", "24", "260"]),
                          (512, 2048, 8, ["2,101,248", "2,099,712", "3,072", "4,204,032"])):
        (attention, ffn, norms, total), layer = decoder_counts(d, f, h)
        ledger.check(f"d={d}, f={f}: self- and cross-attention (torch)", attention, page[0])
        ledger.check(f"d={d}, f={f}: feed-forward (torch's linear1 + linear2)", ffn, page[1])
        ledger.check(f"d={d}, f={f}: 3 LayerNorms (torch's norm1..norm3)", norms, page[2])
        ledger.check(f"d={d}, f={f}: total (torch TransformerDecoderLayer({d}, {h}, {f}))", total, page[3])
        ledger.check(f"d={d}, f={f}: the page's formula 2 (4 d^2 + 4 d) + (2 d f + f + d) + 6 d",
                     2 * (4 * d * d + 4 * d) + (2 * d * f + f + d) + 6 * d, page[3])
    ledger.check("six decoder layers (torch)", n_params(nn.TransformerDecoder(layer, 6)), "25,224,192")
    ledger.check("one layer in millions (course: about 4M)", f"{n_params(layer) / 1e6:.3f}M", "4.204M")
    ledger.skip("2024 T3 Quiz 1, Q277-Q280", "the page leaves them to the bank (three are marked ambiguous)")


def section_5(ledger, sinusoidal_pe=sinusoidal_pe):
    ledger.section("5. Sinusoidal positional encoding, d = 4")
    ledger.check("omega_0, omega_1 = 10000^(-2i/4)", 10000.0 ** (-2 * np.arange(2) / 4), "[1, 0.01]")
    tags = sinusoidal_pe(100, 4, torch.float64).numpy()  # [100, 4]: row p is PE(p), sin, cos, sin, cos
    ledger.check("PE(0)", tags[0], "[0, 1, 0, 1]")
    ledger.check("PE(1)", tags[1], "[0.8415, 0.5403, 0.0100, 1.0000]")
    ledger.check("squared length of PE(p), p = 0..99 (min, max)",
                 [(tags ** 2).sum(1).min(), (tags ** 2).sum(1).max()], "[2, 2]")
    ledger.check("all entries in [-1, 1] (p = 0..99)", str(bool((np.abs(tags) <= 1).all())), "True")


def layer_norm(x):
    """Each row to mean 0, variance 1 over its features (gamma = 1, beta = 0, eps = 0)."""
    return (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)


def batch_norm(X):
    """torch's BatchNorm in training mode, no gamma/beta: each feature over the batch."""
    return nn.BatchNorm1d(X.shape[1], affine=False, dtype=torch.float64)(torch.tensor(X)).detach().numpy()


def section_6(ledger, layer_norm=layer_norm, batch_norm=batch_norm):
    ledger.section("6. LayerNorm and BatchNorm (gamma = 1, beta = 0)")
    values = [Fraction(1), Fraction(2), Fraction(3)]
    mean = sum(values) / len(values)
    ledger.check("mean of (1, 2, 3)", mean, "2")
    ledger.check("variance of (1, 2, 3)", sum((v - mean) ** 2 for v in values) / len(values), "2/3")
    x = np.array([1.0, 2.0, 3.0])
    ledger.check("LayerNorm(1, 2, 3), eps = 0", layer_norm(x), "[-1.2247, 0, 1.2247]")
    by_torch = nn.LayerNorm(3)(torch.tensor(x, dtype=torch.float32)).tolist()
    ledger.check("torch nn.LayerNorm(1, 2, 3) (eps = 1e-5)", by_torch, "[-1.2247, 0.0000, 1.2247]")
    X = np.array([[1.0, 2.0], [3.0, 4.0]])  # rows = samples
    ledger.check("feature 1 (values 1 and 3): mean, standard deviation", [X[:, 0].mean(), X[:, 0].std()], "[2, 1]")
    ledger.check("BatchNorm of [[1, 2], [3, 4]], row 1 (torch)", batch_norm(X)[0], "[-1, -1]")
    ledger.check("BatchNorm of [[1, 2], [3, 4]], row 2 (torch)", batch_norm(X)[1], "[1, 1]")
    ledger.check("LayerNorm of the same rows, row 1", layer_norm(X)[0], "[-1, 1]")
    ledger.check("LayerNorm of the same rows, row 2", layer_norm(X)[1], "[-1, 1]")
    one, eps = np.array([5.0]), 1e-5  # a single observation of one feature
    ledger.check("BatchNorm of a single value, by hand (eps = 1e-5): normalized value, so output = beta",
                 ((one - one.mean()) / np.sqrt(one.var() + eps)).item(), "0")
    try:
        nn.BatchNorm1d(3)(torch.ones(1, 3))
        message = "no error"
    except ValueError as error:
        message = str(error).split(",")[0]
    ledger.check("torch's error for one value per channel", message,
                 "Expected more than 1 value per channel when training")


def smoothed_target(V, gold, eps):
    """The page's uniform mixture: q_i = (1 - eps) [i = gold] + eps / V."""
    q = np.full(V, eps / V)
    q[gold] += 1 - eps
    return q


def other_convention_target(V, gold, eps):
    """The other convention: the gold gets exactly 1 - eps, the other V - 1 classes share eps."""
    q = np.full(V, eps / (V - 1))
    q[gold] = 1 - eps
    return q


def torch_smoothed_target(V, gold, eps):
    """torch's own target, read from its loss: at logits 0, d loss / d logits = 1/V - q."""
    logits = torch.zeros(1, V, dtype=torch.float64, requires_grad=True)
    F.cross_entropy(logits, torch.tensor([gold]), label_smoothing=eps).backward()
    return (torch.softmax(logits, dim=-1) - logits.grad)[0].detach()


def lr(step, d, warmup=4000):
    """The warm-up schedule d^(-1/2) min(step^(-1/2), step warmup^(-3/2))."""
    return d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def as_page_writes(ratio):
    """A ratio as the page writes it: 1/sqrt(2) when it is within 1e-12 of it, else its decimals."""
    return "1/sqrt(2)" if abs(ratio - 1 / math.sqrt(2)) < 1e-12 else f"{ratio:.10f}"


def section_7(ledger, smoothed_target=smoothed_target, lr=lr):
    ledger.section("7. Label smoothing and the warm-up schedule")
    q5 = smoothed_target(5, 2, 0.1)
    ledger.check("V = 5, gold 3rd, eps = 0.1: target", q5, "[0.02, 0.02, 0.92, 0.02, 0.02]")
    ledger.check("its sum", q5.sum(), "1")
    ledger.check("V = 4, gold index 2: target", smoothed_target(4, 2, 0.1), "[0.025, 0.025, 0.925, 0.025]")
    ledger.check("V = 4: torch's label_smoothing=0.1 target, read from its loss",
                 torch_smoothed_target(4, 2, 0.1), "[0.025, 0.025, 0.925, 0.025]")
    ledger.skip("the executed V = 4 loss", "the page does not give the logits")
    ledger.check("other convention, V = 5, gold 3rd: the gold's share",
                 other_convention_target(5, 2, 0.1)[2], "0.9")
    for step, page_512, page_256 in ((1, "0.0000001747", "0.0000002471"), (1000, "0.0001746928", "0.0002470529"),
                                     (4000, "0.0006987712", "0.0009882118"), (8000, "0.0004941059", "0.0006987712")):
        ledger.check(f"lr at step {step}, d = 512", lr(step, 512), page_512)
        ledger.check(f"lr at step {step}, d = 256", lr(step, 256), page_256)
    steps = range(1, 20_001)
    ledger.check("step with the highest lr, d = 512", max(steps, key=lambda s: lr(s, 512)), "4000")
    ledger.check("peak / 4 (page: step 1000 is a quarter of the way up the ramp)", lr(4000, 512) / 4, "0.0001746928")
    ledger.check("lr(8000) / lr(4000) (page: sqrt(4000/8000) = 1/sqrt(2) of the peak)",
                 as_page_writes(lr(8000, 512) / lr(4000, 512)), "1/sqrt(2)")
    ratios = {as_page_writes(lr(s, 512) / lr(s, 256)) for s in steps}
    ledger.check("lr(d = 512) / lr(d = 256) at every step 1..20,000 (Figure 3)",
                 ratios.pop() if len(ratios) == 1 else "not one factor", "1/sqrt(2)")
    ledger.skip("2025 T2 End Term FN, Q142", "a choice among options the page does not list")


def check_yourself(ledger, example=training_example, decoder_input=decoder_input, causal_mask=causal_mask,
                   cross_attention=cross_attention, sinusoidal_pe=sinusoidal_pe, layer_norm=layer_norm):
    ledger.section("Check yourself")
    words, guessed = ["A", "B", "EOS"], ["A", "C", "EOS"]  # step 2 predicted as C
    ledger.check("1. training input for gold [A, B, EOS]", bracket(example(words, "BOS")[0]), "[BOS, A, B]")
    ledger.check("1. step 3 input when step 2 was predicted as C",
                 decoder_input(words, guessed, teacher_forced=True, bos="BOS")[2], "B")
    ledger.check("2. blocked cells in a 5-word causal mask", blocked(causal_mask(5)), "10")
    ledger.check("3. weight table, 3 target words, 6 source words, one head (torch)",
                 shape(cross_attention(3, 6)), "[3, 6]")
    ledger.check("4. PE(0) for d = 4", sinusoidal_pe(1, 4, torch.float64).numpy()[0], "[0, 1, 0, 1]")
    ledger.check("5. LayerNorm of [1, 2, 3]", layer_norm(np.array([1.0, 2.0, 3.0])), "[-1.2247, 0, 1.2247]")
    batch = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 9.0]])
    other = torch.tensor([[1.0, 2.0, 3.0], [5.0, 1.0, 0.0]])  # same first token, another neighbour
    bn = nn.BatchNorm1d(3, affine=False)
    ln_same = torch.equal(F.layer_norm(batch, (3,))[0], F.layer_norm(other, (3,))[0])
    bn_same = torch.equal(bn(batch)[0], bn(other)[0])
    ledger.check("5. first token's output unchanged when the other example changes: LayerNorm, BatchNorm",
                 f"{ln_same}, {bn_same}", "True, False")


def lesson(args):
    """Every section of the page in its order: its worked values, recomputed."""
    ledger = Ledger()
    print("Week 2 worked examples, recomputed: each computed value beside the page's value")
    for section in (section_1, section_2, section_3, section_4, section_5, section_6, section_7,
                    check_yourself):
        section(ledger)
    # Every number the page works out by hand is what the operation it describes gives;
    # the shapes and counts are torch's own, the mask and the tags common/blocks.py's
    # (taught in week2/01 and week2/03, and held to torch's there and in tests/test_blocks.py).
    return ledger.finish()


# ---------------------------------------------------------------- optional: Try it

TRY_IT = [("", "read it beside the page: one block per section, one line per value, agree or DISAGREE")]


DESCRIPTION = "Recompute every worked number on the Week 2 page and set it beside the page's value."
LESSON = Lesson(__file__, page=("week2", "worked examples"), description=DESCRIPTION, knobs=[], try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))

if __name__ == "__main__":
    run(main)
