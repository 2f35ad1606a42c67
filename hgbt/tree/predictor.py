"""A fitted tree as a flat node array, and its prediction on raw values."""
import numpy as np
import scipy.sparse as sp

from ._predictor import (pack_forest, predict_add, predict_binned_add, predict_csr_add,
                         predict_forest_add, predict_forest_csr_add,
                         predict_forest_packed_add)
from ..core._types import (BITSET_DTYPE, BITSET_WORDS, NODE_DTYPE, NODE_FIELDS_FIRST, Y_DTYPE,
                           stored_node_dtype, upgrade_nodes)

# Dense inputs of at least this many rows take the packed forest (blocks of rows
# walk each tree in lockstep, branch-free); smaller ones are walked row by row,
# which is faster below 4-8 rows (benchmarks/RESULTS.md).
PACKED_MIN_ROWS = 8


def _csr_parts(X):
    """``(data, indices, indptr, n_features)`` of a CSR ``X``; None if ``X`` is dense.

    Only CSR is read directly (a row is contiguous there); the estimator
    converts other formats, so meeting one here is a caller's bug.
    """
    if not sp.issparse(X):
        return None
    if X.format != "csr":
        raise TypeError(f"Sparse X must be in CSR format at this level, got "
                        f"{X.format!r}; convert it with X.tocsr().")
    if X.ndim != 2:
        raise ValueError(f"Sparse X must be 2-D, got shape {X.shape}.")
    return X.data, X.indices, X.indptr, X.shape[1]


class TreePredictor:
    """One tree: node 0 is the root; leaves carry already-shrunk values.

    Parameters
    ----------
    nodes : ndarray of NODE_DTYPE
    cat_bitsets : ndarray of shape (n_bitsets, 8), uint32, or None
        Left sets of the categorical nodes: node ``i`` with
        ``is_categorical`` sends code ``c`` left iff bit ``c % 32`` of
        ``cat_bitsets[bitset_idx[i], c // 32]`` is set.
    """

    def __init__(self, nodes, cat_bitsets=None):
        self.nodes = nodes
        if cat_bitsets is None:
            cat_bitsets = np.zeros((0, BITSET_WORDS), dtype=BITSET_DTYPE)
        cat_bitsets = np.ascontiguousarray(cat_bitsets, dtype=BITSET_DTYPE)
        categorical = (nodes["is_categorical"] != 0) & (nodes["is_leaf"] == 0)
        if cat_bitsets.ndim != 2 or cat_bitsets.shape[1] != BITSET_WORDS or (
                categorical.any()
                and nodes["bitset_idx"][categorical].max() >= cat_bitsets.shape[0]):
            raise ValueError("cat_bitsets must have shape (n, 8) with a row for every "
                             "categorical node's bitset_idx.")
        self.cat_bitsets = cat_bitsets

    def __getstate__(self):
        # The arrays as raw bytes: unpickling then never builds NODE_DTYPE from
        # the pickle. NumPy trusts a pickled structured dtype's field table,
        # and a damaged one crashes on first use, before any check can run.
        state = dict(self.__dict__)
        state["nodes"] = self.nodes.tobytes()
        state["node_fields"] = NODE_DTYPE.names  # pickles before it: NODE_FIELDS_FIRST
        state["cat_bitsets"] = self.cat_bitsets.tobytes()
        return state

    def __setstate__(self, state):
        """Rebuild the arrays of :meth:`__getstate__` (pickles that hold arrays
        are taken as they are); ``hgbt.tree.validation.check_tree`` checks them."""
        state = dict(state)
        nodes, bitsets = state.get("nodes"), state.get("cat_bitsets")
        fields = state.pop("node_fields", NODE_FIELDS_FIRST)
        if isinstance(nodes, bytes):
            if not (isinstance(fields, tuple) and all(isinstance(n, str) for n in fields)):
                raise ValueError("Pickled tree node fields are not a tuple of names.")
            dtype = stored_node_dtype(fields)
            if len(nodes) % dtype.itemsize:
                raise ValueError("Pickled tree nodes are not a whole number of nodes.")
            nodes = np.frombuffer(nodes, dtype=dtype)
            state["nodes"] = upgrade_nodes(nodes.copy())
        if isinstance(bitsets, bytes):
            row = BITSET_WORDS * np.dtype(BITSET_DTYPE).itemsize
            if len(bitsets) % row:
                raise ValueError("Pickled cat_bitsets are not a whole number of rows.")
            state["cat_bitsets"] = np.frombuffer(bitsets, dtype=BITSET_DTYPE).reshape(
                -1, BITSET_WORDS).copy()
        self.__dict__.update(state)

    @property
    def n_leaves(self):
        return int(self.nodes["is_leaf"].sum())

    @property
    def max_depth(self):
        return int(self.nodes["depth"].max())

    @property
    def leaf_values(self):
        return self.nodes["value"][self.nodes["is_leaf"].astype(bool)]

    def predict_add(self, X, out, n_threads=1):
        """Add this tree's prediction on raw ``X`` to ``out`` (float64, in place).

        ``X`` is a 2-D float array or a scipy.sparse CSR matrix/array (read
        without densifying; same result as on ``X.toarray()``).
        """
        cat_bitsets = getattr(self, "cat_bitsets", None)
        csr = _csr_parts(X)
        if csr is None:
            predict_add(self.nodes, X, out, n_threads, cat_bitsets)
        else:
            predict_csr_add(self.nodes, *csr, out, n_threads, cat_bitsets)
        return out

    def predict(self, X, n_threads=1):
        """This tree's prediction on raw ``X`` of shape (n_samples, n_features)
        (dense or CSR)."""
        return self.predict_add(X, np.zeros(X.shape[0], dtype=Y_DTYPE), n_threads)

    def predict_binned_add(self, X_binned, rows, missing_bin, out, n_threads=1):
        """Add this tree's prediction on the bins of ``rows`` to ``out[rows]``."""
        predict_binned_add(self.nodes, X_binned, rows, missing_bin, out, n_threads,
                           getattr(self, "cat_bitsets", None))
        return out


class ForestPredictor:
    """Every tree of a model in one node array, predicted in one kernel call.

    Bit-identical to adding the trees one by one (each output adds its trees
    in the same order). Dense inputs of ``PACKED_MIN_ROWS`` rows or more walk
    a compact copy of the forest (``packed``, see ``_predictor.pack_forest``);
    smaller ones and CSR input walk the node array row by row.

    Parameters
    ----------
    rounds : list of list of TreePredictor
        ``rounds[r][k]``: tree ``k`` (output row ``k`` of the raw predictions)
        of round ``r``.
    """

    def __init__(self, rounds):
        trees = [(k, tree) for trees in rounds for k, tree in enumerate(trees)]
        sizes = np.array([tree.nodes.shape[0] for _, tree in trees], dtype=np.int64)
        n_bitsets = np.array([tree.cat_bitsets.shape[0] for _, tree in trees], dtype=np.int64)
        self.tree_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.bitset_starts = np.concatenate([[0], np.cumsum(n_bitsets)[:-1]]).astype(np.int64)
        self.tree_outputs = np.array([k for k, _ in trees], dtype=np.int32)
        dtype = trees[0][1].nodes.dtype if trees else None
        self.nodes = (np.concatenate([tree.nodes for _, tree in trees]) if trees
                      else np.empty(0, dtype=dtype))
        self.cat_bitsets = np.ascontiguousarray(np.concatenate(
            [np.zeros((0, BITSET_WORDS), dtype=BITSET_DTYPE)]
            + [tree.cat_bitsets for _, tree in trees]), dtype=BITSET_DTYPE)
        self.n_trees = len(trees)
        self._trees = [(tree, tree.nodes, tree.cat_bitsets) for _, tree in trees]
        # None where the compact walk cannot follow (a NaN threshold)
        self.packed = (pack_forest(self.nodes, self.tree_starts, self.bitset_starts,
                                   self.cat_bitsets) if trees else None)

    def holds(self, rounds):
        """Whether this forest was packed from these very trees (and arrays)."""
        trees = [tree for trees in rounds for tree in trees]
        return len(trees) == len(self._trees) and all(
            a is tree and b is tree.nodes and c is tree.cat_bitsets
            for tree, (a, b, c) in zip(trees, self._trees))

    def predict_add(self, X, out, n_threads=1):
        """Add every tree's prediction on raw ``X`` (dense or CSR) to ``out`` of
        shape (K, n_samples)."""
        csr = _csr_parts(X)
        if self.n_trees:
            if csr is None and self.packed is not None and X.shape[0] >= PACKED_MIN_ROWS:
                predict_forest_packed_add(*self.packed, self.tree_starts, self.tree_outputs,
                                          X, out, n_threads)
            elif csr is None:
                predict_forest_add(self.nodes, self.tree_starts, self.tree_outputs,
                                   self.bitset_starts, self.cat_bitsets, X, out,
                                   n_threads)
            else:
                predict_forest_csr_add(self.nodes, self.tree_starts, self.tree_outputs,
                                       self.bitset_starts, self.cat_bitsets, *csr, out,
                                       n_threads)
        return out
