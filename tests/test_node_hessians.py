"""Each node's ``sum_hessians`` (the cover) against the hessians of the
training rows ``apply`` puts under it, recomputed at the raw predictions
before the node's tree; and trees saved before the field."""
import json
import math
import pickle

import numpy as np

from hgbt.core.row_meta import RowMeta
import pytest
from scipy.special import expit, softmax

from hgbt import HistGBDTClassifier, HistGBDTRegressor, load_model
from hgbt.core._types import NODE_DTYPE, NODE_FIELDS_FIRST
from hgbt.persistence import content_checksum, model_to_dict
from hgbt.tree.predictor import TreePredictor
from fitted import baseline_prediction, rounds, tree_at

N = 3000


def data(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 5))
    noise = rng.normal(size=N)
    weights = rng.uniform(0.5, 2.0, N)
    if kind == "binary":
        y = (X[:, 0] - X[:, 1] + noise > 0).astype(int)
    elif kind == "multiclass":
        y = np.digitize(X[:, 0] + 0.5 * noise, [-0.5, 0.5])
    else:
        y = X[:, 0] ** 2 + X[:, 1] + 0.3 * noise
    return X, y, weights


def fit(kind, weighted=True, **params):
    X, y, w = data(kind)
    cls = HistGBDTRegressor if kind == "regression" else HistGBDTClassifier
    model = cls(max_iter=6, max_leaf_nodes=12, min_samples_leaf=5, early_stopping=False,
                random_state=0, **params).fit(X, y, sample_weight=w if weighted else None)
    return model, X, y, (w if weighted else np.ones(N))


def raw_before_each_round(model, X):
    """(n_rounds, n_outputs, n_rows): the raw predictions the round's trees
    were grown at (the baseline, then the staged predictions)."""
    k = len(baseline_prediction(model))
    stages = [np.broadcast_to(baseline_prediction(model)[:, None], (k, len(X)))]
    for stage in model._staged_raw_predict(X):
        stages.append(stage)
    return stages[:-1]


def formula_hessians(kind, raw, y, w):
    """Per output, each row's hessian times its weight, from the loss in float64."""
    if kind == "binary":
        p = expit(raw[0])
        return (w * p * (1 - p))[None]
    if kind == "multiclass":
        p = softmax(raw, axis=0)
        return w * p * (1 - p)
    return w[None] * np.ones_like(raw)  # half squared error: hessian 1


def rows_under(nodes, leaf_of_row):
    """Per node, the mask of the rows whose leaf lies below it."""
    leaves_under = [None] * len(nodes)
    for j in range(len(nodes) - 1, -1, -1):  # children come after their parent
        leaves_under[j] = ([j] if nodes["is_leaf"][j] else
                           leaves_under[nodes["left"][j]] + leaves_under[nodes["right"][j]])
    return [np.isin(leaf_of_row, under) for under in leaves_under]


def node_sums(model, X, hessians_of_round):
    """For every tree: (its nodes, the per-node sums of ``hessians_of_round(r)[k]``
    over the rows under each node)."""
    leaves = model.apply(X)
    leaves = leaves.reshape(len(X), model.n_iter_, -1)
    out = []
    for r, trees in enumerate(rounds(model)):
        h = hessians_of_round(r)
        for k, tree in enumerate(trees):
            masks = rows_under(tree.nodes, leaves[:, r, k])
            assert [m.sum() for m in masks] == list(tree.nodes["count"])
            out.append((tree.nodes, np.array([h[k][m].sum() for m in masks])))
    return out


def snapped(values):
    """``values`` rounded to the grid of ``hgbt.core.exact`` (exponent from the largest
    |value| and the row count): float64 sums of them are exact."""
    bits = min(24, 52 - N.bit_length())
    s = bits - math.frexp(float(np.abs(values).max()))[1]
    return np.rint(values * 2.0**s) * 2.0**-s


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regression"])
def test_sum_hessians_are_the_hessians_of_the_rows_under_the_node(kind):
    model, X, y, w = fit(kind)
    raws = raw_before_each_round(model, X)
    y_fit = np.searchsorted(model.classes_, y) if kind != "regression" else y

    # The float64 formula: the kernel computes hessians in float32 (at the raw
    # prediction rounded to float32) and snaps them to a 2**-25 grid, each
    # row's off by up to ~3e-7 relative; sums of >= 5 rows stay within 1e-6.
    for nodes, reference in node_sums(
            model, X, lambda r: formula_hessians(kind, raws[r], y_fit, w)):
        np.testing.assert_allclose(nodes["sum_hessians"], reference, rtol=1e-6)

    # Exactly: the loss's own float32 hessians at the same raw predictions,
    # snapped to the grid, then summed (exact in float64 on the grid).
    loss = model._make_loss(RowMeta(w))

    def kernel_hessians(r):
        g = np.empty((raws[r].shape[0], N), dtype=np.float32)
        h = np.empty_like(g)
        loss.gradients(np.asarray(y_fit, dtype=np.float64), np.ascontiguousarray(raws[r]),
                       g, h, 1)
        return [snapped(h[k].astype(np.float64)) for k in range(h.shape[0])]

    for nodes, reference in node_sums(model, X, kernel_hessians):
        np.testing.assert_array_equal(nodes["sum_hessians"], reference)


def children_sum_to_parent(model):
    n_inner = 0
    for trees in rounds(model):
        for tree in trees:
            nodes = tree.nodes
            inner = np.flatnonzero(nodes["is_leaf"] == 0)
            left, right = nodes["left"][inner], nodes["right"][inner]
            np.testing.assert_array_equal(
                nodes["sum_hessians"][left] + nodes["sum_hessians"][right],
                nodes["sum_hessians"][inner])
            n_inner += inner.size
    assert n_inner > 10


@pytest.mark.parametrize("params", [{}, {"use_quantized_grad": True}])
@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_children_sum_to_their_parent_exactly(kind, params):
    children_sum_to_parent(fit(kind, **params)[0])


@pytest.mark.parametrize("kind", ["binary", "regression"])
def test_quantized_sums_are_on_the_true_scale(kind):
    """With ``use_quantized_grad`` the split search sums hessians rounded
    stochastically (unbiased) to a grid of step < 2 h_max / num_grad_quant_bins:
    each row is off by less than a step, independently, so a node of n rows is
    within a few steps times sqrt(n) of the exact sum. On another scale (the
    integer lanes, 2**exponent times larger) it would be far off."""
    n_levels = 32
    model, X, y, w = fit(kind, use_quantized_grad=True, num_grad_quant_bins=n_levels)
    raws = raw_before_each_round(model, X)
    y_fit = np.searchsorted(model.classes_, y) if kind != "regression" else y
    exact_differs = False
    for r, (nodes, reference) in enumerate(node_sums(
            model, X, lambda r: formula_hessians(kind, raws[r], y_fit, w))):
        h_max = formula_hessians(kind, raws[r], y_fit, w).max()
        step = 2 * h_max / n_levels
        # 6 sigma of a sum of n independent errors within one step (sd < step / 2)
        bound = 6 * step / 2 * np.sqrt(nodes["count"]) + 1e-6 * reference
        assert np.all(np.abs(nodes["sum_hessians"] - reference) <= bound)
        exact_differs |= not np.allclose(nodes["sum_hessians"], reference, rtol=1e-6)
    assert exact_differs  # the sums the split search saw, not the exact ones
    children_sum_to_parent(model)


@pytest.mark.parametrize("params", [{}, {"use_quantized_grad": True}])
def test_constant_hessian_is_the_row_count(params):
    """Unweighted squared error keeps one hessian (1) per tree: the histograms
    count rows, and a node's hessian sum is its count times 1."""
    model = fit("regression", weighted=False, **params)[0]
    for trees in rounds(model):
        nodes = trees[0].nodes
        assert nodes.shape[0] > 1
        np.testing.assert_array_equal(nodes["sum_hessians"], nodes["count"].astype(float))


# ------------------------------------------------------- saved before the field
def without_sum_hessians(document):
    """A model document as hgbt wrote it before nodes had ``sum_hessians``."""
    fitted = document["fitted"]
    fitted["node_dtype"] = [e for e in fitted["node_dtype"] if e[0] != "sum_hessians"]
    for trees in fitted["trees"]:
        for tree in trees:
            del tree["nodes"]["sum_hessians"]
    document["checksum"] = content_checksum(document)
    return document


def test_model_file_without_the_field_loads_with_nan(tmp_path):
    model, X, _, _ = fit("binary")
    document = without_sum_hessians(model_to_dict(model))
    assert [e[0] for e in document["fitted"]["node_dtype"]] == list(NODE_FIELDS_FIRST)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    loaded = load_model(path)
    assert loaded.decision_function(X).tobytes() == model.decision_function(X).tobytes()
    for old, new in zip(rounds(model), rounds(loaded)):
        assert new[0].nodes.dtype == NODE_DTYPE
        assert np.isnan(new[0].nodes["sum_hessians"]).all()
        for name in NODE_FIELDS_FIRST:
            assert new[0].nodes[name].tobytes() == old[0].nodes[name].tobytes()
    table = loaded.feature_importance_table()
    used = table["split"] > 0
    assert table.loc[used, "total_cover"].isna().all() and table.loc[used, "cover"].isna().all()
    assert (table["total_count"] == model.feature_importance_table()["total_count"]).all()
    assert loaded.trees_to_dataframe()["sum_hessians"].isna().all()

    # A file with the field in its node dtype but not in a tree is damaged.
    damaged = model_to_dict(model)
    del damaged["fitted"]["trees"][0][0]["nodes"]["sum_hessians"]
    damaged["checksum"] = content_checksum(damaged)
    path.write_text(json.dumps(damaged))
    with pytest.raises(ValueError, match="missing key 'sum_hessians'"):
        load_model(path)


def test_new_files_and_pickles_keep_the_field(tmp_path):
    model, X, _, _ = fit("binary")
    model.save_model(tmp_path / "m.json")
    for loaded in (load_model(tmp_path / "m.json"), pickle.loads(pickle.dumps(model))):
        for old, new in zip(rounds(model), rounds(loaded)):
            assert new[0].nodes.tobytes() == old[0].nodes.tobytes()


def test_tree_pickled_before_the_field_loads_with_nan():
    model = fit("binary")[0]
    tree = tree_at(model, 2)
    first = np.dtype([(name, NODE_DTYPE.fields[name][0]) for name in NODE_FIELDS_FIRST])
    old_nodes = np.zeros(tree.nodes.shape[0], dtype=first)
    for name in NODE_FIELDS_FIRST:
        old_nodes[name] = tree.nodes[name]
    # the state a TreePredictor pickled before the field: node bytes, no field list
    restored = object.__new__(TreePredictor)
    restored.__setstate__({"nodes": old_nodes.tobytes(),
                           "cat_bitsets": tree.cat_bitsets.tobytes()})
    assert restored.nodes.dtype == NODE_DTYPE
    assert np.isnan(restored.nodes["sum_hessians"]).all()
    for name in NODE_FIELDS_FIRST:
        assert restored.nodes[name].tobytes() == tree.nodes[name].tobytes()
    with pytest.raises(ValueError, match="differ"):
        object.__new__(TreePredictor).__setstate__(
            {"nodes": old_nodes.tobytes(), "cat_bitsets": b"",
             "node_fields": ("value", "count")})
