"""Kernel: split a node's rows in place into its left then right child.

The partition is stable (rows keep their relative order on each side). A
stable partition is unique, so the result does not depend on the number of
threads. Each thread partitions a contiguous chunk into a buffer (lefts
forward from the chunk start, rights backward from its end), then chunks are
merged in order.
"""
from cython.parallel cimport prange
from libc.string cimport memset
import numpy as np

from ._csr cimport first_at_least
from ..core._types cimport X_BINNED_DTYPE_C, SIZE_C

# Rows per thread below which one thread partitions alone.
DEF MIN_ROWS_PER_THREAD = 16384
# Chunks (threads) of one partition at most.
DEF MAX_CHUNKS = 256


cdef SIZE_C _partition_chunk(
    SIZE_C* rows, SIZE_C* buf, SIZE_C n, const X_BINNED_DTYPE_C* col,
    const unsigned char* goes_left, bint by_position,
) noexcept nogil:
    # Lefts to buf[0..), rights to buf[n-1] downward. Returns the left count.
    # Branch-free: each row is written at both ends and only the matching
    # counter advances (the left/right test is unpredictable). The code of
    # row i is col[rows[i]], or col[i] when the codes were gathered per node.
    cdef SIZE_C i, n_left = 0, n_right = 0, r, left
    for i in range(n):
        r = rows[i]
        left = goes_left[col[i] if by_position else col[r]]
        buf[n_left] = r
        buf[n - 1 - n_right] = r
        n_left += left
        n_right += 1 - left
    return n_left


cdef void _merge_chunk(
    SIZE_C* dst_left, SIZE_C* dst_right, const SIZE_C* buf, SIZE_C n,
    SIZE_C n_left,
) noexcept nogil:
    # Copy lefts as they are and rights reversed back to their input order.
    cdef SIZE_C i
    for i in range(n_left):
        dst_left[i] = buf[i]
    for i in range(n - n_left):
        dst_right[i] = buf[n - 1 - i]


def partition_rows(
    SIZE_C[::1] rows,
    SIZE_C[::1] buffer,
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    int feature_idx,
    X_BINNED_DTYPE_C bin_threshold,
    X_BINNED_DTYPE_C missing_bin,
    bint missing_go_to_left,
    int n_threads,
):
    """Stable in-place partition of ``rows`` (one node's slice) on a threshold.

    A row goes left when its bin is ``<= bin_threshold``, or when it is
    missing and ``missing_go_to_left``. ``buffer`` has at least
    ``len(rows)`` entries of scratch space.

    Returns
    -------
    n_left : int
        Rows ``rows[:n_left]`` are the left child, the rest the right one.
    """
    goes_left = np.zeros(256, dtype=np.uint8)
    goes_left[:bin_threshold + 1] = 1
    goes_left[missing_bin] = missing_go_to_left
    return partition_rows_by_table(rows, buffer, X_binned, feature_idx, goes_left,
                                   n_threads)


def partition_rows_by_table(
    SIZE_C[::1] rows,
    SIZE_C[::1] buffer,
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    int feature_idx,
    const unsigned char[::1] goes_left,
    int n_threads,
):
    """Stable in-place partition of ``rows`` by a 256-entry bin lookup table.

    A row goes left when ``goes_left[X_binned[row, feature_idx]]`` is 1
    (entries must be 0 or 1). Numeric splits use a threshold table,
    categorical ones their category set with the missing direction at the
    missing bin.

    Returns
    -------
    n_left : int
        Rows ``rows[:n_left]`` are the left child, the rest the right one.
    """
    if goes_left.shape[0] != 256:
        raise ValueError(f"goes_left must have 256 entries, got {goes_left.shape[0]}.")
    if rows.shape[0] == 0:
        return 0
    return _partition(rows, buffer, &X_binned[0, feature_idx], False, goes_left,
                      n_threads)


cdef inline X_BINNED_DTYPE_C _sparse_code(
    const long long* indptr, const unsigned int* columns, const X_BINNED_DTYPE_C* codes,
    SIZE_C row, unsigned int column, X_BINNED_DTYPE_C default_code,
) noexcept nogil:
    # Absent from the row's entries means the default code.
    cdef long long k = first_at_least(columns, indptr[row], indptr[row + 1], column)
    if k < indptr[row + 1] and columns[k] == column:
        return codes[k]
    return default_code


# A sparse-stored column with more entries than this many times the node's
# rows is partitioned by a search per row, else by scattering its entries.
DEF SPARSE_SEARCH_RATIO = 4


def partition_rows_stored(
    SIZE_C[::1] rows,
    SIZE_C[::1] buffer,
    const long long[::1] indptr,
    const unsigned int[::1] columns,
    const X_BINNED_DTYPE_C[::1] codes,
    const long long[::1] column_indptr,
    const SIZE_C[::1] column_rows,
    const X_BINNED_DTYPE_C[::1] column_codes,
    unsigned int column,
    X_BINNED_DTYPE_C default_code,
    const unsigned char[::1] goes_left,
    X_BINNED_DTYPE_C[::1] scratch,
    int n_threads,
):
    """:func:`partition_rows_by_table` on sparse-stored column ``column``.

    The entries are given twice: row-wise (``indptr``, ``columns``,
    ``codes``) and column-wise (``column_indptr``, ``column_rows``,
    ``column_codes``). ``scratch`` has a zero byte per row of the data (it is
    zero again on return). See :func:`partition_stored` for the strategy.
    """
    cdef SIZE_C n = rows.shape[0]
    if goes_left.shape[0] != 256:
        raise ValueError(f"goes_left must have 256 entries, got {goes_left.shape[0]}.")
    if buffer.shape[0] < n or scratch.shape[0] < n:
        raise ValueError("buffer and scratch must hold at least len(rows) entries.")
    if column + 1 >= <unsigned int>column_indptr.shape[0]:
        raise ValueError(f"column {column} is not a sparse-stored column.")
    if n == 0:
        return 0
    with nogil:
        n = partition_stored(&rows[0], &buffer[0], n, &indptr[0], &columns[0], &codes[0],
                             &column_indptr[0], &column_rows[0] if column_rows.shape[0]
                             else NULL, &column_codes[0] if column_codes.shape[0]
                             else NULL, column, default_code, &goes_left[0], &scratch[0],
                             n_threads)
    return n


cdef SIZE_C partition_stored(
    SIZE_C* rows, SIZE_C* buffer, SIZE_C n, const long long* indptr,
    const unsigned int* columns, const X_BINNED_DTYPE_C* codes,
    const long long* column_indptr, const SIZE_C* column_rows,
    const X_BINNED_DTYPE_C* column_codes, unsigned int column,
    X_BINNED_DTYPE_C default_code, const unsigned char* goes_left,
    X_BINNED_DTYPE_C* scratch, int n_threads,
) noexcept nogil:
    """Stable partition of ``rows[:n]`` on a sparse-stored column.

    Few rows against many entries: each row's code is looked up in its
    sorted entries and gathered into ``scratch`` by position. Otherwise the
    column's entries scatter their decision into ``scratch`` by row (0:
    default code, 1: right, 2: left), which is zeroed again afterwards.
    Both give the one stable partition.
    """
    cdef long long start = column_indptr[column], stop = column_indptr[column + 1], k
    cdef SIZE_C i, n_left
    cdef unsigned char table[256]
    if stop - start > SPARSE_SEARCH_RATIO * <long long>n:
        for i in range(n):
            scratch[i] = _sparse_code(indptr, columns, codes, rows[i], column,
                                      default_code)
        n_left = partition(rows, buffer, n, scratch, True, goes_left, n_threads)
        memset(scratch, 0, n)
        return n_left
    for k in range(start, stop):
        scratch[column_rows[k]] = 1 + goes_left[column_codes[k]]
    memset(table, 0, 256)
    table[0] = goes_left[default_code]
    table[2] = 1
    n_left = partition(rows, buffer, n, scratch, False, table, n_threads)
    for k in range(start, stop):
        scratch[column_rows[k]] = 0
    return n_left


cdef SIZE_C _partition(
    SIZE_C[::1] rows, SIZE_C[::1] buffer, const X_BINNED_DTYPE_C* col, bint by_position,
    const unsigned char[::1] goes_left, int n_threads,
) except? 0:
    cdef SIZE_C n = rows.shape[0], n_left
    if buffer.shape[0] < n:
        raise ValueError("buffer is shorter than rows.")
    with nogil:
        n_left = partition(&rows[0], &buffer[0], n, col, by_position, &goes_left[0],
                           n_threads)
    return n_left


cdef SIZE_C partition(
    SIZE_C* rows, SIZE_C* buffer, SIZE_C n, const X_BINNED_DTYPE_C* col,
    bint by_position, const unsigned char* goes_left, int n_threads,
) noexcept nogil:
    """Stable partition of ``rows[:n]`` by ``goes_left[code]``; returns the
    left count. The code of row i is ``col[rows[i]]``, or ``col[i]`` when
    ``by_position`` (codes gathered per node)."""
    cdef int n_chunks = n_threads if n_threads > 0 else 1
    cdef int t, i
    cdef SIZE_C chunk, start, size, n_left = 0, left_pos, right_pos
    cdef SIZE_C counts[MAX_CHUNKS]
    if n < <SIZE_C>MIN_ROWS_PER_THREAD * 2:
        n_chunks = 1
    elif n // MIN_ROWS_PER_THREAD < <SIZE_C>n_chunks:
        n_chunks = n // MIN_ROWS_PER_THREAD
    n_chunks = min(n_chunks, MAX_CHUNKS)
    if n_chunks == 1:
        n_left = _partition_chunk(rows, buffer, n, col, goes_left, by_position)
        _merge_chunk(rows, rows + n_left, buffer, n, n_left)
        return n_left

    chunk = (n + n_chunks - 1) // n_chunks
    for t in prange(n_chunks, schedule='static', num_threads=n_chunks):
        start = t * chunk
        size = min(chunk, n - start)
        counts[t] = _partition_chunk(rows + start, buffer + start, size,
                                     col + start if by_position else col,
                                     goes_left, by_position)
    for t in range(n_chunks):
        n_left = n_left + counts[t]
    for t in prange(n_chunks, schedule='static', num_threads=n_chunks):
        start = t * chunk
        size = min(chunk, n - start)
        # Where this chunk's lefts and rights land: after the earlier
        # chunks' lefts, and after all lefts plus earlier rights.
        left_pos = 0
        for i in range(t):
            left_pos = left_pos + counts[i]
        right_pos = n_left + t * chunk - left_pos
        _merge_chunk(rows + left_pos, rows + right_pos, buffer + start, size, counts[t])
    return n_left
