"""Row sampling (bagging, GOSS) and feature sampling (per tree, per node).

Gradients and hessians follow the layout of :mod:`hgbt.engine.losses`: float32,
shape ``(n_trees_per_iteration, n_samples)``, C-ordered. One boosting round
grows its ``n_trees_per_iteration`` trees on the same sampled rows.

Everything here is deterministic: GOSS and the feature samplers draw from
the :class:`numpy.random.Generator` passed in (the same generator state and
the same inputs give the same rows, masks and re-weighted gradients); bagging
keeps each row by a counter-based draw from the round's seed and the row's
index (``_sampling.pyx``), so that a Dask shard draws for its rows what the
local fit draws for them.
"""
from numbers import Integral, Real

import numpy as np

from ..core.exact import GradientOverflowError

from ..core.collective import SINGLE_PROCESS
from ._sampling import bernoulli_rows, row_keys
from .selection import radix_select

# Same dtypes as ``hgbt.core._types``.
G_H_DTYPE = np.float32
SIZE_DTYPE = np.uint32
#: the stream of the row sampling draws among a round's seeds (quantized
#: gradients take ``(seed, round, tree)``; a tree index never reaches this)
SAMPLING_STREAM = 0xBA6

__all__ = ["RowSampler", "FeatureSampler", "round_feature_samplers"]

_ROW_STRATEGIES = ("bagging", "goss")


def _check_fraction(value, name):
    """Return ``value`` as a float after checking it lies in (0, 1]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number in (0, 1], got {value!r}.")
    value = float(value)
    if not 0.0 < value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in (0, 1], got {value!r}.")
    return value


def _check_positive_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}.")
    return int(value)


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator "
                        f"(e.g. numpy.random.default_rng(seed)), got {type(rng).__name__}.")
    return rng


def _n_chosen(fraction, n):
    """``max(1, round(fraction * n))`` (Python's round: half to even)."""
    return max(1, round(fraction * n))


def _draw_mask(rng, n, size):
    """Boolean mask of ``size`` of ``n`` positions drawn uniformly without replacement."""
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size, replace=False, shuffle=False)] = True
    return mask


class RowSampler:
    """Per-round row sampler: uniform bagging or gradient-based one-side sampling.

    Parameters
    ----------
    strategy : {'bagging', 'goss'}
        ``'bagging'``: each row kept with probability ``subsample``, by a
        counter-based draw from the round's seed and the row's index (as
        XGBoost and LightGBM, a random number of rows). ``'goss'``:
        gradient-based one-side sampling (LightGBM): the rows with the
        largest ``sum_k |g_k * h_k|`` are kept, each other row is kept by its
        own draw and up-weighted.
    subsample : float in (0, 1]
        Probability of each row to be kept by ``'bagging'``. Only validated
        and used for ``'bagging'``.
    goss_top_rate : float in (0, 1]
        ``'goss'``: ``int(goss_top_rate * n_samples)`` rows with the largest
        scores are always kept. Only validated and used for ``'goss'``.
    goss_other_rate : float in (0, 1]
        ``'goss'``: each remaining row is kept with probability ``n_other /
        (n_samples - n_top)``, ``n_other = int(goss_other_rate * n_samples)``
        (so ``n_other`` of them on average). ``goss_top_rate +
        goss_other_rate`` must not exceed 1. Only validated and used for
        ``'goss'``.
    n_samples : int
        Number of training rows.
    rng : numpy.random.Generator
        Without :meth:`start_round`, each :meth:`sample` draws new seeds from it.

    Attributes
    ----------
    n_top : int
        ``'goss'``: number of rows kept for their large scores (0 for bagging).
    n_other : int
        ``'goss'``: number of small-score rows drawn on average (0 for bagging).
    n_sampled : int
        Number of rows returned by :meth:`sample` on average (GOSS's top rows:
        exactly).
    other_weight : float
        ``'goss'``: factor the gradients and hessians of the drawn
        small-score rows are multiplied by, ``(n_samples - n_top) / n_other``
        (1.0 for bagging or when ``n_other == 0``). This is the factor of
        LightGBM's ``goss.hpp``; it equals ``(1 - goss_top_rate) /
        goss_other_rate`` when both rates times ``n_samples`` are integers
        and, unlike that expression, keeps the expected gradient sum exactly
        equal to the full sum when they are not.

    Notes
    -----
    GOSS rows tied at the top-``n_top`` threshold are chosen uniformly at
    random (from ``rng``, so still reproducible): taking the first rows would
    bias the sample when many scores tie (e.g. absolute error, where every
    |g h| is the same) and the data are sorted. Scores are computed in float64
    (the product of two float32 values is exact in float64), so ties are real
    ties.

    If ``int(goss_top_rate * n) + int(goss_other_rate * n)`` is 0 (tiny
    ``n``), one top row is kept so a round is never empty.

    Examples
    --------
    >>> import numpy as np
    >>> from hgbt.engine.sampling import RowSampler
    >>> g = np.array([[3.0, -0.1, 0.2, -5.0, 0.3, 0.0]], dtype=np.float32)
    >>> h = np.ones_like(g)
    >>> sampler = RowSampler("goss", 1.0, 0.34, 0.5, 6, np.random.default_rng(0))
    >>> rows = sampler.sample(g, h)
    >>> rows.dtype, rows.size, bool(np.isin([0, 3], rows).all())
    (dtype('uint32'), 5, True)
    """

    def __init__(self, strategy, subsample, goss_top_rate, goss_other_rate, n_samples, rng,
                 by_query=False):
        if strategy not in _ROW_STRATEGIES:
            raise ValueError(f"strategy must be one of {_ROW_STRATEGIES}, got {strategy!r}.")
        if by_query and strategy != "bagging":
            raise ValueError("bagging_by_query draws whole queries: it needs "
                             "data_sample_strategy='bagging'.")
        self.strategy = strategy
        #: bagging keeps or drops whole queries: the caller passes as row ids
        #: each row's query key (its first row among all rows)
        self.by_query = by_query
        self.n_samples = _check_positive_int(n_samples, "n_samples")
        self.rng = _check_rng(rng)
        self.round_seeds = None  # (bagging, GOSS ties, GOSS others), set by start_round
        self.subsample = subsample
        self.goss_top_rate = goss_top_rate
        self.goss_other_rate = goss_other_rate
        n = self.n_samples
        self.n_top = 0
        self.n_other = 0
        self.other_weight = 1.0
        # GOSS's drawn small-score rows (empty until a draw, or when none are drawn)
        self.reweighted_rows = np.empty(0, dtype=np.intp)
        if strategy == "bagging":
            self.subsample = _check_fraction(subsample, "subsample")
            self.n_sampled = min(n, _n_chosen(self.subsample, n))
        else:
            a = self.goss_top_rate = _check_fraction(goss_top_rate, "goss_top_rate")
            b = self.goss_other_rate = _check_fraction(goss_other_rate, "goss_other_rate")
            if a + b > 1.0:
                raise ValueError("goss_top_rate + goss_other_rate must be <= 1, got "
                                 f"{a!r} + {b!r} = {a + b!r}.")
            self.n_top = int(a * n)
            self.n_other = int(b * n)
            if self.n_top + self.n_other == 0:
                self.n_top = 1
            if self.n_other > 0:
                self.other_weight = (n - self.n_top) / self.n_other
            self.n_sampled = self.n_top + self.n_other

    @property
    def active(self):
        """bool: False when sampling would keep every row unchanged (bagging with
        ``subsample == 1``); the caller then skips :meth:`sample` altogether."""
        return not (self.strategy == "bagging" and self.subsample == 1.0)

    @property
    def needs_full_hessian(self):
        """bool: True for GOSS, which re-weights rows, so a constant hessian
        (shape ``(K, 1)``) no longer describes the rows: allocate per-row hessians."""
        return self.strategy == "goss"

    def sample(self, gradients=None, hessians=None, row_ids=None, n_threads=1,
               collective=SINGLE_PROCESS):
        """Draw this round's rows; GOSS also re-weights gradients and hessians.

        Parameters
        ----------
        gradients : ndarray of shape (n_trees_per_iteration, n_samples), float32
            This round's gradients. Required for ``'goss'``, which modifies it
            in place; ignored (may be None) for ``'bagging'``.
        hessians : ndarray of shape (n_trees_per_iteration, n_samples), float32
            This round's per-row hessians, same shape as ``gradients``.
            Required for ``'goss'``, which modifies it in place; ignored (may be
            None) for ``'bagging'``.
        row_ids : ndarray of int64 or None
            The index of each row to draw for among all the fit's training
            rows (a Dask shard's rows); None: rows ``0 .. n_samples - 1``.
        n_threads : int
            Threads of the draws.
        collective : Collective
            GOSS: the processes holding the other rows (a Dask fit's shards),
            among which the top rows are chosen; ``row_ids`` then gives each
            row's index among all rows.

        Returns
        -------
        rows : ndarray of shape (n_sampled,), uint32
            Sorted, unique row indices used by every tree of this round.
        """
        n = self.n_samples if row_ids is None else row_ids.shape[0]
        if self.strategy == "bagging" and self.subsample == 1.0:
            return np.arange(n, dtype=SIZE_DTYPE)
        # a sampler used on its own (no start_round) draws new seeds from rng
        seeds = (self.round_seeds if self.round_seeds is not None
                 else _seeds(np.random.SeedSequence(int(self.rng.integers(2**63)))))
        if self.strategy == "bagging":
            return bernoulli_rows(seeds[0], self.subsample, n, row_ids, n_threads)
        return self._sample_goss(gradients, hessians, row_ids, n_threads, collective, seeds)

    def start_round(self, rng, seed, iteration):
        """Seed the round's draws from ``(seed, iteration)``: each row's draw
        then depends only on them and the row's index among all rows
        (``rng``, the round's generator, is kept for code that draws from it)."""
        self.rng = _check_rng(rng)
        self.round_seeds = _seeds(np.random.SeedSequence([seed, iteration, SAMPLING_STREAM]))

    def _check_goss_arrays(self, gradients, hessians, row_ids=None):
        for name, arr in (("gradients", gradients), ("hessians", hessians)):
            if not isinstance(arr, np.ndarray) or arr.dtype != G_H_DTYPE or arr.ndim != 2:
                raise ValueError(f"GOSS needs {name} as a 2-D float32 ndarray of shape "
                                 f"(n_trees_per_iteration, n_samples), got "
                                 f"{type(arr).__name__} {getattr(arr, 'dtype', '')} "
                                 f"{getattr(arr, 'shape', '')}.")
            if not arr.flags.writeable:
                raise ValueError(f"GOSS re-weights {name} in place; the array is read-only.")
        n = self.n_samples if row_ids is None else row_ids.shape[0]
        if gradients.shape[1] != n:
            raise ValueError(f"gradients have {gradients.shape[1]} rows, the sampler was "
                             f"built for n_samples={n}.")
        if hessians.shape != gradients.shape:
            raise ValueError(f"GOSS needs per-row hessians of shape {gradients.shape} "
                             f"(see needs_full_hessian), got {hessians.shape}.")

    def _scores(self, gradients, hessians):
        """``sum_k |g_k * h_k|`` per row, float64 (each product exact)."""
        n_trees, n = gradients.shape
        score = np.empty(n, dtype=np.float64)
        np.multiply(gradients[0], hessians[0], out=score, dtype=np.float64)
        np.abs(score, out=score)
        if n_trees > 1:
            tmp = np.empty(n, dtype=np.float64)
            for k in range(1, n_trees):
                np.multiply(gradients[k], hessians[k], out=tmp, dtype=np.float64)
                np.abs(tmp, out=tmp)
                score += tmp
        if np.isnan(score).any():
            raise GradientOverflowError("GOSS scores |g * h| contain NaN: gradients or "
                                        "hessians are not finite.")
        return score

    def _top_mask(self, score, row_ids, collective, tie_seed):
        """Mask of the ``n_top`` rows with the largest scores among all rows
        (of every process); rows tied at the threshold are taken in the order
        of their counter-based keys (then of their indices)."""
        n_local = score.size
        if self.n_top >= self.n_samples:
            return np.ones(n_local, dtype=bool)
        # non-negative float64 scores order as their bits do
        top, tied, n_missing, n_tied = _largest(score.view(np.uint64), self.n_top, self.n_samples,
                                        collective)
        if n_missing:
            keys = row_keys(tie_seed, n_local,
                            None if row_ids is None else row_ids)[tied]
            above, still, n_left, _ = _largest(keys, n_missing, n_tied, collective)
            top[tied[above]] = True
            if n_left:  # tied on both keys (vanishingly rare): the lowest indices
                ids = tied[still] if row_ids is None else row_ids[tied[still]]
                everywhere = np.sort(np.concatenate(collective.allgather(ids)))
                top[tied[still][ids <= everywhere[n_left - 1]]] = True
        return top

    def _sample_goss(self, gradients, hessians, row_ids, n_threads, collective, seeds):
        self._check_goss_arrays(gradients, hessians, row_ids)
        score = self._scores(gradients, hessians)
        n_local = score.size
        top = self._top_mask(score, row_ids, collective, seeds[1])
        if self.n_other == 0:
            self.reweighted_rows = np.empty(0, dtype=np.intp)
            return np.flatnonzero(top).astype(SIZE_DTYPE)
        # each other row kept with probability n_other / (n - n_top): n_other
        # of them on average, up-weighted by the inverse
        drawn_mask = np.zeros(n_local, dtype=bool)
        drawn_mask[bernoulli_rows(seeds[2], self.n_other / (self.n_samples - self.n_top),
                                  n_local, row_ids, n_threads)] = True
        drawn_mask &= ~top
        drawn = np.flatnonzero(drawn_mask)  # sorted: friendlier gather/scatter
        self.reweighted_rows = drawn
        factor = G_H_DTYPE(self.other_weight)
        gradients[:, drawn] *= factor
        hessians[:, drawn] *= factor
        return np.flatnonzero(top | drawn_mask).astype(SIZE_DTYPE)


def _seeds(sequence):
    """A round's three draws' seeds: bagging, GOSS's ties, GOSS's other rows."""
    return tuple(int(v) for v in sequence.generate_state(3, np.uint64))


def _largest(keys, k, n, collective):
    """The ``k`` largest of the ``n`` uint64 ``keys`` of every process
    (``0 < k <= n``), by radix selection: returns the mask of this process's
    rows above the k-th key, the indices of its rows at it, how many rows at
    it (over all processes) complete the k, and how many are at it in all."""
    # the k-th largest is the least key with n - k + 1 keys at or below it
    kth, below, at = radix_select(keys, None, np.zeros(keys.size, dtype=np.intp), 1,
                                  [n - k + 1], collective)
    n_above = n - int(below[0] + at[0])
    return keys > kth[0], np.flatnonzero(keys == kth[0]), k - n_above, int(at[0])


class FeatureSampler:
    """Random feature subsets per tree (``colsample_bytree``) and per node
    (``colsample_bynode``).

    Parameters
    ----------
    n_features : int
        Number of features.
    colsample_bytree : float in (0, 1]
        Fraction of features a tree may use: ``max(1, round(colsample_bytree *
        n_features))`` features, drawn uniformly without replacement per tree.
    colsample_bynode : float in (0, 1]
        Fraction of the tree's allowed features a node's split search may use:
        ``max(1, round(colsample_bynode * n_allowed))`` features per node.
    rng : numpy.random.Generator
        Source of all random draws. With both fractions equal to 1 it is never
        used.

    Notes
    -----
    Masks are uint8 arrays of shape ``(n_features,)`` (1 = allowed); None
    stands for "every feature allowed" so callers can skip masking.

    Examples
    --------
    >>> import numpy as np
    >>> from hgbt.engine.sampling import FeatureSampler
    >>> fs = FeatureSampler(10, 0.5, 0.4, np.random.default_rng(0))
    >>> tree = fs.tree_mask()
    >>> node = fs.node_mask(tree)
    >>> int(tree.sum()), int(node.sum()), bool(np.all(node <= tree))
    (5, 2, True)
    """

    def __init__(self, n_features, colsample_bytree, colsample_bynode, rng):
        self.n_features = _check_positive_int(n_features, "n_features")
        self.colsample_bytree = _check_fraction(colsample_bytree, "colsample_bytree")
        self.colsample_bynode = _check_fraction(colsample_bynode, "colsample_bynode")
        self.rng = _check_rng(rng)

    @property
    def active(self):
        """bool: False when both fractions are 1 (every mask is None)."""
        return self.colsample_bytree != 1.0 or self.colsample_bynode != 1.0

    def tree_mask(self):
        """Features one tree may use.

        Returns
        -------
        mask : ndarray of shape (n_features,), uint8, or None
            Exactly ``max(1, round(colsample_bytree * n_features))`` ones, or
            None (all features, no random draw) when ``colsample_bytree == 1``.
        """
        if self.colsample_bytree == 1.0:
            return None
        n = self.n_features
        size = min(n, _n_chosen(self.colsample_bytree, n))
        return _draw_mask(self.rng, n, size).view(np.uint8)

    def node_mask(self, tree_mask):
        """Features one node's split search may use.

        Parameters
        ----------
        tree_mask : ndarray of shape (n_features,), uint8, or None
            The tree's mask from :meth:`tree_mask` (None: all features).

        Returns
        -------
        mask : ndarray of shape (n_features,), uint8, or None
            ``max(1, round(colsample_bynode * n_allowed))`` ones chosen
            uniformly without replacement among the features allowed by
            ``tree_mask``; ``tree_mask`` itself (possibly None, no random draw)
            when ``colsample_bynode == 1``.
        """
        if tree_mask is not None:
            tree_mask = np.asarray(tree_mask)
            if tree_mask.shape != (self.n_features,):
                raise ValueError(f"tree_mask must have shape ({self.n_features},), "
                                 f"got {tree_mask.shape}.")
        if self.colsample_bynode == 1.0:
            return tree_mask
        if tree_mask is None:
            allowed = np.arange(self.n_features)
        else:
            allowed = np.flatnonzero(tree_mask)
            if allowed.size == 0:
                raise ValueError("tree_mask allows no feature.")
        size = min(allowed.size, _n_chosen(self.colsample_bynode, allowed.size))
        mask = np.zeros(self.n_features, dtype=np.uint8)
        mask[allowed[self.rng.choice(allowed.size, size, replace=False, shuffle=False)]] = 1
        return mask


def round_feature_samplers(n_features, colsample_bytree, colsample_bynode, rng, seed,
                           iteration, n_trees):
    """The feature samplers of one boosting round's trees.

    A single tree draws from the round's generator ``rng``. The trees of a
    multiclass round each draw from a generator of their own, seeded by
    ``(seed, iteration, tree, 1)``, so trees grown at the same time draw the
    same masks whichever finishes first.
    """
    if n_trees == 1:
        return [FeatureSampler(n_features, colsample_bytree, colsample_bynode, rng)]
    return [FeatureSampler(n_features, colsample_bytree, colsample_bynode,
                           np.random.default_rng([seed, iteration, k, 1]))
            for k in range(n_trees)]
