"""One fixed-size summary forgets long rows; attention does not (a small Bahdanau Figure 2).

Page: Week 1, section 1 "The squeezed summary (seq2seq bottleneck)" and section 2
"Looking back instead of remembering (Bahdanau attention)".

    encoder:        h_i = GRU(h_{i-1}, x_i);   the decoder starts from s_0 = h_T
    fixed-context:  c_t = c = h_T                          the one summary of section 1
    attention:      e_ti = v_a . tanh(W_a s_{t-1} + U_a h_i),   alpha_t = softmax(e_t),
                    c_t = sum_i alpha_ti h_i               section 2 (week1/05 computes one step)
    both:           s_t = GRUCell([y_{t-1}, c_t], s_{t-1});   guess_t = argmax W_out [s_t, c_t]

Two GRU encoder-decoders of the same size learn to copy rows of 2 to 12 digits, from the
same starting weights on the same rows; they differ only in c_t. Prints, on held-out rows
(never trained on): the share of digits each copies right (bands, short and long rows) and a
verdict per section; section 1's finer claims (c is all the fixed-context decoder knows; more
detail strains c; a strain, not a law: the fall length by length); section 2's alignment
tables (rows sum to 1; the biggest weight on the digit copied, yet soft). Saves a figure.
Setup (the page gives none): n = 48 numbers in c, in every h_i and in s; 300 steps of Adam on
128 rows of one length a step; a one-way encoder, so the digit to copy sits in one h_i.
Notes: week1/NOTES.md, section 09.
"""
import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import REPO_ROOT, run
from common.cli import SEED, Lesson, int_range, knob
from common.figures import figure_path, plt, save_figure
from common.live import Blit, TrainingWindow, View, show
from common.progress import Progress
from common.records import band, check, said

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DIGITS = 10  # the words are the digits 0..9
START = DIGITS  # the decoder's first input, "start writing": an 11th input word
EMBED = 16  # numbers per digit vector
HIDDEN = 48  # n: the numbers in c, in every h_i and in s


def additive_scores(s, HU_a, W_a, v_a):
    """e_i = v_a . tanh(s W_a + h_i U_a) for s [B, n] and HU_a = H U_a [B, T, n_a]: [B, T]."""
    return torch.tanh((s @ W_a)[:, None, :] + HU_a) @ v_a  # [B, 1, n_a] + [B, T, n_a]; then [B, T]


def encode(model, x):
    """The encoder's states h_1..h_T for the rows x [B, T]: [B, T, n]."""
    return model["encoder"](model["source_embed"](x))[0]


def decode(model, H, y_in, attention, look_back="all"):
    """Write T digits from the encoder states H [B, T, n], fed y_in [B, T] (teacher forcing) or,
    if y_in is None, its own previous guesses. Returns scores [B, T, DIGITS] and, for the
    attention model, the alignment tables alpha [B, T_target, T_source]."""
    c = H[:, -1]  # [B, n]: the encoder's last state, the fixed-size summary
    s = c  # s_0: both decoders start from the summary
    B, T = H.shape[:2]
    if attention:
        p = model["attention"]
        HU_a = H @ p["U_a"]  # [B, T, n_a]: the h_i U_a half of every score, the same at each step
        unseen = torch.arange(T) < T - 1  # with look_back "last": every state but h_T
    fed = None if y_in is None else model["target_embed"](y_in)  # [B, T, EMBED]: teacher forcing
    if fed is not None and not attention:  # c_t = c at every step, and every y_(t-1) is given
        return model["out"](fixed_context_decoder(model["decoder"], fed, c)), None
    guess = torch.full((B,), START)  # writing alone: the previous guess, at first "start writing"
    states, logits, alphas = [], [], []
    for t in range(T):
        if attention:
            e = additive_scores(s, HU_a, p["W_a"], p["v_a"])  # [B, T]: a score per digit read
            if look_back == "last":
                e = e.masked_fill(unseen, -torch.inf)  # weight 0 on every state but h_T
            alpha = torch.softmax(e, dim=-1)  # [B, T]: where step t looks, sums to 1
            c_t = (alpha[:, :, None] * H).sum(1)  # [B, n]: sum_i alpha_ti h_i
            alphas.append(alpha)
        else:
            c_t = c
        y = model["target_embed"](guess) if fed is None else fed[:, t]  # [B, EMBED]: y_(t-1)
        s = model["decoder"](torch.cat([y, c_t], dim=-1), s)  # [B, n]
        states.append(torch.cat([s, c_t], dim=-1))  # [B, 2n]: what the output layer reads
        if fed is None:
            logits.append(model["out"](states[-1]))  # [B, DIGITS]
            guess = logits[-1].argmax(-1)
    # teacher forced, the output layer reads all T steps at once (one call instead of T)
    scores = model["out"](torch.stack(states, 1)) if fed is not None else torch.stack(logits, 1)
    return scores, (torch.stack(alphas, 1) if attention else None)


def translate(model, x, y_in, attention, look_back="all"):
    """Read the rows x [B, T] and write T digits: decode(encode(x)), with decode's returns."""
    return decode(model, encode(model, x), y_in, attention, look_back)


def build(hidden, seed):
    """Both models' weights; the fixed-context model never uses model["attention"]."""
    torch.manual_seed(seed)
    model = nn.ModuleDict({
        "source_embed": nn.Embedding(DIGITS, EMBED),
        "target_embed": nn.Embedding(DIGITS + 1, EMBED),  # + the START word
        "encoder": nn.GRU(EMBED, hidden, batch_first=True),
        "decoder": nn.GRUCell(EMBED + hidden, hidden),
        "out": nn.Linear(2 * hidden, DIGITS),  # [s_t, c_t] -> a score per digit
    })
    scale = hidden**-0.5  # keeps s W_a and h_i U_a near size 1 at the start
    model["attention"] = nn.ParameterDict({
        "W_a": nn.Parameter(scale * torch.randn(hidden, hidden)),
        "U_a": nn.Parameter(scale * torch.randn(hidden, hidden)),
        "v_a": nn.Parameter(scale * torch.randn(hidden)),
    })
    return model


def fixed_context_decoder(cell, fed, c):
    """The fixed-context decoder fed the true previous digits (teacher forcing), all T steps in
    one call: s_t = GRUCell([y_(t-1), c], s_(t-1)) from s_0 = c, run by torch's own GRU loop
    with the cell's weights. Returns what the output layer reads, [s_t, c] for every t: [B, T, 2n].
    Speed: every input is known in advance (c never changes), so torch computes their part of
    the gates for all steps at once, and the loop runs without Python (7 to 12% off this model's training)."""
    C = c[:, None].expand(-1, fed.shape[1], -1)  # [B, T, n]: the same c at every step
    S, _ = torch.gru(torch.cat([fed, C], dim=-1), c[None], [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh],
                     has_biases=True, num_layers=1, dropout=0.0, train=True, bidirectional=False,
                     batch_first=True)  # [B, T, n]: s_1..s_T
    return torch.cat([S, C], dim=-1)


# ---------------------------------------------------------------- training, and the held-out rows

MIN_LEN = 2  # shortest row, in digits
MAX_LEN = 12  # longest row, in digits
STEPS = 300  # training steps per model
BATCH = 128  # rows per training step, all of one length
LR = 0.02  # Adam's learning rate at the first step; it falls linearly to 0
CLIP = 1.0  # largest gradient norm
TEST_ROWS = 200  # held-out rows per length, at most
FEW = 2  # rows with less detail: each drawn from this many of the 10 digits
LISTED = 10_000  # lengths with at most this many possible rows: every one is a test candidate
MODELS = (("fixed-context", False), ("attention", True))  # (name, does it look back?)


def as_one_vector(params):
    """The tensors `params` as one vector w, and their gradients as one vector g: each becomes
    a view into w, its .grad a view into g, and backward() adds into g. (Speed: Adam treats every
    weight on its own, so it updates them all in a few operations instead of a few per tensor.)"""
    w = torch.cat([p.detach().reshape(-1) for p in params])
    g = torch.zeros_like(w)
    start = 0
    for p in params:
        end = start + p.numel()
        p.data, p.grad = w[start:end].view_as(p), g[start:end].view_as(p)
        start = end
    return w, g


@torch.no_grad()
def adam_step(w, g, moments, step, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam update of the weights w given their gradients g, as torch.optim.Adam does it
    (written out: importing torch.optim costs most of a second here). moments: the running
    averages (m, v) of g and of g^2, weight by weight. Not common.blocks.adam_step: its m.lerp_
    rounds otherwise, which moves --table's exact numbers (week1/NOTES.md, section 09)."""
    m, v = moments
    m.mul_(beta1).add_(g, alpha=1 - beta1)  # average gradient
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)  # average squared gradient
    denominator = (v.sqrt() / (1 - beta2**step) ** 0.5).add_(eps)
    w.addcdiv_(m, denominator, value=-lr / (1 - beta1**step))


def train(model, attention, batches, look_back="all", watch=None):
    """Teacher-forced training on batches (a list of digit rows [BATCH, T]). Returns the
    loss of every step. watch(step, losses, model), if given, is called after each step,
    with the losses so far: to show progress, or to draw the training as it goes."""
    params = [p for name, p in model.named_parameters() if attention or not name.startswith("attention")]
    w, g = as_one_vector(params)
    moments = torch.zeros_like(w), torch.zeros_like(w)
    steps, losses = len(batches), []
    for step, x in enumerate(batches, start=1):
        y_in = torch.cat([torch.full((len(x), 1), START), x[:, :-1]], dim=1)  # START, then the row shifted
        logits, _ = translate(model, x, y_in, attention, look_back)
        loss = F.cross_entropy(logits.reshape(-1, DIGITS), x.reshape(-1))
        g.zero_()
        loss.backward()
        nn.utils.clip_grad_norm_(params, CLIP)
        adam_step(w, g, moments, step, LR * (1 - (step - 1) / steps))
        losses.append(loss.item())
        if watch is not None:
            watch(step, losses, model)
    return losses


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


def accuracy_by_length(model, attention, tests, look_back="all"):
    """{length: share of digits written right}, the model writing alone; and the alignment
    tables of the 8-digit test rows (attention model only)."""
    accuracy, alpha8 = {}, None
    with torch.no_grad():
        for T, x in tests.items():
            logits, alpha = translate(model, x, None, attention, look_back)
            accuracy[T] = copied(logits, x)
            if T == len(EXAMPLE):
                alpha8 = alpha
    return accuracy, alpha8


def copied(logits, x):
    """The share of the digits of the rows x [N, T] that scores logits [N, T, DIGITS] write right."""
    return (logits.argmax(-1) == x).double().mean().item()


def experiment(hidden, max_len, steps, seed, look_back="all", window=None):
    """Train both models on the same rows and test them on the same held-out rows. Returns a
    dict: "models" {name: trained model}, "accuracy" {name: {length: accuracy}}, "tests" (the
    held-out rows), "few" (the rows of FEW digits), the attention model's alignment tables
    "alpha8" for the 8-digit test rows [N, 8, 8] and "example_alpha" for EXAMPLE [8, 8].
    window: a TrainingWindow (--live) that watches each training as it goes."""
    batches, tests, few = training_and_test_rows(seed, max_len, steps)
    out = {"models": {}, "accuracy": {}, "tests": tests, "few": few}
    for name, attention in MODELS:
        model = out["models"][name] = build(hidden, seed)
        with Progress(f"training the {name} model: step", steps) as progress:
            def watch(step, losses, model, name=name, attention=attention):
                progress.update(step)
                if window:
                    window.watch(name, attention, step, losses, model, last=step == steps)

            train(model, attention, batches, look_back, watch=watch)
        out["accuracy"][name], out["alpha8"] = accuracy_by_length(model, attention, tests, look_back)
    with torch.no_grad():  # model is now the trained attention model
        _, example_alpha = translate(model, torch.tensor([EXAMPLE]), None, True, look_back)
    out["example_alpha"] = example_alpha[0].numpy()
    return out


# ---------------------------------------------------------------- what the two models learned

SHORT = 4  # "short rows": held-out rows of up to 4 digits; "long rows": the three longest lengths
HIGH, LOW = 0.90, 0.60  # the bands: above HIGH, LOW to HIGH, below LOW
ALIGNED = 0.80  # share of writing steps whose biggest weight must be on the digit copied
SUMS_TO_1 = 5e-7  # a row "sums to 1" within this (it prints as 1.000000; float32 rounding is about 1e-7)
SOFT = 0.90  # a soft alignment: the weight on the digit copied is below this in most of those steps
MOST = 0.5  # "most": more than this share
CHANGED = 0.5  # the attention model reads the earlier states: more than this share of its digits change
DETAIL_GAP = 0.05  # more detail strains c: the rows of FEW digits get at least this much more right
ONE_STEP = 0.5  # a law would break at one length: one step to the next length taking this much of the fall
EXAMPLE = [2, 7, 1, 8, 5, 0, 9, 4]  # the row whose alignment table --table prints and the figure draws


def short_and_long(accuracy, rows):
    """(short lengths, long lengths) and {model name: (share of digits right over all the
    held-out rows of the short lengths, and of the long ones)}; rows: {length: held-out rows}."""
    lengths = list(rows)
    groups = [T for T in lengths if T <= SHORT], lengths[-3:]

    def pooled(acc, group):  # every digit of every row counts once
        return sum(acc[T] * rows[T] * T for T in group) / sum(rows[T] * T for T in group)

    return groups, {name: tuple(pooled(acc, group) for group in groups) for name, acc in accuracy.items()}


def with_other_earlier_states(model, attention, x, look_back="all", decode=decode):
    """Which digits written change [N, T] when each row of x [N, T] is decoded from the earlier
    encoder states h_1..h_(T-1) of another row (the one before it) and its own h_T = c."""
    with torch.no_grad():
        H = encode(model, x)  # [N, T, n]
        other = torch.cat([H.roll(1, 0)[:, :-1], H[:, -1:]], dim=1)  # [N, T, n]: c kept, the rest swapped
        own, swapped = (decode(model, states, None, attention, look_back)[0].argmax(-1) for states in (H, other))
    return own != swapped


def only_through_c(changed):
    """Section 1's bottleneck: the fixed-context decoder writes the same digits when only its
    earlier states change (c is all it knows), while the attention decoder, which reads
    them, changes more than CHANGED of its digits. changed: {name: [N, T] bool}."""
    return not changed["fixed-context"].any().item() and changed["attention"].double().mean().item() > CHANGED


def strains_with_detail(few, every):
    """Detail-rich rows strain c: rows drawn from FEW digits get at least DETAIL_GAP more of
    their digits copied right than rows drawn from all 10, at the same length."""
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


def lesson(args, window=None):
    """Both models trained and tested; prints section 1, then section 2. window: the --live
    TrainingWindow, if any. Returns what the figure draws."""
    torch.set_num_threads(1)  # tiny matrices: two threads were slower here, and make check runs a
    #                           second script beside this one
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
    print("  e = v_a . tanh(s W_a + h_i U_a): how useful h_i is now, given s, the decoder's own state")
    result = experiment(n, args.max_len, args.steps, args.seed, args.look_back, window)
    accuracy, tests, models = result["accuracy"], result["tests"], result["models"]
    rows = {T: len(x) for T, x in tests.items()}
    show_accuracy(accuracy, rows, args)
    show_only_through_c(models, tests[len(EXAMPLE)], args.look_back, args.table)
    show_detail(models["fixed-context"], result["few"], tests[args.max_len], args.table)
    show_strain_not_law(accuracy, rows, args.table)
    show_alignment(result["alpha8"], result["example_alpha"], rows, args.table)
    print(save_figure(make_figure(accuracy, rows, result["example_alpha"], args.max_len),
                      figure_path(args, FIGURE)))
    # The fixed-context decoder must pull every digit out of one vector of n numbers, and
    # the longer the row, the more it loses; the attention decoder reads each digit where it is.
    return accuracy, rows, result["example_alpha"]


def show_accuracy(accuracy, rows, args):
    """Section 1 and section 2's claim: the bands on short and long held-out rows, and the verdicts."""
    (short_lengths, long_lengths), summary = short_and_long(accuracy, rows)
    print(f"\nShare of digits copied right on held-out rows, never trained on (guessing gets {1 / DIGITS:.2f}):")
    print(f"  {'':14} {span(short_lengths):14} {span(long_lengths)}")
    for name, (short, long) in summary.items():
        attention = name == "attention"
        check(f"{name}: share of digits copied right, short and long rows",
              f"  {name:14} {band(short, LOW, HIGH):14} {band(long, LOW, HIGH)}",
              short > HIGH and (long > HIGH if attention else long < LOW), value=f"short {short:.4f}, long {long:.4f}",
              threshold=f"short rows above {HIGH:.2f}, long rows " + (f"above {HIGH:.2f}" if attention else
                                                                      f"below {LOW:.2f}"))
    exceptions = held_out_exceptions(rows, args.max_len)
    print(f"  held out: {TEST_ROWS} rows per length" + (", except:" if exceptions else ""))
    for line in exceptions:
        print(f"    {line}")
    print("  (bands, not numbers: training runs a little differently on each CPU; --table shows the numbers)")
    if args.table:
        print("  digits  rows  fixed-context  attention")
        for T in rows:
            print(f"  {T:6d}  {rows[T]:4d}  {accuracy['fixed-context'][T]:13.3f}  {accuracy['attention'][T]:9.3f}")
    short, long = summary["fixed-context"]
    if short > HIGH and LOW <= long <= HIGH:  # strained, not broken: the page's note (e.g. --max-len 8)
        check("fixed-context strained, not broken",
              f"Verdict (section 1): fixed-context falls from above {HIGH:.2f} only to {band(long, LOW, HIGH)} "
              f"on rows of up to {args.max_len} digits:\n  strained, not broken, as the page's note says (a "
              "strain, not a law)", True, value=f"short {short:.4f}, long {long:.4f}",
              threshold=f"short rows above {HIGH:.2f}, long rows {LOW:.2f} to {HIGH:.2f}")
    else:
        falls = short > HIGH and long < LOW
        check("fixed-context falls off as rows grow",
              f"Verdict (section 1): fixed-context {'falls' if falls else 'does not fall'} from above "
              f"{HIGH:.2f} to below {LOW:.2f} as rows grow:\n  {said(falls)}", falls,
              value=f"short {short:.4f}, long {long:.4f}",
              threshold=f"short rows above {HIGH:.2f}, long rows below {LOW:.2f}")
    holds = summary["attention"][1] > HIGH
    check("attention stays high on the longest rows",
          f"Verdict (section 2): attention {'stays' if holds else 'does not stay'} above {HIGH:.2f} "
          f"on the longest rows: {said(holds)}", holds,
          value=summary["attention"][1], threshold=f"long rows above {HIGH:.2f}")


def show_only_through_c(models, x, look_back, table):
    """Section 1's sticky note: c is all the fixed-context decoder knows of the row."""
    N, T = x.shape
    print(f"\nSection 1: \"whatever fits on the note is all the decoder ever knows\". The {N} held-out "
          f"{T}-digit rows\nagain, each with its earlier encoder states h_1..h_{T - 1} swapped for another "
          f"row's, and h_{T} = c kept:")
    changed = {name: with_other_earlier_states(models[name], attention, x, look_back)
               for name, attention in MODELS}
    n_fixed, share = int(changed["fixed-context"].sum()), changed["attention"].double().mean().item()
    print(f"  fixed-context: digits written that changed: {n_fixed:,} of {x.numel():,}")
    print(f"  attention:     digits written that changed: {'more than' if share > CHANGED else 'at most'} "
          f"{CHANGED:.0%} of the {x.numel():,}" + (f" (exactly {share:.3f})" if table else ""))
    holds = only_through_c(changed)
    check("the fixed-context decoder knows the row only through c",
          f"Verdict (section 1): the fixed-context decoder knows the row only through c; the attention one\n"
          f"  reads the other states too: {said(holds)}", holds,
          value=f"fixed-context {n_fixed} of {x.numel()} changed, attention {share:.4f}",
          threshold=f"fixed-context: no digit changes; attention: more than {CHANGED:.0%} change")


def show_detail(model, few, every, table):
    """Section 1's bottleneck, the other way to strain c: more detail at the same length."""
    T = every.shape[1]
    with torch.no_grad():
        right = {kind: copied(translate(model, x, None, False)[0], x) for kind, x in (("few", few), ("all", every))}
    print(f"\nSection 1: \"long or detail-rich inputs strain it\": more detail at one length. The "
          f"fixed-context\nmodel on {len(few)} held-out rows of {T} digits drawn from {FEW} digits each ({FEW} picked "
          f"per row), and on\nits {len(every)} rows drawn from all {DIGITS}.")
    if table:
        print(f"  (exactly {right['few']:.3f} and {right['all']:.3f} of their digits copied right)")
    holds = strains_with_detail(right["few"], right["all"])
    check("detail-rich rows strain c",
          f"Verdict (section 1): more detail strains the note: rows of {FEW} digits get more of their digits\n"
          f"  copied right, by {DETAIL_GAP:.2f} or more: {said(holds)}", holds,
          value=f"{FEW} digits {right['few']:.4f}, all {DIGITS} {right['all']:.4f}",
          threshold=f"the rows of {FEW} digits at least {DETAIL_GAP:.2f} more right")
    print(f"  (not shown: training saw only rows of all {DIGITS} digits, so rows of {FEW} are unfamiliar as\n"
          "  well as plainer; other lengths are measured in week1/NOTES.md, section 09)")


def show_strain_not_law(accuracy, rows, table):
    """Section 1's note: a strain, not a law. The fixed-context model length by length."""
    fixed = accuracy["fixed-context"]
    print("\nSection 1's note, \"a strain, not a law\": the fixed-context model length by length, on held-out "
          "rows:")
    stretches = []  # (band, first length, last length), lengths in order
    for T, share in fixed.items():
        if stretches and stretches[-1][0] == band(share, LOW, HIGH):
            stretches[-1][2] = T
        else:
            stretches.append([band(share, LOW, HIGH), T, T])
    check("the fixed-context model length by length", "  " + ", ".join(
          f"{words} at {span([first, last] if last > first else [first])}" for words, first, last in stretches),
          None, value=" ".join(f"{T}:{share:.4f}" for T, share in fixed.items()),
          threshold=f"bands: above {HIGH:.2f}, {LOW:.2f} to {HIGH:.2f}, below {LOW:.2f}")
    step = largest_step(fixed)
    gradual = step < ONE_STEP
    check("the fixed-context model breaks at no one length",
          f"  it breaks at no one length: no step to the next length takes {ONE_STEP:.0%} of its whole fall: "
          f"{'yes' if gradual else 'no'}", gradual, value=step,
          threshold=f"every step to the next length less than {ONE_STEP:.0%} of the whole fall")
    if table:
        print(f"  (the largest step: exactly {step:.3f} of the fall)")
    long = short_and_long(accuracy, rows)[1]["attention"][1]
    holds = gradual and long > HIGH
    check("a strain, not a law",
          "Verdict (section 1, note): a strain, not a law (the fixed-context model falls length by length;\n"
          f"  the attention model stays above {HIGH:.2f} on the longest rows): {said(holds)}", holds,
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
    check("every row of the alignment tables sums to 1",
          f"  the {sums.numel():,} rows here sum to between {low:.6f} and {high:.6f}",
          max(abs(low - 1), abs(high - 1)) < SUMS_TO_1, value=f"{low:.9f} to {high:.9f}",
          threshold=f"every row within {SUMS_TO_1:g} of 1")
    on_digit = share_on_copied_digit(alpha8)
    check("the biggest weight is on the digit copied",
          f"  a writing step looks hardest at the very digit it copies, in at least {ALIGNED:.0%} of the steps: "
          f"{'yes' if on_digit >= ALIGNED else 'no'}", on_digit >= ALIGNED, value=on_digit,
          threshold=f"at least {ALIGNED:.0%} of the writing steps")
    soft = soft_share(alpha8)
    check("the weight on the digit copied is soft",
          f"  and in most of those steps (more than {MOST:.0%}) its weight there is below {SOFT:.2f}: "
          f"{'yes' if soft > MOST else 'no'}", soft > MOST, value=soft,
          threshold=f"below {SOFT:.2f} in more than {MOST:.0%} of the steps that look hardest at it")
    if table:
        print(f"  (exactly {on_digit:.3f} of them, and {soft:.3f} of those)")
        print(f"  the table for the row {' '.join(map(str, EXAMPLE))}:")
        print("           reads " + "    ".join(map(str, EXAMPLE)))
        for digit, row in zip(EXAMPLE, example_alpha, strict=True):
            print(f"    writes {digit}:  " + " ".join(f"{a:.2f}" for a in row))
    holds = on_digit >= ALIGNED and soft > MOST
    check("a weight is a learned soft alignment",
          "Verdict (section 2, Mistakes): a weight is a learned soft alignment: it finds the digit, but shares\n"
          f"  the row with others: {said(holds)}", holds, value=f"{on_digit:.4f}, {soft:.4f}",
          threshold=f"biggest weight on the digit copied in at least {ALIGNED:.0%} of the steps, below {SOFT:.2f} "
          f"in more than {MOST:.0%} of those")


# ---------------------------------------------------------------- optional: knobs, Try it, figure, live window

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
               "and 2).\nTraining runs a little differently on each CPU, so a default run prints accuracy bands and "
               "verdicts; --table adds the exact numbers.\nSizes: --steps x --max-len x max(1, --hidden / 32) may be "
               f"at most {WORK_LIMIT:,} (the defaults: {work(STEPS, MAX_LEN, HIDDEN):,.0f}).")
KNOBS = [knob("--hidden", type=int_range(4, 96), default=HIDDEN,
              help="n, the size of the summary c, of each h_i and of s; measured, each doubling of n lifts the "
              "fixed-context model's share of the long rows' digits by only about 0.1 (0.47 to 0.50 at 48, 0.57 "
              "to 0.63 at 96), far below the attention model's"),
         knob("--max-len", type=int_range(8, 32), default=MAX_LEN, help="longest row, in digits"),
         knob("--steps", type=int_range(1, 1000), default=STEPS,
              help="training steps per model; more lift the fixed-context model's long rows too (measured, seed "
              "42: 0.50 at 300, 0.63 at 600, 0.73 at 1,000)"),
         knob("--seed", type=SEED, default=42, help="seed of the weights and of the rows"),
         knob("--look-back", choices=["all", "last"], default="all",
              help="which encoder states the attention model may look at"),
         knob("--table", action="store_true",
              help="also print the exact accuracies and alignment (they vary slightly between CPUs)")]
TRY_IT = [("--table", "the exact accuracy at every length and the example's alignment table"),
          ("--max-len 8 --table", "rows of at most 8 digits: short enough for the one note, so the fixed-context "
           "model does not fall below 0.60"),
          ("--hidden 96 --table", "a note twice as wide: the fixed-context model copies about 0.1 more of the long "
           "rows' digits (the verdict may turn, just), still far fewer than the attention model"),
          ("--look-back last", "attention that may see only the last encoder state is the fixed context again: it "
           "falls off too")]
FIGURE_HELP = ("where to save the figure; a default run saves it under build/ (its pixels vary by CPU), the README's "
               "copy is week1/figures/bottleneck_accuracy_by_length.png")
LIVE = "watch both trainings: the losses and the alignment table redrawn as they learn, then the figure"
# Its pixels depend on the training trajectory, so on the CPU: a default run writes it to the
# git-ignored build/; the committed copy is made with --figure week1/figures/<same name>.
FIGURE = REPO_ROOT / "build" / "figures" / "week1" / "bottleneck_accuracy_by_length.png"


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
    fig, (loss_ax, table_ax) = plt.subplots(1, 2, figsize=(12, 5.5), width_ratios=(3, 2))
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.12, top=0.86, wspace=0.25)  # fixed: quicker redraws
    curves = {name: loss_ax.plot([], [], color=colour, label=name)[0]
              for name, colour in (("fixed-context", "tab:red"), ("attention", "tab:blue"))}
    loss_ax.set(xlim=(1, steps), ylim=(0, 2.5), xlabel="training step", ylabel="loss (cross-entropy)")
    loss_ax.legend(loc="upper right")
    image = table_ax.imshow(np.zeros((len(EXAMPLE), len(EXAMPLE))), cmap="Greys", vmin=0, vmax=1, interpolation="none")
    table_ax.set_xticks(range(len(EXAMPLE)), [str(d) for d in EXAMPLE])
    table_ax.set_yticks(range(len(EXAMPLE)), [str(d) for d in EXAMPLE])
    table_ax.set(xlabel="digit read (source)", ylabel="digit written (target)",
                 title="the attention model's alignment table")
    fig.suptitle("Training as it happens: two translators, one summary or a look back")
    blit = Blit(fig)
    blit.add(*curves.values(), loss_ax.title, image, table_ax.title)  # what a redraw changes

    def redraw(name, attention, step, losses, model):
        curves[name].set_data(range(1, len(losses) + 1), losses)
        loss_ax.set_title(f"the {name} model, step {step} of {steps}: loss {losses[-1]:.2f}")
        if attention:
            with torch.no_grad():
                _, alpha = translate(model, torch.tensor([EXAMPLE]), None, True, look_back)
            image.set_data(alpha[0].numpy())
            table_ax.set_title(f"its alignment table, step {step}")

    return View(fig, blit=blit), redraw


LESSON = Lesson(__file__, page=("week1", 1), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT,
                figure=FIGURE_HELP, live=LIVE, training=True, limits=limits,
                print_only=("table",))


def main(argv=None):
    args = LESSON.args(argv)
    window = TrainingWindow(live_training, args.steps, args.look_back) if args.live else None
    accuracy, rows, example_alpha = lesson(args, window)
    if args.live:
        show(lambda: View(make_figure(accuracy, rows, example_alpha, args.max_len)))  # the figure a default run saves


if __name__ == "__main__":
    run(main)
