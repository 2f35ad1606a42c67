# The collective steps of a tree grown with other processes (see _spread.pyx).
from ..core._types cimport grown_node_struct, hist_struct, split_info_struct
from ._splitting cimport layout_params, split_params


cdef class Spread:
    cdef object collective
    cdef object error  # the first exception of a collective step, for the kernel
    cdef int n_features, top_k, n_voters
    cdef Py_ssize_t n_bins_total
    # voting buffers: a node's chosen sums, the chosen rows packed, the
    # nominations of every process, tallies
    cdef hist_struct* search
    cdef hist_struct* packed_rows
    cdef object votes
    cdef int* counts
    cdef int* picked
    cdef unsigned char* chosen

    cdef bint reduce(self, hist_struct* histogram, bint whole, int n_columns, int n_bins,
                     int* block_start, int* block_stop) noexcept nogil
    cdef bint sum_totals(self, grown_node_struct* node) noexcept nogil
    cdef bint elect(self, split_info_struct* split) noexcept nogil
    cdef int vote_split(self, const hist_struct* histograms, int n_bins,
                        const unsigned int* n_bins_non_missing,
                        const unsigned char* categorical, const layout_params* layout,
                        split_params* p, grown_node_struct* node, const unsigned char* mask,
                        split_info_struct* per_feature, int n_threads) noexcept nogil
