"""``DaskHistGBDTRegressor`` and ``DaskHistGBDTClassifier``: fit on a Dask cluster.

A distributed fit gives the model the local estimator fits on the same rows,
bit for bit (see ``doc/dask.md``). The fitted estimator is also a fitted
local estimator: it predicts NumPy input in process and dask collections
lazily, block by block.
"""
from __future__ import annotations

import functools
import inspect
import secrets
import typing
from collections.abc import Callable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..core._openmp import effective_n_threads
from ..core.row_meta import Queries, RowMeta, check_qid
from ..data import target_stats
from ..data.binning import BinMapper
from ..data.dataset import MatrixLike
from ..engine.evaluation import TRAIN, ScoredRows, training_score_rows
from ..estimators.classifier import HistGBDTClassifier
from ..estimators.fit_inputs import interaction_groups
from ..estimators.gradient_boosting import y_columns
from ..estimators.monitoring import VALIDATION, Monitor
from ..estimators.ranker import HistGBDTRanker, split_qid
from ..estimators.survival import HistGBDTSurvival
from ..estimators.regressor import HistGBDTRegressor
from ..model.booster import Booster
from ..tree.training_data import most_used_layout
from ._collections import (categories_of_all_rows, categorize_strings, is_dask_collection,
                           partitions, predict_blocks, set_schema)
from ._shard import Shard
from ._training import (ShardGroup, WorkerLostError, boost_on_shards, lost_workers_raise,
                        merge)

if TYPE_CHECKING:
    import dask.array as da
    import dask.dataframe as dd
    from distributed import Client

#: the estimator ``fit`` returns: the one it was called on, of its own class
DaskEstimator = TypeVar("DaskEstimator", bound="_DaskMixin")

#: parameters of the Dask estimators that the local ones do not have
DASK_PARAMS = ("client", "timeout", "tree_learner", "top_k")

def _dask_init(local_class: type) -> Callable[..., None]:
    """``__init__`` with the local estimator's parameters plus ``client``,
    ``timeout``, ``tree_learner`` and ``top_k``."""
    signature = inspect.signature(local_class.__init__)
    extra = [inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None,
                               annotation="Client | None"),
             inspect.Parameter("timeout", inspect.Parameter.KEYWORD_ONLY, default=300.0,
                               annotation="float"),
             inspect.Parameter("tree_learner", inspect.Parameter.KEYWORD_ONLY,
                               default="data", annotation="str"),
             inspect.Parameter("top_k", inspect.Parameter.KEYWORD_ONLY, default=20,
                               annotation="int")]

    def __init__(self, *args, client=None, timeout=300.0, tree_learner="data", top_k=20,
                 **kwargs):
        local_class.__init__(self, *args, **kwargs)
        self.client = client
        self.timeout = timeout
        self.tree_learner = tree_learner
        self.top_k = top_k

    # scikit-learn reads the parameter names from the signature
    __init__.__signature__ = signature.replace(
        parameters=list(signature.parameters.values()) + extra)
    # the local parameters' hints resolved (their names are hgbt.core.params'),
    # the others evaluated here
    __init__.__annotations__ = {**typing.get_type_hints(local_class.__init__),
                                **{p.name: p.annotation for p in extra}}
    return __init__


def _columns_of(y, multi_output):
    """The columns of a target collection (1 for a 1-D one or a single
    column); several only for an estimator that takes several targets."""
    if y is None or getattr(y, "ndim", 1) == 1:
        return 1
    if y.ndim != 2:
        raise ValueError(f"y must be 1- or 2-dimensional, got {y.ndim} dimensions.")
    width = int(y.shape[1])
    if width > 1 and not multi_output:
        raise ValueError("a distributed fit of this estimator takes one target (y of "
                         "shape (n_samples,)).")
    return width


class _DaskMixin:
    """Distributed ``fit``, lazy prediction on dask collections, ``to_local``."""

    _parameter_constraints = {"client": "no_validation",
                              "timeout": [Interval(Real, 0, None, closed="neither")],
                              "tree_learner": [StrOptions({"data", "feature", "voting"})],
                              "top_k": [Interval(Integral, 1, None, closed="left")]}

    def _local_params(self):
        params = self.get_params(deep=False)
        for name in DASK_PARAMS:
            params.pop(name)
        return params

    def _check_distributed(self, has_val):
        if self.max_conflict_rate > 0:
            raise ValueError("max_conflict_rate > 0 is not supported by the Dask "
                             "estimators: workers keep every feature in its own column, "
                             "so bundling with conflicts could not be reproduced.")
        if self.early_stopping == "cv":
            raise ValueError("early_stopping='cv' is not supported by the Dask estimators "
                             "(its folds are local fits): pass X_val and y_val with "
                             "early_stopping=True, or fit locally.")
        # 'auto' on a cluster: X_val's early stopping, never cross-validated rounds
        early_stopping = (has_val if self.early_stopping == "auto"
                          else bool(self.early_stopping))
        if has_val and not early_stopping:
            raise ValueError("X_val and y_val are only used for early stopping, which "
                             "early_stopping=False turns off.")
        if early_stopping and not has_val and self.validation_fraction is not None:
            raise ValueError("Early stopping on a cluster needs X_val and y_val (dask "
                             "collections), or validation_fraction=None to score the "
                             "training rows; there is no hold-out split.")
        return early_stopping

    def _get_client(self):
        if self.client is not None:
            return self.client
        from distributed import get_client
        try:
            return get_client()
        except ValueError as exc:
            raise ValueError("No Dask client: pass client=... or create a "
                             "distributed.Client first.") from exc

    def fit(self: DaskEstimator, X: da.Array | dd.DataFrame, y: da.Array | dd.Series,
            sample_weight: da.Array | dd.Series | None = None, *,
            X_val: da.Array | dd.DataFrame | None = None,
            y_val: da.Array | dd.Series | None = None,
            sample_weight_val: da.Array | dd.Series | None = None,
            callbacks: list | None = None) -> DaskEstimator:
        """Fit on dask collections spread over the workers of a Dask cluster.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
            Training rows, partitioned along rows. They stay on their workers.
        y : dask array or dask Series of shape (n_samples,)
            Targets, partitioned like ``X``.
        sample_weight : dask array or dask Series, default=None
            Row weights, partitioned like ``X``.
        X_val, y_val, sample_weight_val : dask collections, default=None
            Validation set for early stopping ('validation' in
            ``evals_result_``; the Dask estimators take no ``eval_set``).
        callbacks : list, default=None
            Called around every round on the driver, as the local ``fit``'s
            (:mod:`hgbt.callbacks`).

        Returns
        -------
        self : object
            The fitted estimator; on any failure (including a lost worker,
            :class:`WorkerLostError`) it is left as it was.
        """
        return self._fit_dask(X, y, sample_weight, X_val, y_val, sample_weight_val, callbacks)

    def _fit_dask(self, X, y, sample_weight, X_val, y_val, sample_weight_val, callbacks,
                  fields=({}, {})):
        """``fit``, with more side information of the training and validation
        rows (``fields``: RowMeta field → dask collection partitioned as X,
        and as X_val: a ranker's query ids, a survival model's upper bounds)."""
        self._validate_params()
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")
        width = _columns_of(y, self._multi_output)
        if y_val is not None and _columns_of(y_val, self._multi_output) != width:
            raise ValueError(f"y_val must have the {width} column(s) of y.")
        if width > 1 and self.multi_strategy == "multi_output_tree":
            raise ValueError("Vector-leaf trees (multi_strategy='multi_output_tree') are not "
                             "grown on a cluster: use multi_strategy='one_output_per_tree', "
                             "or fit locally.")
        if X_val is None and sample_weight_val is not None:
            raise ValueError("sample_weight_val was given without X_val and y_val.")
        has_val = X_val is not None
        early_stopping = self._check_distributed(has_val)
        client = self._get_client()
        warm = self.warm_start and self._is_fitted()
        if warm and self.max_iter < self.n_iter_:
            raise ValueError(f"max_iter={self.max_iter} must be >= n_iter_={self.n_iter_} "
                             "when warm_start=True.")
        # fitted here, in place; on any failure the estimator is put back as it was
        saved = dict(vars(self))
        if warm:  # the lists the rounds extend are copies: the saved ones stay
            self.booster_ = self.booster_.continued(self._objective())
        else:
            params = self.get_params(deep=False)
            for name in [name for name in vars(self) if name not in params]:
                delattr(self, name)
        try:
            self._set_outputs(width, warm)
            self._fit_on_cluster(client, X, y, sample_weight, X_val, y_val,
                                 sample_weight_val, early_stopping, callbacks, warm, fields)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise
        return self

    def _fit_on_cluster(self, client, X, y, sample_weight, X_val, y_val, sample_weight_val,
                        early_stopping, callbacks, warm=False, fields=({}, {})):
        has_val = X_val is not None
        # string columns: the local fit's categories (a warm start's, its model's)
        X, X_val = categorize_strings(X, X_val, self.booster_.categorical if warm else None)
        encoding = set_schema(self, X, reset=not warm)
        if not warm:  # the model's input schema now; the rest once the shards are read
            self.booster_ = Booster(n_features_in=self.n_features_in_,
                                    feature_names_in=getattr(self, "feature_names_in_", None),
                                    categorical=encoding, objective={}, bin_mapper=None,
                                    baseline=None)
        train, train_workers = partitions(client, X, y, sample_weight, fields=fields[0])
        val, val_workers = (([], []) if not has_val
                            else partitions(client, X_val, y_val, sample_weight_val, "X_val",
                                            fields[1]))
        shards, placement = _start_shards(client, train, train_workers, val, val_workers,
                                       self.timeout)
        try:
            self.telemetry_ = self._fit_shards(
                shards, placement, early_stopping, has_val, callbacks, warm,
                (sample_weight is not None, sample_weight_val is not None))
        finally:
            # end the actors and free the partitions on the workers now
            shards.actors.clear()
            try:
                client.cancel(shards.futures + train + val)
            except Exception:  # a lost worker or closed client: nothing left to free
                pass

    def _fit_shards(self, shards, placement, early_stopping, has_val, callbacks, warm=False,
                    weighted=(False, False)):
        n_threads = effective_n_threads(self.n_threads)
        info = shards.call("inspect", self._fit_inputs(), weighted)
        n_total = int(sum(i["train"]["n_rows"] for i in info))
        if n_total == 0:
            raise ValueError("X has no rows.")
        if has_val and sum(i["val"]["n_rows"] for i in info) == 0:
            raise ValueError("X_val has no rows.")
        booster = self.booster_
        if self._stratify:
            if self._by_class():  # not multi-label: classes from the labels
                self._set_classes(info, warm)
            booster.classes = self.classes_
        booster.objective = self._objective()
        categories = {}
        encoding = booster.categorical
        if encoding is not None and not warm:
            categories, recode = categories_of_all_rows(
                encoding, [i["train"]["codes"] for i in info])
            if recode:  # pooled features: positions in the order of all rows
                shards.call("recode", recode)
        if not warm or not hasattr(self, "_seed"):  # a saved model holds no seed
            self._seed = self._new_seed()
        inputs = self._fit_inputs()  # with the classes and class weights now
        sizes = [i["partition_sizes"] for i in info]
        # the shards' ring: each listens, then connects to the next in rank order
        addresses = shards.call("open_ring")
        if self.tree_learner == "feature" and len(addresses) > self.n_features_in_:
            raise ValueError(f"tree_learner='feature' shares the {self.n_features_in_} "
                             f"features among the {len(addresses)} workers holding rows: "
                             "at most one worker per feature; use tree_learner='data'.")
        token = secrets.randbits(63)
        shards.call("join_ring", per_actor=[(rank, addresses, token, self.timeout)
                                            for rank in range(len(addresses))])
        # each shard's rows by their index among all rows (the bagging draws')
        row_ids = [global_rows for _, global_rows in _rows_on_shards(None, placement, sizes)]
        pooled = booster.pooled_features
        if pooled and warm and booster.target_stats is None:
            raise ValueError("This model was saved before pooled categorical features had "
                             "target statistics: continue it locally (warm_start with "
                             "to_local()), or fit it anew on the cluster.")
        if pooled:
            # the pooled features' target statistics, over the ring: a warm
            # start keeps its model's (its training rows cross-fitted anew)
            stats = shards.call("add_target_statistics", per_actor=[
                (inputs, pooled, [len(encoding.categories[f]) for f in pooled], self._seed,
                 ids, booster.target_stats if warm else None) for ids in row_ids])[0]
            if not warm:
                booster.target_stats = stats
        self._set_internal_constraints(
            interaction_groups(self.interaction_cst, self.n_features_in_,
                               getattr(self, "feature_names_in_", None)),
            self._check_monotonic_cst(self.n_features_in_))
        if not warm:  # a warm start bins by its model's mapper
            is_categorical = target_stats.with_numeric_columns(self.is_categorical_,
                                                               booster.target_stats)
            bin_mapper = BinMapper(max_bins=self.max_bins, random_state=self._seed,
                                   n_threads=n_threads, is_categorical=is_categorical)
            booster.bin_mapper = _fit_bin_mapper(bin_mapper, inputs, shards, placement,
                                                 sizes, n_total, categories)
        # the training rows scored each round: the local fit's, found on the shards
        # (a ranker's: whole queries, of the query ids of all rows)
        score_rows = training_score_rows(n_total, self._seed,
                                         _queries_of_all_rows(info, placement, sizes))
        scored_located = _rows_on_shards(score_rows, placement, sizes)
        local_rows = ([None] * len(placement) if score_rows is None else
                      [local for local, _ in scored_located])
        monitor = Monitor(self, [TRAIN] + ([VALIDATION] if has_val else []), early_stopping,
                          self._has_loss_value(), callbacks,
                          getattr(self, "evals_result_", None) if warm else None)
        scored, scored_order = None, None
        if monitor.needs_predictions:  # scorers on the driver
            val_placement = shards.val_placement
            val_sizes = [i["val_partition_sizes"] for i in info]
            scored, scored_order = _scored_rows(
                shards.call("scored_targets", per_actor=[(inputs, local)
                                                         for local in local_rows]),
                [rows for _, rows in scored_located],
                [rows for _, rows in _rows_on_shards(None, val_placement, val_sizes)],
                has_val)
        statistics = shards.call("start", per_actor=[
            (inputs, booster.bin_mapper, self.n_threads, local, ids,
             self.data_sample_strategy == "goss", scored is not None,
             booster if warm else None, self.tree_learner, self.top_k,
             self.histogram_layout)
            for local, ids in zip(local_rows, row_ids)])
        loss = self._make_loss()
        if not warm:  # a warm start's rows start from its model's predictions
            booster.baseline = loss.baseline_from_statistics(
                merge([s for s in statistics if s is not None]))
        telemetry = {}

        def run(settings, record, runner):
            telemetry.update(boost_on_shards(
                settings, shards, n_total, loss.n_trees_per_iteration,
                booster.baseline, has_val, record,
                monitor.evaluator(self, scored, self._round_view), runner, scored_order,
                warm))

        self._run_rounds(run, monitor, loss.n_trees_per_iteration, early_stopping, has_val,
                         n_threads, warm)
        # each shard chose for itself: the layout most of them used
        layouts = shards.call("histogram_layout")
        telemetry["histogram_layouts"] = layouts
        self.histogram_layout_ = most_used_layout(layouts)
        telemetry["n_workers"] = len(shards.actors)
        return telemetry

    # -------------------------------------------------------------- predict
    def to_local(self) -> HistGBDTRegressor | HistGBDTClassifier:
        """The fitted model as a plain local estimator (a deep copy).

        Returns
        -------
        estimator : HistGBDTRegressor or HistGBDTClassifier
        """
        check_is_fitted(self)
        return self._fitted_copy(self._local_class, self._local_params(),
                                 skip=("telemetry_",))

    def _set_outputs(self, width, warm):
        """The fit's targets: ``n_outputs_`` for several columns (a regressor's
        always), a multi-label classifier's classes; a warm start's must match."""
        if warm:
            if width != y_columns(self):
                raise ValueError(f"y has {width} column(s); the model was fitted on "
                                 f"{y_columns(self)}.")
            return
        if width > 1 and self._stratify:  # multi-label
            if self.class_weight is not None:
                raise ValueError("class_weight does not apply to multi-label y: weight "
                                 "rows with sample_weight.")
            self.classes_, self._class_weights = np.array([0, 1]), None
        if width > 1 or not self._stratify and self._multi_output:
            self.n_outputs_ = width

    def _lazy(self, method, X, iteration_range, n_outputs=None, dtype=np.float64):
        if not is_dask_collection(X):
            return getattr(super(), method)(X, iteration_range)
        check_is_fitted(self)
        return predict_blocks(X, functools.partial(getattr(self.to_local(), method),
                                                   iteration_range=iteration_range),
                              n_outputs, dtype)

    def _pickled_state(self, state):
        state["client"] = None  # a Client cannot be pickled; the default client is used
        return state


def _start_shards(client, train, train_workers, val, val_workers, timeout):
    """One Shard actor per worker holding partitions; returns them and the placement.

    The placement maps each shard to its training partitions' global row
    offsets, so binning-sample rows can be looked up on the right shard.
    """
    workers = sorted(set(train_workers) | set(val_workers))
    actors, placement, val_placement, futures = [], [], [], []
    for worker in workers:
        mine = [i for i, w in enumerate(train_workers) if w == worker]
        mine_val = [i for i, w in enumerate(val_workers) if w == worker]
        future = client.submit(Shard, [train[i] for i in mine], [val[i] for i in mine_val],
                               actor=True, workers=[worker], allow_other_workers=False)
        futures.append(future)
        with lost_workers_raise("start a shard", timeout):
            actors.append(future.result(timeout=timeout))
        placement.append(mine)
        val_placement.append(mine_val)
    group = ShardGroup(actors, timeout)
    group.futures = futures
    group.val_placement = val_placement  # each shard's validation partitions
    return group, placement


def _scored_rows(targets, train_rows, val_rows, has_val):
    """What scorers read on the driver: per set, ScoredRows of the targets,
    weights and query ids gathered from the shards (``targets``: each
    shard's ``((y, w, qid) training, (y, w, qid) validation)``), in the local
    fit's row order, and that order (``train_rows``, ``val_rows``: each
    shard's global rows). The rows themselves stay on the workers: scorers
    get an ``X`` without columns."""
    orders = [np.argsort(np.concatenate(rows), kind="stable")
              for rows in (train_rows, val_rows)]
    out = []
    for which, order in enumerate(orders[:1 + has_val]):
        y = np.concatenate([t[which][0] for t in targets])[order]
        weights = [t[which][1] for t in targets]
        w = None if weights[0] is None else np.concatenate(weights)[order]
        qids = [t[which][2] for t in targets if t[which][0].shape[0]]
        qid = (None if not qids or qids[0] is None
               else check_qid(np.concatenate(qids)[order], y.shape[0]))
        out.append(ScoredRows(np.empty((y.shape[0], 0)), y, RowMeta(w, qid=qid)))
    return out, tuple(orders)


def _queries_of_all_rows(info, placement, sizes):
    """The training rows' queries in global row order (None without query
    ids), checked: a query's rows on one worker only, where its gradients
    are computed."""
    shards = [i["train"] for i in info]
    if all(t.get("qid") is None for t in shards):
        return None
    # each shard's distinct ids: an id among two shards' is a query on two workers
    ids, counts = np.unique(np.concatenate([np.unique(t["qid"]) for t in shards
                                            if t["n_rows"]]), return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"query {ids[counts > 1][0]!r} has rows on two workers: a ranker's "
                         "query must stay in one partition (e.g. ddf.shuffle('qid'), or "
                         "set_index('qid'), before fit).")
    # each shard's rows are its partitions' in order: their global positions
    part_sizes = np.zeros(sum(len(p) for p in placement), dtype=np.int64)
    for parts, shard_sizes in zip(placement, sizes):
        part_sizes[parts] = shard_sizes
    offsets = np.r_[0, np.cumsum(part_sizes)]
    positions = np.concatenate([np.zeros(0, np.intp)] + [
        np.arange(offsets[part], offsets[part] + part_sizes[part])
        for parts, t in zip(placement, shards) if t["n_rows"] for part in parts])
    values = np.concatenate([t["qid"] for t in shards if t["n_rows"]])
    qid = np.empty_like(values)
    qid[positions] = values
    return Queries(check_qid(qid, qid.shape[0]))


def _rows_on_shards(rows, placement, sizes):
    """Per shard, the local and the global indices of the sorted global
    ``rows`` it holds (None: every row).

    ``sizes`` holds each shard's training partition sizes (in ``placement`` order).
    """
    # global first row of every partition (partitions in global order)
    part_sizes = {}
    for parts, shard_sizes in zip(placement, sizes):
        part_sizes.update(zip(parts, shard_sizes))
    starts = np.concatenate([[0], np.cumsum([part_sizes[i] for i in range(len(part_sizes))])])
    out = []
    for parts in placement:
        local, global_rows, shard_offset = [], [], 0
        for i in parts:
            lo, hi = starts[i], starts[i + 1]
            in_part = (np.arange(lo, hi) if rows is None
                       else rows[np.searchsorted(rows, lo):np.searchsorted(rows, hi)])
            local.append(in_part - lo + shard_offset)
            global_rows.append(in_part)
            shard_offset += hi - lo
        out.append((np.concatenate(local) if local else np.empty(0, dtype=np.intp),
                    np.concatenate(global_rows) if global_rows else np.empty(0, np.intp)))
    return out


def _fit_bin_mapper(bin_mapper, inputs, shards, placement, sizes, n_total, categories):
    """``bin_mapper`` fitted as the local fit fits it, on the same seeded
    sample gathered from the shards."""
    located = _rows_on_shards(bin_mapper.sample_rows(n_total), placement, sizes)
    results = shards.call("sample", per_actor=[(local, inputs) for local, _ in located])
    order = np.argsort(np.concatenate([wanted for _, wanted in located]), kind="stable")
    blocks = [X for X, _ in results]
    sample = (sp.vstack([sp.csr_matrix(X) for X in blocks], format="csr")
              if any(sp.issparse(X) for X in blocks) else np.concatenate(blocks))[order]
    weights = [w for _, w in results]
    weight = None if weights[0] is None else np.concatenate(weights)[order]
    return bin_mapper.fit_sample(sample, weight, categories)


class DaskHistGBDTRegressor(_DaskMixin, HistGBDTRegressor):
    """:class:`~hgbt.HistGBDTRegressor` trained on a Dask cluster.

    Same parameters as :class:`~hgbt.HistGBDTRegressor`, plus:

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The cluster to train on; None uses the current default client.
    timeout : float, default=300.0
        Seconds a set-up step may wait for the workers, and a worker for
        another during a round (a round itself may take longer); past it, or
        when a worker holding rows is lost, ``fit`` raises
        :class:`WorkerLostError`.
    tree_learner : {'data', 'feature', 'voting'}, default='data'
        How the workers share a tree's work (LightGBM's names). ``'data'``:
        each worker holds its partitions' rows, and the node histograms are
        summed over the workers (each then searches a block of features).
        ``'feature'``: every worker gets all the training rows (gathered once,
        after binning; each needs the memory of all of them), builds and
        searches the histograms of its block of features only, and the
        workers elect each split: only split records travel, no histograms,
        which pays with few rows and many features. At most one worker per
        feature. Both give the local model bit for bit. ``'voting'``: as
        ``'data'``, but at each node every worker nominates the ``top_k``
        features whose best split on its own rows gains most, and only the
        ``2 * top_k`` features nominated most are summed and searched: the
        traffic per node no longer grows with the features, and the model is
        an approximation of the local one (the same when ``2 * top_k`` covers
        every feature).
    top_k : int, default=20
        The features each worker nominates per node with
        ``tree_learner='voting'`` (LightGBM's name and default).

    Attributes
    ----------
    telemetry_ : dict
        Of the boosting rounds: per worker (a list each) and tree, the bytes
        it sent to and received from the other workers
        (``bytes_sent_per_tree``, ``bytes_received_per_tree``; averaged over
        the trees of a multiclass round); ``histograms_per_tree`` (node
        histograms summed over the workers); summed over the rounds, the slowest
        worker's seconds outside the exchanges (``compute_seconds``) and in
        them (``communication_seconds``: transfers and waiting for the
        others), and the driver's wait beyond the slowest worker
        (``driver_seconds``: Dask's round trips); ``calls`` to the workers
        during the rounds, ``n_workers``, and each worker's
        ``histogram_layouts`` (each chooses for its rows; ``histogram_layout_``
        is the one most of them used).
    """

    _local_class = HistGBDTRegressor
    _parameter_constraints = {**HistGBDTRegressor._parameter_constraints,
                              **_DaskMixin._parameter_constraints}
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = _dask_init(HistGBDTRegressor)

    def predict(self, X: MatrixLike | da.Array | dd.DataFrame,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray | da.Array:
        """Predictions; lazy (a dask array) for a dask collection
        (``iteration_range``: as :meth:`hgbt.HistGBDTRegressor.predict`)."""
        width = y_columns(self)
        return self._lazy("predict", X, iteration_range, width if width > 1 else None)


class DaskHistGBDTClassifier(_DaskMixin, HistGBDTClassifier):
    """:class:`~hgbt.HistGBDTClassifier` trained on a Dask cluster.

    Same parameters as :class:`~hgbt.HistGBDTClassifier`, plus ``client``,
    ``timeout``, ``tree_learner`` and ``top_k`` (see
    :class:`DaskHistGBDTRegressor`).
    """

    _local_class = HistGBDTClassifier
    _parameter_constraints = {**HistGBDTClassifier._parameter_constraints,
                              **_DaskMixin._parameter_constraints}
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = _dask_init(HistGBDTClassifier)

    def _set_classes(self, info, warm=False):
        """Classes and class weights from the shards' label counts (a warm
        start keeps its model's: the labels must be among them)."""
        from sklearn.utils.class_weight import compute_class_weight
        from sklearn.utils.multiclass import check_classification_targets

        labels = [i["train"]["labels"] for i in info if i["train"]["labels"] is not None]
        classes = np.unique(np.concatenate([values for values, _ in labels]))
        check_classification_targets(classes)
        if warm:
            unseen = np.setdiff1d(classes, self.classes_)
            if unseen.size:
                raise ValueError(f"y has labels {unseen.tolist()} that the warm-started "
                                 f"model was not fitted on (classes_={self.classes_!r}).")
            return
        counts = np.zeros(classes.size, dtype=np.int64)
        for values, n in labels:
            counts[np.searchsorted(classes, values)] += n
        if classes.size < 2:
            raise ValueError(f"y has only one class ({classes[0]!r}); a classifier needs "
                             "at least two.")
        self.classes_ = classes
        self._class_weights = None
        if isinstance(self.class_weight, str) and self.class_weight == "balanced":
            # scikit-learn's 'balanced': n_samples / (n_classes * count)
            self._class_weights = counts.sum() / (classes.size * counts.astype(np.float64))
        elif self.class_weight is not None:
            self._class_weights = compute_class_weight(self.class_weight, classes=classes,
                                                        y=classes)

    def predict(self, X: MatrixLike | da.Array | dd.DataFrame,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray | da.Array:
        """Predicted labels; lazy (a dask array) for a dask collection
        (``iteration_range``: as :meth:`hgbt.HistGBDTClassifier.predict`)."""
        if self._multilabel():
            return self._lazy("predict", X, iteration_range, self.n_outputs_, np.int64)
        return self._lazy("predict", X, iteration_range,
                          dtype=getattr(self, "classes_", np.empty(0)).dtype)

    def predict_proba(self, X: MatrixLike | da.Array | dd.DataFrame,
                      iteration_range: tuple[int, int] | None = None
                      ) -> np.ndarray | da.Array:
        """Class probabilities; lazy (a dask array) for a dask collection."""
        return self._lazy("predict_proba", X, iteration_range,
                          n_outputs=(self.n_outputs_ if self._multilabel()
                                     else len(getattr(self, "classes_", []))))

    def decision_function(self, X: MatrixLike | da.Array | dd.DataFrame,
                          iteration_range: tuple[int, int] | None = None
                          ) -> np.ndarray | da.Array:
        """Raw scores; lazy (a dask array) for a dask collection."""
        n_classes = (self.n_outputs_ if self._multilabel()
                     else len(getattr(self, "classes_", [])))
        return self._lazy("decision_function", X, iteration_range,
                          None if n_classes <= 2 and not self._multilabel() else n_classes)


__all__ = ["DaskHistGBDTClassifier", "DaskHistGBDTRegressor", "WorkerLostError"]


class DaskHistGBDTRanker(_DaskMixin, HistGBDTRanker):
    """:class:`~hgbt.HistGBDTRanker` trained on a Dask cluster.

    Same parameters as :class:`~hgbt.HistGBDTRanker`, plus ``client``,
    ``timeout``, ``tree_learner`` ('feature' gathers every worker's rows
    and queries) and ``top_k``, as
    :class:`DaskHistGBDTRegressor`. A query's rows must be in one partition
    (their gradients are computed where they are): ``ddf.shuffle('qid')``
    or ``set_index('qid')`` arranges that; a query on two workers is a
    ValueError. The model is the local ranker's, bit for bit.

    Attributes
    ----------
    telemetry_ : dict
        As :class:`DaskHistGBDTRegressor`'s.
    """

    _local_class = HistGBDTRanker
    _parameter_constraints = {**HistGBDTRanker._parameter_constraints,
                              **_DaskMixin._parameter_constraints}
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = _dask_init(HistGBDTRanker)

    def fit(self, X: da.Array | dd.DataFrame, y: da.Array | dd.Series, *,
            qid: da.Array | dd.Series | None = None,
            sample_weight: da.Array | dd.Series | None = None,
            X_val: da.Array | dd.DataFrame | None = None,
            y_val: da.Array | dd.Series | None = None,
            qid_val: da.Array | dd.Series | None = None,
            sample_weight_val: da.Array | dd.Series | None = None,
            callbacks: list | None = None) -> DaskHistGBDTRanker:
        """Fit on dask collections spread over the workers of a Dask cluster.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
            Training rows; a DataFrame's 'qid' column gives the query ids
            when ``qid`` is None.
        y : dask array or dask Series of shape (n_samples,)
            Relevance labels.
        qid : dask array or dask Series of shape (n_samples,), default=None
            Each row's query, partitioned as ``X``; a query's rows in one
            partition.
        sample_weight, X_val, y_val, sample_weight_val, callbacks
            As :meth:`DaskHistGBDTRegressor.fit`.
        qid_val : dask array or dask Series, default=None
            The query ids of ``X_val`` (or its 'qid' column).

        Returns
        -------
        self : object
        """
        X, qid = split_qid(X, qid, "qid")
        if qid is None:
            raise ValueError("A distributed ranker needs each row's query: pass qid (a "
                             "dask array or Series partitioned as X) or a 'qid' column.")
        if X_val is not None:
            X_val, qid_val = split_qid(X_val, qid_val, "qid_val")
            if qid_val is None:
                raise ValueError("X_val needs its query ids: pass qid_val (or a 'qid' "
                                 "column).")
        return self._fit_dask(X, y, sample_weight, X_val, y_val, sample_weight_val,
                              callbacks, ({"qid": qid}, {"qid": qid_val}))

    def predict(self, X: MatrixLike | da.Array | dd.DataFrame,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray | da.Array:
        """Ranking scores; lazy (a dask array) for a dask collection
        (``iteration_range``: as :meth:`hgbt.HistGBDTRanker.predict`)."""
        return self._lazy("predict", X, iteration_range)


class DaskHistGBDTSurvival(_DaskMixin, HistGBDTSurvival):
    """:class:`~hgbt.HistGBDTSurvival` with ``loss='aft'`` trained on a Dask
    cluster (a row's likelihood is its own: the rows stay where they are).
    ``loss='cox'`` is local only: a risk set spans every row.

    Same parameters as :class:`~hgbt.HistGBDTSurvival`, plus ``client``,
    ``timeout``, ``tree_learner`` and ``top_k``, as
    :class:`DaskHistGBDTRegressor`. The model is the local one's, bit for bit.

    Attributes
    ----------
    telemetry_ : dict
        As :class:`DaskHistGBDTRegressor`'s.
    """

    _local_class = HistGBDTSurvival
    _parameter_constraints = {**HistGBDTSurvival._parameter_constraints,
                              **_DaskMixin._parameter_constraints}
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = _dask_init(HistGBDTSurvival)

    def fit(self, X: da.Array | dd.DataFrame, y: da.Array | dd.Series, *,
            label_upper_bound: da.Array | dd.Series,
            sample_weight: da.Array | dd.Series | None = None,
            X_val: da.Array | dd.DataFrame | None = None,
            y_val: da.Array | dd.Series | None = None,
            label_upper_bound_val: da.Array | dd.Series | None = None,
            sample_weight_val: da.Array | dd.Series | None = None,
            callbacks: list | None = None) -> DaskHistGBDTSurvival:
        """Fit on dask collections spread over the workers of a Dask cluster.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        y : dask array or dask Series of shape (n_samples,)
            The start of each row's time interval (XGBoost's
            ``label_lower_bound``; 0: left-censored).
        label_upper_bound : dask array or dask Series of shape (n_samples,)
            Its end, partitioned as ``X`` (equal: an exact time, ``inf``:
            right-censored).
        sample_weight, X_val, y_val, sample_weight_val, callbacks
            As :meth:`DaskHistGBDTRegressor.fit`.
        label_upper_bound_val : dask array or dask Series, default=None
            The upper bounds of ``X_val``'s times (required with it).

        Returns
        -------
        self : object
        """
        if self.loss != "aft":
            raise ValueError("a distributed survival fit takes loss='aft' (each row's "
                             "likelihood its own); loss='cox' couples every row through "
                             "its risk sets: fit it with HistGBDTSurvival.")
        if X_val is not None and label_upper_bound_val is None:
            raise ValueError("X_val needs label_upper_bound_val.")
        return self._fit_dask(X, y, sample_weight, X_val, y_val, sample_weight_val,
                              callbacks, ({"label_upper_bound": label_upper_bound},
                                          {"label_upper_bound": label_upper_bound_val}))

    def predict(self, X: MatrixLike | da.Array | dd.DataFrame,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray | da.Array:
        """Predicted times; lazy (a dask array) for a dask collection."""
        return self._lazy("predict", X, iteration_range)
