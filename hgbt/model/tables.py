"""A Booster's trees as tables: one row per node (pandas), a text dump,
and per-feature importances (split count, gain, cover and row count, totals
and means per split).

A node's ``count`` is the training rows that reached it and ``sum_hessians``
their hessian sum (the rows the tree was grown on, under row sampling; NaN
for trees saved before hessian sums were recorded). The cover is the hessian
sum, as XGBoost's; the row count is LightGBM's ``internal_count``.
"""
import numpy as np

from ..core._types import NODE_DTYPE
from ..data.binning import bitset_to_codes
from ..data import target_stats
from ..data.categorical import is_pooled

NODE_COLUMNS = ["tree", "round", "output", "node", "depth", "is_leaf", "feature",
                "feature_idx", "split_type", "threshold", "left_categories",
                "missing_go_to_left", "left", "right", "gain", "count", "sum_hessians",
                "value"]


def feature_names(booster):
    """The user's feature names (``x0``, ``x1``, ... without names)."""
    names = booster.feature_names_in_
    if names is None:
        return [f"x{f}" for f in range(booster.n_features_in_)]
    return [str(name) for name in names]


def source_features(booster, features):
    """The user's feature of each tree feature index: a pooled feature's
    target statistic (``data/target_stats.py``) stands for the feature."""
    features = np.asarray(features, dtype=np.int64)
    stats = booster.target_stats
    if stats is None:
        return features
    n = booster.n_features_in_
    extra = features >= n
    out = features.copy()
    out[extra] = target_stats.sources(stats)[features[extra] - n]
    return out


def _split_type(booster, feature, categorical):
    """'numeric', 'categorical', or for a target statistic 'target_mean'
    ('target_mean:<class>' for a multiclass target: the class's share)."""
    if categorical:
        return "categorical"
    if feature < booster.n_features_in_:
        return "numeric"
    n_out = target_stats.n_outputs(booster.target_stats)
    if n_out == 1:
        return "target_mean"
    return f"target_mean:{booster.classes[(feature - booster.n_features_in_) % n_out]}"


def category_values(booster, feature):
    """The categories that categorical ``feature``'s codes index (features
    mapped by value), or None where the codes stand for themselves (for a
    pooled feature, its bins: ``doc/categorical.md``)."""
    categories = booster.categorical.categories[feature]
    by_value = booster.categorical.by_value[feature]
    return categories if by_value and not is_pooled(categories, by_value) else None


def _left_categories(booster, feature, bitset):
    """The categories known at fit that a categorical split sends left, as
    :func:`category_values` reports them."""
    known = booster.bin_mapper.known_cat_bitsets_[feature]
    codes = bitset_to_codes(np.asarray(bitset) & known)
    categories = category_values(booster, feature)
    if categories is not None:
        return tuple(categories[c] for c in codes)
    return tuple(int(c) for c in codes)


def _tree_frame(booster, pd, names, tree, index, round_, output):
    nodes = tree.nodes
    n = nodes.shape[0]
    leaf = nodes["is_leaf"] != 0
    categorical = (nodes["is_categorical"] != 0) & ~leaf
    internal = nodes["feature_idx"].astype(np.int64)
    features = source_features(booster, internal)
    inner = np.where(~leaf)[0]
    column = np.full(n, None, dtype=object)

    def inner_only(values):
        out = column.copy()
        out[inner] = [values(j) for j in inner]
        return out

    return pd.DataFrame({
        "tree": index, "round": round_, "output": output,
        "node": np.arange(n), "depth": nodes["depth"].astype(np.int64), "is_leaf": leaf,
        "feature": inner_only(lambda j: names[features[j]]),
        "feature_idx": np.where(leaf, -1, features),
        "split_type": inner_only(lambda j: _split_type(booster, internal[j], categorical[j])),
        "threshold": np.where(leaf | categorical, np.nan, nodes["num_threshold"]),
        "left_categories": inner_only(lambda j: _left_categories(
            booster, features[j], tree.cat_bitsets[nodes["bitset_idx"][j]])
            if categorical[j] else None),
        "missing_go_to_left": inner_only(lambda j: bool(nodes["missing_go_to_left"][j])),
        "left": np.where(leaf, -1, nodes["left"].astype(np.int64)),
        "right": np.where(leaf, -1, nodes["right"].astype(np.int64)),
        "gain": np.where(leaf, np.nan, nodes["gain"]),
        "count": nodes["count"].astype(np.int64),
        "sum_hessians": nodes["sum_hessians"],
        "value": nodes["value"],
    }, columns=NODE_COLUMNS)


def trees_frame(booster):
    """Every node of every tree as one pandas DataFrame (see
    ``Booster.trees_to_dataframe``)."""
    import pandas as pd

    names = feature_names(booster)
    k_trees = booster.n_trees_per_iteration
    frames = [_tree_frame(booster, pd, names, tree, r * k_trees + k, r, k)
              for r, trees in enumerate(booster.trees) for k, tree in enumerate(trees)]
    if not frames:
        return pd.DataFrame(columns=NODE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def tree_frame(booster, tree_index):
    """The nodes of one tree (``tree`` as in :func:`trees_frame`: position over
    all trees, round by round) as a pandas DataFrame."""
    import pandas as pd

    k_trees = booster.n_trees_per_iteration
    n_trees = booster.n_iter * k_trees
    if not (isinstance(tree_index, (int, np.integer)) and not isinstance(tree_index, bool)
            and 0 <= tree_index < n_trees):
        raise ValueError(f"tree_index must be an integer in [0, {n_trees - 1}] (the model "
                         f"has {n_trees} trees), got {tree_index!r}.")
    round_, output = divmod(int(tree_index), k_trees)
    return _tree_frame(booster, pd, feature_names(booster), booster.trees[round_][output],
                       int(tree_index), round_, output)


def split_test(row, precision=9, max_categories=None):
    """An inner node's test as text, true for the rows going left:
    ``feature <= threshold`` or ``feature in {categories}`` (at most
    ``max_categories`` of them shown, then "...")."""
    if row.split_type == "categorical":
        shown = [str(c) for c in row.left_categories]
        if max_categories is not None and len(shown) > max_categories:
            shown = shown[:max_categories] + ["..."]
        return f"{row.feature} in {{{', '.join(shown)}}}"
    if row.split_type != "numeric":  # "target_mean[:class]" of a pooled feature
        return f"{row.split_type}({row.feature}) <= {row.threshold:.{precision}g}"
    return f"{row.feature} <= {row.threshold:.{precision}g}"


def _describe(row):
    sizes = f"count={row.count} sum_hessians={row.sum_hessians:.6g}"
    if row.is_leaf:
        return f"leaf value={row.value:.6g} {sizes}"
    missing = "left" if row.missing_go_to_left else "right"
    return f"{split_test(row)} (missing: {missing}) gain={row.gain:.6g} {sizes}"


def dump_text(frame):
    """The trees as indented text: a header per tree, then one line per node
    in depth-first order, the left child (the split's test true) first."""
    lines = []
    for tree, nodes in frame.groupby("tree", sort=True):
        rows = list(nodes.itertuples(index=False))
        lines.append(f"tree {tree} (round {rows[0].round}, output {rows[0].output})")
        stack = [(0, 1)]
        while stack:
            j, level = stack.pop()
            row = rows[j]
            lines.append(f"{'  ' * level}[{row.node}] {_describe(row)}")
            if not row.is_leaf:
                stack += [(row.right, level + 1), (row.left, level + 1)]
    return "\n".join(lines) + "\n"


# importance column (a mean per split) -> the node column its total sums
_TOTALS = {"gain": "gain", "cover": "sum_hessians", "count": "count"}


def importance_frame(booster):
    """Per feature: splits, and the total and mean per split of the gain, the
    cover (hessian sums) and the row count."""
    import pandas as pd

    names = feature_names(booster)
    # the inner nodes' importance fields only, trees in the order of trees_frame
    nodes = [tree.nodes[tree.nodes["is_leaf"] == 0]
             for trees in booster.trees for tree in trees]
    nodes = np.concatenate(nodes) if nodes else np.zeros(0, dtype=NODE_DTYPE)
    inner = pd.DataFrame({"feature_idx": source_features(booster, nodes["feature_idx"]),
                          "gain": nodes["gain"], "count": nodes["count"].astype(np.int64),
                          "sum_hessians": nodes["sum_hessians"]})
    grouped = inner.groupby("feature_idx")
    # min_count=1: a NaN hessian sum (an old model's) gives NaN, not 0
    out = pd.DataFrame({"split": grouped.size()} | {
        f"total_{name}": grouped[column].sum(min_count=1).astype(np.float64)
        for name, column in _TOTALS.items()}).reindex(range(len(names)), fill_value=0)
    splits = out["split"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in _TOTALS:
            out[name] = np.where(splits > 0, out[f"total_{name}"] / splits, 0.0)
    out.index = pd.Index(names, name="feature")
    return out[["split"] + [c for name in _TOTALS for c in (name, f"total_{name}")]]

