"""The golden-file comparator: exact everywhere, a narrow tolerance on noise lines only."""
from run_all import NOISE_UNITS, lines_match, outputs_match

GOLDEN = """\
MHA formula=1,050,624; FFN formula=2,099,712; two LayerNorms=2,048
alpha=[0.384 0.327 0.176 0.113]; sum=1.000000
max |NumPy - torch SDPA|=0.00000011
"""


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


def test_noise_value_may_move_within_the_tolerance():
    assert outputs_match(GOLDEN, GOLDEN.replace("0.00000011", "0.00000009"))
    assert outputs_match(GOLDEN, GOLDEN.replace("0.00000011", f"0.000000{11 + NOISE_UNITS}"))


def test_noise_value_beyond_the_tolerance_is_caught():
    assert not outputs_match(GOLDEN, GOLDEN.replace("0.00000011", f"0.000000{12 + NOISE_UNITS}"))
    assert not outputs_match(GOLDEN, GOLDEN.replace("0.00000011", "0.00100011"))


def test_noise_line_must_keep_its_text_and_format():
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch|=0.00000011")
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch SDPA|=0.0000001")
    assert not lines_match("max |NumPy - torch SDPA|=0.00000011", "max |NumPy - torch SDPA|=nan")


def test_numbers_outside_noise_lines_get_no_tolerance():
    assert not lines_match("row-sum range=1.000000..1.000000", "row-sum range=1.000001..1.000000")
    assert not lines_match("Var(q.k)=4.04 max |x|=0.00000011", "Var(q.k)=4.04 max |x|=0.00000012")
