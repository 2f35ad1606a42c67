"""HistGBDTClassifier: gradient-boosted trees for binary and multiclass labels."""
import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets

from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC
from .fit_inputs import class_weighted, encode_labels
from .gradient_boosting import BaseHistGBDT
from .monitoring import ClassificationRound
from ..model.booster import objective_from_params
from ..persistence import register_estimator


@register_estimator
class HistGBDTClassifier(ClassifierMixin, BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for classification.

    Binary targets grow one tree per round on the log-loss; K > 2 classes grow
    K trees per round on the multinomial log-loss (softmax).

    Parameters
    ----------
    loss : {{'log_loss'}}, default='log_loss'
        Binary or multinomial log-loss, chosen from the number of classes.
    class_weight : dict, 'balanced' or None, default=None
        Weights per class label, multiplied into ``sample_weight``;
        'balanced' weights classes inversely to their frequency in ``y``.
{COMMON_PARAMETERS_DOC}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
{COMMON_ATTRIBUTES_DOC}

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from hgbt import HistGBDTClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = HistGBDTClassifier(max_iter=20).fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints = {
        **BaseHistGBDT._parameter_constraints,
        "loss": [StrOptions({"log_loss"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }
    _stratify = True

    def __init__(self, loss="log_loss", *, class_weight=None, learning_rate=0.15,
                 max_iter=150, max_leaf_nodes="auto", max_depth=None, min_samples_leaf=20,
                 min_child_weight=1e-3, min_gain_to_split=0.0, l1_regularization=0.0,
                 l2_regularization="auto", max_bins=255, enable_bundle=True,
                 max_conflict_rate=0.0, use_quantized_grad=False,
                 num_grad_quant_bins=32, grow_policy="lossguide",
                 early_stopping="auto", scoring="loss", eval_metric=None,
                 early_stopping_set=None, truncate_at_best=False, validation_fraction=0.1,
                 n_iter_no_change=8, tol=1e-7, warm_start=False, subsample=1.0,
                 data_sample_strategy="bagging", goss_top_rate=0.2, goss_other_rate=0.1,
                 colsample_bytree=1.0, colsample_bynode=1.0,
                 categorical_features="from_dtype", max_cat_to_onehot=4, cat_smooth=50.0,
                 cat_l2=10.0, min_data_per_group=100, max_cat_threshold=8,
                 monotonic_cst=None, interaction_cst=None, importance_type="gain",
                 n_threads=None, random_state=None, verbose=0):
        self.loss = loss
        self.class_weight = class_weight
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

    def _encode_y(self, y, reset):
        check_classification_targets(y)
        if reset:
            self.classes_ = np.unique(y)
            if self.classes_.size < 2:
                raise ValueError(
                    f"y has only one class ({self.classes_[0]!r}); a classifier needs "
                    "at least two.")
            self._class_weights = None
            if self.class_weight is not None:
                self._class_weights = compute_class_weight(
                    self.class_weight, classes=self.classes_, y=y)
        return encode_labels(self.classes_, y)

    def _decode(self, y_encoded):
        return self.classes_[y_encoded.astype(np.intp)]

    def _class_weighted(self, sample_weight, y_encoded):
        return class_weighted(self._class_weights, sample_weight, y_encoded)

    def _objective(self):
        return objective_from_params(self.get_params(deep=False), self.classes_)

    def decision_function(self, X, iteration_range=None):
        """Raw scores (log-odds; per-class scores for multiclass).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : (int, int) or None, default=None
            Only the rounds ``begin <= round < end`` (0-based) on top of the
            baseline: ``(0, i)`` equals the ``i``-th staged prediction,
            ``(0, best_iteration_)`` the best round's; None: every round.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return self._shape_decision(self._raw_predict(X, iteration_range))

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : (int, int) or None, default=None
            Only the rounds ``begin <= round < end`` (0-based) on top of the
            baseline: ``(0, i)`` equals the ``i``-th staged prediction,
            ``(0, best_iteration_)`` the best round's; None: every round.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        raw = self._raw_predict(X, iteration_range)
        return self.booster_.loss.inverse_link(raw)

    def predict(self, X, iteration_range=None):
        """Most probable class of each row.

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
        proba = self.predict_proba(X, iteration_range)
        return self.classes_[np.argmax(proba, axis=1)]

    def _round_view(self, raw):
        return ClassificationRound(raw, self.booster_.loss.inverse_link, self.classes_)

    def _shape_decision(self, raw):
        return raw[0] if raw.shape[0] == 1 else raw.T.copy()

    def staged_decision_function(self, X):
        """Raw scores after each boosting round (see :meth:`decision_function`)."""
        for raw in self._staged_raw_predict(X):
            yield self._shape_decision(raw)

    def staged_predict_proba(self, X):
        """Class probabilities after each boosting round."""
        check_is_fitted(self)
        for raw in self._staged_raw_predict(X):
            yield self.booster_.loss.inverse_link(raw)

    def staged_predict(self, X):
        """Predicted classes after each boosting round."""
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]
