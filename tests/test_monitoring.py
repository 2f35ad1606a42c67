"""The evaluation history as the estimators record it (hgbt/estimators/monitoring.py):
several metrics on several sets equal to scoring the staged predictions,
best_iteration_, iteration ranges, truncate_at_best, warm starts, input checks."""
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import (accuracy_score, log_loss, mean_absolute_error, r2_score,
                             roc_auc_score)

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from fitted import baseline_prediction, fit_seed


def _max_error(estimator, X, y, sample_weight=None):
    """A callable scorer (higher is better; unweighted)."""
    return -float(np.max(np.abs(estimator.predict(X) - y)))


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(n_samples=1600, n_features=8, noise=20.0, random_state=0)
    return X[:1000], y[:1000], X[1000:1200], y[1000:1200], X[1200:1400], y[1200:1400], \
        X[1400:], y[1400:]


@pytest.fixture(scope="module")
def fitted_regressor(regression):
    X, y, Xv, yv, Xa, ya, Xb, yb = regression
    model = HistGBDTRegressor(max_iter=25, learning_rate=0.2, random_state=0,
                              eval_metric=["r2", "neg_mean_absolute_error", _max_error],
                              early_stopping=True, n_iter_no_change=100)
    wa = np.linspace(0.5, 2.0, len(ya))
    model.fit(X, y, X_val=Xv, y_val=yv, eval_set=[(Xa, ya), (Xb, yb)],
              eval_names=["a", "b"], eval_sample_weight=[wa, None])
    return model, wa


def test_every_metric_on_every_set_equals_scoring_the_staged_predictions(
        regression, fitted_regressor):
    X, y, Xv, yv, Xa, ya, Xb, yb = regression
    model, wa = fitted_regressor
    result = model.evals_result_
    assert list(result) == ["train", "validation", "a", "b"]
    for set_name, (Xs, ys, ws) in {"train": (X, y, None), "validation": (Xv, yv, None),
                                   "a": (Xa, ya, wa), "b": (Xb, yb, None)}.items():
        assert list(result[set_name]) == ["loss", "r2", "neg_mean_absolute_error",
                                          "_max_error"]
        staged = [np.full(len(ys), baseline_prediction(model)[0])]
        staged += list(model.staged_predict(Xs))
        assert all(len(v) == model.n_iter_ + 1 for v in result[set_name].values())
        for i, pred in enumerate(staged):
            expected = {
                "loss": 0.5 * np.average((ys - pred) ** 2, weights=ws),
                "r2": r2_score(ys, pred, sample_weight=ws),
                "neg_mean_absolute_error": -mean_absolute_error(ys, pred, sample_weight=ws),
                "_max_error": -np.max(np.abs(pred - ys)),
            }
            for metric, value in expected.items():
                np.testing.assert_allclose(result[set_name][metric][i], value,
                                           rtol=1e-9, err_msg=f"{set_name} {metric} {i}")


def test_classifier_metrics_on_sets_equal_the_staged_probabilities():
    X, y = make_classification(n_samples=1500, n_classes=3, n_informative=5,
                               random_state=1)
    model = HistGBDTClassifier(max_iter=12, random_state=0, early_stopping=False,
                               eval_metric=["neg_log_loss", "accuracy"])
    model.fit(X[:900], y[:900], eval_set=[(X[900:1200], y[900:1200]),
                                          (X[1200:], y[1200:])])
    assert list(model.evals_result_) == ["train", "valid_0", "valid_1"]
    for name, rows in [("valid_0", slice(900, 1200)), ("valid_1", slice(1200, None))]:
        probas = list(model.staged_predict_proba(X[rows]))
        for i, proba in enumerate(probas, start=1):
            scores = model.evals_result_[name]
            np.testing.assert_allclose(scores["neg_log_loss"][i],
                                       -log_loss(y[rows], proba), rtol=1e-9)
            np.testing.assert_allclose(scores["loss"][i], log_loss(y[rows], proba),
                                       rtol=1e-9)
            assert scores["accuracy"][i] == accuracy_score(y[rows], proba.argmax(1))
    # without early stopping, the first eval set is watched, by the loss
    assert model.best_iteration_ == int(np.argmin(model.evals_result_["valid_0"]["loss"]))
    assert model.train_score_.size == 0


def test_binary_auc_reads_the_positive_class():
    X, y = make_classification(n_samples=800, random_state=2)
    model = HistGBDTClassifier(max_iter=8, random_state=0, scoring="roc_auc",
                               early_stopping=True, n_iter_no_change=50)
    model.fit(X[:600], y[:600], X_val=X[600:], y_val=y[600:])
    decisions = list(model.staged_decision_function(X[600:]))
    for i, decision in enumerate(decisions, start=1):
        assert model.evals_result_["validation"]["roc_auc"][i] == pytest.approx(
            roc_auc_score(y[600:], decision), rel=1e-12)


def test_best_iteration_is_the_argmax_of_the_watched_metric(regression):
    X, y, Xv, yv, Xa, ya, Xb, yb = regression
    model = HistGBDTRegressor(max_iter=60, learning_rate=0.6, random_state=0, scoring="r2",
                              early_stopping=True, early_stopping_set="b",
                              n_iter_no_change=8, max_leaf_nodes=63, min_samples_leaf=2)
    model.fit(X, y, eval_set=[(Xa, ya), (Xb, yb)], eval_names=["a", "b"])
    watched = model.evals_result_["b"]["r2"]
    assert model.best_iteration_ == int(np.argmax(watched))
    assert model.best_score_ == max(watched)
    assert 0 < model.best_iteration_ < model.n_iter_ < 60  # stopped on set b
    np.testing.assert_array_equal(model.validation_score_, watched)
    # 'validation' is not made: the watched set is an eval_set
    assert "validation" not in model.evals_result_
    # the loss is watched by default, the smaller the better
    loss_model = HistGBDTRegressor(max_iter=30, learning_rate=0.6, random_state=0).fit(
        X, y, eval_set=[(Xa, ya)])
    assert loss_model.best_iteration_ == int(np.argmin(
        loss_model.evals_result_["valid_0"]["loss"]))


def test_iteration_range_equals_staged_prediction(regression, fitted_regressor):
    X, *_ = regression
    model, _ = fitted_regressor
    staged = list(model.staged_predict(X))
    for end in (1, 7, model.n_iter_):
        np.testing.assert_allclose(model.predict(X, iteration_range=(0, end)),
                                   staged[end - 1], rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 0)),
                                  baseline_prediction(model)[0])
    # a middle range: the rounds begin..end-1 on top of the baseline
    baseline = baseline_prediction(model)[0]
    np.testing.assert_allclose(model.predict(X, iteration_range=(3, 9)) - baseline,
                               staged[8] - staged[2], rtol=1e-9, atol=1e-9)
    for bad in [(0, model.n_iter_ + 1), (5, 2), (-1, 3), (0.5, 2), 3]:
        with pytest.raises(ValueError, match="iteration_range"):
            model.predict(X, iteration_range=bad)


def test_classifier_iteration_range_on_every_prediction_method():
    X, y = make_classification(n_samples=600, n_classes=3, n_informative=4, random_state=3)
    model = HistGBDTClassifier(max_iter=10, random_state=0).fit(X, y)
    proba = list(model.staged_predict_proba(X))[3]
    decision = list(model.staged_decision_function(X))[3]
    labels = list(model.staged_predict(X))[3]
    np.testing.assert_allclose(model.predict_proba(X, iteration_range=(0, 4)), proba,
                               rtol=1e-12)
    np.testing.assert_allclose(model.decision_function(X, iteration_range=(0, 4)),
                               decision, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 4)), labels)


def test_truncate_at_best_keeps_the_best_rounds(regression):
    X, y, Xv, yv, *_ = regression
    params = dict(max_iter=80, learning_rate=0.7, random_state=0, max_leaf_nodes=63,
                  min_samples_leaf=2, n_iter_no_change=6)
    full = HistGBDTRegressor(**params).fit(X, y, X_val=Xv, y_val=yv)
    cut = HistGBDTRegressor(truncate_at_best=True, **params).fit(X, y, X_val=Xv, y_val=yv)
    assert full.best_iteration_ < full.n_iter_
    assert cut.n_iter_ == cut.best_iteration_ == full.best_iteration_
    np.testing.assert_array_equal(cut.predict(Xv), full.predict(
        Xv, iteration_range=(0, full.best_iteration_)))
    # the history keeps every round grown; the scores of the kept rounds
    assert cut.evals_result_ == full.evals_result_
    assert cut.validation_score_.size == cut.n_iter_ + 1


def test_warm_start_continues_the_history(regression):
    X, y, Xv, yv, Xa, ya, *_ = regression
    params = dict(learning_rate=0.2, random_state=0, eval_metric="r2")
    whole = HistGBDTRegressor(max_iter=20, **params).fit(X, y, eval_set=[(Xa, ya)])
    warm = HistGBDTRegressor(max_iter=8, warm_start=True, **params).fit(
        X, y, eval_set=[(Xa, ya)])
    before = {s: {m: list(v) for m, v in ms.items()} for s, ms in warm.evals_result_.items()}
    warm.set_params(max_iter=20).fit(X, y, eval_set=[(Xa, ya)])
    assert warm.evals_result_ == whole.evals_result_
    assert warm.best_iteration_ == whole.best_iteration_
    # a new set in the warm fit: NaN for the rounds it was not scored
    warm.set_params(max_iter=22).fit(X, y, eval_set=[(Xa, ya), (Xv, yv)])
    new = warm.evals_result_["valid_1"]["r2"]
    assert np.isnan(new[:21]).all() and not np.isnan(new[21:]).any()
    assert before["valid_0"]["r2"] == warm.evals_result_["valid_0"]["r2"][:9]


def test_no_scores_unless_asked(regression):
    X, y, *_ = regression
    model = HistGBDTRegressor(max_iter=5, early_stopping=False).fit(X, y)
    assert model.evals_result_ == {} and model.best_iteration_ is None
    assert model.best_score_ is None and model.train_score_.size == 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(eval_set=[(0, 1)], eval_names=["a", "b"]), "eval_names 2"),
    (dict(eval_names=["a"]), "without eval_set"),
    (dict(eval_set=[(0, 1)], eval_names=["train"]), "other than"),
    (dict(eval_set=[(0, 1, 2)]), r"\(X, y\) pair"),
])
def test_eval_set_arguments_are_checked(regression, kwargs, match):
    X, y, *_ = regression
    model = HistGBDTRegressor(max_iter=2)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, **kwargs)
    assert not hasattr(model, "n_iter_")  # left as it was


def test_early_stopping_set_must_be_a_set_of_the_fit(regression):
    X, y, Xv, yv, *_ = regression
    with pytest.raises(ValueError, match="early_stopping_set='nope'"):
        HistGBDTRegressor(max_iter=2, early_stopping_set="nope").fit(
            X, y, eval_set=[(Xv, yv)])


def test_history_survives_save_and_load(tmp_path, fitted_regressor):
    from hgbt import load_model
    model, _ = fitted_regressor
    fitted = HistGBDTRegressor(max_iter=6, eval_metric="r2", random_state=0)
    X, y = make_regression(n_samples=300, n_features=4, random_state=0)
    fitted.fit(X, y, eval_set=[(X[:50], y[:50])])
    fitted.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.evals_result_ == fitted.evals_result_
    assert loaded.best_iteration_ == fitted.best_iteration_


def test_warm_start_after_truncation_scores_the_new_rounds_in_place(regression):
    X, y, Xv, yv, *_ = regression
    model = HistGBDTRegressor(max_iter=80, learning_rate=0.7, random_state=0,
                              max_leaf_nodes=63, min_samples_leaf=2, n_iter_no_change=6,
                              truncate_at_best=True, eval_metric="r2", warm_start=True)
    model.fit(X, y, X_val=Xv, y_val=yv)
    best = model.n_iter_
    model.set_params(early_stopping=False, truncate_at_best=False, max_iter=best + 3)
    model.fit(X, y, eval_set=[(Xv, yv)])
    r2 = model.evals_result_["valid_0"]["r2"]
    assert len(r2) == model.n_iter_ + 1 == best + 4
    staged = list(model.staged_predict(Xv))
    for i in range(best + 1, best + 4):
        assert r2[i] == pytest.approx(r2_score(yv, staged[i - 1]), rel=1e-9)
    # rounds kept from the first fit: the validation set's scores up to its best
    assert len(model.evals_result_["validation"]["r2"]) == best + 4


def test_a_callable_loss_watches_the_first_recorded_metric(regression):
    X, y, Xv, yv, *_ = regression
    model = HistGBDTRegressor(loss=lambda yt, r, w: (r - yt, np.ones_like(r)),
                              max_iter=8, eval_metric="r2")
    model.fit(X, y, eval_set=[(Xv, yv)])
    assert "loss" not in model.evals_result_["valid_0"]
    assert model.best_iteration_ == int(np.argmax(model.evals_result_["valid_0"]["r2"]))


def test_nan_targets_of_an_eval_set_are_named(regression):
    X, y, Xv, yv, *_ = regression
    bad = yv.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"y of eval_set\[1\] contains NaN"):
        HistGBDTRegressor(max_iter=2).fit(X, y, eval_set=[(Xv, yv), (Xv, bad)])


def test_training_rows_past_the_cap_are_scored_on_the_seeded_subsample():
    # Past MAX_TRAIN_SCORE_ROWS rows, every training metric (the loss too)
    # reads the rows of training_score_rows, so a round's scoring costs the
    # same on 10 thousand rows as on 10 million; a full pass is an eval_set.
    from hgbt.engine.evaluation import MAX_TRAIN_SCORE_ROWS, training_score_rows

    n = MAX_TRAIN_SCORE_ROWS + 2_500
    X, y = make_regression(n_samples=n, n_features=5, noise=10.0, random_state=3)
    w = np.random.default_rng(0).uniform(0.5, 2.0, n)
    model = HistGBDTRegressor(max_iter=6, random_state=0, early_stopping=False,
                              eval_metric=["loss", "r2"])
    model.fit(X, y, sample_weight=w, eval_set=[(X, y)], eval_names=["all"],
              eval_sample_weight=[w])
    rows = training_score_rows(n, fit_seed(model))
    assert rows.size == MAX_TRAIN_SCORE_ROWS and np.all(np.diff(rows) > 0)
    staged = [np.full(n, baseline_prediction(model)[0])] + list(model.staged_predict(X))
    for i, pred in enumerate(staged):
        for name, r in (("train", rows), ("all", slice(None))):
            np.testing.assert_allclose(
                model.evals_result_[name]["loss"][i],
                0.5 * np.average((y[r] - pred[r]) ** 2, weights=w[r]), rtol=1e-12)
            np.testing.assert_allclose(model.evals_result_[name]["r2"][i],
                                       r2_score(y[r], pred[r], sample_weight=w[r]),
                                       rtol=1e-9)
    # the subsample is a real one: its loss is not the full set's
    assert model.evals_result_["train"]["loss"][-1] != model.evals_result_["all"]["loss"][-1]


def test_contributions_interactions_and_leaves_of_an_iteration_range():
    X, y = make_classification(n_samples=600, n_features=5, n_informative=4,
                               n_redundant=0, n_classes=3, random_state=1)
    params = dict(learning_rate=0.3, early_stopping=False, random_state=0)
    model = HistGBDTClassifier(max_iter=10, **params).fit(X, y)
    first4 = HistGBDTClassifier(max_iter=4, **params).fit(X, y)
    # the rounds (0, 4) are the model of 4 rounds: the same values, bit for bit
    np.testing.assert_array_equal(model.predict_contributions(X, iteration_range=(0, 4)),
                                  first4.predict_contributions(X))
    np.testing.assert_array_equal(model.predict_interactions(X[:20], iteration_range=(0, 4)),
                                  first4.predict_interactions(X[:20]))
    for begin, end in [(2, 7), (3, 3), (0, 10)]:
        phi = model.predict_contributions(X, iteration_range=(begin, end))
        np.testing.assert_allclose(phi.sum(axis=-1), model.decision_function(
            X, iteration_range=(begin, end)), rtol=1e-10, atol=1e-10)
        inter = model.predict_interactions(X[:20], iteration_range=(begin, end))
        np.testing.assert_allclose(inter.sum(axis=-1), phi[:20], rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(model.apply(X, iteration_range=(begin, end)),
                                      model.apply(X)[:, begin:end])
    for method in ("predict_contributions", "predict_interactions", "apply"):
        with pytest.raises(ValueError, match="iteration_range"):
            getattr(model, method)(X[:5], iteration_range=(4, 2))
