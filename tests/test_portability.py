"""The check passes on any CPU and thread count, and still catches a wrong formula.

Other CPUs are imitated on this one by switching the kernels the way they differ:
ATEN_CPU_CAPABILITY=default makes torch use its plain C++ kernels instead of AVX2/AVX-512
ones; MKL_CBWR=COMPATIBLE makes MKL take the code path it takes on AMD CPUs, MKL_CBWR=AVX2
the one of an older Intel CPU; one thread changes how sums are split. (On a CPU or build
without MKL or AVX these variables change nothing, and the check must pass there anyway.)
"""
import io
import os
import shutil
import subprocess
import sys

import pytest

import run_all

OTHER_CPUS = {
    "torch's plain kernels": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL's AMD path": {"MKL_CBWR": "COMPATIBLE"},
    "an AVX2 CPU": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "default"},
    "one thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
}


def run_check(env, *argv, cwd=None, script=run_all.ROOT / "run_all.py"):
    return subprocess.run([sys.executable, str(script), *argv], cwd=cwd,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("setting", OTHER_CPUS)
def test_the_whole_check_passes_with_another_cpus_kernels(setting):
    result = run_check(OTHER_CPUS[setting])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert result.stdout.splitlines()[-1].endswith(" passed, 0 failed")


def test_fresh_interpreters_from_a_foreign_directory_on_one_thread_pass_too(tmp_path):
    """`python weekN/NN_name.py` as a learner runs it: a new interpreter per script."""
    result = run_check(OTHER_CPUS["one thread"], "--fresh", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_the_kernel_switch_is_live():
    """ATEN_CPU_CAPABILITY really changes torch's kernels here (else the test above proves nothing)."""
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    default = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             env={**os.environ, "ATEN_CPU_CAPABILITY": "default"}).stdout.strip()
    assert default == "DEFAULT"


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
    golden = run_all.golden_path(name, tmp_path)
    golden.parent.mkdir(parents=True)
    shutil.copy(run_all.golden_path(name), golden)

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
                 f"expected_outputs/{name}.txt", "tests/data/page_quotes.py"):
        source, target = run_all.ROOT / part, tmp_path / part
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

    check = run_check({}, name, cwd=tmp_path, script=tmp_path / "run_all.py")
    assert check.returncode == 1 and f"DIFF {name}" in check.stdout
    assert "disagrees with itself or with the page" in check.stdout and "--update week2" not in check.stdout
    update = run_check({}, "--update", name, cwd=tmp_path, script=tmp_path / "run_all.py")
    assert update.returncode == 1 and f"NOT UPDATED {name}" in update.stdout
    assert git("status", "--porcelain") == f" M {name}.py\n"
