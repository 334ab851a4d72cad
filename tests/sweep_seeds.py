"""A training lesson over seeds and kernel settings: the same bytes under every setting (as the
check compares them: each number a record shows replaced by its band), and the range of
each check's measured value.

For each seed, the lesson runs (with --seed and any other arguments given) once under each
of the five kernel settings of tests/test_portability.py (none; ATEN_CPU_CAPABILITY=default;
MKL_CBWR=COMPATIBLE; MKL_CBWR=AVX2 with ATEN_CPU_CAPABILITY=default; one thread), each
forked from a server of its own (run_all.Job.setting). Prints, per seed, whether the five
runs printed the same bytes and each check's outcome; then, per check, the smallest and
largest value its record carried over every run, how far a setting moved it within one
seed, and the CPU seconds of the runs (median and largest).

    .venv/bin/python tests/sweep_seeds.py week1/16_heads_take_roles
    .venv/bin/python tests/sweep_seeds.py week1/15_context_decides --seeds 0-3,42 --settings 2 -- --steps 40

A record's value that is words around numbers ("(a) 0.9801, (b) 0.9983") is read number by
number; values of other forms are listed as they came, each once. A plain script, not a
test: pytest does not collect it (its length: 55 trainings).
"""
import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root
import run_all  # noqa: E402

SETTINGS = {"none": {}, "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
            "MKL_CBWR=COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
            "MKL_CBWR=AVX2 + ATEN default": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "default"},
            "one thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}


def seeds(text):
    """"0-9,42" -> [0, 1, ..., 9, 42]."""
    out = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def ranges(seen, per_seed):
    """A record's values in a line: where every value is the same words around its numbers
    (or a number), that form with each number's range and the most one seed's settings moved
    it; else the distinct values."""
    forms = {NUMBER.sub("{}", str(v)) for v in seen}
    if len(forms) != 1:
        distinct = sorted({str(v) for v in seen})
        return " | ".join(distinct[:12]) + (f" (+{len(distinct) - 12} more)" if len(distinct) > 12 else "")

    def numbers(vs):  # [value][k] -> [k][value]
        return list(zip(*(map(float, NUMBER.findall(str(v))) for v in vs), strict=True))

    moved = [0.0] * len(numbers(seen))
    for vs in per_seed:
        moved = [max(m, max(c) - min(c)) for m, c in zip(moved, numbers(vs), strict=True)]
    return forms.pop().format(*(f"{min(c):.6g} to {max(c):.6g} (moved {m:.2g})"
                                for c, m in zip(numbers(seen), moved, strict=True)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lesson", help="a lesson's name as run_all.py takes it, e.g. week1/16_heads_take_roles")
    parser.add_argument("--seeds", type=seeds, default=seeds("0-9,42"), help="e.g. 0-9,42 (the default)")
    parser.add_argument("--settings", type=int, default=len(SETTINGS), help="the first N settings only")
    parser.add_argument("rest", nargs="*", help="the lesson's other arguments (after --)")
    args = parser.parse_args()
    scripts = run_all.discover()
    (name,) = [n for n in scripts if n == args.lesson or n.startswith(args.lesson + "_")]
    settings = dict(list(SETTINGS.items())[:args.settings])
    jobs = [(seed, label, run_all.Job(scripts[name], ("--seed", str(seed), *args.rest), setting=setting))
            for seed in args.seeds for label, setting in settings.items()]
    results = run_all.run_scripts([job for _, _, job in jobs], timeout=600)
    values, cpu = {}, []  # check -> seed -> the values its record carried, one per setting
    for seed in args.seeds:
        runs = [(label, result) for (s, label, _), result in zip(jobs, results, strict=True) if s == seed]
        outputs = {result.compared()[0] for _, result in runs}  # as the check reads them: bands for shown numbers
        failed = [label for label, result in runs if result.returncode != 0]
        outcomes = sorted({(r["name"], r["outcome"]) for _, result in runs for r in result.records})
        against = [f"{n}: {o}" for n, o in outcomes if o != "upholds the page"]
        print(f"seed {seed}: {'the same bytes under every setting' if len(outputs) == 1 else 'DIFFERENT BYTES'}"
              + (f"; exit status not 0 under {failed}" if failed else "")
              + (f"; other outcomes: {against}" if against else "; every check upholds the page"))
        if len(outputs) > 1:
            for label, result in runs:
                print(f"    {label}: {hash(result.compared()[0]) & 0xFFFF:04x}")
        for _, result in runs:
            cpu.append(result.cpu or 0.0)
            for r in result.records:
                values.setdefault(r["name"], {}).setdefault(seed, []).append(r["value"])
    print("\nmeasured values, over every seed and setting (each number of a value: smallest to largest;")
    print("moved: the most a setting moved it within one seed):")
    for check, by_seed in values.items():
        print(f"  {check}: {ranges([v for seen in by_seed.values() for v in seen], by_seed.values())}")
    print(f"\nCPU seconds per run: median {statistics.median(cpu):.2f}, largest {max(cpu):.2f}")


if __name__ == "__main__":
    main()
