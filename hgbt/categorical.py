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
        return validate_data(estimator, X, reset=False, **check_params)
    if reset and estimator.categorical_features is None:
        _set_fitted(estimator, None, None, None)
        return validate_data(estimator, X, reset=True, **check_params)
    if columns.is_frame:
        # Names and the number of features, checked (or recorded) on X itself;
        # the columns are converted below.
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        n_features = X.shape[1]
    else:
        X = validate_data(estimator, X, reset=reset, **check_params)
        n_features = X.shape[1]
    names = getattr(estimator, "feature_names_in_", None)
    if reset:
        mask = _resolve_mask(estimator.categorical_features, columns, n_features, names)
        if mask is None:
            _set_fitted(estimator, None, None, None)
            return (validate_data(estimator, X, reset=True, **check_params)
                    if columns.is_frame else X)
        by_value = np.array([columns.is_frame and mask[j] and not columns.is_numeric(j)
                             for j in range(n_features)], dtype=bool)
        categories = [None] * n_features
    else:
        mask, by_value = estimator.is_categorical_, estimator._categorical_by_value
        categories = estimator.categorical_categories_

    def name(j):
        return names[j] if names is not None else j

    if columns.is_frame:
        out = np.empty((columns.X.shape[0], n_features), dtype=np.float64)
        for j in range(n_features):
            if by_value[j]:
                if reset:
                    categories[j] = columns.categories(j, name(j))
                out[:, j] = columns.codes(j, categories[j])
            else:
                out[:, j] = columns.to_float(j, name(j))
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
