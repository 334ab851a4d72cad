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
import argparse
import difflib
import importlib.util
import json
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
from pathlib import Path

from common import OUTPUT_ROOT
from common.cli import shown

ROOT = Path(__file__).resolve().parent
NOISE_CEILING = 1e-6
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


def timings_path(root=ROOT):
    return root / "build" / "script_seconds.json"


# ---------------------------------------------------------------- comparing outputs

def noise_value(line):
    """(text before the number, the number as printed) for a noise line, else None."""
    match = NOISE_LINE.match(line)
    return (match.group(1), match.group(2)) if match else None


def lines_match(expected, actual):
    """Equal lines; for two noise lines, the same text and format, both values <= NOISE_CEILING."""
    e, a = noise_value(expected), noise_value(actual)
    if e and a:
        same_form = e[0] == a[0] and len(e[1]) == len(a[1])
        return same_form and float(e[1]) <= NOISE_CEILING and float(a[1]) <= NOISE_CEILING
    return expected == actual


def outputs_match(expected_text, actual_text):
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    return len(expected) == len(actual) and all(map(lines_match, expected, actual))


def noise_over_ceiling(text):
    """[(line number, label, value)] for each noise line in text above NOISE_CEILING."""
    return [(n, found[0].removesuffix("="), found[1]) for n, line in enumerate(text.splitlines(), 1)
            if (found := noise_value(line)) and float(found[1]) > NOISE_CEILING]


def explain_difference(expected_text, actual_text, name):
    """What a learner should read when a script's output does not match its golden file."""
    parts = [f"  line {n}: {label} should be float32 rounding noise (at most {NOISE_CEILING:g}) "
             f"but is {value}: the two computations disagree, so the formula is wrong"
             for n, label, value in noise_over_ceiling(actual_text)]
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    only_noise = len(expected) == len(actual) and all(
        lines_match(e, a) or (noise_value(e) and noise_value(a) and noise_value(e)[0] == noise_value(a)[0])
        for e, a in zip(expected, actual, strict=True))
    if not only_noise:
        parts.append(unified_diff(expected_text, actual_text, name).rstrip())
    return "\n".join(parts)


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


def check_folder(root=ROOT):
    """The check's working folder, build/check/: every script runs there, and a default run
    writes its figure there (at the same relative place as in the repo) instead of over
    the committed copy."""
    return root / "build" / "check"


def run_scripts(jobs, timeout=120.0, workers=None, fresh=False, root=ROOT):
    """Run jobs [(path, argv), ...], up to `workers` at once; return a Result per job, in order."""
    cwd = check_folder(root)
    cwd.mkdir(parents=True, exist_ok=True)
    # read by the fork server and by fresh interpreters alike
    os.environ.update({**FIXED_ENV, OUTPUT_ROOT: str(cwd)})
    workers = workers or os.cpu_count() or 1
    fresh = fresh or "forkserver" not in multiprocessing.get_all_start_methods()  # Windows: no fork
    if not fresh:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
    results = [None] * len(jobs)
    with tempfile.TemporaryDirectory(prefix="run_all_") as scratch:
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


def select(parser, names, pattern, scripts, root=ROOT):
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


def main(argv=None, root=ROOT, out=sys.stdout):
    parser = argparse.ArgumentParser(
        prog="run_all.py", description="Run the lesson scripts and diff their output "
        "against the golden files in expected_outputs/.",
        epilog=f"Try: {this_python()} -k week1   |   {this_python()} week2/03_sinusoidal_pe   |   "
        f"{this_python()} --list")
    parser.add_argument("names", nargs="*", help="scripts to run, e.g. week1/02_dot_product_variance, "
                        "week1/02_dot_product_variance.py or 02_dot_product_variance")
    parser.add_argument("-k", dest="pattern", help="run only scripts whose name contains this text (any case)")
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
    chosen = select(parser, args.names, args.pattern, scripts, root)
    if args.list:
        for name in chosen:
            print(name, file=out)
        return 0
    if missing := missing_packages():
        parser.error(f"this Python ({sys.executable}) has no {', '.join(missing)}: set up the lessons' "
                     "environment with `make check` (no make? see the README), or run this with .venv's python")

    started = time.monotonic()
    order = slowest_first(chosen, scripts, root)
    finished = dict(zip(order, run_scripts([(scripts[n], []) for n in order], args.timeout, args.jobs,
                                           args.fresh, root), strict=True))
    record_seconds(finished.items(), root)
    passed = failed = 0
    for name in chosen:
        r = finished[name]
        problem = None
        golden, kept = golden_path(name, root), actual_path(name, root)
        if r.returncode is None:
            problem = (f"TIMEOUT {name}: still running after {args.timeout:g} s, killed\n"
                       f"  What next: run it alone to see where it stops: {shown(sys.executable, ROOT)} "
                       f"{shown(scripts[name], ROOT)}; on a slow machine, give it longer: --timeout SECONDS")
        elif r.returncode != 0:
            tail = "\n".join("    " + line for line in r.stderr.rstrip().splitlines()[-8:])
            problem = f"CRASH {name}: exit status {r.returncode}\n{tail}"
        elif args.update and noise_over_ceiling(r.stdout):
            problem = (f"NOT UPDATED {name}: a noise line is above {NOISE_CEILING:g}, so the script "
                       f"is wrong, not its golden file\n" + explain_difference(r.stdout, r.stdout, name))
        elif args.update:
            golden.parent.mkdir(parents=True, exist_ok=True)
            changed = not golden.exists() or golden.read_text(encoding="utf-8") != r.stdout
            golden.write_text(r.stdout, encoding="utf-8")
            print(f"{'updated' if changed else 'unchanged'} {golden.relative_to(root).as_posix()}", file=out)
        elif not golden.exists():
            problem = (f"NO GOLDEN FILE {name}: {golden.relative_to(root).as_posix()} is missing; "
                       f"create it with: {this_python()} --update {name}")
        elif not outputs_match(golden.read_text(encoding="utf-8"), r.stdout):
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(r.stdout, encoding="utf-8")
            explanation = explain_difference(golden.read_text(encoding="utf-8"), r.stdout, name)
            problem = (f"DIFF {name}: output differs from its golden file "
                       f"(actual kept in {kept.relative_to(root).as_posix()})\n{explanation}\n"
                       f"  What next: if you changed {name}.py on purpose, rewrite its golden file and "
                       f"review the change:\n    {this_python()} --update {name} && git diff expected_outputs\n"
                       f"  If you did not, the lines above show what this run computed differently.")
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
