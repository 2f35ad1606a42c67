# The histogram kernels' C interface, for kernels that grow a tree without
# Python between nodes (_grower.pyx).
from libc.stdint cimport int64_t
from libc.string cimport memset

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct


# The layout of packed quantized gradients (training_data.packed_lanes) and
# their grids.
cdef struct packed_params:
    int g_exponent
    int h_exponent
    int h_shift
    int g_shift
    SIZE_C block_rows
    double constant_hessian  # > 0: every hessian is this (its lanes are 0)


cdef void histogram_root(
    const X_BINNED_DTYPE_C* X, SIZE_C n, int n_features, const G_H_DTYPE_C* gradients,
    const G_H_DTYPE_C* hessians, bint constant_hessian, hist_struct* out, int n_bins,
    const unsigned short* column_width, int n_threads,
) noexcept nogil

cdef void histogram_rows(
    const X_BINNED_DTYPE_C* X, SIZE_C stride, int n_features, const SIZE_C* rows,
    SIZE_C n, const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians,
    bint constant_hessian, G_H_DTYPE_C* ordered_gradients,
    G_H_DTYPE_C* ordered_hessians, hist_struct* out, int n_bins,
    const unsigned short* column_width, int n_threads,
) noexcept nogil

cdef void histogram_packed(
    const X_BINNED_DTYPE_C* X, SIZE_C stride, int n_features,
    const X_BINNED_DTYPE_C* X_rows, Py_ssize_t row_stride, bint has_rows,
    const SIZE_C* rows, SIZE_C n, const int64_t* packed, const packed_params* q,
    int64_t* acc, int64_t* sums, Py_ssize_t part_stride, int max_parts,
    hist_struct* out, int n_bins, const unsigned short* column_width, int n_threads,
) noexcept nogil

cdef void subtract(
    const hist_struct* parent, const hist_struct* child, hist_struct* out, int n_rows,
    int n_bins, const unsigned short* column_width, int n_threads,
) noexcept nogil


# Packed quantized sums (_histogram.pyx, _multi_value.pyx).

cdef inline void decode_packed(int64_t v, int h_shift, int g_shift, int64_t* lanes) noexcept nogil:
    # lanes[0..2] += the gradient, hessian and count sums packed in ``v``;
    # the low lanes are never negative, so the top one is ``v >> g_shift``.
    lanes[0] += v >> g_shift
    lanes[1] += (v >> h_shift) & (((<int64_t>1) << (g_shift - h_shift)) - 1)
    lanes[2] += v & (((<int64_t>1) << h_shift) - 1)


cdef inline void store_packed(
    const int64_t* lanes, double g_scale, double h_scale, double constant_hessian,
    hist_struct* out,
) noexcept nogil:
    # One bin from its decoded integer sums (gradient, hessian, count).
    out.sum_gradients = lanes[0] * g_scale
    out.count = <unsigned int>lanes[2]
    if constant_hessian > 0:
        out.sum_hessians = out.count * constant_hessian
    else:
        out.sum_hessians = lanes[1] * h_scale


# Shared with _histogram_sparse.pyx.

# Below this many rows x features a node is built without an OpenMP region:
# lower thresholds measured no gain (a region costs ~1 us; such nodes are a
# small share of a fit: benchmarks/RESULTS.md, eleventh session).
cdef enum:
    MIN_PARALLEL_WORK = 32768


cdef inline void _zero(hist_struct* hist, int n_bins) noexcept nogil:
    memset(hist, 0, n_bins * sizeof(hist_struct))


cdef inline void _zero_used(hist_struct* hist, int n_bins, int width) noexcept nogil:
    # bins [0, width) and the last (missing) one: a column's codes
    _zero(hist, width)
    _zero(hist + n_bins - 1, 1)


cdef inline void _fill_constant_hessian(
    hist_struct* hist, int n_bins, double hessian,
) noexcept nogil:
    # With a constant hessian only counts are accumulated.
    cdef int b
    for b in range(n_bins):
        hist[b].sum_hessians = hist[b].count * hessian


cdef inline int _used_width(const unsigned short* column_width, int f,
                            int n_bins) noexcept nogil:
    # Value bins of column f that can hold rows (column_width NULL: all).
    # Column 0 is always whole: the grower sums it for the root's totals.
    if column_width == NULL or f == 0 or column_width[f] >= n_bins - 1:
        return n_bins - 1
    return column_width[f]
