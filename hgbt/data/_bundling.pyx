"""Kernels: row-conflict counts for exclusive feature bundling, and the
entries (rows off the default bin) of binned dense columns.

A bundle's rows already holding a non-default value are a bitset (one bit
per row, uint64 words); a candidate feature conflicts on the rows it shares
with it.
"""
from cython.parallel cimport prange
from libc.string cimport memset
import numpy as np

from ..core._types cimport SIZE_C, X_BINNED_DTYPE_C
from ..core._types import SIZE_DTYPE, X_BINNED_DTYPE


def column_stats(const X_BINNED_DTYPE_C[::1, :] X_binned,
                 const X_BINNED_DTYPE_C[::1] default_bin, int missing_bin, int n_threads):
    """Per column of ``X_binned``: rows off its default bin (int64), and
    whether any row is in the missing bin (bool)."""
    cdef Py_ssize_t n = X_binned.shape[0], i
    cdef int f, n_features = X_binned.shape[1]
    if default_bin.shape[0] != n_features:
        raise ValueError(f"default_bin has {default_bin.shape[0]} entries for "
                         f"{n_features} columns.")
    nnz = np.zeros(n_features, dtype=np.int64)
    has_missing = np.zeros(n_features, dtype=np.uint8)
    cdef long long[::1] nnz_view = nnz
    cdef unsigned char[::1] missing_view = has_missing
    cdef long long count
    cdef unsigned char seen
    for f in prange(n_features, nogil=True, schedule="static", num_threads=n_threads):
        count = 0
        seen = 0
        for i in range(n):
            count = count + (X_binned[i, f] != default_bin[f])
            seen = seen | (X_binned[i, f] == missing_bin)
        nnz_view[f] = count
        missing_view[f] = seen
    return nnz, has_missing.astype(bool)


def column_entries(const X_BINNED_DTYPE_C[::1, :] X_binned, int f,
                   X_BINNED_DTYPE_C default_bin, Py_ssize_t n_entries):
    """Rows of column ``f`` off ``default_bin`` (ascending, uint32) and their
    bins; ``n_entries``: their count (:func:`column_stats`)."""
    rows = np.empty(n_entries, dtype=SIZE_DTYPE)
    codes = np.empty(n_entries, dtype=X_BINNED_DTYPE)
    cdef SIZE_C[::1] rows_view = rows
    cdef X_BINNED_DTYPE_C[::1] codes_view = codes
    cdef Py_ssize_t i, k = 0, n = X_binned.shape[0]
    if not 0 <= f < X_binned.shape[1]:
        raise ValueError(f"column {f} out of range.")
    with nogil:
        for i in range(n):
            if X_binned[i, f] != default_bin:
                if k == n_entries:  # one more than promised
                    k += 1
                    break
                rows_view[k] = <SIZE_C>i
                codes_view[k] = X_binned[i, f]
                k += 1
    if k != n_entries:
        raise ValueError(f"column {f} has more or fewer than {n_entries} entries.")
    return rows, codes


cdef inline long long _count_conflicts(const unsigned long long* occupied,
                                       const SIZE_C[::1] rows, long long limit) noexcept nogil:
    # Rows of ``rows`` whose bit is set, counting stopped once above ``limit``.
    cdef Py_ssize_t i
    cdef long long count = 0
    cdef SIZE_C r
    for i in range(rows.shape[0]):
        r = rows[i]
        count += (occupied[r >> 6] >> (r & 63)) & 1
        if count > limit:
            break
    return count


cdef inline void _mark_rows(unsigned long long* occupied, const SIZE_C[::1] rows) noexcept nogil:
    cdef Py_ssize_t i
    cdef SIZE_C r
    for i in range(rows.shape[0]):
        r = rows[i]
        occupied[r >> 6] |= (<unsigned long long>1) << (r & 63)


def first_fit_bundles(entries, const long long[::1] order, const long long[::1] n_codes,
                      Py_ssize_t n_rows, long long budget, long long max_codes, int window):
    """The bundle of each feature of ``order``, joined first-fit.

    Feature ``order[i]`` (its rows off the default bin: ``entries(f)[0]``,
    uint32) joins the first of the last ``window`` bundles opened that has
    room for its ``n_codes`` (at most ``max_codes`` per bundle) and at most
    ``budget`` conflicting rows in all (per bundle), else opens a bundle.
    Returns the bundle index of each position of ``order`` (int64) and the
    total conflicts.
    """
    cdef Py_ssize_t n = order.shape[0], i, words = (n_rows + 63) // 64
    cdef long long b, chosen, c, allowed, n_bundles = 0, f
    if window < 1:
        raise ValueError("window must be at least 1.")
    bits = np.zeros((window, max(words, 1)), dtype=np.uint64)
    used_array = np.zeros(max(n, 1), dtype=np.int64)
    conflicts_array = np.zeros(max(n, 1), dtype=np.int64)
    bundle_of = np.empty(n, dtype=np.int64)
    cdef unsigned long long[:, ::1] occupied = bits
    cdef long long[::1] used = used_array, conflicts = conflicts_array, out = bundle_of
    cdef const SIZE_C[::1] rows
    for i in range(n):
        f = order[i]
        rows = np.ascontiguousarray(entries(f)[0], dtype=SIZE_DTYPE)
        with nogil:
            chosen = -1
            for b in range(max(0, n_bundles - window), n_bundles):
                if used[b] + n_codes[f] > max_codes:
                    continue
                allowed = budget - conflicts[b]
                c = _count_conflicts(&occupied[b % window, 0], rows, allowed)
                if c <= allowed:
                    chosen = b
                    conflicts[b] += c
                    break
            if chosen < 0:  # a new bundle takes the ring slot of one leaving the window
                chosen = n_bundles
                n_bundles += 1
                memset(&occupied[chosen % window, 0], 0, words * sizeof(unsigned long long))
            used[chosen] += n_codes[f]
            _mark_rows(&occupied[chosen % window, 0], rows)
            out[i] = chosen
    return bundle_of, int(np.sum(conflicts_array))
