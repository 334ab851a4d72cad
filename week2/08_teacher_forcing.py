"""Teacher forcing: train the decoder on the gold prefix, shifted right by one slot.

Page: Week 2, section 1 "Teacher forcing: practising with the answer key's previous
words", 08_teacher_forcing.py.

    decoder input = [BOS, y_1, ..., y_(T-1)]      labels = [y_1, ..., y_T]

Position t sees the gold words before it and must predict y_t, never its own answer.
With gold inputs every position can be trained at once (hence the causal mask). At test
time no gold exists: the decoder feeds on its own guesses, so an early mistake leaks
into every later input.

Prints the page's table, each step's inputs both ways, and the page's hand-check.
Setup (the page's table, exactly): tokens 1..9, 0 the start symbol; the "model's guesses"
are stand-ins from np.random.default_rng(42) (week2/12_train_tiny_transformer.py has a
real model making real guesses). Notes: week2/NOTES.md, section 08.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.cli import SEED, Lesson, int_range, knob
from common.records import record

import numpy as np

BOS = 0  # the start symbol: token 0, never a target word


def shift_right(tokens, bos=BOS):
    """[y_1, ..., y_T] -> [bos, y_1, ..., y_(T-1)]: what the decoder reads at each step."""
    return [bos] + list(tokens[:-1])


def decoder_input(gold, guesses, teacher_forced, bos=BOS):
    """What the decoder reads at each step: the start symbol, then the word before the step:
    the gold one under teacher forcing, the model's own guess when it runs free."""
    return shift_right(gold if teacher_forced else guesses, bos)


def lesson(args):
    """The gold target, its shift, stand-in guesses and the page's hand-check, step by step."""
    gold = args.gold
    guesses = np.random.default_rng(args.seed).integers(1, 10, size=len(gold)).tolist()  # stand-ins
    forced = decoder_input(gold, guesses, teacher_forced=True)  # what the decoder reads while training
    print(f"gold target={gold}")
    print(f"teacher-forced decoder input={forced} ({BOS} = start symbol)")
    record("the decoder input is the target shifted right", forced == [BOS, *gold[:-1]], value=str(forced),
           threshold=f"= [{BOS}] + the target without its last token: no position is fed its own label")
    print(f"labels={gold}")
    free = decoder_input(gold, guesses, teacher_forced=False)  # what the decoder reads when it writes alone
    print(f"model's own guesses (stand-ins)={guesses}")
    print(f"free-running input={free}")
    for t, (forced_t, free_t, label) in enumerate(zip(forced, free, gold, strict=True), start=1):
        print(f"step {t}: teacher-forced input {forced_t}, free-running input {free_t}, label {label}")
    # Training always feeds the gold prefix; generation feeds its own outputs, so a wrong
    # guess at one step becomes a wrong input at the next: the mismatch teacher forcing leaves.

    gold_words, guessed = ["A", "B", "EOS"], ["A", "C", "EOS"]  # the page's hand-check: step 2 wrongly predicts C
    step3_forced = decoder_input(gold_words, guessed, teacher_forced=True, bos="BOS")[2]
    step3_free = decoder_input(gold_words, guessed, teacher_forced=False, bos="BOS")[2]
    print(f"hand-check: gold {gold_words}, step 2 wrongly predicts {guessed[1]}:")
    print(f"  step 3 input under teacher forcing={step3_forced}, free-running={step3_free}")
    record("after a wrong guess, teacher forcing still feeds the gold token", step3_forced == gold_words[1],
           value=step3_forced, threshold=f"= {gold_words[1]}, the gold token")
    record("running free, the wrong guess is the next input", step3_free == guessed[1], value=step3_free,
           threshold=f"= {guessed[1]}, the step-2 guess")


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = "Teacher-forced vs free-running decoder inputs (Week 2, section 1)."
KNOBS = [knob("--gold", type=int_range(1, 9), nargs="+", default=[1, 2, 3, 4],
              help=f"gold target tokens, up to 20 ({BOS} is the start symbol, so not a target)"),
         knob("--seed", type=SEED, default=42, help="seed of the stand-in guesses")]
TRY_IT = [("--gold 5 8 2 9 1", "any target of tokens 1..9: the input is it, shifted"),
          ("--seed 3", "other stand-in guesses")]


def at_most_20(args):
    return f"--gold takes at most 20 tokens (got {len(args.gold)})" if len(args.gold) > 20 else None


LESSON = Lesson(__file__, page=("week2", 1), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=at_most_20)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
