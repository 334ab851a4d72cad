"""week1/09_bottleneck_experiment: its attention is 05's formula, its Adam is torch's, its
verdicts flip when the experiment is rigged the other way, its figure shows the measured
data, and its output is the same bytes under other kernel settings."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import run_all
from tests.conftest import SCRIPTS, load_script

NAME = "week1/09_bottleneck_experiment"
FALLS = "Verdict (section 1): fixed-context falls from above 0.90 to below 0.60 as rows grow"
NO_FALL = "Verdict (section 1): fixed-context does not fall from above 0.90 to below 0.60"
HOLDS = "Verdict (section 2): attention stays above 0.90 on the longest rows: as the page says"
NO_HOLD = "Verdict (section 2): attention does not stay above 0.90 on the longest rows: NOT THE PAGE'S PICTURE"
ALIGNED = "in at least 80% of the steps: yes"
NOT_ALIGNED = "in at least 80% of the steps: no"
# The settings under which torch and MKL pick other kernels, so that training takes
# another path (needs a fresh interpreter: torch reads them when it loads).
KERNEL_SETTINGS = [{"ATEN_CPU_CAPABILITY": "default"}, {"MKL_CBWR": "COMPATIBLE"}]


@pytest.fixture(scope="module")
def lesson():
    return load_script(NAME)


@pytest.fixture(scope="module")
def rigged():
    """The experiment rigged each way: attention that may see only the last encoder
    state; and a fixed-context model whose summary is wide enough for rows of 8 digits."""
    argv = {"last state only": ["--look-back", "last", "--table"],
            "wide enough": ["--hidden", "64", "--max-len", "8", "--table"]}
    results = run_all.run_scripts([(SCRIPTS[NAME], args) for args in argv.values()])
    for result in results:
        assert result.returncode == 0, result.stderr
    return {name: result.stdout for name, result in zip(argv, results, strict=True)}


def test_additive_score_is_05s_formula(lesson):
    additive_attention = load_script("week1/05_additive_attention").additive_attention
    model = lesson.build(hidden=6, seed=0).double()
    x = torch.tensor([[3, 1, 4, 1, 5, 9, 2]])
    with torch.no_grad():
        _, alpha = lesson.run(model, x, None, attention=True)
        H = model["encoder"](model["source_embed"](x))[0][0].numpy()  # [T, n]
    W_a, U_a, v_a = (model["attention"][k].detach().numpy() for k in ("W_a", "U_a", "v_a"))
    # Writing step 1 asks with s_0 = h_T, the encoder's last state.
    e, alpha_05, _ = additive_attention(H[-1], H, W_a, U_a, v_a)
    assert np.abs(alpha[0, 0].numpy() - alpha_05).max() < 1e-12
    assert np.ptp(alpha_05) > 0.01  # a real comparison: the weights are not all equal
    with torch.no_grad():
        e_09 = lesson.additive_scores(torch.from_numpy(H[-1])[None], torch.from_numpy(H @ U_a)[None],
                                      torch.from_numpy(W_a), torch.from_numpy(v_a))[0].numpy()
    assert np.abs(e_09 - e).max() < 1e-12


def test_adam_step_is_torch_optim_adam(lesson):
    torch.manual_seed(0)
    mine = [torch.randn(4, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)]
    theirs = [p.clone().requires_grad_() for p in mine]
    start = [p.clone() for p in mine]
    optimizer = torch.optim.Adam(theirs, lr=0.02)
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in mine]
    steps = 30
    for step in range(1, steps + 1):
        lr = 0.02 * (1 - (step - 1) / steps)  # the script's falling learning rate
        for p, q in zip(mine, theirs, strict=True):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        lesson.adam_step(mine, moments, step, lr)
        optimizer.param_groups[0]["lr"] = lr
        optimizer.step()
    assert max((p - q).abs().max().item() for p, q in zip(mine, theirs, strict=True)) < 1e-12
    assert min((p - p0).abs().max().item() for p, p0 in zip(mine, start, strict=True)) > 0.05  # they moved


def test_default_run_upholds_both_claims(outputs):
    out = outputs[NAME].stdout
    assert FALLS + ": as the page says" in out and HOLDS in out and ALIGNED in out


def test_attention_restricted_to_the_last_state_loses_its_advantage(rigged):
    out = rigged["last state only"]
    assert NO_HOLD in out and NOT_ALIGNED in out
    assert FALLS in out  # the fixed-context model is untouched by the rig


def test_a_summary_wide_enough_for_the_rows_does_not_fall_off(rigged):
    out = rigged["wide enough"]
    assert NO_FALL in out and "NOT SEEN HERE" in out
    assert HOLDS in out


@pytest.mark.parametrize("case", ["last state only", "wide enough"])
def test_bands_agree_with_the_exact_table(lesson, rigged, case):
    lines = rigged[case].splitlines()
    table = [line.split() for line in lines if line.strip() and line.split()[0].isdigit()
             and len(line.split()) == 3]
    accuracy = {"fixed-context": {int(r[0]): float(r[1]) for r in table},
                "attention": {int(r[0]): float(r[2]) for r in table}}
    assert list(accuracy["attention"]) == list(range(2, max(accuracy["attention"]) + 1))
    for name, (short, long) in lesson.short_and_long(accuracy).items():
        row = next(line for line in lines if line.startswith(f"  {name} "))
        assert row.split(None, 1)[1].split() == f"{lesson.band(short)} {lesson.band(long)}".split()


def test_figure_shows_the_measured_data(lesson):
    accuracy, _, example_alpha = lesson.experiment(hidden=8, max_len=8, steps=3, seed=0)
    lengths = list(range(2, 9))
    fig = lesson.make_figure(lengths, accuracy, example_alpha)
    left, right = fig.axes[:2]
    lines = {line.get_label(): line for line in left.get_lines()}
    for name in ("fixed-context", "attention"):
        assert list(lines[name].get_xdata()) == lengths
        assert list(lines[name].get_ydata()) == [accuracy[name][T] for T in lengths]
    assert np.array_equal(right.get_images()[0].get_array(), example_alpha)
    assert np.allclose(example_alpha.sum(1), 1)


def test_default_run_leaves_the_committed_figure_alone(outputs):
    # Its pixels depend on the training trajectory, so the CPU: a default run writes to the
    # git-ignored build/; the README's copy is made with --figure week1/figures/....
    assert "saved build/figures/week1/bottleneck_accuracy_by_length.png" in outputs[NAME].stdout.splitlines()
    assert "build/" in (run_all.ROOT / ".gitignore").read_text().split()
    assert (run_all.ROOT / "week1/figures/bottleneck_accuracy_by_length.png").exists()


def test_too_much_training_is_a_usage_error():
    (result,) = run_all.run_scripts([(SCRIPTS[NAME], ["--steps", "3000", "--max-len", "32"])])
    assert result.returncode == 2 and result.stdout == ""
    assert "the limit is 20,000" in result.stderr.splitlines()[-1]


@pytest.fixture(scope="module")
def other_kernels(tmp_path_factory):
    """Default runs in fresh interpreters under each of KERNEL_SETTINGS, side by side."""
    cwd = tmp_path_factory.mktemp("kernels")
    runs = [subprocess.Popen([sys.executable, str(SCRIPTS[NAME])], cwd=cwd, text=True, encoding="utf-8",
                             env={**os.environ, **run_all.FIXED_ENV, **setting},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for setting in KERNEL_SETTINGS]
    outputs = [run.communicate(timeout=300) for run in runs]
    return [(run.returncode, stdout, stderr) for run, (stdout, stderr) in zip(runs, outputs, strict=True)]


def test_same_bytes_under_other_kernels(outputs, other_kernels):
    """Training takes another path under these settings (the exact accuracies that
    --table prints differ); what the default run prints must not."""
    for setting, (returncode, stdout, stderr) in zip(KERNEL_SETTINGS, other_kernels, strict=True):
        assert returncode == 0, (setting, stderr)
        assert stdout == outputs[NAME].stdout, (setting, run_all.unified_diff(outputs[NAME].stdout, stdout, NAME))
