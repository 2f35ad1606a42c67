"""Column types of DataFrame input, normalised before ``categorical.py`` reads them.

- A polars ``LazyFrame`` is collected (``collect()``) and used as a DataFrame.
- A pyarrow ``Table`` with other than number columns becomes a pandas
  DataFrame (polars if pandas is missing): dictionary columns become
  categories, string columns stay strings.
- Datetimes (pandas ``datetime64``, naive or with a time zone, Arrow
  timestamps; polars ``Datetime`` and ``Date``) become float seconds since
  1970-01-01 UTC (naive values read as UTC); durations (pandas
  ``timedelta64``, polars ``Duration``) float seconds. Missing values are NaN.
  An instant gives the same float whatever its library or time unit.
- String columns (pandas ``str``, ``string``, Arrow strings or ``object``
  holding strings; polars ``String``) are recognised by :func:`is_string`:
  ``categorical_features='from_dtype'`` makes them categorical.

pandas, polars and pyarrow are never imported here unless the input is one
of their objects.
"""
import sys

import numpy as np

_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
STRING_HINT = ("hgbt splits string columns as categories under "
               "categorical_features='from_dtype' (the default) or when they are named in "
               "categorical_features; otherwise encode them as numbers (e.g. "
               "sklearn.preprocessing.OrdinalEncoder)")


def _seconds(ints, missing, per_second):
    """Integer counts of ``1 / per_second`` s → float seconds (one rounding
    order for every unit, so an instant gives the same float in any unit)."""
    ints = np.asarray(ints, dtype=np.int64)
    whole, rest = np.divmod(ints, per_second)
    out = whole.astype(np.float64) + rest / per_second
    out[np.asarray(missing, dtype=bool)] = np.nan
    return out


def _pandas_time_kind(dtype, pd):
    """'datetime', 'duration' or None for a pandas column dtype."""
    if isinstance(dtype, pd.ArrowDtype):
        pa = sys.modules["pyarrow"]
        t = dtype.pyarrow_dtype
        return ("datetime" if pa.types.is_timestamp(t) or pa.types.is_date(t)
                else "duration" if pa.types.is_duration(t) else None)
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "duration" if pd.api.types.is_timedelta64_dtype(dtype) else None


def _arrow_seconds(array):
    """Seconds of an Arrow timestamp / date / duration (chunked) array."""
    pa = sys.modules["pyarrow"]
    t = array.type
    missing = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_date(t):
        days = array.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy()
        return _seconds(days.astype(np.int64) * 86400, missing, 1)
    ints = array.cast(pa.int64()).fill_null(0).to_numpy()
    return _seconds(ints, missing, _PER_SECOND[t.unit])


def _pandas_seconds(col, pd):
    if isinstance(col.dtype, pd.ArrowDtype):
        return _arrow_seconds(sys.modules["pyarrow"].chunked_array(col.array.__arrow_array__()))
    values = col.array  # DatetimeArray (UTC integers if tz-aware) or TimedeltaArray
    return _seconds(values.asi8, col.isna().to_numpy(), _PER_SECOND[values.unit])


def _polars_seconds(col, pl):
    missing = col.is_null().to_numpy()
    ints = col.to_physical().fill_null(0).to_numpy().astype(np.int64)
    if col.dtype == pl.Date:
        return _seconds(ints * 86400, missing, 1)
    return _seconds(ints, missing, _PER_SECOND[col.dtype.time_unit])


def _polars_time(dtype, pl):
    return dtype == pl.Date or isinstance(dtype, (pl.Datetime, pl.Duration)) \
        or dtype in (pl.Datetime, pl.Duration)


def normalize_frame(X):
    """``X`` with LazyFrames collected, non-numeric Arrow tables converted and
    datetime / duration columns as float seconds (see the module docstring).
    Other input is returned as is; the user's frame is never modified."""
    pl, pa = sys.modules.get("polars"), sys.modules.get("pyarrow")
    if pl is not None and isinstance(X, pl.LazyFrame):
        X = X.collect()
    if pa is not None and isinstance(X, pa.Table) and not all(
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            for t in X.schema.types):
        try:
            X = X.to_pandas()
        except ImportError:
            if pl is None:
                import polars as pl  # noqa: F811  (raises if neither is installed)
            X = pl.from_arrow(X)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(X, pd.DataFrame):
        dtypes = list(X.dtypes)
        kinds = {d: _pandas_time_kind(d, pd) for d in set(dtypes)}  # wide frames: few dtypes
        times = [j for j, d in enumerate(dtypes) if kinds[d]]
        if times:
            X = X.copy(deep=False)  # shares the data; isetitem only replaces columns
            for j in times:
                X.isetitem(j, _pandas_seconds(X.iloc[:, j], pd))
    elif pl is not None and isinstance(X, pl.DataFrame):
        times = [name for name, d in X.schema.items() if _polars_time(d, pl)]
        if times:
            X = X.with_columns([pl.Series(name, _polars_seconds(X[name], pl))
                                for name in times])
    return X


def is_string(col):
    """Whether a pandas or polars column (Series) holds strings."""
    pd, pl = sys.modules.get("pandas"), sys.modules.get("polars")
    if pd is not None and isinstance(col, pd.Series):
        if isinstance(col.dtype, pd.CategoricalDtype):
            return False
        return pd.api.types.is_string_dtype(col)  # object columns: by their values
    return pl is not None and isinstance(col, pl.Series) and col.dtype == pl.String
