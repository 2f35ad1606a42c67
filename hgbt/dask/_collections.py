"""Dask collections → partitions on workers, and the fit's input schema.

``(X, y, sample_weight, fields)`` partitions are computed as one tuple each
(``fields``: the rows' other side information, e.g. query ids), so a
partition's rows, targets, weights and the rest live on one worker; each worker's
shard then receives the tuples already on it (no row moves between workers).
"""
import numpy as np

from ..core._types import X_DTYPE
from ..data.categorical import (POOLED_BIN, _Columns, _frequency_order, _is_categorical_dtype,
                                frequency_positions, is_pooled, validate_X)
from ..data.frames import normalize_frame


def is_dask_collection(obj):
    try:
        from dask import is_dask_collection as is_collection
    except ImportError:  # pragma: no cover - dask is a requirement of hgbt.dask
        return False
    return is_collection(obj)


def _is_frame(obj):
    import dask.dataframe as dd
    return isinstance(obj, (dd.DataFrame, dd.Series))


def _blocks(collection, name, row_chunks=None):
    """Delayed row blocks of a dask array / DataFrame / Series (None stays None)."""
    if collection is None:
        return None
    if not is_dask_collection(collection):
        raise TypeError(f"{name} must be a dask array or dask DataFrame/Series (use the "
                        f"local estimator for in-memory data), got {type(collection).__name__}.")
    if _is_frame(collection):
        return list(collection.to_delayed())
    if collection.ndim == 2 and len(collection.chunks[1]) > 1:
        collection = collection.rechunk({1: -1})  # a row block holds every feature
    if row_chunks is not None and collection.shape[0] != sum(row_chunks):
        raise ValueError(f"{name} has {collection.shape[0]} rows but X has "
                         f"{sum(row_chunks)}.")
    if row_chunks is not None and collection.chunks[0] != row_chunks:
        collection = collection.rechunk({0: row_chunks})
    return list(np.ravel(collection.to_delayed()))


def partitions(client, X, y, sample_weight, what="X", fields=None):
    """Futures of ``(X, y, w, fields)`` partitions in row order (``w`` None
    when not given; ``fields``: name → dask collection partitioned as X, a
    RowMeta field such as 'qid', each partition's block of them), and each
    one's worker."""
    import dask
    from distributed import wait

    if y is None:
        raise ValueError(f"y is required with {what}.")
    X_blocks = _blocks(X, what)
    row_chunks = None if _is_frame(X) else X.chunks[0]
    y_blocks = _blocks(y, "y" if what == "X" else "y_val", row_chunks)
    w_blocks = _blocks(sample_weight, "sample_weight" if what == "X" else
                       "sample_weight_val", row_chunks)
    field_blocks = {name: _blocks(values, name if what == "X" else f"{name}_val", row_chunks)
                    for name, values in (fields or {}).items() if values is not None}
    for name, blocks in (("y", y_blocks), ("sample_weight", w_blocks), *field_blocks.items()):
        if blocks is not None and len(blocks) != len(X_blocks):
            raise ValueError(f"{what} has {len(X_blocks)} partitions but {name} has "
                             f"{len(blocks)}: they must be partitioned alike.")
    parts = [dask.delayed(tuple)([x, y_blocks[i], None if w_blocks is None else w_blocks[i],
                                  {name: blocks[i] for name, blocks in field_blocks.items()}])
             for i, x in enumerate(X_blocks)]
    futures = client.compute(parts)
    wait(futures)
    who_has = client.who_has(futures)
    workers = [who_has[future.key][0] for future in futures]
    return futures, workers


def categorize_strings(X, X_val=None, encoding=None):
    """String columns of a dask DataFrame as pandas categories of their
    sorted distinct values, the categories a local fit takes from them (one
    pass over the rows), or those of ``encoding`` (a warm start's model);
    ``X_val``'s the same categories (its unseen values become missing, as in
    a local fit). Other collections are returned as they are."""
    if not _is_frame(X) or X.ndim != 2:
        return X, X_val
    meta = X._meta
    columns = _Columns(normalize_frame(meta))  # datetimes are numbers here
    names = [meta.columns[j] for j in range(meta.shape[1])
             if not columns.is_numeric(j) and not _is_categorical_dtype(meta.dtypes.iloc[j])]
    if not names:
        return X, X_val
    import dask
    import pandas as pd

    if encoding is not None:  # the model's categories: its codes
        position = {name: j for j, name in enumerate(meta.columns)}
        distinct = [encoding.categories[position[name]] for name in names]
    else:
        distinct = dask.compute(*[X[name].dropna().unique() for name in names])
    dtypes = {name: pd.CategoricalDtype(pd.Index(values).sort_values())
              for name, values in zip(names, distinct)}
    X = X.astype(dtypes)
    if X_val is not None and _is_frame(X_val) and X_val.ndim == 2:
        X_val = X_val.astype({name: dtype for name, dtype in dtypes.items()
                              if name in X_val.columns})
    return X, X_val


def set_schema(model, X, reset=True):
    """Fit-time input schema on ``model`` from X's metadata (no rows needed):
    features and names as the local ``fit`` records them (``reset=False``, a
    warm start: checked against the fitted ones); returns the categorical
    encoding, whose codes seen in integer-coded columns are filled in later
    from the shards.
    """
    if _is_frame(X):
        meta = X._meta
        for j, dtype in enumerate(meta.dtypes):
            if _is_categorical_dtype(dtype) and not X.iloc[:, j].cat.known:
                raise ValueError(f"Categorical column {meta.columns[j]!r} has unknown "
                                 "categories: call X.categorize() (or "
                                 "X[col].cat.as_known()) before fit.")
        columns = _Columns(normalize_frame(meta))  # datetimes: seconds, as on the shards
        for j in range(meta.shape[1]):
            if not columns.is_numeric(j) and not _is_categorical_dtype(meta.dtypes.iloc[j]):
                raise ValueError(f"Column {meta.columns[j]!r} is neither numeric, nor "
                                 "strings, nor a pandas category (dtype "
                                 f"{meta.dtypes.iloc[j]}): a distributed fit cannot "
                                 "encode it.")
    else:
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions.")
        meta = np.empty((0, X.shape[1]), dtype=X.dtype)
    _, encoding = validate_X(model, meta, categorical_features=model.categorical_features,
                             reset=reset, dtype=[X_DTYPE, np.float32],
                             ensure_all_finite=False, ensure_min_samples=0)
    return encoding


def categories_of_all_rows(encoding, per_shard):
    """The categories of every categorical feature from the codes and counts
    of every shard's rows (``per_shard``: each shard's ``{feature: (codes,
    counts)}``), as the local fit finds them on all rows: the fitted
    ``encoding`` is completed in place (integer codes seen; pooled features
    in frequency order, the local rule). Returns the codes the bin mapper
    sees per feature (a pooled feature: its bins) and the re-coding each
    shard applies to its rows (``{feature: ('positions', new position of
    each old one) | ('codes', the pooled codes in order)}``)."""
    mapper_codes, recode = {}, {}
    for f in np.flatnonzero(encoding.mask).tolist():
        # (a shard holding validation rows only has no training codes)
        seen = [shard[f] for shard in per_shard if f in shard]
        codes = np.unique(np.concatenate([np.empty(0, np.intp)] + [c for c, _ in seen]))
        counts = np.zeros(codes.size, dtype=np.int64)
        for shard_codes, shard_counts in seen:
            counts[np.searchsorted(codes, shard_codes)] += shard_counts
        if encoding.by_value[f]:
            categories = encoding.categories[f]  # the dtype's, in its order
            if not is_pooled(categories, True):
                mapper_codes[f] = codes
                continue
            every = np.zeros(len(categories), dtype=np.int64)
            every[codes] = counts
            order, position = frequency_positions(every)
            encoding.categories[f] = np.asarray(categories)[order]
            recode[f] = ("positions", position)
            mapper_codes[f] = np.unique(np.minimum(position[codes], POOLED_BIN)).astype(np.intp)
        elif is_pooled(codes, False):  # (sorted, distinct codes)
            encoding.categories[f] = codes[_frequency_order(counts)]
            recode[f] = ("codes", encoding.categories[f])
            mapper_codes[f] = np.arange(min(codes.size, POOLED_BIN + 1), dtype=np.intp)
        else:
            encoding.categories[f] = mapper_codes[f] = codes
    return mapper_codes, recode


def predict_blocks(X, func, n_outputs, dtype=np.float64):
    """Lazy ``func`` over X's row blocks: a dask array (1-D, or 2-D with ``n_outputs``)."""
    import dask
    import dask.array as da

    def on_block(block, func=func):
        if len(block) == 0:  # empty partitions are fine; validation would reject them
            return np.empty((0,) if n_outputs is None else (0, n_outputs), dtype=dtype)
        return func(block)

    func = on_block
    if _is_frame(X):
        blocks = [da.from_delayed(dask.delayed(func)(part),
                                  shape=(np.nan,) if n_outputs is None else (np.nan, n_outputs),
                                  dtype=dtype)
                  for part in X.to_delayed()]
        return da.concatenate(blocks)
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if n_outputs is None:
        return X.map_blocks(func, drop_axis=1, dtype=dtype)
    return X.map_blocks(func, chunks=(X.chunks[0], (n_outputs,)), dtype=dtype)
