"""What a fit knows of each row besides its features and target.

:class:`RowMeta` carries the per-row side information of one set of rows
(training rows, a hold-out, a validation set, a Dask shard, a CV fold)
through the engine as one object: sample weights, start scores, query ids,
the upper bounds of survival times.
Objectives read what they need from it (a ranking loss its queries);
sampling, evaluation and the hold-out take rows of all of it at once with
:meth:`RowMeta.take`, so a new kind of per-row information is added here
once instead of as one more positional argument through every signature.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

import numpy as np


class Queries:
    """Rows grouped by query, from one query id per row.

    Rows of a query need not be adjacent: ``order`` lists the rows query by
    query (stable, so a query's rows keep their order), and query ``q`` is
    ``order[starts[q]:starts[q + 1]]``. Queries are in increasing id order.

    Attributes
    ----------
    order : ndarray of intp
    starts : ndarray of intp, shape (n_queries + 1,)
    ids : ndarray of int64, shape (n_queries,)
    """

    def __init__(self, qid):
        qid = np.asarray(qid)
        self.order = np.argsort(qid, kind="stable").astype(np.intp)
        sorted_ids = qid[self.order]
        first = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) \
            if qid.size else np.zeros(0, dtype=np.intp)
        self.ids = sorted_ids[first]
        self.starts = np.r_[first, qid.size].astype(np.intp)

    @property
    def n_queries(self):
        return self.ids.shape[0]

    @property
    def sizes(self):
        return np.diff(self.starts)

    def rows_of(self, queries):
        """The rows of the queries at positions ``queries``, query by query."""
        queries = np.asarray(queries, dtype=np.intp)
        sizes = self.sizes[queries]
        # each taken row's position in ``order``: its query's start plus its rank
        first = np.repeat(self.starts[queries] - (np.cumsum(sizes) - sizes), sizes)
        return self.order[first + np.arange(sizes.sum())]


@dataclass(frozen=True, eq=False)
class RowMeta:
    """Per-row side information of one set of rows.

    Parameters
    ----------
    sample_weight : ndarray of shape (n_rows,), float64, or None
        Each row's weight (None: all 1).
    init_score : ndarray of shape (n_trees_per_iteration, n_rows), float64, or None
        Each row's start score (LightGBM's ``init_score``, XGBoost's
        ``base_margin``); rows given one start there, not at the baseline.
    qid : ndarray of shape (n_rows,), int64, or None
        Each row's query (learning to rank); a query's rows need not be
        adjacent.
    label_upper_bound : ndarray of shape (n_rows,), float64, or None
        Survival: the end of the interval each row's time lies in (its
        target ``y`` the start; equal: an exact time, ``inf``: right-censored;
        XGBoost's ``label_upper_bound``).
    """

    sample_weight: Optional[np.ndarray] = None
    init_score: Optional[np.ndarray] = None
    qid: Optional[np.ndarray] = None
    label_upper_bound: Optional[np.ndarray] = None

    def take(self, rows):
        """The same information of the rows ``rows`` (indices or a mask)."""
        return RowMeta(
            sample_weight=None if self.sample_weight is None else self.sample_weight[rows],
            init_score=(None if self.init_score is None
                        else np.ascontiguousarray(self.init_score[:, rows])),
            qid=None if self.qid is None else self.qid[rows],
            label_upper_bound=(None if self.label_upper_bound is None
                               else self.label_upper_bound[rows]))

    @cached_property
    def queries(self):
        """The rows grouped by :attr:`qid` (:class:`Queries`), or None."""
        return None if self.qid is None else Queries(self.qid)


NO_META = RowMeta()


def check_qid(qid, n_rows, name="qid"):
    """``qid`` (one query id per row: integers, strings, any sortable values)
    as int64 codes, checked; None stays None."""
    if qid is None:
        return None
    values = np.asarray(qid)
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(f"{name} must hold one query id per row: shape ({n_rows},), "
                         f"got {values.shape}.")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError(f"{name} holds NaN or infinite query ids.")
    try:
        codes = np.unique(values, return_inverse=True)[1]
    except TypeError as exc:
        raise TypeError(f"{name}: query ids must be sortable values of one kind "
                        f"(integers or strings): {exc}") from None
    return codes.reshape(-1).astype(np.int64)


def qid_from_group(group, n_rows, name="group"):
    """Query ids from ``group``, the sizes of consecutive queries (LightGBM's
    ``group``), checked to cover the ``n_rows`` rows."""
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or np.any(sizes < 1) \
            or sizes.sum() != n_rows:
        raise ValueError(f"{name} must list the sizes of consecutive queries: positive "
                         f"integers summing to the {n_rows} rows, got {group!r}.")
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
