"""Per-round scores of a fit: metrics on the training rows and validation sets.

The scores come from the raw predictions the rounds keep up to date (the
training rows' and each validation set's, one tree added at a time), never
from predicting again: the loss from the exact, mergeable statistics of
``TrainingData.loss_statistics`` (so a distributed fit scores exactly as a
local one), a scikit-learn scorer from a view that answers ``predict``,
``predict_proba`` and ``decision_function`` with those raw predictions.
"""
import numpy as np
from sklearn.metrics import check_scoring

# Rows of the training set its metrics (the loss too) are evaluated on: a
# full pass every round would cost more than the rest of the monitoring.
MAX_TRAIN_SCORE_ROWS = 10_000
# The name of the training rows in the history.
TRAIN = "train"


class LossMetric:
    """The fit's loss (lower is better), from mergeable loss statistics."""

    name = "loss"
    greater_is_better = False


class ScorerMetric:
    """A scikit-learn scorer: higher is better.

    Parameters
    ----------
    name : str
        Its name in the history.
    scoring : str or callable
        A scorer name, or a callable ``scorer(estimator, X, y, **kwargs)``;
        None: the estimator's ``score``.
    estimator : estimator
        The estimator being fitted (to resolve ``scoring``).
    """

    greater_is_better = True

    def __init__(self, name, scoring, estimator):
        self.name = name
        self.scorer = check_scoring(estimator, scoring)

    def __call__(self, view, X, y, meta):
        kwargs = {} if meta.sample_weight is None else {"sample_weight": meta.sample_weight}
        return float(self.scorer(view, X, y, **kwargs))


def training_score_rows(n_rows, seed, queries=None):
    """The training rows scored every round, sorted: None (all of them) up to
    :data:`MAX_TRAIN_SCORE_ROWS` rows, else a subsample of that many drawn
    from ``seed``; with ``queries`` (:class:`~hgbt.core.row_meta.Queries`),
    whole queries drawn until they hold that many rows. A distributed fit
    draws the same global rows."""
    if n_rows <= MAX_TRAIN_SCORE_ROWS:
        return None
    rng = np.random.default_rng(seed)
    if queries is None:
        return np.sort(rng.choice(n_rows, MAX_TRAIN_SCORE_ROWS, replace=False))
    drawn = rng.permutation(queries.n_queries)
    last = int(np.searchsorted(np.cumsum(queries.sizes[drawn]), MAX_TRAIN_SCORE_ROWS))
    return np.sort(queries.rows_of(drawn[:last + 1]))


class ScoredRows:
    """The rows of one set as scorers see them.

    Parameters
    ----------
    X : array-like
        The validated rows (scorers get them; views ignore them).
    y : ndarray
        Targets as the user gave them (labels for a classifier).
    meta : RowMeta
        The rows' side information (weights, query ids, ...).
    indices : ndarray or None
        For the training set: the scored subsample of its rows (None: all).
    """

    def __init__(self, X, y, meta, indices=None):
        self.X, self.y, self.meta, self.indices = X, y, meta, indices

    @classmethod
    def training(cls, X, y, meta, rows):
        """The training rows ``rows`` (of :func:`training_score_rows`; None: all)."""
        if rows is None:
            return cls(X, y, meta)
        return cls(X[rows], y[rows], meta.take(rows), rows)


class Evaluator:
    """Scores every metric on every set after each round.

    Parameters
    ----------
    metrics : list of LossMetric or ScorerMetric
    set_names : list of str
        The training set's name, then each validation set's, in the order of
        the training data's validation sets.
    scored_rows : list of ScoredRows or None
        Per set (same order), what scorer metrics read; None when every
        metric is the loss.
    make_view : callable or None
        ``make_view(raw)``: an object predicting the raw predictions ``raw``
        (shape (n_trees_per_iteration, n_rows)) as the estimator would;
        needed with scorer metrics.
    """

    def __init__(self, metrics, set_names, scored_rows=None, make_view=None):
        self.metrics = list(metrics)
        self.set_names = list(set_names)
        self.scored_rows = scored_rows
        self.make_view = make_view

    @property
    def greater_is_better(self):
        """Per metric name, whether higher is better."""
        return {m.name: m.greater_is_better for m in self.metrics}

    def evaluate(self, data):
        """``{set: {metric: score}}`` of the current raw predictions of ``data``
        (a :class:`~hgbt.engine.boosting.TrainingData`)."""
        scores = {name: {} for name in self.set_names}
        if any(isinstance(m, LossMetric) for m in self.metrics):
            train, validation = data.loss_statistics()
            for name, statistics in zip(self.set_names, [train] + list(validation)):
                scores[name][LossMetric.name] = statistics.value()
        scorers = [m for m in self.metrics if not isinstance(m, LossMetric)]
        if scorers:
            train_raw, validation_raw = data.raw_predictions()
            for name, raw, scored in zip(self.set_names, [train_raw] + list(validation_raw),
                                         self.scored_rows):
                view = self.make_view(raw if scored.indices is None
                                      else raw[:, scored.indices])
                for metric in scorers:
                    scores[name][metric.name] = metric(view, scored.X, scored.y,
                                                       scored.meta)
        # in the metrics' order, whatever computed them first
        return {name: {m.name: scores[name][m.name] for m in self.metrics}
                for name in self.set_names}
