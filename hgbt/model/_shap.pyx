"""Kernels: exact TreeSHAP contributions and interaction values of a forest.

The game explained is the one of Lundberg et al. (2018), "Consistent
individualized feature attribution for tree ensembles": for a set S of
features, v(S) is the tree's output when the features in S take the row's
values and the others are integrated out along the tree, each branch taking
the share of the training rows (node ``count``, the cover) that went its way.
TreeSHAP (their Algorithm 2) gets the Shapley values of this game in one
walk of the tree: every root-to-leaf path keeps, for each distinct feature
split on above, the fraction of the cover that follows the path when the
feature is absent (``zero``), whether the row follows it when present
(``one``, 0 or 1), and the weights of the subset sizes (``weight``, EXTEND
adds a feature, UNWIND takes one back out).

Interaction values condition the game on one feature at a time: with feature
``i`` always present ("on") or always absent ("off") and taken out of the
players, ``(phi_j(on) - phi_j(off)) / 2`` is the Shapley interaction index of
``(i, j)``, and the diagonal is ``phi_i`` minus the row's other entries.

Rows are split between threads (``prange``, static); each row's result is
computed by one thread, trees in order, so it does not depend on the number
of threads. Row values are read as float64 from a C-ordered block (the
caller densifies sparse input per block); the routing is ``_routing.pxd``'s,
the one prediction uses.
"""
from cython.parallel cimport parallel, prange
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
import numpy as np

from ..core._types cimport node_struct, BITSET_WORD_C, Y_DTYPE_C
from ..tree._routing cimport goes_left

# Below this many rows, no OpenMP team is woken.
DEF MIN_PARALLEL_ROWS = 64


cdef struct path_elem:
    int feature       # -1 for the root's placeholder element
    double zero       # cover fraction following the path when the feature is absent
    double one        # 1 if the row follows the path when the feature is present
    double weight     # weight of the subsets of the path's other features


cdef struct walk:
    # One tree, one row, one (conditioned) game.
    const node_struct* nodes
    const BITSET_WORD_C* bitsets
    const double* row
    double* phi          # contributions added here, indexed by feature
    path_elem* paths     # level d's path at paths[_offset(d, cap)], at most cap elements
    int cap              # n_features + 1: a path holds each feature once, and the root
    int cond_feature     # -1: the plain game
    bint cond_on


cdef inline void _at_tree(walk* c, const node_struct* nodes, const long long* tree_starts,
                          const BITSET_WORD_C* bitsets, const long long* bitset_starts,
                          Py_ssize_t t) noexcept nogil:
    # Point the walk at tree t of the forest.
    c.nodes = &nodes[tree_starts[t]]
    c.bitsets = &bitsets[8 * bitset_starts[t]]


cdef inline void _extend(path_elem* m, int length, double zero, double one,
                         int feature) noexcept nogil:
    """Append a feature to a path of ``length`` elements and update the weights
    of the subset sizes."""
    cdef int i
    m[length].feature = feature
    m[length].zero = zero
    m[length].one = one
    m[length].weight = 1.0 if length == 0 else 0.0
    for i in range(length - 1, -1, -1):
        m[i + 1].weight += one * m[i].weight * (i + 1) / (length + 1)
        m[i].weight = zero * m[i].weight * (length - i) / (length + 1)


cdef inline void _unwind(path_elem* m, int length, int k) noexcept nogil:
    """Undo the extension by element ``k`` of a path of ``length`` elements
    (the result has ``length - 1``)."""
    cdef int u = length - 1, j
    cdef double one = m[k].one, zero = m[k].zero
    cdef double carry = m[u].weight, previous
    for j in range(u - 1, -1, -1):
        if one != 0.0:
            previous = m[j].weight
            m[j].weight = carry * (u + 1) / ((j + 1) * one)
            carry = previous - m[j].weight * zero * (u - j) / (u + 1)
        else:
            m[j].weight = m[j].weight * (u + 1) / (zero * (u - j))
    for j in range(k, u):
        m[j].feature = m[j + 1].feature
        m[j].zero = m[j + 1].zero
        m[j].one = m[j + 1].one


cdef inline double _unwound_sum(const path_elem* m, int length, int k) noexcept nogil:
    """Total weight of the path with element ``k`` unwound (``_unwind`` without
    writing)."""
    cdef int u = length - 1, j
    cdef double one = m[k].one, zero = m[k].zero
    cdef double carry = m[u].weight, w, total = 0.0
    for j in range(u - 1, -1, -1):
        if one != 0.0:
            w = carry * (u + 1) / ((j + 1) * one)
            total += w
            carry = m[j].weight - w * zero * (u - j) / (u + 1)
        else:
            total += m[j].weight * (u + 1) / (zero * (u - j))
    return total


cdef void _recurse(walk* c, unsigned int j, int level, const path_elem* parent,
                   int length, double zero, double one, int feature, bint extend,
                   double scale) noexcept nogil:
    """Node ``j`` at depth ``level``, reached with the parent's path of
    ``length`` elements; ``extend``: add ``(feature, zero, one)`` to it.
    ``scale``: product of the conditioned feature's branch fractions."""
    cdef path_elem* m = c.paths + _offset(level, c.cap)
    cdef const node_struct* node = &c.nodes[j]
    cdef unsigned int hot, cold
    cdef int k, split = <int> node.feature_idx
    cdef double incoming_zero = 1.0, incoming_one = 1.0, w, hot_share, cold_share
    if length:
        memcpy(m, parent, length * sizeof(path_elem))
    if extend:
        _extend(m, length, zero, one, feature)
        length += 1
    if node.is_leaf:
        for k in range(1, length):
            w = _unwound_sum(m, length, k)
            c.phi[m[k].feature] += w * (m[k].one - m[k].zero) * node.value * scale
        return
    if goes_left(node, c.bitsets, c.row[split]):
        hot, cold = node.left, node.right
    else:
        hot, cold = node.right, node.left
    hot_share = <double> c.nodes[hot].count / node.count
    cold_share = <double> c.nodes[cold].count / node.count
    if split == c.cond_feature:
        # not a player: always present (the row's branch) or always absent
        if c.cond_on:
            _recurse(c, hot, level + 1, m, length, 0.0, 0.0, -1, False, scale)
        else:
            _recurse(c, hot, level + 1, m, length, 0.0, 0.0, -1, False, scale * hot_share)
            _recurse(c, cold, level + 1, m, length, 0.0, 0.0, -1, False,
                     scale * cold_share)
        return
    for k in range(1, length):
        if m[k].feature == split:  # split on above: its fractions multiply
            incoming_zero = m[k].zero
            incoming_one = m[k].one
            _unwind(m, length, k)
            length -= 1
            break
    _recurse(c, hot, level + 1, m, length, incoming_zero * hot_share, incoming_one,
             split, True, scale)
    _recurse(c, cold, level + 1, m, length, incoming_zero * cold_share, 0.0,
             split, True, scale)


cdef inline void _tree_shap(walk* c, int cond_feature, bint cond_on) noexcept nogil:
    c.cond_feature = cond_feature
    c.cond_on = cond_on
    # the root's placeholder element (feature -1) carries the empty subset
    _recurse(c, 0, 0, NULL, 0, 1.0, 1.0, -1, True, 1.0)


cdef double _expected(const node_struct* nodes, unsigned int j) noexcept nogil:
    """The tree's output with every feature absent, from node ``j`` down."""
    cdef const node_struct* node = &nodes[j]
    if node.is_leaf:
        return node.value
    return (<double> nodes[node.left].count / node.count * _expected(nodes, node.left)
            + <double> nodes[node.right].count / node.count * _expected(nodes, node.right))


def expected_values(const node_struct[::1] nodes, const long long[::1] tree_starts):
    """Per tree: the expected output, each split weighted by its children's covers."""
    out = np.empty(tree_starts.shape[0], dtype=np.float64)
    cdef double[::1] view = out
    cdef Py_ssize_t t
    with nogil:
        for t in range(tree_starts.shape[0]):
            view[t] = _expected(&nodes[tree_starts[t]], 0)
    return out


cdef inline Py_ssize_t _offset(Py_ssize_t level, Py_ssize_t cap) noexcept nogil:
    """Start of level ``level``'s path in the buffer: level ``d`` holds at most
    ``min(d + 1, cap)`` elements (its distinct features, and the root's)."""
    if level <= cap:
        return level * (level + 1) // 2
    return cap * (cap + 1) // 2 + (level - cap) * cap


cdef inline Py_ssize_t _path_size(int max_depth, Py_ssize_t cap) noexcept nogil:
    return _offset(max_depth + 1, cap)


cdef void _row_contributions(
    path_elem* paths, const node_struct* nodes, const long long* tree_starts,
    const int* tree_outputs, const long long* bitset_starts, Py_ssize_t n_trees,
    const BITSET_WORD_C* bitsets, const double* row, Py_ssize_t n_features,
    Y_DTYPE_C* out, Py_ssize_t output_stride,
) noexcept nogil:
    """Every tree's contributions on one row, added to ``out`` (output ``k``
    at ``out + k * output_stride``)."""
    cdef walk c
    cdef Py_ssize_t t
    c.paths = paths
    c.cap = n_features + 1
    c.row = row
    for t in range(n_trees):
        _at_tree(&c, nodes, tree_starts, bitsets, bitset_starts, t)
        c.phi = out + tree_outputs[t] * output_stride
        _tree_shap(&c, -1, False)


cdef void _row_interactions(
    path_elem* paths, double* scratch, const node_struct* nodes,
    const long long* tree_starts, const int* tree_outputs, const long long* bitset_starts,
    Py_ssize_t n_trees, const BITSET_WORD_C* bitsets, const long long* feature_starts,
    const int* features, const double* row, Py_ssize_t n_features, Y_DTYPE_C* out,
    Py_ssize_t width,
) noexcept nogil:
    """Every tree's interaction values on one row, added to ``out`` (output
    ``k``'s ``width`` x ``width`` matrix at ``out + k * width * width``).
    ``features[feature_starts[t]:feature_starts[t + 1]]``: the distinct
    features tree ``t`` splits on. ``scratch``: 3 x ``width`` zeros, zeroed
    again on return (only those features' entries are written)."""
    cdef walk c
    cdef Py_ssize_t t, a, b
    cdef int f, g
    cdef double* plain = scratch
    cdef double* on = scratch + width
    cdef double* off = scratch + 2 * width
    cdef double half
    cdef Y_DTYPE_C* matrix
    c.paths = paths
    c.cap = n_features + 1
    c.row = row
    for t in range(n_trees):
        _at_tree(&c, nodes, tree_starts, bitsets, bitset_starts, t)
        matrix = out + tree_outputs[t] * width * width
        c.phi = plain
        _tree_shap(&c, -1, False)
        for a in range(feature_starts[t], feature_starts[t + 1]):
            f = features[a]
            matrix[f * width + f] += plain[f]
            plain[f] = 0.0
        for a in range(feature_starts[t], feature_starts[t + 1]):
            f = features[a]
            c.phi = on
            _tree_shap(&c, f, True)
            c.phi = off
            _tree_shap(&c, f, False)
            for b in range(feature_starts[t], feature_starts[t + 1]):
                g = features[b]
                if g != f:
                    half = (on[g] - off[g]) / 2.0
                    matrix[f * width + g] += half
                    matrix[f * width + f] -= half
                on[g] = 0.0
                off[g] = 0.0


def shap_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    int max_depth,
    const double[:, ::1] X,
    Y_DTYPE_C[:, ::1] out,
    Py_ssize_t width,
    int n_threads,
    const long long[::1] feature_starts=None,
    const int[::1] features=None,
):
    """Add every tree's TreeSHAP values on every row of ``X`` to ``out``.

    The forest as ``ForestPredictor`` lays it out: concatenated node arrays
    (tree ``t``'s root at ``tree_starts[t]``) and bitsets (from row
    ``bitset_starts[t]``), tree ``t`` adding to output ``tree_outputs[t]``.
    ``max_depth``: at least the deepest leaf's depth. Node features must be
    below ``X.shape[1]`` and ``width`` (``check_tree``).

    Contributions (``features`` None): row ``i`` of ``out`` holds one block of
    ``width`` values per output; feature ``f``'s value for output ``k`` is
    added at ``k * width + f``. Interaction values: given
    ``features[feature_starts[t]:feature_starts[t + 1]]``, the distinct
    features tree ``t`` splits on, row ``i`` holds one ``width`` x ``width``
    matrix per output, C-ordered; the value of ``(f, g)`` is added at
    ``(k * width + f) * width + g`` (the diagonal: ``f``'s main effect).
    """
    cdef Py_ssize_t n = X.shape[0], n_trees = tree_starts.shape[0], i, n_outputs
    cdef bint interactions = features is not None
    cdef path_elem* paths
    cdef double* scratch
    if tree_outputs.shape[0] != n_trees or bitset_starts.shape[0] != n_trees or (
            interactions and feature_starts.shape[0] != n_trees + 1):
        raise ValueError("tree_starts, tree_outputs and bitset_starts must have one "
                         "entry per tree, feature_starts one more.")
    if width < X.shape[1] or out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} rows and width {width} for {n} rows "
                         f"of {X.shape[1]} features.")
    n_outputs = out.shape[1] // (width * width if interactions else width)
    for t in range(n_trees):
        if tree_outputs[t] < 0 or tree_outputs[t] >= n_outputs:
            raise ValueError(f"Tree {t} adds to output {tree_outputs[t]} of {n_outputs}.")
    if n == 0 or n_trees == 0:
        return
    if n < MIN_PARALLEL_ROWS or n_threads < 1:
        n_threads = 1
    with nogil, parallel(num_threads=n_threads):
        paths = <path_elem*> malloc(_path_size(max_depth, X.shape[1] + 1) * sizeof(path_elem))
        # contributions need no scratch row
        scratch = <double*> calloc(3 * width, sizeof(double)) if interactions else NULL
        for i in prange(n, schedule='static'):
            if interactions:
                _row_interactions(paths, scratch, &nodes[0], &tree_starts[0],
                                  &tree_outputs[0], &bitset_starts[0], n_trees,
                                  &cat_bitsets[0, 0], &feature_starts[0], &features[0],
                                  &X[i, 0], X.shape[1], &out[i, 0], width)
            else:
                _row_contributions(paths, &nodes[0], &tree_starts[0], &tree_outputs[0],
                                   &bitset_starts[0], n_trees, &cat_bitsets[0, 0],
                                   &X[i, 0], X.shape[1], &out[i, 0], width)
        free(scratch)
        free(paths)


cdef int _depth(const node_struct* nodes, unsigned int j) noexcept nogil:
    cdef int left, right
    if nodes[j].is_leaf:
        return 0
    left = _depth(nodes, nodes[j].left)
    right = _depth(nodes, nodes[j].right)
    return 1 + (left if left > right else right)


def max_depth(const node_struct[::1] nodes, const long long[::1] tree_starts):
    """The deepest leaf's depth over all trees, counted by walking them (the
    paths' buffer is sized by it, so the stored ``depth`` is not trusted)."""
    cdef Py_ssize_t t
    cdef int deepest = 0, d
    with nogil:
        for t in range(tree_starts.shape[0]):
            d = _depth(&nodes[tree_starts[t]], 0)
            if d > deepest:
                deepest = d
    return deepest
