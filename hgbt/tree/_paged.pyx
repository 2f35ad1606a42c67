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

Not wired into training yet: the pass-based grower is the next step.
"""
from cython.parallel cimport prange

import numpy as np

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, hist_struct

# Rows x features below which a page's pass runs on one thread.
DEF MIN_PARALLEL_WORK = 65536


cdef void _feature_pass(
    const X_BINNED_DTYPE_C* col, Py_ssize_t n, const int* node_of_row,
    const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant_hessian,
    hist_struct* out, Py_ssize_t node_stride,
) noexcept nogil:
    # out + node * node_stride: the node's histogram of this feature
    cdef Py_ssize_t i
    cdef int k
    cdef hist_struct* bin_
    for i in range(n):
        k = node_of_row[i]
        if k < 0:
            continue
        bin_ = out + k * node_stride + col[i]
        bin_.sum_gradients += g[i]
        if not constant_hessian:
            bin_.sum_hessians += h[i]
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
    with nogil:
        if n * n_features < MIN_PARALLEL_WORK or n_threads <= 1:
            for f in range(n_features):
                _feature_pass(X + f * n, n, &node_of_row[0], &gradients[0], h, constant,
                              &out[0, f, 0], node_stride)
        else:
            for f in prange(n_features, schedule='static', num_threads=n_threads):
                _feature_pass(X + f * n, n, &node_of_row[0], &gradients[0], h, constant,
                              &out[0, f, 0], node_stride)


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
