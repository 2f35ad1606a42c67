"""Model files written by earlier hgbt code load to the same model, bit for bit.

tests/model_files/ holds JSON files (``save_model``) and pickles written by
the commits named in their file names (tests/model_files/README.md), with the
rows to predict on and what the writing code predicted on them
(``make_model_files.py`` wrote them). Loaded by the running hgbt, every
file must give the same outputs byte for byte, and the model must continue
fitting with ``warm_start``.
"""
import importlib.util
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd  # a test dependency: the DataFrame models need it
import pytest

import hgbt
from hgbt import InconsistentVersionWarning

DIRECTORY = Path(__file__).parent / "model_files"

# file stem -> the JSON file's format_version (as tests/model_files/README.md says)
FORMAT_VERSIONS = {
    "c17e304_reg_dense_nan": 1,
    "c17e304_clf_binary_str": 1,
    "c17e304_clf_multiclass": 1,
    "c17e304_reg_frame_categorical": 1,
    "c17e304_reg_poisson": 1,
    "c17e304_reg_quantile": 1,
    "c17e304_reg_auto_tree_size": 1,
    "c17e304_reg_pooled": 3,
    "c17e304_clf_pooled": 3,
    "95df5a1_reg_pooled": 2,
    "95df5a1_clf_pooled": 2,
}
# the stems that have a pickle too (the files of 95df5a1 are JSON only)
PICKLED = sorted(stem for stem in FORMAT_VERSIONS if stem.startswith("c17e304_"))

OUTPUTS = {
    "predict": lambda model, X: model.predict(X),
    "predict_proba": lambda model, X: model.predict_proba(X),
    "decision_function": lambda model, X: model.decision_function(X),
    "predict_contributions": lambda model, X: model.predict_contributions(X),
    "apply": lambda model, X: model.apply(X),
    "feature_importances_": lambda model, X: np.asarray(model.feature_importances_),
    "n_iter_": lambda model, X: np.asarray(model.n_iter_, dtype=np.int64),
}
CLASSIFIER_ONLY = {"predict_proba", "decision_function"}


def _maker():
    # the rebuilding of the inputs lives beside the files, in the script that wrote them
    spec = importlib.util.spec_from_file_location(
        "make_model_files", DIRECTORY / "make_model_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKER = _maker()


def _expected(stem):
    with np.load(DIRECTORY / f"{stem}.npz", allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    X = MAKER.inputs_from_npz(arrays)
    return X, arrays


def _load_json(stem):
    return hgbt.load_model(DIRECTORY / f"{stem}.json")


def _load_pickle(stem):
    data = (DIRECTORY / f"{stem}.pkl").read_bytes()
    with warnings.catch_warnings():
        # the same version may or may not warn: either is accepted
        warnings.simplefilter("ignore", InconsistentVersionWarning)
        return pickle.loads(data)


def _assert_outputs(model, stem):
    X, arrays = _expected(stem)
    stored = {key[len("out__"):] for key in arrays if key.startswith("out__")}
    is_classifier = isinstance(model, hgbt.HistGBDTClassifier)
    assert stored == (set(OUTPUTS) if is_classifier else set(OUTPUTS) - CLASSIFIER_ONLY)
    for name in sorted(stored):
        expected = arrays[f"out__{name}"]
        got = np.asarray(OUTPUTS[name](model, X))
        assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
        assert got.shape == expected.shape, (name, got.shape, expected.shape)
        if got.tobytes() != expected.tobytes():
            g, e = got.ravel(), expected.ravel()
            differ = [i for i in range(g.size) if g[i:i + 1].tobytes() != e[i:i + 1].tobytes()]
            pytest.fail(f"{stem}: {name} differs at {len(differ)} of {g.size} entries, "
                        f"e.g. flat indices {differ[:3]}: {g[differ[:3]].tolist()} != "
                        f"{e[differ[:3]].tolist()}")


def test_the_directory_holds_the_listed_files():
    files = {path.name for path in DIRECTORY.iterdir()}
    expected = {f"{stem}.{ext}" for stem in FORMAT_VERSIONS for ext in ("json", "npz")}
    expected |= {f"{stem}.pkl" for stem in PICKLED}
    expected |= {"README.md", "make_model_files.py"}
    assert files - {"__pycache__"} == expected


@pytest.mark.parametrize("stem", sorted(FORMAT_VERSIONS))
def test_json_format_version(stem):
    document = json.loads((DIRECTORY / f"{stem}.json").read_text(encoding="utf-8"))
    assert document["format"] == "hgbt-model"
    assert document["format_version"] == FORMAT_VERSIONS[stem]
    _, arrays = _expected(stem)
    assert str(arrays["meta__written_by"]).startswith(stem.split("_")[0] + " ")


@pytest.mark.parametrize("stem", sorted(FORMAT_VERSIONS))
def test_json_file_gives_the_stored_outputs(stem):
    _assert_outputs(_load_json(stem), stem)


@pytest.mark.parametrize("stem", PICKLED)
def test_pickle_gives_the_stored_outputs(stem):
    _assert_outputs(_load_pickle(stem), stem)


@pytest.mark.parametrize("stem, load", [(stem, _load_json) for stem in sorted(FORMAT_VERSIONS)]
                         + [(stem, _load_pickle) for stem in PICKLED],
                         ids=[f"{stem}.json" for stem in sorted(FORMAT_VERSIONS)]
                         + [f"{stem}.pkl" for stem in PICKLED])
def test_loaded_model_continues_with_warm_start(stem, load):
    model = load(stem)
    X, arrays = _expected(stem)
    n = int(arrays["n_regular"])  # the ordinary rows: the others are edge cases
    X = X.iloc[:n] if isinstance(X, pd.DataFrame) else X[:n]
    n_iter = model.n_iter_
    # n_iter_no_change: a model with early stopping does not stop in two rounds
    model.set_params(warm_start=True, max_iter=n_iter + 2, n_iter_no_change=100)
    model.fit(X, arrays["y"])
    assert model.n_iter_ > n_iter
    assert np.all(np.isfinite(np.asarray(
        model.decision_function(X) if isinstance(model, hgbt.HistGBDTClassifier)
        else model.predict(X), dtype=np.float64)))
