"""EvalHistory (hgbt/engine/history.py): recording, padding, best round, pace."""
import math

import pytest

from hgbt.engine.history import EvalHistory


def _history():
    return EvalHistory(watched=("valid", "loss"),
                       greater_is_better={"loss": False, "r2": True}, max_iter=10)


def test_entries_are_indexed_by_rounds_and_padded_with_nan():
    h = _history()
    h.record({"train": {"loss": 3.0}, "valid": {"loss": 4.0}}, 0)
    h.record({"train": {"loss": 2.0}, "valid": {"loss": 3.5}}, 1)
    # a metric first scored at round 2 and a set no longer scored
    h.record({"valid": {"loss": 3.7, "r2": 0.5}}, 2)
    assert h.evals["valid"]["loss"] == [4.0, 3.5, 3.7]
    assert math.isnan(h.evals["valid"]["r2"][0]) and h.evals["valid"]["r2"][2] == 0.5
    assert h.evals["train"]["loss"][:2] == [3.0, 2.0] and math.isnan(h.evals["train"]["loss"][2])
    assert h.n_rounds == 2


def test_best_iteration_follows_the_metric_direction_first_of_equals():
    h = _history()
    for i, (loss, r2) in enumerate([(4.0, 0.1), (3.0, 0.4), (3.0, 0.4), (3.5, 0.3)]):
        h.record({"valid": {"loss": loss, "r2": r2}}, i)
    assert h.best_iteration() == 1 and h.best_score() == 3.0
    assert h.best_iteration("valid", "r2") == 1
    assert h.oriented() == [-4.0, -3.0, -3.0, -3.5]
    assert h.describe() == "valid loss"
    assert EvalHistory().best_iteration() is None


def test_best_iteration_skips_nan():
    h = _history()
    h.evals = {"valid": {"loss": [math.nan, 2.0, 1.0, math.nan]}}
    assert h.best_iteration() == 2


def test_pace_and_time_left(monkeypatch):
    h = _history()
    clock = iter([100.0, 104.0, 104.0])
    monkeypatch.setattr("hgbt.engine.history.time.perf_counter", lambda: next(clock))
    h.start(2)  # a warm start's 2 rounds
    h.n_rounds = 4
    assert h.rounds_per_second() == pytest.approx(0.5)  # 2 rounds in 4 s
    assert h.seconds_left() == pytest.approx(12.0)  # 6 rounds to go


def test_recording_after_dropped_rounds_replaces_their_entries():
    # a model truncated at its best round and warm-started again
    h = _history()
    for i, loss in enumerate([4.0, 3.0, 3.5, 3.6]):
        h.record({"valid": {"loss": loss}}, i)
    h.record({"valid": {"loss": 2.5}}, 2)  # rounds after the first 1 dropped, one grown
    assert h.evals["valid"]["loss"] == [4.0, 3.0, 2.5]
