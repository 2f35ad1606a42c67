"""Multi-output regression: y of shape (n, k), one tree per output a round."""
import pickle

import numpy as np
import pytest

from hgbt import HistGBDTRegressor, load_model, save_model
from hgbt.core.row_meta import RowMeta
from hgbt.engine.losses import get_loss

FAST = dict(max_iter=20, early_stopping=False, random_state=0)


def problem(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    Y = np.column_stack([np.nan_to_num(X[:, 0]) + 0.1 * rng.normal(size=n),
                         np.nan_to_num(X[:, 1] * X[:, 2]),
                         np.sin(np.nan_to_num(X[:, 3])) * 3 + 10])
    return X, Y


@pytest.mark.parametrize("weighted", [False, True])
def test_each_output_is_the_model_of_that_output_alone(weighted):
    # same bins, each output's own gradients: bit for bit the k separate fits
    X, Y = problem()
    w = np.random.default_rng(1).uniform(0.5, 2, Y.shape[0]) if weighted else None
    joint = HistGBDTRegressor(**FAST).fit(X, Y, sample_weight=w)
    assert joint.n_outputs_ == 3 and joint.n_trees_per_iteration_ == 3
    predictions = joint.predict(X)
    assert predictions.shape == (X.shape[0], 3)
    for k in range(3):
        alone = HistGBDTRegressor(**FAST).fit(X, Y[:, k], sample_weight=w)
        np.testing.assert_array_equal(predictions[:, k], alone.predict(X))
    one_column = HistGBDTRegressor(**FAST).fit(X, Y[:, :1]).predict(X)  # (n, 1): one output
    np.testing.assert_array_equal(one_column, HistGBDTRegressor(**FAST).fit(X, Y[:, 0])
                                  .predict(X))


def test_the_loss_is_the_mean_over_outputs():
    rng = np.random.default_rng(0)
    Y, raw, w = rng.normal(size=(50, 3)), rng.normal(size=(3, 50)), rng.uniform(size=50)
    loss = get_loss("squared_error", RowMeta(w), n_outputs=3)
    expected = np.average(0.5 * ((Y - raw.T) ** 2).mean(axis=1), weights=w)
    assert loss.loss(Y, raw) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(loss.baseline(Y), np.average(Y, axis=0, weights=w),
                               rtol=1e-12)
    g = np.empty((3, 50), dtype=np.float32)
    h = np.empty_like(g)
    loss.gradients(Y, raw, g, h, 1)
    np.testing.assert_allclose(g, (w * (raw - Y.T)).astype(np.float32), rtol=1e-6)
    with pytest.raises(ValueError, match="takes loss='squared_error'"):
        get_loss("poisson", n_outputs=3)


def test_early_stopping_eval_sets_and_start_scores():
    X, Y = problem()
    X_val, Y_val = problem(1000, seed=1)
    model = HistGBDTRegressor(max_iter=300, early_stopping=True, n_iter_no_change=5,
                              eval_metric="r2", random_state=0)
    model.fit(X, Y, X_val=X_val, y_val=Y_val)
    assert model.n_iter_ < 300
    history = model.evals_result_["validation"]
    assert history["r2"][-1] == pytest.approx(model.score(X_val, Y_val), rel=1e-9)
    offset = np.tile([1.0, -2.0, 10.0], (X.shape[0], 1))
    shifted = HistGBDTRegressor(**FAST).fit(X, Y, init_score=offset)
    assert shifted.booster_.baseline.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="shape"):
        HistGBDTRegressor(**FAST).fit(X, Y, init_score=offset[:, :2])


def test_persistence_and_explanations(tmp_path):
    X, Y = problem()
    model = HistGBDTRegressor(**FAST).fit(X, Y)
    for loaded in (pickle.loads(pickle.dumps(model)),
                   (save_model(model, tmp_path / "m.json"), load_model(tmp_path / "m.json"))[1]):
        assert loaded.n_outputs_ == 3
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    contributions = model.predict_contributions(X[:20])
    np.testing.assert_allclose(contributions.sum(axis=-1), model.predict(X[:20]),
                               rtol=1e-9, atol=1e-9)
    staged = list(model.staged_predict(X[:5]))
    assert len(staged) == 20 and staged[-1].shape == (5, 3)


def test_bad_targets_get_a_clear_error():
    X, Y = problem(500)
    with pytest.raises(ValueError, match="takes loss='squared_error'"):
        HistGBDTRegressor("absolute_error", **FAST).fit(X, Y)
    model = HistGBDTRegressor(**FAST, warm_start=True).fit(X, Y)
    with pytest.raises(ValueError, match="the model was fitted on 3"):
        model.set_params(max_iter=30).fit(X, Y[:, :2])
    with pytest.raises(ValueError, match="y has 2 output"):
        HistGBDTRegressor(**FAST).set_params(early_stopping=True).fit(
            X, Y, X_val=X, y_val=Y[:, :2])


def test_a_booster_file_and_cross_validated_rounds_with_start_scores(tmp_path):
    X, Y = problem(600)
    model = HistGBDTRegressor(**FAST).fit(X, Y)
    save_model(model.booster_, tmp_path / "booster.json")
    loaded = load_model(tmp_path / "booster.json")
    assert loaded.n_outputs_ == 3
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    cv = HistGBDTRegressor(max_iter=10, early_stopping="cv", random_state=0)
    cv.fit(X, Y, init_score=np.zeros((600, 3)))
    assert 1 <= cv.n_iter_ <= 10


def test_a_pooled_categorical_feature_encodes_each_output():
    # more than 255 categories are pooled by their target statistics: one
    # statistic column per output
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 3000
    codes = rng.integers(0, 400, n)
    X = pd.DataFrame({"a": rng.normal(size=n),
                      "c": pd.Categorical(codes.astype(str))})
    Y = np.column_stack([codes % 7 + rng.normal(size=n) * 0.1, X["a"] * 2])
    model = HistGBDTRegressor(**FAST).fit(X, Y)
    assert model.booster_.n_internal == 2 + 2  # a, c, c's mean of each output
    rmse = np.sqrt(((model.predict(X) - Y) ** 2).mean(0))
    assert np.all(rmse < 0.5 * Y.std(0))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X),
                                  model.predict(X))


def test_a_dataset_of_several_targets_and_the_native_api():
    import hgbt
    X, Y = problem(n=1200)
    direct = HistGBDTRegressor(**FAST).fit(X, Y)
    np.testing.assert_array_equal(HistGBDTRegressor(**FAST).fit(hgbt.Dataset(X, Y))
                                  .predict(X), direct.predict(X))
    booster = hgbt.train({"max_iter": 20, "random_state": 0}, hgbt.Dataset(X, Y))
    np.testing.assert_allclose(booster.predict(X), direct.predict(X), rtol=1e-12)
    result = hgbt.cv({"max_iter": 5, "multi_strategy": "multi_output_tree"},
                     hgbt.Dataset(X, Y), nfold=3)
    assert result["loss-mean"][-1] < result["loss-mean"][0]
    with pytest.raises(ValueError, match="one target per row"):
        hgbt.Dataset(X, np.zeros((X.shape[0] - 1, 2)))
