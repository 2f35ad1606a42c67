"""Grow one tree: choose splits from node histograms, best-first or level by level."""
import heapq

import numpy as np

from ._splitting import SplitSettings, leaf_value
from ._types import (BITSET_DTYPE, BITSET_WORDS, GROWN_NODE_DTYPE, NODE_DTYPE,
                     SPLIT_INFO_DTYPE)
from .predictor import TreePredictor

_ALL_FEATURES = np.empty(0, dtype=np.uint8)


class _Node:
    """A node while the tree grows."""

    __slots__ = ("node_id", "depth", "sum_gradients", "sum_hessians", "count",
                 "histogram", "split", "left", "right", "groups", "lower", "upper")

    def __init__(self, node_id, depth, sum_gradients, sum_hessians, count, groups=None):
        self.node_id = node_id
        self.depth = depth
        self.sum_gradients = sum_gradients
        self.sum_hessians = sum_hessians
        self.count = count
        self.histogram = None
        self.split = None
        self.left = self.right = None
        self.groups = groups  # interaction groups still allowed on this path
        # Bounds of the node's value (unshrunk) under monotonic constraints.
        self.lower, self.upper = -np.inf, np.inf


class TreeGrower:
    """Grow a tree on a training-data source.

    Both policies share one loop over a priority queue of splittable nodes:
    ``'lossguide'`` pops the node with the largest gain (ties: oldest node),
    ``'depthwise'`` pops the shallowest (ties: oldest), i.e. level by level.
    Only the child with fewer rows gets its histogram from rows; its sibling's
    is the parent's minus it.

    Parameters
    ----------
    data : LocalTrainingData or compatible
        Where histograms, partitions and leaf updates happen.
    bin_thresholds : list of ndarray
        Per feature, the raw value of each bin's upper edge.
    n_bins_non_missing : ndarray of uint32
    grow_policy : {'lossguide', 'depthwise'}
    max_leaf_nodes, max_depth : int or None
    min_samples_leaf : int
    min_child_weight, min_gain_to_split, l1_regularization, l2_regularization : float
    learning_rate : float
        Shrinkage applied to the leaf values.
    feature_sampler : FeatureSampler or None
        Draws the features a tree, and each of its nodes, may split on.
    interaction_groups : list of sets of int, or None
        Interaction constraints: a node may split only on features of the
        groups that contain every feature used above it.
    is_categorical : array-like of bool of shape (n_features,) or None
        Categorical features (bin = category code): split on category sets.
    known_cat_bitsets : ndarray of shape (n_features, 8), uint32, or None
        Per categorical feature, the codes seen at fit time. In the tree's
        bitsets every other code takes the missing direction, so categories
        unseen at fit time follow missing values.
    max_cat_to_onehot : int
    cat_smooth, cat_l2 : float
    min_data_per_group, max_cat_threshold : int
        Categorical split search (see ``_splitting``).
    monotonic_cst : ndarray of int8 of shape (n_features,) or None
        -1 / 0 / 1 per feature. A split on a constrained feature must order
        its children's values accordingly, and the children's subtrees are
        bounded on either side of the midpoint of the two values, so the
        whole tree is monotone in that feature.
    n_threads : int
    """

    def __init__(self, data, bin_thresholds, n_bins_non_missing, *,
                 grow_policy="lossguide", max_leaf_nodes=31, max_depth=None,
                 min_samples_leaf=20, min_child_weight=1e-3, min_gain_to_split=0.0,
                 l1_regularization=0.0, l2_regularization=0.0, learning_rate=1.0,
                 feature_sampler=None, interaction_groups=None, is_categorical=None,
                 known_cat_bitsets=None, max_cat_to_onehot=4, cat_smooth=10.0,
                 cat_l2=10.0, min_data_per_group=100, max_cat_threshold=32,
                 monotonic_cst=None, n_threads=1, split_settings=None):
        self.data = data
        self.bin_thresholds = bin_thresholds
        self.n_bins_non_missing = n_bins_non_missing
        self.grow_policy = grow_policy
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.min_child_weight = min_child_weight
        self.min_gain_to_split = min_gain_to_split
        self.l1_regularization = l1_regularization
        self.l2_regularization = l2_regularization
        self.learning_rate = learning_rate
        self.feature_sampler = feature_sampler
        self.interaction_groups = interaction_groups
        self.is_categorical = (None if is_categorical is None or not np.any(is_categorical)
                               else np.asarray(is_categorical, dtype=np.uint8))
        self.known_cat_bitsets = known_cat_bitsets
        self.max_cat_to_onehot = max_cat_to_onehot
        self.cat_smooth = cat_smooth
        self.cat_l2 = cat_l2
        self.min_data_per_group = min_data_per_group
        self.max_cat_threshold = max_cat_threshold
        self.monotonic_cst = (None if monotonic_cst is None or not np.any(monotonic_cst)
                              else np.asarray(monotonic_cst, dtype=np.int8))
        self.n_threads = n_threads
        self.split_settings = split_settings or self.make_split_settings(
            data, n_bins_non_missing, min_samples_leaf=min_samples_leaf,
            min_child_weight=min_child_weight, min_gain_to_split=min_gain_to_split,
            l1_regularization=l1_regularization, l2_regularization=l2_regularization,
            is_categorical=self.is_categorical, max_cat_to_onehot=max_cat_to_onehot,
            cat_smooth=cat_smooth, cat_l2=cat_l2, min_data_per_group=min_data_per_group,
            max_cat_threshold=max_cat_threshold, monotonic_cst=self.monotonic_cst)
        self._group_members = None
        if interaction_groups is not None:
            # uint8 membership (n_groups, n_features): the kernel's groups
            self._group_members = np.zeros((len(interaction_groups), data.n_features),
                                           dtype=np.uint8)
            for g, group in enumerate(interaction_groups):
                self._group_members[g, list(group)] = 1

    @staticmethod
    def make_split_settings(data, n_bins_non_missing, **params):
        """The :class:`~hgbt._splitting.SplitSettings` of a fit on ``data``
        (its feature layout included): built once, used for every node."""
        layout = getattr(data, "split_layout", {})
        if layout:
            layout = dict(layout, n_columns=data.layout.n_columns)
        return SplitSettings(n_bins_non_missing, data.n_bins - 1, **params, **layout)

    def _may_split(self, node):
        if self.max_depth is not None and node.depth >= self.max_depth:
            return False
        return (node.count >= 2 * self.min_samples_leaf
                and node.sum_hessians >= 2 * self.min_child_weight)

    def _feature_mask(self, node):
        mask = (None if self.feature_sampler is None
                else self.feature_sampler.node_mask(self._tree_mask))
        if node.groups is not None:
            allowed = np.zeros(self.data.n_features, dtype=np.uint8)
            for g in node.groups:
                allowed[list(self.interaction_groups[g])] = 1
            mask = allowed if mask is None else mask & allowed
        return _ALL_FEATURES if mask is None else mask

    def _find_split(self, node, histogram):
        split = self.split_settings.find(
            histogram, node.sum_gradients, node.sum_hessians, node.count,
            self._feature_mask(node), node.lower, node.upper, self.n_threads,
            self._per_feature)
        if split["feature_idx"] < 0:
            self.data.release(histogram)
            return
        node.split = split
        node.histogram = histogram
        key = -float(split["gain"]) if self.grow_policy == "lossguide" else node.depth
        heapq.heappush(self._heap, (key, node.node_id, node))

    def _child(self, parent, side):
        s = parent.split
        groups = parent.groups
        if groups is not None:  # keep the groups that allow the split feature
            f = int(s["feature_idx"])
            groups = [g for g in groups if f in self.interaction_groups[g]]
        node = _Node(len(self._nodes), parent.depth + 1,
                     float(s["sum_gradients_" + side]), float(s["sum_hessians_" + side]),
                     int(s["n_samples_" + side]), groups)
        self._nodes.append(node)
        return node

    def grow(self):
        """Grow the tree and return it as a :class:`TreePredictor`.

        The caller's raw predictions are not touched; use
        :meth:`add_leaf_values` for that.
        """
        data = self.data
        self._tree_mask = (None if self.feature_sampler is None
                           else self.feature_sampler.tree_mask())
        if self._in_kernel():
            return self._grow_in_kernel()
        self._heap = []
        self._per_feature = np.empty(data.n_features, dtype=SPLIT_INFO_DTYPE)
        hist = data.node_histogram(0)
        totals = hist[0]  # every row falls in one bin of column 0
        root = _Node(0, 0, float(totals["sum_gradients"].sum()),
                     float(totals["sum_hessians"].sum()), int(totals["count"].sum()),
                     None if self.interaction_groups is None
                     else list(range(len(self.interaction_groups))))
        self._nodes = [root]
        if self._may_split(root):
            self._find_split(root, hist)
        else:
            data.release(hist)
        n_leaves = 1
        while self._heap and (self.max_leaf_nodes is None
                              or n_leaves < self.max_leaf_nodes):
            _, _, node = heapq.heappop(self._heap)
            s = node.split
            left, right = self._child(node, "left"), self._child(node, "right")
            self._bound_children(node, left, right)
            node.left, node.right = left, right
            data.split(node.node_id, left.node_id, right.node_id,
                       int(s["feature_idx"]), int(s["bin_idx"]),
                       bool(s["missing_go_to_left"]),
                       s["cat_bitset"] if s["is_categorical"] else None)
            n_leaves += 1
            parent_hist, node.histogram = node.histogram, None
            more = self.max_leaf_nodes is None or n_leaves < self.max_leaf_nodes
            small, large = (left, right) if left.count <= right.count else (right, left)
            small_ok = more and self._may_split(small)
            large_ok = more and self._may_split(large)
            if small_ok or large_ok:
                small_hist = data.node_histogram(small.node_id)
                if large_ok:
                    self._find_split(large, data.sibling_histogram(parent_hist, small_hist))
                if small_ok:
                    self._find_split(small, small_hist)
                else:
                    data.release(small_hist)
            data.release(parent_hist)
        for _, _, node in self._heap:  # left unsplit: they become leaves
            data.release(node.histogram)
            node.histogram = node.split = None
        self._heap = []
        return self._finish(self._node_records())

    def _node_records(self):
        # the grown _Node objects as the kernel's node records
        nodes = self._nodes
        records = np.zeros(len(nodes), dtype=GROWN_NODE_DTYPE)
        for field in ("sum_gradients", "sum_hessians", "count", "depth", "lower", "upper"):
            records[field] = [getattr(node, field) for node in nodes]
        records["value"] = [self._unshrunk_value(node) for node in nodes]
        records["left"] = [-1 if node.left is None else node.left.node_id for node in nodes]
        records["right"] = [-1 if node.right is None else node.right.node_id
                            for node in nodes]
        for node in nodes:
            if node.left is not None:
                records["split"][node.node_id] = node.split
        return records

    def _finish(self, records):
        # The grown tree (node records, either loop's) as a TreePredictor.
        self._leaves = np.flatnonzero(records["left"] < 0).tolist()
        self._lower = records["lower"].tolist()
        self._upper = records["upper"].tolist()
        return self._predictor_from_nodes(records)

    def _in_kernel(self):
        # Every local source grows its trees in the kernel (hgbt._grower);
        # the Python loop below serves sources without one (hgbt.dask).
        return getattr(self.data, "grows_trees", False)

    def _grow_in_kernel(self):
        # The whole loop of grow() in one kernel call (hgbt._grower).
        node_masks = None
        if self.feature_sampler is not None and self.feature_sampler.colsample_bynode != 1.0:
            # drawn in the order nodes are searched, as _feature_mask draws them
            sampler, tree_mask = self.feature_sampler, self._tree_mask
            node_masks = lambda k: np.stack([sampler.node_mask(tree_mask)
                                             for _ in range(k)])
        nodes = self.data.grow_tree(
            self.split_settings, lossguide=self.grow_policy == "lossguide",
            max_leaf_nodes=self.max_leaf_nodes, max_depth=self.max_depth,
            interaction_groups=self._group_members, tree_mask=self._tree_mask,
            node_masks=node_masks)
        return self._finish(nodes)

    def _predictor_from_nodes(self, grown):
        # GROWN_NODE_DTYPE records -> the predictor's node array and bitsets
        nodes = np.zeros(grown.shape[0], dtype=NODE_DTYPE)
        nodes["value"] = self.learning_rate * grown["value"]
        nodes["count"] = grown["count"]
        nodes["depth"] = grown["depth"]
        inner = np.flatnonzero(grown["left"] >= 0)
        nodes["is_leaf"] = grown["left"] < 0
        split = grown["split"][inner]
        for field in ("feature_idx", "missing_go_to_left", "gain"):
            nodes[field][inner] = split[field]
        nodes["left"][inner] = grown["left"][inner]
        nodes["right"][inner] = grown["right"][inner]
        categorical = split["is_categorical"] != 0
        numeric = inner[~categorical]
        nodes["bin_threshold"][numeric] = split["bin_idx"][~categorical]
        for node_id, f, b in zip(numeric.tolist(),
                                 split["feature_idx"][~categorical].tolist(),
                                 split["bin_idx"][~categorical].tolist()):
            thresholds = self.bin_thresholds[f]
            # the last value bin as threshold separates values from missing
            nodes["num_threshold"][node_id] = (thresholds[b] if b < thresholds.size
                                               else np.inf)
        cat_nodes = inner[categorical]
        nodes["is_categorical"][cat_nodes] = 1
        nodes["num_threshold"][cat_nodes] = np.nan
        nodes["bitset_idx"][cat_nodes] = np.arange(cat_nodes.size)
        bitsets = split["cat_bitset"][categorical].astype(BITSET_DTYPE)
        if self.known_cat_bitsets is not None and bitsets.size:
            missing_left = split["missing_go_to_left"][categorical] != 0
            # unseen codes: as missing
            bitsets[missing_left] |= ~self.known_cat_bitsets[
                split["feature_idx"][categorical][missing_left]]
        return TreePredictor(nodes, bitsets.reshape(-1, BITSET_WORDS))

    def _unshrunk_value(self, node):
        # Newton value -T(G)/(H + lambda), clipped to the node's bounds.
        return leaf_value(node.sum_gradients, node.sum_hessians, self.l1_regularization,
                          self.l2_regularization, node.lower, node.upper)

    def _bound_children(self, parent, left, right):
        left.lower = right.lower = parent.lower
        left.upper = right.upper = parent.upper
        if self.monotonic_cst is None:
            return
        cst = self.monotonic_cst[int(parent.split["feature_idx"])]
        if cst == 0:
            return
        mid = 0.5 * (self._unshrunk_value(left) + self._unshrunk_value(right))
        if cst > 0:
            left.upper = right.lower = mid
        else:
            left.lower = right.upper = mid

    def renewed_value(self, node_id, sum_gradients, sum_hessians):
        """A leaf's shrunk Newton value from other (e.g. unquantized) sums,
        within the leaf's bounds."""
        return self.learning_rate * leaf_value(
            sum_gradients, sum_hessians, self.l1_regularization, self.l2_regularization,
            self._lower[node_id], self._upper[node_id])

    def clip_leaf_value(self, node_id, value):
        """Clip a re-fitted (unshrunk) leaf value into the leaf's bounds."""
        return min(max(value, self._lower[node_id]), self._upper[node_id])

    def leaf_ids(self):
        """Ids of the leaves of the last grown tree."""
        return self._leaves
