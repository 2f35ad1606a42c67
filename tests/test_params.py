"""Every parameter is declared once (hgbt/core/params.py), and everything that
lists parameters agrees with that declaration: the estimators' signatures and
constraints, their docstrings, doc/parameters.md's table, and the defaults of
the settings below the estimators. A parameter added in one place only fails
here."""
import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRanker, HistGBDTRegressor, HistGBDTSurvival
from hgbt.core import params as registry
from hgbt.core.params import (CLASSIFIER, PARAMS, RANKER, REGRESSOR, SURVIVAL, TREE_PARAMS,
                              params_of)
from hgbt.tree._splitting import SplitSettings
from hgbt.tree.grower import TreeSettings

DOC = Path(__file__).resolve().parent.parent / "doc" / "parameters.md"
ESTIMATORS = {REGRESSOR: HistGBDTRegressor, CLASSIFIER: HistGBDTClassifier,
              RANKER: HistGBDTRanker, SURVIVAL: HistGBDTSurvival}


def _documented(cls):
    """The parameters of ``cls``'s numpydoc docstring: (name, default text)."""
    section = cls.__doc__.split("Parameters\n    ----------\n", 1)[1].split(
        "\n    Attributes\n", 1)[0]
    return re.findall(r"^    (\w+) : [^\n]*?(?:default=(.*))?$", section, flags=re.M)


@pytest.mark.parametrize("kind", [REGRESSOR, CLASSIFIER, RANKER, SURVIVAL])
def test_the_estimators_take_the_declared_parameters(kind):
    cls, declared = ESTIMATORS[kind], params_of(kind)
    signature = inspect.signature(cls.__init__).parameters
    assert list(signature)[1:] == [p.name for p in declared]
    assert all(signature[p.name].default is p.default for p in declared)
    assert cls._parameter_constraints == {p.name: p.constraint for p in declared}
    assert cls().get_params() == {p.name: p.default for p in declared}
    assert cls("%s" % declared[0].default, max_iter=7).max_iter == 7  # loss positional
    with pytest.raises(TypeError, match="max_itre"):
        cls(max_itre=7)


@pytest.mark.parametrize("kind", [REGRESSOR, CLASSIFIER, RANKER, SURVIVAL])
def test_the_docstrings_document_each_parameter_with_its_default(kind):
    cls, declared = ESTIMATORS[kind], params_of(kind)
    documented = _documented(cls)
    assert [name for name, _ in documented] == [p.name for p in declared]
    for (name, text), p in zip(documented, declared):
        assert text, f"{name}: the docstring gives no default"
        assert _same_value(ast.literal_eval(text.strip()), p.default), (name, text)


def _table():
    """doc/parameters.md's table of estimator parameters: name -> cells."""
    text = DOC.read_text().split("## 2. Estimator parameters", 1)[1].split("\nFit arguments", 1)[0]
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `(\w+)` \(([^|]*)\) \|", line)
        if match:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows.setdefault(match.group(1), []).append((match.group(2), cells))
    return rows


def _same_value(a, b):
    """Equal values of the same kind (numbers of any type; not bools as numbers)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _values(text):
    """The Python literals a table cell's default text holds (``1e−3``, ``'auto'``,
    ``**0.15**``, ``None = ...``)."""
    text = text.replace("\u2212", "-").replace("*", "").replace("`", "")
    return [ast.literal_eval(token) for token in re.findall(
        r"'[^']*'|None|True|False|(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def _check_table(params):
    rows = _table()
    declared = {p.name for p in params}
    assert set(rows) == declared, (f"missing {sorted(declared - set(rows))}, "
                                   f"unknown {sorted(set(rows) - declared)}")
    for p in params:
        (defaults, cells), = rows[p.name]
        assert any(_same_value(v, p.default) for v in _values(defaults)), (p.name, defaults)
        for column, name in ((2, p.lightgbm), (3, p.xgboost), (4, p.sklearn)):
            if name is not None:
                assert re.search(f"`{name}[`=(]", cells[column]), (p.name, cells[column])


def test_the_parameter_table_lists_each_parameter_with_its_default_and_peers():
    _check_table(PARAMS)


def test_a_parameter_declared_but_not_in_the_table_fails():
    extra = registry.Param("max_fun", 3, [int], "A parameter added in one place.", "tree")
    with pytest.raises(AssertionError, match="missing \\['max_fun'\\]"):
        _check_table(PARAMS + (extra,))
    changed = [registry.Param(**{**vars(p), "default": 0.3}) if p.name == "learning_rate"
               else p for p in PARAMS]
    with pytest.raises(AssertionError, match="learning_rate"):
        _check_table(changed)


def test_each_parameter_has_a_stage_a_line_and_one_declaration_per_estimator():
    for kind in (REGRESSOR, CLASSIFIER, RANKER, SURVIVAL):
        names = [p.name for p in params_of(kind)]
        assert len(names) == len(set(names))
    for p in PARAMS:
        assert p.stage in registry.STAGES and p.doc.endswith(".") and "\n" not in p.doc
    # the tree settings carry the tree stage but the constraints fitted per fit
    assert set(TREE_PARAMS) == set(registry.names("tree")) - {"monotonic_cst",
                                                              "interaction_cst"}


def test_the_settings_below_the_estimators_default_to_the_declared_values():
    tree = TreeSettings()
    for name in TREE_PARAMS:
        assert getattr(tree, name) == registry.resolved_default(name), name
    assert tree.learning_rate == registry.default("learning_rate")
    split = inspect.signature(SplitSettings.__init__).parameters
    for name in set(TREE_PARAMS) & set(split):
        assert split[name].default == registry.resolved_default(name), name
    # 'auto' tree sizes resolve to the first size
    assert (tree.max_leaf_nodes, tree.l2_regularization) == tuple(
        registry.AUTO_TREE_SIZES[0].values())


# ------------------------------------------ the peers' spellings (issue 37, item 6)
@pytest.mark.parametrize("peer, ours", [("n_estimators", "max_iter"),
                                        ("num_leaves", "max_leaf_nodes"),
                                        ("early_stopping_rounds", "n_iter_no_change"),
                                        ("reg_lambda", "l2_regularization"),
                                        ("n_jobs", "n_threads"), ("eta", "learning_rate"),
                                        ("alpha", "quantile or huber_delta or "
                                                  "l1_regularization")])
def test_a_peers_parameter_name_gets_ours(peer, ours):
    message = rf"HistGBDTRegressor has no parameter '{peer}' \(a LightGBM or XGBoost " \
              rf"name\): use {ours} "
    with pytest.raises(TypeError, match=message):
        HistGBDTRegressor(**{peer: 3})
    with pytest.raises(ValueError, match=message):
        HistGBDTRegressor().set_params(**{peer: 3})


def test_a_misspelt_parameter_gets_the_closest():
    with pytest.raises(TypeError, match="no parameter 'learnin_rate'. Did you mean "
                                        "learning_rate"):
        HistGBDTClassifier(learnin_rate=0.1)
    # scikit-learn's own behaviour is kept for what it handles
    model = HistGBDTClassifier().set_params(max_iter=3)
    assert model.max_iter == 3


@pytest.mark.parametrize("option, use", [("raw_score", "decision_function"),
                                         ("pred_contrib", "predict_contributions"),
                                         ("pred_leaf", "apply"),
                                         ("num_iteration", "iteration_range")])
def test_a_peers_predict_option_gets_ours(option, use):
    X = np.random.default_rng(0).normal(size=(60, 2))
    model = HistGBDTClassifier(max_iter=2).fit(X, X[:, 0] > 0)
    for method in (model.predict, model.predict_proba, model.decision_function):
        with pytest.raises(TypeError, match=rf"got an unexpected keyword argument "
                                            rf"'{option}' \(a LightGBM or XGBoost "
                                            rf"option\): use {use}"):
            method(X, **{option: True})
    # the signature scikit-learn reads is the method's own
    assert list(inspect.signature(HistGBDTClassifier.predict).parameters) == [
        "self", "X", "iteration_range"]


@pytest.mark.parametrize("metric, scorer", [("rmse", "neg_root_mean_squared_error"),
                                            ("auc", "roc_auc"), ("mae",
                                                                 "neg_mean_absolute_error"),
                                            ("logloss", "neg_log_loss")])
def test_a_peers_metric_name_gets_the_scorer(metric, scorer):
    X = np.random.default_rng(0).normal(size=(60, 2))
    for parameter in ("eval_metric", "scoring"):
        with pytest.raises(ValueError) as info:
            HistGBDTRegressor(max_iter=2, **{parameter: metric}).fit(X, X[:, 0])
        message = str(info.value)
        assert message.startswith(f"{parameter}={metric!r} is not a metric hgbt knows")
        assert f"'{scorer}'" in message and len(message) < 300
