"""scipy.sparse input: format checks, thresholds from non-zeros plus the zero count,
and binning of the stored entries only.

Implicit zeros are the value 0.0 and stored NaN entries are missing, so a
sparse matrix means exactly its ``toarray()``; every function here gives what
the dense path gives on that array, without building it.
"""
import numpy as np
import scipy.sparse as sp

from ._binning import map_csc_to_bins
from ..core._types import X_BINNED_DTYPE, X_DTYPE

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
