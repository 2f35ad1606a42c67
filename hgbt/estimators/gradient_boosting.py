"""What the estimators share: validation, binning, the fit's settings for the
boosting loop (:mod:`hgbt.engine.boosting`), warm start, staged and raw
prediction."""
import copy
import itertools
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (_check_sample_weight, check_array, check_is_fitted,
                                      check_X_y)

from ..core._openmp import effective_n_threads
from ..core._types import SIZE_DTYPE, X_DTYPE, Y_DTYPE
from ..data.binning import BinMapper
from ..data.bundling import DenseSource, SparseSource, build_layout
from ..data.categorical import validate_X
from ..engine.boosting import BoostHistory, BoostSettings, boost
from ..engine.early_stopping import LossScorer, Scorer, split_validation
from ..engine.numeric_range import check_fit_range
from ..engine.rows import LocalData, RowState
from .explain import ExplainMixin
from .fit_inputs import FitInputs
from ..tree.predictor import PACKED_MIN_ROWS, ForestPredictor
from ..persistence import pickle_state, save_model, unpickle_state
from ..data.sparse import ACCEPTED_FORMATS, as_csr, bin_stored_entries, check_sparse_format

# early_stopping='auto' turns on above this many rows.
AUTO_EARLY_STOPPING_ROWS = 10_000
# Prediction is one kernel call over all trees (ForestPredictor): dense inputs
# below this many rows walk them row by row, larger ones through the packed
# forest (measured crossover 4-8 rows, benchmarks/RESULTS.md).
FOREST_MAX_ROWS = PACKED_MIN_ROWS
# Inputs of this many rows check that the cached forest holds the current tree
# objects (a tree replaced after fit is seen); smaller ones skip the O(n_trees)
# check for latency.
FOREST_CHECK_ROWS = 256
# LightGBM's quantization uses a few levels; more than this would only shrink
# the blocks of rows the histogram kernel packs (training_data.packed_layout).
MAX_GRAD_QUANT_BINS = 1024
_PLAIN_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


class BaseHistGBDT(ExplainMixin, BaseEstimator):
    """Shared fit/predict machinery of the hgbt estimators.

    Subclasses provide ``_encode_y(y)`` (validate and encode targets; set
    fitted label attributes), ``_make_loss(sample_weight)`` and
    ``_stratify`` (stratified validation split).
    """

    _parameter_constraints = {
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_gain_to_split": [Interval(Real, 0, None, closed="left")],
        "l1_regularization": [Interval(Real, 0, None, closed="left")],
        "l2_regularization": [Interval(Real, 0, None, closed="left")],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "enable_bundle": ["boolean"],
        "max_conflict_rate": [Interval(Real, 0, 1, closed="left")],
        "use_quantized_grad": ["boolean"],
        "num_grad_quant_bins": [Interval(Integral, 2, MAX_GRAD_QUANT_BINS, closed="both")],
        "grow_policy": [StrOptions({"lossguide", "depthwise"})],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "scoring": [str, callable, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"),
                                Interval(Integral, 1, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "data_sample_strategy": [StrOptions({"bagging", "goss"})],
        "goss_top_rate": [Interval(Real, 0, 1, closed="right")],
        "goss_other_rate": [Interval(Real, 0, 1, closed="right")],
        "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
        "colsample_bynode": [Interval(Real, 0, 1, closed="right")],
        "categorical_features": ["array-like", StrOptions({"from_dtype"}), None],
        "max_cat_to_onehot": [Interval(Integral, 1, None, closed="left")],
        "cat_smooth": [Interval(Real, 0, None, closed="left")],
        "cat_l2": [Interval(Real, 0, None, closed="left")],
        "min_data_per_group": [Interval(Integral, 0, None, closed="left")],
        "max_cat_threshold": [Interval(Integral, 1, None, closed="left")],
        "monotonic_cst": ["array-like", dict, None],
        "interaction_cst": [list, tuple, StrOptions({"pairwise", "no_interactions"}),
                            None],
        "importance_type": [StrOptions({"gain", "split"})],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    # ---------------------------------------------------------------- input
    def _validate_X(self, X, reset):
        # ±inf are ordinary values and NaN is missing: no finiteness check on X.
        # Categorical columns become float codes (categorical.py). Sparse
        # input stays sparse, as canonical CSR.
        check_sparse_format(X)
        X = validate_X(self, X, reset, dtype=[X_DTYPE, np.float32],
                       ensure_all_finite=False, accept_sparse=ACCEPTED_FORMATS,
                       accept_large_sparse=True)
        return as_csr(X) if sp.issparse(X) else X

    def _validate_weight(self, sample_weight, X):
        if sample_weight is None:
            return None
        return np.ascontiguousarray(_check_sample_weight(
            sample_weight, X, dtype=Y_DTYPE, ensure_non_negative=True))

    def _is_fitted(self):
        return hasattr(self, "_predictors")

    def _fit_inputs(self):
        """This fit's input validation, target encoding, class weights and
        loss, for code outside the estimator (:class:`FitInputs`)."""
        return FitInputs(self)

    def _fitted_copy(self, cls, params, skip=(), deep=True):
        """``cls(**params)`` holding (deep) copies of this estimator's other
        attributes, but those in ``skip``; its trees packed for prediction."""
        out = cls(**params)
        own_params = set(self.get_params(deep=False))
        for name, value in vars(self).items():
            if name not in own_params and name not in skip:
                setattr(out, name, copy.deepcopy(value) if deep else value)
        if out._is_fitted():
            out._set_forest()
        return out

    # ---------------------------------------------- importances, persistence
    @property
    def feature_importances_(self):
        """Per feature: share of the total split gain (``importance_type='gain'``)
        or of the number of splits ('split') over all trees; all zeros without
        any split. Shape (n_features_in_,)."""
        check_is_fitted(self)
        if self.importance_type not in ("gain", "split"):
            raise ValueError(f"importance_type must be 'gain' or 'split', got "
                             f"{self.importance_type!r}.")
        totals = np.zeros(self.n_features_in_)
        for tree in itertools.chain.from_iterable(self._predictors):
            split = tree.nodes[tree.nodes["is_leaf"] == 0]
            totals += np.bincount(split["feature_idx"], minlength=self.n_features_in_,
                                  weights=split["gain"] if self.importance_type == "gain"
                                  else None)
        total = totals.sum()
        return totals / total if total > 0 else totals

    def save_model(self, path):
        """Save the fitted model as JSON (``doc/model-format.md``); see
        :func:`hgbt.load_model`. A callable loss or scoring cannot be saved."""
        save_model(self, path)

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_forest_cache", None)  # rebuilt on demand
        return pickle_state(self._pickled_state(state))  # checksummed, with the version

    def _pickled_state(self, state):
        """The state to pickle (subclasses drop what cannot be pickled)."""
        return state

    def __setstate__(self, state):
        super().__setstate__(unpickle_state(self, state))  # warns on another version
        if self._is_fitted():
            self._set_forest()

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None,
            sample_weight_val=None):
        """Fit the gradient-boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. NaN marks a missing value; ±inf are allowed.
        y : array-like of shape (n_samples,)
            Targets (regression: finite numbers; classification: labels).
            Gradients are float32, so regression targets must satisfy
            ``|y| <= 2**126`` (~8.5e37), and their spread ``max(y) - min(y)``
            must be 0 or at least ``2**-100`` (~7.9e-31); otherwise, and when
            the gradients overflow during the fit (e.g. a diverging
            ``learning_rate``), a ValueError names the limit: divide or
            multiply ``y`` by a constant.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights (zeros allowed), at most ``2**126``
            and not all below ``2**-100`` (float32 gradients).
        X_val, y_val : array-like, default=None
            Validation set for early stopping, used instead of holding out
            ``validation_fraction`` of the training data.
        sample_weight_val : array-like of shape (n_val,), default=None
            Weights of the validation rows.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        warm = self.warm_start and self._is_fitted()
        X = self._validate_X(X, reset=not warm)
        # check_X_y, not validate_data: X is an ndarray now, and a second
        # feature-name check would warn that it has none.
        X, y = check_X_y(X, y, dtype=None, ensure_all_finite=False, accept_sparse=True,
                         accept_large_sparse=True, y_numeric=not self._stratify,
                         estimator=self)
        y = self._encode_y(y, reset=not warm)
        sample_weight = self._class_weighted(self._validate_weight(sample_weight, X), y)
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")
        if X_val is None and sample_weight_val is not None:
            raise ValueError("sample_weight_val was given without X_val and y_val.")
        n_threads = effective_n_threads(self.n_threads)
        self._interaction_groups_ = interaction_groups(self.interaction_cst, X.shape[1])
        self._monotonic_cst_ = self._check_monotonic_cst(X.shape[1])

        if not warm:
            self._seed = self._new_seed()
        elif self.max_iter < self.n_iter_:
            raise ValueError(f"max_iter={self.max_iter} must be >= n_iter_={self.n_iter_} "
                             "when warm_start=True.")

        early_stopping = self._early_stopping_enabled(X.shape[0], X_val is not None)
        if X_val is not None:
            if not early_stopping:
                raise ValueError("X_val and y_val are only used for early stopping, "
                                 "which early_stopping=False turns off.")
            X_train, y_train, w_train = X, y, sample_weight
            X_val = self._validate_X(X_val, reset=False)
            # as check_X_y checks y: a NaN target would make every score NaN
            y_val = self._encode_y(check_array(
                y_val, ensure_2d=False, dtype="numeric" if not self._stratify else None,
                ensure_all_finite=not self._stratify, input_name="y_val"), reset=False)
            w_val = self._class_weighted(self._validate_weight(sample_weight_val, X_val),
                                         y_val)
            if X_val.shape[0] != y_val.shape[0]:
                raise ValueError(f"X_val has {X_val.shape[0]} rows but y_val has "
                                 f"{y_val.shape[0]}.")
        elif early_stopping and self.validation_fraction is not None:
            X_train, X_val, y_train, y_val, w_train, w_val = split_validation(
                X, y, sample_weight, self.validation_fraction, self._seed, self._stratify)
        else:
            X_train, y_train, w_train, X_val, y_val, w_val = X, y, sample_weight, None, None, None

        if not warm:
            self._bin_mapper = BinMapper(max_bins=self.max_bins, random_state=self._seed,
                                         n_threads=n_threads,
                                         is_categorical=self.is_categorical_)
            self._bin_mapper.fit(X_train, sample_weight=w_train)
        binned = self._bin(X_train, n_threads)
        self._fit_rounds(X_train, binned, y_train, w_train, X_val, y_val, w_val,
                         early_stopping, warm, n_threads)
        return self

    def _bin(self, X, n_threads):
        """The binned training data, a :class:`~hgbt.data.bundling.FeatureLayout`
        (bundled or sparse-stored columns where they pay, else the plain one)."""
        mapper = self._bin_mapper
        if sp.issparse(X):
            X_csc = X.tocsc()
            source = SparseSource(X_csc, bin_stored_entries(X_csc, mapper, n_threads),
                                  mapper.zero_bins(), mapper.missing_bin)
            del X_csc
        else:
            source = DenseSource(mapper.transform(X), mapper.zero_bins(), mapper.missing_bin,
                                 n_threads)
        return build_layout(source, mapper.is_categorical_, mapper.n_bins_non_missing_,
                            mapper.missing_bin, enable_bundle=self.enable_bundle,
                            max_conflict_rate=self.max_conflict_rate)

    def _new_seed(self):
        """The seed of every random draw of a fit, from ``random_state``."""
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _check_monotonic_cst(self, n_features):
        """``monotonic_cst`` as an int8 array of -1/0/1, or None if unconstrained."""
        cst = self.monotonic_cst
        if cst is None:
            return None
        if isinstance(cst, dict):
            out = np.zeros(n_features, dtype=np.int64)
            names = getattr(self, "feature_names_in_", None)
            for key, value in cst.items():
                if isinstance(key, str) and names is not None and key in names:
                    key = int(np.flatnonzero(names == key)[0])
                if not (isinstance(key, Integral) and not isinstance(key, bool)
                        and 0 <= key < n_features):
                    raise ValueError(f"monotonic_cst: {key!r} is neither a feature index "
                                     f"in [0, {n_features - 1}] nor a feature name.")
                out[key] = value if value in (-1, 0, 1) else 2
        else:
            out = np.asarray(cst)
            if out.shape != (n_features,):
                raise ValueError(f"monotonic_cst has {out.size} entries; X has "
                                 f"{n_features} features.")
        if not np.isin(out, (-1, 0, 1)).all():
            raise ValueError("monotonic_cst values must be -1 (decreasing), 0 or 1 "
                             f"(increasing), got {cst!r}.")
        if not np.any(out):
            return None
        if self._stratify and len(self.classes_) > 2:
            raise ValueError("monotonic_cst is not supported for multiclass "
                             "classification (only regression and binary).")
        is_cat = getattr(self, "is_categorical_", None)
        if is_cat is not None and np.any(out[np.asarray(is_cat, dtype=bool)]):
            raise ValueError("monotonic_cst cannot constrain a categorical feature.")
        return out.astype(np.int8)

    def _early_stopping_enabled(self, n_samples, has_val):
        if self.early_stopping == "auto":
            if has_val:
                return True
            # A custom objective has no loss value to score.
            return (n_samples > AUTO_EARLY_STOPPING_ROWS
                    and not (self._custom_loss() and self.scoring == "loss"))
        return bool(self.early_stopping)

    def _custom_loss(self):
        return callable(getattr(self, "loss", None))

    def _class_weighted(self, sample_weight, y):
        return sample_weight  # overridden by the classifier (class_weight)

    def _fit_rounds(self, X, binned, y, sample_weight, X_val, y_val, w_val,
                    early_stopping, warm, n_threads):
        loss = self._make_loss(sample_weight)
        loss.check_y(y)
        check_fit_range(loss, y, sample_weight)
        n_samples, k_trees = X.shape[0], loss.n_trees_per_iteration
        if not warm:
            self._baseline_prediction = loss.baseline(y)
            self._predictors = []
            self._train_scores, self._val_scores = [], []
        # Without a plain layout, earlier rounds are replayed on the raw values
        # (the same routing: x <= threshold[b] exactly when bin(x) <= b).
        raw = self._raw_from_trees(np.empty((k_trees, n_samples)),
                                   X_binned=binned.X_dense if binned.is_plain else None,
                                   X=X, n_threads=n_threads)
        raw_val = None if X_val is None else self._raw_predict_validated(X_val, n_threads)
        settings = self._boost_settings(n_threads, early_stopping)
        rows = RowState(loss, y, sample_weight, raw, settings.full_hessian, X_val, y_val,
                        w_val, raw_val)
        scorer = None
        if early_stopping or (self.verbose and not self._custom_loss()):
            scoring = self.scoring if early_stopping else "loss"
            scorer = (LossScorer() if scoring == "loss" else Scorer(
                self, scoring, self._seed, X, self._decode(y), sample_weight, X_val,
                None if y_val is None else self._decode(y_val), w_val))
        with LocalData(rows, X, binned, self._bin_mapper.missing_bin + 1,
                       n_threads) as data:
            boost(settings, data, self._history(), scorer)
        self._set_fitted_rounds(k_trees, early_stopping, X_val is not None)

    def _history(self):
        """The fit's trees and scores, for :func:`~hgbt.engine.boosting.boost` to extend."""
        return BoostHistory(self._predictors, self._train_scores, self._val_scores)

    def _set_fitted_rounds(self, k_trees, early_stopping, has_val):
        self.n_iter_ = len(self._predictors)
        self.n_trees_per_iteration_ = k_trees
        self._set_forest()
        self.train_score_ = np.asarray(self._train_scores if early_stopping else [])
        self.validation_score_ = np.asarray(
            self._val_scores if early_stopping and has_val else [])

    def _boost_settings(self, n_threads, early_stopping):
        """The boosting loop's settings of this fit (local and Dask alike)."""
        mapper = self._bin_mapper
        return BoostSettings(
            max_iter=self.max_iter, seed=self._seed, n_threads=n_threads,
            learning_rate=self.learning_rate, colsample_bytree=self.colsample_bytree,
            colsample_bynode=self.colsample_bynode,
            data_sample_strategy=self.data_sample_strategy, subsample=self.subsample,
            goss_top_rate=self.goss_top_rate, goss_other_rate=self.goss_other_rate,
            quantized_bins=self.num_grad_quant_bins if self.use_quantized_grad else None,
            early_stopping=early_stopping, n_iter_no_change=self.n_iter_no_change,
            tol=self.tol, verbose=self.verbose, bin_thresholds=mapper.bin_thresholds_,
            n_bins_non_missing=mapper.n_bins_non_missing_, grower=self._grower_params())

    def _grower_params(self):
        """The TreeGrower settings of this fit."""
        return dict(
            grow_policy=self.grow_policy, max_leaf_nodes=self.max_leaf_nodes,
            max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            min_child_weight=self.min_child_weight,
            min_gain_to_split=self.min_gain_to_split,
            l1_regularization=self.l1_regularization,
            l2_regularization=self.l2_regularization, learning_rate=self.learning_rate,
            interaction_groups=self._interaction_groups_,
            is_categorical=self._bin_mapper.is_categorical_,
            known_cat_bitsets=self._bin_mapper.known_cat_bitsets_,
            max_cat_to_onehot=self.max_cat_to_onehot, cat_smooth=self.cat_smooth,
            cat_l2=self.cat_l2, min_data_per_group=self.min_data_per_group,
            max_cat_threshold=self.max_cat_threshold,
            monotonic_cst=self._monotonic_cst_)

    # -------------------------------------------------------------- predict
    def _raw_from_trees(self, out, X=None, X_binned=None, n_threads=1):
        """Baseline plus every tree, on raw ``X`` or on training bins."""
        out[:] = self._baseline_prediction[:, None]
        all_rows = None
        for trees in self._predictors:
            for k, tree in enumerate(trees):
                if X_binned is not None:
                    if all_rows is None:
                        all_rows = np.arange(X_binned.shape[0], dtype=SIZE_DTYPE)
                    tree.predict_binned_add(X_binned, all_rows,
                                            self._bin_mapper.missing_bin, out[k], n_threads)
                else:
                    tree.predict_add(X, out[k], n_threads)
        return out

    def _raw_predict_validated(self, X, n_threads):
        out = np.empty((len(self._baseline_prediction), X.shape[0]), dtype=Y_DTYPE)
        out[:] = self._baseline_prediction[:, None]
        forest = self._forest(check_trees=X.shape[0] >= FOREST_CHECK_ROWS)
        return forest.predict_add(X, out, n_threads)

    def _set_forest(self):
        """Pack the fitted trees for prediction (after fit or loading):
        ``predict`` itself must not change the estimator."""
        self._forest_cache = (self._predictors, len(self._predictors),
                              ForestPredictor(self._predictors))

    def _forest(self, check_trees=False):
        """Every tree in one ForestPredictor (packed anew if the trees changed;
        with ``check_trees``, also if a round holds other tree objects)."""
        cache = getattr(self, "_forest_cache", None)
        # the list itself (not its id) is kept, so a new list is always noticed
        if (cache is None or cache[0] is not self._predictors
                or cache[1] != len(self._predictors)
                or (check_trees and not cache[2].holds(self._predictors))):
            return ForestPredictor(self._predictors)
        return cache[2]

    def _raw_predict(self, X):
        """Raw predictions, shape (n_trees_per_iteration, n_samples)."""
        if not (self._is_fitted() and self._is_plain_array(X)):
            check_is_fitted(self)
            X = self._validate_X(X, reset=False)
        return self._raw_predict_validated(X, effective_n_threads(self.n_threads))

    def _is_plain_array(self, X):
        """X needs no validation: a 2-D float array of the fitted width, fitted on
        an array (no feature names to check) without pooled categorical
        features. The lean path of small predictions."""
        return (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] > 0
                and X.dtype in _PLAIN_DTYPES and X.shape[1] == self.n_features_in_
                and getattr(self, "feature_names_in_", None) is None
                and not getattr(self, "_categorical_pooled", None))  # codes -> bins

    def _staged_raw_predict(self, X):
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        n_threads = effective_n_threads(self.n_threads)
        raw = np.empty((len(self._baseline_prediction), X.shape[0]), dtype=Y_DTYPE)
        raw[:] = self._baseline_prediction[:, None]
        for trees in self._predictors:
            for k, tree in enumerate(trees):
                tree.predict_add(X, raw[k], n_threads)
            yield raw.copy()


def interaction_groups(interaction_cst, n_features):
    """Interaction constraints as a list of feature-index sets, or None.

    Features listed in no group form one more group together.
    """
    if interaction_cst is None:
        return None
    if interaction_cst == "no_interactions":
        groups = [{f} for f in range(n_features)]
    elif interaction_cst == "pairwise":
        groups = [set(pair) for pair in itertools.combinations(range(n_features), 2)]
    else:
        try:
            groups = [set(group) for group in interaction_cst]
        except TypeError:
            raise ValueError("interaction_cst must be 'pairwise', 'no_interactions' or a "
                             f"list of feature-index groups, got {interaction_cst!r}.")
        for group in groups:
            bad = [f for f in group if not (isinstance(f, Integral)
                                            and not isinstance(f, bool)
                                            and 0 <= f < n_features)]
            if bad:
                raise ValueError(f"interaction_cst holds invalid feature indices {bad}: "
                                 f"indices must be integers in [0, {n_features - 1}].")
    rest = set(range(n_features)).difference(*groups)
    if rest:
        groups.append(rest)
    return groups


#: Parameters shared by both estimators (numpydoc), formatted into their docstrings.
COMMON_PARAMETERS_DOC = """\
    learning_rate : float, default=0.1
        Shrinkage applied to every leaf value.
    max_iter : int, default=100
        Maximum number of boosting rounds (one tree each, or one per class
        for multiclass classification). Without column sampling, the fit
        also ends when no tree of a round can split (as LightGBM's does):
        later rounds could not split either, and their one-leaf trees would
        only add rounding noise; that round is not kept.
    max_leaf_nodes : int or None, default=31
        Maximum leaves per tree; None for no limit.
    max_depth : int or None, default=None
        Maximum depth of a tree (the root is depth 0); None for no limit.
    min_samples_leaf : int, default=20
        Minimum number of rows in a leaf.
    min_child_weight : float, default=1e-3
        Minimum sum of hessians in a leaf. A tree whose root holds less
        (e.g. a rare class whose probability underflowed) takes no Newton
        step: -G/H of a vanishing H is unbounded.
    min_gain_to_split : float, default=0.0
        Gain a split must exceed (γ; subtracted from every split's gain). The
        gain is ½[G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)], half of
        LightGBM's and XGBoost's: their ``min_split_gain`` / ``gamma`` of 2γ
        equals hgbt's γ.
    l1_regularization : float, default=0.0
        L1 penalty α on leaf values: gradient sums are soft-thresholded by α
        in gains and leaf values.
    l2_regularization : float, default=0.0
        L2 penalty λ on leaf values.
    max_bins : int, default=255
        Maximum value bins per feature (2 to 255); missing values get one more.
    enable_bundle : bool, default=True
        Exclusive feature bundling: features that are rarely non-zero on the
        same rows (one-hot, counts, flags) share one binned column, so wide
        sparse data trains like a few dense columns. Splits are still on the
        original features (``doc/sparse.md``).
    max_conflict_rate : float, default=0.0
        Share of the rows on which bundled features may both be non-zero (on
        such a row the feature with more non-zeros keeps its value, the other
        is seen as 0 during training). 0 keeps the model exactly the
        unbundled one.
    use_quantized_grad : bool, default=False
        Build histograms from gradients and hessians rounded stochastically
        to a few integer levels (LightGBM's ``use_quantized_grad``). One
        integer add then updates a bin's gradient and hessian sums, so
        histograms (most of a fit) build faster (measured in
        ``benchmarks/RESULTS.md``). Splits are
        chosen on the quantized sums; leaf values are refit from the exact
        float sums of each leaf's rows. Rounding is seeded by
        ``random_state``, so the model still does not depend on the thread
        count. Not supported by the Dask estimators yet.
    num_grad_quant_bins : int, default=32
        Levels of the quantized gradients (within ±bins/2) and hessians
        (within [0, bins]); more levels are more accurate. 32 packs like 16
        (the same speed) and rounds the small hessians of multiclass rows
        less coarsely.
    grow_policy : {'lossguide', 'depthwise'}, default='lossguide'
        'lossguide' splits the leaf with the largest gain first; 'depthwise'
        grows level by level (still capped by ``max_leaf_nodes``: set it to
        None and use ``max_depth`` for XGBoost-style depth-wise trees).
    early_stopping : 'auto' or bool, default='auto'
        Stop when the validation score has not improved by more than ``tol``
        for ``n_iter_no_change`` rounds. 'auto' turns it on above 10,000
        rows, or when ``X_val`` is given to ``fit``.
    scoring : str, callable or None, default='loss'
        Score used for early stopping: 'loss' (the training loss, negated),
        or a scikit-learn scorer name or callable (None: the estimator's
        ``score``).
    validation_fraction : float, int or None, default=0.1
        Share (or number) of training rows held out for early stopping
        (stratified for classifiers); None scores the training data.
    n_iter_no_change : int, default=10
        Rounds without improvement before stopping.
    tol : float, default=1e-7
        Minimum score improvement that counts.
    warm_start : bool, default=False
        Continue from the fitted rounds up to ``max_iter`` instead of
        starting again (binning and validation split are kept).
    subsample : float, default=1.0
        With ``data_sample_strategy='bagging'``, share of rows (drawn
        without replacement, anew each round) each round's trees are grown on.
    data_sample_strategy : {'bagging', 'goss'}, default='bagging'
        'goss' keeps the ``goss_top_rate`` rows with the largest
        ``|gradient × hessian|`` and a random ``goss_other_rate`` of the
        others, whose gradients and hessians are scaled by
        ``(1 - top_rate) / other_rate`` so sums stay unbiased.
    goss_top_rate, goss_other_rate : float, default=0.2, 0.1
        GOSS shares (see ``data_sample_strategy``).
    colsample_bytree : float, default=1.0
        Share of features each tree may split on.
    colsample_bynode : float, default=1.0
        Share of the tree's features each node may split on.
    categorical_features : 'from_dtype', array-like or None, default='from_dtype'
        Features split on category subsets rather than thresholds: a boolean
        mask, integer indices, or feature names; 'from_dtype' takes pandas
        ``category`` and string columns, polars ``Categorical``/``Enum``/
        ``String`` and Arrow dictionary and string columns. Categories are
        non-negative integers (or the DataFrame's values), any number per
        feature: beyond 255 (or integer codes >= 255), the 254 most frequent
        are bins and the others share one bin; categories unseen at fit
        follow the missing values (see ``doc/categorical.md``).
    max_cat_to_onehot : int, default=4
        Categorical features with at most this many categories are split one
        category against the rest; others by a scan of categories sorted by
        gradient / (hessian + ``cat_smooth``).
    cat_smooth : float, default=10.0
        Smoothing added to the hessian when ordering categories; categories
        with fewer rows than this in a node stay on the right in the sorted
        scan.
    cat_l2 : float, default=10.0
        Extra L2 regularisation of the children of a sorted-scan categorical
        split, in its gain only (leaf values use ``l2_regularization``).
    min_data_per_group : int, default=100
        Sorted scan: rows the categories added to the left set must hold
        before the next candidate, and rows that must remain on the right.
    max_cat_threshold : int, default=32
        Sorted scan: most categories of a left set taken from either end of
        the order (and at most half of them).
    monotonic_cst : array-like of int, dict or None, default=None
        Per feature -1 (decreasing), 0 (none) or 1 (increasing) constraint on
        the prediction; a dict maps feature indices or names to constraints.
        Regression and binary classification only.
    interaction_cst : {'pairwise', 'no_interactions'}, list of sets or None, default=None
        Groups of feature indices allowed to interact: every path of a tree
        uses features from one group only. Features in no group form one more
        group together.
    importance_type : {'gain', 'split'}, default='gain'
        What ``feature_importances_`` sums per feature: split gains or the
        number of splits.
    n_threads : int or None, default=None
        OpenMP threads the kernels use; None means all available cores (as
        limited by ``OMP_NUM_THREADS`` or threadpoolctl). A multiclass round
        grows its trees side by side, each on a share of the threads. An
        integer above 4 per usable CPU is clipped to that (same model).
    random_state : int, RandomState instance or None, default=None
        Seeds binning subsample, validation split and all sampling. Models
        are bit-identical for equal seeds, whatever ``n_threads``.
    verbose : int, default=0
        Print the training (and validation) score and elapsed time every
        ``verbose`` rounds (1: every round; 0: quiet)."""

COMMON_ATTRIBUTES_DOC = """\
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit, when they are all strings.
    is_categorical_ : ndarray of bool of shape (n_features_in_,) or None
        Categorical features; None when there are none.
    categorical_categories_ : list or None
        Per feature: None (numeric), or for a categorical feature the
        categories whose positions are its codes (DataFrame categories;
        mapped by value at prediction, unseen ones as missing), or the
        integer codes seen during fit. None without categorical features.
    n_iter_ : int
        Number of boosting rounds fitted (fewer than ``max_iter`` after
        early stopping, or when no tree could split; 0 when none could from
        the start: the model is then the baseline).
    n_trees_per_iteration_ : int
        Trees per round: the number of classes for multiclass, else 1.
    train_score_ : ndarray of shape (n_iter_ + 1,)
        Score on the training data before the first round and after each;
        empty without early stopping.
    validation_score_ : ndarray of shape (n_iter_ + 1,)
        The same on the validation data; empty without a validation set."""
