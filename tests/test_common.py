"""The shared pieces every lesson uses: one call for its command line, the words of a
verdict and a band, and the records a check hands run_all."""
from common import records
from common.cli import int_range, knob, lesson_args, too_big
from common.records import band, check, collected, said

import pytest

KNOBS = [knob("--size", type=int_range(1, 100), default=4, help="a size"),
         knob("--table", action="store_true", help="also print the exact numbers")]


def parse(*argv, **options):
    return lesson_args(__file__, "a lesson", KNOBS, [("--size 9", "a bigger one")], argv=list(argv), **options)


def test_one_call_parses_the_knobs_and_knows_the_pages_settings():
    assert parse().at_defaults and records.at_defaults
    assert not parse("--size", "9").at_defaults and not records.at_defaults
    assert parse("--table", print_only=("table",)).at_defaults  # --table changes only what is printed
    assert parse(figure="where the figure goes").figure is None


def test_a_limit_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        parse("--size", "90", limits=lambda args: too_big(work=args.size * 10**8, knobs=("--size",)))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the limit is 2,000,000,000 (a few seconds): lower one of --size" in err
    assert parse("--size", "9", limits=lambda args: too_big(work=args.size * 10**8)).size == 9


def test_a_verdict_says_contradicts_only_at_the_pages_settings():
    parse()
    assert [said(True), said(False), said(None)] == ["as the page says", "CONTRADICTS THE PAGE", "not tested"]
    parse("--size", "9")
    assert said(False) == "NOT THE PAGE'S PICTURE at these settings"
    parse()


def test_bands_include_their_edges_in_the_middle():
    assert [band(v, 0.6, 0.9) for v in (0.59, 0.6, 0.75, 0.9, 0.9001)] == [
        "below 0.60", "0.60 to 0.90", "0.60 to 0.90", "0.60 to 0.90", "above 0.90"]


def test_a_check_prints_its_line_and_records_its_outcome(capsys):
    with collected() as got:
        check("rows sum to 1", "rows sum to 1: yes", True, value=1.0, threshold="within 1e-6")
        check("held-out right", "right: 87/96", 87 >= 90, value=87, threshold="at least 90")
        check("one-hot", "not tested here", None)
    assert capsys.readouterr().out == "rows sum to 1: yes\nright: 87/96\nnot tested here\n"
    assert [r["outcome"] for r in got] == ["upholds the page", "contradicts the page", "not tested here"]
    with pytest.raises(ValueError):
        check("a | b", "x", True)  # a name is one field of the golden checks file


def test_adam_step_is_torchs_adam_to_the_last_bit():
    """common.blocks.adam_step against torch.optim.Adam (its plain single-tensor path) over 30
    steps on weights of three shapes, one of them never given a gradient."""
    torch = pytest.importorskip("torch")
    from common.blocks import adam_state, adam_step
    generator = torch.Generator().manual_seed(0)
    ours = [torch.randn(shape, generator=generator) for shape in ((4, 3), (7,), (2, 2))]
    theirs = [w.clone().requires_grad_() for w in ours]
    optimiser = torch.optim.Adam(theirs, lr=0.01, betas=(0.9, 0.98), eps=1e-9, foreach=False)
    state = adam_state(ours)
    for step in range(1, 31):
        grads = [torch.randn(w.shape, generator=generator) for w in ours[:2]] + [None]
        for w, g in zip(theirs, grads, strict=True):
            w.grad = g
        optimiser.step()
        adam_step(ours, grads, state, step, lr=0.01, betas=(0.9, 0.98), eps=1e-9)
        assert all(torch.equal(a, b.detach()) for a, b in zip(ours, theirs, strict=True))


def test_the_shared_mask_and_table_are_the_lessons_that_teach_them():
    """causal_mask as week2/01 builds it, sinusoidal_pe as week2/03 writes the formula (a
    table with pair index i in place of 2i would be 0.5 or more away)."""
    torch = pytest.importorskip("torch")
    from common.blocks import causal_mask, sinusoidal_pe

    from tests.conftest import load_script
    mask_lesson, table_lesson = load_script("week2/01_causal_mask"), load_script("week2/03_sinusoidal_pe")
    for T in (1, 4, 9):
        blocked = torch.as_tensor(mask_lesson.causal_mask(T) == 1)  # the lesson's cells to block
        mask = causal_mask(T)
        assert torch.equal(mask == -torch.inf, blocked) and torch.equal(mask == 0, ~blocked)
    for max_len, d in ((10, 4), (50, 16), (7, 64)):
        gap = sinusoidal_pe(max_len, d, torch.float64) - torch.as_tensor(table_lesson.sinusoidal_pe(max_len, d))
        assert gap.abs().max() < 1e-12  # numpy's sin and torch's round their last bits apart


@pytest.mark.parametrize("name", ["week1/17_unscaled_scores_stall", "week2/18_deep_stacks_train",
                                  "week2/20_warmup_not_universal"])
def test_held_out_data_never_shares_a_generator_with_the_batches(name):
    """These lessons draw their batches from a generator seeded --seed + 1 and keep no list of
    what was trained on, so the held-out generator's seed lies past every --seed + 1 (a seed
    of 12345 made --seed 12344 train on the held-out data). week1/16 and week2/19 instead
    drop every held-out candidate that training saw."""
    from common.cli import SEED

    from tests.conftest import load_script

    assert load_script(name).HELD_OUT_SEED > SEED.hi + 1
