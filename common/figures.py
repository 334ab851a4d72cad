"""Figure saving: fixed size and metadata, so a figure comes out with the same pixels on
every run; the `saved ...` line names the file from the folder you ran the script in.
A script draws with Agg (no display needed); in a notebook kernel the backend stays the one
the learner chose, and every figure is also shown inline, saved or not (common/notebook.py).

Where a figure goes:
  - --figure PATH.png: there, whatever the other knobs;
  - a default run (every knob at its default): the figure's place in the repo, except under
    the check: run_all.py sets LESSONS_OUTPUT_ROOT (its folder under build/), and the
    figure goes to the same relative place there, so the check never rewrites a file
    that git tracks;
  - a run with other knobs: nowhere (a committed figure stays as it is).
Every save is atomic: the PNG is written to a temporary file beside its target and then
renamed over it, so an interruption (Ctrl-C) never leaves a half-written image.
"""
import io
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from common import OUTPUT_ROOT, REPO_ROOT, shown
from common.kernel import kernel, show_png

import matplotlib

if kernel() is None:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

DPI = 100
FONT_SIZE = 12  # a live view's text: readable on a laptop screen at the window sizes the lessons use


def figure_path(args, default):
    """Where this run saves its figure: --figure if given; else `default` (a path inside the
    repo; under the check, the same place under $LESSONS_OUTPUT_ROOT) when the run is at its
    defaults (args.at_defaults, from the lesson's LESSON.args: --live is never a knob, and
    knobs that change only what is printed do not count); else None (not saved)."""
    if args.figure is not None:
        return args.figure
    if not args.at_defaults:
        return None
    root = os.environ.get(OUTPUT_ROOT)
    return Path(root) / Path(default).resolve().relative_to(REPO_ROOT) if root else default


def write_png(fig, file):
    fig.savefig(file, format="png", dpi=DPI, metadata={"Software": None})


def save_atomically(fig, path):
    """fig as PNG at path, all or nothing: a temporary file in the same folder, then a rename."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".png.tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            write_png(fig, file)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a figure is for everyone to read
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):  # interrupted or failed before the rename
            os.unlink(temporary)


def save_figure(fig, path):
    """Write fig as PNG to path (if any), show it inline in a notebook, and close it; return
    the line to print."""
    try:
        if path is not None:
            save_atomically(fig, path)
        if kernel() is not None:
            if path is not None:
                show_png(Path(path).read_bytes())
            else:
                drawn = io.BytesIO()
                write_png(fig, drawn)
                show_png(drawn.getvalue())
    finally:
        plt.close(fig)
    if path is None:
        return "figure not saved: these settings are not the defaults (add --figure PATH.png to save it)"
    return f"saved {shown(path)}"


@contextmanager
def window_style():
    """A live view's text, readable on a laptop screen, for what is drawn inside (and only inside)
    the block: a saved figure is drawn without it, so --live never changes it."""
    with plt.rc_context({"font.size": FONT_SIZE}):
        yield
