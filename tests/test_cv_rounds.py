"""early_stopping='cv': rounds chosen by K-fold cross-validation, then all rows.

Checked against a plain reference: clones fitted on the same folds without
early stopping, their held-out curves averaged by NumPy, the round read off
by hand, and a fit of every row for that many rounds.
"""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from hgbt import Dataset, HistGBDTClassifier, HistGBDTRegressor
from hgbt.data.dataset import new_seed
from hgbt.estimators.cv_rounds import N_FOLDS


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.8 * rng.normal(size=n)
    return X, y


def _reference(est, X, y, w, size, metric="loss"):
    """The folds' mean curve and its best round, by hand."""
    folds = (StratifiedKFold if isinstance(est, HistGBDTClassifier) else KFold)(
        N_FOLDS, shuffle=True, random_state=new_seed(est.random_state))
    curves = []
    for train, held in folds.split(X, y):
        m = clone(est).set_params(early_stopping=True, n_iter_no_change=4 * est.n_iter_no_change,
                                  **size).fit(
            X[train], y[train], None if w is None else w[train],
            eval_set=[(X[held], y[held])],
            eval_sample_weight=[None if w is None else w[held]])
        curves.append(m.evals_result_["valid_0"][metric])
    length = max(len(c) for c in curves)  # a stopped fold keeps its last score
    mean = np.mean([c + [c[-1]] * (length - len(c)) for c in curves], axis=0)
    oriented = -mean if metric == "loss" else mean
    rounds = 1 + int(np.argmax(oriented[1:]))
    return mean, rounds


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_cv_rounds_equal_the_reference_and_a_fit_of_all_rows(kind, weighted):
    X, y = _data()
    if kind == "classifier":
        y = (y > 0.3).astype(int)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    cls = HistGBDTClassifier if kind == "classifier" else HistGBDTRegressor
    est = cls(early_stopping="cv", max_leaf_nodes=15, random_state=0)
    model = clone(est).fit(X, y, sample_weight=w)
    size = {"max_leaf_nodes": 15, "l2_regularization": 1.0}
    mean, rounds = _reference(est, X, y, w, size)
    np.testing.assert_array_equal(model.cv_results_["loss-mean"], mean)
    assert model.n_iter_ == model.best_iteration_ == model.cv_results_["best_iteration"] == rounds
    assert 1 <= rounds < est.max_iter  # the data's noise stops it
    assert model.best_score_ == mean[rounds]
    plain = cls(early_stopping=False, max_iter=rounds, random_state=0, **size).fit(
        X, y, sample_weight=w)
    raw = model.decision_function(X) if kind == "classifier" else model.predict(X)
    raw_plain = plain.decision_function(X) if kind == "classifier" else plain.predict(X)
    assert raw.tobytes() == raw_plain.tobytes()
    assert model.get_params() == est.get_params()  # the parameters stay the user's


def test_cv_rounds_compare_tree_sizes_when_the_first_runs_long():
    # few rounds at a small learning rate: the first size's best round is the
    # last, so 'auto' cross-validates the second size too and keeps the better
    X, y = _data(1500, seed=3)
    est = HistGBDTRegressor(early_stopping="cv", max_iter=12, learning_rate=0.05,
                            random_state=0)
    model = clone(est).fit(X, y)
    scores = model.tree_size_scores_
    assert [s["max_leaf_nodes"] for s in scores] == [31, 63]
    for trial in scores:
        size = {k: trial[k] for k in ("max_leaf_nodes", "l2_regularization")}
        mean, rounds = _reference(est, X, y, None, size)
        assert trial["n_iter"] == rounds and trial["score"] == -mean[rounds]
    kept = max(scores, key=lambda s: s["score"])
    if scores[1]["score"] <= scores[0]["score"] + est.tol:
        kept = scores[0]
    assert model.max_leaf_nodes_ == kept["max_leaf_nodes"]
    assert model.n_iter_ == kept["n_iter"]


def test_cv_rounds_with_a_scorer_and_dataframes():
    pd = pytest.importorskip("pandas")
    X, y = _data(500)
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["c"] = pd.Categorical(np.where(X[:, 2] > 0, "hi", "lo"))
    est = HistGBDTRegressor(early_stopping="cv", scoring="r2", random_state=0)
    model = clone(est).fit(frame, y)
    assert set(model.cv_results_) == {"r2-mean", "r2-std", "best_iteration"}
    r2 = model.cv_results_["r2-mean"]
    assert r2[model.n_iter_] >= r2[1:].max() - est.tol
    assert model.predict(frame).shape == (500,)


def test_cv_rounds_in_a_grid_search():
    X, y = _data(400)
    search = GridSearchCV(HistGBDTRegressor(early_stopping="cv", random_state=0),
                          {"learning_rate": [0.1, 0.3]}, cv=3).fit(X, y)
    assert search.best_estimator_.cv_results_["best_iteration"] >= 1


@pytest.mark.parametrize("case, message", [
    ("dataset", "for a Dataset use hgbt.cv"),
    ("x_val", "X_val would not be used"),
    ("warm", "cannot continue a fitted model"),
    ("truncate", "truncate_at_best has no meaning"),
    ("set", "early_stopping_set='train' has no meaning"),
])
def test_cv_rounds_refuses_what_it_cannot_mean(case, message):
    X, y = _data(300)
    est = HistGBDTRegressor(early_stopping="cv", max_iter=5, random_state=0)
    with pytest.raises(ValueError, match=message):
        if case == "dataset":
            est.fit(Dataset(X, y))
        elif case == "x_val":
            est.fit(X, y, X_val=X[:50], y_val=y[:50])
        elif case == "warm":
            est.set_params(warm_start=True).fit(X, y)
            est.set_params(max_iter=8).fit(X, y)
        elif case == "truncate":
            est.set_params(truncate_at_best=True).fit(X, y)
        else:
            est.set_params(early_stopping_set="train").fit(X, y)


def test_cv_rounds_take_any_array_like_and_any_target_scale():
    # a list, or an object with __array__ only, gives the array's model; a
    # target of scale 1e-29 keeps its rounds (the round is the best mean
    # score itself, not one within tol of it)
    X, y = _data(300)

    class ArrayOnly:
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    est = HistGBDTRegressor(early_stopping="cv", max_iter=20, random_state=0)
    ref = clone(est).fit(X, y).predict(X)
    for X_like in (X.tolist(), ArrayOnly(X)):
        assert clone(est).fit(X_like, y).predict(X).tobytes() == ref.tobytes()
    tiny = clone(est).fit(X, y * 1e-29)
    assert tiny.n_iter_ > 1 and tiny.score(X, y * 1e-29) > 0.5


def test_cv_rounds_where_no_tree_can_split():
    # constant features: no round grows a tree in any fold; one round is
    # asked of the final fit, which stops there as well
    X = np.ones((200, 3))
    y = np.random.default_rng(0).normal(size=200)
    model = HistGBDTRegressor(early_stopping="cv", random_state=0).fit(X, y)
    assert model.cv_results_["best_iteration"] == 1
    assert model.best_score_ == model.cv_results_["loss-mean"][0]
    np.testing.assert_allclose(model.predict(X), np.mean(y))


@pytest.mark.parametrize("container", ["coo", "polars", "pyarrow"])
def test_cv_rounds_take_every_container_the_fit_takes(container):
    sp = pytest.importorskip("scipy.sparse")
    X, y = _data(300)
    est = HistGBDTRegressor(early_stopping="cv", max_iter=20, random_state=0)
    ref = clone(est).fit(X, y).predict(X)
    if container == "coo":
        X_in = sp.coo_matrix(X)
    elif container == "polars":
        X_in = pytest.importorskip("polars").DataFrame(X, schema=list("abcde"))
    else:
        pa = pytest.importorskip("pyarrow")
        X_in = pa.table({name: X[:, i] for i, name in enumerate("abcde")})
    assert clone(est).fit(X_in, y).predict(X_in).tobytes() == ref.tobytes()


def test_auto_checkpoint_of_the_final_fit_resumes_to_the_chosen_rounds(tmp_path):
    # 'auto' cross-validates these 2,000 rows; the final fit stops after 11
    # rounds (a callback), and its checkpoint, warm started, finishes the rounds chosen:
    # the uninterrupted model, bit for bit
    from hgbt import load_model
    from hgbt.callbacks import Checkpoint
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    y = X[:, 0] * 3 + np.sin(X[:, 1]) + rng.normal(size=2000)
    params = dict(max_iter=200, subsample=0.8, random_state=0)

    class Dies:
        def after_round(self, iteration, history, estimator):
            return "stop" if iteration == 10 else None

    HistGBDTRegressor(**params).fit(X, y, callbacks=[Checkpoint(tmp_path / "m.json",
                                                                every=5), Dies()])
    saved = load_model(tmp_path / "m.json")
    whole = HistGBDTRegressor(**params).fit(X, y)
    assert saved.n_iter_ == 11 < whole.n_iter_ == saved.cv_results_["best_iteration"]
    resumed = saved.set_params(warm_start=True).fit(X, y)
    assert resumed.n_iter_ == whole.n_iter_
    assert resumed.predict(X).tobytes() == whole.predict(X).tobytes()
    # a warm start of the finished model adds the rounds asked for
    more = whole.set_params(warm_start=True, max_iter=whole.n_iter_ + 4).fit(X, y)
    assert more.n_iter_ == resumed.n_iter_ + 4


def test_cv_results_are_saved_and_checked(tmp_path):
    import json

    from hgbt import load_model
    X, y = _data(400)
    model = HistGBDTRegressor(random_state=0).fit(X, y)  # 'auto': cross-validated
    model.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    for key, value in model.cv_results_.items():
        np.testing.assert_array_equal(loaded.cv_results_[key], value)
    document = json.loads((tmp_path / "m.json").read_text())
    entry = document["fitted"]["attributes"]["cv_results_"]
    entry["items"] = [item for item in entry["items"] if item[0] != "best_iteration"]
    document.pop("checksum", None)
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="cv_results_"):
        load_model(tmp_path / "bad.json")
