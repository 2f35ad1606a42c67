"""Target statistics of pooled categorical features.

A pooled feature (more categories than bins, ``categorical.py``) keeps its
254 most frequent categories as bins and sends the rest to one shared bin,
so the trees cannot tell the rare categories apart. Next to each pooled
feature the fit adds an internal numeric column: the category's smoothed
mean target (one column per class for multiclass targets). Measured on the
real-data suite (``benchmarks/accuracy_study.md``): the column next to the
pooled bins closed movielens' gap to CatBoost, while encoding features that
fit the bins made other tables worse, so only pooled features get one.

- **Smoothing** (empirical Bayes, as scikit-learn's ``TargetEncoder`` with
  ``smooth='auto'``): a category's mean is shrunk towards the overall mean
  by ``n var(y) / (n var(y) + var_c)``, where ``n`` is its (weight-)count and
  ``var_c`` the target's variance within it.
- **Cross-fitting**: a training row's value comes from the other
  ``N_FOLDS - 1`` folds, so its own target never enters it; at prediction,
  and for validation rows, the statistics of all training rows are used. A
  row's fold is a hash of the seed and its index among all training rows.
- **Exact sums**: the weights, weighted targets and squared targets are each
  split into two parts on power-of-two grids (the high part's fine enough for
  52 - log2(rows) bits of the largest value, the rest's as much finer), so
  their sums do not depend on the order of the rows, and an outlier costs
  the other rows little precision: the rows of a Dask fit's workers
  (``collective``) give the statistics of one process.
- Missing and unknown categories get NaN: the column's missing bin, which
  the trees route by their default direction, as the pooled column does.

The fitted statistics are a plain dict (pickled and written to JSON as
is): ``features`` (the pooled features, ascending), ``tables`` (per
feature, shape (n_categories, n_outputs): the value of each category
position) and ``weights`` (per feature, the training weight of each
position, which partial dependence uses to average over the pooled bin).
The internal column of feature ``features[i]`` and output ``o`` is
``n_features + i * n_outputs + o``.
"""
import math

import numpy as np

from ..core.collective import SINGLE_PROCESS, allreduce_max, allreduce_merge, allreduce_sum
from ..core.exact import WeightedMean, grid_shift
from .categorical import POOLED_BIN

N_FOLDS = 5


def target_columns(y, n_classes):
    """The targets whose means are encoded, shape (n, n_outputs): ``y``
    itself for regression and two classes (0/1) (each column of a
    multi-output or multi-label ``y``), one indicator column per class for
    more."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2:
        return y
    if n_classes is None or n_classes <= 2:
        return y[:, None]
    return (y[:, None] == np.arange(n_classes)).astype(np.float64)


def folds_of(seed, row_ids):
    """Each row's fold in ``[0, N_FOLDS)``: a splitmix64 hash of the seed and
    the row's index among all training rows (the same on any worker)."""
    ids = np.asarray(row_ids, dtype=np.uint64)
    # (an array, not a scalar: NumPy warns when uint64 scalars wrap)
    key = _splitmix(np.array([seed & (2**64 - 1)], dtype=np.uint64))
    return (_splitmix(ids ^ key) % np.uint64(N_FOLDS)).astype(np.intp)


def _splitmix(x):
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _on_grid(values, max_abs, n_rows):
    """``values`` rounded to the power-of-two grid on which any ``n_rows`` of
    them (``|v| <= max_abs``) sum exactly in float64."""
    if not max_abs > 0 or not math.isfinite(max_abs):
        return values
    shift = grid_shift(max_abs, n_rows, 52)
    return np.ldexp(np.rint(np.ldexp(values, shift)), -shift)


def _sums(keys, y_cols, weight, n_keys, n_rows, collective):
    """Per key: weight, weighted target sums and squared-target sums, exact
    (on grids) and summed over every process of ``collective`` (``n_rows``:
    the rows of all of them)."""
    n_out = y_cols.shape[1]
    parts = [weight] + [weight * y_cols[:, o] for o in range(n_out)]
    parts += [parts[1 + o] * y_cols[:, o] for o in range(n_out)]
    # two limbs per value, each on its grid: the high part on the grid of the
    # largest value, the rest on one 2**(52 - log2 n) times finer, so an
    # outlier (a squared target far out) leaves the other rows ~64 bits
    high = [_on_grid(v, m, n_rows) for v, m in zip(parts, allreduce_max(
        collective, [np.max(np.abs(v), initial=0.0) for v in parts]))]
    rest = [v - h for v, h in zip(parts, high)]
    low = [_on_grid(r, m, n_rows) for r, m in zip(rest, allreduce_max(
        collective, [np.max(np.abs(r), initial=0.0) for r in rest]))]
    sums = allreduce_sum(collective, np.stack(  # exact: on the grids
        [np.bincount(keys, weights=v, minlength=n_keys) for v in high + low]))
    sums = sums[:len(parts)] + sums[len(parts):]
    return sums[0], sums[1:1 + n_out].T, sums[1 + n_out:].T


def _smoothed(w, s, q, n_rows):
    """Smoothed means per position from its sums over ``n_rows`` rows
    (positions without weight get the overall mean). Weights count relative
    to their mean, so that scaling them changes nothing."""
    total = w.sum()
    if total <= 0:
        return np.zeros(s.shape)
    scale = n_rows / total
    mean = s.sum(axis=0) / total
    var = np.maximum(q.sum(axis=0) / total - mean ** 2, 0.0)
    seen = w > 0
    safe = np.where(seen, w, 1.0)[:, None]
    mean_c = s / safe
    var_c = np.maximum(q / safe - mean_c ** 2, 0.0)
    n = (w * scale)[:, None]
    denominator = n * var + var_c
    with np.errstate(invalid="ignore", divide="ignore"):
        shrink = np.where(denominator > 0, n * var / denominator, 1.0)
    out = shrink * mean_c + (1.0 - shrink) * mean
    out[~seen] = mean
    return out


def _valid(column):
    """Rows with a category (not NaN) and their integer positions."""
    rows = ~np.isnan(column)
    return rows, column[rows].astype(np.intp)


def fit_transform(X, features, n_positions, y_cols, weight, seed, row_ids=None,
                  collective=SINGLE_PROCESS):
    """Fit the statistics of the pooled ``features`` of ``X`` (category
    positions, NaN for missing) and return ``(stats, columns)``: the fitted
    dict and the training rows' cross-fitted columns, shape
    (n_rows, len(features) * n_outputs). ``weight`` may be None. With a
    ``collective``, the rows of every process count (``row_ids``: each row's
    index among all training rows; default ``0 .. n - 1``)."""
    n = X.shape[0]
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    n_out = y_cols.shape[1]
    # centred, so that the variances (sums of squares minus squared sums) keep
    # their precision for targets far from 0; the means are shifted back
    means = allreduce_merge(collective,
                            [WeightedMean.of(y_cols[:, o], weight) for o in range(n_out)])
    center = np.array([m.value() if float(m.weight) > 0 else 0.0 for m in means])
    y_cols = y_cols - center
    folds = folds_of(seed, np.arange(n) if row_ids is None else row_ids)
    columns = np.full((n, len(features) * n_out), np.nan)
    tables, weights = [], []
    for i, (f, size) in enumerate(zip(features, n_positions)):
        rows, codes = _valid(np.asarray(X[:, f], dtype=np.float64))
        fold = folds[rows]
        # the sums of every (fold, position) at once; a fold's table is
        # fitted on the sums of the other folds
        n_fold = allreduce_sum(collective, np.bincount(fold, minlength=N_FOLDS))
        n_valid = int(n_fold.sum())  # the rows of every process
        w, s, q = (a.reshape(N_FOLDS, size, -1) for a in _sums(
            fold * size + codes, y_cols[rows], weight[rows], N_FOLDS * size, n_valid,
            collective))
        w_all, s_all, q_all = w.sum(axis=0)[:, 0], s.sum(axis=0), q.sum(axis=0)
        tables.append(_smoothed(w_all, s_all, q_all, n_valid) + center)
        weights.append(w_all)
        by_fold = np.stack([_smoothed(w_all - w[k, :, 0], s_all - s[k], q_all - q[k],
                                      n_valid - n_fold[k]) for k in range(N_FOLDS)])
        columns[rows, i * n_out:(i + 1) * n_out] = by_fold[fold, codes] + center
    stats = {"features": np.asarray(features, dtype=np.int64), "tables": tables,
             "weights": weights}
    return stats, columns


def n_outputs(stats):
    """Columns per feature: 1, or the number of classes when above two."""
    return stats["tables"][0].shape[1]


def n_columns(stats):
    """Internal columns the statistics add."""
    return len(stats["tables"]) * n_outputs(stats)


def transform(stats, X):
    """The columns of ``X``'s rows (category positions; NaN, negative or
    out-of-range positions are missing) from the fitted statistics."""
    n_out = n_outputs(stats)
    columns = np.full((X.shape[0], n_columns(stats)), np.nan)
    for i, (f, table) in enumerate(zip(stats["features"], stats["tables"])):
        column = np.asarray(X[:, f], dtype=np.float64)
        with np.errstate(invalid="ignore"):
            rows = (column >= 0) & (column < table.shape[0])
        columns[rows, i * n_out:(i + 1) * n_out] = table[column[rows].astype(np.intp)]
    return columns


def with_columns(X, features, columns):
    """A new float64 array: ``X`` with the positions of the pooled
    ``features`` replaced by their bins, and ``columns`` appended."""
    out = np.empty((X.shape[0], X.shape[1] + columns.shape[1]), dtype=np.float64)
    out[:, :X.shape[1]] = X
    for f in features:
        out[:, f] = np.minimum(X[:, f], POOLED_BIN)
    out[:, X.shape[1]:] = columns
    return out


def with_numeric_columns(mask, stats):
    """The categorical ``mask`` of the user's features extended to the trees'
    features: the statistics' columns are numeric (None stays None)."""
    if mask is None:
        return None
    return np.concatenate([mask, np.zeros(0 if stats is None else n_columns(stats), bool)])


def sources(stats):
    """The source feature of every internal column, shape (n_columns,)."""
    return np.repeat(np.asarray(stats["features"], dtype=np.intp), n_outputs(stats))


def fold(values, stats, n_features, axis):
    """``values`` with the internal columns along ``axis`` (after the
    ``n_features`` user features, and any trailing columns after them, e.g.
    the expected value) added to their source features and removed."""
    values = np.moveaxis(np.asarray(values), axis, 0)
    m = n_columns(stats)
    out = np.concatenate([values[:n_features], values[n_features + m:]])
    np.add.at(out, sources(stats), values[n_features:n_features + m])
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


def value_sets(stats, i, bins):
    """Per grid bin of pooled feature ``features[i]``: the statistic values
    (n_values, n_outputs) and weights summing to 1 that the bin stands for
    (one value for a kept category, the pooled categories' values weighted
    by their training weight for the shared bin, NaN for missing)."""
    table, weight = stats["tables"][i], stats["weights"][i]
    out = []
    for b in bins:
        if np.isnan(b) or b < 0 or b >= table.shape[0] or b > POOLED_BIN:
            out.append((np.full((1, table.shape[1]), np.nan), np.ones(1)))
        elif b < POOLED_BIN:
            out.append((table[int(b)][None, :], np.ones(1)))
        else:
            w = weight[POOLED_BIN:]
            keep = w > 0
            if not keep.any():
                keep[:] = True
                w = np.ones(w.size)
            values, inverse = np.unique(table[POOLED_BIN:][keep], axis=0,
                                        return_inverse=True)
            merged = np.bincount(inverse.ravel(), weights=w[keep])
            out.append((values, merged / merged.sum()))
    return out
