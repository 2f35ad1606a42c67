"""Export to ONNX (run with onnxruntime) and Treelite (run with its reference
predictor, ``treelite.gtil``): the exported models predict what the hgbt model
predicts, within float32 rounding, on numeric, missing and categorical
values (unseen categories included)."""
import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor

# CI installs both (the 'test' extra); the guard only keeps a bare install's
# test run going.
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")
treelite = pytest.importorskip("treelite")

from hgbt.export import numeric_input, to_onnx, to_treelite  # noqa: E402
from hgbt.export.onnx import float32_at_most  # noqa: E402

N_CODES = 10


def make_data(n, seed, unseen=False):
    """Numeric columns 0-2 (NaN in 10%), integer categorical codes in column 3
    (NaN in 8%), and a target driven by all of them and by missingness."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, N_CODES, size=n)
    X[rng.random(X.shape) < 0.1] = np.nan
    effect = np.array([0.0, 2.0, -1.0, 3.0, 0.5, -2.0, 1.0, 2.5, -1.5, 0.3])
    codes = np.nan_to_num(X[:, 3], nan=0).astype(int)
    y = (np.nan_to_num(X[:, 0], nan=1.5) + np.where(np.isnan(X[:, 3]), 1.0, effect[codes])
         + 0.5 * np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=n))
    if unseen:  # codes unknown at fit, out of the code range, negative, +-inf
        X[:12, 3] = [10, 11, 37, 254, 255, 256, 1e9, -1, -np.inf, np.inf, np.nan, 2.0]
        X[12:16, 0] = [np.inf, -np.inf, 0.0, -0.0]
    return X, y


def rows():
    return make_data(600, 1, unseen=True)[0]


def fit(estimator, y_map=lambda y: y):
    X, y = make_data(1500, 0)
    return estimator.set_params(categorical_features=[3], max_iter=25,
                                random_state=0).fit(X, y_map(y))


def onnx_run(model, X, dtype=np.float32, **kwargs):
    onx = to_onnx(model, dtype=dtype, **kwargs)
    onnx.checker.check_model(onx, full_check=True)
    session = ort.InferenceSession(onx.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"X": X.astype(dtype)})


def close(actual, expected, rtol=1e-5):
    """Equal within float32 rounding of the scores (relative to their scale)."""
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def test_fixture_has_categorical_splits_both_ways():
    # the categorical tests below mean something only if splits send missing
    # (and so unknown) codes both left and right
    frame = fit(HistGBDTRegressor()).trees_to_dataframe()
    categorical = frame[frame["split_type"] == "categorical"]
    assert set(categorical["missing_go_to_left"]) == {True, False}


@pytest.mark.parametrize("loss, y_map", [
    ("squared_error", lambda y: y),
    ("absolute_error", lambda y: y),
    ("poisson", lambda y: np.exp(y / 3)),
    ("gamma", lambda y: np.exp(y / 3)),
])
def test_regressor_onnx_and_treelite_match_predict(loss, y_map):
    model = fit(HistGBDTRegressor(loss=loss), y_map)
    X = rows()
    X32 = X.astype(np.float32)
    expected32 = model.predict(X32)  # hgbt on the float32 values ONNX reads
    (got,) = onnx_run(model, X)
    assert got.shape == (X.shape[0], 1)
    close(got[:, 0], expected32)
    (got,) = onnx_run(model, X, dtype=np.float64)
    assert got.dtype == np.float64
    close(got[:, 0], model.predict(X))
    tl = to_treelite(model)
    close(treelite.gtil.predict(tl, X).reshape(-1), model.predict(X), rtol=1e-9)
    raw = model._raw_predict(X)[0]
    close(treelite.gtil.predict(tl, X, pred_margin=True).reshape(-1), raw, rtol=1e-9)


def test_ranker_onnx_and_treelite_match_predict():
    from hgbt import HistGBDTRanker
    X, y = make_data(1500, 0)
    relevance = np.digitize(y, np.quantile(y, [0.5, 0.8, 0.95]))
    qid = np.repeat(np.arange(75), 20)
    model = HistGBDTRanker(categorical_features=[3], max_iter=25, random_state=0,
                           early_stopping=False).fit(X, relevance, qid=qid)
    X = rows()
    (got,) = onnx_run(model, X)
    close(got[:, 0], model.predict(X.astype(np.float32)))
    (got,) = onnx_run(model, X, dtype=np.float64)
    close(got[:, 0], model.predict(X))
    tl = to_treelite(model)
    close(treelite.gtil.predict(tl, X).reshape(-1), model.predict(X), rtol=1e-9)


@pytest.mark.parametrize("loss", ["cox", "aft"])
def test_survival_onnx_and_treelite_match_predict(loss):
    from hgbt import HistGBDTSurvival
    X, y = make_data(1500, 0)
    time = np.exp(y / 4)
    target = np.array(list(zip(np.arange(1500) % 3 > 0, time)),
                      dtype=[("event", bool), ("time", float)])
    model = HistGBDTSurvival(loss, categorical_features=[3], max_iter=25, random_state=0,
                             early_stopping=False).fit(X, target)
    X = rows()
    (got,) = onnx_run(model, X, dtype=np.float64)
    close(got[:, 0], model.predict(X))
    tl = to_treelite(model)
    close(treelite.gtil.predict(tl, X).reshape(-1), model.predict(X), rtol=1e-9)


def test_float32_thresholds_route_float32_values_exactly():
    # just above and below and on each threshold of a model fit on values
    # that are not float32 numbers
    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 2)) * 1e3 + np.pi
    y = np.sin(X[:, 0] / 100) + X[:, 1] / 1e3
    model = HistGBDTRegressor(max_iter=10, max_bins=255).fit(X, y)
    thresholds = np.unique(model.trees_to_dataframe()["threshold"].dropna())
    f = float32_at_most(thresholds)
    edge = np.concatenate([f, np.nextafter(f, np.float32(np.inf)),
                           np.nextafter(f, np.float32(-np.inf))])
    X_edge = np.column_stack([edge, edge[::-1]]).astype(np.float32)
    (got,) = onnx_run(model, X_edge)
    close(got[:, 0], model.predict(X_edge))


@pytest.mark.parametrize("dataset", ["diabetes", "breast_cancer"])
def test_default_export_agrees_on_float64_real_data(dataset):
    """The default export casts float64 rows to float32; thresholds that
    float32 keeps (data/thresholds.py) route every training value as
    predict does. Both tables hold float64 values that are not float32
    numbers, and features with more distinct values than max_bins (their
    thresholds are greedy cuts)."""
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    model = (HistGBDTRegressor() if dataset == "diabetes" else HistGBDTClassifier())
    model.set_params(max_iter=100, max_bins=63, early_stopping=False, random_state=0)
    model.fit(X, y)
    assert (X.astype(np.float32) != X).any()
    onnx_output = onnx_run(model, X)  # float32 input, as to_onnx's default
    if dataset == "diabetes":
        close(onnx_output[0][:, 0], model.predict(X), rtol=1e-6)
    else:
        np.testing.assert_array_equal(onnx_output[0], model.predict(X))
        np.testing.assert_allclose(onnx_output[1], model.predict_proba(X), atol=1e-6)
    tl = to_treelite(model)
    X32 = X.astype(np.float32)  # Treelite on float32 rows too
    raw = model._raw_predict(X)[0]
    close(treelite.gtil.predict(tl, X32, pred_margin=True).reshape(-1), raw, rtol=1e-6)


def test_float32_at_most():
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.integers(-30, 30, 2000),
                        [0.0, -0.0, 1e300, -1e300, np.inf, -np.inf, 1.5, 3.4028235e38]])
    f = float32_at_most(t)
    assert f.dtype == np.float32
    assert np.all(f.astype(np.float64) <= t)
    with np.errstate(over="ignore"):
        up = np.nextafter(f, np.float32(np.inf))
    assert np.all((up.astype(np.float64) > t) | (f == np.float32(np.inf)))
    assert np.isnan(float32_at_most([np.nan])[0])


def test_binary_classifier():
    model = fit(HistGBDTClassifier(), lambda y: np.where(y > 1.0, 7, 3))
    X = rows()
    X32 = X.astype(np.float32)
    label, proba = onnx_run(model, X)
    expected = model.predict_proba(X32)
    close(proba, expected)
    clear = np.abs(expected[:, 1] - 0.5) > 1e-4  # ties may break either way
    assert np.array_equal(label[clear], model.predict(X32)[clear])
    label, proba = onnx_run(model, X, dtype=np.float64)
    close(proba, model.predict_proba(X))
    tl = to_treelite(model)
    close(treelite.gtil.predict(tl, X).reshape(-1), model.predict_proba(X)[:, 1],
          rtol=1e-9)
    close(treelite.gtil.predict(tl, X, pred_margin=True).reshape(-1),
          model.decision_function(X), rtol=1e-9)


def test_multiclass_classifier_with_string_labels():
    names = np.array(["low", "mid", "high", "top"])
    model = fit(HistGBDTClassifier(), lambda y: names[np.digitize(y, [0.0, 1.0, 2.5])])
    X = rows()
    X32 = X.astype(np.float32)
    label, proba = onnx_run(model, X)
    expected = model.predict_proba(X32)
    close(proba, expected)
    top2 = np.sort(expected, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4
    assert np.array_equal(label[clear], model.predict(X32)[clear])
    tl = to_treelite(model)
    close(treelite.gtil.predict(tl, X).reshape(X.shape[0], -1), model.predict_proba(X),
          rtol=1e-6)  # treelite's softmax is float32
    close(treelite.gtil.predict(tl, X, pred_margin=True).reshape(X.shape[0], -1),
          model.decision_function(X), rtol=1e-9)


def test_fractional_codes_follow_missing_values_in_onnx():
    # hgbt sends a fractional code the missing way; so does the ONNX chain
    model = fit(HistGBDTRegressor())
    X = rows()
    finite = np.isfinite(X[:, 3])
    X[finite, 3] = np.abs(X[finite, 3]) % 12 + 0.5
    (got,) = onnx_run(model, X)
    close(got[:, 0], model.predict(X.astype(np.float32)))


def test_pandas_categorical_input():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    levels = list("abcdefgh")
    frame = pd.DataFrame({"x": rng.normal(size=1200),
                          "c": pd.Categorical(rng.choice(levels, size=1200),
                                              categories=levels)})
    effect = dict(zip(levels, [0, 3, -2, 1, 4, -1, 2, 0.5]))
    y = frame["x"].to_numpy() + frame["c"].map(effect).astype(float).to_numpy()
    model = HistGBDTRegressor(max_iter=20, random_state=0).fit(frame, y)
    test = pd.DataFrame({"x": rng.normal(size=40),
                         "c": pd.Categorical(rng.choice(levels + ["new"], size=40),
                                             categories=["new"] + levels[::-1])})
    test.loc[:3, "c"] = np.nan
    before = test.copy()
    X = numeric_input(model, test)
    pd.testing.assert_frame_equal(test, before)  # the user's frame is not modified
    assert X.dtype == np.float64 and X.shape == (40, 2)
    (got,) = onnx_run(model, X)
    close(got[:, 0], model.predict(test.astype({"x": np.float32})))
    close(treelite.gtil.predict(to_treelite(model), X).reshape(-1), model.predict(test),
          rtol=1e-9)


def test_skl2onnx_to_onnx_works_after_import():
    import hgbt.export  # noqa: F401  (registers the converters)

    X, _ = make_data(50, 3)
    X32 = X.astype(np.float32)
    regressor = fit(HistGBDTRegressor())
    onx = skl2onnx.to_onnx(regressor, X32)
    session = ort.InferenceSession(onx.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: X32})
    close(got[:, 0], regressor.predict(X32))

    classifier = fit(HistGBDTClassifier(), lambda y: (y > 1.0).astype(int))
    onx = skl2onnx.to_onnx(classifier, X32)  # default: probabilities as a ZipMap
    session = ort.InferenceSession(onx.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    label, proba = session.run(None, {session.get_inputs()[0].name: X32})
    expected = classifier.predict_proba(X32)
    close(np.array([[row[c] for c in classifier.classes_] for row in proba]), expected)
    clear = np.abs(expected[:, 1] - 0.5) > 1e-4
    assert np.array_equal(label[clear], classifier.predict(X32)[clear])


@pytest.mark.parametrize("estimator, y_map", [
    (HistGBDTRegressor(), lambda y: y),
    (HistGBDTClassifier(), lambda y: (y > 0).astype(int)),
])
def test_model_cut_to_no_round(estimator, y_map):
    # the validation target is the training one reversed: the first round
    # scores worse there, truncate_at_best leaves no tree, and the exported
    # models predict the baseline
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(size=(200, 2)), rng.normal(size=(200, 2))
    y, y_val = y_map(X[:, 0]), y_map(-X_val[:, 0])
    model = estimator.set_params(max_iter=5, truncate_at_best=True, n_iter_no_change=1,
                                 min_samples_leaf=2, random_state=0)
    model.fit(X, y, X_val=X_val, y_val=y_val)
    assert model.n_iter_ == 0
    method = model.predict_proba if hasattr(model, "classes_") else model.predict
    got = onnx_run(model, X)[-1]
    close(got.reshape(method(X).shape), method(X))
    got = treelite.gtil.predict(to_treelite(model), X)
    binary = len(getattr(model, "classes_", ())) == 2  # treelite: P(positive class)
    expected = method(X)[:, 1] if binary else method(X)
    close(got.reshape(expected.shape), expected, rtol=1e-9)


def test_model_with_pooled_categories_is_refused():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 400, size=(2000, 1)).astype(float)  # codes >= 255: pooled
    y = (X[:, 0] % 7) + rng.normal(size=2000)
    model = HistGBDTRegressor(max_iter=3, categorical_features=[0]).fit(X, y)
    with pytest.raises(ValueError, match="more than 255 categories"):
        to_onnx(model)
    with pytest.raises(ValueError, match="more than 255 categories"):
        to_treelite(model)


def test_not_an_hgbt_model_or_not_fitted():
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression

    with pytest.raises(TypeError, match="hgbt estimator"):
        to_treelite(LinearRegression())
    with pytest.raises(NotFittedError):
        to_onnx(HistGBDTRegressor())
