#!/usr/bin/env python
"""hgbt's binning rule against the quantile rule it replaced, cross-validated.

``python benchmarks/binning_rule.py [diamonds,movies,...] [--folds 5]``

For features with more distinct values than ``max_bins``, hgbt cuts greedily
by row counts (``hgbt/data/thresholds.py``: a value holding at least
``1 / max_bins`` of the rows alone in its bin; elsewhere a cut where the rows
since the last cut reach the rows left over the bins left). Until issue 37 it
cut at de-duplicated averaged-inverted-CDF quantiles, kept here as
``quantile_thresholds`` and injected into hgbt's ``BinMapper`` for the
comparison (dense, unweighted inputs: what every table below is).

Each task is fitted with hgbt's defaults (``random_state=0``) under both rules
on the same K folds (stratified for classification, shuffled, seed 0), so
every row is predicted once by each rule. It prints, per task, the bins used
over all features (first fold), the cross-validated R² (count tables on
log1p) or log-loss of each rule, and the paired difference of the per-row
losses, greedy − quantile, relative to the quantile rule's mean loss, with
two standard errors and the verdict of ``realdata.py`` (within noise when
|difference| <= 2 SE). First the two one-feature tasks of
``heavy_tails.py``, where the rule matters most. Accuracy only: nothing here
is timed.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hgbt  # noqa: E402
import hgbt.data.binning as binning  # noqa: E402
from hgbt.data.thresholds import _separators  # noqa: E402

BUILT = binning.dense_thresholds


def quantile_thresholds(values, max_bins):
    """The replaced rule for sorted, NaN-free values: separators between the
    distinct values if at most ``max_bins``, else the interior quantiles k / B
    (averaged inverted CDF, each as the separator above its order statistic),
    capped below the maximum and de-duplicated."""
    distinct = np.unique(values)
    if distinct.size <= 1:
        return np.empty(0)
    if distinct.size <= max_bins:
        return _separators(distinct[:-1], distinct[1:])
    n = values.size
    rank, remainder = np.divmod(n * np.arange(1, max_bins), max_bins)
    lower = values[np.maximum(rank - 1, 0)]
    upper = values[np.minimum(rank, n - 1)]
    between = (remainder == 0) & (lower != upper)
    out = upper.copy()
    out[between] = _separators(lower[between], upper[between])
    following = np.searchsorted(values, upper[~between], side="right")
    above = following < n
    at = np.flatnonzero(~between)[above]
    out[at] = _separators(upper[at], values[following[above]])
    top = _separators(distinct[-2:-1], distinct[-1:])[0]
    return np.unique(np.minimum(out, top))


def quantile_dense_thresholds(X, rows, max_bins=255, n_threads=1):
    """``dense_thresholds``' arrays, by the quantile rule (one column at a time)."""
    padded = np.zeros((X.shape[1], max(max_bins - 1, 1)))
    counts = np.zeros(X.shape[1], dtype=np.int32)
    for f in range(X.shape[1]):
        col = np.asarray(X[:, f] if rows is None else X[rows, f], dtype=np.float64)
        t = quantile_thresholds(np.sort(col[~np.isnan(col)]), max_bins)
        padded[f, :t.size] = t
        counts[f] = t.size
    return padded, counts


def run(name, X, y, task, folds):
    from sklearn.model_selection import KFold, StratifiedKFold
    from realdata import _paired, row_losses
    classify = task != "regression"
    est = hgbt.HistGBDTClassifier if classify else hgbt.HistGBDTRegressor
    split = (StratifiedKFold if classify else KFold)(folds, shuffle=True, random_state=0)
    losses = {"quantile": np.zeros(len(y)), "greedy": np.zeros(len(y))}
    bins = {}
    rows = X.iloc if hasattr(X, "iloc") else X
    n_classes = int(y.max()) + 1 if classify else 0
    for train, test in split.split(np.zeros(len(y)), y):
        for rule, fn in (("quantile", quantile_dense_thresholds), ("greedy", BUILT)):
            binning.dense_thresholds = fn
            try:
                model = est(random_state=0).fit(rows[train], y[train])
            finally:
                binning.dense_thresholds = BUILT
            if classify:
                pred = np.zeros((len(test), n_classes))
                pred[:, model.classes_.astype(int)] = model.predict_proba(rows[test])
                losses[rule][test] = row_losses("binary", y[test], pred)
            else:
                losses[rule][test] = row_losses("regression", y[test], model.predict(rows[test]))
            bins.setdefault(rule, sum(t.size + 1 for t in
                                      model.booster_.bin_mapper.bin_thresholds_))
    q, g = losses["quantile"], losses["greedy"]
    if classify:
        metric, values = "log-loss", (q.mean(), g.mean())
    else:
        metric, values = "R²", tuple(1 - l.mean() / np.var(y) for l in (q, g))
    d = _paired(g, q)
    print(f"| {name} | {metric} | {bins['quantile']:,} | {bins['greedy']:,} | "
          f"{values[0]:.4f} | {values[1]:.4f} | {d['delta_pct']:+.2f}% ± "
          f"{d['two_se_pct']:.2f}% | {d['verdict']} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="?", default="",
                        help="comma-separated names from realdata_datasets.py")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    from heavy_tails import carat, flights
    from realdata_datasets import DATASETS
    print("| data | metric | bins: quantile | greedy | quantile | greedy | "
          "loss: greedy − quantile (± 2 SE) | verdict |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    X, y = flights()
    run("flights dep_delay only", X, y, "regression", args.folds)
    X, y = carat()
    run("diamonds carat only", X, y, "regression", args.folds)
    for name in filter(None, args.tables.split(",")):
        ds = DATASETS[name]
        X, y = ds.loader()
        y = np.asarray(y)
        task = "regression" if ds.task in ("regression", "count") else "classification"
        if task == "classification":
            y = np.unique(y, return_inverse=True)[1]
        if ds.task == "count":
            y = np.log1p(y.astype(float))
        run(name, X, y, task, args.folds)


if __name__ == "__main__":
    main()
