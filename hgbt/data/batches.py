"""Rows that arrive in batches: a Dataset binned without the whole float matrix.

:meth:`hgbt.Dataset.from_batches` reads its batches twice and never holds
more than one of them:

1. **Survey**: each batch is validated as ``fit`` validates X (frames,
   categorical columns, names), its numeric columns feed one
   :class:`~hgbt.data.sketch.QuantileSketch` each, its categorical columns
   add the categories they hold, and its label and weights are kept (one
   value per row: the only per-row state besides the bins).
2. **Binning**: each batch is converted with the categorical encoding of all
   batches and binned with the thresholds of the sketches, into one uint8
   matrix of bins (a byte per value, against 4 or 8 for the values).

The bins are what in-memory binning gives while every numeric column has at
most the sketch's capacity of distinct values (the sketch is exact there,
and in-memory binning draws no subsample below 200,000 rows); past that
the thresholds are the sketch's (rank error: ``sketch.py``). Given the same
bins, training is the in-memory training, bit for bit.

Categories: a categorical column whose batches all carry the same categories
(a pandas ``category`` or polars ``Enum`` dtype) keeps them in their order,
as in memory; otherwise its categories are the sorted values present in any
batch, which is what a concatenation of the batches (as objects or strings)
would give. Integer-coded categorical columns keep the codes seen.

Limits, each refused with a clear error: sparse batches, categorical
features with more than 255 categories (pooled features need target
statistics over all rows), and anything that needs the values back (a
hold-out of the rows for early stopping, a scorer on the training rows,
another binning, a subset). The rows are never bundled (bundles pay for
sparse one-hot columns, not for dense batches).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Tags, TargetTags

from ..core._types import X_BINNED_DTYPE, X_DTYPE
from .binning import MAX_CATEGORIES, BinMapper
from .categorical import CategoricalEncoding, _same_categories, validate_X
from .sketch import DEFAULT_CAPACITY, QuantileSketch

RAW_ROWS_HINT = (
    "A Dataset built from batches (Dataset.from_batches) keeps its rows binned, not "
    "their values; this step needs the values. Early stopping: pass a validation "
    "Dataset (X_val= or eval_set=, or hgbt.train's valid_sets=) instead of a hold-out "
    "of the rows; scorers: score a validation set; another binning: build the Dataset "
    "again with the new binning parameters.")


class BatchedRows:
    """The rows of a Dataset built from batches, as far as they are kept: their
    shape. Asking for their values raises ValueError (:data:`RAW_ROWS_HINT`)."""

    ndim = 2

    def __init__(self, n_rows: int, n_features: int) -> None:
        self.shape = (int(n_rows), int(n_features))

    def __len__(self) -> int:
        return self.shape[0]

    def _refuse(self, *args, **kwargs):
        raise ValueError(RAW_ROWS_HINT)

    __getitem__ = __array__ = tocsc = tocsr = copy = _refuse


class _Schema:
    """What scikit-learn's ``validate_data`` records on a checker: the
    features' count and names (of one batch, or of all)."""

    def __sklearn_tags__(self):
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))


def passes(batches: Iterable | Callable[[], Iterator]) -> Callable[[], Iterator]:
    """A function returning a new iterator over ``batches`` on each call."""
    if callable(batches) and not hasattr(batches, "__iter__"):
        return lambda: iter(batches())
    if not hasattr(batches, "__iter__"):
        raise TypeError(f"batches must be an iterable of batches or a function returning "
                        f"one, got {type(batches).__name__}.")
    if iter(batches) is batches:
        raise TypeError(
            f"batches is an iterator ({type(batches).__name__}), which can be read once; "
            "Dataset.from_batches reads its batches twice (bin boundaries, then bins). "
            "Pass a function that returns a new iterator (e.g. lambda: read_chunks(path)), "
            "a list, or hgbt.data.batches.ParquetBatches(path).")
    return lambda: iter(batches)


def split_batch(item: Any, label: str | None, weight: str | None, index: int):
    """``(X, y, w)`` of one batch: a tuple ``(X, y)`` or ``(X, y, w)``, a dict
    with ``data``, ``label`` and ``weight``, or a frame holding the columns
    named ``label`` and ``weight``."""
    if isinstance(item, dict):
        unknown = set(item) - {"data", "label", "weight"}
        if "data" not in item or unknown:
            raise ValueError(f"batch {index}: a dict batch has the keys 'data', 'label' and "
                             f"'weight' (got {sorted(item)}).")
        X, y, w = item["data"], item.get("label"), item.get("weight")
    elif isinstance(item, tuple):
        if len(item) not in (2, 3):
            raise ValueError(f"batch {index}: a tuple batch is (X, y) or (X, y, weight), "
                             f"got {len(item)} items.")
        X, y, w = (*item, None) if len(item) == 2 else item
    else:
        X, y, w = item, None, None
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(X, pa.RecordBatch):
        X = pa.Table.from_batches([X])
    named = [name for name in (label, weight) if name is not None]
    if named:
        if y is not None or w is not None:
            raise ValueError(f"batch {index}: label= and weight= name columns of frame "
                             "batches; this batch brings its own label or weights.")
        X, columns = _pop_columns(X, named, index)
        y = columns[0] if label is not None else None
        w = columns[-1] if weight is not None else None
    if sp.issparse(X):
        raise TypeError(f"batch {index} is a sparse matrix: Dataset.from_batches takes dense "
                        "batches (build a Dataset from the whole sparse matrix instead).")
    return X, y, w


def _pop_columns(X, names, index):
    """``X`` without the columns ``names``, and those columns as arrays."""
    pd, pl, pa = (sys.modules.get(m) for m in ("pandas", "polars", "pyarrow"))
    have = (list(X.columns) if (pd is not None and isinstance(X, pd.DataFrame))
            or (pl is not None and isinstance(X, pl.DataFrame))
            else X.column_names if pa is not None and isinstance(X, pa.Table) else None)
    if have is None:
        raise TypeError(f"batch {index} is a {type(X).__name__}: label= and weight= name "
                        "columns of DataFrame or Arrow batches; give array batches as "
                        "(X, y) or (X, y, weight) tuples.")
    missing = [name for name in names if name not in have]
    if missing:
        raise ValueError(f"batch {index} has no column {missing[0]!r} (its columns: "
                         f"{have[:10]}{' ...' if len(have) > 10 else ''}).")
    if pa is not None and isinstance(X, pa.Table):
        columns = [X.column(name).to_numpy() for name in names]
        return X.drop_columns(names), columns
    columns = [X[name].to_numpy() for name in names]
    return X.drop(columns=names) if pd is not None and isinstance(X, pd.DataFrame) \
        else X.drop(names), columns


_CHECK = dict(dtype=[X_DTYPE, np.float32], ensure_all_finite=False, accept_sparse=False,
              positions=True)


class Survey:
    """The first pass: row count, schema, sketches, categories, labels, weights."""

    def __init__(self, categorical_features, capacity: int = DEFAULT_CAPACITY,
                 n_threads: int = 1) -> None:
        self.categorical_features = categorical_features
        self.capacity = capacity
        self._pool = ThreadPoolExecutor(max_workers=max(1, n_threads))
        self.schema = None       # the first batch's checker
        self.batch_rows = []     # rows of each batch (the second pass checks them)
        self.labels, self.weights = [], []
        self.sketches = None     # per numeric feature
        self.mask = self.by_value = None
        self.category_lists = None  # per by-value feature: the first batch's categories
        self.same_lists = None      # ... and whether every batch had the same
        self.present = None         # per categorical feature: values (or codes) present

    def add(self, X, y, w, index: int) -> None:
        checker = _Schema()
        Xc, encoding = validate_X(checker, X, categorical_features=self.categorical_features,
                                  reset=True, **_CHECK)
        n_rows, n_features = Xc.shape
        mask = np.zeros(n_features, bool) if encoding is None else encoding.mask
        by_value = np.zeros(n_features, bool) if encoding is None else encoding.by_value
        if self.schema is None:
            self.schema, self.mask, self.by_value = checker, mask, by_value
            self.sketches = {f: QuantileSketch(self.capacity)
                             for f in np.flatnonzero(~mask)}
            self.category_lists = {f: encoding.categories[f] for f in np.flatnonzero(by_value)}
            self.same_lists = {f: True for f in self.category_lists}
            self.present = {f: {} for f in np.flatnonzero(mask)}
        else:
            self._check_schema(checker, mask, by_value, index)
        for f in np.flatnonzero(mask):
            categories = encoding.categories[f]
            if (by_value[f] and len(categories) > MAX_CATEGORIES) or (
                    not by_value[f] and len(categories) and categories.max() >= MAX_CATEGORIES):
                raise ValueError(
                    f"batch {index}: categorical feature {self._name(f)!r} has more than "
                    f"{MAX_CATEGORIES} categories (or codes >= {MAX_CATEGORIES}). From "
                    "batches, categorical features have at most 255 categories (the pooled "
                    "ones need target statistics over all rows): group rare categories, or "
                    "build the Dataset in memory.")
            if by_value[f]:
                codes = Xc[:, f]
                seen = np.unique(codes[~np.isnan(codes)]).astype(np.intp)
                values = categories[seen]
                if self.same_lists[f] and not _same_categories(
                        np.asarray(categories), np.asarray(self.category_lists[f])):
                    self.same_lists[f] = False
            else:
                values = categories
            self.present[f].update(dict.fromkeys(values.tolist()))
        w_kept = None if w is None else np.asarray(w, dtype=np.float64).ravel()
        if w_kept is not None and w_kept.shape != (n_rows,):
            raise ValueError(f"batch {index}: {w_kept.size} weights for {n_rows} rows.")
        # NumPy's sorts release the GIL: the columns' sketches in threads
        # (the survey of 2M x 50 float32 rows: 13.6 s on 1 thread, 8.7 s on 2)
        list(self._pool.map(lambda f: self.sketches[f].update(Xc[:, f], w_kept),
                            self.sketches))
        if y is not None:
            y = np.asarray(y)
            if y.shape[0] != n_rows:
                raise ValueError(f"batch {index}: {y.shape[0]} labels for {n_rows} rows.")
        if self.batch_rows and (y is None) != (len(self.labels) == 0):
            raise ValueError(f"batch {index} {'has no' if y is None else 'has a'} label, "
                             f"unlike the batches before it: every batch has a label, or "
                             "none.")
        if self.batch_rows and (w is None) != (len(self.weights) == 0):
            raise ValueError(f"batch {index} {'has no' if w is None else 'has'} weights, "
                             "unlike the batches before it: every batch has weights, or "
                             "none.")
        if y is not None:
            self.labels.append(y)
        if w_kept is not None:
            self.weights.append(w_kept)
        self.batch_rows.append(n_rows)

    def _name(self, f):
        names = getattr(self.schema, "feature_names_in_", None)
        return names[f] if names is not None else int(f)

    def _check_schema(self, checker, mask, by_value, index):
        first = self.schema
        if checker.n_features_in_ != first.n_features_in_:
            raise ValueError(f"batch {index} has {checker.n_features_in_} features; the first "
                             f"batch has {first.n_features_in_}: every batch has the same "
                             "columns.")
        a, b = (getattr(c, "feature_names_in_", None) for c in (first, checker))
        if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
            raise ValueError(f"batch {index}'s feature names are not the first batch's: every "
                             "batch has the same columns, in the same order.")
        for f in np.flatnonzero((mask != self.mask) | (by_value != self.by_value)):
            raise ValueError(
                f"batch {index}: feature {self._name(f)!r} is "
                f"{'categorical' if mask[f] else 'numeric'} here but "
                f"{'categorical' if self.mask[f] else 'numeric'} in the first batch (its "
                "dtype differs): give every batch the same dtypes, or name the categorical "
                "features in categorical_features.")

    def close(self) -> None:
        """Ends the threads of the sketches."""
        self._pool.shutdown()

    @property
    def n_rows(self) -> int:
        return int(sum(self.batch_rows))

    def encoding(self) -> CategoricalEncoding | None:
        """The categorical encoding of all batches (None without categorical features)."""
        if not self.mask.any():
            return None
        categories = [None] * self.mask.size
        for f, present in self.present.items():
            if not self.by_value[f]:
                categories[f] = np.array(sorted(present), dtype=np.intp)
            elif self.same_lists[f]:
                categories[f] = self.category_lists[f]
            else:
                categories[f] = _sorted_values(list(present), self._name(f))
            if len(categories[f]) > MAX_CATEGORIES:
                raise ValueError(
                    f"categorical feature {self._name(f)!r} has {len(categories[f])} "
                    f"categories over all batches; from batches at most {MAX_CATEGORIES} "
                    "(group rare categories, or build the Dataset in memory).")
        return CategoricalEncoding(self.mask.copy(), categories, self.by_value.copy())

    def bin_mapper(self, encoding, max_bins: int, n_threads: int) -> BinMapper:
        """Thresholds of the sketches; categorical features' codes present."""
        n_features = self.mask.size
        thresholds = [np.empty(0, dtype=X_DTYPE)] * n_features
        for f, sketch in self.sketches.items():
            thresholds[f] = sketch.thresholds(max_bins)
        codes = {}
        for f, present in self.present.items():
            if self.by_value[f]:
                position = {value: i for i, value in enumerate(encoding.categories[f].tolist())}
                codes[f] = np.sort(np.array([position[v] for v in present], dtype=np.intp))
            else:
                codes[f] = encoding.categories[f]
        return BinMapper(max_bins=max_bins, n_threads=n_threads).set_thresholds(
            thresholds, self.mask, codes)


def _sorted_values(values, name):
    try:
        return np.asarray(sorted(values), dtype=object)
    except TypeError as exc:
        raise ValueError(f"categorical feature {name!r} holds values of several types "
                         f"across batches ({exc}); give it one type.") from exc


def bin_batches(batches: Callable[[], Iterator], survey: Survey, encoding, mapper: BinMapper,
                label: str | None, weight: str | None, pages=None, verbose: int = 0):
    """The second pass: every batch converted and binned into one
    Fortran-ordered uint8 matrix, or appended to ``pages``
    (:class:`~hgbt.data.pages.BinPages`, then finished); returns either."""
    n_features = survey.mask.size
    codes = (np.empty((survey.n_rows, n_features), dtype=X_BINNED_DTYPE, order="F")
             if pages is None else None)
    start = index = 0
    progress = Progress(verbose, "bins" if pages is None else f"bins to {pages.path}",
                        survey.n_rows)
    for index, item in enumerate(batches()):
        X, _, _ = split_batch(item, label, weight, index)
        Xc, _ = validate_X(survey.schema, X, encoding, **_CHECK)
        n = Xc.shape[0]
        if index >= len(survey.batch_rows) or n != survey.batch_rows[index]:
            raise ValueError(_CHANGED)
        if pages is None:
            codes[start:start + n] = mapper.transform(Xc)
        else:
            pages.append(mapper.transform(Xc))
        start += n
        progress.batch(index, n)
    if start != survey.n_rows or index != len(survey.batch_rows) - 1:
        raise ValueError(_CHANGED)
    progress.done(index + 1)
    return codes if pages is None else pages.finish()


_CHANGED = ("The batches changed between the two passes of Dataset.from_batches (other row "
            "counts): give a source that yields the same batches on every pass.")


class Progress:
    """``verbose`` > 0: a line every ``verbose`` batches of a pass and one at
    its end (rows, batches, seconds; the second pass's share of the first's
    rows), as the estimators' ``verbose`` prints a line every few rounds."""

    def __init__(self, verbose: int, name: str, total_rows: int | None = None) -> None:
        self.verbose, self.name, self.total_rows = int(verbose), name, total_rows
        self.start = time.perf_counter()
        self.rows = 0

    def batch(self, index: int, n_rows: int) -> None:
        self.rows += n_rows
        if self.verbose > 0 and (index + 1) % self.verbose == 0:
            self._print(index + 1)

    def done(self, n_batches: int) -> None:
        if self.verbose > 0:
            self._print(n_batches, end=True)

    def _print(self, n_batches, end=False):
        share = (f" ({self.rows / self.total_rows:.0%})" if self.total_rows else "")
        print(f"[from_batches] {self.name}: {n_batches} batches, {self.rows:,} rows{share}, "
              f"{time.perf_counter() - self.start:.1f}s{' - done' if end else ''}",
              flush=True)


def survey_batches(batches: Callable[[], Iterator], categorical_features, label, weight,
                   n_threads: int, capacity: int = DEFAULT_CAPACITY,
                   verbose: int = 0) -> Survey:
    """The first pass over the batches."""
    survey = Survey(categorical_features, capacity, n_threads)
    progress = Progress(verbose, "bin boundaries")
    try:
        for index, item in enumerate(batches()):
            survey.add(*split_batch(item, label, weight, index), index)
            progress.batch(index, survey.batch_rows[-1])
    finally:
        survey.close()
    progress.done(len(survey.batch_rows))
    if not survey.batch_rows or survey.n_rows == 0:
        raise ValueError("batches yielded no rows.")
    return survey


class ParquetBatches:
    """The row batches of a Parquet file or directory of files, re-readable.

    Files are read in the sorted order of their paths, each in batches of
    up to ``batch_size`` rows (pyarrow), so every pass yields the same
    batches. With ``label`` (and ``weight``), each batch is ``(X, y)`` (or
    ``(X, y, w)``) with those columns taken out of X.

    Parameters
    ----------
    path : str or Path
        A ``.parquet`` file, or a directory searched for ``*.parquet`` files
        (recursively).
    label, weight : str, default=None
        Columns holding the label and the row weights.
    columns : list of str, default=None
        The feature columns to read (default: all others).
    batch_size : int, default=65536
        Rows per batch.
    """

    def __init__(self, path: str | Path, *, label: str | None = None,
                 weight: str | None = None, columns: list[str] | None = None,
                 batch_size: int = 65_536) -> None:
        path = Path(path)
        files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
        if not files:
            raise ValueError(f"{str(path)!r} is no Parquet file and holds none.")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        self.files, self.label, self.weight = files, label, weight
        self.columns, self.batch_size = columns, int(batch_size)

    def __iter__(self) -> Iterator:
        import pyarrow as pa
        import pyarrow.parquet as pq

        extra = [name for name in (self.label, self.weight) if name is not None]
        read = None if self.columns is None else list(self.columns) + extra
        for file in self.files:
            for batch in pq.ParquetFile(file).iter_batches(batch_size=self.batch_size,
                                                           columns=read):
                table = pa.Table.from_batches([batch])
                if not extra:
                    yield table
                    continue
                X, columns = _pop_columns(table, extra, 0)
                y = columns[0] if self.label is not None else None
                yield (X, y) if self.weight is None else (X, y, columns[-1])
        # Arrow's allocator keeps what the batches used: give it back
        release = getattr(pa.default_memory_pool(), "release_unused", None)
        if release is not None:
            release()
