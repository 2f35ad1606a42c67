#!/usr/bin/env python
"""Fits on a loaded machine: 1 and 2 threads, idle and beside busy processes.

``python benchmarks/threads_under_load.py`` times hgbt, LightGBM and XGBoost
(100 rounds, 31 leaves, learning rate 0.1, 255 bins, no early stopping) on a
small (2,000 x 10) and a medium (160,000 x 28) synthetic regression, with 1
and 2 threads and with the library's default thread count, first on the idle machine, then while ``--busy`` processes
(default: one per CPU) spin on every core, as on a shared server, a CI
runner or a search running several fits. Each fit runs in a fresh process
(so that OpenMP reads the environment anew) and is timed inside it, after
the imports and the data; the median of ``--repeats`` runs is printed, and
per library the ratios of its 2-thread and default times to its 1-thread
time under load.
``--env NAME=VALUE`` sets a variable for the fits (e.g.
``OMP_WAIT_POLICY=active`` to see libgomp's spinning default).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

SIZES = {"small": (2_000, 10), "medium": (160_000, 28)}
# "default": what the library picks when no thread count is given (every
# CPU for all three; hgbt's rounds then use those other processes leave free)
THREADS = (1, 2, "default")
LIBRARIES = ("hgbt", "lightgbm", "xgboost")

FIT = r"""
import sys, time
import numpy as np
lib, n, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
threads = None if sys.argv[4] == "default" else int(sys.argv[4])
rng = np.random.default_rng(0)
X = rng.normal(size=(n, p)).astype(np.float32)
y = X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * rng.normal(size=n)
if lib == "hgbt":
    import hgbt
    model = hgbt.HistGBDTRegressor(max_iter=100, max_leaf_nodes=31, learning_rate=0.1,
                                   early_stopping=False, n_threads=threads)
elif lib == "lightgbm":
    import lightgbm
    model = lightgbm.LGBMRegressor(n_estimators=100, num_leaves=31, learning_rate=0.1,
                                   min_child_samples=20, n_jobs=threads, verbose=-1)
else:
    import xgboost
    model = xgboost.XGBRegressor(n_estimators=100, max_leaves=31, max_depth=0,
                                 grow_policy="lossguide", learning_rate=0.1,
                                 tree_method="hist", max_bin=256, n_jobs=threads)
start = time.perf_counter()
model.fit(X, y)
print(time.perf_counter() - start)
"""


def one_fit(lib, size, threads, env, timeout):
    n, p = SIZES[size]
    try:
        out = subprocess.run([sys.executable, "-c", FIT, lib, str(n), str(p), str(threads)],
                             env=env, capture_output=True, text=True, timeout=timeout,
                             check=True)
    except subprocess.TimeoutExpired:
        return float("inf")
    return float(out.stdout.split()[-1])


def start_busy(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds after which a fit counts as inf")
    args = parser.parse_args()
    env = dict(os.environ)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    env.pop("OMP_NUM_THREADS", None)  # the fits set their own thread counts
    import platform
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{len(os.sched_getaffinity(0))} usable; busy processes: {args.busy}; "
          f"extra environment: {args.env or 'none'}")
    results = {}
    for condition in ("idle", "loaded"):
        busy = start_busy(args.busy) if condition == "loaded" else []
        try:
            time.sleep(0.5 if busy else 0)
            for size in args.sizes.split(","):
                for lib in args.libraries.split(","):
                    for threads in THREADS:
                        times = [one_fit(lib, size, threads, env, args.timeout)
                                 for _ in range(args.repeats)]
                        results[condition, size, lib, threads] = statistics.median(times)
                        print(f"{condition:6s} {size:6s} {lib:8s} threads {threads}: "
                              f"median {statistics.median(times):.3f} s  "
                              f"(runs {', '.join(f'{t:.3f}' for t in times)})", flush=True)
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
    print("\n| data | library | idle: 1 thread | 2 threads | default | loaded: 1 thread | "
          "2 threads | default | loaded 2 / 1 | loaded default / 1 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes.split(","):
        for lib in args.libraries.split(","):
            r = [results[c, size, lib, t] for c in ("idle", "loaded") for t in THREADS]
            print(f"| {size} | {lib} | " + " | ".join(f"{t:.3f}" for t in r)
                  + f" | {r[4] / r[3]:.2f} | {r[5] / r[3]:.2f} |")

if __name__ == "__main__":
    main()
