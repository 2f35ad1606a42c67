"""Kernels: apply trees to raw values, or add leaf values to training rows;
and the predictor's node array made from a grown tree's records.

Categorical nodes hold an index into the tree's ``cat_bitsets`` array
(shape (n, 8), uint32): a value goes left iff it is an integer code 0..255
whose bit is set. NaN, negative, non-integer and larger values follow
``missing_go_to_left``; the grower sets the bits of categories unknown at fit
time to the missing direction, so they follow it too.

Sparse (CSR) input takes the same traversal: each thread scatters a row into a
dense scratch row of zeros, walks the trees and zeroes the touched entries
again, so results are bit-identical to the dense kernels on ``X.toarray()``.

Dense batches of rows walk a packed copy of the forest instead (``pack_forest``,
``predict_forest_packed_add``, at the end): the same routing on order-preserving
integer keys, bit-identical sums, several times faster.
"""
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
import numpy as np

from libc.math cimport NAN

from ..core._types cimport (node_struct, grown_node_struct, split_info_struct, Y_DTYPE_C,
                            X_DTYPE_C, SIZE_C, X_BINNED_DTYPE_C, BITSET_WORD_C)
from ..core._types import BITSET_DTYPE, NODE_DTYPE
from ._routing cimport goes_left, in_bitset as _in_bitset

# Stand-in bitset array for trees without categorical splits (never read).
cdef BITSET_WORD_C _NO_BITSETS[8]


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
    while not node.is_leaf:
        x = (<const floating*> (base + <Py_ssize_t> node.feature_idx * stride))[0]
        if goes_left(node, bitsets, x):  # routing rules: _routing.pxd
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


def nodes_from_grown(
    const grown_node_struct[::1] grown,
    double learning_rate,
    const X_DTYPE_C[:, ::1] thresholds,
    const BITSET_WORD_C[:, ::1] known_cat_bitsets,
):
    """The predictor's node array of a grown tree, its bitsets and leaves.

    ``grown``: the grower's records (GROWN_NODE_DTYPE), node ``i`` a leaf iff
    its ``left`` is negative. Values are shrunk by ``learning_rate``; a
    numeric split's ``num_threshold`` is ``thresholds[feature, bin]`` (the
    bin's upper edge); categorical splits get their left sets in order, the
    codes unseen at fit time (not in ``known_cat_bitsets[feature]``, if
    given) added where missing values go left. Returns ``(nodes, bitsets of
    shape (n_categorical, 8), leaf ids as a list)``.
    """
    cdef Py_ssize_t n = grown.shape[0], i, n_cat = 0
    cdef int w
    for i in range(n):
        n_cat += grown[i].left >= 0 and grown[i].split.is_categorical != 0
    nodes_array = np.zeros(n, dtype=NODE_DTYPE)
    bitsets_array = np.zeros((n_cat, 8), dtype=BITSET_DTYPE)
    cdef node_struct[::1] nodes = nodes_array
    cdef BITSET_WORD_C[:, ::1] bitsets = bitsets_array
    cdef bint add_unknown = known_cat_bitsets is not None
    cdef const split_info_struct* split
    leaves = []
    n_cat = 0
    for i in range(n):
        nodes[i].value = learning_rate * grown[i].value
        nodes[i].count = grown[i].count
        # the histograms' sum: true scale (quantized lanes are scaled back,
        # a constant hessian is count x its value)
        nodes[i].sum_hessians = grown[i].sum_hessians
        nodes[i].depth = grown[i].depth
        if grown[i].left < 0:
            nodes[i].is_leaf = 1
            leaves.append(i)
            continue
        split = &grown[i].split
        nodes[i].feature_idx = split.feature_idx
        nodes[i].missing_go_to_left = split.missing_go_to_left
        nodes[i].gain = split.gain
        nodes[i].left = grown[i].left
        nodes[i].right = grown[i].right
        if split.is_categorical:
            nodes[i].is_categorical = 1
            nodes[i].num_threshold = NAN
            nodes[i].bitset_idx = n_cat
            for w in range(8):
                bitsets[n_cat, w] = split.cat_bitset[w]
                if add_unknown and split.missing_go_to_left:
                    bitsets[n_cat, w] |= ~known_cat_bitsets[split.feature_idx, w]
            n_cat += 1
        else:
            nodes[i].bin_threshold = split.bin_idx
            nodes[i].num_threshold = thresholds[split.feature_idx, split.bin_idx]
    return nodes_array, bitsets_array, leaves


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


# ----------------------------------------------------------------- packed forest
# Batch prediction walks a compact copy of the forest (``pack_forest``). A block
# of rows is first turned into order-preserving unsigned keys, stored by
# "slot" (a feature the forest reads, with NaN as the smallest or the largest
# key, or as a category code). A step is then a single integer compare plus
# index arithmetic, without branches: the children of a node are adjacent
# (right = left + 1) and a leaf loops to itself, so LANES rows walk a tree in
# lockstep for as many steps as the tree is deep (unrolled, their loads overlap).
# About 7 instructions a step, against a mispredicted branch per node before.
from libc.stdint cimport uint64_t, uint32_t, uint8_t
from libc.string cimport memcpy

cdef packed struct cnode:
    uint64_t threshold  # go right iff key > threshold (a leaf, categorical: 2**64 - 1)
    uint32_t slot       # the slot's keys start at slot * BLOCK in a block
    uint32_t left       # local index of the left child; a leaf: its own

CNODE_DTYPE = np.dtype([("threshold", np.uint64), ("slot", np.uint32), ("left", np.uint32)])
assert CNODE_DTYPE.itemsize == sizeof(cnode)

DEF LANES = 8       # rows walking a tree together: 16 measured no faster
DEF BLOCK = 32      # rows through every tree before the next (64: same speed)
DEF CAT_WORDS = 16  # a node's go-right bits: 256 codes + 1 (invalid), padded to 16

# Slot kinds: NaN goes left (key 0), right (key 2**64 - 1), a category code.
DEF SLOT_NAN_LEFT = 0
DEF SLOT_NAN_RIGHT = 1
DEF SLOT_CODE = 2


cdef inline uint64_t _key(double x) noexcept nogil:
    """Unsigned key in the order of the values: 2**52 - 1 (-inf) to 2**64 - 2**52
    (+inf); -0.0 one below 0.0. Not for NaN."""
    cdef uint64_t b
    memcpy(&b, &x, 8)
    return b ^ ((0 - (b >> 63)) | (<uint64_t> 1 << 63))


def pack_forest(const node_struct[::1] nodes, const long long[::1] tree_starts,
                const long long[::1] bitset_starts, const BITSET_WORD_C[:, ::1] cat_bitsets):
    """The forest packed for ``predict_forest_packed_add``, from the trees
    concatenated as for ``predict_forest_add``.

    Returns ``(cnodes, values, depths, bits, slot_features, slot_kinds)``:
    compact nodes (tree ``t`` keeps offset ``tree_starts[t]``, its nodes
    renumbered breadth first), leaf values by node, tree depths, each node's
    go-right bits (shape (n_nodes, 16) if any node is categorical, else (1,
    16)) and the feature and kind of each slot. None if a threshold is NaN
    (the reference kernel sends every number right there; keys cannot).
    """
    cdef Py_ssize_t n_nodes = nodes.shape[0], n_trees = tree_starts.shape[0]
    cdef Py_ssize_t t, base, size, head, count, o, j, row, w, depth
    cdef const node_struct* nd
    cdef cnode* pk
    cdef int kind
    cnodes_arr = np.zeros(n_nodes, dtype=CNODE_DTYPE)
    values_arr = np.zeros(n_nodes, dtype=np.float64)
    depths_arr = np.zeros(n_trees, dtype=np.intp)
    order_arr = np.zeros((max(n_nodes, 1), 2), dtype=np.intp)  # (node, depth)
    cdef cnode* cnodes = <cnode*> <size_t> cnodes_arr.ctypes.data
    cdef double[::1] values = values_arr
    cdef Py_ssize_t[::1] depths = depths_arr
    cdef Py_ssize_t[:, ::1] order = order_arr
    cdef bint has_cat = False
    for j in range(n_nodes):
        has_cat |= nodes[j].is_categorical and not nodes[j].is_leaf
    bits_arr = np.zeros((n_nodes if has_cat else 1, CAT_WORDS), dtype=np.uint32)
    cdef uint32_t[:, ::1] bits = bits_arr
    slots = {}  # (feature, kind) -> slot
    for t in range(n_trees):
        base = tree_starts[t]
        size = (tree_starts[t + 1] if t + 1 < n_trees else n_nodes) - base
        if base < 0 or size <= 0 or base + size > n_nodes:
            raise ValueError("tree_starts must be increasing offsets into nodes.")
        # breadth first: each internal node's children take the next two places
        order[0, 0], order[0, 1] = 0, 0
        head, count = 0, 1
        while head < count:
            o, depth = order[head, 0], order[head, 1]
            nd = &nodes[base + o]
            j = base + head
            pk = &cnodes[j]
            pk.threshold = ~(<uint64_t> 0)
            if nd.is_leaf:  # every key goes left: the leaf itself
                pk.slot = 0
                pk.left = head
                values[j] = nd.value
                if depth > depths[t]:
                    depths[t] = depth
            else:
                if count + 2 > size or nd.left >= size or nd.right >= size:
                    raise ValueError(f"Tree {t} is not a binary tree of {size} nodes.")
                if nd.is_categorical:
                    kind = SLOT_CODE
                    row = bitset_starts[t] + nd.bitset_idx
                    for w in range(8):
                        bits[j, w] = ~cat_bitsets[row, w]
                    bits[j, 8] = 0 if nd.missing_go_to_left else 1  # code 256
                else:
                    if nd.num_threshold != nd.num_threshold:
                        return None
                    kind = SLOT_NAN_LEFT if nd.missing_go_to_left else SLOT_NAN_RIGHT
                    # x <= T iff key(x) <= key(T) (-0.0 as 0.0: they are equal)
                    pk.threshold = _key(nd.num_threshold + 0.0)
                pk.slot = slots.setdefault((nd.feature_idx, kind), len(slots)) * BLOCK
                pk.left = count
                order[count, 0], order[count, 1] = nd.left, depth + 1
                order[count + 1, 0], order[count + 1, 1] = nd.right, depth + 1
                count += 2
            head += 1
    if len(slots) * BLOCK > 0xFFFFFFFF:
        return None
    slot_features = np.zeros(len(slots), dtype=np.intp)
    slot_kinds = np.zeros(len(slots), dtype=np.uint8)
    for (f, k), s in slots.items():
        slot_features[s], slot_kinds[s] = f, k
    return cnodes_arr, values_arr, depths_arr, bits_arr, slot_features, slot_kinds


cdef inline size_t _step(const cnode* tree, const uint32_t* bits, size_t i,
                         const uint64_t* keys, bint has_cat) noexcept nogil:
    """The child of ``tree[i]`` a row goes to (a leaf: itself); ``keys + s * BLOCK``
    is the row's key in slot ``s``."""
    cdef const cnode* nd = &tree[i]
    cdef uint64_t k = keys[nd.slot]
    cdef size_t right = k > nd.threshold
    if has_cat:
        # A categorical node's threshold sends every code left and its bits
        # send a code right; other nodes' bits are 0: no branch on the kind.
        right += (bits[i * CAT_WORDS + ((k >> 5) & (CAT_WORDS - 1))] >> (k & 31)) & 1
    return nd.left + right


cdef inline void _walk(const cnode* tree, const uint32_t* bits, const uint64_t* keys,
                       Py_ssize_t depth, size_t* leaves, bint has_cat) noexcept nogil:
    """The leaves of the LANES rows whose keys are at ``keys + lane``."""
    cdef size_t i0 = 0, i1 = 0, i2 = 0, i3 = 0, i4 = 0, i5 = 0, i6 = 0, i7 = 0
    cdef Py_ssize_t d
    for d in range(depth):
        i0 = _step(tree, bits, i0, keys, has_cat)
        i1 = _step(tree, bits, i1, keys + 1, has_cat)
        i2 = _step(tree, bits, i2, keys + 2, has_cat)
        i3 = _step(tree, bits, i3, keys + 3, has_cat)
        i4 = _step(tree, bits, i4, keys + 4, has_cat)
        i5 = _step(tree, bits, i5, keys + 5, has_cat)
        i6 = _step(tree, bits, i6, keys + 6, has_cat)
        i7 = _step(tree, bits, i7, keys + 7, has_cat)
    leaves[0], leaves[1], leaves[2], leaves[3] = i0, i1, i2, i3
    leaves[4], leaves[5], leaves[6], leaves[7] = i4, i5, i6, i7


cdef inline void _fill_block(const floating[:, :] X, Py_ssize_t start, Py_ssize_t nb,
                             const Py_ssize_t* slot_features, const uint8_t* slot_kinds,
                             Py_ssize_t n_slots, uint64_t* keys) noexcept nogil:
    """The keys of rows ``start:start + nb`` by slot. A category code is 256 for
    anything but an integer 0..255 (NaN too). Lanes past ``nb`` (up to a whole
    walk) get key 0; their leaves are not used."""
    cdef Py_ssize_t s, r, f, stop = (nb + LANES - 1) // LANES * LANES
    cdef double x
    cdef uint64_t nan_mask
    cdef uint64_t* col
    cdef uint8_t kind
    for s in range(n_slots):
        col = keys + s * BLOCK
        f, kind = slot_features[s], slot_kinds[s]
        for r in range(nb):
            x = X[start + r, f]
            if kind == SLOT_CODE:
                col[r] = (<unsigned int> x if x >= 0.0 and x < 256.0
                          and x == <double> <unsigned int> x else 256)
            else:
                nan_mask = 0 - <uint64_t> (x != x)
                if kind == SLOT_NAN_LEFT:
                    col[r] = _key(x) & ~nan_mask
                else:
                    col[r] = _key(x) | nan_mask
        for r in range(nb, stop):
            col[r] = 0


cdef inline void _packed_block(
    const cnode* cnodes, const double* values, const Py_ssize_t* depths,
    const uint32_t* bits, const long long* tree_starts, const int* tree_outputs,
    Py_ssize_t n_trees, const uint64_t* keys, Py_ssize_t nb, double* out,
    Py_ssize_t out_stride, bint has_cat,
) noexcept nogil:
    """``out[tree_outputs[t] * out_stride + r] += tree_t(row r)`` for the ``nb``
    rows of a filled block, trees in order: each row's sum as the reference's."""
    cdef size_t leaves[LANES]
    cdef Py_ssize_t g, t, l, m
    cdef const double* vals
    cdef double* o
    for t in range(n_trees):
        vals = values + tree_starts[t]
        o = out + tree_outputs[t] * out_stride
        for g in range(0, nb, LANES):
            _walk(cnodes + tree_starts[t], bits + tree_starts[t] * CAT_WORDS if has_cat
                  else bits, keys + g, depths[t], leaves, has_cat)
            m = nb - g if nb - g < LANES else LANES
            for l in range(m):
                o[g + l] += vals[leaves[l]]


def predict_forest_packed_add(
    const cnode[::1] cnodes,
    const double[::1] values,
    const Py_ssize_t[::1] depths,
    const uint32_t[:, ::1] bits,
    const Py_ssize_t[::1] slot_features,
    const uint8_t[::1] slot_kinds,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const floating[:, :] X,
    Y_DTYPE_C[:, ::1] out,
    int n_threads,
):
    """``predict_forest_add`` on the forest packed by ``pack_forest``: the same
    sums bit for bit, several times faster on many rows (any layout of X).

    Blocks of BLOCK rows go through every tree in order, their keys in L1;
    threads take whole blocks, so the result does not depend on their number.
    """
    cdef Py_ssize_t n = X.shape[0], n_trees = tree_starts.shape[0]
    cdef Py_ssize_t n_nodes = cnodes.shape[0], n_slots = slot_features.shape[0]
    cdef Py_ssize_t n_blocks = (n + BLOCK - 1) // BLOCK, b, start, nb, s
    cdef Py_ssize_t out_stride = out.strides[0] // sizeof(double)
    cdef bint has_cat = bits.shape[0] > 1
    cdef uint64_t* keys
    _check_forest(n_trees, tree_outputs, tree_starts, out, n)
    if values.shape[0] != n_nodes or slot_kinds.shape[0] != n_slots:
        raise ValueError("values and cnodes, slot_kinds and slot_features must have "
                         "the same length.")
    if bits.shape[1] != CAT_WORDS or bits.shape[0] not in (1, n_nodes):
        raise ValueError(f"bits must have shape (1 or {n_nodes}, {CAT_WORDS}).")
    for s in range(n_slots):
        if not 0 <= slot_features[s] < X.shape[1] or slot_kinds[s] > SLOT_CODE:
            raise ValueError(f"Slot {s} reads feature {slot_features[s]} (kind "
                             f"{slot_kinds[s]}); X has {X.shape[1]} features.")
    for s in range(n_trees):
        if not 0 <= tree_starts[s] < n_nodes:
            raise ValueError(f"Tree {s} starts at {tree_starts[s]}, past {n_nodes} nodes.")
    if n == 0 or n_trees == 0:
        return
    if n_threads < 1 or n < MIN_PARALLEL_ROWS:
        n_threads = 1
    # one slot more than read: leaves read slot 0 even where there is none
    cdef uint64_t[:, ::1] scratch = np.zeros((n_threads, (n_slots + 1) * BLOCK),
                                             dtype=np.uint64)
    # dynamic: a thread slowed by another process does not hold up the others
    with nogil, parallel(num_threads=n_threads):
        for b in prange(n_blocks, schedule='dynamic', chunksize=4):
            start = b * BLOCK
            nb = n - start if n - start < BLOCK else BLOCK
            keys = &scratch[threadid(), 0]
            _fill_block(X, start, nb, &slot_features[0] if n_slots else NULL,
                        &slot_kinds[0] if n_slots else NULL, n_slots, keys)
            if has_cat:
                _packed_block(&cnodes[0], &values[0], &depths[0], &bits[0, 0],
                              &tree_starts[0], &tree_outputs[0], n_trees, keys, nb,
                              &out[0, start], out_stride, True)
            else:
                _packed_block(&cnodes[0], &values[0], &depths[0], &bits[0, 0],
                              &tree_starts[0], &tree_outputs[0], n_trees, keys, nb,
                              &out[0, start], out_stride, False)
