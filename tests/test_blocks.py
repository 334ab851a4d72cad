"""common/blocks.py: each shared block equals the lesson that teaches it by hand, and torch's
own module where torch has one; the fast path of attention equals the plain formula. Each
comparison is a function, and a test feeds it a planted mistake (a wrong scale, a wrong
split into heads, no ReLU, a slipped mask) and sees it fail."""
import math
import types

from common import blocks
from common.blocks import (
    DecoderLayer,
    EncoderLayer,
    MultiHeadAttention,
    attention,
    causal_mask,
    feed_forward,
    padding_mask,
    sinusoidal_pe,
)

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.conftest import load_script

TIGHT = 1e-12  # float64: two orders of the same sums round their last bits apart, no more


def take_torchs_weights(ours, mha):
    """Our MultiHeadAttention given the weights of torch's nn.MultiheadAttention `mha`."""
    with torch.no_grad():
        for linear, weight, bias in zip((ours.W_Q, ours.W_K, ours.W_V), mha.in_proj_weight.chunk(3),
                                        mha.in_proj_bias.chunk(3), strict=True):
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
        ours.W_O.load_state_dict(mha.out_proj.state_dict())
    return ours


def random_weights(module, seed):
    """Every weight, bias, gamma and beta random (not torch's start, where gamma = 1 and beta = 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def test_the_causal_mask_blocks_the_cells_week2_01_blocks():
    lesson = load_script("week2/01_causal_mask")
    for T in (1, 4, 9):
        assert torch.equal(causal_mask(T), torch.as_tensor(lesson.causal_mask(T) == 1))


def test_the_padding_mask_hides_the_padded_keys_only():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]])
    mask = padding_mask(tokens, pad=0)
    assert mask.shape == (2, 1, 1, 4)
    assert mask[:, 0, 0].tolist() == [[False, False, True, True], [False, True, True, True]]


def gap_to_sdpa(attention_fn):
    """The largest gap between attention_fn(Q, K, V, mask) and torch's F.scaled_dot_product_attention,
    without a mask and with the causal one, on one fixed draw of Q, K, V [B, h, T, d_k]."""
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4))
    Q, K, V = map(torch.from_numpy, (x, np.roll(x, 1, axis=-2), 2 * x))  # [B, h, T, d_k]
    unmasked = (attention_fn(Q, K, V)[0] - F.scaled_dot_product_attention(Q, K, V)).abs().max()
    causal = (attention_fn(Q, K, V, causal_mask(5))[0] - F.scaled_dot_product_attention(Q, K, V, is_causal=True))
    return max(unmasked.item(), causal.abs().max().item())


def test_attention_is_week1_01s_formula_and_torchs_sdpa():
    lesson = load_script("week1/01_attention_from_scratch")
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4))
    Q, K, V = x, np.roll(x, 1, axis=-2), 2 * x  # [B, h, T, d_k]
    Z, A = attention(*map(torch.from_numpy, (Q, K, V)))
    Z_lesson, A_lesson = lesson.attention(Q, K, V)
    assert np.abs(Z.numpy() - Z_lesson).max() < TIGHT and np.abs(A.numpy() - A_lesson).max() < TIGHT
    assert gap_to_sdpa(attention) < TIGHT
    mask = causal_mask(5)
    _, A_masked = attention(*map(torch.from_numpy, (Q, K, V)), mask)
    assert torch.all(A_masked[..., mask] == 0) and torch.allclose(A_masked.sum(-1), torch.ones(2, 3, 5).double())


def test_a_wrong_scale_is_caught_by_the_same_comparison(monkeypatch):
    """The comparison above can fail: common/blocks.py's attention with its scores divided by
    d_k instead of sqrt(d_k) is far from torch's."""
    monkeypatch.setattr(blocks, "math", types.SimpleNamespace(sqrt=lambda d_k: d_k, inf=math.inf))
    assert gap_to_sdpa(blocks.attention) > TIGHT


def multi_head_gaps(fast):
    """Our MultiHeadAttention given torch's weights, on 2 sentences of 5 words: its largest gaps
    to week1/03's by-hand layer, to torch's module, and (fast=False) between the weights."""
    lesson = load_script("week1/03_multihead_shape_check")
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True, dtype=torch.float64)
    ours = take_torchs_weights(MultiHeadAttention(16, 4).double(), mha)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        out, A = ours(x, fast=fast)
        by_hand = lesson.multi_head_attention(x, mha)[0]
        theirs, weights = mha(x, x, x, average_attn_weights=False)
    gaps = {"by hand": (out - by_hand).abs().max().item(), "torch": (out - theirs).abs().max().item()}
    assert (A is None) == fast
    return gaps if fast else {**gaps, "weights": (A - weights).abs().max().item()}


@pytest.mark.parametrize("fast", [False, True])
def test_multi_head_attention_is_week1_03s_and_torchs(fast):
    assert max(multi_head_gaps(fast).values()) < TIGHT


@pytest.mark.parametrize("fast", [False, True])
def test_heads_split_in_the_wrong_layout_are_caught_by_the_same_comparison(monkeypatch, fast):
    """[B, T, d] viewed straight as [B, h, T, d_k] (no transpose: a head gets other words'
    numbers): every gap opens."""
    monkeypatch.setattr(blocks, "split_heads", lambda x, h: x.view(x.shape[0], h, x.shape[1], -1))
    assert min(multi_head_gaps(fast).values()) > TIGHT


@pytest.mark.parametrize("fast", [False, True])
def test_masked_cross_attention_is_torchs(fast):
    """Queries from 3 target words, keys and values from 6 source words with padding hidden,
    and a causal mask on self-attention: both against nn.MultiheadAttention (True = hidden there too)."""
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    ours = take_torchs_weights(MultiHeadAttention(8, 2).double(), mha)
    target, source = torch.randn(2, 3, 8, dtype=torch.float64), torch.randn(2, 6, 8, dtype=torch.float64)
    padded = padding_mask(torch.tensor([[4, 4, 4, 4, 0, 0], [4, 4, 0, 0, 0, 0]]), pad=0)  # [B, 1, 1, S]
    with torch.no_grad():
        out = ours(target, source, mask=padded, fast=fast)[0]
        theirs = mha(target, source, source, key_padding_mask=padded[:, 0, 0], need_weights=False)[0]
        self_out = ours(target, mask=causal_mask(3), fast=fast)[0]
        self_theirs = mha(target, target, target, attn_mask=causal_mask(3), need_weights=False)[0]
    assert (out - theirs).abs().max() < TIGHT and (self_out - self_theirs).abs().max() < TIGHT


def test_the_position_table_is_week2_03s_formula():
    """A table with pair index i in place of 2i would be 0.5 or more away."""
    lesson = load_script("week2/03_sinusoidal_pe")
    for max_len, d in ((10, 4), (50, 16), (7, 64)):
        gap = sinusoidal_pe(max_len, d, torch.float64) - torch.as_tensor(lesson.sinusoidal_pe(max_len, d))
        assert gap.abs().max() < TIGHT


def ffn_gaps(world):
    """common/blocks.py's feed_forward given week1/13's two layers, against week1/13's FFN in
    `world` ("with the ReLU" or "without the ReLU") and against the page's
    ReLU(x W_1 + b_1) W_2 + b_2 (torch stores each W as [out, in])."""
    lesson = load_script("week1/13_ffn_needs_relu")
    torch.manual_seed(0)
    first, second = nn.Linear(4, 16, dtype=torch.float64), nn.Linear(16, 4, dtype=torch.float64)
    shared = feed_forward(4, 16).double()
    shared[0].load_state_dict(first.state_dict())
    shared[2].load_state_dict(second.state_dict())
    x = torch.randn(3, 5, 4, dtype=torch.float64)
    W_1, b_1, W_2, b_2 = first.weight.T, first.bias, second.weight.T, second.bias
    with torch.no_grad():
        theirs = lesson.ffn(first, lesson.WORLDS[world], second)(x)
        page = torch.relu(x @ W_1 + b_1) @ W_2 + b_2
        return (shared(x) - theirs).abs().max().item(), (theirs - page).abs().max().item()


def test_the_ffn_is_week1_13s_with_the_relu_and_the_pages_formula():
    assert max(ffn_gaps("with the ReLU")) < TIGHT


def test_week1_13s_ffn_without_the_relu_is_caught_by_the_same_comparison():
    assert min(ffn_gaps("without the ReLU")) > TIGHT


def encoder_layer_from(torch_layer):
    ours = EncoderLayer(torch_layer.linear1.in_features, torch_layer.self_attn.num_heads,
                        torch_layer.linear1.out_features).double()
    take_torchs_weights(ours.self_attn, torch_layer.self_attn)
    with torch.no_grad():
        for mine, theirs in ((ours.ln1, torch_layer.norm1), (ours.ln2, torch_layer.norm2),
                             (ours.ffn[0], torch_layer.linear1), (ours.ffn[2], torch_layer.linear2)):
            mine.load_state_dict(theirs.state_dict())
    return ours


def encoder_layer_gaps(fast):
    """Our EncoderLayer given the random weights of torch's post-norm layer: its largest gaps to
    torch's layer, to week1/14's by-hand layer, and to torch's with padding hidden."""
    lesson = load_script("week1/14_parameters_vs_length")
    torch.manual_seed(3)
    layer = random_weights(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                      dtype=torch.float64), seed=3).eval()
    ours = encoder_layer_from(layer)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    padded = padding_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), pad=0)
    with torch.no_grad():
        return {"torch": (ours(x, fast=fast) - layer(x)).abs().max().item(),
                "by hand": (ours(x, fast=fast) - lesson.encoder_layer_by_hand(x, layer)[0]).abs().max().item(),
                "padded": (ours(x, padded, fast) - layer(x, src_key_padding_mask=padded[:, 0, 0])).abs().max().item()}


@pytest.mark.parametrize("fast", [False, True])
def test_the_encoder_layer_is_torchs_post_norm_layer_and_week1_14s(fast):
    assert max(encoder_layer_gaps(fast).values()) < TIGHT


@pytest.mark.parametrize("fast", [False, True])
def test_an_encoder_layer_wired_pre_norm_is_caught_by_the_same_comparison(monkeypatch, fast):
    """LayerNorm before each sublayer (x + MHA(LN_1(x)), ...) in place of the paper's after: every gap opens."""
    def pre_norm(self, x, mask=None, fast=False):
        U = x + self.self_attn(self.ln1(x), mask=mask, fast=fast)[0]
        return U + self.ffn(self.ln2(U))
    monkeypatch.setattr(EncoderLayer, "forward", pre_norm)
    assert min(encoder_layer_gaps(fast).values()) > TIGHT


def decoder_layer_from(torch_layer):
    ours = DecoderLayer(torch_layer.linear1.in_features, torch_layer.self_attn.num_heads,
                        torch_layer.linear1.out_features).double()
    take_torchs_weights(ours.self_attn, torch_layer.self_attn)
    take_torchs_weights(ours.cross_attn, torch_layer.multihead_attn)
    with torch.no_grad():
        for mine, theirs in ((ours.ln1, torch_layer.norm1), (ours.ln2, torch_layer.norm2),
                             (ours.ln3, torch_layer.norm3), (ours.ffn[0], torch_layer.linear1),
                             (ours.ffn[2], torch_layer.linear2)):
            mine.load_state_dict(theirs.state_dict())
    return ours


def decoder_layer_gaps(fast, self_mask=None):
    """Our DecoderLayer given the random weights of torch's post-norm decoder layer, its
    self-attention masked by `self_mask` (default: the causal mask): its largest gaps to torch's
    layer and to week2/17's by hand, both with the causal mask."""
    lesson = load_script("week2/17_post_norm_decoder_layer")
    torch.manual_seed(4)
    layer = random_weights(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                      dtype=torch.float64), seed=4).eval()
    ours = decoder_layer_from(layer)
    x, memory = torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 6, 8, dtype=torch.float64)
    with torch.no_grad():
        out, A = ours(x, memory, self_mask=causal_mask(4) if self_mask is None else self_mask, fast=fast)
        gaps = {"torch": (out - layer(x, memory, tgt_mask=causal_mask(4))).abs().max().item(),
                "by hand": (out - lesson.post_norm(x, memory, layer)).abs().max().item()}
    assert A is None if fast else A.shape == (2, 2, 4, 6)
    return gaps


@pytest.mark.parametrize("fast", [False, True])
def test_the_decoder_layer_is_torchs_post_norm_layer_and_week2_17s(fast):
    assert max(decoder_layer_gaps(fast).values()) < TIGHT


@pytest.mark.parametrize("fast", [False, True])
def test_a_block_with_a_slipped_mask_is_caught(fast):
    """The decoder comparison can fail: the causal mask one place off (the diagonal blocked too)."""
    slipped = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=0)
    slipped[0, 0] = False  # (row 1 needs one key)
    gaps = decoder_layer_gaps(fast, self_mask=slipped)
    assert min(gaps.values()) > TIGHT and all(map(math.isfinite, gaps.values()))
