"""Kernel: partial dependence of a forest by the recursion method.

For a grid point ``z`` of the target features, each tree is walked once:
at a split on a target feature the point's value chooses the branch (the
routing of ``_routing.pxd``, so categories and missing values go where
prediction sends them); at any other split both branches are taken, each
weighted by its share of the node's training rows (``count``). The weighted
sum of the leaves reached is the tree's mean output over the training rows
with the target features set to ``z``, exactly so when no other split on
the path depends on the rows that were set (trees of one split each, for
example), and the usual recursion approximation otherwise.

Grid points are split between threads (``prange``, static); each point's
result is computed by one thread, the trees in order, so it does not depend
on the number of threads.
"""
from cython.parallel cimport prange

from ..core._types cimport node_struct, BITSET_WORD_C, Y_DTYPE_C
from ._routing cimport goes_left

# Below this many (grid point, node) visits no OpenMP team is woken.
DEF MIN_PARALLEL_WORK = 1 << 16


cdef double _tree_value(const node_struct* nodes, const BITSET_WORD_C* bitsets,
                        unsigned int j, const double* point, const int* features,
                        Py_ssize_t n_targets) noexcept nogil:
    """The weighted mean output of the subtree at node ``j`` for one grid point
    (``point[k]``: the value of feature ``features[k]``)."""
    cdef const node_struct* node = &nodes[j]
    cdef Py_ssize_t k
    if node.is_leaf:
        return node.value
    for k in range(n_targets):
        if <unsigned int> features[k] == node.feature_idx:
            if goes_left(node, bitsets, point[k]):
                return _tree_value(nodes, bitsets, node.left, point, features, n_targets)
            return _tree_value(nodes, bitsets, node.right, point, features, n_targets)
    return (<double> nodes[node.left].count / node.count
            * _tree_value(nodes, bitsets, node.left, point, features, n_targets)
            + <double> nodes[node.right].count / node.count
            * _tree_value(nodes, bitsets, node.right, point, features, n_targets))


def partial_dependence_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    const double[:, ::1] grid,
    const int[::1] features,
    Y_DTYPE_C[:, ::1] out,
    int n_threads,
):
    """Add every tree's partial dependence at every grid point to ``out``.

    The forest as ``ForestPredictor`` lays it out (tree ``t``'s root at
    ``tree_starts[t]``, its bitsets from row ``bitset_starts[t]``, adding to
    output ``tree_outputs[t]``). ``grid[p, k]``: the value of feature
    ``features[k]`` at point ``p``; ``out[o, p]`` receives the trees of output
    ``o``.
    """
    cdef Py_ssize_t n_points = grid.shape[0], n_trees = tree_starts.shape[0]
    cdef Py_ssize_t n_targets = features.shape[0], p, t
    if tree_outputs.shape[0] != n_trees or bitset_starts.shape[0] != n_trees:
        raise ValueError("tree_starts, tree_outputs and bitset_starts must have one "
                         "entry per tree.")
    if grid.shape[1] != n_targets or out.shape[1] != n_points:
        raise ValueError(f"grid has shape ({grid.shape[0]}, {grid.shape[1]}) and out "
                         f"({out.shape[0]}, {out.shape[1]}) for {n_targets} target "
                         "features.")
    for t in range(n_trees):
        if tree_outputs[t] < 0 or tree_outputs[t] >= out.shape[0]:
            raise ValueError(f"Tree {t} adds to output {tree_outputs[t]} of "
                             f"{out.shape[0]}.")
    if n_targets == 0:
        raise ValueError("At least one target feature is needed.")
    for t in range(n_targets):
        if features[t] < 0:
            raise ValueError(f"Target feature {features[t]} is negative.")
    if n_points == 0 or n_trees == 0:
        return
    if n_points * nodes.shape[0] < MIN_PARALLEL_WORK or n_threads < 1:
        n_threads = 1
    for p in prange(n_points, nogil=True, schedule='static', num_threads=n_threads):
        for t in range(n_trees):
            out[tree_outputs[t], p] += _tree_value(
                &nodes[tree_starts[t]], &cat_bitsets[0, 0] + 8 * bitset_starts[t], 0,
                &grid[p, 0], &features[0], n_targets)
