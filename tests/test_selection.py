"""Weighted quantiles and order statistics by radix selection
(hgbt/engine/selection.py): against sorting in NumPy, and over row shards on
a ring of threads against all rows in one process, bit for bit."""
from fractions import Fraction

import numpy as np
import pytest

from hgbt.core.row_meta import RowMeta
from hgbt.engine.losses import AbsoluteError, CustomLoss, HuberLoss, QuantileLoss
from hgbt.engine.selection import (float_keys, key_values, radix_select, weight_units,
                                   weighted_quantiles)
from test_ring import ring_of, run_all


def reference_quantile(values, weights, q):
    """The definition, by sorting, with exact cumulative sums (Fractions)."""
    if weights is None or not np.any(weights > 0):
        weights = np.ones(values.size)
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    values, weights = values[order], [Fraction(w) for w in weights[order]]
    total = sum(weights)
    target, tol = Fraction(q) * total, Fraction(1e-12) * total
    cumulative = Fraction(0)
    for j, w in enumerate(weights):
        cumulative += w
        if cumulative >= target - tol:
            break
    if abs(cumulative - target) <= tol and j + 1 < values.size:
        return 0.5 * (values[j] + values[j + 1])
    return values[j]


def test_keys_order_as_the_floats():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500),
                             [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324]])
    keys = float_keys(values)
    np.testing.assert_array_equal(np.argsort(keys, kind="stable"),
                                  np.argsort(values + 0.0, kind="stable"))
    np.testing.assert_array_equal(key_values(keys), values + 0.0)
    assert float_keys([-0.0])[0] == float_keys([0.0])[0]


@pytest.mark.parametrize("seed", range(4))
def test_radix_select_is_the_sorted_order_statistic(seed):
    rng = np.random.default_rng(seed)
    n, n_groups = 2000, 5
    keys = rng.integers(0, 40, n).astype(np.uint64) << np.uint64(rng.integers(0, 50))
    units = rng.integers(0, 5, n).astype(np.int64)
    groups = rng.integers(0, n_groups, n)
    totals = np.bincount(groups, weights=units, minlength=n_groups).astype(np.int64)
    need = np.array([rng.integers(0, t + 1) for t in totals])
    chosen, below, at = radix_select(keys, units, groups, n_groups, need)
    for g in range(n_groups):
        k, w = keys[groups == g], units[groups == g]
        distinct = np.unique(k)
        weight_upto = np.array([w[k <= v].sum() for v in distinct])
        expected = distinct[np.argmax(weight_upto >= need[g])]
        assert chosen[g] == expected
        assert below[g] == w[k < expected].sum() and at[g] == w[k == expected].sum()


@pytest.mark.parametrize("weighting", ["none", "integer", "grid", "zeros"])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.75, 0.9])
def test_weighted_quantiles_match_the_definition(weighting, q):
    rng = np.random.default_rng(int(q * 100))
    n, n_groups = 3000, 7
    values = np.round(rng.standard_normal(n), 1)  # many ties
    groups = rng.integers(0, n_groups, n)
    weights = {"none": None, "integer": rng.integers(0, 4, n).astype(float),
               # multiples of 2**-8: exact on the selection's grid
               "grid": rng.integers(1, 2**10, n) / 2**8,
               "zeros": np.where(groups == 3, 0.0, rng.integers(1, 3, n))}[weighting]
    got = weighted_quantiles(values, weights, groups, n_groups, q)
    for g in range(n_groups):
        rows = groups == g
        expected = reference_quantile(values[rows], None if weights is None
                                      else weights[rows], q)
        assert got[g] == expected
        if weighting == "integer" and weights[rows].sum() > 0:
            repeated = np.repeat(values[rows], weights[rows].astype(int))
            assert got[g] == np.quantile(repeated, q, method="averaged_inverted_cdf")


def test_a_group_without_rows_is_nan():
    got = weighted_quantiles(np.array([1.0, 2.0]), None, np.array([0, 0]), 2, 0.5)
    assert got[0] == 1.5 and np.isnan(got[1])


def test_weight_units_keep_the_ratios_and_stay_summable():
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 1e6, 10_000)
    units = weight_units(w)
    assert units.sum() < 2**62
    np.testing.assert_allclose(units / units.max(), w / w.max(), rtol=1e-9)
    assert weight_units(np.zeros(3)) is None


@pytest.mark.parametrize("weighted", [False, True])
def test_quantiles_over_shards_are_those_of_all_rows(weighted):
    # a ring of 3 processes, one without rows: the same values, bit for bit
    rng = np.random.default_rng(5)
    n, n_groups = 4000, 9
    values = np.round(rng.standard_normal(n) * 3, 2)
    groups = rng.integers(0, n_groups, n)
    weights = rng.uniform(0, 5, n) if weighted else None
    expected = {q: weighted_quantiles(values, weights, groups, n_groups, q)
                for q in (0.5, 0.9)}
    shards = [np.arange(0, 1500), np.arange(1500, 1500), np.arange(1500, n)]
    rings = ring_of(3)

    def select(rank):
        rows = shards[rank]
        # the process without rows has no weights either (a Dask worker with
        # validation rows only): it must still make the same calls
        return {q: weighted_quantiles(values[rows], None if weights is None or not rows.size
                                      else weights[rows], groups[rows], n_groups, q,
                                      rings[rank]) for q in (0.5, 0.9)}

    for got in run_all(3, select):
        assert not isinstance(got, BaseException), got
        for q in expected:
            np.testing.assert_array_equal(got[q], expected[q])


@pytest.mark.parametrize("make", [lambda w: AbsoluteError(RowMeta(w)), lambda w: QuantileLoss(0.3, RowMeta(w)),
                                  lambda w: HuberLoss(None, RowMeta(w)), lambda w: HuberLoss(0.7, RowMeta(w)),
                                  lambda w: CustomLoss(lambda y, raw, sw: (
                                      np.tanh(raw - y), np.ones_like(y)), RowMeta(w))])
def test_losses_over_shards_are_the_losses_of_all_rows(make):
    # baselines, leaf refits and Huber's adaptive delta pool every shard's rows
    rng = np.random.default_rng(3)
    n, n_leaves = 3000, 6
    y = rng.standard_normal(n) * 2 + 1
    raw = rng.standard_normal(n) * 0.5
    w = rng.uniform(0.1, 3, n)
    leaves = rng.integers(0, n_leaves, n)
    refits = not isinstance(make(None), CustomLoss)

    def run(loss, rows):
        out = [loss.baseline(y[rows])]
        if refits:
            buffers = loss.allocate_buffers(rows.size, False)
            loss.gradients(y[rows], raw[None, rows], *buffers, 1)
            out += [loss.refit_leaves(y[rows], raw[rows], w[rows], leaves[rows], n_leaves),
                    getattr(loss, "delta_", None)]
        return out

    expected = run(make(w), np.arange(n))
    shards = [np.arange(0, 900), np.arange(900, n)]
    rings = ring_of(2)

    def on_shard(rank):
        rows = shards[rank]
        loss = make(w[rows])
        loss.collective = rings[rank]
        return run(loss, rows)

    for got in run_all(2, on_shard):
        assert not isinstance(got, BaseException), got
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
