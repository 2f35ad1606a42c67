"""A fitted tree as a flat node array, and its prediction on raw values."""
import numpy as np

from ._predictor import predict_add
from ._types import Y_DTYPE


class TreePredictor:
    """One tree: node 0 is the root; leaves carry already-shrunk values.

    Parameters
    ----------
    nodes : ndarray of NODE_DTYPE
    """

    def __init__(self, nodes):
        self.nodes = nodes

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
        """Add this tree's prediction on raw ``X`` to ``out`` (float64, in place)."""
        predict_add(self.nodes, X, out, n_threads)
        return out

    def predict(self, X, n_threads=1):
        """This tree's prediction on raw ``X`` of shape (n_samples, n_features)."""
        return self.predict_add(X, np.zeros(X.shape[0], dtype=Y_DTYPE), n_threads)
