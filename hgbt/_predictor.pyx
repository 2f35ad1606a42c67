"""Kernels: apply trees to raw values, or add leaf values to training rows.

Categorical nodes hold an index into the tree's ``cat_bitsets`` array
(shape (n, 8), uint32): a value goes left iff it is an integer code 0..255
whose bit is set. NaN, negative, non-integer and larger values follow
``missing_go_to_left``; the grower sets the bits of categories unknown at fit
time to the missing direction, so they follow it too.
"""
from cython cimport floating
from cython.parallel cimport prange
import numpy as np

from ._types cimport node_struct, Y_DTYPE_C, SIZE_C, X_BINNED_DTYPE_C, BITSET_WORD_C

# Stand-in bitset array for trees without categorical splits (never read).
cdef BITSET_WORD_C _NO_BITSETS[8]


cdef inline bint _in_bitset(const BITSET_WORD_C* bitset, unsigned int code) noexcept nogil:
    return (bitset[code >> 5] >> (code & 31)) & 1


cdef inline const BITSET_WORD_C* _bitsets_ptr(const BITSET_WORD_C[:, ::1] cat_bitsets):
    if cat_bitsets is None or cat_bitsets.shape[0] == 0:
        return &_NO_BITSETS[0]
    if cat_bitsets.shape[1] != 8:
        raise ValueError(f"cat_bitsets must have 8 columns, got {cat_bitsets.shape[1]}.")
    return &cat_bitsets[0, 0]

# Rows below which prediction runs without an OpenMP region (single-row
# latency matters).
DEF MIN_PARALLEL_ROWS = 2048


cdef inline Y_DTYPE_C _predict_one(
    const node_struct* nodes, const BITSET_WORD_C* bitsets, const floating[:, :] X,
    Py_ssize_t row,
) noexcept nogil:
    cdef const node_struct* node = nodes
    cdef double x
    cdef unsigned int code
    while not node.is_leaf:
        x = X[row, node.feature_idx]
        if x != x:  # NaN
            if node.missing_go_to_left:
                node = &nodes[node.left]
            else:
                node = &nodes[node.right]
        elif node.is_categorical:
            if x >= 0.0 and x < 256.0 and x == <double> <unsigned int> x:
                code = <unsigned int> x
                if _in_bitset(&bitsets[8 * node.bitset_idx], code):
                    node = &nodes[node.left]
                else:
                    node = &nodes[node.right]
            elif node.missing_go_to_left:
                node = &nodes[node.left]
            else:
                node = &nodes[node.right]
        elif x <= node.num_threshold:
            node = &nodes[node.left]
        else:
            node = &nodes[node.right]
    return node.value


def predict_add(
    const node_struct[::1] nodes,
    const floating[:, :] X,
    Y_DTYPE_C[::1] out,
    int n_threads,
    const BITSET_WORD_C[:, ::1] cat_bitsets=None,
):
    """``out[i] += tree(X[i])`` for every row (the tree's root is node 0).

    ``cat_bitsets`` (n, 8) uint32 holds the left sets of categorical nodes;
    None for a tree without any.
    """
    cdef Py_ssize_t n = X.shape[0], i
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        with nogil:
            for i in range(n):
                out[i] += _predict_one(&nodes[0], bitsets, X, i)
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            out[i] += _predict_one(&nodes[0], bitsets, X, i)


def add_leaf_values(
    Y_DTYPE_C[::1] raw_predictions,
    const SIZE_C[::1] rows,
    const SIZE_C[::1] leaf_starts,
    const SIZE_C[::1] leaf_stops,
    const Y_DTYPE_C[::1] leaf_values,
    int n_threads,
):
    """Add each leaf's value to the rows it holds, without traversing the tree.

    Leaf ``k`` holds ``rows[leaf_starts[k]:leaf_stops[k]]``; leaves are
    disjoint so threads write disjoint entries.
    """
    cdef Py_ssize_t n_leaves = leaf_values.shape[0], k
    cdef SIZE_C i
    cdef Y_DTYPE_C v
    # One thread for small trees' worth of rows: no team to wake.
    if rows.shape[0] < MIN_PARALLEL_ROWS * 8:
        n_threads = 1
    for k in prange(n_leaves, nogil=True, schedule='dynamic',
                    num_threads=n_threads):
        v = leaf_values[k]
        for i in range(leaf_starts[k], leaf_stops[k]):
            raw_predictions[rows[i]] += v


cdef inline Y_DTYPE_C _predict_one_binned(
    const node_struct* nodes, const BITSET_WORD_C* bitsets,
    const X_BINNED_DTYPE_C[::1, :] X_binned, SIZE_C row, X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    cdef const node_struct* node = nodes
    cdef X_BINNED_DTYPE_C b
    while not node.is_leaf:
        b = X_binned[row, node.feature_idx]
        if b == missing_bin:
            if node.missing_go_to_left:
                node = &nodes[node.left]
            else:
                node = &nodes[node.right]
        elif node.is_categorical:  # bin = category code
            if _in_bitset(&bitsets[8 * node.bitset_idx], b):
                node = &nodes[node.left]
            else:
                node = &nodes[node.right]
        elif b <= node.bin_threshold:
            node = &nodes[node.left]
        else:
            node = &nodes[node.right]
    return node.value


def predict_binned_add(
    const node_struct[::1] nodes,
    const X_BINNED_DTYPE_C[::1, :] X_binned,
    const SIZE_C[::1] rows,
    X_BINNED_DTYPE_C missing_bin,
    Y_DTYPE_C[::1] out,
    int n_threads,
    const BITSET_WORD_C[:, ::1] cat_bitsets=None,
):
    """``out[r] += tree(X_binned[r])`` for the rows ``rows`` (binned routing).

    For training rows a tree did not see (row sampling): same routing as on
    raw values, since x <= threshold[b] exactly when bin(x) <= b, and a
    categorical bin is the category code.
    """
    cdef Py_ssize_t n = rows.shape[0], i
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        with nogil:
            for i in range(n):
                out[rows[i]] += _predict_one_binned(&nodes[0], bitsets, X_binned,
                                                    rows[i], missing_bin)
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            out[rows[i]] += _predict_one_binned(&nodes[0], bitsets, X_binned,
                                                rows[i], missing_bin)


def predict_forest_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    const floating[:, :] X,
    Y_DTYPE_C[:, ::1] out,
    int n_threads,
):
    """``out[tree_outputs[t], i] += tree_t(X[i])`` for every row and tree, in one call.

    The trees' node arrays are concatenated in ``nodes`` (tree ``t``'s root at
    ``tree_starts[t]``, child indices local to the tree) and their bitsets in
    ``cat_bitsets`` (tree ``t``'s from row ``bitset_starts[t]``). Each output
    adds its trees in order, as tree-by-tree prediction does, so the result is
    bit-identical to it; without a Python call per tree, small inputs are fast.
    """
    cdef Py_ssize_t n = X.shape[0], n_trees = tree_starts.shape[0], i, t
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    if tree_outputs.shape[0] != n_trees or bitset_starts.shape[0] != n_trees:
        raise ValueError("tree_starts, tree_outputs and bitset_starts must have one "
                         "entry per tree.")
    if out.shape[1] != n:
        raise ValueError(f"out has {out.shape[1]} columns for {n} rows.")
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        with nogil:
            for i in range(n):
                for t in range(n_trees):
                    out[tree_outputs[t], i] += _predict_one(
                        &nodes[tree_starts[t]], &bitsets[8 * bitset_starts[t]], X, i)
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            for t in range(n_trees):
                out[tree_outputs[t], i] += _predict_one(
                    &nodes[tree_starts[t]], &bitsets[8 * bitset_starts[t]], X, i)
