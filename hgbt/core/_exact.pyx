"""Kernels for sums that do not depend on the order of their terms.

``snap_to_grid`` rounds float32 gradients or hessians to multiples of
``2**-exponent``. Chosen as :func:`hgbt.core.exact.grid_exponent` does, every
float64 sum of the snapped values is exact, so a histogram is the same
whatever the order rows are added in: threads, Dask workers and the
subtraction trick cannot change a model.

``exact_accumulate`` adds float64 values without any rounding into integer
counters per binary exponent (:class:`hgbt.core.exact.ExactSum` turns them into
one correctly rounded float).
"""
from cython.parallel cimport prange
from libc.math cimport copysign, isfinite, ldexp
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

# Rows below which the snapping loop stays on one thread.
DEF MIN_PARALLEL_ROWS = 16384
# A finite float64 is an integer mantissa < 2**53 times 2**(row - 1127)
# with 53 <= row <= 2098: one row of counters per row.
DEF N_EXPONENTS = 2100
DEF LOW_BITS = 26
# 2**52: adding and subtracting it (with the sign of x) rounds |x| < 2**52 to
# the nearest integer, ties to even, in the default rounding mode.
DEF ROUNDING_SHIFT = 4503599627370496.0


def snap_to_grid(float[::1] values, int exponent, int n_threads):
    """Round ``values`` in place to the nearest multiple of ``2**-exponent``.

    Scaling by a power of two and rounding are exact in float64; the result
    fits float32 exactly when ``|values| * 2**exponent <= 2**24``, which
    :func:`hgbt.core.exact.grid_exponent` guarantees (rounding is exact up to
    ``2**52``).
    """
    cdef Py_ssize_t i, n = values.shape[0]
    cdef double up = ldexp(1.0, exponent), down = ldexp(1.0, -exponent)
    cdef int threads = n_threads if n >= MIN_PARALLEL_ROWS else 1
    for i in prange(n, nogil=True, schedule="static", num_threads=threads):
        values[i] = <float>(_round_even(<double>values[i] * up) * down)


cdef inline double _round_even(double x) noexcept nogil:
    # rint(x) for |x| < 2**52 (the grid keeps |x| <= 2**24), without a libm
    # call or a branch, so the loop vectorizes: x + 2**52 has no fraction
    # bits left and subtracting 2**52 back is exact; copysign keeps rint's
    # -0.0. inf and NaN come out as they went in.
    cdef double shift = copysign(ROUNDING_SHIFT, x)
    return copysign((x + shift) - shift, x)


def exact_accumulate(const double[::1] values, const double[::1] weights,
                     uint64_t[:, ::1] counters):
    """Add ``values`` (times ``weights`` unless empty) into ``counters``.

    ``counters`` has shape (2100, 4): per binary exponent, the high and low
    26-bit halves of the 53-bit integer mantissas of positive and of negative
    terms. Each term ``w * v`` is rounded once, as NumPy would; the adding is
    exact (no overflow below 2**37 terms). Returns ``(special, first,
    stop)``: the sum of the non-finite terms (0.0 when there are none; they
    are not counted), and the rows ``first:stop`` of ``counters`` that this
    call added to (0, 0 when none), so that the caller reads only those.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    cdef bint weighted = weights.shape[0] > 0
    cdef double v, special = 0.0
    cdef int col, row, biased
    cdef int first = N_EXPONENTS, stop = 0
    cdef uint64_t bits, mantissa
    cdef uint64_t implicit_bit = (<uint64_t> 1) << 52  # a float64 stores 52 bits
    if weighted and weights.shape[0] != n:
        raise ValueError(f"weights has {weights.shape[0]} entries, values {n}.")
    if counters.shape[0] != N_EXPONENTS or counters.shape[1] != 4:
        raise ValueError(f"counters must have shape ({N_EXPONENTS}, 4).")
    with nogil:
        for i in range(n):
            v = values[i] * weights[i] if weighted else values[i]
            if not isfinite(v):
                special += v
                continue
            if v == 0.0:
                continue
            # v = mantissa * 2**(row - 1127), read off its bits (frexp was a
            # call per term): a normal number's 52 stored bits plus the
            # implicit one at its biased exponent + 52, a subnormal's stored
            # bits at row 53 (2**-1074)
            memcpy(&bits, &v, 8)
            biased = <int>((bits >> 52) & 0x7FF)
            mantissa = bits & (implicit_bit - 1)
            if biased:
                mantissa = mantissa | implicit_bit
                row = biased + 52
            else:
                row = 53
            col = 2 if v < 0 else 0
            counters[row, col] += mantissa >> LOW_BITS
            counters[row, col + 1] += mantissa & ((1 << LOW_BITS) - 1)
            first = min(first, row)
            stop = max(stop, row + 1)
    return special, min(first, stop), stop
