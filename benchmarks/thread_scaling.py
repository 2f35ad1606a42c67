"""Thread scaling: hgbt, LightGBM and XGBoost fit times at 1, 2, 4, 8, 16 threads.

    python benchmarks/thread_scaling.py [--threads 1,2,4,8,16] [--repeats 3]
        [--datasets flights,loans,birthdays] [--synthetic-rows 1000000]
        [--libs hgbt,lightgbm,xgboost] [--output benchmarks/thread_scaling.md]

Each fit runs in a fresh process with ``OMP_NUM_THREADS`` and the library's
thread parameter set to the thread count, by the two harnesses the other
benchmarks use: ``realdata.py``'s workers for the real tables (same settings for
every library: its "same" mode) and ``bench.py``'s for the synthetic regression
table (28 float32 features, 5% NaN, ``--synthetic-rows`` rows). Within a
repeat the libraries take turns at each thread count. The output is a
Markdown table per dataset (median fit seconds; speed-up over the same
library on one thread; hgbt / LightGBM) and, with matplotlib, a plot of the
speed-up curves next to it (``.png``). Data preparation is cached as the
harnesses cache it (``benchmarks/.cache``) and never timed.

On a machine with fewer cores than a thread count the row is still measured
(oversubscribed): read only the counts up to the machine's cores.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (the benchmarks' harnesses, next to this file)
import realdata  # noqa: E402

SYNTHETIC = "regression"  # bench.py's task


def _csv(text):
    return [part for part in text.split(",") if part]


def prepare(args):
    """``{dataset: (data_dir, shape, bench task or None)}``: the real tables
    (None: ``realdata.py``'s), then the synthetic one."""
    out = {}
    for name in args.datasets:
        data = realdata._spawn(["--make-data", "--dataset", name, "--cache-dir",
                                str(args.cache_dir)], 1, None, stderr_to_console=True)
        if "error" in data:
            raise SystemExit(f"{name}: data preparation failed: {data['error']}")
        out[name] = (data["data_dir"], f"{data['n_train']:,} rows x {data['n_cols']}", None)
    if args.synthetic_rows:
        data = bench._spawn(["--make-data", "--task", SYNTHETIC, "--n-samples",
                             str(args.synthetic_rows), "--n-test", "10000", "--cache-dir",
                             str(args.cache_dir)], 1, None, stderr_to_console=True)
        if "error" in data:
            raise SystemExit(f"synthetic data failed: {data['error']}")
        out[f"synthetic {args.synthetic_rows:,}"] = (
            data["data_dir"], f"{args.synthetic_rows:,} rows x 28", bench.TASKS[SYNTHETIC])
    return out


def fit_seconds(dataset, lib, n_threads, timeout):
    """One fit's seconds in a fresh process (None when it failed)."""
    data_dir, _, task = dataset
    if task is None:
        result = realdata._spawn(["--worker", lib, "--mode", "same", "--data-dir", data_dir,
                                  "--n-threads", str(n_threads), "--loss-path",
                                  str(Path(data_dir) / "losses" / f"threads-{lib}.npy")],
                                 n_threads, timeout)
    else:
        result = bench.spawn_worker(lib, task, data_dir, n_threads, timeout)
    if "error" in result:
        print(f"    {lib} x{n_threads}: FAILED {result['error'].splitlines()[-1]}",
              flush=True)
        return None
    return result["fit_s"]


def render(results, args, machine):
    lines = [f"Machine: {machine}; {os.cpu_count()} logical CPUs. Command: "
             f"`python benchmarks/thread_scaling.py {' '.join(sys.argv[1:])}`; median of "
             f"{args.repeats} fits, each in a fresh process.", ""]
    for name, (shape, times) in results.items():
        lines += [f"### {name} ({shape} columns, training)", "",
                  "| threads | " + " | ".join(f"{lib} (s) | {lib} speed-up"
                                              for lib in args.libs)
                  + (" | hgbt / lightgbm |" if {"hgbt", "lightgbm"} <= set(args.libs)
                     else " |"),
                  "|---:|" + "---:|---:|" * len(args.libs)
                  + ("---:|" if {"hgbt", "lightgbm"} <= set(args.libs) else "")]
        for t in args.threads:
            cells = []
            for lib in args.libs:
                fit, one = times[lib].get(t), times[lib].get(args.threads[0])
                cells += ["—" if fit is None else f"{fit:.3f}",
                          "—" if fit is None or one is None else f"{one / fit:.2f}"]
            if {"hgbt", "lightgbm"} <= set(args.libs):
                h, lg = times["hgbt"].get(t), times["lightgbm"].get(t)
                cells.append("—" if h is None or lg is None else f"{h / lg:.2f}")
            lines.append(f"| {t} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(results, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 4), squeeze=False)
    for ax, (name, (_, times)) in zip(axes[0], results.items()):
        for lib in args.libs:
            one = times[lib].get(args.threads[0])
            xs = [t for t in args.threads if times[lib].get(t) and one]
            ax.plot(xs, [one / times[lib][t] for t in xs], marker="o", label=lib)
        ax.plot(args.threads, [t / args.threads[0] for t in args.threads], ":",
                color="grey", label="linear")
        ax.set(title=name, xlabel="threads", ylabel="speed-up over one thread",
               xscale="log", yscale="log")
        ax.set_xticks(args.threads, [str(t) for t in args.threads])
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=lambda s: [int(t) for t in _csv(s)],
                        default=[1, 2, 4, 8, 16])
    parser.add_argument("--datasets", type=_csv, default=["flights", "loans", "birthdays"])
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--libs", type=_csv, default=["hgbt", "lightgbm", "xgboost"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--cache-dir", default=str(HERE / ".cache"))
    parser.add_argument("--output", default=str(HERE / "thread_scaling.md"))
    args = parser.parse_args()
    data = prepare(args)
    results = {}
    start = time.perf_counter()
    for name, dataset in data.items():
        times = {lib: {} for lib in args.libs}
        for t in args.threads:
            runs = {lib: [] for lib in args.libs}
            for rep in range(args.repeats):
                order = args.libs[rep % len(args.libs):] + args.libs[:rep % len(args.libs)]
                for lib in order:
                    fit = fit_seconds(dataset, lib, t, args.timeout)
                    if fit is not None:
                        runs[lib].append(fit)
            for lib, fits in runs.items():
                times[lib][t] = statistics.median(fits) if fits else None
            print(f"[{name}] {t} threads: " + "  ".join(
                f"{lib} {times[lib][t]:.3f} s" for lib in args.libs
                if times[lib][t] is not None), flush=True)
        results[name] = (dataset[1], times)
        machine = bench.machine_description()
        text = render(results, args, machine)
        Path(args.output).write_text(text + "\n")
        Path(args.output).with_suffix(".json").write_text(json.dumps(
            {name: {lib: {str(t): v for t, v in by.items()} for lib, by in times.items()}
             for name, (_, times) in results.items()}, indent=1))
        picture = plot(results, args, Path(args.output).with_suffix(".png"))
    print(f"wrote {args.output}" + (f" and {picture}" if picture else "")
          + f" in {time.perf_counter() - start:.0f} s ({platform.node()})", flush=True)


if __name__ == "__main__":
    main()
