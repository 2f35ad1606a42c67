"""The grower's loop in Python, node by node: the reference the kernel loop
(``hgbt.tree._grower``) is checked against, byte for byte.

It drives a training-data source through its per-node interface
(``node_histogram``, ``sibling_histogram``, ``split``, ``release``) with
the same rules as the kernel: the same queue order, may-split test,
children's values and bounds, and split search (``SplitSettings.find``).
"""
import heapq

import numpy as np

from hgbt.tree._splitting import leaf_value
from hgbt.core._types import GROWN_NODE_DTYPE, SPLIT_INFO_DTYPE
from hgbt.tree.grower import TreeGrower

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


class PythonLoopGrower(TreeGrower):
    """:class:`hgbt.tree.grower.TreeGrower` with its loop in Python."""

    def _may_split(self, node):
        if self.settings.max_depth is not None and node.depth >= self.settings.max_depth:
            return False
        return (node.count >= 2 * self.settings.min_samples_leaf
                and node.sum_hessians >= 2 * self.settings.min_child_weight)

    def _feature_mask(self, node):
        mask = (None if self.feature_sampler is None
                else self.feature_sampler.node_mask(self._tree_mask))
        if node.groups is not None:
            allowed = np.zeros(self.data.n_features, dtype=np.uint8)
            for g in node.groups:
                allowed[list(self.settings.interaction_groups[g])] = 1
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
        key = -float(split["gain"]) if self.settings.grow_policy == "lossguide" else node.depth
        heapq.heappush(self._heap, (key, node.node_id, node))

    def _child(self, parent, side):
        s = parent.split
        groups = parent.groups
        if groups is not None:  # keep the groups that allow the split feature
            f = int(s["feature_idx"])
            groups = [g for g in groups if f in self.settings.interaction_groups[g]]
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
        self._heap = []
        self._per_feature = np.empty(data.n_features, dtype=SPLIT_INFO_DTYPE)
        hist = data.node_histogram(0)
        totals = hist[0]  # every row falls in one bin of column 0
        root = _Node(0, 0, float(totals["sum_gradients"].sum()),
                     float(totals["sum_hessians"].sum()), int(totals["count"].sum()),
                     None if self.settings.interaction_groups is None
                     else list(range(len(self.settings.interaction_groups))))
        self._nodes = [root]
        if self._may_split(root):
            self._find_split(root, hist)
        else:
            data.release(hist)
        n_leaves = 1
        while self._heap and (self.settings.max_leaf_nodes is None
                              or n_leaves < self.settings.max_leaf_nodes):
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
            more = self.settings.max_leaf_nodes is None or n_leaves < self.settings.max_leaf_nodes
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

    def _unshrunk_value(self, node):
        # Newton value -T(G)/(H + lambda), clipped to the node's bounds; none
        # below min_child_weight of hessian (only a root can be there).
        return leaf_value(node.sum_gradients, node.sum_hessians, self.settings.l1_regularization,
                          self.settings.l2_regularization, node.lower, node.upper,
                          self.settings.min_child_weight)

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

