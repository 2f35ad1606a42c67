"""Tree prediction kernels against a pure-Python traversal of the node array."""
import math

import numpy as np
import pytest

from hgbt.tree._predictor import (add_leaf_values, nodes_from_grown, predict_add,
                                  predict_csr_add)
from hgbt.core._types import (BITSET_DTYPE, GROWN_NODE_DTYPE, NODE_DTYPE, SIZE_DTYPE)
from hgbt.tree.predictor import TreePredictor
from fitted import all_trees, baseline_prediction, rounds, tree_at


def random_tree(rng, n_features, X_pool, max_depth=6, leaf_prob=0.25):
    """A random node array (root = node 0), children appended in DFS order."""
    nodes = []

    def build(depth):
        idx = len(nodes)
        nodes.append(None)
        if depth >= max_depth or (depth > 0 and rng.random() < leaf_prob):
            nodes[idx] = dict(value=rng.normal(), depth=depth, is_leaf=1, count=rng.integers(1, 99))
            return idx
        f = int(rng.integers(n_features))
        r = rng.random()
        if r < 0.1:
            thr = np.inf
        elif r < 0.15:
            thr = -np.inf
        else:  # a value present in the data, so that x == threshold happens
            col = X_pool[:, f]
            col = col[~np.isnan(col)]
            thr = float(col[rng.integers(col.size)])
        rec = dict(value=rng.normal(), depth=depth, is_leaf=0, feature_idx=f,
                   num_threshold=thr, missing_go_to_left=int(rng.integers(2)),
                   gain=rng.random(), count=rng.integers(1, 99))
        nodes[idx] = rec
        rec["left"] = build(depth + 1)
        rec["right"] = build(depth + 1)
        return idx

    build(0)
    arr = np.zeros(len(nodes), dtype=NODE_DTYPE)
    for i, rec in enumerate(nodes):
        for k, v in rec.items():
            arr[k][i] = v
    return arr


def traverse(nodes, x):
    """Pure-Python traversal of one row."""
    i = 0
    while not nodes["is_leaf"][i]:
        v = float(x[int(nodes["feature_idx"][i])])
        if math.isnan(v):
            go_left = bool(nodes["missing_go_to_left"][i])
        else:
            go_left = v <= float(nodes["num_threshold"][i])
        i = int(nodes["left"][i] if go_left else nodes["right"][i])
    return float(nodes["value"][i])


def random_X(rng, n_samples, n_features):
    X = np.round(rng.normal(size=(n_samples, n_features)), 1)  # many ties
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.02] = np.inf
    X[rng.random(X.shape) < 0.02] = -np.inf
    return X


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_predict_add_matches_python_traversal(seed, dtype, order):
    rng = np.random.default_rng(seed)
    X = np.asarray(random_X(rng, 400, 5).astype(dtype), order=order)
    nodes = random_tree(rng, 5, X.astype(np.float64))
    expected = np.array([traverse(nodes, x) for x in X])
    base = rng.normal(size=400)
    out = base.copy()
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, base + expected)  # adds, one leaf value per row
    out0 = np.zeros(400)
    predict_add(nodes, X, out0, 1)
    np.testing.assert_array_equal(out0, expected)


def test_threshold_equality_goes_left_and_nan_follows_flag():
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, 10, 4.0, 1, 0.5, 1, 1, 2, 1.0, 0, 0, 0, 0, 0)  # a numeric node
    nodes[1]["value"], nodes[1]["is_leaf"] = -1.0, 1
    nodes[2]["value"], nodes[2]["is_leaf"] = 2.0, 1
    X = np.array([[9.0, 0.5], [9.0, np.nextafter(0.5, 1)], [9.0, np.nan],
                  [9.0, -np.inf], [9.0, np.inf]])
    out = np.zeros(5)
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, [-1.0, 2.0, -1.0, -1.0, 2.0])
    nodes[0]["missing_go_to_left"] = 0
    out = np.zeros(5)
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, [-1.0, 2.0, 2.0, -1.0, 2.0])
    # infinite threshold: every non-NaN value goes left, NaN follows the flag
    nodes[0]["num_threshold"] = np.inf
    out = np.zeros(5)
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, [-1.0, -1.0, 2.0, -1.0, -1.0])


def test_single_leaf_tree():
    nodes = np.zeros(1, dtype=NODE_DTYPE)
    nodes[0]["value"], nodes[0]["is_leaf"] = 3.5, 1
    X = np.full((7, 2), np.nan)
    out = np.arange(7, dtype=np.float64)
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, np.arange(7) + 3.5)


def test_non_contiguous_X():
    rng = np.random.default_rng(10)
    big = random_X(rng, 600, 10)
    X = big[::3, ::2]
    nodes = random_tree(rng, X.shape[1], X)
    out = np.zeros(X.shape[0])
    predict_add(nodes, X, out, 1)
    np.testing.assert_array_equal(out, [traverse(nodes, x) for x in X])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threads_identical_on_parallel_path(dtype):
    rng = np.random.default_rng(11)
    X = random_X(rng, 5000, 4).astype(dtype)  # >= 2048 rows: parallel path
    nodes = random_tree(rng, 4, X.astype(np.float64), max_depth=8)
    base = rng.normal(size=5000)
    o1, o2 = base.copy(), base.copy()
    predict_add(nodes, X, o1, 1)
    predict_add(nodes, X, o2, 2)
    assert o1.tobytes() == o2.tobytes()
    idx = rng.choice(5000, 300, replace=False)
    np.testing.assert_array_equal(
        o2[idx], base[idx] + np.array([traverse(nodes, X[i]) for i in idx]))


def test_tree_predictor_wrapper():
    rng = np.random.default_rng(12)
    X = random_X(rng, 300, 3)
    nodes = random_tree(rng, 3, X)
    pred = TreePredictor(nodes)
    expected = np.array([traverse(nodes, x) for x in X])
    np.testing.assert_array_equal(pred.predict(X), expected)
    np.testing.assert_array_equal(pred.predict(X, n_threads=2), expected)
    out = np.ones(300)
    res = pred.predict_add(X, out)
    assert res is out
    np.testing.assert_array_equal(out, 1.0 + expected)
    is_leaf = nodes["is_leaf"] == 1
    assert pred.n_leaves == int(is_leaf.sum())
    assert pred.max_depth == int(nodes["depth"].max())
    np.testing.assert_array_equal(pred.leaf_values, nodes["value"][is_leaf])
    # a full binary tree: leaves = internal nodes + 1
    assert pred.n_leaves == int((~is_leaf).sum()) + 1


def random_leaves(rng, n_samples, n_leaves, cover_all):
    rows = rng.permutation(n_samples).astype(SIZE_DTYPE)
    stops_all = np.sort(rng.choice(np.arange(1, n_samples), n_leaves - 1, replace=False))
    bounds = np.concatenate([[0], stops_all, [n_samples]])
    starts, stops = bounds[:-1].copy(), bounds[1:].copy()
    order = rng.permutation(n_leaves)  # leaves listed in any order
    starts, stops = starts[order], stops[order]
    if not cover_all:  # drop some leaves and shrink others: rows left untouched
        keep = rng.random(n_leaves) < 0.7
        starts, stops = starts[keep], stops[keep]
        stops = np.maximum(starts, stops - rng.integers(0, 3, size=stops.size))
    return rows, starts.astype(SIZE_DTYPE), stops.astype(SIZE_DTYPE)


@pytest.mark.parametrize("cover_all", [True, False])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_add_leaf_values_matches_numpy(cover_all, n_threads):
    rng = np.random.default_rng(13 + cover_all)
    n = 3000
    rows, starts, stops = random_leaves(rng, n, 40, cover_all)
    values = rng.normal(size=starts.size)
    base = rng.normal(size=n)
    expected = base.copy()
    for s, e, v in zip(starts, stops, values):
        expected[rows[s:e]] += v
    out = base.copy()
    add_leaf_values(out, rows, starts, stops, values, n_threads)
    np.testing.assert_array_equal(out, expected)
    if not cover_all:
        touched = np.zeros(n, dtype=bool)
        for s, e in zip(starts, stops):
            touched[rows[s:e]] = True
        assert (~touched).any()
        np.testing.assert_array_equal(out[~touched], base[~touched])


def test_add_leaf_values_empty_leaves():
    rows = np.arange(5, dtype=SIZE_DTYPE)
    out = np.zeros(5)
    add_leaf_values(out, rows, np.array([2, 0], dtype=SIZE_DTYPE),
                    np.array([2, 5], dtype=SIZE_DTYPE), np.array([100.0, 1.5]), 1)
    np.testing.assert_array_equal(out, np.full(5, 1.5))


def test_numeric_trees_need_no_bitsets():
    rng = np.random.default_rng(14)
    X = random_X(rng, 3000, 4)
    nodes = random_tree(rng, 4, X)
    pred = TreePredictor(nodes)
    assert pred.cat_bitsets.shape == (0, 8)
    expected = np.array([traverse(nodes, x) for x in X])
    for bitsets in (None, pred.cat_bitsets, np.zeros((3, 8), np.uint32)):
        for n_threads in (1, 2):
            out = np.zeros(3000)
            predict_add(nodes, X, out, n_threads, bitsets)
            np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="8 columns"):
        predict_add(nodes, X, np.zeros(3000), 1, np.zeros((2, 4), np.uint32))


@pytest.mark.parametrize("n_rows", [1, 7, 300, 3000])
def test_forest_predictor_equals_tree_by_tree(categorical_model, n_rows):
    # Multiclass, NaN and a categorical feature: one kernel call over all trees
    # must add exactly what the trees add one by one, in the same order.
    from hgbt.tree.predictor import ForestPredictor

    model = categorical_model
    x = categorical_test_X(np.random.default_rng(n_rows), n_rows)
    expected = np.zeros((3, n_rows))
    for trees in rounds(model):
        for k, tree in enumerate(trees):
            tree.predict_add(x, expected[k])
    for n_threads in (1, 2):
        got = ForestPredictor(rounds(model)).predict_add(x, np.zeros((3, n_rows)),
                                                             n_threads)
        np.testing.assert_array_equal(got, expected)
    empty = ForestPredictor([]).predict_add(x, np.zeros((3, n_rows)))
    assert not empty.any()


# ------------------------------------------------------------------ CSR input
def sparse_X(rng, n_samples, n_features, zero_frac=0.6):
    """random_X with most entries 0.0, so that most are implicit in CSR."""
    X = random_X(rng, n_samples, n_features)
    X[rng.random(X.shape) < zero_frac] = 0.0
    return X


def to_csr(X, rng, container="csr_matrix", dtype=np.float64, index_dtypes=(np.int32, np.int32),
           unsorted=True, stored_zeros=True):
    """CSR of dense ``X`` with explicit zeros (0.0 and -0.0) stored, indices shuffled
    within rows and the requested dtypes; returns (csr, dense equal to csr.toarray())."""
    import scipy.sparse as sp

    A = getattr(sp, container)(X.astype(dtype))
    A.sum_duplicates()
    if stored_zeros and A.nnz:
        idx = rng.choice(A.nnz, max(1, A.nnz // 10), replace=False)
        A.data[idx[::2]] = 0.0
        A.data[idx[1::2]] = -0.0
    if unsorted:
        for i in range(A.shape[0]):
            s, e = A.indptr[i], A.indptr[i + 1]
            p = s + rng.permutation(e - s)
            A.indices[s:e], A.data[s:e] = A.indices[p], A.data[p]
        A.has_sorted_indices = False
    dense = A.toarray()
    A.indices = A.indices.astype(index_dtypes[0])
    A.indptr = A.indptr.astype(index_dtypes[1])
    return A, dense


@pytest.mark.parametrize("container", ["csr_matrix", "csr_array"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtypes", [(np.int32, np.int32), (np.int64, np.int64),
                                          (np.int64, np.int32), (np.int32, np.int64)])
def test_csr_predict_add_matches_dense(container, dtype, index_dtypes):
    rng = np.random.default_rng(20)
    X = sparse_X(rng, 400, 6)
    X[[0, 17, 399]] = 0.0  # all-empty rows, first and last among them
    A, dense = to_csr(X, rng, container, dtype, index_dtypes)
    assert A.data.dtype == dtype and A.indices.dtype == index_dtypes[0]
    assert np.isnan(A.data).any() and (A.data == 0).any() and np.signbit(A.data[A.data == 0]).any()
    assert A.indptr[1] == A.indptr[0]  # row 0 stores nothing
    for seed in range(3):
        nodes = random_tree(np.random.default_rng(seed), 6, X)
        pred = TreePredictor(nodes)
        base = rng.normal(size=400)
        expected = base.copy()
        predict_add(nodes, dense, expected, 1)
        for n_threads in (1, 2):
            out = base.copy()
            assert pred.predict_add(A, out, n_threads) is out
            np.testing.assert_array_equal(out, expected)
            np.testing.assert_array_equal(pred.predict(A, n_threads), pred.predict(dense))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_parallel_path_bit_identical(dtype, index_dtype):
    rng = np.random.default_rng(21)
    X = sparse_X(rng, 6000, 9)
    X[rng.random(6000) < 0.05] = 0.0  # some empty rows
    A, dense = to_csr(X, rng, "csr_array", dtype, (index_dtype, index_dtype))
    nodes = random_tree(rng, 9, X, max_depth=8)
    base = rng.normal(size=6000)
    expected = base.copy()
    predict_add(nodes, dense, expected, 1)
    for n_threads in (1, 2):  # >= 2048 rows: the OpenMP path with 2 threads
        out = base.copy()
        predict_csr_add(nodes, A.data, A.indices, A.indptr, 9, out, n_threads)
        assert out.tobytes() == expected.tobytes()


def test_csr_zero_rows_and_zero_nnz():
    import scipy.sparse as sp

    rng = np.random.default_rng(22)
    nodes = random_tree(rng, 3, random_X(rng, 50, 3))
    pred = TreePredictor(nodes)
    empty = sp.csr_matrix((0, 3))
    assert pred.predict(empty).shape == (0,)
    assert pred.predict_add(empty, np.zeros(0), 2).shape == (0,)
    zeros = sp.csr_array((5, 3))  # no stored entry at all: every row is the zero row
    np.testing.assert_array_equal(pred.predict(zeros), pred.predict(np.zeros((5, 3))))
    no_cols = sp.csr_array((4, 0))
    leaf = np.zeros(1, dtype=NODE_DTYPE)
    leaf[0]["value"], leaf[0]["is_leaf"] = 2.5, 1
    np.testing.assert_array_equal(TreePredictor(leaf).predict(no_cols), np.full(4, 2.5))


@pytest.fixture(scope="module")
def categorical_model():
    """A 3-class model with NaN and a categorical feature (column 3)."""
    from hgbt import HistGBDTClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5))
    X[rng.random(X.shape) < 0.4] = 0.0
    X[:, 3] = rng.integers(0, 9, 3000)
    y = (X[:, 0] > 0).astype(int) + (X[:, 3] % 3 == 0)
    X[rng.random(X.shape) < 0.05] = np.nan
    model = HistGBDTClassifier(max_iter=12, categorical_features=[3], early_stopping=False,
                               random_state=0).fit(X, y)
    assert any(t.cat_bitsets.shape[0] for t in all_trees(model))
    return model


def categorical_test_X(rng, n_rows):
    X = sparse_X(rng, n_rows, 5)
    # category codes, 0 (implicit), unseen, negative, non-integer and too large codes
    X[:, 3] = rng.choice([0, 0, 1, 2, 4, 5, 8, 11, -1, 2.5, 256, 300, np.nan, np.inf], n_rows)
    X[: max(1, n_rows // 50)] = 0.0
    return X


@pytest.mark.parametrize("n_rows", [1, 7, 300, 5000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csr_categorical_trees_and_forest_match_dense(categorical_model, n_rows, dtype):
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(n_rows)
    A, dense = to_csr(categorical_test_X(rng, n_rows), rng, "csr_matrix", dtype,
                      (np.int64, np.int64))
    model_rounds = rounds(categorical_model)
    expected = np.zeros((3, n_rows))
    for trees in model_rounds:
        for k, tree in enumerate(trees):
            tree.predict_add(dense, expected[k])
    forest = ForestPredictor(model_rounds)
    for n_threads in (1, 2):
        got = np.zeros((3, n_rows))
        for trees in model_rounds:
            for k, tree in enumerate(trees):
                tree.predict_add(A, got[k], n_threads)
        np.testing.assert_array_equal(got, expected)
        got = forest.predict_add(A, np.zeros((3, n_rows)), n_threads)
        np.testing.assert_array_equal(got, expected)
    assert not ForestPredictor([]).predict_add(A, np.zeros((3, n_rows))).any()


def test_csr_only_format_accepted(categorical_model):
    import scipy.sparse as sp
    from hgbt.tree.predictor import ForestPredictor

    X = np.eye(4, 5)
    tree = tree_at(categorical_model, 0)
    forest = ForestPredictor(rounds(categorical_model))
    for fmt in ("csc", "coo", "lil", "dok", "bsr"):
        for A in (sp.csr_matrix(X).asformat(fmt), sp.csr_array(X).asformat(fmt)):
            with pytest.raises(TypeError, match="CSR"):
                tree.predict_add(A, np.zeros(4))
            with pytest.raises(TypeError, match="CSR"):
                tree.predict(A)
            with pytest.raises(TypeError, match="CSR"):
                forest.predict_add(A, np.zeros((3, 4)))


def test_csr_invalid_input_raises():
    import scipy.sparse as sp
    from hgbt.tree._predictor import predict_forest_csr_add

    rng = np.random.default_rng(23)
    nodes = random_tree(rng, 3, random_X(rng, 50, 3))
    A = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0]]))
    data, indices, indptr = A.data, A.indices, A.indptr

    def run(data=data, indices=indices, indptr=indptr, n_features=3, out=None):
        out = np.zeros(len(indptr) - 1) if out is None else out
        predict_csr_add(nodes, data, indices, indptr, n_features, out, 1)

    with pytest.raises(ValueError, match="out of range for 2 features"):
        run(n_features=2)
    with pytest.raises(ValueError, match="out of range"):
        run(indices=np.array([0, 2, 7], dtype=np.int32))
    with pytest.raises(ValueError, match="out of range"):
        run(indices=np.array([0, -1, 1], dtype=np.int64))
    with pytest.raises(ValueError, match="non-decreasing"):
        run(indptr=np.array([0, 2, 1, 3], dtype=np.int32))
    with pytest.raises(ValueError, match="indptr ends at"):
        run(indptr=np.array([0, 2, 2, 4], dtype=np.int32))
    with pytest.raises(ValueError, match="n_rows \\+ 1"):
        run(indptr=np.zeros(0, dtype=np.int32), out=np.zeros(0))
    with pytest.raises(ValueError, match="out has 2 entries for 3 rows"):
        run(out=np.zeros(2))
    # through the predictor: a matrix whose indices disagree with its shape
    B = A.copy()
    B.indices[-1] = 5
    with pytest.raises(ValueError, match="out of range for 3 features"):
        TreePredictor(nodes).predict(B)
    with pytest.raises(ValueError, match="out has 2 columns for 3 rows"):
        predict_forest_csr_add(nodes, np.zeros(1, np.int64), np.zeros(1, np.int32),
                               np.zeros(1, np.int64), np.zeros((0, 8), np.uint32),
                               data, indices, indptr, 3, np.zeros((1, 2)), 1)


# ------------------------------------------------------------- packed forest
# The packed kernel (blocks of rows, integer keys, branch-free lockstep walk)
# against the reference: tree-by-tree ``predict_add`` (one row at a time down
# the node array), itself checked above against the pure-Python traversal.
def edge_X(rng, n_samples, n_features, cat_features=(), dtype=np.float64):
    """random_X plus signed zeros, subnormals, huge values (inf in float32) and,
    in the category columns, codes 0..255 mixed with every kind of invalid value."""
    X = random_X(rng, n_samples, n_features)
    special = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, 1e300, -1e300, 3.4e38, 1e-40])
    mask = rng.random(X.shape) < 0.08
    X[mask] = rng.choice(special, mask.sum())
    for f in cat_features:
        X[:, f] = rng.choice(
            [0, 0, 1, 2, 3, 7, 31, 32, 33, 64, 200, 254, 255, 256, 300, -1, -0.0, 2.5,
             1e10, -1e10, np.nan, np.inf, -np.inf], n_samples)
    with np.errstate(over="ignore"):
        return X.astype(dtype)


def random_cat_tree(rng, n_features, X_pool, cat_features, max_depth=7, leaf_prob=0.2):
    """random_tree whose splits on ``cat_features`` are categorical, with random
    left sets; numeric thresholds also include ±0.0 and values between data
    points (not float32-exact). Returns (nodes, cat_bitsets)."""
    nodes = random_tree(rng, n_features, X_pool, max_depth, leaf_prob)
    internal = np.flatnonzero(nodes["is_leaf"] == 0)
    bitsets = []
    for i in internal:
        f = int(nodes["feature_idx"][i])
        if f in cat_features:
            nodes["is_categorical"][i] = 1
            nodes["bitset_idx"][i] = len(bitsets)
            bitsets.append(rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32))
        elif rng.random() < 0.2:
            nodes["num_threshold"][i] = rng.choice([0.0, -0.0, 1e-310, -5e-324])
        elif rng.random() < 0.2:
            nodes["num_threshold"][i] = np.nextafter(nodes["num_threshold"][i], 0.0)
    return nodes, np.array(bitsets, dtype=np.uint32).reshape(-1, 8)


def random_rounds(rng, n_rounds, n_outputs, n_features, X_pool, cat_features=()):
    """``n_rounds`` rounds of ``n_outputs`` random trees; some are single leaves."""
    rounds = []
    for _ in range(n_rounds):
        trees = []
        for _ in range(n_outputs):
            if rng.random() < 0.1:
                nodes = np.zeros(1, dtype=NODE_DTYPE)
                nodes[0]["value"], nodes[0]["is_leaf"] = rng.normal(), 1
                trees.append(TreePredictor(nodes))
            else:
                trees.append(TreePredictor(*random_cat_tree(rng, n_features, X_pool,
                                                            cat_features)))
        rounds.append(trees)
    return rounds


def tree_by_tree(rounds, X, base, n_threads=1):
    """The reference: the baseline, then each tree's ``predict_add`` in order."""
    out = np.repeat(base[:, None], X.shape[0], axis=1)
    for trees in rounds:
        for k, tree in enumerate(trees):
            tree.predict_add(X, out[k], n_threads)
    return out


def packed_add(forest, X, base, n_threads):
    from hgbt.tree._predictor import predict_forest_packed_add

    out = np.repeat(base[:, None], X.shape[0], axis=1)
    predict_forest_packed_add(*forest.packed, forest.tree_starts, forest.tree_outputs, X,
                              out, n_threads)
    return out


def test_reference_traversal_of_categorical_nodes():
    # The reference kernel's categorical rule, against Python: a value goes left
    # iff it is an integer code 0..255 whose bit is set; anything else follows
    # missing_go_to_left.
    rng = np.random.default_rng(30)
    X = edge_X(rng, 600, 3, cat_features=(1,))
    nodes, bitsets = random_cat_tree(rng, 3, X, cat_features=(1,))
    assert nodes["is_categorical"].any()

    def go(x):
        i = 0
        while not nodes["is_leaf"][i]:
            v = float(x[int(nodes["feature_idx"][i])])
            if math.isnan(v):
                left = bool(nodes["missing_go_to_left"][i])
            elif nodes["is_categorical"][i]:
                if 0 <= v < 256 and v == int(v):
                    word = bitsets[nodes["bitset_idx"][i], int(v) // 32]
                    left = bool((int(word) >> (int(v) % 32)) & 1)
                else:
                    left = bool(nodes["missing_go_to_left"][i])
            else:
                left = v <= float(nodes["num_threshold"][i])
            i = int(nodes["left"][i] if left else nodes["right"][i])
        return float(nodes["value"][i])

    np.testing.assert_array_equal(TreePredictor(nodes, bitsets).predict(X),
                                  [go(x) for x in X])


@pytest.mark.parametrize("with_cat", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_packed_forest_equals_tree_by_tree(with_cat, dtype, order):
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(31 + with_cat)
    cat = (2, 5) if with_cat else ()
    X = np.asarray(edge_X(rng, 1000, 7, cat, dtype), order=order)
    rounds = random_rounds(rng, 6, 3, 7, X.astype(np.float64), cat)
    forest = ForestPredictor(rounds)
    assert forest.packed is not None
    assert (forest.packed[3].shape[0] > 1) == with_cat  # the categorical walk or not
    base = rng.normal(size=3)
    expected = tree_by_tree(rounds, X, base)
    # odd sizes around the lane (8) and block (32) multiples, 0 and 1 row
    for n in (0, 1, 5, 8, 31, 33, 67, 1000):
        for n_threads in (1, 2):
            got = packed_add(forest, X[:n], base, n_threads)
            assert got.tobytes() == expected[:, :n].tobytes(), (n, n_threads)
    # through ForestPredictor.predict_add (which picks the kernel by size)
    for n in (3, 500):
        out = np.repeat(base[:, None], n, axis=1)
        assert forest.predict_add(X[:n], out, 2).tobytes() == expected[:, :n].tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_packed_forest_parallel_path_thread_independent(dtype):
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(33)
    X = edge_X(rng, 5003, 6, (4,), dtype)  # >= 2048 rows: threads share blocks
    rounds = random_rounds(rng, 10, 2, 6, X.astype(np.float64), (4,))
    forest = ForestPredictor(rounds)
    base = rng.normal(size=2)
    expected = tree_by_tree(rounds, X, base)
    for n_threads in (1, 2, 3):
        assert packed_add(forest, X, base, n_threads).tobytes() == expected.tobytes()


def test_packed_forest_strided_and_reversed_X():
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(34)
    big = edge_X(rng, 900, 12, (2,))
    rounds = random_rounds(rng, 5, 1, 6, big, (1,))
    forest = ForestPredictor(rounds)
    base = np.array([0.25])
    big32 = edge_X(rng, 900, 12, (2,), np.float32)
    for X in (big[::3, ::2], big[::-1, :6], big32[:, 5::-1], big32[::-2, 1:7]):
        assert not X.flags.c_contiguous and not X.flags.f_contiguous
        assert packed_add(forest, X, base, 2).tobytes() == \
            tree_by_tree(rounds, X, base).tobytes()


def test_packed_forest_of_fitted_models():
    # Multiclass with NaN and a categorical feature, the estimator's own path
    # (ForestPredictor via predict) against tree by tree, every layout.
    from hgbt import HistGBDTClassifier, HistGBDTRegressor

    rng = np.random.default_rng(35)
    X = rng.standard_normal((4000, 6))
    X[:, 4] = rng.integers(0, 30, 4000)
    y = (X[:, 0] > 0).astype(int) + (X[:, 4] % 3 == 0)
    y_reg = X[:, 1] + X[:, 0] ** 2
    X[rng.random(X.shape) < 0.1] = np.nan
    clf = HistGBDTClassifier(max_iter=25, categorical_features=[4], early_stopping=False,
                             random_state=0).fit(X, y)
    reg = HistGBDTRegressor(max_iter=25, early_stopping=False, random_state=0).fit(X, y_reg)
    for model in (clf, reg):
        base = baseline_prediction(model)
        for dtype in (np.float64, np.float32):
            for order in ("C", "F"):
                x = np.asarray(X[:2999], dtype=dtype, order=order)
                expected = tree_by_tree(rounds(model), x, base)
                got = model._raw_predict(x)
                assert got.tobytes() == expected.tobytes()
                assert model._raw_predict(x[:9]).tobytes() == expected[:, :9].tobytes()


def test_forest_holds_its_trees():
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(38)
    rounds = random_rounds(rng, 3, 2, 4, random_X(rng, 50, 4))
    forest = ForestPredictor(rounds)
    assert forest.holds(rounds) and forest.holds([list(r) for r in rounds])
    assert not forest.holds(rounds[:2])
    swapped = [list(r) for r in rounds]
    swapped[1][0] = TreePredictor(swapped[1][0].nodes.copy())
    assert not forest.holds(swapped)


def test_packed_forest_only_leaves_and_nan_threshold():
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(36)
    X = random_X(rng, 50, 3)
    leaf = np.zeros(1, dtype=NODE_DTYPE)
    leaf[0]["value"], leaf[0]["is_leaf"] = 1.5, 1
    rounds = [[TreePredictor(leaf.copy())] for _ in range(3)]
    forest = ForestPredictor(rounds)
    assert forest.packed[5].size == 0  # no slot read
    np.testing.assert_array_equal(packed_add(forest, X, np.zeros(1), 1), np.full((1, 50), 4.5))
    # no features at all
    np.testing.assert_array_equal(packed_add(forest, np.zeros((40, 0)), np.zeros(1), 2),
                                  np.full((1, 40), 4.5))
    # a NaN threshold sends every number right: not expressible by keys, so the
    # forest keeps the row-by-row walk (same result as tree by tree)
    nodes = random_tree(rng, 3, X)
    nodes["num_threshold"][0] = np.nan
    rounds = [[TreePredictor(nodes)]]
    forest = ForestPredictor(rounds)
    assert forest.packed is None
    np.testing.assert_array_equal(forest.predict_add(X, np.zeros((1, 50))),
                                  tree_by_tree(rounds, X, np.zeros(1)))


def test_packed_forest_invalid_input_raises():
    from hgbt.tree._predictor import predict_forest_packed_add
    from hgbt.tree.predictor import ForestPredictor

    rng = np.random.default_rng(37)
    X = random_X(rng, 40, 4)
    forest = ForestPredictor(random_rounds(rng, 2, 1, 4, X))
    cnodes, values, depths, bits, slot_features, slot_kinds = forest.packed
    args = (forest.tree_starts, forest.tree_outputs)
    out = np.zeros((1, 40))
    with pytest.raises(ValueError, match="features"):
        predict_forest_packed_add(*forest.packed, *args, X[:, :int(slot_features.max())],
                                  out, 1)
    with pytest.raises(ValueError, match="out has"):
        predict_forest_packed_add(*forest.packed, *args, X, np.zeros((1, 39)), 1)
    with pytest.raises(ValueError, match="same length"):
        predict_forest_packed_add(cnodes, values[:-1], depths, bits, slot_features,
                                  slot_kinds, *args, X, out, 1)
    with pytest.raises(ValueError, match="bits must have shape"):
        predict_forest_packed_add(cnodes, values, depths, np.zeros((2, 16), np.uint32),
                                  slot_features, slot_kinds, *args, X, out, 1)


def random_grown_tree(rng, n_features, n_splits):
    """Random grower records (GROWN_NODE_DTYPE): leaves split at random,
    numeric or categorical, children appended as the kernel appends them."""
    grown = np.zeros(2 * n_splits + 1, dtype=GROWN_NODE_DTYPE)
    grown["left"] = grown["right"] = -1
    for name in ("value", "lower", "upper"):
        grown[name] = rng.standard_normal(grown.shape[0])
    grown["count"] = rng.integers(1, 1000, grown.shape[0])
    grown["sum_hessians"] = rng.random(grown.shape[0]) * grown["count"]
    grown["depth"] = rng.integers(0, 20, grown.shape[0])
    for k in range(n_splits):
        node = rng.choice(np.flatnonzero(grown["left"][:2 * k + 1] < 0))
        grown["left"][node], grown["right"][node] = 2 * k + 1, 2 * k + 2
        split = grown["split"][node]
        split["feature_idx"] = rng.integers(n_features)
        split["bin_idx"] = rng.integers(256)
        split["gain"] = rng.random()
        split["missing_go_to_left"] = rng.integers(2)
        split["is_categorical"] = rng.random() < 0.4
        split["cat_bitset"] = rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32)
        grown["split"][node] = split
    return grown


def reference_nodes_from_grown(grown, learning_rate, thresholds, known):
    """NumPy: the predictor's nodes, bitsets and leaves of grower records."""
    nodes = np.zeros(grown.shape[0], dtype=NODE_DTYPE)
    nodes["value"] = learning_rate * grown["value"]
    nodes["count"], nodes["depth"] = grown["count"], grown["depth"]
    nodes["sum_hessians"] = grown["sum_hessians"]
    nodes["is_leaf"] = grown["left"] < 0
    inner = np.flatnonzero(grown["left"] >= 0)
    split = grown["split"][inner]
    for field in ("feature_idx", "missing_go_to_left", "gain"):
        nodes[field][inner] = split[field]
    nodes["left"][inner], nodes["right"][inner] = grown["left"][inner], grown["right"][inner]
    categorical = split["is_categorical"] != 0
    numeric = inner[~categorical]
    nodes["bin_threshold"][numeric] = split["bin_idx"][~categorical]
    nodes["num_threshold"][numeric] = thresholds[split["feature_idx"][~categorical],
                                                 split["bin_idx"][~categorical]]
    cat_nodes = inner[categorical]
    nodes["is_categorical"][cat_nodes] = 1
    nodes["num_threshold"][cat_nodes] = np.nan
    nodes["bitset_idx"][cat_nodes] = np.arange(cat_nodes.size)
    bitsets = split["cat_bitset"][categorical].astype(BITSET_DTYPE)
    if known is not None:
        missing_left = split["missing_go_to_left"][categorical] != 0
        bitsets[missing_left] |= ~known[split["feature_idx"][categorical][missing_left]]
    return nodes, bitsets.reshape(-1, 8), np.flatnonzero(grown["left"] < 0).tolist()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_known", [False, True])
def test_nodes_from_grown_matches_numpy_reference(seed, with_known):
    rng = np.random.default_rng(seed)
    n_features = 5
    grown = random_grown_tree(rng, n_features, n_splits=[0, 1, 30, 200, 7, 60][seed])
    thresholds = np.sort(rng.standard_normal((n_features, 256)), axis=1)
    thresholds[:, 200:] = np.inf
    known = (rng.integers(0, 2**32, (n_features, 8), dtype=np.uint64).astype(BITSET_DTYPE)
             if with_known else None)
    nodes, bitsets, leaves = nodes_from_grown(grown, 0.1, thresholds, known)
    ref_nodes, ref_bitsets, ref_leaves = reference_nodes_from_grown(grown, 0.1, thresholds,
                                                                    known)
    assert nodes.tobytes() == ref_nodes.tobytes()
    assert bitsets.dtype == BITSET_DTYPE and bitsets.shape == ref_bitsets.shape
    np.testing.assert_array_equal(bitsets, ref_bitsets)
    assert leaves == ref_leaves
    TreePredictor(nodes, bitsets)  # a valid tree for the predictor
