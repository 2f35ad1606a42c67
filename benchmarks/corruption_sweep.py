#!/usr/bin/env python
"""Corruption sweep of saved models, outside CI: damaged pickles / JSON files must
load with an error or predict; none may crash or hang.

``python benchmarks/corruption_sweep.py --cases 5000`` damages the pickles of
the two models of ``tests/model_corruption.py`` (a regressor with categorical
splits, a 3-class classifier; the cases split evenly between them) by 1 to 4
random bytes each, loads and uses each model that loads in worker processes,
and prints the outcome counts with the exception types.
``--kinds pickle,json-bytes,json-fields,targeted`` adds the JSON kinds and
the crafted files (``targeted`` cycles through its cases). Seeds start at
``--start`` (default 100,000: past the CI fuzz's). Exits 1 if any case
crashed or hung, or a loaded model failed later (``late-error``), printing
its (kind, model, seed) to replay with ``model_corruption.case_input``.
"""
import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import model_corruption  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000, help="cases per kind")
    parser.add_argument("--kinds", default="pickle")
    parser.add_argument("--start", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds without an answer that count as a hang")
    args = parser.parse_args()
    bad = 0
    for kind in args.kinds.split(","):
        if kind not in model_corruption.KINDS:
            parser.error(f"unknown kind {kind!r}: one of {model_corruption.KINDS}")
        total, all_types, start = Counter(), Counter(), time.perf_counter()
        for model_index in (0, 1):
            n = args.cases // 2 + (model_index < args.cases % 2)
            counts, types, problems, results = model_corruption.sweep(
                kind, n, model_index, start=args.start, timeout=args.timeout,
                on_problem=lambda p: print("PROBLEM", p, flush=True))
            total += counts
            all_types += types
            bad += len(problems)
            for seed, (outcome, error) in sorted(results.items()):
                if outcome == "late-error":
                    bad += 1
                    print("PROBLEM", (kind, model_index, seed, outcome, error), flush=True)
        print(f"{kind}: {sum(total.values())} cases in {time.perf_counter() - start:.0f} s: "
              + ", ".join(f"{k} {total[k]}" for k in model_corruption.OUTCOMES), flush=True)
        for (outcome, error), n in sorted(all_types.items()):
            if error != "-":
                print(f"    {outcome} {error}: {n}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
