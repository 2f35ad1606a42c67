# Row-wise CSR of sparse-stored binned columns, shared by the histogram and
# partition kernels: a row's entries are sorted by column.


cdef inline long long first_at_least(
    const unsigned int* columns, long long lo, long long hi, unsigned int column,
) noexcept nogil:
    # First entry in [lo, hi) whose column is >= column (binary search).
    cdef long long mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if columns[mid] < column:
            lo = mid + 1
        else:
            hi = mid
    return lo
