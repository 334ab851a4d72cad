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
