"""Padding changes what BatchNorm outputs for the real tokens; LayerNorm does not notice it.

Page: Week 2, section 6 "Residual connections and normalization", the LayerNorm vs
BatchNorm table: "Depends on other examples / padding? LayerNorm: No; BatchNorm: Yes";
"Statistics get contaminated by padding".

    y = gamma * (x - mean) / sqrt(var + eps) + beta

Sentences in one batch have different lengths, so the shorter ones are filled up with
padding positions to make one [B, T, d] tensor. BatchNorm takes the mean and variance of
each feature over every position of every sentence, padding included: add padding and the
statistics move, and with them the outputs of the real tokens. LayerNorm takes them over
the d features of one token, so a real token's output cannot see the padding.
Prints BatchNorm's statistics without and with padding, one token's outputs from both
norms both ways, the largest change any real token sees, the masked BatchNorm, and a
verdict. Setup (choices): 2 sentences of 4 real tokens, d = 8, torch's nn.BatchNorm1d and
nn.LayerNorm in training mode, 5 zero padding vectors per sentence, float64. Notes:
week2/NOTES.md, section 16.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob, too_big
from common.printing import vec
from common.records import record, said

import numpy as np
import torch
import torch.nn as nn

TOLERANCE = 1e-6  # a change in the real tokens' outputs above this is not rounding


def pad(x, n_pad):
    """[B, T, d] -> [B, T + n_pad, d]: n_pad zero vectors appended to every sentence."""
    B, _, d = x.shape
    return torch.cat([x, torch.zeros(B, n_pad, d, dtype=x.dtype)], dim=1)


def batchnorm(x):
    """torch's BatchNorm1d in training mode: each feature over every (sentence, position)."""
    bn = nn.BatchNorm1d(x.shape[-1], dtype=x.dtype)
    return bn(x.transpose(1, 2)).transpose(1, 2)  # it wants [B, d, T]


def layernorm(x):
    """torch's LayerNorm: each token over its own d features."""
    return nn.LayerNorm(x.shape[-1], dtype=x.dtype)(x)


def masked_batchnorm(x, T_real, eps=1e-5):
    """BatchNorm by hand with the statistics over the first T_real positions (the real ones)."""
    real = x[:, :T_real].reshape(-1, x.shape[-1])  # [B * T_real, d]
    mean, var = real.mean(dim=0), real.var(dim=0, unbiased=False)  # [d] each
    return (x - mean) / torch.sqrt(var + eps)


def real_token_change(norm, x, n_pad):
    """Largest change in the real tokens' outputs when n_pad padding positions are added."""
    T = x.shape[1]
    with torch.no_grad():
        return (norm(pad(x, n_pad))[:, :T] - norm(x)).abs().max().item()


def lesson(args):
    """The same real tokens through both norms, without and with padding, and BatchNorm masked."""
    B, T, P, d = args.batch, args.tokens, args.pad, args.d_model
    x = torch.from_numpy(np.random.default_rng(args.seed).standard_normal((B, T, d)))  # [B, T, d]
    pads = f"{P} padding position{'s' * (P != 1)}"
    print(f"{B} sentence{'s' * (B != 1)} of {T} real token{'s' * (T != 1)}, d={d}; {pads} (zero vectors) "
          f"added to each:\n  {B * P} of {B * (T + P)} positions are padding")
    print("  (padding fills sentences up to one length; the model is meant to ignore it)")

    x_pad = pad(x, P)  # [B, T + P, d]
    print("BatchNorm's statistics for feature 1, over every position of every sentence:")
    for name, batch in (("without padding", x), ("with padding", x_pad)):
        values = batch[:, :, 0]  # [B, T'] feature 1 of every position
        print(f"  {name:<16} {values.numel():>6} positions: mean={values.mean():.4f}, "
              f"variance={values.var(unbiased=False):.4f}")

    show = min(d, 4)
    print(f"sentence 1, token 1, first {show} outputs:")
    with torch.no_grad():
        for name, norm in (("BatchNorm", batchnorm), ("LayerNorm", layernorm)):
            for label, batch in (("without padding", x), ("with padding", x_pad)):
                print(f"  {name}, {label:<16} {vec(norm(batch)[0, 0, :show])}")

    change = {name: real_token_change(norm, x, P) for name, norm in
              (("BatchNorm", batchnorm), ("LayerNorm", layernorm))}
    print(f"largest change in any real token's output, no padding vs {pads}:")
    print(f"  BatchNorm: {change['BatchNorm']:.4f}")
    print(f"max |LayerNorm without padding - with padding|={change['LayerNorm']:.8f}")
    with torch.no_grad():
        gap = (masked_batchnorm(x_pad, T)[:, :T] - batchnorm(x)).abs().max().item()
    print(f"max |BatchNorm, padded, statistics of real tokens only - BatchNorm without padding|={gap:.8f}")
    print("  (by hand: take the statistics over the real tokens only and the change is gone;")
    print("   the padding reached the real tokens through BatchNorm's mean and variance)")

    bn_moved, ln_still = change["BatchNorm"] > TOLERANCE, change["LayerNorm"] <= TOLERANCE
    holds = bn_moved and ln_still
    if holds:
        print(f"Verdict: {said(holds)}: padding moved BatchNorm's outputs for the real tokens\n"
              f"  (by more than {TOLERANCE:g}) and left LayerNorm's untouched")
    else:
        print(f"Verdict: {said(holds)}: BatchNorm moved: {bn_moved}; LayerNorm untouched: {ln_still}")
    record("padding moves BatchNorm's real tokens, not LayerNorm's", holds,
           value=f"BatchNorm {change['BatchNorm']:.4f}, LayerNorm {change['LayerNorm']:.2g}",
           threshold=f"BatchNorm's change above {TOLERANCE:g}, LayerNorm's at most {TOLERANCE:g}")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("Padding moves BatchNorm's outputs for the real tokens and leaves LayerNorm's alone, with torch's "
               "modules (Week 2, section 6).")
KNOBS = [knob("--batch", type=int_range(1, 256), default=2, help="B, sentences"),
         knob("--tokens", type=int_range(1, 512), default=4, help="real tokens per sentence"),
         knob("--pad", type=int_range(0, 512), default=5, help="padding positions added to each"),
         knob("--d-model", type=int_range(4, 1024), default=8, help="d, numbers per token"),
         knob("--seed", type=SEED, default=42, help="seed of the token vectors")]
TRY_IT = [("--pad 0", "no padding: nothing moves, and the verdict says the page's picture is not shown"),
          ("--pad 1", "a single padding position already moves BatchNorm"),
          ("--batch 32 --tokens 50", "more real tokens: a smaller shift, but not zero"),
          ("--seed 7", "other token vectors: same verdict")]


def limits(args):
    B, T, P, d = args.batch, args.tokens, args.pad, args.d_model
    if B * T < 2:
        return "BatchNorm needs at least 2 real tokens in the batch: raise --batch or --tokens"
    return too_big(numbers=B * (T + P) * d, work=20 * B * (T + P) * d,
                   knobs=("--batch", "--tokens", "--pad", "--d-model"))


LESSON = Lesson(__file__, page=("week2", 6), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    # (In evaluation mode BatchNorm uses running statistics instead, but those were gathered
    # in training, padding and all.)
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
