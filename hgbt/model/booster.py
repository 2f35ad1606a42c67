"""The fitted model as one object: :class:`Booster`.

A Booster holds everything prediction, inspection, persistence and export
read: the trees (one list per round, one tree per output), the baseline, the
bin boundaries, how the user's columns become the trees' input (categorical
encodings, target statistics of pooled features), the loss (for its inverse
link), feature names and the class labels. The estimators hold one as
``booster_``; nothing outside this layer reads their private attributes.

What the trees index (the "internal" features): the user's features, then
one column per pooled categorical feature (one per class of a multiclass
target) holding its category's target statistic (``data/target_stats.py``).
Importances and contributions report such a column as its feature.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Tags, TargetTags
from sklearn.utils.validation import check_is_fitted

from ..core._openmp import effective_n_threads
from ..core._types import SIZE_DTYPE, X_DTYPE, Y_DTYPE
from ..data import target_stats as _target_stats
from ..data.binning import BinMapper
from ..data.categorical import CategoricalEncoding, pooled_features, validate_X
from ..data.dataset import Dataset, MatrixLike
from ..data.sparse import ACCEPTED_FORMATS, as_csr, check_sparse_format
from ..engine.base_loss import BaseLoss
from ..engine.losses import get_loss
from ..tree.predictor import ForestPredictor, TreePredictor
from .explain import contributions, interactions, leaves
from .tables import dump_text, importance_frame, trees_frame

if TYPE_CHECKING:
    import pandas as pd

    from ..estimators.gradient_boosting import BaseHistGBDT

#: inputs of this many rows check that the packed forest holds the current
#: tree objects (a tree replaced after fit is seen); smaller ones skip the
#: O(n_trees) check for latency
FOREST_CHECK_ROWS = 256
_PLAIN_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def check_iteration_range(iteration_range: tuple[int, int] | None,
                          n_iter: int) -> tuple[int, int]:
    """``(begin, end)`` rounds to predict with, checked (None: every round)."""
    if iteration_range is None:
        return 0, n_iter
    try:
        begin, end = iteration_range
    except (TypeError, ValueError):
        raise ValueError(f"iteration_range must be (begin, end), got "
                         f"{iteration_range!r}.") from None
    if not (isinstance(begin, Integral) and isinstance(end, Integral)
            and 0 <= begin <= end <= n_iter):
        raise ValueError(f"iteration_range={iteration_range!r} must hold integers with "
                         f"0 <= begin <= end <= n_iter_={n_iter}.")
    return int(begin), int(end)


class Booster:
    """A fitted gradient-boosted tree model.

    Built by the estimators' ``fit`` (``estimator.booster_``) and by
    :func:`hgbt.train`; a loaded model file's estimator holds one
    (``hgbt.load_model(path).booster_``). Its predictions are those of the
    estimator that holds it, bit for bit. The user's methods: ``predict``,
    ``predict_contributions``, ``predict_interactions``, ``apply``,
    ``feature_importance``, ``trees_to_dataframe``, ``dump_trees``,
    ``feature_importance_table``; ``prepare`` converts input as the model
    reads it. The others serve hgbt's own layers (fit, persistence).

    Parameters
    ----------
    n_features_in : int
        Features of the input (the user's columns).
    objective : dict
        The keyword arguments of :func:`hgbt.engine.losses.get_loss` that
        build the fit's loss (``loss`` and its own parameters, ``n_classes``
        for classification); only its inverse link is used here.
    bin_mapper : BinMapper
        The bin boundaries of the features the trees index.
    baseline : ndarray of float64 of shape (n_trees_per_iteration,)
        The raw score before any tree.
    trees : list of list of TreePredictor, default=None
        Per round, one tree per output (empty: no round).
    feature_names_in : ndarray of str or None, default=None
    categorical : CategoricalEncoding or None, default=None
        How categorical columns become codes (``data/categorical.py``).
    target_stats : dict or None, default=None
        The target statistics of the pooled categorical features.
    classes : ndarray or None, default=None
        The class labels of a classifier (index = class of the raw scores).

    Attributes
    ----------
    trees : list of list of TreePredictor
        One list per round of ``n_trees_per_iteration`` trees. A tree's
        ``nodes`` is a structured array (``doc/model-format.md``).
    baseline : ndarray of float64
    n_iter, n_trees_per_iteration : int
        Rounds, and trees per round.
    n_features_in_, feature_names_in_
        As the estimators' attributes of those names (scikit-learn's names:
        input is checked against them as against an estimator).
    classes : ndarray or None
        The class labels of a classifier.
    objective : dict
        The loss (:func:`hgbt.engine.losses.get_loss`'s arguments); ``loss``
        is the loss object, whose inverse link maps raw scores to predictions.
    bin_mapper : BinMapper
        The bin boundaries of the features the trees index.
    categorical : CategoricalEncoding or None
        How categorical columns become codes.
    target_stats : dict or None
        The target statistics of the pooled categorical features.
    best_iteration : int or None
        The best round early stopping saw (``hgbt.train``; None otherwise).
    evals_result : dict or None
        The scores per set and metric of ``hgbt.train`` (entry ``i`` after
        ``i`` rounds).
    """

    def __init__(self, *, n_features_in: int, objective: dict[str, Any],
                 bin_mapper: BinMapper, baseline: np.ndarray,
                 trees: list[list[TreePredictor]] | None = None,
                 feature_names_in: np.ndarray | None = None,
                 categorical: CategoricalEncoding | None = None,
                 target_stats: dict | None = None,
                 classes: np.ndarray | None = None) -> None:
        self.n_features_in_ = int(n_features_in)
        self.feature_names_in_ = feature_names_in
        self.categorical = categorical
        self.target_stats = target_stats
        self.objective = dict(objective)
        self.classes = classes
        self.bin_mapper = bin_mapper
        self.baseline = baseline
        self.trees = [] if trees is None else trees
        self.best_iteration: int | None = None
        self.evals_result: dict[str, dict[str, list[float]]] | None = None
        self._forest_cache: tuple[list, int, ForestPredictor] | None = None
        self._loss: BaseLoss | None = None

    # ------------------------------------------------------------ derived
    @property
    def n_iter(self) -> int:
        """Rounds of trees."""
        return len(self.trees)

    @property
    def n_trees_per_iteration(self) -> int:
        """Trees per round: 1, or the number of classes above two."""
        return len(self.baseline)

    @property
    def loss(self) -> BaseLoss:
        """The fit's loss (its ``inverse_link`` and ``link`` name)."""
        if self._loss is None:
            self._loss = get_loss(**self.objective)
        return self._loss

    @property
    def pooled_features(self) -> list[int]:
        """Indices of the pooled categorical features (more than 255 categories)."""
        return pooled_features(self.categorical)

    @property
    def n_internal(self) -> int:
        """Features the trees index: the user's, then the target statistics."""
        stats = self.target_stats
        return self.n_features_in_ + (0 if stats is None else _target_stats.n_columns(stats))

    def fold_internal(self, values: np.ndarray, axis: int) -> np.ndarray:
        """``values`` with the target-statistic entries along ``axis`` added to
        their source features (as importances and contributions are reported)."""
        if self.target_stats is None:
            return values
        return _target_stats.fold(values, self.target_stats, self.n_features_in_, axis)

    def continued(self, objective: dict[str, Any] | None = None) -> Booster:
        """A copy that a warm start extends: the same trees in a new list (an
        interrupted fit keeps this Booster as it was), with the loss of
        ``objective`` if given (the rounds it adds are fitted with it)."""
        return Booster(n_features_in=self.n_features_in_,
                       feature_names_in=self.feature_names_in_, categorical=self.categorical,
                       target_stats=self.target_stats,
                       objective=self.objective if objective is None else objective,
                       classes=self.classes, bin_mapper=self.bin_mapper,
                       baseline=self.baseline, trees=list(self.trees))

    def __sklearn_tags__(self):
        # scikit-learn's validate_data checks input against a Booster as
        # against an estimator: feature names and counts
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_forest_cache"] = None  # rebuilt on demand
        state["_loss"] = None
        return state

    # -------------------------------------------------------------- input
    def prepare(self, X: MatrixLike, *, positions: bool = False,
                checker: BaseHistGBDT | Booster | None = None) -> np.ndarray | sp.csr_matrix:
        """``X`` validated and converted as the trees read it.

        Categorical columns become codes, sparse input canonical CSR, and a
        pooled feature's column its bins followed by the target-statistic
        columns; with ``positions``, pooled features hold their categories'
        positions and no statistics are added (what a fit encodes).
        ``checker`` is the object whose feature names and count are checked
        (and named in errors): the estimator, or this Booster.
        """
        if isinstance(X, Dataset):
            raise TypeError("Prediction takes rows (an array, DataFrame or sparse matrix), "
                            "not an hgbt.Dataset: pass the rows the Dataset was built from.")
        check_sparse_format(X)
        X, _ = validate_X(self if checker is None else checker, X, self.categorical,
                          positions=True, dtype=[X_DTYPE, np.float32],
                          ensure_all_finite=False, accept_sparse=ACCEPTED_FORMATS,
                          accept_large_sparse=True)
        if sp.issparse(X):
            return as_csr(X)
        return X if positions else self.pooled_input(X)

    def pooled_input(self, X: np.ndarray | sp.csr_matrix) -> np.ndarray | sp.csr_matrix:
        """Validated ``X`` (pooled features as positions) as the trees read
        it: pooled features as their bins, followed by the target-statistic
        columns. Other input is returned as is."""
        pooled = self.pooled_features
        if not pooled:
            return X
        stats = self.target_stats
        if stats is None:  # a model saved before target statistics: bins only
            return _target_stats.with_columns(X, pooled, np.empty((X.shape[0], 0)))
        return _target_stats.with_columns(X, stats["features"],
                                          _target_stats.transform(stats, X))

    def user_codes(self, X: np.ndarray) -> np.ndarray:
        """Validated rows (pooled features as positions) as ``predict`` takes
        them in an array: integer-coded pooled features back to their codes."""
        encoding = self.categorical
        pooled = [f for f in self.pooled_features if not encoding.by_value[f]]
        if not pooled:
            return X
        X = np.array(X)
        for f in pooled:
            known = ~np.isnan(X[:, f])
            X[known, f] = encoding.categories[f][X[known, f].astype(np.intp)]
        return X

    def is_plain_array(self, X: object) -> bool:
        """X needs no validation: a 2-D float array of the fitted width, fitted
        on an array (no feature names to check) without pooled categorical
        features. The lean path of small predictions."""
        return (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] > 0
                and X.dtype in _PLAIN_DTYPES and X.shape[1] == self.n_features_in_
                and self.feature_names_in_ is None
                and not self.pooled_features)  # codes -> bins

    # ------------------------------------------------------------ forests
    def pack(self) -> None:
        """Pack the trees for prediction (after fit or loading): prediction
        itself never changes the Booster."""
        self._forest_cache = (self.trees, len(self.trees), ForestPredictor(self.trees))

    def forest(self, check_trees: bool = False,
               iteration_range: tuple[int, int] | None = None) -> ForestPredictor:
        """Every tree in one ForestPredictor (packed anew if the trees changed;
        with ``check_trees``, also if a round holds other tree objects), or
        the trees of the rounds ``begin <= round < end`` of ``iteration_range``."""
        if iteration_range is not None:
            begin, end = check_iteration_range(iteration_range, len(self.trees))
            return ForestPredictor(self.trees[begin:end])
        cache = self._forest_cache
        # the list itself (not its id) is kept, so a new list is always noticed
        if (cache is None or cache[0] is not self.trees or cache[1] != len(self.trees)
                or (check_trees and not cache[2].holds(self.trees))):
            return ForestPredictor(self.trees)
        return cache[2]

    # --------------------------------------------------------- prediction
    def _start(self, n_rows):
        out = np.empty((len(self.baseline), n_rows), dtype=Y_DTYPE)
        out[:] = self.baseline[:, None]
        return out

    def raw_predict_prepared(self, X: np.ndarray | sp.csr_matrix,
                             iteration_range: tuple[int, int] | None = None,
                             n_threads: int = 1) -> np.ndarray:
        """Raw scores, shape (n_trees_per_iteration, n_samples), of rows as
        :meth:`prepare` returns them: the baseline plus every tree (or those
        of the rounds of ``iteration_range``)."""
        if iteration_range is None:
            forest = self.forest(check_trees=X.shape[0] >= FOREST_CHECK_ROWS)
        else:
            forest = self.forest(iteration_range=iteration_range)
        return forest.predict_add(X, self._start(X.shape[0]), n_threads)

    def staged_raw_predict_prepared(self, X: np.ndarray | sp.csr_matrix,
                                    n_threads: int = 1) -> Iterator[np.ndarray]:
        """Raw scores after each round (as :meth:`raw_predict_prepared`)."""
        raw = self._start(X.shape[0])
        for trees in self.trees:
            for k, tree in enumerate(trees):
                tree.predict_add(X, raw[k], n_threads)
            yield raw.copy()

    def raw_from_trees(self, out: np.ndarray, X: np.ndarray | sp.csr_matrix | None = None,
                       X_binned: np.ndarray | None = None, n_threads: int = 1) -> np.ndarray:
        """``out`` set to the baseline plus every tree, on raw ``X`` or on the
        training bins (a warm start's earlier rounds; the same routing:
        ``x <= threshold[b]`` exactly when ``bin(x) <= b``)."""
        out[:] = self.baseline[:, None]
        all_rows = None
        for trees in self.trees:
            for k, tree in enumerate(trees):
                if X_binned is not None:
                    if all_rows is None:
                        all_rows = np.arange(X_binned.shape[0], dtype=SIZE_DTYPE)
                    tree.predict_binned_add(X_binned, all_rows, self.bin_mapper.missing_bin,
                                            out[k], n_threads)
                else:
                    tree.predict_add(X, out[k], n_threads)
        return out

    def predict(self, X: MatrixLike, *, raw_score: bool = False,
                iteration_range: tuple[int, int] | None = None,
                n_threads: int | None = None) -> np.ndarray:
        """Predictions for ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            As the estimator's ``predict`` takes it.
        raw_score : bool, default=False
            The raw scores (before the inverse link) instead.
        iteration_range : (begin, end) or None, default=None
            Only the rounds ``begin <= round < end`` on top of the baseline.
        n_threads : int or None, default=None
            None: every core this process may use.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Regression: the predicted mean (or quantile); binary
            classification: the positive class's probability; multiclass:
            every class's probability. With ``raw_score``, one column per
            tree of a round (a single one flattened).
        """
        raw = self.raw_predict_prepared(self.prepare(X), iteration_range,
                                        effective_n_threads(n_threads))
        if raw_score:
            return raw[0] if raw.shape[0] == 1 else raw.T.copy()
        out = self.loss.inverse_link(raw)
        if out.ndim == 2 and out.shape[1] == 2 and len(self.baseline) == 1:
            return out[:, 1].copy()  # binary: the positive class
        return out

    # --------------------------------------------------------- importance
    def feature_importance(self, importance_type: str = "gain") -> np.ndarray:
        """Per user feature: the total split gain (``'gain'``) or the number
        of splits (``'split'``) over all trees, unnormalised; a target
        statistic counts for its feature.

        Returns
        -------
        ndarray of float64 of shape (``n_features_in_``,)
        """
        if importance_type not in ("gain", "split"):
            raise ValueError(f"importance_type must be 'gain' or 'split', got "
                             f"{importance_type!r}.")
        n_internal = self.n_internal
        totals = np.zeros(n_internal)
        for tree in itertools.chain.from_iterable(self.trees):
            split = tree.nodes[tree.nodes["is_leaf"] == 0]
            totals += np.bincount(split["feature_idx"], minlength=n_internal,
                                  weights=split["gain"] if importance_type == "gain"
                                  else None)
        return self.fold_internal(totals, 0)

    # -------------------------------------------------------- inspection
    def predict_contributions(self, X: MatrixLike, *,
                              iteration_range: tuple[int, int] | None = None,
                              n_threads: int | None = None) -> np.ndarray:
        """Exact TreeSHAP contributions of each feature to the raw score
        (as the estimators' ``predict_contributions``).

        Returns
        -------
        ndarray of shape (n_samples, n_features + 1) or \
(n_samples, n_classes, n_features + 1)
            The last column is the expected value; rows sum to the raw score.
        """
        return contributions(self, self.prepare(X), iteration_range,
                             effective_n_threads(n_threads))

    def predict_interactions(self, X: MatrixLike, *,
                             iteration_range: tuple[int, int] | None = None,
                             n_threads: int | None = None) -> np.ndarray:
        """SHAP interaction values of each pair of features on the raw score
        (as the estimators' ``predict_interactions``).

        Returns
        -------
        ndarray of shape (n_samples, n_features + 1, n_features + 1) or \
(n_samples, n_classes, n_features + 1, n_features + 1)
        """
        return interactions(self, self.prepare(X), iteration_range,
                            effective_n_threads(n_threads))

    def apply(self, X: MatrixLike, *, iteration_range: tuple[int, int] | None = None,
              n_threads: int | None = None) -> np.ndarray:
        """The leaf each row reaches in each tree.

        Returns
        -------
        ndarray of int32 of shape (n_samples, n_rounds, n_trees_per_iteration)
            The leaf's index in its tree's node array; ``[i, r, k]`` is the
            tree of output ``k`` in round ``r`` (of ``iteration_range``).
        """
        return leaves(self, self.prepare(X), iteration_range, effective_n_threads(n_threads))

    def trees_to_dataframe(self) -> pd.DataFrame:
        """Every node of every tree as a pandas DataFrame (columns as the
        estimators' ``trees_to_dataframe``)."""
        return trees_frame(self)

    def dump_trees(self) -> str:
        """The trees as readable text, one indented line per node."""
        return dump_text(trees_frame(self))

    def feature_importance_table(self) -> pd.DataFrame:
        """Splits, gain, cover and row count per feature, as totals and means
        per split (a pandas DataFrame, as the estimators')."""
        return importance_frame(self)


def fitted_booster(model: BaseHistGBDT | Booster) -> tuple[Booster, int]:
    """``(booster, n_threads)``: a Booster as it is (every core), or a fitted
    estimator's ``booster_`` with the estimator's ``n_threads``.

    Raises
    ------
    NotFittedError
        If ``model`` is an estimator that is not fitted.
    """
    if isinstance(model, Booster):
        return model, effective_n_threads(None)
    check_is_fitted(model)
    return model.booster_, effective_n_threads(model.n_threads)


#: the estimator parameters that define the loss (:func:`get_loss`'s arguments)
LOSS_PARAMS = ("loss", "huber_delta", "quantile", "tweedie_power",
               "lambdarank_truncation_level", "lambdarank_norm", "label_gain", "sigmoid",
               "aft_distribution", "aft_sigma")


def objective_from_params(params: dict[str, Any],
                          classes: np.ndarray | None = None) -> dict[str, Any]:
    """The ``objective`` of a Booster from an estimator's parameters (and the
    class labels of a classifier)."""
    objective = {name: params[name] for name in LOSS_PARAMS if name in params}
    if objective.get("label_gain") is not None:  # a model file holds a list
        objective["label_gain"] = [float(g) for g in np.ravel(objective["label_gain"])]
    if classes is not None:
        objective["n_classes"] = len(classes)
    return objective
