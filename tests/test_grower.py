"""TreeGrower + LocalTrainingData: tree structure, constraints, leaf values, predictions."""
import numpy as np
import pytest

from hgbt.core._types import G_H_DTYPE, Y_DTYPE
from hgbt.data.binning import BinMapper
from hgbt.data.bundling import FeatureLayout
from hgbt.tree.grower import TreeGrower, TreeSettings
from hgbt.tree.training_data import LocalTrainingData
from reference_grower import PythonLoopGrower
from test_bundling import sparse_storage_at_any_saving  # noqa: F401 (autouse)


# ---------------------------------------------------------------------------
# helpers

def make_problem(seed, n_samples=2000, n_features=5, max_bins=255, nan_rate=0.1,
                 constant_hessian=False):
    """Integer-valued X (< max_bins distinct values per column, so binning is
    exact), NaN, gradients that depend on X so that real splits exist."""
    rng = np.random.default_rng(seed)
    n_values = rng.integers(2, min(max_bins, 200) + 1, size=n_features)
    n_values[0] = min(max_bins, 50)
    X = np.column_stack([rng.integers(0, k, n_samples) for k in n_values]).astype(np.float64)
    X = X * 2.0 - 10.0
    X[rng.random(X.shape) < nan_rate] = np.nan
    signal = (np.nan_to_num(X[:, 0], nan=30.0) > 0) * 2.0 + np.nan_to_num(X[:, 1], nan=-5.0) * 0.1
    g = (rng.normal(size=n_samples) - signal).astype(G_H_DTYPE)
    if constant_hessian:
        h = np.array([1.0], dtype=G_H_DTYPE)
    else:
        h = rng.uniform(0.2, 2.0, size=n_samples).astype(G_H_DTYPE)
    mapper = BinMapper(max_bins=max_bins, subsample=None).fit(X)
    X_binned = mapper.transform(X)
    # binning is exact: one bin per distinct value
    for f in range(n_features):
        col = X[:, f]
        assert mapper.n_bins_non_missing_[f] == np.unique(col[~np.isnan(col)]).size
    return X, X_binned, mapper, g, h


# the grower settings of these tests (the categorical ones as they were when
# the tests were written; the estimators' defaults are hgbt/core/params.py's)
DEFAULTS = dict(grow_policy="lossguide", max_leaf_nodes=31, max_depth=None,
                min_samples_leaf=20, min_child_weight=1e-3, min_gain_to_split=0.0,
                l2_regularization=0.0, learning_rate=1.0, cat_smooth=10.0,
                max_cat_threshold=32)


def grow(X_binned, mapper, g, h, n_threads=1, **params):
    p = {**DEFAULTS, **params}
    data = LocalTrainingData(X_binned, mapper.max_bins + 1, n_threads)
    data.use_gradients(g, h)
    data.start_tree(0)
    grower = TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                        TreeSettings(**p), n_threads=n_threads)
    predictor = grower.grow()
    return grower, predictor, data, p


def route_binned(nodes, X_binned, missing_bin):
    """Node id of every row at every node it visits: returns node -> rows."""
    rows_of = {0: np.arange(X_binned.shape[0])}
    for i in range(nodes.size):  # children always have larger ids
        if nodes["is_leaf"][i]:
            continue
        rows = rows_of[i]
        codes = X_binned[rows, nodes["feature_idx"][i]]
        left = np.where(codes == missing_bin, bool(nodes["missing_go_to_left"][i]),
                        codes <= nodes["bin_threshold"][i])
        rows_of[int(nodes["left"][i])] = rows[left]
        rows_of[int(nodes["right"][i])] = rows[~left]
    return rows_of


def route_raw(nodes, X):
    """Leaf id of every row, traversing the raw values in NumPy."""
    leaf = np.zeros(X.shape[0], dtype=np.int64)
    for i in range(nodes.size):
        if nodes["is_leaf"][i]:
            continue
        here = leaf == i
        x = X[here, nodes["feature_idx"][i]]
        left = np.where(np.isnan(x), bool(nodes["missing_go_to_left"][i]),
                        x <= nodes["num_threshold"][i])
        idx = np.flatnonzero(here)
        leaf[idx[left]] = nodes["left"][i]
        leaf[idx[~left]] = nodes["right"][i]
    return leaf


def sums(rows, g, h):
    G = float(g[rows].astype(np.float64).sum())
    H = float(h[0]) * rows.size if h.size == 1 else float(h[rows].astype(np.float64).sum())
    return G, H


def best_gain_bruteforce(X_binned, rows, g, h, p, n_bins):
    """Largest admissible gain over every feature, bin and missing direction."""
    l2, gamma = p["l2_regularization"], p["min_gain_to_split"]
    mcw, msl = p["min_child_weight"], p["min_samples_leaf"]
    G, H = sums(rows, g, h)
    n = rows.size
    gg = g[rows].astype(np.float64)
    hh = np.full(n, float(h[0])) if h.size == 1 else h[rows].astype(np.float64)
    score = lambda a, b: np.where(b + l2 > 0, a * a / np.maximum(b + l2, 1e-300), 0.0)
    best = -np.inf
    for f in range(X_binned.shape[1]):
        codes = X_binned[rows, f].astype(np.intp)
        bg = np.bincount(codes, gg, minlength=n_bins)
        bh = np.bincount(codes, hh, minlength=n_bins)
        bc = np.bincount(codes, minlength=n_bins)
        miss = n_bins - 1
        cg, ch, cc = np.cumsum(bg[:miss]), np.cumsum(bh[:miss]), np.cumsum(bc[:miss])
        options = [(cg, ch, cc)]
        if bc[miss] > 0:
            options.append((cg + bg[miss], ch + bh[miss], cc + bc[miss]))
        for lg, lh, lc in options:
            rc = n - lc
            ok = (lc >= msl) & (rc >= msl) & (lh >= mcw) & (H - lh >= mcw) & (lc > 0) & (rc > 0)
            gain = 0.5 * (score(lg, lh) + score(G - lg, H - lh) - score(G, H)) - gamma
            if ok.any():
                best = max(best, float(gain[ok].max()))
    return best


def check_tree(X, X_binned, mapper, g, h, grower, predictor, data, p):
    """Every structural, constraint and value property of a grown tree."""
    nodes = predictor.nodes
    missing_bin = mapper.max_bins
    n_bins = mapper.max_bins + 1
    is_leaf = nodes["is_leaf"].astype(bool)
    leaf_ids = np.flatnonzero(is_leaf)
    assert list(leaf_ids) == grower.leaf_ids()
    # full binary tree, children after parents, depths consistent
    internal = np.flatnonzero(~is_leaf)
    assert leaf_ids.size == internal.size + 1
    children = np.concatenate([nodes["left"][internal], nodes["right"][internal]])
    np.testing.assert_array_equal(np.sort(children), np.arange(1, nodes.size))
    depth = np.zeros(nodes.size, dtype=np.int64)
    for i in internal:
        for c in (nodes["left"][i], nodes["right"][i]):
            assert c > i
            depth[c] = depth[i] + 1
    np.testing.assert_array_equal(nodes["depth"], depth)
    assert predictor.max_depth == depth.max()
    # constraints
    if p["max_leaf_nodes"] is not None:
        assert leaf_ids.size <= p["max_leaf_nodes"]
    if p["max_depth"] is not None:
        assert depth.max() <= p["max_depth"]
    rows_of = route_binned(nodes, X_binned, missing_bin)
    l2, lr = p["l2_regularization"], p["learning_rate"]
    for i in range(nodes.size):
        rows = rows_of[i]
        assert nodes["count"][i] == rows.size
        G, H = sums(rows, g, h)
        expected_value = -lr * G / (H + l2) if H + l2 > 0 else 0.0
        np.testing.assert_allclose(nodes["value"][i], expected_value, rtol=1e-6, atol=1e-10)
        if is_leaf[i]:
            assert rows.size >= p["min_samples_leaf"]
            assert H >= p["min_child_weight"] * (1 - 1e-9)
            # the training data holds exactly these rows for the leaf
            np.testing.assert_array_equal(np.sort(data.node_rows(i)), rows)
            continue
        # split gain is the gain of the actual partition, and it is the best one
        f, b = nodes["feature_idx"][i], nodes["bin_threshold"][i]
        GL, HL = sums(rows_of[nodes["left"][i]], g, h)
        GR, HR = sums(rows_of[nodes["right"][i]], g, h)
        gain = 0.5 * (GL ** 2 / (HL + l2) + GR ** 2 / (HR + l2) - G ** 2 / (H + l2)) \
            - p["min_gain_to_split"]
        scale = 1.0 + G ** 2 / (H + l2)
        assert nodes["gain"][i] > 0
        np.testing.assert_allclose(nodes["gain"][i], gain, rtol=1e-6, atol=1e-9 * scale)
        best = best_gain_bruteforce(X_binned, rows, g, h, p, n_bins)
        np.testing.assert_allclose(nodes["gain"][i], best, rtol=1e-6, atol=1e-9 * scale)
        # raw threshold = the bin's upper edge (inf for the last value bin)
        t = mapper.bin_thresholds_[f]
        assert nodes["num_threshold"][i] == (t[b] if b < t.size else np.inf)
        assert b < mapper.n_bins_non_missing_[f]
        # when no missing value reached this node, missing goes to the larger child
        n_missing = np.sum(X_binned[rows, f] == missing_bin)
        nl, nr = rows_of[nodes["left"][i]].size, rows_of[nodes["right"][i]].size
        if n_missing == 0 and nl != nr:
            assert nodes["missing_go_to_left"][i] == (nl > nr)
    # leaves partition the rows; the raw-value traversal agrees with the binned one
    all_leaf_rows = np.concatenate([rows_of[k] for k in leaf_ids])
    np.testing.assert_array_equal(np.sort(all_leaf_rows), np.arange(X.shape[0]))
    raw_leaf = route_raw(nodes, X)
    for k in leaf_ids:
        np.testing.assert_array_equal(np.flatnonzero(raw_leaf == k), rows_of[k])
    return rows_of


def unsplittable(rows, X_binned, g, h, p, depth, n_bins):
    if p["max_depth"] is not None and depth >= p["max_depth"]:
        return True
    G, H = sums(rows, g, h)
    if rows.size < 2 * p["min_samples_leaf"] or H < 2 * p["min_child_weight"]:
        return True
    scale = 1.0 + G ** 2 / (H + p["l2_regularization"])
    return best_gain_bruteforce(X_binned, rows, g, h, p, n_bins) <= 1e-9 * scale


# ---------------------------------------------------------------------------
# tests

PARAMS = [
    dict(grow_policy="lossguide", max_leaf_nodes=12, min_samples_leaf=20),
    dict(grow_policy="lossguide", max_leaf_nodes=None, max_depth=4, min_samples_leaf=5,
         l2_regularization=1.0, learning_rate=0.1),
    dict(grow_policy="lossguide", max_leaf_nodes=40, max_depth=3, min_samples_leaf=1,
         min_child_weight=0.0),
    dict(grow_policy="depthwise", max_leaf_nodes=9, min_samples_leaf=30),
    dict(grow_policy="depthwise", max_leaf_nodes=None, max_depth=3, min_samples_leaf=100,
         min_gain_to_split=0.5, l2_regularization=2.0, learning_rate=0.3),
    dict(grow_policy="depthwise", max_leaf_nodes=20, max_depth=5, min_samples_leaf=10,
         min_child_weight=40.0),
    dict(grow_policy="lossguide", max_leaf_nodes=None, max_depth=None, min_samples_leaf=150),
]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("constant_hessian", [False, True])
def test_tree_respects_constraints_and_matches_numpy(params, constant_hessian):
    X, Xb, mapper, g, h = make_problem(1, constant_hessian=constant_hessian)
    grower, predictor, data, p = grow(Xb, mapper, g, h, **params)
    assert predictor.n_leaves > 1
    rows_of = check_tree(X, Xb, mapper, g, h, grower, predictor, data, p)
    nodes = predictor.nodes
    # without a leaf limit the tree grows until no leaf can be split
    if p["max_leaf_nodes"] is None:
        for k in np.flatnonzero(nodes["is_leaf"]):
            assert unsplittable(rows_of[k], Xb, g, h, p, nodes["depth"][k], mapper.max_bins + 1)
    elif predictor.n_leaves < p["max_leaf_nodes"]:
        # it stopped early: no leaf was splittable
        for k in np.flatnonzero(nodes["is_leaf"]):
            assert unsplittable(rows_of[k], Xb, g, h, p, nodes["depth"][k], mapper.max_bins + 1)


@pytest.mark.parametrize("max_leaf_nodes", [4, 9, 15])
def test_max_leaf_nodes_is_reached_when_possible(max_leaf_nodes):
    X, Xb, mapper, g, h = make_problem(2)
    for policy in ("lossguide", "depthwise"):
        grower, predictor, data, p = grow(Xb, mapper, g, h, grow_policy=policy,
                                          max_leaf_nodes=max_leaf_nodes, min_samples_leaf=5)
        assert predictor.n_leaves == max_leaf_nodes
        check_tree(X, Xb, mapper, g, h, grower, predictor, data, p)


@pytest.mark.parametrize("max_depth", [1, 2, 4])
def test_depthwise_complete_tree(max_depth):
    X, Xb, mapper, g, h = make_problem(3, n_samples=3000)
    grower, predictor, data, p = grow(Xb, mapper, g, h, grow_policy="depthwise",
                                      max_leaf_nodes=None, max_depth=max_depth,
                                      min_samples_leaf=1)
    nodes = predictor.nodes
    leaves = nodes["is_leaf"] == 1
    assert leaves.sum() == 2 ** max_depth
    assert np.all(nodes["depth"][leaves] == max_depth)
    check_tree(X, Xb, mapper, g, h, grower, predictor, data, p)


def test_depthwise_splits_level_by_level():
    X, Xb, mapper, g, h = make_problem(4)
    for k in range(2, 12):
        grower, predictor, data, p = grow(Xb, mapper, g, h, grow_policy="depthwise",
                                          max_leaf_nodes=k, min_samples_leaf=5)
        nodes = predictor.nodes
        internal = np.flatnonzero(nodes["is_leaf"] == 0)
        # nodes were split in the order their children were created
        order = internal[np.argsort(nodes["left"][internal])]
        split_depths = nodes["depth"][order]
        assert np.all(np.diff(split_depths) >= 0), split_depths
        # a level is split oldest node first
        for d in np.unique(split_depths):
            ids = order[split_depths == d]
            assert np.all(np.diff(ids) > 0)
        # no leaf is shallower than a split node's depth unless it was unsplittable
        deepest_split = split_depths.max()
        rows_of = route_binned(nodes, Xb, mapper.max_bins)
        for leaf in np.flatnonzero(nodes["is_leaf"]):
            if nodes["depth"][leaf] < deepest_split:
                assert unsplittable(rows_of[leaf], Xb, g, h, p, nodes["depth"][leaf],
                                    mapper.max_bins + 1)


def test_lossguide_smaller_tree_is_prefix_of_larger():
    X, Xb, mapper, g, h = make_problem(5)
    trees = {}
    for k in range(2, 13):
        trees[k] = grow(Xb, mapper, g, h, grow_policy="lossguide", max_leaf_nodes=k,
                        min_samples_leaf=10)[1].nodes
        assert (trees[k]["is_leaf"] == 1).sum() == k
    for k in range(2, 12):
        small, big = trees[k], trees[k + 1]
        assert small.size == 2 * k - 1 and big.size == 2 * k + 1
        head = big[: small.size]
        for field in ("value", "count", "depth"):
            np.testing.assert_array_equal(small[field], head[field])
        internal = small["is_leaf"] == 0
        assert small[internal].tobytes() == head[internal].tobytes()
        # the larger tree splits exactly one of the smaller tree's leaves
        assert (head["is_leaf"] == 0).sum() == internal.sum() + 1
        # and that node was a leaf of the smaller tree
        new = np.flatnonzero((head["is_leaf"] == 0) & ~internal)[0]
        assert small["is_leaf"][new] == 1


def test_lossguide_splits_best_leaf_first():
    X, Xb, mapper, g, h = make_problem(6)
    p = {**DEFAULTS, "max_leaf_nodes": 10, "min_samples_leaf": 10}
    grower, predictor, data, p = grow(Xb, mapper, g, h, **p)
    nodes = predictor.nodes
    rows_of = route_binned(nodes, Xb, mapper.max_bins)
    n_bins = mapper.max_bins + 1
    # replay: at each step the split node has the largest best-gain among the
    # current leaves (the popped split is the best available one)
    internal = np.flatnonzero(nodes["is_leaf"] == 0)
    order = internal[np.argsort(nodes["left"][internal])]
    leaves = {0}
    for node in order:
        best_other = max([best_gain_bruteforce(Xb, rows_of[k], g, h, p, n_bins)
                          if rows_of[k].size >= 2 * p["min_samples_leaf"] else -np.inf
                          for k in leaves], default=-np.inf)
        assert node in leaves
        assert nodes["gain"][node] >= best_other * (1 - 1e-6) - 1e-9
        leaves.remove(node)
        leaves |= {int(nodes["left"][node]), int(nodes["right"][node])}


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("constant_hessian", [False, True])
def test_add_leaf_values_equals_predict_on_raw_X(policy, constant_hessian):
    X, Xb, mapper, g, h = make_problem(7, constant_hessian=constant_hessian)
    grower, predictor, data, p = grow(Xb, mapper, g, h, grow_policy=policy,
                                      max_leaf_nodes=16, max_depth=6, min_samples_leaf=15,
                                      l2_regularization=0.5, learning_rate=0.2)
    rng = np.random.default_rng(0)
    base = rng.normal(size=X.shape[0])
    raw = base.copy()
    leaf_ids = grower.leaf_ids()
    data.add_leaf_values(raw, leaf_ids, predictor.nodes["value"][leaf_ids])
    np.testing.assert_array_equal(raw, base + predictor.predict(X))
    np.testing.assert_array_equal(raw, base + predictor.predict(X.astype(np.float32)))
    # leaf values: -learning_rate * G / (H + l2) of the leaf's rows
    for k in leaf_ids:
        rows = data.node_rows(k)
        G, H = sums(rows, g, h)
        np.testing.assert_allclose(predictor.nodes["value"][k], -0.2 * G / (H + 0.5),
                                   rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("max_bins", [3, 16, 255])
def test_continuous_data_quantile_bins(max_bins):
    # binning is not exact here; the raw-value traversal must still agree
    # with the binned partition (x <= threshold[b] <=> bin(x) <= b)
    rng = np.random.default_rng(max_bins)
    n = 1500
    X = rng.normal(size=(n, 4)) * np.array([1.0, 1e6, 1e-6, 3.0])
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.02] = np.inf
    X[rng.random(X.shape) < 0.02] = -np.inf
    g = (rng.normal(size=n) + 2.0 * (np.nan_to_num(X[:, 0], nan=1.0) > 0.3)).astype(G_H_DTYPE)
    h = rng.uniform(0.2, 2.0, size=n).astype(G_H_DTYPE)
    mapper = BinMapper(max_bins=max_bins, subsample=1000, random_state=0).fit(X)
    Xb = mapper.transform(X)
    for policy in ("lossguide", "depthwise"):
        grower, predictor, data, p = grow(Xb, mapper, g, h, grow_policy=policy,
                                          max_leaf_nodes=20, max_depth=5, min_samples_leaf=10)
        check_tree(X, Xb, mapper, g, h, grower, predictor, data, p)
        raw = np.zeros(n)
        ids = grower.leaf_ids()
        data.add_leaf_values(raw, ids, predictor.nodes["value"][ids])
        np.testing.assert_array_equal(raw, predictor.predict(X))


def test_unsplittable_root_gives_single_leaf():
    X, Xb, mapper, g, h = make_problem(8, n_samples=100)
    for params in (dict(min_samples_leaf=60), dict(min_gain_to_split=1e9),
                   dict(max_depth=0)):
        grower, predictor, data, p = grow(Xb, mapper, g, h, **params)
        nodes = predictor.nodes
        assert nodes.size == 1 and nodes["is_leaf"][0] == 1
        G, H = sums(np.arange(100), g, h)
        np.testing.assert_allclose(nodes["value"][0], -G / H, rtol=1e-6)
        raw = np.zeros(100)
        data.add_leaf_values(raw, grower.leaf_ids(), nodes["value"][[0]])
        np.testing.assert_array_equal(raw, np.full(100, nodes["value"][0]))


def test_training_data_reused_for_several_trees():
    X, Xb, mapper, g, h = make_problem(9, n_samples=1500)
    data = LocalTrainingData(Xb, mapper.max_bins + 1, 1)
    raw = np.zeros(X.shape[0], dtype=Y_DTYPE)
    y = -g.astype(np.float64)  # squared error around 0: gradient = raw - y
    expected = np.zeros_like(raw)
    for _ in range(3):
        grad = (raw - y).astype(G_H_DTYPE)
        hess = np.array([1.0], dtype=G_H_DTYPE)
        data.use_gradients(grad, hess)
        data.start_tree(0)
        p = {**DEFAULTS, "max_leaf_nodes": 8, "min_samples_leaf": 20, "learning_rate": 0.5}
        grower = TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                            TreeSettings(**p))
        pred = grower.grow()
        check_tree(X, Xb, mapper, grad, hess, grower, pred, data, p)
        ids = grower.leaf_ids()
        data.add_leaf_values(raw, ids, pred.nodes["value"][ids])
        expected += pred.predict(X)
        np.testing.assert_allclose(raw, expected, rtol=0, atol=1e-12)


def test_n_threads_bit_identical():
    # big enough for every parallel path: root histogram (n x features
    # >= 32768), split scan (40 x 256 >= 8192), partition (>= 32768 rows)
    X, Xb, mapper, g, h = make_problem(10, n_samples=40_000, n_features=40, nan_rate=0.05)
    for policy in ("lossguide", "depthwise"):
        for hess in (h, np.array([1.0], dtype=G_H_DTYPE)):
            results = []
            for n_threads in (1, 2):
                grower, predictor, data, p = grow(Xb, mapper, g, hess, n_threads=n_threads,
                                                  grow_policy=policy, max_leaf_nodes=24,
                                                  min_samples_leaf=20)
                raw = np.zeros(X.shape[0])
                ids = grower.leaf_ids()
                data.add_leaf_values(raw, ids, predictor.nodes["value"][ids])
                leaf_rows = np.concatenate([data.node_rows(k) for k in ids])
                results.append((predictor.nodes.tobytes(), raw.tobytes(),
                                leaf_rows.tobytes()))
                assert predictor.n_leaves == 24
            assert results[0][0] == results[1][0]
            assert results[0][1] == results[1][1]
            assert results[0][2] == results[1][2]


# ---------------------------------------------------------------------------
# categorical features

def route_binned_categorical(nodes, bitsets, X_binned, missing_bin):
    """node -> rows, with bitset routing at categorical nodes."""
    rows_of = {0: np.arange(X_binned.shape[0])}
    for i in range(nodes.size):
        if nodes["is_leaf"][i]:
            continue
        rows = rows_of[i]
        codes = X_binned[rows, nodes["feature_idx"][i]].astype(np.intp)
        if nodes["is_categorical"][i]:
            bits = bitsets[nodes["bitset_idx"][i]]
            in_set = ((bits[codes >> 5] >> (codes & 31).astype(np.uint32)) & 1) == 1
        else:
            in_set = codes <= nodes["bin_threshold"][i]
        left = np.where(codes == missing_bin, bool(nodes["missing_go_to_left"][i]), in_set)
        rows_of[int(nodes["left"][i])] = rows[left]
        rows_of[int(nodes["right"][i])] = rows[~left]
    return rows_of


@pytest.mark.parametrize("max_cat_to_onehot", [4, 255])
def test_categorical_tree_routes_values_and_gains(max_cat_to_onehot):
    rng = np.random.default_rng(max_cat_to_onehot)
    n = 4000
    X = np.column_stack([rng.integers(0, 40, n), rng.integers(0, 3, n),
                         rng.normal(size=n)]).astype(np.float64)
    X[X[:, 0] == 13, 0] = 14  # code 13 unknown
    X[rng.random(n) < 0.1, 0] = np.nan
    effect = rng.normal(size=40) * 2
    signal = np.where(np.isnan(X[:, 0]), 1.0, effect[np.nan_to_num(X[:, 0]).astype(int)])
    g = (rng.normal(size=n) - signal - X[:, 1]).astype(G_H_DTYPE)
    h = rng.uniform(0.5, 1.5, size=n).astype(G_H_DTYPE)
    is_cat = np.array([True, True, False])
    mapper = BinMapper(is_categorical=is_cat, subsample=None).fit(X)
    X_binned = mapper.transform(X)
    trees = []
    for n_threads in (1, 2):
        data = LocalTrainingData(X_binned, mapper.missing_bin + 1, n_threads)
        data.use_gradients(g, h)
        data.start_tree(0)
        grower = TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                            TreeSettings(**{**DEFAULTS, "min_samples_leaf": 10},
                                         is_categorical=is_cat,
                                         known_cat_bitsets=mapper.known_cat_bitsets_,
                                         max_cat_to_onehot=max_cat_to_onehot,
                                         cat_l2=0.0),  # node gains: the plain formula
                            n_threads=n_threads)
        trees.append((grower.grow(), grower, data))
    (tree, grower, data), (tree2, _, _) = trees
    assert tree.nodes.tobytes() == tree2.nodes.tobytes()
    assert tree.cat_bitsets.tobytes() == tree2.cat_bitsets.tobytes()
    nodes, bitsets = tree.nodes, tree.cat_bitsets
    categorical = np.flatnonzero(nodes["is_categorical"] == 1)
    assert categorical.size > 0
    assert np.array_equal(np.sort(nodes["bitset_idx"][categorical]),
                          np.arange(bitsets.shape[0]))
    rows_of = route_binned_categorical(nodes, bitsets, X_binned, mapper.missing_bin)
    for i in range(nodes.size):
        rows = rows_of[i]
        assert nodes["count"][i] == rows.size
        G, H = sums(rows, g, h)
        np.testing.assert_allclose(nodes["value"][i], -G / H, rtol=1e-6)
        if nodes["is_leaf"][i]:
            np.testing.assert_array_equal(np.sort(data.node_rows(i)), rows)
            continue
        GL, HL = sums(rows_of[nodes["left"][i]], g, h)
        GR, HR = sums(rows_of[nodes["right"][i]], g, h)
        np.testing.assert_allclose(nodes["gain"][i],
                                   0.5 * (GL ** 2 / HL + GR ** 2 / HR - G ** 2 / H),
                                   rtol=1e-6)
        if nodes["is_categorical"][i]:
            f = nodes["feature_idx"][i]
            assert is_cat[f]
            bits = np.unpackbits(bitsets[nodes["bitset_idx"][i]].view(np.uint8),
                                 bitorder="little").astype(bool)
            known = np.zeros(256, dtype=bool)
            known[mapper.categories_[f]] = True
            # unknown codes (13, >= 40 / >= 3) take the missing direction
            assert np.all(bits[~known] == bool(nodes["missing_go_to_left"][i]))
            present = np.unique(X_binned[rows, f])
            assert np.all(np.isin(np.flatnonzero(bits & known), present))
    # raw-value prediction routes like the bins
    expected = np.zeros(n)
    for k in np.flatnonzero(nodes["is_leaf"]):
        expected[rows_of[k]] = nodes["value"][k]
    np.testing.assert_array_equal(tree.predict(X), expected)


# ---------------------------------------------------------------------------
# the kernel's loop (hgbt.tree._grower) against the Python loop

KERNEL_CASES = [
    dict(),
    dict(grow_policy="depthwise", max_depth=3, max_leaf_nodes=6),
    dict(l1_regularization=0.7, l2_regularization=2.0, min_gain_to_split=0.05),
    dict(min_child_weight=0.0, min_samples_leaf=1, max_leaf_nodes=60),
    dict(monotonic_cst=[1, -1, 0, 0, 0, 0], max_leaf_nodes=20),
    dict(categorical=True),
    dict(categorical=True, max_cat_to_onehot=255, min_data_per_group=5, cat_smooth=1.0),
    dict(sampled=True),
    dict(quantized=True),
    dict(quantized=True, categorical=True, constant_hessian=True),
    dict(colsample_bytree=0.5),
    dict(max_leaf_nodes=4, min_samples_leaf=400),  # leaves left in the queue
    # bundled and sparse-stored columns
    dict(layout=True),
    dict(layout=True, quantized=True, sampled=True),
    dict(layout=True, categorical=True, constant_hessian=True, max_leaf_nodes=60),
    dict(layout="all_sparse", min_samples_leaf=5),
    # wide and mostly zero: features drop out of the scan node by node
    dict(layout="wide"),
    dict(layout="wide", min_samples_leaf=3, categorical=True, max_leaf_nodes=80),
    dict(layout="wide", colsample_bynode=0.5, max_leaf_nodes=None, max_depth=7,
         grow_policy="depthwise"),
    dict(layout="wide", interaction_groups=[set(range(0, 70)), set(range(6, 126))]),
    # interaction constraints, per-node column sampling
    dict(interaction_groups=[{0, 1}, {1, 2, 4}, {3, 5}]),
    dict(interaction_groups=[{0, 6, 9}, {1, 7, 11}, {2}, {3, 8}], layout=True),
    dict(colsample_bynode=0.5),
    dict(colsample_bynode=0.4, colsample_bytree=0.7, layout=True),
    dict(colsample_bynode=0.5, interaction_groups=[{0, 1, 2}, {2, 3, 4, 5}]),
    # no leaf limit
    dict(max_leaf_nodes=None, max_depth=6, grow_policy="depthwise"),
    dict(max_leaf_nodes=None, max_depth=None, min_samples_leaf=1, min_child_weight=0.0),
    dict(max_leaf_nodes=5000, min_samples_leaf=1, min_child_weight=0.0, quantized=True),
]


def _with_sparse_columns(X, rng, all_sparse):
    """X and 6 mostly-zero columns (flags, counts, one a fifth non-zero) that
    bundle or are stored sparse; all_sparse: the dense ones too."""
    n = X.shape[0]
    extra = np.zeros((n, 6))
    level = rng.choice(4, n, p=[0.88, 0.05, 0.04, 0.03])  # one-hot: bundled
    extra[:, :3] = level[:, None] == np.arange(1, 4)
    for j, (density, levels) in enumerate([(0.1, 6), (0.08, 4), (0.25, 10)], start=3):
        on = rng.random(n) < density
        extra[on, j] = rng.integers(1, levels, on.sum())
    if all_sparse:
        X = np.where(rng.random(X.shape) < 0.15, X, 0.0)
    return np.hstack([X, extra])


def _with_wide_columns(X, rng):
    """X, the 6 columns above and 114 rare flags and counts (0.1% to 6% of
    rows non-zero), most of which fall below min_samples_leaf in deep nodes."""
    n = X.shape[0]
    density = np.geomspace(0.001, 0.06, 114)
    wide = (rng.random((n, 114)) < density) * rng.integers(1, 4, (n, 114))
    return np.hstack([_with_sparse_columns(X, rng, False), wide])


def _grow_both_ways(case, n_threads):
    from hgbt.data.bundling import DenseBins, build_layout
    from hgbt.engine.sampling import FeatureSampler

    case = dict(case)
    rng = np.random.default_rng(len(str(case)))
    n = 6000
    X = rng.normal(size=(n, 6))
    X[:, 4] = rng.integers(0, 30, n)
    X[:, 5] = rng.integers(0, 6, n)
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + (np.nan_to_num(X[:, 4]) % 7 == 0)
    layout_case = case.pop("layout", False)
    if layout_case:
        X = (_with_wide_columns(X, rng) if layout_case == "wide"
             else _with_sparse_columns(X, rng, layout_case == "all_sparse"))
        signal = signal + X[:, 6] - 0.5 * X[:, 9] + (X[:, 11] > 4)
        if layout_case == "wide":
            signal = signal + 2 * X[:, -1] - 3 * X[:, -8] + 4 * (X[:, -30] > 0)
    n_features = X.shape[1]
    g = (rng.normal(size=n) - signal).astype(G_H_DTYPE)
    h = (np.array([1.0]) if case.pop("constant_hessian", False)
         else rng.uniform(0.2, 2.0, size=n)).astype(G_H_DTYPE)
    is_cat = None
    if case.pop("categorical", False):
        is_cat = np.zeros(n_features, dtype=bool)
        is_cat[[4, 5]] = True
    mapper = BinMapper(is_categorical=is_cat, subsample=None).fit(X)
    X_binned = mapper.transform(X)
    layout = X_binned
    if layout_case:
        layout = build_layout(DenseBins(X_binned, mapper.zero_bins(), mapper.missing_bin),
                              mapper.is_categorical_, mapper.n_bins_non_missing_,
                              mapper.missing_bin)
        assert not layout.is_plain and layout.n_columns > layout.n_dense
        assert layout.n_bundles > 0 or layout_case == "all_sparse"
    rows = (np.sort(rng.choice(n, n // 2, replace=False)).astype(np.uint32)
            if case.pop("sampled", False) else None)
    quantize = (32, 12345) if case.pop("quantized", False) else None
    colsample = case.pop("colsample_bytree", 1.0), case.pop("colsample_bynode", 1.0)
    params = {**DEFAULTS, "learning_rate": 0.3, **case}
    if params.get("monotonic_cst") is not None:
        params["monotonic_cst"] = np.array(params["monotonic_cst"], dtype=np.int8)
    results = []
    for grower_class in (TreeGrower, PythonLoopGrower):
        data = LocalTrainingData(layout, mapper.missing_bin + 1, n_threads)
        data.use_gradients(g.copy(), h.copy())
        data.start_tree(0, rows, quantize=quantize)
        sampler = (None if colsample == (1.0, 1.0) else
                   FeatureSampler(n_features, *colsample, np.random.default_rng(3)))
        grower = grower_class(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                              TreeSettings(is_categorical=mapper.is_categorical_,
                                           known_cat_bitsets=mapper.known_cat_bitsets_,
                                           **params),
                              feature_sampler=sampler, n_threads=n_threads)
        tree = grower.grow()
        leaves = grower.leaf_ids()
        raw = np.zeros(n)
        data.add_leaf_values(raw, leaves, tree.nodes["value"][leaves])
        sums = data.leaf_sums(leaves) if quantize else None
        renewed = [grower.renewed_value(k, 1.5, 3.0) for k in leaves]
        clipped = [grower.clip_leaf_value(k, 10.0) for k in leaves]
        results.append(dict(
            nodes=tree.nodes.tobytes(), bitsets=tree.cat_bitsets.tobytes(), leaves=leaves,
            rows=[data.node_rows(k).tobytes() for k in leaves], raw=raw.tobytes(),
            sums=None if sums is None else [s.tobytes() for s in sums],
            renewed=renewed, clipped=clipped, n_leaves=tree.n_leaves,
            split_features=set(tree.nodes["feature_idx"][~tree.nodes["is_leaf"]
                                                         .astype(bool)].tolist())))
    return results


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("case", KERNEL_CASES, ids=[str(c) for c in KERNEL_CASES])
def test_kernel_loop_grows_the_python_loops_tree(case, n_threads):
    kernel, python = _grow_both_ways(case, n_threads)
    assert kernel["n_leaves"] > 2
    if "layout" in case:  # the mostly-zero columns take part
        assert kernel["split_features"] & set(range(6, 12))
    if case.get("layout") == "wide":
        assert kernel["split_features"] & set(range(12, 126))
    if case.get("max_leaf_nodes", 31) is None or case.get("max_leaf_nodes", 0) > 4096:
        assert kernel["n_leaves"] > (4096 if case.get("max_depth") is None else 31)
    assert kernel == python


def test_every_local_tree_grows_in_the_kernel(monkeypatch):
    """Every setting of a local fit (layouts, constraints, per-node sampling,
    no leaf limit) takes the kernel loop, never the Python one."""
    from hgbt import HistGBDTClassifier, HistGBDTRegressor

    def python_loop(self, *args):
        raise AssertionError("a local fit took the Python loop")

    # the per-node interface serves only a loop in Python
    monkeypatch.setattr(LocalTrainingData, "node_histogram", python_loop)
    monkeypatch.setattr(LocalTrainingData, "split", python_loop)
    rng = np.random.default_rng(0)
    X = _with_sparse_columns(rng.normal(size=(3000, 6)), rng, False)
    y = X[:, 0] + X[:, 6] + rng.normal(size=3000)
    X[rng.random(X.shape) < 0.05] = np.nan
    import scipy.sparse as sp
    for params in (dict(), dict(interaction_cst="pairwise"), dict(colsample_bynode=0.5),
                   dict(max_leaf_nodes=None, max_depth=4),
                   dict(use_quantized_grad=True, subsample=0.5),
                   dict(data_sample_strategy="goss", monotonic_cst=[1] + [0] * 11)):
        HistGBDTRegressor(max_iter=3, early_stopping=False, **params).fit(X, y)
        HistGBDTRegressor(max_iter=3, early_stopping=False, **params).fit(
            sp.csr_matrix(np.nan_to_num(X)), y)
    HistGBDTClassifier(max_iter=3, colsample_bynode=0.5, interaction_cst="no_interactions",
                       early_stopping=False).fit(X, (y > 0) + (y > 1))


def test_kernel_rejects_inconsistent_buffers():
    from hgbt.tree._grower import Growth, TreeKernel
    from hgbt.tree._splitting import SplitSettings

    X, Xb, mapper, g, h = make_problem(4, n_samples=300)
    rows = np.arange(300, dtype=np.uint32)
    settings = SplitSettings(mapper.n_bins_non_missing_, mapper.missing_bin,
                             min_samples_leaf=5)
    buffers = dict(layout=FeatureLayout.plain(Xb, mapper.n_bins_non_missing_),
                   rows=rows, buffer=np.empty(300, dtype=np.uint32), gradients=g, hessians=h,
                   ordered_gradients=np.empty(300, dtype=G_H_DTYPE),
                   ordered_hessians=np.empty(300, dtype=G_H_DTYPE))
    growth = Growth(max_leaf_nodes=8)
    kernel = TreeKernel(5, 5, mapper.missing_bin + 1)

    def grow(kernel=kernel, settings=settings, growth=growth, n_root=300, tree_mask=None,
             node_masks=None, **changes):
        return kernel.grow(settings, growth, {**buffers, **changes}, n_root=n_root,
                           tree_mask=tree_mask, node_masks=node_masks)

    assert grow().shape[0] > 1
    for bad in (dict(n_root=301), dict(buffer=np.empty(10, dtype=np.uint32)),
                dict(tree_mask=np.ones(4, dtype=np.uint8)),
                dict(growth=Growth(interaction_groups=np.ones((2, 4), dtype=np.uint8)))):
        with pytest.raises(ValueError, match="TreeKernel.grow"):
            grow(**bad)
    with pytest.raises(ValueError, match="max_leaf_nodes must be at least 2"):
        Growth(max_leaf_nodes=1)
    with pytest.raises(ValueError, match="TreeKernel.grow"):
        grow(kernel=TreeKernel(6, 6, mapper.missing_bin + 1))
    with pytest.raises(ValueError, match="TreeKernel.grow"):  # a width per column
        narrow = FeatureLayout.plain(Xb, mapper.n_bins_non_missing_)
        narrow.column_width = narrow.column_width[:3]
        grow(layout=narrow)
    other = SplitSettings(mapper.n_bins_non_missing_[:4], mapper.missing_bin)
    with pytest.raises(ValueError, match="TreeKernel.grow"):
        grow(settings=other)
    # a failing node-mask source is raised, not swallowed
    def broken(k):
        raise RuntimeError("no masks")
    with pytest.raises(RuntimeError, match="no masks"):
        grow(node_masks=broken)
    with pytest.raises(ValueError, match="node_masks"):
        grow(node_masks=lambda k: np.ones((k, 3), np.uint8))
    assert grow().shape[0] > 1  # still usable
