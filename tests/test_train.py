"""hgbt.Dataset, hgbt.train and hgbt.cv: the native API on rows binned once.

train() on a Dataset must give the estimator's model bit for bit on the same
parameters; a Dataset reused by several fits is binned by the first only;
parameters that would bin it differently are refused.
"""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from hgbt import Dataset, HistGBDTClassifier, HistGBDTRegressor, cv, train
from hgbt.data.binning import BinMapper
from fitted import all_trees


def _task(n=2500, seed=0, nan=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    X[rng.random(X.shape) < nan] = np.nan
    return X, y


def _frame(n=2500, seed=1):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
                      "size": rng.normal(size=n),
                      "city": pd.Categorical(rng.integers(0, 400, n).astype(str)),
                      "code": rng.integers(0, 12, n).astype(float)})
    y = ((X["colour"] == "red") * 2.0 + X["size"] + (X["code"] % 3 == 0)
         + (X["city"].cat.codes % 7) / 3.0).to_numpy()
    return X, y


def _same_model(booster, estimator, X):
    a, b = all_trees(estimator), [t for trees in booster.trees for t in trees]
    assert len(a) == len(b)
    for ta, tb in zip(a, b):
        assert ta.nodes.tobytes() == tb.nodes.tobytes()
        assert ta.cat_bitsets.tobytes() == tb.cat_bitsets.tobytes()
    assert booster.baseline.tobytes() == estimator.booster_.baseline.tobytes()
    assert booster.predict(X, raw_score=True).tobytes() == \
        estimator.booster_.predict(X, raw_score=True).tobytes()


BASE = dict(max_iter=12, random_state=0, early_stopping=False)
CASES = [
    ("dense", {}),
    ("depthwise_l1", {"grow_policy": "depthwise", "max_depth": 4, "l1_regularization": 1.0}),
    ("quantized_goss", {"use_quantized_grad": True, "data_sample_strategy": "goss"}),
    ("bagging_colsample", {"subsample": 0.7, "colsample_bynode": 0.6}),
    ("absolute_error", {"loss": "absolute_error"}),
    ("bins_31", {"max_bins": 31}),
]


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_train_gives_the_estimators_model(name, params):
    X, y = _task()
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    params = {**BASE, **params}
    binning = {k: params[k] for k in ("max_bins",) if k in params}
    booster = train(params, Dataset(X, y, weight=w, **binning))
    _same_model(booster, HistGBDTRegressor(**params).fit(X, y, sample_weight=w), X)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_train_classifies_with_log_loss(n_classes):
    X, y = _task(seed=2)
    labels = np.array(["a", "b", "c"])[np.digitize(
        y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))]
    params = {**BASE, "loss": "log_loss", "class_weight": "balanced"}
    booster = train(params, Dataset(X, labels))
    model = HistGBDTClassifier(**params).fit(X, labels)
    _same_model(booster, model, X)
    np.testing.assert_array_equal(booster.classes, model.classes_)
    proba = model.predict_proba(X)
    expected = proba[:, 1] if n_classes == 2 else proba
    assert booster.predict(X).tobytes() == expected.tobytes()


@pytest.mark.parametrize("kind", ["frame", "csr"])
def test_train_on_frames_pooled_categories_and_sparse_input(kind):
    if kind == "frame":
        X, y = _frame()
    else:
        X, y = _task(nan=0.0)
        X[np.abs(X) < 0.8] = 0.0
        X = sp.csr_matrix(X)
    params = dict(BASE, max_iter=8)
    dataset = Dataset(X, y)
    booster = train(params, dataset)
    model = HistGBDTRegressor(**params).fit(X, y)
    _same_model(booster, model, X)
    if kind == "frame":
        assert booster.pooled_features == [2] and booster.target_stats is not None
        assert list(booster.feature_names_in_) == list(X.columns)


def test_validation_sets_and_early_stopping_as_the_estimators():
    X, y = _task(n=3000, seed=4)
    params = {"max_iter": 200, "random_state": 0, "learning_rate": 0.3,
              "n_iter_no_change": 4}
    data = Dataset(X[:2400], y[:2400])
    valid = Dataset(X[2400:], y[2400:], reference=data)
    booster = train(params, data, valid_sets=[valid], valid_names=["held_out"])
    model = HistGBDTRegressor(**params, early_stopping=True).fit(
        X[:2400], y[:2400], eval_set=[(X[2400:], y[2400:])], eval_names=["held_out"])
    _same_model(booster, model, X)
    assert booster.best_iteration == model.best_iteration_ < 200
    assert booster.evals_result == model.evals_result_
    # X_val given as a validation Dataset: the estimator's X_val path
    with_val = HistGBDTRegressor(**params).fit(data, X_val=valid)
    reference = HistGBDTRegressor(**params).fit(X[:2400], y[:2400], X_val=X[2400:],
                                                y_val=y[2400:])
    _same_model(with_val.booster_, reference, X)


def test_a_reused_dataset_is_binned_once(monkeypatch):
    X, y = _frame(seed=5)
    fits = []
    original = BinMapper.fit

    def counted(self, *args, **kwargs):
        fits.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BinMapper, "fit", counted)
    dataset = Dataset(X, y)
    grid = [{"max_leaf_nodes": leaves, "min_samples_leaf": leaf}
            for leaves, leaf in ((7, 20), (15, 20), (31, 10), (63, 40), (15, 5))]
    boosters = [train({**BASE, **p}, dataset) for p in grid]
    assert len(fits) == 1 and dataset.is_constructed
    assert len({id(b.bin_mapper) for b in boosters}) == 1
    for p, booster in zip(grid, boosters):  # each the estimator's fit of its own
        _same_model(booster, HistGBDTRegressor(**BASE, **p).fit(X, y), X)
    assert len(fits) == 1 + len(grid)  # the estimators bin anew each fit


def test_parameters_that_would_bin_again_are_refused():
    X, y = _frame(seed=6)
    dataset = Dataset(X, y, max_bins=63)
    for bad in ({"max_bins": 255}, {"enable_bundle": False}, {"max_conflict_rate": 0.1},
                {"categorical_features": None}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))}=.*differs from the Dataset"):
            train({**BASE, **bad}, dataset)
    train({**BASE, "max_bins": 63}, dataset)  # the same value is fine
    labels = (y > np.median(y)).astype(int)
    classes = Dataset(X, labels)
    train({**BASE, "loss": "log_loss"}, classes)
    with pytest.raises(ValueError, match="other bins"):  # other class weights
        train({**BASE, "loss": "log_loss", "class_weight": "balanced"}, classes)
    with pytest.raises(ValueError, match="other bins"):  # the pooled feature's statistics
        train(BASE, classes)


def test_bad_input_gets_a_clear_error():
    X, y = _task(n=300)
    dataset = Dataset(X, y)
    with pytest.raises(ValueError, match="'num_leaves' is another library's name; "
                                         "hgbt's is 'max_leaf_nodes'"):
        train({"num_leaves": 7}, dataset)
    with pytest.raises(ValueError, match="not a parameter of regression"):
        train({"class_weight": "balanced"}, dataset)
    with pytest.raises(ValueError, match="disagree"):
        train({"max_iter": 5}, dataset, num_boost_round=6)
    with pytest.raises(TypeError, match="hgbt.Dataset"):
        train({}, X)
    with pytest.raises(ValueError, match="no y or sample_weight"):
        HistGBDTRegressor().fit(dataset, y)
    with pytest.raises(ValueError, match="has no label"):
        HistGBDTRegressor().fit(Dataset(X))
    with pytest.raises(ValueError, match="label has shape"):
        Dataset(X, y[:-1])
    with pytest.raises(ValueError, match="[Nn]egative"):
        Dataset(X, y, weight=-np.ones(len(y)))
    other = Dataset(X[:50], y[:50])
    with pytest.raises(ValueError, match="reference is not the training Dataset"):
        train({}, dataset, valid_sets=[other])
    valid = Dataset(X[:50], y[:50], reference=dataset)
    with pytest.raises(ValueError, match="validation set"):
        train({}, valid)
    with pytest.raises(ValueError, match="hold-out of a Dataset"):
        HistGBDTRegressor(early_stopping=True).fit(dataset)
    with pytest.raises(ValueError, match="X has 5 features, but Dataset is expecting 6"):
        Dataset(X[:, :5], y, reference=dataset)


def test_validation_dataset_converts_with_the_references_encoding():
    X, y = _frame(seed=7)
    data = Dataset(X[:2000], y[:2000])
    shuffled = X[2000:].copy()
    shuffled["colour"] = shuffled["colour"].cat.reorder_categories(["red", "blue", "green"])
    valid = Dataset(shuffled, y[2000:], reference=data)
    np.testing.assert_array_equal(valid.X[:, 0], Dataset(X[2000:], y[2000:],
                                                         reference=data).X[:, 0])
    booster = train({**BASE, "early_stopping": True}, data, valid_sets=[valid])
    assert booster.predict(shuffled).tobytes() == booster.predict(X[2000:]).tobytes()


def test_cv_folds_are_the_estimators_fits_of_their_rows():
    X, y = _task(n=1500, seed=8)
    params = {"max_iter": 15, "random_state": 0, "max_leaf_nodes": 15}
    result = cv(params, Dataset(X, y), nfold=3, seed=1, return_boosters=True)
    from sklearn.model_selection import KFold

    losses = []
    for (rows, held), booster in zip(KFold(3, shuffle=True, random_state=1).split(X),
                                     result["boosters"]):
        model = HistGBDTRegressor(**params, early_stopping=False).fit(
            X[rows], y[rows], eval_set=[(X[held], y[held])], eval_names=["valid"])
        _same_model(booster, model, X)
        losses.append(model.evals_result_["valid"]["loss"])
    np.testing.assert_allclose(result["loss-mean"], np.mean(losses, axis=0), rtol=0,
                               atol=0)
    np.testing.assert_allclose(result["loss-std"], np.std(losses, axis=0), rtol=0, atol=0)
    assert result["best_iteration"] == int(np.argmin(np.mean(losses, axis=0)))


def test_a_warm_start_continues_on_a_dataset_as_on_arrays():
    X, y = _frame(seed=9)
    params = dict(BASE, max_iter=5, warm_start=True)
    dataset = Dataset(X, y)
    on_data = HistGBDTRegressor(**params).fit(dataset)
    on_arrays = HistGBDTRegressor(**params).fit(X, y)
    for model, data in ((on_data, dataset), (on_arrays, X)):
        model.set_params(max_iter=9).fit(data, None if model is on_data else y)
    _same_model(on_data.booster_, on_arrays, X)
    assert on_data.n_iter_ == 9


def test_a_warm_start_on_a_dataset_of_other_codes_is_refused():
    X, y = _frame(seed=10)
    model = HistGBDTRegressor(**BASE, warm_start=True).fit(X, y)
    other = X.copy()
    other["colour"] = pd.Categorical(other["colour"].astype(str).replace("red", "pink"))
    with pytest.raises(ValueError, match="codes its categorical columns otherwise"):
        model.set_params(max_iter=20).fit(Dataset(other, y))
    assert model.n_iter_ == BASE["max_iter"]


def test_a_warm_start_does_not_bin_a_fresh_dataset_for_later_fits():
    X, y = _task(seed=11)
    first = HistGBDTRegressor(**BASE, warm_start=True, max_bins=31).fit(X[:1000], y[:1000])
    dataset = Dataset(X, y, max_bins=31)
    first.set_params(max_iter=BASE["max_iter"] + 4).fit(dataset)  # the model's bins
    assert not dataset.is_constructed
    booster = train({**BASE, "max_bins": 31}, dataset)  # binned by its own rows now
    _same_model(booster, HistGBDTRegressor(**BASE, max_bins=31).fit(X, y), X)


def test_a_failed_fit_leaves_a_usable_dataset():
    X, y = _task(seed=12)
    dataset = Dataset(X, y)

    class Boom:
        def after_round(self, iteration, history, estimator):
            if iteration == 3:
                raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        train(BASE, dataset, callbacks=[Boom()])
    _same_model(train(BASE, dataset), HistGBDTRegressor(**BASE).fit(X, y), X)


def test_cv_needs_a_metric_and_follows_scoring():
    X, y = _task(n=600, seed=13)

    def squared(y_true, raw, sample_weight):
        return raw - y_true, np.ones_like(raw)

    with pytest.raises(ValueError, match="set scoring="):
        cv({"loss": squared, "max_iter": 5}, Dataset(X, y), nfold=3)
    result = cv({"loss": squared, "max_iter": 8, "scoring": "r2"}, Dataset(X, y), nfold=3)
    assert result["best_iteration"] == int(np.argmax(result["r2-mean"]))
