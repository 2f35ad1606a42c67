"""Checks of an estimator's state read from a file or a pickle.

A model file or a pickle is untrusted input: the prediction and binning
kernels index arrays with the stored values without bounds checks. Both
loaders run :func:`check_state` on the flat state (``_flat.py``) they are
about to set, once, before a Booster is built from it or anything is packed
or predicted; a violation is a ``ValueError`` that names the attribute.
"""
from numbers import Integral

import numpy as np

from ..core._openmp import effective_n_threads, max_threads
from ..data.binning import BinMapper
from ..data.categorical import CategoricalEncoding
from ..data.target_stats import n_columns
from ..engine.losses import get_loss
from ..model.booster import LOSS_PARAMS
from ..tree.predictor import TreePredictor
from ..tree.validation import InvalidTreeError, check_tree
from ._flat import FLAT_MODEL_KEYS

#: what a stored loss may hold besides its name (get_loss's keywords)
LOSS_ARGUMENTS = (*(p for p in LOSS_PARAMS if p != "loss"), "n_classes", "n_outputs")


def fail(where, problem):
    """Raise the loaders' ``ValueError`` for a problem at ``where``."""
    raise ValueError(f"Invalid hgbt model: {where}: {problem}.")


def _as_count(value, where, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low:
        fail(where, f"expected an integer >= {low}, got {value!r}")
    return int(value)


def check_random_state(value, where):
    """``value`` is a ``random_state`` that scikit-learn's ``check_random_state``
    takes and NumPy can draw from: None, a seed, or a ``RandomState`` whose
    position in its key is in range (NumPy takes any position and then
    reads outside the key: a crash at the next draw)."""
    if value is None:
        return
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if not 0 <= value < 2**32:
            fail(where, f"a seed must be in [0, 2**32), got {value}")
        return
    if type(value) is not np.random.RandomState:
        fail(where, f"expected None, a seed or a RandomState, got {type(value).__name__}")
    try:
        name, key, pos, has_gauss, _ = value.get_state(legacy=True)
    except (TypeError, ValueError) as exc:
        fail(where, f"its state cannot be read ({exc})")
    if not (name == "MT19937" and isinstance(key, np.ndarray) and key.shape == (624,)
            and 0 <= pos <= 624 and has_gauss in (0, 1)):
        fail(where, "not a valid MT19937 state (the position must be in [0, 624])")


#: parameters added after models were first saved, with the value that
#: reproduces a model saved before them: a state without one gets it
ADDED_PARAMS = {"multi_strategy": "one_output_per_tree", "histogram_layout": "auto"}


def check_params(cls, state):
    """The estimator parameters in ``state`` are valid for ``cls`` (as ``fit``
    validates them); one of :data:`ADDED_PARAMS` the state lacks is set."""
    taken = getattr(cls, "_parameter_constraints", {})
    for name, value in ADDED_PARAMS.items():
        if name in taken and name not in state:
            state[name] = value
    check_random_state(state.get("random_state"), "params.random_state")
    probe = cls.__new__(cls)
    probe.__dict__.update(state)
    try:
        probe._validate_params()
    except AttributeError as exc:
        fail("params", f"a parameter is missing ({exc})")
    except (TypeError, ValueError) as exc:
        fail("params", str(exc))
    try:  # bool passes the Integral constraint; a too large count is clipped at use
        effective_n_threads(state.get("n_threads"))
    except ValueError as exc:
        fail("params", str(exc))


def _is_real(value):
    return isinstance(value, (int, float, np.integer, np.floating)) \
        and not isinstance(value, (bool, np.bool_))


def _check_history(value, state, where):
    # evals_result_: {set: {metric: [score per round]}}, continued by a warm start
    if not (isinstance(value, dict) and all(
            isinstance(name, str) and isinstance(metrics, dict) and all(
                isinstance(metric, str) and isinstance(scores, list)
                and all(_is_real(x) for x in scores) for metric, scores in metrics.items())
            for name, metrics in value.items())):
        fail(where, "expected {set name: {metric: [scores]}}")


def _check_trials(value, state, where):
    # tree_size_scores_: the tree sizes max_leaf_nodes='auto' compared
    keys = {"max_leaf_nodes", "l2_regularization", "n_iter", "score"}
    if not (isinstance(value, list) and all(
            isinstance(t, dict) and set(t) == keys and all(_is_real(t[k]) for k in keys)
            for t in value)):
        fail(where, f"expected a list of dicts of {sorted(keys)}")


def _check_cv_results(value, state, where):
    # cv_results_ (early_stopping='cv' or 'auto' on few rows): the folds'
    # mean and spread per round, and the rounds the fit runs (a warm start
    # of a checkpoint finishes them)
    if not isinstance(value, dict) or len(value) != 3 or "best_iteration" not in value:
        fail(where, "expected {'<metric>-mean', '<metric>-std', 'best_iteration'}")
    means = [k for k in value if isinstance(k, str) and k.endswith("-mean")]
    if len(means) != 1 or f"{means[0][:-5]}-std" not in value:
        fail(where, "expected {'<metric>-mean', '<metric>-std', 'best_iteration'}")
    curves = [value[means[0]], value[f"{means[0][:-5]}-std"]]
    if not all(isinstance(c, np.ndarray) and c.dtype == np.float64 and c.ndim == 1
               and c.size >= 1 and c.size == curves[0].size for c in curves):
        fail(where, "expected two 1-D float64 arrays of one length")
    _as_count(value["best_iteration"], f"{where}.best_iteration", 1)


def _check_optional_count(low):
    def check(value, state, where):
        if value is not None:
            _as_count(value, where, low)
    return check


def _check_best_iteration(value, state, where):
    if value is not None and _as_count(value, where, 0) > state.get("n_iter_", 0):
        fail(where, f"{value} is past the model's n_iter_ = {state.get('n_iter_')}")


def _check_optional_real(value, state, where):
    if value is not None and not _is_real(value):
        fail(where, f"expected None or a number, got {type(value).__name__}")


def _check_l2(value, state, where):
    if not (_is_real(value) and np.isfinite(value) and value >= 0):
        fail(where, f"expected a finite number >= 0, got {value!r}")


def _check_scores(value, state, where):
    if not (isinstance(value, np.ndarray) and value.dtype == np.float64 and value.ndim == 1):
        fail(where, "expected a 1-D float64 array")


def _check_flag(value, state, where):
    if not isinstance(value, (bool, np.bool_)):
        fail(where, f"expected a bool, got {type(value).__name__}")


def _check_seed(value, state, where):
    if _as_count(value, where, 0) >= 2**32:
        fail(where, "a seed must be below 2**32")


def _check_class_weights(value, state, where):
    classes = state.get("classes_")
    n = classes.size if isinstance(classes, np.ndarray) else -1
    if value is not None and not (
            isinstance(value, np.ndarray) and value.dtype == np.float64
            and value.shape == (n,) and np.all(np.isfinite(value)) and np.all(value >= 0)):
        fail(where, f"expected None or {n} finite non-negative float64 weights")


def _check_groups(value, state, where):
    # set again by each fit; checked as what a fit sets
    if value is not None and not (isinstance(value, list) and all(
            isinstance(g, set) and all(isinstance(f, Integral) and not isinstance(f, bool)
                                       and f >= 0 for f in g)
            for g in value)):
        fail(where, "expected None or a list of sets of feature indices")


def _check_monotonic(value, state, where):
    if value is not None and not (isinstance(value, np.ndarray) and value.ndim == 1
                                  and value.dtype.kind == "i"
                                  and np.all(np.isin(value, (-1, 0, 1)))):
        fail(where, "expected None or an integer array of -1, 0 and 1")


def _check_baseline_hazard(value, state, where):
    # a Cox model's Breslow estimate: event times (ascending) and the
    # cumulative hazard at each (non-decreasing, >= 0)
    if not (isinstance(value, np.ndarray) and value.dtype == np.float64 and value.ndim == 2
            and value.shape[0] == 2 and np.all(np.isfinite(value))
            and np.all(np.diff(value[0]) > 0) and np.all(value[1] >= 0)
            and np.all(np.diff(value[1]) >= 0)):
        fail(where, "expected a (2, n) float64 array of ascending times and their "
             "non-decreasing cumulative hazards")


def _check_n_outputs(value, state, where):
    # a regressor's targets, a classifier's labels: a tree a round each
    if _as_count(value, where, 2 if "classes_" in state else 1) != state.get(
            "n_trees_per_iteration_", value):
        fail(where, "a model grows one tree a round per output")


#: the fitted attributes of an estimator that a model file or a pickle holds
#: beside its parameters, the counts ``check_state`` checks and the Booster's
#: parts (``_flat.FLAT_MODEL_KEYS``), each with its check (what a warm start
#: or a reader of the attribute relies on). Any other name is refused.
FITTED_ATTRIBUTES = {
    "_seed": _check_seed,
    "_class_weights": _check_class_weights,
    "evals_result_": _check_history,
    "best_iteration_": _check_best_iteration,
    "best_score_": _check_optional_real,
    "train_score_": _check_scores,
    "validation_score_": _check_scores,
    "max_leaf_nodes_": _check_optional_count(2),
    "l2_regularization_": _check_l2,
    "tree_size_scores_": _check_trials,
    "cv_results_": _check_cv_results,
    "_tree_size_comparing": _check_flag,
    "_interaction_groups_": _check_groups,
    "_monotonic_cst_": _check_monotonic,
    "baseline_hazard_": _check_baseline_hazard,
    "n_outputs_": _check_n_outputs,
}
#: what ``check_state`` itself checks
COUNTED_ATTRIBUTES = ("n_features_in_", "feature_names_in_", "classes_", "n_iter_",
                      "n_trees_per_iteration_")


_FITTED_NAMES = frozenset(FITTED_ATTRIBUTES) | frozenset(COUNTED_ATTRIBUTES) \
    | frozenset(FLAT_MODEL_KEYS)


def check_attribute_names(cls, state):
    """No name of ``state`` shadows what ``cls`` defines (a method, a
    property), and a state without trees holds none of hgbt's fitted
    attributes.

    Other names are not hgbt's (a user's own, scikit-learn's callback
    bookkeeping): hgbt never reads them, and a pickle keeps them as any
    object's. A model file holds hgbt's only (its reader refuses others).
    """
    shadowing = sorted(name for name in state
                       if hasattr(cls, name) and name not in FLAT_MODEL_KEYS)
    if shadowing:
        fail("attributes", f"{shadowing} would hide what {cls.__name__} defines")
    if "_predictors" not in state:
        fitted = sorted(name for name in state if name in _FITTED_NAMES)
        if fitted:
            fail("attributes", f"fitted attributes {fitted} without trees")


def check_state(cls, state):
    """Raise ``ValueError`` unless ``state`` (an estimator's flat state,
    ``_flat.py``) is safe to set on a ``cls`` and predict with.

    Parameters are checked as ``fit`` checks them. A fitted state (one with
    ``_predictors``) must also have consistent counts (features, rounds,
    trees per round, baseline, classes), a valid bin mapper and trees that
    pass :func:`hgbt.tree.validation.check_tree`.
    """
    if not isinstance(state, dict):
        fail("state", f"expected a dict, got {type(state).__name__}")
    check_attribute_names(cls, state)
    check_params(cls, state)
    if "_predictors" not in state:
        return
    n_features = _as_count(state.get("n_features_in_"), "n_features_in_", 1)
    names = state.get("feature_names_in_")
    if names is not None and not (isinstance(names, np.ndarray) and names.shape == (n_features,)
                                  and all(isinstance(s, str) for s in names)):
        fail("feature_names_in_", f"expected {n_features} feature names")
    k_trees = _as_count(state.get("n_trees_per_iteration_"), "n_trees_per_iteration_", 1)
    if hasattr(cls, "predict_proba"):
        classes = state.get("classes_")
        if not (isinstance(classes, np.ndarray) and classes.ndim == 1 and classes.size >= 2):
            fail("classes_", "expected an array of at least two class labels")
        # a label's trees (multi-label: n_outputs_ labels), or a class's
        expected = state.get("n_outputs_", 1) if classes.size == 2 else classes.size
        if k_trees != expected:
            fail("n_trees_per_iteration_", f"expected {expected} for {classes.size} "
                                           f"classes, got {k_trees}")
    baseline = state.get("_baseline_prediction")
    if not (isinstance(baseline, np.ndarray) and baseline.dtype == np.float64
            and baseline.shape == (k_trees,)):
        fail("_baseline_prediction", f"expected a float64 baseline of shape ({k_trees},)")
    # the bin mapper and the trees also index the target-statistic columns
    # (their consistency with the pooled features is checked after the mapper)
    stats = state.get("_target_stats")
    try:
        width = n_features + n_columns(stats) if stats is not None else n_features
    except (TypeError, KeyError, IndexError, AttributeError):
        width = n_features
    mapper = state.get("_bin_mapper")
    check_bin_mapper(mapper, width)
    n_features += check_target_stats(state, n_features, k_trees)
    if n_features != width:
        fail("_target_stats", "does not match the bin mapper")
    check_objective(state.get("_objective"), k_trees)
    predictors = state["_predictors"]
    n_iter = _as_count(state.get("n_iter_"), "n_iter_", 0)
    if not isinstance(predictors, list) or len(predictors) != n_iter:
        fail("trees", f"expected a list of n_iter_ = {n_iter} rounds")
    for i, trees in enumerate(predictors):
        if not (isinstance(trees, list) and len(trees) == k_trees
                and all(type(tree) is TreePredictor for tree in trees)):
            fail(f"trees[{i}]", f"expected a list of {k_trees} TreePredictor")
        for k, tree in enumerate(trees):
            try:
                check_tree(getattr(tree, "nodes", None), getattr(tree, "cat_bitsets", None),
                           n_features, where=f"trees[{i}][{k}]")
            except InvalidTreeError as exc:
                fail(*str(exc).split(": ", 1))
    for name, check in FITTED_ATTRIBUTES.items():
        if name in state:
            check(state[name], state, name)


def check_objective(objective, k_trees):
    """A stored loss (None in states before it) that ``get_loss`` builds,
    with ``k_trees`` trees a round."""
    if objective is None:
        return
    if not (isinstance(objective, dict) and "loss" in objective
            and set(objective) <= {"loss", *LOSS_ARGUMENTS}):
        fail("_objective", "expected a dict of get_loss's arguments with 'loss'")
    try:
        loss = get_loss(**objective)
    except (TypeError, ValueError) as exc:
        fail("_objective", str(exc))
    if loss.n_trees_per_iteration != k_trees:
        fail("_objective", f"its loss grows {loss.n_trees_per_iteration} trees a round, "
                           f"the model {k_trees}")


def _pooled(state, n_features):
    """The pooled features of ``state``, as prediction finds them."""
    mask = state.get("is_categorical_")
    if mask is None:
        return []
    if not (isinstance(mask, np.ndarray) and mask.dtype == bool
            and mask.shape == (n_features,)):
        fail("is_categorical_", f"expected None or {n_features} booleans")
    try:
        return CategoricalEncoding(mask, state["categorical_categories_"],
                                   state["_categorical_by_value"]).pooled_features
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        fail("categorical_categories_", "expected the categories of each categorical "
                                        "feature")


def check_target_stats(state, n_features, k_trees, where="_target_stats"):
    """The pooled features of ``state`` and their target statistics
    (``data/target_stats.py``: None in models saved before them) are
    consistent with what prediction reads; returns the number of columns
    the statistics add."""
    pooled = _pooled(state, n_features)
    if bool(state.get("_categorical_pooled", False)) != bool(pooled):
        fail("_categorical_pooled", f"expected {bool(pooled)}: the pooled features are "
                                    f"{pooled}")
    stats = state.get("_target_stats")
    if stats is None:
        return 0
    if not (isinstance(stats, dict) and set(stats) == {"features", "tables", "weights"}):
        fail(where, "expected a dict of 'features', 'tables' and 'weights'")
    features, tables, weights = stats["features"], stats["tables"], stats["weights"]
    if not (isinstance(features, np.ndarray) and features.dtype == np.int64
            and features.tolist() == pooled):
        fail(f"{where}['features']", f"expected the pooled features {pooled} (int64)")
    n_out = 1 if k_trees == 1 else k_trees
    for name, values in (("tables", tables), ("weights", weights)):
        if not (isinstance(values, list) and len(values) == features.size):
            fail(f"{where}[{name!r}]", f"expected a list of {features.size} arrays")
    for i, (table, weight) in enumerate(zip(tables, weights)):
        n_categories = len(state["categorical_categories_"][pooled[i]])
        if not (isinstance(table, np.ndarray) and table.dtype == np.float64
                and table.shape == (n_categories, n_out) and np.all(np.isfinite(table))):
            fail(f"{where}['tables'][{i}]", f"expected finite float64 values of shape "
                                            f"({n_categories}, {n_out})")
        if not (isinstance(weight, np.ndarray) and weight.dtype == np.float64
                and weight.shape == (table.shape[0],) and np.all(np.isfinite(weight))
                and np.all(weight >= 0)):
            fail(f"{where}['weights'][{i}]", f"expected {table.shape[0]} finite "
                                             "non-negative float64 weights")
    return features.size * n_out


#: a bin mapper's attributes besides ``max_bins``, ``missing_bin`` and
#: ``bin_thresholds_`` (constructor parameters and fitted attributes)
BIN_MAPPER_ATTRIBUTES = frozenset({"categories_", "is_categorical", "is_categorical_",
                                   "known_cat_bitsets_", "n_bins_non_missing_", "n_threads",
                                   "random_state", "subsample"})


def check_bin_mapper(mapper, n_features, where="bin_mapper"):
    """The arrays the binning and split kernels index (``warm_start``) are
    consistent with ``n_features``; its thread count is clipped to
    :func:`hgbt.core._openmp.max_threads` (it may come from a bigger machine)."""
    if type(mapper) is not BinMapper:
        fail(where, f"expected a BinMapper, got {type(mapper).__name__}")
    unknown = sorted(set(vars(mapper)) - BIN_MAPPER_ATTRIBUTES
                     - {"max_bins", "missing_bin", "bin_thresholds_"})
    if unknown:
        fail(where, f"{unknown} are not attributes of a bin mapper")
    max_bins = getattr(mapper, "max_bins", None)
    if not isinstance(max_bins, (int, np.integer)) or not 2 <= max_bins <= 255:
        fail(f"{where}.max_bins", "expected an integer in [2, 255]")
    missing_bin = getattr(mapper, "missing_bin", None)
    if not isinstance(missing_bin, (int, np.integer)) or not max_bins <= missing_bin <= 255:
        fail(f"{where}.missing_bin", f"expected an integer in [{max_bins}, 255]")
    thresholds = getattr(mapper, "bin_thresholds_", None)
    if not isinstance(thresholds, list) or len(thresholds) != n_features:
        fail(f"{where}.bin_thresholds_", f"expected a list of {n_features} arrays")
    for f, t in enumerate(thresholds):
        if not (isinstance(t, np.ndarray) and t.dtype == np.float64 and t.ndim == 1
                and t.size <= max_bins - 1):
            fail(f"{where}.bin_thresholds_[{f}]",
                 f"expected at most {max_bins - 1} float64 thresholds")
        if np.any(np.isnan(t)) or np.any(np.diff(t) <= 0):
            fail(f"{where}.bin_thresholds_[{f}]", "thresholds must be strictly increasing")
    categorical = getattr(mapper, "is_categorical_", None)
    if categorical is not None:
        if not (isinstance(categorical, np.ndarray) and categorical.dtype == bool
                and categorical.shape == (n_features,)):
            fail(f"{where}.is_categorical_", f"expected {n_features} booleans")
    else:
        categorical = np.zeros(n_features, dtype=bool)
    n_bins = getattr(mapper, "n_bins_non_missing_", None)
    if n_bins is not None:
        numeric = ~categorical
        expected = np.array([t.size + 1 for t in thresholds])
        if not (isinstance(n_bins, np.ndarray) and n_bins.dtype.kind == "u"
                and n_bins.shape == (n_features,)
                and np.all((n_bins >= 1) & (n_bins <= missing_bin))
                and np.array_equal(n_bins[numeric], expected[numeric])):
            fail(f"{where}.n_bins_non_missing_",
                 "does not match the thresholds and the missing bin")
    known = getattr(mapper, "known_cat_bitsets_", None)
    if known is not None and not (isinstance(known, np.ndarray) and known.dtype == np.uint32
                                  and known.shape == (n_features, 8)):
        fail(f"{where}.known_cat_bitsets_", f"expected shape ({n_features}, 8), uint32")
    categories = getattr(mapper, "categories_", None)
    if categories is not None:  # per feature: None, or a categorical one's sorted codes
        if not (isinstance(categories, list) and len(categories) == n_features):
            fail(f"{where}.categories_", f"expected a list of {n_features} entries")
        for f, codes in enumerate(categories):
            if codes is None if categorical[f] else codes is not None:
                fail(f"{where}.categories_[{f}]", "expected codes for a categorical "
                                                  "feature only")
            if codes is not None and not (
                    isinstance(codes, np.ndarray) and codes.dtype == np.intp
                    and codes.ndim == 1 and np.all((codes >= 0) & (codes < 256))
                    and np.all(np.diff(codes) > 0)):
                fail(f"{where}.categories_[{f}]", "expected increasing codes in [0, 255]")
    declared = getattr(mapper, "is_categorical", None)  # the parameter: warm binning
    if declared is not None and not (isinstance(declared, np.ndarray) and declared.dtype == bool
                                     and declared.shape == (n_features,)):
        fail(f"{where}.is_categorical", f"expected None or {n_features} booleans")
    subsample = getattr(mapper, "subsample", None)
    if subsample is not None:
        _as_count(subsample, f"{where}.subsample", 1)
    check_random_state(getattr(mapper, "random_state", None), f"{where}.random_state")
    n_threads = getattr(mapper, "n_threads", 1)
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) \
            or n_threads < 1:
        fail(f"{where}.n_threads", f"expected an integer >= 1, got {n_threads!r}")
    mapper.n_threads = min(int(n_threads), max_threads())
