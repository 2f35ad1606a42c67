"""One boosting round's trees, as a plan any process holding rows can grow.

:func:`~hgbt.engine.boosting.boost` draws everything random about a round
(its row sample, its feature samplers) from the round's seed and hands the
:class:`RoundPlan` to its training data. A local fit grows the trees on its
own sources; a Dask fit sends the plan to its workers, each of which grows
the same trees on its shard (:class:`RoundTrees` on both), all-reducing
node histograms among themselves.
"""
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..tree.grower import TreeGrower
from ..tree.vector_grower import VectorTreeGrower


@dataclass
class RoundPlan:
    """What a round's trees are grown from, besides the rows and the fit's settings.

    Attributes
    ----------
    iteration : int
        The round (0-based); seeds the quantized gradients' rounding.
    tree_size : dict
        The tree-size settings (``max_leaf_nodes``, ``l2_regularization``)
        of this fit's trees (``max_leaf_nodes='auto'`` grows two sizes).
    rows : ndarray or None
        The round's row sample (sorted), None for every row.
    feature_samplers : list of FeatureSampler
        One per tree of the round, drawn from the round's generator.
    """

    iteration: int
    tree_size: dict
    rows: Optional[np.ndarray]
    feature_samplers: list


class RoundTrees:
    """Grows the trees of a fit's rounds on a training data's sources.

    One :class:`~hgbt.tree.grower.TreeGrower` per source and tree size,
    kept for the whole fit (its kernel's buffers with it).

    Parameters
    ----------
    settings : BoostSettings
    """

    def __init__(self, settings):
        self.settings = settings
        self._growers = {}

    def grow(self, data, plan, grow_side_by_side):
        """The round's trees: ``grow_side_by_side(grow_one, n_trees)`` calls
        ``grow_one(source, k)`` for each tree ``k`` (the data's
        ``TreeTeam.grow`` or a plain loop).

        ``data`` holds the rows in this process: besides ``n_trees`` it has
        ``refit_leaves(source, k, leaf_ids)`` (loss-optimal raw updates of
        tree ``k``'s leaves from their rows, not yet shrunk, or None when the
        loss keeps the Newton values) and ``finish_tree(source, k, leaf_ids,
        leaf_values, tree)`` (tree ``k`` added to the training rows' raw
        predictions), as :class:`~hgbt.engine.row_state.LocalData`.
        """
        settings = self.settings
        size = tuple(plan.tree_size.items())

        def grow_one(source, k):
            grower = self._growers.get((id(source), size))
            if grower is None:
                grower = self._growers[id(source), size] = TreeGrower(
                    source, settings.bin_thresholds, settings.n_bins_non_missing,
                    replace(settings.grower, **plan.tree_size), n_threads=source.n_threads)
            return grow_tree(settings, data, grower, k, plan)

        return grow_side_by_side(grow_one, data.n_trees)


def grow_tree(settings, data, grower, k, plan):
    """Grow tree ``k`` of the round, settle its leaf values, add it to the
    training rows' raw predictions."""
    source = grower.data
    quantize = None
    if settings.quantized_bins is not None:
        quantize = (settings.quantized_bins, int(np.random.SeedSequence(
            [settings.seed, plan.iteration, k]).generate_state(1, np.uint64)[0]))
    source.start_tree(k, plan.rows, quantize=quantize)
    tree = grower.grow(plan.feature_samplers[k])
    leaves = grower.leaf_ids()
    values = tree.nodes["value"]
    refits = data.refit_leaves(source, k, leaves)
    if refits is not None:
        # Non-smooth losses: the Newton step is replaced by the leaf's
        # loss-optimal constant (weighted median / quantile of residuals).
        for leaf, update in zip(leaves, refits):
            values[leaf] = settings.learning_rate * grower.clip_leaf_value(leaf, update)
    elif quantize is not None:
        # Splits were chosen on quantized sums; leaf values use the float ones.
        for leaf, sum_g, sum_h in zip(leaves, *source.leaf_sums(leaves)):
            values[leaf] = grower.renewed_value(leaf, sum_g, sum_h)
    data.finish_tree(source, k, leaves, values[leaves], tree)
    return tree


class VectorRoundTrees:
    """Grows each round of a multi-output fit as one tree with vector leaves
    (``BoostSettings.vector_leaves``), on plain binned rows held here.

    Parameters
    ----------
    settings : BoostSettings
    X_binned : ndarray of uint8 of shape (n_samples, n_features), F-ordered
    missing_bin : int
    n_outputs : int
    shared_hessian : bool
        Every output has the same hessians (the loss's ``trees_share_hessians``).
    """

    def __init__(self, settings, X_binned, missing_bin, n_outputs, shared_hessian):
        unsupported = [name for name, given in (
            ("use_quantized_grad", settings.quantized_bins is not None),
            ("data_sample_strategy='goss'", settings.data_sample_strategy == "goss"),
            ("colsample_bynode < 1", settings.colsample_bynode != 1.0)) if given]
        if unsupported:
            raise ValueError(f"multi_strategy='multi_output_tree' does not support "
                             f"{' or '.join(unsupported)}; use "
                             "multi_strategy='one_output_per_tree'.")
        if X_binned is None:
            raise ValueError("vector leaves need the plain binned rows.")
        self.settings = settings
        self._make = lambda size: VectorTreeGrower(
            X_binned, settings.bin_thresholds, settings.n_bins_non_missing, missing_bin,
            n_outputs, shared_hessian, replace(settings.grower, **size))
        self._growers = {}

    def grow(self, state, plan, n_threads):
        """The round's tree, one :class:`TreePredictor` per output, added to
        the raw predictions of the rows it grew on (``state``: the fit's
        :class:`~hgbt.engine.row_state.RowState`)."""
        size = tuple(plan.tree_size.items())
        grower = self._growers.get(size)
        if grower is None:
            grower = self._growers[size] = self._make(plan.tree_size)
        # the round's first sampler: the same draw as a single tree's
        tree_mask = plan.feature_samplers[0].tree_mask()
        trees = grower.grow(state.gradients, state.hessians, plan.rows, tree_mask, n_threads)
        grower.add_leaf_values(state.raw, n_threads)
        return trees
