"""The ledger: page-precision formatting, agreement marks, verdicts from two runs, exit status."""
from fractions import Fraction

from common.report import AS_THE_PAGE_SAYS, CONTRADICTS, NO_CONTRAST, Finding, Ledger, like, verdict


def test_like_uses_the_pages_precision_element_by_element():
    assert like([0.7310585786, 0.2689414214, 0.0, 0.0], "[0.7311, 0.2689, 0, 0]") == "[0.7311, 0.2689, 0, 0]"
    assert like(3152384, "3,152,384") == "3,152,384"
    assert like(2 * 0.9640275800758169, "1.93") == "1.93"
    assert like(Fraction(2, 3), "2/3") == "2/3"
    assert like(-1e-9, "0.0000") == "0.0000"  # no "-0.0000" for a value that rounds to zero
    assert like([2.0, 3.0], "[1, 2, 3, 4]") == "[2, 3]"  # another length: shown (it disagrees), not an error


def test_a_value_in_words_is_judged_by_its_band(capsys):
    ledger = Ledger()
    ledger.within("ratio (page: about twice)", 2.004, (1.9, 2.1))
    assert ledger.finish() == 0
    ledger.within("ratio (page: about twice)", 2.4, (1.9, 2.1))  # "2" at 0 decimals, outside the band
    assert ledger.finish() == 1
    out = capsys.readouterr().out
    assert "ratio (page: about twice): computed 2.00; judged 1.9 to 2.1; agree" in out
    assert "ratio (page: about twice): computed 2.40; judged 1.9 to 2.1; DISAGREE" in out


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


PAGE_LIKE, BELIEF_LIKE = Finding("looks as the page says", True), Finding("looks as the belief says", False)


def test_the_verdict_needs_the_page_world_right_and_the_belief_world_different():
    assert verdict(PAGE_LIKE, BELIEF_LIKE) == AS_THE_PAGE_SAYS
    assert verdict(BELIEF_LIKE, PAGE_LIKE) == CONTRADICTS  # the real thing behaves as the belief says
    assert verdict(BELIEF_LIKE, BELIEF_LIKE) == CONTRADICTS
    assert verdict(PAGE_LIKE, PAGE_LIKE) == NO_CONTRAST  # a measurement that sees no difference proves nothing


def test_a_belief_prints_both_worlds_and_only_an_upheld_page_passes(capsys):
    ledger = Ledger()
    ledger.belief(1, "b", "e", ("real", PAGE_LIKE), ("belief", BELIEF_LIKE))
    assert ledger.finish() == 0
    out = capsys.readouterr().out
    assert ("1. Belief: b\n   Experiment: e\n   As the page says (real): looks as the page says\n"
            "   As the belief says (belief): looks as the belief says\n"
            "   Verdict: the belief is wrong, as the page says") in out
    assert "beliefs tested: 1; refuted as the page says: 1; contradicting the page: 0\n" in out
    for page_world, belief_world, mark in [(BELIEF_LIKE, PAGE_LIKE, CONTRADICTS), (PAGE_LIKE, PAGE_LIKE, NO_CONTRAST)]:
        ledger = Ledger()
        ledger.belief(2, "b", "e", ("real", page_world), ("belief", belief_world))
        assert ledger.finish() == 1
        assert f"Verdict: {mark}" in capsys.readouterr().out


def test_untestable_bullets_are_listed_and_counted(capsys):
    ledger = Ledger()
    ledger.belief(1, "b", "e", ("real", PAGE_LIKE), ("belief", BELIEF_LIKE))
    ledger.untested("Heads find readable roles", "needs trained models")
    assert ledger.finish() == 0  # listed, not a failure
    out = capsys.readouterr().out
    assert '  - "Heads find readable roles": needs trained models' in out
    assert "bullets no computation here can settle (listed above): 1" in out


def test_numbers_are_written_in_digits_anyone_can_read():
    from common.printing import readable, vec

    assert readable(9.9e-16, 3) == "0.00000000000000099"
    assert readable(16_659_725.1) == "16,659,725"
    assert readable(2.0794) == "2.0794" and readable(0.0) == "0.0000"
    assert readable(3.1e300) == "3.1 x 10^300" and readable(1.7e-25) == "1.7 x 10^-25"
    assert vec([0.1, 0.2, 0.3], 1, shown=2) == "[0.1, 0.2 ... 1 more]" and vec([0.5], 1, shown=2) == "[0.5]"


def test_a_beliefs_record_carries_its_verdict():
    from common.records import collected

    for page_world, belief_world, outcome in [(PAGE_LIKE, BELIEF_LIKE, "upholds the page"),
                                              (BELIEF_LIKE, PAGE_LIKE, "contradicts the page"),
                                              (PAGE_LIKE, PAGE_LIKE, "not tested here")]:
        with collected() as got:
            Ledger().belief(1, "b", "e", ("real", page_world), ("belief", belief_world))
        assert [(r["name"], r["outcome"]) for r in got] == [("belief: b", outcome)]


def test_a_bullet_another_lesson_runs_names_its_command_whole(capsys):
    from common.records import collected

    with collected() as got:
        Ledger().elsewhere("Heads find distinct roles (section 5)", "week1/16_heads_take_roles",
                           {"heads need not find distinct, readable roles": "upholds the page"},
                           "it wrong, as the page says: " + "a long explanation " * 6)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith('  - "Heads find distinct roles (section 5)": python week1/16_heads_take_roles.py')
    assert all(len(line) <= 100 for line in lines) and all(line.startswith("    ") for line in lines[1:])
    assert got == [{"name": "bullet: Heads find distinct roles (section 5)", "value": None, "threshold": None,
                    "outcome": "not tested here", "why": 'run by week1/16_heads_take_roles: '
                    '"heads need not find distinct, readable roles" upholds the page'}]
