"""The slow chain: an RNN passes word 1 on through T steps; attention reaches it in one.

Page: Week 1, section 1 "The squeezed summary (seq2seq bottleneck)", problem 2, the slow
chain: "an RNN's state depends on the previous state, so words are processed one after
another, and information from far-apart words has to travel through many steps (about T
steps for T words). A Transformer connects any two positions in one layer, a path length
of O(1)."

    RNN:        h_t = tanh(x_t W_xh + h_(t-1) W_hh),   output at word T = h_T
    attention:  Z = softmax(Q K^T / sqrt(d_k)) V,  Q = X W_Q, K = X W_K, V = X W_V (one head, d_k = d),
                output at word T = z_T (the last row of Z)

Two measurements, for T = 2, 4, 8, ... words, with torch's real autograd:
  - steps: the squashing functions (tanh or softmax, one per RNN step or attention layer)
    on the longest path from word 1 to the output at word T in torch's autograd graph.
    They must run one after another, so this is the number of sequential steps.
  - size: how strongly the output at word T reacts to word 1, the size (Frobenius norm) of
    the Jacobian d out_T / d x_1, averaged over a batch of random sentences. The same
    backward passes give it for every word t, so word 1 can also be compared with the
    average word of the sentence.

Prints, for each T, both models' steps and sizes, word 1 against the average word at the
longest T, and a verdict on each claim; saves the figure.
Setup (choices; the page gives none): width d = 16, every weight from N(0, 1/d), one
attention head, 128 random sentences of up to 64 words, float64. Notes: week1/NOTES.md,
section 10.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import attention
from common.cli import SEED, Lesson, float_range, int_range, knob, too_big
from common.figures import figure_path, plt, save_figure
from common.printing import readable
from common.records import record, said

import torch

FIGURE = Path(__file__).resolve().parent / "figures" / "slow_chain.png"
SQUASHES = {"TanhBackward0", "SoftmaxBackward0"}  # autograd's names for tanh and softmax
FADED = 1e-3  # the RNN fades: size at the longest T below this fraction of its size at T = 2
FACTOR = 3  # attention: word 1 / average word stays within 1/3..3 at every T


def rnn_output(X, W_xh, W_hh):
    """Output at the last word, h_T, of a tanh RNN run over X [B, T, d], one word at a time."""
    h = torch.zeros(X.shape[0], W_hh.shape[0], dtype=X.dtype)  # [B, d]: the state before word 1
    for t in range(X.shape[1]):  # each step needs the previous state: T steps in a row
        h = torch.tanh(X[:, t] @ W_xh + h @ W_hh)  # [B, d]
    return h


def attention_output(X, W_Q, W_K, W_V):
    """Output at the last word, z_T, of one self-attention layer over X [B, T, d]."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # [B, T, d] each, all words at once
    Z, A = attention(Q, K, V)  # softmax(Q K^T / sqrt(d_k)) V: Z [B, T, d], A [B, T, T]
    return Z[:, -1]  # [B, d]: row T of Z


def sequential_steps(out, x_1):
    """Squashing functions (tanh, softmax) on the longest path from x_1 to out in the
    autograd graph: the steps that must run one after another between them."""
    memo = {}

    def most_below(node):  # most squashes on a path from node down to x_1; None: no path
        if node not in memo:
            if getattr(node, "variable", None) is x_1:
                memo[node] = 0
            else:
                paths = [most_below(child) for child, _ in node.next_functions if child is not None]
                paths = [p for p in paths if p is not None]
                memo[node] = max(paths) + (node.name() in SQUASHES) if paths else None
        return memo[node]

    return most_below(out.grad_fn)


def measure(model, words):
    """Steps from word 1 to the output at the last word, and the sizes [B, T] of
    d out_T / d x_t for every sentence and word t, by autograd."""
    x_1 = words[:, :1].clone().requires_grad_()  # [B, 1, d]: word 1 as its own leaf
    rest = words[:, 1:].clone().requires_grad_()  # [B, T - 1, d]
    out = model(torch.cat([x_1, rest], dim=1))  # [B, d]: the output at word T
    steps = sequential_steps(out, x_1)
    size2 = 0  # [B, T]: squared size, summed over the output numbers
    for i in range(out.shape[1]):  # one backward pass per output number i: d out_T[i] / d x_t
        g_1, g_rest = torch.autograd.grad(out[:, i].sum(), (x_1, rest), retain_graph=True)
        size2 = size2 + torch.cat([g_1, g_rest], dim=1).pow(2).sum(dim=-1)  # sentences do not mix
    return steps, size2.sqrt()  # [B, T]: size (Frobenius norm) of d out_T / d x_t


def lengths(max_len):
    """T = 2, 4, 8, ... up to max_len, and max_len itself."""
    Ts = [2 ** k for k in range(1, max_len.bit_length()) if 2 ** k < max_len]
    return Ts + [max_len]


def plot(Ts, results):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    style = {"RNN": dict(color="tab:red", marker="o"), "attention": dict(color="tab:blue", marker="s")}
    for name, rows in results.items():
        left.plot(Ts, [r[0] for r in rows], label=name, **style[name])
        right.plot(Ts, [r[1] for r in rows], label=name, **style[name])
    for ax in (left, right):
        ax.set_xlabel("T, words in the sentence")
        ax.grid(alpha=0.3)
        ax.legend()
    left.set_ylabel("steps one after another")
    left.set_title("Steps from word 1 to the output at word T")
    right.set_yscale("log")
    right.set_ylabel("size of d out_T / d x_1 (log scale)")
    right.set_title("How much word 1 moves the output at word T")
    fig.tight_layout()
    return fig


def lesson(args):
    """Both models on the same random sentences, for T = 2, 4, 8, ...: steps and sizes."""
    d, B, Ts = args.d, args.sentences, lengths(args.max_len)
    torch.set_num_threads(1)  # tiny matrices: more threads only add waiting
    g = torch.Generator().manual_seed(args.seed)
    W_xh, W_hh, W_Q, W_K, W_V = (torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
                                 for _ in range(5))  # [d, d] each, entries of variance 1/d
    W_hh = args.rnn_gain * W_hh
    words = torch.randn(B, args.max_len, d, generator=g, dtype=torch.float64)  # [B, T_max, d]
    models = {"RNN": lambda X: rnn_output(X, W_xh, W_hh),
              "attention": lambda X: attention_output(X, W_Q, W_K, W_V)}

    results = {name: [] for name in models}  # name -> [(steps, mean size for word 1, word 1 / average word)]
    for T in Ts:
        for name, model in models.items():
            steps, size = measure(model, words[:, :T])  # size [B, T]
            word_1 = size[:, 0].mean().item()
            results[name].append((steps, word_1, word_1 / size.mean().item()))

    print(f"How word 1 reaches the output at word T (mean of {B} random sentences, d={d}):")
    print(f"{'T':>5} | {'RNN steps':>9} {'RNN size':>10} | {'attention steps':>15} {'attention size':>14}")
    for T, (r_steps, r_size, _), (a_steps, a_size, _) in zip(Ts, results["RNN"], results["attention"],
                                                            strict=True):
        print(f"{T:5d} | {r_steps:9d} {r_size:10.2e} | {a_steps:15d} {a_size:14.2e}")
    smallest = min(size for name in models for _, size, _ in results[name])  # the table's smallest size
    print("  (steps: tanh or softmax layers that word 1's signal passes one after another, counted in")
    print("   torch's autograd graph; size: |d out_T / d x_1|, how much the output at word T moves when")
    print(f"   word 1 moves; {smallest:.1e} means {readable(smallest)})")
    T, rnn, att = Ts[-1], results["RNN"], results["attention"]
    print(f"At T={T}, word 1's size / the average word's size: RNN {readable(rnn[-1][2], 2)}, "
          f"attention {att[-1][2]:.2f}")
    print("  (1 would mean word 1 counts as much as any word of the sentence)")

    chain = all(r[0] == length for length, r in zip(Ts, rnn, strict=True)) and all(a[0] == 1 for a in att)
    print("\nClaim: the RNN needs T steps one after another, attention 1 (path length O(T) vs O(1)).")
    print(f"Verdict: {said(chain)}")
    record("the RNN's path is T steps long, attention's 1", chain,
           value=f"RNN {[r[0] for r in rnn]}, attention {[a[0] for a in att]}",
           threshold="RNN steps = T at every T; attention steps = 1")

    faded = rnn[-1][1] / rnn[0][1]  # word 1's size at the longest T over its size at T = 2
    shares = [a[2] for a in att]  # attention: word 1 / average word, at every T
    fades, direct = faded < FADED, all(1 / FACTOR <= share <= FACTOR for share in shares)
    print("Claim: along the RNN's chain word 1's signal fades; through attention word 1 counts like any word.")
    print(f"  RNN: word 1's size at T={T} is {readable(faded, 3)} times its size at T={Ts[0]}\n"
          f"    (it fades if that is below {FADED:g})")
    print(f"  attention: word 1 / average word {min(shares):.2f}..{max(shares):.2f} "
          f"over all T (like any word if within a factor {FACTOR} of 1)")
    print(f"Verdict: {said(True)}" if fades and direct else
          f"Verdict: {said(False)} (RNN fades: {fades}; attention direct: {direct})")
    record("along the RNN word 1 fades", fades, value=faded, threshold=f"below {FADED:g} of its size at T={Ts[0]}")
    record("through attention word 1 counts like any word", direct, value=f"{min(shares):.2f}..{max(shares):.2f}",
           threshold=f"within a factor {FACTOR} of the average word at every T")
    # Attention's size falls only like 1/T because T words share its weights; the RNN's
    # falls by a factor at every step, because word 1 has to pass through all of them.

    print(save_figure(plot(Ts, results), figure_path(args, FIGURE)))


# ---------------------------------------------------------------- optional: knobs and Try it

KNOBS = [knob("--seed", type=SEED, default=42, help="seed of the torch generator"),
         knob("--d", type=int_range(2, 32), default=16, help="d, numbers per word and state (above 16, the size "
              "limit may ask for a smaller --max-len or --sentences)"),
         knob("--max-len", type=int_range(32, 128), default=64, help="longest sentence T (above 64, the size limit "
              "may ask for fewer --sentences or a smaller --d)"),
         knob("--sentences", type=int_range(32, 256), default=128, help="random sentences the sizes are averaged "
              "over (above 128, the size limit may ask for a smaller --d or --max-len)"),
         knob("--rnn-gain", type=float_range(0.25, 4.0), default=1.0,
              help="scale of W_hh: 1 draws it from N(0, 1/d) like the others")]
TRY_IT = [("--rnn-gain 0.5", "smaller recurrent weights: the RNN fades even faster"),
          ("--rnn-gain 2", "bigger recurrent weights: the RNN's signal no longer fades by 1000x (that verdict flips), "
           "yet the chain is still T steps"),
          ("--max-len 128 --sentences 32 --seed 7", "longer sentences, other weights: same story"),
          ("--d 4", "narrow words and state: same story")]


def limits(args):
    d, B, Ts = args.d, args.sentences, lengths(args.max_len)
    # per T: d backward passes through both models, each about twice its forward pass
    return too_big(numbers=B * args.max_len * max(d, args.max_len),
                   work=sum(2 * d * B * (5 * T * d * d + 2 * T * T * d) for T in Ts),
                   knobs=("--d", "--max-len", "--sentences"))


DESCRIPTION = ("The slow chain: steps and gradient size from word 1 to word T, for an RNN and for one attention "
               "layer (Week 1, section 1).")
LESSON = Lesson(__file__, page=("week1", 1), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits,
                figure="where to save the figure")


def main(argv=None):
    lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
