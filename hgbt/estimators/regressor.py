"""HistGBDTRegressor: gradient-boosted trees for regression."""
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted
from sklearn.utils._param_validation import Interval, StrOptions

from ..core._types import Y_DTYPE
from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC
from .gradient_boosting import BaseHistGBDT
from .monitoring import RegressionRound
from ..model.booster import objective_from_params
from ..persistence import register_estimator

REGRESSION_LOSSES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
                     "gamma", "tweedie")


@register_estimator
class HistGBDTRegressor(RegressorMixin, BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for regression.

    Features are binned once into at most ``max_bins`` quantile bins (plus one
    for missing values); trees are grown on per-node gradient histograms with
    the subtraction trick. Missing values go to whichever side of each split
    gave the larger gain during training.

    Parameters
    ----------
    loss : str or callable, default='squared_error'
        'squared_error', 'absolute_error', 'huber', 'quantile', 'poisson',
        'gamma' or 'tweedie', or a callable ``loss(y_true, raw_prediction,
        sample_weight) -> (gradient, hessian)`` returning two arrays of shape
        (n_samples,) (``sample_weight`` may be None); with a callable, the
        baseline is 0 and predictions are the raw sums.
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

    _parameter_constraints = {
        **BaseHistGBDT._parameter_constraints,
        "loss": [StrOptions(set(REGRESSION_LOSSES)), callable],
        "quantile": [Interval(Real, 0, 1, closed="neither"), None],
        "huber_delta": [Interval(Real, 0, None, closed="neither"), None],
        "tweedie_power": [Interval(Real, 1, 2, closed="both")],
    }
    _stratify = False

    def __init__(self, loss="squared_error", *, quantile=None, huber_delta=None,
                 tweedie_power=1.5, learning_rate=0.15, max_iter=150, max_leaf_nodes="auto",
                 max_depth=None, min_samples_leaf=20, min_child_weight=1e-3,
                 min_gain_to_split=0.0, l1_regularization=0.0, l2_regularization="auto",
                 max_bins=255, enable_bundle=True,
                 max_conflict_rate=0.0, use_quantized_grad=False,
                 num_grad_quant_bins=32, grow_policy="lossguide", early_stopping="auto",
                 scoring="loss", eval_metric=None, early_stopping_set=None,
                 truncate_at_best=False, validation_fraction=0.1, n_iter_no_change=8, tol=1e-7,
                 warm_start=False, subsample=1.0, data_sample_strategy="bagging",
                 goss_top_rate=0.2, goss_other_rate=0.1, colsample_bytree=1.0,
                 colsample_bynode=1.0, categorical_features="from_dtype",
                 max_cat_to_onehot=4, cat_smooth=50.0, cat_l2=10.0, min_data_per_group=100,
                 max_cat_threshold=8, monotonic_cst=None,
                 interaction_cst=None, importance_type="gain", n_threads=None,
                 random_state=None, verbose=0):
        self.loss = loss
        self.quantile = quantile
        self.huber_delta = huber_delta
        self.tweedie_power = tweedie_power
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.min_child_weight = min_child_weight
        self.min_gain_to_split = min_gain_to_split
        self.l1_regularization = l1_regularization
        self.l2_regularization = l2_regularization
        self.max_bins = max_bins
        self.enable_bundle = enable_bundle
        self.max_conflict_rate = max_conflict_rate
        self.use_quantized_grad = use_quantized_grad
        self.num_grad_quant_bins = num_grad_quant_bins
        self.grow_policy = grow_policy
        self.early_stopping = early_stopping
        self.scoring = scoring
        self.eval_metric = eval_metric
        self.early_stopping_set = early_stopping_set
        self.truncate_at_best = truncate_at_best
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.warm_start = warm_start
        self.subsample = subsample
        self.data_sample_strategy = data_sample_strategy
        self.goss_top_rate = goss_top_rate
        self.goss_other_rate = goss_other_rate
        self.colsample_bytree = colsample_bytree
        self.colsample_bynode = colsample_bynode
        self.categorical_features = categorical_features
        self.max_cat_to_onehot = max_cat_to_onehot
        self.cat_smooth = cat_smooth
        self.cat_l2 = cat_l2
        self.min_data_per_group = min_data_per_group
        self.max_cat_threshold = max_cat_threshold
        self.monotonic_cst = monotonic_cst
        self.interaction_cst = interaction_cst
        self.importance_type = importance_type
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    def _objective(self):
        if self.loss == "quantile" and self.quantile is None:
            raise ValueError("loss='quantile' needs the quantile parameter, e.g. "
                             "quantile=0.9.")
        return objective_from_params(self.get_params(deep=False))

    def _encode_y(self, y, reset):
        return np.ascontiguousarray(y, dtype=Y_DTYPE)

    def _decode(self, y):
        return y

    def predict(self, X, iteration_range=None):
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

    def staged_predict(self, X):
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
