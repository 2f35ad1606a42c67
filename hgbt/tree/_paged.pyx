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

import numpy as np

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, hist_struct, split_info_struct
from ._rules cimport goes_left_table

# Rows x features below which a page's pass runs on one thread.
DEF MIN_PARALLEL_WORK = 65536


cdef void _feature_pass(
    const X_BINNED_DTYPE_C* col, const Py_ssize_t* rows, Py_ssize_t n,
    const int* node_of_row, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h,
    bint constant_hessian, hist_struct* out, Py_ssize_t node_stride,
) noexcept nogil:
    # the rows ``rows[:n]`` (those with a node) added to their node's
    # histogram of this feature: out + node * node_stride
    cdef Py_ssize_t i, r
    cdef hist_struct* bin_
    for i in range(n):
        r = rows[i]
        bin_ = out + node_of_row[r] * node_stride + col[r]
        bin_.sum_gradients += g[r]
        if not constant_hessian:
            bin_.sum_hessians += h[r]
        bin_.count += 1


cdef void _gathered_pass(
    const X_BINNED_DTYPE_C* col, const Py_ssize_t* rows, Py_ssize_t n, const int* slot,
    const G_H_DTYPE_C* og, const G_H_DTYPE_C* oh, bint constant_hessian, hist_struct* out,
    Py_ssize_t node_stride,
) noexcept nogil:
    # _feature_pass with the i-th added row's slot, gradient and hessian at i
    cdef Py_ssize_t i
    cdef hist_struct* bin_
    for i in range(n):
        bin_ = out + slot[i] * node_stride + col[rows[i]]
        bin_.sum_gradients += og[i]
        if not constant_hessian:
            bin_.sum_hessians += oh[i]
        bin_.count += 1


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
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1], f
    cdef Py_ssize_t n_bins = out.shape[2], node_stride = out.shape[1] * out.shape[2]
    cdef bint constant = hessians is None
    if node_of_row.shape[0] != n or gradients.shape[0] != n or (
            not constant and hessians.shape[0] != n):
        raise ValueError("page_histograms: one node, gradient and hessian per row.")
    if out.shape[1] != n_features or n_bins < 256:
        raise ValueError("page_histograms: out needs (n_nodes, n_features, 256) bins.")
    if n == 0 or n_features == 0:
        return
    if out.shape[0] == 0 or np.max(node_of_row) >= out.shape[0]:
        raise ValueError("page_histograms: a row's node is past out's nodes.")
    cdef const X_BINNED_DTYPE_C* X = &page[0, 0]
    cdef const G_H_DTYPE_C* h = NULL if constant else &hessians[0]
    # the rows that have a node, once: a pass builds only its nodes' smaller
    # children, so most rows have none and no feature should look at them
    rows = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] rows_view = rows
    cdef Py_ssize_t m = 0, i
    with nogil:
        for i in range(n):
            if node_of_row[i] >= 0:
                rows_view[m] = i
                m += 1
        if m == 0:
            pass
        elif m * n_features < MIN_PARALLEL_WORK or n_threads <= 1:
            for f in range(n_features):
                _feature_pass(X + f * n, &rows_view[0], m, &node_of_row[0], &gradients[0], h,
                              constant, &out[0, f, 0], node_stride)
        else:
            for f in prange(n_features, schedule='static', num_threads=n_threads):
                _feature_pass(X + f * n, &rows_view[0], m, &node_of_row[0], &gradients[0], h,
                              constant, &out[0, f, 0], node_stride)


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
    cdef Py_ssize_t n = page.shape[0], i
    cdef int k, f, n_nodes = split_feature.shape[0]
    if node_of_row.shape[0] != n:
        raise ValueError("route_page: one node per row.")
    if goes_left.shape[0] != n_nodes or goes_left.shape[1] != 256 or \
            left_child.shape[0] != n_nodes or right_child.shape[0] != n_nodes:
        raise ValueError("route_page: a split feature, a 256-bin table and two children "
                         "per node.")
    if n_nodes and np.max(split_feature) >= page.shape[1]:
        raise ValueError("route_page: a split feature past the page's features.")
    if n == 0:
        return
    if np.max(node_of_row) >= n_nodes:
        raise ValueError("route_page: a row's node is past the nodes.")
    cdef const X_BINNED_DTYPE_C* X = &page[0, 0]
    with nogil:
        for i in prange(n, schedule='static', num_threads=n_threads
                        if n >= MIN_PARALLEL_WORK else 1):
            k = node_of_row[i]
            if k < 0:
                continue
            f = split_feature[k]
            if f < 0:
                continue
            if goes_left[k, X[f * n + i]]:
                node_of_row[i] = left_child[k]
            else:
                node_of_row[i] = right_child[k]


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
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1], i, m = 0, f
    cdef Py_ssize_t n_keys = split_feature.shape[0], n_slots = slot_of_key.shape[0]
    cdef Py_ssize_t node_stride = out.shape[1] * out.shape[2]
    cdef int k, s
    cdef bint constant = hessians is None
    if row_keys.shape[0] != n or gradients.shape[0] != n or (
            not constant and hessians.shape[0] != n):
        raise ValueError("page_pass: one key, gradient and hessian per row.")
    if goes_left.shape[0] != n_keys or goes_left.shape[1] != 256 or \
            left_child.shape[0] != n_keys or right_child.shape[0] != n_keys:
        raise ValueError("page_pass: a split feature, a 256-bin table and two children "
                         "per key.")
    if out.shape[1] != n_features or out.shape[2] < 256:
        raise ValueError("page_pass: out needs (n_slots, n_features, 256) bins.")
    if n == 0:
        return
    if (n_keys and np.max(split_feature) >= n_features) or \
            np.max(row_keys) >= min(n_keys, n_slots) or \
            (n_slots and np.max(slot_of_key) >= out.shape[0]) or \
            np.max(left_child) >= n_slots or np.max(right_child) >= n_slots:
        raise ValueError("page_pass: keys, features or slots out of range.")
    cdef const X_BINNED_DTYPE_C* X = &page[0, 0]
    # the added rows' slots, gradients and hessians gathered once, in row
    # order, so that each feature's loop reads them in sequence
    rows = np.empty(n, dtype=np.intp)
    slots = np.empty(n, dtype=np.intc)
    ordered = np.empty((2, n), dtype=np.float32)
    cdef Py_ssize_t[::1] rows_view = rows
    cdef int[::1] slots_view = slots
    cdef G_H_DTYPE_C[:, ::1] ordered_view = ordered
    cdef G_H_DTYPE_C* og = &ordered_view[0, 0]
    cdef G_H_DTYPE_C* oh = &ordered_view[1, 0]
    with nogil:
        for i in prange(n, schedule='static', num_threads=n_threads
                        if n >= MIN_PARALLEL_WORK else 1):
            k = row_keys[i]
            if k >= 0 and split_feature[k] >= 0:
                if goes_left[k, X[split_feature[k] * n + i]]:
                    row_keys[i] = left_child[k]
                else:
                    row_keys[i] = right_child[k]
        for i in range(n):  # the rows to add, with their slots
            k = row_keys[i]
            s = slot_of_key[k] if k >= 0 else -1
            if s >= 0:
                rows_view[m] = i
                slots_view[m] = s
                og[m] = gradients[i]
                if not constant:
                    oh[m] = hessians[i]
                m += 1
        if m == 0 or out.shape[0] == 0:
            pass
        elif m * n_features < MIN_PARALLEL_WORK or n_threads <= 1:
            for f in range(n_features):
                _gathered_pass(X + f * n, &rows_view[0], m, &slots_view[0], og, oh, constant,
                               &out[0, f, 0], node_stride)
        else:
            for f in prange(n_features, schedule='static', num_threads=n_threads):
                _gathered_pass(X + f * n, &rows_view[0], m, &slots_view[0], og, oh, constant,
                               &out[0, f, 0], node_stride)
