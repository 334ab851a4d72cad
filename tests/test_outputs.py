"""Each script prints what its golden file holds and every line the pages quote from it."""
import pytest

import run_all
from tests.conftest import SCRIPTS
from tests.data.page_quotes import LINES, TOKENS


@pytest.mark.parametrize("name", SCRIPTS)
def test_output_matches_golden_file(outputs, name):
    result = outputs[name]
    assert result.returncode == 0, result.stderr
    golden = run_all.golden_path(name).read_text(encoding="utf-8")
    assert run_all.outputs_match(golden, result.stdout), run_all.unified_diff(golden, result.stdout, name)


QUOTED_LINES = [(script, line) for script, lines in LINES.items() for line in lines]
QUOTED_TOKENS = [(script, token) for script, tokens in TOKENS.items() for token in tokens]


@pytest.mark.parametrize(("script", "line"), QUOTED_LINES)
def test_page_line_is_printed(outputs, script, line):
    printed = outputs[script.removesuffix(".py")].stdout.splitlines()
    # Exact, except that a noise line (max |A - B|=...) may differ within the harness tolerance.
    assert any(run_all.lines_match(line, p) for p in printed), f"not printed: {line!r}"


@pytest.mark.parametrize(("script", "token"), QUOTED_TOKENS)
def test_page_value_is_printed(outputs, script, token):
    flat = "".join(outputs[script.removesuffix(".py")].stdout.split())
    assert token in flat


def test_fresh_single_threaded_interpreters_print_the_same_bytes(outputs, monkeypatch):
    """`python script.py` in a new interpreter, from a foreign directory, on one thread,
    prints byte for byte what the forked, multi-threaded run printed: noise lines included."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")
    results = run_all.run_scripts([(p, []) for p in SCRIPTS.values()], fresh=True)
    for name, result in zip(SCRIPTS, results, strict=True):
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert result.stdout == outputs[name].stdout, run_all.unified_diff(
            outputs[name].stdout, result.stdout, name)


def test_mistakes_scripts_reach_the_same_verdicts_for_other_seeds():
    names = ["week1/08_mistakes_shown", "week2/11_mistakes_shown"]
    jobs = [(SCRIPTS[name], ["--seed", str(seed)]) for name in names for seed in (1, 2, 3)]
    for (path, argv), result in zip(jobs, run_all.run_scripts(jobs), strict=True):
        assert result.returncode == 0, f"{path.name} {argv}: {result.stdout[-600:]}{result.stderr}"
        assert "contradicting the page: 0" in result.stdout
