"""Shared fixtures, and the lesson runs every test module reads, run once for the session.

A test module declares each run of a lesson script it reads, at import time:

    LAST_STATE = lesson_run("week1/09_bottleneck_experiment", "--look-back", "last")

and a test that reads runs says so, then waits for just those:

    @pytest.mark.reads(LAST_STATE)
    def test_it(runs):
        out = runs[LAST_STATE].stdout

(a test asking for `outputs` reads every script's default run, the check's own). Once
pytest knows which tests it will run, the runs they read start together in a background
thread, through run_all's own scheduler: forked from a warm server (one per kernel
setting), as many at once as there are CPUs, the slowest first. The tests that read no run
go first, while the runs do, so both CPUs stay busy. A run that several tests read (a
training at its defaults, or at a flip setting) runs once.
"""
import atexit
import contextlib
import importlib.util
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import run_all

SCRIPTS = run_all.discover()
SCRATCH = Path(tempfile.mkdtemp(prefix="lesson-tests-"))  # figures and folders the declared runs write to
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
TIMINGS = run_all.ROOT / "build" / "test_run_seconds.json"  # CPU seconds each run took last time: slowest first
# The pytest process itself runs one thread of torch, so that its tests and the runs beside
# it share the two CPUs instead of fighting over them (every lesson prints the same bytes on
# one thread: tests/test_portability.py).
torch.set_num_threads(1)


@dataclass(frozen=True)
class Run:
    """One run a test reads: a script (by name) or another file, its arguments, and the
    rest of run_all.Job (settings and environment as sorted pairs, so a Run is hashable)."""
    name: str
    argv: tuple = ()
    setting: tuple = ()
    env: tuple = ()
    fresh: bool = False
    cwd: str | None = None
    timeout: float = 600.0
    window: bool = False  # needs a display: a real window opens
    path: str | None = None  # a file other than the script itself (a wrapper that runs it)

    def job(self, display=None):
        env = dict(self.env)
        if self.window:
            env.update({"DISPLAY": display, "MPLBACKEND": None, "WAYLAND_DISPLAY": None})
        return run_all.Job(Path(self.path) if self.path else SCRIPTS[self.name], self.argv, env, dict(self.setting),
                           self.fresh, Path(self.cwd) if self.cwd else None, self.timeout)

    def key(self):
        """str(self) without this session's scratch folder: the same run's name in every session
        (its time is remembered under it)."""
        return str(self).replace(str(SCRATCH), "<scratch>")

    def __str__(self):
        parts = [self.name, *self.argv] + [f"{k}={v}" for k, v in self.setting + self.env]
        return " ".join(parts + ["(fresh)"] * self.fresh + ["(window)"] * self.window)


def lesson_run(name, *argv, setting=None, env=None, fresh=False, cwd=None, timeout=600.0, window=False, path=None):
    """Declare a run of lesson `name` (or of `path`, a wrapper given the script) for the session."""
    return Run(name, tuple(str(a) for a in argv), tuple(sorted((setting or {}).items())),
               tuple(sorted((env or {}).items())), fresh, None if cwd is None else str(cwd), timeout, window,
               None if path is None else str(path))


DEFAULT_RUNS = {name: lesson_run(name) for name in SCRIPTS}  # the check's own runs


class SharedRuns:
    """The declared runs of this session: started together, read one by one as each ends."""

    def __init__(self):
        self.results, self.ended, self.problem = {}, {}, None
        self.halt, self.thread = threading.Event(), None

    def start(self, wanted, display):
        if not wanted:
            return
        try:
            seconds = json.loads(TIMINGS.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            seconds = {}
        order = sorted(wanted, key=lambda run: (run.key() in seconds, -seconds.get(run.key(), 0), run.key()))
        for run in order:
            self.ended[run] = threading.Event()
        skipped = [run for run in order if run.window and display is None]
        for run in skipped:
            self.ended[run].set()  # read as None: the test skips
        order = [run for run in order if run not in skipped]
        self.thread = threading.Thread(target=self._run, args=(order, display, seconds), daemon=True)
        self.thread.start()

    def stop(self):
        """At the session's end: stop the runs no test is waiting for any more."""
        if self.thread is not None:
            self.halt.set()
            self.thread.join(timeout=60)

    def _run(self, order, display, seconds):
        def ended(i, result):
            self.results[order[i]] = result
            self.ended[order[i]].set()

        try:
            run_all.run_scripts([run.job(display) for run in order], on_result=ended, halt=self.halt)
            if self.halt.is_set():
                return  # stopped early: these timings are not whole
            seconds.update({run.key(): round(self.results[run].cpu or self.results[run].seconds, 2) for run in order})
            TIMINGS.parent.mkdir(parents=True, exist_ok=True)
            TIMINGS.write_text(json.dumps(seconds, indent=0, sort_keys=True), encoding="utf-8")
        except BaseException as error:  # every test waiting for a run must hear of it
            self.problem = error
            for event in self.ended.values():
                event.set()

    def __getitem__(self, run):
        if run not in self.ended:
            raise KeyError(f"{run} is not read by this test: add it to the test's @pytest.mark.reads(...)")
        self.ended[run].wait()
        if self.problem is not None:
            raise RuntimeError(f"the shared runs stopped: {self.problem!r}")
        result = self.results.get(run)
        if result is None:
            pytest.skip("no display and no Xvfb to make one")
        return result


SHARED = SharedRuns()
_display = {}


def virtual_display():
    """A display for windows: this session's own, or a virtual one (Xvfb) started for the
    tests and stopped at the end; None if neither can be had."""
    if "name" not in _display:
        _display["name"] = os.environ.get("DISPLAY") or None
        if _display["name"] is None and shutil.which("Xvfb") and sys.platform.startswith("linux"):
            number = 90 + os.getpid() % 900
            server = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            atexit.register(server.terminate)
            deadline = time.monotonic() + 10
            while not Path(f"/tmp/.X11-unix/X{number}").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            _display["name"] = f":{number}" if server.poll() is None else None
    return _display["name"]


def reads(item):
    """The runs a collected test reads. A test asking for `outputs` reads every default run,
    unless it is parametrized by a script's name: then that script's."""
    wanted = {run for marker in item.iter_markers("reads") for run in marker.args}
    if "outputs" in getattr(item, "fixturenames", ()):
        params = getattr(getattr(item, "callspec", None), "params", {})
        named = {str(value).removesuffix(".py") for value in params.values()} & set(DEFAULT_RUNS)
        wanted |= {DEFAULT_RUNS[name] for name in named} if named else set(DEFAULT_RUNS.values())
    return wanted


def pytest_configure(config):
    config.addinivalue_line("markers", "reads(*runs): the declared lesson runs this test reads (conftest.py)")


def pytest_collection_modifyitems(session, config, items):
    """Tests that read runs go last: the others run while the runs do."""
    items[:] = [item for item in items if not reads(item)] + [item for item in items if reads(item)]


def pytest_collection_finish(session):
    """Once pytest knows which tests it runs, the runs they read start (none for --collect-only)."""
    if session.config.option.collectonly:
        return
    wanted = set().union(*map(reads, session.items)) if session.items else set()
    SHARED.start(wanted, virtual_display() if any(run.window for run in wanted) else None)


def pytest_sessionfinish(session, exitstatus):
    SHARED.stop()


@pytest.fixture(scope="session")
def runs():
    """The declared runs: runs[run] is run_all.Result, once that run has ended."""
    return SHARED


class _Outputs:
    def __getitem__(self, name):
        return SHARED[DEFAULT_RUNS[name]]


@pytest.fixture(scope="session")
def outputs():
    """{name: run_all.Result} for the default run of every script (forked, like make check)."""
    return _Outputs()


@pytest.fixture
def adams_made(monkeypatch):
    """Every torch.optim.Adam built while the test runs (a training's optimizer, to read its settings)."""
    made = []

    class Seen(torch.optim.Adam):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(torch.optim, "Adam", Seen)
    return made


@pytest.fixture
def rates_used(monkeypatch):
    """The learning rate of every torch.optim.Adam step taken while the test runs, in order (what
    a schedule actually set, read at the step that uses it)."""
    used = []

    class Stepped(torch.optim.Adam):
        def step(self, *args, **kwargs):
            used.append(self.param_groups[0]["lr"])
            return super().step(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", Stepped)
    return used


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """Some lessons set torch to one thread; every test gives the test process its setting back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def plain(text):
    """text as a learner's run prints it: without the brackets around measured numbers."""
    from common.records import CLOSE, OPEN

    return text.replace(OPEN, "").replace(CLOSE, "")


class Printed(str):
    """What a lesson printed, as a learner's run prints it; .marked: as the check reads it, each
    measured number bracketed (common/records.py)."""
    marked = ""


def main_in_process(module, *argv, **replace):
    """A lesson's main() in this process (for a planted mistake), with some of its module's
    names replaced: what it printed (a Printed), and the records of its checks by name."""
    from common.records import RECORDS, collected

    from check.comparing import split_records

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as monkeypatch, collected() as records:
        monkeypatch.setenv(RECORDS, "1")  # as the check runs it: each measured number bracketed
        for attribute, value in replace.items():
            monkeypatch.setattr(module, attribute, value)
        with contextlib.redirect_stdout(out):
            module.main(list(argv))
    marked = split_records(out.getvalue())[0]
    printed = Printed(plain(marked))
    printed.marked = marked
    return printed, {r["name"]: r for r in records}


def main_outcomes(module, *argv, **replace):
    """main_in_process(), with each check's outcome alone."""
    out, records = main_in_process(module, *argv, **replace)
    return out, {name: r["outcome"] for name, r in records.items()}


def load_script(name):
    """Import a lesson script as a module (its main() does not run), to test its functions."""
    path = SCRIPTS[name]
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson_declared(name):
    """What lesson `name` declares about itself (its LESSON: flags, ranges, Try it, figure, live
    view, training), read without running it."""
    return load_script(name).LESSON


def try_it_commands(help_text, path):
    """The argument lists of the "Try it" commands in a --help text (whole commands, each
    naming the script)."""
    lines = help_text.split("Try it:", 1)[1].splitlines()
    commands = [shlex.split(line) for line in lines if path.name in line]
    return [words[[i for i, w in enumerate(words) if w.endswith(path.name)][0] + 1:] for words in commands]


LESSONS = {name: lesson_declared(name) for name in SCRIPTS}
PARSERS = {name: lesson.parser() for name, lesson in LESSONS.items()}  # each lesson's parser
LIMITS = {name: lesson.limits for name, lesson in LESSONS.items()}  # its joint size limit (or None)
# Every "Try it" suggestion of every script, as --help prints it: a declared run each.
TRY_ITS = {name: [lesson_run(name, *argv) for argv in try_it_commands(PARSERS[name].format_help(), SCRIPTS[name])]
           for name in SCRIPTS}


def run_on_a_terminal(argv, cwd, env):
    """Run argv with its stderr on a pseudo-terminal (as a learner's terminal), stdout piped.
    Returns (exit status, stdout, all the bytes the terminal received)."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    out, _ = process.communicate(timeout=600)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return process.returncode, out, seen
