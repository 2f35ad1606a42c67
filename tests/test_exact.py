"""Exact sums and gradient grids (hgbt.core.exact, hgbt.core._exact) against math.fsum
and brute force: results must not depend on the order or the split of rows."""
import math

import numpy as np
import pytest

from hgbt.core._exact import snap_to_grid
from hgbt.tree._histogram import build_histogram, build_histogram_root, subtract_histograms
from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE
from hgbt.core.exact import ExactSum, GradientOverflowError, WeightedMean, grid_exponent
from hgbt.tree.training_data import LocalTrainingData


def wide_values(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n) * np.exp(rng.uniform(-200, 200, n))


@pytest.mark.parametrize("seed", range(3))
def test_exact_sum_is_correctly_rounded(seed):
    x = wide_values(20_000, seed)
    assert float(ExactSum.of(x)) == math.fsum(x)


@pytest.mark.parametrize("seed", range(3))
def test_exact_sum_merges_shards_in_any_order(seed):
    x = wide_values(5_000, seed)
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, x.size, 4))
    shards = np.split(rng.permutation(x), cuts)
    merged = ExactSum()
    for shard in reversed(shards):
        merged = merged + ExactSum.of(shard)
    assert float(merged) == math.fsum(x)
    assert merged.scaled == ExactSum.of(x).scaled


def test_accumulate_reports_the_rows_it_touched():
    from hgbt.core._exact import exact_accumulate
    counters = np.zeros((2100, 4), dtype=np.uint64)
    assert exact_accumulate(np.zeros(3), np.empty(0), counters) == (0.0, 0, 0)
    special, first, stop = exact_accumulate(np.array([3.0, -0.25, np.inf, 1e-300]),
                                            np.empty(0), counters)
    assert special == math.inf
    touched = np.flatnonzero(counters.any(axis=1))
    assert (first, stop) == (touched.min(), touched.max() + 1)


def test_exact_sum_weights_round_each_product_once():
    rng = np.random.default_rng(0)
    v, w = rng.standard_normal(1000), rng.uniform(0, 3, 1000)
    assert float(ExactSum.of(v, w)) == math.fsum(v * w)


def test_exact_sum_extremes():
    assert float(ExactSum.of([])) == 0.0
    assert float(ExactSum.of([5e-324, 5e-324])) == 1e-323          # subnormals
    assert float(ExactSum.of([1e308, 1e308, -1e308])) == 1e308      # no overflow midway
    assert float(ExactSum.of([1e308, 1e308])) == math.inf           # overflow at the end
    assert float(ExactSum.of([np.inf, 1.0])) == math.inf
    assert math.isnan(float(ExactSum.of([np.inf, -np.inf])))
    assert math.isnan(float(ExactSum.of([np.nan, 1.0])))
    assert float(ExactSum.of([1e16, 1.0, -1e16])) == 1.0            # np.sum gives 0.0
    assert float(ExactSum.of_int(7) + ExactSum.of([0.5])) == 7.5


def test_weighted_mean():
    rng = np.random.default_rng(1)
    v, w = rng.standard_normal(999), rng.uniform(0, 2, 999)
    assert WeightedMean.of(v, w).value() == pytest.approx(np.average(v, weights=w),
                                                          rel=1e-15)
    assert WeightedMean.of(v).value() == pytest.approx(np.mean(v), rel=1e-15)
    whole = WeightedMean.of(v, w).value()
    assert (WeightedMean.of(v[:400], w[:400]) + WeightedMean.of(v[400:], w[400:])).value() \
        == whole
    # weights summing to zero fall back to the plain mean
    assert WeightedMean.of([1.0, 3.0], [0.0, 0.0]).value() == 2.0
    assert math.isnan(WeightedMean.of([]).value())


@pytest.mark.parametrize("n_rows", [1, 1000, 2**30, 2**40])
@pytest.mark.parametrize("scale", [1e-30, 3e-3, 1.0, 7.5, 1e30])
def test_grid_bounds(n_rows, scale):
    s = grid_exponent(scale, n_rows)
    k_max = scale * 2.0**s
    assert k_max <= 2**24                      # snapped values fit float32
    assert n_rows * (k_max + 0.5) <= 2**53     # and any sum of them is exact
    assert k_max > 2**22 or n_rows * 2**24 > 2**52  # as fine as float32 allows
    assert grid_exponent(0.0, n_rows) is None
    for special in (np.nan, np.inf):  # an overflow is an error, never a NaN model
        with pytest.raises(GradientOverflowError):
            grid_exponent(special, n_rows)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_snap_to_grid(n_threads):
    rng = np.random.default_rng(2)
    g = (rng.standard_normal(50_000) * 3).astype(G_H_DTYPE)
    s = grid_exponent(np.abs(g).max(), g.size)
    snapped = g.copy()
    snap_to_grid(snapped, s, n_threads)
    k = snapped.astype(np.float64) * 2.0**s
    np.testing.assert_array_equal(k, np.rint(g.astype(np.float64) * 2.0**s))
    assert np.abs(snapped - g).max() <= 2.0**(-s - 1)
    one = g.copy()
    snap_to_grid(one, s, 1)
    np.testing.assert_array_equal(snapped, one)


@pytest.mark.parametrize("exponent", [-20, 0, 7, 24, 60, 126])
def test_snap_to_grid_is_rint_bit_for_bit(exponent):
    # Rounding without libm must be rint exactly on the grid's domain
    # (|v| * 2**exponent <= 2**24): ties to even, signed zeros, inf and NaN.
    rng = np.random.default_rng(exponent + 100)
    scale = 2.0 ** -exponent
    values = rng.standard_normal(20_001) * 2.0**22 * scale
    values[:2000] = (np.arange(2000) - 1000 + 0.5) * scale  # exact ties
    values[2000:2008] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**24 * scale,
                         -0.25 * scale, -0.5 * scale]
    values = values.astype(G_H_DTYPE)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = (np.rint(values.astype(np.float64) * 2.0**exponent)
                    * 2.0**-exponent).astype(G_H_DTYPE)
    snapped = values.copy()
    snap_to_grid(snapped, exponent, 1)
    np.testing.assert_array_equal(snapped.view(np.uint32), expected.view(np.uint32))
    assert np.signbit(snapped[2004]) and np.signbit(snapped[2006])  # -0.25 -> -0.0


def test_snapped_histograms_do_not_depend_on_row_order_or_split():
    # On the grid every float64 sum is exact: any row order, any sharding and
    # the subtraction trick all give bit-identical histograms.
    rng = np.random.default_rng(3)
    n, n_features, n_bins = 30_000, 4, 32
    X = np.asfortranarray(rng.integers(0, n_bins, (n, n_features), dtype=np.uint8))
    g = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(G_H_DTYPE)
    h = rng.uniform(0.01, 5, n).astype(G_H_DTYPE)
    data = LocalTrainingData(X, n_bins, 2)
    data.use_gradients(g, h)
    data.start_tree(0)  # snaps g and h in place
    assert np.all(g.astype(np.float64) * 2.0**grid_exponent(np.abs(g).max(), n) % 1 == 0)

    def hist(rows):
        out = np.empty((n_features, n_bins), dtype=HISTOGRAM_DTYPE)
        build_histogram(X, np.ascontiguousarray(rows, dtype=SIZE_DTYPE), g, h,
                        np.empty(n, G_H_DTYPE), np.empty(n, G_H_DTYPE), out, 2)
        return out

    root = np.empty((n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    build_histogram_root(X, g, h, root, 1)
    reversed_rows = hist(np.arange(n)[::-1].copy())
    assert root.tobytes() == reversed_rows.tobytes()
    left = np.sort(rng.choice(n, n // 3, replace=False))
    right = np.setdiff1d(np.arange(n), left)
    sibling = np.empty_like(root)
    subtract_histograms(root, hist(left), sibling)
    assert sibling.tobytes() == hist(right).tobytes()
    shards = hist(right[: n // 4]), hist(right[n // 4:])
    summed = shards[0].copy()
    for field in ("sum_gradients", "sum_hessians", "count"):
        summed[field] = shards[0][field] + shards[1][field]
    assert summed.tobytes() == sibling.tobytes()


def test_an_agreed_grid_is_applied_even_to_a_single_row():
    # A Dask shard holding one row must snap it like every other shard does
    # (its length-1 hessian is per-row, not a constant).
    X = np.zeros((1, 2), dtype=np.uint8, order="F")
    g = np.array([0.1], dtype=G_H_DTYPE)
    h = np.array([0.3], dtype=G_H_DTYPE)
    data = LocalTrainingData(X, 4, 1)
    data.use_gradients(g, h)
    data.start_tree(0, grid=(3, 3))
    assert g[0] == 0.125 and h[0] == 0.25
    # a constant hessian (length 1 for many rows) is left alone by default
    X = np.zeros((5, 2), dtype=np.uint8, order="F")
    g, h = np.full(5, 0.1, dtype=G_H_DTYPE), np.ones(1, dtype=G_H_DTYPE)
    data = LocalTrainingData(X, 4, 1)
    data.use_gradients(g, h)
    data.start_tree(0)
    assert h[0] == 1.0
