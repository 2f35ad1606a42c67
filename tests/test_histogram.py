"""Histogram kernels against brute-force NumPy sums."""
import numpy as np
import pytest

from hgbt.tree._histogram import build_histogram, build_histogram_root, subtract_histograms
from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE

N_BINS = 17  # 16 value bins + missing bin 16


def make_data(n_samples, n_features, seed, n_bins=N_BINS):
    rng = np.random.default_rng(seed)
    X = np.asfortranarray(rng.integers(0, n_bins, size=(n_samples, n_features),
                                       dtype=np.uint8))
    g = rng.normal(size=n_samples).astype(G_H_DTYPE)
    h = rng.uniform(0.1, 2.0, size=n_samples).astype(G_H_DTYPE)
    return rng, X, g, h


def reference(X, rows, g, h, n_bins):
    """Per feature per bin sums, in float64, from np.add.at."""
    rows = np.asarray(rows, dtype=np.intp)
    n_features = X.shape[1]
    sg = np.zeros((n_features, n_bins))
    sh = np.zeros((n_features, n_bins))
    cnt = np.zeros((n_features, n_bins), dtype=np.int64)
    for f in range(n_features):
        codes = X[rows, f].astype(np.intp)
        np.add.at(sg[f], codes, g[rows].astype(np.float64))
        if h.size == 1:
            sh[f] = np.bincount(codes, minlength=n_bins) * np.float64(h[0])
        else:
            np.add.at(sh[f], codes, h[rows].astype(np.float64))
        cnt[f] = np.bincount(codes, minlength=n_bins)
    return sg, sh, cnt


def assert_hist_close(hist, ref):
    sg, sh, cnt = ref
    np.testing.assert_array_equal(hist["count"], cnt)
    np.testing.assert_allclose(hist["sum_gradients"], sg, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(hist["sum_hessians"], sh, rtol=1e-12, atol=1e-9)


def garbage_histogram(n_cols, n_bins):
    """An output array the kernels must overwrite, not accumulate into."""
    out = np.empty((n_cols, n_bins), dtype=HISTOGRAM_DTYPE)
    out["sum_gradients"] = 123.0
    out["sum_hessians"] = -7.0
    out["count"] = 99
    return out


def run_rows(X, rows, g, h, n_threads, n_bins=N_BINS, garbage=True):
    out = (garbage_histogram(X.shape[1], n_bins) if garbage
           else np.empty((X.shape[1], n_bins), dtype=HISTOGRAM_DTYPE))
    og = np.full(max(len(rows), 1) + 3, np.nan, dtype=G_H_DTYPE)
    oh = np.full(max(len(rows), 1) + 3, np.nan, dtype=G_H_DTYPE)
    build_histogram(X, np.asarray(rows, dtype=SIZE_DTYPE), g, h, og, oh, out, n_threads)
    return out


def run_root(X, g, h, n_threads, n_bins=N_BINS):
    out = np.empty((X.shape[1], n_bins), dtype=HISTOGRAM_DTYPE)
    out["sum_gradients"] = 5.0
    out["count"] = 42
    build_histogram_root(X, g, h, out, n_threads)
    return out


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_root_matches_reference(constant_hessian, seed):
    rng, X, g, h = make_data(500, 4, seed)
    if constant_hessian:
        h = np.array([0.7], dtype=G_H_DTYPE)
    hist = run_root(X, g, h, 1)
    assert_hist_close(hist, reference(X, np.arange(500), g, h, N_BINS))


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_samples", [511, 512, 513, 2051])
def test_interleaved_sums_equal_exact_sums(constant_hessian, n_samples):
    # From 512 rows a feature is summed in interleaved copies; on the gradient
    # grid every order gives the exact sums, bit for bit, for root and rows.
    rng = np.random.default_rng(n_samples)
    skewed = np.where(rng.random((n_samples, 3)) < 0.8, 0,
                      rng.integers(0, N_BINS, size=(n_samples, 3)))
    X = np.asfortranarray(skewed.astype(np.uint8))
    g = (rng.integers(-2**20, 2**20, size=n_samples) * 2.0**-18).astype(G_H_DTYPE)
    h = (np.array([0.75], dtype=G_H_DTYPE) if constant_hessian
         else (rng.integers(1, 2**20, size=n_samples) * 2.0**-20).astype(G_H_DTYPE))
    sg, sh, cnt = reference(X, np.arange(n_samples), g, h, N_BINS)
    for hist in (run_root(X, g, h, 1), run_rows(X, np.arange(n_samples), g, h, 2)):
        np.testing.assert_array_equal(hist["count"], cnt)
        np.testing.assert_array_equal(hist["sum_gradients"], sg)
        np.testing.assert_array_equal(hist["sum_hessians"], sh)
    rows = rng.permutation(n_samples)[: 3 * n_samples // 4]
    hist = run_rows(X, rows, g, h, 1)
    sg, sh, cnt = reference(X, rows, g, h, N_BINS)
    np.testing.assert_array_equal(hist["count"], cnt)
    np.testing.assert_array_equal(hist["sum_gradients"], sg)
    np.testing.assert_array_equal(hist["sum_hessians"], sh)


@pytest.mark.parametrize("n_samples", [300, 2000])
def test_column_width_writes_only_used_bins(n_samples):
    # Column f > 0 gets its bins below column_width[f] and the missing bin;
    # the rest keep what they held. Column 0 is always whole.
    rng = np.random.default_rng(7)
    width = np.array([3, 5, 16, 2], dtype=np.uint16)
    X = np.asfortranarray(np.column_stack([
        np.where(rng.random(n_samples) < 0.1, N_BINS - 1, rng.integers(0, w, n_samples))
        for w in width]).astype(np.uint8))
    g = rng.normal(size=n_samples).astype(G_H_DTYPE)
    h = rng.uniform(0.1, 2.0, size=n_samples).astype(G_H_DTYPE)
    rows = rng.permutation(n_samples)[: 2 * n_samples // 3]
    for hist, used in ((garbage_histogram(4, N_BINS), np.arange(n_samples)),
                       (garbage_histogram(4, N_BINS), rows)):
        if used.size == n_samples:
            build_histogram_root(X, g, h, hist, 2, column_width=width)
        else:
            og, oh = np.empty(used.size, G_H_DTYPE), np.empty(used.size, G_H_DTYPE)
            build_histogram(X, used.astype(SIZE_DTYPE), g, h, og, oh, hist, 1,
                            column_width=width)
        sg, sh, cnt = reference(X, used, g, h, N_BINS)
        for f, w in enumerate(width):
            written = np.r_[np.arange(N_BINS - 1 if f == 0 else w), N_BINS - 1]
            np.testing.assert_array_equal(hist["count"][f, written], cnt[f, written])
            np.testing.assert_allclose(hist["sum_gradients"][f, written],
                                       sg[f, written], rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(hist["sum_hessians"][f, written],
                                       sh[f, written], rtol=1e-12, atol=1e-9)
            kept = np.setdiff1d(np.arange(N_BINS), written)
            assert np.all(hist["count"][f, kept] == 99)
            assert np.all(hist["sum_gradients"][f, kept] == 123.0)


def row_subsets(rng, n):
    yield np.array([], dtype=np.intp)                       # empty node
    yield np.array([rng.integers(n)])                       # single row
    yield rng.permutation(n)[: n // 3]                      # arbitrary, unsorted
    yield np.sort(rng.choice(n, n // 2, replace=False))     # sorted subset
    yield rng.permutation(n)                                # all rows, shuffled
    yield np.arange(n)[::-1]                                # reversed


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("seed", [3, 4])
def test_rows_match_reference(constant_hessian, seed):
    rng, X, g, h = make_data(400, 5, seed)
    if constant_hessian:
        h = np.array([1.3], dtype=G_H_DTYPE)
    for rows in row_subsets(rng, 400):
        hist = run_rows(X, rows, g, h, 1)
        assert_hist_close(hist, reference(X, rows, g, h, N_BINS))
        if rows.size == 0:
            assert np.all(hist["count"] == 0)
            assert np.all(hist["sum_gradients"] == 0)
            assert np.all(hist["sum_hessians"] == 0)
        else:
            assert np.all(hist["count"].sum(axis=1) == rows.size)


def test_single_row_exact():
    rng, X, g, h = make_data(50, 3, 5)
    hist = run_rows(X, [17], g, h, 1)
    for f in range(3):
        b = X[17, f]
        assert hist["count"][f, b] == 1 and hist["count"][f].sum() == 1
        assert hist["sum_gradients"][f, b] == np.float64(g[17])
        assert hist["sum_hessians"][f, b] == np.float64(h[17])


@pytest.mark.parametrize("n_samples,n_features", [(300, 3), (12_000, 4)])
def test_constant_hessian_equals_general_path(n_samples, n_features):
    rng, X, g, _ = make_data(n_samples, n_features, 6)
    h0 = np.float32(0.3)
    const = np.array([h0], dtype=G_H_DTYPE)
    full = np.full(n_samples, h0, dtype=G_H_DTYPE)
    for n_threads in (1, 2):
        a = run_root(X, g, const, n_threads)
        b = run_root(X, g, full, n_threads)
        # count * h0 is exact, and so is the running sum of n float32 copies
        np.testing.assert_array_equal(a["sum_hessians"],
                                      a["count"] * np.float64(h0))
        assert a.tobytes() == b.tobytes()
        rows = rng.permutation(n_samples)[: 2 * n_samples // 3]
        a = run_rows(X, rows, g, const, n_threads)
        b = run_rows(X, rows, g, full, n_threads)
        np.testing.assert_array_equal(a["sum_hessians"], a["count"] * np.float64(h0))
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("constant_hessian", [False, True])
def test_subtraction_gives_sibling(constant_hessian):
    rng, X, g, h = make_data(600, 4, 7)
    if constant_hessian:
        h = np.array([0.5], dtype=G_H_DTYPE)
    parent_rows = rng.permutation(600)[:450]
    mask = rng.random(parent_rows.size) < 0.4
    child_rows, sibling_rows = parent_rows[mask], parent_rows[~mask]
    parent = run_rows(X, parent_rows, g, h, 1)
    child = run_rows(X, child_rows, g, h, 1)
    direct = run_rows(X, sibling_rows, g, h, 1)
    out = np.empty_like(parent)
    out["count"] = 777
    subtract_histograms(parent, child, out)
    np.testing.assert_array_equal(out["count"], direct["count"])
    np.testing.assert_allclose(out["sum_gradients"], direct["sum_gradients"],
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out["sum_hessians"], direct["sum_hessians"],
                               rtol=1e-9, atol=1e-9)
    # also against the NumPy reference of the sibling
    ref_sibling = reference(X, sibling_rows, g, h, N_BINS)
    np.testing.assert_array_equal(out["count"], ref_sibling[2])
    np.testing.assert_allclose(out["sum_gradients"], ref_sibling[0],
                               rtol=1e-9, atol=1e-9)
    # root minus the whole parent = the rows outside the parent
    root = run_root(X, g, h, 1)
    rest = np.empty_like(root)
    subtract_histograms(root, parent, rest)
    outside = np.setdiff1d(np.arange(600), parent_rows)
    np.testing.assert_array_equal(rest["count"], reference(X, outside, g, h, N_BINS)[2])


@pytest.mark.parametrize("shape", [(3, 5), (40, 256)])  # one thread / split by rows
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_subtraction_exact_on_struct_fields(shape, n_threads):
    rng = np.random.default_rng(8)
    parent = np.zeros(shape, dtype=HISTOGRAM_DTYPE)
    child = np.zeros(shape, dtype=HISTOGRAM_DTYPE)
    parent["sum_gradients"] = rng.normal(size=shape)
    parent["sum_hessians"] = rng.uniform(size=shape)
    parent["count"] = rng.integers(10, 100, size=shape)
    child["sum_gradients"] = rng.normal(size=shape)
    child["sum_hessians"] = rng.uniform(size=shape)
    child["count"] = rng.integers(0, 10, size=shape)
    out = np.empty_like(parent)
    subtract_histograms(parent, child, out, None, n_threads)
    np.testing.assert_array_equal(out["sum_gradients"],
                                  parent["sum_gradients"] - child["sum_gradients"])
    np.testing.assert_array_equal(out["sum_hessians"],
                                  parent["sum_hessians"] - child["sum_hessians"])
    np.testing.assert_array_equal(out["count"], parent["count"] - child["count"])
    # column_width: only bins below the width and the last one are written
    width = rng.integers(0, shape[1] + 3, size=shape[0]).astype(np.uint16)
    narrow = np.zeros_like(parent)
    subtract_histograms(parent, child, narrow, width, n_threads)
    for f in range(shape[0]):
        used = np.zeros(shape[1], bool)
        used[:min(width[f], shape[1] - 1)] = used[-1] = True
        assert narrow[f][used].tobytes() == out[f][used].tobytes()
        assert not narrow[f][~used]["count"].any()


def test_subtraction_rejects_mismatched_shapes():
    parent = np.zeros((3, 5), dtype=HISTOGRAM_DTYPE)
    for bad in (np.zeros((2, 5), dtype=HISTOGRAM_DTYPE), np.zeros((3, 4), dtype=HISTOGRAM_DTYPE)):
        with pytest.raises(ValueError, match="same shape"):
            subtract_histograms(parent, bad, np.zeros_like(parent))
        with pytest.raises(ValueError, match="same shape"):
            subtract_histograms(parent, parent, bad)


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_samples,n_features", [(200, 3), (20_000, 4)])
def test_threads_bit_identical(constant_hessian, n_samples, n_features):
    # 20_000 x 4 = 80_000 >= 32_768: the parallel path is taken for n_threads=2
    n_bins = 256
    rng, X, g, h = make_data(n_samples, n_features, 9, n_bins=n_bins)
    if constant_hessian:
        h = np.array([0.25], dtype=G_H_DTYPE)
    r1 = run_root(X, g, h, 1, n_bins)
    r2 = run_root(X, g, h, 2, n_bins)
    assert r1.tobytes() == r2.tobytes()
    assert_hist_close(r1, reference(X, np.arange(n_samples), g, h, n_bins))
    rows = rng.permutation(n_samples)[: int(n_samples * 0.9)]
    a = run_rows(X, rows, g, h, 1, n_bins)
    b = run_rows(X, rows, g, h, 2, n_bins)
    assert a.tobytes() == b.tobytes()
    assert_hist_close(a, reference(X, rows, g, h, n_bins))


def test_ordered_buffers_hold_gathered_gradients():
    rng, X, g, h = make_data(100, 2, 10)
    rows = rng.permutation(100)[:37]
    out = np.empty((2, N_BINS), dtype=HISTOGRAM_DTYPE)
    og = np.zeros(100, dtype=G_H_DTYPE)
    oh = np.zeros(100, dtype=G_H_DTYPE)
    build_histogram(X, rows.astype(SIZE_DTYPE), g, h, og, oh, out, 1)
    np.testing.assert_array_equal(og[:37], g[rows])
    np.testing.assert_array_equal(oh[:37], h[rows])
