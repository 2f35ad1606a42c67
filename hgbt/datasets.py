"""Generated datasets shared by the demo, the tests and the benchmarks."""
import numpy as np


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
