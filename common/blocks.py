"""The Transformer's blocks, each defined once here for the lessons that build with it, and
each taught by hand in a lesson of its own (tests/test_blocks.py holds every block here to
that lesson's version, and to torch's own module where torch has one):

    causal_mask         Week 2, section 2               taught in week2/01_causal_mask.py
    padding_mask        Week 2, section 3 (padding hidden in the source)
    attention           Week 1, section 4               taught in week1/01_attention_from_scratch.py
    split_heads, join_heads, MultiHeadAttention
                        Week 1, section 5               taught in week1/03_multihead_shape_check.py
    sinusoidal_pe       Week 2, section 5               taught in week2/03_sinusoidal_pe.py
    feed_forward        Week 1, section 6 (the FFN)     taught in week1/13_ffn_needs_relu.py
    EncoderLayer        Week 1, section 6 (post-norm)   taught in week1/14_parameters_vs_length.py
    DecoderLayer        Week 2, section 6 (post-norm)   taught in week2/17_post_norm_decoder_layer.py

(The ELI5 page's pre-norm TransformerBlock is defined once, in week1/07_eli5_one_block.py,
as the page prints it; no other lesson builds one.)

One convention for masks, the page's picture of one: True (1) marks a blocked cell, and
attention writes -inf into the scores there before the softmax, so it gets weight 0.
Shapes follow the pages: x [B, T, d], heads [B, h, T, d_k], weights [B, h, T_q, T_k].
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(T):
    """[T, T] bool: True above the diagonal, where key j lies in query i's future (j > i)."""
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def padding_mask(tokens, pad):
    """[B, 1, 1, T] bool: True on the keys that are padding (token id `pad`), for every head and query."""
    return (tokens == pad)[:, None, None, :]


def attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + M) V, M = -inf where `mask` is True, 0 elsewhere.
    Q [..., T_q, d_k], K [..., T_k, d_k], V [..., T_k, d_v]; returns Z [..., T_q, d_v] and the
    weights A [..., T_q, T_k], each row a distribution over the keys (it sums to 1)."""
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # [..., T_q, T_k]
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)  # a blocked key: exp(-inf) = 0
    A = torch.softmax(scores, dim=-1)  # softmax over the keys, one row per query
    return A @ V, A


def split_heads(x, h):
    """[B, T, h d_k] -> [B, h, T, d_k]: head i takes numbers i d_k .. (i + 1) d_k - 1 of each word."""
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


def join_heads(Z):
    """[B, h, T, d_k] -> [B, T, h d_k]: Concat(H_1, ..., H_h), the heads side by side."""
    B, h, T, d_k = Z.shape
    return Z.transpose(1, 2).reshape(B, T, h * d_k)


class MultiHeadAttention(nn.Module):
    """MHA(X) = Concat(H_1, ..., H_h) W_O,  H_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i,
    Q = X_q W_Q, K = X_kv W_K, V = X_kv W_V (all heads in one matrix each, d_k = d_model / h).
    Self-attention: x_kv is x_q. Cross-attention (Week 2, section 3): queries from the decoder,
    keys and values from the encoder's output."""

    def __init__(self, d_model, h, bias=True):
        super().__init__()
        self.h = h
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv=None, mask=None, fast=False):
        """x_q [B, T_q, d], x_kv [B, T_k, d], mask broadcastable to [B, h, T_q, T_k] (True = blocked).
        Returns [B, T_q, d] and the weights A [B, h, T_q, T_k]. fast: torch's fused kernel,
        F.scaled_dot_product_attention, computes the same Z and keeps no weights (A is None)."""
        x_kv = x_q if x_kv is None else x_kv
        Q = split_heads(self.W_Q(x_q), self.h)  # [B, h, T_q, d_k]
        K = split_heads(self.W_K(x_kv), self.h)  # [B, h, T_k, d_k]
        V = split_heads(self.W_V(x_kv), self.h)  # [B, h, T_k, d_k]
        if fast:  # (its boolean mask marks the keys that take part: the opposite of ours)
            Z, A = F.scaled_dot_product_attention(Q, K, V, attn_mask=None if mask is None else ~mask), None
        else:
            Z, A = attention(Q, K, V, mask)  # [B, h, T_q, d_k], [B, h, T_q, T_k]
        return self.W_O(join_heads(Z)), A  # [B, T_q, d]


def sinusoidal_pe(max_len, d, dtype=torch.float32):
    """[max_len, d]: PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i), w_i = 10000^(-2i/d),
    computed in float64 and then given `dtype`."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]  # [max_len, 1]
    i = torch.arange(d // 2, dtype=torch.float64)[None, :]  # [1, d/2]: the pair index
    omega = 10000.0 ** (-2 * i / d)  # [1, d/2]: one speed per pair
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(p * omega)  # even coordinates 2i
    pe[:, 1::2] = torch.cos(p * omega)  # odd coordinates 2i + 1
    return pe.to(dtype)


def feed_forward(d_model, d_ff):
    """FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, the same weights at every position: widen to d_ff, fold back."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class EncoderLayer(nn.Module):
    """Week 1, section 6, post-norm:  U = LN_1(X + MHA(X)),  Y = LN_2(U + FFN(U))."""

    def __init__(self, d_model, h, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h)
        self.ln1 = nn.LayerNorm(d_model)
        self.ffn = feed_forward(d_model, d_ff)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None, fast=False):
        """x [B, T, d] -> [B, T, d]; mask: the keys hidden from every word (padding)."""
        U = self.ln1(x + self.self_attn(x, mask=mask, fast=fast)[0])  # words look at each other
        return self.ln2(U + self.ffn(U))  # each word thinks alone


class DecoderLayer(nn.Module):
    """Week 2, sections 2, 3 and 6, post-norm: z = LN(x + Sublayer(x)) around each of
    masked self-attention, cross-attention (queries from here, keys and values from the
    encoder's memory) and the feed-forward net."""

    def __init__(self, d_model, h, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h)
        self.ln1 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, h)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = feed_forward(d_model, d_ff)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None, fast=False):
        """x [B, T, d], memory [B, S, d] -> [B, T, d] and the cross-attention weights
        [B, h, T, S] (None if fast). self_mask: the future (and padding); memory_mask: the
        source's padding only: no causal mask over the source, it is all known."""
        z1 = self.ln1(x + self.self_attn(x, mask=self_mask, fast=fast)[0])  # masked self-attention
        read, A = self.cross_attn(z1, memory, mask=memory_mask, fast=fast)  # cross-attention
        z2 = self.ln2(z1 + read)
        return self.ln3(z2 + self.ffn(z2)), A  # the feed-forward net
