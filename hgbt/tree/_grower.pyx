"""Kernel: grow a whole tree over local rows, with no Python between nodes.

The loop of ``grower.TreeGrower``: best-first or level by level, only the
smaller child's histogram built from rows, the larger one by subtraction,
the same split search (``_splitting.find_split``), partition and histogram
kernels, the same order of nodes and ties. It covers every local setting:
bundled and sparse-stored columns, interaction constraints (each node keeps
the groups its path allows), per-node column sampling (masks drawn by the
sampler in the order nodes are searched, fetched in batches), any number of
leaves. So it grows the Python loop's tree, bit for bit, without taking the
GIL (except to fetch more node masks): a thread is never idle while Python
runs between two kernels, and trees grown side by side (``tree_team``) never
wait for each other's Python.
"""
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
import numpy as np

from ..core._types cimport (SIZE_C, hist_struct,
                            split_info_struct, grown_node_struct)
from ._histogram cimport subtract
from ._layout cimport tree_buffers, set_buffers, node_histograms, partition_node
from ._spread cimport Spread
from ._rules cimport may_split, queued_before, child_of, bound_children
from ._splitting cimport (find_split, live_features, newton_value, split_params,
                          layout_params, SplitSettings)

from ..core._types import GROWN_NODE_DTYPE, MAX_TREE_DEPTH
from ..core.collective import feature_block
from ..core.params import resolved_default

# Node masks fetched from the sampler at a time (per-node column sampling).
DEF MASK_BATCH = 64
# Live-feature entries kept per tree at most (64 MiB); past it, nodes scan
# their parent's list.
DEF MAX_LIVE = 16777216


cdef struct grow_state:
    bint lossguide
    int max_leaf_nodes  # -1: none
    int max_depth  # -1: none
    int n_threads
    # interaction constraints: n_groups x n_features membership (NULL: none)
    const unsigned char* groups
    int n_groups
    const unsigned char* tree_mask  # NULL: every feature
    bint node_masks  # per-node masks from the sampler


cdef struct search:
    # The fit's split-search settings (SplitSettings' C fields).
    split_params params
    const layout_params* layout
    const unsigned int* n_bins_non_missing
    const unsigned char* categorical
    int n_features


cdef struct node_state:
    # What the loop keeps per node besides its record.
    int slot  # histogram slot while queued (-1: none)
    Py_ssize_t group_start  # its interaction groups: _groups[start:start + count]
    int group_count
    Py_ssize_t live_start  # features that may still split: _live[start:start + count]
    int live_count  # (-1: every feature)
    int key  # paged: its histograms' key (root 0; children of node p: 2p + 2, 2p + 3)


cdef bint _reserve_ints(int** buffer, Py_ssize_t* capacity, Py_ssize_t n) noexcept nogil:
    # Room for n ints in a growing buffer; False when memory ran out.
    cdef Py_ssize_t grown_capacity
    cdef void* grown
    if n <= capacity[0]:
        return True
    grown_capacity = max(n, 2 * capacity[0] + 64)
    grown = realloc(buffer[0], grown_capacity * sizeof(int))
    if grown == NULL:
        return False
    buffer[0] = <int*>grown
    capacity[0] = grown_capacity
    return True


cdef class Growth:
    """How every tree of a fit grows past each node's split search, built once
    per fit (``TreeGrower``) and read by :meth:`TreeKernel.grow`.

    Parameters
    ----------
    lossguide : bool, default=True
        Best-first by gain; False: level by level (depthwise).
    max_leaf_nodes : int or None, default=31
        At least 2; None: no limit (defaults: the parameters', as the first
        tree size of ``max_leaf_nodes='auto'``).
    max_depth : int or None, default=None
    interaction_groups : ndarray of uint8 of shape (n_groups, n_features) or None
        Membership of the interaction constraints' groups.
    """

    cdef readonly bint lossguide
    cdef readonly object max_leaf_nodes, max_depth, interaction_groups

    def __init__(self, bint lossguide=True,
                 max_leaf_nodes=resolved_default("max_leaf_nodes"),
                 max_depth=resolved_default("max_depth"), interaction_groups=None):
        if max_leaf_nodes is not None and max_leaf_nodes < 2:
            raise ValueError(f"Growth: max_leaf_nodes must be at least 2, got "
                             f"{max_leaf_nodes}.")
        self.lossguide = lossguide
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.interaction_groups = (None if interaction_groups is None else
                                   np.ascontiguousarray(interaction_groups, dtype=np.uint8))


cdef class TreeKernel:
    """Grows trees on one training-data source's buffers (see ``grow``).

    Keeps a pool of histograms (``n_columns`` x ``n_bins`` bins each) and its
    node buffers across trees, so growing allocates nothing once warm.
    """
    cdef hist_struct** _slots
    cdef int* _free
    cdef int _n_slots, _n_free, _capacity
    cdef Py_ssize_t _bins
    cdef int _n_features
    # node records, per-node state and the queue (a binary heap of node ids)
    cdef grown_node_struct* _nodes
    cdef node_state* _state
    cdef int* _heap
    cdef int _node_capacity
    cdef int* _groups
    cdef Py_ssize_t _groups_used, _groups_capacity
    cdef int* _live
    cdef Py_ssize_t _live_used, _live_capacity
    cdef split_info_struct* _per_feature
    cdef unsigned char* _mask
    # per-node masks: a batch from the sampler, and the next one to use
    cdef object _mask_source
    cdef object _mask_batch
    cdef const unsigned char* _batch_ptr
    cdef int _batch_size, _batch_next
    cdef object _error
    cdef bint _failed
    # other processes taking part in the same tree (hgbt.core.collective;
    # _spread.pyx): None for a local tree. Rows spread: the root's histograms
    # are all-reduced with theirs; with _scatter, any other node's are
    # reduce-scattered, each process searching its block of features
    # [_block_start, _block_stop) and the best split elected; with _voting,
    # only the features the processes nominate are summed. Feature-parallel
    # (_by_feature, every process holds all rows): each process builds and
    # searches only its block of features, every node's split elected.
    cdef Spread _spread
    cdef bint _spread_on, _scatter, _by_feature, _voting
    cdef int _block_start, _block_stop
    cdef unsigned char* _scan_mask
    # paged growth (rows on disk, issue 41): histograms come from a table the
    # caller filled in passes over the pages, by node key; a node whose key
    # has none stops the run (-3), naming it, for the caller's next pass
    cdef bint _paged
    cdef const int* _paged_index
    cdef Py_ssize_t _paged_keys, _paged_count
    cdef const hist_struct* _paged_hist
    cdef int _paged_need, _paged_n_nodes, _paged_n_queued

    def __cinit__(self, int n_features, int n_columns, int n_bins):
        self._bins = <Py_ssize_t>max(n_columns, 1) * n_bins
        self._n_features = n_features
        self._per_feature = <split_info_struct*>malloc(
            max(n_features, 1) * sizeof(split_info_struct))
        self._mask = <unsigned char*>malloc(max(n_features, 1))
        self._scan_mask = <unsigned char*>malloc(max(n_features, 1))
        if self._per_feature == NULL or self._mask == NULL or self._scan_mask == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef int i
        for i in range(self._n_slots):
            free(self._slots[i])
        free(self._slots)
        free(self._free)
        free(self._nodes)
        free(self._state)
        free(self._heap)
        free(self._groups)
        free(self._live)
        free(self._per_feature)
        free(self._mask)
        free(self._scan_mask)

    cdef int _take(self) noexcept nogil:
        # A free histogram slot, or -1 when memory ran out.
        cdef int capacity
        cdef hist_struct* slot
        cdef void* grown
        if self._n_free > 0:
            self._n_free -= 1
            return self._free[self._n_free]
        if self._n_slots == self._capacity:
            capacity = 2 * self._capacity + 8
            grown = realloc(self._slots, capacity * sizeof(hist_struct*))
            if grown == NULL:
                return -1
            self._slots = <hist_struct**>grown
            grown = realloc(self._free, capacity * sizeof(int))
            if grown == NULL:
                return -1
            self._free = <int*>grown
            self._capacity = capacity
        slot = <hist_struct*>malloc(self._bins * sizeof(hist_struct))
        if slot == NULL:
            return -1
        self._slots[self._n_slots] = slot
        self._n_slots += 1
        return self._n_slots - 1

    cdef inline void _release(self, int slot) noexcept nogil:
        self._free[self._n_free] = slot
        self._n_free += 1

    cdef bint _reserve_nodes(self, int n_nodes) noexcept nogil:
        # Room for n_nodes records (and their state and queue entries).
        cdef int capacity
        cdef void* grown
        if n_nodes <= self._node_capacity:
            return True
        capacity = max(n_nodes, 2 * self._node_capacity + 64)
        grown = realloc(self._nodes, capacity * sizeof(grown_node_struct))
        if grown == NULL:
            return False
        self._nodes = <grown_node_struct*>grown
        grown = realloc(self._state, capacity * sizeof(node_state))
        if grown == NULL:
            return False
        self._state = <node_state*>grown
        grown = realloc(self._heap, capacity * sizeof(int))
        if grown == NULL:
            return False
        self._heap = <int*>grown
        self._node_capacity = capacity
        return True

    cdef bint _reserve_groups(self, Py_ssize_t n) noexcept nogil:
        return _reserve_ints(&self._groups, &self._groups_capacity, self._groups_used + n)

    def grow(self, SplitSettings settings, Growth growth, dict buffers=None, *,
             SIZE_C n_root=0, tree_mask=None, node_masks=None, collective=None,
             bint feature_parallel=False, int voting_top_k=0, int n_threads=1,
             paged=None):
        """Grow one tree on the rows ``rows[:n_root]``; returns its nodes.

        ``settings`` is the fit's :class:`SplitSettings`, ``growth`` its
        :class:`Growth` (both built once per fit). ``buffers`` holds the rows
        and their buffers, by name: ``layout``, the binned rows
        (:class:`hgbt.data.bundling.FeatureLayout`; a plain one, every
        feature its dense column, takes the direct path; sparse-stored
        columns also take ``column_bounds`` and a zeroed ``scratch`` byte per
        row); ``rows`` (the row-index array, partitioned in place) and
        ``buffer``; ``gradients``/``hessians`` (snapped to their grid;
        ``hessians`` of length 1: constant) with ``ordered_gradients`` /
        ``ordered_hessians``, or, with ``packed``, the dense columns'
        histograms from packed quantized gradients (``exponents``,
        ``packed_lanes``, ``constant_hessian`` and the buffers ``acc``,
        ``sums``, ``X_rows`` of ``build_histogram_packed``; the sparse-stored
        columns' still from ``gradients``/``hessians``, the dequantized
        values). ``tree_mask``: the tree's features (uint8, or None/empty
        for all). ``node_masks``: with per-node column sampling, a callable
        ``k -> (k, n_features) uint8`` giving the next ``k`` node masks.
        Returns the nodes (GROWN_NODE_DTYPE) in ``TreeGrower``'s order, each
        node's rows at ``rows[start:stop]``.

        ``collective``: a :class:`hgbt.core.collective.Collective` of
        processes that hold the other rows of the tree (``hgbt.dask``
        workers): the root's histograms built from rows here are replaced by
        the sum over the processes (``allreduce_histogram``, with the GIL);
        with a plain layout any other node's are reduce-scattered, each
        process searching its block of features and the best split elected
        (``reduce_scatter_histogram``, ``allgather_bytes``), so each process
        grows the tree of all the rows. None, or one of size 1: the rows are
        all here. ``feature_parallel``: every process of ``collective`` holds
        all the rows; each builds and searches the histograms of its block of
        features only (``feature_block``), nothing is reduced, and every
        node's best split is elected. ``voting_top_k`` > 0 (voting-parallel,
        rows spread): each node's histograms stay this process's; each
        process nominates the ``voting_top_k`` features whose best split on
        its rows gains most, and only the ``2 * voting_top_k`` features
        nominated most (all of them when that is every feature) are summed
        over the processes and searched.

        ``paged=(index, histograms)``: the rows are not here (issue 41: pages
        on disk); node ``k``'s histograms are ``histograms[index[key]]``
        (int32 ``index`` by node key: the root 0, the children of node ``p``
        ``2p + 2`` and ``2p + 3``; HISTOGRAM_DTYPE ``histograms`` of shape
        (n, n_columns, n_bins)), nothing is partitioned (``buffers`` need
        only be consistent), and the tree grows until a node whose key has
        no histograms is to be built. Returns ``(nodes, need, queued)``: the
        nodes so far, that node's id (-1: the tree is whole) and the ids of
        the nodes then queued (split found, not yet split). Each run makes
        the same choices as the last up to where that stopped, so a caller
        that fills the missing histograms and runs again grows the tree of
        all the rows.
        """
        cdef tree_buffers buf
        cdef const int[::1] paged_index
        cdef const hist_struct[:, :, ::1] paged_hist
        cdef int n_features = self._n_features
        if settings.n_features != n_features:
            raise ValueError("TreeKernel.grow: inconsistent shapes.")
        set_buffers(&buf, buffers or {}, n_features, settings.missing_bin + 1,
                    settings.n_columns)
        plain = buffers["layout"].is_plain
        spread = collective is not None and collective.size > 1
        by_feature = spread and feature_parallel
        voting = spread and not feature_parallel and voting_top_k > 0
        spread = spread and not feature_parallel
        # a process of a spread fit may hold none of the rows (its histograms: 0)
        if ((n_root == 0 and not spread) or n_root > buf.n_samples
                or self._bins != <Py_ssize_t>max(buf.n_columns, 1) * buf.n_bins):
            raise ValueError("TreeKernel.grow: inconsistent shapes.")
        # blocks of features need feature f in column f: the plain layout
        self._scatter = spread and plain and not voting
        self._by_feature = by_feature
        self._voting = voting
        if voting and not plain:
            raise ValueError("TreeKernel.grow: voting-parallel growth needs a plain layout.")
        self._spread_on = spread or by_feature
        self._spread = (Spread(collective, n_features, self._bins,
                               voting_top_k if voting else 0)
                        if self._spread_on else None)
        self._block_start, self._block_stop = 0, n_features
        if by_feature:
            if not plain or n_features < collective.size:
                raise ValueError("TreeKernel.grow: feature-parallel growth needs a plain "
                                 "layout and a feature for every process.")
            self._block_start, self._block_stop = feature_block(
                n_features, collective.rank, collective.size)
        self._paged = paged is not None
        self._paged_need = -1
        if self._paged:
            if self._spread_on:
                raise ValueError("TreeKernel.grow: paged growth is local.")
            paged_index, paged_hist = paged
            if paged_hist.shape[0] and (paged_hist.shape[1] != max(buf.n_columns, 1)
                                        or paged_hist.shape[2] != buf.n_bins):
                raise ValueError("TreeKernel.grow: paged histograms of another shape.")
            if np.max(paged_index, initial=-1) >= paged_hist.shape[0]:
                raise ValueError("TreeKernel.grow: a paged key past the histograms.")
            self._paged_index = &paged_index[0] if paged_index.shape[0] else NULL
            self._paged_keys = paged_index.shape[0]
            self._paged_hist = &paged_hist[0, 0, 0] if paged_hist.shape[0] else NULL
            self._paged_count = paged_hist.shape[0]
        try:
            nodes = self._run(&buf, settings, growth, tree_mask, node_masks, n_threads,
                              n_root)
            if not self._paged:
                return nodes
            queued = np.array([self._heap[i] for i in range(self._paged_n_queued)]
                              if self._paged_need >= 0 else [], dtype=np.int32)
            return nodes, self._paged_need, queued
        finally:
            self._spread = None
            self._paged = False
            self._paged_index = NULL
            self._paged_hist = NULL

    cdef _run(self, const tree_buffers* buf, SplitSettings settings, Growth growth, tree_mask,
              node_masks, int n_threads, SIZE_C n_root):
        # The growth settings, then the loop without the GIL; returns the nodes.
        cdef grow_state grow
        cdef const unsigned char[::1] mask_view
        cdef const unsigned char[:, ::1] groups_view
        cdef int n_nodes, n_features = self._n_features
        memset(&grow, 0, sizeof(grow_state))
        grow.lossguide = growth.lossguide
        grow.max_leaf_nodes = -1 if growth.max_leaf_nodes is None else growth.max_leaf_nodes
        # no limit is still MAX_TREE_DEPTH: the deepest tree a model file holds
        grow.max_depth = min(MAX_TREE_DEPTH if growth.max_depth is None
                             else growth.max_depth, MAX_TREE_DEPTH)
        grow.n_threads = n_threads
        if growth.interaction_groups is not None:
            groups_view = growth.interaction_groups
            if groups_view.shape[1] != n_features:
                raise ValueError(f"TreeKernel.grow: interaction_groups needs {n_features} "
                                 "columns.")
            grow.n_groups = groups_view.shape[0]
            if grow.n_groups:
                grow.groups = &groups_view[0, 0]
            else:  # no group at all: nothing may split
                grow.groups = <const unsigned char*>self._mask
        if tree_mask is not None and len(tree_mask):
            mask_view = np.ascontiguousarray(tree_mask, dtype=np.uint8)
            if mask_view.shape[0] != n_features:
                raise ValueError(f"TreeKernel.grow: tree_mask needs {n_features} entries.")
            grow.tree_mask = &mask_view[0]
        self._mask_source = node_masks
        self._mask_batch = None
        self._batch_size = self._batch_next = 0
        grow.node_masks = node_masks is not None
        cdef search s
        s.params = settings.params
        s.layout = &settings.layout
        s.n_bins_non_missing = settings.n_bins_non_missing
        s.categorical = settings.categorical
        s.n_features = settings.n_features
        self._error = None
        self._failed = False
        with nogil:
            n_nodes = self._grow(buf, &grow, &s, n_root)
        self._mask_source = self._mask_batch = None
        if self._error is None and self._spread is not None:
            self._error = self._spread.error
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if n_nodes == -3:  # paged: a node's histograms are missing
            n_nodes = self._paged_n_nodes
        if n_nodes < 0:
            raise MemoryError("TreeKernel.grow: out of memory for the tree.")
        nodes = np.empty(n_nodes, dtype=GROWN_NODE_DTYPE)
        cdef grown_node_struct[::1] out = nodes
        memcpy(&out[0], self._nodes, n_nodes * sizeof(grown_node_struct))
        return nodes

    cdef int _grow(self, const tree_buffers* buf, const grow_state* grow, const search* s,
                   SIZE_C n_root) noexcept nogil:
        # TreeGrower.grow; returns the node count, or -1 when out of memory
        # (-2: fetching node masks failed, see self._error).
        cdef int n_queued = 0, n_nodes = 1, n_leaves = 1, i, node_id, status
        cdef int small, large, small_slot, large_slot, b
        cdef grown_node_struct* node
        cdef grown_node_struct* nodes
        cdef node_state* state
        cdef SIZE_C n_left
        cdef bint more, small_ok, large_ok
        cdef const hist_struct* row0
        cdef split_params p = s.params
        self._groups_used = self._live_used = 0
        for i in range(self._n_slots):  # every slot free (a stopped run held some)
            self._free[i] = i
        self._n_free = self._n_slots
        if not self._reserve_nodes(1):
            return -1
        node = &self._nodes[0]
        memset(node, 0, sizeof(grown_node_struct))
        node.start, node.stop = 0, n_root
        node.lower, node.upper = -INFINITY, INFINITY
        node.left = node.right = -1
        state = &self._state[0]
        state.group_start, state.group_count = 0, 0
        state.live_start, state.live_count = 0, -1
        state.key = 0
        state.slot = self._take()
        if state.slot < 0:
            return -1
        if grow.groups != NULL:  # the root: every group
            if not self._reserve_groups(grow.n_groups):
                return -1
            for i in range(grow.n_groups):
                self._groups[i] = i
            state.group_start, state.group_count = 0, grow.n_groups
            self._groups_used = grow.n_groups
        self._build(buf, 0, self._slots[state.slot], grow.n_threads)
        if self._failed:
            return self._stopped(1, 0)
        # every row falls in one bin of any column: column 0, or the first
        # this process built
        row0 = self._slots[state.slot] + self._block_start * buf.n_bins
        for b in range(buf.n_bins):
            node.sum_gradients += row0[b].sum_gradients
            node.sum_hessians += row0[b].sum_hessians
            node.count += row0[b].count
        if self._voting and not self._spread.sum_totals(node):  # this process's rows'
            self._failed = True
            return -2
        node.value = newton_value(node.sum_gradients, node.sum_hessians,
                                  p.l1_regularization, p.l2_regularization,
                                  p.min_child_weight, node.lower, node.upper)
        if may_split(node, grow.max_depth, &p):
            status = self._split(buf, grow, s, &p, 0)
            if status < 0:
                return status
        else:
            status = 0
        if status:
            n_queued = self._push(n_queued, 0, grow.lossguide)
        else:
            self._release(state.slot)
        while n_queued > 0 and (grow.max_leaf_nodes < 0
                                or n_leaves < grow.max_leaf_nodes):
            if not self._reserve_nodes(n_nodes + 2):
                return -1
            nodes = self._nodes
            node_id = self._heap[0]
            n_queued = self._pop(n_queued, grow.lossguide)
            node = &nodes[node_id]
            node.left, node.right = n_nodes, n_nodes + 1
            child_of(node, &nodes[n_nodes], True)
            child_of(node, &nodes[n_nodes + 1], False)
            bound_children(node, &nodes[n_nodes], &nodes[n_nodes + 1], &p)
            if grow.groups != NULL and not self._child_groups(node_id, n_nodes, grow):
                return -1
            for i in range(2):  # the parent's live features, narrowed in _split
                self._state[n_nodes + i].live_start = self._state[node_id].live_start
                self._state[n_nodes + i].live_count = self._state[node_id].live_count
                self._state[n_nodes + i].key = 2 * node_id + 2 + i
            n_nodes += 2
            # the partition: a table over the split feature's bins, then over
            # its column's codes (paged: the caller routes the rows)
            n_left = 0 if self._paged else partition_node(
                buf, node.start, node.stop - node.start, &node.split, grow.n_threads)
            nodes[node.left].start, nodes[node.left].stop = node.start, node.start + n_left
            nodes[node.right].start = node.start + n_left
            nodes[node.right].stop = node.stop
            n_leaves += 1
            more = grow.max_leaf_nodes < 0 or n_leaves < grow.max_leaf_nodes
            if nodes[node.left].count <= nodes[node.right].count:
                small, large = node.left, node.right
            else:
                small, large = node.right, node.left
            small_ok = more and may_split(&nodes[small], grow.max_depth, &p)
            large_ok = more and may_split(&nodes[large], grow.max_depth, &p)
            if small_ok or large_ok:
                small_slot = self._take()
                if small_slot < 0:
                    return -1
                self._state[small].slot = small_slot
                self._build(buf, small, self._slots[small_slot], grow.n_threads)
                if self._failed:
                    return self._stopped(n_nodes, n_queued)
                if large_ok:
                    large_slot = self._take()
                    if large_slot < 0:
                        return -1
                    self._state[large].slot = large_slot
                    # by blocks (reduce-scattered, or feature-parallel): only
                    # this process's block holds sums
                    b = self._block_start * buf.n_bins
                    subtract(self._slots[self._state[node_id].slot] + b,
                             self._slots[small_slot] + b, self._slots[large_slot] + b,
                             self._block_stop - self._block_start
                             if self._scatter or self._by_feature else buf.n_columns,
                             buf.n_bins,
                             buf.column_width + self._block_start, grow.n_threads)
                    status = self._split(buf, grow, s, &p, large)
                    if status < 0:
                        return status
                    if status:
                        n_queued = self._push(n_queued, large, grow.lossguide)
                    else:
                        self._release(large_slot)
                status = 0
                if small_ok:
                    status = self._split(buf, grow, s, &p, small)
                    if status < 0:
                        return status
                if status:
                    n_queued = self._push(n_queued, small, grow.lossguide)
                else:
                    self._release(small_slot)
            self._release(self._state[node_id].slot)
        for i in range(n_queued):  # left unsplit: they become leaves
            self._release(self._state[self._heap[i]].slot)
            memset(&self._nodes[self._heap[i]].split, 0, sizeof(split_info_struct))
        return n_nodes

    cdef int _stopped(self, int n_nodes, int n_queued) noexcept nogil:
        # -3 when a paged run stopped for a node's missing histograms (the
        # nodes and queue so far kept for grow's answer), else -2 (an error)
        if self._paged_need < 0:
            return -2
        self._paged_n_nodes, self._paged_n_queued = n_nodes, n_queued
        return -3

    cdef int _push(self, int n_queued, int node_id, bint lossguide) noexcept nogil:
        # Sift node_id up the heap; returns the new queue length.
        cdef int i = n_queued, parent
        cdef int* heap = self._heap
        while i > 0:
            parent = (i - 1) >> 1
            if not queued_before(self._nodes, node_id, heap[parent], lossguide):
                break
            heap[i] = heap[parent]
            i = parent
        heap[i] = node_id
        return n_queued + 1

    cdef int _pop(self, int n_queued, bint lossguide) noexcept nogil:
        # Remove the heap's first node; returns the new queue length.
        cdef int* heap = self._heap
        cdef int n = n_queued - 1, i = 0, child, last = heap[n_queued - 1]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and queued_before(self._nodes, heap[child + 1], heap[child],
                                         lossguide):
                child += 1
            if not queued_before(self._nodes, heap[child], last, lossguide):
                break
            heap[i] = heap[child]
            i = child
        if n > 0:
            heap[i] = last
        return n

    cdef bint _child_groups(self, int parent, int first_child,
                            const grow_state* grow) noexcept nogil:
        # The children keep the parent's groups that hold the split feature.
        cdef node_state* st = &self._state[parent]
        cdef int f = self._nodes[parent].split.feature_idx, i, g, n_kept = 0
        cdef Py_ssize_t start
        if not self._reserve_groups(st.group_count):
            return False
        start = self._groups_used
        for i in range(st.group_count):
            g = self._groups[st.group_start + i]
            if grow.groups[<Py_ssize_t>g * self._n_features + f]:
                self._groups[start + n_kept] = g
                n_kept += 1
        self._groups_used += n_kept
        for i in range(2):
            self._state[first_child + i].group_start = start
            self._state[first_child + i].group_count = n_kept
        return True

    cdef const unsigned char* _node_mask(self, const grow_state* grow,
                                         int node_id) noexcept nogil:
        # The features node_id may split on (NULL: all); NULL with _error
        # set when fetching node masks failed.
        cdef const unsigned char* mask = grow.tree_mask
        cdef node_state* st = &self._state[node_id]
        cdef int f, i
        cdef const unsigned char* member
        if grow.node_masks:
            if self._batch_next == self._batch_size and not self._fetch_masks():
                return NULL
            mask = self._batch_ptr + <Py_ssize_t>self._batch_next * self._n_features
            self._batch_next += 1
        if grow.groups == NULL:
            return mask
        memset(self._mask, 0, self._n_features)
        for i in range(st.group_count):
            member = grow.groups + <Py_ssize_t>self._groups[st.group_start + i] * self._n_features
            for f in range(self._n_features):
                self._mask[f] |= member[f]
        if mask != NULL:
            for f in range(self._n_features):
                self._mask[f] &= mask[f]
        return self._mask

    cdef bint _fetch_masks(self) noexcept nogil:
        # The next MASK_BATCH node masks from the sampler (with the GIL).
        cdef const unsigned char[:, ::1] view
        with gil:
            try:
                batch = np.ascontiguousarray(self._mask_source(MASK_BATCH),
                                             dtype=np.uint8)
                if batch.ndim != 2 or batch.shape[1] != self._n_features or not len(batch):
                    raise ValueError("node_masks must give (k, n_features) masks.")
                view = batch
                self._mask_batch = batch
                self._batch_ptr = &view[0, 0]
                self._batch_size = batch.shape[0]
                self._batch_next = 0
            except BaseException as exc:
                self._error = exc
                self._failed = True
                return False
        return True

    cdef void _build(self, const tree_buffers* buf, int node_id, hist_struct* out,
                     int n_threads) noexcept nogil:
        # The node's histograms from its rows (LocalTrainingData.node_histogram),
        # summed with the other processes' when the rows are spread.
        self._build_here(buf, node_id, out, n_threads)
        if not self._spread_on or self._failed or self._by_feature or self._voting:
            return
        # the root whole (its totals are read off a column), any other node
        # by blocks with _scatter
        if not self._spread.reduce(out, node_id == 0 or not self._scatter, buf.n_columns,
                                   buf.n_bins, &self._block_start, &self._block_stop):
            self._failed = True

    cdef void _build_here(self, const tree_buffers* buf, int node_id, hist_struct* out,
                          int n_threads) noexcept nogil:
        # The node's histograms from the rows in this process.
        cdef const grown_node_struct* node = &self._nodes[node_id]
        cdef int key, index
        if self._paged:
            key = self._state[node_id].key
            index = self._paged_index[key] if key < self._paged_keys else -1
            if index < 0:
                self._paged_need = node_id
                self._failed = True
            else:
                memcpy(out, self._paged_hist + <Py_ssize_t>index * self._bins,
                       self._bins * sizeof(hist_struct))
            return
        # the dense columns built: all, or (feature-parallel, plain layout)
        # this process's block, a contiguous run of columns
        cdef Py_ssize_t first = self._block_start if self._by_feature else 0
        cdef int n_dense = (self._block_stop - self._block_start if self._by_feature
                            else buf.n_dense)
        node_histograms(buf, node.start, node.stop - node.start, first, n_dense, out,
                        n_threads)

    cdef int _split(self, const tree_buffers* buf, const grow_state* grow, const search* s,
                    split_params* p, int node_id) noexcept nogil:
        # The node's best split into node.split: 1 found, 0 none, -2 error.
        cdef grown_node_struct* node = &self._nodes[node_id]
        cdef const unsigned char* mask = self._node_mask(grow, node_id)
        if self._failed:
            return -2
        cdef node_state* st = &self._state[node_id]
        cdef const hist_struct* histograms = self._slots[st.slot]
        cdef int n_in = s.n_features if st.live_count < 0 else st.live_count, n_live
        p.bounded = node.lower > -INFINITY or node.upper < INFINITY
        p.lower_bound = node.lower
        p.upper_bound = node.upper
        cdef int status
        if self._voting:  # this process's histograms: not what the others see
            status = self._spread.vote_split(histograms, buf.n_bins, s.n_bins_non_missing,
                                             s.categorical, s.layout, p, node, mask,
                                             self._per_feature, grow.n_threads)
            if status < 0:
                self._failed = True
            return status
        if (s.layout.feature_column != NULL and self._live_used + n_in <= MAX_LIVE
                and _reserve_ints(&self._live, &self._live_capacity,
                                  self._live_used + n_in)):
            # else the parent's list serves: a superset, the same split
            n_live = live_features(histograms, buf.n_bins, s.layout,
                                   NULL if st.live_count < 0 else self._live + st.live_start,
                                   n_in, node.count, p.min_samples_leaf,
                                   self._live + self._live_used)
            if n_live < n_in or st.live_count < 0:
                st.live_start, st.live_count = self._live_used, n_live
                self._live_used += n_live
        cdef bint elect = (self._scatter and node_id != 0) or self._by_feature
        cdef int f
        if elect:  # this process's block of the node's features
            for f in range(s.n_features):
                self._scan_mask[f] = (self._block_start <= f < self._block_stop
                                      and (mask == NULL or mask[f]))
            mask = self._scan_mask
        find_split(histograms, buf.n_bins, s.n_features,
                   NULL if st.live_count < 0 else self._live + st.live_start,
                   st.live_count, s.n_bins_non_missing, node.sum_gradients, node.sum_hessians,
                   node.count, mask, s.categorical, s.layout, p, self._per_feature,
                   &node.split, grow.n_threads)
        if elect and not self._spread.elect(&node.split):
            self._failed = True
            return -2
        return node.split.feature_idx >= 0
