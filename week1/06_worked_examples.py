"""Every worked number on the Week 1 page, recomputed and set beside the page's value.

Page: Week 1, all sections: the hand-checkable examples, the small counts, the
"Where the exam asks this" answers and the "Check yourself" answers, in page order.

Each line runs the operation the page describes on the page's own inputs (a softmax, an
attention call, a real torch module) and prints the result at the page's precision beside
the page's value, as the page writes it: `agree`, or `DISAGREE` when they differ (a value
the page gives in words, "about twice", beside the band it is judged by). A wrong
operation would show up as DISAGREE (the tests feed some in and see it). Exam answers whose
inputs are not on the page (the other scores of a question, the options of a
multiple-choice item) are not computed, and the line says why instead of repeating the
answer. The script exits 1 if any value disagrees.

Setup: the choices the page does not make are in week1/NOTES.md, section 06.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import attention, join_heads, split_heads
from common.cli import Lesson
from common.maths import softmax
from common.printing import n_params
from common.report import Ledger

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

F64 = torch.float64  # section 3's tensors: every printed digit the same on every CPU
ABOUT_TWICE = (1.9, 2.1)  # the page's "about twice" (FFN / attention), as week1/04 judges it: 2.00 at d = 512


def shape(tensor):
    return str(list(tensor.shape))


def same_or_different(sizes):
    return "the same" if len(set(sizes)) == 1 else "different"


def encoder_summary(rnn, words):
    """What an old seq2seq encoder hands the decoder: the context c, its last hidden state."""
    _, last = rnn(words)  # last [1, width]
    return last[0]  # [width]


def encoder_memory(rnn, words):
    """What an attention model keeps instead: every hidden state, one per source word."""
    states, _ = rnn(words)
    return states  # [T, width]


def section_1(ledger, summary=encoder_summary):
    ledger.section("1. The squeezed summary (seq2seq bottleneck)")
    torch.manual_seed(0)
    rnn = nn.RNN(input_size=4, hidden_size=8)  # a plain tanh RNN encoder, state width 8
    sentences = [torch.randn(n_words, 4) for n_words in (3, 30)]  # one 4-number vector per word
    with torch.no_grad():
        c = [shape(summary(rnn, words)) for words in sentences]
        memory = [shape(encoder_memory(rnn, words)) for words in sentences]
    ledger.check("size of c for a 3-word vs a 30-word sentence (torch nn.RNN, width 8)",
                 same_or_different(c), "the same")
    print(f"    (c has shape {c[0]} after 3 words and {c[1]} after 30 words)")
    print(f"    (the same test on what attention keeps, one state per word: {memory[0]} vs "
          f"{memory[1]}, {same_or_different(memory)})")
    ledger.skip("2025 T1 Quiz 1, Q107", "a choice among options the page does not list")
    ledger.skip("2026 T1 Quiz 2, Q9", "a choice among options the page does not list")


def section_2(ledger, softmax=softmax):
    ledger.section("2. Bahdanau attention")
    H = np.array([[1.0, 0.0], [0.0, 1.0]])  # h_1, h_2, one encoder state per row
    alpha = softmax(np.array([2.0, 0.0]))  # the made-up scores e = [2, 0]
    ledger.check("alpha for scores e = [2, 0]", alpha, "[0.881, 0.119]")
    ledger.check("context c_t = alpha_1 h_1 + alpha_2 h_2", alpha @ H, "[0.881, 0.119]")
    summed, v_a = np.array([2.0, 2.0]), np.array([1.0, 1.0])  # W_a s + U_a h_1, and v_a
    ledger.check("2026 T1 Quiz 1, Q13: score v . tanh((2, 2)) = 2 tanh 2", v_a @ np.tanh(summed), "1.93")
    ledger.skip("2026 T1 Quiz 1, Q14: softmax of the scores", "the question's other scores are not on the page")
    ledger.skip("2026 T1 Quiz 1, Q15: the context vector", "the question's weights and states are not on the page")
    ledger.skip("2026 T2 Quiz 1, Q2", "a choice among options the page does not list")


def section_3(ledger, attention=attention):
    ledger.section("3. Self-attention, identity projections W^Q = W^K = W^V = I")
    X = torch.eye(2, dtype=F64)  # two tokens, 2 numbers each
    W_Q = W_K = W_V = torch.eye(2, dtype=F64)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # each [2, 2]: d_k = 2
    scores = Q @ K.T / math.sqrt(Q.shape[-1])  # the page's hand step: Q K^T / sqrt(d_k), [2, 2]
    ledger.check("token 1's scaled scores Q K^T / sqrt(2)", scores[0], "[0.707, 0]")
    Z, A = attention(Q, K, V)  # [2, 2], [2, 2]
    ledger.check("token 1's weights alpha", A[0], "[0.670, 0.330]")
    ledger.check("z_1", Z[0], "[0.670, 0.330]")
    ledger.check("z_2 (by symmetry)", Z[1], "[0.330, 0.670]")
    q, k = torch.tensor([[1.0]], dtype=F64), torch.tensor([[0.0], [0.0]], dtype=F64)  # q = 1, k_1 = k_2 = 0
    v = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64)  # v_1 = [1, 0], v_2 = [0, 2]
    z, weights = attention(q, k, v)  # [1, 2], [1, 2]
    ledger.check("notes example q = 1, k_1 = k_2 = 0: weights (page: 1/2, 1/2)", weights[0], "[0.5, 0.5]")
    ledger.check("z = weighted sum of the values v_1 = [1, 0], v_2 = [0, 2]", z[0], "[0.5, 1]")


def section_4(ledger, softmax=softmax):
    ledger.section("4. Why divide by sqrt(d_k)")
    raw, d_k = np.array([8.0, 0.0]), 64
    ledger.check("softmax of raw scores [8, 0]", softmax(raw), "[0.9997, 0.0003]")
    scaled = raw / np.sqrt(d_k)
    ledger.check("scores divided by sqrt(64)", scaled, "[1, 0]")
    ledger.check("softmax of the scaled scores", softmax(scaled), "[0.731, 0.269]")
    values = np.array([[1, 0], [0, 1], [1, 1], [2, 1]], dtype=float)
    mixed = np.array([0.1, 0.2, 0.5, 0.2]) @ values
    ledger.check("2025 T2 Quiz 1, Q146: 0.1[1,0] + 0.2[0,1] + 0.5[1,1] + 0.2[2,1]", mixed, "[1.0, 0.9]")
    ledger.check("2025 T2 Quiz 1, Q146: its first element", mixed[0], "1.00")
    for question in ("2025 T3 Quiz 1, Q173", "2026 T1 Quiz 1, Q3", "2025 T2 Quiz 1, Q136"):
        ledger.skip(question, "a choice among options the page does not list")


def run_heads(concat, d_model=512, h=8, T=10):
    """Split a sentence into h heads, let each head attend on its own, glue the heads back."""
    torch.manual_seed(0)
    x = torch.randn(1, T, d_model)  # [B, T, d_model], one sentence
    heads = split_heads(x, h)  # [B, h, T, d_k]
    Z = F.scaled_dot_product_attention(heads, heads, heads)  # [B, h, T, d_k], one pattern per head
    return heads, concat(Z)  # [B, h, T, d_k], [B, T, h d_k]


def shape_in_T(shapes):
    """{T: output shape} -> the shape with T written as 'T' where it follows the length."""
    written = {"[" + ", ".join("T" if n == T else str(n) for n in s) + "]" for T, s in shapes.items()}
    return written.pop() if len(written) == 1 else " vs ".join(sorted(written))


def section_5(ledger, concat=join_heads):
    ledger.section("5. Multi-head attention and W^O (d_model = 512, h = 8)")
    heads, glued = run_heads(concat)
    ledger.check("head width d_k: a [10, 512] sentence split into 8 heads", heads.shape[-1], "64")
    ledger.check("width of 8 attended heads of width 64, concatenated", glued.shape[-1], "512")
    mha = nn.MultiheadAttention(512, 8)
    ledger.check("shape of W^O (torch's out_proj)", shape(mha.out_proj.weight), "[512, 512]")
    H = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)  # one token's outputs from heads 1 and 2, [h, d_k]
    joined = concat(H[None, :, None, :])[0, 0]  # [B, h, T, d_k] = [1, 2, 1, 2] -> [B, T, h d_k] -> [4]
    ledger.check("W^O example: concatenation", joined, "[1, 2, 3, 4]")
    W_O = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=F64).T  # the page's two columns, [4, 2]
    ledger.check("W^O example: [1, 2, 3, 4] W^O", torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64) @ W_O, "[4, 6]")
    outputs = {}
    with torch.no_grad():
        for T in (3, 10):
            x = torch.randn(T, 512)  # one sentence of T words
            outputs[T] = mha(x, x, x)[0].shape  # [T, d_model]
    ledger.check("2026 T1 Quiz 2, Q2: output of torch's MultiheadAttention(512, 8), T = 3 and 10",
                 shape_in_T(outputs), "[T, 512]")
    ledger.check("2025 T3 Quiz 1, Q191: weights in W_O for d_model 768 (no bias)",
                 nn.MultiheadAttention(768, 12, device="meta").out_proj.weight.numel(), "589,824")
    ledger.skip("2026 T1 Quiz 1, Q9", "a choice among options the page does not list")
    ledger.skip("2025 T3 Quiz 1, Q183", "the page leaves the answer to the question bank")


def section_6(ledger, encoder_layer_type=nn.TransformerEncoderLayer):
    ledger.section("6. The encoder layer")
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(encoder_layer_type(512, 8, 2048, dropout=0.0), 6, enable_nested_tensor=False)
    x = torch.randn(50, 512)  # [T, d_model], one sentence
    with torch.no_grad():
        for i, layer in enumerate(encoder.layers, start=1):  # each layer has its own weights
            x = layer(x)
            ledger.check(f"shape after encoder layer {i} of 6, input [50, 512]", shape(x), "[50, 512]")
    ledger.check("2026 T1 Quiz 1, Q4: output of the 6th layer", shape(x), "[50, 512]")
    small = encoder_layer_type(64, 4, 256, batch_first=True)
    with torch.no_grad():
        y = small(torch.randn(5, 20, 64))  # 5 sentences padded to 20 tokens, d_model 64
    ledger.check("2026 T1 End Term FN, Q4: numbers in the output volume 5 x 20 x 64", y.numel(), "6400")
    ledger.skip("2026 T1 Quiz 2, Q8", "a choice among options the page does not list")
    ledger.skip("2025 T2 Quiz 1, Q135", "a choice among options the page does not list")


def encoder_layer(d=512, f=2048):
    return nn.TransformerEncoderLayer(d, 8, f, device="meta")  # shapes only, no numbers


def section_7(ledger, make_layer=encoder_layer, split=split_heads):
    ledger.section("7. Counting parameters, d = 512, f = 2048 (biases and affine norms counted)")
    d, f = 512, 2048
    layer = make_layer(d, f)
    attn, ffn = layer.self_attn, [layer.linear1, layer.linear2]
    ledger.check("Q, K, V and W^O weights (torch's in_proj and out_proj weights)",
                 attn.in_proj_weight.numel() + attn.out_proj.weight.numel(), "1,048,576")
    ledger.check("attention biases (torch's in_proj and out_proj biases)",
                 attn.in_proj_bias.numel() + attn.out_proj.bias.numel(), "2,048")
    ledger.check("MHA 4 d^2 + 4 d (torch's self_attn)", n_params(attn), "1,050,624")
    ledger.check("FFN weights W_1, W_2 (torch's linear1, linear2)", sum(m.weight.numel() for m in ffn), "2,097,152")
    ledger.check("FFN biases b_1, b_2 (torch's)", sum(m.bias.numel() for m in ffn), "2,560")
    ledger.check("FFN 2 d f + f + d (torch's linear1 + linear2)", sum(n_params(m) for m in ffn), "2,099,712")
    ledger.check("two LayerNorms 4 d (torch's norm1 + norm2)", n_params(layer.norm1) + n_params(layer.norm2), "2,048")
    ledger.check("the page's formula 4 d^2 + 2 d f + f + 9 d", 4 * d * d + 2 * d * f + f + 9 * d, "3,152,384")
    ledger.check("torch TransformerEncoderLayer(512, 8, 2048) count", n_params(layer), "3,152,384")
    ledger.check("course shorthand, in millions", f"{n_params(layer) / 1e6:.2f}M", "3.15M")
    stack = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    ledger.check("six independently parameterised layers (torch)", n_params(stack), "18,914,304")
    ledger.within("FFN / attention (page: about twice)", sum(n_params(m) for m in ffn) / n_params(attn), ABOUT_TWICE)
    W_Q = attn.in_proj_weight[:d].T  # [d, d]: Q = x W_Q (torch stores W^Q, W^K, W^V stacked, each [out, in])
    W_Q_heads = split(W_Q[None], attn.num_heads)[0]  # [h, d, d_k]: head i's share, split as the queries are
    ledger.check("one head's W_Q, d_model 512, d_k 64 (head 1's rows of torch's W^Q)", W_Q_heads[0].numel(), "32,768")
    B, h, T = 4, 2, 12
    torch.manual_seed(0)
    probe = nn.MultiheadAttention(8, h, batch_first=True)
    with torch.no_grad():
        tokens = torch.randn(B, T, 8)
        _, per_head = probe(tokens, tokens, tokens, average_attn_weights=False)  # [B, h, T, T]
        longer = torch.randn(B, 2 * T, 8)
        _, doubled = probe(longer, longer, longer, average_attn_weights=False)  # [B, h, 2T, 2T]
    ledger.check("score entries B h T^2 for B = 4, h = 2, T = 12 (torch's weights)", per_head.numel(), "1,152")
    ledger.check("doubling T multiplies the score entries by", doubled.numel() / per_head.numel(), "4")


def scaled_variances(widths, seed=42, pairs=20_000):
    """Var(q.k / sqrt(d_k)) at each width, from week1/02's draws: one generator, and per width q
    then k, `pairs` standard normal rows each (a copy of its dot_products; a test holds them equal)."""
    rng = np.random.default_rng(seed)
    scaled_vars = []
    for d_k in widths:
        q, k = rng.standard_normal((pairs, d_k)), rng.standard_normal((pairs, d_k))  # [pairs, d_k] each
        scaled_vars.append(((q * k).sum(axis=1) / np.sqrt(d_k)).var())  # Var(q.k / sqrt(d_k))
    return scaled_vars


def check_yourself(ledger, softmax=softmax, concat=join_heads):
    ledger.section("Check yourself")
    ledger.skip("1. why one fixed context vector is a problem", "a conceptual answer, no number")
    ledger.check("2. context for scores [2, 0], states [1, 0] and [0, 1]",
                 softmax(np.array([2.0, 0.0])) @ np.eye(2), "[0.881, 0.119]")
    ledger.check("3. scaled variances for d_k = 4, 16, 64, 256", scaled_variances((4, 16, 64, 256)),
                 "[1.011, 0.992, 0.997, 0.992]")
    _, glued = run_heads(concat)
    ledger.check("4. concatenation width, 8 heads of width 64", glued.shape[-1], "512")
    ledger.check("4. shape of W^O (torch's out_proj)", shape(nn.MultiheadAttention(512, 8).out_proj.weight),
                 "[512, 512]")
    ledger.check("5. one encoder layer, d = 512, f = 2048 (torch)", n_params(encoder_layer()), "3,152,384")


def lesson(args):
    """Every section of the page in its order: its worked values, recomputed."""
    ledger = Ledger()
    print("Week 1 worked examples, recomputed: each computed value beside the page's value")
    for section in (section_1, section_2, section_3, section_4, section_5, section_6, section_7,
                    check_yourself):
        section(ledger)
    # Every number the page works out by hand is what the operation it describes gives;
    # the shapes and counts are read from torch's own modules, not from the page's formulas.
    return ledger.finish()


# ---------------------------------------------------------------- optional: Try it

TRY_IT = [("", "read it beside the page: one block per section, one line per value, agree or DISAGREE")]


DESCRIPTION = "Recompute every worked number on the Week 1 page and set it beside the page's value."
LESSON = Lesson(__file__, page=("week1", "worked examples"), description=DESCRIPTION, knobs=[], try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))

if __name__ == "__main__":
    run(main)
