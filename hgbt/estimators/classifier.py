"""HistGBDTClassifier: gradient-boosted trees for binary and multiclass labels."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets

from ..core.params import CLASSIFIER, constraints, make_init
from ..data.dataset import MatrixLike
from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC
from .fit_inputs import class_weighted, encode_labels
from .gradient_boosting import BaseHistGBDT, peer_predict_options, y_columns
from .monitoring import ClassificationRound
from ..model.booster import objective_from_params
from ..persistence import register_estimator


def _check_labels(y):
    """Labels NumPy can sort: no missing label among objects (sorting None
    against strings is a TypeError), one kind of label."""
    y = np.asarray(y)
    if y.dtype != object:
        return
    missing, kinds = [], set()
    for i, v in enumerate(y):  # one pass over the Python objects
        if v is None or (isinstance(v, float) and v != v):
            missing.append(i)
        else:
            kinds.add("string" if isinstance(v, str) else "number" if isinstance(
                v, (int, float, np.number)) else type(v).__name__)
    if missing:
        raise ValueError(
            f"y holds {len(missing)} missing label(s) (None or NaN), the first at row "
            f"{missing[0]}: drop those rows, or give them a label of their own (e.g. "
            "'missing').")
    kinds = sorted(kinds)
    if len(kinds) > 1:
        raise ValueError(f"y mixes labels of several kinds ({', '.join(kinds)}): make "
                         "them all strings or all numbers.")


@register_estimator
class HistGBDTClassifier(ClassifierMixin, BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for classification.

    Binary targets grow one tree per round on the log-loss; K > 2 classes grow
    K trees per round on the multinomial log-loss (softmax). A 0/1 indicator
    matrix ``y`` of shape (n_samples, n_labels) is multi-label: a binary
    log-loss per label, one tree per label a round (or one tree for all with
    ``multi_strategy='multi_output_tree'``).

    Parameters
    ----------
    loss : {{'log_loss'}} or callable, default='log_loss'
        Binary or multinomial log-loss, chosen from the number of classes;
        or, for two classes, a callable ``loss(y_true, raw_prediction,
        sample_weight) -> (gradient, hessian)`` on the log-odds of
        ``classes_[1]`` (``y_true`` in {{0, 1}}): e.g. a focal loss.
        Probabilities are the sigmoid of the raw score; the fit starts
        where the gradients sum to zero. A callable cannot be saved with
        ``save_model`` (pickle it).
    class_weight : dict, 'balanced' or None, default=None
        Weights per class label, multiplied into ``sample_weight``;
        'balanced' weights classes inversely to their frequency in ``y``.
        Not with multi-label ``y``.
    multi_strategy : {{'one_output_per_tree', 'multi_output_tree'}}, default='one_output_per_tree'
        Multi-label ``y``: grow a tree per label each round (each label's trees
        those of its binary model alone), or one tree whose leaves hold a value
        per label, its splits chosen on the gain summed over the labels
        (XGBoost's name; faster per round; no categorical features,
        constraints, quantized gradients, GOSS or per-node column sampling).
{COMMON_PARAMETERS_DOC}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (multi-label: ``[0, 1]``, each label's).
    n_outputs_ : int
        Multi-label only: the number of labels (columns of ``y``).
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

    _parameter_constraints = constraints(CLASSIFIER)
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = make_init(CLASSIFIER)
    _stratify = True
    _multi_output = True  # y may be a multi-label indicator matrix

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _multilabel(self):
        return y_columns(self) > 1

    def _encode_y(self, y, reset):
        if sp.issparse(y):  # a sparse indicator matrix (MultiLabelBinarizer's)
            y = y.toarray()
        y = np.asarray(y) if not hasattr(y, "iloc") else y
        if getattr(y, "ndim", 1) == 2 and y.shape[1] == 1:
            y = np.asarray(y)[:, 0]  # one column: one label
        if getattr(y, "ndim", 1) == 2:
            return self._encode_labels(np.asarray(y), reset)
        if reset:
            self.__dict__.pop("n_outputs_", None)
        elif self._multilabel():
            raise ValueError(f"y has one column; the model was fitted on "
                             f"{self.n_outputs_} labels.")
        _check_labels(y)  # before scikit-learn's check, which sorts them
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

    def _encode_labels(self, y, reset):
        """A multi-label indicator matrix, checked, as float64."""
        if y.ndim != 2 or y.shape[1] == 0 or y.dtype.kind not in "biuf" or not np.all(
                (y == 0) | (y == 1)):
            raise ValueError(
                f"A 2-D y is multi-label: it must be a 0/1 indicator matrix of shape "
                f"(n_samples, n_labels), got shape {y.shape} of {y.dtype}; for classes "
                "use a 1-D y.")
        if reset:
            if self.class_weight is not None:
                raise ValueError("class_weight does not apply to multi-label y: weight "
                                 "rows with sample_weight.")
            if self._custom_loss():
                raise ValueError("a callable loss takes one label (a 1-D y).")
            self.classes_ = np.array([0, 1])
            self.n_outputs_ = y.shape[1]
            self._class_weights = None
        elif y.shape[1] != y_columns(self):
            raise ValueError(f"y has {y.shape[1]} labels; the model was fitted on "
                             f"{y_columns(self)}.")
        return np.ascontiguousarray(y, dtype=np.float64)

    def _decode(self, y_encoded):
        if y_encoded.ndim == 2:
            return y_encoded.astype(np.int64)
        return self.classes_[y_encoded.astype(np.intp)]

    def _class_weighted(self, sample_weight, y_encoded):
        # a Booster saved alone (hgbt.save_model) holds no class weights
        return class_weighted(getattr(self, "_class_weights", None), sample_weight, y_encoded)

    def _objective(self):
        objective = objective_from_params(self.get_params(deep=False), self.classes_)
        if self._multilabel():
            objective["n_outputs"] = self.n_outputs_
        return objective

    @peer_predict_options
    def decision_function(self, X: MatrixLike,
                          iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
        scores : ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_labels)
        """
        return self._shape_decision(self._raw_predict(X, iteration_range))

    @peer_predict_options
    def predict_proba(self, X: MatrixLike,
                      iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
            Multi-label: (n_samples, n_labels), each label's probability of 1.
        """
        raw = self._raw_predict(X, iteration_range)
        return self.booster_.loss.inverse_link(raw)

    @peer_predict_options
    def predict(self, X: MatrixLike,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
            Multi-label: (n_samples, n_labels) of 0/1, 1 where the label's
            probability is above 0.5.
        """
        if self._multilabel():
            return _labels(self._raw_predict(X, iteration_range))
        proba = self.predict_proba(X, iteration_range)
        return self.classes_[np.argmax(proba, axis=1)]

    def _round_view(self, raw):
        return ClassificationRound(raw, self.booster_.loss.inverse_link, self.classes_,
                                   self._multilabel())

    def _shape_decision(self, raw):
        return raw[0] if raw.shape[0] == 1 else raw.T.copy()

    def staged_decision_function(self, X: MatrixLike) -> Iterator[np.ndarray]:
        """Raw scores after each boosting round (see :meth:`decision_function`)."""
        for raw in self._staged_raw_predict(X):
            yield self._shape_decision(raw)

    def staged_predict_proba(self, X: MatrixLike) -> Iterator[np.ndarray]:
        """Class probabilities after each boosting round."""
        check_is_fitted(self)
        for raw in self._staged_raw_predict(X):
            yield self.booster_.loss.inverse_link(raw)

    def staged_predict(self, X: MatrixLike) -> Iterator[np.ndarray]:
        """Predicted classes after each boosting round."""
        if self._multilabel():
            for raw in self._staged_raw_predict(X):
                yield _labels(raw)
            return
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]


def _labels(raw):
    """Multi-label predictions from raw scores (n_labels, n_samples): 1 where a
    label's log-odds are positive (its probability above 0.5)."""
    return (raw > 0).T.astype(np.int64)
