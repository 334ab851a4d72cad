"""The page notebooks in a real browser, as a learner uses them: JupyterLab serving them on
127.0.0.1, the machine's own chromium (headless) driven through its chromedriver. In each page
notebook the set-up cell runs, then one live cell (the ipywidgets route: the kernel's own inline
backend); a drag of its first slider and an arrow key move the view, and its picture then says
what the lesson's own view says at the slider's new value (its titles, as alt text). Then in
week2's notebook `%matplotlib widget` typed in a cell above the causal mask's, which runs again:
a drag of T and an arrow key move the figure's own sliders (ipympl), and the figure the browser
draws is matplotlib's own full draw of the view at that T, pixel for pixel.

The other cells run in a kernel in tests/test_notebooks.py; here the browser's part is tested.
The notebooks are served from a scratch copy of the lessons (nothing the server or a lesson
writes lands in the repository); the screenshots are kept in build/screenshots/.
Skipped, saying why, where chromium, chromedriver or the test tools are missing.
"""
import base64
import importlib.util
import io
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import common.notebook as notebook
from common import OUTPUT_ROOT

import numpy as np
import pytest

import run_all
from notebooks import generate
from tests.conftest import SCRATCH

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("no chromium and chromedriver on this machine (Debian: apt-get install chromium chromium-driver)",
                allow_module_level=True)
# (find_spec, not import: importing ipympl switches matplotlib to its backend, for every test after)
MISSING = [tool for tool in ("selenium", "jupyterlab", "ipywidgets", "ipympl")
           if importlib.util.find_spec(tool) is None]
if MISSING:
    pytest.skip(f"{', '.join(MISSING)} not installed: pip install -r requirements-test.txt", allow_module_level=True)

from PIL import Image  # noqa: E402  (matplotlib's own dependency)
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from tests.drawing import QUICKER  # noqa: E402
from tests.notebook_views import drawn_plainly, let_go, open_view  # noqa: E402

LIVE_CELL = {"week1": "week1/11_softmax_saturation", "week2": "week2/01_causal_mask", "eli5": "week1/07_eli5_one_block"}
SCREENSHOTS = run_all.ROOT / "build" / "screenshots"
WAIT = 120  # seconds, at most, for any one step (a kernel's first lesson imports torch)
# The chromium flags a closed machine needs (run as root: no sandbox), one size and colour profile.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1600,1400", "--force-device-scale-factor=1",
         "--force-color-profile=srgb"]
PANEL = "Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === arguments[0])"


def wait_for(what, condition, timeout=WAIT):
    """condition()'s first true value, asked every 0.1 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = condition()
        except Exception:  # (a page element replaced as it redraws)
            found = None
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout} s for {what}")


class Lab:
    """JupyterLab on 127.0.0.1 serving a scratch copy of the lessons, and chromium on it."""

    def __init__(self, folder):
        self.root = folder / "root"
        for part in ("week1", "week2", "common"):
            shutil.copytree(run_all.ROOT / part, self.root / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.png"))
        shutil.copy(run_all.ROOT / "run_all.py", self.root)
        (self.root / "notebooks").mkdir()
        for filename, _, _ in generate.PAGES.values():
            shutil.copy(run_all.ROOT / "notebooks" / filename, self.root / "notebooks")
        settings = folder / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')  # (no news prompt)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.token = secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
        env.update({"JUPYTER_CONFIG_DIR": str(folder / "config"), "JUPYTER_DATA_DIR": str(folder / "data"),
                    "JUPYTER_RUNTIME_DIR": str(folder / "runtime"), "OMP_NUM_THREADS": "1",
                    OUTPUT_ROOT: str(folder / "figures")})
        self.log = folder / "jupyterlab.log"
        with open(self.log, "wb") as log:
            self.server = subprocess.Popen(
                [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                 f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0", f"--ServerApp.token={self.token}",
                 f"--ServerApp.root_dir={self.root}", "--ServerApp.allow_root=True",
                 "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                 "--LabApp.extension_manager=readonly", f"--LabApp.user_settings_dir={folder / 'settings'}",
                 f"--LabApp.workspaces_dir={folder / 'workspaces'}", "--LabApp.expose_app_in_browser=True",
                 # should this test be killed before it stops the server: it ends by itself, idle
                 "--ServerApp.shutdown_no_activity_timeout=300", "--MappingKernelManager.cull_idle_timeout=240",
                 "--MappingKernelManager.cull_interval=60"],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
        self.browser = None
        wait_for("JupyterLab to answer", self.answers, 60)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + [f"--user-data-dir={folder / 'chromium'}"]:
            options.add_argument(flag)
        self.browser = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
        self.browser.get(f"http://127.0.0.1:{self.port}/lab?token={self.token}")
        wait_for("JupyterLab's page", lambda: self.browser.execute_script(
            "return window.jupyterapp && window.jupyterapp.shell && document.querySelector('#jp-main-dock-panel')"))
        self.browser.execute_script("window.jupyterapp.shell.collapseLeft()")  # (the file browser: room for figures)

    def answers(self):
        if self.server.poll() is not None:
            raise AssertionError(f"JupyterLab ended: {self.log.read_text(errors='replace')[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={self.token}", timeout=2)
            return True
        except OSError:
            return False

    def close(self):
        if self.browser is not None:
            self.browser.quit()
        self.server.terminate()  # (it shuts its kernels down)
        try:
            self.server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()

    def status(self, path):
        return self.browser.execute_script(f"const w = {PANEL}; return w && w.sessionContext.kernelDisplayStatus", path)

    def open(self, path):
        """Open the notebook (as a double click in the file browser does); its panel's element
        once its kernel is idle."""
        self.browser.execute_script("window.jupyterapp.commands.execute('docmanager:open', {path: arguments[0]})",
                                    path)
        wait_for(f"{path}'s kernel", lambda: self.status(path) == "idle")
        return self.browser.execute_script(f"const w = {PANEL}; return w.node", path)

    def cell(self, panel, text):
        """The code cell whose source holds `text`."""
        return wait_for(f"a cell with {text!r}", lambda: next(
            (cell for cell in panel.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")
             if text in cell.find_element(By.CSS_SELECTOR, ".jp-InputArea").text), None))

    def run(self, path, cell):
        """Shift+Enter in the cell, as a learner runs it; returns once it has run."""
        prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
        before = prompt.text
        self.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cell)
        cell.find_element(By.CSS_SELECTOR, ".cm-content").click()
        self.keys(Keys.SHIFT, Keys.ENTER)
        self.ran(path, prompt, before)

    def ran(self, path, prompt, before):
        wait_for("the cell to run", lambda: prompt.text != before and "*" not in prompt.text
                 and self.status(path) == "idle")

    def keys(self, *keys):
        """Keys pressed together (Shift+Enter), or one after another."""
        chain = ActionChains(self.browser)
        if keys[0] == Keys.SHIFT:
            chain.key_down(Keys.SHIFT).send_keys(*keys[1:]).key_up(Keys.SHIFT)
        else:
            chain.send_keys(*keys)
        chain.perform()

    def screenshot(self, element, name):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
        element.screenshot(str(SCREENSHOTS / name))


@pytest.fixture(scope="module")
def lab():
    started = Lab(SCRATCH / "browser")
    yield started
    started.close()


def set_up(lab, path):
    panel = lab.open(path)
    cell = lab.cell(panel, "# Set-up: run this cell first.")
    lab.run(path, cell)
    assert cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text == f"lessons in {lab.root}"
    return panel


def seen(cell):
    """What the ipywidgets view of a cell shows: (its picture's alt text, each slider's value,
    each readout beside a slider)."""
    alt = cell.find_element(By.CSS_SELECTOR, ".widget-html img").get_attribute("alt")
    values = [float(h.get_attribute("aria-valuenow")) for h in cell.find_elements(By.CSS_SELECTOR, ".noUi-handle")]
    readouts = [label.text for label in cell.find_elements(By.CSS_SELECTOR, ".widget-hbox > .widget-label")]
    return alt, values, readouts


@pytest.mark.parametrize("page", list(generate.PAGES))
def test_a_page_notebooks_view_follows_a_drag_and_an_arrow_key(lab, page, monkeypatch):
    """The set-up finds the lessons; the live cell shows its picture and controls; a drag of the
    first slider a third of its track away, then an arrow key, each move the picture, which
    then says what the lesson's own view says at the values the sliders show."""
    name, path = LIVE_CELL[page], f"notebooks/{generate.PAGES[page][0]}"
    assert name not in QUICKER  # (the view is opened here at the cell's own settings)
    panel = set_up(lab, path)
    cell = lab.cell(panel, f"%run {name}.py --live")
    lab.run(path, cell)
    opened = wait_for("the view", lambda: seen(cell))
    handle = cell.find_elements(By.CSS_SELECTOR, ".noUi-handle")[0]
    track = cell.find_elements(By.CSS_SELECTOR, ".noUi-target")[0]
    low, high = float(handle.get_attribute("aria-valuemin")), float(handle.get_attribute("aria-valuemax"))
    direction = 1 if opened[1][0] <= (low + high) / 2 else -1
    lab.browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", track)
    ActionChains(lab.browser).click_and_hold(handle).move_by_offset(direction * track.size["width"] // 3, 0) \
        .release().perform()
    dragged = wait_for("the drag to move the picture", lambda: (now := seen(cell))[0] != opened[0] and now)
    assert dragged[1][0] != opened[1][0]
    handle.send_keys(Keys.ARROW_RIGHT if dragged[1][0] < high else Keys.ARROW_LEFT)
    stepped = wait_for("the key to move the picture", lambda: (now := seen(cell))[0] != dragged[0] and now)
    assert abs(stepped[1][0] - dragged[1][0]) == 1  # one step
    lab.screenshot(cell.find_element(By.CSS_SELECTOR, ".widget-vbox"), f"{page}_ipywidgets.png")
    view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        for control, value in zip(driven.controls.values(), stepped[1], strict=True):
            let_go(control, type(control.value)(value))
        assert stepped[0] == notebook.titles(view.fig)
        assert stepped[2] == [label.value for label in driven.readouts.values()]


def test_under_ipympl_a_drag_and_an_arrow_key_move_the_figures_own_sliders(lab, monkeypatch):
    """week2's notebook: `%matplotlib widget` in a new cell above the causal mask's (as its
    intro says), then the causal mask again: the figure's own canvas; T dragged from 4 to 9,
    then the right arrow key: the browser draws what matplotlib draws of the view at T = 10."""
    path = "notebooks/week2.ipynb"
    panel = set_up(lab, path)
    cell = lab.cell(panel, "%run week2/01_causal_mask.py --live")
    lab.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cell)
    cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
    lab.keys(Keys.ESCAPE, "a")  # a cell above, in command mode
    added = wait_for("the new cell", lambda: (c := panel.find_element(By.CSS_SELECTOR, ".jp-Cell.jp-mod-active")) and
                     c.find_element(By.CSS_SELECTOR, ".cm-content").text == "" and c)
    prompt = added.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
    before = prompt.text
    lab.keys(Keys.ENTER, "%matplotlib widget")
    lab.keys(Keys.SHIFT, Keys.ENTER)  # runs it, and selects the causal mask's cell
    lab.ran(path, prompt, before)
    prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
    before = prompt.text
    lab.keys(Keys.SHIFT, Keys.ENTER)
    lab.ran(path, prompt, before)
    canvases = wait_for("the figure's canvas", lambda: cell.find_elements(
        By.CSS_SELECTOR, ".jupyter-matplotlib-canvas-div canvas"))
    picture, events = canvases  # (the figure's image, and the layer above it that takes the mouse)
    view, driven, _, stack = open_view(monkeypatch, "week2/01_causal_mask")
    with stack:
        T = view.widgets["T"]
        width, height = events.size["width"], events.size["height"]
        assert (width, height) == tuple(view.fig.bbox.size)

        def at(value):  # where the knob stands at `value`, from the element's centre (selenium's origin)
            x, y = T.ax.transData.transform((value, 0.5))
            return int(x - width / 2), int((height - y) - height / 2)

        lab.browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", events)
        (x0, y0), (x1, _) = at(4), at(9)
        ActionChains(lab.browser).move_to_element_with_offset(events, x0, y0).click_and_hold() \
            .move_by_offset((x1 - x0) // 2, 0).move_by_offset(x1 - x0 - (x1 - x0) // 2, 0).release().perform()
        ActionChains(lab.browser).send_keys(Keys.ARROW_RIGHT).perform()
        let_go(driven.controls["T"], 10)
        expected = drawn_plainly(view)
        assert view.fig.axes[0].get_title() == "weights, T = 10: 45 grey cells blocked\n(T(T-1)/2 = 45)"

        def drawn():
            data = lab.browser.execute_script("return arguments[0].toDataURL('image/png')", picture)
            return np.asarray(Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))).convert("RGB"))

        try:
            wait_for("the browser to draw T = 10", lambda: np.array_equal(drawn(), expected), 30)
        finally:
            lab.screenshot(cell.find_element(By.CSS_SELECTOR, ".jupyter-matplotlib"), "week2_ipympl.png")
