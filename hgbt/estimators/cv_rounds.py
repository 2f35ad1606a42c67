"""``early_stopping='cv'`` (and ``'auto'`` on 100 to ``AUTO_CV_MAX_ROWS``
rows): the number of rounds chosen by K-fold cross-validation on the
training rows, then one fit of all rows.

A hold-out of a few hundred rows scores too noisily to stop on (issue 37,
item 12): the fit stops at a dip of the noise and never trains on the rows
held out. Here each of ``N_FOLDS`` folds is held out in turn while a clone
of the estimator fits the other rows and scores the held-out ones after
every round, until ``FOLD_PATIENCE`` times ``n_iter_no_change`` rounds pass
without a better score (a stopped fold's score stays as it was); the first
round with the best mean score over the folds is the one kept, and the
estimator then fits every row for that many rounds. With
``max_leaf_nodes='auto'`` the second tree size is cross-validated too when
the first's best round is within ``n_iter_no_change`` of ``max_iter`` (as
the hold-out compares them only when the first size did not stop), and the
size with the better mean score is kept. Costs ``N_FOLDS`` early-stopped
fits (per size) before the final one: for small tables, where a fit takes
milliseconds. Callbacks see the final fit only; a checkpoint of it holds
``cv_results_``, so a warm start of the checkpoint finishes its rounds.
"""
import warnings
from dataclasses import dataclass, replace

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold
from sklearn.utils import _safe_indexing

from ..core.params import AUTO_TREE_SIZES
from .fit_inputs import check_init_score
from .monitoring import metric_name
from .sklearn_callbacks import uses_sklearn_callbacks

N_FOLDS = 5
# early_stopping='auto' cross-validates the rounds of a fit from
# AUTO_EARLY_STOPPING_ROWS rows up to this many; above, a tenth of the rows
# (1,000 or more) is a steady enough hold-out. Measured on 40 small real
# tables (benchmarks/accuracy_study.md): better than the hold-out on 20,
# worse on none.
AUTO_CV_MAX_ROWS = 10_000
# a fold's fit stops this many times n_iter_no_change rounds after its best
# score; its score then stays as it was for the rounds it did not grow. On
# the 20 held-out tables, 4 chose rounds within noise of folds run to
# max_iter on every table (2: worse on 2).
FOLD_PATIENCE = 4


@dataclass(frozen=True)
class CVChoice:
    """What the folds chose: the rounds and the tree size of the final fit,
    the mean and standard deviation over the folds of the watched metric
    after each round (entry ``i`` after ``i`` rounds) for the size kept, and
    the sizes compared (``tree_size_scores_``'s entries)."""

    n_rounds: int
    tree_size: dict
    metric: str
    mean: np.ndarray
    std: np.ndarray
    trials: tuple

    @property
    def best_score(self) -> float:
        """The mean score of the rounds kept (of the start, if no tree grew)."""
        return float(self.mean[min(self.n_rounds, self.mean.size - 1)])

    @classmethod
    def resumed(cls, estimator):
        """The choice a fitted estimator's fit was finishing, where it holds
        fewer rounds than its folds chose (a checkpoint of that fit, warm
        started): the rest of the rounds, on the same tree size; else None."""
        results = getattr(estimator, "cv_results_", None)
        if not results or estimator.n_iter_ >= results["best_iteration"]:
            return None
        metric = next(k for k in results if k.endswith("-mean"))[:-len("-mean")]
        size = {"max_leaf_nodes": estimator.max_leaf_nodes_,
                "l2_regularization": estimator.l2_regularization_}
        return cls(int(results["best_iteration"]), size, metric, results[f"{metric}-mean"],
                   results[f"{metric}-std"], tuple(estimator.tree_size_scores_))

    def results(self) -> dict:
        """``cv_results_``: as :func:`hgbt.cv` returns them."""
        return {f"{self.metric}-mean": self.mean, f"{self.metric}-std": self.std,
                "best_iteration": self.n_rounds}


def auto_cv(estimator, X, y, X_val, eval_set, warm, min_rows):
    """The rows (:func:`indexable`) when ``early_stopping='auto'``
    cross-validates this fit's rounds, else None: ``min_rows`` to
    ``AUTO_CV_MAX_ROWS`` rows (any container but a Dataset) with a matching
    1-d ``y``, nothing else to watch (no ``X_val``, ``eval_set`` or
    ``early_stopping_set``), a hold-out to replace (``validation_fraction``),
    a score to average, every class in each fold, no warm start and no
    ``truncate_at_best``. Callbacks do not decide: a progress bar or a
    checkpoint must not change the model."""
    from ..data.dataset import Dataset
    if (isinstance(X, Dataset) or X_val is not None or eval_set or warm or y is None
            or estimator.early_stopping_set is not None
            or estimator.validation_fraction is None or estimator.truncate_at_best
            or (callable(getattr(estimator, "loss", None)) and estimator.scoring == "loss")):
        return None
    X = indexable(X)
    if X is None:
        return None
    try:
        y = np.asarray(y)
    except Exception:  # the fit's checks say what is wrong
        return None
    n = X.shape[0]
    if y.ndim != 1 or y.shape[0] != n or not min_rows <= n < AUTO_CV_MAX_ROWS:
        return None
    if is_classifier(estimator):
        try:
            counts = np.unique(y, return_counts=True)[1]
        except TypeError:  # mixed label types: the fit's checks say so
            return None
        if counts.size < 2 or counts.min() < N_FOLDS:
            return None
    return X


def check_cv_fit(estimator, warm, X_val, given):
    """ValueError where ``early_stopping='cv'`` has no meaning (a Dataset, ``X_val``,
    a warm start, ``early_stopping_set``, ``truncate_at_best``)."""
    if given:
        raise ValueError("early_stopping='cv' cross-validates the rows of an array or "
                         "DataFrame; for a Dataset use hgbt.cv and train with its "
                         "best_iteration.")
    if X_val is not None:
        raise ValueError("early_stopping='cv' chooses the rounds on folds of the training "
                         "rows; X_val would not be used: pass early_stopping=True to stop "
                         "on X_val.")
    if warm:
        raise ValueError("early_stopping='cv' cannot continue a fitted model "
                         "(warm_start=True): the folds would start from nothing.")
    if estimator.early_stopping_set is not None:
        raise ValueError("early_stopping='cv' watches the held-out folds: "
                         f"early_stopping_set={estimator.early_stopping_set!r} has no "
                         "meaning with it; leave it None.")
    if estimator.truncate_at_best:
        raise ValueError("truncate_at_best has no meaning with early_stopping='cv': the "
                         "final fit already stops at the best round of the folds.")


def indexable(X):
    """``X`` as rows the folds can take (``_safe_indexing``): arrays, sparse
    matrices and data frames as they are (COO as CSR, the fit's own
    canonical form), any other array-like (a list, an object with
    ``__array__``) as the NumPy array the fit would make of it; None where
    rows cannot be taken (the fit's checks then say what is wrong)."""
    import scipy.sparse as sp
    from ..data.frames import normalize_frame
    if sp.issparse(X):
        return X.tocsr() if X.format not in ("csr", "csc") else X
    if hasattr(X, "columns"):  # a data frame: polars' lazy ones collected
        X = normalize_frame(X)
    elif not isinstance(X, np.ndarray):
        try:
            X = np.asarray(X)
        except Exception:
            return None
    try:
        _safe_indexing(X, [0])
    except Exception:
        return None
    return X if len(getattr(X, "shape", ())) == 2 else None


def plan_rounds(estimator, X, y, sample_weight, init_score, qid, X_val, eval_set, warm,
                min_rows, new_seed):
    """``(choice, fresh)``: the :class:`CVChoice` a fit runs (None: a hold-out,
    or no early stopping), and whether its folds were fitted now (else the
    rest of a checkpoint's rounds). ``new_seed()`` seeds the folds; with
    ``qid`` (a ranker's query ids) the folds keep queries whole."""
    from ..data.dataset import Dataset
    if warm and estimator.early_stopping in ("auto", "cv"):
        resumed = CVChoice.resumed(estimator)
        if resumed is not None:
            return resumed, False
    rows = (auto_cv(estimator, X, y, X_val, eval_set, warm, min_rows)
            if estimator.early_stopping == "auto" else None)
    if rows is None and estimator.early_stopping != "cv":
        return None, False
    n_queries = None if qid is None else np.unique(np.asarray(qid)).size
    if n_queries is not None and n_queries < N_FOLDS:
        if estimator.early_stopping != "cv":
            return None, False  # 'auto': a hold-out of whole queries instead
        raise ValueError(f"early_stopping='cv' folds whole queries: it needs at least "
                         f"{N_FOLDS} queries, got {n_queries}.")
    check_cv_fit(estimator, warm, X_val, isinstance(X, Dataset))
    rows = indexable(X) if rows is None else rows
    if rows is None:
        raise ValueError("early_stopping='cv' needs X as an array, a sparse matrix or a "
                         "data frame, whose rows the folds can take.")
    return choose_rounds(estimator, rows, y, sample_weight, init_score, new_seed(),
                         qid), True


def _sizes(estimator):
    """The tree sizes to cross-validate, in the order 'auto' tries them."""
    leaves, l2 = estimator.max_leaf_nodes, estimator.l2_regularization
    if leaves != "auto":
        return [{"max_leaf_nodes": leaves, "l2_regularization":
                 AUTO_TREE_SIZES[0]["l2_regularization"] if l2 == "auto" else l2}]
    return [dict(size) if l2 == "auto" else {**size, "l2_regularization": l2}
            for size in AUTO_TREE_SIZES]


def _fold_curves(estimator, size, folds, X, y, sample_weight, init_score, qid):
    """The watched metric on each held-out fold after every round."""
    metric = metric_name(estimator.scoring)
    curves = []
    for train, held_out in folds:
        # each fold stops FOLD_PATIENCE times n_iter_no_change rounds after its
        # best (a large max_iter at a small learning rate costs its rounds,
        # not max_iter of them); silent, and without scikit-learn's
        # callbacks, which clone copies: the user's see the final fit only
        model = clone(estimator).set_params(
            early_stopping=True, early_stopping_set="cv", verbose=0,
            n_iter_no_change=FOLD_PATIENCE * estimator.n_iter_no_change, **size)
        if uses_sklearn_callbacks(model):
            model.set_callbacks()

        def rows(a, idx):
            return None if a is None else _safe_indexing(a, idx)

        # a fold's artefacts are not the data's: many classes in a small
        # held-out fold, a loss overflowing on its way to the fit's own error
        # (other warnings, e.g. hgbt's after a fork, reach the user)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The number of unique classes",
                                    category=UserWarning)
            warnings.filterwarnings(
                "ignore", message="(overflow|invalid value|divide by zero) encountered",
                category=RuntimeWarning)
            model.fit(rows(X, train), y[train], sample_weight=rows(sample_weight, train),
                      eval_set=[(rows(X, held_out), y[held_out])], eval_names=["cv"],
                      eval_sample_weight=[rows(sample_weight, held_out)],
                      init_score=rows(init_score, train),
                      eval_init_score=None if init_score is None else [rows(init_score,
                                                                            held_out)],
                      **({} if qid is None else {"qid": qid[train],
                                                 "eval_qid": [qid[held_out]]}))
        scores = model.evals_result_.get("cv", {}).get(metric)
        if scores is None:
            raise ValueError("early_stopping='cv' has no score to average: a callable "
                             "loss has no loss value; set scoring= (e.g. "
                             "'neg_mean_squared_error').")
        curves.append(np.asarray(scores, dtype=np.float64))
    # a fold whose fit stopped (its patience, or no tree could split) keeps
    # its model, and so its score, for the rounds it did not grow
    length = max(c.size for c in curves)
    return metric, np.vstack([np.pad(c, (0, length - c.size), mode="edge") for c in curves])


def choose_rounds(estimator, X, y, sample_weight, init_score, seed, qid=None):
    """Cross-validate ``estimator``'s rounds (and its 'auto' tree sizes) on
    the rows ``X`` (as :func:`indexable` gives them), ``y``.

    Returns
    -------
    CVChoice
    """
    y = np.asarray(y)
    weight = None if sample_weight is None else np.asarray(sample_weight)
    # several targets, or labels (multi-label): a column each, never stratified
    columns = y.shape[1] if y.ndim == 2 and y.shape[1] > 1 else 1
    by_class = is_classifier(estimator) and columns == 1
    if init_score is not None:  # checked on every row, before the folds cut it
        k = np.unique(y).size if by_class else columns  # trees a round
        check_init_score(init_score, y.shape[0], k if k > 2 or not by_class else 1)
    splitter = (GroupKFold if qid is not None else StratifiedKFold
                if by_class else KFold)(
        n_splits=N_FOLDS, shuffle=True, random_state=seed)
    qid = None if qid is None else np.asarray(qid)
    folds = list(splitter.split(np.zeros((y.shape[0], 1)), y, groups=qid))
    lower_is_better = metric_name(estimator.scoring) == "loss"
    best = None
    trials = []
    for size in _sizes(estimator):
        metric, curves = _fold_curves(estimator, size, folds, X, y, weight, init_score, qid)
        mean = curves.mean(axis=0)
        oriented = -mean if lower_is_better else mean  # higher is better
        # entry 0 scores the start (no tree); the first round of the best
        # mean (tol, an absolute amount, only decides between tree sizes:
        # targets of any scale keep their rounds); no round grown: one
        rounds = 1 + int(np.argmax(oriented[1:])) if oriented.size > 1 else 1
        score = float(oriented[min(rounds, oriented.size - 1)])
        trials.append({**size, "n_iter": rounds, "score": score})
        choice = CVChoice(rounds, size, metric, mean, curves.std(axis=0), ())
        if best is None or score > best[0] + estimator.tol:
            best = (score, choice)
        if rounds < estimator.max_iter - estimator.n_iter_no_change:
            break  # stopped well before max_iter: larger trees are not tried
    return replace(best[1], trials=tuple(trials) if len(trials) > 1 else ())
