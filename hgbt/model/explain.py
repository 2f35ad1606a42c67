"""Looking inside a Booster: TreeSHAP contributions and interaction values of
the raw score, leaf indices, and partial dependence by the recursion method
(the kernels: :mod:`hgbt.model.contributions`).

A pooled categorical feature's target-statistic columns are reported as the
feature itself: their contributions are added to its own.
"""
import numpy as np

from ..data import target_stats
import hgbt.model.contributions as _contrib  # a module of this package, not its face

# Grid points that partial dependence expands the shared bins of pooled
# features into (one per category, per combination for several features).
MAX_POOLED_POINTS = 2_000_000


def _squeeze(booster, out):
    return out[:, 0] if booster.n_trees_per_iteration == 1 else out


def contributions(booster, X, iteration_range, n_threads):
    """TreeSHAP contributions of rows ``X`` (as ``Booster.prepare`` returns
    them): shape (n, n_features + 1), or (n, n_classes, n_features + 1); the
    last column is the expected value."""
    forest = booster.forest(check_trees=True, iteration_range=iteration_range)
    n_outputs = booster.n_trees_per_iteration
    out = booster.fold_internal(_contrib.contributions(forest, X, n_outputs, n_threads), -1)
    out[:, :, -1] += booster.baseline
    return _squeeze(booster, out)


def interactions(booster, X, iteration_range, n_threads):
    """SHAP interaction values of rows ``X``: shape (n, F + 1, F + 1), or
    (n, n_classes, F + 1, F + 1); ``[..., -1, -1]`` is the expected value."""
    forest = booster.forest(check_trees=True, iteration_range=iteration_range)
    n_outputs = booster.n_trees_per_iteration
    out = _contrib.interactions(forest, X, n_outputs, n_threads)
    out = booster.fold_internal(booster.fold_internal(out, -1), -2)
    out[:, :, -1, -1] += booster.baseline
    return _squeeze(booster, out)


def leaves(booster, X, iteration_range, n_threads):
    """The leaf each row reaches in each tree: int32 of shape (n, n_rounds,
    n_trees_per_iteration), round ``begin`` first."""
    forest = booster.forest(check_trees=True, iteration_range=iteration_range)
    n_outputs = booster.n_trees_per_iteration
    out = _contrib.apply(forest, X, n_threads)
    return out.reshape(X.shape[0], forest.n_trees // n_outputs, n_outputs)


def partial_dependence_codes(booster, grid, target_features, n_threads):
    """Partial dependence on the raw score at ``grid`` (categorical features
    as the codes prediction sees), by the recursion method: shape
    (n_outputs, n_points), the baseline included."""
    features = np.asarray(target_features, dtype=np.intp).ravel()
    n_features = booster.n_features_in_
    if features.size == 0 or np.any((features < 0) | (features >= n_features)):
        raise ValueError(f"target_features must be feature indices in "
                         f"[0, {n_features - 1}], got {features.tolist()}.")
    grid = np.asarray(grid, dtype=np.float64)
    if grid.ndim != 2 or grid.shape[1] != features.size:
        raise ValueError(f"grid must have shape (n_points, {features.size}), got "
                         f"{grid.shape}.")
    grid, features, weights, point = _with_target_stats(booster, grid, features)
    out = _contrib.partial_dependence(booster.forest(check_trees=True), grid, features,
                                      booster.n_trees_per_iteration, n_threads)
    if weights is not None:  # the pooled bin: its categories' weighted mean
        out = np.stack([np.bincount(point, weights=row * weights) for row in out])
    return out + booster.baseline[:, None]


def _with_target_stats(booster, grid, features):
    """The grid with the target-statistic columns of its pooled target
    features: ``(grid, features, weights, point)``. A kept category's bin
    has one value; the shared bin stands for each pooled category's, so
    its point is repeated once per distinct value, with the categories'
    training weights (``weights`` and ``point``, the row's grid point,
    are None when no point is repeated)."""
    stats = booster.target_stats
    pooled = [] if stats is None else [
        (k, i) for k, f in enumerate(features)
        for i, g in enumerate(stats["features"]) if f == g]
    if not pooled or grid.shape[0] == 0:
        return grid, features, None, None
    n_out = target_stats.n_outputs(stats)
    extra, weights, point = [], [], []
    sets = [target_stats.value_sets(stats, i, grid[:, k]) for k, i in pooled]
    n_rows = sum(np.prod([len(per_bin[p][1]) for per_bin in sets])
                 for p in range(grid.shape[0]))
    if n_rows > MAX_POOLED_POINTS:
        raise ValueError(
            f"Partial dependence at these grid points needs {n_rows:,} evaluations: "
            "the shared bin of a pooled categorical feature (more than 255 "
            "categories) is averaged over each of its categories, and with several "
            f"such features over every combination (limit {MAX_POOLED_POINTS:,}). "
            "Ask for one pooled feature at a time.")
    for p in range(grid.shape[0]):
        values, weight = [np.empty(0)], np.ones(1)
        for per_bin in sets:  # every combination of the features' values
            v, w = per_bin[p]
            values = [np.concatenate([a, row]) for a in values for row in v]
            weight = np.outer(weight, w).ravel()
        extra.extend(values)
        weights.append(weight)
        point.extend([p] * len(values))
    n_features = booster.n_features_in_
    columns = [n_features + i * n_out + o for _, i in pooled for o in range(n_out)]
    repeated = len(point) > grid.shape[0]
    grid = np.concatenate([grid[point], np.asarray(extra)], axis=1)
    features = np.concatenate([features, np.asarray(columns, dtype=features.dtype)])
    if not repeated:
        return grid, features, None, None
    return grid, features, np.concatenate(weights), np.asarray(point)
