"""Kernels for rows read page by page (issue 41, out of core): every node of a
pass at once.

In memory a node's histogram is built from its rows' indices; out of core
the rows come one page (a block of consecutive rows, all features) at a
time, and one pass over the pages serves every node of a depth. So each row
carries its node (``node_of_row``, -1 when no histogram is wanted) and:

- :func:`page_histograms` adds each row of a page to its node's histograms,
  each feature's in row order by one thread (the sums are exact on the
  gradient grid, so pages, threads and the order of the adds change no bit:
  the histograms equal ``_histogram``'s of the same rows);
- :func:`route_page` moves each row of a split node to its child, by the
  node's 256-entry table of bins going left, the table in-memory partitions
  read (``_partition.partition_rows_by_table``).

:func:`page_pass` does both for one page in one call, the way training
reads them (``tree/paged.py``): it routes, then gathers the added rows'
slots, gradients and hessians once, in row order, for the features' loops.
:func:`split_tables` gives the tables from split records, as the in-memory
partition makes them (``_rules.goes_left_table``).
"""
from cython.parallel cimport prange
from libc.stdlib cimport free, malloc

import numpy as np

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, hist_struct, split_info_struct
from ._rules cimport goes_left_table

# Rows x features below which a page's pass runs on one thread.
DEF MIN_PARALLEL_WORK = 65536


cdef void _route(
    const X_BINNED_DTYPE_C* X, Py_ssize_t n, int* keys, const int* split_feature,
    const unsigned char* goes_left, const int* left_child, const int* right_child,
    int n_threads,
) noexcept nogil:
    # each row of a split key to its child: X is n rows, F-ordered; goes_left
    # holds 256 entries per key
    cdef Py_ssize_t i
    cdef int k, f
    for i in prange(n, schedule='static', num_threads=n_threads
                    if n >= MIN_PARALLEL_WORK else 1):
        k = keys[i]
        if k >= 0:
            f = split_feature[k]
            if f >= 0:
                if goes_left[<Py_ssize_t>k * 256 + X[f * n + i]]:
                    keys[i] = left_child[k]
                else:
                    keys[i] = right_child[k]


cdef void _feature_rows(
    const X_BINNED_DTYPE_C* col, const Py_ssize_t* rows, Py_ssize_t n, const int* slot,
    const G_H_DTYPE_C* og, const G_H_DTYPE_C* oh, bint constant_hessian, hist_struct* out,
    Py_ssize_t node_stride,
) noexcept nogil:
    # the i-th added row (rows[i]) into slot[i]'s histogram of this feature,
    # its gradient and hessian at og[i], oh[i]
    cdef Py_ssize_t i
    cdef hist_struct* bin_
    for i in range(n):
        bin_ = out + slot[i] * node_stride + col[rows[i]]
        bin_.sum_gradients += og[i]
        if not constant_hessian:
            bin_.sum_hessians += oh[i]
        bin_.count += 1


cdef int _add_rows(
    const X_BINNED_DTYPE_C* X, Py_ssize_t n, Py_ssize_t n_features, const int* keys,
    const int* slot_of_key, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant,
    hist_struct* out, Py_ssize_t n_bins, int n_threads,
) noexcept nogil:
    # the rows whose key has a slot (slot_of_key NULL: the key is the slot)
    # added to that slot's histograms; -1 when out of memory. The added rows'
    # indices, slots, gradients and hessians are gathered once, in row
    # order: a pass builds only some nodes' smaller children, so most rows add
    # nothing, and each feature's loop then reads its rows in sequence.
    cdef Py_ssize_t i, m = 0, f, node_stride = n_features * n_bins
    cdef int k, s
    cdef Py_ssize_t* rows = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
    cdef int* slots = <int*>malloc(max(n, 1) * sizeof(int))
    cdef G_H_DTYPE_C* og = <G_H_DTYPE_C*>malloc(2 * max(n, 1) * sizeof(G_H_DTYPE_C))
    cdef G_H_DTYPE_C* oh = og + max(n, 1)
    if rows == NULL or slots == NULL or og == NULL:
        free(rows)
        free(slots)
        free(og)
        return -1
    for i in range(n):
        k = keys[i]
        s = -1 if k < 0 else (k if slot_of_key == NULL else slot_of_key[k])
        if s >= 0:
            rows[m] = i
            slots[m] = s
            og[m] = g[i]
            if not constant:
                oh[m] = h[i]
            m += 1
    if m == 0:
        pass
    elif m * n_features < MIN_PARALLEL_WORK or n_threads <= 1:
        for f in range(n_features):
            _feature_rows(X + f * n, rows, m, slots, og, oh, constant,
                          out + f * n_bins, node_stride)
    else:
        for f in prange(n_features, schedule='static', num_threads=n_threads):
            _feature_rows(X + f * n, rows, m, slots, og, oh, constant,
                          out + f * n_bins, node_stride)
    free(rows)
    free(slots)
    free(og)
    return 0


def page_histograms(
    const X_BINNED_DTYPE_C[::1, :] page,
    const int[::1] node_of_row,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    hist_struct[:, :, ::1] out,
    int n_threads,
):
    """Add the rows of ``page`` to their nodes' histograms.

    Parameters
    ----------
    page : ndarray of uint8 of shape (n_rows, n_features), F-ordered
    node_of_row : ndarray of int32 of shape (n_rows,)
        Each row's index into ``out``'s nodes; negative: skipped.
    gradients : ndarray of float32 of shape (n_rows,)
    hessians : ndarray of float32 of shape (n_rows,) or None
        None: a constant hessian; only counts are added (the caller sets
        ``sum_hessians = count * hessian`` once the pass is done, as the
        in-memory kernels do). Not a length-1 array as there: a page may
        hold one row.
    out : ndarray of HISTOGRAM_DTYPE of shape (n_nodes, n_features, n_bins)
        Added to, not cleared (a pass adds page after page).
    n_threads : int
    """
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1]
    cdef bint constant = hessians is None
    if node_of_row.shape[0] != n or gradients.shape[0] != n or (
            not constant and hessians.shape[0] != n):
        raise ValueError("page_histograms: one node, gradient and hessian per row.")
    if out.shape[1] != n_features or out.shape[2] < 256:
        raise ValueError("page_histograms: out needs (n_nodes, n_features, 256) bins.")
    if n == 0 or n_features == 0:
        return
    if out.shape[0] == 0 or np.max(node_of_row) >= out.shape[0]:
        raise ValueError("page_histograms: a row's node is past out's nodes.")
    cdef int status
    with nogil:
        status = _add_rows(&page[0, 0], n, n_features, &node_of_row[0], NULL, &gradients[0],
                           NULL if constant else &hessians[0], constant, &out[0, 0, 0],
                           out.shape[2], n_threads)
    if status < 0:
        raise MemoryError("page_histograms: out of memory.")


def route_page(
    const X_BINNED_DTYPE_C[::1, :] page,
    int[::1] node_of_row,
    const int[::1] split_feature,
    const unsigned char[:, ::1] goes_left,
    const int[::1] left_child,
    const int[::1] right_child,
    int n_threads,
):
    """Move the rows of split nodes to their children, in place.

    A row of node ``k`` with ``split_feature[k] >= 0`` goes to
    ``left_child[k]`` when ``goes_left[k, bin]`` is set for its bin of that
    feature, else to ``right_child[k]``; rows of other nodes (and negative
    nodes) stay.
    """
    cdef Py_ssize_t n = page.shape[0]
    cdef int n_nodes = split_feature.shape[0]
    if node_of_row.shape[0] != n:
        raise ValueError("route_page: one node per row.")
    _check_splits(split_feature, goes_left, left_child, right_child, page.shape[1],
                  "route_page")
    if n == 0:
        return
    if np.max(node_of_row) >= n_nodes:
        raise ValueError("route_page: a row's node is past the nodes.")
    if n_nodes == 0:  # every row without a node: nothing moves
        return
    with nogil:
        _route(&page[0, 0], n, &node_of_row[0], &split_feature[0], &goes_left[0, 0],
               &left_child[0], &right_child[0], n_threads)


def _check_splits(split_feature, goes_left, left_child, right_child, n_features, name):
    n_keys = split_feature.shape[0]
    if goes_left.shape[0] != n_keys or goes_left.shape[1] != 256 or \
            left_child.shape[0] != n_keys or right_child.shape[0] != n_keys:
        raise ValueError(f"{name}: a split feature, a 256-bin table and two children "
                         "per node.")
    if n_keys and np.max(split_feature) >= n_features:
        raise ValueError(f"{name}: a split feature past the page's features.")


def split_tables(const split_info_struct[::1] splits, int missing_bin):
    """The 256-entry tables of bins going left of split records
    (SPLIT_INFO_DTYPE), one row each: as the in-memory partition makes them."""
    out = np.zeros((splits.shape[0], 256), dtype=np.uint8)
    cdef unsigned char[:, ::1] view = out
    cdef Py_ssize_t i
    if not 0 <= missing_bin < 256:
        raise ValueError(f"missing_bin must be in [0, 256), got {missing_bin}.")
    for i in range(splits.shape[0]):
        goes_left_table(&splits[i], missing_bin, &view[i, 0])
    return out


def page_pass(
    const X_BINNED_DTYPE_C[::1, :] page,
    int[::1] row_keys,
    const int[::1] split_feature,
    const unsigned char[:, ::1] goes_left,
    const int[::1] left_child,
    const int[::1] right_child,
    const int[::1] slot_of_key,
    const G_H_DTYPE_C[::1] gradients,
    const G_H_DTYPE_C[::1] hessians,
    hist_struct[:, :, ::1] out,
    int n_threads,
):
    """One page of a pass, in one call: :func:`route_page` on ``row_keys`` (node
    keys, indexing the split arrays), then :func:`page_histograms` of the rows
    whose key has a slot in ``out`` (``slot_of_key``, -1: none)."""
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1]
    cdef Py_ssize_t n_slots = slot_of_key.shape[0]
    cdef bint constant = hessians is None
    if row_keys.shape[0] != n or gradients.shape[0] != n or (
            not constant and hessians.shape[0] != n):
        raise ValueError("page_pass: one key, gradient and hessian per row.")
    _check_splits(split_feature, goes_left, left_child, right_child, n_features, "page_pass")
    if out.shape[1] != n_features or out.shape[2] < 256:
        raise ValueError("page_pass: out needs (n_slots, n_features, 256) bins.")
    if n == 0:
        return
    if split_feature.shape[0] == 0 or np.max(row_keys) >= min(split_feature.shape[0], n_slots) or \
            np.max(slot_of_key) >= out.shape[0] or \
            np.max(left_child) >= n_slots or np.max(right_child) >= n_slots:
        raise ValueError("page_pass: keys, features or slots out of range.")
    cdef int status = 0
    with nogil:
        _route(&page[0, 0], n, &row_keys[0], &split_feature[0], &goes_left[0, 0],
               &left_child[0], &right_child[0], n_threads)
        if out.shape[0]:
            status = _add_rows(&page[0, 0], n, n_features, &row_keys[0], &slot_of_key[0],
                               &gradients[0], NULL if constant else &hessians[0], constant,
                               &out[0, 0, 0], out.shape[2], n_threads)
    if status < 0:
        raise MemoryError("page_pass: out of memory.")
