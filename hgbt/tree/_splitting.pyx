"""Kernel: best split of a node from its histograms.

Per feature, one running sum over value bins evaluates every threshold twice:
missing values (the missing bin) sent right, then sent left. Features are
scanned in parallel into per-feature results, then reduced in feature order,
so ties resolve to the lowest feature, lowest bin, missing-right first,
whatever the number of threads.

Categorical features (bin = category code) split on a set of categories.
With at most ``max_cat_to_onehot`` categories present in the node, each
category alone goes against the rest. Otherwise the categories with at least
``cat_smooth`` rows in the node are sorted by G / (H + cat_smooth) (ties:
lower code first); candidate left sets are the first 1, 2, ... of that
order, then the last 1, 2, ..., at most ``max_cat_threshold`` and at most
half of them from each end. Going along, a candidate is only taken once the
categories added since the previous one hold ``min_data_per_group`` rows,
and a direction stops when fewer rows than that would remain on the right.
These candidates are scored with ``l2_regularization + cat_l2`` for the
children (the node's own term keeps ``l2_regularization``), which favours
numeric and one-hot splits over fitting many small categories. Categories
with fewer rows never go left; nor do those without data in the node. Every
candidate is tried with missing values right then left, like the bins of a
numeric feature; last comes "every category left, missing right" (scored
without ``cat_l2``) when the node has missing values.
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs
from libc.string cimport memcpy, memset
import numpy as np

from ..core._types cimport hist_struct, split_info_struct, BITSET_WORD_C
from ..core._types import SPLIT_INFO_DTYPE
from ..core.params import TREE_PARAMS, resolved_default

# defaults of the split settings: the parameters' (hgbt/core/params.py)
_DEFAULT = {name: resolved_default(name) for name in TREE_PARAMS}

# Below this many features x bins the scan runs without an OpenMP region.
DEF MIN_PARALLEL_WORK = 2048
# Categorical candidates while scanning, before they become a bitset: i is
# the sorted prefix (or one-vs-rest category) i, SUFFIX + i the sorted
# suffix of i + 1 categories, ALL_LEFT every category.
DEF SUFFIX = 512
DEF ALL_LEFT = 1024
# Categories sorted by insertion before the merges of _sort_categories.
DEF SORT_RUN = 8


cdef struct cat_entry:
    double ratio
    unsigned int code


cdef double bounded_value(
    double g, double h, double l1, double l2, double lower, double upper,
) noexcept nogil:
    """Newton value -T(G)/(H+lambda) clipped into [lower, upper]."""
    cdef double v = 0.0
    if h + l2 > 0.0:
        v = -soft_threshold(g, l1) / (h + l2)
    if v < lower:
        return lower
    if v > upper:
        return upper
    return v


cdef double newton_value(
    double g, double h, double l1, double l2, double min_child_weight, double lower,
    double upper,
) noexcept nogil:
    """bounded_value, without a step (0, clipped) below ``min_child_weight`` of
    hessian: -G/H of a vanishing H (a class whose probability underflowed) is
    unbounded. Only a root can be there: a split's children never are."""
    if h < min_child_weight:
        g = 0.0
    return bounded_value(g, h, l1, l2, lower, upper)


def leaf_value(double g, double h, double l1, double l2, double lower, double upper,
               double min_child_weight=0.0):
    """The (unshrunk) leaf value the split search assumes: see newton_value."""
    return newton_value(g, h, l1, l2, min_child_weight, lower, upper)


cdef inline double _reduction(double g, double h, double v, double l1, double l2) noexcept nogil:
    # Decrease of the regularised objective G v + a|v| + (H + l) v^2 / 2 at
    # value v; at the Newton value it is T(G)^2 / (2 (H + l)).
    return -(g * v + l1 * fabs(v) + 0.5 * (h + l2) * v * v)


cdef inline double _constrained_gain(
    double g_left, double h_left, double g_right, double h_right,
    double g_total, double h_total, signed char cst, const split_params* p,
) noexcept nogil:
    # Gain with child values clipped to the node's bounds; -inf if the
    # values break the monotonic constraint of the split feature.
    cdef double l1 = p.l1_regularization, l2 = p.l2_regularization
    cdef double v_left = bounded_value(g_left, h_left, l1, l2, p.lower_bound, p.upper_bound)
    cdef double v_right = bounded_value(g_right, h_right, l1, l2, p.lower_bound,
                                        p.upper_bound)
    cdef double v_parent = bounded_value(g_total, h_total, l1, p.parent_l2,
                                         p.lower_bound, p.upper_bound)
    if (cst > 0 and v_left > v_right) or (cst < 0 and v_left < v_right):
        return -INFINITY
    return ((_reduction(g_left, h_left, v_left, l1, l2)
             + _reduction(g_right, h_right, v_right, l1, l2)
             - _reduction(g_total, h_total, v_parent, l1, p.parent_l2))
            - p.min_gain_to_split)


cdef inline void _consider(
    split_info_struct* best, int f, unsigned int b, unsigned char missing_left,
    double g_left, double h_left, unsigned int n_left,
    double g_total, double h_total, unsigned int n_total,
    const split_params* p, bint plain,
) noexcept nogil:
    # ``plain``: no L1, constraint or bounds and a positive min_child_weight
    # (a scan's common case): the gain without their tests, by the same
    # operations (each side's H + lambda >= min_child_weight > 0, so _score's
    # test is moot), so the same bits. Scans test it once per feature.
    cdef double g_right = g_total - g_left, h_right = h_total - h_left
    cdef unsigned int n_right = n_total - n_left
    cdef double gain
    cdef signed char cst
    if n_left < p.min_samples_leaf or n_right < p.min_samples_leaf:
        return
    if h_left < p.min_child_weight or h_right < p.min_child_weight:
        return
    if plain:
        gain = 0.5 * (g_left * g_left / (h_left + p.l2_regularization)
                      + g_right * g_right / (h_right + p.l2_regularization)
                      - p.parent_score) - p.min_gain_to_split
    else:
        cst = 0 if p.monotonic_cst == NULL else p.monotonic_cst[f]
        if cst == 0 and not p.bounded:
            # 0.5 [T(G_L)^2/(H_L+l) + T(G_R)^2/(H_R+l) - T(G)^2/(H+l)] - gamma,
            # the parent term computed once per node.
            gain = 0.5 * (structure_score(g_left, h_left, p.l1_regularization,
                                 p.l2_regularization)
                          + structure_score(g_right, h_right, p.l1_regularization,
                                   p.l2_regularization)
                          - p.parent_score) - p.min_gain_to_split
        else:
            gain = _constrained_gain(g_left, h_left, g_right, h_right, g_total,
                                     h_total, cst, p)
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


cdef inline void _reset(split_info_struct* best) noexcept nogil:
    # every byte, padding too, so equal results compare equal as bytes
    memset(best, 0, sizeof(split_info_struct))
    best.gain = 0.0  # only splits with positive gain are kept
    best.feature_idx = -1


cdef inline bint _before(const cat_entry* x, const cat_entry* y) noexcept nogil:
    # Increasing ratio, then increasing code: a total order, so any correct
    # sort has a single possible result.
    return x.ratio < y.ratio or (x.ratio == y.ratio and x.code < y.code)


cdef void _sort_categories(cat_entry* items, unsigned int n) noexcept nogil:
    # Insertion sort of runs of SORT_RUN, then bottom-up merges through a
    # stack buffer: inlined comparisons and no allocation, where qsort's
    # callback per comparison took most of a categorical scan (n <= 256).
    cdef cat_entry scratch[256]
    cdef cat_entry* src = items
    cdef cat_entry* dst = scratch
    cdef cat_entry* swap
    cdef cat_entry x
    cdef unsigned int width, lo, mid, hi, i, j, k
    lo = 0
    while lo < n:
        hi = min(lo + SORT_RUN, n)
        for i in range(lo + 1, hi):
            x = items[i]
            j = i
            while j > lo and _before(&x, &items[j - 1]):
                items[j] = items[j - 1]
                j -= 1
            items[j] = x
        lo = hi
    width = SORT_RUN
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(&src[j], &src[i]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo = hi
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != items:
        memcpy(items, src, n * sizeof(cat_entry))


cdef void _scan_sorted(
    const hist_struct* hist, int f, const cat_entry* used, unsigned int n_used,
    unsigned int n_cats, double g_total, double h_total, unsigned int n_total,
    const split_params* p, split_info_struct* best,
) noexcept nogil:
    # The many-vs-many candidates of the module docstring over ``used`` (the
    # sorted categories with enough rows), first from the front, then from
    # the back; a left set holding all n_cats categories is ALL_LEFT's.
    cdef const hist_struct* miss = &hist[p.missing_bin]
    cdef bint has_missing = miss.count > 0
    cdef unsigned int max_num = min(p.max_cat_threshold, (n_used + 1) // 2)
    cdef unsigned int i, code, n, group
    cdef int direction
    cdef double g, h
    cdef split_params q = p[0]
    q.l2_regularization = p.l2_regularization + p.cat_l2  # the parent's terms keep l2
    for direction in range(2):
        g = h = 0.0
        n = group = 0
        for i in range(min(max_num, n_cats - 1)):
            code = used[i if direction == 0 else n_used - 1 - i].code
            g += hist[code].sum_gradients
            h += hist[code].sum_hessians
            n += hist[code].count
            group += hist[code].count
            if n_total - n < p.min_data_per_group:
                break
            if group < p.min_data_per_group:
                continue
            group = 0
            _consider(best, f, i + direction * SUFFIX, 0, g, h, n, g_total, h_total,
                      n_total, &q, False)
            if has_missing:
                _consider(best, f, i + direction * SUFFIX, 1, g + miss.sum_gradients,
                          h + miss.sum_hessians, n + miss.count, g_total, h_total,
                          n_total, &q, False)


cdef inline void _set_bit(split_info_struct* best, unsigned int code) noexcept nogil:
    best.cat_bitset[code >> 5] |= (<BITSET_WORD_C> 1) << (code & 31)


cdef void _scan_categorical(
    const hist_struct* hist, int f, unsigned int n_bins_non_missing,
    double g_total, double h_total, unsigned int n_total,
    const split_params* p, split_info_struct* best,
) noexcept nogil:
    # cats: every category with data, by code; used: in the sorted mode,
    # those with at least cat_smooth rows, sorted by ratio.
    cdef cat_entry cats[256]
    cdef cat_entry used[256]
    cdef unsigned int n_cats = 0, n_used = 0, b, i
    cdef const hist_struct* miss = &hist[p.missing_bin]
    cdef bint has_missing = miss.count > 0
    cdef bint one_vs_rest
    cdef double g = 0.0, h = 0.0, denominator
    cdef unsigned int n = 0
    _reset(best)
    for b in range(n_bins_non_missing):
        if hist[b].count > 0:
            cats[n_cats].code = b
            denominator = hist[b].sum_hessians + p.cat_smooth
            cats[n_cats].ratio = (hist[b].sum_gradients / denominator
                                  if denominator > 0.0 else 0.0)
            if hist[b].count >= p.cat_smooth:
                used[n_used] = cats[n_cats]
                n_used += 1
            n_cats += 1
    if n_cats == 0:
        return
    one_vs_rest = n_cats <= p.max_cat_to_onehot
    if one_vs_rest:
        # a single category is no candidate (all of it would go left)
        for i in range(n_cats if n_cats > 1 else 0):
            g = hist[cats[i].code].sum_gradients
            h = hist[cats[i].code].sum_hessians
            n = hist[cats[i].code].count
            _consider(best, f, i, 0, g, h, n, g_total, h_total, n_total, p, False)
            if has_missing:
                _consider(best, f, i, 1, g + miss.sum_gradients, h + miss.sum_hessians,
                          n + miss.count, g_total, h_total, n_total, p, False)
    else:
        _sort_categories(used, n_used)
        _scan_sorted(hist, f, used, n_used, n_cats, g_total, h_total, n_total, p, best)
    if has_missing:  # every category left, missing right
        g = h = 0.0
        n = 0
        for i in range(n_cats):
            g += hist[cats[i].code].sum_gradients
            h += hist[cats[i].code].sum_hessians
            n += hist[cats[i].code].count
        _consider(best, f, ALL_LEFT, 0, g, h, n, g_total, h_total, n_total, p, False)
    if best.feature_idx < 0:
        return
    # Candidate index -> set of codes.
    i = best.bin_idx
    if i == ALL_LEFT:
        for b in range(n_cats):
            _set_bit(best, cats[b].code)
    elif one_vs_rest:
        _set_bit(best, cats[i].code)
    elif i >= SUFFIX:
        for b in range(i - SUFFIX + 1):
            _set_bit(best, used[n_used - 1 - b].code)
    else:
        for b in range(i + 1):
            _set_bit(best, used[b].code)
    best.bin_idx = 0
    best.is_categorical = 1


cdef inline void _scan_one(
    const hist_struct* hist, int f, unsigned int n_bins_non_missing,
    double g_total, double h_total, unsigned int n_total, bint categorical,
    const split_params* p, split_info_struct* best,
) noexcept nogil:
    if categorical:
        _scan_categorical(hist, f, n_bins_non_missing, g_total, h_total, n_total,
                          p, best)
    else:
        _scan_feature(hist, f, n_bins_non_missing, g_total, h_total, n_total, p, best)


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
    cdef bint plain = (p.l1_regularization == 0.0 and p.min_child_weight > 0.0
                       and not p.bounded
                       and (p.monotonic_cst == NULL or p.monotonic_cst[f] == 0))
    _reset(best)
    # One pass; at each bin b, left = value bins 0..b with missing values sent
    # right, then the same plus the missing bin (missing left), so ties keep
    # the documented order. b = last value bin with missing right separates
    # present from missing values: a candidate only if some are missing.
    for b in range(n_bins_non_missing):
        if hist[b].count == 0 and b > 0:
            # the same sides as at b - 1, whose candidates came first and
            # win ties: skipping changes nothing (most bins of a small node)
            continue
        g += hist[b].sum_gradients
        h += hist[b].sum_hessians
        n += hist[b].count
        if n_total - n < p.min_samples_leaf:
            # every candidate from here leaves fewer rows on the right
            break
        if b + 1 < n_bins_non_missing:
            _consider(best, f, b, 0, g, h, n, g_total, h_total, n_total, p, plain)
            if has_missing:
                _consider(best, f, b, 1, g + miss.sum_gradients,
                          h + miss.sum_hessians, n + miss.count,
                          g_total, h_total, n_total, p, plain)
        elif has_missing:
            _consider(best, f, b, 0, g, h, n, g_total, h_total, n_total, p, plain)


cdef inline void _copy_bin(hist_struct* dst, const hist_struct* src) noexcept nogil:
    dst.sum_gradients = src.sum_gradients
    dst.sum_hessians = src.sum_hessians
    dst.count = src.count


cdef void _scan_bundled(
    const hist_struct* codes, int n_codes, int default_bin, int f,
    unsigned int n_bins_non_missing, double g_total, double h_total,
    unsigned int n_total, const split_params* p, split_info_struct* best,
) noexcept nogil:
    # ``codes``: the feature's run of its column's bins. The feature's
    # histogram is rebuilt from it; its default bin is the node total minus
    # the others (exact on the gradient grid).
    cdef hist_struct hist[256]
    cdef unsigned int b, n = 0
    cdef int j
    cdef double g = 0.0, h = 0.0
    for j in range(n_codes):
        n += codes[j].count
    if n < p.min_samples_leaf:
        # One side of any split holds only rows off the default bin: too few
        # (typically a rare one-hot column absent from the node).
        best.feature_idx = -1
        return
    for j in range(n_codes):
        g += codes[j].sum_gradients
        h += codes[j].sum_hessians
    j = 0
    for b in range(n_bins_non_missing):
        if <int>b == default_bin:
            hist[b].sum_gradients = g_total - g
            hist[b].sum_hessians = h_total - h
            hist[b].count = n_total - n
        else:
            _copy_bin(&hist[b], &codes[j])
            j += 1
    if j < n_codes:
        _copy_bin(&hist[p.missing_bin], &codes[j])
    else:
        hist[p.missing_bin].sum_gradients = 0.0
        hist[p.missing_bin].sum_hessians = 0.0
        hist[p.missing_bin].count = 0
    _scan_feature(hist, f, n_bins_non_missing, g_total, h_total, n_total, p, best)


cdef inline void _scan_in_layout(
    const hist_struct* histograms, Py_ssize_t stride, const layout_params* lay, int f,
    unsigned int n_bins_non_missing, double g_total, double h_total,
    unsigned int n_total, bint categorical, const split_params* p,
    split_info_struct* best,
) noexcept nogil:
    # ``histograms``: one row of ``stride`` bins per column
    cdef int col = f, offset = -1
    if lay.feature_column != NULL:
        col = lay.feature_column[f]
        offset = lay.bundle_offset[f]
    if offset >= 0:  # never categorical
        _scan_bundled(histograms + col * stride + offset, lay.bundle_n_codes[f],
                      lay.default_bin[f], f, n_bins_non_missing, g_total, h_total,
                      n_total, p, best)
    else:
        _scan_one(histograms + col * stride, f, n_bins_non_missing, g_total, h_total,
                  n_total, categorical, p, best)


cdef unsigned int _missing_count(
    const hist_struct* histograms, Py_ssize_t stride, const layout_params* lay, int f,
    int missing_bin, unsigned int n_bins_non_missing,
) noexcept nogil:
    cdef int offset, n_codes
    if lay.feature_column == NULL:
        return histograms[f * stride + missing_bin].count
    offset = lay.bundle_offset[f]
    if offset < 0:
        return histograms[lay.feature_column[f] * stride + missing_bin].count
    n_codes = lay.bundle_n_codes[f]
    if n_codes < <int>n_bins_non_missing:  # no missing code
        return 0
    return histograms[lay.feature_column[f] * stride + offset + n_codes - 1].count


cdef inline void _scan_allowed(
    const hist_struct* histograms, Py_ssize_t stride, const layout_params* lay, int f,
    const unsigned int* n_bins_non_missing, double sum_gradients, double sum_hessians,
    unsigned int n_samples, const unsigned char* feature_mask,
    const unsigned char* categorical, const split_params* p,
    split_info_struct* per_feature,
) noexcept nogil:
    # feature f's best split into per_feature[f] (none if the mask forbids f)
    if feature_mask != NULL and not feature_mask[f]:
        per_feature[f].feature_idx = -1
        return
    _scan_in_layout(histograms, stride, lay, f, n_bins_non_missing[f], sum_gradients,
                    sum_hessians, n_samples, categorical != NULL and categorical[f], p,
                    &per_feature[f])


cdef void set_split_params(
    split_params* p, double l1_regularization, double l2_regularization,
    double min_gain_to_split, double min_child_weight, unsigned int min_samples_leaf,
    int missing_bin, unsigned int max_cat_to_onehot, double cat_smooth, double cat_l2,
    unsigned int min_data_per_group, unsigned int max_cat_threshold, double lower_bound,
    double upper_bound,
) noexcept nogil:
    """The settings of find_split (monotonic_cst aside), and a node's bounds."""
    p.l1_regularization = l1_regularization
    p.l2_regularization = l2_regularization
    p.min_gain_to_split = min_gain_to_split
    p.min_child_weight = min_child_weight
    p.min_samples_leaf = min_samples_leaf
    p.missing_bin = missing_bin
    p.max_cat_to_onehot = max_cat_to_onehot
    p.cat_smooth = cat_smooth
    p.cat_l2 = cat_l2
    p.min_data_per_group = min_data_per_group
    p.max_cat_threshold = max_cat_threshold
    p.bounded = lower_bound > -INFINITY or upper_bound < INFINITY
    p.lower_bound = lower_bound
    p.upper_bound = upper_bound


cdef void find_split(
    const hist_struct* histograms, Py_ssize_t stride, int n_features,
    const int* features, int n_scan,
    const unsigned int* n_bins_non_missing, double sum_gradients, double sum_hessians,
    unsigned int n_samples, const unsigned char* feature_mask,
    const unsigned char* categorical, const layout_params* lay, split_params* p,
    split_info_struct* per_feature, split_info_struct* best, int n_threads,
) noexcept nogil:
    """The best split of a node (see SplitSettings.find) into ``best``.

    ``histograms``: a row of ``stride`` bins per column; ``features``: the
    ``n_scan`` features to scan, ascending (NULL: all ``n_features``; see
    live_features); ``feature_mask`` and ``categorical``: NULL for all /
    none; ``per_feature``: scratch of n_features results. Sets ``p``'s node
    terms (parent score and lambda).
    """
    cdef int i, f, chunk
    if features == NULL:
        n_scan = n_features
    p.parent_l2 = p.l2_regularization
    p.parent_score = structure_score(sum_gradients, sum_hessians, p.l1_regularization,
                            p.l2_regularization)
    if n_scan * stride < MIN_PARALLEL_WORK or n_threads == 1:
        for i in range(n_scan):
            _scan_allowed(histograms, stride, lay, i if features == NULL else features[i],
                          n_bins_non_missing, sum_gradients, sum_hessians, n_samples,
                          feature_mask, categorical, p, per_feature)
    else:
        # dynamic: the costs per feature differ (a categorical scan sorts,
        # masked features cost nothing), and each result has its own slot;
        # in chunks of up to 16 features, else threads queue for one cheap
        # feature at a time (1,502 features: 2 threads were slower than 1)
        chunk = max(1, min(16, n_scan // (4 * n_threads)))
        for i in prange(n_scan, schedule='dynamic', chunksize=chunk,
                        num_threads=n_threads):
            _scan_allowed(histograms, stride, lay, i if features == NULL else features[i],
                          n_bins_non_missing, sum_gradients, sum_hessians, n_samples,
                          feature_mask, categorical, p, per_feature)
    memset(best, 0, sizeof(split_info_struct))
    best.gain = 0.0
    best.feature_idx = -1
    for i in range(n_scan):  # ascending: the lowest feature wins a tie
        f = i if features == NULL else features[i]
        if per_feature[f].feature_idx >= 0 and per_feature[f].gain > best.gain:
            best[0] = per_feature[f]
    if (best.feature_idx >= 0
            and _missing_count(histograms, stride, lay, best.feature_idx,
                               p.missing_bin,
                               n_bins_non_missing[best.feature_idx]) == 0):
        best.missing_go_to_left = best.n_samples_left >= best.n_samples_right


cdef int live_features(
    const hist_struct* histograms, Py_ssize_t stride, const layout_params* lay,
    const int* candidates, int n_candidates, unsigned int n_samples,
    unsigned int min_samples_leaf, int* out,
) noexcept nogil:
    """The candidates (NULL: features 0 .. n_candidates - 1) with at least
    ``min_samples_leaf`` of the node's rows off their default bin, in order,
    into ``out``; returns their count. ``lay`` must have a default bin per
    feature (a bundled or sparse layout).

    Every split, numeric or categorical, leaves the default bin on one side,
    so the other side holds only such rows; and a child has no more of them
    than its parent. A feature dropped here can split no node below this one
    (in a wide, mostly-zero table, most features in most nodes).
    """
    cdef int i, f, j, n_live = 0
    cdef unsigned int n_off
    cdef const hist_struct* column
    for i in range(n_candidates):
        f = i if candidates == NULL else candidates[i]
        column = histograms + lay.feature_column[f] * stride
        if lay.bundle_offset[f] >= 0:
            n_off = 0
            for j in range(lay.bundle_n_codes[f]):
                n_off += column[lay.bundle_offset[f] + j].count
        else:
            n_off = n_samples - column[lay.default_bin[f]].count
        if n_off >= min_samples_leaf:
            out[n_live] = f
            n_live += 1
    return n_live


cdef class SplitSettings:
    """Everything the split search of a fit needs besides a node's histograms,
    totals, feature mask and bounds: built once per fit, not per node
    (:meth:`find` searches one node).

    Parameters
    ----------
    n_bins_non_missing : ndarray of shape (n_features,), uint32
    missing_bin : int
        Index of the missing-value bin in each histogram.
    l1_regularization, l2_regularization, min_gain_to_split, min_child_weight,
    min_samples_leaf :
        Regularisation and constraints (see the estimators; defaults: the
        parameters', ``hgbt/core/params.py``).
    is_categorical : ndarray of uint8, shape (n_features,), or None
        Non-zero for categorical features (bin = category code), whose
        splits send a set of categories left (see the module docstring).
    max_cat_to_onehot : int
        Up to this many categories with data in the node, one category
        against the rest; above, a scan of the sorted categories.
    cat_smooth : float
        Added to the hessian sum of a category when ordering categories;
        categories with fewer rows in the node do not take part in the
        sorted scan.
    cat_l2, min_data_per_group, max_cat_threshold :
        Regularisation of the sorted scan (see the module docstring).
    monotonic_cst : ndarray of int8, shape (n_features,), or None
        -1 / 0 / 1 per feature: a split on a constrained feature is kept only
        if its (bounded) child values are in that order.
    feature_column, bundle_offset, bundle_n_codes, default_bin : ndarray or None
        The feature layout (:class:`hgbt.data.bundling.FeatureLayout`): then
        histograms have one row per column and a bundled feature's bins
        are unpacked from its column. None: one histogram row per feature.
    n_columns : int or None
        Histogram rows with a feature layout (default: the largest
        ``feature_column`` + 1).
    """

    def __init__(self, n_bins_non_missing, int missing_bin, *,
                 double l1_regularization=_DEFAULT["l1_regularization"],
                 double l2_regularization=_DEFAULT["l2_regularization"],
                 double min_gain_to_split=_DEFAULT["min_gain_to_split"],
                 double min_child_weight=_DEFAULT["min_child_weight"],
                 unsigned int min_samples_leaf=_DEFAULT["min_samples_leaf"],
                 is_categorical=None,
                 unsigned int max_cat_to_onehot=_DEFAULT["max_cat_to_onehot"],
                 double cat_smooth=_DEFAULT["cat_smooth"],
                 double cat_l2=_DEFAULT["cat_l2"],
                 unsigned int min_data_per_group=_DEFAULT["min_data_per_group"],
                 unsigned int max_cat_threshold=_DEFAULT["max_cat_threshold"],
                 monotonic_cst=None,
                 feature_column=None, bundle_offset=None, bundle_n_codes=None,
                 default_bin=None, n_columns=None):
        cdef const unsigned int[::1] n_bins = np.ascontiguousarray(n_bins_non_missing,
                                                                   dtype=np.uint32)
        cdef int n_features = n_bins.shape[0]
        cdef const int[::1] lay_column, lay_offset, lay_n_codes
        cdef const unsigned char[::1] lay_default, categorical
        cdef const signed char[::1] monotonic
        self.n_features = n_features
        self.missing_bin = missing_bin
        self.n_columns = n_features
        self.max_code_end = 0
        self._arrays = [n_bins]
        self.n_bins_non_missing = &n_bins[0] if n_features else NULL
        self.layout.feature_column = NULL
        if feature_column is not None:
            lay_column = np.ascontiguousarray(feature_column, dtype=np.int32)
            lay_offset = np.ascontiguousarray(bundle_offset, dtype=np.int32)
            lay_n_codes = np.ascontiguousarray(bundle_n_codes, dtype=np.int32)
            lay_default = np.ascontiguousarray(default_bin, dtype=np.uint8)
            if (lay_column.shape[0] != n_features or lay_offset.shape[0] != n_features
                    or lay_n_codes.shape[0] != n_features
                    or lay_default.shape[0] != n_features):
                raise ValueError("The feature layout needs one entry per feature.")
            self._arrays += [lay_column, lay_offset, lay_n_codes, lay_default]
            if n_features:
                self.n_columns = int(np.max(lay_column)) + 1
                self.max_code_end = int(np.max(np.asarray(lay_offset)
                                               + np.asarray(lay_n_codes)))
                self.layout.feature_column = &lay_column[0]
                self.layout.bundle_offset = &lay_offset[0]
                self.layout.bundle_n_codes = &lay_n_codes[0]
                self.layout.default_bin = &lay_default[0]
            if n_columns is not None:
                if n_columns < self.n_columns:
                    raise ValueError("The feature layout points outside the histograms.")
                self.n_columns = n_columns
        self.categorical = NULL
        if is_categorical is not None:
            categorical = np.ascontiguousarray(is_categorical, dtype=np.uint8)
            if categorical.shape[0] != n_features:
                raise ValueError(f"is_categorical has {categorical.shape[0]} entries, "
                                 f"expected {n_features}.")
            self._arrays.append(categorical)
            if n_features and np.any(categorical):
                self.categorical = &categorical[0]
        self.params.monotonic_cst = NULL
        if monotonic_cst is not None:
            monotonic = np.ascontiguousarray(monotonic_cst, dtype=np.int8)
            if monotonic.shape[0] != n_features:
                raise ValueError(f"monotonic_cst has {monotonic.shape[0]} entries, "
                                 f"expected {n_features}.")
            self._arrays.append(monotonic)
            self.params.monotonic_cst = &monotonic[0]
        set_split_params(&self.params, l1_regularization, l2_regularization,
                         min_gain_to_split, min_child_weight, min_samples_leaf,
                         missing_bin, max_cat_to_onehot, cat_smooth, cat_l2,
                         min_data_per_group, max_cat_threshold, -INFINITY, INFINITY)

    def find(self, const hist_struct[:, ::1] histograms, double sum_gradients,
             double sum_hessians, unsigned int n_samples,
             const unsigned char[::1] feature_mask, double lower_bound=-INFINITY,
             double upper_bound=INFINITY, int n_threads=1, per_feature=None):
        """The best split of one node.

        Parameters
        ----------
        histograms : ndarray of shape (n_features or n_columns, n_bins), HISTOGRAM_DTYPE
        sum_gradients, sum_hessians, n_samples : the node's totals
        feature_mask : ndarray of uint8, shape (n_features,) or (0,)
            Features with a zero entry are not considered (column sampling,
            interaction constraints); an empty mask allows every feature.
        lower_bound, upper_bound : float
            Bounds of the node's child values (monotonic constraints above
            it). With bounds or a constrained feature, child values are
            clipped into them and the gain is the objective decrease at the
            clipped values.
        n_threads : int
        per_feature : ndarray of SPLIT_INFO_DTYPE or None
            Scratch for the per-feature results (at least n_features
            entries), reused across calls to save an allocation per node.

        Returns
        -------
        split : ndarray of shape (), SPLIT_INFO_DTYPE
            ``feature_idx == -1`` when no split has positive gain. Missing
            values go to the child with more rows when the node has none.
            For a categorical split ``is_categorical`` is 1, ``cat_bitset``
            holds the codes sent left and ``bin_idx`` is 0.
        """
        cdef int n_features = self.n_features
        cdef split_params p = self.params
        if self.layout.feature_column != NULL:
            if histograms.shape[0] < self.n_columns or self.max_code_end > histograms.shape[1]:
                raise ValueError("The feature layout points outside the histograms.")
        elif histograms.shape[0] != n_features:
            raise ValueError(f"histograms has {histograms.shape[0]} rows for {n_features} "
                             "features.")
        if feature_mask.shape[0] not in (0, n_features):
            raise ValueError(f"feature_mask has {feature_mask.shape[0]} entries, expected "
                             f"{n_features} (or none).")
        p.bounded = lower_bound > -INFINITY or upper_bound < INFINITY
        p.lower_bound = lower_bound
        p.upper_bound = upper_bound
        if per_feature is None or per_feature.shape[0] < n_features:
            per_feature = np.empty(max(n_features, 1), dtype=SPLIT_INFO_DTYPE)
        cdef split_info_struct[::1] res = per_feature
        best_arr = np.zeros((), dtype=SPLIT_INFO_DTYPE)
        cdef split_info_struct* best = <split_info_struct*> (
            <char*> <size_t> best_arr.ctypes.data)
        with nogil:
            find_split(&histograms[0, 0] if histograms.shape[0] > 0 else NULL,
                       histograms.shape[1], n_features, NULL, 0, self.n_bins_non_missing,
                       sum_gradients, sum_hessians, n_samples,
                       &feature_mask[0] if feature_mask.shape[0] > 0 else NULL,
                       self.categorical, &self.layout, &p, &res[0], best, n_threads)
        return best_arr
