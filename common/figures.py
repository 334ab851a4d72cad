"""Figure saving: Agg backend (no display needed), fixed size and metadata, so a figure
comes out with the same pixels on every run; paths are printed relative to the repo root.

A default run writes a lesson's figure to its committed place in the repo. A run with
other knobs never does: it saves only where --figure says."""
from pathlib import Path

from common import REPO_ROOT
from common.cli import at_defaults

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

DPI = 100


def figure_path(parser, args, default):
    """Where this run saves its figure: --figure if given; else `default` when every other
    knob has its default value; else None (not saved, so a committed figure stays as it is)."""
    if args.figure is not None:
        return args.figure
    return default if at_defaults(parser, args) else None


def save_figure(fig, path):
    """Write fig as PNG to path (if any) and close it; return the line to print."""
    if path is None:
        plt.close(fig)
        return "figure not saved: these settings are not the defaults (add --figure PATH.png to save it)"
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    try:
        return f"saved {path.relative_to(REPO_ROOT).as_posix()}"
    except ValueError:  # saved outside the repo (e.g. by a test)
        return f"saved {path}"
