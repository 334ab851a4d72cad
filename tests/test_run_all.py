"""run_all.py reports each kind of fault by name: a diff, a crash, a timeout, a missing
golden file, an unknown name; and it exits 0 only when every script passed."""
import io

import pytest

import run_all


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
