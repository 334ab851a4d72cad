"""Check yourself, Week 1 (and the ELI5 page's block): the page's own kinds of question, with new
numbers; you count, the lesson checks with the lessons' own code.

Page: Week 1, "Check yourself", and every section's hand-checkable examples, small counts and
numeric exam answers; ELI5 Part 3, the shape after each stage of one block.

Each kind below is the page's question as a plain function of its numbers: the answer is
computed with the blocks the lessons use (common/blocks.py, torch's modules for counts, the
function of the lesson that teaches the thing); the worked steps follow the page's notation and
order; each known mistake is a formula of its own on the same numbers, named when a wrong
answer equals it: in the page's words if the page lists it, else as a slip, with the page's rule.

No flags: the page's questions with the page's numbers, each with its worked answer (and the
check that the page's formula, worked by hand, reaches the blocks' answer). --seed N: new
numbers, the same on any CPU. --quiz: asked on standard input, one at a time.
Setup: numbers from np.random.default_rng([seed, the kind's place]), small and hand-workable; a
known mistake that gives a right answer for the numbers drawn is not listed for them.
Notes: week1/NOTES.md, section 18.
"""
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import MultiHeadAttention, attention, join_heads, split_heads
from common.cli import SEED, Lesson, knob
from common.maths import softmax
from common.quiz import (
    QUIZ_HELP,
    ROUNDED,
    SEED_HELP,
    Count,
    Decimals,
    Kind,
    Mistake,
    Question,
    Shape,
    Slip,
    Vector,
    as_written,
    check_yourself,
    fewest,
    from_lesson,
    listed,
)

import numpy as np
import torch
import torch.nn as nn

# The worked examples' own functions (week1/06 recomputes every page answer with them), week1/05's additive
# attention, the ELI5 block of week1/07 stage by stage, and week2/13's count of a module's numbers by kind.
encoder_summary, encoder_memory = from_lesson("week1/06_worked_examples", "encoder_summary", "encoder_memory")
additive_attention = from_lesson("week1/05_additive_attention", "additive_attention")
build, stages = from_lesson("week1/07_eli5_one_block", "build", "stages")
walk, KINDS_OF_NUMBERS = from_lesson("week2/13_count_without_biases", "walk", "KINDS")

F64 = torch.float64  # every computed number in float64: the printed digits are the same on every CPU
WEIGHTS, BIASES, NORMS = KINDS_OF_NUMBERS
SECTIONS = {1: "1. The squeezed summary (seq2seq bottleneck)",
            2: "2. Looking back instead of remembering (Bahdanau attention)",
            3: "3. Self-attention and the three roles Q, K, V",
            4: "4. Why divide by sqrt(d_k) (scaled dot-product)",
            5: "5. Several readers at once (multi-head attention and W^O)",
            6: "6. The encoder layer: attention, then a per-word brain (FFN)",
            7: "7. Counting the learnable numbers (parameters)",
            "eli5": "ELI5 Part 3, One block: mix, then think"}
SCALING = "The fix: divide by sqrt(d_k), which brings the variance back to about 1."  # section 4's words


def places_for(values, most=3):
    """The fewest decimals (up to `most`) that write every value exactly: [0.5, 1] at 1, e^x / ... at `most`."""
    return next(k for k in range(most + 1) if k == most or all(abs(v * 10 ** k - round(v * 10 ** k)) < 1e-9
                                                                for v in values))


def tensor(values):
    return torch.tensor(values, dtype=F64)


def to_values(A, V):
    """sum_i alpha_i v_i for each row of weights A, done exactly on the numbers as written."""
    return [[sum(a * v[j] for a, v in zip(row, V, strict=True)) for j in range(len(V[0]))] for row in A]


# ---------------------------------------------------------------- 1. The squeezed summary

def draw_context_size(rng):
    return {"T": int(rng.integers(2, 41)), "n": int(rng.choice([4, 8, 16, 32]))}


def context_size(T, n):
    """c, the only thing an old seq2seq encoder hands its decoder: its last state, n numbers for any T."""
    torch.manual_seed(0)
    rnn = nn.RNN(input_size=4, hidden_size=n)  # a plain tanh RNN, n numbers of state (week1/06's encoder)
    other = 3 if T != 3 else 30  # the tiny check's other sentence
    with torch.no_grad():
        words = torch.randn(T, 4)  # [T, 4]: one vector per word
        c, memory = encoder_summary(rnn, words), encoder_memory(rnn, words)  # [n], [T, n]
        c_other = encoder_summary(rnn, torch.randn(other, 4))
    return Question(
        f"An old seq2seq encoder, a plain RNN with a state of n = {n} numbers, reads a {T}-word sentence. What is "
        "the shape of the context c it hands the decoder?",
        (f"c is the encoder's last state: one fixed-width vector of n = {n} numbers, whatever the length",
         f"a {other}-word sentence gives {listed(list(c_other.shape))} too: the same size"),
        list(c.shape), Shape(1),
        (Slip("keeping every encoder state (what attention looks back at)", list(memory.shape),
              "The only thing passed between them was one fixed-width vector, the context c."),),
        [n])


# ---------------------------------------------------------------- 2. Bahdanau attention

def draw_context(rng):
    while True:
        T = int(rng.integers(2, 4))
        H, e = rng.integers(-1, 3, (T, 2)), rng.integers(-1, 4, T)
        if len({tuple(h) for h in H.tolist()}) == T and H.any(axis=1).all() and len(set(e.tolist())) > 1:
            return {"e": e.tolist(), "H": H.tolist()}


def bahdanau_context(e, H):
    """alpha_ti = e^(e_ti) / sum_j e^(e_tj),  c_t = sum_i alpha_ti h_i."""
    # attention's softmax and A V, with the scores e_i as q . k_i for q = [1], k_i = [e_i] and d_k = 1 (no scaling)
    c, _ = attention(tensor([[1]]), tensor(e)[:, None], tensor(H))  # [1, 2]: A = softmax(e) [1, T], then A H
    reader = Vector(2, 3)
    powers = [math.exp(x) for x in e]
    alpha = [p / sum(powers) for p in powers]  # by hand

    def context(k):  # c_t from the weights written at k decimals
        return to_values([[as_written(a, k) for a in alpha]], H)[0]

    k = fewest(ROUNDED, context, c[0], 3)
    states = ", ".join(f"h_{i} = {listed(h)}" for i, h in enumerate(H, start=1))
    exps = [f"e^{x}" for x in e]
    return Question(
        f"{['Two', 'Three'][len(H) - 2]} source words with encoder states {states}, and scores e = {listed(e)}. "
        "What is the context c_t? (3 decimals)",
        (f"alpha_i = e^(e_i) / sum_j e^(e_j) = [{', '.join(exps)}] / ({' + '.join(exps)}) = {listed(alpha, k)}",
         f"c_t = sum_i alpha_i h_i = {' + '.join(f'{a:.{k}f} {listed(h)}' for a, h in zip(alpha, H, strict=True))} "
         f"= {reader.show(context(k))}"),
        c[0].tolist(), reader,
        (Slip("using the scores as weights (no softmax)", (tensor(e) @ tensor(H)).tolist(),
              "alpha_ti are the weights from softmax: positive, summing to 1, like percentages of attention."),),
        context(k), context(ROUNDED))


def draw_additive(rng):
    while True:
        W_a, U_a = rng.integers(-1, 2, (2, 2)), rng.integers(-1, 2, (2, 2))
        s, h, v_a = rng.integers(-1, 2, 2), np.eye(2, dtype=int)[rng.integers(2)], rng.integers(-1, 3, 2)
        if (W_a @ s + U_a @ h).any() and v_a.all():
            return {"v_a": v_a.tolist(), "W_a": W_a.tolist(), "s": s.tolist(), "U_a": U_a.tolist(), "h": h.tolist()}


def additive_score(v_a, h, W_a=None, s=None, U_a=None, summed=None):
    """e = v_a . tanh(W_a s_(t-1) + U_a h_1). The page gives only the sum inside the tanh (`summed`)."""
    parts = []
    if summed is None:
        Ws, Uh = np.array(W_a) @ np.array(s), np.array(U_a) @ np.array(h)  # [2], [2]
        summed = (Ws + Uh).tolist()
        parts = [f"W_a s_(t-1) = {listed(W_a)} {listed(s)} = {listed(Ws.tolist())}; "
                 f"U_a h_1 = {listed(U_a)} {listed(h)} = {listed(Uh.tolist())}"]
        # week1/05 writes vectors as rows (s W_a): W_a s is s W_a^T
        e, _, _ = additive_attention(np.array(s), np.array([h]), np.array(W_a).T, np.array(U_a).T, np.array(v_a))
    else:  # the sum goes in as s_(t-1) W_a with W_a = I, U_a = 0
        e, _, _ = additive_attention(np.array(summed), np.array([h]), np.eye(2), np.zeros((2, 2)), np.array(v_a))
    reader = Decimals(2)
    squashed = [math.tanh(x) for x in summed]  # by hand

    def score(k):  # e from the tanh values written at k decimals
        return sum(v * as_written(t, k) for v, t in zip(v_a, squashed, strict=True))

    k = fewest(ROUNDED, score, e[0], 2)
    given = (f"W_a = {listed(W_a)}, s_(t-1) = {listed(s)}, U_a = {listed(U_a)}, h_1 = {listed(h)}" if parts else
             f"h_1 = {listed(h)} and W_a s_(t-1) + U_a h_1 = {listed(summed)}")
    return Question(
        f"Additive attention: e = v_a^T tanh(W_a s_(t-1) + U_a h_1) with {given}, and v_a = {listed(v_a)}"
        f"{' (the matrices row by row)' if parts else ''}. What is the score e? (2 decimals)",
        (*parts, f"the sum inside the tanh: {listed(summed)}; tanh of it: {listed(squashed, k)}",
         f"e = {' + '.join(f'{v}({t:.{k}f})' for v, t in zip(v_a, squashed, strict=True))} = {reader.show(score(k))}"),
        float(e[0]), reader,
        (Slip("leaving out the tanh", float(np.dot(v_a, summed)), "e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i)"),),
        score(k), score(ROUNDED))


# ---------------------------------------------------------------- 3. Self-attention

def draw_two_tokens(rng):
    while True:
        X = rng.integers(-1, 3, (2, 2))
        if X.any(axis=1).all() and (X[0] != X[1]).any():
            return {"X": X.tolist()}


def by_hand_attention(q_rows, k_rows, v_rows, divide=math.sqrt, over_keys=True, k=None):
    """softmax(Q K^T / sqrt(d_k)) V in plain loops: the scores S, the weights A and Z; with k, S and A are
    written at k decimals, each step worked from the last one as written, Z exactly. The slips: another
    `divide` than sqrt(d_k), or the softmax over the queries."""
    d_k = len(q_rows[0])
    S = [[sum(a * b for a, b in zip(q, key, strict=True)) / divide(d_k) for key in k_rows] for q in q_rows]
    if k is not None:
        S = [[float(as_written(x, k)) for x in row] for row in S]
    if over_keys:
        A = [[math.exp(x) / sum(math.exp(y) for y in row) for x in row] for row in S]
    else:  # each column normalized: a softmax over the queries
        A = [[math.exp(S[i][j]) / sum(math.exp(S[m][j]) for m in range(len(S))) for j in range(len(S[0]))]
             for i in range(len(S))]
    if k is not None:
        A = [[as_written(a, k) for a in row] for row in A]
    return S, A, to_values(A, v_rows)


def not_scaled(d_k):
    """The slip's divisor: 1 (no sqrt(d_k))."""
    return 1


def by_d_k(d_k):
    """The slip's divisor: d_k itself."""
    return d_k


def identity_self_attention(X):
    """Q = K = V = X (W^Q = W^K = W^V = I); Z = softmax(Q K^T / sqrt(d_k)) V."""
    Xt = tensor(X)  # [2, 2]: one token per row
    Z, _ = attention(Xt, Xt, Xt)  # [2, 2]
    reader = Vector(2, 3, rows=2)
    k = fewest(ROUNDED, lambda k: by_hand_attention(X, X, X, k=k)[2], Z, 3)
    S, A, reached = by_hand_attention(X, X, X, k=k)
    raw = [[sum(a * b for a, b in zip(x, y, strict=True)) for y in X] for x in X]

    def z(k=None, **slip):  # Z by hand (with a slip), exact or with the numbers along the way at k decimals
        return by_hand_attention(X, X, X, k=k, **slip)[2]
    rows = " and ".join(f"z_{i} = {' + '.join(f'{float(a):.{k}f} {listed(x)}' for a, x in zip(row, X, strict=True))} "
                        f"= {listed(z, 3, whole=False)}" for i, (row, z) in enumerate(zip(A, reached, strict=True),
                                                                                   start=1))
    return Question(
        f"Two tokens X = {listed(X)} (one per row), W^Q = W^K = W^V = I, so d_k = 2. What are "
        "their new vectors Z = softmax(Q K^T / sqrt(d_k)) V, row by row? (3 decimals)",
        ("Q = K = V = X", f"Q K^T = {listed(raw)}",
         f"divided by sqrt(d_k) = sqrt(2): {listed(S, k)}",
         f"softmax over the keys, row by row: A = {listed(A, k)}", rows),
        Z.tolist(), reader,
        (Slip("not dividing by sqrt(d_k)", z(divide=not_scaled), SCALING, z(ROUNDED, divide=not_scaled)),
         Slip("dividing by d_k instead of sqrt(d_k)", z(divide=by_d_k), SCALING, z(ROUNDED, divide=by_d_k)),
         Mistake("taking the softmax over the queries", z(over_keys=False),
                 "Softmax runs over the keys for each query, not over queries.", z(ROUNDED, over_keys=False))),
        reached, z(ROUNDED))


def draw_query(rng):
    n = int(rng.integers(2, 4))
    return {"q": rng.integers(-1, 3, 2).tolist(), "K": rng.integers(-1, 2, (n, 2)).tolist(),
            "V": rng.integers(0, 4, (n, 2)).tolist()}


def weighted_values(q, K, V):
    """One query: z = sum_j alpha_j v_j, alpha = softmax_j(q . k_j / sqrt(d_k)): a sum of values, not keys."""
    out, _ = attention(tensor([q]), tensor(K), tensor(V))  # [1, d_v]
    _, (A,), _ = by_hand_attention([q], K, V)

    def z(values, k=None, **slip):  # sum_j alpha_j values_j by hand (with a slip), exact or worked at k decimals
        return by_hand_attention([q], K, values, k=k, **slip)[2][0]

    places = places_for([*A, *out[0].tolist()])  # the question's decimals: the fewest that write the weights and z
    reader = Vector(len(V[0]), places, whole=places < 3)  # exact: a whole number bare, as the page's z = [0.5, 1]
    k = fewest(places, lambda k: z(V, k), out[0], places)
    (S,), (A_k,), (reached,) = by_hand_attention([q], K, V, k=k)
    d_k, n = len(q), len(K)
    keys = ", ".join(f"k_{j} = {listed(key)}" for j, key in enumerate(K, start=1))
    values = ", ".join(f"v_{j} = {listed(v)}" for j, v in enumerate(V, start=1))
    return Question(
        f"One query q = {listed(q)} against the keys {keys}, with the values {values} (d_k = {d_k}). What is its "
        f"output z? ({places} decimal{'s' * (places != 1)})",
        (f"scores q . k_j / sqrt(d_k) = {listed(S, k)}",
         f"weights: softmax over the {n} keys = {listed(A_k, k)}",
         f"z = {' + '.join(f'{float(a):.{k}f} {listed(v)}' for a, v in zip(A_k, V, strict=True))} "
         f"= {reader.show(reached)}"),
        out[0].tolist(), reader,
        (Mistake("summing the keys instead of the values", z(K), "The weighted sum is over values, not keys.",
                 z(K, ROUNDED)),
         Mistake("taking the softmax over the queries", z(V, over_keys=False),
                 "Softmax runs over the keys for each query, not over queries.", z(V, ROUNDED, over_keys=False)),
         Slip("not dividing by sqrt(d_k)", z(V, divide=not_scaled), SCALING, z(V, ROUNDED, divide=not_scaled))),
        reached, z(V, ROUNDED) if places == 3 else None)


# ---------------------------------------------------------------- 4. Why divide by sqrt(d_k)

def draw_scaled(rng):
    d_k = int(rng.choice([4, 9, 16, 25, 64, 100, 256]))
    while True:
        units = rng.integers(0, 4, int(rng.integers(2, 4)))
        if len(set(units.tolist())) > 1:
            return {"d_k": d_k, "raw": (units * math.isqrt(d_k)).tolist()}


def scaled_softmax(d_k, raw):
    """softmax(q . k / sqrt(d_k)) beside the unscaled softmax(q . k)."""
    q, K = torch.zeros(1, d_k, dtype=F64), torch.zeros(len(raw), d_k, dtype=F64)  # width d_k
    q[0, 0], K[:, 0] = 1, tensor(raw)  # q . k_j = raw_j
    _, A = attention(q, K, K)  # [1, n]: attention's weights, softmax(q . k_j / sqrt(d_k))
    unscaled = softmax(np.array(raw, dtype=float))
    scaled = [x / math.sqrt(d_k) for x in raw]
    powers = [math.exp(x) for x in scaled]
    reached = [p / sum(powers) for p in powers]
    reader = Vector(len(raw), 3)
    return Question(
        f"d_k = {d_k} and the raw scores q . k are {listed(raw)}. What are the attention weights of scaled "
        "dot-product attention? (3 decimals)",
        (f"without scaling, softmax({listed(raw)}) = {listed(unscaled, 4)}"
         + (": practically one-hot" if unscaled.max() > 0.99 else ""),
         f"scaled: {listed(raw)} / sqrt({d_k}) = {listed(scaled, 3)}",
         f"softmax({listed(scaled, 3)}) = {reader.show(reached)}"),
        A[0].tolist(), reader,
        (Slip("not dividing by sqrt(d_k)", unscaled.tolist(), SCALING),
         Slip("dividing by d_k instead of sqrt(d_k)", softmax(np.array(raw, dtype=float) / d_k).tolist(), SCALING)),
        reached)


def draw_weighted_sum(rng):
    n = int(rng.integers(3, 5))
    cuts = np.sort(rng.choice(np.arange(1, 10), n - 1, replace=False))
    return {"alpha": (np.diff([0, *cuts, 10]) / 10).tolist(), "V": rng.integers(0, 4, (n, 2)).tolist()}


def first_element(alpha, V):
    """Q146's form: z = sum_i alpha_i v_i; its first element."""
    # attention's last step A V with A = alpha: keys ln(alpha_i) against q = [1], d_k = 1 (softmax(ln alpha) = alpha)
    z, _ = attention(tensor([[1]]), tensor(alpha).log()[:, None], tensor(V))  # [1, 2]
    reached = to_values([[Fraction(str(a)) for a in alpha]], V)[0]
    values = ", ".join(f"v_{i} = {listed(v)}" for i, v in enumerate(V, start=1))
    return Question(
        f"Weights alpha = {listed(alpha, 1)} over {len(V)} values {values}. What is the first element of "
        "z = sum_i alpha_i v_i? (2 decimals)",
        (f"z = {' + '.join(f'{a:g}{listed(v)}' for a, v in zip(alpha, V, strict=True))} "
         f"= {listed([float(x) for x in reached], 1, whole=False)}",
         f"its first element: {float(reached[0]):.2f}"),
        float(z[0, 0]), Decimals(2), (), float(reached[0]))


# ---------------------------------------------------------------- 5. Multi-head attention and W^O

GLUE = ("Then glue the heads' outputs side by side (concatenate) and mix them with one more learned matrix, "
        "W^O")  # section 5's words


def draw_heads(rng):
    return {"h": int(rng.choice([2, 4, 6, 8, 12, 16])), "d_k": int(rng.choice([16, 32, 64, 128]))}


def concatenation_width(h, d_k):
    """Concat(H_1, ..., H_h): h heads of [T, d_v] side by side, [T, h d_v]."""
    glued = join_heads(torch.zeros(1, h, 1, d_k))  # [B, h, T, d_k] -> [B, T, h d_k]
    return Question(
        f"Multi-head attention with h = {h} heads of width d_k = d_v = {d_k}. How wide is Concat(H_1, ..., H_h), "
        "for each token?",
        (f"each head gives [T, d_v] = [T, {d_k}]",
         f"side by side, Concat(H_1, ..., H_{h}) is [T, h d_v] = [T, {h}·{d_k}] = [T, {h * d_k}]"),
        glued.shape[-1], Count(),
        (Slip("taking one head's width", d_k, GLUE),),
        h * d_k)


def output_projection(h, d_k):
    """MHA(X) = Concat(H_1, ..., H_h) W^O: the concatenation is [T, h d_v]; W^O is [h d_v, d_model]."""
    d_model = h * d_k
    with torch.device("meta"):  # shapes only
        W_O = MultiHeadAttention(d_model, h).W_O.weight.T  # torch keeps [out, in]; rows are inputs here
    return Question(
        f"Multi-head attention with h = {h} heads of width d_k = d_v = {d_k} (d_model = h d_k = {d_model}). Rows "
        "are tokens, so MHA(X) = Concat(H_1, ..., H_h) W^O. What is the shape of W^O?",
        (f"Concat(H_1, ..., H_{h}) is [T, h d_v] = [T, {h * d_k}]",
         f"W^O takes it back to d_model = {d_model}: [h d_v, d_model] = [{h * d_k}, {d_model}]"),
        list(W_O.shape), Shape(2),
        (Slip("taking one head's width", [d_k, d_model], GLUE),),
        [h * d_k, d_model])


def draw_mix(rng):
    while True:
        heads, W_O = rng.integers(0, 5, (2, 2)), rng.integers(0, 2, (4, 2))
        if W_O.any(axis=0).all():
            return {"heads": heads.tolist(), "W_O": W_O.tolist()}


def mixed_heads(heads, W_O):
    """Two heads' outputs for one token, concatenated, times W^O ([4, 2]: given by its columns)."""
    joined = join_heads(tensor(heads)[None, :, None, :])[0, 0]  # [B, h, T, d_k] = [1, 2, 1, 2] -> [4]
    concat = [x for head in heads for x in head]
    columns = [[row[j] for row in W_O] for j in range(2)]
    reached = [sum(x * w for x, w in zip(concat, column, strict=True)) for column in columns]
    terms = ", ".join(" + ".join(f"{x}·{w}" for x, w in zip(concat, column, strict=True)) for column in columns)
    return Question(
        f"Two heads give one token the outputs {listed(heads[0])} and {listed(heads[1])}. W^O has the columns "
        f"{listed(columns[0])}^T and {listed(columns[1])}^T. What is Concat(H_1, H_2) W^O?",
        (f"concatenate: {listed(concat)}", f"times W^O, one column at a time: [{terms}] = {listed(reached)}",
         "W^O takes [1, 4] back to [1, 2]"),
        (joined @ tensor(W_O)).tolist(), Vector(2, 0),
        (Slip("adding the heads instead of gluing them side by side", (tensor(heads[0]) + tensor(heads[1])).tolist(),
              GLUE),),
        reached)


def draw_model_width(rng):
    d = int(rng.choice([64, 128, 256, 384, 512, 768, 1024]))
    return {"d_model": d, "h": int(rng.choice([h for h in (2, 4, 8, 12, 16) if d % h == 0]))}


MORE_HEADS = ("More heads do not automatically mean more weights. With head width d/h, each projection still "
              "totals h·d·(d/h)=d^2.")  # section 5's mistakes


def output_weights(d_model, h):
    """Q191's form: the weights in W^O, d_model^2 whatever h."""
    return Question(
        f"Multi-head attention with d_model = {d_model} and h = {h} heads. How many weights does W^O hold (weights "
        "only, no bias)?",
        (f"W^O is [h d_k, d_model] = [{d_model}, {d_model}] (d_k = d_model/h = {d_model // h})",
         f"{d_model}^2 = {d_model ** 2:,}: h does not enter, as h d_k = d_model"),
        nn.MultiheadAttention(d_model, h, device="meta").out_proj.weight.numel(), Count(),
        (Slip("counting its bias too", d_model ** 2 + d_model, "(Count what the question includes: W^O, biases.)"),
         Mistake("counting a matrix per head", h * d_model ** 2, MORE_HEADS)),
        d_model ** 2)


# ---------------------------------------------------------------- 6. The encoder layer

KEEPS = "The residual additions need matching widths, so the layer keeps shape [B, T, d_model]."  # section 6


def draw_stack(rng):
    d = int(rng.choice([16, 32, 64, 128, 256]))
    return {"T": int(rng.integers(2, 61)), "d": d, "f": 4 * d, "N": int(rng.integers(2, 9))}


def stack_output_shape(T, d, f, N):
    """Q4's form: N encoder layers keep [T, d_model]."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, 8, f, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, N, enable_nested_tensor=False)  # N layers, each its own weights
    with torch.no_grad():
        Y = encoder(torch.randn(1, T, d))  # [B, T, d]: one sentence
    return Question(
        f"A sentence of T = {T} tokens with d_model = {d} goes through {N} encoder layers (FFN width d_ff = {f:,}). "
        f"What is the output shape of layer {N}, for this one sentence?",
        ("each layer keeps [T, d_model]: the residual additions need matching widths",
         f"the FFN widens each token to d_ff = {f:,} and folds it back to {d}",
         f"after layer {N} of {N}: [T, d_model] = [{T}, {d}]"),
        list(Y.shape[1:]), Shape(2),
        (Slip("keeping the FFN's inner width", [T, f], KEEPS),
         Slip("stacking the layers' outputs", [N * T, d], "Stack six layers (each with its own weights) and the "
              "shape is still [B, T, 512]: one vector per token.")),
        [T, d])


def draw_volume(rng):
    return {"B": int(rng.integers(2, 9)), "T": int(rng.integers(5, 51)), "d": int(rng.choice([16, 32, 64, 128]))}


def output_volume(B, T, d):
    """End Term Q4's form: the numbers in the output volume [B, T, d_model]."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
    with torch.no_grad():
        Y = layer(torch.randn(B, T, d))  # [B, T, d]
    return Question(
        f"{B} sentences padded to {T} tokens go through an encoder layer with d_model = {d}. How many numbers are in "
        "the output volume?",
        (f"the output is [B, T, d_model] = [{B}, {T}, {d}]: one vector of {d} numbers per token",
         f"{B}·{T}·{d} = {B * T * d}"),
        Y.numel(), Count(grouped=False),
        (Slip("counting one number per token", B * T, KEEPS),),
        B * T * d)


# ---------------------------------------------------------------- 7. Counting parameters

CONVENTIONS = {  # what a count includes, as the question states it (section 7: "Count only what the question asks for")
    "everything, as PyTorch counts (weights, biases, LayerNorm's gamma and beta)": (WEIGHTS, BIASES, NORMS),
    "weights only (no biases, no LayerNorm numbers)": (WEIGHTS,),
    "weights and biases (LayerNorm's numbers left out)": (WEIGHTS, BIASES),
    "weights and LayerNorm's gamma and beta (no biases)": (WEIGHTS, NORMS)}
EVERYTHING = next(iter(CONVENTIONS))
ASKS_FOR = "A parameter is a number the model learns. Count only what the question asks for."  # section 7
EXCLUSIONS = ("(Week 2, section 4) Using a library total when the question says to exclude biases or embeddings. "
              "Follow the question's exclusions.")  # Week 2, section 4's mistakes
NAMES = {BIASES: "the biases", NORMS: "LayerNorm's numbers"}


def counted(model, kinds, leave_out=()):
    """The model's learnable numbers of these kinds (a convention's name, or the kinds themselves),
    week2/13's walk sorting them, but those in `leave_out`."""
    by_kind = walk(model)
    return sum(by_kind[kind] for kind in CONVENTIONS.get(kinds, kinds) if kind not in leave_out)


def count_slips(model, convention, counts_it, leaves_it_out):
    """The slips of a count under its convention, each computed on the model: leaving out a kind of number
    the question counts (against the page's rule for it, `counts_it[kind]`), or counting one it leaves out
    (the page's mistake `leaves_it_out`; the library's total, when that is every kind it leaves out)."""
    kinds = CONVENTIONS[convention]
    out = [kind for kind in (BIASES, NORMS) if kind not in kinds]
    extra = [(kind,) for kind in out] * (len(out) > 1) + [tuple(out)] * (len(out) > 0)  # the kinds counted in error
    return ([Slip(f"leaving out {NAMES[kind]}", counted(model, kinds, leave_out=(kind,)), counts_it[kind])
             for kind in (BIASES, NORMS) if kind in kinds]
            + [Mistake("using the library's total" if len(more) == len(out) else
                       f"counting {NAMES[more[0]]} the question leaves out", counted(model, (*kinds, *more)),
                       leaves_it_out) for more in extra])


def encoder_stack(d, f, layers):
    """torch's encoder layer (or `layers` of them, each with its own weights), shapes only; the count
    does not depend on the number of heads."""
    layer = nn.TransformerEncoderLayer(d, 1, f, device="meta")
    return layer if layers == 1 else nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def draw_count(rng):
    d = int(rng.choice([4, 8, 16, 32, 64, 128, 256, 512, 768]))
    return {"d": d, "f": d * int(rng.choice([2, 4])), "layers": int(rng.choice([1, 1, 1, 2, 6])),
            "convention": list(CONVENTIONS)[rng.integers(len(CONVENTIONS))]}


def encoder_parameters(d, f, layers, convention):
    """MHA 4d^2 + 4d, FFN 2df + f + d, two LayerNorms 4d: each part as the question's convention counts it."""
    kinds = CONVENTIONS[convention]
    b, n = BIASES in kinds, NORMS in kinds
    mha, ffn, norms = 4 * d * d + 4 * d * b, 2 * d * f + (f + d) * b, 4 * d * n
    layer = mha + ffn + norms
    reached = layers * layer
    steps = [f"MHA: 4·{d}^2 + 4·{d} = {4 * d * d:,} + {4 * d:,} = {mha:,}" if b else f"MHA: 4·{d}^2 = {mha:,}",
             f"FFN: 2·{d}·{f} + {f} + {d} = {2 * d * f:,} + {f + d:,} = {ffn:,}" if b else
             f"FFN: 2·{d}·{f} = {ffn:,}",
             f"two LayerNorms: 4·{d} = {norms:,}" if n else "two LayerNorms: not counted",
             f"total: {mha:,} + {ffn:,}{f' + {norms:,}' if n else ''} = {layer:,}"
             + (f" (about {layer / 1e6:.2f}M)" if layer >= 1e6 else "")]
    if layers > 1:
        steps.append(f"{layers} independently parameterised layers: {layers} x {layer:,} = {reached:,}")
    model = encoder_stack(d, f, layers)
    out_proj = sum(counted(module.self_attn.out_proj, convention) for module in model.modules()
                   if isinstance(module, nn.TransformerEncoderLayer))  # W^O (and its bias) in every layer
    mistakes = [*count_slips(model, convention, dict.fromkeys((BIASES, NORMS), ASKS_FOR), EXCLUSIONS),
                Slip("leaving out W^O", counted(model, convention) - out_proj, "(Count what the question includes: "
                     "W^O, biases.)")]
    if layers > 1:
        mistakes.append(Mistake("counting one layer for all of them", counted(encoder_stack(d, f, 1), convention),
                                "\"Identical layers share weights.\" They share the architecture; each layer has "
                                "separately learned parameters."))
    return Question(
        f"{'One encoder layer' if layers == 1 else f'{layers} encoder layers'} with d = {d:,} and f = {f:,} (MHA with "
        f"W^O, an FFN, two LayerNorms; embeddings and positions not counted). How many parameters, counting "
        f"{convention}?",
        tuple(steps), counted(model, convention), Count(), tuple(mistakes), reached)


def head_query_weights(d_model, h):
    """One head's share of W^Q: [d_model, d_k], d_k = d_model / h."""
    d_k = d_model // h
    W_Q = nn.MultiheadAttention(d_model, h, device="meta").in_proj_weight[:d_model].T  # [d, d]: Q = x W_Q
    return Question(
        f"One head's W^Q with d_model = {d_model} and d_k = {d_k} (h = {h} heads): how many weights (no bias)?",
        (f"one head's W^Q is [d_model, d_k] = [{d_model}, {d_k}]: {d_model}·{d_k} = {d_model * d_k:,}",
         f"(all {h} heads together: h·d·(d/h) = d^2 = {d_model ** 2:,})"),
        split_heads(W_Q[None], h)[0, 0].numel(), Count(),  # head 1's columns of W^Q, split as the queries are
        (Slip("counting all heads' W^Q", W_Q.numel(), "With head width d/h, each projection still totals "
              "h·d·(d/h)=d^2."),),
        d_model * d_k)


def draw_scores(rng):
    return {"B": int(rng.integers(1, 9)), "h": int(rng.choice([1, 2, 4, 8])), "T": int(rng.integers(2, 33))}


def score_entries(B, h, T):
    """A dense layer's score entries: B h T^2, a score per query and key, per head and sentence."""
    torch.manual_seed(0)
    with torch.no_grad():
        _, A = MultiHeadAttention(4 * h, h)(torch.randn(B, T, 4 * h))  # A [B, h, T, T]: per head, d_k = 4
    return Question(
        f"Self-attention over a batch of B = {B} sentence{'s' * (B != 1)} of T = {T} tokens, with h = {h} "
        f"head{'s' * (h != 1)}. How many score entries does one layer compute?",
        ("one score per query and key, per head and sentence: B·h·T^2",
         f"{B}·{h}·{T}^2 = {B}·{h}·{T * T} = {B * h * T * T:,}",
         f"(doubling T to {2 * T} gives {4 * B * h * T * T:,}: four times as many)"),
        A.numel(), Count(),
        (Mistake("counting T entries per head (linear in length)", A[..., 0].numel(), "Attention is not linear in "
                 "length: there are T queries each looking at T keys."),
         Slip("counting one T^2 table for all heads and sentences", A[0, 0].numel(), "Score entries for a dense "
              "layer: B·h·T^2.")),
        B * h * T * T)


# ---------------------------------------------------------------- ELI5: one block, stage by stage

STAGES = ["input x", "LN1(x)", "attention(LN1(x))", "x + attention", "LN2(x + attention)", "FFN widened",
          "FFN folded back", "x + FFN = block output"]  # week1/07's stages(), in order


def draw_stage(rng):
    d = int(rng.choice([2, 4, 6, 8]))
    return {"T": int(rng.integers(2, 7)), "d": d, "f": d * int(rng.choice([2, 4])),
            "stage": STAGES[rng.integers(1, len(STAGES))]}


def quoted(name):
    return f'"{name}"'


def block_stage_shape(T, d, f, stage):
    """The grid's shape after one stage of the ELI5 block (week1/07's, stage by stage)."""
    _, block, _ = build(d, 1, f, seed=0)  # the pre-norm block, one causal head, FFN width f
    with torch.no_grad():
        grids = stages(block, torch.randn(1, T, d, dtype=F64))  # {stage: [1, T, width]}; the weights [1, 1, T, T]
    shape_of, wide = {"T, d": [T, d], "T, f": [T, f]}, "T, d"
    by_hand = {  # each stage's shape by the page's rules: (its shape in letters, why)
        "input x": (wide, f"a row of d numbers per word (a [{T} x {d}] grid, as the page writes one)"),
        "LN1(x)": (wide, "LayerNorm steadies each row"),
        "attention(LN1(x))": (wide, "each word a weighted blend of the values"),
        "x + attention": (wide, "the shortcut adds two grids of one shape"),
        "LN2(x + attention)": (wide, "LayerNorm steadies each row"),
        "FFN widened": ("T, f", f"each row times W_1 [d, f] = [{d}, {f}]"),
        "FFN folded back": (wide, f"times W_2 [f, d] = [{f}, {d}]"),
        "x + FFN = block output": (wide, "the shortcut adds two grids of one shape: the shape it got")}
    up_to = STAGES[:STAGES.index(stage) + 1]
    mistakes = [Slip("mixing up where the FFN is f wide", [T, d] if stage == "FFN widened" else [T, f],
                     "the FFN widens and folds it back")]
    if stage == "attention(LN1(x))":
        mistakes.append(Slip("taking the attention weights' table", list(block.attention.attn.shape[-2:]),
                             "out: (seq, d_model) -- each token = weighted blend of values"))
    return Question(
        f"A block (the pre-norm TransformerBlock of the ELI5 page \"One block: mix, then think\", one causal head) "
        f"gets a grid of T = {T} words and "
        f"width d = {d}; its FFN widens to {f}. Its stages, in order: {', '.join(map(quoted, STAGES))}. What is the "
        f"grid's shape after {quoted(stage)}?",
        tuple(f"{name}: [{letters}] = {Shape(2).show(shape_of[letters])}, {why}"
              for name, (letters, why) in ((name, by_hand[name]) for name in up_to)),
        list(grids[stage].shape[-2:]), Shape(2), tuple(mistakes), shape_of[by_hand[stage][0]])


KINDS = [
    Kind(1, "the size of the context c", context_size, draw_context_size,
         (("Section 1's tiny check: a 30-word sentence", {"T": 30, "n": 8}),)),
    Kind(2, "Bahdanau weights and context", bahdanau_context, draw_context,
         (("Section 2's hand-checkable example and Check yourself 2", {"e": [2, 0], "H": [[1, 0], [0, 1]]}),)),
    Kind(2, "one additive score", additive_score, draw_additive,
         (("Section 2, 2026 T1 Quiz 1, Q13: one additive score", {"v_a": [1, 1], "h": [1, 0], "summed": [2, 2]}),)),
    Kind(3, "self-attention with identity projections", identity_self_attention, draw_two_tokens,
         (("Section 3's hand-checkable example", {"X": [[1, 0], [0, 1]]}),)),
    Kind(3, "a sum over values, not keys", weighted_values, draw_query,
         (("Section 3's notes example", {"q": [1], "K": [[0], [0]], "V": [[1, 0], [0, 2]]}),)),
    Kind(4, "a softmax of scaled scores", scaled_softmax, draw_scaled,
         (("Section 4's hand-checkable example", {"d_k": 64, "raw": [8, 0]}),)),
    Kind(4, "a weighted sum of values", first_element, draw_weighted_sum,
         (("Section 4, 2025 T2 Quiz 1, Q146: a weighted sum of values",
           {"alpha": [0.1, 0.2, 0.5, 0.2], "V": [[1, 0], [0, 1], [1, 1], [2, 1]]}),)),
    Kind(5, "the concatenation's width", concatenation_width, draw_heads,
         (("Section 5, Check yourself 4 and 2026 T1 Quiz 2, Q2: the concatenation of eight heads of width 64",
           {"h": 8, "d_k": 64}),)),
    Kind(5, "the shape of W^O", output_projection, draw_heads,
         (("Section 5 and Check yourself 4: the shape of W^O for eight heads of width 64", {"h": 8, "d_k": 64}),)),
    Kind(5, "two heads through W^O", mixed_heads, draw_mix,
         (("Section 5's W^O example", {"heads": [[1, 2], [3, 4]], "W_O": [[1, 0], [0, 1], [1, 0], [0, 1]]}),)),
    Kind(5, "the weights in W^O", output_weights, draw_model_width,
         (("Section 5, 2025 T3 Quiz 1, Q191: the weights in W^O", {"d_model": 768, "h": 12}),)),
    Kind(6, "an encoder stack's output shape", stack_output_shape, draw_stack,
         (("Section 6's hand-checkable example and 2026 T1 Quiz 1, Q4", {"T": 50, "d": 512, "f": 2048, "N": 6}),)),
    Kind(6, "an output volume", output_volume, draw_volume,
         (("Section 6, 2026 T1 End Term FN, Q4: the output volume", {"B": 5, "T": 20, "d": 64}),)),
    Kind(7, "encoder layers' parameters", encoder_parameters, draw_count,
         (("Section 7's worked example and Check yourself 5",
           {"d": 512, "f": 2048, "layers": 1, "convention": EVERYTHING}),
          ("Section 7: six layers", {"d": 512, "f": 2048, "layers": 6, "convention": EVERYTHING}))),
    Kind(7, "one head's W^Q", head_query_weights, draw_model_width,
         (("Section 7's small counts: one head's W^Q", {"d_model": 512, "h": 8}),)),
    Kind(7, "a layer's score entries", score_entries, draw_scores,
         (("Section 7's small counts: score entries", {"B": 4, "h": 2, "T": 12}),)),
    Kind("eli5", "the shape after a stage of one block", block_stage_shape, draw_stage,
         (("ELI5 Part 3: the shape never changes", {"T": 3, "d": 4, "f": 16, "stage": "x + FFN = block output"}),)),
]


def lesson(args):
    """The page's questions (no flags), new numbers (--seed), or the quiz (--quiz)."""
    check_yourself(args, __file__, "Check yourself, Week 1 and the ELI5 block", SECTIONS, KINDS)


# ---------------------------------------------------------------- optional: knobs and Try it

TOPICS = [str(s) for s in SECTIONS]
KNOBS = [knob("--seed", type=SEED, default=None, help=SEED_HELP),
         knob("--quiz", action="store_true", help=QUIZ_HELP),
         knob("--topic", choices=TOPICS, action="append", help="only this page section's questions (give it "
              "again for more): "
              "1 the squeezed summary, 2 Bahdanau attention, 3 self-attention, 4 dividing by sqrt(d_k), "
              "5 multi-head attention and W^O, 6 the encoder layer, 7 counting parameters, eli5 the "
              "ELI5 page's block")]
TRY_IT = [("--seed 7", "new numbers for every question, each with its worked answer"),
          ("--quiz", "you answer, one question at a time; a blank line skips, q stops"),
          ("--quiz --topic 7 --topic eli5", "only the counting of section 7 and the ELI5 block's shapes")]

DESCRIPTION = ("The page's kinds of question with new numbers: you count, the lessons' own code checks, and a wrong "
               "answer gets its worked steps (Week 1, Check yourself; ELI5 Part 3's block).")
LESSON = Lesson(__file__, page=("week1", "check yourself"), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
