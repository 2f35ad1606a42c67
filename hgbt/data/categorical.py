"""Categorical input: which features are categorical, and their category codes.

The kernels see a float matrix in which a categorical feature holds category
codes (integers 0..254, NaN for missing). This module builds that matrix
before scikit-learn's ``validate_data`` would turn a DataFrame into numbers:

- pandas ``category`` and polars ``Categorical`` / ``Enum`` columns, string
  columns (``frames.is_string``), and non-numeric columns named in
  ``categorical_features`` are mapped *by value*: the categories seen at fit time are recorded per feature
  (``categorical_categories_``; for a pandas ``category`` column, the
  categories of its dtype, in their order), a value's code is its position
  there, and at prediction values are looked up again, so another category
  order gives the same codes and unknown categories become NaN (missing).
- Numeric categorical columns (NumPy arrays, or numeric DataFrame columns)
  already hold the codes: non-negative integers (checked at fit);
  ``categorical_categories_`` records the codes seen. At prediction, NaN,
  negative, non-integer and unknown codes take the missing direction.
- A feature with more than 255 categories, or codes >= 255, is pooled (see
  "pooling" below): codes become bins 0..254, the rare categories sharing 254.

Datetime, LazyFrame and Arrow input is normalised first (``frames.py``).

An ndarray given at prediction to a model fit on a DataFrame holds codes for
every categorical feature (positions in ``categorical_categories_``).
pandas and polars are never imported here: a frame is recognised only if its
library is already loaded.
"""
import sys
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array, validate_data

from .binning import MAX_CATEGORIES, category_codes
from .frames import STRING_HINT, is_string, normalize_frame
from .sparse import column

# A feature with more categories than bins keeps its POOLED_BIN most frequent
# categories as bins 0 .. POOLED_BIN - 1 and pools the rest into bin POOLED_BIN.
POOLED_BIN = MAX_CATEGORIES - 1


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


def _warn_numbers_as_strings(col, categories, name):
    """Warn when a column of strings (not declared categorical) holds numbers:
    ``"0.12"`` read from a file as text would silently become hundreds of
    categories. Levels that are all small integers ("1", "2", ...) are taken
    as meant: codes often are."""
    if _is_categorical_dtype(col.dtype) or not all(isinstance(c, str) for c in categories):
        return
    try:
        values = [float(c) for c in categories]
    except ValueError:
        return
    if len(values) <= MAX_CATEGORIES and all(v.is_integer() for v in values):
        return
    warnings.warn(
        f"Feature {name!r} holds numbers stored as strings ({len(values)} distinct, e.g. "
        f"{categories[0]!r}); it is treated as a categorical feature. To use it as a "
        "number, convert it first (pandas.to_numeric, or polars' cast(pl.Float64)); to "
        "keep it categorical without this warning, give it a categorical dtype.",
        UserWarning, stacklevel=6)


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

    def may_hold_strings(self, dtype):
        """False for dtypes whose columns cannot hold strings (numbers, bools,
        categoricals): :func:`is_string` need not look at their values."""
        if self.pd is None:
            return True  # polars: is_string reads the dtype only
        types = self.pd.api.types
        return not (_is_categorical_dtype(dtype) or types.is_numeric_dtype(dtype)
                    or types.is_bool_dtype(dtype))

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
                    if _is_categorical_dtype(col.dtype)
                    else f" It holds strings: {STRING_HINT}." if is_string(col) else "")
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
        return cats

    def codes(self, j, categories):
        """Float codes of a column mapped by value; unknown values are NaN."""
        col = self.column(j)
        if self.pd is not None:
            if isinstance(col.dtype, self.pd.CategoricalDtype):
                own = np.asarray(col.dtype.categories)
                codes = col.cat.codes.to_numpy()
                # its own categories (a fit's, the common case at predict):
                # the codes as they are, without an index of the categories
                # (3 ms a fit of 9 such columns)
                if not _same_categories(own, np.asarray(categories)):
                    # map each category of the column once, then its codes
                    index = self.pd.Index(categories)
                    codes = np.append(index.get_indexer(own), -1)[codes]
            else:
                codes = self.pd.Index(categories).get_indexer(col)
            out = codes.astype(np.float64)
            out[codes < 0] = np.nan
            return out
        if _is_categorical_dtype(col.dtype):
            col = col.cast(self.pl.String)
        mapped = col.replace_strict(list(categories), list(range(len(categories))),
                                    default=None, return_dtype=self.pl.Float64)
        return mapped.to_numpy().astype(np.float64, copy=False)


def _same_categories(a, b):
    """Whether two category arrays hold the same values of the same types in
    the same order (``True`` is not ``1`` here, as it is not to pandas' lookups)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype != object:
        return bool(np.array_equal(a, b))
    return all(type(x) is type(y) and x == y for x, y in zip(a.tolist(), b.tolist()))


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


def _to_array(checker, X, reset, check_params):
    """``validate_data`` of X, converting a frame of plain numbers in bulk."""
    is_frame = (_pandas_frame(X) is not None or _polars_frame(X) is not None
                or _arrow_table(X) is not None)
    out = _bulk_numbers(X) if is_frame else None
    if out is None:
        try:
            return validate_data(checker, X, reset=reset, **check_params)
        except ValueError as exc:
            if "could not convert string to float" not in str(exc):
                raise
            raise ValueError(f"{exc}: X holds strings. {STRING_HINT}; a NumPy array "
                             "holds numbers only: pass a pandas or polars DataFrame "
                             "with string columns.") from exc
    validate_data(checker, X, reset=reset, skip_check_array=True)  # names, n_features
    return check_array(out, input_name="X", **{"estimator": checker, **check_params})


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
        dtypes = columns.dtypes()
        # by dtype (a wide frame has few): only object-like columns are read
        maybe_string = {d: columns.may_hold_strings(d) for d in set(dtypes)}
        mask = np.array([_is_categorical_dtype(d)
                         or (maybe_string[d] and is_string(columns.column(j)))
                         for j, d in enumerate(dtypes)], dtype=bool)
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


# ---------------------------------------------------------------- pooling
# A categorical feature whose codes cannot be its bins (more than
# MAX_CATEGORIES categories, or integer codes >= MAX_CATEGORIES) is pooled:
# its categories are stored most frequent first (the POOLED_BIN most frequent,
# ties to the lower code, in code order; then the others in code order), and
# the bin of the category at position p is min(p, POOLED_BIN). The rest of the
# model (bins, bitsets, trees, the predictor) only ever sees those bins.

def is_pooled(categories, by_value):
    """Whether a categorical feature with these fitted categories is pooled."""
    if categories is None or len(categories) == 0:
        return False
    if by_value:
        return len(categories) > MAX_CATEGORIES
    return int(np.max(categories)) >= MAX_CATEGORIES


class CategoricalEncoding:
    """The categorical features of a fit and how their values become codes.

    Parameters
    ----------
    mask : ndarray of bool of shape (n_features,)
        The categorical features (at least one).
    categories : list
        Per feature None (numeric), or its categories mapped by value (in
        code order; pooled ones most frequent first) or the integer codes
        seen at fit.
    by_value : ndarray of bool of shape (n_features,)
        The categorical features whose values are looked up in their
        categories (DataFrame categories and strings); the others hold codes.
    """

    def __init__(self, mask, categories, by_value):
        self.mask = mask
        self.categories = categories
        self.by_value = by_value

    @property
    def pooled_features(self):
        """Indices of the pooled features (more categories than bins)."""
        return [int(f) for f in np.flatnonzero(self.mask)
                if is_pooled(self.categories[f], self.by_value[f])]


def same_encoding(a, b):
    """Whether two categorical encodings (or None) turn every value into the
    same code."""
    if a is None or b is None:
        return a is b
    return (np.array_equal(a.mask, b.mask) and np.array_equal(a.by_value, b.by_value)
            and all((x is None and y is None) or (x is not None and y is not None
                                                   and np.array_equal(x, y))
                    for x, y in zip(a.categories, b.categories)))


def pooled_features(encoding):
    """Indices of the pooled features of a :class:`CategoricalEncoding`
    (none for None: no categorical features)."""
    return [] if encoding is None else encoding.pooled_features


def _frequency_order(counts):
    """Positions in pooled order: the POOLED_BIN most frequent (ties: lower
    position) in position order, then the others in position order."""
    if counts.size <= MAX_CATEGORIES:
        return np.arange(counts.size)
    keep = np.zeros(counts.size, dtype=bool)
    keep[np.argsort(-counts, kind="stable")[:POOLED_BIN]] = True
    return np.concatenate([np.flatnonzero(keep), np.flatnonzero(~keep)])


def frequency_positions(counts):
    """The pooled order of categories with these ``counts`` (see
    :func:`_frequency_order`) and each category's position in it (float64)."""
    order = _frequency_order(counts)
    position = np.empty(order.size, dtype=np.float64)
    position[order] = np.arange(order.size)
    return order, position


def _pool_by_frequency(categories, codes):
    """By-value categories and float codes (positions) reordered by frequency."""
    valid = ~np.isnan(codes)
    counts = np.bincount(codes[valid].astype(np.intp), minlength=len(categories))
    order, position = frequency_positions(counts)
    codes = codes.copy()
    codes[valid] = position[codes[valid].astype(np.intp)]
    return np.asarray(categories)[order], codes


def codes_with_counts(values, name):
    """The distinct codes of a categorical column (or a by-value feature's
    positions; NaN: missing) and the rows holding each; ValueError unless
    they are non-negative integers (:func:`category_codes`' message)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    if not (np.all(np.isfinite(values)) and np.all(values >= 0)
            and np.all(values == np.floor(values))):
        category_codes(values, name)  # negative, non-integer or infinite: its error
    codes, counts = np.unique(values, return_counts=True)
    return codes.astype(np.intp), counts.astype(np.int64)


def _integer_categories(values, name):
    """Codes seen in an integer-coded categorical column (sorted), or pooled
    by frequency when some code is >= MAX_CATEGORIES."""
    try:
        return category_codes(values, name)
    except ValueError:
        codes, counts = codes_with_counts(values, name)
        return codes[_frequency_order(counts)]


def pooled_positions(values, categories, by_value):
    """Positions (in pooled order) of a pooled feature's values (positions
    for by-value features, raw codes otherwise); NaN for missing, unknown
    and invalid values."""
    values = np.asarray(values, dtype=np.float64)
    if by_value:
        with np.errstate(invalid="ignore"):
            valid = (values >= 0) & (values < len(categories)) & (values == np.floor(values))
        return np.where(valid, values, np.nan)
    order = np.argsort(categories, kind="stable")
    known = np.asarray(categories, dtype=np.float64)[order]
    i = np.minimum(np.searchsorted(known, values), known.size - 1)
    return np.where(known[i] == values, order[i], np.nan)


def _pooled_bins(values, categories, by_value):
    """Bins of a pooled feature's values (see :func:`pooled_positions`)."""
    return np.minimum(pooled_positions(values, categories, by_value), POOLED_BIN)


def codes_of_values(encoding, feature, values):
    """The float codes (bins, for a pooled feature) that prediction sees for
    ``values`` of categorical ``feature``, as ``validate_X`` turns a column
    into them: a category mapped by value becomes its position (unknown
    values NaN), an integer code stays itself. ``values`` is not modified.
    (A pooled category's own target statistic is lost in its bin: partial
    dependence averages over the bin's categories.)"""
    categories = encoding.categories[feature]
    by_value = bool(encoding.by_value[feature])
    values = np.asarray(values, dtype=object if by_value else np.float64)
    if by_value:
        position = {category: float(p) for p, category in enumerate(categories)}
        codes = np.array([position.get(v, np.nan) for v in values.ravel()],
                         dtype=np.float64).reshape(values.shape)
    else:
        codes = values.copy()
    if is_pooled(categories, by_value):
        codes = _pooled_bins(codes, categories, by_value)
    return codes


def validate_X(checker, X, encoding=None, *, categorical_features=None, reset=False,
               positions=False, **check_params):
    """``validate_data`` for X with categorical features turned into codes:
    ``(X, encoding)``.

    ``checker`` is the object whose ``n_features_in_`` and
    ``feature_names_in_`` scikit-learn's ``validate_data`` checks X against
    (and, with ``reset``, records them on). With ``reset`` (fit), the
    categorical features are decided from ``categorical_features`` and the
    returned :class:`CategoricalEncoding` (None without categorical
    features) records them; else ``encoding`` (the fit's) converts X. A
    pooled feature's column holds its bins, or with ``positions`` its
    categories' positions (the bin is ``min(position, POOLED_BIN)``;
    ``target_stats.py`` reads the positions).
    """
    to_codes = pooled_positions if positions else _pooled_bins
    if hasattr(X, "__next__") and not hasattr(X, "__array__"):
        raise TypeError(
            f"X is a {type(X).__name__} (an iterator, e.g. a generator of chunks): "
            "fit needs every row at once. Build hgbt.Dataset.from_batches(chunks) (binned "
            "batch by batch, without the whole float matrix; give a list or a function "
            "returning a new iterator) and fit on it, concatenate the chunks "
            "(np.concatenate(list(chunks)) or pd.concat(chunks)), or, for rows beyond one "
            "machine, use hgbt.dask.")
    X = normalize_frame(X)
    columns = _Columns(X)
    if not reset and encoding is None:
        _check_strings(columns, None)
        return _to_array(checker, X, False, check_params), None
    if reset and categorical_features is None:
        _check_strings(columns, None)
        return _to_array(checker, X, True, check_params), None
    if columns.is_frame:
        # Names and the number of features, checked (or recorded) on X itself;
        # the columns are converted below.
        validate_data(checker, X, reset=reset, skip_check_array=True)
        n_features = X.shape[1]
    else:
        X = _to_array(checker, X, reset, check_params)
        n_features = X.shape[1]
    names = getattr(checker, "feature_names_in_", None)
    if reset:
        mask = _resolve_mask(categorical_features, columns, n_features, names)
        _check_strings(columns, mask)
        if mask is None:
            return (_to_array(checker, X, True, check_params) if columns.is_frame
                    else X), None
        by_value = np.zeros(n_features, dtype=bool)
        if columns.is_frame:
            by_value[mask] = [not columns.is_numeric(int(j)) for j in np.flatnonzero(mask)]
        categories = [None] * n_features
    else:
        mask, by_value = encoding.mask, encoding.by_value
        categories = encoding.categories
        _check_strings(columns, mask)

    def name(j):
        return names[j] if names is not None else j

    if columns.is_frame:
        def codes_of(j):
            if reset:
                categories[j] = columns.categories(j, name(j))
                _warn_numbers_as_strings(columns.column(j), categories[j], name(j))
            codes = columns.codes(j, categories[j])
            if reset and len(categories[j]) > MAX_CATEGORIES:
                categories[j], codes = _pool_by_frequency(categories[j], codes)
            if is_pooled(categories[j], True):
                codes = to_codes(codes, categories[j], True)
            return codes

        out = _with_codes(columns, by_value, codes_of)
        if out is None:
            # Not only numbers: column by column, naming the column that fails.
            out = np.empty((columns.X.shape[0], n_features), dtype=np.float64)
            for j in range(n_features):
                out[:, j] = codes_of(j) if by_value[j] else columns.to_float(j, name(j))
        X = check_array(out, **{"estimator": checker, **check_params})
    if reset:
        for j in np.flatnonzero(mask & ~by_value):
            categories[j] = _integer_categories(column(X, j), name(j))  # validates the codes
        encoding = CategoricalEncoding(mask, categories, by_value)
    # Integer codes of pooled features (and, in an array, a by-value feature's
    # positions) become their bins.
    pooled = [j for j in np.flatnonzero(mask) if is_pooled(categories[j], by_value[j])
              and not (by_value[j] and columns.is_frame)]
    if pooled:
        if sp.issparse(X):
            raise ValueError(
                f"Categorical feature {name(pooled[0])!r} has more than {MAX_CATEGORIES} "
                f"categories or codes >= {MAX_CATEGORIES}: such features need dense X "
                "(call X.toarray()).")
        X = X.copy(order="K")
        for j in pooled:
            X[:, j] = to_codes(X[:, j], categories[j], by_value[j])
    return X, encoding


def _check_strings(columns, mask):
    """Raise a clear error for a string column that is not categorical."""
    if not columns.is_frame:
        return
    number = (_polars_number if columns.pl is not None
              else lambda d: _pandas_number(d, columns.pd))
    for j, dtype in enumerate(columns.dtypes()):
        if (mask is not None and mask[j]) or number(dtype) or _is_categorical_dtype(dtype):
            continue
        if is_string(columns.column(j)):
            name = columns.X.columns[j]
            raise ValueError(f"Feature {name!r} holds strings and is not a categorical "
                             f"feature: {STRING_HINT}.")
