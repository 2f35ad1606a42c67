"""Callbacks (hgbt/engine/callbacks.py): the protocol, each built-in, and a
checkpoint resumed with warm start giving the uninterrupted model bit for bit."""
import io
import threading

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor, load_model
from hgbt.callbacks import (Callback, Checkpoint, EarlyStopping, EvalHistory, LogPrinter,
                            ProgressBar, StopOnEvent, TimeBudget)
from hgbt.engine.callbacks import CallbackRunner
from fitted import rounds, tree_size_comparing
from tree_size_data import SIZED, sized_problem


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 5))
    y = X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=800)
    return X, y


class Recorder(Callback):
    """Records every hook call, and what the estimator predicts after each round."""

    def __init__(self, X=None, stop_after=None):
        self.X, self.stop_after = X, stop_after
        self.calls, self.predictions = [], []

    def on_fit_begin(self, history, estimator):
        self.calls.append(("begin", history.n_rounds))

    def before_round(self, iteration, history, estimator):
        self.calls.append(("before", iteration))

    def after_round(self, iteration, history, estimator):
        self.calls.append(("after", iteration, history.n_rounds, estimator.n_iter_))
        if self.X is not None:
            self.predictions.append(estimator.predict(self.X))
        if self.stop_after is not None and iteration + 1 == self.stop_after:
            self.reason = f"enough after {iteration + 1}"
            return "stop"
        return None

    def on_fit_end(self, history, estimator):
        self.calls.append(("end", history.n_rounds, history.stop_reason))


def test_hooks_in_order_and_the_estimator_is_a_model_of_the_rounds(data):
    X, y = data
    recorder = Recorder(X[:50])
    model = HistGBDTRegressor(max_iter=3, max_leaf_nodes=31, random_state=0).fit(
        X, y, callbacks=[recorder])
    assert recorder.calls == [("begin", 0), ("before", 0), ("after", 0, 1, 1),
                              ("before", 1), ("after", 1, 2, 2), ("before", 2),
                              ("after", 2, 3, 3), ("end", 3, "max_iter reached")]
    for got, staged in zip(recorder.predictions, model.staged_predict(X[:50])):
        np.testing.assert_array_equal(got, staged)


def test_returning_stop_ends_the_fit_cleanly(data):
    X, y = data
    recorder = Recorder(stop_after=4)
    model = HistGBDTRegressor(max_iter=50, random_state=0).fit(X, y, callbacks=[recorder])
    assert model.n_iter_ == 4 and len(rounds(model)) == 4
    assert recorder.calls[-1] == ("end", 4, "enough after 4")
    full = HistGBDTRegressor(max_iter=50, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), full.predict(X, iteration_range=(0, 4)))


def test_a_plain_object_with_one_hook_and_true_stops(data):
    X, y = data

    class StopAtTwo:
        def before_round(self, iteration, history, estimator):
            return iteration == 2

    model = HistGBDTRegressor(max_iter=10).fit(X, y, callbacks=[StopAtTwo()])
    assert model.n_iter_ == 2


def test_early_stopping_callback_watches_a_named_set_and_metric(data):
    X, y = data
    es = EarlyStopping(n_iter_no_change=4, tol=0.0, set_name="b", metric="r2")
    model = HistGBDTRegressor(max_iter=300, learning_rate=0.7, random_state=0,
                              eval_metric="r2", max_leaf_nodes=63, min_samples_leaf=5)
    model.fit(X[:500], y[:500], eval_set=[(X[500:650], y[500:650]), (X[650:], y[650:])],
              eval_names=["a", "b"], callbacks=[es])
    watched = model.evals_result_["b"]["r2"]
    assert model.n_iter_ < 300
    best = int(np.argmax(watched))
    # stopped exactly n_iter_no_change rounds after the best
    assert model.n_iter_ == best + 4 and max(watched[-4:]) <= watched[best]
    assert es.reason.startswith("early stopping: b r2 did not improve")
    with pytest.raises(ValueError, match="does not score"):
        HistGBDTRegressor(max_iter=3).fit(
            X, y, callbacks=[EarlyStopping(set_name="nope", metric="loss")])


def test_time_budget_stops_before_a_round_that_would_overrun(data):
    X, y = data
    ticks = iter(np.arange(0.0, 1000.0, 1.0))  # every clock read is 1 s later
    budget = TimeBudget(6.5, clock=lambda: next(ticks))
    model = HistGBDTRegressor(max_iter=100).fit(X, y, callbacks=[budget])
    # reads: begin 0; round r: before at 2r+1, after at 2r+2 (round takes 1 s)
    # before round 4 (clock 7): 7 - 0 + 1 > 6.5 -> stop after 3 rounds
    assert model.n_iter_ == 3
    assert budget.reason.startswith("time budget: 6.5 s would be exceeded by round 4")
    none = HistGBDTRegressor(max_iter=5).fit(X, y, callbacks=[TimeBudget(0.0)])
    assert none.n_iter_ == 0 and none.predict(X[:3]).shape == (3,)


def test_stop_on_event_stops_a_fit_in_another_thread(data):
    X, y = data
    event, started = threading.Event(), threading.Event()

    class Started(Callback):
        def after_round(self, iteration, history, estimator):
            started.set()

    model = HistGBDTClassifier(max_iter=100_000, learning_rate=0.01)
    stopper = StopOnEvent(event)
    thread = threading.Thread(target=model.fit, args=(X, y > 0),
                              kwargs=dict(callbacks=[Started(), stopper]))
    thread.start()
    assert started.wait(60)
    event.set()
    thread.join(60)
    assert not thread.is_alive()
    assert 0 < model.n_iter_ < 100_000 and len(rounds(model)) == model.n_iter_
    assert model.predict(X[:5]).shape == (5,)


@pytest.mark.parametrize("estimator, target", [
    (HistGBDTRegressor, lambda y: y),
    (HistGBDTClassifier, lambda y: np.digitize(y, [-1.0, 0.0])),  # 3 classes
])
def test_checkpoint_resumed_with_warm_start_is_the_uninterrupted_model(
        data, tmp_path, estimator, target):
    X, y = data
    y = target(y)
    params = dict(max_iter=30, random_state=0, early_stopping=True, n_iter_no_change=100,
                  subsample=0.8, colsample_bynode=0.7, eval_metric="r2"
                  if estimator is HistGBDTRegressor else "accuracy")
    whole = estimator(**params).fit(X, y)
    checkpoint = Checkpoint(tmp_path / "model-{round}.json", every=5, at_end=False)
    interrupted = estimator(**params).fit(X, y, callbacks=[checkpoint,
                                                           Recorder(stop_after=13)])
    assert interrupted.n_iter_ == 13
    assert checkpoint.saved == [str(tmp_path / f"model-{k}.json") for k in (5, 10)]
    resumed = load_model(tmp_path / "model-10.json")
    assert resumed.n_iter_ == 10
    resumed.set_params(warm_start=True).fit(X, y)
    assert resumed.n_iter_ == whole.n_iter_ == 30
    for ours, theirs in zip(rounds(resumed), rounds(whole)):
        for a, b in zip(ours, theirs):
            assert a.nodes.tobytes() == b.nodes.tobytes()
    assert resumed.predict(X).tobytes() == whole.predict(X).tobytes()
    assert resumed.evals_result_ == whole.evals_result_


def test_checkpoint_at_end_and_atomic_overwrite(data, tmp_path):
    X, y = data
    checkpoint = Checkpoint(tmp_path / "last.json", every=4)
    model = HistGBDTRegressor(max_iter=10, max_leaf_nodes=31, random_state=0).fit(
        X, y, callbacks=[checkpoint])
    assert checkpoint.saved == [str(tmp_path / "last.json")] * 3  # rounds 4, 8, end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.json"]
    assert load_model(tmp_path / "last.json").predict(X).tobytes() == \
        model.predict(X).tobytes()
    with pytest.raises(ValueError, match="every"):
        Checkpoint(tmp_path / "x.json", every=0)


def test_early_stopping_after_an_unscored_warm_start_compares_scored_rounds(data):
    X, y = data
    model = HistGBDTRegressor(max_iter=5, warm_start=True, early_stopping=False,
                              learning_rate=0.05, random_state=0).fit(X, y)
    model.set_params(max_iter=30, early_stopping=True, validation_fraction=None,
                     n_iter_no_change=3, tol=0.0).fit(X, y)
    # the 5 unscored rounds are NaN, not a reference that nothing beats
    losses = model.evals_result_["train"]["loss"]
    assert np.isnan(losses[:6]).all() and model.n_iter_ == 30


def test_the_estimator_is_synced_only_for_an_after_round_hook():
    # The per-round sync (the estimator as a model of the rounds so far) runs
    # only when some callback has its own after_round; the base class's no-op
    # and before_round alone (as the shutdown callback every fit carries) skip it.
    from types import SimpleNamespace
    from hgbt.engine.callbacks import CallbackRunner

    class BeforeOnly(Callback):
        def before_round(self, iteration, history, estimator):
            return None

    class After(Callback):
        def after_round(self, iteration, history, estimator):
            return None

    plain = SimpleNamespace(after_round=lambda iteration, history, estimator: None)
    for callbacks, expected in (([BeforeOnly()], 0), ([Callback()], 0),
                                ([BeforeOnly(), After()], 1), ([plain], 1)):
        synced = []
        runner = CallbackRunner(callbacks, estimator=None, sync=synced.append)
        runner.after_round(0, "history")
        assert len(synced) == expected, callbacks
        runner.end("history")  # the end always syncs
        assert len(synced) == expected + 1


# -------------------------------------------- max_leaf_nodes='auto': a second fit
class RestartRecorder(Recorder):
    def on_restart(self, history, estimator):
        self.calls.append(("restart", history.n_rounds, history.tree_size["max_leaf_nodes"]))


@pytest.mark.parametrize("winner", [0, 1])
def test_hooks_around_a_second_tree_size(winner):
    X, y = sized_problem(winner)
    recorder = RestartRecorder(X[:20])
    model = HistGBDTRegressor(**dict(SIZED, max_iter=2)).fit(X, y, callbacks=[recorder])
    rounds = [("before", 0), ("after", 0, 1, 1), ("before", 1), ("after", 1, 2, 2)]
    assert recorder.calls == [("begin", 0), *rounds, ("restart", 0, 63), *rounds,
                              ("end", 2, "max_iter reached")]
    # after each round the estimator was a model of that size's rounds so far
    first = HistGBDTRegressor(**dict(SIZED, max_iter=2), max_leaf_nodes=31,
                              l2_regularization=1.0).fit(X, y)
    second = HistGBDTRegressor(**dict(SIZED, max_iter=2), max_leaf_nodes=63,
                               l2_regularization=10.0).fit(X, y)
    staged = list(first.staged_predict(X[:20])) + list(second.staged_predict(X[:20]))
    for got, want in zip(recorder.predictions, staged):
        np.testing.assert_array_equal(got, want)
    assert len(model.tree_size_scores_) == 2


@pytest.mark.parametrize("winner", [0, 1])
def test_checkpoint_at_end_is_the_size_kept(tmp_path, winner):
    # both sizes run 6 rounds: the second fit's last save has as many rounds
    # as the model kept, which must still be saved when the first is kept
    X, y = sized_problem(winner)
    checkpoint = Checkpoint(tmp_path / "last.json", every=3)
    model = HistGBDTRegressor(**SIZED).fit(X, y, callbacks=[checkpoint])
    assert model.max_leaf_nodes_ == (31, 63)[winner]
    assert len(checkpoint.saved) == 5  # 3, 6, 3, 6, and the end's, with both scores
    saved = load_model(tmp_path / "last.json")
    assert saved.predict(X).tobytes() == model.predict(X).tobytes()
    assert saved.tree_size_scores_ == model.tree_size_scores_


class StopInSecondFit(Callback):
    """Stop the second tree size's fit after ``rounds`` rounds."""

    def __init__(self, rounds):
        self.rounds, self.second = rounds, False

    def on_restart(self, history, estimator):
        self.second = True

    def after_round(self, iteration, history, estimator):
        return "stop" if self.second and iteration + 1 == self.rounds else None


@pytest.mark.parametrize("winner", [0, 1])
@pytest.mark.parametrize("saved_round, stop", [(3, None), (4, 5)])
def test_checkpoint_resumed_anywhere_is_the_uninterrupted_model(tmp_path, winner,
                                                                saved_round, stop):
    # saved during the first size (round 3 of 6, stopped there) or during the
    # second (round 4, the fit stopped at 5): resumed, the fit compares the
    # sizes as the uninterrupted one does, regrowing the first if it wins
    X, y = sized_problem(winner)
    whole = HistGBDTRegressor(**SIZED).fit(X, y)
    checkpoint = Checkpoint(tmp_path / "model-{round}.json", every=1, at_end=False)
    stopper = Recorder(stop_after=3) if stop is None else StopInSecondFit(stop)
    HistGBDTRegressor(**SIZED).fit(X, y, callbacks=[checkpoint, stopper])
    resumed = load_model(tmp_path / f"model-{saved_round}.json")
    assert resumed.n_iter_ == saved_round
    assert resumed.max_leaf_nodes_ == (31 if stop is None else 63)
    resumed.set_params(warm_start=True).fit(X, y)
    for ours, theirs in zip(rounds(resumed), rounds(whole)):
        assert ours[0].nodes.tobytes() == theirs[0].nodes.tobytes()
    assert resumed.predict(X).tobytes() == whole.predict(X).tobytes()
    assert resumed.evals_result_ == whole.evals_result_
    assert resumed.tree_size_scores_ == whole.tree_size_scores_
    assert resumed.max_leaf_nodes_ == whole.max_leaf_nodes_


def test_the_estimator_is_synced_only_for_callbacks_that_read_it():
    # the built-ins read only the history: no per-round sync for them
    synced = []
    history = EvalHistory(watched=("train", "loss"), greater_is_better={"loss": False})
    history.record({"train": {"loss": 1.0}}, 0)
    builtins = [EarlyStopping(), TimeBudget(60), StopOnEvent(threading.Event()),
                LogPrinter(file=io.StringIO()), ProgressBar(file=io.StringIO(),
                                                            use_tqdm=False)]
    runner = CallbackRunner(builtins, None, synced.append)
    runner.begin(history)
    history.record({"train": {"loss": 0.5}}, 1)
    runner.after_round(0, history)
    assert synced == []
    class Reader(Callback):  # the user's: it may read the estimator
        def after_round(self, iteration, history, estimator):
            pass

    runner = CallbackRunner(builtins + [Reader()], None, synced.append)
    runner.after_round(0, history)
    assert synced == [history]


class StopAt(Callback):
    """Stop after round ``rounds`` (a warm start's rounds counted) of the fit
    with trees of ``leaves`` leaves."""

    def __init__(self, rounds, leaves):
        self.rounds, self.leaves = rounds, leaves

    def after_round(self, iteration, history, estimator):
        if history.tree_size["max_leaf_nodes"] == self.leaves and iteration + 1 == self.rounds:
            return "stop"
        return None


@pytest.mark.parametrize("stop_leaves", [63, 31])
def test_a_resumed_comparison_stopped_by_a_callback_waits_for_the_next_warm_start(
        tmp_path, stop_leaves):
    # Saved during the second size; resumed, a callback stops the second fit
    # (63) or the first size grown again because it scored better (31): the
    # model is the second size's as far as it went, the comparison still
    # open, never a model with no rounds; one more warm start finishes it.
    X, y = sized_problem(0)
    whole = HistGBDTRegressor(**SIZED).fit(X, y)
    assert whole.max_leaf_nodes_ == 31
    checkpoint = Checkpoint(tmp_path / "model-{round}.json", every=1, at_end=False)
    HistGBDTRegressor(**SIZED).fit(X, y, callbacks=[checkpoint, StopInSecondFit(4)])
    resumed = load_model(tmp_path / "model-3.json").set_params(warm_start=True)
    resumed.fit(X, y, callbacks=[StopAt(5 if stop_leaves == 63 else 2, stop_leaves)])
    assert resumed.max_leaf_nodes_ == 63
    assert resumed.n_iter_ == (5 if stop_leaves == 63 else 6)
    assert len(resumed.tree_size_scores_) == 1 and tree_size_comparing(resumed)
    resumed.fit(X, y)
    assert resumed.predict(X).tobytes() == whole.predict(X).tobytes()
    assert resumed.tree_size_scores_ == whole.tree_size_scores_
    assert not tree_size_comparing(resumed)


def test_a_warm_start_of_a_fit_that_compared_nothing_keeps_its_trees():
    X, y = sized_problem(1)
    model = HistGBDTRegressor(**dict(SIZED, max_iter=3, early_stopping=False),
                              warm_start=True).fit(X, y)
    first = [t[0].nodes.tobytes() for t in rounds(model)]
    model.set_params(max_iter=8, early_stopping=True).fit(X, y, X_val=X[:300],
                                                          y_val=y[:300])
    assert model.n_iter_ == 8 and model.max_leaf_nodes_ == 31
    assert [t[0].nodes.tobytes() for t in rounds(model)[:3]] == first
    assert model.tree_size_scores_ == []


def test_the_estimator_is_a_model_of_the_new_rounds_in_on_restart(tmp_path):
    X, y = sized_problem(1)
    seen = []

    class SaveOnRestart(Callback):
        def on_restart(self, history, estimator):
            seen.append((estimator.n_iter_, estimator.max_leaf_nodes_))
            estimator.save_model(tmp_path / "restart.json")

    HistGBDTRegressor(**SIZED).fit(X, y, callbacks=[SaveOnRestart()])
    assert seen == [(0, 63)]
    assert load_model(tmp_path / "restart.json").n_iter_ == 0


def test_checkpoint_at_end_is_the_model_truncated_at_its_best_round(data, tmp_path):
    X, y = data
    checkpoint = Checkpoint(tmp_path / "last.json", every=100)
    model = HistGBDTRegressor(max_iter=60, learning_rate=0.8, n_iter_no_change=20,
                              max_leaf_nodes=31, truncate_at_best=True,
                              random_state=0).fit(X, y, callbacks=[checkpoint])
    assert model.n_iter_ == model.best_iteration_ < 60
    saved = load_model(tmp_path / "last.json")
    assert saved.n_iter_ == model.n_iter_
    assert saved.predict(X).tobytes() == model.predict(X).tobytes()


def test_a_subclass_that_reads_the_estimator_is_synced():
    synced = []
    history = EvalHistory(watched=("train", "loss"), greater_is_better={"loss": False})
    history.record({"train": {"loss": 1.0}}, 0)

    class Printer(LogPrinter):  # inherits reads_estimator = False, its own hook reads
        def after_round(self, iteration, history, estimator):
            pass

    CallbackRunner([Printer(file=io.StringIO())], None, synced.append).after_round(
        0, history)
    assert synced == [history]
