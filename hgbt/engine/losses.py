"""Losses: baselines, per-row gradients/hessians and losses (kernels in ``_loss``), values.

Raw predictions, gradients and hessians are 2-D, shape
``(n_trees_per_iteration, n_samples)``, C-ordered, so row ``k`` is the
contiguous vector of tree ``k`` of a round (``k`` = class for multiclass).
Gradients and hessians are float32; a constant hessian is stored with shape
``(n_trees_per_iteration, 1)`` and the histogram kernels accumulate counts only.

Per-row losses ``l(y, raw)`` (weighted by ``w``; ``loss`` is their weighted
mean; gradient ``g = w dl/draw`` and hessian ``h = w d2l/draw2``):

==================  =====================================================
squared_error       0.5 (y - raw)^2
absolute_error      |y - raw|                      (h := w, leaf refit)
quantile (q)        q (y - raw) if y >= raw else (1 - q)(raw - y)
                                                   (h := w, leaf refit)
huber (delta)       0.5 r^2 if |r| <= delta else delta (|r| - delta / 2),
                    r = y - raw                    (h := w, leaf refit)
poisson             y log(y / mu) - y + mu,            mu = exp(raw)
gamma               y / mu - log(y / mu) - 1,          mu = exp(raw)
tweedie (p)         y^(2-p) / ((1-p)(2-p)) - y mu^(1-p) / (1-p)
                    + mu^(2-p) / (2-p),                mu = exp(raw)
log_loss, binary    log(1 + exp(raw)) - y raw      (raw = log-odds)
log_loss, K > 2     log(sum_k exp(raw_k)) - raw_y  (softmax)
==================  =====================================================

The log-link losses are half unit deviances: the negative log-likelihood
(divided by the dispersion for Tweedie and Gamma) minus its value at the
saturated model ``mu = y``, so they are >= 0 and 0 for a perfect fit. The
log losses are the full negative log-likelihoods. For the piecewise-linear
losses the true hessian is 0 almost everywhere (Huber: outside ``delta``);
``w`` stands in for it, and leaf values are re-fitted from the residuals
(``refit_leaf``) after each tree is grown.
"""
import math
import numbers

import numpy as np
from scipy.special import expit, softmax

from ._loss import (
    LossKind,
    multinomial_log_loss_gradients,
    multinomial_row_losses,
    row_gradients,
    row_losses,
)
from ..core._types import G_H_DTYPE, Y_DTYPE
from ..core.collective import allreduce_max, allreduce_merge, allreduce_sum_int
from ..core.exact import ExactSum, WeightedMean
from .base_loss import PROB_EPS as _PROB_EPS, BaseLoss, clipped_logit
from .selection import Agreed, weighted_quantile, weighted_quantiles


class SquaredError(BaseLoss):
    """Half squared error ``0.5 w (y - raw)^2``; the baseline is the weighted mean."""

    name = "squared_error"
    hessian_is_constant_unweighted = True

    def baseline_statistics(self, y):
        return WeightedMean.of(y, self.sample_weight)

    def baseline_from_statistics(self, statistics):
        return np.array([statistics.value()], dtype=Y_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.SQUARED_ERROR, y, raw_prediction[0], self._weights(),
                      gradients[0], hessians[0], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.SQUARED_ERROR, y, raw_prediction, 0.0, n_threads)


# ------------------------------------------------------------------ helpers

# The classification baselines clip probabilities (and, binary, their
# complements) to at least _PROB_EPS (base_loss.PROB_EPS) before taking logs.


def _row_losses(kind, y, raw_prediction, param, n_threads):
    """Per-row losses of a single-output ``kind`` (the ``_loss`` kernel)."""
    y = np.ascontiguousarray(y, dtype=Y_DTYPE)
    out = np.empty(y.shape[0], dtype=Y_DTYPE)
    row_losses(kind, y, np.ascontiguousarray(raw_prediction[0], dtype=Y_DTYPE), param, out,
               n_threads)
    return out


def _average(values, weights):
    """Weighted mean, exactly summed; unweighted when ``weights`` is None or sums to 0."""
    return WeightedMean.of(values, weights).value()


def _check_finite(y, name):
    if not np.all(np.isfinite(y)):
        raise ValueError(f"loss={name!r} requires finite y (no NaN or infinity)")


def _check_number(value, what, low, high, low_open, high_open):
    """ValueError unless ``value`` is a real number in the given interval."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = (math.isfinite(value)
              and (value > low if low_open else value >= low)
              and (value < high if high_open else value <= high))
    if not ok:
        interval = (("(" if low_open else "[") + f"{low:g}, {high:g}"
                    + (")" if high_open else "]"))
        raise ValueError(f"{what} must be a real number in {interval}, got {value!r}")
    return value


# ---------------------------------------------------- non-smooth regression

class _QuantileBaselineLoss(BaseLoss):
    """A non-smooth regression loss: finite targets, leaves re-fitted from
    their rows, and the baseline a weighted quantile of ``y`` over every
    process's rows (``Agreed`` statistics)."""

    needs_leaf_refit = True
    hessian_is_constant_unweighted = True
    #: the quantile of ``y`` the baseline is
    baseline_quantile = 0.5

    def check_y(self, y):
        _check_finite(y, self.name)

    def baseline_statistics(self, y):
        return Agreed(weighted_quantile(y, self.sample_weight, self.baseline_quantile,
                                        self.collective))

    def baseline_from_statistics(self, statistics):
        return np.array([statistics.value], dtype=Y_DTYPE)


class AbsoluteError(_QuantileBaselineLoss):
    """Absolute error ``w |y - raw|``; the baseline is the weighted median.

    ``g = w sign(raw - y)`` (0 on a tie, a valid subgradient) and ``h = w``
    (a surrogate: the true hessian is 0). Each leaf is then re-fitted to the
    weighted median of its residuals ``y - raw``.
    """

    name = "absolute_error"


    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.ABSOLUTE_ERROR, y, raw_prediction[0], self._weights(),
                      gradients[0], hessians[0], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.ABSOLUTE_ERROR, y, raw_prediction, 0.0, n_threads)

    def refit_leaves(self, y, raw_prediction, sample_weight, leaves, n_leaves):
        return weighted_quantiles(y - raw_prediction, sample_weight, leaves, n_leaves, 0.5,
                                  self.collective)


class QuantileLoss(_QuantileBaselineLoss):
    """Pinball loss of the ``quantile``-quantile, ``0 < quantile < 1``.

    ``l = quantile (y - raw)`` if ``y >= raw``, else
    ``(1 - quantile) (raw - y)``. Its derivative with respect to ``raw`` is
    ``g = w (1{y < raw} - quantile)``: positive where the prediction is above
    the target, so boosting (which moves ``raw`` against ``g``) lowers it.
    ``h = w`` is a surrogate; leaves are re-fitted to the weighted
    ``quantile`` of their residuals, and the baseline is the weighted
    ``quantile`` of ``y`` (see ``weighted_quantile``).
    """

    name = "quantile"

    def __init__(self, quantile, meta=None):
        super().__init__(meta)
        self.quantile = _check_number(quantile, "quantile", 0.0, 1.0, True, True)

    @property
    def baseline_quantile(self):
        return self.quantile

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.QUANTILE, y, raw_prediction[0], self._weights(),
                      gradients[0], hessians[0], self.quantile, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.QUANTILE, y, raw_prediction, self.quantile, n_threads)

    def refit_leaves(self, y, raw_prediction, sample_weight, leaves, n_leaves):
        return weighted_quantiles(y - raw_prediction, sample_weight, leaves, n_leaves,
                                  self.quantile, self.collective)


class HuberLoss(_QuantileBaselineLoss):
    """Huber loss: quadratic within ``delta`` of the target, linear beyond.

    ``l = 0.5 r^2`` if ``|r| <= delta`` else ``delta (|r| - delta / 2)``,
    ``r = y - raw``; ``g = w clip(raw - y, -delta, delta)``, ``h = w`` (exact
    inside ``delta``, a surrogate outside).

    With ``delta=None`` the threshold adapts: every ``gradients`` call sets
    ``delta_`` to the weighted 0.9-quantile of ``|y - raw|`` (see
    ``weighted_quantile``), and ``loss`` and ``refit_leaf`` use that
    ``delta_`` (before the first ``gradients`` call, ``loss`` uses the
    0.9-quantile of its own residuals). A given ``delta`` is fixed:
    ``delta_ = delta``.

    The baseline is the weighted median. ``refit_leaf`` is the one-step
    Huber M-estimate of the leaf's residuals ``r``: ``m`` = weighted median
    of ``r``, then ``m + weighted mean of clip(r - m, -delta_, delta_)``.
    """

    name = "huber"
    #: quantile of |y - raw| that sets ``delta_`` when ``delta`` is None
    delta_quantile = 0.9

    def __init__(self, delta=None, meta=None):
        super().__init__(meta)
        if delta is not None:
            delta = _check_number(delta, "huber delta", 0.0, math.inf, True, True)
        self.delta = delta
        self.delta_ = delta

    def restart(self):
        self.delta_ = self.delta

    def _adaptive_delta(self, y, raw, sample_weight):
        # NaN for no rows anywhere (an empty validation set of a Dask shard is
        # scored too): there is nothing for the delta to score
        residuals = np.abs(np.asarray(y, dtype=np.float64) - raw)
        return float(weighted_quantiles(residuals, sample_weight,
                                        np.zeros(residuals.size, dtype=np.intp), 1,
                                        self.delta_quantile, self.collective)[0])

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        if self.delta is None:
            self.delta_ = self._adaptive_delta(y, raw_prediction[0], self.sample_weight)
        row_gradients(LossKind.HUBER, y, raw_prediction[0], self._weights(),
                      gradients[0], hessians[0], self.delta_, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        delta = self.delta_
        if delta is None:
            delta = self._adaptive_delta(y, raw_prediction[0], self.sample_weight)
        return _row_losses(LossKind.HUBER, y, raw_prediction, delta, n_threads)

    def refit_leaves(self, y, raw_prediction, sample_weight, leaves, n_leaves):
        residuals = y - raw_prediction
        delta = self.delta_
        if delta is None:  # refit before any gradients call: use the leaves' rows
            delta = self._adaptive_delta(y, raw_prediction, sample_weight)
        medians = weighted_quantiles(residuals, sample_weight, leaves, n_leaves, 0.5,
                                     self.collective)
        step = np.clip(residuals - medians[leaves], -delta, delta)
        # exact sums: merged in any order
        means = allreduce_merge(self.collective,
                                WeightedMean.of_groups(step, sample_weight, leaves, n_leaves))
        return medians + np.array([mean.value() for mean in means])


# ------------------------------------------------------- log-link regression

class _LogLinkLoss(BaseLoss):
    """Shared parts of the losses with ``mu = exp(raw)``."""

    link = "exp"

    def check_y_rows(self, y):
        self.check_y(y, totals=False)

    def _check_non_negative(self, y, totals=True):
        _check_finite(y, self.name)
        if np.any(y < 0):
            raise ValueError(f"loss={self.name!r} requires non-negative y")
        if totals and not _average(y, self.sample_weight) > 0:
            raise ValueError(f"loss={self.name!r} requires y with a strictly positive "
                             "(weighted) sum")

    def _check_positive(self, y):
        _check_finite(y, self.name)
        if np.any(y <= 0):
            raise ValueError(f"loss={self.name!r} requires strictly positive y")

    def baseline_statistics(self, y):
        return WeightedMean.of(y, self.sample_weight)

    def baseline_from_statistics(self, statistics):
        # the weighted mean of y zeroes the summed gradient for every power
        mean = statistics.value()
        if not mean > 0:
            raise ValueError(f"loss={self.name!r} requires a strictly positive "
                             f"(weighted) mean of y, got {mean!r}")
        return np.array([np.log(mean)], dtype=Y_DTYPE)

    def inverse_link(self, raw_prediction):
        return np.exp(raw_prediction[0])


class PoissonLoss(_LogLinkLoss):
    """Poisson deviance, log link: ``l = y log(y / mu) - y + mu``, ``mu = exp(raw)``.

    ``g = w (mu - y)``, ``h = w mu``. Needs ``y >= 0`` with a positive
    weighted sum; the baseline is ``log`` of the weighted mean of ``y``.
    """

    name = "poisson"

    def check_y(self, y, totals=True):
        self._check_non_negative(y, totals)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.POISSON, y, raw_prediction[0], self._weights(), gradients[0],
                      hessians[0], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.POISSON, y, raw_prediction, 0.0, n_threads)


class GammaLoss(_LogLinkLoss):
    """Gamma deviance, log link: ``l = y / mu - log(y / mu) - 1``, ``mu = exp(raw)``.

    ``g = w (1 - y / mu)``, ``h = w y / mu``. Needs ``y > 0``; the baseline is
    ``log`` of the weighted mean of ``y``.
    """

    name = "gamma"

    def check_y(self, y, totals=True):
        self._check_positive(y)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.GAMMA, y, raw_prediction[0], self._weights(), gradients[0],
                      hessians[0], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.GAMMA, y, raw_prediction, 0.0, n_threads)


class TweedieLoss(_LogLinkLoss):
    """Tweedie deviance with ``1 <= power <= 2``, log link, ``mu = exp(raw)``.

    ``l = y^(2-p) / ((1-p)(2-p)) - y mu^(1-p) / (1-p) + mu^(2-p) / (2-p)``
    (the Poisson deviance for ``p = 1``, the Gamma deviance for ``p = 2``);
    ``g = w (mu^(2-p) - y mu^(1-p))``,
    ``h = w ((2-p) mu^(2-p) + (p-1) y mu^(1-p))``. Needs ``y >= 0`` with a
    positive weighted sum for ``p < 2``, ``y > 0`` for ``p = 2``.
    """

    name = "tweedie"

    def __init__(self, power, meta=None):
        super().__init__(meta)
        self.power = _check_number(power, "tweedie power", 1.0, 2.0, False, False)

    def check_y(self, y, totals=True):
        if self.power < 2:
            self._check_non_negative(y, totals)
        else:
            self._check_positive(y)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.TWEEDIE, y, raw_prediction[0], self._weights(), gradients[0],
                      hessians[0], self.power, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.TWEEDIE, y, raw_prediction, self.power, n_threads)


# ---------------------------------------------------------- classification

class BinaryLogLoss(BaseLoss):
    """Binary log loss on log-odds: ``l = log(1 + exp(raw)) - y raw``, y in {0, 1}.

    ``p = sigmoid(raw)``, ``g = w (p - y)``, ``h = w p (1 - p)``, computed
    from ``exp(-|raw|)`` so that no ``raw`` overflows, in float32 (the
    precision of the stored gradients). The baseline is the
    logit of the weighted mean of ``y`` clipped to ``[1e-15, 1 - 1e-15]``;
    ``inverse_link`` returns ``[1 - p, p]`` per row.
    """

    name = "log_loss"
    link = "logistic"

    def check_y(self, y):
        _check_finite(y, self.name)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError(f"loss={self.name!r} (binary) requires y in {{0, 1}}")

    def baseline_statistics(self, y):
        return WeightedMean.of(y, self.sample_weight)

    def baseline_from_statistics(self, statistics):
        return np.array([clipped_logit(statistics.value())], dtype=Y_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        row_gradients(LossKind.BINARY_LOG_LOSS, y, raw_prediction[0], self._weights(),
                      gradients[0], hessians[0], 0.0, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        return _row_losses(LossKind.BINARY_LOG_LOSS, y, raw_prediction, 0.0, n_threads)

    def inverse_link(self, raw_prediction):
        raw = raw_prediction[0]
        proba = np.empty((raw.shape[0], 2), dtype=Y_DTYPE)
        proba[:, 1] = expit(raw)
        proba[:, 0] = expit(-raw)
        return proba


class MultinomialLogLoss(BaseLoss):
    """Multinomial log loss over ``n_classes`` trees per round (softmax link).

    ``l = log(sum_k exp(raw_k)) - raw_y`` with ``y`` the class index
    (0..K-1, as float64); ``p = softmax(raw)``,
    ``g_k = w (p_k - 1{y = k})`` and ``h_k = w p_k (1 - p_k)`` (the diagonal
    of the hessian, scikit-learn's convention). The baseline is the log of
    the weighted class priors (clipped to at least 1e-15) minus their mean.
    Softmax subtracts each row's maximum raw value first and works in float32
    (the precision of the stored gradients), ``1 - p`` of the most likely
    class summed from the other classes so that it does not cancel.
    """

    name = "log_loss"
    link = "softmax"

    def __init__(self, n_classes, meta=None):
        super().__init__(meta)
        if (not isinstance(n_classes, numbers.Integral) or isinstance(n_classes, bool)
                or n_classes < 2):
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        self.n_classes = int(n_classes)
        self.n_trees_per_iteration = self.n_classes

    def check_y(self, y):
        _check_finite(y, self.name)
        if not np.all((y == np.floor(y)) & (y >= 0) & (y < self.n_classes)):
            raise ValueError(f"loss={self.name!r} (multinomial) requires y to hold class "
                             f"indices 0..{self.n_classes - 1}")

    def baseline_statistics(self, y):
        # per class: the weighted share of rows of that class
        return [WeightedMean.of(y == k, self.sample_weight) for k in range(self.n_classes)]

    def baseline_from_statistics(self, statistics):
        priors = np.array([share.value() for share in statistics])
        log_priors = np.log(np.clip(priors, _PROB_EPS, 1.0))
        return (log_priors - log_priors.mean()).astype(Y_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        multinomial_log_loss_gradients(y, raw_prediction, self._weights(), gradients,
                                       hessians, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        y = np.ascontiguousarray(y, dtype=Y_DTYPE)
        out = np.empty(y.shape[0], dtype=Y_DTYPE)
        multinomial_row_losses(y, np.ascontiguousarray(raw_prediction, dtype=Y_DTYPE), out,
                               n_threads)
        return out

    def inverse_link(self, raw_prediction):
        return np.ascontiguousarray(softmax(raw_prediction, axis=0).T)


# --------------------------------------------------------------- custom loss

class CustomLoss(BaseLoss):
    """A user loss given as ``func(y_true, raw_prediction, sample_weight)``.

    ``func`` receives read-only views of ``y_true`` and of the single tree's
    1-D ``raw_prediction``, and ``sample_weight`` (None when unweighted), and
    returns ``(gradient, hessian)``: numeric arrays of shape ``(n_samples,)``,
    finite, ``hessian >= 0``, already multiplied by the weights if the loss
    is to be weighted (hgbt does not apply ``sample_weight`` to them). They
    are stored as float32; anything else raises ValueError naming the
    problem. One tree per round; ``inverse_link`` is the identity. The
    baseline is the constant where the gradients sum to zero (the best
    constant of a convex loss), found by bisection in ``[min(y, 0), max(y,
    0)]``, widened up to 8 times (tripled each time) while the sums keep one
    sign; 0 when no sign change is found. There is no loss value: ``loss`` raises ValueError, so
    ``scoring='loss'`` (early stopping, verbose output) needs a built-in loss.
    """

    name = "custom"
    has_loss_values = False

    def __init__(self, func, meta=None):
        super().__init__(meta)
        if not callable(func):
            raise ValueError(f"a custom loss must be callable, got {func!r}")
        self.func = func

    @staticmethod
    def _read_only(array):
        if array is None:
            return None
        view = np.asarray(array).view()
        view.flags.writeable = False
        return view

    #: bisection steps of the baseline search (down to ~1e-15 of the range), and
    #: widenings of its bracket (each triples it)
    BASELINE_STEPS = 52
    BRACKET_STEPS = 8

    def baseline_statistics(self, y):
        return Agreed(self._root(np.asarray(y, dtype=Y_DTYPE)))

    def baseline_from_statistics(self, statistics):
        return statistics.value

    def _root(self, y):
        """The constant raw score whose gradients sum to zero (see the class),
        over every process's rows: the sums are exact, so their signs do not
        depend on how the rows are split."""
        collective = self.collective
        if allreduce_sum_int(collective, y.size) == 0:
            return np.zeros(1, dtype=Y_DTYPE)
        g = np.empty((1, y.size), dtype=G_H_DTYPE)
        h = np.empty((1, y.size), dtype=G_H_DTYPE)

        def total(c):
            self.gradients(y, np.full((1, y.size), c), g, h, 1)
            return float(allreduce_merge(collective, [ExactSum.of(g)])[0])

        # a bracket: [min(y, 0), max(y, 0)], widened while the sums keep one sign
        low, high = allreduce_max(collective, [-np.min(y, initial=np.inf),
                                               np.max(y, initial=-np.inf)])
        lo, hi = min(-float(low), 0.0), max(float(high), 0.0)
        g_lo, g_hi = total(lo), total(hi)
        for _ in range(self.BRACKET_STEPS):
            if g_lo == 0.0:
                return np.full(1, lo, dtype=Y_DTYPE)
            if g_hi == 0.0:
                return np.full(1, hi, dtype=Y_DTYPE)
            if g_lo < 0.0 < g_hi:
                break
            span = max(hi - lo, 1.0)
            lo, hi = lo - span, hi + span
            g_lo, g_hi = total(lo), total(hi)
        else:  # no root found (the sums keep one sign): start at 0
            return np.zeros(1, dtype=Y_DTYPE)
        for _ in range(self.BASELINE_STEPS):
            mid = lo * 0.5 + hi * 0.5
            if not lo < mid < hi:
                break
            g_mid = total(mid)
            if g_mid == 0.0:
                return np.full(1, mid, dtype=Y_DTYPE)
            lo, hi = (mid, hi) if g_mid < 0.0 else (lo, mid)
        return np.full(1, lo * 0.5 + hi * 0.5, dtype=Y_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        n_samples = y.shape[0]
        result = self.func(self._read_only(y), self._read_only(raw_prediction[0]),
                           self._read_only(self.sample_weight))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ValueError("the custom loss must return a (gradient, hessian) pair, "
                             f"got {type(result).__name__}")
        for what, values, out in (("gradient", result[0], gradients[0]),
                                  ("hessian", result[1], hessians[0])):
            values = np.asarray(values)
            if values.dtype.kind not in "iuf":
                raise ValueError(f"the custom loss returned a non-numeric {what} "
                                 f"(dtype {values.dtype})")
            if values.shape != (n_samples,):
                raise ValueError(f"the custom loss returned a {what} of shape "
                                 f"{values.shape}; expected ({n_samples},)")
            if not np.all(np.isfinite(values)):
                raise ValueError(f"the custom loss returned a {what} with NaN or "
                                 "infinite values")
            if what == "hessian" and np.any(values < 0):
                raise ValueError("the custom loss returned negative hessian values; "
                                 "hessians must be >= 0")
            if np.any(np.abs(values) > np.finfo(G_H_DTYPE).max):
                raise ValueError(f"the custom loss returned a {what} too large for "
                                 "float32")
            if out.shape != (n_samples,):
                raise ValueError(f"{what}s buffer has shape {out.shape}; expected "
                                 f"({n_samples},) (a custom loss has per-row hessians)")
            out[:] = values

    def row_loss(self, y, raw_prediction, n_threads=1):
        raise ValueError("scoring='loss' needs a built-in loss: a custom loss (a "
                         "callable) gives gradients and hessians, not loss values")


class CustomBinaryLoss(CustomLoss):
    """A user loss of a binary classifier, on the log-odds of the second
    class: ``func(y_true, raw_prediction, sample_weight)`` with ``y_true`` in
    {0, 1}; probabilities are the sigmoid of the raw score, as for
    ``log_loss`` (a focal loss, an asymmetric or a re-weighted log-loss)."""

    link = "logistic"

    def check_y(self, y):
        _check_finite(y, self.name)

    inverse_link = BinaryLogLoss.inverse_link


# ------------------------------------------------------------------- factory

LOSS_NAMES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
              "gamma", "tweedie", "log_loss", "lambdarank", "pairwise", "cox", "aft")


def get_loss(loss, meta=None, *, n_classes=None, huber_delta=None,
             quantile=None, tweedie_power=1.5, lambdarank_truncation_level=30,
             lambdarank_norm=True, label_gain=None, sigmoid=1.0, aft_distribution="normal",
             aft_sigma=1.0, n_outputs=None):
    """The loss instance for a name in ``LOSS_NAMES`` or a callable.

    ``'log_loss'`` needs ``n_classes``: binary for 2, multinomial above.
    ``'quantile'`` needs ``quantile`` in (0, 1). ``huber_delta=None`` makes
    the Huber threshold adaptive (see ``HuberLoss``). 'lambdarank' and
    'pairwise' rank (``ranking.LambdaRankLoss``, the ``lambdarank_*``,
    ``label_gain`` and ``sigmoid`` arguments); 'cox' and 'aft' model survival
    times (``survival.CoxLoss``, ``AFTLoss`` with ``aft_distribution`` and
    ``aft_sigma``). ``n_outputs`` (>= 2) makes 'squared_error' a
    multi-output loss (``multi_output.MultiSquaredError``) and 'log_loss' of
    two classes a multi-label one (``multi_output.MultiLogLoss``). A callable
    becomes a ``CustomLoss``.
    """
    if callable(loss):
        if n_classes is None:
            return CustomLoss(loss, meta)
        if n_classes != 2:
            raise ValueError(f"a callable classifier loss takes two classes (one tree per "
                             f"round, on the log-odds); y has {n_classes}: use "
                             "loss='log_loss' for more.")
        return CustomBinaryLoss(loss, meta)
    if loss in ("lambdarank", "pairwise"):  # ranking.py builds on this module
        from .ranking import LambdaRankLoss
        return LambdaRankLoss(meta, lambdarank_truncation_level, label_gain, sigmoid,
                              lambdarank_norm, loss == "pairwise")
    if n_outputs is not None:  # multi_output.py: one tree per output
        from .multi_output import MultiLogLoss, MultiSquaredError
        if loss == "log_loss" and n_classes == 2:
            return MultiLogLoss(n_outputs, meta)
        if loss != "squared_error" or n_classes is not None:
            raise ValueError(f"a multi-output model (y of {n_outputs} columns) takes "
                             f"loss='squared_error' (regression) or 'log_loss' "
                             f"(multi-label), got {loss!r}.")
        return MultiSquaredError(n_outputs, meta)
    if loss in ("cox", "aft"):  # survival.py builds on this module's base
        from .survival import AFTLoss, CoxLoss
        return CoxLoss(meta) if loss == "cox" else AFTLoss(meta, aft_distribution, aft_sigma)
    if not isinstance(loss, str) or loss not in LOSS_NAMES:
        raise ValueError(f"unknown loss {loss!r}; valid losses are "
                         f"{', '.join(repr(name) for name in LOSS_NAMES)} or a callable")
    if loss == "squared_error":
        return SquaredError(meta)
    if loss == "absolute_error":
        return AbsoluteError(meta)
    if loss == "huber":
        return HuberLoss(huber_delta, meta)
    if loss == "quantile":
        if quantile is None:
            raise ValueError("loss='quantile' requires quantile, a number in (0, 1)")
        return QuantileLoss(quantile, meta)
    if loss == "poisson":
        return PoissonLoss(meta)
    if loss == "gamma":
        return GammaLoss(meta)
    if loss == "tweedie":
        return TweedieLoss(tweedie_power, meta)
    if n_classes is None:
        raise ValueError("loss='log_loss' requires n_classes")
    if (not isinstance(n_classes, numbers.Integral) or isinstance(n_classes, bool)
            or n_classes < 2):
        raise ValueError(f"loss='log_loss' requires n_classes >= 2, got {n_classes!r}")
    if n_classes == 2:
        return BinaryLogLoss(meta)
    return MultinomialLogLoss(n_classes, meta)
