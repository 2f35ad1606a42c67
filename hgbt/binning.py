"""Bin thresholds: learnt once at fit, applied to the full matrix by ``_binning``."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.utils import check_random_state

from ._binning import map_to_bins
from ._types import X_BINNED_DTYPE, X_DTYPE

# Rows used to compute quantile thresholds (LightGBM and scikit-learn use the same).
DEFAULT_SUBSAMPLE = 200_000


def _midpoints(distinct):
    """Thresholds between consecutive distinct values (sorted, no NaN).

    A threshold ``t`` separates ``a < b`` when ``a <= t < b``. The midpoint is
    preferred; where it is not strictly below ``b`` (±inf, or ``a`` and ``b``
    adjacent floats) ``a`` itself is used.
    """
    return _midpoints_of(distinct[:-1], distinct[1:])


def _midpoints_of(a, b):
    """Elementwise separating threshold of ``a < b`` (see :func:`_midpoints`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        mid = a * 0.5 + b * 0.5
    bad = ~((a <= mid) & (mid < b))
    mid[bad] = a[bad]
    return mid


def _quantiles(sorted_values, n_quantiles):
    """Interior quantiles k / n_quantiles (k = 1 .. n_quantiles - 1) of sorted data.

    Averaged inverted CDF: the order statistic at rank ceil(n q), or the
    midpoint of the two around it when n q is an integer. The midpoint is the
    same separating one as between distinct values, so a quantile between the
    largest finite value and +inf separates them instead of becoming inf.
    """
    n = sorted_values.size
    # n q = n k / n_quantiles in exact integer arithmetic.
    k = np.arange(1, n_quantiles)
    rank, remainder = np.divmod(n * k, n_quantiles)
    lower = sorted_values[np.maximum(rank - 1, 0)]
    upper = sorted_values[np.minimum(rank, n - 1)]
    on_rank = remainder == 0
    out = upper.copy()
    if on_rank.any():
        pairs = np.column_stack([lower[on_rank], upper[on_rank]])
        same = pairs[:, 0] == pairs[:, 1]
        mids = pairs[:, 0].copy()
        mids[~same] = _midpoints_of(pairs[~same, 0], pairs[~same, 1])
        out[on_rank] = mids
    return out


def find_thresholds(column, max_bins):
    """Thresholds of one feature from its (possibly subsampled) values.

    At most ``max_bins`` distinct values map one-to-one to bins (midpoints
    between them); otherwise the thresholds are quantiles, de-duplicated.

    Parameters
    ----------
    column : ndarray of shape (n,)
    max_bins : int
        Maximum number of non-missing bins; at most ``max_bins - 1`` thresholds.

    Returns
    -------
    thresholds : ndarray of float64, sorted, strictly increasing
    """
    column = np.asarray(column, dtype=X_DTYPE)
    values = np.sort(column[~np.isnan(column)])
    if values.size == 0:
        return np.empty(0, dtype=X_DTYPE)
    distinct = values[np.r_[True, values[1:] != values[:-1]]]
    if distinct.size <= 1:
        return np.empty(0, dtype=X_DTYPE)
    if distinct.size <= max_bins:
        return _midpoints(distinct)
    # Quantiles inside a point mass at the maximum (e.g. many +inf) would
    # merge it with smaller values: cap them at the separator below it.
    top = _midpoints_of(distinct[-2:-1], distinct[-1:])[0]
    return np.unique(np.minimum(_quantiles(values, max_bins), top))


class BinMapper:
    """Learn per-feature bin thresholds and map raw values to uint8 codes.

    Codes ``0 .. n_bins_non_missing_[f] - 1`` are value bins; NaN gets code
    ``missing_bin == max_bins``. ±inf are ordinary extreme values.

    Parameters
    ----------
    max_bins : int, default=255
        Maximum number of value bins per feature (2 to 255).
    subsample : int or None, default=200_000
        Rows drawn (seeded, without replacement) to compute thresholds.
    random_state : int, RandomState or None
        Seed of the row subsample.
    n_threads : int, default=1
        Threads used by :meth:`transform`.
    """

    def __init__(self, max_bins=255, subsample=DEFAULT_SUBSAMPLE,
                 random_state=None, n_threads=1):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state
        self.n_threads = n_threads

    def sample_rows(self, n_samples):
        """Sorted row indices used for thresholds, or None for all rows.

        Exposed so that a distributed fit can gather exactly the same rows.
        """
        if self.subsample is None or n_samples <= self.subsample:
            return None
        rng = check_random_state(self.random_state)
        return np.sort(rng.choice(n_samples, self.subsample, replace=False))

    def fit(self, X):
        """Compute thresholds from ``X`` (n_samples, n_features)."""
        if not 2 <= self.max_bins <= 255:
            raise ValueError(f"max_bins must be in [2, 255], got {self.max_bins}.")
        rows = self.sample_rows(X.shape[0])
        sample = X if rows is None else X[rows]
        return self.fit_sample(sample)

    def fit_sample(self, sample):
        """Compute thresholds from an already drawn row sample."""
        # NumPy's sorts release the GIL: features are processed in threads.
        columns = (sample[:, f] for f in range(sample.shape[1]))
        with ThreadPoolExecutor(max_workers=max(1, self.n_threads)) as pool:
            self.bin_thresholds_ = list(
                pool.map(lambda c: find_thresholds(c, self.max_bins), columns))
        self.n_bins_non_missing_ = np.array(
            [t.size + 1 for t in self.bin_thresholds_], dtype=np.uint32)
        self.missing_bin = self.max_bins
        return self

    def transform(self, X):
        """Map ``X`` to a Fortran-ordered uint8 matrix of bin codes."""
        n_features = len(self.bin_thresholds_)
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, the bin mapper was fit with {n_features}.")
        padded = np.zeros((n_features, max(self.max_bins - 1, 1)), dtype=X_DTYPE)
        n_thresholds = np.zeros(n_features, dtype=np.int32)
        for f, t in enumerate(self.bin_thresholds_):
            padded[f, :t.size] = t
            n_thresholds[f] = t.size
        binned = np.empty(X.shape, dtype=X_BINNED_DTYPE, order="F")
        map_to_bins(X, padded, n_thresholds, self.missing_bin, binned, self.n_threads)
        return binned
