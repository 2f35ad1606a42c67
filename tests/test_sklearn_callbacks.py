"""scikit-learn's experimental callbacks on hgbt's rounds
(hgbt/estimators/sklearn_callbacks.py): each round a subtask, a callback's
True stops the fit, ``fitted_estimator`` is the model of the rounds so far."""
import pickle

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.metrics import r2_score

from hgbt import HistGBDTRegressor

sk_callback = pytest.importorskip("sklearn.callback")


@pytest.fixture(scope="module")
def data():
    return make_regression(n_samples=600, n_features=5, noise=5.0, random_state=0)


class TaskRecorder:
    """A scikit-learn FitCallback recording tasks; True after ``stop_after`` rounds."""

    def __init__(self, stop_after=None):
        self.stop_after = stop_after
        self.events, self.fitted = [], []

    def setup(self, estimator, context):
        self.events.append("setup")

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        self.events.append(("begin", context.task_name))

    def on_fit_task_end(self, estimator, context, *, X=None, fitted_estimator=None):
        self.events.append(("end", context.task_name))
        if context.task_name == "round":
            self.fitted.append(fitted_estimator.predict(X[:20]))
            return self.stop_after is not None and len(self.fitted) == self.stop_after
        return False

    def teardown(self, estimator, context):
        self.events.append("teardown")


def test_rounds_are_subtasks_and_fitted_estimator_is_the_rounds_so_far(data):
    X, y = data
    recorder = TaskRecorder()
    model = HistGBDTRegressor(max_iter=3, random_state=0,
                              early_stopping=False).set_callbacks(recorder)
    model.fit(X, y)
    assert recorder.events == ["setup", ("begin", "fit")] + [
        ("begin", "round"), ("end", "round")] * 3 + [("end", "fit"), "teardown"]
    for got, staged in zip(recorder.fitted, model.staged_predict(X[:20])):
        np.testing.assert_array_equal(got, staged)
    # the callbacks and their contexts are not part of the model
    assert not hasattr(model, "_callback_fit_ctx")
    pickle.loads(pickle.dumps(model)).predict(X[:2])


def test_a_true_from_a_sklearn_callback_stops_the_fit(data, tmp_path):
    X, y = data
    model = HistGBDTRegressor(max_iter=50).set_callbacks(TaskRecorder(stop_after=4))
    model.fit(X, y)
    assert model.n_iter_ == 4
    model.save_model(tmp_path / "m.json")  # the callbacks are not written


def test_scoring_monitor_logs_each_round(data):
    X, y = data
    monitor = sk_callback.ScoringMonitor(scoring="r2")
    model = HistGBDTRegressor(max_iter=5, random_state=0, eval_metric="r2", early_stopping=False)
    model.set_callbacks(monitor).fit(X, y)
    rows = [row for row in monitor.get_logs().data if row["task_name"] == "round"]
    assert [row["r2"] for row in rows] == pytest.approx(
        model.evals_result_["train"]["r2"][1:], rel=1e-12)
    assert rows[-1]["r2"] == pytest.approx(r2_score(y, model.predict(X)))


def test_a_second_tree_size_adds_its_rounds_as_subtasks(data):
    # max_leaf_nodes='auto' fits a second size when the first runs to max_iter:
    # its rounds are subtasks of the same fit task (within max_subtasks)
    X, y = data
    recorder = TaskRecorder()
    model = HistGBDTRegressor(max_iter=3, n_iter_no_change=50,
                              random_state=0).set_callbacks(recorder)
    model.fit(X, y, X_val=X[:100], y_val=y[:100])  # the hooks get X itself
    assert len(model.tree_size_scores_) == 2
    assert recorder.events == ["setup", ("begin", "fit")] + [
        ("begin", "round"), ("end", "round")] * 6 + [("end", "fit"), "teardown"]
    # the last subtask's model is the second size's, the first's its third
    kept = recorder.fitted[-1 if model.max_leaf_nodes_ == 63 else 2]
    np.testing.assert_array_equal(kept, model.predict(X[:20]))
