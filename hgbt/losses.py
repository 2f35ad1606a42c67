"""Losses: per-row gradients/hessians (kernels in ``_loss``), values, and baselines."""
import numpy as np

from ._loss import squared_error_gradients
from ._types import G_H_DTYPE

_NO_WEIGHT = np.empty(0, dtype=np.float64)


class SquaredError:
    """Half squared error ``0.5 w (y - raw)^2``; the baseline is the weighted mean.

    Parameters
    ----------
    sample_weight : ndarray of shape (n_samples,) or None
    """

    def __init__(self, sample_weight=None):
        self.sample_weight = sample_weight

    @property
    def constant_hessian(self):
        """Without weights every hessian is 1: only counts are accumulated."""
        return self.sample_weight is None

    def baseline(self, y):
        """The loss-optimal constant raw prediction."""
        return float(np.average(y, weights=self.sample_weight))

    def loss(self, y, raw_prediction):
        """Weighted mean of the per-row loss."""
        return float(np.average(0.5 * (y - raw_prediction) ** 2,
                                weights=self.sample_weight))

    def allocate(self, n_samples):
        """Gradient and hessian arrays; hessians has length 1 if constant."""
        gradients = np.empty(n_samples, dtype=G_H_DTYPE)
        if self.constant_hessian:
            return gradients, np.ones(1, dtype=G_H_DTYPE)
        return gradients, np.empty(n_samples, dtype=G_H_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        """Fill ``gradients`` and ``hessians`` in place."""
        weight = _NO_WEIGHT if self.sample_weight is None else self.sample_weight
        squared_error_gradients(y, raw_prediction, weight, gradients, hessians, n_threads)
