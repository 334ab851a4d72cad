"""week1/16_heads_take_roles: its attention is torch's, its knock-out is a head's output
zeroed, its Adam is torch's, its data answers the two questions it says; trained, its heads
take the two roles its figure shows; its role verdicts turn with one head or a one-look
task; and its output is the same bytes under the kernel settings that change training
trajectories."""
import contextlib
import io
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.conftest import SCRIPTS, load_script

NAME = "week1/16_heads_take_roles"
PAGE_ROLES = ["Verdict: one head looks at the word just before (share 0.50 or more): head 1: as the page says",
              "Verdict: another looks at the nouns (share 0.50 or more): head 2: as the page says"]


@pytest.fixture(scope="module")
def ht():
    return load_script(NAME)


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """The script sets torch to one thread; give the test process its setting back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def run_main(ht, *argv):
    """The script's main() in this process with these arguments: what it printed, and the
    model it trained."""
    trained, out, train = [], io.StringIO(), ht.train
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(ht, "train", lambda *args: trained.append(train(*args)) or trained[-1])
        monkeypatch.setattr(sys, "argv", [str(SCRIPTS[NAME]), *argv])
        with contextlib.redirect_stdout(out):
            ht.main()
    return out.getvalue(), trained[0]


@pytest.fixture(scope="module")
def default_run(ht, tmp_path_factory):
    """The default run, its figure sent to a scratch folder: what it printed, and its model."""
    return run_main(ht, "--figure", str(tmp_path_factory.mktemp("figure") / "heads.png"))


def verdicts(out):
    return [line for line in out.splitlines() if line.startswith("Verdict:")]


# ---------------------------------------------------------------- the pieces against torch's

def random_weights(d=8, seed=0):
    torch.manual_seed(seed)
    return {name: torch.randn(d, d, dtype=torch.float64) / d ** 0.5 for name in ("W_Q", "W_K", "W_V", "W_O")}


def torch_mha(weights, heads):
    """nn.MultiheadAttention with the same weights. nn.Linear computes x W^T, so each of the
    script's matrices (used as x @ W) goes in transposed."""
    d = len(weights["W_Q"])
    mha = nn.MultiheadAttention(d, heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([weights["W_Q"].T, weights["W_K"].T, weights["W_V"].T]))
        mha.out_proj.weight.copy_(weights["W_O"].T)
    return mha


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_attention_is_torchs_multihead_attention_with_a_causal_mask(ht, heads):
    weights = random_weights()
    x = torch.randn(3, 7, 8, dtype=torch.float64)
    out, alpha = ht.self_attention(x, weights, heads)
    future = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)  # True: may not look
    theirs, their_alpha = torch_mha(weights, heads)(x, x, x, attn_mask=future, average_attn_weights=False)
    torch.testing.assert_close(out, theirs, rtol=0, atol=1e-12)
    torch.testing.assert_close(alpha, their_alpha, rtol=0, atol=1e-12)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(3, heads, 7, dtype=torch.float64))
    assert alpha[..., future].abs().max().item() == 0  # the future gets exactly 0


def per_head_sdpa(weights, x, heads, scale=None, is_causal=True, zeroed=()):
    """Each head by F.scaled_dot_product_attention, then joined and blended by W_O; the heads
    in `zeroed` have their output set to 0 before the join."""
    B, T, d = x.shape
    d_k = d // heads

    def split(t):
        return t.view(B, T, heads, d_k).transpose(1, 2)

    Q, K, V = (split(x @ weights[name]) for name in ("W_Q", "W_K", "W_V"))
    out = F.scaled_dot_product_attention(Q, K, V, is_causal=is_causal, scale=scale)  # [B, h, T, d_k]
    out = out.clone()
    out[:, list(zeroed)] = 0
    return out.transpose(1, 2).reshape(B, T, d) @ weights["W_O"]


def test_attention_is_sdpa_and_the_comparison_catches_the_classic_mistakes(ht):
    weights, heads = random_weights(), 2
    x = torch.randn(3, 7, 8, dtype=torch.float64)
    mine = ht.self_attention(x, weights, heads)[0]
    torch.testing.assert_close(mine, per_head_sdpa(weights, x, heads), rtol=0, atol=1e-12)
    # what a dropped 1/sqrt(d_k), or no mask, would give: far outside that tolerance
    assert (mine - per_head_sdpa(weights, x, heads, scale=1.0)).abs().max().item() > 1e-2
    assert (mine - per_head_sdpa(weights, x, heads, is_causal=False)).abs().max().item() > 1e-2


def test_a_mask_one_place_off_fails_the_comparison(ht, monkeypatch):
    weights, heads = random_weights(), 2
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    monkeypatch.setattr(ht, "MASK", torch.triu(torch.full((17, 17), -torch.inf), diagonal=2))  # sees 1 word ahead
    assert (ht.self_attention(x, weights, heads)[0] - per_head_sdpa(weights, x, heads)).abs().max().item() > 1e-2


@pytest.mark.parametrize("knock_out", [(0,), (1,), (2,), (1, 3)])
def test_knock_out_is_the_heads_output_zeroed(ht, knock_out):
    weights, heads = random_weights(), 4
    x = torch.randn(3, 7, 8, dtype=torch.float64)
    knocked = ht.self_attention(x, weights, heads, knock_out)[0]
    torch.testing.assert_close(knocked, per_head_sdpa(weights, x, heads, zeroed=knock_out), rtol=0, atol=1e-12)
    assert (knocked - ht.self_attention(x, weights, heads)[0]).abs().max().item() > 1e-2  # it did something
    # The orientation the script prints: in torch's out_proj.weight (W_O transposed) the
    # knocked-out head's numbers are columns.
    mha, d_k = torch_mha(weights, heads), 8 // heads
    with torch.no_grad():
        for h in knock_out:
            mha.out_proj.weight[:, h * d_k:(h + 1) * d_k] = 0
    future = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)
    torch.testing.assert_close(knocked, mha(x, x, x, attn_mask=future)[0], rtol=0, atol=1e-12)


def test_adam_step_is_torch_optim_adam(ht):
    torch.manual_seed(0)
    mine = [torch.randn(4, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)]
    theirs = [p.clone().requires_grad_() for p in mine]
    start = [p.clone() for p in mine]
    optimizer = torch.optim.Adam(theirs, lr=ht.LR)
    state = {"m": [torch.zeros_like(p) for p in mine], "v": [torch.zeros_like(p) for p in mine]}
    for step in range(1, 31):
        lr = ht.LR * (1 - (step - 1) / 30)  # the script's falling learning rate
        for p, q in zip(mine, theirs, strict=True):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        ht.adam_step(mine, state, step, lr)
        optimizer.param_groups[0]["lr"] = lr
        optimizer.step()
    assert max((p - q).abs().max().item() for p, q in zip(mine, theirs, strict=True)) < 1e-12
    assert min((p - p0).abs().max().item() for p, p0 in zip(mine, start, strict=True)) > 0.05  # they moved


def test_positions_are_week2_03s_table_and_the_mask_hides_the_future(ht):
    table = load_script("week2/03_sinusoidal_pe").sinusoidal_pe(ht.T_MAX, ht.D_MODEL)  # NumPy float64
    np.testing.assert_allclose(ht.PE.numpy(), table, rtol=0, atol=1e-6)
    assert torch.equal(torch.isinf(ht.causal_mask(4)), torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1))


# ---------------------------------------------------------------- the data

def test_the_two_blanks_and_the_row_kinds_are_what_the_script_says(ht):
    tokens = ht.make_sentences(np.random.default_rng(5), 300)
    before, first, first_at = ht.answers(tokens)
    kinds = ht.row_kinds(tokens)
    nouns = set(ht.KINDS["noun"])
    for k, row in enumerate(tokens.tolist()):
        words = [ht.WORDS[t] for t in row if t != ht.PAD]
        assert words[0] in ("the", "a") and words[2 if words[1] in ht.KINDS["adj"] else 1] in nouns
        assert 3 <= len(words) <= ht.T_MAX and ht.PAD not in row[:len(words)]
        first_noun = None
        for i, word in enumerate(words):
            first_noun = first_noun if first_noun is not None else (i if word in nouns else None)
            want_before = ht.WORDS.index(words[i - 1]) if i > 0 else ht.NONE
            want_first = ht.WORDS.index(words[first_noun]) if first_noun is not None else ht.NONE
            assert (before[k, i].item(), first[k, i].item()) == (want_before, want_first)
            both = i > 0 and first_noun is not None
            clash = both and words[i - 1] in nouns and first_noun < i - 1
            telling = both and words[i - 1] not in nouns and first_noun < i
            assert (kinds["answerable"][k, i].item(), kinds["clash"][k, i].item(),
                    kinds["telling"][k, i].item()) == (both, clash, telling)
        assert (before[k, len(words):] == ht.NONE).all() and (first[k, len(words):] == ht.NONE).all()
    assert kinds["clash"].sum() > 100 and kinds["telling"].sum() > 500  # both kinds are common


def test_held_out_sentences_are_unseen(ht):
    stream, held = ht.training_and_held_out(3, 40)
    assert stream.shape == (40, ht.BATCH, ht.T_MAX)
    seen = {tuple(row) for row in stream.reshape(-1, ht.T_MAX).tolist()}
    assert len(held) == ht.HELD_OUT and not seen & {tuple(row) for row in held.tolist()}


# ---------------------------------------------------------------- the trained model

def test_default_run_prints_the_pages_picture(default_run):
    out = default_run[0]
    assert verdicts(out) == PAGE_ROLES + [
        "Verdict: knocking out the previous-word head breaks (a) and leaves (b), the noun head the other"]
    assert "  way round: each word's new vector gets both heads' findings, through W_O: as the page says" in out
    assert "  head 1 knocked out              below 50%         above 80%" in out
    assert "  head 2 knocked out              above 80%         below 50%" in out


def test_figure_shows_each_head_on_its_role(ht, default_run):
    model = default_run[1]
    _, held = ht.training_and_held_out(42, ht.STEPS)
    sentence = ht.example_sentence(held)
    head_roles = ht.measure(model, held, ht.HEADS)["roles"]
    assert head_roles == ["before", "nouns"]
    fig = ht.plot(ht.attention_maps(model, sentence, ht.HEADS), sentence, head_roles)
    shown = [np.asarray(ax.images[0].get_array()) for ax in fig.axes[:ht.HEADS]]
    words = [ht.WORDS[t] for t in sentence.tolist()]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == words
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == words
    assert "word just before" in fig.axes[0].get_title() and "nouns" in fig.axes[1].get_title()
    ht.plt.close(fig)
    T, first = len(words), [w in ht.KINDS["noun"] for w in words].index(True)
    for weights in shown:
        np.testing.assert_allclose(weights.sum(1), 1, atol=1e-6)
        assert np.triu(weights, 1).max() == 0  # no word looks ahead
    assert shown[0].argmax(1).tolist() == [0] + list(range(T - 1))  # the word just before
    assert shown[1].argmax(1)[first:].tolist() == [first] * (T - first)  # the first noun
    assert shown[1].argmax(1).tolist() != shown[0].argmax(1).tolist()  # the check can fail


@pytest.mark.parametrize("argv, turned", [
    (["--heads", "1"], ["no head does: NOT THE PAGE'S PICTURE at these settings"] * 2),
    (["--task", "previous-only"], ["as the page says", "no head does: NOT THE PAGE'S PICTURE at these settings"]),
])
def test_one_head_or_a_one_look_task_turns_the_role_verdicts(ht, argv, turned):
    out, _ = run_main(ht, *argv)
    for line, ending in zip(verdicts(out)[:2], turned, strict=True):
        assert line.endswith(ending), line
    assert "NOT THE PAGE'S PICTURE at these settings" in out.split("way round:")[1].splitlines()[0]
    assert "CONTRADICTS THE PAGE" not in out
    if argv[1] == "1":  # one head: where the two answers are two different nouns, blank (a) fails
        line = next(x for x in out.splitlines() if x.startswith("  words whose two answers are different nouns"))
        assert line.split(")")[-1].split() == ["below", "50%", "above", "80%"]


# Byte-stability under other kernel settings: tests/test_portability.py runs the whole check
# under each of them, this lesson included.
