"""Training from Parquet batches: peak memory and time, hgbt in memory, hgbt
from batches, XGBoost's QuantileDMatrix from a DataIter.

    python benchmarks/batches_memory.py [--rows 2000000] [--features 50]
        [--rounds 50] [--batch-rows 100000] [--n-threads 2] [--dir DIR]

A synthetic regression table (float32 features, 5% NaN) is written once as
Parquet files of ``--batch-rows`` rows each (into ``--dir``, default
``benchmarks/.cache``). Each way then runs in a fresh process, which reports
its peak resident memory (``ru_maxrss``) and its seconds to read and bin,
and to fit (hgbt in memory bins in its fit: its first column is the read):

- ``hgbt in memory``: ``pd.read_parquet`` of the directory, then
  ``Dataset(X, y)`` and ``train`` (the float matrix and its frame in memory);
- ``hgbt from batches``: ``Dataset.from_batches(ParquetBatches(dir))`` and
  ``train`` (one batch at a time, then the uint8 bins);
- ``hgbt out of core``: the same with ``out_of_core=True``: the bins in pages
  on disk (beside the Parquet directory), the trees grown by passes over them;
- ``xgboost QuantileDMatrix(DataIter)``: the same files through XGBoost's
  iterator interface (its bins built batch by batch, in memory);
- ``xgboost ExtMemQuantileDMatrix(DataIter)``: XGBoost's external memory (its
  bins in a cache beside the Parquet directory, read page by page).

``--ways`` picks some of them (comma-separated indices 0-4).

Same settings for all: squared error, ``--rounds`` rounds, 31 leaves grown
leaf-wise, learning rate 0.1, 255 bins, at least 20 rows a leaf, no L2.
"""
import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WAYS = ("hgbt in memory", "hgbt from batches", "hgbt out of core",
        "xgboost QuantileDMatrix(DataIter)", "xgboost ExtMemQuantileDMatrix(DataIter)")


def write_table(folder, rows, features, batch_rows):
    import pandas as pd
    folder.mkdir(parents=True, exist_ok=True)
    done = folder.parent / f"{folder.name}.done"  # beside: the folder holds Parquet only
    if done.exists():
        return
    rng = np.random.default_rng(0)
    weights = rng.normal(size=features).astype(np.float32)
    for i, start in enumerate(range(0, rows, batch_rows)):
        n = min(batch_rows, rows - start)
        X = rng.normal(size=(n, features)).astype(np.float32)
        y = X @ weights + np.sin(3 * X[:, 0]) + rng.normal(0, 0.5, n).astype(np.float32)
        X[rng.random(X.shape) < 0.05] = np.nan
        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(features)])
        frame["y"] = y
        frame.to_parquet(folder / f"part-{i:05d}.parquet", index=False)
    done.write_text(json.dumps({"rows": rows, "features": features}))


def run(way, folder, rounds, n_threads):
    """One way, in this process: seconds to bin, to fit, and the peak RSS."""
    if way == "hgbt in memory":
        import pandas as pd
        import hgbt
        start = time.perf_counter()
        frame = pd.read_parquet(folder)
        y = frame.pop("y").to_numpy()
        data = hgbt.Dataset(frame.to_numpy(), y, n_threads=n_threads)
        del frame
        binned_at = time.perf_counter()  # read only: this Dataset is binned by the fit
        booster = hgbt.train(_hgbt_params(rounds, n_threads), data)
        bin_s, fit_s = binned_at - start, time.perf_counter() - binned_at
    elif way in ("hgbt from batches", "hgbt out of core"):
        import hgbt
        from hgbt.data.batches import ParquetBatches
        start = time.perf_counter()
        data = hgbt.Dataset.from_batches(ParquetBatches(folder, label="y"), n_threads=n_threads,
                                         out_of_core=way == "hgbt out of core",
                                         directory=str(folder.parent))
        binned_at = time.perf_counter()
        booster = hgbt.train(_hgbt_params(rounds, n_threads), data)
        bin_s, fit_s = binned_at - start, time.perf_counter() - binned_at
    else:
        import pyarrow.parquet as pq
        import xgboost as xgb

        files = sorted(folder.glob("*.parquet"))

        external = way.startswith("xgboost ExtMem")
        cache = str(folder.parent / f"xgboost-cache-{os.getpid()}")

        class Batches(xgb.DataIter):
            def __init__(self):
                self._i = 0
                super().__init__(cache_prefix=cache if external else None)

            def next(self, input_data):
                if self._i == len(files):
                    return False
                table = pq.read_table(files[self._i])
                y = table.column("y").to_numpy()
                X = table.drop_columns(["y"]).to_pandas().to_numpy()
                input_data(data=X, label=y)
                self._i += 1
                return True

            def reset(self):
                self._i = 0

        start = time.perf_counter()
        data = (xgb.ExtMemQuantileDMatrix(Batches(), max_bin=256, nthread=n_threads)
                if external else xgb.QuantileDMatrix(Batches(), max_bin=256,
                                                     nthread=n_threads))
        binned_at = time.perf_counter()
        booster = xgb.train(dict(tree_method="hist", grow_policy="lossguide", max_leaves=31,
                                 max_depth=0, eta=0.1, reg_lambda=0.0, min_child_weight=20,
                                 max_bin=256, nthread=n_threads), data, rounds)
        bin_s, fit_s = binned_at - start, time.perf_counter() - binned_at
    del booster
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(way=way, bin_s=bin_s, fit_s=fit_s, peak_mb=peak_mb)


def _hgbt_params(rounds, n_threads):
    # min_samples_leaf=20 is XGBoost's min_child_weight=20 here (squared error: hessian 1)
    return dict(max_iter=rounds, max_leaf_nodes=31, learning_rate=0.1, max_bins=255,
                min_samples_leaf=20, l2_regularization=0.0, early_stopping=False,
                random_state=0, n_threads=n_threads)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--ways", default="0,1,2,3,4",
                        help="indices into " + ", ".join(WAYS))
    parser.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)  # a child's
    args = parser.parse_args()
    folder = Path(args.dir) if args.dir else (
        HERE / ".cache" / f"parquet-{args.rows}x{args.features}-{args.batch_rows}")
    if args.way:
        print("RESULT " + json.dumps(run(args.way, folder, args.rounds, args.n_threads)))
        return
    write_table(folder, args.rows, args.features, args.batch_rows)
    raw_mb = args.rows * args.features * 4 / 2**20
    print(f"{args.rows:,} rows x {args.features} float32 features ({raw_mb:,.0f} MiB of "
          f"values) in {len(list(folder.glob('*.parquet')))} Parquet files; {args.rounds} "
          f"rounds, {args.n_threads} threads; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs\n")
    print("| way | read + bin s | fit s | total s | peak RSS MiB | peak / values |")
    print("|---|---:|---:|---:|---:|---:|")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.n_threads))
    for way in [WAYS[int(i)] for i in args.ways.split(",")]:
        out = subprocess.run([sys.executable, __file__, "--way", way, "--dir", str(folder),
                              "--rounds", str(args.rounds), "--n-threads",
                              str(args.n_threads)], env=env, capture_output=True, text=True)
        lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
        if not lines:
            print(f"| {way} | failed: {out.stderr.strip().splitlines()[-1:]} | | | | |")
            continue
        r = json.loads(lines[-1][7:])
        print(f"| {way} | {r['bin_s']:.1f} | {r['fit_s']:.1f} | {r['bin_s'] + r['fit_s']:.1f} | "
              f"{r['peak_mb']:,.0f} | "
              f"{r['peak_mb'] / raw_mb:.2f} |", flush=True)


if __name__ == "__main__":
    main()
