"""Kernels of learning to rank: LambdaMART gradients and per-query metrics.

Every kernel works query by query (``order[starts[q]:starts[q + 1]]`` are the
rows of query ``q``, see ``core/row_meta.Queries``), queries spread over the
threads (dynamic schedule: query sizes vary). Within a query the rows are
ranked by score, highest first; equal scores keep the rows' order in the
query, so ties, and with them the gradients and the model, are the same for
any number of threads.

A pair (hi, lo) of rows with ``label[hi] > label[lo]`` contributes the
pairwise logistic loss ``log(1 + exp(-sigma (s_hi - s_lo)))`` times its
weight: ``|delta NDCG|`` of swapping the two (LambdaMART), or 1 (pairwise).
Only pairs with a row ranked above the truncation level count. With ``norm``
(LightGBM's ``lambdarank_norm``) a pair's weight is divided by ``0.01 +
|s_hi - s_lo|`` (unless the query's scores are all equal), and a query's
gradients and hessians are scaled by ``log2(1 + L) / L``, ``L`` the sum of its
pairs' |lambda|: pairs already far apart and queries with many mis-ordered
pairs do not drown the others.
"""
from cython.parallel cimport prange
from libc.float cimport DBL_MIN
from libc.math cimport exp, fabs, log2
from libc.stdlib cimport free, malloc

import numpy as np


cdef struct Ranked:
    double score
    Py_ssize_t position  # the row's position in its query: the tie-break


cdef inline double _discount(Py_ssize_t rank) noexcept nogil:
    return 1.0 / log2(2.0 + rank)


cdef inline bint _before(const Ranked* a, const Ranked* b) noexcept nogil:
    return (a.score > b.score) | ((a.score == b.score) & (a.position < b.position))


cdef Ranked* _ranked(const double* raw, const Py_ssize_t* rows, Py_ssize_t n) noexcept nogil:
    """The rows of one query sorted by score, highest first, ties by position
    (NULL if out of memory): a merge sort, runs of 16 by insertion first,
    its comparisons inlined (qsort's calls through a pointer cost more than
    the rest of a round's gradients)."""
    cdef Ranked* ranked = <Ranked*> malloc(max(n, 1) * 2 * sizeof(Ranked))
    cdef Ranked* other
    cdef Ranked* swap
    cdef Ranked item
    cdef Py_ssize_t i, j, width, lo, mid, hi, a, b, k, take
    if ranked == NULL:
        return NULL
    for i in range(n):
        ranked[i].score = raw[rows[i]]
        ranked[i].position = i
    lo = 0
    while lo < n:
        hi = min(lo + 16, n)
        for i in range(lo + 1, hi):
            item = ranked[i]
            j = i - 1
            while j >= lo and _before(&item, &ranked[j]):
                ranked[j + 1] = ranked[j]
                j -= 1
            ranked[j + 1] = item
        lo = hi
    other = ranked + n
    width = 16
    while width < n:
        lo = 0
        while lo < n:
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:  # branch-free: scores in random order
                take = _before(&ranked[b], &ranked[a])
                other[k] = ranked[b if take else a]
                b += take
                a += 1 - take
                k += 1
            while a < mid:
                other[k] = ranked[a]
                a += 1
                k += 1
            while b < hi:
                other[k] = ranked[b]
                b += 1
                k += 1
            lo = hi
        swap = ranked
        ranked = other
        other = swap
        width *= 2
    if ranked > other:  # the sorted half is the second: move it to the block's start
        for i in range(n):
            other[i] = ranked[i]
        ranked = other
    return ranked


cdef double _ideal_dcg(const double* gains, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """DCG@k of ``gains`` in their best order (sorted in place, descending)."""
    cdef Py_ssize_t i, j
    cdef double value, total = 0.0
    for i in range(1, n):  # insertion sort, descending: queries are short
        value = gains[i]
        j = i - 1
        while j >= 0 and (<double*> gains)[j] < value:
            (<double*> gains)[j + 1] = gains[j]
            j -= 1
        (<double*> gains)[j + 1] = value
    for i in range(min(n, k)):
        total += gains[i] * _discount(i)
    return total


def inverse_ideal_dcg(const double[::1] y, const Py_ssize_t[::1] order,
                      const Py_ssize_t[::1] starts, const double[::1] label_gain,
                      Py_ssize_t k, int n_threads=1):
    """Per query, 1 / (its best DCG@k), or 0 where that is 0 (no relevant row)."""
    cdef Py_ssize_t n_queries = starts.shape[0] - 1, q, i, n
    out_array = np.zeros(n_queries, dtype=np.float64)
    cdef double[::1] out = out_array
    cdef double* gains
    cdef double ideal
    for q in prange(n_queries, nogil=True, schedule="dynamic", num_threads=n_threads):
        n = starts[q + 1] - starts[q]
        gains = <double*> malloc(max(n, 1) * sizeof(double))
        if gains == NULL:
            continue  # 0: the query is left out (never on any real size)
        for i in range(n):
            gains[i] = label_gain[<Py_ssize_t> y[order[starts[q] + i]]]
        ideal = _ideal_dcg(gains, n, k)
        out[q] = 1.0 / ideal if ideal > 0 else 0.0
        free(gains)
    return out_array


cdef struct LambdaSettings:
    const double* label_gain
    Py_ssize_t n_labels
    Py_ssize_t truncation  # ranks whose pairs count (LambdaMART)
    double sigma
    bint norm
    bint pairwise


def lambda_gradients(const double[::1] raw, const double[::1] y,
                     const Py_ssize_t[::1] order, const Py_ssize_t[::1] starts,
                     const double[::1] label_gain, const double[::1] inverse_ideal,
                     const double[::1] sample_weight, float[::1] gradients,
                     float[::1] hessians, Py_ssize_t truncation, double sigma, bint norm,
                     bint pairwise, int n_threads=1):
    """Fill ``gradients`` and ``hessians`` (per row) with LambdaMART's (or,
    ``pairwise``, RankNet's) lambdas of the scores ``raw``; weighted by
    ``sample_weight`` per row (empty: unweighted). Labels are integers in
    ``[0, len(label_gain))`` (checked by the caller)."""
    cdef Py_ssize_t n_queries = starts.shape[0] - 1, q
    cdef bint weighted = sample_weight.shape[0] > 0
    if raw.shape[0] != gradients.shape[0] or raw.shape[0] != hessians.shape[0] \
            or raw.shape[0] != y.shape[0] or (weighted and sample_weight.shape[0] != y.shape[0]):
        raise ValueError("raw, y, gradients, hessians and sample_weight (if any) must have "
                         "one entry per row.")
    if inverse_ideal.shape[0] != n_queries or order.shape[0] != y.shape[0]:
        raise ValueError("inverse_ideal must have one entry per query and order one per row.")
    cdef LambdaSettings settings
    settings.label_gain = &label_gain[0]
    settings.n_labels = label_gain.shape[0]
    settings.truncation = truncation
    settings.sigma = sigma
    settings.norm = norm
    settings.pairwise = pairwise
    for q in prange(n_queries, nogil=True, schedule="dynamic", num_threads=n_threads):
        _query_lambdas(&raw[0], &y[0], &order[starts[q]], starts[q + 1] - starts[q],
                       inverse_ideal[q], &sample_weight[0] if weighted else NULL,
                       &gradients[0], &hessians[0], &settings)


cdef void _query_lambdas(const double* raw, const double* y, const Py_ssize_t* rows,
                         Py_ssize_t n, double inverse_ideal, const double* weight,
                         float* gradients, float* hessians,
                         const LambdaSettings* settings) noexcept nogil:
    # The query's rows are ranked by score, then grouped by label (ranks
    # ascending within a label): a row's partners of another label are a
    # contiguous run of a group, so pairs of equal labels are never visited
    # and the loop over a run, the same side of every pair, has no branch.
    # e = exp(sigma (score - top score)) makes a pair's probability of being
    # mis-ordered a division, rho = e_lo / (e_hi + e_lo), not an exp.
    cdef double sigma = settings.sigma
    cdef bint pairwise = settings.pairwise
    cdef Py_ssize_t i, t, v, li, first, end, top, n_labels = settings.n_labels
    cdef double side, rho, lam, gain_gap, e_i, disc_i, s_i, sum_l, sum_h
    cdef double total = 0.0, factor = 1.0
    cdef bint underflow, by_gap
    cdef Ranked* ranked = _ranked(raw, rows, n)
    # per group member t (group order): its rank, e, discount, score, sums;
    # per pair of the run being visited: its lambda and hessian
    cdef double* buffer = <double*> malloc(max(n, 1) * 7 * sizeof(double))
    cdef Py_ssize_t* index = <Py_ssize_t*> malloc((max(n, 1) * 2 + 2 * n_labels + 1)
                                                  * sizeof(Py_ssize_t))
    cdef double* e
    cdef double* disc
    cdef double* score
    cdef double* g
    cdef double* h
    cdef double* pair_l
    cdef double* pair_h
    cdef Py_ssize_t* rank_of
    cdef Py_ssize_t* member_of
    cdef Py_ssize_t* offset
    cdef Py_ssize_t* cursor
    if ranked == NULL or buffer == NULL or index == NULL or (
            not pairwise and inverse_ideal == 0.0):
        for i in range(n):  # no relevant row (or no memory): no pair to order
            gradients[rows[i]] = 0.0
            hessians[rows[i]] = 0.0
        free(ranked)
        free(buffer)
        free(index)
        return
    e, disc, score, g = buffer, buffer + n, buffer + 2 * n, buffer + 3 * n
    h, pair_l, pair_h = buffer + 4 * n, buffer + 5 * n, buffer + 6 * n
    rank_of, member_of = index, index + n
    offset, cursor = index + 2 * n, index + 2 * n + n_labels + 1
    for v in range(n_labels + 1):
        offset[v] = 0
    for i in range(n):
        offset[<Py_ssize_t> y[rows[ranked[i].position]] + 1] += 1
    for v in range(n_labels):
        offset[v + 1] += offset[v]
        cursor[v] = offset[v]
    for i in range(n):  # ranks ascending: each group in rank order
        v = <Py_ssize_t> y[rows[ranked[i].position]]
        t = cursor[v]
        cursor[v] += 1
        rank_of[t] = i
        member_of[i] = t
        score[t] = ranked[i].score
        e[t] = exp(sigma * (ranked[i].score - ranked[0].score))
        disc[t] = _discount(i)
        g[t] = 0.0
        h[t] = 0.0
    for v in range(n_labels):  # cursor: a group's first member below the rank visited
        cursor[v] = offset[v]
    # a score so far below the top one that its e is 0 or subnormal: that
    # query's pairs take the exp of their own gap
    underflow = e[member_of[n - 1]] < DBL_MIN if n else False  # subnormal: few digits
    top = n if pairwise else min(n, settings.truncation)
    by_gap = (settings.norm and not pairwise and n > 0
              and ranked[0].score != ranked[n - 1].score)
    for i in range(top):  # rank i, above the truncation level
        t = member_of[i]
        li = <Py_ssize_t> y[rows[ranked[i].position]]
        cursor[li] += 1
        e_i, disc_i, s_i = e[t], disc[t], score[t]
        for v in range(n_labels):
            first, end = cursor[v], offset[v + 1]
            if v == li or first >= end:
                continue
            side = 1.0 if li > v else -1.0  # +1: rank i is the better row
            gain_gap = 1.0 if pairwise else (
                (settings.label_gain[li] - settings.label_gain[v]) * side * inverse_ideal)
            for t in range(first, end):  # the run: no branch but the loop's
                if underflow:
                    rho = 1.0 / (1.0 + exp(side * sigma * (s_i - score[t])))
                elif side > 0:
                    rho = e[t] / (e_i + e[t])
                else:
                    rho = e_i / (e_i + e[t])
                # the pair's weight: |NDCG change| of swapping the two (1:
                # pairwise), with norm over the gap of their scores (+ 0.01)
                lam = sigma * rho * gain_gap * (1.0 if pairwise else disc_i - disc[t])
                if by_gap:
                    lam = lam / (0.01 + fabs(s_i - score[t]))
                pair_l[t] = lam
                pair_h[t] = sigma * (1.0 - rho) * lam
                g[t] += side * lam
                h[t] += pair_h[t]
            sum_l = 0.0
            sum_h = 0.0
            for t in range(first, end):
                sum_l += pair_l[t]
                sum_h += pair_h[t]
            t = member_of[i]
            g[t] -= side * sum_l
            h[t] += sum_h
            total += 2.0 * sum_l
    if settings.norm and total > 0.0:
        factor = log2(1.0 + total) / total
    for i in range(n):
        t = member_of[i]
        v = rows[ranked[i].position]
        if weight != NULL:
            g[t] *= weight[v]
            h[t] *= weight[v]
        gradients[v] = <float> (g[t] * factor)
        hessians[v] = <float> (h[t] * factor)
    free(ranked)
    free(buffer)
    free(index)


def query_metrics(const double[::1] raw, const double[::1] y, const Py_ssize_t[::1] order,
                  const Py_ssize_t[::1] starts, const double[::1] label_gain,
                  const double[::1] inverse_ideal, Py_ssize_t k, bint ndcg,
                  int n_threads=1):
    """Per query, NDCG@k (``ndcg``; ``inverse_ideal`` from
    :func:`inverse_ideal_dcg` at the same k; 1 for a query without a relevant
    row, as LightGBM counts it) or average precision @k (relevant: label > 0;
    precision at each relevant rank summed over min(k, relevant rows); 1
    without a relevant row) of the scores ``raw``."""
    cdef Py_ssize_t n_queries = starts.shape[0] - 1, q, i, n, top, hits, relevant
    out_array = np.ones(n_queries, dtype=np.float64)
    cdef double[::1] out = out_array
    cdef const Py_ssize_t* rows
    cdef Ranked* ranked
    cdef double total
    for q in prange(n_queries, nogil=True, schedule="dynamic", num_threads=n_threads):
        n = starts[q + 1] - starts[q]
        rows = &order[starts[q]]
        if ndcg and inverse_ideal[q] == 0.0:
            continue
        ranked = _ranked(&raw[0], rows, n)
        if ranked == NULL:
            continue
        top = min(n, k)
        total = 0.0
        if ndcg:
            for i in range(top):
                total = total + (label_gain[<Py_ssize_t> y[rows[ranked[i].position]]]
                                 * _discount(i))
            out[q] = total * inverse_ideal[q]
        else:
            relevant = 0
            for i in range(n):
                relevant = relevant + (y[rows[i]] > 0)
            if relevant:
                hits = 0
                for i in range(top):
                    if y[rows[ranked[i].position]] > 0:
                        hits = hits + 1
                        total = total + hits / (i + 1.0)
                out[q] = total / min(relevant, k)
        free(ranked)
    return out_array
