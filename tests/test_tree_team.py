"""TreeTeam: a round's trees grown side by side give the model of one after another."""
import threading
import time

import numpy as np
import pytest

from hgbt import HistGBDTClassifier
from hgbt.datasets import make_multiclass_task
from hgbt.tree.training_data import LocalTrainingData
from hgbt.engine.tree_team import TreeTeam
from fitted import all_trees, rounds


class _Source:
    """Stands in for a training-data source: records its threads and users."""

    def __init__(self, n_threads, made):
        self.n_threads = n_threads
        self.users = 0
        made.append(self)

    def fork(self, n_threads):
        return _Source(n_threads, self._made)


def _team(n_threads, n_trees):
    made = []

    def make(threads):
        source = _Source(threads, made)
        source._made = made
        return source

    return TreeTeam(make, n_threads, n_trees), made


@pytest.mark.parametrize("n_threads, n_trees, shares", [
    (2, 10, [1, 1]),
    (5, 3, [2, 2, 1]),   # no more sources than trees; threads spread over them
    (4, 1, [4]),         # one tree: every thread on it
    (1, 7, [1]),
])
def test_threads_are_shared_out(n_threads, n_trees, shares):
    team, made = _team(n_threads, n_trees)
    with team:
        assert [s.n_threads for s in made] == shares
        assert team.sources == made


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_results_in_tree_order_and_one_call_per_source_at_a_time(n_threads):
    team, made = _team(n_threads, 9)
    lock = threading.Lock()

    def grow(source, k):
        with lock:
            source.users += 1
            assert source.users == 1  # no other running call holds this source
        time.sleep(0.002 * (k % 3))  # finish out of order
        with lock:
            source.users -= 1
        return k * k

    with team:
        assert team.grow(grow, 9) == [k * k for k in range(9)]
        assert team.grow(grow, 9) == [k * k for k in range(9)]  # reusable


def test_an_error_is_raised_once_no_tree_is_growing():
    team, _ = _team(2, 6)
    running = []

    def grow(source, k):
        running.append(k)
        try:
            if k == 1:
                raise ValueError("tree 1 failed")
            time.sleep(0.05)
        finally:
            running.remove(k)

    with team:
        with pytest.raises(ValueError, match="tree 1 failed"):
            team.grow(grow, 6)
        assert running == []


def test_forks_share_the_row_major_bins():
    X_binned = np.asfortranarray(np.random.default_rng(0).integers(
        0, 255, size=(100, 5), dtype=np.uint8))
    data = LocalTrainingData(X_binned, 256, 1)
    fork = data.fork(1)
    assert fork.X_binned is data.X_binned
    rows = data._row_major.get()
    assert fork._row_major.get() is rows
    np.testing.assert_array_equal(rows[:, :5], X_binned)
    assert fork._rows is not data._rows  # node state of its own


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_multiclass_task(n_samples=20_000, n_features=12, n_classes=4,
                                random_state=0)
    return X, y


def _trees(model):
    return [tree.nodes.tobytes() for tree in all_trees(model)]


@pytest.mark.parametrize("params", [
    dict(),
    dict(use_quantized_grad=True),
    dict(colsample_bytree=0.7, colsample_bynode=0.6, subsample=0.8),
])
def test_multiclass_model_does_not_depend_on_threads(multiclass, params):
    # 1 thread grows the trees one after another; 2 and 3 side by side
    # (3 threads on 4 trees: sources of 1 thread each, the last tree waits)
    X, y = multiclass
    fit = lambda n: HistGBDTClassifier(max_iter=6, early_stopping=False, random_state=0,
                                       n_threads=n, **params).fit(X, y)
    one = fit(1)
    for n_threads in (2, 3):
        other = fit(n_threads)
        assert _trees(other) == _trees(one)
        np.testing.assert_array_equal(other.predict_proba(X), one.predict_proba(X))



def test_sparse_multiclass_model_does_not_depend_on_threads():
    # bundled and sparse-stored columns: each source of the team has its own
    # scratch over the shared layout, and the trees take the Python loop
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    n = 6000
    dense = rng.normal(size=(n, 3))
    onehot = np.zeros((n, 12))
    onehot[np.arange(n), rng.integers(0, 12, n)] = 1.0
    counts = rng.poisson(0.05, size=(n, 20)).astype(float)
    X = sp.csr_matrix(np.hstack([dense, onehot, counts]))
    y = (dense[:, 0] > 0).astype(int) + 2 * (onehot[:, :4].sum(axis=1) > 0)
    fit = lambda n_threads: HistGBDTClassifier(
        max_iter=5, early_stopping=False, random_state=0, n_threads=n_threads,
        colsample_bynode=0.8).fit(X, y)
    one, two = fit(1), fit(2)
    assert len(rounds(one)[0]) == 4
    assert _trees(two) == _trees(one)


def test_trees_grow_in_the_calling_thread_once_the_pool_takes_no_work(monkeypatch):
    # at interpreter exit a daemon thread's fit finds its pool shut down
    team, _ = _team(2, 3)
    team._pool.shutdown()
    caller = threading.get_ident()
    grown_in = []

    def grow_one(source, k):
        grown_in.append(threading.get_ident())
        return k * 10

    assert team.grow(grow_one, 3) == [0, 10, 20]
    assert grown_in == [caller] * 3

    def fail(source, k):
        raise ValueError(f"tree {k}")

    with pytest.raises(ValueError, match="tree 0"):
        team.grow(fail, 2)
    team.close()
