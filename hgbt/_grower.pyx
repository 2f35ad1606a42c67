"""Kernel: grow a whole tree over local rows, with no Python between nodes.

The loop of ``grower.TreeGrower`` for the settings it covers (no
interaction constraints, no per-node column sampling, a leaf limit, every
feature its own column): best-first or level by level, only the smaller
child's histogram built from rows, the larger one by subtraction, the same
split search (``_splitting.find_split``), partition and histogram kernels,
the same order of nodes and ties. So it grows the same tree, bit for bit,
without taking the GIL: a thread is never idle while Python runs between
two kernels, and trees grown side by side (``tree_team``) never wait for
each other's Python.
"""
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset
import numpy as np

from ._types cimport (X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct, split_info_struct,
                      grown_node_struct)
from ._histogram cimport (histogram_root, histogram_rows, histogram_packed, subtract,
                          packed_params)
from ._partition cimport partition
from ._splitting cimport (find_split, bounded_value, set_split_params, split_params,
                          layout_params)

# Nodes of one tree at most (2 * max_leaf_nodes - 1); larger trees take the
# Python grower.
DEF MAX_NODES = 8191
MAX_LEAF_NODES = (MAX_NODES + 1) // 2


cdef struct source:
    # The rows a tree grows on and how their histograms are built.
    const X_BINNED_DTYPE_C* X  # n_samples x n_features bins, F-ordered
    SIZE_C n_samples
    int n_features
    int n_bins
    SIZE_C* rows  # the row-index array: node slices are partitioned in place
    SIZE_C* buffer
    # float histograms (packed == NULL)
    const G_H_DTYPE_C* gradients
    const G_H_DTYPE_C* hessians
    bint constant_hessian
    G_H_DTYPE_C* ordered_gradients
    G_H_DTYPE_C* ordered_hessians
    # packed quantized histograms
    const int64_t* packed
    packed_params q
    int64_t* acc
    int64_t* sums
    Py_ssize_t part_stride
    int max_parts
    const X_BINNED_DTYPE_C* X_rows  # NULL: never row-wise
    Py_ssize_t row_stride


cdef struct growth:
    bint lossguide
    int max_leaf_nodes
    int max_depth  # -1: none
    int n_threads


cdef class TreeKernel:
    """Grows trees on one training-data source's buffers (see ``grow``).

    Keeps a pool of histograms (``n_features`` x ``n_bins`` bins each)
    across trees, so growing allocates nothing once the pool is warm.
    """
    cdef hist_struct** _slots
    cdef int* _free
    cdef int _n_slots, _n_free, _capacity
    cdef Py_ssize_t _bins

    def __cinit__(self, int n_features, int n_bins):
        self._bins = <Py_ssize_t>max(n_features, 1) * n_bins
        self._slots = NULL
        self._free = NULL
        self._n_slots = self._n_free = self._capacity = 0

    def __dealloc__(self):
        cdef int i
        for i in range(self._n_slots):
            free(self._slots[i])
        free(self._slots)
        free(self._free)

    cdef int _take(self) noexcept nogil:
        # A free histogram slot, or -1 when memory ran out.
        cdef int capacity
        cdef hist_struct* slot
        cdef void* grown
        if self._n_free > 0:
            self._n_free -= 1
            return self._free[self._n_free]
        if self._n_slots == self._capacity:
            capacity = 2 * self._capacity + 8
            grown = realloc(self._slots, capacity * sizeof(hist_struct*))
            if grown == NULL:
                return -1
            self._slots = <hist_struct**>grown
            grown = realloc(self._free, capacity * sizeof(int))
            if grown == NULL:
                return -1
            self._free = <int*>grown
            self._capacity = capacity
        slot = <hist_struct*>malloc(self._bins * sizeof(hist_struct))
        if slot == NULL:
            return -1
        self._slots[self._n_slots] = slot
        self._n_slots += 1
        return self._n_slots - 1

    cdef inline void _release(self, int slot) noexcept nogil:
        self._free[self._n_free] = slot
        self._n_free += 1

    def grow(self, *, X_binned, rows, buffer, SIZE_C n_root, gradients=None,
             hessians=None, ordered_gradients=None, ordered_hessians=None, packed=None,
             exponents=None, layout=None, double constant_hessian=0.0,
             acc=None, sums=None, X_rows=None, n_bins_non_missing, int missing_bin,
             double l1_regularization, double l2_regularization,
             double min_gain_to_split, double min_child_weight,
             unsigned int min_samples_leaf, is_categorical=None,
             unsigned int max_cat_to_onehot=4, double cat_smooth=10.0,
             double cat_l2=10.0, unsigned int min_data_per_group=100,
             unsigned int max_cat_threshold=32, monotonic_cst=None, feature_mask=None,
             bint lossguide=True, int max_leaf_nodes=31, max_depth=None,
             int n_threads=1, nodes, per_feature):
        """Grow one tree on the rows ``rows[:n_root]``; returns its node count.

        Histograms come from ``gradients``/``hessians`` (snapped to their
        grid; ``hessians`` of length 1: constant), or, with ``packed``, from
        packed quantized gradients (``exponents``, ``layout`` and the
        buffers of ``build_histogram_packed``). The split search takes
        ``find_node_split``'s settings. ``nodes`` (GROWN_NODE_DTYPE, at
        least ``2 * max_leaf_nodes - 1`` entries) receives the nodes in
        ``TreeGrower``'s order, with each node's rows at
        ``rows[start:stop]`` once the tree is grown.
        """
        cdef const X_BINNED_DTYPE_C[::1, :] X = X_binned
        cdef SIZE_C[::1] rows_view = rows, buffer_view = buffer
        cdef const unsigned int[::1] n_bins_view = n_bins_non_missing
        cdef grown_node_struct[::1] node_view = nodes
        cdef split_info_struct[::1] scratch = per_feature
        cdef const G_H_DTYPE_C[::1] g_view, h_view
        cdef G_H_DTYPE_C[::1] og_view, oh_view
        cdef const int64_t[::1] packed_view
        cdef int64_t[:, ::1] acc_view, sums_view
        cdef const X_BINNED_DTYPE_C[:, ::1] rows_major
        cdef const unsigned char[::1] categorical, mask
        cdef const signed char[::1] monotonic
        cdef source src
        cdef growth grow
        cdef split_params p
        cdef layout_params lay
        cdef const unsigned char* categorical_ptr = NULL
        cdef const unsigned char* mask_ptr = NULL
        cdef int n_nodes
        n_features = X.shape[1]
        if (n_features == 0 or X.shape[0] == 0 or n_root == 0 or n_root > X.shape[0]
                or rows_view.shape[0] < X.shape[0] or buffer_view.shape[0] < X.shape[0]
                or n_bins_view.shape[0] != n_features or scratch.shape[0] < n_features
                or node_view.shape[0] < 2 * max_leaf_nodes - 1 or max_leaf_nodes < 2
                or missing_bin + 1 > 256
                or self._bins != <Py_ssize_t>n_features * (missing_bin + 1)):
            raise ValueError("TreeKernel.grow: inconsistent shapes.")
        src.X = &X[0, 0]
        src.n_samples = X.shape[0]
        src.n_features = n_features
        src.n_bins = missing_bin + 1
        src.rows = &rows_view[0]
        src.buffer = &buffer_view[0]
        src.packed = NULL
        src.X_rows = NULL
        src.row_stride = 0
        if packed is None:
            g_view, h_view = gradients, hessians
            og_view, oh_view = ordered_gradients, ordered_hessians
            src.gradients, src.hessians = &g_view[0], &h_view[0]
            src.constant_hessian = h_view.shape[0] == 1
            src.ordered_gradients = &og_view[0]
            src.ordered_hessians = &oh_view[0]
        else:
            packed_view = packed
            acc_view, sums_view = acc, sums
            if (packed_view.shape[0] < X.shape[0] or acc_view.shape[1] < n_features * 256
                    or sums_view.shape[1] != 3 * acc_view.shape[1]):
                raise ValueError("TreeKernel.grow: inconsistent packed buffers.")
            src.packed = &packed_view[0]
            src.q.g_exponent, src.q.h_exponent = exponents
            src.q.h_shift, src.q.g_shift, src.q.block_rows = layout
            src.q.constant_hessian = constant_hessian
            src.acc, src.sums = &acc_view[0, 0], &sums_view[0, 0]
            src.part_stride = acc_view.shape[1]
            src.max_parts = acc_view.shape[0]
            if X_rows is not None:
                rows_major = X_rows
                if rows_major.shape[0] != X.shape[0] or rows_major.shape[1] < n_features:
                    raise ValueError("TreeKernel.grow: X_rows must hold X_binned's rows.")
                src.X_rows = &rows_major[0, 0]
                src.row_stride = rows_major.shape[1]
        grow.lossguide = lossguide
        grow.max_leaf_nodes = max_leaf_nodes
        grow.max_depth = -1 if max_depth is None else max_depth
        grow.n_threads = n_threads
        p.monotonic_cst = NULL
        if monotonic_cst is not None:
            monotonic = np.ascontiguousarray(monotonic_cst, dtype=np.int8)
            if monotonic.shape[0] != n_features:
                raise ValueError(f"TreeKernel.grow: monotonic_cst needs {n_features} "
                                 "entries.")
            p.monotonic_cst = &monotonic[0]
        if is_categorical is not None:
            categorical = np.ascontiguousarray(is_categorical, dtype=np.uint8)
            if categorical.shape[0] != n_features:
                raise ValueError(f"TreeKernel.grow: is_categorical needs {n_features} "
                                 "entries.")
            categorical_ptr = &categorical[0]
        if feature_mask is not None and len(feature_mask):
            mask = np.ascontiguousarray(feature_mask, dtype=np.uint8)
            if mask.shape[0] != n_features:
                raise ValueError(f"TreeKernel.grow: feature_mask needs {n_features} "
                                 "entries.")
            mask_ptr = &mask[0]
        set_split_params(&p, l1_regularization, l2_regularization, min_gain_to_split,
                         min_child_weight, min_samples_leaf, missing_bin,
                         max_cat_to_onehot, cat_smooth, cat_l2, min_data_per_group,
                         max_cat_threshold, -INFINITY, INFINITY)
        lay.feature_column = NULL
        with nogil:
            n_nodes = self._grow(&src, &grow, &p, &lay, &n_bins_view[0], categorical_ptr,
                                 mask_ptr, n_root, &node_view[0], &scratch[0])
        if n_nodes < 0:
            raise MemoryError("TreeKernel.grow: out of memory for histograms.")
        return n_nodes

    cdef int _grow(
        self, const source* src, const growth* grow, split_params* p,
        const layout_params* lay, const unsigned int* n_bins_non_missing,
        const unsigned char* categorical, const unsigned char* mask, SIZE_C n_root,
        grown_node_struct* nodes, split_info_struct* per_feature,
    ) noexcept nogil:
        # TreeGrower.grow; returns the node count, or -1 when out of memory.
        cdef int slots[MAX_NODES]  # a node's histogram slot (-1: none)
        cdef int queue[MAX_NODES]  # splittable leaves, in no order
        cdef int n_queued = 0, n_nodes = 1, n_leaves = 1, i, best, node_id
        cdef int small, large, small_slot, large_slot
        cdef grown_node_struct* node
        cdef grown_node_struct* child
        cdef unsigned char goes_left[256]
        cdef SIZE_C n_left
        cdef bint more, small_ok, large_ok
        cdef int b
        cdef const hist_struct* row0
        if 2 * grow.max_leaf_nodes - 1 > MAX_NODES:
            return -1
        node = &nodes[0]
        memset(node, 0, sizeof(grown_node_struct))
        node.start, node.stop = 0, n_root
        node.lower, node.upper = -INFINITY, INFINITY
        node.left = node.right = -1
        slots[0] = self._take()
        if slots[0] < 0:
            return -1
        self._build(src, node, self._slots[slots[0]], grow.n_threads)
        row0 = self._slots[slots[0]]  # every row falls in one bin of column 0
        for b in range(src.n_bins):
            node.sum_gradients += row0[b].sum_gradients
            node.sum_hessians += row0[b].sum_hessians
            node.count += row0[b].count
        node.value = bounded_value(node.sum_gradients, node.sum_hessians,
                                   p.l1_regularization, p.l2_regularization, node.lower,
                                   node.upper)
        if _may_split(node, grow, p) and self._split(src, grow, p, lay, n_bins_non_missing,
                                                  categorical, mask, node, slots[0],
                                                  per_feature):
            queue[n_queued] = 0
            n_queued += 1
        else:
            self._release(slots[0])
        while n_queued > 0 and n_leaves < grow.max_leaf_nodes:
            # pop: largest gain (lossguide) or smallest depth, ties to the oldest
            best = 0
            for i in range(1, n_queued):
                if _before(&nodes[queue[i]], queue[i], &nodes[queue[best]], queue[best],
                           grow.lossguide):
                    best = i
            node_id = queue[best]
            n_queued -= 1
            queue[best] = queue[n_queued]
            node = &nodes[node_id]
            node.left, node.right = n_nodes, n_nodes + 1
            _child(node, &nodes[n_nodes], True)
            _child(node, &nodes[n_nodes + 1], False)
            _bound_children(node, &nodes[n_nodes], &nodes[n_nodes + 1], p)
            n_nodes += 2
            _goes_left(&node.split, src.n_bins - 1, goes_left)
            n_left = partition(src.rows + node.start, src.buffer, node.stop - node.start,
                               src.X + <Py_ssize_t>node.split.feature_idx * src.n_samples,
                               False, goes_left, grow.n_threads)
            nodes[node.left].start, nodes[node.left].stop = node.start, node.start + n_left
            nodes[node.right].start = node.start + n_left
            nodes[node.right].stop = node.stop
            n_leaves += 1
            more = n_leaves < grow.max_leaf_nodes
            if nodes[node.left].count <= nodes[node.right].count:
                small, large = node.left, node.right
            else:
                small, large = node.right, node.left
            small_ok = more and _may_split(&nodes[small], grow, p)
            large_ok = more and _may_split(&nodes[large], grow, p)
            if small_ok or large_ok:
                small_slot = self._take()
                if small_slot < 0:
                    return -1
                self._build(src, &nodes[small], self._slots[small_slot], grow.n_threads)
                if large_ok:
                    large_slot = self._take()
                    if large_slot < 0:
                        return -1
                    subtract(self._slots[slots[node_id]], self._slots[small_slot],
                             self._slots[large_slot], src.n_features, src.n_bins, NULL,
                             grow.n_threads)
                    if self._split(src, grow, p, lay, n_bins_non_missing, categorical,
                                   mask, &nodes[large], large_slot, per_feature):
                        slots[large] = large_slot
                        queue[n_queued] = large
                        n_queued += 1
                    else:
                        self._release(large_slot)
                if small_ok and self._split(src, grow, p, lay, n_bins_non_missing,
                                            categorical, mask, &nodes[small], small_slot,
                                            per_feature):
                    slots[small] = small_slot
                    queue[n_queued] = small
                    n_queued += 1
                else:
                    self._release(small_slot)
            self._release(slots[node_id])
        for i in range(n_queued):  # left unsplit: they become leaves
            self._release(slots[queue[i]])
            memset(&nodes[queue[i]].split, 0, sizeof(split_info_struct))
        return n_nodes

    cdef void _build(self, const source* src, const grown_node_struct* node,
                     hist_struct* out, int n_threads) noexcept nogil:
        # The node's histograms from its rows (LocalTrainingData.node_histogram).
        cdef SIZE_C n = node.stop - node.start
        cdef bint all_rows = n == src.n_samples
        if n == 0:
            memset(out, 0, self._bins * sizeof(hist_struct))
        elif src.packed != NULL:
            histogram_packed(src.X, src.n_samples, src.n_features, src.X_rows,
                             src.row_stride, not all_rows, src.rows + node.start, n,
                             src.packed, &src.q, src.acc, src.sums,
                             src.part_stride, src.max_parts, out, src.n_bins, n_threads)
        elif all_rows:
            histogram_root(src.X, src.n_samples, src.n_features, src.gradients,
                           src.hessians, src.constant_hessian, out, src.n_bins, n_threads)
        else:
            histogram_rows(src.X, src.n_samples, src.n_features, src.rows + node.start, n,
                           src.gradients, src.hessians, src.constant_hessian,
                           src.ordered_gradients, src.ordered_hessians, out, src.n_bins,
                           n_threads)

    cdef bint _split(self, const source* src, const growth* grow, split_params* p,
                     const layout_params* lay, const unsigned int* n_bins_non_missing,
                     const unsigned char* categorical, const unsigned char* mask,
                     grown_node_struct* node, int slot,
                     split_info_struct* per_feature) noexcept nogil:
        # The node's best split into node.split; false when there is none.
        p.bounded = node.lower > -INFINITY or node.upper < INFINITY
        p.lower_bound = node.lower
        p.upper_bound = node.upper
        find_split(self._slots[slot], src.n_bins, src.n_features, n_bins_non_missing,
                   node.sum_gradients, node.sum_hessians, node.count, mask, categorical,
                   lay, p, per_feature, &node.split, grow.n_threads)
        return node.split.feature_idx >= 0



cdef inline bint _may_split(const grown_node_struct* node, const growth* grow,
                            const split_params* p) noexcept nogil:
    if grow.max_depth >= 0 and <int>node.depth >= grow.max_depth:
        return False
    return (node.count >= 2 * p.min_samples_leaf
            and node.sum_hessians >= 2 * p.min_child_weight)


cdef inline bint _before(const grown_node_struct* a, int a_id, const grown_node_struct* b,
                         int b_id, bint lossguide) noexcept nogil:
    # The queue order of TreeGrower's heap: (-gain, id) or (depth, id).
    if lossguide:
        if a.split.gain != b.split.gain:
            return a.split.gain > b.split.gain
    elif a.depth != b.depth:
        return a.depth < b.depth
    return a_id < b_id


cdef inline void _child(const grown_node_struct* parent, grown_node_struct* child,
                        bint left) noexcept nogil:
    memset(child, 0, sizeof(grown_node_struct))
    if left:
        child.sum_gradients = parent.split.sum_gradients_left
        child.sum_hessians = parent.split.sum_hessians_left
        child.count = parent.split.n_samples_left
    else:
        child.sum_gradients = parent.split.sum_gradients_right
        child.sum_hessians = parent.split.sum_hessians_right
        child.count = parent.split.n_samples_right
    child.depth = parent.depth + 1
    child.left = child.right = -1


cdef inline void _bound_children(
    grown_node_struct* parent, grown_node_struct* left, grown_node_struct* right,
    const split_params* p,
) noexcept nogil:
    # TreeGrower._bound_children, then every node's (unshrunk) value.
    cdef signed char cst = 0
    cdef double mid, l1 = p.l1_regularization, l2 = p.l2_regularization
    left.lower = right.lower = parent.lower
    left.upper = right.upper = parent.upper
    if p.monotonic_cst != NULL:
        cst = p.monotonic_cst[parent.split.feature_idx]
    if cst != 0:
        mid = 0.5 * (bounded_value(left.sum_gradients, left.sum_hessians, l1, l2,
                                   left.lower, left.upper)
                     + bounded_value(right.sum_gradients, right.sum_hessians, l1, l2,
                                     right.lower, right.upper))
        if cst > 0:
            left.upper = right.lower = mid
        else:
            left.lower = right.upper = mid
    left.value = bounded_value(left.sum_gradients, left.sum_hessians, l1, l2, left.lower,
                               left.upper)
    right.value = bounded_value(right.sum_gradients, right.sum_hessians, l1, l2,
                                right.lower, right.upper)


cdef inline void _goes_left(const split_info_struct* split, int missing_bin,
                            unsigned char* goes_left) noexcept nogil:
    # The partition's table: value bins <= bin_idx (or in the category set),
    # and the missing bin by the split's missing direction.
    cdef int b
    for b in range(256):
        if split.is_categorical:
            goes_left[b] = (split.cat_bitset[b >> 5] >> (b & 31)) & 1
        else:
            goes_left[b] = b <= <int>split.bin_idx
    goes_left[missing_bin] = split.missing_go_to_left
