"""What the estimators offer to look inside a fitted model: TreeSHAP
contributions and interaction values of the raw score, leaf indices, and
the trees as tables (computed by the Booster: ``model/explain.py``,
``model/tables.py``).

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
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from ..core._openmp import effective_n_threads
from ..data.categorical import codes_of_values
from ..data.dataset import MatrixLike
from ..model import explain, tables

if TYPE_CHECKING:
    import pandas as pd


class ExplainMixin:
    """Contributions, interaction values and leaf indices of a fitted
    :class:`~hgbt.estimators.gradient_boosting.BaseHistGBDT`."""

    def _explain_inputs(self, X):
        check_is_fitted(self)
        return self._validate_X(X), effective_n_threads(self.n_threads)

    def predict_contributions(self, X: MatrixLike,
                              iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
        X, n_threads = self._explain_inputs(X)
        return explain.contributions(self.booster_, X, iteration_range, n_threads)

    def predict_interactions(self, X: MatrixLike,
                             iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
        X, n_threads = self._explain_inputs(X)
        return explain.interactions(self.booster_, X, iteration_range, n_threads)

    def apply(self, X: MatrixLike,
              iteration_range: tuple[int, int] | None = None) -> np.ndarray:
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
        leaves : ndarray of int32, shape (n_samples, ``n_iter_``) for the regressor, \
(n_samples, ``n_iter_``, n_trees_per_round) for the classifier
            The leaf's index in its tree's node array (the ``node`` column of
            the tree tables). As scikit-learn's ``GradientBoostingClassifier``,
            the classifier's result is 3-D also for two classes (one tree per
            round: last axis of length 1); ``[i, r, k]`` is class ``k``'s tree
            of round ``r``.
        """
        X, n_threads = self._explain_inputs(X)
        leaves = explain.leaves(self.booster_, X, iteration_range, n_threads)
        return leaves if is_classifier(self) else leaves[:, :, 0]

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
        encoding = self.booster_.categorical
        if grid.ndim == 2 and grid.shape[1] == features.size:
            codes = np.empty(grid.shape, dtype=np.float64)
            for k, f in enumerate(features):
                if encoding is not None and 0 <= f < len(encoding.mask) and encoding.mask[f]:
                    codes[:, k] = codes_of_values(encoding, f, grid[:, k])
                else:
                    codes[:, k] = grid[:, k]
            grid = codes
        return explain.partial_dependence_codes(self.booster_, grid, features,
                                                effective_n_threads(self.n_threads))

    def trees_to_dataframe(self) -> pd.DataFrame:
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
        return tables.trees_frame(self.booster_)

    def dump_trees(self) -> str:
        """The trees as readable text: per tree a header, then one indented
        line per node, depth first, the left child (test true) first.

        Returns
        -------
        text : str
        """
        check_is_fitted(self)
        return tables.dump_text(tables.trees_frame(self.booster_))

    def feature_importance_table(self) -> pd.DataFrame:
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
        return tables.importance_frame(self.booster_)
