"""hgbt.Booster: the fitted model as one object, and the estimators as its holders.

Every output of a Booster is compared with its estimator's, bit for bit: the
estimators' predictions are the Booster's, read through the estimator.
"""
import pickle

import numpy as np
import pandas as pd
import pytest

import hgbt
from hgbt import Booster, HistGBDTClassifier, HistGBDTRegressor
from hgbt.export import shap_model


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1])) + 0.1 * rng.normal(size=n)
    return X, y


def _frame(n=1200, seed=1):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
                      "size": rng.normal(size=n),
                      "code": rng.integers(0, 400, n).astype(float)})
    y = (X["colour"] == "red") * 2.0 + X["size"] + (X["code"] % 7 == 0)
    return X, y.to_numpy()


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def regressor():
    X, y = _data()
    return HistGBDTRegressor(max_iter=15, random_state=0).fit(X, y), X


@pytest.fixture(scope="module", params=[2, 3])
def classifier(request):
    X, y = _data(seed=2)
    labels = np.array(["low", "mid", "high"])[
        np.digitize(y, np.quantile(y, np.linspace(0, 1, request.param + 1)[1:-1]))]
    return HistGBDTClassifier(max_iter=10, random_state=0).fit(X, labels), X


def test_the_estimator_holds_a_booster_of_its_model(regressor):
    model, X = regressor
    booster = model.booster_
    assert isinstance(booster, Booster)
    assert booster.n_iter == model.n_iter_ == len(booster.trees)
    assert booster.n_trees_per_iteration == model.n_trees_per_iteration_ == 1
    assert booster.n_features_in_ == model.n_features_in_
    _same(booster.predict(X, n_threads=1), model.predict(X))
    _same(booster.predict(X, raw_score=True), model.predict(X))  # identity link
    _same(booster.predict(X, iteration_range=(2, 7)),
          model.predict(X, iteration_range=(2, 7)))


def test_classifier_booster_predicts_probabilities(classifier):
    model, X = classifier
    booster = model.booster_
    proba = model.predict_proba(X)
    if proba.shape[1] == 2:  # binary: the positive class, as LightGBM's Booster
        _same(booster.predict(X), proba[:, 1])
    else:
        _same(booster.predict(X), proba)
    _same(booster.predict(X, raw_score=True), model.decision_function(X))
    np.testing.assert_array_equal(booster.classes, model.classes_)


def test_inspection_through_the_booster_equals_the_estimators(classifier):
    model, X = classifier
    booster = model.booster_
    _same(booster.predict_contributions(X[:50]), model.predict_contributions(X[:50]))
    _same(booster.predict_interactions(X[:5]), model.predict_interactions(X[:5]))
    _same(booster.apply(X[:50]), model.apply(X[:50]))
    totals = booster.feature_importance("gain")
    _same(totals / totals.sum(), model.feature_importances_)
    pd.testing.assert_frame_equal(booster.trees_to_dataframe(), model.trees_to_dataframe())
    assert booster.dump_trees() == model.dump_trees()
    pd.testing.assert_frame_equal(booster.feature_importance_table(),
                                  model.feature_importance_table())
    for a, b in zip(hgbt.partial_dependence(booster, X, [0, 1], grid_resolution=5).average,
                    hgbt.partial_dependence(model, X, [0, 1], grid_resolution=5).average):
        _same(a, b)


def test_regressor_booster_leaves_have_an_output_axis(regressor):
    model, X = regressor
    leaves = model.booster_.apply(X[:20])
    assert leaves.shape == (20, model.n_iter_, 1)
    _same(leaves[:, :, 0], model.apply(X[:20]))


def test_booster_converts_frames_as_its_estimator_and_checks_names():
    X, y = _frame()
    model = HistGBDTRegressor(max_iter=8, categorical_features=["colour", "code"],
                              random_state=0).fit(X, y)
    booster = model.booster_
    assert booster.pooled_features == [2]  # 400 codes: pooled, with a target statistic
    _same(booster.predict(X), model.predict(X))
    _same(booster.predict_contributions(X[:30]), model.predict_contributions(X[:30]))
    with pytest.raises(ValueError, match="feature names"):
        booster.predict(X.rename(columns={"size": "length"}))
    with pytest.warns(UserWarning, match="Booster was fitted with feature names"), \
            pytest.raises(ValueError, match="Booster is expecting 3 features"):
        booster.predict(np.zeros((2, 4)))


def test_a_pickled_booster_predicts_the_same(classifier):
    model, X = classifier
    restored = pickle.loads(pickle.dumps(model.booster_))
    _same(restored.predict(X), model.booster_.predict(X))
    _same(restored.predict_contributions(X[:10]), model.predict_contributions(X[:10]))


def test_exporters_take_a_booster(regressor):
    model, _ = regressor
    a, b = shap_model(model), shap_model(model.booster_)
    _same(a["base_offset"], b["base_offset"])
    assert len(a["trees"]) == len(b["trees"])
    for ta, tb in zip(a["trees"], b["trees"]):
        for key in ta:
            _same(ta[key], tb[key])


def test_a_warm_start_extends_a_new_booster_and_leaves_the_old_one():
    X, y = _data(seed=3)
    model = HistGBDTRegressor(max_iter=5, warm_start=True, early_stopping=False,
                              random_state=0).fit(X, y)
    first = model.booster_
    before = first.predict(X)
    model.set_params(max_iter=9).fit(X, y)
    assert model.booster_ is not first and model.booster_.n_iter == 9
    assert first.n_iter == 5
    _same(first.predict(X), before)
    assert all(a is b for a, b in zip(first.trees, model.booster_.trees[:5]))


def test_a_failed_fit_leaves_the_booster_as_it_was():
    X, y = _data(seed=4)
    model = HistGBDTRegressor(max_iter=5, warm_start=True, early_stopping=False,
                              random_state=0).fit(X, y)
    booster, before = model.booster_, model.predict(X)

    class Boom:
        def after_round(self, *args, **kwargs):
            raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        model.set_params(max_iter=10).fit(X, y, callbacks=[Boom()])
    assert model.booster_ is booster and booster.n_iter == 5
    _same(model.predict(X), before)


def test_the_booster_is_the_model_of_the_files(tmp_path):
    """JSON and pickle round trips rebuild the Booster with every part, its loss
    the fit's even when the estimator's loss parameter changed after it."""
    X, y = _frame()
    model = HistGBDTRegressor(max_iter=6, categorical_features=["colour", "code"],
                              random_state=0).fit(X, y)
    before = model.predict(X)
    model.set_params(loss="poisson")  # the model keeps the loss it was fitted with
    _same(model.predict(X), before)
    hgbt.save_model(model, tmp_path / "model.json")
    for restored in (pickle.loads(pickle.dumps(model)),
                     hgbt.load_model(tmp_path / "model.json")):
        booster, other = model.booster_, restored.booster_
        assert other.n_iter == booster.n_iter and other.pooled_features == [2]
        assert other.target_stats["features"].tolist() == [2]
        np.testing.assert_array_equal(other.categorical.mask, booster.categorical.mask)
        np.testing.assert_array_equal(other.categorical.by_value,
                                      booster.categorical.by_value)
        assert other.objective == booster.objective
        assert other.objective["loss"] == "squared_error"
        _same(other.predict(X), before)
        _same(restored.predict(X), before)


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_a_booster_saves_as_the_estimator_that_holds_it(tmp_path, kind):
    X, y = _frame()
    if kind == "classifier":
        y = np.array(["low", "high"])[(y > np.median(y)).astype(int)]
        params = {"loss": "log_loss", "max_iter": 6, "random_state": 0}
    else:
        params = {"loss": "quantile", "quantile": 0.7, "max_iter": 6, "random_state": 0}
    booster = hgbt.train(params, hgbt.Dataset(X, y))
    hgbt.save_model(booster, tmp_path / "booster.json")
    loaded = hgbt.load_model(tmp_path / "booster.json")
    assert type(loaded).__name__ == ("HistGBDTClassifier" if kind == "classifier"
                                     else "HistGBDTRegressor")
    _same(loaded.booster_.predict(X), booster.predict(X))
    _same(loaded.booster_.predict(X, raw_score=True), booster.predict(X, raw_score=True))
    assert loaded.booster_.objective == booster.objective
    assert loaded.max_bins == booster.bin_mapper.max_bins
    loaded.set_params(warm_start=True, max_iter=9).fit(X, y)  # it continues
    assert loaded.n_iter_ == 9
    _same(loaded.booster_.trees[0][0].nodes, booster.trees[0][0].nodes)
