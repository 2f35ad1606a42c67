"""Learning to rank: the LambdaMART and pairwise losses, NDCG@k and MAP@k.

Rows belong to queries (``RowMeta.qid``); only the order of a query's scores
matters. The gradients and the metrics run query by query in
``_ranking.pyx`` (queries spread over the threads; ties ordered by the rows'
order in their query, so the model is the same for any thread count).
"""
import re

import numpy as np

from ..core._types import Y_DTYPE
from ._ranking import inverse_ideal_dcg, lambda_gradients, query_metrics
from .base_loss import BaseLoss
from .selection import Agreed

#: the ranking losses: LambdaMART optimising NDCG, RankNet's pairwise loss
RANKING_LOSSES = ("lambdarank", "pairwise")
#: labels 0..30 by default, gains 2^label - 1 (LightGBM's and XGBoost's)
DEFAULT_LABEL_GAIN = tuple(float(2 ** i - 1) for i in range(31))


def label_gains(label_gain):
    """``label_gain`` as a float64 array (None: :data:`DEFAULT_LABEL_GAIN`),
    checked: finite, non-negative, non-decreasing."""
    gains = np.asarray(DEFAULT_LABEL_GAIN if label_gain is None else label_gain,
                       dtype=np.float64)
    if gains.ndim != 1 or gains.size < 2 or not np.all(np.isfinite(gains)) \
            or np.any(gains < 0) or np.any(np.diff(gains) < 0):
        raise ValueError("label_gain must be a list of at least two finite, non-negative, "
                         f"non-decreasing gains (one per relevance label), got {label_gain!r}.")
    return gains


def check_relevance(y, gains):
    """Raise ValueError unless every label is an integer in ``[0, len(gains))``."""
    y = np.asarray(y, dtype=np.float64)
    bad = ~np.isfinite(y) | (y < 0) | (y >= gains.size) | (y != np.floor(y))
    if np.any(bad):
        raise ValueError(f"a ranker's y holds relevance labels: integers 0..{gains.size - 1} "
                         f"(one gain each in label_gain), got {y[bad][0]!r}; give more "
                         "label_gain entries for higher labels.")


def queries_of(meta):
    """The rows' queries, or a ValueError when they have none."""
    if meta.queries is None:
        raise ValueError("a ranking loss needs each row's query: pass qid (or group).")
    return meta.queries


class LambdaRankLoss(BaseLoss):
    """LambdaMART (``pairwise=False``): pairwise logistic losses weighted by
    the NDCG change of swapping each pair, for pairs with a row in the top
    ``truncation`` ranks; or RankNet's (``pairwise=True``): every
    mis-orderable pair, unweighted. Gradients are per row, times its weight.

    Parameters
    ----------
    meta : RowMeta
        The rows' query ids (required) and weights.
    truncation : int, default=30
        The ranks whose pairs count (LambdaMART), and the k of the NDCG whose
        changes weight them.
    label_gain : sequence of float or None
        The gain of each relevance label (None: 2^label - 1).
    sigmoid : float, default=1.0
        The slope of the pairwise logistic loss.
    norm : bool, default=True
        Scale each query's gradients by log2(1 + L) / L, L the sum of its pairs'
        |lambda| (LightGBM's lambdarank_norm).
    pairwise : bool, default=False
    """

    name = "lambdarank"
    has_loss_values = False  # the metrics (NDCG@k, MAP@k) score a ranker

    def __init__(self, meta=None, truncation=30, label_gain=None, sigmoid=1.0, norm=True,
                 pairwise=False):
        super().__init__(meta)
        if pairwise:
            self.name = "pairwise"
        self.truncation, self.sigmoid = int(truncation), float(sigmoid)
        self.norm, self.pairwise = bool(norm), bool(pairwise)
        self.label_gain = label_gains(label_gain)
        if self.truncation < 1 or not self.sigmoid > 0:
            raise ValueError("lambdarank_truncation_level must be >= 1 and sigmoid > 0.")
        # per query 1 / IDCG, from the labels of the rows of ``meta`` it was
        # computed for (a copy for other rows, for_rows, computes its own)
        self._inverse_ideal = (None, None)

    def check_y(self, y):
        check_relevance(y, self.label_gain)

    def baseline_statistics(self, y):
        return Agreed(np.zeros(1, dtype=Y_DTYPE))  # only the order within queries counts

    def baseline_from_statistics(self, statistics):
        return statistics.value

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        queries = queries_of(self.meta)
        meta, inverse_ideal = self._inverse_ideal
        if meta is not self.meta:
            inverse_ideal = inverse_ideal_dcg(y, queries.order, queries.starts,
                                              self.label_gain, self.truncation, n_threads)
            self._inverse_ideal = (self.meta, inverse_ideal)
        lambda_gradients(np.ascontiguousarray(raw_prediction[0]), y, queries.order,
                         queries.starts, self.label_gain, inverse_ideal,
                         self._weights(), gradients[0], hessians[0], self.truncation,
                         self.sigmoid, self.norm, self.pairwise, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        raise ValueError("a ranking loss has no per-row loss value: score a ranker with "
                         "'ndcg@k' or 'map@k' (scoring=, eval_metric=).")


# ----------------------------------------------------------------- metrics
_METRIC = re.compile(r"^(ndcg|map)(?:@([1-9][0-9]*))?$")


def parse_query_metric(name):
    """``(kind, k)`` of a ranking metric name ('ndcg', 'ndcg@10', 'map@5';
    k None: every rank), or None for another name."""
    match = _METRIC.match(name) if isinstance(name, str) else None
    if match is None:
        return None
    return match.group(1), None if match.group(2) is None else int(match.group(2))


class _QuerySet:
    """What a ranking metric needs of a set of rows besides the scores,
    fixed for the set: labels (checked), gains, queries, each query's
    1 / IDCG@k (NDCG) and weight."""

    def __init__(self, kind, k, y, queries, sample_weight=None, label_gain=None,
                 n_threads=1):
        self.gains = label_gains(label_gain)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        check_relevance(self.y, self.gains)
        self.kind, self.queries = kind, queries
        self.k = np.iinfo(np.intp).max if k is None else k
        self.inverse = (inverse_ideal_dcg(self.y, queries.order, queries.starts, self.gains,
                                          self.k, n_threads)
                        if kind == "ndcg" else np.zeros(queries.n_queries))
        self.weight = None
        if sample_weight is not None:
            weight = np.add.reduceat(np.asarray(sample_weight, dtype=np.float64)[
                queries.order], queries.starts[:-1]) / queries.sizes
            self.weight = weight if weight.sum() > 0 else None

    def scores(self, scores, n_threads=1):
        """Per query, the metric of ``scores``."""
        return query_metrics(np.ascontiguousarray(scores, dtype=np.float64), self.y,
                             self.queries.order, self.queries.starts, self.gains,
                             self.inverse, self.k, self.kind == "ndcg", n_threads)

    def mean(self, scores):
        """The mean over queries (weighted), NaN without a query."""
        per_query = self.scores(scores)
        if not per_query.size:
            return float("nan")
        return float(per_query.mean() if self.weight is None
                     else np.average(per_query, weights=self.weight))


def query_scores(kind, k, y, scores, queries, label_gain=None, n_threads=1):
    """Per query, NDCG@k or MAP@k of ``scores`` (ties: the rows' order in
    their query; a query without a relevant row scores 1)."""
    return _QuerySet(kind, k, y, queries, None, label_gain, n_threads).scores(scores,
                                                                                n_threads)


def mean_query_score(kind, k, y, scores, queries, sample_weight=None, label_gain=None):
    """The mean over ``queries`` (:class:`~hgbt.core.row_meta.Queries`) of
    :func:`query_scores`, each query weighted by its rows' mean weight
    (``sample_weight``; None: equally); NaN without a query."""
    return _QuerySet(kind, k, y, queries, sample_weight, label_gain).mean(scores)


class QueryMetric:
    """A ranking metric of the evaluation history (higher is better):
    'ndcg', 'ndcg@k', 'map' or 'map@k' over the scored rows' queries."""

    greater_is_better = True

    def __init__(self, name, label_gain=None):
        self.name = name
        self.kind, self.k = parse_query_metric(name)
        self.label_gain = label_gain
        # per scored set (its RowMeta, fixed for the fit): what its rounds share
        self._sets = {}

    def __call__(self, view, X, y, meta):
        if meta.queries is None:
            raise ValueError(f"the metric {self.name!r} scores rankings: it needs the rows' "
                             "query ids (HistGBDTRanker's qid).")
        cached = self._sets.get(id(meta))
        if cached is None or cached[0] is not meta:
            cached = (meta, _QuerySet(self.kind, self.k, y, meta.queries, meta.sample_weight,
                                      self.label_gain))
            self._sets[id(meta)] = cached
        return cached[1].mean(view.raw[0])
