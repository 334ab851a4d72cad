"""The page notebooks (notebooks/*.ipynb): what notebooks/generate.py writes from the lessons'
declarations, stored without outputs; and each one run in a real kernel (nbclient), cell by
cell, as a learner runs it in JupyterLab: every cell runs, a lesson's cell prints the lines its
golden file holds, a figure cell shows the figure it saved, a live cell shows its view, and a
training's window is an image refreshed while the cell trains.

One kernel per notebook, the three side by side. The trainings' cells (and week1/02's, whose
view computes every width) run shorter here (SHORTER): at their defaults the check runs them,
and they take seconds each. In week2's kernel, after its cells, a few more: Interrupt during a
training at its defaults (its window seen redrawn while it trains, not only at its first and
last step), the kernel's backend left as it was, a lesson imported and called, and `%matplotlib
widget`.
"""
import asyncio
import base64
import collections
import copy
import importlib.util
import json
import os
import queue
import re
import time
from pathlib import Path

from common import KERNEL_INSTALL, OUTPUT_ROOT, quiz

import pytest

import run_all
from check import comparing
from notebooks import generate
from tests.conftest import LESSONS, SCRATCH, load_script
from tests.drawing import QUICKER

# (find_spec, not import: importing ipympl switches matplotlib to its backend, for every test after)
MISSING = [tool for tool in ("nbclient", "nbformat", "ipykernel", "ipywidgets", "ipympl")
           if importlib.util.find_spec(tool) is None]
if MISSING:
    pytest.skip(f"{', '.join(MISSING)} not installed: pip install -r requirements-test.txt", allow_module_level=True)
import nbclient  # noqa: E402
import nbformat  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402 (nbclient's own)

NOTEBOOKS = {page: run_all.ROOT / "notebooks" / filename for page, (filename, _, _) in generate.PAGES.items()}
RUN = re.compile(r"^%run (week\d/\d\d_\w+)\.py(.*)$")
SHORTER = {**{name: " ".join(argv) for name, argv in QUICKER.items()},
           "week1/09_bottleneck_experiment": "--steps 10", "week2/12_train_tiny_transformer": "--steps 50",
           "week2/19_teacher_forcing_fast_and_stable": "--steps 10", "week1/17_unscaled_scores_stall": "--d-k 16",
           "week2/18_deep_stacks_train": "--depth 2"}
OUT = SCRATCH / "notebook_runs"  # where the kernels' lessons save their figures (never the repo's)
KERNEL_ENV = {**{k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")},
              **{k: v for k, v in run_all.FIXED_ENV.items() if k != "MPLBACKEND"},
              "OMP_NUM_THREADS": "1",  # three kernels on the machine's cores (a lesson prints the same on one)
              OUTPUT_ROOT: str(OUT), "LESSONS_RECORDS": "1"}  # (the check's records: its golden lines)
# The extra cells run in week2's kernel, after its own, by name.
BACKEND = "import matplotlib\nprint(matplotlib.get_backend())"
EXTRA = {
    "backend before": BACKEND,
    "interrupted": "%run week2/12_train_tiny_transformer.py --live",
    "answers": "print('answered')",
    "backend after": BACKEND,
    "imported": ("import importlib.util\n"
                 "spec = importlib.util.spec_from_file_location('causal_mask', 'week2/01_causal_mask.py')\n"
                 "causal_mask = importlib.util.module_from_spec(spec)\n"
                 "spec.loader.exec_module(causal_mask)\n"
                 "causal_mask.main()"),
    "argument list": "causal_mask.main(['--seed', '3', '--seq-len', '6'])",
    "help": "%run week2/01_causal_mask.py --help",
    "widget": "%matplotlib widget",
    "live under ipympl": "%run week2/01_causal_mask.py --live",
    "pyplot after": "import matplotlib.pyplot as plt\nprint(matplotlib.get_backend(), plt.get_fignums())",
}


class Watched(nbclient.NotebookClient):
    """nbclient's client, keeping every message each cell got (by the cell's index)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.messages = collections.defaultdict(list)

    def process_message(self, msg, cell, cell_index):
        self.messages[cell_index].append(msg)
        return super().process_message(msg, cell, cell_index)


def lesson_of(cell):
    """(lesson name, its arguments) of a cell that runs one, else None."""
    found = RUN.match(cell.source) if cell.cell_type == "code" else None
    return (found.group(1), found.group(2).split()) if found else None


async def run_notebook(page):
    """Run the page's notebook in a kernel of its own; returns (the client, its notebook with
    outputs, {extra cell's name: the cell}) (week2's kernel runs EXTRA after its cells)."""
    nb = nbformat.read(NOTEBOOKS[page], as_version=4)
    for cell in nb.cells:
        found = lesson_of(cell)
        if found and found[0] in SHORTER:
            cell.source += " " + SHORTER[found[0]]
    client = Watched(nb, timeout=300, allow_errors=True, kernel_name="python3",
                     resources={"metadata": {"path": str(NOTEBOOKS[page].parent)}})
    extra = {}
    async with client.async_setup_kernel(env=KERNEL_ENV):
        if page == "week2":
            extra["backend before"] = await run_cell(client, EXTRA["backend before"])
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and cell not in extra.values():
                await client.async_execute_cell(cell, index)
        if page == "week2":
            for name, source in list(EXTRA.items())[1:]:
                extra[name] = await (interrupted if name == "interrupted" else run_cell)(client, source)
    return client, nb, extra


async def run_cell(client, source):
    """Run one more cell, added at the notebook's end."""
    cell = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(cell)
    await client.async_execute_cell(cell, len(client.nb.cells) - 1)
    return cell


def images_shown(client, index):
    """How many times the cell's training window showed an image: its first, then each update."""
    return sum(1 for msg in client.messages[index] if msg["msg_type"] in ("display_data", "update_display_data")
               and "image/png" in msg["content"]["data"] and (msg["content"].get("transient") or {}).get("display_id"))


async def interrupted(client, source):
    """Run one more cell, and press Interrupt once its training window has been redrawn twice
    while it trains; returns the cell."""
    cell = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(cell)
    index = len(client.nb.cells) - 1
    running = asyncio.ensure_future(client.async_execute_cell(cell, index))
    deadline = time.monotonic() + 120
    while images_shown(client, index) < 3 and not running.done() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await client.km.interrupt_kernel()
    await running
    return cell


@pytest.fixture(scope="module")
def ran():
    """{page: (client, notebook with outputs, extra cells)}, the three notebooks run side by side."""
    async def run_all_pages():
        return await asyncio.gather(*(run_notebook(page) for page in NOTEBOOKS))

    return dict(zip(NOTEBOOKS, asyncio.run(run_all_pages()), strict=True))


def outputs(cell, kind):
    return [o for o in cell.outputs if o.output_type == kind]


def stream(cell, name):
    return "".join(o.text for o in outputs(cell, "stream") if o.name == name)


def lesson_cells(ran):
    """Every cell of the notebooks that runs a lesson: (page, name, arguments, the cell)."""
    for page, (_, nb, extra) in ran.items():
        for cell in nb.cells:
            found = lesson_of(cell)
            if found and cell not in extra.values():
                yield page, found[0], found[1], cell


# ---------------------------------------------------------------- stored

def test_the_notebooks_are_what_generate_writes_from_the_lessons(capsys):
    """Stale notebooks fail here: write them again with `python notebooks/generate.py`."""
    assert generate.main(["--check"]) == 0, capsys.readouterr().err


def test_a_stale_notebook_is_named(monkeypatch, capsys):
    written = generate.written()
    stale = next(iter(written))
    monkeypatch.setattr(generate, "written", lambda: {**written, stale: written[stale].replace("%run", "%run ")})
    assert generate.main(["--check"]) == 1
    assert capsys.readouterr().err == (f"stale: {stale.relative_to(run_all.ROOT).as_posix()}; "
                                       "write them with: python notebooks/generate.py\n")


def test_every_lesson_has_one_cell_in_its_pages_notebook_stored_without_outputs():
    runs = collections.Counter()
    for page, path in NOTEBOOKS.items():
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.cells[1].source.startswith("# Set-up: run this cell first.")
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None
            found = lesson_of(cell)
            if found:
                runs[found[0]] += 1
                assert LESSONS[found[0]].page[0] == page
                assert found[1] == (["--live"] if LESSONS[found[0]].live else [])
    assert runs == collections.Counter(LESSONS.keys())


def test_the_set_up_cell_says_in_one_line_where_the_lessons_are_not_beside_it(tmp_path):
    """Opened outside a clone, with the project's address still empty, the set-up cell says so in
    one line (nothing is installed or cloned)."""
    if generate.REPOSITORY:
        pytest.skip("REPOSITORY is set: the set-up cell clones the lessons")
    set_up = nbformat.read(NOTEBOOKS["week2"], as_version=4).cells[1].source
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(set_up)])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            ).execute(env=KERNEL_ENV)
    (said,) = nb.cells[0].outputs
    assert said.name == "stderr" and said.text.count("\n") == 1 and "open this notebook in a clone" in said.text
    assert list(tmp_path.iterdir()) == []


# A kernel's imports as if torch were not installed (the path finder that would find it, replaced).
WITHOUT_TORCH = """import importlib.machinery, sys
class WithoutTorch(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None if name.split(".")[0] == "torch" else super().find_spec(name, path, target)
sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = WithoutTorch"""
FORGET_FINDER = "sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != '_LessonsMissing']"


def test_a_kernel_without_torch_is_told_the_one_cell_that_installs_it_and_each_lesson_says_one_line():
    """The set-up cell prints the command that installs torch's CPU build, with its size and time;
    a lesson that needs torch then says in one line what to run (a lesson that does not, week1/02,
    runs); the learner's own `import torch` keeps Python's own error. Without the lessons' finder
    the lesson's cell would show the whole traceback."""
    set_up = nbformat.read(NOTEBOOKS["week1"], as_version=4).cells[1].source
    lesson, other = "%run week1/01_attention_from_scratch.py", "%run week1/02_dot_product_variance.py --pairs 2000"
    sources = [WITHOUT_TORCH, set_up, lesson, other, "import torch", FORGET_FINDER, lesson]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    nbclient.NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS["week1"].parent)}}).execute(env=KERNEL_ENV)
    _, set_up, lesson, other, own, _, unhelped = nb.cells
    assert stream(set_up, "stderr") == generate.NO_TORCH + "\n" and "190 MB" in generate.NO_TORCH
    assert KERNEL_INSTALL["torch"].split(": ", 1)[1] in generate.NO_TORCH  # (the same command: %pip install torch ...)
    (error,) = outputs(lesson, "error")
    assert error.traceback == [f"week1/01_attention_from_scratch.py: this kernel has no torch; "
                               f"{KERNEL_INSTALL['torch']}, then run this cell again"]
    assert stream(lesson, "stdout") == ""
    assert outputs(other, "error") == [] and "scaled_var" in stream(other, "stdout")
    (error,) = outputs(own, "error")
    assert error.ename == "ModuleNotFoundError" and error.evalue == "No module named 'torch'"
    (error,) = outputs(unhelped, "error")
    assert error.ename == "ModuleNotFoundError" and len(error.traceback) > 1


def test_once_the_project_has_an_address_each_notebook_and_the_readme_get_a_colab_badge(monkeypatch):
    readme = (run_all.ROOT / "README.md").read_text(encoding="utf-8")
    assert "colab.research.google.com" not in json.dumps(generate.notebook("week2", LESSONS))  # (no badge yet)
    assert "colab.research.google.com" not in generate.with_lessons(readme, LESSONS)
    monkeypatch.setattr(generate, "REPOSITORY", "someone/transformers-lessons")
    link = "https://colab.research.google.com/github/someone/transformers-lessons/blob/main/notebooks/week2.ipynb"
    cells = generate.notebook("week2", LESSONS)["cells"]
    assert f"]({link})" in cells[0]["source"] and 'REPOSITORY = "someone/transformers-lessons"' in cells[1]["source"]
    assert generate.with_lessons(readme, LESSONS).count("colab.research.google.com/github/someone") == \
        len(generate.PAGES)


def test_the_readme_lists_every_lesson_once_under_its_page_section():
    block = (run_all.ROOT / "README.md").read_text(encoding="utf-8").split(generate.BEGIN)[1].split(generate.END)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ") and ".py`]" in line]
    assert sorted(re.search(r"\[`(week\d/\w+)\.py`\]", row).group(1) for row in rows) == sorted(LESSONS)
    assert "| 4. Why divide by √d_k (scaled dot-product) | [`week1/01_attention_from_scratch.py`]" \
        "(week1/01_attention_from_scratch.py) | Scaled dot-product attention in NumPy vs torch's SDPA |" in rows


# ---------------------------------------------------------------- run in a kernel

def test_every_cell_runs_and_the_set_up_finds_the_lessons(ran):
    for page, (_, nb, extra) in ran.items():
        for cell in nb.cells:
            if cell.cell_type == "code" and cell not in extra.values():
                assert outputs(cell, "error") == [], (page, cell.source, outputs(cell, "error"))
                assert stream(cell, "stderr") == "", (page, cell.source)
        assert stream(nb.cells[1], "stdout") == f"lessons in {run_all.ROOT}\n"


def golden_lines_differ(name, cell):
    """None if the cell printed the lines of the lesson's golden file, as the check compares a run
    (the records taken out, a training's numbers by their bands; the figure's path the one the
    kernel was given); else the difference."""
    text, records = comparing.split_records(stream(cell, "stdout").replace(f"saved {OUT}{os.sep}", "saved "))
    banded, problems = comparing.compared(text, records)
    golden = run_all.golden_path(name).read_text(encoding="utf-8")
    if problems or not comparing.outputs_match(golden, banded):
        return problems or comparing.unified_diff(golden, banded, name)
    return None


def test_each_lesson_prints_the_lines_of_its_golden_file(ran):
    compared = 0
    for _, name, _, cell in lesson_cells(ran):
        if name not in SHORTER:
            assert golden_lines_differ(name, cell) is None, golden_lines_differ(name, cell)
            compared += 1
    assert compared == len(LESSONS) - len(SHORTER)


def shows_what_it_saved(cell):
    """The cell's last image is the figure file its `saved ...` line names (a run off its
    defaults saves none: then it shows one)."""
    images = [o for o in outputs(cell, "display_data") if "image/png" in o.data]
    saved = re.search(r"^saved (.+\.png)$", stream(cell, "stdout"), re.MULTILINE)
    if saved is None:
        return bool(images) and "figure not saved" in stream(cell, "stdout")
    return bool(images) and base64.b64decode(images[-1].data["image/png"]) == Path(saved.group(1)).read_bytes()


def test_each_figure_cell_shows_the_figure_it_saved(ran):
    for _, name, _, cell in lesson_cells(ran):
        if LESSONS[name].figure is not None:
            assert shows_what_it_saved(cell), name


VIEW = "application/vnd.jupyter.widget-view+json"


def view_models(client, cell):
    """The widget models of the views the cell shows: [(model name, its state)]."""
    states = [client.widget_state[o.data[VIEW]["model_id"]] for o in outputs(cell, "display_data") if VIEW in o.data]
    return [(state["_model_name"], state) for state in states]


CONTROLS = {"IntSliderModel", "FloatSliderModel", "SelectionSliderModel", "RadioButtonsModel"}


def controlled_view(client, cell):
    """The picture's HTML if the cell shows one view, the figure as an image with alt text
    (its titles) first, then its controls (below it, or beside it); else None."""
    views = view_models(client, cell)
    if len(views) != 1 or views[0][0] != "VBoxModel":
        return None

    def parts(state):  # the view's models, first to last
        for child in state.get("children", []):
            child = client.widget_state[child.removeprefix("IPY_MODEL_")]
            yield child
            yield from parts(child)

    picture, *rest = [state for state in parts(views[0][1]) if not state["_model_name"].endswith("BoxModel")]
    if picture["_model_name"] != "HTMLModel" or not re.search(r'alt="[^"]+"', picture["value"]) or \
            not any(state["_model_name"] in CONTROLS for state in rest):
        return None
    return picture["value"]


def test_each_live_cell_shows_its_view_with_its_controls(ran):
    """Without ipympl (the kernel's own inline backend)."""
    for page, name, _, cell in lesson_cells(ran):
        if LESSONS[name].live and not LESSONS[name].training:
            assert controlled_view(ran[page][0], cell), name
    causal_mask = next(cell for _, name, _, cell in lesson_cells(ran) if name == "week2/01_causal_mask")
    assert "weights, T = 4: 6 grey cells blocked" in controlled_view(ran["week2"][0], causal_mask)


def window_then_figure(messages):
    """The images a cell showed are one image (the training's window) updated at least once
    (while it trained), then one more (its final figure)."""
    shown = [msg for msg in messages if msg["msg_type"] in ("display_data", "update_display_data")
             and "image/png" in msg["content"]["data"]]
    ids = [(msg["content"].get("transient") or {}).get("display_id") for msg in shown]
    return len(ids) >= 3 and ids[0] is not None and ids[1:-1] == [ids[0]] * (len(ids) - 2) and ids[-1] is None


def printed_before_shown(cell):
    """The cell printed lines before its first image: a training's set-up before its window."""
    kinds = ["image" if "image/png" in o.get("data", {}) else o.get("name") for o in cell.outputs]
    return "stdout" in kinds and "image" in kinds and kinds.index("stdout") < kinds.index("image")


def test_a_trainings_window_is_an_image_refreshed_while_it_trains_then_its_figure(ran):
    """... shown below the lines the lesson printed before its training (its set-up)."""
    for page, name, _, cell in lesson_cells(ran):
        if LESSONS[name].training:
            client, nb, _ = ran[page]
            assert window_then_figure(client.messages[nb.cells.index(cell)]), name
            assert printed_before_shown(cell), name


def test_the_checks_of_a_kernels_run_can_fail(ran):
    """Each verdict above, fed a wrong run: a number printed otherwise, another lesson's figure
    shown, a view under ipympl where controls are wanted, a window never redrawn."""
    client, nb, extra = ran["week2"]
    cells = {name: cell for _, name, _, cell in lesson_cells(ran)}
    wrong = copy.deepcopy(cells["week2/01_causal_mask"])
    wrong.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stream(wrong, "stdout").replace(
        "0.3100", "0.3101"))]
    assert golden_lines_differ("week2/01_causal_mask", wrong) is not None
    swapped = copy.deepcopy(cells["week2/04_norm_axes"])
    other = next(o for o in outputs(cells["week2/06_warmup_schedule"], "display_data") if "image/png" in o.data)
    swapped.outputs = [o for o in swapped.outputs if "image/png" not in o.get("data", {})] + [other]
    assert not shows_what_it_saved(swapped)
    assert controlled_view(client, extra["live under ipympl"]) is None
    training = client.messages[nb.cells.index(cells["week2/12_train_tiny_transformer"])]
    assert not window_then_figure([msg for msg in training if msg["msg_type"] != "update_display_data"])
    shown_first = copy.deepcopy(cells["week2/12_train_tiny_transformer"])
    shown_first.outputs.sort(key=lambda o: "image/png" not in o.get("data", {}))
    assert not printed_before_shown(shown_first)


def test_interrupt_during_a_training_says_stopped_and_the_kernel_answers_the_next_cell(ran):
    client, nb, extra = ran["week2"]
    cell = extra["interrupted"]
    assert images_shown(client, nb.cells.index(cell)) >= 3  # its window was redrawn while it trained
    assert stream(cell, "stderr") == "stopped\n" and outputs(cell, "error") == []
    assert "held-out sequences decoded exactly" not in stream(cell, "stdout")  # it stopped before the end
    assert stream(extra["answers"], "stdout") == "answered\n"


def test_the_kernels_backend_is_left_as_it_was(ran):
    extra = ran["week2"][2]
    before = stream(extra["backend before"], "stdout")
    assert before.strip() in ("inline", "module://matplotlib_inline.backend_inline")
    assert stream(extra["backend after"], "stdout") == before


def test_help_in_a_cell_reads_as_cells(ran):
    """`%run week2/01_causal_mask.py --help`: its usage and Try it lines are cells to paste."""
    said = stream(ran["week2"][2]["help"], "stdout")
    assert said.startswith("usage: %run week2/01_causal_mask.py [-h]")
    assert "\n  %run week2/01_causal_mask.py --seed 0 --seq-len 6\n" in said and "python" not in said


def test_a_lesson_imported_in_a_cell_reads_no_kernel_argv_and_takes_an_argument_list(ran):
    extra = ran["week2"][2]
    assert outputs(extra["imported"], "error") == [] and stream(extra["imported"], "stderr") == ""
    assert stream(extra["imported"], "stdout").startswith("causal mask for T=4 (1 = blocked):")
    assert stream(extra["argument list"], "stdout").startswith("causal mask for T=6 (1 = blocked):")


def test_under_ipympl_a_live_cell_shows_the_figures_own_canvas_once_and_leaves_pyplot_empty(ran):
    client, _, extra = ran["week2"]
    cell = extra["live under ipympl"]
    assert outputs(cell, "error") == [] and stream(cell, "stderr") == ""
    (model, state), = view_models(client, cell)
    assert model == "MPLCanvasModel" and state["header_visible"] is False
    assert stream(extra["pyplot after"], "stdout") == "widget []\n"


# ---------------------------------------------------------------- the Check yourself quiz in a kernel

def test_each_notebook_ends_with_its_quiz_which_says_in_one_line_where_no_answer_can_be_typed(ran):
    """nbclient sends no typed answers (ipykernel's input() raises StdinNotImplementedError): the quiz
    cell, the notebook's last, asks its first question, then says so in one line, without a traceback."""
    for page, (_, nb, _) in ran.items():
        last = len(nbformat.read(NOTEBOOKS[page], as_version=4).cells) - 1
        cell = nb.cells[last]
        assert "--quiz" in cell.source and outputs(cell, "error") == [] and stream(cell, "stderr") == ""
        out = stream(cell, "stdout")
        assert "Question 1 of" in out
        assert out.rstrip().splitlines()[-1].startswith("This notebook's front end cannot send typed answers")


def test_in_a_kernel_the_quiz_reads_input_and_interrupt_ends_it_with_the_score_then_stopped():
    """A front end that answers input() (JupyterLab, Notebook 7, VS Code, Colab all do): the kernel's
    stdin channel, driven here as they drive it. A right answer, then Interrupt while it waits."""
    lesson = load_script("week2/21_check_yourself")
    chosen = [(place, kind) for place, kind in enumerate(lesson.KINDS) if kind.section == 2]
    answers = [q.reader.show(q.answer) for _, q in quiz.seeded(chosen, 3)][:1]  # the second is interrupted
    km, kc = start_new_kernel(kernel_name="python3", env=KERNEL_ENV, cwd=str(run_all.ROOT))
    try:
        parent = kc.execute("%run week2/21_check_yourself.py --quiz --seed 3 --topic 2", allow_stdin=True)
        streams, asked, deadline = {"stdout": "", "stderr": ""}, 0, time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                request = kc.get_stdin_msg(timeout=0.05)
                if request["parent_header"].get("msg_id") == parent:
                    asked += 1
                    if asked <= len(answers):
                        kc.input(answers[asked - 1])
                    else:
                        km.interrupt_kernel()  # the front end's Interrupt, while the quiz waits
            except queue.Empty:
                pass
            try:
                msg = kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != parent:
                continue
            if msg["msg_type"] == "stream":
                streams[msg["content"]["name"]] += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert asked == 2 and streams["stdout"].count("  right: ") == 1, streams
    assert streams["stdout"].endswith("score: 1/1 answers right (a question asked again counts again; a skipped one "
                                      "does not)\n") and streams["stderr"] == "stopped\n", streams
