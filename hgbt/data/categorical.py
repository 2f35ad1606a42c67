"""Categorical input: which features are categorical, and their category codes.

The kernels see a float matrix in which a categorical feature holds category
codes (integers 0..254, NaN for missing). This module builds that matrix
before scikit-learn's ``validate_data`` would turn a DataFrame into numbers:

- pandas ``category`` and polars ``Categorical`` / ``Enum`` columns (and
  non-numeric columns named in ``categorical_features``) are mapped *by
  value*: the categories seen at fit time are recorded per feature
  (``categorical_categories_``; for a pandas ``category`` column, the
  categories of its dtype, in their order), a value's code is its position
  there, and at prediction values are looked up again, so another category
  order gives the same codes and unknown categories become NaN (missing).
- Numeric categorical columns (NumPy arrays, or numeric DataFrame columns)
  already hold the codes: non-negative integers below 255 (checked at fit);
  ``categorical_categories_`` records the codes seen. At prediction, NaN,
  negative, non-integer and too large codes take the missing direction.

An ndarray given at prediction to a model fit on a DataFrame holds codes for
every categorical feature (positions in ``categorical_categories_``).
pandas and polars are never imported here: a frame is recognised only if its
library is already loaded.
"""
import sys

import numpy as np
from sklearn.utils.validation import check_array, validate_data

from .binning import ENCODER_HINT, MAX_CATEGORIES, category_codes
from .sparse import column


def _pandas_frame(X):
    pd = sys.modules.get("pandas")
    return pd if pd is not None and isinstance(X, pd.DataFrame) else None


def _polars_frame(X):
    pl = sys.modules.get("polars")
    return pl if pl is not None and isinstance(X, pl.DataFrame) else None


def _is_categorical_dtype(dtype):
    """A pandas ``category`` or polars ``Categorical`` / ``Enum`` dtype."""
    pd, pl = sys.modules.get("pandas"), sys.modules.get("polars")
    if pd is not None and isinstance(dtype, pd.CategoricalDtype):
        return True
    return pl is not None and (isinstance(dtype, (pl.Categorical, pl.Enum))
                               or dtype in (pl.Categorical, pl.Enum))


class _Columns:
    """Column access shared by pandas and polars frames (and arrays)."""

    def __init__(self, X):
        self.pd, self.pl = _pandas_frame(X), _polars_frame(X)
        self.X = X

    @property
    def is_frame(self):
        return self.pd is not None or self.pl is not None

    def dtypes(self):
        return list(self.X.dtypes)

    def column(self, j):
        return self.X.iloc[:, j] if self.pd is not None else self.X[:, j]

    def is_numeric(self, j):
        col = self.column(j)
        if self.pd is not None:
            return (not _is_categorical_dtype(col.dtype)
                    and self.pd.api.types.is_numeric_dtype(col.dtype))
        return col.dtype.is_numeric() or col.dtype == self.pl.Boolean

    def to_float(self, j, name):
        col = self.column(j)
        try:
            if self.pd is not None:
                return col.to_numpy(dtype=np.float64, na_value=np.nan)
            return col.cast(self.pl.Float64).to_numpy().astype(np.float64, copy=False)
        except (TypeError, ValueError) as exc:
            hint = (" It has a categorical dtype: list it in categorical_features."
                    if _is_categorical_dtype(col.dtype) else "")
            raise ValueError(f"Feature {name!r} could not be converted to numbers "
                             f"({exc}).{hint}") from exc

    def categories(self, j, name):
        """Categories of a column mapped by value, in code order (fit time)."""
        col = self.column(j)
        if self.pd is not None:
            if isinstance(col.dtype, self.pd.CategoricalDtype):
                cats = col.dtype.categories
            else:
                cats = self.pd.Index(col.dropna().unique()).sort_values()
            cats = np.asarray(cats)
        elif isinstance(col.dtype, self.pl.Enum):
            cats = np.asarray(col.dtype.categories.to_list(), dtype=object)
        else:
            col = col.cast(self.pl.String) if _is_categorical_dtype(col.dtype) else col
            cats = np.asarray(col.drop_nulls().unique().sort().to_list(), dtype=object)
        if cats.size > MAX_CATEGORIES:
            raise ValueError(
                f"Categorical feature {name!r} has {cats.size} categories; at most "
                f"{MAX_CATEGORIES} are supported: {ENCODER_HINT} (with pandas, "
                "remove_unused_categories() drops categories without rows).")
        return cats

    def codes(self, j, categories):
        """Float codes of a column mapped by value; unknown values are NaN."""
        col = self.column(j)
        if self.pd is not None:
            index = self.pd.Index(categories)
            if isinstance(col.dtype, self.pd.CategoricalDtype):
                # Map each category of the column once, then its codes.
                lookup = np.append(index.get_indexer(col.dtype.categories), -1)
                codes = lookup[col.cat.codes.to_numpy()]
            else:
                codes = index.get_indexer(col)
            out = codes.astype(np.float64)
            out[codes < 0] = np.nan
            return out
        if _is_categorical_dtype(col.dtype):
            col = col.cast(self.pl.String)
        mapped = col.replace_strict(list(categories), list(range(len(categories))),
                                    default=None, return_dtype=self.pl.Float64)
        return mapped.to_numpy().astype(np.float64, copy=False)


# ----------------------------------------------------------- bulk conversion
# A frame whose columns are all plain numbers becomes one float array in one
# call of its library (pandas converts block by block, polars column by column
# in Rust): no Python per column. Anything else (strings, dates, sparse or
# complex columns, empty frames) takes scikit-learn's conversion or the
# column-by-column one, whose errors and warnings users already get.

def _arrow_table(X):
    pa = sys.modules.get("pyarrow")
    return pa if pa is not None and isinstance(X, pa.Table) else None


def _pandas_number(dtype, pd):
    """A pandas column dtype converted exactly by ``to_numpy(float)``: real
    numbers and booleans, NumPy or nullable / Arrow-backed."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biuf" and dtype.itemsize <= 8
    return not isinstance(dtype, pd.SparseDtype) and getattr(dtype, "kind", "O") in "biuf"


def _polars_number(dtype):
    return dtype.is_integer() or dtype.is_float() or dtype == sys.modules["polars"].Boolean


def _arrow_number(dtype):
    pa = sys.modules["pyarrow"]
    return (pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
            or pa.types.is_boolean(dtype))


def _sklearn_dtype(dtypes):
    """The float dtype scikit-learn's check_array gives a pandas frame of
    these column dtypes with ``dtype=[float64, float32]``."""
    if all(isinstance(d, np.dtype) for d in dtypes):
        common = np.result_type(*set(dtypes))
        if common in (np.float64, np.float32):
            return common
    return np.dtype(np.float64)


def _bulk_numbers(X, dtype=None):
    """``X`` as one F-ordered float array, or None unless every column is plain
    numbers. The dtype is ``dtype``, else float64 or, for pandas, the float32
    scikit-learn keeps; the values are those of a column-by-column conversion."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return None
    if (pd := _pandas_frame(X)) is not None:
        dtypes = list(X.dtypes)
        if not all(_pandas_number(d, pd) for d in dtypes):
            return None
        return X.to_numpy(dtype=dtype or _sklearn_dtype(dtypes), na_value=np.nan)
    if (pl := _polars_frame(X)) is not None:
        if not all(_polars_number(d) for d in X.dtypes):
            return None
        return X.select(pl.all().cast(pl.Float64)).to_numpy(order="fortran")
    if _arrow_table(X) is not None:
        if not all(_arrow_number(t) for t in X.schema.types):
            return None
        out = np.empty(X.shape, dtype=np.float64, order="F")
        for j in range(X.shape[1]):
            # pyarrow's own Table.__array__ conversion of a column, in place
            out[:, j] = np.asarray(X.column(j), dtype=np.float64)
        return out
    return None


def _to_array(estimator, X, reset, check_params):
    """``validate_data`` of X, converting a frame of plain numbers in bulk."""
    is_frame = (_pandas_frame(X) is not None or _polars_frame(X) is not None
                or _arrow_table(X) is not None)
    out = _bulk_numbers(X) if is_frame else None
    if out is None:
        return validate_data(estimator, X, reset=reset, **check_params)
    validate_data(estimator, X, reset=reset, skip_check_array=True)  # names, n_features
    return check_array(out, input_name="X", **{"estimator": estimator, **check_params})


def _with_codes(columns, by_value, codes_of):
    """The frame with its by-value categorical columns replaced by their float
    codes (``codes_of(j)``), as one F-ordered float64 array; None if another
    column is not plain numbers. The user's frame is not modified."""
    X = columns.X
    if X.shape[0] == 0 or X.shape[1] == 0:
        return None
    number = (_polars_number if columns.pl is not None
              else lambda d: _pandas_number(d, columns.pd))
    if not all(number(d) for d, b in zip(columns.dtypes(), by_value) if not b):
        return None
    positions = np.flatnonzero(by_value)
    if positions.size and columns.pd is not None:
        X = X.copy(deep=False)  # shares the data; isetitem only replaces columns
        for j in positions.tolist():
            X.isetitem(j, codes_of(j))
    elif positions.size:
        X = X.with_columns([columns.pl.Series(X.columns[j], codes_of(j))
                            for j in positions.tolist()])
    return _bulk_numbers(X, dtype=np.float64)


def _resolve_mask(spec, columns, n_features, feature_names):
    """Boolean mask of categorical features, or None when there are none."""
    if spec is None:
        return None
    if isinstance(spec, str) and spec == "from_dtype":
        if not columns.is_frame:
            return None
        mask = np.array([_is_categorical_dtype(d) for d in columns.dtypes()], dtype=bool)
        return mask if mask.any() else None
    values = np.asarray(spec)
    if values.ndim != 1:
        raise ValueError("categorical_features must be 'from_dtype', None, or a 1-d "
                         "boolean mask, integer indices or feature names; got shape "
                         f"{values.shape}.")
    mask = np.zeros(n_features, dtype=bool)
    if values.size == 0:
        return None
    if values.dtype.kind == "b":
        if values.size != n_features:
            raise ValueError(f"categorical_features as a boolean mask must have "
                             f"{n_features} entries (one per feature), got {values.size}.")
        mask[:] = values
    elif values.dtype.kind in "iu":
        bad = values[(values < 0) | (values >= n_features)]
        if bad.size:
            raise ValueError(f"categorical_features holds indices {bad.tolist()} outside "
                             f"[0, {n_features - 1}].")
        mask[values] = True
    elif values.dtype.kind in "UO" and all(isinstance(v, str) for v in values):
        if feature_names is None:
            raise ValueError("categorical_features given as feature names needs X with "
                             "column names (a pandas or polars DataFrame); pass a "
                             "boolean mask or integer indices for an array.")
        position = {name: j for j, name in enumerate(feature_names)}
        unknown = [v for v in values if v not in position]
        if unknown:
            raise ValueError(f"categorical_features names {unknown} are not feature "
                             f"names of X ({list(feature_names)}).")
        mask[[position[v] for v in values]] = True
    else:
        raise ValueError("categorical_features must be 'from_dtype', None, or a boolean "
                         "mask, integer indices or feature names; got "
                         f"{values.dtype} values.")
    return mask if mask.any() else None


def validate_X(estimator, X, reset, **check_params):
    """``validate_data`` for X with categorical features turned into codes.

    With ``reset`` (fit), decides the categorical features from
    ``estimator.categorical_features`` and sets ``is_categorical_`` (bool
    mask, or None without categorical features), ``categorical_categories_``
    (per feature None, or its categories / codes seen) and
    ``_categorical_by_value``. Feature-name and feature-count checks are those
    of ``validate_data`` on the user's ``X``.
    """
    columns = _Columns(X)
    if not reset and getattr(estimator, "is_categorical_", None) is None:
        return _to_array(estimator, X, False, check_params)
    if reset and estimator.categorical_features is None:
        _set_fitted(estimator, None, None, None)
        return _to_array(estimator, X, True, check_params)
    if columns.is_frame:
        # Names and the number of features, checked (or recorded) on X itself;
        # the columns are converted below.
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        n_features = X.shape[1]
    else:
        X = _to_array(estimator, X, reset, check_params)
        n_features = X.shape[1]
    names = getattr(estimator, "feature_names_in_", None)
    if reset:
        mask = _resolve_mask(estimator.categorical_features, columns, n_features, names)
        if mask is None:
            _set_fitted(estimator, None, None, None)
            return _to_array(estimator, X, True, check_params) if columns.is_frame else X
        by_value = np.zeros(n_features, dtype=bool)
        if columns.is_frame:
            by_value[mask] = [not columns.is_numeric(int(j)) for j in np.flatnonzero(mask)]
        categories = [None] * n_features
    else:
        mask, by_value = estimator.is_categorical_, estimator._categorical_by_value
        categories = estimator.categorical_categories_

    def name(j):
        return names[j] if names is not None else j

    if columns.is_frame:
        def codes_of(j):
            if reset:
                categories[j] = columns.categories(j, name(j))
            return columns.codes(j, categories[j])

        out = _with_codes(columns, by_value, codes_of)
        if out is None:
            # Not only numbers: column by column, naming the column that fails.
            out = np.empty((columns.X.shape[0], n_features), dtype=np.float64)
            for j in range(n_features):
                out[:, j] = codes_of(j) if by_value[j] else columns.to_float(j, name(j))
        X = check_array(out, **{"estimator": estimator, **check_params})
    if reset:
        for j in np.flatnonzero(mask & ~by_value):
            categories[j] = category_codes(column(X, j), name(j))  # validates the codes
        _set_fitted(estimator, mask, categories, by_value)
    return X


def _set_fitted(estimator, mask, categories, by_value):
    estimator.is_categorical_ = mask
    estimator.categorical_categories_ = categories
    estimator._categorical_by_value = by_value
