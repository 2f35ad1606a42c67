"""The boosting engine (hgbt/engine/boosting.py): its protocols, a fake source
driven through them, and the rule that nothing outside the estimators reads
an estimator's private members."""
import ast
from pathlib import Path

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._types import Y_DTYPE
from hgbt.data.bundling import FeatureLayout
from hgbt.engine.boosting import BoostHistory, TrainingData, TreeSource, boost
from hgbt.engine.callbacks import CallbackRunner, EarlyStopping
from hgbt.engine.evaluation import Evaluator, LossMetric
from hgbt.engine.history import EvalHistory
from hgbt.engine.rows import LocalData, RowState
from hgbt.engine.sampling import RowSampler
from hgbt.tree.training_data import LocalTrainingData

PACKAGE = Path(__file__).resolve().parent.parent / "hgbt"


def _problem(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def _local_data(model, X, y):
    loss = model._make_loss(None)
    raw = np.zeros((1, X.shape[0]), dtype=Y_DTYPE)
    rows = RowState(loss, np.ascontiguousarray(y, dtype=Y_DTYPE), None, raw)
    rows.set_baseline(model._baseline_prediction)
    X_binned = model._bin_mapper.transform(X)
    return rows, X_binned


def test_local_and_distributed_sources_conform():
    model = HistGBDTRegressor(max_iter=2, early_stopping=False).fit(*_problem())
    X, y = _problem()
    rows, X_binned = _local_data(model, X, y)
    binned = FeatureLayout.plain(X_binned, model._bin_mapper.n_bins_non_missing_)
    with LocalData(rows, X, binned, model._bin_mapper.missing_bin + 1, 1) as data:
        assert isinstance(data, TrainingData)
        assert not isinstance(data, TreeSource)
    assert isinstance(LocalTrainingData(X_binned, 256, 1), TreeSource)
    pytest.importorskip("distributed")
    from hgbt.dask._training import DistributedTrainingData

    remote = DistributedTrainingData(None, 10, 4, 256, 1, False, 1)
    assert isinstance(remote, TrainingData) and isinstance(remote, TreeSource)
    # distributed-only limits stay refused
    with pytest.raises(NotImplementedError):
        remote.start_tree(0, rows=np.arange(3, dtype=np.uint32))
    with pytest.raises(NotImplementedError):
        remote.start_tree(0, quantize=(32, 1))
    with pytest.raises(NotImplementedError):
        remote.sample_rows(RowSampler("bagging", 0.5, 0.2, 0.1, 10,
                                      np.random.default_rng(0)))


class FakeData:
    """A minimal TrainingData: one in-process source, trees one after another,
    every call recorded."""

    def __init__(self, rows, X_binned, n_bins):
        self.rows = rows
        self.n_rows, self.n_features = X_binned.shape
        self.n_trees = rows.raw.shape[0]
        self.has_validation = False
        self.n_validation_sets = 0
        self.source = LocalTrainingData(X_binned, n_bins, 1)
        self.source.use_gradients(rows.gradients, rows.hessians)
        self.calls = []

    def compute_gradients(self):
        self.calls.append("compute_gradients")
        self.rows.compute_gradients(1)

    def sample_rows(self, sampler):
        self.calls.append("sample_rows")
        return None

    def grow_round(self, grow_one, n_trees):
        return [grow_one(self.source, k) for k in range(n_trees)]

    def refit_leaves(self, source, k, leaf_ids):
        return None

    def finish_tree(self, source, k, leaf_ids, leaf_values, tree):
        self.calls.append("finish_tree")
        self.rows.add_leaf_values(source, k, leaf_ids, leaf_values)

    def finish_round(self, trees):
        self.calls.append("finish_round")

    def loss_statistics(self):
        self.calls.append("loss_statistics")
        return self.rows.loss_statistics()

    def raw_predictions(self):
        return self.rows.raw, []


def _loss_history(max_iter):
    return BoostHistory(evals=EvalHistory(watched=("train", "loss"),
                                          greater_is_better={"loss": False},
                                          max_iter=max_iter))


def test_the_engine_drives_a_fake_source_to_the_estimators_model():
    X, y = _problem()
    params = dict(max_iter=6, max_leaf_nodes=7, early_stopping=False, random_state=3,
                  colsample_bynode=0.75, n_threads=1)
    model = HistGBDTRegressor(**params).fit(X, y)
    rows, X_binned = _local_data(model, X, y)
    data = FakeData(rows, X_binned, model._bin_mapper.missing_bin + 1)
    assert isinstance(data, TrainingData)
    history = _loss_history(model.max_iter)
    boost(model._boost_settings(1), data, history, Evaluator([LossMetric()], ["train"]))
    assert len(history.predictors) == model.n_iter_
    for ours, theirs in zip(history.predictors, model._predictors):
        assert ours[0].nodes.tobytes() == theirs[0].nodes.tobytes()
    assert data.calls[:4] == ["loss_statistics", "compute_gradients", "sample_rows",
                              "finish_tree"]
    assert data.calls.count("finish_round") == model.n_iter_
    # the scores are the loss of the raw predictions kept by the source
    scores = history.evals.evals["train"]["loss"]
    assert scores[-1] == model._make_loss(None).loss(y, rows.raw)
    assert len(scores) == model.n_iter_ + 1 and list(history.evals.evals) == ["train"]
    assert history.evals.stop_reason == "max_iter reached"


def test_early_stopping_in_the_engine_matches_the_estimator():
    X, y = _problem(seed=1)
    params = dict(max_iter=200, learning_rate=0.5, early_stopping=True,
                  validation_fraction=None, n_iter_no_change=3, tol=1e-2, random_state=0)
    model = HistGBDTRegressor(**params).fit(X, y)
    assert model.n_iter_ < 200
    rows, X_binned = _local_data(model, X, y)
    data = FakeData(rows, X_binned, model._bin_mapper.missing_bin + 1)
    history = _loss_history(model.max_iter)
    boost(model._boost_settings(1), data, history, Evaluator([LossMetric()], ["train"]),
          CallbackRunner([EarlyStopping(3, 1e-2)]))
    assert len(history.predictors) == model.n_iter_
    np.testing.assert_array_equal(history.evals.oriented(), model.train_score_)
    assert history.evals.stop_reason.startswith("early stopping: train loss did not")


def test_a_multiclass_round_grows_one_tree_per_class_side_by_side():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 3))
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    one = HistGBDTClassifier(max_iter=3, n_threads=1, random_state=0).fit(X, y)
    two = HistGBDTClassifier(max_iter=3, n_threads=2, random_state=0).fit(X, y)
    for trees_a, trees_b in zip(one._predictors, two._predictors):
        assert len(trees_a) == 3
        for a, b in zip(trees_a, trees_b):
            assert a.nodes.tobytes() == b.nodes.tobytes()


# ------------------------------------------- no private members from outside
#: outside the estimator classes: the engine and the distributed layer
SCANNED = ("engine", "dask")
#: private attributes of things that are not hgbt estimators: dask's metadata
#: of a collection (its schema without rows; dask has no public name for it)
ALLOWED_ATTRIBUTES = {"_meta"}


def _private_reads(path):
    """``obj._name`` (and getattr/setattr/hasattr/delattr of a "_name") where
    ``obj`` is not ``self`` / ``cls``, nor, in a class body, one of the
    class's bases (scikit-learn's subclasses extend the parent's
    ``_parameter_constraints`` so)."""
    tree = ast.parse(path.read_text())
    allowed_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for sub in ast.walk(statement):
                    if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                            and sub.value.id in bases):
                        allowed_nodes.add(id(sub))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name, owner = node.attr, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            name, owner = node.args[1].value, node.args[0]
        else:
            continue
        if not name.startswith("_") or name.startswith("__") or name in ALLOWED_ATTRIBUTES:
            continue
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if id(node) in allowed_nodes:
            continue
        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: "
                     f"{ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(p for sub in SCANNED
                                        for p in (PACKAGE / sub).glob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_member_of_another_object(path):
    assert _private_reads(path) == []


def test_the_private_member_scan_catches_a_violation(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("def f(model, est):\n"
                      "    model._seed = 1\n"
                      "    return getattr(est, '_bin_mapper'), est.n_iter_, self_._x\n"
                      "class A(B):\n"
                      "    c = {**B._constraints, **C._other}\n"
                      "    def g(self):\n"
                      "        return self._ok, B._not_here\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        found = [line.split(": ", 1)[1] for line in _private_reads(source)]
    finally:
        PACKAGE = saved
    assert sorted(found) == sorted(["model._seed", "getattr(est, '_bin_mapper')",
                                    "self_._x", "C._other", "B._not_here"])
