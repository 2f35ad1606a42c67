"""Interaction constraints: no tree path mixes features of different groups."""
import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.gradient_boosting import interaction_groups


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
    return [p for trees in model._predictors for t in trees for p in _paths(t.nodes)]


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
    with pytest.raises(ValueError, match="invalid feature indices"):
        interaction_groups([{0, "a"}], 3)
    with pytest.raises(ValueError, match="interaction_cst"):
        interaction_groups([0, 1], 3)
