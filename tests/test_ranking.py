"""Learning-to-rank kernels against brute-force NumPy references."""
import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from hgbt.core.row_meta import Queries, RowMeta
from hgbt.engine.ranking import (DEFAULT_LABEL_GAIN, LambdaRankLoss, mean_query_score,
                                 query_scores)


def _problem(seed, n_queries=12, max_size=15, max_label=4, ties=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_queries)
    qid = np.repeat(rng.permutation(n_queries) * 7 + 3, sizes)  # ids not 0..n-1
    n = qid.size
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    raw = np.round(rng.normal(size=n), 1 if ties else 12)
    order = rng.permutation(n)  # a query's rows scattered among the others
    return qid[order], y[order], raw[order], rng.uniform(0.2, 2.0, n)


def _ranks(scores):
    """Positions by score, highest first; ties by the rows' order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def _brute_lambdas(qid, y, raw, w, trunc, sigma, norm, pairwise, gain):
    g, h = np.zeros(y.size), np.zeros(y.size)
    disc = lambda r: 1.0 / np.log2(2.0 + r)  # noqa: E731
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        ideal = sum(gain[int(v)] * disc(r) for r, v in
                    enumerate(sorted(y[rows], reverse=True)[:trunc]))
        if not pairwise and ideal == 0:
            continue
        ranked = _ranks(raw[rows])
        gq, hq, total = np.zeros(rows.size), np.zeros(rows.size), 0.0
        for i in range(rows.size):
            for j in range(i + 1, rows.size):
                if not pairwise and i >= trunc:
                    continue
                a, b = ranked[i], ranked[j]
                if y[rows[a]] == y[rows[b]]:
                    continue
                hi, lo = (a, b) if y[rows[a]] > y[rows[b]] else (b, a)
                delta = 1.0 if pairwise else (
                    (gain[int(y[rows[hi]])] - gain[int(y[rows[lo]])])
                    * (disc(i) - disc(j)) / ideal)
                spread = raw[rows].max() != raw[rows].min()
                if norm and not pairwise and spread:
                    delta /= 0.01 + abs(raw[rows[hi]] - raw[rows[lo]])
                rho = 1 / (1 + np.exp(sigma * (raw[rows[hi]] - raw[rows[lo]])))
                gq[hi] -= sigma * rho * delta
                gq[lo] += sigma * rho * delta
                hq[[hi, lo]] += sigma ** 2 * rho * (1 - rho) * delta
                total += 2 * sigma * rho * delta
        factor = np.log2(1 + total) / total if norm and total > 0 else 1.0
        g[rows], h[rows] = gq * w[rows] * factor, hq * w[rows] * factor
    return g, h


def _kernel(loss, y, raw, n_threads=1):
    g = np.empty((1, y.size), dtype=np.float32)
    h = np.empty_like(g)
    loss.gradients(y, raw[None, :], g, h, n_threads)
    return g[0], h[0]


@pytest.mark.parametrize("pairwise", [False, True])
@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("trunc", [3, 30])
@pytest.mark.parametrize("ties", [False, True])
def test_lambdas_match_brute_force(pairwise, norm, trunc, ties):
    qid, y, raw, w = _problem(1 + trunc + 2 * norm + 4 * pairwise, ties=ties)
    gain = np.asarray(DEFAULT_LABEL_GAIN)
    loss = LambdaRankLoss(RowMeta(w, qid=qid), trunc, None, 1.5, norm, pairwise)
    g, h = _kernel(loss, y, raw)
    g_ref, h_ref = _brute_lambdas(qid, y, raw, w, trunc, 1.5, norm, pairwise, gain)
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-7)
    assert np.any(g != 0)


def test_pairwise_lambdas_are_the_derivatives_of_ranknet():
    # without norm, the pairwise gradients are those of the summed pairwise
    # logistic loss, its hessians the diagonal of its second derivatives
    qid, y, raw, w = _problem(5, n_queries=4, max_size=6)
    sigma = 0.7

    def ranknet(s):
        total = 0.0
        for q in np.unique(qid):
            rows = np.flatnonzero(qid == q)
            for a in rows:
                for b in rows:
                    if y[a] > y[b]:
                        total += np.log1p(np.exp(-sigma * (s[a] - s[b])))
        return total

    loss = LambdaRankLoss(RowMeta(qid=qid), sigmoid=sigma, norm=False, pairwise=True)
    g, h = _kernel(loss, y, raw)
    eps = 1e-5
    for i in range(y.size):
        e = np.zeros(y.size)
        e[i] = eps
        fd = (ranknet(raw + e) - ranknet(raw - e)) / (2 * eps)
        fd2 = (ranknet(raw + e) - 2 * ranknet(raw) + ranknet(raw - e)) / eps ** 2
        assert g[i] == pytest.approx(fd, rel=1e-4, abs=1e-6)
        assert h[i] == pytest.approx(fd2, rel=1e-3, abs=1e-4)


def test_lambdas_do_not_depend_on_threads_or_row_order():
    qid, y, raw, w = _problem(7, n_queries=60, max_size=40, ties=True)
    loss = LambdaRankLoss(RowMeta(w, qid=qid))
    one = _kernel(loss, y, raw, 1)
    for threads in (2, 4):
        for a, b in zip(one, _kernel(loss, y, raw, threads)):
            np.testing.assert_array_equal(a, b)
    # rows of each query kept in their order, the queries interleaved otherwise
    order = np.argsort(qid, kind="stable")
    moved = LambdaRankLoss(RowMeta(w[order], qid=qid[order]))
    for a, b in zip(one, _kernel(moved, y[order], raw[order])):
        np.testing.assert_array_equal(a[order], b)


def test_a_query_without_relevant_rows_gets_no_lambdas():
    qid = np.array([0, 0, 0, 1, 1])
    y = np.array([0.0, 0, 0, 2, 0])
    g, h = _kernel(LambdaRankLoss(RowMeta(qid=qid)), y, np.zeros(5))
    assert np.all(g[:3] == 0) and np.all(h[:3] == 0)
    assert g[3] < 0 < g[4]  # the relevant row is pushed up


@pytest.mark.parametrize("k", [None, 1, 3, 10])
def test_ndcg_matches_scikit_learn(k):
    # linear gains and no tied scores: scikit-learn's ndcg_score per query
    qid, y, raw, _ = _problem(11, n_queries=20, max_size=12)
    gains = np.arange(5.0)
    queries = Queries(qid)
    ours = query_scores("ndcg", k, y, raw, queries, gains)
    for q, rows in enumerate(np.split(queries.order, queries.starts[1:-1])):
        if rows.size < 2 or not np.any(y[rows] > 0):
            assert ours[q] == 1.0 or rows.size < 2
            continue
        expected = ndcg_score(y[rows][None, :], raw[rows][None, :], k=k)
        assert ours[q] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("k", [None, 2, 5])
def test_map_matches_brute_force(k):
    qid, y, raw, w = _problem(13, n_queries=25, max_size=10, max_label=2, ties=True)
    queries = Queries(qid)
    ours = query_scores("map", k, y, raw, queries)
    expected = []
    for rows in np.split(queries.order, queries.starts[1:-1]):
        rel = y[rows] > 0
        if not rel.any():
            expected.append(1.0)
            continue
        ranked = _ranks(raw[rows])
        top = ranked if k is None else ranked[:k]
        hits, total = 0, 0.0
        for r, i in enumerate(top):
            if rel[i]:
                hits += 1
                total += hits / (r + 1)
        expected.append(total / min(rel.sum(), k or rel.size))
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    weight = np.array([w[rows].mean() for rows in np.split(queries.order,
                                                            queries.starts[1:-1])])
    assert mean_query_score("map", k, y, raw, queries, w) == pytest.approx(
        np.average(expected, weights=weight), rel=1e-12)


def test_relevance_labels_are_checked():
    loss = LambdaRankLoss(RowMeta(qid=np.zeros(3)), label_gain=[0, 1, 3])
    with pytest.raises(ValueError, match="integers 0..2"):
        loss.check_y(np.array([0.0, 1.5, 2.0]))
    with pytest.raises(ValueError, match="integers 0..2"):
        loss.check_y(np.array([0.0, 3.0, 2.0]))
    with pytest.raises(ValueError, match="label_gain must be"):
        LambdaRankLoss(label_gain=[0, 3, 1])
    with pytest.raises(ValueError, match="needs each row's query"):
        _kernel(LambdaRankLoss(), np.zeros(3), np.zeros(3))
