"""The boosting loop, once for every fit: local estimators and ``hgbt.dask``.

:func:`boost` runs the rounds: seeding, gradients, row and column
sampling, growing each tree, leaf updates, scores (into an
:class:`~hgbt.engine.history.EvalHistory`) and the callbacks (early
stopping, printers, checkpoints: :mod:`hgbt.engine.callbacks`). It runs on a :class:`TrainingData` (the rows in this
process, :class:`~hgbt.engine.row_state.LocalData`, or a Dask driver's shards,
``hgbt.dask``), which hands out a :class:`TreeSource` for each tree. What
the loop needs from the estimator comes in a :class:`BoostSettings`.
"""
import math
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np

from ..core.exact import GradientOverflowError
from ..core.load import ThreadGovernor
from ..tree.grower import TreeSettings
from .callbacks import CallbackRunner
from .history import EvalHistory
from .numeric_range import diverged_message
from .round_plan import RoundPlan
from .sampling import RowSampler, round_feature_samplers

#: ``EvalHistory.stop_reason`` of rounds that ran to ``max_iter``
MAX_ITER_REACHED = "max_iter reached"
#: the grower settings that make a tree size (``max_leaf_nodes='auto'``)
TREE_SIZE = ("max_leaf_nodes", "l2_regularization")


@runtime_checkable
class TreeSource(Protocol):
    """Where one tree grows: what :class:`~hgbt.tree.grower.TreeGrower` and the
    loop call for each tree (``LocalTrainingData``, ``DistributedTrainingData``).

    Attributes
    ----------
    n_features : int
        Features the tree may split on.
    n_bins : int
        Bins per feature histogram, the missing bin included.
    n_threads : int
        Threads the tree's kernels use.
    grows_trees : bool
        Whether :meth:`grow_tree` can grow a tree here.
    """

    n_features: int
    n_bins: int
    n_threads: int
    grows_trees: bool

    def start_tree(self, k: int, rows: Optional[np.ndarray] = None,
                   grid: Optional[tuple] = None, quantize: Optional[tuple] = None) -> None:
        """Begin tree ``k`` of the round on ``rows`` (sorted; None: every row).

        Gradients are snapped to the exact-sum grid ``grid`` (None: the one
        of all the training rows). ``quantize=(n_levels, seed)`` builds the
        histograms from quantized gradients instead.
        """

    def grow_tree(self, settings: Any, **growth: Any) -> np.ndarray:
        """Grow the begun tree in the kernel loop; return its node records."""

    def leaf_sums(self, leaf_ids: np.ndarray) -> tuple:
        """Float gradient and hessian sums of each leaf's rows (quantized trees)."""


@runtime_checkable
class TrainingData(Protocol):
    """The training (and validation) rows of a fit, as :func:`boost` drives them.

    Each source keeps, per row, the targets, weights, raw predictions and
    gradients (:class:`~hgbt.engine.row_state.RowState`: once for a local fit,
    once on each Dask shard).

    Attributes
    ----------
    n_rows : int
        Training rows (on every worker together).
    n_features : int
        Features of the rows.
    n_trees : int
        Trees per round (classes of a multiclass fit, else 1).
    has_validation : bool
        Whether validation rows are kept (and scored).
    n_validation_sets : int
        Validation sets kept (each scored under its own name).
    """

    n_rows: int
    n_features: int
    n_trees: int
    has_validation: bool
    n_validation_sets: int

    def use_threads(self, n_threads: int) -> None:
        """The threads the next round's kernels use, at most those the data
        were made with (a local fit's governor lowers them under load)."""

    def compute_gradients(self) -> None:
        """The round's gradients and hessians of every training row, from the
        current raw predictions."""

    def restart(self) -> None:
        """Every raw prediction (training and validation rows) back to the
        baseline: the rounds start over."""

    def sample_rows(self, sampler: RowSampler) -> Optional[np.ndarray]:
        """The rows the round's trees grow on (``sampler`` draws them; GOSS
        re-weights their gradients), or None for every row."""

    def grow_round(self, settings: "BoostSettings", plan: RoundPlan) -> list:
        """The round's trees (:class:`~hgbt.engine.round_plan.RoundPlan`),
        each added to the training rows' raw predictions; trees may grow side
        by side, each on a tree source no other holds."""

    def finish_round(self, trees: list) -> None:
        """Add the round's trees to the raw predictions of the validation rows."""

    def loss_statistics(self) -> tuple:
        """Mergeable loss statistics ``(train, [each validation set's])`` of the
        current raw predictions (:class:`~hgbt.core.exact.WeightedMean`)."""

    def raw_predictions(self) -> tuple:
        """``(train, [each validation set's])`` current raw predictions, shape
        (n_trees, n_rows) each, for scorers (a local fit's rows only)."""


@dataclass(frozen=True)
class BoostSettings:
    """The settings of a fit's boosting rounds, built by the estimator.

    Attributes
    ----------
    max_iter : int
        Rounds in all; a warm start continues from the rounds already grown.
    seed : int
        The fit's seed: round ``i`` draws from ``default_rng([seed, i])``.
    n_threads : int
    learning_rate : float
        Shrinkage, also of re-fitted leaf values.
    colsample_bytree, colsample_bynode : float
    data_sample_strategy : {'bagging', 'goss'}
    subsample, goss_top_rate, goss_other_rate : float
    bagging_by_query : bool
        Bagging draws whole queries (a ranker's rows; each query's draw keyed
        by its first row among all rows).
    vector_leaves : bool
        A multi-output round grows one tree for all outputs, its leaves a
        value per output (:mod:`hgbt.tree.vector_grower`), instead of a tree
        per output.
    quantized_bins : int or None
        ``num_grad_quant_bins`` with ``use_quantized_grad``, else None.
    bin_thresholds : list of ndarray
    n_bins_non_missing : ndarray
    grower : TreeSettings
        How the trees grow (:class:`~hgbt.tree.grower.TreeSettings`).
    tree_sizes : tuple of dict
        ``max_leaf_nodes='auto'``: the two tree sizes (:data:`TREE_SIZE`
        settings) it compares, the smaller first; ``grower`` holds the one
        these rounds grow. Empty: one size, nothing compared.
    select_at_best : bool
        Compare the two fits at their best round (the model ``truncate_at_best``
        keeps) instead of at their last.
    select_tol : float
        The second fit is kept only when its score is better by more than this.
    adapt_threads : bool
        ``n_threads`` was not given: each round runs on the CPUs other
        processes leave free (:class:`~hgbt.core.load.ThreadGovernor`), at
        most ``n_threads``.
    histogram_layout : {'auto', 'col_wise', 'row_wise'}
        How node histograms are built (speed only; see
        :class:`~hgbt.tree.training_data.LocalTrainingData`).
    """

    max_iter: int
    seed: int
    n_threads: int
    learning_rate: float
    colsample_bytree: float
    colsample_bynode: float
    data_sample_strategy: str
    subsample: float
    goss_top_rate: float
    goss_other_rate: float
    quantized_bins: Optional[int]
    bin_thresholds: list
    n_bins_non_missing: np.ndarray
    grower: TreeSettings
    tree_sizes: tuple = ()
    select_at_best: bool = False
    select_tol: float = 0.0
    adapt_threads: bool = False
    bagging_by_query: bool = False
    vector_leaves: bool = False
    histogram_layout: str = "auto"

    @property
    def full_hessian(self):
        """Whether the fit needs per-row hessians even for a constant-hessian
        loss: GOSS re-weights rows."""
        return self.data_sample_strategy == "goss"

    @property
    def whole_trees(self):
        """Whether every tree may split on every feature (no column sampling):
        then a round without any split means no later round can split."""
        return self.colsample_bytree == 1.0 and self.colsample_bynode == 1.0


@dataclass
class FitRecord:
    """What the rounds grow: the trees of each round, and their scores.

    The estimator passes its own list of trees; :func:`boost` appends to it
    and records into ``evals`` (a warm start continues both).
    """

    trees: list = field(default_factory=list)
    evals: EvalHistory = field(default_factory=EvalHistory)


def boost(settings, data, record, evaluator=None, callbacks=None):
    """Run the boosting rounds from ``len(record.trees)`` to ``max_iter``.

    With two ``settings.tree_sizes`` (``max_leaf_nodes='auto'``), a fit of
    the first size that reaches ``max_iter`` without stopping early is made
    again from the baseline with the second (a fit still improving at its
    last round may want larger trees), and the one whose model scores better
    on the watched set is kept (:func:`_compare_sizes`).

    Parameters
    ----------
    settings : BoostSettings
    data : TrainingData
    record : FitRecord
        Appended to in place: each round's trees, and its scores. After a
        second fit, ``record.trees`` holds the kept fit's trees (the
        same list) and ``record.evals`` its scores (one of the two histories).
    evaluator : Evaluator or None
        Scores each round (and the baseline, before the first round) into
        ``record.evals``; None: no scores.
    callbacks : CallbackRunner or None
        Called before and after each round; one asking to stop ends the
        fit after the rounds finished. ``record.evals.stop_reason`` says
        why the rounds ended.
    """
    callbacks = callbacks or CallbackRunner([])
    evals = record.evals
    evals.tree_size = _tree_size(settings.grower)
    evals.comparing = bool(settings.tree_sizes) and evals.watched is not None
    if evaluator is not None and not record.trees:
        evals.record(evaluator.evaluate(data), 0)
    evals.start(len(record.trees))
    evals.stop_reason = MAX_ITER_REACHED
    callbacks.begin(evals)
    interrupted = _rounds(settings, settings.grower, data, record, evaluator, callbacks)
    if evals.comparing and not interrupted:
        _compare_sizes(settings, data, record, evaluator, callbacks)
    callbacks.end(record.evals)


def _compare_sizes(settings, data, record, evaluator, callbacks):
    """After the rounds of one of the two ``settings.tree_sizes``, not
    interrupted by a callback: a fit of the first size that ran to
    ``max_iter`` is made again with the second, and the fit (trees and
    history) whose model scores better on the watched set is kept.

    ``evals.trials`` records what each finished fit scored and
    ``evals.comparing`` that the comparison is not over, so a fit resumed
    from a checkpoint saved during either size compares as the
    uninterrupted one (growing the first size again if it wins). A callback
    stopping the first size, or the second resumed, leaves the comparison
    to a warm start; stopping a fresh second fit compares what it grew.
    """
    first_size, second_size = settings.tree_sizes
    evals = record.evals
    trials = evals.trials
    if evals.tree_size == first_size and not trials:
        if evals.stop_reason == MAX_ITER_REACHED:
            trials.append(_trial(evals, settings.select_at_best))
            other_trees, other = list(record.trees), evals
            _start_over(settings, second_size, data, record, evaluator, callbacks)
            trials.append(_trial(record.evals, settings.select_at_best))
            if not _second_wins(trials, settings.select_tol):
                record.trees[:] = other_trees
                record.evals = other
    elif evals.tree_size == second_size and len(trials) == 1:
        trials.append(_trial(evals, settings.select_at_best))
        if not _second_wins(trials, settings.select_tol):
            # the first size's trees were not saved: grown again, as before
            other_trees, other = list(record.trees), evals
            if _start_over(settings, first_size, data, record, evaluator, callbacks):
                trials.pop()  # interrupted: the second's model, still to compare
                record.trees[:] = other_trees
                record.evals = other
                return
    record.evals.comparing = False


def _second_wins(trials, tol):
    # a diverged score is -inf: never better
    return trials[1]["score"] > trials[0]["score"] + tol


def _start_over(settings, tree_size, data, record, evaluator, callbacks):
    """The rounds again from the baseline, with trees of ``tree_size``, into a
    new history (``record.evals``) and the emptied tree list; True when a
    callback interrupted them."""
    record.trees.clear()
    record.evals = evals = record.evals.restarted(tree_size)
    data.restart()
    if evaluator is not None:
        evals.record(evaluator.evaluate(data), 0)
    evals.start(0)
    evals.stop_reason = MAX_ITER_REACHED
    callbacks.restart(evals)
    return _rounds(settings, replace(settings.grower, **tree_size), data, record, evaluator,
                   callbacks)


def _tree_size(grower):
    return {name: getattr(grower, name) for name in TREE_SIZE}


def _trial(evals, at_best):
    """What a finished fit scored: its tree size, rounds, and the watched
    score of the model it keeps (higher is better; a NaN score as -inf)."""
    kept = evals.best_iteration() if at_best else evals.n_rounds
    score = evals.oriented()[kept] if kept is not None else math.nan
    return {**evals.tree_size, "n_iter": evals.n_rounds,
            "score": float(score) if score == score else -math.inf}


def _rounds(settings, grower_settings, data, record, evaluator, callbacks):
    """The rounds of one fit, with trees grown by ``grower_settings``; True
    when a callback other than early stopping ended them."""
    evals = record.evals
    callbacks.interrupted = False
    n_trees = data.n_trees
    row_sampler = RowSampler(settings.data_sample_strategy, settings.subsample,
                             settings.goss_top_rate, settings.goss_other_rate, data.n_rows,
                             np.random.default_rng(settings.seed),
                             by_query=settings.bagging_by_query)
    governor = ThreadGovernor(settings.n_threads) if settings.adapt_threads else None
    for iteration in range(len(record.trees), settings.max_iter):
        stop = callbacks.before_round(iteration, evals)
        if stop is not None:
            evals.stop_reason = stop
            return callbacks.interrupted
        if governor is not None:
            data.use_threads(governor.threads())
        # Sampling draws from a generator seeded by (seed, round), so a
        # warm-started fit continues exactly as one long fit would.
        rng = np.random.default_rng([settings.seed, iteration])
        row_sampler.start_round(rng, settings.seed, iteration)
        data.compute_gradients()
        try:
            rows = data.sample_rows(row_sampler)
        except GradientOverflowError as exc:  # GOSS scores of diverged gradients
            raise ValueError(diverged_message(iteration)) from exc
        # drawn after the rows: a single tree shares the round's generator
        samplers = round_feature_samplers(data.n_features, settings.colsample_bytree,
                                          settings.colsample_bynode, rng, settings.seed,
                                          iteration, n_trees)

        plan = RoundPlan(iteration, _tree_size(grower_settings), rows, samplers)
        try:
            trees = data.grow_round(settings, plan)
        except GradientOverflowError as exc:
            raise ValueError(diverged_message(iteration)) from exc
        if rows is None and settings.whole_trees and all(
                tree.nodes.shape[0] == 1 for tree in trees):
            # No tree of the round could split, on every row and feature: the
            # next rounds could not either, and their one-leaf trees would add
            # only rounding noise to the baseline (LightGBM stops here too).
            # The round is not kept.
            evals.stop_reason = f"no tree of round {iteration + 1} could split"
            break
        record.trees.append(trees)
        data.finish_round(trees)
        if evaluator is not None:
            evals.record(evaluator.evaluate(data), iteration + 1)
        else:
            evals.n_rounds = iteration + 1
        stop = callbacks.after_round(iteration, evals)
        if stop is not None:
            evals.stop_reason = stop
            return callbacks.interrupted
    return False
