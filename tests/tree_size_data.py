"""Data for the tests of max_leaf_nodes='auto' (test_boosting, test_callbacks)."""
import numpy as np

# runs to max_iter: the early-stopping patience is longer than the fit
SIZED = dict(max_iter=6, n_iter_no_change=50, random_state=0, n_threads=1,
             early_stopping=True)  # the hold-out (auto would cross-validate)


def sized_problem(winner):
    """Data on which the first (31 leaves) or the second (63) tree size of
    max_leaf_nodes='auto' scores better on the hold-out after 6 rounds."""
    # (the seed of the second: its margin was the widest of three seeds
    # under the greedy binning rule; seed 0 had made 63 leaves win under
    # the quantile rule by chance, the noise dominating)
    n, noise, seed = (600, 0.1, 0) if winner == 0 else (2000, 3.0, 2)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    y = np.sin(2 * X[:, 0]) * X[:, 1] + X[:, 2] * X[:, 3] + noise * rng.standard_normal(n)
    return X, y
