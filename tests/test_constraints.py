"""Interaction constraints: no tree path mixes features of different groups."""
import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.estimators.fit_inputs import interaction_groups
from fitted import all_trees


def _paths(nodes):
    """Sets of features used on each root-to-leaf path."""
    out, stack = [], [(0, frozenset())]
    while stack:
        i, used = stack.pop()
        node = nodes[i]
        if node["is_leaf"]:
            out.append(used)
            continue
        used = used | {int(node["feature_idx"])}
        stack += [(int(node["left"]), used), (int(node["right"]), used)]
    return out


def _all_paths(model):
    return [p for t in all_trees(model) for p in _paths(t.nodes)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 6))
    y = X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] + X[:, 4] * X[:, 5] + 0.1 * rng.normal(size=4000)
    return X, y


@pytest.mark.parametrize("cst, allowed", [
    ([{0, 1}, {2, 3}], [{0, 1}, {2, 3}, {4, 5}]),
    ("no_interactions", [{f} for f in range(6)]),
    ("pairwise", [{a, b} for a in range(6) for b in range(a + 1, 6)]),
    ([[0, 1, 2], [2, 3]], [{0, 1, 2}, {2, 3}, {4, 5}]),
])
def test_paths_stay_in_one_group(data, cst, allowed):
    X, y = data
    m = HistGBDTRegressor(max_iter=30, interaction_cst=cst, early_stopping=False,
                          random_state=0).fit(X, y)
    paths = _all_paths(m)
    assert any(len(p) >= 2 for p in paths) or cst == "no_interactions"
    for path in paths:
        assert any(path <= group for group in allowed), path


def test_unconstrained_model_mixes_groups(data):
    # The check above has teeth: without constraints paths do mix groups.
    X, y = data
    m = HistGBDTRegressor(max_iter=30, early_stopping=False, random_state=0).fit(X, y)
    allowed = [{0, 1}, {2, 3}, {4, 5}]
    assert any(not any(p <= g for g in allowed) for p in _all_paths(m))


def test_constraints_cost_little_when_they_match_the_truth(data):
    X, y = data
    fit = lambda cst: HistGBDTRegressor(max_iter=100, interaction_cst=cst,
                                        early_stopping=False, random_state=0).fit(X, y)
    assert fit([{0, 1}, {2, 3}, {4, 5}]).score(X, y) > fit("no_interactions").score(X, y) + 0.2


def test_multiclass_with_constraints():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 0)
    m = HistGBDTClassifier(max_iter=10, interaction_cst=[{0, 1}, {2, 3}],
                           early_stopping=False).fit(X, y)
    for path in _all_paths(m):
        assert path <= {0, 1} or path <= {2, 3}


def test_groups_normalised():
    assert interaction_groups(None, 3) is None
    assert interaction_groups([{0}], 3) == [{0}, {1, 2}]
    assert interaction_groups([[0, 1, 2]], 3) == [{0, 1, 2}]
    with pytest.raises(ValueError, match="invalid feature indices"):
        interaction_groups([{0, 7}], 3)
    with pytest.raises(ValueError, match="X has none: give indices"):
        interaction_groups([{0, "a"}], 3)
    with pytest.raises(ValueError, match="invalid feature indices"):
        interaction_groups([{0, 1.5}], 3)
    with pytest.raises(ValueError, match="interaction_cst"):
        interaction_groups([0, 1], 3)


# ------------------------------------------------------------------ monotonic
def _monotone_violation(model, X, feature, sign, predict):
    """Largest violation of monotonicity along ``feature`` on random grids."""
    rng = np.random.default_rng(1)
    base = X[rng.choice(len(X), 200, replace=False)]
    lo, hi = np.nanmin(X[:, feature]), np.nanmax(X[:, feature])
    grid = np.linspace(lo - 1, hi + 1, 60)
    worst = 0.0
    for row in base:
        Xg = np.repeat(row[None, :], grid.size, axis=0)
        Xg[:, feature] = grid
        steps = sign * np.diff(predict(model, Xg))
        worst = max(worst, -steps.min())
    return worst


@pytest.fixture(scope="module")
def mono_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 4))
    # increasing in x0, decreasing in x1 overall, but locally wiggly with noise
    y = (X[:, 0] + np.sin(3 * X[:, 0]) - X[:, 1] + 0.5 * np.cos(4 * X[:, 1])
         + X[:, 2] * X[:, 3] + 0.5 * rng.normal(size=6000))
    return X, y


def _predict(model, X):
    if hasattr(model, "predict_proba"):
        return model.decision_function(X)
    return model.predict(X)


@pytest.mark.parametrize("grow_policy", ["lossguide", "depthwise"])
def test_regression_predictions_monotone(mono_data, grow_policy):
    X, y = mono_data
    cst = [1, -1, 0, 0]
    m = HistGBDTRegressor(max_iter=60, monotonic_cst=cst, grow_policy=grow_policy,
                          max_depth=6 if grow_policy == "depthwise" else None,
                          early_stopping=False, random_state=0).fit(X, y)
    assert _monotone_violation(m, X, 0, 1, _predict) == 0.0
    assert _monotone_violation(m, X, 1, -1, _predict) == 0.0
    assert m.score(X, y) > 0.5


def test_unconstrained_model_is_not_monotone(mono_data):
    # The check above has teeth: the wiggles make a free model non-monotone.
    X, y = mono_data
    m = HistGBDTRegressor(max_iter=60, early_stopping=False, random_state=0).fit(X, y)
    assert _monotone_violation(m, X, 0, 1, _predict) > 0


def test_binary_predictions_monotone_and_dict_spec(mono_data):
    X, y = mono_data
    labels = (y > np.median(y)).astype(int)
    m = HistGBDTClassifier(max_iter=40, monotonic_cst={0: 1, 1: -1},
                           early_stopping=False, random_state=0).fit(X, labels)
    assert _monotone_violation(m, X, 0, 1, _predict) == 0.0
    assert _monotone_violation(m, X, 1, -1, _predict) == 0.0


@pytest.mark.parametrize("loss", ["absolute_error", "poisson"])
def test_monotone_with_other_losses(mono_data, loss):
    X, y = mono_data
    target = np.exp(0.3 * y) if loss == "poisson" else y
    m = HistGBDTRegressor(loss=loss, max_iter=40, monotonic_cst=[1, -1, 0, 0],
                          early_stopping=False, random_state=0).fit(X, target)
    assert _monotone_violation(m, X, 0, 1, _predict) == 0.0


def test_monotonic_cst_validation(mono_data):
    X, y = mono_data
    with pytest.raises(ValueError, match="monotonic_cst"):
        HistGBDTRegressor(monotonic_cst=[1, 0]).fit(X, y)          # wrong length
    with pytest.raises(ValueError, match="monotonic_cst"):
        HistGBDTRegressor(monotonic_cst=[2, 0, 0, 0]).fit(X, y)    # bad value
    with pytest.raises(ValueError, match="monotonic_cst"):
        HistGBDTRegressor(monotonic_cst={9: 1}).fit(X, y)          # bad key
    multi = (y > 0).astype(int) + (y > 1)
    with pytest.raises(ValueError, match="multiclass"):
        HistGBDTClassifier(monotonic_cst=[1, 0, 0, 0]).fit(X, multi)


def test_monotone_with_missing_values(mono_data):
    X, y = mono_data
    X = X.copy()
    X[np.random.default_rng(3).random(len(X)) < 0.1, 0] = np.nan
    m = HistGBDTRegressor(max_iter=40, monotonic_cst=[1, -1, 0, 0],
                          early_stopping=False, random_state=0).fit(X, y)
    assert _monotone_violation(m, np.nan_to_num(X), 0, 1, _predict) == 0.0


def test_monotonic_cst_rejects_categorical():
    X = np.column_stack([np.arange(200) % 5, np.linspace(0, 1, 200)])
    y = X[:, 1] + (X[:, 0] == 2)
    with pytest.raises(ValueError, match="categorical"):
        HistGBDTRegressor(monotonic_cst=[1, 0], categorical_features=[0]).fit(X, y)


def test_interaction_groups_by_feature_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 4)), columns=["a", "b", "c", "d"])
    y = X["a"] * X["b"] + X["c"] * X["d"]
    by_name = HistGBDTRegressor(max_iter=10, random_state=0,
                                interaction_cst=[["a", "c"], ["b", "d"]]).fit(X, y)
    by_index = HistGBDTRegressor(max_iter=10, random_state=0,
                                 interaction_cst=[[0, 2], [1, "d"]]).fit(X, y)
    np.testing.assert_array_equal(by_name.predict(X), by_index.predict(X))
    free = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    assert not np.array_equal(free.predict(X), by_name.predict(X))
    with pytest.raises(ValueError, match=r"interaction_cst names \['e'\], which are not "
                                         "feature names of X"):
        HistGBDTRegressor(interaction_cst=[["a", "e"]]).fit(X, y)
    with pytest.raises(ValueError, match="X has none: give indices"):
        HistGBDTRegressor(interaction_cst=[["a"]]).fit(X.to_numpy(), y)


def test_numpy_integer_groups_survive_pickle_and_files(tmp_path):
    import pickle

    from hgbt import load_model
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    model = HistGBDTRegressor(max_iter=3, interaction_cst=[np.array([0, 1]),
                                                           np.array([2, 3])]).fit(X, X[:, 0])
    for loaded in (pickle.loads(pickle.dumps(model)),
                   (model.save_model(tmp_path / "m.json"), load_model(tmp_path / "m.json"))[1]):
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
