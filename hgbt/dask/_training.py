"""The driver side of a distributed fit: the engine's boosting loop over shards.

The driver runs the local fit's loop (:func:`hgbt.engine.boosting.boost`)
and the same grower. Its training-data source,
:class:`DistributedTrainingData`, asks every shard for the histograms of a
node's rows and adds them up; with gradients on the exact grid
(:mod:`hgbt.core.exact`) the sum equals the local histogram bit for bit, so the
trees equal those of the local estimator. Splits are queued and sent with
the next request, so a node costs one round trip to every worker.
"""
import contextlib
import time

import numpy as np

from ..core.exact import grid_exponent
from ..engine.boosting import boost
from ..engine.round_plan import RoundTrees
from ..tree._grower import TreeKernel

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
    """The rows on the shards, as the boosting loop's
    :class:`~hgbt.engine.boosting.TrainingData` and as the
    :class:`~hgbt.engine.boosting.TreeSource` of every tree.

    Its trees grow in the local kernel's loop (``TreeKernel`` with this
    object as its remote source): node histograms are summed across the
    shards, and subtraction and split search run on the driver. Everything
    the shards only need to apply (starts of trees, splits, leaf updates,
    the baseline) is queued and sent with the next request, so a node costs
    one round trip to every worker and a tree's end none.

    Parameters
    ----------
    shards : ShardGroup
        The shards holding training rows.
    n_rows : int
        Training rows on all shards.
    n_features, n_bins : int
    n_trees : int
        Trees per round.
    has_validation : bool
        Whether the shards hold validation rows (scored).
    n_threads : int
        Threads for subtraction and split search on the driver.

    Attributes
    ----------
    telemetry : dict
        ``histogram_bytes_per_tree`` and ``histograms_per_tree``.
    """

    grows_trees = True

    def __init__(self, shards, n_rows, n_features, n_bins, n_trees, has_validation,
                 n_threads):
        self.shards = shards
        self.n_rows = n_rows
        self.n_features = n_features
        self.n_bins = n_bins
        self.n_trees = n_trees
        self.has_validation = has_validation
        self.n_validation_sets = int(has_validation)
        self.n_threads = n_threads
        self._commands = []
        self._kernel = None
        self._round_trees = None
        self._grids = None
        self._tree_start = (0, 0)
        self.histogram_bytes = 0
        self.n_histograms = 0
        self.telemetry = {"histogram_bytes_per_tree": [], "histograms_per_tree": []}

    def _call(self, method, *args):
        """Call ``method`` on every shard, with the queued commands first."""
        commands, self._commands = self._commands, []
        return self.shards.call(method, commands, *args)

    def set_baseline(self, baseline):
        """Start every shard's raw predictions at ``baseline``."""
        self._baseline = baseline
        self._commands.append(("set_baseline", (baseline,)))

    def restart(self):
        self._commands.append(("restart", (self._baseline,)))

    # ------------------------------------------------------- TrainingData
    def use_threads(self, n_threads):
        """Each worker keeps its own thread count (its own CPUs)."""

    def compute_gradients(self):
        maxima = self._call("compute_gradients")
        # the local fit's grid: from the largest |value| over all rows
        self._grids = [
            tuple(grid_exponent(m, self.n_rows) if m is not None else None
                  for m in (_max_or_none([g[k] for g, _ in maxima]),
                            _max_or_none([h[k] for _, h in maxima])))
            for k in range(self.n_trees)]

    def sample_rows(self, sampler):
        if sampler.active:
            raise NotImplementedError("row sampling is not supported by the Dask "
                                      "estimators")
        return None

    def grow_round(self, settings, plan):
        # the shards hold the node state of one tree at a time
        if self._round_trees is None or self._round_trees.settings is not settings:
            self._round_trees = RoundTrees(settings)
        return self._round_trees.grow(
            self, plan, lambda grow_one, n: [grow_one(self, k) for k in range(n)])

    def refit_leaves(self, source, k, leaf_ids):
        return None  # the supported losses keep their Newton leaf values

    def finish_tree(self, source, k, leaf_ids, leaf_values, tree):
        self._commands.append(("finish_tree", (k, leaf_ids, leaf_values)))
        bytes_before, count_before = self._tree_start
        self.telemetry["histogram_bytes_per_tree"].append(self.histogram_bytes - bytes_before)
        self.telemetry["histograms_per_tree"].append(self.n_histograms - count_before)

    def finish_round(self, trees):
        if self.has_validation:  # only validation rows need the trees themselves
            self._commands.append(("finish_round", (trees,)))

    def loss_statistics(self):
        per_shard = self._call("loss_statistics")
        train = merge([train for train, _ in per_shard])
        # every shard holds one validation set, empty without validation rows
        return train, ([merge([val[0] for _, val in per_shard])] if self.has_validation
                       else [])

    def raw_predictions(self):
        raise NotImplementedError("the Dask estimators score with the loss only")

    # --------------------------------------------------------- TreeSource
    def start_tree(self, k, rows=None, grid=None, quantize=None):
        """Begin tree ``k`` of the round on every shard, on the grid agreed
        from all rows by default (as :meth:`LocalTrainingData.start_tree
        <hgbt.tree.training_data.LocalTrainingData.start_tree>`; row sampling
        and quantized gradients are not supported)."""
        if rows is not None or quantize is not None:
            raise NotImplementedError("a distributed tree grows on every row, from "
                                      "float gradients")
        self._tree_start = (self.histogram_bytes, self.n_histograms)
        self._commands.append(("start_tree", (k, None, self._grids[k] if grid is None
                                              else grid)))

    def node_histogram(self, node_id):
        parts = self._call("histogram", node_id)
        self.histogram_bytes += sum(part.nbytes for part in parts)
        self.n_histograms += 1
        out = parts[0].copy()
        for field in ("sum_gradients", "sum_hessians", "count"):
            for part in parts[1:]:
                out[field] += part[field]  # exact: gradients are on the grid
        return out

    def grow_tree(self, settings, growth, tree_mask=None, node_masks=None):
        """Grow the begun tree with the local kernel's loop: its node
        histograms and splits go to the shards (``node_histogram``, ``split``)."""
        if self._kernel is None:
            self._kernel = TreeKernel(self.n_features, self.n_features, self.n_bins)
        return self._kernel.grow(settings, growth, remote=self, tree_mask=tree_mask,
                                 node_masks=node_masks, n_threads=self.n_threads)

    def split(self, node_id, left_id, right_id, feature_idx, bin_idx, missing_go_to_left,
              cat_bitset=None):
        """Queue the split; the shards apply it with the next request."""
        self._commands.append(("split", (node_id, left_id, right_id, feature_idx, bin_idx,
                                         missing_go_to_left, cat_bitset)))

    def leaf_sums(self, leaf_ids):
        raise NotImplementedError("quantized gradients are not supported by the Dask "
                                  "estimators")


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


def boost_on_shards(settings, shards, n_rows, n_bins, n_trees, baseline, has_validation,
                    record, evaluator=None, callbacks=None):
    """The boosting rounds of a distributed fit: :func:`hgbt.engine.boosting.boost`
    on the shards' rows, starting from ``baseline``.

    Every shard takes part in every call (a shard without training rows
    adds empty histograms). Appends to ``record`` (a ``FitRecord``, scored
    by ``evaluator``, with ``callbacks``, as :func:`~hgbt.engine.boosting.boost`);
    returns the telemetry.
    """
    data = DistributedTrainingData(shards, n_rows, settings.n_bins_non_missing.size,
                                   n_bins, n_trees, has_validation, settings.n_threads)
    data.set_baseline(baseline)
    # telemetry covers the boosting rounds only, not binning and set-up
    compute_before, waiting_before = shards.compute_seconds, shards.communication_seconds
    boost(settings, data, record, evaluator, callbacks)
    telemetry = dict(data.telemetry)
    telemetry["compute_seconds"] = shards.compute_seconds - compute_before
    telemetry["communication_seconds"] = shards.communication_seconds - waiting_before
    telemetry["calls"] = shards.n_calls
    return telemetry
