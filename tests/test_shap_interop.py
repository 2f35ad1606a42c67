"""``hgbt.export.shap_model``: the shap library's TreeExplainer, given the
description, against hgbt's own TreeSHAP (``predict_contributions``,
``predict_interactions``) and against brute-force interventional Shapley
values."""
import itertools
import math

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.export import shap_model
from fitted import all_trees, target_stats

shap = pytest.importorskip("shap")

KINDS = ["regressor", "binary", "multiclass"]


def numeric_model(kind, X=None):
    """A small numeric model with missing values, and its training rows."""
    rng = np.random.default_rng(1)
    if X is None:
        X = rng.normal(size=(500, 5))
        X[rng.random(X.shape) < 0.1] = np.nan
    score = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) - np.isnan(X[:, 3])
    params = dict(max_iter=12, max_leaf_nodes=12, random_state=0, early_stopping=False)
    if kind == "regressor":
        return HistGBDTRegressor(**params).fit(X, score), X
    if kind == "binary":
        return HistGBDTClassifier(**params).fit(X, score > 0.3), X
    return HistGBDTClassifier(**params).fit(X, np.digitize(score, [-0.5, 0.5])), X


def raw_score(model, X):
    if isinstance(model, HistGBDTClassifier):
        return model.decision_function(X)
    return model.predict(X)


def explained_rows(model, X):
    """Rows of ``X`` (NaN included), then rows whose values sit exactly on
    the model's thresholds, just above them, and at +-inf: where ``<`` and
    ``<=`` would differ."""
    table = model.trees_to_dataframe()
    splits = table[~table["is_leaf"]]
    rows = [X[:40]]
    for step in (0.0, np.inf):
        edge = np.repeat(X[:1], len(splits), axis=0)
        thresholds = splits["threshold"].to_numpy()
        edge[np.arange(len(splits)), splits["feature_idx"].to_numpy()] = np.nextafter(
            thresholds, step) if step else thresholds
        rows.append(edge)
    rows.append(np.where(np.arange(X.shape[1]) % 2, np.inf, -np.inf)[None, :])
    return np.concatenate(rows)


def to_hgbt_layout(values):
    """shap's multi-output layout (samples, features..., outputs) as hgbt's
    (samples, outputs, features...)."""
    return np.moveaxis(np.asarray(values), -1, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_tree_explainer_matches_contributions(kind):
    model, X = numeric_model(kind)
    rows = explained_rows(model, X)
    explainer = shap.TreeExplainer(shap_model(model))
    values = explainer.shap_values(rows)
    expected = np.asarray(explainer.expected_value)
    ours = model.predict_contributions(rows)
    if kind == "multiclass":
        assert values.shape == (len(rows), X.shape[1], model.classes_.size)
        values = to_hgbt_layout(values)
    np.testing.assert_allclose(values, ours[..., :-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(expected, ours[0, ..., -1], rtol=0, atol=1e-9)
    # shap's own walk of the description routes every row as hgbt does
    np.testing.assert_allclose(explainer.model.predict(rows), raw_score(model, rows),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_tree_explainer_matches_interactions(kind):
    model, X = numeric_model(kind)
    rows = explained_rows(model, X)[::4]
    values = shap.TreeExplainer(shap_model(model)).shap_interaction_values(rows)
    ours = model.predict_interactions(rows)[..., :-1, :-1]
    if kind == "multiclass":
        values = to_hgbt_layout(values)
    assert values.shape == ours.shape
    np.testing.assert_allclose(values, ours, rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_description_holds_the_expected_values(kind):
    # inner nodes carry the count-weighted mean of their leaves (shap would
    # recompute them): the roots add up to hgbt's expected value
    model, X = numeric_model(kind)
    description = shap_model(model)
    roots = sum(tree["values"][0] for tree in description["trees"])
    expected = model.predict_contributions(X[:1])[0, ..., -1]
    np.testing.assert_allclose(description["base_offset"] + roots, np.ravel(expected),
                               rtol=0, atol=1e-12)
    assert len(description["trees"]) == model.n_iter_ * len(description["base_offset"])


def brute_interventional(model, x, background):
    """Mean over the background rows ``r`` of the Shapley values of the game
    v(S) = raw score of the row taking ``x`` on S and ``r`` elsewhere."""
    m = len(x)
    subsets = list(itertools.product([False, True], repeat=m))
    index = {s: i for i, s in enumerate(subsets)}
    hybrids = np.array([np.where(s, x, r) for r in background for s in subsets])
    raw = raw_score(model, hybrids).reshape(len(background), len(subsets), -1).mean(0)
    phi = np.zeros((m, raw.shape[1]))
    for s in subsets:
        size = sum(s)
        for f in range(m):
            if not s[f]:
                weight = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
                with_f = s[:f] + (True,) + s[f + 1:]
                phi[f] += weight * (raw[index[with_f]] - raw[index[s]])
    return phi


def integer_rows():
    """Rows of small integers with missing values. shap's interventional
    kernel holds thresholds (and leaf values) as float32; the thresholds of
    integer data (midpoints) are float32 values, so its routing is exact."""
    rng = np.random.default_rng(2)
    X = rng.integers(-3, 4, size=(400, 4)).astype(np.float64)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("kind", KINDS)
def test_interventional_values_equal_brute_force(kind):
    model, X = numeric_model(kind, integer_rows())
    background, rows = X[:6], X[100:108]
    explainer = shap.TreeExplainer(shap_model(model), background,
                                   feature_perturbation="interventional")
    values = np.asarray(explainer.shap_values(rows))
    values = values.reshape(len(rows), X.shape[1], -1)
    reference = np.array([brute_interventional(model, x, background) for x in rows])
    scale = np.abs(reference).max()
    np.testing.assert_allclose(values, reference, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(np.asarray(explainer.expected_value).ravel(),
                               raw_score(model, background).mean(0).ravel(), rtol=1e-12)


def test_probability_output_of_a_binary_classifier():
    model, X = numeric_model("binary", integer_rows())
    explainer = shap.TreeExplainer(shap_model(model), X[:50], model_output="probability",
                                   feature_perturbation="interventional")
    values = explainer.shap_values(X[100:120])
    np.testing.assert_allclose(values.sum(1) + explainer.expected_value,
                               model.predict_proba(X[100:120])[:, 1], rtol=0, atol=1e-6)


def test_the_model_is_not_changed():
    model, X = numeric_model("regressor")
    nodes = [tree.nodes.copy() for tree in all_trees(model)]
    before = model.predict_contributions(X[:20])
    description = shap_model(model)
    # an explainer with background data rewrites the description's weights
    shap.TreeExplainer(description, X[:30], feature_perturbation="interventional")
    after = [tree.nodes for tree in all_trees(model)]
    assert all(np.array_equal(a, b) for a, b in zip(nodes, after))
    np.testing.assert_array_equal(model.predict_contributions(X[:20]), before)


def test_categorical_splits_are_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[:, 1] = rng.integers(0, 5, size=300)
    y = X[:, 0] + (X[:, 1] == 2) * 3
    model = HistGBDTRegressor(max_iter=5, categorical_features=[1], random_state=0).fit(X, y)
    assert (model.trees_to_dataframe()["split_type"] == "categorical").any()
    with pytest.raises(ValueError, match="categorical splits .* on feature 'x1'"):
        shap_model(model)


def test_target_statistics_are_refused():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 600, size=2000), rng.normal(size=2000)])
    y = X[:, 1] + (X[:, 0] % 7)
    # one split per tree on the statistic or x1: no categorical split to refuse
    model = HistGBDTRegressor(max_iter=5, max_depth=1, categorical_features=[0],
                              max_cat_to_onehot=1, random_state=0).fit(X, y)
    assert target_stats(model) is not None
    with pytest.raises(ValueError, match="'x0' has more than 255 categories"):
        shap_model(model)


def test_unfitted_and_foreign_models_are_refused():
    with pytest.raises(NotFittedError):
        shap_model(HistGBDTRegressor())
    with pytest.raises(TypeError, match="hgbt estimator"):
        shap_model(object())
