"""What a fit records and what watches it: the evaluation history, its metrics
and sets, the callbacks, and the fitted attributes read from the history.

The estimators' ``fit`` builds a :class:`Monitor` from its parameters
(``scoring``, ``eval_metric``, ``early_stopping_set``, ``verbose``,
``early_stopping``) and its arguments (``eval_set``, ``callbacks``);
:func:`~hgbt.engine.boosting.boost` scores into its history and calls its
callbacks. Scorers see the model of the rounds so far through
:class:`RegressionRound` / :class:`ClassificationRound`, which answer from the
raw predictions the rounds keep, so no round predicts from scratch.
"""
import copy

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from ..data.dataset import Dataset
from ..engine.callbacks import CallbackRunner, EarlyStopping
from ..engine.evaluation import TRAIN, Evaluator, LossMetric, ScorerMetric, ScoredRows
from ..engine.history import EvalHistory
from ..engine.interrupts import ShutdownStop
from ..engine.progress import LogPrinter
from ..engine.ranking import QueryMetric, parse_query_metric

#: the name of the ``X_val`` set, or of the hold-out of ``validation_fraction``
VALIDATION = "validation"


# ------------------------------------------------------------ scorer views
class _RoundView(BaseEstimator):
    """The model of the rounds so far, as a scorer sees it: it predicts the
    raw predictions ``raw`` of the scored rows (``X`` only checked for its
    length)."""

    def __init__(self, raw=None, inverse_link=None):
        self.raw = raw
        self.inverse_link = inverse_link

    def _check(self, X):
        if X.shape[0] != self.raw.shape[1]:
            raise ValueError("a scorer of the fit's history predicted other rows than the "
                             "scored set's")


class RegressionRound(RegressorMixin, _RoundView):
    """A regressor's predictions of the rounds so far (see :class:`_RoundView`)."""

    def predict(self, X):
        """The scored rows' predictions."""
        self._check(X)
        return self.inverse_link(self.raw)


class ClassificationRound(ClassifierMixin, _RoundView):
    """A classifier's predictions of the rounds so far (see :class:`_RoundView`).

    Parameters
    ----------
    raw, inverse_link : see :class:`_RoundView`
    classes : ndarray
        The class labels.
    multilabel : bool
        The raw scores are those of several labels (multi-label ``y``).
    """

    def __init__(self, raw=None, inverse_link=None, classes=None, multilabel=False):
        super().__init__(raw, inverse_link)
        self.classes = classes
        self.multilabel = multilabel

    @property
    def classes_(self):
        return self.classes

    def decision_function(self, X):
        """The scored rows' raw scores."""
        self._check(X)
        return self.raw[0] if self.raw.shape[0] == 1 and not self.multilabel \
            else self.raw.T.copy()

    def predict_proba(self, X):
        """The scored rows' class probabilities."""
        self._check(X)
        return self.inverse_link(self.raw)

    def predict(self, X):
        """The scored rows' most probable classes (multi-label: 0/1 per label)."""
        if self.multilabel:
            self._check(X)
            return (self.raw > 0).T.astype(np.int64)
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]


class RankingRound(_RoundView):
    """A ranker's scores of the rounds so far (see :class:`_RoundView`)."""

    def predict(self, X):
        """The scored rows' ranking scores."""
        self._check(X)
        return self.raw[0]


# ------------------------------------------------------------ metrics, sets
def metric_name(scoring):
    """The history's name of a metric: the scorer name, 'score' for None (the
    estimator's ``score``), else the callable's ``__name__`` (or class name)."""
    if scoring is None:
        return "score"
    if isinstance(scoring, str):
        return scoring
    return getattr(scoring, "__name__", type(scoring).__name__)


#: LightGBM's and XGBoost's metric names and the scikit-learn scorer to use
_PEER_METRICS = {
    "auc": "'roc_auc'", "rmse": "'neg_root_mean_squared_error'",
    "l2_root": "'neg_root_mean_squared_error'", "mse": "'neg_mean_squared_error'",
    "l2": "'neg_mean_squared_error'", "mae": "'neg_mean_absolute_error'",
    "l1": "'neg_mean_absolute_error'", "mape": "'neg_mean_absolute_percentage_error'",
    "logloss": "'loss' (the log-loss) or 'neg_log_loss'",
    "binary_logloss": "'loss' (the log-loss) or 'neg_log_loss'",
    "multi_logloss": "'loss' (the log-loss) or 'neg_log_loss'",
    "mlogloss": "'loss' (the log-loss) or 'neg_log_loss'",
    "error": "'accuracy' (1 - error)", "binary_error": "'accuracy' (1 - error)",
    "merror": "'accuracy' (1 - error)", "multi_error": "'accuracy' (1 - error)",
    "aucpr": "'average_precision'", "quantile": "'loss' (with loss='quantile')",
    "huber": "'loss' (with loss='huber')", "poisson": "'loss' or 'neg_mean_poisson_deviance'",
    "gamma": "'loss' or 'neg_mean_gamma_deviance'",
}


def check_metric_name(value, parameter):
    """Raise a short ``ValueError`` for a metric name that is neither 'loss'
    nor a scikit-learn scorer (scikit-learn's own lists all ~60 names),
    giving the scorer for LightGBM's and XGBoost's names."""
    from sklearn.metrics import get_scorer_names

    if not isinstance(value, str) or value == "loss" or value in get_scorer_names() \
            or parse_query_metric(value) is not None:
        return
    hint = _PEER_METRICS.get(value.lower())
    use = (f"use {hint} (for LightGBM's or XGBoost's {value!r}). " if hint else
           "use 'loss', a scikit-learn scorer name or a callable. ")
    raise ValueError(f"{parameter}={value!r} is not a metric hgbt knows: metrics are "
                     f"scikit-learn scorers (greater is better); {use}The scorer names: "
                     "sklearn.metrics.get_scorer_names().")


def requested_metrics(scoring, eval_metric, has_loss, early_stopping):
    """``{name: scoring}`` of every metric a fit records: the loss (when it has
    one, or when early stopping watches it: a callable loss then raises),
    the early-stopping ``scoring``, then ``eval_metric``'s (a name, callable,
    list of them, or dict name → scorer)."""
    check_metric_name(scoring, "scoring")
    for value in (eval_metric.values() if isinstance(eval_metric, dict) else eval_metric
                  if isinstance(eval_metric, (list, tuple)) else [eval_metric]):
        check_metric_name(value, "eval_metric")
    metrics = {"loss": "loss"} if has_loss or (early_stopping and scoring == "loss") else {}
    if scoring != "loss":
        metrics[metric_name(scoring)] = scoring
    if eval_metric is None:
        extra = {}
    elif isinstance(eval_metric, dict):
        extra = dict(eval_metric)
    elif isinstance(eval_metric, (list, tuple)):
        extra = {metric_name(m): m for m in eval_metric}
    else:
        extra = {metric_name(eval_metric): eval_metric}
    for name, scoring_ in extra.items():
        if scoring_ == "loss" and not has_loss:
            raise ValueError("eval_metric 'loss' needs a built-in loss: a callable loss "
                             "has no value.")
        metrics.setdefault(name, scoring_)
    return metrics


def eval_sets(eval_set, eval_names, eval_sample_weight):
    """``eval_set``'s names (``eval_names``, or 'valid_0', 'valid_1', ...) and
    ``(X, y, sample_weight)`` of each of its pairs, checked."""
    if eval_set is None:
        if eval_names is not None or eval_sample_weight is not None:
            raise ValueError("eval_names or eval_sample_weight was given without eval_set.")
        return [], []
    pairs = list(eval_set)
    names = ([f"valid_{i}" for i in range(len(pairs))] if eval_names is None
             else [str(name) for name in eval_names])
    weights = [None] * len(pairs) if eval_sample_weight is None else list(eval_sample_weight)
    if not len(names) == len(weights) == len(pairs):
        raise ValueError(f"eval_set has {len(pairs)} sets, eval_names {len(names)} names "
                         f"and eval_sample_weight {len(weights)} entries.")
    if len(set(names)) != len(names) or set(names) & {TRAIN, VALIDATION}:
        raise ValueError(f"eval_names {names} must be distinct and other than "
                         f"{TRAIN!r} and {VALIDATION!r}.")
    triples = []
    for i, (pair, weight) in enumerate(zip(pairs, weights)):
        if isinstance(pair, Dataset):  # holds its label and weights
            triples.append((pair, None, weight))
            continue
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"eval_set[{i}] must be an (X, y) pair or a Dataset.")
        triples.append((pair[0], pair[1], weight))
    return names, triples


# ---------------------------------------------------------------- monitor
class Monitor:
    """A fit's evaluation history, evaluator and callbacks.

    Parameters
    ----------
    estimator : BaseHistGBDT
        The estimator being fitted (its parameters are read).
    set_names : list of str
        'train', then the validation sets' names in the training data's order.
    early_stopping : bool
    callbacks : list or None
        The user's callbacks (``fit(callbacks=...)``).
    history : dict or None
        The evaluation history to continue (a warm start's), copied.
    watched : str or None
        The set early stopping watches when the fit chose it (an eval_set of
        the training rows is skipped); None: ``early_stopping_set``, else the
        first validation set, else 'train'.
    watched_because : str or None
        Why the fit chose ``watched`` (the verbose output says it).
    """

    def __init__(self, estimator, set_names, early_stopping, has_loss, callbacks=None,
                 history=None, watched=None, watched_because=None):
        callbacks = list(callbacks or ())
        self.metrics = requested_metrics(estimator.scoring, estimator.eval_metric, has_loss,
                                         early_stopping)
        watched = estimator.early_stopping_set if watched is None else watched
        if watched is None:
            watched = set_names[1] if len(set_names) > 1 else TRAIN
        if watched not in set_names:
            raise ValueError(f"early_stopping_set={watched!r} is none of the fit's sets "
                             f"{set_names}.")
        self.set_names = set_names
        self.scored = bool(self.metrics) and bool(
            early_stopping or estimator.verbose or len(set_names) > 1
            or estimator.eval_metric is not None
            or any(getattr(c, "needs_scores", False) for c in callbacks))
        watched_metric = ("loss" if estimator.scoring == "loss"
                          else metric_name(estimator.scoring))
        if watched_metric not in self.metrics and self.metrics:
            # a callable loss has no value: the first metric recorded instead
            watched_metric = next(iter(self.metrics))
        self.history = EvalHistory(copy.deepcopy(history) if history else {},
                                   (watched, watched_metric) if self.scored else None,
                                   {name: name != "loss" for name in self.metrics},
                                   estimator.max_iter)
        self.history.scored = ({name: list(self.metrics) for name in set_names}
                               if self.scored else {})
        self.history.watched_because = watched_because
        # Every hook runs each round and the first stop reason wins: the exit
        # stop first, then early stopping, the user's, the printer last
        # (its closing line names the reason).
        self.callbacks = [ShutdownStop()]
        if early_stopping:
            self.callbacks.append(EarlyStopping(estimator.n_iter_no_change, estimator.tol))
        self.callbacks += callbacks
        if estimator.verbose:
            self.callbacks.append(LogPrinter(1 if estimator.verbose is True
                                             else int(estimator.verbose)))

    @property
    def needs_predictions(self):
        """Whether a metric other than the loss is scored (it reads the raw
        predictions of the scored rows)."""
        return self.scored and any(s != "loss" for s in self.metrics.values())

    def evaluator(self, estimator, scored_rows=None, make_view=None):
        """The fit's :class:`~hgbt.engine.evaluation.Evaluator`, or None when
        nothing is scored."""
        if not self.scored:
            return None
        metrics = [LossMetric() if scoring == "loss" else
                   QueryMetric(scoring, getattr(estimator, "label_gain", None))
                   if parse_query_metric(scoring) is not None else
                   ScorerMetric(name, scoring, estimator)
                   for name, scoring in self.metrics.items()]
        return Evaluator(metrics, self.set_names, scored_rows, make_view)

    def runner(self, estimator, sync, finish=None):
        """The :class:`~hgbt.engine.callbacks.CallbackRunner` of the fit."""
        return CallbackRunner(self.callbacks, estimator, sync, finish)


def scored_rows(train_rows, train, validation):
    """Per set, the rows scorers read: the training rows ``train_rows``
    (:func:`~hgbt.engine.evaluation.training_score_rows`; None: all), every
    validation row. ``train`` and each of
    ``validation`` are ``(X, y as the user's labels, RowMeta)``."""
    return [ScoredRows.training(*train, train_rows)] + [ScoredRows(*rows)
                                                        for rows in validation]


def history_attributes(history, n_rounds, early_stopping, has_validation):
    """The fitted attributes read from the history of ``n_rounds`` rounds kept:
    ``evals_result_``, ``best_iteration_``, ``best_score_``, ``train_score_``
    and ``validation_score_`` (the watched metric, higher is better, as
    scikit-learn's; empty without early stopping), ``max_leaf_nodes_``,
    ``l2_regularization_`` and ``tree_size_scores_`` (the tree size of the
    rounds, the sizes compared)."""
    scored = history.watched is not None
    best = history.best_iteration() if scored else None
    out = {"evals_result_": history.evals, "best_iteration_": best,
           "best_score_": None if best is None else history.scores()[best]}
    train = validation = []
    if scored and early_stopping:
        metric = history.watched[1]
        train = history.oriented(TRAIN, metric)[:n_rounds + 1]
        if has_validation and history.watched[0] != TRAIN:
            validation = history.oriented(None, metric)[:n_rounds + 1]
    out["train_score_"] = np.asarray(train)
    out["validation_score_"] = np.asarray(validation)
    out["max_leaf_nodes_"] = history.tree_size["max_leaf_nodes"]
    out["l2_regularization_"] = history.tree_size["l2_regularization"]
    out["tree_size_scores_"] = [dict(trial) for trial in history.trials]
    # a model saved before its fit's comparison of tree sizes ended (a
    # checkpoint) finishes it when warm-started
    out["_tree_size_comparing"] = history.comparing
    return out
