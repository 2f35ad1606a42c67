"""The boosting engine (hgbt/engine/boosting.py): its protocols, a fake source
driven through them, and the rule that nothing outside the estimators reads
an estimator's private members."""
import ast
from pathlib import Path

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.core._types import Y_DTYPE
from hgbt.core.row_meta import NO_META
from hgbt.data.bundling import FeatureLayout
from hgbt.engine.boosting import FitRecord, TrainingData, TreeSource, boost
from hgbt.engine.callbacks import CallbackRunner, EarlyStopping
from hgbt.engine.evaluation import Evaluator, LossMetric
from hgbt.engine.history import EvalHistory
from hgbt.engine.round_plan import RoundTrees
from hgbt.engine.row_state import LocalData, RowState, ValidationRows
from hgbt.core.params import AUTO_TREE_SIZES
from hgbt.engine.sampling import RowSampler
from hgbt.tree.training_data import LocalTrainingData
from fitted import baseline_prediction, bin_mapper, rounds
from tree_size_data import SIZED, sized_problem

PACKAGE = Path(__file__).resolve().parent.parent / "hgbt"


def _problem(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def _local_data(model, X, y, validation=()):
    loss = model._make_loss()
    raw = np.zeros((1, X.shape[0]), dtype=Y_DTYPE)
    rows = RowState(loss, np.ascontiguousarray(y, dtype=Y_DTYPE), NO_META, raw,
                    validation=validation)
    rows.set_baseline(baseline_prediction(model))
    X_binned = bin_mapper(model).transform(X)
    return rows, X_binned


def test_local_and_distributed_sources_conform():
    model = HistGBDTRegressor(max_iter=2, early_stopping=False).fit(*_problem())
    X, y = _problem()
    rows, X_binned = _local_data(model, X, y)
    binned = FeatureLayout.plain(X_binned, bin_mapper(model).n_bins_non_missing_)
    with LocalData(rows, X, binned, bin_mapper(model).missing_bin + 1, 1) as data:
        assert isinstance(data, TrainingData)
        assert not isinstance(data, TreeSource)
    assert isinstance(LocalTrainingData(X_binned, 256, 1), TreeSource)
    pytest.importorskip("distributed")
    from hgbt.dask._training import DistributedTrainingData, ShardDraw

    class NoShards:
        actors = [None, None]

    # the shards grow the trees: the driver's data is no tree source
    remote = DistributedTrainingData(NoShards(), 10, 4, 1, False)
    assert isinstance(remote, TrainingData) and not isinstance(remote, TreeSource)
    # rows are drawn on the shards, each by its global index
    for strategy in ("bagging", "goss"):
        draw = remote.sample_rows(RowSampler(strategy, 0.5, 0.2, 0.1, 10,
                                             np.random.default_rng(0)))
        assert isinstance(draw, ShardDraw) and draw.sampler.strategy == strategy
    assert remote.sample_rows(RowSampler("bagging", 1.0, 0.2, 0.1, 10,
                                         np.random.default_rng(0))) is None


class FakeData:
    """A minimal TrainingData: one in-process source, trees one after another,
    every call recorded."""

    def __init__(self, rows, X_binned, n_bins, baseline=None):
        self.rows = rows
        self.baseline = baseline
        self.n_rows, self.n_features = X_binned.shape
        self.n_trees = rows.raw.shape[0]
        self.has_validation = False
        self.n_validation_sets = 0
        self.source = LocalTrainingData(X_binned, n_bins, 1)
        self.source.use_gradients(rows.gradients, rows.hessians)
        self.calls = []

    def use_threads(self, n_threads):  # one thread always (not adapted here)
        self.calls.append("use_threads")

    def compute_gradients(self):
        self.calls.append("compute_gradients")
        self.rows.compute_gradients(1)

    def restart(self):
        self.calls.append("restart")
        self.rows.restart(self.baseline)

    def sample_rows(self, sampler):
        self.calls.append("sample_rows")
        return None

    def grow_round(self, settings, plan):
        return RoundTrees(settings).grow(
            self, plan, lambda grow_one, n: [grow_one(self.source, k) for k in range(n)])

    def refit_leaves(self, source, k, leaf_ids):
        return None

    def finish_tree(self, source, k, leaf_ids, leaf_values, tree):
        self.calls.append("finish_tree")
        self.rows.add_leaf_values(source, k, leaf_ids, leaf_values)

    def finish_round(self, trees):
        self.calls.append("finish_round")
        self.rows.add_validation(trees, 1)

    def loss_statistics(self):
        self.calls.append("loss_statistics")
        return self.rows.loss_statistics()

    def raw_predictions(self):
        return self.rows.raw, []


def _loss_history(max_iter):
    return FitRecord(evals=EvalHistory(watched=("train", "loss"),
                                          greater_is_better={"loss": False},
                                          max_iter=max_iter))


def test_the_engine_drives_a_fake_source_to_the_estimators_model():
    X, y = _problem()
    params = dict(max_iter=6, max_leaf_nodes=7, early_stopping=False, random_state=3,
                  colsample_bynode=0.75, n_threads=1)
    model = HistGBDTRegressor(**params).fit(X, y)
    rows, X_binned = _local_data(model, X, y)
    data = FakeData(rows, X_binned, bin_mapper(model).missing_bin + 1,
                    baseline_prediction(model))
    assert isinstance(data, TrainingData)
    history = _loss_history(model.max_iter)
    boost(model._boost_settings(1), data, history, Evaluator([LossMetric()], ["train"]))
    assert len(history.trees) == model.n_iter_
    for ours, theirs in zip(history.trees, rounds(model)):
        assert ours[0].nodes.tobytes() == theirs[0].nodes.tobytes()
    assert data.calls[:4] == ["loss_statistics", "compute_gradients", "sample_rows",
                              "finish_tree"]
    assert data.calls.count("finish_round") == model.n_iter_
    # the scores are the loss of the raw predictions kept by the source
    scores = history.evals.evals["train"]["loss"]
    assert scores[-1] == model._make_loss().loss(y, rows.raw)
    assert len(scores) == model.n_iter_ + 1 and list(history.evals.evals) == ["train"]
    assert history.evals.stop_reason == "max_iter reached"


def test_early_stopping_in_the_engine_matches_the_estimator():
    X, y = _problem(seed=1)
    params = dict(max_iter=200, learning_rate=0.5, early_stopping=True,
                  validation_fraction=None, n_iter_no_change=3, tol=1e-2, random_state=0)
    model = HistGBDTRegressor(**params).fit(X, y)
    assert model.n_iter_ < 200
    rows, X_binned = _local_data(model, X, y)
    data = FakeData(rows, X_binned, bin_mapper(model).missing_bin + 1)
    history = _loss_history(model.max_iter)
    boost(model._boost_settings(1), data, history, Evaluator([LossMetric()], ["train"]),
          CallbackRunner([EarlyStopping(3, 1e-2)]))
    assert len(history.trees) == model.n_iter_
    np.testing.assert_array_equal(history.evals.oriented(), model.train_score_)
    assert history.evals.stop_reason.startswith("early stopping: train loss did not")


def test_a_multiclass_round_grows_one_tree_per_class_side_by_side():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 3))
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    one = HistGBDTClassifier(max_iter=3, n_threads=1, random_state=0).fit(X, y)
    two = HistGBDTClassifier(max_iter=3, n_threads=2, random_state=0).fit(X, y)
    for trees_a, trees_b in zip(rounds(one), rounds(two)):
        assert len(trees_a) == 3
        for a, b in zip(trees_a, trees_b):
            assert a.nodes.tobytes() == b.nodes.tobytes()


# ------------------------------------------- no private members from outside
#: private attributes that other libraries define without a public name: dask's
#: metadata of a collection (its schema without rows); scikit-learn's callback
#: state on an estimator (set by its CallbackSupportMixin) and its parameter
#: validation (``_validate_params``, run on a loaded file's parameters)
ALLOWED_ATTRIBUTES = {"_meta", "_skl_callbacks", "_parent_callback_ctx",
                      "_validate_params"}


def _private_reads(path):
    """``obj._name`` (and getattr/setattr/hasattr/delattr of a "_name") where
    ``obj`` is not ``self`` / ``cls`` / ``type(self)``, nor, in a class body,
    one of the class's bases (scikit-learn's subclasses extend the parent's
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
        if ast.unparse(owner) == "type(self)":
            continue
        if id(node) in allowed_nodes:
            continue
        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: "
                     f"{ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_member_of_another_object(path):
    """No module reads or writes another object's private member: the fitted
    model is the public Booster, estimators' privates stay in their class."""
    assert _private_reads(path) == []


def test_the_private_member_scan_catches_a_violation(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("def f(model, est):\n"
                      "    model._seed = 1\n"
                      "    return getattr(est, '_bin_mapper'), est.n_iter_, self_._x\n"
                      "class A(B):\n"
                      "    c = {**B._constraints, **C._other}\n"
                      "    def g(self):\n"
                      "        return self._ok, B._not_here, type(self)._fit, other._x\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        found = [line.split(": ", 1)[1] for line in _private_reads(source)]
    finally:
        PACKAGE = saved
    assert sorted(found) == sorted(["model._seed", "getattr(est, '_bin_mapper')",
                                    "self_._x", "C._other", "B._not_here", "other._x"])


# ------------------------------------------------------------------ max_leaf_nodes='auto'
def _same_model(a, b):
    assert a.n_iter_ == b.n_iter_
    for trees_a, trees_b in zip(rounds(a), rounds(b)):
        for tree_a, tree_b in zip(trees_a, trees_b):
            assert tree_a.nodes.tobytes() == tree_b.nodes.tobytes()
    assert a.evals_result_ == b.evals_result_


@pytest.mark.parametrize("truncate_at_best", [False, True])
@pytest.mark.parametrize("winner", [0, 1])
def test_auto_tree_size_keeps_the_size_that_scores_better_on_the_hold_out(winner,
                                                                          truncate_at_best):
    X, y = sized_problem(winner)
    params = dict(SIZED, truncate_at_best=truncate_at_best)
    auto = HistGBDTRegressor(**params).fit(X, y)
    fixed = [HistGBDTRegressor(**params, **size).fit(X, y) for size in AUTO_TREE_SIZES]
    # each size's fit on its own: the same hold-out, rounds and scores
    assert auto.tree_size_scores_ == [
        {**size, "n_iter": 6, "score": f.validation_score_[-1]}  # the kept model's
        for size, f in zip(AUTO_TREE_SIZES, fixed)]
    scores = [f.validation_score_[-1] for f in fixed]
    assert int(scores[1] > scores[0] + auto.tol) == winner  # the data do what they say
    _same_model(auto, fixed[winner])
    assert auto.predict(X).tobytes() == fixed[winner].predict(X).tobytes()
    assert (auto.max_leaf_nodes_, auto.l2_regularization_) == tuple(
        AUTO_TREE_SIZES[winner].values())


def test_auto_tree_size_fits_once_when_the_fit_stops_early():
    X, y = sized_problem(1)
    params = dict(SIZED, max_iter=300, n_iter_no_change=3)
    auto = HistGBDTRegressor(**params).fit(X, y)
    first = HistGBDTRegressor(**params, **AUTO_TREE_SIZES[0]).fit(X, y)
    assert auto.n_iter_ < 300 and auto.tree_size_scores_ == []
    _same_model(auto, first)
    assert auto.max_leaf_nodes_ == 31 and auto.l2_regularization_ == 1.0


@pytest.mark.parametrize("params", [
    dict(early_stopping=False),  # no hold-out: nothing to compare on
    dict(early_stopping=True, validation_fraction=None),  # watches the training loss
])
def test_auto_tree_size_without_a_validation_score_is_the_first_size(params):
    X, y = sized_problem(1)
    auto = HistGBDTRegressor(**{**SIZED, **params}).fit(X, y)
    first = HistGBDTRegressor(**{**SIZED, **params}, **AUTO_TREE_SIZES[0]).fit(X, y)
    assert auto.n_iter_ == 6 and auto.tree_size_scores_ == []
    _same_model(auto, first)


def test_auto_tree_size_with_one_of_the_two_set():
    X, y = sized_problem(1)
    # a fixed leaf count: 'auto' L2 is the first size's
    model = HistGBDTRegressor(**SIZED, max_leaf_nodes=63).fit(X, y)
    assert (model.max_leaf_nodes_, model.l2_regularization_, model.tree_size_scores_) == \
        (63, 1.0, [])
    _same_model(model, HistGBDTRegressor(**SIZED, max_leaf_nodes=63,
                                         l2_regularization=1.0).fit(X, y))
    # a fixed L2: both sizes use it
    model = HistGBDTRegressor(**SIZED, l2_regularization=0.5).fit(X, y)
    assert [t["l2_regularization"] for t in model.tree_size_scores_] == [0.5, 0.5]
    _same_model(model, HistGBDTRegressor(**SIZED, l2_regularization=0.5,
                                         max_leaf_nodes=model.max_leaf_nodes_).fit(X, y))
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        HistGBDTRegressor(max_leaf_nodes="large").fit(X, y)


@pytest.mark.parametrize("winner", [0, 1])
def test_a_warm_start_continues_the_size_kept(winner):
    X, y = sized_problem(winner)
    model = HistGBDTRegressor(**SIZED, warm_start=True).fit(X, y)
    scores = model.tree_size_scores_
    model.set_params(max_iter=9).fit(X, y)
    fixed = HistGBDTRegressor(**dict(SIZED, max_iter=9), **AUTO_TREE_SIZES[winner]).fit(X, y)
    _same_model(model, fixed)
    assert model.tree_size_scores_ == scores  # compared once, not again


def test_the_engine_compares_sizes_on_a_fake_source_with_validation_rows():
    """boost's selection, driven through the TrainingData protocol: the
    baseline restart, the second size's rounds, the kept fit's history."""
    X, y = sized_problem(1)
    model = HistGBDTRegressor(**SIZED).fit(X, y)
    assert model.max_leaf_nodes_ == 63
    X_train, X_val, y_train, y_val = (X[:1600], X[1600:], y[:1600], y[1600:])
    ours = HistGBDTRegressor(**SIZED).fit(X_train, y_train, X_val=X_val, y_val=y_val)
    rows, X_binned = _local_data(ours, X_train, y_train, [ValidationRows(
        X_val, y_val, NO_META, np.zeros((1, len(y_val))))])
    data = FakeData(rows, X_binned, bin_mapper(ours).missing_bin + 1,
                    baseline_prediction(ours))
    data.has_validation, data.n_validation_sets = True, 1
    history = FitRecord(evals=EvalHistory(watched=("validation", "loss"),
                                             greater_is_better={"loss": False},
                                             max_iter=6))
    boost(ours._boost_settings(1, select=True), data, history,
          Evaluator([LossMetric()], ["train", "validation"]))
    assert data.calls.count("restart") == int(len(ours.tree_size_scores_) == 2)
    assert history.evals.trials == ours.tree_size_scores_
    assert history.evals.tree_size == {"max_leaf_nodes": ours.max_leaf_nodes_,
                                       "l2_regularization": ours.l2_regularization_}
    assert [t[0].nodes.tobytes() for t in history.trees] == \
        [t[0].nodes.tobytes() for t in rounds(ours)]


@pytest.mark.parametrize("loss", ["huber", "absolute_error", "poisson"])
def test_auto_tree_size_starts_the_second_fit_as_a_new_one(loss):
    # Huber's adaptive delta is fitted state: the second size's rounds (and
    # their baseline score) must not start from the first fit's.
    X, y = sized_problem(1)
    y = np.exp(y / 4) if loss == "poisson" else y
    params = dict(SIZED, loss=loss)
    auto = HistGBDTRegressor(**params).fit(X, y)
    fixed = [HistGBDTRegressor(**params, **size).fit(X, y) for size in AUTO_TREE_SIZES]
    assert [t["score"] for t in auto.tree_size_scores_] == [
        f.validation_score_[-1] for f in fixed]
    _same_model(auto, fixed[AUTO_TREE_SIZES.index(
        {"max_leaf_nodes": auto.max_leaf_nodes_,
         "l2_regularization": auto.l2_regularization_})])
