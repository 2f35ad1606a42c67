"""The interface every loss implements (:class:`BaseLoss`).

The losses of regression and classification are in :mod:`hgbt.engine.losses`,
the ranking losses in :mod:`hgbt.engine.ranking`; the shapes and conventions
are described in :mod:`hgbt.engine.losses`.
"""
import copy

import numpy as np

from ..core._types import G_H_DTYPE, Y_DTYPE
from ..core.collective import SINGLE_PROCESS
from ..core.exact import WeightedMean
from ..core.row_meta import NO_META, RowMeta

_NO_WEIGHT = np.empty(0, dtype=Y_DTYPE)
#: the least probability a log loss's baseline takes (1 - it the most)
PROB_EPS = 1e-15


def clipped_logit(p):
    """log(p / (1 - p)), p and 1 - p each clipped to at least PROB_EPS
    (symmetric, exact near 1 too): a binary log loss's baseline."""
    return np.log(np.maximum(p, PROB_EPS)) - np.log(np.maximum(1.0 - p, PROB_EPS))


class BaseLoss:
    """Interface of every loss.

    Parameters
    ----------
    meta : RowMeta or None
        The rows' side information (non-negative ``sample_weight``, already
        validated; the objectives that need them read queries from it).
    """

    #: trees per boosting round (number of classes for multiclass)
    n_trees_per_iteration = 1
    #: leaf values are re-fitted from residuals after growing (non-smooth losses)
    needs_leaf_refit = False
    #: the hessian is the same for every row when unweighted
    hessian_is_constant_unweighted = False
    #: how raw scores become predictions (:meth:`inverse_link`): 'identity',
    #: 'exp', 'logistic' or 'softmax' (the exporters' names)
    link = "identity"
    #: :meth:`row_loss` gives loss values (a custom loss gives gradients only)
    has_loss_values = True
    #: the training loss may be scored on a sample of the rows (its value a
    #: mean of independent rows' terms)
    scored_on_a_sample = True
    #: the trees of a round grow side by side, a share of the threads each
    #: (else one after another on all of them)
    trees_side_by_side = True
    #: the trees of a round have the same hessians (a multi-output loss's
    #: outputs): vector-leaf trees keep one hessian sum for all
    trees_share_hessians = False
    #: the processes whose rows the fit pools (a Dask shard sets its ring):
    #: the quantiles of the non-smooth losses are taken over all of them
    collective = SINGLE_PROCESS

    def __init__(self, meta=None):
        if meta is not None and not isinstance(meta, RowMeta):
            raise TypeError(f"a loss takes its rows' side information as a RowMeta, got "
                            f"{type(meta).__name__}: pass RowMeta(sample_weight=...).")
        self.meta = NO_META if meta is None else meta

    @property
    def sample_weight(self):
        """The rows' weights (None: all 1)."""
        return self.meta.sample_weight

    @property
    def constant_hessian(self):
        """Whether the hessian is one constant for every row (counts suffice)."""
        return self.sample_weight is None and self.hessian_is_constant_unweighted

    def for_rows(self, meta):
        """The same loss, fitted state included (e.g. Huber's ``delta_``),
        for other rows of side information ``meta``: scores a validation set
        exactly as the training rows are scored."""
        other = copy.copy(self)
        other.meta = NO_META if meta is None else meta
        return other

    def restart(self):
        """Forget what the rounds fitted (a fit that starts over from the
        baseline is scored as a new one)."""

    def _weights(self):
        return _NO_WEIGHT if self.sample_weight is None else self.sample_weight

    def check_y(self, y):
        """Raise ValueError if ``y`` is outside the loss's domain."""

    def check_y_rows(self, y):
        """The row-by-row part of :meth:`check_y`, for one shard of the rows
        (totals, such as a positive mean, are checked by the baseline)."""
        self.check_y(y)

    def baseline(self, y):
        """Loss-optimal constant raw prediction, shape (n_trees_per_iteration,)."""
        return self.baseline_from_statistics(self.baseline_statistics(y))

    def baseline_statistics(self, y):
        """Mergeable statistics the baseline is computed from.

        The statistics of row shards add up (``+``) to those of all rows,
        exactly (:mod:`hgbt.core.exact`), so a distributed fit gets the local
        baseline bit for bit. Losses whose baseline needs every row at once
        (a median) raise NotImplementedError.
        """
        raise NotImplementedError(f"loss={self.name!r}: the baseline is not computed "
                                  "from mergeable sums")

    def baseline_from_statistics(self, statistics):
        """The baseline from (merged) :meth:`baseline_statistics`."""
        raise NotImplementedError

    def allocate(self, n_samples):
        """Gradient and hessian arrays for ``n_samples`` rows.

        ``full_hessian=True`` forces a per-row hessian (needed when sampling
        re-weights rows).
        """
        return self.allocate_buffers(n_samples, full_hessian=False)

    def allocate_buffers(self, n_samples, full_hessian):
        k = self.n_trees_per_iteration
        gradients = np.empty((k, n_samples), dtype=G_H_DTYPE)
        if self.constant_hessian and not full_hessian:
            return gradients, np.ones((k, 1), dtype=G_H_DTYPE)
        return gradients, np.empty((k, n_samples), dtype=G_H_DTYPE)

    def gradients(self, y, raw_prediction, gradients, hessians, n_threads):
        """Fill ``gradients`` and ``hessians`` (2-D, see module doc) in place.

        A per-row ``hessians`` array must be filled even when the loss's
        hessian is constant.
        """
        raise NotImplementedError

    def row_loss(self, y, raw_prediction, n_threads=1):
        """Unweighted loss of every row, shape (n_samples,); ``raw_prediction`` is 2-D.
        The values do not depend on ``n_threads``."""
        raise NotImplementedError

    def loss_statistics(self, y, raw_prediction, n_threads=1):
        """Mergeable statistics of :meth:`loss` (a :class:`~hgbt.core.exact.WeightedMean`)."""
        return WeightedMean.of(self.row_loss(y, raw_prediction, n_threads), self.sample_weight)

    def loss(self, y, raw_prediction):
        """Weighted mean of the per-row loss (exactly summed); ``raw_prediction`` is 2-D."""
        return self.loss_statistics(y, raw_prediction).value()

    def inverse_link(self, raw_prediction):
        """Predictions on the target's scale from 2-D raw predictions
        (``link``; identity here).

        Regression: shape (n_samples,). Classification: probabilities, shape
        (n_samples, n_classes).
        """
        return raw_prediction[0]

    def refit_leaves(self, y, raw_prediction, sample_weight, leaves, n_leaves):
        """Loss-optimal raw updates of a tree's leaves from their rows
        (``needs_leaf_refit``), shape (n_leaves,), not yet shrunk by the
        learning rate.

        ``y``, ``raw_prediction`` (1-D, this tree's raw predictions before
        the tree), ``sample_weight`` (or None) and ``leaves`` (each row's
        leaf, in ``[0, n_leaves)``) hold the leaves' rows in this process;
        with a :attr:`collective`, every process's rows count.
        """
        raise NotImplementedError

    def refit_leaf(self, y, raw_prediction, sample_weight):
        """:meth:`refit_leaves` of one leaf holding every given row."""
        return float(self.refit_leaves(y, raw_prediction, sample_weight,
                                       np.zeros(len(y), dtype=np.intp), 1)[0])
