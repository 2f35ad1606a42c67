"""Kernel: best split of a node from its histograms.

Per feature, one running sum over value bins evaluates every threshold twice:
missing values (the missing bin) sent right, then sent left. Features are
scanned in parallel into per-feature results, then reduced in feature order,
so ties resolve to the lowest feature, lowest bin, missing-right first,
whatever the number of threads.
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY
import numpy as np

from ._types cimport hist_struct, split_info_struct
from ._types import SPLIT_INFO_DTYPE

# Below this many features x bins the scan runs without an OpenMP region.
DEF MIN_PARALLEL_WORK = 8192


cdef struct split_params:
    double l1_regularization
    double l2_regularization
    double min_gain_to_split
    double min_child_weight
    unsigned int min_samples_leaf
    int missing_bin


cdef inline double soft_threshold(double g, double l1) noexcept nogil:
    """sign(G) max(|G| - alpha, 0): the L1 penalty's effect on a gradient sum."""
    if g > l1:
        return g - l1
    if g < -l1:
        return g + l1
    return 0.0


cdef inline double _score(double g, double h, double l1, double l2) noexcept nogil:
    # Structure score T(G)^2 / (H + lambda); an empty or weightless side scores 0.
    if h + l2 <= 0.0:
        return 0.0
    g = soft_threshold(g, l1)
    return g * g / (h + l2)


cdef inline double split_gain(
    double g_left, double h_left, double g_right, double h_right,
    double g_parent, double h_parent, double l1, double l2, double gamma,
) noexcept nogil:
    """0.5 [T(G_L)^2/(H_L+l) + T(G_R)^2/(H_R+l) - T(G_P)^2/(H_P+l)] - gamma."""
    return 0.5 * (_score(g_left, h_left, l1, l2) + _score(g_right, h_right, l1, l2)
                  - _score(g_parent, h_parent, l1, l2)) - gamma


cdef inline void _consider(
    split_info_struct* best, int f, unsigned int b, unsigned char missing_left,
    double g_left, double h_left, unsigned int n_left,
    double g_total, double h_total, unsigned int n_total,
    const split_params* p,
) noexcept nogil:
    cdef double g_right = g_total - g_left, h_right = h_total - h_left
    cdef unsigned int n_right = n_total - n_left
    cdef double gain
    if n_left < p.min_samples_leaf or n_right < p.min_samples_leaf:
        return
    if h_left < p.min_child_weight or h_right < p.min_child_weight:
        return
    gain = split_gain(g_left, h_left, g_right, h_right, g_total, h_total,
                      p.l1_regularization, p.l2_regularization, p.min_gain_to_split)
    if gain > best.gain:
        best.gain = gain
        best.feature_idx = f
        best.bin_idx = b
        best.missing_go_to_left = missing_left
        best.sum_gradients_left = g_left
        best.sum_hessians_left = h_left
        best.n_samples_left = n_left
        best.sum_gradients_right = g_right
        best.sum_hessians_right = h_right
        best.n_samples_right = n_right


cdef void _scan_feature(
    const hist_struct* hist, int f, unsigned int n_bins_non_missing,
    double g_total, double h_total, unsigned int n_total,
    const split_params* p, split_info_struct* best,
) noexcept nogil:
    cdef unsigned int b
    cdef double g = 0.0, h = 0.0
    cdef unsigned int n = 0
    cdef const hist_struct* miss = &hist[p.missing_bin]
    cdef bint has_missing = miss.count > 0
    best.gain = 0.0  # only splits with positive gain are kept
    best.feature_idx = -1
    # One pass; at each bin b, left = value bins 0..b with missing values sent
    # right, then the same plus the missing bin (missing left), so ties keep
    # the documented order. b = last value bin with missing right separates
    # present from missing values: a candidate only if some are missing.
    for b in range(n_bins_non_missing):
        g += hist[b].sum_gradients
        h += hist[b].sum_hessians
        n += hist[b].count
        if b + 1 < n_bins_non_missing:
            _consider(best, f, b, 0, g, h, n, g_total, h_total, n_total, p)
            if has_missing:
                _consider(best, f, b, 1, g + miss.sum_gradients,
                          h + miss.sum_hessians, n + miss.count,
                          g_total, h_total, n_total, p)
        elif has_missing:
            _consider(best, f, b, 0, g, h, n, g_total, h_total, n_total, p)


def find_node_split(
    const hist_struct[:, ::1] histograms,
    const unsigned int[::1] n_bins_non_missing,
    double sum_gradients,
    double sum_hessians,
    unsigned int n_samples,
    double l1_regularization,
    double l2_regularization,
    double min_gain_to_split,
    double min_child_weight,
    unsigned int min_samples_leaf,
    int missing_bin,
    const unsigned char[::1] feature_mask,
    int n_threads,
):
    """Best split of a node over all features.

    Parameters
    ----------
    histograms : ndarray of shape (n_features, n_bins), HISTOGRAM_DTYPE
    n_bins_non_missing : ndarray of shape (n_features,), uint32
    sum_gradients, sum_hessians, n_samples : node totals
    l1_regularization, l2_regularization, min_gain_to_split, min_child_weight,
    min_samples_leaf :
        Regularisation and constraints (see the estimators).
    missing_bin : int
        Index of the missing-value bin in each histogram.
    feature_mask : ndarray of uint8, shape (n_features,) or (0,)
        Features with a zero entry are not considered (column sampling,
        interaction constraints); an empty mask allows every feature.
    n_threads : int

    Returns
    -------
    split : ndarray of shape (), SPLIT_INFO_DTYPE
        ``feature_idx == -1`` when no split has positive gain. Missing
        values go to the child with more rows when the node has none.
    """
    cdef int n_features = histograms.shape[0], f
    cdef bint masked = feature_mask.shape[0] > 0
    cdef split_params p
    p.l1_regularization = l1_regularization
    p.l2_regularization = l2_regularization
    p.min_gain_to_split = min_gain_to_split
    p.min_child_weight = min_child_weight
    p.min_samples_leaf = min_samples_leaf
    p.missing_bin = missing_bin
    per_feature = np.empty(n_features, dtype=SPLIT_INFO_DTYPE)
    cdef split_info_struct[::1] res = per_feature
    best_arr = np.zeros((), dtype=SPLIT_INFO_DTYPE)
    cdef split_info_struct* best = <split_info_struct*> (
        <char*> <size_t> best_arr.ctypes.data)
    with nogil:
        if n_features * histograms.shape[1] < MIN_PARALLEL_WORK or n_threads == 1:
            for f in range(n_features):
                if masked and not feature_mask[f]:
                    res[f].feature_idx = -1
                    continue
                _scan_feature(&histograms[f, 0], f, n_bins_non_missing[f],
                              sum_gradients, sum_hessians, n_samples, &p, &res[f])
        else:
            for f in prange(n_features, schedule='static', num_threads=n_threads):
                if masked and not feature_mask[f]:
                    res[f].feature_idx = -1
                    continue
                _scan_feature(&histograms[f, 0], f, n_bins_non_missing[f],
                              sum_gradients, sum_hessians, n_samples, &p, &res[f])
        best.gain = 0.0
        best.feature_idx = -1
        for f in range(n_features):
            if res[f].feature_idx >= 0 and res[f].gain > best.gain:
                best[0] = res[f]
        if best.feature_idx >= 0 and histograms[best.feature_idx, missing_bin].count == 0:
            best.missing_go_to_left = best.n_samples_left >= best.n_samples_right
    return best_arr
