"""Feature layouts (hgbt.data.bundling) and the sparse-column kernels against naive
NumPy references.

Gradients and hessians are snapped to the exact-sum grid (as ``start_tree``
does), so every histogram sum is exact and histograms are compared bit for
bit: a default bin filled by subtraction, a bundled feature unpacked from its
column and a histogram summed directly must agree exactly.
"""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from hgbt.core._exact import snap_to_grid
from hgbt.tree._histogram import subtract_histograms
from hgbt.tree._histogram_sparse import build_histogram_sparse
from hgbt.tree._partition import partition_rows_by_table, partition_rows_stored
from split_search import find_node_split
from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE, SPLIT_INFO_DTYPE
from hgbt.data.binning import BinMapper
from hgbt.data.bundling import (MAX_BUNDLE_CODES, DenseBins, FeatureLayout, SparseBins,
                                build_layout, find_bundles)
from hgbt.core.exact import grid_exponent
from hgbt.data.sparse import bin_stored_entries
from hgbt.tree.training_data import LocalTrainingData
import hgbt.data.bundling
from test_histogram import garbage_histogram, row_subsets  # shared kernel-test helpers

MISSING_BIN = 255
N_BINS = MISSING_BIN + 1
MIN_SPARSE_SAVING = hgbt.data.bundling.MIN_SPARSE_SAVING  # the library's rule


@pytest.fixture(scope="module", autouse=True)
def sparse_storage_at_any_saving():
    """These tests' tables have a few sparse columns, too few for sparse
    storage to pay: they are stored sparse anyway, to test that storage
    (the rule itself: test_sparse_storage_only_where_it_saves)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hgbt.data.bundling, "MIN_SPARSE_SAVING", 0.0)
        yield


# ----------------------------------------------------------------- helpers
def on_grid(values):
    """float32 copy of ``values`` snapped to the grid of exact float64 sums."""
    values = np.ascontiguousarray(values, dtype=G_H_DTYPE)
    exponent = grid_exponent(np.abs(values).max(), values.size)
    snap_to_grid(values, exponent, 1)
    return values


def grid_gradients(rng, n):
    g = on_grid(rng.standard_normal(n) * np.exp(rng.uniform(-3, 3, n)))
    h = on_grid(rng.uniform(0.01, 3.0, n))
    return g, h


def random_codes(rng, n_rows, density, n_bins, default=None):
    """Dense code matrix whose column ``c`` is off its default code on about
    ``density[c]`` of the rows (codes anywhere in ``[0, n_bins)``)."""
    n_cols = len(density)
    if default is None:
        default = rng.integers(0, n_bins, n_cols)
    default = np.asarray(default, dtype=np.uint8)
    codes = np.repeat(default[None, :], n_rows, axis=0)
    for c, d in enumerate(density):
        off = np.flatnonzero(rng.random(n_rows) < d)
        other = rng.integers(0, n_bins - 1, off.size)
        other[other >= default[c]] += 1  # any code but the default one
        codes[off, c] = other
    return codes, default


def row_wise_csr(codes, default):
    """Row-wise CSR (int64 indptr, uint32 columns, uint8 codes) of the entries off
    their column's default code, sorted by column within each row."""
    off = codes != default[None, :]
    rows, cols = np.nonzero(off)  # C order: by row, then by column
    indptr = np.zeros(codes.shape[0] + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(off.sum(axis=1))
    return indptr, cols.astype(np.uint32), np.ascontiguousarray(codes[rows, cols],
                                                                dtype=np.uint8)


def reference_histogram(codes, rows, g, h, n_bins):
    """Per column per code sums over ``rows`` by np.bincount (float64, exact on
    the grid); a length-1 ``h`` is a constant hessian."""
    rows = np.asarray(rows, dtype=np.intp)
    out = np.zeros((codes.shape[1], n_bins), dtype=HISTOGRAM_DTYPE)
    g64 = g[rows].astype(np.float64)
    for c in range(codes.shape[1]):
        b = codes[rows, c].astype(np.intp)
        count = np.bincount(b, minlength=n_bins)
        out["count"][c] = count
        out["sum_gradients"][c] = np.bincount(b, weights=g64, minlength=n_bins)
        if h.size == 1:  # a constant hessian
            out["sum_hessians"][c] = count * np.float64(h[0])
        else:
            out["sum_hessians"][c] = np.bincount(b, weights=h[rows].astype(np.float64),
                                                 minlength=n_bins)
    return out


def used_bins(width, n_bins):
    """Mask of the bins a column uses: codes below its width, and the last
    (missing) bin."""
    mask = np.arange(n_bins)[None, :] < np.asarray(width, dtype=np.int64)[:, None]
    mask[:, n_bins - 1] = True
    return mask


def assert_hist_equal(got, expected, mask=None):
    """Exact equality of every field (of the bins in ``mask`` only, if given)."""
    for field in ("count", "sum_gradients", "sum_hessians"):
        a, b = got[field], expected[field]
        if mask is not None:
            a, b = a[mask], b[mask]
        np.testing.assert_array_equal(a, b, err_msg=field)


def sparse_histogram(csr, rows, g, h, default, bounds, n_bins, n_threads, width=None):
    """build_histogram_sparse into a garbage-filled output; ``width`` defaults
    to every bin of every column."""
    indptr, columns, codes = csr
    n_cols = len(default)
    if width is None:
        width = np.full(n_cols, n_bins - 1)
    out = garbage_histogram(n_cols, n_bins)
    build_histogram_sparse(indptr, columns, codes, np.asarray(rows, dtype=SIZE_DTYPE), g, h,
                           np.asarray(default, dtype=np.uint8),
                           np.asarray(width, dtype=np.uint16),
                           np.asarray(bounds, dtype=np.uint32), out, n_threads)
    return out


def column_codes(layout, c):
    """Column ``c`` of a layout as a dense code array (rows without a sparse
    entry get the column's default code)."""
    if c < layout.n_dense:
        return np.asarray(layout.X_dense[:, c])
    n_rows = layout.sparse_indptr.shape[0] - 1
    out = np.full(n_rows, layout.column_default[c], dtype=np.uint8)
    rows = np.repeat(np.arange(n_rows), np.diff(layout.sparse_indptr))
    mine = layout.sparse_columns == c - layout.n_dense
    out[rows[mine]] = layout.sparse_codes[mine]
    return out


def all_column_codes(layout):
    return np.column_stack([column_codes(layout, c) for c in range(layout.n_columns)])


def decode_feature(layout, f):
    """Feature ``f``'s bins read back from its column (a code not of ``f``
    means ``f`` is at its default bin)."""
    col = column_codes(layout, layout.feature_column[f])
    k = layout.bundle_index[f]
    if k < 0:
        return col
    codes = layout.bundle_codes[k]
    inverse = np.full(256, layout.default_bin[f], dtype=np.uint8)
    own = np.flatnonzero(codes)
    inverse[codes[own]] = own
    return inverse[col]


def unpack_histograms(layout, column_hist, n_total, g_total, h_total):
    """Per-feature histograms from per-column ones, naively: a bundled
    feature's bins are read at its codes and its default bin is the node
    total minus them."""
    n_bins = column_hist.shape[1]
    out = np.zeros((layout.n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    for f in range(layout.n_features):
        c, k = layout.feature_column[f], layout.bundle_index[f]
        if k < 0:
            out[f] = column_hist[c]
            continue
        codes = layout.bundle_codes[k]
        own = np.flatnonzero(codes)
        out[f, own] = column_hist[c, codes[own]]
        d = layout.default_bin[f]
        out["count"][f, d] = n_total - out["count"][f].sum()
        out["sum_gradients"][f, d] = g_total - out["sum_gradients"][f].sum()
        out["sum_hessians"][f, d] = h_total - out["sum_hessians"][f].sum()
    return out


def check_layout_invariants(layout, X_binned, missing_bin=MISSING_BIN):
    """Structure of a layout, and each feature's bins read back exactly."""
    n_features = X_binned.shape[1]
    assert layout.n_features == n_features
    members = sorted(f for col in layout.columns for f in col)
    assert members == list(range(n_features))  # every feature in exactly one column
    for c, col in enumerate(layout.columns):
        np.testing.assert_array_equal(layout.feature_column[col], c)
        if len(col) == 1:
            assert layout.bundle_index[col[0]] == -1
            assert layout.column_default[c] == layout.default_bin[col[0]]
            continue
        assert layout.column_default[c] == 0
        used = np.concatenate([layout.bundle_codes[layout.bundle_index[f]]
                               for f in col])
        used = used[used > 0]
        assert np.unique(used).size == used.size  # codes unique within the column
        assert used.size <= MAX_BUNDLE_CODES
        for f in col:
            assert layout.bundle_codes[layout.bundle_index[f], layout.default_bin[f]] == 0
    k = layout.bundle_index[layout.bundle_index >= 0]
    assert np.unique(k).size == k.size == layout.bundle_codes.shape[0]
    assert layout.X_dense.flags.f_contiguous
    n_sparse = layout.n_columns - layout.n_dense
    assert np.all(layout.sparse_columns < max(n_sparse, 1))
    for r in range(0, X_binned.shape[0], max(1, X_binned.shape[0] // 50)):
        cols = layout.sparse_columns[layout.sparse_indptr[r]:layout.sparse_indptr[r + 1]]
        assert np.all(np.diff(cols.astype(np.int64)) > 0)  # sorted per row, no repeat
    # no sparse entry stores its column's default code
    n_rows = X_binned.shape[0]
    entry_rows = np.repeat(np.arange(n_rows), np.diff(layout.sparse_indptr))
    assert entry_rows.size == layout.sparse_codes.size
    assert np.all(layout.sparse_codes
                  != layout.column_default[layout.n_dense + layout.sparse_columns])
    # the same entries column by column, rows sorted
    order = np.lexsort((entry_rows, layout.sparse_columns))
    np.testing.assert_array_equal(
        layout.column_indptr,
        np.r_[0, np.cumsum(np.bincount(layout.sparse_columns, minlength=n_sparse))])
    np.testing.assert_array_equal(layout.column_rows, entry_rows[order])
    np.testing.assert_array_equal(layout.column_codes, layout.sparse_codes[order])
    # a bundled feature's codes: one run from its offset, bins in order (the
    # default one left out), then its missing bin; the column width covers
    # every code used (and no more than the codes of a column)
    col_codes = all_column_codes(layout)
    for c, col in enumerate(layout.columns):
        assert np.all((col_codes[:, c] < layout.column_width[c])
                      | (col_codes[:, c] == missing_bin))
        if len(col) == 1:
            f = col[0]
            assert layout.bundle_offset[f] == -1
            values = X_binned[:, f][X_binned[:, f] != missing_bin]
            assert layout.column_width[c] >= np.max(values, initial=0) + 1
            continue
        n_codes = 0
        for f in col:
            codes = layout.bundle_codes[layout.bundle_index[f]]
            own = np.flatnonzero(codes)
            assert np.all(own[:-1] < own[1:])
            np.testing.assert_array_equal(
                codes[own], layout.bundle_offset[f] + np.arange(layout.bundle_n_codes[f]))
            n_codes += own.size
        assert layout.column_width[c] == 1 + n_codes


def assert_same_split(got, expected):
    for name in SPLIT_INFO_DTYPE.names:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def one_hot_bins(rng, n_rows, n_levels, n_none=0):
    """Binned one-hot columns (bin 1 = the row's level, 0 elsewhere); levels
    ``>= n_levels`` (``n_none`` of them) set no column."""
    level = rng.integers(0, n_levels + n_none, n_rows)
    X = np.zeros((n_rows, n_levels), dtype=np.uint8)
    on = level < n_levels
    X[np.flatnonzero(on), level[on]] = 1
    return np.asfortranarray(X), level


def mixed_binned(rng, n_rows=3000):
    """Binned features of every kind (see the comments), missing bin 255.

    Returns X_binned (F-ordered), default bins, n_bins_non_missing and a dict
    of feature groups.
    """
    cols, default, nbnm = [], [], []
    groups = {}

    def add(name, col, d, n):
        groups.setdefault(name, []).append(len(cols))
        cols.append(np.asarray(col, dtype=np.uint8))
        default.append(d)
        nbnm.append(n)

    # 20 exclusive one-hot features (default 0, one code each); some rows have
    # none; feature 0 of them also holds missing values on such rows.
    level = rng.integers(0, 25, n_rows)
    for j in range(20):
        col = (level == j).astype(np.uint8)
        if j == 0:
            col[(level >= 20) & (rng.random(n_rows) < 0.3)] = MISSING_BIN
        add("onehot", col, 0, 2)
    # 4 exclusive features with negative values: default (zero) bin 3 of 7,
    # other bins below and above it, and missing values.
    owner = np.where(rng.random(n_rows) < 0.12, rng.integers(0, 4, n_rows), -1)
    for j in range(4):
        col = np.full(n_rows, 3, dtype=np.uint8)
        mine = np.flatnonzero(owner == j)
        col[mine] = rng.choice([0, 1, 2, 4, 5, 6, MISSING_BIN], mine.size)
        add("signed", col, 3, 7)
    # 5 count features (default 0 of 5 bins), overlapping each other
    for _ in range(5):
        col = np.where(rng.random(n_rows) < 0.05, rng.integers(1, 5, n_rows), 0)
        add("counts", col, 0, 5)
    # continuous dense feature, zero bin in the middle, missing values
    col = rng.integers(0, 100, n_rows)
    col[rng.random(n_rows) < 0.05] = MISSING_BIN
    add("continuous", col, 50, 100)
    # sparse but too many codes to bundle (stored sparse alone)
    col = np.where(rng.random(n_rows) < 0.1, rng.integers(0, 120, n_rows), 60)
    add("wide", col, 60, 120)
    # off its default bin on 70% of the rows: never bundled, dense alone
    col = np.where(rng.random(n_rows) < 0.7, rng.integers(1, 4, n_rows), 0)
    add("busy", col, 0, 4)
    X = np.asfortranarray(np.column_stack(cols))
    return (X, np.array(default, dtype=np.uint8), np.array(nbnm, dtype=np.uint32),
            groups)


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    X, default, nbnm, groups = mixed_binned(rng)
    layout = build_layout(DenseBins(X, default, MISSING_BIN), None, nbnm, MISSING_BIN)
    return X, default, nbnm, groups, layout


# -------------------------------------------------- build_histogram_sparse
@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_histogram_matches_brute_force(constant_hessian, n_threads):
    rng = np.random.default_rng(1)
    n_rows, n_bins = 9000, 20
    density = [0.01, 0.05, 0.2, 0.0, 0.5, 0.1, 1.0]  # column 3 has no entry at all
    codes, default = random_codes(rng, n_rows, density, n_bins,
                                  default=[0, 19, 7, 3, 0, 12, 1])
    csr = row_wise_csr(codes, default)
    g, h = grid_gradients(rng, n_rows)
    if constant_hessian:
        h = np.array([0.75], dtype=G_H_DTYPE)
    n_cols = len(density)
    # one chunk, two, one column per chunk, and chunks that are empty
    bounds = [[0, n_cols], [0, 3, n_cols], list(range(n_cols + 1)), [0, 0, 5, n_cols],
              [0, n_cols, n_cols]]
    for rows in row_subsets(rng, n_rows):
        expected = reference_histogram(codes, rows, g, h, n_bins)
        for bound in bounds:
            out = sparse_histogram(csr, rows, g, h, default, bound, n_bins, n_threads)
            assert_hist_equal(out, expected)
            assert np.all(out["count"].sum(axis=1) == rows.size)


@pytest.mark.parametrize("n_cols", [3, 70])
def test_sparse_histogram_split_by_rows_or_columns(n_cols):
    # Two threads split a large node by rows (private histograms added up) when
    # it has many rows per bin (3 columns), else by columns (70 columns of 256
    # bins): both give the brute-force sums, bit for bit.
    rng = np.random.default_rng(21)
    n_rows, n_bins = 12000, 256
    density = rng.uniform(0.0, 0.3, n_cols)
    codes, default = random_codes(rng, n_rows, density, n_bins)
    csr = row_wise_csr(codes, default)
    g, h = grid_gradients(rng, n_rows)
    for rows in (np.arange(n_rows), rng.permutation(n_rows)[:7000]):
        expected = reference_histogram(codes, rows, g, h, n_bins)
        for bounds in ([0, n_cols], [0, n_cols // 2, n_cols]):
            for n_threads in (2, 0):  # 0 (not a thread count): one thread
                out = sparse_histogram(csr, rows, g, h, default, bounds, n_bins, n_threads)
                assert_hist_equal(out, expected)


def test_sparse_histogram_without_any_entry():
    # every row at its column's default code: all of a node in one bin
    rng = np.random.default_rng(2)
    n_rows, n_cols = 500, 3
    default = np.array([0, 4, 9], dtype=np.uint8)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    g, h = grid_gradients(rng, n_rows)
    rows = rng.permutation(n_rows)[:321]
    csr = indptr, np.empty(0, np.uint32), np.empty(0, np.uint8)
    out = sparse_histogram(csr, rows, g, h, default, [0, n_cols], 10, 1)
    codes = np.repeat(default[None, :], n_rows, axis=0)
    assert_hist_equal(out, reference_histogram(codes, rows, g, h, 10))


def test_sparse_histogram_of_a_layout_with_its_column_bounds(mixed):
    # the sparse-stored columns of a real layout, chunked by column_bounds
    X, _, _, _, layout = mixed
    rng = np.random.default_rng(3)
    g, h = grid_gradients(rng, X.shape[0])
    n_dense, n_sparse = layout.n_dense, layout.n_columns - layout.n_dense
    assert n_sparse >= 2
    codes = all_column_codes(layout)[:, n_dense:]
    counts = np.bincount(layout.sparse_columns, minlength=n_sparse)
    for n_threads in (1, 2, 3, 8):
        bounds = layout.column_bounds(n_threads)
        assert bounds.dtype == np.uint32 and bounds[0] == 0 and bounds[-1] == n_sparse
        assert np.all(np.diff(bounds.astype(np.int64)) > 0)
        assert 2 <= bounds.size <= min(n_threads, n_sparse) + 1
        chunk_entries = np.add.reduceat(counts, bounds[:-1].astype(np.intp))
        # balanced: no chunk holds more than its share plus one column
        assert chunk_entries.max() <= counts.sum() / (bounds.size - 1) + counts.max()
        csr = layout.sparse_indptr, layout.sparse_columns, layout.sparse_codes
        width = layout.column_width[n_dense:]
        mask = used_bins(width, N_BINS)
        mask[0] = True  # the first column is complete (node totals are read there)
        for rows in (np.arange(X.shape[0]), rng.permutation(X.shape[0])[:1700]):
            out = sparse_histogram(csr, rows, g, h, layout.column_default[n_dense:], bounds,
                                   N_BINS, min(n_threads, 2), width)
            assert_hist_equal(out, reference_histogram(codes, rows, g, h, N_BINS), mask)


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_histogram_with_narrow_columns(constant_hessian, n_threads):
    # column c only uses codes below width[c] and the last bin: those bins
    # are exact (the default one by subtraction), and the first column whole
    rng = np.random.default_rng(17)
    n_rows, n_bins = 9000, 64
    width = np.array([5, 3, 40, 1, 12, 63])
    default = np.array([2, 0, 39, 0, 11, 30], dtype=np.uint8)
    density = [0.1, 0.3, 0.05, 0.02, 0.6, 0.2]
    codes = np.repeat(default[None, :], n_rows, axis=0)
    for c, d in enumerate(density):
        off = np.flatnonzero(rng.random(n_rows) < d)
        other = rng.integers(0, width[c], off.size)
        other[rng.random(off.size) < 0.2] = n_bins - 1   # missing
        other[other == default[c]] = n_bins - 1
        codes[off, c] = other
    csr = row_wise_csr(codes, default)
    g, h = grid_gradients(rng, n_rows)
    if constant_hessian:
        h = np.array([0.5], dtype=G_H_DTYPE)
    mask = used_bins(width, n_bins)
    mask[0] = True
    for rows in row_subsets(rng, n_rows):
        expected = reference_histogram(codes, rows, g, h, n_bins)
        for bounds in ([0, 6], [0, 2, 6], [0, 1, 2, 3, 4, 5, 6]):
            out = sparse_histogram(csr, rows, g, h, default, bounds, n_bins, n_threads,
                                   width)
            assert_hist_equal(out, expected, mask)
    # the subtraction of narrow histograms: the used bins of the sibling
    parent_rows = rng.permutation(n_rows)[:8000]
    child_rows = parent_rows[:3000]
    parent = sparse_histogram(csr, parent_rows, g, h, default, [0, 6], n_bins, n_threads,
                              width)
    child = sparse_histogram(csr, child_rows, g, h, default, [0, 6], n_bins, n_threads,
                             width)
    sibling = garbage_histogram(6, n_bins)
    subtract_histograms(parent, child, sibling, width.astype(np.uint16))
    assert_hist_equal(sibling, reference_histogram(codes, parent_rows[3000:], g, h, n_bins),
                      used_bins(width, n_bins))


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_histogram_subtraction_gives_sibling(constant_hessian, n_threads):
    rng = np.random.default_rng(4)
    n_rows, n_bins = 12_000, 32
    codes, default = random_codes(rng, n_rows, [0.02, 0.3, 0.08, 0.15], n_bins)
    csr = row_wise_csr(codes, default)
    g, h = grid_gradients(rng, n_rows)
    if constant_hessian:
        h = np.array([1.0], dtype=G_H_DTYPE)

    def hist(rows):
        return sparse_histogram(csr, rows, g, h, default, [0, 2, 4], n_bins, n_threads)

    parent_rows = np.sort(rng.choice(n_rows, 10_000, replace=False))
    mask = rng.random(parent_rows.size) < 0.45
    parent, child = hist(parent_rows), hist(parent_rows[mask])
    sibling = garbage_histogram(4, n_bins)
    subtract_histograms(parent, child, sibling)
    direct = hist(parent_rows[~mask])
    assert sibling.tobytes() == direct.tobytes()
    assert_hist_equal(sibling, reference_histogram(codes, parent_rows[~mask], g, h,
                                                   n_bins))


def test_sparse_histogram_rejects_incomplete_bounds():
    rng = np.random.default_rng(5)
    codes, default = random_codes(rng, 50, [0.1, 0.1, 0.1], 8)
    csr = row_wise_csr(codes, default)
    g, h = grid_gradients(rng, 50)
    rows = np.arange(50)
    with pytest.raises(ValueError, match="cover every column"):
        sparse_histogram(csr, rows, g, h, default[:2], [0, 3], 8, 1)
    with pytest.raises(ValueError, match="cover every column"):
        sparse_histogram(csr, rows, g, h, default, [0, 2], 8, 1)
    with pytest.raises(ValueError, match="cover every column"):
        sparse_histogram(csr, rows, g, h, default, [0, 3], 8, 1, width=[7, 7])


# -------------------------------------------------- partition_rows_stored
def column_wise(codes, default):
    """The entries off each column's default code, column by column (rows sorted)."""
    rows = [np.flatnonzero(codes[:, c] != default[c]) for c in range(codes.shape[1])]
    indptr = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    return (indptr, np.concatenate(rows).astype(SIZE_DTYPE),
            np.concatenate([codes[r, c] for c, r in enumerate(rows)]).astype(np.uint8))


def partition_rows_sparse(rows, buffer, indptr, columns, entry_codes, c, default, table,
                          n_threads, *, codes):
    """partition_rows_stored on column c; its scratch must stay zero."""
    scratch = np.zeros(codes.shape[0], dtype=np.uint8)
    n_left = partition_rows_stored(rows, buffer, indptr, columns, entry_codes,
                                   *column_wise(codes, default), c, default[c], table,
                                   scratch, n_threads)
    assert not scratch.any()
    return n_left


def naive_partition(rows, col, table):
    left = table[col[rows]].astype(bool)
    return rows[left], rows[~left]


def random_tables(rng, default_code):
    """A random 0/1 table sending the default code left, then one sending it right."""
    for side in (1, 0):
        table = rng.integers(0, 2, 256).astype(np.uint8)
        table[default_code] = side
        yield table


@pytest.mark.parametrize("n_rows", [1500, 40_000, 70_001])
def test_sparse_partition_matches_stable_reference(n_rows):
    # above 2 * 16384 rows, two threads partition two chunks
    rng = np.random.default_rng(n_rows)
    density = [0.03, 0.6, 0.0, 0.2]
    codes, default = random_codes(rng, n_rows, density, 256, default=[0, 255, 17, 200])
    indptr, columns, entry_codes = row_wise_csr(codes, default)
    dense = np.asfortranarray(codes)
    # all rows and most rows scatter a column's entries; a few rows against
    # many entries look each row up
    subsets = [rng.permutation(n_rows),
               np.sort(rng.choice(n_rows, int(0.8 * n_rows), replace=False)),
               np.sort(rng.choice(n_rows, n_rows // 100, replace=False))]
    for c in range(len(density)):
        for table in random_tables(rng, default[c]):
            for rows_in in subsets:
                rows_in = rows_in.astype(SIZE_DTYPE)
                exp_left, exp_right = naive_partition(rows_in, codes[:, c], table)
                for n_threads in (1, 2):
                    rows = rows_in.copy()
                    buffer = np.empty(n_rows, dtype=SIZE_DTYPE)
                    n_left = partition_rows_sparse(rows, buffer, indptr, columns,
                                                   entry_codes, c, default, table,
                                                   n_threads, codes=codes)
                    assert n_left == exp_left.size
                    np.testing.assert_array_equal(rows[:n_left], exp_left)
                    np.testing.assert_array_equal(rows[n_left:], exp_right)
                # the dense kernel on the same codes agrees
                rows = rows_in.copy()
                n_left = partition_rows_by_table(rows, np.empty(n_rows, SIZE_DTYPE),
                                                 dense, c, table, 2)
                assert n_left == exp_left.size
                np.testing.assert_array_equal(rows, np.concatenate([exp_left, exp_right]))


def test_sparse_partition_all_one_side_empty_and_in_place_slice():
    rng = np.random.default_rng(6)
    n_rows = 40_000
    codes, default = random_codes(rng, n_rows, [0.1], 16, default=[5])
    indptr, columns, entry_codes = row_wise_csr(codes, default)
    rows_in = rng.permutation(n_rows).astype(SIZE_DTYPE)
    for side, expected in ((1, n_rows), (0, 0)):
        for n_threads in (1, 2):
            rows = rows_in.copy()
            n_left = partition_rows_sparse(rows, np.empty(n_rows, SIZE_DTYPE), indptr,
                                           columns, entry_codes, 0, default,
                                           np.full(256, side, np.uint8), n_threads,
                                           codes=codes)
            assert n_left == expected
            np.testing.assert_array_equal(rows, rows_in)
    empty = np.empty(0, dtype=SIZE_DTYPE)
    assert partition_rows_sparse(empty, np.empty(1, SIZE_DTYPE), indptr, columns,
                                 entry_codes, 0, default, np.ones(256, np.uint8), 2,
                                 codes=codes) == 0
    # a slice of a bigger index array, partitioned in place as the grower does
    table = np.zeros(256, dtype=np.uint8)
    table[:6] = 1  # the default code 5 goes left
    all_rows = rows_in.copy()
    part = all_rows[1000:36_000]
    n_left = partition_rows_sparse(part, np.empty(n_rows, SIZE_DTYPE), indptr, columns,
                                   entry_codes, 0, default, table, 2, codes=codes)
    exp_left, exp_right = naive_partition(rows_in[1000:36_000], codes[:, 0], table)
    assert n_left == exp_left.size
    np.testing.assert_array_equal(all_rows[1000:36_000],
                                  np.concatenate([exp_left, exp_right]))
    np.testing.assert_array_equal(all_rows[:1000], rows_in[:1000])
    np.testing.assert_array_equal(all_rows[36_000:], rows_in[36_000:])
    with pytest.raises(ValueError, match="256 entries"):
        partition_rows_sparse(rows_in.copy(), np.empty(n_rows, SIZE_DTYPE), indptr,
                              columns, entry_codes, 0, default,
                              np.ones(255, np.uint8), 1, codes=codes)


# -------------------------------------------------- find_node_split with a layout
def test_mixed_layout_has_every_kind_of_column(mixed):
    X, default, nbnm, groups, layout = mixed
    check_layout_invariants(layout, X)
    assert layout.conflicts == 0
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(decode_feature(layout, f), X[:, f])
    # the one-hot features share one dense column, the signed ones (default
    # bin 3, missing values) are bundled, 'wide' and 'busy' stay alone
    onehot = groups["onehot"]
    assert len(set(layout.feature_column[onehot])) < len(onehot)
    assert layout.feature_column[onehot[0]] < layout.n_dense
    signed = groups["signed"]
    assert np.all(layout.bundle_index[signed] >= 0)
    assert np.all(layout.default_bin[signed] == 3)
    for f in groups["wide"] + groups["busy"] + groups["continuous"]:
        assert layout.bundle_index[f] == -1
    assert layout.feature_column[groups["wide"][0]] >= layout.n_dense   # sparse alone
    assert layout.feature_column[groups["busy"][0]] < layout.n_dense    # dense alone
    assert layout.n_bundles >= 2
    assert layout.n_dense < layout.n_columns < X.shape[1]


def split_layout(layout):
    """The layout arguments of find_node_split, as the training data passes them."""
    lay = LocalTrainingData(layout, N_BINS, 1).split_layout
    assert lay and "feature_column" in lay
    return lay


SPLIT_PARAMS = [
    # l1, l2, min_gain_to_split, min_child_weight, min_samples_leaf
    (0.0, 0.0, 0.0, 0.0, 1),
    (0.0, 1.0, 0.0, 1e-3, 20),
    (0.5, 0.1, 0.01, 2.0, 5),
]


@pytest.mark.parametrize("params", SPLIT_PARAMS)
@pytest.mark.parametrize("constant_hessian", [False, True])
def test_find_node_split_with_layout_equals_per_feature(mixed, params, constant_hessian):
    X, default, nbnm, groups, layout = mixed
    l1, l2, gamma, mcw, msl = params
    rng = np.random.default_rng(7)
    n_rows, n_features = X.shape
    assert n_features * N_BINS >= 8192  # the parallel scan for n_threads=2
    g, h = grid_gradients(rng, n_rows)
    # the target leans on the bundled features with a non-zero default bin
    g = on_grid(g + 3.0 * (X[:, groups["signed"][1]] < 3) - 2.0 * (X[:, 0] == 1))
    if constant_hessian:
        h = np.array([1.0], dtype=G_H_DTYPE)
    col_codes = all_column_codes(layout)
    lay = split_layout(layout)
    no_mask = np.empty(0, dtype=np.uint8)
    found = set()
    for rows in (np.arange(n_rows), rng.permutation(n_rows)[:1200],
                 np.sort(rng.choice(n_rows, 300, replace=False))):
        feature_hist = reference_histogram(X, rows, g, h, N_BINS)
        column_hist = reference_histogram(col_codes, rows, g, h, N_BINS)
        G = float(g[rows].astype(np.float64).sum())
        H = (float(h[0]) * rows.size if h.size == 1
             else float(h[rows].astype(np.float64).sum()))
        N = rows.size
        for n_threads in (1, 2):
            args = (nbnm, G, H, N, l1, l2, gamma, mcw, msl, MISSING_BIN)
            expected = find_node_split(feature_hist, *args, no_mask, n_threads)
            got = find_node_split(column_hist, *args, no_mask, n_threads, **lay)
            assert_same_split(got, expected)
            if n_threads == 2:
                continue
            # each feature alone: every bundled feature's own scan is compared
            for f in range(n_features):
                mask = np.zeros(n_features, dtype=np.uint8)
                mask[f] = 1
                expected = find_node_split(feature_hist, *args, mask, n_threads)
                got = find_node_split(column_hist, *args, mask, n_threads, **lay)
                assert_same_split(got, expected)
                if expected["feature_idx"] >= 0:
                    found.add(f)
    # not vacuous: bundled features (non-zero default bins, missing bins) split
    assert set(groups["signed"]) <= found
    assert set(groups["onehot"][:5]) <= found


def test_find_node_split_layout_with_monotonic_constraints(mixed):
    X, default, nbnm, groups, layout = mixed
    rng = np.random.default_rng(8)
    n_rows, n_features = X.shape
    g, h = grid_gradients(rng, n_rows)
    g = on_grid(g - 2.0 * (X[:, groups["signed"][0]] > 3))
    cst = rng.integers(-1, 2, n_features).astype(np.int8)
    col_codes = all_column_codes(layout)
    lay = split_layout(layout)
    rows = rng.permutation(n_rows)[:2000]
    feature_hist = reference_histogram(X, rows, g, h, N_BINS)
    column_hist = reference_histogram(col_codes, rows, g, h, N_BINS)
    G, H = float(g[rows].astype(np.float64).sum()), float(h[rows].astype(np.float64).sum())
    for lower, upper in ((-np.inf, np.inf), (-0.05, 0.08)):
        args = (nbnm, G, H, rows.size, 0.0, 1.0, 0.0, 1e-3, 10, MISSING_BIN,
                np.empty(0, np.uint8), 1)
        kwargs = dict(monotonic_cst=cst, lower_bound=lower, upper_bound=upper)
        expected = find_node_split(feature_hist, *args, **kwargs)
        got = find_node_split(column_hist, *args, **kwargs, **lay)
        assert expected["feature_idx"] >= 0
        assert_same_split(got, expected)


# -------------------------------------------------- find_bundles / build_layout
@pytest.mark.parametrize("n_none", [0, 7])
def test_exclusive_one_hot_columns_are_bundled(n_none):
    rng = np.random.default_rng(9)
    X, level = one_hot_bins(rng, 2000, 30, n_none)
    default = np.zeros(30, dtype=np.uint8)
    nbnm = np.full(30, 2, dtype=np.uint32)
    layout = build_layout(DenseBins(X, default, MISSING_BIN), None, nbnm, MISSING_BIN)
    assert layout is not None
    check_layout_invariants(layout, X)
    assert layout.n_columns < 30
    assert layout.n_bundles >= 1
    assert layout.conflicts == 0
    for f in range(30):
        np.testing.assert_array_equal(decode_feature(layout, f), X[:, f])
    # a single column holds the whole level: code -> level is a function
    if layout.n_columns == 1:
        col = column_codes(layout, 0)
        for code in np.unique(col):
            assert np.unique(level[col == code]).size == 1 or code == 0


def test_find_bundles_directly():
    rng = np.random.default_rng(10)
    X, _ = one_hot_bins(rng, 1000, 6, 2)
    source = DenseBins(X, np.zeros(6, np.uint8), MISSING_BIN)
    n_codes = np.ones(6, dtype=np.int64)
    bundles, conflicts = find_bundles(source, list(range(6)), n_codes, 0.0)
    assert conflicts == 0
    assert sorted(f for b in bundles for f in b) == list(range(6))
    assert len(bundles) == 1
    # most entries first
    nnz = source.nnz[bundles[0]]
    assert np.all(np.diff(nnz) <= 0)
    # room for codes: at most MAX_BUNDLE_CODES codes per bundle
    big = np.full(6, MAX_BUNDLE_CODES // 2, dtype=np.int64)
    bundles, _ = find_bundles(source, list(range(6)), big, 0.0)
    assert all(len(b) <= 2 for b in bundles) and len(bundles) == 3


def overlapping_pair(rng, n_rows, n_a, n_b, overlap):
    """Two flag features (bin 1 when on) with ``overlap`` shared rows."""
    rows = rng.permutation(n_rows)
    a = rows[:n_a]
    b = np.concatenate([rows[:overlap], rows[n_a:n_a + n_b - overlap]])
    X = np.zeros((n_rows, 2), dtype=np.uint8)
    X[a, 0] = 1
    X[b, 1] = 1
    return np.asfortranarray(X), np.intersect1d(a, b)


def test_conflicting_pair_bundled_only_within_the_budget():
    rng = np.random.default_rng(11)
    n_rows, overlap = 1000, 12
    X, shared = overlapping_pair(rng, n_rows, 150, 100, overlap)
    source = DenseBins(X, np.zeros(2, np.uint8), MISSING_BIN)
    nbnm = np.full(2, 2, dtype=np.uint32)
    n_codes = np.ones(2, dtype=np.int64)
    for rate in (0.0, (overlap - 0.5) / n_rows):  # budget below the overlap
        bundles, conflicts = find_bundles(source, [0, 1], n_codes, rate)
        assert sorted(bundles) == [[0], [1]] and conflicts == 0
        layout = build_layout(source, None, nbnm, MISSING_BIN, max_conflict_rate=rate)
        assert layout.feature_column[0] != layout.feature_column[1]
        assert layout.conflicts == 0
        for f in range(2):
            np.testing.assert_array_equal(decode_feature(layout, f), X[:, f])
    for rate in ((overlap + 0.5) / n_rows, 0.05, 0.2):
        budget = int(rate * n_rows)
        bundles, conflicts = find_bundles(source, [0, 1], n_codes, rate)
        assert bundles == [[0, 1]] and conflicts == overlap <= budget
        layout = build_layout(source, None, nbnm, MISSING_BIN, max_conflict_rate=rate)
        assert layout.feature_column[0] == layout.feature_column[1]
        assert layout.conflicts == overlap <= budget
        # on a shared row the feature with more entries (0) keeps its value
        np.testing.assert_array_equal(decode_feature(layout, 0), X[:, 0])
        seen = decode_feature(layout, 1)
        expected = X[:, 1].copy()
        expected[shared] = 0
        np.testing.assert_array_equal(seen, expected)


def test_sparse_storage_only_where_it_saves(monkeypatch):
    # Columns at most SPARSE_MAX_DENSITY off their default bin are stored sparse
    # only when together they save MIN_SPARSE_SAVING dense passes, each
    # counting 1 - density / SPARSE_MAX_DENSITY.
    monkeypatch.setattr(hgbt.data.bundling, "MIN_SPARSE_SAVING", MIN_SPARSE_SAVING)
    max_density = hgbt.data.bundling.SPARSE_MAX_DENSITY
    rng = np.random.default_rng(31)
    n_rows = 4000

    def layout_of(densities):
        n_cols = len(densities)
        X = np.zeros((n_rows, n_cols), dtype=np.uint8, order="F")
        for c, d in enumerate(densities):  # exactly round(d * n_rows) entries
            X[rng.permutation(n_rows)[:round(d * n_rows)], c] = 1
        source = DenseBins(X, np.zeros(n_cols, np.uint8), MISSING_BIN)
        return build_layout(source, None, np.full(n_cols, 2, np.uint32), MISSING_BIN,
                            enable_bundle=False)

    # a few 5-15% columns (the real tables' genre and flag columns): dense
    assert layout_of([0.06, 0.08, 0.1, 0.12, 0.14]).is_plain
    # a column above the density limit never counts, however many
    assert layout_of([1.01 * max_density] * 100).is_plain
    # just short of the saving, and just past it
    d = max_density / 2  # each column saves 1/2
    n_short = int(np.ceil(2 * MIN_SPARSE_SAVING)) - 1
    assert layout_of([d] * n_short).is_plain
    layout = layout_of([d] * (n_short + 1) + [0.9])
    assert layout.n_dense == 1 and layout.n_columns == n_short + 2
    # many rare columns (one-hot levels, word counts): sparse
    assert layout_of([0.01] * 40).n_dense == 0


def test_dense_features_give_the_plain_layout():
    rng = np.random.default_rng(12)
    X = np.asfortranarray(rng.integers(0, 255, (800, 5)).astype(np.uint8))
    X[rng.random(X.shape) < 0.03] = MISSING_BIN
    default = np.array([0, 100, 254, 17, 128], dtype=np.uint8)
    nbnm = np.full(5, 255, dtype=np.uint32)
    source = DenseBins(X, default, MISSING_BIN)
    for enable in (True, False):
        layout = build_layout(source, None, nbnm, MISSING_BIN, enable_bundle=enable)
        assert layout.is_plain and layout.X_dense is X
        np.testing.assert_array_equal(layout.default_bin, default)
        np.testing.assert_array_equal(layout.column_width, nbnm)
        np.testing.assert_array_equal(layout.feature_column, np.arange(5))
    # sparse categorical features are neither bundled nor stored sparse
    X, _ = one_hot_bins(rng, 800, 10, 2)
    source = DenseBins(X, np.zeros(10, np.uint8), MISSING_BIN)
    nbnm = np.full(10, 2, dtype=np.uint32)
    assert build_layout(source, np.ones(10, bool), nbnm, MISSING_BIN).is_plain
    # the same features as numeric ones are bundled
    assert not build_layout(source, None, nbnm, MISSING_BIN).is_plain
    # unbundled but sparse enough: stored sparse, each alone
    layout = build_layout(source, None, nbnm, MISSING_BIN, enable_bundle=False)
    assert layout.n_bundles == 0 and layout.n_dense == 0 and layout.n_columns == 10
    check_layout_invariants(layout, X)
    for f in range(10):
        np.testing.assert_array_equal(decode_feature(layout, f), X[:, f])


def test_bundle_codes_fit_the_histograms_of_small_max_bins():
    # With max_bins=8 the missing bin is 8 and histograms have 9 bins, so a
    # bundle may use codes 1..8 only; 12 exclusive one-hot features (one code
    # each) need two bundles (or fewer members), not codes up to 12.
    rng = np.random.default_rng(13)
    X, _ = one_hot_bins(rng, 1200, 12)
    missing_bin = 8
    nbnm = np.full(12, 2, dtype=np.uint32)
    layout = build_layout(DenseBins(X, np.zeros(12, np.uint8), missing_bin), None,
                          nbnm, missing_bin)
    assert layout is not None
    for f in range(12):
        np.testing.assert_array_equal(decode_feature(layout, f), X[:, f])
    assert layout.bundle_codes.max() <= missing_bin
    assert all_column_codes(layout).max() <= missing_bin


def sparse_raw_matrix(rng, n_rows=1500):
    """A CSC matrix of raw values: one-hot, counts, negative values, a dense
    column, explicit NaN and explicit stored zeros; every column non-empty."""
    level = rng.integers(0, 15, n_rows)
    onehot = np.zeros((n_rows, 12))
    on = level < 12
    onehot[np.flatnonzero(on), level[on]] = 1.0
    onehot[(level >= 12) & (rng.random(n_rows) < 0.2), 0] = np.nan
    counts = rng.poisson(0.1, (n_rows, 3)).astype(float)
    signed = np.where(rng.random((n_rows, 2)) < 0.06,
                      rng.choice([-2.0, -1.5, -1.0, 1.0, 2.5], (n_rows, 2)), 0.0)
    dense = rng.normal(size=(n_rows, 1))
    X = np.hstack([onehot, counts, signed, dense])
    A = sp.coo_matrix(X)
    # explicit zeros at some implicit-zero positions
    zr, zc = np.nonzero(X == 0)
    pick = rng.choice(zr.size, 300, replace=False)
    A = sp.coo_matrix((np.r_[A.data, np.zeros(300)], (np.r_[A.row, zr[pick]],
                                                      np.r_[A.col, zc[pick]])),
                      shape=X.shape).tocsc()
    A.sum_duplicates()  # canonical, as the estimator's CSC is (stored zeros stay)
    assert (A.data == 0).sum() == 300 and np.isnan(A.data).any()
    return A


@pytest.mark.parametrize("enable_bundle,rate", [(True, 0.0), (True, 0.1), (False, 0.0)])
def test_dense_and_sparse_sources_give_identical_layouts(enable_bundle, rate):
    rng = np.random.default_rng(14)
    A = sparse_raw_matrix(rng)
    dense = A.toarray()
    mapper = BinMapper(max_bins=64).fit(A)
    zero_bins, missing_bin = mapper.zero_bins(), mapper.missing_bin
    assert np.any(zero_bins != 0)  # the signed columns
    sparse_source = SparseBins(A, bin_stored_entries(A, mapper, 2), zero_bins,
                                 missing_bin)
    X_binned = mapper.transform(dense)
    dense_source = DenseBins(X_binned, zero_bins, missing_bin)
    np.testing.assert_array_equal(sparse_source.nnz, dense_source.nnz)
    np.testing.assert_array_equal(sparse_source.has_missing, dense_source.has_missing)
    for f in range(A.shape[1]):
        for a, b in zip(sparse_source.entries(f), dense_source.entries(f)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sparse_source.dense_column(f), X_binned[:, f])
    layouts = [build_layout(s, None, mapper.n_bins_non_missing_, missing_bin,
                            enable_bundle=enable_bundle, max_conflict_rate=rate)
               for s in (sparse_source, dense_source)]
    a, b = layouts
    assert isinstance(a, FeatureLayout) and isinstance(b, FeatureLayout)
    n_arrays = 0
    for field in dataclasses.fields(FeatureLayout):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            n_arrays += 1
            assert x.dtype == y.dtype and x.shape == y.shape, field.name
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert x == y, field.name
    assert n_arrays >= 9
    if enable_bundle:
        assert a.n_bundles >= 1
    if rate == 0.0:
        assert a.conflicts == 0
        check_layout_invariants(a, X_binned, missing_bin)
        for f in range(A.shape[1]):
            np.testing.assert_array_equal(decode_feature(a, f), X_binned[:, f])


def test_feature_codes_translate_tables(mixed):
    X, default, nbnm, groups, layout = mixed
    rng = np.random.default_rng(15)
    for f in range(X.shape[1]):
        col = column_codes(layout, layout.feature_column[f])
        for _ in range(3):
            goes_left = rng.integers(0, 2, 256).astype(np.uint8)
            before = goes_left.copy()
            table = layout.feature_codes(f, goes_left)
            np.testing.assert_array_equal(goes_left, before)  # input left alone
            assert table.shape == (256,)
            # a row goes left by its column's code iff it does by its own bin
            np.testing.assert_array_equal(table[col], goes_left[X[:, f]])
        # threshold tables with missing values on either side
        for b in (0, default[f], int(nbnm[f]) - 1):
            for missing_left in (0, 1):
                goes_left = np.zeros(256, dtype=np.uint8)
                goes_left[:b + 1] = 1
                goes_left[MISSING_BIN] = missing_left
                table = layout.feature_codes(f, goes_left)
                np.testing.assert_array_equal(table[col], goes_left[X[:, f]])


# -------------------------------------------------- LocalTrainingData with a layout
def node_totals(g, h, rows):
    G = g[rows].astype(np.float64).sum()
    H = np.float64(h[0]) * rows.size if h.size == 1 else h[rows].astype(np.float64).sum()
    return rows.size, G, H


@pytest.mark.parametrize("histogram_layout", ["col_wise", "row_wise"])
@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_local_training_data_with_layout_equals_plain(mixed, constant_hessian, n_threads,
                                                      histogram_layout):
    # row_wise: the bundled layout's dense columns by rows (multi-value bins)
    X, default, nbnm, groups, layout = mixed
    rng = np.random.default_rng(16)
    n_rows = X.shape[0]
    g0, h0 = grid_gradients(rng, n_rows)
    if constant_hessian:
        h0 = np.array([1.0], dtype=G_H_DTYPE)
    plain = LocalTrainingData(X, N_BINS, n_threads)
    laid = LocalTrainingData(layout, N_BINS, n_threads, histogram_layout=histogram_layout)
    # the bins split finding reads: value bins and the missing bin
    feature_bins = used_bins(nbnm, N_BINS)
    assert laid.n_features == plain.n_features == X.shape[1]
    signed, wide, onehot = groups["signed"][2], groups["wide"][0], groups["onehot"][0]
    # (node, feature, bin, missing left) on bundled, sparse-alone and dense
    # features; the split on node 5 sends the default bin (3) right
    splits = [(0, signed, 3, 1), (1, wide, 70, 0), (3, onehot, 0, 1),
              (5, groups["signed"][0], 2, 0), (2, groups["continuous"][0], 50, 1),
              (4, groups["busy"][0], 1, 0)]
    # all rows, a large bagging sample and a small one (small nodes: sparse
    # columns are partitioned by a search per row rather than a scatter)
    for rows in (None, np.sort(rng.choice(n_rows, 2400, replace=False)),
                 np.sort(rng.choice(n_rows, 300, replace=False))):
        g1, g2 = g0.copy(), g0.copy()
        h1, h2 = h0.copy(), h0.copy()
        plain.use_gradients(g1, h1)
        laid.use_gradients(g2, h2)
        plain.start_tree(0, rows)
        laid.start_tree(0, rows)
        np.testing.assert_array_equal(g1, g2)
        hists = {}

        def check(node):
            node_rows = plain.node_rows(node).copy()
            np.testing.assert_array_equal(laid.node_rows(node), node_rows)
            expected = plain.node_histogram(node)
            got = laid.node_histogram(node)
            assert got.shape == (layout.n_columns, N_BINS)
            assert_hist_equal(unpack_histograms(layout, got, *node_totals(g1, h1,
                                                                          node_rows)),
                              expected, feature_bins)
            assert_hist_equal(expected, reference_histogram(X, node_rows, g1, h1, N_BINS))
            hists[node] = expected, got

        check(0)
        next_id, non_trivial = 1, 0
        for node, f, b, missing_left in splits:
            left, right = next_id, next_id + 1
            next_id += 2
            n_plain = plain.split(node, left, right, f, b, missing_left)
            n_laid = laid.split(node, left, right, f, b, missing_left)
            assert n_plain == n_laid <= len(plain.node_rows(node))
            non_trivial += 0 < n_plain < len(plain.node_rows(node))
            check(left)
            # the right child by subtraction, from each data's own histograms
            parent_plain, parent_laid = hists[node]
            sib_plain = plain.sibling_histogram(parent_plain, hists[left][0])
            sib_laid = laid.sibling_histogram(parent_laid, hists[left][1])
            check(right)
            assert sib_plain.tobytes() == hists[right][0].tobytes()
            column_bins = used_bins(layout.column_width, N_BINS)
            assert_hist_equal(sib_laid, hists[right][1], column_bins)
            assert_hist_equal(unpack_histograms(layout, sib_laid, *node_totals(
                g1, h1, plain.node_rows(right))), sib_plain, feature_bins)
        assert non_trivial >= len(splits) - 2
        # the leaves hold every row of the tree, each once
        leaves = [n for n in range(next_id) if n not in {s[0] for s in splits}]
        held = np.concatenate([laid.node_rows(n) for n in leaves])
        expected_rows = np.arange(n_rows) if rows is None else rows
        np.testing.assert_array_equal(np.sort(held), expected_rows)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_dense_source_entries_match_numpy(n_threads):
    # column_stats / column_entries against flatnonzero: default bins other
    # than 0, the missing bin, empty and full columns.
    from hgbt.data._bundling import column_entries, column_stats

    rng = np.random.default_rng(7)
    n, n_features = 3001, 9
    X = rng.integers(0, 6, (n, n_features)).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.6] = 2
    X[rng.random((n, n_features)) < 0.01] = MISSING_BIN
    X[:, 3] = 2           # no entries
    X[:, 4] = 5           # every row an entry
    X[:, 5] = np.where(np.arange(n) % 2, 2, MISSING_BIN)
    X = np.asfortranarray(X)
    default = np.full(n_features, 2, dtype=np.uint8)
    default[7] = 0
    source = DenseBins(X, default, MISSING_BIN, n_threads)
    for f in range(n_features):
        rows = np.flatnonzero(X[:, f] != default[f])
        assert source.nnz[f] == rows.size
        assert source.has_missing[f] == np.any(X[:, f] == MISSING_BIN)
        got_rows, got_codes = source.entries(f)
        assert got_rows.dtype == np.uint32 and got_codes.dtype == np.uint8
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_array_equal(got_codes, X[rows, f])
    with pytest.raises(ValueError, match="entries"):
        column_entries(X, 0, 2, source.nnz[0] - 1)
    with pytest.raises(ValueError, match="default_bin"):
        column_stats(X, default[:3], MISSING_BIN, 1)


def _set_reference_bundles(source, candidates, n_codes, max_conflict_rate, max_codes):
    """find_bundles written with Python sets: most entries first, first fit
    within the last SEARCH_WINDOW bundles opened."""
    from hgbt.data.bundling import SEARCH_WINDOW

    budget = int(max_conflict_rate * source.n_rows)
    bundles, used, conflicts, rows_of = [], [], [], {}
    for f in sorted(candidates, key=lambda f: (-source.nnz[f], f)):
        rows = set(source.entries(f)[0].tolist())
        for b in range(max(0, len(bundles) - SEARCH_WINDOW), len(bundles)):
            c = len(rows_of[b] & rows)
            if used[b] + n_codes[f] <= max_codes and c <= budget - conflicts[b]:
                bundles[b].append(f)
                used[b] += n_codes[f]
                conflicts[b] += c
                rows_of[b] |= rows
                break
        else:
            bundles.append([f])
            used.append(n_codes[f])
            conflicts.append(0)
            rows_of[len(bundles) - 1] = rows
    return bundles, sum(conflicts)


@pytest.mark.parametrize("n_features", [40, 300])
@pytest.mark.parametrize("rate", [0.0, 0.01, 0.1])
def test_find_bundles_matches_set_reference(n_features, rate):
    from hgbt.data.bundling import SEARCH_WINDOW

    rng = np.random.default_rng(n_features)
    n = 2000
    density = rng.uniform(0.001, 0.3, n_features)
    X = ((rng.random((n, n_features)) < density)
         * rng.integers(1, 5, (n, n_features))).astype(np.uint8)
    source = DenseBins(np.asfortranarray(X), np.zeros(n_features, np.uint8), MISSING_BIN)
    n_codes = rng.integers(1, 40, n_features)
    got = find_bundles(source, list(range(n_features)), n_codes, rate, 200)
    assert got == _set_reference_bundles(source, range(n_features), n_codes, rate, 200)
    if n_features == 300 and rate == 0.0:
        assert len(got[0]) > SEARCH_WINDOW  # the window slides
