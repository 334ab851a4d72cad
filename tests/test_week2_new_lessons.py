"""week2/13 to week2/17: each verdict flips when a wrong implementation, or the other world,
goes through the script's own code; and every "Try it" suggestion runs as printed."""

import pytest
import torch

from run_all import ROOT
from tests.conftest import SCRIPTS, TRY_ITS, load_script, main_in_process, main_outcomes

NEW = ["week2/13_count_without_biases", "week2/14_positions_beyond_training",
       "week2/15_residual_gradient_depth", "week2/16_batchnorm_padding", "week2/17_post_norm_decoder_layer"]


def run_main(name, argv, monkeypatch, capsys, **replace):
    """Run the script's main() in this process with argv, after replacing some of its
    functions; return (exit status, the Verdict lines)."""
    module = load_script(name)
    for attribute, value in replace.items():
        monkeypatch.setattr(module, attribute, value)
    threads = torch.get_num_threads()
    try:
        status = module.main(list(argv))
    finally:
        torch.set_num_threads(threads)  # week2/15 runs on one thread; give the rest of the session its own
    verdicts = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Verdict")]
    return status or 0, verdicts


NEW_TRY_ITS = [run for name in NEW for run in TRY_ITS[name]]  # the very runs tests/test_cli.py runs


@pytest.mark.reads(*NEW_TRY_ITS)
def test_every_try_it_suggestion_prints_its_verdict_and_leaves_the_committed_figures_alone(runs):
    assert len(NEW_TRY_ITS) >= 2 * len(NEW)
    for run in NEW_TRY_ITS:
        result = runs[run]
        assert result.returncode == 0, f"{run}: {result.stderr}"
        assert "Verdict" in result.stdout
        assert "saved week2/figures" not in result.stdout  # only a default run rewrites a committed figure


# week2/13: counting by kind

def test_counts_match_torch_for_other_sizes(monkeypatch, capsys):
    for argv in (["--d-model", "4", "--d-ff", "8", "--heads", "1"], ["--d-model", "768", "--d-ff", "3072"]):
        assert run_main(NEW[0], argv, monkeypatch, capsys) == (0, [
            "Verdict: as the page says: every count by formula equals torch's own count"])


def test_a_wrong_formula_flips_the_count_verdict(monkeypatch, capsys):
    right = load_script(NEW[0]).formulas

    def encoder_attention(d, f):  # one attention block's weights, as if it were an encoder layer
        counts = right(d, f)
        counts["weight matrices"] = ("4d^2 + 2df", 4 * d * d + 2 * d * f)
        return counts

    status, verdicts = run_main(NEW[0], [], monkeypatch, capsys, formulas=encoder_attention)
    assert status == 1 and verdicts == ["Verdict: NOT AS THE PAGE SAYS: 2 of the 7 counts differ from torch's"]


def test_sorting_layernorm_beta_as_a_bias_flips_the_count_verdict(monkeypatch, capsys):
    def by_name_only(model, name):  # forgets that a LayerNorm's bias is its beta
        return "biases" if name.endswith("bias") else "weight matrices"

    status, verdicts = run_main(NEW[0], [], monkeypatch, capsys, kind_of=by_name_only)
    assert status == 1 and verdicts[0].startswith("Verdict: NOT AS THE PAGE SAYS")


def test_a_count_that_does_not_dedupe_a_shared_tensor_turns_the_tied_check():
    """The other world of "a tied weight is counted once": an n_params that counts each
    parameter name, so the tied [V, d] tensor counts twice. Only the tied check (and the
    verdict) turns: the layer itself shares no tensor."""
    def every_name(module):
        return sum(p.numel() for _, p in module.named_parameters(remove_duplicate=False))

    out, outcomes = main_outcomes(load_script(NEW[0]), n_params=every_name)
    assert outcomes["a tied weight counts once, untied twice"] == "contradicts the page"
    assert outcomes["every count by formula equals torch's"] == "contradicts the page"
    assert [name for name, outcome in outcomes.items() if outcome != "upholds the page"] == [
        "a tied weight counts once, untied twice", "every count by formula equals torch's"]
    assert "tied 37,888,000 = Vd" in out  # 2 V d, where one tensor is shared


# week2/14: positions beyond training

def slipped_pe(max_len, d, dtype):
    """week2/14's table (common/blocks.sinusoidal_pe's arguments) with the slip: the coordinate
    c where the pair index i belongs, so a sin and its cos no longer share one speed."""
    angle = torch.arange(max_len, dtype=dtype)[:, None] * 10000.0 ** (-2 * torch.arange(d, dtype=dtype) / d)
    return torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))  # [max_len, d]


def test_coordinate_index_slip_breaks_the_rotation(monkeypatch, capsys):
    status, verdicts = run_main(NEW[1], [], monkeypatch, capsys, sinusoidal_pe=slipped_pe)
    assert status == 1 and verdicts[0].startswith("Verdict: NOT AS THE PAGE SAYS")


def test_an_unbounded_tag_or_a_bounded_contrast_flips_the_verdict(monkeypatch, capsys):
    module = load_script(NEW[1])
    status, verdicts = run_main(NEW[1], [], monkeypatch, capsys, sinusoidal_pe=lambda max_len, d, dtype: (
        torch.arange(max_len, dtype=dtype)[:, None] / 49.0).repeat(1, d))
    assert status == 1 and "NOT AS THE PAGE SAYS" in verdicts[0]
    status, verdicts = run_main(NEW[1], [], monkeypatch, capsys, index_tag=lambda p, d, seen: module.np.tanh(
        module.index_tag(p, d, seen)))
    assert status == 1 and "index tag leaves [-1, 1], rotation fails on it: False" in verdicts[0]


def test_the_verdict_is_about_the_tags_and_leaves_their_use_to_week2_12(monkeypatch, capsys):
    """The verdict judges the tags only; whether a trained model uses them is recorded as not
    tested here and points at week2/12, which exists. A wrong table flips the tags' verdict
    (worded by the settings) and leaves the model's line not tested."""
    from common.records import collected

    module = load_script(NEW[1])
    tags, model = "tags can be computed for unseen positions: bounded, d/2, rotating", \
        "a trained model uses the tags well past its training lengths"
    with collected() as got:
        status, verdicts = run_main(NEW[1], [], monkeypatch, capsys)
    assert status == 0 and verdicts == ["Verdict: as the page says: the TAGS exist past position 49 and are "
                                        "well-formed: in [-1, 1],"]
    assert {r["name"]: r["outcome"] for r in got} == {tags: "upholds the page", model: "not tested here"}
    assert module.WEEK2_12 == f"python {SCRIPTS['week2/12_train_tiny_transformer'].relative_to(ROOT).as_posix()}"

    with collected() as got:
        status, verdicts = run_main(NEW[1], ["--d-model", "16"], monkeypatch, capsys, sinusoidal_pe=slipped_pe)
    assert status == 1 and verdicts[0].startswith("Verdict: NOT AS THE PAGE SAYS")
    assert {r["name"]: r["outcome"] for r in got} == {tags: "contradicts the page", model: "not tested here"}


def test_the_rotation_gaps_are_rounding_far_below_the_threshold():
    """The default run's gaps (week2/NOTES.md, section 14: 1.1e-13) are float64 rounding, far
    below the verdict's 1e-6. The lesson's table is common/blocks.py's (week2/03 teaches it),
    and gaps this small also say that the speeds omega(d), from which the lesson builds R(k),
    are that table's."""
    from common.blocks import sinusoidal_pe

    module = load_script(NEW[1])
    assert module.sinusoidal_pe is sinusoidal_pe
    for d, measured in ((4, 1e-12), (16, 1e-10)):  # 1.1e-13 and 3.1e-12 measured
        pe = sinusoidal_pe(100_001, d, torch.float64).numpy()
        assert max(module.rotation_gap(pe, k, 50) for k in (1, 3, 1000)) < measured < module.TOLERANCE == 1e-6


# week2/15: residual gradient

PAGE_15 = "Verdict: as the page says: the residual path carried the gradient down; the plain stack lost it"


def test_residual_verdict_and_its_flips(monkeypatch, capsys, tmp_path):
    figure = ["--figure", str(tmp_path / "r.png")]  # never rewrite the committed figure from a test
    status, verdicts = run_main(NEW[2], figure, monkeypatch, capsys)
    assert verdicts == [PAGE_15]  # the cancelling stack's verdict is retired: week2/11's belief 17 measures it
    # The other world: sublayers big enough that the plain stack keeps its gradient.
    _, verdicts = run_main(NEW[2], ["--scale", "2.06", *figure], monkeypatch, capsys)
    assert verdicts[0].startswith("Verdict: NOT AS THE PAGE SAYS")
    # A wrong residual wiring, 2 F(x) instead of x + F(x): no shortcut, so no verdict for it.
    _, verdicts = run_main(NEW[2], figure, monkeypatch, capsys, residual=lambda x, F: F(x) + F(x))
    assert verdicts[0].startswith("Verdict: NOT AS THE PAGE SAYS")


def test_the_e_notation_is_read_out_on_the_runs_own_number(tmp_path):
    module = load_script(NEW[2])
    out, records = main_in_process(module, "--figure", str(tmp_path / "r.png"))
    assert "  (1.72e-15 means 0.00000000000000172: the e-15 moves the point 15 places left)\n" in out
    assert "                24      1.72e-15" in out  # the number the line reads, as the table prints it
    assert "a residual does not guarantee gradients never vanish" not in records  # week2/11's belief 17 judges it
    assert module.e_notation([1.0, 4060.0, 0.5]) == "  (4.06e+03 means 4060: the e+03 moves the point 3 places right)"
    assert module.e_notation([1.0, 5.04e-129]) == \
        "  (5.04e-129 means 5.04 x 10^-129: the e-129 moves the point 129 places left)"
    assert module.e_notation([1.0, 2.0, float("inf")]) is None  # every finite number has exponent 0


def test_gradient_sizes_are_one_for_an_identity_stack():
    module = load_script(NEW[2])
    x0, u = torch.randn(3, 5, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    u = u / u.norm(dim=1, keepdim=True)
    sizes = module.gradient_sizes([torch.nn.Identity()] * 4, x0, u, module.plain)
    assert sizes == pytest.approx([1.0] * 5, abs=1e-15)
    sizes = module.gradient_sizes([lambda x: 0.5 * x] * 3, x0, u, module.plain)
    assert sizes == pytest.approx([1.0, 0.5, 0.25, 0.125], abs=1e-15)


# week2/16: BatchNorm and padding

PAGE_16 = "Verdict: as the page says: padding moved BatchNorm's outputs for the real tokens"


def test_padding_verdict_and_its_flips(monkeypatch, capsys):
    assert run_main(NEW[3], [], monkeypatch, capsys)[1][0] == PAGE_16
    assert "BatchNorm moved: False" in run_main(NEW[3], ["--pad", "0"], monkeypatch, capsys)[1][0]
    module = load_script(NEW[3])

    def layernorm_over_time_too(x):  # a wrong LayerNorm: mean and variance over [T, d]
        return torch.nn.functional.layer_norm(x, x.shape[1:])

    _, verdicts = run_main(NEW[3], [], monkeypatch, capsys, layernorm=layernorm_over_time_too)
    assert "LayerNorm untouched: False" in verdicts[0]
    _, verdicts = run_main(NEW[3], [], monkeypatch, capsys, batchnorm=module.layernorm)  # a per-token norm
    assert "BatchNorm moved: False" in verdicts[0]


def test_masked_batchnorm_matches_torch_without_padding():
    module = load_script(NEW[3])
    x = torch.randn(3, 5, 6, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(module.masked_batchnorm(module.pad(x, 4), 5)[:, :5], module.batchnorm(x),
                                   rtol=0, atol=1e-12)


# week2/17: post-norm placement

PAGE_17 = ("Verdict: as the page says: torch's post-norm decoder layer puts LN1, LN2, LN3 after the residual")


def test_placement_verdict_and_its_flips(monkeypatch, capsys):
    assert run_main(NEW[4], [], monkeypatch, capsys) == (0, [PAGE_17])
    module = load_script(NEW[4])
    status, verdicts = run_main(NEW[4], [], monkeypatch, capsys, post_norm=lambda x, m, layer, norms=(1, 2, 3):
                                module.pre_norm(x, m, layer))
    assert status == 1 and "post-norm matches: False" in verdicts[0]

    def no_causal_mask(x, source, mha, causal):  # forgets the mask in the decoder's self-attention
        return module.attention(x, source, mha, causal=False)

    status, verdicts = run_main(NEW[4], [], monkeypatch, capsys, attention=no_causal_mask)
    assert status == 1 and "post-norm matches: False" in verdicts[0]
    status, verdicts = run_main(NEW[4], [], monkeypatch, capsys, norm_in_branch=module.post_norm)
    assert status == 1 and "the wrong placements all differ: False" in verdicts[0]


# week2/04: the table's "train vs evaluation"

def test_train_and_evaluation_lines_flip_for_a_norm_that_behaves_otherwise(monkeypatch, capsys):
    """A BatchNorm that keeps no running statistics (evaluation uses the batch, as in training)
    moves by 0: its line says no; the LayerNorm line holds only while it moves by nothing."""
    from common.records import collected

    module = load_script("week2/04_norm_axes")
    real = module.nn.BatchNorm1d
    monkeypatch.setattr(module.nn, "BatchNorm1d", lambda *a, **k: real(*a, **{**k, "track_running_stats": False}))
    monkeypatch.setattr(module, "save_figure", lambda fig, path: "figure skipped")
    with collected() as got:
        module.main(["--figure", "/dev/null.png"])
    outcomes = {r["name"]: r["outcome"] for r in got}
    assert outcomes["BatchNorm in evaluation uses its running statistics"] == "contradicts the page"
    assert outcomes["LayerNorm is the same computation in training and evaluation"] == "upholds the page"
    assert module.SAME == 1e-12


# week2/03: the clock's hands tell every position apart

def test_a_clock_with_one_hand_that_comes_round_flips_the_distinct_tags_line(monkeypatch, capsys):
    """Hands that come round every 5 positions give positions 0 and 5 one tag: the line says so."""
    from common.records import collected

    import numpy as np

    module = load_script("week2/03_sinusoidal_pe")
    real = module.sinusoidal_pe
    with collected() as got:
        module.main([])
    assert {r["name"]: r["outcome"] for r in got}["every position gets a tag of its own"] == "upholds the page"

    def periodic(max_len, d):
        p = np.arange(max_len)[:, None] * 2 * np.pi / 5  # every pair turns once in 5 steps
        return np.repeat(np.stack([np.sin(p[:, 0]), np.cos(p[:, 0])], axis=1), d // 2, axis=1)

    monkeypatch.setattr(module, "sinusoidal_pe", lambda max_len, d: periodic(max_len, d) if max_len > 2 else
                        real(max_len, d))
    with collected() as got:
        module.main([])
    assert {r["name"]: r["outcome"] for r in got}["every position gets a tag of its own"] == "contradicts the page"


# week2/05: label smoothing and the push toward certainty, trained

def smoothing_outcome(monkeypatch, *argv, **replace):
    from common.records import collected

    module = load_script("week2/05_label_smoothing")
    for name, value in replace.items():
        monkeypatch.setattr(module, name, value)
    with collected() as got:
        module.main(list(argv))
    return {r["name"]: r["outcome"] for r in got}["label smoothing stops the push toward certainty"]


def test_smoothing_keeps_the_trained_model_from_over_confidence(monkeypatch, capsys):
    assert smoothing_outcome(monkeypatch) == "upholds the page"
    assert smoothing_outcome(monkeypatch, "--epsilon", "0") == "not tested here"  # nothing smoothed: no contrast


def test_a_smoothing_that_does_nothing_flips_the_over_confidence_verdict(monkeypatch, capsys):
    module = load_script("week2/05_label_smoothing")
    real = module.train_classifier
    assert smoothing_outcome(monkeypatch, train_classifier=lambda epsilon, seed: real(0.0, seed)) == \
        "contradicts the page"


def test_the_over_confidence_thresholds():
    module = load_script("week2/05_label_smoothing")
    assert (module.NEAR, module.PUSHED, module.SETTLED, module.GROWING, module.RIGHT) == (0.03, 0.99, 0.2, 0.4, 0.95)


@pytest.mark.parametrize(("smoothed", "plain", "says"), [
    ((0.896, 0.199, 0.96), (0.991, 0.401, 0.96), "upholds the page"),  # each measure just inside
    ((0.954, -0.199, 0.96), (0.991, 0.401, 0.96), "upholds the page"),  # the other side of the two-sided ones
    ((0.894, 0.1, 0.96), (0.991, 0.5, 0.96), "contradicts the page"),  # smoothed 0.031 under its target
    ((0.956, 0.1, 0.96), (0.991, 0.5, 0.96), "contradicts the page"),  # smoothed 0.031 over its target
    ((0.92, 0.201, 0.96), (0.991, 0.5, 0.96), "contradicts the page"),  # the smoothed scores still growing
    ((0.92, -0.201, 0.96), (0.991, 0.5, 0.96), "contradicts the page"),  # ... or shrinking
    ((0.92, 0.1, 0.96), (0.989, 0.5, 0.96), "contradicts the page"),  # plain not pushed toward 1
    ((0.92, 0.1, 0.96), (0.995, 0.399, 0.96), "contradicts the page"),  # plain scores settled
    ((0.92, 0.1, 0.949), (0.995, 0.5, 0.96), "contradicts the page"),  # an answer share just under 95%
])
def test_each_over_confidence_threshold_at_its_edge(monkeypatch, capsys, smoothed, plain, says):
    """Measured values (median confidence, gap growth, share right) fed through the lesson's
    own verdict (epsilon 0.1: the target 0.925)."""
    fake = {0.1: smoothed, 0.0: plain}
    assert smoothing_outcome(monkeypatch, train_classifier=lambda epsilon, seed: fake[epsilon]) == says


def lesson_outcomes(name, argv=(), **replace):
    """A lesson's check outcomes after replacing some of its names (a callable value is first
    given the module); figures not saved."""
    module = load_script(name)
    replace = {attribute: value(module) if callable(value) else value for attribute, value in replace.items()}
    if hasattr(module, "save_figure"):
        replace.setdefault("save_figure", lambda fig, path: "figure skipped")
    return main_outcomes(module, *argv, **replace)[1]


def test_a_table_past_one_or_not_of_length_d_over_2_flips_week2_03s_lines(monkeypatch, capsys):
    """Tags with the sin pair's amplitude doubled: entries reach 2 and the squared length is
    no longer d/2 (the page's d = 4 hand-check keeps the real formula)."""
    name = "week2/03_sinusoidal_pe"
    plain = lesson_outcomes(name)
    assert plain["every entry lies in [-1, 1]"] == plain["the squared length of every tag is d/2"] == "upholds the page"

    def doubled(module):
        real = module.sinusoidal_pe
        return lambda max_len, d: real(max_len, d) * (2.0 if max_len > 2 else 1.0)
    wrong = lesson_outcomes(name, sinusoidal_pe=doubled)
    assert wrong["every entry lies in [-1, 1]"] == wrong["the squared length of every tag is d/2"] == \
        "contradicts the page"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the sample variance of one value divides by 0
def test_a_norm_with_the_sample_variance_flips_week2_04s_by_hand_lines(monkeypatch, capsys):
    """normalize() with ddof=1 (the sample variance, which torch's norms do not use): the by-hand
    answers stop being torch's. And a 'LayerNorm' pooling the batch answers as BatchNorm does."""
    name = "week2/04_norm_axes"
    argv = ("--figure", "/dev/null.png")
    plain = lesson_outcomes(name, argv)
    checks = ("LayerNorm by hand is torch's on one token", "BatchNorm by hand is torch's on the batch",
              "LayerNorm on the same rows answers otherwise")
    assert all(plain[check] == "upholds the page" for check in checks)

    def sample_variance(module):
        np = module.np
        return lambda x, axes, eps=0.0: (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(
            x.var(axis=axes, keepdims=True, ddof=1) + eps)
    wrong = lesson_outcomes(name, argv, normalize=sample_variance)
    assert wrong[checks[0]] == wrong[checks[1]] == "contradicts the page"

    def pools_the_batch(module):
        real = module.normalize
        return lambda x, axes, eps=0.0: real(x, 0 if axes == 1 else axes, eps)
    assert lesson_outcomes(name, argv, normalize=pools_the_batch)[checks[2]] == "contradicts the page"


def test_a_layernorm_that_differs_in_evaluation_flips_its_line(monkeypatch, capsys):
    """A LayerNorm whose evaluation mode adds a small shift: the 'same computation' line turns."""
    class Drifting(torch.nn.LayerNorm):
        def forward(self, x):
            return super().forward(x) + (0 if self.training else 1e-6)

    monkeypatch.setattr(torch.nn, "LayerNorm", Drifting)  # (the lesson's nn is torch.nn; undone after the test)
    wrong = lesson_outcomes("week2/04_norm_axes", ("--figure", "/dev/null.png"))
    assert wrong["LayerNorm is the same computation in training and evaluation"] == "contradicts the page"
