# Counter-based uniform draws, shared by the kernels that draw per row: the
# draw of a row depends only on (seed, row), never on the thread that handles
# it, nor on which process holds the row (a Dask shard passes global rows).
from libc.stdint cimport uint64_t


cdef inline uint64_t mix(uint64_t seed, uint64_t row) noexcept nogil:
    # splitmix64 finaliser of (seed, row): 64 random bits
    cdef uint64_t z = seed + (row + 1) * <uint64_t>0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double uniform(uint64_t seed, uint64_t row) noexcept nogil:
    # a uniform draw in [0, 1) from the top 53 bits of mix(seed, row)
    return <double>(mix(seed, row) >> 11) * 1.1102230246251565e-16  # 2**-53
