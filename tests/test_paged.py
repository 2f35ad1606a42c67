"""Kernels for rows read page by page (tree/_paged.pyx): every node of a pass
at once, against NumPy and the in-memory kernels."""
import numpy as np
import pytest

from hgbt.core._types import G_H_DTYPE, HISTOGRAM_DTYPE, SIZE_DTYPE, X_BINNED_DTYPE
from hgbt.tree._histogram import build_histogram
from hgbt.tree._paged import page_histograms, route_page
from hgbt.tree._partition import partition_rows_by_table


def rows_and_nodes(n=5000, n_features=7, n_nodes=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.asfortranarray(rng.integers(0, 256, size=(n, n_features)).astype(X_BINNED_DTYPE))
    node = rng.integers(-1, n_nodes, size=n).astype(np.int32)
    # gradients on a grid (as fits snap them): every sum is exact
    g = (rng.integers(-4096, 4096, n) / 1024).astype(G_H_DTYPE)
    h = (rng.integers(1, 4096, n) / 1024).astype(G_H_DTYPE)
    return X, node, g, h


def naive_histograms(X, node, g, h, n_nodes):
    out = np.zeros((n_nodes, X.shape[1], 256), dtype=HISTOGRAM_DTYPE)
    for f in range(X.shape[1]):
        for k in range(n_nodes):
            rows = node == k
            out["sum_gradients"][k, f] = np.bincount(X[rows, f], g[rows].astype(float), 256)
            out["sum_hessians"][k, f] = np.bincount(X[rows, f], h[rows].astype(float), 256)
            out["count"][k, f] = np.bincount(X[rows, f], minlength=256)
    return out


@pytest.mark.parametrize("n_threads", [1, 4])
def test_page_histograms_are_numpys_page_after_page(n_threads):
    X, node, g, h = rows_and_nodes()
    expected = naive_histograms(X, node, g, h, 5)
    out = np.zeros_like(expected)
    for a, b in [(0, 1234), (1234, 1235), (1235, 4000), (4000, 5000)]:
        page_histograms(np.asfortranarray(X[a:b]), node[a:b], g[a:b], h[a:b], out, n_threads)
    for name in ("sum_gradients", "sum_hessians", "count"):
        np.testing.assert_array_equal(out[name], expected[name], err_msg=name)


def test_constant_hessian_adds_counts_only():
    X, node, g, _ = rows_and_nodes(seed=1)
    out = np.zeros((5, X.shape[1], 256), dtype=HISTOGRAM_DTYPE)
    page_histograms(X, node, g, None, out, 2)
    assert not out["sum_hessians"].any()
    expected = naive_histograms(X, node, g, np.ones(len(g), G_H_DTYPE), 5)
    np.testing.assert_array_equal(out["count"], expected["count"])
    np.testing.assert_array_equal(out["sum_gradients"], expected["sum_gradients"])


def test_a_node_from_pages_equals_the_in_memory_kernel():
    X, node, g, h = rows_and_nodes(n=20_000, n_features=5, seed=2)
    rows = np.flatnonzero(node == 3).astype(SIZE_DTYPE)
    in_memory = np.zeros((X.shape[1], 256), dtype=HISTOGRAM_DTYPE)
    buffers = np.empty(len(rows), G_H_DTYPE), np.empty(len(rows), G_H_DTYPE)
    build_histogram(X, rows, g, h, *buffers, in_memory, 2)
    paged = np.zeros((5, X.shape[1], 256), dtype=HISTOGRAM_DTYPE)
    for a in range(0, len(X), 3000):
        page = np.asfortranarray(X[a:a + 3000])
        page_histograms(page, node[a:a + 3000], g[a:a + 3000], h[a:a + 3000], paged, 2)
    assert in_memory.tobytes() == paged[3].tobytes()


@pytest.mark.parametrize("n_threads", [1, 3])
def test_route_page_follows_the_partition_tables(n_threads):
    X, node, _, _ = rows_and_nodes(n=100_000, n_features=4, n_nodes=3, seed=3)
    rng = np.random.default_rng(4)
    # node 0 splits on feature 2 (a threshold table), node 2 on feature 0 (a
    # category set); node 1 is not split
    split_feature = np.array([2, -1, 0], dtype=np.int32)
    goes_left = np.zeros((3, 256), dtype=np.uint8)
    goes_left[0, :100] = 1
    goes_left[2] = rng.integers(0, 2, 256)
    left, right = np.array([3, -1, 5], np.int32), np.array([4, -1, 6], np.int32)
    routed = node.copy()
    for a in range(0, len(X), 30_000):
        part = routed[a:a + 30_000]
        route_page(np.asfortranarray(X[a:a + 30_000]), part, split_feature, goes_left, left,
                   right, n_threads)
    for k in (0, 2):
        rows = np.flatnonzero(node == k).astype(SIZE_DTYPE)
        n_left = partition_rows_by_table(rows, np.empty_like(rows), X, split_feature[k],
                                         goes_left[k], 1)
        np.testing.assert_array_equal(np.flatnonzero(routed == left[k]), rows[:n_left])
        np.testing.assert_array_equal(np.flatnonzero(routed == right[k]), rows[n_left:])
    np.testing.assert_array_equal(routed[node == 1], 1)
    np.testing.assert_array_equal(routed[node == -1], -1)


def test_shape_errors():
    X, node, g, h = rows_and_nodes(n=100)
    out = np.zeros((2, X.shape[1], 256), dtype=HISTOGRAM_DTYPE)
    with pytest.raises(ValueError, match="past out's nodes"):
        page_histograms(X, node, g, h, out, 1)
    with pytest.raises(ValueError, match="one node, gradient"):
        page_histograms(X, node[:50], g, h, out, 1)
    with pytest.raises(ValueError, match="256"):
        route_page(X, node, np.zeros(5, np.int32), np.zeros((5, 10), np.uint8),
                   np.zeros(5, np.int32), np.zeros(5, np.int32), 1)
