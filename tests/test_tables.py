"""Tree tables, text dump and importance table (``hgbt/model/tables.py``)
against the trees' node arrays."""
import re

import numpy as np
import pandas as pd
import pytest

from hgbt import HistGBDTClassifier
from fitted import categorical_by_value, rounds
from reference_trees import fitted, goes_left


def frame_model():
    """A multiclass model fitted on a DataFrame with a category column."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=600),
                      "colour": pd.Categorical(rng.choice(list("pqrstu"), 600)),
                      "b": rng.normal(size=600)})
    X.loc[::9, "a"] = np.nan
    y = (X["a"].fillna(0) > 0).astype(int) + X["colour"].isin(["q", "s"]).astype(int)
    return HistGBDTClassifier(max_iter=4, max_leaf_nodes=6, random_state=0).fit(X, y)


def all_trees(model):
    return [(r, k, tree) for r, trees in enumerate(rounds(model))
            for k, tree in enumerate(trees)]


def known_categories(model, f):
    """(value shown in the table, code the tree sees) of every category of f."""
    categories = model.categorical_categories_[f]
    if categorical_by_value(model)[f]:
        return [(value, code) for code, value in enumerate(categories)]
    return [(int(code), int(code)) for code in categories]


@pytest.mark.parametrize("which", ["frame", "codes"])
def test_table_rows_are_the_nodes(which):
    model = frame_model() if which == "frame" else fitted("multiclass")[0]
    table = model.trees_to_dataframe()
    names = list(getattr(model, "feature_names_in_", [f"x{f}" for f in range(5)]))
    assert len(table) == sum(tree.nodes.shape[0] for _, _, tree in all_trees(model))
    n_categorical = 0
    for t, (r, k, tree) in enumerate(all_trees(model)):
        rows = table[table["tree"] == t]
        assert (rows["round"] == r).all() and (rows["output"] == k).all()
        for j, row in enumerate(rows.itertuples(index=False)):
            node = tree.nodes[j]
            assert (row.node, row.depth, row.count, row.sum_hessians, row.value) == (
                j, node["depth"], node["count"], node["sum_hessians"], node["value"])
            assert row.is_leaf == bool(node["is_leaf"])
            if row.is_leaf:
                assert (row.feature_idx, row.left, row.right) == (-1, -1, -1)
                assert pd.isna(row.feature) and pd.isna(row.split_type) and np.isnan(row.gain)
                continue
            f = int(node["feature_idx"])
            assert (row.feature, row.feature_idx, row.left, row.right, row.gain) == (
                names[f], f, node["left"], node["right"], node["gain"])
            assert row.missing_go_to_left == bool(node["missing_go_to_left"])
            if row.split_type == "categorical":
                n_categorical += 1
                assert np.isnan(row.threshold)
                x = np.zeros(len(names))
                expected = []
                for value, code in known_categories(model, f):
                    x[f] = code
                    if goes_left(tree.nodes, tree.cat_bitsets, j, x):
                        expected.append(value)
                assert list(row.left_categories) == expected
            else:
                assert row.threshold == node["num_threshold"]
                assert row.left_categories is None
    assert n_categorical > 0


def test_text_dump_walks_every_node_depth_first():
    model = frame_model()
    text = model.dump_trees()
    table = model.trees_to_dataframe()
    headers = re.findall(r"^tree (\d+) \(round (\d+), output (\d+)\)$", text, flags=re.M)
    assert len(headers) == len(all_trees(model))
    blocks = re.split(r"^tree \d+ .*\n", text, flags=re.M)[1:]
    for (t, r, k, tree), block in zip(((t, r, k, tree) for t, (r, k, tree)
                                       in enumerate(all_trees(model))), blocks):
        lines = block.splitlines()
        ids = [int(re.match(r"\s*\[(\d+)\]", line).group(1)) for line in lines]

        def preorder(j):
            node = tree.nodes[j]
            if node["is_leaf"]:
                return [j]
            return [j] + preorder(int(node["left"])) + preorder(int(node["right"]))

        assert ids == preorder(0)
        for line, j in zip(lines, ids):
            indent = len(line) - len(line.lstrip(" "))
            assert indent == 2 * (tree.nodes["depth"][j] + 1)
            assert ("leaf value=" in line) == bool(tree.nodes["is_leaf"][j])
            count = int(re.search(r"count=(\d+)", line).group(1))
            assert count == tree.nodes["count"][j]
            cover = float(re.search(r"sum_hessians=(\S+)", line).group(1))
            assert cover == pytest.approx(tree.nodes["sum_hessians"][j], rel=1e-5)
    assert set(table["tree"]) == set(range(len(blocks)))


def test_importance_table():
    model = frame_model()
    imp = model.feature_importance_table()
    assert list(imp.index) == list(model.feature_names_in_)
    split, gain, cover, count = np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
    for _, _, tree in all_trees(model):
        inner = tree.nodes[tree.nodes["is_leaf"] == 0]
        for node in inner:
            f = node["feature_idx"]
            split[f] += 1
            gain[f] += node["gain"]
            cover[f] += node["sum_hessians"]
            count[f] += node["count"]
    np.testing.assert_array_equal(imp["split"], split)
    np.testing.assert_allclose(imp["total_gain"], gain, rtol=1e-12)
    np.testing.assert_allclose(imp["total_cover"], cover, rtol=1e-12)
    np.testing.assert_array_equal(imp["total_count"], count)
    assert (imp["total_cover"] < imp["total_count"]).all()  # log loss: h = p(1-p) < 1
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(imp["gain"], np.where(split > 0, gain / split, 0))
        np.testing.assert_allclose(imp["cover"], np.where(split > 0, cover / split, 0))
        np.testing.assert_allclose(imp["count"], np.where(split > 0, count / split, 0))
    np.testing.assert_allclose(imp["total_gain"] / imp["total_gain"].sum(),
                               model.feature_importances_, rtol=1e-12)
