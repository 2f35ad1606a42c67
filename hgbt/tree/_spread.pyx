"""The collective steps of a tree grown with other processes.

The tree kernel (``_grower.pyx``) calls these where a node's histograms or
split involve the processes of a :class:`hgbt.core.collective.Collective`
(the workers of ``hgbt.dask``): summing a node's histograms (all-reduce, or
reduce-scatter by blocks of features), the root's totals, the election of the
best split among the processes' blocks, and the voting-parallel search. Each
takes the GIL for the collective call and keeps the first exception in
:attr:`Spread.error`, returning failure, so that the kernel stops and raises it.
"""
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np

from ..core._types cimport grown_node_struct, hist_struct, split_info_struct
from ._splitting cimport find_split, layout_params, split_params
from ._voting cimport gather_rows, nominate, scatter_rows, tally

from ..core._types import HISTOGRAM_DTYPE
from ..core.collective import allreduce_sum


cdef class Spread:
    """The collective steps of one tree (see the module).

    ``top_k`` > 0: voting-parallel, ``top_k`` nominations per process;
    ``n_bins_total``: the records of a node's histograms (all columns).
    """

    def __cinit__(self, collective, int n_features, Py_ssize_t n_bins_total, int top_k=0):
        self.collective = collective
        self.error = None
        self.n_features = n_features
        self.n_bins_total = n_bins_total
        self.top_k = min(top_k, max(n_features, 1))
        self.n_voters = collective.size
        if self.top_k > 0:
            n = max(n_features, 1)
            self.search = <hist_struct*>malloc(n_bins_total * sizeof(hist_struct))
            self.packed_rows = <hist_struct*>malloc(n_bins_total * sizeof(hist_struct))
            self.counts = <int*>malloc(n * sizeof(int))
            self.picked = <int*>malloc(n * sizeof(int))
            self.chosen = <unsigned char*>malloc(n)
            if (self.search == NULL or self.packed_rows == NULL or self.counts == NULL
                    or self.picked == NULL or self.chosen == NULL):
                raise MemoryError()
            self.votes = np.empty((self.n_voters, self.top_k), dtype=np.intc)

    def __dealloc__(self):
        free(self.search)
        free(self.packed_rows)
        free(self.counts)
        free(self.picked)
        free(self.chosen)

    cdef bint reduce(self, hist_struct* histogram, bint whole, int n_columns, int n_bins,
                     int* block_start, int* block_stop) noexcept nogil:
        # A node's histograms summed over the processes: all of them
        # (``whole``), else this process's block of columns (reduce-scatter,
        # the block into block_start/stop). False on an error.
        cdef int start, stop
        with gil:
            try:
                view = np.asarray(<hist_struct[:n_columns * n_bins]> histogram
                                  ).view(HISTOGRAM_DTYPE)
                if whole:
                    self.collective.allreduce_histogram(view)
                else:
                    start, stop = self.collective.reduce_scatter_histogram(
                        view.reshape(n_columns, n_bins))
                    block_start[0], block_stop[0] = start, stop
            except BaseException as exc:
                self.error = exc
                return False
        return True

    cdef bint sum_totals(self, grown_node_struct* node) noexcept nogil:
        # A node's totals from this process's rows summed over the processes
        # (exact: the values lie on a grid). False on an error.
        with gil:
            try:
                totals = allreduce_sum(self.collective, np.array(
                    [node.sum_gradients, node.sum_hessians, node.count], dtype=np.float64))
                node.sum_gradients, node.sum_hessians = totals[0], totals[1]
                node.count = <unsigned int>totals[2]
            except BaseException as exc:
                self.error = exc
                return False
        return True

    cdef bint elect(self, split_info_struct* split) noexcept nogil:
        # The best of every process's split (its block's best), as find_split
        # picks over all features: blocks ascend with the rank, so the first
        # strictly larger gain in rank order is the lowest feature of a tie.
        # False on an error.
        cdef split_info_struct candidate
        cdef split_info_struct best
        cdef const unsigned char[::1] view
        memset(&best, 0, sizeof(split_info_struct))
        best.feature_idx = -1
        with gil:
            try:
                mine = (<unsigned char*>split)[:sizeof(split_info_struct)]
                for item in self.collective.allgather_bytes(mine):
                    view = item
                    memcpy(&candidate, &view[0], sizeof(split_info_struct))
                    if candidate.feature_idx >= 0 and candidate.gain > best.gain:
                        best = candidate
            except BaseException as exc:
                self.error = exc
                return False
        split[0] = best
        return True

    cdef int vote_split(self, const hist_struct* histograms, int n_bins,
                        const unsigned int* n_bins_non_missing,
                        const unsigned char* categorical, const layout_params* layout,
                        split_params* p, grown_node_struct* node, const unsigned char* mask,
                        split_info_struct* per_feature, int n_threads) noexcept nogil:
        # Voting-parallel: this process nominates from its rows' histograms
        # (its own totals; the leaf limits shared out, as LightGBM does), the
        # nominations are tallied alike everywhere, the chosen features'
        # histograms reduce-scattered over the processes, each block searched
        # and the best elected into node.split: 1 found, 0 none, -2 error.
        cdef split_params mine = p[0]
        cdef split_info_struct local
        cdef double g = 0.0, h = 0.0
        cdef unsigned int count = 0
        cdef int b, f, n_picked, n_features = self.n_features, k = self.top_k
        cdef int first = 0, last = 0
        cdef int[:, ::1] votes
        cdef bint every = 2 * k >= n_features
        if every:  # every feature summed: the exact search
            for f in range(n_features):
                self.picked[f] = f
                self.chosen[f] = 1
            n_picked = n_features
        else:
            for b in range(n_bins):  # every row is in one bin of column 0
                g += histograms[b].sum_gradients
                h += histograms[b].sum_hessians
                count += histograms[b].count
            mine.min_samples_leaf = max(1, p.min_samples_leaf // self.n_voters)
            mine.min_child_weight = p.min_child_weight / self.n_voters
            find_split(histograms, n_bins, n_features, NULL, 0, n_bins_non_missing,
                       g, h, count, mask, categorical, layout, &mine, per_feature,
                       &local, n_threads)
            with gil:
                votes = self.votes
                nominate(per_feature, n_features, mask, k, &votes[0, 0])
                try:
                    everyone = self.collective.allgather_bytes(
                        np.asarray(votes[0]).tobytes())
                    self.votes[:] = np.frombuffer(b"".join(everyone), dtype=np.intc
                                                  ).reshape(self.votes.shape)
                except BaseException as exc:
                    self.error = exc
                    return -2
            n_picked = tally(&votes[0, 0], self.n_voters * k, n_features, 2 * k,
                             self.counts, self.chosen, self.picked)
        # the chosen rows reduce-scattered: this process sums and searches
        # the block [first, last) of them, and the best split is elected
        if n_picked:
            gather_rows(histograms, self.picked, n_picked, n_bins, self.packed_rows)
            if not self.reduce(self.packed_rows, False, n_picked, n_bins, &first, &last):
                return -2
            scatter_rows(self.packed_rows + <Py_ssize_t>first * n_bins,
                         self.picked + first, last - first, n_bins, self.search)
        for f in range(n_features):
            self.chosen[f] = self.chosen[f] and (mask == NULL or mask[f])
        find_split(self.search, n_bins, n_features, self.picked + first, last - first,
                   n_bins_non_missing, node.sum_gradients, node.sum_hessians, node.count,
                   self.chosen, categorical, layout, p, per_feature, &node.split, n_threads)
        if not self.elect(&node.split):
            return -2
        return node.split.feature_idx >= 0
