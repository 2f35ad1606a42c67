"""Fitted hgbt models in other libraries' formats.

- :func:`to_onnx`: an ONNX model (``ai.onnx.ml`` tree ensembles), run with
  onnxruntime or any ONNX runtime; needs the ``onnx`` extra
  (``pip install ".[onnx]"`` from the source tree: skl2onnx, onnx, onnxruntime).
- :func:`to_treelite`: a ``treelite.Model``; needs the ``treelite`` extra.
- :func:`shap_model`: the shap library's tree-ensemble description, for
  ``shap.TreeExplainer`` (the ``shap`` extra).
- :func:`numeric_input`: the float matrix the exported models read
  (categorical columns as codes), from anything ``predict`` accepts.

Importing this package registers hgbt's converters with skl2onnx when
skl2onnx is installed, so that ``skl2onnx.to_onnx(model, X)`` works too
(:func:`register_onnx` does it explicitly). See ``doc/explain.md``,
"Exporting a model" and "With the shap library".
"""
from ._forest import numeric_input
from .onnx import register as register_onnx, to_onnx
from .shap import shap_model
from .treelite import to_treelite

__all__ = ["numeric_input", "register_onnx", "shap_model", "to_onnx", "to_treelite"]

try:
    register_onnx()
except ImportError:  # skl2onnx not installed: to_onnx says so when called
    pass
