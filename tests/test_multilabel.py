"""Multi-label classification: a 0/1 indicator y of shape (n, k), a binary
log-loss per label."""
import pickle

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import check_classifier_multioutput

from hgbt import HistGBDTClassifier, load_model, save_model
from hgbt.engine.losses import get_loss
from hgbt.core.row_meta import RowMeta

FAST = dict(max_iter=20, early_stopping=False, random_state=0)


def problem(n=3000, seed=0):
    X, Y = make_multilabel_classification(n_samples=n, n_features=12, n_classes=3,
                                          random_state=seed)
    return X.astype(np.float64), Y


@pytest.mark.parametrize("weighted", [False, True])
def test_each_label_is_the_binary_model_of_that_label_alone(weighted):
    X, Y = problem()
    w = np.random.default_rng(1).uniform(0.5, 2, Y.shape[0]) if weighted else None
    model = HistGBDTClassifier(**FAST).fit(X, Y, sample_weight=w)
    assert model.n_outputs_ == 3 and model.n_trees_per_iteration_ == 3
    assert model.classes_.tolist() == [0, 1]
    proba, labels = model.predict_proba(X), model.predict(X)
    assert proba.shape == labels.shape == (X.shape[0], 3) and labels.dtype.kind == "i"
    np.testing.assert_array_equal(labels, (proba > 0.5).astype(int))
    np.testing.assert_array_equal(model.decision_function(X) > 0, labels == 1)
    for k in range(3):
        alone = HistGBDTClassifier(**FAST).fit(X, Y[:, k], sample_weight=w)
        np.testing.assert_array_equal(proba[:, k], alone.predict_proba(X)[:, 1])
    staged = list(model.staged_predict(X[:5]))
    assert len(staged) == model.n_iter_
    np.testing.assert_array_equal(staged[-1], labels[:5])
    # a refit on one label forgets the labels
    assert not hasattr(HistGBDTClassifier(**FAST).fit(X, Y).fit(X, Y[:, 0]), "n_outputs_")


def test_the_loss_is_each_labels_binary_log_loss():
    rng = np.random.default_rng(0)
    Y, raw, w = rng.integers(0, 2, (60, 3)).astype(float), rng.normal(size=(3, 60)), \
        rng.uniform(size=60)
    loss = get_loss("log_loss", RowMeta(w), n_classes=2, n_outputs=3)
    p = 1 / (1 + np.exp(-raw.T))
    per_row = -(Y * np.log(p) + (1 - Y) * np.log(1 - p)).mean(axis=1)
    assert loss.loss(Y, raw) == pytest.approx(np.average(per_row, weights=w), rel=1e-12)
    rates = np.average(Y, axis=0, weights=w)
    np.testing.assert_allclose(loss.baseline(Y), np.log(rates / (1 - rates)), rtol=1e-12)
    g, h = np.empty((3, 60), np.float32), np.empty((3, 60), np.float32)
    loss.gradients(Y, raw, g, h, 1)
    np.testing.assert_allclose(g, w * (p.T - Y.T), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, w * p.T * (1 - p.T), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss.inverse_link(raw), p, rtol=1e-12)


def test_scikit_learns_multi_output_classifier_check():
    check_classifier_multioutput("HistGBDTClassifier", HistGBDTClassifier(max_iter=5))
    check_classifier_multioutput(
        "HistGBDTClassifier",
        HistGBDTClassifier(max_iter=5, multi_strategy="multi_output_tree"))


def test_vector_leaves_learn_every_label_the_same_for_any_threads():
    X, Y = problem(n=15000)
    X, X_test, Y, Y_test = X[:12000], X[12000:], Y[:12000], Y[12000:]
    fits = [HistGBDTClassifier(max_iter=40, multi_strategy="multi_output_tree",
                               n_threads=t, **{k: v for k, v in FAST.items()
                                               if k != "max_iter"}).fit(X, Y)
            for t in (1, 3)]
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    model = fits[0]
    for round_trees in model.booster_.trees[:3]:  # one tree, a value per label
        assert all(np.array_equal(t.nodes["feature_idx"], round_trees[0].nodes["feature_idx"])
                   for t in round_trees)
    per_label = HistGBDTClassifier(max_iter=40, **{k: v for k, v in FAST.items()
                                                   if k != "max_iter"}).fit(X, Y)
    accuracy = lambda m: (m.predict(X_test) == Y_test).mean(axis=0)
    assert np.all(accuracy(model) > accuracy(per_label) - 0.03)
    assert np.all(accuracy(model) > np.maximum(Y_test.mean(0), 1 - Y_test.mean(0)) + 0.05)


def test_early_stopping_scorers_and_grid_search():
    X, Y = problem(n=4000)
    model = HistGBDTClassifier(max_iter=300, early_stopping=True, n_iter_no_change=5,
                               scoring="f1_micro", random_state=0).fit(X, Y)
    assert model.n_iter_ < 300
    assert model.validation_score_[-1] > 0.5
    loss_history = HistGBDTClassifier(max_iter=300, early_stopping=True, random_state=0,
                                      multi_strategy="multi_output_tree").fit(X, Y)
    assert loss_history.n_iter_ < 300
    search = GridSearchCV(HistGBDTClassifier(**FAST), {"max_leaf_nodes": [7, 15]},
                          scoring="f1_micro", cv=KFold(3)).fit(X, Y)
    assert search.best_estimator_.n_outputs_ == 3


def test_persistence_and_export(tmp_path):
    X, Y = problem()
    model = HistGBDTClassifier(**FAST).fit(X, Y)
    for loaded in (pickle.loads(pickle.dumps(model)),
                   (save_model(model, tmp_path / "m.json"),
                    load_model(tmp_path / "m.json"))[1],
                   (save_model(model.booster_, tmp_path / "b.json"),
                    load_model(tmp_path / "b.json"))[1]):
        assert loaded.n_outputs_ == 3
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    contributions = model.predict_contributions(X[:30])
    assert contributions.shape == (30, 3, X.shape[1] + 1)
    np.testing.assert_allclose(contributions.sum(-1), model.decision_function(X[:30]),
                               rtol=1e-9, atol=1e-9)
    pytest.importorskip("onnx")
    from hgbt.export import to_onnx
    with pytest.raises(ValueError, match="multi-label"):
        to_onnx(model)


def test_treelite_predicts_each_labels_probability():
    treelite = pytest.importorskip("treelite")
    from hgbt.export import to_treelite
    X, Y = problem()
    model = HistGBDTClassifier(**FAST).fit(X, Y)
    out = treelite.gtil.predict(to_treelite(model), X.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out).reshape(X.shape[0], 3), model.predict_proba(X),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("y, params, match", [
    (np.full((50, 2), 2), {}, "0/1 indicator"),
    (np.zeros((50, 2)), {"class_weight": "balanced"}, "class_weight"),
    (np.zeros((50, 2)), {"loss": lambda y, raw, w: (raw - y, np.ones_like(raw))},
     "callable loss"),
])
def test_bad_multilabel_input_gets_a_clear_error(y, params, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    y = y.copy()
    y[::2, 0] = 1 - y[::2, 0] if match != "0/1 indicator" else y[::2, 0]
    with pytest.raises(ValueError, match=match):
        HistGBDTClassifier(max_iter=2, **params).fit(X, y)
    X, Y = problem(n=300)
    model = HistGBDTClassifier(max_iter=2, warm_start=True).fit(X, Y)
    with pytest.raises(ValueError, match="labels"):
        model.set_params(max_iter=3).fit(X, Y[:, :2])


def test_datasets_the_native_api_and_cross_validated_rounds():
    import hgbt
    X, Y = problem(n=900)
    direct = HistGBDTClassifier(**FAST).fit(X, Y)
    from_dataset = HistGBDTClassifier(**FAST).fit(hgbt.Dataset(X, Y))
    np.testing.assert_array_equal(from_dataset.predict_proba(X), direct.predict_proba(X))
    booster = hgbt.train({"loss": "log_loss", "max_iter": 20, "random_state": 0},
                         hgbt.Dataset(X, Y))
    np.testing.assert_allclose(booster.predict(X), direct.predict_proba(X), rtol=1e-12)
    result = hgbt.cv({"loss": "log_loss", "max_iter": 5}, hgbt.Dataset(X, Y), nfold=3)
    assert result["loss-mean"].shape == (6,) and result["loss-mean"][-1] < result[
        "loss-mean"][0]
    # early_stopping='cv': unstratified folds, start scores a column per label
    for strategy in ("one_output_per_tree", "multi_output_tree"):
        model = HistGBDTClassifier(max_iter=20, early_stopping="cv", random_state=0,
                                   multi_strategy=strategy).fit(
            X, Y, init_score=np.zeros(Y.shape))
        assert model.predict(X).shape == Y.shape
    with pytest.raises(ValueError, match="shape"):
        HistGBDTClassifier(max_iter=5, early_stopping="cv").fit(
            X, Y, init_score=np.zeros((X.shape[0], 2)))


def test_a_sparse_indicator_matrix_and_multiclass_with_the_vector_option():
    import scipy.sparse as sp
    X, Y = problem(n=600)
    dense = HistGBDTClassifier(**FAST).fit(X, Y)
    sparse = HistGBDTClassifier(**FAST).fit(X, sp.csr_matrix(Y))
    np.testing.assert_array_equal(sparse.predict_proba(X), dense.predict_proba(X))
    # one class a row: a multiclass round's trees, whatever multi_strategy says
    y = Y @ np.array([1, 2, 4]) % 3
    vector = HistGBDTClassifier(**FAST, multi_strategy="multi_output_tree").fit(X, y)
    np.testing.assert_array_equal(vector.predict_proba(X),
                                  HistGBDTClassifier(**FAST).fit(X, y).predict_proba(X))
