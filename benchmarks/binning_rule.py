#!/usr/bin/env python
"""Study for issue 37 item 3 (measurement only, not hgbt's rule): greedy bin
boundaries for features with more distinct values than ``max_bins``,
injected into hgbt's BinMapper, against today's quantile rule.

``python benchmarks/greedy_bins_study.py diamonds,movies,... [--scan]`` fits
hgbt's defaults (``random_state=0``, 80/20 split, seed 0) twice per table,
with the quantile thresholds and with a greedy rule, and prints the bins
used over all features and the test scores (R², count tables on log1p;
accuracy). First two one-feature tasks of ``heavy_tails.py``. Rules:

- default (two passes of equal counts): each value holding at least N/B of
  the rows gets its own bin; the remaining cuts go to the runs of other
  values in proportion to their rows, at equal counts within a run;
- ``--scan``: one scan that cuts around each such value and wherever the
  rows since the last cut reach the remaining rows over the remaining bins
  (the tail gets the bins the ties leave).

It patches ``hgbt.data.binning.dense_thresholds`` (dense inputs only) and
recomputes every column in Python: slow, for measuring.
"""
import sys
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import hgbt
import hgbt.data.binning as binning
from hgbt.data.thresholds import _separators
from sklearn.model_selection import train_test_split

ORIGINAL = binning.dense_thresholds


def greedy(values, max_bins):
    """Cuts for sorted non-NaN values: each value holding at least N/B rows
    alone; the other bins spread over the remaining rows by equal counts."""
    distinct, counts = np.unique(values, return_counts=True)
    m = distinct.size
    if m <= max_bins:
        return _separators(distinct[:-1], distinct[1:])
    n = counts.sum()
    big = np.flatnonzero(counts >= n / max_bins)
    cuts = set()
    for i in big:
        if i > 0:
            cuts.add(i - 1)
        if i < m - 1:
            cuts.add(i)
    extra = (max_bins - 1) - len(cuts)
    is_big = np.zeros(m, bool); is_big[big] = True
    runs, start = [], None
    for i in range(m):
        if not is_big[i] and start is None:
            start = i
        if (is_big[i] or i == m - 1) and start is not None:
            stop = i if is_big[i] else i + 1
            runs.append((start, stop)); start = None
    rest = sum(counts[a:b].sum() for a, b in runs)
    for a, b in runs:
        cnt = counts[a:b]
        k = min(int(extra * cnt.sum() / rest), b - a - 1) if rest else 0
        if k <= 0:
            continue
        cum = np.cumsum(cnt)
        targets = cum[-1] * np.arange(1, k + 1) / (k + 1)
        idx = np.searchsorted(cum, targets, side="left")
        for j in idx:
            if a + j < b - 1:
                cuts.add(a + j)
    cuts = np.array(sorted(cuts))
    return _separators(distinct[cuts], distinct[cuts + 1])


def greedy_scan(values, max_bins):
    """One scan: a cut where the rows since the last cut reach the remaining
    rows over the remaining bins, and around every value holding at least
    N/B rows (so a point mass is alone and the other rows share the bins
    left: the tail gets bins the ties do not use)."""
    distinct, counts = np.unique(values, return_counts=True)
    m = distinct.size
    if m <= max_bins:
        return _separators(distinct[:-1], distinct[1:])
    is_big = counts >= counts.sum() / max_bins
    cuts, bins_left, rows_left, acc = [], max_bins, counts.sum(), 0
    mean = rows_left / bins_left
    for i in range(m - 1):
        acc += counts[i]
        if is_big[i] or is_big[i + 1] or acc >= mean:
            cuts.append(i)
            rows_left -= acc
            bins_left -= 1
            acc = 0
            if bins_left <= 1:
                break
            mean = rows_left / bins_left
    cuts = np.array(cuts)
    return _separators(distinct[cuts], distinct[cuts + 1])


RULE = greedy_scan if "--scan" in sys.argv else greedy


def patched(X, rows, max_bins=255, n_threads=1):
    padded, counts = ORIGINAL(X, rows, max_bins, n_threads)
    for f in range(X.shape[1]):
        col = np.asarray(X[:, f] if rows is None else X[rows, f], dtype=np.float64)
        col = np.sort(col[~np.isnan(col)])
        t = RULE(col, max_bins)
        padded[f, :] = 0
        padded[f, :t.size] = t
        counts[f] = t.size
    return padded, counts


def run(name, X, y, task):
    est = hgbt.HistGBDTRegressor if task == "regression" else hgbt.HistGBDTClassifier
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    out = []
    for rule in ("quantile", "greedy"):
        binning.dense_thresholds = patched if rule == "greedy" else ORIGINAL
        m = est(random_state=0).fit(Xtr, ytr)
        out.append(m.score(Xte, yte))
        bins = [t.size + 1 for t in m.booster_.bin_mapper.bin_thresholds_]
        out.append(int(np.sum(bins)))
    binning.dense_thresholds = ORIGINAL
    print(f"| {name} | {task} | {out[1]} | {out[3]} | {out[0]:.4f} | {out[2]:.4f} | "
          f"{out[2] - out[0]:+.4f} |", flush=True)


if __name__ == "__main__":
    from realdata_datasets import DATASETS
    from heavy_tails import flights, carat
    print("| data | task | bins (quantile) | bins (greedy) | score quantile | score greedy | difference |")
    print("|---|---|---:|---:|---:|---:|---:|")
    X, y = flights(); run("flights dep_delay only", X, y, "regression")
    X, y = carat(); run("diamonds carat only", X, y, "regression")
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in (names[0].split(",") if names else []):
        ds = DATASETS[name]
        X, y = ds.loader()
        task = "regression" if ds.task in ("regression", "count") else "classification"
        if ds.task == "count":
            y = np.log1p(y.astype(float))
        run(name, X, y, task)
