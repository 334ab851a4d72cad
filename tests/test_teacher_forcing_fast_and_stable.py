"""week2/19_teacher_forcing_fast_and_stable: its masked self-attention is the page's formula
(and torch's), its step is torch.optim.Adam with torch's betas and eps, its decoder looks only
back (so one teacher-forced pass scores every place as the step-by-step passes do), its own
guesses are its argmaxes written one place at a time, its held-out strings are never trained
on, every threshold of its verdicts is pinned by a value on each side, each trained number is
printed beside its band, and each verdict turns in a world that lacks what the page says (its
default output is the same bytes under the kernel settings of tests/test_portability.py)."""
import math

from common.records import CONTRADICTS, NOT_TESTED, UPHOLDS

import pytest
import torch
import torch.nn.functional as F

from check.comparing import THIS_RUN
from tests.conftest import lesson_run, load_script, main_in_process
from tests.conftest import main_outcomes as run_main

NAME = "week2/19_teacher_forcing_fast_and_stable"
DEFAULT = lesson_run(NAME)
CHECKS = ["teacher forcing makes training fast", "teacher forcing makes training stable",
          "trained on gold prefixes only, the decoder carries a slip on"]
# the trained numbers it prints, each beside its band (or shown, not judged), in the order printed
COUNTED = ["totals right writing alone, teacher-forced", "totals right writing alone, own guesses",
           "whole strings right writing alone, teacher-forced", "whole strings right writing alone, own guesses",
           "largest rise of the loss, teacher-forced", "largest rise of the loss, own guesses"]
MISMATCH = ["totals right with the gold prefix, teacher-forced",
            "totals right with the gold prefix and wrong alone, teacher-forced",
            "totals right after one slip, teacher-forced", "totals right after one slip, own guesses"]


@pytest.fixture(scope="module")
def tf():
    return load_script(NAME)


def some(tf, n=20, seed=3):
    return torch.randint(0, 10, (n, tf.T), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- the pieces against torch's

def test_masked_self_attention_is_the_pages_and_torchs(tf):
    """The decoder's one head: softmax(Q K^T / sqrt(d) + M) V W_O, M = -inf above the diagonal,
    by hand from its weights, and torch's scaled_dot_product_attention(is_causal=True)."""
    attn = tf.starting_decoder(5).self_attn
    a = torch.randn(4, tf.T, tf.D, dtype=torch.float64)
    Q, K, V = (a @ W.weight.T for W in (attn.W_Q, attn.W_K, attn.W_V))  # [N, T, d]
    M = torch.full((tf.T, tf.T), -math.inf, dtype=torch.float64).triu(1)
    by_hand = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(tf.D) + M, dim=-1) @ V @ attn.W_O.weight.T
    theirs = F.scaled_dot_product_attention(Q, K, V, is_causal=True) @ attn.W_O.weight.T
    with torch.no_grad():
        mine = attn(a, mask=tf.causal_mask(tf.T))[0]
    assert (mine - by_hand).abs().max() < 1e-12 and (mine - theirs).abs().max() < 1e-12
    assert attn.W_Q.bias is None and attn.h == 1


def test_the_step_is_torchs_adam(tf, monkeypatch):
    """train() steps torch.optim.Adam at LR with torch's betas and eps, once a batch, and its
    first loss is the starting decoder's."""
    seen, step = [], torch.optim.Adam.step

    def noted(self, *args, **kwargs):
        seen.append((self.param_groups[0]["lr"], self.defaults["betas"], self.defaults["eps"]))
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", noted)
    x = some(tf, 64).view(4, 16, tf.T)
    decoder, losses, passes = tf.train(5, x, True)
    assert seen == [(tf.LR, (0.9, 0.999), 1e-8)] * 4 and passes == 1
    with torch.no_grad():
        start = F.cross_entropy(tf.starting_decoder(5)(x[0], tf.gold_prefix(tf.totals(x[0]))).transpose(1, 2),
                                tf.totals(x[0]))
    assert math.isclose(losses[0], start.item(), rel_tol=1e-12)
    moved = decoder.E_x.weight - tf.starting_decoder(5).E_x.weight
    assert moved.abs().max() > 1e-3


def test_the_decoder_looks_only_back(tf):
    """Changing the inputs after place t leaves the scores up to t alone: one teacher-forced
    pass scores every place exactly as place-by-place passes would."""
    decoder, x = tf.starting_decoder(5), some(tf)
    y_in = tf.gold_prefix(tf.totals(x))
    with torch.no_grad():
        before = decoder(x, y_in)
        for t in range(tf.T - 1):
            changed = y_in.clone()
            changed[:, t + 1:] = (changed[:, t + 1:] + 3) % 10
            assert (decoder(x, changed)[:, :t + 1] - before[:, :t + 1]).abs().max() < 1e-12
            assert (decoder(x, changed)[:, t + 1:] - before[:, t + 1:]).abs().max() > 1e-6


def test_gold_prefix_and_own_guesses(tf):
    x = some(tf)
    y = tf.totals(x)
    assert y[0].tolist() == [sum(x[0, :i + 1].tolist()) % 10 for i in range(tf.T)]
    assert tf.gold_prefix(y).tolist() == [[tf.START] + row[:-1] for row in y.tolist()]
    decoder = tf.starting_decoder(5)
    guessed = tf.own_guesses(decoder, x)
    assert decoder.passes == tf.T - 1
    with torch.no_grad():
        for t in range(1, tf.T):  # each input: the decoder's argmax at the place before, from the inputs before
            assert torch.equal(guessed[:, t], decoder(x, guessed)[:, t - 1].argmax(-1))
    given = torch.tensor([[tf.START, 4, 9]] * len(x))
    assert torch.equal(tf.own_guesses(decoder, x, given)[:, :3], given)


def test_held_out_strings_are_never_trained_on(tf):
    batches, held_out = tf.training_and_held_out(42)
    assert batches.shape == (tf.STEPS, tf.BATCH, tf.T) and len(held_out) == tf.HELD_OUT
    longest, _ = tf.training_and_held_out(42, tf.MAX_STEPS)
    assert torch.equal(longest[:tf.STEPS], batches)
    assert not set(map(tuple, longest.reshape(-1, tf.T).tolist())) & set(map(tuple, held_out.tolist()))


def rule(tf, slip_at_place_1=False):
    """A decoder that writes the rule itself, total before + digit (the start symbol counts 0);
    slip_at_place_1: one off at place 1 alone, whatever its input."""
    def decoder(x, y_in):
        total = y_in.clamp(max=9) * (y_in != tf.START) + x  # [N, T]
        if slip_at_place_1:
            total[:, 0] += 1
        return F.one_hot(total % 10, 10).double()
    return decoder


def test_both_copies_start_from_the_same_weights_and_see_the_same_strings(tf):
    """In a run (main(), --steps 10): every decoder the run builds (starting_decoder, wrapped:
    the real one draws it) as it was drawn, and the strings each training is handed. Two
    copies, one teacher-forced and one on its own guesses, from the same weights on the same
    strings."""
    right_start, right_train = tf.starting_decoder, tf.train
    drawn, handed = [], []

    def noted_start(seed):
        decoder = right_start(seed)
        drawn.append({name: w.detach().clone() for name, w in decoder.state_dict().items()})
        return decoder

    def noted_train(seed, batches, teacher_forced):
        handed.append((teacher_forced, batches))
        return right_train(seed, batches, teacher_forced)

    main_in_process(tf, "--steps", "10", starting_decoder=noted_start, train=noted_train)
    assert [forced for forced, _ in handed] == [True, False]
    assert torch.equal(handed[0][1], handed[1][1]) and len(handed[0][1]) == 10
    forced, own = drawn
    assert forced.keys() == own.keys()
    assert all(torch.equal(forced[name], own[name]) for name in forced), "the two copies start from other weights"
    assert not torch.equal(forced["E_x.weight"], right_start(43).state_dict()["E_x.weight"])  # a seed shows


def test_the_slip_is_handed_in_where_the_notes_say(tf):
    """written(): after the slip, only places SLIP_AT + 1 on count; a decoder that reads the
    total before (total before + digit) carries the slip into every one of them."""
    with_gold, alone, after_slip = tf.written(rule(tf), some(tf, 200))
    assert with_gold.all() and alone.all() and after_slip.shape == (200, tf.T - tf.SLIP_AT)
    assert not after_slip.any()


def test_each_input_is_the_one_its_line_names(tf):
    """written() hands the decoder the gold prefix, its own guesses and the slipped prefix
    where each line says: a decoder wrong at place 1 only is right at the 5 other places with
    the gold prefix, and wrong at all 6 writing alone (its own slip at place 1 is carried on).
    A perfect decoder cannot tell the inputs apart: fed its own guesses, it is right with the
    gold prefix all the same."""
    with_gold, alone, after_slip = tf.written(rule(tf, slip_at_place_1=True), some(tf, 200))
    assert with_gold.sum(1).tolist() == [tf.T - 1] * 200 and not with_gold[:, 0].any()
    assert not alone.any() and not after_slip.any()


# ---------------------------------------------------------------- thresholds, on both sides

def test_fast_thresholds(tf):
    assert (tf.LEARNED, tf.NOT_YET) == (0.75, 0.5)
    page = {"passes": 1}, {"passes": 6}
    assert tf.learns_faster({**page[0], "alone": 0.751}, {**page[1], "alone": 0.499})
    assert not tf.learns_faster({**page[0], "alone": 0.75}, {**page[1], "alone": 0.1})
    assert not tf.learns_faster({**page[0], "alone": 0.9}, {**page[1], "alone": 0.5})
    assert not tf.learns_faster({"passes": 6, "alone": 0.9}, {**page[1], "alone": 0.1})  # no fewer passes


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


def test_a_decoder_that_recomputes_every_total_turns_the_mismatch_verdict(tf):
    """A writer that ignores the total before and adds up the digits itself has no mismatch:
    a slip handed in changes nothing."""
    def recomputes(x, y_in):
        return F.one_hot(tf.totals(x), 10).double()

    with_gold, alone, after_slip = tf.written(recomputes, some(tf, 200))
    measured = {"gold": with_gold.double().mean().item(), "after slip": after_slip.double().mean().item()}
    assert measured == {"gold": 1.0, "after slip": 1.0} and not tf.mismatch_shows(measured)


def test_where_a_label_does_not_hang_on_the_label_before_the_trained_decoder_carries_no_slip(tf):
    """The other world, trained through the same code: labels that are the digits themselves
    (a copy). The same decoder, reading the label before as it does, is trained teacher-forced
    and learns to write it right with the gold prefix; a slip handed in then changes nothing,
    and the record turns."""
    out, records = run_main(tf, totals=lambda x: x.clone())
    assert records["totals right with the gold prefix, teacher-forced"] == UPHOLDS
    assert records["totals right after one slip, teacher-forced"] == CONTRADICTS
    assert records[CHECKS[2]] == CONTRADICTS
    assert "carries the slip on (below 50% right after it): NOT AS THE PAGE SAYS" in out


def test_a_decoder_that_has_not_learned_the_rule_turns_the_mismatch_verdict(tf):
    """One step of training: below 75% right even with the gold prefix, so a slip it fails
    after shows nothing about the mismatch, and the record says the page is not upheld."""
    right = tf.train
    _, records = run_main(tf, train=lambda seed, batches, teacher_forced: right(seed, batches[:1], teacher_forced))
    assert records["totals right with the gold prefix, teacher-forced"] == CONTRADICTS
    assert records[CHECKS[2]] == CONTRADICTS


def test_the_stable_check_says_why_it_is_not_tested(tf):
    """Neither curve jumped: the record is not tested here, and says why; a jump turns it."""
    right = tf.largest_rise
    _, records = main_in_process(tf)
    assert records[CHECKS[1]]["outcome"] == NOT_TESTED and "no difference" in records[CHECKS[1]]["why"]
    _, records = main_in_process(tf, largest_rise=lambda losses: right(losses) + 0.3)  # both curves jump
    assert records[CHECKS[1]]["outcome"] == CONTRADICTS and "why" not in records[CHECKS[1]]


# ---------------------------------------------------------------- the run

@pytest.mark.reads(DEFAULT)
def test_default_run_upholds_the_page_and_says_stable_was_not_a_difference(runs):
    result = runs[DEFAULT]
    made = result.records
    assert [r["name"] for r in made] == COUNTED + CHECKS[:2] + MISMATCH + CHECKS[2:]
    outcomes = {r["name"]: r["outcome"] for r in made}
    judged = [COUNTED[0], COUNTED[1], COUNTED[4], CHECKS[0], MISMATCH[0], MISMATCH[2], CHECKS[2]]
    assert [outcomes[name] for name in judged] == [UPHOLDS] * len(judged)
    assert all(outcome == NOT_TESTED for name, outcome in outcomes.items() if name not in judged)
    assert "decoder passes one after another, a step                          1                        6" \
        in result.stdout
    assert "Stable: neither curve jumped: not a difference at this size" in result.stdout


@pytest.mark.reads(DEFAULT)
def test_each_trained_number_is_printed_beside_its_band(runs):
    """Count it: the run's own number, then the band its record judges it by (none where it is
    shown, not judged); the check reads the band in the number's place."""
    result = runs[DEFAULT]
    for r in result.records:
        if "shown" not in r:
            continue
        percent = r["shown"].endswith("%")
        assert math.isclose(float(r["shown"].rstrip("%")) / (100 if percent else 1), r["value"], abs_tol=0.0006), r
        if r["threshold"] and r["outcome"] == UPHOLDS:
            assert f"{r['shown']} ({r['threshold']})" in result.stdout, r
    compared = result.compared()[0]
    # (the padding beside a band is compared as one space: it depends on the number's width)
    assert "  totals right ‹this run's number› (above 75%) ‹this run's number› (below 50%)\n" in compared
    assert "  right with the gold prefix, wrong alone ‹this run's number›\n" in compared
    assert "  right from place 3 on, after one slip ‹this run's number› (below 50%) ‹this run's number›\n" in compared
    assert f"largest rise of the loss above its lowest {THIS_RUN} (0.25 or less) {THIS_RUN}\n" in compared


LONGER = lesson_run(NAME, "--steps", "150")


@pytest.mark.reads(LONGER)
def test_given_three_times_the_steps_own_guesses_get_there_too(runs):
    result = runs[LONGER]
    outcomes = {r["name"]: r["outcome"] for r in result.records}
    assert outcomes[CHECKS[0]] == CONTRADICTS and outcomes[CHECKS[2]] == UPHOLDS
    left = {r["name"]: r["value"] for r in result.records}
    assert left[COUNTED[0]] > 0.75 and left[COUNTED[1]] > 0.75  # both decoders write the totals
    assert outcomes[COUNTED[1]] == CONTRADICTS  # own guesses: not below 50% any more
    assert "  in all 150 steps                                              150                      900" \
        in result.stdout
