"""Training on a Dask cluster: the same model as the local estimators, bit for bit.

Needs ``dask`` and ``distributed`` (the ``dask`` extra: ``pip install ".[dask]"``
from the source tree); see
``doc/dask.md``.
"""
from ._estimators import (DaskHistGBDTClassifier, DaskHistGBDTRanker, DaskHistGBDTRegressor,
                          DaskHistGBDTSurvival)
from ._training import WorkerLostError

__all__ = ["DaskHistGBDTClassifier", "DaskHistGBDTRanker", "DaskHistGBDTRegressor",
           "DaskHistGBDTSurvival", "WorkerLostError"]
