"""The native training API: ``hgbt.train`` and ``hgbt.cv`` on ``hgbt.Dataset``.

As LightGBM's ``lgb.train(params, lgb.Dataset(...))`` and XGBoost's
``xgb.train(params, DMatrix)``: ``params`` is a dict of the estimators'
parameters (``hgbt/core/params.py``, by hgbt's names), and the model is a
:class:`~hgbt.model.booster.Booster`. Both run the estimators' own fit on
the Dataset (an estimator's ``fit`` takes a Dataset in place of X), so
``train(params, Dataset(X, y))`` is the model
``HistGBDTRegressor(**params).fit(X, y)`` fits, bit for bit, when they stop
alike (``train`` holds no rows out: its early stopping watches
``valid_sets``), and a Dataset reused by several calls is binned by the
first.
"""
import numpy as np

from ..core.params import (CLASSIFIER, PARAMS, RANKER, RANKING_LOSSES, REGRESSOR, SURVIVAL,
                           SURVIVAL_LOSSES, params_of)
from ..data.dataset import Dataset
from ..model.booster import Booster
from .classifier import HistGBDTClassifier
from .monitoring import metric_name
from .ranker import HistGBDTRanker
from .regressor import HistGBDTRegressor
from .survival import HistGBDTSurvival

_TASKS = {CLASSIFIER: "classification", RANKER: "ranking", SURVIVAL: "survival",
          REGRESSOR: "regression"}

def _estimator(params, num_boost_round, has_validation, dataset):
    """The estimator that fits ``params`` (checked: hgbt's names only) on
    ``dataset``, whose binning parameters it takes where ``params`` has none."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of parameters, got {type(params).__name__}.")
    params = dict(params)
    loss = params.get("loss")
    kind = (CLASSIFIER if loss == "log_loss" else RANKER if loss in RANKING_LOSSES
            else SURVIVAL if loss in SURVIVAL_LOSSES else REGRESSOR)
    known = {p.name for p in params_of(kind)}
    unknown = sorted(set(params) - known)
    if unknown:
        hints = []
        for name in unknown:
            ours = list(dict.fromkeys(p.name for p in PARAMS
                                      if name in (p.lightgbm, p.xgboost, p.sklearn)))
            if name in {p.name for p in PARAMS}:
                hints.append(f"{name!r} is not a parameter of {_TASKS[kind]} "
                             "(loss='log_loss' classifies, 'lambdarank' and 'pairwise' "
                             "rank, 'cox' and 'aft' model survival)")
            elif len(ours) == 1:
                hints.append(f"{name!r} is another library's name; hgbt's is {ours[0]!r}")
            elif ours:
                hints.append(f"{name!r} is another library's name; hgbt's is one of "
                             f"{ours} (doc/parameters.md says which means what)")
        raise ValueError(f"Unknown parameters {unknown}" + (f": {'; '.join(hints)}"
                                                            if hints else "")
                         + ". doc/parameters.md lists hgbt's parameters.")
    if params.get("warm_start"):
        raise ValueError("warm_start is not a train() parameter: train() fits a new model.")
    if num_boost_round is not None:
        if "max_iter" in params and params["max_iter"] != num_boost_round:
            raise ValueError(f"max_iter={params['max_iter']} and num_boost_round="
                             f"{num_boost_round} disagree: give one.")
        params["max_iter"] = num_boost_round
    # early stopping watches the validation sets given; without any, a
    # hold-out would need the Dataset binned again
    params.setdefault("early_stopping", has_validation)
    params = {**dataset.binning, **params}
    return {CLASSIFIER: HistGBDTClassifier, RANKER: HistGBDTRanker,
            SURVIVAL: HistGBDTSurvival, REGRESSOR: HistGBDTRegressor}[kind](**params)


def train(params: dict, train_set: Dataset, num_boost_round: int | None = None, *,
          valid_sets: list | None = None, valid_names: list | None = None,
          callbacks: list | None = None) -> Booster:
    """Fit gradient-boosted trees on a Dataset.

    Parameters
    ----------
    params : dict
        Estimator parameters by hgbt's names (``doc/parameters.md``);
        ``loss='log_loss'`` classifies, ``'lambdarank'`` and ``'pairwise'``
        rank (the Dataset's ``qid`` or ``group``), ``'cox'`` and ``'aft'``
        model survival times (its ``label_upper_bound``), every other loss
        regresses. The
        binning parameters (``max_bins``, ``enable_bundle``,
        ``max_conflict_rate``, ``categorical_features``) are the Dataset's
        (given here, they must be equal). ``early_stopping`` defaults to whether
        ``valid_sets`` is given.
    train_set : Dataset
        With a label. Binned by the first fit on it, then reused.
    num_boost_round : int, default=None
        Rounds (``max_iter``); None: ``params``' or the default.
    valid_sets : list of Dataset, default=None
        Scored every round (``Dataset(X, y, reference=train_set)``); early
        stopping watches the first (``early_stopping_set`` names another).
    valid_names : list of str, default=None
        Their names ('valid_0', 'valid_1', ... by default).
    callbacks : list, default=None
        As the estimators' ``fit(callbacks=...)`` (:mod:`hgbt.callbacks`).

    Returns
    -------
    booster : Booster
        The fitted model, with ``best_iteration`` (None without early
        stopping's validation) and ``evals_result`` (per set and metric,
        entry ``i`` after ``i`` rounds).

    Examples
    --------
    >>> import numpy as np, hgbt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 4)); y = X[:, 0] + rng.normal(size=500)
    >>> data = hgbt.Dataset(X[:400], y[:400])
    >>> valid = hgbt.Dataset(X[400:], y[400:], reference=data)
    >>> booster = hgbt.train({"max_leaf_nodes": 15}, data, 50, valid_sets=[valid])
    >>> booster.predict(X[:2]).shape
    (2,)
    """
    if not isinstance(train_set, Dataset):
        raise TypeError(f"train_set must be an hgbt.Dataset, got {type(train_set).__name__}.")
    valid_sets = list(valid_sets or ())
    if not all(isinstance(v, Dataset) for v in valid_sets):
        raise TypeError("valid_sets must be Datasets (Dataset(X, y, reference=train_set)).")
    estimator = _estimator(params, num_boost_round, bool(valid_sets), train_set)
    estimator.fit(train_set, eval_set=valid_sets or None, eval_names=valid_names,
                  callbacks=callbacks)
    booster = estimator.booster_
    booster.best_iteration = estimator.best_iteration_
    booster.evals_result = estimator.evals_result_
    return booster


def cv(params: dict, train_set: Dataset, num_boost_round: int | None = None, *,
       nfold: int = 5, stratified: bool | None = None, shuffle: bool = True, seed: int = 0,
       return_boosters: bool = False) -> dict:
    """Cross-validated scores of ``params`` on a Dataset's rows, per round.

    Each of ``nfold`` folds is held out in turn; a model of
    ``num_boost_round`` rounds is fitted on the other rows (a Dataset of
    them, binned by its fit) and scored on the held-out ones after every
    round. The folds run every round: the best round is read off the mean
    curve afterwards (LightGBM's ``cv`` with early stopping stops the folds
    together at the same round).

    Parameters
    ----------
    params, num_boost_round : as :func:`train`
    train_set : Dataset
        With a label; not a validation set.
    nfold : int, default=5
    stratified : bool or None, default=None
        Folds with the class shares of the whole (None: for classification);
        a Dataset with query ids is cut into folds of whole queries.
    shuffle : bool, default=True
    seed : int, default=0
        Seeds the folds.
    return_boosters : bool, default=False
        Also return the folds' Boosters.

    Returns
    -------
    result : dict
        ``'<metric>-mean'`` and ``'<metric>-std'`` per metric of the
        held-out folds (arrays, entry ``i`` after ``i`` rounds; the fit's
        metrics, as ``evals_result_`` names them: ``'loss'``, ``scoring``,
        ``eval_metric``), ``'best_iteration'`` (the round of the best mean
        of ``scoring``: the lowest loss, or the highest score), and
        ``'boosters'`` with ``return_boosters``.
    """
    from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold

    if not isinstance(train_set, Dataset) or train_set.label is None:
        raise TypeError("train_set must be an hgbt.Dataset with a label.")
    params = dict(params)
    label = np.asarray(train_set.label)
    # one class a row (not a multi-label matrix): folds stratified by it
    classify = params.get("loss") == "log_loss" and (label.ndim == 1 or label.shape[1] == 1)
    stratified = classify if stratified is None else stratified
    # a Dataset with query ids: folds of whole queries
    splitter = (GroupKFold if train_set.qid is not None else StratifiedKFold if stratified
                else KFold)(n_splits=nfold, shuffle=shuffle,
                            random_state=seed if shuffle else None)
    params["early_stopping"] = False
    curves, boosters = {}, []
    label = train_set.label
    for train_rows, valid_rows in splitter.split(np.zeros((label.shape[0], 1)), label,
                                                 groups=train_set.qid):
        fold = train_set.subset(train_rows)
        held_out = train_set.subset(valid_rows, reference=fold)
        estimator = _estimator(params, num_boost_round, True, fold)
        estimator.fit(fold, eval_set=[held_out], eval_names=["valid"])
        scores = estimator.evals_result_.get("valid", {})
        if not scores:
            raise ValueError("cv has no metric to average: a callable loss has no loss "
                             "value; set scoring= (e.g. 'neg_mean_squared_error') or "
                             "eval_metric=.")
        for metric, values in scores.items():
            curves.setdefault(metric, []).append(values)
        boosters.append(estimator.booster_)
    result = {}
    for metric, values in curves.items():
        values = np.asarray(values, dtype=np.float64)  # folds × rounds
        result[f"{metric}-mean"] = values.mean(axis=0)
        result[f"{metric}-std"] = values.std(axis=0)
    watched = metric_name(estimator.scoring)
    mean = result[f"{watched}-mean"]
    result["best_iteration"] = int(np.nanargmin(mean) if watched == "loss"
                                   else np.nanargmax(mean))
    if return_boosters:
        result["boosters"] = boosters
    return result
