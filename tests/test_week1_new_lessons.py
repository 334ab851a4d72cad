"""Week 1's new lessons (10 to 14): their building blocks are the real thing, and every
verdict they print flips when a wrong implementation or the other world is fed through
the script's own code (main() run in-process with one function swapped)."""
import math
import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from check import comparing
from tests.conftest import load_script, main_in_process, main_outcomes


def run_main(monkeypatch, capsys, module, name, *argv):
    """Run the lesson's main() with these arguments; return what it printed. What it printed
    and what it recorded agree: some printed verdict is "NOT AS THE PAGE SAYS" exactly when
    some record contradicts the page, and a verdict is "not tested" only beside such a record."""
    from common.records import collected

    with collected() as records:
        module.main(list(argv))
    out = capsys.readouterr().out
    outcomes = {r["outcome"] for r in records}
    assert records and outcomes <= {"upholds the page", "contradicts the page", "not tested here"}
    assert ("contradicts the page" in outcomes) == any(v.startswith("Verdict: NOT AS THE PAGE SAYS")
                                                       for v in verdicts(out))
    assert ("not tested here" in outcomes) == any(v.startswith("Verdict: not tested") for v in verdicts(out))
    return out


def verdicts(out):
    return [line for line in out.splitlines() if line.startswith("Verdict:")]


def as_page(line):
    return line.startswith("Verdict: as the page says")


# ---------------------------------------------------------------- 10: the slow chain

SLOW_CHAIN = "week1/10_slow_chain_path_length"


def test_the_hand_written_rnn_is_torchs_rnn():
    m = load_script(SLOW_CHAIN)
    torch.manual_seed(0)
    rnn = nn.RNN(6, 6, bias=False, batch_first=True, dtype=torch.float64)
    X = torch.randn(3, 7, 6, dtype=torch.float64)
    expected, _ = rnn(X)  # [S, T, d]: the state after every word
    out = m.rnn_output(X, rnn.weight_ih_l0.T, rnn.weight_hh_l0.T)
    torch.testing.assert_close(out, expected[:, -1], rtol=0, atol=1e-12)


def test_the_hand_written_attention_is_sdpa_at_the_last_word():
    m = load_script(SLOW_CHAIN)
    torch.manual_seed(0)
    X, W_Q, W_K, W_V = (torch.randn(*s, dtype=torch.float64) for s in ((3, 7, 6), (6, 6), (6, 6), (6, 6)))
    expected = F.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)[:, -1]
    torch.testing.assert_close(m.attention_output(X, W_Q, W_K, W_V), expected, rtol=0, atol=1e-12)


def test_steps_are_counted_from_the_graph():
    m = load_script(SLOW_CHAIN)
    W = torch.eye(4, dtype=torch.float64)
    words = torch.randn(2, 9, 4, dtype=torch.float64)
    assert m.measure(lambda X: m.rnn_output(X, W, W), words)[0] == 9
    assert m.measure(lambda X: m.attention_output(X, W, W, W), words)[0] == 1
    assert m.measure(lambda X: X.sum(dim=1), words)[0] == 0  # no squashing function at all


def test_slow_chain_verdicts_as_the_page_says(monkeypatch, capsys, tmp_path):
    m = load_script(SLOW_CHAIN)
    out = run_main(monkeypatch, capsys, m, SLOW_CHAIN, "--sentences", "32", "--figure", str(tmp_path / "f.png"))
    assert [as_page(v) for v in verdicts(out)] == [True, True]


def test_attention_replaced_by_a_chain_flips_both_verdicts(monkeypatch, capsys, tmp_path):
    m = load_script(SLOW_CHAIN)
    monkeypatch.setattr(m, "attention_output", lambda X, W_Q, W_K, W_V: m.rnn_output(X, W_Q, W_K))
    out = run_main(monkeypatch, capsys, m, SLOW_CHAIN, "--sentences", "32", "--figure", str(tmp_path / "f.png"))
    assert [as_page(v) for v in verdicts(out)] == [False, False]
    assert "attention direct: False" in out


def test_an_rnn_that_does_not_fade_flips_the_fading_verdict(monkeypatch, capsys, tmp_path):
    m = load_script(SLOW_CHAIN)
    rnn = m.rnn_output  # identity recurrence, tiny inputs: tanh stays linear, nothing shrinks
    monkeypatch.setattr(m, "rnn_output", lambda X, W_xh, W_hh: rnn(X, 1e-3 * W_xh, torch.eye(len(W_hh),
                                                                                            dtype=X.dtype)))
    out = run_main(monkeypatch, capsys, m, SLOW_CHAIN, "--sentences", "32", "--figure", str(tmp_path / "f.png"))
    assert [as_page(v) for v in verdicts(out)] == [True, False]
    assert "RNN fades: False" in out


def test_the_e_notation_example_is_the_tables_own_smallest_size(monkeypatch, capsys, tmp_path):
    """The key to "1.5e-15" reads the run's smallest size: an RNN that does not fade has
    another one, and the line follows it (no copied number)."""
    m = load_script(SLOW_CHAIN)
    sizes = []
    measure = m.measure
    monkeypatch.setattr(m, "measure", lambda model, words: sizes.append(measure(model, words)) or sizes[-1])
    out = run_main(monkeypatch, capsys, m, SLOW_CHAIN, "--sentences", "32", "--rnn-gain", "2",
                   "--figure", str(tmp_path / "f.png"))
    smallest = min(size[:, 0].mean().item() for _, size in sizes)
    assert f"word 1 moves; {smallest:.1e} means {m.readable(smallest)})" in out
    assert "1.5e-15" not in out


# ---------------------------------------------------------------- 11: softmax saturation

SATURATION = "week1/11_softmax_saturation"


def test_softmax_gradient_size_matches_the_closed_form():
    """d softmax / d s = diag(p) - p p^T; all-equal scores give sqrt(T-1)/T, one-hot 0."""
    m = load_script(SATURATION)
    S = torch.randn(3, 5, 7, dtype=torch.float64)
    _, grad = m.saturation(S)
    p = torch.softmax(S, dim=-1)
    J = torch.diag_embed(p) - p[..., :, None] * p[..., None, :]  # [3, 5, 7, 7]
    assert grad == pytest.approx(J.pow(2).sum(dim=(-2, -1)).sqrt().mean().item(), abs=1e-12)
    assert m.saturation(torch.zeros(1, 2, 16, dtype=torch.float64)) == pytest.approx((1 / 16, math.sqrt(15) / 16))
    assert m.saturation(torch.tensor([[[1000.0, 0.0, 0.0]]], dtype=torch.float64))[1] == pytest.approx(0, abs=1e-12)


def saturation_verdicts(monkeypatch, capsys, tmp_path, scores=None):
    m = load_script(SATURATION)
    if scores:
        monkeypatch.setattr(m, "scores", scores)
    out = run_main(monkeypatch, capsys, m, SATURATION, "--sentences", "64", "--figure", str(tmp_path / "f.png"))
    return [as_page(v) for v in verdicts(out)]


def test_saturation_verdicts_as_the_page_says(monkeypatch, capsys, tmp_path):
    assert saturation_verdicts(monkeypatch, capsys, tmp_path) == [True, True]


@pytest.mark.parametrize(("wrong", "expected"), [
    (lambda Q, K, scaled: Q @ K.transpose(-2, -1), [True, False]),  # the 1/sqrt(d_k) forgotten
    (lambda Q, K, scaled: Q @ K.transpose(-2, -1) / Q.shape[-1], [False, False]),  # divided by d_k
    (lambda Q, K, scaled: Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), [False, True]),  # both scaled
    (lambda Q, K, scaled: Q @ K.transpose(-2, -1) * (1 / math.sqrt(Q.shape[-1]) if scaled else 1000),
     [False, True]),  # one-hot at every width: nothing turns as d_k grows
], ids=["scaling forgotten", "divided by d_k", "unscaled is scaled too", "one-hot from the start"])
def test_wrong_scores_flip_the_saturation_verdicts(monkeypatch, capsys, tmp_path, wrong, expected):
    assert saturation_verdicts(monkeypatch, capsys, tmp_path, wrong) == expected


def test_narrow_widths_leave_the_one_hot_claim_untested(monkeypatch, capsys):
    """The page: one-hot "as d_k grows". Widths up to 16 cannot test it, so no verdict either way."""
    out = run_main(monkeypatch, capsys, load_script(SATURATION), SATURATION, "--d-k", "4", "16", "--sentences", "64")
    first, second = verdicts(out)
    assert first.startswith("Verdict: not tested at these widths") and "NOT AS THE PAGE SAYS" not in out
    assert as_page(second)


# ---------------------------------------------------------------- 12: attention shapes

SHAPES = "week1/12_attention_shapes"


def test_shapes_verdict_as_the_page_says(monkeypatch, capsys):
    out = run_main(monkeypatch, capsys, load_script(SHAPES), SHAPES, "--d-k", "3", "--d-v", "7")
    assert "  Z [B, T, d_v]     = [2, 5, 7]" in out
    assert [as_page(v) for v in verdicts(out)] == [True]


def wrong_attention(mistake):
    def attention(X, W_Q, W_K, W_V):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        A = torch.softmax(scores, dim=-2 if mistake == "softmax over the queries" else -1)
        Z = A @ (K if mistake == "sum of the keys" else V)
        return {"Q": Q, "K": K, "V": V, "A": A, "Z": Z}
    return attention


@pytest.mark.parametrize("mistake", ["sum of the keys", "softmax over the queries"])
def test_a_wrong_attention_flips_the_shapes_verdict(monkeypatch, capsys, mistake):
    m = load_script(SHAPES)
    monkeypatch.setattr(m, "self_attention", wrong_attention(mistake))
    out = run_main(monkeypatch, capsys, m, SHAPES)
    assert [as_page(v) for v in verdicts(out)] == [False]


@pytest.mark.parametrize(("mistake", "expected"), [("sum of the keys", "upholds the page"),
                                                   ("softmax over the queries", "contradicts the page")])
def test_a_softmax_over_the_queries_flips_the_row_sum_line(mistake, expected):
    """The row-sum line's record: columns of A sum to 1 then, not its rows."""
    _, outcomes = main_outcomes(load_script(SHAPES), self_attention=wrong_attention(mistake))
    assert outcomes["every row of A sums to 1"] == expected


# ---------------------------------------------------------------- 13: the FFN needs its ReLU

FFN = "week1/13_ffn_needs_relu"


def ffn_verdicts(monkeypatch, capsys, **swaps):
    m = load_script(FFN)
    for name, value in swaps.items():
        monkeypatch.setattr(m, name, value)
    return [as_page(v) for v in verdicts(run_main(monkeypatch, capsys, m, FFN))]


def test_ffn_verdicts_as_the_page_says(monkeypatch, capsys):
    assert ffn_verdicts(monkeypatch, capsys) == [True, True]


def test_a_relu_in_both_worlds_flips_the_collapse_verdict(monkeypatch, capsys):
    worlds = {"without the ReLU": nn.ReLU, "with the ReLU": nn.ReLU}
    assert ffn_verdicts(monkeypatch, capsys, WORLDS=worlds) == [False, True]


def test_no_relu_in_either_world_flips_the_relu_verdict(monkeypatch, capsys):
    worlds = {"without the ReLU": nn.Identity, "with the ReLU": nn.Identity}
    assert ffn_verdicts(monkeypatch, capsys, WORLDS=worlds) == [True, False]


def test_a_wrong_product_bias_flips_the_collapse_verdict(monkeypatch, capsys):
    def wrong_collapse(first, second):  # b_1 + b_2 instead of b_1 W_2 + b_2
        return first.weight.T @ second.weight.T, first.bias[: second.out_features] + second.bias
    assert ffn_verdicts(monkeypatch, capsys, collapse=wrong_collapse)[0] is False


def test_best_linear_miss_is_zero_for_a_linear_map_and_one_for_noise():
    m = load_script(FFN)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(500, 3, generator=g, dtype=torch.float64)
    assert m.best_linear_miss(X, X @ torch.randn(3, 2, generator=g, dtype=torch.float64) + 5) < 1e-12
    assert m.best_linear_miss(X, torch.randn(500, 2, generator=g, dtype=torch.float64)) > 0.95


# ---------------------------------------------------------------- 14: parameters vs length

LENGTH = "week1/14_parameters_vs_length"
SMALL = ("--d-model", "64", "--d-ff", "256", "--heads", "4")


def length_verdicts(monkeypatch, capsys, **swaps):
    m = load_script(LENGTH)
    for name, value in swaps.items():
        monkeypatch.setattr(m, name, value)
    return [as_page(v) for v in verdicts(run_main(monkeypatch, capsys, m, LENGTH, *SMALL))]


def test_length_verdicts_as_the_page_says(monkeypatch, capsys):
    assert length_verdicts(monkeypatch, capsys) == [True, True]


@pytest.mark.parametrize("name", ["weights_only", "fully_counted"])
def test_a_wrong_count_formula_flips_the_count_verdict(monkeypatch, capsys, name):
    wrong = {"weights_only": lambda d, f: 3 * d * d + 2 * d * f,  # W^O forgotten
             "fully_counted": lambda d, f: 4 * d * d + 2 * d * f + f + 5 * d}  # LayerNorms forgotten
    assert length_verdicts(monkeypatch, capsys, **{name: wrong[name]}) == [False, True]


def test_a_layer_that_grows_with_the_sentence_flips_the_length_verdict(monkeypatch, capsys):
    m = load_script(LENGTH)
    by_hand = m.encoder_layer_by_hand

    def with_a_position_table(X, layer):  # a learned table with one row per word, made on demand
        B, T, d = X.shape
        layer.register_parameter(f"positions_{T}", nn.Parameter(torch.zeros(T, d, dtype=X.dtype)))
        return by_hand(X, layer)

    monkeypatch.setattr(m, "encoder_layer_by_hand", with_a_position_table)
    out = run_main(monkeypatch, capsys, m, LENGTH, *SMALL)
    assert [as_page(v) for v in verdicts(out)] == [True, False]
    assert "the same weights: False" in out


def test_a_layer_that_learns_from_each_sentence_flips_the_length_verdict(monkeypatch, capsys):
    """One layer runs on both sentences and its weights are compared with a copy taken before:
    a pass that writes into a weight as it reads a sentence (same names, same count) is caught."""
    m = load_script(LENGTH)
    by_hand = m.encoder_layer_by_hand

    def adapting(X, layer):
        layer.linear1.weight.add_(1e-6 * X.mean())  # nudged by every sentence it reads
        return by_hand(X, layer)

    monkeypatch.setattr(m, "encoder_layer_by_hand", adapting)
    out = run_main(monkeypatch, capsys, m, LENGTH, *SMALL)
    assert [as_page(v) for v in verdicts(out)] == [True, False]
    assert "the same weights: False; by hand = torch's layer: True" in out


def test_a_by_hand_layer_without_the_scaling_flips_the_length_verdict(monkeypatch, capsys):
    """The by-hand layer is held to torch's: its scores without the 1/sqrt(d_k) are caught."""
    import types

    m = load_script(LENGTH)
    monkeypatch.setattr(m, "math", types.SimpleNamespace(sqrt=lambda d_k: 1.0))  # Q K^T / 1
    out = run_main(monkeypatch, capsys, m, LENGTH, *SMALL)
    assert [as_page(v) for v in verdicts(out)] == [True, False]
    assert "the same weights: True; by hand = torch's layer: False; scores like T^2: True; the rest like T: True" in out


def test_attention_without_a_t_by_t_table_flips_the_growth_verdict(monkeypatch, capsys):
    m = load_script(LENGTH)
    by_hand = m.encoder_layer_by_hand

    def linear_attention_sizes(X, layer):  # holds K^T V [B, h, d_k, d_k] instead of [B, h, T, T]
        Y, acts = by_hand(X, layer)
        B, h, T, d_k = acts["heads"].shape
        acts["scores"] = acts["A"] = torch.zeros(B, h, d_k, d_k, dtype=X.dtype)
        return Y, acts

    monkeypatch.setattr(m, "encoder_layer_by_hand", linear_attention_sizes)
    out = run_main(monkeypatch, capsys, m, LENGTH, *SMALL)
    assert [as_page(v) for v in verdicts(out)] == [True, False]
    assert "scores like T^2: False" in out


def test_the_by_hand_layer_is_torchs_layer_at_other_sizes():
    m = load_script(LENGTH)
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(24, 3, 40, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    X = torch.randn(2, 11, 24, dtype=torch.float64)
    with torch.no_grad():
        out, acts = m.encoder_layer_by_hand(X, layer)
        torch.testing.assert_close(out, layer(X), rtol=0, atol=1e-12)
    assert acts["scores"].shape == (2, 3, 11, 11) and acts["hidden"].shape == (2, 11, 40)
    assert np.isclose(acts["A"].sum(-1), 1).all()


# ---------------------------------------------------------------- week1/04: every printed claim has a guard

def week1_04_outcomes(monkeypatch, *argv, **replace):
    from common.records import collected

    module = load_script("week1/04_encoder_parameter_count")
    for name, value in replace.items():
        monkeypatch.setattr(module, name, value)
    with collected() as got:
        module.main(list(argv))
    return {r["name"]: r["outcome"] for r in got}


def test_week1_04_upholds_every_claim_at_the_defaults(monkeypatch, capsys):
    assert set(week1_04_outcomes(monkeypatch).values()) == {"upholds the page"}


def test_a_stack_that_shares_one_layer_flips_the_own_weights_line(monkeypatch, capsys):
    """One layer six times (as in belief 15 of week1/08): the stack holds one layer's numbers."""
    module = load_script("week1/04_encoder_parameter_count")

    def one_layer_six_times(d, h, f, layers):
        return nn.ModuleList([nn.TransformerEncoderLayer(d, h, f, device="meta")] * layers)

    outcomes = week1_04_outcomes(monkeypatch, encoder_stack=one_layer_six_times)
    assert outcomes["every layer has its own weights"] == "contradicts the page"
    assert module.n_params(one_layer_six_times(512, 8, 2048, 6)) == 3_152_384


def test_a_count_that_grows_with_the_heads_flips_the_heads_line(monkeypatch, capsys):
    """A layer whose count moved with h (as if every head were full width) is caught."""
    module = load_script("week1/04_encoder_parameter_count")
    real = module.torch_count
    outcomes = week1_04_outcomes(monkeypatch, torch_count=lambda d, h, f: real(d, h, f) + (h - 1) * 3 * d * d)
    assert outcomes["the head count is not in the count"] == "contradicts the page"


def test_a_wrong_ffn_formula_flips_the_about_twice_line(monkeypatch, capsys):
    """One FFN matrix instead of two: the FFN holds about as much as attention, not twice."""
    outcomes = week1_04_outcomes(monkeypatch, encoder_layer_params=lambda d, f: (4 * d * d + 4 * d, d * f + f + d,
                                                                                4 * d))
    assert outcomes["the FFN holds about twice attention's numbers"] == "contradicts the page"
    assert outcomes["the formula counts torch's encoder layer"] == "contradicts the page"


def test_about_twice_is_not_tested_away_from_the_papers_shape(monkeypatch, capsys):
    assert week1_04_outcomes(monkeypatch, "--d-ff", "1024")["the FFN holds about twice attention's numbers"] == \
        "not tested here"


# ---------------------------------------------------------------- week1/07: the snippet's comments, measured

def week1_07_outcomes(*argv, norm=None):
    """The records of week1/07's shortcuts-and-norms lines; norm: a stand-in for LN1."""
    from common.records import collected

    module = load_script("week1/07_eli5_one_block")
    x, block, _ = module.build(4, 1, 16, 42)
    if norm is not None:
        block.norm1 = norm
    with torch.no_grad(), collected() as got:
        module.shortcuts_and_norms(block, x, module.stages(block, x))
    return {r["name"]: r["outcome"] for r in got}


def test_the_snippets_comments_hold_in_the_block(capsys):
    outcomes = week1_07_outcomes()
    assert outcomes["the residual add needs matching widths"] == "upholds the page"
    assert outcomes["LayerNorm steadies the values"] == "upholds the page"


def test_a_norm_that_does_not_normalize_flips_the_steady_line(capsys):
    assert week1_07_outcomes(norm=torch.nn.Identity())["LayerNorm steadies the values"] == "contradicts the page"


def test_the_steady_threshold_is_one_percent():
    assert load_script("week1/07_eli5_one_block").STEADY == 0.01


def week1_07_records(monkeypatch, plant=None):
    """week1/07's check outcomes at its defaults, in this process; plant(module, monkeypatch) first changes it."""
    module = load_script("week1/07_eli5_one_block")
    if plant:
        plant(module, monkeypatch)
    return main_outcomes(module)[1]


BLOCK_CHECKS = ("each row sums to 1, none of it on future words", "attention rewrites the sat row",
                "pre-norm and post-norm are different wirings", "the block holds the Week 1 formula's numbers")


def test_week1_07s_block_checks_uphold_the_page_as_written(monkeypatch):
    outcomes = week1_07_records(monkeypatch)
    for name in BLOCK_CHECKS:
        assert outcomes[name] == "upholds the page", name


def test_a_block_mask_that_lets_a_word_see_the_next_one_flips_the_future_line(monkeypatch):
    def leaky(module, monkeypatch):  # the block's mask (common/blocks.py's causal_mask) one place off
        monkeypatch.setattr(module, "causal_mask", lambda T: torch.triu(torch.ones(T, T, dtype=torch.bool),
                                                                         diagonal=2))
    outcomes = week1_07_records(monkeypatch, leaky)
    assert outcomes["each row sums to 1, none of it on future words"] == "contradicts the page"


def test_an_attention_forward_that_drops_the_mask_flips_the_future_line(monkeypatch):
    """The weights printed and judged are the ones the block's forward used: a forward that
    leaves out attn_mask shows weight on the future words (the mask itself is untouched)."""
    def unmasked(module, monkeypatch):
        def forward(self, x):
            out, self.attn = self.mha(x, x, x, need_weights=True, average_attn_weights=False)
            return out
        monkeypatch.setattr(module.CausalSelfAttention, "forward", forward)
    outcomes = week1_07_records(monkeypatch, unmasked)
    assert outcomes["each row sums to 1, none of it on future words"] == "contradicts the page"
    assert [outcomes[name] for name in BLOCK_CHECKS[1:]] == ["upholds the page"] * 3


def test_attention_that_adds_nothing_flips_the_rewrite_line(monkeypatch):
    def silent(module, monkeypatch):  # the weights are made as before; the output is thrown away
        real = module.CausalSelfAttention.forward
        monkeypatch.setattr(module.CausalSelfAttention, "forward", lambda self, x: torch.zeros_like(real(self, x)))
    outcomes = week1_07_records(monkeypatch, silent)
    assert outcomes["attention rewrites the sat row"] == "contradicts the page"


def test_attention_where_each_word_sees_only_itself_flips_the_rewrite_line(monkeypatch):
    """A mask that blocks every other word (not only the future): sat's row still changes (its
    own value comes in), but nothing of 'the' or 'cat' does: caught; no weight lands on the future."""
    module = load_script("week1/07_eli5_one_block")
    out, outcomes = main_outcomes(module, causal_mask=lambda T: ~torch.eye(T, dtype=torch.bool))
    assert outcomes["attention rewrites the sat row"] == "contradicts the page"
    assert outcomes["each row sums to 1, none of it on future words"] == "upholds the page"
    assert "its weight on 'the' and 'cat' 0.0000;" in out and "row moves by 0.0000" in out


def test_a_wrong_count_formula_flips_the_formula_line(monkeypatch):
    def norms_forgotten(module, monkeypatch):  # 4d^2 + 2df + f + 5d: the two LayerNorms' 4d left out
        monkeypatch.setattr(module, "week1_formula", lambda d, f: 4 * d * d + 2 * d * f + f + 5 * d)
    outcomes = week1_07_records(monkeypatch, norms_forgotten)
    assert outcomes["the block holds the Week 1 formula's numbers"] == "contradicts the page"


def test_a_block_without_its_second_shortcut_fails_the_noise_lines(monkeypatch):
    """The "+ x" line subtracts the two sublayers' parts from block(x) itself: a block whose FFN
    step drops its "+ x" leaves x - ... far from 0, and the check refuses that noise line
    (and the stages-vs-block line beside it)."""

    module = load_script("week1/07_eli5_one_block")

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return self.ffn(self.norm2(x))  # the second "+ x" forgotten

    monkeypatch.setattr(module.TransformerBlock, "forward", forward)
    out, _ = main_outcomes(module)
    assert [label for _, label, _ in comparing.noise_over_ceiling(out)] == [
        "max |the stages above, last one - block(x)|", "max |pre-norm by hand - torch "
        "TransformerEncoderLayer(norm_first=True)|", "max |block(x) - attention part - FFN part - x|"]


def test_one_wiring_for_both_flips_the_wirings_line(monkeypatch):
    def same_wiring(module, monkeypatch):
        monkeypatch.setattr(module, "post_norm", lambda block, x: block(x))
    outcomes = week1_07_records(monkeypatch, same_wiring)
    assert outcomes["pre-norm and post-norm are different wirings"] == "contradicts the page"


# ---------------------------------------------------------------- week1/02: the variance table's columns

VARIANCE = "week1/02_dot_product_variance"


@pytest.mark.parametrize(("argv", "widths"), [((), 4), (("--d-k", "1", "2", "512", "1024", "--pairs", "2000"), 4),
                                              (("--d-k", "1024", "4", "--pairs", "2000"), 2)])
def test_week1_02s_columns_line_up_at_every_width(monkeypatch, capsys, argv, widths):
    """Every row's labels and numbers end in the same columns, a 4-digit d_k among 1-digit ones
    too (the learner trial's --d-k 1024 pushed its row out of line); the page's rows keep the
    page's widths."""
    out = run_main(monkeypatch, capsys, load_script(VARIANCE), VARIANCE, *argv)
    rows = [line for line in out.splitlines() if line.startswith("d_k=")]
    assert len(rows) == widths
    ends = {tuple(m.end() for m in re.finditer(r"=\s*[\d.]+", row)) for row in rows}  # where each number ends
    assert len(ends) == 1, "\n".join(rows)
    if not argv:
        assert rows[0] == "d_k=  4 Var(q.k)=    4.04 target=  4 scaled_var=1.011"


# ---------------------------------------------------------------- week1/01 and 02: their records can turn

def test_week1_01_a_softmax_over_the_queries_flips_the_row_sums():
    """Each column of A summing to 1 (a softmax down the queries) leaves the rows off 1: caught."""
    module = load_script("week1/01_attention_from_scratch")
    real = module.softmax
    assert main_outcomes(module)[1] == {"every softmax row sums to 1": "upholds the page"}
    out, outcomes = main_outcomes(module, softmax=lambda scores, axis=-1: real(scores, axis=-2))
    assert outcomes == {"every softmax row sums to 1": "contradicts the page"}
    assert "row-sum range=1.000000..1.000000" not in out


@pytest.mark.parametrize("wrong", ["mean", "already scaled"])
def test_week1_02_a_score_that_does_not_grow_with_d_k_flips_the_variance_record(wrong):
    """A mean in place of the sum (Var about 1 / d_k), or a score already divided by sqrt(d_k)
    (Var about 1): scaled again, neither stays near 1."""
    module = load_script(VARIANCE)
    real = module.dot_products
    name = "Var(q.k) tracks d_k: scaled, it stays near 1"
    assert main_outcomes(module)[1] == {name: "upholds the page"}

    def plant(rng, pairs, d_k):
        scores = real(rng, pairs, d_k)  # the same draws
        return scores / d_k if wrong == "mean" else scores / d_k ** 0.5

    assert main_outcomes(module, dot_products=plant)[1] == {name: "contradicts the page"}


# ---------------------------------------------------------------- week1/03: the heads glue back to d_model

def test_week1_03_judges_the_glued_heads_by_the_gap_to_torch():
    """The concatenation's width could not fail in the lesson's own code (W^O refuses any other
    width first), so no record judges it; a join that glues the heads in the wrong layout
    (each word's numbers read off without the transpose) is d_model wide and passes W^O, and
    the gap to torch's module catches it (run_all's noise ceiling)."""

    module = load_script("week1/03_multihead_shape_check")
    out, outcomes = main_outcomes(module)
    assert outcomes == {}
    assert comparing.noise_over_ceiling(out) == []

    def without_the_transpose(H):  # [B, h, T, d_k] -> [B, T, h d_k], read off in the wrong order
        B, h, T, d_k = H.shape
        return H.reshape(B, T, h * d_k)

    out, _ = main_outcomes(module, join_heads=without_the_transpose)
    assert "concat=[2, 5, 16]" in out
    labels = [label for _, label, _ in comparing.noise_over_ceiling(out)]
    assert labels == ["max |manual - torch.nn.MultiheadAttention|"]


# ---------------------------------------------------------------- week1/05: Bahdanau's weights

def test_week1_05_upholds_both_claims_and_wrong_weights_flip_each():
    """Weights without the softmax's division do not sum to 1; a softmax of -e puts the
    biggest weight on the lowest score: each is caught by its own record."""
    module = load_script("week1/05_additive_attention")
    by_hand = module.additive_attention
    names = ("the weights sum to 1", "the highest score gets the biggest weight")
    assert main_outcomes(module)[1] == dict.fromkeys(names, "upholds the page")

    def unnormalized(s, H, W_a, U_a, v_a):  # exp(e_i) alone, not divided by the sum
        e, _, _ = by_hand(s, H, W_a, U_a, v_a)
        return e, np.exp(e), np.exp(e) @ H

    def lowest_first(s, H, W_a, U_a, v_a):  # softmax(-e)
        e, _, _ = by_hand(s, H, W_a, U_a, v_a)
        alpha = module.softmax(-e)
        return e, alpha, alpha @ H

    assert main_outcomes(module, additive_attention=unnormalized)[1] == {names[0]: "contradicts the page",
                                                                          names[1]: "upholds the page"}
    assert main_outcomes(module, additive_attention=lowest_first)[1] == {names[0]: "upholds the page",
                                                                         names[1]: "contradicts the page"}


def week1_07_widths(*argv):
    """week1/07's residual-width lines (from "the two things added" to the FFN folding back) and record."""
    out, records = main_in_process(load_script("week1/07_eli5_one_block"), *argv)
    lines = out.split("the two things added must have one shape: ")[1].split("\nLN1 steadies")[0]
    return lines, records["the residual add needs matching widths"]


def test_week1_07_a_width_of_one_is_said_to_broadcast_not_to_be_added():
    """The learner trial: at --d-model 1, "x [3 x 1] + FFN widened [3 x 16]: torch adds them" read
    as the opposite of the default's refusal. Now the line names the broadcasting and what it
    hands back, the FFN still folds back, and the claim is not tested (nothing is refused)."""
    lines, made = week1_07_widths("--d-model", "1")
    assert "broadcasts it (copies it across all 16 columns)" in lines and "the sum is [3 x 16]" in lines
    assert lines.endswith("so the FFN folds back to d") and "torch adds them" not in lines
    assert made["outcome"] == "not tested here" and "broadcast" in made["why"]
    lines, made = week1_07_widths("--d-ff", "1")
    assert "FFN widened is one column wide, so torch broadcasts it" in lines and made["outcome"] == "not tested here"
    lines, made = week1_07_widths()
    assert lines.startswith("x [3 x 4] + FFN widened [3 x 16]:\n  torch refuses (") and made["outcome"] == \
        "upholds the page"
    lines, made = week1_07_widths("--d-ff", "4")
    assert "nothing to refuse" in lines and made["outcome"] == "not tested here"


def test_week1_07_an_add_that_takes_unequal_widths_flips_the_widths_line(capsys):
    """A tensor library that silently adds a [3 x 16] grid to a [3 x 4] one (cropping it) is caught."""
    module = load_script("week1/07_eli5_one_block")

    class Cropping(torch.Tensor):
        def __add__(self, other):
            return torch.Tensor.__add__(self.as_subclass(torch.Tensor), other[..., :self.shape[-1]])

    x = torch.randn(1, 3, 4, dtype=torch.float64)
    from common.records import collected
    with collected() as got:
        module.residual_widths(x.as_subclass(Cropping), torch.randn(1, 3, 16, dtype=torch.float64))
    assert [r["outcome"] for r in got] == ["contradicts the page"]
    assert "torch adds them: [3 x 4]" in capsys.readouterr().out
