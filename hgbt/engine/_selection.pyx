"""Kernel: the weight sums of a radix selection over groups of rows.

A selection pass looks at one byte of each row's 64-bit key and adds the
row's integer weight to its group's bucket for that byte. Integer sums are
exact, so the buckets of several processes add up to the same numbers in any
order: a quantile selected from them is the same for any number of Dask
workers (:mod:`hgbt.engine.selection`).
"""
from libc.stdint cimport int64_t, uint64_t

import numpy as np

ctypedef Py_ssize_t intp_t


def bucket_weights(const uint64_t[::1] keys, const int64_t[::1] weights,
                   const intp_t[::1] groups, const intp_t[::1] rows, int shift,
                   int64_t[:, ::1] out):
    """Add each row ``r`` of ``rows``'s weight (1 when ``weights`` is empty)
    to ``out[groups[r], (keys[r] >> shift) & 255]``."""
    cdef Py_ssize_t i, r
    cdef bint weighted = weights.shape[0] > 0
    with nogil:
        for i in range(rows.shape[0]):
            r = rows[i]
            out[groups[r], (keys[r] >> shift) & 255] += weights[r] if weighted else 1


def narrow_rows(const uint64_t[::1] keys, const intp_t[::1] groups,
                const intp_t[::1] rows, int shift, const intp_t[::1] bucket):
    """The rows ``r`` of ``rows`` (in order) whose byte ``(keys[r] >> shift) &
    255`` is their group's chosen ``bucket``: the candidates of the next pass."""
    out = np.empty(rows.shape[0], dtype=np.intp)
    cdef intp_t[::1] kept = out
    cdef Py_ssize_t i, r, n = 0
    with nogil:
        for i in range(rows.shape[0]):
            r = rows[i]
            if <intp_t>((keys[r] >> shift) & 255) == bucket[groups[r]]:
                kept[n] = r
                n += 1
    return out[:n]


def group_weights(const int64_t[::1] weights, const intp_t[::1] groups,
                  int64_t[::1] out):
    """Add each row's weight to ``out[its group]``."""
    cdef Py_ssize_t r
    with nogil:
        for r in range(groups.shape[0]):
            out[groups[r]] += weights[r]


def next_keys(const uint64_t[::1] keys, const int64_t[::1] weights,
              const intp_t[::1] groups, const uint64_t[::1] after, uint64_t[::1] out):
    """``out[g]``: the least key above ``after[g]`` among group ``g``'s rows of
    positive weight (``out`` starts at 2**64 - 1: none)."""
    cdef Py_ssize_t r
    cdef Py_ssize_t g
    cdef bint weighted = weights.shape[0] > 0
    with nogil:
        for r in range(keys.shape[0]):
            g = groups[r]
            if keys[r] > after[g] and keys[r] < out[g] and (not weighted or weights[r] > 0):
                out[g] = keys[r]
