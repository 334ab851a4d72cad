"""Figure saving: Agg backend (no display needed), fixed size and metadata, so a figure
comes out with the same pixels on every run; paths are printed relative to the repo root."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

REPO_ROOT = Path(__file__).resolve().parents[1]
DPI = 100


def save_figure(fig, path):
    """Write fig as PNG to path, close it, and return the path as a reader should see it."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:  # saved outside the repo (e.g. by a test)
        return str(path)
