#!/usr/bin/env python3
"""Write the page notebooks, and the README's list of lessons, from the lessons' own
declarations, so they never drift from them:

    python notebooks/generate.py          # write notebooks/week1.ipynb, week2.ipynb, eli5_one_block.ipynb
                                          # and the README's block between <!-- lessons --> and <!-- /lessons -->
    python notebooks/generate.py --check  # exit 1, naming them, if any is not what this would write

One notebook per page, in the page's order: a set-up cell that works in a clone and on Colab,
then for each page section a heading and one cell per lesson that belongs to it (each
lesson's LESSON.page says where), the lesson run with `%run`, with --live where it has a live
view (its Try it, inline), and its other Try it commands listed to copy. Stored without outputs.
The README's block: per page, its notebook (and its "Open in Colab" badge, once REPOSITORY is
set), then a table of its sections and their lessons, each with the first line of its description.
"""
import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The project's GitHub address, "owner/name", and its default branch: where a notebook opened on
# its own (Colab) clones the lessons from, and what its "Open in Colab" badge opens. Empty until
# the project is published: the set-up cell then says so in one line, and no badge is written.
REPOSITORY = ""
BRANCH = "main"

PAGES = {
    "week1": ("week1.ipynb", "ELI12 · Week 1: from one squeezed summary to attention and the Transformer encoder", {
        1: "1. The squeezed summary (seq2seq bottleneck)",
        2: "2. Looking back instead of remembering (Bahdanau attention)",
        3: "3. Self-attention and the three roles Q, K, V",
        4: "4. Why divide by √d_k (scaled dot-product)",
        5: "5. Several readers at once (multi-head attention and W^O)",
        6: "6. The encoder layer: attention, then a per-word brain (FFN)",
        7: "7. Counting the learnable numbers (parameters)",
        "worked examples": "The hand-checkable examples and Check yourself, recomputed",
        "mistakes": "Mistakes people make, each tested",
        "check yourself": "Check yourself: the page's questions, asked with new numbers"}),
    "week2": ("week2.ipynb", "ELI12 · Week 2: how a Transformer decoder writes, keeps its place and stays stable", {
        1: "1. Teacher forcing: practising with the answer key's previous words",
        2: "2. Masked (causal) self-attention: hiding the future",
        3: "3. Cross-attention: the decoder reading the source",
        4: "4. The decoder's output layer and counting parameters",
        5: "5. Sinusoidal positional encoding: a tag for \"where am I?\"",
        6: "6. Residual connections and normalization",
        7: "7. Training tricks: label smoothing and the warm-up schedule",
        8: "8. The full Transformer data flow",
        "worked examples": "The hand-checks, counts and answers, recomputed",
        "mistakes": "Mistakes people make, each tested",
        "check yourself": "Check yourself: the page's questions, asked with new numbers"}),
    "eli5": ("eli5_one_block.ipynb", "Transformers, ELI5 · Part 3: One block: mix, then think", {
        1: "Move 1: attention, words look at each other (the classic puzzle)",
        2: "Many heads at once",
        3: "See this in PyTorch: single-head causal self-attention",
        4: "Move 2: the feed-forward network, and the shape never changes"}),
}
ORDER = ["worked examples", "mistakes", "check yourself"]  # after the numbered sections
# Each notebook ends with the quiz: the Check yourself lesson of this page (page, arguments); the
# ELI5 page's block questions are Week 1's, asked alone.
QUIZ = {"week1": ("week1", ""), "week2": ("week2", ""), "eli5": ("week1", " --topic eli5")}

SETUP = '''# Set-up: run this cell first. In a clone of the project the lessons are found above this
# notebook; opened on its own (Colab) it clones them. It installs only what this kernel lacks,
# never torch (a notebook image has its own): without it, it prints the cell that installs it.
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = {repository}  # the project on GitHub, "owner/name"
here = Path.cwd()
root = next((folder for folder in (here, *here.parents, here / "lessons") if (folder / "run_all.py").exists()), None)
if root is None and REPOSITORY:
    print(f"cloning https://github.com/{{REPOSITORY}} into lessons/ ...")
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", f"https://github.com/{{REPOSITORY}}.git", "lessons"],
                   check=True)
    root = here / "lessons"
if root is None:
    print("The lessons are not beside this notebook and the project has no public address yet: "
          "open this notebook in a clone of the project.", file=sys.stderr)
else:
    os.chdir(root)  # the cells below run week1/..., week2/... from here
    wanted = {wanted}
    missing = [spec for name, spec in wanted.items() if importlib.util.find_spec(name) is None]
    if missing:
        print(f"installing {{', '.join(missing)}} ...")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
    if importlib.util.find_spec("torch") is None:
        print({no_torch}, file=sys.stderr)
    if "google.colab" in sys.modules:
        from google.colab import output
        output.enable_custom_widget_manager()  # ipywidgets 8 controls, should the image have them
    elif importlib.metadata.version("ipywidgets").startswith("7."):
        print({widgets_7}, file=sys.stderr)
    print(f"lessons in {{root}}")'''
# What the set-up cell says about torch (the install line a lesson cell says too, common.KERNEL_INSTALL) and
# ipywidgets 7, each in one line. The time: the download at 50 Mbit/s, and the install as measured in a kernel
# (26 s, with its dependencies, from a local copy of the wheel; the lessons then ran with no restart).
NO_TORCH = ("This kernel has no torch, which the lessons need: install its CPU build (about 190 MB: some 30 s to "
            "download at 50 Mbit/s, as long again to install) in a cell: "
            "%pip install torch --index-url https://download.pytorch.org/whl/cpu")
WIDGETS_7 = ("This kernel has ipywidgets 7: JupyterLab 4 and Notebook 7 draw ipywidgets 8 only, and show an error in "
             "place of the live views; there, run %pip install -U ipywidgets in a cell, then restart the kernel.")
# What the set-up cell installs when the kernel lacks it: the oldest releases the lessons support
# (the README's versions), and requirements-notebook.txt's range for the live views' controls.
WANTED = {"numpy": "numpy>=1.26", "matplotlib": "matplotlib>=3.9", "ipywidgets": "ipywidgets>=7.7"}

INTRO = """# {title}
{badge}
The runnable lessons of this page, in the page's order: each cell runs one lesson with `%run`,
prints the lines the page quotes, and shows its figure. A cell with `--live` opens the lesson's
Try it below it: move its sliders and the numbers follow. Run the set-up cell first.

- The controls stand below the figure (ipywidgets; pickers beside it): drag a knob, or click it
  and press ← or → (in Notebook 7, Shift+← or Shift+→: it keeps the plain arrows for moving
  between cells). In JupyterLab, Notebook 7 or VS Code with ipympl installed (`pip install -r
  requirements-notebook.txt`), run `%matplotlib widget` first to drive the figure's own sliders
  instead, with the same keys.
- In Notebook 7, turn off Settings → Settings Editor → Jupyter Notebook Notebook → Auto Scroll
  Outputs once: else a long output (a lesson's lines, figure and view) shows in a small box to scroll.
- A training's window is a picture redrawn while it trains, below its set-up lines, then its
  final figure.
- Interrupt (the stop button) ends a running lesson with `stopped`, and the kernel goes on; as
  after any `%run`, cells that Run All queued after it still run.
- Any lesson takes its flags in the cell: `%run week2/01_causal_mask.py --seed 3`; `--help` lists
  them, its Try it lines as cells to paste.
"""


def literal(text, indent, width=110):
    """text as Python string literals side by side, one a line, each line at most `width` long:
    the code of a cell that prints it, starting `indent` characters in."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and indent + len(json.dumps(line + word)) > width:
            lines.append(line)
            line = ""
        line += word + " "
    lines.append(line.rstrip(" "))
    return ("\n" + " " * indent).join(json.dumps(piece) for piece in lines)


def badge(filename):
    """The "Open in Colab" badge of a page notebook, in Markdown (REPOSITORY must be set)."""
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"(https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/notebooks/{filename})")


def load(path):
    spec = importlib.util.spec_from_file_location(f"lesson_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LESSON


def lessons(root=ROOT):
    """Every lesson's declaration, by weekN/NN_name."""
    found = {}
    for path in sorted(root.glob("week*/[0-9][0-9]_*.py")):
        lesson = load(path)
        found[lesson.name] = lesson
    return found


def cell_id(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:64]


def markdown(source, id):
    return {"cell_type": "markdown", "id": cell_id(id), "metadata": {}, "source": source}


def code(source, id):
    return {"cell_type": "code", "execution_count": None, "id": cell_id(id), "metadata": {}, "outputs": [],
            "source": source}


def lesson_cells(lesson):
    run = f"%run {lesson.name}.py" + (" --live" if lesson.live else "")
    text = lesson.description
    if lesson.live:
        text += f"\n\nTry it (`--live`): {lesson.live}."
    others = [(args, why) for args, why in lesson.try_it if args.split() != ["--live"]]
    if others:
        text += "\n\nMore to try, each a cell of its own:\n" + "\n".join(
            f"- `%run {lesson.name}.py {args}`: {why}" for args, why in others)
    return [markdown(f"### {lesson.name}\n\n{text}", f"{lesson.name}-about"), code(run, lesson.name)]


def quiz_cells(page, declared, sections):
    """The notebook's last cells: its Check yourself lesson asked as a quiz, a question at a time in the
    box the kernel's input() opens below the cell (under a heading of its own where the page has no
    Check yourself section)."""
    asks, arguments = QUIZ[page]
    (lesson,) = [lesson for lesson in declared.values() if lesson.page == (asks, "check yourself")]
    heading = [] if "check yourself" in sections else [markdown("## Check yourself", f"{page}-check-yourself")]
    about = (f"Your turn: `{lesson.name}.py --quiz{arguments}` asks this page's kinds of question with new numbers, "
             "one at a time, in the box that opens below the cell. Type your answer and press Enter: a blank line "
             "skips, `q` stops, and the score comes at the end. Each wrong answer gets its worked steps, and a known "
             "mistake its name; a missed kind comes back once with new numbers.")
    source = f"# The quiz: type each answer in the box below, q to stop.\n%run {lesson.name}.py --quiz{arguments}"
    return heading + [markdown(about, f"{page}-quiz-about"), code(source, f"{page}-quiz")]


def notebook(page, declared):
    filename, title, sections = PAGES[page]
    intro = INTRO.format(title=title, badge=f"\n{badge(filename)}\n" if REPOSITORY else "")
    set_up = SETUP.format(repository=json.dumps(REPOSITORY), wanted=json.dumps(WANTED),
                          no_torch=literal(NO_TORCH, 14), widgets_7=literal(WIDGETS_7, 14))
    cells = [markdown(intro, f"{page}-intro"), code(set_up, "setup")]
    mine = [lesson for lesson in declared.values() if lesson.page[0] == page]
    unknown = [lesson.name for lesson in mine if lesson.page[1] not in sections]
    if unknown:
        raise SystemExit(f"notebooks/generate.py: {', '.join(unknown)} name a section {page} does not have")
    for key in section_order(sections):
        here = [lesson for lesson in mine if lesson.page[1] == key]
        if not here:
            continue
        cells.append(markdown(f"## {sections[key]}", f"{page}-{key}"))
        for lesson in sorted(here, key=lambda lesson: lesson.name):
            cells += lesson_cells(lesson)
    cells += quiz_cells(page, declared, sections)
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def written(root=ROOT):
    """{path: text} of every page notebook, and of the README with its list of lessons, as this
    script writes them."""
    declared = lessons(root)
    homeless = [lesson.name for lesson in declared.values() if lesson.page[0] not in PAGES]
    if homeless:
        raise SystemExit(f"notebooks/generate.py: {', '.join(homeless)} belong to no page notebook")
    texts = {root / "notebooks" / PAGES[page][0]: json.dumps(notebook(page, declared), indent=1, ensure_ascii=False)
             + "\n" for page in PAGES}
    readme = root / "README.md"
    texts[readme] = with_lessons(readme.read_text(encoding="utf-8"), declared)
    return texts


BEGIN, END = "<!-- lessons -->", "<!-- /lessons -->"  # the README's generated block lies between


def summary(lesson):
    """A lesson's description in one line: its first, without the page section it names in brackets."""
    first = lesson.description.splitlines()[0]
    return re.sub(r"\s*\((?:Week|ELI5)[^()]*\)\.?$", "", first).rstrip(".")


def with_lessons(readme, declared):
    """The README's text with its block of lessons written again: per page, its notebook (and
    badge), then its sections in the page's order, each lesson a row."""
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"notebooks/generate.py: README.md has no {BEGIN} ... {END} block for the lessons")
    lines = []
    for page, (filename, title, sections) in PAGES.items():
        lines += [f"**{title.split(':')[0]}**, its notebook: [notebooks/{filename}](notebooks/{filename})"
                  + (f" {badge(filename)}" if REPOSITORY else ""), "", "| page section | lesson | what it shows |",
                  "|---|---|---|"]
        for key in section_order(sections):
            here = sorted((lesson for lesson in declared.values() if lesson.page == (page, key)),
                          key=lambda lesson: lesson.name)
            for i, lesson in enumerate(here):  # the section named on its first row only
                lines.append(f"| {'' if i else sections[key]} | [`{lesson.name}.py`]({lesson.name}.py) | "
                             f"{summary(lesson)} |")
        lines.append("")
    before, rest = readme.split(BEGIN, 1)
    return before + BEGIN + "\n" + "\n".join(lines) + rest[rest.index(END):]


def section_order(sections):
    """A page's sections in its order: the numbered ones, then the worked examples and the mistakes."""
    return sorted(key for key in sections if isinstance(key, int)) + [key for key in ORDER if key in sections]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write the page notebooks and the README's list of lessons from "
                                     "the lessons' declarations.")
    parser.add_argument("--check", action="store_true", help="only say which files are stale (exit 1 if any)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in written().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                temporary = path.with_name(path.name + ".tmp")
                temporary.write_text(text, encoding="utf-8")
                temporary.replace(path)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; write them with: python notebooks/generate.py", file=sys.stderr)
        return 1
    for name in stale if not args.check else []:
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
