"""BinMapper, find_thresholds and the map_to_bins kernel against NumPy references."""
import warnings

import numpy as np
import pytest

from hgbt.data._binning import map_to_bins
from hgbt.core._types import X_BINNED_DTYPE
from hgbt.data.binning import BinMapper
from hgbt.data.thresholds import find_thresholds


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
    """More distinct values than bins: ±inf must behave as ordinary extreme values.

    Bin codes only depend on the order of the values and their counts, so
    replacing -inf/+inf by -1e300/+1e300 (a strictly increasing change, all
    finite values being much smaller) must not change any code (an
    interpolating rule, np.percentile, makes NaN of inf - inf and merged the
    -inf mass with the lowest finite values in bin 0).
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


@pytest.mark.parametrize("max_bins", [16, 255])
def test_float32_input_gets_the_thresholds_of_its_float64_values(max_bins):
    # float32 columns are sorted as float32: the same sorted values widened
    rng = np.random.default_rng(max_bins)
    X = np.column_stack([rng.normal(size=4000), rng.integers(0, 9, 4000),
                         rng.exponential(size=4000) * 1e30]).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:3, 0] = [np.inf, -np.inf, -0.0]
    t32 = BinMapper(max_bins=max_bins, subsample=None).fit(X).bin_thresholds_
    t64 = BinMapper(max_bins=max_bins, subsample=None).fit(
        X.astype(np.float64)).bin_thresholds_
    for a, b in zip(t32, t64):
        assert a.dtype == np.float64 and a.tobytes() == b.tobytes()


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
    reversed_rows = X[::-1]  # negative row stride
    np.testing.assert_array_equal(mapper.transform(reversed_rows),
                                  reference_codes(reversed_rows, mapper.bin_thresholds_, 40))


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


@pytest.mark.parametrize("max_bins", [16, 64, 255])
def test_ties_leave_their_bins_to_the_tail(max_bins):
    """A point mass (60 % zeros, as a delay that is mostly on time) and a
    long tail: the zeros get one bin and the tail every other bin, in equal
    counts; quantiles gave the zeros about 60 % of the bins, all collapsing
    into one, and the tail the rest."""
    rng = np.random.default_rng(max_bins)
    n = 20_000
    col = np.where(rng.random(n) < 0.6, 0.0, rng.lognormal(3, 1.5, n))
    t = find_thresholds(col, max_bins)
    assert t.size == max_bins - 1
    codes = np.searchsorted(t, col)
    assert np.unique(codes[col == 0]).size == 1 and np.sum(codes == codes[col == 0][0]) == np.sum(col == 0)
    tail = np.bincount(codes[col > 0])[1:]
    expected = np.sum(col > 0) / (max_bins - 1)
    assert np.all(np.abs(tail - expected) <= 0.01 * expected + np.log(max_bins) + 1), tail
    np.testing.assert_array_equal(t, reference_thresholds(col, max_bins))


def test_repeated_values_use_nearly_every_bin():
    """A diamonds-like column (270 distinct values, counts from 1 to
    thousands): few bins are lost to ties (238 of 255 made; quantiles made
    108 of diamonds' carat, 273 distinct values)."""
    rng = np.random.default_rng(0)
    support = np.round(np.sort(rng.lognormal(0, 0.5, 300)), 3)
    col = rng.choice(np.unique(support), 50_000, p=None)
    col = np.concatenate([col, np.repeat(support[:20], 2000)])
    assert np.unique(col).size > 255
    t = find_thresholds(col, 255)
    assert t.size >= 230, t.size
    np.testing.assert_array_equal(t, reference_thresholds(col, 255))


@pytest.mark.parametrize("max_bins", [2, 5, 16, 100, 255])
def test_bins_of_continuous_data_have_roughly_equal_counts(max_bins):
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


def test_heavy_duplicates_stay_strict():
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


# --- sample weights -------------------------------------------------------

def _separator(a, b):
    """Separating threshold of a < b, scalar Python floats (the rule itself is
    checked against its definition by test_separators_survive_float32)."""
    from hgbt.data.thresholds import _separators
    return float(_separators(np.array([a]), np.array([b]))[0])


def reference_thresholds(col, max_bins, w=None):
    """The binning rule in plain Python loops (float64 arithmetic, as the kernel).

    Rows with NaN or zero weight dropped (none left: every non-NaN row with
    weight 1, the unweighted fallback); no weights: each row weighs 1. The
    distinct values, each with the weight of its rows summed in row order.
    At most max_bins of them: the separators between them. More: one scan
    over them that cuts after value i (at the separator of i and i + 1) when
    value i or i + 1 holds at least W / max_bins, or when the weight since
    the last cut times the bins left reaches the weight left; it stops when
    one bin is left.
    """
    col = [float(v) for v in col]
    w = [1.0] * len(col) if w is None else [float(x) for x in w]
    rows = [(v, x) for v, x in zip(col, w) if v == v and x > 0]
    if not rows:
        rows = [(v, 1.0) for v in col if v == v]
    mass = {}
    for v, x in rows:  # in row order
        mass[v] = mass[v] + x if v in mass else x
    distinct = sorted(mass)
    mass = [mass[v] for v in distinct]
    if len(distinct) <= 1:
        return np.empty(0)
    if len(distinct) <= max_bins:
        return np.array([_separator(a, b) for a, b in zip(distinct[:-1], distinct[1:])])
    total = 0.0
    for x in mass:
        total += x
    left, acc, bins_left, out = total, 0.0, max_bins, []
    for i in range(len(distinct) - 1):
        acc += mass[i]
        if (max_bins * mass[i] >= total or max_bins * mass[i + 1] >= total
                or acc * bins_left >= left):
            out.append(_separator(distinct[i], distinct[i + 1]))
            left -= acc
            acc = 0.0
            bins_left -= 1
            if bins_left <= 1:
                break
    return np.array(out)


def _n_distinct_weighted(col, w):
    return np.unique(col[~np.isnan(col) & (w > 0)]).size


def _weighted_column(rng, path, max_bins, n=3000):
    """Column with duplicates, ±inf and NaN; integer weights 0..4 whose total
    is a multiple of max_bins (so that targets fall exactly on rows)."""
    if path == "greedy":
        col = np.round(rng.normal(size=n), 2)
    else:
        support = np.sort(rng.choice(1000, max_bins - 2, replace=False)) * 0.3 - 100
        col = rng.choice(support, n)
    col[rng.random(n) < 0.05] = -np.inf
    col[rng.random(n) < 0.05] = np.inf
    col[rng.random(n) < 0.05] = np.nan
    w = rng.integers(0, 5, n)
    i = np.flatnonzero(~np.isnan(col) & (w > 0))[0]
    w[i] += -w[~np.isnan(col)].sum() % max_bins
    return col, w


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("max_bins", [3, 16, 255])
@pytest.mark.parametrize("path", ["midpoint", "greedy"])
def test_integer_weights_equal_repeated_rows(seed, max_bins, path):
    rng = np.random.default_rng(seed * 1000 + max_bins)
    col, w = _weighted_column(rng, path, max_bins)
    n_distinct = _n_distinct_weighted(col, w)
    assert (n_distinct > max_bins) == (path == "greedy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = find_thresholds(col, max_bins, w)
        repeated = find_thresholds(np.repeat(col, w), max_bins)
    np.testing.assert_array_equal(got, repeated)
    np.testing.assert_array_equal(got, reference_thresholds(col, max_bins, w))
    assert got.size <= max_bins - 1 and np.all(np.diff(got) > 0)
    if path == "greedy":
        # -inf gets its own bin when it weighs at least W / max_bins; no
        # threshold is +inf (the separator below +inf is finite)
        total = w[~np.isnan(col)].sum()
        if w[np.isneginf(col)].sum() >= total / max_bins:
            assert np.isneginf(got[0])
        assert np.isfinite(got[-1])


@pytest.mark.parametrize("case", range(2))
def test_weighted_cuts_by_hand(case):
    """max_bins = 4, worked by hand. Case 0: W = 8, -inf and +inf weigh 2 =
    W / 4 each, so both are alone: cut after -inf (its separator with 1 is
    -inf), then after 2 (weight 2 since the cut, 6 left over 3 bins), then
    before +inf (4.0, the least threshold between 4 and +inf); one bin left.
    Case 1: 2.0 weighs 3 over two rows (2 and 1): cuts before and after it
    (1.5, 2.5); then 3 and 5 weigh 2 of the 3 left over 2 bins: 5.0 (the
    value 7 has weight 0 and is no distinct value)."""
    if case == 0:
        col = [-np.inf, 1.0, 2.0, 3.0, 4.0, np.inf, np.nan]
        w = [2, 1, 1, 1, 1, 2, 5]
        expected = [-np.inf, 2.5, 4.0]
    else:
        col = [2.0, -np.inf, 5.0, 2.0, 1.0, np.inf, 3.0, 7.0]
        w = [2, 1, 1, 1, 1, 1, 1, 0]
        expected = [1.5, 2.5, 5.0]
    col, w = np.array(col), np.array(w)
    perm = np.random.default_rng(case).permutation(col.size)
    for c, ww in ((col, w), (col[perm], w[perm]), (col[::-1], w[::-1])):
        np.testing.assert_array_equal(find_thresholds(c, 4, ww), expected)
        np.testing.assert_array_equal(find_thresholds(np.repeat(c, ww), 4), expected)
        np.testing.assert_array_equal(reference_thresholds(c, 4, ww), expected)
        # non-unit weights, same cumulative shape: scaled by 3
        np.testing.assert_array_equal(find_thresholds(c, 4, 3.0 * ww), expected)


@pytest.mark.parametrize("seed", range(3))
def test_integer_weights_equal_repeated_rows_bin_mapper(seed):
    """Through BinMapper.fit: several features, threads, float32, bin codes."""
    rng = np.random.default_rng(seed)
    n = 4000
    X = np.column_stack([
        np.round(rng.normal(size=n), 2),
        rng.integers(0, 30, n).astype(float),
        rng.exponential(size=n),
        np.round(rng.standard_cauchy(size=n), 1),
    ])
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.02] = np.inf
    X[rng.random(X.shape) < 0.02] = -np.inf
    X = X.astype(np.float32)
    w = rng.integers(0, 4, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mw = BinMapper(max_bins=32, subsample=None, n_threads=2).fit(X, sample_weight=w)
        mr = BinMapper(max_bins=32, subsample=None).fit(np.repeat(X, w, axis=0))
    check_threshold_invariants(mw)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(mw.bin_thresholds_[f], mr.bin_thresholds_[f])
        np.testing.assert_array_equal(
            mw.bin_thresholds_[f],
            reference_thresholds(X[:, f].astype(np.float64), 32, w))
    np.testing.assert_array_equal(mw.n_bins_non_missing_, mr.n_bins_non_missing_)
    np.testing.assert_array_equal(np.repeat(mw.transform(X), w, axis=0),
                                  mr.transform(np.repeat(X, w, axis=0)))


@pytest.mark.parametrize("seed", range(4))
def test_near_unit_and_scaled_weights(seed):
    """Weighted path (non-constant weights): one row of weight 2 among ones
    equals that row repeated; scaling weights by a power of two (exact in
    floating point) changes nothing; non-integer weights match the exact
    rational reference."""
    rng = np.random.default_rng(seed)
    col = np.round(rng.normal(size=2000), 2)
    col[rng.random(col.size) < 0.05] = np.nan
    w = np.ones(col.size)
    w[seed] = 2.0
    B = 50
    got = find_thresholds(col, B, w)
    np.testing.assert_array_equal(got, find_thresholds(np.repeat(col, w.astype(int)), B))
    wi = rng.integers(1, 9, col.size)
    for scale in (0.25, 8.0, 2.0 ** -20):
        np.testing.assert_array_equal(find_thresholds(col, B, wi * scale),
                                      find_thresholds(col, B, wi))
    wf = rng.uniform(0.1, 3.0, col.size)
    np.testing.assert_array_equal(find_thresholds(col, B, wf),
                                  reference_thresholds(col, B, wf))


@pytest.mark.parametrize("max_bins", [2, 16, 255])
def test_unit_weights_bit_identical_to_unweighted(max_bins):
    rng = np.random.default_rng(max_bins)
    n = 6000
    X = np.column_stack([
        rng.normal(size=n),
        np.round(rng.normal(size=n), 1),          # contains both -0.0 and +0.0
        rng.integers(0, 10, n).astype(float),
        rng.standard_cauchy(size=n),
        np.full(n, np.nan),
    ])
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.02] = np.inf
    X[rng.random(X.shape) < 0.02] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for subsample in (None, 2500):
            a = BinMapper(max_bins=max_bins, subsample=subsample, random_state=0).fit(X)
            b = BinMapper(max_bins=max_bins, subsample=subsample, random_state=0).fit(
                X, sample_weight=np.ones(n))
            c = BinMapper(max_bins=max_bins, subsample=subsample, random_state=0).fit(
                X, sample_weight=np.full(n, 0.1))
            for ta, tb, tc in zip(a.bin_thresholds_, b.bin_thresholds_, c.bin_thresholds_):
                assert ta.tobytes() == tb.tobytes()
                assert ta.tobytes() == tc.tobytes()
            np.testing.assert_array_equal(a.n_bins_non_missing_, b.n_bins_non_missing_)
    for f in range(X.shape[1]):
        assert (find_thresholds(X[:, f], max_bins, np.ones(n)).tobytes()
                == find_thresholds(X[:, f], max_bins).tobytes())


@pytest.mark.parametrize("max_bins", [4, 64, 255])
@pytest.mark.parametrize("path", ["midpoint", "greedy"])
def test_zero_weight_rows_are_ignored(max_bins, path):
    rng = np.random.default_rng(max_bins + (path == "greedy"))
    col, w = _weighted_column(rng, path, max_bins)
    zero = rng.random(col.size) < 0.3
    w[zero] = 0
    # zero-weight rows carry values that would otherwise add distinct values
    # (enough to leave the midpoint path) and extremes
    col[np.flatnonzero(zero)[:400]] = rng.uniform(1e6, 2e6, 400)
    col[np.flatnonzero(zero)[400]] = -1e9
    keep = w > 0
    assert (_n_distinct_weighted(col, w) > max_bins) == (path == "greedy")
    assert np.unique(col[~np.isnan(col)]).size > max_bins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = find_thresholds(col, max_bins, w)
        np.testing.assert_array_equal(got, find_thresholds(col[keep], max_bins, w[keep]))
        np.testing.assert_array_equal(got, find_thresholds(np.repeat(col, w), max_bins))
        # zero weights with otherwise unit weights: bit-identical to removing rows
        unit = keep.astype(float)
        assert (find_thresholds(col, max_bins, unit).tobytes()
                == find_thresholds(col[keep], max_bins).tobytes())
    # the zero-weight extremes created no threshold: none lies at or above
    # the next value above the largest kept one, or below the smallest
    finite = np.isfinite(col) & keep
    above = col[np.isfinite(col) & (col > col[finite].max())]
    if above.size:
        assert np.all(got < above.min())
    assert np.all(np.isneginf(got) | (got >= col[finite].min()))


def test_only_zero_weight_values_fall_back_to_unweighted():
    rng = np.random.default_rng(10)
    n = 1000
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n),
                         rng.integers(0, 5, n).astype(float), np.full(n, np.nan)])
    w = np.ones(n)
    w[:500] = 0.0
    X[500:, 1] = np.nan       # feature 1: non-NaN values only on zero-weight rows
    X[500:, 2] = np.nan       # feature 2: idem, few distinct values
    mapper = BinMapper(max_bins=16, subsample=None).fit(X, sample_weight=w)
    check_threshold_invariants(mapper)
    np.testing.assert_array_equal(mapper.bin_thresholds_[0],
                                  find_thresholds(X[500:, 0], 16))
    np.testing.assert_array_equal(mapper.bin_thresholds_[1], find_thresholds(X[:, 1], 16))
    np.testing.assert_array_equal(mapper.bin_thresholds_[2], [0.5, 1.5, 2.5, 3.5])
    assert mapper.bin_thresholds_[3].size == 0
    for f in (1, 2):
        np.testing.assert_array_equal(
            mapper.bin_thresholds_[f], reference_thresholds(X[:, f], 16, w))
    # every weight zero: all features unweighted
    z = BinMapper(max_bins=16, subsample=None).fit(X, sample_weight=np.zeros(n))
    u = BinMapper(max_bins=16, subsample=None).fit(X)
    for tz, tu in zip(z.bin_thresholds_, u.bin_thresholds_):
        assert tz.tobytes() == tu.tobytes()


def test_heavily_weighted_value_gets_its_own_bin():
    # 0 .. 999 with unit weight, value 500 with weight 1501: W = 2500 and
    # 10 bins. Cuts at 250 rows (249.5, 499.5), around 500 (500.5), then the
    # 499 rows left share the 7 bins left, 71 or 72 rows each (where
    # quantiles would have put 6 of the 10 bins inside the value 500).
    col = np.arange(1000, dtype=float)
    w = np.ones(1000)
    w[500] = 1501
    t = find_thresholds(col, 10, w)
    np.testing.assert_array_equal(
        t, [249.5, 499.5, 500.5, 572.5, 644.5, 715.5, 786.5, 857.5, 928.5])
    np.testing.assert_array_equal(t, find_thresholds(np.repeat(col, w.astype(int)), 10))
    codes = BinMapper(max_bins=10, subsample=None).fit(
        col[:, None], sample_weight=w).transform(col[:, None])[:, 0]
    assert np.sum(codes == codes[500]) == 1
    # unweighted, 500 shares its bin with about 100 neighbours
    codes_u = BinMapper(max_bins=10, subsample=None).fit(col[:, None]).transform(
        col[:, None])[:, 0]
    assert np.sum(codes_u == codes_u[500]) == 100


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("max_bins", [8, 64, 255])
def test_heavy_point_mass_is_isolated_from_larger_values(seed, max_bins):
    """Continuous data plus a point mass of 30 % of the weight: a threshold
    separates it from the next larger value, so no larger value shares its
    bin, and the smaller
    values sharing it weigh less than W / max_bins; the extreme point masses
    (minimum, maximum) are alone in their bins."""
    rng = np.random.default_rng(seed)
    n = 5000
    col = rng.normal(size=n)
    w = rng.uniform(0.5, 1.5, n)
    value = col[rng.integers(n)]
    heavy = col == value
    w[heavy] = 0.3 / 0.7 * w[~heavy].sum()
    t = find_thresholds(col, max_bins, w)
    following = np.min(col[col > value], initial=np.inf)
    assert np.any((t >= value) & (t < following))
    codes = np.searchsorted(t, col)
    in_bin = codes == codes[heavy][0]
    assert np.all(col[in_bin] <= value)
    assert w[in_bin & ~heavy].sum() < w.sum() / max_bins
    for extreme in (col.argmin(), col.argmax()):
        we = w.copy()
        we[extreme] = 0.3 / 0.7 * w.sum()
        codes = np.searchsorted(find_thresholds(col, max_bins, we), col)
        assert np.sum(codes == codes[extreme]) == 1
        codes_u = np.searchsorted(find_thresholds(col, max_bins), col)
        assert np.sum(codes_u == codes_u[extreme]) > 1


@pytest.mark.parametrize("max_bins", [2, 5, 16, 100, 255])
@pytest.mark.parametrize("weights", ["uniform", "increasing"])
def test_weighted_bins_of_continuous_data_have_roughly_equal_weight(max_bins, weights):
    rng = np.random.default_rng(max_bins)
    n = 20_000
    X = np.column_stack([rng.normal(size=n), rng.uniform(size=n), rng.lognormal(size=n)])
    if weights == "uniform":
        w = rng.uniform(0.5, 2.0, n)
    else:  # strongly tied to feature 1: weighted bins differ from count bins
        w = 0.2 + 2 * X[:, 1]
    mapper = BinMapper(max_bins=max_bins, subsample=None).fit(X, sample_weight=w)
    check_threshold_invariants(mapper)
    binned = mapper.transform(X)
    # Each bin but the last holds at least its target, the weight left over
    # the bins left, and less than that plus one row's weight; the targets
    # so drift below W / max_bins by at most w_max (1 + ln max_bins).
    w_max = w.max()
    for f in range(X.shape[1]):
        assert mapper.n_bins_non_missing_[f] == max_bins  # continuous: all bins used
        bin_weight = np.bincount(binned[:, f], weights=w, minlength=max_bins)
        assert bin_weight.size == max_bins
        left = w.sum()
        for k, b in enumerate(bin_weight[:-1]):
            target = left / (max_bins - k)
            assert target * (1 - 1e-12) <= b < target + w_max, (k, b, target)
            left -= b
        assert np.all(np.abs(bin_weight - w.sum() / max_bins)
                      <= w_max * (1 + np.log(max_bins))), bin_weight
    if weights == "increasing" and max_bins > 2:
        counts = np.bincount(binned[:, 1], minlength=max_bins)
        assert counts[0] > 2 * counts[-1]  # light rows: wider first bins


def test_weighted_fit_uses_the_uniform_seeded_subsample():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(5000, 3))
    w = rng.exponential(size=5000)
    mapper = BinMapper(max_bins=64, subsample=1000, random_state=0)
    mapper.fit(X, sample_weight=w)
    rows = mapper.sample_rows(5000)
    np.testing.assert_array_equal(rows, BinMapper(subsample=1000, random_state=0)
                                  .sample_rows(5000))
    for f in range(3):
        np.testing.assert_array_equal(mapper.bin_thresholds_[f],
                                      find_thresholds(X[rows, f], 64, w[rows]))
        np.testing.assert_array_equal(mapper.bin_thresholds_[f],
                                      reference_thresholds(X[rows, f], 64, w[rows]))
    # fit_sample on the gathered rows and their weights gives the same result
    other = BinMapper(max_bins=64).fit_sample(X[rows], w[rows])
    for ta, tb in zip(mapper.bin_thresholds_, other.bin_thresholds_):
        np.testing.assert_array_equal(ta, tb)
    unweighted = BinMapper(max_bins=64, subsample=1000, random_state=0).fit(X)
    assert not np.array_equal(unweighted.bin_thresholds_[0], mapper.bin_thresholds_[0])


def test_invalid_sample_weight():
    X = np.random.default_rng(12).normal(size=(20, 2))
    for bad in (-np.ones(20), np.full(20, np.nan), np.full(20, np.inf), np.ones(19),
                np.ones((20, 1))):
        with pytest.raises(ValueError):
            BinMapper(max_bins=8).fit(X, sample_weight=bad)
        with pytest.raises(ValueError):
            BinMapper(max_bins=8).fit_sample(X, bad)
        with pytest.raises(ValueError):
            find_thresholds(X[:, 0], 8, bad)


# ---------------------------------------------------------------------------
# categorical features (more in test_categorical.py)

def test_categorical_features_leave_numeric_binning_unchanged():
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(3000, 4)), 2)
    X[:, 1] = rng.integers(0, 90, 3000)
    X[rng.random(X.shape) < 0.1] = np.nan
    w = rng.uniform(0.1, 3.0, 3000)
    plain = BinMapper(max_bins=32, subsample=1000, random_state=0).fit(X, sample_weight=w)
    mixed = BinMapper(max_bins=32, subsample=1000, random_state=0,
                      is_categorical=[False, True, False, False]).fit(X, sample_weight=w)
    for f in (0, 2, 3):
        np.testing.assert_array_equal(mixed.bin_thresholds_[f], plain.bin_thresholds_[f])
        assert mixed.n_bins_non_missing_[f] == plain.n_bins_non_missing_[f]
    assert mixed.missing_bin == 90  # codes 0..89 are bins 0..89
    binned_plain, binned_mixed = plain.transform(X), mixed.transform(X)
    for f in (0, 2, 3):
        np.testing.assert_array_equal(
            np.where(binned_mixed[:, f] == 90, 32, binned_mixed[:, f]), binned_plain[:, f])
    col = X[:, 1]
    np.testing.assert_array_equal(binned_mixed[:, 1], np.where(np.isnan(col), 90, col))
    assert mixed.categories_[0] is None and mixed.is_categorical_.tolist() == [
        False, True, False, False]
    np.testing.assert_array_equal(mixed.known_cat_bitsets_[[0, 2, 3]], 0)
    with pytest.raises(ValueError, match="is_categorical"):
        BinMapper(is_categorical=[True]).fit(X)


# ------------------------------------------- thresholds of whole matrices (kernel)
def _naive_thresholds(column, max_bins):
    """The rule on one column as BinMapper sees it: float32 values as their
    float64 values (exact), NaN dropped, :func:`reference_thresholds`."""
    column = np.asarray(column)
    if column.dtype != np.float32:
        column = column.astype(np.float64)
    return reference_thresholds(column.astype(np.float64), max_bins)


def _awkward_columns(n, rng):
    """Columns with ties, few distinct values, NaN, ±inf, constants, huge and
    adjacent values, and a point mass at the top."""
    cols = [rng.normal(size=n), np.round(rng.normal(size=n) * 3) + 0.0,
            np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
            np.full(n, 5.0), np.full(n, np.nan),
            np.where(rng.random(n) < 0.2, np.inf, rng.normal(size=n)),
            np.where(rng.random(n) < 0.6, np.inf, rng.exponential(size=n)),
            np.where(rng.random(n) < 0.1, -np.inf, rng.integers(0, 300, n)),
            rng.integers(0, 255, n).astype(float), rng.integers(0, 256, n).astype(float),
            np.where(rng.random(n) < 0.5, 1.0, np.nextafter(1.0, 2.0)),
            rng.exponential(size=n) * 1e300, rng.integers(0, 2, n).astype(float)]
    return np.column_stack(cols)


def _same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 254, 256, 1000, 4099])
@pytest.mark.parametrize("max_bins", [2, 3, 17, 255])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_thresholds_equal_the_per_column_rule(n, max_bins, dtype):
    from hgbt.data.thresholds import dense_thresholds
    rng = np.random.default_rng(n * 1000 + max_bins)
    with np.errstate(over="ignore"):
        X = _awkward_columns(n, rng).astype(dtype)
    for n_threads in (1, 2):
        padded, counts = dense_thresholds(X, None, max_bins, n_threads)
        for f in range(X.shape[1]):
            assert _same_bits(padded[f, :counts[f]], _naive_thresholds(X[:, f], max_bins))


@pytest.mark.parametrize("seed", range(20))
def test_dense_thresholds_random_columns_bit_identical(seed):
    """Random mixes of value counts, ties and missing values (zero excluded:
    which of -0.0 and 0.0 a sort puts first is not fixed)."""
    from hgbt.data.thresholds import dense_thresholds
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    X = np.empty((n, 30))
    for f in range(30):
        pool = rng.normal(size=int(rng.integers(1, 600))) * 10.0 ** rng.integers(-3, 4)
        X[:, f] = rng.choice(pool, n)
        X[rng.random(n) < rng.random() * 0.5, f] = np.nan
    max_bins = int(rng.integers(2, 256))
    padded, counts = dense_thresholds(X, None, max_bins, 2)
    for f in range(30):
        assert _same_bits(padded[f, :counts[f]], _naive_thresholds(X[:, f], max_bins))


def test_dense_thresholds_signed_zero_only_differs_in_sign():
    from hgbt.data.thresholds import dense_thresholds
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(3000, 4)) * 2)  # holds both -0.0 and 0.0
    for max_bins in (3, 255):
        padded, counts = dense_thresholds(X, None, max_bins, 2)
        for f in range(4):
            np.testing.assert_array_equal(padded[f, :counts[f]],
                                          _naive_thresholds(X[:, f], max_bins))


@pytest.mark.parametrize("order", ["C", "F"])
def test_bin_mapper_subsample_rows_and_threads(order):
    """The rows drawn for thresholds are gathered block by block: the same
    thresholds as the per-column rule on X[rows], for any thread count."""
    rng = np.random.default_rng(3)
    X = np.asarray(_awkward_columns(3000, rng), order=order)
    mappers = [BinMapper(max_bins=63, subsample=1000, random_state=5, n_threads=t).fit(X)
               for t in (1, 2, 3)]
    rows = mappers[0].sample_rows(X.shape[0])
    for f in range(X.shape[1]):
        ref = _naive_thresholds(X[rows, f], 63)
        for m in mappers:
            assert _same_bits(m.bin_thresholds_[f], ref)


def test_constant_positive_weights_take_the_unweighted_kernel():
    rng = np.random.default_rng(4)
    X = _awkward_columns(2000, rng)
    plain = BinMapper(max_bins=40).fit(X)
    for w in (np.full(2000, 3.5), np.ones(2000)):
        weighted = BinMapper(max_bins=40).fit(X, sample_weight=w)
        for a, b in zip(plain.bin_thresholds_, weighted.bin_thresholds_):
            assert _same_bits(a, b)
    # zero weights drop rows: not the unweighted rule
    w = np.ones(2000)
    w[:1000] = 0
    dropped = BinMapper(max_bins=40).fit(X, sample_weight=w)
    for f in range(X.shape[1]):
        assert _same_bits(dropped.bin_thresholds_[f], _naive_thresholds(X[1000:, f], 40))


def test_sorted_column_thresholds_checks_shapes():
    from hgbt.data._binning import sorted_column_thresholds
    cols = np.zeros((5, 2), order="F")
    with pytest.raises(ValueError, match="one entry per column"):
        sorted_column_thresholds(cols, 10, np.zeros((2, 3)), np.zeros(2, np.int32), 1)
    with pytest.raises(ValueError, match="max_bins"):
        sorted_column_thresholds(cols, 1, np.zeros((2, 1)), np.zeros(2, np.int32), 1)


# ------------------------------------------------ thresholds that float32 keeps
def _float32_candidates(a, b):
    """Every float32 number t with a <= t < b and t < float32(b): a brute
    search near a, b and their midpoint (the valid set is an interval, so
    its ends and the numbers around the midpoint are among these)."""
    with np.errstate(over="ignore", invalid="ignore"):
        seeds = [np.float32(v) for v in (a, b, a * 0.5 + b * 0.5) if np.isfinite(v)]
        seeds += [np.float32(np.inf), np.float32(-np.inf)]
        found = set()
        for s in seeds:
            for direction in (np.float32(np.inf), np.float32(-np.inf)):
                t = s
                for _ in range(3):
                    if a <= float(t) < b and t < np.float32(b):
                        found.add(float(t))
                    t = np.nextafter(t, direction)
    return sorted(found)


_PAIR_VALUES = [0.0, 1.0, np.nextafter(1.0, 2.0), 1.5, 1.0 + 2.0 ** -23, 0.1, 0.2, np.pi,
                -2.5, 1e-45, 1e300, -1e300, 3.4028235e38, 3.4028236e38, np.inf, -np.inf,
                float(np.float32(0.1)), float(np.nextafter(np.float32(0.1), np.float32(1)))]


def test_separators_survive_float32():
    from hgbt.data.thresholds import _separators
    rng = np.random.default_rng(0)
    values = np.concatenate([_PAIR_VALUES, rng.normal(size=300) * 10.0 ** rng.integers(-5, 5, 300),
                             rng.normal(size=100).astype(np.float32)])
    a, b = np.meshgrid(values, values)
    keep = a < b
    a, b = a[keep], b[keep]
    t = _separators(a, b)
    assert np.all((a <= t) & (t < b))
    for ai, bi, ti in zip(a, b, t):
        candidates = _float32_candidates(ai, bi)
        if not candidates:  # no float32 number between: the float64 midpoint (or a)
            mid = ai * 0.5 + bi * 0.5
            assert ti == (mid if ai <= mid < bi else ai)
            continue
        assert ti in candidates, (ai, bi, ti)
        with np.errstate(over="ignore", invalid="ignore"):
            mid = ai * 0.5 + bi * 0.5
        if np.isfinite(mid):  # the least candidate at or above the midpoint, else the last
            above = [c for c in candidates if c >= mid]
            assert ti == (above[0] if above else candidates[-1]), (ai, bi, ti)
            # the midpoint itself routes the same in float32
            with np.errstate(over="ignore"):
                assert (mid <= ti) == (np.float32(mid) <= ti) or mid > candidates[-1]
        else:
            assert ti == candidates[0]
        # float32(x) routes as x for x = a, b
        with np.errstate(over="ignore"):
            assert np.float32(ai) <= ti < np.float32(bi)

