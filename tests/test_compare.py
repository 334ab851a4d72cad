"""The golden-file comparator: exact everywhere, except that a rounding-noise line is judged
by a ceiling on its value (comparing.NOISE_CEILING), not by its distance from the golden one."""
import argparse
import io

import run_all
from check.comparing import NOISE_CEILING, lines_match, outputs_match

GOLDEN = """\
MHA formula=1,050,624; FFN formula=2,099,712; two LayerNorms=2,048
alpha=[0.384 0.327 0.176 0.113]; sum=1.000000
max |NumPy - torch SDPA|=0.00000011
"""


def with_noise(value):
    return GOLDEN.replace("0.00000011", value)


def test_identical_output_matches():
    assert outputs_match(GOLDEN, GOLDEN)


def test_a_changed_digit_is_caught():
    assert not outputs_match(GOLDEN, GOLDEN.replace("1,050,624", "1,050,625"))
    assert not outputs_match(GOLDEN, GOLDEN.replace("0.327", "0.328"))


def test_a_dropped_line_is_caught():
    assert not outputs_match(GOLDEN, "".join(GOLDEN.splitlines(keepends=True)[:-1]))


def test_an_extra_line_is_caught():
    assert not outputs_match(GOLDEN, GOLDEN + "one more line\n")
    assert not outputs_match(GOLDEN, GOLDEN + "\n")


def test_reordered_lines_are_caught():
    first, second, third = GOLDEN.splitlines(keepends=True)
    assert not outputs_match(GOLDEN, second + first + third)


def test_every_noise_value_measured_on_other_cpus_passes():
    # Values seen across CPUs, kernel paths, thread counts and library versions: whole
    # float32 rounding steps, the largest 2.4e-7.
    for seen in ("0.00000000", "0.00000006", "0.00000008", "0.00000012", "0.00000018", "0.00000024"):
        assert outputs_match(GOLDEN, with_noise(seen)), seen


def test_the_ceiling_is_the_boundary():
    assert NOISE_CEILING == 1e-6
    assert outputs_match(GOLDEN, with_noise("0.00000100"))
    assert not outputs_match(GOLDEN, with_noise("0.00000101"))


def test_formula_errors_are_caught():
    # The smallest real error found (LayerNorm eps 1.1e-5 instead of 1e-5) gives 1.8e-6;
    # a dropped 1/sqrt(d_k) or a wrong mask gives 0.05 to 2.8.
    for error in ("0.00000180", "0.00001500", "0.05000000", "2.80000000"):
        assert not outputs_match(GOLDEN, with_noise(error)), error


def test_a_golden_noise_value_over_the_ceiling_never_passes():
    assert not lines_match("max |a - b|=0.00000200", "max |a - b|=0.00000200")


def test_noise_line_must_keep_its_text_and_format():
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch|=0.00000011")
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch SDPA|=0.0000001")
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch SDPA|=nan")


def test_numbers_outside_noise_lines_get_no_tolerance():
    assert not lines_match("row-sum range=1.000000..1.000000", "row-sum range=1.000001..1.000000")
    assert not lines_match("Var(q.k)=4.04 max |x|=0.00000011", "Var(q.k)=4.04 max |x|=0.00000012")


def explained(tmp_path, name, text):
    """What the check says of a run that printed `text`, the golden file being GOLDEN."""
    golden = run_all.golden_path(name, tmp_path)
    golden.parent.mkdir(parents=True, exist_ok=True)
    golden.write_text(GOLDEN)
    result = run_all.Result(0, text, "", 0.0, [], text)
    args = argparse.Namespace(update=False, timeout=120.0, out=io.StringIO())
    return run_all.judge(name, result, tmp_path / f"{name}.py", args, tmp_path)


def test_a_noise_line_over_the_ceiling_is_explained_in_words(tmp_path):
    message = explained(tmp_path, "week1/01_attention_from_scratch", with_noise("0.42000000"))
    assert "line 3: max |NumPy - torch SDPA| should be float rounding noise" in message
    assert "but is 0.42000000" in message and "the formula is wrong" in message
    assert "@@" not in message  # only the noise line differs: no unified diff needed


def test_any_other_difference_still_shows_the_unified_diff(tmp_path):
    message = explained(tmp_path, "week1/05_additive_attention", GOLDEN.replace("0.327", "0.328"))
    assert "-alpha=[0.384 0.327 0.176 0.113]; sum=1.000000" in message
    assert "+alpha=[0.384 0.328 0.176 0.113]; sum=1.000000" in message
    both = explained(tmp_path, "x", GOLDEN.replace("0.327", "0.328").replace("0.00000011", "0.50000000"))
    assert "line 3: max |NumPy - torch SDPA| should be float rounding noise" in both
    assert "+max |NumPy - torch SDPA|=0.50000000" in both and "+alpha=" in both
