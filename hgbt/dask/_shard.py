"""The worker side of a distributed fit: one :class:`Shard` actor per Dask worker.

A shard holds the training (and validation) partitions that live on its
worker, in global row order. Rows never leave it. The shards of a fit form
a ring (:mod:`hgbt.dask._ring`); each grows every tree of a round on its
rows with the local fit's code (:class:`~hgbt.engine.row_state.LocalData`),
summing node histograms with the other shards over the ring, so all grow
the same trees and the driver only receives them, once per round. Every
method returns its result together with the seconds it took, for the fit's
telemetry.
"""
import functools
import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..core._openmp import effective_n_threads
from ..core._types import Y_DTYPE
from ..data import target_stats
from ..data.bundling import FeatureLayout
from ..data.categorical import codes_with_counts, pooled_positions
from ..data.dataset import sparse_bins
from ..engine.numeric_range import check_fit_range
from ..core.collective import SINGLE_PROCESS
from ..core.row_meta import RowMeta, check_qid
from ..engine.row_state import LocalData, RowState, ValidationRows
from ._halving import MIN_SIZE as HALVING_MIN_SIZE, join_halving
from ._ring import join_ring, listen
from ._training import ShardDraw


def _timed(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        result = method(self, *args, **kwargs)
        return result, time.perf_counter() - start
    return wrapper


def _rows_of(parts):
    """Concatenate ``(X, y, w)`` partitions; weights stay None if none has them.
    A ``y`` of several columns stays 2-D (multi-output, multi-label)."""
    if not parts:
        return None, None, None
    X = [p[0] for p in parts]
    y = [np.asarray(p[1]) for p in parts]
    y = [yi if yi.ndim == 2 and yi.shape[1] > 1 else yi.ravel() for yi in y]
    w = [p[2] for p in parts]
    if any(wi is None for wi in w):
        if not all(wi is None for wi in w):
            raise ValueError("sample_weight must be given for every partition or none.")
        w = None
    else:
        w = np.concatenate([np.asarray(wi, dtype=Y_DTYPE).ravel() for wi in w])
    return X, np.concatenate(y), w


def _fields_of(parts):
    """The side information of ``(X, y, w, fields)`` partitions, each field
    concatenated, as the user gave it (query ids: codes are made where all
    are seen)."""
    names = parts[0][3].keys() if parts else ()
    return {name: np.concatenate([np.asarray(p[3][name]).ravel() for p in parts])
            for name in names}


def _meta(w, fields, n_rows):
    """The RowMeta of a shard's rows: weights, query ids (codes), upper bounds."""
    upper = fields.get("label_upper_bound")
    return RowMeta(w, qid=check_qid(fields.get("qid"), n_rows),
                   label_upper_bound=None if upper is None else upper.astype(np.float64))


def _stacked(blocks, n_features):
    """Validated row blocks as one matrix: CSR if any block is sparse."""
    if not blocks:
        return np.empty((0, n_features))
    if any(sp.issparse(b) for b in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.concatenate(blocks)


def _column(X, f):
    """Column ``f`` of a dense or CSR matrix, dense (a sparse zero is a 0)."""
    return X[:, [f]].toarray().ravel() if sp.issparse(X) else X[:, f]


def _binned(X, bin_mapper, n_threads):
    """The bins of dense or CSR rows as an F-ordered uint8 matrix."""
    if not sp.issparse(X):
        return bin_mapper.transform(X)
    return sparse_bins(X, bin_mapper, n_threads).dense_matrix()


def _gathered(ring, own, X_binned, y, w, row_ids, fields):
    """Every shard's binned rows, targets, weights, row ids and side
    information (``fields``: query ids, upper bounds), in rank order (a
    feature-parallel fit), and ``own`` (this shard's local rows) as
    positions among them. A ranker's queries stay whole and in their order."""
    parts = ring.allgather((X_binned, y, w, np.asarray(row_ids, dtype=np.int64), fields))
    offset = sum(part[1].shape[0] for part in parts[:ring.rank])
    return (offset + np.asarray(own, dtype=np.intp),
            np.asfortranarray(np.concatenate([part[0] for part in parts])),
            np.concatenate([part[1] for part in parts]),
            None if w is None else np.concatenate([part[2] for part in parts]),
            np.concatenate([part[3] for part in parts]),
            {name: np.concatenate([part[4][name] for part in parts]) for name in fields})


class Shard:
    """Rows of the partitions on one worker (runs as a Dask actor).

    Parameters
    ----------
    train_parts, val_parts : list of tuple
        ``(X, y, sample_weight or None)`` partitions, in global row order.
    """

    def __init__(self, train_parts, val_parts):
        self._part_sizes = [part[0].shape[0] for part in train_parts]
        self._val_part_sizes = [part[0].shape[0] for part in val_parts]
        self._train = _rows_of(train_parts)
        self._val = _rows_of(val_parts)
        self._fields = {"train": _fields_of(train_parts), "val": _fields_of(val_parts)}
        self.data = None
        self.ring = SINGLE_PROCESS
        self._server = None
        self._settings = None  # the fit's BoostSettings, sent once

    # ------------------------------------------------------------ set-up
    @_timed
    def inspect(self, inputs, weighted=(False, False)):
        """Validate and convert the rows; return counts (also per training
        partition), category codes, labels.

        ``weighted``: whether the training and validation sets have weights;
        a set with no rows here then gets an empty array of them (not None),
        so every shard's weights are alike.

        ``inputs`` (:class:`~hgbt.estimators.fit_inputs.FitInputs`) carries
        the fitted input schema (features, names, categorical columns); the
        rows are converted as ``predict`` converts them, and the category
        codes of every categorical feature are validated and returned, as
        the local fit collects them from all rows.
        """
        out = {"partition_sizes": self._part_sizes,
               "val_partition_sizes": self._val_part_sizes}
        for name, (X_parts, y, w), has_w in (("train", self._train, weighted[0]),
                                             ("val", self._val, weighted[1])):
            if X_parts is None:
                setattr(self, "_" + name, (np.empty((0, inputs.n_features)),
                                           np.empty((0, inputs.n_outputs) if inputs.n_outputs > 1
                                                    else 0), np.empty(0) if has_w else None))
                out[name] = {"n_rows": 0, "codes": {}, "labels": None}
                continue
            # empty partitions are fine; scikit-learn's validation rejects them
            # pooled features as their categories' positions, as a local fit reads them
            X = _stacked([inputs.validate_X(x, positions=True) for x in X_parts
                          if x.shape[0]], inputs.n_features)
            if X.shape[0] != y.shape[0]:
                raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} on one "
                                 "worker: X and y must be partitioned alike.")
            X, y = inputs.check_X_y(X, y)
            if w is not None and w.shape[0] != y.shape[0]:
                raise ValueError(f"sample_weight has {w.shape[0]} rows but y has "
                                 f"{y.shape[0]}: they must be partitioned alike.")
            if w is not None and (not np.all(np.isfinite(w)) or np.any(w < 0)):
                raise ValueError("sample_weight must be finite and non-negative.")
            codes = {}
            if inputs.is_categorical is not None:
                for f in np.flatnonzero(inputs.is_categorical):
                    codes[int(f)] = codes_with_counts(_column(X, f), int(f))
            labels = np.unique(y, return_counts=True) if inputs.stratify else None
            for field, values in self._fields[name].items():
                if values.shape[0] != y.shape[0]:
                    raise ValueError(f"{field} has {values.shape[0]} rows but y has "
                                     f"{y.shape[0]}: they must be partitioned alike.")
            setattr(self, "_" + name, (X, y, w))
            out[name] = {"n_rows": int(X.shape[0]), "codes": codes, "labels": labels,
                         "qid": self._fields[name].get("qid")}
        return out

    @_timed
    def recode(self, recode):
        """Re-code the pooled features' columns of the training and validation
        rows into the positions of the categories of all rows
        (:func:`~hgbt.dask._collections.categories_of_all_rows`)."""
        for X in (self._train[0], self._val[0]):
            if sp.issparse(X) and recode:
                raise ValueError(
                    f"Categorical feature {min(recode)} has more than 255 categories or "
                    "codes >= 255: such features need dense X (a dask array of dense "
                    "blocks, or call .map_blocks(lambda b: b.toarray())).")
            for f, (kind, table) in recode.items():
                column = X[:, f]
                if kind == "positions":
                    known = ~np.isnan(column)
                    column[known] = table[column[known].astype(np.intp)]
                else:
                    X[:, f] = pooled_positions(column, table, False)

    @_timed
    def add_target_statistics(self, inputs, features, n_positions, seed, row_ids,
                              model_stats=None):
        """The pooled ``features``' target statistics over every shard's rows
        (the ring), their columns appended to the rows here (the training
        rows' cross-fitted, the validation rows' from the statistics of all
        rows, or ``model_stats``, a warm start's); returns the statistics."""
        X, y, w = self._train
        y_encoded, weight = inputs.encoded(y, w)
        stats, columns = target_stats.fit_transform(
            X, features, n_positions,
            target_stats.target_columns(y_encoded, len(inputs.classes) if inputs.stratify
                                        else None), weight, seed, row_ids, self.ring)
        used = stats if model_stats is None else model_stats
        X_val, y_val, w_val = self._val
        self._train = (target_stats.with_columns(X, features, columns), y, w)
        self._val = (target_stats.with_columns(X_val, used["features"],
                                               target_stats.transform(used, X_val)),
                     y_val, w_val)
        return stats

    @_timed
    def sample(self, local_rows, inputs):
        """Training rows (local indices) for the bin thresholds, and their weights
        (with class weights, as the local fit bins with them)."""
        X, y, w = self._train
        return X[local_rows], inputs.encoded(y[local_rows],
                                             None if w is None else w[local_rows])[1]

    @_timed
    def scored_targets(self, inputs, local_rows):
        """The targets (as the user gave them) and weights (class-weighted, as
        the loss takes them) of the training rows ``local_rows`` (None: all)
        and of every validation row, for scorers on the driver; call it
        before :meth:`start`, which drops the rows."""
        out = []
        for (_, y, w), qid, rows in ((self._train, self._fields["train"].get("qid"),
                                      local_rows),
                                     (self._val, self._fields["val"].get("qid"), None)):
            w = inputs.encoded(y, w)[1]
            if rows is not None:
                y, w = y[rows], None if w is None else w[rows]
                qid = None if qid is None else qid[rows]
            out.append((y, w, qid))
        return out

    @_timed
    def open_ring(self):
        """Listen for the previous shard of the ring; return ``(host, port)``."""
        from distributed import get_worker
        from distributed.comm import get_address_host

        host = get_address_host(get_worker().address)
        self._server, port = listen(host)
        return host, port

    @_timed
    def join_ring(self, rank, addresses, token, timeout):
        """Connect to the next shard and accept the previous (``rank`` of
        ``len(addresses)``, ``token`` the fit's)."""
        server, self._server = self._server, None
        join = join_halving if len(addresses) >= HALVING_MIN_SIZE else join_ring
        self.ring = join(rank, addresses, server, token, timeout)

    @_timed
    def start(self, inputs, bin_mapper, n_threads, score_rows=None, row_ids=None,
              full_hessian=False, send_raw=False, model=None, tree_learner="data",
              top_k=20, histogram_layout="auto"):
        """Encode targets, bin the rows, allocate buffers; return baseline
        statistics. ``score_rows``: the local rows the training loss is scored
        on (None: all); ``row_ids``: each row's index among all training rows
        (the row sampling draws'); ``full_hessian``: per-row hessians (GOSS);
        ``send_raw``: each round also returns the scored rows' raw predictions;
        ``model``: a warm start's Booster, whose predictions the rows start from;
        ``tree_learner``: 'data'; 'voting' (``top_k`` nominations per shard
        and node); or 'feature', where every shard gathers all the binned
        training rows (in rank order) and grows each tree on its block of
        features, its loss sums and scored rows staying those of its own
        rows, and only rank 0 returns baseline statistics (of all rows);
        ``histogram_layout``: the estimator's (this shard chooses for itself)."""
        self.n_threads = effective_n_threads(n_threads)
        by_feature = tree_learner == "feature"
        X, y, w = self._train
        y, w = inputs.encoded(y, w)
        # every shard lays its columns out the same way: plain, each feature its
        # own column (sparse rows too: their bins written out)
        X_binned = _binned(X, bin_mapper, self.n_threads)
        row_ids = np.arange(X.shape[0]) if row_ids is None else row_ids
        own = np.arange(X.shape[0]) if score_rows is None else score_rows
        fields = self._fields["train"]
        if by_feature:  # all rows here: the loss and the draws see one process
            own, X_binned, y, w, row_ids, fields = _gathered(self.ring, own, X_binned, y, w,
                                                             row_ids, fields)
            score_rows = own
        self._score_rows, self._send_raw = score_rows, send_raw
        # a ranker's queries: whole on this shard (the driver checked; all of
        # them, feature-parallel), so the gradients are those of the local fit
        meta = _meta(w, fields, y.shape[0])
        loss = inputs.make_loss(meta)
        # quantiles and a custom baseline pool the rows of every shard
        loss.collective = SINGLE_PROCESS if by_feature else self.ring
        loss.check_y_rows(y)
        check_fit_range(loss, y, w)
        X_val, y_val, w_val = self._val
        y_val, w_val = inputs.encoded(y_val, w_val)
        k_trees = loss.n_trees_per_iteration
        meta_val = _meta(w_val, self._fields["val"], y_val.shape[0])
        validation = ValidationRows(X_val, y_val, meta_val,
                                    np.zeros((k_trees, X_val.shape[0]), dtype=Y_DTYPE))
        # feature-parallel: the scores pool every shard's own rows, as locally
        self.state = RowState(loss, y, meta, np.zeros((k_trees, y.shape[0]), dtype=Y_DTYPE),
                             full_hessian, [validation], score_rows,
                             score_collective=self.ring if by_feature else None)
        binned = FeatureLayout.plain(X_binned, bin_mapper.n_bins_non_missing_,
                                     bin_mapper.zero_bins())
        self.data = LocalData(self.state, None, binned, bin_mapper.missing_bin + 1,
                              self.n_threads,
                              collective=SINGLE_PROCESS if by_feature else self.ring,
                              row_ids=np.ascontiguousarray(row_ids, dtype=np.int64),
                              feature_collective=self.ring if by_feature else None,
                              voting_top_k=top_k if tree_learner == "voting" else 0,
                              histogram_layout=histogram_layout)
        if model is not None:  # a warm start: the model's predictions, as locally
            model.raw_from_trees(self.state.raw, X_binned=binned.X_dense,
                                 n_threads=self.n_threads)
            if X_val.shape[0]:
                validation.raw[:] = model.raw_predict_prepared(X_val, None, self.n_threads)
        self._train = self._val = None  # the float rows are no longer needed
        if by_feature and self.ring.rank > 0:
            return None
        return loss.baseline_statistics(y)

    # ----------------------------------------------------------- boosting
    def _run(self, commands):
        """Apply the driver's queued ``(name, args)`` commands, in order."""
        for name, args in commands:
            if name == "set_baseline":
                self._baseline, keep_raw = args
                if not keep_raw:  # (a warm start's rows start from its model)
                    self.state.set_baseline(self._baseline)
            elif name == "restart":
                self.state.restart(self._baseline)
            else:
                raise ValueError(f"unknown shard command {name!r}")

    def _closing_ring_on_error(self, call, *args):
        # a shard that fails closes its ring, so that the others fail at
        # once instead of waiting for it until the timeout
        try:
            return call(*args)
        except BaseException:
            self.ring.close()
            raise

    @_timed
    def grow_round(self, commands, settings, plan):
        """Run ``commands``, then one boosting round on every shard's rows:
        gradients, the round's trees (``plan``; ``settings`` the fit's
        BoostSettings, or None for the last ones sent), leaf updates of the
        training and validation rows. Returns the trees (rank 0 only), the
        loss statistics of the rows here and the ring's traffic."""
        return self._closing_ring_on_error(self._grow_round, commands, settings, plan)

    def _grow_round(self, commands, settings, plan):
        start = time.perf_counter()
        self._run(commands)
        if settings is not None:
            self._settings = settings
        ring = self.ring
        before = (ring.bytes_sent, ring.bytes_received, ring.seconds, ring.n_histograms)
        self.data.compute_gradients()
        if isinstance(plan.rows, ShardDraw):  # this shard's rows of the round's bag
            plan = replace(plan, rows=self.data.sample_rows(plan.rows.sampler))
        trees = self.data.grow_round(self._settings, plan)
        self.data.finish_round(trees)
        traffic = {"bytes_sent": ring.bytes_sent - before[0],
                   "bytes_received": ring.bytes_received - before[1],
                   "communication_seconds": ring.seconds - before[2],
                   "histograms": ring.n_histograms - before[3]}
        traffic["compute_seconds"] = (time.perf_counter() - start
                                      - traffic["communication_seconds"])
        return (trees if ring.rank == 0 else None,
                self.state.loss_statistics(self.n_threads)
                if self.state.loss.has_loss_values else None, traffic,
                self._scored_raw() if self._send_raw else None)

    def _scored_raw(self):
        # the raw predictions scorers read: the scored training rows', every
        # validation row's
        raw = self.state.raw
        return (raw if self._score_rows is None else raw[:, self._score_rows],
                self.state.validation[0].raw)

    @_timed
    def raw_predictions(self, commands):
        """Run ``commands``, then return the scored rows' raw predictions
        ``(training, validation)``."""
        self._run(commands)
        return self._scored_raw()

    @_timed
    def histogram_layout(self):
        """How this shard's trees built their histograms."""
        return self.data.histogram_layout

    @_timed
    def loss_statistics(self, commands):
        """Run ``commands``, then return the mergeable loss statistics
        ``(train, validation)`` of the raw predictions."""
        self._run(commands)
        return self.state.loss_statistics(self.n_threads)
