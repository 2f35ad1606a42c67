"""Grow trees whose leaves hold a value per output (vector leaves).

A multi-output fit with ``multi_strategy='multi_output_tree'`` grows one tree
a round for all its outputs (``hgbt.tree._vector_grower``): the outputs share
the splits, chosen on the gain summed over them. The model stores such a tree
as one tree per output, the same nodes with that output's leaf values,
hessian sums and share of each split's gain, so predicting, explaining,
saving and exporting a round of k trees work unchanged.
"""
import numpy as np

from ._predictor import nodes_from_grown
from ._vector_grower import VectorKernel
from .grower import TreeSettings, threshold_table
from .predictor import TreePredictor


class VectorTreeGrower:
    """Grow vector-leaf trees on plain binned rows.

    Parameters
    ----------
    X_binned : ndarray of uint8 of shape (n_samples, n_features), F-ordered
        The binned training rows, every feature its own column.
    bin_thresholds : list of ndarray
        Per feature, the raw value of each bin's upper edge.
    n_bins_non_missing : ndarray of uint32
    missing_bin : int
    n_outputs : int
    shared_hessian : bool
        Every output has the same hessians (squared error's: the row weights):
        :meth:`grow` then reads the first row of them, and the histograms
        keep one hessian sum for all outputs.
    settings : TreeSettings
        How the trees grow; categorical features, monotonic and interaction
        constraints are not available with vector leaves.
    """

    def __init__(self, X_binned, bin_thresholds, n_bins_non_missing, missing_bin, n_outputs,
                 shared_hessian, settings: TreeSettings):
        unsupported = [name for name, given in (
            ("categorical features", settings.is_categorical is not None
             and np.any(settings.is_categorical)),
            ("monotonic_cst", settings.monotonic_cst is not None
             and np.any(settings.monotonic_cst)),
            ("interaction_cst", settings.interaction_groups is not None)) if given]
        if unsupported:
            raise ValueError(f"multi_strategy='multi_output_tree' does not support "
                             f"{' or '.join(unsupported)}; use "
                             "multi_strategy='one_output_per_tree'.")
        self.settings = settings
        self.shared_hessian = shared_hessian
        self.kernel = VectorKernel(
            X_binned, n_bins_non_missing, missing_bin, n_outputs,
            shared_hessian=shared_hessian,
            l1_regularization=settings.l1_regularization,
            l2_regularization=settings.l2_regularization,
            min_gain_to_split=settings.min_gain_to_split,
            min_child_weight=settings.min_child_weight,
            min_samples_leaf=settings.min_samples_leaf,
            max_leaf_nodes=settings.max_leaf_nodes, max_depth=settings.max_depth,
            lossguide=settings.grow_policy == "lossguide")
        self._thresholds = threshold_table(bin_thresholds)
        self._shrunk = None

    def grow(self, gradients, hessians, rows=None, tree_mask=None, n_threads=1):
        """Grow a tree on ``rows`` (sorted; None: all) from the outputs'
        ``gradients`` (n_outputs, n_samples) and ``hessians`` (the same, or
        (n_outputs, 1) when constant); ``tree_mask``: the features it may
        split on (None: all). Returns one :class:`TreePredictor` per output."""
        if self.shared_hessian:
            hessians = hessians[:1]
        records, values, hessian_sums, gains = self.kernel.grow(gradients, hessians, rows,
                                                                tree_mask, n_threads)
        nodes, bitsets, _ = nodes_from_grown(records, 1.0, self._thresholds, None)
        k = values.shape[1]
        self._shrunk = self.settings.learning_rate * values
        inner = nodes["is_leaf"] == 0
        trees = []
        for j in range(k):
            own = nodes.copy()
            own["value"] = self._shrunk[:, j]
            own["sum_hessians"] = hessian_sums[:, j]
            own["gain"][inner] = gains[inner, j]
            trees.append(TreePredictor(own, bitsets))
        return trees

    def add_leaf_values(self, raw, n_threads=1):
        """Add the last tree's leaf values to ``raw`` (n_outputs, n_samples)
        at the rows it grew on."""
        self.kernel.add_leaf_values(raw, self._shrunk, n_threads)
