"""The check passes on any CPU and thread count, and still catches a wrong formula.

Other CPUs are imitated on this one by switching the kernels the way they differ:
ATEN_CPU_CAPABILITY=default makes torch use its plain C++ kernels instead of AVX2/AVX-512
ones; MKL_CBWR=COMPATIBLE makes MKL take the code path it takes on AMD CPUs, MKL_CBWR=AVX2
the one of an older Intel CPU; one thread changes how sums are split. (On a CPU or build
without MKL or AVX these variables change nothing, and the check must pass there anyway.)
Each setting is read once, when torch is imported, so its runs are forked from a server of
their own (run_all.Job.setting), side by side with every other run of the session; that
the setting reaches torch is tested in tests/test_run_all.py
(test_a_setting_gets_its_own_fork_server_and_reaches_torch).

What a setting can move: the `max |A - B|=` noise lines (judged by the check's ceiling, as
always) and a training's trajectory, so the exact losses and accuracies of week1/09,
week1/15, week1/16 and week2/12 (which therefore print only what every trajectory ends
in: bands, verdicts, converged counts). Every other printed line, and every check's
outcome, must stay byte for byte the same; this module holds each script to exactly that.
One thread is a setting like the others: a fork server of its own, started with one thread
(torch and MKL read it at import). Each setting's runs start in a folder of their own, not
the script's, and write their figures there, away from the check's. (A forked run imports
its repo's `common` itself, as `python weekN/NN_name.py` does; a script started in a fresh
interpreter is tested in tests/test_progress.py, tests/test_bottleneck_experiment.py and
tests/test_live.py.)
"""
import io
import shutil
import subprocess

from common import OUTPUT_ROOT

import pytest

import run_all
from check import comparing
from tests.conftest import SCRATCH, SCRIPTS, lesson_run

OTHER_CPUS = {
    "torch's plain kernels": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL's AMD path": {"MKL_CBWR": "COMPATIBLE"},
    "an AVX2 CPU": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "default"},
}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def away(setting):
    """A folder of its own for a setting's runs (cwd and output root alike, so each `saved
    ...` line reads as in the check): their figures never race the check's own."""
    folder = SCRATCH / "settings" / "".join(c if c.isalnum() else "_" for c in setting)
    folder.mkdir(parents=True, exist_ok=True)
    return {"cwd": folder, "env": {OUTPUT_ROOT: str(folder)}}


SETTINGS = {**OTHER_CPUS, "one thread": ONE_THREAD}
RUNS = {(setting, name): lesson_run(name, setting=SETTINGS[setting], **away(setting))
        for setting in SETTINGS for name in SCRIPTS}


def disagreement(name, result):
    """What the check would hold against this run of `name`, or None: its exit status, its
    output against the golden file (the noise rule included), its checks against the golden
    checks."""
    if result.returncode != 0:
        return f"exit status {result.returncode}:\n{result.stderr[-2000:]}"
    golden = run_all.golden_path(name).read_text(encoding="utf-8")
    compared, problems = result.compared()
    if problems or not comparing.outputs_match(golden, compared):
        return "\n".join(problems) + comparing.unified_diff(golden, compared, name)
    checks = run_all.checks_path(name)
    expected = checks.read_text(encoding="utf-8") if checks.exists() else ""
    if expected != comparing.checks_text(result.records):
        return comparing.unified_diff(expected, comparing.checks_text(result.records), name, kind="checks")
    return None


@pytest.mark.parametrize(("setting", "name"), [
    pytest.param(*key, marks=pytest.mark.reads(run), id=f"{key[1]}, {key[0]}") for key, run in RUNS.items()])
def test_every_script_prints_the_same_under_another_cpus_kernels(runs, setting, name):
    assert disagreement(name, runs[RUNS[setting, name]]) is None


MUTATIONS = {
    # script: (the line as written, the same line with a classic mistake)
    "week1/03_multihead_shape_check": ("Q @ K.transpose(-2, -1) / math.sqrt(d_k)", "Q @ K.transpose(-2, -1)"),
    "week2/10_eli5_causal_self_attention": ("mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)",
                                            "mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=2)"),
    "week1/01_attention_from_scratch": ("/ np.sqrt(d_k)", "/ d_k"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_formula_fails_the_check_and_says_so(tmp_path, name):
    """A copy of the repo with one classic mistake in one script: the check fails, and the
    noise line that the mistake blows up is explained in plain words."""
    shutil.copytree(run_all.ROOT / "common", tmp_path / "common")
    script = tmp_path / f"{name}.py"
    script.parent.mkdir(parents=True)
    right, wrong = MUTATIONS[name]
    source = (run_all.ROOT / f"{name}.py").read_text(encoding="utf-8")
    assert source.count(right) == 1, f"{name} no longer contains {right!r}: update MUTATIONS"
    script.write_text(source.replace(right, wrong), encoding="utf-8")
    for golden in (run_all.golden_path(name), run_all.checks_path(name)):
        if golden.exists():
            target = tmp_path / golden.relative_to(run_all.ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(golden, target)

    out = io.StringIO()
    assert run_all.main([name], root=tmp_path, out=out) == 1
    assert f"DIFF {name}" in out.getvalue()
    assert "should be float rounding noise" in out.getvalue() and "the formula is wrong" in out.getvalue()


def test_a_planted_mistake_fails_the_check_and_leaves_every_tracked_file_alone(tmp_path):
    """A learner's edit that breaks a lesson (the causal mask also blocks the diagonal): the
    check fails in words, --update refuses to write the broken output, and `git status`
    shows only the learner's own edit: no figure, no golden file rewritten."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    name = "week2/01_causal_mask"
    for part in ("run_all.py", ".gitignore", "common", f"{name}.py", "week2/figures/causal_mask.png",
                 f"expected_outputs/{name}.txt", f"expected_outputs/{name}.checks.txt", "tests/data/page_quotes.py"):
        source, target = run_all.ROOT / part, tmp_path / part
        if not source.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target) if source.is_dir() else shutil.copy(source, target)

    def git(*argv):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "lessons")
    script = tmp_path / f"{name}.py"
    source = script.read_text(encoding="utf-8")
    right = "np.triu(np.ones((T, T), dtype=int), k=1)"
    assert source.count(right) == 1
    script.write_text(source.replace(right, right.replace("k=1", "k=0")), encoding="utf-8")

    check, update = io.StringIO(), io.StringIO()
    assert run_all.main([name], root=tmp_path, out=check) == 1
    assert f"DIFF {name}" in check.getvalue()
    assert "disagrees with itself or with the page" in check.getvalue() and "--update week2" not in check.getvalue()
    assert run_all.main(["--update", name], root=tmp_path, out=update) == 1
    assert f"NOT UPDATED {name}" in update.getvalue()
    assert git("status", "--porcelain") == f" M {name}.py\n"


PLANTED = {
    # lesson: (the line as written, the same line with a mistake, the check --update names)
    "week1/15_context_decides": ("F.scaled_dot_product_attention(q_it, K, V, attn_mask=~mask)",  # torch's mask:
                                 "F.scaled_dot_product_attention(q_it, K, V, attn_mask=mask)",  # True = takes part
                                 'the check "attention by hand is torch\'s" does not uphold the page'),
    "week1/04_encoder_parameter_count": ("mha = 4 * d * d + 4 * d", "mha = 3 * d * d + 4 * d",
                                         'the check "the formula counts torch\'s encoder layer" does not uphold'),
}


@pytest.mark.parametrize("name", PLANTED)
def test_update_refuses_a_planted_mistake_by_the_name_of_its_check(tmp_path, name):
    """A copy of the repo with one mistake a learner could make: --update writes nothing and
    names the check that no longer upholds the page (records, not the printed words)."""
    shutil.copytree(run_all.ROOT / "common", tmp_path / "common")
    right, wrong, says = PLANTED[name]
    source = (run_all.ROOT / f"{name}.py").read_text(encoding="utf-8")
    assert source.count(right) == 1, f"{name} no longer contains {right!r}: update PLANTED"
    (tmp_path / f"{name}.py").parent.mkdir(parents=True)
    (tmp_path / f"{name}.py").write_text(source.replace(right, wrong), encoding="utf-8")
    for golden in (run_all.golden_path(name), run_all.checks_path(name)):
        target = tmp_path / golden.relative_to(run_all.ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(golden, target)
    before = run_all.checks_path(name, tmp_path).read_text(encoding="utf-8")
    out = io.StringIO()
    assert run_all.main(["--update", name], root=tmp_path, out=out) == 1
    assert f"NOT UPDATED {name}" in out.getvalue() and says in out.getvalue(), out.getvalue()
    assert run_all.checks_path(name, tmp_path).read_text(encoding="utf-8") == before
