"""A lesson's checks, handed to the check as records as well as printed.

A check is one thing a run settles: a verdict, a count against its threshold, a band, a
value beside the page's. The learner reads it as a printed line, worded by the lesson;
run_all.py reads its record: a stable name, the measured value, the threshold or band it
is judged by, and the outcome (it upholds the page, contradicts it, or is not tested
here). run_all.py compares records by name with expected_outputs/<lesson>.checks.txt and
never reads the printed words: a default run whose check does not uphold the page, a
check that disappeared (unless retired on purpose, with its reason), or a changed
threshold is refused, by name.

    check("attention stays above 0.90 on long rows", f"... {said(holds)}", holds,
          value=accuracy, threshold=f"above {HIGH:.2f}")

Records go to the file named by $LESSONS_RECORDS, which run_all.py sets for every run; a
learner's own run records nothing. A test can collect them in memory: `with collected() as got:`.
"""
import json
import os
from contextlib import contextmanager

RECORDS = "LESSONS_RECORDS"
UPHOLDS, CONTRADICTS, NOT_TESTED, RETIRED = "upholds the page", "contradicts the page", "not tested here", "retired"
_collecting = []  # the lists of `collected()` blocks now open


def outcome(holds):
    """True: the check upholds the page; False: it contradicts it; None: not tested here
    (NumPy's and torch's booleans count as what they say)."""
    return NOT_TESTED if holds is None else UPHOLDS if bool(holds) else CONTRADICTS


def _plain(value):
    """A value as JSON can hold it: numpy and torch scalars become Python numbers."""
    if hasattr(value, "item"):
        return value.item()
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def record(name, value=None, threshold=None, result=NOT_TESTED, why=None):
    """Hand run_all.py one record (nothing is printed)."""
    if "|" in name or "\n" in name:
        raise ValueError(f"a check's name holds no '|' and no line break: {name!r}")
    entry = {"name": name, "value": _plain(value), "threshold": threshold, "outcome": result}
    if why is not None:
        entry["why"] = why
    for sink in _collecting:
        sink.append(entry)
    path = os.environ.get(RECORDS)
    if path:
        with open(path, "a", encoding="utf-8") as file:  # appended as it happens: a crash keeps the earlier ones
            file.write(json.dumps(entry, default=str) + "\n")


at_defaults = True  # every knob at its default, the page's setup (set by common.cli.lesson_args)


def said(holds):
    """How a verdict words its outcome: "as the page says"; against the page, "CONTRADICTS THE
    PAGE" at the page's own settings, "NOT THE PAGE'S PICTURE at these settings" at others
    (the knobs are there to make verdicts turn); None (not tested here): "not tested"."""
    if holds is None:
        return "not tested"
    if holds:
        return "as the page says"
    return "CONTRADICTS THE PAGE" if at_defaults else "NOT THE PAGE'S PICTURE at these settings"


def band(value, low, high, decimals=2):
    """Which of three bands a value lies in, in words: "below 0.60", "0.60 to 0.90", "above
    0.90" (edges belong to the middle band). A training prints bands, not its exact numbers:
    every CPU's trajectory ends in the same band."""
    if value < low:
        return f"below {low:.{decimals}f}"
    return f"above {high:.{decimals}f}" if value > high else f"{low:.{decimals}f} to {high:.{decimals}f}"


def check(name, line, holds, value=None, threshold=None):
    """Print `line` exactly as the lesson words it, and record the check `name`: its
    measured `value`, the `threshold` or band it is judged by (words, e.g. "above 0.90"),
    and whether it upholds the page (holds True), contradicts it (False) or is not tested
    here (None). Returns holds."""
    print(line)
    record(name, value, threshold, outcome(holds))
    return holds


def retire(name, why):
    """Say on purpose that the check `name` is no longer made, and why: the check then
    accepts its disappearance from this lesson's records."""
    record(name, result=RETIRED, why=why)


@contextmanager
def collected():
    """The records made inside the block, as a list of dicts (for tests)."""
    sink = []
    _collecting.append(sink)
    try:
        yield sink
    finally:
        _collecting.remove(sink)
