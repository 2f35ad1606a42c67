"""HistGBDTRanker: gradient-boosted trees that rank the rows of each query."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import _num_samples, check_is_fitted

from ..core._types import Y_DTYPE
from ..core.params import RANKER, constraints, make_init
from ..core.row_meta import Queries, check_qid, qid_from_group
from ..data.dataset import Dataset, MatrixLike
from ..engine.ranking import check_relevance, label_gains, mean_query_score, parse_query_metric
from ..model.booster import objective_from_params
from ..persistence import register_estimator
from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC, FIT_DOC
from .gradient_boosting import BaseHistGBDT, peer_predict_options
from .monitoring import RankingRound

#: the DataFrame column a ranker takes query ids from when no qid is given
QID_COLUMN = "qid"
#: the metric :meth:`HistGBDTRanker.score` gives when ``scoring`` names none
DEFAULT_SCORE = "ndcg@10"

_SCORING_DOC = """\
    scoring : str, callable or None, default='ndcg@10'
        Score used for early stopping and ``best_iteration_``: 'ndcg@k' or
        'map@k' (the mean over queries; 'ndcg' and 'map': all ranks), or a
        callable scorer ``(estimator, X, y)``. A ranking loss has no loss
        value: 'loss' is refused.
"""


_BAGGING_DOC = """\
    bagging_by_query : bool, default=False
        Bagging (``subsample`` < 1) keeps or drops whole queries, each with
        probability ``subsample`` (LightGBM's ``bagging_by_query``); False:
        rows, as LightGBM's default. A query's draw depends only on the
        round's seed and its first row, so a Dask fit draws the same.
"""


def _ranker_doc(doc):
    """The shared parameters' doc with the ranker's scoring and bagging."""
    start = doc.index("    scoring : ")
    end = doc.index("    eval_metric : ")
    doc = doc[:start] + _SCORING_DOC + doc[end:]
    at = doc.index("    colsample_bytree : ")
    return doc[:at] + _BAGGING_DOC + doc[at:]


RANKER_FIT_DOC = FIT_DOC.replace("""y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    Targets (regression: finite numbers; classification: labels). A
    regressor with ``loss='squared_error'`` takes several columns: one
    model of every output, one tree per output a round
    (``doc/multi_output.md``).""", """y : array-like of shape (n_samples,)
    Relevance labels: integers 0 .. len(label_gain) - 1 (0: not relevant).""", 1).replace("""sample_weight : array-like of shape (n_samples,), default=None""", """qid : array-like of shape (n_samples,), default=None
    Each row's query (integers or strings); a query's rows need not be
    adjacent. None: the DataFrame column 'qid' of ``X`` (dropped from the
    features), else ``group``, else a Dataset's own (``Dataset(X, y,
    qid=...)``); every row in one query without any.
    A hold-out for early stopping and cross-validated rounds keep
    queries whole.
group : array-like of int, default=None
    LightGBM's alternative to ``qid``: the sizes of consecutive queries.
qid_val, eval_qid : array-like, list of array-like, default=None
    The query ids of ``X_val`` and of each ``eval_set`` set (or their
    'qid' column); required with those sets.
sample_weight : array-like of shape (n_samples,), default=None""", 1)


@register_estimator
class HistGBDTRanker(BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for learning to rank.

    Rows belong to queries (``qid``); the trees learn a score whose order
    within each query ranks its rows by relevance (``y``: integer labels,
    higher is more relevant). ``loss='lambdarank'`` is LambdaMART:
    pairwise logistic losses weighted by the NDCG change of swapping each
    pair; ``'pairwise'`` is RankNet's unweighted pairwise loss. Queries
    are given per row (``qid``; XGBoost's convention, which scikit-learn's
    ``GroupKFold`` and ``GridSearchCV`` keep intact) or as group sizes
    (LightGBM's ``group``), or as a DataFrame column 'qid'.

    Parameters
    ----------
    loss : {{'lambdarank', 'pairwise'}}, default='lambdarank'
        The ranking loss.
    lambdarank_truncation_level : int, default=30
        Only pairs with a row among the query's top ranks (by the current
        scores) count, and NDCG changes are taken at this k (LightGBM's
        ``lambdarank_truncation_level``).
    lambdarank_norm : bool, default=True
        Scale each query's gradients by log2(1 + L) / L, L the sum of its
        pairs' absolute lambdas, so queries with many mis-ordered pairs do not drown
        the others (LightGBM's ``lambdarank_norm``).
    label_gain : array-like or None, default=None
        The gain of each relevance label 0, 1, ...: None is 2^label - 1 for
        labels 0..30 (LightGBM's and XGBoost's). Used by the loss and the
        NDCG metrics.
    sigmoid : float, default=1.0
        Slope of the pairwise logistic loss.
{_ranker_doc(COMMON_PARAMETERS_DOC)}

    Attributes
    ----------
{COMMON_ATTRIBUTES_DOC}

    Examples
    --------
    >>> import numpy as np
    >>> from hgbt import HistGBDTRanker
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 5))
    >>> qid = np.repeat(np.arange(30), 20)
    >>> y = np.clip(np.round(X[:, 0] + rng.normal(size=600)), 0, 3)
    >>> ranker = HistGBDTRanker(max_iter=20).fit(X, y, qid=qid)
    >>> ranker.predict(X[:3]).shape
    (3,)
    >>> 0 <= ranker.score(X, y, qid=qid) <= 1
    True
    """

    _parameter_constraints = constraints(RANKER)
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = make_init(RANKER)
    _stratify = False

    # ------------------------------------------------------------------ fit
    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *,
            qid: ArrayLike | None = None, group: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None,
            X_val: MatrixLike | None = None, y_val: ArrayLike | None = None,
            qid_val: ArrayLike | None = None, sample_weight_val: ArrayLike | None = None,
            eval_set: list[tuple[MatrixLike, ArrayLike]] | None = None,
            eval_names: list[str] | None = None,
            eval_qid: list[ArrayLike] | None = None,
            eval_sample_weight: list[ArrayLike | None] | None = None,
            callbacks: list | None = None, init_score: ArrayLike | None = None,
            init_score_val: ArrayLike | None = None,
            eval_init_score: list[ArrayLike | None] | None = None) -> HistGBDTRanker:
        if isinstance(X, Dataset):  # its query ids inside (Dataset(..., qid=...))
            if qid is not None or group is not None:
                raise ValueError("The Dataset holds its query ids: fit(dataset) takes no "
                                 "qid or group.")
            if X.qid is None:
                raise ValueError("A ranker's Dataset needs query ids: Dataset(X, y, "
                                 "qid=...) or group=.")
        else:
            X, qid = split_qid(X, qid, "qid")
            if qid is None and group is not None:
                qid = qid_from_group(group, _n_rows(X))
            elif group is not None:
                raise ValueError("give qid or group, not both.")
            if qid is None:  # one query of every row (what scikit-learn's checks fit)
                qid = np.zeros(_n_rows(X), dtype=np.int64)
        if X_val is not None and not isinstance(X_val, Dataset):
            X_val, qid_val = split_qid(X_val, qid_val, "qid_val")
            if qid_val is None:
                raise ValueError("X_val needs its query ids: pass qid_val (or a 'qid' "
                                 "column).")
        if eval_set is not None:
            given = [None] * len(eval_set) if eval_qid is None else list(eval_qid)
            if len(given) != len(eval_set):
                raise ValueError(f"eval_qid has {len(given)} entries; eval_set has "
                                 f"{len(eval_set)}.")
            sets, eval_qid = [], []
            for i, (entry, q) in enumerate(zip(eval_set, given)):
                if isinstance(entry, Dataset):  # its query ids inside
                    sets.append(entry)
                    eval_qid.append(None)
                    continue
                X_i, y_i = entry
                X_i, q = split_qid(X_i, q, f"eval_qid[{i}]")
                if q is None:
                    raise ValueError(f"eval_set[{i}] needs its query ids: pass eval_qid "
                                     "(or a 'qid' column).")
                sets.append((X_i, y_i))
                eval_qid.append(q)
            eval_set = sets
        return self._fit_rows(X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
                              eval_names, eval_sample_weight, callbacks,
                              (init_score, init_score_val, eval_init_score),
                              (qid, qid_val, eval_qid))

    fit.__doc__ = RANKER_FIT_DOC

    def _objective(self):
        objective = objective_from_params(self.get_params(deep=False))
        label_gains(objective.get("label_gain"))  # checked before any work
        return objective

    def _encode_y(self, y, reset):
        y = np.ascontiguousarray(y, dtype=Y_DTYPE)
        check_relevance(y, label_gains(self.label_gain))
        return y

    def _decode(self, y):
        return y

    def _has_loss_value(self):
        return False

    def _round_view(self, raw):
        return RankingRound(raw)

    # -------------------------------------------------------------- predict
    def _validate_X(self, X):
        # a 'qid' column is not a feature (predict, score, the explanations)
        return self.booster_.prepare(split_qid(X, None, "qid")[0], checker=self)

    @peer_predict_options
    def predict(self, X: MatrixLike,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Ranking scores: within a query, higher ranks first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A DataFrame's 'qid' column, if any, is not a feature.
        iteration_range : (int, int) or None, default=None
            Only the rounds ``begin <= round < end`` (0-based); None: every round.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return self._raw_predict(X, iteration_range)[0]

    def staged_predict(self, X: MatrixLike) -> Iterator[np.ndarray]:
        """Ranking scores after each boosting round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        scores : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        for raw in self._staged_raw_predict(X):
            yield raw[0]

    def score(self, X: MatrixLike, y: ArrayLike, qid: ArrayLike | None = None,
              sample_weight: ArrayLike | None = None) -> float:
        """Mean over queries of the ``scoring`` metric when it is a ranking
        metric ('ndcg@k', 'map@k'), else NDCG@10.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            With a 'qid' column when ``qid`` is None (what
            ``GridSearchCV`` passes a scorer without metadata routing).
        y : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,), default=None
            Each row's query; None: X's 'qid' column, else one query.
        sample_weight : array-like of shape (n_samples,), default=None
            A query weighs its rows' mean weight.

        Returns
        -------
        score : float
        """
        X, qid = split_qid(X, qid, "qid")
        scores = self.predict(X)
        qid = check_qid(np.zeros(scores.shape[0]) if qid is None else qid, scores.shape[0])
        name = self.scoring if parse_query_metric(self.scoring) else DEFAULT_SCORE
        kind, k = parse_query_metric(name)
        return mean_query_score(kind, k, np.asarray(y, dtype=np.float64), scores,
                                Queries(qid), sample_weight, self.label_gain)


def _n_rows(X):
    return _num_samples(X)


def split_qid(X, qid, name):
    """``(X without its 'qid' column, the query ids)``: a data frame's column
    'qid' when ``qid`` is None (both given: ValueError)."""
    columns = getattr(X, "columns", None)
    if columns is None or QID_COLUMN not in list(columns):
        return X, qid
    if qid is not None:
        raise ValueError(f"{name} was given and X has a '{QID_COLUMN}' column: give the "
                         "query ids once.")
    if hasattr(X, "dask"):  # a dask DataFrame: its column, partitioned as X
        return X.drop(columns=[QID_COLUMN]), X[QID_COLUMN]
    qid = np.asarray(X[QID_COLUMN])
    if hasattr(X, "loc"):  # pandas
        return X.drop(columns=[QID_COLUMN]), qid
    return X.drop(QID_COLUMN), qid  # polars
