#!/usr/bin/env python3
"""Run every lesson and compare what it prints with its golden files (make check).

    python run_all.py                        # every week*/NN_*.py against expected_outputs/
    python run_all.py -k week2               # only names containing "week2"
    python run_all.py week1/02_dot_product_variance
    python run_all.py --list
    python run_all.py --update week2/06_warmup_schedule   # rewrite golden files from a run

How each lesson runs: check/running.py. What is compared, and what is judged instead (rounding
noise, a training's own numbers): check/comparing.py. What --update writes, and what it
refuses: judge(), below. Exit status: 0 when every lesson passed, 1 when any failed, 2 on a
usage error.
"""
# isort: off
import common  # noqa: F401  (first: from here on a Ctrl-C ends with the one word "stopped")
# isort: on
import argparse
import difflib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

from common import shown

from check.comparing import (  # noqa: F401
    CONTRADICTS,
    checks_path,
    checks_text,
    golden_path,
    kept_noise,
    noise_value,
    outputs_match,
    parse_checks,
    refusals,
    unified_diff,
)
from check.running import FIXED_ENV, ROOT, Job, Result, check_folder, run_scripts  # noqa: F401


def discover(root=ROOT):
    """{name: path} for every week*/NN_*.py, name like 'week1/02_dot_product_variance'."""
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.glob("week*/[0-9][0-9]_*.py"))}


def this_python():
    """The command that runs run_all.py with this interpreter, from here."""
    return f"{shown(sys.executable, ROOT)} {shown(ROOT / 'run_all.py', ROOT)}"


def alone(path):
    """The command that runs one lesson by itself, from the current folder."""
    return f"{shown(sys.executable, ROOT)} {shown(path, ROOT)}"


def resolve(raw, scripts, root):
    """A lesson's name as a shell gives it: week2/03_sinusoidal_pe, ./week2/03_sinusoidal_pe.py, an
    absolute path, a bare 03_sinusoidal_pe when one week has it, or week2/03 for short. None if
    unknown; a list of the candidates if it names several."""
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
        found = [name for name in scripts if name.split("/")[-1] == guess or (
            guess.endswith("_") and any((part + "_").startswith(guess) for part in (name, name.split("/")[-1])))]
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
            close = difflib.get_close_matches(raw.removesuffix(".py").strip("./"), scripts, n=1, cutoff=0.5) or \
                difflib.get_close_matches(raw.removesuffix(".py").split("/")[-1],
                                          [n.split("/")[-1] for n in scripts], n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}? " if close else ""
            parser.error(f"unknown script {raw!r}; {hint}--list shows the names")
        chosen.append(name)
    chosen = chosen or list(scripts)
    if pattern:
        chosen = [n for n in chosen if pattern.lower() in n.lower()]
        if not chosen:
            parser.error(f"no script name contains {pattern!r}; --list shows the names")
    return chosen


def timings_path(root=ROOT):
    return root / "build" / "script_seconds.json"


def slowest_first(names, scripts, root):
    """The slowest lessons last time first (build/script_seconds.json), so the check's wall time
    stays near its slowest lesson's; on a fresh clone, the longest sources (the trainings) first."""
    try:
        seconds = json.loads(timings_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seconds = {}
    return sorted(names, key=lambda n: (n in seconds, -seconds.get(n, 0), -scripts[n].stat().st_size))


def write_atomically(path, text):
    """path holds text, all or nothing: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def disagreed(result):
    """A run that ended by itself with nothing on stderr, after recording a check that does not
    uphold the page: a lesson that exits 1 because a claim disagrees, not a crash."""
    return result.returncode not in (0, None) and not result.stderr and any(
        r["outcome"] == CONTRADICTS for r in result.records)


def judge(name, result, path, args, root):
    """What went wrong with one lesson's run, in words with a "What next", or None if it passed.
    With --update, a run that may become the golden files is written as them here."""
    golden, checks = golden_path(name, root), checks_path(name, root)
    expected = golden.read_text(encoding="utf-8") if golden.exists() else None
    expected_checks = checks.read_text(encoding="utf-8") if checks.exists() else None
    if result.returncode is None:
        return (f"TIMEOUT {name}: still running after {args.timeout:g} s, killed\n  What next: run it alone to see "
                f"where it stops: {alone(path)}; on a slow machine, give it longer: --timeout SECONDS")
    if result.returncode != 0 and not disagreed(result):
        lines = result.stderr.rstrip().splitlines()
        error = lines[-1].strip() if lines else f"exit status {result.returncode}, nothing on stderr"
        return (f"CRASH {name}: exit status {result.returncode}\n" + "\n".join("    " + line for line in lines[-8:])
                + f"\n  What next: the script stopped with an error before it finished ({error}). Run it alone to "
                f"see the whole traceback: {alone(path)}")
    reasons = refusals(name, result, expected_checks, root)
    if args.update and reasons:
        return (f"NOT UPDATED {name}: this run disagrees with itself or with the page, so the script is wrong, "
                f"not its golden file\n" + "\n".join("  " + reason for reason in reasons))
    made, text = checks_text(result.records), result.compared()[0]
    if args.update:
        write_atomically(golden, kept_noise(expected, text))
        write_atomically(checks, made) if made else checks.unlink(missing_ok=True)
        same = expected == text and (expected_checks or "") == made
        written = golden.relative_to(root).as_posix() + (f" and {checks.name}" if made else "")
        print(f"{'unchanged' if same else 'updated'} {written}", file=args.out)
        return None
    if expected is None:
        return (f"NO GOLDEN FILE {name}: {golden.relative_to(root).as_posix()} is missing; "
                f"create it with: {this_python()} --update {name}")
    kept = root / "build" / "actual" / f"{name}.txt"
    same_output, same_checks = outputs_match(expected, text), (expected_checks or "") == made
    if same_output and same_checks and not result.stderr:
        kept.unlink(missing_ok=True)
        return None
    write_atomically(kept, text)
    parts = ["  " + reason for reason in reasons]
    only_noise = len(expected.splitlines()) == len(text.splitlines()) and all(
        (noise_value(e) or [e])[0] == (noise_value(a) or [a])[0] for e, a in zip(expected.splitlines(),
                                                                                text.splitlines(), strict=True))
    if not same_output and not only_noise:
        parts.append(unified_diff(expected, text, name).rstrip())
    if not same_checks:
        parts.append(unified_diff(expected_checks or "", made, name, kind="checks").rstrip())
    if reasons:
        what_next = (f"  What next: the lesson now disagrees with itself or with the page (the lines above say "
                     f"where), so --update would refuse it. If you edited {name}.py, your edit changed what "
                     f"it computes: `git diff` shows the edit, and `git checkout -- {name}.py` undoes it.")
    else:
        what_next = (f"  What next: if you changed {name}.py on purpose, rewrite its golden files and review "
                     f"the change:\n    {this_python()} --update {name} && git diff expected_outputs\n"
                     f"  If you did not, the lines above show what this run computed differently.")
    if disagreed(result):
        head = f"DISAGREES {name}: a claim of the page does not hold in this run (exit status {result.returncode})"
    elif same_output and same_checks:
        head = f"STDERR {name}: the same output, and a warning"
    else:
        head = f"DIFF {name}: " + ("its checks differ from its golden checks" if same_output else
                                   "output differs from its golden file")
    return f"{head} (actual kept in {kept.relative_to(root).as_posix()})\n" + "\n".join(parts) + "\n" + what_next


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line, as in the lessons."""

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
        print("\n".join(chosen), file=out)
        return 0
    if missing := [name for name in ("numpy", "torch", "matplotlib") if importlib.util.find_spec(name) is None]:
        parser.error(f"this Python ({sys.executable}) has no {', '.join(missing)}: set up the lessons' "
                     "environment with `make check` (no make? see the README), or run this with .venv's python")
    started, order, failed = time.monotonic(), slowest_first(chosen, scripts, root), []

    def report(name, result):
        problem = judge(name, result, scripts[name], args, root)
        if problem:
            failed.append(name)
            print(problem, file=out, flush=True)
        elif not args.update:
            print(f"ok    {name}  ({result.seconds:.1f} s)", file=out, flush=True)

    # Each lesson is reported as it ends; --update writes nothing until every lesson has ended,
    # so that a Ctrl-C leaves every golden file as it was.
    try:
        results = run_scripts([(scripts[n], []) for n in order], args.timeout, args.jobs, args.fresh, root,
                              on_result=None if args.update else lambda i, result: report(order[i], result))
    except KeyboardInterrupt:  # Ctrl-C: run_scripts has stopped every lesson
        print("stopped", file=sys.stderr)
        return 130
    if args.update:
        for name, result in zip(order, results, strict=True):
            report(name, result)
    seconds = {name: round(r.seconds, 2) for name, r in zip(order, results, strict=True) if r.returncode == 0}
    try:
        seconds = {**json.loads(timings_path(root).read_text(encoding="utf-8")), **seconds}
    except (OSError, ValueError):
        pass
    write_atomically(timings_path(root), json.dumps(seconds, indent=1, sort_keys=True))
    print(f"wall time {time.monotonic() - started:.1f} s", file=out)
    if failed:
        print(f"failed: {', '.join(sorted(failed))}", file=out)
    print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed", file=out)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before the lessons started (a Ctrl-C while the flags were read)
        print("stopped", file=sys.stderr)
        sys.exit(130)
