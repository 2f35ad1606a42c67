"""The estimators: validation, binning, the boosting loop, prediction."""
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._openmp import effective_n_threads
from ._types import X_DTYPE, Y_DTYPE
from .binning import BinMapper
from .grower import TreeGrower
from .losses import SquaredError
from .training_data import LocalTrainingData


class BaseHistGBDT(BaseEstimator):
    """Shared fit/predict machinery of the hgbt estimators."""

    _parameter_constraints = {
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_gain_to_split": [Interval(Real, 0, None, closed="left")],
        "l2_regularization": [Interval(Real, 0, None, closed="left")],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "grow_policy": [StrOptions({"lossguide", "depthwise"})],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, learning_rate, max_iter, max_leaf_nodes, max_depth,
                 min_samples_leaf, min_child_weight, min_gain_to_split,
                 l2_regularization, max_bins, grow_policy, n_threads, random_state,
                 verbose):
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.min_child_weight = min_child_weight
        self.min_gain_to_split = min_gain_to_split
        self.l2_regularization = l2_regularization
        self.max_bins = max_bins
        self.grow_policy = grow_policy
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _validate_X(self, X, reset):
        # ±inf are ordinary values and NaN is missing: no finiteness check on X.
        return validate_data(self, X, reset=reset, dtype=[X_DTYPE, np.float32],
                             ensure_all_finite=False)

    def fit(self, X, y, sample_weight=None):
        """Fit the gradient-boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. NaN marks a missing value; ±inf are allowed.
        y : array-like of shape (n_samples,)
            Targets; must be finite.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        X = self._validate_X(X, reset=True)
        X, y = validate_data(self, X, y, reset=False, dtype=None,
                             ensure_all_finite=False, y_numeric=True)
        y = np.ascontiguousarray(y, dtype=Y_DTYPE)
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity.")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
            sample_weight = np.ascontiguousarray(sample_weight)
        n_threads = effective_n_threads(self.n_threads)
        rng = check_random_state(self.random_state)
        start = time.perf_counter()

        self._bin_mapper = BinMapper(
            max_bins=self.max_bins, random_state=rng.randint(np.iinfo(np.int32).max),
            n_threads=n_threads).fit(X)
        X_binned = self._bin_mapper.transform(X)
        self._loss = SquaredError(sample_weight)
        self._baseline_prediction = self._loss.baseline(y)
        raw_prediction = np.full(X.shape[0], self._baseline_prediction, dtype=Y_DTYPE)
        gradients, hessians = self._loss.allocate(X.shape[0])
        data = LocalTrainingData(X_binned, self._bin_mapper.max_bins + 1, n_threads)
        self._predictors = []
        for iteration in range(self.max_iter):
            self._loss.gradients(y, raw_prediction, gradients, hessians, n_threads)
            data.start_tree(gradients, hessians)
            grower = TreeGrower(
                data, self._bin_mapper.bin_thresholds_,
                self._bin_mapper.n_bins_non_missing_, grow_policy=self.grow_policy,
                max_leaf_nodes=self.max_leaf_nodes, max_depth=self.max_depth,
                min_samples_leaf=self.min_samples_leaf,
                min_child_weight=self.min_child_weight,
                min_gain_to_split=self.min_gain_to_split,
                l2_regularization=self.l2_regularization,
                learning_rate=self.learning_rate, n_threads=n_threads)
            predictor = grower.grow()
            leaf_ids = grower.leaf_ids()
            data.add_leaf_values(raw_prediction, leaf_ids,
                                 predictor.nodes["value"][leaf_ids])
            self._predictors.append(predictor)
            if self.verbose:
                print(f"[{iteration + 1}] train loss: "
                      f"{self._loss.loss(y, raw_prediction):.6g}, "
                      f"leaves: {predictor.n_leaves}, "
                      f"elapsed: {time.perf_counter() - start:.3f}s")
        self.n_iter_ = len(self._predictors)
        return self

    def _raw_predict(self, X):
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        n_threads = effective_n_threads(self.n_threads)
        raw = np.full(X.shape[0], self._baseline_prediction, dtype=Y_DTYPE)
        for predictor in self._predictors:
            predictor.predict_add(X, raw, n_threads)
        return raw


class HistGBDTRegressor(RegressorMixin, BaseHistGBDT):
    """Histogram-based gradient-boosted trees for regression (squared error).

    Features are binned once into at most ``max_bins`` quantile bins (plus one
    for missing values); trees are grown on per-node gradient histograms with
    the subtraction trick. Missing values go to whichever side of each split
    gave the larger gain during training.

    Parameters
    ----------
    learning_rate : float, default=0.1
        Shrinkage applied to every leaf value.
    max_iter : int, default=100
        Number of boosting rounds (one tree each).
    max_leaf_nodes : int or None, default=31
        Maximum leaves per tree; None for no limit.
    max_depth : int or None, default=None
        Maximum depth of a tree (the root is depth 0); None for no limit.
    min_samples_leaf : int, default=20
        Minimum number of rows in a leaf.
    min_child_weight : float, default=1e-3
        Minimum sum of hessians in a leaf (rows' weights for squared error).
    min_gain_to_split : float, default=0.0
        Gain a split must exceed (γ; subtracted from every split's gain).
    l2_regularization : float, default=0.0
        L2 penalty λ on leaf values.
    max_bins : int, default=255
        Maximum value bins per feature (2 to 255); missing values get one more.
    grow_policy : {'lossguide', 'depthwise'}, default='lossguide'
        'lossguide' splits the leaf with the largest gain first; 'depthwise'
        grows level by level.
    n_threads : int or None, default=None
        OpenMP threads the kernels use; None means all available cores (as
        limited by ``OMP_NUM_THREADS`` or threadpoolctl).
    random_state : int, RandomState instance or None, default=None
        Seeds the row subsample used to compute bin thresholds.
    verbose : int, default=0
        Print one line per boosting round when positive.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit, when they are all strings.
    n_iter_ : int
        Number of boosting rounds fitted.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from hgbt import HistGBDTRegressor
    >>> X, y = make_regression(n_samples=500, random_state=0)
    >>> model = HistGBDTRegressor(max_iter=20).fit(X, y)
    >>> model.predict(X[:2]).shape
    (2,)
    """

    def __init__(self, *, learning_rate=0.1, max_iter=100, max_leaf_nodes=31,
                 max_depth=None, min_samples_leaf=20, min_child_weight=1e-3,
                 min_gain_to_split=0.0, l2_regularization=0.0, max_bins=255,
                 grow_policy="lossguide", n_threads=None, random_state=None,
                 verbose=0):
        super().__init__(
            learning_rate=learning_rate, max_iter=max_iter,
            max_leaf_nodes=max_leaf_nodes, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, min_child_weight=min_child_weight,
            min_gain_to_split=min_gain_to_split, l2_regularization=l2_regularization,
            max_bins=max_bins, grow_policy=grow_policy, n_threads=n_threads,
            random_state=random_state, verbose=verbose)

    def predict(self, X):
        """Predict regression targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._raw_predict(X)
