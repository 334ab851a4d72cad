"""Every worked number on the Week 1 page, recomputed and set beside the page's value.

Page: Week 1, all sections: the hand-checkable examples, the small counts, the
"Where the exam asks this" answers and the "Check yourself" answers, in page order.

Each line shows what is computed, the result at the page's own precision, the page's
value, and whether they agree. Exam answers whose inputs are not on the page (the other
scores of a question, the options of a multiple-choice item) are not computed, and the
line says why instead of repeating the answer. The script exits 1 if any value disagrees.
Conventions: parameter counts include biases and affine LayerNorms where the page's
count does (it says so on each line); softmax is the exact softmax in float64.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.maths import softmax  # noqa: E402
from common.printing import n_params  # noqa: E402
from common.report import Ledger  # noqa: E402


def main():
    argparse.ArgumentParser(
        description="Recompute every worked number on the Week 1 page and compare it with "
        "the page's value.",
        epilog="Try it: run it while reading the page; each line names its section.").parse_args()
    ledger = Ledger()
    print("Week 1 worked examples, recomputed: each computed value beside the page's value")

    ledger.section("1. The squeezed summary (seq2seq bottleneck)")
    rng = np.random.default_rng(42)  # a toy RNN encoder: h_t = tanh(h_(t-1) W + x_t U)
    W, U = rng.standard_normal((8, 8)) * 0.3, rng.standard_normal((4, 8))
    sizes = []
    for n_words in (3, 30):
        h = np.zeros(8)
        for x in rng.standard_normal((n_words, 4)):  # one word vector per step
            h = np.tanh(h @ W + x @ U)
        sizes.append(h.shape)  # the context c is the last state
    ledger.check("size of c for a 3-word vs a 30-word sentence (toy RNN, width 8)",
                 "the same" if sizes[0] == sizes[1] else "different", "the same")
    ledger.skip("2025 T1 Quiz 1, Q107", "a choice among options the page does not list")
    ledger.skip("2026 T1 Quiz 2, Q9", "a choice among options the page does not list")

    ledger.section("2. Bahdanau attention")
    H = np.array([[1.0, 0.0], [0.0, 1.0]])  # h_1, h_2
    alpha = softmax(np.array([2.0, 0.0]))  # made-up scores e = [2, 0]
    ledger.check("alpha for scores e = [2, 0]", alpha, "[0.881, 0.119]")
    ledger.check("context c_t = alpha_1 h_1 + alpha_2 h_2", alpha @ H, "[0.881, 0.119]")
    summed, v = np.array([2.0, 2.0]), np.array([1.0, 1.0])  # W_a s + U_a h_1, and v_a
    ledger.check("2026 T1 Quiz 1, Q13: score v . tanh((2, 2)) = 2 tanh 2", v @ np.tanh(summed), "1.93")
    ledger.skip("2026 T1 Quiz 1, Q14: softmax of the scores", "the question's other scores are not on the page")
    ledger.skip("2026 T1 Quiz 1, Q15: the context vector", "the question's weights and states are not on the page")
    ledger.skip("2026 T2 Quiz 1, Q2", "a choice among options the page does not list")

    ledger.section("3. Self-attention, identity projections W^Q = W^K = W^V = I")
    X = np.eye(2)  # two tokens, 2-dim
    Q, K, V = X @ np.eye(2), X @ np.eye(2), X @ np.eye(2)
    scores = Q @ K.T / np.sqrt(2)  # d_k = 2
    A = softmax(scores, axis=-1)
    Z = A @ V
    ledger.check("token 1's scaled scores Q K^T / sqrt(2)", scores[0], "[0.707, 0]")
    ledger.check("token 1's weights alpha", A[0], "[0.670, 0.330]")
    ledger.check("z_1", Z[0], "[0.670, 0.330]")
    ledger.check("z_2 (by symmetry)", Z[1], "[0.330, 0.670]")
    q, k, v = np.array([1.0]), np.array([[0.0], [0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]])
    weights = softmax(k @ q)  # q = 1, k_1 = k_2 = 0
    ledger.check("notes example q = 1, k_1 = k_2 = 0: weights (page: 1/2, 1/2)", weights, "[0.5, 0.5]")
    ledger.check("z = weighted sum of the values v_1 = [1, 0], v_2 = [0, 2]", weights @ v, "[0.5, 1]")

    ledger.section("4. Why divide by sqrt(d_k)")
    ledger.check("softmax of raw scores [8, 0]", softmax(np.array([8.0, 0.0])), "[0.9997, 0.0003]")
    scaled = np.array([8.0, 0.0]) / np.sqrt(64)
    ledger.check("scores divided by sqrt(64)", scaled, "[1, 0]")
    ledger.check("softmax of the scaled scores", softmax(scaled), "[0.731, 0.269]")
    values = np.array([[1, 0], [0, 1], [1, 1], [2, 1]], dtype=float)
    mixed = np.array([0.1, 0.2, 0.5, 0.2]) @ values
    ledger.check("2025 T2 Quiz 1, Q146: 0.1[1,0] + 0.2[0,1] + 0.5[1,1] + 0.2[2,1]", mixed, "[1.0, 0.9]")
    ledger.check("2025 T2 Quiz 1, Q146: its first element", mixed[0], "1.00")
    for question in ("2025 T3 Quiz 1, Q173", "2026 T1 Quiz 1, Q3", "2025 T2 Quiz 1, Q136"):
        ledger.skip(question, "a choice among options the page does not list")

    ledger.section("5. Multi-head attention and W^O (d_model = 512, h = 8)")
    mha = nn.MultiheadAttention(512, 8, device="meta")
    d_k = mha.head_dim
    ledger.check("head width d_k = d_model / h", d_k, "64")
    ledger.check("width of 8 heads of width 64, concatenated", 8 * d_k, "512")
    ledger.check("shape of W^O (torch's out_proj)", str(list(mha.out_proj.weight.shape)), "[512, 512]")
    concat = np.concatenate([[1.0, 2.0], [3.0, 4.0]])  # one token's outputs from heads 1 and 2
    W_O = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)  # columns [1,0,1,0], [0,1,0,1]
    ledger.check("W^O example: concatenation", concat, "[1, 2, 3, 4]")
    ledger.check("W^O example: [1, 2, 3, 4] W^O", concat @ W_O, "[4, 6]")
    ledger.check("2026 T1 Quiz 2, Q2: concatenated output for T tokens", f"[T, {8 * d_k}]", "[T, 512]")
    ledger.check("2025 T3 Quiz 1, Q191: weights in W_O for d_model 768 (no bias)",
                 nn.MultiheadAttention(768, 12, device="meta").out_proj.weight.numel(), "589,824")
    ledger.skip("2026 T1 Quiz 1, Q9", "a choice among options the page does not list")
    ledger.skip("2025 T3 Quiz 1, Q183", "the page leaves the answer to the question bank")

    ledger.section("6. The encoder layer")
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0), 6,
                                    enable_nested_tensor=False)
    x = torch.randn(50, 512)  # [T, d_model], one sentence
    with torch.no_grad():
        for i, layer in enumerate(encoder.layers, start=1):  # each layer has its own weights
            x = layer(x)
            ledger.check(f"shape after encoder layer {i} of 6, input [50, 512]", str(list(x.shape)), "[50, 512]")
    ledger.check("2026 T1 Quiz 1, Q4: output of the 6th layer", str(list(x.shape)), "[50, 512]")
    small = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True)
    with torch.no_grad():
        y = small(torch.randn(5, 20, 64))  # 5 sentences padded to 20 tokens, d_model 64
    ledger.check("2026 T1 End Term FN, Q4: numbers in the output volume 5 x 20 x 64", y.numel(), "6400")
    ledger.skip("2026 T1 Quiz 2, Q8", "a choice among options the page does not list")
    ledger.skip("2025 T2 Quiz 1, Q135", "a choice among options the page does not list")

    ledger.section("7. Counting parameters, d = 512, f = 2048 (biases and affine norms counted)")
    d, f = 512, 2048
    layer = nn.TransformerEncoderLayer(d, 8, f, device="meta")
    ledger.check("Q, K, V and W^O weights 4 d^2", 4 * d * d, "1,048,576")
    ledger.check("attention biases 4 d", 4 * d, "2,048")
    ledger.check("MHA 4 d^2 + 4 d (torch's self_attn)", n_params(layer.self_attn), "1,050,624")
    ledger.check("FFN weights 2 d f", 2 * d * f, "2,097,152")
    ledger.check("FFN biases f + d", f + d, "2,560")
    ledger.check("FFN 2 d f + f + d (torch's linear1 + linear2)",
                 n_params(layer.linear1) + n_params(layer.linear2), "2,099,712")
    ledger.check("two LayerNorms 4 d (torch's norm1 + norm2)", n_params(layer.norm1) + n_params(layer.norm2), "2,048")
    ledger.check("encoder layer 4 d^2 + 2 d f + f + 9 d", 4 * d * d + 2 * d * f + f + 9 * d, "3,152,384")
    ledger.check("torch TransformerEncoderLayer(512, 8, 2048) count", n_params(layer), "3,152,384")
    ledger.check("course shorthand, in millions", f"{n_params(layer) / 1e6:.2f}M", "3.15M")
    stack = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    ledger.check("six independently parameterised layers (torch)", n_params(stack), "18,914,304")
    ledger.check("FFN / attention (page: about twice)",
                 (n_params(layer.linear1) + n_params(layer.linear2)) / n_params(layer.self_attn), "2")
    ledger.check("one head's W_Q, d_model 512, d_k 64", 512 * 64, "32,768")
    B, h, T = 4, 2, 12
    probe = nn.MultiheadAttention(8, h, batch_first=True)
    tokens = torch.zeros(B, T, 8)
    _, per_head = probe(tokens, tokens, tokens, average_attn_weights=False)  # [B, h, T, T]
    ledger.check("score entries B h T^2 for B = 4, h = 2, T = 12 (torch's weights)", per_head.numel(), "1,152")
    long = torch.zeros(B, 2 * T, 8)
    _, doubled = probe(long, long, long, average_attn_weights=False)
    ledger.check("doubling T multiplies the score entries by", doubled.numel() / per_head.numel(), "4")

    ledger.section("Check yourself")
    ledger.skip("1. why one fixed context vector is a problem", "a conceptual answer, no number")
    ledger.check("2. context for scores [2, 0], states [1, 0] and [0, 1]",
                 softmax(np.array([2.0, 0.0])) @ np.eye(2), "[0.881, 0.119]")
    rng = np.random.default_rng(42)  # the draws of 02_dot_product_variance
    scaled_vars = []
    for width in (4, 16, 64, 256):
        q, k = rng.standard_normal((20000, width)), rng.standard_normal((20000, width))
        scaled_vars.append((q * k).sum(axis=1).var() / width)
    ledger.check("3. scaled variances for d_k = 4, 16, 64, 256", scaled_vars, "[1.011, 0.992, 0.997, 0.992]")
    ledger.check("4. concatenation width, 8 heads of width 64", 8 * 64, "512")
    ledger.check("4. shape of W^O", str(list(mha.out_proj.weight.shape)), "[512, 512]")
    ledger.check("5. one encoder layer, d = 512, f = 2048", n_params(layer), "3,152,384")
    return ledger.finish()


if __name__ == "__main__":
    sys.exit(main())
