"""Argument types for the scripts' "Try it" flags: a bad value is a one-line usage error."""
import argparse
from pathlib import Path


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


def png_path(text):
    """An argparse type for a figure's output path: a .png file we can actually write."""
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
