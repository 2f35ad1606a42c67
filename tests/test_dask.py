"""Distributed training (hgbt.dask) on a real LocalCluster: worker processes,
started and stopped here. The models must equal the local estimator's, bit
for bit: same trees (split features, thresholds, values) and predictions."""
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from fitted import baseline_prediction, bin_mapper, has_rounds, rounds

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from hgbt.dask import DaskHistGBDTClassifier, DaskHistGBDTRegressor, WorkerLostError  # noqa: E402

PARAMS = dict(max_iter=8, max_leaf_nodes=15, random_state=0, n_threads=1,
              early_stopping=False)


def _cluster(n_workers):
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0",
                                       silence_logs=50)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def client():
    cluster, client = _cluster(2)
    yield client
    client.close()
    cluster.close()


def regression_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    X[:, 2] = np.exp(X[:, 2])
    y = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.standard_normal(n)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


def classification_data(n=3000, n_classes=2, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    X[:, 4] = rng.integers(0, 12, n)  # a categorical feature (integer codes)
    logits = X[:, :1] * np.arange(n_classes) + np.where(X[:, 4:5] % 3 == 0, 1.0, -1.0) \
        * np.arange(n_classes)[::-1] + rng.standard_normal((n, n_classes))
    y = np.argmax(logits, axis=1)
    X[rng.random(X.shape) < 0.03] = np.nan
    return X, y


def assert_same_model(local, distributed_model):
    assert local.n_iter_ == distributed_model.n_iter_
    np.testing.assert_array_equal(baseline_prediction(local),
                                  baseline_prediction(distributed_model))
    for mapper in ("bin_thresholds_",):
        for a, b in zip(getattr(bin_mapper(local), mapper),
                        getattr(bin_mapper(distributed_model), mapper)):
            np.testing.assert_array_equal(a, b)
    for trees_a, trees_b in zip(rounds(local), rounds(distributed_model)):
        for a, b in zip(trees_a, trees_b):
            assert a.nodes.tobytes() == b.nodes.tobytes()  # features, thresholds, values
            np.testing.assert_array_equal(getattr(a, "cat_bitsets", None),
                                          getattr(b, "cat_bitsets", None))


def chunked(array, chunks):
    return da.from_array(array, chunks=(chunks,) + array.shape[1:])


@pytest.mark.parametrize("chunks", [(1000, 1000, 1000), (1, 0, 2200, 0, 799)])
def test_regression_equals_local(client, chunks):
    X, y = regression_data()
    local = HistGBDTRegressor(**PARAMS).fit(X, y)
    model = DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, chunks), chunked(y, chunks))
    assert_same_model(local, model)
    predictions = model.predict(chunked(X, chunks))
    assert isinstance(predictions, da.Array)  # lazy
    np.testing.assert_array_equal(predictions.compute(), local.predict(X))
    np.testing.assert_array_equal(model.predict(X), local.predict(X))


@pytest.mark.parametrize("tree_learner", ["data", "voting", "feature"])
def test_row_wise_histograms_on_a_cluster(client, tree_learner):
    # every shard forced to the row-wise engine: the local column-wise model
    # (feature-parallel shards build by columns, and say so)
    X, y = regression_data()
    local = HistGBDTRegressor(**PARAMS, histogram_layout="col_wise").fit(X, y)
    model = DaskHistGBDTRegressor(**PARAMS, histogram_layout="row_wise",
                                  tree_learner=tree_learner, top_k=X.shape[1]).fit(
        chunked(X, (1000, 1000, 1000)), chunked(y, (1000, 1000, 1000)))
    assert_same_model(local, model)
    expected = "col_wise" if tree_learner == "feature" else "row_wise"
    assert model.histogram_layout_ == expected
    assert set(model.telemetry_["histogram_layouts"]) == {expected}


def test_binary_with_categorical_weights_and_class_weight(client):
    X, y = classification_data()
    w = np.random.default_rng(2).uniform(0.2, 3.0, X.shape[0])
    params = dict(PARAMS, categorical_features=[4], class_weight="balanced")
    local = HistGBDTClassifier(**params).fit(X, y, sample_weight=w)
    chunks = (700, 1300, 1000)
    model = DaskHistGBDTClassifier(**params).fit(chunked(X, chunks), chunked(y, chunks),
                                                 sample_weight=chunked(w, chunks))
    assert_same_model(local, model)
    np.testing.assert_array_equal(model.classes_, local.classes_)
    np.testing.assert_array_equal(model.categorical_categories_[4],
                                  local.categorical_categories_[4])
    np.testing.assert_array_equal(model.predict_proba(chunked(X, chunks)).compute(),
                                  local.predict_proba(X))


def test_multiclass_dataframe_with_category_dtype(client):
    X, y = classification_data(n_classes=4)
    labels = np.array(["ant", "bee", "cat", "dog"])[y]
    frame = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    frame["kind"] = pd.Categorical.from_codes(
        np.nan_to_num(X[:, 4], nan=-1).astype(int),
        categories=[f"k{i}" for i in range(12)])
    # column sampling: each class's tree draws its own masks, whether the
    # trees grow one after another (Dask) or side by side (local, 2 threads)
    params = dict(PARAMS, colsample_bytree=0.8, colsample_bynode=0.7)
    local = HistGBDTClassifier(**dict(params, n_threads=2)).fit(frame, labels)
    dframe = dd.from_pandas(frame, npartitions=3)
    dlabels = dd.from_pandas(pd.Series(labels), npartitions=3)
    model = DaskHistGBDTClassifier(**params).fit(dframe, dlabels)
    assert_same_model(local, model)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d", "kind"]
    np.testing.assert_array_equal(model.predict(dframe).compute(), local.predict(frame))


def test_early_stopping_on_a_dask_validation_set(client):
    X, y = regression_data(4000)
    X_val, y_val = regression_data(1500, seed=5)
    params = dict(PARAMS, max_iter=200, early_stopping=True, n_iter_no_change=3,
                  learning_rate=0.5)
    local = HistGBDTRegressor(**params).fit(X, y, X_val=X_val, y_val=y_val)
    assert local.n_iter_ < 200  # it did stop early
    model = DaskHistGBDTRegressor(**params).fit(
        chunked(X, 1500), chunked(y, 1500), X_val=chunked(X_val, 400),
        y_val=chunked(y_val, 400))
    assert_same_model(local, model)
    np.testing.assert_array_equal(model.validation_score_, local.validation_score_)
    np.testing.assert_array_equal(model.train_score_, local.train_score_)
    # the history, best round and callbacks as the local fit's
    assert model.evals_result_ == local.evals_result_
    assert list(model.evals_result_) == ["train", "validation"]
    assert model.best_iteration_ == local.best_iteration_ < model.n_iter_


@pytest.mark.parametrize("loss", ["squared_error", "poisson"])
def test_auto_tree_size_compares_both_sizes_on_a_cluster(client, loss):
    # max_leaf_nodes='auto' (the default): the first size runs to max_iter, so
    # the rounds start over with the second on every shard; the size kept,
    # its trees and both scores are the local fit's
    (X, y), (X_val, y_val) = regression_data(3000), regression_data(1000, seed=5)
    if loss == "poisson":
        y, y_val = np.exp(y / 4), np.exp(y_val / 4)
    params = dict(max_iter=5, n_iter_no_change=50, random_state=0, n_threads=1, loss=loss)
    local = HistGBDTRegressor(**params).fit(X, y, X_val=X_val, y_val=y_val)
    assert len(local.tree_size_scores_) == 2
    model = DaskHistGBDTRegressor(**params).fit(
        chunked(X, 1000), chunked(y, 1000), X_val=chunked(X_val, 500),
        y_val=chunked(y_val, 500))
    assert_same_model(local, model)
    assert model.tree_size_scores_ == local.tree_size_scores_
    assert model.evals_result_ == local.evals_result_
    assert model.max_leaf_nodes_ == local.max_leaf_nodes_


def test_training_loss_past_the_cap_on_the_local_fits_subsample(client):
    # More training rows than evaluation.MAX_TRAIN_SCORE_ROWS: the shards score
    # the local fit's seeded subsample, found across uneven partitions.
    X, y = regression_data(13_000)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    params = dict(PARAMS, max_iter=6, early_stopping=True, validation_fraction=None,
                  n_iter_no_change=50)
    local = HistGBDTRegressor(**params).fit(X, y, sample_weight=w)
    chunks = (3000, 6000, 4000)
    model = DaskHistGBDTRegressor(**params).fit(chunked(X, chunks), chunked(y, chunks),
                                                sample_weight=chunked(w, chunks))
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_
    np.testing.assert_array_equal(model.train_score_, local.train_score_)


def test_callbacks_and_truncation_on_a_cluster(client):
    X, y = regression_data(3000)
    X_val, y_val = regression_data(1000, seed=5)
    params = dict(PARAMS, max_iter=200, early_stopping=True, n_iter_no_change=3,
                  learning_rate=0.5, truncate_at_best=True)
    seen = []

    class Stop:
        def after_round(self, iteration, history, estimator):
            seen.append(history.scores()[-1])
            return "stop" if iteration == 5 else None

    model = DaskHistGBDTRegressor(**params).fit(
        chunked(X, 1000), chunked(y, 1000), X_val=chunked(X_val, 500),
        y_val=chunked(y_val, 500), callbacks=[Stop()])
    local = HistGBDTRegressor(**params).fit(X, y, X_val=X_val, y_val=y_val,
                                            callbacks=[Stop()])
    assert seen[:6] == seen[6:] == local.evals_result_["validation"]["loss"][1:7]
    assert model.n_iter_ == local.n_iter_ == local.best_iteration_ <= 6
    assert_same_model(local, model)


def test_scorers_and_eval_metrics_on_a_cluster(client):
    # Scorers run on the driver on the scored rows' raw predictions, gathered
    # each round in the local fit's row order (the training rows' subsample
    # past 10,000 rows, uneven partitions): the same scores and the same
    # early-stopping decisions as the local fit
    X, y = classification_data(13_000, n_classes=2)
    X_val, y_val = classification_data(1500, n_classes=2, seed=7)
    y, y_val = np.array(["no", "yes"])[y], np.array(["no", "yes"])[y_val]
    params = dict(PARAMS, max_iter=60, early_stopping=True, n_iter_no_change=4,
                  scoring="roc_auc", eval_metric=["accuracy", "neg_log_loss", "loss"],
                  class_weight="balanced", learning_rate=0.3)
    model = DaskHistGBDTClassifier(**params).fit(
        da.from_array(X, chunks=(3100, 5)), da.from_array(y, chunks=3100),
        X_val=da.from_array(X_val, chunks=(700, 5)), y_val=da.from_array(y_val, chunks=700))
    local = HistGBDTClassifier(**params).fit(X, y, X_val=X_val, y_val=y_val)
    assert model.evals_result_ == local.evals_result_
    assert set(model.evals_result_["validation"]) == {"roc_auc", "accuracy",
                                                      "neg_log_loss", "loss"}
    assert model.n_iter_ == local.n_iter_ < 60  # stopped early, at the same round
    assert_same_model(local, model)
    # a regressor's default scorer, without validation rows: the training rows
    Xr, yr = regression_data(3000)
    params = dict(PARAMS, eval_metric="r2", max_iter=5)
    model = DaskHistGBDTRegressor(**params).fit(chunked(Xr, 1000), chunked(yr, 1000))
    local = HistGBDTRegressor(**params).fit(Xr, yr)
    assert model.evals_result_ == local.evals_result_ and "r2" in local.evals_result_["train"]


@pytest.mark.parametrize("params", [dict(subsample=0.5),
                                    dict(subsample=0.3, colsample_bynode=0.6),
                                    dict(data_sample_strategy="goss"),
                                    dict(data_sample_strategy="goss", goss_top_rate=0.3,
                                         goss_other_rate=0.2, loss="poisson"),
                                    dict(use_quantized_grad=True),
                                    dict(use_quantized_grad=True, subsample=0.6,
                                         loss="poisson")])
def test_row_sampling_on_a_cluster_is_the_local_sampling(client, params):
    # Each shard draws for its rows by their global index (the bags, the
    # quantized gradients' rounding), GOSS's top rows selected over the ring,
    # the quantization grid from every shard's gradients: the local model,
    # uneven partitions and all
    X, y = regression_data(3000)
    if params.get("loss") == "poisson":
        y = np.exp(y / 4)
    params = dict(PARAMS, **params)
    model = DaskHistGBDTRegressor(**params).fit(chunked(X, 700), chunked(y, 700))
    local = HistGBDTRegressor(**params).fit(X, y)
    assert_same_model(local, model)


def _tanh_loss(y, raw, sample_weight):  # a custom loss: pseudo-Huber's derivatives
    return np.tanh(raw - y), 1.0 / np.cosh(raw - y) ** 2


@pytest.mark.parametrize("params", [dict(loss="absolute_error"),
                                    dict(loss="quantile", quantile=0.8,
                                         data_sample_strategy="goss"),
                                    dict(loss="huber", subsample=0.7),
                                    dict(loss="huber", huber_delta=0.5),
                                    dict(loss=_tanh_loss)])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_loss_on_a_cluster_is_the_local_loss(client, params, weighted):
    # baselines, leaf quantiles and Huber's delta selected over the ring (a
    # radix selection of exact integer weight sums); a custom loss's baseline
    # from exact gradient sums: the local model for any split of the rows
    X, y = regression_data(3000)
    w = np.random.default_rng(4).uniform(0.1, 4.0, y.size) if weighted else None
    params = dict(PARAMS, **params)
    chunks = (1, 0, 1900, 1099)
    model = DaskHistGBDTRegressor(**params).fit(
        chunked(X, chunks), chunked(y, chunks),
        sample_weight=None if w is None else chunked(w, chunks))
    local = HistGBDTRegressor(**params).fit(X, y, sample_weight=w)
    assert_same_model(local, model)


@pytest.mark.parametrize("params", [dict(),
                                    dict(loss="quantile", quantile=0.3, subsample=0.6),
                                    dict(data_sample_strategy="goss", loss="huber"),
                                    dict(loss="huber", early_stopping=True,
                                         validation_fraction=None, n_iter_no_change=50),
                                    dict(use_quantized_grad=True, colsample_bynode=0.7)])
def test_feature_parallel_is_the_local_fit(client, params):
    # every worker holds all rows and searches its block of the features; the
    # workers elect each split: no histogram travels, the local model
    X, y = regression_data(3000)
    w = np.random.default_rng(5).uniform(0.5, 2.0, y.size)
    params = dict(PARAMS, **params)
    chunks = (1, 0, 1900, 1099)
    model = DaskHistGBDTRegressor(**params, tree_learner="feature").fit(
        chunked(X, chunks), chunked(y, chunks), sample_weight=chunked(w, chunks))
    local = HistGBDTRegressor(**params).fit(X, y, sample_weight=w)
    assert_same_model(local, model)
    assert model.evals_result_ == getattr(local, "evals_result_", model.evals_result_)
    assert model.telemetry_["histograms_per_tree"] == [0] * len(
        model.telemetry_["histograms_per_tree"])


@pytest.mark.parametrize("tree_learner", ["data", "feature"])
def test_huber_scored_before_its_first_round_on_one_worker(client, tree_learner):
    # every partition on one worker (one shard, no ring): its empty validation
    # set is scored with Huber's delta not yet fitted, as the training rows
    a, _ = sorted(client.scheduler_info()["workers"])
    X, y = regression_data(1500)
    dX, dy = client.persist([chunked(X, 500), chunked(y, 500)], workers=[a])
    params = dict(PARAMS, loss="huber", early_stopping=True, validation_fraction=None,
                  n_iter_no_change=50)
    model = DaskHistGBDTRegressor(**params, tree_learner=tree_learner).fit(dX, dy)
    local = HistGBDTRegressor(**params).fit(X, y)
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_


def test_feature_parallel_classifier_with_validation_and_scorers(client):
    X, y = classification_data(n_classes=3)
    params = dict(PARAMS, categorical_features=[4], max_iter=20, early_stopping=True,
                  scoring="accuracy", n_iter_no_change=2)
    model = DaskHistGBDTClassifier(**params, tree_learner="feature").fit(
        chunked(X[:2400], 700), chunked(y[:2400], 700),
        X_val=chunked(X[2400:], 300), y_val=chunked(y[2400:], 300))
    local = HistGBDTClassifier(**params).fit(X[:2400], y[:2400], X_val=X[2400:],
                                              y_val=y[2400:])
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_


@pytest.mark.parametrize("weighted", [False, True])
def test_a_worker_without_training_rows(client, weighted):
    # Training rows all on one worker, validation rows on the other: the second
    # shard has no training rows and adds empty histograms (weighted: an empty
    # array of weights, as every shard's are alike).
    # (with a categorical feature: the second shard has no codes to count)
    a, b = sorted(client.scheduler_info()["workers"])
    X, y = regression_data(2000)
    X_val, y_val = regression_data(500, seed=3)
    for data in (X, X_val):
        data[:, 5] = np.arange(data.shape[0]) % 300  # pooled: codes up to 299
    rng = np.random.default_rng(4)
    w, w_val = (rng.uniform(0.5, 2, 2000), rng.uniform(0.5, 2, 500)) if weighted else (None,
                                                                                        None)
    dX, dy = client.persist([chunked(X, 500), chunked(y, 500)], workers=[a])
    dXv, dyv = client.persist([chunked(X_val, 250), chunked(y_val, 250)], workers=[b])
    dw, dwv = ((client.persist(chunked(w, 500), workers=[a]),
                client.persist(chunked(w_val, 250), workers=[b])) if weighted else (None, None))
    params = dict(PARAMS, early_stopping=True, n_iter_no_change=50, categorical_features=[5])
    model = DaskHistGBDTRegressor(**params).fit(dX, dy, dw, X_val=dXv, y_val=dyv,
                                                sample_weight_val=dwv)
    local = HistGBDTRegressor(**params).fit(X, y, w, X_val=X_val, y_val=y_val,
                                            sample_weight_val=w_val)
    assert_same_model(local, model)
    np.testing.assert_array_equal(model.validation_score_, local.validation_score_)


def histogram_traffic(model, n_features):
    """Per tree: the histogram bytes all workers sent together, as the ring
    moves them, and what they sent in all (the difference: the trees' agreed
    gradient grids and the elected splits, a few hundred bytes per node)."""
    t = model.telemetry_
    p = t["n_workers"]
    size = n_features * (bin_mapper(model).missing_bin + 1) * 20  # one histogram
    nodes = np.array(t["histograms_per_tree"])
    # the root all-reduced (2 (p - 1) histograms in all), every other node
    # reduce-scattered over blocks of features (p - 1 histograms in all)
    expected = (2 * (p - 1) + (nodes - 1) * (p - 1)) * size
    # an election: each of p workers sends p - 1 split records (< 200 bytes)
    # for each of the two children of a split; the grid: two small all-gathers
    small = nodes * p * (p - 1) * 200 + p * (p - 1) * 1024
    return expected, np.sum(t["bytes_sent_per_tree"], axis=0), small, nodes


def test_histogram_traffic_does_not_grow_with_rows(client):
    # The workers sum each node's histograms among themselves: each sends
    # (p - 1) / p histograms per node, whatever the rows; the driver gets
    # one call per round, nothing per node
    per_node = []
    for n in (2000, 20000):
        X, y = regression_data(n)
        model = DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, n // 4), chunked(y, n // 4))
        t = model.telemetry_
        assert t["n_workers"] == 2
        assert len(t["histograms_per_tree"]) == model.n_iter_
        expected, sent, small, nodes = histogram_traffic(model, X.shape[1])
        assert np.all((sent > expected) & (sent < expected + small))
        np.testing.assert_array_equal(t["bytes_sent_per_tree"][0], t["bytes_received_per_tree"][1])
        per_node.append(sent / nodes)
        assert t["calls"] == model.n_iter_  # one per round (no scores here)
        assert t["compute_seconds"] > 0 and t["communication_seconds"] > 0
    # the same per node at 10 times the rows
    np.testing.assert_allclose(np.mean(per_node[0]), np.mean(per_node[1]), rtol=0.05)


@pytest.mark.parametrize("n_classes, tree_learner", [(None, "data"), (3, "data"),
                                                    (3, "feature")])
def test_warm_start_on_a_cluster_continues_as_one_fit(client, n_classes, tree_learner):
    # 4 rounds, then 4 more by warm start (the shards start from the model's
    # predictions on their bins, the model's bin mapper and baseline kept):
    # the 8-round local fit, history included
    if n_classes is None:
        X, y = regression_data(3000)
        X_val, y_val = regression_data(800, seed=4)
        Dask, Local = DaskHistGBDTRegressor, HistGBDTRegressor
    else:
        X, y = classification_data(3000, n_classes=n_classes)
        X_val, y_val = classification_data(800, n_classes=n_classes, seed=4)
        Dask, Local = DaskHistGBDTClassifier, HistGBDTClassifier
    params = dict(PARAMS, max_iter=4, early_stopping=True, n_iter_no_change=50,
                  max_leaf_nodes=15, subsample=0.8, eval_metric=["loss"])
    data = dict(X_val=chunked(X_val, 300), y_val=chunked(y_val, 300))
    model = Dask(**params, warm_start=True, tree_learner=tree_learner).fit(
        chunked(X, 700), chunked(y, 700), **data)
    model.set_params(max_iter=8)
    model.fit(chunked(X, 1100), chunked(y, 1100), **data)  # other partitions
    local = Local(**dict(params, max_iter=8)).fit(X, y, X_val=X_val, y_val=y_val)
    assert model.n_iter_ == local.n_iter_ == 8
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_
    with pytest.raises(ValueError, match="max_iter=2 must be >= n_iter_=8"):
        model.set_params(max_iter=2).fit(chunked(X, 1100), chunked(y, 1100), **data)
    assert model.n_iter_ == 8  # left as it was


def test_to_local_and_pickle(client):
    X, y = classification_data()
    model = DaskHistGBDTClassifier(**PARAMS).fit(chunked(X, 1000), chunked(y, 1000))
    local = model.to_local()
    assert type(local) is HistGBDTClassifier
    np.testing.assert_array_equal(local.predict_proba(X), model.predict_proba(X))
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    assert restored.get_params()["timeout"] == model.timeout


@pytest.mark.parametrize("params, message", [
    (dict(early_stopping=True), "X_val"),
    (dict(early_stopping="cv"), "early_stopping='cv' is not supported"),
])
def test_unsupported_settings_raise(client, params, message):
    X, y = regression_data(500)
    with pytest.raises(ValueError, match=message):
        DaskHistGBDTRegressor(**{**PARAMS, **params}).fit(chunked(X, 250), chunked(y, 250))


def test_voting_parallel_approximates_the_local_fit(client):
    # 2 * top_k >= the features: every histogram summed, the local model;
    # top_k=2 of 20 features: 4 summed per node, less traffic, near the local
    # fit's accuracy
    def with_noise(X, seed):  # 14 uninformative features beside the 6
        return np.hstack([X, np.random.default_rng(seed).standard_normal((X.shape[0], 14))])

    X, y = regression_data(3000)
    X = with_noise(X, 0)
    workers = sorted(client.scheduler_info()["workers"])

    def placed(array):  # rows 0..1799 on one worker, the rest on the other
        halves = [array[:1800], array[1800:]]
        return da.concatenate([da.from_delayed(client.scatter(h, workers=[w], hash=False),
                                               shape=h.shape, dtype=h.dtype)
                               for h, w in zip(halves, workers)])

    params = dict(PARAMS, max_iter=20)
    local = HistGBDTRegressor(**params).fit(X, y)
    exact = DaskHistGBDTRegressor(**params, tree_learner="voting", top_k=10).fit(
        placed(X), placed(y))
    assert_same_model(local, exact)
    data = DaskHistGBDTRegressor(**params).fit(placed(X), placed(y))
    voting = DaskHistGBDTRegressor(**params, tree_learner="voting", top_k=2).fit(
        placed(X), placed(y))
    assert voting.telemetry_["n_workers"] == data.telemetry_["n_workers"] == 2
    X_test, y_test = regression_data(2000, seed=9)
    X_test = with_noise(X_test, 1)
    assert voting.score(X_test, y_test) > local.score(X_test, y_test) - 0.05
    # 4 of 20 features' histograms per searched node, both children searched
    sent = [np.sum(m.telemetry_["bytes_sent_per_tree"]) for m in (voting, data)]
    assert sent[0] < 0.6 * sent[1]


def test_feature_parallel_needs_a_feature_per_worker(client):
    X, y = regression_data(500)
    a, b = sorted(client.scheduler_info()["workers"])
    # one feature, rows on both workers
    parts = [client.persist([chunked(X[rows, :1], 250), chunked(y[rows], 250)],
                            workers=[w])
             for rows, w in ((slice(0, 250), a), (slice(250, 500), b))]
    dX = da.concatenate([p[0] for p in parts])
    dy = da.concatenate([p[1] for p in parts])
    with pytest.raises(ValueError, match="at most one worker per feature"):
        DaskHistGBDTRegressor(**PARAMS, tree_learner="feature").fit(dX, dy)
    with pytest.raises(ValueError, match="tree_learner"):
        DaskHistGBDTRegressor(**PARAMS, tree_learner="voting!").fit(
            chunked(X, 250), chunked(y, 250))


def test_bad_input_raises(client):
    X, y = regression_data(500)
    with pytest.raises(TypeError, match="dask array"):
        DaskHistGBDTRegressor(**PARAMS).fit(X, y)
    with pytest.raises(ValueError, match="y has 400 rows but X has 500"):
        DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, 250), chunked(y[:400], 100))
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=2)
    with pytest.raises(ValueError, match="partitioned alike"):
        DaskHistGBDTRegressor(**PARAMS).fit(frame, dd.from_pandas(pd.Series(y), 3))
    # y chunked differently from X is re-chunked to X's row blocks
    model = DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, 250), chunked(y, 100))
    np.testing.assert_array_equal(model.predict(X),
                                  HistGBDTRegressor(**PARAMS).fit(X, y).predict(X))
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, 250), chunked(y_nan, 250))
    with pytest.raises(ValueError, match="one class"):
        DaskHistGBDTClassifier(**PARAMS).fit(chunked(X, 250), chunked(np.ones(500), 250))


def test_a_lost_worker_ends_in_a_clear_error():
    cluster, client = _cluster(2)
    try:
        X, y = regression_data(20000)
        model = DaskHistGBDTRegressor(**{**PARAMS, "max_iter": 10_000}, timeout=8)
        pids = client.run(os.getpid)
        victim = sorted(pids)[1]

        def kill():
            time.sleep(4.0)  # mid-fit: the set-up takes about 1 s
            os.kill(pids[victim], signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()
        start = time.perf_counter()
        with pytest.raises(WorkerLostError, match="no model was fitted"):
            model.fit(chunked(X, 5000), chunked(y, 5000))
        assert time.perf_counter() - start < 4.0 + 8 + 10
        assert not has_rounds(model)  # no partial model
    finally:
        client.close()
        cluster.close()


def _die_at(point, after):
    """On the worker it runs on: make the process exit (or hang: 'hang') at
    ``point`` once it has been reached ``after`` times."""
    from hgbt.dask import _ring, _shard

    calls = {"n": 0}

    def reached():
        calls["n"] += 1
        return calls["n"] > after

    if point == "binning":  # the shard bins its rows
        original = _shard.Shard.start.__wrapped__

        def start(self, *args):
            if reached():
                os._exit(1)
            return original(self, *args)
        _shard.Shard.start = _shard._timed(start)
    elif point in ("mid-tree", "hang"):  # a node below the root of some tree
        original = _ring.RingCollective.reduce_scatter_histogram

        def reduce_scatter(self, histogram):
            if reached():
                if point == "hang":
                    time.sleep(3600)
                os._exit(1)
            return original(self, histogram)
        _ring.RingCollective.reduce_scatter_histogram = reduce_scatter
    elif point == "mid-reduction":  # half of a histogram's bytes sent
        original = _ring.RingCollective._exchange

        def exchange(self, out, into):
            if len(out) > 1000 and reached():
                self._next.setblocking(True)
                self._next.sendall(out[:len(out) // 2])
                os._exit(1)
            return original(self, out, into)
        _ring.RingCollective._exchange = exchange


@pytest.mark.parametrize("point, after", [("binning", 0), ("mid-tree", 40),
                                          ("mid-reduction", 25), ("hang", 40)])
def test_a_worker_lost_at_any_point_ends_the_fit_clearly(point, after):
    # A worker dies (or hangs) at a chosen point: the fit ends with
    # WorkerLostError, at once when the worker dies (its ring neighbours fail
    # on their closed connection), within the timeout when it hangs, and
    # the estimator is left as it was
    cluster, client = _cluster(2)
    try:
        X, y = regression_data(6000)
        timeout = 6.0 if point == "hang" else 60.0
        model = DaskHistGBDTRegressor(**{**PARAMS, "max_iter": 50}, timeout=timeout)
        dX, dy = client.persist([chunked(X, 1500), chunked(y, 1500)])
        distributed.wait([dX, dy])
        victim = sorted(client.scheduler_info()["workers"])[1]
        client.run(_die_at, point, after, workers=[victim])
        start = time.perf_counter()
        with pytest.raises(WorkerLostError, match="no model was fitted"):
            model.fit(dX, dy)
        # a death is noticed long before the timeout; a hang ends at it
        # (a hang: the neighbour waits the timeout, then the driver as long)
        assert time.perf_counter() - start < (2 * timeout + 15 if point == "hang" else 30)
        assert not has_rounds(model) and not hasattr(model, "telemetry_")
    finally:
        client.close()
        cluster.close()


def test_a_shards_own_error_comes_before_the_ring_errors_it_causes():
    # Shard 2 fails (say, out of memory) and closes its ring, so shards 0 and
    # 1 fail with RingError: the user sees shard 2's error; an error about the
    # data comes first of all
    from hgbt.dask._ring import RingError
    from hgbt.dask._training import ShardGroup

    class Answer:
        def __init__(self, value):
            self.value = value

        def result(self, timeout=None):
            if isinstance(self.value, BaseException):
                raise self.value
            return self.value, 0.0

    class Actor:
        def __init__(self, value):
            self.value = value

        def grow_round(self, *args):
            return Answer(self.value)

    ring = RingError("the previous worker of rank 1 closed its connection")
    group = ShardGroup([Actor(ring), Actor(ring), Actor(MemoryError("no memory"))], 5.0)
    with pytest.raises(WorkerLostError, match="MemoryError: no memory"):
        group.call("grow_round", patient=True)
    group = ShardGroup([Actor(ring), Actor(MemoryError("x")), Actor(ValueError("bad y"))],
                       5.0)
    with pytest.raises(ValueError, match="bad y"):
        group.call("grow_round")
    assert ShardGroup([Actor(1), Actor(2)], 5.0).call("grow_round", patient=True) == [1, 2]


def test_one_worker_is_the_local_fit():
    # A single shard: no ring (the trivial collective), the same model
    cluster, client = _cluster(1)
    try:
        X, y = classification_data(2000, n_classes=2)
        params = dict(PARAMS, categorical_features=[4], subsample=0.8,
                      data_sample_strategy="goss", use_quantized_grad=True)
        model = DaskHistGBDTClassifier(**params).fit(chunked(X, 600), chunked(y, 600))
        assert model.telemetry_["n_workers"] == 1
        assert sum(model.telemetry_["bytes_sent_per_tree"][0]) == 0
        assert_same_model(HistGBDTClassifier(**params).fit(X, y), model)
    finally:
        client.close()
        cluster.close()


@pytest.mark.parametrize("tree_learner", ["data", "feature"])
def test_four_workers_with_partitions_placed_on_each(tree_learner):
    cluster, client = _cluster(4)
    try:
        workers = sorted(client.scheduler_info()["workers"])
        X, y = classification_data(2400, n_classes=3)
        bounds = [0, 150, 900, 901, 1700, 2400]  # uneven partitions, one of one row

        def placed(array):
            blocks = []
            for i in range(len(bounds) - 1):
                part = array[bounds[i]:bounds[i + 1]]
                future = client.scatter(part, workers=[workers[i % 4]])
                blocks.append(da.from_delayed(future, shape=part.shape, dtype=part.dtype))
            return da.concatenate(blocks)

        params = dict(PARAMS, categorical_features=[4], max_iter=3, subsample=0.7,
                      use_quantized_grad=True)
        model = DaskHistGBDTClassifier(**params, tree_learner=tree_learner).fit(
            placed(X), placed(y))
        t = model.telemetry_
        assert t["n_workers"] == 4
        if tree_learner == "data":
            expected, sent, small, _ = histogram_traffic(model, X.shape[1])
            assert np.all((sent > expected) & (sent < expected + small))
        local = HistGBDTClassifier(**params).fit(X, y)
        assert_same_model(local, model)
    finally:
        client.close()
        cluster.close()


def test_eight_workers_reduce_in_log_steps():
    # from 8 workers the shards reduce by recursive halving and doubling
    # (hgbt/dask/_halving.py), not around a ring: the same model
    cluster, client = _cluster(8)
    try:
        workers = sorted(client.scheduler_info()["workers"])
        X, y = classification_data(1600, n_classes=2)

        def placed(array):  # a partition on each worker
            blocks = [da.from_delayed(client.scatter(part, workers=[worker]),
                                      shape=part.shape, dtype=part.dtype)
                      for part, worker in zip(np.array_split(array, 8), workers)]
            return da.concatenate(blocks)

        params = dict(PARAMS, categorical_features=[4], max_iter=3)
        model = DaskHistGBDTClassifier(**params).fit(placed(X), placed(y))
        assert model.telemetry_["n_workers"] == 8
        assert_same_model(HistGBDTClassifier(**params).fit(X, y), model)
    finally:
        client.close()
        cluster.close()


def test_datetime_column_as_seconds_like_a_local_fit(client):
    X, y = regression_data()
    frame = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    frame["t"] = pd.to_datetime(2e9 * X[:, 4], unit="s")
    local = HistGBDTRegressor(**PARAMS).fit(frame, y)
    model = DaskHistGBDTRegressor(**PARAMS).fit(dd.from_pandas(frame, npartitions=3),
                                                dd.from_pandas(pd.Series(y), npartitions=3))
    assert_same_model(local, model)


def test_sparse_chunks_fit_the_local_sparse_model(client):
    # scipy.sparse row blocks: the binning sample is gathered as CSR, each
    # shard writes its rows' bins out; the model of the local fit on the
    # whole CSR matrix (which bundles and stores columns sparsely)
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(5)
    n = 3000
    dense = np.where(rng.random((n, 12)) < 0.15, rng.standard_normal((n, 12)), 0.0)
    dense[:, 11] = rng.integers(0, 5, n) * (rng.random(n) < 0.3)  # categorical, mostly 0
    y = dense[:, 0] * 2 + dense[:, 1] - (dense[:, 11] == 3) + 0.1 * rng.standard_normal(n)
    X = sparse.csr_matrix(dense)
    blocks = [X[a:a + 800] for a in range(0, n, 800)]
    dX = da.concatenate([da.from_delayed(distributed.client.default_client().scatter(b),
                                         shape=b.shape, dtype=b.dtype,
                                         meta=sparse.csr_matrix((0, 12)))
                         for b in blocks])
    params = dict(PARAMS, categorical_features=[11], subsample=0.7, early_stopping=True,
                  n_iter_no_change=50)
    val = slice(0, 600)  # sparse validation rows too
    dXv = da.from_delayed(distributed.client.default_client().scatter(X[val]),
                          shape=X[val].shape, dtype=X.dtype, meta=sparse.csr_matrix((0, 12)))
    model = DaskHistGBDTRegressor(**params).fit(dX, chunked(y, 800), X_val=dXv,
                                                y_val=chunked(y[val], 600))
    local = HistGBDTRegressor(**params).fit(X, y, X_val=X[val], y_val=y[val])
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_
    np.testing.assert_array_equal(model.predict(X), local.predict(X))


def test_string_columns_take_the_local_fits_categories(client):
    # String columns of a dask DataFrame: their sorted distinct values become
    # the categories (one pass), as a local fit on the pandas frame takes
    # them; X_val's unseen values are missing, as locally
    rng = np.random.default_rng(3)
    n = 3000
    X, y = regression_data(n)
    frame = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    cities = np.array(["Oslo", "Lima", "Pune", "Bonn", "Kyiv", "Doha"])
    frame["city"] = cities[rng.integers(0, 6, n)]
    frame.loc[rng.random(n) < 0.05, "city"] = None
    y = y + np.where(frame["city"].isin(["Lima", "Doha"]), 2.0, 0.0)
    val = frame.iloc[:500].copy()
    val.loc[val.index[:20], "city"] = "Rome"  # never seen in training
    y_val = y[:500]
    params = dict(PARAMS, early_stopping=True, n_iter_no_change=50)
    model = DaskHistGBDTRegressor(**params).fit(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=3),
        X_val=dd.from_pandas(val, npartitions=2),
        y_val=dd.from_pandas(pd.Series(y_val), npartitions=2))
    local = HistGBDTRegressor(**params).fit(frame, y, X_val=val, y_val=y_val)
    assert_same_model(local, model)
    assert model.evals_result_ == local.evals_result_
    np.testing.assert_array_equal(model.categorical_categories_[4], np.sort(cities))
    np.testing.assert_array_equal(model.predict(val), local.predict(val))
    np.testing.assert_array_equal(
        model.predict(dd.from_pandas(val, npartitions=2)).compute(), local.predict(val))
    # a warm start codes the strings by its model's categories, whatever the
    # new rows hold (here no "Doha": the codes must not shift)
    rows = (frame["city"] != "Doha").to_numpy()
    more = dict(params, max_iter=12)
    model.set_params(warm_start=True, max_iter=12).fit(
        dd.from_pandas(frame[rows], npartitions=2),
        dd.from_pandas(pd.Series(y[rows]), npartitions=2),
        X_val=dd.from_pandas(val, npartitions=2),
        y_val=dd.from_pandas(pd.Series(y_val), npartitions=2))
    local.set_params(warm_start=True, **more).fit(frame[rows], y[rows], X_val=val,
                                                  y_val=y_val)
    assert_same_model(local, model)
    np.testing.assert_array_equal(model.categorical_categories_[4], np.sort(cities))


@pytest.mark.parametrize("n_classes", [None, 3])
def test_high_cardinality_categories_are_pooled_as_locally(client, n_classes):
    # more than 255 categories (a DataFrame's category column, and integer
    # codes up to 2,000): the frequency order from every shard's counts, the
    # target statistics over the ring (exact sums, folds by global row), the
    # local model bit for bit, for uneven partitions and with a validation set
    if n_classes is None:
        X, y = regression_data(3000)
        Dask, Local = DaskHistGBDTRegressor, HistGBDTRegressor
    else:
        X, y = classification_data(3000, n_classes=n_classes)
        Dask, Local = DaskHistGBDTClassifier, HistGBDTClassifier
    rng = np.random.default_rng(7)
    codes = (rng.zipf(1.3, len(y)) % 2000).astype(float)  # skewed, some rare
    y = y + (codes % 7 == 0) if n_classes is None else y
    levels = [f"k{c}" for c in range(2000)]
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "codes": codes,
                          "k": pd.Categorical([f"k{int(c)}" for c in codes[::-1]],
                                              categories=levels)})
    frame.loc[::37, "k"] = None
    params = dict(PARAMS, categorical_features=["codes", "k"], max_iter=6,
                  early_stopping=True, n_iter_no_change=50)
    w = rng.uniform(0.5, 2.0, len(y))
    train, val = np.arange(2400), np.arange(2400, 3000)  # unseen codes among val's

    def split(data):
        return dd.from_pandas(data, npartitions=1).repartition(divisions=[0, 700, 2399])

    frame_val = frame.iloc[val].reset_index(drop=True)
    frame_val.loc[::5, "codes"] = 5000.0
    model = Dask(**params).fit(
        split(frame.iloc[train]), split(pd.Series(y[train])),
        sample_weight=split(pd.Series(w[train])),
        X_val=dd.from_pandas(frame_val, npartitions=2),
        y_val=dd.from_pandas(pd.Series(y[val]), npartitions=2))
    local = Local(**params).fit(frame.iloc[train], y[train], sample_weight=w[train],
                                X_val=frame_val, y_val=y[val])
    assert model.evals_result_ == local.evals_result_
    assert_same_model(local, model)
    for f in (2, 3):
        np.testing.assert_array_equal(model.categorical_categories_[f],
                                      local.categorical_categories_[f])
    for a, b in zip(model.booster_.target_stats["tables"], local.booster_.target_stats["tables"]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.predict(frame), local.predict(frame))
    if n_classes is None:  # a warm start keeps the model's statistics, as locally
        more = dict(max_iter=9, warm_start=True)
        model.set_params(**more).fit(split(frame.iloc[train]), split(pd.Series(y[train])),
                                     sample_weight=split(pd.Series(w[train])),
                                     X_val=dd.from_pandas(frame_val, npartitions=2),
                                     y_val=dd.from_pandas(pd.Series(y[val]), npartitions=2))
        local.set_params(**more).fit(frame.iloc[train], y[train], sample_weight=w[train],
                                     X_val=frame_val, y_val=y[val])
        assert model.n_iter_ == local.n_iter_ == 9
        assert_same_model(local, model)


def test_the_doc_example_runs_as_a_script(tmp_path):
    """doc/dask.md's example, saved and run as a script: a LocalCluster's
    worker processes import the script, so this also checks its __main__ guard."""
    from pathlib import Path
    import re
    import subprocess
    import sys

    text = (Path(__file__).resolve().parent.parent / "doc" / "dask.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) == 1
    script = tmp_path / "dask_example.py"
    script.write_text(blocks[0] + "\nif __name__ == '__main__':\n"
                      "    print('local model:', type(local).__name__)\n")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "local model: HistGBDTClassifier" in result.stdout


# --------------------------------------------------------------- ranking
def ranking_data(n_queries=80, size=25, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, 5))
    qid = np.repeat(rng.permutation(n_queries) + 7, size)
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=qid.size) + 1.5),
                0, 4)
    return X, y, qid


def _placed(client, array, cut):
    """Rows ``:cut`` on one worker and the rest on the other."""
    workers = sorted(client.scheduler_info()["workers"])
    halves = [array[:cut], array[cut:]]
    return da.concatenate([da.from_delayed(client.scatter(h, workers=[w], hash=False),
                                           shape=h.shape, dtype=h.dtype)
                           for h, w in zip(halves, workers)])


def test_a_distributed_ranker_is_the_local_one(client):
    from hgbt import HistGBDTRanker
    from hgbt.dask import DaskHistGBDTRanker
    X, y, qid = ranking_data()
    X_val, y_val, qid_val = ranking_data(20, seed=1)
    params = dict(PARAMS, early_stopping=True, max_iter=12)
    local = HistGBDTRanker(**params).fit(X, y, qid=qid, X_val=X_val, y_val=y_val,
                                         qid_val=qid_val)
    cut = 1000  # a query boundary: each worker holds whole queries
    dist = DaskHistGBDTRanker(**params).fit(
        _placed(client, X, cut), _placed(client, y, cut), qid=_placed(client, qid, cut),
        X_val=da.from_array(X_val, chunks=(250, 5)), y_val=da.from_array(y_val, chunks=250),
        qid_val=da.from_array(qid_val, chunks=250))
    assert dist.telemetry_["n_workers"] == 2
    np.testing.assert_array_equal(dist.predict(X), local.predict(X))
    assert dist.evals_result_ == local.evals_result_
    # feature-parallel: every worker gathers all the rows and their queries
    by_feature = DaskHistGBDTRanker(**params, tree_learner="feature").fit(
        _placed(client, X, cut), _placed(client, y, cut), qid=_placed(client, qid, cut),
        X_val=da.from_array(X_val, chunks=(250, 5)), y_val=da.from_array(y_val, chunks=250),
        qid_val=da.from_array(qid_val, chunks=250))
    np.testing.assert_array_equal(by_feature.predict(X), local.predict(X))
    assert by_feature.evals_result_ == local.evals_result_
    # bagging by query: a query's draw is the same on a worker as locally
    bagged = dict(PARAMS, subsample=0.5, bagging_by_query=True)
    np.testing.assert_array_equal(
        DaskHistGBDTRanker(**bagged).fit(_placed(client, X, cut), _placed(client, y, cut),
                                         qid=_placed(client, qid, cut)).predict(X),
        HistGBDTRanker(**bagged).fit(X, y, qid=qid).predict(X))
    # a DataFrame's 'qid' column, and lazy predictions of a dask DataFrame
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    plain = dict(PARAMS, max_iter=12)
    by_column = DaskHistGBDTRanker(**plain).fit(dd.from_pandas(frame, npartitions=2),
                                                dd.from_pandas(pd.Series(y), npartitions=2))
    np.testing.assert_array_equal(
        by_column.predict(dd.from_pandas(frame, npartitions=3)).compute(),
        HistGBDTRanker(**plain).fit(X, y, qid=qid).predict(X))


def test_a_query_on_two_workers_is_refused(client):
    from hgbt.dask import DaskHistGBDTRanker
    X, y, qid = ranking_data()
    cut = 1010  # inside a query
    with pytest.raises(ValueError, match="has rows on two workers"):
        DaskHistGBDTRanker(**PARAMS).fit(_placed(client, X, cut), _placed(client, y, cut),
                                         qid=_placed(client, qid, cut))
    with pytest.raises(ValueError, match="needs each row's query"):
        DaskHistGBDTRanker(**PARAMS).fit(da.from_array(X, chunks=(1000, 5)),
                                         da.from_array(y, chunks=1000))


def test_a_distributed_aft_model_is_the_local_one(client):
    from hgbt import HistGBDTSurvival
    from hgbt.dask import DaskHistGBDTSurvival
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    time = np.exp(1 + 0.7 * X[:, 0] + 0.5 * rng.logistic(size=2000))
    upper = np.where(rng.random(2000) < 0.3, np.inf, time)
    lower = np.where(np.arange(2000) % 10 == 0, 0.0, time)  # left-censored rows too
    params = dict(PARAMS, max_iter=10, aft_distribution="logistic", aft_sigma=0.5)
    local = HistGBDTSurvival("aft", **params).fit(X, np.column_stack([lower, upper]))
    dist = DaskHistGBDTSurvival("aft", **params).fit(
        _placed(client, X, 900), _placed(client, lower, 900),
        label_upper_bound=_placed(client, upper, 900))
    assert dist.telemetry_["n_workers"] == 2
    np.testing.assert_array_equal(dist.booster_.baseline, local.booster_.baseline)
    np.testing.assert_array_equal(dist.predict(X), local.predict(X))
    by_feature = DaskHistGBDTSurvival("aft", **params, tree_learner="feature").fit(
        _placed(client, X, 900), _placed(client, lower, 900),
        label_upper_bound=_placed(client, upper, 900))
    np.testing.assert_array_equal(by_feature.predict(X), local.predict(X))
    with pytest.raises(ValueError, match="loss='aft'"):
        DaskHistGBDTSurvival("cox", **params).fit(
            da.from_array(X, chunks=(1000, 4)), da.from_array(lower, chunks=1000),
            label_upper_bound=da.from_array(upper, chunks=1000))


@pytest.mark.parametrize("tree_learner", ["data", "feature"])
def test_multi_output_and_multi_label_fits_are_the_local_ones(client, tree_learner):
    X, y = regression_data()
    Z = np.nan_to_num(X)
    Y = np.column_stack([y, Z[:, 0] - Z[:, 1], Z[:, 3] ** 2])
    w = np.random.default_rng(3).uniform(0.5, 2.0, X.shape[0])
    chunks = (1200, 800, 1000)
    local = HistGBDTRegressor(**PARAMS).fit(X, Y, sample_weight=w)
    model = DaskHistGBDTRegressor(**PARAMS, tree_learner=tree_learner).fit(
        chunked(X, chunks), chunked(Y, chunks), sample_weight=chunked(w, chunks))
    assert model.n_outputs_ == 3
    assert_same_model(local, model)
    predictions = model.predict(chunked(X, chunks))
    assert predictions.shape[1] == 3
    np.testing.assert_array_equal(predictions.compute(), local.predict(X))
    labels = (Y > np.median(Y, axis=0)).astype(int)
    local = HistGBDTClassifier(**PARAMS).fit(X, labels)
    model = DaskHistGBDTClassifier(**PARAMS, tree_learner=tree_learner).fit(
        chunked(X, chunks), chunked(labels, chunks))
    assert model.n_outputs_ == 3 and model.classes_.tolist() == [0, 1]
    assert_same_model(local, model)
    np.testing.assert_array_equal(model.predict_proba(chunked(X, chunks)).compute(),
                                  local.predict_proba(X))
    np.testing.assert_array_equal(model.predict(chunked(X, chunks)).compute(),
                                  local.predict(X))


def test_multi_output_on_a_cluster_refuses_what_it_does_not_do(client):
    X, y = regression_data(600)
    Y = np.column_stack([y, y])
    with pytest.raises(ValueError, match="not grown on a cluster"):
        DaskHistGBDTRegressor(**PARAMS, multi_strategy="multi_output_tree").fit(
            chunked(X, 300), chunked(Y, 300))
    with pytest.raises(ValueError, match="column\\(s\\) of y"):
        DaskHistGBDTRegressor(**PARAMS).fit(chunked(X, 300), chunked(Y, 300),
                                            X_val=chunked(X, 300), y_val=chunked(y, 300))
    with pytest.raises(ValueError, match="0/1"):
        DaskHistGBDTClassifier(**PARAMS).fit(chunked(X, 300), chunked(Y, 300))
    # one class a row: multi_strategy has nothing to share, the local multiclass model
    X, y = classification_data(900, n_classes=3)
    params = dict(PARAMS, multi_strategy="multi_output_tree")
    np.testing.assert_array_equal(
        DaskHistGBDTClassifier(**params).fit(chunked(X, 450), chunked(y, 450))
        .predict_proba(X), HistGBDTClassifier(**params).fit(X, y).predict_proba(X))
