"""hgbt: histogram-based gradient-boosted decision trees."""
from .classifier import HistGBDTClassifier
from .persistence import InconsistentVersionWarning, load_model
from .regressor import HistGBDTRegressor

__version__ = "0.1.0.dev0"
__all__ = ["HistGBDTClassifier", "HistGBDTRegressor", "InconsistentVersionWarning",
           "load_model", "__version__"]
