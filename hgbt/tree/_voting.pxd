# The nogil steps of voting-parallel split search (see _voting.pyx).
from ..core._types cimport hist_struct, split_info_struct

cdef int nominate(const split_info_struct* per_feature, int n_features,
                  const unsigned char* mask, int k, int* out) noexcept nogil
cdef int tally(const int* votes, int n_votes, int n_features, int n_pick, int* counts,
               unsigned char* chosen, int* picked) noexcept nogil
cdef void gather_rows(const hist_struct* histograms, const int* rows, int n_rows, int n_bins,
                      hist_struct* out) noexcept nogil
cdef void scatter_rows(const hist_struct* packed, const int* rows, int n_rows, int n_bins,
                       hist_struct* out) noexcept nogil
