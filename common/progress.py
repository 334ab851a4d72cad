"""Progress of a long step, on stderr, only when stderr is a terminal.

    with Progress("training step", steps) as progress:
        for step in range(1, steps + 1):
            ...
            progress.update(step)

shows `training step 300/600` updated in place and wipes it at the end, so the printed
lines (stdout) and the check, which reads stdout from a file, are never touched. In a
notebook kernel the same words are one output of the cell, updated in place, emptied at the end.
"""
import sys
import time

from common.kernel import display, kernel

EVERY = 0.1  # seconds between redraws: often enough to look alive, rarely enough to cost nothing


class Progress:
    def __init__(self, label, total, stream=None):
        self.label, self.total = label, total
        self.stream = stream or sys.stderr
        self.inline = None  # in a notebook: the output that shows it
        if stream is None and kernel() is not None:
            self.inline = display({"text/plain": ""}, raw=True, display_id=True)
        self.live = self.inline is not None or self.stream.isatty()
        self.width, self.last = 0, 0.0

    def update(self, done):
        now = time.monotonic()
        if self.live and (now - self.last >= EVERY or done == self.total):
            text = f"{self.label} {done:,}/{self.total:,}"
            if self.inline is not None:
                self.inline.update({"text/plain": text}, raw=True)
            else:
                self.stream.write("\r" + text.ljust(self.width))
                self.stream.flush()
            self.width, self.last = len(text), now

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.inline is not None:
            self.inline.update({"text/plain": ""}, raw=True)
        elif self.live and self.width:
            self.stream.write("\r" + " " * self.width + "\r")  # leave the line as it was
            self.stream.flush()
        return False
