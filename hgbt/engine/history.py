"""The evaluation history of a fit: every metric on every set, per round.

:class:`EvalHistory` is what :func:`~hgbt.engine.boosting.boost` records
into and what callbacks read: the scores (``evals``: set → metric → list),
which metric on which set early stopping and ``best_iteration_`` watch,
and the fit's progress (rounds, timing, why it stopped).
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any


class EvalHistory:
    """Scores of a fit per set, per metric, per round, and its progress.

    Entry ``i`` of a score list is the score of the model made of the first
    ``i`` rounds: entry 0 is the baseline (before the first round), so a
    list holds ``n_rounds + 1`` entries and its index is the number of
    rounds, the ``end`` of ``iteration_range=(0, end)``. A set or metric
    not scored in some rounds (one a warm start added or dropped) holds NaN
    there.

    Parameters
    ----------
    evals : dict or None
        ``{set name: {metric name: list of float}}`` to continue (a warm
        start's); None starts empty. Appended to in place.
    watched : tuple of (str, str) or None
        ``(set, metric)`` that early stopping and :attr:`best_iteration`
        watch; None when nothing is scored.
    greater_is_better : dict
        Per metric name, whether a higher score is better ('loss': False).
    max_iter : int
        Rounds the fit may reach (a warm start's count included).

    Attributes
    ----------
    evals : dict
    watched : tuple or None
    n_rounds : int
        Rounds kept so far (a warm start's earlier rounds included).
    first_round : int
        Rounds kept before this fit began (0 unless warm-started).
    max_iter : int
    start_time : float or None
        ``time.perf_counter()`` when the rounds began.
    stop_reason : str or None
        Why the fit ended, once it has ('max_iter reached', early stopping,
        a callback's reason, ...).
    scored : dict or None
        ``{set: [metric, ...]}`` that the fit scores each round (None:
        not said).
    tree_size : dict or None
        ``{'max_leaf_nodes': ..., 'l2_regularization': ...}`` of the trees
        these rounds grow (None: not said).
    trials : list of dict
        The tree sizes a fit tried and finished (``max_leaf_nodes='auto'``):
        each a ``tree_size`` with the rounds grown (``'n_iter'``) and the
        watched score of the model it would keep (``'score'``); shared by the
        histories of one fit.
    comparing : bool
        Whether these rounds belong to a ``max_leaf_nodes='auto'`` fit whose
        comparison of tree sizes is not over (a model saved now, resumed
        with a warm start, finishes it).
    watched_because : str or None
        Why the fit watches another set than the default one (an eval_set
        of the training rows skipped); None: the default.
    """

    def __init__(self, evals: dict[str, dict[str, list[float]]] | None = None,
                 watched: tuple[str, str] | None = None,
                 greater_is_better: Mapping[str, bool] | None = None,
                 max_iter: int = 0) -> None:
        self.evals: dict[str, dict[str, list[float]]] = {} if evals is None else evals
        self.watched = watched
        self.greater_is_better = dict(greater_is_better or {})
        self.max_iter = max_iter
        self.n_rounds = 0
        self.first_round = 0
        self.start_time: float | None = None
        self.stop_reason: str | None = None
        self.scored: dict[str, list[str]] | None = None
        self.tree_size: dict[str, Any] | None = None
        self.trials: list[dict[str, Any]] = []
        self.comparing = False
        self.watched_because: str | None = None

    def restarted(self, tree_size: dict[str, Any]) -> EvalHistory:
        """An empty history of the same sets, metrics and ``max_iter``, for
        rounds that start over from the baseline with trees of
        ``tree_size``; it shares :attr:`trials`."""
        out = EvalHistory({}, self.watched, self.greater_is_better, self.max_iter)
        out.scored = self.scored
        out.tree_size = tree_size
        out.trials = self.trials
        out.comparing = self.comparing
        out.watched_because = self.watched_because
        return out

    def start(self, n_rounds: int) -> None:
        """Mark the start of the rounds, with ``n_rounds`` already kept."""
        self.n_rounds = self.first_round = n_rounds
        self.start_time = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds since :meth:`start`."""
        return 0.0 if self.start_time is None else time.perf_counter() - self.start_time

    def rounds_per_second(self) -> float | None:
        """Rounds of this fit per second so far (None before the first round)."""
        done, elapsed = self.n_rounds - self.first_round, self.elapsed()
        return done / elapsed if done and elapsed > 0 else None

    def seconds_left(self) -> float | None:
        """Estimated seconds until ``max_iter`` at this fit's pace (None before
        the first round)."""
        rate = self.rounds_per_second()
        return None if rate is None else (self.max_iter - self.n_rounds) / rate

    def record(self, scores: Mapping[str, Mapping[str, float]], n_rounds: int) -> None:
        """Record the scores of the model of ``n_rounds`` rounds.

        Parameters
        ----------
        scores : dict
            ``{set: {metric: float}}``.
        n_rounds : int
            Rounds of the scored model (the entry's index).
        """
        for set_name, metrics in scores.items():
            lists = self.evals.setdefault(set_name, {})
            for metric in metrics:
                lists.setdefault(metric, [])
        for set_name, lists in self.evals.items():
            for metric, values in lists.items():
                # entry n_rounds is this model's: after a truncated model's warm
                # start, the dropped rounds' entries are replaced
                del values[n_rounds:]
                values.extend([math.nan] * (n_rounds - len(values)))
                values.append(float(scores.get(set_name, {}).get(metric, math.nan)))
        self.n_rounds = n_rounds

    def scores(self, set_name: str | None = None, metric: str | None = None) -> list[float]:
        """The score list of ``metric`` on ``set_name`` (default: the watched ones)."""
        default_set, default_metric = self.watched or (None, None)
        return self.evals[set_name or default_set][metric or default_metric]

    def oriented(self, set_name: str | None = None,
                 metric: str | None = None) -> list[float]:
        """:meth:`scores` with the sign that makes higher better."""
        metric = metric or self.watched[1]
        sign = 1.0 if self.greater_is_better.get(metric, True) else -1.0
        return [sign * s for s in self.scores(set_name, metric)]

    def best_iteration(self, set_name: str | None = None,
                       metric: str | None = None) -> int | None:
        """Rounds of the best-scored model (the first of equals; NaN entries
        skipped), or None when nothing is watched or scored."""
        if self.watched is None and (set_name is None or metric is None):
            return None
        best, best_index = -math.inf, None
        for index, score in enumerate(self.oriented(set_name, metric)):
            if score > best:  # NaN never compares greater
                best, best_index = score, index
        return best_index

    def best_score(self, set_name: str | None = None,
                   metric: str | None = None) -> float | None:
        """The score of :meth:`best_iteration` (in the metric's own sign), or None."""
        best = self.best_iteration(set_name, metric)
        return None if best is None else self.scores(set_name, metric)[best]

    def describe(self, set_name: str | None = None, metric: str | None = None) -> str:
        """``'<set> <metric>'`` of the watched (or given) score, for messages."""
        default_set, default_metric = self.watched or (None, None)
        return f"{set_name or default_set} {metric or default_metric}"
