"""Check yourself: a page's own kinds of question, asked with new numbers, the learner's answer
read and marked, and the worked answer shown.

A lesson (week1/18_check_yourself.py, week2/21_check_yourself.py) holds its question kinds as
plain functions, in the page's order, each in three parts kept apart (PrairieLearn's split of
generate and grade):
  draw(rng)          the numbers of one question, small and hand-workable, from a seeded
                     numpy Generator;
  kind(**numbers)    the Question: its text (each convention the page warns about stated), the
                     answer computed with the lessons' own blocks, the worked steps in the page's
                     notation and order, and the known mistakes, each a formula of its own run on
                     the same numbers: a Mistake the page lists, in its words, or a Slip the page
                     does not list, with the page's rule it breaks (STACK's feedback on expected
                     wrong answers);
  mark(question, text), here: the question's Reader reads the text, then right, or wrong and
                     which known mistake it equals, if any.
A mistake that gives a right answer for the question's numbers is not listed for them.
Only what both lessons share is here: the readers, printing a question, the quiz loop.
"""
import importlib.util
import re
import sys
import textwrap
from dataclasses import dataclass, field
from fractions import Fraction

from common import REPO_ROOT
from common.cli import command
from common.kernel import kernel
from common.records import record, said

import numpy as np

TRIES = 50  # a missed kind's numbers are drawn again, up to this often, until they differ from the missed ones
ROUNDED = 3  # decimals the page writes its weights and tanh values at, when it works a step by hand (0.881)
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # 3, -0.25, .5, 1.7e-4
SCORE = "score: {}/{} answers right (a question asked again counts again; a skipped one does not)"
SEED_HELP = "print the questions of this seed, each worked (no flags: the page's own questions, worked)"
QUIZ_HELP = ("ask the questions one at a time on standard input and mark each answer: new numbers, or with --seed, "
             "that seed's. A question you miss comes back once at the end, with new numbers. The score counts the "
             "answers right of the answers marked: a question asked again counts again, a skipped one does not. The "
             "page's own numbers are not asked: the page prints their answers (run with no flags to see them worked)")


class Unreadable(ValueError):
    """A learner's text in no form the question takes; the message names the form wanted."""


def _numbers(text, separators):
    """The numbers written in `text`, if nothing else but `separators` and spaces is there; else None."""
    if text.strip(" ") == "" or re.sub(NUMBER, "", text).strip(separators + " "):
        return None
    return re.findall(NUMBER, text)


def from_lesson(name, *names):
    """Functions of another lesson, weekN/NN_name, by name: the lesson that teaches a thing
    computes it here too (a lesson's file name starts with a digit: it is loaded by its path)."""
    key = "lesson_" + name.replace("/", "_")
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(key, REPO_ROOT / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    found = [getattr(module, n) for n in names]
    return found[0] if len(found) == 1 else found


def number(x, places, whole=False):
    """x at `places` decimals; with `whole`, a whole number bare (0, not 0.000), as the pages write
    PE(0) = [0, 1, 0, 1] (within 1e-9: float64's rounding of a whole answer, 0.9999999999999999, is 1)."""
    x = float(x) + 0.0  # (-0.0 prints as 0)
    if whole and abs(x - round(x)) < 1e-9:
        return str(round(x))
    text = f"{x:.{places}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def listed(values, places=0, whole=True):
    """[a, b, ...] at `places` decimals (an exact whole number bare, with `whole`); words as they are; a
    table row by row, [[1, 0], [0, 1]]."""
    def one(v):
        if isinstance(v, (list, tuple)):
            return listed(v, places, whole)
        return v if isinstance(v, str) else number(v, places, whole)
    return "[" + ", ".join(map(one, values)) + "]"


@dataclass(frozen=True)
class Count:
    """A count, exact: 3,152,384, 3 152 384 and 3152384 read alike."""
    grouped: bool = True  # printed with thousands commas; False: as 6400 (the page's way for that one)
    form = "a whole number, like 3,152,384"

    def read(self, text, also=()):
        digits = re.sub(r"[\s,_']", "", text)
        if not re.fullmatch(r"\d+", digits):
            raise Unreadable(self.form)
        return int(digits)

    def show(self, n):
        return f"{n:,}" if self.grouped else str(n)

    def same(self, a, b):
        return int(a) == int(b)


@dataclass(frozen=True)
class Decimals:
    """A number asked at `places` decimals: any answer within half a unit of the last one asked
    is that number (1.93 for 1.9281...; 2/3 and 1e-4 are read too)."""
    places: int

    @property
    def form(self):
        return f"a number, like {number(1 / 3, self.places)}"

    def read(self, text, also=()):
        try:
            return Fraction(re.sub(r"\s*/\s*", "/", text.strip()))  # 2 / 3 is 2/3; 1 93 is no number
        except (ValueError, ZeroDivisionError):
            raise Unreadable(self.form) from None

    def show(self, x):
        return number(x, self.places)

    def same(self, a, b):
        return abs(Fraction(a) - Fraction(b)) <= Fraction(1, 2 * 10 ** self.places)


def _flat(values):
    values = values.tolist() if hasattr(values, "tolist") else values
    if isinstance(values, (list, tuple)):
        return [x for v in values for x in _flat(v)]
    return [values]


@dataclass(frozen=True)
class Vector:
    """Numbers at `places` decimals, each judged as Decimals judges one: [0.881, 0.119],
    (0.881, 0.119) and 0.881, 0.119 read alike; `rows` > 0: a table of rows, [[-1, -1], [1, 1]]."""
    length: int
    places: int
    whole: bool = False  # an exact whole number printed bare, where the page writes one so: [0.7311, 0.2689, 0, 0]
    # (else every number at `places` decimals, whole or not: [2.000, 2.255])
    rows: int = 0

    @property
    def form(self):
        example = [(i + 1) / 10 for i in range(self.length)]
        if self.rows:
            return f"{self.rows} rows of {self.length} numbers, like {self.show([example] * self.rows)}"
        return f"{self.length} numbers, like {self.show(example)}"

    def read(self, text, also=()):
        found = _numbers(text, "[](),;")
        sizes = {self.length * max(self.rows, 1)} | {len(_flat(v)) for v in also}
        if found is None or len(found) not in sizes:
            raise Unreadable(self.form)
        return [Fraction(x) for x in found]

    def show(self, values):
        return listed(values.tolist() if hasattr(values, "tolist") else values, self.places, self.whole)

    def same(self, a, b):
        a, b = _flat(a), _flat(b)
        return len(a) == len(b) and all(Decimals(self.places).same(x, y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Shape:
    """A shape, printed [3, 6]: [3, 6], (3, 6), 3 x 6 and 3, 6 read alike. Another count of numbers
    than the question asks is asked again (or than one of its known mistakes gives: that is a wrong
    answer, and named)."""
    rank: int

    @property
    def form(self):
        example = {1: [512], 2: [3, 6], 3: [2, 5, 16]}.get(self.rank, [2, 4, 3, 5, 7, 9][:self.rank])
        return f"a shape{'' if self.rank == 2 else f' of {self.rank} numbers'}, like {self.show(example)}"

    def read(self, text, also=()):
        if re.sub(r"\d+", "", text).strip("[](),xX×* "):
            raise Unreadable(self.form)
        found = [int(n) for n in re.findall(r"\d+", text)]
        if len(found) not in {self.rank} | {len(v) for v in also}:
            raise Unreadable(self.form)
        return found

    def show(self, shape):
        return "[" + ", ".join(map(str, shape)) + "]"

    def same(self, a, b):
        return list(a) == list(b)


@dataclass(frozen=True)
class Tokens:
    """A list of tokens, [BOS, A, B] (or BOS A B); `single`: one token, B. Case and <> do not matter."""
    single: bool = False

    @property
    def form(self):
        return "one token, like B" if self.single else "a list of tokens, like [BOS, A, B]"

    def read(self, text, also=()):
        words = [w for w in re.split(r"[\s,]+", text.strip().strip("[]()")) if w]
        if not words or not all(re.fullmatch(r"<?\w+>?", w) for w in words) or (self.single and len(words) != 1):
            raise Unreadable(self.form)
        return words[0] if self.single else words

    def show(self, tokens):
        return str(tokens) if self.single else "[" + ", ".join(map(str, tokens)) + "]"

    def same(self, a, b):
        def plain(tokens):
            return [str(t).strip("<>").upper() for t in ([tokens] if self.single else tokens)]
        return plain(a) == plain(b)


@dataclass(frozen=True)
class Mistake:
    """A mistake the page lists ("Mistakes people make"): what it does, in a few words ("forgetting
    the shift"), the value its own formula gives on the question's numbers, the page's words on it,
    and `rounded`: what the same formula reaches with the numbers along the way at ROUNDED decimals,
    as the page writes them (named too, as the question's `rounded` is right too)."""
    slip: str
    value: object
    page: str
    rounded: object = None

    def said(self):
        return f"That is what {self.slip} gives, one of the page's mistakes: {quote(self.page)}"


class Slip(Mistake):
    """A slip the page does not list: `page` is the page's rule it breaks, in the page's words."""

    def said(self):
        return f"That is what {self.slip} gives: a slip. The page's rule: {quote(self.page)}"


def quote(words):
    return '"' + words.replace('"', "'") + '"'  # (the page's own quotation marks, inside ours)


@dataclass(frozen=True)
class Question:
    """One question: its text, the worked steps (ending before `answer: ...`), the answer the
    lessons' blocks compute, how it is read, its known mistakes, what the page's formula, worked
    step by step, reaches (held to the answer), and `rounded`: what the same steps reach with the numbers
    along the way written at ROUNDED decimals, as the page writes them (right too)."""
    text: str
    steps: tuple
    answer: object
    reader: object
    mistakes: tuple = ()
    reached: object = None
    rounded: object = None
    numbers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """A question kind: its page section (1..8, or "eli5"), its name, ask(**numbers) -> Question,
    draw(rng) -> numbers, and the page's own questions as (where on the page, numbers) pairs."""
    section: object
    name: str
    ask: object
    draw: object
    page: tuple


def reaches(reader, value, exact, rounded):
    """The value is `exact`, or `rounded` (the same steps with the numbers along the way at ROUNDED decimals)."""
    return reader.same(value, exact) or (rounded is not None and reader.same(value, rounded))


def right(question, value):
    """The value is the answer (or what the page's rounded steps reach), as the question's reader judges."""
    return reaches(question.reader, value, question.answer, question.rounded)


def mark(question, text):
    """(right, the known mistakes the answer equals, worked either way) for the learner's `text`;
    Unreadable if it is in no form the question takes."""
    given = question.reader.read(text, [m.value for m in question.mistakes])
    if right(question, given):
        return True, []
    return False, [m for m in question.mistakes if reaches(question.reader, given, m.value, m.rounded)]


def gives_right(question, value):
    """The value (None: none), or the value as printed, is right for the question's numbers."""
    reader = question.reader
    return value is not None and (right(question, value) or right(question, reader.read(reader.show(value), [value])))


def asked(kind, numbers):
    """The kind's question on these numbers, listing only the mistakes that are mistakes here: one whose
    value, or its value worked at ROUNDED decimals, is right for these numbers is left out."""
    question = kind.ask(**numbers)
    wrong = tuple(m for m in question.mistakes
                  if not gives_right(question, m.value) and not gives_right(question, m.rounded))
    return Question(**{**question.__dict__, "mistakes": wrong, "numbers": numbers})


def drawn(kind, rng, unlike=None):
    """A question of this kind with numbers from rng (drawn again, up to TRIES times, while they are `unlike`'s)."""
    for _ in range(TRIES):
        numbers = kind.draw(rng)
        if numbers != unlike:
            break
    return asked(kind, numbers)


def as_written(x, k):
    """x as a worked step writes it, at k decimals, as an exact fraction (the next step works on that)."""
    return Fraction(f"{float(x):.{k}f}")


def fewest(start, reach, answer, places, most=4):
    """The fewest decimals, from `start`, for the numbers the worked steps write along the way such that
    `reach(decimals)`, their arithmetic done exactly as written, prints as the answer at `places` decimals."""
    def printed(values):
        return listed(_flat(values), places, whole=False)
    return next((k for k in range(start, start + most) if printed(reach(k)) == printed(answer)), start + most)


def seeded(kinds, seed, missed=None):
    """[(kind, question)]: each kind's numbers from a generator of its own, seeded by (seed, its
    place among all the lesson's kinds), so --topic leaves the other kinds' numbers alone; with
    `missed` ({kind: the question missed}), those kinds again, with other numbers."""
    if missed is None:
        return [(kind, drawn(kind, np.random.default_rng([seed, place]))) for place, kind in kinds]
    return [(kind, drawn(kind, np.random.default_rng([seed, place, 1]), missed[kind.name].numbers))
            for place, kind in kinds if kind.name in missed]


def wrapped(text, indent="", hanging=True):
    """Lines of at most 100 characters (with `hanging`, the later ones indented two more); a bracketed list
    is never split."""
    text = re.sub(r'\([^()\n]{1,24}\)|"[^"\n]{1,30}"', lambda group: group.group().replace(" ", "\0"), text)  # short
    # (...) and "..." too
    depth, glued = 0, []
    for c in text:
        depth += (c == "[") - (c == "]")
        glued.append("\0" if c == " " and depth > 0 else c)
    return "\n".join(textwrap.fill(line, 100, initial_indent=indent, subsequent_indent=indent + "  " * hanging,
                                   break_long_words=False, break_on_hyphens=False)
                     for line in "".join(glued).splitlines()).replace("\0", " ")


def also_right(question):
    """What the steps reach with the numbers along the way at ROUNDED decimals, if it prints otherwise."""
    show = question.reader.show
    if question.rounded is not None and show(question.rounded) != show(question.answer):
        return show(question.rounded)
    return None


def worked(question):
    """The worked steps, then `answer: ...` in a form the quiz reads."""
    lines = [wrapped(step, "    ") for step in question.steps]
    if also_right(question):
        lines.append(wrapped(f"(the same steps with the numbers along the way at {ROUNDED} decimals, as the page "
                             f"writes them, give {also_right(question)}: right too)", "    "))
    return "\n".join(lines + [f"    answer: {question.reader.show(question.answer)}"])


def show(number, heading, question):
    print(f"\nQ{number}. {heading}")
    print(wrapped(question.text, "  ", hanging=False))
    print(worked(question))


def print_page(title, sections, kinds):
    """The page's own questions, with the page's numbers, each with its worked answer; a record
    for each: the page's formula, worked step by step, reaches the answer the blocks compute."""
    print(title)
    print("The page's questions with the page's numbers, each with its worked answer")
    print("(--seed N: the questions of seed N, worked; --quiz: asked one at a time, new numbers or seed N's)")
    reached, n, section = 0, 0, None
    for _, kind in kinds:
        for where, numbers in kind.page:
            if kind.section != section:
                section = kind.section
                print(f"\n{sections[section]}")
            n += 1
            question = asked(kind, numbers)
            show(n, where, question)
            holds = question.reader.same(question.reached, question.answer)
            reached += holds
            record(f"{where}: the worked steps reach the answer", holds, value=question.reader.show(question.answer),
                   threshold="the page's formula, worked step by step, gives the answer the lessons' blocks compute")
    print(f"\nVerdict: the page's formulas, worked step by step, reach the answers the lessons' blocks compute\n"
          f"  ({reached} of {n} questions): {said(reached == n)}")


def print_seeded(title, sections, kinds, seed):
    print(title)
    print(f"{len(kinds)} question{'s' * (len(kinds) != 1)} with new numbers (seed {seed}), each with its worked "
          "answer")
    section = None
    for n, (kind, question) in enumerate(seeded(kinds, seed), start=1):
        if kind.section != section:
            section = kind.section
            print(f"\n{sections[section]}")
        show(n, kind.name, question)


def no_input_here(error):
    """A notebook front end that cannot take typed answers (nbclient, some viewers): ipykernel
    raises StdinNotImplementedError from input()."""
    return type(error).__name__ == "StdinNotImplementedError"


def quiz(title, script, kinds, seed, replay):
    """Ask each question on standard input, one at a time, in the order `--seed seed` prints
    them, then once more, with new numbers, each kind missed; end with the score line, SCORE.
    A blank line skips (the worked answer shown); `q` stops (the score, then `stopped`); so does the end of the input
    (the score); Ctrl-C (or a notebook's Interrupt) prints the score, then run() says `stopped`.
    An answer in no form the question takes is asked again, and not counted."""
    score = marked = 0
    order = seeded(kinds, seed)
    print(title)
    print(f"{len(order)} question{'s' * (len(order) != 1)} with new numbers (seed {seed}; {replay} prints "
          f"{'them with their answers' if len(order) != 1 else 'it with its answer'}).")
    print("Type your answer and press Enter: a blank line skips a question, q stops.")
    missed, again = {}, False
    echo = kernel() is None and not sys.stdin.isatty()
    try:
        while order:
            for n, (kind, question) in enumerate(order, start=1):
                where = f"section {kind.section}" if isinstance(kind.section, int) else f"{kind.section.upper()} page"
                print(f"\n{'Once more, new numbers: question' if again else 'Question'} {n} of {len(order)} ({where})")
                print(wrapped(question.text, "  ", hanging=False))
                while True:
                    text = input("your answer: ").strip()
                    if echo:  # typed into a pipe or a file: the transcript shows the answer as a terminal would
                        print(text)
                    if text.lower() in ("q", "quit"):
                        print(SCORE.format(score, marked))
                        sys.stdout.flush()
                        print("stopped", file=sys.stderr)
                        return
                    if not text:
                        print("  skipped; the worked answer:")
                        print(worked(question))
                        break
                    try:
                        ok, named = mark(question, text)
                    except Unreadable as form:
                        print(f"  write {form}")
                        continue
                    marked += 1
                    score += ok
                    if ok:
                        rounded = also_right(question)
                        print(f"  right: {question.reader.show(question.answer)}"
                              + (f" (or {rounded}, the steps worked at {ROUNDED} decimals)" if rounded else ""))
                    else:
                        print("  not right; the worked answer:" if not named else "  not right.")
                        for mistake in named:
                            print(wrapped(mistake.said(), "  "))
                        if named:
                            print("  The worked answer:")
                        print(worked(question))
                        missed[kind.name] = question
                    break
            order = [] if again else seeded(kinds, seed, missed)
            again = True
    except EOFError:
        print()
    except KeyboardInterrupt:
        print("\n" + SCORE.format(score, marked))
        sys.stdout.flush()
        raise
    except Exception as error:
        if not no_input_here(error):
            raise
        print(f"\nThis notebook's front end cannot send typed answers to the kernel (input()): run the quiz in "
              f"JupyterLab, Notebook 7, VS Code or Colab, or in a terminal: {command(script)} --quiz")
        return
    print(SCORE.format(score, marked))


def check_yourself(args, script, title, sections, kinds):
    """What a Check yourself lesson does with its command line: the page's questions (no flags),
    new numbers (--seed), or the quiz (--quiz); --topic keeps the kinds of those page sections."""
    chosen = [(place, kind) for place, kind in enumerate(kinds)
              if not args.topic or str(kind.section) in args.topic]
    if args.quiz:
        seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
        topics = [word for topic in args.topic or [] for word in ("--topic", topic)]
        return quiz(title, script, chosen, seed, " ".join(["--seed", str(seed), *topics]))
    if args.seed is None:
        return print_page(title, sections, chosen)
    return print_seeded(title, sections, chosen, args.seed)
