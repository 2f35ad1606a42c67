"""Kernels: row-conflict counts for exclusive feature bundling.

A bundle's rows already holding a non-default value are a bitset (one bit
per row, uint64 words); a candidate feature conflicts on the rows it shares
with it.
"""
from ..core._types cimport SIZE_C


def count_conflicts(const unsigned long long[::1] occupied, const SIZE_C[::1] rows,
                    long long limit):
    """Rows of ``rows`` whose bit is set, counting stopped once above ``limit``."""
    cdef Py_ssize_t i, n = rows.shape[0]
    cdef long long count = 0
    cdef SIZE_C r
    with nogil:
        for i in range(n):
            r = rows[i]
            count += (occupied[r >> 6] >> (r & 63)) & 1
            if count > limit:
                break
    return count


def mark_rows(unsigned long long[::1] occupied, const SIZE_C[::1] rows):
    """Set the bits of ``rows``."""
    cdef Py_ssize_t i, n = rows.shape[0]
    cdef SIZE_C r
    with nogil:
        for i in range(n):
            r = rows[i]
            occupied[r >> 6] |= (<unsigned long long>1) << (r & 63)
