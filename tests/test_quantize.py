"""Quantized gradients: the rounding kernel, the packed histogram kernel
(against brute-force sums and the float kernel) and quantized fits."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.tree._histogram import build_histogram, build_histogram_packed, build_histogram_root
from hgbt.tree._quantize import leaf_sums, quantize_gradients
from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE
from hgbt.tree.training_data import packed_lanes, padded_row_major, quantize_exponents
from fitted import baseline_prediction

EMPTY = np.empty(0, dtype=G_H_DTYPE)
LAYOUT = packed_lanes(16, False)  # levels within ±8 and [0, 16]


def quantize(g, h, g_exp, h_exp, seed=7, n_threads=2, layout=LAYOUT):
    n = g.shape[0]
    gq, hq, packed = (np.empty(n, G_H_DTYPE), np.empty(n, G_H_DTYPE),
                      np.empty(n, np.int64))
    quantize_gradients(g, h, g_exp, h_exp, *layout[:2], seed, gq, hq, packed, n_threads)
    return gq, hq, packed


def unpack(packed, layout=LAYOUT):
    # (gradient, hessian, count) lanes of packed values or sums of them
    h_shift, g_shift, _ = layout
    return (packed >> g_shift, (packed >> h_shift) & ((1 << (g_shift - h_shift)) - 1),
            packed & ((1 << h_shift) - 1))


def gradients(n, seed=0, constant_hessian=False):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=n).astype(G_H_DTYPE)
    h = (np.full(1, 0.5, G_H_DTYPE) if constant_hessian
         else rng.uniform(0.0, 2.0, size=n).astype(G_H_DTYPE))
    return g, h


# ------------------------------------------------------------ rounding kernel
def test_quantized_values_are_neighbouring_grid_points():
    g, h = gradients(50_000)
    gq, hq, packed = quantize(g, h, 3, 4)
    for raw, q, scale in ((g, gq, 2.0**-3), (h, hq, 2.0**-4)):
        k = q / scale
        np.testing.assert_array_equal(k, np.round(k))  # on the grid
        assert np.all(np.abs(q.astype(np.float64) - raw) < scale)  # floor or ceil
    # packed = g_q * 2**g_shift + h_q * 2**h_shift + 1
    for lane, want in zip(unpack(packed), ((gq * 8).astype(np.int64),
                                           (hq * 16).astype(np.int64), 1)):
        np.testing.assert_array_equal(lane, want)


def test_stochastic_rounding_is_unbiased():
    g = np.full(400_000, 0.3, dtype=G_H_DTYPE)  # 0.3 * 2 = 0.6 levels
    h = np.full(400_000, 0.75, dtype=G_H_DTYPE)
    gq, hq, _ = quantize(g, h, 1, 0)
    assert set(np.unique(gq)) == {0.0, 0.5}
    assert abs(gq.mean() - 0.3) < 0.003
    assert abs(hq.mean() - 0.75) < 0.003


def test_gradient_and_hessian_draws_are_independent():
    # The two draws of a row hash the same (seed, row) with different seeds:
    # they must not round its gradient and hessian up together more often
    # than chance.
    n = 400_000
    g = np.full(n, -0.25, dtype=G_H_DTYPE)  # -0.5 levels: -1 or 0 equally often
    h = np.full(n, 0.5, dtype=G_H_DTYPE)  # 0.5 levels
    gq, hq, _ = quantize(g, h, 1, 0)
    g_up, h_up = gq == 0.0, hq == 1.0
    assert abs(g_up.mean() - 0.5) < 0.005 and abs(h_up.mean() - 0.5) < 0.005
    assert abs(np.corrcoef(g_up, h_up)[0, 1]) < 0.01


def test_values_on_the_grid_are_kept():
    # floor(x + u) with u in [0, 1) leaves grid points alone, negative ones too.
    g = np.array([-3.0, -0.5, 0.0, 0.5, 2.5] * 1000, dtype=G_H_DTYPE)
    h = np.array([0.0, 0.5, 1.0, 1.5, 3.0] * 1000, dtype=G_H_DTYPE)
    gq, hq, _ = quantize(g, h, 1, 1)
    np.testing.assert_array_equal(gq, g)
    np.testing.assert_array_equal(hq, h)


def test_rounding_depends_on_seed_and_row_not_threads():
    g, h = gradients(100_003)
    ref = quantize(g, h, 2, 3, seed=11, n_threads=1)
    for n_threads in (2, 3):
        for a, b in zip(ref, quantize(g, h, 2, 3, seed=11, n_threads=n_threads)):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(ref[0], quantize(g, h, 2, 3, seed=12)[0])


def test_rounding_by_global_row_index_splits_into_shards():
    # A Dask shard quantizes its rows by their index among all rows: the
    # values of the whole, shard by shard; a one-row shard's hessian is
    # quantized, not taken as a constant
    g, h = gradients(1000)
    whole = quantize(g, h, 2, 3, seed=5)
    ids = np.arange(1000, dtype=np.int64)
    for rows in (ids[:1], ids[1:400], ids[400:400], ids[400:]):
        n = rows.shape[0]
        gq, hq, packed = (np.empty(n, G_H_DTYPE), np.empty(n, G_H_DTYPE),
                          np.empty(n, np.int64))
        quantize_gradients(g[rows], h[rows], 2, 3, *LAYOUT[:2], 5, gq, hq, packed, 2,
                           rows, 0)
        for part, full in zip((gq, hq, packed), whole):
            np.testing.assert_array_equal(part, full[rows])
    with pytest.raises(ValueError, match="row_ids"):
        quantize_gradients(g, h, 2, 3, *LAYOUT[:2], 5, *[np.empty(1000, t) for t in
                           (G_H_DTYPE, G_H_DTYPE, np.int64)], 1, ids[:10])


def test_constant_hessian_leaves_hessian_lane_empty():
    g, h = gradients(1000, constant_hessian=True)
    layout = packed_lanes(16, True)
    gq, hq, packed = quantize(g, h, 2, 0, layout=layout)
    g_lane, h_lane, count = unpack(packed, layout)
    np.testing.assert_array_equal(g_lane, (gq * 4).astype(np.int64))
    np.testing.assert_array_equal(h_lane, 0)
    np.testing.assert_array_equal(count, 1)


@pytest.mark.parametrize("n_levels", [2, 3, 16, 17, 255, 1024])
@pytest.mark.parametrize("constant_hessian", [False, True])
def test_packed_layout_holds_worst_case_block_sums(n_levels, constant_hessian):
    h_shift, g_shift, rows = layout = packed_lanes(n_levels, constant_hessian)
    g_max, h_max = -(-n_levels // 2), 0 if constant_hessian else n_levels
    for g, h in ((g_max, h_max), (-g_max, h_max), (-g_max, 0), (g_max, 0)):
        one = (g << g_shift) + (h << h_shift) + 1  # Python ints: no overflow
        total = rows * one
        assert -2**63 <= total < 2**63
        assert tuple(int(v) for v in unpack(np.int64(total), layout)) == (
            rows * g, rows * h, rows)
    assert rows >= 8192


def test_exponents_keep_levels_within_bins():
    g, h = gradients(10_000)
    for bins in (2, 4, 16, 255):
        g_exp, h_exp = quantize_exponents(g, h, bins)
        assert np.abs(g).max() * 2.0**g_exp <= bins / 2 < np.abs(g).max() * 2.0**(g_exp + 1)
        assert h.max() * 2.0**h_exp <= bins < h.max() * 2.0**(h_exp + 1)
        gq, hq, _ = quantize(g, h, g_exp, h_exp)
        assert np.abs(gq * 2.0**g_exp).max() <= np.ceil(bins / 2)
        assert (hq * 2.0**h_exp).max() <= bins and hq.min() >= 0


@pytest.mark.parametrize("bad, match", [
    (lambda g, h: (g, -h), "non-negative hessians"),
    (lambda g, h: (np.where(np.arange(g.size) == 3, np.nan, g).astype(G_H_DTYPE), h),
     "finite gradients"),
])
def test_exponents_reject_bad_gradients(bad, match):
    g, h = gradients(100)
    with pytest.raises(ValueError, match=match):
        quantize_exponents(*bad(g, h), 16)


def test_leaf_sums_match_numpy():
    rng = np.random.default_rng(3)
    g, h = gradients(5000)
    rows = rng.permutation(5000).astype(SIZE_DTYPE)
    starts = np.array([0, 10, 10, 2500], dtype=SIZE_DTYPE)
    stops = np.array([10, 10, 2500, 5000], dtype=SIZE_DTYPE)
    for hh in (h, np.full(1, 0.5, G_H_DTYPE)):
        sg, sh = np.empty(4), np.empty(4)
        leaf_sums(rows, starts, stops, g, hh, sg, sh, 2)
        for k in range(4):
            r = rows[starts[k]:stops[k]]
            np.testing.assert_allclose(sg[k], g[r].astype(np.float64).sum(), rtol=1e-12)
            want = h[r].astype(np.float64).sum() if hh.size > 1 else r.size * 0.5
            np.testing.assert_allclose(sh[k], want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------ packed histogram kernel
def packed_histogram(X, rows, packed, g_exp, h_exp, constant, n_threads, n_bins=256,
                     row_wise=None, block_rows=None, layout=LAYOUT, column_width=None):
    n, n_features = X.shape
    acc = np.full((3, n_features * 256), 77, np.int64)  # garbage: must be reset
    sums = np.full((3, n_features * 768), 5, np.int64)
    out = np.full((n_features, n_bins), 9, dtype=HISTOGRAM_DTYPE)
    h_shift, g_shift, rows_per_block = layout
    build_histogram_packed(X, rows, packed, g_exp, h_exp,
                           h_shift, g_shift, block_rows or rows_per_block, constant, acc,
                           sums, out, n_threads,
                           None if row_wise is None else row_wise(X), column_width)
    return out


@pytest.mark.parametrize("n_rows", [700, 20_000, None])
def test_packed_histogram_of_narrow_columns(n_rows):
    # Column f > 0 only has codes below width[f] and the missing bin: those bins
    # equal the float kernel's bit for bit, the others are left as they were
    # (column 0 is always whole: the grower reads node totals there).
    rng = np.random.default_rng(8)
    n, n_bins = 30_000, 256
    width = np.array([3, 1, 40, 7, 255, 2], dtype=np.uint16)
    X = np.empty((n, width.size), dtype=np.uint8, order="F")
    for f, w in enumerate(width):
        X[:, f] = rng.integers(0, w, n)
        X[rng.random(n) < 0.1, f] = n_bins - 1  # missing
    g, h = gradients(n)
    gq, hq, packed = quantize(g, h, 3, 4)
    rows = (None if n_rows is None
            else np.sort(rng.choice(n, n_rows, replace=False)).astype(SIZE_DTYPE))
    ref = np.empty((width.size, n_bins), dtype=HISTOGRAM_DTYPE)
    if rows is None:
        build_histogram_root(X, gq, hq, ref, 1)
    else:
        build_histogram(X, rows, gq, hq, np.empty(n, G_H_DTYPE), np.empty(n, G_H_DTYPE),
                        ref, 1)
    used = np.zeros((width.size, n_bins), dtype=bool)
    for f, w in enumerate(width):
        used[f, :n_bins - 1 if f == 0 else w] = True
        used[f, n_bins - 1] = True
    for n_threads in (1, 2):
        for block_rows in (None, 97):
            out = packed_histogram(X, rows, packed, 3, 4, 0.0, n_threads,
                                   block_rows=block_rows, column_width=width)
            assert out[used].tobytes() == ref[used].tobytes()
            assert np.all(out["count"][~used] == 9)  # not written


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_features", [1, 3, 13, 29])
@pytest.mark.parametrize("n_rows", [0, 1, 700, 1400, 20_000, None])
def test_packed_histogram_matches_brute_force_and_float_kernel(constant_hessian,
                                                               n_features, n_rows):
    rng = np.random.default_rng(n_features)
    n = 30_000
    X = np.asfortranarray(rng.integers(0, 256, (n, n_features), dtype=np.uint8))
    g, h = gradients(n, constant_hessian=constant_hessian)
    layout = packed_lanes(16, constant_hessian)
    gq, hq, packed = quantize(g, h, 3, 4, layout=layout)
    hq = h if constant_hessian else hq
    constant = float(h[0]) if constant_hessian else 0.0
    rows = (None if n_rows is None
            else np.sort(rng.choice(n, n_rows, replace=False)).astype(SIZE_DTYPE))
    idx = np.arange(n) if rows is None else rows.astype(np.intp)
    ref_float = np.empty((n_features, 256), dtype=HISTOGRAM_DTYPE)
    if rows is None:
        build_histogram_root(X, gq, hq, ref_float, 2)
    else:
        build_histogram(X, rows, gq, hq, np.empty(n, G_H_DTYPE), np.empty(n, G_H_DTYPE),
                        ref_float, 2)
    for n_threads in (1, 2, 3):
        # row_wise: nodes under 20% of the rows read the row-major copy,
        # as it is or with padded rows;
        # block_rows=97: parts of more rows are summed in flushed blocks;
        # 8000 with 20,000 rows on 3 threads: unflushed parts decoded apart
        for row_wise in (None, np.ascontiguousarray, padded_row_major):
            for block_rows in (None, 97, 8000):
                out = packed_histogram(X, rows, packed, 3, 4, constant, n_threads,
                                       row_wise=row_wise, block_rows=block_rows,
                                       layout=layout)
                assert out.tobytes() == ref_float.tobytes()  # bit for bit
    for f in range(n_features):  # brute force
        codes = X[idx, f].astype(np.intp)
        np.testing.assert_array_equal(out["count"][f], np.bincount(codes, minlength=256))
        want_g = np.zeros(256)
        np.add.at(want_g, codes, gq[idx].astype(np.float64))
        np.testing.assert_array_equal(out["sum_gradients"][f], want_g)


def test_packed_histogram_fewer_bins_and_bad_shapes():
    rng = np.random.default_rng(1)
    X = np.asfortranarray(rng.integers(0, 17, (5000, 4), dtype=np.uint8))
    g, h = gradients(5000)
    gq, hq, packed = quantize(g, h, 3, 4)
    out = packed_histogram(X, None, packed, 3, 4, 0.0, 2, n_bins=17)
    ref = np.empty((4, 17), dtype=HISTOGRAM_DTYPE)
    build_histogram_root(X, gq, hq, ref, 1)
    assert out.tobytes() == ref.tobytes()
    acc, sums = np.empty((2, 1024), np.int64), np.empty((2, 3072), np.int64)
    with pytest.raises(ValueError, match="256 columns"):
        build_histogram_packed(X, None, packed, 3, 4, *LAYOUT, 0.0,
                               np.empty((2, 10), np.int64), np.empty((2, 30), np.int64),
                               ref, 2)
    with pytest.raises(ValueError, match="three times"):
        build_histogram_packed(X, None, packed, 3, 4, *LAYOUT, 0.0, acc,
                               np.empty((2, 1024), np.int64), ref, 2)
    for bad_rows in (X[:, :3], X[:10]):
        with pytest.raises(ValueError, match="rows of X_binned"):
            build_histogram_packed(X, np.arange(3, dtype=SIZE_DTYPE), packed, 3,
                                   4, *LAYOUT, 0.0, acc, sums, ref, 2,
                                   np.ascontiguousarray(bad_rows))
    with pytest.raises(ValueError, match="one row per feature"):
        build_histogram_packed(X, None, packed, 3, 4, *LAYOUT, 0.0, acc, sums,
                               ref[:3], 2)
    with pytest.raises(ValueError, match="packed layout"):
        build_histogram_packed(X, None, packed, 3, 4, 20, 10, 100, 0.0, acc,
                               sums, ref, 2)


@pytest.mark.parametrize("n_features, stride", [
    (0, 1), (1, 1), (5, 8), (8, 8), (9, 16), (28, 32), (50, 64), (64, 64), (65, 128),
    (130, 192)])
def test_padded_row_major(n_features, stride):
    rng = np.random.default_rng(n_features)
    X = np.asfortranarray(rng.integers(0, 256, (1001, n_features), dtype=np.uint8))
    X_rows = padded_row_major(X)
    assert X_rows.shape == (1001, stride) and X_rows.flags.c_contiguous
    assert X_rows.ctypes.data % 64 == 0  # with the stride: no row straddles lines
    np.testing.assert_array_equal(X_rows[:, :n_features], X)
    assert not X_rows[:, n_features:].any()


# -------------------------------------------------------------- quantized fits
def binary_data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    X[rng.random(X.shape) < 0.05] = np.nan
    logit = X[:, 0] - 0.5 * np.nan_to_num(X[:, 1]) ** 2 + np.nan_to_num(X[:, 2] * X[:, 3])
    y = (rng.random(n) < 1 / (1 + np.exp(-np.nan_to_num(logit)))).astype(int)
    return X, y


def test_quantized_fit_is_thread_count_independent():
    X, y = binary_data()
    models = [HistGBDTClassifier(use_quantized_grad=True, max_iter=20, n_threads=t,
                                 early_stopping=False, random_state=0).fit(X, y)
              for t in (1, 2, 3)]
    for m in models[1:]:
        np.testing.assert_array_equal(models[0].decision_function(X), m.decision_function(X))


@pytest.mark.parametrize("Est, kwargs", [
    (HistGBDTClassifier, {}),
    (HistGBDTRegressor, {}),
    (HistGBDTRegressor, {"loss": "poisson"}),
])
def test_quantized_quality_close_to_float(Est, kwargs):
    X, y = binary_data(8000)
    if Est is HistGBDTRegressor:
        y = y + np.nan_to_num(X[:, 0]) ** 2 if "loss" not in kwargs else y
    train, test = slice(0, 6000), slice(6000, None)
    scores = []
    for quantized in (False, True):
        est = Est(use_quantized_grad=quantized, max_iter=60, early_stopping=False,
                  random_state=0, **kwargs).fit(X[train], y[train])
        scores.append(est.score(X[test], y[test]))
    assert scores[1] == pytest.approx(scores[0], abs=0.02)
    assert scores[1] != scores[0]  # the quantized model is a different model


def test_quantized_leaf_values_are_float_newton_values():
    X, y = binary_data(3000)
    est = HistGBDTRegressor(use_quantized_grad=True, num_grad_quant_bins=4, max_iter=1,
                            early_stopping=False, learning_rate=0.5,
                            l2_regularization=1.0, random_state=0).fit(X, y)
    raw = est._raw_predict(X)[0] - baseline_prediction(est)[0]
    # every leaf's value is -lr * sum(g) / (count + l2) of its own rows (g = pred - y)
    for value in np.unique(raw):
        rows = raw == value
        g = baseline_prediction(est)[0] - y[rows]
        # (float32 sums: where the gradients nearly cancel, a leaf near 0
        # keeps an absolute error of about float32's epsilon of |g| <= 1)
        np.testing.assert_allclose(value, -0.5 * g.sum() / (rows.sum() + 1.0),
                                   rtol=1e-6, atol=1e-7)


def test_quantized_dense_and_sparse_identical():
    sp = pytest.importorskip("scipy.sparse")
    X, y = binary_data(4000)
    X = np.where(np.abs(np.nan_to_num(X)) < 1.0, 0.0, X)
    kw = dict(use_quantized_grad=True, max_iter=15, early_stopping=False, random_state=0)
    dense = HistGBDTClassifier(**kw).fit(X, y)
    sparse = HistGBDTClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.decision_function(X), sparse.decision_function(X))


def test_quantized_with_sampling_and_multiclass_runs_deterministically():
    X, y = binary_data(3000)
    y3 = y + (np.nan_to_num(X[:, 4]) > 0.5)
    kw = dict(use_quantized_grad=True, max_iter=10, early_stopping=False, random_state=3,
              subsample=0.7)
    a = HistGBDTClassifier(n_threads=1, **kw).fit(X, y3).predict_proba(X)
    b = HistGBDTClassifier(n_threads=2, **kw).fit(X, y3).predict_proba(X)
    np.testing.assert_array_equal(a, b)


def test_quantized_rejects_bad_num_bins():
    X, y = binary_data(200)
    with pytest.raises(ValueError, match="num_grad_quant_bins"):
        HistGBDTClassifier(use_quantized_grad=True, num_grad_quant_bins=1).fit(X, y)
