"""Trees whose leaves hold a value per output (multi_strategy='multi_output_tree')."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from hgbt import HistGBDTRegressor, load_model, save_model
from hgbt.data.binning import BinMapper
from hgbt.tree.grower import TreeGrower, TreeSettings
from hgbt.tree.training_data import LocalTrainingData
from hgbt.tree.vector_grower import VectorTreeGrower

VECTOR = dict(multi_strategy="multi_output_tree", early_stopping=False, random_state=0)


def problem(n=3000, seed=0, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    Y = np.column_stack([Z[:, 0] + Z[:, 1] + 0.1 * rng.normal(size=n),
                         Z[:, 0] - Z[:, 1] * Z[:, 2],
                         np.sin(Z[:, 3]) * 3 + Z[:, 0] + 10])
    return X, Y


# --------------------------------------------------- the naive reference

def _score(g, h, l1, l2):
    g = np.sign(g) * np.maximum(np.abs(g) - l1, 0.0)
    return np.where(h + l2 > 0, g * g / np.where(h + l2 > 0, h + l2, 1.0), 0.0)


def reference_tree(Xb, n_bins_non_missing, missing_bin, G, H, p):
    """The vector-leaf tree grown naively: every node's sums straight from its
    rows (np.bincount), every candidate's gain from the formula. Returns
    (feature, bin, missing_left, left, right, values) per node."""
    k, n = G.shape
    Hk = np.broadcast_to(H, (k, n)) if H.shape[0] == 1 else H
    nodes = []

    def make(rows, depth):
        node = dict(rows=rows, depth=depth, G=G[:, rows].astype(np.float64).sum(1),
                    H=Hk[:, rows].astype(np.float64).sum(1), left=-1, right=-1,
                    split=None)
        nodes.append(node)
        if depth < p["max_depth"] and rows.size >= 2 * p["min_samples_leaf"]:
            node["split"] = best_split(rows, node)
        return len(nodes) - 1

    def best_split(rows, node):
        parent = _score(node["G"], node["H"], p["l1"], p["l2"]).sum()
        best = None
        for f in range(Xb.shape[1]):
            codes = Xb[rows, f]
            cnt = np.bincount(codes, minlength=missing_bin + 1).astype(float)
            g = np.stack([np.bincount(codes, G[j, rows].astype(np.float64), missing_bin + 1)
                          for j in range(k)])
            h = np.stack([np.bincount(codes, Hk[j, rows].astype(np.float64), missing_bin + 1)
                          for j in range(k)])
            nb = n_bins_non_missing[f]
            has_missing = cnt[missing_bin] > 0
            for b in range(nb):
                if cnt[b] == 0 and b > 0:
                    continue
                n_left = cnt[:b + 1].sum()
                if rows.size - n_left < p["min_samples_leaf"]:
                    break
                options = ([(0, False), (1, True)] if b + 1 < nb else [(0, False)])
                for missing_left, with_missing in options:
                    if with_missing and not has_missing or (b + 1 == nb and not has_missing):
                        continue
                    take = slice(0, b + 1)
                    gl, hl, nl = g[:, take].sum(1), h[:, take].sum(1), n_left
                    if with_missing:
                        gl, hl = gl + g[:, missing_bin], hl + h[:, missing_bin]
                        nl = nl + cnt[missing_bin]
                    hr, nr = node["H"] - hl, rows.size - nl
                    if min(nl, nr) < p["min_samples_leaf"]:
                        continue
                    if hl.min() < p["min_child_weight"] or hr.min() < p["min_child_weight"]:
                        continue
                    gain = 0.5 * (_score(gl, hl, p["l1"], p["l2"]).sum()
                                  + _score(node["G"] - gl, hr, p["l1"], p["l2"]).sum()
                                  - parent) - p["min_gain_to_split"]
                    if gain > 0 and (best is None or gain > best[0]):
                        best = (gain, f, b, missing_left, nl, cnt[missing_bin])
        if best is None:
            return None
        gain, f, b, missing_left, nl, n_missing = best
        if n_missing == 0:
            missing_left = int(nl >= rows.size - nl)
        return gain, f, b, missing_left

    make(np.arange(n), 0)
    n_leaves = 1
    while p["max_leaf_nodes"] is None or n_leaves < p["max_leaf_nodes"]:
        open_ = [i for i, nd in enumerate(nodes) if nd["split"] is not None
                 and nd["left"] < 0]
        if not open_:
            break
        i = (max(open_, key=lambda i: (nodes[i]["split"][0], -i)) if p["lossguide"]
             else min(open_, key=lambda i: (nodes[i]["depth"], i)))
        node = nodes[i]
        _, f, b, missing_left = node["split"]
        codes = Xb[node["rows"], f]
        goes_left = np.where(codes == missing_bin, bool(missing_left), codes <= b)
        node["left"] = make(node["rows"][goes_left], node["depth"] + 1)
        node["right"] = make(node["rows"][~goes_left], node["depth"] + 1)
        n_leaves += 1
    values = np.array([-(np.sign(nd["G"]) * np.maximum(np.abs(nd["G"]) - p["l1"], 0))
                       / (nd["H"] + p["l2"]) for nd in nodes])
    return [(nd["split"][1] if nd["left"] >= 0 else -1,
             nd["split"][2] if nd["left"] >= 0 else 0,
             nd["split"][3] if nd["left"] >= 0 else 0, nd["left"], nd["right"])
            for nd in nodes], values


def _binned(X, max_bins=255):
    mapper = BinMapper(max_bins=max_bins, random_state=0).fit(X)
    return mapper, np.asfortranarray(mapper.transform(X))


@pytest.mark.parametrize("case", [
    dict(k=2, shared=True, constant=True, lossguide=True),
    dict(k=3, shared=True, constant=False, lossguide=False, l1=0.5),
    dict(k=3, shared=False, constant=False, lossguide=True, min_child_weight=2.0),
    dict(k=2, shared=False, constant=True, lossguide=True, max_depth=3, l2=0.0),
])
def test_the_kernel_grows_the_naive_reference_tree(case):
    X, _ = problem(n=600, seed=3, missing=0.1)
    mapper, Xb = _binned(X, max_bins=31)
    rng = np.random.default_rng(4)
    k = case["k"]
    G = rng.normal(size=(k, X.shape[0])).astype(np.float32)
    if case["constant"]:
        H = np.full((1 if case["shared"] else k, 1), 1.0, dtype=np.float32)
        H_full = np.broadcast_to(H, (H.shape[0], X.shape[0]))
    else:
        H = rng.uniform(0.2, 2.0, size=(1 if case["shared"] else k, X.shape[0])
                        ).astype(np.float32)
        H_full = H
    p = dict(l1=case.get("l1", 0.0), l2=case.get("l2", 1.0),
             min_child_weight=case.get("min_child_weight", 1e-3), min_samples_leaf=10,
             min_gain_to_split=0.0, max_leaf_nodes=12, max_depth=case.get("max_depth", 1024),
             lossguide=case["lossguide"])
    settings = TreeSettings(grow_policy="lossguide" if p["lossguide"] else "depthwise",
                            max_leaf_nodes=12, max_depth=case.get("max_depth"),
                            min_samples_leaf=10, min_child_weight=p["min_child_weight"],
                            l1_regularization=p["l1"], l2_regularization=p["l2"],
                            learning_rate=0.5)
    grower = VectorTreeGrower(Xb, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                              mapper.missing_bin, k, case["shared"], settings)
    hessians = H if not case["shared"] else np.repeat(H, k, axis=0)  # grower reads row 0
    trees = grower.grow(G, hessians, n_threads=2)
    expected, values = reference_tree(Xb, mapper.n_bins_non_missing_, mapper.missing_bin,
                                      G, H_full, p)
    nodes = trees[0].nodes
    assert len(nodes) == len(expected) > 5
    got = [(int(nd["feature_idx"]) if not nd["is_leaf"] else -1,
            int(nd["bin_threshold"]) if not nd["is_leaf"] else 0,
            int(nd["missing_go_to_left"]) if not nd["is_leaf"] else 0,
            int(nd["left"]) if not nd["is_leaf"] else -1,
            int(nd["right"]) if not nd["is_leaf"] else -1) for nd in nodes]
    assert got == expected
    for j, tree in enumerate(trees):  # the same splits, each output's values
        assert np.array_equal(tree.nodes["feature_idx"], nodes["feature_idx"])
        np.testing.assert_allclose(tree.nodes["value"], 0.5 * values[:, j], rtol=1e-9,
                                   atol=1e-12)
    # the training rows' raw predictions get each leaf's values
    raw = np.zeros((k, X.shape[0]))
    grower.add_leaf_values(raw, 2)
    for j, tree in enumerate(trees):
        np.testing.assert_array_equal(raw[j], tree.predict(X))


def test_one_output_grows_the_tree_of_the_scalar_grower():
    X, Y = problem(n=5000)
    mapper, Xb = _binned(X)
    g = (Y[:, 1].mean() - Y[:, 1]).astype(np.float32)[None].copy()
    h = np.ones((1, 1), np.float32)
    settings = TreeSettings(max_leaf_nodes=15, l2_regularization=1.0, learning_rate=0.1)
    vector = VectorTreeGrower(Xb, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                              mapper.missing_bin, 1, True, settings).grow(g, h)[0]
    source = LocalTrainingData(Xb, mapper.missing_bin + 1, 2)
    source.use_gradients(g, h, True)
    source.start_tree(0)
    scalar = TreeGrower(source, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                        settings, n_threads=2).grow()
    for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "left", "right",
                  "is_leaf", "count"):
        assert np.array_equal(vector.nodes[field], scalar.nodes[field]), field
    # the scalar grower sums on an exact grid: the values agree to rounding
    np.testing.assert_allclose(vector.nodes["value"], scalar.nodes["value"], rtol=1e-6,
                               atol=1e-9)


# ----------------------------------------------------------- estimators

def test_one_tree_a_round_shared_by_the_outputs():
    X, Y = problem()
    model = HistGBDTRegressor(max_iter=30, **VECTOR).fit(X, Y)
    assert model.n_trees_per_iteration_ == 3
    for round_trees in model.booster_.trees:
        first = round_trees[0].nodes
        for tree in round_trees[1:]:
            for field in ("feature_idx", "num_threshold", "left", "is_leaf", "count"):
                assert np.array_equal(tree.nodes[field], first[field])
        assert not np.array_equal(round_trees[1].nodes["value"], first["value"])
    # every output learnt; on the whole near a tree per output with the same
    # rounds (whose trees have k times the leaves)
    X_test, Y_test = problem(2000, seed=9)
    per_output = HistGBDTRegressor(max_iter=30, early_stopping=False, random_state=0)
    rmse = lambda m: np.sqrt(((m.predict(X_test) - Y_test) ** 2).mean(0))
    assert np.all(rmse(model) < 0.4 * Y_test.std(0))
    assert rmse(model).mean() < 1.3 * rmse(per_output.fit(X, Y)).mean()
    # the split gains, output by output, add up to the feature importances
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert model.feature_importances_[4:].sum() < 0.01  # features no output uses


@pytest.mark.parametrize("params", [
    dict(), dict(subsample=0.7), dict(colsample_bytree=0.5), dict(grow_policy="depthwise"),
    dict(l1_regularization=1.0, max_depth=4),
])
def test_the_same_model_for_any_number_of_threads(params):
    X, Y = problem(n=20000)
    w = np.random.default_rng(2).uniform(0.5, 2.0, X.shape[0])
    predictions = [HistGBDTRegressor(max_iter=15, n_threads=t, **VECTOR, **params)
                   .fit(X, Y, sample_weight=w).predict(X) for t in (1, 2, 4)]
    for other in predictions[1:]:
        np.testing.assert_array_equal(other, predictions[0])


def test_weights_early_stopping_warm_start_and_sparse_input():
    X, Y = problem()
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    # a weight of 2 is the row twice
    doubled = HistGBDTRegressor(max_iter=10, min_samples_leaf=1, **VECTOR).fit(
        np.vstack([X, X[:500]]), np.vstack([Y, Y[:500]]))
    weighted = HistGBDTRegressor(max_iter=10, min_samples_leaf=1, **VECTOR).fit(
        X, Y, sample_weight=np.r_[np.full(500, 2.0), np.ones(X.shape[0] - 500)])
    np.testing.assert_allclose(weighted.predict(X), doubled.predict(X), rtol=1e-6,
                               atol=1e-9)
    stopped = HistGBDTRegressor(max_iter=500, multi_strategy="multi_output_tree",
                                early_stopping=True, n_iter_no_change=3,
                                random_state=0).fit(X, Y, sample_weight=w)
    assert stopped.n_iter_ < 500
    assert "loss" in stopped.evals_result_["validation"]
    # a warm start continues exactly as one long fit
    long = HistGBDTRegressor(max_iter=20, **VECTOR).fit(X, Y)
    warm = HistGBDTRegressor(max_iter=10, warm_start=True, **VECTOR).fit(X, Y)
    warm.set_params(max_iter=20).fit(X, Y)
    np.testing.assert_array_equal(warm.predict(X), long.predict(X))
    # sparse input (bundled when it pays) grows the trees of the dense rows
    Xs = np.where(np.abs(np.nan_to_num(X)) < 1.0, 0.0, np.nan_to_num(X))
    dense = HistGBDTRegressor(max_iter=10, **VECTOR).fit(Xs, Y)
    sparse = HistGBDTRegressor(max_iter=10, **VECTOR).fit(sp.csr_matrix(Xs), Y)
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(Xs))


def test_persistence_explanations_and_export(tmp_path):
    X, Y = problem()
    model = HistGBDTRegressor(max_iter=15, **VECTOR).fit(X, Y)
    for loaded in (pickle.loads(pickle.dumps(model)),
                   (save_model(model, tmp_path / "m.json"),
                    load_model(tmp_path / "m.json"))[1]):
        assert loaded.multi_strategy == "multi_output_tree"
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    contributions = model.predict_contributions(X[:50])
    assert contributions.shape == (50, 3, X.shape[1] + 1)
    np.testing.assert_allclose(contributions.sum(-1), model.predict(X[:50]), rtol=1e-9,
                               atol=1e-9)


@pytest.mark.parametrize("params, match", [
    (dict(monotonic_cst=[1, 0, 0, 0, 0, 0]), "monotonic_cst"),
    (dict(interaction_cst="no_interactions"), "interaction_cst"),
    (dict(categorical_features=[0]), "categorical"),
    (dict(use_quantized_grad=True), "use_quantized_grad"),
    (dict(data_sample_strategy="goss"), "goss"),
    (dict(colsample_bynode=0.5), "colsample_bynode"),
])
def test_what_vector_leaves_do_not_support_gets_a_clear_error(params, match):
    X, Y = problem(n=500)
    if "categorical_features" in params:
        X = X.copy()
        X[:, 0] = np.floor(np.abs(np.nan_to_num(X[:, 0])) * 3)
    with pytest.raises(ValueError, match=f"(?s){match}.*one_output_per_tree"):
        HistGBDTRegressor(max_iter=3, **VECTOR, **params).fit(X, Y)
    # a single output has nothing to share: the option changes nothing
    single = HistGBDTRegressor(max_iter=3, **dict(VECTOR, multi_strategy="one_output_per_tree"),
                               **params).fit(X, Y[:, 0]).predict(X)
    np.testing.assert_array_equal(
        HistGBDTRegressor(max_iter=3, **VECTOR, **params).fit(X, Y[:, 0]).predict(X), single)


def test_large_nodes_summed_in_blocks_of_rows_give_the_reference_tree():
    # from 131,072 rows a node's histograms are built per (feature, block of
    # rows) and the blocks added up: the same tree for any number of threads
    rng = np.random.default_rng(5)
    n = 140_000
    X = rng.normal(size=(n, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper, Xb = _binned(X, max_bins=31)
    G = rng.normal(size=(2, n)).astype(np.float32)
    H = rng.uniform(0.5, 1.5, size=(1, n)).astype(np.float32)
    settings = TreeSettings(max_leaf_nodes=8, min_samples_leaf=100, l2_regularization=1.0,
                            learning_rate=1.0)
    trees = [VectorTreeGrower(Xb, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                              mapper.missing_bin, 2, True, settings).grow(G, H, n_threads=t)
             for t in (1, 3)]
    for one, other in zip(*trees):
        assert one.nodes.tobytes() == other.nodes.tobytes()
    expected, values = reference_tree(
        Xb, mapper.n_bins_non_missing_, mapper.missing_bin, G, H,
        dict(l1=0.0, l2=1.0, min_child_weight=1e-3, min_samples_leaf=100,
             min_gain_to_split=0.0, max_leaf_nodes=8, max_depth=1024, lossguide=True))
    nodes = trees[0][0].nodes
    assert [int(f) if not leaf else -1 for f, leaf in
            zip(nodes["feature_idx"], nodes["is_leaf"])] == [e[0] for e in expected]
    np.testing.assert_allclose(trees[0][1].nodes["value"], values[:, 1], rtol=1e-9)
