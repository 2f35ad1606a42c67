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


class LossScorer:
    """``scoring='loss'``: minus the loss of the raw predictions the fit keeps.

    The loss comes from the training data's exact, mergeable statistics
    (``TrainingData.loss_statistics``), so a distributed fit scores exactly
    as a local one.
    """

    def score(self, data):
        """``(train, validation or None)`` scores of the current model (higher is better)."""
        train, validation = data.loss_statistics()
        return -train.value(), None if validation is None else -validation.value()


class Scorer:
    """A scikit-learn scorer of the model after each round.

    It is called on the estimator (whose trees so far predict), on at most
    10,000 training rows and on the validation rows.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted; it predicts with the rounds grown so far.
    scoring : str or callable
        A scikit-learn scorer name or callable (None: the estimator's ``score``).
    seed : int
        Seed of the training-row subsample.
    X, y, sample_weight : training rows (``y`` as the user's labels)
    X_val, y_val, sample_weight_val : validation rows, or None
    """

    def __init__(self, estimator, scoring, seed, X, y, sample_weight, X_val=None,
                 y_val=None, sample_weight_val=None):
        self.estimator = estimator
        self._scorer = check_scoring(estimator, scoring)
        if X.shape[0] > MAX_TRAIN_SCORE_ROWS:
            rows = np.random.default_rng(seed).choice(
                X.shape[0], MAX_TRAIN_SCORE_ROWS, replace=False)
            X, y = X[rows], y[rows]
            sample_weight = None if sample_weight is None else sample_weight[rows]
        self._train = X, y, sample_weight
        self._validation = None if X_val is None else (X_val, y_val, sample_weight_val)

    def score(self, data):
        """``(train, validation or None)`` scores of the current model."""
        return (self._call(*self._train),
                None if self._validation is None else self._call(*self._validation))

    def _call(self, X, y, sample_weight):
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        with warnings.catch_warnings():
            # X is the validated ndarray of a fit on a DataFrame: not the user's input.
            warnings.filterwarnings("ignore", message="X does not have valid feature names",
                                    category=UserWarning)
            return float(self._scorer(self.estimator, X, y, **kwargs))
