"""hgbt: histogram-based gradient-boosted decision trees."""
from .core.version import __version__
from .estimators.classifier import HistGBDTClassifier
from .estimators.regressor import HistGBDTRegressor
from .persistence import InconsistentVersionWarning, load_model

__all__ = ["HistGBDTClassifier", "HistGBDTRegressor", "InconsistentVersionWarning",
           "load_model", "__version__"]
