"""References for the kernels that walk trees on raw values (``_shap.pyx``,
``_apply.pyx``, ``_partial_dependence.pyx``): the routing rule in Python, the
conditional expectation of TreeSHAP's game (also the recursion method's
partial dependence), and random trees with categorical, missing and
repeated splits."""
import math

import numpy as np

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._types import BITSET_DTYPE, NODE_DTYPE
from hgbt.tree.predictor import TreePredictor


def goes_left(nodes, bitsets, j, x):
    """The routing rule of prediction, in Python."""
    v = float(x[int(nodes["feature_idx"][j])])
    if math.isnan(v):
        return bool(nodes["missing_go_to_left"][j])
    if nodes["is_categorical"][j]:
        if 0 <= v < 256 and v == int(v):
            code = int(v)
            return bool((int(bitsets[nodes["bitset_idx"][j], code // 32]) >> (code % 32)) & 1)
        return bool(nodes["missing_go_to_left"][j])
    return v <= float(nodes["num_threshold"][j])


def leaf_of(tree, x):
    """Index of the leaf ``x`` reaches, walking the node array in Python."""
    j = 0
    while not tree.nodes["is_leaf"][j]:
        left = goes_left(tree.nodes, tree.cat_bitsets, j, x)
        j = int(tree.nodes["left"][j] if left else tree.nodes["right"][j])
    return j


def conditional_value(tree, x, present, j=0):
    """v(S): the tree's output with the features in ``present`` set to ``x``'s
    values and the others integrated out, each branch weighted by its share of
    the node's training rows."""
    nodes = tree.nodes
    if nodes["is_leaf"][j]:
        return float(nodes["value"][j])
    left, right = int(nodes["left"][j]), int(nodes["right"][j])
    if int(nodes["feature_idx"][j]) in present:
        child = left if goes_left(nodes, tree.cat_bitsets, j, x) else right
        return conditional_value(tree, x, present, child)
    count = float(nodes["count"][j])
    return sum(nodes["count"][c] / count * conditional_value(tree, x, present, c)
               for c in (left, right))


def random_tree(rng, n_features, categorical, depth=5):
    """A random tree: few features (so they repeat on paths), categorical
    splits on the ``categorical`` features, random missing directions, leaf
    counts random and inner counts their children's sum."""
    records, bitsets = [], []

    def build(d):
        j = len(records)
        records.append({"depth": d})
        if d == depth or (d > 1 and rng.random() < 0.2):
            records[j].update(is_leaf=1, value=rng.normal(), count=int(rng.integers(1, 40)))
            return records[j]["count"]
        f = int(rng.integers(n_features))
        records[j].update(feature_idx=f, missing_go_to_left=int(rng.integers(2)),
                          gain=rng.random())
        if categorical[f]:
            words = np.zeros(8, dtype=BITSET_DTYPE)
            words[0] = rng.integers(1, 2 ** 6)  # a subset of the codes 0..5
            records[j].update(is_categorical=1, bitset_idx=len(bitsets),
                              num_threshold=np.nan)
            bitsets.append(words)
        else:
            records[j]["num_threshold"] = float(rng.choice([-0.5, 0.0, 0.3, 1.0]))
        records[j]["left"] = len(records)
        count = build(d + 1)
        records[j]["right"] = len(records)
        records[j]["count"] = count + build(d + 1)
        return records[j]["count"]

    build(0)
    nodes = np.zeros(len(records), dtype=NODE_DTYPE)
    for i, record in enumerate(records):
        for key, value in record.items():
            nodes[key][i] = value
    return TreePredictor(nodes, np.array(bitsets, dtype=BITSET_DTYPE).reshape(-1, 8))


def random_rows(rng, n, n_features, categorical):
    """Rows hitting thresholds exactly, with NaN and invalid category codes."""
    X = rng.choice([-1.0, -0.2, 0.0, 0.3, 0.7, 2.0], size=(n, n_features))
    for f in np.flatnonzero(categorical):
        # codes, some unseen or not codes at all: they follow the missing direction
        X[:, f] = rng.choice([0, 1, 2, 3, 4, 5, 7, 300, -1, 2.5], size=n)
    X[rng.random(X.shape) < 0.2] = np.nan
    return X


def data(n=600, seed=0):
    """Rows with a categorical feature (3) and missing values, and a score."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 3] = rng.integers(0, 7, size=n)
    X[rng.random(X.shape) < 0.1] = np.nan
    score = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + (X[:, 3] == 2)
    return X, score


def plan_frame(n=500, seed=0):
    """A DataFrame with a numeric 'age' and a string-categorical 'plan', and
    a binary target depending on both."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(40, 10, n),
                      "plan": pd.Categorical(rng.choice(["basic", "pro", "team"], n))})
    return X, (X["age"] > 45) ^ (X["plan"] == "pro")


def fitted(kind, n_threads=2):
    """A small fitted regressor, binary or multiclass classifier, and its X."""
    X, score = data()
    params = dict(max_iter=15, max_leaf_nodes=15, categorical_features=[3],
                  n_threads=n_threads, random_state=0, early_stopping=False)
    if kind == "regressor":
        return HistGBDTRegressor(**params).fit(X, score), X
    if kind == "binary":
        return HistGBDTClassifier(**params).fit(X, score > 0.5), X
    return HistGBDTClassifier(**params).fit(X, np.digitize(score, [-0.5, 0.5, 1.5])), X
