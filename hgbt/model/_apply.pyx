"""Kernel: the leaf every row reaches in every tree of a forest (``apply``).

The forest is laid out as ``ForestPredictor`` holds it (concatenated node
arrays and bitsets); routing is ``_routing.pxd``'s, the one prediction uses.
Rows are split between threads; each entry is written by one thread.
"""
from cython.parallel cimport prange

from ..core._types cimport node_struct, BITSET_WORD_C
from ..tree._routing cimport leaf_index

DEF MIN_PARALLEL_ROWS = 2048


def apply_forest(
    const node_struct[::1] nodes,
    const long long[::1] tree_starts,
    const long long[::1] bitset_starts,
    const BITSET_WORD_C[:, ::1] cat_bitsets,
    const double[:, ::1] X,
    int[:, ::1] out,
    int n_threads,
):
    """``out[i, t]`` = index, in tree ``t``'s node array, of the leaf row
    ``X[i]`` reaches. Node features must be below ``X.shape[1]``."""
    cdef Py_ssize_t n = X.shape[0], n_trees = tree_starts.shape[0], i, t
    if bitset_starts.shape[0] != n_trees or out.shape[1] != n_trees or out.shape[0] != n:
        raise ValueError("bitset_starts and out must have one entry per tree, out one "
                         "row per row of X.")
    if n == 0 or n_trees == 0:
        return
    if n < MIN_PARALLEL_ROWS or n_threads < 1:
        n_threads = 1
    for i in prange(n, nogil=True, schedule='static', num_threads=n_threads):
        for t in range(n_trees):
            out[i, t] = leaf_index(&nodes[tree_starts[t]],
                                   &cat_bitsets[0, 0] + 8 * bitset_starts[t], &X[i, 0])
