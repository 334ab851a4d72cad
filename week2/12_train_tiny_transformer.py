"""A tiny Transformer trained end to end: every Week 2 piece working together, in seconds.

Page: Week 2, sections 1 to 8, above all section 8 "The full Transformer data flow": source
tokens -> embeddings + position tags -> encoder -> memory; target shifted right ->
embeddings + position tags -> masked self-attention, cross-attention, FFN -> linear -> softmax.

    decoder input [<s>, y_1, ..., y_(T-1)], labels [y_1, ..., y_T]              section 1
    softmax(Q K^T / sqrt(d_k) + M) V, M = -inf above the diagonal              sections 2, 3
    PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i), w_i = 10000^(-2i/d)       section 5
    z = LN(x + Sublayer(x)) around every sublayer (post-LN)                     section 6
    q_i = (1 - eps)[i = y] + eps / V; lr(s) = c d^-0.5 min(s^-0.5, s w^-1.5)    section 7

The task: reverse a string of digits (2 7 1 8 -> 8 1 7 2), so target word t must read source
word L - 1 - t. Prints a training pair, the loss against its label-smoothing floor, exposure
bias, the held-out strings decoded, the output layer's softmax, one string decoded step by
step, what the decoder's own token embeddings and position tags do, strings one digit longer
than any trained, the cross-attention on the mirror, and what the causal mask changes; a
verdict on each claim; saves a figure.
Setup (the page trains nothing): one encoder and one decoder layer, d_model 32, 4 heads, Adam
for 400 steps of 128 fresh pairs of 1 to 6 digits. Training differs from CPU to CPU, so a run
prints bands, verdicts and what every run ends in (--table adds this run's numbers).
Notes: week2/NOTES.md, section 12.
"""
import copy
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import REPO_ROOT, run
from common.blocks import adam_state, adam_step, causal_mask, sinusoidal_pe
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.live import Blit, TrainingWindow, View, show
from common.printing import n_params
from common.progress import Progress
from common.records import check, said

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS = 0, 1, 2  # token ids of <pad>, <s> (the start symbol) and </s> (the end symbol)
TOKENS = ["<pad>", "<s>", "</s>"] + [str(digit) for digit in range(10)]  # a digit's token id is digit + 3
N_WORDS = len(TOKENS)  # the vocabulary size (the page's V): 13
MAX_LEN = 6  # digits per training string, at most
LONGER = MAX_LEN + 1  # digits of the longer held-out strings: a length no training string has
D_MODEL = 32  # d, the width of every token's vector
HEADS = 4  # h, so d_k = 8
D_FF = 128  # f, the feed-forward net's inner width
STEPS = 400  # training steps: every measured run has all held-out strings right by then
BATCH = 128  # fresh pairs a step
WARMUP = 30  # w, the warm-up steps of the schedule
LR_SCALE = 0.5  # c, the schedule's scale (the paper: 1): see the notes on loss jumps
EPSILON = 0.1  # label smoothing
BETAS, ADAM_EPS = (0.9, 0.9999), 1e-6  # Adam's: a long memory of g^2 (see the notes)


def row_width(n_digits):
    """Tokens in a row holding strings of up to n_digits: the digits, </s>, and one column that
    is always <pad> (the masks hide it). The spare column buys speed only: with rows of 8 tokens
    torch's small products and softmaxes stay on their fast paths (on AVX2, rows of 7 took 4 to
    6 times as long a call)."""
    return n_digits + 2


T = row_width(MAX_LEN)  # tokens per training row: 8
PE = sinusoidal_pe(row_width(LONGER), D_MODEL)  # [9, d]: the position tags (section 5), up to the longer rows


def shift_right(target):
    """[y_1, ..., y_T] -> [<s>, y_1, ..., y_(T-1)]: what the decoder reads (section 1).
    y_T is </s>; in a short string's row the </s> moves into a padded slot: pad it too."""
    shifted = torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)
    return shifted.masked_fill(shifted == EOS, PAD)


def padding_mask(tokens):
    """[B, 1, 1, T]: -inf on <pad> keys, so no query ever looks at padding."""
    return torch.zeros(tokens.shape).masked_fill(tokens == PAD, -math.inf)[:, None, None, :]


def attention(x_q, x_kv, W, mask):
    """Multi-head attention: softmax(Q K^T / sqrt(d_k) + mask) V, heads joined by W_O.
    x_q [B, T_q, d] asks, x_kv [B, T_k, d] answers; returns [B, T_q, d] and alpha [B, h, T_q, T_k]."""
    B, T_q, T_k, d_k = len(x_q), x_q.shape[1], x_kv.shape[1], D_MODEL // HEADS
    Q = W["W_Q"](x_q).view(B, T_q, HEADS, d_k).transpose(1, 2)  # [B, h, T_q, d_k]
    K = W["W_K"](x_kv).view(B, T_k, HEADS, d_k).transpose(1, 2)  # [B, h, T_k, d_k]
    V = W["W_V"](x_kv).view(B, T_k, HEADS, d_k).transpose(1, 2)  # [B, h, T_k, d_k]
    scores_T = K @ Q.transpose(-1, -2) / math.sqrt(d_k) + mask.transpose(-1, -2)  # [B, h, T_k, T_q]: (Q K^T)^T
    alpha = softmax_over_keys(scores_T)  # [B, h, T_q, T_k]: each row sums to 1
    heads = (alpha @ V).transpose(1, 2).reshape(B, T_q, D_MODEL)  # [B, T_q, d]: heads side by side
    return W["W_O"](heads), alpha


def softmax_over_keys(scores_T):
    """alpha = softmax of the scores over the keys, given the scores transposed (keys down,
    [..., T_k, T_q]); returns [..., T_q, T_k]. Speed only: torch's softmax along rows of 8
    numbers leaves its vectorised path on AVX-512 CPUs, down the columns it stays on it."""
    return torch.softmax(scores_T, dim=-2).transpose(-1, -2)


def embed(model, tokens):
    """Token embedding times sqrt(d_model), plus the position tag PE(p) (section 5)."""
    return model["embed"](tokens) * math.sqrt(D_MODEL) + PE[: tokens.shape[1]]


def encoder_layer(layer, x, src_mask):
    """Self-attention and feed-forward, each wrapped as z = LN(x + Sublayer(x)) (post-LN)."""
    x = layer["ln1"](x + attention(x, x, layer["self_attn"], src_mask)[0])
    return layer["ln2"](x + layer["ffn"](x))


def decoder_layer(layer, x, memory, self_mask, src_mask):
    """Masked self-attention, cross-attention to the memory, feed-forward, each post-LN.
    Returns [B, T, d] and the cross-attention weights [B, h, T, S]."""
    x = layer["ln1"](x + attention(x, x, layer["self_attn"], self_mask)[0])
    # cross-attention: queries from the decoder, keys and values from the encoder (section 3);
    # no causal mask over the source, only its padding is hidden
    reading, alpha = attention(x, memory, layer["cross_attn"], src_mask)
    x = layer["ln2"](x + reading)
    return layer["ln3"](x + layer["ffn"](x)), alpha


def encode(model, src):
    """Section 8, steps 1 and 2: embed the source, one encoder layer. Returns the memory [B, S, d]."""
    src_mask = padding_mask(src)
    return encoder_layer(model["encoder"], embed(model, src), src_mask), src_mask


def decode(model, memory, src_mask, dec_in, causal=True, without=None):
    """Section 8, steps 3 to 5: the decoder's input embedded, one decoder layer, then the output
    layer. Returns the scores [B, T, V] (a softmax makes them next-word probabilities) and the
    cross-attention [B, h, T, S]. without: see decoder_input()."""
    x, alpha = decoder_states(model, memory, src_mask, dec_in, causal, without)  # [B, T, d]
    return model["out"](x), alpha  # [B, T, V]: one score per token (section 4)


def decoder_states(model, memory, src_mask, dec_in, causal=True, without=None):
    """The decoder's output vectors [B, T, d], and the cross-attention [B, h, T, S]."""
    self_mask = padding_mask(dec_in)  # [B, 1, 1, T]
    if causal:
        T_in = dec_in.shape[1]  # [B, 1, T, T]: the future hidden
        self_mask = self_mask + torch.zeros(T_in, T_in).masked_fill(causal_mask(T_in), -math.inf)
    return decoder_layer(model["decoder"], decoder_input(model, dec_in, without), memory, self_mask, src_mask)


def decoder_input(model, dec_in, without=None):
    """Section 8, step 3: the decoder's own token embeddings plus position tags, [B, T, d] (the
    embedding table is the encoder's too: one vocabulary). without="position tags" leaves the
    tags out; without="token embeddings" gives every token one vector, the average embedding."""
    if without is None:
        return embed(model, dec_in)
    if without == "position tags":
        return model["embed"](dec_in) * math.sqrt(D_MODEL)
    average = model["embed"].weight.mean(0) * math.sqrt(D_MODEL)  # [d]: one vector for every token
    return average.expand(*dec_in.shape, D_MODEL) + PE[: dec_in.shape[1]]


def attention_block():
    return nn.ModuleDict({name: nn.Linear(D_MODEL, D_MODEL) for name in ("W_Q", "W_K", "W_V", "W_O")})


def feed_forward():
    return nn.Sequential(nn.Linear(D_MODEL, D_FF), nn.ReLU(), nn.Linear(D_FF, D_MODEL))


def build_model(seed):
    """The weights: matrices xavier-uniform (as The Annotated Transformer), from the seed."""
    torch.manual_seed(seed)
    model = nn.ModuleDict({
        "embed": nn.Embedding(N_WORDS, D_MODEL),  # shared by source and target (one vocabulary)
        "encoder": nn.ModuleDict({"self_attn": attention_block(), "ln1": nn.LayerNorm(D_MODEL),
                                  "ffn": feed_forward(), "ln2": nn.LayerNorm(D_MODEL)}),
        "decoder": nn.ModuleDict({"self_attn": attention_block(), "ln1": nn.LayerNorm(D_MODEL),
                                  "cross_attn": attention_block(), "ln2": nn.LayerNorm(D_MODEL),
                                  "ffn": feed_forward(), "ln3": nn.LayerNorm(D_MODEL)}),
        "out": nn.Linear(D_MODEL, N_WORDS),  # [d] -> [V]: one score per token (section 4)
    })
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


# ---------------------------------------------------------------- training (section 7)

def smoothed_target(labels, epsilon=EPSILON):
    """[..., V]: q_i = (1 - eps) [i = y] + eps / V, the uniform-mixture rule (section 7)."""
    return (1 - epsilon) * F.one_hot(labels, N_WORDS) + epsilon / N_WORDS


def smoothed_loss(logits, labels, epsilon=EPSILON):
    """-sum_i q_i log softmax(z)_i, averaged over the real (non-pad) label positions."""
    per_position = -(smoothed_target(labels, epsilon) * torch.log_softmax(logits, dim=-1)).sum(-1)
    return per_position[labels != PAD].mean()


def loss_floor(epsilon=EPSILON):
    """The smallest possible smoothed loss: the entropy of q, reached when p = q exactly."""
    gold, other = 1 - epsilon + epsilon / N_WORDS, epsilon / N_WORDS
    return -(gold * math.log(gold) + (N_WORDS - 1) * other * math.log(other))


def learning_rate(step, d_model=D_MODEL, warmup=WARMUP, scale=LR_SCALE):
    """lr(s) = c d^-0.5 min(s^-0.5, s w^-1.5): linear ramp to step w, then 1/sqrt(s)."""
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def train(seed, sources, targets, causal, held, window=None):
    """Train from scratch, one batch of pairs a step (sources, targets [steps, BATCH, T]),
    teacher-forced. Returns the model, the loss of every step, and the held-out evaluation
    at step EARLY, while it is still learning (exposure bias, section 1). window: a
    TrainingWindow that follows the training (--live)."""
    model = build_model(seed)
    w, g = as_one_vector(model)
    state = adam_state([w])
    losses, early = [], None
    with Progress("training step", len(sources)) as progress:
        for step, (src, tgt) in enumerate(zip(sources, targets, strict=True), start=1):  # [B, T] each
            memory, src_mask = encode(model, src)
            logits, _ = decode(model, memory, src_mask, shift_right(tgt), causal)  # teacher forcing
            loss = smoothed_loss(logits, tgt)
            g.zero_()
            loss.backward()
            adam_step([w], [g], state, step, learning_rate(step), BETAS, ADAM_EPS)
            losses.append(loss.item())
            if step == EARLY:
                early = evaluate(model, *held, causal)
            progress.update(step)
            if window:
                window.watch(step, losses, model, last=step == len(sources))
    return model, losses, early


def as_one_vector(model):
    """All the model's weights as one vector w, their gradients as one vector g: each parameter
    becomes a view into w, its .grad a view into g (backward() adds into g). Speed only: Adam
    treats every weight on its own, so one update of all 30,541 weights does the work of 38."""
    params = list(model.parameters())
    w = torch.cat([p.detach().reshape(-1) for p in params])
    g = torch.zeros_like(w)
    start = 0
    for p in params:
        end = start + p.numel()
        p.data, p.grad = w[start:end].view_as(p), g[start:end].view_as(p)
        start = end
    return w, g


# ---------------------------------------------------------------- generation and evaluation (section 8)

@torch.inference_mode()
def generate(model, src, causal=True, without=None):
    """Greedy decoding (section 8): start from <s>, append the most likely next token (a
    digit or </s>: <pad> and <s> are never written), run the decoder again on the longer
    input, until every row has written </s> (or as many tokens as a string of its row holds).
    Returns the tokens written [B, n] and the scores each step chose from [B, n, V]."""
    memory, src_mask = encode(model, src)
    written = torch.full((len(src), 1), BOS)
    step_scores = []
    for _ in range(src.shape[1] - 1):
        scores = decode(model, memory, src_mask, written, causal, without)[0][:, -1]  # [B, V]: the last position
        step_scores.append(scores)
        written = torch.cat([written, scores[:, EOS:].argmax(-1, keepdim=True) + EOS], dim=1)
        if (written == EOS).any(dim=1).all():
            break
    return written[:, 1:], torch.stack(step_scores, dim=1)


@torch.inference_mode()
def prefix_by_prefix(model, src, dec_in, causal=True):
    """Scores [B, T, V] computed the way the generation loop does: position t from a run of
    the decoder on the first t + 1 inputs only (the later ones do not exist yet)."""
    memory, src_mask = encode(model, src)
    return torch.stack([decode(model, memory, src_mask, dec_in[:, : t + 1], causal)[0][:, -1]
                        for t in range(dec_in.shape[1])], dim=1)


def written_right(model, src, tgt, causal=True, without=None):
    """How many of the strings the model writes exactly right on its own (greedy decoding)."""
    written = cut_after_eos(generate(model, src, causal, without)[0], tgt.shape[1])
    return int((written == tgt).all(dim=1).sum())


def cut_after_eos(tokens, width):
    """Keep each row up to its first </s>, pad the rest: [B, n] -> [B, width]."""
    after = (tokens == EOS).int().cumsum(1) - (tokens == EOS).int() > 0
    tokens = tokens.masked_fill(after, PAD)
    return torch.cat([tokens, torch.full((len(tokens), width), PAD)], dim=1)[:, :width]


@torch.inference_mode()
def evaluate(model, src, tgt, causal=True):
    """The held-out strings with the gold prefix (teacher forced) and with the model's own
    earlier guesses (free running): the share of right tokens each way, the strings decoded
    exactly, the strings right at every position with the gold prefix, and how many of those
    it also writes right on its own."""
    real = tgt != PAD
    logits, _ = decode(model, *encode(model, src), shift_right(tgt), causal)
    forced_right = (logits.argmax(-1) == tgt) & real  # [N, T]
    written = cut_after_eos(generate(model, src, causal)[0], tgt.shape[1])
    free_right = (written == tgt) & real
    exact = (written == tgt).all(dim=1)  # every token right, and nothing after </s>
    forced_exact = (forced_right == real).all(dim=1)
    return {"forced": forced_right.sum().item() / real.sum().item(),
            "free": free_right.sum().item() / real.sum().item(), "exact": int(exact.sum()),
            "forced_exact": int(forced_exact.sum()), "both_exact": int((forced_exact & exact).sum())}


def mirror(length, task):
    """The source position target row t must read: L - 1 - t (reverse) or t (copy)."""
    rows = torch.arange(length)
    return length - 1 - rows if task == "reverse" else rows


@torch.inference_mode()
def cross_attention_maps(model, src, tgt, causal=True):
    """Head-averaged cross-attention of the teacher-forced pass, [N, T, S]."""
    return decode(model, *encode(model, src), shift_right(tgt), causal)[1].mean(dim=1)


def share_on_mirror(maps, lengths, task):
    """The share of held-out rows t (one per digit written) whose largest cross-attention
    weight is on the source position the task says (maps [N, T, S], lengths [N])."""
    right = sum(int((maps[k, :L].argmax(-1) == mirror(L, task)).sum()) for k, L in enumerate(lengths.tolist()))
    return right / int(lengths.sum())


@torch.inference_mode()
def moved_by_a_later_input(model, src, dec_in, causal=True):
    """The most any position's scores move when one later input is changed (input k, a digit,
    to the next digit; the positions before k compared), for k = 1..T-1 in turn: with the
    mask 0, as position t cannot see input t + 1; without it, position k - 1 sees its own
    label (the decoder's input k is label k - 1: section 1's shift)."""
    memory, src_mask = encode(model, src)
    before = decode(model, memory, src_mask, dec_in, causal)[0]  # [N, T, V]
    most = 0.0
    for k in range(1, dec_in.shape[1]):
        digit = dec_in[:, k] > EOS  # [N]: rows whose input k is a digit
        if not digit.any():
            continue
        changed = dec_in.clone()
        changed[:, k] = torch.where(digit, (dec_in[:, k] - 3 + 1) % 10 + 3, dec_in[:, k])
        after = decode(model, memory, src_mask, changed, causal)[0]
        most = max(most, (after - before)[digit, :k].abs().max().item())
    return most


@torch.inference_mode()
def attention_against_torch(model, src, tgt, causal=True):
    """The largest difference between attention() and torch's nn.MultiheadAttention given the
    same weights, over the model's three attention blocks on these pairs (their outputs and
    every head's weights). In float64, so that only a wrong formula makes it more than rounding."""
    model = copy.deepcopy(model).double()
    dec_in = shift_right(tgt)
    memory, src_mask = encode(model, src)  # [N, S, d]
    x_src, x_dec = embed(model, src), embed(model, dec_in)  # [N, S, d], [N, T, d]
    self_mask = padding_mask(dec_in) + (torch.zeros(T, T).masked_fill(causal_mask(T), -math.inf) if causal else 0)
    future = causal_mask(T) if causal else torch.zeros(T, T, dtype=torch.bool)
    blocks = [(model["encoder"]["self_attn"], x_src, x_src, src_mask, src == PAD, False),  # (torch's masks: True =
              (model["decoder"]["self_attn"], x_dec, x_dec, self_mask, dec_in == PAD, future),  # hidden)
              (model["decoder"]["cross_attn"], x_dec, memory, src_mask, src == PAD, False)]
    worst = 0.0
    for W, x_q, x_kv, mask, padded, hidden in blocks:
        mine, alpha = attention(x_q, x_kv, W, mask)
        theirs = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True, dtype=torch.float64)
        theirs.in_proj_weight.copy_(torch.cat([W[name].weight for name in ("W_Q", "W_K", "W_V")]))
        theirs.in_proj_bias.copy_(torch.cat([W[name].bias for name in ("W_Q", "W_K", "W_V")]))
        theirs.out_proj.load_state_dict(W["W_O"].state_dict())
        # padding and the future as one attn_mask [N h, T_q, T_k] (with key_padding_mask= torch checks
        # its shape through torch.fx, imported on first use: half a second)
        hidden = (padded[:, None, None, :] | hidden).expand(-1, HEADS, x_q.shape[1], -1).flatten(0, 1)
        out, weights = theirs(x_q, x_kv, x_kv, attn_mask=hidden, average_attn_weights=False)  # [N, T_q, d],
        worst = max(worst, (mine - out).abs().max().item(), (alpha - weights).abs().max().item())  # [N, h, T_q, T_k]
    return worst


# ---------------------------------------------------------------- the data: strings of digits

HELD_OUT = 200  # held-out strings, never in any training batch
HELD_OUT_SEED = 12345  # their own generator, the same for every --seed and --steps
LONGER_SEED = 54321  # the generator of the strings of LONGER digits
MAX_STEPS = 2000  # the most --steps allows: no held-out string occurs in that many steps' pairs


def draw_strings(rng, n):
    """n strings of digits: their lengths L [n, 1], uniform in 1..MAX_LEN, and MAX_LEN digits
    each [n, MAX_LEN], uniform in 0..9, of which the first L are used."""
    return rng.integers(1, MAX_LEN + 1, size=(n, 1)), rng.integers(0, 10, size=(n, MAX_LEN))


def make_pairs(lengths, digits, task, width=T):
    """(source, target) token ids of drawn strings, each [n, width]: source x_1..x_L </s> <pad>...,
    target the same digits reversed (or copied), then </s> <pad>..."""
    tokens = np.full((len(digits), width), PAD)
    tokens[:, : digits.shape[1]] = digits + 3  # [n, width]: token ids
    pos = np.arange(width)  # position in the string, 0-based
    # target position t holds source digit L - 1 - t (reverse) or t (copy)
    read_from = np.clip(lengths - 1 - pos, 0, width - 1) if task == "reverse" else np.broadcast_to(pos, tokens.shape)
    target = np.take_along_axis(tokens, read_from, axis=1)

    def finish(row_digits):
        return np.where(pos < lengths, row_digits, np.where(pos == lengths, EOS, PAD))

    return finish(tokens), finish(target)


def string_keys(lengths, digits):
    """One integer per string, to compare strings fast: its digits read in base 11 (a digit d
    as d + 1, the places after its end as 0)."""
    present = np.arange(digits.shape[1]) < lengths  # [n, n_digits]
    return np.where(present, digits + 1, 0) @ (11 ** np.arange(digits.shape[1]))


def training_and_held_out(seed, steps, task):
    """The training stream, one fresh batch per step ([steps, BATCH, T] x 2; --steps 100 is
    the first 100 batches of the default run), and the held-out pairs ([HELD_OUT, T] x 2):
    the first HELD_OUT strings from their own generator that never occur in the longest
    stream --steps allows (MAX_STEPS batches), so they are the same whatever --steps is."""
    rng = np.random.default_rng(seed)
    drawn = [draw_strings(rng, BATCH) for _ in range(MAX_STEPS)]  # batch by batch, as training reads them
    lengths, digits = (np.concatenate(part) for part in zip(*drawn, strict=True))  # [MAX_STEPS * BATCH, ...]
    src, tgt = make_pairs(lengths[: steps * BATCH], digits[: steps * BATCH], task)
    candidates = draw_strings(np.random.default_rng(HELD_OUT_SEED), 20 * HELD_OUT)
    unseen = ~np.isin(string_keys(*candidates), string_keys(lengths, digits), kind="table")
    held = [torch.from_numpy(a[unseen][:HELD_OUT]) for a in make_pairs(*candidates, task)]
    return (*(torch.from_numpy(a).view(steps, BATCH, T) for a in (src, tgt)), held)


def longer_strings(task):
    """HELD_OUT strings of LONGER digits, none of them in training (no training string is that
    long), as (source, target) [HELD_OUT, row_width(LONGER)] x 2, from their own generator."""
    digits = np.random.default_rng(LONGER_SEED).integers(0, 10, size=(HELD_OUT, LONGER))
    return [torch.from_numpy(a) for a in make_pairs(np.full((HELD_OUT, 1), LONGER), digits, task, row_width(LONGER))]


def words(tokens):
    """Token ids -> '8 1 7 2 </s>' (padding left out)."""
    return " ".join(TOKENS[t] for t in tokens.tolist() if t != PAD)


# ---------------------------------------------------------------- the lesson, in the page's order

EARLY = 50  # the step at which exposure bias is measured, while the model is still learning
# Bands for numbers that differ a little from CPU to CPU: a run prints the band each is in;
# every measured run sits well inside its band (the ranges: week2/NOTES.md, section 12)
LOSS_EDGES, GAP_EDGES = (0.4, 1.0, 1.2), (5, 30)
FALLEN = 1.2  # the mean loss of steps 81-100 has fallen below this
NEAR_FLOOR = 0.01  # the mean loss of the last 20 steps is this close to the floor
WORSE = 0.05  # exposure bias: free running at least this share of the tokens (5 points) worse
ON_MIRROR = 0.8  # this share of the held-out rows, at least, has its largest weight on the mirror
SAME = 1e-3  # position t's scores prefix by prefix and in one pass agree to this; so do scores that do not move
AGREE = 1e-6  # attention by hand and torch's agree to this (float64 rounding is about 1e-16)
ONE = 1e-6  # every softmax row sums to 1 to this (float32 rounding of 13 numbers is about 1e-7)
LEARNED = 0.9  # a model that writes at least this share of the held-out strings right has learned the task
FEW = 0.5  # taking a piece away, or strings one digit longer: fewer than this share right is a failure


def lesson(args):
    """The task and the model; the training (section 7) and exposure bias (section 1); the
    held-out strings decoded (section 8), the output layer (section 4), the decoder's own
    inputs (section 8) and longer strings (section 5); the cross-attention (section 3); the
    mask (section 2)."""
    torch.set_num_threads(1)  # tiny matrices: a second thread only waits (and the check runs two scripts at once)
    task, causal, steps = args.task, not args.no_mask, args.steps
    sources, targets, (held_src, held_tgt) = training_and_held_out(args.seed, steps, task)
    show_task(task, sources[0], targets[0])
    show_setup(args.seed, steps, causal)
    window = TrainingWindow(live_training, steps, held_src, held_tgt, causal) if args.live else None
    model, losses, early = train(args.seed, sources, targets, causal, (held_src, held_tgt), window)
    final = evaluate(model, held_src, held_tgt, causal)
    show_loss(losses, args.table)
    show_exposure(early, args.table)
    show_trained(final, steps)
    show_output_layer(model, held_src, held_tgt, causal)
    example = show_decoded(model, held_src, causal)
    show_decoder_inputs(model, final, held_src, held_tgt, causal, args.table)
    show_longer(model, final, task, causal, args.table)
    maps, mean_map, full = show_cross_attention(model, final, held_src, held_tgt, task, causal, args.table)
    show_mask(model, final, held_src, held_tgt, causal, args.table)
    n = MAX_LEN + 1  # the figure's rows and columns: the digits and </s>
    figure_data = (maps[example, :n, :n].numpy(), mean_map.numpy(), held_src[example], held_tgt[example],
                   int(full.sum()), task)
    print(save_figure(plot(*figure_data), figure_path(args, FIGURE)))
    if args.live:
        show(lambda: View(plot(*figure_data)))  # the figure a default run saves (closing it closes both)


def show_task(task, sources, targets):
    """The task, the vocabulary, and one training pair as the decoder sees it (section 1)."""
    long_enough = (sources > EOS).sum(1) >= 4
    src0, tgt0 = sources[long_enough][0], targets[long_enough][0]  # the first pair of 4 digits or more
    print(f"task: {task} strings of 1 to {MAX_LEN} digits, e.g. {words(src0[src0 > EOS])} -> "
          f"{words(tgt0[tgt0 > EOS])}")
    print(f"vocabulary: V={N_WORDS} tokens: <pad> <s> </s> and the digits 0..9")
    print("one training pair, as the decoder sees it (section 1, teacher forcing):")
    print(f"  source (encoder input):  {words(src0)}")
    print(f"  decoder input (shifted): {words(shift_right(tgt0[None])[0])}")
    print(f"  labels:                  {words(tgt0)}")


def show_setup(seed, steps, causal):
    """The model, the schedule, and label smoothing's floor (section 7)."""
    print(f"model: d_model={D_MODEL}, h={HEADS} heads, d_ff={D_FF}, 1 encoder layer + 1 decoder layer, post-LN;\n"
          f"  {n_params(build_model(seed)):,} parameters")
    print(f"training: {steps} steps of {BATCH} fresh pairs, Adam,\n"
          f"  lr = {LR_SCALE} * d^-0.5 * min(s^-0.5, s * w^-1.5) with w={WARMUP} (peak {learning_rate(WARMUP):.4f} "
          f"at step {WARMUP})")
    print(f"  (d = d_model = {D_MODEL}, s = the step, w = the warm-up steps: week2/06's schedule)")
    q = smoothed_target(torch.tensor(EOS))
    print(f"label smoothing eps={EPSILON} (section 7): the target q is {q[EOS]:.4f} for the right token\n"
          f"  and {q[PAD]:.4f} for each of the other {N_WORDS - 1},")
    print("  not 1 and 0. The loss -sum_i q_i log p_i is smallest when the model's probabilities p equal q, and")
    print(f"  that smallest value, -sum_i q_i log q_i (the entropy of q), is {loss_floor():.4f}: the floor. Even a "
          "perfect")
    print("  model scores that much, never less.")
    print(f"held-out: {HELD_OUT} strings that never occur in training, for any --steps (so mostly long ones)")
    print(f"causal mask: {'on' if causal else 'OFF (--no-mask): every position also sees the inputs after it'}")


def show_loss(losses, table):
    """The training loss: has it fallen by step 100, and does it end on the floor?"""
    print("\ntraining loss (label-smoothed, teacher forced):")
    print(f"  step 1, before any update: {losses[0]:.2f} (a uniform guess over the {N_WORDS} tokens would score "
          f"ln {N_WORDS} = {math.log(N_WORDS):.2f}"
          + (";\n    random starting weights guess unevenly, and mostly wrong)"
             if losses[0] > math.log(N_WORDS) else ")"))
    for name, line, holds, value, threshold in loss_checks(losses, loss_floor()):
        check(name, line, holds, value=value, threshold=threshold)
    if table:
        late = f", of steps {len(losses) - 19}-{len(losses)} {np.mean(losses[-20:]):.4f}"
        print(f"  exact: step 1 {losses[0]:.4f}" + (f", mean of steps 81-100 {np.mean(losses[80:100]):.4f}"
                                                   if len(losses) >= 100 else "") + late)


def loss_checks(losses, floor):
    """The checks on the training loss, each (name, line, holds, value, threshold): has it
    fallen by step 100, and does it end on the floor?"""
    checks = []
    if len(losses) >= 100:
        early = float(np.mean(losses[80:100]))
        checks.append(("training loss fallen by step 100", f"  mean of steps 81-100: {band(early, LOSS_EDGES)}; "
                       f"fallen below {FALLEN:.2f} by then: {yes(early < FALLEN)}", early < FALLEN, early,
                       f"mean of steps 81-100 below {FALLEN:.2f}; bands at {', '.join(map(str, LOSS_EDGES))}"))
    end = float(np.mean(losses[-20:]))
    near = abs(end - floor) < NEAR_FLOOR
    checks.append(("training loss ends at the floor", f"  mean of steps {len(losses) - 19}-{len(losses)}: {end:.2f}; "
                   f"at the floor {floor:.4f}, to within {NEAR_FLOOR:g}: {yes(near)}", near, end,
                   f"mean of the last 20 steps within {NEAR_FLOOR:g} of the floor {floor:.4f}"))
    return checks


def show_exposure(early, table):
    """Exposure bias (section 1), from the held-out evaluation at step EARLY."""
    print(f"\nexposure bias (section 1), measured at step {EARLY} while the model is still learning: right tokens")
    print("  on the held-out strings when it is fed the gold prefix (teacher forcing) and when it is fed its")
    print("  own earlier guesses (free running, as in real use)")
    line, worse, gap = exposure_check(early)
    check(f"exposure bias at step {EARLY}", line, worse, value=gap,
          threshold=f"free running at least {100 * WORSE:g} points worse; bands at {GAP_EDGES[0]}, {GAP_EDGES[1]}")
    print("  (one wrong guess becomes a wrong input for every later step)")
    if table:
        print(f"  exact: {early['forced']:.1%} with the gold prefix, {early['free']:.1%} with its own guesses")


def exposure_check(early):
    """The check on exposure bias: (line, holds, gap in points)."""
    gap = early["forced"] - early["free"]
    worse = gap >= WORSE
    return (f"  free running {band(100 * gap, GAP_EDGES)} points worse; at least {100 * WORSE:g} points worse: "
            f"{yes(worse)}", worse, 100 * gap)


def show_trained(final, steps):
    print(f"\nafter {steps} steps:")
    check("held-out strings decoded exactly", f"held-out sequences decoded exactly: {final['exact']}/{HELD_OUT}",
          final["exact"] == HELD_OUT, value=final["exact"], threshold=f"all {HELD_OUT}")


def show_output_layer(model, held_src, held_tgt, causal):
    """Section 4 and section 8, step 5: a linear layer to [B, T, V], then a softmax."""
    print("\nthe output layer (section 4; section 8, step 5), on the held-out strings with the gold prefix:")
    with torch.inference_mode():
        x = decoder_states(model, *encode(model, held_src), shift_right(held_tgt), causal)[0]  # [B, T, d]
        scores = model["out"](x)  # [B, T, V]
        p = next_word_probabilities(scores)  # [B, T, V]
    print(f"  decoder output [B, T, d] = {list(x.shape)} -> a linear layer -> scores [B, T, V] = {list(scores.shape)}")
    gap = (p.double().sum(-1) - 1).abs().max().item()  # (added up in float64: only the softmax's rounding left)
    check("every softmax row sums to 1", f"  softmax of each position's {scores.shape[-1]} scores: probabilities; "
          f"every row sums to 1 (to {ONE:g}): {yes(gap <= ONE)}", gap <= ONE, value=gap,
          threshold=f"every row within {ONE:g} of 1")


def next_word_probabilities(scores):
    """softmax over the V scores of each position (section 8, step 5): [B, T, V]."""
    return torch.softmax(scores, dim=-1)


def show_decoded(model, held_src, causal):
    """One held-out string decoded step by step (section 8). Returns its index."""
    example = int(((held_src > EOS).sum(1) == MAX_LEN).nonzero()[0, 0])  # the first of full length
    written, _ = generate(model, held_src[example:example + 1], causal)
    print(f"\none held-out string, decoded step by step (section 8): source {words(held_src[example])}")
    for t in range(written.shape[1]):
        so_far = words(torch.cat([torch.tensor([BOS]), written[0, :t]]))
        print(f"  step {t + 1}: input so far {so_far:<16} -> next {TOKENS[written[0, t]]}")
        if written[0, t] == EOS:
            break
    return example


def show_decoder_inputs(model, final, held_src, held_tgt, causal, table):
    """Section 8's Mistakes: the decoder gets position tags too, and has token embeddings. Each
    taken away from the trained model's decoder, the held-out strings are written again."""
    print("\nthe decoder's own inputs (section 8, step 3): it embeds its input tokens and adds position tags,")
    print("as the encoder does. Taken away from the trained decoder, held-out strings written right:")
    without = {piece: written_right(model, held_src, held_tgt, causal, without=piece)
               for piece in ("position tags", "token embeddings")}
    print(f"  as trained: {final['exact']}/{HELD_OUT}")
    print(f"  without the decoder's position tags: {share_band(without['position tags'])}")
    print(f"  every decoder token embedding replaced by one vector (their average): "
          f"{share_band(without['token embeddings'])}")
    if table:
        print(f"  exact: {without['position tags']}/{HELD_OUT} and {without['token embeddings']}/{HELD_OUT}")
    holds, saying = inputs_verdict(final["exact"], without)
    check("the decoder uses its own position tags and token embeddings", f"Verdict: {saying}", holds,
          value=f"as trained {final['exact']}, without tags {without['position tags']}, without token embeddings "
          f"{without['token embeddings']}", threshold=f"as trained at least {LEARNED:.0%} right; without either, "
          f"fewer than {FEW:.0%}")


def inputs_verdict(trained, without):
    """(holds, words): does the trained decoder need its own position tags and token embeddings?
    trained: held-out strings right as trained; without: {piece: right without it}."""
    if trained < LEARNED * HELD_OUT:
        return None, f"not tested: the model writes only {trained} of the {HELD_OUT} strings right as trained"
    lost = [piece for piece, right in without.items() if right < FEW * HELD_OUT]
    if len(lost) == len(without):
        return True, (f"{said(True)}: the decoder has its own position tags and token embeddings, and without\n"
                      f"  either it writes fewer than {FEW:.0%} of the strings right")
    kept = " and ".join(piece for piece in without if piece not in lost)
    return False, f"{said(False)}: the decoder writes {FEW:.0%} or more of the strings right without its {kept}"


def show_longer(model, final, task, causal, table):
    """Section 5's Mistakes: tags exist for unseen positions; whether the model uses them well is empirical."""
    src, tgt = longer_strings(task)
    longer = written_right(model, src, tgt, causal)
    print("\npositions beyond training (section 5): PE(p) can be computed for any position p; does the model")
    print(f"use the tags well there? Trained on 1 to {MAX_LEN} digits, target position {MAX_LEN} (from 0) only ever "
          f"wrote </s>\nand position {MAX_LEN + 1} never wrote anything.")
    print(f"  held-out strings of 1 to {MAX_LEN} digits written right: {final['exact']}/{HELD_OUT}")
    print(f"  {HELD_OUT} strings of {LONGER} digits (rows of {src.shape[1]} tokens), written right: "
          f"{share_band(longer)}")
    if table:
        print(f"  exact: {longer}/{HELD_OUT}")
    holds, saying = longer_verdict(final["exact"], longer)
    check("strings longer than any trained", f"Verdict: {saying}", holds,
          value=f"trained lengths {final['exact']}, {LONGER} digits {longer}",
          threshold=f"trained lengths at least {LEARNED:.0%} right, {LONGER} digits fewer than {FEW:.0%}")


def longer_verdict(trained, longer):
    """(holds, words): the page's "whether the model uses them well is empirical", measured."""
    if trained < LEARNED * HELD_OUT:
        return None, f"not tested: the model writes only {trained} of the {HELD_OUT} strings of trained lengths right"
    if longer >= FEW * HELD_OUT:
        return None, (f"not tested: this model wrote {FEW:.0%} or more of the {LONGER}-digit strings right, so it "
                      "shows no failure\n  (the page: whether it does is empirical)")
    return True, (f"{said(True)}: the tags exist for the unseen positions, yet fewer than {FEW:.0%} of the\n"
                  f"  {LONGER}-digit strings come out right: extrapolation is not guaranteed, it is measured")


def show_cross_attention(model, final, held_src, held_tgt, task, causal, table):
    """Where the decoder reads (section 3): each row on its mirror, and attention() against torch's.
    Returns the maps [N, T, S], their average over the full-length strings [n, n], and which those are."""
    print(f"\ncross-attention (section 3), averaged over the {HEADS} heads, with the gold prefix (as in training):")
    maps = cross_attention_maps(model, held_src, held_tgt, causal)  # [N, T, S]
    lengths = (held_src > EOS).sum(1)
    share = share_on_mirror(maps, lengths, task)
    what = "mirror L-1-t" if task == "reverse" else "same position t"
    if task == "reverse":
        print("  (row t writes the digit read at source position L-1-t, its mirror; L = the string's length)")
    check(f"held-out rows whose largest cross-attention weight is on the {what}",
          f"  held-out rows whose largest weight is on the {what}: at least {ON_MIRROR:.0%}: {yes(share >= ON_MIRROR)}",
          share >= ON_MIRROR, value=share, threshold=f"at least {ON_MIRROR:.0%} of the rows")
    full = lengths == MAX_LEN
    n = MAX_LEN + 1
    mean_map = maps[full][:, :n, :n].mean(0)  # [n, n] over the full-length strings
    top2 = mean_map[:MAX_LEN].topk(2, dim=-1)
    peaks, lead = top2.indices[:, 0], (top2.values[:, 0] - top2.values[:, 1]).min().item()
    print(f"  averaged over the {int(full.sum())} held-out strings of length {MAX_LEN}, rows t = 0..{MAX_LEN - 1}\n"
          f"    look most at source positions {' '.join(map(str, peaks.tolist()))}")
    on_mirror = bool((peaks == mirror(MAX_LEN, task)).all())
    check(f"the averaged map: every row on the {what}", f"  every row on the {what}: {yes(on_mirror)}" + (
        "" if causal or not on_mirror else (f" (with the gold input in view, which also holds the answer: alone it "
                                            f"wrote {final['exact']}/{HELD_OUT} right)")),
          on_mirror, value=f"peaks {' '.join(map(str, peaks.tolist()))}, lead {lead:.3f}",
          threshold=f"each row's largest weight on the {what}")
    if table:
        print(f"  exact: {share:.1%} of the {int(lengths.sum()):,} rows; in the average, each row's largest weight "
              f"leads its second by {lead:.3f} or more")
    print("  the attention above, softmax(Q K^T / sqrt(d_k) + M) V by hand, against torch's")
    print("  nn.MultiheadAttention with the same weights: all three attention blocks on the held-out")
    print("  pairs, outputs and weights (float64):")
    gap = attention_against_torch(model, held_src, held_tgt, causal)
    check("attention by hand is torch's", f"max |by hand - torch|={gap:.8f}", gap <= AGREE, value=gap,
          threshold=f"at most {AGREE:g}")
    return maps, mean_map, full


def show_mask(model, final, held_src, held_tgt, causal, table):
    """The causal mask (section 2): what training teaches with the answer key in view, written alone."""
    print("\nthe causal mask (section 2): does what it learned with the answer key in view carry over to")
    print("writing on its own?")
    check("held-out strings right at every position with the gold prefix",
          f"  held-out strings right at every position with the gold prefix: {final['forced_exact']}/{HELD_OUT};\n"
          f"    of those, written right on its own: {final['both_exact']}/{final['forced_exact']}",
          final["forced_exact"] == HELD_OUT, value=f"{final['forced_exact']}; alone {final['both_exact']}",
          threshold=f"all {HELD_OUT} with the gold prefix")
    dec_in, real = shift_right(held_tgt), held_tgt != PAD
    with torch.inference_mode():
        at_once = decode(model, *encode(model, held_src), dec_in, causal)[0]  # [N, T, V]: training's way
    one_by_one = prefix_by_prefix(model, held_src, dec_in, causal)  # [N, T, V]: generation's way
    apart = (at_once - one_by_one)[real].abs().max().item()
    same = apart < SAME
    print("  position t's scores are the same whether the decoder reads the whole gold input at once (as in")
    check("position t's scores the same prefix by prefix as in one pass",
          f"  training) or only its first t + 1 words (as while generating), to {SAME:g}: {yes(same)}",
          same == causal, value=apart, threshold=f"the same to {SAME:g} with the mask, not without it")
    moved = {mask: moved_by_a_later_input(model, held_src, dec_in, mask) for mask in (True, False)}
    print("  why section 2 needs a mask: change one input word, a digit at input k; do the scores of the")
    check("a later input moves earlier positions only without the mask",
          f"  positions before k move (by {SAME:g} or more)? with the mask: {yes(moved[True] >= SAME)}; without it: "
          f"{yes(moved[False] >= SAME)}", moved[True] < SAME <= moved[False],
          value=f"with {moved[True]:.3g}, without {moved[False]:.3g}",
          threshold=f"with the mask below {SAME:g}, without it {SAME:g} or more")
    print("  (without the mask, position k - 1 reads input k, its own label: the cheat that --no-mask learns)")
    if table:
        print(f"  exact: right tokens {final['forced']:.2%} with the gold prefix, {final['free']:.2%} on its own; "
              f"the scores differ by up to {apart:.2g}; a later input moves them by {moved[True]:.2g} with the mask, "
              f"{moved[False]:.2g} without")
    holds, saying = mask_verdict(causal, final, same)
    check("the causal mask: training teaches what generation needs", f"Verdict: {saying}", holds,
          value=f"{final['forced_exact']} right with the gold prefix, {final['both_exact']} of them alone",
          threshold=f"every string right with the gold prefix also right alone; at least {HELD_OUT // 2} of "
          f"{HELD_OUT} to judge")


def mask_verdict(causal, evaluation, same):
    """The verdict on the page's claim about the causal mask, (holds, words), from the held-out
    evaluation (evaluate()) and whether position t's scores are the same computed prefix by
    prefix as in one parallel pass (`same`). With the mask, a string right at every position
    with the gold prefix must also come out right when the model writes it alone: each step
    then sees the same prefix and computes the same scores. holds is None when too few
    strings are right even with the gold prefix to judge."""
    taught, lost = evaluation["forced_exact"], evaluation["forced_exact"] - evaluation["both_exact"]
    too_few = (None, f"not trained enough to judge: only {taught} of the {HELD_OUT} strings are right even with "
               "the gold prefix (try more --steps)")
    if causal:  # the page: hide the future and training computes exactly what generation will
        if not same:
            return False, f"{said(False)}: the mask did not hide the future"
        if lost:
            return False, (f"{said(False)}: {lost} of the {taught} strings right with the gold prefix came out "
                           "wrong when it wrote them alone, with the future hidden")
        if taught < HELD_OUT // 2:
            return too_few
        return True, f"{said(True)}: with the future hidden, training teaches what generation needs"
    # the page: without the mask, position t sees the word it must predict
    if taught < HELD_OUT // 2:
        return too_few
    if lost:
        return True, (f"{said(True)}: without the mask, position t read its answer from input t + 1, which does "
                      "not exist yet while generating")
    return False, f"{said(False)}: without the mask it still learned to write on its own"


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live window

def yes(flag):
    return "yes" if flag else "no"


def share_band(count):
    """A count of the HELD_OUT strings in words: fewer than FEW of them, or FEW or more."""
    return f"fewer than {FEW:.0%}" if count < FEW * HELD_OUT else f"{FEW:.0%} or more"


def band(value, edges):
    """Which band between `edges` (ascending) a value is in, e.g. '0.4 to 1.0'."""
    if value < edges[0]:
        return f"below {edges[0]}"
    if value >= edges[-1]:
        return f"{edges[-1]} or more"
    i = int(np.searchsorted(edges, value, side="right"))
    return f"{edges[i - 1]} to {edges[i]}"


DESCRIPTION = ("Train a tiny encoder-decoder Transformer on the CPU: teacher forcing, masks, cross-attention, "
               "positions, post-LN, label smoothing, warm-up, Adam, greedy decoding (Week 2, all sections).\n"
               "Training runs a little differently on each CPU, so a default run prints verdicts, bands and what "
               "every run ends in; --table adds the exact numbers.")
KNOBS = [knob("--task", choices=["reverse", "copy"], default="reverse", help="what to learn"),
         knob("--steps", type=int_range(EARLY, MAX_STEPS), default=STEPS,
              help="training steps (the held-out strings are the same for every value)"),
         knob("--seed", type=SEED, default=42, help="seed of the starting weights and training strings"),
         knob("--no-mask", action="store_true", help="train (and decode) without the causal mask: the cheat"),
         knob("--table", action="store_true",
              help="also print the exact numbers behind the verdicts (they vary slightly between CPUs)")]
TRY_IT = [("--no-mask", "no causal mask: every answer is read from the next input, so it is perfect with the gold "
           "prefix and cannot write one digit on its own"),
          ("--task copy", "copy instead of reverse: the alignment becomes the diagonal"),
          ("--steps 100", "stopped too early: fewer held-out strings right (how many depends on the CPU)"),
          ("--seed 7", "other starting weights and training strings: the same verdicts"),
          ("--table", "the exact losses, accuracies and attention margins of this CPU")]
FIGURE = REPO_ROOT / "build" / "figures" / "week2" / "tiny_transformer_cross_attention.png"
FIGURE_HELP = ("where to save the cross-attention figure (a default run saves it in build/figures/week2/, as its "
               "pixels depend on the CPU)")
LIVE = "watch the training: the loss and the cross-attention redrawn as it learns, then the figure"


def plot(example_weights, mean_weights, example_src, example_tgt, count, task):
    """Left: one held-out string's cross-attention; right: the average over `count` strings
    of the same length (both NumPy [n, n], n = its length + 1 for </s>). Rows: target
    positions (the word being written); columns: source positions; both counted from 0."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.6), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.12)  # a margin above the three-line title
    n = len(mean_weights)
    want = mirror(n - 1, task).tolist()
    panels = [(example_weights, f"one held-out string: {words(example_src[:n - 1])}",
               [TOKENS[t] for t in example_tgt[:n].tolist()], [TOKENS[t] for t in example_src[:n].tolist()]),
              (mean_weights, f"average over the {count} held-out strings of length {n - 1}",
               [f"t={t}" for t in range(n - 1)] + ["</s>"], [str(s) for s in range(n - 1)] + ["</s>"])]
    for ax, (weights, title, rows, cols) in zip(axes, panels, strict=True):
        image = ax.imshow(weights, cmap="viridis", vmin=0, vmax=1)
        for i in range(n):
            for j in range(n):  # (left out of the layout computation: the same pixels, drawn quicker)
                ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if weights[i, j] > 0.6 else "white", in_layout=False)
        for i, j in enumerate(want):  # the cell each digit row must read
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
        ax.set_xticks(range(n), cols)
        ax.set_yticks(range(n), rows)
        ax.set_title(title, fontsize=10)
    axes[0].set_xlabel("source: the digits the encoder read, in order")
    axes[0].set_ylabel("target: the digits written, in order")
    axes[1].set_xlabel("source position s (0 = the first digit read)")
    axes[1].set_ylabel("target position t (0 = the first digit written)")
    fig.colorbar(image, ax=axes, label="cross-attention weight (each row sums to 1)", shrink=0.8)
    where = f"source position {n - 2} - t, the mirror L - 1 - t" if task == "reverse" else "source position t"
    fig.suptitle(f"What the decoder reads while writing ({task})\nred boxes: row t should read {where}\n"
                 "positions count from 0 (week2/figures/causal_mask.png counts from 1)", fontsize=11)
    return fig


def live_training(steps, held_src, held_tgt, causal):
    """The window that follows the training (--live), and its redraw: the loss so far against
    its floor, and the cross-attention averaged over the held-out strings of full length, as it forms."""
    full = (held_src > EOS).sum(1) == MAX_LEN
    n = MAX_LEN + 1  # the digits and </s>
    fig, (loss_ax, map_ax) = plt.subplots(1, 2, figsize=(12, 5.5))
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.12, top=0.86, wspace=0.25)  # fixed: quicker redraws
    (curve,) = loss_ax.plot([], [], color="tab:blue", label="training loss")
    loss_ax.axhline(loss_floor(), color="0.5", linestyle="--", label=f"the floor, {loss_floor():.4f}")
    loss_ax.set(xlim=(1, steps), ylim=(0, 4), xlabel="training step", ylabel="label-smoothed loss")
    loss_ax.legend(loc="upper right")
    image = map_ax.imshow(np.zeros((n, n)), cmap="viridis", vmin=0, vmax=1, interpolation="none")
    positions = [*map(str, range(MAX_LEN)), "</s>"]
    map_ax.set_xticks(range(n), positions)
    map_ax.set_yticks(range(n), positions)
    map_ax.set(xlabel="source position (0 = the first digit read)", ylabel="target position t")
    fig.suptitle("Training as it happens: the loss falls, and the decoder learns where to read")
    blit = Blit(fig)
    blit.add(curve, loss_ax.title, image, map_ax.title)  # what a redraw changes

    def redraw(step, losses, model):
        curve.set_data(range(1, len(losses) + 1), losses)
        loss_ax.set_title(f"step {step} of {steps}: loss {losses[-1]:.2f}")
        image.set_data(cross_attention_maps(model, held_src[full], held_tgt[full], causal)[:, :n, :n].mean(0).numpy())
        map_ax.set_title(f"cross-attention, averaged over {int(full.sum())} held-out strings")

    return View(fig, blit=blit), redraw


LESSON = Lesson(__file__, page=("week2", 8), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT,
                figure=FIGURE_HELP, live=LIVE, training=True,
                print_only=("table",))


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
