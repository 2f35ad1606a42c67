"""Fitted models in other libraries' formats: the shap library's tree
description (``shap_model``)."""
from .shap import shap_model

__all__ = ["shap_model"]
