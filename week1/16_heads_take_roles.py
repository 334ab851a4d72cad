"""Heads take roles: trained from scratch, one looks at the word just before, another at the (first) noun.

Page: ELI5 Part 3 "One block: mix, then think", section "Many heads at once": "One pass catches
one kind of relationship. So a block runs several in parallel, each tuned to something
different. Try it: Head 1 looks at the previous word, Head 2 at the nouns. The block blends
them all." Week 1, section 5: MHA(X) = Concat(H_1, ..., H_h) W^O.

    x = E[word] + PE(p)                                   (word vector + sinusoidal position tag)
    head i:  H_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i (M: -inf on later words, the causal mask)
    z = x + Concat(H_1, ..., H_h) W_O                     (the heads side by side, blended by W_O)
    read-outs: z R_a, z R_b                               (a score per word for each blank)

At every word of made-up sentences the model fills two blanks: (a) the word just before me,
(b) the first noun so far. Prints, at held-out words, in the page's order: the blanks filled
right; one head beside two and four; where each head looks, and its role; what knocking out
each head breaks; then Week 1 section 5's caution, with four heads. Saves a figure.
Setup (the page trains nothing): one layer of causal self-attention, 2 heads, d_model 32, no
FFN or LayerNorm; 200 steps of torch.optim.Adam, its rate falling linearly to 0, on 64 fresh
sentences each. Notes: week1/NOTES.md, section 16.
"""
import copy
import math
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import REPO_ROOT, run
from common.blocks import attention, causal_mask, join_heads, sinusoidal_pe, split_heads
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.printing import n_params
from common.progress import Progress
from common.records import measured, record, said

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D_MODEL = 32  # d_model, numbers per word
HEADS = 2  # h, heads (d_k = d_model / h)
T_MAX = 17  # the longest sentence: two clauses of 8 words and "and"
KINDS = {"det": ["the", "a"], "adj": ["big", "small", "red", "old"],  # the made-up sentences' words, by kind
         "noun": ["cat", "dog", "fox", "bird", "fish", "hat", "box", "mat"],
         "verb": ["saw", "sat", "ran", "ate"], "prep": ["on", "by"], "and": ["and"]}
PAD = 0  # the word id of <pad>, after a sentence's end
WORDS = ["<pad>"] + [word for kind in ("det", "adj", "verb", "prep", "and", "noun") for word in KINDS[kind]]
N_WORDS = len(WORDS)  # 22 with <pad>: a word's id is its place in WORDS
IS_NOUN = torch.tensor([word in KINDS["noun"] for word in WORDS])  # [N_WORDS]
PE = sinusoidal_pe(T_MAX, D_MODEL)  # [T_MAX, d]: the position tags (Week 2 section 5), sliced to a sentence's length


class OneLayer(nn.Module):
    """One layer of causal multi-head self-attention, added to the word's own vector, then a
    read-out per blank. The weights as the page writes them, each used as x W (row vectors):
    E [N_WORDS, d]; W_Q, W_K, W_V, W_O [d, d]; R_a, R_b [d, N_WORDS]."""

    def __init__(self, heads, d=D_MODEL):
        super().__init__()
        self.heads = heads
        self.E = nn.Parameter(torch.randn(N_WORDS, d))  # word vectors ~ N(0, 1)
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Parameter(torch.randn(d, d) / math.sqrt(d)) for _ in range(4))
        self.R_a, self.R_b = (nn.Parameter(torch.randn(d, N_WORDS) / math.sqrt(d)) for _ in range(2))

    def embed(self, tokens):
        """x = E[word] + PE(p): [B, T] word ids -> [B, T, d]."""
        return F.embedding(tokens, self.E) + PE[:tokens.shape[1]]

    def self_attention(self, x, fast=False):
        """Concat(H_1, ..., H_h) W_O of x [B, T, d]: [B, T, d], and the weights A [B, h, T, T]
        (None if fast: torch's F.scaled_dot_product_attention, which a test holds to the formula)."""
        B, T, d = x.shape
        Q = split_heads(x @ self.W_Q, self.heads)  # [B, h, T, d_k]
        K = split_heads(x @ self.W_K, self.heads)  # [B, h, T, d_k]
        V = split_heads(x @ self.W_V, self.heads)  # [B, h, T, d_k]
        if fast:  # torch's fused kernel: the same H, no weights kept
            H, A = F.scaled_dot_product_attention(Q, K, V, is_causal=True), None
        else:  # the page's formula, every head at once: H [B, h, T, d_k], A [B, h, T, T]
            H, A = attention(Q, K, V, mask=causal_mask(T))  # softmax(Q K^T / sqrt(d_k) + M) V
        concat = join_heads(H)  # [B, T, d]: [head 1 | head 2 | ...]
        return concat @ self.W_O, A  # [B, T, d]: row r of W_O is what number r of concat adds

    def forward(self, tokens, fast=False):
        """Scores for blank (a) and blank (b), [B, T, N_WORDS] each, and the weights A [B, h, T, T]."""
        x = self.embed(tokens)  # [B, T, d]
        out, A = self.self_attention(x, fast)
        z = x + out  # [B, T, d]: the residual, as on the page's block
        return z @ self.R_a, z @ self.R_b, A


# ---------------------------------------------------------------- the two blanks, and the training

NONE = -100  # "no answer here" (no word before, no noun yet, padding); the loss skips it
TASKS = {"both": ("a", "b"), "previous-only": ("a",), "noun-only": ("b",)}  # --task: the blanks trained
BATCH = 64  # fresh sentences per step
STEPS = 200  # training steps (with 150, one seed of 11 ended with two mixed heads)
LR = 0.02  # Adam's learning rate at step 1, falling linearly to 0


def answers(tokens):
    """The two blanks at every word of tokens [N, T]: (a) the word just before, (b) the
    first noun so far (this word included); NONE where there is no answer. Also where that
    first noun stands, [N, T] (T where there is none yet)."""
    N, T = tokens.shape
    pos = torch.arange(T)
    before = torch.cat([torch.full((N, 1), NONE), tokens[:, :-1]], dim=1)  # [N, T]
    first_at = torch.where(IS_NOUN[tokens], pos, T).cummin(dim=1).values  # [N, T]
    first = torch.where(first_at < T, tokens.gather(1, first_at.clamp(max=T - 1)), NONE)  # [N, T]
    real = tokens != PAD
    return before.masked_fill(~real, NONE), first.masked_fill(~real, NONE), first_at


def build_model(seed, heads):
    """The starting weights, from torch.manual_seed(seed): word vectors ~ N(0, 1), matrices ~ N(0, 1/d)."""
    torch.manual_seed(seed)
    return OneLayer(heads)


def loss_of(scores, blanks, task):
    """Cross-entropy of each blank the task asks for, added. scores: blank (a)'s and (b)'s
    [B, T, N_WORDS]; blanks: their answers [B, T]."""
    return sum(F.cross_entropy(s.reshape(-1, N_WORDS), answer.reshape(-1), ignore_index=NONE)
               for q, s, answer in zip("ab", scores, blanks, strict=True) if q in TASKS[task])


def train(seed, heads, task, stream):
    """From random weights (seed), one step of Adam per batch of stream [steps, BATCH, T], its
    learning rate LR at step 1 falling linearly to 0. Returns the model."""
    model = build_model(seed, heads)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    steps = len(stream)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: 1 - done / steps)  # LR (1 - done / steps)
    before, first, _ = (t.view(stream.shape) for t in answers(stream.view(-1, T_MAX)))  # [steps, BATCH, T]
    with Progress("training step", steps) as progress:
        for step, (tokens, a, b) in enumerate(zip(stream, before, first, strict=True), 1):
            scores_a, scores_b, _ = model(tokens)
            loss = loss_of((scores_a, scores_b), (a, b), task)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            progress.update(step)
    return model


# ---------------------------------------------------------------- the lesson, in the page's order

COMPARED = (1, 4)  # "One pass catches one kind": the same training with these numbers of heads too
MORE = 4  # the run with more heads than the task has jobs, for Week 1 section 5's caution
RIGHT = 0.80  # a blank is filled right above this share
WRONG = 0.50  # and broken below this one
ROLE = 0.5  # a head "looks at" X (its role): ROLE or more of its weight on X ...
LOW = 0.2  # ... and under LOW on the other look
AGREE = 1e-6  # the page's formula and torch's agree: float64 rounding is about 1e-16, a wrong formula 1e-2 or more


def lesson(args):
    """The task and the model; trained, the sections of "Many heads at once" in their order."""
    torch.set_num_threads(1)  # tiny matrices: a second thread only waits
    heads, task = args.heads, args.task
    stream, held = training_and_held_out(args.seed, args.steps)  # held: sentences never trained on
    seen = seen_in_training(held, stream)  # [N, T]: the words whose sentence so far was trained on
    k, i = example_sentence(held, seen)
    sentence = held[k][held[k] != PAD]
    show_task(sentence, i, task)
    show_model(args)
    models = {h: train(args.seed, h, task, stream) for h in sorted({heads, *COMPARED})}
    by_heads = {h: measure(model, held, seen) for h, model in models.items()}
    model, m = models[heads], by_heads[heads]
    show_against_torch(model, held)
    show_filled(m, task)
    # "One pass catches one kind of relationship."
    show_one_head(by_heads, heads, task)
    # "So a block runs several in parallel, each tuned to something different. Try it: Head 1 looks
    # at the previous word, Head 2 at the nouns."
    show_roles(m, heads)
    maps = attention_maps(model, sentence)  # [h, T, T]
    new_from = int((~seen[k]).nonzero()[0, 0])  # the first word whose sentence so far is not in training
    show_example(maps, sentence, m["roles"], new_from)
    # "The block blends them all."
    show_blend(m, heads, task)
    # Week 1, section 5, Mistakes: "distinct, readable roles are not guaranteed", with more heads than jobs
    show_more_heads(by_heads[MORE], task)
    print(save_figure(plot(maps, sentence, m["roles"], new_from), figure_path(args, FIGURE)))
    return model, held, m, sentence


# ---------------------------------------------------------------- what each section prints, and what it judges

FILLED = f"above {RIGHT:.0%}"  # the words each printed share is judged by: a blank filled right,
BROKEN = f"below {WRONG:.0%}"  # a blank a knock-out (or a lone head) breaks,
KEPT = f"{WRONG:.0%} or more"  # a blank a knock-out leaves unbroken
MEETS = {FILLED: lambda share: share > RIGHT, BROKEN: lambda share: share < WRONG,
         KEPT: lambda share: share >= WRONG}  # those words -> does a share meet them?
ON = f"{ROLE:.2f} or more"  # a role, in words: a head's share on its look,
OFF = f"under {LOW:.2f}"  # and on the other look
ROLE_RULE = f"share {ON} on one look, {OFF} on the other"
FILLED_RULE = f"each trained blank {FILLED}"
KNOCK_RULE = f"its role's blank {BROKEN}, the other {FILLED}"
ROLE_TITLES = {"before": "looks at the word just before", "nouns": "looks at the first noun", None: "no single role"}


def text(tokens):
    return " ".join(WORDS[t] for t in tokens.tolist() if t != PAD)


def show_task(sentence, i, task):
    words = [WORDS[t] for t in sentence.tolist()]
    before, first, _ = (t[0] for t in answers(sentence[None]))
    others = [w for w in WORDS[1:] if w not in KINDS["noun"]]
    print('ELI5 Part 3 "One block: mix, then think", "Many heads at once", its Try it box: "Head 1 looks')
    print('at the previous word, Head 2 at the nouns. The block blends them all." Here a tiny model learns')
    print("that from scratch, and is tested on sentences it never saw.")
    print("\nmade-up sentences from a toy grammar:")
    print(f"  e.g. {text(sentence)}")
    print(f"  nouns ({len(KINDS['noun'])}): {' '.join(KINDS['noun'])}")
    print(f"  other words ({len(others)}): {' '.join(others)}")
    print("at every word the model fills in two blanks:")
    print("  (a) the word just before me is ___")
    print("  (b) the first noun so far is ___   (who the sentence is about)")
    print(f'  e.g. at "{words[i]}": (a) {WORDS[before[i]]}, (b) {WORDS[first[i]]}. Here the answers are two '
          "different nouns in two")
    print("  places, and one head gives each word one set of weights (they sum to 1): it cannot put")
    print("  most of them on both.")
    if task != "both":
        trained, untrained = ("(a)", "(b)") if task == "previous-only" else ("(b)", "(a)")
        print(f"  --task {task}: only {trained} is trained; {untrained} is left untrained")


def show_model(args):
    heads = args.heads
    print(f"\nmodel: one layer of causal self-attention, {heads_in_words(heads)} of d_k={D_MODEL // heads} "
          f"numbers, d_model={D_MODEL}, float32")
    print(f"  a word goes in as its word vector ({D_MODEL} numbers) + its position tag PE(p)")
    print("    (sin and cos, Week 2 section 5)")
    print("  each head: softmax(Q K^T / sqrt(d_k) + causal mask) V, with its own slice of Q, K and V")
    print("  out = concat(heads) W_O, added to the word's own vector; then one read-out per blank")
    print(f"  no FFN, no LayerNorm: only the part of the block the claim is about; "
          f"{n_params(build_model(args.seed, heads)):,} learnable numbers")
    print(f"training: {args.steps} steps of {BATCH} fresh sentences, Adam, learning rate {LR} falling to 0,")
    print(f"  from random weights (seed {args.seed})")


def show_against_torch(model, held):
    gap = by_hand_vs_torch(model, held)
    print("\nthe attention as written by hand, against torch's F.scaled_dot_product_attention(is_causal=True)")
    print("with the trained weights (in float64), on the held-out sentences:")
    print(f"max |by hand - torch|={gap:.8f}")
    record("attention by hand is torch's", gap <= AGREE, value=gap, threshold=f"at most {AGREE:g}")


def show_filled(m, task):
    rows, trained = m["rows"], TASKS[task]
    judged_by = {q: FILLED for q in trained}
    every = f"every word with both answers ({rows['answerable']:,} words)"
    two_nouns = f"words whose two answers are different nouns ({rows['two_nouns']:,})"
    print(f"\nafter training, blanks filled right at held-out words: in {HELD_OUT} sentences never seen whole")
    print("in training, the words whose sentence so far never begins a training sentence either (the")
    print("model is causal: its answers at a word read only the words so far); (a) the word just before,")
    print("(b) the first noun:")
    row = filled_right("held-out words", m["all"], judged_by)
    print(f"  {every:52} {row}")
    record("held-out words: blanks filled right", filled(m["all"], trained), value=summary(m["all"]),
           threshold=FILLED_RULE)
    row = filled_right("held-out words with two different nouns", m["two_nouns"], judged_by)
    print(f"  {two_nouns:52} {row}")
    record("held-out words with two different nouns: blanks filled right", filled(m["two_nouns"], trained),
           value=summary(m["two_nouns"]), threshold=FILLED_RULE)


def show_one_head(by_heads, heads, task):
    """The same training with one head beside more (by_heads: {heads: measure()}), where the two
    answers are different nouns, and the verdict: one pattern can only focus one way. Judged
    only where two blanks are trained and the models with more heads fill both: else a blank the
    one head fails may be one no model has learned."""
    trained = TASKS[task]
    lone = by_heads[1]["two_nouns"]
    both = len(trained) == 2  # one blank: one way of looking is enough
    tested = both and all(filled(mh["two_nouns"], trained) for h, mh in by_heads.items() if h > 1)
    worse = min(trained, key=lone.get)  # the one head's worse blank: the one the claim reads
    holds = lone[worse] < WRONG if tested else None
    print("\n\"One pass catches one kind of relationship\" (ELI5 page): the same training with one head,")
    print("beside more, at the held-out words whose two answers are different nouns: blanks filled right")
    for h, mh in by_heads.items():
        label = heads_in_words(h) + (" (above)" if h == heads else "")
        if h == 1:  # its worse blank is judged, when the claim is
            judged_by = {q: BROKEN if tested and q == worse else None for q in trained}
            after = f"; its head: {ROLE_TITLES[mh['roles'][0]]}"
        else:
            judged_by = {q: FILLED if both else None for q in trained}
            after = ""
        row = filled_right(f"{heads_in_words(h)}, two different nouns", mh["two_nouns"], judged_by)
        print(f"  {label:20} {row}{after}")
    verdict = "Verdict: one attention pattern can only focus one way: "
    failing = " and ".join(f"({q})" for q in trained if lone[q] < WRONG)
    if not both:
        why = "only one blank is trained, and one way of looking is enough for it"
    elif not tested:
        why = (f"the models with more heads do not fill both blanks there (above {RIGHT:.0%}), so a blank one head "
               "fails may be one no model has learned yet")
    else:
        why = None
        print(f"{verdict}one head fails {failing or 'no blank'} at those words")
        print(f"  (below {WRONG:.0%}), and more heads fill both (above {RIGHT:.0%}): {said(holds)}")
    if why:
        print(textwrap.fill(f"{verdict}not tested: {why}", 98, subsequent_indent="  "))
    record("one head can only focus one way", holds,
           value="; ".join(f"{heads_in_words(h)}: {summary(mh['two_nouns'])}" for h, mh in by_heads.items()),
           threshold=f"one head: its worse blank below {WRONG:.0%}; more heads: both above {RIGHT:.0%}", why=why)


def show_roles(m, heads):
    """Where each head looks, its role, and the two role verdicts."""
    head_roles = m["roles"]
    print("\n\"Head 1 looks at the previous word, Head 2 at the nouns\" (ELI5 page, its Try it box): where")
    print("each head looks, its share of the attention weight (a row of weights sums to 1), averaged over")
    print(f"the {m['rows']['three_different']:,} held-out words whose word before is not a noun while two nouns "
          "or more came")
    print("earlier (there the word before, the first noun and the latest noun are three different words)")
    for h, ((b, n), role) in enumerate(zip(m["shares"], head_roles, strict=True)):
        # printed alone: the role records below judge them, by ROLE_RULE
        on_before = measured(f"head {h + 1}: share on the word just before", None, f"{b:.3f}", value=b)
        on_noun = measured(f"head {h + 1}: share on the first noun", None, f"{n:.3f}", value=n)
        looks_at = f"it {ROLE_TITLES[role]}" if role else ROLE_TITLES[None]
        print(f"  head {h + 1}: on the word just before {on_before}, on the first noun {on_noun}:")
        print(f"    {looks_at}")
        record(f"head {h + 1} takes one role", role is not None if heads == 2 else None, value=f"{b:.4f}, {n:.4f}",
               threshold=ROLE_RULE)
    if heads > 2:
        print(f"  roles: {roles_in_words(head_roles)}")
    before = [h + 1 for h, role in enumerate(head_roles) if role == "before"]
    nouns = [h + 1 for h, role in enumerate(head_roles) if role == "nouns"]
    found = f"head {before[0]}: {said(True)}" if before else f"no head does: {said(False)}"
    print(f"Verdict: one head looks at the word just before (share {ON}, {OFF} on the first")
    print(f"  noun): {found}")
    record("a head looks at the word just before", bool(before), value=f"{max(b for b, _ in m['shares']):.4f}",
           threshold=ROLE_RULE)
    if not nouns:
        found = f"no head does: {said(False)}"
    elif heads == 1:  # the one head cannot also be "another" head
        found = f"head 1 does, but it is the only head: {said(False)}"
    else:
        found = f"head {nouns[0]}: {said(True)}"
    print(f"Verdict: another looks at the nouns: at the first noun, the one blank (b) asks for (share {ROLE:.2f} or")
    print(f"  more, {OFF} on the word just before): {found}")
    record("another head looks at the first noun", bool(nouns) and heads > 1,
           value=f"{max(n for _, n in m['shares']):.4f}", threshold=ROLE_RULE)
    if heads > 1:
        print("  (which head takes which role depends on the starting weights: other seeds swap them)")


def show_example(maps, sentence, head_roles, new_from):
    """The example sentence row by row: the word each head with a role looks at hardest."""
    words = [WORDS[t] for t in sentence.tolist()]
    hardest = looks_hardest(maps, sentence, head_roles)  # per head, per row: a position, or None
    shown = [h for h, role in enumerate(head_roles) if role]
    print(f"\nthe example sentence was never seen whole in training, but its first {new_from} words,")
    print(f'"{" ".join(words[:new_from])}", also begin training sentences: only its rows from "{words[new_from]}" on '
          "are held out.")
    print("Row by row, the word each head with a role looks at hardest (the figure shows every weight):")
    if not shown:
        print("  no head has a role here, so no row has a place where it should look")
        return
    titles = [f"head {h + 1}" for h in shown]
    print(f"  {'word':8} " + " ".join(f"{title:16}" for title in titles).rstrip())
    for i, word in enumerate(words):
        cells = [in_words(words, i, hardest[h][i]) for h in shown]
        print(f"  {word:8} " + " ".join(f"{cell:16}" for cell in cells).rstrip())


def show_blend(m, heads, task):
    """The knock-out table and the blend verdict."""
    d_k, trained = D_MODEL // heads, TASKS[task]
    if heads > 1:
        concat = f"[head 1 | head 2 | ...], {d_k} numbers each"
    else:
        concat = f"[head 1], {d_k} numbers"
    print("\nThe block blends them all: out = concat W_O,")
    print(f"  where concat = {concat}.")
    print(f"Knock a head out: set to 0 the {d_k} rows of W_O that read its slice of concat; nothing it found")
    print("reaches the word's new vector. Blanks filled right, every held-out word with both answers:")
    row = filled_right("all heads", m["all"], {q: FILLED for q in trained})
    print(f"  {'all heads':31} {row}")
    record("all heads: blanks filled right", filled(m["all"], trained), value=summary(m["all"]),
           threshold=FILLED_RULE)
    for group, acc in m["knocked"]:
        which = "heads" if len(group) > 1 else "head"
        names = f"{which} {', '.join(str(h + 1) for h in group)} knocked out"
        own = own_blank(group, m["roles"], trained)  # the blank it should break (None: not tested)
        if own is None:
            judged_by = {q: None for q in trained}
        else:
            judged_by = {q: BROKEN if q == own else FILLED for q in trained}
        row = filled_right(names, acc, judged_by)
        print(f"  {names:31} {row}")
        record(f"{names}: blanks filled right", knock_out_holds(group, acc, m["roles"], trained), value=summary(acc),
               threshold=KNOCK_RULE)
    blended = blends(m, trained)
    who = "head" if heads <= 2 else "heads"
    if blended is None:
        why = "no head took one of the two roles, so there is no role's head to knock out"
        print("Verdict: not tested: no head took one of the two roles, so there is no role's head")
        print("  to knock out")
    else:
        why = None
        print(f"Verdict: knocking out the previous-word {who} breaks (a) and leaves (b), the noun {who} the other")
        print(f"  way round: each word's new vector gets both heads' findings, through W_O: {said(blended)}")
    record("knocking out a role breaks its blank only", blended,
           value="; ".join(f"without {', '.join(str(h + 1) for h in g)}: {summary(acc)}" for g, acc in m["knocked"]),
           threshold=f"{KNOCK_RULE}, for each role", why=why)


def show_more_heads(m, task):
    """Week 1, section 5, Mistakes: "distinct, readable roles are not guaranteed". The same training with
    MORE heads (m: its measure()): their roles, each knocked out alone, and the verdict on the
    caution: a head whose knock-out alone breaks no blank, its job done by other heads (or none
    the blanks need)."""
    trained, heads = TASKS[task], len(m["roles"])
    learned = filled(m["all"], trained)  # a knock-out can only break a blank that was filled
    idle = breaking_nothing(m, trained)
    kept = least_harm(m, trained)
    print("\nWeek 1, section 5, \"Mistakes people make\": \"Heads can specialise, but distinct, readable roles")
    print(f"are not guaranteed.\" The same training with {heads} heads")
    print(f"  roles: {roles_in_words(m['roles'])}")
    print("  blanks filled right, every held-out word with both answers:")
    row = filled_right(f"{heads} heads, all heads", m["all"], {q: FILLED for q in trained})
    print(f"  {'all heads':29} {row}")
    for (h,), acc in (knocked for knocked in m["knocked"] if len(knocked[0]) == 1):
        where = f"head {h + 1} knocked out alone"
        row = filled_right(f"{heads} heads, {where}", acc, {q: None for q in trained})  # printed alone
        print(f"  {where:29} {row}")
    holds = MEETS[KEPT](kept) if learned else None  # with the blanks never filled, a knock-out can show nothing
    least = measured(f"{heads} heads, the knock-out alone that harms least: its worse blank filled right", holds,
                     f"{kept:.1%}", KEPT if learned else None, value=kept)
    print(f"  the knock-out alone that harms least leaves its worse blank at {least}")
    if not learned:
        why = (f"the {heads} heads did not fill every blank (above {RIGHT:.0%}), so no knock-out can show whose "
               "job a blank is")
        print(f"Verdict: not tested: the {heads} heads did not fill every blank (above {RIGHT:.0%}), so no knock-out")
        print("  can show whose job a blank is")
    elif idle:
        why = None
        who = (f"head {idle[0] + 1}, knocked out alone, breaks" if len(idle) == 1 else
               f"heads {', '.join(str(h + 1) for h in idle)}, each knocked out alone, break")
        print(f"Verdict: not guaranteed: {who} no blank")
        print(f"  (none falls below {WRONG:.0%}): other heads cover for it, or the blanks never needed it: "
              f"{said(holds)}")
    else:
        why = None
        print(f"Verdict: not guaranteed: every head knocked out alone breaks a blank (below {WRONG:.0%}): each has a "
              "job")
        print(f"  of its own: {said(holds)}")
    record("heads need not find distinct, readable roles", holds,
           value="; ".join(f"without {g[0] + 1}: {summary(acc)}" for g, acc in m["knocked"] if len(g) == 1),
           threshold=f"with {heads} heads: a head whose knock-out alone leaves every trained blank at "
                     f"{WRONG:.0%} or more", why=why)


def filled_right(where, acc, judged_by):
    """'(a) 99.8% (above 80%), (b) 99.9% (above 80%)': each blank's share filled right (acc), printed
    beside the words that judge it and recorded as '<where>: blank (q) filled right'. judged_by:
    {blank: FILLED, BROKEN, or None where no claim judges it (printed alone)}, the trained blanks
    only; a blank the task leaves out reads 'not trained'."""
    cells = []
    for q in "ab":
        if q not in judged_by:
            cells.append(f"({q}) not trained")
            continue
        threshold = judged_by[q]
        holds = None if threshold is None else MEETS[threshold](acc[q])
        shown = measured(f"{where}: blank ({q}) filled right", holds, f"{acc[q]:.1%}", threshold, value=acc[q])
        cells.append(f"({q}) {shown}")
    return ", ".join(cells)


def in_words(words, i, j):
    """A cell of the example's table: the word j that row i's head looks at hardest."""
    if j is None:
        return "- (no noun yet)"
    return f"{words[j]} (itself)" if j == i else words[j]


def heads_in_words(h):
    return f"{h} head" if h == 1 else f"{h} heads"


def roles_in_words(head_roles):
    count = {role: head_roles.count(role) for role in ("before", "nouns", None)}
    return (f"{count['before']} on the word just before, {count['nouns']} on the first noun, "
            f"{count[None]} with no single role")


def summary(acc):
    """A record's value: both blanks' accuracies, exactly."""
    return ", ".join(f"({q}) {acc[q]:.4f}" for q in "ab")


# ---------------------------------------------------------------- measuring, at held-out words

def word_kinds(tokens, seen=None):
    """Which held-out words count for what, each [N, T] bool. seen [N, T]: the words trained
    on (seen_in_training), left out of every kind; None: none of them.
    answerable: both blanks have an answer;
    two_nouns: the word before is a noun, and the first noun is another noun word: (a) and (b)
    are two different nouns;
    three_different: the word before is not a noun, and two nouns or more came earlier: the
    word before, the first noun and the latest noun are three different words (where the heads'
    shares are measured: a head looking at the latest noun takes neither role there)."""
    before, first, _ = answers(tokens)
    is_noun = IS_NOUN[tokens].int()  # [N, T]
    nouns_earlier = is_noun.cumsum(1) - is_noun  # [N, T]: nouns before this word
    answerable = (before != NONE) & (first != NONE)
    if seen is not None:
        answerable &= ~seen
    noun_before = IS_NOUN[before.clamp(min=0)] & (before != NONE)
    return {"answerable": answerable, "two_nouns": answerable & noun_before & (before != first),
            "three_different": answerable & ~noun_before & (nouns_earlier >= 2)}


def knocked_out(model, heads):
    """A copy of the model with these heads (0-based) knocked out: the d_k rows of W_O that read
    each one's slice of concat set to 0, so nothing the head finds reaches out = concat W_O."""
    model = copy.deepcopy(model)
    d_k = len(model.W_O) // model.heads
    with torch.no_grad():
        for i in heads:
            model.W_O[i * d_k:(i + 1) * d_k] = 0  # head i's rows of W_O
    return model


@torch.no_grad()
def accuracy(model, tokens, rows):
    """{"a": share right, "b": share right} over the words marked in rows [N, T]."""
    scores = dict(zip("ab", model(tokens)[:2], strict=True))
    blanks = dict(zip("ab", answers(tokens)[:2], strict=True))
    return {q: ((scores[q].argmax(-1) == blanks[q]) & rows).sum().item() / rows.sum().item() for q in "ab"}


def looks(A, tokens, rows):
    """Per head, averaged over the words marked in rows [N, T]: the share of its weight A
    [N, h, T, T] on the word just before, and on the first noun (the one blank (b) asks for).
    [(on_before, on_first_noun), ...]."""
    N, heads, T, _ = A.shape
    first_at = answers(tokens)[2].clamp(max=T - 1)  # [N, T]
    on_before = F.pad(torch.diagonal(A, -1, 2, 3), (1, 0))  # [N, h, T]: word i's weight on word i - 1
    on_first = A.gather(3, first_at[:, None, :, None].expand(N, heads, T, 1))[..., 0]  # [N, h, T]
    return [(on_before[:, h][rows].mean().item(), on_first[:, h][rows].mean().item()) for h in range(heads)]


@torch.no_grad()
def shares(model, tokens, rows):
    """looks() of the trained heads on tokens, over rows."""
    return looks(model(tokens)[2], tokens, rows)


def roles(head_shares):
    """Each head's role: "before" (the word just before), "nouns" (the first noun), or None (no
    single role). A role is one look with ROLE or more of the weight, and under LOW on the other."""
    return ["before" if b >= ROLE and n < LOW else "nouns" if n >= ROLE and b < LOW else None for b, n in head_shares]


def measure(model, held, seen=None):
    """Every number the verdicts are made of, over the held-out words (seen: the words trained
    on, left out; see word_kinds): word counts, accuracies (every word, the words with two
    different nouns), each head's shares and role, and the accuracies with heads knocked out:
    each head alone, then, where a role has several heads, all of them at once.
    knocked: [(heads, accuracy)]."""
    kinds = word_kinds(held, seen)
    head_shares = shares(model, held, kinds["three_different"])
    head_roles = roles(head_shares)
    groups = [(h,) for h in range(model.heads)]
    groups += [g for g in (tuple(h for h, r in enumerate(head_roles) if r == role) for role in ("before", "nouns"))
               if len(g) > 1]
    return {"rows": {kind: int(rows.sum()) for kind, rows in kinds.items()},
            "all": accuracy(model, held, kinds["answerable"]),
            "two_nouns": accuracy(model, held, kinds["two_nouns"]),
            "shares": head_shares, "roles": head_roles,
            "knocked": [(g, accuracy(knocked_out(model, g), held, kinds["answerable"])) for g in groups]}


@torch.no_grad()
def by_hand_vs_torch(model, tokens):
    """max |page's formula - torch's fused kernel| of the attention layer's output on tokens
    [N, T], with the trained weights in float64 (rounding then stays near 1e-16 on every CPU;
    a wrong scale or mask moves it by 1e-2 or more)."""
    model64 = copy.deepcopy(model).double()
    x = model64.embed(tokens)  # [N, T, d]
    return (model64.self_attention(x)[0] - model64.self_attention(x, fast=True)[0]).abs().max().item()


@torch.no_grad()
def attention_maps(model, sentence):
    """The heads' weights on one sentence (word ids [T], no padding): [h, T, T] as NumPy."""
    return model(sentence[None])[2][0].numpy()


def looks_hardest(maps, sentence, head_roles):
    """Per head, row by row, the position of the word it gives its largest weight, where its
    role names a target (None elsewhere: a head with no role, or a noun head before the
    first noun, whose largest weight means nothing)."""
    _, first, _ = answers(sentence[None])
    top = maps.argmax(-1)
    return [[int(top[h, i]) if role == "before" or (role == "nouns" and first[0, i] != NONE) else None
             for i in range(len(sentence))] for h, role in enumerate(head_roles)]


# ---------------------------------------------------------------- the verdicts, from those numbers

def filled(acc, trained):
    """A line of blanks filled right upholds the page when every trained blank is above RIGHT."""
    return all(acc[q] > RIGHT for q in trained)


def own_blank(group, head_roles, trained):
    """The blank a knock-out of these heads should break: (a) for the previous-word role, (b) for
    the noun role; None (not tested) when they have no role in common, when they are some but not
    all of their role's heads (the others may do its job: the caution of show_more_heads), or
    when a blank is not trained."""
    role = {head_roles[h] for h in group}
    if len(role) > 1 or None in role or len(trained) < 2:
        return None
    if set(group) != {h for h, r in enumerate(head_roles) if r in role}:
        return None
    return "a" if role == {"before"} else "b"


def knock_out_holds(group, acc, head_roles, trained):
    """A knock-out row upholds the page when its heads are every head of one role, and their
    knock-out puts that role's blank below WRONG and leaves the other above RIGHT; None (not
    tested) otherwise (own_blank)."""
    own = own_blank(group, head_roles, trained)
    if own is None:
        return None
    other = "b" if own == "a" else "a"
    return acc[own] < WRONG and acc[other] > RIGHT


def blends(m, trained):
    """The knock-out verdict: for each role, knocking out every head of it puts its blank
    below WRONG (with all heads, above RIGHT) and leaves the other blank above RIGHT. None
    (not tested) when a role has no head: there is nothing of it to knock out."""
    def breaks_only(role, own, other):
        acc = dict(m["knocked"]).get(tuple(h for h, r in enumerate(m["roles"]) if r == role))
        return acc is not None and acc[own] < WRONG and acc[other] > RIGHT and m["all"][own] > RIGHT

    if not {"before", "nouns"} <= set(m["roles"]):
        return None
    return all(q in trained for q in "ab") and breaks_only("before", "a", "b") and breaks_only("nouns", "b", "a")


def breaking_nothing(m, trained):
    """The heads (0-based) whose knock-out alone breaks no trained blank: none falls below WRONG."""
    return [g[0] for g, acc in m["knocked"] if len(g) == 1 and all(acc[q] >= WRONG for q in trained)]


def least_harm(m, trained):
    """Over the heads knocked out alone, the largest of each one's worse trained blank: some head
    breaks nothing (breaking_nothing) exactly when this is WRONG or more."""
    return max(min(acc[q] for q in trained) for g, acc in m["knocked"] if len(g) == 1)


# ---------------------------------------------------------------- the made-up sentences, and which are held out

# One sentence is clause [and clause]; a clause is NP verb [NP | prep NP]; NP is det [adj] noun.
CLAUSE = ["det", "adj", "noun", "verb", "prep", "det", "adj", "noun"]  # the kind of word in each slot
SUBJECT_ADJ, PREP, OBJECT_DET, OBJECT_ADJ, OBJECT_NOUN = 1, 4, 5, 6, 7  # a clause's slots that may be empty
SLOTS = CLAUSE + ["and"] + CLAUSE  # every word a sentence may have, in order
P_ADJ = 0.5  # how often an NP has its adjective
P_OBJECT, P_PREP = 0.4, 0.4  # how often a clause ends in an NP, in prep + NP (else it ends at the verb)
P_AND = 0.5  # how often a sentence has a second clause
HELD_OUT = 500  # held-out sentences, never seen whole in training
HELD_OUT_SEED = 12345  # their own generator, the same for every --seed


def make_sentences(rng, n):
    """n sentences of the toy grammar as word ids [n, T_MAX], padded with <pad> at the end."""
    ids = {kind: np.array([WORDS.index(word) for word in words]) for kind, words in KINDS.items()}
    words = np.stack([ids[kind][rng.integers(0, len(ids[kind]), n)] for kind in SLOTS], axis=1)  # [n, T_MAX]
    adjective = rng.random((n, 4)) < P_ADJ  # the four NPs' optional adjectives
    ending = rng.random((n, 2))  # per clause: an object NP, a prep + NP, or nothing
    second = rng.random(n) < P_AND  # a second clause?
    present = np.ones((n, T_MAX), dtype=bool)  # [n, T_MAX]: which slots the sentence fills
    for c, start in enumerate((0, len(CLAUSE) + 1)):
        has_np = ending[:, c] < P_OBJECT + P_PREP
        has_prep = has_np & (ending[:, c] >= P_OBJECT)
        present[:, start + SUBJECT_ADJ] = adjective[:, 2 * c]
        present[:, start + PREP] = has_prep
        present[:, start + OBJECT_DET] = has_np
        present[:, start + OBJECT_ADJ] = has_np & adjective[:, 2 * c + 1]
        present[:, start + OBJECT_NOUN] = has_np
    present[:, len(CLAUSE):] &= second[:, None]
    return torch.from_numpy(packed_left(words, present))


def packed_left(words, present):
    """Each row's present words moved to its front, in their order, then <pad>: [n, T_MAX]."""
    order = np.argsort(~present, axis=1, kind="stable")  # a row's present slots first, each group in order
    return np.where(np.take_along_axis(present, order, axis=1), np.take_along_axis(words, order, axis=1), PAD)


def training_and_held_out(seed, steps):
    """The training stream, one batch of fresh sentences per step [steps, BATCH, T_MAX], and
    HELD_OUT sentences [HELD_OUT, T_MAX] from their own generator: the first ones that never
    occur in the stream (so the short sentences, which the stream has nearly all seen, are rare)."""
    stream = make_sentences(np.random.default_rng(seed), steps * BATCH)
    candidates = make_sentences(np.random.default_rng(HELD_OUT_SEED), 4 * HELD_OUT)
    seen = set(map(tuple, stream.tolist()))
    unseen = torch.tensor([row not in seen for row in map(tuple, candidates.tolist())])
    return stream.view(steps, BATCH, T_MAX), candidates[unseen][:HELD_OUT]


def seen_in_training(tokens, stream):
    """[N, T]: True at a word whose sentence so far, tokens[k, :i + 1], also begins a sentence
    of the training stream. The model is causal (its answers at a word read the words so far
    only), so such a word was trained on, even in a sentence never seen whole."""
    starts = set()
    for row in stream.reshape(-1, T_MAX).numpy().astype(np.uint8):
        starts.update(row.tobytes()[:n] for n in range(1, int((row != PAD).sum()) + 1))
    return torch.tensor([[row.tobytes()[:i + 1] in starts for i in range(len(row))]
                         for row in tokens.numpy().astype(np.uint8)])


def example_sentence(held, seen):
    """The first held-out sentence with a held-out word whose two answers are two different
    nouns: (its row in held, that word's place)."""
    k, i = word_kinds(held, seen)["two_nouns"].nonzero()[0].tolist()
    return k, i


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live view

FIGURE = REPO_ROOT / "build" / "figures" / "week1" / "heads_take_roles.png"


def role_targets(sentence, role):
    """Row by row, where a head with this role should look in sentence [T]: the word just
    before, or the first noun so far; None where there is none (and for no role)."""
    _, first, first_at = (t[0] for t in answers(sentence[None]))
    if role == "before":
        return [None] + list(range(len(sentence) - 1))
    if role == "nouns":
        return [int(first_at[i]) if first[i] != NONE else None for i in range(len(sentence))]
    return [None] * len(sentence)


def plot(maps, sentence, head_roles, new_from):
    """One panel per head: its weights [T, T] on the sentence; rows: the word asking,
    columns: the word looked at. Boxes: where its role says it should look. new_from: the
    first row whose words so far never begin a training sentence (the held-out rows)."""
    words = [WORDS[t] for t in sentence.tolist()]
    heads, T = len(maps), len(words)
    cols = min(heads, 4)
    fig, axes = plt.subplots((heads + cols - 1) // cols, cols, figsize=(4.6 * cols, 4.9 * ((heads + cols - 1) // cols)),
                             layout="constrained", squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= heads:
            ax.set_axis_off()
            continue
        image = ax.imshow(maps[h], cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(T), words, rotation=90)
        ax.set_yticks(range(T), words)
        ax.set_title(f"head {h + 1}: {ROLE_TITLES[head_roles[h]]}", fontsize=10)
        for i, target in enumerate(role_targets(sentence, head_roles[h])):
            if target is not None:
                ax.add_patch(plt.Rectangle((target - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
        ax.axhline(new_from - 0.5, color="white", linestyle="--", linewidth=1)  # above: trained on; below: held out
        ax.set_xlabel("the word looked at")
    for ax in axes[:, 0]:
        ax.set_ylabel("the word looking (one row each; a row sums to 1)")
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
    fig.suptitle(f"Where each head looks in a sentence never seen whole in training; its rows from "
                 f"\"{words[new_from]}\" on\n(below the dashed line) are held out: their words so far begin no "
                 "training sentence. Red: its role")
    return fig


def live_view(model, held, heads, m, example, trained=TASKS["both"]):
    """A head picker and a sentence picker: the head's weights on a held-out sentence (red
    where its role says), and how many blanks are filled right with that head knocked out,
    beside all heads (m: what measure() found, the numbers the run printed; a blank not
    `trained` is drawn as the run prints it: not trained, no bar). It opens at head 1 on
    `example`, the sentence of the printed run's figure."""
    from common.live import Blit, View, add_slider  # the Try it view, loaded only for --live
    sentences = [row[row != PAD] for row in held]
    opening = next(k for k, sentence in enumerate(sentences) if torch.equal(sentence, example))
    fig, (map_ax, knock_ax) = plt.subplots(1, 2, figsize=(12, 6.5), width_ratios=(3, 2))
    fig.subplots_adjust(bottom=0.33, top=0.85, wspace=0.35)  # room for the turned words and two sliders
    head_slider = add_slider(fig, "head", 1, heads, 1, row=1)
    sentence_slider = add_slider(fig, "held-out sentence", 1, max(50, opening + 1), opening + 1)
    knocked = dict(m["knocked"])
    image = map_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, interpolation="none", aspect="auto")
    map_ax.set_box_aspect(1)  # square whatever the sentence's length: the map's frame never moves
    # the words along the map: plain text (not tick labels, which cost several times more to draw)
    map_ax.set(xticks=[], yticks=[])
    columns = [map_ax.text(j, -0.01, "", rotation=90, ha="center", va="top", transform=map_ax.get_xaxis_transform())
               for j in range(T_MAX)]
    rows = [map_ax.text(-0.01, i, "", ha="right", va="center", transform=map_ax.get_yaxis_transform())
            for i in range(T_MAX)]
    map_ax.set_xlabel("the word looked at", labelpad=50)
    map_ax.set_ylabel("the word looking", labelpad=50)
    boxes = [map_ax.add_patch(plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor="red", linewidth=2))
             for _ in range(T_MAX)]  # one per row at most
    bars = [knock_ax.bar([j - 0.2, j + 0.2], [acc["a"], acc["b"]], width=0.38, color=["tab:orange", "tab:blue"])
            for j, acc in enumerate((m["all"], knocked[(0,)]))]
    for pair in bars:
        for bar, q in zip(pair, "ab", strict=True):
            bar.set_visible(q in trained)
    knock_ax.set_xticks(range(2), ["all heads", "one knocked out"])
    knock_ax.set(ylim=(0, 1.45), yticks=np.linspace(0, 1, 5), ylabel="share of blanks filled right")
    knock_ax.legend(bars[0].patches, ["(a) the word just before", "(b) the first noun"], loc="upper center")
    fig.suptitle("Pick a head: its look, and what breaks without it (held-out sentences)")
    blit = Blit(fig)
    # layer 0, what only the sentence changes: its words (and the map's limits, with its length); layer 1, what the
    # head changes too: the map, its red boxes and title, the knocked-out bars
    blit.add(sentence_slider, *columns, *rows)
    blit.add(head_slider, image, *boxes, map_ax.title, *bars[1], knock_ax.title, layer=1)

    def update_sentence(_):
        sentence = sentences[int(sentence_slider.val) - 1]
        T = len(sentence)
        image.set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
        map_ax.set(xlim=(-0.5, T - 0.5), ylim=(T - 0.5, -0.5))
        for i, (column, row) in enumerate(zip(columns, rows, strict=True)):
            word = WORDS[sentence[i]] if i < T else ""
            column.set_text(word)
            row.set_text(word)
        show_head()
        blit.update(0)

    def show_head():
        h, sentence = int(head_slider.val) - 1, sentences[int(sentence_slider.val) - 1]
        image.set_data(attention_maps(model, sentence)[h])  # [T, T]
        targets = role_targets(sentence, m["roles"][h])
        for i, box in enumerate(boxes):
            target = targets[i] if i < len(targets) else None
            box.set_visible(target is not None)
            box.set_xy((-0.5 if target is None else target - 0.5, i - 0.5))
        map_ax.set_title(f"head {h + 1}: {ROLE_TITLES[m['roles'][h]]}")
        for bar, q in zip(bars[1], "ab", strict=True):
            bar.set_height(knocked[(h,)][q])
        share = {q: f"{knocked[(h,)][q]:.1%}" if q in trained else "not trained" for q in "ab"}
        knock_ax.set_title(f"(a) word before: {share['a']}, (b) first noun: {share['b']}\n"
                           f"with head {h + 1} knocked out")

    def update_head(_):
        show_head()
        blit.update(1)

    head_slider.on_changed(update_head)
    sentence_slider.on_changed(update_sentence)
    update_sentence(None)
    return View(fig, {"head": head_slider, "sentence": sentence_slider}, blit)


DESCRIPTION = ("Attention heads trained from scratch on made-up sentences take roles: one looks at the word just "
               "before, another at the nouns, and W_O blends what they find; knock a head out and its job fails "
               "(ELI5 Part 3, \"Many heads at once\").")
KNOBS = [knob("--heads", type=int, choices=[1, 2, 4, 8], default=HEADS,
              help=f"attention heads; each gets d_k = {D_MODEL} / heads numbers"),
         knob("--task", choices=list(TASKS), default="both",
              help="which blanks to train: both, only (a) the word just before, or only (b) the first noun"),
         knob("--steps", type=int_range(1, 400), default=STEPS, help="training steps"),
         knob("--seed", type=SEED, default=42, help="seed of the starting weights and training sentences")]
TRY_IT = [("--heads 1", "one head cannot look two ways at once: where the two answers are different nouns, (a) "
           "fails, and no head takes the previous-word role"),
          ("--task previous-only", "a task that needs one kind of look: the heads look at the word just before, "
           "none at the nouns"),
          ("--heads 4", "more heads: usually one or two take the word just before, one to three the nouns, the rest "
           "no single role"),
          ("--steps 20", "stopped early: no head has a role yet (over many seeds, the noun look forms first)"),
          ("--seed 7", "other starting weights and sentences: the same verdicts (the two heads may swap roles)")]
FIGURE_HELP = ("where to save the figure (a default run saves it under build/figures/week1/, as its pixels depend on "
               "the CPU; the README's copy is week1/figures/heads_take_roles.png)")
LIVE = "a head picker and a sentence picker: where the head looks, and what breaks without it"


LESSON = Lesson(__file__, page=("eli5", 2), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT,
                figure=FIGURE_HELP, live=LIVE)


def main(argv=None):
    args = LESSON.args(argv)
    model, held, m, sentence = lesson(args)
    if args.live:
        from common.live import show  # the Try it view, loaded only for --live

        show(live_view, model, held, args.heads, m, sentence, TASKS[args.task])


if __name__ == "__main__":
    run(main)
