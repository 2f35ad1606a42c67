"""Persistence: pickle / joblib (with the hgbt version check) and the JSON model format."""
import copy
import json
import pickle
import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import hgbt
from hgbt import (HistGBDTClassifier, HistGBDTRegressor, InconsistentVersionWarning,
                  load_model)
from hgbt.persistence import FORMAT_VERSION, model_from_dict, model_to_dict
from fitted import (all_trees, baseline_prediction, bin_mapper, class_weights, fit_seed,
                   set_tree, tree_at)


# ------------------------------------------------------------------ fixtures
def _X(n, n_features=5, seed=0, nan=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < nan] = np.nan
    return X


def _fit_regressor(seed=0, **params):
    X = _X(600, seed=seed)
    y = 2 * np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1])) + 0.1 * seed
    params = {"max_iter": 12, "random_state": 0, **params}
    return HistGBDTRegressor(**params).fit(X, y), X


def _labels(X, classes):
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 2])
    edges = np.quantile(score, np.linspace(0, 1, len(classes) + 1)[1:-1])
    return np.asarray(classes)[np.searchsorted(edges, score)]


def _fit_classifier(classes, seed=0, **params):
    X = _X(600, seed=seed)
    y = _labels(X, classes)
    params = {"max_iter": 8, "random_state": 0, **params}
    return HistGBDTClassifier(**params).fit(X, y), X


MODELS = {
    "regressor": lambda: _fit_regressor(),
    "binary-str": lambda: _fit_classifier(np.array(["no", "yes"])),
    "multiclass-str": lambda: _fit_classifier(np.array(["ant", "bee", "cat", "dog"])),
    "binary-bool": lambda: _fit_classifier(np.array([False, True])),
    "multiclass-int": lambda: _fit_classifier(np.array([-3, 7, 100])),
    "multiclass-float": lambda: _fit_classifier(np.array([-1.0, 0.0, 1e6])),
    "binary-object": lambda: _fit_classifier(np.array(["a", "b"], dtype=object)),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    return MODELS[request.param]()


def _outputs(model, X):
    out = {"predict": model.predict(X)}
    if hasattr(model, "classes_"):
        out["proba"] = model.predict_proba(X)
        out["decision"] = model.decision_function(X)
    out["staged"] = np.stack([np.asarray(s, dtype=float) for s in model.staged_predict(X)]
                             if not hasattr(model, "classes_")
                             else list(model.staged_decision_function(X)))
    return out


def _assert_same_model(a, b, X):
    """Bit-identical outputs and stored trees."""
    oa, ob = _outputs(a, X), _outputs(b, X)
    for key in oa:
        assert oa[key].dtype == ob[key].dtype, key
        assert oa[key].shape == ob[key].shape, key
        if oa[key].dtype == object:  # labels: bytes would be pointers
            assert oa[key].tolist() == ob[key].tolist(), key
            assert [type(v) for v in oa[key]] == [type(v) for v in ob[key]], key
        else:
            assert oa[key].tobytes() == ob[key].tobytes(), key
    ta = [t.nodes for t in all_trees(a)]
    tb = [t.nodes for t in all_trees(b)]
    assert len(ta) == len(tb) == a.n_iter_ * a.n_trees_per_iteration_
    assert all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(ta, tb))
    assert baseline_prediction(a).tobytes() == baseline_prediction(b).tobytes()
    for t1, t2 in zip(bin_mapper(a).bin_thresholds_, bin_mapper(b).bin_thresholds_):
        assert t1.tobytes() == t2.tobytes()
    if hasattr(a, "classes_"):
        assert a.classes_.dtype == b.classes_.dtype
        assert a.classes_.tolist() == b.classes_.tolist()
        assert type(a.classes_[0]) is type(b.classes_[0])
    assert a.get_params() == b.get_params()
    assert b.n_features_in_ == a.n_features_in_
    assert b.n_iter_ == a.n_iter_ and b.n_trees_per_iteration_ == a.n_trees_per_iteration_


def _json_round_trip(model, tmp_path, name="model.json"):
    path = tmp_path / name
    model.save_model(path)
    return load_model(path)


# --------------------------------------------------------------- round-trips
def test_pickle_round_trip(fitted):
    model, X = fitted
    _assert_same_model(model, pickle.loads(pickle.dumps(model)), X)


def test_joblib_round_trip(fitted, tmp_path):
    model, X = fitted
    joblib.dump(model, tmp_path / "model.joblib")
    _assert_same_model(model, joblib.load(tmp_path / "model.joblib"), X)


def test_json_round_trip(fitted, tmp_path):
    model, X = fitted
    loaded = _json_round_trip(model, tmp_path)
    assert type(loaded) is type(model)
    _assert_same_model(model, loaded, X)
    # Saving the loaded model again writes the same document.
    loaded.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == (tmp_path / "model.json").read_text()


class _Annotated(HistGBDTRegressor):
    """A user's subclass that keeps an attribute of its own."""

    def fit(self, X, y):
        super().fit(X, y)
        self.fit_rows_ = np.arange(len(y))
        return self


def test_a_pickle_keeps_a_users_attributes_a_file_does_not(tmp_path):
    X = np.random.default_rng(0).normal(size=(60, 3))
    model = _Annotated(max_iter=3).fit(X, X[:, 0])
    restored = pickle.loads(pickle.dumps(model))
    assert type(restored) is _Annotated
    np.testing.assert_array_equal(restored.fit_rows_, model.fit_rows_)
    # a model file holds the model (as LightGBM's and XGBoost's): what a user
    # set on the estimator is not written
    plain = HistGBDTRegressor(max_iter=3).fit(X, X[:, 0])
    plain.fit_rows_ = np.arange(60)
    loaded = _json_round_trip(plain, tmp_path)
    assert not hasattr(loaded, "fit_rows_")
    np.testing.assert_array_equal(loaded.predict(X), plain.predict(X))
    # a pickled attribute may not hide a method
    model.predict = None
    with pytest.raises(ValueError, match=r"\['predict'\] would hide"):
        pickle.loads(pickle.dumps(model))
    # an unfitted one with scikit-learn's callback bookkeeping pickles too
    unfitted = HistGBDTRegressor()
    unfitted._skl_callbacks = []
    assert pickle.loads(pickle.dumps(unfitted))._skl_callbacks == []


def test_predictions_differ_between_models(tmp_path):
    """The round-trip checks can fail: another model predicts differently."""
    a, X = _fit_regressor(seed=0)
    b, _ = _fit_regressor(seed=1)
    with pytest.raises(AssertionError):
        _assert_same_model(a, _json_round_trip(b, tmp_path), X)


def test_json_round_trip_multi_threaded_large_predict(tmp_path):
    """Predicting above the parallel-row threshold gives the same bits too."""
    model, _ = _fit_classifier(np.array(["x", "y", "z"]), n_threads=2)
    X = _X(5000, seed=9)
    loaded = _json_round_trip(model, tmp_path)
    assert model.predict_proba(X).tobytes() == loaded.predict_proba(X).tobytes()


def test_json_round_trip_infinite_values(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    X[:40, 0] = -np.inf
    X[40:80, 1] = np.inf
    X[80:120, 2] = np.nan
    y = np.isinf(X[:, 0]) * 3.0 + np.isinf(X[:, 1]) * -2.0 + np.isnan(X[:, 2]) * 5.0
    model = HistGBDTRegressor(max_iter=10, random_state=0).fit(X, y)
    thresholds = np.concatenate(bin_mapper(model).bin_thresholds_)
    node_thresholds = np.concatenate([t.nodes["num_threshold"]
                                      for t in all_trees(model)])
    assert np.isneginf(thresholds).any() and np.isposinf(node_thresholds).any()
    path = tmp_path / "inf.json"
    model.save_model(path)
    text = path.read_text()
    assert '"-inf"' in text and '"inf"' in text

    def no_constants(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    json.loads(text, parse_constant=no_constants)  # strict JSON: no NaN / Infinity
    X_test = np.array([[-np.inf, 0.0, np.nan], [0.0, np.inf, 1.0], [np.nan] * 3,
                       [np.inf, -np.inf, -np.inf]])
    _assert_same_model(model, load_model(path), np.vstack([X_test, X]))


def test_json_round_trip_feature_names_and_params(tmp_path):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_X(500, n_features=4), columns=["age", "ht", "wt", "bmi"])
    y = _labels(X.to_numpy(), np.array([1, 2, 3]))
    model = HistGBDTClassifier(
        max_iter=6, class_weight={1: 1.0, 2: 2.5, 3: 0.5}, interaction_cst=[[0, 1], {2, 3}],
        random_state=np.random.RandomState(5), learning_rate=0.3, min_gain_to_split=1e-9,
        max_leaf_nodes=None, max_depth=3).fit(X, y)
    loaded = _json_round_trip(model, tmp_path)
    assert loaded.feature_names_in_.tolist() == ["age", "ht", "wt", "bmi"]
    assert loaded.feature_names_in_.dtype == object
    assert loaded.class_weight == {1: 1.0, 2: 2.5, 3: 0.5}
    assert loaded.interaction_cst == [[0, 1], {2, 3}]
    assert isinstance(loaded.random_state, np.random.RandomState)
    expected = copy.deepcopy(model.random_state).randint(10**9)
    assert loaded.random_state.randint(10**9) == expected
    np.testing.assert_array_equal(class_weights(loaded), class_weights(model))
    assert fit_seed(loaded) == fit_seed(model)
    assert loaded.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # feature names are checked as before
        loaded.predict(X)
    with pytest.warns(UserWarning, match="feature names"):
        loaded.predict(X.to_numpy())


def test_json_round_trip_early_stopping_state(tmp_path):
    X = _X(12_000, n_features=4, seed=4)
    y = np.nan_to_num(X[:, 0]) + 0.3 * np.random.default_rng(0).normal(size=len(X))
    model = HistGBDTRegressor(max_iter=20, early_stopping=True, random_state=0).fit(X, y)
    loaded = _json_round_trip(model, tmp_path)
    np.testing.assert_array_equal(loaded.train_score_, model.train_score_)
    np.testing.assert_array_equal(loaded.validation_score_, model.validation_score_)
    assert len(loaded.validation_score_) == model.n_iter_ + 1


@pytest.mark.parametrize("make", [
    lambda: _fit_regressor(max_iter=5),
    lambda: _fit_classifier(np.array(["a", "b", "c"]), max_iter=5, class_weight="balanced"),
])
def test_warm_start_after_json_load_continues_like_original(make, tmp_path):
    model, X = make()
    y = model.predict(X)  # any valid target of the task
    if isinstance(model, HistGBDTRegressor):  # one the model does not fit yet
        y = y + np.nan_to_num(X[:, 2])
    loaded = _json_round_trip(model, tmp_path)
    original = pickle.loads(pickle.dumps(model))
    for m in (loaded, original):
        m.set_params(warm_start=True, max_iter=9).fit(X, y)
        assert m.n_iter_ == 9
    _assert_same_model(original, loaded, X)


@pytest.mark.parametrize("model_name", ["regressor", "multiclass-str"])
def test_deepcopy_and_copy_do_not_warn(model_name):
    model, X = MODELS[model_name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for other in (copy.deepcopy(model), copy.copy(model),
                      pickle.loads(pickle.dumps(model))):
            assert other.predict(X).tobytes() == model.predict(X).tobytes()


# ------------------------------------------------------------ pickle version
def test_pickle_records_version_without_touching_the_estimator():
    model, _ = _fit_regressor(max_iter=2)
    state = model.__getstate__()
    assert state["_hgbt_version"] == hgbt.__version__
    assert "_hgbt_version" not in vars(model)
    restored = pickle.loads(pickle.dumps(model))
    assert "_hgbt_version" not in vars(restored)


def test_pickle_payload_is_checked_before_it_is_unpickled(monkeypatch):
    # A damaged byte of the payload is refused by its checksum: pickle.loads
    # never reads it (a damaged memo index could make it allocate gigabytes).
    model, X = _fit_regressor(max_iter=3)
    state = model.__getstate__()
    assert set(state) == {"_hgbt_version", "_hgbt_payload", "_hgbt_sha256"}
    payload = bytearray(state["_hgbt_payload"])
    payload[len(payload) // 2] ^= 0xFF
    calls = []
    real_loads = pickle.loads
    monkeypatch.setattr(pickle, "loads", lambda data: calls.append(data) or real_loads(data))
    other = HistGBDTRegressor.__new__(HistGBDTRegressor)
    with pytest.raises(ValueError, match="checksum"):
        other.__setstate__(dict(state, _hgbt_payload=bytes(payload)))
    assert calls == []
    for bad in ({"_hgbt_payload": "text"}, {"_hgbt_sha256": None}):
        with pytest.raises(ValueError, match="checksum"):
            other.__setstate__(dict(state, **bad))
    monkeypatch.undo()
    restored = pickle.loads(pickle.dumps(model))
    assert restored.predict(X).tobytes() == model.predict(X).tobytes()


def test_pickles_without_payload_still_load():
    # written before payloads: the state dict itself, still checked
    model, X = _fit_regressor(max_iter=3)
    state = pickle.loads(model.__getstate__()["_hgbt_payload"])
    other = HistGBDTRegressor.__new__(HistGBDTRegressor)
    with pytest.warns(InconsistentVersionWarning, match="unknown"):
        other.__setstate__(dict(state))
    assert other.predict(X).tobytes() == model.predict(X).tobytes()
    state["_hgbt_version"] = hgbt.__version__
    state["n_features_in_"] = 99
    with pytest.raises(ValueError):
        HistGBDTRegressor.__new__(HistGBDTRegressor).__setstate__(state)


def test_unpickle_from_other_version_warns():
    model, X = _fit_regressor(max_iter=3)
    state = model.__getstate__()
    state["_hgbt_version"] = "0.0.1"
    other = HistGBDTRegressor.__new__(HistGBDTRegressor)
    with pytest.warns(InconsistentVersionWarning) as record:
        other.__setstate__(state)
    [w] = [w for w in record if issubclass(w.category, InconsistentVersionWarning)]
    assert w.message.estimator_name == "HistGBDTRegressor"
    assert w.message.original_hgbt_version == "0.0.1"
    assert w.message.current_hgbt_version == hgbt.__version__
    assert "0.0.1" in str(w.message) and hgbt.__version__ in str(w.message)
    assert issubclass(InconsistentVersionWarning, UserWarning)
    assert "_hgbt_version" not in vars(other)
    assert other.predict(X).tobytes() == model.predict(X).tobytes()


def test_unpickle_bytes_written_by_other_version_warns(monkeypatch):
    model, X = _fit_classifier(np.array(["a", "b"]), max_iter=3)
    monkeypatch.setattr(hgbt.core.version, "__version__", "9.9.9")
    data = pickle.dumps(model)
    monkeypatch.undo()
    with pytest.warns(InconsistentVersionWarning, match="from hgbt version 9.9.9"):
        restored = pickle.loads(data)
    assert restored.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()


def test_unpickle_without_recorded_version_warns():
    model, _ = _fit_regressor(max_iter=2)
    state = model.__getstate__()
    del state["_hgbt_version"]
    other = HistGBDTRegressor.__new__(HistGBDTRegressor)
    with pytest.warns(InconsistentVersionWarning, match="unknown"):
        other.__setstate__(state)


def test_unpickle_same_version_is_silent(tmp_path):
    model, _ = _fit_regressor(max_iter=2)
    joblib.dump(model, tmp_path / "m.joblib")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.loads(pickle.dumps(model))
        joblib.load(tmp_path / "m.joblib")


def test_unfitted_estimator_pickles():
    model = HistGBDTClassifier(max_iter=3, class_weight="balanced")
    restored = pickle.loads(pickle.dumps(model))
    assert restored.get_params() == model.get_params()
    assert not hasattr(restored, "n_iter_")


# ---------------------------------------------------------- save: refusals
def _custom_loss(y_true, raw, sample_weight):
    return raw - y_true, np.ones_like(raw)


def test_save_callable_loss_is_a_clear_error(tmp_path):
    X = _X(300)
    y = np.nan_to_num(X[:, 0])
    model = HistGBDTRegressor(loss=_custom_loss, max_iter=3).fit(X, y)
    path = tmp_path / "custom.json"
    with pytest.raises(ValueError, match="custom objective .*cannot be saved to JSON"):
        model.save_model(path)
    assert not path.exists()
    # Pickle still works for such a model.
    restored = pickle.loads(pickle.dumps(model))
    assert restored.predict(X).tobytes() == model.predict(X).tobytes()


def test_save_callable_scoring_is_a_clear_error(tmp_path):
    X = _X(300)
    y = np.nan_to_num(X[:, 0])
    model = HistGBDTRegressor(max_iter=3, scoring=lambda est, X, y: 0.0).fit(X, y)
    with pytest.raises(ValueError, match="callable scoring cannot be saved"):
        model.save_model(tmp_path / "s.json")


def test_save_unfitted_raises(tmp_path):
    with pytest.raises(NotFittedError):
        HistGBDTRegressor().save_model(tmp_path / "u.json")


# ------------------------------------------------------- load: corrupt files
@pytest.fixture(scope="module")
def saved():
    """A multiclass model (3 trees per round) and its document."""
    model, X = _fit_classifier(np.array(["a", "b", "c"]), max_iter=4)
    return model, X, model_to_dict(model)


def _write(tmp_path, document, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def _internal_node(tree):
    nodes = tree["nodes"]
    return next(i for i, leaf in enumerate(nodes["is_leaf"]) if not leaf and i > 0)


def test_document_round_trip_in_memory(saved):
    model, X, document = saved
    _assert_same_model(model, model_from_dict(json.loads(json.dumps(document))), X)


@pytest.mark.parametrize("cut", [0.0, 0.01, 0.5, 0.99])
def test_truncated_file(saved, tmp_path, cut):
    model, _, _ = saved
    path = tmp_path / "m.json"
    model.save_model(path)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * cut)])
    with pytest.raises(ValueError, match="not valid JSON"):
        load_model(path)


def test_garbage_and_non_utf8(tmp_path):
    for content in (b"\x89PNG\r\n\x1a\n\x00\xff", b"[1, 2, 3]", b'"hgbt-model"', b"null",
                    b"[" * 100_000, b'{"format": NaN}'):
        path = tmp_path / "g.json"
        path.write_bytes(content)
        with pytest.raises(ValueError):
            load_model(path)


def _mutated(document, edit):
    doc = copy.deepcopy(document)
    edit(doc)
    return doc


def _set_field(field, value, tree=(0, 0), node=None):
    def edit(doc):
        t = doc["fitted"]["trees"][tree[0]][tree[1]]
        t["nodes"][field][_internal_node(t) if node is None else node] = value
    return edit


def _tree0(doc):
    return doc["fitted"]["trees"][0][0]


CORRUPTIONS = {
    "missing fitted": (lambda d: d.pop("fitted"), "missing key 'fitted'"),
    "missing params": (lambda d: d.pop("params"), "missing key 'params'"),
    "missing trees": (lambda d: d["fitted"].pop("trees"), "missing key 'trees'"),
    "missing baseline": (lambda d: d["fitted"].pop("baseline"), "missing key 'baseline'"),
    "missing bin mapper": (lambda d: d["fitted"].pop("bin_mapper"),
                           "missing key 'bin_mapper'"),
    "missing node field": (lambda d: _tree0(d)["nodes"].pop("left"), "missing key 'left'"),
    "missing format_version": (lambda d: d.pop("format_version"),
                               "missing key 'format_version'"),
    "unknown node field": (lambda d: _tree0(d)["nodes"].update(extra=[0]),
                           "unknown node fields"),
    "node dtype mismatch": (lambda d: d["fitted"]["node_dtype"].pop(),
                            "node fields differ"),
    "child out of range": (_set_field("left", 10_000), "child index out of range"),
    "right child out of range": (_set_field("right", 2**32 - 1, tree=(2, 1)),
                                 "child index out of range"),
    "negative child": (_set_field("left", -1), "out of the range of uint32"),
    "child is root (cycle)": (_set_field("right", 0), "cycle"),
    "self loop (cycle)": (lambda d: _set_field("left", _internal_node(_tree0(d)))(d),
                          "more than one parent|cycle"),
    "shared child": (lambda d: _set_field(
        "left", _tree0(d)["nodes"]["right"][_internal_node(_tree0(d))])(d),
        "more than one parent"),
    "orphan cycle": (lambda d: _orphan_cycle(d), "not reachable from the root"),
    "feature index out of range": (_set_field("feature_idx", 5, node=0),
                                   "feature index 5 .* out of range for 5 features"),
    "wrong feature count": (lambda d: d["fitted"].update(n_features_in_=4),
                            "bin_thresholds: expected 4 entries"),
    "feature names count": (lambda d: d["fitted"].update(feature_names_in_=["a"]),
                            "feature_names_in_: expected 5 entries"),
    "n_nodes mismatch": (lambda d: _tree0(d).update(n_nodes=_tree0(d)["n_nodes"] + 1),
                         r"expected \d+ entries, got"),
    "zero nodes": (lambda d: _tree0(d).update(
        n_nodes=0, nodes={k: [] for k in _tree0(d)["nodes"]}), "out of range"),
    "n_iter mismatch": (lambda d: d["fitted"].update(n_iter_=5), "expected 5 entries"),
    "trees per round": (lambda d: d["fitted"]["trees"][1].pop(), "expected 3 entries"),
    "n_trees_per_iteration": (lambda d: d["fitted"].update(n_trees_per_iteration_=1),
                              "n_trees_per_iteration_: expected 3"),
    "baseline length": (lambda d: d["fitted"]["baseline"].pop(), "baseline"),
    "baseline type": (lambda d: d["fitted"]["baseline"].__setitem__(0, "zero"),
                      "not a number"),
    "string as int": (_set_field("feature_idx", "1"), "expected integers"),
    "float as int": (_set_field("left", 1.5), "expected integers"),
    "null value": (_set_field("value", None), "expected a number"),
    "decreasing thresholds": (lambda d: d["fitted"]["bin_mapper"]["bin_thresholds"][0]
                              .reverse(), "strictly increasing"),
    "too many thresholds": (lambda d: d["fitted"]["bin_mapper"].update(max_bins=3),
                            "at most max_bins - 1"),
    "unsorted classes": (lambda d: d["fitted"]["classes_"]["data"].reverse(),
                         "sorted and distinct"),
    "one class": (lambda d: d["fitted"]["classes_"].update(shape=[1], data=["a"]),
                  "at least two"),
    "regressor name on classifier": (lambda d: d.update(estimator="HistGBDTRegressor"),
                                     "unknown parameters|a regressor has no classes"),
    "unknown estimator": (lambda d: d.update(estimator="RandomForest"), "estimator"),
    "wrong format": (lambda d: d.update(format="xgboost"), "not an hgbt model file"),
    "unknown parameter": (lambda d: d["params"].update(n_estimators=3),
                          "unknown parameters"),
    "invalid parameter value": (lambda d: d["params"].update(learning_rate=-1.0),
                                "learning_rate"),
    "unknown value tag": (lambda d: d["params"].update(max_depth={"type": "pickle"}),
                          "unknown value type"),
    "bad float string": (lambda d: d["params"].update(
        learning_rate={"type": "float", "value": "1e5"}), "not a number"),
    "bad ndarray dtype": (lambda d: d["fitted"]["classes_"].update(dtype="V8"),
                          "unsupported dtype"),
    "string too long for dtype": (lambda d: d["fitted"]["classes_"]["data"]
                                  .__setitem__(2, "cc"), "at most 1 characters"),
    "unknown bin mapper attribute": (
        lambda d: d["fitted"]["bin_mapper"]["attributes"].update(transform=1),
        r"\['transform'\] are not attributes hgbt writes"),
    "fitted is a list": (lambda d: d.update(fitted=[]), "expected a JSON object"),
}


def _orphan_cycle(doc):
    """Append nodes a -> b -> a (each with one more leaf child), reachable from
    nowhere: every node still has at most one parent."""
    t = _tree0(doc)
    n = t["n_nodes"]
    for field, values in t["nodes"].items():
        values.extend([values[0]] * 4)
    t["nodes"]["is_leaf"][n:] = [0, 0, 1, 1]
    t["nodes"]["left"][n:] = [n + 1, n, 0, 0]
    t["nodes"]["right"][n:] = [n + 2, n + 3, 0, 0]
    t["n_nodes"] = n + 4


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupt_document(saved, tmp_path, name):
    _, _, document = saved
    edit, message = CORRUPTIONS[name]
    path = _write(tmp_path, _mutated(document, edit))
    with pytest.raises(ValueError, match=message):
        load_model(path)


def test_corruptions_are_checked_on_a_valid_base(saved, tmp_path):
    """The base document loads: the corruption tests fail for their edit only."""
    model, X, document = saved
    loaded = load_model(_write(tmp_path, _mutated(document, lambda d: None)))
    assert loaded.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 99])
def test_newer_format_version(saved, tmp_path, version):
    _, _, document = saved
    path = _write(tmp_path, _mutated(document, lambda d: d.update(format_version=version)))
    with pytest.raises(ValueError, match=f"format_version {version}, newer .*Upgrade hgbt"):
        load_model(path)


@pytest.mark.parametrize("version", [0, -1, "1", 1.0, None, True])
def test_invalid_format_version(saved, tmp_path, version):
    _, _, document = saved
    path = _write(tmp_path, _mutated(document, lambda d: d.update(format_version=version)))
    with pytest.raises(ValueError, match="format_version: expected a positive integer"):
        load_model(path)


def test_format_version_header(saved):
    _, _, document = saved
    assert document["format"] == "hgbt-model"
    # versions 2 and 3 only for pooled categorical features (test_high_cardinality.py,
    # test_target_stats.py)
    assert document["format_version"] == 1 and FORMAT_VERSION == 3
    assert document["hgbt_version"] == hgbt.__version__
    assert document["estimator"] == "HistGBDTClassifier"
    fitted = document["fitted"]
    for key in ("baseline", "classes_", "n_features_in_", "feature_names_in_", "n_iter_",
                "n_trees_per_iteration_", "bin_mapper", "node_dtype", "trees",
                "attributes"):
        assert key in fitted
    # Every field of the node dtype is written, one list per field.
    names = [name for name, _, _ in fitted["node_dtype"]]
    assert names == list(hgbt.persistence.NODE_DTYPE.names)
    tree = fitted["trees"][0][0]
    assert set(tree["nodes"]) == set(names)
    assert all(len(v) == tree["n_nodes"] for v in tree["nodes"].values())


def test_random_structural_corruption_never_crashes(saved, tmp_path):
    """Random child / feature indices: ValueError, or a model that still predicts."""
    model, X, document = saved
    rng = np.random.default_rng(0)
    outcomes = {"rejected": 0, "loaded": 0}
    for trial in range(150):
        doc = copy.deepcopy(document)
        for _ in range(rng.integers(1, 4)):
            i = rng.integers(len(doc["fitted"]["trees"]))
            k = rng.integers(len(doc["fitted"]["trees"][i]))
            tree = doc["fitted"]["trees"][i][k]
            field = ["left", "right", "feature_idx", "is_leaf"][rng.integers(4)]
            node = rng.integers(tree["n_nodes"])
            tree["nodes"][field][node] = int(rng.integers(0, 2 * tree["n_nodes"] + 6))
        try:
            loaded = model_from_dict(doc)
        except ValueError:
            outcomes["rejected"] += 1
            continue
        outcomes["loaded"] += 1
        assert loaded.predict_proba(X).shape == (X.shape[0], 3)
    assert outcomes["rejected"] > 50


def test_random_truncation_never_crashes(saved, tmp_path):
    model, _, _ = saved
    path = tmp_path / "m.json"
    model.save_model(path)
    data = path.read_bytes()
    rng = np.random.default_rng(1)
    for cut in rng.integers(0, len(data) - 1, size=40):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError):
            load_model(path)


# ------------------------------------------------------- categorical nodes
def test_categorical_nodes_and_bitsets_round_trip(tmp_path):
    """Node fields and per-tree arrays beyond the numeric ones are saved too."""
    from hgbt.tree.predictor import TreePredictor

    model, X = _fit_regressor(max_iter=3)
    rng = np.random.default_rng(8)
    X = X.copy()
    X[:, 3] = rng.integers(0, 10, size=len(X))
    X[::17, 3] = np.nan
    tree = tree_at(model, 1)
    nodes = tree.nodes.copy()
    nodes[0]["feature_idx"] = 3
    nodes[0]["is_categorical"] = 1
    nodes[0]["bitset_idx"] = 1
    nodes[0]["num_threshold"] = np.nan
    bitsets = np.zeros((2, 8), dtype=np.uint32)
    bitsets[1, 0] = (1 << 0) | (1 << 2) | (1 << 5) | (1 << 9)
    before = model.predict(X)
    set_tree(model, 1, 0, TreePredictor(nodes, bitsets))
    after = model.predict(X)
    assert not np.array_equal(before, after)  # the categorical root routes rows

    for loaded in (_json_round_trip(model, tmp_path), pickle.loads(pickle.dumps(model))):
        assert loaded.predict(X).tobytes() == after.tobytes()
        t = tree_at(loaded, 1)
        assert t.nodes.tobytes() == nodes.tobytes()
        np.testing.assert_array_equal(t.cat_bitsets, bitsets)

    document = model_to_dict(model)
    bad = _mutated(document, lambda d: d["fitted"]["trees"][1][0]["nodes"]["bitset_idx"]
                   .__setitem__(0, 2))
    with pytest.raises(ValueError, match="bitset"):
        model_from_dict(bad)
    bad = _mutated(document, lambda d: d["fitted"]["trees"][1][0].pop("attributes"))
    with pytest.raises(ValueError, match="bitset"):
        model_from_dict(bad)


def test_categorical_dataframe_model_round_trips(tmp_path):
    """A model fitted on pandas categorical columns: JSON, pickle, then warm start."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(11)
    n = 1500
    X = pd.DataFrame({
        "colour": pd.Categorical(rng.choice(["red", "green", "blue", "teal", "pink"], n)),
        "x": rng.normal(size=n),
        "k": rng.integers(0, 12, n).astype(float),
    })
    X.loc[::13, "x"] = np.nan
    y = X["colour"].isin(["red", "teal"]) * 2.0 + X["x"].fillna(0) + (X["k"] % 3 == 0)
    model = HistGBDTRegressor(max_iter=8, categorical_features=["colour", "k"],
                              random_state=0).fit(X, y)
    n_categorical = sum(int(np.sum((t.nodes["is_categorical"] != 0)
                                   & (t.nodes["is_leaf"] == 0)))
                        for t in all_trees(model))
    assert n_categorical > 0
    X_test = X.copy()
    X_test.loc[:20, "k"] = 99.0  # unseen category code
    for loaded in (_json_round_trip(model, tmp_path), pickle.loads(pickle.dumps(model))):
        assert loaded.predict(X_test).tobytes() == model.predict(X_test).tobytes()
        np.testing.assert_array_equal(loaded.feature_importances_,
                                      model.feature_importances_)
    loaded = load_model(tmp_path / "model.json")
    for m in (loaded, model):
        m.set_params(warm_start=True, max_iter=12).fit(X, y)
    assert loaded.predict(X_test).tobytes() == model.predict(X_test).tobytes()


@pytest.mark.parametrize("name", ["predict", "n_iter_", "extra_", "_train_scores"])
def test_attributes_hgbt_does_not_write_are_ignored(saved, tmp_path, name):
    """An older hgbt's fitted attributes (``_train_scores``), a user's, or a
    name that would hide a method or repeat a key: left out with a warning,
    never decoded (a huge declared array costs nothing)."""
    from hgbt.persistence import content_checksum
    model, X, document = saved
    document = copy.deepcopy(document)
    document["fitted"]["attributes"][name] = {
        "type": "ndarray", "dtype": "<U50000000", "shape": [10], "data": [""] * 10}
    document["checksum"] = content_checksum(document)
    path = _write(tmp_path, document)
    with pytest.warns(UserWarning, match=rf"\['{name}'\] are not attributes this hgbt "
                                         "writes.*ignored"):
        loaded = load_model(path)
    assert (loaded.n_iter_ == model.n_iter_ if name == "n_iter_"
            else name not in vars(loaded))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
