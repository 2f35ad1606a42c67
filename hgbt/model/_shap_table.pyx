"""Kernel: TreeSHAP contributions from per-leaf tables of the row-independent part.

In the game of ``_shap.pyx`` a leaf of value ``v`` whose path splits on the
distinct features ``P`` (``d`` of them) adds to feature ``i`` of ``P``

    v * (o_i - z_i) * sum over S in B - {i} of w(|S|) * prod over k in P - S - {i} of z_k

where ``z_k`` is the product of the cover fractions of ``k``'s splits on the
path, ``B`` the features whose every split on the path the row follows
(``o_k = 1``) and ``w(s) = s! (d - 1 - s)! / d!``. Only ``B`` depends on the
row. With ``H(S) = sum_s w(s) [y^s] prod over k in S of (y + z_k)`` and
``Q(S) = v * H(S) * prod over k in P - S of z_k``, feature ``i`` gets

    i in B:      (1 - z_i) / z_i * Q(B - {i})
    i not in B:  -Q(B)   (the same for every such feature)

so a leaf keeps ``Q`` over the ``2**d`` subsets of its features, built once
per call (the idea of Fast TreeSHAP v2, Yang 2021), and a row costs per leaf
``d`` lookups instead of TreeSHAP's ``d**2`` EXTEND/UNWIND work. ``B`` comes
from one pass over the tree's inner nodes per row: a leaf's slots (its
distinct features, numbered by first split) number the features of every
path prefix the same way, so each node clears its slot's bit on the side the
row does not take. Trees with a path of more than ``MAX_TABLE_WIDTH``
distinct features, or a child without rows (``z = 0``), cannot be planned;
the caller leaves them, and any it wants to keep the tables' memory
bounded, to ``_shap.pyx``.

Rows are split between threads (``prange``, static); a row is computed by one
thread, trees and leaves in order, so the result does not depend on the
number of threads. The routing is ``_routing.pxd``'s, the one prediction uses.
"""
from cython.parallel cimport parallel, prange
from libc.stdlib cimport malloc, free
from libc.string cimport memset
import numpy as np

from ..core._types cimport node_struct, BITSET_WORD_C, Y_DTYPE_C
from ..tree._routing cimport goes_left

# Below this many rows, no OpenMP team is woken.
DEF MIN_PARALLEL_ROWS = 64
# Deepest path followed while planning (a tree deeper than this is not planned).
DEF MAX_PATH = 256
# Most distinct features on a planned leaf's path (its table: 2**d doubles).
DEF MAX_TABLE_WIDTH = 30


cdef struct path_step:
    int feature
    double fraction         # child's count / node's count


cdef struct leaf_sink:
    # What _walk_leaves finds (only counted while the arrays are NULL).
    Py_ssize_t n_inner, n_leaves, n_slots, n_entries
    int widest              # most distinct features on one path
    bint zero_fraction      # a child without rows: H's ratios do not exist
    unsigned int* inner_node
    unsigned int* inner_bit
    unsigned int* leaf_node
    double* leaf_value
    long long* leaf_slot
    long long* leaf_entry
    int* slot_feature
    double* slot_zero


cdef int _distinct(const path_step* path, int depth, int* features,
                   double* zero) noexcept nogil:
    """The distinct features of ``path[:depth]`` in order of first split (the
    slots), each with the product of its splits' fractions; returns how many."""
    cdef int s, k, d = 0
    for s in range(depth):
        k = 0
        while k < d and features[k] != path[s].feature:
            k += 1
        if k == d:
            features[d] = path[s].feature
            zero[d] = 1.0
            d += 1
        zero[k] *= path[s].fraction
    return d


cdef int _slot(const path_step* path, int depth, int feature) noexcept nogil:
    """Slot of ``feature`` on ``path[:depth]`` extended by it: the same in
    every leaf below, so a node's slot bit is shared by all of them."""
    cdef int features[MAX_PATH]
    cdef double zero[MAX_PATH]
    cdef int k = 0, d = _distinct(path, depth, features, zero)
    while k < d and features[k] != feature:
        k += 1
    return k


cdef void _record_leaf(const node_struct* leaf, unsigned int j, const path_step* path,
                       int depth, leaf_sink* sink) noexcept nogil:
    """Leaf ``j`` reached by ``path[:depth]``: its slots with their zero
    fractions."""
    cdef int k
    cdef int features[MAX_PATH]
    cdef double zero[MAX_PATH]
    cdef int d = _distinct(path, depth, features, zero)
    for k in range(d):
        if zero[k] == 0.0:
            sink.zero_fraction = True
    if sink.leaf_value != NULL:
        sink.leaf_node[sink.n_leaves] = j
        sink.leaf_value[sink.n_leaves] = leaf.value
        sink.leaf_slot[sink.n_leaves] = sink.n_slots
        sink.leaf_entry[sink.n_leaves] = sink.n_entries
        for k in range(d):
            sink.slot_feature[sink.n_slots + k] = features[k]
            sink.slot_zero[sink.n_slots + k] = zero[k]
    sink.n_leaves += 1
    sink.n_slots += d
    if d <= MAX_TABLE_WIDTH:
        sink.n_entries += (<Py_ssize_t> 1) << d
    if d > sink.widest:
        sink.widest = d


cdef int _walk_leaves(const node_struct* nodes, unsigned int j, path_step* path, int depth,
                      leaf_sink* sink) noexcept nogil:
    """Record node ``j`` (reached by ``path[:depth]``) and everything under it,
    inner nodes in preorder. Returns -1 if a path is deeper than ``MAX_PATH``."""
    cdef const node_struct* node = &nodes[j]
    cdef int slot
    if node.is_leaf:
        _record_leaf(node, j, path, depth, sink)
        return 0
    if depth == MAX_PATH:
        return -1
    if sink.inner_node != NULL:
        slot = _slot(path, depth, <int> node.feature_idx)
        sink.inner_node[sink.n_inner] = j
        sink.inner_bit[sink.n_inner] = (<unsigned int> 1 << slot) if slot < 32 else 0
    sink.n_inner += 1
    path[depth].feature = <int> node.feature_idx
    path[depth].fraction = <double> nodes[node.left].count / node.count
    if _walk_leaves(nodes, node.left, path, depth + 1, sink) < 0:
        return -1
    path[depth].fraction = <double> nodes[node.right].count / node.count
    return _walk_leaves(nodes, node.right, path, depth + 1, sink)


def tree_widths(const node_struct[::1] nodes, const long long[::1] tree_starts):
    """Per tree: the most distinct features on one root-to-leaf path
    (``MAX_PATH + 1`` for a path deeper than ``MAX_PATH`` or a child without
    rows, which tables cannot hold), the size of its tables (counting the
    leaves of at most ``MAX_TABLE_WIDTH`` features) and its number of slots
    (distinct features summed over the leaves)."""
    widths = np.empty(tree_starts.shape[0], dtype=np.int64)
    sizes = np.empty(tree_starts.shape[0], dtype=np.int64)
    slots = np.empty(tree_starts.shape[0], dtype=np.int64)
    cdef long long[::1] width = widths, size = sizes, slot = slots
    cdef leaf_sink sink
    cdef path_step path[MAX_PATH]
    cdef Py_ssize_t t
    with nogil:
        for t in range(tree_starts.shape[0]):
            memset(&sink, 0, sizeof(sink))
            if (_walk_leaves(&nodes[tree_starts[t]], 0, path, 0, &sink) < 0
                    or sink.zero_fraction):
                sink.widest = MAX_PATH + 1
            width[t] = sink.widest
            size[t] = sink.n_entries
            slot[t] = sink.n_slots
    return widths, sizes, slots


cdef void _fill_table(double* table, const double* zero, int d, double value,
                      double* poly) noexcept nogil:
    """``table[S] = value * H(S) * prod over k not in S of z_k`` for every
    subset ``S`` of the ``d`` slots but the full one (0 there: never read).
    ``poly``: room for ``2**d * (d + 1)`` doubles, the coefficients of ``prod
    over k in S of (y + z_k)`` per ``S``, each built from ``S`` without its
    highest slot."""
    cdef Py_ssize_t S, rest, n = (<Py_ssize_t> 1) << d
    cdef int s, size, top
    cdef double weight[MAX_PATH]
    cdef double* p
    cdef const double* q
    cdef double h, absent
    if d == 0:
        return
    weight[0] = 1.0 / d
    for s in range(d - 1):
        weight[s + 1] = weight[s] * (s + 1) / (d - 1 - s)
    poly[0] = 1.0
    for S in range(n - 1):
        size = 0
        absent = value
        for s in range(d):
            if (S >> s) & 1:
                size += 1
            else:
                absent *= zero[s]
        p = poly + S * (d + 1)
        if S:
            top = 0
            while (S >> (top + 1)) != 0:
                top += 1
            rest = S ^ ((<Py_ssize_t> 1) << top)
            q = poly + rest * (d + 1)
            # (y + z_top) * q, q of degree size - 1
            p[size] = q[size - 1]
            for s in range(size - 1, 0, -1):
                p[s] = q[s - 1] + zero[top] * q[s]
            p[0] = zero[top] * q[0]
        h = 0.0
        for s in range(size + 1):
            h += weight[s] * p[s]
        table[S] = h * absent
    table[n - 1] = 0.0


def plan_trees(const node_struct[::1] nodes, const long long[::1] tree_starts,
               const long long[::1] trees):
    """The tables of trees ``trees`` (indices into ``tree_starts``; each with
    ``tree_widths`` at most ``MAX_TABLE_WIDTH``): a dict of arrays for
    :func:`table_shap_add`. Planned tree ``u``: inner nodes (preorder) from
    ``inner_starts[u]``, leaves from ``leaf_starts[u]``; leaf ``l``: slots
    ``leaf_slot[l]:leaf_slot[l + 1]``, table from ``leaf_entry[l]``."""
    cdef Py_ssize_t u, n = trees.shape[0], l
    cdef leaf_sink sink
    cdef path_step path[MAX_PATH]
    cdef bint too_deep = False
    inner_starts = np.zeros(n + 1, dtype=np.int64)
    leaf_starts = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] inner_start = inner_starts, leaf_start = leaf_starts
    memset(&sink, 0, sizeof(sink))
    with nogil:
        for u in range(n):
            if _walk_leaves(&nodes[tree_starts[trees[u]]], 0, path, 0, &sink) < 0:
                too_deep = True
                break
            inner_start[u + 1] = sink.n_inner
            leaf_start[u + 1] = sink.n_leaves
    if too_deep or sink.widest > MAX_TABLE_WIDTH or sink.zero_fraction:
        raise ValueError("A tree has a path too deep, or splitting on more than "
                         f"{MAX_TABLE_WIDTH} features, or a child without rows.")
    # one spare element each, so that every array has an address
    plan = dict(
        trees=np.asarray(trees, dtype=np.int64), inner_starts=inner_starts,
        leaf_starts=leaf_starts,
        inner_node=np.empty(sink.n_inner + 1, np.uint32),
        inner_bit=np.empty(sink.n_inner + 1, np.uint32),
        leaf_node=np.empty(sink.n_leaves + 1, np.uint32),
        leaf_value=np.empty(sink.n_leaves + 1),
        leaf_slot=np.empty(sink.n_leaves + 1, np.int64),
        leaf_entry=np.empty(sink.n_leaves + 1, np.int64),
        slot_feature=np.empty(sink.n_slots + 1, np.int32),
        slot_ratio=np.empty(sink.n_slots + 1),
        table=np.empty(sink.n_entries + 1))
    cdef unsigned int[::1] inner_node = plan["inner_node"], inner_bit = plan["inner_bit"]
    cdef unsigned int[::1] leaf_node = plan["leaf_node"]
    cdef double[::1] value = plan["leaf_value"], ratio = plan["slot_ratio"]
    cdef double[::1] table = plan["table"]
    cdef long long[::1] slot = plan["leaf_slot"], entry = plan["leaf_entry"]
    cdef int[::1] feature = plan["slot_feature"]
    cdef Py_ssize_t total = sink.n_leaves, widest = sink.widest, k
    cdef double* poly
    slot[total] = sink.n_slots
    entry[total] = sink.n_entries
    # the same walk again, writing (the zero fractions into slot_ratio)
    memset(&sink, 0, sizeof(sink))
    sink.inner_node, sink.inner_bit = &inner_node[0], &inner_bit[0]
    sink.leaf_node, sink.leaf_value = &leaf_node[0], &value[0]
    sink.leaf_slot, sink.leaf_entry = &slot[0], &entry[0]
    sink.slot_feature, sink.slot_zero = &feature[0], &ratio[0]
    with nogil:
        for u in range(n):
            _walk_leaves(&nodes[tree_starts[trees[u]]], 0, path, 0, &sink)
        poly = <double*> malloc((((<Py_ssize_t> 1) << widest) * (widest + 1)) * sizeof(double))
        for l in range(total):
            _fill_table(&table[entry[l]], &ratio[slot[l]], <int> (slot[l + 1] - slot[l]),
                        value[l], poly)
        free(poly)
        # a present feature k reads table[B - {k}], which holds z_k once too often
        for k in range(slot[total]):
            ratio[k] = (1.0 - ratio[k]) / ratio[k]
    return plan


def table_shap_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    dict plan,
    const double[:, ::1] X,
    Y_DTYPE_C[:, ::1] out,
    Py_ssize_t width,
    int n_threads,
):
    """Add the contributions of the planned trees (:func:`plan_trees`) on
    every row of ``X`` to ``out``: feature ``f``'s value for output ``k`` at
    ``out[i, k * width + f]``. The forest's arrays are those of
    ``_shap.shap_add``."""
    cdef const long long[::1] trees = plan["trees"], inner_starts = plan["inner_starts"]
    cdef const long long[::1] leaf_starts = plan["leaf_starts"]
    cdef const unsigned int[::1] inner_node = plan["inner_node"]
    cdef const unsigned int[::1] inner_bit = plan["inner_bit"]
    cdef const unsigned int[::1] leaf_node = plan["leaf_node"]
    cdef const double[::1] ratio = plan["slot_ratio"], table = plan["table"]
    cdef const long long[::1] slot = plan["leaf_slot"], entry = plan["leaf_entry"]
    cdef const int[::1] feature = plan["slot_feature"]
    cdef Py_ssize_t n = X.shape[0], n_planned = trees.shape[0], i, u, t, l, e, k
    cdef Py_ssize_t widest_tree = 0, n_outputs = out.shape[1] // width
    cdef unsigned int* mask
    cdef unsigned int on, m, bit
    cdef unsigned int j
    cdef int d
    cdef const node_struct* tree
    cdef const BITSET_WORD_C* bitsets
    cdef const double* q
    cdef Y_DTYPE_C* phi
    cdef double absent
    if width < X.shape[1] or out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} rows and width {width} for {n} rows "
                         f"of {X.shape[1]} features.")
    ends = np.append(np.asarray(tree_starts)[1:], nodes.shape[0])
    for u in range(n_planned):
        t = trees[u]
        if tree_outputs[t] < 0 or tree_outputs[t] >= n_outputs:
            raise ValueError(f"Tree {t} adds to output {tree_outputs[t]} of {n_outputs}.")
        widest_tree = max(widest_tree, ends[t] - tree_starts[t])
    if n == 0 or n_planned == 0:
        return
    if n < MIN_PARALLEL_ROWS or n_threads < 1:
        n_threads = 1
    with nogil, parallel(num_threads=n_threads):
        # mask[j]: bit k set iff the row follows every split on slot k's
        # feature from the root to node j
        mask = <unsigned int*> malloc(widest_tree * sizeof(unsigned int))
        for i in prange(n, schedule='static'):
            for u in range(n_planned):
                t = trees[u]
                tree = &nodes[tree_starts[t]]
                bitsets = &cat_bitsets[0, 0] + 8 * bitset_starts[t]
                phi = &out[i, 0] + tree_outputs[t] * width
                mask[0] = ~(<unsigned int> 0)
                for e in range(inner_starts[u], inner_starts[u + 1]):
                    j = inner_node[e]
                    m = mask[j]
                    bit = inner_bit[e]
                    if goes_left(&tree[j], bitsets, X[i, tree[j].feature_idx]):
                        mask[tree[j].left] = m
                        mask[tree[j].right] = m & ~bit
                    else:
                        mask[tree[j].left] = m & ~bit
                        mask[tree[j].right] = m
                for l in range(leaf_starts[u], leaf_starts[u + 1]):
                    d = <int> (slot[l + 1] - slot[l])
                    on = mask[leaf_node[l]] & ((<unsigned int> 1 << d) - 1)
                    q = &table[0] + entry[l]
                    absent = -q[on]
                    for k in range(d):
                        if (on >> k) & 1:
                            phi[feature[slot[l] + k]] += (ratio[slot[l] + k]
                                                          * q[on ^ (<unsigned int> 1 << k)])
                        else:
                            phi[feature[slot[l] + k]] += absent
        free(mask)
