"""A fitted model as the shap library's generic tree-ensemble description,
so that ``shap.TreeExplainer`` runs its own algorithms (path-dependent and
interventional TreeSHAP, interaction values, probability and loss outputs)
on hgbt trees.

shap routes a row as hgbt does: a missing value (NaN) to the node's default
child, else ``x <= threshold`` to the left child, in float64 (its
``_tree.py`` casts ``X`` to the description's ``input_dtype`` and its
``tree_shap.h`` compares with ``<=``). hgbt's thresholds therefore go over
unchanged; no ``nextafter`` shift is needed. A categorical split (a category
set, with non-category values sent the missing way) has no counterpart in
the description, whose splits are all numeric thresholds.

This module does not import shap: the description is plain NumPy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.tables import feature_names
from ._forest import check_fitted_model

if TYPE_CHECKING:
    from ..estimators.gradient_boosting import BaseHistGBDT
    from ..model.booster import Booster

# Description keys that let shap transform the raw score (its
# model_output="probability" and "log_loss"), where hgbt's loss is the one
# shap means by them.
_BINARY_LOG_LOSS = {"objective": "binary_crossentropy", "tree_output": "log_odds"}
_SQUARED_ERROR = {"objective": "squared_error", "tree_output": "raw_value"}


def _check_numeric(booster, trees):
    if booster.target_stats is not None:
        name = feature_names(booster)[int(booster.target_stats["features"][0])]
        raise ValueError(
            f"Categorical feature {name!r} has more than 255 categories: the trees also "
            "split on its target statistic, a lookup table that the shap library's tree "
            "description cannot hold. Use the model's own predict_contributions / "
            "predict_interactions, which handle it.")
    for index, (tree, _) in enumerate(trees):
        nodes = tree.nodes
        categorical = np.flatnonzero((nodes["is_categorical"] != 0) & (nodes["is_leaf"] == 0))
        if categorical.size:
            name = feature_names(booster)[nodes["feature_idx"][categorical[0]]]
            raise ValueError(
                f"The model has categorical splits (the first in tree {index}, on feature "
                f"{name!r}); the shap library's tree description has only numeric "
                "thresholds and cannot express a category set. Use the model's own "
                "predict_contributions / predict_interactions, which handle them.")


def _expected_values(nodes):
    """Each node's cover-weighted mean leaf value (what shap keeps at inner
    nodes), children before parents: deepest level first."""
    values = nodes["value"].astype(np.float64)
    inner = nodes["is_leaf"] == 0
    depth = nodes["depth"]
    count = nodes["count"].astype(np.float64)
    for level in np.unique(depth[inner])[::-1]:
        j = np.flatnonzero(inner & (depth == level))
        left, right = nodes["left"][j], nodes["right"][j]
        values[j] = (count[left] * values[left] + count[right] * values[right]) / count[j]
    return values


def _tree_description(tree, output, n_outputs):
    nodes = tree.nodes
    leaf = nodes["is_leaf"] != 0
    left = np.where(leaf, -1, nodes["left"].astype(np.int64))
    right = np.where(leaf, -1, nodes["right"].astype(np.int64))
    values = np.zeros((nodes.shape[0], n_outputs))
    values[:, output] = _expected_values(nodes)
    return {
        "children_left": left,
        "children_right": right,
        "children_default": np.where(nodes["missing_go_to_left"] != 0, left, right),
        "features": np.where(leaf, -1, nodes["feature_idx"].astype(np.int64)),
        "thresholds": np.where(leaf, 0.0, nodes["num_threshold"]),
        "values": values,
        "node_sample_weight": nodes["count"].astype(np.float64),
    }


def shap_model(model: BaseHistGBDT | Booster) -> dict[str, Any]:
    """The fitted model as a tree-ensemble description for ``shap.TreeExplainer``.

    ``shap.TreeExplainer(shap_model(model))`` explains the model's raw score
    (log-odds, one score per class, or the regressor's link scale) with the
    shap library's algorithms. Its path-dependent values (no background data)
    equal :meth:`~hgbt.HistGBDTRegressor.predict_contributions` and its
    ``shap_interaction_values`` equal ``predict_interactions``, up to
    floating-point summation order: both weight a split's branches by the
    training rows that took them (the node ``count``).

    Parameters
    ----------
    model : HistGBDTRegressor or HistGBDTClassifier
        A fitted model without categorical splits.

    Returns
    -------
    description : dict
        ``"trees"``: one dict per tree, in the order of
        ``trees_to_dataframe`` (round by round, class by class), holding
        arrays over its nodes: ``children_left``, ``children_right``,
        ``children_default`` (the missing-value child; -1 at leaves),
        ``features`` (column of ``X``), ``thresholds`` (``x <= threshold``
        goes left), ``values`` (shape ``(n_nodes, n_outputs)``: the leaf
        values, at inner nodes the count-weighted mean of the leaves below,
        in the tree's output column and zero in the others) and
        ``node_sample_weight`` (the count). ``"base_offset"``: the baseline
        per output. ``"input_dtype"`` and ``"internal_dtype"``: float64.
        For a binary classifier, and a regressor with ``loss='squared_error'``,
        also ``"objective"`` and ``"tree_output"``, so that shap's
        ``model_output="probability"`` / ``"log_loss"`` apply.

        Outputs: one for a regressor and a binary classifier (the log-odds of
        ``classes_[1]``); ``n_classes`` for a multiclass classifier, output
        ``k`` the score of ``classes_[k]``. shap then returns
        ``shap_values`` of shape ``(n_samples, n_features, n_classes)`` and
        ``expected_value`` of length ``n_classes``: ``np.moveaxis(values, -1, 1)``
        is ``predict_contributions(X)[:, :, :-1]``.

    Raises
    ------
    NotFittedError
        If the model is not fitted.
    ValueError
        If the model has categorical splits, a pooled categorical feature
        (more than 255 categories: its target statistic is a lookup
        table), or no trees.
    TypeError
        If ``model`` is not an hgbt estimator.

    Notes
    -----
    Give shap ``X`` as the model sees it: numeric columns in the fitted
    order (shap reads a DataFrame's values). An explainer given background
    ``data`` overwrites ``node_sample_weight`` in the description with the
    background's counts, so build a fresh description for each explainer.
    """
    booster = check_fitted_model(model, "shap_model")
    n_outputs = booster.n_trees_per_iteration
    trees = [(tree, k) for round_ in booster.trees for k, tree in enumerate(round_)]
    if not trees:
        raise ValueError("The model has no trees to describe.")
    _check_numeric(booster, trees)
    description = {
        "trees": [_tree_description(tree, k, n_outputs) for tree, k in trees],
        "base_offset": np.array(booster.baseline, dtype=np.float64),
        "input_dtype": np.float64,
        "internal_dtype": np.float64,
    }
    loss = booster.objective["loss"]
    if loss == "log_loss" and n_outputs == 1:
        description.update(_BINARY_LOG_LOSS)
    elif loss == "squared_error":
        description.update(_SQUARED_ERROR)
    return description
