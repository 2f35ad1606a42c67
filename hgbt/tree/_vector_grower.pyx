"""Kernel: grow one tree whose leaves hold a vector, a value per output.

A multi-output fit's trees (``multi_strategy='multi_output_tree'``). A node's
histogram holds, per feature and bin, the k outputs' gradient sums, their
hessian sums and the row count, built in one pass over the node's rows for
all outputs. Where every output has the same hessians (squared error: the
row weights) one hessian sum serves all: the stride is k + 2 doubles, not
2k + 1. A split's gain is the sum over the outputs of the single-output gain
(``_vector_scan``); leaf value j is ``-T(G_j) / (H_j + l2)``. The loop is
``_grower``'s: best-first or level by level, the smaller child's histogram
from rows and the larger one's by subtraction, ties to the oldest node, the
lowest feature, the lowest bin, missing values right first. It reads plain
dense columns and makes numeric splits only (no categorical sets,
constraints or per-node column sampling: the estimators refuse those with
vector leaves).

One thread sums a feature's bins (or a block of its rows), in row order, so
the tree is the same for any number of threads.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset
import numpy as np

from ..core._types cimport X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, grown_node_struct
from ._partition cimport partition
from ._splitting cimport newton_value
from ._vector_scan cimport (vector_params, vsplit, output_score, outputs_score,
                            scan_feature)

from ..core._types import GROWN_NODE_DTYPE, MAX_TREE_DEPTH, SIZE_DTYPE

# Below this many rows x features a node's histograms are built without an
# OpenMP region (as _histogram's MIN_PARALLEL_WORK).
DEF MIN_PARALLEL_WORK = 32768


cdef struct vnode:
    SIZE_C start
    SIZE_C stop
    int depth
    int left  # -1: a leaf
    int right
    int slot  # histogram slot while it may be split (-1: none)
    bint open  # a split with positive gain was found and not yet made
    vsplit split


# Rows from which a feature's bins are summed in LANES interleaved copies,
# added up at the end: consecutive rows often fall in one bin, and each add
# would wait for the previous one's store (as _histogram's lanes). Lane l
# takes the rows i with i % LANES == l, whatever the threads: the same sums.
DEF LANES = 4
DEF LANE_MIN_ROWS = 512
# A node of at least twice this many rows is histogrammed in blocks of rows
# (at most MAX_BLOCKS), a task per feature and block.
DEF BLOCK_MIN_ROWS = 65536
DEF MAX_BLOCKS = 16


cdef inline void _zero_used(double* hist, int stride, unsigned int width,
                            int missing_bin) noexcept nogil:
    memset(hist, 0, width * stride * sizeof(double))
    memset(hist + missing_bin * stride, 0, stride * sizeof(double))


cdef inline void _add_row(
    double* cell, const G_H_DTYPE_C* o, int n_channels, int stride,
) noexcept nogil:
    # one row's values into its bin's cell (the count last)
    cdef int j
    if n_channels == 1:
        cell[0] += o[0]
    elif n_channels == 2:
        cell[0] += o[0]
        cell[1] += o[1]
    elif n_channels == 3:
        cell[0] += o[0]
        cell[1] += o[1]
        cell[2] += o[2]
    else:
        for j in range(n_channels):
            cell[j] += o[j]
    cell[stride - 1] += 1.0


cdef inline void _add_rows(
    double* acc, Py_ssize_t lane_size, bint lanes, const X_BINNED_DTYPE_C* col,
    const SIZE_C* rows, SIZE_C n, const G_H_DTYPE_C* ordered, int n_channels,
    int stride,
) noexcept nogil:
    # Row i into lane i % LANES of acc (lanes lane_size doubles apart), or
    # every row into acc.
    cdef SIZE_C i, n_lanes = n - n % LANES if lanes else 0
    cdef const G_H_DTYPE_C* o
    for i in range(0, n_lanes, LANES):
        o = ordered + i * n_channels
        _add_row(acc + col[rows[i]] * stride, o, n_channels, stride)
        _add_row(acc + lane_size + col[rows[i + 1]] * stride, o + n_channels, n_channels,
                 stride)
        _add_row(acc + 2 * lane_size + col[rows[i + 2]] * stride, o + 2 * n_channels,
                 n_channels, stride)
        _add_row(acc + 3 * lane_size + col[rows[i + 3]] * stride, o + 3 * n_channels,
                 n_channels, stride)
    for i in range(n_lanes, n):
        _add_row(acc + col[rows[i]] * stride, ordered + i * n_channels, n_channels, stride)


cdef void _feature_histogram(
    double* hist, const X_BINNED_DTYPE_C* col, const SIZE_C* rows, SIZE_C n,
    const G_H_DTYPE_C* ordered, int n_channels, int stride, unsigned int width,
    int missing_bin, double* lanes,
) noexcept nogil:
    # bins 0..width-1 and the missing bin: the codes the column holds;
    # ``lanes``: this thread's scratch of LANES histograms
    cdef Py_ssize_t lane_size = <Py_ssize_t> (missing_bin + 1) * stride, c
    cdef int lane
    cdef unsigned int b
    if n < LANE_MIN_ROWS:  # few rows: one copy
        _zero_used(hist, stride, width, missing_bin)
        _add_rows(hist, 0, False, col, rows, n, ordered, n_channels, stride)
        return
    for lane in range(LANES):
        _zero_used(lanes + lane * lane_size, stride, width, missing_bin)
    _add_rows(lanes, lane_size, True, col, rows, n, ordered, n_channels, stride)
    for b in range(width + 1):
        if b == width:
            b = missing_bin
        for c in range(stride):
            hist[b * stride + c] = (lanes[b * stride + c] + lanes[lane_size + b * stride + c]
                                    + lanes[2 * lane_size + b * stride + c]
                                    + lanes[3 * lane_size + b * stride + c])


cdef inline void _gather(
    G_H_DTYPE_C* out, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, SIZE_C r, SIZE_C N,
    int k, int nh,
) noexcept nogil:
    # row r's k gradients (and nh hessians), contiguous
    cdef int j
    for j in range(k):
        out[j] = g[j * N + r]
    for j in range(nh):
        out[k + j] = h[j * N + r]


cdef class VectorKernel:
    """Grows trees with vector leaves over a plain binned matrix (see the module doc).

    Parameters
    ----------
    X_binned : ndarray of uint8 of shape (n_samples, n_features), F-ordered
    n_bins_non_missing : ndarray of uint32 of shape (n_features,)
    missing_bin : int
    n_outputs : int
    shared_hessian : bool
        Every output has the same hessians: :meth:`grow` takes one row of them.
    l1_regularization, l2_regularization, min_gain_to_split, min_child_weight : float
    min_samples_leaf : int
    max_leaf_nodes, max_depth : int or None
    lossguide : bool
        Best-first (True) or level by level.
    """

    cdef vector_params p
    cdef object _X
    cdef const X_BINNED_DTYPE_C* X
    cdef SIZE_C n_rows
    cdef object _n_bins
    cdef const unsigned int* n_bins_non_missing
    cdef object _rows
    cdef object _all_rows
    cdef SIZE_C[::1] rows
    cdef SIZE_C[::1] buffer
    cdef G_H_DTYPE_C[::1] ordered
    cdef double[::1] run  # scan scratch: a stride per feature
    cdef vsplit* per_feature
    cdef double** slots
    cdef int n_slots
    cdef int* free_slots
    cdef int n_free
    cdef vnode* nodes
    cdef double* sums  # a stride per node: its totals
    cdef int n_nodes
    cdef int capacity
    cdef unsigned char* built  # features whose histograms the tree builds
    cdef unsigned char* scanned  # features it may split on
    # scratch kept across nodes and trees: each thread's lanes, a large
    # node's blocks of histograms
    cdef double* lanes
    cdef int lane_threads
    cdef double* parts
    cdef size_t parts_size

    def __cinit__(self):
        self.per_feature = NULL
        self.slots = NULL
        self.free_slots = NULL
        self.nodes = NULL
        self.sums = NULL
        self.built = NULL
        self.scanned = NULL
        self.lanes = self.parts = NULL
        self.lane_threads = 0
        self.parts_size = 0
        self.n_slots = self.n_free = self.n_nodes = self.capacity = 0

    def __init__(self, X_binned, n_bins_non_missing, int missing_bin, int n_outputs, *,
                 bint shared_hessian, double l1_regularization, double l2_regularization,
                 double min_gain_to_split, double min_child_weight, int min_samples_leaf,
                 max_leaf_nodes, max_depth, bint lossguide):
        X_binned = np.asfortranarray(X_binned, dtype=np.uint8)
        cdef const X_BINNED_DTYPE_C[::1, :] X = X_binned
        self._X = X_binned
        self.n_rows = X_binned.shape[0]
        self.X = &X[0, 0] if X_binned.size else NULL
        self._n_bins = np.ascontiguousarray(n_bins_non_missing, dtype=np.uint32)
        cdef const unsigned int[::1] nb = self._n_bins
        self.n_bins_non_missing = &nb[0] if nb.shape[0] else NULL
        p = &self.p
        p.n_outputs = n_outputs
        p.n_features = X_binned.shape[1]
        p.missing_bin = missing_bin
        p.n_bins = missing_bin + 1
        p.n_hessians = 1 if shared_hessian else n_outputs
        p.stride = n_outputs + p.n_hessians + 1
        p.n_channels = n_outputs
        p.l1 = l1_regularization
        p.l2 = l2_regularization
        p.min_gain_to_split = min_gain_to_split
        p.min_child_weight = min_child_weight
        p.min_samples_leaf = min_samples_leaf
        p.max_leaf_nodes = -1 if max_leaf_nodes is None else max_leaf_nodes
        p.max_depth = MAX_TREE_DEPTH if max_depth is None else min(max_depth, MAX_TREE_DEPTH)
        p.lossguide = lossguide
        self._rows = np.empty(self.n_rows, dtype=SIZE_DTYPE)
        self.rows = self._rows
        self._all_rows = np.arange(self.n_rows, dtype=SIZE_DTYPE)
        self.buffer = np.empty(self.n_rows, dtype=SIZE_DTYPE)
        self.ordered = np.empty(self.n_rows * (n_outputs + p.n_hessians), dtype=np.float32)
        self.run = np.empty(max(1, p.n_features) * p.stride)
        self.per_feature = <vsplit*> malloc(max(1, p.n_features) * sizeof(vsplit))
        self.built = <unsigned char*> malloc(max(1, p.n_features))
        self.scanned = <unsigned char*> malloc(max(1, p.n_features))
        if self.per_feature == NULL or self.built == NULL or self.scanned == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef int i
        for i in range(self.n_slots):
            free(self.slots[i])
        free(self.slots)
        free(self.free_slots)
        free(self.nodes)
        free(self.sums)
        free(self.per_feature)
        free(self.built)
        free(self.scanned)
        free(self.lanes)
        free(self.parts)

    @property
    def n_outputs(self):
        return self.p.n_outputs

    def grow(self, const G_H_DTYPE_C[:, ::1] gradients, const G_H_DTYPE_C[:, ::1] hessians,
             sample=None, feature_mask=None, int n_threads=1):
        """Grow a tree on the rows ``sample`` (sorted; None: all).

        ``gradients``: (n_outputs, n_samples); ``hessians``: (n_outputs,
        n_samples), or one row of them when shared (see the class), or one
        column for a constant hessian. ``feature_mask``:
        uint8 per feature, the features the tree may split on (None: all).

        Returns
        -------
        records : ndarray of GROWN_NODE_DTYPE
            The nodes (``value`` 0: see ``values``), node 0 the root.
        values : ndarray of shape (n_nodes, n_outputs)
            Each node's Newton values (unshrunk).
        hessian_sums : ndarray of shape (n_nodes, n_outputs)
            Each node's hessian sum per output.
        gains : ndarray of shape (n_nodes, n_outputs)
            Each split's gain per output (its gain plus ``min_gain_to_split``
            in all); 0 at leaves.
        """
        cdef vector_params* p = &self.p
        cdef int k = p.n_outputs, f
        if gradients.shape[0] != k or hessians.shape[0] != p.n_hessians:
            raise ValueError(f"gradients need {k} rows and hessians {p.n_hessians}.")
        if gradients.shape[1] != self.n_rows:
            raise ValueError("gradients must have a column per row.")
        cdef bint constant = hessians.shape[1] == 1 and self.n_rows != 1
        if not constant and hessians.shape[1] != self.n_rows:
            raise ValueError("hessians must have a column per row, or one.")
        p.n_channels = k if constant else k + p.n_hessians
        cdef SIZE_C n
        if sample is None:
            n = self.n_rows
            self._rows[:] = self._all_rows
        else:
            sample = np.asarray(sample, dtype=SIZE_DTYPE)
            n = sample.shape[0]
            self._rows[:n] = sample
        cdef const unsigned char[::1] mask
        if feature_mask is None:
            for f in range(p.n_features):
                self.scanned[f] = 1
        else:
            mask = np.ascontiguousarray(feature_mask, dtype=np.uint8)
            for f in range(p.n_features):
                self.scanned[f] = mask[f] != 0
        for f in range(p.n_features):
            self.built[f] = self.scanned[f] or f == 0  # feature 0 gives the totals
        cdef void* grown
        n_threads = max(1, n_threads)
        if n_threads > self.lane_threads:
            grown = realloc(self.lanes, <size_t> n_threads * LANES * p.n_bins * p.stride
                            * sizeof(double))
            if grown == NULL:
                raise MemoryError("Out of memory for the histogram lanes.")
            self.lanes, self.lane_threads = <double*> grown, n_threads
        cdef double[::1] hconst = np.ascontiguousarray(
            hessians[:, 0] if constant else np.zeros(p.n_hessians), dtype=np.float64)
        cdef int status
        with nogil:
            status = self._grow(&gradients[0, 0], &hessians[0, 0], constant, &hconst[0], n,
                                max(1, n_threads))
        if status != 0:
            raise MemoryError("Out of memory while growing a tree.")
        return self._records(k)

    def add_leaf_values(self, double[:, ::1] raw, const double[:, ::1] values,
                        int n_threads=1):
        """``raw[j, row] += values[leaf, j]`` for the rows of each leaf of the
        last grown tree (``values``: (n_nodes, n_outputs), shrunk)."""
        cdef int i, j, k = self.p.n_outputs
        cdef SIZE_C r, N = self.n_rows
        if raw.shape[0] != k or raw.shape[1] != self.n_rows:
            raise ValueError("raw must have shape (n_outputs, n_samples).")
        if values.shape[0] != self.n_nodes or values.shape[1] != k:
            raise ValueError("values must have shape (n_nodes, n_outputs).")
        if N == 0:
            return
        cdef double* out = &raw[0, 0]
        cdef const double* v = &values[0, 0]
        cdef const SIZE_C* rows = &self.rows[0]
        cdef const vnode* nodes = self.nodes
        with nogil:
            for i in prange(self.n_nodes, schedule='dynamic', num_threads=max(1, n_threads)):
                if nodes[i].left < 0:
                    for j in range(k):
                        for r in range(nodes[i].start, nodes[i].stop):
                            out[j * N + rows[r]] += v[i * k + j]

    def _records(self, int k):
        cdef int i, s = self.p.stride, nh = self.p.n_hessians
        n = self.n_nodes
        records = np.zeros(n, dtype=GROWN_NODE_DTYPE)
        cdef grown_node_struct[::1] out = records
        hessian_sums = np.empty((n, k))
        values = np.zeros((n, k))
        gains = np.zeros((n, k))
        cdef double[:, ::1] hess_v = hessian_sums, values_v = values, gains_v = gains
        cdef int j, hj
        cdef const double* own
        cdef const double* left
        cdef const double* right
        cdef vnode* node
        for i in range(n):
            node = &self.nodes[i]
            own = &self.sums[i * s]
            for j in range(k):
                hj = k + (j if nh > 1 else 0)
                hess_v[i, j] = own[hj]
                values_v[i, j] = newton_value(own[j], own[hj], self.p.l1, self.p.l2,
                                              self.p.min_child_weight, -INFINITY, INFINITY)
            out[i].count = <unsigned int> own[s - 1]
            out[i].sum_hessians = own[k]
            out[i].sum_gradients = own[0]
            out[i].depth = node.depth
            out[i].lower = -INFINITY
            out[i].upper = INFINITY
            out[i].start = node.start
            out[i].stop = node.stop
            out[i].left = node.left
            out[i].right = node.right
            out[i].split.feature_idx = -1
            if node.left >= 0:
                out[i].split.gain = node.split.gain
                out[i].split.feature_idx = node.split.feature
                out[i].split.bin_idx = node.split.bin
                out[i].split.missing_go_to_left = node.split.missing_left
                out[i].split.n_samples_left = <unsigned int> node.split.n_left
                out[i].split.n_samples_right = <unsigned int> (own[s - 1] - node.split.n_left)
                for j in range(k):  # the split's gain, output by output
                    hj = k + (j if nh > 1 else 0)
                    left = &self.sums[node.left * s]
                    right = &self.sums[node.right * s]
                    gains_v[i, j] = 0.5 * (output_score(left[j], left[hj], &self.p)
                                           + output_score(right[j], right[hj], &self.p)
                                           - output_score(own[j], own[hj], &self.p))
        return records, values, hessian_sums, gains

    # ------------------------------------------------------------ the loop
    cdef int _grow(self, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h, bint constant,
                   const double* hconst, SIZE_C n, int n_threads) noexcept nogil:
        cdef vector_params* p = &self.p
        cdef int root, best, i, left, right, small, large, n_leaves = 1
        cdef SIZE_C start, stop, n_left
        cdef unsigned char goes_left[256]
        cdef vsplit split
        self.n_nodes = 0
        self.n_free = 0
        for i in range(self.n_slots):  # every slot free
            self.free_slots[i] = i
        self.n_free = self.n_slots
        root = self._new_node(0, n, 0)
        if root < 0 or self._take_slot(root) < 0:
            return -1
        self._build(root, g, h, constant, hconst, n_threads)
        self._totals(root)
        self._find(root, n_threads)
        while p.max_leaf_nodes < 0 or n_leaves < p.max_leaf_nodes:
            best = -1
            for i in range(self.n_nodes):
                if not self.nodes[i].open:
                    continue
                if best < 0 or (self.nodes[i].split.gain > self.nodes[best].split.gain
                                if p.lossguide else
                                self.nodes[i].depth < self.nodes[best].depth):
                    best = i
            if best < 0:
                break
            split = self.nodes[best].split
            start = self.nodes[best].start
            stop = self.nodes[best].stop
            memset(goes_left, 0, 256)
            for i in range(split.bin + 1):
                goes_left[i] = 1
            goes_left[p.missing_bin] = split.missing_left
            n_left = partition(&self.rows[start], &self.buffer[0], stop - start,
                               self.X + <Py_ssize_t> split.feature * self.n_rows, False,
                               goes_left, n_threads)
            left = self._new_node(start, start + n_left, self.nodes[best].depth + 1)
            right = self._new_node(start + n_left, stop, self.nodes[best].depth + 1)
            if left < 0 or right < 0:
                return -1
            self.nodes[best].left = left
            self.nodes[best].right = right
            self.nodes[best].open = False
            n_leaves += 1
            if n_left <= stop - start - n_left:
                small, large = left, right
            else:
                small, large = right, left
            # the larger child takes the parent's histogram, less the smaller's
            self.nodes[large].slot = self.nodes[best].slot
            self.nodes[best].slot = -1
            if self._take_slot(small) < 0:
                return -1
            self._build(small, g, h, constant, hconst, n_threads)
            self._subtract(self.nodes[large].slot, self.nodes[small].slot, n_threads)
            self._totals(left)
            self._totals(right)
            self._find(left, n_threads)
            if not self.nodes[left].open:
                self._release(left)
            self._find(right, n_threads)
            if not self.nodes[right].open:
                self._release(right)
        for i in range(self.n_nodes):
            self._release(i)
        return 0

    cdef int _new_node(self, SIZE_C start, SIZE_C stop, int depth) noexcept nogil:
        cdef int capacity
        cdef void* grown
        if self.n_nodes == self.capacity:
            capacity = max(64, 2 * self.capacity)
            grown = realloc(self.nodes, capacity * sizeof(vnode))
            if grown == NULL:
                return -1
            self.nodes = <vnode*> grown
            grown = realloc(self.sums, capacity * self.p.stride * sizeof(double))
            if grown == NULL:
                return -1
            self.sums = <double*> grown
            self.capacity = capacity
        cdef vnode* node = &self.nodes[self.n_nodes]
        node.start = start
        node.stop = stop
        node.depth = depth
        node.left = node.right = -1
        node.slot = -1
        node.open = False
        node.split.gain = 0.0
        node.split.feature = -1
        self.n_nodes += 1
        return self.n_nodes - 1

    cdef int _take_slot(self, int node) noexcept nogil:
        # A histogram slot for the node: a free one, or a new one.
        cdef void* grown
        cdef double* slot
        if self.n_free == 0:
            slot = <double*> malloc(<size_t> self.p.n_features * self.p.n_bins
                                    * self.p.stride * sizeof(double) + 1)
            if slot == NULL:
                return -1
            grown = realloc(self.slots, (self.n_slots + 1) * sizeof(double*))
            if grown == NULL:
                free(slot)
                return -1
            self.slots = <double**> grown
            grown = realloc(self.free_slots, (self.n_slots + 1) * sizeof(int))
            if grown == NULL:
                free(slot)
                return -1
            self.free_slots = <int*> grown
            self.slots[self.n_slots] = slot
            self.free_slots[0] = self.n_slots
            self.n_slots += 1
            self.n_free = 1
        self.n_free -= 1
        self.nodes[node].slot = self.free_slots[self.n_free]
        return self.nodes[node].slot

    cdef void _release(self, int node) noexcept nogil:
        if self.nodes[node].slot >= 0:
            self.free_slots[self.n_free] = self.nodes[node].slot
            self.n_free += 1
            self.nodes[node].slot = -1

    cdef void _build(self, int node, const G_H_DTYPE_C* g, const G_H_DTYPE_C* h,
                     bint constant, const double* hconst, int n_threads) noexcept nogil:
        # The node's histograms from its rows: gradients gathered row-major,
        # then each feature's bins summed by one thread, or, in a large node,
        # each (feature, block of rows) by one thread and the blocks added up
        # in order: every thread busy whatever the number of features. The
        # blocks depend on the node's rows only, so the sums on the threads not.
        cdef vector_params* p = &self.p
        cdef SIZE_C start = self.nodes[node].start, n = self.nodes[node].stop - start
        cdef const SIZE_C* rows = &self.rows[start]
        cdef G_H_DTYPE_C* ordered = &self.ordered[0]
        cdef double* hist = self.slots[self.nodes[node].slot]
        cdef int k = p.n_outputs, nh = p.n_hessians, C = p.n_channels, s = p.stride, f, t
        cdef Py_ssize_t block = <Py_ssize_t> p.n_bins * s
        cdef SIZE_C i, N = self.n_rows, n_blocks = 1, rows_per_block = n, lo
        cdef double* parts = NULL
        cdef double* lanes = self.lanes
        cdef Py_ssize_t lane_block = LANES * block
        cdef size_t size
        cdef void* grown
        cdef bint parallel = n_threads > 1 and n * p.n_features >= MIN_PARALLEL_WORK
        if n >= 2 * BLOCK_MIN_ROWS:
            n_blocks = min(MAX_BLOCKS, n // BLOCK_MIN_ROWS)
            rows_per_block = (n + n_blocks - 1) // n_blocks
            size = <size_t> p.n_features * n_blocks * block
            if size > self.parts_size:  # grown once, kept for the next nodes
                grown = realloc(self.parts, size * sizeof(double))
                if grown != NULL:
                    self.parts, self.parts_size = <double*> grown, size
            if size <= self.parts_size:
                parts = self.parts
            else:  # no memory: whole columns
                n_blocks, rows_per_block = 1, n
        if parallel:
            for i in prange(n, schedule='static', num_threads=n_threads):
                _gather(ordered + i * C, g, h, rows[i], N, k, 0 if constant else nh)
        else:
            for i in range(n):
                _gather(ordered + i * C, g, h, rows[i], N, k, 0 if constant else nh)
        if parts == NULL:
            for f in prange(p.n_features, schedule='dynamic', num_threads=n_threads
                            if parallel else 1):
                if self.built[f]:
                    self._feature(hist + f * block, f, rows, n, ordered,
                                  lanes + threadid() * lane_block)
                    self._finish(hist + f * block, f, constant, hconst, NULL, 0)
            return
        for t in prange(p.n_features * n_blocks, schedule='dynamic',
                        num_threads=n_threads):
            if self.built[t // n_blocks]:
                lo = (t % n_blocks) * rows_per_block
                self._feature(parts + t * block, t // n_blocks, rows + lo,
                              min(n, lo + rows_per_block) - lo, ordered + lo * C,
                              lanes + threadid() * lane_block)
        for f in prange(p.n_features, schedule='static', num_threads=n_threads):
            if self.built[f]:
                self._finish(hist + f * block, f, constant, hconst,
                             parts + f * n_blocks * block, n_blocks)

    cdef inline unsigned int _width(self, int f) noexcept nogil:
        # value bins of feature f that hold rows (then the missing bin)
        cdef unsigned int width = self.n_bins_non_missing[f]
        return width if width < <unsigned int> self.p.missing_bin else self.p.missing_bin

    cdef void _feature(self, double* hist, int f, const SIZE_C* rows, SIZE_C n,
                       const G_H_DTYPE_C* ordered, double* lanes) noexcept nogil:
        _feature_histogram(hist, self.X + <Py_ssize_t> f * self.n_rows, rows, n, ordered,
                           self.p.n_channels, self.p.stride, self._width(f),
                           self.p.missing_bin, lanes)

    cdef void _finish(self, double* hist, int f, bint constant, const double* hconst,
                      const double* parts, SIZE_C n_parts) noexcept nogil:
        # hist = the sum of the n_parts blocks' histograms (in order), if any;
        # with a constant hessian, the hessian sums from the counts
        cdef vector_params* p = &self.p
        cdef int k = p.n_outputs, s = p.stride, j, c
        cdef unsigned int i, b, width = self._width(f)
        cdef Py_ssize_t block = <Py_ssize_t> p.n_bins * s
        cdef SIZE_C part
        cdef double* cell
        cdef double total
        for i in range(width + 1):
            b = i if i < width else p.missing_bin
            cell = hist + b * s
            for c in range(s if n_parts else 0):
                total = 0.0
                for part in range(n_parts):
                    total = total + parts[part * block + b * s + c]
                cell[c] = total
            if constant:
                for j in range(p.n_hessians):
                    cell[k + j] = cell[s - 1] * hconst[j]

    cdef void _subtract(self, int into, int child, int n_threads) noexcept nogil:
        # into -= child, over the bins the columns use
        cdef vector_params* p = &self.p
        cdef double* a = self.slots[into]
        cdef const double* c = self.slots[child]
        cdef Py_ssize_t block = <Py_ssize_t> p.n_bins * p.stride, base, i, m
        cdef int f
        cdef unsigned int width
        if n_threads > 1 and p.n_features * block < 8 * MIN_PARALLEL_WORK:
            n_threads = 1  # an OpenMP region costs more than the work
        for f in prange(p.n_features, schedule='static', num_threads=n_threads):
            if self.built[f]:
                width = self._width(f)
                base = f * block
                m = <Py_ssize_t> width * p.stride
                for i in range(m):
                    a[base + i] -= c[base + i]
                base = base + <Py_ssize_t> p.missing_bin * p.stride
                for i in range(p.stride):
                    a[base + i] -= c[base + i]

    cdef void _totals(self, int node) noexcept nogil:
        # The node's sums: feature 0's bins added up.
        cdef vector_params* p = &self.p
        cdef int s = p.stride, c
        cdef double* out = &self.sums[node * s]
        cdef const double* hist = self.slots[self.nodes[node].slot]
        cdef unsigned int b, width = self._width(0) if p.n_features else 0
        memset(out, 0, s * sizeof(double))
        for b in range(width):
            for c in range(s):
                out[c] += hist[b * s + c]
        for c in range(s):
            out[c] += hist[p.missing_bin * s + c]

    cdef void _find(self, int node, int n_threads) noexcept nogil:
        # The node's best split (open when its gain is positive).
        cdef vector_params* p = &self.p
        cdef vnode* nd = &self.nodes[node]
        cdef int f, s = p.stride
        cdef const double* total = &self.sums[node * s]
        cdef const double* hist = self.slots[nd.slot]
        cdef double parent_score
        cdef Py_ssize_t block = <Py_ssize_t> p.n_bins * s
        cdef vsplit best
        nd.open = False
        if nd.depth >= p.max_depth or total[s - 1] < 2 * p.min_samples_leaf:
            return
        parent_score = outputs_score(total, p)
        if n_threads > 1 and p.n_features * p.n_bins * p.n_outputs >= 8192:
            for f in prange(p.n_features, schedule='dynamic', num_threads=n_threads):
                if self.scanned[f]:
                    scan_feature(hist + f * block, f, self.n_bins_non_missing[f], total,
                                  parent_score, p, &self.run[f * s], &self.per_feature[f])
        else:
            for f in range(p.n_features):
                if self.scanned[f]:
                    scan_feature(hist + f * block, f, self.n_bins_non_missing[f], total,
                                  parent_score, p, &self.run[f * s], &self.per_feature[f])
        best.gain = 0.0
        best.feature = -1
        for f in range(p.n_features):  # ascending: the lowest feature wins a tie
            if self.scanned[f] and self.per_feature[f].feature >= 0 \
                    and self.per_feature[f].gain > best.gain:
                best = self.per_feature[f]
        if best.feature < 0:
            return
        if hist[best.feature * block + p.missing_bin * s + s - 1] == 0.0:
            # no missing value here: unseen ones follow the larger side
            best.missing_left = best.n_left >= total[s - 1] - best.n_left
        nd.split = best
        nd.open = True
