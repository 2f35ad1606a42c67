"""The printers (hgbt/engine/progress.py): the verbose line and the progress bar
name the set and metric, show the pace and time left, and why the fit stopped."""
import io
import re
import sys
import types

import numpy as np
import pytest

from hgbt import HistGBDTRegressor
from hgbt.callbacks import LogPrinter, ProgressBar


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    return X, X[:, 0] + 0.3 * rng.normal(size=600)


def test_verbose_names_sets_metrics_pace_and_the_stop(data, capsys):
    X, y = data
    model = HistGBDTRegressor(max_iter=200, learning_rate=0.8, verbose=2,
                              n_iter_no_change=3, random_state=0, eval_metric="r2")
    model.fit(X[:400], y[:400], X_val=X[400:], y_val=y[400:])
    lines = capsys.readouterr().out.strip().splitlines()
    first = lines[0]
    assert first.startswith("[2/200] train loss: ")
    for part in ("train r2: ", "validation loss: ", "validation r2: "):
        assert part in first
    assert re.search(r"\([0-9.e+]+ rounds/s, [0-9.]+s left\)$", first)
    assert len(lines) == model.n_iter_ // 2 + 1
    last = lines[-1]
    assert last.startswith(f"Stopped after round {model.n_iter_} of 200: early stopping: "
                           "validation loss did not improve by more than tol=1e-07 for 3 "
                           "rounds")
    assert f"Best round {model.best_iteration_}: validation loss " in last


def test_log_printer_to_a_file_every_period(data):
    X, y = data
    out = io.StringIO()
    HistGBDTRegressor(max_iter=7, random_state=0, early_stopping=False).fit(
        X, y, callbacks=[LogPrinter(period=3, file=out)])
    lines = out.getvalue().splitlines()
    # nothing is scored: pace only; the last round is printed too
    assert [line.split("]")[0] for line in lines[:-1]] == ["[3/7", "[6/7", "[7/7"]
    assert "loss" not in lines[0] and "rounds/s" in lines[0]
    assert lines[-1].startswith("Stopped after round 7 of 7: max_iter reached.")


def test_plain_progress_bar(data):
    X, y = data
    out = io.StringIO()
    HistGBDTRegressor(max_iter=4, max_leaf_nodes=31, random_state=0).fit(
        X, y, eval_set=[(X[:100], y[:100])],
        callbacks=[ProgressBar(file=out, use_tqdm=False, width=8)])
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 4
    assert frames[1].startswith("[####----] 2/4 ") and "valid_0 loss " in frames[1]
    assert frames[-1].startswith("[########] 4/4")
    assert "rounds/s, " in frames[1] and "s left" in frames[1]
    assert "Stopped after round 4 of 4: max_iter reached." in text


def test_progress_bar_uses_tqdm_when_installed(data, monkeypatch):
    X, y = data
    made = []

    class FakeTqdm:
        def __init__(self, total, initial, file, unit):
            self.n, self.total, self.postfix, self.closed = initial, total, None, False
            made.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, text):
            self.postfix = text

        def close(self):
            self.closed = True

    module = types.ModuleType("tqdm.auto")
    module.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", module)
    out = io.StringIO()
    HistGBDTRegressor(max_iter=5, max_leaf_nodes=31, random_state=0).fit(
        X, y, eval_set=[(X[:100], y[:100])], callbacks=[ProgressBar(file=out)])
    (bar,) = made
    assert (bar.n, bar.total, bar.closed) == (5, 5, True)
    assert bar.postfix.startswith("valid_0 loss ")
    assert out.getvalue().startswith("Stopped after round 5 of 5")


def test_progress_bar_without_tqdm_falls_back(data, monkeypatch):
    X, y = data
    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    out = io.StringIO()
    HistGBDTRegressor(max_iter=2, random_state=0).fit(X, y, callbacks=[ProgressBar(file=out)])
    assert out.getvalue().startswith("\r[")
    with pytest.raises(ImportError):
        HistGBDTRegressor(max_iter=2).fit(X, y, callbacks=[ProgressBar(use_tqdm=True)])


def _runs_to_max_iter(data, **params):
    X, y = data
    # the hold-out compares the tree sizes ('auto' would cross-validate these rows)
    return HistGBDTRegressor(max_iter=3, n_iter_no_change=50, random_state=0,
                             early_stopping=True, **params).fit(X, y)


def test_the_printers_say_when_a_second_tree_size_is_fitted_and_which_is_kept(data,
                                                                             capsys):
    model = _runs_to_max_iter(data, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 + 1 + 3 + 1
    assert lines[3] == ("Ran to max_iter with max_leaf_nodes=31, l2_regularization=1: "
                        "fitting again with max_leaf_nodes=63, l2_regularization=10 "
                        "(max_leaf_nodes='auto'); the better validation loss is kept.")
    assert lines[4].startswith("[1/3] train loss: ")
    first, second = (-t["score"] for t in model.tree_size_scores_)
    assert lines[-1].startswith("Stopped after round 3 of 3: max_iter reached.")
    assert lines[-1].endswith(
        f" Kept max_leaf_nodes={model.max_leaf_nodes_}, "
        f"l2_regularization={model.l2_regularization_:g} (validation loss: "
        f"{first:.6g} with 31 leaves, {second:.6g} with 63 leaves).")
    out = io.StringIO()
    X, y = data
    HistGBDTRegressor(max_iter=3, n_iter_no_change=50, random_state=0,
                      early_stopping=True).fit(
        X, y, callbacks=[ProgressBar(file=out, use_tqdm=False, width=6)])
    text = out.getvalue()
    # the bar of each size, each closed by its line
    assert text.count("] 3/3 ") == 2 and lines[3] + "\n" in text and "Kept" in text
