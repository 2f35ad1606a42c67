"""Partial dependence of a fitted hgbt model, by the recursion method.

:func:`partial_dependence` builds scikit-learn's grid (unique values, or
evenly spaced points between two percentiles) and walks each tree once per
grid point (``model/_partial_dependence.pyx``), instead of predicting every
row of ``X`` at every grid point as the brute method does.

scikit-learn's own ``sklearn.inspection.partial_dependence`` only takes the
recursion path for its own estimators, recognised by ``isinstance``.
:func:`enable_sklearn_recursion` registers hgbt's estimators with it
(opt-in, since it changes a scikit-learn class for the whole process).
"""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.stats.mstats import mquantiles
from sklearn.utils import Bunch

from .data.dataset import MatrixLike
from .model.booster import Booster, fitted_booster
from .model.explain import partial_dependence_codes
from .model.tables import category_values, feature_names

if TYPE_CHECKING:
    from .estimators.gradient_boosting import BaseHistGBDT

# the helpers below them serve hgbt.plotting
__all__ = ["enable_sklearn_recursion", "partial_dependence"]


def feature_index(booster: Booster, feature: int | str) -> int:
    """The index of ``feature`` (an index or a name) in the model's features."""
    names = feature_names(booster)
    if isinstance(feature, str):
        if feature not in names:
            raise ValueError(f"Unknown feature {feature!r}; the model's features are "
                             f"{names[:10]}{' ...' if len(names) > 10 else ''}.")
        return names.index(feature)
    if isinstance(feature, Integral) and not isinstance(feature, bool):
        if not 0 <= feature < len(names):
            raise ValueError(f"Feature index {feature} is out of range: the model has "
                             f"{len(names)} features (0..{len(names) - 1}).")
        return int(feature)
    raise TypeError(f"A feature is an int index or a str name, got {feature!r}.")


def is_categorical(booster: Booster, f: int) -> bool:
    encoding = booster.categorical
    return encoding is not None and bool(encoding.mask[f])


def _category_labels(booster, f, codes):
    """How the grid of categorical feature ``f`` is reported (:func:`category_values`)."""
    categories = category_values(booster, f)
    if categories is not None:
        return np.asarray([categories[int(c)] for c in codes], dtype=object)
    return codes


def _axis(booster, f, column, grid_resolution, percentiles):
    """(codes, labels) of the grid of feature ``f`` from its validated column."""
    values = column[np.isfinite(column)]
    if values.size == 0:
        raise ValueError(f"Feature {feature_names(booster)[f]!r} has no finite value in X "
                         "to build a grid from.")
    uniques = np.unique(values)
    if is_categorical(booster, f):
        return uniques, _category_labels(booster, f, uniques)
    if uniques.size < grid_resolution:
        return uniques, uniques
    low, high = mquantiles(values, prob=percentiles)
    if np.isclose(low, high):
        raise ValueError(f"The percentiles {tuple(percentiles)} of feature "
                         f"{feature_names(booster)[f]!r} are too close to build a grid; "
                         "choose percentiles further apart.")
    axis = np.linspace(low, high, num=grid_resolution)
    return axis, axis


def check_grid_settings(grid_resolution: int,
                        percentiles: tuple[float, float]) -> tuple[float, float]:
    """``(low, high)`` percentiles, once both settings are checked."""
    if not isinstance(grid_resolution, Integral) or grid_resolution <= 1:
        raise ValueError(f"grid_resolution must be an integer > 1, got {grid_resolution!r}.")
    try:
        low, high = (float(p) for p in percentiles)
    except (TypeError, ValueError):
        raise ValueError(f"percentiles must be two numbers, got {percentiles!r}.") from None
    if not 0 <= low < high <= 1:
        raise ValueError(f"percentiles must satisfy 0 <= low < high <= 1, got "
                         f"{tuple(percentiles)}.")
    return low, high


def partial_dependence(model: BaseHistGBDT | Booster, X: MatrixLike,
                       features: int | str | Sequence[int | str], *,
                       grid_resolution: int = 100,
                       percentiles: tuple[float, float] = (0.05, 0.95)) -> Bunch:
    """Partial dependence of the raw score on some features, by recursion.

    The partial dependence at a grid point is the model's mean raw score
    (``decision_function`` scale: log-odds, one score per class, the
    regressor's link scale) when the target features take the point's values
    and the others vary as over the training rows. It is computed by walking
    each tree once per point: a split on a target feature follows the point's
    value (categories and missing values routed as in prediction), any other
    split averages its branches weighted by their training-row counts. This
    is exact for additive effects (trees of one split each, for example), and
    scikit-learn's ``method='recursion'`` approximation otherwise. Counts are
    of the rows each tree was grown on (after row sampling); sample weights
    are not counted. The shared bin of a pooled categorical feature (more
    than 255 categories) is the average over its categories, each with its
    target statistic, weighted by their training weight (``doc/categorical.md``).

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier, or a Booster
    X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        Only used to build the grid (as the model's ``predict`` reads it: the
        same columns and categories). It is not modified.
    features : int, str, or sequence of int or str
        The target feature(s), by index or name. Several features give the
        joint partial dependence on the cartesian product of their grids.
    grid_resolution : int, default=100
        Points per numeric feature. A feature with fewer distinct finite
        values in ``X`` uses those values.
    percentiles : tuple of two floats, default=(0.05, 0.95)
        The grid of a numeric feature spans these percentiles of its finite
        values in ``X`` (as scikit-learn, ``scipy.stats.mstats.mquantiles``).

    Returns
    -------
    result : sklearn.utils.Bunch
        As ``sklearn.inspection.partial_dependence(..., kind="average")``:

        - ``grid_values``: list of one 1-D array per target feature, the
          grid of that feature. A categorical feature's grid holds its
          categories seen in ``X`` (codes for integer-coded features, bins
          for features with more than 255 categories). Missing values are
          not part of a grid.
        - ``average``: ndarray of shape (n_outputs, len(grid_values[0]), ...);
          ``n_outputs`` is 1 for a regressor or a binary classifier,
          ``n_classes`` for a multiclass one.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from hgbt import HistGBDTRegressor
    >>> from hgbt.inspection import partial_dependence
    >>> X, y = make_friedman1(n_samples=500, random_state=0)
    >>> model = HistGBDTRegressor(max_iter=20).fit(X, y)
    >>> pd = partial_dependence(model, X, [0, 1], grid_resolution=10)
    >>> pd.average.shape
    (1, 10, 10)
    """
    booster, n_threads = fitted_booster(model)
    low_high = check_grid_settings(grid_resolution, percentiles)
    targets = [features] if isinstance(features, (str, Integral)) else list(features)
    if not targets:
        raise ValueError("features must name at least one feature.")
    indices = [feature_index(booster, f) for f in targets]
    Xv = booster.prepare(X, checker=model)  # codes as prediction sees them
    return validated_partial_dependence(booster, Xv, indices, grid_resolution, low_high,
                                        n_threads)


def column_values(Xv: np.ndarray | sp.csr_matrix, f: int) -> np.ndarray:
    """Column ``f`` of validated input (dense or sparse) as float64."""
    column = Xv[:, [f]].toarray().ravel() if sp.issparse(Xv) else Xv[:, f]
    return np.asarray(column, dtype=np.float64)


def validated_partial_dependence(booster: Booster, Xv: np.ndarray | sp.csr_matrix,
                                 indices: list[int], grid_resolution: int,
                                 low_high: tuple[float, float], n_threads: int) -> Bunch:
    """:func:`partial_dependence` of the features ``indices`` on ``Xv``, the
    input as ``booster.prepare`` returns it, with checked grid settings."""
    codes, labels = [], []
    for f in indices:
        axis, label = _axis(booster, f, column_values(Xv, f), grid_resolution, low_high)
        codes.append(axis)
        labels.append(label)
    grid = np.stack([g.ravel() for g in np.meshgrid(*codes, indexing="ij")], axis=1)
    average = partial_dependence_codes(booster, grid, indices, n_threads)
    return Bunch(grid_values=labels,
                 average=average.reshape(-1, *[len(axis) for axis in codes]))


def enable_sklearn_recursion() -> None:
    """Let ``sklearn.inspection.partial_dependence`` use the recursion method
    on hgbt's estimators.

    scikit-learn accepts ``method='recursion'`` (and chooses it for
    ``method='auto'``) only for estimators that are instances of its own tree
    classes. This registers ``HistGBDTRegressor`` and ``HistGBDTClassifier``
    as virtual subclasses of scikit-learn's (abstract) histogram gradient
    boosting base class, which scikit-learn only tests in its partial
    dependence code; that code then calls the estimators'
    ``_compute_partial_dependence_recursion``. The registration lasts for the
    process and cannot be undone. Calling it again does nothing more.

    Raises
    ------
    ImportError
        If this scikit-learn version has no such base class.
    """
    from .estimators.classifier import HistGBDTClassifier
    from .estimators.regressor import HistGBDTRegressor

    try:
        from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import (
            BaseHistGradientBoosting)
    except ImportError as exc:
        raise ImportError("This scikit-learn version has no BaseHistGradientBoosting "
                          "to register with; use hgbt.inspection.partial_dependence.") from exc
    for cls in (HistGBDTRegressor, HistGBDTClassifier):
        BaseHistGradientBoosting.register(cls)
