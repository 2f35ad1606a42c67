"""Grow one tree: choose splits from node histograms, best-first or level by level."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._grower import Growth
from ._splitting import SplitSettings, leaf_value
from ..core._types import BITSET_DTYPE
from ..core.params import TREE_PARAMS, resolved_default
from ._predictor import nodes_from_grown
from .predictor import TreePredictor


@dataclass(frozen=True)
class TreeSettings:
    """How every tree of a fit grows, built once per fit.

    The tree-stage parameters (defaults: ``hgbt.core.params``, a tree size
    ``'auto'`` as its first size), the shrinkage, and the fit's constraints
    over the trees' features.

    Attributes
    ----------
    grow_policy : {'lossguide', 'depthwise'}
    max_leaf_nodes, max_depth : int or None
    min_samples_leaf : int
    min_child_weight, min_gain_to_split, l1_regularization, l2_regularization : float
    max_cat_to_onehot : int
    cat_smooth, cat_l2 : float
    min_data_per_group, max_cat_threshold : int
        Categorical split search (see ``_splitting``).
    learning_rate : float
        Shrinkage applied to the leaf values.
    interaction_groups : list of sets of int, or None
        Interaction constraints: a node may split only on features of the
        groups that contain every feature used above it.
    is_categorical : array-like of bool of shape (n_features,) or None
        Categorical features (bin = category code): split on category sets.
    known_cat_bitsets : ndarray of shape (n_features, 8), uint32, or None
        Per categorical feature, the codes seen at fit time. In the tree's
        bitsets every other code takes the missing direction, so categories
        unseen at fit time follow missing values.
    monotonic_cst : ndarray of int8 of shape (n_features,) or None
        -1 / 0 / 1 per feature. A split on a constrained feature must order
        its children's values accordingly, and the children's subtrees are
        bounded on either side of the midpoint of the two values, so the
        whole tree is monotone in that feature.
    """

    grow_policy: str = resolved_default("grow_policy")
    max_leaf_nodes: Optional[int] = resolved_default("max_leaf_nodes")
    max_depth: Optional[int] = resolved_default("max_depth")
    min_samples_leaf: int = resolved_default("min_samples_leaf")
    min_child_weight: float = resolved_default("min_child_weight")
    min_gain_to_split: float = resolved_default("min_gain_to_split")
    l1_regularization: float = resolved_default("l1_regularization")
    l2_regularization: float = resolved_default("l2_regularization")
    max_cat_to_onehot: int = resolved_default("max_cat_to_onehot")
    cat_smooth: float = resolved_default("cat_smooth")
    cat_l2: float = resolved_default("cat_l2")
    min_data_per_group: int = resolved_default("min_data_per_group")
    max_cat_threshold: int = resolved_default("max_cat_threshold")
    learning_rate: float = resolved_default("learning_rate")
    interaction_groups: Optional[list] = None
    is_categorical: Optional[np.ndarray] = None
    known_cat_bitsets: Optional[np.ndarray] = None
    monotonic_cst: Optional[np.ndarray] = None

    def split_params(self):
        """The split search's settings, as :class:`SplitSettings` names them."""
        return {name: getattr(self, name) for name in TREE_PARAMS
                if name not in ("grow_policy", "max_leaf_nodes", "max_depth")}


def threshold_table(bin_thresholds):
    """(n_features, 256): bin b's upper edge per feature, +inf past a
    feature's last one (the last value bin as threshold separates values
    from missing): a grown split's ``num_threshold`` by (feature, bin)."""
    table = np.full((len(bin_thresholds), 256), np.inf)
    for f, thresholds in enumerate(bin_thresholds):
        table[f, :min(thresholds.size, 256)] = thresholds[:256]
    return table


class TreeGrower:
    """Grow a tree on a training-data source.

    The loop runs in the kernel (``hgbt.tree._grower``), over a priority queue
    of splittable nodes: ``'lossguide'`` pops the node with the largest gain
    (ties: oldest node), ``'depthwise'`` pops the shallowest (ties: oldest),
    i.e. level by level. Only the child with fewer rows gets its histogram
    from rows; its sibling's is the parent's minus it. This class sets the
    tree up (split settings, interaction groups, feature masks) and turns
    the kernel's node records into a :class:`TreePredictor`.

    Parameters
    ----------
    data : LocalTrainingData
        Where the tree grows: ``data.grow_tree(split_settings, growth, ...)``
        runs the kernel on the data's rows (on a Dask worker, its shard's,
        node histograms summed with the other shards': ``data.collective``).
    bin_thresholds : list of ndarray
        Per feature, the raw value of each bin's upper edge.
    n_bins_non_missing : ndarray of uint32
    settings : TreeSettings, default=None
        How the tree grows (None: the defaults).
    feature_sampler : FeatureSampler or None
        Draws the features a tree, and each of its nodes, may split on.
    n_threads : int
    split_settings : SplitSettings or None
        The fit's split settings when already built (else built here from
        ``settings``).
    """

    def __init__(self, data, bin_thresholds, n_bins_non_missing, settings=None, *,
                 feature_sampler=None, n_threads=1, split_settings=None):
        settings = TreeSettings() if settings is None else settings
        self.data = data
        self.bin_thresholds = bin_thresholds
        self.n_bins_non_missing = n_bins_non_missing
        self.settings = settings
        self.feature_sampler = feature_sampler
        self.is_categorical = (None if settings.is_categorical is None
                               or not np.any(settings.is_categorical)
                               else np.asarray(settings.is_categorical, dtype=np.uint8))
        self.known_cat_bitsets = (
            None if settings.known_cat_bitsets is None else
            np.ascontiguousarray(settings.known_cat_bitsets, dtype=BITSET_DTYPE))
        self.monotonic_cst = (None if settings.monotonic_cst is None
                              or not np.any(settings.monotonic_cst)
                              else np.asarray(settings.monotonic_cst, dtype=np.int8))
        self.n_threads = n_threads
        self.split_settings = split_settings or self.make_split_settings(
            data, n_bins_non_missing, **settings.split_params(),
            is_categorical=self.is_categorical, monotonic_cst=self.monotonic_cst)
        members = None
        if settings.interaction_groups is not None:
            # uint8 membership (n_groups, n_features): the kernel's groups
            members = np.zeros((len(settings.interaction_groups), data.n_features),
                               dtype=np.uint8)
            for g, group in enumerate(settings.interaction_groups):
                members[g, list(group)] = 1
        self.growth = Growth(settings.grow_policy == "lossguide", settings.max_leaf_nodes,
                             settings.max_depth, members)

    @staticmethod
    def make_split_settings(data, n_bins_non_missing, **params):
        """The :class:`~hgbt.tree._splitting.SplitSettings` of a fit on ``data``
        (its feature layout included): built once, used for every node."""
        layout = getattr(data, "split_layout", {})
        if layout:
            layout = dict(layout, n_columns=data.layout.n_columns)
        return SplitSettings(n_bins_non_missing, data.n_bins - 1, **params, **layout)

    def grow(self, feature_sampler=None):
        """Grow the tree and return it as a :class:`TreePredictor`.

        The whole loop runs in one kernel call (``data.grow_tree``,
        :mod:`hgbt.tree._grower`). ``feature_sampler``: this tree's, if not the
        one given at construction (a grower serves every tree of a fit).
        The caller's raw predictions are not touched; use the data's
        ``add_leaf_values`` for that.
        """
        if feature_sampler is not None:
            self.feature_sampler = feature_sampler
        self._tree_mask = (None if self.feature_sampler is None
                           else self.feature_sampler.tree_mask())
        node_masks = None
        if self.feature_sampler is not None and self.feature_sampler.colsample_bynode != 1.0:
            # drawn in the order the kernel searches nodes
            sampler, tree_mask = self.feature_sampler, self._tree_mask
            node_masks = lambda k: np.stack([sampler.node_mask(tree_mask)
                                             for _ in range(k)])
        nodes = self.data.grow_tree(self.split_settings, self.growth,
                                    tree_mask=self._tree_mask, node_masks=node_masks)
        return self._finish(nodes)

    def _thresholds(self):
        if getattr(self, "_threshold_table", None) is None:
            self._threshold_table = threshold_table(self.bin_thresholds)
        return self._threshold_table

    def _finish(self, records):
        # The grown tree (the kernel's node records) as a TreePredictor.
        self._records = records
        nodes, bitsets, self._leaves = nodes_from_grown(
            records, self.settings.learning_rate, self._thresholds(), self.known_cat_bitsets)
        return TreePredictor(nodes, bitsets)

    def renewed_value(self, node_id, sum_gradients, sum_hessians):
        """A leaf's shrunk Newton value from other (e.g. unquantized) sums,
        within the leaf's bounds (none below ``min_child_weight`` of hessian)."""
        settings = self.settings
        return settings.learning_rate * leaf_value(
            sum_gradients, sum_hessians, settings.l1_regularization,
            settings.l2_regularization, *self._bounds(node_id), settings.min_child_weight)

    def clip_leaf_value(self, node_id, value):
        """Clip a re-fitted (unshrunk) leaf value into the leaf's bounds."""
        lower, upper = self._bounds(node_id)
        return min(max(value, lower), upper)

    def _bounds(self, node_id):
        record = self._records[node_id]
        return float(record["lower"]), float(record["upper"])

    def leaf_ids(self):
        """Ids of the leaves of the last grown tree."""
        return self._leaves
