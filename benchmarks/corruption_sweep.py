#!/usr/bin/env python
"""Corruption sweep of saved models, outside CI: damaged pickles / JSON files must
load with an error or predict; none may crash or hang.

``python benchmarks/corruption_sweep.py --cases 5000`` damages the pickles of
the two models of ``tests/model_corruption.py`` (a regressor with categorical
splits, a 3-class classifier; the cases split evenly between them) by 1 to 4
random bytes each, loads and predicts in worker processes, and prints the
outcome counts. ``--kinds pickle,json-bytes,json-fields`` adds the JSON
kinds. Seeds start at ``--start`` (default 100,000: past the CI fuzz's).
Exits 1 if any case crashed or hung, printing its (kind, model, seed) to
replay with ``model_corruption.case_input``.
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
        total, start = Counter(), time.perf_counter()
        for model_index in (0, 1):
            n = args.cases // 2 + (model_index < args.cases % 2)
            counts, problems = model_corruption.sweep(
                kind, n, model_index, start=args.start, timeout=args.timeout,
                on_problem=lambda p: print("PROBLEM", p, flush=True))
            total += counts
            bad += len(problems)
        print(f"{kind}: {sum(total.values())} cases in {time.perf_counter() - start:.0f} s: "
              + ", ".join(f"{k} {total[k]}" for k in
                          ("rejected", "loaded", "predict-error", "crash", "hang")),
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
