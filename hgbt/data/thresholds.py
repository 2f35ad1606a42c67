"""Bin thresholds of one column or of many: separators between the distinct
values, or greedy cuts by (weighted) row counts when a sample has more of
them than bins; dense columns in parallel blocks, sparse columns from their
stored values and zero count."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._binning import sorted_column_thresholds, sorted_thresholds
from ..core._types import X_DTYPE

# Bytes of sample columns copied and sorted together by one thread (a few
# MB: a block stays in cache while its thresholds are read off, and the
# extra memory stays small next to X).
SORT_BLOCK_BYTES = 4 << 20


def _separators(a, b):
    """Elementwise threshold ``t`` separating ``a < b`` (``a <= t < b``) that
    float32 keeps: among the float32 numbers with ``a <= t < b`` and
    ``t < float32(b)``, the least at or above the midpoint (else the
    largest; the least next to an infinite value). Then ``float32(x) <= t``
    exactly when ``x <= t`` for every ``x <= a`` or ``>= b``, so a model
    exported with float32 inputs (ONNX) routes the training values as
    ``predict`` does; unseen values disagree only in the half float32 step
    above ``t``, which lies above the midpoint (a round value of decimal
    data, such as 59.3 between 59.2 and 59.4, is on the left both ways). Where no float32 number lies between them, the float64 midpoint,
    or ``a`` where that is not strictly below ``b`` (±inf, adjacent
    floats). The kernel's ``_separator`` is the same rule.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        mid = a * 0.5 + b * 0.5
        lo = a.astype(np.float32)
        up = lo.astype(np.float64) < a
        lo[up] = np.nextafter(lo[up], np.float32(np.inf))
        high = np.minimum(b, b.astype(np.float32).astype(np.float64))
        hi = high.astype(np.float32)
        down = hi.astype(np.float64) >= high
        hi[down] = np.nextafter(hi[down], np.float32(-np.inf))
        # an infinite gap (a or b infinite): the least threshold
        t = np.where(np.isfinite(mid), mid.astype(np.float32), lo)
        below = np.isfinite(mid) & (t.astype(np.float64) < mid)
        t[below] = np.nextafter(t[below], np.float32(np.inf))
    fits = (lo.astype(np.float64) >= a) & (hi.astype(np.float64) < high) & (lo <= hi)
    # clamped as the kernel clamps (np.minimum would turn -0.0 into +0.0)
    t = np.where(t < lo, lo, t)
    out = np.where(t > hi, hi, t).astype(np.float64)
    wide = mid.copy()
    bad = ~((a <= mid) & (mid < b))
    wide[bad] = a[bad]
    return np.where(fits, out, wide)


def _check_weight(sample_weight, n_samples):
    """Float64 1-d array of finite, non-negative weights (or None)."""
    if sample_weight is None:
        return None
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), got {sample_weight.shape}.")
    if not np.all(np.isfinite(sample_weight)):
        raise ValueError("sample_weight must be finite.")
    if np.any(sample_weight < 0):
        raise ValueError("sample_weight must be non-negative.")
    return sample_weight


def find_thresholds(column, max_bins, sample_weight=None):
    """Thresholds of one feature from its (possibly subsampled) values.

    At most ``max_bins`` distinct values map one-to-one to bins (a threshold
    between each two, :func:`_separators`). With more, one scan over the
    sorted distinct values cuts (at the separator) around every value that
    holds at least ``1 / max_bins`` of the rows, so that it has a bin of its
    own, and wherever the rows since the last cut reach the rows left over
    the bins left. Bins of continuous data so hold equal counts, as
    quantiles would; unlike quantiles, the bins a frequent value or a run of
    ties would swallow go to the other values, so a heavy tail keeps its
    own bins (LightGBM's binning has the same aim).

    With ``sample_weight``, rows of zero weight are ignored (for the count of
    distinct values and for the cuts) and weights take the place of row
    counts, summed in row order: integer weights give exactly the
    thresholds of the rows repeated that many times, unit weights exactly the
    unweighted thresholds (bit for bit, as for any constant weight). If every
    non-NaN value has zero weight, the thresholds fall back to the unweighted
    ones of those values (rather than none, as for an all-NaN feature), so
    that values seen at fit time still get distinct bins at prediction time.

    Parameters
    ----------
    column : ndarray of shape (n,)
    max_bins : int
        Maximum number of non-missing bins; at most ``max_bins - 1`` thresholds.
    sample_weight : ndarray of shape (n,) or None
        Finite, non-negative row weights.

    Returns
    -------
    thresholds : ndarray of float64, sorted, strictly increasing
    """
    column = np.asarray(column, dtype=X_DTYPE)
    return _find_thresholds(column, max_bins, _check_weight(sample_weight, column.shape[0]))


def _find_thresholds(column, max_bins, sample_weight):
    """:func:`find_thresholds` with ``sample_weight`` already checked."""
    column = np.asarray(column)
    if sample_weight is not None or column.dtype != np.float32:
        column = column.astype(X_DTYPE, copy=False)
    if sample_weight is not None:
        return _find_weighted_thresholds(column, max_bins, sample_weight)
    # float32 sorts in about half the time of float64, and widening after the
    # sort gives the same array (the cast is exact and keeps the order)
    values = np.sort(column[~np.isnan(column)])
    return _sorted_thresholds(values.astype(X_DTYPE, copy=False), max_bins)


def _sorted_thresholds(values, max_bins):
    """:func:`find_thresholds` of sorted, NaN-free values without weights."""
    return sorted_thresholds(np.ascontiguousarray(values, dtype=X_DTYPE), None, max_bins)


def _find_weighted_thresholds(column, max_bins, sample_weight):
    keep = ~np.isnan(column) & (sample_weight > 0)
    if not keep.any():
        # Nothing with positive weight: unweighted thresholds of the non-NaN
        # values (none if the column is all NaN).
        return _find_thresholds(column, max_bins, None)
    values = column[keep]
    weight = sample_weight[keep]
    if weight.min() == weight.max():
        # Equal weights: the weighted rule is exactly the unweighted one on
        # the kept rows (on counts, free of rounding in the sums), so unit
        # weights give bit-identical thresholds.
        return _find_thresholds(values, max_bins, None)
    # Each distinct value's weight summed in row order (bincount adds row by
    # row), so the sums do not hang on how a sort orders ties; the kernel
    # then sees one row per distinct value.
    distinct, inverse = np.unique(values, return_inverse=True)
    return sorted_thresholds(distinct, np.bincount(inverse, weights=weight), max_bins)


def _unweighted(sample_weight):
    """True when the weights cannot change the thresholds: none, or all equal
    and positive (every row kept, the weighted rule then being the unweighted
    one bit for bit)."""
    return sample_weight is None or (
        sample_weight.size > 0 and sample_weight.min() == sample_weight.max() > 0)


def dense_thresholds(X, rows=None, max_bins=255, n_threads=1):
    """Unweighted thresholds of every column of a dense ``X``, in parallel.

    Equal to :func:`find_thresholds` of each column (restricted to ``rows``).
    Blocks of whole columns are copied (float32 stays float32), sorted in place
    by NumPy along axis 0 (NaN last) and read off by the
    ``sorted_column_thresholds`` kernel; threads take whole blocks, so the
    result does not depend on ``n_threads``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    rows : ndarray of int or None
        Rows to use (None: all).
    max_bins : int
    n_threads : int

    Returns
    -------
    thresholds : ndarray of shape (n_features, max_bins - 1), float64
        Row ``f`` holds the thresholds of feature ``f`` in its first
        ``counts[f]`` entries.
    counts : ndarray of shape (n_features,), int32
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}.")
    n_features = X.shape[1]
    n_rows = X.shape[0] if rows is None else len(rows)
    dtype = np.dtype(np.float32 if X.dtype == np.float32 else X_DTYPE)
    thresholds = np.zeros((n_features, max(max_bins - 1, 1)), dtype=X_DTYPE)
    counts = np.zeros(n_features, dtype=np.int32)
    if n_features == 0 or n_rows == 0:
        return thresholds, counts
    n_threads = max(1, int(n_threads))
    width = max(1, SORT_BLOCK_BYTES // (n_rows * dtype.itemsize))
    # at least ~4 blocks per thread, so that threads finish together
    width = min(width, -(-n_features // (4 * n_threads)))
    starts = range(0, n_features, width)

    def one_block(lo):
        hi = min(lo + width, n_features)
        block = np.empty((n_rows, hi - lo), dtype=dtype, order="F")
        # the copy, the sort and the kernel all run without the GIL
        block[...] = X[:, lo:hi] if rows is None else X[rows, lo:hi]
        block.sort(axis=0)
        sorted_column_thresholds(block, max_bins, thresholds[lo:hi], counts[lo:hi], 1)

    if n_threads == 1 or len(starts) == 1:
        for lo in starts:
            one_block(lo)
    else:
        with ThreadPoolExecutor(max_workers=n_threads) as pool:
            list(pool.map(one_block, starts))
    return thresholds, counts


def column_thresholds(values, n_zeros, max_bins):
    """Thresholds of a column given by its stored ``values`` and implicit zeros.

    Equal to the dense thresholds of the same column: the kernel reads the
    distinct stored values with their row counts, the implicit zeros being
    one more count of 0.0, so only the stored values are sorted and the
    zeros are never written out (counts are exact, as the dense column's).
    """
    distinct, counts = np.unique(values[~np.isnan(values)], return_counts=True)
    if n_zeros:
        at = int(np.searchsorted(distinct, 0.0))
        if at < distinct.size and distinct[at] == 0.0:
            counts[at] += n_zeros
        else:
            distinct = np.insert(distinct, at, 0.0)
            counts = np.insert(counts, at, n_zeros)
    return sorted_thresholds(np.ascontiguousarray(distinct, dtype=X_DTYPE),
                             counts.astype(np.float64), max_bins)


def sparse_thresholds(X_csc, j, max_bins, sample_weight, n_kept=None):
    """Thresholds of column ``j`` of a CSC sample (see :func:`column_thresholds`).

    ``sample_weight`` must be None or constant over its positive entries
    (rows of weight 0 are left out); other weights need the dense column,
    since weighted cuts add weights row by row. ``n_kept``, the number
    of positive weights, can be passed to spare a pass over the weights.
    """
    start, stop = X_csc.indptr[j], X_csc.indptr[j + 1]
    values = np.asarray(X_csc.data[start:stop], dtype=X_DTYPE)
    n_rows = X_csc.shape[0]
    if sample_weight is not None:
        kept = sample_weight[X_csc.indices[start:stop]] > 0
        if n_kept is None:
            n_kept = int(np.count_nonzero(sample_weight > 0))
        kept_values = values[kept]
        n_kept_zeros = n_kept - kept_values.size
        if n_kept_zeros or np.any(~np.isnan(kept_values)):
            # equal weights: the unweighted thresholds of the kept rows
            return column_thresholds(kept_values, n_kept_zeros, max_bins)
        # nothing kept: the unweighted thresholds of every row, as dense
    return column_thresholds(values, n_rows - values.size, max_bins)


def constant_positive_weight(sample_weight):
    """True if the positive weights are all equal (or there are no weights)."""
    if sample_weight is None:
        return True
    positive = sample_weight[sample_weight > 0]
    return positive.size == 0 or positive.min() == positive.max()
