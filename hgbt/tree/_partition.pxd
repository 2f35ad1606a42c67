# The partition kernel's C interface, for kernels that grow a tree without
# Python between nodes (_grower.pyx).
from ..core._types cimport X_BINNED_DTYPE_C, SIZE_C


cdef SIZE_C partition(
    SIZE_C* rows, SIZE_C* buffer, SIZE_C n, const X_BINNED_DTYPE_C* col,
    bint by_position, const unsigned char* goes_left, int n_threads,
) noexcept nogil

cdef SIZE_C partition_stored(
    SIZE_C* rows, SIZE_C* buffer, SIZE_C n, const long long* indptr,
    const unsigned int* columns, const X_BINNED_DTYPE_C* codes,
    const long long* column_indptr, const SIZE_C* column_rows,
    const X_BINNED_DTYPE_C* column_codes, unsigned int column,
    X_BINNED_DTYPE_C default_code, const unsigned char* goes_left,
    X_BINNED_DTYPE_C* scratch, int n_threads,
) noexcept nogil
