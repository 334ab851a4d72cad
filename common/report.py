"""Bookkeeping for the scripts that hold the pages to account: the worked examples
(computed value next to the page's value) and the "Mistakes people make" experiments
(a belief, a computed verdict). Prints as it goes; finish() gives the exit status."""
import re
from fractions import Fraction


def like(value, page):
    """Format `value` the way the page wrote its number: same decimals, same thousands
    commas, element by element for a list such as '[0.7311, 0.2689, 0, 0]'."""
    if isinstance(value, str):
        return value
    if isinstance(value, Fraction):
        return str(value)
    if page.startswith("["):
        parts = re.split(r",\s*", page[1:-1])
        return "[" + ", ".join(like(v, p) for v, p in zip(value, parts, strict=True)) + "]"
    decimals = len(page.split(".")[1]) if "." in page else 0
    text = f"{float(value) + 0.0:,.{decimals}f}" if "," in page else f"{float(value) + 0.0:.{decimals}f}"
    return "0" + text[2:] if text.startswith("-0") and float(text) == 0 else text


class Ledger:
    def __init__(self):
        self.agree, self.disagree, self.known_page_errors, self.not_computed = 0, 0, 0, 0
        self.upheld, self.contradicted = 0, 0

    def section(self, title):
        print(f"\n{title}")

    def check(self, what, value, page, page_error=None):
        """Print the computed value at the page's precision beside the page's value.
        page_error: why the page's value is known to be wrong (shown, not counted as a failure)."""
        shown = like(value, page)
        if shown == page:
            self.agree += 1
            mark = "agree"
        elif page_error:
            self.known_page_errors += 1
            mark = f"PAGE DIFFERS ({page_error})"
        else:
            self.disagree += 1
            mark = "DISAGREE"
        print(f"  {what}: computed {shown}; page {page}; {mark}")

    def skip(self, what, why):
        """A page answer this run cannot compute: say why instead of printing the answer."""
        self.not_computed += 1
        print(f"  {what}: not computed: {why}")

    def belief(self, number, belief, experiment, result, page_is_right):
        """One "Mistakes people make" bullet: the belief, the experiment, and its verdict."""
        if page_is_right:
            self.upheld += 1
        else:
            self.contradicted += 1
        verdict = "the belief is wrong, as the page says" if page_is_right else "CONTRADICTS THE PAGE"
        print(f"\n{number}. Belief: {belief}\n   Experiment: {experiment}\n   Result: {result}\n"
              f"   Verdict: {verdict}")

    def finish(self):
        """Print the summary line; return 1 if anything disagreed with the page, else 0."""
        if self.upheld or self.contradicted:
            print(f"\nbeliefs tested: {self.upheld + self.contradicted}; refuted as the page says: "
                  f"{self.upheld}; contradicting the page: {self.contradicted}")
            return 1 if self.contradicted else 0
        recomputed = self.agree + self.disagree + self.known_page_errors
        print(f"\nworked values recomputed: {recomputed}; agree with the page: {self.agree}; "
              f"page known to differ: {self.known_page_errors}; disagree: {self.disagree}; "
              f"not computable from the page: {self.not_computed}")
        return 1 if self.disagree else 0
