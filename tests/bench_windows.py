"""How fast each --live window answers a move, beside one full draw of a reference figure.

For every lesson with --live, its main() runs at the defaults with --live (the printed lines
thrown away, figures saved under a scratch folder) and the window it would open is built, as
show() builds it. Then, for a few rounds, every slider is moved to 6 values across its range
and every radio button set to each choice; each move is timed to completion (its callbacks
and all the drawing they cause; under TkAgg until Tk has painted the window), each followed
by one full draw of a reference figure of the same size (one axes, a 20 x 20 image, a title),
so that the two are measured side by side under the same load. A window that watches a
training (week1/09, week2/12) is timed at 6 redraws per round, spread over a run at the
defaults.

    .venv/bin/python tests/bench_windows.py                  # Agg here, then TkAgg (under xvfb-run -a if no display)
    .venv/bin/python tests/bench_windows.py --backend TkAgg --only week2/01 --rounds 5

Prints per window: the median and the worst move, and the median reference draw (ms). A plain
script, not a test: pytest does not collect it, and timings on a shared machine are no verdict.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import common.live as live  # noqa: E402
from common import OUTPUT_ROOT  # noqa: E402
from common.figures import plt  # noqa: E402

import numpy as np  # noqa: E402

import run_all  # noqa: E402

VALUES = 6  # positions per slider, across its range


def live_lessons(only=()):
    return {name: path for name, path in run_all.discover().items()
            if load(name, path).LESSON.live and (not only or any(o in name for o in only))}


def load(name, path):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_") + "_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settle(fig):
    """Let the window (if any) finish what it has to do: map, first draw, paint."""
    for _ in range(5):
        fig.canvas.flush_events()
        time.sleep(0.02)
    fig.canvas.flush_events()


def timed(action, fig):
    start = time.perf_counter()
    action()
    fig.canvas.flush_events()  # Agg: nothing left to do; Tk: the idle draw and the paint happen here
    return time.perf_counter() - start


def reference_figure(size):
    fig = plt.figure(figsize=size)
    ax = fig.add_subplot()
    ax.imshow(np.random.default_rng(0).random((20, 20)))
    ax.set_title("reference: one axes, a 20 x 20 image, a title")
    return fig


def show_windows(*figs):
    if plt.get_backend().lower() != "agg":
        plt.show(block=False)
    for fig in figs:
        fig.canvas.draw()
        settle(fig)


def slider_values(slider):
    """VALUES positions across the slider's range, each one the slider allows."""
    lo, hi, step = slider.valmin, slider.valmax, slider.valstep
    targets = np.linspace(lo, hi, VALUES)
    if step is None:
        return list(targets)
    if np.iterable(step):
        allowed = np.asarray(step, dtype=float)
        return [allowed[np.abs(allowed - t).argmin()] for t in targets]
    return [min(hi, lo + round((t - lo) / step) * step) for t in targets]


def moves(view):
    """(control, action) for every move of one round."""
    for name, widget in view.widgets.items():
        if hasattr(widget, "valmin"):
            for value in slider_values(widget):
                yield name, lambda w=widget, v=value: w.set_val(v)
        elif hasattr(widget, "set_active"):
            for i in range(len(widget.labels)):
                yield name, lambda w=widget, i=i: w.set_active(i)


def run_main(module, path, argv):
    """The lesson's main() with argv, its lines thrown away; returns what it handed show()."""
    handed = []
    saved = live.show, live.need_window  # (the lesson imports show from common.live; Lesson.args asks it too)
    live.show = lambda build, *args: handed.append((build, args))
    live.need_window = lambda parser, saves=False: None
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            module.main(argv)
    finally:
        live.show, live.need_window = saved
    return handed


def bench_view(name, path, rounds):
    module = load(name, path)
    build, args = run_main(module, path, ["--live"])[0]
    with live.window_style():
        view = build(*args)
        ref = reference_figure(view.fig.get_size_inches())
        show_windows(view.fig, ref)
        times, refs, by_control = [], [], {}
        for _ in range(rounds):
            for control, action in list(moves(view)):
                t = timed(action, view.fig)
                times.append(t)
                by_control.setdefault(control, []).append(t)
                refs.append(timed(ref.canvas.draw, ref))
    plt.close("all")
    return times, refs, by_control


def bench_training(name, path, rounds):
    """A training window: 6 x rounds of its redraws, spread over a run at the defaults, each
    followed by a reference draw."""
    module = load(name, path)
    # watch() calls at the defaults: week1/09 trains two models
    calls = (2 if name.startswith("week1/09") else 1) * module.STEPS
    every = max(1, calls // (VALUES * rounds))
    times, refs, state = [], [], {"n": 0, "ref": None}

    class Timed(live.TrainingWindow):
        def watch(self, *step_state, last=False):
            state["n"] += 1
            if state["n"] == 1:  # the window's first draw: setting up, not a redraw
                super().watch(*step_state, last=True)
                state["ref"] = reference_figure(self.view.fig.get_size_inches())
                show_windows(self.view.fig, state["ref"])
            elif state["n"] % every == 0:
                times.append(timed(lambda: super(Timed, self).watch(*step_state, last=True), self.view.fig))
                refs.append(timed(state["ref"].canvas.draw, state["ref"]))

    saved, live.TrainingWindow = live.TrainingWindow, Timed
    try:
        with live.window_style():
            run_main(module, path, ["--live"])
    finally:
        live.TrainingWindow = saved
    plt.close("all")
    return times, refs, {"redraw": times}


def bench(backend, only, rounds):
    if backend != "Agg":
        plt.switch_backend(backend)
    os.environ[OUTPUT_ROOT] = tempfile.mkdtemp(prefix="bench-windows-")  # the lessons' figures go there
    rows = {}
    try:
        for name, path in live_lessons(only).items():
            training = load(name, path).LESSON.training
            times, refs, by_control = (bench_training if training else bench_view)(name, path, rounds)
            rows[name] = {"moves": len(times), "median": statistics.median(times), "worst": max(times),
                          "reference": statistics.median(refs), "training": training,
                          "controls": {c: statistics.median(t) for c, t in by_control.items()}}
            row = rows[name]
            print(f"{backend:6} {name:40} {row['moves']:4d} moves: median {1000 * row['median']:6.1f} ms, worst "
                  f"{1000 * row['worst']:6.1f} ms; reference {1000 * row['reference']:5.1f} ms "
                  f"({row['median'] / row['reference']:.2f} x)   " +
                  ", ".join(f"{c} {1000 * t:.0f}" for c, t in row["controls"].items()), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(os.environ[OUTPUT_ROOT], ignore_errors=True)
    return rows


def table(results):
    """Markdown: one row per window, both backends."""
    backends = list(results)
    names = list(dict.fromkeys(name for rows in results.values() for name in rows))
    head = "| window | " + " | ".join(f"{b}: median / worst move, reference draw (ms); median / reference"
                                      for b in backends) + " |"
    lines = [head, "|---" * (len(backends) + 1) + "|"]
    for name in names:
        cells = []
        for b in backends:
            row = results[b].get(name)
            cells.append("-" if row is None else f"{1000 * row['median']:.0f} / {1000 * row['worst']:.0f}, "
                         f"{1000 * row['reference']:.0f}; {row['median'] / row['reference']:.2f}"
                         + (" (a redraw)" if row["training"] else ""))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["Agg", "TkAgg", "both"], default="both")
    parser.add_argument("--only", nargs="+", default=(), help="lessons whose name contains one of these")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every move (default 3)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    if args.backend != "both":
        results = {args.backend: bench(args.backend, args.only, args.rounds)}
    else:
        results = {}
        for backend in ("Agg", "TkAgg"):
            with tempfile.TemporaryDirectory() as scratch:
                out = Path(scratch) / "rows.json"
                command = [sys.executable, __file__, "--backend", backend, "--rounds", str(args.rounds),
                           "--json", str(out), *(["--only", *args.only] if args.only else [])]
                if backend == "TkAgg" and not os.environ.get("DISPLAY"):
                    command = ["xvfb-run", "-a", *command]
                env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
                subprocess.run(command, check=True, env=env)
                results.update(json.loads(out.read_text()))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
