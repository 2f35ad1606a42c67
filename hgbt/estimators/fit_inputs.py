"""How a fit turns raw rows into training rows, for code outside the estimator.

``hgbt.dask``'s shards validate, convert and encode their rows as the local
``fit`` does: :class:`FitInputs` gives them that as plain data (the Booster's
input schema, the class labels and weights, the loss's parameters), with
the functions the estimators use themselves (:func:`encode_labels`,
:func:`class_weighted`, :func:`interaction_groups`, :func:`same_rows`).
"""
import itertools
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_X_y

from ..core._types import Y_DTYPE
from ..data.batches import BatchedRows
from ..engine.losses import get_loss
from ..model.booster import objective_from_params


def encode_labels(classes, y):
    """Class labels ``y`` as indices into the sorted ``classes`` (float64);
    ValueError for a label not among them."""
    encoded = np.minimum(np.searchsorted(classes, y), classes.size - 1)
    unseen = classes[encoded] != y
    if np.any(unseen):
        raise ValueError(f"y contains labels not seen during fit: "
                         f"{np.unique(np.asarray(y)[unseen])[:5]!r}")
    return encoded.astype(Y_DTYPE)


def class_weighted(class_weights, sample_weight, y_encoded):
    """``sample_weight`` (or None) times the class weights of the rows
    (``class_weights`` None: unchanged)."""
    if class_weights is None:
        return sample_weight
    weights = class_weights[y_encoded.astype(np.intp)]
    return weights if sample_weight is None else sample_weight * weights


class FitInputs:
    """Input validation and conversion, target encoding, class weights and
    the loss of a fit, as the estimator's own ``fit`` applies them.

    Built by the estimator (``BaseHistGBDT._fit_inputs``) once its input
    schema (features, names, categorical columns) and, for a classifier,
    its classes and class weights are set. Plain data: it pickles to Dask
    workers.

    Parameters
    ----------
    booster : Booster
        The model being fitted: its input schema (no trees needed).
    estimator_name : str
        Named in input errors.
    stratify : bool
        Whether targets are class labels (counted to find the classes, and
        not required to be numeric).
    loss_params : dict
        The estimator's parameters that define the loss.
    classes, class_weights : ndarray or None
        The class labels (sorted) and their weights, once known.
    n_outputs : int, default=1
        Columns of ``y``: > 1 for multi-output regression, or multi-label
        classification (``classes`` [0, 1], each column 0/1).

    Attributes
    ----------
    n_features : int
        Features of the fit.
    is_categorical : ndarray of bool or None
        Categorical features; None when there are none.
    """

    def __init__(self, booster, estimator_name, stratify, loss_params, classes=None,
                 class_weights=None, n_outputs=1):
        self.booster = booster
        self.estimator_name = estimator_name
        self.stratify = stratify
        self.loss_params = loss_params
        self.classes = classes
        self.class_weights = class_weights
        self.n_outputs = n_outputs
        self.n_features = booster.n_features_in_
        encoding = booster.categorical
        self.is_categorical = None if encoding is None else encoding.mask

    def validate_X(self, X, positions=False):
        """``X`` validated and converted as the fitted estimator's ``predict``
        converts it (DataFrame categories → codes; a float array); with
        ``positions``, pooled features as their categories' positions and no
        target statistics (as a fit reads them)."""
        return self.booster.prepare(X, positions=positions)

    def check_X_y(self, X, y):
        """The local ``fit``'s checks of validated rows and their targets
        (dtype, finite numeric regression targets); no rows is fine."""
        X, y = check_X_y(X, y, dtype=np.float64, ensure_all_finite=False,
                         accept_sparse="csr", ensure_min_samples=0,
                         y_numeric=not self.stratify, estimator=self.estimator_name,
                         multi_output=self.n_outputs > 1)
        if self.n_outputs > 1:
            if y.ndim != 2 or y.shape[1] != self.n_outputs:
                raise ValueError(f"y must have {self.n_outputs} columns on every worker, "
                                 f"got shape {y.shape}.")
            if self.classes is not None and not np.all((y == 0) | (y == 1)):
                raise ValueError("multi-label y must be a 0/1 indicator matrix.")
        return X, y

    def encode_y(self, y):
        """Targets as the fit encodes them (labels → class indices), float64."""
        if self.n_outputs > 1:  # several targets, or 0/1 labels, as given
            return np.ascontiguousarray(np.reshape(y, (-1, self.n_outputs)), dtype=Y_DTYPE)
        if y.shape[0] == 0:
            return np.empty(0, dtype=Y_DTYPE)
        if self.classes is not None:
            return encode_labels(self.classes, y)
        return np.ascontiguousarray(y, dtype=Y_DTYPE)

    def encoded(self, y, sample_weight):
        """``(encoded targets, class-weighted sample_weight)``, as the fit takes them."""
        y = self.encode_y(y)
        return y, self.class_weighted(sample_weight, y)

    def class_weighted(self, sample_weight, y_encoded):
        """``sample_weight`` (or None) times the class weights of the rows."""
        return class_weighted(self.class_weights, sample_weight, y_encoded)

    def make_loss(self, meta):
        """The fit's loss over rows of side information ``meta`` (a RowMeta)."""
        objective = objective_from_params(self.loss_params, self.classes)
        if self.n_outputs > 1:
            objective["n_outputs"] = self.n_outputs
        return get_loss(**objective, meta=meta)


def same_rows(X_a, y_a, w_a, X_b, y_b, w_b):
    """Whether a validation set holds exactly the training rows (validated
    arrays; the same objects, or equal values)."""
    if X_a is X_b and y_a is y_b:
        return True
    if isinstance(X_a, BatchedRows) or isinstance(X_b, BatchedRows):
        return False  # rows from batches are not kept to compare
    if X_a.shape != X_b.shape or y_a.shape != y_b.shape or not np.array_equal(y_a, y_b):
        return False
    if (w_a is None) != (w_b is None) or (w_a is not None and not np.array_equal(w_a, w_b)):
        return False
    if sp.issparse(X_a) or sp.issparse(X_b):
        return sp.issparse(X_a) and sp.issparse(X_b) and (X_a != X_b).nnz == 0
    return bool(np.array_equal(X_a, X_b, equal_nan=True))


def same_values(a, b):
    """Whether two optional per-row arrays are both None or equal."""
    return a is b or (a is not None and b is not None and np.array_equal(a, b))


def monotonic_constraints(cst, n_features, names=None):
    """``monotonic_cst`` (a list per feature, or a dict of feature indices or
    ``names`` to -1/0/1) as an int8 array, or None if it constrains nothing."""
    if cst is None:
        return None
    if isinstance(cst, dict):
        out = np.zeros(n_features, dtype=np.int64)
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
    return out.astype(np.int8) if np.any(out) else None


def interaction_groups(interaction_cst, n_features, names=None):
    """Interaction constraints as a list of feature-index sets, or None.

    Groups list feature indices, or names of ``names`` (the fit's
    ``feature_names_in_``), as ``monotonic_cst`` does. Features listed in no
    group form one more group together.
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
                             "list of groups of feature indices or names, got "
                             f"{interaction_cst!r}.")
        index = {} if names is None else {str(n): i for i, n in enumerate(names)}
        for k, group in enumerate(groups):
            named = [f for f in group if isinstance(f, str)]
            unknown = [f for f in named if f not in index]
            if unknown:
                raise ValueError(
                    f"interaction_cst names {unknown}, which are not feature names of X"
                    + ("" if names is not None else " (X has none: give indices)") + ".")
            groups[k] = {index[f] if isinstance(f, str) else f for f in group}
        # plain ints, whatever integer type was given (NumPy's from an array)
        groups = [{int(f) if isinstance(f, Integral) and not isinstance(f, bool) else f
                   for f in group} for group in groups]
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


def check_init_score(init_score, n_rows, n_trees, where="init_score"):
    """``init_score`` as float64 of shape ``(n_trees, n_rows)`` (one row of
    start scores per tree of a round), or None; accepts ``(n_rows,)`` for one
    tree and ``(n_rows, n_trees)`` (LightGBM's and XGBoost's layout)."""
    if init_score is None:
        return None
    if sp.issparse(init_score):
        raise TypeError(f"{where} must be a dense array of raw scores, not a sparse matrix.")
    try:
        scores = np.array(init_score, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where} must hold numbers ({exc}).") from exc
    if scores.ndim == 1 and n_trees == 1:
        scores = scores[:, None]
    expected = (n_rows,) if n_trees == 1 else (n_rows, n_trees)
    if scores.shape != (n_rows, n_trees):
        raise ValueError(f"{where} has shape {np.shape(init_score)}; expected {expected} "
                         "(a raw score per row" + (" and class)." if n_trees > 1 else ")."))
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{where} holds NaN or infinite values: start scores must be "
                         "finite.")
    return np.ascontiguousarray(scores.T)


def eval_init_scores(init_score, eval_init_score, n_sets, has_val, init_score_val):
    """Check that start scores are given for every set or for none: the
    training rows, ``X_val`` and each ``eval_set`` set."""
    given = init_score is not None
    if not given:
        if init_score_val is not None or eval_init_score is not None:
            raise ValueError("init_score_val and eval_init_score need init_score (the "
                             "training rows' start scores).")
        return [None] * n_sets
    if has_val and init_score_val is None:
        raise ValueError("init_score was given: give init_score_val too, the start scores "
                         "of X_val's rows (all sets start from scores, or none does).")
    if n_sets and eval_init_score is None:
        raise ValueError("init_score was given: give eval_init_score too, a start score "
                         "array per eval_set set (all sets start from scores, or none "
                         "does).")
    scores = [] if eval_init_score is None else list(eval_init_score)
    if len(scores) != n_sets:
        raise ValueError(f"eval_init_score has {len(scores)} entries; eval_set has "
                         f"{n_sets} sets.")
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise ValueError(f"eval_init_score has no start scores for eval_set {missing} "
                         "(or those Datasets carry none): all sets start from scores, or "
                         "none does.")
    return scores
