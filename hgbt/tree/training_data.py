"""The training rows a tree grows on: histograms, partitions, leaf updates.

A tree grows in one kernel call on the rows' buffers (:meth:`LocalTrainingData.grow_tree`,
``hgbt.tree._grower``). On a Dask worker the rows are a shard of the fit's, and
the kernel sums each node's histograms with the other shards' (``collective``,
:mod:`hgbt.core.collective`), so every shard grows the tree of all rows. The per-node methods
(``node_histogram``, ``sibling_histogram``, ``split``, ``release``) build the
same histograms and partitions one call at a time, through the kernel's own
dispatch over the layout (``_layout``): the reference loop of the tests
drives them.
"""
import copy
import math
import threading
import time

import numpy as np

from ..core._exact import snap_to_grid
from ._grower import TreeKernel
from ._histogram import subtract_histograms
from ._layout import build_node_histograms, partition_node_rows
from ._multi_value import build_multi_value, column_modes, slot_offsets
from ._predictor import add_leaf_values
from ._quantize import leaf_sums, quantize_gradients
from ..core._types import (G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE, SPLIT_INFO_DTYPE,
                           X_BINNED_DTYPE)
from ..core.collective import SINGLE_PROCESS, allreduce_max, allreduce_sum, allreduce_sum_int
from ..core.exact import GradientOverflowError, grid_exponent
from ..data.bundling import FeatureLayout


class LocalTrainingData:
    """Binned rows held in this process.

    The rows of every node live in one index array; a node owns the slice
    ``[start, stop)`` and splitting it partitions that slice in place.
    Histogram arrays come from a pool and go back to it, so growing a tree
    allocates nothing per node once the pool is warm.

    Parameters
    ----------
    binned : FeatureLayout or ndarray of shape (n_samples, n_features)
        The binned rows (:class:`hgbt.data.bundling.FeatureLayout`; its
        bundled and sparse-stored columns each get a histogram row). A uint8
        F-ordered matrix is taken as the plain layout, every feature its
        column.
    n_bins : int
        Bins per feature histogram, the missing bin included.
    n_threads : int
    collective : Collective, default=SINGLE_PROCESS
        The processes holding the tree's other rows (``hgbt.dask``): each
        node's histograms are summed over them (``TreeKernel.grow``), and the
        gradient grids come from all their rows. A local fit's rows are all here.
    row_ids : ndarray of int64 or None, default=None
        Each row's index among all the fit's rows (a Dask shard's): the
        quantized gradients' rounding draws from it. None: ``0 .. n - 1``.
    feature_collective : Collective or None, default=None
        Processes that all hold these same rows (a feature-parallel Dask
        fit): each builds and searches the histograms of its block of
        features and every split is elected among them (``TreeKernel.grow``'s
        ``feature_parallel``). Exclusive with a spread ``collective``.
    voting_top_k : int, default=0
        With a spread ``collective``, > 0 grows voting-parallel: only the
        histograms of the ``2 * voting_top_k`` features the processes
        nominate most are summed at each node (``TreeKernel.grow``); the tree
        is then not the one of all rows unless that is every feature.
    histogram_layout : {'auto', 'col_wise', 'row_wise'}, default='auto'
        How the dense columns' histograms are built: a thread per column
        (``_histogram``), or a node's rows split between the threads over
        row-wise multi-value bins (:class:`MultiValueBins`); 'auto' grows
        the first five trees with one or the other (:data:`TRIAL_ORDER`),
        timed (but the first), and the others with the faster (each source
        for itself: a fork has its own threads); by columns without a trial
        above :data:`MAX_ROW_WISE_SHARE` of the entries off their columns'
        modes. The histograms are the same bit for bit, float or packed
        quantized. A feature-parallel block always builds by columns.
    """

    def __init__(self, binned, n_bins, n_threads, collective=SINGLE_PROCESS,
                 row_ids=None, feature_collective=None, voting_top_k=0, _row_major=None,
                 histogram_layout="auto", _multi_value=None, _modes=None):
        layout = binned if isinstance(binned, FeatureLayout) else FeatureLayout.plain(binned)
        n_samples = layout.X_dense.shape[0]
        if n_samples >= np.iinfo(SIZE_DTYPE).max:
            raise ValueError(f"At most {np.iinfo(SIZE_DTYPE).max - 1} rows are supported.")
        self.layout = layout
        self.X_binned = layout.X_dense
        self.n_bins = n_bins
        self.collective = collective
        self.feature_collective = feature_collective
        self.voting_top_k = voting_top_k
        self.row_ids = row_ids
        self._n_rows_everywhere = None  # training rows in all processes, on first use
        # n_threads may be lowered between trees (core/load.py); per-thread
        # buffers are sized for the most
        self.n_threads = self.max_threads = n_threads
        self._n_columns = layout.n_columns
        self.split_layout = {}  # extra SplitSettings arguments (the layout)
        if not layout.is_plain:
            self._column_bounds = layout.column_bounds(n_threads)
            self._scratch = np.zeros(n_samples, dtype=X_BINNED_DTYPE)  # zero between uses
            self.split_layout = dict(
                feature_column=layout.feature_column, bundle_offset=layout.bundle_offset,
                bundle_n_codes=layout.bundle_n_codes, default_bin=layout.default_bin)
        self._all_rows = np.arange(n_samples, dtype=SIZE_DTYPE)
        self._rows = np.empty(n_samples, dtype=SIZE_DTYPE)
        self._buffer = np.empty(n_samples, dtype=SIZE_DTYPE)
        self._ordered_gradients = np.empty(n_samples, dtype=G_H_DTYPE)
        self._ordered_hessians = np.empty(n_samples, dtype=G_H_DTYPE)
        self._pool = []
        self._ranges = []
        self._packed = None  # packed quantized gradients of the tree, if any
        self._packed_buffer = None
        # the row-major bins of quantized histograms, shared with forks
        self._row_major = _row_major or _row_major_copy(self.X_binned)
        # the dense columns' row-wise multi-value bins, shared with forks
        by_rows = layout.n_dense > 0 and feature_collective is None
        self._requested_layout = histogram_layout if by_rows else "col_wise"
        self._multi_value = _multi_value or _Shared(
            lambda: MultiValueBins(layout, n_bins, n_threads, self._modes.get()))
        self._modes = _modes or _Shared(lambda: column_modes(layout.X_dense, n_threads))
        self._mv_view = None
        self._chosen = None if self._requested_layout == "auto" else self._requested_layout
        self._tree_layout = None  # the begun tree's (None: no tree yet)
        self._trials = []  # 'auto': (layout, seconds, threads) of the first trees
        self._restarts = 0
        self._kernel = None  # TreeKernel, made on the first grow_tree
        self._tree_gradients = self._tree_hessians = None  # set by use_gradients

    def fork(self, n_threads):
        """A source over the same binned rows for another tree grown at the
        same time: its own node state, shared read-only data (the gradient
        buffers included)."""
        fork = LocalTrainingData(self.layout, self.n_bins, n_threads, self.collective,
                                 self.row_ids, self.feature_collective, self.voting_top_k,
                                 _row_major=self._row_major,
                                 histogram_layout=self._requested_layout,
                                 _multi_value=self._multi_value, _modes=self._modes)
        if self._tree_gradients is not None:
            fork.use_gradients(self._tree_gradients, self._tree_hessians,
                               self._hessian_is_constant)
        return fork

    def use_gradients(self, gradients, hessians, constant_hessian=None):
        """The fit's gradient and hessian buffers, read by :meth:`start_tree`.

        Shape (n_trees_per_iteration, n_samples) (1-D: one tree's), float32;
        ``hessians`` of shape (n_trees, 1) is a constant hessian for every
        row (``constant_hessian``; None: when there is more than one row). The
        buffers are refilled in place each round, so this is called once per fit.
        """
        (self._tree_gradients, self._tree_hessians,
         self._hessian_is_constant) = gradient_buffers(gradients, hessians, constant_hessian)

    @property
    def n_features(self):
        return self.layout.n_features

    def start_tree(self, k, rows=None, grid=None, quantize=None):
        """Begin tree ``k`` of the round: ``rows`` (sorted; default all rows)
        in the root (node 0), on row ``k`` of the gradient buffers
        (:meth:`use_gradients`).

        Its gradients and hessians are snapped in place to the grids of
        :mod:`hgbt.core.exact`, so that every histogram sum is exact: ``grid``
        gives the two grid exponents; by default they come from all rows here
        (with a collective: from the rows of every process).

        ``quantize=(num_grad_quant_bins, seed)`` builds the tree's histograms
        from quantized gradients instead (:func:`quantize_exponents`,
        ``_quantize``); ``gradients`` and ``hessians`` are then snapped too,
        for exact :meth:`leaf_sums`.
        """
        gradients, hessians = self._tree_gradients[k], self._tree_hessians[k]
        self._packed = None
        self._snap(gradients, hessians, grid)
        if quantize is not None:
            self._quantize(gradients, hessians, *quantize)
        else:
            self._hist_gradients, self._hist_hessians = gradients, hessians
        self._gradients = gradients
        self._hessians = hessians
        if rows is None:
            self._rows[:] = self._all_rows
            self._ranges = [(0, self._rows.shape[0])]
        else:
            self._rows[:rows.shape[0]] = rows
            self._ranges = [(0, rows.shape[0])]
        self._tree_layout = self._next_layout()

    def _next_layout(self):
        # 'auto': the first trees try both layouts (TRIAL_ORDER), then the
        # faster is kept; by columns without a trial where nearly every
        # entry is off its column's mode
        if self._chosen is None and not self._trials and self._off_mode_share() > \
                MAX_ROW_WISE_SHARE:
            self._chosen = "col_wise"
        if self._chosen is None and len(self._trials) == len(TRIAL_ORDER):
            seconds = {"col_wise": 0.0, "row_wise": 0.0}
            for layout, spent, _ in self._trials[1:]:
                seconds[layout] += spent
            self._chosen = min(seconds, key=seconds.get)  # a tie: col_wise
            if self._chosen == "col_wise":  # its memory back (a fork keeps its view)
                self._mv_view = None
                self._multi_value.drop()
        if self._chosen is not None:
            return self._chosen
        return TRIAL_ORDER[len(self._trials)]

    def _off_mode_share(self):
        # the share of the dense columns' entries row-wise bins would store
        _, mode_rows = self._modes.get()
        n_entries = self.X_binned.shape[0] * self.X_binned.shape[1]
        return 1.0 - mode_rows.sum() / max(n_entries, 1)

    def _record_trial(self, seconds):
        # a tree's time for 'auto'; the counted trials start again when the
        # threads change between them (a thread governor's round), at most
        # MAX_TRIAL_RESTARTS times
        self._trials.append((self._tree_layout, seconds, self.n_threads))
        threads = {t for _, _, t in self._trials[1:]}
        if len(threads) > 1 and self._restarts < MAX_TRIAL_RESTARTS:
            self._restarts += 1
            self._trials = self._trials[:1]

    @property
    def histogram_layout(self):
        """How the last tree built its histograms, 'col_wise' or 'row_wise'
        ('col_wise' before any tree)."""
        return self._tree_layout or "col_wise"

    def _snap(self, gradients, hessians, grid=None):
        # Gradients and hessians in place on the exact grids (``grid``, else
        # the one of all rows, of every process): histogram sums, and the
        # quantized fit's leaf sums, then do not depend on the order of the
        # rows, nor on the process that adds them
        if grid is None and self.collective.size > 1:
            grid = self._grid_everywhere(gradients, hessians)
        snap_gradients(gradients, hessians, grid, self._all_rows.shape[0], self.n_threads)

    def _grid_everywhere(self, gradients, hessians):
        # the grids of the rows of every process: from the largest |value|
        # anywhere and the row count of all (the local rule on all the rows)
        if self._n_rows_everywhere is None:
            self._n_rows_everywhere = allreduce_sum_int(self.collective,
                                                        self._all_rows.shape[0])
        n_rows = self._n_rows_everywhere
        constant = self._hessian_is_constant
        maxima = allreduce_max(self.collective,
                               [max_abs(gradients), 0.0 if constant else max_abs(hessians)])
        return (grid_exponent(maxima[0], n_rows),
                None if constant else grid_exponent(maxima[1], n_rows))

    def _quantize(self, gradients, hessians, n_levels, seed):
        n = self._all_rows.shape[0]
        if self._packed_buffer is None:
            self._packed_buffer = np.empty(n, dtype=np.int64)
            n_dense = self.X_binned.shape[1]
            # row-major bins for nodes with few rows (read row-wise)
            self._X_rows = self._row_major.get()
            self._acc = np.empty((self.max_threads, n_dense * 256), dtype=np.int64)
            self._sums = np.empty((self.max_threads, n_dense * 768), dtype=np.int64)
            # float copies only for the sparse-stored columns' float kernel
            sparse = self._n_columns > n_dense
            self._q_gradients = np.empty(n if sparse else 0, dtype=G_H_DTYPE)
            self._q_hessians = np.empty(n if sparse else 0, dtype=G_H_DTYPE)
        constant = self._hessian_is_constant
        self._exponents = quantize_exponents(gradients, hessians, n_levels, self.collective,
                                             constant)
        self._lanes = packed_lanes(n_levels, constant)
        quantize_gradients(gradients, hessians, *self._exponents, *self._lanes[:2], seed,
                           self._q_gradients, self._q_hessians, self._packed_buffer,
                           self.n_threads, self.row_ids, constant)
        self._packed = self._packed_buffer
        self._constant_hessian_value = float(hessians[0]) if constant else 0.0
        self._hist_gradients = self._q_gradients
        self._hist_hessians = hessians if constant else self._q_hessians

    def _new_histogram(self):
        if self._pool:
            return self._pool.pop()
        return np.empty((self._n_columns, self.n_bins), dtype=HISTOGRAM_DTYPE)

    def release(self, histogram):
        """Return a histogram array to the pool."""
        self._pool.append(histogram)

    def node_histogram(self, node_id):
        """Histograms of a node built from its rows."""
        out = self._new_histogram()
        start, stop = self._ranges[node_id]
        build_node_histograms(self._buffers(), self.n_features, start, stop - start, out,
                              self.n_threads)
        return out

    def sibling_histogram(self, parent_histogram, child_histogram):
        """Histograms of a node from its parent's and its sibling's."""
        out = self._new_histogram()
        subtract_histograms(parent_histogram, child_histogram, out,
                            self.layout.column_width, self.n_threads)
        return out

    def split(self, node_id, left_id, right_id, feature_idx, bin_idx, missing_go_to_left,
              cat_bitset=None):
        """Partition a node's rows into two new nodes; returns the left count.

        Numeric split: bins ``<= bin_idx`` go left. Categorical split
        (``cat_bitset``, 8 uint32 words): bins whose bit is set go left.
        Missing values go left when ``missing_go_to_left``.
        """
        start, stop = self._ranges[node_id]
        split = np.zeros(1, dtype=SPLIT_INFO_DTYPE)
        split["feature_idx"], split["missing_go_to_left"] = feature_idx, missing_go_to_left
        if cat_bitset is None:
            split["bin_idx"] = bin_idx
        else:
            split["is_categorical"], split["cat_bitset"] = 1, cat_bitset
        n_left = partition_node_rows(self._buffers(), self.n_features, self.n_bins, start,
                                     stop - start, split, self.n_threads)
        for node in (left_id, right_id):
            if node >= len(self._ranges):
                self._ranges.extend([None] * (node + 1 - len(self._ranges)))
        self._ranges[left_id] = (start, start + n_left)
        self._ranges[right_id] = (start + n_left, stop)
        return n_left

    @property
    def grows_trees(self):
        """Whether :meth:`grow_tree` can grow a tree here (it can, given a feature)."""
        return self.n_features > 0

    def grow_tree(self, settings, growth, tree_mask=None, node_masks=None):
        """Grow the tree begun by :meth:`start_tree` in one kernel call.

        ``settings`` is the fit's :class:`hgbt.tree._splitting.SplitSettings`,
        ``growth`` its :class:`hgbt.tree._grower.Growth` (policy, leaf and
        depth limits, interaction groups); ``tree_mask`` and ``node_masks``
        the tree's feature masks (see ``TreeKernel.grow``). Returns the
        nodes (GROWN_NODE_DTYPE), each node's rows then being
        ``node_rows(node_id)``, as after the grower's splits.
        """
        if self._kernel is None:
            self._kernel = TreeKernel(self.n_features, self._n_columns, self.n_bins)
        by_feature = self.feature_collective is not None
        buffers = self._buffers()  # the multi-value bins made before the timing
        trial = self._chosen is None
        start = time.perf_counter()
        nodes = self._kernel.grow(settings, growth, buffers,
                                  n_root=self._ranges[0][1],
                                  tree_mask=tree_mask, node_masks=node_masks,
                                  collective=(self.feature_collective if by_feature
                                              else self.collective),
                                  feature_parallel=by_feature,
                                  voting_top_k=self.voting_top_k, n_threads=self.n_threads)
        if trial:
            self._record_trial(time.perf_counter() - start)
        self._ranges = list(zip(nodes["start"].tolist(), nodes["stop"].tolist()))
        return nodes

    def _buffers(self):
        """The begun tree's arrays by name, as ``TreeKernel.grow`` and the
        per-node methods (``_layout``) read them."""
        buffers = dict(layout=self.layout, rows=self._rows, buffer=self._buffer,
                       gradients=self._hist_gradients, hessians=self._hist_hessians)
        if self._packed is not None:
            buffers.update(packed=self._packed, exponents=self._exponents,
                           packed_lanes=self._lanes,
                           constant_hessian=self._constant_hessian_value, acc=self._acc,
                           sums=self._sums, X_rows=self._X_rows)
        else:
            buffers.update(ordered_gradients=self._ordered_gradients,
                           ordered_hessians=self._ordered_hessians)
        if not self.layout.is_plain:
            buffers.update(column_bounds=self._column_bounds, scratch=self._scratch)
        if self._tree_layout == "row_wise":
            packed = self._packed is not None
            if self._mv_view is None or (packed and self._mv_view.acc is None):
                self._mv_view = self._multi_value.get().view(self.max_threads, packed)
            buffers["multi_value"] = self._mv_view
        return buffers

    def node_rows(self, node_id):
        """Row indices of a node (a view; valid until the node is split)."""
        start, stop = self._ranges[node_id]
        return self._rows[start:stop]

    def leaf_sums(self, leaf_ids):
        """Float sums of the gradients and hessians of each leaf's rows.

        With quantized histograms, leaf values are refit from these: the
        split search used the quantized sums, the leaf values do not.
        """
        sum_gradients = np.empty(len(leaf_ids))
        sum_hessians = np.empty(len(leaf_ids))
        leaf_sums(self._rows, *self._leaf_ranges(leaf_ids), self._gradients,
                  self._hessians, sum_gradients, sum_hessians, self.n_threads)
        # exact over the processes: the values lie on a grid
        sum_gradients, sum_hessians = allreduce_sum(
            self.collective, np.stack([sum_gradients, sum_hessians]))
        return sum_gradients, sum_hessians

    def _leaf_ranges(self, leaf_ids):
        # (starts, stops) of the leaves' slices of the row-index array
        ranges = np.array([self._ranges[k] for k in leaf_ids], dtype=SIZE_DTYPE)
        return np.ascontiguousarray(ranges[:, 0]), np.ascontiguousarray(ranges[:, 1])

    def add_leaf_values(self, raw_predictions, leaf_ids, leaf_values):
        """Add each leaf's value to the raw predictions of the rows it holds."""
        add_leaf_values(raw_predictions, self._rows, *self._leaf_ranges(leaf_ids),
                        np.ascontiguousarray(leaf_values, dtype=np.float64),
                        self.n_threads)


class _Shared:
    """A value made on first use, once for all the sources that share it
    (forks may ask from several threads)."""

    def __init__(self, make):
        self._make = make
        self._value = None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self._value is None:
                self._value = self._make()
            return self._value

    def drop(self):
        """Let the value go (made again if asked for)."""
        with self._lock:
            self._value = None


# 'auto': the first trees' layouts, then the faster one's. The first tree
# (cold caches, first allocations) is not counted; the order of the others
# makes a trend over the trees (such as shrinking gradients) weigh on both
# alike.
TRIAL_ORDER = ("col_wise", "row_wise", "col_wise", "col_wise", "row_wise")
MAX_TRIAL_RESTARTS = 3
# Above this share of the dense columns' entries off their modes, 'auto' builds
# by columns without trying rows: the row-wise bins would store nearly every
# entry, cost about 2 bytes each and their trees were never faster there
# (synthetic 1M x 28, 0.95: 1.14x; birthdays, 0.94: 0.99-1.04x; diamonds, 0.87:
# 1.06-1.09x, still tried; benchmarks/RESULTS.md).
MAX_ROW_WISE_SHARE = 0.9


def most_used_layout(layouts):
    """The histogram layout most of ``layouts`` used (a tie: 'col_wise')."""
    return max(("col_wise", "row_wise"), key=list(layouts).count)


def _row_major_copy(X_binned):
    """The padded row-major copy of the bins, made on first use."""
    return _Shared(lambda: padded_row_major(X_binned))


class MultiValueBins:
    """The dense columns' row-wise multi-value bins (``_multi_value``).

    ``indptr`` and ``slots`` hold each row's entries off its columns' most
    frequent codes (``mode``), at the columns' packed slots (``offset``).
    Read-only and shared; each source sums into its own :meth:`view`.
    """

    def __init__(self, layout, n_bins, n_threads, modes=None):
        X = layout.X_dense
        width = np.ascontiguousarray(layout.column_width[:layout.n_dense])
        self.offset = slot_offsets(width, n_bins)
        self.mode = (modes or column_modes(X, n_threads))[0]
        self.indptr, self.slots = build_multi_value(X, self.mode, self.offset, width,
                                                    n_bins, n_threads)

    def view(self, max_threads, packed=False):
        """These bins with private sums for up to ``max_threads`` parts
        (``packed``: integer sums too, for packed quantized gradients)."""
        view = copy.copy(self)
        n_slots = int(self.offset[-1])
        # written once here, so that no timed tree pays their first page faults
        view.private = np.empty((max_threads, n_slots), dtype=HISTOGRAM_DTYPE)
        view.private[...] = 0
        view.totals = np.zeros(2 * max_threads)
        view.acc = view.sums = view.total_lanes = view.flushed = None
        if packed:
            view.acc = np.empty((max_threads, n_slots), dtype=np.int64)
            view.sums = np.empty((max_threads, 3 * n_slots), dtype=np.int64)
            view.acc[...] = 0
            view.sums[...] = 0
            view.total_lanes = np.zeros(3 * max_threads, dtype=np.int64)
            view.flushed = np.zeros(max_threads * np.dtype(np.intc).itemsize, dtype=np.uint8)
        return view


def snap_gradients(gradients, hessians, grid, n_rows, n_threads):
    """Gradients and hessians in place on the exact grids ``grid`` (two
    exponents, None: none), by default those of their own values over
    ``n_rows`` rows (:func:`max_abs_grid`)."""
    if grid is None:
        grid = (max_abs_grid(gradients, n_rows), max_abs_grid(hessians, n_rows))
    for values, exponent in zip((gradients, hessians), grid):
        if exponent is not None:
            snap_to_grid(values, exponent, n_threads)


def gradient_buffers(gradients, hessians, constant_hessian=None):
    """A fit's gradient and hessian buffers as 2-D (one row per tree of a
    round), and whether the hessian is one constant (None: when the hessian
    rows have one value and the gradient rows more)."""
    gradients, hessians = np.atleast_2d(gradients), np.atleast_2d(hessians)
    if constant_hessian is None:
        constant_hessian = hessians.shape[1] == 1 and gradients.shape[1] != 1
    return gradients, hessians, constant_hessian


def max_abs(values):
    """Largest ``|value|`` (0.0 for no values; NaN if any is NaN)."""
    if values.shape[0] == 0:
        return 0.0
    return float(max(-values.min(), values.max()))


def max_abs_grid(values, n_rows):
    """Grid exponent of one array over ``n_rows`` rows (None for a constant
    hessian, a length-1 array standing for every row: nothing to snap)."""
    if values.shape[0] != n_rows:
        return None
    return grid_exponent(max_abs(values), n_rows)


# Tiny gradients: a coarser grid than 2**-100 would not be a float32 normal.
_MAX_QUANT_EXPONENT = 100


def quantize_exponents(gradients, hessians, n_levels, collective=SINGLE_PROCESS,
                       constant=None):
    """Exponents ``(g, h)`` of the quantization grids ``2**-g`` and ``2**-h``.

    Gradients get integers within ``±n_levels / 2``, hessians within
    ``[0, n_levels]`` (LightGBM's ``num_grad_quant_bins``), on power-of-two
    grids so that scaled integer sums are exact. A constant hessian
    (``constant``; None: a length-1 array) is not quantized: its exponent is
    0. With a ``collective``, the exponents come from every process's values.
    """
    if constant is None:
        constant = hessians.shape[0] == 1
    g_max = max_abs(gradients)
    some = hessians.shape[0] and not constant
    h_min = float(hessians.min()) if some else 0.0
    h_max = float(hessians.max()) if some else 0.0
    if collective.size > 1:
        g_max, minus_h_min, h_max = allreduce_max(collective, [g_max, -h_min, h_max])
        h_min = -minus_h_min
    return _exponents(g_max, h_min, h_max, constant, n_levels)


def _exponents(g_max, h_min, h_max, constant, n_levels):
    if not math.isfinite(g_max):
        raise GradientOverflowError("Quantized gradients need finite gradients; the "
                                    "loss gave NaN or inf.")
    h_exponent = 0
    if not constant:
        if h_min < 0:
            raise ValueError("use_quantized_grad=True needs non-negative hessians; the "
                             "loss gave a negative one.")
        if not (math.isfinite(h_max) and math.isfinite(h_min)):
            raise GradientOverflowError("Quantized gradients need finite hessians; the loss gave "
                             "NaN or inf.")
        h_exponent = _largest_exponent(h_max, n_levels)
    return _largest_exponent(g_max, n_levels / 2), h_exponent


def padded_row_major(X_binned):
    """A C-ordered copy of ``X_binned`` whose rows never straddle cache lines.

    Rows are padded with zeros to the next power of two of bytes (to a multiple
    of 64 past 64) and the array starts on a 64-byte boundary, so reading a
    row fetches one line (or whole lines) instead of often two: the row-wise
    histogram kernel, bound by those fetches, runs 15-35% faster
    (benchmarks/RESULTS.md).
    """
    n, n_features = X_binned.shape
    width = max(n_features, 1)
    stride = 1 << (width - 1).bit_length() if width <= 64 else -(-width // 64) * 64
    buffer = np.zeros(n * stride + 64, dtype=X_BINNED_DTYPE)
    offset = -buffer.ctypes.data % 64
    rows = buffer[offset:offset + n * stride].reshape(n, stride)
    rows[:, :n_features] = X_binned
    return rows


def packed_lanes(n_levels, constant_hessian):
    """Lanes of the packed quantized values: ``(h_shift, g_shift, block_rows)``.

    A packed value is ``g_q * 2**g_shift + h_q * 2**h_shift + 1`` (gradient,
    hessian, row count). The histogram kernel sums up to ``block_rows`` rows
    in one int64 and then moves the lanes into separate int64 sums, so no
    lane can overflow. The most rows whose worst-case sums (gradients of
    ``±ceil(n_levels / 2)``, hessians of ``n_levels``, zero when constant)
    fit in 63 bits are chosen: 131,072 for 16 or 32 levels.
    """
    g_max = -(-n_levels // 2)
    h_max = 0 if constant_hessian else n_levels
    for k in range(30, -1, -1):
        rows = 1 << k
        h_shift = rows.bit_length()  # the count lane holds 0..rows
        g_shift = h_shift + max((rows * h_max).bit_length(), 1)
        if (rows * g_max).bit_length() + g_shift <= 63:  # the signed top lane
            return h_shift, g_shift, rows
    raise ValueError(f"num_grad_quant_bins={n_levels} is too large to pack.")


def _largest_exponent(max_value, limit):
    # the largest s with max_value * 2**s <= limit (capped)
    if max_value == 0:
        return 0
    _, e = math.frexp(limit / max_value)  # limit / max_value < 2**e
    s = min(e - 1, _MAX_QUANT_EXPONENT)
    while math.ldexp(max_value, s) > limit:  # the division may round up
        s -= 1
    return s
