"""Start scores (``init_score``, LightGBM's ``init_score``, XGBoost's
``base_margin``): each row's raw score before the first tree."""
import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from fitted import all_trees


def _same_trees(a, b):
    return [t.nodes.tobytes() for t in all_trees(a)] == [t.nodes.tobytes()
                                                          for t in all_trees(b)]


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, 2 * X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=n) + 10


@pytest.mark.parametrize("params", [
    dict(early_stopping=False, max_leaf_nodes=31),
    # a hold-out takes its rows' start scores along; 'auto' tree sizes restart
    dict(early_stopping=True, max_leaf_nodes="auto", n_iter_no_change=3),
])
def test_a_constant_start_is_the_baseline(params):
    """Starting every row at the baseline the fit would choose gives the same
    trees, with a baseline of 0 (the peers' convention)."""
    X, y = _data()
    plain = HistGBDTRegressor(max_iter=40, random_state=0, **params).fit(X, y)
    start = np.full(len(y), plain.booster_.baseline[0])
    offset = HistGBDTRegressor(max_iter=40, random_state=0, **params).fit(
        X, y, init_score=start)
    np.testing.assert_array_equal(offset.booster_.baseline, [0.0])
    assert offset.n_iter_ == plain.n_iter_ and _same_trees(offset, plain)
    np.testing.assert_allclose(offset.predict(X) + start, plain.predict(X), rtol=1e-12)
    # the history saw the same scores (early stopping records them)
    assert offset.evals_result_.keys() == plain.evals_result_.keys()
    for name, metrics in plain.evals_result_.items():
        np.testing.assert_allclose(offset.evals_result_[name]["loss"], metrics["loss"],
                                   rtol=1e-9)


def test_eval_sets_start_from_their_scores():
    X, y = _data()
    plain = HistGBDTRegressor(max_iter=20, early_stopping=False, random_state=0).fit(
        X[:2000], y[:2000], eval_set=[(X[2000:], y[2000:])])
    b = plain.booster_.baseline[0]
    offset = HistGBDTRegressor(max_iter=20, early_stopping=False, random_state=0).fit(
        X[:2000], y[:2000], eval_set=[(X[2000:], y[2000:])],
        init_score=np.full(2000, b), eval_init_score=[np.full(1000, b)])
    np.testing.assert_allclose(offset.evals_result_["valid_0"]["loss"],
                               plain.evals_result_["valid_0"]["loss"], rtol=1e-9)


def test_a_poisson_exposure_offset_recovers_the_rate():
    """Counts over exposures of very different lengths: with log(exposure) as
    the start score the trees learn the rate itself."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6000, 3))
    exposure = rng.uniform(0.1, 10, 6000)
    rate = np.exp(0.5 * X[:, 0])
    y = rng.poisson(rate * exposure)
    model = HistGBDTRegressor(loss="poisson", max_iter=100, random_state=0).fit(
        X, y, init_score=np.log(exposure))
    learned = model.predict(X)  # exp(raw): the rate, the exposure left out
    assert np.corrcoef(np.log(learned), np.log(rate))[0, 1] > 0.97
    assert abs(np.mean(learned) / np.mean(rate) - 1) < 0.1
    ignored = HistGBDTRegressor(loss="poisson", max_iter=100, random_state=0).fit(X, y)
    assert np.corrcoef(np.log(ignored.predict(X)), np.log(rate))[0, 1] < 0.97 or \
        abs(np.mean(ignored.predict(X)) / np.mean(rate) - 1) > 0.5


def test_multiclass_start_scores_are_per_class():
    X, y = _data()
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    plain = HistGBDTClassifier(max_iter=10, early_stopping=False, random_state=0).fit(
        X, labels)
    start = np.tile(plain.booster_.baseline, (len(y), 1))  # (n_samples, n_classes)
    offset = HistGBDTClassifier(max_iter=10, early_stopping=False, random_state=0).fit(
        X, labels, init_score=start)
    assert _same_trees(offset, plain)
    np.testing.assert_allclose(offset.decision_function(X) + start,
                               plain.decision_function(X), rtol=1e-12, atol=1e-12)


def test_start_scores_are_checked():
    X, y = _data(300)
    model = HistGBDTRegressor(max_iter=2)
    with pytest.raises(ValueError, match=r"init_score has shape \(299,\); expected \(300,\)"):
        model.fit(X, y, init_score=np.zeros(299))
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.fit(X, y, init_score=np.full(300, np.nan))
    with pytest.raises(ValueError, match="give eval_init_score too"):
        model.fit(X, y, eval_set=[(X, y)], init_score=np.zeros(300))
    with pytest.raises(ValueError, match="give init_score_val too"):
        model.fit(X[:200], y[:200], X_val=X[200:], y_val=y[200:], init_score=np.zeros(200))
    with pytest.raises(ValueError, match="need init_score"):
        model.fit(X, y, eval_set=[(X, y)], eval_init_score=[np.zeros(300)])
    labels = np.arange(300) % 3
    with pytest.raises(ValueError, match=r"expected \(300, 3\) \(a raw score per row and "
                                         r"class\)"):
        HistGBDTClassifier(max_iter=2).fit(X, labels, init_score=np.zeros(300))


def test_datasets_carry_their_start_scores():
    import hgbt
    X, y = _data()
    b = float(np.mean(y))
    train = hgbt.Dataset(X[:2000], y[:2000], init_score=np.full(2000, b))
    valid = hgbt.Dataset(X[2000:], y[2000:], init_score=np.full(1000, b), reference=train)
    booster = hgbt.train({"max_leaf_nodes": 15, "random_state": 0}, train, 10,
                         valid_sets=[valid])
    arrays = HistGBDTRegressor(max_iter=10, max_leaf_nodes=15, random_state=0,
                               early_stopping=False).fit(
        X[:2000], y[:2000], init_score=np.full(2000, b), eval_set=[(X[2000:], y[2000:])],
        eval_init_score=[np.full(1000, b)])
    np.testing.assert_array_equal(booster.baseline, [0.0])
    assert [t.nodes.tobytes() for r in booster.trees for t in r] == [
        t.nodes.tobytes() for t in all_trees(arrays)]
    np.testing.assert_allclose(booster.evals_result["valid_0"]["loss"],
                               arrays.evals_result_["valid_0"]["loss"], rtol=1e-12)
    with pytest.raises(ValueError, match="one start score per row"):
        hgbt.Dataset(X, y, init_score=np.zeros(5))


def test_cv_folds_take_their_rows_start_scores():
    import hgbt
    X, y = _data(600)
    params = {"max_leaf_nodes": 7, "random_state": 0}
    # y from 5, and y - 5 from 0: the same residuals in every fold
    shifted = hgbt.cv(params, hgbt.Dataset(X, y, init_score=np.full(600, 5.0)), 10, nfold=3)
    plain = hgbt.cv(params, hgbt.Dataset(X, y - 5, init_score=np.zeros(600)), 10, nfold=3)
    np.testing.assert_allclose(shifted["loss-mean"], plain["loss-mean"], rtol=1e-9)


def test_restarts_keep_every_sets_start_scores():
    """max_leaf_nodes='auto' fits a second tree size from the start when the
    first runs to max_iter: every set starts from its scores again."""
    X, y = _data()
    fits = []
    for start in (None, "baseline"):
        if start is not None:  # the plain fit's own baseline
            start = float(fits[0].booster_.baseline[0])
        kwargs = {} if start is None else dict(
            init_score=np.full(2000, start), init_score_val=np.full(500, start),
            eval_init_score=[np.full(500, start)])
        model = HistGBDTRegressor(max_iter=5, random_state=0, max_leaf_nodes="auto")
        fits.append(model.fit(X[:2000], y[:2000], X_val=X[2000:2500], y_val=y[2000:2500],
                              eval_set=[(X[2500:], y[2500:])], **kwargs))
    plain, offset = fits
    assert plain.max_leaf_nodes_ == offset.max_leaf_nodes_
    np.testing.assert_allclose(offset.evals_result_["valid_0"]["loss"],
                               plain.evals_result_["valid_0"]["loss"], rtol=1e-6)


def test_every_set_starts_from_scores_or_none_does():
    import hgbt
    X, y = _data(300)
    with pytest.raises(ValueError, match=r"no start scores for eval_set \[1\]"):
        HistGBDTRegressor(max_iter=2).fit(X, y, init_score=np.zeros(300),
                                          eval_set=[(X, y), (X, y)],
                                          eval_init_score=[np.zeros(300), None])
    train = hgbt.Dataset(X, y, init_score=np.zeros(300))
    with_scores = hgbt.Dataset(X, y, init_score=np.zeros(300), reference=train)
    without = hgbt.Dataset(X, y, reference=train)
    with pytest.raises(ValueError, match=r"no start scores for eval_set \[1\]"):
        hgbt.train({"max_iter": 2}, train, valid_sets=[with_scores, without])
