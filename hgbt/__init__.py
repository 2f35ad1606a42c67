"""hgbt: histogram-based gradient-boosted decision trees."""
from .gradient_boosting import HistGBDTRegressor

__version__ = "0.1.0.dev0"
__all__ = ["HistGBDTRegressor", "__version__"]
