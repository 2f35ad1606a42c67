"""Early stopping: the validation split and the stopping rule.

The scores come from :mod:`hgbt.engine.evaluation`; the rule runs as the
:class:`~hgbt.engine.callbacks.EarlyStopping` callback.
"""
import math

import numpy as np
from sklearn.model_selection import train_test_split


def split_validation(X, y, sample_weight, validation_fraction, seed, stratify,
                     init_score=None):
    """Hold out ``validation_fraction`` of the rows (stratified for classifiers).

    Returns ``X_train, X_val, y_train, y_val, w_train, w_val`` (weights may be
    None), then, with ``init_score`` (shape (n_trees, n_rows)), its two parts.
    """
    arrays = [X, y] + [a for a in (sample_weight, None if init_score is None
                                   else init_score.T) if a is not None]
    parts = train_test_split(*arrays, test_size=validation_fraction,
                             stratify=y if stratify else None, random_state=seed)
    X_train, X_val, y_train, y_val = parts[:4]
    w_train, w_val = (parts[4], parts[5]) if sample_weight is not None else (None, None)
    if init_score is None:
        return X_train, X_val, y_train, y_val, w_train, w_val
    return (X_train, X_val, y_train, y_val, w_train, w_val,
            np.ascontiguousarray(parts[-2].T), np.ascontiguousarray(parts[-1].T))


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
