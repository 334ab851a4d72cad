"""Each figure, regenerated, matches the committed PNG (so a change is never silent).

Pixels are compared only with the pinned matplotlib 3.11: versions 3.8 to 3.10 draw these
figures about a pixel differently (one figure is a pixel shorter), which is not a change
a reader could see but is one a pixel comparison would flag. Figures of trained models are
not compared by pixels at all (their pixels depend on the CPU); their tests check the data
they show."""
import subprocess

import matplotlib
import pytest
from matplotlib.testing.compare import compare_images

import run_all
from tests.conftest import SCRIPTS

FIGURES = {
    "week1/10_slow_chain_path_length": "week1/figures/slow_chain.png",
    "week1/11_softmax_saturation": "week1/figures/softmax_saturation.png",
    "week2/01_causal_mask": "week2/figures/causal_mask.png",
    "week2/04_norm_axes": "week2/figures/norm_axes.png",
    "week2/06_warmup_schedule": "week2/figures/warmup_schedule.png",
    "week2/15_residual_gradient_depth": "week2/figures/residual_gradient_depth.png",
}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    jobs = [(SCRIPTS[name], ["--figure", str(out / f"{name.split('/')[1]}.png")]) for name in FIGURES]
    results = run_all.run_scripts(jobs)
    return {name: (result, out / f"{name.split('/')[1]}.png")
            for name, result in zip(FIGURES, results, strict=True)}


def committed_png(relative, tmp_path):
    """The PNG as committed (git HEAD). `make check` rewrites the working-tree copy, so
    that copy cannot be the reference; outside a git checkout it is all there is."""
    try:
        data = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=run_all.ROOT,
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return run_all.ROOT / relative
    path = tmp_path / "committed.png"
    path.write_bytes(data)
    return path


@pytest.mark.skipif(not matplotlib.__version__.startswith("3.11."),
                    reason="the committed PNGs were drawn by the pinned matplotlib 3.11")
@pytest.mark.parametrize("name", FIGURES)
def test_figure_matches_committed_png(regenerated, name, tmp_path):
    result, png = regenerated[name]
    assert result.returncode == 0, result.stderr
    committed = committed_png(FIGURES[name], tmp_path)
    assert committed.exists(), f"{FIGURES[name]} is not in the repo"
    # tol is the RMS of pixel differences on a 0-255 scale: 2 lets a font's anti-aliasing
    # drift but catches any change a reader could see.
    assert compare_images(str(committed), str(png), tol=2) is None


@pytest.mark.parametrize("name", FIGURES)
def test_default_run_saves_the_figure_where_the_readme_shows_it(outputs, name):
    assert f"saved {FIGURES[name]}" in outputs[name].stdout.splitlines()
    assert (run_all.ROOT / FIGURES[name]).exists()


def test_an_unwritable_figure_path_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("")
    bad = [str(tmp_path / "figure.jpg"), str(tmp_path / "file" / "inside.png")]
    jobs = [(SCRIPTS[name], ["--figure", path]) for name in FIGURES for path in bad]
    for result in run_all.run_scripts(jobs):
        assert result.returncode == 2 and result.stdout == ""
        assert "error: argument --figure" in result.stderr and "Traceback" not in result.stderr
