"""Callbacks: code that runs around each boosting round and may end the fit.

The protocol is small. A callback is any object with some of these methods
(:class:`Callback` gives them all as no-ops to inherit from):

``on_fit_begin(history, estimator)``
    Once, before the first round of this fit.
``before_round(iteration, history, estimator)``
    Before round ``iteration`` (0-based, a warm start's earlier rounds
    counted) is grown.
``after_round(iteration, history, estimator)``
    After round ``iteration`` is kept and scored: ``history.n_rounds`` is
    ``iteration + 1`` and the estimator is a consistent model of those
    rounds (``n_iter_``, ``evals_result_``, ``best_iteration_``; it can
    predict and ``save_model``).
``on_restart(history, estimator)``
    Before the rounds start over from the baseline with the other tree size
    of ``max_leaf_nodes='auto'`` (the first fit ran to ``max_iter`` without
    stopping early; or a resumed fit regrows the better one);
    ``history`` is the new rounds' (round numbers start again at 0). The
    better of the two fits on the watched set is kept.
``on_fit_end(history, estimator)``
    Once, when the rounds end (``history.stop_reason`` says why); not
    called when the fit raises.

``before_round`` and ``after_round`` return None to go on, or ``"stop"``
(or True) to end the fit cleanly after the rounds finished so far; the
callback's ``reason`` attribute, if it has one, says why in
``history.stop_reason``. ``history`` is the fit's
:class:`~hgbt.engine.history.EvalHistory`. A callback with
``reads_estimator = False`` (the built-ins that read only the history) lets
the fit skip making the estimator a model of the rounds before its
``after_round``. A callback with
``needs_scores = True`` makes the fit score every round even when nothing
else asks for it.

The built-ins: :class:`EarlyStopping`, :class:`TimeBudget`,
:class:`StopOnEvent`, :class:`Checkpoint` here, and the printers
:class:`~hgbt.engine.progress.LogPrinter` and
:class:`~hgbt.engine.progress.ProgressBar`.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, TypeAlias

from .early_stopping import should_stop
from .history import EvalHistory

if TYPE_CHECKING:
    from ..estimators.gradient_boosting import BaseHistGBDT

STOP: Final = "stop"
#: what a round hook returns: None to go on, ``"stop"`` (or True) to end the fit
RoundAnswer: TypeAlias = str | bool | None


class Callback:
    """Base class of callbacks: every hook of the protocol as a no-op.

    Inheriting is optional: the fit calls only the hooks an object has.

    Attributes
    ----------
    reason : str or None
        Why the callback stopped the fit (set before returning ``"stop"``).
    needs_scores : bool
        Whether the fit must score every round for this callback.
    reads_estimator : bool
        Whether ``after_round`` reads the estimator (then it is a model of
        the rounds so far when the hook runs).
    """

    reason: str | None = None
    needs_scores: bool = False
    reads_estimator: bool = True

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        """Called once before the first round of the fit."""

    def before_round(self, iteration: int, history: EvalHistory,
                     estimator: BaseHistGBDT) -> RoundAnswer:
        """Called before round ``iteration``; return ``"stop"`` to end the fit."""

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> RoundAnswer:
        """Called after round ``iteration``; return ``"stop"`` to end the fit."""

    def on_restart(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        """Called before the rounds start over with the other tree size."""

    def on_fit_end(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        """Called once when the rounds end."""


def _overrides(callback, hook):
    """Whether ``callback`` has a ``hook`` other than the base class's no-op."""
    method = getattr(callback, hook, None)
    return method is not None and getattr(method, "__func__", None) is not getattr(
        Callback, hook)


def _reads_estimator(callback):
    """``reads_estimator`` as the class that defines ``after_round`` says (a
    subclass's own ``after_round`` may read the estimator: True unless it
    says otherwise)."""
    for klass in type(callback).__mro__:
        if "after_round" in vars(klass):
            return vars(klass).get("reads_estimator", True)
    return True


class CallbackRunner:
    """Calls the hooks of a fit's callbacks, in order.

    Parameters
    ----------
    callbacks : list
        Callback objects (see the module's protocol).
    estimator : object
        What the callbacks receive as ``estimator``.
    sync : callable or None
        Called with the history before ``after_round`` and ``on_restart``
        hooks run, so the estimator is a consistent model of the rounds so far.
    finish : callable or None
        Called with the history when the rounds end, before ``on_fit_end``:
        the estimator becomes the fit's final model (default: ``sync``).

    Attributes
    ----------
    interrupted : bool
        Whether the last stop asked for came from a callback other than
        :class:`EarlyStopping` (the user's, a time budget, an event, the
        interpreter's exit), rather than from the fit's own stopping rule.
    """

    def __init__(self, callbacks: Iterable[object], estimator: object = None,
                 sync: Callable[[EvalHistory], None] | None = None,
                 finish: Callable[[EvalHistory], None] | None = None) -> None:
        self.callbacks = list(callbacks)
        self.estimator = estimator
        self._sync = sync
        self._finish = finish if finish is not None else sync
        self.interrupted = False
        # the base class's after_round does nothing: only an override may read
        # the estimator after a round (the sync costs ~20 us a round, about 5%
        # of a small fit's: early stopping alone does not ask for it)
        self._needs_sync = any(_overrides(c, "after_round") and _reads_estimator(c)
                               for c in self.callbacks)

    def begin(self, history: EvalHistory) -> None:
        self._call("on_fit_begin", history)

    def restart(self, history: EvalHistory) -> None:
        """Call every ``on_restart``: the rounds start over in ``history``."""
        if self._sync is not None:
            self._sync(history)
        self._call("on_restart", history)

    def before_round(self, iteration: int, history: EvalHistory) -> str | None:
        """Call every ``before_round``; return the reason of the first callback
        asking to stop, or None."""
        return self._call_round("before_round", iteration, history)

    def after_round(self, iteration: int, history: EvalHistory) -> str | None:
        """Call every ``after_round``; return the reason of the first callback
        asking to stop, or None."""
        if self._sync is not None and self._needs_sync:
            self._sync(history)
        return self._call_round("after_round", iteration, history)

    def end(self, history: EvalHistory) -> None:
        if self._finish is not None:
            self._finish(history)
        self._call("on_fit_end", history)

    def _call(self, hook, history):
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is not None:
                method(history, self.estimator)

    def _call_round(self, hook, iteration, history):
        # every callback sees every round; the first to ask to stop names why
        reason = None
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is None:
                continue
            answer = method(iteration, history, self.estimator)
            if reason is None and (answer is True or (isinstance(answer, str)
                                                      and answer == STOP)):
                reason = (getattr(callback, "reason", None)
                          or f"stopped by {type(callback).__name__}")
                self.interrupted = not isinstance(callback, EarlyStopping)
        return reason


class EarlyStopping(Callback):
    """Stop when a score has not improved for ``n_iter_no_change`` rounds.

    The estimators add one when ``early_stopping`` is on (with their
    ``n_iter_no_change`` and ``tol``, watching ``history.watched``).

    Parameters
    ----------
    n_iter_no_change : int, default=8
        Rounds without an improvement of more than ``tol`` before stopping
        (the estimators' default).
    tol : float, default=1e-7
        Improvement that counts (in the metric's units).
    set_name, metric : str or None, default=None
        The score watched; None: the history's watched set and metric.
    """

    needs_scores = True
    reads_estimator = False

    def __init__(self, n_iter_no_change: int = 8, tol: float = 1e-7,
                 set_name: str | None = None, metric: str | None = None) -> None:
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.set_name = set_name
        self.metric = metric

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self.reason = None
        set_name, metric = (self.set_name or (history.watched or (None, None))[0],
                            self.metric or (history.watched or (None, None))[1])
        if history.scored is not None and metric not in history.scored.get(set_name, ()):
            raise ValueError(f"EarlyStopping watches {set_name!r} {metric!r}, which the fit "
                             f"does not score; it scores {history.scored}.")

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> RoundAnswer:
        # rounds a warm start did not score (NaN) are not compared
        scores = [s for s in history.oriented(self.set_name, self.metric) if s == s]
        if not should_stop(scores, self.n_iter_no_change, self.tol):
            return None
        self.reason = (
            f"early stopping: {history.describe(self.set_name, self.metric)} did not improve "
            f"by more than tol={self.tol:g} for {self.n_iter_no_change} rounds")
        return STOP


class TimeBudget(Callback):
    """Stop before a round that would end after ``seconds`` of fitting.

    A round is not begun when the time spent so far plus the duration of
    the previous round exceeds the budget, so the fit ends within the
    budget as long as rounds take about as long as the last one.

    Parameters
    ----------
    seconds : float
        The budget, counted from the first round of the fit.
    clock : callable, default=time.perf_counter
        The clock (seconds).
    """

    reads_estimator = False

    def __init__(self, seconds: float,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = seconds
        self.clock = clock

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self.reason = None
        self._start = self._round_start = self.clock()
        self._last_round = 0.0

    def before_round(self, iteration: int, history: EvalHistory,
                     estimator: BaseHistGBDT) -> RoundAnswer:
        now = self.clock()
        if now - self._start + self._last_round > self.seconds:
            self.reason = (f"time budget: {self.seconds:g} s would be exceeded by round "
                           f"{iteration + 1} ({now - self._start:.3g} s spent)")
            return STOP
        self._round_start = now
        return None

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> None:
        self._last_round = self.clock() - self._round_start


class StopOnEvent(Callback):
    """Stop at the next round boundary once ``event`` is set.

    The way to stop a fit running in another thread (a ``threading.Event``,
    or anything with ``is_set()``): the fit ends cleanly with the rounds
    finished, as if ``max_iter`` had been reached.

    Parameters
    ----------
    event : threading.Event
    """

    reason = "stop event set"
    reads_estimator = False

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def before_round(self, iteration: int, history: EvalHistory,
                     estimator: BaseHistGBDT) -> RoundAnswer:
        return STOP if self.event.is_set() else None

    after_round = before_round


class Checkpoint(Callback):
    """Save the model every ``every`` rounds with ``save_model``.

    A checkpoint is a consistent model of the rounds finished. Resume with
    ``hgbt.load_model(path).set_params(warm_start=True).fit(X, y)`` on the
    same data: the resumed fit grows the same trees as an uninterrupted
    one, bit for bit (every round draws from a generator seeded by the
    seed and the round; the history is saved with the model).

    Parameters
    ----------
    path : str or os.PathLike
        The file; ``{round}`` in it is replaced by the number of rounds
        saved (one file per checkpoint; with ``max_leaf_nodes='auto'`` the
        rounds of a second tree size and the final save rewrite files of the
        first's). Written to a temporary file first and renamed, so an
        interrupted save leaves the previous checkpoint.
    every : int, default=10
        Save after every ``every`` rounds.
    at_end : bool, default=True
        Also save when the fit ends.

    Attributes
    ----------
    saved : list of str
        The files written, in order.
    """

    def __init__(self, path: str | os.PathLike, every: int = 10,
                 at_end: bool = True) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}.")
        self.path = path
        self.every = every
        self.at_end = at_end
        self.saved: list[str] = []
        self._last_saved = None

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._last_saved = None

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> None:
        if (iteration + 1) % self.every == 0:
            self._save(history, estimator)

    def on_fit_end(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        if self.at_end and self._last_saved != self._model_of(history):
            self._save(history, estimator)

    @staticmethod
    def _model_of(history):
        # max_leaf_nodes='auto': after two fits the model kept is either's,
        # with both scores, even when the second saved as many rounds last
        size = history.tree_size or {}
        return history.n_rounds, tuple(size.values()), len(history.trials)

    def _path(self, n_rounds):
        return os.fspath(self.path).replace("{round}", str(n_rounds))

    def _save(self, history, estimator):
        path = self._path(history.n_rounds)
        temporary = f"{path}.tmp{os.getpid()}"
        estimator.save_model(temporary)
        os.replace(temporary, path)
        self.saved.append(path)
        self._last_saved = self._model_of(history)
