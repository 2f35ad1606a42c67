"""Kernel: quantized gradients (``use_quantized_grad``).

Each row's gradient becomes a small integer ``g_q`` with
``g ~ g_q * 2**-g_exponent``, rounded stochastically (unbiased: up with
probability equal to the fractional part, to 2**-32), and likewise its
hessian. The random draw of a row depends only on ``(seed, row)`` (a
counter-based hash), never on which thread handles the row, so the result
is the same for any number of threads.

Both integers and a 1 are packed into one int64,
``g_q * 2**g_shift + h_q * 2**h_shift + 1``: one integer add then updates a
histogram bin's gradient sum, hessian sum and row count, all exact. The
dequantized values are also written as float32 (exactly representable), for
the kernels that work on float gradients (sparse columns, leaf values).
"""
from cython.parallel cimport prange
from libc.math cimport ldexp
from libc.stdint cimport int64_t, uint64_t

from ..core._random cimport uniform
from ..core._types cimport G_H_DTYPE_C, SIZE_C

# Rows below which the loop stays on one thread.
DEF MIN_PARALLEL_ROWS = 16384
# 2**20: above every |value| * 2**exponent + 1 (num_grad_quant_bins is capped
# far below it); doubles near it are 2**-32 apart.
DEF FLOOR_OFFSET = 1048576.0


cdef inline int64_t _floor(double x) noexcept nogil:
    # floor(x) for |x| < FLOOR_OFFSET as the truncation of x + FLOOR_OFFSET
    # > 0: no compare, no branch (the sign of a gradient is random). The sum
    # is a multiple of 2**-32, so a rounding up is 2**-32 more or less likely.
    return <int64_t>(x + FLOOR_OFFSET) - <int64_t>FLOOR_OFFSET


def quantize_gradients(
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    int g_exponent,
    int h_exponent,
    int h_shift,
    int g_shift,
    uint64_t seed,
    G_H_DTYPE_C[::1] quantized_gradients,
    G_H_DTYPE_C[::1] quantized_hessians,
    int64_t[::1] packed,
    int n_threads,
    const int64_t[::1] row_ids=None,
    int constant_hessian=-1,
):
    """Quantize every row's gradient and hessian (see the module docstring).

    Row ``i``'s draws are from ``(seed, row_ids[i])``, its index among all
    the fit's rows (a Dask shard's), or from ``(seed, i)`` without ``row_ids``.

    ``constant_hessian`` (-1: whether ``hessians`` has length 1 while there
    are more rows; a Dask shard of one row says so itself) is a constant
    hessian, ``hessians[0]`` for every row: it is not quantized, its
    lane of every packed value is 0, and ``quantized_hessians`` is not
    written. Empty ``quantized_*`` arrays are not written either (only the
    packed values are needed). The caller picks the exponents so that
    ``|g| * 2**g_exponent`` and ``h * 2**h_exponent`` stay within the levels
    the shifts were chosen for (``training_data.packed_lanes``).
    """
    cdef Py_ssize_t i, n = gradients.shape[0]
    if constant_hessian < 0:
        constant_hessian = hessians.shape[0] == 1 and n != 1
    cdef double g_up = ldexp(1.0, g_exponent), g_down = ldexp(1.0, -g_exponent)
    cdef double h_up = ldexp(1.0, h_exponent), h_down = ldexp(1.0, -h_exponent)
    cdef uint64_t h_seed = seed ^ <uint64_t>0x5DEECE66D
    cdef int64_t g_q, h_q
    cdef int threads = n_threads if n >= MIN_PARALLEL_ROWS else 1
    cdef bint write_g = quantized_gradients.shape[0] > 0
    cdef bint write_h = quantized_hessians.shape[0] > 0 and not constant_hessian
    cdef int64_t g_lane = (<int64_t>1) << g_shift, h_lane = (<int64_t>1) << h_shift
    if ((write_g and quantized_gradients.shape[0] < n) or packed.shape[0] < n
            or (write_h and quantized_hessians.shape[0] < n)
            or (not constant_hessian and hessians.shape[0] != n)):
        raise ValueError("quantize_gradients: arrays of the wrong length.")
    if not 0 < h_shift < g_shift < 63:
        raise ValueError("quantize_gradients: invalid lane shifts.")
    cdef bint ids = row_ids is not None
    if ids and row_ids.shape[0] != n:
        raise ValueError("quantize_gradients: row_ids of the wrong length.")
    cdef uint64_t row
    for i in prange(n, nogil=True, schedule="static", num_threads=threads):
        row = <uint64_t>(row_ids[i] if ids else i)
        g_q = _floor(<double>gradients[i] * g_up + uniform(seed, row))
        if write_g:
            quantized_gradients[i] = <G_H_DTYPE_C>(g_q * g_down)
        if constant_hessian:
            h_q = 0
        else:
            h_q = _floor(<double>hessians[i] * h_up + uniform(h_seed, row))
            if write_h:
                quantized_hessians[i] = <G_H_DTYPE_C>(h_q * h_down)
        packed[i] = g_q * g_lane + h_q * h_lane + 1


def leaf_sums(
    const SIZE_C[::1] rows,
    const SIZE_C[::1] starts,
    const SIZE_C[::1] stops,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    double[::1] sum_gradients,
    double[::1] sum_hessians,
    int n_threads,
):
    """Float sums of the gradients and hessians of each leaf's rows.

    Leaf ``k`` holds ``rows[starts[k]:stops[k]]``. Each leaf is summed by one
    thread, in row order, so the sums do not depend on the thread count.
    ``hessians`` of length 1 is a constant hessian.
    """
    cdef Py_ssize_t n_leaves = starts.shape[0], k
    cdef SIZE_C i
    # one row's hessian read as a constant is that row's hessian all the same
    cdef bint constant_hessian = hessians.shape[0] == 1
    cdef double g, h
    if (stops.shape[0] != n_leaves or sum_gradients.shape[0] < n_leaves
            or sum_hessians.shape[0] < n_leaves):
        raise ValueError("leaf_sums: one start, stop and output per leaf.")
    for k in prange(n_leaves, nogil=True, schedule="dynamic", num_threads=n_threads):
        g = 0.0
        h = 0.0
        for i in range(starts[k], stops[k]):
            g = g + gradients[rows[i]]
            if not constant_hessian:
                h = h + hessians[rows[i]]
        if constant_hessian:
            h = (stops[k] - starts[k]) * <double>hessians[0]
        sum_gradients[k] = g
        sum_hessians[k] = h
