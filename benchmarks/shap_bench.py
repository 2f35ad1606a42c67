"""TreeSHAP contributions (and interaction values) of hgbt, LightGBM and XGBoost.

    python benchmarks/shap_bench.py                  # the issue's setting (long)
    python benchmarks/shap_bench.py --n-train 20000 --n-explain 500 --trees 5

The issue's setting: a binary model of 100 trees of 31 leaves fitted on
1,000,000 x 28 rows (``hgbt.datasets.make_binary_task``, missing values
included), then the contributions of 100,000 rows: hgbt's
``predict_contributions``, LightGBM's ``predict(pred_contrib=True)`` and
XGBoost's ``predict(pred_contribs=True)`` (``tree_method='hist'``,
``grow_policy='lossguide'``, ``max_leaves=31``, ``max_depth=0``). Interaction
values (hgbt's ``predict_interactions``, XGBoost's ``pred_interactions``) on
``--n-interactions`` rows. Every library uses ``--threads`` threads; each
timing is the median of ``--repeats`` runs. Each library's contributions are
checked to sum to its own raw score before they are timed. Prints one table;
writes nothing. Target of the issue: hgbt <= 0.5x the faster peer on
contributions, <= XGBoost on interaction values.
"""
import argparse
import statistics
import time

import numpy as np

from hgbt import HistGBDTClassifier
from hgbt.datasets import make_binary_task


def timed(call, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def fit_all(X, y, trees, threads):
    """The three models on the same settings; ``(name, contributions,
    interactions or None, raw score)`` per library."""
    import lightgbm
    import xgboost

    hgbt = HistGBDTClassifier(max_iter=trees, max_leaf_nodes=31, learning_rate=0.1,
                              l2_regularization=0.0, early_stopping=False, n_threads=threads,
                              random_state=0).fit(X, y)
    lgbm = lightgbm.LGBMClassifier(n_estimators=trees, num_leaves=31, learning_rate=0.1,
                                   n_jobs=threads, verbose=-1, random_state=0).fit(X, y)
    xgb = xgboost.XGBClassifier(n_estimators=trees, max_leaves=31, max_depth=0,
                                grow_policy="lossguide", tree_method="hist",
                                learning_rate=0.1, n_jobs=threads,
                                random_state=0).fit(X, y)
    booster = xgb.get_booster()

    def xgb_call(**kw):
        return lambda Z: booster.predict(xgboost.DMatrix(Z, nthread=threads), **kw)

    return [
        ("hgbt", hgbt.predict_contributions, hgbt.predict_interactions,
         hgbt.decision_function),
        ("lightgbm", lambda Z: lgbm.predict(Z, pred_contrib=True), None,
         lambda Z: lgbm.predict(Z, raw_score=True)),
        ("xgboost", xgb_call(pred_contribs=True), xgb_call(pred_interactions=True),
         xgb_call(output_margin=True)),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=1_000_000)
    parser.add_argument("--n-explain", type=int, default=100_000)
    parser.add_argument("--n-interactions", type=int, default=2_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    X, y = make_binary_task(n_samples=args.n_train + args.n_explain, random_state=0)
    X_fit, y_fit, X_explain = X[:args.n_train], y[:args.n_train], X[args.n_train:]
    X_inter = X_explain[:args.n_interactions]
    rows = []
    for name, contrib, inter, raw in fit_all(X_fit, y_fit, args.trees, args.threads):
        check = contrib(X_explain[:100])
        np.testing.assert_allclose(check.sum(axis=1), raw(X_explain[:100]), atol=1e-4)
        seconds, _ = timed(lambda: contrib(X_explain), args.repeats)
        inter_seconds = (timed(lambda: inter(X_inter), args.repeats)[0]
                         if inter is not None else float("nan"))
        rows.append((name, seconds, inter_seconds))
    fastest_peer = min(s for name, s, _ in rows if name != "hgbt")
    print(f"{args.n_train} x 28 fit, {args.trees} trees of 31 leaves, {args.threads} threads; "
          f"contributions of {args.n_explain} rows, interactions of {args.n_interactions}")
    print(f"{'library':10} {'contributions s':>16} {'vs fastest peer':>16} "
          f"{'interactions s':>15}")
    for name, seconds, inter_seconds in rows:
        print(f"{name:10} {seconds:16.3f} {seconds / fastest_peer:16.2f} "
              f"{inter_seconds:15.3f}")


if __name__ == "__main__":
    main()
