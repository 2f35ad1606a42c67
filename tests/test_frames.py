"""Column types of DataFrame input (hgbt/data/frames.py): strings, Arrow
dictionaries, datetimes and durations, polars LazyFrames (issue 20, item 9)."""
import datetime as dt

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.data.frames import normalize_frame

PARAMS = dict(max_iter=15, min_samples_leaf=5, random_state=0, early_stopping=False)


def _task(n=600, seed=0):
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefgh"))
    kind = letters[rng.integers(0, 8, n)]
    x = rng.normal(size=n)
    y = (np.isin(kind, ["b", "f"]) * 2.0 + x + 0.1 * rng.normal(size=n))
    return kind, x, y


def test_string_columns_are_categorical_from_dtype():
    """Reproducer: string columns gave "could not convert string to float: 'f'"."""
    kind, x, y = _task()
    reference = HistGBDTRegressor(**PARAMS).fit(
        pd.DataFrame({"kind": pd.Categorical(kind), "x": x}), y)
    expected = reference.predict(pd.DataFrame({"kind": pd.Categorical(kind), "x": x}))
    frames = {
        "pandas object": pd.DataFrame({"kind": kind.astype(object), "x": x}),
        "pandas str": pd.DataFrame({"kind": pd.Series(kind, dtype="str"), "x": x}),
        "string[pyarrow]": pd.DataFrame({"kind": pd.Series(kind, dtype="string[pyarrow]"),
                                         "x": x}),
        "polars String": pl.DataFrame({"kind": kind.tolist(), "x": x}),
        "arrow string": pa.table({"kind": pa.array(kind.tolist()), "x": x}),
        "arrow dictionary": pa.table({"kind": pa.array(kind.tolist()).dictionary_encode()
                                      .cast(pa.dictionary(pa.int32(), pa.string())),
                                      "x": x}),
    }
    for label, frame in frames.items():
        model = HistGBDTRegressor(**PARAMS).fit(frame, y)
        np.testing.assert_array_equal(model.is_categorical_, [True, False], err_msg=label)
        assert list(model.feature_names_in_) == ["kind", "x"], label
        if label != "arrow dictionary":  # category order: sorted, as pandas'
            np.testing.assert_array_equal(model.categorical_categories_[0], list("abcdefgh"))
            np.testing.assert_array_equal(model.predict(frame), expected, err_msg=label)
        else:
            assert model.score(frame, y) > 0.9
    # unseen strings follow the missing direction
    model = HistGBDTRegressor(**PARAMS).fit(frames["pandas object"], y)
    unseen = pd.DataFrame({"kind": ["zzz"] * 5, "x": x[:5]})
    missing = pd.DataFrame({"kind": [None] * 5, "x": x[:5]})
    np.testing.assert_array_equal(model.predict(unseen), model.predict(missing))


def test_strings_that_cannot_be_categorical_give_what_to_do():
    kind, x, y = _task(n=100)
    frame = pd.DataFrame({"kind": kind, "x": x})
    with pytest.raises(ValueError, match="'kind' holds strings.*categorical_features"):
        HistGBDTRegressor(categorical_features=None).fit(frame, y)
    with pytest.raises(ValueError, match="'kind' holds strings"):
        HistGBDTRegressor(categorical_features=["x"]).fit(pl.from_pandas(frame), y)
    with pytest.raises(ValueError, match="X holds strings.*DataFrame"):
        HistGBDTRegressor().fit(np.column_stack([kind, x.astype(str)]), y)
    # fit numeric, predict on strings
    model = HistGBDTRegressor(max_iter=2).fit(pd.DataFrame({"kind": x, "x": x}), y)
    with pytest.raises(ValueError, match="'kind' holds strings"):
        model.predict(frame)


def test_datetimes_are_seconds_since_the_epoch_in_pandas_and_polars():
    """Reproducer: pandas datetime gave DTypePromotionError, polars Datetime
    was taken as its integer in its own unit."""
    rng = np.random.default_rng(1)
    n = 500
    seconds = rng.integers(0, 10**9, n) + rng.integers(0, 10**6, n) / 1e6
    us = (seconds * 1e6).round().astype(np.int64)
    expected = us // 10**6 + (us % 10**6) / 1e6
    y = (expected > 5e8) * 1.0 + 0.1 * rng.normal(size=n)
    stamps = pd.Series(pd.to_datetime(us, unit="us"))
    stamps[::17] = pd.NaT
    expected[::17] = np.nan
    utc = stamps.dt.tz_localize("UTC")
    frames = {
        "pandas ns": pd.DataFrame({"t": stamps.astype("datetime64[ns]")}),
        "pandas us": pd.DataFrame({"t": stamps.astype("datetime64[us]")}),
        "pandas tz": pd.DataFrame({"t": utc.dt.tz_convert("Asia/Tokyo")}),
        "pandas arrow": pd.DataFrame({"t": stamps.astype(pd.ArrowDtype(pa.timestamp("us")))}),
        "polars us": pl.DataFrame({"t": pl.from_pandas(stamps)}),
        "polars ns tz": pl.DataFrame({"t": pl.from_pandas(stamps).cast(pl.Datetime("ns"))
                                      .dt.replace_time_zone("UTC")
                                      .dt.convert_time_zone("America/New_York")}),
        "arrow": pa.table({"t": pa.array(stamps.astype("datetime64[us]"))}),
    }
    reference = HistGBDTRegressor(**PARAMS).fit(expected[:, None], y)
    for label, frame in frames.items():
        np.testing.assert_array_equal(np.asarray(normalize_frame(frame))[:, 0]
                                      if not isinstance(frame, pa.Table)
                                      else normalize_frame(frame)["t"].to_numpy(),
                                      expected, err_msg=label)
        model = HistGBDTRegressor(**PARAMS).fit(frame, y)
        np.testing.assert_array_equal(model.predict(frame), reference.predict(expected[:, None]),
                                      err_msg=label)
    # dates (polars Date, Arrow date32) and durations: seconds too
    days = pl.DataFrame({"d": [dt.date(1970, 1, 2), None, dt.date(1969, 12, 31)],
                         "dur": [dt.timedelta(seconds=1.5), None, dt.timedelta(days=-1)]})
    np.testing.assert_array_equal(normalize_frame(days).to_numpy(),
                                  [[86400.0, 1.5], [np.nan, np.nan], [-86400.0, -86400.0]])
    delta = pd.DataFrame({"dur": pd.to_timedelta([1.5, None, -86400], unit="s")})
    np.testing.assert_array_equal(normalize_frame(delta).to_numpy()[:, 0],
                                  [1.5, np.nan, -86400.0])


def test_polars_lazyframe_is_collected():
    """Reproducer: a LazyFrame gave 'setting an array element with a sequence'."""
    kind, x, y = _task()
    frame = pl.DataFrame({"kind": kind.tolist(), "x": x})
    labels = (y > np.median(y)).astype(int)
    eager = HistGBDTClassifier(**PARAMS).fit(frame, labels)
    lazy = HistGBDTClassifier(**PARAMS).fit(frame.lazy(), labels)
    assert list(lazy.feature_names_in_) == ["kind", "x"]
    np.testing.assert_array_equal(lazy.predict_proba(frame.lazy()), eager.predict_proba(frame))


def test_normalize_frame_leaves_the_user_frame_alone():
    stamps = pd.Series(pd.to_datetime(["2020-01-01", None]))
    frame = pd.DataFrame({"t": stamps, "x": [1.0, 2.0]})
    out = normalize_frame(frame)
    assert frame["t"].dtype == stamps.dtype
    np.testing.assert_array_equal(out["t"], [1577836800.0, np.nan])
    numbers = pd.DataFrame({"x": [1.0]})
    assert normalize_frame(numbers) is numbers
