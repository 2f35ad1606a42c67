"""The estimator state that model files and pickles hold: "flat".

Files and pickles keep the layout they had before the fitted model became a
:class:`~hgbt.model.booster.Booster`: the Booster's parts under the estimator
attribute names of then (``FLAT_MODEL_KEYS``), beside the estimator's own
fitted attributes. So every file and pickle written before loads, one
written now loads in the hgbt versions before, and both loaders check one
layout (``_checks.check_state``) before any Booster is built from it.
"""
import numpy as np

from ..data.categorical import CategoricalEncoding
from ..model.booster import Booster, objective_from_params

#: the Booster's parts in a flat state (``_objective``: its loss, since the
#: Booster; files and pickles before it take the loss from the parameters)
FLAT_MODEL_KEYS = ("_predictors", "_baseline_prediction", "_bin_mapper", "_target_stats",
                   "is_categorical_", "categorical_categories_", "_categorical_by_value",
                   "_categorical_pooled", "_objective")


def flatten(state):
    """An estimator's ``__dict__`` as a flat state (the Booster's parts under
    their flat names); an unfitted estimator's as it is."""
    state = dict(state)
    booster = state.pop("booster_", None)
    if booster is None:
        return state
    encoding = booster.categorical
    state.update({
        "_predictors": booster.trees,
        "_baseline_prediction": booster.baseline,
        "_bin_mapper": booster.bin_mapper,
        "_target_stats": booster.target_stats,
        "is_categorical_": None if encoding is None else encoding.mask,
        "categorical_categories_": None if encoding is None else encoding.categories,
        "_categorical_by_value": None if encoding is None else encoding.by_value,
        "_categorical_pooled": bool(booster.pooled_features),
        "_objective": dict(booster.objective),
    })
    return state


def nest(cls, state):
    """A checked flat state (``_checks.check_state``) of a ``cls`` estimator
    as its ``__dict__``: the model parts as its ``booster_``."""
    state = dict(state)
    state.pop("_forest_cache", None)  # pickles of some versions held none, others may
    if "_predictors" not in state:
        return state
    parts = {key: state.pop(key, None) for key in FLAT_MODEL_KEYS}
    mask = parts["is_categorical_"]
    encoding = None
    if mask is not None:
        by_value = parts["_categorical_by_value"]
        encoding = CategoricalEncoding(mask, parts["categorical_categories_"],
                                       np.zeros(mask.shape, dtype=bool) if by_value is None
                                       else by_value)
    is_classifier = hasattr(cls, "predict_proba")
    classes = state.get("classes_") if is_classifier else None
    state["booster_"] = Booster(
        n_features_in=state["n_features_in_"],
        feature_names_in=state.get("feature_names_in_"), categorical=encoding,
        target_stats=parts["_target_stats"],
        objective=(parts["_objective"] if parts["_objective"] is not None
                   else objective_from_params(state, classes)),
        classes=classes, bin_mapper=parts["_bin_mapper"],
        baseline=parts["_baseline_prediction"], trees=parts["_predictors"])
    return state
