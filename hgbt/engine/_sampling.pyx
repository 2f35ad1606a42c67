"""Kernel: the rows a round's bagging keeps.

Each row is kept when its counter-based draw ``uniform(seed, row id)`` is
below the fraction (``hgbt/core/_random.pxd``), so whether a row is in a
round's bag depends only on the round's seed and the row's index among all
training rows: a Dask shard, drawing for its rows by their global indices,
keeps the rows the local fit keeps, whatever the number of threads or workers.
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t

import numpy as np

from ..core._random cimport mix, uniform
from ..core._types import SIZE_DTYPE

# Rows below which the draw stays on one thread.
DEF MIN_PARALLEL_ROWS = 65536


def bernoulli_rows(uint64_t seed, double fraction, Py_ssize_t n_rows,
                   const int64_t[::1] row_ids=None, int n_threads=1):
    """Sorted indices (uint32) of the rows ``i < n_rows`` whose draw
    ``uniform(seed, id)`` is below ``fraction``; ``id`` is ``row_ids[i]``
    (the row among all training rows), or ``i`` without ``row_ids``."""
    if row_ids is not None and row_ids.shape[0] != n_rows:
        raise ValueError(f"row_ids has {row_ids.shape[0]} entries for {n_rows} rows.")
    keep_array = np.empty(n_rows, dtype=np.uint8)
    cdef unsigned char[::1] keep = keep_array
    cdef Py_ssize_t i
    cdef bint ids = row_ids is not None
    cdef int threads = n_threads if n_rows >= MIN_PARALLEL_ROWS else 1
    if n_rows:
        for i in prange(n_rows, nogil=True, schedule="static", num_threads=threads):
            keep[i] = uniform(seed, <uint64_t>(row_ids[i] if ids else i)) < fraction
    return np.flatnonzero(keep_array).astype(SIZE_DTYPE)


def row_keys(uint64_t seed, Py_ssize_t n_rows, const int64_t[::1] row_ids=None):
    """Each row's 64-bit counter-based key ``mix(seed, id)`` (uint64), the
    bits ``uniform`` draws from: an order of the rows that depends only on
    the seed and the rows' indices among all rows (``row_ids``, else ``i``)."""
    if row_ids is not None and row_ids.shape[0] != n_rows:
        raise ValueError(f"row_ids has {row_ids.shape[0]} entries for {n_rows} rows.")
    out_array = np.empty(n_rows, dtype=np.uint64)
    cdef uint64_t[::1] out = out_array
    cdef Py_ssize_t i
    cdef bint ids = row_ids is not None
    with nogil:
        for i in range(n_rows):
            out[i] = mix(seed, <uint64_t>(row_ids[i] if ids else i))
    return out_array
