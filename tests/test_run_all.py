"""run_all.py reports each kind of fault by name: a diff, a crash, a timeout, a missing
golden file, an unknown name; and it exits 0 only when every script passed."""
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.records import CLOSE, OPEN, collected, measured

import pytest

import run_all
from check import comparing


def make_repo(tmp_path, scripts, goldens):
    for name, source in scripts.items():
        path = tmp_path / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    for name, text in goldens.items():
        path = run_all.golden_path(name, tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def run(root, *argv):
    out = io.StringIO()
    code = run_all.main(list(argv), root=root, out=out)
    return code, out.getvalue()


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path, {
        "week9/01_good": "print('a=1')\nprint('max |x - y|=0.00000011')\n",
        "week9/02_drifted": "print('a=2')\n",
        "week9/03_crash": "print('half')\nraise RuntimeError('broken lesson')\n",
        "week9/04_slow": "import time\ntime.sleep(30)\n",
        "week9/05_no_golden": "print('new')\n",
    }, {
        "week9/01_good": "a=1\nmax |x - y|=0.00000013\n",
        "week9/02_drifted": "a=1\n",
        "week9/03_crash": "half\n",
        "week9/04_slow": "",
    })


def test_every_fault_is_named_and_the_run_fails(repo):
    code, out = run(repo, "--timeout", "3")
    assert code == 1
    assert "ok    week9/01_good" in out
    assert "DIFF week9/02_drifted" in out and "-a=1\n+a=2" in out
    assert (repo / "build/actual/week9/02_drifted.txt").read_text() == "a=2\n"
    assert "CRASH week9/03_crash: exit status 1" in out and "RuntimeError: broken lesson" in out
    assert "TIMEOUT week9/04_slow" in out and "--timeout SECONDS" in out
    assert "NO GOLDEN FILE week9/05_no_golden" in out
    assert out.splitlines()[-1] == "1 passed, 4 failed"


def test_all_passing_exits_zero(repo):
    code, out = run(repo, "week9/01_good")
    assert code == 0
    assert out.splitlines()[-1] == "1 passed, 0 failed"


def test_select_by_pattern_and_list(repo):
    code, out = run(repo, "-k", "good", "--list")
    assert code == 0 and out == "week9/01_good\n"


def test_unknown_name_is_a_usage_error(repo, capsys):
    with pytest.raises(SystemExit) as exc:
        run(repo, "week9/99_missing")
    assert exc.value.code == 2
    assert "unknown script 'week9/99_missing'" in capsys.readouterr().err


def test_pattern_matching_nothing_is_a_usage_error(repo, capsys):
    with pytest.raises(SystemExit) as exc:
        run(repo, "-k", "nothing-like-this")
    assert exc.value.code == 2


def test_update_writes_golden_files_only_when_asked(repo):
    code, out = run(repo, "--update", "week9/05_no_golden")
    assert code == 0
    assert "updated expected_outputs/week9/05_no_golden.txt" in out
    assert run_all.golden_path("week9/05_no_golden", repo).read_text() == "new\n"
    assert run(repo, "week9/05_no_golden")[0] == 0


def test_a_crashing_script_never_becomes_a_golden_file(repo):
    code, _ = run(repo, "--update", "week9/03_crash")
    assert code == 1
    assert run_all.golden_path("week9/03_crash", repo).read_text() == "half\n"


def test_fresh_interpreters_report_the_same(repo):
    code, out = run(repo, "--fresh", "week9/02_drifted", "week9/03_crash")
    assert code == 1
    assert "DIFF week9/02_drifted" in out and "CRASH week9/03_crash" in out


@pytest.mark.parametrize("given", ["week9/01_good", "week9/01_good.py", "./week9/01_good.py", "01_good",
                                   "week9/01"])
def test_names_as_a_shell_gives_them(repo, given):
    code, out = run(repo, "--list", given)
    assert code == 0 and out == "week9/01_good\n"


def test_an_absolute_path_names_its_script(repo):
    code, out = run(repo, "--list", str(repo / "week9" / "02_drifted.py"))
    assert code == 0 and out == "week9/02_drifted\n"


def test_a_typo_gets_the_closest_name(repo, capsys):
    with pytest.raises(SystemExit) as exc:
        run(repo, "week9/01_godo")
    assert exc.value.code == 2
    assert "did you mean week9/01_good?" in capsys.readouterr().err


def test_a_name_in_both_weeks_asks_for_the_week(repo, capsys):
    (repo / "week8").mkdir()
    (repo / "week8" / "01_good.py").write_text("print('a=1')\n")
    with pytest.raises(SystemExit) as exc:
        run(repo, "01_good")
    assert exc.value.code == 2
    assert "'01_good' names 2 scripts: week8/01_good, week9/01_good" in capsys.readouterr().err


def test_pattern_ignores_case(repo):
    code, out = run(repo, "-k", "GOOD", "--list")
    assert code == 0 and out == "week9/01_good\n"


def test_a_diff_says_what_to_do_next(repo):
    _, out = run(repo, "week9/02_drifted")
    assert "What next:" in out and "--update week9/02_drifted" in out


def test_a_noise_line_over_the_ceiling_is_never_written_as_golden(repo):
    (repo / "week9" / "06_wrong.py").write_text("print('max |x - y|=0.25000000')\n")
    code, out = run(repo, "--update", "week9/06_wrong")
    assert code == 1 and "NOT UPDATED week9/06_wrong" in out
    assert not run_all.golden_path("week9/06_wrong", repo).exists()


def test_the_slowest_scripts_start_first(repo):
    run(repo, "week9/01_good", "week9/02_drifted")
    run_all.timings_path(repo).write_text('{"week9/01_good": 0.1, "week9/02_drifted": 9.0}')
    scripts = run_all.discover(repo)
    order = run_all.slowest_first(["week9/01_good", "week9/02_drifted", "week9/05_no_golden"], scripts, repo)
    assert order == ["week9/05_no_golden", "week9/02_drifted", "week9/01_good"]  # never timed: first


# ---------------------------------------------------------------- --update never bakes in a broken lesson

def test_a_nan_noise_line_is_a_failure_in_words_and_never_written(repo):
    (repo / "week9" / "07_nan.py").write_text("print('max |x - y|=nan')\n")
    run_all.golden_path("week9/07_nan", repo).write_text("max |x - y|=nan\n")  # even a golden nan never passes
    code, out = run(repo, "week9/07_nan")
    assert code == 1 and "should be float rounding noise (at most 1e-06) but is nan" in out
    code, out = run(repo, "--update", "week9/07_nan")
    assert code == 1 and "NOT UPDATED week9/07_nan" in out and "but is nan" in out


def planted(repo, right, wrong):
    """A lesson whose golden file was written from `right`, now printing `wrong`."""
    (repo / "week9" / "08_count.py").write_text(f"print({wrong!r})\n")
    run_all.golden_path("week9/08_count", repo).write_text(right + "\n")
    return "week9/08_count"


def test_update_accepts_a_changed_number_whose_answers_hold(repo):
    name = planted(repo, "6 layers=18,914,304; equal=True", "7 layers=22,066,688; equal=True")
    code, out = run(repo, name)
    assert code == 1 and f"--update {name}" in out  # a change that could be wanted: --update is offered
    assert run(repo, "--update", name)[0] == 0
    assert run_all.golden_path(name, repo).read_text() == "7 layers=22,066,688; equal=True\n"


def test_update_refuses_when_a_page_quoted_line_is_no_longer_printed(repo):
    (repo / "tests" / "data").mkdir(parents=True)
    (repo / "tests" / "data" / "page_quotes.py").write_text(
        "LINES = {'week9/01_good.py': ['a=1']}\nTOKENS = {'week9/01_good.py': ['0.00000011', '1']}\n")
    assert run(repo, "--update", "week9/01_good")[0] == 0  # a=1, and a noise line judged as noise
    (repo / "week9" / "01_good.py").write_text("print('a=7')\nprint('max |x - y|=0.00000011')\n")
    code, out = run(repo, "--update", "week9/01_good")
    assert code == 1 and "the page's line 'a=1' is no longer printed" in out
    assert "the page's value 1 is no longer printed" in out and "0.00000011" not in out


def test_a_crash_says_what_next(repo):
    _, out = run(repo, "week9/03_crash")
    assert "What next: the script stopped with an error before it finished (RuntimeError: broken lesson)" in out
    assert "03_crash.py" in out.split("What next:")[1]


def test_a_warning_on_stderr_fails_the_check_with_its_lines_and_is_never_written(repo):
    """The same stdout as the golden file, and a numpy RuntimeWarning on stderr: a failure that
    shows the warning, and --update does not write the run."""
    (repo / "week9/06_warns.py").write_text("import numpy as np\nprint('a=1')\nnp.array([1.0]) / 0.0\n")
    run_all.golden_path("week9/06_warns", repo).write_text("a=1\n")
    for argv in ([], ["--fresh"]):
        code, out = run(repo, *argv, "week9/06_warns")
        assert code == 1 and out.startswith("STDERR week9/06_warns: the same output, and a warning"), out
        assert "the run wrote to stderr" in out and "RuntimeWarning: divide by zero" in out
        assert "06_warns.py" in out.split("What next:")[1]
    code, out = run(repo, "--update", "week9/06_warns")
    assert code == 1 and out.startswith("NOT UPDATED week9/06_warns") and "RuntimeWarning: divide by zero" in out
    assert run_all.golden_path("week9/06_warns", repo).read_text() == "a=1\n"
    assert not run_all.checks_path("week9/06_warns", repo).exists()


def test_a_lesson_that_exits_because_a_claim_disagrees_reads_as_a_disagreement(repo):
    """A worked-examples lesson exits 1 when a value disagrees with the page: its report names
    the check and shows its lines (not a crash, and no traceback to look for)."""
    disagreeing = TWO_CHECKS.replace("'every row sums to 1: yes'", "'every row sums to 1: no'").replace(
        "'rows sum to 1', True", "'rows sum to 1', False") + "sys.exit(1)\n"
    name = lesson_with_checks(repo, TWO_CHECKS, disagreeing)
    code, out = run(repo, name)
    assert code == 1 and "CRASH" not in out and "traceback" not in out, out
    assert out.startswith(f"DISAGREES {name}: a claim of the page does not hold in this run (exit status 1)")
    assert 'the check "rows sum to 1" does not uphold the page (measured 1, judged by: within 1e-6)' in out
    assert "-every row sums to 1: yes\n+every row sums to 1: no" in out
    code, out = run(repo, "--update", name)
    assert code == 1 and out.startswith(f"NOT UPDATED {name}") and 'the check "rows sum to 1" does not' in out
    crashing = TWO_CHECKS.replace("'rows sum to 1', True", "'rows sum to 1', False") + "raise ValueError('bad')\n"
    (repo / f"{name}.py").write_text("import sys\nsys.path.insert(0, %r)\n" % str(repo) + RECORDING + crashing)
    assert run(repo, name)[1].startswith(f"CRASH {name}")  # a traceback on stderr: a crash, as before


# ---------------------------------------------------------------- Ctrl-C

def interrupted(argv, cwd, wait_for):
    """Start argv in a process group of its own, wait until `wait_for()` is true, then send the
    group SIGINT, as Ctrl-C in a terminal does; return the finished process's result."""
    process = subprocess.Popen(argv, cwd=cwd, start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    deadline = time.monotonic() + 60
    while not wait_for() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return process, out, err


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="POSIX process groups")
def test_ctrl_c_stops_the_check_quietly_and_leaves_no_process(repo):
    started = repo / "started"
    (repo / "week9" / "04_slow.py").write_text(f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(60)\n")
    golden = run_all.golden_path("week9/01_good", repo).read_text()
    copy_the_check(repo)
    process, out, err = interrupted([sys.executable, str(repo / "run_all.py"), "week9/04_slow",
                                     "week9/01_good", "--update"], repo, started.exists)
    # A shell shows this as exit status 130; the check exits with 130 itself.
    assert process.returncode == 130
    assert err == "stopped\n" and out == ""
    assert run_all.golden_path("week9/01_good", repo).read_text() == golden
    assert not still_running(process.pid), "processes left behind"


def copy_the_check(repo):
    """run_all.py and what it imports, into repo: the check as a learner's clone has it."""
    shutil.copy(run_all.ROOT / "run_all.py", repo)
    for folder in ("common", "check"):
        shutil.copytree(run_all.ROOT / folder, repo / folder, dirs_exist_ok=True)


def still_running(group, grace=10.0):
    """The live (not zombie) processes of a process group, once `grace` seconds have passed or
    none is left: the fork server may take a moment to notice its parent has gone."""
    deadline = time.monotonic() + grace
    while True:
        table = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True).stdout
        rows = [row.split(maxsplit=2) for row in table.splitlines()]
        live = [row for row in rows if row[0] == str(group) and not row[1].startswith("Z")]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.2)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="POSIX process groups")
def test_ctrl_c_in_a_lesson_prints_one_word(tmp_path):
    """SIGINT to a lesson in the middle of its training (after its first printed line)."""
    script = run_all.ROOT / "week2" / "12_train_tiny_transformer.py"
    process = subprocess.Popen([sys.executable, "-u", str(script)], cwd=tmp_path, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    first = process.stdout.readline()
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert first.startswith("task: reverse")
    assert process.returncode == -signal.SIGINT  # ended by SIGINT, as Ctrl-C asks: the shell shows 130
    assert err == "stopped\n"
    assert list(tmp_path.iterdir()) == []


def test_running_scripts_leaves_this_process_environment_alone(repo):
    before = dict(os.environ)
    run(repo, "week9/01_good")
    assert dict(os.environ) == before  # a test's own subprocesses must not inherit the check's settings


def test_every_golden_check_upholds_the_page_at_the_defaults():
    """The rule --update holds new runs to holds for what is committed too: no golden check
    contradicts the page, and every lesson that prints a verdict has its checks file."""
    for name in run_all.discover():
        checks = run_all.checks_path(name)
        if "Verdict" in run_all.golden_path(name).read_text(encoding="utf-8"):
            assert checks.exists(), name
        outcomes = [outcome for _, outcome in comparing.parse_checks(
            checks.read_text(encoding="utf-8") if checks.exists() else "").values()]
        assert comparing.CONTRADICTS not in outcomes, name


# ---------------------------------------------------------------- what the check says as it goes

def test_each_result_is_printed_as_its_script_ends(repo):
    """The slow script starts first, but the quick one's line comes first: the learner sees
    the check moving, not a blank terminal until the end."""
    (repo / "week9" / "01_good.py").write_text("import time\ntime.sleep(1.5)\nprint('a=1')\n"
                                              "print('max |x - y|=0.00000011')\n")
    code, out = run(repo, "week9/01_good", "week9/02_drifted")
    lines = out.splitlines()
    assert lines.index("DIFF week9/02_drifted: output differs from its golden file (actual kept in "
                       "build/actual/week9/02_drifted.txt)") < [i for i, line in enumerate(lines)
                                                                if line.startswith("ok    week9/01_good")][0]
    assert lines[-2:] == ["failed: week9/02_drifted", "1 passed, 1 failed"]


def test_run_alls_own_bad_argument_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        run_all.main(["--jobs", "many"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("run_all.py: error: argument -j/--jobs: invalid int value")


def default_sigint():
    """A child with Ctrl-C's default meaning, even when this test runs as a background job
    (`make test &`), which starts with SIGINT ignored and would pass that on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def past_the_hook(pid):
    """True once run_all.py is past `import common` (which sets the one-word hook): its next
    imports load json's C part, which a bare interpreter never loads. Before that moment a
    Ctrl-C meets Python's own start-up, which no script's code can reach (the interpreter
    prints its traceback at 'line 0'), so the check's promise starts there."""
    try:
        return "/_json." in Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True  # it has ended: the test reads what it said


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX process groups")
@pytest.mark.parametrize("after", [0.0, 0.6, 1.5])
def test_ctrl_c_in_the_checks_first_moments_says_one_word(repo, after):
    """`after` seconds after run_all.py is past its first line (past_the_hook): while run_all
    imports, while its fork server is still importing torch, or while the first scripts
    start. (Ended by Ctrl-C either way: 130 is the status run_all returns, -2 a process the
    signal ended after its one word; a shell shows both as 130.)"""
    copy_the_check(repo)
    process = subprocess.Popen([sys.executable, str(repo / "run_all.py"), "week9/04_slow", "week9/01_good"],
                               cwd=repo, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=default_sigint)
    while not past_the_hook(process.pid):
        time.sleep(0.0005)
    time.sleep(after)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode in (130, -signal.SIGINT) and err == "stopped\n"
    assert all(line.startswith("ok    week9/01_good") for line in out.splitlines())  # what had ended by then
    assert not still_running(process.pid)


def test_a_setting_gets_its_own_fork_server_and_reaches_torch(tmp_path):
    """Kernel settings are read when torch is imported: a job with one is forked from a server
    that imported torch under it, beside the plain server, in one call."""
    probe = tmp_path / "probe.py"
    probe.write_text("import torch\nprint(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())\n")
    plain, scalar, one = run_all.run_scripts([
        run_all.Job(probe), run_all.Job(probe, setting={"ATEN_CPU_CAPABILITY": "default"}),
        run_all.Job(probe, setting={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})])
    assert [r.returncode for r in (plain, scalar, one)] == [0, 0, 0], [r.stderr[-500:] for r in (plain, scalar, one)]
    assert scalar.stdout.split()[0] == "DEFAULT" and plain.stdout.split()[0] != "DEFAULT", plain.stdout
    if plain.stdout.split()[1] == "1":
        pytest.skip("torch runs one thread here anyway: the one-thread setting cannot show")
    assert one.stdout.split()[1] == "1", one.stdout  # tests/test_portability.py's one thread


def test_a_job_can_remove_a_variable_and_run_in_its_own_folder(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nprint(os.getcwd(), os.environ.get('MPLBACKEND'), os.environ['EXTRA'])\n")
    (result,) = run_all.run_scripts([run_all.Job(probe, env={"MPLBACKEND": None, "EXTRA": "1"}, cwd=tmp_path)])
    assert result.stdout == f"{tmp_path} None 1\n"


# ---------------------------------------------------------------- checks: records, not prose

RECORDING = "from common.records import measured, record, retire\n"


def lesson_with_checks(repo, golden_body, new_body, name="week9/09_checks"):
    """A lesson whose golden files were written by --update from `golden_body`, now changed to
    `new_body` (both: Python lines after the records import)."""
    shutil.copytree(run_all.ROOT / "common", repo / "common", dirs_exist_ok=True)
    path = repo / f"{name}.py"
    path.write_text("import sys\nsys.path.insert(0, %r)\n" % str(repo) + RECORDING + golden_body)
    code, out = run(repo, "--update", name)
    assert code == 0, out
    path.write_text("import sys\nsys.path.insert(0, %r)\n" % str(repo) + RECORDING + new_body)
    return name


TWO_CHECKS = ("print('every row sums to 1: yes')\n"
              "record('rows sum to 1', True, value=1.0, threshold='within 1e-6')\n"
              "print('right: 96/96 (at least 90 needed)')\n"
              "record('held-out right', 96 >= 90, value=96, threshold='at least 90 of 96')\n")


def test_the_golden_checks_list_each_check_by_name_threshold_and_outcome(repo):
    name = lesson_with_checks(repo, TWO_CHECKS, TWO_CHECKS)
    assert run_all.checks_path(name, repo).read_text() == (
        "rows sum to 1 | within 1e-6 | upholds the page\nheld-out right | at least 90 of 96 | upholds the page\n")
    assert run_all.golden_path(name, repo).read_text() == (
        "every row sums to 1: yes\nright: 96/96 (at least 90 needed)\n")
    assert run(repo, name)[0] == 0


@pytest.mark.parametrize(("change", "says"), [
    # a count that falls below its threshold, worded as before
    (("96 >= 90, value=96", "87 >= 90, value=87"), 'the check "held-out right" does not uphold the page (measured 87'),
    # an answer that flips together with its wording
    (("'every row sums to 1: yes')\nrecord('rows sum to 1', True",
      "'every row sums to 1: no')\nrecord('rows sum to 1', False"),
     '"rows sum to 1" does not uphold'),
    # a lowered threshold
    (("threshold='at least 90 of 96'", "threshold='at least 50 of 96'"), "is now judged by 'at least 50 of 96'"),
    # a deleted check
    (("record('rows sum to 1', True, value=1.0, threshold='within 1e-6')\n", "print()\n"),
     'the check "rows sum to 1" is gone'),
    # a check no longer tested
    (("96 >= 90, value=96", "None, value=96"), '"held-out right" is no longer tested'),
])
def test_update_refuses_a_check_that_changed_by_name(repo, change, says):
    assert change[0] in TWO_CHECKS
    name = lesson_with_checks(repo, TWO_CHECKS, TWO_CHECKS.replace(*change))
    golden = run_all.golden_path(name, repo).read_text()
    code, out = run(repo, "--update", name)
    assert code == 1 and f"NOT UPDATED {name}" in out and says in out, out
    assert run_all.golden_path(name, repo).read_text() == golden
    code, out = run(repo, name)  # the check fails too, and does not offer --update
    assert code == 1 and says in out and f"--update {name}" not in out


def test_a_check_recorded_twice_is_refused(repo):
    """Two records of one name: only one could be compared with its golden line, so an earlier
    one that contradicts the page would slip through. (Both uphold here: only this rule refuses.)"""
    twice = TWO_CHECKS + "record('rows sum to 1', True, value=1.0, threshold='within 1e-6')\n"
    name = lesson_with_checks(repo, TWO_CHECKS, twice)
    code, out = run(repo, "--update", name)
    assert code == 1 and 'the check "rows sum to 1" is recorded twice' in out, out


def test_a_check_retired_on_purpose_may_go(repo):
    retired = TWO_CHECKS.replace("record('rows sum to 1', True, value=1.0, threshold='within 1e-6')\n",
                                 "retire('rows sum to 1', 'shown by week9/10 now')\n")
    name = lesson_with_checks(repo, TWO_CHECKS, retired)
    code, out = run(repo, "--update", name)
    assert code == 0, out
    assert run_all.checks_path(name, repo).read_text() == "held-out right | at least 90 of 96 | upholds the page\n"


def test_a_prose_edit_or_a_new_check_that_upholds_the_page_is_accepted(repo):
    edited = TWO_CHECKS.replace("'every row sums to 1: yes'", "'Result: each row adds up to 1'") + (
        "print('the loss falls: yes')\nrecord('loss falls', True, value=0.5, threshold='below 1.0')\n")
    name = lesson_with_checks(repo, TWO_CHECKS, edited)
    code, out = run(repo, name)
    assert code == 1 and f"--update {name}" in out  # a change that could be wanted: --update is offered
    assert run(repo, "--update", name)[0] == 0


def test_a_changed_threshold_fails_the_check_even_when_every_printed_line_is_the_same(repo):
    name = lesson_with_checks(repo, TWO_CHECKS, TWO_CHECKS.replace("within 1e-6", "within 1e-3"))
    code, out = run(repo, name)
    assert code == 1 and "its checks differ from its golden checks" in out
    assert "-rows sum to 1 | within 1e-6 | upholds the page" in out


def test_a_check_now_tested_that_upholds_the_page_is_accepted(repo):
    untested = TWO_CHECKS.replace("96 >= 90, value=96", "None, value=96")
    name = lesson_with_checks(repo, untested, TWO_CHECKS)
    assert run(repo, "--update", name)[0] == 0


# A training's own number beside the words of its claim: another CPU prints another number.
COUNTED = ("right = {share!r}\n"
           "print(f'totals right {{measured(\"totals right\", float(right[:-1]) > 75, right, \"above 75%\", "
           "value=right)}}')\n")


def test_a_counted_number_is_compared_as_this_runs_number(repo):
    name = lesson_with_checks(repo, COUNTED.format(share="96.4%"), COUNTED.format(share="88.1%"))
    assert run_all.golden_path(name, repo).read_text() == "totals right ‹this run's number› (above 75%)\n"
    assert run(repo, name)[0] == 0  # another number, the same claim: the same golden text


def test_a_counted_number_out_of_its_band_fails_by_name(repo):
    name = lesson_with_checks(repo, COUNTED.format(share="96.4%"), COUNTED.format(share="61.0%"))
    code, out = run(repo, name)
    assert code == 1 and 'the check "totals right" does not uphold the page (measured 61.0%' in out, out
    assert run(repo, "--update", name)[0] == 1


def test_a_learners_run_prints_the_number_alone(repo, capsys, monkeypatch):
    """The brackets around a measured number are there only where the check reads the output."""
    monkeypatch.delenv("LESSONS_RECORDS", raising=False)
    with collected() as got:
        assert measured("loss", True, "0.42", "below 0.6", value=0.42) == "0.42 (below 0.6)"
        assert measured("size", None, "1.00", value=1.0) == "1.00"
    assert capsys.readouterr().out == "" and got[0]["shown"] == "0.42" and got[0]["threshold"] == "below 0.6"
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    assert measured("loss", True, "0.42", "below 0.6") == f"{OPEN}0.42{CLOSE} (below 0.6)"


def test_a_bracketed_number_is_padded_as_the_learners_run_pads_it(monkeypatch):
    """A column padded beside a measured number: the check's output, brackets taken out, is
    the bytes a learner's run prints."""
    monkeypatch.delenv("LESSONS_RECORDS", raising=False)
    learners = f"{measured('tf', True, '99.1%', 'above 75%'):>25}|{measured('own', None, '7.9%'):<10}|"
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    checks = f"{measured('tf', True, '99.1%', 'above 75%'):>25}|{measured('own', None, '7.9%'):<10}|"
    assert checks.replace(OPEN, "").replace(CLOSE, "") == learners == "        99.1% (above 75%)|7.9%      |"


def test_each_bracketed_number_is_read_as_its_own_records_and_nothing_else(monkeypatch):
    """The k-th bracketed number is the k-th measured record's: the same digits elsewhere in the
    line (a size column beside a loss) are never read; a number printed out of turn, or measured
    and never printed, is refused by name."""
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    with collected() as records:
        line = f"size 1.00, loss {measured('loss', True, '1.00', 'below 2.0')}, again 1.00\n"
    assert comparing.compared(line, records) == ("size 1.00, loss ‹this run's number› (below 2.0), again 1.00\n", [])
    with collected() as records:
        a, b = measured("a", True, "0.1", "below 1"), measured("b", True, "0.2", "below 1")
    problems = comparing.compared(f"{b} {a}\n", records)[1]
    assert problems and "recorded '0.1'" in problems[0]
    assert comparing.compared("nothing\n", records)[1] == ['the check "a" measured \'0.1\', which is never printed',
                                                          'the check "b" measured \'0.2\', which is never printed']


def test_the_padding_beside_a_number_does_not_depend_on_the_runs_digits(monkeypatch):
    """A column right-aligned beside a number is padded by how wide that number is printed."""
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    texts = []
    for tf, own in (("99.1%", "7.9%"), ("100.0%", "27.9%")):
        with collected() as records:
            line = f"right{measured('tf', True, tf, 'above 75%'):>25}{measured('own', None, own):>10}  end\n"
        texts.append(comparing.compared(line, records))
    assert texts[0] == texts[1] == ("right ‹this run's number› (above 75%) ‹this run's number› end\n", [])


def test_records_are_taken_out_of_the_output_where_they_were_made():
    mark = "\x1f"
    raw = f"line 1\n{mark}{{\"name\": \"x\", \"outcome\": \"upholds the page\"}}\nline 2\n"
    text, records = comparing.split_records(raw)
    assert text == "line 1\nline 2\n" and records == [{"name": "x", "outcome": "upholds the page"}]


def test_update_keeps_the_golden_noise_value_when_only_rounding_moved(repo):
    """Another CPU prints 0.00000011 where the golden file says 0.00000013: both are noise, so
    --update leaves that line as it was while it takes the lines that really changed."""
    (repo / "week9" / "01_good.py").write_text("print('a=2')\nprint('max |x - y|=0.00000011')\n")
    assert run(repo, "--update", "week9/01_good")[0] == 0
    assert run_all.golden_path("week9/01_good", repo).read_text() == "a=2\nmax |x - y|=0.00000013\n"


def test_update_keeps_the_golden_noise_value_when_lines_are_added_around_it(repo):
    """A line wrapped in two above the noise line: the noise line is matched by its label and
    keeps the golden's value; a second line with that label has no golden line to keep."""
    (repo / "week9" / "01_good.py").write_text("print('a=2\\n  (wrapped)')\nprint('max |x - y|=0.00000011')\n"
                                               "print('max |x - y|=0.00000012')\n")
    assert run(repo, "--update", "week9/01_good")[0] == 0
    assert run_all.golden_path("week9/01_good", repo).read_text() == (
        "a=2\n  (wrapped)\nmax |x - y|=0.00000013\nmax |x - y|=0.00000012\n")


# ---------------------------------------------------------------- a lesson's own run: common.run(main)

SLOW_SHUTDOWN = """
import atexit, sys, time
sys.path.insert(0, {root!r})
from common import run
atexit.register(time.sleep, 2)  # a slow interpreter shutdown, as torch's teardown can be

def main():
    print("done", flush=True)

run(main)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_ctrl_c_after_the_output_is_complete_lets_the_lesson_end_quietly(tmp_path):
    script = tmp_path / "lesson.py"
    script.write_text(SLOW_SHUTDOWN.format(root=str(run_all.ROOT)))
    process = subprocess.Popen([sys.executable, str(script)], start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    assert process.stdout.readline() == "done\n"
    time.sleep(0.5)  # main() has returned; the interpreter is shutting down
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, "")


def test_a_lesson_piped_into_head_stops_quietly(tmp_path):
    """`python lesson.py | head -1`: the pipe closes after one line; no BrokenPipeError."""
    lesson = run_all.ROOT / "week1" / "04_encoder_parameter_count.py"
    pipe = subprocess.run(f"{shlex.quote(sys.executable)} {shlex.quote(str(lesson))} | head -1", shell=True,
                          capture_output=True, text=True, cwd=tmp_path)
    assert pipe.stdout.startswith("MHA formula=") and pipe.stderr == ""
