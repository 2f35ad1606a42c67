"""Callbacks that show a fit's progress: a log line per round, a progress bar.

Both name each score by its set and metric, show the pace (rounds per
second) and the estimated time left, and say at the end why and after
which round the fit stopped. ``verbose=k`` is a :class:`LogPrinter` with
``period=k``.
"""
from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Literal

from .callbacks import Callback
from .history import EvalHistory

if TYPE_CHECKING:
    from ..estimators.gradient_boosting import BaseHistGBDT


def _duration(seconds):
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


def pace(history: EvalHistory) -> str:
    """``'12.3 rounds/s, 4.5s left'`` of the fit so far."""
    rate = history.rounds_per_second()
    rate_text = "? rounds/s" if rate is None else f"{rate:.3g} rounds/s"
    return f"{rate_text}, {_duration(history.seconds_left())} left"


def latest_scores(history: EvalHistory) -> str:
    """``'train loss: 0.51  validation loss: 0.52'``: every latest score."""
    return "  ".join(f"{set_name} {metric}: {values[-1]:.6g}"
                     for set_name, metrics in history.evals.items()
                     for metric, values in metrics.items() if values)


def _tree_size(size):
    return (f"max_leaf_nodes={size['max_leaf_nodes']}, "
            f"l2_regularization={size['l2_regularization']:g}")


def restart_line(history: EvalHistory) -> str:
    """The line that says why the rounds start over with other trees."""
    if len(history.trials) > 1:  # a resumed fit: the better size's trees were not saved
        return (f"Fitting again with {_tree_size(history.tree_size)}, whose "
                f"{history.describe()} was better (max_leaf_nodes='auto').")
    return (f"Ran to max_iter with {_tree_size(history.trials[0])}: fitting again with "
            f"{_tree_size(history.tree_size)} (max_leaf_nodes='auto'); the better "
            f"{history.describe()} is kept.")


def summary(history: EvalHistory) -> str:
    """The closing line: where and why the fit stopped, the best round, the
    time, and which tree size was kept of two."""
    line = f"Stopped after round {history.n_rounds} of {history.max_iter}: {history.stop_reason}."
    best = history.best_iteration()
    if best is not None:
        line += f" Best round {best}: {history.describe()} {history.scores()[best]:.6g}."
    done = history.n_rounds - history.first_round
    line += f" {done} rounds in {_duration(history.elapsed())}."
    if len(history.trials) > 1:
        sign = 1.0 if history.greater_is_better.get(history.watched[1], True) else -1.0
        line += (f" Kept {_tree_size(history.tree_size)} ({history.describe()}: " +
                 ", ".join(f"{t['score'] * sign:.6g} with {t['max_leaf_nodes']} leaves"
                           for t in history.trials) + ").")
    return line


class LogPrinter(Callback):
    """Print a line of scores, pace and time left every ``period`` rounds.

    Parameters
    ----------
    period : int, default=1
        Print after every ``period``-th round (and after the last one).
    file : file-like or None, default=None
        Where to print; None: ``sys.stdout`` at the time of printing.

    Examples
    --------
    When the fit watches another set than the default (an ``eval_set`` of
    the training rows skipped) a first line says so; a line reads ``[20/100] train loss: 0.41  validation loss: 0.45
    (33.1 rounds/s, 2.4s left)``; the last one ``Stopped after round 45 of
    100: early stopping: validation loss did not improve ...``.
    """

    reads_estimator = False

    def __init__(self, period: int = 1, file: IO[str] | None = None) -> None:
        self.period = int(period)
        self.file = file

    def _print(self, text):
        print(text, file=self.file if self.file is not None else sys.stdout, flush=True)

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        if history.watched_because:  # not the set a user would assume
            self._print(f"Watching {history.describe()}: {history.watched_because}.")

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> None:
        done = iteration + 1
        if self.period > 0 and (done % self.period == 0 or done == history.max_iter):
            scores = latest_scores(history)
            self._print(f"[{done}/{history.max_iter}] {scores + '  ' if scores else ''}"
                        f"({pace(history)})")

    def on_restart(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._print(restart_line(history))

    def on_fit_end(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._print(summary(history))


class ProgressBar(Callback):
    """A progress bar of the rounds with the watched score, pace and time left.

    Parameters
    ----------
    file : file-like or None, default=None
        Where to draw; None: ``sys.stderr``.
    use_tqdm : bool or 'auto', default='auto'
        Draw with ``tqdm`` ('auto': when it is installed); otherwise a plain
        text bar rewritten in place with a carriage return.
    width : int, default=30
        Characters of the plain bar.
    """

    reads_estimator = False

    def __init__(self, file: IO[str] | None = None,
                 use_tqdm: bool | Literal["auto"] = "auto", width: int = 30) -> None:
        self.file = file
        self.use_tqdm = use_tqdm
        self.width = width
        self._bar = None

    def _stream(self):
        return self.file if self.file is not None else sys.stderr

    def on_fit_begin(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._bar = None
        if self.use_tqdm:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                if self.use_tqdm is True:
                    raise
            else:
                self._bar = tqdm(total=history.max_iter, initial=history.n_rounds,
                                 file=self._stream(), unit="round")

    def on_restart(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._close(restart_line(history))
        self.on_fit_begin(history, estimator)

    def after_round(self, iteration: int, history: EvalHistory,
                    estimator: BaseHistGBDT) -> None:
        watched = (f"{history.describe()} {history.scores()[-1]:.6g}"
                   if history.watched else "")
        if self._bar is not None:
            self._bar.update(history.n_rounds - self._bar.n)
            if watched:
                self._bar.set_postfix_str(watched)
            return
        total = max(history.max_iter, 1)
        filled = int(self.width * history.n_rounds / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self._stream().write(f"\r[{bar}] {history.n_rounds}/{history.max_iter} "
                             f"{pace(history)}  {watched}")
        self._stream().flush()

    def on_fit_end(self, history: EvalHistory, estimator: BaseHistGBDT) -> None:
        self._close(summary(history))

    def _close(self, line):
        """End the bar with ``line`` below it."""
        plain = self._bar is None
        if not plain:
            self._bar.close()
            self._bar = None
        self._stream().write(("\n" if plain else "") + line + "\n")
        self._stream().flush()
