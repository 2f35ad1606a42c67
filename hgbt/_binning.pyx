"""Kernel: map raw feature values to uint8 bin codes."""
from cython cimport floating
from cython.parallel cimport prange

from ._types cimport X_DTYPE_C, X_BINNED_DTYPE_C, BITSET_WORD_C

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


def map_to_bins(
    const floating[:, :] X,
    const X_DTYPE_C[:, ::1] thresholds,
    const int[::1] n_thresholds,
    X_BINNED_DTYPE_C missing_bin,
    X_BINNED_DTYPE_C[::1, :] binned,
    int n_threads,
):
    """Bin every value of ``X`` into the Fortran-ordered ``binned``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    thresholds : ndarray of shape (n_features, max_bins - 1)
        Row ``f`` holds the sorted thresholds of feature ``f`` in its first
        ``n_thresholds[f]`` entries.
    n_thresholds : ndarray of shape (n_features,), int32
    missing_bin : int
        Code given to NaN.
    binned : ndarray of shape (n_samples, n_features), uint8, F-ordered
        Output.
    n_threads : int
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, f, start, stop
    for block in prange(n_blocks, nogil=True, schedule='static',
                        num_threads=n_threads):
        start = block * ROW_BLOCK
        stop = min(start + ROW_BLOCK, n_samples)
        for f in range(n_features):
            for i in range(start, stop):
                binned[i, f] = _find_bin(
                    X[i, f], &thresholds[f, 0], n_thresholds[f], missing_bin)


def map_categories_to_bins(
    const floating[:, :] X,
    const Py_ssize_t[::1] features,
    const BITSET_WORD_C[:, ::1] known,
    X_BINNED_DTYPE_C missing_bin,
    X_BINNED_DTYPE_C[::1, :] binned,
    int n_threads,
):
    """Bin categorical columns: a known code is its own bin, the rest missing.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    features : ndarray of intp
        The categorical columns to bin.
    known : ndarray of shape (len(features), 8), uint32
        Per listed feature, the bitset of the codes known at fit time.
    missing_bin : int
        Code given to NaN and to any value that is not a known code
        (negative, non-integer, 256 or more, or unseen at fit time).
    binned : ndarray of shape (n_samples, n_features), uint8, F-ordered
        Output; only the listed columns are written.
    n_threads : int
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_cat = features.shape[0]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, k, f, start, stop
    cdef double x
    cdef unsigned int code
    for block in prange(n_blocks, nogil=True, schedule='static',
                        num_threads=n_threads):
        start = block * ROW_BLOCK
        stop = min(start + ROW_BLOCK, n_samples)
        for k in range(n_cat):
            f = features[k]
            for i in range(start, stop):
                x = X[i, f]
                binned[i, f] = missing_bin
                if x >= 0.0 and x < 256.0:
                    code = <unsigned int> x
                    if <double> code == x and (known[k, code >> 5] >> (code & 31)) & 1:
                        binned[i, f] = <X_BINNED_DTYPE_C> code
