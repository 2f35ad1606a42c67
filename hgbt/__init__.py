"""hgbt: histogram-based gradient-boosted decision trees."""
from .core.version import __version__

try:  # the compiled kernels: missing when hgbt is imported from an unbuilt source tree
    from .core import _types  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"hgbt's compiled kernels are missing ({exc}): this hgbt is imported from "
        f"{__path__[0]}, a source tree that is not built. Install it (pip install . "
        "from the source tree) and run Python from another directory, where the "
        "installed package is found first.") from exc

from .data.dataset import Dataset
from .estimators.classifier import HistGBDTClassifier
from .estimators.ranker import HistGBDTRanker
from .estimators.regressor import HistGBDTRegressor
from .estimators.survival import HistGBDTSurvival
from .estimators.train import cv, train
from .inspection import partial_dependence
from .model import Booster
from .persistence import InconsistentVersionWarning, load_model, save_model

__all__ = ["Booster", "Dataset", "HistGBDTClassifier", "HistGBDTRanker", "HistGBDTRegressor",
           "HistGBDTSurvival", "InconsistentVersionWarning", "cv", "load_model", "partial_dependence",
           "save_model", "train", "__version__"]
