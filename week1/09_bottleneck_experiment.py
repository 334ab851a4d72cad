"""One fixed-size summary forgets long rows; attention does not (a small Bahdanau Figure 2).

Page: Week 1, section 1 "The squeezed summary (seq2seq bottleneck)" and section 2
"Looking back instead of remembering (Bahdanau attention)".

    encoder:        h_i = GRUCell(x_i, h_(i-1)), one digit after another; s_0 = h_T
    fixed-context:  c_t = c = h_T                              the one summary of section 1
    attention:      e_ti = v_a^T tanh(W_a s_(t-1) + U_a h_i),  alpha_t = softmax(e_t) over i,
                    c_t = sum_i alpha_ti h_i                   section 2 (week1/05 computes one step)
    both:           s_t = GRUCell([y_(t-1), c_t], s_(t-1));   guess_t = argmax W_out [s_t, c_t]

Two GRU encoder-decoders of the same size learn to copy rows of 2 to 12 digits, from the same
starting weights on the same rows; they differ only in c_t. Prints, on held-out rows (never
trained on): the share of digits each copies right on short and long rows, each beside the
threshold it is judged by, and a verdict per section; section 1's finer claims (c is all the
fixed-context decoder knows; at one length, rows of 2 digits copied better than rows of 10; a
strain, not a law); section 2's alignment tables (rows sum to 1; the biggest weight on the digit
copied, yet soft). Saves a figure. Setup (the page gives none): n = 48 numbers in c, in every
h_i and in s; 300 steps of torch.optim.Adam on 128 rows of one length a step; a one-way encoder,
so the digit to copy sits in one h_i. Notes: week1/NOTES.md, section 09.
"""
import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import REPO_ROOT, run
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.progress import Progress
from common.records import measured, record, said

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DIGITS = 10  # the words are the digits 0..9
START = DIGITS  # the decoder's first input, "start writing": an 11th input word
EMBED = 16  # numbers per digit vector
HIDDEN = 48  # n: the numbers in c, in every h_i and in s
MIN_LEN = 2  # shortest row, in digits
MAX_LEN = 12  # longest row, in digits
STEPS = 300  # training steps per model
BATCH = 128  # rows per training step, all of one length
LR = 0.02  # Adam's learning rate at the first step; it falls linearly to 0
CLIP = 1.0  # largest gradient norm
FAST = True  # the fixed-context decoder trains through decode_fast, torch's fused GRU (NOTES: measured)


class GRU(nn.Module):
    """Section 1's RNN: h_t = GRUCell(x_t, h_(t-1)), one word after another, each state made
    from the one before. fast: the same loop run inside torch, by its fused nn.GRU, on the same
    weights (test_the_fused_gru_is_the_cells_loop)."""

    def __init__(self, d_in, n):
        super().__init__()
        self.cell = nn.GRUCell(d_in, n)
        self.fused = nn.GRU(d_in, n, batch_first=True)  # the fast path: its weights are the cell's
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            setattr(self.fused, f"{name}_l0", getattr(self.cell, name))

    def forward(self, X, h=None, fast=False):
        """The states h_1..h_T [B, T, n] for the inputs X [B, T, d_in], from h_0 = h [B, n] (zeros if None)."""
        if fast:
            return self.fused(X, None if h is None else h[None])[0]  # [B, T, n]
        states = []
        for t in range(X.shape[1]):
            h = self.cell(X[:, t], h)  # [B, n]: h_t from x_t and h_(t-1)
            states.append(h)
        return torch.stack(states, dim=1)  # [B, T, n]


class AdditiveAttention(nn.Module):
    """Section 2's look back (week1/05 computes one step by hand):
    e_ti = v_a^T tanh(W_a s_(t-1) + U_a h_i), alpha_t = softmax(e_t) over the source positions i,
    c_t = sum_i alpha_ti h_i."""

    def __init__(self, n, n_a):
        super().__init__()
        self.W_a = nn.Linear(n, n_a, bias=False)  # W_a s: the weight [n_a, n] times s
        self.U_a = nn.Linear(n, n_a, bias=False)
        self.v_a = nn.Parameter(torch.empty(n_a))
        for weight in (self.W_a.weight, self.U_a.weight, self.v_a):
            nn.init.normal_(weight, std=n**-0.5)  # keeps W_a s and U_a h_i near size 1 at the start

    def forward(self, s, H, U_aH, mask=None):
        """c_t [B, n] and alpha_t [B, T] for s = s_(t-1) [B, n] and H = h_1..h_T [B, T, n]. U_aH = U_a(H)
        [B, T, n_a]: the U_a h_i of every score, the same at every writing step t, so the decoder makes
        it once per row (as Bahdanau et al. note). mask [T] bool: True where a position is blocked."""
        e = torch.tanh(self.W_a(s)[:, None, :] + U_aH) @ self.v_a  # [B, 1, n_a] + [B, T, n_a]; then [B, T]
        if mask is not None:
            e = e.masked_fill(mask, -torch.inf)  # weight 0 there
        alpha = torch.softmax(e, dim=-1)  # [B, T]: over the source positions, sums to 1
        c = (alpha[:, :, None] * H).sum(dim=1)  # [B, n]: sum_i alpha_ti h_i
        return c, alpha


class Translator(nn.Module):
    """An encoder-decoder of sections 1 and 2; with attention=False, the fixed-context one."""

    def __init__(self, n, attention):
        super().__init__()
        self.source_embed = nn.Embedding(DIGITS, EMBED)
        self.target_embed = nn.Embedding(DIGITS + 1, EMBED)  # + the START word
        self.encoder = GRU(EMBED, n)
        self.decoder = GRU(EMBED + n, n)  # reads [y_(t-1), c_t]
        self.out = nn.Linear(2 * n, DIGITS)  # [s_t, c_t] -> a score per digit
        self.attention = AdditiveAttention(n, n) if attention else None  # drawn last: the rest is shared


def build(hidden, seed, attention):
    """A model from the seed's weights: both models start from the same ones (the attention model adds its own)."""
    torch.manual_seed(seed)
    return Translator(hidden, attention)


def encode(model, x):
    """The encoder's states h_1..h_T for the rows x [B, T]: [B, T, n]."""
    return model.encoder(model.source_embed(x))


def decode(model, H, y_in, look_back="all"):
    """Write T digits from the encoder states H [B, T, n], fed y_in [B, T] (teacher forcing: the
    true previous digits) or, if y_in is None, its own previous guesses. Returns scores
    [B, T, DIGITS] and, for the attention model, the alignment tables alpha [B, T_target, T_source].
    look_back "last" (--look-back last): the attention model may see only h_T."""
    B, T = H.shape[:2]
    c = H[:, -1]  # [B, n]: c = h_T, the fixed-size summary
    fed = None if y_in is None else model.target_embed(y_in)  # [B, T, EMBED]: y_0..y_(T-1)
    if model.attention is not None:
        U_aH = model.attention.U_a(H)  # [B, T, n_a]
        blocked = torch.arange(T) < T - 1 if look_back == "last" else None  # [T]: every state but h_T
    s = c  # [B, n]: s_0 = h_T
    guess = torch.full((B,), START)  # writing alone: the previous guess, at first "start writing"
    scores, alphas = [], []
    for t in range(T):
        if model.attention is None:
            c_t = c  # section 1: the one summary, at every step
        else:
            c_t, alpha = model.attention(s, H, U_aH, blocked)  # section 2: [B, n], [B, T]: where step t looks
            alphas.append(alpha)
        y = model.target_embed(guess) if fed is None else fed[:, t]  # [B, EMBED]: y_(t-1)
        s = model.decoder.cell(torch.cat([y, c_t], dim=-1), s)  # [B, n]: s_t
        scores.append(model.out(torch.cat([s, c_t], dim=-1)))  # [B, DIGITS]
        if fed is None:
            guess = scores[-1].argmax(-1)
    return torch.stack(scores, dim=1), (torch.stack(alphas, dim=1) if alphas else None)


def decode_fast(model, H, y_in):
    """decode() of the fixed-context model fed y_in, in one call: every input [y_(t-1), c] is known
    in advance, so torch's fused GRU runs all T steps (test_the_fixed_context_decoder_fast_is_its_loop)."""
    c = H[:, -1]  # [B, n]
    C = c[:, None].expand(-1, H.shape[1], -1)  # [B, T, n]: the same c at every step
    S = model.decoder(torch.cat([model.target_embed(y_in), C], dim=-1), c, fast=True)  # [B, T, n]: s_1..s_T
    return model.out(torch.cat([S, C], dim=-1))  # [B, T, DIGITS]


def translate(model, x, y_in, look_back="all", fast=False):
    """Read the rows x [B, T] and write T digits: decode(encode(x)), with decode's returns. fast:
    the fixed-context model fed y_in goes through decode_fast (no alignment tables: None)."""
    H = encode(model, x)  # [B, T, n]
    if fast and y_in is not None and model.attention is None:
        return decode_fast(model, H, y_in), None
    return decode(model, H, y_in, look_back)


def train(model, batches, look_back="all", watch=None):
    """Teacher-forced training on batches (a list of digit rows [BATCH, T]): Adam, its learning
    rate falling linearly from LR to 0. Returns the loss of every step. watch(step, losses, model),
    if given, is called after each step, with the losses so far (to show progress, or to draw)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, fused=True)  # fused: torch's one-kernel Adam step
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: 1 - done / len(batches))
    losses = []
    for step, x in enumerate(batches, start=1):
        y_in = torch.cat([torch.full((len(x), 1), START), x[:, :-1]], dim=1)  # [B, T]: START, then the row shifted
        scores, _ = translate(model, x, y_in, look_back, fast=FAST)  # [B, T, DIGITS]
        loss = F.cross_entropy(scores.reshape(-1, DIGITS), x.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if watch is not None:
            watch(step, losses, model)
    return losses


# the held-out rows, and what the claims are judged by
TEST_ROWS = 200  # held-out rows per length, at most
FEW = 2  # rows with less detail: each drawn from this many of the 10 digits
LISTED = 10_000  # lengths with at most this many possible rows: every one is a test candidate
EXAMPLE = [2, 7, 1, 8, 5, 0, 9, 4]  # the row whose alignment table --table prints and the figure draws
MODELS = (("fixed-context", False), ("attention", True))  # (name, does it look back?)
SHORT = 4  # "short rows": held-out rows of up to 4 digits; "long rows": the three longest lengths
HIGH = 0.90  # short rows, and the attention model's long rows: above this
LOW = 0.60  # the fixed-context model's long rows: below this (LOW to HIGH: strained, not broken)
ALIGNED = 0.80  # share of writing steps whose biggest weight must be on the digit copied
SUMS_TO_1 = 5e-7  # a row "sums to 1" within this (it prints as 1.000000; float32 rounding is about 1e-7)
SOFT = 0.90  # a soft alignment: the weight on the digit copied is below this in most of those steps
MOST = 0.5  # "most": more than this share
CHANGED = 0.5  # the attention model reads the earlier states: more than this share of its digits change
DETAIL_GAP = 0.05  # the detail verdict: the rows of FEW digits get at least this much more of their digits right
ONE_STEP = 0.5  # a law would break at one length: one step to the next length taking this much of the fall
# The figure's pixels depend on the training trajectory, so on the CPU: a default run writes it to the
# git-ignored build/; the committed copy is made with --figure week1/figures/<same name>.
FIGURE = REPO_ROOT / "build" / "figures" / "week1" / "bottleneck_accuracy_by_length.png"


def lesson(args, window=None):
    """Both models trained on the same rows and tested on the same held-out rows; then section 1's
    claims, then section 2's. window: the --live TrainingWindow, if any. Returns what the figure draws."""
    torch.set_num_threads(1)  # tiny matrices: one thread is quickest (notes)
    n = args.hidden
    look = "every encoder state h_i" if args.look_back == "all" else "the last encoder state only"
    print(f"Copying rows of {MIN_LEN} to {args.max_len} digits: two GRU encoder-decoders (networks that read, "
          "then write,")
    print(f"one digit at a time), both of size n = {n}, trained for {args.steps} steps on the same batches "
          f"of {BATCH} rows")
    print("  (the encoder reads a row into states h_1..h_T, a list of n numbers after each digit read;")
    print("  the decoder writes the row out again, digit by digit)")
    print(f"  fixed-context: the decoder gets only c = h_T, the encoder's last state: one note of {n} numbers")
    print(f"  attention: the decoder also looks back at {look}, giving each a score")
    print("  e_ti = v_a^T tanh(W_a s_(t-1) + U_a h_i): how useful h_i is at writing step t, given s_(t-1),")
    print("  the decoder's own state")
    result = experiment(n, args.max_len, args.steps, args.seed, args.look_back, window)
    models, tests = result["models"], result["tests"]  # the trained models; the held-out rows {length: [N, length]}
    accuracy = result["accuracy"]  # {model name: {length: share of digits copied right}}
    rows = {T: len(x) for T, x in tests.items()}  # held-out rows per length

    # sections 1 and 2: each model's share right on short and long rows (Bahdanau's Figure 2)
    show_accuracy(accuracy, rows, args)
    # section 1: "whatever fits on the note is all the decoder ever knows"
    show_only_through_c(models, tests[len(EXAMPLE)], args.look_back)
    # section 1: "long or detail-rich inputs strain it"
    show_detail(models, result["few"], tests[args.max_len], args.look_back)
    # section 1's note: "a strain, not a law"
    show_strain_not_law(accuracy, rows)
    # section 2: the alignment tables, and its Mistakes: "a weight is a learned soft alignment"
    show_alignment(result["alpha8"], result["example_alpha"], rows, args.table)
    print(save_figure(make_figure(accuracy, rows, result["example_alpha"], args.max_len),
                      figure_path(args, FIGURE)))
    # The fixed-context decoder must pull every digit out of one vector of n numbers, and
    # the longer the row, the more it loses; the attention decoder reads each digit where it is.
    return accuracy, rows, result["example_alpha"]


def show_accuracy(accuracy, rows, args):
    """Section 1 and section 2's claim: each model's share right on short and long held-out rows,
    beside the threshold it is judged by, and the verdicts."""
    (short_lengths, long_lengths), summary = short_and_long(accuracy, rows)
    print(f"\nShare of digits copied right on held-out rows, never trained on (guessing gets {1 / DIGITS:.2f}):")
    print(f"  {'':14} {span(short_lengths):22} {span(long_lengths)}")
    for name, (short, long) in summary.items():
        short_text = measured(f"{name}: share of digits copied right, short rows", short > HIGH, f"{short:.3f}",
                              f"above {HIGH:.2f}", value=short)
        if name == "attention":
            long_text = measured(f"{name}: share of digits copied right, long rows", long > HIGH, f"{long:.3f}",
                                 f"above {HIGH:.2f}", value=long)
        else:
            long_text = measured(f"{name}: share of digits copied right, long rows", long < LOW, f"{long:.3f}",
                                 f"below {LOW:.2f}", value=long)
        print(f"  {name:14} {short_text:22} {long_text}")
    exceptions = held_out_exceptions(rows, args.max_len)
    print(f"  held out: {TEST_ROWS} rows per length" + (", except:" if exceptions else ""))
    for line in exceptions:
        print(f"    {line}")
    if args.table:
        print("  digits  rows  fixed-context  attention")
        for T in rows:
            print(f"  {T:6d}  {rows[T]:4d}  {accuracy['fixed-context'][T]:13.3f}  {accuracy['attention'][T]:9.3f}")
    short, long = summary["fixed-context"]
    falls = short > HIGH and long < LOW
    strained = short > HIGH and LOW <= long <= HIGH  # strained, not broken: the page's note (e.g. --max-len 8)
    if strained:
        print(f"Verdict (section 1): fixed-context falls from above {HIGH:.2f} only to {LOW:.2f} to {HIGH:.2f} on "
              f"rows of up to {args.max_len} digits:\n  strained, not broken, as the page's note says (a strain, "
              "not a law)")
    elif falls:
        print(f"Verdict (section 1): fixed-context falls from above {HIGH:.2f} to below {LOW:.2f} as rows grow:\n"
              f"  {said(falls)}")
    else:
        print(f"Verdict (section 1): fixed-context does not fall from above {HIGH:.2f} to below {LOW:.2f} as rows "
              f"grow:\n  {said(falls)}")
    record("fixed-context falls off as rows grow", falls or strained, value=f"short {short:.4f}, long {long:.4f}",
           threshold=f"short rows above {HIGH:.2f}, long rows below {LOW:.2f} (or {LOW:.2f} to {HIGH:.2f}: strained, "
                     "not broken, the page's note)")
    holds = summary["attention"][1] > HIGH
    if holds:
        print(f"Verdict (section 2): attention stays above {HIGH:.2f} on the longest rows: {said(holds)}")
    else:
        print(f"Verdict (section 2): attention does not stay above {HIGH:.2f} on the longest rows: {said(holds)}")
    record("attention stays high on the longest rows", holds, value=summary["attention"][1],
           threshold=f"long rows above {HIGH:.2f}")


def show_only_through_c(models, x, look_back):
    """Section 1's sticky note: c is all the fixed-context decoder knows of the row."""
    N, T = x.shape
    print(f"\nSection 1: \"whatever fits on the note is all the decoder ever knows\". The {N} held-out "
          f"{T}-digit rows\nagain, each with its earlier encoder states h_1..h_{T - 1} swapped for another "
          f"row's, and h_{T} = c kept:")
    changed = {name: with_other_earlier_states(models[name], x, look_back) for name, _ in MODELS}
    n_fixed, share = int(changed["fixed-context"].sum()), changed["attention"].double().mean().item()
    print(f"  fixed-context: digits written that changed: {n_fixed:,} of {x.numel():,} (none)")
    record("fixed-context: digits written that changed, earlier states swapped", n_fixed == 0, value=n_fixed,
           threshold="none")
    share_text = measured("attention: share of digits written that changed, earlier states swapped", share > CHANGED,
                          f"{share:.1%}", f"more than {CHANGED:.0%}", value=share)
    print(f"  attention:     digits written that changed: {share_text}")
    holds = only_through_c(changed)
    print("Verdict (section 1): the fixed-context decoder knows the row only through c; the attention one\n"
          f"  reads the other states too: {said(holds)}")
    record("the fixed-context decoder knows the row only through c", holds,
           value=f"fixed-context {n_fixed} of {x.numel()} changed, attention {share:.4f}",
           threshold=f"fixed-context: no digit changes; attention: more than {CHANGED:.0%} change")


def show_detail(models, few, every, look_back):
    """Section 1's bottleneck, the other way to strain c: more detail at the same length."""
    T = every.shape[1]
    with torch.no_grad():
        right = {(name, kind): copied(translate(models[name], x, None, look_back)[0], x)
                 for name, _ in MODELS for kind, x in (("few", few), ("all", every))}  # share of digits right
    gap = right["fixed-context", "few"] - right["fixed-context", "all"]
    attention_gap = right["attention", "few"] - right["attention", "all"]
    print(f"\nSection 1: \"long or detail-rich inputs strain it\": more detail at one length. The "
          f"fixed-context\nmodel on {len(few)} held-out rows of {T} digits drawn from {FEW} digits each ({FEW} picked "
          f"per row), and on\nits {len(every)} rows drawn from all {DIGITS}; share of their digits copied right:")
    few_right, all_right = right["fixed-context", "few"], right["fixed-context", "all"]
    why = "shown, not judged on its own: the gap below is"
    few_text = measured(f"rows of {FEW} digits: share of digits copied right", None, f"{few_right:.3f}",
                        value=few_right, why=why)
    print(f"  rows of {FEW} digits:      {few_text}")
    all_text = measured(f"rows of all {DIGITS} digits: share of digits copied right", None, f"{all_right:.3f}",
                        value=all_right, why=why)
    print(f"  rows of all {DIGITS} digits: {all_text}")
    holds = copied_better_with_fewer_digits(few_right, all_right)
    gap_text = measured(f"rows of {FEW} digits less rows of all {DIGITS}: share copied right", holds, f"{gap:.3f}",
                        f"{DETAIL_GAP:.2f} or more", value=gap)
    print(f"  the rows of {FEW} digits get more right by {gap_text}")
    print(f"Verdict (section 1): at {T} digits the fixed-context model copies the rows of {FEW} digits better than\n"
          f"  the rows of all {DIGITS}, by {DETAIL_GAP:.2f} or more: {said(holds)}")
    record("detail-rich rows strain c", holds,
           value=f"{FEW} digits {right['fixed-context', 'few']:.4f}, all {DIGITS} {right['fixed-context', 'all']:.4f}",
           threshold=f"the rows of {FEW} digits at least {DETAIL_GAP:.2f} more right")
    print(f"  (what this does not isolate: training saw only rows of all {DIGITS} digits, so rows of {FEW} are "
          "unfamiliar\n  as well as plainer; other lengths and longer training: week1/NOTES.md, section 09)")
    attention_text = measured(f"the attention model: rows of {FEW} digits less rows of all {DIGITS}", None,
                              f"{attention_gap:+.3f}", value=attention_gap, why="shown, not judged: beside the "
                              f"fixed-context model's gap, what rows of {FEW} digits do to a model whose note is not "
                              "its only road")
    print(f"  the attention model on the same rows, for comparison: rows of {FEW} digits less rows of all {DIGITS}, "
          f"{attention_text}")


def show_strain_not_law(accuracy, rows):
    """Section 1's note: a strain, not a law. The fixed-context model length by length."""
    fixed = accuracy["fixed-context"]
    print("\nSection 1's note, \"a strain, not a law\": the fixed-context model length by length, on held-out "
          "rows:")
    top, bottom = max(fixed.values()), min(fixed.values())
    why = "shown, not judged: the fall it spans is the measure of the step below"
    top_text = measured("the fixed-context model's highest share right over the lengths", None, f"{top:.3f}",
                        value=top, why=why)
    bottom_text = measured("the fixed-context model's lowest share right over the lengths", None, f"{bottom:.3f}",
                           value=bottom, why=why)
    print(f"  its share right falls from {top_text} at its highest to {bottom_text} at its lowest")
    step = largest_step(fixed)
    gradual = step < ONE_STEP
    step_text = measured("the fixed-context model breaks at no one length", gradual, f"{step:.1%}",
                         f"less than {ONE_STEP:.0%}", value=step)
    print(f"  its largest step from one length to the next, as a share of that fall: {step_text}")
    long = short_and_long(accuracy, rows)[1]["attention"][1]
    holds = gradual and long > HIGH
    print("Verdict (section 1, note): a strain, not a law (the fixed-context model falls length by length;\n"
          f"  the attention model stays above {HIGH:.2f} on the longest rows): {said(holds)}")
    record("a strain, not a law", holds,
           value=f"largest step {step:.4f} of the fall; attention {long:.4f} on the longest rows",
           threshold=f"every step less than {ONE_STEP:.0%} of the fall; attention above {HIGH:.2f} on the longest rows")


def show_alignment(alpha8, example_alpha, rows, table):
    """Section 2's alignment tables: every row sums to 1; where each writing step looks hardest,
    and how hard."""
    print("\nWhere the attention model looks: section 2's alignment tables [T_target, T_source],")
    print(f"one row per digit written, one column per digit read; {rows[len(EXAMPLE)]} held-out "
          f"{len(EXAMPLE)}-digit rows")
    sums = alpha8.double().sum(-1)  # [rows, T]: the sum of each row of every table
    print("  each row is a softmax (scores turned into shares), so it sums to 1:")
    low, high = sums.min().item(), sums.max().item()
    print(f"  the {sums.numel():,} rows here sum to between {low:.6f} and {high:.6f}")
    record("every row of the alignment tables sums to 1", max(abs(low - 1), abs(high - 1)) < SUMS_TO_1,
           value=f"{low:.9f} to {high:.9f}", threshold=f"every row within {SUMS_TO_1:g} of 1")
    on_digit, soft = share_on_copied_digit(alpha8), soft_share(alpha8)
    on_text = measured("the biggest weight is on the digit copied", on_digit >= ALIGNED, f"{on_digit:.1%}",
                       f"at least {ALIGNED:.0%}", value=on_digit)
    print(f"  the writing steps that look hardest at the very digit they copy: {on_text}")
    soft_text = measured("the weight on the digit copied is soft", soft > MOST, f"{soft:.1%}", f"more than {MOST:.0%}",
                         value=soft)
    print(f"  of those, the steps whose weight there is below {SOFT:.2f}: {soft_text}")
    if table:
        print(f"  the table for the row {' '.join(map(str, EXAMPLE))}:")
        print("           reads " + "    ".join(map(str, EXAMPLE)))
        for digit, row in zip(EXAMPLE, example_alpha, strict=True):
            print(f"    writes {digit}:  " + " ".join(f"{a:.2f}" for a in row))
    holds = on_digit >= ALIGNED and soft > MOST
    print("Verdict (section 2, Mistakes): a weight is a learned soft alignment: it finds the digit, but shares\n"
          f"  the row with others: {said(holds)}")
    record("a weight is a learned soft alignment", holds, value=f"{on_digit:.4f}, {soft:.4f}",
           threshold=f"biggest weight on the digit copied in at least {ALIGNED:.0%} of the steps, below {SOFT:.2f} "
           f"in more than {MOST:.0%} of those")


# ---------------------------------------------------------------- optional: data, measures, verdicts, Try it, the views

def experiment(hidden, max_len, steps, seed, look_back="all", window=None):
    """Train both models on the same rows and test them on the same held-out rows. Returns a
    dict: "models" {name: trained model}, "accuracy" {name: {length: accuracy}}, "tests" (the
    held-out rows), "few" (the rows of FEW digits), the attention model's alignment tables
    "alpha8" for the 8-digit test rows [N, 8, 8] and "example_alpha" for EXAMPLE [8, 8].
    window: a TrainingWindow (--live) that watches each training as it goes."""
    batches, tests, few = training_and_test_rows(seed, max_len, steps)
    out = {"models": {}, "accuracy": {}, "tests": tests, "few": few}
    for name, attention in MODELS:
        model = out["models"][name] = build(hidden, seed, attention)
        with Progress(f"training the {name} model: step", steps) as progress:
            def watch(step, losses, model, name=name, attention=attention):
                progress.update(step)
                if window:
                    window.watch(name, attention, step, losses, model, last=step == steps)

            train(model, batches, look_back, watch=watch)
        out["accuracy"][name], out["alpha8"] = accuracy_by_length(model, tests, look_back)
    with torch.no_grad():  # model is now the trained attention model
        _, example_alpha = translate(model, torch.tensor([EXAMPLE]), None, look_back)
    out["example_alpha"] = example_alpha[0].numpy()
    return out


def training_and_test_rows(seed, max_len, steps):
    """The training batches (one length per step, drawn from MIN_LEN..max_len; BATCH rows
    each), the held-out test rows {length: rows [N, length]}, and held-out rows of max_len
    digits with less detail, each drawn from FEW of the 10 digits (a set picked per row).
    Held out: up to TEST_ROWS different rows that occur in no training batch, the first ones
    from a generator of their own (for a length with at most LISTED possible rows, every one
    of them in a shuffled order). A length whose every row was trained on gets no entry."""
    train_rng, test_rng, few_rng = np.random.default_rng(seed).spawn(3)  # independent streams of rows
    lengths = train_rng.integers(MIN_LEN, max_len + 1, size=steps)  # one length per training step
    batches = [train_rng.integers(0, DIGITS, size=(BATCH, T), dtype=np.int64) for T in lengths]
    trained = {row.tobytes() for x in batches for row in x}
    tests = {}
    for T in range(MIN_LEN, max_len + 1):
        if DIGITS**T <= LISTED:  # the numbers 0..10^T - 1 shuffled, as rows of T digits
            place = DIGITS ** np.arange(T - 1, -1, -1, dtype=np.int64)  # [T]: 10^(T-1) .. 1
            candidates = test_rng.permutation(DIGITS**T).astype(np.int64)[:, None] // place % DIGITS
        else:  # too many to list: random rows (a few may repeat)
            candidates = test_rng.integers(0, DIGITS, size=(20 * TEST_ROWS, T), dtype=np.int64)
        held = first_unseen(candidates, trained)
        if held is not None:
            tests[T] = held
    digits = few_rng.random((20 * TEST_ROWS, DIGITS)).argsort(1)[:, :FEW]  # [N, FEW]: each row's own digits
    places = few_rng.integers(0, FEW, size=(20 * TEST_ROWS, max_len))  # [N, max_len]: which one at each place
    few = first_unseen(np.take_along_axis(digits, places, axis=1).astype(np.int64), trained)
    return [torch.from_numpy(x) for x in batches], tests, few


def first_unseen(candidates, trained):
    """The first TEST_ROWS different rows of candidates [N, T] that are not in trained (a set
    of rows as bytes), as a tensor [<= TEST_ROWS, T]; None if there are none."""
    held = {}  # the rows kept, keyed by their bytes so that each is kept once
    for row in candidates:
        if row.tobytes() not in trained:
            held.setdefault(row.tobytes(), row)
            if len(held) == TEST_ROWS:
                break
    return torch.from_numpy(np.stack(list(held.values()))) if held else None


def accuracy_by_length(model, tests, look_back="all"):
    """{length: share of digits written right}, the model writing alone; and the alignment
    tables of the 8-digit test rows (attention model only)."""
    accuracy, alpha8 = {}, None
    with torch.no_grad():
        for T, x in tests.items():
            logits, alpha = translate(model, x, None, look_back)
            accuracy[T] = copied(logits, x)
            if T == len(EXAMPLE):
                alpha8 = alpha
    return accuracy, alpha8


def copied(logits, x):
    """The share of the digits of the rows x [N, T] that scores logits [N, T, DIGITS] write right."""
    return (logits.argmax(-1) == x).double().mean().item()


def short_and_long(accuracy, rows):
    """(short lengths, long lengths) and {model name: (share of digits right over all the
    held-out rows of the short lengths, and of the long ones)}; rows: {length: held-out rows}."""
    lengths = list(rows)
    groups = [T for T in lengths if T <= SHORT], lengths[-3:]

    def pooled(acc, group):  # every digit of every row counts once
        return sum(acc[T] * rows[T] * T for T in group) / sum(rows[T] * T for T in group)

    return groups, {name: tuple(pooled(acc, group) for group in groups) for name, acc in accuracy.items()}


def with_other_earlier_states(model, x, look_back="all", decode=decode):
    """Which digits written change [N, T] when each row of x [N, T] is decoded from the earlier
    encoder states h_1..h_(T-1) of another row (the one before it) and its own h_T = c."""
    with torch.no_grad():
        H = encode(model, x)  # [N, T, n]
        other = torch.cat([H.roll(1, 0)[:, :-1], H[:, -1:]], dim=1)  # [N, T, n]: c kept, the rest swapped
        own, swapped = (decode(model, states, None, look_back)[0].argmax(-1) for states in (H, other))
    return own != swapped


def only_through_c(changed):
    """Section 1's bottleneck: the fixed-context decoder writes the same digits when only its
    earlier states change (c is all it knows), while the attention decoder, which reads
    them, changes more than CHANGED of its digits. changed: {name: [N, T] bool}."""
    return not changed["fixed-context"].any().item() and changed["attention"].double().mean().item() > CHANGED


def copied_better_with_fewer_digits(few, every):
    """The detail verdict, as measured: rows drawn from FEW digits get at least DETAIL_GAP more of
    their digits copied right than rows drawn from all 10, at the same length (few, every: the
    shares right)."""
    return round(few - every, 9) >= DETAIL_GAP  # (rounded: 0.50 - 0.45 is 0.04999... in floating point)


def largest_step(accuracy):
    """The largest fall from one length to the next, as a share of the whole fall (the
    highest accuracy less the lowest); accuracy {length: share right}, lengths in order."""
    values = list(accuracy.values())
    fall = max(values) - min(values)
    return max(a - b for a, b in pairwise(values)) / fall if fall > 0 else 0.0


def share_on_copied_digit(alpha):
    """Share of writing steps whose biggest weight is on the digit being copied (the
    diagonal, since step t copies digit t), for alignment tables alpha [rows, T, T]."""
    return (alpha.argmax(-1) == torch.arange(alpha.shape[-1])).double().mean().item()


def soft_share(alpha):
    """Of the writing steps whose biggest weight is on the digit copied, the share where that
    weight is below SOFT (0 if there are none); alpha [rows, T, T]."""
    on = alpha.argmax(-1) == torch.arange(alpha.shape[-1])  # [rows, T]
    weight = alpha.diagonal(dim1=1, dim2=2)  # [rows, T]: the weight on the digit copied
    return (weight[on] < SOFT).double().mean().item() if on.any() else 0.0


def held_out_exceptions(rows, max_len):
    """The lengths with fewer than TEST_ROWS held-out rows, in words: only short ones, whose
    rows are all listed."""
    lines = []
    for T in range(MIN_LEN, max_len + 1):
        possible, kept = DIGITS**T, rows.get(T, 0)
        if kept == 0:
            lines.append(f"{T} digits: none, training showed all {possible:,}: rows of {T} digits are not scored")
        elif kept == possible:
            lines.append(f"{T} digits: all {possible:,} there are (training showed none of them)")
        elif kept < TEST_ROWS:
            lines.append(f"{T} digits: only {kept}, training showed the other {possible - kept:,} of the {possible:,}")
    return lines


def span(lengths):
    return f"{lengths[0]}-{lengths[-1]} digits" if len(lengths) > 1 else f"{lengths[0]} digits"


def work(steps, max_len, hidden):
    """The training's cost in units: measured, its time grows about like steps x max_len x
    max(1, hidden / 32) (fixed costs per operation dominate below a width of about 32)."""
    return steps * max_len * max(1, hidden / 32)


WORK_LIMIT = 20_000  # the largest work() allowed: about 4 times the defaults' training
DESCRIPTION = ("Fixed-context vs attention encoder-decoders on rows of digits of growing length (Week 1, sections 1 "
               "and 2).\nA run prints each model's share of digits copied right beside the threshold it is judged by, "
               "and verdicts;\n--table adds the accuracy at every length and the example's alignment table.\nSizes: "
               f"--steps x --max-len x max(1, --hidden / 32) may be at most {WORK_LIMIT:,} (the defaults: "
               f"{work(STEPS, MAX_LEN, HIDDEN):,.0f}).")
KNOBS = [knob("--hidden", type=int_range(4, 96), default=HIDDEN,
              help="n, the size of the summary c, of each h_i and of s; a wider note lifts the fixed-context "
              "model's long rows only slowly, far below the attention model's (measured over seeds: "
              "week1/NOTES.md, section 09)"),
         knob("--max-len", type=int_range(8, 32), default=MAX_LEN, help="longest row, in digits"),
         knob("--steps", type=int_range(1, 1000), default=STEPS,
              help="training steps per model; more lift the fixed-context model's long rows too (measured: "
              "week1/NOTES.md, section 09)"),
         knob("--seed", type=SEED, default=42, help="seed of the weights and of the rows"),
         knob("--look-back", choices=["all", "last"], default="all",
              help="which encoder states the attention model may look at"),
         knob("--table", action="store_true",
              help="also print the detail the default does not: each model's accuracy at every length, and the "
              "example row's alignment table, step by step (its numbers vary slightly between CPUs)")]
TRY_IT = [("--table", "the accuracy at every length and the example's alignment table"),
          ("--max-len 8", "rows of at most 8 digits: short enough for the one note, so the fixed-context "
           "model does not fall below 0.60"),
          ("--hidden 96", "a note twice as wide: the fixed-context model copies about 0.1 more of the long "
           "rows' digits (the verdict may turn, just), still far fewer than the attention model"),
          ("--look-back last", "attention that may see only the last encoder state is the fixed context again: it "
           "falls off too")]
FIGURE_HELP = ("where to save the figure; a default run saves it under build/ (its pixels vary by CPU), the README's "
               "copy is week1/figures/bottleneck_accuracy_by_length.png")
LIVE = "watch both trainings: the losses and the alignment table redrawn as they learn, then the figure"


def limits(args):
    """Too much training, in one line naming only the flags that would lower it; else None."""
    cost = work(args.steps, args.max_len, args.hidden)
    if cost <= WORK_LIMIT:
        return None
    lower = [flag for flag, can in (("--steps", args.steps > 1), ("--max-len", args.max_len > 8),
                                    ("--hidden", args.hidden > 32)) if can]
    return (f"--steps x --max-len x max(1, --hidden / 32) is {cost:,.0f}; the limit is {WORK_LIMIT:,} (about 4 "
            f"times the default run's training): make {' or '.join(lower)} smaller")


def make_figure(accuracy, rows, example_alpha, max_len):
    """Left: held-out accuracy against length, one line per model (Bahdanau's Figure 2).
    Right: the attention model's alignment table for the example."""
    lengths = list(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for name, colour, marker in (("fixed-context", "tab:red", "o"), ("attention", "tab:blue", "s")):
        left.plot(lengths, [accuracy[name][T] for T in lengths], marker=marker, color=colour, label=name)
    left.axhline(1 / DIGITS, color="grey", linestyle=":", label="guessing")
    left.set(xlabel="digits in the row (source length)", ylabel="share of digits copied right",
             xlim=(MIN_LEN - 0.5, max_len + 0.5), ylim=(0, 1.05), title="Accuracy on rows never trained on")
    note = [f"held out: {TEST_ROWS} rows per length"]
    for T in range(MIN_LEN, max_len + 1):
        if T not in rows:
            note.append(f"{T} digits: none (all trained on)")
        elif rows[T] < TEST_ROWS:
            note.append(f"{T} digits: only {rows[T]} rows")
    left.text(0.02, 0.14, "\n".join(note), transform=left.transAxes, fontsize=8, color="dimgrey", va="bottom")
    left.legend(loc="center left")
    image = right.imshow(example_alpha, cmap="Greys", vmin=0, vmax=1)
    fig.colorbar(image, ax=right, label="weight alpha (each row sums to 1)")
    ticks = range(len(EXAMPLE))
    right.set_xticks(ticks, [str(d) for d in EXAMPLE])
    right.set_yticks(ticks, [str(d) for d in EXAMPLE])
    right.set(xlabel="digit read (source)", ylabel="digit written (target)", title="Attention's alignment table")
    fig.tight_layout()
    return fig


def live_training(steps, look_back):
    """The window that follows both trainings (--live), and its redraw: each model's loss as
    it falls, and the attention model's alignment table for the example row, as it forms."""
    from common.live import Blit, View  # the Try it view, loaded only for --live
    fig, (loss_ax, table_ax) = plt.subplots(1, 2, figsize=(12, 5.5), width_ratios=(3, 2))
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.12, top=0.86, wspace=0.25)  # fixed: quicker redraws
    curves = {name: loss_ax.plot([], [], color=colour, label=name)[0]
              for name, colour in (("fixed-context", "tab:red"), ("attention", "tab:blue"))}
    loss_ax.set(xlim=(0.5, steps + 0.5), ylim=(0, 2.5), xlabel="training step", ylabel="loss (cross-entropy)")
    loss_ax.legend(loc="upper right")
    image = table_ax.imshow(np.zeros((len(EXAMPLE), len(EXAMPLE))), cmap="Greys", vmin=0, vmax=1, interpolation="none")
    table_ax.set_xticks(range(len(EXAMPLE)), [str(d) for d in EXAMPLE])
    table_ax.set_yticks(range(len(EXAMPLE)), [str(d) for d in EXAMPLE])
    table_ax.set(xlabel="digit read (source)", ylabel="digit written (target)",  # (blank: it trains second)
                 title="the attention model's alignment table\n(blank until it trains, second)")
    fig.suptitle("Training as it happens: two translators, one summary or a look back")
    blit = Blit(fig)
    blit.add(*curves.values(), loss_ax.title, image, table_ax.title)  # what a redraw changes

    def redraw(name, attention, step, losses, model):
        curves[name].set_data(range(1, len(losses) + 1), losses)
        loss_ax.set_title(f"the {name} model, step {step} of {steps}: loss {losses[-1]:.2f}")
        if attention:
            with torch.no_grad():
                _, alpha = translate(model, torch.tensor([EXAMPLE]), None, look_back)
            image.set_data(alpha[0].numpy())
            table_ax.set_title(f"its alignment table, step {step}")

    return View(fig, blit=blit), redraw


LESSON = Lesson(__file__, page=("week1", 1), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT,
                figure=FIGURE_HELP, live=LIVE, training=True, limits=limits,
                print_only=("table",))


def main(argv=None):
    args = LESSON.args(argv)
    window = None
    if args.live:
        from common.live import TrainingWindow  # the Try it view, loaded only for --live

        window = TrainingWindow(live_training, args.steps, args.look_back)  # follows both trainings
    accuracy, rows, example_alpha = lesson(args, window)
    if args.live:
        from common.live import View, show

        show(lambda: View(make_figure(accuracy, rows, example_alpha, args.max_len)))  # the figure a default run saves


if __name__ == "__main__":
    run(main)
