"""Kernels: histograms of the sparse-stored columns (a row-wise CSR of the
entries off each column's default code; its default bin by subtraction).

On the gradient grid every sum is exact, so the result does not depend on
how the rows or columns are split between threads.
"""
from cython.parallel cimport prange
from libc.stdlib cimport calloc, free, malloc

from ._csr cimport first_at_least
from ._histogram cimport (MIN_PARALLEL_WORK, _fill_constant_hessian, _used_width, _zero,
                          _zero_used)
from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct


# A node's sparse histograms are split by rows (private histograms added up
# after) rather than by columns (every thread reads every row's entries) once
# it has this many rows per private bin to fill and add: a row costs each
# thread of a column split about what two added bins do.
DEF ROWS_PER_PRIVATE_BIN = 2
# Private bins of all threads at most (24 MB): beyond, the column split.
DEF MAX_PRIVATE_BINS = 1048576


cdef bint _sparse_row_chunks(
    const long long* indptr, const unsigned int* columns,
    const X_BINNED_DTYPE_C* codes, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant_hessian,
    const unsigned short* column_width, const Py_ssize_t* offset, hist_struct* out,
    int n_cols, int n_bins, int n_threads,
) noexcept nogil:
    # Thread t sums the entries of its share of the rows into a private, packed
    # histogram set (column c at offset[c]: its value bins, then its missing
    # bin); the sets are then added into out's bins. Every sum is on the
    # gradient grid, so the result is that of one thread. False: out of memory.
    cdef int t, c, j, width
    cdef SIZE_C i, r, chunk = (n + n_threads - 1) // n_threads
    cdef long long k
    cdef Py_ssize_t n_private = offset[n_cols]
    cdef hist_struct* private
    cdef hist_struct* acc
    cdef hist_struct* b
    cdef const hist_struct* src
    private = <hist_struct*>calloc(n_threads * n_private, sizeof(hist_struct))
    if private == NULL:
        return False
    for t in prange(n_threads, schedule='static', num_threads=n_threads):
        acc = private + t * n_private
        for i in range(t * chunk, min(n, (t + 1) * chunk)):
            r = rows[i]
            for k in range(indptr[r], indptr[r + 1]):
                c = columns[k]
                # codes below the width, or the missing bin: packed at width
                # (the column's run of private bins holds width + 1)
                b = &acc[offset[c] + min(<Py_ssize_t>codes[k], offset[c + 1] - offset[c] - 1)]
                b.sum_gradients = b.sum_gradients + g[r]
                if not constant_hessian:
                    b.sum_hessians = b.sum_hessians + h[r]
                b.count = b.count + 1
    for c in prange(n_cols, schedule='static', num_threads=n_threads):
        width = _used_width(column_width, c, n_bins)
        for j in range(width + 1):
            b = &out[<Py_ssize_t>c * n_bins + (j if j < width else n_bins - 1)]
            for t in range(n_threads):
                src = &private[t * n_private + offset[c] + j]
                b.sum_gradients = b.sum_gradients + src.sum_gradients
                b.sum_hessians = b.sum_hessians + src.sum_hessians
                b.count = b.count + src.count
    free(private)
    return True


cdef void _sparse_columns(
    const long long* indptr, const unsigned int* columns,
    const X_BINNED_DTYPE_C* codes, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant_hessian,
    unsigned int col_lo, unsigned int col_hi, hist_struct* out, int n_bins,
) noexcept nogil:
    # Entries of columns [col_lo, col_hi) of the node's rows, in row order.
    cdef SIZE_C i, r
    cdef long long k, end
    cdef hist_struct* b
    for i in range(n):
        r = rows[i]
        k = indptr[r]
        end = indptr[r + 1]
        if col_lo > 0:
            k = first_at_least(columns, k, end, col_lo)
        while k < end and columns[k] < col_hi:
            b = &out[<Py_ssize_t>columns[k] * n_bins + codes[k]]
            b.sum_gradients += g[r]
            if not constant_hessian:
                b.sum_hessians += h[r]
            b.count += 1
            k += 1


def build_histogram_sparse(
    const long long[::1] indptr,
    const unsigned int[::1] columns,
    const X_BINNED_DTYPE_C[::1] codes,
    const SIZE_C[::1] rows,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    const X_BINNED_DTYPE_C[::1] default_codes,
    const unsigned short[::1] column_width,
    const unsigned int[::1] column_bounds,
    hist_struct[:, ::1] out,
    int n_threads,
):
    """Histograms of sparse-stored columns for the rows ``rows`` (one node).

    The columns are a row-wise CSR (``indptr``, ``columns``, ``codes``) of
    the entries whose code is not the column's ``default_codes`` entry. Only
    those entries are visited; each default bin is the node total minus the
    column's other bins (exact, as every sum is on the gradient grid). Two or
    more threads split a node with many rows per bin by rows (each into
    private histograms, added up after); else thread ``t`` fills columns
    ``column_bounds[t]:column_bounds[t + 1]`` (ranges of balanced entry
    counts). On the grid, the sums do not depend on the split. Column ``c`` only has
    codes below ``column_width[c]`` and the last bin (missing), so only those
    are summed for its default bin.
    """
    cdef int n_cols = out.shape[0], n_chunks = column_bounds.shape[0] - 1
    if (default_codes.shape[0] != n_cols or column_width.shape[0] != n_cols
            or column_bounds[n_chunks] != <unsigned int>n_cols):
        raise ValueError("default_codes, column_width and column_bounds must cover "
                         "every column.")
    with nogil:
        histogram_sparse(&indptr[0], &columns[0], &codes[0],
                         &rows[0] if rows.shape[0] else NULL, rows.shape[0],
                         &gradients[0], &hessians[0], hessians.shape[0] == 1,
                         &default_codes[0], &column_width[0], &column_bounds[0], n_chunks,
                         &out[0, 0], n_cols, out.shape[1], n_threads)


cdef void histogram_sparse(
    const long long* indptr, const unsigned int* columns,
    const X_BINNED_DTYPE_C* codes, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians, bint constant_hessian,
    const X_BINNED_DTYPE_C* default_codes, const unsigned short* column_width,
    const unsigned int* column_bounds, int n_chunks, hist_struct* out, int n_cols,
    int n_bins, int n_threads,
) noexcept nogil:
    # build_histogram_sparse on n_cols histogram rows of n_bins bins.
    cdef SIZE_C i
    cdef int c, b, t, width
    cdef double g_total = 0.0, h_total = 0.0, g_rest, h_rest
    cdef unsigned int n_rest
    cdef Py_ssize_t* offset
    cdef bint parallel, by_rows = False
    cdef hist_struct* d
    cdef hist_struct* row
    # Only the bins a column uses are read later (the first column's all:
    # the grower reads node totals there).
    _zero(out, n_bins)
    for c in range(1, n_cols):
        _zero_used(out + c * n_bins, n_bins, min(column_width[c], n_bins - 1))
    for i in range(n):
        g_total += gradients[rows[i]]
        if not constant_hessian:
            h_total += hessians[rows[i]]
    parallel = <Py_ssize_t>n * 8 >= MIN_PARALLEL_WORK and n_threads > 1
    if parallel:
        # by rows where a node has enough of them per private bin to fill and
        # add, and the threads' private bins (offset: each column's value bins
        # and missing bin) stay small; else by columns
        offset = <Py_ssize_t*>malloc((n_cols + 1) * sizeof(Py_ssize_t))
        if offset != NULL:
            offset[0] = 0
            for c in range(n_cols):
                offset[c + 1] = offset[c] + _used_width(column_width, c, n_bins) + 1
            by_rows = (n >= ROWS_PER_PRIVATE_BIN * offset[n_cols]
                       and offset[n_cols] * n_threads <= MAX_PRIVATE_BINS
                       and _sparse_row_chunks(indptr, columns, codes, rows, n, gradients,
                                              hessians, constant_hessian, column_width,
                                              offset, out, n_cols, n_bins, n_threads))
            free(offset)
        if not by_rows and n_chunks > 1:
            for t in prange(n_chunks, schedule='static', num_threads=n_threads):
                _sparse_columns(indptr, columns, codes, rows, n, gradients, hessians,
                                constant_hessian, column_bounds[t], column_bounds[t + 1],
                                out, n_bins)
        elif not by_rows:
            parallel = False
    if not parallel:
        _sparse_columns(indptr, columns, codes, rows, n, gradients, hessians,
                        constant_hessian, 0, n_cols, out, n_bins)
    for c in range(n_cols):
        row = out + c * n_bins
        g_rest = g_total - row[n_bins - 1].sum_gradients
        h_rest = h_total - row[n_bins - 1].sum_hessians
        n_rest = n - row[n_bins - 1].count
        width = min(column_width[c], n_bins - 1)
        for b in range(width):
            g_rest = g_rest - row[b].sum_gradients
            h_rest = h_rest - row[b].sum_hessians
            n_rest = n_rest - row[b].count
        d = &row[default_codes[c]]
        d.sum_gradients = d.sum_gradients + g_rest
        d.sum_hessians = d.sum_hessians + h_rest
        d.count = d.count + n_rest
        if constant_hessian:
            _fill_constant_hessian(row, n_bins if c == 0 else width, hessians[0])
            _fill_constant_hessian(row + n_bins - 1, 1, hessians[0])
