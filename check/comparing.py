"""Comparing a lesson's run with its golden files, and saying why a run must not become them.

Every printed line is compared exactly, with two exceptions:
  - rounding noise: a line `max |A - B|=<number>` says how far apart two computations of the
    same thing are (NumPy and torch, by hand and a torch module). Its number depends on the CPU's
    kernels, thread count and library versions, so it is judged: the text before `=` and the
    number of decimals must match, and the number, in the golden file and in the run, must be
    at most NOISE_CEILING. Across 30 environments such lines moved in whole float32 rounding
    steps (about 6e-8), never above 2.4e-7; real formula errors give far more (a dropped
    1/sqrt(d_k) or a wrong mask 0.05 to 2.8; the subtlest found, a LayerNorm eps of 1.1e-5
    instead of 1e-5, 1.8e-6). For some errors this line is the only one that changes.
  - a training's own numbers: a lesson prints each with common.records.measured(), which
    brackets it where the check reads the output; the comparison reads it as ‹this run's
    number›, and its record says how it is judged.
The records themselves are compared with the golden checks (`name | threshold | outcome`).
"""
import difflib
import importlib.util
import json
import re
from pathlib import Path

from common.records import CLOSE, CONTRADICTS, MARK, NOT_TESTED, OPEN, RETIRED

ROOT = Path(__file__).resolve().parents[1]
NOISE_CEILING = 1e-6
NOISE_LINE = re.compile(r"^(max \|.+\|=)(\S*)$")
THIS_RUN = "‹this run's number›"


def golden_path(name, root=ROOT):
    return root / "expected_outputs" / f"{name}.txt"


def checks_path(name, root=ROOT):
    return root / "expected_outputs" / f"{name}.checks.txt"


# ---------------------------------------------------------------- lines: exact, or noise

def noise_value(line):
    """(text up to '=', the value as printed) for a noise line, else None."""
    match = NOISE_LINE.match(line)
    return (match.group(1), match.group(2)) if match else None


def is_noise(value):
    """A printed noise value that is a plain decimal number at most NOISE_CEILING (not nan, inf, 1e-3)."""
    return re.fullmatch(r"\d+\.\d+", value) is not None and float(value) <= NOISE_CEILING


def lines_match(expected, actual):
    """Equal lines; for two noise lines, the same text and format, both values noise."""
    e, a = noise_value(expected), noise_value(actual)
    if e and a:
        return e[0] == a[0] and len(e[1]) == len(a[1]) and is_noise(e[1]) and is_noise(a[1])
    return expected == actual and not (e or a)


def outputs_match(expected_text, actual_text):
    expected, actual = expected_text.splitlines(), actual_text.splitlines()
    return len(expected) == len(actual) and all(map(lines_match, expected, actual))


def noise_over_ceiling(text):
    """[(line number, label, value)] for each noise line whose value is not noise."""
    return [(n, found[0].removesuffix("="), found[1]) for n, line in enumerate(text.splitlines(), 1)
            if (found := noise_value(line)) and not is_noise(found[1])]


# ---------------------------------------------------------------- what the pages quote

def printed_as_a_whole(token, text):
    """token (written without spaces, as the pages' tables quote it) stands in text as a whole
    value, spaces allowed between its characters: '[0,1,2,3]' matches '[0, 1, 2, 3]', but
    '0.0000' is not found inside '-0.0000' or '0.00001', nor '260' inside '1260'."""
    spaced = r"\s*".join(map(re.escape, token))
    return re.search(rf"(?<![\w.+-]){spaced}(?![\w.])", text) is not None


def page_quotes(root=ROOT):
    """(LINES, TOKENS) of tests/data/page_quotes.py: what the pages quote, per lesson."""
    path = root / "tests" / "data" / "page_quotes.py"
    if not path.exists():
        return {}, {}
    spec = importlib.util.spec_from_file_location("page_quotes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LINES, module.TOKENS


def quotes_missing(name, text, root=ROOT):
    """The page's quoted lines and values for lesson `name` that text no longer prints (a quoted
    noise value such as 0.00000011 is found by any noise line)."""
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


# ---------------------------------------------------------------- records and measured numbers

def split_records(raw):
    """A run's stdout as (the lines it printed, the records it made: each on a line of its own
    that starts with MARK)."""
    lines, records = [], []
    for line in raw.splitlines(keepends=True):
        if line.startswith(MARK):
            try:
                records.append(json.loads(line[1:]))
            except ValueError:  # a line cut short by a kill
                pass
        else:
            lines.append(line)
    return "".join(lines), records


def compared(text, records):
    """(text as the check compares it: each number bracketed by measured() read as THIS_RUN; the
    problems). The k-th bracketed number is the k-th measured record's own text. The spaces that
    pad a column beside one depend on how wide the run's number is, so they count as one."""
    shown, problems = iter([r for r in records if "shown" in r]), []

    def this_run(found):
        r = next(shown, None)
        if r is None or r["shown"] != found.group(1):
            problems.append(f"the number {found.group(1)!r} is printed where the check \"{r and r['name']}\" "
                            f"recorded {r and r['shown']!r}: print each measured() text where it is made")
        return THIS_RUN

    text = re.sub(f"{OPEN}(.*?){CLOSE}", this_run, text)
    problems += [f"the check \"{r['name']}\" measured {r['shown']!r}, which is never printed" for r in shown]
    return "".join(unpadded(line) if THIS_RUN in line else line for line in text.splitlines(keepends=True)), problems


def unpadded(line):
    line = re.sub(r" {2,}(?=‹)", " ", line)
    return re.sub(r"(›(?: \([^()\n]*\))?) {2,}", r"\1 ", line)


def checks_text(records):
    """A run's records as its golden checks: `name | threshold | outcome`, in the order made (the
    measured values are left out: a training's differ from CPU to CPU)."""
    return "".join(f"{r['name']} | {r.get('threshold') or '-'} | {r['outcome']}\n"
                   for r in records if r["outcome"] != RETIRED)


def parse_checks(text):
    """{name: (threshold, outcome)} of a golden checks file."""
    checks = {}
    for line in (text or "").splitlines():
        name, threshold, outcome = (part.strip() for part in line.rsplit(" | ", 2))
        checks[name] = (threshold, outcome)
    return checks


# ---------------------------------------------------------------- why a run must not become the golden files

def refusals(name, result, expected_checks=None, root=ROOT):
    """Why a run (a check.running.Result) must not become lesson `name`'s golden files, each in
    words naming its line or check: a noise line that is not noise, anything on stderr, a page
    quote no longer printed, a measured number out of place, a check that does not uphold the page, is no
    longer tested, changed its threshold, is made twice, or is gone without being retired."""
    reasons = [f"line {n}: {label} should be float rounding noise (at most {NOISE_CEILING:g}) but is {value}: "
               f"the two computations disagree, so the formula is wrong"
               for n, label, value in noise_over_ceiling(result.stdout)]
    if result.stderr:
        reasons.append("the run wrote to stderr, where a lesson writes nothing (a warning is a fault to mend, not "
                       "noise):\n" + "\n".join("    " + line for line in result.stderr.rstrip().splitlines()))
    reasons += [f"{quote} is no longer printed" for quote in quotes_missing(name, result.stdout, root)]
    reasons += result.compared()[1]
    made, golden = {}, parse_checks(expected_checks)
    where = checks_path(name, root).relative_to(root).as_posix()
    for r in result.records:
        if r["name"] in made:
            reasons.append(f"the check \"{r['name']}\" is recorded twice: each check needs a name of its own")
        made[r["name"]] = r
    for check, r in made.items():
        measured = "" if r.get("value") is None else f"measured {shown_value(r['value'])}, "
        threshold = r.get("threshold") or "-"
        if r["outcome"] == CONTRADICTS:
            reasons.append(f"the check \"{check}\" does not uphold the page ({measured}judged by: {threshold})")
        if check not in golden or r["outcome"] == RETIRED:
            continue
        was_threshold, was = golden[check]
        if threshold != was_threshold:
            reasons.append(f"the check \"{check}\" is now judged by {threshold!r}, not {was_threshold!r}: a "
                           f"threshold is part of the claim (to change one on purpose, edit its line in {where} "
                           "by hand, so the change is reviewed)")
        if was == "upholds the page" and r["outcome"] == NOT_TESTED:
            reasons.append(f"the check \"{check}\" is no longer tested ({measured}judged by: {threshold})")
    reasons += [f"the check \"{check}\" is gone: a check is retired only on purpose, in the lesson, with "
                "common.records.retire(name, why)" for check in golden if check not in made]
    return reasons


def shown_value(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def unified_diff(expected_text, actual_text, name, kind="output"):
    suffix = ".checks.txt" if kind == "checks" else ".txt"
    return "".join(difflib.unified_diff(
        expected_text.splitlines(keepends=True), actual_text.splitlines(keepends=True),
        fromfile=f"expected_outputs/{name}{suffix}", tofile=f"actual {name} ({kind})"))


def kept_noise(expected_text, actual_text):
    """actual_text, but a noise line that passes against its golden line keeps the golden's value
    (the n-th line with its label against the golden's n-th): --update on another CPU does not
    rewrite rounding noise for nothing."""
    if expected_text is None:
        return actual_text
    golden = {}
    for line in expected_text.splitlines():
        if found := noise_value(line):
            golden.setdefault(found[0], []).append(line)
    kept, seen = [], {}
    for line in actual_text.splitlines(keepends=True):
        if found := noise_value(line.rstrip("\n")):
            n, same_label = seen.get(found[0], 0), golden.get(found[0], [])
            seen[found[0]] = n + 1
            if n < len(same_label) and lines_match(same_label[n], line.rstrip("\n")):
                line = same_label[n] + line[len(line.rstrip("\n")):]
        kept.append(line)
    return "".join(kept)
