"""Early stopping: validation split, scores per round, the stopping rule."""
import warnings

import numpy as np
from sklearn.metrics import check_scoring
from sklearn.model_selection import train_test_split

# Rows of the training set a scorer other than 'loss' is evaluated on.
MAX_TRAIN_SCORE_ROWS = 10_000


def split_validation(X, y, sample_weight, validation_fraction, seed, stratify):
    """Hold out ``validation_fraction`` of the rows (stratified for classifiers).

    Returns ``X_train, X_val, y_train, y_val, w_train, w_val`` (weights may be None).
    """
    arrays = [X, y] + ([sample_weight] if sample_weight is not None else [])
    parts = train_test_split(*arrays, test_size=validation_fraction,
                             stratify=y if stratify else None, random_state=seed)
    X_train, X_val, y_train, y_val = parts[:4]
    w_train, w_val = (parts[4], parts[5]) if sample_weight is not None else (None, None)
    return X_train, X_val, y_train, y_val, w_train, w_val


def should_stop(scores, n_iter_no_change, tol):
    """True when none of the last ``n_iter_no_change`` scores beat the one
    before them by more than ``tol`` (scores: higher is better)."""
    if len(scores) <= n_iter_no_change:
        return False
    reference = scores[-n_iter_no_change - 1] + tol
    return not any(score > reference for score in scores[-n_iter_no_change:])


class Scorer:
    """Scores of the model after each round, on training and validation data.

    ``scoring='loss'`` uses the loss of the raw predictions kept during
    training (negated: higher is better); otherwise a scikit-learn scorer is
    called on the estimator, on at most 10,000 training rows.
    """

    def __init__(self, estimator, scoring, seed):
        self.estimator = estimator
        self.scoring = scoring
        self.seed = seed
        self._scorer = None if scoring == "loss" else check_scoring(estimator, scoring)

    def subsample_train(self, X, y, sample_weight):
        """The training rows a scorer sees (all of them for 'loss')."""
        if self._scorer is None or X.shape[0] <= MAX_TRAIN_SCORE_ROWS:
            return X, y, sample_weight
        rows = np.random.default_rng(self.seed).choice(
            X.shape[0], MAX_TRAIN_SCORE_ROWS, replace=False)
        return X[rows], y[rows], None if sample_weight is None else sample_weight[rows]

    def score(self, loss, raw_prediction, X, y, y_encoded, sample_weight):
        """Score of the current model.

        ``loss`` carries the same ``sample_weight`` as the rows scored, and
        ``raw_prediction`` matches ``y_encoded``.
        """
        if self._scorer is None:
            return -loss.loss(y_encoded, raw_prediction)
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        with warnings.catch_warnings():
            # X is the validated ndarray of a fit on a DataFrame: not the user's input.
            warnings.filterwarnings("ignore", message="X does not have valid feature names",
                                    category=UserWarning)
            return float(self._scorer(self.estimator, X, y, **kwargs))
