"""The worked-examples ledger: page-precision formatting, agreement marks, exit status."""
from fractions import Fraction

from common.report import Ledger, like


def test_like_uses_the_pages_precision_element_by_element():
    assert like([0.7310585786, 0.2689414214, 0.0, 0.0], "[0.7311, 0.2689, 0, 0]") == "[0.7311, 0.2689, 0, 0]"
    assert like(3152384, "3,152,384") == "3,152,384"
    assert like(2 * 0.9640275800758169, "1.93") == "1.93"
    assert like(Fraction(2, 3), "2/3") == "2/3"
    assert like(-1e-9, "0.0000") == "0.0000"  # no "-0.0000" for a value that rounds to zero


def test_agreement_disagreement_and_known_page_errors(capsys):
    ledger = Ledger()
    ledger.check("a", 0.8808, "0.881")
    assert ledger.finish() == 0
    ledger.check("b", 0.8808, "0.882", page_error="the page rounds the wrong way")
    assert ledger.finish() == 0  # shown, recorded, not a failure
    ledger.check("c", 0.8808, "0.882")
    assert ledger.finish() == 1
    out = capsys.readouterr().out
    assert "a: computed 0.881; page 0.881; agree" in out
    assert "b: computed 0.881; page 0.882; PAGE DIFFERS (the page rounds the wrong way)" in out
    assert "c: computed 0.881; page 0.882; DISAGREE" in out


def test_skipped_values_never_print_an_answer(capsys):
    ledger = Ledger()
    ledger.skip("Q14", "the other scores are not on the page")
    assert ledger.finish() == 0
    assert "Q14: not computed: the other scores are not on the page" in capsys.readouterr().out


def test_a_contradicted_belief_fails_the_run(capsys):
    ledger = Ledger()
    ledger.belief(1, "x", "y", "z", page_is_right=True)
    assert ledger.finish() == 0
    ledger.belief(2, "x", "y", "z", page_is_right=False)
    assert ledger.finish() == 1
    assert "CONTRADICTS THE PAGE" in capsys.readouterr().out
