"""Export to ONNX: ``ai.onnx.ml`` TreeEnsembleRegressor / TreeEnsembleClassifier,
with a converter registered with skl2onnx.

The graph
---------
- Regressors: one TreeEnsembleRegressor (the baseline as its base value); an
  ``Exp`` node after it for the log-link losses (poisson, gamma, tweedie).
  Output ``variable``, shape (N, 1).
- Classifiers: one TreeEnsembleClassifier, post-transform LOGISTIC (binary:
  one score, the positive class's log-odds) or SOFTMAX (one score per
  class); outputs ``label`` and ``probabilities`` as skl2onnx's converters of
  scikit-learn's classifiers give them (``zipmap`` option included).
- Numeric splits are BRANCH_LEQ; missing values follow
  ``nodes_missing_value_tracks_true``. A categorical split is a chain of
  BRANCH_EQ nodes, one per category code that goes opposite to missing
  values; their true branches all point to that child, the end of the chain
  to the other (the missing values' side, where NaN, unknown and invalid codes
  end, as in hgbt). onnxruntime folds such chains into one set lookup.

Thresholds
----------
With float32 input (the default) each float64 threshold ``t`` is stored as the
largest float32 ``f <= t``: for every float32 ``x``, ``x <= f`` exactly when
``x <= t``, so rows are routed as hgbt routes the same float32 values. This
needs only ``ai.onnx.ml`` opset 1 and works in every runtime. With float64
input the thresholds, leaf values and base values are stored as double
tensors (``*_as_tensor``, ``ai.onnx.ml`` opset 3): routing is exact on
float64 input. The operators' outputs are float32 either way (the ONNX
definition); with float64 input they are cast to float64.

Registration
------------
``import hgbt.export`` registers the converters with skl2onnx when skl2onnx
is installed (:func:`register`), so that ``skl2onnx.to_onnx(model, X)`` works
for ``HistGBDTRegressor`` and ``HistGBDTClassifier``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._forest import Forest, check_exportable, describe

if TYPE_CHECKING:
    import onnx

    from ..estimators.gradient_boosting import BaseHistGBDT

# ai.onnx.ml opsets: TreeEnsemble* since 1; double tensors (*_as_tensor) since 3.
ML_OPSET_FLOAT = 1
ML_OPSET_DOUBLE = 3
_OPERATOR = {False: "HgbtHistGBDTRegressor", True: "HgbtHistGBDTClassifier"}
# a ranker's score and a survival model's prediction (e^raw: hazard ratio or
# time) are a regressor's output: the regressor's converter
_RANKER_OPERATOR = "HgbtHistGBDTRanker"
_SURVIVAL_OPERATOR = "HgbtHistGBDTSurvival"


def float32_at_most(values: ArrayLike) -> np.ndarray:
    """The largest float32 ``<= v`` for each float64 ``v`` (NaN stays NaN).

    For float32 ``x``: ``x <= float32_at_most(t)`` iff ``x <= t``.
    """
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        out = values.astype(np.float32)
    above = out.astype(np.float64) > values  # rounded up: step one float32 down
    out[above] = np.nextafter(out[above], np.float32(-np.inf))
    return out


def _tree_nodes(tree, tree_id, attrs, leaf_weight):
    """Append one tree's ONNX nodes to ``attrs`` (lists); ``leaf_weight(id, v)``
    records a leaf's value."""
    # a categorical split becomes one BRANCH_EQ node per listed category
    sizes = [1 if c is None else len(c) for c in tree.categories]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)

    def add(node_id, mode, feature, value, true_id, false_id, missing_true):
        attrs["nodes_treeids"].append(tree_id)
        attrs["nodes_nodeids"].append(node_id)
        attrs["nodes_modes"].append(mode)
        attrs["nodes_featureids"].append(feature)
        attrs["nodes_values"].append(value)
        attrs["nodes_truenodeids"].append(true_id)
        attrs["nodes_falsenodeids"].append(false_id)
        attrs["nodes_missing_value_tracks_true"].append(missing_true)

    is_leaf = tree.is_leaf  # a property: computed once, not per node
    for j in range(tree.n_nodes):
        node_id = int(first[j])
        if is_leaf[j]:
            add(node_id, "LEAF", 0, 0.0, 0, 0, 0)
            leaf_weight(node_id, float(tree.value[j]))
            continue
        feature = int(tree.feature[j])
        left, right = int(first[tree.left[j]]), int(first[tree.right[j]])
        missing_left = bool(tree.missing_left[j])
        if tree.categories[j] is None:
            add(node_id, "BRANCH_LEQ", feature, float(tree.threshold[j]), left, right,
                int(missing_left))
            continue
        listed, other = (right, left) if missing_left else (left, right)
        codes = tree.categories[j]
        for i, code in enumerate(codes):
            last = i == len(codes) - 1
            # NaN equals no code: it runs down the chain to the missing side
            add(node_id + i, "BRANCH_EQ", feature, float(code), listed,
                other if last else node_id + i + 1, 0)


def ensemble_attributes(forest: Forest, double: bool = False) -> dict[str, Any]:
    """The attributes of the TreeEnsembleRegressor / TreeEnsembleClassifier
    node for a :class:`~hgbt.export._forest.Forest`, for float32 input or,
    with ``double``, float64 input (double tensors)."""
    classifier = forest.classes is not None
    if classifier and forest.link == "logistic" and forest.n_outputs > 1:
        raise ValueError("ONNX's TreeEnsembleClassifier has no multi-label form: export a "
                         "multi-label classifier with hgbt.export.to_treelite, or one "
                         "binary model per label.")
    prefix = "class" if classifier else "target"
    attrs = {name: [] for name in (
        "nodes_treeids", "nodes_nodeids", "nodes_modes", "nodes_featureids", "nodes_values",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
        f"{prefix}_treeids", f"{prefix}_nodeids", f"{prefix}_ids", f"{prefix}_weights")}
    for tree_id, tree in enumerate(forest.trees):
        def leaf_weight(node_id, value, tree_id=tree_id, output=tree.output):
            attrs[f"{prefix}_treeids"].append(tree_id)
            attrs[f"{prefix}_nodeids"].append(node_id)
            attrs[f"{prefix}_ids"].append(output)
            attrs[f"{prefix}_weights"].append(value)

        _tree_nodes(tree, tree_id, attrs, leaf_weight)
    floats = {"nodes_values": attrs.pop("nodes_values"),
              f"{prefix}_weights": attrs.pop(f"{prefix}_weights"),
              "base_values": list(forest.baseline)}
    if double:
        from onnx import numpy_helper
        for name, values in floats.items():
            attrs[f"{name}_as_tensor"] = numpy_helper.from_array(
                np.array(values, dtype=np.float64), name=f"{name}_as_tensor")
    else:
        attrs["nodes_values"] = float32_at_most(floats["nodes_values"]).tolist()
        attrs[f"{prefix}_weights"] = np.float32(floats[f"{prefix}_weights"]).tolist()
        attrs["base_values"] = np.float32(floats["base_values"]).tolist()
    if classifier:
        attrs["post_transform"] = "LOGISTIC" if forest.link == "logistic" else "SOFTMAX"
        attrs.update(_class_labels(forest.classes))
    else:
        attrs["post_transform"] = "NONE"
        attrs["n_targets"] = forest.n_outputs  # a multi-output regressor: one per output
    return attrs


def _class_labels(classes):
    """``classlabels_int64s`` or ``classlabels_strings`` for ``classes_``."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "biu":
        return {"classlabels_int64s": classes.astype(np.int64).tolist()}
    if classes.dtype.kind == "f" and np.all(classes == np.round(classes)):
        return {"classlabels_int64s": classes.astype(np.int64).tolist()}
    if all(isinstance(c, str) for c in classes.tolist()):
        return {"classlabels_strings": [str(c) for c in classes]}
    raise ValueError(
        f"Cannot export a classifier with class labels {classes[:5].tolist()!r} to ONNX: "
        "labels must be all integers (integral floats included) or all strings.")


# ------------------------------------------------------------ skl2onnx glue

def _check_link(link, classes):
    if classes is None and link not in ("identity", "exp"):
        raise ValueError(f"Cannot export a regressor with the {link!r} link.")
    if classes is not None and link not in ("logistic", "softmax"):
        raise ValueError(f"Cannot export a classifier with the {link!r} link.")


def _shape_calculator(operator):
    from skl2onnx.common.shape_calculator import (
        calculate_linear_classifier_output_shapes, calculate_linear_regressor_output_shapes)

    if hasattr(operator.raw_operator, "classes_"):
        calculate_linear_classifier_output_shapes(operator)
    else:
        calculate_linear_regressor_output_shapes(operator)
        n_outputs = getattr(operator.raw_operator, "n_outputs_", 1)
        if n_outputs > 1:  # one column per output
            operator.outputs[0].type.shape = [operator.inputs[0].type.shape[0], n_outputs]


def _converter(scope, operator, container):
    """skl2onnx converter of both estimators (``operator.raw_operator``)."""
    from onnx import TensorProto
    from skl2onnx.common.data_types import DoubleTensorType

    forest = describe(operator.raw_operator)
    _check_link(forest.link, forest.classes)
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    attrs = ensemble_attributes(forest, double)
    version = ML_OPSET_DOUBLE if double else ML_OPSET_FLOAT
    classifier = forest.classes is not None
    op_type = "TreeEnsembleClassifier" if classifier else "TreeEnsembleRegressor"
    # the ensemble's value output is float32 by definition: cast after it for float64
    final = operator.outputs[1 if classifier else 0].full_name
    needs_exp = forest.link == "exp"
    value = final if not (double or needs_exp) else scope.get_unique_variable_name("scores")
    outputs = [operator.outputs[0].full_name, value] if classifier else [value]
    container.add_node(op_type, [operator.inputs[0].full_name], outputs,
                       op_domain="ai.onnx.ml", op_version=version,
                       name=scope.get_unique_operator_name(op_type), **attrs)
    if needs_exp:
        exp_out = final if not double else scope.get_unique_variable_name("mean")
        container.add_node("Exp", [value], [exp_out], name=scope.get_unique_operator_name("Exp"))
        value = exp_out
    if double:
        container.add_node("Cast", [value], [final], to=TensorProto.DOUBLE,
                           name=scope.get_unique_operator_name("Cast"))


def register() -> None:
    """Register the converters of ``HistGBDTRegressor``, ``HistGBDTClassifier``,
    ``HistGBDTRanker`` and ``HistGBDTSurvival`` (a ranking score, a hazard
    ratio or a time: as a regressor's prediction) with skl2onnx (``update_registered_converter``); repeating it is harmless.

    Raises
    ------
    ImportError
        If skl2onnx is not installed (the ``onnx`` extra: ``pip install ".[onnx]"``).
    """
    from skl2onnx import update_registered_converter

    from ..estimators.classifier import HistGBDTClassifier
    from ..estimators.ranker import HistGBDTRanker
    from ..estimators.regressor import HistGBDTRegressor
    from ..estimators.survival import HistGBDTSurvival

    update_registered_converter(HistGBDTRegressor, _OPERATOR[False], _shape_calculator,
                                _converter)
    update_registered_converter(HistGBDTRanker, _RANKER_OPERATOR, _shape_calculator,
                                _converter)
    update_registered_converter(HistGBDTSurvival, _SURVIVAL_OPERATOR, _shape_calculator,
                                _converter)
    # skl2onnx's classifier parser and shape calculator read 'zipmap' and 'nocl'
    update_registered_converter(HistGBDTClassifier, _OPERATOR[True], _shape_calculator,
                                _converter, options={"zipmap": [True, False, "columns"],
                                                     "nocl": [False]})


def to_onnx(model: BaseHistGBDT, *, dtype: DTypeLike = np.float32,
            zipmap: bool | Literal["columns"] = False,
            target_opset: int | dict[str, int] | None = None,
            input_name: str = "X") -> onnx.ModelProto:
    """Convert a fitted hgbt estimator to an ONNX model.

    The same as ``skl2onnx.to_onnx(model, initial_types=...)`` once
    :func:`register` has run, with the input declared from the model.

    Parameters
    ----------
    model : fitted HistGBDTRegressor, HistGBDTClassifier, HistGBDTRanker or HistGBDTSurvival
    dtype : {numpy.float32, numpy.float64}, default=numpy.float32
        Type of the input tensor, shape (N, ``n_features_in_``). Feed it
        :func:`hgbt.export.numeric_input` of the rows (numeric features as
        they are, categorical features as their codes).
    zipmap : bool or 'columns', default=False
        Classifiers: probabilities as a tensor (False, an output
        ``probabilities`` of shape (N, n_classes)) or as skl2onnx's ZipMap
        (True: a list of dicts; 'columns': one output per class).
    target_opset : int or dict, default=None
        Passed to skl2onnx (None: its latest tested opsets); float64 input
        needs ``ai.onnx.ml`` opset 3 or later.
    input_name : str, default='X'

    Returns
    -------
    onnx.ModelProto
        Outputs: regressors ``variable`` (N, 1); classifiers ``label`` (N,)
        and ``probabilities``.

    Raises
    ------
    ValueError
        If the model holds what ONNX cannot express (see
        :func:`hgbt.export._forest.describe`; classifiers: labels neither all
        integers nor all strings).
    """
    from skl2onnx import to_onnx as skl2onnx_to_onnx
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}.")
    # a clear error before skl2onnx sees the model (its converter walks the trees)
    classes = getattr(model, "classes_", None)
    _check_link(check_exportable(model).loss.link, classes)
    register()
    tensor = FloatTensorType if dtype == np.float32 else DoubleTensorType
    options = {id(model): {"zipmap": zipmap}} if classes is not None else None
    n_features = int(model.n_features_in_)
    return skl2onnx_to_onnx(model, initial_types=[(input_name, tensor([None, n_features]))],
                            options=options, target_opset=target_opset)
