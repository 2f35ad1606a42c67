"""Checks that a node array is a tree the prediction kernels may walk.

The kernels trust their input (no bounds checks, a loop until a leaf), so a
tree read from a file or a pickle is checked once, here, before any kernel
sees it: vectorised NumPy, O(n_nodes) work.
"""
import numpy as np

from ..core._types import BITSET_DTYPE, BITSET_WORDS, MAX_TREE_DEPTH, NODE_DTYPE


class InvalidTreeError(ValueError):
    """A node array or its bitsets break a rule of :func:`check_tree`."""


def _fail(where, problem):
    raise InvalidTreeError(f"{where}: {problem}")


def check_tree(nodes, cat_bitsets, n_features, where="tree"):
    """Raise :class:`InvalidTreeError` unless the kernels may walk this tree.

    Parameters
    ----------
    nodes : object
        Must be a 1-D, C-contiguous array of ``NODE_DTYPE`` with at least
        one node; node 0 is the root.
    cat_bitsets : object
        Must be a C-contiguous uint32 array of shape (n_bitsets, 8).
    n_features : int
        Number of features of the model: split features must be below it.
    where : str
        Location named in error messages.

    Notes
    -----
    Checked: the flags are 0 or 1; split nodes have a feature below
    ``n_features``, children in ``1..n_nodes-1``, a numeric threshold that is
    not NaN (±inf are stored for splits of values against missing ones), a
    categorical ``bitset_idx`` below ``n_bitsets``; leaves have finite values; each node but the root
    has exactly one parent and every node is reached from the root. So the
    tree is binary and acyclic, and every walk ends in a leaf. Each node's
    ``depth`` is its distance from the root, at most ``MAX_TREE_DEPTH``: the
    walks that recurse (TreeSHAP) and the buffers sized by the depth stay
    bounded.
    """
    if not (isinstance(nodes, np.ndarray) and nodes.dtype == NODE_DTYPE):
        _fail(where, f"nodes must be an array of dtype {NODE_DTYPE}, got "
                     f"{getattr(nodes, 'dtype', type(nodes).__name__)}")
    if nodes.ndim != 1 or nodes.shape[0] == 0 or not nodes.flags.c_contiguous:
        _fail(where, "nodes must be a non-empty, contiguous 1-D array")
    if not (isinstance(cat_bitsets, np.ndarray) and cat_bitsets.dtype == BITSET_DTYPE
            and cat_bitsets.ndim == 2 and cat_bitsets.shape[1] == BITSET_WORDS
            and cat_bitsets.flags.c_contiguous):
        _fail(where, "cat_bitsets must be a contiguous uint32 array of shape (n, 8)")
    n = nodes.shape[0]
    is_leaf = nodes["is_leaf"]
    if np.any(is_leaf > 1):
        _fail(where, "is_leaf must be 0 or 1")
    internal = np.flatnonzero(is_leaf == 0)
    split = nodes[internal]
    for flag in ("missing_go_to_left", "is_categorical"):
        if np.any(split[flag] > 1):
            _fail(where, f"{flag} of a split node must be 0 or 1")
    # a binary tree of n nodes has (n - 1) / 2 split nodes
    if 2 * internal.size != n - 1:
        _fail(where, f"{internal.size} split nodes cannot make a binary tree of {n} nodes")
    left = split["left"].astype(np.int64)
    right = split["right"].astype(np.int64)
    bad = internal[(left >= n) | (right >= n)]
    if bad.size:
        _fail(where, f"child index out of range at node {int(bad[0])} ({n} nodes)")
    features = split["feature_idx"].astype(np.int64)
    bad = internal[features >= n_features]
    if bad.size:
        _fail(where, f"feature index {int(nodes['feature_idx'][bad[0]])} at node "
                     f"{int(bad[0])} is out of range for {n_features} features")
    categorical = split["is_categorical"] == 1
    bad = internal[~categorical & np.isnan(split["num_threshold"])]
    if bad.size:
        _fail(where, f"the numeric split at node {int(bad[0])} has a NaN threshold")
    # training never makes one; a NaN or infinite leaf poisons every prediction
    # that reaches it, and a warm start from it diverges
    bad = np.flatnonzero((is_leaf == 1) & ~np.isfinite(nodes["value"]))
    if bad.size:
        _fail(where, f"leaf {int(bad[0])} has the value {float(nodes['value'][bad[0]])}, "
                     "not a finite number")
    bad = internal[categorical & (split["bitset_idx"] >= cat_bitsets.shape[0])]
    if bad.size:
        _fail(where, f"bitset index {int(nodes['bitset_idx'][bad[0]])} at node "
                     f"{int(bad[0])} is out of range ({cat_bitsets.shape[0]} bitsets)")
    parents = np.bincount(np.concatenate([left, right]), minlength=n)
    if parents[0]:
        _fail(where, "the root (node 0) is the child of a node: the tree has a cycle")
    if np.any(parents > 1):
        _fail(where, f"node {int(np.argmax(parents > 1))} has more than one parent "
                     "(cycle or shared subtree)")
    # n - 1 child slots and none shared: every node but the root has one parent,
    # so a walk from the root visits a tree. Nodes it misses form a cycle.
    reached = np.zeros(n, dtype=bool)
    reached[0] = True
    is_internal = is_leaf == 0
    frontier = np.zeros(1, dtype=np.int64)
    level = 0
    while frontier.size:
        wrong = frontier[nodes["depth"][frontier] != level]
        if wrong.size:
            _fail(where, f"node {int(wrong[0])} records depth "
                         f"{int(nodes['depth'][wrong[0]])}, but lies at depth {level}")
        frontier = frontier[is_internal[frontier]]
        if frontier.size and level == MAX_TREE_DEPTH:
            _fail(where, f"the tree is deeper than {MAX_TREE_DEPTH}, the deepest hgbt "
                         "grows and reads")
        frontier = np.concatenate([nodes["left"][frontier],
                                   nodes["right"][frontier]]).astype(np.int64)
        reached[frontier] = True
        level += 1
    if not reached.all():
        _fail(where, f"node {int(np.argmin(reached))} is not reachable from the root "
                     "(a cycle)")
