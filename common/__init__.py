"""Helpers shared by several lesson scripts: argument types, figure saving, reporting.

The lessons themselves (attention, masks, counts, ...) live in the scripts, not here.

Importing `common` (every script does, before numpy and torch) sets one thing up, because
it must be in place before those imports: a missing numpy, torch or matplotlib becomes one
line that says how to set up, instead of a traceback (sys.excepthook). Everything else a
lesson's run needs is done by run(main), the last line of every lesson. In a notebook kernel
neither touches the kernel's own hooks and signal handlers (common/notebook.py); there a
finder last on sys.meta_path says the missing package in one line, with the cell that
installs it, for the imports the lessons' own files make (MissingInKernel).
"""
import sys

from common.kernel import kernel


def _quiet_hook(kind, error, traceback):
    """Ctrl-C: one word instead of a traceback (a figure being saved is removed by its own
    `finally`, so nothing is left half-written); the interpreter then ends the process by
    SIGINT, which the shell shows as exit status 130. A missing package: one line."""
    if isinstance(error, KeyboardInterrupt):
        print("stopped", file=sys.stderr)
        return None
    name = (getattr(error, "name", None) or "").split(".")[0]
    if not (isinstance(error, ModuleNotFoundError) and name in PACKAGES):
        return sys.__excepthook__(kind, error, traceback)
    venv = os.path.relpath(venv_python())
    script = os.path.relpath(sys.argv[0]) if sys.argv and sys.argv[0] else "the script"
    how = (f"run it with the lessons' environment: {venv} {script}" if venv_python().exists() else
           f"set it up once with `make check` in {REPO_ROOT} (no make? see the README), "
           f"then run: {venv} {script}")
    print(f"{script}: this Python ({sys.executable}) has no {name}; {how}", file=sys.stderr)


if kernel() is None:
    sys.excepthook = _quiet_hook  # first of all: a Ctrl-C from here on says one word

import os  # noqa: E402
import signal  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"numpy", "torch", "matplotlib"}
# Set by run_all.py to its folder under build/: a default run writes its figure there,
# not over the committed copy (common/figures.py).
OUTPUT_ROOT = "LESSONS_OUTPUT_ROOT"


def shown(path, root=REPO_ROOT):
    """A path as a learner types it from the current folder: relative when it lies inside
    that folder, or when both lie inside the repo (`root`); absolute otherwise (also across
    Windows drives)."""
    path, here = os.path.abspath(path), os.getcwd()  # abspath keeps a venv's symlink

    def within(inner, outer):
        try:
            return os.path.commonpath([inner, outer]) == str(outer)
        except ValueError:  # another drive
            return False

    return os.path.relpath(path) if within(path, here) or (within(path, root) and within(here, root)) else path


# How a notebook kernel gets a missing package: the line a lesson cell shows (and the set-up cell, for torch).
# On Linux PyPI's torch is the CUDA build (several GB); PyTorch's index has the CPU build, which is also the
# build PyPI has for macOS and Windows.
KERNEL_INSTALL = {"torch": "install its CPU build (about 190 MB) in a cell: "
                           "%pip install torch --index-url https://download.pytorch.org/whl/cpu",
                  "numpy": "install it in a cell: %pip install numpy",
                  "matplotlib": "install it in a cell: %pip install matplotlib"}


class MissingInKernel(ModuleNotFoundError):
    """numpy, torch or matplotlib missing from a notebook kernel while a lesson runs, said in one
    line: IPython shows the lines of an error's _render_traceback_ in place of its traceback."""

    def __init__(self, name):
        script = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else "this lesson"
        super().__init__(f"{shown(script)}: this kernel has no {name}; {KERNEL_INSTALL[name]}, then run this cell "
                         "again", name=name)

    def _render_traceback_(self):
        return [str(self)]


class _LessonsMissing:
    """A finder last on sys.meta_path in a notebook kernel, so asked only for a module that no
    other finder has: an import of numpy, torch or matplotlib made by the lessons' own files (a
    lesson, common/) raises MissingInKernel; every other import is left as it was."""

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in PACKAGES:
            return None
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = frame.f_back  # (the import system's own frames, up to the line that imports)
        importer = frame.f_code.co_filename if frame is not None else ""
        if os.path.isabs(importer) and Path(importer).resolve().is_relative_to(REPO_ROOT):
            raise MissingInKernel(name)
        return None


if kernel() is not None and not any(isinstance(finder, _LessonsMissing) for finder in sys.meta_path):
    sys.meta_path.append(_LessonsMissing())


def venv_python():
    """The lessons' environment's interpreter, as `make check` creates it."""
    windows = REPO_ROOT / ".venv" / "Scripts" / "python.exe"
    return windows if windows.exists() else REPO_ROOT / ".venv" / "bin" / "python"


def run(main):
    """Run a lesson's main() as a command-line tool runs: piped into `head`, it stops quietly
    when the pipe closes; Ctrl-C at any moment ends it with the one word `stopped` (the shell
    shows status 130); once main() has returned, with its output complete, a Ctrl-C no
    longer interrupts the interpreter's own shutdown. Exits with main()'s status.
    In a notebook kernel (`%run`): Interrupt ends it with `stopped`, and the kernel goes on; a
    usage error is its one line, as in a terminal (the kernel is not ended, and %run's note
    "An exception has occurred" would add nothing to it). main()'s status is not raised there:
    the lesson's printed lines and verdicts are what a notebook shows."""
    if kernel() is not None:
        try:
            main()
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
        except SystemExit:  # any exit: argparse's (a usage error, its line printed, or --help)
            pass
        finally:
            # After `%matplotlib`, %run draws pyplot's current figure if the script drew with
            # pyplot; a lesson closes every figure it makes, so that would make an empty one and
            # show it ("<Figure size 640x480 with 0 Axes>").
            pyplot = sys.modules.get("matplotlib.pyplot")
            if getattr(getattr(pyplot, "draw_if_interactive", None), "called", False):
                pyplot.draw_if_interactive.called = False
        return
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    status = main()
    sys.stdout.flush()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (kept through shutdown: Python resets only its own handlers)
    sys.exit(status)
