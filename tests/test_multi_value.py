"""Row-wise multi-value bins (``hgbt.tree._multi_value``) against NumPy.

The builder's entries against a per-row list comprehension, the histograms
against ``np.bincount`` sums (gradients on the exact-sum grid, so compared
bit for bit), for arbitrary row orders, any number of threads, both slot
widths, narrow columns and fewer bins than 256.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._exact import snap_to_grid
from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE
from hgbt.core.exact import grid_exponent
from hgbt.data.bundling import FeatureLayout
from hgbt.tree._layout import build_node_histograms
from hgbt.tree._multi_value import build_multi_value, column_modes, slot_offsets
from hgbt.tree import training_data
from hgbt.tree.training_data import LocalTrainingData, MultiValueBins

from test_bundling import assert_hist_equal, reference_histogram, used_bins
from test_histogram import garbage_histogram, row_subsets
from test_sparse import assert_same_model


def skewed_codes(rng, n_rows, n_columns, n_bins, width):
    """Codes below each column's width or the missing bin, a third of the
    columns mostly one code (not always 0), some never off it."""
    X = np.empty((n_rows, n_columns), dtype=np.uint8, order="F")
    for c in range(n_columns):
        codes = rng.integers(0, width[c], n_rows)
        codes[rng.random(n_rows) < 0.1] = n_bins - 1  # missing
        if c % 3 == 1:
            codes = np.where(rng.random(n_rows) < 0.85, rng.integers(width[c]), codes)
        if c % 7 == 5:
            codes[:] = min(2, width[c] - 1)  # constant
        X[:, c] = codes
    return X


def on_grid(values):
    values = values.astype(G_H_DTYPE)
    snap_to_grid(values, grid_exponent(float(np.abs(values).max()), values.size), 1)
    return values


@pytest.fixture(params=[(256, 20), (17, 9), (256, 300)], ids=["256 bins", "17 bins",
                                                                "uint32 slots"])
def table(request):
    n_bins, n_columns = request.param
    rng = np.random.default_rng(n_bins + n_columns)
    width = rng.integers(1, n_bins, n_columns)
    width[::4] = n_bins - 1  # full columns
    n_rows = 1500 if n_columns > 100 else 6000
    X = skewed_codes(rng, n_rows, n_columns, n_bins, width)
    layout = FeatureLayout.plain(X, width)
    return rng, X, layout, n_bins


def test_entries_match_numpy(table):
    rng, X, layout, n_bins = table
    width = layout.column_width
    mode, mode_rows = column_modes(X, 2)
    counts = [np.bincount(X[:, c], minlength=256) for c in range(X.shape[1])]
    np.testing.assert_array_equal(mode, [c.argmax() for c in counts])
    np.testing.assert_array_equal(mode_rows, [c.max() for c in counts])
    offset = slot_offsets(width, n_bins)
    used = [n_bins - 1 if c == 0 or width[c] >= n_bins - 1 else width[c]
            for c in range(X.shape[1])]
    np.testing.assert_array_equal(np.diff(offset), np.array(used) + 1)
    indptr, slots = build_multi_value(X, mode, offset, width, n_bins, 2)
    assert slots.dtype == (np.uint32 if offset[-1] > 65536 else np.uint16)
    for r in rng.choice(X.shape[0], 200, replace=False):
        expected = [offset[c] + min(int(X[r, c]), used[c]) for c in range(X.shape[1])
                    if X[r, c] != mode[c]]
        np.testing.assert_array_equal(slots[indptr[r]:indptr[r + 1]], expected)


def multi_value_histogram(layout, n_bins, rows, g, h, n_threads):
    n = layout.X_dense.shape[0]
    index = np.zeros(n, dtype=SIZE_DTYPE)  # the node's rows first
    index[:len(rows)] = rows
    buffers = dict(layout=layout, rows=index,
                   buffer=np.empty(n, dtype=SIZE_DTYPE), gradients=g, hessians=h,
                   ordered_gradients=np.empty(n, dtype=G_H_DTYPE),
                   ordered_hessians=np.empty(n, dtype=G_H_DTYPE),
                   multi_value=MultiValueBins(layout, n_bins, n_threads).view(n_threads))
    out = garbage_histogram(layout.n_columns, n_bins)
    build_node_histograms(buffers, layout.n_features, 0, len(rows), out, n_threads)
    return out


@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_histograms_match_numpy(table, constant_hessian, n_threads):
    rng, X, layout, n_bins = table
    n = X.shape[0]
    g = on_grid(rng.standard_normal(n) * np.exp(rng.uniform(-3, 3, n)))
    h = (np.array([0.75], dtype=G_H_DTYPE) if constant_hessian
         else on_grid(rng.uniform(0.01, 3.0, n)))
    mask = used_bins(np.where(np.arange(X.shape[1]) == 0, n_bins - 1, layout.column_width),
                     n_bins)
    for rows in list(row_subsets(rng, n))[1:]:  # an empty node never reaches the kernel
        got = multi_value_histogram(layout, n_bins, rows, g, h, n_threads)
        expected = reference_histogram(X, rows, g, h, n_bins)
        assert_hist_equal(got, expected, mask)


def test_rows_scattered_over_threads_give_the_same_bits():
    # a large node split into 1, 2, 3 and 4 parts: bit-identical histograms
    rng = np.random.default_rng(5)
    n_bins, n = 256, 40000
    width = np.full(12, 255)
    X = skewed_codes(rng, n, 12, n_bins, width)
    layout = FeatureLayout.plain(X, width)
    g = on_grid(rng.standard_normal(n))
    h = on_grid(rng.uniform(0.1, 1.0, n))
    rows = np.sort(rng.choice(n, n // 2, replace=False))
    first = multi_value_histogram(layout, n_bins, rows, g, h, 1)
    for n_threads in (2, 3, 4):
        assert multi_value_histogram(layout, n_bins, rows, g, h,
                                     n_threads).tobytes() == first.tobytes()


# ------------------------------------------------------ whole fits, both layouts
def mixed_table(seed, n=3000):
    """Numeric columns with NaN, a mostly-zero column, a constant one and a
    categorical one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    X[rng.random((n, 8)) < 0.05] = np.nan
    X[:, 3] = np.where(rng.random(n) < 0.9, 0.0, X[:, 3])
    X[:, 5] = 1.0
    X[:, 6] = rng.integers(0, 12, n)
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) - (X[:, 6] % 3) + rng.standard_normal(n)
    return X, y, rng.uniform(0.1, 2.0, n)


@pytest.mark.parametrize("n_threads", [1, 2, 4])
@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass", "weighted"])
def test_row_wise_fit_equals_col_wise(kind, n_threads):
    X, y, w = mixed_table(7)
    params = dict(max_iter=12, early_stopping=False, n_threads=n_threads,
                  categorical_features=[6], random_state=0)
    fit_kw = {}
    if kind == "regression":
        cls = HistGBDTRegressor
    elif kind == "weighted":
        cls, fit_kw = HistGBDTRegressor, {"sample_weight": w}
        params.update(subsample=0.7)  # bagged rows: a tree's root is a sample
    else:
        cls = HistGBDTClassifier
        y = (y > 0).astype(int) if kind == "binary" else np.digitize(y, [-1, 0.5, 2])
    models = {layout: cls(histogram_layout=layout, **params).fit(X, y, **fit_kw)
              for layout in ("col_wise", "row_wise")}
    assert models["row_wise"].histogram_layout_ == "row_wise"
    assert models["col_wise"].histogram_layout_ == "col_wise"
    assert_same_model(models["col_wise"], models["row_wise"])


def test_auto_chooses_one_and_keeps_the_model():
    X, y, _ = mixed_table(8)
    auto = HistGBDTRegressor(max_iter=8, early_stopping=False, n_threads=2).fit(X, y)
    assert auto.histogram_layout_ in ("col_wise", "row_wise")
    forced = HistGBDTRegressor(max_iter=8, early_stopping=False, n_threads=2,
                               histogram_layout="col_wise").fit(X, y)
    assert_same_model(auto, forced)


def test_bundled_sparse_input_row_wise():
    # a CSR matrix whose one-hot columns are bundled and stored sparse: the
    # dense columns by rows, the sparse-stored ones by their own kernel
    rng = np.random.default_rng(9)
    n = 4000
    dense = rng.standard_normal((n, 4))
    onehot = np.eye(40)[rng.integers(0, 40, n)]
    X = sp.csr_matrix(np.hstack([dense, onehot]))
    y = dense[:, 0] + onehot[:, :5].sum(axis=1) + rng.standard_normal(n) * 0.1
    models = [HistGBDTRegressor(histogram_layout=layout, max_iter=10, early_stopping=False,
                                n_threads=2).fit(X, y) for layout in ("col_wise", "row_wise")]
    assert_same_model(*models)


@pytest.mark.parametrize("n_threads", [1, 2, 4])
@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("n_levels", [16, 1024])  # 1024: blocks of 8,192 rows
def test_packed_histograms_row_wise_equal_col_wise(n_threads, constant_hessian, n_levels):
    # packed quantized gradients: the row-wise integer sums decode to the
    # column-wise kernel's histograms, nodes above a block of rows included
    rng = np.random.default_rng(12)
    n, n_bins = 20000, 256
    width = rng.integers(2, 255, 10)
    X = skewed_codes(rng, n, 10, n_bins, width)
    layout = FeatureLayout.plain(X, width)
    g = rng.standard_normal(n).astype(G_H_DTYPE)
    h = (np.array([1.0], dtype=G_H_DTYPE) if constant_hessian
         else rng.uniform(0.1, 2.0, n).astype(G_H_DTYPE))
    mask = used_bins(np.where(np.arange(10) == 0, n_bins - 1, width), n_bins)
    sources = {layout_name: LocalTrainingData(layout, n_bins, n_threads,
                                              histogram_layout=layout_name)
               for layout_name in ("col_wise", "row_wise")}
    for source in sources.values():
        source.use_gradients(g.copy(), h.copy())
        source.start_tree(0, quantize=(n_levels, 7))
    for node, (f, b) in enumerate([(0, 100), (3, 40)]):
        hists = {name: s.node_histogram(node) for name, s in sources.items()}
        assert_hist_equal(hists["row_wise"], hists["col_wise"], mask)
        for s in sources.values():
            s.split(node, 2 * node + 1, 2 * node + 2, f, b, 1)
    for node in (1, 2, 3, 4):
        hists = {name: s.node_histogram(node) for name, s in sources.items()}
        assert_hist_equal(hists["row_wise"], hists["col_wise"], mask)


@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_quantized_fit_row_wise_equals_col_wise(n_threads):
    X, y, _ = mixed_table(10)
    models = [HistGBDTRegressor(histogram_layout=layout, use_quantized_grad=True,
                                max_iter=10, early_stopping=False, n_threads=n_threads,
                                categorical_features=[6], random_state=0).fit(X, y)
              for layout in ("col_wise", "row_wise")]
    assert models[1].histogram_layout_ == "row_wise"
    assert_same_model(*models)


def test_histogram_layout_is_validated():
    X, y, _ = mixed_table(11, n=200)
    with pytest.raises(ValueError, match="histogram_layout"):
        HistGBDTRegressor(histogram_layout="rows").fit(X, y)


def test_auto_reports_the_last_trees_layout(monkeypatch):
    # trees 2-5 are trials (row, col, col, row): a fit of two trees ends
    # row-wise, one of three column-wise; vector leaves have their own kernel
    monkeypatch.setattr(training_data, "MAX_ROW_WISE_SHARE", 1.0)  # always tried
    X, y, _ = mixed_table(12, n=1000)
    params = dict(early_stopping=False, n_threads=2)
    assert HistGBDTRegressor(max_iter=2, **params).fit(X, y).histogram_layout_ == "row_wise"
    assert HistGBDTRegressor(max_iter=3, **params).fit(X, y).histogram_layout_ == "col_wise"
    Y = np.column_stack([y, -y])
    vector = HistGBDTRegressor(max_iter=3, multi_strategy="multi_output_tree",
                               histogram_layout="row_wise", **params).fit(X, Y)
    assert vector.histogram_layout_ == "col_wise"


def _trial_source(times, threads=(2, 2, 2, 2, 2)):
    # a source whose five 'auto' trial trees took ``times`` seconds
    rng = np.random.default_rng(13)
    X = skewed_codes(rng, 3000, 6, 256, np.full(6, 255))
    source = LocalTrainingData(X, 256, 2)
    g = on_grid(rng.standard_normal(3000))
    source.use_gradients(g, np.array([1.0], dtype=G_H_DTYPE))
    for seconds, n_threads in zip(times, threads):
        source.start_tree(0)
        source._buffers()  # as grow_tree: row-wise trees make the bins
        source.n_threads = n_threads
        source._record_trial(seconds)
    source.start_tree(0)
    return source


def test_auto_keeps_the_faster_and_lets_the_bins_go():
    # TRIAL_ORDER: col (warm-up, not counted), row, col, col, row
    rows_faster = _trial_source([9.0, 1.0, 2.0, 2.0, 1.0])
    assert rows_faster.histogram_layout == "row_wise"
    assert rows_faster._multi_value._value is not None
    cols_faster = _trial_source([0.1, 2.0, 1.0, 1.0, 2.0])
    assert cols_faster.histogram_layout == "col_wise"
    assert cols_faster._multi_value._value is None and cols_faster._mv_view is None


def test_auto_skips_the_trials_where_rows_store_nearly_every_entry():
    # continuous columns without a dominant bin: by columns, no bins built
    rng = np.random.default_rng(15)
    X = np.asfortranarray(rng.integers(0, 255, (3000, 6)).astype(np.uint8))
    source = LocalTrainingData(X, 256, 2)
    source.use_gradients(on_grid(rng.standard_normal(3000)), np.array([1.0], G_H_DTYPE))
    source.start_tree(0)
    assert source._off_mode_share() > training_data.MAX_ROW_WISE_SHARE
    assert source._chosen == source.histogram_layout == "col_wise"
    assert source._multi_value._value is None


def test_auto_trials_start_again_when_the_threads_change():
    # a thread governor's round on 1 thread: the trials on 2 are not compared
    source = _trial_source([0.1, 1.0, 2.0, 2.0, 1.0], threads=(2, 2, 1, 2, 2))
    assert source._chosen is None  # still trying
    assert len(source._trials) == 3  # the warm-up, then two on 2 threads again


def test_bins_of_other_histograms_are_refused():
    # slots laid out for 256 bins, histograms of 64: a clear error, no write
    # past a column's row
    rng = np.random.default_rng(14)
    X = skewed_codes(rng, 500, 4, 64, np.full(4, 63))
    layout = FeatureLayout.plain(X, np.full(4, 255))
    n = X.shape[0]
    buffers = dict(layout=layout, rows=np.arange(n, dtype=SIZE_DTYPE),
                   buffer=np.empty(n, dtype=SIZE_DTYPE), gradients=np.ones(n, G_H_DTYPE),
                   hessians=np.ones(n, G_H_DTYPE),
                   ordered_gradients=np.empty(n, dtype=G_H_DTYPE),
                   ordered_hessians=np.empty(n, dtype=G_H_DTYPE),
                   multi_value=MultiValueBins(layout, 256, 1).view(1))
    with pytest.raises(ValueError, match="multi-value bins of other bins"):
        build_node_histograms(buffers, 4, 0, n, garbage_histogram(4, 64), 1)
