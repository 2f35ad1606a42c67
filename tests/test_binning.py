"""BinMapper, find_thresholds and the map_to_bins kernel against NumPy references."""
import warnings

import numpy as np
import pytest

from hgbt._binning import map_to_bins
from hgbt._types import X_BINNED_DTYPE
from hgbt.binning import BinMapper, find_thresholds


def reference_codes(X, thresholds, missing_bin):
    """Bin codes computed with np.searchsorted, feature by feature."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty(X.shape, dtype=np.int64)
    for f, t in enumerate(thresholds):
        col = X[:, f]
        codes = np.searchsorted(np.asarray(t, dtype=np.float64), col, side="left")
        codes[np.isnan(col)] = missing_bin
        out[:, f] = codes
    return out


def check_threshold_invariants(mapper):
    assert len(mapper.bin_thresholds_) == mapper.n_bins_non_missing_.size
    for t, nb in zip(mapper.bin_thresholds_, mapper.n_bins_non_missing_):
        assert t.dtype == np.float64
        assert not np.isnan(t).any()
        assert np.all(np.diff(t) > 0), "thresholds must be strictly increasing"
        assert t.size <= mapper.max_bins - 1
        assert nb == t.size + 1
        assert 1 <= nb <= mapper.max_bins


def test_constant_column_has_no_threshold_and_bin_zero():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.full(300, 3.25), rng.normal(size=300), np.full(300, -7.0)])
    X[::7, 2] = np.nan  # constant apart from missing values
    mapper = BinMapper(max_bins=32).fit(X)
    binned = mapper.transform(X)
    assert mapper.bin_thresholds_[0].size == 0
    assert mapper.bin_thresholds_[2].size == 0
    assert mapper.n_bins_non_missing_[0] == 1
    assert mapper.n_bins_non_missing_[2] == 1
    assert np.all(binned[:, 0] == 0)
    nan = np.isnan(X[:, 2])
    assert np.all(binned[~nan, 2] == 0)
    assert np.all(binned[nan, 2] == 32)


@pytest.mark.parametrize("max_bins", [2, 17, 255])
def test_all_nan_column_goes_to_missing_bin(max_bins):
    rng = np.random.default_rng(1)
    X = np.column_stack([np.full(200, np.nan), rng.normal(size=200)])
    mapper = BinMapper(max_bins=max_bins).fit(X)
    binned = mapper.transform(X)
    assert mapper.missing_bin == max_bins
    assert mapper.bin_thresholds_[0].size == 0
    assert mapper.n_bins_non_missing_[0] == 1
    assert np.all(binned[:, 0] == max_bins)
    assert binned.dtype == X_BINNED_DTYPE


@pytest.mark.parametrize("max_bins", [2, 3, 10, 64, 255])
@pytest.mark.parametrize("n_distinct_offset", [0, 1, 5])
def test_few_distinct_values_map_one_to_one(max_bins, n_distinct_offset):
    rng = np.random.default_rng(max_bins * 7 + n_distinct_offset)
    n_distinct = max(1, max_bins - n_distinct_offset)
    values = np.sort(rng.choice(10_000, n_distinct, replace=False)) * 0.37 - 1000.0
    # every value at least once, in shuffled order, plus repeats and NaN
    idx = np.concatenate([np.arange(n_distinct), rng.integers(0, n_distinct, 500)])
    rng.shuffle(idx)
    col = values[idx]
    col[rng.random(col.size) < 0.05] = np.nan
    col[:n_distinct] = values  # make sure every distinct value survives
    X = col[:, None]
    mapper = BinMapper(max_bins=max_bins).fit(X)
    check_threshold_invariants(mapper)
    binned = mapper.transform(X)[:, 0]
    nan = np.isnan(col)
    # rank of each value among the distinct values: the expected code
    expected = np.searchsorted(values, col[~nan])
    np.testing.assert_array_equal(binned[~nan], expected)
    assert np.all(binned[nan] == max_bins)
    assert mapper.n_bins_non_missing_[0] == n_distinct
    # each threshold separates exactly two consecutive distinct values
    t = mapper.bin_thresholds_[0]
    assert np.all(values[:-1] <= t) and np.all(t < values[1:])


def test_one_to_one_with_adjacent_floats_and_huge_values():
    a = 1.0
    values = np.array([-np.finfo(np.float64).max, -1e300, a, np.nextafter(a, 2.0),
                       np.nextafter(np.nextafter(a, 2.0), 2.0), 1e300,
                       np.finfo(np.float64).max])
    col = np.concatenate([values, values[::-1], [np.nan]])
    mapper = BinMapper(max_bins=255).fit(col[:, None])
    check_threshold_invariants(mapper)
    t = mapper.bin_thresholds_[0]
    assert np.all(np.isfinite(t))
    binned = mapper.transform(col[:, None])[:, 0]
    np.testing.assert_array_equal(binned[:-1], np.searchsorted(values, col[:-1]))
    assert binned[-1] == 255


@pytest.mark.parametrize("max_bins", [4, 255])
@pytest.mark.parametrize("n_distinct", [5, 2000])
def test_infinities_are_extreme_values_nan_is_missing(max_bins, n_distinct):
    rng = np.random.default_rng(n_distinct)
    base = rng.choice(np.linspace(-5, 5, n_distinct), 3000)
    col = base.copy()
    pos = rng.permutation(col.size)
    col[pos[:100]] = -np.inf
    col[pos[100:200]] = np.inf
    col[pos[200:300]] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mapper = BinMapper(max_bins=max_bins).fit(col[:, None])
    check_threshold_invariants(mapper)
    binned = mapper.transform(col[:, None])[:, 0]
    last = mapper.n_bins_non_missing_[0] - 1
    assert np.all(binned[np.isneginf(col)] == 0)
    assert np.all(binned[np.isposinf(col)] == last)
    assert np.all(binned[np.isnan(col)] == max_bins)
    assert np.all(binned[~np.isnan(col)] < max_bins)
    assert np.all(binned[~np.isnan(col)] <= last)
    assert last > 0


def test_infinities_one_to_one_get_own_bins():
    col = np.array([-np.inf, -1.0, 0.0, 2.0, np.inf, np.nan, np.inf, -np.inf])
    mapper = BinMapper(max_bins=10).fit(col[:, None])
    binned = mapper.transform(col[:, None])[:, 0]
    np.testing.assert_array_equal(binned, [0, 1, 2, 3, 4, 10, 4, 0])


def test_heavy_infinite_mass_binned_like_heavy_extreme_finite_mass():
    """Quantile case: ±inf must behave as ordinary extreme values.

    Bin codes only depend on the order of the values, so replacing -inf/+inf
    by -1e300/+1e300 (a strictly increasing change, all finite values being
    much smaller) must not change any code. With ±inf, np.percentile produces
    NaN quantiles (inf - inf), which find_thresholds silently drops, so the
    -inf mass gets merged with the lowest finite values in bin 0.
    """
    rng = np.random.default_rng(0)
    col = rng.normal(size=20_000)
    col[:3000] = -np.inf
    col[3000:5000] = np.inf
    col[5000:6000] = np.nan
    finite_stand_in = np.where(np.isneginf(col), -1e300,
                               np.where(np.isposinf(col), 1e300, col))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        codes_inf = BinMapper(max_bins=16).fit(col[:, None]).transform(col[:, None])
    codes_fin = BinMapper(max_bins=16).fit(finite_stand_in[:, None]).transform(
        finite_stand_in[:, None])
    np.testing.assert_array_equal(codes_inf, codes_fin)
    # -inf alone in bin 0 and +inf alone in the last value bin
    codes = codes_inf[:, 0]
    assert np.all(codes[:3000] == 0) and np.sum(codes == 0) == 3000
    last = codes[~np.isnan(col)].max()
    assert np.all(codes[3000:5000] == last) and np.sum(codes == last) == 2000
    assert np.all(codes[5000:6000] == 16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("max_bins", [3, 32, 255])
def test_codes_match_searchsorted_reference(dtype, order, max_bins):
    rng = np.random.default_rng(max_bins)
    n = 5000
    X = np.column_stack([
        rng.normal(size=n),
        rng.integers(0, 20, n).astype(float),      # few distinct values
        rng.exponential(size=n) * 1e6,
        rng.standard_cauchy(size=n),
        np.round(rng.normal(size=n), 1),
    ])
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.01] = np.inf
    X[rng.random(X.shape) < 0.01] = -np.inf
    X = np.asarray(X.astype(dtype), order=order)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mapper = BinMapper(max_bins=max_bins, subsample=None).fit(X)
    check_threshold_invariants(mapper)
    binned = mapper.transform(X)
    assert binned.dtype == np.uint8 and binned.flags.f_contiguous
    expected = reference_codes(X, mapper.bin_thresholds_, max_bins)
    np.testing.assert_array_equal(binned, expected)
    # also values that are not in the fitted data, and exact thresholds
    t0 = mapper.bin_thresholds_[0]
    X_new = np.column_stack([np.concatenate([t0, np.nextafter(t0, np.inf),
                                             [-1e9, 1e9, np.nan]])] * X.shape[1])
    with np.errstate(over="ignore"):  # -inf threshold: nextafter overflows float32
        X_new = np.asarray(X_new.astype(dtype), order=order)
    np.testing.assert_array_equal(
        mapper.transform(X_new), reference_codes(X_new, mapper.bin_thresholds_, max_bins))


def test_non_contiguous_input_matches_reference():
    rng = np.random.default_rng(3)
    big = rng.normal(size=(3000, 8))
    big[rng.random(big.shape) < 0.05] = np.nan
    X = big[::2, ::3]
    assert not X.flags.c_contiguous and not X.flags.f_contiguous
    mapper = BinMapper(max_bins=40).fit(X)
    np.testing.assert_array_equal(mapper.transform(X),
                                  reference_codes(X, mapper.bin_thresholds_, 40))
    np.testing.assert_array_equal(mapper.transform(X), mapper.transform(X.copy()))


def test_map_to_bins_kernel_direct():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(777, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    thresholds = [np.sort(rng.normal(size=k)) for k in (0, 1, 9)]
    padded = np.zeros((3, 9))
    n_thr = np.zeros(3, dtype=np.int32)
    for f, t in enumerate(thresholds):
        padded[f, :t.size] = t
        n_thr[f] = t.size
    out = np.empty(X.shape, dtype=np.uint8, order="F")
    map_to_bins(X, padded, n_thr, 10, out, 1)
    np.testing.assert_array_equal(out, reference_codes(X, thresholds, 10))


def test_map_to_bins_every_threshold_count():
    # one feature per number of thresholds 0..254; values on, just below and
    # just above every threshold, plus extremes and NaN
    rng = np.random.default_rng(44)
    n_features, width = 255, 254
    padded = np.zeros((n_features, width))
    n_thr = np.arange(n_features, dtype=np.int32)
    thresholds = []
    n_rows = 3 * width + 5
    X = np.empty((n_rows, n_features))
    for f in range(n_features):
        t = np.sort(rng.choice(np.arange(-1000, 1000), f, replace=False) * 0.5)
        thresholds.append(t)
        padded[f, :f] = t
        vals = np.concatenate([t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf),
                               [-np.inf, np.inf, np.nan, -1e6, 1e6]])
        extra = rng.uniform(-600, 600, n_rows - vals.size)
        X[:, f] = rng.permutation(np.concatenate([vals, extra]))
    for n_threads in (1, 2):
        out = np.empty(X.shape, dtype=np.uint8, order="F")
        map_to_bins(X, padded, n_thr, 255, out, n_threads)
        np.testing.assert_array_equal(out, reference_codes(X, thresholds, 255))


def test_subsample_is_seeded():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5000, 3))
    fit = lambda rs: BinMapper(max_bins=64, subsample=1000, random_state=rs).fit(X)
    a, b, c = fit(0), fit(0), fit(1)
    for ta, tb in zip(a.bin_thresholds_, b.bin_thresholds_):
        np.testing.assert_array_equal(ta, tb)
    assert any(ta.shape != tc.shape or not np.array_equal(ta, tc)
               for ta, tc in zip(a.bin_thresholds_, c.bin_thresholds_))
    # thresholds come from exactly subsample distinct rows of X
    rows = a.sample_rows(X.shape[0])
    assert rows.size == 1000 and np.unique(rows).size == 1000
    assert rows.min() >= 0 and rows.max() < 5000
    np.testing.assert_array_equal(rows, np.sort(rows))
    for f, t in enumerate(a.bin_thresholds_):
        np.testing.assert_array_equal(t, find_thresholds(X[rows, f], 64))
    # full-data thresholds differ from the subsample ones
    full = BinMapper(max_bins=64, subsample=None).fit(X)
    assert not np.array_equal(full.bin_thresholds_[0], a.bin_thresholds_[0])


def test_no_subsampling_when_enough_rows():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(800, 2))
    a = BinMapper(max_bins=32, subsample=1000, random_state=0).fit(X)
    b = BinMapper(max_bins=32, subsample=1000, random_state=123).fit(X)
    assert a.sample_rows(800) is None
    for f in range(2):
        np.testing.assert_array_equal(a.bin_thresholds_[f], b.bin_thresholds_[f])
        np.testing.assert_array_equal(a.bin_thresholds_[f], find_thresholds(X[:, f], 32))


@pytest.mark.parametrize("max_bins", [2, 5, 16, 100, 255])
def test_quantile_bins_have_roughly_equal_counts(max_bins):
    rng = np.random.default_rng(max_bins)
    n = 20_000
    X = np.column_stack([rng.normal(size=n), rng.uniform(size=n), rng.lognormal(size=n)])
    mapper = BinMapper(max_bins=max_bins, subsample=None).fit(X)
    check_threshold_invariants(mapper)
    binned = mapper.transform(X)
    expected = n / max_bins
    for f in range(X.shape[1]):
        assert mapper.n_bins_non_missing_[f] == max_bins  # continuous: all bins used
        counts = np.bincount(binned[:, f], minlength=max_bins)
        assert counts.size == max_bins
        assert np.all(np.abs(counts - expected) <= 0.01 * expected + 2), counts


def test_quantile_with_heavy_duplicates_stays_strict():
    rng = np.random.default_rng(8)
    col = np.concatenate([np.zeros(5000), rng.normal(size=3000), np.full(2000, 7.0)])
    X = col[:, None]
    mapper = BinMapper(max_bins=20, subsample=None).fit(X)
    check_threshold_invariants(mapper)
    binned = mapper.transform(X)[:, 0]
    np.testing.assert_array_equal(binned, reference_codes(X, mapper.bin_thresholds_, 20)[:, 0])
    # every value bin below n_bins_non_missing is non-empty
    counts = np.bincount(binned, minlength=mapper.n_bins_non_missing_[0])
    assert np.all(counts[:mapper.n_bins_non_missing_[0]] > 0)
    # all zeros share one bin, all 7.0 share one bin
    assert np.unique(binned[:5000]).size == 1 and np.unique(binned[-2000:]).size == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_n_threads_give_identical_results(dtype):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(10_000, 5)).astype(dtype)  # > one 4096-row block
    X[rng.random(X.shape) < 0.1] = np.nan
    m1 = BinMapper(max_bins=255, n_threads=1, subsample=None).fit(X)
    m2 = BinMapper(max_bins=255, n_threads=2, subsample=None).fit(X)
    for t1, t2 in zip(m1.bin_thresholds_, m2.bin_thresholds_):
        np.testing.assert_array_equal(t1, t2)
    b1, b2 = m1.transform(X), m2.transform(X)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(b1, reference_codes(X, m1.bin_thresholds_, 255))


def test_invalid_max_bins_and_feature_mismatch():
    X = np.zeros((10, 2))
    for bad in (1, 256):
        with pytest.raises(ValueError):
            BinMapper(max_bins=bad).fit(X)
    mapper = BinMapper(max_bins=8).fit(X)
    with pytest.raises(ValueError):
        mapper.transform(np.zeros((10, 3)))
