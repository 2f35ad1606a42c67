"""HistGBDTRegressor: determinism, quality against scikit-learn, input validation."""
import pickle
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import NotFittedError
from sklearn.metrics import mean_squared_error

import hgbt
from hgbt import HistGBDTRegressor
from hgbt.core._openmp import openmp_enabled
from hgbt.datasets import make_regression_task
from fitted import all_trees


def _rmse(y, p):
    return mean_squared_error(y, p) ** 0.5


def _node_arrays(model):
    return [p.nodes for p in all_trees(model)]


@pytest.fixture(scope="module")
def task():
    X, y = make_regression_task(n_samples=40_000, n_features=12, random_state=1)
    return X[:30_000], y[:30_000], X[30_000:], y[30_000:]


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP")
@pytest.mark.parametrize("grow_policy", ["lossguide", "depthwise"])
def test_bit_identical_across_thread_counts(task, grow_policy):
    # Large enough that histograms, partitions and prediction take their
    # parallel paths.
    X, y, X_test, _ = task
    params = dict(max_iter=15, grow_policy=grow_policy, random_state=0,
                  early_stopping=False,
                  max_depth=6 if grow_policy == "depthwise" else None)
    m1 = HistGBDTRegressor(n_threads=1, **params).fit(X, y)
    m2 = HistGBDTRegressor(n_threads=2, **params).fit(X, y)
    for a, b in zip(_node_arrays(m1), _node_arrays(m2), strict=True):
        assert a.tobytes() == b.tobytes()
    assert np.array_equal(m1.predict(X_test), m2.predict(X_test))


def test_same_random_state_same_model(task):
    X, y, X_test, _ = task
    a = HistGBDTRegressor(max_iter=5, random_state=3).fit(X, y)
    b = HistGBDTRegressor(max_iter=5, random_state=3).fit(X, y)
    assert np.array_equal(a.predict(X_test), b.predict(X_test))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rmse_matches_sklearn(seed):
    # Friedman #1 (sines, products, squares) with 5% of X missing. A
    # well-conditioned task: both models converge to the same place, so the
    # comparison measures the algorithm rather than path chaos.
    X, y = make_friedman1(30_000, n_features=10, noise=1.0, random_state=seed)
    X[np.random.default_rng(seed).random(X.shape) < 0.05] = np.nan
    X_train, y_train, X_test, y_test = X[:20_000], y[:20_000], X[20_000:], y[20_000:]
    ours = HistGBDTRegressor(max_iter=100, learning_rate=0.1, max_leaf_nodes=31,
                             min_samples_leaf=20, max_bins=255, early_stopping=False,
                             l2_regularization=0.0, random_state=0)
    theirs = HistGradientBoostingRegressor(
        max_iter=100, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20,
        max_bins=255, early_stopping=False, random_state=0)
    r_ours = _rmse(y_test, ours.fit(X_train, y_train).predict(X_test))
    r_theirs = _rmse(y_test, theirs.fit(X_train, y_train).predict(X_test))
    assert abs(r_ours / r_theirs - 1) < 0.01, (r_ours, r_theirs)
    # And it learnt something: far better than predicting the mean.
    assert r_ours < 0.5 * np.std(y_test)


def test_learning_reduces_training_loss(task):
    X, y, _, _ = task
    errors = [_rmse(y, HistGBDTRegressor(max_iter=k, random_state=0).fit(X, y).predict(X))
              for k in (1, 10, 50)]
    assert errors[0] > errors[1] > errors[2]


@pytest.mark.parametrize("grow_policy", ["lossguide", "depthwise"])
def test_tree_limits_respected(task, grow_policy):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=5, grow_policy=grow_policy, max_leaf_nodes=7,
                          max_depth=3, min_samples_leaf=50).fit(X, y)
    for p in all_trees(m):
        leaves = p.nodes[p.nodes["is_leaf"] == 1]
        assert len(leaves) <= 7
        assert leaves["depth"].max() <= 3
        assert leaves["count"].min() >= 50


def test_unit_weights_equal_no_weights(task):
    # The constant-hessian path equals the general (weighted) one.
    X, y, X_test, _ = task
    a = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    b = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y, sample_weight=np.ones(len(y)))
    assert np.array_equal(a.predict(X_test), b.predict(X_test))


@pytest.mark.parametrize("continuous", [False, True])
def test_integer_weights_equal_repeated_rows(continuous):
    # Weighted binning (weights in place of row counts), gradients,
    # hessians and the baseline all treat weight k like k copies of a row.
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(2000, 4)) if continuous       # greedy bins
         else rng.integers(0, 20, size=(2000, 4)).astype(float))  # one bin per value
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(size=2000)
    w = rng.integers(1, 4, size=2000)
    # no hold-out: it would draw different rows from the weighted and the repeated data
    params = dict(max_iter=10, min_samples_leaf=1, random_state=0, early_stopping=False)
    a = HistGBDTRegressor(**params).fit(X, y, sample_weight=w)
    b = HistGBDTRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-8)


def test_zero_weights_allowed_and_ignored_in_mean():
    X = np.zeros((100, 2))
    y = np.r_[np.ones(50), np.full(50, 100.0)]
    w = np.r_[np.ones(50), np.zeros(50)]
    m = HistGBDTRegressor(max_iter=3).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(m.predict(X[:1]), 1.0)


def test_float32_and_float64_input_agree(task):
    X, y, X_test, _ = task
    m = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    assert np.array_equal(m.predict(X_test), m.predict(X_test.astype(np.float64)))
    m64 = HistGBDTRegressor(max_iter=10, random_state=0).fit(X.astype(np.float64), y)
    assert np.array_equal(m.predict(X_test), m64.predict(X_test))


def test_inf_and_nan_in_X():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    X[::7, 0] = np.inf
    X[::11, 0] = -np.inf
    X[::5, 1] = np.nan
    y = np.where(np.isposinf(X[:, 0]), 10.0, 0.0) + np.where(np.isnan(X[:, 1]), -5.0, 0.0)
    m = HistGBDTRegressor(max_iter=50, learning_rate=0.3).fit(X, y)
    pred = m.predict(X)
    assert np.all(np.isfinite(pred))
    assert _rmse(y, pred) < 0.05 * np.std(y)


def test_constant_and_all_nan_columns():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.full(500, 3.0), np.full(500, np.nan), rng.normal(size=500)])
    y = 3 * X[:, 2]
    m = HistGBDTRegressor(max_iter=20).fit(X, y)
    used = {int(f) for p in all_trees(m) for f in p.nodes["feature_idx"][p.nodes["is_leaf"] == 0]}
    assert used == {2}
    assert m.score(X, y) > 0.9


def test_too_few_samples_gives_constant_model(tmp_path):
    # No split is possible (10 rows, min_samples_leaf=20): the fit stops before
    # a round of one-leaf trees, which would only add rounding noise (LightGBM
    # stops too), so the model is the baseline, and it saves and loads.
    X, y = np.arange(10.0).reshape(-1, 1), np.arange(10.0)
    m = HistGBDTRegressor(max_iter=3).fit(X, y)
    np.testing.assert_allclose(m.predict(X), y.mean())
    assert m.n_iter_ == 0 and list(m.staged_predict(X)) == []
    m.save_model(tmp_path / "m.json")
    for other in (hgbt.load_model(tmp_path / "m.json"), pickle.loads(pickle.dumps(m))):
        assert other.predict(X).tobytes() == m.predict(X).tobytes()
    # with column sampling a one-leaf round does not end the fit
    assert HistGBDTRegressor(max_iter=3, colsample_bytree=0.9).fit(X, y).n_iter_ == 3


def test_fitted_attributes(task):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=7).fit(X, y)
    assert m.n_iter_ == 7
    assert m.n_features_in_ == X.shape[1]


def test_inputs_not_modified(task):
    X, y, _, _ = task
    X, y = X[:2000].copy(), y[:2000].copy()
    w = np.linspace(0.5, 2, len(y))
    copies = X.copy(), y.copy(), w.copy()
    HistGBDTRegressor(max_iter=5).fit(X, y, sample_weight=w).predict(X)
    for before, after in zip(copies, (X, y, w)):
        assert np.array_equal(before, after, equal_nan=True)


def test_pickle_round_trip(task):
    X, y, X_test, _ = task
    m = HistGBDTRegressor(max_iter=5).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    assert np.array_equal(m.predict(X_test), m2.predict(X_test))


@pytest.mark.parametrize("y_bad, match", [
    (np.nan, "NaN"), (np.inf, "infinity"),
])
def test_non_finite_y_rejected(y_bad, match):
    X, y = np.zeros((10, 2)), np.zeros(10)
    y[3] = y_bad
    with pytest.raises(ValueError, match=match):
        HistGBDTRegressor().fit(X, y)


def test_bad_shapes_rejected():
    with pytest.raises(ValueError, match="2D array"):
        HistGBDTRegressor().fit(np.zeros(10), np.zeros(10))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        HistGBDTRegressor().fit(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="0 feature"):
        HistGBDTRegressor().fit(np.zeros((10, 0)), np.zeros(10))
    with pytest.raises(ValueError, match="sample_weight"):
        HistGBDTRegressor().fit(np.zeros((10, 2)), np.zeros(10), sample_weight=np.ones(3))


def test_non_numeric_X_rejected():
    X = np.array([["a", "b"], ["c", "d"]], dtype=object)
    with pytest.raises(ValueError, match="could not convert"):
        HistGBDTRegressor().fit(X, np.zeros(2))


def test_wrong_feature_count_at_predict(task):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match=f"expecting {X.shape[1]} features"):
        m.predict(X[:, :-1])


def test_negative_or_all_zero_weights_rejected():
    X, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ValueError, match="[Nn]egative"):
        HistGBDTRegressor().fit(X, y, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="non-zero"):
        HistGBDTRegressor().fit(X, y, sample_weight=np.zeros(10))


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        HistGBDTRegressor().predict(np.zeros((2, 2)))


@pytest.mark.parametrize("params", [
    {"learning_rate": 0}, {"max_iter": 0}, {"max_leaf_nodes": 1}, {"max_depth": 0},
    {"min_samples_leaf": 0}, {"l2_regularization": -1}, {"max_bins": 256},
    {"max_bins": 1}, {"grow_policy": "leafwise"}, {"n_threads": 0},
    {"min_child_weight": -1}, {"min_gain_to_split": -0.1},
])
def test_invalid_parameters(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        HistGBDTRegressor(**params).fit(np.zeros((10, 2)), np.zeros(10))


def test_verbose_prints_one_line_per_round(task, capsys):
    X, y, _, _ = task
    HistGBDTRegressor(max_iter=3, max_leaf_nodes=31, verbose=1).fit(X[:1000], y[:1000])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("[1/3] train loss: ")
    assert lines[-1].startswith("Stopped after round 3 of 3")


def test_demo_entry_point(tmp_path):
    # Run outside the source tree so the installed package is the one imported.
    out = subprocess.run(
        [sys.executable, "-m", "hgbt", "--n-samples", "5000", "--max-iter", "10"],
        capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert "test R^2" in out and "fit" in out
