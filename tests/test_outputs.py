"""Each script prints what its golden file holds and every line the pages quote from it."""
import pytest

import run_all
from check import comparing
from tests.conftest import SCRIPTS
from tests.data.page_quotes import LINES, TOKENS


@pytest.mark.parametrize("name", SCRIPTS)
def test_output_matches_golden_file(outputs, name):
    result = outputs[name]
    assert result.returncode == 0, result.stderr
    golden = run_all.golden_path(name).read_text(encoding="utf-8")
    compared, problems = result.compared()  # a training's own numbers: their bands in their place
    assert not problems and comparing.outputs_match(golden, compared), comparing.unified_diff(golden, compared, name)


QUOTED_LINES = [(script, line) for script, lines in LINES.items() for line in lines]
QUOTED_TOKENS = [(script, token) for script, tokens in TOKENS.items() for token in tokens]


@pytest.mark.parametrize(("script", "line"), QUOTED_LINES)
def test_page_line_is_printed(outputs, script, line):
    printed = outputs[script.removesuffix(".py")].stdout.splitlines()
    # Exact, except that a noise line (max |A - B|=...) is judged by the check's own rule.
    assert any(comparing.lines_match(line, p) for p in printed), f"not printed: {line!r}"


def test_whole_values_only():
    printed_as_a_whole = comparing.printed_as_a_whole
    assert printed_as_a_whole("0.0000", "LayerNorm: -1.2247, 0.0000, 1.2247")
    assert not printed_as_a_whole("0.0000", "LayerNorm: -1.2247, -0.0000, 1.2247")
    assert not printed_as_a_whole("0.0", "weight=0.0001")
    assert not printed_as_a_whole("260", "count=1260")
    assert printed_as_a_whole("[0,1,2,3]", "input=[0, 1, 2, 3] (0 = start)")
    assert printed_as_a_whole("0.0000002471", "1        0.0000001747   0.0000002471")


@pytest.mark.parametrize(("script", "token"), QUOTED_TOKENS)
def test_page_value_is_printed(outputs, script, token):
    """By run_all's own rule: a whole value; a quoted noise value (0.00000011) like a noise line."""
    name = script.removesuffix(".py")
    assert f"the page's value {token}" not in comparing.quotes_missing(name, outputs[name].stdout)
