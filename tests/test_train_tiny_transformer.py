"""week2/12_train_tiny_transformer: its pieces against torch's, its generation loop against one
parallel pass, the data its figure shows, its mask verdict in both worlds, and its output
under the kernel settings that change training trajectories."""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import run_all
from tests.conftest import SCRIPTS, load_script

NAME = "week2/12_train_tiny_transformer"
# The kernel settings that give other training trajectories on the same CPU (and no setting).
SETTINGS = {"none": {}, "scalar kernels": {"ATEN_CPU_CAPABILITY": "default"},
            "MKL compatible": {"MKL_CBWR": "COMPATIBLE"},
            "MKL AVX2, scalar kernels": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "default"},
            "one thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}


@pytest.fixture(scope="module")
def tt():
    return load_script(NAME)


def train(tt, task):
    """A default-length training run in this process, single-threaded as the script runs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        data = tt.training_and_held_out(42, 600, task)
        model, _, evaluations = tt.train(42, data, causal=True, checkpoints=(600,))
    finally:
        torch.set_num_threads(threads)
    return model, data[2], evaluations[600]


@pytest.fixture(scope="module")
def reverse_model(tt):
    return train(tt, "reverse")


def run(argv, env):
    """The script in a fresh interpreter (kernel settings are read when torch is imported)."""
    result = subprocess.run([sys.executable, str(SCRIPTS[NAME]), *argv], capture_output=True, text=True,
                            env={**os.environ, **run_all.FIXED_ENV, **env}, timeout=300)
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A default run under each setting, and a --no-mask run: all at once, one per CPU."""
    jobs = {name: ([], env) for name, env in SETTINGS.items()}
    jobs["--no-mask"] = (["--no-mask", "--figure", str(tmp_path_factory.mktemp("figure") / "cheat.png")], {})
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = {name: pool.submit(run, argv, env) for name, (argv, env) in jobs.items()}
    return {name: future.result() for name, future in futures.items()}


# ---------------------------------------------------------------- the pieces against torch's

@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_label_smoothing_matches_torch(tt, epsilon):
    torch.manual_seed(0)
    logits = 3 * torch.randn(5, 7, tt.V)
    labels = torch.randint(tt.EOS, tt.V, (5, 7))
    labels[:, 4:] = tt.PAD  # padding positions do not count
    mine = tt.smoothed_loss(logits, labels, epsilon)
    theirs = F.cross_entropy(logits.reshape(-1, tt.V), labels.reshape(-1), label_smoothing=epsilon,
                             ignore_index=tt.PAD)
    torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    q = tt.smoothed_target(labels, epsilon)
    torch.testing.assert_close(q.sum(-1), torch.ones(5, 7))
    assert q[0, 0, labels[0, 0]].item() == pytest.approx(1 - epsilon + epsilon / tt.V)


def test_the_other_smoothing_convention_would_fail_the_same_check(tt):
    torch.manual_seed(0)
    logits, labels = 3 * torch.randn(6, tt.V), torch.randint(tt.EOS, tt.V, (6,))
    gold_exact = torch.full((6, tt.V), 0.1 / (tt.V - 1)).scatter(-1, labels[:, None], 0.9)
    other = -(gold_exact * torch.log_softmax(logits, -1)).sum(-1).mean()
    theirs = F.cross_entropy(logits, labels, label_smoothing=0.1)
    assert abs(other - theirs).item() > 1e-3


def test_loss_floor_is_the_smoothed_loss_of_the_perfect_prediction(tt):
    labels = torch.tensor([[3, 7, tt.EOS]])
    perfect = torch.log(tt.smoothed_target(labels).double())  # softmax(log q) = q
    assert tt.smoothed_loss(perfect, labels).item() == pytest.approx(tt.loss_floor(), abs=1e-6)  # q in float32


def test_schedule_is_the_pages_formula_scaled(tt):
    page = load_script("week2/06_warmup_schedule").learning_rate
    for step in [1, 2, 10, 29, 30, 31, 100, 500, 3000]:
        assert tt.learning_rate(step) == pytest.approx(tt.LR_SCALE * page(step, tt.D_MODEL, tt.WARMUP), rel=1e-12)
    steps = range(1, 3001)
    assert max(steps, key=tt.learning_rate) == tt.WARMUP


def test_schedule_ramp_matches_torch_linear_lr_and_then_decays_as_one_over_sqrt(tt):
    w, peak = tt.WARMUP, tt.learning_rate(tt.WARMUP)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=peak)
    ramp = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / w, end_factor=1.0, total_iters=w - 1)
    for step in range(1, w + 1):
        assert optimizer.param_groups[0]["lr"] == pytest.approx(tt.learning_rate(step), rel=1e-9)
        optimizer.step()
        ramp.step()
    for step in [w, 2 * w, 100, 400]:
        assert tt.learning_rate(4 * step) == pytest.approx(tt.learning_rate(step) / 2, rel=1e-12)


def test_hand_written_adam_matches_torch(tt):
    torch.manual_seed(0)
    mine = nn.Linear(4, 3, dtype=torch.float64)
    theirs = nn.Linear(4, 3, dtype=torch.float64)
    theirs.load_state_dict(mine.state_dict())
    x = torch.randn(16, 4, dtype=torch.float64)
    params = list(mine.parameters())
    state = {"m": [torch.zeros_like(p) for p in params], "v": [torch.zeros_like(p) for p in params]}
    optimizer = torch.optim.Adam(theirs.parameters(), betas=tt.BETAS, eps=tt.ADAM_EPS)
    for step in range(1, 8):
        for model in (mine, theirs):
            model.zero_grad()
            (torch.sin(model(x * step)) ** 2).sum().backward()
        tt.adam_step(params, state, step, tt.learning_rate(step))
        optimizer.param_groups[0]["lr"] = tt.learning_rate(step)
        optimizer.step()
        for p, q in zip(mine.parameters(), theirs.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-12)

    # The bias correction is what makes the first step lr * g / |g|: without it m / sqrt(v)
    # would be 0.1 / sqrt(0.001) = 3.16 times that.
    weight = nn.Parameter(torch.zeros(3, dtype=torch.float64))
    weight.grad = torch.tensor([2.0, -0.5, 0.1], dtype=torch.float64)
    tt.adam_step([weight], {"m": [torch.zeros(3, dtype=torch.float64)], "v": [torch.zeros(3, dtype=torch.float64)]},
                 1, 0.01)
    torch.testing.assert_close(weight.detach(), -0.01 * weight.grad.sign(), rtol=1e-3, atol=0)


def test_causal_mask_and_positions_are_the_pages(tt):
    mask = tt.causal_mask(4)
    assert torch.equal(torch.isinf(mask).int(), torch.triu(torch.ones(4, 4, dtype=torch.int), diagonal=1))
    pe = tt.sinusoidal_pe(2, 4)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    page = torch.tensor([0.8415, 0.5403, 0.0100, 1.0000])  # the page's PE(1) for d = 4, at 4 decimals
    torch.testing.assert_close(pe[1], page, rtol=0, atol=6e-5)
    target = torch.tensor([[5, 6, 7, tt.EOS, tt.PAD]])
    assert tt.shift_right(target).tolist() == [[tt.BOS, 5, 6, 7, tt.PAD]]


def test_data_reverses_and_held_out_strings_are_unseen(tt):
    src, tgt, (held_src, held_tgt) = tt.training_and_held_out(3, 20, "reverse")
    for s, t in zip(src.reshape(-1, tt.MAX_LEN + 1)[:50], tgt.reshape(-1, tt.MAX_LEN + 1)[:50], strict=True):
        digits = s[s > tt.EOS].tolist()
        assert t[t > tt.EOS].tolist() == digits[::-1] and (s == tt.EOS).sum() == 1 and (t == tt.EOS).sum() == 1
    seen = {tuple(row) for row in src.reshape(-1, tt.MAX_LEN + 1).tolist()}
    assert len(held_src) == tt.HELD_OUT and not seen & {tuple(row) for row in held_src.tolist()}
    first = tt.training_and_held_out(3, 5, "reverse")[0]
    assert torch.equal(first, src[:5])  # fewer --steps: the same stream, stopped earlier


# ---------------------------------------------------------------- the trained model

def test_training_reaches_every_held_out_string(reverse_model):
    assert reverse_model[2]["exact"] == 200


def test_generation_loop_agrees_with_one_teacher_forced_pass(tt, reverse_model):
    model, (held_src, _), _ = reverse_model
    written, step_scores = tt.generate(model, held_src)  # one token at a time
    read = torch.cat([torch.full((len(held_src), 1), tt.BOS), written[:, :-1]], dim=1)
    with torch.no_grad():
        parallel = tt.decode(model, *tt.encode(model, held_src), read)[0]  # every position at once
        peeking = tt.decode(model, *tt.encode(model, held_src), read, causal=False)[0]
    assert (parallel - step_scores).abs().max().item() < 1e-5
    assert torch.equal(parallel[..., tt.EOS:].argmax(-1) + tt.EOS, written)
    # the same pass without the mask lets position t see the tokens written after it
    assert (peeking - step_scores).abs().max().item() > 0.1


def test_prefix_by_prefix_is_the_loop_on_the_gold_input(tt, reverse_model):
    model, (held_src, held_tgt), _ = reverse_model
    dec_in, real = tt.shift_right(held_tgt), held_tgt != tt.PAD
    one_by_one = tt.prefix_by_prefix(model, held_src, dec_in)
    with torch.no_grad():
        at_once = tt.decode(model, *tt.encode(model, held_src), dec_in)[0]
        peeking = tt.decode(model, *tt.encode(model, held_src), dec_in, causal=False)[0]
    assert (at_once - one_by_one)[real].abs().max().item() < 1e-5
    assert (peeking - one_by_one)[real].abs().max().item() > 0.1


def figure_data(tt, model, held, task):
    held_src, held_tgt = held
    maps = tt.cross_attention_maps(model, held_src, held_tgt)
    full = (held_src > tt.EOS).sum(1) == tt.MAX_LEN
    example = int(full.nonzero()[0, 0])
    n = tt.MAX_LEN + 1
    fig = tt.plot(maps[example, :n, :n].numpy(), maps[full][:, :n, :n].mean(0).numpy(), held_src[example],
                  held_tgt[example], int(full.sum()), task)
    shown = [np.asarray(ax.images[0].get_array()) for ax in fig.axes[:2]]
    tt.plt.close(fig)
    return shown


def test_figure_shows_every_row_reading_its_mirror(tt, reverse_model):
    model, held, _ = reverse_model
    one, mean = figure_data(tt, model, held, "reverse")
    assert one.shape == mean.shape == (tt.MAX_LEN + 1, tt.MAX_LEN + 1)
    np.testing.assert_allclose(one.sum(1), 1, atol=1e-5)  # a full-length string has no padding
    np.testing.assert_allclose(mean.sum(1), 1, atol=1e-5)
    rows = mean[: tt.MAX_LEN].argmax(1)
    assert rows.tolist() == tt.mirror(tt.MAX_LEN, "reverse").tolist() == [5, 4, 3, 2, 1, 0]
    assert rows.tolist() != tt.mirror(tt.MAX_LEN, "copy").tolist()  # the check can fail


def test_copy_task_learns_the_diagonal(tt):
    model, held, evaluation = train(tt, "copy")
    assert evaluation["exact"] == 200
    _, mean = figure_data(tt, model, held, "copy")
    assert mean[: tt.MAX_LEN].argmax(1).tolist() == [0, 1, 2, 3, 4, 5]


# ---------------------------------------------------------------- the script's output

def test_output_is_the_same_under_every_kernel_setting(runs):
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8")
    for name in SETTINGS:
        result = runs[name]
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert result.stdout == golden, f"{name}:\n" + run_all.unified_diff(golden, result.stdout, NAME)


def test_no_mask_flips_the_mask_verdict(runs):
    masked, cheat = runs["none"].stdout.splitlines(), runs["--no-mask"].stdout.splitlines()
    assert runs["--no-mask"].returncode == 0, runs["--no-mask"].stderr
    verdict = [line for line in masked if line.startswith("Verdict:")]
    assert verdict == ["Verdict: as the page says: with the future hidden, training teaches what generation needs"]
    flipped = [line for line in cheat if line.startswith("Verdict:")]
    assert len(flipped) == 1 and "without the mask, position t read its answer from input t + 1" in flipped[0]
    assert "held-out sequences decoded exactly: 0/200" in cheat
    assert "  right tokens at least 99% with the gold prefix: yes; with its own guesses: no" in cheat
    assert "  step 1: input so far <s>              -> next </s>" in cheat  # it stops at once
