"""Survival analysis: Cox proportional hazards and accelerated failure time.

A row's time is known to lie in ``[y, label_upper_bound]`` (``RowMeta``):
equal bounds for an observed event, an infinite upper bound for a
right-censored row, a zero lower bound for a left-censored one (AFT only).
The kernels are in ``_survival.pyx``; the concordance index here.
"""
import numpy as np

from ..core._types import Y_DTYPE
from ..core.collective import allreduce_merge
from ..core.exact import ExactSum, WeightedMean
from ._survival import (Distribution, aft_gradients, aft_row_losses, cox_event_losses,
                        cox_gradients)
from .base_loss import BaseLoss
from .selection import Agreed

SURVIVAL_LOSSES = ("cox", "aft")
#: the largest |log hazard ratio| a Cox fit continues from: the risk sets sum
#: e^(eta - max eta), which for a spread of 2 x 350 stays a normal float64
#: (beyond, late risk sets would sum to 0 and their events drop out)
MAX_LOG_HAZARD = 350.0
AFT_DISTRIBUTIONS = {"normal": Distribution.NORMAL, "logistic": Distribution.LOGISTIC,
                     "extreme": Distribution.EXTREME}


def _bounds(meta, y):
    upper = meta.label_upper_bound
    if upper is None and np.shape(y)[0] == 0:  # no rows (a Dask shard's empty set)
        upper = np.empty(0)
    if upper is None:
        raise ValueError("a survival loss needs each row's interval: y with the event "
                         "flag and time (or lower and upper bounds).")
    return np.asarray(y, dtype=np.float64), upper


class TimeOrder:
    """The rows by time, ascending, and the groups of equal times (Cox's
    ties), with the total weight of each group's events (``event``: each
    row's, 0 or 1, kept)."""

    def __init__(self, time, event, weight):
        self.event = event
        self.order = np.argsort(time, kind="stable").astype(np.intp)
        sorted_time = time[self.order]
        ends = np.flatnonzero(np.r_[sorted_time[1:] != sorted_time[:-1], True]) + 1
        self.group_end = ends.astype(np.intp)
        weighted_events = event[self.order] * (1.0 if weight is None else weight[self.order])
        starts = np.r_[0, ends[:-1]]
        self.event_weight = (np.add.reduceat(weighted_events, starts) if time.size
                             else np.zeros(0))


class CoxLoss(BaseLoss):
    """Cox proportional hazards (negative log partial likelihood, Breslow's
    ties, right censoring, row weights); the raw score is the log hazard
    ratio. Its value: the weighted mean over events of ``log S(t_i) - eta_i``."""

    name = "cox"
    link = "exp"  # predictions: hazard ratios e^eta
    # the value couples rows through their risk sets: a sample's would be
    # another partial likelihood, so the training rows are scored whole
    scored_on_a_sample = False

    def __init__(self, meta=None):
        super().__init__(meta)
        # per set of rows (its RowMeta): its TimeOrder, shared with the copies
        # for_rows makes each round to score validation sets
        self._time_orders = {}

    def check_y(self, y):
        lower, upper = _bounds(self.meta, y)
        if np.any(~np.isfinite(lower) | (lower < 0)):
            raise ValueError("survival times must be finite and >= 0.")
        if np.any((upper != lower) & (upper != np.inf)):
            raise ValueError("loss='cox' takes right-censored times only (an event or a "
                             "censoring time per row); interval censoring needs "
                             "loss='aft'.")

    def _order(self, y):
        """The rows' time order and events, made once per set of rows."""
        meta, order = self._time_orders.get(id(self.meta), (None, None))
        if meta is not self.meta:
            lower, upper = _bounds(self.meta, y)
            order = TimeOrder(lower, (upper == lower).astype(np.float64), self.sample_weight)
            self._time_orders[id(self.meta)] = (self.meta, order)
        return order

    def baseline_statistics(self, y):
        return Agreed(np.zeros(1, dtype=Y_DTYPE))  # the hazard's scale is the baseline's

    def baseline_from_statistics(self, statistics):
        return statistics.value

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        # Leaves of low-risk rows have hessians near 0: without min_child_weight
        # or L2 their Newton steps can grow without bound (the loss, flat
        # there, does not stop them), until the hazard ratios overflow.
        if raw_prediction.size and not np.max(np.abs(raw_prediction)) <= MAX_LOG_HAZARD:
            raise ValueError(f"the Cox fit diverged: log hazard ratios beyond "
                             f"±{MAX_LOG_HAZARD:g} (leaves whose rows have almost no "
                             "hessian); raise min_child_weight, min_samples_leaf or "
                             "l2_regularization.")
        order = self._order(y)
        cox_gradients(np.ascontiguousarray(raw_prediction[0]), order.order, order.group_end,
                      order.event_weight, self._weights(), order.event, gradients[0],
                      hessians[0])

    def row_loss(self, y, raw_prediction, n_threads=1):
        order = self._order(y)
        return cox_event_losses(np.ascontiguousarray(raw_prediction[0]), order.order,
                                order.group_end, self._weights(), order.event)

    def loss_statistics(self, y, raw_prediction, n_threads=1):
        events = self._order(y).event
        if not np.any(events):  # no event: no partial likelihood (NaN, not a perfect 0)
            return WeightedMean.of(np.empty(0))
        weight = events if self.sample_weight is None else events * self.sample_weight
        return WeightedMean.of(self.row_loss(y, raw_prediction), weight)

    def inverse_link(self, raw_prediction):
        return np.exp(raw_prediction[0])


class AFTLoss(BaseLoss):
    """Accelerated failure time: ``log T = eta + sigma Z``, ``Z`` of
    ``distribution``; rows observed exactly or in an interval (left, right
    or interval censoring). Its value: the weighted mean negative
    log-likelihood; predictions: ``e^eta``, the time whose log is ``Z``'s
    location."""

    name = "aft"
    link = "exp"

    def __init__(self, meta=None, distribution="normal", sigma=1.0):
        super().__init__(meta)
        if distribution not in AFT_DISTRIBUTIONS:
            raise ValueError(f"aft_distribution must be one of {sorted(AFT_DISTRIBUTIONS)}, "
                             f"got {distribution!r}.")
        if not sigma > 0:
            raise ValueError(f"aft_sigma must be > 0, got {sigma!r}.")
        self.distribution, self.sigma = distribution, float(sigma)
        self._kind = int(AFT_DISTRIBUTIONS[distribution])

    def check_y(self, y):
        lower, upper = _bounds(self.meta, y)
        if np.any(np.isnan(lower) | np.isnan(upper) | (lower < 0) | (upper < lower)
                  | (lower == np.inf) | (upper <= 0)):
            raise ValueError("loss='aft' models log times: it needs 0 <= lower <= upper "
                             "<= inf with a finite lower bound and upper > 0 (an event at "
                             "time 0 has no log).")

    def _rows(self, y, raw_prediction):
        lower, upper = _bounds(self.meta, y)
        return np.ascontiguousarray(raw_prediction[0]), lower, np.ascontiguousarray(upper)

    def baseline_statistics(self, y):
        # the constant that minimises the loss: Newton steps from the mean log
        # time (the likelihood is log-concave in eta for the three
        # distributions), on exact sums over every process's rows, so a Dask
        # fit takes the local fit's steps
        lower, upper = _bounds(self.meta, y)
        known = np.where(lower > 0, lower, upper)
        known = known[np.isfinite(known) & (known > 0)]
        total, count = allreduce_merge(self.collective, [ExactSum.of(np.log(known)),
                                                         ExactSum.of_int(known.size)])
        eta = float(total) / float(count) if float(count) else 0.0
        g = np.empty((1, lower.size), dtype=np.float32)
        h = np.empty_like(g)
        for _ in range(20):
            self.gradients(y, np.full((1, lower.size), eta), g, h, 1)
            g_sum, h_sum = allreduce_merge(self.collective, [ExactSum.of(g), ExactSum.of(h)])
            step = float(g_sum) / max(float(h_sum), 1e-12)
            eta -= step
            if abs(step) < 1e-10:
                break
        return Agreed(np.full(1, eta, dtype=Y_DTYPE))

    def baseline_from_statistics(self, statistics):
        return statistics.value

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        raw, lower, upper = self._rows(y, raw_prediction)
        aft_gradients(raw, lower, upper, self._weights(), gradients[0], hessians[0],
                      self.sigma, self._kind, n_threads)

    def row_loss(self, y, raw_prediction, n_threads=1):
        raw, lower, upper = self._rows(y, raw_prediction)
        return aft_row_losses(raw, lower, upper, self.sigma, self._kind, n_threads)

    def inverse_link(self, raw_prediction):
        return np.exp(raw_prediction[0])


def concordance_index(time, event, risk, sample_weight=None):
    """Harrell's concordance index: over the comparable pairs, the share in
    which the row with the shorter time has the higher ``risk`` (ties in risk
    count one half). A pair is comparable when the shorter time is an event,
    or both times are equal and only one an event (the censored row outlived
    it), as scikit-survival counts. Weighted by the event row's weight."""
    time = np.asarray(time, dtype=np.float64)
    event = np.asarray(event, dtype=bool)
    risk = np.asarray(risk, dtype=np.float64)
    weight = np.ones(time.size) if sample_weight is None else np.asarray(sample_weight,
                                                                          dtype=np.float64)
    # for each event row i: the rows j with t_j > t_i, counted by their risk
    # ranks in a Fenwick tree filled from the latest time down
    ranks = np.unique(risk, return_inverse=True)[1].reshape(-1) + 1
    tree = np.zeros(ranks.max() + 1 if ranks.size else 1)
    order = np.argsort(-time, kind="stable")
    concordant = comparable = 0.0
    seen = 0
    start = 0
    while start < order.size:
        stop = start
        while stop < order.size and time[order[stop]] == time[order[start]]:
            stop += 1
        group = order[start:stop]
        censored = ranks[group[~event[group]]]
        for i in group[event[group]]:
            below = _prefix(tree, ranks[i] - 1)  # later rows of lower risk
            equal = _prefix(tree, ranks[i]) - below
            below += np.count_nonzero(censored < ranks[i])  # censored at the same time
            equal += np.count_nonzero(censored == ranks[i])
            concordant += weight[i] * (below + 0.5 * equal)
            comparable += weight[i] * (seen + censored.size)
        for i in group:
            _add(tree, ranks[i], 1.0)
        seen += group.size
        start = stop
    return concordant / comparable if comparable else float("nan")


def _prefix(tree, k):
    total = 0.0
    while k > 0:
        total += tree[k]
        k -= k & -k
    return total


def _add(tree, k, value):
    while k < tree.size:
        tree[k] += value
        k += k & -k
