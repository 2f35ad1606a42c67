"""Grow a tree on binned rows read page by page (issue 41, out of core).

The in-memory kernel (``TreeKernel.grow``) grows the tree; only its two
reads of the rows change. Each row carries the key of the node it is in
(``row_keys``: the root 0, the children of node ``p`` ``2p + 2`` and
``2p + 3``), and the kernel takes node histograms from a table by key
(``grow(..., paged=...)``). A run stops at the first node whose histograms
are missing; one pass over the pages then routes the rows of the node just
split, and of every node queued with its split found, to their children
and builds the histograms of each one's smaller child (``_paged.page_pass``:
``route_page`` then ``page_histograms`` in one call per page); the larger is
its parent's minus it, in the kernel, as in memory. The kernel runs again
from the root: the same
choices up to where it stopped, since every histogram it reads is the one
it would have built (the sums are exact on the gradient grid), then further.
Routing every queued node at once, not only the one split, makes the passes
per tree about the tree's depth, not its number of splits (the speculative
children of nodes that stay leaves are the price: at most one node's worth
per queued node). A last pass routes the rows of splits that needed no
histograms (the last ones, past the leaf or depth limit).

Only the queued nodes that may still split are routed ahead: with a leaf
limit, as many as leaves are left, first in the queue's order. A 31-leaf
tree then builds about the in-memory kernel's rows (2.83 against 2.78 times
the rows a tree, 2M x 50 table) in about 9.5 passes.

:class:`PagedTrainingData` is the boosting loop's source over such pages
(``engine/row_state.LocalData`` makes it for ``data.pages.PagedBins``);
``tests/test_paged_grower.py`` checks the tree against the in-memory
kernel's, node for node and row for row, ``tests/test_out_of_core.py``
whole fits.
"""
from __future__ import annotations

import numpy as np

from ..core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE, X_BINNED_DTYPE
from ..core.collective import SINGLE_PROCESS
from ..data.bundling import FeatureLayout
from ._grower import TreeKernel
from ._paged import page_pass, split_tables
from .training_data import gradient_buffers, snap_gradients


class _MaskReplay:
    """The sampler's node masks, the same batches in the same order on every run
    of a tree (each run searches the same nodes first)."""

    def __init__(self, source):
        self.source, self.batches = source, []

    def run(self):
        position = [0]

        def next_masks(k):
            i = position[0]
            if i == len(self.batches):
                self.batches.append(np.ascontiguousarray(self.source(k), dtype=np.uint8))
            position[0] += 1
            return self.batches[i]
        return next_masks


def node_keys(nodes):
    """Each node's key: the root 0, the children of node ``p`` ``2p + 2``, ``2p + 3``."""
    keys = np.zeros(len(nodes), dtype=np.int64)
    for p in np.flatnonzero(nodes["left"] >= 0):
        keys[nodes["left"][p]] = 2 * p + 2
        keys[nodes["right"][p]] = 2 * p + 3
    return keys


def grow_paged(kernel, settings, growth, pages, gradients, hessians=None, *,
               row_keys=None, tree_mask=None, node_masks=None, n_threads=1):
    """Grow one tree over ``pages`` (:class:`hgbt.data.pages.BinPages`, a plain layout).

    Parameters
    ----------
    kernel : TreeKernel
    settings, growth : SplitSettings, Growth
        As ``TreeKernel.grow``'s.
    gradients : ndarray of float32 of shape (n_rows,)
        On the gradient grid (``LocalTrainingData.start_tree`` snaps them).
    hessians : ndarray of float32 of shape (n_rows,) or float
        A float: the constant hessian of every row.
    row_keys : ndarray of int32 of shape (n_rows,), default=None
        0 for the rows in the tree, -1 for the others (row sampling); None:
        every row. Updated in place, and returned.
    tree_mask, node_masks, n_threads
        As ``TreeKernel.grow``'s (the node masks replayed on every run).

    Returns
    -------
    nodes : ndarray of GROWN_NODE_DTYPE
        The kernel's nodes (``start``/``stop`` meaningless here).
    leaf_of_row : ndarray of int32 of shape (n_rows,)
        Each row's leaf (a node id), -1 outside the tree.
    passes : int
        Passes over the pages.
    """
    n_rows, n_features = pages.n_rows, pages.n_features
    n_bins = settings.missing_bin + 1
    if row_keys is None:
        row_keys = np.zeros(n_rows, dtype=np.int32)
    constant = np.isscalar(hessians) or np.ndim(hessians) == 0
    # consistent stand-ins for the kernel's buffers: it reads no row here
    one = np.zeros(1, dtype=G_H_DTYPE)
    buffers = dict(layout=FeatureLayout.plain(np.zeros((1, n_features), X_BINNED_DTYPE,
                                                       order="F")),
                   rows=np.zeros(1, SIZE_DTYPE), buffer=np.zeros(1, SIZE_DTYPE),
                   gradients=one, hessians=one, ordered_gradients=one.copy(),
                   ordered_hessians=one.copy())
    masks = None if node_masks is None else _MaskReplay(node_masks)
    index = np.full(2, -1, dtype=np.int32)
    tables = np.zeros((0, n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    expanded = set()
    routes, build = [], [0]  # the first pass: the root's histograms
    n_keys = 4  # above every key a row holds (children of node p: 2p + 2, 2p + 3)
    passes = 0
    while True:
        if build or routes:
            new = _pass(pages, row_keys, n_keys, routes, build, gradients, hessians,
                        constant, n_bins, settings.missing_bin, n_threads)
            passes += 1
            if build:
                index = np.concatenate([index, np.full(max(0, max(build) + 1 - index.size),
                                                       -1, np.int32)])
                index[build] = np.arange(len(tables), len(tables) + len(build))
                tables = np.concatenate([tables, new])
        nodes, need, queued = kernel.grow(
            settings, growth, buffers, n_root=1, tree_mask=tree_mask,
            node_masks=None if masks is None else masks.run(), n_threads=n_threads,
            paged=(index, tables))
        keys = node_keys(nodes)
        n_keys = 2 * len(nodes) + 4
        if need < 0:
            break
        parent = int((keys[need] - 2) // 2)
        routes, build = [], []
        for q in [parent] + _may_split(nodes, queued, growth):
            if q in expanded:
                continue
            expanded.add(q)
            split = nodes["split"][q]
            left_small = split["n_samples_left"] <= split["n_samples_right"]
            routes.append((int(keys[q]), split, q))
            build.append(2 * q + 2 if left_small else 2 * q + 3)
    # the splits that needed no histograms: their rows still to route
    last = [(int(keys[q]), nodes["split"][q], q) for q in np.flatnonzero(nodes["left"] >= 0)
            if int(q) not in expanded]
    if last:
        _pass(pages, row_keys, n_keys, last, [], gradients, hessians, constant, n_bins,
              settings.missing_bin, n_threads)
        passes += 1
    return nodes, _leaves(nodes, keys, row_keys), passes


def _may_split(nodes, queued, growth):
    """The queued nodes that may still split: with a leaf limit, only as many
    as leaves are left, first in the kernel's queue order (best-first: the
    largest gain, ties the oldest; depth-wise: the shallowest, then the
    oldest); their children's histograms are built ahead, in the same pass."""
    queued = [int(q) for q in queued]
    if growth.max_leaf_nodes is None:
        return queued
    # the node just split counts with its two children: its children are leaves
    left = growth.max_leaf_nodes - int((nodes["left"] < 0).sum())
    if growth.lossguide:
        queued.sort(key=lambda q: (-nodes["split"]["gain"][q], q))
    else:
        queued.sort(key=lambda q: (nodes["depth"][q], q))
    return queued[:max(left, 0)]


def _pass(pages, row_keys, size, routes, build, gradients, hessians, constant, n_bins,
          missing_bin, n_threads):
    """One pass over the pages: route the rows of ``routes`` ((node key, split,
    node id)) to their children's keys, then add the rows of the keys in
    ``build`` to their histograms (returned in that order). Every key, a
    row's or a child's, is below ``size``."""
    n_features = pages.n_features
    split_feature = np.full(size, -1, dtype=np.int32)
    goes_left = np.zeros((size, 256), dtype=np.uint8)
    left = np.full(size, -1, dtype=np.int32)
    right = np.full(size, -1, dtype=np.int32)
    if routes:
        keys = np.array([k for k, _, _ in routes])
        splits = np.array([s for _, s, _ in routes])
        split_feature[keys] = splits["feature_idx"]
        goes_left[keys] = split_tables(splits, missing_bin)
        ids = np.array([q for _, _, q in routes])
        left[keys], right[keys] = 2 * ids + 2, 2 * ids + 3
    slot = np.full(size, -1, dtype=np.int32)
    slot[build] = np.arange(len(build))
    out = np.zeros((len(build), n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    for start, page in pages.iter_pages():
        stop = start + page.shape[0]
        page_pass(page, row_keys[start:stop], split_feature, goes_left, left, right, slot,
                  gradients[start:stop], None if constant else hessians[start:stop], out,
                  n_threads)
    if build and constant:
        out["sum_hessians"] = out["count"] * float(hessians)
    return out


def _leaves(nodes, keys, row_keys):
    """Each row's leaf: the node its key names, or, for the speculative
    children of a node that stayed a leaf, that node (-1 outside the tree)."""
    size = max(int(row_keys.max(initial=0)), int(keys.max(initial=0))) + 1
    node_of_key = np.full(size + 1, -1, dtype=np.int32)  # [-1]: a row outside (-1)
    node_of_key[keys] = np.arange(len(nodes), dtype=np.int32)
    missing = np.flatnonzero(node_of_key[:size] < 0)
    node_of_key[missing] = (missing - 2) // 2  # the node that stayed a leaf
    node_of_key[size] = -1
    return node_of_key[row_keys]  # one int32 gather over the rows


class PagedTrainingData:
    """A fit's training-data source over ``data.pages.PagedBins``: the interface of
    :class:`~hgbt.tree.training_data.LocalTrainingData` the boosting loop
    reads, each tree grown by :func:`grow_paged`.

    Gradients and hessians are snapped to the grids of all rows as in memory,
    so the histograms, leaf sums and leaf values are the in-memory ones.
    Rows outside a round's sample and quantized gradients are not supported
    (refused with ValueError).
    """

    collective = SINGLE_PROCESS
    split_layout = {}
    histogram_layout = "col_wise"

    def __init__(self, binned, n_bins, n_threads):
        self.layout = binned
        self.pages = binned.pages
        self.n_bins = n_bins
        self.n_threads = n_threads
        self.n_rows = self.pages.n_rows
        self._kernel = None
        self._leaf_of_row = None

    @property
    def n_features(self):
        return self.layout.n_features

    def use_gradients(self, gradients, hessians, constant_hessian=None):
        (self._tree_gradients, self._tree_hessians,
         self._hessian_is_constant) = gradient_buffers(gradients, hessians, constant_hessian)

    def start_tree(self, k, rows=None, grid=None, quantize=None):
        if rows is not None:
            raise ValueError(OUT_OF_CORE_HINT.format("row sampling (subsample < 1, GOSS, "
                                                     "bagging by query)"))
        if quantize is not None:
            raise ValueError(OUT_OF_CORE_HINT.format("quantized gradients "
                                                     "(use_quantized_grad)"))
        gradients, hessians = self._tree_gradients[k], self._tree_hessians[k]
        snap_gradients(gradients, hessians, grid, self.n_rows, self.n_threads)
        self._gradients, self._hessians = gradients, hessians

    def grow_tree(self, settings, growth, tree_mask=None, node_masks=None):
        if self._kernel is None:
            self._kernel = TreeKernel(self.n_features, self.n_features, self.n_bins)
        hessians = (float(self._hessians[0]) if self._hessian_is_constant
                    else self._hessians)
        nodes, self._leaf_of_row, _ = grow_paged(
            self._kernel, settings, growth, self.pages, self._gradients, hessians,
            tree_mask=tree_mask, node_masks=node_masks, n_threads=self.n_threads)
        return nodes

    def node_rows(self, node_id):
        return np.flatnonzero(self._leaf_of_row == node_id).astype(SIZE_DTYPE)

    def leaf_sums(self, leaf_ids):
        # exact: the values lie on their grids, so any order of adds; by
        # chunks of rows, so that no float64 copy of every row is made
        size = int(max(leaf_ids)) + 1
        gradients, hessians = np.zeros(size), np.zeros(size)
        for rows in _chunks(self.n_rows):
            leaf = self._leaf_of_row[rows]
            gradients += np.bincount(leaf, self._gradients[rows], size)
            hessians += (np.bincount(leaf, minlength=size) * float(self._hessians[0])
                         if self._hessian_is_constant
                         else np.bincount(leaf, self._hessians[rows], size))
        return gradients[leaf_ids], hessians[leaf_ids]

    def add_leaf_values(self, raw_predictions, leaf_ids, leaf_values):
        table = np.zeros(int(max(leaf_ids)) + 1)
        table[leaf_ids] = leaf_values
        for rows in _chunks(self.n_rows):  # each row's add, as in memory
            raw_predictions[rows] += table[self._leaf_of_row[rows]]


def _chunks(n, size=1 << 20):
    """Slices of ``range(n)`` of ``size`` rows: per-row temporaries stay small."""
    return [slice(a, min(a + size, n)) for a in range(0, n, size)]


OUT_OF_CORE_HINT = ("{} is not supported out of core (Dataset.from_batches(..., "
                    "out_of_core=True)) yet: train without it, or on a Dataset built in "
                    "memory.")
