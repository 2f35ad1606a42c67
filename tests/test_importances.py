"""feature_importances_: total split gain or split count per feature, normalised."""
import pickle

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from hgbt import HistGBDTClassifier, HistGBDTRegressor, load_model
from fitted import all_trees, rounds


def _recount(model, importance_type):
    """Brute force: walk every node of every stored tree."""
    totals = np.zeros(model.n_features_in_)
    n_trees = 0
    for trees in rounds(model):
        for tree in trees:
            n_trees += 1
            for node in tree.nodes:
                if not node["is_leaf"]:
                    totals[int(node["feature_idx"])] += (
                        float(node["gain"]) if importance_type == "gain" else 1.0)
    assert n_trees == model.n_iter_ * model.n_trees_per_iteration_
    return totals


def _data(n=2000, n_features=6, seed=0, nan=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    y = 3.0 * X[:, 2] + 0.5 * X[:, 4] + 0.1 * rng.normal(size=n)
    X[rng.random(X.shape) < nan] = np.nan
    return X, y


@pytest.mark.parametrize("importance_type", ["gain", "split"])
def test_matches_brute_force_recount(importance_type):
    X, y = _data()
    m = HistGBDTRegressor(max_iter=15, importance_type=importance_type,
                          random_state=0).fit(X, y)
    totals = _recount(m, importance_type)
    assert totals.sum() > 0
    imp = m.feature_importances_
    assert imp.shape == (X.shape[1],)
    np.testing.assert_allclose(imp, totals / totals.sum(), rtol=1e-12, atol=0)
    assert imp.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(imp >= 0)


def test_informative_feature_dominates():
    X, y = _data(seed=1)
    m = HistGBDTRegressor(max_iter=30, random_state=0).fit(X, y)
    gain = m.feature_importances_
    assert np.argmax(gain) == 2
    assert gain[2] > 0.8
    assert gain[4] > max(gain[[0, 1, 3, 5]])  # the weaker signal comes second
    m.set_params(importance_type="split")
    assert np.argmax(m.feature_importances_) == 2


def test_split_importances_are_counts_over_total():
    X, y = _data(seed=2)
    m = HistGBDTRegressor(max_iter=10, importance_type="split", random_state=0).fit(X, y)
    n_splits = sum(int((t.nodes["is_leaf"] == 0).sum())
                   for t in all_trees(m))
    counts = m.feature_importances_ * n_splits
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    np.testing.assert_array_equal(np.round(counts), _recount(m, "split"))
    assert np.round(counts).sum() == n_splits


def test_importance_type_is_read_at_access():
    X, y = _data(seed=3)
    m = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    gain = m.feature_importances_
    m.set_params(importance_type="split")
    split = m.feature_importances_
    assert not np.allclose(gain, split)
    np.testing.assert_allclose(split, _recount(m, "split") / _recount(m, "split").sum())


@pytest.mark.parametrize("importance_type", ["gain", "split"])
def test_multiclass_sums_all_class_trees(importance_type):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1500, 5))
    # Class 0 vs rest depends on feature 0, class 1 vs 2 on feature 3.
    y = np.where(X[:, 0] > 0.5, "zero", np.where(X[:, 3] > 0, "one", "two"))
    m = HistGBDTClassifier(max_iter=8, importance_type=importance_type,
                           random_state=0).fit(X, y)
    assert m.n_trees_per_iteration_ == 3
    totals = _recount(m, importance_type)
    np.testing.assert_allclose(m.feature_importances_, totals / totals.sum(), rtol=1e-12)
    # Not just the first class's trees: those alone give another answer.
    first = np.zeros(5)
    for trees in rounds(m):
        nodes = trees[0].nodes[trees[0].nodes["is_leaf"] == 0]
        np.add.at(first, nodes["feature_idx"].astype(int),
                  nodes["gain"] if importance_type == "gain" else 1.0)
    assert not np.allclose(first / first.sum(), m.feature_importances_)
    assert set(np.argsort(m.feature_importances_)[-2:]) == {0, 3}


def test_binary_classifier():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 4))
    y = X[:, 1] > 0
    m = HistGBDTClassifier(max_iter=10, random_state=0).fit(X, y)
    assert np.argmax(m.feature_importances_) == 1
    totals = _recount(m, "gain")
    np.testing.assert_allclose(m.feature_importances_, totals / totals.sum(), rtol=1e-12)


def test_all_zeros_without_any_split():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 3))
    y = rng.normal(size=100)
    # No child can hold min_samples_leaf rows: every tree is a single leaf.
    m = HistGBDTRegressor(max_iter=3, min_samples_leaf=60).fit(X, y)
    assert all(t.nodes.shape[0] == 1 for t in all_trees(m))
    for importance_type in ("gain", "split"):
        m.set_params(importance_type=importance_type)
        imp = m.feature_importances_
        assert imp.shape == (3,)
        np.testing.assert_array_equal(imp, np.zeros(3))


@pytest.mark.parametrize("Estimator", [HistGBDTRegressor, HistGBDTClassifier])
def test_not_fitted(Estimator):
    m = Estimator()
    with pytest.raises(NotFittedError):
        m.feature_importances_
    assert not hasattr(m, "feature_importances_")


def test_invalid_importance_type_set_after_fit():
    X, y = _data(n=300)
    m = HistGBDTRegressor(max_iter=2).fit(X, y)
    m.importance_type = "cover"
    with pytest.raises(ValueError, match="importance_type"):
        m.feature_importances_


def test_survives_persistence(tmp_path):
    X, y = _data(seed=7)
    m = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    m.save_model(tmp_path / "m.json")
    for other in (pickle.loads(pickle.dumps(m)), load_model(tmp_path / "m.json")):
        np.testing.assert_array_equal(other.feature_importances_, m.feature_importances_)
