"""week1/18 and week2/21, Check yourself: the page's numbers give the page's answers; over many
seeds each answer, and each named mistake's value, equals a computation of its own here (a torch
module or kernel, torch's norms, the lesson that teaches the thing, a hand loop), the worked steps
print the answer they reach, and --seed N asks the numbers drawn from N, as drawn; a mistake that
gives a right answer is not listed; each named mistake is recognised and named in the quiz before
the worked steps (the page's words, or a slip with the page's rule), and a wrong answer that matches
none is not named; the answers are read in every form the lesson promises, right within half a unit
of the last decimal and no further, and an unreadable one is asked again, not counted; every record
turns when a wrong implementation goes through the lesson's code. End to end, in real processes:
right answers on stdin score N/N, wrong ones 0, `q` ends with the score, then `stopped`; Ctrl-C on a
real terminal (a pseudo-terminal) prints the score, then `stopped`."""
import builtins
import contextlib
import functools
import io
import itertools
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from types import SimpleNamespace

from common import quiz
from common.blocks import EncoderLayer, join_heads, sinusoidal_pe
from common.printing import n_params

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import run_all
from check import comparing
from tests.conftest import SCRIPTS, load_script, main_in_process

W1, W2 = load_script("week1/18_check_yourself"), load_script("week2/21_check_yourself")
W206, W208 = load_script("week2/06_warmup_schedule"), load_script("week2/08_teacher_forcing")  # the schedule, the shift
LESSONS = {"week1/18_check_yourself": W1, "week2/21_check_yourself": W2}
KINDS = [(module, place, kind) for module in LESSONS.values() for place, kind in enumerate(module.KINDS)]
SEEDS = range(20)  # per kind: a few milliseconds each
UPHOLDS, CONTRADICTS = "upholds the page", "contradicts the page"
SCORE = "score: {}/{} answers right (a question asked again counts again; a skipped one does not)\n"

# The page's answers, as the page writes them (and the quiz shows them), question by question in page order.
PAGE_ANSWERS = {
    W1: ["[8]", "[0.881, 0.119]", "1.93", "[[0.670, 0.330], [0.330, 0.670]]", "[0.5, 1]", "[0.731, 0.269]", "1.00",
         "512", "[512, 512]", "[4, 6]", "589,824", "[50, 512]", "6400", "3,152,384", "18,914,304", "32,768", "1,152",
         "[3, 4]"],
    W2: ["[0, 1, 2, 3]", "[BOS, A, B]", "B", "6", "10", "[0.7311, 0.2689, 0, 0]", "[2, 4, 3, 5]", "[3, 6]",
         "18,944,000", "18,981,000", "260", "4,204,032", "25,224,192", "[0.8415, 0.5403, 0.0100, 1.0000]",
         "[0, 1, 0, 1]", "[-1.2247, 0, 1.2247]", "[[-1, -1], [1, 1]]", "[[-1, 1], [-1, 1]]",
         "[0.02, 0.02, 0.92, 0.02, 0.02]", "[0.025, 0.025, 0.925, 0.025]", "[0.0000001747, 0.0000002471]",
         "[0.0001746928, 0.0002470529]", "[0.0006987712, 0.0009882118]", "[0.0004941059, 0.0006987712]"],
}


def page_questions(module):
    return [(kind, where, quiz.asked(kind, numbers)) for kind in module.KINDS for where, numbers in kind.page]


@functools.cache
def drawn_at(lesson, place, seed):
    kind = LESSONS[lesson].KINDS[place]
    return quiz.drawn(kind, quiz.np.random.default_rng([seed, place]))


def drawn(place, kind, seed):
    """The question --seed `seed` asks of this kind (drawn once for the tests that read it)."""
    lesson = next(name for name, module in LESSONS.items() if kind in module.KINDS)
    return drawn_at(lesson, place, seed)


@pytest.mark.parametrize("module", LESSONS.values(), ids=LESSONS)
def test_the_pages_numbers_give_the_pages_answers(module):
    shown = [question.reader.show(question.answer) for _, _, question in page_questions(module)]
    assert shown == PAGE_ANSWERS[module]


# ---------------------------------------------------------------- each answer, computed another way

def torch_count(model, biases, norms, leave=()):
    """The count from torch's own module, its parameters sorted here by name and owner (a LayerNorm's gamma
    and beta; a bias; a weight matrix): biases and LayerNorm's numbers counted or not, and none whose name
    holds a word of `leave`."""
    total = 0
    for name, p in model.named_parameters():
        if any(word in name for word in leave):
            continue
        if isinstance(model.get_submodule(name.rpartition(".")[0]), nn.LayerNorm):
            total += p.numel() * norms
        else:
            total += p.numel() * (biases or not name.endswith("bias"))
    return total


def says(convention):
    """(biases counted, LayerNorm's numbers counted), read from the convention's words."""
    return convention.startswith(("everything", "weights and biases")), "gamma and beta" in convention


def stack(layer, layers, kind):
    return layer if layers == 1 else kind(layer, layers)


def softmax_list(xs):
    e = [math.exp(x) for x in xs]
    return [x / sum(e) for x in e]


def sdpa(q, k, v, scale=None):
    as64 = [torch.tensor(x, dtype=torch.float64) for x in (q, k, v)]
    return F.scaled_dot_product_attention(*as64, scale=scale).tolist()


def as64(x):
    return torch.tensor(x, dtype=torch.float64)


def encoders(d, f, layers):
    return stack(nn.TransformerEncoderLayer(d, 1, f, device="meta"), layers,
                 lambda layer, n: nn.TransformerEncoder(layer, n, enable_nested_tensor=False))


def decoders(d, f, layers):
    return stack(nn.TransformerDecoderLayer(d, 1, f, device="meta"), layers, nn.TransformerDecoder)


def pre_norm_stages(T, d, f):
    """Shapes through torch's own pre-norm encoder layer, its sublayers called one by one: {stage: [T, width]}."""
    layer = nn.TransformerEncoderLayer(d, 1, f, norm_first=True, batch_first=True)
    x = torch.randn(1, T, d)
    attended, weights = layer.self_attn(layer.norm1(x), layer.norm1(x), layer.norm1(x))
    widened = layer.linear1(layer.norm2(x + attended))
    return {"FFN widened": list(widened.shape[1:]), "other": list(layer.linear2(widened).shape[1:]),
            "weights": list(weights.shape[1:])}


def causal_row(scores, visible):
    """One query's weights over the keys by torch's own attention kernel, the first `visible` keys
    taking part (its mask's convention): q = [1] against one-number keys, the values the identity,
    so the output row is the weights."""
    T = len(scores)
    return F.scaled_dot_product_attention(as64([[1.0]]), as64(scores)[:, None], torch.eye(T, dtype=torch.float64),
                                          attn_mask=(torch.arange(T) < visible)[None], scale=1.0)[0].tolist()


def own_normalized(X, norm):
    """Population statistics by hand (statistics.pstdev): each row (LayerNorm) or each column (BatchNorm)."""
    rows = X if norm == "LayerNorm" else [list(c) for c in zip(*X, strict=True)]
    out = [[(x - statistics.mean(r)) / statistics.pstdev(r) for x in r] for r in rows]
    out = out if norm == "LayerNorm" else [list(r) for r in zip(*out, strict=True)]
    return out[0] if len(X) == 1 else out


def torch_target(V, gold, epsilon):
    """torch's own label-smoothed target, read from its loss: at logits 0, d loss / d logits = 1/V - q."""
    logits = torch.zeros(1, V, dtype=torch.float64, requires_grad=True)
    F.cross_entropy(logits, torch.tensor([gold - 1]), label_smoothing=epsilon).backward()
    return (1 / V - logits.grad[0]).tolist()


def pe_by_exp_log(d, p, index=lambda c: c // 2):
    """The other way to write the speeds: div_term = exp(2i * -(ln 10000 / d)), i = index(coordinate c)."""
    return [(math.sin, math.cos)[c % 2](p * math.exp(2 * index(c) * -(math.log(10000.0) / d))) for c in range(d)]


def learning_rate(step, d):
    return float(W206.learning_rate(step, d))  # week2/06's, the lesson that teaches the schedule


INDEPENDENT = {
    "context_size": lambda T, n: list(nn.RNN(4, n)(torch.randn(T, 4))[1][0].shape),
    "bahdanau_context": lambda e, H: (torch.softmax(as64(e), 0) @ as64(H)).tolist(),
    "additive_score": lambda v_a, h, W_a=None, s=None, U_a=None, summed=None: sum(
        v * math.tanh(x) for v, x in zip(v_a, summed or [sum(W_a[i][j] * s[j] + U_a[i][j] * h[j] for j in range(2))
                                                         for i in range(2)], strict=True)),
    "identity_self_attention": lambda X: sdpa(X, X, X),
    "weighted_values": lambda q, K, V: sdpa([q], K, V)[0],
    "scaled_softmax": lambda d_k, raw: torch.softmax(as64(raw) / math.sqrt(d_k), 0).tolist(),
    "first_element": lambda alpha, V: (as64(alpha) @ as64(V))[0].item(),
    "concatenation_width": lambda h, d_k: nn.MultiheadAttention(h * d_k, h, device="meta").out_proj.in_features,
    "output_projection": lambda h, d_k: list(nn.MultiheadAttention(h * d_k, h, device="meta").out_proj.weight.T.shape),
    "mixed_heads": lambda heads, W_O: (as64(heads[0] + heads[1]) @ as64(W_O)).tolist(),
    "output_weights": lambda d_model, h: nn.Linear(d_model, d_model, bias=False, device="meta").weight.numel(),
    "stack_output_shape": lambda T, d, f, N: list(nn.Sequential(*[EncoderLayer(d, 1, f) for _ in range(N)])(
        torch.randn(1, T, d)).shape[1:]),  # the project's own post-norm layer, N of them
    "output_volume": lambda B, T, d: EncoderLayer(d, 1, 4 * d)(torch.randn(B, T, d)).numel(),
    "encoder_parameters": lambda d, f, layers, convention: torch_count(encoders(d, f, layers), *says(convention)),
    "head_query_weights": lambda d_model, h: nn.Linear(d_model, d_model // h, bias=False, device="meta").weight.numel(),
    "score_entries": lambda B, h, T: nn.MultiheadAttention(4 * h, h, batch_first=True)(
        *[torch.randn(B, T, 4 * h)] * 3, average_attn_weights=False)[1].numel(),
    "block_stage_shape": lambda T, d, f, stage: pre_norm_stages(T, d, f)["FFN widened" if stage == "FFN widened" else
                                                                         "other"],
    "teacher_forced_input": lambda gold, bos: W208.shift_right(gold, bos),
    "input_after_a_wrong_guess": lambda gold, wrong_step, guess: W208.decoder_input(
        gold, [guess] * len(gold), teacher_forced=True, bos="BOS")[wrong_step],
    "blocked_cells": lambda T: sum(1 for i in range(T) for j in range(T) if j > i),
    "masked_row": lambda scores, t: causal_row(scores, t),
    "cross_attention_table": lambda B, h, T, S: list(nn.MultiheadAttention(16, h, batch_first=True)(
        torch.randn(B, T, 16), *[torch.randn(B, S, 16)] * 2, average_attn_weights=False)[1].shape[
        0 if B * h > 1 else 2:]),
    "output_layer": lambda d, V, bias, tied: library_total(nn.Linear(d, V, bias=bias, device="meta")),
    "decoder_parameters": lambda d, f, layers, convention: torch_count(decoders(d, f, layers), *says(convention)),
    "position_tag": lambda d, word: pe_by_exp_log(d, word - 1),
    "normalized": own_normalized,
    "smoothed": torch_target,
    "warmup_rates": lambda widths, step: [learning_rate(step, d) for d in widths],
}


class OneOf(list):
    """Any of these values."""


def batch_normalized(X):
    """Each feature over the batch by hand (statistics.pstdev); a single observation gives 0."""
    columns = [[0.0 if statistics.pstdev(c) == 0 else (x - statistics.mean(c)) / statistics.pstdev(c) for x in c]
               for c in zip(*X, strict=True)]
    rows = [list(r) for r in zip(*columns, strict=True)]
    return rows[0] if len(X) == 1 else rows


def unbiased(X):
    x = as64(X)
    return ((x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)).tolist()


def library_total(model):
    return sum(p.numel() for p in model.parameters())


def count_mistakes(model, convention, one_layer):
    """Each named mistake of a count, computed on torch's modules with this file's count."""
    b, n = says(convention)
    return {"leaving out the biases": torch_count(model, False, n),
            "leaving out LayerNorm's numbers": torch_count(model, b, False),
            "counting the biases the question leaves out": torch_count(model, True, n),
            "counting LayerNorm's numbers the question leaves out": torch_count(model, b, True),
            "using the library's total": library_total(model),
            "leaving out W^O": torch_count(model, b, n, leave=("out_proj",)),
            "counting one layer for all of them": torch_count(one_layer, b, n)}


# Each named mistake, computed another way here: {(kind, mistake): its value for the question's numbers}
MISTAKES = {
    "context_size": lambda T, n: {
        "keeping every encoder state (what attention looks back at)": list(nn.RNN(4, n)(torch.randn(T, 4))[0].shape)},
    "bahdanau_context": lambda e, H: {"using the scores as weights (no softmax)": (as64(e) @ as64(H)).tolist()},
    "additive_score": lambda v_a, h, W_a=None, s=None, U_a=None, summed=None: {
        "leaving out the tanh": (as64(v_a) @ (as64(summed) if summed else as64(W_a) @ as64(s) + as64(U_a) @ as64(h)))
        .item()},
    "identity_self_attention": lambda X: {
        "not dividing by sqrt(d_k)": sdpa(X, X, X, scale=1.0),
        "dividing by d_k instead of sqrt(d_k)": sdpa(X, X, X, scale=1 / 2),
        "taking the softmax over the queries": (torch.softmax(as64(X) @ as64(X).T / math.sqrt(2), dim=0)
                                                @ as64(X)).tolist()},
    "weighted_values": lambda q, K, V: {
        "summing the keys instead of the values": sdpa([q], K, K)[0],
        "taking the softmax over the queries": (torch.softmax(as64([q]) @ as64(K).T, dim=0) @ as64(V))[0].tolist(),
        "not dividing by sqrt(d_k)": sdpa([q], K, V, scale=1.0)[0]},
    "scaled_softmax": lambda d_k, raw: {
        "not dividing by sqrt(d_k)": torch.softmax(as64(raw), 0).tolist(),
        "dividing by d_k instead of sqrt(d_k)": torch.softmax(as64(raw) / d_k, 0).tolist()},
    "first_element": lambda alpha, V: {},
    "concatenation_width": lambda h, d_k: {
        "taking one head's width": nn.MultiheadAttention(h * d_k, h, device="meta").head_dim},
    "output_projection": lambda h, d_k: {
        "taking one head's width": [d_k, nn.MultiheadAttention(h * d_k, h, device="meta").embed_dim]},
    "mixed_heads": lambda heads, W_O: {
        "adding the heads instead of gluing them side by side": as64(heads).sum(0).tolist()},
    "output_weights": lambda d_model, h: {
        "counting its bias too": library_total(nn.Linear(d_model, d_model, device="meta")),
        "counting a matrix per head": h * nn.Linear(d_model, d_model, bias=False, device="meta").weight.numel()},
    "stack_output_shape": lambda T, d, f, N: {
        "keeping the FFN's inner width": list(EncoderLayer(d, 1, f).ffn[0](torch.randn(T, d)).shape),
        "stacking the layers' outputs": list(torch.cat([torch.randn(T, d)] * N).shape)},
    "output_volume": lambda B, T, d: {"counting one number per token": torch.zeros(B, T, d)[..., 0].numel()},
    "encoder_parameters": lambda d, f, layers, convention: count_mistakes(encoders(d, f, layers), convention,
                                                                          encoders(d, f, 1)),
    "head_query_weights": lambda d_model, h: {
        "counting all heads' W^Q": nn.Linear(d_model, d_model, bias=False, device="meta").weight.numel()},
    "score_entries": lambda B, h, T: {
        "counting T entries per head (linear in length)": B * h * T,
        "counting one T^2 table for all heads and sentences": T * T},
    "block_stage_shape": lambda T, d, f, stage: {
        "mixing up where the FFN is f wide": pre_norm_stages(T, d, f)["other" if stage == "FFN widened" else
                                                                      "FFN widened"],
        "taking the attention weights' table": pre_norm_stages(T, d, f)["weights"]},
    "teacher_forced_input": lambda gold, bos: {
        "forgetting the shift": list(gold), "keeping the last word": W208.shift_right([*gold, None], bos)},
    "input_after_a_wrong_guess": lambda gold, wrong_step, guess: {
        "feeding the model's own guess": W208.decoder_input(gold, [guess] * len(gold), False, "BOS")[wrong_step],
        "feeding the step's own gold word": gold[wrong_step]},
    "blocked_cells": lambda T: {"blocking all T^2 cells": T ** 2,
                                "blocking the diagonal too": len(torch.triu_indices(T, T)[0])},
    "masked_row": lambda scores, t: {
        "setting the future values to zero instead of masking the scores":
            [*torch.softmax(as64(scores), 0)[:t].tolist(), *[0.0] * (len(scores) - t)],
        "blocking the diagonal too": causal_row(scores, t - 1)},
    "cross_attention_table": lambda B, h, T, S: {
        "taking rows from the keys and columns from the queries": list(nn.MultiheadAttention(16, h, batch_first=True)(
            torch.randn(B, S, 16), *[torch.randn(B, T, 16)] * 2, average_attn_weights=False)[1].shape[
            0 if B * h > 1 else 2:]),
        "writing the decoder's own self-attention table": list(nn.MultiheadAttention(16, h, batch_first=True)(
            *[torch.randn(B, T, 16)] * 3, average_attn_weights=False)[1].shape[0 if B * h > 1 else 2:]),
        "putting the axes in another order": OneOf(list(order) for order in itertools.permutations([B, h, T, S]))},
    "output_layer": lambda d, V, bias, tied: {
        "leaving out the bias": library_total(nn.Linear(d, V, bias=False, device="meta")),
        "counting a bias the question leaves out": library_total(nn.Linear(d, V, device="meta")),
        "counting the shared (tied) weight twice": library_total(nn.Linear(d, V, bias=bias, device="meta"))
        + library_total(nn.Embedding(V, d, _weight=torch.empty(V, d, device="meta")))},  # (no slow random init)
    "decoder_parameters": lambda d, f, layers, convention: {
        **{slip: value for slip, value in count_mistakes(decoders(d, f, layers), convention, decoders(d, f, 1)).items()
           if slip != "leaving out W^O"},
        "thinking the decoder is an encoder plus a mask": torch_count(encoders(d, f, layers), *says(convention))},
    "position_tag": lambda d, word: {
        "forgetting that positions start at zero": pe_by_exp_log(d, word),
        "putting the coordinate index where the pair index i belongs": pe_by_exp_log(d, word - 1, lambda c: c)},
    "normalized": lambda X, norm: {
        "normalizing over the batch (BatchNorm)": batch_normalized(X),
        "dividing the variance by d - 1": unbiased(X)[0] if len(X) == 1 else unbiased(X),
        "normalizing each token's numbers (LayerNorm)": F.layer_norm(  # (a row of equal numbers gives 0)
            as64(X), (len(X[0]),), eps=torch.finfo(torch.float64).tiny).tolist()},
    "smoothed": lambda V, gold, epsilon: {
        "the other convention (the gold exactly 1 - eps)": [1 - epsilon if i == gold else epsilon / (V - 1)
                                                            for i in range(1, V + 1)]},
    "warmup_rates": lambda widths, step: {
        "taking the larger of the two (max, not min)": [d ** -0.5 * max(step ** -0.5, step * 4000 ** -1.5)
                                                        for d in widths],
        "leaving out d^(-1/2)": [learning_rate(step, 1)] * 2},
}


def at_3(x):
    return torch.round(x, decimals=3)


def page_attention(q, k, v, scale=None, dim=-1):
    """softmax(Q K^T scale) V by torch, the scores and the weights written at 3 decimals along the way, as the
    page works by hand (0.881): a mistake's formula worked the page's way."""
    Q, K = as64(q), as64(k)
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    return (at_3(torch.softmax(at_3(Q @ K.T * scale), dim)) @ as64(v)).tolist()


# Each mistake that writes numbers along the way, worked with them at 3 decimals, another way here
ROUNDED_MISTAKES = {
    "identity_self_attention": lambda X: {
        "not dividing by sqrt(d_k)": page_attention(X, X, X, scale=1.0),
        "dividing by d_k instead of sqrt(d_k)": page_attention(X, X, X, scale=1 / 2),
        "taking the softmax over the queries": page_attention(X, X, X, dim=0)},
    "weighted_values": lambda q, K, V: {
        "summing the keys instead of the values": page_attention([q], K, K)[0],
        "taking the softmax over the queries": page_attention([q], K, V, dim=0)[0],
        "not dividing by sqrt(d_k)": page_attention([q], K, V, scale=1.0)[0]},
}


def test_every_kind_has_its_own_computation_here():
    assert sorted(INDEPENDENT) == sorted(MISTAKES) == sorted(kind.ask.__name__ for _, _, kind in KINDS)


def printed(reader, value):
    """A value as the worked steps print it: at the question's decimals, a whole number too (2.000)."""
    places = getattr(reader, "places", None)
    return reader.show(value) if places is None else quiz.listed(quiz._flat(value), places, whole=False)


@pytest.mark.parametrize(("module", "place", "kind"), KINDS, ids=[k.ask.__name__ for _, _, k in KINDS])
def test_over_many_seeds_each_answer_is_what_another_computation_gives(module, place, kind):
    for seed in SEEDS:
        question = drawn(place, kind, seed)
        assert question.numbers == kind.draw(quiz.np.random.default_rng([seed, place]))  # the first draw, kept
        expected = INDEPENDENT[kind.ask.__name__](**question.numbers)
        assert question.reader.same(question.answer, expected), (seed, question.numbers, question.answer, expected)
        assert printed(question.reader, question.reached) == printed(question.reader, question.answer), \
            (seed, "the worked steps print another value than the answer")
        ok, _ = quiz.mark(question, question.reader.show(question.answer))  # the `answer:` line, typed back
        assert ok, (seed, question.reader.show(question.answer))
        if question.rounded is not None:  # worked the page's way, each number along the way at 3 decimals
            assert quiz.mark(question, question.reader.show(question.rounded)) == (True, [])


@pytest.mark.parametrize(("module", "place", "kind"), KINDS, ids=[k.ask.__name__ for _, _, k in KINDS])
def test_over_many_seeds_each_named_mistake_is_what_another_computation_of_it_gives(module, place, kind):
    for seed in SEEDS:
        question = drawn(place, kind, seed)
        expected = MISTAKES[kind.ask.__name__](**question.numbers)
        for mistake in question.mistakes:
            value = expected[mistake.slip]
            values = value if isinstance(value, OneOf) else [value]
            assert any(question.reader.same(mistake.value, v) for v in values), (seed, mistake.slip, mistake.value,
                                                                               value)


@pytest.mark.parametrize(("module", "place", "kind"), KINDS, ids=[k.ask.__name__ for _, _, k in KINDS])
def test_over_many_seeds_a_mistake_worked_at_3_decimals_is_what_torch_gives_with_its_numbers_written_so(module, place,
                                                                                                     kind):
    for seed in SEEDS:
        question = drawn(place, kind, seed)
        expected = ROUNDED_MISTAKES.get(kind.ask.__name__, lambda **numbers: {})(**question.numbers)
        worked = {m.slip: m.rounded for m in question.mistakes if m.rounded is not None}
        assert set(worked) == {m.slip for m in question.mistakes} & set(expected), seed
        for slip, value in worked.items():
            assert question.reader.same(value, expected[slip]), (seed, slip, value, expected[slip])


def test_a_worked_step_written_at_3_decimals_can_print_another_value_so_the_steps_carry_more():
    """Seed 11's one query: 0.734 [0, 2] + 0.088 [0, 1] + 0.178 [2, 0] is [0.356, 1.556], not the answer
    [0.357, 1.555]: its steps write the weights at 4 decimals, and the 3-decimal result is right too."""
    place = next(place for place, kind in enumerate(W1.KINDS) if kind.ask.__name__ == "weighted_values")
    question = drawn_at("week1/18_check_yourself", place, 11)
    assert question.numbers == {"q": [-1, 1], "K": [[-1, 1], [0, -1], [0, 0]], "V": [[0, 2], [0, 1], [2, 0]]}
    assert "weights: softmax over the 3 keys = [0.7337, 0.0880, 0.1784]" in quiz.worked(question)
    assert "[0.357, 1.555]" in quiz.worked(question).splitlines()[-4]
    assert quiz.mark(question, "[0.356, 1.556]") == (True, []) and quiz.mark(question, "[0.357, 1.555]")[0]
    assert not quiz.mark(question, "[0.356, 1.555]")[0]


def test_the_count_helper_here_counts_as_torch_does():
    layer = nn.TransformerDecoderLayer(4, 1, 8, device="meta")
    assert torch_count(layer, *says(W2.EVERYTHING)) == n_params(layer) == 260
    assert torch_count(layer, *says("weights only (no biases, no LayerNorm numbers)")) == 2 * 4 * 16 + 2 * 4 * 8


# ---------------------------------------------------------------- known mistakes, named or not

def off_by_one(reader, value):
    """A wrong answer no mistake formula gives: the answer moved by one unit of its last place."""
    if isinstance(reader, quiz.Tokens):
        return "ZZ" if reader.single else [*value, "ZZ"]
    if isinstance(reader, (quiz.Count, quiz.Shape)):
        return [value[0] + 1, *value[1:]] if isinstance(reader, quiz.Shape) else value + 1
    if isinstance(reader, quiz.Decimals):
        return value + 10 ** -reader.places * 7
    flat = quiz._flat(value)
    return [flat[0] + 10 ** -reader.places * 7, *flat[1:]]


@pytest.mark.parametrize(("module", "place", "kind"), KINDS, ids=[k.ask.__name__ for _, _, k in KINDS])
def test_each_named_mistake_is_recognised_and_another_wrong_answer_is_not_named(module, place, kind):
    named = set()
    for seed in SEEDS:
        question = drawn(place, kind, seed)
        reader = question.reader
        for mistake in question.mistakes:
            for value in (mistake.value, mistake.rounded):  # exactly, and worked at 3 decimals along the way
                if value is not None:
                    ok, said = quiz.mark(question, reader.show(value))
                    assert not ok and mistake in said, (seed, mistake.slip, value)
            named.add(mistake.slip)
        other = off_by_one(reader, question.answer)
        if not any(quiz.reaches(reader, other, m.value, m.rounded) for m in question.mistakes):
            ok, said = quiz.mark(question, reader.show(other))
            assert not ok and said == [], (seed, reader.show(other))
    listed = {m.slip for seed in SEEDS for m in drawn(place, kind, seed).mistakes}
    assert named == listed
    assert listed or kind.ask.__name__ == "first_element"  # (the page names no slip for Q146's form)
    pages = {m.slip for _, numbers in kind.page for m in quiz.asked(kind, numbers).mistakes}
    assert listed | pages == set(MISTAKES[kind.ask.__name__](**drawn(place, kind, 0).numbers))  # each one asked


def test_a_mistake_that_gives_a_right_answer_is_not_listed_for_those_numbers():
    """At the page's numbers, identity projections over X = I make A symmetric: the softmax over the
    queries gives the answer itself; at p = 0 the coordinate-index slip gives PE(0) itself; counting
    everything, the library's total is the answer. Each is left out there, and the numbers are kept."""
    X = [[1, 0], [0, 1]]
    over_queries = next(m for m in W1.identity_self_attention(X).mistakes if "queries" in m.slip)
    assert quiz.Vector(2, 3, rows=2).same(over_queries.value, W1.identity_self_attention(X).answer)
    (question,) = [q for _, where, q in page_questions(W1) if where == "Section 3's hand-checkable example"]
    assert [m.slip for m in question.mistakes] == ["not dividing by sqrt(d_k)", "dividing by d_k instead of sqrt(d_k)"]
    assert quiz.mark(question, "[[0.670, 0.330], [0.330, 0.670]]") == (True, [])
    assert quiz.mark(question, "[[0.731, 0.269], [0.269, 0.731]]")[1][0].slip == "not dividing by sqrt(d_k)"
    (pe0,) = [q for _, where, q in page_questions(W2) if where == "Check yourself 4: PE(0) for d = 4"]
    assert [m.slip for m in pe0.mistakes] == ["forgetting that positions start at zero"]
    for module in LESSONS.values():
        for kind, where, question in page_questions(module):
            if kind.ask.__name__.endswith("_parameters"):
                assert "using the library's total" not in [m.slip for m in question.mistakes], where


def test_a_wrong_answer_a_mistake_gives_is_named_in_the_quiz_before_its_worked_steps():
    """A listed mistake in the page's words; a slip the page does not list, as a slip, with the page's rule."""
    place = next(place for place, kind in enumerate(W2.KINDS) if kind.ask.__name__ == "blocked_cells")
    question = drawn_at("week2/21_check_yourself", place, 6)
    by_slip = {m.slip: m for m in question.mistakes}
    T = question.numbers["T"]
    for typed, said in ((T * T, "not right. That is what blocking all T^2 cells gives: a slip. The page's rule: "
                                "\"For the writer, scores toward later words are forbidden.\" The worked answer:"),
                        (T * (T + 1) // 2, "not right. That is what blocking the diagonal too gives, one of the page's "
                                           "mistakes: \"'The mask removes the diagonal.' No: the diagonal is the "
                                           "current input, already a previous target.\" The worked answer:")):
        transcript = " ".join(quizzed(W2, [str(typed), "q"], "--seed", "6", "--topic", "2").split())
        assert f"your answer: {typed} {said} row 1 sees only itself" in transcript, transcript
    assert set(by_slip) == {"blocking all T^2 cells", "blocking the diagonal too"}


def test_a_mistake_worked_the_pages_way_at_3_decimals_is_named_as_the_right_answer_so_worked_is_right():
    """Seed 23's one query: the keys summed with the weights as the page writes them, [0.503, 0.248, 0.248],
    give [-0.255, -0.751]; exactly, [-0.2552, -0.7518]. Both are named; the answer is right either way."""
    place = next(place for place, kind in enumerate(W1.KINDS) if kind.ask.__name__ == "weighted_values")
    question = drawn_at("week1/18_check_yourself", place, 23)
    assert question.numbers == {"q": [-1, 1], "K": [[-1, -1], [1, 0], [0, -1]], "V": [[2, 3], [1, 1], [3, 2]]}
    assert "weights: softmax over the 3 keys = [0.5035, 0.2483, 0.2483]" in quiz.worked(question)
    for typed in ("[-0.255, -0.751]", "[-0.255, -0.752]"):
        ok, named = quiz.mark(question, typed)
        assert not ok and [m.slip for m in named] == ["summing the keys instead of the values"], typed
    assert quiz.mark(question, "[1.998, 2.253]") == (True, []) and quiz.mark(question, "[2.000, 2.255]") == (True, [])


def test_a_count_slip_quotes_the_pages_rule_for_the_numbers_it_left_out():
    """Week 2's decoder count: leaving out LayerNorm's numbers quotes the page's three LayerNorms (6d), not its
    "With biases, ..." (a question may count no biases); leaving out the biases quotes "With biases, ..."."""
    kind = next(kind for kind in W2.KINDS if kind.ask.__name__ == "decoder_parameters")
    quoted = {}
    for convention in W2.CONVENTIONS:
        for m in quiz.asked(kind, {"d": 8, "f": 16, "layers": 1, "convention": convention}).mistakes:
            quoted.setdefault(m.slip, set()).add(m.page)
    assert quoted["leaving out LayerNorm's numbers"] == {"a decoder layer has ... three LayerNorms (6d)"}
    (biases,) = quoted["leaving out the biases"]
    assert biases.startswith("With biases, one full-width attention block has 4d^2+4d parameters")
    assert "LayerNorm" not in biases


# ---------------------------------------------------------------- reading the answers

@pytest.mark.parametrize(("reader", "texts", "value"), [
    (quiz.Count(), ["3,152,384", "3 152 384", "3152384", " 3,152,384 "], 3_152_384),
    (quiz.Shape(2), ["[3, 6]", "(3, 6)", "3 x 6", "3x6", "3 × 6", "3, 6"], [3, 6]),
    (quiz.Shape(2), ["[3 x 4]", "[3, 4]"], [3, 4]),  # (the ELI5 page's grid, [3 × 4], read too)
    (quiz.Vector(2, 3), ["[0.881, 0.119]", "(0.881, 0.119)", "0.881, 0.119", "0.881 0.119", "[0.8808, .1192]"],
     [0.8807970779778823, 0.11920292202211755]),
    (quiz.Vector(2, 0, rows=2), ["[[-1, -1], [1, 1]]", "-1 -1 1 1", "((-1, -1), (1, 1))"], [[-1, -1], [1, 1]]),
    (quiz.Decimals(2), ["1.93", "1.928", "1.9250", "1.9330", "193/100", "193 / 100"], 1.9280551601516338),
    (quiz.Decimals(10), ["0.0001746928", "1.746928e-4"], 0.00017469281074217108),
    (quiz.Tokens(), ["[BOS, A, B]", "BOS A B", "[bos, a, b]", "<BOS>, A, B"], ["BOS", "A", "B"]),
    (quiz.Tokens(single=True), ["B", "b", "[B]"], "B"),
])
def test_each_form_the_lesson_promises_is_read(reader, texts, value):
    for text in texts:
        assert reader.same(reader.read(text), value), text


@pytest.mark.parametrize(("reader", "texts", "value"), [
    (quiz.Decimals(2), ["1.94", "1.9351", "2"], 1.9280551601516338),
    (quiz.Vector(2, 3), ["[0.882, 0.119]", "[0.119, 0.881]"], [0.8807970779778823, 0.11920292202211755]),
    (quiz.Shape(2), ["[6, 3]"], [3, 6]),
    (quiz.Tokens(), ["[BOS, A]", "[A, B, BOS]"], ["BOS", "A", "B"]),
])
def test_a_wrong_answer_is_read_and_wrong(reader, texts, value):
    for text in texts:
        assert not reader.same(reader.read(text), value), text


@pytest.mark.parametrize(("reader", "half_a_unit", "just_over"), [
    (quiz.Decimals(2), ["0.505", "0.495"], ["0.50501", "0.49499"]),
    (quiz.Vector(2, 3), ["[0.5005, 0.25]", "[0.4995, 0.2505]"], ["[0.50051, 0.25]", "[0.5, 0.24949]"]),
    (quiz.Vector(2, 0, rows=2), ["[[-1.5, -1], [1, 1]]"], ["[[-1.5001, -1], [1, 1]]"]),
])
def test_a_number_is_right_within_half_a_unit_of_the_last_decimal_asked_and_no_further(reader, half_a_unit,
                                                                                        just_over):
    answer = {quiz.Decimals: 0.5, quiz.Vector: [[-1, -1], [1, 1]] if getattr(reader, "rows", 0) else [0.5, 0.25]}
    value = answer[type(reader)]
    for text in half_a_unit:
        assert reader.same(reader.read(text), value), text
    for text in just_over:
        assert not reader.same(reader.read(text), value), text


@pytest.mark.parametrize(("reader", "texts", "form"), [
    (quiz.Count(), ["lots", "3.15M", "", "3,152,384.5", "-3"], "a whole number, like 3,152,384"),
    (quiz.Shape(2), ["[1, 2, 3]", "[512]", "[T, 512]", "three by six"], "a shape, like [3, 6]"),
    (quiz.Vector(2, 3), ["[0.881]", "[0.881, 0.119, 0]", "about a half", "[0.8, x]"], "2 numbers, like [0.100, 0.200]"),
    (quiz.Decimals(2), ["about 2", "1,93", "1.9.3", "1 93"], "a number, like 0.33"),
    (quiz.Tokens(), ["", "[BOS, A!]"], "a list of tokens, like [BOS, A, B]"),
    (quiz.Tokens(single=True), ["B C", ""], "one token, like B"),
])
def test_an_unreadable_answer_names_the_form_wanted(reader, texts, form):
    for text in texts:
        with pytest.raises(quiz.Unreadable) as said:
            reader.read(text)
        assert str(said.value) == form, text


def test_a_whole_answer_prints_bare_even_through_float_rounding_and_a_rounded_one_keeps_its_decimals():
    assert quiz.listed([[-1, -1], [0.9999999999999999, 1]], 4) == "[[-1, -1], [1, 1]]"
    assert quiz.number(1.0000000000000002, 3, whole=True) == "1" and quiz.number(-1e-17, 4, whole=True) == "0"
    assert quiz.number(0.99995, 4, whole=True) == "1.0000"  # cos(0.01), as the page's PE(1) writes it


def questions_and_retries(seeds):
    """(kind, question) for the page's numbers, each seed's first draws and the draws a missed kind comes back with."""
    for module in LESSONS.values():
        chosen = list(enumerate(module.KINDS))
        yield from ((kind, question) for kind, _, question in page_questions(module))
        for seed in seeds:
            first = quiz.seeded(chosen, seed)
            yield from first
            yield from quiz.seeded(chosen, seed, {kind.name: question for kind, question in first})


def test_an_answer_at_k_decimals_writes_every_number_at_k_unless_all_are_whole_or_the_page_writes_a_0():
    """Seed 23: [2.000, 2.255], not [2, 2.255] (the one query); its identity projections asked again:
    [[0.670, -1.000], [0.500, -1.000]]. A whole number is bare only when every number is ([0, 1, 0, 1], [5, 1]),
    or the decimals write every number exactly (the page's z = [0.5, 1]), or it is an exact 0 where the page
    writes one so (a masked weight, a centred value: [0.7311, 0.2689, 0, 0], [-1.2247, 0, 1.2247])."""
    seen = set()
    for kind, question in questions_and_retries(range(30)):
        reader = question.reader
        if not isinstance(reader, quiz.Vector) or reader.places == 0:
            continue
        shown = re.findall(quiz.NUMBER, reader.show(question.answer))
        values = quiz._flat(question.answer)
        exact = all(abs(x * 10 ** reader.places - round(x * 10 ** reader.places)) < 1e-9 for x in values)
        for text in shown:
            if "." in text:
                assert len(text.split(".")[1]) == reader.places, (kind.name, shown)
            else:
                seen.add(text)
                assert all("." not in t for t in shown) or exact or text == "0", (kind.name, shown)
    assert {"0", "1", "-1"} <= seen


def test_every_shape_is_printed_in_one_form():
    """[13, 64] and the ELI5 block's [4, 8] alike (its steps name the page's [4 x 8] grid once)."""
    forms = set()
    for kind, question in questions_and_retries(range(5)):
        if isinstance(question.reader, quiz.Shape):
            shown = question.reader.show(question.answer)
            assert re.fullmatch(r"\[\d+(, \d+)*\]", shown), (kind.name, shown)
            forms.add(kind.ask.__name__)
    assert "block_stage_shape" in forms


def test_the_eli5_blocks_question_names_its_page():
    asked = [question for kind, question in questions_and_retries(range(5)) if kind.section == "eli5"]
    assert len(asked) == 11 and all('the ELI5 page "One block: mix, then think"' in q.text for q in asked)


def test_the_wording_is_one_throughout():
    """W^O and W^Q as the pages' sections write them (not W_O); a count of one in the singular (B = 1 sentence,
    h = 1 head)."""
    for kind, question in questions_and_retries(range(20)):
        words = " ".join([kind.name, question.text, *question.steps, *(m.slip for m in question.mistakes)])
        assert "W_O" not in words and "W_Q" not in words, kind.name
        assert not re.search(r"(?<![\d.,])1 (sentences|heads|tokens|words|layers|keys|values|rows)\b", words), words
    for module in LESSONS.values():
        assert not [where for _, where, _ in page_questions(module) if "W_O" in where or "W_Q" in where]
    one = " ".join(W1.score_entries(1, 1, 21).text.split())
    assert "a batch of B = 1 sentence of T = 21 tokens, with h = 1 head." in one


@pytest.mark.parametrize("T", range(3, 13))
def test_a_masks_rows_are_each_written_or_the_dots_stand_for_rows_left_out(T):
    first = W2.blocked_cells(T).steps[0]
    rows = [int(r) for r in re.findall(r"row (\d+)", first)]
    assert rows[0] == 1 and rows[-1] == T and rows == sorted(rows)
    if "..." in first:
        before, after = (int(r) for r in re.search(r"row (\d+) blocks \d+, \.\.\., row (\d+)", first).groups())
        assert after - before > 1, first
    else:
        assert rows == list(range(1, T + 1)), first


def test_one_heads_table_names_no_batch_or_width_the_question_does_not_give():
    (question,) = [q for _, where, q in page_questions(W2) if where == "Check yourself 3: one head's weight table"]
    assert "[B, T, d]" not in quiz.worked(question) and "16" not in quiz.worked(question)
    (whole,) = [q for _, where, q in page_questions(W2) if where == "Section 3's shapes: the weights, all heads"]
    asked = " ".join(whole.text.split())
    assert "its axes in the order batch, heads, then the weight table's rows and columns" in asked
    ok, named = quiz.mark(whole, "[4, 2, 3, 5]")
    assert not ok and [m.slip for m in named] == ["putting the axes in another order"]


def test_a_shape_of_a_known_mistakes_length_is_read_and_named():
    """Section 1: [30, 8] is what attention keeps, not c; its two numbers are read, not refused."""
    (_, _, question), = [q for q in page_questions(W1) if q[0].ask.__name__ == "context_size"]
    ok, named = quiz.mark(question, "[30, 8]")
    assert not ok and [m.slip for m in named] == ["keeping every encoder state (what attention looks back at)"]
    with pytest.raises(quiz.Unreadable):
        quiz.mark(question, "[30, 8, 1]")


# ---------------------------------------------------------------- the quiz, in this process

def quizzed(module, answers, *argv):
    """The lesson's --quiz run here with `answers` as its standard input: what it printed."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(sys, "stdin", io.StringIO("".join(f"{a}\n" for a in answers)))
        module.main(["--quiz", *argv])
    return out.getvalue()


def printed_questions(text, quizzing):
    """The question texts, in order, of a printed run (`Q1. ...`, its text the lines indented two spaces)
    or of a quiz (`Question 1 of ...`, its text the lines before `your answer:`)."""
    heading = r"^(?:Once more, new numbers: question|Question) \d+ of" if quizzing else r"^Q\d+\. "
    found = []
    for block in re.split(heading, text, flags=re.M)[1:]:
        lines = block.splitlines()[1:]
        if quizzing:
            lines = lines[:next(i for i, line in enumerate(lines) if line.startswith("your answer:"))]
        found.append(" ".join(line.strip() for line in lines if re.match(r"^  \S", line)))
    return found


def answers_printed(module, *argv):
    out, _ = main_in_process(module, *argv)
    return re.findall(r"^    answer: (.*)$", out, flags=re.M), out


@pytest.mark.parametrize("module", LESSONS.values(), ids=LESSONS)
def test_quiz_seed_asks_what_seed_prints_in_that_order_and_right_answers_score_all(module):
    answers, printed = answers_printed(module, "--seed", "11")
    transcript = quizzed(module, answers, "--seed", "11")
    assert printed_questions(transcript, True) == printed_questions(printed, False)
    assert transcript.count("  right: ") == len(answers) and "not right" not in transcript
    assert transcript.endswith(SCORE.format(len(answers), len(answers)))


@pytest.mark.parametrize("module", LESSONS.values(), ids=LESSONS)
def test_seed_n_prints_the_numbers_drawn_from_n_and_another_seed_prints_others(module):
    """Kind k's numbers are the first draw of np.random.default_rng([N, k]), kept as drawn."""
    printed_by = {}
    for seed in (3, 11):
        _, out = answers_printed(module, "--seed", str(seed))
        printed_by[seed] = printed_questions(out, False)
        drawn_here = [quiz.asked(kind, kind.draw(quiz.np.random.default_rng([seed, place])))
                      for place, kind in enumerate(module.KINDS)]
        assert printed_by[seed] == [" ".join(question.text.split()) for question in drawn_here]
    assert sum(a != b for a, b in zip(printed_by[3], printed_by[11], strict=True)) >= len(module.KINDS) - 2


def test_the_help_says_what_each_way_of_running_asks_and_what_the_score_counts():
    """No flags: the page's questions, worked; --seed N: seed N's, worked; --quiz: asked, new numbers or seed N's."""
    for module in LESSONS.values():
        text = " ".join(module.LESSON.parser().format_help().split())
        assert ("--seed SEED print the questions of this seed, each worked (no flags: the page's own questions, "
                "worked)") in text
        assert ("--quiz ask the questions one at a time on standard input and mark each answer: new numbers, or with "
                "--seed, that seed's. A question you miss comes back once at the end, with new numbers. The score "
                "counts the answers right of the answers marked: a question asked again counts again, a skipped one "
                "does not. The page's own numbers are not asked: the page prints their answers") in text
        assert "unless --seed" not in text


def test_the_score_counts_answers_right_of_answers_marked_a_question_asked_again_again_a_skipped_one_not():
    """Section 5 at seed 5: a wrong answer, a skip, two right; the missed kind again, right: 3 of 4 answers right."""
    fifth = [(place, kind) for place, kind in enumerate(W1.KINDS) if kind.section == 5]
    first = quiz.seeded(fifth, 5)
    (_, again), = quiz.seeded(fifth, 5, {first[0][0].name: first[0][1]})
    shown = [q.reader.show(q.answer) for _, q in first]
    typed = [q.reader.show(off_by_one(q.reader, q.answer)) for _, q in first[:1]] + ["", *shown[2:]]
    transcript = quizzed(W1, [*typed, again.reader.show(again.answer)], "--seed", "5", "--topic", "5")
    assert transcript.count("  right: ") == 3 and transcript.count("  skipped; the worked answer:") == 1
    assert transcript.endswith("score: 3/4 answers right (a question asked again counts again; a skipped one does "
                               "not)\n")


def test_a_missed_kind_comes_back_once_with_new_numbers_before_the_end():
    chosen = [(place, kind) for place, kind in enumerate(W2.KINDS) if kind.section in (2, 5)]
    first = quiz.seeded(chosen, 4)
    wrong = [q.reader.show(off_by_one(q.reader, q.answer)) for _, q in first]
    missed = {kind.name: q for kind, q in first}
    again = [q.reader.show(off_by_one(q.reader, q.answer)) for _, q in quiz.seeded(chosen, 4, missed)]
    transcript = quizzed(W2, wrong + again, "--seed", "4", "--topic", "2", "--topic", "5")
    asked = printed_questions(transcript, True)
    assert len(asked) == 2 * len(chosen) and transcript.count("Once more, new numbers: question") == len(chosen)
    assert all(first != later for first, later in zip(asked[:len(chosen)], asked[len(chosen):], strict=True))
    assert transcript.endswith(SCORE.format(0, 2 * len(chosen)))  # each came back once, and no more


def test_wrong_answers_are_marked_with_the_worked_steps_and_score_0():
    answers, _ = answers_printed(W1, "--seed", "2", "--topic", "7")
    wrong = [str(int(a.replace(",", "")) + 1) for a in answers]
    transcript = quizzed(W1, wrong + wrong, "--seed", "2", "--topic", "7")
    assert transcript.count("not right") == 2 * len(answers) and transcript.count("    answer: ") == 2 * len(answers)
    assert transcript.endswith(SCORE.format(0, 2 * len(answers)))


def test_unreadable_answers_are_asked_again_and_not_counted():
    answers, _ = answers_printed(W2, "--seed", "3", "--topic", "3")  # the shape of the cross-attention weights
    (_, question), = quiz.seeded([(4, W2.KINDS[4])], 3)
    transcript = quizzed(W2, ["[3, 6, 1]", "three by six", answers[0]], "--seed", "3", "--topic", "3")
    assert transcript.count("your answer: ") == 3
    assert re.findall(r"^  write (.*)$", transcript, flags=re.M) == [question.reader.form] * 2
    assert transcript.endswith(SCORE.format(1, 1))
    counted = quizzed(W1, ["lots", "3,152,384", ""], "--seed", "2", "--topic", "7")
    assert "  write a whole number, like 3,152,384\n" in counted and SCORE.format(0, 1) in counted


def test_a_blank_line_skips_showing_the_worked_answer_and_the_end_of_the_input_gives_the_score_so_far():
    answers, _ = answers_printed(W2, "--seed", "1")
    transcript = quizzed(W2, ["", ""], "--seed", "1")
    assert transcript.count("  skipped; the worked answer:\n") == 2
    assert [f"    answer: {a}" for a in answers[:2]] == re.findall(r"^    answer: .*$", transcript, flags=re.M)
    assert transcript.endswith("your answer: \n" + SCORE.format(0, 0))


def test_ctrl_c_prints_the_score_so_far_then_lets_the_interrupt_go_on():
    """In this process: the score, then the KeyboardInterrupt goes on (to common's excepthook in a
    terminal, which says `stopped`: test_ctrl_c_in_a_real_terminal_..., below)."""
    answers, _ = answers_printed(W2, "--seed", "5")
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt), contextlib.redirect_stdout(out):
        with pytest.MonkeyPatch.context() as patch:
            calls = iter([answers[0], answers[1]])

            def typed(prompt=""):
                print(prompt, end="")
                try:
                    return next(calls)
                except StopIteration:
                    raise KeyboardInterrupt from None

            patch.setattr(builtins, "input", typed)
            W2.main(["--quiz", "--seed", "5"])
    assert out.getvalue().endswith("your answer: \n" + SCORE.format(2, 2))


def test_a_front_end_without_input_gets_one_line_instead_of_a_traceback():
    class StdinNotImplementedError(NotImplementedError):  # ipykernel's, by name
        pass

    def no_input(prompt=""):
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(builtins, "input", no_input)
        W1.main(["--quiz", "--seed", "1"])
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("This notebook's front end cannot send typed answers") and "--quiz" in last
    with pytest.raises(RuntimeError), pytest.MonkeyPatch.context() as patch:  # any other error is not swallowed
        patch.setattr(builtins, "input", lambda prompt="": (_ for _ in ()).throw(RuntimeError("other")))
        W1.main(["--quiz", "--seed", "1"])


# ---------------------------------------------------------------- every record can turn

def outcomes(module, topic, **replace):
    _, records = main_in_process(module, "--topic", topic, **replace)
    return {name.split(": the worked steps")[0]: r["outcome"] for name, r in records.items()}


def wrong_nn(**classes):
    """torch.nn with some classes replaced, for the lessons that build torch's modules inline."""
    return SimpleNamespace(**{**vars(nn), **classes})


class HeadWidthOut(nn.Module):
    """A W_O that takes one head's width, not the concatenation's."""

    def __init__(self, d_model, h, bias=True):
        super().__init__()
        self.W_O = nn.Linear(d_model // h, d_model)


class AveragedHeads(nn.Module):
    """Attention that hands back one table for all heads (averaged), [B, T, T]."""

    def __init__(self, d_model, h, bias=True):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, h, batch_first=True)

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        return self.mha(x_q, x_kv, x_kv)


def last_token_encoder(layer, N, **options):
    """An encoder that hands on only its last word."""
    return lambda x: nn.TransformerEncoder(layer, N, **options)(x)[:, -1:]


class FirstTokenLayer(nn.TransformerEncoderLayer):
    """An encoder layer that hands on only its first word."""

    def forward(self, src, *args, **kwargs):
        return super().forward(src, *args, **kwargs)[:, :1]


def with_out(d, h):
    """torch's attention whose W_O holds a d x d matrix per head (the belief: more heads, more weights)."""
    attn = nn.MultiheadAttention(d, h, device="meta")
    attn.out_proj = nn.Linear(d * h, d, device="meta")
    return attn


STAGES = W1.stages  # week1/07's, as the lesson imports it


def folded_twice(block, x):
    grids = STAGES(block, x)
    return {**grids, "x + FFN = block output": grids["FFN widened"]}  # the FFN never folds back


FLIPS = [  # (module, topic, the name replaced and its wrong version, the page questions whose record turns)
    (W1, "1", {"encoder_summary": W1.encoder_memory}, {"Section 1's tiny check: a 30-word sentence"}),
    (W1, "2", {"attention": lambda Q, K, V: ((Q @ K.transpose(-2, -1)) @ V, None)},  # the scores as weights
     {"Section 2's hand-checkable example and Check yourself 2"}),
    (W1, "2", {"additive_attention": lambda s, H, W_a, U_a, v_a: ((s @ W_a + H @ U_a) @ v_a, None, None)},  # no tanh
     {"Section 2, 2026 T1 Quiz 1, Q13: one additive score"}),
    (W1, "3", {"attention": lambda Q, K, V: (torch.softmax(Q @ K.transpose(-2, -1), -1) @ V, None)},
     {"Section 3's hand-checkable example"}),
    (W1, "3", {"attention": lambda Q, K, V: (torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1) @ K,
                                             None)},
     {"Section 3's notes example"}),  # (X's keys are its values: summing keys there changes nothing)
    (W1, "4", {"attention": lambda Q, K, V: (torch.softmax(Q @ K.transpose(-2, -1), -1) @ V,  # not scaled
                                             torch.softmax(Q @ K.transpose(-2, -1), -1))},
     {"Section 4's hand-checkable example"}),
    (W1, "4", {"attention": lambda Q, K, V: (V.sum(-2, keepdim=True), torch.softmax(  # the weights left out of A V
        Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1))},
     {"Section 4, 2025 T2 Quiz 1, Q146: a weighted sum of values"}),
    (W1, "5", {"join_heads": lambda Z: join_heads(Z[:, :2])},  # at most two heads glued
     {"Section 5, Check yourself 4 and 2026 T1 Quiz 2, Q2: the concatenation of eight heads of width 64"}),
    (W1, "5", {"MultiHeadAttention": HeadWidthOut},
     {"Section 5 and Check yourself 4: the shape of W^O for eight heads of width 64"}),
    (W1, "5", {"join_heads": lambda Z: torch.cat([Z[:, :1]] * Z.shape[1], 1).transpose(1, 2).flatten(2)},
     {"Section 5's W^O example"}),
    (W1, "5", {"nn": wrong_nn(MultiheadAttention=lambda d, h, **o: with_out(d, h))},
     {"Section 5, 2025 T3 Quiz 1, Q191: the weights in W^O"}),
    (W1, "6", {"nn": wrong_nn(TransformerEncoder=last_token_encoder)},
     {"Section 6's hand-checkable example and 2026 T1 Quiz 1, Q4"}),
    (W1, "6", {"nn": wrong_nn(TransformerEncoderLayer=FirstTokenLayer)},
     {"Section 6's hand-checkable example and 2026 T1 Quiz 1, Q4",
      "Section 6, 2026 T1 End Term FN, Q4: the output volume"}),
    (W1, "7", {"encoder_stack": lambda d, f, layers: nn.TransformerEncoderLayer(d, 1, f, bias=False, device="meta")},
     {"Section 7's worked example and Check yourself 5", "Section 7: six layers"}),
    (W1, "7", {"split_heads": lambda x, h: x[:, None].expand(-1, h, -1, -1)},
     {"Section 7's small counts: one head's W^Q"}),
    (W1, "7", {"MultiHeadAttention": AveragedHeads}, {"Section 7's small counts: score entries"}),
    (W1, "eli5", {"stages": folded_twice}, {"ELI5 Part 3: the shape never changes"}),
    (W2, "1", {"training_example": lambda target, bos: (list(target), list(target))},
     {"Section 1's table: the teacher-forced input", "Check yourself 1: the training input"}),
    (W2, "1", {"decoder_input": lambda gold, guesses, teacher_forced, bos: [bos, *guesses[:-1]]},
     {"Section 1's hand-check and Check yourself 1: step 3 after a wrong guess"}),
    (W2, "2", {"causal_mask": lambda T: torch.ones(T, T, dtype=torch.bool).triu()},
     {"Section 2: blocked cells for T = 4", "Check yourself 2: a 5-word causal mask",
      "Section 2's hand-check: a masked row"}),
    (W2, "3", {"MultiHeadAttention": lambda d, h: (lambda q, kv=None: (None, torch.zeros(  # rows from the keys
        q.shape[0], h, (q if kv is None else kv).shape[1], q.shape[1])))},
     {"Section 3's shapes: the weights, all heads", "Check yourself 3: one head's weight table"}),
    (W2, "4", {"n_params": lambda m: sum(p.numel() for name, p in m.named_parameters() if "bias" not in name)},
     {"Section 4: the output layer with a bias"}),
    (W2, "4", {"nn": wrong_nn(Linear=lambda d_in, d_out, bias=True, **o: nn.Linear(d_in, d_out, **o))},  # bias kept
     {"Section 4: the output layer's weights"}),
    (W2, "4", {"decoder_stack": lambda d, f, layers: W2.encoder_stack(d, f, layers)},
     {"Section 4's table: the tiny layer", "Section 4's table: d = 512, f = 2048", "Section 4: six such layers"}),
    (W2, "5", {"sinusoidal_pe": lambda n, d, dtype: sinusoidal_pe(n + 1, d, dtype)[1:]},  # positions from 1
     {"Section 5's hand-check: position 1", "Check yourself 4: PE(0) for d = 4"}),
    (W2, "6", {"nn": wrong_nn(LayerNorm=lambda d, **o: (lambda x: x - x.mean(-1, keepdim=True)))},
     {"Section 6's hand-check and Check yourself 5: LayerNorm", "Section 6: LayerNorm of the same rows"}),
    (W2, "6", {"nn": wrong_nn(BatchNorm1d=lambda d, **o: (lambda x: F.layer_norm(x, (d,))))},
     {"Section 6: BatchNorm of a batch"}),
    (W2, "7", {"smoothed_target": lambda V, gold, eps: W2.other_convention_target(V, gold, eps)},
     {"Section 7's hand-check: V = 5", "Section 7's run: V = 4"}),
    (W2, "7", {"lr": lambda step, d, warmup: min(step ** -0.5, step * warmup ** -1.5)},
     {f"Section 7's table: step {s}" for s in (1, 1000, 4000, 8000)}),
]


@pytest.mark.parametrize(("module", "topic", "replace", "turned"), FLIPS,
                         ids=[f"{'w1' if m is W1 else 'w2'}-{t}-{next(iter(r))}" for m, t, r, _ in FLIPS])
def test_a_wrong_implementation_turns_the_records_of_the_questions_it_computes(module, topic, replace, turned):
    as_written = outcomes(module, topic)
    assert set(as_written.values()) == {UPHOLDS}
    wrong = outcomes(module, topic, **replace)
    assert {where for where, outcome in wrong.items() if outcome == CONTRADICTS} == turned


def test_every_page_record_is_turned_by_some_wrong_implementation():
    records = {where for module in LESSONS.values() for _, where, _ in page_questions(module)}
    assert set().union(*(turned for *_, turned in FLIPS)) == records


def test_the_verdict_line_says_not_as_the_page_says_when_a_record_turns(capsys):
    out, _ = main_in_process(W2, "--topic", "2", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool).triu())
    assert "(0 of 3 questions): NOT AS THE PAGE SAYS" in out


# ---------------------------------------------------------------- the golden output, and real processes

@pytest.mark.parametrize("name", LESSONS)
def test_the_golden_output_holds_every_page_answer(name):
    golden = run_all.golden_path(name).read_text(encoding="utf-8")
    assert comparing.quotes_missing(name, golden) == []
    for answer in PAGE_ANSWERS[LESSONS[name]]:
        assert f"    answer: {answer}\n" in golden


def started(name, *argv, answers=None):
    """A real `python lesson --quiz ...`: its standard input a file of `answers`, one a line (as a
    learner's typing piped in), or a pipe left open (a terminal waiting for the learner)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    typed = subprocess.PIPE
    if answers is not None:
        typed = tempfile.TemporaryFile()
        typed.write("".join(f"{a}\n" for a in answers).encode())
        typed.seek(0)
    return subprocess.Popen([sys.executable, str(SCRIPTS[name]), "--quiz", *argv], stdin=typed,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


END_TO_END = ("test_right_answers_on_stdin_score_all",
              "test_wrong_and_unreadable_answers_then_q_print_the_score_then_stopped",
              "test_ctrl_c_in_a_real_terminal_process_prints_the_score_then_stopped")


def foreground(ioctl, make_controlling):
    """In the child, before the quiz starts: what a shell does for a command it runs in the foreground
    of a terminal. Ctrl-C takes its default action again (a non-interactive shell's `make test &`
    hands everything it starts SIGINT ignored, and Python then leaves it ignored), and the terminal
    becomes the child's own, so that the terminal's Ctrl-C reaches it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ioctl(0, make_controlling, 0)


def on_a_terminal(name, *argv):
    """A real `python lesson --quiz ...` whose standard input, output and error are a pseudo-terminal, its
    controlling terminal: input() reads as it reads a learner's typing, and the byte Ctrl-C sends is the
    terminal's own interrupt (SIGINT to the process). Returns (process, the terminal's other end)."""
    import fcntl
    import pty
    import termios

    leader, follower = pty.openpty()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, str(SCRIPTS[name]), "--quiz", *argv], stdin=follower, stdout=follower,
                               stderr=follower, env=env, start_new_session=True,
                               preexec_fn=lambda: foreground(fcntl.ioctl, termios.TIOCSCTTY))
    os.close(follower)
    return process, leader


class RealRuns:
    """The three end-to-end runs, started together in the background as this module's first test
    starts (each is mostly torch's import), read by the last three tests."""

    def __init__(self):
        right, _ = answers_printed(W2, "--seed", "11")
        fifth = [(place, kind) for place, kind in enumerate(W1.KINDS) if kind.section == 5]
        first = quiz.seeded(fifth, 5)
        missed = {kind.name: question for kind, question in first[:2]}  # the concatenation's width, W^O's shape
        again = [q.reader.show(q.answer) for _, q in quiz.seeded(fifth, 5, missed)]
        weights = first[3][1].reader.show(first[3][1].answer)
        wrong = ["lots", "7", "[1, 2, 3]", "[1, 1]", "", weights, again[0], "q", "never read"]
        self.right = len(right)
        self.runs = {"right": started("week2/21_check_yourself", "--seed", "11", answers=right),
                     "wrong then q": started("week1/18_check_yourself", "--seed", "5", "--topic", "5", answers=wrong)}
        self.seen = b""
        if sys.platform != "win32":  # (no pseudo-terminals there)
            self.runs["ctrl-c"], self.terminal = on_a_terminal("week2/21_check_yourself", "--seed", "1")
            self.pressed = threading.Thread(target=self.ctrl_c, daemon=True)
            self.pressed.start()

    def ctrl_c(self):
        """Once the quiz waits for an answer, the terminal's Ctrl-C; then all the terminal shows, to the end."""
        deadline = time.monotonic() + 60
        while b"your answer: " not in self.seen and time.monotonic() < deadline:
            self.seen += os.read(self.terminal, 4096)
        os.write(self.terminal, b"\x03")
        while True:
            try:
                chunk = os.read(self.terminal, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            self.seen += chunk
        os.close(self.terminal)

    def __getitem__(self, what):
        """(exit status, stdout, stderr) of one run, once it has ended (each is read by one test); on the
        terminal, all it showed (stdout and stderr), as stdout."""
        if what == "ctrl-c":
            self.pressed.join(timeout=120)
            try:
                self.runs[what].wait(timeout=60)
            except subprocess.TimeoutExpired:
                shown = self.seen.decode()[-1500:]
                pytest.fail(f"the quiz had not ended 60 s after Ctrl-C; the terminal showed:\n{shown}")
            return self.runs[what].returncode, self.seen.decode().replace("\r\n", "\n"), ""
        out, err = self.runs[what].communicate(timeout=60)
        return self.runs[what].returncode, out.decode(), err.decode()

    def stop(self):
        for process in self.runs.values():
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture(scope="module", autouse=True)
def processes(request):
    """Started only when an end-to-end test is among those selected."""
    runs = RealRuns() if any(item.name in END_TO_END for item in request.session.items) else None
    yield runs
    if runs is not None:
        runs.stop()


def test_right_answers_on_stdin_score_all(processes):
    (code, out, err), n = processes["right"], processes.right
    assert code == 0 and err == "" and "not right" not in out and out.endswith(SCORE.format(n, n))


def test_wrong_and_unreadable_answers_then_q_print_the_score_then_stopped(processes):
    code, out, err = processes["wrong then q"]
    assert code == 0 and err == "stopped\n"
    assert out.count("  write a whole number, like 3,152,384\n") == 1  # asked again, not counted
    assert out.count("  write a shape, like [3, 6]\n") == 1
    assert out.count("  skipped; the worked answer:\n") == 1 and out.count("  not right") == 2
    assert "Once more, new numbers: question 1 of 2" in out  # the two missed kinds come back
    assert out.count("  right: ") == 2 and out.endswith("your answer: q\n" + SCORE.format(2, 4))


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals on Windows")
def test_ctrl_c_in_a_real_terminal_process_prints_the_score_then_stopped(processes):
    code, shown, _ = processes["ctrl-c"]
    assert code in (130, -signal.SIGINT), shown
    assert re.search(r"your answer: (\^C)?\n" + re.escape(SCORE.format(0, 0)) + "stopped\n$", shown), shown[-200:]
