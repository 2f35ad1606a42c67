"""Out-of-core training (issue 41): Dataset.from_batches(..., out_of_core=True)
keeps the bins on disk in pages and trains by passes over them; the model is
the one of the same bins in memory, bit for bit."""
import gc
import pickle

import numpy as np
import pytest

import hgbt.data.pages
from hgbt import Dataset, HistGBDTClassifier, HistGBDTRegressor
from test_batches import FIT, assert_same_model, cuts, frame, regression

pd = pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    # pages of a few hundred rows: every fit reads many pages
    monkeypatch.setattr(hgbt.data.pages, "PAGE_BYTES", 4096)


def both(batches, **kwargs):
    """The Dataset of ``batches`` with its bins in memory, and out of core."""
    return (Dataset.from_batches(batches, **kwargs),
            Dataset.from_batches(batches, out_of_core=True, **kwargs))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("params", [
    {}, {"grow_policy": "depthwise", "max_depth": 4, "max_leaf_nodes": None},
    {"loss": "absolute_error"},  # leaf values refit from each leaf's rows
    {"colsample_bynode": 0.5, "interaction_cst": [[0, 1, 2], [2, 3, 4, 5]]},
    {"monotonic_cst": [1, 0, 0, -1, 0, 0], "l2_regularization": 1.0},
])
def test_dense_with_missing_values_is_the_in_memory_model(dtype, params):
    X, y = regression(n=5000, dtype=dtype)
    in_memory, paged = both([(X[a:b], y[a:b]) for a, b in cuts(len(X), [1500, 2000])])
    assert paged.binned.layout.pages.n_pages > 5
    params = {**FIT, **params}
    expected = HistGBDTRegressor(**params).fit(in_memory)
    got = HistGBDTRegressor(**params).fit(paged)
    assert_same_model(got, expected)
    np.testing.assert_array_equal(got.predict(X), expected.predict(X))
    # and the model of the rows in memory, where the bins are theirs
    assert_same_model(got, HistGBDTRegressor(**params).fit(X, y))


def test_weights_categorical_and_multiclass():
    parts = [frame(900, 0, "abcde"), frame(1500, 1, "cdefgh"), frame(600, 2, "aij")]
    rng = np.random.default_rng(0)
    for part in parts:
        part["w"] = rng.uniform(0.2, 2.0, len(part))
        part["label"] = np.where(part["z"] > 30, "many", part["label"])  # 3 classes
    in_memory, paged = both(parts, label="label", weight="w")
    expected = HistGBDTClassifier(**FIT).fit(in_memory)
    got = HistGBDTClassifier(**FIT).fit(paged)
    assert len(got.classes_) == 3
    assert_same_model(got, expected)
    whole = pd.concat(parts, ignore_index=True).drop(columns=["label", "w"])
    np.testing.assert_array_equal(got.predict_proba(whole), expected.predict_proba(whole))


def test_early_stopping_on_a_validation_set():
    X, y = regression(n=6000, seed=5)
    train = [(X[a:b], y[a:b]) for a, b in cuts(4000, [1500, 2500])]
    params = dict(FIT, max_iter=200, early_stopping=True, n_iter_no_change=3,
                  learning_rate=0.5)
    models = []
    for data in both(train):
        valid = Dataset.from_batches([(X[4000:], y[4000:])], reference=data)
        models.append(HistGBDTRegressor(**params).fit(data, X_val=valid))
    assert models[0].n_iter_ < 200
    assert_same_model(models[1], models[0])


def test_pages_are_removed_with_the_dataset(tmp_path):
    X, y = regression(n=1000)
    data = Dataset.from_batches([(X, y)], out_of_core=True, directory=tmp_path)
    folder = data.binned.layout.pages.path
    assert folder.parent == tmp_path and any(folder.iterdir())
    HistGBDTRegressor(**FIT).fit(data)
    del data
    gc.collect()
    assert not folder.exists()


@pytest.mark.parametrize("params, match", [
    ({"subsample": 0.5}, "row sampling"),
    ({"use_quantized_grad": True}, "quantized gradients"),
])
def test_what_is_not_supported_says_so(params, match):
    X, y = regression(n=1000)
    data = Dataset.from_batches([(X, y)], out_of_core=True)
    with pytest.raises(ValueError, match=match):
        HistGBDTRegressor(**FIT, **params).fit(data)
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(data)
    Y = np.column_stack([y, -y])
    with pytest.raises(ValueError, match="vector-leaf"):
        HistGBDTRegressor(**FIT, multi_strategy="multi_output_tree").fit(
            Dataset.from_batches([(X, Y)], out_of_core=True))


def test_progress_lines(capsys):
    X, y = regression(n=3000)
    Dataset.from_batches([(X[a:b], y[a:b]) for a, b in cuts(3000, [1000] * 3)],
                         out_of_core=True, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[from_batches] bin boundaries: 2 batches, 2,000 rows")
    assert lines[1].startswith("[from_batches] bin boundaries: 3 batches, 3,000 rows")
    assert lines[1].endswith("- done")
    assert "bins to " in lines[2] and "2 batches, 2,000 rows (67%)" in lines[2]
    assert "3 batches, 3,000 rows (100%)" in lines[3] and lines[3].endswith("- done")
    assert len(lines) == 4
