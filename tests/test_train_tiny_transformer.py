"""week2/12_train_tiny_transformer: its model wired as section 8 says (against torch's own post-LN
layers), its training's fast paths (torch's fused attention, fused Adam) against the plain formula
and the plain optimizer at the lesson's sizes, label smoothing and the schedule, its generation
loop against one parallel pass, the data its figure shows, every printed trained number beside its
band and judged by it, its verdicts (the loss floor, exposure bias, the mask, the softmax rows, the
decoder's own inputs, longer strings, a later input) in the cases that must flip them and at their
thresholds, its output under the kernel settings that change training trajectories, and a planted
mistake in the attention it uses that the check itself catches. No test trains a model to the end
in this process: what trained models do is read from declared runs (conftest.py), which run once a
session. Measured ranges: week2/NOTES.md, section 12."""
import contextlib
import copy
import io
import re

from common import OUTPUT_ROOT
from common.records import CLOSE, CONTRADICTS, NOT_TESTED, OPEN, RECORDS, UPHOLDS

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import run_all
from check import comparing
from check.comparing import THIS_RUN
from tests.conftest import DEFAULT_RUNS, SCRATCH, SCRIPTS, TRY_ITS, Printed, lesson_run, load_script, main_in_process
from tests.test_portability import RUNS as PORTABILITY_RUNS

NAME = "week2/12_train_tiny_transformer"
# The kernel settings that give other training trajectories on the same CPU (and no setting):
# the very runs tests/test_portability.py holds to the golden files, read here once more.
SETTINGS = {"none": DEFAULT_RUNS[NAME], **{setting: run for (setting, name), run in PORTABILITY_RUNS.items()
                                           if name == NAME}}
NO_MASK = lesson_run(NAME, "--no-mask")  # (the Try it line's own run)
COPY = lesson_run(NAME, "--task", "copy")  # a "Try it" suggestion: the same run tests/test_cli.py reads

# The lesson trained with plain cross-entropy (eps = 0) for 200 steps: its main() with
# smoothed_loss swapped, run beside the others (not in this test process).
PLAIN_LOSS = SCRATCH / "plain_cross_entropy.py"
PLAIN_LOSS.write_text("""
import importlib.util, sys
path = sys.argv[1]
spec = importlib.util.spec_from_file_location("lesson", path)
lesson = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lesson)
smoothed = lesson.smoothed_loss
lesson.smoothed_loss = lambda scores, labels: smoothed(scores, labels, epsilon=0.0)
sys.argv = [path, *sys.argv[2:]]
lesson.main()
""")
PLAIN = lesson_run(NAME, SCRIPTS[NAME], "--steps", "200", path=PLAIN_LOSS)

# Models that never used one of the decoder's own inputs: the lesson trained (and run) with its
# decoder's step 3 made as the experiment makes it with the piece taken away (its position tags left
# out, or every decoder token embedding one vector). Taking that piece away then changes nothing,
# and the verdict on the decoder's own inputs must turn.
NEVER_USED = SCRATCH / "decoder_never_used.py"
NEVER_USED.write_text("""
import importlib.util, sys
path, piece = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("lesson", path)
lesson = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lesson)
taken_away = {kind.piece: kind for kind in (lesson.WithoutDecoderTags, lesson.OneDecoderToken)}[piece]
lesson.Transformer.embed_target = taken_away.embed_target
sys.argv = [path]
lesson.main()
""")
NEVER_USED_RUNS = {piece: lesson_run(NAME, SCRIPTS[NAME], piece, path=NEVER_USED,
                                     env={OUTPUT_ROOT: str(SCRATCH / "never_used")})  # its figure: not the check's
                   for piece in ("position tags", "token embeddings")}

# A learner's classic mistake planted in the attention the lesson uses (common/blocks.py's
# attention(), the plain formula, with its 1/sqrt(d_k) dropped), the lesson run at the defaults
# as the check runs it: the check itself must name the broken formula.
RIGHT, WRONG = " / math.sqrt(d_k)", ""
PLANTED = SCRATCH / "planted_mistake.py"
PLANTED.write_text("""
import inspect, runpy, sys
path, right, wrong = sys.argv[1:4]
sys.path.insert(0, str(__import__("pathlib").Path(path).resolve().parents[1]))
import common.blocks as blocks
source = inspect.getsource(blocks.attention)
assert source.count(right) == 1
exec(compile(source.replace(right, wrong), blocks.__file__, "exec"), blocks.__dict__)
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
""")
DROPPED_SQRT = lesson_run(NAME, SCRIPTS[NAME], RIGHT, WRONG, path=PLANTED,
                          env={OUTPUT_ROOT: str(SCRATCH / "planted")})  # its figure: not over the check's


@pytest.fixture(scope="module")
def tt():
    return load_script(NAME)


def lines_of(result):
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def outcomes_of(result):
    return {r["name"]: r["outcome"] for r in result.records}


def batch(tt, seed=0, n=128):
    """n training pairs of the lesson's sizes, [n, T] each."""
    return [torch.from_numpy(a) for a in tt.make_pairs(*tt.draw_strings(np.random.default_rng(seed), n), "reverse")]


# ---------------------------------------------------------------- the pieces against torch's

@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_label_smoothing_matches_torch(tt, epsilon):
    torch.manual_seed(0)
    scores = 3 * torch.randn(5, 7, tt.V)
    labels = torch.randint(tt.EOS, tt.V, (5, 7))
    labels[:, 4:] = tt.PAD  # padding positions do not count
    mine = tt.smoothed_loss(scores, labels, epsilon)
    theirs = F.cross_entropy(scores.reshape(-1, tt.V), labels.reshape(-1), label_smoothing=epsilon,
                             ignore_index=tt.PAD)
    torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    q = tt.smoothed_target(labels, epsilon)
    torch.testing.assert_close(q.sum(-1), torch.ones(5, 7))
    assert q[0, 0, labels[0, 0]].item() == pytest.approx(1 - epsilon + epsilon / tt.V)


def test_the_other_smoothing_convention_would_fail_the_same_check(tt):
    torch.manual_seed(0)
    scores, labels = 3 * torch.randn(6, tt.V), torch.randint(tt.EOS, tt.V, (6,))
    gold_exact = torch.full((6, tt.V), 0.1 / (tt.V - 1)).scatter(-1, labels[:, None], 0.9)
    other = -(gold_exact * torch.log_softmax(scores, -1)).sum(-1).mean()
    theirs = F.cross_entropy(scores, labels, label_smoothing=0.1)
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


def test_fast_attention_is_the_plain_formula_at_the_lessons_sizes(tt):
    """Training's fast path (fast=True: F.scaled_dot_product_attention in all three attention
    blocks) against the plain softmax(Q K^T / sqrt(d_k) + M) V, on a training batch of the
    lesson's sizes ([128, 7] pairs, padding and the causal mask, and without the mask): the
    same scores and the same gradient of the loss, to float32 rounding."""
    model = lesson_layers(tt, 7)
    src, tgt = batch(tt)
    dec_in = tt.shift_right(tgt)
    assert src.shape == (tt.BATCH, tt.ROW) == (128, 7) and (src == tt.PAD).any() and (dec_in == tt.PAD).any()
    for causal in (True, False):
        got = {}
        for fast in (False, True):
            model.zero_grad()
            scores, A = model(src, dec_in, causal, fast=fast)
            tt.smoothed_loss(scores, tgt).backward()
            got[fast] = scores.detach(), [p.grad.clone() for p in model.parameters()], A
        (plain, plain_grads, A), (fast, fast_grads, none) = got[False], got[True]
        assert A is not None and none is None  # the fast path keeps no weights
        torch.testing.assert_close(fast, plain, rtol=0, atol=2e-5)
        for p, q in zip(fast_grads, plain_grads, strict=True):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=2e-6)


def test_the_training_line_prints_the_adam_settings_training_uses(tt, adams_made):
    """The run prints Adam's betas and eps on its training line (neither the paper's 0.98 and
    1e-9 nor torch's 0.999 and 1e-8: week2/NOTES.md, section 12), and they are the ones train()
    hands torch.optim.Adam."""
    sources, targets, _ = tt.training_and_held_out(0, tt.EARLY, "reverse")
    list(tt.train(tt.build_model(0), sources[:1], targets[:1], True))
    (optimizer,) = adams_made
    betas, eps = optimizer.defaults["betas"], optimizer.defaults["eps"]
    assert (betas, eps) not in (((0.9, 0.98), 1e-9), ((0.9, 0.999), 1e-8))
    out, _ = recorded(tt.show_setup, tt.build_model(0), tt.STEPS, True)
    assert f"training: 400 steps of 128 fresh pairs, Adam with betas=({betas[0]}, {betas[1]}), eps={eps:g} " in out


# (dtype, losses within, weights within): in float64 the two loops are the same arithmetic; in
# float32, the run's own, Adam's step g / sqrt(v) is about lr whatever the gradient's size, so where a
# gradient is near 0 its float32 rounding moves the step (measured: 1.1e-5 in one of the 32 numbers of
# a LayerNorm after six steps, every other weight within 1e-6), as in week1/09's test.
PRECISION = [(torch.float64, 1e-12, 1e-10), (torch.float32, 1e-5, 1e-4)]


@pytest.mark.parametrize("dtype, losses_within, weights_within", PRECISION)
def test_training_with_the_fast_paths_is_the_plain_loop(tt, dtype, losses_within, weights_within):
    """train() (fast attention, torch.optim.Adam with fused=True, the schedule set per step) over
    six steps of the lesson's batches against the ordinary loop written out with the plain
    attention and the default Adam: the same losses and the same weights, to float64 rounding
    in float64 and to float32 rounding in float32 (the run's own)."""
    sources, targets, _ = tt.training_and_held_out(0, tt.EARLY, "reverse")
    mine = tt.build_model(0).to(dtype)
    steps_and_losses = list(tt.train(mine, sources[:6], targets[:6], True))
    assert [step for step, _ in steps_and_losses] == [1, 2, 3, 4, 5, 6]  # it yields each step, counted from 1
    losses = [loss for _, loss in steps_and_losses]
    theirs = tt.build_model(0).to(dtype)
    optimizer = torch.optim.Adam(theirs.parameters(), betas=(0.9, 0.9999), eps=1e-6)
    assert optimizer.defaults["fused"] is None and (tt.BETAS, tt.ADAM_EPS) == ((0.9, 0.9999), 1e-6)
    plain_losses = []
    for step, (src, tgt) in enumerate(zip(sources[:6], targets[:6], strict=True), start=1):
        loss = tt.smoothed_loss(theirs(src, tt.shift_right(tgt))[0], tgt)
        optimizer.param_groups[0]["lr"] = tt.learning_rate(step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        plain_losses.append(loss.item())
    assert losses == pytest.approx(plain_losses, abs=losses_within)
    for (name, p), q in zip(mine.named_parameters(), theirs.parameters(), strict=True):
        assert p.dtype == dtype
        torch.testing.assert_close(p, q, rtol=0, atol=weights_within, msg=name)
    assert (mine.out.weight - tt.build_model(0).out.weight.to(dtype)).abs().max() > 5e-3  # six steps moved them (0.011)


def copy_into_torch(block, mha):
    """The weights of one of the model's attention blocks (common.blocks.MultiHeadAttention)
    into an nn.MultiheadAttention."""
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([block.W_Q.weight, block.W_K.weight, block.W_V.weight]))
        mha.in_proj_bias.copy_(torch.cat([block.W_Q.bias, block.W_K.bias, block.W_V.bias]))
        mha.out_proj.weight.copy_(block.W_O.weight)
        mha.out_proj.bias.copy_(block.W_O.bias)


def ffn_and_norms(layer, norms):
    """The state dict entries of torch's post-LN layer for the model's layer's FFN and LayerNorms."""
    return {"linear1.weight": layer.ffn[0].weight, "linear1.bias": layer.ffn[0].bias,
            "linear2.weight": layer.ffn[2].weight, "linear2.bias": layer.ffn[2].bias,
            **{f"norm{i}.{kind}": getattr(layer, f"ln{i}").state_dict()[kind] for i in norms
               for kind in ("weight", "bias")}}


def tokens_with_padding(tt, lengths, width):
    """[B, width] rows of digits then <pad>: row b has lengths[b] real tokens."""
    rows = torch.randint(tt.EOS + 1, tt.V, (len(lengths), width))
    return rows.masked_fill(torch.arange(width) >= torch.tensor(lengths)[:, None], tt.PAD)


def lesson_layers(tt, seed):
    """The lesson's model with every LayerNorm and bias moved off its starting 1 and 0, so
    that a LayerNorm or a bias in the wrong place shows."""
    model = tt.build_model(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    return model


def test_the_encoder_is_torchs_post_ln_layer_on_the_embedded_source(tt):
    """Steps 1 and 2: embedding * sqrt(d_model) + PE, then torch's nn.TransformerEncoderLayer
    (norm_first=False) with the same weights and the source's padding hidden."""
    model = lesson_layers(tt, 2)
    theirs = nn.TransformerEncoderLayer(tt.D_MODEL, tt.HEADS, tt.D_FF, dropout=0.0, activation="relu",
                                        batch_first=True, norm_first=False)
    copy_into_torch(model.encoder.self_attn, theirs.self_attn)
    theirs.load_state_dict({**theirs.state_dict(), **ffn_and_norms(model.encoder, (1, 2))})
    torch.manual_seed(3)
    src = tokens_with_padding(tt, [7, 6, 4, 1], 7)
    x = model.embed(src) * tt.D_MODEL ** 0.5 + tt.sinusoidal_pe(7, tt.D_MODEL)
    # gradients on, so torch takes its ordinary path (its fast path skips padded positions)
    torch.testing.assert_close(model.encode(src), theirs(x, src_key_padding_mask=src == tt.PAD), rtol=0, atol=1e-5)


def test_the_decoder_is_torchs_post_ln_layer_then_the_output_layer(tt):
    """Steps 3 to 5: the shifted target embedded, torch's nn.TransformerDecoderLayer
    (norm_first=False) with the same weights, the causal mask and both paddings, then the
    output layer; the cross-attention weights as the plain formula gives them."""
    model = lesson_layers(tt, 4)
    theirs = nn.TransformerDecoderLayer(tt.D_MODEL, tt.HEADS, tt.D_FF, dropout=0.0, activation="relu",
                                        batch_first=True, norm_first=False)
    copy_into_torch(model.decoder.self_attn, theirs.self_attn)
    copy_into_torch(model.decoder.cross_attn, theirs.multihead_attn)
    theirs.load_state_dict({**theirs.state_dict(), **ffn_and_norms(model.decoder, (1, 2, 3))})
    torch.manual_seed(5)
    src, tgt = tokens_with_padding(tt, [7, 6, 3, 1], 7), tokens_with_padding(tt, [7, 7, 4, 2], 7)
    dec_in = tt.shift_right(tgt)
    memory = model.encode(src)
    x = model.embed(dec_in) * tt.D_MODEL ** 0.5 + tt.sinusoidal_pe(7, tt.D_MODEL)
    z = theirs(x, memory, tgt_mask=torch.triu(torch.ones(7, 7, dtype=torch.bool), 1),
               tgt_key_padding_mask=dec_in == tt.PAD, memory_key_padding_mask=src == tt.PAD)
    scores, A = model(src, dec_in)
    torch.testing.assert_close(scores, model.out(z), rtol=0, atol=1e-5)
    torch.testing.assert_close(model.decode(dec_in, memory, src)[0], z, rtol=0, atol=1e-5)
    assert A.shape == (4, tt.HEADS, 7, 7) and (A[(src == tt.PAD)[:, None, None, :].expand_as(A)] == 0).all()
    torch.testing.assert_close(A.sum(-1), torch.ones(4, tt.HEADS, 7))


def test_one_embedding_for_both_sides_and_the_pages_shift(tt):
    model = tt.build_model(0)
    assert [name for name, _ in model.named_children()] == ["embed", "encoder", "decoder", "out"]
    assert model.embed.weight.shape == (tt.V, tt.D_MODEL) and model.out.weight.shape == (tt.V, tt.D_MODEL)
    assert sum(p.numel() for p in model.parameters()) == 30_541
    torch.testing.assert_close(tt.PE, tt.sinusoidal_pe(tt.LONGER + 1, tt.D_MODEL), rtol=0, atol=0)
    target = torch.tensor([[5, 6, 7, tt.EOS, tt.PAD]])
    assert tt.shift_right(target).tolist() == [[tt.BOS, 5, 6, 7, tt.PAD]]


def test_data_reverses_and_held_out_strings_are_the_same_for_every_steps_and_unseen(tt):
    src, tgt, (held_src, held_tgt) = tt.training_and_held_out(3, tt.MAX_STEPS, "reverse")
    for s, t in zip(src.reshape(-1, tt.ROW)[:50], tgt.reshape(-1, tt.ROW)[:50], strict=True):
        digits = s[s > tt.EOS].tolist()
        assert t[t > tt.EOS].tolist() == digits[::-1] and (s == tt.EOS).sum() == 1 and (t == tt.EOS).sum() == 1
    assert tt.ROW == tt.MAX_LEN + 1 and (src[..., -1] != tt.PAD).any()  # rows as wide as the longest string needs
    # not one held-out string occurs in the longest stream --steps allows
    key = torch.tensor(tt.V) ** torch.arange(tt.ROW)
    assert len(held_src) == tt.HELD_OUT and not torch.isin(held_src @ key, src.reshape(-1, tt.ROW) @ key).any()
    assert ((held_src > tt.EOS).sum(1) >= 4).all()  # every string of 1 to 3 digits occurs in the stream
    short_src, short_tgt, short_held = tt.training_and_held_out(3, tt.EARLY, "reverse")
    assert torch.equal(short_src, src[:tt.EARLY]) and torch.equal(short_tgt, tgt[:tt.EARLY])  # stopped earlier
    assert torch.equal(short_held[0], held_src) and torch.equal(short_held[1], held_tgt)  # the same held-out set


def test_string_keys_tell_strings_apart_as_their_source_rows_do(tt):
    """The held-out strings are found unseen by their keys: two strings share a key exactly
    when their source rows are the same."""
    lengths, digits = tt.draw_strings(np.random.default_rng(0), 5000)  # many short strings come twice
    src, _ = tt.make_pairs(lengths, digits, "reverse")
    by_rows = np.unique(src, axis=0, return_inverse=True)[1].ravel()
    by_keys = np.unique(tt.string_keys(lengths, digits), return_inverse=True)[1].ravel()
    assert len(set(by_rows)) < 5000
    assert len(set(zip(by_rows, by_keys, strict=True))) == len(set(by_rows)) == len(set(by_keys))


# ---------------------------------------------------------------- training, and its verdicts

def test_lesson_hands_every_training_step_to_the_window_and_measures_exposure_at_step_early(tt):
    """lesson() hands the window (--live) every step train() yields, with the losses so far and
    the last one marked, and makes the exposure-bias evaluation during the training, at step
    EARLY (here 3 of 50): the held-out strings as evaluate() sees them then, not at the end."""
    held = tt.training_and_held_out(42, 50, "reverse")[2]
    seen = []

    class Window:
        def watch(self, step, so_far, model, last=False):
            seen.append((step, list(so_far), last, tt.evaluate(model, *held) if step == 3 else None))
            self.model = model

    window = Window()
    out, records = main_in_process(tt, "--steps", "50", EARLY=3, training_window=lambda args, *held: window)
    losses = seen[-1][1]
    assert [(step, so_far, last) for step, so_far, last, _ in seen] == [
        (step, losses[:step], step == 50) for step in range(1, 51)]
    assert f"  step 1, before any update: {losses[0]:.2f} " in out  # the losses the window was shown are the run's
    at_3 = seen[2][3]
    assert records["right tokens at step 3, with the gold prefix"]["value"] == at_3["forced"]
    assert records["right tokens at step 3, with its own guesses"]["value"] == at_3["free"]
    assert at_3["forced"] != tt.evaluate(window.model, *held)["forced"]  # (the trained model's: another number)


def recorded(show, *args):
    """What show(*args) prints (a Printed, as main_in_process's), and its records by name, read as
    run_all reads a run."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as monkeypatch, contextlib.redirect_stdout(out):
        monkeypatch.setenv(RECORDS, "1")
        show(*args)
    text, records = comparing.split_records(out.getvalue())
    printed = Printed(text.replace(OPEN, "").replace(CLOSE, ""))
    printed.marked = text
    return printed, {r["name"]: r for r in records}


def banded_as_the_check_reads(text, records):
    """The printed text (main_in_process's) as the check reads it, each measured number as this
    run's, and no problem in doing so."""
    compared, problems = comparing.compared(text.marked, list(records.values()))
    assert problems == []
    return compared


@pytest.mark.parametrize("end, holds", [(0.02, False), (-0.02, False), (0.005, True), (-0.005, True)])
def test_the_floor_line_judges_the_last_20_steps_on_either_side_of_the_floor(tt, end, holds):
    floor = tt.loss_floor()
    out, records = recorded(tt.show_loss, [3.0] * 80 + [1.0] * 20 + [floor + end] * 20)
    assert f"  mean of the last 20 steps, 101-120: {floor + end:.4f} (within 0.01 of the floor {floor:.4f})" in out
    assert records["training loss ends at the floor"]["outcome"] == (UPHOLDS if holds else CONTRADICTS)
    assert "  mean of the last 20 steps, 101-120: ‹this run's number› (within 0.01 of the floor " \
           "0.5372)" in banded_as_the_check_reads(out, records)


@pytest.mark.parametrize("early, holds", [(1.19, True), (1.21, False), (3.0, False)])  # either side of 1.20
def test_the_loss_fallen_by_step_100_line_at_its_threshold(tt, early, holds):
    out, records = recorded(tt.show_loss, [3.0] * 80 + [early] * 40)
    assert f"  mean of steps 81-100: {early:.4f} (below 1.20)" in out
    assert records["training loss fallen by step 100"]["outcome"] == (UPHOLDS if holds else CONTRADICTS)


def test_steps_100_prints_each_window_once_named_for_what_it_is(tt):
    """--steps 100: the learner trial read 'mean of steps 81-100 0.6453, of steps 81-100 0.6453';
    now the one window is named as both lines use it, each line judged by its own band."""
    out, records = recorded(tt.show_loss, [3.0] * 80 + [0.6453] * 20)
    lines = out.splitlines()
    assert lines[-2:] == ["  mean of steps 81-100: 0.6453 (below 1.20)",
                          "  mean of the last 20 steps, 81-100: 0.6453 (within 0.01 of the floor 0.5372)"]
    assert [r["shown"] for r in records.values()] == ["0.6453", "0.6453"]
    banded_as_the_check_reads(out, records)
    out, records = recorded(tt.show_loss, [3.0] * 50)  # --steps 50: no step 100 to judge
    assert "training loss fallen by step 100" not in records and "mean of steps 81-100" not in out


@pytest.mark.reads(DEFAULT_RUNS[NAME], PLAIN)
def test_the_floor_line_says_no_for_a_loss_below_the_floor(tt, runs):
    """Plain cross-entropy (eps = 0) has no floor at 0.5372: its loss runs down towards 0, far
    below the smoothed floor. The record must say so; a one-sided `mean < floor + 0.01` upheld it.
    (Measured ranges: week2/NOTES.md, section 12.)"""
    floor = tt.loss_floor()
    assert outcomes_of(runs[DEFAULT_RUNS[NAME]])["training loss ends at the floor"] == UPHOLDS
    plain = [line for line in lines_of(runs[PLAIN]) if "of the floor" in line]
    assert len(plain) == 1, plain
    end = float(plain[0].split("mean of the last 20 steps, 181-200: ")[1].split(" ")[0])
    assert end < floor - 0.1  # far below the floor, so the one-sided test would have upheld it
    assert plain[0] == f"  mean of the last 20 steps, 181-200: {end:.4f} (within 0.01 of the floor {floor:.4f})"
    assert outcomes_of(runs[PLAIN])["training loss ends at the floor"] == CONTRADICTS


@pytest.mark.parametrize("free, holds", [(0.70, True), (0.855, True), (0.86, False), (0.95, False)])  # 5 points: 0.855
def test_the_exposure_gap_is_judged_at_5_points(tt, free, holds):
    out, records = recorded(tt.show_exposure, {"forced": 0.905, "free": free})
    assert f"  fed its own guesses:       {free:.1%}" in out
    assert f"  free running, points worse: {100 * (0.905 - free):.1f} (at least 5)" in out
    assert records["exposure bias at step 50"]["outcome"] == (UPHOLDS if holds else CONTRADICTS)
    assert {r["outcome"] for name, r in records.items() if name.startswith("right tokens")} == {NOT_TESTED}
    compared = banded_as_the_check_reads(out, records)
    assert "  fed the gold prefix: ‹this run's number›" in compared
    assert "  free running, points worse: ‹this run's number› (at least 5)" in compared


@pytest.mark.parametrize("causal, taught, kept, same, verdict", [
    (True, 200, 200, True, "as the page says: with the future hidden"),
    # right with the gold prefix, wrong when writing alone, with the mask: the page's claim fails
    (True, 200, 150, True, "NOT AS THE PAGE SAYS: 50 of the 200 strings right with the gold prefix"),
    (True, 40, 30, True, "NOT AS THE PAGE SAYS: 10 of the 40"),
    (True, 200, 200, False, "NOT AS THE PAGE SAYS: the mask did not hide the future"),
    (True, 40, 40, True, "not trained enough to judge: only 40 of the 200"),
    (False, 200, 0, False, "as the page says: without the mask, position t read its answer"),
    (False, 200, 200, False, "NOT AS THE PAGE SAYS: without the mask it still learned to write on its own"),
    (False, 40, 0, False, "not trained enough to judge"),
])
def test_mask_verdict(tt, causal, taught, kept, same, verdict):
    """Fed what evaluate() measures: `taught` held-out strings right at every position with
    the gold prefix, `kept` of them also right when the model writes them alone."""
    assert tt.HELD_OUT == 200
    result = {"forced": taught / 200, "free": kept / 200, "exact": kept, "forced_exact": taught, "both_exact": kept}
    holds, saying = tt.mask_verdict(causal, result, same)
    assert saying.startswith(verdict)
    assert holds is (None if verdict.startswith("not trained") else not verdict.startswith("NOT AS THE PAGE SAYS"))


def test_of_those_counts_only_the_strings_also_right_with_the_gold_prefix(tt, model, held, monkeypatch):
    """The mask line's "of those, written right on its own", through the lesson's own counting
    (evaluate(), then show_mask()), fed a stand-in that writes every string right alone but
    string 0, and scores every position right with the gold prefix but string 1's first: string
    1 is written right alone and is not one of those right with the gold prefix, so it is not
    counted: 198 of the 199."""
    held_src, held_tgt = held
    assert (held_tgt[:2, 0] > tt.EOS).all()  # strings 0 and 1 start with a digit

    class GoldButOne:  # the teacher-forced pass: one-hot scores of the labels, string 1's first wrong
        def __call__(self, src, dec_in, causal=True):
            labels = held_tgt.clone()
            labels[1, 0] = (labels[1, 0] - 3 + 1) % 10 + 3  # another digit
            return F.one_hot(labels, tt.V).float(), None

    def writes_all_but_string_0(model, src, causal=True):
        written = held_tgt.clone()
        written[0, 0] = (written[0, 0] - 3 + 1) % 10 + 3  # another digit
        return written, None

    monkeypatch.setattr(tt, "generate", writes_all_but_string_0)
    final = tt.evaluate(GoldButOne(), held_src, held_tgt)
    assert (final["exact"], final["forced_exact"], final["both_exact"]) == (199, 199, 198)
    monkeypatch.undo()  # show_mask's other lines run the (untrained) model itself
    out, records = recorded(tt.show_mask, model, final, held_src, held_tgt, True)
    assert "    of those, written right on its own: 198/199 (all of them)" in out
    assert records["of those, written right on its own"]["value"] == 198
    assert records["of those, written right on its own"]["outcome"] == CONTRADICTS


# ---------------------------------------------------------------- the trained model

@pytest.mark.reads(DEFAULT_RUNS[NAME])
def test_training_reaches_every_held_out_string(runs):
    """Every measured run has all 200 held-out strings right at step 400 (week2/NOTES.md, section 12)."""
    lines = lines_of(runs[DEFAULT_RUNS[NAME]])
    assert "held-out strings decoded exactly: 200/200 (all 200)" in lines
    at = lines.index("  held-out strings right at every position with the gold prefix: 200/200 (all 200)")
    assert lines[at + 1] == "    of those, written right on its own: 200/200 (all of them)"


@pytest.fixture(scope="module")
def model(tt):
    """A model whose every weight, bias and LayerNorm is off its starting value (untrained:
    the generation loop and the parallel pass must agree whatever the weights)."""
    return lesson_layers(tt, 42)


@pytest.fixture(scope="module")
def held(tt):
    return tt.training_and_held_out(42, tt.EARLY, "reverse")[2]


def test_generation_loop_agrees_with_one_teacher_forced_pass(tt, model, held):
    held_src, _ = held
    written, step_scores = tt.generate(model, held_src)  # one token at a time
    read = torch.cat([torch.full((len(held_src), 1), tt.BOS), written[:, :-1]], dim=1)
    with torch.no_grad():
        parallel = model(held_src, read)[0]  # every position at once
        peeking = model(held_src, read, causal=False)[0]
    assert written.shape[1] > 1  # it wrote more than one token before every string had ended
    assert (parallel - step_scores).abs().max().item() < 1e-5
    assert torch.equal(parallel[..., tt.EOS:].argmax(-1) + tt.EOS, written)
    # the same pass without the mask lets position t see the tokens written after it
    assert (peeking - step_scores).abs().max().item() > 0.1


def test_prefix_by_prefix_is_the_loop_on_the_gold_input(tt, model, held):
    held_src, held_tgt = held
    dec_in, real = tt.shift_right(held_tgt), held_tgt != tt.PAD
    one_by_one = tt.prefix_by_prefix(model, held_src, dec_in)
    with torch.no_grad():
        at_once = model(held_src, dec_in)[0]
        peeking = model(held_src, dec_in, causal=False)[0]
    assert (at_once - one_by_one)[real].abs().max().item() < 1e-5
    assert (peeking - one_by_one)[real].abs().max().item() > 0.1


def figure_data(tt, model, held, task):
    """(the maps plot() was given, the arrays its two images show, the cells its red boxes
    mark, its title and where that title sits)."""
    held_src, held_tgt = held
    maps = tt.cross_attention_maps(model, held_src, held_tgt)
    full = (held_src > tt.EOS).sum(1) == tt.MAX_LEN
    example = int(full.nonzero()[0, 0])
    given = maps[example].numpy(), maps[full].mean(0).numpy()
    fig = tt.plot(*given, held_src[example], held_tgt[example], int(full.sum()), task)
    shown = [np.asarray(ax.images[0].get_array()) for ax in fig.axes[:2]]
    boxes = [sorted((round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax.patches) for ax in fig.axes[:2]]
    fig.canvas.draw()
    title = fig.get_suptitle(), fig._suptitle.get_window_extent().y1, fig.bbox.y1
    tt.plt.close(fig)
    return given, shown, boxes, title


@pytest.mark.parametrize("task", ["reverse", "copy"])
def test_figure_draws_the_maps_it_is_given_and_boxes_the_cells_to_read(tt, model, held, task):
    (one, mean), shown, boxes, (title, title_top, figure_top) = figure_data(tt, model, held, task)
    assert one.shape == mean.shape == (tt.MAX_LEN + 1, tt.MAX_LEN + 1)
    assert np.array_equal(shown[0], one) and np.array_equal(shown[1], mean)
    np.testing.assert_allclose(one.sum(1), 1, atol=1e-5)  # a full-length string has no padding
    np.testing.assert_allclose(mean.sum(1), 1, atol=1e-5)
    cells = sorted(enumerate(tt.mirror(tt.MAX_LEN, task).tolist()))  # (row t, the source position it must read)
    assert boxes == [cells, cells]
    assert cells[0] == ((0, 5) if task == "reverse" else (0, 0))
    assert "positions count from 0" in title and title_top <= figure_top - 5  # said, and clear of the edge


@pytest.mark.reads(DEFAULT_RUNS[NAME], COPY)
def test_reversing_reads_the_mirror_and_copying_the_diagonal(runs):
    """What the figure's right panel shows, as the runs print it: the rows of the averaged
    cross-attention peak on the mirror when reversing, on the diagonal when copying, and
    every held-out string comes out right either way (week2/NOTES.md, section 12)."""
    assert COPY in TRY_ITS[NAME]
    reverse, copy = runs[DEFAULT_RUNS[NAME]], runs[COPY]
    for run, peaks, what in ((reverse, "5 4 3 2 1 0", "mirror L-1-t"), (copy, "0 1 2 3 4 5", "same position t")):
        lines = lines_of(run)
        assert "held-out strings decoded exactly: 200/200 (all 200)" in lines
        assert f"    look most at source positions {peaks}" in lines  # under "  averaged over the ... strings"
        assert f"  every row on the {what}: yes" in lines
        assert [line for line in lines if line.startswith(f"  held-out rows whose largest weight is on the {what}: ")
                and line.endswith("% (at least 80% of the rows)")]
        outcomes = outcomes_of(run)
        assert outcomes[f"held-out rows whose largest cross-attention weight is on the {what}"] == UPHOLDS
        assert outcomes[f"the averaged map: every row on the {what}"] == UPHOLDS


def test_rows_on_the_mirror_are_measured_not_assumed(tt, held):
    """Maps that read the mirror, the diagonal, or nothing in particular (uniform): the share
    on the mirror is 1 only for the first, so the 80% line can fail."""
    held_src, _ = held
    lengths = (held_src > tt.EOS).sum(1)
    N, S = held_src.shape
    reading = {"reverse": torch.zeros(N, S, S), "copy": torch.zeros(N, S, S)}
    for k, L in enumerate(lengths.tolist()):
        for task, maps in reading.items():
            maps[k, torch.arange(L), tt.mirror(L, task)] = 1.0
    uniform = torch.full((N, S, S), 1 / S)
    assert tt.share_on_mirror(reading["reverse"], lengths, "reverse") == 1.0
    assert tt.share_on_mirror(reading["copy"], lengths, "copy") == 1.0
    assert tt.share_on_mirror(reading["copy"], lengths, "reverse") < 0.5
    assert tt.share_on_mirror(reading["reverse"], lengths, "copy") < 0.5
    assert tt.share_on_mirror(uniform, lengths, "reverse") < 0.5


# ---------------------------------------------------------------- the script's output

@pytest.mark.reads(*SETTINGS.values())
def test_output_is_the_same_under_every_kernel_setting(runs):
    """The text the check compares (each trained number's band in its place) and every record's
    outcome hold every trajectory measured (week2/NOTES.md, section 12)."""
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8")
    checks = run_all.checks_path(NAME).read_text(encoding="utf-8")
    for name, run in SETTINGS.items():
        result = runs[run]
        assert result.returncode == 0, f"{name}: {result.stderr}"
        compared, problems = result.compared()
        assert problems == [] and compared == golden, f"{name}:\n" + comparing.unified_diff(golden, compared, NAME)
        assert comparing.checks_text(result.records) == checks, name
        assert result.stderr == ""  # no progress display when stderr is not a terminal


@pytest.mark.reads(DEFAULT_RUNS[NAME])
def test_every_trained_number_is_printed_beside_its_band_or_bare(runs):
    """Count it: each number a record shows stands in the line before it, followed by the band
    its claim is judged by, or bare when no claim judges it (then recorded not tested)."""
    result = runs[DEFAULT_RUNS[NAME]]
    lines = result.stdout.splitlines()
    shown = [r for r in result.records if "shown" in r]
    printed = re.findall(f"{OPEN}(.*?){CLOSE}( \\([^()]*\\))?", result.marked)  # each as the check reads it
    assert len(shown) >= 18 and len(printed) == len(shown)
    for r, (text, band) in zip(shown, printed, strict=True):
        assert text == r["shown"], r["name"]
        if r["outcome"] == NOT_TESTED and r["threshold"] is None:
            assert not band and r.get("why"), r["name"]
        else:
            assert band == f" ({r['threshold']})", r
    assert [line for line in lines if line.startswith("  mean of the last 20 steps, 381-400: ")
            and line.endswith(" (within 0.01 of the floor 0.5372)")]


@pytest.mark.reads(DEFAULT_RUNS[NAME], NO_MASK)
def test_no_mask_flips_the_mask_verdict(runs):
    """The cheat's measured picture (week2/NOTES.md, section 12): perfect with the gold prefix, 0/200 alone."""
    masked, cheat = lines_of(runs[DEFAULT_RUNS[NAME]]), lines_of(runs[NO_MASK])
    assert runs[NO_MASK].returncode == 0 and runs[NO_MASK].stderr == ""  # (its figure built, not saved)
    verdict = [line for line in masked if line.startswith("Verdict:")][0]  # the mask's, the first (section 2)
    assert verdict == "Verdict: as the page says: with the future hidden, training teaches what generation needs"
    flipped = [line for line in cheat if line.startswith("Verdict:")][0]
    assert "as the page says: without the mask, position t read its answer from input t + 1" in flipped
    # a model that writes nothing alone cannot be judged on its decoder's inputs or on longer strings
    assert [line for line in cheat if line.startswith("Verdict: not tested: the model writes only 0 of the 200")]
    outcomes = outcomes_of(runs[NO_MASK])
    assert outcomes["held-out strings decoded exactly"] == CONTRADICTS  # 0/200 alone
    assert outcomes["held-out strings right at every position with the gold prefix"] == UPHOLDS
    assert outcomes["of those, written right on its own"] == UPHOLDS  # fewer than all of them: it copied its answers
    assert outcomes["position t's scores the same prefix by prefix as in one pass"] == UPHOLDS  # they differ
    assert outcomes["the causal mask: training teaches what generation needs"] == UPHOLDS
    assert outcomes["the decoder uses its own position tags and token embeddings"] == NOT_TESTED
    assert outcomes["strings longer than any trained"] == NOT_TESTED
    assert "held-out strings decoded exactly: 0/200 (all 200)" in cheat
    at = cheat.index("  held-out strings right at every position with the gold prefix: 200/200 (all 200)")
    assert cheat[at + 1] == "    of those, written right on its own: 0/200 (fewer than all of them)"
    apart = [line for line in cheat if line.startswith("    t + 1 words (as while generating), differ by ")]
    assert len(apart) == 1 and apart[0].endswith(" (0.001 or more)")
    assert "  step 1: input so far <s>              -> next </s>" in cheat  # it stops at once
    # the cross-attention still finds the mirror with the gold input in view: said on the spot
    assert ("  every row on the mirror L-1-t: yes (with the gold input in view, which also holds the answer: "
            "alone it wrote 0/200 right)") in cheat


@pytest.mark.reads(DEFAULT_RUNS[NAME], NO_MASK, DROPPED_SQRT)
def test_a_dropped_sqrt_d_k_fails_the_check_and_names_the_formula(runs):
    """The model's attention (common/blocks.py's, the plain formula) against torch's, printed as a
    noise line: at the defaults and without the mask, rounding; with 1/sqrt(d_k) dropped from
    that formula (training's fast path is torch's own, so the model still learns), the check
    itself fails and says the formula is wrong."""
    for run in (DEFAULT_RUNS[NAME], NO_MASK):
        noise = [line for line in lines_of(runs[run]) if line.startswith("max |by hand - torch|=")]
        assert len(noise) == 1 and comparing.is_noise(comparing.noise_value(noise[0])[1]), noise
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8")
    planted = runs[DROPPED_SQRT]
    assert planted.returncode == 0, planted.stderr[-2000:]
    assert outcomes_of(planted)["attention by hand is torch's"] == CONTRADICTS
    assert not comparing.outputs_match(golden, planted.compared()[0])
    reasons = comparing.refusals(NAME, planted)
    assert any("max |by hand - torch| should be float rounding noise" in reason and "the formula is wrong" in reason
               for reason in reasons), reasons


# ---------------------------------------------------------------- the pages' cautions, run on the trained model

@pytest.mark.parametrize("world, holds", [
    (lambda scores: torch.softmax(scores, dim=-1), True),  # over the V scores of a position: the page's
    (lambda scores: torch.softmax(scores, dim=1), False),  # over the positions: rows do not sum to 1
    (lambda scores: torch.softmax(scores, dim=-1) * (1 + 5e-7), True),  # within 1e-6 of 1
    (lambda scores: torch.softmax(scores, dim=-1) * (1 + 2e-6), False),  # beyond it
])
def test_the_softmax_rows_line_fails_for_rows_that_do_not_sum_to_one(tt, model, held, monkeypatch, world, holds):
    monkeypatch.setattr(tt, "next_word_probabilities", world)
    out, records = recorded(tt.show_output_layer, model, *held, True)
    assert f"-> scores [B, T, V] = [{tt.HELD_OUT}, {tt.ROW}, {tt.V}]" in out
    record = records["every softmax row sums to 1"]
    assert out.rstrip().endswith(f"    off by {record['shown']} (every row within 1e-06 of 1)")
    assert record["outcome"] == (UPHOLDS if holds else CONTRADICTS)


@pytest.mark.reads(DEFAULT_RUNS[NAME], *NEVER_USED_RUNS.values())
def test_a_decoder_that_never_used_its_tags_or_embeddings_turns_the_verdict(runs):
    """The trained decoder needs both of its own inputs (week2/NOTES.md, section 12); a model
    trained without one of them learns the task anyway (199 or 200 of 200) and does not need it."""
    verdict = "Verdict: as the page says: the decoder has its own position tags and token embeddings, and"
    assert any(line.startswith(verdict) for line in lines_of(runs[DEFAULT_RUNS[NAME]]))
    for piece, run in NEVER_USED_RUNS.items():
        lines = lines_of(runs[run])
        (trained,) = [line for line in lines if line.startswith("  as trained: ")]
        assert int(trained.split(": ")[1].split("/")[0]) >= 180, piece
        assert trained.endswith(" (at least 90%, needed to judge the lines below)"), piece
        turned = [line for line in lines if line.startswith("Verdict: NOT AS THE PAGE SAYS: the decoder writes 50% "
                                                            "or more of the strings right without its ")]
        assert len(turned) == 1 and piece in turned[0], piece  # (the wrapper trained it without that piece)
        outcomes = outcomes_of(runs[run])
        assert outcomes["the decoder uses its own position tags and token embeddings"] == CONTRADICTS
        assert outcomes[f"the decoder's inputs: strings right without its {piece}"] == CONTRADICTS


@pytest.mark.parametrize("trained, without, holds", [
    (200, {"position tags": 0, "token embeddings": 0}, True),
    (180, {"position tags": 99, "token embeddings": 99}, True),  # 90% learned; fewer than 50% without
    (179, {"position tags": 0, "token embeddings": 0}, None),  # not learned: not judged
    (200, {"position tags": 100, "token embeddings": 0}, False),  # half without the tags: not needed
    (200, {"position tags": 0, "token embeddings": 100}, False),
])
def test_the_decoder_inputs_verdict_at_its_thresholds(tt, trained, without, holds):
    assert tt.HELD_OUT == 200 and tt.LEARNED == 0.9 and tt.FEW == 0.5
    assert tt.inputs_verdict(trained, without)[0] is holds


def test_the_decoder_inputs_lines_print_each_count_beside_its_band(tt, model, held, monkeypatch):
    """The counts with a piece taken away, fed through the lesson's own lines and records: each
    count judged by 'fewer than 50%' once the model has learned, not judged before."""
    right = {"position tags": 100, "token embeddings": 3}
    monkeypatch.setattr(tt, "written_right", lambda model, src, tgt, causal: right[model.piece])  # (each taken away)
    out, records = recorded(tt.show_decoder_inputs, model, {"exact": 200}, *held, True)
    assert "  without the decoder's position tags: 100/200 (fewer than 50%)" in out
    assert "  every decoder token embedding replaced by one vector (their average): 3/200 (fewer than 50%)" in out
    outcomes = {name: r["outcome"] for name, r in records.items()}
    assert outcomes == {"the decoder's inputs: strings right as trained": UPHOLDS,
                        "the decoder's inputs: strings right without its position tags": CONTRADICTS,
                        "the decoder's inputs: strings right without its token embeddings": UPHOLDS,
                        "the decoder uses its own position tags and token embeddings": CONTRADICTS}
    banded_as_the_check_reads(out, records)
    out, records = recorded(tt.show_decoder_inputs, model, {"exact": 150}, *held, True)  # not learned
    assert {r["outcome"] for r in records.values()} == {NOT_TESTED}
    assert "  without the decoder's position tags: 100/200 (not tested)" in out and "(fewer than 50%)" not in out
    banded_as_the_check_reads(out, records)


def test_the_longer_strings_are_one_digit_longer_than_any_trained_and_fit_their_rows(tt):
    src, tgt = tt.longer_strings("reverse")
    assert src.shape == tgt.shape == (tt.HELD_OUT, tt.LONGER + 1) == (200, 8)
    assert ((src > tt.EOS).sum(1) == tt.LONGER).all() and tt.LONGER == tt.MAX_LEN + 1
    assert (src[:, tt.LONGER] == tt.EOS).all() and (tgt[:, tt.LONGER] == tt.EOS).all()
    assert torch.equal(tgt[:, :tt.LONGER], src[:, :tt.LONGER].flip(1))
    assert len(tt.PE) >= src.shape[1]  # a position tag for every position of the longer rows
    torch.testing.assert_close(tt.PE[:tt.ROW], tt.sinusoidal_pe(tt.ROW, tt.D_MODEL), rtol=0, atol=0)


@pytest.mark.parametrize("trained, longer, holds", [
    (200, 41, True), (200, 99, True),  # fewer than half of the longer strings right
    (200, 100, None),  # half or more: this model shows no failure, nothing to judge
    (179, 0, None),  # not learned the trained lengths: not judged
])
def test_the_longer_verdict_at_its_thresholds(tt, trained, longer, holds):
    assert tt.longer_verdict(trained, longer)[0] is holds


def test_a_model_that_writes_longer_strings_right_turns_the_longer_verdict(tt, model, monkeypatch):
    """A stand-in that reverses any string (what a model that extrapolates would write), fed
    through the lesson's own counting and verdict: the caution is then not shown."""
    def reverses(model, src, causal=True):
        digits = [row[row > tt.EOS].flip(0).tolist() + [tt.EOS] for row in src]
        return torch.tensor([row + [tt.PAD] * (src.shape[1] - len(row)) for row in digits]), None

    out, records = recorded(tt.show_longer, model, {"exact": 200}, "reverse", True)
    assert records["strings longer than any trained"]["outcome"] == UPHOLDS  # writes none right
    assert records["strings of 7 digits right"]["outcome"] == UPHOLDS
    banded_as_the_check_reads(out, records)
    monkeypatch.setattr(tt, "generate", reverses)
    out, records = recorded(tt.show_longer, model, {"exact": 200}, "reverse", True)
    assert "written right: 200/200 (not tested)" in out and "(fewer than 50%)" not in out  # no band it is not judged by
    assert "Verdict: not tested: this model wrote 50% or more" in out
    assert records["strings longer than any trained"]["value"] == "trained lengths 200, 7 digits 200"
    assert records["strings of 7 digits right"]["outcome"] == NOT_TESTED
    assert records["strings of 7 digits right"]["threshold"] is None
    assert "written right: ‹this run's number› (not tested)" in banded_as_the_check_reads(out, records)


@pytest.mark.parametrize("trained, judged", [(200, True), (180, True), (179, False)])
def test_the_longer_count_prints_its_band_only_where_it_judges(tt, model, monkeypatch, trained, judged):
    """The 7-digit count (here 41 of 200, fewer than half) stands beside 'fewer than 50%' only
    when the model has learned the trained lengths, so that the band judges it; else beside
    'not tested'. The gate's own count stands beside what it gates."""
    monkeypatch.setattr(tt, "written_right", lambda model, src, tgt, causal: 41)
    out, records = recorded(tt.show_longer, model, {"exact": trained}, "reverse", True)
    count = records["strings of 7 digits right"]
    assert count["outcome"] == (UPHOLDS if judged else NOT_TESTED)
    assert out.count("41/200 (fewer than 50%)") == judged and out.count("41/200 (not tested)") == (not judged)
    assert f"written right: {trained}/200 (at least 90%, needed to judge the longer strings)" in out
    banded_as_the_check_reads(out, records)


def test_a_later_input_moves_earlier_positions_only_without_the_mask(tt, model, held):
    held_src, held_tgt = held
    dec_in = tt.shift_right(held_tgt)
    assert tt.moved_by_a_later_input(model, held_src, dec_in, causal=True) == 0.0  # not a bit
    assert tt.moved_by_a_later_input(model, held_src, dec_in, causal=False) >= tt.SAME


FINAL = {"forced": 1.0, "free": 1.0, "exact": 200, "forced_exact": 200, "both_exact": 200}


def test_a_mask_one_place_off_turns_the_later_input_line(tt, model, held, monkeypatch):
    """The lesson's own measurement and line with a mask that lets position t see input t + 1."""
    monkeypatch.setattr(tt, "causal_mask", lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=2))
    held_src, held_tgt = held
    assert tt.moved_by_a_later_input(model, held_src, tt.shift_right(held_tgt), causal=True) >= tt.SAME
    out, records = recorded(tt.show_mask, model, FINAL, *held, True)
    moved = records["a later input: earlier positions moved, with the mask"]
    assert f"    before k move by {moved['shown']} (below 0.001) with the mask, by " in out
    assert moved["outcome"] == CONTRADICTS
    assert records["a later input moves earlier positions only without the mask"]["outcome"] == CONTRADICTS
    assert records["position t's scores the same prefix by prefix as in one pass"]["outcome"] == CONTRADICTS
    banded_as_the_check_reads(out, records)


@pytest.mark.parametrize("with_mask, without, holds", [
    (0.0, 1.0, True), (0.00099, 0.001, True),  # below 0.001 with the mask, 0.001 or more without
    (0.001, 1.0, False), (0.0, 0.00099, False), (0.002, 0.002, False),
])
def test_the_later_input_line_at_its_threshold(tt, model, held, monkeypatch, with_mask, without, holds):
    moved = {True: with_mask, False: without}
    monkeypatch.setattr(tt, "moved_by_a_later_input", lambda model, src, dec_in, causal: moved[causal])
    out, records = recorded(tt.show_mask, model, FINAL, *held, True)
    assert records["a later input moves earlier positions only without the mask"]["outcome"] == (
        UPHOLDS if holds else CONTRADICTS)
    assert (f"    before k move by {with_mask:.2g} (below 0.001) with the mask, by {without:.2g} (0.001 or more) "
            "without it") in out
    compared = banded_as_the_check_reads(out, records)  # (the same number twice: each beside its band)
    assert (f"    before k move by {THIS_RUN} (below 0.001) with the mask, by {THIS_RUN} (0.001 or more) "
            "without it") in compared


# ---------------------------------------------------------------- each Try it line, as --help prints it

def records_by_name(result):
    """A run's records by name (its exit status first: a Try it line must run)."""
    assert result.returncode == 0, result.stderr[-2000:]
    return {r["name"]: r for r in result.records}


def no_mask_promise(records, default):
    """--no-mask: "every answer is read from the next input, so it is perfect with the gold prefix
    and writes none of the strings right on its own"."""
    return (records["a later input: earlier positions moved, without the mask"]["outcome"] == UPHOLDS
            and records["the causal mask: training teaches what generation needs"]["outcome"] == UPHOLDS
            and records["held-out strings right at every position with the gold prefix"]["value"] == 200
            and records["held-out strings decoded exactly"]["value"] == 0)


def copy_promise(records, default):
    """--task copy: "the alignment becomes the diagonal"."""
    return all(records[name]["outcome"] == UPHOLDS for name in (
        "held-out rows whose largest cross-attention weight is on the same position t",
        "the averaged map: every row on the same position t"))


def too_few_steps_promise(records, default):
    """--steps 100: "stopped too early: fewer held-out strings right (how many depends on the CPU)"."""
    early, full = (r["held-out strings decoded exactly"]["value"] for r in (records, default))
    return early < full == 200


def other_seed_promise(records, default):
    """--seed 7: "other starting weights and training strings: the same verdicts" (and its own
    numbers: a run that ignored --seed would be the default run again)."""
    return ({name: r["outcome"] for name, r in records.items()} == {name: r["outcome"] for name, r in default.items()}
            and {name: r["value"] for name, r in records.items()} != {name: r["value"] for name, r in default.items()})


TRY_IT_PROMISES = {("--no-mask",): no_mask_promise, ("--task", "copy"): copy_promise,
                   ("--steps", "100"): too_few_steps_promise, ("--seed", "7"): other_seed_promise}


@pytest.mark.reads(DEFAULT_RUNS[NAME], *TRY_ITS[NAME])
def test_each_try_it_line_does_what_it_says(runs):
    """Each Try it line of --help, run as the learner would copy it, holds what its words
    promise, read from that run's records beside the default run's (week2/NOTES.md, section 12)."""
    assert [run.argv for run in TRY_ITS[NAME]] == list(TRY_IT_PROMISES)  # every line has its promise here
    default = records_by_name(runs[DEFAULT_RUNS[NAME]])
    for run in TRY_ITS[NAME]:
        assert TRY_IT_PROMISES[run.argv](records_by_name(runs[run]), default), run


def block_inputs(module, name, seen):
    """Record each call of `module` (a MultiHeadAttention) as seen[name]: its queries' input,
    its keys' and values' input, and its mask broadcast to [N, h, T_q, T_k] (None: no mask)."""
    def hook(block, args, kwargs):
        x_q = args[0]
        x_kv = args[1] if len(args) > 1 else kwargs.get("x_kv")
        x_kv = x_q if x_kv is None else x_kv
        mask = args[2] if len(args) > 2 else kwargs.get("mask")
        shape = (x_q.shape[0], block.h, x_q.shape[1], x_kv.shape[1])
        seen.setdefault(name, []).append((x_q, x_kv, None if mask is None else mask.expand(shape)))
    return module.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("causal", [True, False])
def test_the_torch_comparison_feeds_each_block_what_the_model_feeds_it(tt, model, held, causal):
    """'the attention above ... against torch's': attention_against_torch hands each of the three
    attention blocks (and torch's module, given the same) exactly the inputs the model's own pass
    hands it: the encoder's embedded source and its padding mask, the decoder's embedded input and
    its mask (the future too, with the mask on), and to the cross-attention the decoder's queries
    after its masked self-attention, z1, and the memory. A comparison fed the embedded input as
    the cross-attention's queries agreed with torch all the same: this test is what tells."""
    src, tgt = held[0][:16], held[1][:16]
    model64 = copy.deepcopy(model).double()
    ours, compared = {}, {}
    blocks = {"encoder self-attention": model64.encoder.self_attn, "decoder self-attention": model64.decoder.self_attn,
              "cross-attention": model64.decoder.cross_attn}
    hooks = [block_inputs(block, name, ours) for name, block in blocks.items()]
    with torch.no_grad():
        model64(src, tt.shift_right(tgt), causal)
    for hook in hooks:
        hook.remove()
    real_deepcopy = copy.deepcopy

    def hooked_copy(obj, *rest):  # the copy attention_against_torch makes, with the recording hooks on it
        made = real_deepcopy(obj, *rest)
        if isinstance(made, tt.Transformer):
            for name, block in (("encoder self-attention", made.encoder.self_attn),
                                ("decoder self-attention", made.decoder.self_attn),
                                ("cross-attention", made.decoder.cross_attn)):
                block_inputs(block, name, compared)
        return made

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tt.copy, "deepcopy", hooked_copy)
        assert tt.attention_against_torch(model64, src, tgt, causal) < tt.AGREE
    assert ours.keys() == compared.keys() == blocks.keys()
    for name in blocks:  # (it calls some blocks twice: once to make the next block's input, once to compare)
        (mine,) = ours[name]
        for theirs in compared[name]:
            for what, a, b in zip(("queries' input", "keys' and values' input", "mask"), mine, theirs, strict=True):
                assert (a is None) == (b is None) and (a is None or torch.equal(a, b)), f"{name}: its {what} differs"
    future = ours["decoder self-attention"][0][2][:, 0]  # [N, T, T]
    assert bool(future[:, 0, 1:].all()) == causal  # the mask hides the future exactly when it is on


def layer_inputs(layer, name, seen):
    """Record each call of one of the model's layers (common/blocks.py's EncoderLayer or
    DecoderLayer) as seen[name]: {its input x, the memory, and each mask broadcast to [N, 1, T_q,
    T_k] (True = hidden)}."""
    def hook(module, args, kwargs):
        named = dict(zip(("x", "memory")[:len(args)], args, strict=True)) | kwargs
        masks = {key: named.get(key) for key in ("mask", "self_mask", "memory_mask") if key in named}
        T_q = named["x"].shape[1]
        seen.setdefault(name, []).append({"x": named["x"], "memory": named.get("memory"), **{
            key: None if m is None else m.expand(len(named["x"]), 1, T_q, m.shape[-1]) for key, m in masks.items()}})
    return layer.register_forward_pre_hook(hook, with_kwargs=True)


def torch_layers_seen(seen):
    """torch's two layers, as subclasses that record each call's inputs in seen, each mask as
    ours: [N, 1, T_q, T_k], True = hidden."""
    def hidden(N, T_q, T_k, square=None, padding=None):
        out = torch.zeros(N, 1, T_q, T_k, dtype=torch.bool)
        if square is not None:
            out = out | square.bool()
        return out if padding is None else out | padding[:, None, None, :]

    class Encoder(nn.TransformerEncoderLayer):
        def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
            N, S = src.shape[:2]
            seen.setdefault("encoder", []).append({"x": src, "mask": hidden(N, S, S, src_mask, src_key_padding_mask)})
            return super().forward(src, src_mask, src_key_padding_mask, is_causal)

    class Decoder(nn.TransformerDecoderLayer):
        def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                    memory_key_padding_mask=None, **rest):
            (N, T), S = tgt.shape[:2], memory.shape[1]
            seen.setdefault("decoder", []).append({
                "x": tgt, "self_mask": hidden(N, T, T, tgt_mask, tgt_key_padding_mask),
                "memory_mask": hidden(N, T, S, memory_mask, memory_key_padding_mask)})
            return super().forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                                   **rest)

    return Encoder, Decoder


@pytest.mark.parametrize("causal", [True, False])
def test_the_post_ln_comparison_feeds_each_layer_what_the_model_feeds_it(tt, model, held, causal):
    """'the trained layers against torch's post-LN layers ... on the held-out pairs':
    layers_against_torch hands the model's two layers, and torch's, exactly what the model's own
    pass hands its layers: the embedded source and its padding; the embedded decoder input (the
    labels shifted right), its padding and (with the mask on) the future; the memory. Both sides
    fed the unshifted labels agreed all the same: this test is what tells."""
    src, tgt = held[0][:16], held[1][:16]
    model64 = copy.deepcopy(model).double()
    ours, compared, theirs = {}, {}, {}
    hooks = [layer_inputs(model64.encoder, "encoder", ours), layer_inputs(model64.decoder, "decoder", ours)]
    with torch.no_grad():
        model64(src, tt.shift_right(tgt), causal)
    for hook in hooks:
        hook.remove()
    real_deepcopy = copy.deepcopy

    def hooked_copy(obj, *rest):  # the copy layers_against_torch makes, with the recording hooks on it
        made = real_deepcopy(obj, *rest)
        if isinstance(made, tt.Transformer):
            layer_inputs(made.encoder, "encoder", compared)
            layer_inputs(made.decoder, "decoder", compared)
        return made

    encoder, decoder = torch_layers_seen(theirs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tt.copy, "deepcopy", hooked_copy)
        patch.setattr(nn, "TransformerEncoderLayer", encoder)
        patch.setattr(nn, "TransformerDecoderLayer", decoder)
        assert tt.layers_against_torch(model64, src, tgt, causal) < tt.AGREE
    assert ours.keys() == compared.keys() == theirs.keys() == {"encoder", "decoder"}
    for name in ("encoder", "decoder"):
        (mine,) = ours[name]
        for side, calls in (("ours", compared[name]), ("torch's", theirs[name])):
            (call,) = calls
            for what, given in call.items():
                if what != "memory":  # (torch's layer is handed torch's memory: its own encoder's, from the same input)
                    assert torch.equal(given, mine[what]), f"{side} {name}: its {what} differs"
    assert torch.equal(compared["decoder"][0]["memory"], ours["decoder"][0]["memory"])
    future = ours["decoder"][0]["self_mask"][:, 0]  # [N, T, T]
    assert bool(future[:, 0, 1:].all()) == causal  # the mask hides the future exactly when it is on


def test_greedy_decoding_never_writes_pad_or_start_even_when_they_score_highest(tt, model, held):
    """The docstring's promise, held by construction (the choice is made among </s> and the
    digits only) and tested where training cannot keep it: an output layer whose largest
    scores are on <pad> and <s> at every step. The decoder still writes a digit or </s>: the
    best of those, each step."""
    favouring = copy.deepcopy(model)
    with torch.no_grad():
        favouring.out.bias[tt.PAD] += 1e3
        favouring.out.bias[tt.BOS] += 2e3
    written, scores = tt.generate(favouring, held[0][:32])
    assert (scores.argmax(-1) == tt.BOS).all()  # every step, <s> scored highest, then <pad>
    assert written.min() >= tt.EOS and written.max() < tt.V
    assert torch.equal(written, scores[..., tt.EOS:].argmax(-1) + tt.EOS)  # the best of the others


def test_the_schedules_first_three_steps_written_out(tt, rates_used):
    """The rate each of the first three updates uses, written out from the page's formula
    lr(s) = c d^-0.5 min(s^-0.5, s w^-1.5) with c = 0.5, d = 32, w = 30, on the ramp (s < w):
    0.5 / sqrt(32) x s / 30^1.5 = 0.000538, 0.001076, 0.001614. Steps count from 1: a count from
    0 would use 0, then 0.000538, ...; one from 2, 0.001076 first."""
    sources, targets, _ = tt.training_and_held_out(0, tt.EARLY, "reverse")
    list(tt.train(tt.build_model(0), sources[:3], targets[:3], True))
    assert rates_used == pytest.approx([0.00053791, 0.00107583, 0.00161374], rel=1e-4)


def pre_norm_encoder(layer, x, mask=None, fast=False):
    U = x + layer.self_attn(layer.ln1(x), mask=mask)[0]
    return U + layer.ffn(layer.ln2(U))


def no_ffn_shortcut_decoder(layer, x, memory, self_mask=None, memory_mask=None, fast=False):
    z1 = layer.ln1(x + layer.self_attn(x, mask=self_mask)[0])
    read, A = layer.cross_attn(z1, memory, mask=memory_mask)
    z2 = layer.ln2(z1 + read)
    return layer.ln3(layer.ffn(z2)), A


def gelu_ffn(model):
    model.decoder.ffn[1] = nn.GELU()


@pytest.mark.parametrize("rewire", [
    None, gelu_ffn, lambda model: setattr(model.encoder, "forward", pre_norm_encoder.__get__(model.encoder)),
    lambda model: setattr(model.decoder, "forward", no_ffn_shortcut_decoder.__get__(model.decoder))],
    ids=["post-LN, ReLU", "GELU", "pre-norm encoder", "the FFN's shortcut dropped"])
@pytest.mark.parametrize("causal", [True, False])
def test_the_post_ln_line_tells_the_wirings_apart(tt, model, held, rewire, causal):
    """'the trained layers against torch's post-LN layers': the lesson's wiring agrees to float64
    rounding; another activation, a LayerNorm before its sublayer or a shortcut dropped (each of
    which the trained bands let through) is far off."""
    mine = copy.deepcopy(model)
    if rewire is not None:
        rewire(mine)
    gap = tt.layers_against_torch(mine, held[0][:32], held[1][:32], causal)
    assert (gap <= tt.AGREE) == (rewire is None), gap
