"""Partial dependence by the recursion method (``_partial_dependence.pyx``,
``hgbt.inspection``) against a Python walk of the node arrays and, for trees
of one split, against the brute-force average over the training rows."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import hgbt
from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.model import contributions as contrib
from hgbt.tree.predictor import ForestPredictor
from fitted import baseline_prediction, rounds
from reference_trees import (conditional_value, data, fitted, plan_frame, random_rows,
                             random_tree)


def reference_pd(trees_by_output, grid, features, baseline):
    """Per output, the baseline plus each tree's weighted walk (Python)."""
    n_features = max(features) + 1
    out = np.zeros((len(baseline), grid.shape[0]))
    for p, point in enumerate(grid):
        x = np.full(n_features, np.nan)
        x[list(features)] = point
        for k, tree in trees_by_output:
            out[k, p] += conditional_value(tree, x, set(features))
    return out + np.asarray(baseline)[:, None]


def model_trees(model):
    return [(k, tree) for trees in rounds(model) for k, tree in enumerate(trees)]


def test_kernel_equals_python_walk_on_random_trees():
    rng = np.random.default_rng(0)
    categorical = np.array([False, True, False, True])
    trees = [random_tree(rng, 4, categorical) for _ in range(24)]
    forest = ForestPredictor([trees[i:i + 3] for i in range(0, 24, 3)])  # 3 outputs
    for features in ([0], [1], [2, 1], [3, 0]):
        grid = random_rows(rng, 300, 4, categorical)[:, features]  # NaN, unseen codes
        got = contrib.partial_dependence(forest, grid, features, 3, n_threads=1)
        want = reference_pd([(r % 3, t) for r, t in enumerate(trees)], grid, features,
                            np.zeros(3))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        # enough work for a thread team: the same bits with two threads
        two = contrib.partial_dependence(forest, grid, features, 3, n_threads=2)
        assert grid.shape[0] * forest.nodes.shape[0] >= 1 << 16
        assert got.tobytes() == two.tobytes()


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
@pytest.mark.parametrize("features", [[0], [3], [1, 3]])
def test_fitted_models_equal_python_walk(kind, features):
    model, X = fitted(kind)  # categorical feature 3, missing values
    result = hgbt.partial_dependence(model, X, features, grid_resolution=12)
    grid = np.stack([g.ravel() for g in np.meshgrid(*result.grid_values, indexing="ij")],
                    axis=1)
    want = reference_pd(model_trees(model), grid, features, baseline_prediction(model))
    np.testing.assert_allclose(result.average.reshape(len(want), -1), want, rtol=0,
                               atol=1e-12)
    shape = [len(v) for v in result.grid_values]
    assert result.average.shape == (len(baseline_prediction(model)), *shape)
    if 3 in features:  # the categories seen in X, as a grid
        col = X[:, 3]
        np.testing.assert_array_equal(result.grid_values[features.index(3)],
                                      np.unique(col[~np.isnan(col)]))


def brute_pd(model, X, feature, values):
    """Mean raw score over the rows of X with ``feature`` set to each value."""
    out = []
    for v in values:
        Xv = X.copy()
        if isinstance(Xv, pd.DataFrame):
            Xv[feature] = pd.Categorical([v] * len(Xv), categories=X[feature].cat.categories)
        else:
            Xv[:, feature] = v
        raw = (model.decision_function(Xv) if hasattr(model, "decision_function")
               else model.predict(Xv))
        out.append(np.asarray(raw).reshape(len(Xv), -1).mean(axis=0))
    return np.array(out).T


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
@pytest.mark.parametrize("feature", [0, 3])
def test_stumps_equal_brute_force_over_training_rows(kind, feature):
    X, score = data(n=800)
    params = dict(max_iter=25, max_depth=1, categorical_features=[3],
                  early_stopping=False, random_state=0)
    if kind == "regressor":
        model = HistGBDTRegressor(**params).fit(X, score)
    elif kind == "binary":
        model = HistGBDTClassifier(**params).fit(X, score > 0.5)
    else:
        model = HistGBDTClassifier(**params).fit(X, np.digitize(score, [-0.5, 0.5, 1.5]))
    result = hgbt.partial_dependence(model, X, feature, grid_resolution=15)
    want = brute_pd(model, X, feature, result.grid_values[0])
    np.testing.assert_allclose(result.average, want, rtol=0, atol=1e-10)


def test_stumps_on_a_frame_with_string_categories():
    X, y = plan_frame(600, seed=1)
    X.loc[::9, "age"] = np.nan
    model = HistGBDTClassifier(max_iter=20, max_depth=1, early_stopping=False,
                               random_state=0).fit(X, y)
    before = X.copy()
    result = hgbt.partial_dependence(model, X, "plan")
    assert list(result.grid_values[0]) == ["basic", "pro", "team"]
    np.testing.assert_allclose(result.average,
                               brute_pd(model, X, "plan", result.grid_values[0]),
                               rtol=0, atol=1e-10)
    pd.testing.assert_frame_equal(X, before)  # not modified


def test_percentile_grid_and_sparse_input():
    model, X = fitted("regressor")
    X = np.nan_to_num(X)
    dense = hgbt.partial_dependence(model, X, 0, grid_resolution=7,
                                    percentiles=(0.1, 0.9))
    values = dense.grid_values[0]
    assert len(values) == 7 and np.allclose(np.diff(values), np.diff(values)[0])
    assert np.quantile(X[:, 0], 0.05) < values[0] < values[-1] < np.quantile(X[:, 0], 0.95)
    sparse = hgbt.partial_dependence(model, sp.csr_matrix(X), 0, grid_resolution=7,
                                     percentiles=(0.1, 0.9))
    np.testing.assert_array_equal(sparse.grid_values[0], values)
    np.testing.assert_array_equal(sparse.average, dense.average)


def run_in_fresh_process(code):
    """Run ``code`` in a new interpreter: ``enable_sklearn_recursion`` changes
    scikit-learn for the whole process (``method='auto'`` would then choose
    the recursion for hgbt models in every later test)."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                            cwd=Path(__file__).parent, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_sklearn_recursion_once_enabled():
    run_in_fresh_process("""
        import numpy as np
        from sklearn.inspection import partial_dependence as sk_partial_dependence
        import hgbt
        from hgbt import HistGBDTClassifier
        from hgbt.inspection import enable_sklearn_recursion
        from reference_trees import data

        X, score = data()
        X = np.nan_to_num(X[:, :3])  # sklearn's grid of a column with NaN holds NaN
        model = HistGBDTClassifier(max_iter=10, random_state=0).fit(
            X, np.digitize(score, [-0.5, 0.5, 1.5]))
        try:
            sk_partial_dependence(model, X, [0], method="recursion")
        except ValueError as exc:
            assert "support the 'recursion'" in str(exc)
        else:
            raise AssertionError("sklearn took the recursion before registration")
        enable_sklearn_recursion()
        ours = hgbt.partial_dependence(model, X, [0, 2], grid_resolution=9)
        for method in ("recursion", "auto"):
            theirs = sk_partial_dependence(model, X, [0, 2], grid_resolution=9,
                                           method=method)
            for a, b in zip(theirs.grid_values, ours.grid_values):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(theirs.average, ours.average)
    """)


def test_sklearn_recursion_maps_categories_by_value():
    run_in_fresh_process("""
        import numpy as np
        from sklearn.inspection import partial_dependence as sk_partial_dependence
        import hgbt
        from hgbt import HistGBDTClassifier
        from hgbt.inspection import enable_sklearn_recursion
        from reference_trees import plan_frame

        X, y = plan_frame(seed=2)
        model = HistGBDTClassifier(max_iter=8, random_state=0).fit(X, y)
        enable_sklearn_recursion()
        theirs = sk_partial_dependence(model, X, ["plan"], categorical_features=["plan"],
                                       method="recursion")
        ours = hgbt.partial_dependence(model, X, "plan")
        assert list(theirs.grid_values[0]) == list(ours.grid_values[0])
        np.testing.assert_array_equal(theirs.average, ours.average)
    """)


def test_bad_arguments():
    model, X = fitted("regressor")
    with pytest.raises(NotFittedError):
        hgbt.partial_dependence(HistGBDTRegressor(), X, 0)
    with pytest.raises(ValueError, match="out of range"):
        hgbt.partial_dependence(model, X, 5)
    with pytest.raises(ValueError, match="Unknown feature 'nope'"):
        hgbt.partial_dependence(model, X, "nope")
    with pytest.raises(TypeError, match="int index or a str name"):
        hgbt.partial_dependence(model, X, [1.5])
    with pytest.raises(ValueError, match="grid_resolution"):
        hgbt.partial_dependence(model, X, 0, grid_resolution=1)
    with pytest.raises(ValueError, match="percentiles"):
        hgbt.partial_dependence(model, X, 0, percentiles=(0.9, 0.1))
    with pytest.raises(ValueError, match="target_features"):
        model._compute_partial_dependence_recursion(np.zeros((2, 1)), [7])
