"""RowSampler (bagging, GOSS) and FeatureSampler (colsample by tree / by node)."""
import numpy as np
import pytest

from hgbt.engine.sampling import FeatureSampler, RowSampler


# ---------------------------------------------------------------------------
# helpers

def goss(n, top=0.2, other=0.1, seed=0):
    return RowSampler("goss", 1.0, top, other, n, np.random.default_rng(seed))


def bagging(n, subsample, seed=0):
    return RowSampler("bagging", subsample, 0.2, 0.1, n, np.random.default_rng(seed))


def random_gh(seed, n_trees, n, tied=False):
    """float32 (K, n) gradients/hessians; ``tied``: few distinct dyadic values, so
    scores are exact and have many ties; gradients are never zero."""
    rng = np.random.default_rng(seed)
    if tied:
        g = rng.integers(1, 4, size=(n_trees, n)) * rng.choice([-1, 1], size=(n_trees, n))
        h = rng.choice([0.5, 1.0, 2.0], size=(n_trees, n))
    else:
        g = rng.standard_normal((n_trees, n)) + 0.3
        h = rng.uniform(0.1, 1.0, size=(n_trees, n))
    return g.astype(np.float32), h.astype(np.float32)


def reference_scores(g, h):
    return np.abs(g.astype(np.float64) * h.astype(np.float64)).sum(axis=0)


def reference_top(g, h, n_top):
    """Rows of the ``n_top`` largest scores by a full sort (untied scores only)."""
    score = reference_scores(g, h)
    assert np.unique(score).size == score.size, "reference_top needs untied scores"
    return np.sort(np.argsort(-score, kind="stable")[:n_top])


def check_top(top_rows, g, h, n_top):
    """``top_rows`` are ``n_top`` rows of the largest scores: every row above
    the threshold, the rest from the rows tied at it (full sort reference)."""
    score = reference_scores(g, h)
    threshold = np.sort(score)[::-1][n_top - 1]
    assert top_rows.size == n_top
    assert np.isin(np.flatnonzero(score > threshold), top_rows).all()
    assert np.all(score[top_rows] >= threshold)


def assert_valid_rows(rows, n, size):
    assert isinstance(rows, np.ndarray)
    assert rows.dtype == np.uint32
    assert rows.ndim == 1 and rows.size == size
    assert np.all(np.diff(rows.astype(np.int64)) > 0)  # sorted and unique
    if size:
        assert rows[-1] < n


# ---------------------------------------------------------------------------
# GOSS

@pytest.mark.parametrize("n_trees", [1, 3])
@pytest.mark.parametrize("n, top, other", [
    (1000, 0.2, 0.1),   # integral counts: factor == (1 - a) / b
    (37, 0.2, 0.15),    # truncated counts: n_top=7, n_other=5, factor 30/5
])
def test_goss_gradient_sums_unbiased(n_trees, n, top, other):
    g0, h0 = random_gh(1, n_trees, n)
    full_g = g0.astype(np.float64).sum(axis=1)
    full_h = h0.astype(np.float64).sum(axis=1)
    sampler = goss(n, top, other, seed=2)
    n_draws = 2000
    sums_g = np.empty((n_draws, n_trees))
    sums_h = np.empty((n_draws, n_trees))
    for i in range(n_draws):
        g, h = g0.copy(), h0.copy()
        rows = sampler.sample(g, h)
        sums_g[i] = g[:, rows].astype(np.float64).sum(axis=1)
        sums_h[i] = h[:, rows].astype(np.float64).sum(axis=1)
    for sums, full in ((sums_g, full_g), (sums_h, full_h)):
        mean = sums.mean(axis=0)
        se = sums.std(axis=0, ddof=1) / np.sqrt(n_draws)
        assert np.all(se > 0)
        assert np.all(np.abs(mean - full) <= 4 * se), (mean, full, se)

    if n == 37:
        # The test has power: with the paper's (1 - a) / b instead of the
        # exact (n - n_top) / n_other the (positive) hessian sums are visibly
        # biased (by 1/9 of the small-score rows' sum).
        top_rows = reference_top(g0, h0, sampler.n_top)
        top_sum = h0[:, top_rows].astype(np.float64).sum(axis=1)
        ratio = ((1 - top) / other) / sampler.other_weight
        assert ratio == pytest.approx(8 / 9)
        biased = top_sum + ratio * (sums_h - top_sum)
        se = biased.std(axis=0, ddof=1) / np.sqrt(n_draws)
        assert np.all(np.abs(biased.mean(axis=0) - full_h) > 4 * se)


@pytest.mark.parametrize("n_trees", [1, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tied", [False, True])
def test_goss_top_rows_and_reweighting(n_trees, seed, tied):
    n, top, other = 500, 0.2, 0.3
    g0, h0 = random_gh(seed, n_trees, n, tied=tied)
    g, h = g0.copy(), h0.copy()
    sampler = goss(n, top, other, seed=seed + 10)
    rows = sampler.sample(g, h)

    n_top, n_other = int(top * n), int(other * n)
    assert (sampler.n_top, sampler.n_other) == (n_top, n_other)
    # the top rows are the sampled rows left as they were (the others are
    # scaled); each other row is kept with probability n_other / (n - n_top)
    top_rows = rows[np.all(g[:, rows] == g0[:, rows], axis=0)]
    check_top(top_rows, g0, h0, n_top)
    small = np.setdiff1d(rows, top_rows)
    assert_valid_rows(rows, n, n_top + small.size)
    q = n_other / (n - n_top)
    assert abs(small.size - n_other) <= 5 * np.sqrt((n - n_top) * q * (1 - q))

    factor = np.float32((n - n_top) / n_other)
    assert sampler.other_weight == pytest.approx((1 - top) / other)
    # exactly the drawn small-score rows are multiplied, in every tree...
    np.testing.assert_array_equal(g[:, small], g0[:, small] * factor)
    np.testing.assert_array_equal(h[:, small], h0[:, small] * factor)
    # ...and nothing else changes (top rows and rows not sampled)
    untouched = np.setdiff1d(np.arange(n), small)
    np.testing.assert_array_equal(g[:, untouched], g0[:, untouched])
    np.testing.assert_array_equal(h[:, untouched], h0[:, untouched])
    assert np.all(g[:, small] != g0[:, small])  # factor != 1 and g != 0


def test_goss_ties_drawn_at_random():
    n = 20
    g = np.ones((1, n), dtype=np.float32)
    h = np.ones((1, n), dtype=np.float32)
    g[0, [3, 17]] = 5.0   # strictly larger: always in the top
    chosen = set()
    for seed in range(30):
        sampler = goss(n, top=0.3, other=0.1, seed=seed)  # n_top = 6, n_other = 2
        gs = g.copy()
        rows = sampler.sample(gs, h.copy())
        top_rows = rows[gs[0, rows] == g[0, rows]]
        assert {3, 17} <= set(top_rows) and top_rows.size == 6
        chosen |= set(top_rows) - {3, 17}
    # not always the first rows of the tie: sorted data would bias the sample
    assert len(chosen) > 10
    # ties across trees: the score is the sum over trees
    g3 = np.ones((3, n), dtype=np.float32)
    h3 = np.ones((3, n), dtype=np.float32)
    g3[2, 9] = -4.0  # row 9 only large in tree 2 -> score 6 > 3
    g3[0, 12] = 2.0  # row 12 -> score 4
    sampler = RowSampler("goss", 1.0, 0.15, 0.1, n, np.random.default_rng(0))
    rows = sampler.sample(g3, h3)  # n_top = 3: rows 9, 12, then one of the tie
    assert np.isin([9, 12], rows).all()
    assert g3[2, 9] == -4.0 and g3[0, 12] == 2.0


@pytest.mark.parametrize("n, top, other", [
    (1, 0.5, 0.5), (2, 0.5, 0.5), (7, 0.3, 0.7), (10, 0.9, 0.05), (1000, 0.05, 0.95),
    (1000, 0.999, 0.001), (3, 0.1, 0.1),
])
def test_goss_row_counts(n, top, other):
    g, h = random_gh(3, 2, n)
    sampler = goss(n, top, other)
    n_top, n_other = int(top * n), int(other * n)
    if n_top + n_other == 0:
        n_top = 1  # a round is never empty
    rows = sampler.sample(g, h)
    # the n_top top rows, and on average n_other of the others
    assert_valid_rows(rows, n, rows.size)
    assert n_top <= rows.size <= n
    assert sampler.n_sampled == n_top + n_other
    assert np.isin(reference_top(*random_gh(3, 2, n), n_top), rows).all()


def test_goss_does_not_reweight_when_nothing_is_drawn():
    g0, h0 = random_gh(0, 1, 10)
    g, h = g0.copy(), h0.copy()
    sampler = goss(10, top=0.9, other=0.05)  # n_top = 9, n_other = 0
    rows = sampler.sample(g, h)
    assert sampler.other_weight == 1.0
    np.testing.assert_array_equal(rows, reference_top(g0, h0, 9))
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)


def test_goss_input_checks():
    n = 50
    g, h = random_gh(0, 2, n)
    sampler = goss(n)
    assert sampler.needs_full_hessian and sampler.active
    with pytest.raises(ValueError, match="per-row hessians"):
        sampler.sample(g, np.ones((2, 1), dtype=np.float32))  # constant hessian
    with pytest.raises(ValueError, match="float32"):
        sampler.sample(g.astype(np.float64), h)
    with pytest.raises(ValueError, match="float32"):
        sampler.sample(None, h)
    with pytest.raises(ValueError, match="n_samples=50"):
        sampler.sample(g[:, :40].copy(), h[:, :40].copy())
    g_ro = g.copy()
    g_ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        sampler.sample(g_ro, h)
    g_nan = g.copy()
    g_nan[1, 7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sampler.sample(g_nan, h)


# ---------------------------------------------------------------------------
# bagging

@pytest.mark.parametrize("n, subsample", [
    (1, 0.5), (10, 0.04), (10, 0.25), (10, 0.35), (1000, 0.5), (1001, 0.3), (7, 0.999),
])
def test_bagging_keeps_each_row_with_probability_subsample(n, subsample):
    # Each row kept by its own draw (as XGBoost and LightGBM): a random
    # number of rows, binomial(n, subsample)
    sampler = bagging(n, subsample)
    assert sampler.active and not sampler.needs_full_hessian
    sizes = []
    for _ in range(200):
        rows = sampler.sample(None, None)
        assert rows.dtype == np.uint32 and np.all(np.diff(rows.astype(np.int64)) > 0)
        assert rows.size == 0 or (rows[0] >= 0 and rows[-1] < n)
        sizes.append(rows.size)
    sd = np.sqrt(n * subsample * (1 - subsample) / len(sizes))
    assert abs(np.mean(sizes) - n * subsample) <= 5 * sd + 1e-9


def test_bagging_inclusion_frequency_uniform():
    n, subsample, n_draws = 40, 0.3, 5000
    sampler = bagging(n, subsample, seed=4)
    counts = np.zeros(n)
    for _ in range(n_draws):
        counts[sampler.sample()] += 1
    freq = counts / n_draws
    sd = np.sqrt(subsample * (1 - subsample) / n_draws)
    assert np.max(np.abs(freq - subsample)) < 4.5 * sd, freq


def test_a_rows_bagging_draw_depends_only_on_the_round_and_its_index():
    # What lets a Dask shard draw for its rows what the local fit draws:
    # the draw of row i is the same whichever rows are drawn with it
    n = 10_000
    sampler = bagging(n, 0.4)
    sampler.start_round(np.random.default_rng(0), seed=11, iteration=3)
    whole = sampler.sample(n_threads=2)
    ids = np.arange(n, dtype=np.int64)
    shards = [ids[:1234], ids[1234:1234], ids[1234:7000], ids[7000:]]
    parts = [shard[sampler.sample(row_ids=shard)] for shard in shards]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    # another round, another seed: other rows
    sampler.start_round(np.random.default_rng(0), seed=11, iteration=4)
    assert not np.array_equal(sampler.sample(), whole)
    sampler.start_round(np.random.default_rng(0), seed=12, iteration=3)
    assert not np.array_equal(sampler.sample(), whole)
    # the draw against a plain reference of the counter-based uniform
    sampler.start_round(np.random.default_rng(0), seed=11, iteration=3)
    np.testing.assert_array_equal(
        whole, np.flatnonzero(_splitmix_uniform(sampler.round_seeds[0], ids) < 0.4))


def _splitmix_uniform(seed, rows):
    """hgbt/core/_random.pxd's uniform(seed, row) in NumPy uint64 arithmetic."""
    z = np.uint64(seed) + (rows.astype(np.uint64) + np.uint64(1)) * np.uint64(
        0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def test_bagging_leaves_gradients_alone():
    g0, h0 = random_gh(0, 2, 100)
    g, h = g0.copy(), h0.copy()
    bagging(100, 0.5).sample(g, h)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)


def test_inactive_when_subsample_is_one():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    sampler = RowSampler("bagging", 1.0, 0.2, 0.1, 100, rng)
    assert not sampler.active
    assert not sampler.needs_full_hessian
    np.testing.assert_array_equal(sampler.sample(), np.arange(100))
    assert rng.bit_generator.state == state
    assert bagging(100, 0.99).active
    assert goss(100).active


# ---------------------------------------------------------------------------
# determinism

@pytest.mark.parametrize("strategy", ["bagging", "goss"])
def test_same_seed_same_rows_different_seed_different_rows(strategy):
    n = 300
    g0, h0 = random_gh(5, 2, n)

    def run(seed):
        sampler = RowSampler(strategy, 0.5, 0.2, 0.3, n, np.random.default_rng(seed))
        out = []
        for _ in range(4):  # several rounds from the same generator
            g, h = g0.copy(), h0.copy()
            out.append((sampler.sample(g, h), g, h))
        return out

    a, b, c = run(7), run(7), run(8)
    for (ra, ga, ha), (rb, gb, hb) in zip(a, b):
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(ga, gb)
        np.testing.assert_array_equal(ha, hb)
    assert not all(np.array_equal(ra, rc) for (ra, _, _), (rc, _, _) in zip(a, c))
    assert not np.array_equal(a[0][0], a[1][0])  # rounds differ too


# ---------------------------------------------------------------------------
# FeatureSampler

@pytest.mark.parametrize("n_features, bytree, bynode", [
    (1, 0.5, 0.5), (10, 0.5, 0.5), (10, 0.25, 0.9), (28, 0.8, 0.3), (28, 0.01, 0.01),
    (100, 0.999, 0.5),
])
def test_feature_mask_counts_and_subset(n_features, bytree, bynode):
    fs = FeatureSampler(n_features, bytree, bynode, np.random.default_rng(0))
    n_tree = max(1, round(bytree * n_features))
    n_node = max(1, round(bynode * n_tree))
    for _ in range(20):
        tree = fs.tree_mask()
        assert tree.dtype == np.uint8 and tree.shape == (n_features,)
        assert set(np.unique(tree)) <= {0, 1}
        assert tree.sum() == n_tree
        for _ in range(5):
            node = fs.node_mask(tree)
            assert node.dtype == np.uint8 and node.shape == (n_features,)
            assert set(np.unique(node)) <= {0, 1}
            assert node.sum() == n_node
            assert np.all(node <= tree)  # only features the tree allows


def test_node_mask_without_tree_mask_uses_all_features():
    fs = FeatureSampler(20, 1.0, 0.25, np.random.default_rng(1))
    assert fs.tree_mask() is None
    seen = np.zeros(20)
    for _ in range(200):
        node = fs.node_mask(None)
        assert node.sum() == 5
        seen += node
    assert np.all(seen > 0)  # every feature is reachable


def test_node_mask_returns_tree_mask_when_bynode_is_one():
    fs = FeatureSampler(10, 0.5, 1.0, np.random.default_rng(2))
    tree = fs.tree_mask()
    state = fs.rng.bit_generator.state
    assert fs.node_mask(tree) is tree
    assert fs.node_mask(None) is None
    assert fs.rng.bit_generator.state == state


def test_fractions_one_draw_nothing():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    fs = FeatureSampler(15, 1.0, 1.0, rng)
    assert not fs.active
    for _ in range(10):
        tree = fs.tree_mask()
        assert tree is None
        assert fs.node_mask(tree) is None
    assert rng.bit_generator.state == state
    # bytree == 1 alone: tree_mask draws nothing either
    fs = FeatureSampler(15, 1.0, 0.5, rng)
    assert fs.active
    assert fs.tree_mask() is None
    assert rng.bit_generator.state == state
    fs.node_mask(None)
    assert rng.bit_generator.state != state


def test_tree_mask_inclusion_frequency_uniform():
    n_features, n_draws = 12, 4000
    fs = FeatureSampler(n_features, 0.25, 1.0, np.random.default_rng(5))
    freq = sum(fs.tree_mask().astype(np.int64) for _ in range(n_draws)) / n_draws
    sd = np.sqrt(0.25 * 0.75 / n_draws)
    assert np.max(np.abs(freq - 0.25)) < 4.5 * sd, freq


def test_feature_sampler_deterministic():
    def masks(seed):
        fs = FeatureSampler(30, 0.5, 0.5, np.random.default_rng(seed))
        out = []
        for _ in range(5):
            t = fs.tree_mask()
            out += [t, fs.node_mask(t), fs.node_mask(t)]
        return np.array(out)
    np.testing.assert_array_equal(masks(11), masks(11))
    assert not np.array_equal(masks(11), masks(12))


def test_node_mask_checks():
    fs = FeatureSampler(5, 0.5, 0.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        fs.node_mask(np.ones(4, dtype=np.uint8))
    with pytest.raises(ValueError, match="no feature"):
        fs.node_mask(np.zeros(5, dtype=np.uint8))


# ---------------------------------------------------------------------------
# validation

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(strategy="random"), ValueError, "strategy"),
    (dict(strategy="bagging", subsample=0.0), ValueError, r"subsample must be in \(0, 1\]"),
    (dict(strategy="bagging", subsample=1.5), ValueError, "subsample"),
    (dict(strategy="bagging", subsample=-0.1), ValueError, "subsample"),
    (dict(strategy="bagging", subsample=float("nan")), ValueError, "subsample"),
    (dict(strategy="bagging", subsample="0.5"), TypeError, "subsample"),
    (dict(strategy="bagging", subsample=True), TypeError, "subsample"),
    (dict(goss_top_rate=0.0), ValueError, r"goss_top_rate must be in \(0, 1\]"),
    (dict(goss_top_rate=1.2), ValueError, "goss_top_rate"),
    (dict(goss_other_rate=0.0), ValueError, r"goss_other_rate must be in \(0, 1\]"),
    (dict(goss_other_rate=2.0), ValueError, "goss_other_rate"),
    (dict(goss_top_rate=0.6, goss_other_rate=0.5), ValueError,
     r"goss_top_rate \+ goss_other_rate must be <= 1"),
    (dict(n_samples=0), ValueError, "n_samples"),
    (dict(n_samples=10.0), TypeError, "n_samples"),
    (dict(rng=0), TypeError, "numpy.random.Generator"),
    (dict(rng=np.random.RandomState(0)), TypeError, "numpy.random.Generator"),
])
def test_row_sampler_validation(kwargs, error, match):
    params = dict(strategy="goss", subsample=1.0, goss_top_rate=0.2, goss_other_rate=0.1,
                  n_samples=100, rng=np.random.default_rng(0))
    params.update(kwargs)
    with pytest.raises(error, match=match):
        RowSampler(**params)


def test_row_sampler_validates_only_the_strategy_parameters():
    # goss ignores subsample, bagging ignores the GOSS rates
    RowSampler("goss", 5.0, 0.2, 0.1, 10, np.random.default_rng(0))
    RowSampler("bagging", 0.5, 0.9, 0.9, 10, np.random.default_rng(0))
    RowSampler("goss", 1.0, 0.5, 0.5, 10, np.random.default_rng(0))  # sum exactly 1


@pytest.mark.parametrize("args, error, match", [
    ((0, 0.5, 0.5), ValueError, "n_features"),
    ((5, 0.0, 0.5), ValueError, r"colsample_bytree must be in \(0, 1\]"),
    ((5, 1.1, 0.5), ValueError, "colsample_bytree"),
    ((5, 0.5, 0.0), ValueError, r"colsample_bynode must be in \(0, 1\]"),
    ((5, 0.5, float("nan")), ValueError, "colsample_bynode"),
    ((5, None, 0.5), TypeError, "colsample_bytree"),
])
def test_feature_sampler_validation(args, error, match):
    with pytest.raises(error, match=match):
        FeatureSampler(*args, np.random.default_rng(0))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        FeatureSampler(5, 0.5, 0.5, np.random.RandomState(0))


def test_round_feature_samplers_per_tree():
    from hgbt.engine.sampling import round_feature_samplers

    rng = np.random.default_rng([7, 3])
    single = round_feature_samplers(40, 0.5, 0.5, rng, 7, 3, 1)
    assert len(single) == 1 and single[0].rng is rng  # one tree: the round's generator

    def masks(order):
        samplers = round_feature_samplers(40, 0.5, 0.5, None, 7, 3, 4)
        out = {}
        for k in order:  # a tree and its nodes, trees in any order
            tree = samplers[k].tree_mask()
            out[k] = (tree, samplers[k].node_mask(tree), samplers[k].node_mask(tree))
        return out

    forward, backward = masks(range(4)), masks(reversed(range(4)))
    for k in range(4):
        for a, b in zip(forward[k], backward[k]):
            np.testing.assert_array_equal(a, b)
    trees = [forward[k][0].tobytes() for k in range(4)]
    assert len(set(trees)) == 4  # each class's tree draws its own mask
    other_round = round_feature_samplers(40, 0.5, 0.5, None, 7, 4, 4)
    assert other_round[0].tree_mask().tobytes() != trees[0]
