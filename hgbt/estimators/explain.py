"""What the estimators offer to look inside a fitted model: TreeSHAP
contributions and interaction values of the raw score, leaf indices, and
the trees as tables (``tables.py``).

Why ``predict_contributions`` (and not ``predict(X, pred_contrib=True)`` as
LightGBM, ``pred_contribs`` as XGBoost's ``Booster.predict``, or
``shap_values`` as the shap library): in scikit-learn a method's output
keeps one shape and meaning whatever its arguments, and ``predict_*`` is the
family of per-row outputs of a fitted estimator (``predict_proba``,
``predict_log_proba``). A separate method is found by ``dir`` and tab
completion, documents its own shape, and leaves ``predict``'s signature to
scikit-learn's meta-estimators. "Contributions" says what the columns are:
each feature's share of the raw score, plus the expected value, rows adding
up to the raw score; the name ``shap_values`` would suggest the shap
library's layout (expected value apart). ``predict_interactions`` follows.
"""
import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from ..core._openmp import effective_n_threads
from ..data import target_stats
from ..data.categorical import codes_of_values
from ..tree import contributions as _contrib
from . import tables


# Grid points that partial dependence expands the shared bins of pooled
# features into (one per category, per combination for several features).
MAX_POOLED_POINTS = 2_000_000


class ExplainMixin:
    """Contributions, interaction values and leaf indices of a fitted
    :class:`~hgbt.estimators.gradient_boosting.BaseHistGBDT`."""

    def _explain_inputs(self, X, iteration_range=None):
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        forest = self._forest(check_trees=True, iteration_range=iteration_range)
        return X, forest, len(self._baseline_prediction), effective_n_threads(
            self.n_threads)

    def predict_contributions(self, X, iteration_range=None):
        """Exact TreeSHAP contributions of each feature to the raw score.

        The raw score is the model's output before the inverse link:
        ``decision_function`` of the classifier (log-odds, or one score per
        class), the regressor's prediction on the link scale (its
        ``predict`` for the identity link). For each row, the contribution of
        feature ``f`` is its Shapley value in the game in which a set of
        features takes the row's values and the others are integrated out
        along each tree, every branch weighted by the training rows that took
        it (TreeSHAP, Lundberg et al. 2018). Missing values follow the split's
        default direction, categories its category set, as in prediction.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Sparse input is densified one block of rows at a time; the result
            is that of the dense input.
        iteration_range : (begin, end) or None, default=None
            Explain the model of the rounds ``begin <= round < end`` only (the
            baseline included), as ``predict(X, iteration_range=...)``
            predicts; e.g. ``(0, best_iteration_)``. None: every round.

        Returns
        -------
        contributions : ndarray of shape (n_samples, n_features + 1) or \
(n_samples, n_classes, n_features + 1)
            The last column is the expected value (the baseline plus each
            tree's cover-weighted mean output); every row sums to the raw
            score. Multiclass classifiers have one block per class. The
            result does not depend on ``n_threads``.
        """
        X, forest, n_outputs, n_threads = self._explain_inputs(X, iteration_range)
        out = self._fold_internal(_contrib.contributions(forest, X, n_outputs, n_threads),
                                  -1)  # a pooled feature's target statistic is its own
        out[:, :, -1] += self._baseline_prediction
        return out[:, 0] if n_outputs == 1 else out

    def predict_interactions(self, X, iteration_range=None):
        """SHAP interaction values of each pair of features on the raw score.

        ``[i, f, g]`` (``f != g``) is half the Shapley interaction index of
        features ``f`` and ``g`` on row ``i`` (the pair's effect is shared
        between ``[f, g]`` and ``[g, f]``); the diagonal ``[i, f, f]`` is
        ``f``'s main effect. Summed over the last axis they give
        :meth:`predict_contributions`.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        iteration_range : (begin, end) or None, default=None
            Explain the model of the rounds ``begin <= round < end`` only (the
            baseline included), as ``predict(X, iteration_range=...)``
            predicts; e.g. ``(0, best_iteration_)``. None: every round.

        Returns
        -------
        interactions : ndarray of shape (n_samples, n_features + 1, n_features + 1) \
or (n_samples, n_classes, n_features + 1, n_features + 1)
            The last row and column are zero but for ``[..., -1, -1]``, the
            expected value. Multiclass classifiers have one matrix per class.
        """
        X, forest, n_outputs, n_threads = self._explain_inputs(X, iteration_range)
        out = _contrib.interactions(forest, X, n_outputs, n_threads)
        out = self._fold_internal(self._fold_internal(out, -1), -2)
        out[:, :, -1, -1] += self._baseline_prediction
        return out[:, 0] if n_outputs == 1 else out

    def apply(self, X, iteration_range=None):
        """The leaf each row reaches in each tree.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        iteration_range : (begin, end) or None, default=None
            The leaves of the trees of rounds ``begin <= round < end`` only
            (None: every round); the second axis then has ``end - begin``
            entries, round ``begin`` first.

        Returns
        -------
        leaves : ndarray of int32, shape (n_samples, n_iter_) for the regressor, \
(n_samples, n_iter_, n_trees_per_round) for the classifier
            The leaf's index in its tree's node array (the ``node`` column of
            the tree tables). As scikit-learn's ``GradientBoostingClassifier``,
            the classifier's result is 3-D also for two classes (one tree per
            round: last axis of length 1); ``[i, r, k]`` is class ``k``'s tree
            of round ``r``.
        """
        X, forest, n_outputs, n_threads = self._explain_inputs(X, iteration_range)
        leaves = _contrib.apply(forest, X, n_threads)
        leaves = leaves.reshape(X.shape[0], forest.n_trees // n_outputs, n_outputs)
        return leaves if is_classifier(self) else leaves[:, :, 0]

    def _partial_dependence_codes(self, grid, target_features):
        """Partial dependence on the raw score at ``grid`` (categorical
        features as the codes prediction sees), by the recursion method:
        shape (n_outputs, n_points), the baseline included."""
        check_is_fitted(self)
        features = np.asarray(target_features, dtype=np.intp).ravel()
        if features.size == 0 or np.any((features < 0) | (features >= self.n_features_in_)):
            raise ValueError(f"target_features must be feature indices in "
                             f"[0, {self.n_features_in_ - 1}], got {features.tolist()}.")
        grid = np.asarray(grid, dtype=np.float64)
        if grid.ndim != 2 or grid.shape[1] != features.size:
            raise ValueError(f"grid must have shape (n_points, {features.size}), got "
                             f"{grid.shape}.")
        grid, features, weights, point = self._with_target_stats(grid, features)
        out = _contrib.partial_dependence(self._forest(check_trees=True), grid, features,
                                          len(self._baseline_prediction),
                                          effective_n_threads(self.n_threads))
        if weights is not None:  # the pooled bin: its categories' weighted mean
            out = np.stack([np.bincount(point, weights=row * weights) for row in out])
        return out + self._baseline_prediction[:, None]

    def _with_target_stats(self, grid, features):
        """The grid with the target-statistic columns of its pooled target
        features: ``(grid, features, weights, point)``. A kept category's bin
        has one value; the shared bin stands for each pooled category's, so
        its point is repeated once per distinct value, with the categories'
        training weights (``weights`` and ``point``, the row's grid point,
        are None when no point is repeated)."""
        stats = getattr(self, "_target_stats", None)
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
        columns = [self.n_features_in_ + i * n_out + o for _, i in pooled for o in range(n_out)]
        repeated = len(point) > grid.shape[0]
        grid = np.concatenate([grid[point], np.asarray(extra)], axis=1)
        features = np.concatenate([features, np.asarray(columns, dtype=features.dtype)])
        if not repeated:
            return grid, features, None, None
        return grid, features, np.concatenate(weights), np.asarray(point)

    def _compute_partial_dependence_recursion(self, grid, target_features):
        """Partial dependence by the recursion method, scikit-learn's protocol.

        Each tree is walked once per grid point: a split on a target feature
        follows the point's value, any other split averages its two branches
        weighted by their training-row counts (the node ``count``; under row
        sampling, the rows the tree was grown on; sample weights are not
        counted). See :func:`hgbt.inspection.partial_dependence`.

        Parameters
        ----------
        grid : array-like of shape (n_points, n_target_features)
            Values of the target features, as in the user's ``X``:
            categories of features mapped by value (DataFrame categories)
            are given as the categories themselves.
        target_features : array-like of int of shape (n_target_features,)

        Returns
        -------
        averaged_predictions : ndarray of shape (n_trees_per_iteration, n_points)
            On the raw score (``decision_function`` scale), the baseline
            included: with trees of one split each it equals the brute-force
            average of the raw score over the training rows.
        """
        check_is_fitted(self)
        grid = np.asarray(grid)
        features = np.asarray(target_features, dtype=np.intp).ravel()
        if grid.ndim == 2 and grid.shape[1] == features.size:
            mask = getattr(self, "is_categorical_", None)
            codes = np.empty(grid.shape, dtype=np.float64)
            for k, f in enumerate(features):
                if mask is not None and 0 <= f < len(mask) and mask[f]:
                    codes[:, k] = codes_of_values(self, f, grid[:, k])
                else:
                    codes[:, k] = grid[:, k]
            grid = codes
        return self._partial_dependence_codes(grid, features)

    def trees_to_dataframe(self):
        """Every node of every tree as a pandas DataFrame, one row per node.

        Returns
        -------
        nodes : pandas.DataFrame
            Columns: ``tree`` (position over all trees, round by round),
            ``round``, ``output`` (the class of a multiclass tree, else 0),
            ``node`` (index in the tree, as :meth:`apply` gives), ``depth``,
            ``is_leaf``, ``feature`` (name; ``feature_names_in_`` or
            ``x0``, ``x1``, ...), ``feature_idx`` (-1 for a leaf),
            ``split_type`` ('numeric', 'categorical', or 'target_mean' for a
            split on a pooled feature's target statistic, 'target_mean:<class>'
            for a multiclass target's class share; ``doc/categorical.md``),
            ``threshold`` (numeric and target-statistic splits send
            ``x <= threshold`` left), ``left_categories``
            (categorical splits: the categories seen at fit that go left, as
            values for DataFrame categories, else as codes), ``missing_go_to_left``,
            ``left``, ``right`` (-1 for a leaf), ``gain``, ``count`` (training
            rows reaching the node), ``sum_hessians`` (their hessian sum, the
            cover; NaN for a model saved before hessian sums were recorded),
            ``value`` (shrunk by the learning rate; a leaf's is its output).
            Split fields are None or NaN on leaves. Under row sampling the
            rows are those the tree was grown on, with their sampling
            weights.
        """
        check_is_fitted(self)
        return tables.trees_frame(self)

    def dump_trees(self):
        """The trees as readable text: per tree a header, then one indented
        line per node, depth first, the left child (test true) first.

        Returns
        -------
        text : str
        """
        check_is_fitted(self)
        return tables.dump_text(tables.trees_frame(self))

    def feature_importance_table(self):
        """Importances per feature: number of splits, gain, cover (hessian
        sum of the training rows reaching the split, as XGBoost's) and row
        count (as LightGBM's), as totals and as means per split.

        Returns
        -------
        importances : pandas.DataFrame
            Indexed by feature name; columns ``split``, ``gain`` (mean per
            split), ``total_gain``, ``cover`` (mean per split),
            ``total_cover``, ``count`` (mean per split), ``total_count``.
            The cover is NaN for a model saved before hessian sums were
            recorded.
            ``feature_importances_`` is ``total_gain`` (or ``split``)
            normalised to sum to 1.
        """
        check_is_fitted(self)
        return tables.importance_frame(self, tables.feature_names(self))
