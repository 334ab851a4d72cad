#!/usr/bin/env python3
"""Run every lesson script and compare what it prints with its golden file.

    python run_all.py                        # every week*/NN_*.py against expected_outputs/
    python run_all.py -k week2               # only names containing "week2"
    python run_all.py week1/02_dot_product_variance
    python run_all.py --list
    python run_all.py --update week2/06_warmup_schedule   # rewrite golden files from a run

Each script runs in a process of its own, in a scratch working directory, with a fixed
environment (MPLBACKEND=Agg, PYTHONHASHSEED=0, UTF-8 I/O, kernel threads that sleep while
they wait) and a timeout. By default the
processes are forked from a server that has already imported numpy, torch and matplotlib
(importing torch is most of a script's run time); --fresh starts a new interpreter per
script instead, exactly as `python week1/01_attention_from_scratch.py` does. Where the OS
cannot fork (Windows), every run is a fresh one.

Comparison is exact, line by line, with one documented exception: rounding noise. A line
of the form `max |A - B|=<number>` reports how far apart two computations of the same
thing are (NumPy vs torch, by hand vs a torch module). Its value depends on the CPU's
kernels, the thread count and the library versions, so it is judged, not compared: the
text before `=` and the number of decimals must match, and the number, in the golden
file and in the run, must be at most NOISE_CEILING. Why that ceiling:
  - such lines move in whole float32 rounding steps (2^-24, about 6e-8); across 30
    environments (torch 2.13 and 2.14, numpy 1.26 to 2.4, Intel and AMD kernel paths,
    1 or 2 threads) the largest value seen was 2.4e-7;
  - real formula errors give far more: a dropped 1/sqrt(d_k) or a wrong mask 0.05 to
    2.8, a LayerNorm eps of 1e-6 instead of 1e-5 1.5e-5, the subtlest error found (eps
    1.1e-5 instead of 1e-5) 1.8e-6.
1e-6 sits between the two, four times above the largest noise and below every error.
For some errors this line is the only one that changes, so it is always checked.

Exit status: 0 when every selected script passed, 1 when any failed, 2 on a usage error.
"""
# isort: off
import common  # noqa: F401  (first: from here on a Ctrl-C ends with the one word "stopped")
# isort: on
import argparse
import atexit
import difflib
import gc
import importlib.util
import itertools
import json
import os
import queue
import re
import runpy
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from common import OUTPUT_ROOT, shown
from common.records import CONTRADICTS, MARK, NOT_TESTED, RECORDS, RETIRED, UPHOLDS

ROOT = Path(__file__).resolve().parent
NOISE_CEILING = 1e-6
NOISE_LINE = re.compile(r"^(max \|.+\|=)(\S*)$")
# OMP_WAIT_POLICY=PASSIVE: the threads of torch's kernels sleep while they wait instead of
# spinning, so scripts run side by side do not burn each other's CPU. It changes no number
# any script prints.
FIXED_ENV = {"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1",
             "OMP_WAIT_POLICY": "PASSIVE"}
# torch._dynamo: building a torch.optim optimizer imports it (about a second), once per run
PRELOAD = ["numpy", "torch", "torch._dynamo", "matplotlib.pyplot"]


# ---------------------------------------------------------------- finding scripts

def discover(root=ROOT):
    """{name: path} for every week*/NN_*.py, name like 'week1/02_dot_product_variance'."""
    paths = sorted(root.glob("week*/[0-9][0-9]_*.py"))
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in paths}


def golden_path(name, root=ROOT):
    return root / "expected_outputs" / f"{name}.txt"


def actual_path(name, root=ROOT):
    return root / "build" / "actual" / f"{name}.txt"


def timings_path(root=ROOT):
    return root / "build" / "script_seconds.json"


# ---------------------------------------------------------------- comparing outputs

def noise_value(line):
    """(text up to '=', the value as printed) for a noise line `max |A - B|=<value>`, else None.
    The value may be anything (nan, inf, 1e-3): judge it with is_noise()."""
    match = NOISE_LINE.match(line)
    return (match.group(1), match.group(2)) if match else None


def is_noise(value):
    """True when a printed noise value is a plain decimal number at most NOISE_CEILING."""
    return re.fullmatch(r"\d+\.\d+", value) is not None and float(value) <= NOISE_CEILING


def lines_match(expected, actual):
    """Equal lines; for two noise lines, the same text and format, both values noise."""
    e, a = noise_value(expected), noise_value(actual)
    if e and a:
        same_form = e[0] == a[0] and len(e[1]) == len(a[1])
        return same_form and is_noise(e[1]) and is_noise(a[1])
    return expected == actual and not (e or a)


def outputs_match(expected_text, actual_text):
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    return len(expected) == len(actual) and all(map(lines_match, expected, actual))


def noise_over_ceiling(text):
    """[(line number, label, value)] for each noise line in text that is not noise: above
    NOISE_CEILING, or not a number at all (nan, inf)."""
    return [(n, found[0].removesuffix("="), found[1]) for n, line in enumerate(text.splitlines(), 1)
            if (found := noise_value(line)) and not is_noise(found[1])]


def printed_as_a_whole(token, text):
    """token (written without spaces, as the pages' tables quote it) appears in text as a
    whole value, spaces allowed between its characters: '[0,1,2,3]' matches '[0, 1, 2, 3]',
    but '0.0000' is not found inside '-0.0000' or '0.00001', nor '260' inside '1260'."""
    spaced = r"\s*".join(map(re.escape, token))
    return re.search(rf"(?<![\w.+-]){spaced}(?![\w.])", text) is not None


def page_quotes(root=ROOT):
    """(LINES, TOKENS) of tests/data/page_quotes.py: what the pages quote, per script."""
    path = root / "tests" / "data" / "page_quotes.py"
    if not path.exists():
        return {}, {}
    spec = importlib.util.spec_from_file_location("page_quotes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LINES, module.TOKENS


def quotes_missing(name, text, root=ROOT):
    """The page's quoted lines and values for script `name` that text no longer prints (a
    quoted noise value such as 0.00000011 is judged like a noise line: any noise line will do)."""
    lines, tokens = (quoted.get(f"{name}.py", []) for quoted in page_quotes(root))
    printed = text.splitlines()
    missing = [f"the page's line {line!r}" for line in lines if not any(lines_match(line, p) for p in printed)]
    for token in tokens:
        if re.fullmatch(r"0\.0{5}\d\d", token):
            found = is_noise(token) and any(n and is_noise(n[1]) for n in map(noise_value, printed))
        else:
            found = printed_as_a_whole(token, text)
        if not found:
            missing.append(f"the page's value {token}")
    return missing


def split_records(raw):
    """A run's stdout as (the lines a learner reads, the records the lesson made): each record's
    line starts with MARK (common/records.py) and is taken out; each record gets "at", the
    number of the learner's lines printed before it."""
    lines, records = [], []
    for line in raw.splitlines(keepends=True):
        if line.startswith(MARK):
            try:
                records.append({**json.loads(line[1:]), "at": len(lines)})
            except ValueError:  # a line cut short by a kill
                pass
        else:
            lines.append(line)
    return "".join(lines), records


def banded(text, records):
    """(text with each `shown` number replaced by its record's band, ‹band›; the problems).
    A training's numbers differ from CPU to CPU; their bands, and so this text, do not.

    A record is made after the line it judges, so its number is looked for in the lines
    printed since the record before it (records made one after another share those lines),
    nearest first, as a whole value outside a band already put in. A judged number must be
    printed beside the band it is judged by, "0.084 (below 0.5)": the record's threshold,
    word for word; a number no claim judges must stand once in its line. Anything else is
    refused by name: a band printed beside a number may not say what the check does not.
    The padding around a band is compared as one space (unpadded())."""
    lines, problems = text.splitlines(keepends=True), []
    start = last = 0  # a record's lines: those printed since the last record made at an earlier line
    for r in records:
        at = min(r.get("at", len(lines)), len(lines))
        if at > last:
            start, last = last, at
        if "shown" not in r:
            continue
        threshold = r.get("threshold")
        pattern = re.compile(rf"(?<![\w.+-]){re.escape(r['shown'])}(?![\w.])")
        for n in range(at - 1, start - 1, -1):
            hidden = re.sub(r"‹[^›]*›", lambda placed: "\0" * len(placed.group()), lines[n])  # bands already in
            places = list(pattern.finditer(hidden))
            if not places:
                continue
            beside = [p for p in places if threshold and hidden[p.end():].startswith(f" ({threshold})")]
            if threshold and not beside:
                problems.append(f"the check \"{r['name']}\" shows {r['shown']!r} without the band it is judged by: "
                                f"print \"{r['shown']} ({threshold})\"")
            elif not threshold and len(places) > 1:
                problems.append(f"the check \"{r['name']}\" shows {r['shown']!r}, which stands {len(places)} times "
                                "in its line: a number no claim judges must stand once")
            else:
                where = (beside or places)[0]
                lines[n] = f"{lines[n][:where.start()]}‹{threshold or 'not judged'}›{lines[n][where.end():]}"
            break
        else:
            problems.append(f"the check \"{r['name']}\" shows {r['shown']!r}, but no line printed since the check "
                            "before it holds that value: print the number, then record it, with the same text")
    return "".join(unpadded(line) if "‹" in line else line for line in lines), problems


def unpadded(line):
    """The spaces that pad a column beside a shown number depend on how wide the run's number
    is ("99.1%" or "100.0%"), so where a band stands in for it they become one space: before
    the band, and after it (or after the band printed beside it)."""
    line = re.sub(r" {2,}(?=‹)", " ", line)
    return re.sub(r"(›(?: \([^()\n]*\))?) {2,}", r"\1 ", line)


def checks_path(name, root=ROOT):
    """The golden checks of script `name`: one line per check it records (common/records.py)."""
    return root / "expected_outputs" / f"{name}.checks.txt"


def checks_text(records):
    """A run's records in their golden form: `name | threshold or band | outcome`, one line per
    check, in the order made. The measured values are left out: a training's differ from CPU
    to CPU (the printed lines hold what every CPU prints)."""
    return "".join(f"{r['name']} | {r.get('threshold') or '-'} | {r['outcome']}\n"
                   for r in records if r["outcome"] != RETIRED)


def parse_checks(text):
    """{name: (threshold, outcome)} of a golden checks file."""
    checks = {}
    for line in (text or "").splitlines():
        name, threshold, outcome = (part.strip() for part in line.rsplit(" | ", 2))
        checks[name] = (threshold, outcome)
    return checks


def check_refusals(name, expected_checks, records, root=ROOT):
    """Why a run's records must not become script `name`'s golden checks, each in words with
    the check's name: it does not uphold the page (every default run upholds it), it is no
    longer tested, its threshold changed, or it disappeared without being retired."""
    reasons, made, golden = [], {}, parse_checks(expected_checks)
    where = checks_path(name, root).relative_to(root).as_posix()
    for r in records:
        if r["name"] in made:
            reasons.append(f"the check \"{r['name']}\" is recorded twice: each check needs a name of its own")
        made[r["name"]] = r
    for check_name, r in made.items():
        measured = "" if r.get("value") is None else f"measured {shown_value(r['value'])}, "
        threshold = r.get("threshold") or "-"
        if r["outcome"] == CONTRADICTS:
            reasons.append(f"the check \"{check_name}\" does not uphold the page ({measured}judged by: {threshold})")
        if check_name not in golden or r["outcome"] == RETIRED:
            continue
        was_threshold, was = golden[check_name]
        if threshold != was_threshold:
            reasons.append(f"the check \"{check_name}\" is now judged by {threshold!r}, not {was_threshold!r}: a "
                           f"threshold is part of the claim (to change one on purpose, edit its line in {where} "
                           "by hand, so the change is reviewed)")
        if was == UPHOLDS and r["outcome"] == NOT_TESTED:
            reasons.append(f"the check \"{check_name}\" is no longer tested ({measured}judged by: {threshold})")
    for check_name in golden:
        if check_name not in made:
            reasons.append(f"the check \"{check_name}\" is gone: a check is retired only on purpose, in the lesson, "
                           "with common.records.retire(name, why)")
    return reasons


def shown_value(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def refusals(name, actual_text, root=ROOT, expected_checks=None, records=()):
    """Why a run (its output actual_text, its records) must not become script `name`'s golden
    files: each reason in words, naming its line or check. Empty when the change could be a
    wanted one."""
    reasons = [f"line {n}: {label} should be float rounding noise (at most {NOISE_CEILING:g}) but is {value}: "
               f"the two computations disagree, so the formula is wrong"
               for n, label, value in noise_over_ceiling(actual_text)]
    reasons += [f"{quote} is no longer printed" for quote in quotes_missing(name, actual_text, root)]
    reasons += banded(actual_text, records)[1]
    return reasons + check_refusals(name, expected_checks, records, root)


def explain_difference(expected_text, actual_text, name, root=ROOT, expected_checks=None, records=()):
    """What a learner should read when a script's output does not match its golden file:
    the reasons it must not become the golden file, each in words, then the unified diff of
    the golden file and the run as compared (left out when only noise values moved)."""
    parts = ["  " + reason for reason in refusals(name, actual_text, root, expected_checks, records)]
    actual_text = banded(actual_text, records)[0]
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    only_noise = len(expected) == len(actual) and all(
        lines_match(e, a) or (noise_value(e) and noise_value(a) and noise_value(e)[0] == noise_value(a)[0])
        for e, a in zip(expected, actual, strict=True))
    if not only_noise:
        parts.append(unified_diff(expected_text, actual_text, name).rstrip())
    return "\n".join(parts)


def unified_diff(expected_text, actual_text, name, kind="output"):
    suffix = ".checks.txt" if kind == "checks" else ".txt"
    return "".join(difflib.unified_diff(
        expected_text.splitlines(keepends=True), actual_text.splitlines(keepends=True),
        fromfile=f"expected_outputs/{name}{suffix}", tofile=f"actual {name} ({kind})"))


# ---------------------------------------------------------------- running scripts

@dataclass
class Job:
    """One run of a lesson: `python path *argv` in `cwd` (default: the check's folder), with
    `env` on top of the fixed environment (a name given as None is removed).
    `setting`: environment that torch, NumPy or MKL read once, when they are imported (kernel
    choices, thread counts): jobs with a setting are forked from a server of their own.
    `fresh`: a new interpreter, exactly as a learner's `python path`."""
    path: Path
    argv: tuple = ()
    env: dict = field(default_factory=dict)
    setting: dict = field(default_factory=dict)
    fresh: bool = False
    cwd: Path | None = None
    timeout: float | None = None  # seconds; None: run_scripts' own


@dataclass
class Result:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    records: list = field(default_factory=list)  # the checks the run recorded (common/records.py)

    def compared(self):
        """(stdout as the check compares it: each `shown` number replaced by its band; problems)."""
        return banded(self.stdout, self.records)
    cpu: float | None = None  # CPU seconds the run used (where the OS tells)


def _run_forked(path, argv, out_file, err_file, cwd, env):
    """A child of a fork server: behave like `python path *argv` started in cwd with env."""
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, file in ((1, out_file), (2, err_file)):
            os.dup2(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    except OSError:  # its caller has already given up on it (its scratch folder is gone)
        os._exit(1)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    os.chdir(cwd)
    for module in [m for m in sys.modules if m == "common" or m.startswith("common.")]:
        del sys.modules[module]  # the script imports its own repo's `common`, as a fresh `python path` does
    sys.argv = [str(path), *argv]
    # sys.path as for a fresh `python path`: the script's folder first, not this repo root.
    sys.path[:] = [str(path.parent)] + [p for p in sys.path if p not in ("", str(ROOT))]
    code = 0
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:  # what the interpreter would do with sys.exit(code)
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve():
    """A fork server's main loop (run in its own Python, started by ForkServer): import
    PRELOAD once, then read jobs, one JSON line each, from stdin and fork a child per job,
    answering `started <id> <pid>` and, when the child ends, `ended <id> <exit code> <CPU
    seconds it used>`.
    SIGINT is ignored (inherited from the caller), so a Ctrl-C reaches only run_all, which
    stops the children itself. When stdin closes, every child still running is killed."""
    children, pending, reading = {}, b"", True

    def stop(*_):  # SIGTERM (run_all was stopped): end every child, then the server
        for pid in list(children):  # (the loop below may be reaping one right now)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):  # already ended and reaped
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for name in PRELOAD:
        importlib.import_module(name)
    # Every object imported so far is set aside from the collector: a child's collections then
    # skip them, and do not copy the server's memory pages to update them (Python's advice for
    # gc.freeze before a fork without exec).
    gc.collect()
    gc.freeze()
    wake_r, wake_w = os.pipe()  # SIGCHLD wakes the select() below through this pipe
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)

    def say(text):
        try:
            os.write(1, (text + "\n").encode())
        except BrokenPipeError:  # run_all is gone: so is every run it asked for
            stop()

    while reading or children:
        ready = select.select([0, wake_r] if reading else [wake_r], [], [])[0]
        if wake_r in ready:
            os.read(wake_r, 4096)
        while children:  # every child that has ended
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            say(f"ended {children.pop(pid)} {os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime:.3f}")
        if 0 not in ready:
            continue
        data = os.read(0, 65536)
        if not data:  # run_all has finished, or stopped: nothing may outlive it
            reading = False
            for pid in children:
                os.kill(pid, signal.SIGKILL)
            continue
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            job = json.loads(line)
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                _run_forked(Path(job["path"]), job["argv"], job["out"], job["err"], job["cwd"], job["env"])
            children[pid] = job["id"]
            say(f"started {job['id']} {pid}")


class ForkServer:
    """A Python that has imported numpy, torch and matplotlib once, under one environment,
    and forks a child for each script: a script then starts in milliseconds, not seconds.
    One server per setting lives as long as this process (fork_server() below), shared by
    every run_scripts call, from any thread."""

    def __init__(self, setting):
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None  # inherited
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                 f"import sys; sys.path.insert(0, {str(ROOT)!r}); import run_all; run_all.serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **FIXED_ENV, **setting})
        finally:
            if main_thread:
                signal.signal(signal.SIGINT, previous)
        self.pids, self.queues, self.lock = {}, {}, threading.Lock()
        self.began = {}  # job -> when its child was forked (the server may still be importing torch)
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self):
        for line in self.process.stdout:
            word, job, number, *cpu = line.decode().split()
            if word == "started":
                self.pids[int(job)] = int(number)
                self.began[int(job)] = time.monotonic()
            elif (events := self.queues.pop(int(job), None)) is not None:
                events.put((int(job), int(number), float(cpu[0])))
        for events in list(self.queues.values()):
            events.put((self, None))  # the server is gone

    def alive(self):
        return self.process.poll() is None

    def start(self, job_id, job, out, err, cwd, env, events):
        """Fork job's child; `events` hears (job_id, exit code) when it ends."""
        message = {"id": job_id, "path": str(job.path), "argv": list(job.argv), "out": out, "err": err,
                   "cwd": str(cwd), "env": env}
        self.queues[job_id] = events
        with self.lock:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()

    def kill(self, job_id):
        """Stop a job's child (once the server has said which it is)."""
        deadline = time.monotonic() + 10
        while job_id not in self.pids and self.alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if job_id in self.pids:
            try:
                os.kill(self.pids.pop(job_id), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self):
        """End the server at once, and every child it is running (after a Ctrl-C)."""
        if self.alive():
            self.process.terminate()
        self.process.wait()

    def close(self):
        """End the server; it kills whatever child is still running."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_servers, _servers_lock = {}, threading.Lock()  # setting -> its ForkServer, started when first needed
_job_ids = itertools.count()  # unique over the whole process


def fork_server(setting):
    key = tuple(sorted(setting.items()))
    with _servers_lock:
        if key not in _servers or not _servers[key].alive():
            _servers[key] = ForkServer(setting)
        return _servers[key]


@atexit.register
def close_fork_servers():
    """End every fork server (each kills whatever child it is still running)."""
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


def _read(file):
    try:
        return Path(file).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:  # a run that never started
        return ""


def check_folder(root=ROOT):
    """The check's working folder, build/check/: every script runs there, and a default run
    writes its figure there (at the same relative place as in the repo) instead of over
    the committed copy."""
    return root / "build" / "check"


def run_scripts(jobs, timeout=120.0, workers=None, fresh=False, root=ROOT, on_result=None, halt=None):
    """Run jobs (Job, or (path, argv) pairs), up to `workers` at once, in the order given;
    return a Result per job, in that order. on_result(i, result), if given, hears of each
    job as it ends. Forked runs share one fork server per setting; where the OS cannot fork
    (Windows), or with fresh=True, every run is a new interpreter. halt: a threading.Event;
    once it is set, the runs still going are stopped and the rest are not started (their
    results stay None)."""
    jobs = [job if isinstance(job, Job) else Job(Path(job[0]), tuple(job[1])) for job in jobs]
    cwd = check_folder(root)
    cwd.mkdir(parents=True, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    fork = not fresh and hasattr(os, "fork")
    results, running, events = [None] * len(jobs), {}, queue.Queue()
    with tempfile.TemporaryDirectory(prefix="run_all_") as scratch:
        try:
            pending = list(enumerate(jobs))
            while pending or running:
                if halt is not None and halt.is_set():
                    for job_id, run in list(running.items()):
                        run.runner.kill(job_id) if isinstance(run.runner, ForkServer) else run.runner.kill()
                        run.killed = True
                    pending = []
                while pending and len(running) < workers:
                    i, job = pending.pop(0)
                    files = [os.path.join(scratch, f"{i}.{part}") for part in ("out", "err")]
                    env = {OUTPUT_ROOT: str(cwd), RECORDS: "1", **job.env}
                    where = job.cwd or cwd
                    job_id = next(_job_ids)
                    if fork and not job.fresh:
                        runner = fork_server(job.setting)
                        runner.start(job_id, job, files[0], files[1], where, env, events)
                    else:
                        with open(files[0], "wb") as o, open(files[1], "wb") as e:
                            runner = subprocess.Popen(
                                [sys.executable, str(job.path), *job.argv], cwd=where, stdout=o, stderr=e,
                                env=_environment({**os.environ, **FIXED_ENV, **job.setting}, env))
                    running[job_id] = Running(i, runner, time.monotonic(), files)
                _collect(jobs, running, results, events, timeout, on_result)
        except KeyboardInterrupt:  # Ctrl-C (main thread only): stop every script still running, pass it on
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this short
            try:
                for run in running.values():
                    run.runner.stop() if isinstance(run.runner, ForkServer) else run.runner.kill()
                for run in running.values():
                    run.runner.wait() if not isinstance(run.runner, ForkServer) else None
            finally:
                signal.signal(signal.SIGINT, previous)
            raise
    return results


@dataclass
class Running:
    index: int  # the job's place in run_scripts' list
    runner: object  # its ForkServer, or its own Popen
    start: float
    files: list  # stdout, stderr
    killed: bool = False


def _environment(base, changes):
    """base with changes applied; a name whose value is None is removed."""
    merged = dict(base)
    for name, value in changes.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def _collect(jobs, running, results, events, timeout, on_result):
    """Wait a little for jobs to end; record each ended job's Result; kill those over time."""
    ended = []
    try:
        ended.append(events.get(timeout=0.01))
        while True:
            ended.append(events.get_nowait())
    except queue.Empty:
        pass
    for job_id, run in running.items():
        if not isinstance(run.runner, ForkServer) and (ended_now := _ended(run.runner)):
            ended.append((job_id, *ended_now))
    for job_id, *how in ended:
        if isinstance(job_id, ForkServer):  # a server that died took its running children with it
            for lost in [j for j, run in running.items() if run.runner is job_id]:
                _finish(lost, running, results, -1, None, on_result, note="the fork server ended unexpectedly\n")
        elif job_id in running:
            _finish(job_id, running, results, *how, on_result)
    now = time.monotonic()
    for job_id, run in running.items():
        if not run.killed and now - began(job_id, run) > (jobs[run.index].timeout or timeout):
            run.runner.kill(job_id) if isinstance(run.runner, ForkServer) else run.runner.kill()
            run.killed = True


def began(job_id, run):
    """When a job's own time started: its child's fork, not the moment it was queued behind a
    fork server still importing torch (which takes seconds on a loaded machine); a fresh
    run's start."""
    if isinstance(run.runner, ForkServer):
        return run.runner.began.get(job_id, time.monotonic())
    return run.start


def _ended(process):
    """(exit code, CPU seconds) of a fresh run's process if it has ended, else None."""
    if not hasattr(os, "wait4"):  # Windows: no CPU time to be had
        return None if process.poll() is None else (process.returncode, None)
    pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def _finish(job_id, running, results, code, cpu, on_result, note=""):
    run = running.pop(job_id)
    out, err = run.files
    stdout, records = split_records(_read(out))
    results[run.index] = Result(None if run.killed else code, stdout, _read(err) + note,
                                time.monotonic() - began(job_id, run), records, cpu)
    if isinstance(run.runner, ForkServer):
        run.runner.began.pop(job_id, None)
    if on_result:
        on_result(run.index, results[run.index])


# ---------------------------------------------------------------- the command line

def this_python():
    """The command that runs run_all.py with this interpreter, from here."""
    return f"{shown(sys.executable, ROOT)} {shown(ROOT / 'run_all.py', ROOT)}"


def resolve(raw, scripts, root):
    """A script name as a shell gives it: week2/03_sinusoidal_pe, ./week2/03_sinusoidal_pe.py,
    an absolute path, a bare 03_sinusoidal_pe when only one week has it, or week2/03 for
    short. None if unknown; a list of the candidates if it names several."""
    text = raw.replace("\\", "/").removesuffix(".py")
    candidates = [text.removeprefix("./").strip("/")]
    try:
        candidates.append(Path(os.path.abspath(text)).relative_to(root).as_posix())
    except ValueError:
        pass
    for name in candidates:
        if name in scripts:
            return name
    for guess in (candidates[0], candidates[0] + "_"):  # a bare name, or just its number: week1/08
        found = [name for name in scripts if name.split("/")[-1] == guess
                 or (guess.endswith("_") and any((part + "_").startswith(guess)
                                                 for part in (name, name.split("/")[-1])))]
        if found:
            return found[0] if len(found) == 1 else found
    return None


def choose(parser, names, pattern, scripts, root=ROOT):
    chosen = []
    for raw in names:
        name = resolve(raw, scripts, root)
        if isinstance(name, list):
            parser.error(f"{raw!r} names {len(name)} scripts: {', '.join(name)}; give the week too, e.g. {name[0]}")
        if name is None:
            close = difflib.get_close_matches(raw.removesuffix(".py").strip("./"), scripts, n=1, cutoff=0.5)
            close = close or difflib.get_close_matches(
                raw.removesuffix(".py").split("/")[-1], [n.split("/")[-1] for n in scripts], n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}? " if close else ""
            parser.error(f"unknown script {raw!r}; {hint}--list shows the names")
        chosen.append(name)
    chosen = chosen or list(scripts)
    if pattern:
        chosen = [n for n in chosen if pattern.lower() in n.lower()]
        if not chosen:
            parser.error(f"no script name contains {pattern!r} (--list shows the names)")
    return chosen


def slowest_first(names, scripts, root):
    """Order names by the seconds each took last time (build/script_seconds.json), slowest
    first, so the check's wall time stays close to that of its slowest script. Scripts never
    timed go first, longest source first (on a fresh clone, the training lessons)."""
    try:
        seconds = json.loads(timings_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seconds = {}
    return sorted(names, key=lambda n: (n in seconds, -seconds.get(n, 0), -scripts[n].stat().st_size))


def record_seconds(results, root):
    path = timings_path(root)
    try:
        seconds = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seconds = {}
    seconds.update({name: round(r.seconds, 2) for name, r in results if r.returncode == 0})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(seconds, indent=1, sort_keys=True), encoding="utf-8")


def missing_packages():
    return [name for name in ("numpy", "torch", "matplotlib") if importlib.util.find_spec(name) is None]


def alone(path):
    """The command that runs one script by itself, from the current folder."""
    return f"{shown(sys.executable, ROOT)} {shown(path, ROOT)}"


def kept_noise(expected_text, actual_text):
    """actual_text, except that a noise line that passes against its golden line keeps the
    golden's value: --update on another CPU does not rewrite rounding noise for nothing. A
    noise line's golden line is the one with the same label, the same count of them down
    (the n-th `max |A - B|=` of the run against the golden's n-th), so lines added or
    wrapped elsewhere in the update do not lose it."""
    if expected_text is None:
        return actual_text
    golden = {}  # label -> the golden file's noise lines with that label, in order
    for line in expected_text.splitlines():
        if found := noise_value(line):
            golden.setdefault(found[0], []).append(line)
    kept, seen = [], {}
    for line in actual_text.splitlines(keepends=True):
        if found := noise_value(line.rstrip("\n")):
            n, same_label = seen.get(found[0], 0), golden.get(found[0], [])
            seen[found[0]] = n + 1
            if n < len(same_label) and lines_match(same_label[n], line.rstrip("\n")):
                line = same_label[n] + line[len(line.rstrip("\n")):]  # the golden's value, the run's line end
        kept.append(line)
    return "".join(kept)


def write_atomically(path, text):
    """path holds text, all or nothing: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)  # an interrupted update leaves the old file whole


def judge(name, result, path, args, root):
    """What went wrong with one script's run, in words with a "What next", or None if it passed.
    With --update, a run that may become the golden files is written as them here."""
    golden, kept, checks = golden_path(name, root), actual_path(name, root), checks_path(name, root)
    expected = golden.read_text(encoding="utf-8") if golden.exists() else None
    expected_checks = checks.read_text(encoding="utf-8") if checks.exists() else None
    if result.returncode is None:
        return (f"TIMEOUT {name}: still running after {args.timeout:g} s, killed\n"
                f"  What next: run it alone to see where it stops: {alone(path)}; on a slow machine, "
                f"give it longer: --timeout SECONDS")
    if result.returncode != 0 and not disagreed(result):
        lines = result.stderr.rstrip().splitlines()
        tail = "\n".join("    " + line for line in lines[-8:])
        error = lines[-1].strip() if lines else f"exit status {result.returncode}, nothing on stderr"
        return (f"CRASH {name}: exit status {result.returncode}\n{tail}\n"
                f"  What next: the script stopped with an error before it finished ({error}). Run it alone "
                f"to see the whole traceback: {alone(path)}")
    if result.stderr:
        written = "\n".join("    " + line for line in result.stderr.rstrip().splitlines())
        return (f"STDERR {name}: the run wrote to stderr, where a lesson's run writes nothing (a warning is a "
                f"fault to mend, not noise)\n{written}\n  What next: run it alone to see where: {alone(path)}")
    reasons = refusals(name, result.stdout, root, expected_checks, result.records)
    if args.update and reasons:
        return (f"NOT UPDATED {name}: this run disagrees with itself or with the page, so the script is wrong, "
                f"not its golden file\n" + "\n".join("  " + reason for reason in reasons))
    made, compared = checks_text(result.records), result.compared()[0]
    if args.update:
        write_atomically(golden, kept_noise(expected, compared))
        if made:
            write_atomically(checks, made)
        else:
            checks.unlink(missing_ok=True)
        same = expected == compared and (expected_checks or "") == made
        written = golden.relative_to(root).as_posix() + (f" and {checks.name}" if made else "")
        print(f"{'unchanged' if same else 'updated'} {written}", file=args.out)
        return None
    if expected is None:
        return (f"NO GOLDEN FILE {name}: {golden.relative_to(root).as_posix()} is missing; "
                f"create it with: {this_python()} --update {name}")
    same_output, same_checks = outputs_match(expected, compared), (expected_checks or "") == made
    if same_output and same_checks:
        kept.unlink(missing_ok=True)
        return None
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(compared, encoding="utf-8")
    if reasons:
        what_next = (f"  What next: the lesson now disagrees with itself or with the page (the lines above say "
                     f"where), so --update would refuse it. If you edited {name}.py, your edit changed what "
                     f"it computes: `git diff` shows the edit, and `git checkout -- {name}.py` undoes it.")
    else:
        what_next = (f"  What next: if you changed {name}.py on purpose, rewrite its golden files and review "
                     f"the change:\n    {this_python()} --update {name} && git diff expected_outputs\n"
                     f"  If you did not, the lines above show what this run computed differently.")
    parts = [explain_difference(expected, result.stdout, name, root, expected_checks, result.records)]
    if not same_checks:
        parts.append(unified_diff(expected_checks or "", made, name, kind="checks").rstrip())
    what = "output differs from its golden file" if not same_output else "its checks differ from its golden checks"
    if disagreed(result):  # (the reasons above name each such check; the diff shows its lines)
        head = f"DISAGREES {name}: a claim of the page does not hold in this run (exit status {result.returncode})"
    else:
        head = f"DIFF {name}: {what}"
    return (f"{head} (actual kept in {kept.relative_to(root).as_posix()})\n"
            + "\n".join(part for part in parts if part) + "\n" + what_next)


def disagreed(result):
    """A run that ended by itself, with nothing on stderr, after recording a check that does
    not uphold the page: a lesson that exits 1 because a claim disagrees (week1/06's worked
    examples, say), not a crash (which leaves its traceback on stderr)."""
    return (result.returncode not in (0, None) and not result.stderr
            and any(r["outcome"] == CONTRADICTS for r in result.records))



class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line, as in the lessons, not argparse's usage block first."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help lists the flags)\n")


def main(argv=None, root=ROOT, out=sys.stdout):
    parser = OneLineParser(
        prog="run_all.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the lesson scripts and diff their output against the golden files in expected_outputs/.",
        epilog="Try:\n" + "\n".join(f"  {this_python()} {example}" for example in
                                       ("-k week1", "week2/03_sinusoidal_pe", "--list")))
    parser.add_argument("names", nargs="*", help="scripts to run, e.g. week1/02_dot_product_variance, "
                        "week1/02_dot_product_variance.py or 02_dot_product_variance")
    parser.add_argument("-k", dest="pattern", help="run only scripts whose name contains this text (any case)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    parser.add_argument("--update", action="store_true",
                        help="write each script's output and checks as its golden files (review with git diff); "
                        "refused for a run that disagrees with itself or with the page")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new interpreter per script instead of forking a warm one")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per script (120)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="scripts run at once (default: the number of CPUs)")
    args = parser.parse_args(argv)
    args.out = out
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs and --timeout must be positive")
    scripts = discover(root)
    chosen = choose(parser, args.names, args.pattern, scripts, root)
    if args.list:
        for name in chosen:
            print(name, file=out)
        return 0
    if missing := missing_packages():
        parser.error(f"this Python ({sys.executable}) has no {', '.join(missing)}: set up the lessons' "
                     "environment with `make check` (no make? see the README), or run this with .venv's python")

    started = time.monotonic()
    order = slowest_first(chosen, scripts, root)
    failed = []

    def report(name, result):
        problem = judge(name, result, scripts[name], args, root)
        if problem:
            failed.append(name)
            print(problem, file=out, flush=True)
        elif not args.update:
            print(f"ok    {name}  ({result.seconds:.1f} s)", file=out, flush=True)

    # The check reports each script as soon as it ends; --update writes nothing until every
    # script has ended, so that a Ctrl-C leaves every golden file as it was.
    try:
        results = run_scripts([(scripts[n], []) for n in order], args.timeout, args.jobs, args.fresh, root,
                              on_result=None if args.update else lambda i, result: report(order[i], result))
    except KeyboardInterrupt:  # Ctrl-C: run_scripts has stopped every script
        print("stopped", file=sys.stderr)
        return 130
    if args.update:
        for name, result in zip(order, results, strict=True):
            report(name, result)
    record_seconds(zip(order, results, strict=True), root)
    print(f"wall time {time.monotonic() - started:.1f} s", file=out)
    if failed:
        print(f"failed: {', '.join(sorted(failed))}", file=out)
    print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed", file=out)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before the scripts started (a Ctrl-C while the flags were read)
        print("stopped", file=sys.stderr)
        sys.exit(130)
