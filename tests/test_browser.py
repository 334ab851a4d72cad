"""The page notebooks in a real browser, as a learner uses them, in JupyterLab and in Notebook 7:
one Jupyter server on 127.0.0.1 serves both (JupyterLab at /lab, Notebook 7 at /notebooks/...), and
the machine's own chromium (headless) is driven through its chromedriver.

In JupyterLab, in each page notebook the set-up cell runs, then one live cell (the ipywidgets route:
the kernel's own inline backend); a drag of its first slider, an arrow key and Shift+arrow move the
view, and its picture then says what the lesson's own view says at the slider's new value (its
titles, as alt text). In Notebook 7, which keeps the plain arrows for moving between cells, the
same with Shift+arrow, as the view's caption says. In both, with the output area 1,000 px wide:
week2/01's view and week1/15's (its pickers beside the picture, all of it on the screen at once,
a click on another adjective moving it) fit it, and so do the figures the cells saved. Then in
week2's notebook `%matplotlib widget` typed in a cell above the causal mask's, which runs again:
a drag of T and an arrow key (Shift+arrow in Notebook 7) move the figure's own sliders (ipympl),
the figure the browser draws is matplotlib's own full draw of the view at that T, pixel for pixel,
and it fits the output area. And in both, Check yourself's quiz in a cell: answers typed in the box
its input() opens below the cell are marked, q ends it with the score, and the kernel goes on.

The other cells run in a kernel in tests/test_notebooks.py; here the browser's part is tested.
The notebooks are served from a scratch copy of the lessons (nothing the server or a lesson
writes lands in the repository); the screenshots are kept in build/screenshots/.
Skipped, saying why, where chromium, chromedriver or the test tools are missing.
"""
import base64
import importlib.util
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import common.live as live
import common.notebook as notebook
from common import OUTPUT_ROOT
from common.quiz import SCORE

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
MISSING = [tool for tool in ("selenium", "jupyterlab", "notebook", "ipywidgets", "ipympl")
           if importlib.util.find_spec(tool) is None]
if MISSING:
    pytest.skip(f"{', '.join(MISSING)} not installed: pip install -r requirements-test.txt", allow_module_level=True)

from PIL import Image  # noqa: E402  (matplotlib's own dependency)
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from tests.drawing import QUICKER  # noqa: E402
from tests.notebook_views import drawn_plainly, let_go, open_view  # noqa: E402

FRONT_ENDS = ["JupyterLab", "Notebook 7"]
OUTPUT_WIDTH = 1000  # pixels: a notebook's output area on a laptop (the views are drawn at most 980 wide)
WINDOW_HEIGHT = 800  # pixels: a laptop's browser window, about (a 1,080 px screen less its bars)
SCROLL_OUTPUT = "@jupyter-notebook/notebook-extension:scroll-output"  # Notebook 7's Auto Scroll Outputs

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
                 "--JupyterNotebookApp.expose_app_in_browser=True",
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

    def url(self, page):
        return f"http://127.0.0.1:{self.port}/{page}?token={self.token}"

    def open(self, path, front="JupyterLab"):
        """Open the notebook in a front end (in JupyterLab as a double click in the file browser
        does; Notebook 7 gives it a page of its own); its panel's element once its kernel is idle."""
        if front == "JupyterLab":
            if "/lab" not in self.browser.current_url:
                self.browser.get(self.url("lab"))
            wait_for("JupyterLab's page", lambda: self.browser.execute_script(
                "return window.jupyterapp && window.jupyterapp.shell && document.querySelector('#jp-main-dock-panel')"))
            self.browser.execute_script("window.jupyterapp.shell.collapseLeft()")  # (the file browser: room)
            self.browser.execute_script(
                "window.jupyterapp.commands.execute('docmanager:open', {path: arguments[0]})", path)
        else:
            self.browser.get(self.url(f"notebooks/{path}"))
        wait_for(f"{path}'s kernel", lambda: self.status(path) == "idle")
        return self.browser.execute_script(f"const w = {PANEL}; return w.node", path)

    def fresh(self):
        """Every kernel shut down (their sessions ended), and the page left: a notebook opened next
        starts a kernel of its own, in either front end."""
        self.browser.get("about:blank")
        api = f"http://127.0.0.1:{self.port}/api/sessions"
        sessions = json.load(urllib.request.urlopen(f"{api}?token={self.token}", timeout=10))
        for session in sessions:
            request = urllib.request.Request(f"{api}/{session['id']}?token={self.token}", method="DELETE")
            urllib.request.urlopen(request, timeout=30)

    def setting(self, plugin, **values):
        """Save a front end's settings for one plugin, as its Settings Editor saves them (a page
        opened next reads them)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/lab/api/settings/{plugin}?token={self.token}", method="PUT",
            data=json.dumps({"raw": json.dumps(values)}).encode(), headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30)

    def fit_output(self, cell, width=OUTPUT_WIDTH, height=WINDOW_HEIGHT):
        """The window resized so that the cell's output area (where a figure or a view stands) is
        `width` pixels wide, and `height` pixels tall."""
        output = cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output")
        for _ in range(12):  # (measured, then corrected: Notebook 7 keeps its width in a wide window, up to a point)
            now = output.rect["width"]
            if round(now) == width:
                return
            size = self.browser.get_window_size()
            self.browser.set_window_size(size["width"] + round(width - now), height)
            time.sleep(0.5)
        assert round(output.rect["width"]) == width

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

    def screenshot(self, element, name, window=False):
        """The element (or the whole window, the element at its top) as a PNG in SCREENSHOTS."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
        if window:
            time.sleep(1)  # (a notebook lays out the cells scrolled into view)
            self.browser.save_screenshot(str(SCREENSHOTS / name))
        else:
            element.screenshot(str(SCREENSHOTS / name))


@pytest.fixture(scope="module")
def lab():
    started = Lab(SCRATCH / "browser")
    yield started
    started.close()


def set_up(lab, path, front="JupyterLab"):
    panel = lab.open(path, front)
    cell = lab.cell(panel, "# Set-up: run this cell first.")
    lab.run(path, cell)
    assert cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text == f"lessons in {lab.root}"
    return panel, cell


def seen(cell):
    """What the ipywidgets view of a cell shows: (its picture's alt text, each slider's value,
    each readout beside a slider)."""
    alt = cell.find_element(By.CSS_SELECTOR, ".widget-html img").get_attribute("alt")
    values = [float(h.get_attribute("aria-valuenow")) for h in cell.find_elements(By.CSS_SELECTOR, ".noUi-handle")]
    readouts = [label.text for label in cell.find_elements(By.CSS_SELECTOR, ".widget-hbox > .widget-label")]
    return alt, values, readouts


def says_what_the_lesson_says(monkeypatch, name, shown):
    """The view's picture and readouts, as the browser shows them at its sliders' values, are what
    the lesson's own view says there (built here, moved to those values)."""
    view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        for control, value in zip(driven.controls.values(), shown[1], strict=True):
            let_go(control, type(control.value)(value))
        assert shown[0] == notebook.titles(view.fig)
        assert shown[2] == [label.value for label in driven.readouts.values()]


def drag_a_third(lab, cell, opened):
    """Drag the view's first slider a third of its track, towards its far end; what it shows then."""
    handle = cell.find_elements(By.CSS_SELECTOR, ".noUi-handle")[0]
    track = cell.find_elements(By.CSS_SELECTOR, ".noUi-target")[0]
    low, high = float(handle.get_attribute("aria-valuemin")), float(handle.get_attribute("aria-valuemax"))
    direction = 1 if opened[1][0] <= (low + high) / 2 else -1
    lab.browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", track)
    ActionChains(lab.browser).click_and_hold(handle).move_by_offset(direction * track.size["width"] // 3, 0) \
        .release().perform()
    dragged = wait_for("the drag to move the picture", lambda: (now := seen(cell))[0] != opened[0] and now)
    assert dragged[1][0] != opened[1][0]
    return dragged, handle, (Keys.ARROW_RIGHT if dragged[1][0] < high else Keys.ARROW_LEFT)


def step(lab, cell, handle, key, before, shift=False):
    """The slider's handle clicked, then `key` (with Shift held); what the view shows once the
    picture has moved."""
    ActionChains(lab.browser).click(handle).perform()
    lab.keys(Keys.SHIFT, key) if shift else lab.keys(key)
    return wait_for("the key to move the picture", lambda: (now := seen(cell))[0] != before[0] and now)


@pytest.mark.parametrize("page", list(generate.PAGES))
def test_a_page_notebooks_view_follows_a_drag_and_an_arrow_key(lab, page, monkeypatch):
    """JupyterLab: the set-up finds the lessons; the live cell shows its picture and controls; a
    drag of the first slider a third of its track away, then an arrow key, then Shift+arrow (the
    caption's key for Notebook 7, which works here too), each move the picture by a step, which
    then says what the lesson's own view says at the values the sliders show."""
    name, path = LIVE_CELL[page], f"notebooks/{generate.PAGES[page][0]}"
    assert name not in QUICKER  # (the view is opened here at the cell's own settings)
    panel, _ = set_up(lab, path)
    cell = lab.cell(panel, f"%run {name}.py --live")
    lab.run(path, cell)
    opened = wait_for("the view", lambda: seen(cell))
    dragged, handle, key = drag_a_third(lab, cell, opened)
    handle.send_keys(key)
    stepped = wait_for("the key to move the picture", lambda: (now := seen(cell))[0] != dragged[0] and now)
    assert abs(stepped[1][0] - dragged[1][0]) == 1  # one step
    shifted = step(lab, cell, handle, key, stepped, shift=True)
    assert abs(shifted[1][0] - stepped[1][0]) == 1
    lab.screenshot(cell.find_element(By.CSS_SELECTOR, ".widget-vbox"), f"{page}_ipywidgets.png")
    says_what_the_lesson_says(monkeypatch, name, shifted)


def test_in_notebook_7_a_view_follows_a_drag_and_shift_arrow_as_its_caption_says(lab, monkeypatch):
    """Notebook 7 runs its shortcuts before the slider sees a key, and takes the plain arrows for
    moving between cells: a plain arrow leaves T where it is (the notebook's focus moves on); with
    Shift held, as the view's caption says, the arrow moves T one step."""
    lab.fresh()
    name, path = "week2/01_causal_mask", "notebooks/week2.ipynb"
    panel, _ = set_up(lab, path, "Notebook 7")
    cell = lab.cell(panel, f"%run {name}.py --live")
    lab.run(path, cell)
    opened = wait_for("the view", lambda: seen(cell))
    assert notebook.KEYS in cell.find_element(By.CSS_SELECTOR, ".widget-vbox").text
    dragged, handle, key = drag_a_third(lab, cell, opened)
    ActionChains(lab.browser).click(handle).perform()
    lab.keys(key)
    time.sleep(2)  # (time for a move to come back, had there been one)
    assert seen(cell) == dragged and "noUi-handle" not in lab.browser.execute_script(
        "return document.activeElement.className")
    stepped = step(lab, cell, handle, key, dragged, shift=True)
    assert abs(stepped[1][0] - dragged[1][0]) == 1  # one step
    says_what_the_lesson_says(monkeypatch, name, stepped)


def fits(lab, output):
    """The cell's output area, at its width, shows all of it: nothing wider than it (each image
    drawn at its own size, or scaled down to fit), nothing to scroll sideways."""
    return lab.browser.execute_script("""
        const area = arguments[0], box = area.getBoundingClientRect();
        const inside = Array.from(area.querySelectorAll('img, canvas, .widget-vbox'))
            .every(e => e.getBoundingClientRect().right <= box.right + 0.5 && e.getBoundingClientRect().width > 0);
        return inside && area.scrollWidth <= area.clientWidth;""", output)


@pytest.mark.parametrize("front", FRONT_ENDS)
def test_with_a_1000_px_output_area_the_views_and_figures_fit_and_the_pickers_show_with_their_picture(
        lab, front, monkeypatch):
    """With the output area 1,000 px wide (the window 800 px tall): week1/15's saved figure (1,560
    px) is scaled down to fit, and its view, pickers beside the picture, fits it and the screen at
    once (in Notebook 7 once Auto Scroll Outputs is off: by default it puts this long output in a
    box 312 px tall); a click on another adjective moves the picture, which says what the lesson's
    own view says there. week2/01's figure and view fit it. Each view's picture is drawn at its
    own size (not scaled down)."""
    lab.fresh()
    try:
        for name, page in (("week1/15_context_decides", "eli5"), ("week2/01_causal_mask", "week2")):
            fits_the_output_area(lab, front, name, page, monkeypatch)
    finally:
        lab.setting(SCROLL_OUTPUT)



def fits_the_output_area(lab, front, name, page, monkeypatch):
    path = f"notebooks/{generate.PAGES[page][0]}"
    panel, set_up_cell = set_up(lab, path, front)
    lab.fit_output(set_up_cell)
    cell = lab.cell(panel, f"%run {name}.py --live")
    lab.run(path, cell)
    if front == "Notebook 7" and name == "week1/15_context_decides":
        # Notebook 7 puts an output over 1,820 px tall (this one: its lines, its figure, its view) in a box 312 px
        # tall, to scroll; as the README says, Auto Scroll Outputs turned off once shows it whole.
        assert "jp-mod-outputsScrolled" in wait_for("the view", lambda: seen(cell) and cell).get_attribute("class")
        lab.setting(SCROLL_OUTPUT, autoScrollOutputs=False)
        panel, _ = set_up(lab, path, front)  # (the page opened again reads it)
        cell = lab.cell(panel, f"%run {name}.py --live")
        lab.run(path, cell)
    wait_for("the view", lambda: seen(cell))
    assert "jp-mod-outputsScrolled" not in cell.get_attribute("class")
    output, view = (cell.find_element(By.CSS_SELECTOR, css) for css in (".jp-OutputArea", ".widget-vbox"))
    picture = view.find_element(By.CSS_SELECTOR, ".widget-html img")
    lab.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", view)
    assert fits(lab, output), f"{name} in {front}"
    assert picture.get_property("naturalWidth") <= notebook.WIDTH
    assert round(picture.rect["width"]) == picture.get_property("naturalWidth")  # (at its own size)
    lab.screenshot(view, f"{name.split('/')[1]}_{front.replace(' ', '_')}_1000px.png", window=True)
    if name == "week1/15_context_decides":
        figure = cell.find_elements(By.CSS_SELECTOR, ".jp-RenderedImage img")[0]
        assert figure.get_property("naturalWidth") > OUTPUT_WIDTH >= figure.rect["width"]
        pickers = view.find_elements(By.CSS_SELECTOR, ".widget-radio-box")
        assert all(p.rect["x"] >= picture.rect["x"] + picture.rect["width"] for p in pickers)  # beside it
        lab.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", view)
        assert lab.browser.execute_script(  # all of it on the screen at once
            "return arguments[0].getBoundingClientRect().bottom <= window.innerHeight", view)
        pick_another(lab, cell, view, monkeypatch, name)


def pick_another(lab, cell, view, monkeypatch, name):
    """A click on an adjective not picked (the last picker's): the picture moves, and says what the
    lesson's own view says with the pickers where the browser shows them."""
    before = seen(cell)
    labels = view.find_elements(By.CSS_SELECTOR, ".widget-radio-box label")
    adjectives = view.find_elements(By.CSS_SELECTOR, ".widget-radio-box")[-1].find_elements(By.TAG_NAME, "label")
    next(label for label in adjectives if not label.find_element(By.TAG_NAME, "input").is_selected()).click()
    moved = wait_for("the click to move the picture", lambda: (now := seen(cell))[0] != before[0] and now)
    chosen = [label.text for label in labels if label.find_element(By.TAG_NAME, "input").is_selected()]
    shown_view, driven, _, stack = open_view(monkeypatch, name)
    with stack:
        for control in driven.controls.values():
            let_go(control, next(c for c in chosen if c in control.options))
        assert moved[0] == notebook.titles(shown_view.fig)


@pytest.mark.parametrize("front", FRONT_ENDS)
def test_under_ipympl_a_drag_and_an_arrow_key_move_the_figures_own_sliders(lab, front, monkeypatch):
    """week2's notebook: `%matplotlib widget` in a new cell above the causal mask's (as its
    intro says), then the causal mask again: the figure's own canvas, which fits a 1,000 px
    output area; T dragged from 4 to 9, then the right arrow key (Shift+right in Notebook 7):
    the browser draws what matplotlib draws of the view at T = 10."""
    lab.fresh()
    path = "notebooks/week2.ipynb"
    panel, set_up_cell = set_up(lab, path, front)
    lab.fit_output(set_up_cell)
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
    view, _, _, stack = open_view(monkeypatch, "week2/01_causal_mask", "module://ipympl.backend_nbagg")
    with stack:
        T = view.widgets["T"]
        width, height = events.size["width"], events.size["height"]
        assert (width, height) == view.fig.canvas.get_width_height()
        assert fits(lab, cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea")), front

        def at(value):  # where the knob stands at `value`, from the element's centre (selenium's origin)
            x, y = T.ax.transData.transform((value, 0.5))
            return int(x - width / 2), int((height - y) - height / 2)

        lab.browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", events)
        (x0, y0), (x1, _) = at(4), at(9)
        ActionChains(lab.browser).move_to_element_with_offset(events, x0, y0).click_and_hold() \
            .move_by_offset((x1 - x0) // 2, 0).move_by_offset(x1 - x0 - (x1 - x0) // 2, 0).release().perform()
        lab.keys(Keys.SHIFT, Keys.ARROW_RIGHT) if front == "Notebook 7" else lab.keys(Keys.ARROW_RIGHT)
        with live.window_style():
            T.set_val(10)
        expected = drawn_plainly(view)
        assert view.fig.axes[0].get_title() == "weights, T = 10: 45 grey cells blocked\n(T(T-1)/2 = 45)"

        def drawn():
            data = lab.browser.execute_script("return arguments[0].toDataURL('image/png')", picture)
            return np.asarray(Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))).convert("RGB"))

        try:
            wait_for("the browser to draw T = 10", lambda: np.array_equal(drawn(), expected), 30)
        finally:
            lab.screenshot(cell.find_element(By.CSS_SELECTOR, ".jupyter-matplotlib"),
                           f"week2_ipympl_{front.replace(' ', '_')}.png")


QUIZ = "week1/18_check_yourself.py --seed 5 --topic 5"  # (section 5's four questions, numbers fixed)


def answers(lab):
    """The `answer:` line of each question, as a plain run of the quiz's lesson prints them."""
    printed = subprocess.run([sys.executable, *QUIZ.split()], cwd=lab.root, capture_output=True, text=True,
                             check=True, timeout=WAIT).stdout
    return [line.split("answer: ", 1)[1] for line in printed.splitlines() if line.startswith("    answer: ")]


def boxes(cell):
    """The input() boxes shown below the cell (one the front end replaces while it is read is left out:
    the wait that reads them asks again)."""
    shown = []
    for box in cell.find_elements(By.CSS_SELECTOR, ".jp-Stdin-input"):
        try:
            if box.is_displayed():
                shown.append(box)
        except StaleElementReferenceException:
            pass
    return shown


@pytest.mark.parametrize("front", FRONT_ENDS)
def test_the_quiz_in_a_cell_takes_typed_answers_in_the_box_below_it_and_the_kernel_goes_on(lab, front):
    """A notebook of the set-up cell, `%run week1/18_check_yourself.py --quiz --seed 5 --topic 5`
    and `print(6*7)`: the quiz's cell runs, and the box below it (the kernel's input()) has the
    keys; question 1's answer (from a plain run of the lesson), Enter: `right`; question 2's answer
    with its first number one more, Enter: `not right`, then its worked steps; q, Enter: the score,
    1 right of 2 marked, then `stopped`; the kernel is idle, and the next cell prints 42."""
    lab.fresh()
    right, shown = answers(lab)[:2]
    wrong = re.sub(r"\d+", lambda number: str(int(number.group()) + 1), shown, count=1)
    page = json.loads((run_all.ROOT / "notebooks" / generate.PAGES["week1"][0]).read_text())
    set_up_cell = next(c for c in page["cells"] if "".join(c["source"]).startswith("# Set-up: run this cell first."))
    path = f"notebooks/quiz_{front.replace(' ', '_')}.ipynb"
    (lab.root / path).write_text(json.dumps({**page, "cells": [
        set_up_cell, generate.code(f"%run {QUIZ.replace(' --', ' --quiz --', 1)}", "quiz"),
        generate.code("print(6*7)", "next")]}))
    panel, _ = set_up(lab, path, front)
    cell = lab.cell(panel, "--quiz")
    prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
    before = prompt.text
    lab.browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cell)
    cell.find_element(By.CSS_SELECTOR, ".cm-content").click()
    lab.keys(Keys.SHIFT, Keys.ENTER)
    output, box = cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea"), None
    for typed, mark in ((right, f"  right: {right}"), (wrong, "  not right"), ("q", None)):
        box = wait_for("the quiz's box", lambda old=box: next(b for b in boxes(cell) if b != old))
        assert lab.browser.switch_to.active_element == box  # (the keys go to it, with no click)
        if typed == "q":
            lab.screenshot(cell, f"quiz_{front.replace(' ', '_')}_box.png")
        lab.keys(typed, Keys.ENTER)
        if mark:  # (the box's line is kept: "your answer: ", a space JupyterLab adds, what was typed)
            line = re.compile(rf"your answer: +{re.escape(typed)}\n{re.escape(mark)}")
            wait_for(repr(mark), lambda line=line: line.search(output.text))
    lab.ran(path, prompt, before)
    said = output.text
    lab.screenshot(cell, f"quiz_{front.replace(' ', '_')}.png")
    assert "Question 1 of 4" in said and "Question 2 of 4" in said and "Question 3 of 4" in said
    assert re.search(rf"your answer: +q\n{re.escape(SCORE.format(1, 2))}\nstopped$", said), said[-400:]
    assert not boxes(cell)  # (the last box is kept, hidden)
    assert lab.status(path) == "idle"
    after = lab.cell(panel, "print(6*7)")
    lab.run(path, after)
    assert after.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text == "42"
