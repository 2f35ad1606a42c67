"""Kernels: per-node gradient histograms and the subtraction trick.

Each feature's histogram is accumulated by one thread, in row order, so the
result does not depend on the number of threads.
"""
from cython.parallel cimport prange
from libc.math cimport ldexp
from libc.stdint cimport int64_t
from libc.string cimport memset

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct

# Bins below which a subtraction runs on one thread (a 50 x 256 one from cold
# memory takes about 50 us alone).
DEF MIN_PARALLEL_SUBTRACT = 4096


# Rows from which a feature's histogram is summed in LANES interleaved copies,
# added up at the end: in a skewed column consecutive rows often fall in one
# bin, and each add would wait for the previous one's store (measured 2-2.5x
# faster per row; benchmarks/RESULTS.md). The sums are exact on the gradient
# grid, so the order of the adds does not change a bit.
DEF LANES = 4
DEF INTERLEAVE_MIN_ROWS = 512
DEF MAX_BINS = 256
# A narrow column (a flag, a small category) takes the lanes from this many
# rows per used bin: zeroing and adding up 4 lanes costs about as much as a
# few rows, and its rows, few bins, repeat a bin most often (small nodes of
# real tables 2-4% faster, benchmarks/RESULTS.md).
DEF LANE_ROWS_PER_BIN = 4


cdef inline void _add_lanes(
    hist_struct* lanes, hist_struct* hist, int n_bins, int width, bint with_hessians,
) noexcept nogil:
    # hist = the sum of the lanes, on the bins the column uses
    cdef int b, k, i
    cdef hist_struct* lane
    for i in range(width + 1):
        b = i if i < width else n_bins - 1
        hist[b] = lanes[b]
    for k in range(1, LANES):
        lane = lanes + k * MAX_BINS
        for i in range(width + 1):
            b = i if i < width else n_bins - 1
            hist[b].sum_gradients += lane[b].sum_gradients
            if with_hessians:
                hist[b].sum_hessians += lane[b].sum_hessians
            hist[b].count += lane[b].count


cdef inline void _add_row(
    hist_struct* acc, X_BINNED_DTYPE_C b, G_H_DTYPE_C g, G_H_DTYPE_C h,
    bint with_hessians,
) noexcept nogil:
    acc[b].sum_gradients += g
    if with_hessians:
        acc[b].sum_hessians += h
    acc[b].count += 1


cdef void _feature_rows(
    const X_BINNED_DTYPE_C* col, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* og, const G_H_DTYPE_C* oh, bint constant_hessian,
    const G_H_DTYPE_C* h, hist_struct* hist, int n_bins, int width,
) noexcept nogil:
    # og/oh are the node's gradients already gathered in row order; rows NULL:
    # the rows are 0..n-1 (the root), read in place. Only the bins below
    # ``width`` and the missing bin are written (the column's codes).
    cdef SIZE_C i, n_lanes = 0
    cdef int k
    cdef bint with_hessians = not constant_hessian
    cdef hist_struct lanes[LANES * MAX_BINS]
    cdef hist_struct* acc = hist
    if n >= INTERLEAVE_MIN_ROWS or n >= LANE_ROWS_PER_BIN * (width + 1):
        acc = lanes
        for k in range(LANES):
            _zero_used(lanes + k * MAX_BINS, n_bins, width)
        n_lanes = n - n % LANES
    else:
        _zero_used(hist, n_bins, width)
    # lane k takes rows i + k; the rest go to lane 0
    if rows == NULL:
        for i in range(0, n_lanes, LANES):
            for k in range(LANES):
                _add_row(acc + k * MAX_BINS, col[i + k], og[i + k],
                         oh[i + k] if with_hessians else 0, with_hessians)
    else:
        for i in range(0, n_lanes, LANES):
            for k in range(LANES):
                _add_row(acc + k * MAX_BINS, col[rows[i + k]], og[i + k],
                         oh[i + k] if with_hessians else 0, with_hessians)
    for i in range(n_lanes, n):
        _add_row(acc, col[i] if rows == NULL else col[rows[i]], og[i],
                 oh[i] if with_hessians else 0, with_hessians)
    if acc == lanes:
        _add_lanes(lanes, hist, n_bins, width, with_hessians)
    if constant_hessian:
        _fill_constant_hessian(hist, width, h[0])
        _fill_constant_hessian(hist + n_bins - 1, 1, h[0])


cdef const unsigned short* _widths(const unsigned short[::1] column_width,
                                   int n_columns) except? NULL:
    if column_width is None:
        return NULL
    if column_width.shape[0] < n_columns:
        raise ValueError("column_width needs one entry per histogram row.")
    return &column_width[0]


def build_histogram_root(
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    hist_struct[:, ::1] out,
    int n_threads,
    const unsigned short[::1] column_width=None,
):
    """Histograms of all rows, in their natural order.

    ``hessians`` of length 1 means the hessian is that constant for every row.
    With ``column_width``, column ``f`` > 0 only gets its bins below
    ``column_width[f]`` and its missing bin (the others are left as they were).
    """
    cdef int f
    if X_binned.shape[0] == 0:  # no rows: all-zero histograms
        for f in range(X_binned.shape[1]):
            _zero(&out[f, 0], out.shape[1])
        return
    if X_binned.shape[1] == 0:
        return
    cdef const unsigned short* widths = _widths(column_width, X_binned.shape[1])
    with nogil:  # another tree may be growing in another Python thread
        histogram_root(&X_binned[0, 0], X_binned.shape[0], X_binned.shape[1],
                       &gradients[0], &hessians[0], hessians.shape[0] == 1, &out[0, 0],
                       out.shape[1], widths, n_threads)


cdef void histogram_root(
    const X_BINNED_DTYPE_C* X, SIZE_C n, int n_features, const G_H_DTYPE_C* gradients,
    const G_H_DTYPE_C* hessians, bint constant_hessian, hist_struct* out, int n_bins,
    const unsigned short* column_width, int n_threads,
) noexcept nogil:
    # X: n rows x n_features, F-ordered; out: a row of n_bins per feature;
    # column_width: NULL, or the used value bins of each column
    cdef int f
    if <Py_ssize_t>n * n_features < MIN_PARALLEL_WORK or n_threads == 1:
        for f in range(n_features):
            _feature_rows(X + <Py_ssize_t>f * n, NULL, n, gradients, hessians,
                          constant_hessian, hessians, out + f * n_bins, n_bins,
                          _used_width(column_width, f, n_bins))
    else:
        for f in prange(n_features, schedule='static', num_threads=n_threads):
            _feature_rows(X + <Py_ssize_t>f * n, NULL, n, gradients, hessians,
                          constant_hessian, hessians, out + f * n_bins, n_bins,
                          _used_width(column_width, f, n_bins))


def build_histogram(
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    const SIZE_C[::1] rows,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    G_H_DTYPE_C[::1] ordered_gradients,
    G_H_DTYPE_C[::1] ordered_hessians,
    hist_struct[:, ::1] out,
    int n_threads,
    const unsigned short[::1] column_width=None,
):
    """Histograms of the rows ``rows`` (one node).

    Gradients (and hessians unless constant) are first gathered into node
    order in ``ordered_*`` (length >= len(rows)), so the per-feature loops
    read them sequentially. ``column_width``: as in :func:`build_histogram_root`.
    """
    cdef int f
    if rows.shape[0] == 0:  # empty node: all-zero histograms
        for f in range(X_binned.shape[1]):
            _zero(&out[f, 0], out.shape[1])
        return
    cdef const unsigned short* widths = _widths(column_width, X_binned.shape[1])
    with nogil:
        histogram_rows(&X_binned[0, 0], X_binned.shape[0], X_binned.shape[1], &rows[0],
                       rows.shape[0], &gradients[0], &hessians[0],
                       hessians.shape[0] == 1, &ordered_gradients[0],
                       &ordered_hessians[0], &out[0, 0], out.shape[1], widths, n_threads)


cdef void histogram_rows(
    const X_BINNED_DTYPE_C* X, SIZE_C stride, int n_features, const SIZE_C* rows,
    SIZE_C n, const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians,
    bint constant_hessian, G_H_DTYPE_C* ordered_gradients,
    G_H_DTYPE_C* ordered_hessians, hist_struct* out, int n_bins,
    const unsigned short* column_width, int n_threads,
) noexcept nogil:
    # X: ``stride`` rows x n_features, F-ordered; n >= 1 rows
    cdef SIZE_C i
    cdef int f
    if <Py_ssize_t>n * n_features >= MIN_PARALLEL_WORK and n_threads > 1:
        for i in prange(n, schedule='static', num_threads=n_threads):
            ordered_gradients[i] = gradients[rows[i]]
        if not constant_hessian:
            for i in prange(n, schedule='static', num_threads=n_threads):
                ordered_hessians[i] = hessians[rows[i]]
        for f in prange(n_features, schedule='static', num_threads=n_threads):
            _feature_rows(X + <Py_ssize_t>f * stride, rows, n, ordered_gradients,
                          ordered_hessians, constant_hessian, hessians,
                          out + f * n_bins, n_bins, _used_width(column_width, f, n_bins))
    else:
        for i in range(n):
            ordered_gradients[i] = gradients[rows[i]]
        if not constant_hessian:
            for i in range(n):
                ordered_hessians[i] = hessians[rows[i]]
        for f in range(n_features):
            _feature_rows(X + <Py_ssize_t>f * stride, rows, n, ordered_gradients,
                          ordered_hessians, constant_hessian, hessians,
                          out + f * n_bins, n_bins, _used_width(column_width, f, n_bins))


# Rows of the per-thread integer accumulators: a constant stride lets the
# compiler fold the per-feature offsets of a block.
DEF ACC_BINS = 256
# Nodes with fewer than 1/ROW_WISE_RATIO of the rows read the row-major copy
# of the bins: their rows are too far apart for column reads to share cache
# lines (benchmarks/RESULTS.md).
DEF ROW_WISE_RATIO = 6
# Rows ahead whose bins are prefetched by the row-wise kernel.
DEF PREFETCH_DISTANCE = 16
# Row parts of one node (threads) at most.
DEF MAX_PARTS = 256
# Rows whose packed values a part gathers at once for the column-wise
# kernel: 32 KB, read again by every feature pass while still in cache.
DEF GATHER_ROWS = 4096

cdef extern from *:
    void __builtin_prefetch(const void*) noexcept nogil


cdef inline void _packed_rows(
    const X_BINNED_DTYPE_C* X, Py_ssize_t stride, const SIZE_C* rows,
    SIZE_C lo, SIZE_C hi, const int64_t* packed, int n_block, int64_t* acc,
) noexcept nogil:
    # n_block features at once: one load of the row's packed value feeds
    # several independent bins, so consecutive adds rarely wait on each
    # other.
    cdef SIZE_C i, r
    cdef int k
    cdef int64_t v
    # two loops rather than ``rows[i] if rows else i`` per row: the test in
    # the hot loop cost a third of the kernel's time
    if rows == NULL:
        for i in range(lo, hi):
            v = packed[i]
            for k in range(n_block):
                acc[k * ACC_BINS + X[k * stride + i]] += v
    else:
        for i in range(lo, hi):
            r = rows[i]
            v = packed[i]
            for k in range(n_block):
                acc[k * ACC_BINS + X[k * stride + r]] += v


cdef void _packed_part(
    const X_BINNED_DTYPE_C* X, Py_ssize_t stride, int n_features, const SIZE_C* rows,
    SIZE_C lo, SIZE_C hi, const int64_t* packed, int64_t* acc,
) noexcept nogil:
    # All features of rows [lo, hi), in blocks of 8, then 4, then 1 feature.
    cdef int f = 0, step
    cdef Py_ssize_t o
    while f < n_features:
        # literal block sizes, so each call's inner loop unrolls
        o = f * ACC_BINS
        if f + 8 <= n_features:
            step = 8
            _packed_rows(X + f * stride, stride, rows, lo, hi, packed, 8, acc + o)
        elif f + 4 <= n_features:
            step = 4
            _packed_rows(X + f * stride, stride, rows, lo, hi, packed, 4, acc + o)
        else:
            step = 1
            _packed_rows(X + f * stride, stride, rows, lo, hi, packed, 1, acc + o)
        f += step


cdef void _packed_row_wise(
    const X_BINNED_DTYPE_C* X_rows, Py_ssize_t row_stride, int n_features,
    const SIZE_C* rows, SIZE_C lo, SIZE_C hi, const int64_t* packed, int64_t* acc,
) noexcept nogil:
    # One row's bins are adjacent: one cache line feeds every feature (rows
    # padded so that none straddles two lines). ``packed`` is indexed by row
    # (no gather needed).
    cdef SIZE_C i
    cdef int f, k
    cdef int64_t v
    cdef const X_BINNED_DTYPE_C* row
    for i in range(lo, hi):
        if i + PREFETCH_DISTANCE < hi:
            __builtin_prefetch(X_rows + <Py_ssize_t>rows[i + PREFETCH_DISTANCE] * row_stride)
            __builtin_prefetch(packed + rows[i + PREFETCH_DISTANCE])
        row = X_rows + <Py_ssize_t>rows[i] * row_stride
        v = packed[rows[i]]
        f = 0
        while f + 8 <= n_features:  # a literal block the compiler unrolls
            for k in range(8):
                acc[(f + k) * ACC_BINS + row[f + k]] += v
            f += 8
        while f < n_features:
            acc[f * ACC_BINS + row[f]] += v
            f += 1


cdef void _flush(
    int64_t* acc, int64_t* sums, Py_ssize_t n_entries, int h_shift, int g_shift,
) noexcept nogil:
    # Move a block's packed sums into the wide per-lane sums, emptying acc.
    cdef Py_ssize_t j
    for j in range(n_entries):
        if acc[j] != 0:
            decode_packed(acc[j], h_shift, g_shift, sums + 3 * j)
            acc[j] = 0


cdef void _packed_node_part(
    const X_BINNED_DTYPE_C* X, Py_ssize_t stride, int n_features,
    const X_BINNED_DTYPE_C* X_rows, Py_ssize_t row_stride, const SIZE_C* rows,
    SIZE_C lo, SIZE_C hi,
    const int64_t* packed, int h_shift, int g_shift,
    SIZE_C block_rows, int64_t* acc, int64_t* sums, bint* flushed,
) noexcept nogil:
    # Rows [lo, hi) of a node: row-wise when X_rows is given, else column-wise
    # from the node's packed values gathered into row order (root: in place).
    # Blocks of block_rows rows, so that no lane of acc overflows; when a
    # part has more, each block is flushed into ``sums``.
    cdef SIZE_C i, a, b, c, d
    cdef int64_t gathered[GATHER_ROWS]
    cdef Py_ssize_t n_entries = <Py_ssize_t>n_features * ACC_BINS
    memset(acc, 0, n_entries * sizeof(int64_t))
    flushed[0] = hi - lo > block_rows
    if flushed[0]:
        memset(sums, 0, 3 * n_entries * sizeof(int64_t))
    a = lo
    while a < hi:
        b = hi if hi - a <= block_rows else a + block_rows
        if X_rows != NULL:
            _packed_row_wise(X_rows, row_stride, n_features, rows, a, b, packed, acc)
        elif rows == NULL:
            _packed_part(X, stride, n_features, NULL, a, b, packed, acc)
        else:
            # GATHER_ROWS at a time, which every feature pass then reads
            # from cache
            c = a
            while c < b:
                d = b if b - c <= GATHER_ROWS else c + GATHER_ROWS
                for i in range(c, d):
                    gathered[i - c] = packed[rows[i]]
                _packed_part(X, stride, n_features, rows + c, 0, d - c, gathered, acc)
                c = d
        if flushed[0]:
            _flush(acc, sums, n_entries, h_shift, g_shift)
        a = b


cdef inline void _unpack_merged(
    const int64_t* acc, Py_ssize_t part_stride, int n_parts, int b, int h_shift,
    int g_shift, double g_scale, double h_scale, double constant_hessian,
    hist_struct* out,
) noexcept nogil:
    # bin b of a node of at most a block of rows: add the packed parts, decode once
    cdef int t
    cdef int64_t v = acc[b]
    cdef int64_t lanes[3]
    for t in range(1, n_parts):
        v = v + acc[t * part_stride + b]
    lanes[0] = lanes[1] = lanes[2] = 0
    decode_packed(v, h_shift, g_shift, lanes)
    store_packed(lanes, g_scale, h_scale, constant_hessian, &out[b])


cdef inline void _unpack_flushed(
    const int64_t* acc, const int64_t* sums, const bint* flushed,
    Py_ssize_t part_stride, int n_parts, int b, int h_shift, int g_shift,
    double g_scale, double h_scale, double constant_hessian, hist_struct* out,
) noexcept nogil:
    # bin b of a larger node: each part's block sums, or its packed value
    cdef int t, k
    cdef int64_t lanes[3]
    lanes[0] = lanes[1] = lanes[2] = 0
    for t in range(n_parts):
        if flushed[t]:
            for k in range(3):
                lanes[k] += sums[3 * (t * part_stride + b) + k]
        else:
            decode_packed(acc[t * part_stride + b], h_shift, g_shift, lanes)
    store_packed(lanes, g_scale, h_scale, constant_hessian, &out[b])


cdef void _unpack_feature(
    const int64_t* acc, const int64_t* sums, const bint* flushed, bint merge,
    Py_ssize_t part_stride, int n_parts, int n_bins, int width, int h_shift,
    int g_shift, double g_scale, double h_scale, double constant_hessian,
    hist_struct* out,
) noexcept nogil:
    # Sum the threads' integer parts (exact, so in any order) and decode the
    # bins below ``width`` and the missing bin (the only ones a column uses).
    # ``merge``: the node has at most a block of rows, so the packed parts
    # can be added before decoding, once per bin (the common, cheaper case;
    # a loop of its own, as a per-bin test cost 15% of a small node).
    cdef int b
    if merge:
        for b in range(width):
            _unpack_merged(acc, part_stride, n_parts, b, h_shift, g_shift, g_scale,
                           h_scale, constant_hessian, out)
        _unpack_merged(acc, part_stride, n_parts, n_bins - 1, h_shift, g_shift, g_scale,
                       h_scale, constant_hessian, out)
        return
    for b in range(width):
        _unpack_flushed(acc, sums, flushed, part_stride, n_parts, b, h_shift, g_shift,
                        g_scale, h_scale, constant_hessian, out)
    _unpack_flushed(acc, sums, flushed, part_stride, n_parts, n_bins - 1, h_shift,
                    g_shift, g_scale, h_scale, constant_hessian, out)


def build_histogram_packed(
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    const SIZE_C[::1] rows,
    const int64_t[::1] packed,
    int g_exponent,
    int h_exponent,
    int h_shift,
    int g_shift,
    SIZE_C block_rows,
    G_H_DTYPE_C constant_hessian,
    int64_t[:, ::1] acc,
    int64_t[:, ::1] sums,
    hist_struct[:, ::1] out,
    int n_threads,
    const X_BINNED_DTYPE_C[:, ::1] X_rows=None,
    const unsigned short[::1] column_width=None,
):
    """Histograms from packed quantized gradients (``_quantize``).

    Each packed value holds a row's gradient above bit ``g_shift``, its
    hessian in bits ``[h_shift, g_shift)`` and 1 below (a row count); the
    sums of ``block_rows`` rows fit every lane (``packed_lanes``).
    ``rows`` None means every row, in order (the root). ``X_rows``, a
    C-ordered copy of ``X_binned`` whose rows may be padded (shape
    (n_samples, >= n_features), see ``padded_row_major``), is read instead
    for nodes with few rows.
    The result equals ``build_histogram`` on the dequantized gradients bit
    for bit: the integer sums are exact and scaled by powers of two. Rows
    are split between threads, each summing into its own row of ``acc``
    (shape (n_threads, n_features * 256)) and, past ``block_rows`` rows,
    of ``sums`` (three lanes per bin, shape (n_threads, n_features * 768));
    integer sums do not depend on the split. ``constant_hessian`` > 0 means
    every hessian is that constant (the hessian lanes are then 0).
    """
    cdef SIZE_C n = X_binned.shape[0] if rows is None else rows.shape[0]
    cdef int n_features = X_binned.shape[1]
    cdef const SIZE_C* row_ptr = NULL
    cdef const X_BINNED_DTYPE_C* x_rows = NULL
    cdef Py_ssize_t row_stride = 0
    cdef packed_params q
    q.g_exponent, q.h_exponent = g_exponent, h_exponent
    q.h_shift, q.g_shift, q.block_rows = h_shift, g_shift, block_rows
    q.constant_hessian = constant_hessian
    if X_rows is not None and (X_rows.shape[0] != X_binned.shape[0]
                               or X_rows.shape[1] < n_features):
        raise ValueError("X_rows must have the rows of X_binned, each with at least "
                         "n_features columns.")
    if out.shape[0] != n_features:
        raise ValueError("out needs one row per feature.")
    if (acc.shape[1] < n_features * ACC_BINS or sums.shape[1] != 3 * acc.shape[1]
            or sums.shape[0] < acc.shape[0] or out.shape[1] > ACC_BINS):
        raise ValueError("acc needs n_features * 256 columns per thread and sums three "
                         "times as many.")
    if not (0 < h_shift < g_shift < 63) or block_rows < 1:
        raise ValueError("Invalid packed layout.")
    if n_features == 0:
        return
    cdef const unsigned short* widths = _widths(column_width, n_features)
    if rows is not None:
        if n > 0:
            row_ptr = &rows[0]
        if X_rows is not None and X_rows.shape[0] > 0:
            x_rows = &X_rows[0, 0]
            row_stride = X_rows.shape[1]
    with nogil:
        histogram_packed(&X_binned[0, 0], X_binned.shape[0], n_features, x_rows,
                         row_stride, rows is not None, row_ptr, n, &packed[0], &q, &acc[0, 0], &sums[0, 0], acc.shape[1], <int>acc.shape[0],
                         &out[0, 0], out.shape[1], widths, n_threads)


cdef void histogram_packed(
    const X_BINNED_DTYPE_C* X, SIZE_C stride, int n_features,
    const X_BINNED_DTYPE_C* X_rows, Py_ssize_t row_stride, bint has_rows,
    const SIZE_C* rows, SIZE_C n, const int64_t* packed, const packed_params* q,
    int64_t* acc, int64_t* sums, Py_ssize_t part_stride, int max_parts,
    hist_struct* out, int n_bins, const unsigned short* column_width, int n_threads,
) noexcept nogil:
    # X: ``stride`` rows x n_features, F-ordered. Without rows (has_rows
    # false) every row in order; X_rows (NULL: none) for nodes with few rows.
    # column_width: NULL, or the used value bins of each column (only those
    # and the missing bin are written).
    # acc / sums: max_parts rows of part_stride (x3) entries.
    cdef int f, t, n_parts
    cdef double g_scale = ldexp(1.0, -q.g_exponent), h_scale = ldexp(1.0, -q.h_exponent)
    cdef bint flushed[MAX_PARTS]
    if not has_rows:
        rows = NULL
        n = stride
    if rows == NULL or not (<Py_ssize_t>n * ROW_WISE_RATIO < stride):
        X_rows = NULL
    n_parts = min(n_threads, max_parts, MAX_PARTS)
    if <Py_ssize_t>n * n_features < MIN_PARALLEL_WORK or n_parts < 1:
        n_parts = 1
    if n_parts == 1:
        _packed_node_part(X, stride, n_features, X_rows, row_stride, rows, 0, n,
                          packed, q.h_shift, q.g_shift, q.block_rows, acc, sums,
                          &flushed[0])
    else:
        # One region for gather and sums (each part gathers its own rows);
        # a prange over parts computes each even if fewer threads start.
        for t in prange(n_parts, schedule='static', num_threads=n_parts):
            _packed_node_part(X, stride, n_features, X_rows, row_stride, rows,
                              <SIZE_C>(<Py_ssize_t>n * t // n_parts),
                              <SIZE_C>(<Py_ssize_t>n * (t + 1) // n_parts),
                              packed, q.h_shift, q.g_shift, q.block_rows,
                              acc + t * part_stride, sums + 3 * t * part_stride,
                              &flushed[t])
    if n_parts == 1 or n_features < 2:
        for f in range(n_features):
            _unpack_feature(acc + f * ACC_BINS, sums + 3 * f * ACC_BINS, flushed,
                            n <= q.block_rows, part_stride, n_parts, n_bins,
                            _used_width(column_width, f, n_bins), q.h_shift,
                            q.g_shift, g_scale, h_scale, q.constant_hessian,
                            out + f * n_bins)
    else:
        for f in prange(n_features, schedule='static', num_threads=n_parts):
            _unpack_feature(acc + f * ACC_BINS, sums + 3 * f * ACC_BINS, flushed,
                            n <= q.block_rows, part_stride, n_parts, n_bins,
                            _used_width(column_width, f, n_bins), q.h_shift,
                            q.g_shift, g_scale, h_scale, q.constant_hessian,
                            out + f * n_bins)


cdef inline void _subtract_bin(
    const hist_struct* parent, const hist_struct* child, hist_struct* out,
) noexcept nogil:
    out.sum_gradients = parent.sum_gradients - child.sum_gradients
    out.sum_hessians = parent.sum_hessians - child.sum_hessians
    out.count = parent.count - child.count


def subtract_histograms(
    const hist_struct[:, ::1] parent,
    const hist_struct[:, ::1] child,
    hist_struct[:, ::1] out,
    const unsigned short[::1] column_width=None,
    int n_threads=1,
):
    """``out = parent - child``: the sibling's histograms without its rows.

    With ``column_width``, row ``f`` only gets its bins below
    ``column_width[f]`` and its last (missing) bin: the others are unused
    and left as they were. Rows are split between ``n_threads`` threads
    when there are enough bins (each bin is computed alone: the same result).
    """
    cdef int f, n_bins = parent.shape[1], n_rows = parent.shape[0]
    cdef bint narrow = column_width is not None
    if narrow and column_width.shape[0] != n_rows:
        raise ValueError("column_width needs one entry per histogram row.")
    if (child.shape[0] != n_rows or out.shape[0] != n_rows or child.shape[1] != n_bins
            or out.shape[1] != n_bins):
        raise ValueError("parent, child and out must have the same shape.")
    if n_rows == 0 or n_bins == 0:
        return
    with nogil:
        subtract(&parent[0, 0], &child[0, 0], &out[0, 0], n_rows, n_bins,
                 &column_width[0] if narrow else NULL, n_threads)


cdef void subtract(
    const hist_struct* parent, const hist_struct* child, hist_struct* out, int n_rows,
    int n_bins, const unsigned short* column_width, int n_threads,
) noexcept nogil:
    # subtract_histograms on rows of n_bins bins; column_width NULL: all bins
    cdef int f
    if <Py_ssize_t>n_rows * n_bins < MIN_PARALLEL_SUBTRACT or n_threads <= 1:
        for f in range(n_rows):
            _subtract_row(parent + f * n_bins, child + f * n_bins, out + f * n_bins,
                          n_bins, n_bins - 1 if column_width == NULL
                          else min(column_width[f], n_bins - 1))
    else:
        for f in prange(n_rows, schedule='static', num_threads=n_threads):
            _subtract_row(parent + f * n_bins, child + f * n_bins, out + f * n_bins,
                          n_bins, n_bins - 1 if column_width == NULL
                          else min(column_width[f], n_bins - 1))


cdef inline void _subtract_row(
    const hist_struct* parent, const hist_struct* child, hist_struct* out, int n_bins,
    int width,
) noexcept nogil:
    # Bins below width, then the last (missing) bin.
    cdef int b
    for b in range(width):
        _subtract_bin(&parent[b], &child[b], &out[b])
    _subtract_bin(&parent[n_bins - 1], &child[n_bins - 1], &out[n_bins - 1])
