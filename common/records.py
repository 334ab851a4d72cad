"""A lesson's checks: what the check judges, declared beside the line a learner reads.

A lesson prints computed numbers; after the line, it records what the check judges there:

    print(f"attention shape={out.shape}; row-sum range={sums.min():.6f}..{sums.max():.6f}")
    record("every softmax row sums to 1", worst < 1e-6, value=worst, threshold="every row within 1e-6 of 1")

A record: a stable name; whether the run upholds the page (holds True), contradicts it
(False) or does not test it (None); the measured value; the threshold it is judged by, in
words. run_all.py compares the records by name with expected_outputs/<lesson>.checks.txt
(`name | threshold | outcome`): a default run whose check does not uphold the page, a check
that disappeared (unless retired on purpose, with its reason), or a changed threshold is
refused, by name.

"Count it": a training prints the run's own number beside the words of the claim it is
judged by. measured() makes that text and its record in one call, where the line is printed:

    print(f"  totals right {measured('totals right', share > 0.75, f'{share:.1%}', 'above 75%')}")

prints `totals right 96.4% (above 75%)`. A trajectory differs from CPU to CPU, so the check
reads that line as `totals right ‹this run's number› (above 75%)` and judges the number by the
record's outcome: the golden file holds what every CPU prints. Where the check reads the
output ($LESSONS_RECORDS, which run_all.py sets), measured() brackets the number between OPEN
and CLOSE, so the check knows exactly which printed text is the run's own, and each record
is also written to stdout, on a line of its own that starts with MARK, which run_all.py takes
out; a learner's run prints the number alone. A test collects records with `with collected():`.
"""
import json
import os
import sys
from contextlib import contextmanager

RECORDS = "LESSONS_RECORDS"
MARK = "\x1f"  # ASCII's unit separator (not a line break to str.splitlines): starts a record's line
OPEN, CLOSE = "\x02", "\x03"  # ASCII's start and end of text: around a measured number, where the check reads it
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


def record(name, holds, value=None, threshold=None, why=None):
    """Record the check `name` (nothing is printed): holds True (it upholds the page), False
    (it contradicts it) or None (not tested here); the measured `value`; the `threshold` it is
    judged by, in words ("above 0.90"); `why`: for a check not tested here, the reason.
    Returns holds."""
    _write(name, value, threshold, outcome(holds), None, why)
    return holds


def measured(name, holds, text, threshold=None, value=None, why=None):
    """A number this run measured, as a lesson prints it: `text` beside the words of the claim
    that judges it, "96.4% (above 75%)", or alone where no claim judges it (holds and threshold
    None, and `why`), recorded as the check `name`. Its digits may differ from CPU to CPU; the
    check reads them as ‹this run's number›, and judges them by the record."""
    _write(name, value, threshold, outcome(holds), text, why)
    printed = text if threshold is None else f"{text} ({threshold})"
    return Bracketed(printed.replace(text, f"{OPEN}{text}{CLOSE}", 1)) if os.environ.get(RECORDS) else printed


class Bracketed(str):
    """A measured number's text with its brackets, padded in a column (f"{shown:>25}") as the
    learner's run pads it without them: the check's output, brackets taken out, is the same bytes."""

    def __format__(self, spec):
        plain = self.replace(OPEN, "").replace(CLOSE, "")
        return format(plain, spec).replace(plain, str(self), 1)


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
