"""A tree grown over binned pages (tree/paged.py) is the in-memory kernel's,
node for node and row for row."""
import numpy as np
import pytest

from hgbt.core._types import G_H_DTYPE, SIZE_DTYPE, X_BINNED_DTYPE
from hgbt.data.bundling import FeatureLayout
from hgbt.data.pages import BinPages
from hgbt.tree._grower import Growth, TreeKernel
from hgbt.tree._splitting import SplitSettings
from hgbt.tree.paged import grow_paged

N_BINS = 256  # value bins 0..254, missing 255


def task(n=20_000, n_features=8, seed=0, constant_hessian=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    codes = np.clip((X * 40 + 128).astype(int), 0, 254).astype(X_BINNED_DTYPE)
    codes[rng.random(codes.shape) < 0.05] = 255  # missing
    codes = np.asfortranarray(codes)
    target = np.sin(X[:, 0]) + X[:, 1] * (X[:, 2] > 0) + 0.3 * rng.normal(size=n)
    # gradients and hessians on a grid, as fits snap them: every sum exact
    g = (np.round(-target * 1024) / 1024).astype(G_H_DTYPE)
    h = (np.float32(1.0) if constant_hessian else
         (rng.integers(256, 2048, n) / 1024).astype(G_H_DTYPE))
    return codes, g, h


def in_memory(codes, g, h, settings, growth, node_masks=None, n_threads=2):
    n = codes.shape[0]
    constant = np.ndim(h) == 0
    buffers = dict(layout=FeatureLayout.plain(codes), rows=np.arange(n, dtype=SIZE_DTYPE),
                   buffer=np.empty(n, SIZE_DTYPE), gradients=g,
                   hessians=np.array([h], G_H_DTYPE) if constant else h,
                   ordered_gradients=np.empty(n, G_H_DTYPE),
                   ordered_hessians=np.empty(n, G_H_DTYPE))
    kernel = TreeKernel(codes.shape[1], codes.shape[1], N_BINS)
    nodes = kernel.grow(settings, growth, buffers, n_root=n, node_masks=node_masks,
                        n_threads=n_threads)
    leaf_of_row = np.full(n, -1, dtype=np.int32)
    for i in np.flatnonzero(nodes["left"] < 0):
        leaf_of_row[buffers["rows"][nodes["start"][i]:nodes["stop"][i]]] = i
    return nodes, leaf_of_row


def paged(codes, g, h, settings, growth, page_rows, node_masks=None, n_threads=2):
    with BinPages(codes.shape[1], page_rows=page_rows) as pages:
        pages.append(codes)
        pages.finish()
        kernel = TreeKernel(codes.shape[1], codes.shape[1], N_BINS)
        return grow_paged(kernel, settings, growth, pages, g, h, node_masks=node_masks,
                          n_threads=n_threads)


def assert_same_tree(a, b):
    assert len(a) == len(b)
    for name in a.dtype.names:  # field by field: the records' padding is not set
        if name == "split":
            for field in a["split"].dtype.names:
                assert a["split"][field].tobytes() == b["split"][field].tobytes(), field
        elif name not in ("start", "stop"):
            assert a[name].tobytes() == b[name].tobytes(), name


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("constant_hessian", [False, True])
@pytest.mark.parametrize("page_rows", [20_000, 3_001])
def test_the_paged_tree_is_the_in_memory_one(policy, constant_hessian, page_rows):
    codes, g, h = task(constant_hessian=constant_hessian)
    settings = SplitSettings(np.full(codes.shape[1], 255, np.uint32), 255,
                             min_samples_leaf=20, l2_regularization=1.0)
    growth = (Growth(True, 31, None) if policy == "lossguide" else Growth(False, None, 5))
    expected, expected_leaves = in_memory(codes, g, h, settings, growth)
    nodes, leaves, passes = paged(codes, g, h, settings, growth, page_rows)
    assert_same_tree(nodes, expected)
    np.testing.assert_array_equal(leaves, expected_leaves)
    n_leaves = int((expected["left"] < 0).sum())
    assert n_leaves == (31 if policy == "lossguide" else 32)
    # one pass a level (the root's, then each level's smaller children, the
    # last one routing only); best-first needs some more, far fewer than splits
    depth = int(expected["depth"].max())
    if policy == "depthwise":
        assert passes == depth + 1
    else:
        assert passes <= 2 * depth and passes < n_leaves // 3


def test_node_masks_are_replayed_on_every_run():
    codes, g, h = task(seed=1)
    settings = SplitSettings(np.full(codes.shape[1], 255, np.uint32), 255)
    growth = Growth(True, 15, None)

    def sampler(seed):
        rng = np.random.default_rng(seed)
        return lambda k: (rng.random((k, codes.shape[1])) < 0.5).astype(np.uint8)

    expected, expected_leaves = in_memory(codes, g, h, settings, growth, sampler(7))
    nodes, leaves, _ = paged(codes, g, h, settings, growth, 4096, sampler(7))
    assert_same_tree(nodes, expected)
    np.testing.assert_array_equal(leaves, expected_leaves)
