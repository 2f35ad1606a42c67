"""A forest's raw predictions explained: exact TreeSHAP contributions
(per-leaf tables, ``_shap_table.pyx``, for the trees they fit, the recursion
of ``_shap.pyx`` for the others), interaction values (``_shap.pyx``), the
leaf each row reaches in each tree (``_apply.pyx``), and partial dependence
by the recursion method (``_partial_dependence.pyx``).

Every function takes a :class:`~hgbt.tree.predictor.ForestPredictor` (the
trees of all rounds, tree ``t`` adding to output ``tree_outputs[t]``) and raw
``X``: a 2-D float array or a scipy.sparse CSR matrix, densified one block of
rows at a time, so sparse input gives exactly the dense result.
"""
import weakref

import numpy as np
import scipy.sparse as sp

from ._apply import apply_forest
from ._partial_dependence import partial_dependence_add
from ._shap import expected_values, max_depth, shap_add
from ._shap_table import plan_trees, table_shap_add, tree_widths

# Rows are read in blocks of at most this many float64 values (32 MB).
BLOCK_VALUES = 1 << 22
# Contributions come from per-leaf tables (``_shap_table.pyx``) for the trees
# whose paths split on at most TABLE_FEATURES distinct features, while their
# tables (2**d doubles a leaf) fit in TABLE_VALUES (64 MB), and hold at most
# TABLE_ROW_SHARE values per row explained and path feature (building a value
# costs about what the recursion spends on a row's path feature: measured,
# tables break even near 10 rows on 31-leaf trees); the other trees take
# TreeSHAP's recursion (``_shap.pyx``).
TABLE_FEATURES = 12
TABLE_VALUES = 1 << 23
TABLE_ROW_SHARE = 0.5


def row_blocks(X):
    """``(start, stop, block)`` over the rows of ``X``: ``block`` is
    ``X[start:stop]`` as a C-ordered float64 array (dense input in that layout
    is not copied; sparse input is densified block by block)."""
    n, m = X.shape
    step = max(1, BLOCK_VALUES // max(m, 1))
    for start in range(0, n, step):
        block = X[start:start + step]
        if sp.issparse(block):
            block = block.toarray()
        yield start, min(n, start + step), np.ascontiguousarray(block, dtype=np.float64)


def _forest_args(forest, trees=None):
    """The forest's arrays as the kernels take them (of the trees ``trees``
    only, in that order; None: all), then the depth of its deepest leaf."""
    pick = slice(None) if trees is None else trees
    starts = forest.tree_starts[pick]
    return (forest.nodes, starts, forest.tree_outputs[pick], forest.bitset_starts[pick],
            forest.cat_bitsets, max_depth(forest.nodes, starts))


def expected_output(forest, n_outputs):
    """Per output: the sum of its trees' expected values (each split's
    branches weighted by their training-row counts), shape (n_outputs,)."""
    per_tree = expected_values(forest.nodes, forest.tree_starts)
    return np.bincount(forest.tree_outputs, weights=per_tree, minlength=n_outputs)


# tree_widths of each forest explained: a walk of every tree that does not
# depend on the rows, so done once per forest, not on every call
_WIDTHS = weakref.WeakKeyDictionary()


def split_forest(forest, n_rows):
    """``(tabled, walked)``: the indices of the trees whose contributions on
    ``n_rows`` rows come from tables and of those left to the recursion (see
    ``TABLE_FEATURES``)."""
    found = _WIDTHS.get(forest)
    if found is None:
        found = _WIDTHS[forest] = tree_widths(forest.nodes, forest.tree_starts)
    widths, sizes, slots = found
    fits = (widths <= TABLE_FEATURES) & (sizes <= TABLE_ROW_SHARE * n_rows * slots)
    fits &= np.cumsum(np.where(fits, sizes, 0)) <= TABLE_VALUES
    return np.flatnonzero(fits), np.flatnonzero(~fits)


def contributions(forest, X, n_outputs, n_threads=1):
    """TreeSHAP contributions of every feature to every output.

    Parameters
    ----------
    forest : ForestPredictor
    X : ndarray or scipy.sparse CSR matrix of shape (n_samples, n_features)
    n_outputs : int
        Number of outputs the trees add to (``tree_outputs`` below it).
    n_threads : int, default=1

    Returns
    -------
    phi : ndarray of shape (n_samples, n_outputs, n_features + 1)
        ``phi[i, k, f]``: feature ``f``'s contribution to output ``k`` on row
        ``i``; the last column holds :func:`expected_output`, so that a row sums
        to the forest's output (without any baseline).
    """
    out = np.zeros((X.shape[0], n_outputs, X.shape[1] + 1))
    if forest.n_trees:
        tabled, walked = split_forest(forest, X.shape[0])
        plan = plan_trees(forest.nodes, forest.tree_starts, tabled)
        table_args = (forest.nodes, forest.tree_starts, forest.tree_outputs,
                      forest.bitset_starts, forest.cat_bitsets, plan)
        walk_args = _forest_args(forest, walked)
        flat = out.reshape(X.shape[0], -1)
        for start, stop, block in row_blocks(X):
            # each row: the tabled trees in order, then the others
            table_shap_add(*table_args, block, flat[start:stop], X.shape[1] + 1, n_threads)
            shap_add(*walk_args, block, flat[start:stop], X.shape[1] + 1, n_threads)
        out[:, :, -1] = expected_output(forest, n_outputs)
    return out


def tree_features(forest):
    """``(starts, features)``: tree ``t`` splits on the distinct features
    ``features[starts[t]:starts[t + 1]]`` (sorted)."""
    nodes, starts = forest.nodes, list(forest.tree_starts) + [forest.nodes.shape[0]]
    per_tree = [np.unique(nodes["feature_idx"][a:b][nodes["is_leaf"][a:b] == 0])
                for a, b in zip(starts[:-1], starts[1:])]
    sizes = np.array([len(f) for f in per_tree], dtype=np.int64)
    features = np.concatenate([np.zeros(0, dtype=np.int32)] + per_tree).astype(np.int32)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), features


def interactions(forest, X, n_outputs, n_threads=1):
    """SHAP interaction values of every pair of features, per output.

    Parameters are those of :func:`contributions`.

    Returns
    -------
    phi : ndarray of shape (n_samples, n_outputs, n_features + 1, n_features + 1)
        ``phi[i, k, f, g]`` (``f != g``): half the Shapley interaction index of
        ``f`` and ``g`` for output ``k`` on row ``i`` (the pair's effect is
        split between ``[f, g]`` and ``[g, f]``); ``phi[i, k, f, f]``: ``f``'s
        main effect, so that ``phi[i, k, f].sum()`` is ``f``'s contribution.
        The last row and column are zero but for ``[-1, -1]``, which holds
        :func:`expected_output`.
    """
    width = X.shape[1] + 1
    out = np.zeros((X.shape[0], n_outputs, width, width))
    if forest.n_trees:
        args = _forest_args(forest)
        starts, features = tree_features(forest)
        flat = out.reshape(X.shape[0], -1)
        for start, stop, block in row_blocks(X):
            shap_add(*args, block, flat[start:stop], width, n_threads, starts, features)
        out[:, :, -1, -1] = expected_output(forest, n_outputs)
    return out


def apply(forest, X, n_threads=1):
    """Index of the leaf each row reaches in each tree, in the tree's node
    array: int32 array of shape (n_samples, n_trees), trees in forest order."""
    out = np.zeros((X.shape[0], forest.n_trees), dtype=np.int32)
    if forest.n_trees:
        for start, stop, block in row_blocks(X):
            apply_forest(forest.nodes, forest.tree_starts, forest.bitset_starts,
                         forest.cat_bitsets, block, out[start:stop], n_threads)
    return out


def partial_dependence(forest, grid, features, n_outputs, n_threads=1):
    """Partial dependence of every output on the target ``features`` at each
    grid point, by the recursion method (each tree walked once per point,
    splits on other features averaged by their children's training-row
    counts).

    Parameters
    ----------
    forest : ForestPredictor
    grid : ndarray of shape (n_points, n_targets)
        ``grid[p, k]``: the raw value (category code) of ``features[k]``.
    features : sequence of int of length n_targets
    n_outputs : int
    n_threads : int, default=1

    Returns
    -------
    averages : ndarray of shape (n_outputs, n_points)
        The sum over the trees of each output (no baseline); the same bits for
        any ``n_threads``.
    """
    grid = np.ascontiguousarray(grid, dtype=np.float64)
    out = np.zeros((n_outputs, grid.shape[0]))
    if forest.n_trees:
        partial_dependence_add(*_forest_args(forest), grid,
                               np.asarray(features, dtype=np.int32), out, n_threads)
    return out
