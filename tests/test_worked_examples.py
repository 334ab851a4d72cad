"""The worked-example scripts check something: each section runs the page's operation on the
page's inputs, so the same section fed a wrong operation prints DISAGREE; as written, every
value agrees and the default runs exit 0."""
import math

from common.records import CONTRADICTS, NOT_TESTED, UPHOLDS, collected
from common.report import Ledger

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import load_script

W1 = load_script("week1/06_worked_examples")
W2 = load_script("week2/09_worked_examples")


def run(section, capsys, **operations):
    """Run one section with the given operations; return {line label: its mark}, read from
    the section's records (a record's name is the section's title, ': ', the line's label)."""
    with collected() as got:
        section(Ledger(), **operations)
    capsys.readouterr()
    marks = {UPHOLDS: "agree", CONTRADICTS: "DISAGREE", NOT_TESTED: "PAGE DIFFERS"}
    return {entry["name"].split(": ", 1)[1]: marks[entry["outcome"]] for entry in got
            if entry.get("why") is None}


def disagreeing(marks):
    return {label for label, mark in marks.items() if mark == "DISAGREE"}


SECTIONS = [W1.section_1, W1.section_2, W1.section_3, W1.section_4, W1.section_5, W1.section_6,
            W1.section_7, W1.check_yourself, W2.section_1, W2.section_2, W2.section_3,
            W2.section_4, W2.section_5, W2.section_6, W2.section_7, W2.check_yourself]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: f"{s.__module__}.{s.__name__}")
def test_each_section_agrees_as_written(section, capsys):
    marks = run(section, capsys)
    assert marks and set(marks.values()) == {"agree"}


# ---------------------------------------------------------------- Week 1, fed wrong operations

def test_week1_a_summary_that_grows_with_the_sentence_disagrees(capsys):
    marks = run(W1.section_1, capsys, summary=W1.encoder_memory)  # every state, not the last one
    assert disagreeing(marks) == {"size of c for a 3-word vs a 30-word sentence (torch nn.RNN, width 8)"}


def test_week1_the_bottleneck_line_shows_attentions_memory_growing(capsys):
    W1.section_1(Ledger())
    assert "[3, 8] vs [30, 8], different" in capsys.readouterr().out


def test_week1_normalising_without_exp_disagrees(capsys):
    marks = run(W1.section_2, capsys, softmax=lambda e: e / e.sum())  # no exponential
    assert "alpha for scores e = [2, 0]" in disagreeing(marks)
    assert "context c_t = alpha_1 h_1 + alpha_2 h_2" in disagreeing(marks)


def unscaled_attention(Q, K, V, mask=None):
    A = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)  # the 1/sqrt(d_k) forgotten
    return A @ V, A


def softmax_over_queries(Q, K, V, mask=None):
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-2)  # each key's column sums to 1
    return A @ V, A


@pytest.mark.parametrize(("attention", "wrong_lines"), [
    (unscaled_attention, {"token 1's weights alpha", "z_1", "z_2 (by symmetry)"}),
    (softmax_over_queries, {"z = weighted sum of the values v_1 = [1, 0], v_2 = [0, 2]"}),
], ids=["no scaling", "softmax over the queries"])
def test_week1_wrong_attention_disagrees(attention, wrong_lines, capsys):
    """Section 3 runs common/blocks.py's attention (week1/01 teaches it): a wrong one in its
    place turns the lines computed from its output."""
    assert wrong_lines <= disagreeing(run(W1.section_3, capsys, attention=attention))


def test_week1_softmax_over_the_wrong_thing_disagrees(capsys):
    marks = run(W1.section_4, capsys, softmax=lambda x: np.exp(x) / np.exp(x).sum() ** 0.5)
    assert {"softmax of raw scores [8, 0]", "softmax of the scaled scores"} <= disagreeing(marks)


@pytest.mark.parametrize("section", [W1.section_5, W1.check_yourself], ids=["section 5", "check yourself"])
def test_week1_averaging_heads_instead_of_concatenating_disagrees(section, capsys):
    marks = run(section, capsys, concat=lambda Z: Z.mean(dim=1))  # [B, T, d_k], not [B, T, h d_k]
    assert any("concatenat" in label for label in disagreeing(marks))


def test_week1_the_W_O_examples_concatenation_goes_through_the_join(capsys):
    """Heads 1 and 2's outputs glued by the section's join: heads glued in the wrong order
    print [3, 4, 1, 2] (the W^O line beside it starts from the page's [1, 2, 3, 4])."""
    marks = run(W1.section_5, capsys, concat=lambda Z: W1.join_heads(Z.flip(1)))
    assert disagreeing(marks) == {"W^O example: concatenation"}


class LastWordOnly(torch.nn.TransformerEncoderLayer):
    """An encoder layer that hands on only its last word's vector (the seq2seq summary)."""

    def forward(self, src, *args, **kwargs):
        return super().forward(src, *args, **kwargs)[..., -1:, :]


def test_week1_a_layer_that_keeps_one_vector_disagrees(capsys):
    marks = run(W1.section_6, capsys, encoder_layer_type=LastWordOnly)
    assert disagreeing(marks) == set(marks)  # every shape, and 5 x 20 x 64 numbers (it keeps 5 x 1 x 64)


def test_week1_an_ffn_that_does_not_widen_disagrees(capsys):
    """f = d instead of 4d: the FFN's counts, the layer's, and "about twice" (now about half) turn."""
    marks = run(W1.section_7, capsys, make_layer=lambda d, f: W1.encoder_layer(d, d))
    ffn = {"FFN weights W_1, W_2 (torch's linear1, linear2)", "FFN biases b_1, b_2 (torch's)",
           "FFN 2 d f + f + d (torch's linear1 + linear2)", "torch TransformerEncoderLayer(512, 8, 2048) count",
           "course shorthand, in millions", "six independently parameterised layers (torch)",
           "FFN / attention (page: about twice)"}
    assert disagreeing(marks) == ffn


def test_week1_heads_that_each_read_all_of_W_Q_disagree(capsys):
    """One head's W_Q is counted through the split: a split that copies W^Q to every head
    (each head full width) counts d x d."""
    def full_width_heads(x, h):  # [B, T, d] -> [B, h, T, d]
        return x[:, None].expand(x.shape[0], h, *x.shape[1:])
    marks = run(W1.section_7, capsys, split=full_width_heads)
    assert disagreeing(marks) == {"one head's W_Q, d_model 512, d_k 64 (head 1's rows of torch's W^Q)"}


def test_week1_about_twice_is_judged_by_its_band(capsys):
    ledger = Ledger()
    ledger.section("7.")
    with collected() as got:
        for ratio in (1.9, 2.1, 1.89, 2.11):
            ledger.within("FFN / attention", ratio, W1.ABOUT_TWICE)
    assert [r["outcome"] for r in got] == [UPHOLDS, UPHOLDS, CONTRADICTS, CONTRADICTS]
    assert "FFN / attention: computed 1.89; judged 1.9 to 2.1; DISAGREE" in capsys.readouterr().out


def test_week1_judges_about_twice_by_week1_04s_band():
    """week1/06 keeps a copy of week1/04's band for the page's "about twice" (lessons do not import
    each other): the two are the same."""
    assert W1.ABOUT_TWICE == load_script("week1/04_encoder_parameter_count").ABOUT_TWICE


def test_week1_check_yourself_draws_week1_02s_numbers():
    """Check yourself 3 keeps a copy of week1/02's draws (lessons do not import each other):
    the same generator and order give the same scaled variances as week1/02's dot_products."""
    variance = load_script("week1/02_dot_product_variance")
    rng = np.random.default_rng(42)
    widths = (4, 16, 64, 256)
    theirs = [variance.dot_products(rng, 20_000, d_k).var() / d_k for d_k in widths]
    assert W1.scaled_variances(widths) == pytest.approx(theirs, rel=1e-12)
    assert W1.scaled_variances(widths, seed=7) != pytest.approx(theirs, rel=1e-3)  # the comparison can fail


# ---------------------------------------------------------------- Week 2, fed wrong operations

def no_shift(target, bos=0):
    return list(target), list(target)


def labels_shifted_like_the_input(target, bos=0):
    sequence = [bos, *target]
    return sequence[:-1], sequence[:-1]


FREE_INPUT = "free-running input: the decoder reads the guesses instead (rng(42) stand-ins, as in 08)"
STEP_3 = "hand-check: step 3 input under teacher forcing, step 2 guessed C"
STEP_3_FREE = "hand-check: step 3 input running free instead (the guess C, the page's premise)"


def test_week2_forgetting_the_shift_disagrees(capsys):
    def unshifted_input(gold, guesses, teacher_forced, bos=0):
        return no_shift(gold if teacher_forced else guesses, bos)[0]

    marks = run(W2.section_1, capsys, example=no_shift, decoder_input=unshifted_input)
    assert {"teacher-forced decoder input for gold [1, 2, 3, 4] (0 = start)", FREE_INPUT, STEP_3,
            STEP_3_FREE} <= disagreeing(marks)


@pytest.mark.parametrize(("fed", "wrong_lines", "wrong_check"), [
    ("guesses", {STEP_3}, {"1. step 3 input when step 2 was predicted as C"}),  # never teacher-forced
    ("gold", {FREE_INPUT, STEP_3_FREE}, set()),  # never running free
])
def test_week2_the_step_3_input_is_built_from_the_guess_and_turns_with_the_feeding(fed, wrong_lines, wrong_check,
                                                                                   capsys):
    """The hand-check's step-3 input is made from the gold words, the guesses and the way of
    feeding: a decoder always fed its guesses disagrees with the page's B, one always fed the
    gold with the free-running C (and the free-running input)."""
    def always(gold, guesses, teacher_forced, bos=0):
        return W2.training_example(guesses if fed == "guesses" else gold, bos)[0]

    assert disagreeing(run(W2.section_1, capsys, decoder_input=always)) == wrong_lines
    assert disagreeing(run(W2.check_yourself, capsys, decoder_input=always)) == wrong_check


def test_week2_labels_that_are_the_input_disagree(capsys):
    assert disagreeing(run(W2.section_1, capsys, example=labels_shifted_like_the_input)) == {"labels"}


def mask_with_the_diagonal(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


COUNT = "blocked cells for T = 4 (the causal mask, True = blocked)"


@pytest.mark.parametrize(("mask", "wrong_lines"), [
    (mask_with_the_diagonal, {COUNT, "blocked cells on the diagonal",
                              "the page's scores [2, 1, 5, 3] with query 2's mask", "softmax of the masked row"}),
    (lambda T: torch.zeros(T, T, dtype=torch.bool), {COUNT, "the page's scores [2, 1, 5, 3] with query 2's mask",
                                                     "softmax of the masked row"}),
], ids=["diagonal blocked", "no mask"])
def test_week2_a_wrong_mask_disagrees(mask, wrong_lines, capsys):
    assert wrong_lines <= disagreeing(run(W2.section_2, capsys, causal_mask=mask))
    assert "2. blocked cells in a 5-word causal mask" in disagreeing(run(W2.check_yourself, capsys, causal_mask=mask))


def test_week2_a_count_without_the_third_layernorm_disagrees(capsys):
    """Section 4's counts go through decoder_counts and n_params, which a test can replace."""
    def two_norms(d, f, h):
        (attention, ffn, norms, total), layer = W2.decoder_counts(d, f, h)
        return (attention, ffn, norms - W2.n_params(layer.norm3), total), layer

    assert disagreeing(run(W2.section_4, capsys, decoder_counts=two_norms)) == {
        "d=4, f=8: 3 LayerNorms (torch's norm1..norm3)", "d=512, f=2048: 3 LayerNorms (torch's norm1..norm3)"}


def test_week2_a_count_that_leaves_out_the_biases_disagrees(capsys):
    def weights_only(module):
        return sum(p.numel() for name, p in module.named_parameters() if not name.endswith("bias"))

    assert disagreeing(run(W2.section_4, capsys, n_params=weights_only)) == {
        "output layer with a bias (torch nn.Linear)", "six decoder layers (torch)",
        "one layer in millions (course: about 4M)"}


def test_week2_layer_norm_by_hand_is_torchs_with_eps_0():
    """Section 6's layer_norm (NumPy, eps = 0) is torch.nn.functional.layer_norm with eps = 0,
    on the page's rows and on random ones; with torch's default eps 1e-5 they part (so the
    comparison can tell an eps apart)."""
    rows = [np.array([1.0, 2.0, 3.0]), np.array([[1.0, 2.0], [3.0, 4.0]]),
            np.random.default_rng(0).standard_normal((5, 7))]
    for x in rows:
        theirs = F.layer_norm(torch.tensor(x), x.shape[-1:], eps=0.0).numpy()
        assert np.abs(W2.layer_norm(x) - theirs).max() < 1e-12
    x = rows[-1]
    assert np.abs(W2.layer_norm(x) - F.layer_norm(torch.tensor(x), x.shape[-1:], eps=1e-5).numpy()).max() > 1e-6


def test_week2_queries_from_the_encoder_disagree(capsys):
    marks = run(W2.section_3, capsys, cross_attention=lambda T, S: W2.cross_attention(S, T))
    assert disagreeing(marks) == {"weight table for 3 target and 5 source words (torch)"}


def test_week2_cos_before_sin_disagrees(capsys):
    def swapped(max_len, d, dtype):  # each (sin, cos) pair written (cos, sin)
        return W2.sinusoidal_pe(max_len, d, dtype).reshape(max_len, d // 2, 2).flip(-1).reshape(max_len, d)
    assert {"PE(0)", "PE(1)"} <= disagreeing(run(W2.section_5, capsys, sinusoidal_pe=swapped))
    assert disagreeing(run(W2.check_yourself, capsys, sinusoidal_pe=swapped)) == {"4. PE(0) for d = 4"}


def test_week2_normalising_the_wrong_axis_disagrees(capsys):
    marks = run(W2.section_6, capsys, layer_norm=lambda x: (x - x.mean(0)) / x.std(0),  # over the batch
                batch_norm=W2.layer_norm)  # over the features
    assert {"BatchNorm of [[1, 2], [3, 4]], row 1 (torch)", "LayerNorm of the same rows, row 1"} <= disagreeing(marks)


def test_week2_the_other_smoothing_convention_disagrees(capsys):
    marks = run(W2.section_7, capsys, smoothed_target=W2.other_convention_target)
    assert {"V = 5, gold 3rd, eps = 0.1: target", "V = 4, gold index 2: target"} <= disagreeing(marks)


def test_week2_a_schedule_decaying_like_one_over_step_disagrees(capsys):
    def wrong_lr(step, d, warmup=4000):
        return d ** -0.5 * min(warmup / step, step / warmup) * warmup ** -0.5
    marks = run(W2.section_7, capsys, lr=wrong_lr)
    assert "lr(8000) / lr(4000) (page: sqrt(4000/8000) = 1/sqrt(2) of the peak)" in disagreeing(marks)
    assert "lr at step 4000, d = 512" not in disagreeing(marks)  # same peak: only the decay is wrong


def test_week2_a_ratio_is_written_as_the_page_does_only_when_it_is_one():
    assert W2.as_page_writes(1 / math.sqrt(2)) == "1/sqrt(2)"
    assert W2.as_page_writes(0.5) == "0.5000000000"


# ---------------------------------------------------------------- the default runs

@pytest.mark.parametrize("name", ["week1/06_worked_examples", "week2/09_worked_examples"])
def test_default_run_agrees_everywhere(outputs, name):
    result = outputs[name]
    assert result.returncode == 0, result.stderr
    assert "DISAGREE" not in result.stdout
    assert "; disagree: 0;" in result.stdout.splitlines()[-2]
    assert all(entry["outcome"] != CONTRADICTS for entry in result.records)
