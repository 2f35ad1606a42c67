"""The mergeable weighted quantile summary (``hgbt.data.sketch``) against
exact NumPy ranks and the in-memory thresholds."""
import numpy as np
import pytest

from hgbt.data.sketch import QuantileSketch
from hgbt.data.thresholds import find_thresholds


def batches(values, weights, n_batches, rng):
    cuts = np.sort(rng.choice(np.arange(1, values.size), n_batches - 1, replace=False))
    w = np.split(weights, cuts) if weights is not None else [None] * n_batches
    return list(zip(np.split(values, cuts), w))


def exact_ranks(values, weights, at):
    """Weight of the values below, at and up to each of ``at``."""
    keep = ~np.isnan(values)
    values = values[keep]
    weights = np.ones(values.size) if weights is None else weights[keep]
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.concatenate([[0.0], np.cumsum(weights[order])])
    below = cum[np.searchsorted(v, at, side="left")]
    upto = cum[np.searchsorted(v, at, side="right")]
    return below, upto - below, upto


@pytest.mark.parametrize("n_batches", [1, 7])
def test_few_distinct_values_give_the_in_memory_thresholds(n_batches):
    # at most `capacity` distinct values: nothing pruned, the thresholds of
    # all the rows bit for bit (NaN ignored)
    rng = np.random.default_rng(0)
    values = np.round(rng.standard_normal(20000), 2)  # about 800 distinct
    values[rng.random(values.size) < 0.05] = np.nan
    sketch = QuantileSketch(capacity=2048)
    for part, _ in batches(values, None, n_batches, rng):
        sketch.update(part)
    assert sketch.is_exact and sketch.max_gap == 0.0
    assert sketch.total_weight == np.count_nonzero(~np.isnan(values))
    for max_bins in (255, 16):
        np.testing.assert_array_equal(sketch.thresholds(max_bins),
                                      find_thresholds(values, max_bins))


def test_one_weighted_batch_gives_the_in_memory_thresholds():
    rng = np.random.default_rng(1)
    values = np.round(rng.exponential(size=5000), 2)  # more distinct values than bins
    weights = rng.uniform(0, 3, values.size)
    weights[::10] = 0.0  # ignored, as in-memory
    sketch = QuantileSketch().update(values, weights)
    assert sketch.is_exact  # although the weights' sums round
    assert np.unique(values).size > 255
    np.testing.assert_array_equal(sketch.thresholds(255),
                                  find_thresholds(values, 255, weights))


@pytest.mark.parametrize("distribution", ["normal", "lognormal", "uniform"])
def test_pruned_thresholds_are_as_near_the_quantiles_as_in_memory(distribution):
    # a bin ends before an entry that would overfill it when that is nearer
    # its share: ending after it pushed mid-column cuts up by 3 bins' widths
    rng = np.random.default_rng(2)
    n, capacity = 40_000, 1024
    values = getattr(rng, distribution)(size=n)
    sketch = QuantileSketch(capacity)
    for part in np.array_split(values, 16):
        sketch.update(part)
    assert not sketch.is_exact
    quantiles = np.arange(1, 255) / 255
    column = np.sort(values)

    def off(thresholds):
        assert thresholds.size == 254
        return np.abs(np.searchsorted(column, thresholds, side="right") / n - quantiles).max()

    assert off(sketch.thresholds(255)) <= off(find_thresholds(values, 255)) + 8 / capacity


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("distribution", ["normal", "heavy ties", "lognormal"])
def test_pruned_bounds_hold_and_the_gap_stays_small(weighted, distribution):
    # many batches of many distinct values: every entry's bounds hold for the
    # exact ranks of all the data, and the rank uncertainty stays within a
    # few entries' share of the weight
    rng = np.random.default_rng(2)
    n = 200000
    values = {"normal": rng.standard_normal(n),
              "heavy ties": np.where(rng.random(n) < 0.3, 0.0, rng.standard_normal(n)),
              "lognormal": rng.lognormal(0, 2, n)}[distribution]
    weights = rng.uniform(0.1, 5.0, n) if weighted else None
    capacity = 512
    sketch = QuantileSketch(capacity)
    for part, w in batches(values, weights, 40, rng):
        sketch.update(part, w)
    assert not sketch.is_exact and sketch.values.size <= capacity
    below, at, upto = exact_ranks(values, weights, sketch.values)
    tol = 1e-9 * sketch.total_weight
    assert np.all(sketch.rmin <= below + tol)
    assert np.all(sketch.rmin + sketch.wmin <= upto + tol)
    assert np.all(sketch.wmin <= at + tol)
    assert np.all(sketch.rmax >= upto - tol)
    assert sketch.max_gap <= 8 * sketch.total_weight / capacity
    # thresholds as even as the in-memory ones of all the rows, within that
    # gap (a value holding 30% of the weight keeps a bin of its own)
    def bin_shares(cuts):
        upto = exact_ranks(values, weights, cuts)[2] / sketch.total_weight
        return np.diff(np.concatenate([[0.0], upto, [1.0]]))

    in_memory = find_thresholds(values, 32, weights)
    cuts = sketch.thresholds(32)
    assert cuts.size >= in_memory.size - 1
    assert bin_shares(cuts).max() <= bin_shares(in_memory).max() + 8 / capacity


def test_merging_summaries_is_summarising_the_union():
    # partitions summarised apart and merged: the bounds of one summary of all
    rng = np.random.default_rng(3)
    values = rng.standard_normal(60000)
    parts = [QuantileSketch(256).update(part) for part, _ in batches(values, None, 6, rng)]
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    below, _, upto = exact_ranks(values, None, merged.values)
    assert np.all(merged.rmin <= below) and np.all(merged.rmax >= upto)
    assert merged.total_weight == values.size
    assert merged.max_gap <= 8 * values.size / 256


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="capacity"):
        QuantileSketch(2)
    with pytest.raises(ValueError, match="one weight per value"):
        QuantileSketch().update(np.arange(3.0), np.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        QuantileSketch().update(np.arange(3.0), np.array([1.0, -1.0, 1.0]))
    assert QuantileSketch().update(np.array([np.nan])).thresholds(255).size == 0
