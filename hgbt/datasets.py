"""Generated datasets shared by the demo, the tests and the benchmarks."""
import numpy as np

__all__ = ["make_binary_task", "make_categorical_task", "make_multiclass_task",
           "make_regression_task"]


def make_regression_task(n_samples=100_000, n_features=28, missing_fraction=0.05,
                         noise=0.5, random_state=0, dtype=np.float32):
    """A nonlinear regression problem with missing values.

    Standard-normal features (every fourth one exp-transformed to be skewed);
    the target mixes thresholds, products and smooth terms of the first
    features plus Gaussian noise, then a fraction of X is set to NaN
    uniformly at random. The target is computed before values go missing,
    so missingness hides signal rather than carrying it.

    Parameters
    ----------
    n_samples, n_features : int
        ``n_features`` must be at least 8.
    missing_fraction : float
        Fraction of entries of X replaced by NaN.
    noise : float
        Standard deviation of the additive noise.
    random_state : int
    dtype : numpy dtype of X

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64
    """
    if n_features < 8:
        raise ValueError(f"n_features must be at least 8, got {n_features}.")
    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((n_samples, n_features))
    X[:, ::4] = np.exp(X[:, ::4])
    y = (2.0 * (X[:, 1] > 0.5) + np.sin(2 * X[:, 2]) + X[:, 3] * X[:, 5]
         + np.log1p(X[:, 0]) - 1.5 * (X[:, 4] > 1.0) * (X[:, 6] < 0)
         + 0.5 * np.abs(X[:, 7]) + noise * rng.standard_normal(n_samples))
    X[rng.random(X.shape) < missing_fraction] = np.nan
    return X.astype(dtype), y


def _sigmoid(z):
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def make_binary_task(n_samples=1_000_000, n_features=28, random_state=0,
                     dtype=np.float32):
    """A Higgs-shaped binary classification problem.

    Standard-normal features, every fourth one exp-transformed to be skewed.
    The label is drawn from a Bernoulli of ``sigmoid(logit)``, where the logit
    mixes thresholds, products, a gated interaction and smooth terms of the
    first 13 features (computed before the exp transform); then 5% of the
    labels are flipped. About 53% of the labels are 1. The Bayes-optimal AUC
    is about 0.86; 100 rounds of 31-leaf boosting trained on 200k rows reach
    about 0.84. No values are missing.

    Parameters
    ----------
    n_samples, n_features : int
        ``n_features`` must be at least 13; the columns after the 13th are noise.
    random_state : int
    dtype : numpy dtype of X

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64 with values 0.0 and 1.0
    """
    if n_features < 13:
        raise ValueError(f"n_features must be at least 13, got {n_features}.")
    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((n_samples, n_features))
    logit = (1.2 * (X[:, 1] > 0.3) - 0.9 * (X[:, 2] < -0.5)
             + np.sin(1.5 * X[:, 3]) + 0.8 * X[:, 5] * X[:, 6]
             + 0.6 * X[:, 0] - 0.5 * X[:, 4] ** 2
             + 0.7 * np.tanh(2.0 * X[:, 7]) * (X[:, 9] > 0)
             + 0.5 * np.abs(X[:, 10]) - 0.6 * X[:, 8] * (X[:, 11] < 0)
             + 0.4 * np.cos(2.0 * X[:, 12]))
    y = rng.random(n_samples) < _sigmoid(1.5 * logit)
    y ^= rng.random(n_samples) < 0.05  # label noise
    X[:, ::4] = np.exp(X[:, ::4])
    return X.astype(dtype), y.astype(np.float64)


def make_multiclass_task(n_samples=200_000, n_features=50, n_classes=10,
                         random_state=0, dtype=np.float32):
    """A multiclass problem: argmax of nonlinear class scores plus Gumbel noise.

    Standard-normal features; the first ``min(20, n_features)`` are
    informative, the rest are noise. Each class's score is a random linear
    combination of the informative features, of threshold indicators (one
    random threshold per feature, class-specific weights) and of ``sin(2 x)``,
    plus one class-specific product of two features; scores are centred by
    their expectations so that the classes are roughly balanced (8–13% each for
    10 classes). The label is the argmax of score plus standard Gumbel noise,
    i.e. a draw from the softmax of the scores. With the defaults the
    Bayes-optimal accuracy is about 0.69 (chance 0.10) and 100 rounds of
    31-leaf boosting trained on 100k rows reach about 0.63.

    Parameters
    ----------
    n_samples, n_features : int
        ``n_features`` must be at least 2.
    n_classes : int
        At least 2. The class structure is drawn from ``random_state`` before
        X, so it does not depend on ``n_samples``.
    random_state : int
    dtype : numpy dtype of X

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64 with values 0.0 .. n_classes - 1
    """
    from math import erfc, sqrt

    if n_features < 2:
        raise ValueError(f"n_features must be at least 2, got {n_features}.")
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2, got {n_classes}.")
    rng = np.random.default_rng(random_state)
    m = min(20, n_features)
    w_linear = 0.5 * rng.standard_normal((m, n_classes))
    thresholds = rng.uniform(-1.0, 1.0, size=m)
    w_step = rng.standard_normal((m, n_classes))
    w_sin = 0.5 * rng.standard_normal((m, n_classes))
    pairs = np.array([rng.choice(m, 2, replace=False) for _ in range(n_classes)])
    # E[x > t] = P(N(0, 1) > t); the other terms have expectation 0.
    offset = np.array([0.5 * erfc(t / sqrt(2.0)) for t in thresholds]) @ w_step

    X = rng.standard_normal((n_samples, n_features))
    Z = X[:, :m]
    scores = (Z @ w_linear + (Z > thresholds).astype(np.float64) @ w_step
              + np.sin(2.0 * Z) @ w_sin + Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]
              - offset)
    scores += rng.gumbel(size=scores.shape)
    y = np.argmax(scores, axis=1)
    return X.astype(dtype), y.astype(np.float64)


def make_categorical_task(n_samples=500_000, n_numeric=10, n_categorical=10,
                          random_state=0, dtype=np.float32):
    """A binary problem on a categorical-heavy table.

    ``n_numeric`` standard-normal columns, then ``n_categorical`` integer-coded
    categorical columns with 10 to 200 levels (evenly spread), levels drawn
    with Zipf-like frequencies. Every level has its own random effect on the
    logit; two categorical pairs interact (their effects multiply), and the
    first three numeric columns enter nonlinearly. 5% of labels are flipped.
    No values are missing. The categorical columns are the last ones.

    Returns
    -------
    X : ndarray of shape (n_samples, n_numeric + n_categorical)
    y : ndarray of shape (n_samples,), float64 with values 0.0 and 1.0
    """
    if n_numeric < 3 or n_categorical < 4:
        raise ValueError("make_categorical_task needs n_numeric >= 3 and "
                         "n_categorical >= 4.")
    rng = np.random.default_rng(random_state)
    X = np.empty((n_samples, n_numeric + n_categorical))
    X[:, :n_numeric] = rng.standard_normal((n_samples, n_numeric))
    levels = np.linspace(10, 200, n_categorical).astype(int)
    effects = []
    for j, n_levels in enumerate(levels):
        weights = 1.0 / np.arange(1, n_levels + 1) ** 0.8
        X[:, n_numeric + j] = rng.choice(n_levels, n_samples, p=weights / weights.sum())
        effects.append(rng.standard_normal(n_levels) * 0.6)
    codes = X[:, n_numeric:].astype(np.intp)
    logit = sum(effects[j][codes[:, j]] for j in range(n_categorical))
    logit += 1.5 * effects[0][codes[:, 0]] * effects[1][codes[:, 1]]
    logit += 1.5 * effects[2][codes[:, 2]] * effects[3][codes[:, 3]]
    logit += 0.8 * np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] - 0.6 * (X[:, 2] > 0.5)
    y = rng.random(n_samples) < _sigmoid(logit - np.median(logit))
    y ^= rng.random(n_samples) < 0.05
    return X.astype(dtype), y.astype(np.float64)
