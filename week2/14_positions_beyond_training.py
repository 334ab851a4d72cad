"""Sinusoidal position tags exist for positions no training sentence ever reached.

Page: Week 2, section 5 "Sinusoidal positional encoding: a tag for where am I?", and its
"Mistakes people make": tags can be computed for unseen positions (whether a model uses
them well is empirical); mixing up the coordinate index and the pair index i; forgetting
that positions start at zero.

    PE(p, 2i) = sin(p w_i),   PE(p, 2i+1) = cos(p w_i),   w_i = 10000^(-2i/d)

i is the PAIR index, 0 .. d/2 - 1; coordinates 2i and 2i + 1 share one speed w_i. The
formula is a function of p, not a table learnt in training, so a position past the longest
training sentence gets a tag at once. Checked for every position up to --up-to: entries in
[-1, 1]; squared length d/2; PE(p + k) = R(k) PE(p), R(k) built from k alone. A tag p / (L - 1)
(the position scaled to the training length) is measured the same way for contrast.

Prints which index is which and the two slips, the tags' bounds and lengths at seen and
unseen positions, the rotation gaps, and a verdict on the TAGS only: whether a trained model
USES them well past its training lengths is empirical, measured in week2/12, not here.
Setup: d = 4 (the page's hand-check), positions 0..49 taken as seen, every position up to
100,000 in float64 (the table is common/blocks.py's sinusoidal_pe, taught in week2/03);
nothing is trained. Notes: week2/NOTES.md, section 14.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root, for `common`
from common import run
from common.blocks import sinusoidal_pe
from common.cli import Lesson, int_range, knob, too_big
from common.printing import readable, vec
from common.progress import Progress
from common.records import record, said

import numpy as np
import torch

TOLERANCE = 1e-6  # a gap above this is not rounding (float64 leaves about 1e-13 here)
WEEK2_12 = "python week2/12_train_tiny_transformer.py"  # the lesson that trains a model and measures its lengths


def omega(d):
    """[d/2] speeds, one per PAIR i: w_i = 10000^(-2i/d)."""
    i = np.arange(d // 2)  # the pair index
    return 10000.0 ** (-2 * i / d)


def index_tag(positions, d, seen):
    """The contrast: the position number scaled so the training positions span 0..1."""
    return np.repeat(positions[:, None] / (seen - 1), d, axis=1)  # [P, d]


def rotation(k, d):
    """Block-diagonal [d, d]: pair i turned by the angle k w_i. Built from k alone, no p."""
    R = np.zeros((d, d))
    for i, w in enumerate(omega(d)):
        c, s = np.cos(k * w), np.sin(k * w)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        R[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = [[c, s], [-s, c]]
    return R


def rotation_gap(tags, k, seen):
    """max over unseen p (p + k still in the table) of |tag(p + k) - R(k) tag(p)|."""
    p = np.arange(seen, len(tags) - k)  # p and p + k both unseen
    return np.abs(tags[p + k] - tags[p] @ rotation(k, tags.shape[1]).T).max()


def show_indices(tags, far):
    """The coordinate / pair / function / speed table, one row per coordinate, and the two slips.
    tags [P, d]: the table of every position 0 .. far."""
    d = tags.shape[1]
    pe = tags[[0, 1, far]]  # [3, d]: PE(0), PE(1), PE(far)
    rows = range(d) if d <= 8 else [*range(4), None, d - 2, d - 1]
    print(f"Which index is which, d={d} (positions start at 0):")
    print(f"  {'coordinate':>10}  {'pair i':>6}  {'function':<13}{'omega_i':>12}"
          f"{'PE(0)':>9}{'PE(1)':>9}{f'PE({far:,})':>14}")
    for c in rows:
        if c is None:
            print(f"  {'...':>10}")
            continue
        i = c // 2
        function = f"{'sin' if c % 2 == 0 else 'cos'}(p w_{i})"
        print(f"  {c:>10}  {i:>6}  {function:<13}{omega(d)[i]:>12.6f}"
              f"{pe[0, c]:>9.4f}{pe[1, c]:>9.4f}{pe[2, c]:>14.4f}")
    slip = 10000.0 ** (-2 * np.arange(d) / d)  # the slip: the coordinate index put where i belongs
    slipped = np.where(np.arange(d) % 2 == 0, np.sin(slip), np.cos(slip))  # "PE(1)" with that slip
    print(f"  the first word is position 0: PE(0)={vec(pe[0])};\n"
          f"    counting from 1 would give it {vec(pe[1])}")
    print(f"  putting the coordinate c (0..{d - 1}) where the pair index i belongs, 10000^(-2c/d),\n"
          f"    gives PE(1)={vec(slipped)}:")
    print("  then a sin and its cos no longer share one speed, so no pair turns like a clock hand")


def show_bounds(tags, seen, up_to):
    """Smallest and largest entry and squared length of each tag [P, d], seen vs unseen
    positions; returns {tag name: every entry in [-1, 1]}."""
    unseen = np.arange(up_to + 1) >= seen  # [P]
    print(f"  {'tag':<22}{'positions':<22}{'smallest entry':>15}{'largest entry':>15}"
          f"{'squared length':>22}")
    for name, table in tags.items():
        for where, rows in ((f"seen 0..{seen - 1}", ~unseen), (f"unseen {seen}..{up_to:,}", unseen)):
            part = table[rows]  # [P_part, d]
            sq_len = (part ** 2).sum(axis=1)
            print(f"  {name:<22}{where:<22}{part.min():>15.4f}{part.max():>15.4f}"
                  f"{readable(sq_len.min()):>11}..{readable(sq_len.max())}")
    return {name: bool((np.abs(table) <= 1).all()) for name, table in tags.items()}


def lesson(args):
    """The index table and its slips; the tags' bounds, lengths and rotations past the seen positions."""
    d, seen, up_to = args.d_model, args.seen, args.up_to
    pe = sinusoidal_pe(up_to + 1, d, torch.float64).numpy()  # [P, d]: PE(p) for every p = 0 .. up_to
    show_indices(pe, up_to)

    positions = np.arange(up_to + 1)  # [P]
    index = index_tag(positions, d, seen)  # [P, d]: the contrast, measured the same way
    contrast = f"index p/{seen - 1}"
    print(f"\nSay training saw positions 0..{seen - 1} (no model is trained here). Tags of every position "
          f"0..{up_to:,}:")
    bounded = show_bounds({"sinusoidal": pe, contrast: index}, seen, up_to)
    print(f"  (sinusoidal: squared length d/2 = {d / 2:g}, since every sin/cos pair adds sin^2 + cos^2 = 1;")
    print(f"   the index tag is 1 at the last seen position and {up_to / (seen - 1):,.4f} at "
          f"position {up_to:,}:\n   a value training never showed)")

    with Progress("rotation check, tag", 2) as progress:  # a few seconds at a million positions
        progress.update(0)
        gaps = {k: rotation_gap(pe, k, seen) for k in args.offset}
        progress.update(1)
        index_gaps = {k: rotation_gap(index, k, seen) for k in args.offset}
    for k in args.offset:
        print(f"max |PE(p+{k}) - R({k}) PE(p)|={gaps[k]:.8f}")
    print(f"  (over every unseen p with p + k <= {up_to:,}; R(k) is built from k alone)")
    print("  the same check on the index tag: |tag(p+k) - R(k) tag(p)| reaches\n    "
          + ", ".join(f"{index_gaps[k]:,.4f} for k={k}" for k in args.offset))

    sq_len = (pe ** 2).sum(axis=1)  # [P]
    sinusoid_ok = bounded["sinusoidal"] and np.abs(sq_len - d / 2).max() < TOLERANCE and \
        max(gaps.values()) < TOLERANCE
    index_leaves = not bounded[contrast] and min(index_gaps.values()) > TOLERANCE
    holds = sinusoid_ok and index_leaves
    if holds:
        print(f"Verdict: {said(holds)}: the TAGS exist past position {seen - 1} and are well-formed: in [-1, 1],\n"
              f"  of squared length d/2, related by the same rotations (gaps below {TOLERANCE:g}), as the formula\n"
              "  guarantees; the index tag leaves [-1, 1] and no rotation relates it")
    else:
        print(f"Verdict: {said(holds)}: sinusoidal tags bounded, d/2, rotating: {sinusoid_ok}; "
              f"index tag leaves [-1, 1], rotation fails on it: {index_leaves}")
    record("tags can be computed for unseen positions: bounded, d/2, rotating", holds,
           value=f"rotation gaps {max(gaps.values()):.2g} (sinusoid), {min(index_gaps.values()):.2g} (index tag)",
           threshold=f"the sinusoid's in [-1, 1], d/2 and rotation within {TOLERANCE:g}; the index tag's not")
    # Computable is not the same as useful: no model here has ever seen these tags.
    print(f"Whether a trained model USES these tags well past its training lengths is empirical: {said(None)}\n"
          f"  here; week2/12 measures it on its trained model ({WEEK2_12}).")
    record("a trained model uses the tags well past its training lengths", None,
           threshold=f"empirical: measured by {WEEK2_12}, not by this lesson",
           why="no model is trained here")
    return 0 if holds else 1


# ---------------------------------------------------------------- optional: knobs and Try it

DESCRIPTION = ("Sinusoidal position tags for positions never seen in training: bounded, length d/2, the same "
               "rotations; the pair index i vs the coordinate (Week 2, section 5).")
KNOBS = [knob("--d-model", type=int_range(2, 1024), default=4,
              help="d, even: numbers per tag (above 80, the size limit may ask for a smaller --up-to or "
              "fewer --offset values)"),
         knob("--seen", type=int_range(2, 100_000), default=50,
              help="training sentence length: positions 0..seen-1 were seen (below --up-to)"),
         knob("--up-to", type=int_range(3, 2_000_000), default=100_000,
              help="last position evaluated; every position up to it is checked (above --seen)"),
         knob("--offset", type=int_range(1, 100_000), nargs="+", default=[1, 3, 1000],
              help="offsets k for the rotation check PE(p+k) = R(k) PE(p) (each at most --up-to minus --seen)")]
TRY_IT = [("--d-model 16", "wider tags: more pairs, each slower; every property still holds"),
          ("--seen 10 --up-to 1000000", "a million positions past ten seen ones: "
           "still in [-1, 1], still the same rotations"),
          ("--offset 1 2 5000", "a jump of 5,000 positions is still one fixed rotation")]


def limits(args):
    d, seen, up_to = args.d_model, args.seen, args.up_to
    if d % 2:
        return f"--d-model must be even (sin/cos pairs), got {d}"
    if up_to <= seen:
        return f"--up-to {up_to} must be above --seen {seen}, so that some positions are unseen"
    if max(args.offset) > up_to - seen:
        return (f"--offset must be at most --up-to minus --seen ({up_to - seen}), "
                "so that p and p + k are both unseen positions")
    return too_big(numbers=(up_to + 1) * d, work=(up_to + 1) * d * (len(args.offset) * d + 2),
                   knobs=("--up-to", "--d-model", "--offset (fewer values)"))


LESSON = Lesson(__file__, page=("week2", 5), description=DESCRIPTION, knobs=KNOBS, try_it=TRY_IT, limits=limits)


def main(argv=None):
    return lesson(LESSON.args(argv))


if __name__ == "__main__":
    run(main)
