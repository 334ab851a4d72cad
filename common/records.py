"""A lesson's checks: what the check judges, declared beside the line a learner reads.

A lesson prints computed numbers; after the line, it records what the check judges there:

    print(f"attention shape={out.shape}; row-sum range={sums.min():.6f}..{sums.max():.6f}")
    record("every softmax row sums to 1", worst < 1e-6, value=worst, threshold="every row within 1e-6 of 1")

A record: a stable name; whether the run upholds the page (holds True), contradicts it
(False) or does not test it (None); the measured value; the threshold or band it is judged
by, in words. run_all.py compares the records by name with
expected_outputs/<lesson>.checks.txt (`name | threshold | outcome`): a default run whose
check does not uphold the page, a check that disappeared (unless retired on purpose, with
its reason), or a changed threshold is refused, by name.

"Count it": a training prints the run's own number beside the band its claim is judged by,
and names the number's printed text as `shown`:

    print(f"  totals right {right} (above 75%)")
    record("totals right, teacher-forced", share > 0.75, value=share, threshold="above 75%", shown=right)

A trajectory differs from CPU to CPU, so the check reads that line with the band in the
number's place, `totals right ‹above 75%› (above 75%)`, and judges the number by the
record's outcome: the golden file holds what every CPU prints.

When $LESSONS_RECORDS is set (run_all.py sets it for every run), each record is also
written to stdout, on a line of its own that starts with MARK, right after what the lesson
printed before it: run_all.py takes those lines out and so knows which line a `shown`
number stands in. A learner's own run prints and records nothing more than the lesson's
lines. A test can collect records in memory: `with collected() as got:`.
"""
import json
import os
import sys
from contextlib import contextmanager

RECORDS = "LESSONS_RECORDS"
MARK = "\x1f"  # ASCII's unit separator (not a line break to str.splitlines): starts a record's line
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


def record(name, holds, value=None, threshold=None, shown=None, why=None):
    """Record the check `name` (nothing is printed): holds True (it upholds the page), False
    (it contradicts it) or None (not tested here); the measured `value`; the `threshold` or
    band it is judged by, in words ("above 0.90"); `shown`: the value's text in the line just
    printed, when that number differs from CPU to CPU (the check reads the band in its place);
    `why`: for a check not tested here, the reason. Returns holds."""
    _write(name, value, threshold, outcome(holds), shown, why)
    return holds


def retire(name, why):
    """Say on purpose that the check `name` is no longer made, and why: the check then
    accepts its disappearance from this lesson's records."""
    _write(name, None, None, RETIRED, None, why)


def _write(name, value, threshold, result, shown, why):
    if "|" in name or "\n" in name:
        raise ValueError(f"a check's name holds no '|' and no line break: {name!r}")
    entry = {"name": name, "value": _plain(value), "threshold": threshold, "outcome": result}
    if shown is not None:
        entry["shown"] = shown
    if why is not None:
        entry["why"] = why
    for sink in _collecting:
        sink.append(entry)
    if os.environ.get(RECORDS):
        sys.stdout.write(MARK + json.dumps(entry, default=str) + "\n")


def said(holds):
    """How a verdict words its outcome: "as the page says"; "NOT AS THE PAGE SAYS" (at the
    page's own settings the check then fails; the knobs are there to make verdicts turn);
    None (not tested here): "not tested"."""
    if holds is None:
        return "not tested"
    return "as the page says" if holds else "NOT AS THE PAGE SAYS"


@contextmanager
def collected():
    """The records made inside the block, as a list of dicts (for tests)."""
    sink = []
    _collecting.append(sink)
    try:
        yield sink
    finally:
        _collecting.remove(sink)
