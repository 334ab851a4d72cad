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
from tests.conftest import SCRATCH, lesson_run

FIGURES = {
    "week1/10_slow_chain_path_length": "week1/figures/slow_chain.png",
    "week1/11_softmax_saturation": "week1/figures/softmax_saturation.png",
    "week2/01_causal_mask": "week2/figures/causal_mask.png",
    "week2/04_norm_axes": "week2/figures/norm_axes.png",
    "week2/06_warmup_schedule": "week2/figures/warmup_schedule.png",
    "week2/15_residual_gradient_depth": "week2/figures/residual_gradient_depth.png",
}


REGENERATED = {name: (lesson_run(name, "--figure", SCRATCH / f"{name.split('/')[1]}.png"),
                       SCRATCH / f"{name.split('/')[1]}.png") for name in FIGURES}


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
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.reads(REGENERATED[name][0]))
                                  for name in FIGURES])
def test_figure_matches_committed_png(runs, name, tmp_path):
    run, png = REGENERATED[name]
    result = runs[run]
    assert result.returncode == 0, result.stderr
    committed = committed_png(FIGURES[name], tmp_path)
    assert committed.exists(), f"{FIGURES[name]} is not in the repo"
    # tol is the RMS of pixel differences on a 0-255 scale: 2 lets a font's anti-aliasing
    # drift but catches any change a reader could see.
    assert compare_images(str(committed), str(png), tol=2) is None


def test_where_a_default_run_saves_and_how_it_names_the_file(tmp_path, monkeypatch):
    """Outside the check a default run saves over the committed figure; under it (OUTPUT_ROOT
    set), at the same relative place under the check's folder. The `saved` line names the file
    from the folder the script was run in."""
    from common import OUTPUT_ROOT, REPO_ROOT
    from common.cli import Lesson, int_range, knob
    from common.figures import figure_path, plt, save_figure

    def parse(*argv):
        return Lesson(__file__, ("week1", 1), "a lesson", [knob("--size", type=int_range(1, 9), default=4,
                                                                help="a size")], figure="a figure").args(argv)
    committed = REPO_ROOT / "week2" / "figures" / "causal_mask.png"
    monkeypatch.delenv(OUTPUT_ROOT, raising=False)
    assert figure_path(parse(), committed) == committed
    assert figure_path(parse("--size", "5"), committed) is None
    assert figure_path(parse("--size", "5", "--figure", str(tmp_path / "mine.png")), committed) == tmp_path / "mine.png"
    monkeypatch.setenv(OUTPUT_ROOT, str(tmp_path))
    path = figure_path(parse(), committed)
    assert path == tmp_path / "week2" / "figures" / "causal_mask.png"
    monkeypatch.chdir(tmp_path)
    assert save_figure(plt.figure(), path) == "saved week2/figures/causal_mask.png"
    monkeypatch.chdir(tmp_path / "week2")
    assert save_figure(plt.figure(), path) == "saved figures/causal_mask.png"
    assert path.read_bytes().startswith(b"\x89PNG")


(SCRATCH / "a file").write_text("")
UNWRITABLE = [lesson_run(name, "--figure", path) for name in FIGURES
              for path in (SCRATCH / "figure.jpg", SCRATCH / "a file" / "inside.png")]


@pytest.mark.reads(*UNWRITABLE)
def test_an_unwritable_figure_path_is_a_usage_error(runs):
    for result in map(runs.__getitem__, UNWRITABLE):
        assert result.returncode == 2 and result.stdout == ""
        assert "error: argument --figure" in result.stderr and "Traceback" not in result.stderr


def test_an_interrupted_save_leaves_the_old_figure_whole(tmp_path):
    """Ctrl-C in the middle of writing a PNG: the file keeps its old bytes, no temporary is left."""
    from common.figures import plt, save_atomically

    target = tmp_path / "figure.png"
    target.write_bytes(b"old figure")
    fig = plt.figure()

    def interrupted_savefig(file, **kwargs):
        file.write(b"\x89PNG half")
        raise KeyboardInterrupt

    fig.savefig = interrupted_savefig
    with pytest.raises(KeyboardInterrupt):
        save_atomically(fig, target)
    assert target.read_bytes() == b"old figure"
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]
    plt.close(fig)


def test_the_check_writes_figures_under_build_and_names_them_from_its_folder(outputs):
    """Under run_all a default run saves into build/check/, at the same relative place."""
    for name, relative in FIGURES.items():
        assert f"saved {relative}" in outputs[name].stdout.splitlines()
        assert (run_all.check_folder() / relative).exists()
