"""TreeSHAP contributions and interaction values (``_shap.pyx`` through
``hgbt.tree.contributions``, and the estimators' ``predict_contributions`` /
``predict_interactions``) against Shapley values computed by brute force."""
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._types import BITSET_DTYPE, NODE_DTYPE
from hgbt.tree import contributions as contrib
from hgbt.tree.predictor import ForestPredictor, TreePredictor


# ----------------------------------------------------------- the references
def goes_left(nodes, bitsets, j, x):
    """The routing rule of prediction, in Python."""
    v = float(x[int(nodes["feature_idx"][j])])
    if math.isnan(v):
        return bool(nodes["missing_go_to_left"][j])
    if nodes["is_categorical"][j]:
        if 0 <= v < 256 and v == int(v):
            code = int(v)
            return bool((int(bitsets[nodes["bitset_idx"][j], code // 32]) >> (code % 32)) & 1)
        return bool(nodes["missing_go_to_left"][j])
    return v <= float(nodes["num_threshold"][j])


def conditional_value(tree, x, present, j=0):
    """v(S): the tree's output with the features in ``present`` set to ``x``'s
    values and the others integrated out, each branch weighted by its share of
    the node's training rows."""
    nodes = tree.nodes
    if nodes["is_leaf"][j]:
        return float(nodes["value"][j])
    left, right = int(nodes["left"][j]), int(nodes["right"][j])
    if int(nodes["feature_idx"][j]) in present:
        child = left if goes_left(nodes, tree.cat_bitsets, j, x) else right
        return conditional_value(tree, x, present, child)
    count = float(nodes["count"][j])
    return sum(nodes["count"][c] / count * conditional_value(tree, x, present, c)
               for c in (left, right))


def subsets(players):
    for size in range(len(players) + 1):
        yield from itertools.combinations(players, size)


def brute_shapley(tree, x, n_features):
    """Every feature's Shapley value of the game ``conditional_value``, by
    enumerating all subsets of the other features."""
    phi = np.zeros(n_features)
    for i in range(n_features):
        others = [f for f in range(n_features) if f != i]
        for s in subsets(others):
            weight = (math.factorial(len(s)) * math.factorial(n_features - len(s) - 1)
                      / math.factorial(n_features))
            phi[i] += weight * (conditional_value(tree, x, set(s) | {i})
                                - conditional_value(tree, x, set(s)))
    return phi


def brute_interactions(tree, x, n_features):
    """Shapley interaction indices (halved off the diagonal, main effects on
    it), by enumerating subsets."""
    out = np.zeros((n_features, n_features))
    for i, j in itertools.permutations(range(n_features), 2):
        others = [f for f in range(n_features) if f not in (i, j)]
        for s in subsets(others):
            s = set(s)
            weight = (math.factorial(len(s)) * math.factorial(n_features - len(s) - 2)
                      / (2 * math.factorial(n_features - 1)))
            v = lambda extra: conditional_value(tree, x, s | extra)  # noqa: E731
            out[i, j] += weight * (v({i, j}) - v({i}) - v({j}) + v(set()))
    phi = brute_shapley(tree, x, n_features)
    for i in range(n_features):
        out[i, i] = phi[i] - (out[i].sum() - out[i, i])
    return out


# ------------------------------------------------------------------- trees
def random_tree(rng, n_features, categorical, depth=5):
    """A random tree: few features (so they repeat on paths), categorical
    splits on the ``categorical`` features, random missing directions, leaf
    counts random and inner counts their children's sum."""
    records, bitsets = [], []

    def build(d):
        j = len(records)
        records.append({"depth": d})
        if d == depth or (d > 1 and rng.random() < 0.2):
            records[j].update(is_leaf=1, value=rng.normal(), count=int(rng.integers(1, 40)))
            return records[j]["count"]
        f = int(rng.integers(n_features))
        records[j].update(feature_idx=f, missing_go_to_left=int(rng.integers(2)),
                          gain=rng.random())
        if categorical[f]:
            words = np.zeros(8, dtype=BITSET_DTYPE)
            words[0] = rng.integers(1, 2 ** 6)  # a subset of the codes 0..5
            records[j].update(is_categorical=1, bitset_idx=len(bitsets),
                              num_threshold=np.nan)
            bitsets.append(words)
        else:
            records[j]["num_threshold"] = float(rng.choice([-0.5, 0.0, 0.3, 1.0]))
        records[j]["left"] = len(records)
        count = build(d + 1)
        records[j]["right"] = len(records)
        records[j]["count"] = count + build(d + 1)
        return records[j]["count"]

    build(0)
    nodes = np.zeros(len(records), dtype=NODE_DTYPE)
    for i, record in enumerate(records):
        for key, value in record.items():
            nodes[key][i] = value
    return TreePredictor(nodes, np.array(bitsets, dtype=BITSET_DTYPE).reshape(-1, 8))


def random_rows(rng, n, n_features, categorical):
    X = rng.choice([-1.0, -0.2, 0.0, 0.3, 0.7, 2.0], size=(n, n_features))
    for f in np.flatnonzero(categorical):
        # codes, some unseen or not codes at all: they follow the missing direction
        X[:, f] = rng.choice([0, 1, 2, 3, 4, 5, 7, 300, -1, 2.5], size=n)
    X[rng.random(X.shape) < 0.2] = np.nan
    return X


def fitted_trees(n_features=4):
    """The trees of a small fitted model with a categorical feature and NaN."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, n_features))
    X[:, 0] = rng.integers(0, 5, size=400)
    X[rng.random(X.shape) < 0.15] = np.nan
    y = np.nan_to_num(X[:, 1]) * (X[:, 0] == 2) + np.nan_to_num(X[:, 2]) ** 2
    model = HistGBDTRegressor(max_iter=3, max_leaf_nodes=8, categorical_features=[0],
                              early_stopping=False, random_state=0).fit(X, y)
    return [trees[0] for trees in model._predictors], X


def tree_cases():
    rng = np.random.default_rng(0)
    categorical = np.array([True, False, False])
    cases = [(random_tree(rng, 3, categorical), random_rows(rng, 6, 3, categorical))
             for _ in range(6)]
    trees, X = fitted_trees()
    return cases + [(tree, X[:6]) for tree in trees]


def forest_of(tree):
    return ForestPredictor([[tree]])


# ------------------------------------------------------ kernel vs reference
@pytest.mark.parametrize("case", range(9))
def test_contributions_equal_brute_force_shapley(case):
    tree, X = tree_cases()[case]
    n_features = X.shape[1]
    phi = contrib.contributions(forest_of(tree), X, 1)[:, 0]
    for x, row in zip(X, phi):
        np.testing.assert_allclose(row[:-1], brute_shapley(tree, x, n_features),
                                   rtol=0, atol=1e-10)
        # the expected value: every feature absent
        assert row[-1] == pytest.approx(conditional_value(tree, x, set()), abs=1e-12)


def repeats_on_a_path(nodes, j=0, above=()):
    """Whether a feature is split on twice along some root-to-leaf path."""
    if nodes["is_leaf"][j]:
        return False
    f = int(nodes["feature_idx"][j])
    return f in above or any(repeats_on_a_path(nodes, int(c), above + (f,))
                             for c in (nodes["left"][j], nodes["right"][j]))


def test_cases_cover_repeated_categorical_and_missing_splits():
    # the reference cases hold what they are meant to test
    seen = set()
    for tree, X in tree_cases():
        nodes = tree.nodes[tree.nodes["is_leaf"] == 0]
        seen |= {"categorical"} if nodes["is_categorical"].any() else set()
        seen |= {"missing"} if np.isnan(X).any() else set()
        if repeats_on_a_path(tree.nodes):
            seen.add("repeated")
    assert seen == {"categorical", "missing", "repeated"}


@pytest.mark.parametrize("case", [0, 1, 6])
def test_interactions_equal_brute_force(case):
    tree, X = tree_cases()[case]
    n_features = X.shape[1]
    out = contrib.interactions(forest_of(tree), X[:3], 1)[:, 0]
    for x, matrix in zip(X[:3], out):
        np.testing.assert_allclose(matrix[:-1, :-1], brute_interactions(tree, x, n_features),
                                   rtol=0, atol=1e-10)
        assert matrix[-1, :-1].tolist() == [0.0] * n_features
        assert matrix[:-1, -1].tolist() == [0.0] * n_features


def test_forest_adds_trees_per_output():
    # two outputs: each sums its own trees
    trees = [tree for tree, _ in tree_cases()[:4]]
    X = random_rows(np.random.default_rng(1), 5, 3, np.array([True, False, False]))
    phi = contrib.contributions(ForestPredictor([trees[:2], trees[2:]]), X, 2)
    for k in range(2):
        expected = sum(contrib.contributions(forest_of(t), X, 1)[:, 0]
                       for t in trees[k::2])
        np.testing.assert_allclose(phi[:, k], expected, rtol=0, atol=1e-12)


# ------------------------------------------------------------ the estimators
def data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 3] = rng.integers(0, 7, size=n)
    X[rng.random(X.shape) < 0.1] = np.nan
    score = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + (X[:, 3] == 2)
    return X, score


def fitted(kind, n_threads=2):
    X, score = data()
    params = dict(max_iter=15, max_leaf_nodes=15, categorical_features=[3],
                  n_threads=n_threads, random_state=0, early_stopping=False)
    if kind == "regressor":
        return HistGBDTRegressor(**params).fit(X, score), X
    if kind == "binary":
        return HistGBDTClassifier(**params).fit(X, score > 0.5), X
    return HistGBDTClassifier(**params).fit(X, np.digitize(score, [-0.5, 0.5, 1.5])), X


def raw_score(model, X):
    """The raw score: the squared-error regressor's prediction (identity link)
    or the classifier's decision function."""
    return model.decision_function(X) if hasattr(model, "classes_") else model.predict(X)


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_local_accuracy(kind):
    model, X = fitted(kind)
    phi = model.predict_contributions(X)
    raw = raw_score(model, X)
    if kind == "multiclass":
        assert phi.shape == (X.shape[0], model.classes_.size, X.shape[1] + 1)
    else:
        assert phi.shape == (X.shape[0], X.shape[1] + 1)
    np.testing.assert_allclose(phi.sum(axis=-1), raw, rtol=0, atol=1e-10)
    # the last column: baseline plus each tree's count-weighted mean leaf
    means = np.zeros(model._baseline_prediction.shape)
    for trees in model._predictors:
        for k, tree in enumerate(trees):
            leaves = tree.nodes[tree.nodes["is_leaf"] == 1]
            means[k] += (leaves["value"] * leaves["count"]).sum() / tree.nodes["count"][0]
    np.testing.assert_allclose(phi[..., -1], np.broadcast_to(
        model._baseline_prediction + means, phi.shape[:-1]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_interactions_sum_to_contributions(kind):
    model, X = fitted(kind)
    X = X[:80]
    inter = model.predict_interactions(X)
    phi = model.predict_contributions(X)
    np.testing.assert_allclose(inter.sum(axis=-1), phi, rtol=0, atol=1e-10)
    np.testing.assert_allclose(inter, np.swapaxes(inter, -1, -2), rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["predict_contributions", "predict_interactions"])
def test_thread_count_does_not_change_a_bit(method):
    model, X = fitted("multiclass")
    X = X[:300] if method == "predict_interactions" else X
    one = getattr(model.set_params(n_threads=1), method)(X)
    two = getattr(model.set_params(n_threads=2), method)(X)
    assert one.tobytes() == two.tobytes()


def test_sparse_input_equals_dense():
    model, X = fitted("binary")
    X_sparse = np.where(np.abs(np.nan_to_num(X, nan=1.0)) < 0.7, 0.0, X)  # many zeros
    dense = model.predict_contributions(X_sparse)
    for fmt in ("csr", "csc", "coo"):
        out = model.predict_contributions(sp.csr_matrix(X_sparse).asformat(fmt))
        assert out.tobytes() == dense.tobytes()
    old = contrib.BLOCK_VALUES
    try:  # several blocks of rows
        contrib.BLOCK_VALUES = 7 * X.shape[1]
        assert model.predict_contributions(sp.csr_matrix(X_sparse)).tobytes() == dense.tobytes()
    finally:
        contrib.BLOCK_VALUES = old


def test_unused_feature_gets_nothing():
    X, score = data()
    X[:, 4] = 1.0  # constant: never split on
    model = HistGBDTRegressor(max_iter=5, categorical_features=[3]).fit(X, score)
    assert not model.predict_contributions(X)[:, 4].any()
