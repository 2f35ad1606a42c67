"""A fitted model's trees as a neutral description that the exporters read
(``onnx.py``, ``treelite.py``), so that neither walks the node arrays itself.

The description follows hgbt's routing rule (``hgbt/tree/_routing.pxd``)
exactly, in a form other formats can express:

- a numeric split sends ``x <= threshold`` left, NaN to its missing side;
- a categorical split lists the input values (category codes) that go to the
  side *opposite* to missing values; every other value (NaN, negative,
  fractional, unknown or too large codes) goes the missing values' way. The
  list is read from the split's bitset, so categories unseen at fit go
  where hgbt sends them.

A categorical split whose list is empty sends every value the missing way: it
is replaced by that child. Nodes are renumbered in preorder from 0 (root).

The exported model's input is the numeric matrix hgbt's own kernels read:
numeric features as they are, categorical features as codes (the codes
themselves for integer-coded features; for features mapped by value, such as
pandas ``category`` or string columns, the position in
``categorical_categories_[f]``, NaN for missing or unknown). :func:`numeric_input`
makes it from anything ``predict`` accepts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..data.binning import bitset_to_codes
from ..model.booster import Booster, fitted_booster
from ..data.dataset import MatrixLike
from ..model.tables import feature_names

if TYPE_CHECKING:
    from ..estimators.gradient_boosting import BaseHistGBDT
    from ..tree.predictor import TreePredictor


@dataclass(frozen=True)
class Tree:
    """One tree in preorder (node 0 is the root).

    Per node ``j``: ``feature[j]`` (-1 for a leaf), ``threshold[j]`` (numeric
    splits; NaN otherwise), ``categories[j]`` (categorical splits: sorted
    float64 codes that go opposite to missing values; None otherwise),
    ``missing_left[j]``, children ``left[j]`` / ``right[j]`` (-1 for a leaf)
    and ``value[j]`` (leaves; already shrunk by the learning rate).
    """

    output: int
    feature: np.ndarray
    threshold: np.ndarray
    categories: tuple[np.ndarray | None, ...]
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    @property
    def is_leaf(self) -> np.ndarray:
        return self.feature < 0

    @property
    def n_nodes(self) -> int:
        return self.feature.shape[0]


@dataclass(frozen=True)
class Forest:
    """Every tree of a fitted model with what turns their sums into predictions.

    Raw score ``k`` is ``baseline[k]`` plus the values of the trees with
    ``output == k``; ``link`` ('identity', 'exp', 'logistic' or 'softmax')
    maps the raw scores to ``predict`` (regressors) or ``predict_proba``
    (classifiers; 'logistic' gives the positive class's probability).
    """

    n_features: int
    n_outputs: int
    baseline: np.ndarray
    link: str
    trees: list[Tree]
    classes: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()


def _walk(predictor: TreePredictor, output: int) -> Tree:
    """``predictor`` (a TreePredictor) as a :class:`Tree`."""
    nodes, bitsets = predictor.nodes, predictor.cat_bitsets
    rows = []  # (feature, threshold, categories, missing_left, value, old children)
    stack = [(0, None, None)]  # (old node, parent's new index, side)
    while stack:
        j, parent, side = stack.pop()
        node = nodes[j]
        categories = None
        while not node["is_leaf"] and node["is_categorical"]:
            bitset = bitsets[node["bitset_idx"]]
            # the codes going opposite to missing values: with missing values
            # left, those not in the bitset
            categories = bitset_to_codes(~bitset if node["missing_go_to_left"] else bitset)
            if categories.size:
                break
            # every value goes the missing way: the node is its missing child
            j = node["left"] if node["missing_go_to_left"] else node["right"]
            node = nodes[j]
            categories = None
        new = len(rows)
        if parent is not None:
            rows[parent][5][side] = new
        if node["is_leaf"]:
            rows.append((-1, np.nan, None, False, float(node["value"]), [-1, -1]))
            continue
        threshold = np.nan if categories is not None else float(node["num_threshold"])
        rows.append((int(node["feature_idx"]), threshold,
                     None if categories is None else categories.astype(np.float64),
                     bool(node["missing_go_to_left"]), 0.0, [-1, -1]))
        # right pushed first: the left subtree is numbered first (preorder)
        stack.append((int(node["right"]), new, 1))
        stack.append((int(node["left"]), new, 0))
    feature, threshold, categories, missing_left, value, children = zip(*rows)
    children = np.array(children, dtype=np.int64).reshape(-1, 2)
    return Tree(output=output, feature=np.array(feature, dtype=np.int64),
                threshold=np.array(threshold, dtype=np.float64), categories=categories,
                missing_left=np.array(missing_left, dtype=bool), left=children[:, 0],
                right=children[:, 1], value=np.array(value, dtype=np.float64))


def _leaf(output):
    """A tree of one leaf of value 0 adding to raw score ``output``."""
    return Tree(output=output, feature=np.array([-1]), threshold=np.array([np.nan]),
                categories=(None,), missing_left=np.array([False]), left=np.array([-1]),
                right=np.array([-1]), value=np.array([0.0]))


def describe(model: BaseHistGBDT | Booster) -> Forest:
    """The :class:`Forest` of a fitted hgbt estimator.

    Raises
    ------
    TypeError
        If ``model`` is not an hgbt estimator.
    ValueError
        If it holds something the description cannot state: a pooled
        categorical feature (more than 255 categories or codes >= 255), whose
        codes reach the trees only through a lookup table.
    """
    booster = check_exportable(model)
    trees = [_walk(tree, k) for trees in booster.trees for k, tree in enumerate(trees)]
    if not trees:  # cut to no round (truncate_at_best): the formats want a tree
        trees = [_leaf(k) for k in range(booster.n_trees_per_iteration)]
    return Forest(n_features=int(booster.n_features_in_),
                  n_outputs=booster.n_trees_per_iteration,
                  baseline=np.array(booster.baseline, dtype=np.float64),
                  link=booster.loss.link, trees=trees, classes=booster.classes,
                  feature_names=tuple(feature_names(booster)))


def check_fitted_model(model: BaseHistGBDT | Booster, caller: str | None = None) -> Booster:
    """The Booster of ``model``, a fitted hgbt estimator or a Booster:
    TypeError for anything else, NotFittedError for an unfitted estimator."""
    from ..estimators.gradient_boosting import BaseHistGBDT

    if not isinstance(model, (BaseHistGBDT, Booster)):
        wants = "Expected" if caller is None else f"{caller} takes"
        raise TypeError(f"{wants} a fitted hgbt estimator, got {type(model).__name__}.")
    return fitted_booster(model)[0]


def check_exportable(model: BaseHistGBDT | Booster) -> Booster:
    """The errors of :func:`describe` without walking the trees; returns the
    model's Booster."""
    booster = check_fitted_model(model)
    pooled = booster.pooled_features
    if pooled:
        names = feature_names(booster)
        raise ValueError(
            f"Cannot export: categorical feature {names[pooled[0]]!r} has more than 255 "
            "categories (or codes >= 255), so its values reach the trees through a lookup "
            "table that the exported formats cannot hold. Group its rare categories "
            "into fewer than 255 before fitting.")
    return booster


def numeric_input(model: BaseHistGBDT | Booster, X: MatrixLike) -> np.ndarray:
    """``X`` as the float64 matrix an exported model reads (see the module doc).

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier
    X : array-like, DataFrame or sparse matrix
        Anything the model's ``predict`` accepts.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
        A new array (``X`` is not modified): categorical columns of a
        DataFrame become their codes, sparse input is densified.
    """
    booster = fitted_booster(model)[0]
    # without the target statistics of pooled features (refused by the exporters)
    out = booster.prepare(X, checker=model)[:, :booster.n_features_in_]
    if sp.issparse(out):
        out = out.toarray()
    return np.array(out, dtype=np.float64, order="C", copy=True)
