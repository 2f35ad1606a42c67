"""Kernels: per-row gradients and hessians of the losses."""
from cython.parallel cimport prange

from ._types cimport G_H_DTYPE_C, Y_DTYPE_C


def squared_error_gradients(
    const Y_DTYPE_C[::1] y_true,
    const Y_DTYPE_C[::1] raw_prediction,
    const Y_DTYPE_C[::1] sample_weight,
    G_H_DTYPE_C[::1] gradients,
    G_H_DTYPE_C[::1] hessians,
    int n_threads,
):
    """Half squared error: g = w (raw - y), h = w.

    With no ``sample_weight`` (length 0) the hessian is the constant 1, and
    ``hessians`` (length 1) is left as it is.
    """
    cdef Py_ssize_t n = y_true.shape[0], i
    cdef bint weighted = sample_weight.shape[0] > 0
    if weighted:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            gradients[i] = sample_weight[i] * (raw_prediction[i] - y_true[i])
            hessians[i] = sample_weight[i]
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            gradients[i] = raw_prediction[i] - y_true[i]
