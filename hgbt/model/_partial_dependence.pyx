"""Kernel: partial dependence of a forest by the recursion method.

For a grid point ``z`` of the target features, each tree is walked once:
at a split on a target feature the point's value chooses the branch (the
routing of ``_routing.pxd``, so categories and missing values go where
prediction sends them); at any other split both branches are taken, each
weighted by its share of the node's training rows (``count``). The weighted
sum of the leaves reached approximates the tree's mean output over the
training rows with the target features set to ``z``: exactly for trees of
one split each; otherwise the shares below a split on a target feature are
those of the rows that reached it in training, not of all rows.

Grid points are split between threads (``prange``, static); each point's
result is computed by one thread, the trees in order, so it does not depend
on the number of threads.
"""
from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc

from ..core._types cimport node_struct, BITSET_WORD_C, Y_DTYPE_C
from ..tree._routing cimport goes_left

# Below this many (grid point, node) visits no OpenMP team is woken.
DEF MIN_PARALLEL_WORK = 1 << 16


cdef double _tree_value(const node_struct* nodes, const BITSET_WORD_C* bitsets,
                        const double* point, const int* features, Py_ssize_t n_targets,
                        unsigned int* stack, double* weights) noexcept nogil:
    """The tree's weighted mean output for one grid point (``point[k]``: the
    value of feature ``features[k]``). Depth first with an explicit stack of
    (node, product of the branch shares above it); a node pushes at most two
    children and pops itself, so the stack never holds more than depth + 1."""
    cdef const node_struct* node
    cdef Py_ssize_t size = 1, k
    cdef unsigned int j
    cdef double w, total = 0.0
    cdef bint target
    stack[0] = 0
    weights[0] = 1.0
    while size:
        size -= 1
        j = stack[size]
        w = weights[size]
        node = &nodes[j]
        if node.is_leaf:
            total += w * node.value
            continue
        target = False
        for k in range(n_targets):
            if <unsigned int> features[k] == node.feature_idx:
                target = True
                stack[size] = node.left if goes_left(node, bitsets, point[k]) else node.right
                weights[size] = w
                size += 1
                break
        if not target:
            w = w / node.count
            stack[size] = node.right
            weights[size] = w * nodes[node.right].count
            stack[size + 1] = node.left
            weights[size + 1] = w * nodes[node.left].count
            size += 2
    return total


def partial_dependence_add(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const int[::1] tree_outputs,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    int max_depth,
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
    ``o``. ``max_depth``: at least the deepest leaf's depth (it sizes the
    walks' stacks).
    """
    cdef Py_ssize_t n_points = grid.shape[0], n_trees = tree_starts.shape[0]
    cdef Py_ssize_t n_targets = features.shape[0], p, t
    cdef unsigned int* stack
    cdef double* weights
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
    if max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}.")
    if n_points * nodes.shape[0] < MIN_PARALLEL_WORK or n_threads < 1:
        n_threads = 1
    with nogil, parallel(num_threads=n_threads):
        stack = <unsigned int*> malloc((max_depth + 1) * sizeof(unsigned int))
        weights = <double*> malloc((max_depth + 1) * sizeof(double))
        for p in prange(n_points, schedule='static'):
            for t in range(n_trees):
                out[tree_outputs[t], p] += _tree_value(
                    &nodes[tree_starts[t]], &cat_bitsets[0, 0] + 8 * bitset_starts[t],
                    &grid[p, 0], &features[0], n_targets, stack, weights)
        free(weights)
        free(stack)
