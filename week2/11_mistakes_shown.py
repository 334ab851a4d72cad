"""The Week 2 page's "Mistakes people make", each tested by an experiment.

Page: Week 2, the Warning boxes of sections 1 to 7. For each misconception that a
computation can refute: the belief, the experiment that tests it, what happened, and a
verdict computed from the result (not asserted by a print). The script exits 1 if any
experiment contradicts the page.

Bullets left out because no computation here settles them: length extrapolation of
sinusoidal tags, what original BERT used, residuals "guaranteeing" gradients, warm-up as
a stability proof, and the section 8 data-flow statements.
Setup: np.random.default_rng(42) / torch.manual_seed(42); small sizes.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common.cli import SEED  # noqa: E402
from common.maths import softmax  # noqa: E402
from common.printing import n_params, vec  # noqa: E402
from common.report import Ledger  # noqa: E402


def main():
    parser = argparse.ArgumentParser(
        description="Week 2's 'Mistakes people make', refuted (or not) by experiment.",
        epilog="Try it: --seed 1 (different random inputs, same verdicts).")
    parser.add_argument("--seed", type=SEED, default=42, help="seed for the random inputs (42)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    ledger = Ledger()
    print("Week 2: mistakes people make, tested")

    # Section 1: teacher forcing.
    gold = [1, 2, 3, 4, 5]

    def model(previous):  # a toy decoder: next token = previous + 1, but it errs on token 1
        return 7 if previous == 1 else previous + 1

    forced_inputs = [0] + gold[:-1]  # always the gold prefix
    free_inputs = [0]
    for _ in gold[:-1]:
        free_inputs.append(model(free_inputs[-1]))  # feeds on its own outputs
    wrong_after = [t + 1 for t, (a, b) in enumerate(zip(forced_inputs, free_inputs, strict=True)) if a != b]
    ledger.belief(1, "teacher forcing removes the train/inference mismatch",
                  "a toy decoder (next = previous + 1) that makes one mistake, on its second step",
                  f"training inputs {forced_inputs}; generation inputs {free_inputs}; "
                  f"generation inputs that differ from training: steps {wrong_after}",
                  wrong_after == list(range(3, len(gold) + 1)))
    leaks = {name: sum(a == b for a, b in zip(inputs, gold, strict=True))
             for name, inputs in (("unshifted", gold), ("shifted", forced_inputs))}
    ledger.belief(2, "the target can be fed to the decoder without the shift",
                  "count the positions whose decoder input is the very label it must predict",
                  f"unshifted: {leaks['unshifted']} of {len(gold)} (the answer is handed in); "
                  f"shifted: {leaks['shifted']} of {len(gold)}",
                  leaks["unshifted"] == len(gold) and leaks["shifted"] == 0)

    # Section 2: masking.
    T = 4
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)  # True = future
    scores = rng.standard_normal((T, T))
    weights = softmax(np.where(mask, -np.inf, scores), axis=-1)
    ledger.belief(3, "the mask removes the diagonal",
                  f"build the {T}x{T} causal mask; look at the diagonal and at row 1",
                  f"blocked diagonal cells: {int(mask.diagonal().sum())}; "
                  f"row 1's weight on itself: {weights[0, 0]:.4f}",
                  not mask.diagonal().any() and weights[0, 0] == 1.0)
    V = rng.standard_normal((T, 3))
    unmasked = softmax(scores, axis=-1)
    out_masked = weights @ V  # [T, 3]
    out_zeroed = np.stack([unmasked[i] @ np.where(mask[i][:, None], 0.0, V) for i in range(T)])  # row i: V
    # with the rows of i's future set to zero
    ledger.belief(4, "setting the future values to zero is the same as masking",
                  "row 2: weights with -inf on the future scores vs plain softmax with the future values zeroed",
                  f"visible weights masked {vec(weights[1, :2])} (sum {weights[1].sum():.4f}) vs zeroed values "
                  f"{vec(unmasked[1, :2])} (sum {unmasked[1, :2].sum():.4f}); outputs equal: "
                  f"{np.allclose(out_masked, out_zeroed)}",
                  not np.allclose(out_masked, out_zeroed) and unmasked[1, :2].sum() < 1)
    with np.errstate(invalid="ignore"):
        all_masked = softmax(np.full(T, -np.inf))
    ledger.belief(5, "a row with every key masked still gives a softmax",
                  f"softmax of a row of {T} scores that are all -inf",
                  f"weights {all_masked.tolist()}",
                  bool(np.isnan(all_masked).all()))

    # Section 3: cross-attention.
    S, T_target = 5, 3
    causal_cross = np.triu(np.ones((T_target, S), dtype=bool), k=1)  # a causal mask wrongly applied
    seen = (~causal_cross).sum(1)
    ledger.belief(6, "cross-attention needs a causal mask over the source",
                  f"apply a causal mask to a {T_target} x {S} cross-attention table",
                  f"source words each target word could still see: {seen.tolist()} of {S} "
                  "(the whole source is known, so this only hides what is legitimately there)",
                  bool((seen < S).any()))
    d, f, h = 512, 2048, 8
    dec, enc = nn.TransformerDecoderLayer(d, h, f, device="meta"), nn.TransformerEncoderLayer(d, h, f, device="meta")
    n_attention = {name: sum(isinstance(m, nn.MultiheadAttention) for m in layer.modules())
                   for name, layer in (("encoder", enc), ("decoder", dec))}
    ledger.belief(7, "a decoder layer is an encoder layer plus a mask",
                  "count torch's attention blocks and parameters in each layer (d = 512, f = 2048)",
                  f"attention blocks: encoder {n_attention['encoder']}, decoder {n_attention['decoder']}; "
                  f"parameters {n_params(enc):,} vs {n_params(dec):,} (+{n_params(dec) - n_params(enc):,})",
                  n_attention == {"encoder": 1, "decoder": 2} and n_params(dec) > n_params(enc))

    # Section 4: counting.
    vocab, width = 1000, 64
    embedding, output = nn.Embedding(vocab, width), nn.Linear(width, vocab, bias=False)
    output.weight = embedding.weight  # tie: one [V, d] matrix used twice
    tied = nn.ModuleDict({"embedding": embedding, "output": output})
    naive = embedding.weight.numel() + output.weight.numel()
    ledger.belief(8, "a tied weight is counted twice",
                  f"tie the output layer to the embedding (V = {vocab}, d = {width}); count the model's parameters",
                  f"torch counts {n_params(tied):,} (= V d once); adding both modules' weights gives {naive:,}",
                  n_params(tied) == vocab * width and naive == 2 * n_params(tied))

    # Section 5: distance between sinusoidal tags.
    dim, positions = 16, np.arange(64)
    omega = 10000.0 ** (-2 * np.arange(dim // 2) / dim)
    pe = np.zeros((len(positions), dim))
    pe[:, 0::2], pe[:, 1::2] = np.sin(positions[:, None] * omega), np.cos(positions[:, None] * omega)
    distance = np.linalg.norm(pe[1:] - pe[0], axis=1)  # |PE(k) - PE(0)| for gaps k = 1..63
    drops = int((np.diff(distance) < 0).sum())
    ledger.belief(9, "the distance between tags grows steadily with the gap",
                  f"|PE(k) - PE(0)| for gaps k = 1..{len(distance)}, d = {dim}",
                  f"first gaps {vec(distance[:8], 2)}; the distance falls {drops} times as k grows",
                  drops > 0)

    # Section 6: normalization.
    batch = torch.randn(4, 6)  # 4 examples, 6 features
    other = batch.clone()
    other[1:] = torch.randn(3, 6) * 5 + 3  # keep example 1, change the rest of the batch
    ln_same = torch.allclose(F.layer_norm(batch, (6,))[0], F.layer_norm(other, (6,))[0])
    bn = nn.BatchNorm1d(6)
    bn_same = torch.allclose(bn(batch)[0], bn(other)[0])
    ledger.belief(10, "LayerNorm, like BatchNorm, depends on the rest of the batch",
                  "keep example 1, replace the other 3 examples, normalize again",
                  f"example 1's output unchanged: LayerNorm {ln_same}, BatchNorm {bn_same}",
                  ln_same and not bn_same)
    bn.eval()  # evaluation mode: running statistics instead of the batch's own
    with torch.no_grad():
        eval_same = torch.allclose(bn(batch)[0], bn(other)[0])
        train_vs_eval = torch.allclose(bn.train()(batch), bn.eval()(batch))
    ledger.belief(11, "BatchNorm computes the same in training and in evaluation",
                  "the same batch through BatchNorm in train mode and in eval mode",
                  f"train output = eval output: {train_vs_eval}; in eval mode example 1 no longer "
                  f"depends on the others: {eval_same}",
                  not train_vs_eval and eval_same)
    single = torch.tensor([[5.0, -2.0, 0.5]])  # one observation per feature
    by_hand = (single - single.mean(0)) / torch.sqrt(single.var(0, unbiased=False) + 1e-5)
    try:
        nn.BatchNorm1d(3)(single)
        error = "none"
    except ValueError as exc:
        error = str(exc).split(",")[0]
    ledger.belief(12, "BatchNorm with one value returns the input",
                  "normalize one value per feature by hand; then ask torch",
                  f"by hand {by_hand[0].tolist()} (output = beta, not the input {single[0].tolist()}); "
                  f"torch raises: {error}",
                  bool((by_hand == 0).all()) and error != "none")

    # Section 7: training tricks.
    logits, gold_id = torch.tensor([[2.0, 0.5, -1.0, 0.0]]), torch.tensor([0])
    nll = F.nll_loss(F.log_softmax(logits, -1), gold_id)
    smoothed = F.cross_entropy(logits, gold_id, label_smoothing=0.1)
    ledger.belief(13, "smoothed cross-entropy is ordinary negative log-likelihood",
                  "one prediction, gold class 1, epsilon 0.1",
                  f"NLL {nll.item():.6f}; smoothed cross-entropy {smoothed.item():.6f}",
                  not torch.isclose(nll, smoothed))
    lr, beta1, beta2, eps = 0.001, 0.9, 0.999, 1e-8  # Adam's defaults
    grad = np.array([0.001, 100.0])  # two weights, gradients 100,000 times apart
    m_hat = (1 - beta1) * grad / (1 - beta1)  # first step: bias-corrected running mean of g
    v_hat = (1 - beta2) * grad ** 2 / (1 - beta2)  # ... and of g^2
    adam_update = lr * m_hat / (np.sqrt(v_hat) + eps)
    ledger.belief(14, "the scheduled learning rate is the size of every weight update",
                  "Adam's first step at lr 0.001 on two weights whose gradients are 0.001 and 100",
                  f"Adam moves them by {vec(adam_update, 6)}; plain SGD would move them by {vec(lr * grad, 6)}",
                  not np.allclose(adam_update, lr * grad))
    return ledger.finish()


if __name__ == "__main__":
    sys.exit(main())
