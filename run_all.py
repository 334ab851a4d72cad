#!/usr/bin/env python3
"""Run every lesson script and compare what it prints with its golden file.

    python run_all.py                        # every week*/NN_*.py against expected_outputs/
    python run_all.py -k week2               # only names containing "week2"
    python run_all.py week1/02_dot_product_variance
    python run_all.py --list
    python run_all.py --update week2/06_warmup_schedule   # rewrite golden files from a run

Each script runs in a process of its own, in a scratch working directory, with a fixed
environment (MPLBACKEND=Agg, PYTHONHASHSEED=0, UTF-8 I/O) and a timeout. By default the
processes are forked from a server that has already imported numpy, torch and matplotlib
(importing torch is most of a script's run time); --fresh starts a new interpreter per
script instead, exactly as `python week1/01_attention_from_scratch.py` does.

Comparison is exact, line by line, with one documented exception: a line of the form
`max |A - B|=<number>` reports float rounding noise, which can move by a unit or two in
the last place on another CPU or torch build. Its number may differ from the golden one
by up to NOISE_UNITS units in the last printed decimal; the rest of the line must match.

Exit status: 0 when every selected script passed, 1 when any failed, 2 on a usage error.
"""
import argparse
import difflib
import multiprocessing
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NOISE_UNITS = 5
NOISE_LINE = re.compile(r"^(max \|.+\|=)(\d+\.(\d+))$")
FIXED_ENV = {"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8",
             "PYTHONUTF8": "1"}
PRELOAD = ["numpy", "torch", "matplotlib.pyplot"]


# ---------------------------------------------------------------- finding scripts

def discover(root=ROOT):
    """{name: path} for every week*/NN_*.py, name like 'week1/02_dot_product_variance'."""
    paths = sorted(root.glob("week*/[0-9][0-9]_*.py"))
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in paths}


def golden_path(name, root=ROOT):
    return root / "expected_outputs" / f"{name}.txt"


def actual_path(name, root=ROOT):
    return root / "build" / "actual" / f"{name}.txt"


# ---------------------------------------------------------------- comparing outputs

def lines_match(expected, actual):
    """Exact equality, or two noise lines whose values differ by <= NOISE_UNITS last-place units."""
    if expected == actual:
        return True
    e, a = NOISE_LINE.match(expected), NOISE_LINE.match(actual)
    if not (e and a and e.group(1) == a.group(1) and len(e.group(3)) == len(a.group(3))):
        return False
    unit = Decimal(1).scaleb(-len(e.group(3)))
    return abs(Decimal(e.group(2)) - Decimal(a.group(2))) <= NOISE_UNITS * unit


def outputs_match(expected_text, actual_text):
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    return len(expected) == len(actual) and all(map(lines_match, expected, actual))


def unified_diff(expected_text, actual_text, name):
    return "".join(difflib.unified_diff(
        expected_text.splitlines(keepends=True), actual_text.splitlines(keepends=True),
        fromfile=f"expected_outputs/{name}.txt", tofile=f"actual {name}"))


# ---------------------------------------------------------------- running scripts

@dataclass
class Result:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float


def _run_forked(path, argv, out_file, err_file, cwd):
    """Child of the fork server: behave like `python path *argv` started in cwd."""
    for fd, file in ((1, out_file), (2, err_file)):
        os.dup2(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    os.chdir(cwd)
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


def _read(file):
    return Path(file).read_text(encoding="utf-8", errors="replace")


def run_scripts(jobs, timeout=120.0, workers=None, fresh=False):
    """Run jobs [(path, argv), ...], up to `workers` at once; return a Result per job, in order."""
    os.environ.update(FIXED_ENV)  # read by the fork server and by fresh interpreters alike
    workers = workers or os.cpu_count() or 1
    if not fresh:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
    results = [None] * len(jobs)
    with tempfile.TemporaryDirectory(prefix="run_all_") as scratch:
        cwd = os.path.join(scratch, "cwd")
        os.mkdir(cwd)
        pending, running = list(enumerate(jobs)), {}
        while pending or running:
            while pending and len(running) < workers:
                i, (path, argv) = pending.pop(0)
                out, err = (os.path.join(scratch, f"{i}.{s}") for s in ("out", "err"))
                if fresh:
                    with open(out, "wb") as o, open(err, "wb") as e:
                        proc = subprocess.Popen([sys.executable, str(path), *argv], cwd=cwd,
                                                stdout=o, stderr=e)
                else:
                    proc = context.Process(target=_run_forked, args=(Path(path), argv, out, err, cwd))
                    proc.start()
                running[i] = (proc, time.monotonic(), out, err)
            time.sleep(0.01)
            for i, (proc, start, out, err) in list(running.items()):
                code = proc.poll() if fresh else proc.exitcode
                seconds = time.monotonic() - start
                if code is None and seconds < timeout:
                    continue
                if code is None:
                    proc.kill()
                    proc.wait() if fresh else proc.join()
                del running[i]
                results[i] = Result(code, _read(out), _read(err), seconds)
    return results


# ---------------------------------------------------------------- the command line

def select(parser, names, pattern, scripts):
    chosen = []
    for raw in names:
        name = raw.removesuffix(".py").replace(os.sep, "/").strip("/")
        if name not in scripts:
            parser.error(f"unknown script {raw!r} (python run_all.py --list shows the names)")
        chosen.append(name)
    chosen = chosen or list(scripts)
    if pattern:
        chosen = [n for n in chosen if pattern in n]
        if not chosen:
            parser.error(f"no script name contains {pattern!r}")
    return chosen


def main(argv=None, root=ROOT, out=sys.stdout):
    parser = argparse.ArgumentParser(
        prog="run_all.py", description="Run the lesson scripts and diff their output "
        "against the golden files in expected_outputs/.",
        epilog="Try: python run_all.py -k week1   |   python run_all.py --list")
    parser.add_argument("names", nargs="*", help="scripts to run, e.g. week1/02_dot_product_variance")
    parser.add_argument("-k", dest="pattern", help="run only scripts whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    parser.add_argument("--update", action="store_true",
                        help="write each script's output as its golden file (review with git diff)")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new interpreter per script instead of forking a warm one")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per script (120)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="scripts run at once (default: the number of CPUs)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs and --timeout must be positive")
    scripts = discover(root)
    chosen = select(parser, args.names, args.pattern, scripts)
    if args.list:
        for name in chosen:
            print(name, file=out)
        return 0

    started = time.monotonic()
    results = run_scripts([(scripts[n], []) for n in chosen], args.timeout, args.jobs, args.fresh)
    passed = failed = 0
    for name, r in zip(chosen, results, strict=True):
        problem = None
        golden, kept = golden_path(name, root), actual_path(name, root)
        if r.returncode is None:
            problem = f"TIMEOUT {name}: still running after {args.timeout:g} s, killed"
        elif r.returncode != 0:
            tail = "\n".join("    " + line for line in r.stderr.rstrip().splitlines()[-8:])
            problem = f"CRASH {name}: exit status {r.returncode}\n{tail}"
        elif args.update:
            golden.parent.mkdir(parents=True, exist_ok=True)
            changed = not golden.exists() or golden.read_text(encoding="utf-8") != r.stdout
            golden.write_text(r.stdout, encoding="utf-8")
            print(f"{'updated' if changed else 'unchanged'} {golden.relative_to(root)}", file=out)
        elif not golden.exists():
            problem = (f"NO GOLDEN FILE {name}: {golden.relative_to(root)} is missing; "
                       f"create it with: python run_all.py --update {name}")
        elif not outputs_match(golden.read_text(encoding="utf-8"), r.stdout):
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(r.stdout, encoding="utf-8")
            diff = unified_diff(golden.read_text(encoding="utf-8"), r.stdout, name)
            problem = (f"DIFF {name}: output differs from its golden file "
                       f"(actual kept in {kept.relative_to(root)})\n{diff.rstrip()}")
        if problem:
            failed += 1
            print(problem, file=out)
        else:
            passed += 1
            kept.unlink(missing_ok=True)
            if not args.update:
                print(f"ok    {name}  ({r.seconds:.1f} s)", file=out)
    print(f"wall time {time.monotonic() - started:.1f} s", file=out)
    print(f"{passed} passed, {failed} failed", file=out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
