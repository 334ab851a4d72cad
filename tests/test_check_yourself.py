"""week1/18 and week2/21, Check yourself: the page's numbers give the page's answers; over many
seeds each answer equals a computation of its own here (a torch module's count, torch's norms,
a hand loop); each named mistake is recognised and a wrong answer that matches none is not
named; the answers are read in every form the lesson promises, and an unreadable one is asked
again, not counted; every record turns when a wrong implementation goes through the lesson's
code. End to end, in real processes fed on stdin: right answers score N/N, wrong ones 0, `q`
and Ctrl-C end with the score so far, then `stopped`."""
import builtins
import contextlib
import functools
import io
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
from fractions import Fraction
from types import SimpleNamespace

from common import quiz
from common.blocks import sinusoidal_pe
from common.printing import n_params

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import run_all
from tests.conftest import SCRIPTS, load_script, main_in_process

W1, W2 = load_script("week1/18_check_yourself"), load_script("week2/21_check_yourself")
LESSONS = {"week1/18_check_yourself": W1, "week2/21_check_yourself": W2}
KINDS = [(module, place, kind) for module in LESSONS.values() for place, kind in enumerate(module.KINDS)]
SEEDS = range(20)  # per kind: a few milliseconds each
UPHOLDS, CONTRADICTS = "upholds the page", "contradicts the page"

# The page's answers, as the page writes them (and the quiz shows them), question by question in page order.
PAGE_ANSWERS = {
    W1: ["[8]", "[0.881, 0.119]", "1.93", "[[0.670, 0.330], [0.330, 0.670]]", "[0.5, 1]", "[0.731, 0.269]", "1.00",
         "[512, 512]", "[4, 6]", "589,824", "[50, 512]", "6400", "3,152,384", "18,914,304", "32,768", "1,152",
         "[3 x 4]"],
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

def torch_count(model, convention):
    """The count the convention's words ask for, from torch's own module: its parameters sorted here by
    name and owner (a LayerNorm's gamma and beta; a bias; a weight matrix)."""
    biases = convention.startswith(("everything", "weights and biases"))
    norms = "gamma and beta" in convention
    total = 0
    for name, p in model.named_parameters():
        if isinstance(model.get_submodule(name.rpartition(".")[0]), nn.LayerNorm):
            total += p.numel() * norms
        else:
            total += p.numel() * (biases or not name.endswith("bias"))
    return total


def stack(layer, layers, kind):
    return layer if layers == 1 else kind(layer, layers)


def softmax_list(xs):
    e = [math.exp(x) for x in xs]
    return [x / sum(e) for x in e]


def sdpa(q, k, v):
    as64 = [torch.tensor(x, dtype=torch.float64) for x in (q, k, v)]
    return F.scaled_dot_product_attention(*as64).tolist()


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


def pe_by_exp_log(d, p):
    """The other way to write the speeds: div_term = exp(2i * -(ln 10000 / d))."""
    return [f(p * math.exp(2 * i * -(math.log(10000.0) / d))) for i in range(d // 2) for f in (math.sin, math.cos)]


INDEPENDENT = {
    "context_size": lambda T, n: list(nn.RNN(4, n)(torch.randn(T, 4))[1][0].shape),
    "bahdanau_context": lambda e, H: (torch.softmax(torch.tensor(e, dtype=torch.float64), 0)
                                      @ torch.tensor(H, dtype=torch.float64)).tolist(),
    "additive_score": lambda v_a, h, W_a=None, s=None, U_a=None, summed=None: sum(
        v * math.tanh(x) for v, x in zip(v_a, summed or [sum(W_a[i][j] * s[j] + U_a[i][j] * h[j] for j in range(2))
                                                         for i in range(2)], strict=True)),
    "identity_self_attention": lambda X: sdpa(X, X, X),
    "weighted_values": lambda q, K, V: sdpa([q], K, V)[0],
    "scaled_softmax": lambda d_k, raw: softmax_list([x / math.sqrt(d_k) for x in raw]),
    "first_element": lambda alpha, V: float(sum(Fraction(str(a)) * v[0] for a, v in zip(alpha, V, strict=True))),
    "output_projection": lambda h, d_k: list(nn.MultiheadAttention(h * d_k, h, device="meta").out_proj.weight.T.shape),
    "mixed_heads": lambda heads, W_O: (torch.tensor(heads[0] + heads[1], dtype=torch.float64)
                                       @ torch.tensor(W_O, dtype=torch.float64)).tolist(),
    "output_weights": lambda d_model, h: nn.Linear(d_model, d_model, bias=False, device="meta").weight.numel(),
    "stack_output_shape": lambda T, d, f, N: [T, d],
    "output_volume": lambda B, T, d: B * T * d,
    "encoder_parameters": lambda d, f, layers, convention: torch_count(
        stack(nn.TransformerEncoderLayer(d, 1, f, device="meta"), layers,
              lambda layer, n: nn.TransformerEncoder(layer, n, enable_nested_tensor=False)), convention),
    "head_query_weights": lambda d_model, h: d_model * d_model // h,
    "score_entries": lambda B, h, T: nn.MultiheadAttention(4 * h, h, batch_first=True)(
        *[torch.randn(B, T, 4 * h)] * 3, average_attn_weights=False)[1].numel(),
    "block_stage_shape": lambda T, d, f, stage: [T, f] if stage == "FFN widened" else [T, d],
    "teacher_forced_input": lambda gold, bos: [bos, *gold[:-1]],
    "input_after_a_wrong_guess": lambda gold, wrong_step, guess: gold[wrong_step - 1],
    "blocked_cells": lambda T: sum(1 for i in range(T) for j in range(T) if j > i),
    "masked_row": lambda scores, t: softmax_list(scores[:t]) + [0.0] * (len(scores) - t),
    "cross_attention_table": lambda B, h, T, S: list(nn.MultiheadAttention(16, h, batch_first=True)(
        torch.randn(B, T, 16), *[torch.randn(B, S, 16)] * 2, average_attn_weights=False)[1].shape[
        0 if B * h > 1 else 2:]),
    "output_layer": lambda d, V, bias, tied: d * V + V * bias,
    "decoder_parameters": lambda d, f, layers, convention: torch_count(
        stack(nn.TransformerDecoderLayer(d, 1, f, device="meta"), layers, nn.TransformerDecoder), convention),
    "position_tag": lambda d, word: pe_by_exp_log(d, word - 1),
    "normalized": own_normalized,
    "smoothed": torch_target,
    "warmup_rates": lambda widths, step, w=4000: [d ** -0.5 * min(step ** -0.5, step * w ** -1.5) for d in widths],
}


def test_every_kind_has_its_own_computation_here():
    assert sorted(INDEPENDENT) == sorted(kind.ask.__name__ for _, _, kind in KINDS)


@pytest.mark.parametrize(("module", "place", "kind"), KINDS, ids=[k.ask.__name__ for _, _, k in KINDS])
def test_over_many_seeds_each_answer_is_what_another_computation_gives(module, place, kind):
    for seed in SEEDS:
        question = drawn(place, kind, seed)
        expected = INDEPENDENT[kind.ask.__name__](**question.numbers)
        assert question.reader.same(question.answer, expected), (seed, question.numbers, question.answer, expected)
        assert question.reader.same(question.reached, question.answer), (seed, "the worked steps reach another value")
        ok, _ = quiz.mark(question, question.reader.show(question.answer))  # the `answer:` line, typed back
        assert ok, (seed, question.reader.show(question.answer))


def test_the_count_helper_here_counts_as_torch_does():
    layer = nn.TransformerDecoderLayer(4, 1, 8, device="meta")
    assert torch_count(layer, W2.EVERYTHING) == n_params(layer) == 260
    assert torch_count(layer, "weights only (no biases, no LayerNorm numbers)") == 2 * 4 * 16 + 2 * 4 * 8


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
        assert question.distinct(), (seed, question.numbers)
        for mistake in question.mistakes:
            ok, said = quiz.mark(question, reader.show(mistake.value))
            assert not ok and mistake in said, (seed, mistake.slip)
            named.add(mistake.slip)
        other = off_by_one(reader, question.answer)
        if not any(reader.same(other, m.value) for m in question.mistakes):
            ok, said = quiz.mark(question, reader.show(other))
            assert not ok and said == [], (seed, reader.show(other))
    listed = {m.slip for seed in SEEDS for m in drawn(place, kind, seed).mistakes}
    assert named == listed
    assert listed or kind.ask.__name__ == "first_element"  # (the page names no slip for Q146's form)


def test_a_mistake_that_gives_the_answer_itself_is_never_named():
    """At the page's numbers, identity projections over X = I make A symmetric: the softmax over the
    queries gives the answer itself, so typing the answer is right, and no mistake is named."""
    _, _, question = page_questions(W1)[3]
    over_queries = next(m for m in question.mistakes if "queries" in m.slip)
    assert question.reader.same(over_queries.value, question.answer)
    assert quiz.mark(question, "[[0.670, 0.330], [0.330, 0.670]]") == (True, [])
    assert quiz.mark(question, "[[0.731, 0.269], [0.269, 0.731]]")[1][0].slip == "not dividing by sqrt(d_k)"


# ---------------------------------------------------------------- reading the answers

@pytest.mark.parametrize(("reader", "texts", "value"), [
    (quiz.Count(), ["3,152,384", "3 152 384", "3152384", " 3,152,384 "], 3_152_384),
    (quiz.Shape(2), ["[3, 6]", "(3, 6)", "3 x 6", "3x6", "3 × 6", "3, 6"], [3, 6]),
    (quiz.Shape(2, times=True), ["[3 x 4]", "[3, 4]"], [3, 4]),
    (quiz.Vector(2, 3), ["[0.881, 0.119]", "(0.881, 0.119)", "0.881, 0.119", "0.881 0.119", "[0.8808, .1192]"],
     [0.8807970779778823, 0.11920292202211755]),
    (quiz.Vector(2, 0, rows=2), ["[[-1, -1], [1, 1]]", "-1 -1 1 1", "((-1, -1), (1, 1))"], [[-1, -1], [1, 1]]),
    (quiz.Decimals(2), ["1.93", "1.928", "1.9250", "1.9330", "193/100"], 1.9280551601516338),
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


@pytest.mark.parametrize(("reader", "texts", "form"), [
    (quiz.Count(), ["lots", "3.15M", "", "3,152,384.5", "-3"], "a whole number, like 3,152,384"),
    (quiz.Shape(2), ["[1, 2, 3]", "[512]", "[T, 512]", "three by six"], "a shape, like [3, 6]"),
    (quiz.Vector(2, 3), ["[0.881]", "[0.881, 0.119, 0]", "about a half", "[0.8, x]"], "2 numbers, like [0.100, 0.200]"),
    (quiz.Decimals(2), ["about 2", "1,93", "1.9.3"], "a number, like 0.33"),
    (quiz.Tokens(), ["", "[BOS, A!]"], "a list of tokens, like [BOS, A, B]"),
    (quiz.Tokens(single=True), ["B C", ""], "one token, like B"),
])
def test_an_unreadable_answer_names_the_form_wanted(reader, texts, form):
    for text in texts:
        with pytest.raises(quiz.Unreadable) as said:
            reader.read(text)
        assert str(said.value) == form, text


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
    assert transcript.endswith(f"score: {len(answers)}/{len(answers)}\n")


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
    assert transcript.endswith(f"score: 0/{2 * len(chosen)}\n")  # each came back once, and no more


def test_wrong_answers_are_marked_with_the_worked_steps_and_score_0():
    answers, _ = answers_printed(W1, "--seed", "2", "--topic", "7")
    wrong = [str(int(a.replace(",", "")) + 1) for a in answers]
    transcript = quizzed(W1, wrong + wrong, "--seed", "2", "--topic", "7")
    assert transcript.count("not right") == 2 * len(answers) and transcript.count("    answer: ") == 2 * len(answers)
    assert transcript.endswith(f"score: 0/{2 * len(answers)}\n")


def test_unreadable_answers_are_asked_again_and_not_counted():
    answers, _ = answers_printed(W2, "--seed", "3", "--topic", "3")  # the shape of the cross-attention weights
    (_, question), = quiz.seeded([(4, W2.KINDS[4])], 3)
    transcript = quizzed(W2, ["[3, 6, 1]", "three by six", answers[0]], "--seed", "3", "--topic", "3")
    assert transcript.count("your answer: ") == 3
    assert re.findall(r"^  write (.*)$", transcript, flags=re.M) == [question.reader.form] * 2
    assert transcript.endswith("score: 1/1\n")
    counted = quizzed(W1, ["lots", "3,152,384", ""], "--seed", "2", "--topic", "7")
    assert "  write a whole number, like 3,152,384\n" in counted and "score: 0/1\n" in counted


def test_a_blank_line_skips_and_the_end_of_the_input_gives_the_score_so_far():
    transcript = quizzed(W2, ["", ""], "--seed", "1")
    assert transcript.count("  skipped") == 2 and transcript.endswith("your answer: \nscore: 0/0\n")


def test_ctrl_c_prints_the_score_so_far_and_lets_run_say_stopped():
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
    assert out.getvalue().endswith("your answer: \nscore: 2/2\n")


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
    (W1, "2", {"softmax": lambda x: x / x.sum()}, {"Section 2's hand-checkable example and Check yourself 2"}),
    (W1, "2", {"additive": lambda v_a, inside: float(sum(v * x for v, x in zip(v_a, inside, strict=True)))},
     {"Section 2, 2026 T1 Quiz 1, Q13: one additive score"}),
    (W1, "3", {"attention": lambda Q, K, V: (torch.softmax(Q @ K.transpose(-2, -1), -1) @ V, None)},
     {"Section 3's hand-checkable example"}),
    (W1, "3", {"attention": lambda Q, K, V: (torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1) @ K,
                                             None)},
     {"Section 3's notes example"}),  # (X's keys are its values: summing keys there changes nothing)
    (W1, "4", {"softmax": lambda x: x / x.sum()}, {"Section 4's hand-checkable example"}),
    (W1, "4", {"weighted_sum": lambda alpha, V: W1.np.asarray(V, dtype=float).sum(0)},  # the weights left out
     {"Section 4, 2025 T2 Quiz 1, Q146: a weighted sum of values"}),
    (W1, "5", {"MultiHeadAttention": HeadWidthOut},
     {"Section 5, Check yourself 4 and 2026 T1 Quiz 2, Q2: eight heads of width 64"}),
    (W1, "5", {"join_heads": lambda Z: torch.cat([Z[:, :1]] * Z.shape[1], 1).transpose(1, 2).flatten(2)},
     {"Section 5's W^O example"}),
    (W1, "5", {"nn": wrong_nn(MultiheadAttention=lambda d, h, **o: with_out(d, h))},
     {"Section 5, 2025 T3 Quiz 1, Q191: the weights in W_O"}),
    (W1, "6", {"nn": wrong_nn(TransformerEncoder=last_token_encoder)},
     {"Section 6's hand-checkable example and 2026 T1 Quiz 1, Q4"}),
    (W1, "6", {"nn": wrong_nn(TransformerEncoderLayer=FirstTokenLayer)},
     {"Section 6's hand-checkable example and 2026 T1 Quiz 1, Q4",
      "Section 6, 2026 T1 End Term FN, Q4: the output volume"}),
    (W1, "7", {"encoder_stack": lambda d, f, layers: nn.TransformerEncoderLayer(d, 1, f, bias=False, device="meta")},
     {"Section 7's worked example and Check yourself 5", "Section 7: six layers"}),
    (W1, "7", {"split_heads": lambda x, h: x[:, None].expand(-1, h, -1, -1)},
     {"Section 7's small counts: one head's W_Q"}),
    (W1, "7", {"MultiHeadAttention": AveragedHeads}, {"Section 7's small counts: score entries"}),
    (W1, "eli5", {"stages": folded_twice}, {"ELI5 Part 3: the shape never changes"}),
    (W2, "1", {"training_example": lambda target, bos: (list(target), list(target))},
     {"Section 1's table: the teacher-forced input", "Check yourself 1: the training input"}),
    (W2, "1", {"decoder_input": lambda gold, guesses, teacher_forced, bos: [bos, *guesses[:-1]]},
     {"Section 1's hand-check and Check yourself 1: step 3 after a wrong guess"}),
    (W2, "2", {"causal_mask": lambda T: torch.ones(T, T, dtype=torch.bool).triu()},
     {"Section 2: blocked cells for T = 4", "Check yourself 2: a 5-word causal mask",
      "Section 2's hand-check: a masked row"}),
    (W2, "3", {"MultiHeadAttention": lambda d, h: (lambda q, kv: (None, torch.zeros(q.shape[0], h, kv.shape[1],
                                                                                    q.shape[1])))},
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
    assert run_all.quotes_missing(name, golden) == []
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


class RealRuns:
    """The three end-to-end runs, started together in the background as this module's first test
    starts (each is mostly torch's import), read by the last three tests."""

    def __init__(self):
        right, _ = answers_printed(W2, "--seed", "11")
        fifth = [(place, kind) for place, kind in enumerate(W1.KINDS) if kind.section == 5]
        first = quiz.seeded(fifth, 5)
        missed = {kind.name: question for kind, question in first if kind.name != "two heads through W^O"}
        again = [q.reader.show(q.answer) for _, q in quiz.seeded(fifth, 5, missed)]
        wrong = ["lots", "[1, 2, 3]", "[1, 1]", "", "7", again[0], "q", "never read"]
        self.right = len(right)
        self.runs = {"right": started("week2/21_check_yourself", "--seed", "11", answers=right),
                     "wrong then q": started("week1/18_check_yourself", "--seed", "5", "--topic", "5", answers=wrong),
                     "ctrl-c": started("week2/21_check_yourself", "--seed", "1")}
        self.seen = b""
        self.pressed = threading.Thread(target=self.ctrl_c, daemon=True)
        self.pressed.start()

    def ctrl_c(self):
        """Once the quiz waits for an answer, a terminal's Ctrl-C."""
        interrupted, deadline = self.runs["ctrl-c"], time.monotonic() + 60
        while b"your answer: " not in self.seen and time.monotonic() < deadline:
            self.seen += os.read(interrupted.stdout.fileno(), 4096)
        interrupted.send_signal(signal.SIGINT)
        interrupted.wait(timeout=60)

    def __getitem__(self, what):
        """(exit status, stdout, stderr) of one run, once it has ended (each is read by one test)."""
        if what == "ctrl-c":
            self.pressed.join()
        out, err = self.runs[what].communicate(timeout=60)
        return self.runs[what].returncode, (self.seen if what == "ctrl-c" else b"").decode() + out.decode(), \
            err.decode()

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
    assert code == 0 and err == "" and "not right" not in out and out.endswith(f"score: {n}/{n}\n")


def test_wrong_and_unreadable_answers_then_q_print_the_score_then_stopped(processes):
    code, out, err = processes["wrong then q"]
    assert code == 0 and err == "stopped\n"
    assert out.count("  write a shape, like [3, 6]\n") == 2  # asked again, not counted
    assert "  skipped\n" in out and out.count("  not right") == 2
    assert "Once more, new numbers: question 1 of 2" in out  # the two missed kinds come back
    assert "  right: " in out and out.endswith("your answer: q\nscore: 1/3\n")


def test_ctrl_c_in_a_real_terminal_process_prints_the_score_then_stopped(processes):
    code, out, err = processes["ctrl-c"]
    assert code in (130, -signal.SIGINT) and out.endswith("your answer: \nscore: 0/0\n") and err == "stopped\n"
