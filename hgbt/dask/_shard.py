"""The worker side of a distributed fit: one :class:`Shard` actor per Dask worker.

A shard holds the training (and validation) partitions that live on its
worker, in global row order. Rows never leave it: the driver asks for node
histograms, binning-sample rows, exact sums and maxima, and sends back
split decisions and trees. Every method returns its result together with
the seconds it computed, for the fit's telemetry.
"""
import time

import numpy as np
import scipy.sparse as sp

from ..core._openmp import effective_n_threads
from ..core._types import Y_DTYPE
from ..data.binning import category_codes
from ..data.bundling import FeatureLayout
from ..engine.numeric_range import check_fit_range
from ..engine.row_state import RowState, ValidationRows
from ..tree.training_data import LocalTrainingData, max_abs
from ._collections import DASK_CATEGORIES


def _timed(method):
    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        result = method(self, *args, **kwargs)
        return result, time.perf_counter() - start
    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


def _rows_of(parts):
    """Concatenate ``(X, y, w)`` partitions; weights stay None if none has them."""
    if not parts:
        return None, None, None
    X = [p[0] for p in parts]
    if any(sp.issparse(x) for x in X):
        raise TypeError("scipy.sparse chunks are not supported by the Dask estimators "
                        "yet: fit hgbt.HistGBDTRegressor / HistGBDTClassifier on the "
                        "sparse matrix, or use dense chunks.")
    y = [np.asarray(p[1]).ravel() for p in parts]
    w = [p[2] for p in parts]
    if any(wi is None for wi in w):
        if not all(wi is None for wi in w):
            raise ValueError("sample_weight must be given for every partition or none.")
        w = None
    else:
        w = np.concatenate([np.asarray(wi, dtype=Y_DTYPE).ravel() for wi in w])
    return X, np.concatenate(y), w


class Shard:
    """Rows of the partitions on one worker (runs as a Dask actor).

    Parameters
    ----------
    train_parts, val_parts : list of tuple
        ``(X, y, sample_weight or None)`` partitions, in global row order.
    """

    def __init__(self, train_parts, val_parts):
        self._part_sizes = [len(part[0]) for part in train_parts]
        self._train = _rows_of(train_parts)
        self._val = _rows_of(val_parts)
        self.data = None

    # ------------------------------------------------------------ set-up
    @_timed
    def inspect(self, inputs):
        """Validate and convert the rows; return counts (also per training
        partition), category codes, labels.

        ``inputs`` (:class:`~hgbt.estimators.fit_inputs.FitInputs`) carries
        the fitted input schema (features, names, categorical columns); the
        rows are converted as ``predict`` converts them, and the category
        codes of every categorical feature are validated and returned, as
        the local fit collects them from all rows.
        """
        out = {"partition_sizes": self._part_sizes}
        for name, (X_parts, y, w) in (("train", self._train), ("val", self._val)):
            if X_parts is None:
                setattr(self, "_" + name, (np.empty((0, inputs.n_features)),
                                           np.empty(0), None))
                out[name] = {"n_rows": 0, "codes": {}, "labels": None}
                continue
            # empty partitions are fine; scikit-learn's validation rejects them
            X = [inputs.validate_X(x) for x in X_parts if len(x)]
            X = np.concatenate(X) if X else np.empty((0, inputs.n_features))
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
                    try:
                        codes[int(f)] = category_codes(X[:, f], f)
                    except ValueError as exc:
                        raise ValueError(f"{exc} {DASK_CATEGORIES}") from exc
            labels = np.unique(y, return_counts=True) if inputs.stratify else None
            setattr(self, "_" + name, (X, y, w))
            out[name] = {"n_rows": int(X.shape[0]), "codes": codes, "labels": labels}
        return out

    @_timed
    def sample(self, local_rows, inputs):
        """Training rows (local indices) for the bin thresholds, and their weights
        (with class weights, as the local fit bins with them)."""
        X, y, w = self._train
        w = None if w is None else w[local_rows]
        return X[local_rows], inputs.class_weighted(w, inputs.encode_y(y[local_rows]))

    @_timed
    def start(self, inputs, bin_mapper, n_threads, score_rows=None):
        """Encode targets, bin the rows, allocate buffers; return baseline
        statistics. ``score_rows``: the local rows the training loss is scored
        on (None: all)."""
        self.n_threads = effective_n_threads(n_threads)
        X, y, w = self._train
        y = inputs.encode_y(y)
        w = inputs.class_weighted(w, y)
        loss = inputs.make_loss(w)
        loss.check_y_rows(y)
        check_fit_range(loss, y, w)
        X_val, y_val, w_val = self._val
        y_val = inputs.encode_y(y_val)
        k_trees = loss.n_trees_per_iteration
        validation = ValidationRows(X_val, y_val, inputs.class_weighted(w_val, y_val),
                                    np.zeros((k_trees, X_val.shape[0]), dtype=Y_DTYPE))
        self.state = RowState(loss, y, w, np.zeros((k_trees, X.shape[0]), dtype=Y_DTYPE),
                             False, [validation], score_rows)
        binned = FeatureLayout.plain(bin_mapper.transform(X), bin_mapper.n_bins_non_missing_,
                                     bin_mapper.zero_bins())
        self.data = LocalTrainingData(binned, bin_mapper.missing_bin + 1, self.n_threads)
        self.data.use_gradients(self.state.gradients, self.state.hessians)
        self._train = self._val = None  # the float rows are no longer needed
        return loss.baseline_statistics(y)

    # ----------------------------------------------------------- boosting
    def _run(self, commands):
        """Apply the driver's queued ``(name, args)`` commands, in order."""
        for name, args in commands:
            if name == "start_tree":
                self.data.start_tree(*args)
            elif name == "split":
                self.data.split(*args)
            elif name == "finish_tree":
                self.state.add_leaf_values(self.data, *args)
            elif name == "finish_round":
                self.state.add_validation(*args, self.n_threads)
            elif name == "set_baseline":
                self.state.set_baseline(*args)
            elif name == "restart":
                self.state.restart(*args)
            else:
                raise ValueError(f"unknown shard command {name!r}")

    @_timed
    def compute_gradients(self, commands):
        """Run ``commands``, then the round's gradients and hessians; return
        their largest ``|value|`` per tree.

        A constant hessian (unweighted squared error) reports None.
        """
        self._run(commands)
        self.state.compute_gradients(self.n_threads)
        constant = self.state.loss.constant_hessian  # not the buffer's shape: 1 row is 1 wide
        return ([max_abs(g) for g in self.state.gradients],
                [None if constant else max_abs(h) for h in self.state.hessians])

    @_timed
    def histogram(self, commands, node_id):
        """Run ``commands``, then return the histograms of ``node_id``'s rows."""
        self._run(commands)
        return self.data.node_histogram(node_id)

    @_timed
    def loss_statistics(self, commands):
        """Run ``commands``, then return the mergeable loss statistics
        ``(train, validation)`` of the raw predictions."""
        self._run(commands)
        return self.state.loss_statistics(self.n_threads)
