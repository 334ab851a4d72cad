"""Running lessons as the check runs them: each in a process of its own, in a scratch folder,
with a fixed environment and a timeout, its stdout and stderr kept whole.

Importing torch is most of a lesson's run time, so the processes are forked from
multiprocessing's forkserver, which imports numpy, torch and matplotlib once (its preload);
each child then behaves as `python lesson.py` does. A job with a `setting` (environment that
torch, NumPy or MKL read once, when imported: kernel choices, thread counts) runs in a runner
of its own, `python -m check.running`, started under that setting. Where the OS cannot fork
(Windows), and for a `fresh` job, the lesson runs in a new interpreter, exactly as a learner's.
"""
import dataclasses
import json
import multiprocessing
import os
import queue
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import OUTPUT_ROOT
from common.records import CLOSE, OPEN, RECORDS

from check.comparing import compared, split_records

ROOT = Path(__file__).resolve().parents[1]
# OMP_WAIT_POLICY=PASSIVE: torch's threads sleep while they wait instead of spinning, so lessons
# run side by side do not burn each other's CPU; it changes no printed number.
FIXED_ENV = {"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1",
             "OMP_WAIT_POLICY": "PASSIVE"}
PRELOAD = ["numpy", "torch", "torch._dynamo", "matplotlib.pyplot"]  # (torch._dynamo: torch.optim imports it)
FORK = "forkserver" in multiprocessing.get_all_start_methods()


@dataclass
class Job:
    """One run of a lesson: `python path *argv` in `cwd` (default: the check's folder), with `env`
    on top of the fixed environment (a name given as None is removed)."""
    path: Path
    argv: tuple = ()
    env: dict = field(default_factory=dict)
    setting: dict = field(default_factory=dict)
    fresh: bool = False
    cwd: Path | None = None
    timeout: float | None = None  # seconds; None: run_scripts' own


@dataclass
class Result:
    returncode: int | None  # None: killed at its timeout
    stdout: str  # what a learner's run prints
    stderr: str
    seconds: float
    records: list = field(default_factory=list)  # the checks it recorded (common/records.py)
    marked: str = ""  # stdout as the check reads it: each measured number between OPEN and CLOSE
    cpu: float | None = None  # CPU seconds the lesson used (a forked run's own count)

    def compared(self):
        """(stdout as the check compares it, problems): check.comparing.compared()."""
        return compared(self.marked, self.records)


def check_folder(root=ROOT):
    """build/check/: every lesson runs there, and a default run saves its figure there."""
    return root / "build" / "check"


def with_changes(base, changes):
    """base with changes applied; a name whose value is None is removed."""
    return {**{k: v for k, v in base.items() if changes.get(k, "") is not None},
            **{k: v for k, v in changes.items() if v is not None}}


def lesson_process(path, argv, out, err, cwd, env):
    """A forked child: behave as `python path *argv` started in cwd with env. It ends with the
    check: a child the check no longer waits for (stopped while the server was starting) ends."""
    check = multiprocessing.parent_process()
    threading.Thread(target=lambda: (check.join(), os._exit(1)), daemon=True).start()
    os.environ.clear()
    os.environ.update(env)
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, file in ((1, out), (2, err)):
            os.dup2(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    except OSError:  # its scratch folder is gone: the check has ended
        os._exit(1)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    os.chdir(cwd)
    for module in [m for m in sys.modules if m == "common" or m.startswith("common.")]:
        del sys.modules[module]  # the lesson imports its own repository's `common`
    sys.argv = [str(path), *argv]
    sys.path[:] = [str(Path(path).parent)] + [p for p in sys.path if p not in ("", str(ROOT))]
    code = 0
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as end:  # as the interpreter treats sys.exit(code)
        if end.code is None or isinstance(end.code, int):
            code = end.code or 0
        else:
            print(end.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    times = os.times()
    Path(f"{out}.cpu").write_text(f"{times.user + times.system:.3f}")
    os._exit(code)


_start = threading.Lock()


def forked(*args):
    """A started multiprocessing Process that runs lesson_process(*args), from the forkserver. The
    server is started the first time, with the fixed environment and Ctrl-C ignored (the check
    stops the children itself); this process's own environment is left as it was."""
    import multiprocessing.forkserver  # (POSIX only: FORK says whether it is here)
    import multiprocessing.resource_tracker

    context = multiprocessing.get_context("forkserver")
    with _start:
        saved, main = dict(os.environ), threading.current_thread() is threading.main_thread()
        if main:  # a Ctrl-C meanwhile is held, not lost: heard once the check's own handler is back
            multiprocessing.resource_tracker.ensure_running()  # (its own start unblocks SIGINT: first)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # (inherited by the server)
        try:
            os.environ.update(FIXED_ENV)
            context.set_forkserver_preload(PRELOAD)
            multiprocessing.forkserver.ensure_running()  # (it imports PRELOAD while the lessons wait)
        finally:
            os.environ.clear()
            os.environ.update(saved)
            if main:
                signal.signal(signal.SIGINT, previous)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    process = context.Process(target=lesson_process, args=args, daemon=True)
    process.start()
    return process


class Runs:
    """The lessons running here, in a scratch folder: start(i, job), then ended() now and then,
    which kills those over their time; stop() kills every one still running."""

    def __init__(self, scratch, cwd, timeout, fresh=False):
        self.scratch, self.cwd, self.timeout, self.fresh, self.running = scratch, cwd, timeout, fresh, {}

    def start(self, i, job):
        out, err = (os.path.join(self.scratch, f"{i}.{part}") for part in ("out", "err"))
        env = with_changes({**os.environ, **FIXED_ENV, **job.setting},
                           {OUTPUT_ROOT: str(self.cwd), RECORDS: "1", **job.env})
        where = job.cwd or self.cwd
        if FORK and not (self.fresh or job.fresh):
            process = forked(str(job.path), list(job.argv), out, err, str(where), env)
        else:
            with open(out, "wb") as o, open(err, "wb") as e:
                process = subprocess.Popen([sys.executable, str(job.path), *job.argv], cwd=where, stdout=o, stderr=e,
                                           stdin=subprocess.DEVNULL, env=env)
        self.running[i] = (process, time.monotonic(), out, err, job.timeout or self.timeout)

    def ended(self):
        """[(i, Result)] of the runs that have ended since (killed at their timeout: returncode None)."""
        done, now = [], time.monotonic()
        for i, (process, began, out, err, timeout) in list(self.running.items()):
            code = process.exitcode if hasattr(process, "exitcode") else process.poll()
            killed = code is None and now - began > timeout
            if killed:
                process.kill()
                (process.join if hasattr(process, "join") else process.wait)()
            elif code is None:
                continue
            del self.running[i]
            text, records = split_records(_read(out))
            cpu = _read(f"{out}.cpu")
            done.append((i, Result(None if killed else code, text.replace(OPEN, "").replace(CLOSE, ""), _read(err),
                                   time.monotonic() - began, records, text, float(cpu) if cpu else None)))
        return done

    def stop(self):
        for process, *_ in self.running.values():
            process.kill()


class Elsewhere:
    """The runner, `python -m check.running`, of the jobs with one setting: started under it,
    handed each job as a JSON line when the check has a place for it, it answers with a JSON line
    per result as each ends."""

    def __init__(self, setting, timeout, cwd, events):
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None  # (inherited: the check stops it)
        try:
            self.process = subprocess.Popen([sys.executable, "-m", "check.running", str(timeout), str(cwd)],
                                            cwd=ROOT, text=True,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            env={**os.environ, **FIXED_ENV, **setting})
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        self.waiting = set()
        self.listener = threading.Thread(target=self.listen, args=(events,), daemon=True)
        self.listener.start()

    def start(self, i, job):
        self.waiting.add(i)
        job = {**dataclasses.asdict(job), "path": str(job.path), "cwd": job.cwd and str(job.cwd), "setting": {}}
        self.process.stdin.write(json.dumps({"index": i, **job}) + "\n")
        self.process.stdin.flush()

    def listen(self, events):
        """Each result as it comes, put before its job leaves `waiting` (so the check, which ends
        once nothing is waiting and no result is queued, never ends between the two)."""
        for line in self.process.stdout:
            answer = json.loads(line)
            i = answer.pop("index")
            events.put((i, Result(**answer)))
            self.waiting.discard(i)
        for i in sorted(self.waiting):  # it ended before these did (stopped, or failed): they cannot end now
            events.put((i, Result(-1, "", f"the runner under this setting ended (status {self.process.wait()})\n", 0)))
            self.waiting.discard(i)

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.listener.join()
        self.process.stdin.close()
        self.process.stdout.close()


def run_scripts(jobs, timeout=120.0, workers=None, fresh=False, root=ROOT, on_result=None, halt=None):
    """Run jobs (Job, or (path, argv) pairs), up to `workers` at once (those under a setting
    too), in the order given; return a Result per job, in that order (None for one not run).
    on_result(i, result), if given, hears of each as it ends; halt: a threading.Event that stops
    the runs still going once set. Any exception (Ctrl-C) stops every run before it is passed on."""
    jobs = [job if isinstance(job, Job) else Job(Path(job[0]), tuple(job[1])) for job in jobs]
    cwd = check_folder(root)
    cwd.mkdir(parents=True, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    results, pending, elsewhere, events = [None] * len(jobs), list(enumerate(jobs)), {}, queue.Queue()
    with tempfile.TemporaryDirectory(prefix="run_all_") as scratch:
        here = Runs(scratch, cwd, timeout, fresh)
        try:
            while pending or here.running or any(runner.waiting for runner in elsewhere.values()) or not events.empty():
                if halt is not None and halt.is_set():
                    break
                while pending and len(here.running) + sum(len(r.waiting) for r in elsewhere.values()) < workers:
                    i, job = pending.pop(0)
                    if job.setting and not (fresh or job.fresh) and FORK:
                        key = tuple(sorted(job.setting.items()))
                        if key not in elsewhere:
                            elsewhere[key] = Elsewhere(job.setting, timeout, cwd, events)
                        elsewhere[key].start(i, job)
                    else:
                        here.start(i, job)
                ended = here.ended()
                try:
                    ended.append(events.get(timeout=0.02))
                except queue.Empty:
                    pass
                for i, result in ended:
                    results[i] = result
                    if on_result:
                        on_result(i, result)
        finally:
            here.stop()
            for runner in elsewhere.values():
                runner.stop()
    return results


def _read(file):
    try:
        return Path(file).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:  # a run that never started
        return ""


def serve(timeout, cwd):
    """`python -m check.running TIMEOUT FOLDER`: run each job read as a JSON line from stdin at once,
    under this process's own setting, and write a JSON line per result as each ends; end when
    stdin closes and every run has ended."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # (the runs are stopped on the way out)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in sys.stdin] + [lines.put(None)], daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="run_all_") as scratch:
        here, reading = Runs(scratch, Path(cwd), timeout), True
        try:
            while reading or here.running:
                try:
                    line = lines.get(timeout=0.02)
                except queue.Empty:
                    line = ""
                if line is None:
                    reading = False
                elif line:
                    job = json.loads(line)
                    here.start(job.pop("index"), Job(**{**job, "path": Path(job["path"]), "argv": tuple(job["argv"]),
                                                        "cwd": job["cwd"] and Path(job["cwd"])}))
                for i, result in here.ended():
                    print(json.dumps({"index": i, **dataclasses.asdict(result)}), flush=True)
        finally:
            here.stop()


if __name__ == "__main__":
    serve(float(sys.argv[1]), sys.argv[2])
