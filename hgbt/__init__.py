"""hgbt: histogram-based gradient-boosted decision trees."""
from .core.version import __version__
from .estimators.classifier import HistGBDTClassifier
from .estimators.regressor import HistGBDTRegressor
from .inspection import partial_dependence
from .model import Booster
from .persistence import InconsistentVersionWarning, load_model

__all__ = ["Booster", "HistGBDTClassifier", "HistGBDTRegressor", "InconsistentVersionWarning",
           "load_model", "partial_dependence", "__version__"]
