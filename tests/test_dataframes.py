"""pandas and polars input, feature names, set_output and metadata routing.

Numeric columns only: categorical columns are tested with the categorical
features.
"""
import re
import warnings
from unittest import SkipTest

import numpy as np
import pandas as pd
import polars as pl
import pytest
import sklearn
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.utils.estimator_checks import (check_classifier_data_not_an_array,
                                            check_dataframe_column_names_consistency,
                                            check_regressor_data_not_an_array,
                                            check_sample_weights_pandas_series)

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from fitted import categorical_by_value

NAMES = ["age", "height", "income", "score"]
# Each hgbt estimator next to the scikit-learn estimator it mirrors.
PAIRS = [(HistGBDTRegressor, HistGradientBoostingRegressor),
         (HistGBDTClassifier, HistGradientBoostingClassifier)]


def _data(n=300, seed=0, task="regression"):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, len(NAMES)))
    X[::9, 1] = np.nan  # missing values survive the DataFrame round trip
    y = X[:, 0] + np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=n)
    if task == "classification":
        y = (y > np.median(y)).astype(int)
    return X, y


def _task(Estimator):
    return "classification" if Estimator is HistGBDTClassifier else "regression"


def _pandas(X):
    return pd.DataFrame(X, columns=NAMES)


def _polars(X):
    return pl.DataFrame(X, schema=NAMES)


# ------------------------------------------------------------- fit / predict
@pytest.mark.parametrize("Estimator", [HistGBDTRegressor, HistGBDTClassifier])
@pytest.mark.parametrize("frame", [_pandas, _polars], ids=["pandas", "polars"])
def test_dataframe_fit_predict_equals_ndarray(Estimator, frame):
    X, y = _data(task=_task(Estimator))
    df = frame(X)
    est = Estimator(max_iter=20, random_state=0).fit(df, y)
    ref = Estimator(max_iter=20, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.predict(df), ref.predict(X))
    assert isinstance(est.predict(df), np.ndarray)
    np.testing.assert_array_equal(est.feature_names_in_, NAMES)
    assert est.feature_names_in_.dtype == object
    assert est.n_features_in_ == len(NAMES)
    assert not hasattr(ref, "feature_names_in_")
    if Estimator is HistGBDTClassifier:
        np.testing.assert_array_equal(est.predict_proba(df), ref.predict_proba(X))
        np.testing.assert_array_equal(est.decision_function(df), ref.decision_function(X))
    staged = list(est.staged_predict(df))
    np.testing.assert_array_equal(staged[-1], ref.predict(X))
    assert est.score(df, y) == ref.score(X, y)


@pytest.mark.parametrize("Estimator", [HistGBDTRegressor, HistGBDTClassifier])
def test_series_targets_and_weights(Estimator):
    X, y = _data(task=_task(Estimator))
    w = np.random.RandomState(1).uniform(0.5, 2, size=y.size)
    ref = Estimator(max_iter=10, random_state=0).fit(X, y, sample_weight=w).predict(X)
    pd_fit = Estimator(max_iter=10, random_state=0).fit(
        _pandas(X), pd.Series(y, name="target"), sample_weight=pd.Series(w))
    pl_fit = Estimator(max_iter=10, random_state=0).fit(
        _polars(X), pl.Series("target", y), sample_weight=pl.Series(w))
    np.testing.assert_array_equal(pd_fit.predict(_pandas(X)), ref)
    np.testing.assert_array_equal(pl_fit.predict(_polars(X)), ref)


def test_string_class_labels_from_a_series():
    X, y = _data(task="classification")
    labels = pd.Series(np.where(y == 1, "yes", "no"), dtype="category")
    clf = HistGBDTClassifier(max_iter=10, random_state=0).fit(_pandas(X), labels)
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])
    assert set(clf.predict(_pandas(X))) <= {"no", "yes"}
    labels = pl.Series(np.where(y == 1, "yes", "no"))
    clf = HistGBDTClassifier(max_iter=10, random_state=0).fit(_polars(X), labels)
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])


def _nullable_frames(X):
    """The same numeric data in several column dtypes; missing as NaN or null."""
    a, b = X[:, 1], np.round(X[:, 0] * 3)
    missing = np.isnan(a)
    return {
        "pandas Float64/Int64 with pd.NA": pd.DataFrame({
            "a": pd.array(np.where(missing, None, a).tolist(), dtype="Float64"),
            "b": pd.array(b.astype(int), dtype="Int64")}),
        "pandas pyarrow": pd.DataFrame({
            "a": pd.array(a, dtype="float64[pyarrow]"),
            "b": pd.array(b.astype(int), dtype="int64[pyarrow]")}),
        "polars null": pl.DataFrame({"a": pl.Series(a).fill_nan(None),
                                     "b": pl.Series(b.astype(int))}),
        "polars uint8": pl.DataFrame({"a": a, "b": pl.Series(b + 10, dtype=pl.UInt8)}),
    }


@pytest.mark.parametrize("kind", list(_nullable_frames(np.zeros((2, 4)))))
def test_numeric_column_dtypes_and_nulls(kind):
    X, y = _data()
    df = _nullable_frames(X)[kind]
    b = np.round(X[:, 0] * 3) + (10 if kind == "polars uint8" else 0)
    ref_X = np.c_[X[:, 1], b]
    ref = HistGBDTRegressor(max_iter=10, random_state=0).fit(ref_X, y)
    est = HistGBDTRegressor(max_iter=10, random_state=0).fit(df, y)
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b"])
    # Nulls are missing values, exactly like NaN.
    np.testing.assert_array_equal(est.predict(df), ref.predict(ref_X))


# -------------------------------------------------------------- feature names
def _messages(fit_X, predict_X, Estimator, y):
    """Warnings and error of predict after fit, with the class name replaced."""
    est = Estimator(max_iter=3, random_state=0).fit(fit_X, y)
    name = Estimator.__name__
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            est.predict(predict_X)
            error = None
        except Exception as exc:  # noqa: BLE001 - compared as text below
            error = (type(exc), str(exc).replace(name, "ESTIMATOR"))
    warned = [(w.category, str(w.message).replace(name, "ESTIMATOR")) for w in record]
    return warned, error


def _name_cases(X, frame):
    df = frame(X)
    renamed = (df.rename({"age": "years"}) if frame is _polars
               else df.rename(columns={"age": "years"}))
    reordered = df[["height", "age", "income", "score"]]
    return {
        "names then none": (df, X),
        "none then names": (X, df),
        "renamed": (df, renamed),
        "reordered": (df, reordered),
        "same": (df, frame(X)),
    }


@pytest.mark.parametrize("frame", [_pandas, _polars], ids=["pandas", "polars"])
@pytest.mark.parametrize("case", ["names then none", "none then names", "renamed",
                                  "reordered", "same"])
@pytest.mark.parametrize("Estimator, Reference", PAIRS)
def test_feature_name_checks_match_scikit_learn(frame, case, Estimator, Reference):
    X, y = _data(task=_task(Estimator))
    fit_X, predict_X = _name_cases(X, frame)[case]
    ours = _messages(fit_X, predict_X, Estimator, y)
    theirs = _messages(fit_X, predict_X, Reference, y)
    assert ours == theirs
    warned, error = ours
    if case == "names then none":
        assert warned == [(UserWarning, "X does not have valid feature names, but "
                           "ESTIMATOR was fitted with feature names")] and error is None
    elif case == "none then names":
        assert warned == [(UserWarning, "X has feature names, but ESTIMATOR was fitted "
                           "without feature names")] and error is None
    elif case == "renamed":
        assert error[0] is ValueError and warned == []
        assert error[1].startswith("The feature names should match those that were "
                                   "passed during fit.")
        assert "- years" in error[1] and "- age" in error[1]
    elif case == "reordered":
        assert error[0] is ValueError
        assert "Feature names must be in the same order as they were in fit." in error[1]
    else:
        assert warned == [] and error is None


def test_fit_on_a_dataframe_warns_nothing():
    """No feature-name warning from fit itself, also with a scorer for early
    stopping (it scores the validated ndarray), warm start or X_val."""
    X, y = _data()
    df = _pandas(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HistGBDTRegressor(max_iter=5).fit(df, y)
        HistGBDTRegressor(max_iter=5, early_stopping=True, scoring="r2").fit(df, y)
        HistGBDTRegressor(max_iter=5, early_stopping=True, scoring="r2",
                          validation_fraction=None).fit(df, y)
        HistGBDTRegressor(max_iter=5, scoring="neg_mean_absolute_error").fit(
            df, y, X_val=df, y_val=y)
        HistGBDTClassifier(max_iter=5, early_stopping=True, scoring="roc_auc").fit(
            df, y > 0)
        est = HistGBDTRegressor(max_iter=3, warm_start=True).fit(df, y)
        est.set_params(max_iter=6).fit(df, y)
        assert est.n_iter_ == 6


def test_non_string_column_names_are_not_feature_names():
    X, y = _data()
    ints = pd.DataFrame(X)  # columns 0..3
    est = HistGBDTRegressor(max_iter=3).fit(ints, y)
    assert not hasattr(est, "feature_names_in_")
    mixed = pd.DataFrame(X, columns=["age", 1, "income", "score"])
    for Est in (HistGBDTRegressor, HistGradientBoostingRegressor):
        with pytest.raises(TypeError, match="Feature names are only supported if all "
                                            "input features have string names"):
            Est(max_iter=3).fit(mixed, y)


def test_wrong_number_of_columns():
    X, y = _data()
    est = HistGBDTRegressor(max_iter=3).fit(X, y)
    with pytest.raises(ValueError, match=re.escape(
            "X has 3 features, but HistGBDTRegressor is expecting 4 features as input")):
        est.predict(X[:, :3])


# --------------------------------------------------------------- set_output
@pytest.mark.parametrize("Estimator, Reference", PAIRS)
def test_predictors_have_no_set_output(Estimator, Reference):
    # scikit-learn adds set_output to transformers only (fit_transform and
    # get_feature_names_out): predictions are arrays, not frames.
    assert not hasattr(Estimator(), "set_output")
    assert hasattr(Estimator(), "set_output") == hasattr(Reference(), "set_output")
    assert not hasattr(Estimator(), "transform")
    X, y = _data(task=_task(Estimator))
    with sklearn.config_context(transform_output="pandas"):
        pred = Estimator(max_iter=3).fit(_pandas(X), y).predict(_pandas(X))
    assert isinstance(pred, np.ndarray)


@pytest.mark.parametrize("output", ["pandas", "polars"])
def test_pipeline_set_output_then_hgbt(output):
    X, y = _data()
    X = np.nan_to_num(X)  # PolynomialFeatures refuses NaN
    df = _pandas(X)
    pipe = Pipeline([("poly", PolynomialFeatures(degree=2, include_bias=False)),
                     ("scale", StandardScaler()),
                     ("model", HistGBDTRegressor(max_iter=20, random_state=0))])
    pipe.set_output(transform=output)
    pipe.fit(df, y)
    model = pipe.named_steps["model"]
    # The model saw a DataFrame: it knows the transformer's output names.
    np.testing.assert_array_equal(model.feature_names_in_,
                                  pipe[:-1].get_feature_names_out())
    assert "age height" in model.feature_names_in_
    frame = pipe[:-1].transform(df)
    assert type(frame).__module__.split(".")[0] == output
    plain = make_pipeline(PolynomialFeatures(degree=2, include_bias=False),
                          StandardScaler(),
                          HistGBDTRegressor(max_iter=20, random_state=0)).fit(X, y)
    np.testing.assert_array_equal(pipe.predict(df), plain.predict(X))


def test_column_transformer_output_names_reach_hgbt():
    X, y = _data()
    df = _pandas(X)
    prep = ColumnTransformer([("scaled", StandardScaler(), ["age", "height"]),
                              ("kept", "passthrough", ["income"])])
    pipe = make_pipeline(prep, HistGBDTRegressor(max_iter=10)).set_output(transform="pandas")
    pipe.fit(df, y)
    np.testing.assert_array_equal(pipe[-1].feature_names_in_,
                                  ["scaled__age", "scaled__height", "kept__income"])


# --------------------------------------------------------- metadata routing
def _weights(n, seed=0):
    w = np.random.RandomState(seed).uniform(0.5, 2.0, size=n)
    w[::3] = 0.0  # a third of the rows does not count at all
    return w


@pytest.mark.parametrize("Estimator", [HistGBDTRegressor, HistGBDTClassifier])
def test_sample_weight_is_routed_through_a_pipeline(Estimator):
    X, y = _data(task=_task(Estimator))
    w = _weights(y.size)
    scaled = StandardScaler().fit_transform(X)
    direct = Estimator(max_iter=20, random_state=0).fit(scaled, y, sample_weight=w)
    unweighted = Estimator(max_iter=20, random_state=0).fit(scaled, y)
    with sklearn.config_context(enable_metadata_routing=True):
        model = Estimator(max_iter=20, random_state=0).set_fit_request(sample_weight=True)
        pipe = Pipeline([("scale", StandardScaler().set_fit_request(sample_weight=False)),
                         ("model", model)])
        pipe.fit(X, y, sample_weight=w)
        routed = pipe.predict(X)
    np.testing.assert_array_equal(routed, direct.predict(scaled))
    if Estimator is HistGBDTRegressor:
        # The weights changed the model: not the unweighted fit.
        assert not np.allclose(routed, unweighted.predict(scaled))
    else:
        assert not np.allclose(pipe.predict_proba(X), unweighted.predict_proba(scaled))


def test_unrequested_sample_weight_is_an_error_under_routing():
    X, y = _data()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("scale", StandardScaler().set_fit_request(sample_weight=False)),
                         ("model", HistGBDTRegressor(max_iter=3))])
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            pipe.fit(X, y, sample_weight=_weights(y.size))
        # Refused by every step: scikit-learn reports weights that reach nothing.
        pipe.set_params(model=HistGBDTRegressor(max_iter=3, random_state=0)
                        .set_fit_request(sample_weight=False))
        with pytest.raises(TypeError, match="not routed to any object"):
            pipe.fit(X, y, sample_weight=_weights(y.size))


def test_sample_weight_is_routed_through_a_search():
    X, y = _data()
    w = _weights(y.size)
    with sklearn.config_context(enable_metadata_routing=True):
        est = (HistGBDTRegressor(max_iter=20, random_state=0)
               .set_fit_request(sample_weight=True).set_score_request(sample_weight=True))
        search = GridSearchCV(est, {"learning_rate": [0.1, 0.3]}, cv=3,
                              error_score="raise")
        search.fit(X, y, sample_weight=w)
        result = cross_validate(est, X, y, cv=3, params={"sample_weight": w},
                                return_estimator=True, return_indices=True)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.5
    best = search.best_estimator_
    direct = HistGBDTRegressor(max_iter=20, learning_rate=best.learning_rate,
                               random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(best.predict(X), direct.predict(X))
    # Each cross-validation fit got the weights of its own training rows.
    for fitted, train in zip(result["estimator"], result["indices"]["train"]):
        direct = HistGBDTRegressor(max_iter=20, random_state=0).fit(
            X[train], y[train], sample_weight=w[train])
        np.testing.assert_array_equal(fitted.predict(X), direct.predict(X))


def test_fit_request_without_routing_is_refused():
    # Outside enable_metadata_routing=True, scikit-learn refuses set_*_request.
    with pytest.raises(RuntimeError, match="enable_metadata_routing"):
        HistGBDTRegressor().set_fit_request(sample_weight=True)


def test_clone_keeps_the_fit_request():
    with sklearn.config_context(enable_metadata_routing=True):
        est = HistGBDTRegressor().set_fit_request(sample_weight=True)
        routing = clone(est).get_metadata_routing()
        assert routing.fit.requests["sample_weight"] is True


# ------------------------------------------------ scikit-learn's pandas checks
ESTIMATORS = [HistGBDTRegressor(max_iter=10), HistGBDTClassifier(max_iter=10)]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_scikit_learn_pandas_checks_run_and_pass(estimator):
    """The estimator checks that need pandas run (pandas is a test
    dependency) and pass; check_dataframe_column_names_consistency is not part
    of parametrize_with_checks, so it runs here."""
    name = type(estimator).__name__
    data_check = (check_regressor_data_not_an_array if isinstance(
        estimator, HistGBDTRegressor) else check_classifier_data_not_an_array)
    for check in (check_sample_weights_pandas_series, data_check,
                  check_dataframe_column_names_consistency):
        try:
            check(name, clone(estimator))
        except SkipTest as skip:  # must not happen: pandas is installed
            pytest.fail(f"{check.__name__} was skipped: {skip}")


def test_parametrize_with_checks_includes_the_pandas_checks():
    from sklearn.utils.estimator_checks import _yield_all_checks

    for estimator in ESTIMATORS:
        names = {getattr(check, "func", check).__name__
                 for check in _yield_all_checks(estimator, legacy=True)}
        assert "check_sample_weights_pandas_series" in names
        assert names & {"check_regressor_data_not_an_array",
                        "check_classifier_data_not_an_array"}


# ------------------------------------------------------------ bulk conversion
def _mixed_pandas(n=400, seed=0):
    """Every numeric column kind next to categories (one with unused ones)."""
    rng = np.random.RandomState(seed)
    na = rng.uniform(size=n) < 0.2
    x = rng.normal(size=n)
    return pd.DataFrame({
        "f64": np.where(na, np.nan, x),
        "f32": x.astype(np.float32),
        "i8": rng.randint(-100, 100, n).astype(np.int8),
        "u64": rng.randint(0, 2**62, n, dtype=np.uint64) * np.uint64(3),
        "i64_big": rng.randint(2**53, 2**62, n, dtype=np.int64),
        "bool": rng.uniform(size=n) < 0.5,
        "Int64": pd.array(np.where(na, None, rng.randint(0, 9, n)).tolist(), dtype="Int64"),
        "Float64": pd.array(np.where(na, None, x).tolist(), dtype="Float64"),
        "boolean": pd.array(np.where(na, None, x > 0).tolist(), dtype="boolean"),
        "arrow_f32": pd.array(x.astype(np.float32), dtype="float32[pyarrow]"),
        "cat": pd.Categorical(rng.choice(["b", "a", "c"], n), categories=["c", "b", "a", "z"]),
        "cat_na": pd.Categorical(np.where(na, None, rng.choice(["x", "y"], n))),
    })


def _column_by_column(X, est):
    """The reference conversion: each column on its own, by-value categories
    looked up one value at a time."""
    by_value = categorical_by_value(est)
    out = np.empty(X.shape)
    for j in range(X.shape[1]):
        if isinstance(X, pd.DataFrame):
            col = X.iloc[:, j]
        elif isinstance(X, pl.DataFrame):
            col = X.to_series(j)
        else:
            col = X.column(j)
        if by_value is not None and by_value[j]:
            lookup = {c: k for k, c in enumerate(est.categorical_categories_[j])}
            values = col.to_list() if not isinstance(col, pd.Series) else list(col)
            out[:, j] = [lookup.get(v, np.nan) if isinstance(v, str) else np.nan
                         for v in values]
        elif isinstance(col, pd.Series):
            out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
        elif isinstance(col, pl.Series):
            out[:, j] = col.cast(pl.Float64).to_numpy()
        else:
            out[:, j] = np.asarray(col, dtype=np.float64)
    return out


def _polars_mixed(df):
    out = pl.from_pandas(df.drop(columns=["cat", "cat_na", "arrow_f32"]))
    return out.with_columns(
        pl.Series("cat", df["cat"].astype(str).tolist(), dtype=pl.Enum(["c", "b", "a", "z"])),
        pl.Series("cat_na", df["cat_na"].astype(object).where(df["cat_na"].notna(), None)
                  .tolist(), dtype=pl.Categorical),
        pl.Series("i32", np.arange(len(df), dtype=np.int32) * 40_000),
        pl.Series("u8", (np.arange(len(df)) % 200).astype(np.uint8)))


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_bulk_conversion_equals_column_by_column(kind):
    import pyarrow as pa
    df = _mixed_pandas()
    numeric = df.drop(columns=["cat", "cat_na"])
    X = {"pandas": df, "polars": _polars_mixed(df),
         "arrow": pa.Table.from_pandas(numeric, preserve_index=False)}[kind]
    before = X.clone() if kind == "polars" else (X.copy() if kind == "pandas" else X)
    y = np.random.RandomState(0).normal(size=len(df))
    est = HistGBDTRegressor(max_iter=3, random_state=0).fit(X, y)
    if kind != "arrow":
        assert categorical_by_value(est).sum() == 2
    for out in (est._validate_fit_X(X, None)[0], est._validate_X(X)):  # fit, predict
        assert out.dtype == np.float64 and out.flags.f_contiguous
        np.testing.assert_array_equal(out, _column_by_column(X, est))
    # the user's frame is untouched
    if kind == "pandas":
        pd.testing.assert_frame_equal(X, before)
    elif kind == "polars":
        assert X.equals(before)
    # the same model as on the reference array
    ref = HistGBDTRegressor(max_iter=3, random_state=0,
                            categorical_features=est.is_categorical_)
    Xref = np.ascontiguousarray(_column_by_column(X, est))
    np.testing.assert_array_equal(ref.fit(Xref, y).predict(Xref), est.predict(X))


@pytest.mark.parametrize("columns, dtype", [
    ({"a": np.float32, "b": bool}, np.float32),
    ({"a": np.float32, "b": np.int16}, np.float32),
    ({"a": np.float32, "b": np.int32}, np.float64),
    ({"a": np.float16}, np.float64),
    ({"a": np.float32, "b": "Float32"}, np.float64),
])
def test_bulk_conversion_keeps_scikit_learn_dtype(columns, dtype):
    """Without categorical columns, a pandas frame gets check_array's dtype."""
    df = pd.DataFrame({k: np.arange(30) % 7 for k in columns}).astype(columns)
    est = HistGBDTRegressor(max_iter=2).fit(df, np.arange(30.0))
    out = est._validate_X(df)
    assert out.dtype == dtype
    expected = sklearn.utils.check_array(df, dtype=[np.float64, np.float32])
    assert expected.dtype == dtype
    np.testing.assert_array_equal(out, expected)


def test_frames_that_are_not_only_numbers_keep_their_errors():
    # string columns are categorical by default (tests/test_frames.py); left
    # out of categorical_features they are refused with what to do
    df = _mixed_pandas(50)
    df["text"] = "a"
    y = np.arange(50.0)
    with pytest.raises(ValueError, match="Feature 'text' holds strings.*from_dtype"):
        HistGBDTRegressor(max_iter=2, categorical_features=["cat", "cat_na"]).fit(df, y)
    with pytest.raises(ValueError, match="Feature 'text' holds strings"):
        HistGBDTRegressor(max_iter=2, categorical_features=None).fit(
            df.drop(columns=["cat", "cat_na"]), y)
    with pytest.raises(ValueError, match="'t' holds strings"):
        HistGBDTRegressor(max_iter=2, categorical_features=None).fit(
            pl.DataFrame({"a": [1.0] * 50, "t": ["x"] * 50}), y)
    df["text"] = [{"a": 1}] * 50  # neither numbers nor strings
    with pytest.raises(ValueError, match="Feature 'text' could not be converted"):
        HistGBDTRegressor(max_iter=2, categorical_features=["cat", "cat_na"]).fit(df, y)
    with pytest.raises(ValueError, match="0 sample"):
        HistGBDTRegressor(max_iter=2).fit(pd.DataFrame({"a": []}, dtype=float), [])


def test_wide_frame_one_and_two_threads_identical():
    rng = np.random.RandomState(0)
    df = pd.concat([_mixed_pandas(300, seed) for seed in range(8)], axis=1)
    df.columns = [f"c{j}" for j in range(df.shape[1])]
    y = rng.normal(size=300)
    preds = [HistGBDTRegressor(max_iter=5, n_threads=t, random_state=0).fit(df, y).predict(df)
             for t in (1, 2)]
    np.testing.assert_array_equal(*preds)
