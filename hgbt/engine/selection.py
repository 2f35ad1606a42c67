"""Exact weighted quantiles and order statistics over the rows of every process.

The non-smooth losses need quantiles: the baseline of absolute error,
quantile and Huber losses is a weighted quantile of ``y``, each leaf is
re-fitted to a weighted quantile of its residuals, and Huber's adaptive
``delta`` is the 0.9-quantile of ``|y - raw|``. GOSS needs the ``k`` largest
gradient scores. On a Dask cluster the rows are spread over the workers, so
these are computed by a **radix selection**: eight passes, one byte of each
row's 64-bit order-preserving key per pass, in which every process adds its
rows' weights into 256 buckets per group, the processes sum the buckets, and
each group keeps the bucket where its target falls. Only the buckets travel
(groups x 256 integers per pass), never rows.

The weights are integers so that the bucket sums are exact in any order:
row weights are put on a power-of-two grid (:func:`weight_units`) fine
enough to keep at least 62 - log2(n_rows) bits of the largest weight. A local
fit runs the same code with :data:`~hgbt.core.collective.SINGLE_PROCESS`, so
a local model and a distributed one are bit-identical.
"""
import math

import numpy as np

from ..core.collective import SINGLE_PROCESS, allreduce_sum
from ..core.exact import grid_shift
from ._selection import bucket_weights, group_weights, narrow_rows, next_keys

__all__ = ["Agreed", "weighted_quantile", "weighted_quantiles", "radix_select",
           "weight_units"]

_SIGN = np.uint64(1 << 63)
_NONE = np.uint64(2**64 - 1)
# integer weights sum below 2**62: int64 with a bit to spare
_WEIGHT_BITS = 62
# ties: a cumulative weight within this fraction of the target counts as equal
_TIE_TOLERANCE = 1e-12


class Agreed:
    """A statistic every process computed together over a collective (a
    pooled quantile): the same everywhere, so merging keeps it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        return self


def float_keys(values):
    """uint64 keys that order as the float64 ``values`` do (-0.0 as 0.0)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_values(keys):
    """The float64 values of :func:`float_keys`' keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    return np.where(keys & _SIGN, keys & ~_SIGN, ~keys).view(np.float64)


def weight_units(weights, collective=SINGLE_PROCESS, n_rows=None):
    """``weights`` (non-negative floats, or None: this process's ``n_rows``
    rows weigh 1) as int64 multiples of ``2**-s``.

    ``s`` depends only on the largest weight and the number of rows of every
    process, so every process puts its rows on the same grid, and any sum of
    the units stays below ``2**62``. A weight below ``2**-s`` (under about
    ``2**-(62 - log2(n_rows))`` of the largest) rounds to 0. Returns None
    when no process has weights, or every weight is 0 (the caller counts rows
    instead). Every process makes the same calls whether it has weights or not
    (a Dask worker holding validation rows only has none in a weighted fit).
    """
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        n_rows = weights.size
    local = (-1.0 if weights is None else float(weights.max(initial=0.0)), n_rows)
    if collective.size > 1:
        everyone = collective.allgather(local)
        local = (max(w for w, _ in everyone), sum(n for _, n in everyone))
    if weights is None:
        if not local[0] > 0:
            return None
        weights = np.ones(n_rows)
    max_weight, n_rows = local
    if not max_weight > 0:
        return None
    shift = grid_shift(max_weight, n_rows, _WEIGHT_BITS)
    return np.rint(np.ldexp(weights, shift)).astype(np.int64)


def radix_select(keys, units, groups, n_groups, need, collective=SINGLE_PROCESS):
    """Per group ``g``, the least key ``v`` such that the rows of ``g`` with
    keys ``<= v`` weigh at least ``need[g]`` in all, over every process.

    ``units``: int64 row weights, or None to count rows; ``groups``: each
    row's group (intp), ``0 <= need[g] <=`` the group's total weight.
    Returns ``(v, below, at)``: the keys (uint64) and, per group, the total
    weight of the keys below ``v`` and at ``v`` (int64). Eight exchanges of
    ``n_groups x 256`` integers.
    """
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    groups = np.ascontiguousarray(groups, dtype=np.intp)
    units = np.empty(0, dtype=np.int64) if units is None else units
    need = np.asarray(need, dtype=np.int64)
    rows = np.arange(keys.size, dtype=np.intp)
    chosen = np.zeros(n_groups, dtype=np.uint64)
    below = np.zeros(n_groups, dtype=np.int64)
    at = np.zeros(n_groups, dtype=np.int64)
    every = np.arange(n_groups)
    for shift in range(56, -8, -8):
        buckets = np.zeros((n_groups, 256), dtype=np.int64)
        bucket_weights(keys, units, groups, rows, shift, buckets)
        buckets = allreduce_sum(collective, buckets)
        cumulative = below[:, None] + np.cumsum(buckets, axis=1)
        bucket = np.argmax(cumulative >= need[:, None], axis=1)
        at = buckets[every, bucket]
        below = cumulative[every, bucket] - at
        chosen |= bucket.astype(np.uint64) << np.uint64(shift)
        rows = narrow_rows(keys, groups, rows, shift, bucket.astype(np.intp))
    return chosen, below, at


def weighted_quantiles(values, weights, groups, n_groups, quantile,
                       collective=SINGLE_PROCESS):
    """Per group, the weighted ``quantile`` of its ``values`` over every process.

    In each group, the result is the least value whose cumulative weight
    (values ascending) reaches ``quantile * total weight``, or, when it
    equals that exactly (relative tolerance 1e-12), the midpoint of that
    value and the next larger one (every point between them is optimal).
    Weights are put on an integer grid first (:func:`weight_units`), so the
    sums are exact. Rows of weight 0 are ignored; a group whose weights are
    all 0 (or ``weights`` None) counts every row once. A group without rows
    anywhere gets NaN.

    Parameters
    ----------
    values : ndarray of shape (n_rows,)
        Finite floats.
    weights : ndarray of shape (n_rows,) or None
    groups : ndarray of shape (n_rows,)
        Each row's group, in ``[0, n_groups)``.
    n_groups : int
    quantile : float in [0, 1]
    collective : Collective, default=SINGLE_PROCESS
        The processes whose rows are pooled; all make the same call.

    Returns
    -------
    ndarray of shape (n_groups,), float64
    """
    values = np.asarray(values, dtype=np.float64)
    groups = np.ascontiguousarray(groups, dtype=np.intp)
    keys = float_keys(values)
    units = weight_units(weights, collective, values.size)
    counts = np.bincount(groups, minlength=n_groups).astype(np.int64)
    if units is None:
        totals = allreduce_sum(collective, counts)
    else:
        local = np.zeros((2, n_groups), dtype=np.int64)
        local[0] = counts
        group_weights(units, groups, local[1])
        counts, totals = allreduce_sum(collective, local)
        weightless = totals == 0  # count these groups' rows instead
        if weightless.any():
            units = np.where(weightless[groups], 1, units)
            totals = np.where(weightless, counts, totals)
    total = totals.astype(np.float64)
    target = quantile * total
    tolerance = _TIE_TOLERANCE * total
    need = np.array([min(max(math.ceil(t), 1), n) for t, n in
                     zip((target - tolerance).tolist(), totals.tolist())], dtype=np.int64)
    chosen, below, at = radix_select(keys, units, groups, n_groups, need, collective)
    result = key_values(chosen)
    tied = np.abs((below + at).astype(np.float64) - target) <= tolerance
    tied &= totals > 0
    if tied.any():  # every process agrees: the sums are global
        following = np.full(n_groups, _NONE, dtype=np.uint64)
        next_keys(keys, np.empty(0, np.int64) if units is None else units, groups,
                  chosen, following)
        if collective.size > 1:
            following = np.min(collective.allgather(following), axis=0)
        tied &= following != _NONE  # the largest value has no next one
        result[tied] = 0.5 * (result[tied] + key_values(following[tied]))
    result[totals == 0] = np.nan
    return result


def weighted_quantile(values, weights, quantile, collective=SINGLE_PROCESS):
    """The loss-optimal constant of the pinball loss: a weighted quantile.

    The one-group case of :func:`weighted_quantiles`. With integer weights
    this equals ``np.quantile(np.repeat(values, weights), quantile,
    method='averaged_inverted_cdf')``; the 0.5-quantile is the weighted
    median.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0 and collective.size == 1:
        raise ValueError("weighted_quantile of an empty array")
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).ravel()
    return float(weighted_quantiles(values, weights, np.zeros(values.size, np.intp), 1,
                                    quantile, collective)[0])
