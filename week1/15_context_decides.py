"""Context decides what "it" means: a tiny model learns the classic puzzle live, in about a second.

Page: ELI5 page "One block: mix, then think", Move 1 (attention), the classic puzzle and
its Try it box: "The chicken didn't cross the road because it was too tired." What is it?
Try it: tired -> it leans on chicken; wide -> road. Same sentence, context decides.

    layer 1 (4 heads):  x1 = x0 + MHA(LN(x0)),   x0 = E[word] + P[place]
                        MHA(X) = Concat(head_1, ..., head_4) W_O,  head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i
    layer 2 (1 head):   alpha = softmax(q_it K^T / sqrt(d) + M),  q_it = LN(x1)_it W_Q,  K = LN(x1) W_K
                        fetched = sum_j alpha_j u_j,   u_j = E[word j] / |E[word j]|
    answer:             score(w) = 10 u_w . fetched for every word w;  "it" means argmax_w score(w)
    M: -inf on a hidden word, else 0 (no causal mask: a reader of the whole sentence may look both ways)

Prints that no held-out sentence is in a training batch; the attention by hand against
torch's; how many held-out answers are right, and in how many "it" looks hardest at the noun
it means; the page's sentence word by word with "it"'s attention, tired and wide, and a
verdict; then two of Week 1's claims in this model: the usual layer 2 beside the fetch (a
weight is no guaranteed explanation), and layer 1's heads at "it"; saves a figure. Setup (the
page trains nothing): 768 made-up sentences "the ANIMAL didn't cross the PLACE because it
was too ADJECTIVE", 8 noun pairs held out; 80 steps of torch.optim.Adam on 64 sentences.
Notes: week1/NOTES.md, section 15.
"""
import copy
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import REPO_ROOT, run
from common.blocks import MultiHeadAttention, attention, split_heads
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.printing import n_params
from common.progress import Progress
from common.records import measured, record, said

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

TEMPLATE = "the {animal} didn't cross the {place} because it was too {adjective}"  # the page's puzzle, made a template
ANIMALS = ["chicken", "dog", "cat", "horse", "cow", "duck", "fox", "goat"]  # the template's animals
PLACES = ["road", "river", "street", "highway", "stream", "canal", "lane", "track"]  # its places
FITS_ANIMAL = ["tired", "scared", "sleepy", "lazy", "weak", "slow"]  # only an animal can be too ...
FITS_PLACE = ["wide", "busy", "deep", "icy", "muddy", "crowded"]  # only a place can be too ...
ADJECTIVES = FITS_ANIMAL + FITS_PLACE  # its 12 adjectives
GLUE = ["the", "didn't", "cross", "because", "it", "was", "too"]  # its other words
VOCAB = GLUE + ANIMALS + PLACES + ADJECTIVES  # every word the model knows, in the order of E's rows
N_WORDS = len(VOCAB)  # 35 words
ID = {word: i for i, word in enumerate(VOCAB)}  # a word's row of E
PAGE = ("chicken", "road")  # the page's own noun pair: never in training
HELD_OUT_PAIRS = list(zip(ANIMALS, PLACES, strict=True))  # never trained on: chicken/road, dog/river, ...
T = 11  # words per sentence
ANIMAL_AT = 1  # where the animal stands (0-based)
PLACE_AT = 5  # where the place stands
IT_AT = 7  # where "it" stands
ADJECTIVE_AT = 10  # where the adjective stands
D_MODEL = 32  # d_model, numbers per word
HEADS_1 = 4  # heads of layer 1 (d_k = 8); layer 2 has one (d_k = 32)
SHARPNESS = 10.0  # the answer's scores are 10 x cosine(word vector, what "it" fetched)
BATCH = 64  # training sentences per step
STEPS = 80  # training steps (every seed measured had learned by step 40)
LR = 0.01  # Adam's learning rate (its betas and eps: torch's defaults)
ACCURATE = 0.9  # verdict: at least this share of the held-out answers right
LOOKS = 0.9  # verdict: in at least this share of each kind of held-out sentence, "it" looks hardest at the noun
LEANS = Fraction(2, 3)  # "it leans on X": more than 2/3 of its layer-2 attention is on X
AGREE = 1e-6  # by hand and torch agree: float64 rounding is about 1e-14, a dropped 1/sqrt(d_k) 1e-3 or more


def key_mask(hide_adjective):
    """M as a mask [1, T] (True = blocked), one row for every word that looks: the adjective when
    it is hidden (no word may look at it, in either layer, so nothing about it can reach "it")."""
    mask = torch.zeros(1, T, dtype=torch.bool)
    mask[0, ADJECTIVE_AT] = hide_adjective
    return mask


def unit_words(E):
    """u [N_WORDS, d]: every word vector of E scaled to length 1 (layer 2's values, and the answer key)."""
    return F.normalize(E, dim=-1)


class Model(nn.Module):
    """What both models below share: x0 = E[word] + P[place] and layer 1, x1 = x0 + MHA(LN(x0)),
    where every word looks at every word (4 heads). LayerNorm without gain or shift; no biases."""

    def __init__(self):
        super().__init__()
        self.E = nn.Embedding(N_WORDS, D_MODEL)  # E [N_WORDS, d]: a vector per word
        self.P = nn.Parameter(torch.empty(T, D_MODEL))  # P [T, d]: a vector per place (drawn in build_model)
        self.layer_1 = MultiHeadAttention(D_MODEL, HEADS_1, bias=False)  # W_Q, W_K, W_V, W_O [d, d]

    def first_layer(self, tokens, mask, fast=False):
        """tokens [B, T] -> x1 [B, T, d] and layer 1's weights [B, HEADS_1, T, T] (None if fast)."""
        x0 = self.E(tokens) + self.P  # [B, T, d]: each word's vector + its place's
        mixed, alpha1 = self.layer_1(F.layer_norm(x0, (D_MODEL,)), mask=mask, fast=fast)  # [B, T, d]
        return x0 + mixed, alpha1  # [B, T, d]: every word, now mixed with what it looked at


class Fetch(Model):
    """The lesson's model: layer 2 is a fetch. Only "it" asks; every word answers with its own
    unit vector u_j; the answer is the word pointing most the same way as what "it" fetched."""

    def __init__(self):
        super().__init__()
        self.W_Q = nn.Linear(D_MODEL, D_MODEL, bias=False)  # layer 2's W_Q: "it"'s query
        self.W_K = nn.Linear(D_MODEL, D_MODEL, bias=False)  # layer 2's W_K: every word's key

    def forward(self, tokens, hide_adjective=False, fast=False):
        """tokens [B, T] -> the score of every word as the answer to "what is it?" [B, N_WORDS];
        layer 1's weights [B, HEADS_1, T, T]; layer 2's, of "it" only, [B, T]. fast: torch's
        own F.scaled_dot_product_attention in both layers (the same scores; no weights, None)."""
        mask = key_mask(hide_adjective)  # [1, T]
        x1, alpha1 = self.first_layer(tokens, mask, fast)
        h1 = F.layer_norm(x1, (D_MODEL,))  # [B, T, d]
        u = unit_words(self.E.weight)  # [N_WORDS, d]
        q_it = split_heads(self.W_Q(h1[:, IT_AT:IT_AT + 1]), 1)  # [B, 1, 1, d]: only "it" asks
        K = split_heads(self.W_K(h1), 1)  # [B, 1, T, d]
        V = split_heads(F.embedding(tokens, u), 1)  # [B, 1, T, d]: u_j, word j's unit vector
        if fast:  # torch's fused kernel (its boolean mask marks the keys that take part: the opposite of M's)
            fetched, alpha2 = F.scaled_dot_product_attention(q_it, K, V, attn_mask=~mask), None
        else:
            fetched, alpha2 = attention(q_it, K, V, mask)  # [B, 1, 1, d], [B, 1, 1, T]
        scores = SHARPNESS * fetched[:, 0, 0] @ u.T  # [B, N_WORDS]
        return scores, alpha1, None if fast else alpha2[:, 0, 0]


class Usual(Model):
    """The usual layer 2 in place of the fetch (for Week 1, section 2's caution): "it" asks as
    before, but every word answers with a value from its mixed vector, V = LN(x1) W_V; what "it"
    fetched goes through W_O onto its own vector (the residual), and an output layer of its
    own reads the answer."""

    def __init__(self):
        super().__init__()
        self.layer_2 = MultiHeadAttention(D_MODEL, 1, bias=False)  # W_Q, W_K drawn as the fetch's; W_V, W_O
        self.W_out = nn.Linear(D_MODEL, N_WORDS, bias=False)  # the output layer [d, N_WORDS]

    def forward(self, tokens, hide_adjective=False, fast=False):
        """As Fetch.forward: scores [B, N_WORDS], layer 1's weights, "it"'s layer-2 weights [B, T]."""
        mask = key_mask(hide_adjective)  # [1, T]
        x1, alpha1 = self.first_layer(tokens, mask, fast)
        h1 = F.layer_norm(x1, (D_MODEL,))  # [B, T, d]
        fetched, alpha2 = self.layer_2(h1[:, IT_AT:IT_AT + 1], h1, mask=mask, fast=fast)  # [B, 1, d], [B, 1, 1, T]
        x2 = x1[:, IT_AT] + fetched[:, 0]  # [B, d]: "it" after layer 2
        return self.W_out(F.layer_norm(x2, (D_MODEL,))), alpha1, None if fast else alpha2[:, 0, 0]


def build_model(seed, usual=False):
    """The model, its starting weights drawn from torch.manual_seed(seed) in the model's order:
    E and P ~ N(0, 1), every matrix ~ N(0, 1/d). usual: the Usual model, whose weights shared
    with the fetch (E, P, layer 1, layer 2's W_Q and W_K) come first, so they are drawn alike."""
    model = Usual() if usual else Fetch()
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, w in model.named_parameters():
            w.normal_(0, 1 if name in ("E.weight", "P") else 1 / math.sqrt(D_MODEL))
    return model


def train(seed, data, hide_adjective=False, usual=False):
    """Train from scratch on the training batches of data (from make_data): Adam on the
    cross-entropy of the scores. Returns the model. usual: the model with the usual layer 2."""
    train_tokens, train_labels = data[:2]
    model = build_model(seed, usual)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    with Progress("training step" + " (the usual layer 2)" * usual, len(train_tokens)) as progress:
        for step, (tokens, labels) in enumerate(zip(train_tokens, train_labels, strict=True), 1):
            scores, _, _ = model(tokens, hide_adjective)
            loss = F.cross_entropy(scores, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            progress.update(step)
    return model


def lesson(args):
    """The data, the model, its training; then what it learned, the page's sentence and the verdict."""
    torch.set_num_threads(1)  # tiny matrices: one thread is quickest (notes)
    print("The classic puzzle: \"The chicken didn't cross the road because it was too tired.\" What is it?")
    print("The page's Try it: tired -> it leans on chicken; wide -> road. Same sentence, context decides.")
    print("Here a tiny model learns it from scratch and is tested on sentences it never saw.")
    data = make_data(args.seed, args.steps, args.labels)  # the training batches, the held-out sentences
    held_tokens, held_labels = data[2:]  # [96, T], and the noun "it" means in each [96]
    leaks = show_data(data, args.labels)
    show_model(args)
    model = train(args.seed, data, args.hide_adjective)
    show_against_torch(model, held_tokens, args.hide_adjective)
    n_right, kinds = show_held_out(model, data, args.hide_adjective)

    # the page's Try it: tired -> it leans on chicken; wide -> road
    shown, page_lines = show_page_sentence(model, args.adjectives, args.hide_adjective)
    verdict(args.adjectives, leaks, n_right, len(held_tokens), kinds, page_lines)

    # two of Week 1's claims, in this model
    usual = train(args.seed, data, args.hide_adjective, usual=True)
    show_usual_layer(n_right, kinds, evaluate(usual, held_tokens, held_labels, args.hide_adjective))
    show_layer_1(model, args.adjectives[0], args.hide_adjective)
    print(save_figure(plot(shown), figure_path(args, FIGURE)))
    return model


def show_data(data, labels):
    """The sentences, the held-out pairs, and the check that none of them is trained on."""
    train_tokens, train_labels, held_tokens, _ = data
    print("\nmade-up sentences: \"the ANIMAL didn't cross the PLACE because it was too ADJECTIVE\"")
    print(f"  {len(ANIMALS)} animals: {' '.join(ANIMALS)}")
    print(f"  {len(PLACES)} places:  {' '.join(PLACES)}")
    print(f"  {len(FITS_ANIMAL)} adjectives that fit only an animal: {' '.join(FITS_ANIMAL)}")
    print(f"  {len(FITS_PLACE)} adjectives that fit only a place:   {' '.join(FITS_PLACE)}")
    print(f"  {len(ANIMALS)} x {len(PLACES)} noun pairs x {len(ADJECTIVES)} adjectives = "
          f"{len(ANIMALS) * len(PLACES) * len(ADJECTIVES)} sentences. These {len(HELD_OUT_PAIRS)} pairs never "
          "occur in training:")
    print(f"    {' '.join('/'.join(pair) for pair in HELD_OUT_PAIRS)}")
    print(f"  (their {len(held_tokens)} sentences are the test); each of their words does, in its other pairs")
    leaks = trained_on(train_tokens, held_tokens)
    print(f"  held-out sentences among the {train_tokens.shape[0] * BATCH:,} sentences of the training batches: "
          f"{leaks}")
    record("no held-out sentence is trained on", leaks == 0, value=leaks, threshold="0")
    print("  what this test shows: a pair never seen together still gets its right noun, so no answer")
    print("  was learned by heart. What it cannot show: how \"it\" finds the noun, since the animal is")
    print(f"  always word {ANIMAL_AT + 1} and the place word {PLACE_AT + 1}, in training and test alike")
    print(f"  the first training sentence: {' '.join(VOCAB[t] for t in train_tokens[0, 0].tolist())} -> "
          f"it = {VOCAB[train_labels[0, 0]]}")
    if labels == "random":
        share = animal_shares(train_tokens, train_labels)
        print("  --labels random: each training sentence's answer is one of its two nouns, by a coin toss: for")
        print(f"  each adjective the animal in {share.min():.0%} to {share.max():.0%} of its sentences, so the "
              "adjective gives no hint")
    print(f"  the answer is a word: at \"it\" the model gives a score to each of the {N_WORDS} words it knows, so "
          "to")
    print("  answer it must fetch the noun (the adjective alone says only \"an animal\" or \"a place\")")
    return leaks


def show_model(args):
    n_weights = n_params(build_model(args.seed))
    print(f"\nmodel: two attention layers and nothing else (no feed-forward network); {n_weights:,} numbers to learn")
    print(f"  every word is a row of {D_MODEL} numbers (d_model = {D_MODEL}): its word's vector plus its place's")
    print(f"  layer 1 ({HEADS_1} heads): every word looks at every word, so the adjective after \"it\" can reach it")
    print("    (no causal mask: the page's \"a word can only look back\" is a decoder's rule; a reader of")
    print("    the whole sentence, like this one, may look both ways)")
    print("  layer 2 (1 head): \"it\" looks again and fetches a word; the answer is the word whose vector")
    print("    points most the same way as what it fetched")
    print(f"training: {args.steps} steps, each on {BATCH} training sentences, Adam with learning rate {LR}")
    if args.hide_adjective:
        print("--hide-adjective: no word may look at the adjective, in either layer")


def show_against_torch(model, held_tokens, hide):
    gap = by_hand_vs_torch(model, held_tokens, hide)
    print("\nthe attention by hand, softmax(Q K^T / sqrt(d_k) + M) V in both layers, against torch's")
    print("F.scaled_dot_product_attention: the held-out sentences' scores, with the trained weights in float64:")
    print(f"max |by hand - torch|={gap:.8f}")
    record("attention by hand is torch's", gap <= AGREE, value=gap, threshold=f"at most {AGREE:g}")


def show_held_out(model, data, hide):
    """How many held-out answers are right, and where "it" looks in layer 2, by kind of adjective."""
    final = evaluate(model, *data[2:], hide)  # the held-out sentences: never in a training batch
    n_held, n_right, kinds = len(data[2]), int(final["right"].sum()), looks_by_kind(final)
    print(f"\nOn the {n_held} held-out sentences (noun pairs it never saw):")
    right = measured("held-out answers right", n_right >= ACCURATE * n_held, f"{n_right}/{n_held}",
                     f"at least {ACCURATE:.0%} of {n_held}", value=n_right)
    print(f"  \"what is it?\" answered with the noun it means: {right}")
    print(f"  where \"it\" looks in layer 2 (it has one head, so nothing is averaged), among all {T} words:")
    for kind, words in (("animal", FITS_ANIMAL), ("place", FITS_PLACE)):
        looking, of = kinds[kind]
        print(f"    {kind} adjectives ({', '.join(words[:2])}, ...):")
        counted = measured(f"held-out, {kind} adjectives: it looks hardest at the {kind}", looking >= LOOKS * of,
                           f"{looking}/{of}", f"at least {LOOKS:.0%} of {of}", value=looking)
        print(f"      held-out sentences where \"it\" looks hardest at the noun it means: {counted}")
    print("  why this picture is the mechanism here: layer 2 is built as a fetch (\"it\" hands on only the")
    print("  words it looks at, and the answer is the word it fetched), so looking is the only road to the")
    print("  answer. In the usual layer (values mixed by layer 1, W_V, W_O, a residual, an output layer)")
    print("  the answer has other roads, and where \"it\" looks need not show where it came from (run below).")
    return n_right, kinds


def show_page_sentence(model, adjectives, hide):
    """The page's sentence with each adjective: "it"'s layer-2 attention as bars, and each
    Try it line's verdict. Returns [(words, weights, answer)] and the verdicts."""
    animal, place = PAGE
    first, second = adjectives
    print(f"\nThe page's sentence (the pair {animal}/{place} never occurred in training), word by word:")
    shown = [(words, *it_attention(model, words, hide)) for words in
             (sentence_words(animal, place, adjective) for adjective in adjectives)]
    print("  \"it\"'s attention in layer 2 (# = a tenth of it, ######### = 0.9 or more, . = less than 0.1):")
    print(f"    {'':13} {'too ' + first:13} {'too ' + second}")
    for i, word in enumerate(shown[0][0]):
        cells = [bar(weights[i]) for _, weights, _ in shown]
        if i == ADJECTIVE_AT:
            word = f"{first}/{second}"
            cells = ["(hidden)"] * 2 if hide else cells
        print(f"    {word:13} {cells[0]:13} {cells[1]}".rstrip())
    page_lines = []
    for adjective, (words, weights, answer) in zip(adjectives, shown, strict=True):
        line, holds = page_verdict(adjective, words, weights, answer)
        want = meant(adjective, animal, place)
        if holds:
            print(f"  {line}: as the page says")
        else:
            print(f"  {line}: not as the page says (the page: it leans on {want})")
        record(f"the page's sentence with too {adjective}", holds, value=weights[words.index(want)],
               threshold=f"more than {LEANS} of its attention on {want}, and the answer {want}")
        page_lines.append(holds)
    return shown, page_lines


def verdict(adjectives, leaks, n_right, n_held, kinds, page_lines):
    """Same sentence, context decides: every count above its threshold and both page lines;
    not tested when both adjectives mean the same noun."""
    first, second = adjectives
    animal, place = PAGE
    looks = " and ".join(f"{looking}/{of}" for looking, of in kinds.values())
    page = ", ".join(f"{a} -> {meant(a, animal, place)}" for a in adjectives)
    numbers = f"held-out: {n_right}/{n_held} right; {looks} looking hardest at the noun; {page}"
    if meant(first, animal, place) == meant(second, animal, place):
        print(f"Verdict: not tested at these settings: \"too {first}\" and \"too {second}\" both mean the "
              f"{meant(first, animal, place)},\n  so the context never changes (give one adjective of each kind)")
        record("same sentence, context decides", None, value=numbers)
        return
    why = ";\n  ".join(reasons(leaks, n_right, n_held, kinds, page_lines))  # one reason a line
    if not why:
        print(f"Verdict: {said(True)}: same sentence, context decides (held-out: at least {ACCURATE:.0%} right;\n"
              f"  \"it\" looking hardest at the noun in at least {LOOKS:.0%} of each kind; {page})")
    else:
        print(f"Verdict: {said(False)} ({why})")
    record("same sentence, context decides", not why, value=numbers,
           threshold=f"no held-out sentence trained on, {ACCURATE:.0%} right, {LOOKS:.0%} of each kind looking "
           "at the noun, both page lines")


def show_usual_layer(n_right, kinds, usual):
    """Week 1, section 2, Mistakes: the usual layer 2 beside the fetch (usual: evaluate() of the
    model trained with it), and the verdict on the caution: right answers without the look."""
    n_held = len(usual["right"])
    looking = sum(looking for looking, _ in kinds.values())
    usual_right, usual_looking = int(usual["right"].sum()), sum(n for n, _ in looks_by_kind(usual).values())
    print("\nWeek 1, section 2, \"Mistakes people make\": \"A weight is a learned soft alignment, not a")
    print("guaranteed explanation of why the model decided something.\" The same training with the usual")
    print("layer 2 in place of the fetch (values mixed by layer 1, W_V, W_O, a residual, an output layer of")
    print(f"its own), on the {n_held} held-out sentences:")
    print(f"  {'':40} {'layer 2, the fetch':20} the usual layer 2")
    rows = (("answered right", n_right, usual_right, f"at least {ACCURATE:.0%} of {n_held}",
             usual_right >= ACCURATE * n_held),
            ("\"it\" looks hardest at the noun it means", looking, usual_looking, f"fewer than {LOOKS:.0%} of {n_held}",
             usual_looking < LOOKS * n_held))
    for label, fetch_count, usual_count, threshold, holds in rows:
        fetch = measured(f"the fetch: {label}", None, f"{fetch_count}/{n_held}", value=fetch_count,
                         why="the fetch's count, judged above (by kind of adjective for the looks); repeated beside "
                         "the usual layer's")
        theirs = measured(f"the usual layer 2: {label}", holds, f"{usual_count}/{n_held}", threshold,
                          value=usual_count)
        print(f"  {label:40} {fetch:20} {theirs}")
    # The caution needs right answers to explain: a usual layer that answers wrong tests nothing.
    holds = None if usual_right < ACCURATE * n_held else usual_looking < LOOKS * n_held
    if holds is None:
        print(f"Verdict: not tested: the usual layer answers fewer than {ACCURATE:.0%} right here, so there are no\n"
              "  right answers for a weight to explain")
    else:
        print(f"Verdict: a weight is no guaranteed explanation: the usual layer answers right while \"it\" looks\n"
              f"  hardest at the noun it means in fewer than {LOOKS:.0%} of them: {said(holds)}")
    record("a weight is not a guaranteed explanation", holds,
           value=f"the usual layer 2: {usual_right}/{n_held} right, {usual_looking}/{n_held} looking hardest at the "
           "noun",
           threshold=f"the usual layer 2: at least {ACCURATE:.0%} right, fewer than {LOOKS:.0%} looking hardest at "
           "the noun it means")


def show_layer_1(model, adjective, hide):
    """Week 1, section 5's example, in this model: layer 1's heads at "it" in the page's sentence,
    on the noun it means and on the adjective, and the most one head puts on the adjective; which
    head reads the adjective is not judged (it changes with the seed)."""
    words = sentence_words(*PAGE, adjective)
    noun = meant(adjective, *PAGE)
    with torch.no_grad():
        alpha1 = model(encode(words)[None], hide)[1][0, :, IT_AT]  # [HEADS_1, T]: "it"'s rows
    print("\nWeek 1, section 5: \"one links 'it' to 'animal', another links 'it' to 'tired'\". Here \"it\" finds")
    print(f"the noun through layer 2's one head (above). Layer 1's {HEADS_1} heads at \"it\", in the page's sentence")
    print(f"with too {adjective} (# = a tenth of the head's weight, . = less than 0.1):")
    print(f"    {'':10} " + " ".join(f"head {h + 1:<5}" for h in range(HEADS_1)).rstrip())
    for word, at in ((noun, words.index(noun)), (adjective, ADJECTIVE_AT)):
        print(f"    {word:10} " + " ".join(f"{bar(w):10}" for w in alpha1[:, at].tolist()).rstrip())
    most = alpha1[:, ADJECTIVE_AT].max().item()
    shown = measured("layer 1: another head links it to the adjective", None, f"{most:.2f}", value=most,
                     why="shown, not judged: which head reads the adjective, and how hard, changes with the seed")
    print(f"  the most one head puts on \"{adjective}\" here: {shown}")
    print(f"  Which layer-1 head, if any, links \"it\" to \"{adjective}\" changes with the seed (measured over seeds:")
    print("  week1/NOTES.md, section 15), so no claim about it is judged here.")


# ---------------------------------------------------------------- optional: data, measures, verdicts, Try it, the views

def sentence_words(animal, place, adjective):
    """The sentence as a list of its 11 words."""
    return TEMPLATE.format(animal=animal, place=place, adjective=adjective).split()


def encode(words):
    """Words -> token ids [len(words)]."""
    return torch.tensor([ID[word] for word in words])


def meant(adjective, animal, place):
    """The noun "it" means: the animal if the adjective fits only an animal, else the place."""
    return animal if adjective in FITS_ANIMAL else place


def all_sentences():
    """Every sentence of the template: token ids [768, T], the noun "it" means as a word id
    [768], and which are held out [768] (their noun pair never occurs in training)."""
    rows, labels, held = [], [], []
    for animal in ANIMALS:
        for place in PLACES:
            for adjective in ADJECTIVES:
                rows.append([ID[w] for w in sentence_words(animal, place, adjective)])
                labels.append(ID[meant(adjective, animal, place)])
                held.append((animal, place) in HELD_OUT_PAIRS)
    return torch.tensor(rows), torch.tensor(labels), torch.tensor(held)


def make_data(seed, steps, labels="meaning"):
    """The training batches and the held-out sentences.

    Returns (train_tokens [steps, BATCH, T], train_labels [steps, BATCH], held_tokens [96, T],
    held_labels [96]). Each batch is drawn with replacement from the 672 training sentences
    (--steps 30 is the first 30 batches of the default run). labels="random": each training
    sentence's label is one of its two nouns by a coin toss (drawn once per sentence, before
    the batches, so the batches are the same ones), so the adjective carries no hint; the
    held-out labels stay the true meaning."""
    tokens, meaning, held = all_sentences()
    rng = np.random.default_rng(seed)
    coin = torch.from_numpy(rng.integers(0, 2, len(tokens)))  # drawn at either --labels: the same batches
    label = torch.where(coin == 0, tokens[:, ANIMAL_AT], tokens[:, PLACE_AT]) if labels == "random" else meaning
    train_tokens, train_labels = tokens[~held], label[~held]
    picks = torch.from_numpy(rng.integers(0, len(train_tokens), size=(steps, BATCH)))
    return train_tokens[picks], train_labels[picks], tokens[held], meaning[held]


def trained_on(train_tokens, tokens):
    """How many of the sentences tokens [N, T] occur in the training batches [steps, BATCH, T]."""
    batches = set(map(tuple, train_tokens.reshape(-1, T).tolist()))
    return sum(row in batches for row in map(tuple, tokens.tolist()))


def animal_shares(train_tokens, train_labels):
    """For each adjective: the share of its training sentences whose answer is the animal
    ([len(ADJECTIVES)]). 1 or 0 under --labels meaning; about half under --labels random,
    where the answer is a coin toss per sentence and the adjective says nothing about it."""
    tokens, labels = train_tokens.reshape(-1, T), train_labels.reshape(-1)
    animal = (labels == tokens[:, ANIMAL_AT]).double()
    return torch.stack([animal[tokens[:, ADJECTIVE_AT] == ID[a]].mean() for a in ADJECTIVES])


@torch.no_grad()
def by_hand_vs_torch(model, tokens, hide_adjective=False):
    """max |by hand - torch| over the scores on tokens [N, T]: the model with common's plain
    attention, softmax(Q K^T / sqrt(d_k) + M) V, in both layers, against the same model through
    torch's F.scaled_dot_product_attention (fast=True); the trained weights in float64 (rounding
    then stays near 1e-14 on every CPU; a dropped 1/sqrt(d_k) moves it by 1e-3 or more)."""
    model64 = copy.deepcopy(model).double()
    mine, theirs = (model64(tokens, hide_adjective, fast=fast)[0] for fast in (False, True))
    return (mine - theirs).abs().max().item()


@torch.no_grad()
def evaluate(model, tokens, labels, hide_adjective=False):
    """On sentences tokens [N, T] whose "it" means labels [N]: which are answered right, which
    have "it" looking hardest (layer 2) at the noun it means, and the margins: the right
    word's score minus the best other word's, and the weight on the noun minus the largest
    other weight (both > 0 when right)."""
    scores, _, alpha2 = model(tokens, hide_adjective)  # alpha2 [N, T]: "it"'s row of layer 2
    right_score = scores.gather(1, labels[:, None])[:, 0]
    score_margin = right_score - scores.scatter(1, labels[:, None], -math.inf).max(-1).values
    noun_at = torch.where(labels == tokens[:, ANIMAL_AT], ANIMAL_AT, PLACE_AT)
    on_noun = alpha2.gather(1, noun_at[:, None])[:, 0]
    look_margin = on_noun - alpha2.scatter(1, noun_at[:, None], -1.0).max(-1).values
    animal = torch.isin(tokens[:, ADJECTIVE_AT], encode(FITS_ANIMAL))
    return {"right": score_margin > 0, "looks": look_margin > 0, "animal": animal, "top": alpha2.argmax(-1),
            "score_margin": score_margin, "look_margin": look_margin}


def looks_by_kind(final):
    """From evaluate(): for the sentences with an animal adjective, in how many "it" looks
    hardest at the animal, and for those with a place adjective, at the place:
    {kind: (sentences where it does, sentences of that kind)}."""
    return {kind: (int((final["top"][rows] == at).sum()), int(rows.sum()))
            for kind, rows, at in (("animal", final["animal"], ANIMAL_AT), ("place", ~final["animal"], PLACE_AT))}


@torch.no_grad()
def it_attention(model, words, hide_adjective=False):
    """"it"'s layer-2 attention over the words of one sentence (T weights summing to 1), and
    the model's answer, a word."""
    scores, _, alpha2 = model(encode(words)[None], hide_adjective)
    return alpha2[0].tolist(), VOCAB[int(scores[0].argmax())]


def leans_on(words, weights):
    """The word that gets more than LEANS (2/3) of "it"'s attention, or None."""
    top = int(np.argmax(weights))
    return words[top] if weights[top] > LEANS else None


def page_verdict(adjective, words, weights, answer):
    """One line of the Try it box, computed, e.g. 'tired -> it leans on chicken (...)' (the
    model's answer on a second line), and whether it is the page's: "it" leans on the noun
    the adjective fits, and that noun is the model's answer."""
    want = meant(adjective, words[ANIMAL_AT], words[PLACE_AT])
    on = leans_on(words, weights)
    holds = on == want and answer == want
    where = (f"it leans on {on} (more than {LEANS} of its attention)" if on else
             f"it leans on no word (none gets more than {LEANS} of its attention)")
    return f"{adjective} -> {where};\n    the model answers \"{answer}\"", holds


def reasons(leaks, n_right, n_held, kinds, page_lines):
    """Why the page's picture fails, in words (empty: it holds): a held-out sentence trained
    on; fewer than ACCURATE of the held-out answers right; fewer than LOOKS of either kind
    of sentence (kinds: looks_by_kind()) with "it" looking hardest at the noun it means;
    or a line of the page's sentence not as the page says (page_lines: their verdicts)."""
    why = [f"{leaks} held-out sentences were trained on"] if leaks else []
    why += [f"fewer than {ACCURATE:.0%} of the held-out answers right"] if n_right < ACCURATE * n_held else []
    why += [f"\"it\" looks hardest at the noun it means in fewer than {LOOKS:.0%} of them"
            ] if any(looking < LOOKS * of for looking, of in kinds.values()) else []
    return why + (["the page's sentence not as the page says"] if not all(page_lines) else [])


def bar(weight):
    """A weight as a bar of its whole tenths, up to 9: 0.83 -> '########', 0.07 -> '.',
    0.9 to 1 -> '#########'. Whole tenths, not rounded ones: a trained "it" puts about 0.95
    to 1 on one word, and rounding would split those between 9 and 10 tenths, CPU by CPU."""
    return "#" * min(9, math.floor(10 * weight)) or "."


FIGURE = REPO_ROOT / "build" / "figures" / "week1" / "context_decides.png"


def draw_sentence(ax, words, weights, answer):
    """One sentence in the classic picture: its words twice, and a line from "it" (left) to
    every word (right), as thick and as dark as "it"'s layer-2 weight on that word; the word
    it looks at hardest in red."""
    top, n = int(np.argmax(weights)), len(words)
    for i, (word, weight) in enumerate(zip(words, weights, strict=True)):
        y = n - 1 - i  # the first word at the top
        ax.text(0, y, word, ha="right", va="center", fontsize=11,
                fontweight="bold" if i in (IT_AT, ADJECTIVE_AT) else "normal",
                color="tab:green" if i == ADJECTIVE_AT else "black")
        ax.text(1, y, word, ha="left", va="center", fontsize=11, fontweight="bold" if i == top else "normal",
                color="tab:red" if i == top else "black")
        ax.text(1.85, y, f"{weight:.2f}", ha="right", va="center", fontsize=9, color="dimgray")
        ax.plot([0.05, 0.95], [n - 1 - IT_AT, y], color="tab:blue", label=word, solid_capstyle="round",
                linewidth=0.3 + 8 * weight, alpha=min(1.0, 0.08 + weight))
    ax.set_xlim(-0.75, 1.9)
    ax.set_ylim(-0.7, n - 0.3)
    ax.axis("off")
    ax.set_title(f"\"... because it was too {words[ADJECTIVE_AT]}\"\n\"it\" looks hardest at {words[top]}; "
                 f"the model answers \"{answer}\"", fontsize=11)


def plot(sentences):
    """The classic picture for each of sentences: [(words, weights, answer)], side by side."""
    fig, axes = plt.subplots(1, len(sentences), figsize=(5.2 * len(sentences), 5.4), layout="constrained")
    for ax, sentence in zip(np.atleast_1d(axes), sentences, strict=True):
        draw_sentence(ax, *sentence)
    fig.suptitle("Where \"it\" looks in layer 2 (lines as thick as its weights; the pair chicken/road was "
                 "never trained on)", fontsize=11)
    return fig


def live_view(model, hide_adjective, adjective):
    """An adjective picker and a noun-pair picker (the held-out pairs): "it"'s layer-2
    attention in the classic picture (draw_sentence's), changed in place for each choice. It
    opens as the printed run's page sentence, with `adjective` (its first), the adjective
    hidden if the run hid it."""
    from common.live import Blit, View  # the Try it view, loaded only for --live

    from matplotlib.widgets import RadioButtons

    fig = plt.figure(figsize=(11, 6.5))
    ax = fig.add_axes((0.05, 0.05, 0.55, 0.82))
    pairs = ["/".join(p) for p in HELD_OUT_PAIRS]
    pair_picker = RadioButtons(fig.add_axes((0.63, 0.4, 0.16, 0.45)), pairs, active=pairs.index("/".join(PAGE)),
                               useblit=False)  # the window's Blit draws the buttons
    adjective_picker = RadioButtons(fig.add_axes((0.82, 0.1, 0.14, 0.75)), ADJECTIVES,
                                    active=ADJECTIVES.index(adjective), useblit=False)
    pair_picker.ax.set_title("noun pair\n(never trained on)", fontsize=10)
    adjective_picker.ax.set_title("adjective", fontsize=10)
    fig.suptitle("Pick the adjective: where \"it\" looks moves with it" +
                 (" (--hide-adjective: no word may look at it)" if hide_adjective else ""), fontsize=12)
    words = sentence_words(*PAGE, adjective)
    draw_sentence(ax, words, *it_attention(model, words, hide_adjective))
    left, right, numbers = ax.texts[0::3], ax.texts[1::3], ax.texts[2::3]  # draw_sentence's three per word
    blit = Blit(fig)
    blit.add(pair_picker, adjective_picker, *(left[i] for i in (ANIMAL_AT, PLACE_AT, ADJECTIVE_AT)), *right,
             *numbers, *ax.lines, ax.title)  # all but the words that never change

    def update(_):  # draw_sentence's picture, changed in place
        animal, place = pair_picker.value_selected.split("/")
        words = sentence_words(animal, place, adjective_picker.value_selected)
        weights, answer = it_attention(model, words, hide_adjective)
        top = int(np.argmax(weights))
        for i, (word, weight) in enumerate(zip(words, weights, strict=True)):
            left[i].set_text(word)
            right[i].set(text=word, fontweight="bold" if i == top else "normal",
                         color="tab:red" if i == top else "black")
            numbers[i].set_text(f"{weight:.2f}")
            ax.lines[i].set(linewidth=0.3 + 8 * weight, alpha=min(1.0, 0.08 + weight))
        ax.set_title(f"\"... because it was too {words[ADJECTIVE_AT]}\"\n\"it\" looks hardest at {words[top]}; "
                     f"the model answers \"{answer}\"", fontsize=11)
        blit.update()

    pair_picker.on_clicked(update)
    adjective_picker.on_clicked(update)
    return View(fig, {"pair": pair_picker, "adjective": adjective_picker}, blit)


DESCRIPTION = ("A tiny two-layer attention model learns on the CPU, in about a second, what \"it\" means in \"the "
               "chicken didn't cross the road because it was too tired\", and is tested on sentences it never saw "
               "(ELI5 page \"One block: mix, then think\", the classic puzzle and its Try it box).")
KNOBS = [knob("--steps", type=int_range(1, 400), default=STEPS, help="training steps"),
         knob("--seed", type=SEED, default=42, help="seed of the starting weights and training batches"),
         knob("--adjectives", nargs=2, metavar=("ADJ", "ADJ"), choices=ADJECTIVES, default=["tired", "wide"],
              help=f"the two adjectives tried in the page's sentence, any of: {' '.join(ADJECTIVES)}"),
         knob("--labels", choices=["meaning", "random"], default="meaning",
              help="the training answers: the noun the adjective fits (meaning), or one of the two nouns by a "
              "coin toss (random)"),
         knob("--hide-adjective", action="store_true",
              help="no word may look at the adjective, in either layer (hiding it from \"it\" alone is not "
              "enough: another word reads it and passes it on)")]
TRY_IT = [("--adjectives scared busy", "other adjectives in the page's sentence: it leans on chicken, then on road"),
          ("--seed 7", "other starting weights and other training batches: the same verdicts"),
          ("--hide-adjective", "no word may look at the adjective: \"it\" cannot tell tired from wide, gives the "
           "same answer to both, and gets half the held-out sentences wrong"),
          ("--labels random", "trained on answers drawn at random, the adjective carries no hint: about half the "
           "held-out answers are wrong (how many depends on the CPU)"),
          ("--steps 10", "stopped too early: not learned yet (how far it got depends on the CPU)")]
FIGURE_HELP = ("where to save the figure (a default run saves it in build/figures/week1/, as its pixels depend on "
               "the CPU; the README's copy is week1/figures/context_decides.png)")
LIVE = "pick the adjective and the noun pair: where \"it\" looks, and the answer"


LESSON = Lesson(__file__, page=("eli5", 1), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT,
                figure=FIGURE_HELP, live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    model = lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, model, args.hide_adjective, args.adjectives[0])


if __name__ == "__main__":
    run(main)
