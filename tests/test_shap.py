"""TreeSHAP contributions and interaction values (``_shap_table.pyx`` and
``_shap.pyx`` through ``hgbt.model.contributions``, and the estimators'
``predict_contributions`` / ``predict_interactions``) against Shapley values
computed by brute force, and the two kernels against each other."""
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from hgbt import HistGBDTRegressor
from hgbt.model import contributions as contrib
from hgbt.model._shap_table import tree_widths
from hgbt.tree.predictor import ForestPredictor, TreePredictor
from fitted import baseline_prediction, rounds
from reference_trees import conditional_value, data, fitted, random_rows, random_tree


# ----------------------------------------------------------- the references
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


def fitted_trees(n_features=4):
    """The trees of a small fitted model with a categorical feature and NaN."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, n_features))
    X[:, 0] = rng.integers(0, 5, size=400)
    X[rng.random(X.shape) < 0.15] = np.nan
    y = np.nan_to_num(X[:, 1]) * (X[:, 0] == 2) + np.nan_to_num(X[:, 2]) ** 2
    model = HistGBDTRegressor(max_iter=3, max_leaf_nodes=8, categorical_features=[0],
                              early_stopping=False, random_state=0).fit(X, y)
    return [trees[0] for trees in rounds(model)], X


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
@pytest.fixture
def tables_for_any_rows(monkeypatch):
    """Tables however few rows are explained (the reference cases have few)."""
    monkeypatch.setattr(contrib, "TABLE_ROW_SHARE", math.inf)


@pytest.fixture(params=["tables", "recursion"])
def kernel(request, monkeypatch, tables_for_any_rows):
    """Contributions from the per-leaf tables (``_shap_table.pyx``, every tree
    here fits) or from TreeSHAP's recursion (``_shap.pyx``, no tree fits)."""
    if request.param == "recursion":
        monkeypatch.setattr(contrib, "TABLE_FEATURES", -1)
    return request.param


def tabled_trees(forest, n_rows=1):
    return contrib.split_forest(forest, n_rows)[0].size


@pytest.mark.parametrize("case", range(9))
def test_contributions_equal_brute_force_shapley(case, kernel):
    tree, X = tree_cases()[case]
    n_features = X.shape[1]
    assert tabled_trees(forest_of(tree)) == (kernel == "tables")
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


def test_forest_adds_trees_per_output(kernel):
    # two outputs: each sums its own trees
    trees = [tree for tree, _ in tree_cases()[:4]]
    X = random_rows(np.random.default_rng(1), 5, 3, np.array([True, False, False]))
    phi = contrib.contributions(ForestPredictor([trees[:2], trees[2:]]), X, 2)
    for k in range(2):
        expected = sum(contrib.contributions(forest_of(t), X, 1)[:, 0]
                       for t in trees[k::2])
        np.testing.assert_allclose(phi[:, k], expected, rtol=0, atol=1e-12)


# --------------------------------------------------- tables against recursion
def deep_forest(seed, n_features=20, n_trees=3, depth=16):
    """Random trees deep enough that some paths split on more than
    ``TABLE_FEATURES`` distinct features, and rows for them."""
    rng = np.random.default_rng(seed)
    categorical = np.arange(n_features) % 4 == 0
    trees = [random_tree(rng, n_features, categorical, depth=depth) for _ in range(n_trees)]
    return trees, random_rows(rng, 70, n_features, categorical)


def recursion_only(forest, X, n_outputs, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(contrib, "TABLE_FEATURES", -1)
        assert tabled_trees(forest) == 0
        return contrib.contributions(forest, X, n_outputs)


def widths(forest):
    return tree_widths(forest.nodes, forest.tree_starts)[0]


@pytest.mark.parametrize("seed", range(3))
def test_tables_and_recursion_agree_on_a_mixed_forest(seed, monkeypatch,
                                                      tables_for_any_rows):
    trees, X = deep_forest(seed)
    small, X_small = tree_cases()[seed]
    forest = ForestPredictor([[tree] for tree in trees + [small]])
    tabled, walked = contrib.split_forest(forest, 1)
    # the deep trees take the recursion, the small one the tables
    assert walked.size and tabled.size
    assert (widths(forest)[walked] > contrib.TABLE_FEATURES).all()
    X = np.hstack([X_small, X[:X_small.shape[0], 3:]])
    np.testing.assert_allclose(contrib.contributions(forest, X, 1),
                               recursion_only(forest, X, 1, monkeypatch), rtol=0, atol=1e-12)


def test_tables_agree_at_the_cap(monkeypatch, tables_for_any_rows):
    # a tree right at the cap is tabled, one feature more is not; same values
    trees, X = deep_forest(7, n_trees=1, depth=12)
    forest = ForestPredictor([[tree] for tree in trees])
    width = int(widths(forest)[0])
    assert width >= 8
    expected = recursion_only(forest, X, 1, monkeypatch)
    for cap, tabled in [(width, 1), (width - 1, 0)]:
        monkeypatch.setattr(contrib, "TABLE_FEATURES", cap)
        assert tabled_trees(forest) == tabled
        np.testing.assert_allclose(contrib.contributions(forest, X, 1), expected,
                                   rtol=0, atol=1e-12)


def test_table_budget_leaves_the_rest_to_the_recursion(monkeypatch, tables_for_any_rows):
    trees = [tree for tree, _ in tree_cases()]
    forest = ForestPredictor([[tree] for tree in trees])
    sizes = tree_widths(forest.nodes, forest.tree_starts)[1]
    monkeypatch.setattr(contrib, "TABLE_VALUES", int(sizes[:4].sum()))
    tabled, walked = contrib.split_forest(forest, 1)
    assert tabled.tolist() == [0, 1, 2, 3]
    assert walked.tolist() == list(range(4, len(trees)))


def test_a_child_without_rows_is_not_tabled():
    tree, X = tree_cases()[0]
    nodes = tree.nodes.copy()
    leaf = int(np.flatnonzero(nodes["is_leaf"])[0])
    nodes["count"][leaf] = 0  # a zero fraction: the tables' ratio (1 - z) / z is undefined
    forest = forest_of(TreePredictor(nodes, tree.cat_bitsets))
    assert widths(forest)[0] > contrib.TABLE_FEATURES
    assert tabled_trees(forest, 10**9) == 0


def test_few_rows_take_the_recursion():
    # building a table costs about what a row's recursion does: not for one row
    model, X = fitted("regressor")
    forest = ForestPredictor(rounds(model))
    _, sizes, slots = tree_widths(forest.nodes, forest.tree_starts)
    assert tabled_trees(forest, 1) == 0
    assert tabled_trees(forest, X.shape[0]) == forest.n_trees
    # in between, the trees with the smaller tables per path feature
    n_rows = int(np.median(sizes / slots / contrib.TABLE_ROW_SHARE))
    tabled = contrib.split_forest(forest, n_rows)[0]
    assert 0 < tabled.size < forest.n_trees
    assert (sizes / slots)[tabled].max() < np.delete(sizes / slots, tabled).min()


def test_tables_and_recursion_agree_on_multiclass_models(monkeypatch):
    model, X = fitted("multiclass")
    forest = ForestPredictor(rounds(model))
    n_outputs = model.classes_.size
    assert tabled_trees(forest, X.shape[0]) == forest.n_trees
    np.testing.assert_allclose(contrib.contributions(forest, X, n_outputs),
                               recursion_only(forest, X, n_outputs, monkeypatch),
                               rtol=0, atol=1e-12)


def test_mixed_forest_thread_count_does_not_change_a_bit(tables_for_any_rows):
    trees, X = deep_forest(1)
    forest = ForestPredictor([trees[:2], [trees[2], tree_cases()[0][0]]])
    X = np.tile(X, (3, 1))  # enough rows for a team of threads
    assert 0 < tabled_trees(forest) < forest.n_trees
    one = contrib.contributions(forest, X, 2, n_threads=1)
    assert one.tobytes() == contrib.contributions(forest, X, 2, n_threads=2).tobytes()


# ------------------------------------------------------------ the estimators
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
    means = np.zeros(baseline_prediction(model).shape)
    for trees in rounds(model):
        for k, tree in enumerate(trees):
            leaves = tree.nodes[tree.nodes["is_leaf"] == 1]
            means[k] += (leaves["value"] * leaves["count"]).sum() / tree.nodes["count"][0]
    np.testing.assert_allclose(phi[..., -1], np.broadcast_to(
        baseline_prediction(model) + means, phi.shape[:-1]), rtol=0, atol=1e-12)


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
