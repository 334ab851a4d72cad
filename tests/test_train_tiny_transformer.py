"""week2/12_train_tiny_transformer: its pieces against torch's (attention, the post-LN encoder and
decoder layers, label smoothing, the schedule, Adam), its generation loop against one parallel
pass, the data its figure shows, its verdicts (the loss floor, the mask, the softmax rows, the
decoder's own inputs, longer strings, a later input) in the cases that must flip them and at
their thresholds, its output under the kernel settings that change training trajectories, and a
planted mistake in its attention that the check itself catches. No test trains a model in this
process: what trained models do is read from declared runs (conftest.py), which run once a
session. Measured ranges: week2/NOTES.md, section 12."""

from common import OUTPUT_ROOT
from common.records import collected

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import run_all
from tests.conftest import DEFAULT_RUNS, SCRATCH, SCRIPTS, TRY_ITS, lesson_run, load_script
from tests.test_portability import RUNS as PORTABILITY_RUNS

NAME = "week2/12_train_tiny_transformer"
# The kernel settings that give other training trajectories on the same CPU (and no setting):
# the very runs tests/test_portability.py holds to the golden files, read here once more.
SETTINGS = {"none": DEFAULT_RUNS[NAME], **{setting: run for (setting, name), run in PORTABILITY_RUNS.items()
                                           if name == NAME}}
NO_MASK = lesson_run(NAME, "--no-mask", "--figure", SCRATCH / "cheat.png")  # (its figure drawn too)
# --table changes only what is printed: the default figure is still saved (under the
# check's folder, as a default run's)
TABLE = lesson_run(NAME, "--table")
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
lesson.smoothed_loss = lambda logits, labels: smoothed(logits, labels, epsilon=0.0)
sys.argv = [path, *sys.argv[2:]]
lesson.main()
""")
PLAIN = lesson_run(NAME, SCRIPTS[NAME], "--steps", "200", path=PLAIN_LOSS)

# Models that never used one of the decoder's own inputs: the lesson trained (and run) with its
# decoder's position tags left out, or with every decoder token embedding one vector. Taking the
# piece away then changes nothing, and the verdict on the decoder's own inputs must turn.
NEVER_USED = SCRATCH / "decoder_never_used.py"
NEVER_USED.write_text("""
import importlib.util, sys
path, piece = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("lesson", path)
lesson = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lesson)
original = lesson.decoder_input
lesson.decoder_input = lambda model, dec_in, without=None: original(model, dec_in, piece)
sys.argv = [path]
lesson.main()
""")
NEVER_USED_RUNS = {piece: lesson_run(NAME, SCRIPTS[NAME], piece, path=NEVER_USED,
                                     env={OUTPUT_ROOT: str(SCRATCH / "never_used")})  # its figure: not the check's
                   for piece in ("position tags", "token embeddings")}

# A learner's classic mistake planted in the lesson's attention (the 1/sqrt(d_k) dropped),
# run at the defaults as the check runs it: the check itself must name the broken formula.
RIGHT, WRONG = "/ math.sqrt(d_k)", ""
PLANTED = SCRATCH / "planted_mistake.py"
PLANTED.write_text("""
import sys
path, right, wrong = sys.argv[1:4]
source = open(path, encoding="utf-8").read()
assert source.count(right) == 1
sys.argv = [path]
exec(compile(source.replace(right, wrong), path, "exec"), {"__name__": "__main__", "__file__": path})
""")
DROPPED_SQRT = lesson_run(NAME, SCRIPTS[NAME], RIGHT, WRONG, path=PLANTED,
                          env={OUTPUT_ROOT: str(SCRATCH / "planted")})  # its figure: not over the check's


@pytest.fixture(scope="module")
def tt():
    return load_script(NAME)


def lines_of(result):
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


# ---------------------------------------------------------------- the pieces against torch's

@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_label_smoothing_matches_torch(tt, epsilon):
    torch.manual_seed(0)
    logits = 3 * torch.randn(5, 7, tt.N_WORDS)
    labels = torch.randint(tt.EOS, tt.N_WORDS, (5, 7))
    labels[:, 4:] = tt.PAD  # padding positions do not count
    mine = tt.smoothed_loss(logits, labels, epsilon)
    theirs = F.cross_entropy(logits.reshape(-1, tt.N_WORDS), labels.reshape(-1), label_smoothing=epsilon,
                             ignore_index=tt.PAD)
    torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    q = tt.smoothed_target(labels, epsilon)
    torch.testing.assert_close(q.sum(-1), torch.ones(5, 7))
    assert q[0, 0, labels[0, 0]].item() == pytest.approx(1 - epsilon + epsilon / tt.N_WORDS)


def test_the_other_smoothing_convention_would_fail_the_same_check(tt):
    torch.manual_seed(0)
    logits, labels = 3 * torch.randn(6, tt.N_WORDS), torch.randint(tt.EOS, tt.N_WORDS, (6,))
    gold_exact = torch.full((6, tt.N_WORDS), 0.1 / (tt.N_WORDS - 1)).scatter(-1, labels[:, None], 0.9)
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


def test_adam_on_one_vector_matches_torch(tt):
    """The lesson's Adam (common.blocks.adam_step, its betas and eps, the schedule's rate)
    on all weights as one vector moves every weight as torch.optim.Adam does on the model's
    own parameters."""
    torch.manual_seed(0)
    mine = nn.Linear(4, 3, dtype=torch.float64)
    theirs = nn.Linear(4, 3, dtype=torch.float64)
    theirs.load_state_dict(mine.state_dict())
    x = torch.randn(16, 4, dtype=torch.float64)
    w, g = tt.as_one_vector(mine)
    state = tt.adam_state([w])
    optimizer = torch.optim.Adam(theirs.parameters(), betas=tt.BETAS, eps=tt.ADAM_EPS)
    for step in range(1, 8):
        g.zero_()  # not mine.zero_grad(): that would detach each .grad from g
        theirs.zero_grad()
        for model in (mine, theirs):
            (torch.sin(model(x * step)) ** 2).sum().backward()
        torch.testing.assert_close(g, torch.cat([p.grad.reshape(-1) for p in theirs.parameters()]))
        tt.adam_step([w], [g], state, step, tt.learning_rate(step), tt.BETAS, tt.ADAM_EPS)
        optimizer.param_groups[0]["lr"] = tt.learning_rate(step)
        optimizer.step()
        for p, q in zip(mine.parameters(), theirs.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-12)


def test_one_vector_keeps_the_model_and_collects_its_gradients(tt):
    model = tt.build_model(0)
    src, tgt = (torch.from_numpy(a) for a in tt.make_pairs(*tt.draw_strings(np.random.default_rng(0), 8), "reverse"))
    before = tt.decode(model, *tt.encode(model, src), tt.shift_right(tgt))[0]
    w, g = tt.as_one_vector(model)
    assert len(w) == sum(p.numel() for p in model.parameters()) == 30_541
    loss = tt.smoothed_loss(tt.decode(model, *tt.encode(model, src), tt.shift_right(tgt))[0], tgt)
    assert torch.equal(loss, tt.smoothed_loss(before, tgt))
    loss.backward()
    torch.testing.assert_close(g, torch.cat([p.grad.reshape(-1) for p in model.parameters()]), rtol=0, atol=0)
    assert g.abs().sum() > 0
    w.zero_()  # a change to w is a change to the model
    assert all((p == 0).all() for p in model.parameters())


def copy_into_torch(W, mha):
    """The weights of one of the lesson's attention blocks into an nn.MultiheadAttention."""
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W[name].weight for name in ("W_Q", "W_K", "W_V")]))
        mha.in_proj_bias.copy_(torch.cat([W[name].bias for name in ("W_Q", "W_K", "W_V")]))
        mha.out_proj.weight.copy_(W["W_O"].weight)
        mha.out_proj.bias.copy_(W["W_O"].bias)


def tokens_with_padding(tt, lengths, width):
    """[B, width] rows of digits then <pad>: row b has lengths[b] real tokens."""
    rows = torch.randint(tt.EOS + 1, tt.N_WORDS, (len(lengths), width))
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


def test_attention_matches_torch_multihead_attention(tt):
    """Cross-attention with source padding, and causal self-attention with padding: the
    outputs and every head's weights, against nn.MultiheadAttention with the same weights."""
    torch.manual_seed(1)
    W = tt.attention_block()
    mha = nn.MultiheadAttention(tt.D_MODEL, tt.HEADS, dropout=0.0, batch_first=True)
    copy_into_torch(W, mha)
    src = tokens_with_padding(tt, [8, 5, 3, 1], 8)
    dec_in = tokens_with_padding(tt, [6, 6, 2, 4], 6)
    x, memory = torch.randn(4, 6, tt.D_MODEL), torch.randn(4, 8, tt.D_MODEL)
    future = tt.causal_mask(6)
    cases = {"cross, source padding": (x, memory, tt.padding_mask(src), {"key_padding_mask": src == tt.PAD},
                                       (src == tt.PAD)[:, None, None, :]),
             "self, causal and padding": (x, x, tt.padding_mask(dec_in)
                                         + torch.zeros(6, 6).masked_fill(tt.causal_mask(6), -torch.inf),
                                          {"attn_mask": future, "key_padding_mask": dec_in == tt.PAD},
                                          (dec_in == tt.PAD)[:, None, None, :] | future)}
    for name, (x_q, x_kv, mask, theirs_masks, hidden) in cases.items():
        mine, alpha = tt.attention(x_q, x_kv, W, mask)
        theirs, weights = mha(x_q, x_kv, x_kv, need_weights=True, average_attn_weights=False, **theirs_masks)
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-5, msg=name)
        torch.testing.assert_close(alpha, weights, rtol=0, atol=1e-6, msg=name)
        assert (alpha[hidden.expand_as(alpha)] == 0).all(), name  # a hidden key gets weight 0 exactly


def test_encoder_layer_matches_torch_post_ln(tt):
    model = lesson_layers(tt, 2)
    layer = model["encoder"]
    theirs = nn.TransformerEncoderLayer(tt.D_MODEL, tt.HEADS, tt.D_FF, dropout=0.0, activation="relu",
                                        batch_first=True, norm_first=False)
    copy_into_torch(layer["self_attn"], theirs.self_attn)
    theirs.load_state_dict({**theirs.state_dict(), "linear1.weight": layer["ffn"][0].weight,
                            "linear1.bias": layer["ffn"][0].bias, "linear2.weight": layer["ffn"][2].weight,
                            "linear2.bias": layer["ffn"][2].bias, "norm1.weight": layer["ln1"].weight,
                            "norm1.bias": layer["ln1"].bias, "norm2.weight": layer["ln2"].weight,
                            "norm2.bias": layer["ln2"].bias})
    torch.manual_seed(3)
    src = tokens_with_padding(tt, [8, 7, 4, 1], 8)
    x = tt.embed(model, src)
    mine = tt.encoder_layer(layer, x, tt.padding_mask(src))
    # gradients on, so torch takes its ordinary path (its fast path skips padded positions)
    torch.testing.assert_close(mine, theirs(x, src_key_padding_mask=src == tt.PAD), rtol=0, atol=1e-5)
    torch.testing.assert_close(tt.encode(model, src)[0], mine, rtol=0, atol=0)


def test_decoder_layer_matches_torch_post_ln(tt):
    model = lesson_layers(tt, 4)
    layer = model["decoder"]
    theirs = nn.TransformerDecoderLayer(tt.D_MODEL, tt.HEADS, tt.D_FF, dropout=0.0, activation="relu",
                                        batch_first=True, norm_first=False)
    copy_into_torch(layer["self_attn"], theirs.self_attn)
    copy_into_torch(layer["cross_attn"], theirs.multihead_attn)
    theirs.load_state_dict({**theirs.state_dict(), "linear1.weight": layer["ffn"][0].weight,
                            "linear1.bias": layer["ffn"][0].bias, "linear2.weight": layer["ffn"][2].weight,
                            "linear2.bias": layer["ffn"][2].bias,
                            **{f"norm{i}.{kind}": layer[f"ln{i}"].state_dict()[kind]
                               for i in (1, 2, 3) for kind in ("weight", "bias")}})
    torch.manual_seed(5)
    src, tgt = tokens_with_padding(tt, [8, 6, 3, 1], 8), tokens_with_padding(tt, [8, 7, 4, 2], 8)
    dec_in = tt.shift_right(tgt)
    memory, src_mask = tt.encode(model, src)
    x = tt.embed(model, dec_in)
    future = torch.zeros(8, 8).masked_fill(tt.causal_mask(8), -torch.inf)
    mine, alpha = tt.decoder_layer(layer, x, memory, tt.padding_mask(dec_in) + future, src_mask)
    theirs_out = theirs(x, memory, tgt_mask=tt.causal_mask(8), tgt_key_padding_mask=dec_in == tt.PAD,
                        memory_key_padding_mask=src == tt.PAD)
    torch.testing.assert_close(mine, theirs_out, rtol=0, atol=1e-5)
    scores, alpha_decode = tt.decode(model, memory, src_mask, dec_in)
    torch.testing.assert_close(scores, model["out"](mine), rtol=0, atol=0)
    torch.testing.assert_close(alpha_decode, alpha, rtol=0, atol=0)


def test_causal_mask_and_positions_are_the_pages(tt):
    mask = tt.causal_mask(4)
    assert torch.equal(mask.int(), torch.triu(torch.ones(4, 4, dtype=torch.int), diagonal=1))
    pe = tt.sinusoidal_pe(2, 4)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    page = torch.tensor([0.8415, 0.5403, 0.0100, 1.0000])  # the page's PE(1) for d = 4, at 4 decimals
    torch.testing.assert_close(pe[1], page, rtol=0, atol=6e-5)
    target = torch.tensor([[5, 6, 7, tt.EOS, tt.PAD]])
    assert tt.shift_right(target).tolist() == [[tt.BOS, 5, 6, 7, tt.PAD]]


def test_data_reverses_and_held_out_strings_are_the_same_for_every_steps_and_unseen(tt):
    src, tgt, (held_src, held_tgt) = tt.training_and_held_out(3, tt.MAX_STEPS, "reverse")
    for s, t in zip(src.reshape(-1, tt.T)[:50], tgt.reshape(-1, tt.T)[:50], strict=True):
        digits = s[s > tt.EOS].tolist()
        assert t[t > tt.EOS].tolist() == digits[::-1] and (s == tt.EOS).sum() == 1 and (t == tt.EOS).sum() == 1
    assert (src[..., -1] == tt.PAD).all()  # the spare column: always padding
    # not one held-out string occurs in the longest stream --steps allows
    key = torch.tensor(tt.N_WORDS) ** torch.arange(tt.T)
    assert len(held_src) == tt.HELD_OUT and not torch.isin(held_src @ key, src.reshape(-1, tt.T) @ key).any()
    assert ((held_src > tt.EOS).sum(1) >= 4).all()  # every string of 1 to 3 digits occurs in the stream
    short_src, short_tgt, short_held = tt.training_and_held_out(3, tt.EARLY, "reverse")
    assert torch.equal(short_src, src[:tt.EARLY]) and torch.equal(short_tgt, tgt[:tt.EARLY])  # stopped earlier
    assert torch.equal(short_held[0], held_src) and torch.equal(short_held[1], held_tgt)  # the same held-out set


# ---------------------------------------------------------------- training, and its verdicts

def test_train_shows_every_step_to_a_window_and_evaluates_the_held_out_strings_at_step_early(tt, monkeypatch):
    """train() hands a window (--live) every step, and makes the exposure-bias evaluation
    itself, at step EARLY (here 2 of 3): the held-out strings as evaluate() sees them then."""
    sources, targets, held = tt.training_and_held_out(0, tt.EARLY, "reverse")
    monkeypatch.setattr(tt, "EARLY", 2)
    seen = []

    class Window:
        def watch(self, step, so_far, model, last=False):
            seen.append((step, list(so_far), last, tt.evaluate(model, *held) if step == 2 else None))
            self.model = model

    window = Window()
    model, losses, early = tt.train(0, sources[:3], targets[:3], True, held, window)
    assert [(step, so_far, last) for step, so_far, last, _ in seen] == [
        (1, losses[:1], False), (2, losses[:2], False), (3, losses, True)]
    assert window.model is model and early == seen[1][3]


@pytest.mark.reads(DEFAULT_RUNS[NAME], PLAIN)
def test_the_floor_line_says_no_for_a_loss_below_the_floor(tt, runs):
    """Plain cross-entropy (eps = 0) has no floor at 0.5372: its loss runs down towards 0, far
    below the smoothed floor. The line must say so; a one-sided `mean < floor + 0.01` said yes.
    (Measured ranges: week2/NOTES.md, section 12.)"""
    floor = tt.loss_floor()
    smoothed = [line for line in lines_of(runs[DEFAULT_RUNS[NAME]]) if " at the floor " in line]
    assert len(smoothed) == 1 and smoothed[0].endswith(f"at the floor {floor:.4f}, to within 0.01: yes")
    plain = [line for line in lines_of(runs[PLAIN]) if " at the floor " in line]
    assert len(plain) == 1, plain
    end = float(plain[0].split("mean of steps 181-200: ")[1].split(";")[0])
    assert end < floor - 0.1  # far below the floor, so the one-sided test would have said yes
    assert plain[0] == f"  mean of steps 181-200: {end:.2f}; at the floor {floor:.4f}, to within 0.01: no"


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


# ---------------------------------------------------------------- the trained model

@pytest.mark.reads(DEFAULT_RUNS[NAME])
def test_training_reaches_every_held_out_string(runs):
    """Every measured run has all 200 held-out strings right at step 400 (week2/NOTES.md, section 12)."""
    lines = lines_of(runs[DEFAULT_RUNS[NAME]])
    assert "held-out sequences decoded exactly: 200/200" in lines
    at = lines.index("  held-out strings right at every position with the gold prefix: 200/200;")
    assert lines[at + 1] == "    of those, written right on its own: 200/200"


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
        parallel = tt.decode(model, *tt.encode(model, held_src), read)[0]  # every position at once
        peeking = tt.decode(model, *tt.encode(model, held_src), read, causal=False)[0]
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
        at_once = tt.decode(model, *tt.encode(model, held_src), dec_in)[0]
        peeking = tt.decode(model, *tt.encode(model, held_src), dec_in, causal=False)[0]
    assert (at_once - one_by_one)[real].abs().max().item() < 1e-5
    assert (peeking - one_by_one)[real].abs().max().item() > 0.1


def figure_data(tt, model, held, task):
    """(the maps plot() was given, the arrays its two images show, the cells its red boxes
    mark, its title and where that title sits)."""
    held_src, held_tgt = held
    maps = tt.cross_attention_maps(model, held_src, held_tgt)
    full = (held_src > tt.EOS).sum(1) == tt.MAX_LEN
    example = int(full.nonzero()[0, 0])
    n = tt.MAX_LEN + 1
    given = maps[example, :n, :n].numpy(), maps[full][:, :n, :n].mean(0).numpy()
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
    reverse, copy = lines_of(runs[DEFAULT_RUNS[NAME]]), lines_of(runs[COPY])
    for lines, peaks, what in ((reverse, "5 4 3 2 1 0", "mirror L-1-t"), (copy, "0 1 2 3 4 5", "same position t")):
        assert "held-out sequences decoded exactly: 200/200" in lines
        assert f"    look most at source positions {peaks}" in lines  # under "  averaged over the ... strings"
        assert f"  every row on the {what}: yes" in lines
        assert f"  held-out rows whose largest weight is on the {what}: at least 80%: yes" in lines


# ---------------------------------------------------------------- the script's output

@pytest.mark.reads(*SETTINGS.values())
def test_output_is_the_same_under_every_kernel_setting(runs):
    """The bands and verdicts hold every trajectory measured (week2/NOTES.md, section 12)."""
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8")
    for name, run in SETTINGS.items():
        result = runs[run]
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert result.stdout == golden, f"{name}:\n" + run_all.unified_diff(golden, result.stdout, NAME)
        assert result.stderr == ""  # no progress display when stderr is not a terminal


@pytest.mark.reads(TABLE)
def test_table_adds_exact_numbers_and_keeps_the_default_figure(runs):
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8").splitlines()
    result = runs[TABLE]
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line for line in lines if not line.startswith("  exact: ")][:-1] == golden[:-1]
    assert len([line for line in lines if line.startswith("  exact: ")]) == 6
    assert lines[-1].startswith("saved ") and lines[-1].endswith("tiny_transformer_cross_attention.png")


@pytest.mark.reads(DEFAULT_RUNS[NAME], NO_MASK)
def test_no_mask_flips_the_mask_verdict(runs):
    """The cheat's measured picture (week2/NOTES.md, section 12): perfect with the gold prefix, 0/200 alone."""
    masked, cheat = runs[DEFAULT_RUNS[NAME]].stdout.splitlines(), runs[NO_MASK].stdout.splitlines()
    assert runs[NO_MASK].returncode == 0 and (SCRATCH / "cheat.png").stat().st_size > 0, runs[NO_MASK].stderr
    verdict = [line for line in masked if line.startswith("Verdict:")][-1]  # the mask's, the last
    assert verdict == "Verdict: as the page says: with the future hidden, training teaches what generation needs"
    flipped = [line for line in cheat if line.startswith("Verdict:")][-1]
    assert "as the page says: without the mask, position t read its answer from input t + 1" in flipped
    # a model that writes nothing alone cannot be judged on its decoder's inputs or on longer strings
    assert [line for line in cheat if line.startswith("Verdict: not tested: the model writes only 0 of the 200")]
    outcomes = {r["name"]: r["outcome"] for r in runs[NO_MASK].records}
    assert outcomes["held-out strings decoded exactly"] == "contradicts the page"  # 0/200 alone
    assert outcomes["held-out strings right at every position with the gold prefix"] == "upholds the page"
    assert "  training) or only its first t + 1 words (as while generating), to 0.001: no" in cheat
    assert outcomes["position t's scores the same prefix by prefix as in one pass"] == "upholds the page"
    assert outcomes["the causal mask: training teaches what generation needs"] == "upholds the page"
    assert outcomes["the decoder uses its own position tags and token embeddings"] == "not tested here"
    assert outcomes["strings longer than any trained"] == "not tested here"
    assert "held-out sequences decoded exactly: 0/200" in cheat
    at = cheat.index("  held-out strings right at every position with the gold prefix: 200/200;")
    assert cheat[at + 1] == "    of those, written right on its own: 0/200"
    assert "  step 1: input so far <s>              -> next </s>" in cheat  # it stops at once
    # the cross-attention still finds the mirror with the gold input in view: said on the spot
    assert ("  every row on the mirror L-1-t: yes (with the gold input in view, which also holds the answer: "
            "alone it wrote 0/200 right)") in cheat


@pytest.mark.reads(DEFAULT_RUNS[NAME], NO_MASK, DROPPED_SQRT)
def test_a_dropped_sqrt_d_k_fails_the_check_and_names_the_formula(runs):
    """The lesson's attention against torch's, printed as a noise line: at the defaults and
    without the mask, rounding; with 1/sqrt(d_k) dropped (a training that still learns, and
    whose every verdict may still hold), the check itself fails and says the formula is wrong."""
    source = SCRIPTS[NAME].read_text(encoding="utf-8")
    assert source.count(RIGHT) == 1, f"{NAME} no longer contains {RIGHT!r}: update RIGHT"
    for run in (DEFAULT_RUNS[NAME], NO_MASK):
        noise = [line for line in lines_of(runs[run]) if line.startswith("max |by hand - torch|=")]
        assert len(noise) == 1 and run_all.is_noise(run_all.noise_value(noise[0])[1]), noise
    golden = run_all.golden_path(NAME).read_text(encoding="utf-8")
    planted = runs[DROPPED_SQRT]
    assert planted.returncode == 0, planted.stderr[-2000:]
    assert {r["name"]: r["outcome"] for r in planted.records}["attention by hand is torch's"] == "contradicts the page"
    assert not run_all.outputs_match(golden, planted.stdout)
    reasons = run_all.refusals(NAME, planted.stdout)
    assert any("max |by hand - torch| should be float rounding noise" in reason and "the formula is wrong" in reason
               for reason in reasons), reasons


def test_the_loss_lines_say_no_on_either_side_of_the_floor_and_for_a_slow_start(tt):
    floor = tt.loss_floor()
    for end, says in ((floor + 0.02, "no"), (floor - 0.02, "no"), (floor + 0.005, "yes"), (floor - 0.005, "yes")):
        _, line, holds, _, _ = tt.loss_checks([3.0] * 80 + [1.0] * 20 + [end] * 20, floor)[-1]
        assert line.endswith(f"to within 0.01: {says}") and holds == (says == "yes")
    for early, says in ((1.19, "yes"), (1.21, "no")):  # either side of the threshold 1.20
        _, line, holds, _, _ = tt.loss_checks([3.0] * 80 + [early] * 40, floor)[0]
        assert line.endswith(f"fallen below 1.20 by then: {says}") and holds == (says == "yes")
    assert tt.loss_checks([3.0] * 120, floor)[0][1].endswith("fallen below 1.20 by then: no")  # not fallen by step 100


def test_the_exposure_line_says_no_without_a_gap(tt):
    for free, says in ((0.70, "yes"), (0.855, "yes"), (0.86, "no"), (0.88, "no")):  # 5 points: 0.85
        line, holds, _ = tt.exposure_check({"forced": 0.905, "free": free})
        assert line.endswith(f"at least 5 points worse: {says}") and holds == (says == "yes")


def test_rows_on_the_mirror_are_measured_not_assumed(tt, held):
    """Maps that read the mirror, the diagonal, or nothing in particular (uniform): the share
    on the mirror is 1 only for the first, so the 80% line can say no."""
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


def test_the_bands_are_cut_where_they_say(tt):
    assert [tt.band(v, (0.4, 1.0)) for v in (0.39, 0.4, 0.99, 1.0)] == [
        "below 0.4", "0.4 to 1.0", "0.4 to 1.0", "1.0 or more"]



def test_string_keys_tell_strings_apart_as_their_source_rows_do(tt):
    """The held-out strings are found unseen by their keys: two strings share a key exactly
    when their source rows are the same."""
    lengths, digits = tt.draw_strings(np.random.default_rng(0), 5000)  # many short strings come twice
    src, _ = tt.make_pairs(lengths, digits, "reverse")
    by_rows = np.unique(src, axis=0, return_inverse=True)[1].ravel()
    by_keys = np.unique(tt.string_keys(lengths, digits), return_inverse=True)[1].ravel()
    assert len(set(by_rows)) < 5000
    assert len(set(zip(by_rows, by_keys, strict=True))) == len(set(by_rows)) == len(set(by_keys))

# ---------------------------------------------------------------- the pages' cautions, run on the trained model

def recorded(tt, capsys, show, *args):
    """What show(*args) prints, and its records by name."""
    with collected() as records:
        show(*args)
    return capsys.readouterr().out, {r["name"]: r for r in records}


@pytest.mark.parametrize("world, says", [
    (lambda scores: torch.softmax(scores, dim=-1), "yes"),  # over the V scores of a position: the page's
    (lambda scores: torch.softmax(scores, dim=1), "no"),  # over the positions: rows do not sum to 1
    (lambda scores: torch.softmax(scores, dim=-1) * (1 + 5e-7), "yes"),  # within 1e-6 of 1
    (lambda scores: torch.softmax(scores, dim=-1) * (1 + 2e-6), "no"),  # beyond it
])
def test_the_softmax_rows_line_says_no_for_rows_that_do_not_sum_to_one(tt, model, held, capsys, monkeypatch,
                                                                        world, says):
    monkeypatch.setattr(tt, "next_word_probabilities", world)
    out, records = recorded(tt, capsys, tt.show_output_layer, model, *held, True)
    assert f"-> scores [B, T, V] = [{tt.HELD_OUT}, {tt.T}, {tt.N_WORDS}]" in out
    assert out.rstrip().endswith(f"every row sums to 1 (to 1e-06): {says}")
    assert records["every softmax row sums to 1"]["outcome"] == ("upholds the page" if says == "yes" else
                                                                  "contradicts the page")


@pytest.mark.reads(DEFAULT_RUNS[NAME], *NEVER_USED_RUNS.values())
def test_a_decoder_that_never_used_its_tags_or_embeddings_turns_the_verdict(runs):
    """The trained decoder needs both of its own inputs (week2/NOTES.md, section 12); a model
    trained without one of them learns the task anyway (200/200) and does not need it."""
    verdict = "Verdict: as the page says: the decoder has its own position tags and token embeddings, and"
    assert any(line.startswith(verdict) for line in lines_of(runs[DEFAULT_RUNS[NAME]]))
    for piece, run in NEVER_USED_RUNS.items():
        lines = lines_of(runs[run])
        assert "  as trained: 200/200" in lines, piece
        turned = [line for line in lines if line.startswith("Verdict: NOT AS THE PAGE SAYS: the decoder writes 50% "
                                                            "or more of the strings right without its ")]
        assert len(turned) == 1 and piece in turned[0], piece  # (the wrapper keeps the piece out of every run)
        assert {r["name"]: r["outcome"] for r in runs[run].records}[
            "the decoder uses its own position tags and token embeddings"] == "contradicts the page"


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


def test_the_longer_strings_are_one_digit_longer_than_any_trained_and_fit_their_rows(tt):
    src, tgt = tt.longer_strings("reverse")
    assert src.shape == tgt.shape == (tt.HELD_OUT, tt.row_width(tt.LONGER)) == (200, 9)
    assert ((src > tt.EOS).sum(1) == tt.LONGER).all() and tt.LONGER == tt.MAX_LEN + 1
    assert (src[:, tt.LONGER] == tt.EOS).all() and (src[:, -1] == tt.PAD).all()
    assert torch.equal(tgt[:, :tt.LONGER], src[:, :tt.LONGER].flip(1))
    assert len(tt.PE) >= src.shape[1]  # a position tag for every position of the longer rows
    torch.testing.assert_close(tt.PE[:tt.T], tt.sinusoidal_pe(tt.T, tt.D_MODEL), rtol=0, atol=0)


@pytest.mark.parametrize("trained, longer, holds", [
    (200, 41, True), (200, 99, True),  # fewer than half of the longer strings right
    (200, 100, None),  # half or more: this model shows no failure, nothing to judge
    (179, 0, None),  # not learned the trained lengths: not judged
])
def test_the_longer_verdict_at_its_thresholds(tt, trained, longer, holds):
    assert tt.longer_verdict(trained, longer)[0] is holds


def test_a_model_that_writes_longer_strings_right_turns_the_longer_verdict(tt, model, capsys, monkeypatch):
    """A stand-in that reverses any string (what a model that extrapolates would write), fed
    through the lesson's own counting and verdict: the caution is then not shown."""
    def reverses(model, src, causal=True, without=None):
        digits = [row[row > tt.EOS].flip(0).tolist() + [tt.EOS] for row in src]
        return torch.tensor([row + [tt.PAD] * (src.shape[1] - len(row)) for row in digits]), None

    out, records = recorded(tt, capsys, tt.show_longer, model, {"exact": 200}, "reverse", True, False)
    assert records["strings longer than any trained"]["outcome"] == "upholds the page"  # writes none right
    monkeypatch.setattr(tt, "generate", reverses)
    out, records = recorded(tt, capsys, tt.show_longer, model, {"exact": 200}, "reverse", True, False)
    assert "written right: 50% or more" in out and "Verdict: not tested: this model wrote 50% or more" in out
    assert records["strings longer than any trained"]["value"] == "trained lengths 200, 7 digits 200"


def test_a_later_input_moves_earlier_positions_only_without_the_mask(tt, model, held):
    held_src, held_tgt = held
    dec_in = tt.shift_right(held_tgt)
    assert tt.moved_by_a_later_input(model, held_src, dec_in, causal=True) == 0.0  # not a bit
    assert tt.moved_by_a_later_input(model, held_src, dec_in, causal=False) >= tt.SAME


def test_a_mask_one_place_off_turns_the_later_input_line(tt, model, held, capsys, monkeypatch):
    """The lesson's own measurement and line with a mask that lets position t see input t + 1."""
    monkeypatch.setattr(tt, "causal_mask", lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=2))
    held_src, held_tgt = held
    assert tt.moved_by_a_later_input(model, held_src, tt.shift_right(held_tgt), causal=True) >= tt.SAME
    final = {"forced": 1.0, "free": 1.0, "exact": 200, "forced_exact": 200, "both_exact": 200}
    out, records = recorded(tt, capsys, tt.show_mask, model, final, *held, True, False)
    assert "move (by 0.001 or more)? with the mask: yes; without it: yes" in out
    assert records["a later input moves earlier positions only without the mask"]["outcome"] == "contradicts the page"


@pytest.mark.parametrize("with_mask, without, holds", [
    (0.0, 1.0, True), (0.00099, 0.001, True),  # below 0.001 with the mask, 0.001 or more without
    (0.001, 1.0, False), (0.0, 0.00099, False),
])
def test_the_later_input_line_at_its_threshold(tt, model, held, capsys, monkeypatch, with_mask, without, holds):
    moved = {True: with_mask, False: without}
    monkeypatch.setattr(tt, "moved_by_a_later_input", lambda model, src, dec_in, causal: moved[causal])
    final = {"forced": 1.0, "free": 1.0, "exact": 200, "forced_exact": 200, "both_exact": 200}
    out, records = recorded(tt, capsys, tt.show_mask, model, final, *held, True, False)
    assert records["a later input moves earlier positions only without the mask"]["outcome"] == (
        "upholds the page" if holds else "contradicts the page")
    said = {True: "yes", False: "no"}
    assert f"with the mask: {said[with_mask >= 0.001]}; without it: {said[without >= 0.001]}" in out
