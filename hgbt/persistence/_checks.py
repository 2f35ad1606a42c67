"""Checks of an estimator's state read from a file or a pickle.

A model file or a pickle is untrusted input: the prediction and binning
kernels index arrays with the stored values without bounds checks. Both
loaders run :func:`check_state` on the flat state (``_flat.py``) they are
about to set, once, before a Booster is built from it or anything is packed
or predicted; a violation is a ``ValueError`` that names the attribute.
"""
import numpy as np

from ..core._openmp import effective_n_threads, max_threads
from ..data.binning import BinMapper
from ..data.categorical import CategoricalEncoding
from ..data.target_stats import n_columns
from ..engine.losses import get_loss
from ..model.booster import LOSS_PARAMS

#: what a stored loss may hold besides its name (get_loss's keywords)
LOSS_ARGUMENTS = (*(p for p in LOSS_PARAMS if p != "loss"), "n_classes")
from ..tree.predictor import TreePredictor
from ..tree.validation import InvalidTreeError, check_tree


def fail(where, problem):
    """Raise the loaders' ``ValueError`` for a problem at ``where``."""
    raise ValueError(f"Invalid hgbt model: {where}: {problem}.")


def _as_count(value, where, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low:
        fail(where, f"expected an integer >= {low}, got {value!r}")
    return int(value)


def check_params(cls, state):
    """The estimator parameters in ``state`` are valid for ``cls`` (as ``fit``
    validates them)."""
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
        expected = 1 if classes.size == 2 else classes.size
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


def check_bin_mapper(mapper, n_features, where="bin_mapper"):
    """The arrays the binning and split kernels index (``warm_start``) are
    consistent with ``n_features``; its thread count is clipped to
    :func:`hgbt.core._openmp.max_threads` (it may come from a bigger machine)."""
    if type(mapper) is not BinMapper:
        fail(where, f"expected a BinMapper, got {type(mapper).__name__}")
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
    n_threads = getattr(mapper, "n_threads", 1)
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) \
            or n_threads < 1:
        fail(f"{where}.n_threads", f"expected an integer >= 1, got {n_threads!r}")
    mapper.n_threads = min(int(n_threads), max_threads())
