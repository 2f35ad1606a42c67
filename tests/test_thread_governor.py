"""Fits without ``n_threads`` on a loaded machine (``hgbt/core/load.py``).

The governor's arithmetic is checked on written ``/proc`` files and fake
clocks (no timing), and a fit whose rounds change their thread count at
every round gives, bit for bit, the model of a 1-thread fit, for every
storage layout, gradient kind and sampling.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import hgbt
import hgbt.core.load as load
from hgbt import HistGBDTClassifier, HistGBDTRegressor
from fitted import all_trees

STAT = """cpu  900 0 300 5000 0 0 0 0 0 0
cpu0 100 0 50 2000 10 5 5 0 0 0
cpu1 800 0 250 3000 0 0 0 3 0 0
intr 1 2 3
"""


def test_busy_seconds_sum_the_given_cpus(tmp_path):
    path = tmp_path / "stat"
    path.write_text(STAT)
    ticks = load.os.sysconf("SC_CLK_TCK")
    # user + nice + system + irq + softirq + steal, not idle or iowait
    assert load._busy_seconds({0}, path) == 160 / ticks
    assert load._busy_seconds({0, 1}, path) == (160 + 1053) / ticks
    assert load._busy_seconds({0}, tmp_path / "missing") is None


def test_running_elsewhere_leaves_out_this_process(tmp_path, monkeypatch):
    path = tmp_path / "loadavg"
    path.write_text("0.50 0.40 0.30 7/300 12345\n")
    assert load._running_here() >= 1  # this thread is running
    monkeypatch.setattr(load, "_running_here", lambda: 2)  # fixed: threads come and go
    assert load._running_elsewhere(path) == 5
    path.write_text("garbage")
    assert load._running_elsewhere(path) is None


class _Clock:
    """Fake readings: wall clock, every process's busy seconds on our CPUs,
    this process's CPU seconds."""

    def __init__(self, monkeypatch):
        self.wall = self.busy = self.own = 0.0
        monkeypatch.setattr(load.time, "monotonic", lambda: self.wall)
        monkeypatch.setattr(load.time, "process_time", lambda: self.own)
        monkeypatch.setattr(load, "_busy_seconds", lambda cpus, path=None: self.busy)
        monkeypatch.setattr(load, "_running_elsewhere", lambda path=None: 0)

    def advance(self, seconds, others_cores, own_cores):
        self.wall += seconds
        self.own += seconds * own_cores
        self.busy += seconds * (others_cores + own_cores)


def test_the_governor_leaves_the_cpus_others_keep_busy(monkeypatch):
    clock = _Clock(monkeypatch)
    governor = load.ThreadGovernor(4, cpus={0, 1, 2, 3})
    assert governor.threads() == 4
    clock.advance(0.2, others_cores=3.0, own_cores=1.0)
    assert governor.threads() == 1
    clock.advance(0.05, others_cores=0.0, own_cores=4.0)
    assert governor.threads() == 1  # not read again within INTERVAL
    clock.advance(0.2, others_cores=0.0, own_cores=1.0)
    assert governor.threads() == 4
    clock.advance(0.2, others_cores=1.6, own_cores=2.0)
    assert governor.threads() == 2  # 2.4 CPUs free
    clock.advance(0.2, others_cores=9.0, own_cores=2.0)
    assert governor.threads() == 1  # at least one


def test_the_first_rounds_follow_the_tasks_running_now(monkeypatch):
    _Clock(monkeypatch)
    n_cpus = load.os.cpu_count()
    monkeypatch.setattr(load, "_running_elsewhere", lambda path=None: n_cpus)
    if len(load.os.sched_getaffinity(0)) == n_cpus:
        assert load.ThreadGovernor(2).current == 1
    monkeypatch.setattr(load, "_running_elsewhere", lambda path=None: 0)
    assert load.ThreadGovernor(2).current == 2


def test_one_thread_or_no_proc_reads_nothing(monkeypatch):
    def fail(*args):
        raise AssertionError("read")
    monkeypatch.setattr(load, "_busy_seconds", fail)
    assert load.ThreadGovernor(1).threads() == 1
    monkeypatch.setattr(load, "_busy_seconds", lambda cpus, path=None: None)
    governor = load.ThreadGovernor(3)
    assert governor.threads() == 3


class _Cycling:
    """A governor that changes the thread count at every round."""
    counts = []

    def __init__(self, n_threads, cpus=None):
        self.n_threads = n_threads
        self.current = n_threads
        self._i = 0

    def threads(self):
        self._i += 1
        self.current = [self.n_threads, 1, 3, 2][self._i % 4] if self.n_threads > 1 else 1
        _Cycling.counts.append(self.current)
        return self.current


def _data(kind, rng):
    n = 3000
    X = rng.normal(size=(n, 8))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.05] = np.nan
    if kind == "sparse":
        X = np.where(rng.random(X.shape) < 0.8, 0.0, np.nan_to_num(X))
        X = sp.csr_matrix(np.hstack([X, (rng.random((n, 30)) < 0.02).astype(float)]))
    elif kind == "categorical":
        X[:, 2] = rng.integers(0, 40, n)
    return X, y


CASES = {
    "dense": ("dense", HistGBDTRegressor, {}),
    "sparse bundled": ("sparse", HistGBDTRegressor, {}),
    "quantized": ("dense", HistGBDTRegressor, {"use_quantized_grad": True}),
    "categorical": ("categorical", HistGBDTRegressor, {"categorical_features": [2]}),
    "goss absolute": ("dense", HistGBDTRegressor,
                      {"data_sample_strategy": "goss", "loss": "absolute_error"}),
    "multiclass": ("dense", HistGBDTClassifier, {}),
    "early stopping": ("dense", HistGBDTRegressor, {"early_stopping": True}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_changing_thread_counts_give_the_one_thread_model(case, monkeypatch):
    kind, estimator, params = CASES[case]
    X, y = _data(kind, np.random.default_rng(0))
    if estimator is HistGBDTClassifier:
        y = np.digitize(y, [-0.5, 0.5])
    settings = dict(max_iter=12, random_state=0, **params)
    reference = estimator(n_threads=1, **settings).fit(X, y)
    monkeypatch.setattr(hgbt.engine.boosting, "ThreadGovernor", _Cycling)
    # as if on a 4-CPU machine: the rounds run on 4, 1, 3, 2, 4, ... threads
    monkeypatch.setattr(hgbt.estimators.gradient_boosting, "effective_n_threads",
                        lambda n: 4 if n is None else n)
    _Cycling.counts = []
    model = estimator(**settings).fit(X, y)
    assert set(_Cycling.counts) == {1, 2, 3, 4}
    assert model.n_iter_ == reference.n_iter_
    for a, b in zip(all_trees(model), all_trees(reference)):
        assert a.nodes.tobytes() == b.nodes.tobytes()
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))


def test_an_explicit_thread_count_is_kept(monkeypatch):
    monkeypatch.setattr(hgbt.engine.boosting, "ThreadGovernor", _Cycling)
    _Cycling.counts = []
    X, y = _data("dense", np.random.default_rng(1))
    HistGBDTRegressor(max_iter=3, n_threads=2).fit(X, y)
    assert _Cycling.counts == []


@pytest.mark.parametrize("files, expected", [
    ({"cpu.max": "200000 100000\n"}, 2),
    ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs of time: 2 threads
    ({"cpu.max": "50000 100000\n"}, 1),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu.max": "garbage"}, None),
    ({}, None),
])
def test_a_containers_cpu_limit_bounds_the_threads(tmp_path, files, expected):
    from hgbt.core.load import cgroup_cpus
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpus(str(tmp_path)) == expected


def test_minus_one_means_every_usable_cpu(monkeypatch):
    from hgbt.core._openmp import effective_n_threads
    assert effective_n_threads(-1) == effective_n_threads(None)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"None or -1 \(every usable CPU\)"):
            effective_n_threads(bad)
    X, y = _data("dense", np.random.default_rng(2))
    with pytest.raises(ValueError, match="n_threads"):
        HistGBDTRegressor(n_threads=-2).fit(X, y)
    # -1 is governed as None is, and gives the same model
    monkeypatch.setattr(hgbt.engine.boosting, "ThreadGovernor", _Cycling)
    _Cycling.counts = []
    settings = dict(max_iter=3, max_leaf_nodes=31, random_state=0, early_stopping=False)
    a = HistGBDTRegressor(n_threads=-1, **settings).fit(X, y)
    assert len(_Cycling.counts) == 3
    b = HistGBDTRegressor(n_threads=1, **settings).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
