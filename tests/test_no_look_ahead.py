"""Every trained model that promises "no look ahead" (a causal mask: position t reads positions
1..t only) keeps it under an adversarial input: the tokens after position t are changed, at
every t, and nothing the model computes at positions 1..t moves, to the last bit (float64).
The trained weights do not matter to the promise, so each model is tried as built, through
its plain formula and its fast path. A mask that lets the next position through fails it."""
import common.blocks as blocks

import pytest
import torch

from tests.conftest import load_script

T = 6  # positions in each tried row
ROWS = 8


def changed_after(tokens, t, vocabulary, low=0):
    """tokens [N, T] with every position after t (0-based) replaced by another of low..vocabulary-1."""
    other = tokens.clone()
    other[:, t + 1:] = low + (tokens[:, t + 1:] - low + 1) % (vocabulary - low)
    return other


def week1_16(module, fast):
    """Its scores for both blanks [2, N, T, V], from word ids [N, T]."""
    model = module.build_model(0, 2).double()
    tokens = torch.randint(0, module.N_WORDS, (ROWS, T), generator=torch.Generator().manual_seed(0))

    def outputs(tokens):
        return torch.stack(model(tokens, fast=fast)[:2])  # [2, N, T, V]

    return outputs, [(tokens, module.N_WORDS, 0)], 2


def week2_12(module, fast):
    """The decoder's scores [N, T, V] (and, plain, its cross-attention weights [N, T, h S]) from
    its input tokens [N, T], the source fixed."""
    model = module.build_model(0).double()
    g = torch.Generator().manual_seed(0)
    src = torch.randint(module.EOS + 1, module.V, (ROWS, T), generator=g)
    dec_in = torch.randint(module.EOS + 1, module.V, (ROWS, T), generator=g)

    def outputs(dec_in):
        scores, A = model(src, dec_in, True, fast=fast)  # [N, T, V], [N, h, T, S]
        return scores if fast else torch.cat([scores, A.transpose(1, 2).flatten(-2)], dim=-1)

    return outputs, [(dec_in, module.V, module.EOS + 1)], 1


def week2_19(module, fast):
    """The decoder's scores [N, T, 10] from the digits x [N, T] and the totals before them y_in
    [N, T], both changed after place t. (It has no fast path: `fast` tries the same.)"""
    decoder = module.starting_decoder(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 10, (ROWS, module.T), generator=g)
    y_in = torch.randint(0, module.START + 1, (ROWS, module.T), generator=g)
    return (lambda x, y_in: decoder(x, y_in)), [(x, 10, 0), (y_in, module.START + 1, 0)], 1


MODELS = {"week1/16_heads_take_roles": week1_16, "week2/12_train_tiny_transformer": week2_12,
          "week2/19_teacher_forcing_fast_and_stable": week2_19}


def reads_ahead(outputs, inputs, axis):
    """The first (t, how far) where changing every input after position t moved an output at
    positions 0..t; None if none did. inputs: [(tokens [N, T], vocabulary, lowest id)]; axis:
    the outputs' position axis."""
    before = outputs(*(tokens for tokens, _, _ in inputs))
    for t in range(inputs[0][0].shape[1] - 1):
        after = outputs(*(changed_after(tokens, t, vocabulary, low) for tokens, vocabulary, low in inputs))
        moved = (before - after).abs().narrow(axis, 0, t + 1).max().item()
        if moved > 0:
            return t, moved
    return None


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast"])
@pytest.mark.parametrize("name", MODELS)
def test_no_position_reads_the_tokens_after_it(name, fast):
    outputs, inputs, axis = MODELS[name](load_script(name), fast)
    with torch.no_grad():
        assert reads_ahead(outputs, inputs, axis) is None


def test_changed_after_changes_every_later_token_and_no_earlier_one():
    tokens = torch.arange(12).view(2, 6) % 5
    other = changed_after(tokens, 2, 5, low=1)
    assert torch.equal(other[:, :3], tokens[:, :3]) and (other[:, 3:] != tokens[:, 3:]).all()
    assert other[:, 3:].min() >= 1 and other.max() < 5


def leaky(attention):
    """attention() with its causal mask leaking: each position may also read the next one."""
    def attend(Q, K, V, mask=None):
        if mask is not None:
            T_q, T_k = Q.shape[-2], K.shape[-2]
            mask = mask & ~torch.ones(T_q, T_k, dtype=torch.bool).diagonal(1).diag_embed(1)[:T_q, :T_k]
        return attention(Q, K, V, mask)
    return attend


@pytest.mark.parametrize("name", MODELS)
def test_a_mask_that_lets_the_next_position_through_is_found(name, monkeypatch):
    """The same measurement, the plain formula's mask leaking one position ahead (in the lesson's
    own attention and in the shared block's): it finds the position that read ahead."""
    module = load_script(name)
    monkeypatch.setattr(blocks, "attention", leaky(blocks.attention))  # (MultiHeadAttention's)
    if hasattr(module, "attention"):
        monkeypatch.setattr(module, "attention", leaky(module.attention))
    outputs, inputs, axis = MODELS[name](module, False)
    with torch.no_grad():
        found = reads_ahead(outputs, inputs, axis)
    assert found is not None and found[1] > 1e-6
