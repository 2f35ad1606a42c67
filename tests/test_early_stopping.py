"""The early-stopping rule and validation split."""
import numpy as np

from hgbt.core.row_meta import NO_META, RowMeta

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
    a = split_validation(X, y, RowMeta(w), 0.2, seed=3, stratify=True)
    b = split_validation(X, y, RowMeta(w), 0.2, seed=3, stratify=True)
    for u, v in zip(a[:4], b[:4]):
        assert np.array_equal(u, v)
    X_train, X_val, y_train, y_val, m_train, m_val = a
    w_train, w_val = m_train.sample_weight, m_val.sample_weight
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
            split_validation(X, y, NO_META, fraction, seed=0, stratify=True)
            ok = True
        except ValueError:
            ok = False
        assert can_stratify(y, fraction) == ok, (len(np.unique(y)), fraction)


# --------------------------------- an eval_set of the training rows is never watched
def _sets(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4000, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(size=4000)
    return X[:3000], y[:3000], X[3000:], y[3000:]


def _same_trees(a, b):
    from fitted import all_trees
    assert a.n_iter_ == b.n_iter_
    assert [t.nodes.tobytes() for t in all_trees(a)] == [t.nodes.tobytes() for t in all_trees(b)]


PARAMS = dict(max_iter=1000, learning_rate=0.3, random_state=0, n_iter_no_change=5)


def test_the_training_rows_in_eval_set_are_scored_not_watched():
    """LightGBM's and XGBoost's idiom eval_set=[(X_train, y_train), (X_val, y_val)]:
    early stopping watches the validation set (it ran all 1000 rounds watching the
    training rows before), with a warning that says so."""
    import pytest
    from hgbt import HistGBDTRegressor

    X, y, X_val, y_val = _sets()
    with pytest.warns(UserWarning, match=r"\['valid_0'\] holds the training rows.*'valid_1'"):
        idiom = HistGBDTRegressor(**PARAMS).fit(X, y, eval_set=[(X, y), (X_val, y_val)])
    assert idiom.n_iter_ < 100
    assert list(idiom.evals_result_) == ["train", "valid_0", "valid_1"]
    plain = HistGBDTRegressor(**PARAMS).fit(X, y, eval_set=[(X_val, y_val)])
    _same_trees(idiom, plain)
    assert idiom.best_iteration_ == plain.best_iteration_


def test_a_copy_of_the_training_rows_is_recognised_and_a_hold_out_made():
    import pytest
    from hgbt import HistGBDTRegressor

    X, y, _, _ = _sets(1)
    with pytest.warns(UserWarning, match="holds out validation_fraction"):
        copied = HistGBDTRegressor(**PARAMS).fit(X, y, eval_set=[(X.copy(), y.copy())])
    # the hold-out it watches instead ('auto' alone would cross-validate these rows)
    held_out = HistGBDTRegressor(**PARAMS, early_stopping=True).fit(X, y)
    _same_trees(copied, held_out)
    assert copied.n_iter_ < 1000 and "validation" in copied.evals_result_


def test_an_explicit_early_stopping_set_is_honoured_and_the_verbose_line_names_a_skip(
        capsys):
    import warnings

    import pytest
    from hgbt import HistGBDTRegressor

    X, y, X_val, y_val = _sets(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the user chose the set
        chosen = HistGBDTRegressor(**PARAMS, max_leaf_nodes=31, early_stopping_set="valid_0",
                                   verbose=1000).fit(X, y, eval_set=[(X, y), (X_val, y_val)])
    assert chosen.n_iter_ > 100  # the training loss keeps improving
    assert not capsys.readouterr().out.startswith("Watching")
    with pytest.warns(UserWarning, match="holds the training rows"):
        HistGBDTRegressor(**PARAMS, verbose=1000).fit(X, y, eval_set=[(X, y), (X_val, y_val)])
    assert capsys.readouterr().out.startswith(
        "Watching valid_1 loss: valid_0 holds the training rows.")


def test_train_skips_the_training_dataset_in_valid_sets():
    import pytest
    from hgbt import Dataset, train

    X, y, X_val, y_val = _sets(3)
    data = Dataset(X, y)
    valid = Dataset(X_val, y_val, reference=data)
    params = {"learning_rate": 0.3, "random_state": 0, "n_iter_no_change": 5}
    with pytest.warns(UserWarning, match="'valid_1'"):
        both = train(params, data, 1000, valid_sets=[data, valid])
    alone = train(params, data, 1000, valid_sets=[valid])
    assert both.n_iter == alone.n_iter < 100 and both.best_iteration == alone.best_iteration
