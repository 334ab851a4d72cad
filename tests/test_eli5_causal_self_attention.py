"""week2/10_eli5_causal_self_attention: each of its two checks turns when a wrong
implementation goes through the lesson's own code: a snippet whose mask lets a word see one
place ahead (the future weight is measured on cells built apart from that mask), and a W_O
that reads no part of one head (each head is left out in turn)."""
import types

import torch

from tests.conftest import SCRIPTS, load_script, main_in_process
from tests.conftest import main_outcomes as run_main

NAME = "week2/10_eli5_causal_self_attention"
ROWS = "each row sums to 1, none of it on the future"
BLENDS = "W_O blends every head into the output"
MASK = "mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)"


def with_line(right, wrong):
    """The lesson as a module, with one line of its source replaced (the snippet's own line)."""
    path = SCRIPTS[NAME]
    source = path.read_text(encoding="utf-8")
    assert source.count(right) == 1, f"{NAME} no longer contains {right!r} once"
    module = types.ModuleType("week2_10_planted")
    module.__file__ = str(path)
    exec(compile(source.replace(right, wrong), str(path), "exec"), module.__dict__)
    return module


def test_as_written_both_checks_uphold_the_page():
    _, outcomes = run_main(load_script(NAME))
    assert outcomes == {ROWS: "upholds the page", BLENDS: "upholds the page"}


def test_a_mask_one_place_off_puts_weight_on_the_future_and_the_check_turns():
    """The reviewer's plant: the snippet's mask with diagonal=2 lets word 1 look at word 2.
    Measured on that same mask the future weight was still 0; measured on the future cells
    themselves it is not."""
    out, records = main_in_process(with_line(MASK, MASK.replace("diagonal=1", "diagonal=2")))
    assert records[ROWS]["outcome"] == "contradicts the page"
    assert "weight on future tokens: 0.0\n" not in out
    assert float(out.split("weight on future tokens: ")[1].split("\n")[0]) > 0.4


class MissingHead:
    """torch.nn, except that the fourth nn.Linear built (W_O, after the snippet's to_q, to_k,
    to_v) has zero columns for head 3's slice: a W_O that reads no part of head 3."""

    def __init__(self, head, width):
        self.built, self.head, self.width = 0, head, width

    def __getattr__(self, name):
        return getattr(torch.nn, name)

    def Linear(self, *args, **kwargs):
        layer = torch.nn.Linear(*args, **kwargs)
        self.built += 1
        if self.built == 4:
            with torch.no_grad():
                layer.weight[:, self.head * self.width:(self.head + 1) * self.width] = 0
        return layer


def test_a_W_O_that_ignores_one_head_turns_the_blend_check():
    """--heads 4: a W_O without head 3 still differs from head 1 alone (the earlier check
    passed it), but leaving out head 3 changes nothing, and the check turns."""
    module = load_script(NAME)
    out, records = main_in_process(module, "--heads", "4", nn=MissingHead(2, 2))
    assert records[BLENDS]["outcome"] == "contradicts the page" and records[BLENDS]["value"] == 3
    assert "the output changes for 3 of the 4 heads" in out
    _, records = main_in_process(module, "--heads", "4")
    assert records[BLENDS]["outcome"] == "upholds the page" and records[BLENDS]["value"] == 4


def test_leaving_out_a_head_zeroes_just_its_columns():
    module = load_script(NAME)
    torch.manual_seed(0)
    W_O, concat = torch.nn.Linear(8, 8), torch.randn(3, 8)
    for i in range(4):
        kept = concat.clone()
        kept[:, 2 * i:2 * i + 2] = 0  # the same as the head's outputs being 0
        assert torch.allclose(module.from_heads(W_O, concat, [j for j in range(4) if j != i], 4), W_O(kept), atol=1e-6)
