"""The Week 2 page's "Mistakes people make", each put to an experiment that could go either way.

Page: Week 2, the "Mistakes people make" boxes of sections 1 to 8, and two rows of section
6's LayerNorm/BatchNorm table.

Each belief gets one measurement, written once as a function of a "world" (an
implementation) and run twice: in the page's world, the real thing (torch's own attention,
decoder and encoder layers, norms, loss, optimizer and autograd), and in a world where the
belief would hold. The verdict comes from the two: "the belief is wrong, as the page says"
only if the page's world behaves as the page says and the belief's world, measured the same
way, does not; CONTRADICTS THE PAGE if the page's world misbehaves; if both look alike, the
experiment proved nothing and says so.

Prints, section by section, each belief: the experiment, what it saw in each world, the
verdict; then the bullets another lesson runs (its command, what it shows) and those no
computation can settle (why); the tally. Exit status 0 when every verdict is "as the page
says", 1 otherwise.
Setup: torch float64; each measurement starts from torch.manual_seed(--seed), so both worlds
see the same inputs; "moves" means by more than 1e-9; the small decoder is untrained.
Notes: week2/NOTES.md, section 11.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import causal_mask, sinusoidal_pe
from common.cli import SEED, Lesson, knob
from common.printing import n_params, vec, yes
from common.records import UPHOLDS
from common.report import MOVES, Finding, Ledger, moved, weights_of

import torch
import torch.nn as nn
import torch.nn.functional as F

F64 = torch.float64  # every tensor: float64 rounds at about 1e-16, far below MOVES, so no printed digit moves
V, BOS = 10, 0  # vocabulary of the small decoder; token 0 is the start symbol
GOLD = [1, 2, 3, 4]  # the page's gold target


# ---------------------------------------------------------------- section 1
# The causal mask given to torch's layers is common/blocks.py's causal_mask(T): [T, T] bool,
# True above the diagonal (the future), torch's own convention for a boolean mask.

def torch_decoder():
    """A small real decoder, untrained: token and position embeddings, one torch layer under
    the causal mask, a linear layer to V scores. Row t of its output scores the next word."""
    d = 8
    embed, place = nn.Embedding(V, d, dtype=F64), nn.Embedding(8, d, dtype=F64)
    layer = nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True, dtype=F64)
    to_vocab = nn.Linear(d, V, dtype=F64)

    def predict(tokens):  # [T] token ids -> [T, V] scores
        x = embed(torch.tensor([tokens])) + place(torch.arange(len(tokens)))  # [1, T, d]
        return to_vocab(layer(x, src_mask=causal_mask(len(tokens)), is_causal=True))[0]

    return predict


def never_wrong_decoder():
    """The belief's world: a decoder whose every guess is the gold word."""
    return lambda tokens: F.one_hot(torch.tensor(GOLD[:len(tokens)]), V).to(F64)


def inputs_when_generating(make_decoder, seed):
    """Belief 1: the decoder's inputs in training (gold prefix, one pass) and when it generates
    (its own guesses fed back), for the gold target [1, 2, 3, 4]."""
    torch.manual_seed(seed)
    predict = make_decoder()
    forced = [BOS] + GOLD[:-1]  # teacher forcing: the gold words, shifted right
    generated = [BOS]
    while len(generated) < len(GOLD):
        generated.append(int(predict(generated)[-1].argmax()))  # its own guess becomes the next input
    differ = [t + 1 for t in range(len(GOLD)) if forced[t] != generated[t]]
    seen = (f"training inputs {forced}; generation inputs {generated}; "
            f"steps whose input differs: {differ if differ else 'none'}")
    return Finding(seen, bool(differ))


def shifted(labels):
    return [BOS] + labels[:-1]  # [BOS, y1, ..., y(T-1)]


def unshifted(labels):
    return list(labels)  # [y1, ..., yT]: the labels themselves


def who_sees_their_own_label(make_inputs, seed, make_decoder=torch_decoder):
    """Belief 2: change one label at a time; does the output at that same position move?
    make_decoder: torch's small causal decoder, unless a test passes a wrong one."""
    torch.manual_seed(seed)
    predict = make_decoder()
    before = predict(make_inputs(GOLD))
    seeing = []
    for t in range(len(GOLD)):
        other = list(GOLD)
        other[t] += 4  # a different label at position t only
        if moved(predict(make_inputs(other))[t], before[t]):
            seeing.append(t + 1)
    seen = (f"decoder input {make_inputs(GOLD)} for labels {GOLD}; positions whose output moves when "
            f"their own label changes: {seeing if seeing else 'none'}")
    return Finding(seen, not seeing)


def section_1(ledger, seed):
    """Section 1's beliefs 1 and 2, each measured in the page's world and in the belief's."""
    ledger.section("Section 1: teacher forcing")
    ledger.belief(1, "teacher forcing removes the train/inference mismatch",
                  "a small untrained torch decoder: its inputs in training (the gold words) vs when it generates "
                  "(its own guesses)",
                  ("a real decoder, which can guess wrong", inputs_when_generating(torch_decoder, seed)),
                  ("a decoder that never guesses wrong", inputs_when_generating(never_wrong_decoder, seed)))
    ledger.belief(2, "the target can be fed to the decoder without the shift",
                  "the same decoder, causal mask on: change one label at a time, watch that position's output",
                  ("shifted right, [BOS, y1, y2, y3]", who_sees_their_own_label(shifted, seed)),
                  ("no shift, [y1, y2, y3, y4]", who_sees_their_own_label(unshifted, seed)))


# ---------------------------------------------------------------- section 2

def torch_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def diagonal_blocked_too(q, k, v):
    """The belief's world: the mask also hides each word from itself (only earlier words allowed)."""
    allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(diagonal=-1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def weight_on_itself(causal_attend, seed):
    """Belief 3: 4 words under the mask: each word's weight on itself, and on later words."""
    torch.manual_seed(seed)
    q, k = torch.randn(1, 4, 8, dtype=F64), torch.randn(1, 4, 8, dtype=F64)
    A = weights_of(causal_attend, q, k)[0]  # [4 queries, 4 keys]
    own, later = A.diagonal(), float(A.triu(diagonal=1).abs().max())
    seen = f"each word's weight on itself {vec(own, 2)}; largest weight on a later word {later:.2g}"
    return Finding(seen, bool((own > 0).all()) and later == 0 and abs(float(own[0]) - 1) <= MOVES)


def zero_future_values(q, k, v):
    """The belief's world: no mask on the scores; each query sees the later words' values set to 0."""
    rows = []
    for t in range(q.shape[-2]):
        v_t = v.clone()
        v_t[:, t + 1:] = 0.0
        rows.append(F.scaled_dot_product_attention(q[:, t:t + 1], k, v_t))  # plain softmax over all 4 scores
    return torch.cat(rows, dim=1)


def does_the_future_count(hide_future, seed):
    """Belief 4: word 2's weights on the words it may see; and does word 4's key still move word 2?"""
    torch.manual_seed(seed)
    q, k, v = (torch.randn(1, 4, 8, dtype=F64) for _ in range(3))
    visible = float(weights_of(hide_future, q, k)[0, 1, :2].sum())  # word 2's weights on words 1 and 2
    changed = k.clone()
    changed[0, 3] += 1.0  # word 4's key: the future, for word 2
    leaks = moved(hide_future(q, changed, v)[0, 1], hide_future(q, k, v)[0, 1])
    seen = (f"word 2's weights on words 1-2 add up to {visible:.2f}; changing word 4's key moves "
            f"word 2's output: {yes(leaks)}")
    return Finding(seen, abs(visible - 1) <= MOVES and not leaks)


def torch_masked(q, k, v, allowed):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def big_negative_mask(q, k, v, allowed):
    """The belief's world: hidden scores get -1e9 added instead of becoming -inf."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.where(allowed, 0.0, -1e9).to(F64))


def row_with_no_key(masked_attend, seed):
    """Belief 5: query 1 may see none of the 4 keys; query 2 sees keys 1-2. What are query 1's weights?"""
    torch.manual_seed(seed)
    q, k = torch.randn(1, 2, 8, dtype=F64), torch.randn(1, 4, 8, dtype=F64)
    allowed = torch.tensor([[False, False, False, False], [True, True, False, False]])
    w = masked_attend(q, k, torch.eye(4, dtype=F64)[None], allowed)[0, 0]  # V = I: the output is the weights
    total = float(w.sum())
    a_softmax = bool(torch.isfinite(w).all()) and abs(total - 1) <= MOVES
    seen = f"query 1's weights {vec(w, 2)}, adding up to {total:.2f}"
    seen += ": a softmax, but every bit of it on a hidden key" if a_softmax else ": no softmax (one adds up to 1)"
    return Finding(seen, not a_softmax)


def section_2(ledger, seed):
    """Section 2's beliefs 3 to 5, each measured in the page's world and in the belief's."""
    ledger.section("Section 2: the causal mask")
    ledger.belief(3, "the mask removes the diagonal",
                  "4 words through attention under the mask; V = I shows the weights",
                  ("torch's is_causal=True", weight_on_itself(torch_causal, seed)),
                  ("a mask that also hides the diagonal", weight_on_itself(diagonal_blocked_too, seed)))
    ledger.belief(4, "setting the future values to zero is the same as masking",
                  "4 words; look at word 2, which may see words 1-2",
                  ("torch's mask on the scores", does_the_future_count(torch_causal, seed)),
                  ("future values set to 0", does_the_future_count(zero_future_values, seed)))
    ledger.belief(5, "a row with every key masked still gives a softmax",
                  "a query for which every key is hidden",
                  ("torch's attention, hidden = -inf", row_with_no_key(torch_masked, seed)),
                  ("hidden = -1e9", row_with_no_key(big_negative_mask, seed)))


# ---------------------------------------------------------------- section 3

def whole_source(source, step):
    return source  # translation: the source sentence is all there before the first target word


def source_so_far(source, step):
    """The belief's world: the source arrives one word per step, like the target."""
    return source[:, :step]


def what_training_sees(source_at, seed):
    """Belief 6: torch's decoder layer, 3 target words, 5 source words. Training makes all 3
    target outputs in one pass (causal mask on the target), once with no mask over the source
    and once with a causal mask over it; generation makes them one at a time with whatever
    source exists at that step. Which training matches generation?"""
    torch.manual_seed(seed)
    target, source = torch.randn(1, 3, 8, dtype=F64), torch.randn(1, 5, 8, dtype=F64)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dtype=F64)

    def decode(tgt, src, source_mask=None):
        return layer(tgt, src, tgt_mask=causal_mask(tgt.shape[1]), tgt_is_causal=True, memory_mask=source_mask)

    causal_over_source = torch.ones(3, 5, dtype=torch.bool).triu(diagonal=1)  # target t sees source words 1..t
    open_training, masked_training = decode(target, source), decode(target, source, causal_over_source)
    generation = torch.stack([decode(target[:, :t], source_at(source, t))[0, -1] for t in (1, 2, 3)])[None]
    changed = source.clone()
    changed[0, 4] += 1.0  # source word 5
    uses_word_5 = moved(decode(target[:, :1], source_at(changed, 1))[0, 0], generation[0, 0])
    open_ok, masked_ok = not moved(generation, open_training), not moved(generation, masked_training)
    seen = (f"when generating, target word 1 uses source word 5: {yes(uses_word_5)}; generation matches training "
            f"with no source mask: {yes(open_ok)}; with a causal mask over the source: {yes(masked_ok)}")
    return Finding(seen, open_ok and not masked_ok)


def torch_decoder_layer(d, h, f, device=None):
    layer = nn.TransformerDecoderLayer(d, h, f, dropout=0.0, batch_first=True, device=device, dtype=F64)

    def decode(target, source):
        return layer(target, source, tgt_mask=causal_mask(target.shape[1]), tgt_is_causal=True)

    return layer, decode


def encoder_layer_plus_mask(d, h, f, device=None):
    """The belief's world: torch's encoder layer given the causal mask. It has no input for the source."""
    layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True, device=device, dtype=F64)

    def decode(target, source):
        return layer(target, src_mask=causal_mask(target.shape[1]), is_causal=True)

    return layer, decode


def what_a_decoder_layer_has(make_layer, seed):
    """Belief 7: does the layer read the source? How many attention blocks and learned numbers?"""
    torch.manual_seed(seed)
    target, source = torch.randn(1, 3, 8, dtype=F64), torch.randn(1, 5, 8, dtype=F64)
    _, decode = make_layer(8, 2, 16)
    reads_source = moved(decode(target, source + 1.0), decode(target, source))
    big, _ = make_layer(512, 8, 2048, device="meta")  # meta: shapes only, no numbers stored
    blocks = sum(isinstance(m, nn.MultiheadAttention) for m in big.modules())
    seen = (f"output moves when the source changes: {yes(reads_source)}; attention blocks: {blocks}; "
            f"learned numbers at d = 512, f = 2048: {n_params(big):,}")
    return Finding(seen, reads_source and blocks == 2)


def section_3(ledger, seed):
    """Section 3's beliefs 6 and 7, each measured in the page's world and in the belief's."""
    ledger.section("Section 3: cross-attention")
    ledger.belief(6, "cross-attention needs a causal mask over the source",
                  "a mask is needed exactly where one-pass training would see what step-by-step generation "
                  "cannot; compare them in torch's decoder layer (3 target words, 5 source words)",
                  ("the whole source known from the start", what_training_sees(whole_source, seed)),
                  ("the source arriving word by word", what_training_sees(source_so_far, seed)))
    ledger.belief(7, "a decoder layer is an encoder layer plus a mask",
                  "change the source and watch the layer's output; count attention blocks and learned numbers",
                  ("torch's nn.TransformerDecoderLayer", what_a_decoder_layer_has(torch_decoder_layer, seed)),
                  ("torch's encoder layer plus the mask", what_a_decoder_layer_has(encoder_layer_plus_mask, seed)))


# ---------------------------------------------------------------- section 4

def torch_embedding_and_output():
    """The page's numbers: d = 512, V = 37,000; an embedding table and the output layer (with bias)."""
    table = torch.empty(37_000, 512, device="meta")  # meta: shapes only, no numbers stored
    return nn.ModuleDict({"embedding": nn.Embedding.from_pretrained(table, freeze=False),
                          "output": nn.Linear(512, 37_000, device="meta")})


def nothing_to_exclude():
    """The belief's world: a model with no biases and no embeddings for a question to exclude."""
    return nn.ModuleDict({"output": nn.Linear(512, 37_000, bias=False, device="meta")})


def count_as_asked(make_model):
    """Belief 8: the library's total next to the count a question asks for: no biases, no embeddings."""
    model = make_model()
    total = n_params(model)
    asked = sum(p.numel() for name, p in model.named_parameters()
                if not name.endswith("bias") and not name.startswith("embedding"))
    seen = f"library total {total:,}; without biases and embeddings {asked:,}"
    return Finding(seen, total != asked)


def tied_model():
    embedding, output = nn.Embedding(1000, 64, dtype=F64), nn.Linear(64, 1000, bias=False, dtype=F64)
    output.weight = embedding.weight  # tie: one [V, d] matrix, used twice
    return nn.ModuleDict({"embedding": embedding, "output": output})


def untied_copies():
    """The belief's world: two separate matrices that start equal."""
    embedding, output = nn.Embedding(1000, 64, dtype=F64), nn.Linear(64, 1000, bias=False, dtype=F64)
    with torch.no_grad():
        output.weight.copy_(embedding.weight)
    return nn.ModuleDict({"embedding": embedding, "output": output})


def how_many_matrices(make_model, seed):
    """Belief 9: V = 1000, d = 64. One training step, then: one matrix or two? And the counts."""
    torch.manual_seed(seed)
    model = make_model()
    words = torch.randint(0, 1000, (6,))
    scores = model["output"](model["embedding"](words[:-1]))  # [5, V]: each word guesses the next
    F.cross_entropy(scores, words[1:]).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 1.0 * p.grad
    one = torch.equal(model["embedding"].weight, model["output"].weight)
    by_layer = n_params(model["embedding"]) + n_params(model["output"])
    seen = (f"after one training step the embedding and output matrices are still identical: {yes(one)}; "
            f"torch counts {n_params(model):,}; adding each layer's count gives {by_layer:,}")
    return Finding(seen, one and n_params(model) == 1000 * 64)


def torch_encoder_layer_512():
    return nn.TransformerEncoderLayer(512, 8, 2048, device="meta")


def two_block_layer_512():
    """The belief's world: a layer with two attention blocks (torch's decoder layer is one)."""
    return nn.TransformerDecoderLayer(512, 8, 2048, device="meta")


def attention_blocks(make_layer):
    """Belief 10: count the attention blocks in the layer, and its learned numbers."""
    layer = make_layer()
    blocks = [m for m in layer.modules() if isinstance(m, nn.MultiheadAttention)]
    seen = (f"attention blocks: {len(blocks)} ({sum(n_params(b) for b in blocks):,} learned numbers); "
            f"whole layer {n_params(layer):,}")
    return Finding(seen, len(blocks) == 1)


def section_4(ledger, seed):
    """Section 4's beliefs 8 to 10 (the seed feeds belief 9's training step)."""
    ledger.section("Section 4: counting parameters")
    ledger.belief(8, "the library's total answers any counting question",
                  "the page's output layer (d = 512, V = 37,000, with bias) and an embedding table",
                  ("torch's nn.Embedding and nn.Linear", count_as_asked(torch_embedding_and_output)),
                  ("nothing to exclude", count_as_asked(nothing_to_exclude)))
    ledger.belief(9, "a tied weight is counted twice",
                  "tie the output layer to the embedding (V = 1000, d = 64); one training step; count",
                  ("torch, output.weight = embedding.weight", how_many_matrices(tied_model, seed)),
                  ("two matrices that start equal", how_many_matrices(untied_copies, seed)))
    ledger.belief(10, "an encoder layer has two attention blocks",
                  "count the attention blocks in one layer at d = 512, f = 2048",
                  ("torch's nn.TransformerEncoderLayer", attention_blocks(torch_encoder_layer_512)),
                  ("torch's decoder layer, which has two", attention_blocks(two_block_layer_512)))


# ---------------------------------------------------------------- section 5

def sinusoidal_tags(T, d):
    """The page's world: its formula, PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i),
    w_i = 10000^(-2i/d), i the PAIR index, positions p = 0, 1, 2, ...: common/blocks.py's
    table (taught in week2/03), in float64."""
    return sinusoidal_pe(T, d, F64)  # [T, d]


def counting_tags(T, d):
    """The belief's world: a tag that just counts up (p / T in every slot)."""
    return (torch.arange(T, dtype=F64)[:, None] / T).expand(T, d)


def distance_as_gap_grows(make_tags):
    """Belief 11: |PE(k) - PE(0)| for gaps k = 1..63, d = 16. Does it ever fall as k grows?"""
    tags = make_tags(64, 16)
    distance = (tags[1:] - tags[0]).norm(dim=1)
    falls = int((distance.diff() < -MOVES).sum())
    seen = f"gaps 1-8: {vec(distance[:8], 2)}; the distance falls {falls} times over 63 gaps"
    return Finding(seen, falls > 0)


def coordinate_index_tags(T, d):
    """The belief's world: the exponent counts coordinates j = 0, 1, 2, 3 instead of pairs i."""
    p, j = torch.arange(T, dtype=F64)[:, None], torch.arange(d)
    angles = p * 10000.0 ** (-2 * j.to(F64) / d)  # a different speed for every coordinate
    return torch.where(j % 2 == 0, torch.sin(angles), torch.cos(angles))


def tags_from_one(T, d):
    """The belief's world: the first word gets position 1."""
    return sinusoidal_tags(T + 1, d)[1:]


def pairs_on_one_circle(make_tags):
    """Belief 12: with i the pair index, coordinates 2i and 2i+1 are the sin and the cos of one
    angle p w_i, so every pair lies on the unit circle: sin^2 + cos^2 = 1 at every position."""
    tags = make_tags(50, 4)  # [50 positions, d = 4]
    miss = (tags[:, 0::2] ** 2 + tags[:, 1::2] ** 2 - 1).abs().max().item()
    seen = (f"word 1 {vec(tags[0], 4)}, word 2 {vec(tags[1], 4)}; over 50 positions, each (sin, cos) pair's "
            f"squared length misses 1 by at most {miss:.4f}")
    return Finding(seen, miss < 1e-9)


def position_read_back(make_tags):
    """Belief 13: read each word's position back from its tag. Pair 0 turns 1 radian per
    position (w_0 = 1), so its angle atan2(sin, cos) is the position itself."""
    tags = make_tags(2, 4)
    read = torch.atan2(tags[:, 0], tags[:, 1])  # [2]: the angle of pair 0 for words 1 and 2
    seen = (f"word 1 {vec(tags[0], 4)}, word 2 {vec(tags[1], 4)}; the positions their pair-0 angles give: "
            f"{vec(read, 2)}")
    return Finding(seen, abs(read[0].item()) < 1e-9)  # the first word is at position 0


def section_5(ledger):
    """Section 5's beliefs 11 to 13 (the page's formula: nothing random)."""
    ledger.section("Section 5: sinusoidal position tags")
    ledger.belief(11, "the distance between tags grows steadily with the gap",
                  "|PE(k) - PE(0)| for gaps k = 1..63, d = 16",
                  ("the page's formula", distance_as_gap_grows(sinusoidal_tags)),
                  ("a tag that counts up", distance_as_gap_grows(counting_tags)))
    ledger.belief(12, "in 10000^(-2i/d), i counts coordinates (0, 1, 2, 3), not pairs",
                  "the tags at d = 4: is each (sin, cos) pair one angle on the unit circle, as a pair "
                  "sharing one speed must be?",
                  ("i = pair index", pairs_on_one_circle(sinusoidal_tags)),
                  ("i = coordinate index", pairs_on_one_circle(coordinate_index_tags)))
    ledger.belief(13, "the first word is at position 1",
                  "read the first two words' positions back from their tags (the angle of pair 0, "
                  "which turns 1 radian per position)",
                  ("positions 0, 1, 2, ...", position_read_back(sinusoidal_tags)),
                  ("positions 1, 2, 3, ...", position_read_back(tags_from_one)))


# ---------------------------------------------------------------- section 6

def torch_layer_norm(n):
    return nn.LayerNorm(n, dtype=F64)


def torch_batch_norm(n):
    return nn.BatchNorm1d(n, dtype=F64)


def batch_norm_without_running_stats(n):
    """The belief's world of belief 15: BatchNorm that keeps no running statistics."""
    return nn.BatchNorm1d(n, track_running_stats=False, dtype=F64)


def batch_norm_in_eval_mode(n):
    """The belief's world of belief 16: a new BatchNorm in evaluation mode (running mean 0, variance 1)."""
    return nn.BatchNorm1d(n, dtype=F64).eval()


def depends_on_the_batch(make_norm, seed):
    """Belief 14: keep example 1 of 4, replace the other 3, normalize again."""
    torch.manual_seed(seed)
    batch = torch.randn(4, 6, dtype=F64)
    other = batch.clone()
    other[1:] = torch.randn(3, 6, dtype=F64) * 5 + 3
    norm = make_norm(6)
    alone = not moved(norm(batch)[0], norm(other)[0])
    return Finding(f"example 1's output stays the same: {yes(alone)}", alone)


def train_versus_eval(make_norm, seed):
    """Belief 15: the same batch through the norm in training mode, then in evaluation mode."""
    torch.manual_seed(seed)
    batch = torch.randn(4, 6, dtype=F64) * 3 + 1
    norm = make_norm(6)
    with torch.no_grad():
        same = not moved(norm.train()(batch), norm.eval()(batch))
    return Finding(f"same output in both modes: {yes(same)}", not same)


def one_value_per_feature(make_norm):
    """Belief 16: one example, so one value per feature: x = [5, -2, 0.5]."""
    x = torch.tensor([[5.0, -2.0, 0.5]], dtype=F64)
    norm = make_norm(3)  # gamma = 1, beta = 0, as torch starts them
    with torch.no_grad():
        try:
            out, refused = norm(x), ""
        except ValueError as error:
            refused = (f"torch refuses (\"{str(error).split(',')[0]}\"); the operation it calls, "
                       "torch.batch_norm, without that check gives ")
            out = torch.batch_norm(x, norm.weight, norm.bias, None, None, True, 0.0, norm.eps, False)
    is_beta = not moved(out, norm.bias[None])
    seen = f"{refused}{vec(out[0], 2)}; beta is {vec(norm.bias, 2)}, the input {vec(x[0], 2)}"
    return Finding(seen, is_beta and moved(out, x))


def torch_residual(sublayer):
    return lambda x: x + sublayer(x)  # the shortcut: the input added back to the sublayer's output


def uncancellable_shortcut(sublayer):
    """The belief's world: a shortcut whose gradient nothing can cancel (the sublayer's gradient path cut)."""
    return lambda x: x + sublayer(x).detach()


def gradient_through_the_block(make_block, seed):
    """Belief 17: a residual block around torch's FFN (Linear-ReLU-Linear) whose weights make
    it output -x (W_1 = [I; -I], W_2 = [-I, I]: relu(x) - relu(-x) = x). How much gradient
    reaches the input?"""
    torch.manual_seed(seed)
    x = torch.randn(1, 8, dtype=F64, requires_grad=True)
    direction = torch.randn(8, dtype=F64)
    eye = torch.eye(8, dtype=F64)
    ffn = nn.Sequential(nn.Linear(8, 16, bias=False, dtype=F64), nn.ReLU(), nn.Linear(16, 8, bias=False, dtype=F64))
    with torch.no_grad():
        ffn[0].weight.copy_(torch.cat([eye, -eye]))  # W_1 = [I; -I]
        ffn[2].weight.copy_(torch.cat([-eye, eye], dim=1))  # W_2 = [-I, I]
    (make_block(ffn)(x)[0] @ direction).backward()  # autograd, through the shortcut and the FFN
    size = float(x.grad.abs().max())
    return Finding(f"largest gradient reaching the input: {size:.2g}", size <= MOVES)


def section_6(ledger, seed):
    """Section 6's beliefs 14 to 17, each measured in the page's world and in the belief's."""
    ledger.section("Section 6: residuals and normalization")
    ledger.belief(14, "LayerNorm, like BatchNorm, depends on the rest of the batch (the section's table)",
                  "4 examples of 6 features: keep example 1, replace the other 3, normalize again",
                  ("torch's nn.LayerNorm", depends_on_the_batch(torch_layer_norm, seed)),
                  ("torch's nn.BatchNorm1d", depends_on_the_batch(torch_batch_norm, seed)))
    ledger.belief(15, "BatchNorm computes the same in training and in evaluation (the section's table)",
                  "the same batch through the norm in training mode and in evaluation mode",
                  ("torch's nn.BatchNorm1d", train_versus_eval(torch_batch_norm, seed)),
                  ("no running statistics", train_versus_eval(batch_norm_without_running_stats, seed)))
    ledger.belief(16, "BatchNorm with one value returns the input",
                  "one example: one value per feature, [5, -2, 0.5], in training mode",
                  ("torch's nn.BatchNorm1d", one_value_per_feature(torch_batch_norm)),
                  ("a new BatchNorm in evaluation mode", one_value_per_feature(batch_norm_in_eval_mode)))
    ledger.belief(17, "a residual connection guarantees gradients never vanish",
                  "a residual block around an FFN that has learned to output -x, so y = x + (-x)",
                  ("torch's FFN plus the shortcut", gradient_through_the_block(torch_residual, seed)),
                  ("a shortcut nothing can cancel", gradient_through_the_block(uncancellable_shortcut, seed)))


# ---------------------------------------------------------------- section 7

def torch_smoothed_loss(scores, gold):
    return F.cross_entropy(scores, gold, label_smoothing=0.1)


def plain_nll(scores, gold):
    """The belief's world: ordinary negative log-likelihood of the gold class."""
    return F.nll_loss(F.log_softmax(scores, dim=-1), gold)


def which_target_the_loss_uses(loss_fn):
    """Belief 18: V = 4, gold class 3, scores [0.6, 0.1, 1.8, 0.5], epsilon 0.1."""
    scores, gold = torch.tensor([[0.6, 0.1, 1.8, 0.5]], dtype=F64), torch.tensor([2])
    value = float(loss_fn(scores, gold))
    log_p = F.log_softmax(scores, dim=-1)[0]
    one_hot = F.one_hot(gold, 4)[0].to(F64)
    smoothed = 0.9 * one_hot + 0.1 / 4  # the uniform-mixture target [0.025, 0.025, 0.925, 0.025]
    nll, smoothed_ce = float(-(one_hot * log_p).sum()), float(-(smoothed * log_p).sum())
    seen = (f"loss {value:.6f}; against the one-hot target (the NLL) {nll:.6f}; against the smoothed "
            f"target {vec(smoothed, 3)} {smoothed_ce:.6f}")
    return Finding(seen, abs(value - smoothed_ce) <= MOVES and abs(value - nll) > MOVES)


def torch_adam(params):
    return torch.optim.Adam(params, lr=0.001)


def exactly_the_rate(params):
    """The belief's world: every weight moves by the scheduled rate. Adam with its memory switched
    off (betas 0, 0) does that: each step is lr * g / (|g| + 1e-8)."""
    return torch.optim.Adam(params, lr=0.001, betas=(0.0, 0.0))


def how_far_weights_move(make_optimizer):
    """Belief 19: 3 steps at lr 0.001; weight 1's gradient flips sign (1, -1, 1), weight 2's is a steady 100."""
    w = torch.zeros(2, dtype=F64, requires_grad=True)
    optimizer = make_optimizer([w])
    moves = []
    for g in torch.tensor([[1.0, 100.0], [-1.0, 100.0], [1.0, 100.0]], dtype=F64):
        optimizer.zero_grad()
        (w * g).sum().backward()  # a loss whose gradient is g
        before = w.detach().clone()
        optimizer.step()
        moves.append((w.detach() - before).abs())
    moves = torch.stack(moves)  # [step, weight]
    every_step_the_rate = bool(((moves - 0.001).abs() <= MOVES).all())
    seen = f"weight 1 moves {vec(moves[:, 0], 6)}; weight 2 moves {vec(moves[:, 1], 6)}"
    return Finding(seen, not every_step_the_rate)


def section_7(ledger):
    """Section 7's beliefs 18 and 19 (fixed scores and gradients: nothing random)."""
    ledger.section("Section 7: training tricks")
    ledger.belief(18, "smoothed cross-entropy is ordinary negative log-likelihood",
                  "one prediction; which target does the loss measure against?",
                  ("torch's cross_entropy(label_smoothing=0.1)", which_target_the_loss_uses(torch_smoothed_loss)),
                  ("plain NLL", which_target_the_loss_uses(plain_nll)))
    ledger.belief(19, "the scheduled learning rate is the size of every weight update",
                  "two weights, three steps at lr 0.001; weight 1's gradient flips sign, weight 2's stays 100",
                  ("torch's Adam", how_far_weights_move(torch_adam)),
                  ("every step exactly the rate", how_far_weights_move(exactly_the_rate)))


# ---------------------------------------------------------------- section 8

def torch_decoder_stack(d):
    stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True,
                                                             dtype=F64), 2)

    def decode(target, source):
        return stack(target, source, tgt_mask=causal_mask(target.shape[1]), tgt_is_causal=True)

    return decode


def mask_in_first_layer_only(d):
    """The belief's world: the same two layers, the mask given to the first one only."""
    stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True,
                                                             dtype=F64), 2)

    def decode(target, source):
        h = stack.layers[0](target, source, tgt_mask=causal_mask(target.shape[1]), tgt_is_causal=True)
        return stack.layers[1](h, source)

    return decode


def can_word_1_see_word_3(make_decoder, seed):
    """Belief 20: a 2-layer decoder; how strongly does word 1's final output respond to word 3?"""
    torch.manual_seed(seed)
    target = torch.randn(1, 3, 8, dtype=F64, requires_grad=True)
    source, direction = torch.randn(1, 5, 8, dtype=F64), torch.randn(8, dtype=F64)
    (make_decoder(8)(target, source)[0, 0] @ direction).backward()
    pull = float(target.grad[0, 2].abs().max())
    return Finding(f"largest gradient of word 1's output with respect to word 3: {pull:.2g}", pull <= MOVES)


def section_8(ledger, seed):
    """Section 8's belief 20, measured in the page's world and in the belief's."""
    ledger.section("Section 8: the whole data flow")
    ledger.belief(20, "the mask applies only in the first decoder layer",
                  "a 2-layer torch decoder; autograd asks how word 1's final output responds to word 3",
                  ("torch's nn.TransformerDecoder", can_word_1_see_word_3(torch_decoder_stack, seed)),
                  ("the mask in layer 1 only", can_word_1_see_word_3(mask_in_first_layer_only, seed)))


# ---------------------------------------------------------------- the lesson, in the page's order

# Bullets a run in another lesson settles or answers in part: (bullet, lesson, {that lesson's
# check: the outcome this line reports}, what its run shows). The check is named as in
# expected_outputs/<lesson>.checks.txt; tests/test_mistakes.py reads the lesson's default run
# and holds each check to the outcome here, so a line says no more than that run shows.
ANOTHER_LESSON_RUNS = [
    ("Sinusoidal tags guarantee good length extrapolation (section 5)", "week2/12_train_tiny_transformer",
     {"strings longer than any trained": UPHOLDS},
     "it wrong, as the page says: trained on 1 to 6 digits, it writes fewer than 50% of held-out 7-digit "
     "strings right, though tags exist for every position (week2/14 computes them, far past training: "
     "python week2/14_positions_beyond_training.py)"),
    ("Warm-up is a universal stability proof (section 7)", "week2/20_warmup_not_universal",
     {"warm-up is not a universal stability proof": UPHOLDS},
     "it wrong, as the page says: on one small training, a run broke with warm-up in place, and one trained "
     "well without it"),
    ("Only the encoder gets position tags (section 8)", "week2/12_train_tiny_transformer",
     {"the decoder uses its own position tags and token embeddings": UPHOLDS},
     "it wrong, as the page says: its decoder adds position tags to its own inputs, and without them the "
     "trained model writes fewer than 50% of the held-out strings right"),
    ("The decoder has no token embeddings (section 8)", "week2/12_train_tiny_transformer",
     {"the decoder uses its own position tags and token embeddings": UPHOLDS},
     "it wrong, as the page says: its decoder embeds its own input tokens, and with one vector for every "
     "token the trained model writes fewer than 50% of the held-out strings right"),
]


def bullets_another_lesson_runs(ledger):
    """The page's bullets a run in another lesson answers: the command and what it shows."""
    ledger.section("Bullets another lesson runs (its command shows it):")
    for bullet, lesson, checks, shows in ANOTHER_LESSON_RUNS:
        ledger.elsewhere(bullet, lesson, checks, shows)


def bullets_no_computation_settles(ledger):
    """The page's bullets that no measurement can settle, each with the reason."""
    ledger.section("Bullets no computation here can settle:")
    ledger.untested("Original BERT used pre-LN (section 6)", "one published model's code; no BERT runs here")


def lesson(args):
    """The page's sections in its order, each belief with its verdict; the bullets no computation
    here settles; the tally (and the exit status)."""
    ledger = Ledger()
    ledger.two_worlds("Week 2: mistakes people make, tested", "attention, layers, loss and optimizer")
    section_1(ledger, args.seed)
    section_2(ledger, args.seed)
    section_3(ledger, args.seed)
    section_4(ledger, args.seed)
    section_5(ledger)
    section_6(ledger, args.seed)
    section_7(ledger)
    section_8(ledger, args.seed)
    bullets_another_lesson_runs(ledger)
    bullets_no_computation_settles(ledger)
    # Each verdict came from one measurement that answered differently in the belief's world:
    # that second line is what makes each "as the page says" worth something.
    return ledger.finish()


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("Week 2's 'Mistakes people make': each belief tested by one measurement run twice, on the "
               "real thing (torch's own) and on a version that behaves as the belief says.")
KNOBS = [knob("--seed", type=SEED, default=42,
              help="seed of every random draw (the inputs and torch's starting weights)")]
TRY_IT = [("--seed 7", "new random words and starting weights: the numbers drawn from them change (the untrained "
           "decoder guesses other words), every verdict stays")]


LESSON = Lesson(__file__, page=("week2", "mistakes"), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
