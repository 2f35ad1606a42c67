"""Categorical features with more than 255 categories (issue 20, item 8): the
254 most frequent categories are bins, the others share one pooled bin
(hgbt/data/categorical.py)."""
import json

import numpy as np
import pandas as pd
import polars as pl
import pytest
import scipy.sparse as sp

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.data.categorical import POOLED_BIN, _frequency_order
from hgbt.persistence import load_model, save_model
from fitted import bin_mapper, pooled_features

# cat_smooth=10: levels with 10-50 rows may split off (the default of 50 keeps them
# right), so that a 20-round fit can show it learnt the levels' effects
PARAMS = dict(max_iter=20, min_samples_leaf=5, cat_smooth=10.0, random_state=0,
              early_stopping=False)
N_LEVELS = 600


def _task(n=6000, seed=0):
    """Integer codes 0..N_LEVELS-1 (Zipf-like), a target that depends on them."""
    rng = np.random.default_rng(seed)
    codes = np.minimum(rng.zipf(1.2, n) - 1, N_LEVELS - 1)
    effect = rng.normal(size=N_LEVELS)
    x = rng.normal(size=n)
    y = effect[codes] + 0.5 * x + 0.1 * rng.normal(size=n)
    codes = codes.astype(float)
    codes[::23] = np.nan
    return codes, x, y


def _names(codes):
    # zero-padded: sorted names are in code order
    return [None if np.isnan(c) else f"s{int(c):04d}" for c in codes]


def test_frequency_order_keeps_the_most_frequent_ties_by_position():
    counts = np.zeros(300, dtype=np.intp)
    counts[:] = 1
    counts[[5, 299, 100]] = [7, 9, 7]
    order = _frequency_order(counts)
    assert sorted(order.tolist()) == list(range(300))
    kept = order[:POOLED_BIN]
    assert {5, 100, 299} <= set(kept.tolist())
    assert np.all(np.diff(kept) > 0) and np.all(np.diff(order[POOLED_BIN:]) > 0)
    # ties: the lower positions are kept (the 251 others among 0..298)
    assert set(kept.tolist()) == set(range(251)) | {5, 100, 299} | {251, 252}
    np.testing.assert_array_equal(_frequency_order(counts[:255]), np.arange(255))


def test_pandas_category_with_many_levels_fits():
    """Reproducer: 'Categorical feature ... has 600 categories; at most 255'."""
    codes, x, y = _task()
    frame = pd.DataFrame({"sponsor": pd.Categorical(_names(codes),
                                                    categories=_names(np.arange(N_LEVELS))),
                          "x": x})
    model = HistGBDTRegressor(**PARAMS).fit(frame, y)
    cats = model.categorical_categories_[0]
    assert len(cats) == N_LEVELS and sorted(cats) == _names(np.arange(N_LEVELS))
    counts = pd.Series(_names(codes)).value_counts().reindex(cats, fill_value=0)
    # the most frequent categories are bins
    assert counts.iloc[:POOLED_BIN].min() >= counts.iloc[POOLED_BIN:].max()
    assert bin_mapper(model).n_bins_non_missing_[0] == POOLED_BIN + 1
    assert pooled_features(model) == [0]
    assert model.score(frame, y) > 0.7
    # pooled (rare) categories share a bin and are told apart by their target
    # statistic only (test_target_stats.py): two that were never seen in
    # training have the same statistic and predict alike; an unseen category
    # predicts as missing
    rare = [c for c in cats[POOLED_BIN:] if c not in set(_names(codes))]
    one = pd.DataFrame({"sponsor": [rare[0]] * 5, "x": x[:5]})
    other = pd.DataFrame({"sponsor": [rare[-1]] * 5, "x": x[:5]})
    np.testing.assert_array_equal(model.predict(one), model.predict(other))
    unseen = pd.DataFrame({"sponsor": ["nope"] * 5, "x": x[:5]})
    missing = pd.DataFrame({"sponsor": [None] * 5, "x": x[:5]})
    np.testing.assert_array_equal(model.predict(unseen), model.predict(missing))
    # an array holds positions in categorical_categories_
    positions = np.array([[0, 1.0], [POOLED_BIN, 1.0], [N_LEVELS - 1, 1.0], [N_LEVELS, 1.0],
                          [np.nan, 1.0]])
    by_frame = model.predict(pd.DataFrame({"sponsor": [cats[0], cats[POOLED_BIN], cats[-1],
                                                       None, None], "x": [1.0] * 5}))
    with pytest.warns(UserWarning, match="feature names"):
        np.testing.assert_array_equal(model.predict(positions), by_frame)


def test_integer_codes_strings_and_polars_give_the_same_model():
    codes, x, y = _task(seed=1)
    X = np.column_stack([codes * 7 + 1000, x])  # codes >= 255: pooled by frequency
    on_codes = HistGBDTRegressor(categorical_features=[0], **PARAMS).fit(X, y)
    assert pooled_features(on_codes) == [0]
    np.testing.assert_array_equal(on_codes.categorical_categories_[0] % 7, 1000 % 7)
    expected = on_codes.predict(X)
    names = _names(codes)
    frames = [pd.DataFrame({"c": names, "x": x}),
              pd.DataFrame({"c": pd.Categorical(names), "x": x}),
              pl.DataFrame({"c": names, "x": x}),
              pl.DataFrame({"c": pl.Series(names, dtype=pl.Categorical), "x": x})]
    for frame in frames:
        model = HistGBDTRegressor(**PARAMS).fit(frame, y)
        np.testing.assert_array_equal(model.predict(frame), expected)
    # unseen and invalid codes follow the missing direction
    X_new = X[:6].copy()
    X_new[:, 0] = [np.nan, 3.0, 1000.5, -1.0, 1e9, np.inf]
    preds = on_codes.predict(X_new)
    np.testing.assert_array_equal(preds, on_codes.predict(np.column_stack(
        [np.full(6, np.nan), X_new[:, 1]])))


def test_classifier_save_load_and_format_version(tmp_path):
    codes, x, y = _task(seed=2)
    labels = (y > np.median(y)).astype(int)
    frame = pd.DataFrame({"c": pd.Categorical(_names(codes)), "x": x})
    model = HistGBDTClassifier(**PARAMS).fit(frame, labels)
    path = tmp_path / "model.json"
    save_model(model, path)
    assert json.loads(path.read_text())["format_version"] == 3  # target statistics
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(frame), model.predict_proba(frame))
    small = HistGBDTClassifier(**PARAMS).fit(frame.assign(c=np.minimum(codes, 50)), labels)
    save_model(small, path)
    assert json.loads(path.read_text())["format_version"] == 1  # as before


def test_pooled_features_refuse_sparse_input():
    codes, x, y = _task(n=2000)
    X = sp.csr_matrix(np.column_stack([np.nan_to_num(codes) + 300, x]))
    with pytest.raises(ValueError, match="need dense X"):
        HistGBDTRegressor(categorical_features=[0], max_iter=2).fit(X, y)


def test_warm_start_keeps_the_pooling():
    codes, x, y = _task(seed=3)
    frame = pd.DataFrame({"c": _names(codes), "x": x})
    once = HistGBDTRegressor(**dict(PARAMS, max_iter=20)).fit(frame, y)
    twice = HistGBDTRegressor(**dict(PARAMS, max_iter=10, warm_start=True)).fit(frame, y)
    twice.set_params(max_iter=20).fit(frame, y)
    np.testing.assert_array_equal(twice.predict(frame), once.predict(frame))
