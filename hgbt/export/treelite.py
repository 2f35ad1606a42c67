"""Export to Treelite with its model builder (``treelite.model_builder``).

Thresholds and leaf values are float64. Numeric splits test ``x <= t`` with
the split's default direction for missing values. A categorical split tests
membership in the list of codes that go opposite to missing values
(``category_list_right_child`` says which side that is); Treelite sends NaN
the default way and negative or unlisted codes the other way of the list,
that is the missing values' way, as hgbt does. One difference: Treelite
truncates a fractional value to an integer code (3.5 is read as 3), where
hgbt sends it the missing way; codes are integers, so this matters only for
invalid input.

Raw scores start from the baseline (``base_scores``); the postprocessor is
'identity', 'exponential' (log-link regressors), 'sigmoid' (binary: the
positive class's probability) or 'softmax' (multiclass, one tree per class
and round).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._forest import describe

if TYPE_CHECKING:
    import treelite

    from ..estimators.gradient_boosting import BaseHistGBDT
    from ..model.booster import Booster

_POSTPROCESSOR = {"identity": "identity", "exp": "exponential", "logistic": "sigmoid",
                  "softmax": "softmax"}


def _build_tree(builder, tree):
    builder.start_tree()
    is_leaf = tree.is_leaf  # a property: computed once, not per node
    for j in range(tree.n_nodes):
        builder.start_node(j)
        if is_leaf[j]:
            builder.leaf(float(tree.value[j]))
        elif tree.categories[j] is None:
            builder.numerical_test(
                int(tree.feature[j]), float(tree.threshold[j]),
                default_left=bool(tree.missing_left[j]), opname="<=",
                left_child_key=int(tree.left[j]), right_child_key=int(tree.right[j]))
        else:
            builder.categorical_test(
                int(tree.feature[j]), default_left=bool(tree.missing_left[j]),
                category_list=[int(c) for c in tree.categories[j]],
                # the listed codes go opposite to missing values
                category_list_right_child=bool(tree.missing_left[j]),
                left_child_key=int(tree.left[j]), right_child_key=int(tree.right[j]))
        builder.end_node()
    builder.end_tree()


def to_treelite(model: BaseHistGBDT | Booster) -> treelite.Model:
    """Convert a fitted hgbt estimator to a ``treelite.Model``.

    Parameters
    ----------
    model : fitted HistGBDTRegressor, HistGBDTClassifier, HistGBDTRanker or HistGBDTSurvival

    Returns
    -------
    treelite.Model
        ``treelite.gtil.predict(out, X)`` gives ``predict`` (regressors) or
        the positive class's probability (binary) / ``predict_proba``
        (multiclass); ``pred_margin=True`` gives the raw scores
        (``decision_function``). ``X``: :func:`hgbt.export.numeric_input`
        of the rows.

    Raises
    ------
    ImportError
        If treelite is not installed (the ``treelite`` extra: ``pip install ".[treelite]"``).
    ValueError
        If the model holds what the export cannot express (see
        :func:`hgbt.export._forest.describe`).
    """
    from treelite.model_builder import (Metadata, ModelBuilder, PostProcessorFunc,
                                        TreeAnnotation)

    forest = describe(model)
    multiclass = forest.link == "softmax"
    task = ("kMultiClf" if multiclass else "kBinaryClf" if forest.link == "logistic"
            else "kRegressor")
    n_classes = forest.n_outputs if multiclass else 1
    # a multi-output regressor: one target per output, each tree adding to its own
    n_targets = 1 if multiclass else forest.n_outputs
    builder = ModelBuilder(
        threshold_type="float64", leaf_output_type="float64",
        metadata=Metadata(num_feature=forest.n_features, task_type=task,
                          average_tree_output=False, num_target=n_targets,
                          num_class=[n_classes] * n_targets, leaf_vector_shape=(1, 1)),
        tree_annotation=TreeAnnotation(num_tree=len(forest.trees),
                                       target_id=[0 if multiclass else tree.output
                                                  for tree in forest.trees],
                                       class_id=[tree.output if multiclass else 0
                                                 for tree in forest.trees]),
        postprocessor=PostProcessorFunc(name=_POSTPROCESSOR[forest.link]),
        base_scores=[float(b) for b in forest.baseline])
    for tree in forest.trees:
        _build_tree(builder, tree)
    return builder.commit()
