"""The driver side of a distributed fit: the engine's boosting loop over shards.

The driver runs the local fit's loop (:func:`hgbt.engine.boosting.boost`) on
:class:`DistributedTrainingData`: one call to every shard per round. The
shards grow the round's trees themselves, each on its rows, summing node
histograms among themselves over a ring (:mod:`hgbt.dask._ring`); with
gradients on the exact grid (:mod:`hgbt.core.exact`) the sums equal the local
histograms bit for bit whatever the order, so the trees equal those of the
local estimator.
"""
import contextlib
import time

import numpy as np

from ..engine.boosting import boost
from ._ring import RingError

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
        self.wall_seconds = 0.0  # in calls, waiting included
        self.last_compute = 0.0  # the slowest shard's seconds in the last call
        self.n_calls = 0

    def call(self, method, *args, actors=None, per_actor=None, patient=False):
        """Call ``method`` on every shard (``per_actor``: a list of argument tuples).

        Each call may take ``timeout`` seconds; a ``patient`` one (a round,
        whose length grows with the data) as long as it needs until one shard
        fails or stalls its ring (its neighbours' waits are bounded by the
        timeout), then ``timeout`` seconds more for the others.
        """
        actors = self.actors if actors is None else actors
        start = time.perf_counter()
        with lost_workers_raise(method, self.timeout):
            futures = [getattr(actor, method)(*(args if per_actor is None else per_actor[i]))
                       for i, actor in enumerate(actors)]
        results, errors = _answers(futures, None if patient else start + self.timeout,
                                   self.timeout)
        if errors:
            # a shard's own error beats those of the shards whose ring it
            # closed, and an error about the data any other
            errors.sort(key=lambda exc: (not isinstance(exc, _DATA_ERRORS),
                                         isinstance(exc, RingError)))
            with lost_workers_raise(method, self.timeout):
                raise errors[0]
        self.wall_seconds += time.perf_counter() - start
        self.n_calls += 1
        self.last_compute = max((seconds for _, seconds in results), default=0.0)
        return [value for value, _ in results]


def _answers(futures, deadline, timeout):
    """Every future's result or error; ``deadline`` None: no limit until the
    first error, then ``timeout`` seconds for the rest."""
    results, errors = [None] * len(futures), []
    pending = list(range(len(futures)))
    while pending:
        if errors and deadline is None:
            deadline = time.perf_counter() + timeout
        i = pending[0]
        wait = 1.0 if deadline is None else max(0.0, deadline - time.perf_counter())
        try:
            results[i] = futures[i].result(timeout=min(wait, 1.0))
            pending.pop(0)
        except TimeoutError as exc:
            if deadline is not None and time.perf_counter() >= deadline:
                errors.append(exc)
                pending.pop(0)
            else:  # look at the other shards meanwhile: one may have failed
                pending.append(pending.pop(0))
        except Exception as exc:
            errors.append(exc)
            pending.pop(0)
    return [r for r in results if r is not None], errors


class ShardDraw:
    """A round's rows, drawn on each shard for its own rows: a row's draw
    depends only on the round's seed and the row's global index, and GOSS's
    top rows are selected over all shards through their ring."""

    def __init__(self, sampler):
        self.sampler = sampler


class DistributedTrainingData:
    """The rows on the shards, as the boosting loop's
    :class:`~hgbt.engine.boosting.TrainingData`.

    The driver runs the rounds (:func:`~hgbt.engine.boosting.boost`: seeds,
    early stopping, callbacks, tree sizes); each round is one call to every
    shard, which computes its gradients, grows the round's trees from the
    :class:`~hgbt.engine.round_plan.RoundPlan` with the other shards over
    their ring, adds them to its rows and returns its loss statistics (and
    rank 0 the trees). Nothing reaches the driver per node. What the
    shards only need to apply (the baseline, a restart) is queued and sent
    with the next call.

    Parameters
    ----------
    shards : ShardGroup
        The shards holding training rows.
    n_rows : int
        Training rows on all shards.
    n_features : int
    n_trees : int
        Trees per round.
    has_validation : bool
        Whether the shards hold validation rows (scored).
    scored_order : tuple of ndarray or None
        With scorers: the order that puts the shards' scored training rows,
        then validation rows, concatenated shard after shard, in the order of
        the local fit's (global rows); None: the loss only.

    Attributes
    ----------
    telemetry : dict
        See ``DaskHistGBDTRegressor.telemetry_``.
    """

    def __init__(self, shards, n_rows, n_features, n_trees, has_validation,
                 scored_order=None):
        self.shards = shards
        self.n_rows = n_rows
        self.n_features = n_features
        self.n_trees = n_trees
        self.has_validation = has_validation
        self.n_validation_sets = int(has_validation)
        self._commands = []
        self._sent_settings = None
        self._statistics = None  # of the current raw predictions, if known
        self._scored_order = scored_order
        self._raw = None  # the scored rows' raw predictions, if known
        n_shards = len(shards.actors)
        self.telemetry = {"bytes_sent_per_tree": [[] for _ in range(n_shards)],
                          "bytes_received_per_tree": [[] for _ in range(n_shards)],
                          "histograms_per_tree": [],
                          "compute_seconds": 0.0, "communication_seconds": 0.0,
                          "driver_seconds": 0.0}

    def _call(self, method, *args, patient=False):
        """Call ``method`` on every shard, with the queued commands first."""
        commands, self._commands = self._commands, []
        return self.shards.call(method, commands, *args, patient=patient)

    def set_baseline(self, baseline, keep_raw=False):
        """Start every shard's raw predictions at ``baseline`` (``keep_raw``:
        a warm start's rows start from its model; a restart from ``baseline``)."""
        self._commands.append(("set_baseline", (baseline, keep_raw)))
        self._statistics = self._raw = None

    def restart(self):
        self._commands.append(("restart", ()))
        self._statistics = self._raw = None

    def use_threads(self, n_threads):
        """Each worker keeps its own thread count (its own CPUs)."""

    def compute_gradients(self):
        """Computed by the shards at the start of :meth:`grow_round`."""

    def sample_rows(self, sampler):
        return ShardDraw(sampler) if sampler.active else None

    def grow_round(self, settings, plan):
        sent = None if settings is self._sent_settings else settings
        self._sent_settings = settings
        wall_before = self.shards.wall_seconds
        results = self._call("grow_round", sent, plan, patient=True)
        trees = results[0][0]
        # a custom loss has no loss values: the shards send none
        self._statistics = (None if results[0][1] is None
                            else _merge_statistics([result[1] for result in results]))
        if self._scored_order is not None:
            self._raw = self._in_order([result[3] for result in results])
        t = self.telemetry
        n = len(trees)
        for i, (_, _, traffic, _) in enumerate(results):
            t["bytes_sent_per_tree"][i].extend([traffic["bytes_sent"] / n] * n)
            t["bytes_received_per_tree"][i].extend([traffic["bytes_received"] / n] * n)
        t["histograms_per_tree"].extend([results[0][2]["histograms"] / n] * n)
        # each the slowest worker's: the one computing longest, the one
        # waiting longest in the ring (for it, usually)
        t["compute_seconds"] += max(result[2]["compute_seconds"] for result in results)
        t["communication_seconds"] += max(result[2]["communication_seconds"]
                                          for result in results)
        t["driver_seconds"] += max(0.0, self.shards.wall_seconds - wall_before
                                   - self.shards.last_compute)
        return trees

    def finish_round(self, trees):
        """The shards added the round to their validation rows in :meth:`grow_round`."""

    def loss_statistics(self):
        if self._statistics is None:
            self._statistics = _merge_statistics(self._call("loss_statistics"))
        return self._statistics

    def raw_predictions(self):
        """The scored rows' raw predictions, in the local fit's order: the
        scored training rows', and each validation set's."""
        if self._scored_order is None:
            raise NotImplementedError("this fit scores with the loss only")
        if self._raw is None:
            self._raw = self._in_order(self._call("raw_predictions"))
        return self._raw

    def _in_order(self, per_shard):
        train_order, val_order = self._scored_order
        train = np.concatenate([t for t, _ in per_shard], axis=1)[:, train_order]
        if not self.has_validation:
            return train, []
        return train, [np.concatenate([v for _, v in per_shard], axis=1)[:, val_order]]


def _merge_statistics(per_shard):
    """``(train, [validation])`` of all shards from each shard's."""
    train = merge([train for train, _ in per_shard])
    # every shard holds one validation set, empty without validation rows
    validation = [val for _, val in per_shard]
    return train, ([merge([val[0] for val in validation])] if validation[0] else [])


def merge(statistics):
    """Sum per-shard statistics (or lists of them) with ``+``."""
    total = statistics[0]
    for other in statistics[1:]:
        total = ([a + b for a, b in zip(total, other)] if isinstance(total, list)
                 else total + other)
    return total


def boost_on_shards(settings, shards, n_rows, n_trees, baseline, has_validation, record,
                    evaluator=None, callbacks=None, scored_order=None, warm=False):
    """The boosting rounds of a distributed fit: :func:`hgbt.engine.boosting.boost`
    on the shards' rows, starting from ``baseline``.

    Every shard takes part in every call (a shard without training rows
    adds empty histograms). Appends to ``record`` (a ``FitRecord``, scored
    by ``evaluator``, with ``callbacks``, as :func:`~hgbt.engine.boosting.boost`);
    returns the telemetry. ``scored_order``: see :class:`DistributedTrainingData`;
    ``warm``: the shards' rows start from a warm start's model (set in ``start``).
    """
    data = DistributedTrainingData(shards, n_rows, settings.n_bins_non_missing.size,
                                   n_trees, has_validation, scored_order)
    data.set_baseline(baseline, keep_raw=warm)
    calls_before = shards.n_calls
    boost(settings, data, record, evaluator, callbacks)
    return {**data.telemetry, "calls": shards.n_calls - calls_before}
