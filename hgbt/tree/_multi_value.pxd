# Row-wise multi-value bins (_multi_value.pyx): the histogram engine that
# splits a node by rows instead of by columns.
from libc.stdint cimport int64_t

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct
from ._histogram cimport packed_params


cdef struct multi_value_bins:
    # Row r's entries are slots[indptr[r]:indptr[r + 1]]: one per column whose
    # code is not the column's most frequent one (mode), at the column's
    # packed slot offset[c] + code (its missing bin at offset[c] + width).
    const long long* indptr
    const unsigned short* slots16  # one of the two is set (by the slot count)
    const unsigned int* slots32
    const long long* offset  # n_columns + 1
    const X_BINNED_DTYPE_C* mode
    int n_columns
    double entries_per_row
    # a node's private sums, one run of offset[n_columns] slots per part
    hist_struct* private
    double* totals  # 2 per part
    int max_parts
    # packed quantized gradients (NULL: none): integer sums per part and
    # slot, their decoded lanes when a part has more than a block of rows
    int64_t* acc
    int64_t* sums  # 3 per slot
    int64_t* total_lanes  # 3 per part
    bint* flushed  # per part


# Nodes with fewer entries than this per slot are built by columns: the
# row-wise kernel zeroes and unpacks every slot whatever the node's size
# (at about 1 entry per slot it took 1.2-1.3x the column-wise time on
# real tables, at 2.5 the same, at 5 0.7x; benchmarks/RESULTS.md).
DEF MIN_NODE_ENTRIES_PER_SLOT = 2


cdef inline bint by_rows(const multi_value_bins* mv, SIZE_C n) noexcept nogil:
    # whether a node of n rows is built row-wise
    return (mv.indptr != NULL and n * mv.entries_per_row
            >= MIN_NODE_ENTRIES_PER_SLOT * <double>mv.offset[mv.n_columns])


cdef void histogram_multi_value(
    const multi_value_bins* mv, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians, bint constant_hessian,
    const int64_t* packed, const packed_params* q, hist_struct* out, int n_bins,
    int n_threads,
) noexcept nogil
