"""The Week 1 page's "Mistakes people make", each put to an experiment that could go either way.

Page: Week 1, the "Mistakes people make" boxes of sections 1 to 7.

Each belief gets one measurement, written once as a function of a "world" (an
implementation) and run twice: in the page's world, the real thing (torch's own attention,
layers and autograd; the page's formula where torch has none), and in a world where the
belief would hold. The verdict comes from the two: "the belief is wrong, as the page says"
only if the page's world behaves as the page says and the belief's world, measured the same
way, does not; CONTRADICTS THE PAGE if the page's world misbehaves; if both look alike, the
experiment proved nothing and says so.

Prints, section by section, each belief: the experiment, what it saw in each world, the
verdict; then the bullets another lesson runs (its command, what it shows) and those no
computation can settle (why); the tally. Exit status 0 when every verdict is "as the page
says", 1 otherwise.
Setup: torch float64; each measurement starts from torch.manual_seed(--seed), so both worlds
see the same inputs; "moves" means by more than 1e-9.
Notes: week1/NOTES.md, section 08.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import causal_mask, feed_forward, sinusoidal_pe, split_heads
from common.cli import SEED, Lesson, knob
from common.printing import n_params, vec, yes
from common.records import UPHOLDS
from common.report import MOVES, Finding, Ledger, moved, weights_of

import torch
import torch.nn as nn
import torch.nn.functional as F

F64 = torch.float64  # every tensor: float64 rounds at about 1e-16, far below MOVES, so no printed digit moves


def all_ones(sums):
    """Does every sum equal 1, to within MOVES?"""
    return bool((sums - 1).abs().max() <= MOVES)


def span(values):
    """'1.00' when every value prints the same, else 'smallest to largest'."""
    low, high = float(values.detach().min()), float(values.detach().max())
    text = (lambda v: f"{v:,.2f}") if high < 1e4 else (lambda v: f"{v:.1e}")
    return text(low) if text(low) == text(high) else f"{text(low)} to {text(high)}"


# ---------------------------------------------------------------- section 2

def bahdanau(S, H, W_a, U_a, v_a):
    """The page's formula: e_ti = v_a . tanh(W_a s_t + U_a h_i), softmax over the SOURCE words i."""
    e = torch.tanh((S @ W_a)[:, None, :] + (H @ U_a)[None, :, :]) @ v_a  # [T_target, T_source]
    return torch.softmax(e, dim=-1)


def bahdanau_over_decoder_states(S, H, W_a, U_a, v_a):
    """The belief's world: the same scores, taken over the decoder's own states s_j."""
    e = torch.tanh((S @ W_a)[:, None, :] + (S @ U_a)[None, :, :]) @ v_a  # [T_target, T_target]
    return torch.softmax(e, dim=-1)


def what_steers_the_weights(attend, seed):
    """Belief 1: change one source word, then one other decoder step: which moves step 1's weights?"""
    torch.manual_seed(seed)
    d, n = 4, 5
    S, H = torch.randn(3, d, dtype=F64), torch.randn(4, d, dtype=F64)  # 3 decoder states, 4 source words
    W_a, U_a, v_a = torch.randn(d, n, dtype=F64), torch.randn(d, n, dtype=F64), torch.randn(n, dtype=F64)
    alpha = attend(S, H, W_a, U_a, v_a)[0]  # decoder step 1's weights
    H_changed, S_changed = H.clone(), S.clone()
    H_changed[3] += 1.0  # source word 4 only
    S_changed[2] += 1.0  # decoder step 3 only
    by_source = moved(attend(S, H_changed, W_a, U_a, v_a)[0], alpha)
    by_decoder = moved(attend(S_changed, H, W_a, U_a, v_a)[0], alpha)
    seen = (f"step 1 has {len(alpha)} weights, adding up to {alpha.sum():.2f}; they move when source word 4 "
            f"changes: {yes(by_source)}; when decoder step 3 changes: {yes(by_decoder)}")
    return Finding(seen, len(alpha) == len(H) and all_ones(alpha.sum()) and by_source and not by_decoder)


def sdpa(q, k, v):
    """torch's own attention: softmax(q k^T / sqrt(d_k)) v, scores from content only."""
    return F.scaled_dot_product_attention(q, k, v)


def diagonal_attention(q, k, v):
    """The belief's world: step t always looks hardest at source word t, whatever the words say."""
    distance = (torch.arange(q.shape[-2])[:, None] - torch.arange(k.shape[-2])[None, :]).abs()
    return torch.softmax(-4.0 * distance.to(F64), dim=-1) @ v


def where_each_step_looks(attend, seed):
    """Belief 2: "the black cat sleeps" -> "le chat noir dort" swaps words 2 and 3. Where
    does each French step put its biggest weight?"""
    torch.manual_seed(seed)
    english = torch.randn(1, 4, 64, dtype=F64)  # keys: one vector per English word
    order = [0, 2, 1, 3]  # French step t translates English word order[t]
    french = english[:, order]  # queries: each French step asks for its English word (what training teaches)
    peaks = weights_of(attend, french, english)[0].argmax(dim=-1).tolist()
    seen = f"biggest weight of French steps 1-4 on English words {[p + 1 for p in peaks]}"
    return Finding(seen, peaks == order)


def section_2(ledger, seed):
    """Section 2's beliefs 1 and 2, each measured in the page's world and in the belief's."""
    ledger.section("Section 2: looking back (Bahdanau attention)")
    ledger.belief(1, "attention weights are spread over the decoder states",
                  "3 decoder steps, 4 source words; change source word 4, then decoder step 3",
                  ("the page's formula, a softmax over the source words", what_steers_the_weights(bahdanau, seed)),
                  ("a softmax over the decoder states", what_steers_the_weights(bahdanau_over_decoder_states, seed)))
    ledger.belief(2, "the biggest weight always sits on the diagonal (step t looks at word t)",
                  '"the black cat sleeps" -> "le chat noir dort" swaps words 2 and 3; each French query is '
                  "built to match its English word",
                  ("torch's attention, which scores what words hold", where_each_step_looks(sdpa, seed)),
                  ("attention tied to the diagonal", where_each_step_looks(diagonal_attention, seed)))


# ---------------------------------------------------------------- section 3

def keys_mixed(q, k, v):
    """The belief's world: attention that hands back a weighted sum of the keys."""
    return F.scaled_dot_product_attention(q, k, k)


def what_gets_mixed(attend):
    """Belief 3, on the notes' example: q = 1, k_1 = k_2 = 0, v_1 = [1, 0], v_2 = [0, 2]."""
    q = torch.tensor([[[1.0]]], dtype=F64)  # [1, 1 query, d_k = 1]
    k = torch.tensor([[[0.0], [0.0]]], dtype=F64)  # [1, 2 keys, 1]
    v = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], dtype=F64)  # [1, 2 values, 2]
    z = attend(q, k, v)[0, 0]
    # Both keys score q . k = 0, so the two weights are equal: 1/2 each.
    values_half_half, keys_half_half = (v[0, 0] + v[0, 1]) / 2, (k[0, 0] + k[0, 1]) / 2
    is_values = z.shape == values_half_half.shape and not moved(z, values_half_half)
    seen = (f"output z = {vec(z, 1)}; half of each value is {vec(values_half_half, 1)} (the page's z), "
            f"half of each key is {vec(keys_half_half, 1)}")
    return Finding(seen, is_values)


def torch_weights(x_q, x_kv):
    """The weights torch's nn.MultiheadAttention returns: [batch, queries, keys]."""
    mha = nn.MultiheadAttention(x_q.shape[-1], 1, batch_first=True, dtype=F64)
    return mha(x_q, x_kv, x_kv)[1]


def softmax_over_queries(x_q, x_kv):
    """The belief's world: the same kind of scores, normalized down each column (over the queries)."""
    scores = x_q @ x_kv.transpose(-1, -2) / math.sqrt(x_q.shape[-1])  # [1, T_q, T_k]
    return torch.softmax(scores, dim=-2)


def which_way_weights_add_up(weights_fn, seed):
    """Belief 4: 3 queries look at 5 keys. Add up the weights per query (a row) and per key (a column)."""
    torch.manual_seed(seed)
    x_q, x_kv = torch.randn(1, 3, 8, dtype=F64), torch.randn(1, 5, 8, dtype=F64)
    A = weights_fn(x_q, x_kv)[0]  # [3 queries, 5 keys]
    per_query, per_key = A.sum(dim=-1), A.sum(dim=-2)
    seen = (f"each query's 5 weights add up to {span(per_query)}; "
            f"each key's 3 weights add up to {span(per_key)}")
    return Finding(seen, all_ones(per_query) and not all_ones(per_key))


def torch_projections(d):
    """torch's nn.MultiheadAttention; W^Q, W^K, W^V are the three blocks of its in_proj_weight.
    All three start as I, the page's identity shortcut."""
    mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=F64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d, dtype=F64).repeat(3, 1))

    def forward(x):
        return mha(x, x, x, need_weights=False)[0]

    def roles():
        return mha.in_proj_weight.chunk(3)  # W^Q, W^K, W^V

    return forward, list(mha.parameters()), roles


def one_shared_matrix(d):
    """The belief's world: one matrix W (starting as I) plays all three roles."""
    W = torch.eye(d, dtype=F64, requires_grad=True)

    def forward(x):
        return F.scaled_dot_product_attention(x @ W.T, x @ W.T, x @ W.T)

    def roles():
        return W, W, W

    return forward, [W], roles


def do_the_roles_part(world, seed):
    """Belief 5: start W^Q = W^K = W^V, take one gradient-descent step, and compare them."""
    torch.manual_seed(seed)
    x, target = torch.randn(1, 5, 4, dtype=F64), torch.randn(1, 5, 4, dtype=F64)
    forward, params, roles = world(4)
    (forward(x) - target).pow(2).mean().backward()  # autograd: each learned number's gradient
    with torch.no_grad():
        for p in params:
            p -= 0.5 * p.grad  # one training step
        W_Q, W_K, W_V = roles()
        closest = min((W_Q - W_K).abs().max(), (W_Q - W_V).abs().max(), (W_K - W_V).abs().max())
    parted = bool(closest > MOVES)
    seen = (f"all three start as I; after one training step the closest two differ by {closest:.2g}: "
            f"{'three separate matrices' if parted else 'still one matrix'}")
    return Finding(seen, parted)


def encoder_layer(d, norm_first=False):
    """torch's encoder layer (self-attention + FFN, residuals, LayerNorms); dropout off."""
    return nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True, norm_first=norm_first,
                                      dtype=F64)


def ffn_only(d):
    """The belief's world: an 'encoder layer' with no attention, only the per-word FFN."""
    return feed_forward(d, 2 * d).to(F64)


def do_encoder_words_talk(make_layer, seed):
    """Belief 6: in an encoder layer (no decoder anywhere), change word 1: does word 3's output move?"""
    torch.manual_seed(seed)
    x = torch.randn(1, 4, 8, dtype=F64)
    layer = make_layer(8)
    changed = x.clone()
    changed[0, 0] += 1.0
    talks = moved(layer(changed)[0, 2], layer(x)[0, 2])
    blocks = sum(isinstance(m, nn.MultiheadAttention) for m in layer.modules())
    seen = f"attention blocks inside: {blocks}; changing word 1 moves word 3's output: {yes(talks)}"
    return Finding(seen, talks and blocks == 1)


def torch_self_attention(d):
    mha = nn.MultiheadAttention(d, 2, batch_first=True, dtype=F64)
    return lambda x: mha(x, x, x, need_weights=False)[0]


def self_attention_with_positions(d):
    """The belief's world: self-attention that is handed each word's position."""
    mha = nn.MultiheadAttention(d, 2, batch_first=True, dtype=F64)

    def attend(x):
        tagged = x + sinusoidal_pe(x.shape[1], d, F64)  # Week 2's position tags, [T, d]
        return mha(tagged, tagged, tagged, need_weights=False)[0]

    return attend


def does_order_show(make_attention, seed):
    """Belief 7: shuffle the 5 words. Are the outputs just the old outputs, shuffled the same way?"""
    torch.manual_seed(seed)
    x = torch.randn(1, 5, 8, dtype=F64)
    shuffle = [2, 0, 4, 1, 3]
    attend = make_attention(8)
    blind = not moved(attend(x[:, shuffle]), attend(x)[:, shuffle])
    seen = (f"words put in the order {[i + 1 for i in shuffle]}: the outputs are the old outputs in "
            f"that order, nothing else changed: {yes(blind)}")
    return Finding(seen, blind)


def section_3(ledger, seed):
    """Section 3's beliefs 3 to 7, each measured in the page's world and in the belief's."""
    ledger.section("Section 3: self-attention and Q, K, V")
    ledger.belief(3, "the output is a weighted sum of the keys",
                  "the notes' example q = 1, k_1 = k_2 = 0, v_1 = [1, 0], v_2 = [0, 2]",
                  ("torch's attention", what_gets_mixed(sdpa)),
                  ("keys handed back", what_gets_mixed(keys_mixed)))
    ledger.belief(4, "softmax normalizes over the queries",
                  "3 queries look at 5 keys; add up the weights along each row (one query) and each column (one key)",
                  ("torch's nn.MultiheadAttention", which_way_weights_add_up(torch_weights, seed)),
                  ("a softmax over the queries", which_way_weights_add_up(softmax_over_queries, seed)))
    ledger.belief(5, "W^Q, W^K and W^V are one matrix (the identity trick's three copies)",
                  "start all three at I, take one training step with autograd, compare them",
                  ("torch's nn.MultiheadAttention", do_the_roles_part(torch_projections, seed)),
                  ("one matrix in all three roles", do_the_roles_part(one_shared_matrix, seed)))
    ledger.belief(6, "attention lives only in the decoder",
                  "an encoder layer on its own, 4 words, no decoder; change word 1, watch word 3 "
                  "(the decoder's cross-attention, which reads another sentence, is Week 2)",
                  ("torch's nn.TransformerEncoderLayer", do_encoder_words_talk(encoder_layer, seed)),
                  ("an encoder of FFNs only", do_encoder_words_talk(ffn_only, seed)))
    ledger.belief(7, "self-attention alone can tell word order",
                  "shuffle 5 words and attend again, no position tags",
                  ("torch's nn.MultiheadAttention", does_order_show(torch_self_attention, seed)),
                  ("the same, handed position tags", does_order_show(self_attention_with_positions, seed)))


# ---------------------------------------------------------------- section 4

def flattening_scale(q, k, v):
    """The belief's world: a 'scaling' that makes every row uniform (scale 0: all scores equal)."""
    return F.scaled_dot_product_attention(q, k, v, scale=0.0)


def are_rows_flat(attend, seed):
    """Belief 8: one query, 6 keys, d_k = 64. Are the scaled weights uniform, and in the raw scores' order?"""
    torch.manual_seed(seed)
    q, k = torch.randn(1, 1, 64, dtype=F64), torch.randn(1, 6, 64, dtype=F64)
    raw = (q @ k.transpose(-1, -2))[0, 0]  # the raw scores, variance about d_k = 64
    w = weights_of(attend, q, k)[0, 0]
    uniform = bool(w.max() - w.min() < 0.01)
    order_kept = torch.equal(w.argsort(), raw.argsort())
    seen = (f"weights {vec(w, 3)} (uniform would be {1 / 6:.3f} each); "
            f"same order as the raw scores: {yes(order_kept)}")
    return Finding(seen, not uniform and order_kept)


def torch_scaling_switch(q, k, v, scaled):
    """torch's attention with its scaling on (the default) or off (scale 1)."""
    return F.scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)


def scaling_that_normalizes(q, k, v, scaled):
    """The belief's world: no softmax; the scaling step is what divides each row by its total."""
    e = torch.exp(q @ k.transpose(-1, -2))
    return (e / e.sum(dim=-1, keepdim=True) if scaled else e) @ v


def what_makes_rows_add_up(attend, seed):
    """Belief 9: switch the scaling off. Do the rows still add up to 1?"""
    torch.manual_seed(seed)
    q, k = torch.randn(1, 3, 64, dtype=F64), torch.randn(1, 6, 64, dtype=F64)
    eye = torch.eye(6, dtype=F64)[None]  # V = I: the outputs are the weights
    with_scaling, without = attend(q, k, eye, True).sum(dim=-1), attend(q, k, eye, False).sum(dim=-1)
    seen = f"row sums with the scaling: {span(with_scaling)}; with the scaling switched off: {span(without)}"
    return Finding(seen, all_ones(with_scaling) and all_ones(without))


def spread_scaling(q, k, v):
    """The belief's world: scaling by each row's own spread (its standard deviation), so no
    row's scores can ever be far apart."""
    s = q @ k.transpose(-1, -2)
    return torch.softmax((s - s.mean(dim=-1, keepdim=True)) / s.std(dim=-1, keepdim=True), dim=-1) @ v


def largest_weight(attend, seed):
    """Belief 10: the largest weight, after scaling, for a query that lines up with key 1."""
    torch.manual_seed(seed)
    k = torch.randn(1, 6, 64, dtype=F64)
    q_random = torch.randn(1, 1, 64, dtype=F64)
    q_aligned = 4 * k[:, :1]  # lined up with key 1, as trained projections are free to make it
    top_aligned, top_random = weights_of(attend, q_aligned, k).max(), weights_of(attend, q_random, k).max()
    seen = f"largest weight {top_aligned:.4f} for the lined-up query ({top_random:.2f} for a random one)"
    return Finding(seen, bool(top_aligned > 0.99))


def torch_attention_layer(d, scaled):
    """torch's parts: four nn.Linear projections around torch's attention, whose scaling
    is the `scale` argument (default 1/sqrt(d_k); 1 switches it off)."""
    layer = nn.ModuleDict({name: nn.Linear(d, d, dtype=F64) for name in ("W_Q", "W_K", "W_V", "W_O")})

    def forward(x):
        q, k, v = layer["W_Q"](x), layer["W_K"](x), layer["W_V"](x)
        return layer["W_O"](F.scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0))

    return layer, forward


def learned_scale_layer(d, scaled):
    """The belief's world: the same layer, but the scaling is a number the layer learns."""
    layer = nn.ModuleDict({name: nn.Linear(d, d, dtype=F64) for name in ("W_Q", "W_K", "W_V", "W_O")})
    if scaled:
        layer.register_parameter("scale", nn.Parameter(torch.tensor(1 / math.sqrt(d), dtype=F64)))

    def forward(x):
        q, k, v = layer["W_Q"](x), layer["W_K"](x), layer["W_V"](x)
        s = q @ k.transpose(-1, -2) * (layer.scale if scaled else 1.0)
        return layer["W_O"](torch.softmax(s, dim=-1) @ v)

    return layer, forward


def what_scaling_costs(make_layer, seed):
    """Belief 11: build the layer without and with the scaling, from the same starting weights;
    count learned numbers, look at the shape, check the switch changes the output, and count
    torch's nn.MultiheadAttention, which scales inside."""
    torch.manual_seed(seed)
    x = torch.randn(1, 5, 8, dtype=F64)  # [1, 5 words, d = 8]
    plain, plain_forward = make_layer(8, False)
    scaled, scaled_forward = make_layer(8, True)
    scaled.load_state_dict(plain.state_dict(), strict=False)  # plain's weights: only the scaling differs
    counts = n_params(plain), n_params(scaled)
    outputs = plain_forward(x), scaled_forward(x)
    shapes = [list(out.shape) for out in outputs]
    switch_works = moved(*outputs)
    torch_mha = n_params(nn.MultiheadAttention(8, 2, dtype=F64))
    seen = (f"without scaling {counts[0]} learned numbers, output {shapes[0]}; "
            f"with scaling {counts[1]}, output {shapes[1]}; the outputs differ: {yes(switch_works)}; "
            f"torch's nn.MultiheadAttention(8, 2), which scales inside, holds {torch_mha}")
    return Finding(seen, counts[0] == counts[1] == torch_mha and shapes[0] == shapes[1] and switch_works)


def section_4(ledger, seed):
    """Section 4's beliefs 8 to 11, each measured in the page's world and in the belief's."""
    ledger.section("Section 4: dividing by sqrt(d_k)")
    ledger.belief(8, "scaling by sqrt(d_k) makes every row uniform",
                  "one query, 6 keys, d_k = 64: the weights after scaling",
                  ("torch's attention, scaled by 1/sqrt(64)", are_rows_flat(sdpa, seed)),
                  ("a scaling that flattens rows", are_rows_flat(flattening_scale, seed)))
    ledger.belief(9, "scaling is what makes each row sum to 1",
                  "3 queries, 6 keys, d_k = 64: row sums with the scaling on and switched off",
                  ("torch's attention", what_makes_rows_add_up(torch_scaling_switch, seed)),
                  ("the scaling divides by the row total", what_makes_rows_add_up(scaling_that_normalizes, seed)))
    ledger.belief(10, "after scaling, softmax can no longer saturate",
                  "d_k = 64, 6 keys; a query lined up with key 1 (q = 4 k_1), which no rule forbids",
                  ("torch's attention", largest_weight(sdpa, seed)),
                  ("scaling by each row's own spread", largest_weight(spread_scaling, seed)))
    ledger.belief(11, "scaling adds parameters or changes a shape",
                  "one attention layer (d = 8, 5 words) built without and with the scaling",
                  ("torch's nn.Linear projections and attention", what_scaling_costs(torch_attention_layer, seed)),
                  ("a learned scale", what_scaling_costs(learned_scale_layer, seed)))


# ---------------------------------------------------------------- section 5

def torch_heads(d, h):
    return nn.MultiheadAttention(d, h, device="meta")  # meta: shapes only, no numbers stored


def full_width_heads(d, h):
    """The belief's world: every head is a full-width attention of its own."""
    return nn.ModuleList(nn.MultiheadAttention(d, 1, device="meta") for _ in range(h))


def weights_as_heads_grow(make):
    """Belief 12: count the learned numbers at d_model = 512 for h = 1, 2, 4, 8, 16 heads."""
    counts = {h: n_params(make(512, h)) for h in (1, 2, 4, 8, 16)}
    return Finding("; ".join(f"h={h}: {n:,}" for h, n in counts.items()), len(set(counts.values())) == 1)


def torch_out_proj(concat, W_O):
    """torch's nn.Linear, the layer nn.MultiheadAttention uses for W^O (out_proj). It stores
    the matrix as [out, in], that is W^O turned over, and computes concat @ weight.T."""
    out_proj = nn.Linear(W_O.shape[0], W_O.shape[1], bias=False, dtype=F64)
    with torch.no_grad():
        out_proj.weight.copy_(W_O.T)
    return out_proj(concat)


def W_O_on_the_left(concat, W_O):
    """The belief's world: W^O multiplies the concatenation from the left."""
    return W_O @ concat


def where_W_O_goes(project):
    """Belief 13, on the notes' example: heads give [1, 2] and [3, 4]; W^O has columns [1, 0, 1, 0], [0, 1, 0, 1]."""
    concat = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=F64)  # the two heads side by side: one row, [1, 4]
    W_O = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], dtype=F64)  # [4, 2]
    try:
        out = project(concat, W_O)
    except RuntimeError:  # torch refuses a product whose inner sizes differ
        return Finding(f"W^O {list(W_O.shape)} times the row {list(concat.shape)} is impossible: "
                       "the inner sizes 2 and 1 differ", False)
    right = list(out.shape) == [1, 2] and not moved(out, torch.tensor([[4.0, 6.0]], dtype=F64))
    return Finding(f"the row [1, 2, 3, 4] becomes {vec(out.flatten(), 0)}, shape {list(out.shape)} "
                   "(the page's [4, 6] = concat @ W^O)", right)


def section_5(ledger):
    """Section 5's beliefs 12 and 13 (counts and shapes: nothing random)."""
    ledger.section("Section 5: several heads and W^O")
    ledger.belief(12, "more heads mean more weights (section 7 repeats this bullet)",
                  "count the learned numbers of one attention layer at d_model = 512 as the heads grow",
                  ("torch's nn.MultiheadAttention", weights_as_heads_grow(torch_heads)),
                  ("every head full width", weights_as_heads_grow(full_width_heads)))
    ledger.belief(13, "W^O multiplies the concatenated heads from the left",
                  "the notes' example: concat [1, 2, 3, 4] (a row, [1, 4]) and W^O [4, 2]",
                  ("torch's nn.Linear, MHA's out_proj", where_W_O_goes(torch_out_proj)),
                  ("W^O @ concat", where_W_O_goes(W_O_on_the_left)))


# ---------------------------------------------------------------- section 6

def torch_ffn(d):
    return feed_forward(d, 4 * d).to(F64)  # torch's Linear, ReLU, Linear


def neighbour_ffn(d):
    """The belief's world: a 'feed-forward' step that also reads both neighbours (a width-3 convolution)."""
    conv = nn.Conv1d(d, d, kernel_size=3, padding=1, dtype=F64)
    return lambda x: conv(x.transpose(1, 2)).transpose(1, 2)


def which_outputs_move(make_ffn, seed):
    """Belief 14: change token 3 of 5 and run the FFN again: which outputs move?"""
    torch.manual_seed(seed)
    x = torch.randn(1, 5, 8, dtype=F64)
    ffn = make_ffn(8)
    changed = x.clone()
    changed[0, 2] += 1.0
    before, after = ffn(x), ffn(changed)
    moving = [t + 1 for t in range(5) if moved(after[0, t], before[0, t])]
    return Finding(f"outputs that moved: {moving}", moving == [3])


def torch_encoder_stack(d):
    return nn.TransformerEncoder(encoder_layer(d), 6, enable_nested_tensor=False)  # torch copies the layer 6 times


def one_layer_six_times(d):
    """The belief's world: one layer, used six times (shared weights)."""
    stack = torch_encoder_stack(d)
    stack.layers = nn.ModuleList([stack.layers[0]] * 6)
    return stack


def do_layers_part(make_stack, seed):
    """Belief 15: take one training step on a 6-layer encoder; compare layer 1's W_1 with layer 2's."""
    torch.manual_seed(seed)
    x, target = torch.randn(1, 5, 8, dtype=F64), torch.randn(1, 5, 8, dtype=F64)
    stack = make_stack(8)
    first, second = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight
    equal_at_start = torch.equal(first, second)
    (stack(x) - target).pow(2).mean().backward()
    with torch.no_grad():
        for p in stack.parameters():
            p -= 0.1 * p.grad
    parted = not torch.equal(first, second)
    layer = n_params(stack.layers[0])
    seen = (f"layers 1 and 2 start equal: {yes(equal_at_start)}; after one training step they differ: "
            f"{yes(parted)}; the stack learns {n_params(stack):,} numbers = {n_params(stack) // layer} x {layer:,}")
    return Finding(seen, parted and n_params(stack) == 6 * layer)


def causal_encoder(d):
    """The belief's world: the same encoder layer, given the decoder's causal mask."""
    layer = encoder_layer(d)
    return lambda x: layer(x, src_mask=causal_mask(x.shape[1]), is_causal=True)  # True = blocked: the future


def can_word_1_see_word_3(make_encoder, seed):
    """Belief 16: in an encoder layer, how strongly does word 1's output respond to word 3 (a later word)?"""
    torch.manual_seed(seed)
    x = torch.randn(1, 4, 8, dtype=F64, requires_grad=True)
    direction = torch.randn(8, dtype=F64)
    encode = make_encoder(8)
    (encode(x)[0, 0] @ direction).backward()  # autograd: how word 1's output responds to every input
    pull = float(x.grad[0, 2].abs().max())
    return Finding(f"largest gradient of word 1's output with respect to word 3: {pull:.2g}", pull > MOVES)


def pre_norm_layer(d):
    """The belief's world: torch's layer with LayerNorm before each sublayer."""
    return encoder_layer(d, norm_first=True)


def where_the_norm_sits(make_layer, seed):
    """Belief 17: rebuild the layer's output by hand, LayerNorm after the residual sum and before it."""
    torch.manual_seed(seed)
    x = torch.randn(1, 4, 8, dtype=F64)
    layer = make_layer(8)

    def attention(z):
        return layer.self_attn(z, z, z, need_weights=False)[0]

    def ffn(z):
        return layer.linear2(F.relu(layer.linear1(z)))

    U = layer.norm1(x + attention(x))
    post = layer.norm2(U + ffn(U))  # LN(x + sublayer(x)): post-norm
    U = x + attention(layer.norm1(x))
    pre = U + ffn(layer.norm2(U))  # x + sublayer(LN(x)): pre-norm
    y = layer(x)
    is_post, is_pre = not moved(y, post), not moved(y, pre)
    seen = (f"output = LN(x + sublayer(x)) by hand: {yes(is_post)}; "
            f"output = x + sublayer(LN(x)) by hand: {yes(is_pre)}")
    return Finding(seen, is_post and not is_pre)


def section_6(ledger, seed):
    """Section 6's beliefs 14 to 17, each measured in the page's world and in the belief's."""
    ledger.section("Section 6: the encoder layer")
    ledger.belief(14, "the FFN looks at neighbouring tokens",
                  "change token 3 of 5 and run the FFN again",
                  ("torch's Linear-ReLU-Linear", which_outputs_move(torch_ffn, seed)),
                  ("an FFN that reads its neighbours", which_outputs_move(neighbour_ffn, seed)))
    ledger.belief(15, "identical layers share weights",
                  "a 6-layer encoder: compare layers 1 and 2 before and after one training step; count the stack",
                  ("torch's nn.TransformerEncoder", do_layers_part(torch_encoder_stack, seed)),
                  ("one layer used six times", do_layers_part(one_layer_six_times, seed)))
    ledger.belief(16, "the encoder's self-attention is masked like the decoder's",
                  "4 words through one encoder layer; autograd asks how word 1's output responds to word 3",
                  ("torch's nn.TransformerEncoderLayer, no mask", can_word_1_see_word_3(encoder_layer, seed)),
                  ("the same layer with a causal mask", can_word_1_see_word_3(causal_encoder, seed)))
    ledger.belief(17, "the original layer puts LayerNorm before each sublayer (pre-norm)",
                  "rebuild the layer's output by hand from its own parts, both ways",
                  ("torch's default layer, built after the paper", where_the_norm_sits(encoder_layer, seed)),
                  ("torch's layer with norm_first=True", where_the_norm_sits(pre_norm_layer, seed)))


# ---------------------------------------------------------------- section 7

def torch_encoder_layer_512():
    return nn.TransformerEncoderLayer(512, 8, 2048, device="meta")


def bare_ffn_512():
    """The belief's world: a layer with no biases, no LayerNorms and no W^O to leave out."""
    return nn.Sequential(nn.Linear(512, 2048, bias=False, device="meta"), nn.ReLU(),
                         nn.Linear(2048, 512, bias=False, device="meta"))


def counts_by_what_is_included(make_layer):
    """Belief 18: count one layer four ways, leaving out different pieces."""
    named = dict(make_layer().named_parameters())

    def count(keep):
        return sum(p.numel() for name, p in named.items() if keep(name))

    counts = {"everything (torch's total)": count(lambda name: True),
              "no biases": count(lambda name: not name.endswith("bias")),
              "no biases, no LayerNorms": count(lambda name: not name.endswith("bias") and "norm" not in name),
              "no W^O": count(lambda name: "out_proj" not in name)}
    return Finding("; ".join(f"{how} {n:,}" for how, n in counts.items()), len(set(counts.values())) > 1)


def torch_counts(d, h, f, split=split_heads):
    """torch's own counts for one encoder layer; head 1's W^Q is its share of W^Q as the heads
    are split (common/blocks.py's split_heads, the split every attention here makes)."""
    layer = nn.TransformerEncoderLayer(d, h, f, device="meta")
    W_Q = layer.self_attn.in_proj_weight[:d].T  # [d, d]: Q = x W_Q (torch stores W^Q, W^K, W^V stacked, [out, in])
    W_Q_heads = split(W_Q[None], h)[0]  # [h, d, d_k]: head i's columns of W_Q, the ones that make its queries
    return {"attention": n_params(layer.self_attn), "FFN": n_params(layer.linear1) + n_params(layer.linear2),
            "LayerNorms": n_params(layer.norm1) + n_params(layer.norm2), "layer": n_params(layer),
            "head 1's W^Q": W_Q_heads[0].numel()}


def course_round_numbers(d, h, f):
    """The belief's world: the numbers the page says the ebook and the slide state (not
    measured: nothing here has these counts), taken as exact."""
    return {"attention": 1_000_000, "FFN": 2_000_000, "layer": 3_000_000, "head 1's W^Q": 32_178}


def exact_counts(count):
    """Belief 19: the counts at d_model = 512, h = 8, d_ff = 2048 (so d_k = 64), held to the
    page's exact counts: 4 d^2 + 2 d f + f + 9 d per layer, d x d_k for one head's W^Q."""
    d, h, f = 512, 8, 2048
    c = count(d, h, f)
    head = c["head 1's W^Q"]
    parts = " + ".join(f"{part} {c[part]:,}" for part in ("attention", "FFN", "LayerNorms") if part in c)
    seen = f"{parts} = {c['layer']:,} in the layer; head 1's W^Q {head:,}"
    return Finding(seen, c["layer"] == 4 * d * d + 2 * d * f + f + 9 * d and head == d * (d // h))


def torch_score_table(x):
    """torch's score table, one weight per (query, key) pair: [B, h, T, T]."""
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=F64)
    return mha(x, x, x, average_attn_weights=False)[1]


def fixed_window(x):
    """The belief's world: every word looks at the same 4 keys, however long the sentence."""
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=F64)
    return mha(x, x[:, :4], x[:, :4], average_attn_weights=False)[1]  # [B, h, T, 4]


def score_entries(weights_fn):
    """Belief 20: count the score entries for B = 4 sentences, h = 2 heads, T = 12, 24, 48 words."""
    entries = {T: weights_fn(torch.zeros(4, T, 8, dtype=F64)).numel() for T in (12, 24, 48)}
    seen = "; ".join(f"T={T}: {n:,}" for T, n in entries.items())
    return Finding(seen, entries[24] == 4 * entries[12] and entries[48] == 4 * entries[24])


def section_7(ledger):
    """Section 7's beliefs 18 to 20 (counts only: nothing random)."""
    ledger.section("Section 7: counting the learned numbers")
    ledger.belief(18, "a parameter count needs no word on what it includes",
                  "count one encoder layer (d = 512, d_ff = 2048) four ways",
                  ("torch's nn.TransformerEncoderLayer", counts_by_what_is_included(torch_encoder_layer_512)),
                  ("a bare FFN", counts_by_what_is_included(bare_ffn_512)))
    ledger.belief(19, 'the ebook\'s "1M + 2M = 3M" and the slide\'s 32,178 are exact counts',
                  "count torch's encoder layer at d = 512, h = 8, d_ff = 2048, and one head's W^Q (its share of "
                  "torch's W^Q as split_heads splits the queries into 8 heads)",
                  ("torch's counts", exact_counts(torch_counts)),
                  ("the page's stated numbers, not measured, taken as counts", exact_counts(course_round_numbers)))
    ledger.belief(20, "attention cost grows linearly with length",
                  "count the score entries B h T^2 in torch's weights for B = 4, h = 2, T = 12, 24, 48",
                  ("torch's nn.MultiheadAttention", score_entries(torch_score_table)),
                  ("a fixed window of 4 keys", score_entries(fixed_window)))


# ---------------------------------------------------------------- the lesson, in the page's order

# Bullets a training in another lesson runs: (bullet, lesson, {that lesson's check: the
# outcome this line reports}, what its run shows). The check is named as in
# expected_outputs/<lesson>.checks.txt; tests/test_mistakes.py reads the lesson's default run
# and holds each check to the outcome here, so a line says no more than that run shows.
ANOTHER_LESSON_RUNS = [
    ("Long sentences always get worse (section 1)", "week1/09_bottleneck_experiment",
     {"a strain, not a law": UPHOLDS},
     "it wrong, as the page says: its fixed-context translator falls length by length, no step taking "
     "50% of its whole fall, while the attention one stays above 0.90 on the longest rows"),
    ("A weight is a guaranteed explanation (section 2)", "week1/15_context_decides",
     {"a weight is not a guaranteed explanation": UPHOLDS},
     'it wrong, as the page says: its usual layer 2 answers at least 90% of the held-out sentences right while '
     '"it" looks hardest at the noun it means in fewer than 90%'),
    ("Heads find distinct, readable roles (section 5)", "week1/16_heads_take_roles",
     {"heads need not find distinct, readable roles": UPHOLDS},
     "it wrong, as the page says: trained with 4 heads, a head knocked out alone leaves every blank at 50% "
     "or more right (so the other heads do what it does, or it does nothing the blanks need)"),
]


def bullets_another_lesson_runs(ledger):
    """The page's bullets a training in another lesson settles: the command and what it shows."""
    ledger.section("Bullets another lesson runs (its command shows it):")
    for bullet, lesson, checks, shows in ANOTHER_LESSON_RUNS:
        ledger.elsewhere(bullet, lesson, checks, shows)


def bullets_no_computation_settles(ledger):
    """The page's bullets that no measurement can settle, each with the reason."""
    ledger.section("Bullets no computation here can settle:")
    ledger.untested("Seq2seq means exactly two RNNs and one vector (section 1)",
                    "what a word covers, not a number")


def lesson(args):
    """The page's sections in its order, each belief with its verdict; the bullets no computation
    here settles; the tally (and the exit status)."""
    ledger = Ledger()
    ledger.two_worlds("Week 1: mistakes people make, tested", "attention, layers and gradients")
    section_2(ledger, args.seed)
    section_3(ledger, args.seed)
    section_4(ledger, args.seed)
    section_5(ledger)
    section_6(ledger, args.seed)
    section_7(ledger)
    bullets_another_lesson_runs(ledger)
    bullets_no_computation_settles(ledger)
    # Each verdict came from one measurement that answered differently in the belief's world:
    # that second line is what makes each "as the page says" worth something.
    return ledger.finish()


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("Week 1's 'Mistakes people make': each belief tested by one measurement run twice, on the "
               "real thing (torch's own) and on a version that behaves as the belief says.")
KNOBS = [knob("--seed", type=SEED, default=42,
              help="seed of every random draw (the inputs and torch's starting weights)")]
TRY_IT = [("--seed 7", "new random words and starting weights: the numbers drawn from them change, every verdict "
           "stays")]


LESSON = Lesson(__file__, page=("week1", "mistakes"), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
