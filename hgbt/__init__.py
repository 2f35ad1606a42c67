"""hgbt: histogram-based gradient-boosted decision trees."""
from .core.version import __version__
from .data.dataset import Dataset
from .estimators.classifier import HistGBDTClassifier
from .estimators.regressor import HistGBDTRegressor
from .estimators.train import cv, train
from .inspection import partial_dependence
from .model import Booster
from .persistence import InconsistentVersionWarning, load_model, save_model

__all__ = ["Booster", "Dataset", "HistGBDTClassifier", "HistGBDTRegressor",
           "InconsistentVersionWarning", "cv", "load_model", "partial_dependence",
           "save_model", "train", "__version__"]
