"""Kernels: bin thresholds of sorted columns, and raw feature values mapped
to uint8 bin codes."""
from cython cimport floating
from cython.parallel cimport prange

import numpy as np

from ..core._types cimport X_DTYPE_C, X_BINNED_DTYPE_C, BITSET_WORD_C

# Rows per parallel block: a block of a row-major X stays in cache while
# every feature of it is binned.
DEF ROW_BLOCK = 4096


cdef inline X_BINNED_DTYPE_C _find_bin(
    double x, const X_DTYPE_C* thresholds, int n_thresholds,
    X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    # Bin = number of thresholds strictly below x, so x <= thresholds[b]
    # exactly when x falls in bins 0..b. Branch-free binary search (the
    # compiler emits conditional moves): mispredictions dominated otherwise.
    cdef const X_DTYPE_C* base = thresholds
    cdef int n = n_thresholds, half
    if x != x:  # NaN
        return missing_bin
    if n == 0:
        return 0
    while n > 1:
        half = n >> 1
        base = base + half if base[half] < x else base
        n -= half
    return <X_BINNED_DTYPE_C>((base - thresholds) + (base[0] < x))


# Values searched together by _find_bins: one search is a chain of
# dependent loads, so several chains keep the core busy.
DEF LANES = 8


cdef void _find_bins(
    const floating* X, Py_ssize_t stride, Py_ssize_t n, const X_DTYPE_C* thresholds,
    int n_thresholds, X_BINNED_DTYPE_C missing_bin, X_BINNED_DTYPE_C* out,
) noexcept nogil:
    # _find_bin of X[i * stride] into out[i], LANES values in lockstep (every
    # value of a feature takes the same halving steps); the same codes.
    cdef Py_ssize_t i = 0, k
    cdef int m, half
    cdef Py_ssize_t pos[LANES]
    cdef double x[LANES]
    if n_thresholds == 0:
        for i in range(n):
            out[i] = missing_bin if X[i * stride] != X[i * stride] else 0
        return
    while i + LANES <= n:
        for k in range(LANES):
            x[k] = X[(i + k) * stride]
            pos[k] = 0
        m = n_thresholds
        while m > 1:
            half = m >> 1
            for k in range(LANES):
                pos[k] = pos[k] + half if thresholds[pos[k] + half] < x[k] else pos[k]
            m -= half
        for k in range(LANES):
            out[i + k] = (missing_bin if x[k] != x[k] else
                          <X_BINNED_DTYPE_C>(pos[k] + (thresholds[pos[k]] < x[k])))
        i += LANES
    for k in range(i, n):
        out[k] = _find_bin(X[k * stride], thresholds, n_thresholds, missing_bin)


cdef inline X_BINNED_DTYPE_C _category_bin(
    double x, const BITSET_WORD_C* known, X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    # A known code is its own bin; NaN, negative, non-integer, >= 256 and
    # unseen codes are missing.
    cdef unsigned int code
    if x >= 0.0 and x < 256.0:
        code = <unsigned int> x
        if <double> code == x and (known[code >> 5] >> (code & 31)) & 1:
            return <X_BINNED_DTYPE_C> code
    return missing_bin


def category_counts(const floating[:] column, int n_codes):
    """Rows per code ``0 .. n_codes - 1`` of a categorical column, NaN skipped.

    Returns ``(counts, first_bad)``: ``counts`` an intp array of length
    ``n_codes``, ``first_bad`` the index of the first value that is no such
    code (negative, non-integer, too large or infinite), -1 if none. Counting
    stops there. One pass over a strided column, no copy.
    """
    cdef Py_ssize_t i, n = column.shape[0], first_bad = -1
    counts = np.zeros(n_codes, dtype=np.intp)
    cdef Py_ssize_t[::1] c = counts
    cdef double x
    cdef unsigned int code
    with nogil:
        for i in range(n):
            x = column[i]
            if x != x:
                continue
            if x >= 0.0 and x < n_codes:
                code = <unsigned int> x
                if <double> code == x:
                    c[code] += 1
                    continue
            first_bad = i
            break
    return counts, first_bad


def map_to_bins(
    const floating[:, :] X,
    const X_DTYPE_C[:, ::1] thresholds,
    const int[::1] n_thresholds,
    X_BINNED_DTYPE_C missing_bin,
    X_BINNED_DTYPE_C[::1, :] binned,
    int n_threads,
    const unsigned char[::1] is_categorical=None,
    const BITSET_WORD_C[:, ::1] known=None,
):
    """Bin every value of ``X`` into the Fortran-ordered ``binned``, in one pass.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    thresholds : ndarray of shape (n_features, max_bins - 1)
        Row ``f`` holds the sorted thresholds of feature ``f`` in its first
        ``n_thresholds[f]`` entries.
    n_thresholds : ndarray of shape (n_features,), int32
    missing_bin : int
        Code given to NaN (and to unknown category codes).
    binned : ndarray of shape (n_samples, n_features), uint8, F-ordered
        Output.
    n_threads : int
    is_categorical : ndarray of shape (n_features,), uint8, or None
        Categorical features: a code is its own bin when its bit is set in
        ``known``, otherwise (negative, non-integer, 256 or more, unseen)
        it is missing.
    known : ndarray of shape (n_features, 8), uint32, or None
        Per feature, the bitset of the category codes known at fit time.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, f, start, stop
    cdef bint any_categorical = is_categorical is not None
    if any_categorical and (is_categorical.shape[0] != n_features or known is None
                            or known.shape[0] != n_features or known.shape[1] != 8):
        raise ValueError("is_categorical needs one entry per feature and known a "
                         "(n_features, 8) bitset array.")
    for block in prange(n_blocks, nogil=True, schedule='static',
                        num_threads=n_threads):
        start = block * ROW_BLOCK
        stop = min(start + ROW_BLOCK, n_samples)
        for f in range(n_features):
            if any_categorical and is_categorical[f]:
                for i in range(start, stop):
                    binned[i, f] = _category_bin(X[i, f], &known[f, 0], missing_bin)
            else:
                _find_bins(&X[start, f], X.strides[0] // sizeof(floating), stop - start,
                           &thresholds[f, 0], n_thresholds[f], missing_bin,
                           &binned[start, f])


ctypedef fused index_t:
    int
    long long


def map_csc_to_bins(
    const floating[::1] data,
    const index_t[::1] indptr,
    const X_DTYPE_C[:, ::1] thresholds,
    const int[::1] n_thresholds,
    X_BINNED_DTYPE_C missing_bin,
    X_BINNED_DTYPE_C[::1] binned,
    int n_threads,
    const unsigned char[::1] is_categorical=None,
    const BITSET_WORD_C[:, ::1] known=None,
):
    """Bin the stored entries of a CSC matrix (``data``, ``indptr``) into ``binned``.

    Same codes as :func:`map_to_bins` gives the same values; implicit zeros
    are not visited (their bin is the bin of 0.0). Columns are processed in
    parallel.
    """
    cdef Py_ssize_t n_features = indptr.shape[0] - 1, f, k
    cdef bint any_categorical = is_categorical is not None
    if thresholds.shape[0] != n_features or n_thresholds.shape[0] != n_features:
        raise ValueError("thresholds and n_thresholds need one row per column.")
    if binned.shape[0] != data.shape[0]:
        raise ValueError("binned must have one entry per stored value.")
    if any_categorical and (is_categorical.shape[0] != n_features or known is None
                            or known.shape[0] != n_features):
        raise ValueError("is_categorical needs one entry per feature and known a "
                         "(n_features, 8) bitset array.")
    for f in prange(n_features, nogil=True, schedule='dynamic', num_threads=n_threads):
        if any_categorical and is_categorical[f]:
            for k in range(indptr[f], indptr[f + 1]):
                binned[k] = _category_bin(data[k], &known[f, 0], missing_bin)
        else:
            for k in range(indptr[f], indptr[f + 1]):
                binned[k] = _find_bin(data[k], &thresholds[f, 0], n_thresholds[f],
                                      missing_bin)


cdef extern from "<math.h>" nogil:
    float nextafterf(float x, float y)
    const float INFINITY
    const double HUGE_VAL


cdef inline double _separator(double a, double b) noexcept nogil:
    # The threshold between a < b (thresholds._separators' rule, bit for bit):
    # among the float32 numbers t with a <= t < b and t < float32(b), the
    # least at or above their midpoint (else the largest; the least next to
    # an infinite value), so that float32(x) <= t exactly when x <= t for
    # every x <= a or >= b (ONNX casts its input to float32); where no
    # float32 number lies there, their float64 midpoint, or a where that is
    # not strictly below b (±inf, adjacent floats).
    cdef double mid = a * 0.5 + b * 0.5, high
    cdef float lo = <float>a, hi, t
    if lo < a:
        lo = nextafterf(lo, INFINITY)
    high = <float>b
    if b < high:
        high = b
    hi = <float>high
    if hi >= high:
        hi = nextafterf(hi, -INFINITY)
    if lo >= a and hi < high and lo <= hi:
        # an infinite gap (a or b infinite): the least threshold, as before
        if -HUGE_VAL < mid < HUGE_VAL:
            t = <float>mid
            if t < mid:
                t = nextafterf(t, INFINITY)
        else:
            t = lo
        if t < lo:
            t = lo
        if t > hi:
            t = hi
        return t
    if not (a <= mid and mid < b):
        return a
    return mid


cdef inline Py_ssize_t _run_end(const floating* v, Py_ssize_t i, Py_ssize_t m) noexcept nogil:
    # The end of the run of values equal to v[i] (the next index holding another).
    cdef Py_ssize_t j = i + 1
    while j < m and v[j] == v[i]:
        j += 1
    return j


cdef inline double _run_weight(const double* w, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    # The weight of rows i .. j - 1, summed in order (NULL: their count).
    cdef double total = 0.0
    cdef Py_ssize_t k
    if w == NULL:
        return <double>(j - i)
    for k in range(i, j):
        total += w[k]
    return total


cdef int _greedy_cuts(const floating* v, const double* w, Py_ssize_t m, int max_bins,
                      X_DTYPE_C* out, bint nearest) noexcept nogil:
    # Thresholds of the m sorted, NaN-free values v with positive row
    # weights w (NULL: each row counts 1), which hold more than max_bins
    # distinct values; returns their number (< max_bins). One scan over the
    # runs of equal values: a cut around every value that holds at least
    # W / max_bins (alone in its bin, where quantiles would spend several
    # bins on it and merge its neighbours), and wherever the weight since
    # the last cut reaches the weight left over the bins left, so the bins
    # that ties leave unused go to the rest (a heavy tail keeps its bins).
    # Sums run in row order; integer weights are exact. With nearest, a bin
    # that the current run would overfill ends before it when that is
    # nearer its share: for summaries whose entries each stand for many rows
    # (a quantile sketch), where ending after it adds most of an entry to
    # every bin and pushes the cuts up by bins' widths mid-column.
    cdef Py_ssize_t start = 0, end, following
    cdef double total = _run_weight(w, 0, m), left, acc = 0.0, weight, next_weight
    cdef int bins_left = max_bins, n_out = 0
    left = total
    end = _run_end(v, 0, m)
    weight = _run_weight(w, 0, end)
    while end < m:
        following = _run_end(v, end, m)
        next_weight = _run_weight(w, end, following)
        acc += weight
        if (nearest and start > 0 and acc > weight and acc * bins_left >= left
                and max_bins * weight < total and max_bins * next_weight < total
                and (2 * acc - weight) * bins_left > 2 * left):
            out[n_out] = _separator(v[start - 1], v[start])  # before this run
            n_out += 1
            left -= acc - weight
            acc = weight
            bins_left -= 1
            if bins_left <= 1:
                break
        if (max_bins * weight >= total or max_bins * next_weight >= total
                or acc * bins_left >= left):
            out[n_out] = _separator(v[start], v[end])
            n_out += 1
            left -= acc
            acc = 0.0
            bins_left -= 1
            if bins_left <= 1:
                break
        start, end, weight = end, following, next_weight
    return n_out


cdef int _column_thresholds(const floating* v, const double* w, Py_ssize_t n,
                            int max_bins, X_DTYPE_C* out, bint nearest=False) noexcept nogil:
    # Thresholds of the sorted column v (NaN last) with positive row weights
    # w (NULL: each row counts 1); returns their number (at most
    # max_bins - 1) written to out. At most max_bins distinct values: the
    # separators between them (each value the first of its run); more:
    # _greedy_cuts.
    cdef Py_ssize_t m = n, i, n_distinct = 1
    cdef int n_out = 0
    cdef double a
    while m > 0 and v[m - 1] != v[m - 1]:
        m -= 1
    if m == 0:
        return 0
    for i in range(1, m):
        if v[i] != v[i - 1]:
            n_distinct += 1
            if n_distinct > max_bins:
                return _greedy_cuts(v, w, m, max_bins, out, nearest)
    if n_distinct <= 1:
        return 0
    a = v[0]
    for i in range(1, m):
        if v[i] != v[i - 1]:
            out[n_out] = _separator(a, v[i])
            n_out += 1
            a = v[i]
    return n_out


def sorted_thresholds(const double[::1] values, const double[::1] weight, int max_bins,
                      bint nearest=False):
    """Thresholds of one sorted, NaN-free column with positive row weights
    (None: unweighted), by the dense kernel's rule (see
    ``thresholds.find_thresholds``): the weighted and sparse paths. Weights
    are summed in the given order (a value's, and all of them).

    ``nearest``: a bin ends before a value that would overfill it when that
    is nearer its share (the rule for a quantile sketch's entries; see
    ``_greedy_cuts``).

    Returns
    -------
    thresholds : ndarray of float64, strictly increasing, at most ``max_bins - 1``
    """
    cdef Py_ssize_t n = values.shape[0]
    if weight is not None and weight.shape[0] != n:
        raise ValueError("values and weight must have the same length.")
    if max_bins < 2:
        raise ValueError(f"max_bins must be at least 2, got {max_bins}.")
    out = np.empty(max_bins - 1, dtype=np.float64)
    if n == 0:
        return out[:0]
    cdef X_DTYPE_C[::1] o = out
    cdef const double* w = NULL if weight is None else &weight[0]
    cdef int n_out
    with nogil:
        n_out = _column_thresholds(&values[0], w, n, max_bins, &o[0], nearest)
    return out[:n_out]


def sorted_column_thresholds(
    const floating[::1, :] columns,
    int max_bins,
    X_DTYPE_C[:, ::1] out,
    int[::1] n_out,
    int n_threads,
):
    """Bin thresholds of every column of ``columns``, each sorted ascending
    with its NaN last (``numpy.sort`` along axis 0).

    The rule of :func:`sorted_thresholds` without weights, on each column.

    Parameters
    ----------
    columns : ndarray of shape (n_samples, n_columns), float32 or float64, F-ordered
    max_bins : int
    out : ndarray of shape (n_columns, max_bins - 1), float64
        Row ``f`` receives the thresholds of column ``f`` in its first
        ``n_out[f]`` entries.
    n_out : ndarray of shape (n_columns,), int32
    n_threads : int
    """
    cdef Py_ssize_t n = columns.shape[0], n_columns = columns.shape[1], f
    if out.shape[0] != n_columns or out.shape[1] < max_bins - 1 or n_out.shape[0] != n_columns:
        raise ValueError("out needs a row of max_bins - 1 entries per column and n_out "
                         "one entry per column.")
    if max_bins < 2:
        raise ValueError(f"max_bins must be at least 2, got {max_bins}.")
    if n == 0:
        n_out[:] = 0
        return
    for f in prange(n_columns, nogil=True, schedule='dynamic', num_threads=n_threads):
        n_out[f] = _column_thresholds(&columns[0, f], NULL, n, max_bins, &out[f, 0])
