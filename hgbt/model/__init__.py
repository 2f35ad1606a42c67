"""The fitted model (layer 4): :class:`Booster` and what reads it
(prediction, contributions, leaf indices, partial dependence, tree tables)."""
from .booster import Booster

__all__ = ["Booster"]
