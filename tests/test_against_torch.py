"""The lessons' own formulas agree with PyTorch for sizes other than the pages' too."""
from common.printing import n_params as count

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.conftest import load_script


@pytest.mark.parametrize(("shape_q", "t_k"), [((1, 1, 1, 1), 1), ((2, 3, 7, 5), 11), ((4, 8, 16, 64), 9)])
def test_numpy_attention_matches_torch_sdpa(shape_q, t_k):
    attention = load_script("week1/01_attention_from_scratch").attention
    rng = np.random.default_rng(0)
    Q = rng.standard_normal(shape_q)
    K = rng.standard_normal((*shape_q[:-2], t_k, shape_q[-1]))
    V = rng.standard_normal((*shape_q[:-2], t_k, 3))
    out, weights = attention(Q, K, V)
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)))
    np.testing.assert_allclose(out, expected.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("d_model", "heads", "seq_len"), [(8, 1, 3), (12, 3, 6), (64, 8, 10)])
def test_manual_multi_head_matches_torch_module(d_model, heads, seq_len):
    multi_head_attention = load_script("week1/03_multihead_shape_check").multi_head_attention
    torch.manual_seed(0)
    x = torch.randn(2, seq_len, d_model, dtype=torch.float64)
    mha = nn.MultiheadAttention(d_model, heads, batch_first=True, dtype=torch.float64)
    expected, _ = mha(x, x, x, need_weights=False)
    out, per_head, concat = multi_head_attention(x, mha)
    assert per_head.shape == (2, heads, seq_len, d_model // heads)
    assert concat.shape == x.shape
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def torch_additive_attention(s, H, W_a, U_a, v_a):
    """An independent torch version of e_i = v_a . tanh(W_a s + U_a h_i)."""
    s, H, W_a, U_a, v_a = (torch.from_numpy(a) for a in (s, H, W_a, U_a, v_a))
    e = torch.stack([v_a @ torch.tanh(W_a.T @ s + U_a.T @ h) for h in H])
    alpha = torch.softmax(e, dim=0)
    return e, alpha, (alpha[:, None] * H).sum(0)


@pytest.mark.parametrize(("T", "d", "n"), [(1, 1, 1), (4, 3, 5), (9, 6, 2), (30, 16, 32)])
def test_additive_attention_matches_torch(T, d, n):
    additive_attention = load_script("week1/05_additive_attention").additive_attention
    rng = np.random.default_rng(T * 100 + d)
    H, s = rng.standard_normal((T, d)), rng.standard_normal(d)
    U_a, W_a, v_a = rng.standard_normal((d, n)), rng.standard_normal((d, n)), rng.standard_normal(n)
    for mine, theirs in zip(additive_attention(s, H, W_a, U_a, v_a),
                            torch_additive_attention(s, H, W_a, U_a, v_a), strict=True):
        np.testing.assert_allclose(mine, theirs.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("d", "h", "f"), [(4, 1, 8), (16, 4, 64), (64, 8, 100), (768, 12, 3072)])
def test_encoder_layer_formula_matches_torch(d, h, f):
    encoder_layer_params = load_script("week1/04_encoder_parameter_count").encoder_layer_params
    layer = nn.TransformerEncoderLayer(d, h, f, device="meta")
    mha, ffn, norms = encoder_layer_params(d, f)
    assert mha == count(layer.self_attn)
    assert ffn == count(layer.linear1) + count(layer.linear2)
    assert norms == count(layer.norm1) + count(layer.norm2)
    assert mha + ffn + norms == count(layer)


@pytest.mark.parametrize(("d", "h", "f"), [(4, 1, 8), (16, 4, 64), (64, 8, 100), (768, 12, 3072)])
def test_decoder_layer_formula_matches_torch(d, h, f):
    decoder_layer_params = load_script("week2/07_decoder_parameter_count").decoder_layer_params
    layer = nn.TransformerDecoderLayer(d, h, f, device="meta")
    attention, ffn, norms = decoder_layer_params(d, f)
    assert attention == count(layer.self_attn) + count(layer.multihead_attn)
    assert ffn == count(layer.linear1) + count(layer.linear2)
    assert norms == count(layer.norm1) + count(layer.norm2) + count(layer.norm3)
    assert attention + ffn + norms == count(layer)


@pytest.mark.parametrize(("max_len", "d"), [(1, 2), (50, 8), (200, 128)])
def test_sinusoidal_formula_matches_torch_form_and_rotates(max_len, d):
    pe_script = load_script("week2/03_sinusoidal_pe")
    pe = pe_script.sinusoidal_pe(max_len, d)
    np.testing.assert_allclose(pe, pe_script.torch_pe(max_len, d).double().numpy(), rtol=0, atol=1e-4)
    for k in range(1, max_len):
        np.testing.assert_allclose(pe[k:], pe[:-k] @ pe_script.rotation(k, d).T, rtol=0, atol=1e-9)


@pytest.mark.parametrize(("V", "gold", "epsilon"), [(2, 0, 0.0), (5, 2, 0.1), (50, 49, 0.3)])
def test_smoothed_target_is_what_torch_uses(V, gold, epsilon):
    smoothing = load_script("week2/05_label_smoothing")
    z = torch.randn(V, generator=torch.Generator().manual_seed(V))  # float32, like the script
    q = smoothing.smoothed_target(V, gold, epsilon)
    hand = -(q * torch.log_softmax(z, dim=-1)).sum()
    expected = F.cross_entropy(z[None], torch.tensor([gold]), label_smoothing=epsilon)
    torch.testing.assert_close(hand, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(smoothing.smoothed_loss(z, q), expected, rtol=0, atol=1e-6)
    other = smoothing.gold_exact_target(V, gold, epsilon)  # the other convention, by its definition:
    assert other[gold].item() == pytest.approx(1 - epsilon)  # the gold gets exactly 1 - epsilon
    assert torch.cat([other[:gold], other[gold + 1:]]).tolist() == pytest.approx([epsilon / (V - 1)] * (V - 1))
    assert other.sum().item() == pytest.approx(1)


@pytest.mark.parametrize(("d", "h", "f", "seq"), [(4, 1, 16, 3), (8, 2, 32, 5), (32, 4, 64, 9)])
def test_eli5_block_wirings_match_torch_encoder_layer(d, h, f, seq):
    eli5 = load_script("week1/07_eli5_one_block")
    torch.manual_seed(0)
    x = torch.randn(2, seq, d, dtype=torch.float64)
    layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    ffn = nn.Sequential(layer.linear1, nn.ReLU(), layer.linear2)
    block = eli5.TransformerBlock(d, eli5.CausalSelfAttention(layer.self_attn), ffn).double().eval()
    eli5.give_norms_their_own_values(block, layer)
    causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
    with torch.no_grad():
        layer.norm_first = True
        torch.testing.assert_close(block(x), layer(x, src_mask=causal), rtol=0, atol=1e-12)
        layer.norm_first = False
        torch.testing.assert_close(eli5.post_norm(block, x), layer(x, src_mask=causal), rtol=0, atol=1e-12)
    assert count(block) == count(layer) == 4 * d * d + 2 * d * f + f + 9 * d
    block.norm1, block.norm2 = block.norm2, block.norm1  # a LayerNorm in the wrong place shows
    with torch.no_grad():
        assert (eli5.post_norm(block, x) - layer(x, src_mask=causal)).abs().max() > 1e-3
