"""Callbacks for ``fit(callbacks=[...])``: watch and steer a fit round by round.

A callback is any object with some of the hooks ``on_fit_begin(history,
estimator)``, ``before_round(iteration, history, estimator)``,
``after_round(iteration, history, estimator)`` and ``on_fit_end(history,
estimator)``; a round hook returning ``"stop"`` ends the fit cleanly after
the rounds finished. ``history`` is the fit's :class:`EvalHistory` (scores
per set and metric, rounds, pace, ``stop_reason``). See
``doc/training.md``.

Built-ins: :class:`EarlyStopping`, :class:`LogPrinter`, :class:`ProgressBar`,
:class:`TimeBudget`, :class:`StopOnEvent` (stop a fit in another thread) and
:class:`Checkpoint` (``save_model`` every k rounds, resumable with
``warm_start``).
"""
from .engine.callbacks import (Callback, Checkpoint, EarlyStopping, StopOnEvent,
                               TimeBudget)
from .engine.history import EvalHistory
from .engine.progress import LogPrinter, ProgressBar

__all__ = ["Callback", "Checkpoint", "EarlyStopping", "EvalHistory", "LogPrinter",
           "ProgressBar", "StopOnEvent", "TimeBudget"]
