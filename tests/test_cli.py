"""Every script explains itself with --help; every "Try it" suggestion works as printed and
leaves the committed files alone; a bad value, or sizes too big to run, is a one-line
usage error."""
import math
import re
import subprocess
import sys

import common.cli as cli
import common.live as live
from common.cli import Range

import pytest

import run_all
from tests.conftest import LESSONS, LIMITS, PARSERS, SCRIPTS, TRY_ITS, lesson_run, try_it_commands


def bad_value(lesson):
    """A command line with one value outside what the lesson declares: just past the first
    flag's range, or a choice it does not offer; a stray word where it declares no flag."""
    for knob in lesson.knobs:
        kind, count = knob.options.get("type"), knob.options.get("nargs") or 1
        if isinstance(kind, Range):  # an integer range includes its end, a float range does not
            past = kind.hi + 1 if kind.kind is int else kind.hi
            return [knob.flags[-1], *[str(past)] * (count if isinstance(count, int) else 1)]
        if knob.options.get("choices"):
            return [knob.flags[-1], *["no-such-choice"] * (count if isinstance(count, int) else 1)]
    return ["a-stray-word"]


# Command lines a lesson refuses for a reason of its own (a joint constraint, a value that is
# not a number, a missing value, a value its range excludes inside), besides the value past a
# range that every lesson gets.
SPECIAL_BAD_ARGS = {
    "week1/02_dot_product_variance": ["--pairs", "lots"],
    "week1/03_multihead_shape_check": ["--d-model", "10", "--heads", "4"],
    "week1/05_additive_attention": ["--seed", "-3"],
    "week1/07_eli5_one_block": ["--d-model", "6", "--heads", "4"],
    "week1/08_mistakes_shown": ["--seed", "1.5"],
    "week1/11_softmax_saturation": ["--d-k", "64"],
    "week1/13_ffn_needs_relu": ["--inputs", "3"],
    "week1/14_parameters_vs_length": ["--short", "500", "--long", "5"],
    "week1/15_context_decides": ["--adjectives", "tired", "purple"],
    "week1/17_unscaled_scores_stall": ["--d-k", "8"],
    "week2/01_causal_mask": ["--seq-len", "6"],
    "week2/02_cross_attention_shapes": ["--heads", "3"],
    "week2/03_sinusoidal_pe": ["--d-model", "15"],
    "week2/04_norm_axes": ["--seed", "x"],
    "week2/05_label_smoothing": ["--logits", "nan", "1", "2"],
    "week2/08_teacher_forcing": ["--gold", "0", "1", "2"],
    "week2/11_mistakes_shown": ["--seed"],
    "week2/13_count_without_biases": ["--heads", "3"],
    "week2/14_positions_beyond_training": ["--d-model", "5"],
    "week2/16_batchnorm_padding": ["--batch", "1", "--tokens", "1"],
    "week2/17_post_norm_decoder_layer": ["--d-model", "10", "--heads", "4"],
}

# Sizes each within its range that together would need gigabytes or minutes.
TOO_BIG = {
    "week1/01_attention_from_scratch": ["--batch", "256", "--heads", "256", "--tokens", "256", "--d-k", "256"],
    "week1/02_dot_product_variance": ["--pairs", "100000", "--d-k", "1024"],
    "week1/03_multihead_shape_check": ["--batch", "64", "--seq-len", "512", "--d-model", "1024", "--heads", "64"],
    "week1/09_bottleneck_experiment": ["--steps", "1000", "--max-len", "32"],
    "week1/10_slow_chain_path_length": ["--d", "32", "--sentences", "256", "--max-len", "128"],
    "week1/11_softmax_saturation": ["--sentences", "4096", "--tokens", "64"],
    "week1/12_attention_shapes": ["--batch", "512", "--tokens", "512", "--d-model", "512", "--d-k", "512",
                                  "--d-v", "512"],
    "week1/13_ffn_needs_relu": ["--d-model", "512", "--d-ff", "4096", "--inputs", "100000"],
    "week1/14_parameters_vs_length": ["--long", "4096"],
    "week2/02_cross_attention_shapes": ["--batch", "512", "--source-len", "512", "--target-len", "512",
                                        "--d-model", "512", "--heads", "512"],
    "week2/03_sinusoidal_pe": ["--d-model", "4096", "--max-len", "10000"],
}


def git_status():
    try:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=run_all.ROOT,
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


GIT_STATUS_BEFORE = git_status()  # taken at import, before any declared run has started
HELP = {name: lesson_run(name, "--help") for name in SCRIPTS}
BAD = {name: lesson_run(name, *bad_value(LESSONS[name])) for name in SCRIPTS}
SPECIAL = {name: lesson_run(name, *argv) for name, argv in SPECIAL_BAD_ARGS.items()}
UNKNOWN = {name: lesson_run(name, "--no-such-flag") for name in SCRIPTS}
ALL_TRY_ITS = [run for runs in TRY_ITS.values() for run in runs]


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.reads(HELP[name])) for name in SCRIPTS])
def test_help_says_what_to_try(runs, name):
    help_run = runs[HELP[name]]
    assert help_run.returncode == 0, help_run.stderr
    assert "usage:" in help_run.stdout and "Try it:" in help_run.stdout
    assert try_it_commands(help_run.stdout, SCRIPTS[name]) == [list(run.argv) for run in TRY_ITS[name]], \
        "the suggestions --help prints are not the ones this session runs"
    assert TRY_ITS[name], "no runnable suggestion after 'Try it:'"


@pytest.mark.parametrize("run", [pytest.param(run, marks=pytest.mark.reads(run), id=str(run)) for run in ALL_TRY_ITS])
def test_every_try_it_suggestion_works(runs, run):
    result = runs[run]
    assert result.returncode == 0, f"{run}:\n{result.stderr[-1500:]}"
    assert result.stderr == "", f"{run} wrote to stderr (a warning is a fault, as in the check):\n{result.stderr}"


@pytest.mark.reads(*ALL_TRY_ITS)
def test_no_try_it_suggestion_rewrites_a_committed_file(runs):
    for run in ALL_TRY_ITS:
        runs[run]  # every one has ended
    if GIT_STATUS_BEFORE is None:
        pytest.skip("not a git checkout")
    assert git_status() == GIT_STATUS_BEFORE, "a run with non-default knobs rewrote a committed file"


BAD_CASES = [(name, kind, run) for kind, table in (("bad value", BAD), ("special", SPECIAL), ("unknown flag", UNKNOWN))
             for name, run in table.items()]


@pytest.mark.parametrize(("name", "kind", "run"), [pytest.param(*case, marks=pytest.mark.reads(case[2]),
                                                                id=f"{case[0]} {case[1]}") for case in BAD_CASES])
def test_bad_argument_is_a_one_line_usage_error(runs, name, kind, run):
    result = runs[run]
    assert result.returncode == 2, f"{run}: exit status {result.returncode}"
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{name.split('/')[1]}.py: error: "), result.stderr
    if kind == "unknown flag":  # found while reading the flags: the line says where they are listed
        assert lines[0].endswith("unrecognized arguments: --no-such-flag (--help lists every flag and its range)")


TOO_BIG_RUNS = [lesson_run(name, *argv, timeout=30) for name, argv in TOO_BIG.items()]


@pytest.mark.reads(*TOO_BIG_RUNS)
def test_sizes_too_big_to_run_are_refused_before_they_start(runs):
    for run in TOO_BIG_RUNS:
        result = runs[run]
        assert result.returncode == 2, f"{run} was not refused"
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "the limit is" in lines[0], result.stderr


@pytest.mark.reads(HELP["week1/01_attention_from_scratch"])
def test_help_shows_every_flags_range_and_default(runs):
    help_text = runs[HELP["week1/01_attention_from_scratch"]].stdout
    assert "--seed SEED      seed of the NumPy generator (0..4,294,967,295; default 42)" in help_text
    assert "--tokens TOKENS  T, words per sentence (1..512; default 3)" in help_text


def test_in_a_notebook_kernel_help_and_its_try_it_lines_read_as_cells(monkeypatch, capsys):
    """In a kernel (`%run lesson.py --help`), from the clone's folder as the notebooks run there: the
    usage names the lesson as a cell runs it, each Try it line is a cell to paste (`%run
    week2/01_causal_mask.py --seed 0 --seq-len 6`, never the terminal's interpreter), --live says what
    it shows below the cell (a training's: a picture redrawn while it trains), and a usage error
    names the lesson the same way. The terminal's help: test_help_says_what_to_try."""
    monkeypatch.chdir(run_all.ROOT)
    for module in (cli, live):
        monkeypatch.setattr(module, "kernel", lambda: object())
    for name, lesson in LESSONS.items():
        help_text = lesson.parser().format_help()
        assert help_text.startswith(f"usage: %run {name}.py [-h]") and sys.executable not in help_text
        cells = [line.strip() for line in help_text.split("\nTry it:\n")[1].splitlines() if line.startswith("  %")]
        assert cells == [f"%run {name}.py {args}".rstrip() for args, _ in lesson.try_it]
        words = " ".join(help_text.split())
        if lesson.live:
            assert "(needs a display)" not in words and "window" not in words.split("--live", 1)[1][:300]
            assert ("a picture redrawn while it trains" if lesson.training else "the figure below them") in words
    causal_mask = LESSONS["week2/01_causal_mask"]
    assert "%run week2/01_causal_mask.py --seed 0 --seq-len 6\n" in causal_mask.parser().format_help()
    with pytest.raises(SystemExit):
        causal_mask.args(["--seq-len", "99"])
    assert capsys.readouterr().err.startswith("%run week2/01_causal_mask.py: error: argument --seq-len")


def test_a_python_without_the_packages_gets_one_line_on_how_to_set_up(tmp_path):
    """`python -S` skips site-packages: what a learner sees running the system Python."""
    for argv in ([str(SCRIPTS["week1/01_attention_from_scratch"])], [str(run_all.ROOT / "run_all.py")]):
        result = subprocess.run([sys.executable, "-S", *argv], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode != 0 and result.stdout == ""
        last = result.stderr.strip().splitlines()[-1]
        assert "Traceback" not in result.stderr and "has no numpy" in last, result.stderr
        assert "make check" in last or ".venv" in last


# ---------------------------------------------------------------- every range in --help runs at both ends

def range_ends(lesson):
    """[(the knob, argv)] for the two ends of every knob the lesson declares whose type is a
    range, or whose values are choices (the first and the last). An open end (x < 4) is tried
    just below it; a list flag gets the end added to its default list; a flag of two values
    gets the choice twice. An end that is the flag's default is left out: the default run
    (the check's own) is that run."""
    for knob in lesson.knobs:
        flag, kind, default, nargs = knob.flags[-1], knob.options.get("type"), knob.options.get("default"), \
            knob.options.get("nargs")
        if knob.options.get("choices"):
            choices = list(knob.options["choices"])
            for choice in dict.fromkeys([choices[0], choices[-1]]):
                if choice != default:
                    yield knob, [flag, *[str(choice)] * (nargs or 1)]
        if not isinstance(kind, Range):
            continue
        lo, hi = kind.lo, math.nextafter(kind.hi, kind.lo) if kind.hi_open else kind.hi
        for end in (lo, hi):
            if end == default and nargs != "+":
                continue
            value = str(end) if kind.kind is int else repr(float(end))
            values = [*map(str, default), value] if nargs == "+" else [value]
            yield knob, [flag, *values]


def dest(knob):
    """The name argparse stores a knob's value under."""
    return knob.options.get("dest") or knob.flags[-1].lstrip("-").replace("-", "_")


# Ends packed into runs of their own, each setting several flags to an end at once (within the
# joint size limit) where one run of each would repeat a whole training: a seed costs nothing,
# and a size's end runs with the other sizes at their least. A packed run trains for the steps
# it sets, else the default's (week1/09's, 15's, 16's --steps 1 run alone).
PACKED = {
    "week1/09_bottleneck_experiment": [["--steps", "1000", "--max-len", "8", "--hidden", "4", "--seed", "0"],
                                       ["--max-len", "32", "--hidden", "4", "--seed", "4294967295"]],
    "week1/14_parameters_vs_length": [["--heads", "64", "--seed", "0"], ["--short", "1", "--seed", "4294967295"]],
    "week1/15_context_decides": [["--steps", "400", "--seed", "0"],
                                 ["--adjectives", "crowded", "crowded", "--seed", "4294967295"]],
    "week1/16_heads_take_roles": [["--steps", "400", "--seed", "0"],
                                  ["--heads", "8", "--task", "noun-only", "--seed", "4294967295"]],
    "week2/12_train_tiny_transformer": [["--steps", "800", "--seed", "4294967295"], ["--steps", "50", "--seed", "0"]],
}


def sets(parser, argv, knob, end):
    """Whether argv sets the flag of `end` (a flag and its values) to what `end` sets it to, as
    argparse reads both (a flag given twice: its last value). --figure and its path are left
    out of the reading (reading a path checks that it can be written)."""
    def read(words):
        words = list(words)
        while "--figure" in words:
            del words[words.index("--figure"):words.index("--figure") + 2]
        try:
            return getattr(parser.parse_args(words), dest(knob))
        except SystemExit:
            raise AssertionError(f"{' '.join(argv)} does not parse: see its --help") from None

    return any(word in knob.flags for word in argv) and read(argv) == read(end)


def covering_runs(name):
    """[(knob, end, the run that runs it)] for every end of every range of a script (an end:
    the flag and its values): a "Try it" suggestion that sets the flag to that end, else a run
    of PACKED[name], else a run of its own (the other flags at their defaults)."""
    parser, packed = PARSERS[name], [lesson_run(name, *argv) for argv in PACKED.get(name, [])]
    return [(knob, end, next((run for run in TRY_ITS[name] + packed if sets(parser, run.argv, knob, end)),
                             lesson_run(name, *end))) for knob, end in range_ends(LESSONS[name])]


RANGE_ENDS = [(name, knob, end, run) for name in SCRIPTS for knob, end, run in covering_runs(name)]


def test_each_packed_run_runs_ends_no_other_run_does():
    """A packed run earns its place: it covers an end that no "Try it" suggestion runs."""
    for name, packed in PACKED.items():
        used = {run.argv for _, _, run in covering_runs(name)}
        assert all(tuple(argv) in used for argv in packed), name
    parser = PARSERS["week1/11_softmax_saturation"]
    d_k = next(knob for knob in LESSONS["week1/11_softmax_saturation"].knobs if "--d-k" in knob.flags)
    end = ["--d-k", *map(str, d_k.options["default"]), "1"]
    assert sets(parser, [*end, "--seed", "0"], d_k, end)
    assert not sets(parser, [*end, "2"], d_k, end)  # a longer list
    assert not sets(parser, [*end, "--d-k", "4"], d_k, end)  # given twice: the last counts
    assert not sets(parser, ["--seed", "0"], d_k, end)


@pytest.mark.parametrize(("name", "knob", "end", "run"), [
    pytest.param(*case, marks=pytest.mark.reads(case[3]), id=f"{case[0]} {' '.join(case[2])}") for case in RANGE_ENDS])
def test_every_flags_range_runs_at_both_ends_or_its_help_names_the_joint_limit(runs, name, knob, end, run):
    """Each end of the range --help shows for each flag of each script (each choice) runs to
    its end with status 0, in some run: a "Try it" suggestion, a packed run (PACKED), or a run
    of its own with the other flags at their defaults. On its own, an end may instead be
    refused by a limit shared with other flags (asked of the lesson's limits() when another
    run covers it), and then the flag's help names one of those flags."""
    result = runs[run]
    assert result.returncode != 0 or result.stderr == "", f"{run} wrote to stderr:\n{result.stderr}"
    if list(run.argv) != end:
        assert result.returncode == 0, f"{run}: exit status {result.returncode}: {result.stderr[-600:]}"
        limits = LIMITS[name]
        refusal = limits(PARSERS[name].parse_args(end)) if limits else None
    elif result.returncode == 0:
        return
    else:
        assert result.returncode == 2, f"{run}: exit status {result.returncode}: {result.stderr[-600:]}"
        refusal = result.stderr.strip().splitlines()[-1]
    if refusal is None:
        return
    others = set(re.findall(r"--[a-z][a-z-]*", refusal)) - set(knob.flags)
    assert any(other in knob.options.get("help", "") for other in others), \
        f"{' '.join(end)}: refused ({refusal}), and its help names none of {sorted(others) or 'the other flags'}"
