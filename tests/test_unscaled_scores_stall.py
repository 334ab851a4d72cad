"""week1/17_unscaled_scores_stall: its attention is torch's, its gradient step is torch's SGD,
its held-out queries are never trained on, every threshold of its verdicts is pinned by a value
on each side, each verdict turns when both heads are scaled or both unscaled, and its knobs
turn the verdicts their Try-it lines say (its default output is the same bytes under the
kernel settings of tests/test_portability.py, which runs the whole check under each)."""
import math

from common.cli import SEED
from common.records import CONTRADICTS, NOT_TESTED, UPHOLDS

import pytest
import torch
import torch.nn.functional as F

from check.comparing import THIS_RUN
from tests.conftest import lesson_run, load_script, main_in_process
from tests.conftest import main_outcomes as run_main

NAME = "week1/17_unscaled_scores_stall"
DEFAULT = lesson_run(NAME)
SMALLER_RATE = lesson_run(NAME, "--lr", "0.1")
NARROW = lesson_run(NAME, "--d-k", "64")
VERDICTS = ["without scaling the softmax starts nearly one-hot", "without scaling the gradients then go close to zero",
            "without scaling learning stalls"]
SLOW = "a smaller rate lets the unscaled head learn, more slowly"
SMALLER = "the unscaled head at a smaller rate: held-out loss after / before"
STEP_1 = "at step 1 the unscaled head's gradient is larger, not close to zero"
COUNTED = [f"late gradient reaching {W}, {head}" for W in ("W_Q", "W_K") for head in ("unscaled", "scaled")] + [
    f"{what}, {head}" for what in ("held-out loss after / before", "right word found after training")
    for head in ("unscaled", "scaled")]  # the trained numbers it prints, each beside its band


@pytest.fixture(scope="module")
def us():
    return load_script(NAME)


# ---------------------------------------------------------------- the pieces against torch's

@pytest.mark.parametrize("scaled", [True, False])
def test_attention_is_torchs(us, scaled):
    X_q, X, V = us.sentences(torch.Generator().manual_seed(3), 5)
    W_Q, W_K = us.starting_weights(3, 64)
    Z, A = us.attention(X_q, X, V, W_Q, W_K, scaled)
    theirs = F.scaled_dot_product_attention(X_q @ W_Q, X @ W_K, V, scale=None if scaled else 1.0)
    assert (Z - theirs).abs().max() < 1e-12
    assert (A.sum(-1) - 1).abs().max() < 1e-12


def test_the_gradient_step_is_the_pages(us):
    """train()'s torch.optim.SGD is W <- W - lr dL/dW and nothing more (no momentum, no decay)."""
    held_out = us.sentences(torch.Generator().manual_seed(us.HELD_OUT_SEED), 2)
    mine = us.train(5, 32, True, 0.3, held_out, steps=4)["weights"]
    W_Q, W_K = us.starting_weights(5, 32)
    g = torch.Generator().manual_seed(5 + 1)
    for _ in range(4):
        X_q, X, V = us.sentences(g, us.SENTENCES)
        W_Q, W_K = (W.detach().requires_grad_() for W in (W_Q, W_K))
        dW_Q, dW_K = torch.autograd.grad(us.loss_of(us.attention(X_q, X, V, W_Q, W_K, True)[0], V), (W_Q, W_K))
        W_Q, W_K = W_Q - 0.3 * dW_Q, W_K - 0.3 * dW_K
    assert max((a - b).abs().max().item() for a, b in zip(mine, (W_Q, W_K), strict=True)) < 1e-12
    assert (W_Q - us.starting_weights(5, 32)[0]).abs().max() > 1e-3  # they moved


@pytest.mark.parametrize("seed", [SEED.lo, 42, SEED.hi])
def test_held_out_queries_are_never_trained_on(us, seed):
    """What the run hands its trainings (train, intercepted; the first one run, the batches it
    draws recorded): the held-out sentences are drawn from a generator of their own,
    HELD_OUT_SEED, the same at every --seed, a seed no --seed draws its batches from (they come
    from --seed + 1), and not one of their words is a word of the batches trained on."""
    handed, batches, real_train, real_sentences = [], [], us.train, us.sentences

    def recorded(g, n):
        made = real_sentences(g, n)
        if handed:  # drawn inside a training: a batch
            batches.append(made)
        return made

    def intercepted(seed, d_k, scaled, lr, held_out):
        handed.append(held_out)
        if len(handed) == 1:
            intercepted.result = real_train(seed, d_k, scaled, lr, held_out)
        return intercepted.result  # (the other trainings draw the same batches: only the first is run)

    run_main(us, "--seed", str(seed), "--d-k", "16", train=intercepted, sentences=recorded)
    own = us.sentences(torch.Generator().manual_seed(us.HELD_OUT_SEED), us.HELD_OUT)
    assert len(handed) == 3 and all(held is handed[0] for held in handed)
    assert all(torch.equal(a, b) for a, b in zip(handed[0], own, strict=True)), \
        "the held-out sentences are not HELD_OUT_SEED's own draw"
    assert us.HELD_OUT_SEED > SEED.hi + 1  # past every --seed + 1
    trained = torch.cat([X.reshape(-1, us.D_MODEL) for _, X, _ in batches])
    assert len(batches) == us.STEPS
    assert torch.cdist(handed[0][1].reshape(-1, us.D_MODEL), trained).min() > 0.1, "a held-out word was trained on"


def test_train_measures_before_and_after_on_the_held_out_sentences_it_is_handed(us, monkeypatch):
    """The real train(), a few steps: both of its measures (before and after) read the held-out
    sentences it was handed, never a batch (the test above holds only what it is handed)."""
    held_out = us.sentences(torch.Generator().manual_seed(us.HELD_OUT_SEED), us.HELD_OUT)
    read, real_measure = [], us.measure
    monkeypatch.setattr(us, "measure", lambda W_Q, W_K, scaled, held: read.append(held) or real_measure(
        W_Q, W_K, scaled, held))
    us.train(42, 16, True, 0.3, held_out, steps=3)
    assert len(read) == 2 and all(held is held_out for held in read), "a measure read other sentences"


def test_the_first_step_is_the_same_start_for_both_heads(us):
    """Both heads begin from the same weights: the same word gets the largest weight."""
    held_out = us.sentences(torch.Generator().manual_seed(us.HELD_OUT_SEED), us.HELD_OUT)
    un, sc = (us.measure(*us.starting_weights(42, 256), scaled, held_out) for scaled in (False, True))
    assert un["found"] == sc["found"] and un["largest"] > sc["largest"]


# ---------------------------------------------------------------- thresholds, on both sides

def measured(largest=0.5, shares=(0.5, 0.5), loss=(10.0, 5.0)):
    """What train() returns, made up: the start's largest weight, the late gradients as shares
    of step 1's, the held-out loss before and after."""
    grads = [(1.0, 1.0)] + [shares] * (100)
    return {"before": {"largest": largest, "loss": loss[0]}, "after": {"loss": loss[1]}, "grads": grads}


def test_one_hot_threshold(us):
    assert us.ONE_HOT == 0.9
    assert us.starts_one_hot(measured(largest=0.901), measured(largest=0.9))
    assert not us.starts_one_hot(measured(largest=0.9), measured(largest=0.5))  # the unscaled head not above
    assert not us.starts_one_hot(measured(largest=0.95), measured(largest=0.901))  # the scaled head one-hot too


def test_quiet_threshold(us):
    assert us.QUIET == 1e-3
    assert us.goes_quiet(measured(shares=(0.00099, 0.00099)), measured(shares=(0.001, 0.001)))
    assert not us.goes_quiet(measured(shares=(0.00099, 0.001)), measured(shares=(0.5, 0.5)))  # W_K not quiet
    assert not us.goes_quiet(measured(shares=(1e-9, 1e-9)), measured(shares=(0.5, 0.00099)))  # scaled quiet too


def test_stall_thresholds(us):
    assert (us.STALLED, us.TRAINED) == (0.5, 0.1)
    assert us.stalls(measured(loss=(10.0, 5.01)), measured(loss=(10.0, 0.99)))
    assert not us.stalls(measured(loss=(10.0, 5.0)), measured(loss=(10.0, 0.5)))  # the unscaled head learns
    assert us.stalls(measured(loss=(10.0, 9.0)), measured(loss=(10.0, 1.0))) is None  # scaled untrained: not tested


# ---------------------------------------------------------------- wrong worlds turn the verdicts

def test_scaling_both_heads_turns_every_verdict(us):
    right = us.attention
    out, outcomes = run_main(us, attention=lambda X_q, X, V, W_Q, W_K, scaled: right(X_q, X, V, W_Q, W_K, True))
    assert [outcomes[name] for name in VERDICTS] == [CONTRADICTS] * 3
    assert out.count("NOT AS THE PAGE SAYS") == 3


def test_scaling_neither_head_turns_two_verdicts_and_leaves_the_stall_untested(us):
    right = us.attention
    _, outcomes = run_main(us, attention=lambda X_q, X, V, W_Q, W_K, scaled: right(X_q, X, V, W_Q, W_K, False))
    # the stall verdict's premise, a rate that trains the scaled head, fails too: not tested
    assert [outcomes[name] for name in VERDICTS] == [CONTRADICTS] * 2 + [NOT_TESTED]


def test_a_step_1_gradient_smaller_than_the_scaled_heads_turns_its_line_and_record(us):
    """The step-1 line's word and its record's value come from one ratio: an "unscaled" head
    whose scores are divided by d_k (more than the scaled head's sqrt(d_k)) starts with the
    smaller gradient, and the line says "smaller"."""
    right = us.attention

    def over_scaled(X_q, X, V, W_Q, W_K, scaled):
        return right(X_q, X, V, W_Q, W_K, True) if scaled else right(X_q, X / W_K.shape[1] ** 0.5, V, W_Q, W_K, True)

    out, records = main_in_process(us, attention=over_scaled)
    assert records[STEP_1]["value"] < 1 and records[STEP_1]["outcome"] == NOT_TESTED
    assert "times the scaled head's: smaller." in out  # (the default run's "larger": the run test below)


# ---------------------------------------------------------------- the runs

@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page_and_says_what_a_smaller_rate_does(runs):
    result = runs[DEFAULT]
    outcomes = {r["name"]: r["outcome"] for r in result.records}
    assert sorted(outcomes) == sorted(VERDICTS + COUNTED + [STEP_1, SMALLER, SLOW])
    assert [outcomes[name] for name in VERDICTS + COUNTED] == [UPHOLDS] * 11
    assert outcomes[STEP_1] == outcomes[SMALLER] == outcomes[SLOW] == NOT_TESTED
    assert all(r.get("why") for r in result.records if r["outcome"] == NOT_TESTED)  # each says why
    assert f"With a 10 times smaller rate (0.1) the unscaled head's loss ends at {THIS_RUN} of its start\n  (below " \
           "0.5: it learns), above the scaled head's at 1 (more slowly)" in result.compared()[0]
    assert f"sqrt(d_k) = {math.sqrt(1024):.0f} times" in result.stdout
    assert "times the scaled head's: larger, not close to zero." in result.stdout  # measured, as the notes say


@pytest.mark.reads(DEFAULT)
def test_each_trained_number_is_printed_beside_its_band(runs):
    """Count it: the run's own number, then the band its record judges it by; the check reads
    the band in the number's place."""
    result = runs[DEFAULT]
    shown = [r for r in result.records if "shown" in r]
    assert [r["name"] for r in shown] == COUNTED + [SMALLER]
    for r in shown:
        assert f" {r['shown']} ({r['threshold']}" in result.stdout or f" {r['shown']} of its start" in result.stdout
        assert math.isclose(float(r["shown"].rstrip("%")) / (100 if r["shown"].endswith("%") else 1), r["value"],
                            rel_tol=0.05, abs_tol=0.006), r
    compared = result.compared()[0]
    assert f"  reaching W_Q: unscaled {THIS_RUN} (below 0.001), scaled {THIS_RUN} (0.001 or more)" in compared


@pytest.mark.reads(SMALLER_RATE)
def test_a_smaller_rate_turns_the_stall_verdict(runs):
    result = runs[SMALLER_RATE]
    outcomes = {r["name"]: r["outcome"] for r in result.records}
    assert outcomes["without scaling learning stalls"] == CONTRADICTS
    assert outcomes["without scaling the softmax starts nearly one-hot"] == UPHOLDS
    assert outcomes["held-out loss after / before, unscaled"] == CONTRADICTS  # it learned: below 0.5 of its start
    assert outcomes["held-out loss after / before, scaled"] == UPHOLDS
    assert "NOT AS THE PAGE SAYS" in result.stdout and "CONTRADICTS" not in result.stdout


@pytest.mark.reads(NARROW)
def test_a_narrower_head_turns_the_one_hot_verdict_while_its_gradients_still_go_quiet(runs):
    outcomes = {r["name"]: r["outcome"] for r in runs[NARROW].records}
    assert outcomes["without scaling the softmax starts nearly one-hot"] == CONTRADICTS
    assert outcomes["without scaling the gradients then go close to zero"] == UPHOLDS
