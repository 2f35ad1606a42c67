"""The boosting loop: early stopping, warm start, staged prediction, sampling, losses."""
import io

import numpy as np
import pytest
from sklearn.metrics import r2_score

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.callbacks import ProgressBar
from hgbt.datasets import make_regression_task
from fitted import all_trees, tree_at


def _trees(model):
    return [t.nodes for t in all_trees(model)]


def _same_model(a, b):
    ta, tb = _trees(a), _trees(b)
    return len(ta) == len(tb) and all(x.tobytes() == y.tobytes() for x, y in zip(ta, tb))


@pytest.fixture(scope="module")
def task():
    X, y = make_regression_task(n_samples=12_000, n_features=10, random_state=2)
    return X[:8000], y[:8000], X[8000:], y[8000:]


# ----------------------------------------------------------------- early stopping
def test_early_stopping_stops_on_noise():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20_000, 5)), rng.normal(size=20_000)
    m = HistGBDTRegressor(max_iter=300, n_iter_no_change=5, random_state=0).fit(X, y)
    assert m.n_iter_ < 40  # 'auto' is on from 100 rows
    assert len(m.validation_score_) == m.n_iter_ + 1
    assert len(m.train_score_) == m.n_iter_ + 1


def test_early_stopping_keeps_going_on_signal(task):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=60, early_stopping=True, n_iter_no_change=5,
                          random_state=0).fit(X, y)
    assert m.n_iter_ == 60
    assert np.all(np.diff(m.validation_score_[:20]) > 0)


def test_explicit_validation_set_is_used(task):
    X, y, X_val, y_val = task
    m = HistGBDTRegressor(max_iter=30, random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    pred = m.predict(X_val)
    np.testing.assert_allclose(m.validation_score_[-1], -0.5 * np.mean((y_val - pred) ** 2),
                               rtol=1e-9)
    # the whole training set was used for training (no hold-out)
    np.testing.assert_allclose(m.train_score_[-1], -0.5 * np.mean((y - m.predict(X)) ** 2),
                               rtol=1e-9)


def test_scorer_and_training_only_scores(task):
    X, y, X_val, y_val = task
    m = HistGBDTRegressor(max_iter=10, scoring="r2", random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    np.testing.assert_allclose(m.validation_score_[-1], r2_score(y_val, m.predict(X_val)))
    m = HistGBDTRegressor(max_iter=10, early_stopping=True, validation_fraction=None).fit(X, y)
    assert m.validation_score_.size == 0 and m.train_score_.size == 11


def test_classifier_early_stopping_with_stratified_split():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12_000, 4))
    y = np.where(rng.random(12_000) < 0.5, "a", "b")  # pure noise
    m = HistGBDTClassifier(max_iter=200, n_iter_no_change=5, random_state=0).fit(X, y)
    assert m.n_iter_ < 40


def test_validation_arguments_checked(task):
    X, y, X_val, y_val = task
    with pytest.raises(ValueError, match="together"):
        HistGBDTRegressor().fit(X, y, X_val=X_val)
    with pytest.raises(ValueError, match="early_stopping=False"):
        HistGBDTRegressor(early_stopping=False).fit(X, y, X_val=X_val, y_val=y_val)


# --------------------------------------------------------- warm start and staged
@pytest.mark.parametrize("extra", [{}, dict(subsample=0.7, colsample_bynode=0.5),
                                   dict(data_sample_strategy="goss")])
def test_warm_start_equals_one_long_fit(task, extra):
    X, y, X_test, _ = task
    params = dict(early_stopping=False, random_state=0, **extra)
    full = HistGBDTRegressor(max_iter=100, **params).fit(X, y)
    warm = HistGBDTRegressor(max_iter=50, warm_start=True, **params).fit(X, y)
    warm.set_params(max_iter=100).fit(X, y)
    assert warm.n_iter_ == 100
    assert _same_model(full, warm)
    assert np.array_equal(full.predict(X_test), warm.predict(X_test))


def test_warm_start_cannot_shrink(task):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=5, warm_start=True, early_stopping=False).fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        m.set_params(max_iter=3).fit(X, y)


def test_staged_predict_last_equals_predict(task):
    X, y, X_test, _ = task
    m = HistGBDTRegressor(max_iter=15, early_stopping=False).fit(X, y)
    staged = list(m.staged_predict(X_test))
    assert len(staged) == 15
    assert np.array_equal(staged[-1], m.predict(X_test))


# ---------------------------------------------------------------------- sampling
def test_full_rate_sampling_is_the_unsampled_model(task):
    X, y, _, _ = task
    base = HistGBDTRegressor(max_iter=10, early_stopping=False, random_state=0).fit(X, y)
    same = [
        dict(subsample=1.0, colsample_bytree=1.0, colsample_bynode=1.0),
        # GOSS keeping every row (top + other = 1) re-weights by exactly 1.
        dict(data_sample_strategy="goss", goss_top_rate=0.3, goss_other_rate=0.7),
        # Fractions that round to every feature: masks drawn but all ones.
        dict(colsample_bytree=0.97, colsample_bynode=0.97),
    ]
    for params in same:
        m = HistGBDTRegressor(max_iter=10, early_stopping=False, random_state=0,
                              **params).fit(X, y)
        assert _same_model(base, m), params


@pytest.mark.parametrize("params", [dict(subsample=0.5), dict(data_sample_strategy="goss"),
                                    dict(colsample_bytree=0.5), dict(colsample_bynode=0.5)])
def test_sampling_is_seeded_and_still_learns(task, params):
    X, y, X_test, y_test = task
    fit = lambda seed: HistGBDTRegressor(max_iter=40, early_stopping=False,
                                         random_state=seed, **params).fit(X, y)
    a, b, c = fit(0), fit(0), fit(1)
    assert _same_model(a, b)
    assert not _same_model(a, c)
    assert r2_score(y_test, a.predict(X_test)) > 0.5


def test_colsample_bytree_limits_features_per_tree(task):
    X, y, _, _ = task
    m = HistGBDTRegressor(max_iter=10, colsample_bytree=0.3, early_stopping=False,
                          random_state=0).fit(X, y)
    for nodes in _trees(m):
        used = set(nodes["feature_idx"][nodes["is_leaf"] == 0])
        assert len(used) <= 3


# ------------------------------------------------------------ losses end to end
def test_quantile_coverage():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30_000, 3))
    y = X[:, 0] + rng.normal(scale=np.exp(0.3 * X[:, 1]))  # heteroscedastic
    for q in (0.1, 0.5, 0.9):
        m = HistGBDTRegressor(loss="quantile", quantile=q,
                              random_state=0).fit(X[:20_000], y[:20_000])
        coverage = np.mean(y[20_000:] <= m.predict(X[20_000:]))
        assert abs(coverage - q) < 0.02, (q, coverage)


def _deviance(loss, y, mu, power=1.5):
    from sklearn.metrics import mean_tweedie_deviance
    p = {"poisson": 1, "gamma": 2, "tweedie": power}[loss]
    return mean_tweedie_deviance(y, mu, power=p)


@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_log_link_losses_beat_constant(loss):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12_000, 4))
    mu = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1])
    if loss == "poisson":
        y = rng.poisson(mu).astype(float)
    elif loss == "gamma":
        y = rng.gamma(2.0, mu / 2.0)
    else:  # compound Poisson-gamma: zeros and positive amounts
        n = rng.poisson(mu)
        y = np.array([rng.gamma(2.0, 0.5, k).sum() for k in n])
    m = HistGBDTRegressor(loss=loss, random_state=0).fit(X[:8000], y[:8000])
    pred = m.predict(X[8000:])
    assert np.all(pred > 0)
    constant = np.full(4000, np.average(y[:8000]))
    assert _deviance(loss, y[8000:], pred) < 0.9 * _deviance(loss, y[8000:], constant)


@pytest.mark.parametrize("loss", ["absolute_error", "huber"])
def test_robust_losses_resist_outliers(loss):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(10_000, 2))
    y_clean = np.sin(2 * X[:, 0])
    y = y_clean + 0.1 * rng.normal(size=10_000)
    y[rng.random(10_000) < 0.05] += 50.0  # gross outliers
    robust = HistGBDTRegressor(loss=loss, max_iter=100, early_stopping=False).fit(X, y)
    plain = HistGBDTRegressor(max_iter=100, early_stopping=False).fit(X, y)
    err = lambda m: np.median(np.abs(m.predict(X) - y_clean))
    assert err(robust) < 0.5 * err(plain)


@pytest.mark.parametrize("loss, y", [("poisson", -1.0), ("gamma", 0.0), ("tweedie", -1.0)])
def test_targets_outside_domain_rejected(loss, y):
    X, target = np.zeros((20, 2)), np.ones(20)
    target[3] = y
    with pytest.raises(ValueError, match=loss):
        HistGBDTRegressor(loss=loss).fit(X, target)


def test_quantile_loss_needs_quantile():
    with pytest.raises(ValueError, match="quantile"):
        HistGBDTRegressor(loss="quantile").fit(np.zeros((20, 2)), np.ones(20))


def test_custom_objective_matches_builtin(task):
    X, y, X_test, _ = task
    y = y - y.mean()  # the custom objective starts from 0, the built-in from the mean

    def squared_error(y_true, raw, sample_weight):
        return raw - y_true, np.ones_like(raw)

    custom = HistGBDTRegressor(loss=squared_error, max_iter=20, early_stopping=False,
                               random_state=0).fit(X, y)
    builtin = HistGBDTRegressor(max_iter=20, early_stopping=False, random_state=0).fit(X, y)
    np.testing.assert_allclose(custom.predict(X_test), builtin.predict(X_test),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad", [
    lambda y, r, w: (r - y, np.ones(3)),               # wrong hessian shape
    lambda y, r, w: (np.full_like(r, np.nan), np.ones_like(r)),  # not finite
    lambda y, r, w: (r - y, -np.ones_like(r)),         # negative hessian
])
def test_custom_objective_validated(bad):
    with pytest.raises(ValueError):
        HistGBDTRegressor(loss=bad, max_iter=2).fit(np.zeros((30, 2)), np.ones(30))


def test_l1_regularization_shrinks_leaves(task):
    X, y, _, _ = task
    plain = HistGBDTRegressor(max_iter=1, early_stopping=False).fit(X, y)
    l1 = HistGBDTRegressor(max_iter=1, early_stopping=False,
                           l1_regularization=50.0).fit(X, y)
    v_plain = np.abs(tree_at(plain, 0).leaf_values).sum()
    v_l1 = np.abs(tree_at(l1, 0).leaf_values).sum()
    assert v_l1 < v_plain
    huge = HistGBDTRegressor(max_iter=3, early_stopping=False,
                             l1_regularization=1e12).fit(X, y)
    np.testing.assert_allclose(huge.predict(X), np.mean(y))


def test_verbose_every_k_rounds(task, capsys):
    X, y, _, _ = task
    HistGBDTRegressor(max_iter=10, verbose=5, early_stopping=False).fit(X[:500], y[:500])
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("]")[0] for line in lines[:-1]] == ["[5/10", "[10/10"]
    assert "train loss: " in lines[0] and "rounds/s" in lines[0] and "left)" in lines[0]
    assert lines[-1].startswith("Stopped after round 10 of 10: max_iter reached.")


def test_custom_objective_on_large_data_and_verbose(capsys):
    # 'auto' early stopping stays off (no loss value to score), verbose still reports.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12_000, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=12_000)
    m = HistGBDTRegressor(loss=lambda yt, r, w: (r - yt, np.ones_like(r)), max_iter=5,
                          verbose=1).fit(X, y)
    assert m.n_iter_ == 5
    out = capsys.readouterr().out
    assert out.count("rounds/s") == 5 and "loss" not in out  # nothing to score
    assert m.evals_result_ == {} and m.best_iteration_ is None
    with pytest.raises(ValueError, match="loss"):
        HistGBDTRegressor(loss=lambda yt, r, w: (r - yt, np.ones_like(r)),
                          early_stopping=True, max_iter=5).fit(X, y)


def test_validation_scored_like_training_rows():
    # Adaptive Huber: the validation loss uses the training rounds' delta.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3))
    y = X[:, 0] + rng.standard_t(2, size=4000)
    X_val, y_val = X[:1000] + 0.01, y[:1000]
    m = HistGBDTRegressor(loss="huber", max_iter=10, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    loss = m._make_loss()
    raw_before_last_tree = list(m._staged_raw_predict(X))[-2]
    loss.gradients(y, raw_before_last_tree, *loss.allocate(len(y)), 1)  # last round's delta_
    val = loss.for_rows(None).loss(y_val, m._raw_predict(X_val))
    np.testing.assert_allclose(m.validation_score_[-1], -val, rtol=1e-9)


def test_goss_leaf_refit_uses_goss_weights(task, monkeypatch):
    # Non-smooth losses re-fit leaves from their rows: GOSS's up-weighted rows
    # must weigh (n - n_top) / n_other there too, as they do in the gradients.
    from hgbt.engine import losses
    X, y, _, _ = task
    seen = []
    original = losses.AbsoluteError.refit_leaves

    def spy(self, y_leaf, raw_leaf, weight, leaves, n_leaves):
        seen.append(weight)
        return original(self, y_leaf, raw_leaf, weight, leaves, n_leaves)

    monkeypatch.setattr(losses.AbsoluteError, "refit_leaves", spy)
    HistGBDTRegressor(loss="absolute_error", data_sample_strategy="goss", max_iter=2,
                      goss_top_rate=0.2, goss_other_rate=0.1, early_stopping=False,
                      random_state=0).fit(X, y)
    weights = np.concatenate(seen)
    factor = (len(y) - int(0.2 * len(y))) / int(0.1 * len(y))
    assert set(np.round(np.unique(weights), 9)) == {1.0, round(factor, 9)}
    assert np.isclose(np.mean(weights == 1.0), 2 / 3, atol=0.01)  # top 20% vs other 10%


@pytest.mark.parametrize("params", [
    dict(data_sample_strategy="goss", colsample_bynode=0.7),
    dict(subsample=0.6, colsample_bytree=0.8, monotonic_cst=[1, 0, 0, 0, 0, 0]),
    dict(categorical_features=[5], max_cat_to_onehot=2),
])
def test_classifier_bit_identical_across_thread_counts(params):
    # Large enough for the parallel paths (histograms, partition, prediction).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 6))
    X[:, 5] = rng.integers(0, 12, size=40_000)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (X[:, 0] + np.sin(3 * np.nan_to_num(X[:, 1])) + (X[:, 5] % 3 == 0)
         + rng.normal(size=40_000) > 0.5).astype(int)
    fit = lambda n: HistGBDTClassifier(max_iter=15, early_stopping=False, random_state=0,
                                       n_threads=n, **params).fit(X, y)
    a, b = fit(1), fit(2)
    assert _same_model(a, b)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


def test_small_input_fast_path_equals_the_validated_path():
    # Small plain arrays skip validation and use the one-call forest kernel;
    # every path must give the same predictions, bit for bit.
    import warnings

    import pandas as pd

    from hgbt.tree.predictor import PACKED_MIN_ROWS as FOREST_MAX_ROWS

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))
    y = X[:, 0] + rng.standard_normal(2000)
    model = HistGBDTRegressor(max_iter=20, early_stopping=False, random_state=0).fit(X, y)
    full = model.predict(X)  # tree by tree (≥ FOREST_MAX_ROWS rows)
    for rows in (slice(0, 1), slice(0, FOREST_MAX_ROWS - 1)):
        np.testing.assert_array_equal(model.predict(X[rows]), full[rows])
        np.testing.assert_array_equal(model.predict(X[rows].astype(np.float32)),
                                      model.predict(X[rows].astype(np.float32).tolist()))
        np.testing.assert_array_equal(model.predict(np.asfortranarray(X[rows])), full[rows])
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:1, :4])  # the fast path still checks the width
    # warm start adds rounds: the cached forest is rebuilt
    model.set_params(warm_start=True, max_iter=25).fit(X, y)
    np.testing.assert_array_equal(model.predict(X[:3]), model.predict(X)[:3])
    # a model fit on a DataFrame keeps checking feature names
    frame = pd.DataFrame(X, columns=list("abcde"))
    named = HistGBDTRegressor(max_iter=5, early_stopping=False).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        named.predict(X[:1])
    assert any("feature names" in str(w.message) for w in caught)


@pytest.mark.parametrize("n_rows", [99, 100])
@pytest.mark.parametrize("classifier", [False, True])
def test_auto_early_stopping_from_100_rows(n_rows, classifier):
    # 'auto' cross-validates the rounds from 100 rows (scikit-learn: no early
    # stopping up to 10,000); below, every round is fitted and nothing is
    # scored. A callback (here a progress bar) does not change the model.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_rows, 3))
    y = X[:, 0] + rng.normal(scale=0.5, size=n_rows)
    y = np.digitize(y, [-0.5, 0.5]) if classifier else y
    cls = HistGBDTClassifier if classifier else HistGBDTRegressor
    model = cls(random_state=0).fit(X, y)
    on = n_rows >= 100
    assert hasattr(model, "cv_results_") == on
    assert (model.n_iter_ < model.max_iter) == on
    assert model.validation_score_.size == 0
    watched = cls(random_state=0).fit(X, y, callbacks=[ProgressBar(file=io.StringIO(),
                                                                   use_tqdm=False)])
    assert watched.n_iter_ == model.n_iter_
    assert all(a.nodes.tobytes() == b.nodes.tobytes()
               for a, b in zip(all_trees(watched), all_trees(model)))


def test_auto_early_stopping_holds_out_from_10000_rows():
    # from AUTO_CV_MAX_ROWS a tenth of the rows is a steady enough hold-out
    from hgbt.estimators.cv_rounds import AUTO_CV_MAX_ROWS
    rng = np.random.default_rng(0)
    for n_rows in (AUTO_CV_MAX_ROWS - 1, AUTO_CV_MAX_ROWS):
        X = rng.normal(size=(n_rows, 3))
        y = X[:, 0] + rng.normal(scale=0.5, size=n_rows)
        model = HistGBDTRegressor(max_iter=30, random_state=0).fit(X, y)
        held_out = n_rows >= AUTO_CV_MAX_ROWS
        assert hasattr(model, "cv_results_") != held_out
        assert (model.validation_score_.size > 0) == held_out


def test_auto_early_stopping_off_where_no_stratified_hold_out():
    # 120 rows of 15 classes (12 held out) and a class of one row: 'auto' fits
    # every round instead of failing in the split; True still reports it
    # (with validation_fraction's hold-out as the early stopping 'auto' makes
    # from 10,000 rows: a class too rare for the 5 folds also goes there)
    rng = np.random.default_rng(0)
    for y in (np.repeat(np.arange(15), 8), np.r_[np.zeros(150), 1]):
        X = rng.normal(size=(y.shape[0], 2))
        model = HistGBDTClassifier(max_iter=5, random_state=0).fit(X, y)
        assert model.validation_score_.size == 0
        assert model.n_iter_ == 5 or hasattr(model, "cv_results_")
        with pytest.raises(ValueError, match="class"):
            HistGBDTClassifier(max_iter=5, early_stopping=True, random_state=0).fit(X, y)
