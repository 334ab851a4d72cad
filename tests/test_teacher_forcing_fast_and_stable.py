"""week2/19_teacher_forcing_fast_and_stable: its masked attention and Adam are torch's, its
decoder looks only back (so one teacher-forced pass scores every place as the step-by-step
passes do), its own guesses are its argmaxes written one place at a time, its held-out strings
are never trained on, every threshold of its verdicts is pinned by a value on each side, and
each verdict turns in a world that lacks what the page says (its default output is the same
bytes under the kernel settings of tests/test_portability.py)."""
import math

from common.records import CONTRADICTS, NOT_TESTED, UPHOLDS

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import lesson_run, load_script
from tests.conftest import main_outcomes as run_main

NAME = "week2/19_teacher_forcing_fast_and_stable"
DEFAULT = lesson_run(NAME)
CHECKS = ["teacher forcing makes training fast", "teacher forcing makes training stable",
          "teacher forcing does not remove the mismatch"]


@pytest.fixture(scope="module")
def tf():
    return load_script(NAME)


def some(tf, n=20, seed=3):
    return torch.randint(0, 10, (n, tf.T), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- the pieces against torch's

def test_masked_self_attention_is_torchs(tf):
    w = tf.views(tf.starting_weights(5))
    a = torch.randn(4, tf.T, tf.D, dtype=torch.float64)
    Q, K, V = a @ w["W_Q"], a @ w["W_K"], a @ w["W_V"]
    theirs = F.scaled_dot_product_attention(Q, K, V, is_causal=True) @ w["W_O"]
    assert (tf.masked_self_attention(a, w) - theirs).abs().max() < 1e-12


def test_its_adam_is_the_shared_one(tf):
    """common.blocks.adam_step, which tests/test_common.py holds to torch.optim.Adam."""
    from common import blocks
    assert tf.adam_step is blocks.adam_step


def test_the_decoder_looks_only_back(tf):
    """Changing the inputs after place t leaves the scores up to t alone: one teacher-forced
    pass scores every place exactly as place-by-place passes would."""
    w, x = tf.views(tf.starting_weights(5)), some(tf)
    y_in = tf.gold_prefix(tf.totals(x))
    before = tf.decoder(w, x, y_in, [0])
    for t in range(tf.T - 1):
        changed = y_in.clone()
        changed[:, t + 1:] = (changed[:, t + 1:] + 3) % 10
        assert (tf.decoder(w, x, changed, [0])[:, :t + 1] - before[:, :t + 1]).abs().max() < 1e-12
        assert (tf.decoder(w, x, changed, [0])[:, t + 1:] - before[:, t + 1:]).abs().max() > 1e-6


def test_gold_prefix_and_own_guesses(tf):
    x = some(tf)
    y = tf.totals(x)
    assert y[0].tolist() == [sum(x[0, :i + 1].tolist()) % 10 for i in range(tf.T)]
    assert tf.gold_prefix(y).tolist() == [[tf.START] + row[:-1] for row in y.tolist()]
    w, passes = tf.views(tf.starting_weights(5)), [0]
    guessed = tf.own_guesses(w, x, passes)
    assert passes == [tf.T - 1]
    for t in range(1, tf.T):  # each input is the argmax the decoder gave at the place before, from the inputs before
        assert torch.equal(guessed[:, t], tf.decoder(w, x, guessed, [0])[:, t - 1].argmax(-1))
    given = torch.tensor([[tf.START, 4, 9]] * len(x))
    assert torch.equal(tf.own_guesses(w, x, [0], given)[:, :3], given)


def test_held_out_strings_are_never_trained_on(tf):
    batches, held_out = tf.training_and_held_out(42)
    assert batches.shape == (tf.STEPS, tf.BATCH, tf.T) and len(held_out) == tf.HELD_OUT
    longest, _ = tf.training_and_held_out(42, tf.MAX_STEPS)
    assert torch.equal(longest[:tf.STEPS], batches)
    assert not set(map(tuple, longest.reshape(-1, tf.T).tolist())) & set(map(tuple, held_out.tolist()))


def test_the_slip_is_handed_in_where_the_notes_say(tf, monkeypatch):
    """written(): after the slip, only places SLIP_AT + 1 on count; a decoder that reads the
    total before (total before + digit) carries the slip into every one of them."""
    def rule(w, x, y_in, passes):  # the rule itself: total before + digit (the start symbol counts 0)
        passes[0] += 1
        return F.one_hot((y_in.clamp(max=9) * (y_in != tf.START) + x) % 10, 10).double()

    monkeypatch.setattr(tf, "decoder", rule)
    with_gold, alone, after_slip = tf.written(tf.starting_weights(5), some(tf, 200))
    assert with_gold.all() and alone.all() and after_slip.shape == (200, tf.T - tf.SLIP_AT)
    assert not after_slip.any()


# ---------------------------------------------------------------- thresholds, on both sides

def test_fast_thresholds(tf):
    assert (tf.LEARNED, tf.NOT_YET) == (0.75, 0.5)
    page = {"passes": 1}, {"passes": 6}
    assert tf.learns_faster({**page[0], "alone": 0.751}, {**page[1], "alone": 0.499})
    assert not tf.learns_faster({**page[0], "alone": 0.75}, {**page[1], "alone": 0.1})
    assert not tf.learns_faster({**page[0], "alone": 0.9}, {**page[1], "alone": 0.5})
    assert not tf.learns_faster({"passes": 6, "alone": 0.9}, {**page[1], "alone": 0.1})  # no fewer passes
    assert [tf.share_band(x) for x in (0.499, 0.5, 0.75, 0.751)] == ["below 50%", "50% to 75%", "50% to 75%",
                                                                    "above 75%"]


def test_steadiness_threshold_and_the_largest_rise(tf):
    assert tf.JUMP == 0.25
    assert math.isclose(tf.largest_rise([2.0, 1.0, 1.2, 0.5, 0.9, 0.6]), 0.4)
    assert tf.largest_rise([3.0, 2.0, 1.0]) == 0.0
    assert tf.steadier({"rise": 0.25}, {"rise": 0.251}) is True
    assert tf.steadier({"rise": 0.1}, {"rise": 0.25}) is None  # neither jumped: no difference to judge
    assert tf.steadier({"rise": 0.251}, {"rise": 0.9}) is False


def test_mismatch_thresholds(tf):
    assert tf.mismatch_shows({"gold": 0.751, "after slip": 0.499})
    assert not tf.mismatch_shows({"gold": 0.75, "after slip": 0.0})
    assert not tf.mismatch_shows({"gold": 1.0, "after slip": 0.5})


# ---------------------------------------------------------------- wrong worlds turn the verdicts

def test_training_both_copies_on_gold_prefixes_turns_the_fast_verdict(tf):
    right = tf.train
    _, outcomes = run_main(tf, train=lambda seed, batches, teacher_forced: right(seed, batches, True))
    assert outcomes[CHECKS[0]] == CONTRADICTS


def test_a_decoder_that_recomputes_every_total_turns_the_mismatch_verdict(tf, monkeypatch):
    """A writer that ignores the total before and adds up the digits itself has no mismatch:
    a slip handed in changes nothing."""
    def recomputes(w, x, y_in, passes):
        passes[0] += 1
        return F.one_hot(tf.totals(x), 10).double()

    monkeypatch.setattr(tf, "decoder", recomputes)
    with_gold, alone, after_slip = tf.written(tf.starting_weights(5), some(tf, 200))
    measured = {"gold": with_gold.double().mean().item(), "after slip": after_slip.double().mean().item()}
    assert measured == {"gold": 1.0, "after slip": 1.0} and not tf.mismatch_shows(measured)


# ---------------------------------------------------------------- the run

@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page_and_says_stable_was_not_a_difference(runs):
    result = runs[DEFAULT]
    assert [r["name"] for r in result.records] == CHECKS
    assert [r["outcome"] for r in result.records] == [UPHOLDS, NOT_TESTED, UPHOLDS]
    assert "decoder passes one after another, a step                   1             6" in result.stdout
    assert "Stable: neither curve jumped: not a difference at this size" in result.stdout


LONGER = lesson_run(NAME, "--steps", "150")


@pytest.mark.reads(LONGER)
def test_given_three_times_the_steps_own_guesses_get_there_too(runs):
    result = runs[LONGER]
    outcomes = {r["name"]: r["outcome"] for r in result.records}
    assert outcomes[CHECKS[0]] == CONTRADICTS and outcomes[CHECKS[2]] == UPHOLDS
    assert "  totals right                                     above 75%     above 75%" in result.stdout
    assert "  in all 150 steps                                       150           900" in result.stdout
