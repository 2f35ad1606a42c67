"""Plots of a fitted model with matplotlib: feature importances, one tree,
the learning curve recorded during fit, and partial dependence (computed by
the recursion method of :func:`hgbt.inspection.partial_dependence`, drawn by
scikit-learn's ``PartialDependenceDisplay``).

matplotlib is an optional dependency (the ``plot`` extra, ``pip install ".[plot]"``
from the source tree, or ``pip install matplotlib pandas``),
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

__all__ = ["plot_importance", "plot_learning_curve", "plot_partial_dependence", "plot_tree"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("Plotting needs matplotlib and pandas: pip install matplotlib "
                          "pandas (hgbt's 'plot' extra)") from exc
    return plt


def _axes(ax, figsize):
    if ax is None:
        _, ax = _pyplot().subplots(figsize=figsize)
    else:
        _pyplot()
    return ax


#: what each importance type measures, for the axis and the title
_IMPORTANCE_TEXT = {
    "total_gain": "total gain of the feature's splits",
    "gain": "mean gain per split",
    "split": "number of splits",
    "total_cover": "total cover (hessian sum of the rows reaching the feature's splits)",
    "cover": "mean cover per split",
}


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
        None: "Feature importance" and what the type measures.

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
    new_figure = ax is None
    ax = _axes(ax, (6.4, 1.2 + 0.3 * max(len(values), 1)))
    # barh draws bottom-up: reversed, so the largest is on top
    positions = np.arange(len(values))[::-1]
    ax.barh(positions, values.to_numpy(), color=color)
    ax.set_yticks(positions, [str(name) for name in values.index])
    text = _IMPORTANCE_TEXT.get(importance_type, importance_type)
    ax.set_xlabel(f"{text} ({importance_type})")
    ax.set_title(f"Feature importance: {text}" if title is None else title)
    if new_figure:  # room for long feature names and the axis label
        ax.figure.tight_layout()
    return ax


def _split_text(row, precision):
    missing = "left" if row.missing_go_to_left else "right"
    return (f"{tables.split_test(row, precision, max_categories=6)}\nmissing: {missing}\n"
            f"gain {row.gain:.{precision}g}\ncount {row.count}")


def _positions(frame, max_depth=None):
    """(x, y, shown, cut, leaves_below) of every node: shown leaves (and nodes
    cut at ``max_depth``) at x = 0, 1, 2, ... left to right in depth-first
    order, a parent centred over its children, y = -depth; ``cut``: shown
    split nodes whose children are not; ``leaves_below``: leaves under each
    node."""
    left, right = frame["left"].to_numpy(), frame["right"].to_numpy()
    n = len(frame)
    depth = np.zeros(n)
    leaves_below = np.ones(n, dtype=np.int64)
    # pre-order (parents before children); reversed, children before parents
    order, stack = [], [0]
    while stack:
        j = stack.pop()
        order.append(j)
        if left[j] >= 0:
            depth[left[j]] = depth[right[j]] = depth[j] + 1
            stack += [right[j], left[j]]
    for j in reversed(order):
        if left[j] >= 0:
            leaves_below[j] = leaves_below[left[j]] + leaves_below[right[j]]
    shown = depth <= (np.inf if max_depth is None else max_depth)
    cut = (np.zeros(n, dtype=bool) if max_depth is None
           else shown & (left >= 0) & (depth == max_depth))
    x = np.zeros(n)
    next_slot = 0
    for j in order:  # pre-order visits the drawn ends left to right
        if shown[j] and (left[j] < 0 or cut[j]):
            x[j] = next_slot
            next_slot += 1
    for j in reversed(order):  # then each parent over its children
        if shown[j] and left[j] >= 0 and not cut[j]:
            x[j] = (x[left[j]] + x[right[j]]) / 2
    return x, -depth, shown, cut, leaves_below


def plot_tree(model, tree_index=0, *, max_depth=None, precision=3, ax=None, fontsize=8):
    """Draw one tree with matplotlib: a box per node, the left child (the
    split's test true) on the left.

    An inner node shows its test (``feature <= threshold``, or ``feature in
    {categories sent left}``), where missing values go, its gain and its
    training rows (count); a leaf its value (its output, already scaled by
    the learning rate) and count. Leaves are spaced by the widest box, so
    boxes never overlap: a new figure grows with the tree (a 63-leaf tree
    is some 60 inches wide); ``max_depth`` draws the top of a large tree.

    Parameters
    ----------
    model : fitted HistGBDTRegressor or HistGBDTClassifier
    tree_index : int, default=0
        Position of the tree over all trees, round by round (the ``tree``
        column of ``trees_to_dataframe()``; a multiclass round holds one tree
        per class).
    max_depth : int or None, default=None
        Draw the nodes down to this depth (the root is 0); a split node there
        is drawn as a box of the leaves below it. None: every node.
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
    if max_depth is not None and not (isinstance(max_depth, Integral) and max_depth >= 0):
        raise ValueError(f"max_depth must be a non-negative integer or None, got "
                         f"{max_depth!r}.")
    frame = tables.tree_frame(fitted_booster(model)[0], tree_index)
    x, y, shown, cut, leaves_below = _positions(frame, max_depth)
    texts = {}
    for row in frame.itertuples(index=False):
        j = row.node
        if not shown[j]:
            continue
        if cut[j]:
            texts[j] = (f"... {leaves_below[j]} leaves\ncount {row.count}", "#eeeeee")
        elif not row.is_leaf:
            texts[j] = (_split_text(row, precision), "#dbe9f6")
        else:
            texts[j] = (f"value {row.value:.{precision}g}\ncount {row.count}", "#e6f2da")
    # a leaf's slot is as wide as the widest box (about 0.55 em a character)
    chars = max(len(line) for text, _ in texts.values() for line in text.split("\n"))
    lines = max(text.count("\n") + 1 for text, _ in texts.values())
    slot = (0.55 * chars + 2.0) * fontsize / 72
    level = (1.45 * lines + 3.0) * fontsize / 72
    n_slots = int(x[shown].max()) + 1
    new_figure = ax is None
    width, height = min(slot * n_slots + 0.4, 300.0), 0.7 + level * (1 - y[shown].min())
    ax = _axes(ax, (width, height))
    if new_figure:  # margins in inches, not a share of a figure this wide
        ax.figure.subplots_adjust(left=0.2 / width, right=1 - 0.2 / width,
                                  bottom=0.1 / height, top=1 - 0.45 / height)
    for row in frame.itertuples(index=False):
        j = row.node
        if not shown[j]:
            continue
        if not row.is_leaf and not cut[j]:
            for child, label in ((row.left, "yes"), (row.right, "no")):
                ax.plot([x[j], x[child]], [y[j], y[child]], color="0.5", lw=1, zorder=1)
                ax.text((x[j] + x[child]) / 2, (y[j] + y[child]) / 2, label,
                        fontsize=fontsize - 1, color="0.4", ha="center", va="center")
        text, face = texts[j]
        ax.text(x[j], y[j], text, ha="center", va="center", fontsize=fontsize, zorder=2,
                gid=f"node{j}", bbox=dict(boxstyle="round,pad=0.4", fc=face, ec="0.3"))
    ax.set_xlim(x[shown].min() - 0.6, x[shown].max() + 0.6)
    ax.set_ylim(y[shown].min() - 0.6, 0.6)
    ax.set_axis_off()
    depth_note = "" if not cut.any() else f", depth {max_depth} of {int(-y.min())} shown"
    ax.set_title(f"tree {tree_index} (round {frame['round'].iloc[0]}, "
                 f"output {frame['output'].iloc[0]}{depth_note})")
    return ax


def plot_learning_curve(model, metric=None, sets=None, *, yscale="auto", ax=None):
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
    yscale : {'auto', 'linear', 'log'}, default='auto'
        'auto': a log scale when every score drawn is positive and they span
        more than a factor of 10 (a loss falls fast, then slowly: on a linear
        scale its later rounds look flat), else linear.
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
    if yscale not in ("auto", "linear", "log"):
        raise ValueError(f"yscale must be 'auto', 'linear' or 'log', got {yscale!r}.")
    drawn = np.concatenate([np.asarray(history[name][metric], dtype=float) for name in sets])
    drawn = drawn[np.isfinite(drawn)]
    if yscale == "auto":
        yscale = ("log" if drawn.size and drawn.min() > 0 and drawn.max() > 10 * drawn.min()
                  else "linear")
    new_figure = ax is None
    ax = _axes(ax, (6.4, 4.0))
    for name in sets:
        scores = history[name][metric]
        ax.plot(np.arange(len(scores)), scores, label=name)
    ax.set_yscale(yscale)
    if best is not None:
        ax.axvline(best, color="0.3", ls="--", lw=1, label=f"best iteration ({best})")
    ax.set_xlabel("rounds")
    ax.set_ylabel(metric + (" (log scale)" if yscale == "log" else ""))
    ax.set_title(f"Learning curve: {metric}")
    ax.legend()
    if new_figure:
        ax.figure.tight_layout()
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
    display.plot(ax=ax, n_cols=n_cols, **plot_kw)
    _place_vertical_deciles(display)
    # what the values are: the raw score, of which class
    scale = _raw_score_name(booster)
    for axis, group in zip(np.ravel(display.axes_), plots):
        if axis is not None and len(group) == 1 and axis.get_ylabel():
            axis.set_ylabel(f"partial dependence\n({scale})")
    if booster.classes is not None and len(booster.classes) > 2:
        label = booster.classes[target_idx]
        label = label.item() if isinstance(label, np.generic) else label  # not np.str_(...)
        display.figure_.suptitle(f"Class {label!r}: partial "
                                 f"dependence of its {scale}")
    return display


def _place_vertical_deciles(display):
    """Redraw the y-axis decile marks of the two-way numeric plots.

    scikit-learn (1.9 at least) draws them with the transform of the x-axis
    marks (x in data, y in axes units), so the second feature's deciles land
    as a clump at the bottom of the plot instead of along the left edge; its
    x-axis marks are right and stay.
    """
    from matplotlib.transforms import blended_transform_factory

    marks = display.deciles_hlines_  # None where a plot has no marks
    for index, (axis, group) in enumerate(zip(np.ravel(display.axes_), display.features)):
        line = marks.flat[index]
        if axis is None or line is None or len(group) != 2:
            continue
        xlim, ylim = axis.get_xlim(), axis.get_ylim()
        line.remove()
        marks.flat[index] = axis.hlines(
            display.deciles[group[1]], 0, 0.05, color="k",
            transform=blended_transform_factory(axis.transAxes, axis.transData))
        axis.set_xlim(xlim)
        axis.set_ylim(ylim)


def _raw_score_name(booster):
    """What partial dependence shows: the raw score, on the scale of the
    model's link (log-odds, log, or the target's own units)."""
    link = getattr(booster.loss, "link", "identity")
    if booster.classes is not None:
        return ("raw score, log-odds" if len(booster.classes) == 2
                else "raw score, per-class log-odds")
    return {"identity": "prediction", "exp": "raw score, log of the prediction"}.get(
        link, f"raw score ({link} link)")
