"""hgbt inside scikit-learn's model-selection and inspection tools.

Pipelines, column transformers, hyper-parameter searches (run in joblib's
loky workers with ``n_jobs=2``), cross-validation, calibration, permutation
importance, partial dependence and ``clone``; and the thread count: hgbt's
OpenMP threads follow joblib's per-worker limits, threadpoolctl's limits and
an explicit ``n_threads``.
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import joblib
import numpy as np
import pandas as pd
import pytest
from scipy.stats import loguniform
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_friedman1
from sklearn.exceptions import NotFittedError
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.frozen import FrozenEstimator
from sklearn.inspection import partial_dependence, permutation_importance
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import (GridSearchCV, HalvingGridSearchCV, KFold,
                                     RandomizedSearchCV, cross_val_score, cross_validate,
                                     train_test_split)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._openmp import effective_n_threads, openmp_enabled

N_JOBS = 2


@pytest.fixture(scope="module")
def regression():
    X, y = make_friedman1(n_samples=600, noise=0.5, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def classification():
    X, y = make_classification(n_samples=600, n_features=8, n_informative=4,
                               random_state=0)
    return X, y


# ------------------------------------------------------------------- clone
@pytest.mark.parametrize("Estimator", [HistGBDTRegressor, HistGBDTClassifier])
def test_clone_gives_an_unfitted_estimator_with_equal_params(Estimator, classification):
    X, y = classification
    est = Estimator(max_iter=15, learning_rate=0.2, max_leaf_nodes=7, subsample=0.8,
                    interaction_cst=[[0, 1], [2, 3]], random_state=3).fit(X, y)
    copy = clone(est)
    assert copy is not est
    assert copy.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(copy)
    with pytest.raises(NotFittedError):
        copy.predict(X)
    # Nested parameters are copied, not shared.
    assert copy.interaction_cst == est.interaction_cst
    assert copy.interaction_cst is not est.interaction_cst
    # Equal parameters (seeded) give the same model.
    np.testing.assert_array_equal(copy.fit(X, y).predict(X), est.predict(X))


def test_clone_keeps_set_params(regression):
    est = clone(HistGBDTRegressor().set_params(max_iter=7, l2_regularization=1.5))
    assert est.max_iter == 7 and est.l2_regularization == 1.5
    assert est.fit(*regression).n_iter_ == 7


# -------------------------------------------------------------- pipelines
def test_pipeline_with_standard_scaler(regression):
    X, y = regression
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    pipe = make_pipeline(StandardScaler(),
                         HistGBDTRegressor(max_iter=50, random_state=0)).fit(X_train, y_train)
    plain = HistGBDTRegressor(max_iter=50, random_state=0).fit(X_train, y_train)
    assert pipe.score(X_test, y_test) > 0.8
    # Trees only compare values with thresholds: a per-feature affine map
    # leaves the model (nearly) unchanged.
    np.testing.assert_allclose(pipe.predict(X_test), plain.predict(X_test), rtol=1e-6,
                               atol=1e-6)
    assert pipe[-1].n_features_in_ == X.shape[1]
    # Nested parameters are reachable with the step__param syntax.
    pipe.set_params(histgbdtregressor__max_iter=5).fit(X_train, y_train)
    assert pipe[-1].n_iter_ == 5


def _mixed_frame(n=600, seed=0):
    rng = np.random.RandomState(seed)
    color = rng.choice(["red", "green", "blue"], size=n)
    size = rng.normal(size=n)
    noise = rng.normal(size=n)
    # The label needs both the string column and a numeric one.
    y = ((color == "red") ^ (size > 0)).astype(int)
    return pd.DataFrame({"color": color, "size": size, "noise": noise}), y


def test_column_transformer_with_mixed_columns():
    X, y = _mixed_frame()
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    preprocess = ColumnTransformer([
        ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["color"]),
        ("scale", StandardScaler(), ["size", "noise"]),
    ])
    pipe = Pipeline([("prep", preprocess),
                     ("clf", HistGBDTClassifier(max_iter=30, random_state=0))])
    pipe.fit(X_train, y_train)
    assert pipe.score(X_test, y_test) > 0.95
    assert pipe[-1].n_features_in_ == 5  # three one-hot columns + two numeric
    np.testing.assert_array_equal(pipe.classes_, [0, 1])
    # Without the string column the task is a coin flip.
    numeric_only = HistGBDTClassifier(max_iter=30, random_state=0).fit(
        X_train[["size", "noise"]], y_train)
    assert numeric_only.score(X_test[["size", "noise"]], y_test) < 0.75


# --------------------------------------------------------------- searches
def test_grid_search_finds_the_better_setting(regression):
    X, y = regression
    search = GridSearchCV(
        HistGBDTRegressor(max_iter=40, random_state=0),
        {"learning_rate": [1e-4, 0.2], "max_leaf_nodes": [2, 15]},
        cv=3, n_jobs=N_JOBS)
    search.fit(X, y)
    assert search.best_params_["learning_rate"] == 0.2
    scores = dict(zip(map(lambda p: (p["learning_rate"], p["max_leaf_nodes"]),
                          search.cv_results_["params"]),
                      search.cv_results_["mean_test_score"]))
    # A learning rate of 1e-4 barely leaves the baseline: R² near 0.
    assert scores[(1e-4, 2)] < 0.05 and scores[(1e-4, 15)] < 0.05
    assert search.best_score_ > 0.7
    assert search.best_score_ == max(scores.values())
    # refit=True: the best setting refitted on all the data.
    best = search.best_estimator_
    assert best.learning_rate == 0.2 and best.n_features_in_ == X.shape[1]
    assert best.score(X, y) > search.best_score_


def test_grid_search_classifier_with_n_threads(classification):
    X, y = classification
    search = GridSearchCV(
        HistGBDTClassifier(max_iter=30, n_threads=1, random_state=0),
        {"max_iter": [1, 40]}, cv=3, n_jobs=N_JOBS, scoring="roc_auc")
    search.fit(X, y)
    assert search.best_params_ == {"max_iter": 40}
    assert search.best_score_ > 0.9
    assert search.best_estimator_.n_threads == 1
    assert search.predict_proba(X).shape == (X.shape[0], 2)


def test_randomized_search(regression):
    X, y = regression
    search = RandomizedSearchCV(
        HistGBDTRegressor(random_state=0),
        {"learning_rate": loguniform(0.05, 0.3), "max_iter": [2, 60],
         "max_leaf_nodes": [7, 15, 31]},
        n_iter=6, cv=3, n_jobs=N_JOBS, random_state=0)
    search.fit(X, y)
    params = search.cv_results_["params"]
    assert len(params) == 6
    assert all(0.05 <= p["learning_rate"] <= 0.3 for p in params)
    assert {p["max_iter"] for p in params} == {2, 60}  # both were drawn
    assert search.best_params_["max_iter"] == 60
    assert search.best_score_ == np.max(search.cv_results_["mean_test_score"])
    assert search.best_score_ > 0.7


def test_halving_grid_search_with_max_iter_as_resource(regression):
    X, y = regression
    search = HalvingGridSearchCV(
        HistGBDTRegressor(random_state=0, early_stopping=False),
        {"learning_rate": [1e-4, 0.2], "max_leaf_nodes": [3, 15]},
        resource="max_iter", min_resources=10, max_resources=40, factor=2,
        cv=3, n_jobs=N_JOBS, random_state=0)
    search.fit(X, y)
    assert search.n_resources_ == [10, 20, 40]
    assert search.best_params_["learning_rate"] == 0.2
    assert search.best_estimator_.max_iter == 40
    assert search.best_estimator_.n_iter_ == 40
    assert search.best_score_ > 0.7


def test_halving_grid_search_over_samples(classification):
    X, y = classification
    search = HalvingGridSearchCV(
        HistGBDTClassifier(max_iter=30, random_state=0),
        {"learning_rate": [1e-4, 0.3]}, factor=2, min_resources=150, cv=3,
        n_jobs=N_JOBS, random_state=0)
    search.fit(X, y)
    assert search.n_resources_[0] == 150
    assert search.best_params_ == {"learning_rate": 0.3}
    assert search.score(X, y) > 0.9


def test_early_stopping_inside_a_search(regression):
    X, y = regression
    search = GridSearchCV(
        HistGBDTRegressor(max_iter=500, early_stopping=True, validation_fraction=0.2,
                          n_iter_no_change=5, random_state=0),
        {"learning_rate": [0.1, 0.5]}, cv=3, n_jobs=N_JOBS)
    search.fit(X, y)
    best = search.best_estimator_
    assert best.n_iter_ < 500  # stopped early when refitted
    assert len(best.validation_score_) == best.n_iter_ + 1
    assert search.best_score_ > 0.7


# --------------------------------------------------------- cross-validation
def test_cross_val_score(classification, regression):
    X, y = classification
    clf = HistGBDTClassifier(max_iter=40, random_state=0)
    scores = cross_val_score(clf, X, y, cv=5, n_jobs=N_JOBS)
    assert scores.shape == (5,)
    assert np.all(scores > 0.8) and np.all(scores <= 1)
    # Seeded models: worker processes and the main process agree exactly.
    np.testing.assert_array_equal(scores, cross_val_score(clf, X, y, cv=5, n_jobs=1))
    r2 = cross_val_score(HistGBDTRegressor(max_iter=40, random_state=0), *regression,
                         cv=KFold(4, shuffle=True, random_state=0), n_jobs=N_JOBS)
    assert np.all(r2 > 0.7)
    mse = cross_val_score(HistGBDTRegressor(max_iter=40, random_state=0), *regression,
                          cv=4, scoring="neg_mean_squared_error")
    assert np.all(mse < 0) and np.all(-mse < np.var(regression[1]))


def test_cross_validate_returns_fitted_estimators(classification):
    X, y = classification
    result = cross_validate(HistGBDTClassifier(max_iter=10, random_state=0), X, y, cv=3,
                            n_jobs=N_JOBS, return_estimator=True,
                            scoring=["accuracy", "neg_log_loss"])
    for est in result["estimator"]:
        assert est.n_iter_ == 10
        np.testing.assert_array_equal(est.classes_, [0, 1])
    assert np.all(result["test_accuracy"] > 0.8)
    assert np.all(result["test_neg_log_loss"] < 0)


# -------------------------------------------------------------- calibration
@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_calibrated_classifier_cv(method):
    X, y = make_classification(n_samples=1000, n_features=10, n_informative=4,
                               flip_y=0.1, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    # Many deep rounds on noisy labels: over-confident probabilities.
    overfit = HistGBDTClassifier(max_iter=100, learning_rate=0.3, min_samples_leaf=2,
                                 early_stopping=False, random_state=0)
    raw = overfit.fit(X_train, y_train).predict_proba(X_test)
    calibrated = CalibratedClassifierCV(overfit, method=method, cv=3, n_jobs=N_JOBS)
    proba = calibrated.fit(X_train, y_train).predict_proba(X_test)
    assert len(calibrated.calibrated_classifiers_) == 3
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    assert log_loss(y_test, proba) < 0.7 * log_loss(y_test, raw)
    assert brier_score_loss(y_test, proba[:, 1]) < brier_score_loss(y_test, raw[:, 1])
    assert calibrated.score(X_test, y_test) > 0.75


def test_calibrating_a_prefit_model():
    X, y = make_classification(n_samples=900, n_features=6, n_classes=3,
                               n_informative=4, random_state=0)
    X_fit, X_cal, y_fit, y_cal = train_test_split(X, y, random_state=0)
    model = HistGBDTClassifier(max_iter=30, random_state=0).fit(X_fit, y_fit)
    before = model.predict(X)
    calibrated = CalibratedClassifierCV(FrozenEstimator(model)).fit(X_cal, y_cal)
    proba = calibrated.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_array_equal(model.predict(X), before)  # left untouched


# --------------------------------------------------------------- inspection
def _two_informative(n=800, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 5))
    y = 3 * X[:, 0] + np.sin(3 * X[:, 1]) + 0.05 * rng.normal(size=n)
    return X, y


def test_permutation_importance():
    X, y = _two_informative()
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    model = HistGBDTRegressor(max_iter=60, random_state=0).fit(X_train, y_train)
    result = permutation_importance(model, X_test, y_test, n_repeats=5, random_state=0,
                                    n_jobs=N_JOBS)
    importances = result.importances_mean
    assert result.importances.shape == (5, 5)
    assert set(np.argsort(importances)[-2:]) == {0, 1}
    assert importances[0] > 1.0  # breaking x0 destroys most of R²
    assert np.all(np.abs(importances[2:]) < 0.02)
    # The same through a pipeline and a scorer name.
    pipe = make_pipeline(StandardScaler(), clone(model)).fit(X_train, y_train)
    by_mse = permutation_importance(pipe, X_test, y_test, n_repeats=3, random_state=0,
                                    scoring="neg_mean_squared_error")
    assert np.argmax(by_mse.importances_mean) == 0


def test_partial_dependence():
    X, y = _two_informative()
    model = HistGBDTRegressor(max_iter=80, random_state=0).fit(X, y)
    pd0 = partial_dependence(model, X, [0], grid_resolution=20)
    grid, avg = pd0["grid_values"][0], pd0["average"][0]
    assert grid.shape == (20,) and avg.shape == (20,)
    # y = 3 x0 + ...: an increasing line of slope ~3.
    assert np.all(np.diff(avg) >= -0.05)
    slope = np.polyfit(grid, avg, 1)[0]
    assert 2.5 < slope < 3.5
    # An unused feature gives a flat curve.
    flat = partial_dependence(model, X, [3], grid_resolution=20)["average"][0]
    assert np.ptp(flat) < 0.1
    # Two-way dependence and individual curves have the documented shapes.
    both = partial_dependence(model, X, [(0, 1)], grid_resolution=10)
    assert both["average"].shape == (1, 10, 10)
    ice = partial_dependence(model, X[:50], [1], kind="individual", grid_resolution=10)
    assert ice["individual"].shape == (1, 50, 10)


def test_partial_dependence_of_a_classifier(classification):
    X, y = classification
    model = HistGBDTClassifier(max_iter=30, random_state=0).fit(X, y)
    for response_method in ("predict_proba", "decision_function"):
        result = partial_dependence(model, X, [0], response_method=response_method,
                                    grid_resolution=15)
        assert result["average"].shape == (1, 15)
    proba = partial_dependence(model, X, [0], response_method="predict_proba",
                               grid_resolution=15)["average"]
    assert np.all((proba >= 0) & (proba <= 1))


# --------------------------------------------------------------- threads
class ThreadCountingRegressor(HistGBDTRegressor):
    """Records, in the process that fits it, how many threads the fit used.

    ``resolved_n_threads_`` is the count hgbt resolves for ``n_threads``,
    ``omp_limit_`` the OMP_NUM_THREADS of the process (loky sets it in its
    workers), ``extra_threads_`` the most OS threads alive during the fit
    minus those alive before (and minus the sampling thread).
    """

    def fit(self, X, y, **fit_params):
        self.pid_ = os.getpid()
        self.omp_limit_ = os.environ.get("OMP_NUM_THREADS")
        self.resolved_n_threads_ = effective_n_threads(self.n_threads)
        before = _n_os_threads()
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], _n_os_threads())
                time.sleep(0.0005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            super().fit(X, y, **fit_params)
        finally:
            done.set()
            sampler.join()
        self.extra_threads_ = peak[0] - before - 1
        return self


def _n_os_threads():
    return len(os.listdir("/proc/self/task"))


def _threads_scorer(estimator, X, y):
    return estimator.extra_threads_


def _resolved_scorer(estimator, X, y):
    return estimator.resolved_n_threads_


def _pid_scorer(estimator, X, y):
    return estimator.pid_


def _big_regression(n=20_000, seed=0):
    # Large enough that every kernel runs in an OpenMP region.
    X = np.random.RandomState(seed).uniform(size=(n, 10))
    return X, X[:, 0] + X[:, 1] ** 2


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="counts threads in /proc/self/task (Linux)")
needs_openmp = pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP")


def _worker_budget(n_jobs):
    # joblib's loky backend sets OMP_NUM_THREADS in its workers: the parent's
    # value if it has one, else cpu_count // n_jobs.
    return int(os.environ.get("OMP_NUM_THREADS", max(joblib.cpu_count() // n_jobs, 1)))


@needs_proc
def test_no_oversubscription_in_loky_workers():
    X, y = _big_regression()
    result = cross_validate(
        ThreadCountingRegressor(max_iter=8, early_stopping=False, random_state=0), X, y,
        cv=4, n_jobs=N_JOBS, return_estimator=True)
    budget = _worker_budget(N_JOBS)
    for est in result["estimator"]:
        assert est.pid_ != os.getpid()  # fitted in a worker process
        assert est.omp_limit_ == str(budget)
        assert est.resolved_n_threads_ <= budget
        if "OMP_NUM_THREADS" not in os.environ:
            assert est.resolved_n_threads_ * N_JOBS <= max(joblib.cpu_count(), N_JOBS)
        assert est.extra_threads_ <= budget


@needs_proc
def test_no_oversubscription_in_a_grid_search():
    X, y = _big_regression()
    search = GridSearchCV(
        ThreadCountingRegressor(max_iter=5, early_stopping=False, random_state=0),
        {"max_leaf_nodes": [7, 15]}, cv=2, n_jobs=N_JOBS, refit="r2",
        scoring={"r2": "r2", "threads": _threads_scorer, "resolved": _resolved_scorer,
                 "pid": _pid_scorer})
    search.fit(X, y)
    budget = _worker_budget(N_JOBS)
    res = search.cv_results_
    for split in range(2):
        assert np.all(res[f"split{split}_test_pid"] != os.getpid())
        assert np.all(res[f"split{split}_test_resolved"] <= budget)
        assert np.all(res[f"split{split}_test_threads"] <= budget)
    assert search.best_score_ > 0.5  # five rounds of learning rate 0.1


@needs_openmp
def test_threadpool_limits_cap_the_default_thread_count():
    with threadpool_limits(limits=1):
        assert effective_n_threads(None) == 1
        assert effective_n_threads(3) == 3  # an explicit count is honoured
    with threadpool_limits(limits=1, user_api="openmp"):
        assert effective_n_threads(None) == 1
    assert 1 <= effective_n_threads(None) <= len(os.sched_getaffinity(0))


_COUNT_SCRIPT = textwrap.dedent("""
    import json, os, sys, threading, time
    from contextlib import nullcontext
    import numpy as np
    from threadpoolctl import threadpool_limits
    from hgbt import HistGBDTRegressor
    from hgbt.core._openmp import effective_n_threads

    n_threads, limit = json.loads(sys.argv[1])
    X = np.random.RandomState(0).uniform(size=(20000, 10))
    y = X[:, 0] + X[:, 1] ** 2

    def count():
        return len(os.listdir("/proc/self/task"))

    peak, done, boosting = [0], threading.Event(), threading.Event()
    def sample():
        while not done.is_set():
            if boosting.is_set():
                peak[0] = max(peak[0], count())
            time.sleep(0.0005)

    class FromTheThirdRound:
        # the binning's short-lived pool threads stay listed in /proc for a
        # millisecond or two after they end: count the rounds' threads only
        def before_round(self, iteration, history, estimator):
            if iteration == 2:
                boosting.set()

    with threadpool_limits(limits=limit) if limit else nullcontext():
        resolved = effective_n_threads(n_threads)
        before = count()
        peak[0] = before + 1
        sampler = threading.Thread(target=sample)
        sampler.start()
        HistGBDTRegressor(max_iter=15, n_threads=n_threads, early_stopping=False,
                          random_state=0).fit(X, y, callbacks=[FromTheThirdRound()])
        done.set()
        sampler.join()
    print(json.dumps({"resolved": resolved, "extra": peak[0] - before - 1}))
""")


def _count_threads_in_fresh_process(n_threads, limit, cwd):
    # Run in an empty directory, outside the source tree, so the installed
    # package is the one imported and no stray module (a ``/tmp/inspect.py``
    # broke CI) shadows the standard library: ``-c`` puts cwd on sys.path.
    out = subprocess.run([sys.executable, "-c", _COUNT_SCRIPT,
                          json.dumps([n_threads, limit])],
                         capture_output=True, text=True, timeout=300, check=True,
                         cwd=cwd)
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_proc
@needs_openmp
@pytest.mark.parametrize("n_threads, limit, resolved", [
    (None, 1, 1),   # threadpoolctl's limit caps the default
    (1, None, 1),
    (3, None, 3),   # more than the cores: still exactly what was asked
    (3, 1, 3),      # an explicit n_threads wins over threadpoolctl
])
def test_os_threads_follow_n_threads(n_threads, limit, resolved, tmp_path):
    # A fresh process: OpenMP pools of earlier tests do not blur the count.
    # The rounds run on ``resolved`` threads: ``resolved`` - 1 OpenMP workers
    # next to the calling thread (counted from the third round: the binning's
    # pool threads linger in /proc a moment after they end, which made a
    # count over the whole fit fail by chance on a busy machine).
    counted = _count_threads_in_fresh_process(n_threads, limit, tmp_path)
    assert counted["resolved"] == resolved
    assert counted["extra"] == resolved - 1


_FORK_SCRIPT = textwrap.dedent("""
    import os, select, sys, warnings
    import numpy as np
    from hgbt import HistGBDTRegressor

    rng = np.random.default_rng(0)
    X = rng.random((5000, 6))
    y = X[:, 0] + rng.normal(0, 0.1, 5000)
    if sys.argv[1] == "after":  # the parent runs OpenMP threads first
        HistGBDTRegressor(max_iter=3, n_threads=2).fit(X, y)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = HistGBDTRegressor(max_iter=3, n_threads=2).fit(X, y)
            model.predict(X)
        messages = [str(w.message) for w in caught if "forked" in str(w.message)]
        os.write(write, f"done {len(messages)}".encode())
        os._exit(0)
    ready, _, _ = select.select([read], [], [], 120)
    if not ready:  # the child hangs: end it, and say so
        os.kill(pid, 9)
        print("hang")
    else:
        print(os.read(read, 100).decode())
    os.waitpid(pid, 0)
""")


@pytest.mark.skipif(not hasattr(os, "fork") or not openmp_enabled(),
                    reason="fork and OpenMP threads")
@pytest.mark.parametrize("when, warnings", [("after", 1), ("before", 0)])
def test_a_process_forked_after_threads_runs_single_threaded(when, warnings, tmp_path):
    # GNU OpenMP's workers do not survive a fork: a child that opened a
    # parallel region after its parent had one hung there. Now it runs on
    # one thread and warns once; a child forked before any threads keeps them.
    result = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, when], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert result.stdout.strip() == f"done {warnings}", result.stdout + result.stderr[-2000:]
