"""Kernels: row-wise multi-value bins, the histogram engine that splits a node
by rows.

The column-wise kernels (``_histogram``) give each thread whole columns: few
columns or small nodes leave threads idle, and every row of a node is read
in every column. Here each row keeps only its entries off each column's most
frequent code (its *mode*), packed as slots of one run of all columns' bins
(uint16 when they number at most 65,536, else uint32); a node's rows are
split into one part per thread, each summed into private histograms, which
are then added column by column into the node's histograms. A mode bin is
the node's totals minus its column's other bins. The gradients lie on the
exact-sum grid, so every sum is exact: the histograms, and the model, are
bit for bit those of the column-wise kernels for any split into parts.
"""
from cython.parallel cimport prange
from libc.math cimport ldexp
from libc.stdint cimport int64_t
from libc.string cimport memset

import numpy as np

from ._histogram cimport (_fill_constant_hessian, _used_width, decode_packed,
                          packed_params, store_packed)
from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct

ctypedef fused slot_t:
    unsigned short
    unsigned int

cdef extern from *:
    void __builtin_prefetch(const void*) noexcept nogil

# Rows ahead whose entries are prefetched (a node's rows are scattered).
DEF PREFETCH_DISTANCE = 16
# A node is split into parts only with at least this many entries per part,
# and this many entries per private slot each part must zero and add:
# below, one thread sums it (a parallel region costs about 1 us, and the
# parts' private slots are zeroed and added up whatever the node's size).
DEF MIN_PART_ENTRIES = 8192
DEF MIN_ENTRIES_PER_SLOT = 2
# Slots of all parts from which the columns are unpacked by several threads.
DEF MIN_PARALLEL_UNPACK = 8192
# Rows per task of the builder.
DEF BUILD_BLOCK = 4096
MAX_SLOTS16 = 65536


def slot_offsets(const unsigned short[::1] column_width, int n_bins):
    """Each column's first slot (int64, ``n_columns + 1``): its used value
    bins (as the kernels read them, the first column's all) and its missing bin."""
    cdef int c, n_columns = column_width.shape[0]
    offset = np.zeros(n_columns + 1, dtype=np.int64)
    cdef long long[::1] out = offset
    for c in range(n_columns):
        out[c + 1] = out[c] + _used_width(&column_width[0], c, n_bins) + 1
    return offset


def column_modes(const X_BINNED_DTYPE_C[::1, :] X, int n_threads):
    """Each column's most frequent code (the smallest of ties; uint8) and its
    number of rows (int64)."""
    cdef Py_ssize_t n = X.shape[0], i
    cdef int c, b, best, n_columns = X.shape[1]
    counts = np.zeros((max(n_columns, 1), 256), dtype=np.int64)
    cdef long long[:, ::1] cnt = counts
    modes = np.zeros(n_columns, dtype=np.uint8)
    mode_rows = np.zeros(n_columns, dtype=np.int64)
    cdef unsigned char[::1] out = modes
    cdef long long[::1] out_rows = mode_rows
    with nogil:
        for c in prange(n_columns, schedule='dynamic', num_threads=n_threads):
            for i in range(n):
                cnt[c, X[i, c]] += 1
            best = 0
            for b in range(1, 256):
                if cnt[c, b] > cnt[c, best]:
                    best = b
            out[c] = best
            out_rows[c] = cnt[c, best]
    return modes, mode_rows


def build_multi_value(const X_BINNED_DTYPE_C[::1, :] X, const X_BINNED_DTYPE_C[::1] mode,
                      const long long[::1] offset, const unsigned short[::1] column_width,
                      int n_bins, int n_threads):
    """The row-wise entries of ``X``'s columns: ``(indptr, slots)``.

    Row ``r``'s entries, by column, are ``slots[indptr[r]:indptr[r + 1]]``:
    column ``c``'s code ``b`` if it is not ``mode[c]``, as slot
    ``offset[c] + b`` (``offset[c] + width`` for a code at or past the
    column's used width: its missing bin).
    """
    cdef Py_ssize_t n = X.shape[0], i, lo, hi, blk, n_blocks
    cdef int c, n_columns = X.shape[1]
    cdef unsigned int[::1] slots32
    cdef unsigned short[::1] slots16
    if offset.shape[0] != n_columns + 1 or mode.shape[0] != n_columns:
        raise ValueError("offset and mode need an entry per column.")
    indptr = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] ptr = indptr
    n_blocks = (n + BUILD_BLOCK - 1) // BUILD_BLOCK
    with nogil:
        for blk in prange(n_blocks, schedule='static', num_threads=n_threads):
            lo = blk * BUILD_BLOCK
            hi = min(n, lo + BUILD_BLOCK)
            for c in range(n_columns):
                for i in range(lo, hi):
                    if X[i, c] != mode[c]:
                        ptr[i + 1] += 1
        for i in range(n):
            ptr[i + 1] += ptr[i]
    wide = offset[n_columns] > MAX_SLOTS16
    slots = np.empty(ptr[n], dtype=np.uint32 if wide else np.uint16)
    cdef long long[::1] cursor = indptr[:n].copy()
    if wide:
        slots32 = slots
        _fill(X, mode, offset, column_width, n_bins, ptr, cursor, slots32, n_threads)
    else:
        slots16 = slots
        _fill(X, mode, offset, column_width, n_bins, ptr, cursor, slots16, n_threads)
    return indptr, slots


cdef _fill(const X_BINNED_DTYPE_C[::1, :] X, const X_BINNED_DTYPE_C[::1] mode,
           const long long[::1] offset, const unsigned short[::1] column_width, int n_bins,
           const long long[::1] ptr, long long[::1] cursor, slot_t[::1] slots,
           int n_threads):
    cdef Py_ssize_t n = X.shape[0], i, lo, hi, blk
    cdef Py_ssize_t n_blocks = (n + BUILD_BLOCK - 1) // BUILD_BLOCK
    cdef int c, n_columns = X.shape[1], width
    cdef X_BINNED_DTYPE_C b
    with nogil:
        for blk in prange(n_blocks, schedule='static', num_threads=n_threads):
            lo = blk * BUILD_BLOCK
            hi = min(n, lo + BUILD_BLOCK)
            for c in range(n_columns):
                width = _used_width(&column_width[0], c, n_bins)
                for i in range(lo, hi):
                    b = X[i, c]
                    if b != mode[c]:
                        slots[cursor[i]] = <slot_t>(offset[c] + min(<int>b, width))
                        cursor[i] += 1


cdef inline void _prefetch(const long long* indptr, const slot_t* slots,
                           const SIZE_C* rows, SIZE_C i, SIZE_C hi, const char* values,
                           Py_ssize_t itemsize) noexcept nogil:
    # the entries and the value of the row PREFETCH_DISTANCE ahead of i
    cdef SIZE_C r
    if i + PREFETCH_DISTANCE < hi:
        r = rows[i + PREFETCH_DISTANCE]
        __builtin_prefetch(slots + indptr[r])
        __builtin_prefetch(values + r * itemsize)


cdef void _accumulate(
    const long long* indptr, const slot_t* slots, const SIZE_C* rows, SIZE_C lo,
    SIZE_C hi, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant_hessian,
    hist_struct* acc, double* totals,
) noexcept nogil:
    # rows[lo:hi]'s entries into acc; totals[0:2] = their gradient and hessian sums
    cdef SIZE_C i, r
    cdef long long k, end
    cdef double g_sum = 0.0, h_sum = 0.0
    cdef G_H_DTYPE_C gr, hr = 0
    cdef hist_struct* b
    for i in range(lo, hi):
        _prefetch(indptr, slots, rows, i, hi, <const char*>g, sizeof(G_H_DTYPE_C))
        r = rows[i]
        gr = g[r]
        g_sum += gr
        if not constant_hessian:
            hr = h[r]
            h_sum += hr
        end = indptr[r + 1]
        for k in range(indptr[r], end):
            b = &acc[slots[k]]
            b.sum_gradients += gr
            if not constant_hessian:
                b.sum_hessians += hr
            b.count += 1
    totals[0] = g_sum
    totals[1] = h_sum


cdef void _part(const multi_value_bins* mv, const SIZE_C* rows, SIZE_C lo, SIZE_C hi,
                const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant_hessian,
                int t) noexcept nogil:
    cdef long long n_slots = mv.offset[mv.n_columns]
    cdef hist_struct* acc = mv.private + t * n_slots
    memset(acc, 0, n_slots * sizeof(hist_struct))
    if mv.slots16 != NULL:
        _accumulate(mv.indptr, mv.slots16, rows, lo, hi, g, h, constant_hessian, acc,
                    mv.totals + 2 * t)
    else:
        _accumulate(mv.indptr, mv.slots32, rows, lo, hi, g, h, constant_hessian, acc,
                    mv.totals + 2 * t)


cdef void _unpack_column(const multi_value_bins* mv, int c, int n_parts, SIZE_C n,
                         double g_total, double h_total, bint constant_hessian,
                         double hessian, hist_struct* row, int n_bins) noexcept nogil:
    # Column c's bins: the parts' slots added, its mode bin the rest.
    cdef long long start = mv.offset[c], n_slots = mv.offset[mv.n_columns]
    cdef int width = <int>(mv.offset[c + 1] - start) - 1, j, t, m
    cdef double g_rest = g_total, h_rest = h_total
    cdef unsigned int n_rest = <unsigned int>n
    cdef hist_struct* d
    cdef const hist_struct* src
    for j in range(width + 1):
        d = &row[j if j < width else n_bins - 1]
        d[0] = mv.private[start + j]
        for t in range(1, n_parts):
            src = &mv.private[t * n_slots + start + j]
            d.sum_gradients = d.sum_gradients + src.sum_gradients
            d.sum_hessians = d.sum_hessians + src.sum_hessians
            d.count = d.count + src.count
        g_rest = g_rest - d.sum_gradients
        h_rest = h_rest - d.sum_hessians
        n_rest = n_rest - d.count
    m = mv.mode[c]
    d = &row[m if m < width else n_bins - 1]
    d.sum_gradients = d.sum_gradients + g_rest
    d.sum_hessians = d.sum_hessians + h_rest
    d.count = d.count + n_rest
    if constant_hessian:
        _fill_constant_hessian(row, width, hessian)
        _fill_constant_hessian(row + n_bins - 1, 1, hessian)


cdef int _n_parts(const multi_value_bins* mv, SIZE_C n, int n_threads) noexcept nogil:
    # the parts a node's rows are split into (one per thread at most)
    cdef double entries = n * mv.entries_per_row
    if n_threads < 2:
        return 1
    return max(1, <int>min(<double>min(n_threads, mv.max_parts),
                           entries / MIN_PART_ENTRIES,
                           entries / (MIN_ENTRIES_PER_SLOT
                                      * <double>mv.offset[mv.n_columns])))


# ------------------------------------------------ packed quantized gradients

cdef void _accumulate_packed(
    const long long* indptr, const slot_t* slots, const SIZE_C* rows, SIZE_C lo,
    SIZE_C hi, const int64_t* packed, int64_t* acc, int64_t* total,
) noexcept nogil:
    # rows[lo:hi]'s packed values into acc's slots and total (at most a
    # block of rows: no lane overflows)
    cdef SIZE_C i, r
    cdef long long k, end
    cdef int64_t v, t = 0
    for i in range(lo, hi):
        _prefetch(indptr, slots, rows, i, hi, <const char*>packed, sizeof(int64_t))
        r = rows[i]
        v = packed[r]
        t += v
        end = indptr[r + 1]
        for k in range(indptr[r], end):
            acc[slots[k]] += v
    total[0] = t


cdef void _part_packed(const multi_value_bins* mv, const SIZE_C* rows, SIZE_C lo,
                       SIZE_C hi, const int64_t* packed, const packed_params* q,
                       int t) noexcept nogil:
    # Part t's slots in mv.acc (one block of rows at most) or, for more rows,
    # block by block decoded into mv.sums (flushed[t]); its totals' lanes in
    # mv.total_lanes.
    cdef long long n_slots = mv.offset[mv.n_columns], j
    cdef int64_t* acc = mv.acc + t * n_slots
    cdef int64_t* sums = mv.sums + 3 * t * n_slots
    cdef int64_t* lanes = mv.total_lanes + 3 * t
    cdef int64_t total
    cdef SIZE_C a = lo, b
    memset(acc, 0, n_slots * sizeof(int64_t))
    lanes[0] = lanes[1] = lanes[2] = 0
    mv.flushed[t] = hi - lo > q.block_rows
    if mv.flushed[t]:
        memset(sums, 0, 3 * n_slots * sizeof(int64_t))
    while a < hi:
        b = hi if hi - a <= q.block_rows else a + q.block_rows
        if mv.slots16 != NULL:
            _accumulate_packed(mv.indptr, mv.slots16, rows, a, b, packed, acc, &total)
        else:
            _accumulate_packed(mv.indptr, mv.slots32, rows, a, b, packed, acc, &total)
        decode_packed(total, q.h_shift, q.g_shift, lanes)
        if mv.flushed[t]:
            for j in range(n_slots):
                if acc[j] != 0:
                    decode_packed(acc[j], q.h_shift, q.g_shift, sums + 3 * j)
                    acc[j] = 0
        a = b


cdef void _unpack_column_packed(const multi_value_bins* mv, int c, int n_parts,
                                const int64_t* node_lanes, const packed_params* q,
                                double g_scale, double h_scale, hist_struct* row,
                                int n_bins) noexcept nogil:
    # Column c's bins from the parts' integer sums; its mode bin the node's
    # lanes minus the others' (integers: exact).
    cdef long long start = mv.offset[c], n_slots = mv.offset[mv.n_columns], s
    cdef int width = <int>(mv.offset[c + 1] - start) - 1, j, t, k, m = mv.mode[c]
    cdef int64_t lanes[3]
    cdef int64_t rest[3]
    cdef int64_t mode_lanes[3]
    m = m if m < width else width
    for k in range(3):
        rest[k] = node_lanes[k]
        mode_lanes[k] = 0
    for j in range(width + 1):
        lanes[0] = lanes[1] = lanes[2] = 0
        for t in range(n_parts):
            s = t * n_slots + start + j
            if mv.flushed[t]:
                for k in range(3):
                    lanes[k] += mv.sums[3 * s + k]
            else:
                decode_packed(mv.acc[s], q.h_shift, q.g_shift, lanes)
        for k in range(3):
            rest[k] -= lanes[k]
        if j == m:
            for k in range(3):
                mode_lanes[k] = lanes[k]
        else:
            store_packed(lanes, g_scale, h_scale, q.constant_hessian,
                         &row[j if j < width else n_bins - 1])
    for k in range(3):
        mode_lanes[k] += rest[k]
    store_packed(mode_lanes, g_scale, h_scale, q.constant_hessian,
                 &row[m if m < width else n_bins - 1])


cdef struct node_totals:
    # a node's totals, from its parts: float sums, or packed lanes and scales
    double g
    double h
    int64_t lanes[3]
    double g_scale
    double h_scale


cdef inline void _run_part(const multi_value_bins* mv, const SIZE_C* rows, SIZE_C lo,
                           SIZE_C hi, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h,
                           bint constant_hessian, const int64_t* packed,
                           const packed_params* q, int t) noexcept nogil:
    if packed != NULL:
        _part_packed(mv, rows, lo, hi, packed, q, t)
    else:
        _part(mv, rows, lo, hi, g, h, constant_hessian, t)


cdef void _totals(const multi_value_bins* mv, int n_parts, bint packed,
                  const packed_params* q, node_totals* tot) noexcept nogil:
    cdef int t, k
    tot.g = tot.h = 0.0
    tot.lanes[0] = tot.lanes[1] = tot.lanes[2] = 0
    for t in range(n_parts):
        if packed:
            for k in range(3):
                tot.lanes[k] += mv.total_lanes[3 * t + k]
        else:
            tot.g = tot.g + mv.totals[2 * t]
            tot.h = tot.h + mv.totals[2 * t + 1]
    if packed:
        tot.g_scale = ldexp(1.0, -q.g_exponent)
        tot.h_scale = ldexp(1.0, -q.h_exponent)


cdef inline void _unpack(const multi_value_bins* mv, int c, int n_parts, SIZE_C n,
                         const node_totals* tot, bint constant_hessian,
                         const G_H_DTYPE_C* h, bint packed, const packed_params* q,
                         hist_struct* row, int n_bins) noexcept nogil:
    if packed:
        _unpack_column_packed(mv, c, n_parts, tot.lanes, q, tot.g_scale, tot.h_scale, row,
                              n_bins)
    else:
        _unpack_column(mv, c, n_parts, n, tot.g, tot.h, constant_hessian, h[0], row,
                       n_bins)


cdef void histogram_multi_value(
    const multi_value_bins* mv, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians, bint constant_hessian,
    const int64_t* packed, const packed_params* q, hist_struct* out, int n_bins,
    int n_threads,
) noexcept nogil:
    # The histograms of the node's n >= 1 rows into out (a row of n_bins per
    # column; only the bins a column uses are written), from the float
    # gradients, or from packed quantized ones (packed not NULL; decoded as
    # _histogram.histogram_packed decodes them: the same integer sums).
    cdef int t, c, n_parts = _n_parts(mv, n, n_threads)
    cdef SIZE_C chunk
    cdef node_totals tot
    cdef long long n_slots = mv.offset[mv.n_columns]
    if n_parts == 1:
        _run_part(mv, rows, 0, n, gradients, hessians, constant_hessian, packed, q, 0)
    else:
        chunk = (n + n_parts - 1) // n_parts
        # a team of n_threads even for fewer parts: libgomp ends the threads a
        # smaller team leaves out and starts new ones for the next larger one
        for t in prange(n_parts, schedule='static', num_threads=n_threads):
            _run_part(mv, rows, min(n, t * chunk), min(n, (t + 1) * chunk), gradients,
                      hessians, constant_hessian, packed, q, t)
    _totals(mv, n_parts, packed != NULL, q, &tot)
    if n_parts > 1 and n_slots * n_parts >= MIN_PARALLEL_UNPACK:
        for c in prange(mv.n_columns, schedule='static', num_threads=n_threads):
            _unpack(mv, c, n_parts, n, &tot, constant_hessian, hessians, packed != NULL, q,
                    out + <Py_ssize_t>c * n_bins, n_bins)
    else:
        for c in range(mv.n_columns):
            _unpack(mv, c, n_parts, n, &tot, constant_hessian, hessians, packed != NULL, q,
                    out + <Py_ssize_t>c * n_bins, n_bins)
