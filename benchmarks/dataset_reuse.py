#!/usr/bin/env python
"""A search over tree parameters on data binned once, side by side with the peers.

Five configurations (leaves and rows per leaf) are fitted on the same rows,
two ways per library:

- **fits**: five estimator fits on the raw rows (each validates and bins
  them again): ``HistGBDTRegressor/Classifier.fit``, ``LGBMRegressor/
  Classifier.fit``, ``XGBRegressor/Classifier.fit``;
- **reused**: the rows binned once, then five fits on the binned data:
  ``hgbt.Dataset`` + ``hgbt.train``, ``lightgbm.Dataset`` + ``lightgbm.train``,
  ``xgboost.QuantileDMatrix`` + ``xgboost.train``.

Printed per dataset and library: seconds of each way (the binning itself
counted in "reused"), their ratio, and hgbt's models checked to be the same
both ways (bit for bit). Settings: 50 rounds, learning rate 0.1, 255 bins,
no early stopping, the threads given.

    python benchmarks/dataset_reuse.py [--threads 2] [--data flights synthetic]
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

import hgbt

ROUNDS, LEARNING_RATE = 50, 0.1
GRID = [{"leaves": 15, "leaf": 20}, {"leaves": 31, "leaf": 20}, {"leaves": 63, "leaf": 20},
        {"leaves": 31, "leaf": 100}, {"leaves": 127, "leaf": 50}]


def synthetic(n=200_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 28)).astype(np.float32)
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * rng.normal(size=n))
    return X, y, "regression"


def flights():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from realdata_datasets import flights as load
    X, y = load()
    return X, y.astype(int), "binary"


DATA = {"synthetic": synthetic, "flights": flights}


def hgbt_params(cfg, task, threads):
    return {"loss": "log_loss" if task == "binary" else "squared_error",
            "max_iter": ROUNDS, "learning_rate": LEARNING_RATE, "max_leaf_nodes": cfg["leaves"],
            "min_samples_leaf": cfg["leaf"], "l2_regularization": 0.0,
            "early_stopping": False, "n_threads": threads, "random_state": 0}


def run_hgbt(X, y, task, threads):
    cls = hgbt.HistGBDTClassifier if task == "binary" else hgbt.HistGBDTRegressor
    start = time.perf_counter()
    fitted = [cls(**hgbt_params(cfg, task, threads)).fit(X, y) for cfg in GRID]
    fits = time.perf_counter() - start
    start = time.perf_counter()
    data = hgbt.Dataset(X, y, n_threads=threads)
    boosters = [hgbt.train(hgbt_params(cfg, task, threads), data) for cfg in GRID]
    reused = time.perf_counter() - start
    same = all(b.predict(X[:2000], raw_score=True).tobytes()
               == m.booster_.predict(X[:2000], raw_score=True).tobytes()
               for b, m in zip(boosters, fitted))
    return fits, reused, same


def run_lightgbm(X, y, task, threads):
    import lightgbm as lgb

    def params(cfg):
        return {"objective": "binary" if task == "binary" else "regression",
                "num_leaves": cfg["leaves"], "min_data_in_leaf": cfg["leaf"],
                "learning_rate": LEARNING_RATE, "max_bin": 255, "num_threads": threads,
                "verbose": -1, "seed": 0}

    cls = lgb.LGBMClassifier if task == "binary" else lgb.LGBMRegressor
    start = time.perf_counter()
    for cfg in GRID:
        p = params(cfg)
        p.pop("objective")
        cls(n_estimators=ROUNDS, **p).fit(X, y)
    fits = time.perf_counter() - start
    start = time.perf_counter()
    data = lgb.Dataset(X, y, params={"max_bin": 255, "verbose": -1}, free_raw_data=False)
    for cfg in GRID:
        lgb.train(params(cfg), data, ROUNDS)
    return fits, time.perf_counter() - start, None


def run_xgboost(X, y, task, threads):
    import xgboost as xgb

    def params(cfg):
        return {"objective": "binary:logistic" if task == "binary" else "reg:squarederror",
                "tree_method": "hist", "grow_policy": "lossguide", "max_depth": 0,
                "max_leaves": cfg["leaves"], "min_child_weight": 1e-3, "lambda": 0.0,
                "eta": LEARNING_RATE, "max_bin": 256, "nthread": threads, "seed": 0}

    categorical = hasattr(X, "dtypes")
    cls = xgb.XGBClassifier if task == "binary" else xgb.XGBRegressor
    start = time.perf_counter()
    for cfg in GRID:
        p = params(cfg)
        p.pop("objective")
        cls(n_estimators=ROUNDS, enable_categorical=categorical, **p).fit(X, y)
    fits = time.perf_counter() - start
    start = time.perf_counter()
    data = xgb.QuantileDMatrix(X, y, max_bin=256, enable_categorical=categorical,
                               nthread=threads)
    for cfg in GRID:
        xgb.train(params(cfg), data, ROUNDS)
    return fits, time.perf_counter() - start, None


LIBRARIES = {"hgbt": run_hgbt, "lightgbm": run_lightgbm, "xgboost": run_xgboost}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES),
                        choices=list(LIBRARIES))
    args = parser.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{args.threads} threads; hgbt {hgbt.__version__}; {len(GRID)} configurations "
          f"of {ROUNDS} rounds")
    print("| data | rows | library | 5 fits (s) | binned once + 5 fits (s) | ratio | "
          "same models |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in args.data:
        X, y, task = DATA[name]()
        for library in args.libraries:
            fits, reused, same = LIBRARIES[library](X, y, task, args.threads)
            print(f"| {name} | {len(y):,} | {library} | {fits:.2f} | {reused:.2f} | "
                  f"{reused / fits:.2f} | {'' if same is None else same} |", flush=True)


if __name__ == "__main__":
    main()
