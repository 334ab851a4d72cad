"""The lessons' "Try it" knobs: every flag shows its range and default in --help, a bad
value or a combination too big to run is a one-line usage error, and the "Try it"
suggestions are whole commands that work as printed."""
import argparse
import math
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from common import shown
from common.kernel import kernel

# What one run may hold and do. A run over either limit is refused before it starts.
MAX_NUMBERS = 32_000_000  # numbers in the largest array: 256 MB in float64, so the few live
#                           copies a lesson holds stay under 1 GB
MAX_WORK = 2_000_000_000  # multiply-adds in the whole run: a few seconds on a laptop CPU


class Range:
    """An argparse type: a number in lo..hi, shown as its range in --help."""

    def __init__(self, kind, lo, hi, hi_open=False):
        self.kind, self.lo, self.hi, self.hi_open = kind, lo, hi, hi_open
        self.__name__ = kind.__name__  # argparse names the type in some messages

    def __str__(self):
        return f"{self.lo:g} <= x < {self.hi:g}" if self.hi_open else f"{self.lo:,}..{self.hi:,}"

    def __call__(self, text):
        text = text.strip()  # (a negative number comes with a space in front: _LessonParser)
        noun = "an integer" if self.kind is int else "a number"
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun} in {self}, got {text!r}") from None
        if self.kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        inside = self.lo <= value < self.hi if self.hi_open else self.lo <= value <= self.hi
        if not inside:
            raise argparse.ArgumentTypeError(f"expected {noun} in {self}, got {text}")
        return value


def int_range(lo, hi):
    """Integers lo..hi inclusive."""
    return Range(int, lo, hi)


def float_range(lo, hi):
    """Finite numbers lo <= x < hi."""
    return Range(float, lo, hi, hi_open=True)


SEED = int_range(0, 2**32 - 1)


def png_path(text):
    """A figure's output path: a .png file we can actually write."""
    path = Path(text).expanduser().resolve()
    if path.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(f"expected a .png path, got {text!r}")
    try:  # try it now, so a bad path is a usage error rather than a traceback after the run
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with open(path, "ab"):
            pass
        if not existed:
            path.unlink()
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {error.strerror}") from None
    return path


def command(script):
    """How to run `script` with this interpreter, from the current directory; in a notebook
    kernel, as a cell runs it (`%run week2/01_causal_mask.py`)."""
    if kernel() is not None:
        return f"%run {shlex.quote(shown(script))}"
    return f"{shlex.quote(shown(sys.executable))} {shlex.quote(shown(script))}"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's line breaks; adds each flag's range and default to its help."""

    def _get_help_string(self, action):
        extras = []
        if isinstance(action.type, Range):
            extras.append(str(action.type))
        if action.option_strings and not any(action.default is x for x in (None, False, argparse.SUPPRESS)):
            default = action.default
            if isinstance(default, list):
                default = " ".join(map(str, default))
            elif isinstance(default, Path):
                default = shown(default)
            extras.append(f"default {default}")
        return f"{action.help} ({'; '.join(extras)})" if extras else action.help


NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)  # a negative number, not a flag


class _LessonParser(argparse.ArgumentParser):
    """A usage error is one line (argparse prints the whole usage block first). One found while
    reading the flags (a bad value, an unknown flag) says where the ranges are listed; a
    lesson's own refusal after that (sizes too big) names the flags to change itself."""
    reading = False

    def parse_args(self, args=None, namespace=None):
        # argparse reads "-1e9" or "-inf" as an unknown flag; a word that starts like a negative
        # number is handed over with a space in front (which int() and float() ignore), so the
        # flag's type can accept it or say clearly why not.
        words = sys.argv[1:] if args is None else list(args)
        words = [f" {word}" if NEGATIVE.match(word) else word for word in words]
        self.reading = True
        try:
            return super().parse_args(words, namespace)
        finally:
            self.reading = False

    def error(self, message):
        where = " (--help lists every flag and its range)" if self.reading else ""
        self.exit(2, f"{self.prog}: error: {message}{where}\n")


def lesson_parser(script, description, try_it):
    """The argument parser of one lesson script.

    try_it: [(arguments, what to look for), ...]; --help prints each as a whole command."""
    lines = [f"  {command(script)} {args}".rstrip() + f"\n      {why}" for args, why in try_it]
    prog = command(script) if kernel() is not None else None  # (its usage and errors: as a cell runs it)
    parser = _LessonParser(prog=prog, description=description, formatter_class=_HelpFormatter,
                           epilog="Try it:\n" + "\n".join(lines))
    return parser


def add_live(parser, what, training=False):
    """The --live flag, its help saying when the window opens and what it lets you try (a
    training's window opens as the training starts); in a notebook kernel, what it shows there."""
    if kernel() is not None:
        help = (f"below the printed lines, as the training starts, a picture redrawn while it trains, to {what}"
                if training else f"after the printed lines, the figure below them with controls, to try it: {what} "
                "(after %%matplotlib widget, the figure's own sliders)")  # (%% : argparse formats help with %)
    else:
        when = ("open a window as the training starts, to" if training
                else "after the printed lines, open a window to try it:")
        help = f"{when} {what} (needs a display)"
    parser.add_argument("--live", action="store_true", help=help)


NOT_KNOBS = ("figure", "live")  # flags that change where results go, never what is computed


def at_defaults(parser, args, ignore=()):
    """True when every knob (but NOT_KNOBS and those in `ignore`) has its default value: the
    page's setup."""
    return all(value == parser.get_default(name) for name, value in vars(args).items()
               if name not in NOT_KNOBS + tuple(ignore))


def too_big(numbers=0, work=0, knobs=()):
    """Why a run is too big to start, in one line, or None: its largest array over
    MAX_NUMBERS or its total work over MAX_WORK, naming the flags that bring it down
    (`knobs`: only those that lower the cost)."""
    fix = f": lower one of {', '.join(knobs)}" if knobs else ": choose smaller sizes"
    if numbers > MAX_NUMBERS:
        return f"these sizes need an array of {numbers:,} numbers; the limit is {MAX_NUMBERS:,} (about 256 MB){fix}"
    if work > MAX_WORK:
        return f"these sizes need about {work:,} multiply-adds; the limit is {MAX_WORK:,} (a few seconds){fix}"
    return None


@dataclass(frozen=True)
class Knob:
    """One flag of a lesson, as argparse's add_argument takes it."""
    flags: tuple
    options: dict


def knob(*flags, **options):
    """A lesson's flag: knob("--d-k", type=int_range(1, 1024), default=64, help="...")."""
    return Knob(flags, options)


@dataclass(frozen=True)
class Lesson:
    """What a lesson declares about itself, once, at the top of its optional part: read by its
    own main() (`args = LESSON.args(argv)`) and, without running it, by the tools around it:
    the tests (its flags and their ranges, its Try it commands, whether --live follows a
    training) and the notebooks' generator (where on the pages it belongs).

    page: (page, section): ("week2", 2) is Week 2, section 2; ("eli5", 1) the ELI5 page's first
        move; ("week1", "worked examples") or ("week1", "mistakes") for the lessons that
        cover a whole page (notebooks/generate.py names the sections).
    knobs: [knob(...), ...]; --help shows each flag's range and default.
    try_it: [(arguments, what to look for), ...]; --help prints each as a whole command.
    figure: the help of --figure (where the figure goes), if the lesson saves one.
    live: what its --live view lets you try, if it has one; with --live, whether a window
        can open here is settled before any work (one line and status 2 if not).
    training: its --live view follows a training as it learns (then shows the last figure).
    limits(args): None, or why these settings cannot run, in one line (too_big() words it
        for sizes); it becomes a usage error, before any work.
    print_only: knobs that change only what is printed, not what is computed."""
    script: str
    page: tuple
    description: str
    knobs: tuple = ()
    try_it: tuple = ()
    figure: str | None = None
    live: str | None = None
    training: bool = False
    limits: object = None
    print_only: tuple = ()

    @property
    def name(self):
        """weekN/NN_name, as run_all.py names it."""
        path = Path(self.script)
        return f"{path.parent.name}/{path.stem}"

    def parser(self):
        """The lesson's argument parser (nothing is parsed)."""
        parser = lesson_parser(self.script, self.description, self.try_it)
        for flag in self.knobs:
            parser.add_argument(*flag.flags, **flag.options)
        if self.figure is not None:
            parser.add_argument("--figure", type=png_path, default=None, help=self.figure)
        if self.live is not None:
            add_live(parser, self.live, self.training)
        return parser

    def args(self, argv=None):
        """The lesson's command line, parsed: argv a list of arguments; None: the command
        line's, when the command line ran this lesson (`python lesson.py`, `%run lesson.py`),
        else none (a lesson imported in a notebook cell never reads the kernel launcher's).
        A bad value or a combination too big to run is a one-line usage error, before any
        work; so is --live where no window can open. Returns the arguments, with
        args.at_defaults: every knob but print_only at its default (the page's setup)."""
        parser = self.parser()
        if argv is None:
            ran = bool(sys.argv and sys.argv[0]) and Path(sys.argv[0]).resolve() == Path(self.script).resolve()
            argv = sys.argv[1:] if ran else []
        args = parser.parse_args(argv)
        problem = self.limits(args) if self.limits else None
        if problem:
            parser.error(problem)
        if getattr(args, "live", False):
            from common import live  # (a window, or a view inline in a notebook: loaded only for --live)

            live.need_window(parser, saves=self.figure is not None)
        args.at_defaults = at_defaults(parser, args, ignore=self.print_only)
        return args

