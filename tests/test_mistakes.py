"""The "Mistakes people make" scripts (week1/08, week2/11): no verdict is a foregone conclusion.

Each belief's measurement in those scripts is a function of the world it measures. Here
each one is fed the real world (the one the script uses) and then, in its place, the
belief's world and other wrong implementations: the verdict must be "as the page says"
for the first and flip to CONTRADICTS THE PAGE for every wrong one. The default runs must
uphold the page on every belief, and list the bullets they cannot test in their notes too.
"""
import math
import re
from pathlib import Path

from common.printing import yes
from common.records import CONTRADICTS as RECORD_CONTRADICTS
from common.records import NOT_TESTED, UPHOLDS
from common.report import AS_THE_PAGE_SAYS, CONTRADICTS, MOVES, moved, verdict

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.conftest import SCRIPTS, load_script

W1, W2 = load_script("week1/08_mistakes_shown"), load_script("week2/11_mistakes_shown")
F64 = torch.float64
SEED = 42
ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- wrong implementations beyond the scripts' own

def bahdanau_softmax_over_steps(S, H, W_a, U_a, v_a):
    """The page's scores, normalized along the wrong axis (over the decoder steps)."""
    e = torch.tanh((S @ W_a)[:, None, :] + (H @ U_a)[None, :, :]) @ v_a
    return torch.softmax(e, dim=0)


def content_with_a_diagonal_pull(q, k, v):
    """Content scores plus a strong pull toward the diagonal."""
    distance = (torch.arange(q.shape[-2])[:, None] - torch.arange(k.shape[-2])[None, :]).abs().to(F64)
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) - 50.0 * distance, dim=-1) @ v


def torch_weights_turned_over(x_q, x_kv):
    """torch's weights with rows and columns swapped: [keys, queries]."""
    return W1.torch_weights(x_q, x_kv).transpose(-1, -2)


def scaling_switch_ignored(d, scaled):
    """torch's layer whose scaling switch does nothing: the measurement must notice."""
    return W1.torch_attention_layer(d, True)


def column_vector_convention(concat, W_O):
    """W^O from the left on a column vector: W^O^T [2, 4] @ concat^T [4, 1] gives a [2, 1] column."""
    return W_O.T @ concat.T


def decoder_without_mask():
    """week2/11's small decoder, but with no causal mask: a position sees the later inputs."""
    d = 8
    embed, place = nn.Embedding(W2.V, d, dtype=F64), nn.Embedding(8, d, dtype=F64)
    layer = nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True, dtype=F64)
    to_vocab = nn.Linear(d, W2.V, dtype=F64)
    return lambda tokens: to_vocab(layer(embed(torch.tensor([tokens])) + place(torch.arange(len(tokens)))))[0]


def counts_without_biases(d, h, f):
    """torch's counts, but the biases and LayerNorms left out: a count world that is not the page's."""
    layer = nn.TransformerEncoderLayer(d, h, f, device="meta")
    weights = [p for name, p in layer.named_parameters() if name.endswith("weight") and "norm" not in name]
    return {"attention": 4 * d * d, "FFN": 2 * d * f, "layer": sum(p.numel() for p in weights),
            "head 1's W^Q": d * (d // h)}


def whole_W_Q_for_one_head(d, h, f):
    """torch's layer counts, but the heads split by copying: each head reads all of W^Q, [d, d]."""
    def full_width_heads(x, h):  # [B, T, d] -> [B, h, T, d]: h copies, not h slices
        return x[:, None].expand(x.shape[0], h, *x.shape[1:])
    return W1.torch_counts(d, h, f, split=full_width_heads)


def no_counts(d, h, f):
    return {"attention": 0, "FFN": 0, "layer": 0, "head 1's W^Q": 0}


def tags_from_two(T, d):
    """Positions counted from 2: a start the page does not use either."""
    return W2.sinusoidal_tags(T + 2, d)[2:]


def no_mask(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def smoothing_gold_exactly_0_9(scores, gold):
    """The other convention: the gold gets exactly 1 - eps = 0.9, the other classes share 0.1."""
    target = torch.full_like(scores, 0.1 / (scores.shape[-1] - 1))
    target[0, gold] = 0.9
    return F.cross_entropy(scores, target)


# ---------------------------------------------------------------- every belief: measurement, real world, wrong worlds

def seeded(measure):
    return lambda world: measure(world, SEED)


CASES = {
    ("week1", 1): (seeded(W1.what_steers_the_weights), W1.bahdanau,
                   [W1.bahdanau_over_decoder_states, bahdanau_softmax_over_steps]),
    ("week1", 2): (seeded(W1.where_each_step_looks), W1.sdpa, [W1.diagonal_attention, content_with_a_diagonal_pull]),
    ("week1", 3): (W1.what_gets_mixed, W1.sdpa, [W1.keys_mixed]),
    ("week1", 4): (seeded(W1.which_way_weights_add_up), W1.torch_weights,
                   [W1.softmax_over_queries, torch_weights_turned_over]),
    ("week1", 5): (seeded(W1.do_the_roles_part), W1.torch_projections, [W1.one_shared_matrix]),
    ("week1", 6): (seeded(W1.do_encoder_words_talk), W1.encoder_layer, [W1.ffn_only]),
    ("week1", 7): (seeded(W1.does_order_show), W1.torch_self_attention, [W1.self_attention_with_positions]),
    ("week1", 8): (seeded(W1.are_rows_flat), W1.sdpa, [W1.flattening_scale]),
    ("week1", 9): (seeded(W1.what_makes_rows_add_up), W1.torch_scaling_switch, [W1.scaling_that_normalizes]),
    ("week1", 10): (seeded(W1.largest_weight), W1.sdpa, [W1.spread_scaling]),
    ("week1", 11): (seeded(W1.what_scaling_costs), W1.torch_attention_layer,
                    [W1.learned_scale_layer, scaling_switch_ignored]),
    ("week1", 12): (W1.weights_as_heads_grow, W1.torch_heads, [W1.full_width_heads]),
    ("week1", 13): (W1.where_W_O_goes, W1.torch_out_proj, [W1.W_O_on_the_left, column_vector_convention]),
    ("week1", 14): (seeded(W1.which_outputs_move), W1.torch_ffn, [W1.neighbour_ffn]),
    ("week1", 15): (seeded(W1.do_layers_part), W1.torch_encoder_stack, [W1.one_layer_six_times]),
    ("week1", 16): (seeded(W1.can_word_1_see_word_3), W1.encoder_layer, [W1.causal_encoder]),
    ("week1", 17): (seeded(W1.where_the_norm_sits), W1.encoder_layer, [W1.pre_norm_layer]),
    ("week1", 18): (W1.counts_by_what_is_included, W1.torch_encoder_layer_512, [W1.bare_ffn_512]),
    ("week1", 20): (W1.score_entries, W1.torch_score_table, [W1.fixed_window]),
    ("week2", 1): (seeded(W2.inputs_when_generating), W2.torch_decoder, [W2.never_wrong_decoder]),
    ("week2", 2): (seeded(W2.who_sees_their_own_label), W2.shifted, [W2.unshifted]),
    ("week2", 3): (seeded(W2.weight_on_itself), W2.torch_causal, [W2.diagonal_blocked_too, no_mask]),
    ("week2", 4): (seeded(W2.does_the_future_count), W2.torch_causal, [W2.zero_future_values, no_mask]),
    ("week2", 5): (seeded(W2.row_with_no_key), W2.torch_masked, [W2.big_negative_mask]),
    ("week2", 6): (seeded(W2.what_training_sees), W2.whole_source, [W2.source_so_far]),
    ("week2", 7): (seeded(W2.what_a_decoder_layer_has), W2.torch_decoder_layer, [W2.encoder_layer_plus_mask]),
    ("week2", 8): (W2.count_as_asked, W2.torch_embedding_and_output, [W2.nothing_to_exclude]),
    ("week2", 9): (seeded(W2.how_many_matrices), W2.tied_model, [W2.untied_copies]),
    ("week2", 10): (W2.attention_blocks, W2.torch_encoder_layer_512, [W2.two_block_layer_512]),
    ("week2", 11): (W2.distance_as_gap_grows, W2.sinusoidal_tags, [W2.counting_tags]),
    ("week2", 12): (W2.pairs_on_one_circle, W2.sinusoidal_tags, [W2.coordinate_index_tags]),
    ("week2", 13): (W2.position_read_back, W2.sinusoidal_tags, [W2.tags_from_one, tags_from_two]),
    ("week2", 14): (seeded(W2.depends_on_the_batch), W2.torch_layer_norm, [W2.torch_batch_norm]),
    ("week2", 15): (seeded(W2.train_versus_eval), W2.torch_batch_norm, [W2.batch_norm_without_running_stats]),
    ("week2", 16): (W2.one_value_per_feature, W2.torch_batch_norm, [W2.batch_norm_in_eval_mode]),
    ("week2", 17): (seeded(W2.gradient_through_the_block), W2.torch_residual, [W2.uncancellable_shortcut]),
    ("week2", 18): (W2.which_target_the_loss_uses, W2.torch_smoothed_loss,
                    [W2.plain_nll, smoothing_gold_exactly_0_9]),
    ("week2", 19): (W2.how_far_weights_move, W2.torch_adam, [W2.exactly_the_rate]),
    ("week2", 20): (seeded(W2.can_word_1_see_word_3), W2.torch_decoder_stack, [W2.mask_in_first_layer_only]),
    ("week1", 19): (W1.exact_counts, W1.torch_counts,
                    [W1.course_round_numbers, counts_without_biases, whole_W_Q_for_one_head, no_counts]),
}


@pytest.mark.parametrize(("measure", "real", "wrongs"), CASES.values(), ids=[f"{w}-{n}" for w, n in CASES])
def test_a_wrong_world_in_the_real_ones_place_flips_the_verdict(measure, real, wrongs):
    found = measure(real)
    for wrong in wrongs:
        found_wrong = measure(wrong)
        assert verdict(found, found_wrong) == AS_THE_PAGE_SAYS, (found.seen, found_wrong.seen)
        assert verdict(found_wrong, found) == CONTRADICTS, f"{wrong.__name__}: {found_wrong.seen}"


def test_the_shift_alone_does_not_stop_the_leak_without_the_mask():
    """Belief 2 (week 2) flips too when the decoder is wrong rather than the inputs."""
    found = W2.who_sees_their_own_label(W2.shifted, SEED, make_decoder=decoder_without_mask)
    assert verdict(found, W2.who_sees_their_own_label(W2.unshifted, SEED)) == CONTRADICTS, found.seen


# ---------------------------------------------------------------- the default runs

NAMES = {"week1": "week1/08_mistakes_shown", "week2": "week2/11_mistakes_shown"}


@pytest.fixture
def runs(outputs):
    return {week: outputs[name] for week, name in NAMES.items()}


@pytest.mark.parametrize("week", NAMES)
def test_the_default_run_upholds_the_page_on_every_belief_and_each_has_a_flip_case(runs, week):
    result = runs[week]
    assert result.returncode == 0, result.stdout[-600:] + result.stderr
    verdicts = re.findall(r"^   Verdict: (.*)$", result.stdout, flags=re.M)
    numbers = [int(n) for n in re.findall(r"^(\d+)\. Belief: ", result.stdout, flags=re.M)]
    assert verdicts and set(verdicts) == {AS_THE_PAGE_SAYS}
    assert numbers == list(range(1, len(verdicts) + 1))
    assert sorted(n for w, n in CASES if w == week) == numbers
    assert f"beliefs tested: {len(verdicts)}; refuted as the page says: {len(verdicts)}; contradicting the page: 0" \
        in result.stdout


def notes_section(name):
    """The notes section a script's docstring names on its last line ("Notes: week1/NOTES.md,
    section 08."), from its "## 08 ..." heading to the next."""
    last = load_script(name).__doc__.strip().splitlines()[-1]
    named = re.fullmatch(r"Notes: (week\d/NOTES\.md), section (\d+)\.", last)
    assert named, f"{name}'s docstring ends with {last!r}, not with where its notes are"
    path, number = named.groups()
    section = re.search(rf"^## {number} .*?(?=^## |\Z)", (ROOT / path).read_text(encoding="utf-8"), flags=re.M | re.S)
    assert section, f"{path} has no section {number}"
    return section.group()


@pytest.mark.parametrize("week", NAMES)
def test_the_docstring_is_short_and_its_notes_are_where_it_says(week):
    assert len(load_script(NAMES[week]).__doc__.strip().splitlines()) <= 20
    number = NAMES[week].split("/")[1][:2]
    assert notes_section(NAMES[week]).splitlines()[0] == f"## {number} mistakes shown"


@pytest.mark.parametrize("week", NAMES)
def test_untested_bullets_are_named_in_the_notes_and_the_output(runs, week):
    untested = runs[week].stdout.split("\nBullets no computation here can settle:\n")[1]
    listed = re.findall(r'^  - "(.+?) \(section \d\)": ', untested, flags=re.M)
    assert listed
    written = " ".join(notes_section(NAMES[week]).split()).lower()
    for bullet in listed:
        assert bullet.lower() in written, bullet
    assert f"bullets no computation here can settle (listed above): {len(listed)}" in runs[week].stdout


# ---------------------------------------------------------------- bullets another lesson runs

SCRIPT = {"week1": W1, "week2": W2}
ELSEWHERE = [(week, bullet, lesson, checks, shows) for week, script in SCRIPT.items()
             for bullet, lesson, checks, shows in script.ANOTHER_LESSON_RUNS]


def disagreements(records, checks, shows):
    """What a lesson's records hold against a mistakes line that names them: each named check
    not made or with another outcome than the line reports; each measure the line quotes
    ("fewer than 90%", "4 heads") that the thresholds of those checks do not say, whole."""
    made = {r["name"]: r for r in records}
    found = [f'"{name}": {made[name]["outcome"] if name in made else "not made"}, the line says {outcome}'
             for name, outcome in checks.items() if name not in made or made[name]["outcome"] != outcome]
    thresholds = " ".join(str(made[name].get("threshold")) for name in checks if name in made)
    quoted = re.findall(r"(?:at least|fewer than|more than|at most|above|below|under) \d+(?:\.\d+)?%?|\d+ heads", shows)
    return found + [f"{phrase}: in no threshold of those checks" for phrase in quoted if phrase not in thresholds]


@pytest.mark.parametrize(("week", "bullet", "lesson", "checks", "shows"), ELSEWHERE,
                         ids=[f"{week}-{lesson}" for week, _, lesson, _, _ in ELSEWHERE])
def test_a_bullet_another_lesson_runs_has_there_the_outcome_its_line_says(outputs, week, bullet, lesson, checks,
                                                                           shows):
    """The line names a lesson and its checks (as in expected_outputs/<lesson>.checks.txt):
    that lesson's default run, the check's own, makes them with the outcome the line reports."""
    result = outputs[lesson]
    assert result.returncode == 0, result.stderr[-600:]
    assert disagreements(result.records, checks, shows) == []


def test_a_check_that_turned_vanished_or_changed_its_threshold_disagrees_with_the_line():
    name = "a weight is not a guaranteed explanation"
    shows = "answers at least 90% right, looks at the noun in fewer than 90%"
    made = {"name": name, "outcome": UPHOLDS, "threshold": "the usual layer 2: at least 90% right, fewer than 90% "
            "looking hardest at the noun it means"}
    assert disagreements([made], {name: UPHOLDS}, shows) == []
    assert disagreements([{**made, "outcome": RECORD_CONTRADICTS}], {name: UPHOLDS}, shows)
    lowered = made["threshold"].replace("fewer than 90%", "fewer than 50%")  # "90%" is still in "at least 90%"
    assert disagreements([{**made, "threshold": lowered}], {name: UPHOLDS}, shows) == \
        ["fewer than 90%: in no threshold of those checks"]
    heads = {"name": "n", "outcome": UPHOLDS, "threshold": "with 8 heads: a head whose knock-out ..."}
    assert disagreements([heads], {"n": UPHOLDS}, "trained with 4 heads, a head knocked out")
    assert disagreements([{**made, "outcome": NOT_TESTED}], {name: UPHOLDS}, shows)
    assert disagreements([], {name: UPHOLDS}, shows)
    assert disagreements([{**made, "threshold": "at least 80% right"}], {name: UPHOLDS}, shows)
    assert disagreements([made], {name: NOT_TESTED}, shows)


@pytest.mark.parametrize("week", NAMES)
def test_each_bullet_another_lesson_runs_is_printed_with_its_command_and_named_in_the_notes(runs, week):
    printed = " ".join(runs[week].stdout.split("\nBullets another lesson runs")[1]
                       .split("\nBullets no computation here can settle:")[0].split())
    written = " ".join(notes_section(NAMES[week]).split()).lower()
    assert SCRIPT[week].ANOTHER_LESSON_RUNS
    for bullet, lesson, _, shows in SCRIPT[week].ANOTHER_LESSON_RUNS:
        assert lesson in SCRIPTS, lesson
        assert f'- "{bullet}": python {lesson}.py shows {" ".join(shows.split())}' in printed
        assert bullet.lower() in written and lesson in written, bullet


def test_moved_means_a_change_bigger_than_its_tolerance_or_another_shape():
    """Both scripts' "moves" and "changes": by more than 1e-9 (the default), at the edge not yet."""
    a = torch.zeros(3, dtype=F64)
    assert MOVES == 1e-9
    assert not moved(a, a) and not moved(a, a + MOVES) and moved(a, a + 2 * MOVES) and moved(a, a - 2 * MOVES)
    assert moved(a, a[None]), "a [1, 3] against a [3] broadcasts to no difference, but it is another shape"
    assert not moved(a, a + 0.5, tolerance=0.5) and moved(a, a + 0.5, tolerance=0.25)
    assert (yes(True), yes(False), yes(torch.tensor(True))) == ("yes", "no", "yes")


def test_the_mistakes_scripts_tags_are_week2_03s_table():
    """Beliefs 12 and 13 measure properties of W2.sinusoidal_tags: it must be the page's formula
    (week2/03's table, itself checked against torch), or a wrong formula would pass unseen.
    It is common/blocks.py's table, in float64 (its 1e-9 thresholds need float64's rounding)."""
    table = load_script("week2/03_sinusoidal_pe").sinusoidal_pe(64, 16)
    assert W2.sinusoidal_tags(64, 16).dtype == F64
    assert W2.sinusoidal_tags(64, 16).numpy() == pytest.approx(table, abs=1e-12)
