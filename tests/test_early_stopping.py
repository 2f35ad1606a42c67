"""The early-stopping rule and validation split."""
import numpy as np

from hgbt.engine.early_stopping import should_stop, split_validation


def test_should_stop_rule():
    # higher is better; stop when none of the last n beat the one before them by > tol
    assert not should_stop([1, 2, 3], n_iter_no_change=2, tol=0)
    assert not should_stop([1, 2], n_iter_no_change=2, tol=0)  # too few scores
    assert should_stop([1, 3, 3, 3], n_iter_no_change=2, tol=0)
    assert should_stop([1, 3, 2, 2.5], n_iter_no_change=2, tol=0)
    assert not should_stop([1, 3, 2, 3.5], n_iter_no_change=2, tol=0)
    assert should_stop([1, 3, 3.05, 3.08], n_iter_no_change=2, tol=0.1)
    assert not should_stop([1, 3, 3.05, 3.2], n_iter_no_change=2, tol=0.1)


def test_split_validation_is_stratified_and_seeded():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = (rng.random(1000) < 0.1).astype(float)
    w = rng.random(1000)
    a = split_validation(X, y, w, 0.2, seed=3, stratify=True)
    b = split_validation(X, y, w, 0.2, seed=3, stratify=True)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)
    X_train, X_val, y_train, y_val, w_train, w_val = a
    assert len(y_val) == 200 and len(y_train) == 800
    assert abs(y_val.mean() - y.mean()) < 0.01  # stratified
    # rows stay together
    rows = {tuple(r): i for i, r in enumerate(X)}
    for Xs, ys, ws in ((X_train, y_train, w_train), (X_val, y_val, w_val)):
        idx = [rows[tuple(r)] for r in Xs]
        assert np.array_equal(y[idx], ys) and np.array_equal(w[idx], ws)


def test_can_stratify_matches_the_split():
    # True exactly where the stratified split succeeds (scikit-learn's
    # conditions: every class twice, as many rows as classes either side)
    from hgbt.engine.early_stopping import can_stratify
    rng = np.random.default_rng(0)
    cases = [np.repeat(np.arange(15), 8),                # 120 rows, 15 classes: 12 held out
             np.r_[np.zeros(150), 1.0],                  # a class of one row
             np.repeat(np.arange(12), 10),               # 12 held out for 12 classes
             np.repeat(np.arange(3), 40)]
    for y, fraction in [(c, f) for c in cases for f in (0.1, 0.2, 30)]:
        X = rng.normal(size=(y.shape[0], 2))
        try:
            split_validation(X, y, None, fraction, seed=0, stratify=True)
            ok = True
        except ValueError:
            ok = False
        assert can_stratify(y, fraction) == ok, (len(np.unique(y)), fraction)
