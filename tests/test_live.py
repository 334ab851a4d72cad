"""--live: every widget drives the lesson's own functions, and what is drawn is what the
lesson computes for that setting (headless, with Agg); a window opens and closes where a
display can be had (Xvfb here); where none can, one line and status 2.

Each drawn value is compared with the printed line of a run of the lesson at the same
setting, so a window that stopped redrawing (or drew a second copy of the maths that
drifted) fails."""
import os
import re
import shutil
import subprocess
import sys
import time

from common import OUTPUT_ROOT

import pytest

import run_all
from tests.conftest import SCRIPTS, load_script

LIVE = [name for name, path in SCRIPTS.items() if "add_live(" in path.read_text(encoding="utf-8")]


@pytest.fixture(autouse=True)
def close_figures():
    from common.figures import plt

    yield
    plt.close("all")


def printed(monkeypatch, capsys, name, *argv):
    """What the lesson prints for these arguments (its main() run in-process, no window)."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS[name]), *argv])
    load_script(name).main()
    return capsys.readouterr().out


def titles(fig):
    return [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]


def test_at_least_ten_lessons_go_live():
    assert len(LIVE) >= 10, LIVE


# ---------------------------------------------------------------- week1/02: the d_k slider

def test_dot_product_variance_slider_draws_the_printed_variances(monkeypatch, capsys):
    name = "week1/02_dot_product_variance"
    view = load_script(name).live_view(42, 2_000)
    slider = view.widgets["d_k"]
    for j, d_k in ((6, 64), (2, 4), (10, 1024)):
        slider.set_val(j)
        line = printed(monkeypatch, capsys, name, "--d-k", str(d_k), "--pairs", "2000").splitlines()[1]
        var, scaled = re.search(r"Var\(q\.k\)=\s*([\d.]+) .* scaled_var=([\d.]+)", line).groups()
        raw_title, scaled_title = (ax.get_title() for ax in view.fig.axes[:2])
        assert raw_title == f"raw q.k: Var = {float(var):.2f}"
        assert float(scaled_title.split("= ")[1]) == pytest.approx(float(scaled), abs=0.006)
        assert slider.valtext.get_text() == str(d_k)


# ---------------------------------------------------------------- no window: one line, status 2

@pytest.mark.parametrize("name", LIVE)
def test_without_a_display_live_says_so_in_one_line(name):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    result = subprocess.run([sys.executable, str(SCRIPTS[name]), "--live"], env=env, capture_output=True,
                            text=True, timeout=300)
    if sys.platform.startswith("linux"):
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "--live cannot open a window here" in result.stderr
        assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- a real window, where one can open

@pytest.fixture(scope="module")
def display():
    """A display: the one this session has, or a virtual one (Xvfb) started for these tests."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    if not shutil.which("Xvfb"):
        pytest.skip("no display and no Xvfb to make one")
    server = subprocess.Popen(["Xvfb", ":97", "-screen", "0", "1280x800x24"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(1)
    yield ":97"
    server.terminate()
    server.wait()


# Runs the lesson with --live, closing its window one second after it opens.
CLOSE_SOON = """
import runpy, sys
import common.live as live
show = live.show

def show_briefly(view):
    timer = view.fig.canvas.new_timer(interval=1000)
    timer.add_callback(live.plt.close, view.fig)
    timer.start()
    show(view)

live.show = show_briefly
sys.argv = [sys.argv[1], "--live"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("name", LIVE)
def test_the_window_opens_after_the_printed_lines_and_closing_it_ends_the_run(display, name, outputs, tmp_path):
    """The printed lines are those of the run without --live (figures saved as the check saves
    them, under a scratch folder); then the window; closing it ends the script with status 0."""
    env = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, "DISPLAY": display,
           "PYTHONPATH": str(run_all.ROOT), OUTPUT_ROOT: str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", CLOSE_SOON, str(SCRIPTS[name])], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert run_all.outputs_match(outputs[name].stdout, result.stdout)


# ---------------------------------------------------------------- week1/07: click the stages

def test_one_block_stage_slider_draws_each_printed_sat_row(monkeypatch, capsys):
    name = "week1/07_eli5_one_block"
    out = printed(monkeypatch, capsys, name)
    rows = [line.split("] ", 1)[1].strip() for line in out.splitlines() if line.startswith("  ") and "[3 x " in line]
    view = load_script(name).live_view(4, 1, 16, 42)
    assert len(rows) == 8
    for i, row in enumerate(rows):
        view.widgets["stage"].set_val(i)
        assert view.fig.axes[0].get_title().endswith(f"'sat' row: {row}")
        shown = view.fig.axes[0].images[0].get_array()
        assert shown.shape[0] == 3


# ---------------------------------------------------------------- week1/11: saturation

def test_saturation_slider_draws_the_printed_means(monkeypatch, capsys):
    name = "week1/11_softmax_saturation"
    view = load_script(name).live_view(42, 32, 16)
    for j, d_k in ((2, 4), (8, 256), (9, 512)):
        view.widgets["d_k"].set_val(j)
        out = printed(monkeypatch, capsys, name, "--d-k", str(d_k), "1024", "--sentences", "32",
                      "--figure", os.devnull + ".png" if os.name != "nt" else "NUL.png")
        row = next(line for line in out.splitlines() if line.strip().startswith(f"{d_k} |"))
        numbers = re.findall(r"\d\.\d{3}", row)
        assert view.fig.axes[1].get_title().endswith(
            f"unscaled {numbers[0]}, {numbers[1]}; scaled {numbers[2]}, {numbers[3]}")
        heights = [bar.get_height() for bar in view.fig.axes[1].patches]
        assert [f"{h:.3f}" for h in heights] == numbers
