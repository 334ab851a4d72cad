"""Bookkeeping for the scripts that hold the pages to account: the worked examples
(computed value next to the page's value) and the "Mistakes people make" experiments
(a belief, one measurement run in two worlds, a computed verdict). Prints as it goes, and
hands run_all a record of each value, belief and bullet (common/records.py), named by its
section and label, or by the belief or bullet itself; finish() gives the exit status.
moved() is the mistakes scripts' shared test of a change, weights_of() their look at the
weights an attention function uses."""
import re
import textwrap
from dataclasses import dataclass
from fractions import Fraction

from common.records import record

import torch

WIDTH = 100  # a belief's lines are wrapped to this many characters
MOVES = 1e-9  # the mistakes scripts' "moves": far above float64 rounding (about 1e-16)


def moved(a, b, tolerance=MOVES):
    """Did anything change between the tensors a and b: some entry by more than `tolerance`,
    or the shape? This is what "moves" and "changes" mean in the mistakes scripts (week1/08,
    week2/11), where every number is float64 and 1e-9 is far above its rounding."""
    return a.shape != b.shape or bool((a - b).abs().max() > tolerance)


def weights_of(attend, q, k):
    """The weights an attend(q, k, v) function uses: with V = I (value j is the one-hot
    'key j'), output row t is exactly query t's weights.   q [1, T_q, d], k [1, T_k, d]."""
    return attend(q, k, torch.eye(k.shape[-2], dtype=q.dtype)[None])  # [1, T_q, T_k]


def like(value, page):
    """Format `value` the way the page wrote its number: same decimals, same thousands
    commas, element by element for a list such as '[0.7311, 0.2689, 0, 0]'."""
    if isinstance(value, str):
        return value
    if isinstance(value, Fraction):
        return str(value)
    if page.startswith("["):
        parts = re.split(r",\s*", page[1:-1])
        if len(value) != len(parts):  # another length than the page's (it disagrees): the first one's precision
            parts = [parts[0]] * len(value)
        return "[" + ", ".join(like(v, p) for v, p in zip(value, parts, strict=True)) + "]"
    decimals = len(page.split(".")[1]) if "." in page else 0
    text = f"{float(value) + 0.0:,.{decimals}f}" if "," in page else f"{float(value) + 0.0:.{decimals}f}"
    return "0" + text[2:] if text.startswith("-0") and float(text) == 0 else text


@dataclass(frozen=True)
class Finding:
    """What one measurement saw in one world: `seen`, in words, and `as_page`, whether
    that world behaves the way the page says the real thing does."""
    seen: str
    as_page: bool


def _wrapped(text, first, rest):
    """One long line as lines of at most WIDTH characters, indented by `first`, then `rest`.
    A bracketed list such as [1, 2, 3, 4] is never split, nor "word 3" from its number."""
    glued = re.sub(r"\[[^\]]*\]", lambda bracket: bracket.group().replace(" ", "\0"), text)
    glued = re.sub(r"(\w) (?=\d)", "\\1\0", glued)
    return textwrap.fill(glued, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False).replace("\0", " ")


AS_THE_PAGE_SAYS = "the belief is wrong, as the page says"
CONTRADICTS = "CONTRADICTS THE PAGE"
NO_CONTRAST = "THE EXPERIMENT CANNOT TELL THE REAL THING FROM THE BELIEF'S VERSION"


def verdict(page_world, belief_world):
    """The verdict on one belief, from the same measurement run in both worlds. The page
    is upheld only if its world (the real thing) behaves as the page says AND the belief's
    world does not: a measurement that calls both worlds alike has shown nothing."""
    if not page_world.as_page:
        return CONTRADICTS
    if belief_world.as_page:
        return NO_CONTRAST
    return AS_THE_PAGE_SAYS


class Ledger:
    def __init__(self):
        self.agree, self.disagree, self.known_page_errors, self.not_computed = 0, 0, 0, 0
        self.upheld, self.contradicted, self.undecided, self.untestable = 0, 0, 0, 0
        self.title = ""  # the section the values recorded now belong to

    def section(self, title):
        self.title = title
        print(f"\n{title}")

    def two_worlds(self, title, real_things):
        """The heading of a mistakes script: what each belief's experiment does."""
        print(title)
        print("Each belief gets one measurement, run twice: on the real thing, as the page describes it")
        print(f"(torch's own {real_things}), and on a version built to behave as the belief says.")
        print("The verdict comes from what the measurement saw in the two runs.")

    def check(self, what, value, page, page_error=None):
        """Print the computed value at the page's precision beside the page's value.
        page_error: why the page's value is known to be wrong (shown, not counted as a failure)."""
        shown = like(value, page)
        threshold = f"equal to the page's {page} at its precision"
        if shown == page:
            self.agree += 1
            mark, holds = "agree", True
        elif page_error:
            self.known_page_errors += 1
            mark, holds = f"PAGE DIFFERS ({page_error})", None
            threshold = f"the page's {page} is known to be wrong: {page_error}"
        else:
            self.disagree += 1
            mark, holds = "DISAGREE", False
        self._print(what, shown, f"page {page}", mark)
        record(f"{self.title}: {what}", holds, value=shown, threshold=threshold)

    def within(self, what, value, band, decimals=2):
        """A value the page gives in words (`what` quotes them: "about twice"): the computed
        value at `decimals`, beside the band (low, high) those words are judged by."""
        low, high = band
        holds = low <= value <= high
        if holds:
            self.agree += 1
        else:
            self.disagree += 1
        self._print(what, f"{value:.{decimals}f}", f"judged {low:g} to {high:g}", "agree" if holds else "DISAGREE")
        record(f"{self.title}: {what}", holds, value=value, threshold=f"between {low:g} and {high:g}")

    @staticmethod
    def _print(what, shown, page, mark):
        """'what: computed shown; page; mark', the answer (and then the page's side) on lines
        of their own where one line would be longer than WIDTH."""
        line = f"  {what}: computed {shown}; {page}; {mark}"
        if len(line) > WIDTH:  # the answer on a line of its own, under its question
            line = f"  {what}:\n      computed {shown}; {page}; {mark}"
        if max(map(len, line.splitlines())) > WIDTH:  # and the page's value on one more
            line = f"  {what}:\n      computed {shown};\n      {page}; {mark}"
        print(line)

    def skip(self, what, why):
        """A page answer this run cannot compute: say why instead of printing the answer."""
        self.not_computed += 1
        line = f"  {what}: not computed: {why}"
        print(line if len(line) <= WIDTH else f"  {what}:\n      not computed: {why}")
        record(f"{self.title}: {what}", None, why=why)

    def belief(self, number, belief, experiment, page_world, belief_world):
        """One "Mistakes people make" bullet: the belief, the experiment, what the same
        measurement saw in each world, and the verdict.

        page_world, belief_world: (label, Finding). The page's world is the one the page
        describes (the real thing, where torch has it); the belief's world is the one in
        which the belief would hold."""
        (page_label, page_found), (belief_label, belief_found) = page_world, belief_world
        said = verdict(page_found, belief_found)
        if said == AS_THE_PAGE_SAYS:
            self.upheld += 1
        elif said == CONTRADICTS:
            self.contradicted += 1
        else:
            self.undecided += 1
        record(f"belief: {belief}", {AS_THE_PAGE_SAYS: True, CONTRADICTS: False}.get(said),
               value=f"the real thing as the page says: {page_found.as_page}; the belief's version as the page says: "
               f"{belief_found.as_page}",
               threshold="the real thing behaves as the page says and the belief's version does not")
        print(f"\n{number}. Belief: {belief}")
        for line in (f"Experiment: {experiment}", f"As the page says ({page_label}): {page_found.seen}",
                     f"As the belief says ({belief_label}): {belief_found.seen}", f"Verdict: {said}"):
            print(_wrapped(line, "   ", "      "))

    def untested(self, bullet, why):
        """A bullet no computation here can settle: say so, and why."""
        self.untestable += 1
        print(_wrapped(f"- \"{bullet}\": {why}", "  ", "    "))
        record(f"bullet: {bullet}", None, why=why)

    def elsewhere(self, bullet, lesson, checks, shows):
        """A bullet a run of another lesson answers: the command a learner runs and what it
        shows. checks: {that lesson's check, by its name in its .checks.txt: the outcome this
        line reports}; tests/test_mistakes.py holds them to that lesson's default run."""
        line = f'- "{bullet}": python {lesson}.py shows {shows}'.replace("python ", "python\0")  # a command stays whole
        print(_wrapped(line, "  ", "    "))
        record(f"bullet: {bullet}", None, why=f"run by {lesson}: " + "; ".join(f'"{c}" {o}' for c, o in checks.items()))

    def finish(self):
        """Print the summary line; return 1 if anything disagreed with the page (or an
        experiment could not tell its worlds apart), else 0."""
        if self.upheld or self.contradicted or self.undecided:
            undecided = f"; could not tell the two apart: {self.undecided}" if self.undecided else ""
            print(f"\nbeliefs tested: {self.upheld + self.contradicted + self.undecided}; refuted as the page "
                  f"says: {self.upheld}; contradicting the page: {self.contradicted}{undecided}")
            if self.untestable:
                print(f"bullets no computation here can settle (listed above): {self.untestable}")
            return 1 if self.contradicted or self.undecided else 0
        recomputed = self.agree + self.disagree + self.known_page_errors
        print(f"\nworked values recomputed: {recomputed}; agree with the page: {self.agree}; "
              f"page known to differ: {self.known_page_errors}; disagree: {self.disagree};\n"
              f"not computable from the page: {self.not_computed}")
        return 1 if self.disagree else 0
