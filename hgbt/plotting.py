"""Plots of a fitted model with matplotlib: feature importances, one tree,
the learning curve recorded during fit, and partial dependence (computed by
the recursion method of :func:`hgbt.inspection.partial_dependence`, drawn by
scikit-learn's ``PartialDependenceDisplay``).

matplotlib is an optional dependency (``pip install "hgbt[plot]"``),
imported only when a function draws.
"""
from numbers import Integral

import numpy as np
from scipy.stats.mstats import mquantiles
from sklearn.utils.validation import check_is_fitted

from .model import tables
from .model.booster import Booster, fitted_booster
from .inspection import (check_grid_settings, column_values, feature_index, is_categorical,
                         validated_partial_dependence)

IMPORTANCE_TYPES = ("split", "gain", "total_gain", "cover", "total_cover")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError('Plotting needs matplotlib: pip install "hgbt[plot]"') from exc
    return plt


def _axes(ax, figsize):
    if ax is None:
        _, ax = _pyplot().subplots(figsize=figsize)
    else:
        _pyplot()
    return ax


def plot_importance(model, importance_type="total_gain", *, max_features=20, ax=None,
                    color=None, title=None):
    """Horizontal bars of the largest feature importances.

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier
    importance_type : {'total_gain', 'gain', 'split', 'total_cover', 'cover'}, \
default='total_gain'
        A column of ``model.feature_importance_table()``: the total split gain
        of the feature (what ``feature_importances_`` normalises), the mean
        gain per split, the number of splits, or the cover (the hessian sum of
        the training rows reaching its splits) in total or per split.
    max_features : int or None, default=20
        Bars for at most this many features, the largest on top; features
        never split on are left out. None: every feature split on.
    ax : matplotlib Axes, default=None
        Where to draw; None: a new figure.
    color : matplotlib color, default=None
    title : str, default=None
        None: the importance type.

    Returns
    -------
    ax : matplotlib Axes
        The bars are ``ax.patches`` (top to bottom: largest first), the
        feature names the y tick labels.
    """
    booster = fitted_booster(model)[0]
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(f"importance_type must be one of {IMPORTANCE_TYPES}, got "
                         f"{importance_type!r}.")
    if max_features is not None and not (isinstance(max_features, Integral)
                                         and max_features >= 1):
        raise ValueError(f"max_features must be a positive integer or None, got "
                         f"{max_features!r}.")
    table = booster.feature_importance_table()
    values = table[importance_type][table["split"] > 0]
    values = values.sort_values(ascending=False, kind="stable")[:max_features]
    ax = _axes(ax, (6.4, 0.9 + 0.3 * max(len(values), 1)))
    # barh draws bottom-up: reversed, so the largest is on top
    positions = np.arange(len(values))[::-1]
    ax.barh(positions, values.to_numpy(), color=color)
    ax.set_yticks(positions, [str(name) for name in values.index])
    ax.set_xlabel(importance_type)
    ax.set_title(importance_type if title is None else title)
    return ax


def _split_text(row, precision):
    missing = "left" if row.missing_go_to_left else "right"
    return (f"{tables.split_test(row, precision, max_categories=6)}\nmissing: {missing}\n"
            f"gain {row.gain:.{precision}g}\ncount {row.count}")


def _positions(frame):
    """(x, y) of every node: leaves at 0, 1, 2, ... left to right in
    depth-first order, a parent centred over its children, y = -depth."""
    left, right = frame["left"].to_numpy(), frame["right"].to_numpy()
    x = np.zeros(len(frame))
    depth = np.zeros(len(frame))
    next_leaf = 0
    # iterative post-order: children placed before their parent
    stack = [(0, False)]
    while stack:
        j, children_done = stack.pop()
        if left[j] < 0:
            x[j] = next_leaf
            next_leaf += 1
        elif children_done:
            x[j] = (x[left[j]] + x[right[j]]) / 2
        else:
            depth[left[j]] = depth[right[j]] = depth[j] + 1
            stack += [(j, True), (right[j], False), (left[j], False)]
    return x, -depth


def plot_tree(model, tree_index=0, *, precision=3, ax=None, fontsize=8):
    """Draw one tree with matplotlib: a box per node, the left child (the
    split's test true) on the left.

    An inner node shows its test (``feature <= threshold``, or ``feature in
    {categories sent left}``), where missing values go, its gain and its
    training rows (count); a leaf its value (its output, already scaled by
    the learning rate) and count.

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier
    tree_index : int, default=0
        Position of the tree over all trees, round by round (the ``tree``
        column of ``trees_to_dataframe()``; a multiclass round holds one tree
        per class).
    precision : int, default=3
        Significant digits of the numbers shown.
    ax : matplotlib Axes, default=None
        Where to draw; None: a new figure sized to the tree.
    fontsize : float, default=8

    Returns
    -------
    ax : matplotlib Axes
        Each node's box is a text artist with ``gid`` ``"node<i>"`` (``i``
        its index in the tree's node array).
    """
    frame = tables.tree_frame(fitted_booster(model)[0], tree_index)
    x, y = _positions(frame)
    n_leaves = int(frame["is_leaf"].sum())
    ax = _axes(ax, (min(2.0 + 1.6 * n_leaves, 40.0), 1.0 + 1.5 * (1 - y.min())))
    for row in frame.itertuples(index=False):
        j = row.node
        if not row.is_leaf:
            for child, label in ((row.left, "yes"), (row.right, "no")):
                ax.plot([x[j], x[child]], [y[j], y[child]], color="0.5", lw=1, zorder=1)
                ax.text((x[j] + x[child]) / 2, (y[j] + y[child]) / 2, label,
                        fontsize=fontsize - 1, color="0.4", ha="center", va="center")
            text, face = _split_text(row, precision), "#dbe9f6"
        else:
            text, face = f"value {row.value:.{precision}g}\ncount {row.count}", "#e6f2da"
        ax.text(x[j], y[j], text, ha="center", va="center", fontsize=fontsize, zorder=2,
                gid=f"node{j}", bbox=dict(boxstyle="round,pad=0.4", fc=face, ec="0.3"))
    ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
    ax.set_ylim(y.min() - 0.6, 0.6)
    ax.set_axis_off()
    ax.set_title(f"tree {tree_index} (round {frame['round'].iloc[0]}, "
                 f"output {frame['output'].iloc[0]})")
    return ax


def plot_learning_curve(model, metric=None, sets=None, *, ax=None):
    """The scores recorded during fit (``evals_result_``), one line per set.

    Point ``i`` is the score of the model of the first ``i`` rounds (point 0:
    the baseline). A dashed vertical line marks ``best_iteration_`` when the
    fit has one.

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier, or a Booster of ``hgbt.train``
    metric : str, default=None
        The metric to draw (a key of ``evals_result_[set]``); None: the first
        one recorded.
    sets : str or list of str, default=None
        The sets to draw (keys of ``evals_result_``); None: every set holding
        ``metric``.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes
        One line per set (``ax.lines``, in the order of ``sets``), then the
        best iteration's line.
    """
    if isinstance(model, Booster):  # hgbt.train's record
        history, best = model.evals_result or {}, model.best_iteration
    else:
        check_is_fitted(model)
        history = getattr(model, "evals_result_", None) or {}
        best = getattr(model, "best_iteration_", None)
    if not history:
        raise ValueError("The model recorded no scores during fit: fit it with eval_set, "
                         "eval_metric, X_val or early stopping to get a learning curve.")
    if metric is None:
        metric = next(iter(next(iter(history.values()))))
    known = [s for s, metrics in history.items() if metric in metrics]
    if not known:
        recorded = sorted({m for metrics in history.values() for m in metrics})
        raise ValueError(f"Metric {metric!r} was not recorded; recorded: {recorded}.")
    sets = known if sets is None else [sets] if isinstance(sets, str) else list(sets)
    for name in sets:
        if name not in history or metric not in history[name]:
            raise ValueError(f"Set {name!r} has no {metric!r} scores; sets with it: "
                             f"{known}.")
    ax = _axes(ax, (6.4, 4.0))
    for name in sets:
        scores = history[name][metric]
        ax.plot(np.arange(len(scores)), scores, label=name)
    if best is not None:
        ax.axvline(best, color="0.3", ls="--", lw=1, label=f"best iteration ({best})")
    ax.set_xlabel("rounds")
    ax.set_ylabel(metric)
    ax.legend()
    return ax


def _target_index(booster, target):
    classes = booster.classes
    if classes is None or len(classes) == 2:
        return 0
    if target is None:
        raise ValueError("A multiclass model needs target: the class whose partial "
                         "dependence to draw.")
    matches = np.flatnonzero(classes == target)
    if matches.size == 0:
        raise ValueError(f"target {target!r} is not a class of the model; classes: "
                         f"{list(classes)}.")
    return int(matches[0])


def plot_partial_dependence(model, X, features, *, target=None, grid_resolution=100,
                            percentiles=(0.05, 0.95), n_cols=3, ax=None, **plot_kw):
    """Partial dependence plots, computed by the recursion method.

    Each entry of ``features`` is one plot: a feature (a line, or bars for a
    categorical feature) or a pair of features (a contour, or a heat map for
    two categorical features). The values are those of
    :func:`hgbt.inspection.partial_dependence` (raw score, ``decision_function``
    scale), drawn by scikit-learn's ``PartialDependenceDisplay``, so the
    result is the display scikit-learn's ``from_estimator`` gives.

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier
    X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        Rows to build the grids and the decile marks from; not modified.
    features : int, str, or list of (int, str, or pair of them)
    target : class label, default=None
        For a multiclass classifier, the class to draw (required); ignored
        otherwise.
    grid_resolution : int, default=100
    percentiles : tuple of two floats, default=(0.05, 0.95)
    n_cols : int, default=3
        Plots per row when ``ax`` is one Axes or None.
    ax : matplotlib Axes or array of Axes, default=None
    **plot_kw
        Passed to ``PartialDependenceDisplay.plot`` (``line_kw``,
        ``contour_kw``, ``pdp_lim``, ``centered``, ...).

    Returns
    -------
    display : sklearn.inspection.PartialDependenceDisplay
        Drawn; its ``pd_results`` are the Bunches of ``partial_dependence``,
        its ``axes_`` and ``lines_`` the matplotlib objects.
    """
    booster, n_threads = fitted_booster(model)
    _pyplot()
    from sklearn.inspection import PartialDependenceDisplay

    low_high = check_grid_settings(grid_resolution, percentiles)
    items = [features] if isinstance(features, (str, Integral)) else list(features)
    if not items:
        raise ValueError("features must name at least one feature or pair.")
    plots = []
    for item in items:
        group = (item,) if isinstance(item, (str, Integral)) else tuple(item)
        if len(group) not in (1, 2):
            raise ValueError(f"Each entry of features is a feature or a pair of features, "
                             f"got {item!r}.")
        group = tuple(feature_index(booster, f) for f in group)
        if len({is_categorical(booster, f) for f in group}) > 1:
            raise ValueError(f"Two-way plots need two numeric or two categorical "
                             f"features; {item!r} mixes them.")
        plots.append(group)
    target_idx = _target_index(booster, target)
    Xv = booster.prepare(X, checker=model)
    deciles = {}
    for f in {f for group in plots for f in group}:
        if not is_categorical(booster, f):
            column = column_values(Xv, f)
            deciles[f] = mquantiles(column[np.isfinite(column)],
                                    prob=np.arange(0.1, 1.0, 0.1))
    # X validated once for every plot
    results = [validated_partial_dependence(booster, Xv, list(group), grid_resolution,
                                            low_high, n_threads) for group in plots]
    display = PartialDependenceDisplay(
        results, features=plots, feature_names=tables.feature_names(booster),
        target_idx=target_idx, deciles=deciles, kind="average",
        is_categorical=[tuple(is_categorical(booster, f) for f in group) for group in plots])
    return display.plot(ax=ax, n_cols=n_cols, **plot_kw)
