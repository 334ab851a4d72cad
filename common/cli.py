"""Argument types for the scripts' "Try it" flags: a bad value is a one-line usage error."""
import argparse


def int_range(lo, hi):
    """An argparse type accepting integers lo..hi inclusive."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in {lo}..{hi}, got {value}")
        return value

    return parse


def float_range(lo, hi):
    """An argparse type accepting finite numbers lo <= x < hi."""

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not lo <= value < hi:
            raise argparse.ArgumentTypeError(f"expected a number in [{lo}, {hi}), got {text}")
        return value

    return parse


SEED = int_range(0, 2**32 - 1)
