"""What the estimators share: validation, binning, the fit's settings for the
boosting loop (:mod:`hgbt.engine.boosting`), warm start, staged and raw
prediction. The fitted model is a :class:`~hgbt.model.booster.Booster`
(``booster_``)."""
from __future__ import annotations

import copy
import functools
import inspect
from dataclasses import replace
import os
import warnings
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import (_check_sample_weight, check_array, check_is_fitted,
                                      check_X_y)

from ..core._openmp import effective_n_threads
from ..core.load import ThreadGovernor
from ..core._types import X_DTYPE, Y_DTYPE
from ..core.params import AUTO_TREE_SIZES, TREE_PARAMS, unknown_parameter_message
from ..core.row_meta import RowMeta, check_qid
from ..data import target_stats
from ..data.dataset import BINNING_PARAMS, Dataset, MatrixLike, new_seed, plain_bins
from ..data.categorical import same_encoding, validate_X
from ..data.pages import PagedBins
from ..engine.boosting import TREE_SIZE, BoostSettings, FitRecord, boost
from ..engine.early_stopping import can_stratify, split_validation
from ..engine.evaluation import TRAIN, training_score_rows
from ..engine.interrupts import running_fit
from ..engine.losses import get_loss
from ..engine.numeric_range import check_fit_range
from ..engine.row_state import LocalData, RowState, ValidationRows
from ..tree.grower import TreeSettings
from ..tree.paged import OUT_OF_CORE_HINT
from .cv_rounds import plan_rounds
from .docstrings import FIT_DOC
from .explain import ExplainMixin
from .fit_inputs import (FitInputs, check_init_score, eval_init_scores, interaction_groups,
                         monotonic_constraints, same_rows, same_values)
from .sklearn_callbacks import (CallbackSupportMixin, SklearnRounds, managed,
                                uses_sklearn_callbacks)
from .monitoring import VALIDATION, Monitor, eval_sets, history_attributes, scored_rows
from ..model.booster import Booster, objective_from_params
from ..persistence import pickle_state, save_model, unpickle_state
from ..data.sparse import ACCEPTED_FORMATS, as_csr, check_sparse_format

# early_stopping='auto' turns on from this many rows (scikit-learn's: above
# 10,000): on 20 real tables (506-10,000 rows, and cut to 250 and 125) the
# defaults with a hold-out were within noise of the best library on 15-16 of
# 20, the same settings fitting every round on 0-9 (benchmarks/accuracy_study.md);
# below cv_rounds.AUTO_CV_MAX_ROWS rows it cross-validates the rounds instead.
AUTO_EARLY_STOPPING_ROWS = 100

#: LightGBM's and XGBoost's ``predict`` options, and hgbt's spelling of each
_PEER_PREDICT_OPTIONS = {
    "raw_score": "decision_function(X) (a classifier) or booster_.predict(X, "
                 "raw_score=True)",
    "output_margin": "decision_function(X) (a classifier) or booster_.predict(X, "
                     "raw_score=True)",
    "pred_contrib": "predict_contributions(X)",
    "pred_interactions": "predict_interactions(X)",
    "pred_leaf": "apply(X)",
    "num_iteration": "iteration_range=(0, num_iteration)",
    "start_iteration": "iteration_range=(start_iteration, end)",
    "ntree_limit": "iteration_range=(0, ntree_limit)",
}


def peer_predict_options(method):
    """``method`` (a predict method) refusing LightGBM's and XGBoost's predict
    options with hgbt's spelling, instead of Python's bare TypeError; the
    signature (what scikit-learn and type checkers read) is ``method``'s."""
    accepted = frozenset(inspect.signature(method).parameters)

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        unknown = [name for name in kwargs if name not in accepted]
        if unknown:
            name = unknown[0]
            use = _PEER_PREDICT_OPTIONS.get(name)
            raise TypeError(f"{type(self).__name__}.{method.__name__}() got an unexpected "
                            f"keyword argument {name!r}"
                            + (f" (a LightGBM or XGBoost option): use {use}." if use
                               else "."))
        return method(self, *args, **kwargs)
    return checked


#: the estimator ``fit`` returns: the one it was called on, of its own class
Estimator = TypeVar("Estimator", bound="BaseHistGBDT")


def y_columns(estimator):
    """The columns of the fitted ``y``: ``n_outputs_`` (multi-output
    regression, multi-label classification), else 1."""
    return getattr(estimator, "n_outputs_", 1)


class BaseHistGBDT(ExplainMixin, CallbackSupportMixin, BaseEstimator):
    """Shared fit/predict machinery of the hgbt estimators.

    Subclasses provide ``_encode_y(y)`` (validate and encode targets; set
    fitted label attributes), ``_objective()`` (the loss's
    :func:`~hgbt.engine.losses.get_loss` arguments) and ``_stratify``
    (stratified validation split).
    """

    #: y may have several columns (the regressor's multi-output fits)
    _multi_output = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.target_tags.required = True  # every hgbt estimator fits a target
        return tags

    # ---------------------------------------------------------------- input
    @property
    def is_categorical_(self) -> np.ndarray | None:
        """Categorical features (boolean mask), or None without any."""
        encoding = self.booster_.categorical
        return None if encoding is None else encoding.mask

    @property
    def categorical_categories_(self) -> list[np.ndarray | None] | None:
        """Per feature None, or the categories (codes) seen at fit."""
        encoding = self.booster_.categorical
        return None if encoding is None else encoding.categories

    def _validate_X(self, X):
        """``X`` of a prediction, validated and converted as the trees read it
        (:meth:`Booster.prepare <hgbt.model.booster.Booster.prepare>`; names
        and feature counts checked against this estimator)."""
        return self.booster_.prepare(X, checker=self)

    def _validate_fit_X(self, X, booster):
        """The training rows, validated (pooled features as positions), and
        the categorical encoding: the warm-started Booster's, or a new one
        from ``categorical_features``."""
        if booster is not None:
            return booster.prepare(X, positions=True, checker=self), booster.categorical
        # ±inf are ordinary values and NaN is missing: no finiteness check on X.
        # Sparse input stays sparse, as canonical CSR.
        check_sparse_format(X)
        X, encoding = validate_X(self, X, categorical_features=self.categorical_features,
                                 reset=True, positions=True, dtype=[X_DTYPE, np.float32],
                                 ensure_all_finite=False, accept_sparse=ACCEPTED_FORMATS,
                                 accept_large_sparse=True)
        return (as_csr(X) if sp.issparse(X) else X), encoding

    def _validate_weight(self, sample_weight, X):
        if sample_weight is None:
            return None
        return np.ascontiguousarray(_check_sample_weight(
            sample_weight, X, dtype=Y_DTYPE, ensure_non_negative=True))

    def _is_fitted(self):
        return hasattr(self, "booster_")

    def _make_loss(self, meta=None):
        """The fit's loss over rows of side information ``meta`` (a RowMeta)."""
        return get_loss(**self._objective(), meta=meta)

    def _fit_inputs(self):
        """This fit's input validation, target encoding, class weights and
        loss, for code outside the estimator (:class:`FitInputs`)."""
        return FitInputs(self.booster_, type(self).__name__, self._by_class(),
                         objective_from_params(self.get_params(deep=False)),
                         getattr(self, "classes_", None),
                         getattr(self, "_class_weights", None), y_columns(self))

    def _fitted_copy(self, cls, params, skip=(), deep=True):
        """``cls(**params)`` holding (deep) copies of this estimator's other
        attributes, but those in ``skip``; its trees packed for prediction."""
        out = cls(**params)
        own_params = set(self.get_params(deep=False))
        for name, value in vars(self).items():
            if name not in own_params and name not in skip:
                setattr(out, name, copy.deepcopy(value) if deep else value)
        if "booster_" in vars(out):
            out.booster_.pack()
        return out

    # ---------------------------------------------- importances, persistence
    @property
    def feature_importances_(self) -> np.ndarray:
        """Per feature: share of the total split gain (``importance_type='gain'``)
        or of the number of splits ('split') over all trees; all zeros without
        any split. Shape (``n_features_in_``,)."""
        check_is_fitted(self)
        totals = self.booster_.feature_importance(self.importance_type)
        total = totals.sum()
        return totals / total if total > 0 else totals

    def set_params(self, **params: Any) -> BaseHistGBDT:
        """Set parameters (scikit-learn's ``set_params``); a LightGBM or
        XGBoost name is refused with hgbt's.

        Returns
        -------
        self
        """
        valid = self.get_params(deep=False)
        for name in params:
            if "__" not in name and name not in valid:
                raise ValueError(unknown_parameter_message(type(self).__name__, name,
                                                           list(valid)))
        return super().set_params(**params)

    def save_model(self, path: str | os.PathLike) -> None:
        """Save the fitted model as JSON (``doc/model-format.md``); see
        :func:`hgbt.load_model`. A callable loss or scoring cannot be saved."""
        save_model(self, path)

    def __getstate__(self):
        state = dict(super().__getstate__())
        for name in ("_callback_fit_ctx", "_skl_callbacks_to_teardown", "_parent_callback_ctx"):
            state.pop(name, None)  # a running fit's scikit-learn callback contexts
        return pickle_state(self._pickled_state(state))  # checksummed, with the version

    def __copy__(self):
        # what copy.copy does by default, without pickling every tree (scikit-learn's
        # callbacks copy the estimator each round for a `fitted_estimator`)
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def _pickled_state(self, state):
        """The state to pickle (subclasses drop what cannot be pickled)."""
        return state

    def __setstate__(self, state):
        super().__setstate__(unpickle_state(self, state))  # warns on another version
        if self._is_fitted():
            self.booster_.pack()

    # ------------------------------------------------------------------ fit
    def fit(self: Estimator, X: MatrixLike | Dataset, y: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None, *,
            X_val: MatrixLike | Dataset | None = None, y_val: ArrayLike | None = None,
            sample_weight_val: ArrayLike | None = None,
            eval_set: list[tuple[MatrixLike, ArrayLike] | Dataset] | None = None,
            eval_names: list[str] | None = None,
            eval_sample_weight: list[ArrayLike | None] | None = None,
            callbacks: list | None = None, init_score: ArrayLike | None = None,
            init_score_val: ArrayLike | None = None,
            eval_init_score: list[ArrayLike | None] | None = None) -> Estimator:
        # the docstring, with every argument, is docstrings.FIT_DOC (set below)
        return self._fit_rows(X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
                              eval_names, eval_sample_weight, callbacks,
                              (init_score, init_score_val, eval_init_score))

    fit.__doc__ = FIT_DOC

    def _fit_rows(self, X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
                  eval_names, eval_sample_weight, callbacks, init_scores,
                  qids=(None, None, None)):
        """``fit`` with each set's per-row arguments: ``init_scores`` and
        ``qids`` are the training rows', X_val's and eval_set's (a list)."""
        self._validate_params()
        with running_fit():
            saved = dict(vars(self))
            try:
                # scikit-learn's callbacks are torn down however the fit ends
                fit = managed(type(self)._fit) if uses_sklearn_callbacks(self) else \
                    type(self)._fit
                # cross-validated rounds (or a checkpoint's rest of them), then all rows
                choice, fresh = plan_rounds(
                    self, X, y, sample_weight, init_scores[0], qids[0], X_val, eval_set,
                    self.warm_start and self._is_fitted(), AUTO_EARLY_STOPPING_ROWS,
                    self._new_seed)
                if choice is not None:
                    self._cv_choice = choice
                if fresh:  # before the rounds: a checkpoint of them says where they end
                    self.cv_results_ = choice.results()
                fit(self, X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
                    eval_names, eval_sample_weight, callbacks, init_scores, qids)
                if choice is not None:  # the fit's history knows nothing of the folds
                    del self._cv_choice
                    self.best_iteration_, self.best_score_ = self.n_iter_, choice.best_score
                    self.tree_size_scores_ = [dict(trial) for trial in choice.trials]
            except BaseException:
                # never a mix of the old and the new model: one assignment
                # puts every attribute back (a warm start's lists were copied)
                self.__dict__ = saved
                raise
        return self

    def _fit(self, X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
             eval_names, eval_sample_weight, callbacks, init_scores=(None, None, None),
             qids=(None, None, None)):
        warm = self.warm_start and self._is_fitted()
        given = isinstance(X, Dataset)  # the user's: binned once, no hold-out from it
        target_fields = {}
        if given:
            X, y, sample_weight = self._dataset_rows(X, y, sample_weight, warm)
            target_fields = X.row_fields()  # its query ids, upper bounds
            if qids[0] is not None and "qid" in target_fields:
                raise ValueError("The Dataset holds its query ids: fit(dataset) takes no "
                                 "qid.")
        else:
            y, target_fields = self._target_fields(y)
            X, encoding = self._validate_fit_X(X, self.booster_ if warm else None)
            # check_X_y, not validate_data: X is an ndarray now, and a second
            # feature-name check would warn that it has none.
            X, y = check_X_y(X, y, dtype=None, ensure_all_finite=False, accept_sparse=True,
                             accept_large_sparse=True, y_numeric=not self._stratify,
                             multi_output=self._multi_output, estimator=self)
            sample_weight = self._validate_weight(sample_weight, X)
            X = Dataset.from_prepared(
                X, None, None, categorical=encoding, n_features_in=self.n_features_in_,
                feature_names_in=getattr(self, "feature_names_in_", None),
                **{name: getattr(self, name) for name in BINNING_PARAMS})
        dataset, X = X, X.X
        y = self._encode_y(y, reset=not warm)
        # the model this fit builds: a warm start's continues the fitted one
        self.booster_ = (self.booster_.continued(self._objective()) if warm else Booster(
            n_features_in=self.n_features_in_,
            feature_names_in=getattr(self, "feature_names_in_", None),
            categorical=dataset.categorical, objective=self._objective(),
            classes=self.classes_ if self._stratify else None, bin_mapper=None,
            baseline=None))
        sample_weight = self._class_weighted(sample_weight, y)
        if (X_val is None) != (y_val is None) and not isinstance(X_val, Dataset):
            raise ValueError("X_val and y_val must be given together.")
        if X_val is None and sample_weight_val is not None:
            raise ValueError("sample_weight_val was given without X_val and y_val.")
        names, eval_rows = eval_sets(eval_set, eval_names, eval_sample_weight)
        n_threads = effective_n_threads(self.n_threads)
        if self.n_threads in (None, -1):  # binning and set-up on the CPUs free now
            n_threads = ThreadGovernor(n_threads).current
        interactions = interaction_groups(self.interaction_cst, X.shape[1],
                                          getattr(self, "feature_names_in_", None))
        monotonic = self._check_monotonic_cst(X.shape[1])

        if not warm or not hasattr(self, "_seed"):  # a saved Booster holds no seed
            self._seed = self._new_seed()
        if warm and self.max_iter < self.n_iter_:
            raise ValueError(f"max_iter={self.max_iter} must be >= n_iter_={self.n_iter_} "
                             "when warm_start=True.")

        validation = [self._validation_set(X_i, y_i, w_i, f"eval_set[{i}]", dataset)
                      for i, (X_i, y_i, w_i) in enumerate(eval_rows)]
        # start scores (init_score): the training rows', then each set's; a
        # Dataset's own where none is given
        k_trees = self._trees_per_round()
        init_score, init_score_val, eval_init_score = _dataset_scores(
            init_scores, dataset, X_val, [X_i for X_i, _, _ in eval_rows])
        qid, qid_val, eval_qid = qids  # a ranker's: eval_qid one per eval_set entry
        meta = _row_meta(sample_weight, init_score, qid, target_fields, X.shape[0], k_trees)
        validation = [(X_v, y_v, _row_meta(w_v, s, q, f_v, X_v.shape[0], k_trees, f"[{i}]",
                                           "eval_"))
                      for i, (s, q, (X_v, y_v, w_v, f_v)) in enumerate(zip(eval_init_scores(
                          init_score, eval_init_score, len(validation), X_val is not None,
                          init_score_val), eval_qid or [None] * len(validation), validation))]
        # LightGBM's and XGBoost's idiom eval_set=[(X_train, y_train), (X_val,
        # y_val)]: a set of the training rows is scored, never watched
        training = [name for name, (X_v, y_v, m_v) in zip(names, validation)
                    if same_rows(X_v, y_v, m_v.sample_weight, X, y, sample_weight)
                    and same_values(m_v.label_upper_bound, meta.label_upper_bound)]
        others = [name for name in names if name not in training]
        early_stopping = (self._early_stopping_enabled(y, X_val is not None, meta) if not given
                          else self._dataset_early_stopping(X_val is not None or others))
        watched = None  # the Monitor's default: X_val's, else the first eval_set's
        if training and early_stopping and self.early_stopping_set is None \
                and X_val is None:
            watched = others[0] if others else None
            warnings.warn(
                f"eval_set {training} holds the training rows, which early stopping never "
                f"watches: it watches {watched!r}, the first other set" if others else
                f"eval_set {training} holds the training rows, which early stopping never "
                "watches: it holds out validation_fraction of the rows instead",
                UserWarning, stacklevel=4)
        X_train, y_train, meta_train = X, y, meta
        if X_val is not None:
            if not early_stopping:
                raise ValueError("X_val and y_val are only used for early stopping, "
                                 "which early_stopping=False turns off (eval_set scores "
                                 "sets without it).")
            X_v, y_v, w_v, f_v = self._validation_set(X_val, y_val, sample_weight_val,
                                                      "X_val", dataset)
            validation.insert(0, (X_v, y_v, _row_meta(w_v, init_score_val, qid_val, f_v,
                                                      X_v.shape[0], k_trees, "_val")))
            names.insert(0, VALIDATION)
        elif (early_stopping and self.validation_fraction is not None
              and self.early_stopping_set in (None, VALIDATION)
              and (not others or self.early_stopping_set == VALIDATION)):
            # the hold-out, unless another set is watched
            X_train, X_hold, y_train, y_hold, meta_train, meta_hold = split_validation(
                X, y, meta, self.validation_fraction, self._seed, self._by_class())
            validation.insert(0, (X_hold, y_hold, meta_hold))
            names.insert(0, VALIDATION)
            dataset = Dataset.from_prepared(
                X_train, None, None, categorical=dataset.categorical,
                n_features_in=dataset.n_features_in_,
                feature_names_in=getattr(dataset, "feature_names_in_", None),
                **dataset.binning)

        booster = self.booster_
        X_user = booster.user_codes(X_train)  # as a scikit-learn callback may predict it
        binned = dataset.construct(
            target_stats.target_columns(y_train, len(self.classes_) if self._by_class()
                                        else None), meta_train.sample_weight,
            self._binning_key(), self._seed,
            n_threads, (booster.bin_mapper, booster.target_stats) if warm else None)
        if not warm:
            booster.bin_mapper, booster.target_stats = binned.bin_mapper, binned.target_stats
        validation = [(booster.pooled_input(X_v), y_v, m_v) for X_v, y_v, m_v in validation]
        self._set_internal_constraints(interactions, monotonic)
        callbacks = list(callbacks or ())
        if uses_sklearn_callbacks(self):
            # the fit is scikit-learn's task, each round a subtask
            rounds = (self._cv_choice.n_rounds if hasattr(self, "_cv_choice")
                      else self.max_iter) - (self.n_iter_ if warm else 0)
            if self.max_leaf_nodes == "auto" and self._may_compare_sizes(warm,
                                                                         early_stopping):
                rounds += self.max_iter  # a fit with other trees may follow
            context = self._init_callback_context(max_subtasks=rounds)
            callbacks.append(SklearnRounds(
                context, X_user, self._decode(y_train),
                None if meta_train.sample_weight is None
                else {"sample_weight": meta_train.sample_weight}, _round_state))
        if watched is None and training and VALIDATION in names:
            watched = VALIDATION  # the hold-out made instead
        monitor = Monitor(self, [TRAIN] + names, early_stopping, self._has_loss_value(),
                          callbacks, getattr(self, "evals_result_", None) if warm else None,
                          watched=watched,
                          watched_because=(f"{', '.join(training)} holds the training rows"
                                           if watched is not None else None))
        self._fit_rounds(binned.X, binned.layout, y_train, meta_train, validation, monitor,
                         early_stopping, warm, n_threads)

    def _dataset_rows(self, dataset, y, sample_weight, warm):
        """A Dataset given to ``fit``: its rows checked against this fit (its
        binning parameters, a warm start's features), its label and weights;
        the estimator's input schema from it."""
        if y is not None or sample_weight is not None:
            raise ValueError("A Dataset holds its label and weights: fit(dataset) takes "
                             "no y or sample_weight.")
        if dataset.reference is not None:
            raise ValueError("This Dataset is a validation set (it has a reference): fit "
                             "on its reference, and pass it as X_val or in eval_set.")
        if dataset.label is None:
            raise ValueError("The Dataset has no label: Dataset(data, label).")
        dataset.check_binning(self.get_params(deep=False))
        names = getattr(dataset, "feature_names_in_", None)
        if warm:
            if dataset.n_features_in_ != self.n_features_in_ or not np.array_equal(
                    names, getattr(self, "feature_names_in_", None)):
                raise ValueError("warm_start: the Dataset's features are not the fitted "
                                 "model's.")
            if not same_encoding(dataset.categorical, self.booster_.categorical):
                raise ValueError(
                    "warm_start: the Dataset codes its categorical columns otherwise than "
                    "the fitted model (other categories or categorical features); its "
                    "trees would read other codes. Continue on the rows as arrays or "
                    "frames (fit(X, y)), which are coded as the model codes them.")
        else:
            self.n_features_in_ = dataset.n_features_in_
            if names is not None:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        y = check_array(dataset.label, ensure_2d=False,
                        dtype="numeric" if not self._stratify else None,
                        ensure_all_finite=not self._stratify, input_name="label")
        return dataset, y, dataset.weight

    def _dataset_early_stopping(self, has_validation):
        """Early stopping of a fit on a Dataset: 'auto' watches a validation
        set when one is given; a hold-out would bin the rows again."""
        if self.early_stopping == "auto":
            return bool(has_validation)
        if self.early_stopping and not has_validation and \
                self.validation_fraction is not None:
            raise ValueError(
                "Early stopping on a hold-out of a Dataset's rows would bin them again "
                "without the held-out rows: pass a validation Dataset (X_val=, or "
                "eval_set= / hgbt.train's valid_sets=), set validation_fraction=None to "
                "watch the training rows, or early_stopping=False.")
        return bool(self.early_stopping)

    def _binning_key(self):
        """What a Dataset's bins depend on besides its rows and binning
        parameters: the kind of target (the pooled features' statistics)
        and the class weights (the weighted bin boundaries)."""
        if not self._stratify:
            return ("regression",)
        if not self._by_class():
            return (f"multi-label ({y_columns(self)} labels)",)
        return (f"classification ({len(self.classes_)} classes)", repr(self.class_weight))

    def _set_internal_constraints(self, interactions, monotonic):
        """Interaction groups and monotonic constraints over the trees'
        features: a target statistic joins its source feature's groups and
        is unconstrained (its source is categorical)."""
        n_extra = self.booster_.n_internal - self.n_features_in_
        if n_extra and interactions is not None:
            sources = target_stats.sources(self.booster_.target_stats)
            extra = np.arange(self.n_features_in_, self.n_features_in_ + n_extra)
            interactions = [group | {int(e) for e, s in zip(extra, sources) if s in group}
                            for group in interactions]
        if n_extra and monotonic is not None:
            monotonic = np.concatenate([monotonic, np.zeros(n_extra, dtype=monotonic.dtype)])
        self._interaction_groups_ = interactions
        self._monotonic_cst_ = monotonic

    def _validation_set(self, X, y, sample_weight, name, train_set):
        """A validation set's rows (pooled features as positions), encoded
        targets, weights and the RowMeta fields of its targets
        (:meth:`_target_fields`), checked; ``X`` a validation Dataset of
        ``train_set`` (its label and weights inside), or arrays."""
        fields = {}
        if isinstance(X, Dataset):
            if X.reference is not train_set and X is not train_set:
                raise ValueError(
                    f"{name} is a Dataset whose reference is not the training Dataset: a "
                    "validation Dataset goes with a training Dataset (fit(dataset) or "
                    "hgbt.train) and is built as Dataset(X_val, y_val, reference=dataset); "
                    "beside training arrays, give the validation rows as arrays.")
            if y is not None or sample_weight is not None or X.label is None:
                raise ValueError(f"{name}: a validation Dataset holds its label and "
                                 "weights (and needs a label).")
            fields = X.row_fields()
            X, y, sample_weight = X.X, X.label, X.weight
        else:
            X = self.booster_.prepare(X, positions=True, checker=self)
            y, fields = self._target_fields(y)
        # as check_X_y checks y: a NaN target would make every score NaN
        y = self._encode_y(check_array(
            y, ensure_2d=False, dtype="numeric" if not self._stratify else None,
            ensure_all_finite=not self._stratify,
            input_name="y_val" if name == "X_val" else f"y of {name}"), reset=False)
        weight = self._class_weighted(self._validate_weight(sample_weight, X), y)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"{name} has {X.shape[0]} rows but {y.shape[0]} targets.")
        return X, y, weight, fields

    def _target_fields(self, y):
        """``(y as the engine takes it, RowMeta fields)``: a survival target
        splits into its lower bounds and ``label_upper_bound``; others stay."""
        return y, {}

    def _new_seed(self):
        """The seed of every random draw of a fit, from ``random_state``."""
        return new_seed(self.random_state)

    def _check_monotonic_cst(self, n_features):
        """``monotonic_cst`` as an int8 array of -1/0/1, or None if unconstrained."""
        out = monotonic_constraints(self.monotonic_cst, n_features,
                                    getattr(self, "feature_names_in_", None))
        if out is None:
            return None
        if self._stratify and len(self.classes_) > 2:
            raise ValueError("monotonic_cst is not supported for multiclass "
                             "classification (only regression and binary).")
        is_cat = getattr(self, "is_categorical_", None)
        if is_cat is not None and np.any(out[np.asarray(is_cat, dtype=bool)]):
            raise ValueError("monotonic_cst cannot constrain a categorical feature.")
        return out

    def _early_stopping_enabled(self, y, has_val, meta):
        if hasattr(self, "_cv_choice"):  # the rounds are chosen: the fit runs them all
            return False
        if (self.early_stopping == "auto" and self.warm_start and self._is_fitted()
                and hasattr(self, "cv_results_")):
            return False  # more rounds of a cross-validated model: the ones asked for
        if self.early_stopping == "auto":
            if has_val:
                return True
            # A custom objective has no loss value to score; a class too rare
            # for a stratified hold-out, or a single query (a hold-out keeps
            # queries whole), keeps a small fit as it was.
            return (y.shape[0] >= AUTO_EARLY_STOPPING_ROWS
                    and not (self._custom_loss() and self.scoring == "loss")
                    and not (self._by_class() and self.validation_fraction is not None
                             and not can_stratify(y, self.validation_fraction))
                    and (meta.queries is None or meta.queries.n_queries >= 2))
        return bool(self.early_stopping)

    def _custom_loss(self):
        return callable(getattr(self, "loss", None))

    def _trees_per_round(self):
        """Trees a round grows: one per class (> 2 classes), per output
        (several targets), else one."""
        if self._by_class():
            return len(self.classes_) if len(self.classes_) > 2 else 1
        return y_columns(self)

    def _by_class(self):
        """Whether ``y`` holds one class label a row (a classifier's, not
        multi-label): the hold-out is stratified by it."""
        return self._stratify and y_columns(self) == 1

    def _has_loss_value(self):
        """Whether the fit's loss has a value to record ('loss')."""
        return not self._custom_loss()

    def _class_weighted(self, sample_weight, y):
        return sample_weight  # overridden by the classifier (class_weight)

    def _fit_rounds(self, X, binned, y, meta, validation, monitor, early_stopping, warm,
                    n_threads):
        loss = self._make_loss(meta)
        loss.check_y(y)
        check_fit_range(loss, y, meta.sample_weight)
        n_samples, k_trees = X.shape[0], loss.n_trees_per_iteration
        booster = self.booster_
        offset = meta.init_score
        if not warm:  # rows given start scores start there only (as the peers')
            booster.baseline = (loss.baseline(y) if offset is None
                                else np.zeros(k_trees, dtype=np.float64))
        if isinstance(binned, PagedBins) and self._vector_leaves():
            raise ValueError(OUT_OF_CORE_HINT.format("vector-leaf trees (multi-output, "
                                                     "multi_strategy='multi_output_tree')"))
        if self._vector_leaves() and not binned.is_plain:
            # vector-leaf trees read each feature's own column of bins
            binned = plain_bins(X, booster.bin_mapper, n_threads)
        # Without a plain layout, earlier rounds are replayed on the raw values
        # (the same routing: x <= threshold[b] exactly when bin(x) <= b).
        raw = booster.raw_from_trees(np.empty((k_trees, n_samples)),
                                     X_binned=binned.X_dense if binned.is_plain else None,
                                     X=X, n_threads=n_threads)
        if offset is not None:
            raw += offset
        # the loss's and scorers' (whole queries of a ranker; all of Cox's)
        score_rows = (training_score_rows(n_samples, self._seed, meta.queries)
                      if loss.scored_on_a_sample else None)
        full_hessian = self._boost_settings(n_threads).full_hessian
        state = RowState(loss, y, meta, raw, full_hessian,
                         [ValidationRows(X_v, y_v, m_v, _plus(booster.raw_predict_prepared(
                             X_v, None, n_threads), m_v.init_score))
                          for X_v, y_v, m_v in validation], score_rows)
        evaluator = monitor.evaluator(self, scored_rows(
            score_rows, (X, self._decode(y), meta),
            [(X_v, self._decode(y_v), m_v) for X_v, y_v, m_v in validation]
        ) if monitor.needs_predictions else None, self._round_view)

        def run(settings, record, runner):
            # without n_threads, each round runs on the CPUs other processes
            # leave free, up to all of them
            settings = replace(settings, n_threads=effective_n_threads(self.n_threads),
                               adapt_threads=self.n_threads in (None, -1))
            with LocalData(state, X, binned, booster.bin_mapper.missing_bin + 1,
                           settings.n_threads, booster.baseline,
                           histogram_layout=settings.histogram_layout) as data:
                boost(settings, data, record, evaluator, runner)
                self.histogram_layout_ = data.histogram_layout

        self._run_rounds(run, monitor, k_trees, early_stopping, bool(validation), n_threads,
                         warm)

    def _run_rounds(self, run, monitor, k_trees, early_stopping, has_validation, n_threads,
                    warm=False):
        """``run(boost_settings, fit_record, callback_runner)`` boosts; then the
        fitted attributes are set, the trees cut at the best round with
        ``truncate_at_best`` (local and Dask fits alike)."""
        record = FitRecord(self.booster_.trees, monitor.history)
        watched = monitor.history.watched
        # two tree sizes are compared on a validation set: early stopping's
        select = (self._may_compare_sizes(warm, early_stopping)
                  and watched is not None and watched[0] != TRAIN)
        if warm and self.max_leaf_nodes == "auto":  # the sizes compared so far
            record.evals.trials = [dict(t) for t in getattr(self, "tree_size_scores_", [])]

        def sync(evals):  # the estimator as a model of the rounds so far
            self._set_fitted_rounds(k_trees, evals, early_stopping, has_validation,
                                    pack=False)

        def finish(evals):  # the fit's model (the kept fit's, after two)
            sync(evals)
            if self.truncate_at_best and self.best_iteration_ is not None:
                del self.booster_.trees[self.best_iteration_:]
            self._set_fitted_rounds(k_trees, evals, early_stopping, has_validation)

        run(self._boost_settings(n_threads, warm, select), record,
            monitor.runner(self, sync, finish))

    def _round_view(self, raw):
        """The model of the rounds so far as scorers see it (raw predictions
        of the scored rows): overridden by the estimators."""
        raise NotImplementedError

    def _set_fitted_rounds(self, k_trees, history, early_stopping, has_validation,
                           pack=True):
        self.n_iter_ = self.booster_.n_iter
        self.n_trees_per_iteration_ = k_trees
        for name, value in history_attributes(history, self.n_iter_, early_stopping,
                                              has_validation).items():
            setattr(self, name, value)
        if pack:
            self.booster_.pack()

    def _may_compare_sizes(self, warm, early_stopping):
        """Whether this fit may compare tree sizes (``max_leaf_nodes='auto'``,
        on early stopping's set): a warm start only finishes a comparison its
        model's fit began (a resumed checkpoint), else it continues the size
        it holds."""
        return early_stopping and (not warm or getattr(self, "_tree_size_comparing", False))

    def _tree_sizes(self, warm):
        """The tree size (``max_leaf_nodes``, ``l2_regularization``) the
        rounds grow, and the two that ``max_leaf_nodes='auto'`` compares
        (empty for a fixed ``max_leaf_nodes``). A warm start continues the
        size its model holds."""
        leaves, l2 = self.max_leaf_nodes, self.l2_regularization
        if hasattr(self, "_cv_choice"):  # early_stopping='cv': the size the folds chose
            return dict(self._cv_choice.tree_size), ()
        if leaves != "auto":
            return {"max_leaf_nodes": leaves, "l2_regularization":
                    AUTO_TREE_SIZES[0]["l2_regularization"] if l2 == "auto" else l2}, ()
        sizes = tuple(dict(size) if l2 == "auto" else {**size, "l2_regularization": l2}
                      for size in AUTO_TREE_SIZES)
        current = sizes[0]
        if warm:  # a model saved before 'auto' holds no size: it grew the first
            current = dict(current, max_leaf_nodes=getattr(self, "max_leaf_nodes_",
                                                           current["max_leaf_nodes"]))
            if l2 == "auto":
                current["l2_regularization"] = getattr(self, "l2_regularization_",
                                                       current["l2_regularization"])
        return current, sizes

    def _boost_settings(self, n_threads, warm=False, select=False):
        """The boosting loop's settings of this fit (local and Dask alike);
        with ``select``, ``max_leaf_nodes='auto'`` compares its tree sizes."""
        mapper = self.booster_.bin_mapper
        tree_size, sizes = self._tree_sizes(warm)
        choice = getattr(self, "_cv_choice", None)
        return BoostSettings(
            max_iter=self.max_iter if choice is None else choice.n_rounds,
            seed=self._seed, n_threads=n_threads,
            learning_rate=self.learning_rate, colsample_bytree=self.colsample_bytree,
            colsample_bynode=self.colsample_bynode,
            data_sample_strategy=self.data_sample_strategy, subsample=self.subsample,
            goss_top_rate=self.goss_top_rate, goss_other_rate=self.goss_other_rate,
            quantized_bins=self.num_grad_quant_bins if self.use_quantized_grad else None,
            bin_thresholds=mapper.bin_thresholds_,
            n_bins_non_missing=mapper.n_bins_non_missing_,
            grower=TreeSettings(**self._grower_params(), **tree_size),
            tree_sizes=sizes if select else (), select_at_best=self.truncate_at_best,
            select_tol=self.tol, bagging_by_query=getattr(self, "bagging_by_query", False),
            vector_leaves=self._vector_leaves(), histogram_layout=self.histogram_layout)

    def _vector_leaves(self):
        """Whether a round grows one vector-leaf tree for the columns of y
        (several columns only: not a multiclass round's classes)."""
        return (getattr(self, "multi_strategy", None) == "multi_output_tree"
                and y_columns(self) > 1)

    def _grower_params(self):
        """The TreeGrower settings of this fit but the tree size
        (``max_leaf_nodes``, ``l2_regularization``: :meth:`_tree_sizes`)."""
        mapper = self.booster_.bin_mapper
        return dict({name: getattr(self, name) for name in TREE_PARAMS
                     if name not in TREE_SIZE},
                    learning_rate=self.learning_rate,
                    interaction_groups=self._interaction_groups_,
                    is_categorical=mapper.is_categorical_,
                    known_cat_bitsets=mapper.known_cat_bitsets_,
                    monotonic_cst=self._monotonic_cst_)

    # -------------------------------------------------------------- predict
    def _raw_predict(self, X, iteration_range=None):
        """Raw predictions, shape (n_trees_per_iteration, n_samples), of every
        round or of the rounds ``begin <= round < end`` of ``iteration_range``."""
        if not (self._is_fitted() and self.booster_.is_plain_array(X)):
            check_is_fitted(self)
            X = self._validate_X(X)
        return self.booster_.raw_predict_prepared(X, iteration_range,
                                                  effective_n_threads(self.n_threads))

    def _staged_raw_predict(self, X):
        check_is_fitted(self)
        yield from self.booster_.staged_raw_predict_prepared(
            self._validate_X(X), effective_n_threads(self.n_threads))


def _round_state(estimator):
    """The fitted attributes that make a copy of ``estimator`` a model of the
    rounds so far (scikit-learn's ``fitted_estimator``)."""
    params = estimator.get_params(deep=False)
    state = {name: value for name, value in vars(estimator).items() if name not in params}
    state["booster_"] = estimator.booster_.continued()  # later rounds not included
    state["evals_result_"] = {s: {m: list(v) for m, v in metrics.items()}
                              for s, metrics in estimator.evals_result_.items()}
    return state


def _row_meta(sample_weight, init_score, qid, fields, n_rows, n_trees, suffix="",
              prefix=""):
    """One set's RowMeta from its checked weights, its start scores and query
    ids (checked here; errors name ``prefix`` + 'init_score' / 'qid' +
    ``suffix``) and the fields its target or Dataset gave."""
    return RowMeta(sample_weight,
                   check_init_score(init_score, n_rows, n_trees,
                                    f"{prefix}init_score{suffix}"),
                   **{"qid": check_qid(qid, n_rows, f"{prefix}qid{suffix}"), **fields})


def _plus(raw, offset):
    """Raw scores plus their rows' start scores (``init_score``; None: none)."""
    return raw if offset is None else raw + offset


def _dataset_scores(given, dataset, X_val, eval_X):
    """``(init_score, init_score_val, eval_init_score)``: those given to
    ``fit``, else the Datasets' own (None where there are none)."""
    def own(obj):
        return getattr(obj, "init_score", None) if isinstance(obj, Dataset) else None

    init_score, init_score_val, eval_init_score = given
    if init_score is None:
        init_score = own(dataset)
    if init_score_val is None:
        init_score_val = own(X_val)
    if eval_init_score is None and any(own(X) is not None for X in eval_X):
        eval_init_score = [own(X) for X in eval_X]
    return init_score, init_score_val, eval_init_score
