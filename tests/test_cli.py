"""Every script explains itself with --help and answers a bad value with a usage error."""
import pytest

import run_all
from tests.conftest import SCRIPTS

# One bad command line per script; a new script needs an entry here.
BAD_ARGS = {
    "week1/01_attention_from_scratch": ["--d-k", "0"],
    "week1/02_dot_product_variance": ["--pairs", "lots"],
    "week1/03_multihead_shape_check": ["--d-model", "10", "--heads", "4"],
    "week1/04_encoder_parameter_count": ["--d-ff", "-1"],
    "week1/05_additive_attention": ["--seed", "-3"],
    "week1/06_worked_examples": ["section-2"],
    "week1/07_eli5_one_block": ["--d-model", "6", "--heads", "4"],
    "week1/08_mistakes_shown": ["--seed", "1.5"],
    "week2/01_causal_mask": ["--seq-len", "6"],
    "week2/02_cross_attention_shapes": ["--heads", "3"],
    "week2/03_sinusoidal_pe": ["--d-model", "15"],
    "week2/04_norm_axes": ["--seed", "x"],
    "week2/05_label_smoothing": ["--gold", "4"],
    "week2/06_warmup_schedule": ["--warmup", "0"],
    "week2/07_decoder_parameter_count": ["--vocab", "0"],
    "week2/08_teacher_forcing": ["--gold", "one"],
    "week2/09_worked_examples": ["--verbose"],
    "week2/10_eli5_causal_self_attention": ["--seq", "0"],
    "week2/11_mistakes_shown": ["--seed"],
}


@pytest.fixture(scope="module")
def runs():
    jobs = [(path, ["--help"]) for path in SCRIPTS.values()]
    jobs += [(path, BAD_ARGS.get(name, ["--no-such-flag"])) for name, path in SCRIPTS.items()]
    jobs += [(path, ["--no-such-flag"]) for path in SCRIPTS.values()]
    results = run_all.run_scripts(jobs)
    n = len(SCRIPTS)
    return {name: (results[i], results[n + i], results[2 * n + i]) for i, name in enumerate(SCRIPTS)}


def test_every_script_has_a_bad_value_case():
    assert set(BAD_ARGS) == set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_says_what_to_try(runs, name):
    help_run = runs[name][0]
    assert help_run.returncode == 0, help_run.stderr
    assert "usage:" in help_run.stdout and "Try it:" in help_run.stdout


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("case", [1, 2], ids=["bad value", "unknown flag"])
def test_bad_argument_is_a_one_line_usage_error(runs, name, case):
    result = runs[name][case]
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{name.split('/')[1]}.py: error: ")
