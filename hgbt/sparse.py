"""scipy.sparse input: format checks, thresholds from non-zeros plus the zero count,
and binning of the stored entries only.

Implicit zeros are the value 0.0 and stored NaN entries are missing, so a
sparse matrix means exactly its ``toarray()``; every function here gives what
the dense path gives on that array, without building it.
"""
import numpy as np
import scipy.sparse as sp

from ._binning import map_csc_to_bins
from ._types import X_BINNED_DTYPE, X_DTYPE

#: Formats accepted as they are (COO is converted to CSR, a cheap copy).
ACCEPTED_FORMATS = ("csr", "csc", "coo")


def check_sparse_format(X):
    """Raise a TypeError naming the fix for sparse formats hgbt does not read."""
    if sp.issparse(X) and X.format not in ACCEPTED_FORMATS:
        raise TypeError(
            f"A sparse matrix in {X.format!r} format is not supported: hgbt reads "
            "CSR, CSC and COO sparse input. Convert it with X.tocsr().")


def as_csr(X):
    """CSR with sorted, duplicate-free indices; the caller's matrix is never modified."""
    X = X.tocsr()  # no copy when X is already CSR
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # sorts indices, adds duplicate entries as scipy defines
    return X


def column(X, j):
    """Column ``j`` of a dense or sparse matrix as a dense 1-D float array.

    A view of a float32 or float64 ndarray (no copy: the callers only read),
    else a float64 copy.
    """
    if sp.issparse(X):
        return np.asarray(X[:, [j]].toarray(), dtype=X_DTYPE).ravel()
    if isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64):
        return X[:, j]
    return np.asarray(X[:, j], dtype=X_DTYPE)


def _with_zeros(sorted_values, n_zeros):
    """``sorted_values`` with ``n_zeros`` zeros inserted in order."""
    at = np.searchsorted(sorted_values, 0.0)
    return np.concatenate([sorted_values[:at], np.zeros(n_zeros, dtype=X_DTYPE),
                           sorted_values[at:]])


def column_thresholds(values, n_zeros, max_bins):
    """Thresholds of a column given by its stored ``values`` and implicit zeros.

    Equal to the dense thresholds of the same column. With few distinct
    values (the usual sparse column) only the stored values are sorted;
    otherwise the sorted column is built for the quantiles.
    """
    from .binning import _distinct, _midpoints, _sorted_thresholds
    values = np.sort(values[~np.isnan(values)])
    distinct = _distinct(values)
    if n_zeros and not np.any(distinct == 0.0):
        distinct = _with_zeros(distinct, 1)
    if distinct.size <= 1:
        return np.empty(0, dtype=X_DTYPE)
    if distinct.size <= max_bins:
        return _midpoints(distinct)
    return _sorted_thresholds(_with_zeros(values, n_zeros), max_bins)


def sparse_thresholds(X_csc, j, max_bins, sample_weight, n_kept=None):
    """Thresholds of column ``j`` of a CSC sample (see :func:`column_thresholds`).

    ``sample_weight`` must be None or constant over its positive entries
    (rows of weight 0 are left out); other weights need the dense column,
    since weighted quantiles add weights row by row. ``n_kept``, the number
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


def bin_stored_entries(X_csc, bin_mapper, n_threads):
    """Bin codes of the stored entries of ``X_csc`` (aligned with ``X_csc.data``)."""
    if X_csc.shape[1] != len(bin_mapper.bin_thresholds_):
        raise ValueError(f"X has {X_csc.shape[1]} features, the bin mapper was fit with "
                         f"{len(bin_mapper.bin_thresholds_)}.")
    padded, n_thresholds = bin_mapper.padded_thresholds()
    codes = np.empty(X_csc.data.shape[0], dtype=X_BINNED_DTYPE)
    data = X_csc.data if X_csc.data.dtype in (np.float32, np.float64) else \
        X_csc.data.astype(X_DTYPE)
    indptr = X_csc.indptr
    if indptr.dtype not in (np.int32, np.int64):
        indptr = indptr.astype(np.int64)
    args = (np.ascontiguousarray(data), np.ascontiguousarray(indptr), padded,
            n_thresholds, bin_mapper.missing_bin, codes, n_threads)
    is_categorical = getattr(bin_mapper, "is_categorical_", None)
    if is_categorical is not None and np.any(is_categorical):
        map_csc_to_bins(*args, np.ascontiguousarray(is_categorical, dtype=np.uint8),
                        np.ascontiguousarray(bin_mapper.known_cat_bitsets_))
    else:
        map_csc_to_bins(*args)
    return codes
