"""Bin thresholds: learnt once at fit, applied to the full matrix by ``_binning``."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._binning import category_counts, map_to_bins
from ..core._types import BITSET_DTYPE, BITSET_WORDS, X_BINNED_DTYPE, X_DTYPE
from .sparse import column
from .thresholds import (_check_weight, _find_thresholds, _unweighted,
                         constant_positive_weight, dense_thresholds, sparse_thresholds)

# Rows used to compute thresholds (LightGBM and scikit-learn use the same).
DEFAULT_SUBSAMPLE = 200_000

# Category codes of a categorical feature are 0 .. MAX_CATEGORIES - 1: each is
# its own bin, and the missing bin (at most 255) stays above them.
MAX_CATEGORIES = 255

ENCODER_HINT = ("encode the feature with sklearn.preprocessing.OrdinalEncoder (grouping "
                "rare categories, e.g. max_categories=255), use "
                "sklearn.preprocessing.TargetEncoder for high cardinality, or treat it "
                "as numeric")


def category_codes(column, feature=0):
    """Sorted distinct category codes of a categorical column (NaN ignored).

    Codes must be integers (any float dtype holding them is fine) in
    ``[0, MAX_CATEGORIES)``; anything else raises ``ValueError``.
    """
    column = np.asarray(column)
    if column.dtype not in (np.float32, np.float64) or column.ndim != 1:
        column = np.asarray(column, dtype=X_DTYPE).ravel()
    counts, first_bad = category_counts(column, MAX_CATEGORIES)
    if first_bad < 0:
        return np.flatnonzero(counts)
    # Slow path, errors only: report the first non-integer or negative value
    # if there is one, else the largest code.
    values = column[~np.isnan(column)].astype(X_DTYPE)
    with np.errstate(invalid="ignore"):
        bad = (values < 0) | (values != np.floor(values))
    if bad.any():
        raise ValueError(
            f"Categorical feature {feature} has the value {values[bad][0]!r}: category "
            "codes must be non-negative integers (NaN for missing); "
            f"{ENCODER_HINT}.")
    raise ValueError(
        f"Categorical feature {feature} has the code {values.max()!r}: codes must be "
        f"below {MAX_CATEGORIES} (at most {MAX_CATEGORIES} categories); "
        f"{ENCODER_HINT}.")


def codes_to_bitset(codes):
    """A 256-bit set (8 uint32 words) of integer codes 0..255."""
    bitset = np.zeros(BITSET_WORDS, dtype=BITSET_DTYPE)
    codes = np.asarray(codes, dtype=np.intp)
    np.bitwise_or.at(bitset, codes >> 5, (np.uint32(1) << (codes & 31)).astype(BITSET_DTYPE))
    return bitset


def bitset_to_codes(bitset):
    """Sorted codes whose bit is set in a 256-bit set (8 uint32 words)."""
    bits = np.unpackbits(np.asarray(bitset, dtype="<u4").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)


class BinMapper:
    """Learn per-feature bin thresholds and map raw values to uint8 codes.

    Codes ``0 .. n_bins_non_missing_[f] - 1`` are value bins; NaN gets code
    ``missing_bin``. ±inf are ordinary extreme values.

    A categorical feature has no thresholds: its values are category codes
    (integers 0..254) and each code seen at fit time is its own bin (bin =
    code), ``n_bins_non_missing_[f]`` is the largest one plus 1, and NaN and
    codes not seen at fit time go to the missing bin. ``missing_bin`` is
    ``max_bins``, or above the largest category code if that is larger.

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
    is_categorical : array-like of bool of shape (n_features,) or None
        Categorical features (None: none).

    Attributes
    ----------
    bin_thresholds_ : list of ndarray
        Per feature, the raw value of each bin's upper edge (empty for
        categorical features).
    n_bins_non_missing_ : ndarray of uint32
    missing_bin : int
    is_categorical_ : ndarray of bool of shape (n_features,)
    categories_ : list
        Per feature, None, or for a categorical feature the sorted codes seen
        at fit time.
    known_cat_bitsets_ : ndarray of shape (n_features, 8), uint32
        The same codes as 256-bit sets (zeros for numeric features).
    """

    def __init__(self, max_bins=255, subsample=DEFAULT_SUBSAMPLE,
                 random_state=None, n_threads=1, is_categorical=None):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state
        self.n_threads = n_threads
        self.is_categorical = is_categorical

    def _categorical_mask(self, n_features):
        if self.is_categorical is None:
            return np.zeros(n_features, dtype=bool)
        mask = np.asarray(self.is_categorical, dtype=bool)
        if mask.shape != (n_features,):
            raise ValueError(f"is_categorical has shape {mask.shape}, expected "
                             f"({n_features},).")
        return mask

    def sample_rows(self, n_samples):
        """Sorted row indices used for thresholds, or None for all rows.

        Exposed so that a distributed fit can gather exactly the same rows.
        """
        if self.subsample is None or n_samples <= self.subsample:
            return None
        rng = check_random_state(self.random_state)
        return np.sort(rng.choice(n_samples, self.subsample, replace=False))

    def fit(self, X, sample_weight=None):
        """Compute thresholds from ``X`` (n_samples, n_features).

        ``sample_weight`` (n_samples,), finite and non-negative, takes the
        place of row counts in the cuts (see :func:`~hgbt.data.thresholds.find_thresholds`). The row subsample stays
        uniform and seeded (:meth:`sample_rows`); the weights of the drawn
        rows are then used. The categories of categorical features are those
        of all rows of ``X``.
        """
        if not 2 <= self.max_bins <= 255:
            raise ValueError(f"max_bins must be in [2, 255], got {self.max_bins}.")
        sample_weight = _check_weight(sample_weight, X.shape[0])
        if sp.issparse(X) and X.format not in ("csr", "csc"):
            X = X.tocsr()  # COO cannot be indexed
        categories = {f: category_codes(column(X, f), f)
                      for f in np.flatnonzero(self._categorical_mask(X.shape[1]))}
        rows = self.sample_rows(X.shape[0])
        if sample_weight is not None and rows is not None:
            sample_weight = sample_weight[rows]
        if not sp.issparse(X) and _unweighted(sample_weight):
            # Dense and unweighted: the drawn rows are gathered block by block
            # (no copy of the whole sample).
            return self._fit_dense(X, rows, categories)
        sample = X if rows is None else X[rows]
        return self.fit_sample(sample, sample_weight, categories)

    def fit_sample(self, sample, sample_weight=None, categories=None):
        """Compute thresholds from an already drawn row sample.

        ``sample_weight`` holds the weights of the rows of ``sample``.
        ``categories`` maps categorical features to their sorted codes
        (default: the codes in ``sample``).
        """
        sample_weight = _check_weight(sample_weight, sample.shape[0])
        if not sp.issparse(sample) and _unweighted(sample_weight):
            return self._fit_dense(sample, None, categories)
        n_features = sample.shape[1]
        is_categorical = self._categorical_mask(n_features)
        categories = self._categories(sample, is_categorical, categories)
        numeric = [f for f in range(n_features) if not is_categorical[f]]
        if sp.issparse(sample):
            # CSC columns: thresholds from the stored values and the zero count.
            sample = sample.tocsc()
            if constant_positive_weight(sample_weight):
                n_kept = (None if sample_weight is None
                          else int(np.count_nonzero(sample_weight > 0)))

                def thresholds_of(f):
                    return sparse_thresholds(sample, f, self.max_bins, sample_weight,
                                             n_kept)
            else:
                def thresholds_of(f):
                    return _find_thresholds(column(sample, f), self.max_bins,
                                            sample_weight)
        else:
            def thresholds_of(f):
                return _find_thresholds(sample[:, f], self.max_bins, sample_weight)
        if sp.issparse(sample):
            # short columns: threads would only contend for the GIL
            thresholds = [thresholds_of(f) for f in numeric]
        else:
            # NumPy's sorts release the GIL: features are processed in threads.
            with ThreadPoolExecutor(max_workers=max(1, self.n_threads)) as pool:
                thresholds = list(pool.map(thresholds_of, numeric))
        bin_thresholds = [np.empty(0, dtype=X_DTYPE) for _ in range(n_features)]
        for f, t in zip(numeric, thresholds):
            bin_thresholds[f] = t
        return self._set_fitted(bin_thresholds, is_categorical, categories)

    def _categories(self, X, is_categorical, categories):
        """``categories`` completed with the codes in ``X`` of the other
        categorical features."""
        categories = {} if categories is None else dict(categories)
        for f in np.flatnonzero(is_categorical):
            if f not in categories:
                categories[f] = category_codes(column(X, f), f)
        return categories

    def _fit_dense(self, X, rows, categories):
        """Unweighted thresholds of a dense ``X`` from its rows ``rows`` (None:
        all), in one kernel call per block of columns."""
        X = np.asarray(X)
        n_features = X.shape[1]
        is_categorical = self._categorical_mask(n_features)
        categories = self._categories(X, is_categorical, categories)
        padded, counts = dense_thresholds(X, rows, self.max_bins, self.n_threads)
        bin_thresholds = [np.empty(0, dtype=X_DTYPE) if is_categorical[f]
                          else padded[f, :counts[f]].copy() for f in range(n_features)]
        return self._set_fitted(bin_thresholds, is_categorical, categories)

    def set_thresholds(self, bin_thresholds, is_categorical, categories):
        """Take thresholds found elsewhere (a quantile sketch over batches)
        instead of fitting: ``bin_thresholds`` per feature (sorted, at most
        ``max_bins - 1``; empty for categorical features), ``categories``
        maps categorical features to their sorted codes seen."""
        if not 2 <= self.max_bins <= 255:
            raise ValueError(f"max_bins must be in [2, 255], got {self.max_bins}.")
        is_categorical = np.asarray(is_categorical, dtype=bool)
        if any(t.size > self.max_bins - 1 for t in bin_thresholds):
            raise ValueError(f"more than max_bins - 1 = {self.max_bins - 1} thresholds.")
        self.is_categorical = is_categorical
        return self._set_fitted([np.asarray(t, dtype=X_DTYPE) for t in bin_thresholds],
                                is_categorical, categories)

    def _set_fitted(self, bin_thresholds, is_categorical, categories):
        n_features = len(bin_thresholds)
        self.bin_thresholds_ = bin_thresholds
        self.is_categorical_ = is_categorical
        self.categories_ = [np.asarray(categories[f], dtype=np.intp)
                            if is_categorical[f] else None for f in range(n_features)]
        self.known_cat_bitsets_ = np.zeros((n_features, BITSET_WORDS), dtype=BITSET_DTYPE)
        n_bins = []
        for f in range(n_features):
            if is_categorical[f]:
                codes = self.categories_[f]
                self.known_cat_bitsets_[f] = codes_to_bitset(codes)
                n_bins.append(int(codes[-1]) + 1 if codes.size else 1)
            else:
                n_bins.append(self.bin_thresholds_[f].size + 1)
        self.n_bins_non_missing_ = np.array(n_bins, dtype=np.uint32)
        # Category codes are bins: the missing bin must stay above them.
        self.missing_bin = max(self.max_bins, int(self.n_bins_non_missing_.max(initial=0)))
        return self

    def padded_thresholds(self):
        """Thresholds as one (n_features, max_bins - 1) array, and their counts."""
        n_features = len(self.bin_thresholds_)
        padded = np.zeros((n_features, max(self.max_bins - 1, 1)), dtype=X_DTYPE)
        n_thresholds = np.zeros(n_features, dtype=np.int32)
        for f, t in enumerate(self.bin_thresholds_):
            padded[f, :t.size] = t
            n_thresholds[f] = t.size
        return padded, n_thresholds

    def zero_bins(self):
        """Per feature, the bin of the value 0.0 (an implicit sparse zero)."""
        out = np.array([np.searchsorted(t, 0.0, side="left") for t in self.bin_thresholds_],
                       dtype=X_BINNED_DTYPE)
        for f in np.flatnonzero(self.is_categorical_):
            out[f] = 0 if self.known_cat_bitsets_[f, 0] & 1 else self.missing_bin
        return out

    def transform(self, X):
        """Map ``X`` to a Fortran-ordered uint8 matrix of bin codes."""
        n_features = len(self.bin_thresholds_)
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, the bin mapper was fit with {n_features}.")
        padded, n_thresholds = self.padded_thresholds()
        binned = np.empty(X.shape, dtype=X_BINNED_DTYPE, order="F")
        is_categorical = getattr(self, "is_categorical_", None)
        if is_categorical is None or not np.any(is_categorical):
            map_to_bins(X, padded, n_thresholds, self.missing_bin, binned, self.n_threads)
        else:
            map_to_bins(X, padded, n_thresholds, self.missing_bin, binned, self.n_threads,
                        np.ascontiguousarray(is_categorical, dtype=np.uint8),
                        np.ascontiguousarray(self.known_cat_bitsets_, dtype=BITSET_DTYPE))
        return binned
