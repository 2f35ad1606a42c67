"""Partial dependence: hgbt's recursion method against scikit-learn's
HistGradientBoosting recursion and the brute method on an hgbt model.

    python benchmarks/pdp_bench.py                       # default setting
    python benchmarks/pdp_bench.py --n-train 5000 --trees 10 --grid 20   # quick

Both models are fitted on the same rows (``hgbt.datasets.make_regression_task``,
missing values included) with the same settings (``--trees`` rounds of 31
leaves, learning rate 0.1, no early stopping, ``--threads`` threads). Timed,
the partial dependence of each of the first ``--features`` features on a
grid of ``--grid`` points, over ``--n-pd`` rows of X without missing values in
those features (the rows the brute method predicts at every grid point):

- hgbt recursion: ``hgbt.partial_dependence``;
- scikit-learn recursion: ``sklearn.inspection.partial_dependence(...,
  method='recursion')`` on ``HistGradientBoostingRegressor``;
- hgbt brute: ``sklearn.inspection.partial_dependence(..., method='brute')``
  on the hgbt model (the path scikit-learn takes for hgbt models unless
  ``hgbt.inspection.enable_sklearn_recursion`` was called).

Each timing is the median of ``--repeats`` runs. Before timing, hgbt's
recursion is checked against scikit-learn's recursion path on the same hgbt
model (``enable_sklearn_recursion``), which must give the same values.
Prints one table; writes nothing.
"""
import argparse

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.inspection import partial_dependence as sk_partial_dependence
from threadpoolctl import threadpool_limits

import hgbt
from hgbt.datasets import make_regression_task
from hgbt.inspection import enable_sklearn_recursion
from shap_bench import timed  # median of repeats; benchmarks/ is the script's path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=100_000)
    parser.add_argument("--n-pd", type=int, default=10_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--features", type=int, default=4)
    parser.add_argument("--grid", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-brute", action="store_true")
    args = parser.parse_args()

    X, y = make_regression_task(args.n_train, random_state=0)[:2]
    X = np.asarray(X, dtype=np.float64)
    # rows without NaN in the target features: scikit-learn's grid would hold NaN
    X_pd = X[~np.isnan(X[:, :args.features]).any(axis=1)][:args.n_pd]
    settings = dict(max_iter=args.trees, max_leaf_nodes=31, learning_rate=0.1,
                    l2_regularization=0.0, early_stopping=False, random_state=0)
    ours = hgbt.HistGBDTRegressor(n_threads=args.threads, **settings).fit(X, y)
    theirs = HistGradientBoostingRegressor(**settings).fit(X, y)
    features = list(range(args.features))

    def hgbt_recursion():
        return [hgbt.partial_dependence(ours, X_pd, f, grid_resolution=args.grid)
                for f in features]

    def sklearn_recursion():
        return [sk_partial_dependence(theirs, X_pd, [f], grid_resolution=args.grid,
                                      method="recursion") for f in features]

    def hgbt_brute():
        return [sk_partial_dependence(ours, X_pd, [f], grid_resolution=args.grid,
                                      method="brute") for f in features]

    with threadpool_limits(args.threads):
        enable_sklearn_recursion()
        for f, result in zip(features, hgbt_recursion()):
            via_sklearn = sk_partial_dependence(ours, X_pd, [f], grid_resolution=args.grid,
                                                method="recursion")
            np.testing.assert_array_equal(result.average, via_sklearn.average)
        rows = [("hgbt recursion", timed(hgbt_recursion, args.repeats)[0]),
                ("scikit-learn HGB recursion", timed(sklearn_recursion, args.repeats)[0])]
        if not args.skip_brute:
            rows.append(("hgbt brute (sklearn method='brute')", timed(hgbt_brute, 1)[0]))
    print(f"{args.n_train:,} training rows x {X.shape[1]} features, {args.trees} trees "
          f"of 31 leaves; {args.features} features x {args.grid} grid points over "
          f"{args.n_pd:,} rows; {args.threads} threads")
    print(f"{'method':40s} {'seconds':>9s}")
    for name, seconds in rows:
        print(f"{name:40s} {seconds:9.3f}")


if __name__ == "__main__":
    main()
