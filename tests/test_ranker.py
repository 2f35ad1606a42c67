"""HistGBDTRanker: queries given every way, scikit-learn's model selection over
queries, early stopping on NDCG, determinism, persistence and clear errors."""
import pickle

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score

from hgbt import HistGBDTRanker, load_model, save_model
from hgbt.core.row_meta import Queries, RowMeta
from hgbt.engine.early_stopping import split_validation
from hgbt.engine.ranking import mean_query_score

FAST = dict(max_iter=15, early_stopping=False, random_state=0)


def ranking_problem(n_queries=60, size=20, seed=0, n_features=5):
    """Relevance 0-4 from a noisy score of the first two features; query
    ids not 0..n-1 and not sorted."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, n_features))
    qid = np.repeat(rng.permutation(n_queries) * 3 + 100, size)
    latent = X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=qid.size)
    y = np.clip(np.round(latent + 1.5), 0, 4)
    return X, y, qid


def test_the_ranker_learns_the_order():
    X, y, qid = ranking_problem()
    X_test, y_test, qid_test = ranking_problem(seed=1)
    ranker = HistGBDTRanker(**FAST).fit(X, y, qid=qid)
    ours = ranker.score(X_test, y_test, qid=qid_test)
    random = mean_query_score("ndcg", 10, y_test, np.random.default_rng(0).normal(
        size=y_test.size), Queries(qid_test))
    oracle = mean_query_score("ndcg", 10, y_test, X_test[:, 0] + 0.5 * X_test[:, 1],
                              Queries(qid_test))
    assert random + 0.1 < ours <= oracle + 0.02


def test_queries_given_as_ids_column_or_group_sizes_give_one_model():
    X, y, qid = ranking_problem()
    order = np.argsort(qid, kind="stable")  # group sizes need consecutive queries
    X, y, qid = X[order], y[order], qid[order]
    by_qid = HistGBDTRanker(**FAST).fit(X, y, qid=qid).predict(X)
    sizes = np.unique(qid, return_counts=True)[1]
    by_group = HistGBDTRanker(**FAST).fit(X, y, group=sizes).predict(X)
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    ranker = HistGBDTRanker(**FAST).fit(frame, y)
    np.testing.assert_array_equal(by_qid, by_group)
    np.testing.assert_array_equal(by_qid, ranker.predict(frame))  # 'qid' not a feature
    assert list(ranker.feature_names_in_) == list("abcde")
    strings = HistGBDTRanker(**FAST).fit(X, y, qid=np.char.add("q", qid.astype(str)))
    np.testing.assert_array_equal(by_qid, strings.predict(X))


def test_the_model_does_not_depend_on_threads_or_the_order_of_queries():
    X, y, qid = ranking_problem(n_queries=80)
    reference = HistGBDTRanker(**FAST, n_threads=1).fit(X, y, qid=qid).predict(X)
    for threads in (2, 4):
        np.testing.assert_array_equal(
            reference, HistGBDTRanker(**FAST, n_threads=threads).fit(X, y, qid=qid).predict(X))
    # the queries in another order, each query's rows in theirs
    queries = np.unique(qid)
    moved = np.concatenate([np.flatnonzero(qid == q) for q in queries[::-1]])
    other = HistGBDTRanker(**FAST).fit(X[moved], y[moved], qid=qid[moved])
    np.testing.assert_array_equal(reference[moved], other.predict(X[moved]))


def test_the_hold_out_keeps_queries_whole():
    X, y, qid = ranking_problem()
    meta = RowMeta(qid=qid)
    _, _, _, _, train, held = split_validation(X, y, meta, 0.2, 0, False)
    assert not set(train.qid) & set(held.qid)
    assert len(set(held.qid)) == 12  # a fifth of the queries
    for part in (train, held):  # each query whole, its rows in their order
        for q in np.unique(part.qid):
            assert np.sum(part.qid == q) == 20
    with pytest.raises(ValueError, match="at least 2 queries"):
        split_validation(X, y, RowMeta(qid=np.zeros(y.size)), 0.2, 0, False)


def test_early_stopping_watches_ndcg_on_whole_queries():
    X, y, qid = ranking_problem(n_queries=120)
    ranker = HistGBDTRanker(max_iter=200, early_stopping=True, n_iter_no_change=5,
                            eval_metric=["map@5", "ndcg"], random_state=0)
    ranker.fit(X, y, qid=qid)
    history = ranker.evals_result_["validation"]
    assert set(history) == {"ndcg@10", "map@5", "ndcg"}
    assert ranker.n_iter_ < 200
    assert ranker.best_iteration_ == int(np.argmax(history["ndcg@10"]))
    assert history["ndcg@10"][ranker.best_iteration_] > history["ndcg@10"][0] + 0.05
    # the watched set's scores are those of the held-out queries' predictions
    X_val, y_val, qid_val = ranking_problem(n_queries=30, seed=5)
    ranker = HistGBDTRanker(**FAST).set_params(early_stopping=True)
    ranker.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    assert ranker.evals_result_["validation"]["ndcg@10"][-1] == pytest.approx(
        ranker.score(X_val, y_val, qid=qid_val), rel=1e-12)


def test_cross_validated_rounds_fold_whole_queries():
    X, y, qid = ranking_problem(n_queries=50)
    ranker = HistGBDTRanker(max_iter=30, early_stopping="cv", random_state=0)
    ranker.fit(X, y, qid=qid)
    assert 1 <= ranker.n_iter_ <= 30
    assert "ndcg@10-mean" in ranker.cv_results_
    with pytest.raises(ValueError, match="at least 5 queries"):
        ranker.fit(X[:60], y[:60], qid=qid[:60])


def test_grid_search_with_group_k_fold_over_a_qid_column():
    X, y, qid = ranking_problem()
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    search = GridSearchCV(HistGBDTRanker(**FAST), {"learning_rate": [0.05, 0.3]},
                          cv=GroupKFold(3)).fit(frame, y, groups=qid)
    scores = cross_val_score(HistGBDTRanker(**FAST, learning_rate=0.05), frame, y,
                             groups=qid, cv=GroupKFold(3))
    assert search.cv_results_["mean_test_score"][0] == pytest.approx(scores.mean())
    assert 0.5 < search.best_score_ <= 1


def test_grid_search_routes_qid_as_metadata():
    X, y, qid = ranking_problem()
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = HistGBDTRanker(**FAST).set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(ranker, {"learning_rate": [0.05, 0.3]}, cv=GroupKFold(3))
        search.fit(X, y, groups=qid, qid=qid)
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    by_column = GridSearchCV(HistGBDTRanker(**FAST), {"learning_rate": [0.05, 0.3]},
                             cv=GroupKFold(3)).fit(frame, y, groups=qid)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               by_column.cv_results_["mean_test_score"], rtol=1e-12)


@pytest.mark.parametrize("loss", ["lambdarank", "pairwise"])
def test_persistence_is_bit_identical(tmp_path, loss):
    X, y, qid = ranking_problem()
    ranker = HistGBDTRanker(loss, label_gain=[0, 1, 2, 4, 8], **FAST).fit(X, y, qid=qid)
    loaded = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(loaded.predict(X), ranker.predict(X))
    save_model(ranker, tmp_path / "ranker.json")
    loaded = load_model(tmp_path / "ranker.json")
    assert type(loaded) is HistGBDTRanker and loaded.label_gain == [0, 1, 2, 4, 8]
    np.testing.assert_array_equal(loaded.predict(X), ranker.predict(X))
    assert loaded.score(X, y, qid=qid) == ranker.score(X, y, qid=qid)


def test_sample_weights_scale_each_rows_gradients():
    X, y, qid = ranking_problem()
    ranker = HistGBDTRanker(**FAST, l2_regularization=0.0)
    doubled = ranker.fit(X, y, qid=qid, sample_weight=np.full(y.size, 2.0)).predict(X)
    plain = ranker.fit(X, y, qid=qid).predict(X)
    # doubling every gradient and hessian leaves each leaf value -G/H (no L2)
    np.testing.assert_allclose(doubled, plain, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fit, message", [
    (lambda r, X, y, q: r.fit(X, y + 0.5, qid=q), "integers 0..30"),
    (lambda r, X, y, q: r.fit(X, y + 40, qid=q), "more label_gain entries"),
    (lambda r, X, y, q: r.fit(X, y, qid=q[:-1]), "one query id per row"),
    (lambda r, X, y, q: r.fit(X, y, qid=q, group=[len(y)]), "not both"),
    (lambda r, X, y, q: r.fit(X, y, group=[3, len(y)]), "sizes of consecutive queries"),
    (lambda r, X, y, q: r.fit(pd.DataFrame(X).assign(qid=q), y, qid=q), "give the query ids once"),
    (lambda r, X, y, q: r.set_params(early_stopping=True).fit(X, y, qid=q, X_val=X, y_val=y),
     "X_val needs its query ids"),
    (lambda r, X, y, q: r.fit(X, y, qid=q, eval_set=[(X, y)]), "eval_set\\[0\\] needs"),
    (lambda r, X, y, q: r.set_params(scoring="loss", early_stopping=True).fit(X, y, qid=q),
     "no per-row loss value"),
    (lambda r, X, y, q: r.set_params(label_gain=[0, 3, 1]).fit(X, y, qid=q), "non-decreasing"),
])
def test_bad_input_gets_a_clear_error(fit, message):
    X, y, qid = ranking_problem()
    with pytest.raises(ValueError, match=message):
        fit(HistGBDTRanker(**FAST), X, y, qid)


def test_a_regressor_refuses_ranking_metrics():
    from hgbt import HistGBDTRegressor
    X, y, _ = ranking_problem()
    with pytest.raises(ValueError, match="needs the rows' query ids"):
        HistGBDTRegressor(max_iter=3, eval_metric="ndcg@5", early_stopping=False).fit(X, y)


def test_a_dataset_with_query_ids_and_the_native_api():
    import hgbt
    X, y, qid = ranking_problem()
    X_val, y_val, qid_val = ranking_problem(n_queries=20, seed=3)
    reference = HistGBDTRanker(**FAST).set_params(early_stopping=True).fit(
        X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    data = hgbt.Dataset(X, y, qid=qid)
    valid = hgbt.Dataset(X_val, y_val, qid=qid_val, reference=data)
    ranker = HistGBDTRanker(**FAST).set_params(early_stopping=True).fit(data, X_val=valid)
    np.testing.assert_array_equal(ranker.predict(X), reference.predict(X))
    booster = hgbt.train({"loss": "lambdarank", "max_iter": 15, "random_state": 0}, data,
                         valid_sets=[valid])
    np.testing.assert_array_equal(booster.predict(X), reference.predict(X))
    assert set(booster.evals_result["valid_0"]) == {"ndcg@10"}
    scores = hgbt.cv({"loss": "lambdarank", "max_iter": 10}, data, nfold=3)
    assert scores["ndcg@10-mean"].shape == (11,) and scores["ndcg@10-mean"][-1] > 0.5
    with pytest.raises(ValueError, match="needs query ids"):
        HistGBDTRanker(**FAST).fit(hgbt.Dataset(X, y))
    with pytest.raises(ValueError, match="takes no qid"):
        HistGBDTRanker(**FAST).fit(data, qid=qid)


def test_bagging_by_query_keeps_or_drops_whole_queries(monkeypatch):
    from hgbt.engine.row_state import LocalData
    X, y, qid = ranking_problem(n_queries=100)
    bags = []
    original = LocalData.sample_rows

    def recording(self, sampler):
        rows = original(self, sampler)
        bags.append(None if rows is None else np.asarray(rows))
        return rows

    monkeypatch.setattr(LocalData, "sample_rows", recording)
    HistGBDTRanker(**FAST, subsample=0.5, bagging_by_query=True).fit(X, y, qid=qid)
    assert len(bags) == 15
    for rows in bags:
        kept = np.zeros(y.size, dtype=bool)
        kept[rows] = True
        per_query = {q: set(kept[qid == q]) for q in np.unique(qid)}
        assert all(len(v) == 1 for v in per_query.values())  # all in or all out
        assert 25 <= sum(v == {True} for v in per_query.values()) <= 75
    bags.clear()
    HistGBDTRanker(**FAST, subsample=0.5).fit(X, y, qid=qid)  # by rows: queries cut
    kept = np.zeros(y.size, dtype=bool)
    kept[bags[0]] = True
    assert any(len(set(kept[qid == q])) == 2 for q in np.unique(qid))
    with pytest.raises(ValueError, match="needs data_sample_strategy='bagging'"):
        HistGBDTRanker(**FAST, data_sample_strategy="goss",
                       bagging_by_query=True).fit(X, y, qid=qid)


def test_a_count_of_rows_holds_out_whole_queries_of_about_that_many():
    X, y, qid = ranking_problem(n_queries=100)
    _, _, _, _, train, held = split_validation(X, y, RowMeta(qid=qid), 200, 0, False)
    assert held.qid.size == 200 and not set(train.qid) & set(held.qid)
