"""Long runs show progress on stderr, only when stderr is a terminal, updated in place and
wiped at the end; stdout (what the check compares) never sees it."""
import io
import os
import re
import sys

from common.progress import Progress
from common.records import RECORDS

import pytest

import run_all
from check import comparing
from tests.conftest import SCRIPTS, run_on_a_terminal


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_nothing_is_shown_when_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with Progress("training step", 3, stream) as progress:
        for step in range(1, 4):
            progress.update(step)
    assert stream.getvalue() == ""


def test_a_terminal_sees_the_count_in_place_then_a_clean_line():
    stream = Terminal()
    with Progress("training step", 600, stream) as progress:
        progress.update(1)
        progress.update(600)
    shown = stream.getvalue()
    assert shown.startswith("\rtraining step 1/600") and "\rtraining step 600/600" in shown
    assert "\n" not in shown and shown.endswith("\r" + " " * len("training step 600/600") + "\r")


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal needs POSIX")
def test_a_training_lesson_shows_progress_on_a_terminal_and_prints_the_same_lines(tmp_path):
    """week1/15 (the quickest training: about a second) with its stderr on a pseudo-terminal."""
    env = {**os.environ, **run_all.FIXED_ENV, "LESSONS_OUTPUT_ROOT": str(tmp_path), RECORDS: "1"}
    code, out, seen = run_on_a_terminal([sys.executable, str(SCRIPTS["week1/15_context_decides"])], tmp_path, env)
    assert code == 0
    assert b"training step" in seen
    assert re.search(rb"\r {10,}\r$", seen), seen[-200:]  # the last thing written wipes the line
    golden = run_all.golden_path("week1/15_context_decides").read_text(encoding="utf-8")
    compared, problems = comparing.compared(*comparing.split_records(out))  # its trained numbers read as their bands
    assert not problems and comparing.outputs_match(golden, compared)
