"""The driver side of a distributed fit: the boosting loop over shards.

The driver runs the same grower as a local fit. Its training-data source,
:class:`DistributedTrainingData`, asks every shard for the histograms of a
node's rows and adds them up; with gradients on the exact grid
(:mod:`hgbt.exact`) the sum equals the local histogram bit for bit, so the
trees equal those of the local estimator. Splits are queued and sent with
the next request, so a node costs one round trip to every worker.
"""
import contextlib
import time

import numpy as np

from ..tree._grower import TreeKernel
from ..engine.early_stopping import should_stop
from ..core.exact import grid_exponent
from ..tree.grower import TreeGrower
from ..engine.sampling import round_feature_samplers

#: exceptions a shard raises about the user's data: re-raised as they are
_DATA_ERRORS = (ValueError, TypeError, NotImplementedError)


class WorkerLostError(RuntimeError):
    """A worker holding training rows was lost or did not answer in time.

    No model is fitted: the estimator is left as it was before ``fit``.
    """


@contextlib.contextmanager
def lost_workers_raise(step, timeout):
    """Turn a timeout or a lost worker during ``step`` into :class:`WorkerLostError`.

    Errors about the data (ValueError, TypeError) raised on a worker pass through.
    """
    try:
        yield
    except _DATA_ERRORS:
        raise
    except Exception as exc:  # timeouts, closed comms, dead workers, cancellations
        raise WorkerLostError(
            f"A Dask worker did not answer {step!r} within timeout={timeout} s or was "
            f"lost ({type(exc).__name__}: {exc}); no model was fitted.") from exc


class ShardGroup:
    """Calls the shard actors, waits at most ``timeout`` seconds, keeps telemetry."""

    def __init__(self, actors, timeout):
        self.actors = list(actors)
        self.timeout = timeout
        self.compute_seconds = 0.0
        self.communication_seconds = 0.0
        self.n_calls = 0

    def call(self, method, *args, actors=None, per_actor=None):
        """Call ``method`` on every shard (``per_actor``: a list of argument tuples)."""
        actors = self.actors if actors is None else actors
        start = time.perf_counter()
        with lost_workers_raise(method, self.timeout):
            futures = [getattr(actor, method)(*(args if per_actor is None else per_actor[i]))
                       for i, actor in enumerate(actors)]
            results = []
            for future in futures:
                remaining = max(0.0, start + self.timeout - time.perf_counter())
                results.append(future.result(timeout=remaining))
        wall = time.perf_counter() - start
        self.n_calls += 1
        compute = max((seconds for _, seconds in results), default=0.0)
        self.compute_seconds += compute
        self.communication_seconds += max(0.0, wall - compute)
        return [value for value, _ in results]


class DistributedTrainingData:
    """The grower's data source over shards (see :class:`~hgbt.training_data.LocalTrainingData`).

    Its trees grow in the local kernel's loop (``TreeKernel`` with this
    object as its remote source): node histograms are summed across the
    shards, splits are queued and sent with the next request, and
    subtraction and split search run on the driver.

    Parameters
    ----------
    shards : ShardGroup
        The shards holding training rows.
    n_features, n_bins : int
    n_threads : int
        Threads for subtraction and split search on the driver.
    """

    def __init__(self, shards, n_features, n_bins, n_threads):
        self.shards = shards
        self.n_features = n_features
        self.n_bins = n_bins
        self.n_threads = n_threads
        self._commands = []
        self._kernel = None
        self.histogram_bytes = 0
        self.n_histograms = 0

    def start_tree(self, k, rows=None, grid=None, quantize=None):
        """Begin tree ``k`` of the round on every shard with the agreed grid
        (as :meth:`LocalTrainingData.start_tree <hgbt.tree.training_data.LocalTrainingData.start_tree>`;
        row sampling and quantized gradients are not supported)."""
        if rows is not None or quantize is not None:
            raise NotImplementedError("a distributed tree grows on every row, from "
                                      "float gradients")
        self._commands.append(("start_tree", (k, None, grid)))

    def node_histogram(self, node_id):
        commands, self._commands = self._commands, []
        parts = self.shards.call("histogram", commands, node_id)
        self.histogram_bytes += sum(part.nbytes for part in parts)
        self.n_histograms += 1
        out = parts[0].copy()
        for field in ("sum_gradients", "sum_hessians", "count"):
            for part in parts[1:]:
                out[field] += part[field]  # exact: gradients are on the grid
        return out

    grows_trees = True

    def grow_tree(self, settings, **growth):
        """Grow the begun tree with the local kernel's loop: its node
        histograms and splits go to the shards (``node_histogram``, ``split``)."""
        if self._kernel is None:
            self._kernel = TreeKernel(self.n_features, self.n_features, self.n_bins)
        return self._kernel.grow(settings, remote=self, **growth, n_threads=self.n_threads)

    def split(self, node_id, left_id, right_id, feature_idx, bin_idx, missing_go_to_left,
              cat_bitset=None):
        """Queue the split; the shards apply it with the next request."""
        self._commands.append(("split", (node_id, left_id, right_id, feature_idx, bin_idx,
                                         missing_go_to_left, cat_bitset)))

    def finish_tree(self, k, leaf_ids, leaf_values, tree, score):
        """Add the tree to every shard's raw predictions; merged scores if ``score``."""
        commands, self._commands = self._commands, []
        return self.shards.call("finish_tree", commands, k, leaf_ids, leaf_values, tree,
                                score)


def merge(statistics):
    """Sum per-shard statistics (or lists of them) with ``+``."""
    total = statistics[0]
    for other in statistics[1:]:
        total = ([a + b for a, b in zip(total, other)] if isinstance(total, list)
                 else total + other)
    return total


def _max_or_none(values):
    values = [v for v in values if v is not None]
    return float(np.max(values)) if values else None  # np.max propagates NaN


def boost(estimator, shards, n_total, k_trees, n_threads, early_stopping, has_val):
    """The boosting rounds of a distributed fit, as ``_fit_rounds`` runs them locally.

    Every shard takes part in every call (a shard without training rows
    adds empty histograms). Sets ``_predictors`` and the score lists on
    ``estimator``; returns the telemetry.
    """
    bin_mapper = estimator._bin_mapper
    n_features = bin_mapper.n_bins_non_missing_.size
    data = DistributedTrainingData(shards, n_features, bin_mapper.missing_bin + 1, n_threads)
    score = early_stopping or bool(estimator.verbose)
    estimator._predictors, estimator._train_scores, estimator._val_scores = [], [], []

    def record(per_shard):
        estimator._train_scores.append(-merge([r[0] for r in per_shard]).value())
        if has_val:
            estimator._val_scores.append(-merge([r[1] for r in per_shard]).value())

    # telemetry covers the boosting rounds only, not binning and set-up
    compute_before, waiting_before = shards.compute_seconds, shards.communication_seconds
    initial = shards.call("set_baseline", estimator._baseline_prediction, score)
    if score:
        record(initial)
    telemetry = {"histogram_bytes_per_tree": [], "histograms_per_tree": []}
    grower = TreeGrower(data, bin_mapper.bin_thresholds_, bin_mapper.n_bins_non_missing_,
                        n_threads=n_threads, **estimator._grower_params())
    start = time.perf_counter()
    for iteration in range(estimator.max_iter):
        samplers = round_feature_samplers(
            n_features, estimator.colsample_bytree, estimator.colsample_bynode,
            np.random.default_rng([estimator._seed, iteration]), estimator._seed,
            iteration, k_trees)
        maxima = shards.call("compute_gradients")
        trees = []
        for k in range(k_trees):
            # the local fit's grid: from the largest |value| over all rows
            grid = tuple(grid_exponent(m, n_total) if m is not None else None
                         for m in (_max_or_none([g[k] for g, _ in maxima]),
                                   _max_or_none([h[k] for _, h in maxima])))
            bytes_before, count_before = data.histogram_bytes, data.n_histograms
            data.start_tree(k, grid=grid)
            tree = grower.grow(samplers[k])
            leaves = grower.leaf_ids()
            results = data.finish_tree(k, leaves, tree.nodes["value"][leaves], tree,
                                       score and k == k_trees - 1)
            telemetry["histogram_bytes_per_tree"].append(data.histogram_bytes - bytes_before)
            telemetry["histograms_per_tree"].append(data.n_histograms - count_before)
            trees.append(tree)
        estimator._predictors.append(trees)
        if score:
            record(results)
        estimator._report(iteration, start)
        if early_stopping and should_stop(
                estimator._val_scores if has_val else estimator._train_scores,
                estimator.n_iter_no_change, estimator.tol):
            break
    telemetry["compute_seconds"] = shards.compute_seconds - compute_before
    telemetry["communication_seconds"] = shards.communication_seconds - waiting_before
    telemetry["calls"] = shards.n_calls
    return telemetry
