"""Leaf indices (``_apply.pyx`` through ``hgbt.model.contributions.apply``, and
the estimators' ``apply``) against a Python walk of the node arrays."""
import numpy as np
import pytest
import scipy.sparse as sp

from hgbt.model import contributions as contrib
from hgbt.tree.predictor import ForestPredictor
from fitted import baseline_prediction, rounds
from reference_trees import fitted, leaf_of, random_rows, random_tree


def test_apply_kernel_equals_python_walk():
    rng = np.random.default_rng(5)
    categorical = np.array([False, True, False, False])
    trees = [random_tree(rng, 4, categorical, depth=6) for _ in range(5)]
    X = random_rows(rng, 3000, 4, categorical)  # enough rows for two threads
    X[:50, 0] = np.inf
    X[50:100, 0] = -np.inf
    forest = ForestPredictor([trees])
    for n_threads in (1, 2):
        leaves = contrib.apply(forest, X, n_threads)
        expected = [[leaf_of(tree, x) for tree in trees] for x in X]
        assert leaves.dtype == np.int32
        assert leaves.tolist() == expected
    # the leaf's value is what prediction adds: same routing
    for t, tree in enumerate(trees):
        np.testing.assert_array_equal(tree.nodes["value"][leaves[:, t]], tree.predict(X))


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_estimator_apply(kind):
    model, X = fitted(kind)
    leaves = model.apply(X)
    n_per_round = len(rounds(model)[0])
    if kind == "regressor":
        assert leaves.shape == (X.shape[0], model.n_iter_)
        leaves = leaves[:, :, None]
    else:  # as scikit-learn's GradientBoostingClassifier: 3-D also for two classes
        assert leaves.shape == (X.shape[0], model.n_iter_, n_per_round)
    raw = np.tile(baseline_prediction(model), (X.shape[0], 1))
    for r, trees in enumerate(rounds(model)):
        for k, tree in enumerate(trees):
            assert leaves[:, r, k].tolist() == [leaf_of(tree, x) for x in X]
            raw[:, k] += tree.nodes["value"][leaves[:, r, k]]
    np.testing.assert_allclose(raw, model._raw_predict(X).T, rtol=0, atol=1e-12)


def test_apply_sparse_equals_dense():
    model, X = fitted("multiclass")
    X = np.where(np.abs(np.nan_to_num(X, nan=1.0)) < 0.7, 0.0, X)
    np.testing.assert_array_equal(model.apply(sp.csr_matrix(X)), model.apply(X))
