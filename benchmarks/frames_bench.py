"""Wide DataFrame: conversion, thresholds, fit and predict, hgbt vs LightGBM.

20,000 rows x 1,500 columns mixing float64 (some NaN), float32, int64, bool
and a few pandas ``category`` columns; regression, 100 rounds, 31 leaves,
learning rate 0.1, 255 bins, 20 rows per leaf, 2 threads. Prints the medians
of ``--repeat`` runs (hgbt and LightGBM interleaved).

    OMP_NUM_THREADS=2 python benchmarks/frames_bench.py [--frame pandas|polars|arrow]
        [--repeat 3] [--rows 20000] [--profile] [--stages-only]
"""
import argparse
import cProfile
import pstats
import time

import numpy as np
import pandas as pd

N_FLOAT64, N_FLOAT32, N_INT, N_BOOL, N_CAT = 700, 400, 250, 140, 10


def wide_frame(n_rows=20_000, seed=0):
    """The wide frame (pandas) and a regression target."""
    rng = np.random.default_rng(seed)
    cols = {}
    f64 = rng.normal(size=(n_rows, N_FLOAT64))
    f64[rng.random(f64.shape) < 0.05] = np.nan
    for j in range(N_FLOAT64):
        cols[f"f{j}"] = f64[:, j]
    f32 = rng.normal(size=(n_rows, N_FLOAT32)).astype(np.float32)
    for j in range(N_FLOAT32):
        cols[f"g{j}"] = f32[:, j]
    ints = rng.integers(0, 1000, size=(n_rows, N_INT))
    for j in range(N_INT):
        cols[f"i{j}"] = ints[:, j] % (5 + 40 * j)  # from few to many distinct values
    bools = rng.random((n_rows, N_BOOL)) < 0.3
    for j in range(N_BOOL):
        cols[f"b{j}"] = bools[:, j]
    for j in range(N_CAT):
        levels = [f"c{j}_{k}" for k in range(5 + 10 * j)]
        cols[f"c{j}"] = pd.Categorical(rng.choice(levels, size=n_rows), categories=levels)
    df = pd.DataFrame(cols)
    codes = df["c0"].cat.codes.to_numpy()
    y = (np.nan_to_num(f64[:, 0]) + f32[:, 1] ** 2 + 0.01 * ints[:, 2] + bools[:, 0]
         + (codes % 2) + 0.1 * rng.normal(size=n_rows))
    return df, y


def as_frame(df, kind):
    if kind == "pandas":
        return df
    import polars as pl
    import pyarrow as pa
    table = pa.Table.from_pandas(df, preserve_index=False)
    return table if kind == "arrow" else pl.from_arrow(table)


def hgbt_model():
    from hgbt import HistGBDTRegressor
    return HistGBDTRegressor(max_iter=100, max_leaf_nodes=31, learning_rate=0.1,
                             max_bins=255, min_samples_leaf=20, early_stopping=False,
                             n_threads=2, random_state=0)


def lightgbm_model():
    import lightgbm
    return lightgbm.LGBMRegressor(n_estimators=100, num_leaves=31, learning_rate=0.1,
                                  max_bin=255, min_child_samples=20, n_jobs=2,
                                  verbose=-1, random_state=0)


def _timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def stages(X, y):
    """hgbt's input stages alone: conversion (fit) and thresholds."""
    from hgbt.data.binning import BinMapper
    est = hgbt_model()
    t_convert, (Xc, encoding) = _timed(lambda: est._validate_fit_X(X, None))
    mapper = BinMapper(max_bins=255, random_state=0, n_threads=2,
                       is_categorical=None if encoding is None else encoding.mask)
    t_thresholds, _ = _timed(lambda: mapper.fit(Xc))
    return t_convert, t_thresholds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frame", default="pandas", choices=["pandas", "polars", "arrow"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-lightgbm", action="store_true")
    parser.add_argument("--stages-only", action="store_true",
                        help="time only conversion, thresholds and predict")
    args = parser.parse_args()
    df, y = wide_frame(args.rows)
    X = as_frame(df, args.frame)
    if args.profile:
        est = hgbt_model()
        for what, call in [("fit", lambda: est.fit(X, y)), ("predict", lambda: est.predict(X))]:
            prof = cProfile.Profile()
            prof.runcall(call)
            print(f"--- hgbt {what} ({args.frame})")
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return
    rows = {k: [] for k in ("convert", "thresholds", "hgbt fit", "hgbt predict",
                            "lightgbm dataset", "lightgbm fit", "lightgbm predict")}
    # Warm-up: on this VM the first touch of fresh memory costs seconds per
    # GB, whoever allocates it; timed runs then reuse the process's pages.
    stages(X, y)
    for _ in range(args.repeat):
        t_convert, t_thresholds = stages(X, y)
        rows["convert"].append(t_convert)
        rows["thresholds"].append(t_thresholds)
        est = hgbt_model()
        if args.stages_only:
            est.set_params(max_iter=1)
        rows["hgbt fit"].append(_timed(lambda: est.fit(X, y))[0])
        rows["hgbt predict"].append(_timed(lambda: est.predict(X))[0])
        if args.stages_only:
            continue
        if not args.no_lightgbm and args.frame == "pandas":
            import lightgbm
            params = dict(max_bin=255, min_data_in_leaf=20, num_threads=2, verbose=-1)
            rows["lightgbm dataset"].append(_timed(
                lambda: lightgbm.Dataset(X, y, params=params).construct())[0])
            lgb = lightgbm_model()
            rows["lightgbm fit"].append(_timed(lambda: lgb.fit(X, y))[0])
            rows["lightgbm predict"].append(_timed(lambda: lgb.predict(X))[0])
    print(f"{args.frame}: {X.shape[0]} x {X.shape[1]}, median and min of {args.repeat}")
    for k, v in rows.items():
        if v:
            print(f"  {k:18s} {np.median(v):7.3f} s  min {min(v):7.3f} s"
                  f"   ({', '.join(f'{t:.3f}' for t in v)})")


if __name__ == "__main__":
    main()
