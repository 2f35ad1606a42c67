"""HistGBDTRegressor: gradient-boosted trees for regression."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..core._types import Y_DTYPE
from ..core.params import REGRESSOR, constraints, make_init
from ..data.dataset import MatrixLike
from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC
from .gradient_boosting import BaseHistGBDT, peer_predict_options
from .monitoring import RegressionRound
from ..model.booster import objective_from_params
from ..persistence import register_estimator


@register_estimator
class HistGBDTRegressor(RegressorMixin, BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for regression.

    Features are binned once into at most ``max_bins`` equal-count bins (plus one
    for missing values); trees are grown on per-node gradient histograms with
    the subtraction trick. Missing values go to whichever side of each split
    gave the larger gain during training.

    Parameters
    ----------
    loss : str or callable, default='squared_error'
        'squared_error', 'absolute_error', 'huber', 'quantile', 'poisson',
        'gamma' or 'tweedie', or a callable ``loss(y_true, raw_prediction,
        sample_weight) -> (gradient, hessian)`` returning two arrays of shape
        (n_samples,) (``sample_weight`` may be None); with a callable,
        predictions are the raw sums, starting from the constant where the
        gradients sum to zero (found by bisection; 0 if none is found).
        For 'absolute_error', 'quantile' and 'huber' leaf values are re-fitted
        after growing to the leaf's weighted median / quantile (Huber:
        one-step M-estimate) of the residuals.
    quantile : float or None, default=None
        The quantile predicted with ``loss='quantile'`` (required then).
    huber_delta : float or None, default=None
        Residual size where the Huber loss turns from quadratic to linear;
        None re-estimates it each round as the 0.9-quantile of the absolute
        residuals.
    tweedie_power : float, default=1.5
        Power of the Tweedie deviance (1 = Poisson, 2 = Gamma).
    multi_strategy : {'one_output_per_tree', 'multi_output_tree'}, default='one_output_per_tree'
        With ``y`` of several columns: grow a tree per output each round (each
        output's trees those of its model alone), or one tree whose leaves hold
        a value per output, its splits chosen on the gain summed over the
        outputs (XGBoost's name; faster per round, as accurate where the
        outputs depend on the same features; no categorical features,
        constraints, quantized gradients, GOSS or per-node column sampling).
{COMMON_PARAMETERS_DOC}

    Attributes
    ----------
{COMMON_ATTRIBUTES_DOC}

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from hgbt import HistGBDTRegressor
    >>> X, y = make_regression(n_samples=500, random_state=0)
    >>> model = HistGBDTRegressor(max_iter=20).fit(X, y)
    >>> model.predict(X[:2]).shape
    (2,)
    """

    _parameter_constraints = constraints(REGRESSOR)
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = make_init(REGRESSOR)
    _stratify = False
    _multi_output = True  # y may have columns: one tree per output a round

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _objective(self):
        if self.loss == "quantile" and self.quantile is None:
            raise ValueError("loss='quantile' needs the quantile parameter, e.g. "
                             "quantile=0.9.")
        objective = objective_from_params(self.get_params(deep=False))
        if getattr(self, "n_outputs_", 1) > 1:
            objective["n_outputs"] = self.n_outputs_
        return objective

    def _encode_y(self, y, reset):
        y = np.asarray(y.toarray() if sp.issparse(y) else y, dtype=Y_DTYPE)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]  # one column: one output
        width = 1 if y.ndim == 1 else y.shape[1]
        if y.ndim > 2 or width == 0:
            raise ValueError(f"y must have shape (n_samples,) or (n_samples, n_outputs), "
                             f"got {y.shape}.")
        if reset:
            self.n_outputs_ = width
        elif width != getattr(self, "n_outputs_", 1):
            raise ValueError(f"y has {width} output(s); the model was fitted on "
                             f"{getattr(self, 'n_outputs_', 1)}.")
        return np.ascontiguousarray(y)

    def _decode(self, y):
        return y

    @peer_predict_options
    def predict(self, X: MatrixLike,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Predict regression targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : (int, int) or None, default=None
            Only the rounds ``begin <= round < end`` (0-based) on top of the
            baseline: ``(0, i)`` equals the ``i``-th staged prediction,
            ``(0, best_iteration_)`` the best round's; None: every round.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        raw = self._raw_predict(X, iteration_range)
        return self.booster_.loss.inverse_link(raw)

    def _round_view(self, raw):
        return RegressionRound(raw, self.booster_.loss.inverse_link)

    def staged_predict(self, X: MatrixLike) -> Iterator[np.ndarray]:
        """Predictions after each boosting round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        for raw in self._staged_raw_predict(X):
            yield self.booster_.loss.inverse_link(raw)
