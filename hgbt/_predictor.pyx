"""Kernels: apply trees to raw values, or add leaf values to training rows.

Categorical nodes hold an index into the tree's ``cat_bitsets`` array
(shape (n, 8), uint32): a value goes left iff it is an integer code 0..255
whose bit is set. NaN, negative, non-integer and larger values follow
``missing_go_to_left``; the grower sets the bits of categories unknown at fit
time to the missing direction, so they follow it too.

Sparse (CSR) input takes the same traversal: each thread scatters a row into a
dense scratch row of zeros, walks the trees and zeroes the touched entries
again, so results are bit-identical to the dense kernels on ``X.toarray()``.
"""
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
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


# scipy's CSR index arrays are int32 or int64 (independently for indices and
# indptr when a caller converted only one of them).
ctypedef fused index_t:
    int
    long long

ctypedef fused indptr_t:
    int
    long long


cdef inline Y_DTYPE_C _predict_row(
    const node_struct* nodes, const BITSET_WORD_C* bitsets, const floating* row,
    Py_ssize_t stride,
) noexcept nogil:
    """The leaf value of one row; feature ``f`` is at byte offset ``f * stride``
    from ``row`` (byte strides: any NumPy layout, and the sparse scratch row)."""
    cdef const node_struct* node = nodes
    cdef const char* base = <const char*> row
    cdef double x
    cdef unsigned int code
    while not node.is_leaf:
        x = (<const floating*> (base + <Py_ssize_t> node.feature_idx * stride))[0]
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
    cdef Py_ssize_t n = X.shape[0], i, stride = X.strides[1]
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        with nogil:
            for i in range(n):
                out[i] += _predict_row(&nodes[0], bitsets, &X[i, 0], stride)
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            out[i] += _predict_row(&nodes[0], bitsets, &X[i, 0], stride)


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


cdef _check_forest(Py_ssize_t n_trees, const int[::1] tree_outputs,
                   const long long[::1] bitset_starts, Y_DTYPE_C[:, ::1] out, Py_ssize_t n):
    if tree_outputs.shape[0] != n_trees or bitset_starts.shape[0] != n_trees:
        raise ValueError("tree_starts, tree_outputs and bitset_starts must have one "
                         "entry per tree.")
    if out.shape[1] != n:
        raise ValueError(f"out has {out.shape[1]} columns for {n} rows.")


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
    cdef Py_ssize_t stride = X.strides[1]
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    _check_forest(n_trees, tree_outputs, bitset_starts, out, n)
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        with nogil:
            for i in range(n):
                for t in range(n_trees):
                    out[tree_outputs[t], i] += _predict_row(
                        &nodes[tree_starts[t]], &bitsets[8 * bitset_starts[t]],
                        &X[i, 0], stride)
    else:
        for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
            for t in range(n_trees):
                out[tree_outputs[t], i] += _predict_row(
                    &nodes[tree_starts[t]], &bitsets[8 * bitset_starts[t]],
                    &X[i, 0], stride)


cdef Py_ssize_t _check_csr(
    const floating[::1] data, const index_t[::1] indices, const indptr_t[::1] indptr,
    Py_ssize_t n_features,
) except -1:
    """Number of rows of a CSR matrix; ValueError for anything the kernels would
    read out of bounds (they trust every index)."""
    cdef Py_ssize_t n, k, bad = -1
    if indptr.shape[0] < 1:
        raise ValueError("indptr must have n_rows + 1 entries, got an empty array.")
    if n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}.")
    n = indptr.shape[0] - 1
    with nogil:
        for k in range(n):
            if indptr[k + 1] < indptr[k]:
                bad = k
                break
    if indptr[0] < 0 or bad >= 0:
        raise ValueError("indptr must be non-decreasing and start at 0 or more.")
    if indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        raise ValueError(f"indptr ends at {indptr[n]} but indices has {indices.shape[0]} "
                         f"and data {data.shape[0]} entries.")
    with nogil:
        for k in range(<Py_ssize_t> indptr[0], <Py_ssize_t> indptr[n]):
            if indices[k] < 0 or indices[k] >= n_features:
                bad = k
                break
    if bad >= 0:
        raise ValueError(f"Column index {indices[bad]} out of range for "
                         f"{n_features} features.")
    return n


cdef inline void _csr_row_add(
    const node_struct* nodes, const long long* tree_starts, const int* tree_outputs,
    const long long* bitset_starts, Py_ssize_t n_trees, const BITSET_WORD_C* bitsets,
    const floating* data, const index_t* indices, Py_ssize_t start, Py_ssize_t stop,
    double* row, Y_DTYPE_C* out, Py_ssize_t out_stride,
) noexcept nogil:
    """``out[tree_outputs[t] * out_stride] += tree_t(row)`` for one CSR row.

    ``row`` is all zeros on entry and on exit: only the row's entries are
    written and then reset, so a row costs its nnz plus the traversals.
    """
    cdef Py_ssize_t k, t
    for k in range(start, stop):
        row[indices[k]] = data[k]  # float32 -> double as the dense kernel reads it
    for t in range(n_trees):
        out[tree_outputs[t] * out_stride] += _predict_row(
            &nodes[tree_starts[t]], &bitsets[8 * bitset_starts[t]],
            <const double*> row, sizeof(double))
    for k in range(start, stop):
        row[indices[k]] = 0.0


cdef void _csr_add(
    const node_struct* nodes, const long long* tree_starts, const int* tree_outputs,
    const long long* bitset_starts, Py_ssize_t n_trees, const BITSET_WORD_C* bitsets,
    const floating* data, const index_t* indices, const indptr_t* indptr, Py_ssize_t n,
    double[:, ::1] scratch, Y_DTYPE_C* out, Py_ssize_t out_stride, int n_threads,
) noexcept nogil:
    """Every row of a CSR matrix through every tree; row ``i`` adds to
    ``out[i]`` (plus the tree's output offset). Thread ``j`` uses ``scratch[j]``."""
    cdef Py_ssize_t i
    if n < MIN_PARALLEL_ROWS or n_threads == 1:
        for i in range(n):
            _csr_row_add(nodes, tree_starts, tree_outputs, bitset_starts, n_trees,
                         bitsets, data, indices, indptr[i], indptr[i + 1],
                         &scratch[0, 0], &out[i], out_stride)
    else:
        with parallel(num_threads=n_threads):
            for i in prange(n, schedule='static'):
                _csr_row_add(nodes, tree_starts, tree_outputs, bitset_starts, n_trees,
                             bitsets, data, indices, indptr[i], indptr[i + 1],
                             &scratch[threadid(), 0], &out[i], out_stride)


cdef double[:, ::1] _scratch(Py_ssize_t n, int n_threads, Py_ssize_t n_features):
    """Zeroed scratch rows, one per thread. Rows are padded to whole cache lines
    plus one so that threads never write the same line (false sharing)."""
    cdef Py_ssize_t n_rows = 1 if n < MIN_PARALLEL_ROWS or n_threads == 1 else n_threads
    return np.zeros((n_rows, (n_features + 7) // 8 * 8 + 8), dtype=np.float64)


def predict_csr_add(
    const node_struct[::1] nodes,
    const floating[::1] data,
    const index_t[::1] indices,
    const indptr_t[::1] indptr,
    Py_ssize_t n_features,
    Y_DTYPE_C[::1] out,
    int n_threads,
    const BITSET_WORD_C[:, ::1] cat_bitsets=None,
):
    """``out[i] += tree(X[i])`` for every row of the CSR matrix
    ``X = (data, indices, indptr)`` with ``n_features`` columns.

    Bit-identical to ``predict_add`` on ``X.toarray()``: implicit entries are
    0.0, stored NaN is missing. Indices need not be sorted; a column stored
    twice in a row keeps its last value (``toarray`` would sum them).
    """
    cdef Py_ssize_t n = _check_csr(data, indices, indptr, n_features)
    cdef long long zero64 = 0
    cdef int zero32 = 0
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} entries for {n} rows.")
    if n == 0:
        return
    if n_threads < 1:
        n_threads = 1
    cdef double[:, ::1] scratch = _scratch(n, n_threads, n_features)
    with nogil:
        # one tree: the forest kernel with a single tree, output 0 (out_stride unused)
        _csr_add(&nodes[0], &zero64, &zero32, &zero64, 1, bitsets,
                 &data[0] if data.shape[0] else NULL,
                 &indices[0] if indices.shape[0] else NULL,
                 &indptr[0], n, scratch, &out[0], 0, n_threads)


def predict_forest_csr_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    const floating[::1] data,
    const index_t[::1] indices,
    const indptr_t[::1] indptr,
    Py_ssize_t n_features,
    Y_DTYPE_C[:, ::1] out,
    int n_threads,
):
    """``predict_forest_add`` for the CSR matrix ``X = (data, indices, indptr)``
    with ``n_features`` columns: bit-identical to it on ``X.toarray()``."""
    cdef Py_ssize_t n = _check_csr(data, indices, indptr, n_features)
    cdef Py_ssize_t n_trees = tree_starts.shape[0]
    cdef const BITSET_WORD_C* bitsets = _bitsets_ptr(cat_bitsets)
    _check_forest(n_trees, tree_outputs, bitset_starts, out, n)
    if n == 0 or n_trees == 0:
        return
    if n_threads < 1:
        n_threads = 1
    cdef double[:, ::1] scratch = _scratch(n, n_threads, n_features)
    with nogil:
        _csr_add(&nodes[0], &tree_starts[0], &tree_outputs[0], &bitset_starts[0],
                 n_trees, bitsets,
                 &data[0] if data.shape[0] else NULL,
                 &indices[0] if indices.shape[0] else NULL,
                 &indptr[0], n, scratch, &out[0, 0], out.strides[0] // sizeof(double),
                 n_threads)
