"""Exact, mergeable sums: the same result however rows are ordered or split.

Two tools make a model independent of thread count and of how rows are
spread over Dask workers:

* gradients and hessians are snapped to a power-of-two grid fine enough to
  keep float32 precision (:func:`grid_exponent`, ``_exact.snap_to_grid``)
  yet coarse enough that any float64 sum of them is exact;
* the few float64 reductions outside histograms (baselines, loss values)
  use :class:`ExactSum`, which adds without rounding and merges by ``+``.
"""
import math

import numpy as np

from ._exact import exact_accumulate

# float32 mantissa: a snapped value is k * 2**-exponent with |k| <= 2**24.
_FLOAT32_BITS = 24
# float64 integers are exact up to 2**53; keep one bit for rounding.
_FLOAT64_BITS = 52
_MAX_EXPONENT = 126  # 2**-126 is float32's smallest normal number
# ExactSum keeps value * 2**_SCALE_BITS as a Python int (an integer for any float64).
_SCALE_BITS = 1127


class GradientOverflowError(ValueError):
    """Gradients or hessians are not finite: float32 overflowed (or NaN)."""


def grid_exponent(max_abs, n_rows):
    """Exponent ``s`` of the grid ``2**-s`` for values with ``|v| <= max_abs``.

    Snapped values fit float32 exactly, and ``n_rows`` of them sum exactly
    in float64. Depends only on ``max_abs`` and ``n_rows``, so every worker
    of a distributed fit agrees on it. Returns None when there is nothing to
    snap (all zeros). Raises :class:`GradientOverflowError` for a non-finite
    ``max_abs``: an inf or NaN would make every later prediction NaN.
    """
    max_abs = float(max_abs)
    if not math.isfinite(max_abs):
        raise GradientOverflowError("gradients or hessians are not finite (float32 "
                                    "overflow, |value| > 3.4e38, or NaN).")
    if not max_abs > 0:
        return None
    _, e_value = math.frexp(max_abs)  # max_abs < 2**e_value
    return int(min(_FLOAT32_BITS - e_value, grid_shift(max_abs, n_rows, _FLOAT64_BITS),
                   _MAX_EXPONENT))


def grid_shift(max_abs, n_rows, bits):
    """The ``s`` of the finest grid ``2**-s`` on which any ``n_rows`` values
    ``|v| <= max_abs`` (> 0, finite) sum below ``2**bits`` grid steps: exact
    in float64 for ``bits`` 52, in int64 for 62."""
    return bits - int(n_rows).bit_length() - math.frexp(max_abs)[1]


class ExactSum:
    """The exact sum of float64 values; ``a + b`` merges two sums.

    ``float(s)`` is the correctly rounded sum (±inf or NaN when a term is).
    """

    __slots__ = ("scaled", "special")

    def __init__(self, scaled=0, special=0.0):
        self.scaled = scaled    # the exact sum times 2**1127, a Python int
        self.special = special  # sum of the non-finite terms (0.0 if none)

    @classmethod
    def of(cls, values, weights=None):
        """Sum of ``values`` (times ``weights``, each product rounded once)."""
        values = np.ascontiguousarray(values, dtype=np.float64).ravel()
        weights = (np.empty(0) if weights is None
                   else np.ascontiguousarray(weights, dtype=np.float64).ravel())
        counters = np.zeros((2100, 4), dtype=np.uint64)
        special, first, stop = exact_accumulate(values, weights, counters)
        scaled = 0
        # Python ints from tolist(): a loop over NumPy scalars cost more
        # than the accumulation itself on a scored set of 10,000 rows
        for row, (pos_hi, pos_lo, neg_hi, neg_lo) in enumerate(
                counters[first:stop].tolist(), first):
            scaled += (((pos_hi - neg_hi) << 26) + pos_lo - neg_lo) << row
        return cls(scaled, special)

    @classmethod
    def of_int(cls, n):
        return cls(int(n) << _SCALE_BITS)

    def __add__(self, other):
        return ExactSum(self.scaled + other.scaled, self.special + other.special)

    def __float__(self):
        if self.special != 0.0 or math.isnan(self.special):
            return float(self.special)
        try:
            return self.scaled / (1 << _SCALE_BITS)  # int division rounds correctly
        except OverflowError:
            return math.inf if self.scaled > 0 else -math.inf

    def __repr__(self):
        return f"ExactSum({float(self)!r})"


class WeightedMean:
    """Mergeable statistics of a weighted mean.

    The mean is ``sum(w v) / sum(w)``, or the plain mean when unweighted or
    when the weights sum to zero. Every part is an exact sum, so merging the
    statistics of row shards gives the mean of all rows, bit for bit.
    """

    __slots__ = ("weighted", "weight", "plain", "count")

    def __init__(self, weighted=None, weight=None, plain=None, count=0):
        self.weighted = ExactSum() if weighted is None else weighted
        self.weight = ExactSum() if weight is None else weight
        self.plain = ExactSum() if plain is None else plain
        self.count = count

    @classmethod
    def of(cls, values, weights=None):
        values = np.asarray(values, dtype=np.float64)
        plain = ExactSum.of(values)
        if weights is None:
            return cls(plain, ExactSum.of_int(values.size), plain, values.size)
        return cls(ExactSum.of(values, weights), ExactSum.of(weights), plain, values.size)

    @classmethod
    def of_groups(cls, values, weights, groups, n_groups):
        """:meth:`of` each group's rows (``groups``: each row's, in
        ``[0, n_groups)``); a list of ``n_groups``."""
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
        values = np.asarray(values, dtype=np.float64)[order]
        weights = None if weights is None else np.asarray(weights, dtype=np.float64)[order]
        return [cls.of(values[a:b], None if weights is None else weights[a:b])
                for a, b in zip(bounds[:-1], bounds[1:])]

    def __add__(self, other):
        return WeightedMean(self.weighted + other.weighted, self.weight + other.weight,
                            self.plain + other.plain, self.count + other.count)

    def value(self):
        """The mean (NaN for no rows)."""
        weight = float(self.weight)
        if weight > 0:
            return float(self.weighted) / weight
        return float(self.plain) / self.count if self.count else math.nan
