"""How a fit turns raw rows into training rows, for code outside the estimator.

``hgbt.dask``'s shards validate, convert and encode their rows as the local
``fit`` does: :class:`FitInputs` gives them that, without the estimator's
private methods.
"""
import numpy as np
from sklearn.utils.validation import check_X_y

from ..core._types import Y_DTYPE


class FitInputs:
    """Input validation and conversion, target encoding, class weights and
    the loss of a fit, as the estimator's own ``fit`` applies them.

    Built by the estimator (``BaseHistGBDT._fit_inputs``) once its input
    schema (features, names, categorical columns) and, for a classifier,
    its classes and class weights are set. It holds a copy of the
    estimator without trees, so it pickles to Dask workers.

    Parameters
    ----------
    estimator : HistGBDTRegressor or HistGBDTClassifier
        The fit's schema, read only.

    Attributes
    ----------
    n_features : int
        Features of the fit.
    is_categorical : ndarray of bool or None
        Categorical features; None when there are none.
    stratify : bool
        Whether targets are class labels (counted to find the classes, and
        not required to be numeric).
    """

    def __init__(self, estimator):
        self._estimator = estimator
        self.n_features = estimator.n_features_in_
        self.is_categorical = estimator.is_categorical_
        self.stratify = estimator._stratify

    def validate_X(self, X):
        """``X`` validated and converted as the fitted estimator's ``predict``
        converts it (DataFrame categories → codes; a float array)."""
        return self._estimator._validate_X(X, reset=False)

    def check_X_y(self, X, y):
        """The local ``fit``'s checks of validated rows and their targets
        (dtype, finite numeric regression targets); no rows is fine."""
        return check_X_y(X, y, dtype=np.float64, ensure_all_finite=False,
                         ensure_min_samples=0, y_numeric=not self.stratify,
                         estimator=self._estimator)

    def encode_y(self, y):
        """Targets as the fit encodes them (labels → class indices), float64."""
        if y.shape[0] == 0:
            return np.empty(0, dtype=Y_DTYPE)
        return np.ascontiguousarray(self._estimator._encode_y(y, reset=False), dtype=Y_DTYPE)

    def class_weighted(self, sample_weight, y_encoded):
        """``sample_weight`` (or None) times the class weights of the rows."""
        return self._estimator._class_weighted(sample_weight, y_encoded)

    def make_loss(self, sample_weight):
        """The fit's loss over rows weighted by ``sample_weight``."""
        return self._estimator._make_loss(sample_weight)
