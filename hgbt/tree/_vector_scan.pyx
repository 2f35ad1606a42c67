"""Kernel: the split search of a vector-leaf tree's node, one feature at a time.

A candidate's gain is the sum over the outputs of the single-output gain,
``0.5 * sum_j [T(G_Lj)^2 / (H_Lj + l2) + T(G_Rj)^2 / (H_Rj + l2) - T(G_j)^2 / (H_j + l2)] - gamma``,
with every output's hessian on each side at least ``min_child_weight`` (one
hessian sum a side when the outputs share their hessians: one division a
side). One pass over a feature's value bins tries missing values right, then
left, at each bin; ties keep the lowest bin, missing values right first
(``_vector_grower`` keeps the lowest feature).
"""
from libc.string cimport memset

from ._splitting cimport soft_threshold, structure_score


cdef double output_score(double g, double h, const vector_params* p) noexcept nogil:
    # one output's T(G)^2 / (H + lambda)
    return structure_score(g, h, p.l1, p.l2)


cdef double outputs_score(const double* sums, const vector_params* p) noexcept nogil:
    # sum_j T(G_j)^2 / (H_j + lambda) of a node's sums
    cdef int j, k = p.n_outputs
    cdef double s = 0.0, g
    if p.n_hessians == 1:
        if sums[k] + p.l2 <= 0.0:
            return 0.0
        for j in range(k):
            g = soft_threshold(sums[j], p.l1) if p.l1 > 0.0 else sums[j]
            s = s + g * g
        return s / (sums[k] + p.l2)
    for j in range(k):
        s = s + output_score(sums[j], sums[k + j], p)
    return s


cdef inline void _consider(
    vsplit* best, int f, int b, unsigned char missing_left, const double* run,
    const double* miss, const double* total, double parent_score,
    const vector_params* p,
) noexcept nogil:
    # The candidate "left = run (+ miss)": kept when it beats best.
    cdef int j, k = p.n_outputs, s = p.stride
    cdef double n_left = run[s - 1], g_left, h_left, h_right, score = 0.0, gain
    cdef double sq_left = 0.0, sq_right = 0.0, g_right
    if miss != NULL:
        n_left = n_left + miss[s - 1]
    if n_left < p.min_samples_leaf or total[s - 1] - n_left < p.min_samples_leaf:
        return
    if p.n_hessians == 1:
        # one hessian sum a side: the outputs' squares over one denominator
        h_left = run[k] + (miss[k] if miss != NULL else 0.0)
        h_right = total[k] - h_left
        if h_left < p.min_child_weight or h_right < p.min_child_weight:
            return
        for j in range(k):
            g_left = run[j] + (miss[j] if miss != NULL else 0.0)
            g_right = total[j] - g_left
            if p.l1 > 0.0:
                g_left = soft_threshold(g_left, p.l1)
                g_right = soft_threshold(g_right, p.l1)
            sq_left = sq_left + g_left * g_left
            sq_right = sq_right + g_right * g_right
        if h_left + p.l2 > 0.0:
            score = sq_left / (h_left + p.l2)
        if h_right + p.l2 > 0.0:
            score = score + sq_right / (h_right + p.l2)
    else:
        score = _per_output_score(run, miss, total, p)
        if score < 0.0:
            return
    gain = 0.5 * (score - parent_score) - p.min_gain_to_split
    if gain > best.gain:
        best.gain = gain
        best.feature = f
        best.bin = b
        best.missing_left = missing_left
        best.n_left = n_left


cdef inline double _per_output_score(
    const double* run, const double* miss, const double* total, const vector_params* p,
) noexcept nogil:
    # Both sides' scores, a hessian per output; -1 when a side lacks
    # min_child_weight of some output's hessian.
    cdef int j, k = p.n_outputs
    cdef double g_left, h_left, h_right, score = 0.0
    for j in range(k):
        g_left = run[j]
        h_left = run[k + j]
        if miss != NULL:
            g_left = g_left + miss[j]
            h_left = h_left + miss[k + j]
        h_right = total[k + j] - h_left
        if h_left < p.min_child_weight or h_right < p.min_child_weight:
            return -1.0
        score = (score + output_score(g_left, h_left, p)
                 + output_score(total[j] - g_left, h_right, p))
    return score


cdef void scan_feature(
    const double* hist, int f, unsigned int n_bins_non_missing, const double* total,
    double parent_score, const vector_params* p, double* run, vsplit* best,
) noexcept nogil:
    # One pass over the value bins: at bin b, left = bins 0..b with missing
    # values right, then left; the last value bin with missing values right
    # separates present from missing values.
    cdef int s = p.stride, c
    cdef unsigned int b
    cdef const double* miss = hist + p.missing_bin * s
    cdef const double* cur
    cdef bint has_missing = miss[s - 1] > 0.0
    best.gain = 0.0
    best.feature = -1
    best.bin = 0
    best.missing_left = 0
    best.n_left = 0.0
    memset(run, 0, s * sizeof(double))
    for b in range(n_bins_non_missing):
        cur = hist + b * s
        if cur[s - 1] == 0.0 and b > 0:
            continue  # the sides of b - 1, whose candidates win ties
        for c in range(s):
            run[c] = run[c] + cur[c]
        if total[s - 1] - run[s - 1] < p.min_samples_leaf:
            break
        if b + 1 < n_bins_non_missing:
            _consider(best, f, b, 0, run, NULL, total, parent_score, p)
            if has_missing:
                _consider(best, f, b, 1, run, miss, total, parent_score, p)
        elif has_missing:
            _consider(best, f, b, 0, run, NULL, total, parent_score, p)
