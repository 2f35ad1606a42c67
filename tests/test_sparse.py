"""scipy.sparse input at the estimator level: a sparse matrix means exactly its
``toarray()``, so every fit and prediction must equal the dense one (same
trees, node for node), whatever the format, dtypes and layout path."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import OneHotEncoder

import hgbt.data.bundling
from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.data.binning import BinMapper
from hgbt.data.sparse import as_csr
from hgbt.data.thresholds import column_thresholds, find_thresholds
from test_bundling import sparse_storage_at_any_saving  # noqa: F401 (autouse)
from fitted import all_trees, baseline_prediction, layout_of

N_FEATURES = 16
ONEHOT = list(range(2, 12))   # columns of the one-hot block
SIGNED = 15                    # sparse with negative values (zero bin not bin 0)


# ----------------------------------------------------------------- helpers
def make_task(n=2000, seed=0):
    """Dense X with a dense block (0, 1), an exclusive one-hot block (2-11), a
    count block (12-14) and a signed sparse column (15); explicit NaN in
    columns 0, 2 (only on rows without a level: still exclusive) and 12.
    Values are float32-representable. Returns X, a regression target and the
    one-hot level of each row (10, 11: none)."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(n, 2))
    dense[rng.random((n, 2)) < 0.3] = 0.0
    level = rng.integers(0, 12, n)
    onehot = np.zeros((n, 10))
    on = level < 10
    onehot[np.flatnonzero(on), level[on]] = 1.0
    counts = rng.poisson(0.25, (n, 3)).astype(float)
    signed = np.where(rng.random(n) < 0.1, rng.choice([-3.0, -1.0, 2.0, 4.0], n), 0.0)
    X = np.column_stack([dense, onehot, counts, signed]).astype(np.float32).astype(float)
    nan0 = rng.random(n) < 0.05
    X[nan0, 0] = np.nan
    X[(level >= 10) & (rng.random(n) < 0.4), 2] = np.nan
    X[rng.random(n) < 0.03, 12] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.8 * counts[:, 0] + np.where(on, level % 3, -1.0)
         - 0.5 * signed + 2.0 * nan0 + 0.1 * rng.normal(size=n))
    assert X.shape[1] == N_FEATURES
    return X, y, level


def to_csr(X, rng, n_zeros=200):
    """Canonical CSR of X (NaN stored) with explicit stored zeros (0.0 and -0.0)
    at some implicit-zero positions."""
    A = sp.coo_matrix(X)
    zr, zc = np.nonzero(X == 0)
    pick = rng.choice(zr.size, n_zeros, replace=False)
    zeros = np.zeros(n_zeros)
    zeros[::2] = -0.0
    A = sp.coo_matrix((np.r_[A.data, zeros], (np.r_[A.row, zr[pick]],
                                              np.r_[A.col, zc[pick]])),
                      shape=X.shape).tocsr()
    A.sum_duplicates()
    assert (A.data == 0).sum() == n_zeros and np.isnan(A.data).any()
    np.testing.assert_array_equal(A.toarray(), X)
    return A


def trees(model):
    return all_trees(model)


def assert_same_model(a, b):
    ta, tb = trees(a), trees(b)
    assert len(ta) == len(tb) > 0
    for x, y in zip(ta, tb):
        # field by field: categorical nodes hold a NaN threshold (NaN == NaN here)
        for name in x.nodes.dtype.names:
            np.testing.assert_array_equal(x.nodes[name], y.nodes[name], err_msg=name)
        np.testing.assert_array_equal(x.cat_bitsets, y.cat_bitsets)
    np.testing.assert_array_equal(baseline_prediction(a), baseline_prediction(b))
    assert a.n_iter_ == b.n_iter_


def n_splits(model):
    return sum(int((t.nodes["is_leaf"] == 0).sum()) for t in trees(model))


@pytest.fixture(scope="module")
def task():
    X, y, level = make_task()
    A = to_csr(X, np.random.default_rng(1))
    return X, A, y, level


def targets(kind, y):
    if kind == "regression":
        return y
    if kind == "binary":
        return np.where(y > np.median(y), "yes", "no")
    return np.digitize(y, np.quantile(y, [0.33, 0.66]))


def estimator(kind, **params):
    params = {"max_iter": 12, "random_state": 0, "early_stopping": False, **params}
    if kind == "regression":
        return HistGBDTRegressor(**params)
    return HistGBDTClassifier(**params)


def assert_same_predictions(a, X_a, b, X_b):
    np.testing.assert_array_equal(a.predict(X_a), b.predict(X_b))
    if hasattr(a, "predict_proba"):
        np.testing.assert_array_equal(a.predict_proba(X_a), b.predict_proba(X_b))


# -------------------------------------------------- the layout is exercised
def test_task_is_bundled_and_stored_sparse(task):
    X, A, y, _ = task
    model = estimator("regression").fit(A, y)
    layout = layout_of(model, A, 1)
    assert not layout.is_plain
    assert layout.n_bundles >= 1 and layout.conflicts == 0
    assert layout.n_columns < N_FEATURES
    assert layout.n_dense < layout.n_columns  # some columns stored sparse
    assert len(set(layout.feature_column[ONEHOT])) < len(ONEHOT)
    assert layout.default_bin[SIGNED] > 0
    # the dense input gives the very same layout
    dense_layout = layout_of(model, X, 1)
    assert dense_layout.columns == layout.columns
    np.testing.assert_array_equal(dense_layout.X_dense, layout.X_dense)
    np.testing.assert_array_equal(dense_layout.sparse_codes, layout.sparse_codes)


# -------------------------------------------------- dense vs sparse models
SETTINGS = {
    "plain": {},
    "int_weights": {"weights": "int"},
    "float_weights": {"weights": "float"},
    "bagging": {"subsample": 0.7},
    "early_stopping": {"early_stopping": True, "validation_fraction": 0.2,
                       "n_iter_no_change": 3, "max_iter": 30},
}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_dense_and_sparse_fits_are_identical(task, kind, setting):
    X, A, y, _ = task
    y = targets(kind, y)
    params = dict(SETTINGS[setting])
    weights = params.pop("weights", None)
    rng = np.random.default_rng(2)
    sample_weight = None
    if weights == "int":
        sample_weight = rng.integers(0, 4, X.shape[0])
    elif weights == "float":
        sample_weight = rng.uniform(0.1, 3.0, X.shape[0])
        sample_weight[:50] = 0.0
    dense = estimator(kind, **params).fit(X, y, sample_weight=sample_weight)
    sparse = estimator(kind, **params).fit(A, y, sample_weight=sample_weight)
    assert n_splits(dense) > 0
    assert_same_model(dense, sparse)
    assert_same_predictions(dense, X, sparse, A)
    assert_same_predictions(dense, X, sparse, X)  # either input on either model
    assert_same_predictions(dense, A[:100], sparse, X[:100])  # the small-input path
    if setting == "early_stopping":
        assert dense.validation_score_.size > 0
        np.testing.assert_array_equal(dense.validation_score_, sparse.validation_score_)
        np.testing.assert_array_equal(dense.train_score_, sparse.train_score_)


OPTIONS = [
    ("regression", dict(data_sample_strategy="goss")),
    ("regression", dict(colsample_bytree=0.7, colsample_bynode=0.5)),
    ("regression", dict(monotonic_cst=[1] + [0] * 14 + [-1])),
    ("regression", dict(interaction_cst=[[0, 1, 2, 3], [4, 5, 6, 12, 13, 15],
                                         [7, 8, 9, 10, 11, 14]])),
    ("regression", dict(grow_policy="depthwise", max_depth=3, l1_regularization=0.5,
                        l2_regularization=1.0)),
    ("regression", dict(loss="quantile", quantile=0.3, subsample=0.6)),
    ("binary", dict(class_weight="balanced")),
]


@pytest.mark.parametrize("kind,params", OPTIONS)
def test_other_training_options_dense_equals_sparse(task, kind, params):
    X, A, y, _ = task
    y = targets(kind, y)
    dense = estimator(kind, **params).fit(X, y)
    sparse = estimator(kind, **params).fit(A, y)
    assert n_splits(dense) > 0
    assert_same_model(dense, sparse)
    assert_same_predictions(dense, X, sparse, A)


def test_large_fit_equals_dense_and_unbundled_single_thread():
    # 40,000 rows: node histograms and partitions of the sparse columns take
    # their multi-threaded paths with n_threads=2
    X, y, _ = make_task(n=40_000, seed=10)
    A = to_csr(X, np.random.default_rng(11), n_zeros=2000)
    dense = estimator("regression", max_iter=4, n_threads=2).fit(X, y)
    sparse = estimator("regression", max_iter=4, n_threads=2).fit(A, y)
    plain = estimator("regression", max_iter=4, n_threads=1, enable_bundle=False).fit(A, y)
    assert_same_model(dense, sparse)
    assert_same_model(dense, plain)
    np.testing.assert_array_equal(sparse.predict(A), dense.predict(X))


def test_explicit_sparse_validation_set(task):
    X, A, y, _ = task
    fit = dict(X_val=X[1500:], y_val=y[1500:])
    dense = estimator("regression", early_stopping=True).fit(X[:1500], y[:1500], **fit)
    sparse = estimator("regression", early_stopping=True).fit(
        A[:1500], y[:1500], X_val=A[1500:], y_val=y[1500:])
    assert_same_model(dense, sparse)
    np.testing.assert_array_equal(dense.validation_score_, sparse.validation_score_)


def quantile_matrix(rng, n=3000):
    """Columns with far more distinct values than max_bins, many zeros, NaN and
    negative values; stored zeros included."""
    X = rng.normal(size=(n, 4)) * np.array([1.0, 10.0, 0.01, 3.0])
    X[rng.random((n, 4)) < np.array([0.5, 0.2, 0.8, 0.05])] = 0.0
    X[rng.random((n, 4)) < 0.03] = np.nan
    X[:, 3] = np.abs(X[:, 3])  # only non-negative values: zero is the smallest
    return X, to_csr(X, rng, n_zeros=300)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("weights", [None, "constant", "varying", "integer"])
def test_bin_mapper_subsample_greedy_sparse_equal_dense(fmt, weights):
    rng = np.random.default_rng(3)
    X, A = quantile_matrix(rng)
    A = A.asformat(fmt)
    sample_weight = None
    if weights == "constant":
        sample_weight = np.full(X.shape[0], 2.5)
        sample_weight[rng.random(X.shape[0]) < 0.2] = 0.0
    elif weights == "varying":
        sample_weight = rng.uniform(0.0, 2.0, X.shape[0])
    elif weights == "integer":
        sample_weight = rng.integers(0, 5, X.shape[0]).astype(float)
    max_bins = 32
    dense = BinMapper(max_bins=max_bins, subsample=500, random_state=0).fit(
        X, sample_weight=sample_weight)
    sparse = BinMapper(max_bins=max_bins, subsample=500, random_state=0).fit(
        A, sample_weight=sample_weight)
    rows = dense.sample_rows(X.shape[0])
    assert rows is not None and rows.size == 500
    for f in range(X.shape[1]):
        sample = X[rows, f]
        assert np.unique(sample[~np.isnan(sample)]).size > max_bins  # greedy regime
        np.testing.assert_array_equal(sparse.bin_thresholds_[f], dense.bin_thresholds_[f])
    np.testing.assert_array_equal(sparse.n_bins_non_missing_, dense.n_bins_non_missing_)
    np.testing.assert_array_equal(sparse.zero_bins(), dense.zero_bins())


COLUMNS = {  # stored values (NaN allowed) and the number of implicit zeros
    "few_distinct": ([3.0, -1.0, 3.0, 2.5, -1.0], 10),
    "stored_zeros": ([0.0, -0.0, 1.0, 0.0, -2.0], 6),
    "no_implicit_zero": ([1.0, 2.0, 2.0, 5.0], 0),
    "nan": ([np.nan, 1.0, np.nan, -4.0], 3),
    "one_value": ([7.0, 7.0], 0),
    "one_value_and_zeros": ([7.0, 7.0], 4),
    "quantiles": (list(np.random.default_rng(12).normal(size=300)), 500),
    "quantiles_no_zero": (list(np.random.default_rng(13).uniform(1, 2, size=300)), 0),
    "empty": ([], 40),
    "nan_only": ([np.nan, np.nan], 40),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_column_thresholds_equal_dense_thresholds(name):
    values, n_zeros = COLUMNS[name]
    values = np.array(values, dtype=np.float64)
    dense = np.concatenate([values, np.zeros(n_zeros)])
    for max_bins in (4, 32, 255):
        expected = find_thresholds(dense, max_bins)
        np.testing.assert_array_equal(column_thresholds(values.copy(), n_zeros, max_bins),
                                      expected)


def test_as_csr_is_canonical_and_copies_only_when_needed(task):
    X, A, y, _ = task
    assert as_csr(A) is A  # canonical CSR: no copy
    B = non_canonical(A, np.random.default_rng(14))
    before = snapshot(B)
    C = as_csr(B)
    assert C.format == "csr" and C.has_canonical_format
    for row in range(0, C.shape[0], 97):
        cols = C.indices[C.indptr[row]:C.indptr[row + 1]]
        assert np.all(np.diff(cols) > 0)
    np.testing.assert_array_equal(C.toarray(), B.toarray())
    for a, b in zip(before, snapshot(B)):
        np.testing.assert_array_equal(a, b)
    D = as_csr(B.tocsc())
    assert D.format == "csr" and D.has_canonical_format
    np.testing.assert_array_equal(D.toarray(), B.toarray())


# -------------------------------------------------- bundling on and off
@pytest.mark.parametrize("sparse_input", [False, True])
def test_bundling_off_gives_the_same_model(task, sparse_input):
    X, A, y, _ = task
    data = A if sparse_input else X
    bundled = estimator("regression", max_iter=15).fit(data, y)
    unbundled = estimator("regression", max_iter=15, enable_bundle=False).fit(data, y)
    assert layout_of(bundled, data, 1).n_bundles >= 1
    assert layout_of(unbundled, data, 1).n_bundles == 0
    assert_same_model(bundled, unbundled)
    assert_same_predictions(bundled, A, unbundled, X)


def conflicting_flags(rng, n=2000, n_flags=30):
    """Random flags that share rows (5% each), and a target driven by them."""
    F = (rng.random((n, n_flags)) < 0.05).astype(float)
    y = F @ rng.normal(size=n_flags) + 0.1 * rng.normal(size=n)
    return F, y


def test_conflict_rate_bundles_conflicting_features_and_still_learns():
    rng = np.random.default_rng(4)
    F, y = conflicting_flags(rng)
    A = sp.csr_matrix(F)
    strict = estimator("regression", max_iter=30).fit(A, y)
    loose = estimator("regression", max_iter=30, max_conflict_rate=0.2).fit(A, y)
    strict_layout = layout_of(strict, A, 1)
    layout = layout_of(loose, A, 1)
    assert strict_layout.conflicts == 0
    assert layout.conflicts > 0
    assert layout.n_columns < strict_layout.n_columns
    budget = int(0.2 * F.shape[0])
    assert layout.conflicts <= budget * max(layout.n_bundles, 1)
    for data in (A, F):
        pred = loose.predict(data)
        assert np.all(np.isfinite(pred))
    assert r2_score(y, loose.predict(A)) > 0.5
    np.testing.assert_array_equal(loose.predict(A), loose.predict(F))


@pytest.mark.parametrize("sparse_input", [False, True])
def test_plain_dense_path_equals_layout_path(task, sparse_input, monkeypatch):
    X, A, y, _ = task
    data = A if sparse_input else X
    y = targets("multiclass", y)
    with_layout = estimator("multiclass", subsample=0.8).fit(data, y)
    assert not layout_of(with_layout, data, 1).is_plain
    monkeypatch.setattr(hgbt.data.bundling, "SPARSE_MAX_DENSITY", -1.0)
    plain = estimator("multiclass", subsample=0.8, enable_bundle=False).fit(data, y)
    layout = layout_of(plain, data, 1)
    assert layout.is_plain and layout.X_dense.shape == X.shape
    assert_same_model(with_layout, plain)
    assert_same_predictions(with_layout, A, plain, X)


# -------------------------------------------------- one-hot and missing values
def test_one_hot_encoded_categorical_is_learnt():
    rng = np.random.default_rng(5)
    n = 3000
    level = rng.integers(0, 40, n)
    effect = rng.normal(size=40) * 3
    x = rng.normal(size=n)
    y = effect[level] + 0.5 * x + 0.05 * rng.normal(size=n)
    encoded = OneHotEncoder(sparse_output=True).fit_transform(level[:, None])
    A = sp.hstack([encoded, sp.csr_matrix(x[:, None])], format="csr")
    X = A.toarray()
    params = dict(max_iter=80, learning_rate=0.3, min_samples_leaf=5)
    sparse = estimator("regression", **params).fit(A[:2400], y[:2400])
    dense = estimator("regression", **params).fit(X[:2400], y[:2400])
    assert_same_model(dense, sparse)
    layout = layout_of(sparse, A[:2400], 1)
    assert len(set(layout.feature_column[:40])) < 10  # the 40 levels share columns
    np.testing.assert_array_equal(sparse.predict(A[2400:]), dense.predict(X[2400:]))
    assert r2_score(y[2400:], sparse.predict(A[2400:])) > 0.95
    importances = sparse.feature_importances_
    assert importances.shape == (41,) and np.count_nonzero(importances[:40]) >= 20


def route(nodes, row):
    """Leaf value of a dense row by walking the nodes (as lists): NaN follows
    missing_go_to_left, other values go left when <= num_threshold."""
    i = 0
    while not nodes["is_leaf"][i]:
        x = row[nodes["feature_idx"][i]]
        if np.isnan(x):
            left = nodes["missing_go_to_left"][i]
        else:
            left = x <= nodes["num_threshold"][i]
        i = nodes["left"][i] if left else nodes["right"][i]
    return nodes["value"][i]


def test_stored_nan_follows_the_missing_direction():
    rng = np.random.default_rng(6)
    n = 2000
    X = np.where(rng.random((n, 3)) < 0.3, rng.uniform(-1, 1, (n, 3)), 0.0)
    missing = rng.random(n) < 0.1
    X[missing, 0] = np.nan
    y = np.where(missing, 10.0, X[:, 0] + X[:, 1])
    A = sp.csr_matrix(X)
    assert np.isnan(A.data).sum() == missing.sum()
    model = estimator("regression", max_iter=40, learning_rate=0.3).fit(A, y)
    assert_same_model(model, estimator("regression", max_iter=40,
                                       learning_rate=0.3).fit(X, y))
    pred = model.predict(A)
    np.testing.assert_allclose(pred[missing], 10.0, atol=0.3)
    assert np.abs(pred[~missing] - y[~missing]).mean() < 0.3
    # a row's prediction is the baseline plus the leaves its NaN routes reach
    as_lists = [{name: t.nodes[name].tolist() for name in t.nodes.dtype.names}
                for t in trees(model)]
    assert any(f == 0 and not leaf for t in as_lists
               for f, leaf in zip(t["feature_idx"], t["is_leaf"]))
    rows = np.r_[np.flatnonzero(missing), np.flatnonzero(~missing)[:100]]
    routed = [baseline_prediction(model)[0] + sum(route(t, X[i]) for t in as_lists)
              for i in rows]
    np.testing.assert_allclose(pred[rows], routed, rtol=1e-12, atol=1e-12)


# -------------------------------------------------- accepted input forms
@pytest.fixture(scope="module")
def dense_reference(task):
    X, A, y, _ = task
    return estimator("regression").fit(X, y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("container", ["csr_matrix", "csc_matrix", "coo_matrix",
                                       "csr_array", "csc_array", "coo_array"])
def test_every_accepted_form_equals_dense(task, dense_reference, container, dtype):
    X, A, y, _ = task
    B = getattr(sp, container)(A.astype(dtype))
    assert B.dtype == dtype and (B.data == 0).any() and np.isnan(B.data).any()
    model = estimator("regression").fit(B, y)
    assert_same_model(dense_reference, model)
    expected = dense_reference.predict(X)
    np.testing.assert_array_equal(model.predict(B), expected)
    np.testing.assert_array_equal(model.predict(getattr(sp, container)(A[:50])),
                                  expected[:50])


@pytest.mark.parametrize("container", ["csr_matrix", "csc_array"])
def test_int64_indices_equal_dense(task, dense_reference, container):
    X, A, y, _ = task
    B = getattr(sp, container)(A)
    B.indices = B.indices.astype(np.int64)
    B.indptr = B.indptr.astype(np.int64)
    assert B.indices.dtype == B.indptr.dtype == np.int64
    model = estimator("regression").fit(B, y)
    assert_same_model(dense_reference, model)
    np.testing.assert_array_equal(model.predict(B), dense_reference.predict(X))


def non_canonical(A, rng, fmt="csr"):
    """A with extra duplicate entries and shuffled indices within rows
    (columns for CSC); duplicates add up in toarray()."""
    A = A.asformat(fmt)
    coo = A.tocoo()
    dup = rng.choice(coo.nnz, coo.nnz // 5, replace=False)
    extra = rng.choice([-1.0, 0.5, 2.0, 0.0], dup.size)
    B = sp.coo_matrix((np.r_[coo.data, extra], (np.r_[coo.row, coo.row[dup]],
                                                 np.r_[coo.col, coo.col[dup]])),
                      shape=A.shape)
    if fmt == "coo":
        return B
    B = B.asformat(fmt)  # keeps the duplicates
    for i in range(B.indptr.size - 1):
        s, e = B.indptr[i], B.indptr[i + 1]
        p = s + rng.permutation(e - s)
        B.indices[s:e], B.data[s:e] = B.indices[p], B.data[p]
    B.has_sorted_indices = False
    B.has_canonical_format = False
    return B


def snapshot(B):
    parts = ((B.data, B.row, B.col) if B.format == "coo"
             else (B.data, B.indices, B.indptr))
    return [p.copy() for p in parts]


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_non_canonical_input_means_its_toarray_and_is_left_alone(task, fmt):
    X, A, y, _ = task
    rng = np.random.default_rng(7)
    B = non_canonical(A, rng, fmt)
    dense = B.toarray()
    assert not np.array_equal(dense, X, equal_nan=True)  # the duplicates added up
    before = snapshot(B)
    model = estimator("binary").fit(B, targets("binary", y))
    reference = estimator("binary").fit(dense, targets("binary", y))
    assert_same_model(reference, model)
    np.testing.assert_array_equal(model.predict_proba(B), reference.predict_proba(dense))
    np.testing.assert_array_equal(model.predict(B[:30] if fmt != "coo" else B.tocsr()[:30]),
                                  reference.predict(dense[:30]))
    after = snapshot(B)
    for a, b in zip(before, after):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
@pytest.mark.parametrize("fmt", ["lil", "dok", "bsr", "dia"])
def test_unsupported_formats_raise(task, fmt):
    X, A, y, _ = task
    small = sp.csr_matrix(np.nan_to_num(X[:200])[:, :4])  # few diagonals for DIA
    fitted = estimator("binary", max_iter=2).fit(X[:200, :4], targets("binary", y[:200]))
    for B in (small.asformat(fmt), sp.csr_array(small).asformat(fmt)):
        assert B.format == fmt
        for call in (lambda: estimator("regression").fit(B, y[:200]),
                     lambda: estimator("binary").fit(B, targets("binary", y[:200])),
                     lambda: fitted.predict(B), lambda: fitted.predict_proba(B)):
            with pytest.raises(TypeError) as info:
                call()
            message = str(info.value)
            assert "sparse" in message and "tocsr" in message


# -------------------------------------------------- prediction methods
@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_classifier_prediction_methods_accept_sparse(task, kind):
    X, A, y, _ = task
    y = targets(kind, y)
    model = estimator(kind).fit(A, y)
    for rows in (slice(None), slice(0, 40)):  # per-tree and forest paths
        Xs, As = X[rows], A[rows]
        np.testing.assert_array_equal(model.predict(As), model.predict(Xs))
        np.testing.assert_array_equal(model.predict_proba(As), model.predict_proba(Xs))
        np.testing.assert_array_equal(model.decision_function(As),
                                      model.decision_function(Xs))
        for method in ("staged_predict", "staged_predict_proba",
                       "staged_decision_function"):
            staged_sparse = list(getattr(model, method)(As))
            staged_dense = list(getattr(model, method)(Xs))
            assert len(staged_sparse) == len(staged_dense) == model.n_iter_
            for a, b in zip(staged_sparse, staged_dense):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(staged_sparse[-1], getattr(
            model, method.replace("staged_", ""))(Xs))
    assert accuracy_score(y, model.predict(A)) > 0.7


def test_regressor_staged_predict_accepts_sparse(task):
    X, A, y, _ = task
    model = estimator("regression").fit(A, y)
    staged = list(model.staged_predict(A))
    assert len(staged) == model.n_iter_
    for a, b in zip(staged, model.staged_predict(X)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(staged[-1], model.predict(A))


# -------------------------------------------------- categorical features
def test_categorical_feature_stored_sparse_equals_dense():
    rng = np.random.default_rng(8)
    n = 2500
    X = np.where(rng.random((n, 3)) < 0.4, rng.normal(size=(n, 3)), 0.0)
    codes = np.where(rng.random(n) < 0.55, 0, rng.integers(1, 9, n)).astype(float)
    codes[rng.random(n) < 0.03] = np.nan
    X[:, 1] = codes
    effect = rng.normal(size=9) * 2
    y = effect[np.nan_to_num(codes, nan=0).astype(int)] + X[:, 0] + 0.1 * rng.normal(size=n)
    A = sp.csr_matrix(X)
    assert np.isnan(A.data).any()
    params = dict(categorical_features=[1], max_iter=15)
    sparse = estimator("regression", **params).fit(A, y)
    dense = estimator("regression", **params).fit(X, y)
    assert_same_model(dense, sparse)
    np.testing.assert_array_equal(sparse.is_categorical_, [False, True, False])
    assert any(t.nodes["is_categorical"][t.nodes["is_leaf"] == 0].any()
               for t in trees(sparse))
    # prediction with unseen, negative and non-integer codes, and category 0
    T = X[:300].copy()
    T[:, 1] = rng.choice([0, 0, 3, 8, 9, 12, -1, 2.5, np.nan], 300)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(T)), dense.predict(T))
    assert r2_score(y, sparse.predict(A)) > 0.8


# -------------------------------------------------- warm start, importances, pickle
def test_warm_start_with_sparse_input(task):
    X, A, y, _ = task
    params = dict(subsample=0.8, warm_start=True)
    sparse = estimator("regression", max_iter=6, **params).fit(A, y)
    sparse.set_params(max_iter=12).fit(A, y)
    dense = estimator("regression", max_iter=6, **params).fit(X, y)
    dense.set_params(max_iter=12).fit(X, y)
    one_shot = estimator("regression", max_iter=12, subsample=0.8).fit(A, y)
    assert sparse.n_iter_ == 12
    assert_same_model(dense, sparse)
    assert_same_model(one_shot, sparse)
    np.testing.assert_array_equal(sparse.predict(A), dense.predict(X))


def test_feature_importances_per_original_feature(task):
    X, A, y, _ = task
    for importance_type in ("gain", "split"):
        sparse = estimator("regression", importance_type=importance_type).fit(A, y)
        dense = estimator("regression", importance_type=importance_type).fit(X, y)
        importances = sparse.feature_importances_
        assert importances.shape == (N_FEATURES,)
        assert layout_of(sparse, A, 1).n_columns < N_FEATURES
        np.testing.assert_array_equal(importances, dense.feature_importances_)
        assert importances.sum() == pytest.approx(1.0)
        # bundled one-hot features and the signed sparse feature are used
        assert np.count_nonzero(importances[ONEHOT]) >= 2 and importances[SIGNED] > 0


def test_pickle_round_trip_of_a_sparse_fit(task):
    X, A, y, _ = task
    model = estimator("multiclass").fit(A, targets("multiclass", y))
    clone = pickle.loads(pickle.dumps(model))
    for data in (A, A[:20], X):
        np.testing.assert_array_equal(clone.predict_proba(data), model.predict_proba(data))
        np.testing.assert_array_equal(clone.predict(data), model.predict(data))


# -------------------------------------------------- columns without values
@pytest.mark.parametrize("column", ["empty", "nan_only"])
def test_sparse_column_without_stored_values_equals_dense(task, column):
    # A column with no stored entry (all zeros, e.g. an unseen one-hot level)
    # or with only NaN stored is an ordinary constant column of the dense X.
    X, A, y, _ = task
    X = X.copy()
    X[:, 5] = 0.0
    if column == "nan_only":
        X[::7, 5] = np.nan
    B = sp.csr_matrix(X)
    assert B[:, [5]].nnz == (0 if column == "empty" else X[::7].shape[0])
    dense = estimator("regression").fit(X, y)
    sparse = estimator("regression").fit(B, y)
    assert_same_model(dense, sparse)
    np.testing.assert_array_equal(sparse.predict(B), dense.predict(X))


def test_bundling_with_small_max_bins_keeps_the_unbundled_model():
    # 12 exclusive one-hot features fill 12 bundle codes, more than the 9 bins
    # (8 values + missing) of a max_bins=8 histogram.
    rng = np.random.default_rng(9)
    n = 3000
    level = rng.integers(0, 12, n)
    X = np.zeros((n, 13))
    X[np.arange(n), level] = 1.0
    X[:, 12] = rng.normal(size=n)
    y = (level % 5) + X[:, 12] + 0.1 * rng.normal(size=n)
    for data in (X, sp.csr_matrix(X)):
        bundled = estimator("regression", max_bins=8).fit(data, y)
        unbundled = estimator("regression", max_bins=8, enable_bundle=False).fit(data, y)
        assert_same_model(bundled, unbundled)
        np.testing.assert_array_equal(bundled.predict(X), unbundled.predict(X))
