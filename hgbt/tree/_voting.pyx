"""Kernels of voting-parallel split search (``tree_learner='voting'``).

Each process nominates the ``k`` features whose best split on its own rows
gains most (:func:`nominate`); the processes all-gather the nominations, and
every process tallies them the same way (:func:`tally`): the ``2k`` features
with the most votes, ties to the lower feature. Only those features'
histograms are then summed over the processes (:func:`gather_rows` packs
them, :func:`scatter_rows` puts the sums back), so a node exchanges ``2k``
histogram rows whatever the number of features.
"""
from libc.string cimport memcpy, memset

from ..core._types cimport hist_struct, split_info_struct


cdef int nominate(const split_info_struct* per_feature, int n_features,
                  const unsigned char* mask, int k, int* out) noexcept nogil:
    """The (at most) ``k`` features of largest positive gain in
    ``per_feature`` (among ``mask``'s, NULL: all), ties to the lower feature,
    into ``out``; the rest of ``out[:k]`` is -1. Returns how many."""
    cdef int f, i, j, n = 0
    for i in range(k):
        out[i] = -1
    for f in range(n_features):
        if ((mask != NULL and not mask[f]) or per_feature[f].feature_idx < 0
                or not per_feature[f].gain > 0):
            continue
        # insertion into the sorted top k (k is small)
        i = n if n < k else k
        while i > 0 and per_feature[out[i - 1]].gain < per_feature[f].gain:
            i -= 1
        if i >= k:
            continue
        j = n if n < k else k - 1
        while j > i:
            out[j] = out[j - 1]
            j -= 1
        out[i] = f
        if n < k:
            n += 1
    return n


cdef int tally(const int* votes, int n_votes, int n_features, int n_pick, int* counts,
               unsigned char* chosen, int* picked) noexcept nogil:
    """The ``n_pick`` features with the most of ``votes`` (-1: none), ties to
    the lower feature: ``chosen`` (n_features flags) and ``picked``
    (ascending). ``counts``: scratch of n_features. Returns how many."""
    cdef int f, i, best, n = 0
    memset(counts, 0, n_features * sizeof(int))
    memset(chosen, 0, n_features)
    for i in range(n_votes):
        if votes[i] >= 0:
            counts[votes[i]] += 1
    while n < n_pick:
        best = -1
        for f in range(n_features):
            if counts[f] > 0 and not chosen[f] and (best < 0 or counts[f] > counts[best]):
                best = f
        if best < 0:
            break
        chosen[best] = 1
        n += 1
    n = 0
    for f in range(n_features):
        if chosen[f]:
            picked[n] = f
            n += 1
    return n


cdef void gather_rows(const hist_struct* histograms, const int* rows, int n_rows, int n_bins,
                      hist_struct* out) noexcept nogil:
    """Rows ``rows`` of ``histograms`` (rows of ``n_bins``), packed into ``out``."""
    cdef int i
    for i in range(n_rows):
        memcpy(out + <Py_ssize_t>i * n_bins, histograms + <Py_ssize_t>rows[i] * n_bins,
               n_bins * sizeof(hist_struct))


cdef void scatter_rows(const hist_struct* packed, const int* rows, int n_rows, int n_bins,
                       hist_struct* out) noexcept nogil:
    """The reverse of :func:`gather_rows`."""
    cdef int i
    for i in range(n_rows):
        memcpy(out + <Py_ssize_t>rows[i] * n_bins, packed + <Py_ssize_t>i * n_bins,
               n_bins * sizeof(hist_struct))
