"""Early stopping: the validation split and the stopping rule.

The scores come from :mod:`hgbt.engine.evaluation`; the rule runs as the
:class:`~hgbt.engine.callbacks.EarlyStopping` callback.
"""
import math

import numpy as np
from sklearn.model_selection import GroupShuffleSplit, train_test_split


def split_validation(X, y, meta, validation_fraction, seed, stratify):
    """Hold out ``validation_fraction`` of the rows (stratified for
    classifiers; whole queries when ``meta`` has query ids, so a hold-out
    never cuts a query).

    Returns ``X_train, X_val, y_train, y_val, meta_train, meta_val`` (the
    rows' side information, :class:`~hgbt.core.row_meta.RowMeta`, goes along).
    """
    rows = np.arange(y.shape[0])
    if meta.qid is not None:
        if meta.queries.n_queries < 2:
            raise ValueError("a hold-out for early stopping keeps queries whole: it needs "
                             "at least 2 queries; pass X_val (with qid_val) or "
                             "early_stopping=False.")
        # a count of rows: that share of the queries (whole queries are held out)
        share = (validation_fraction if isinstance(validation_fraction, float)
                 else validation_fraction / y.shape[0])
        train, held = next(GroupShuffleSplit(1, test_size=share,
                                             random_state=seed).split(rows, groups=meta.qid))
        train, held = np.sort(train), np.sort(held)  # each query's rows in their order
    else:
        train, held = train_test_split(rows, test_size=validation_fraction,
                                       stratify=y if stratify else None, random_state=seed)
    return X[train], X[held], y[train], y[held], meta.take(train), meta.take(held)


def can_stratify(y, validation_fraction):
    """Whether :func:`split_validation` can hold out ``validation_fraction``
    of ``y``'s rows stratified: every class twice or more, and as many
    rows as classes on either side (scikit-learn's conditions)."""
    n = y.shape[0]
    n_val = (math.ceil(validation_fraction * n) if isinstance(validation_fraction, float)
             else int(validation_fraction))
    counts = np.unique(y, return_counts=True)[1]
    return counts.min() >= 2 and min(n_val, n - n_val) >= counts.shape[0]


def should_stop(scores, n_iter_no_change, tol):
    """True when none of the last ``n_iter_no_change`` scores beat the one
    before them by more than ``tol`` (scores: higher is better)."""
    if len(scores) <= n_iter_no_change:
        return False
    reference = scores[-n_iter_no_change - 1] + tol
    return not any(score > reference for score in scores[-n_iter_no_change:])
