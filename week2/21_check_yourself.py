"""Check yourself, Week 2: the page's own kinds of question, with new numbers; you count, the
lesson checks with the lessons' own code.

Page: Week 2, "Check yourself", and every section's hand-checks, tables and counts.

Each kind below is the page's question as a plain function of its numbers: the answer is
computed with the blocks the lessons use (common/blocks.py, torch's modules for counts and
norms, the function of the lesson that teaches the thing); the worked steps follow the page's
notation and order; each known mistake is a formula of its own on the same numbers, named when
a wrong answer equals it: in the page's words if the page lists it, else as a slip, with the
page's rule.

No flags: the page's questions with the page's numbers, each with its worked answer (and the
check that the page's formula, worked by hand, reaches the blocks' answer). --seed N: new
numbers, the same on any CPU. --quiz: asked on standard input, one at a time.
Setup: numbers from np.random.default_rng([seed, the kind's place]), small and hand-workable; a
known mistake that gives a right answer for the numbers drawn is not listed for them.
Notes: week2/NOTES.md, section 21.
"""
import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import MultiHeadAttention, causal_mask, sinusoidal_pe
from common.cli import SEED, Lesson, knob
from common.printing import n_params
from common.quiz import (
    QUIZ_HELP,
    SEED_HELP,
    Count,
    Kind,
    Mistake,
    Question,
    Shape,
    Slip,
    Tokens,
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

# The worked examples' own functions (week2/09 recomputes every page answer with them); week2/13's kinds of numbers.
training_example, decoder_input, blocked, smoothed_target, other_convention_target, lr = from_lesson(
    "week2/09_worked_examples", "training_example", "decoder_input", "blocked", "smoothed_target",
    "other_convention_target", "lr")
KINDS_OF_NUMBERS = from_lesson("week2/13_count_without_biases", "KINDS")
# What a count includes, as a question states it, and the count of a module under it: Week 1's (section 7).
CONVENTIONS, EVERYTHING, counted, count_slips = from_lesson("week1/18_check_yourself", "CONVENTIONS", "EVERYTHING",
                                                             "counted", "count_slips")

BOS = "BOS"  # the start symbol, as the page's Check yourself writes it
WORDS = list("ABCDEFGH")  # the target words a drawn question uses
EXCLUSIONS = ("Using a library total when the question says to exclude biases or embeddings. Follow the question's "
              "exclusions.")  # section 4's mistakes
WEIGHTS, BIASES, NORMS = KINDS_OF_NUMBERS  # week2/13's three kinds of learnable numbers
SECTIONS = {1: "1. Teacher forcing: practising with the answer key's previous words",
            2: "2. Masked (causal) self-attention: hiding the future",
            3: "3. Cross-attention: the decoder reading the source",
            4: "4. The decoder's output layer and counting parameters",
            5: "5. Sinusoidal positional encoding: a tag for \"where am I?\"",
            6: "6. Residual connections and normalization",
            7: "7. Training tricks: label smoothing and the warm-up schedule"}


# ---------------------------------------------------------------- 1. Teacher forcing

def draw_target(rng):
    T = int(rng.integers(3, 6))
    return {"gold": [*rng.choice(WORDS, T - 1, replace=False).tolist(), "EOS"], "bos": BOS}


def teacher_forced_input(gold, bos):
    """The decoder's input while training: the target shifted right, [BOS, y_1, ..., y_(T-1)]."""
    T = len(gold)
    reached = [bos, *gold[:-1]]
    return Question(
        f"Gold target {listed(gold)}. What is the decoder's input while training with teacher forcing? "
        f"({bos} is the start symbol.)",
        ("teacher forcing hands the decoder the gold previous words: the target shifted right by one slot, "
         f"with {bos} in front, so a position never sees its own answer",
         f"input [{bos}, y_1, ..., y_{T - 1}] = {listed(reached)}; labels [y_1, ..., y_{T}] = {listed(gold)}"),
        training_example(gold, bos)[0], Tokens(),
        (Mistake("forgetting the shift", list(gold), "Forgetting the shift. The input is [BOS, y1, ..., y(T-1)], "
                 "the labels are [y1, ..., yT]."),
         Slip("keeping the last word", [bos, *gold], "The inputs are the target shifted right by one slot, with a "
              "start symbol in front, so a position never sees its own answer.")),
        reached)


def draw_wrong_guess(rng):
    numbers = draw_target(rng)
    T = len(numbers["gold"])
    return {"gold": numbers["gold"], "wrong_step": int(rng.integers(1, T)),
            "guess": str(rng.choice([w for w in WORDS if w not in numbers["gold"]]))}


def input_after_a_wrong_guess(gold, wrong_step, guess):
    """What step k = wrong_step + 1 receives under teacher forcing: the gold word y_(k-1)."""
    k = wrong_step + 1
    guesses = [guess if t == wrong_step else word for t, word in enumerate(gold, start=1)]
    return Question(
        f"Gold target {listed(gold)}; at step {wrong_step} the model wrongly predicts {guess}. "
        f"Under teacher forcing, what does step {k} receive as its input?",
        ("under teacher forcing step t receives the gold word y_(t-1), whatever the model guessed",
         f"step {k} receives y_{k - 1} = {gold[k - 2]}, the gold token"),
        decoder_input(gold, guesses, teacher_forced=True, bos=BOS)[k - 1], Tokens(single=True),
        (Slip("feeding the model's own guess", decoder_input(gold, guesses, teacher_forced=False, bos=BOS)[k - 1],
              "At each step the decoder is handed the correct previous words (the \"gold prefix\"), not whatever it "
              "guessed."),
         Slip("feeding the step's own gold word", gold[k - 1], "The inputs are the target shifted right by one slot, "
              "with a start symbol in front, so a position never sees its own answer.")),
        gold[k - 2])


# ---------------------------------------------------------------- 2. Masked self-attention

def draw_mask(rng):
    return {"T": int(rng.integers(3, 13))}


def blocked_cells(T):
    """Cells a causal mask over T words sets to -inf: T(T-1)/2, the diagonal not among them."""
    reached = T * (T - 1) // 2
    added = " + ".join(map(str, range(1, T))) if T <= 6 else f"1 + 2 + ... + {T - 1}"
    between = [f"row {r} blocks {T - r}" for r in range(2, T)]  # the rows between the first and the last
    rows = ", ".join(between if T <= 6 else [between[0], "...", between[-1]])
    return Question(
        f"In a causal mask over T = {T} words, how many cells are set to -inf?",
        (f"row 1 sees only itself and blocks {T - 1} keys, {rows}, row {T} sees everyone; the diagonal is not blocked",
         f"blocked cells: {added} = T(T-1)/2 = {T}·{T - 1}/2 = {reached}"),
        blocked(causal_mask(T)), Count(),
        (Slip("blocking all T^2 cells", causal_mask(T).numel(), "For the writer, scores toward later words are "
              "forbidden."),
         Mistake("blocking the diagonal too", blocked(torch.ones(T, T).triu()), "\"The mask removes the "
                 "diagonal.\" No: the diagonal is the current input, already a previous target.")),
        reached)


def draw_masked_row(rng):
    return {"scores": rng.integers(-1, 6, 4).tolist(), "t": int(rng.integers(2, 5))}


def masked_row(scores, t):
    """Query t's weights over T keys after the causal mask: the visible scores' softmax, 0 on the future."""
    T = len(scores)
    row = torch.tensor(scores, dtype=torch.float64)  # [T]: query t's raw scores
    answer = torch.softmax(row.masked_fill(causal_mask(T)[t - 1], -math.inf), dim=-1)  # [T], as week2/09 masks
    e = [math.exp(s) for s in scores[:t]]
    reached = [x / sum(e) for x in e] + [0.0] * (T - t)
    full = torch.softmax(row, dim=-1)  # every key in the softmax: the future too
    powers = ", ".join(f"e^{s}" for s in scores[:t])
    return Question(
        f"Raw scores {listed(scores)}: row {t} of a {T}-word causal mask. What are its attention weights after "
        "the masked softmax? (4 decimals)",
        (f"query {t} sees keys 1..{t}: masked row {listed(scores[:t] + ['-inf'] * (T - t))}",
         f"weights = [{powers}{', 0' * (T - t)}] / ({powers.replace(', ', ' + ')}) = {listed(reached, 4)}"),
        answer, Vector(T, 4, whole=True),  # a masked weight is exactly 0, as the page writes it
        (Mistake("setting the future values to zero instead of masking the scores",
                 full.masked_fill(causal_mask(T)[t - 1], 0.0), "No: the future scores would still sit in the "
                 "softmax denominator and shrink the visible weights. Mask the scores."),
         Mistake("blocking the diagonal too",
                 torch.softmax(row.masked_fill(torch.ones(T, T, dtype=torch.bool).triu()[t - 1], -math.inf), dim=-1),
                 "\"The mask removes the diagonal.\" No: the diagonal is the current input, already a previous "
                 "target.")),
        reached)


# ---------------------------------------------------------------- 3. Cross-attention

def draw_cross(rng):
    one = rng.random() < 0.5  # one head, one sentence pair (Check yourself 3), or the whole batch (the run's table)
    T, S = int(rng.integers(2, 9)), int(rng.integers(2, 10))
    return {"B": 1 if one else int(rng.integers(2, 5)), "h": 1 if one else int(rng.choice([2, 4, 8])),
            "T": T, "S": S + (S >= T)}  # S from 2 to 10, never T: rows and columns told apart


def cross_attention_table(B, h, T, S, d=16):
    """The cross-attention weights: [T, S] per head and sentence pair, [B, h, T, S] in all."""
    torch.manual_seed(0)
    attend = MultiHeadAttention(d, h)
    target, source = torch.randn(B, T, d), torch.randn(B, S, d)  # the decoder's T words, the encoder's S
    with torch.no_grad():  # queries from the decoder, keys and values from the encoder
        _, A = attend(target, source)  # [B, h, T, S]
        _, swapped = attend(source, target)  # the roles swapped: [B, h, S, T]
        _, own = attend(target)  # the decoder's self-attention: [B, h, T, T]
    whole = B * h > 1
    ask = (f"A batch of {B} sentence pairs, h = {h} heads, d = {d}: {T} target words attend to {S} source words. "
           "What is the shape of the cross-attention weights, all heads, its axes in the order batch, heads, then "
           "the weight table's rows and columns?" if whole else
           f"{T} target words attend to {S} source words in one head. What is the shape of the weight table?")
    table = f"[T, S] = [{T}, {S}]"
    keep = slice(None) if whole else slice(-2, None)  # all four axes, or one head's table
    mistakes = [Slip("taking rows from the keys and columns from the queries", list(swapped.shape[keep]),
                     "Rule: rows come from the queries, columns from the keys."),
                Slip("writing the decoder's own self-attention table", list(own.shape[keep]),
                     "In the decoder's second attention block the questions (queries) come from the decoder and the "
                     "keys and values come from the encoder's final output.")]
    if whole:
        orders = {tuple(A.permute(order).shape) for order in itertools.permutations(range(4))}
        mistakes += [Slip("putting the axes in another order", list(shape), "Attention weights, all heads "
                          "[2, 4, 3, 5] = [B, h, T, S]") for shape in sorted(orders)
                     if list(shape) not in [list(A.shape), *(m.value for m in mistakes)]]
    return Question(
        ask,
        (f"rows come from the queries (the decoder's T = {T} target words), columns from the keys (the encoder's "
         f"S = {S} source words)",
         f"one table {table} per head and sentence pair: [B, h, T, S] = [{B}, {h}, {T}, {S}]" if whole else
         f"per head, per batch item: {table}",
         "no causal mask over the source: it is all known" + (f"; the output is [B, T, d] = [{B}, {T}, {d}]" if whole
                                                              else "")),
        list(A.shape[keep]), Shape(4 if whole else 2), tuple(mistakes), [B, h, T, S] if whole else [T, S])


# ---------------------------------------------------------------- 4. Output layer and parameters

def draw_output_layer(rng):
    return {"d": int(rng.choice([64, 128, 256, 512, 768])), "V": int(rng.choice([1000, 5000, 8000, 10_000, 37_000])),
            "bias": bool(rng.random() < 0.5), "tied": bool(rng.random() < 0.3)}


def output_layer(d, V, bias, tied):
    """Learnable numbers of the final linear layer [d, V] (+ V with a bias); tied: with the embedding
    table that shares its weight matrix, counted once."""
    layer = nn.Linear(d, V, bias=bias, device="meta")  # torch stores W as [V, d]
    model = layer
    if tied:
        embedding = nn.Embedding(V, d, _weight=torch.empty(V, d, device="meta"))  # [V, d]: a row per word
        layer.weight = embedding.weight  # one tensor, two uses
        model = nn.ModuleList([embedding, layer])
    reached = d * V + V * bias
    with_bias = "with a bias" if bias else "no bias"
    ask = (f"The embedding table (V rows of d numbers) and the output layer share one weight matrix (tied). d = {d:,}, "
           f"V = {V:,}, {with_bias} on the output layer. How many parameters do the two hold together?" if tied else
           f"The output layer turns each position's d = {d:,} numbers into V = {V:,} vocabulary scores. How many "
           f"parameters does it hold ({with_bias})?")
    steps = [f"the weight matrix is [d, V]: d x V = {d:,} x {V:,} = {d * V:,}"]
    if bias:
        steps.append(f"+ V = {V:,} for the bias: {reached:,}")
    if tied:
        steps.append("the embedding table is that same matrix (tied): counted once")
    other = n_params(nn.Linear(d, V, bias=not bias, device="meta"))  # the bias the other way
    mistakes = [Slip("leaving out the bias", other, "The weight matrix is [d, V], so it has d x V numbers, plus V if "
                     "there is a bias.") if bias else
                Mistake("counting a bias the question leaves out", other, EXCLUSIONS)]
    if tied:
        mistakes.append(Mistake("counting the shared (tied) weight twice", n_params(layer) + n_params(embedding),
                                "Counting a shared (tied) weight twice."))
    return Question(ask, tuple(steps), n_params(model), Count(), tuple(mistakes), reached)


def decoder_stack(d, f, layers):
    """torch's decoder layer (or `layers` of them, each with its own weights), shapes only; the count
    does not depend on the number of heads."""
    layer = nn.TransformerDecoderLayer(d, 1, f, device="meta")
    return layer if layers == 1 else nn.TransformerDecoder(layer, layers)


def encoder_stack(d, f, layers):
    """The same widths as an encoder layer: one attention block, two LayerNorms."""
    layer = nn.TransformerEncoderLayer(d, 1, f, device="meta")
    return layer if layers == 1 else nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def draw_decoder(rng):
    d = int(rng.choice([4, 8, 16, 32, 64, 128, 256, 512]))
    return {"d": d, "f": d * int(rng.choice([2, 4])), "layers": int(rng.choice([1, 1, 1, 2, 6])),
            "convention": list(CONVENTIONS)[rng.integers(len(CONVENTIONS))]}


COUNTS_IT = {  # section 4's count of one decoder layer, the part that counts each kind of number
    BIASES: "With biases, one full-width attention block has 4d^2+4d parameters, and a decoder layer has two of them "
            "(masked self-attention and cross-attention), one feed-forward net (2df+f+d)",
    NORMS: "a decoder layer has ... three LayerNorms (6d)"}


def decoder_parameters(d, f, layers, convention):
    """N_layer = 2(4d^2 + 4d) + (2df + f + d) + 6d, each part as the question's convention counts it."""
    kinds = CONVENTIONS[convention]
    b, n = BIASES in kinds, NORMS in kinds
    attention, ffn, norms = 2 * (4 * d * d + 4 * d * b), 2 * d * f + (f + d) * b, 6 * d * n
    layer = attention + ffn + norms
    reached = layers * layer
    steps = ["attention x2 (masked self-attention, cross-attention): "
             + (f"2(4d^2 + 4d) = 2 x (4·{d * d:,} + {4 * d:,})" if b else f"2(4d^2) = 2 x 4·{d * d:,}")
             + f" = {attention:,}",
             "feed-forward: " + (f"2df + f + d = 2·{d}·{f} + {f} + {d}" if b else f"2df = 2·{d}·{f}") + f" = {ffn:,}",
             f"3 LayerNorms: {f'6d = 6·{d} = {norms:,}' if n else 'not counted'}",
             f"one layer: {attention:,} + {ffn:,}{f' + {norms:,}' if n else ''} = {layer:,}"
             + (f" ({layer / 1e6:.3f}M)" if layer >= 1e6 else "")]
    if layers > 1:
        steps.append(f"{layers} layers, each with its own weights: {layers} x {layer:,} = {reached:,}")
    model = decoder_stack(d, f, layers)
    mistakes = [*count_slips(model, convention, COUNTS_IT, EXCLUSIONS),
                Mistake("thinking the decoder is an encoder plus a mask", counted(encoder_stack(d, f, layers),
                                                                                  convention),
                        "Thinking the decoder is \"an encoder plus a mask\". It has an extra sublayer, so it has an "
                        "extra set of projections.")]
    if layers > 1:
        mistakes.append(Mistake("counting one layer for all of them", counted(decoder_stack(d, f, 1), convention),
                                "(Week 1, section 6) \"Identical layers share weights.\" They share the architecture; "
                                "each layer has separately learned parameters."))
    return Question(
        f"{'One decoder layer' if layers == 1 else f'{layers} decoder layers'} with d = {d:,} and f = {f:,} (masked "
        "self-attention, cross-attention, a feed-forward net, three LayerNorms; embeddings and the output layer "
        f"not counted). How many parameters, counting {convention}?",
        tuple(steps), counted(model, convention), Count(), tuple(mistakes), reached)


# ---------------------------------------------------------------- 5. Sinusoidal positions

def draw_position(rng):
    return {"d": int(rng.choice([2, 4, 6])), "word": int(rng.integers(1, 7))}


def sin_cos(p, omegas):
    """[sin(p w_0), cos(p w_0), sin(p w_1), ...]: a pair per speed."""
    return [g(p * w) for w in omegas for g in (math.sin, math.cos)]


def position_tag(d, word):
    """PE(p) for the word at position p = word - 1: PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i)."""
    p = word - 1
    omegas = [10000.0 ** (-2 * i / d) for i in range(d // 2)]  # one speed per pair i
    reached = sin_cos(p, omegas)
    slips = [10000.0 ** (-2 * c / d) for c in range(d)]  # the coordinate c where the pair index i belongs
    slipped = [(math.sin if c % 2 == 0 else math.cos)(p * w) for c, w in enumerate(slips)]
    pairs = ", ".join(f"sin({p} w_{i}), cos({p} w_{i})" for i in range(d // 2))
    return Question(
        f"The position tag PE added to word {word} of a sentence (word 1 is the first), d = {d}: what is it? "
        "(4 decimals)",
        (f"word {word} sits at position p = {p} (positions start at zero)",
         "w_i = 10000^(-2i/d): " + ", ".join(f"w_{i} = {w:.4g}" for i, w in enumerate(omegas)),
         f"PE({p}) = [{pairs}] = {listed(reached, 4)}"),
        sinusoidal_pe(word, d, torch.float64)[p].tolist(), Vector(d, 4, whole=True),  # PE(0) = [0, 1, 0, 1]
        (Mistake("forgetting that positions start at zero", sin_cos(p + 1, omegas),
                 "Mixing up the coordinate index and the pair index i, and forgetting that positions start at zero."),
         Mistake("putting the coordinate index where the pair index i belongs", slipped,
                 "Mixing up the coordinate index and the pair index i, and forgetting that positions start at zero.")),
        reached)


# ---------------------------------------------------------------- 6. LayerNorm and BatchNorm

def draw_norm(rng):
    layer = rng.random() < 0.5
    while True:  # a row (LayerNorm) or a feature (BatchNorm) of equal numbers has no spread to divide by
        X = rng.integers(0, 7, (int(rng.integers(1, 3)), 3) if layer else (int(rng.integers(2, 4)), 2))
        if (X.std(axis=1 if layer else 0) > 0).all():
            return {"X": X.tolist(), "norm": "LayerNorm" if layer else "BatchNorm"}


def over(X, axis):
    """(x - mean) / std over `axis` (population variance, eps = 0); a single observation gives 0."""
    X = np.asarray(X, dtype=float)
    centred = X - X.mean(axis=axis, keepdims=True)
    std = X.std(axis=axis, keepdims=True)
    return centred / np.where(std == 0, 1.0, std)


def by_hand(values):
    """Mean, variance and the normalized values of a few whole numbers, the page's way (in exact fractions)."""
    values = [Fraction(v) for v in values]
    mean = sum(values) / len(values)
    squares = [(v - mean) ** 2 for v in values]
    variance = sum(squares) / len(values)
    return mean, squares, variance, [float(v - mean) / math.sqrt(variance) for v in values]


def normalized(X, norm):
    """LayerNorm (each token's d numbers) or BatchNorm (each feature over the batch), gamma 1, beta 0, eps 0."""
    x = torch.tensor(X, dtype=torch.float64)  # [B, d]: one token (sample) per row
    B, d = x.shape
    if norm == "LayerNorm":
        answer = nn.LayerNorm(d, eps=0.0, elementwise_affine=False, dtype=torch.float64)(x)
        groups = [(f"token {listed(row)}", row) for row in X]
    else:
        # training mode: the batch's own statistics. torch takes no eps of 0 there; the smallest float64 it
        # takes changes no variance here (each is at least 1/36), so this is eps = 0.
        answer = nn.BatchNorm1d(d, eps=torch.finfo(torch.float64).tiny, affine=False, dtype=torch.float64)(x)
        groups = [(f"feature {j + 1} (values {', '.join(str(row[j]) for row in X)})", [row[j] for row in X])
                  for j in range(d)]
    steps, results = [], []
    for name, values in groups:
        mean, squares, variance, out = by_hand(values)
        results.append(out)
        steps.append(f"{name}: mean {mean}, variance ({' + '.join(map(str, squares))})/{len(values)} = {variance}, "
                     f"(x - mean)/sqrt({variance}) = {listed(out, 4)}")
    reached = results if norm == "LayerNorm" else [list(r) for r in zip(*results, strict=True)]
    if norm == "LayerNorm":
        mistakes = (Slip("normalizing over the batch (BatchNorm)", over(X, 0), "LayerNorm rescales one token's d "
                         "numbers to mean 0 and variance 1"),
                    Slip("dividing the variance by d - 1", [by_hand_sample(row) for row in X],
                         "x = (1,2,3): mean = 2, variance = (1+0+1)/3 = 2/3"))
    else:
        mistakes = (Slip("normalizing each token's numbers (LayerNorm)", over(X, 1), "BatchNorm instead normalizes "
                         "each feature across the batch (and time)."),)
    rows = "one token per row" if norm == "LayerNorm" else "rows = samples, training mode"
    return Question(
        f"Normalize X = {listed(X)} ({rows}) with {norm}: gamma = 1, beta = 0, ignore "
        "epsilon. (4 decimals)",
        tuple(steps), answer.tolist()[0] if B == 1 else answer.tolist(),
        Vector(d, 4, whole=True, rows=B if B > 1 else 0),  # a centred value exactly 0: the page's [-1.2247, 0, 1.2247]
        mistakes, reached[0] if B == 1 else reached)


def by_hand_sample(values):
    """The slip: the variance divided by d - 1 instead of d."""
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return [(v - mean) / spread for v in values]


# ---------------------------------------------------------------- 7. Label smoothing and warm-up

def draw_smoothing(rng):
    V = int(rng.choice([4, 5, 8, 10]))
    return {"V": V, "gold": int(rng.integers(1, V + 1)), "epsilon": float(rng.choice([0.1, 0.2]))}


def decimals_of(*fractions):
    """The fewest decimals (up to 6) that write every fraction exactly."""
    return next(k for k in range(7) if all((x * 10 ** k).denominator == 1 for x in fractions) or k == 6)


def smoothed(V, gold, epsilon):
    """q_i = (1 - epsilon) 1[i = y] + epsilon / V, the page's uniform mixture."""
    eps = Fraction(str(epsilon))
    share, top = eps / V, 1 - eps + eps / V
    places = decimals_of(share, top)
    reached = [float(top if i == gold else share) for i in range(1, V + 1)]
    return Question(
        f"Label smoothing with the uniform-mixture rule q_i = (1 - eps) 1[i = y] + eps/V: V = {V} classes, the gold "
        f"class is number {gold} (counting from 1), eps = {epsilon}. What is the target q? ({places} decimals)",
        (f"every class gets eps/V = {epsilon}/{V} = {float(share):.{places}f}",
         f"the gold gets 1 - eps = {float(1 - eps):g} extra: {float(top):.{places}f}",
         f"q = {listed(reached, places)} (sums to 1)"),
        smoothed_target(V, gold - 1, epsilon).tolist(), Vector(V, places),
        (Slip("the other convention (the gold exactly 1 - eps)", other_convention_target(V, gold - 1, epsilon),
              "With the uniform-mixture rule q_i = (1-eps) 1[i=y] + eps/V"),),
        reached)


WARMUP = 4000  # w, the page's warm-up steps
WIDTHS = [(512, 256), (1024, 512), (256, 128), (768, 384)]  # two widths, as the page's table has
STEPS = [1, 10, 100, 500, 1000, 2000, 3000, 4000, 6000, 8000, 10_000, 16_000]


def draw_rates(rng):
    return {"widths": list(WIDTHS[rng.integers(len(WIDTHS))]), "step": int(rng.choice(STEPS))}


def warmup_rates(widths, step, w=WARMUP):
    """eta(s) = d^(-1/2) min(s^(-1/2), s w^(-3/2)) at one step, for two widths."""
    decay, ramp = step ** -0.5, step * w ** -1.5
    which = ("s w^(-3/2): on the ramp (s < w)" if step < w else "s^(-1/2): past the peak (s > w)" if step > w else
             "either: they meet at the peak (s = w)")
    answer, reader = [lr(step, d, w) for d in widths], Vector(2, 10)

    def rates(k):  # from the min as written at k decimals
        return [d ** -0.5 * float(as_written(min(decay, ramp), k)) for d in widths]

    k = fewest(10, rates, answer, 10)
    rule = f"eta(s) = d^(-1/2) min(s^(-1/2), s w^(-3/2)), w = {w}"
    return Question(
        f"The warm-up schedule eta(s) = d^(-1/2) min(s^(-1/2), s w^(-3/2)) with w = {w}. What are the rates at step "
        f"s = {step} for d = {widths[0]} and for d = {widths[1]}? (10 decimals)",
        (f"s^(-1/2) = {decay:.{k}f}; s w^(-3/2) = {step}/{w}^1.5 = {ramp:.{k}f}; the min is {which}",
         *(f"d = {d}: {d}^(-1/2) x {min(decay, ramp):.{k}f} = {rate:.10f}" for d, rate in zip(widths, rates(k),
                                                                                                strict=True))),
        answer, reader,
        (Slip("taking the larger of the two (max, not min)", [d ** -0.5 * max(decay, ramp) for d in widths], rule),
         Slip("leaving out d^(-1/2)", [min(decay, ramp)] * 2, rule)),
        rates(k))


KINDS = [
    Kind(1, "the decoder's teacher-forced input", teacher_forced_input, draw_target,
         (("Section 1's table: the teacher-forced input", {"gold": [1, 2, 3, 4], "bos": 0}),
          ("Check yourself 1: the training input", {"gold": ["A", "B", "EOS"], "bos": BOS}))),
    Kind(1, "what a step receives after a wrong guess", input_after_a_wrong_guess, draw_wrong_guess,
         (("Section 1's hand-check and Check yourself 1: step 3 after a wrong guess",
           {"gold": ["A", "B", "EOS"], "wrong_step": 2, "guess": "C"}),)),
    Kind(2, "cells a causal mask hides", blocked_cells, draw_mask,
         (("Section 2: blocked cells for T = 4", {"T": 4}), ("Check yourself 2: a 5-word causal mask", {"T": 5}))),
    Kind(2, "a masked softmax row", masked_row, draw_masked_row,
         (("Section 2's hand-check: a masked row", {"scores": [2, 1, 5, 3], "t": 2}),)),
    Kind(3, "the shape of the cross-attention weights", cross_attention_table, draw_cross,
         (("Section 3's shapes: the weights, all heads", {"B": 2, "h": 4, "T": 3, "S": 5}),
          ("Check yourself 3: one head's weight table", {"B": 1, "h": 1, "T": 3, "S": 6}))),
    Kind(4, "the output layer's parameters", output_layer, draw_output_layer,
         (("Section 4: the output layer's weights", {"d": 512, "V": 37_000, "bias": False, "tied": False}),
          ("Section 4: the output layer with a bias", {"d": 512, "V": 37_000, "bias": True, "tied": False}))),
    Kind(4, "decoder layers' parameters", decoder_parameters, draw_decoder,
         (("Section 4's table: the tiny layer", {"d": 4, "f": 8, "layers": 1, "convention": EVERYTHING}),
          ("Section 4's table: d = 512, f = 2048", {"d": 512, "f": 2048, "layers": 1, "convention": EVERYTHING}),
          ("Section 4: six such layers", {"d": 512, "f": 2048, "layers": 6, "convention": EVERYTHING}))),
    Kind(5, "a position tag PE(p)", position_tag, draw_position,
         (("Section 5's hand-check: position 1", {"d": 4, "word": 2}),
          ("Check yourself 4: PE(0) for d = 4", {"d": 4, "word": 1}))),
    Kind(6, "LayerNorm or BatchNorm of a few numbers", normalized, draw_norm,
         (("Section 6's hand-check and Check yourself 5: LayerNorm", {"X": [[1, 2, 3]], "norm": "LayerNorm"}),
          ("Section 6: BatchNorm of a batch", {"X": [[1, 2], [3, 4]], "norm": "BatchNorm"}),
          ("Section 6: LayerNorm of the same rows", {"X": [[1, 2], [3, 4]], "norm": "LayerNorm"}))),
    Kind(7, "a label-smoothed target", smoothed, draw_smoothing,
         (("Section 7's hand-check: V = 5", {"V": 5, "gold": 3, "epsilon": 0.1}),
          ("Section 7's run: V = 4", {"V": 4, "gold": 3, "epsilon": 0.1}))),
    Kind(7, "the warm-up rate at a step", warmup_rates, draw_rates,
         tuple((f"Section 7's table: step {s}", {"widths": [512, 256], "step": s}) for s in (1, 1000, 4000, 8000))),
]


def lesson(args):
    """The page's questions (no flags), new numbers (--seed), or the quiz (--quiz)."""
    check_yourself(args, __file__, "Check yourself, Week 2", SECTIONS, KINDS)


# ---------------------------------------------------------------- optional: knobs and Try it

TOPICS = [str(s) for s in SECTIONS]
KNOBS = [knob("--seed", type=SEED, default=None, help=SEED_HELP),
         knob("--quiz", action="store_true", help=QUIZ_HELP),
         knob("--topic", choices=TOPICS, action="append", help="only this page section's questions (give it "
              "again for more): "
              "1 teacher forcing, 2 the causal mask, 3 cross-attention, 4 the output layer and "
              "counting, 5 positions, 6 normalization, 7 label smoothing and warm-up")]
TRY_IT = [("--seed 7", "new numbers for every question, each with its worked answer"),
          ("--quiz", "you answer, one question at a time; a blank line skips, q stops"),
          ("--quiz --topic 4", "only section 4's counting, new numbers each time")]

DESCRIPTION = ("The page's kinds of question with new numbers: you count, the lessons' own code checks, and a wrong "
               "answer gets its worked steps (Week 2, Check yourself).")
LESSON = Lesson(__file__, page=("week2", "check yourself"), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
