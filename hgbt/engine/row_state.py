"""Boosting state of the rows held in this process.

:class:`RowState` keeps, per row, what the rounds update: targets,
weights, raw predictions, gradients and hessians, and the same for
validation rows. A local fit has one; every Dask shard has one for its
rows, so gradients, leaf updates and loss statistics are computed by the
same code. :class:`LocalData` is a local fit's
:class:`~hgbt.engine.boosting.TrainingData`: a ``RowState`` and the
training-data sources its trees grow on.
"""
from typing import NamedTuple, Optional

import numpy as np

from ..core._types import SIZE_DTYPE
from ..core.collective import SINGLE_PROCESS, allreduce_sum_int
from ..core.row_meta import RowMeta
from ..data.pages import PagedBins
from ..tree.paged import PagedTrainingData
from ..tree.training_data import LocalTrainingData, most_used_layout
from .round_plan import RoundTrees, VectorRoundTrees
from .tree_team import TreeTeam


class ValidationRows(NamedTuple):
    """One validation set: rows, encoded targets, side information (weights,
    start scores, ...), raw predictions (shape (n_trees_per_iteration,
    n_rows), updated by the rounds)."""

    X: object
    y: np.ndarray
    meta: RowMeta
    raw: np.ndarray

    @property
    def offset(self):
        """The rows' start scores (``init_score``), same shape as raw, or None."""
        return self.meta.init_score


class RowState:
    """Targets, weights, raw predictions and gradients of some rows.

    Parameters
    ----------
    loss : BaseLoss
        The fit's loss, built with ``meta``.
    y : ndarray of shape (n_samples,)
        Encoded targets.
    meta : RowMeta
        The rows' side information: weights, start scores (``init_score``,
        kept for a restart), ...
    raw : ndarray of shape (n_trees_per_iteration, n_samples), float64
        Raw predictions of the rows, updated in place by the rounds.
    full_hessian : bool, default=False
        Per-row hessians even when the loss's is constant (GOSS re-weights
        rows).
    validation : sequence of ValidationRows, default=()
        Validation sets, each scored on its own.
    score_rows : ndarray or None, default=None
        The rows the training loss is scored on (None: all); see
        :func:`~hgbt.engine.evaluation.training_score_rows`.
    score_collective : Collective or None, default=None
        The processes whose scored rows the loss statistics pool where the
        loss's own collective does not (a feature-parallel Dask shard: all
        rows here, its own scored); None: the loss's.

    Attributes
    ----------
    gradients, hessians : ndarray of shape (n_trees_per_iteration, n_samples), float32
        The round's values (``hessians`` (n_trees_per_iteration, 1) for a
        constant hessian), filled in place by :meth:`compute_gradients`.
    """

    def __init__(self, loss, y, meta, raw, full_hessian=False, validation=(),
                 score_rows=None, score_collective=None):
        self.loss = loss
        self.score_collective = score_collective
        self.meta = meta
        self.score_rows = score_rows
        self.y = y
        self.raw = raw
        self.validation = list(validation)
        self.gradients, self.hessians = loss.allocate_buffers(y.shape[0], full_hessian)
        # hessians of shape (n_trees, 1): one value for every row
        self.constant_hessian = loss.constant_hessian and not full_hessian
        # the scored rows' targets and side information, fixed for the fit
        self._score_y = y if score_rows is None else y[score_rows]
        self._score_meta = meta if score_rows is None else meta.take(score_rows)

    def set_baseline(self, baseline):
        """Start every raw prediction at ``baseline`` (one value per tree of a
        round), plus its row's start score where the fit has them."""
        self.raw[:] = baseline[:, None]
        if self.meta.init_score is not None:
            self.raw += self.meta.init_score
        for vset in self.validation:
            vset.raw[:] = baseline[:, None]
            if vset.offset is not None:  # in place: a NamedTuple's field
                np.add(vset.raw, vset.offset, out=vset.raw)

    def restart(self, baseline):
        """Start over: raw predictions at ``baseline``, the loss's fitted
        state forgotten (as at the start of a fit)."""
        self.set_baseline(baseline)
        self.loss.restart()

    def compute_gradients(self, n_threads):
        """Fill :attr:`gradients` and :attr:`hessians` from the raw predictions."""
        self.loss.gradients(self.y, self.raw, self.gradients, self.hessians, n_threads)

    def refit_leaves(self, k, leaf_rows, weight):
        """Loss-optimal raw updates of tree ``k``'s leaves from their rows
        (``leaf_rows``: each leaf's; ``weight``: the refit's row weights over
        all rows, or None)."""
        rows = np.concatenate(leaf_rows)
        leaves = np.repeat(np.arange(len(leaf_rows), dtype=np.intp),
                           [r.size for r in leaf_rows])
        return self.loss.refit_leaves(self.y[rows], self.raw[k][rows],
                                      None if weight is None else weight[rows], leaves,
                                      len(leaf_rows))

    def add_leaf_values(self, source, k, leaf_ids, leaf_values):
        """Add tree ``k``'s leaf values to the raw predictions of its leaves'
        rows (``source``: the training data the tree grew on)."""
        source.add_leaf_values(self.raw[k], leaf_ids, leaf_values)

    def add_validation(self, trees, n_threads):
        """Add a round's trees to every validation set's raw predictions."""
        for vset in self.validation:
            if vset.X.shape[0]:
                for k, tree in enumerate(trees):
                    tree.predict_add(vset.X, vset.raw[k], n_threads)

    def loss_statistics(self, n_threads=1):
        """Mergeable loss statistics ``(train, [each validation set's])``, the
        training rows' of :attr:`score_rows` only (the same for any
        ``n_threads``)."""
        rows = self.score_rows
        train = (self.loss.loss_statistics(self.y, self.raw, n_threads) if rows is None else
                 self._scorer(self._score_meta)
                 .loss_statistics(self._score_y, self.raw[:, rows], n_threads))
        return train, [self._scorer(vset.meta).loss_statistics(
            vset.y, vset.raw, n_threads) for vset in self.validation]

    def _scorer(self, meta):
        # made at each call, not once: it carries the loss's fitted state
        # (Huber's delta), which the rounds update
        scorer = self.loss.for_rows(meta)
        if self.score_collective is not None:
            scorer.collective = self.score_collective
        return scorer


class LocalData:
    """The rows of a local fit as the boosting loop's
    :class:`~hgbt.engine.boosting.TrainingData`.

    A multiclass round's trees grow side by side, on the sources of a
    :class:`~hgbt.engine.tree_team.TreeTeam`. Use it as a context manager
    (the team's threads stop on exit).

    Parameters
    ----------
    state : RowState
    X : ndarray or sparse matrix
        The training rows (rows outside a round's sample are predicted on
        them when the layout is not plain).
    binned : FeatureLayout or PagedBins
        The binned training rows (PagedBins: on disk, read page by page).
    n_bins : int
        Bins per feature histogram, the missing bin included.
    n_threads : int
    baseline : ndarray of shape (n_trees_per_iteration,) or None, default=None
        The raw prediction :meth:`restart` goes back to.
    collective : Collective, default=SINGLE_PROCESS
        The processes holding the other training rows (a Dask worker's
        shard): the trees grow on all of them (see
        :class:`~hgbt.tree.training_data.LocalTrainingData`), one after
        another so that every process makes the same collective calls in
        the same order. ``X`` may then be None (a plain layout).
    row_ids : ndarray of int64 or None, default=None
        Each row's index among all the fit's training rows (a Dask shard's),
        for the row sampling draws and the quantized gradients' rounding;
        None: ``0 .. n_rows - 1``.
    feature_collective : Collective or None, default=None
        Processes that all hold these same rows and grow each tree together,
        each on its block of features (a feature-parallel Dask fit; see
        :class:`~hgbt.tree.training_data.LocalTrainingData`).
    voting_top_k : int, default=0
        > 0: the trees grow voting-parallel over ``collective`` (see
        :class:`~hgbt.tree.training_data.LocalTrainingData`).
    histogram_layout : {'auto', 'col_wise', 'row_wise'}, default='auto'
        How node histograms are built (see
        :class:`~hgbt.tree.training_data.LocalTrainingData`); with 'auto'
        each source of a team chooses for itself (``histogram_layout``:
        what most of them chose).
    """

    def __init__(self, state, X, binned, n_bins, n_threads, baseline=None,
                 collective=SINGLE_PROCESS, row_ids=None, feature_collective=None,
                 voting_top_k=0, histogram_layout="auto"):
        self.state = state
        self._collective = collective
        self.row_ids = row_ids
        self._baseline = baseline
        self.n_rows, self.n_features = state.y.shape[0], binned.n_features
        self.n_trees = state.raw.shape[0]
        self.n_validation_sets = len(state.validation)
        self.has_validation = bool(state.validation)
        self.n_threads = n_threads
        # a plain layout's matrix routes unsampled rows by their bins
        self._X, self._missing_bin = X, n_bins - 1
        self._X_binned = binned.X_dense if binned.is_plain else None
        self._unsampled = None
        self._keys = None  # each row's query key, for bagging by query
        self._refit_weight = state.meta.sample_weight

        paged = isinstance(binned, PagedBins)  # out of core: bins on disk

        def make_source(threads):
            source = (PagedTrainingData(binned, n_bins, threads) if paged else
                      LocalTrainingData(binned, n_bins, threads, collective, row_ids,
                                        feature_collective, voting_top_k,
                                        histogram_layout=histogram_layout))
            source.use_gradients(state.gradients, state.hessians, state.constant_hessian)
            return source

        # trees of a round side by side only where no other process takes part,
        # and where the loss asks for it (see BaseLoss.trees_side_by_side); out
        # of core one after another (each reads every page)
        alone = collective.size == 1 and feature_collective is None
        side_by_side = alone and state.loss.trees_side_by_side and not paged
        self._team = TreeTeam(make_source, n_threads, self.n_trees if side_by_side else 1)
        self._round_trees = None  # made by the first round

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._team.close()

    @property
    def histogram_layout(self):
        """How the last round's trees built their histograms ('col_wise' or
        'row_wise'; sources side by side: what most of them did)."""
        return most_used_layout(source.histogram_layout for source in self._team.sources)

    def use_threads(self, n_threads):
        # at most the threads it was made with: buffers are sized for those.
        # A multiclass team keeps its shares (one thread per tree at least).
        self.n_threads = min(n_threads, self._team.n_threads)
        if len(self._team.sources) == 1:
            self._team.sources[0].n_threads = self.n_threads

    def compute_gradients(self):
        self.state.compute_gradients(self.n_threads)

    def restart(self):
        self.state.restart(self._baseline)

    def sample_rows(self, sampler):
        if not sampler.active:
            return None
        ids = self._query_keys() if sampler.by_query else self.row_ids
        rows = sampler.sample(self.state.gradients, self.state.hessians, ids,
                              self.n_threads, self._collective)
        if allreduce_sum_int(self._collective, rows.size) == 0:
            # a bag that drew no row anywhere (few rows): the round takes them all
            rows = np.arange(self.n_rows, dtype=SIZE_DTYPE)
        self._unsampled = _complement(rows, self.n_rows)
        if self.state.loss.needs_leaf_refit and sampler.needs_full_hessian:
            # Leaf refits weight GOSS's up-weighted rows as the gradients do.
            weight = self.state.meta.sample_weight
            self._refit_weight = (np.ones(self.n_rows) if weight is None
                                  else weight.copy())
            self._refit_weight[sampler.reweighted_rows] *= sampler.other_weight
        return rows

    def _query_keys(self):
        """Each row's query key: the least index among all training rows of
        its query's rows (its queries are whole here: a Dask shard's too), so
        a query's draw is the same wherever its rows are."""
        if self._keys is None:
            queries = self.state.meta.queries
            if queries is None:
                raise ValueError("bagging_by_query needs the rows' query ids.")
            ids = (np.arange(self.n_rows, dtype=np.int64) if self.row_ids is None
                   else self.row_ids)
            first = (np.minimum.reduceat(ids[queries.order], queries.starts[:-1])
                     if self.n_rows else np.zeros(0, dtype=np.int64))
            keys = np.empty(self.n_rows, dtype=np.int64)
            keys[queries.order] = np.repeat(first, queries.sizes)
            self._keys = keys
        return self._keys

    def grow_round(self, settings, plan):
        if settings.vector_leaves:
            return self._grow_vector_round(settings, plan)
        if self._round_trees is None or self._round_trees.settings is not settings:
            self._round_trees = RoundTrees(settings)
        return self._round_trees.grow(self, plan, self._team.grow)

    def _grow_vector_round(self, settings, plan):
        if self._collective.size > 1:  # the kernel sums no other process's rows
            raise ValueError("vector-leaf trees grow on rows held in one process.")
        if self._round_trees is None or self._round_trees.settings is not settings:
            self._round_trees = VectorRoundTrees(settings, self._X_binned, self._missing_bin,
                                                 self.n_trees,
                                                 self.state.loss.trees_share_hessians)
        trees = self._round_trees.grow(self.state, plan, self.n_threads)
        for k, tree in enumerate(trees):
            self._add_unsampled(k, tree, self.n_threads)
        return trees

    def refit_leaves(self, source, k, leaf_ids):
        if not self.state.loss.needs_leaf_refit:
            return None
        return self.state.refit_leaves(k, [source.node_rows(leaf) for leaf in leaf_ids],
                                       self._refit_weight)

    def finish_tree(self, source, k, leaf_ids, leaf_values, tree):
        self.state.add_leaf_values(source, k, leaf_ids, leaf_values)
        self._add_unsampled(k, tree, source.n_threads)

    def _add_unsampled(self, k, tree, n_threads):
        # tree k's values at the rows outside the round's sample
        unsampled = self._unsampled
        if unsampled is not None and unsampled.size:
            raw = self.state.raw[k]
            if self._X_binned is not None:
                tree.predict_binned_add(self._X_binned, unsampled, self._missing_bin, raw,
                                        n_threads)
            else:
                raw[unsampled] += tree.predict(self._X[unsampled], n_threads)

    def finish_round(self, trees):
        self.state.add_validation(trees, self.n_threads)

    def loss_statistics(self):
        return self.state.loss_statistics(self.n_threads)

    def raw_predictions(self):
        return self.state.raw, [vset.raw for vset in self.state.validation]


def _complement(rows, n_samples):
    """Sorted rows not in ``rows`` (sorted)."""
    mask = np.ones(n_samples, dtype=bool)
    mask[rows] = False
    return np.flatnonzero(mask).astype(SIZE_DTYPE)
