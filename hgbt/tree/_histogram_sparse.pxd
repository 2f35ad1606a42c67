# The sparse-column histogram kernel's C interface, for _grower.pyx.
from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct


cdef void histogram_sparse(
    const long long* indptr, const unsigned int* columns,
    const X_BINNED_DTYPE_C* codes, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* gradients, const G_H_DTYPE_C* hessians, bint constant_hessian,
    const X_BINNED_DTYPE_C* default_codes, const unsigned short* column_width,
    const unsigned int* column_bounds, int n_chunks, hist_struct* out, int n_cols,
    int n_bins, int n_threads,
) noexcept nogil
