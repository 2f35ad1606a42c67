"""The public API carries type hints (PEP 484; py.typed tells type checkers to
read them), and the hints resolve.

Public: the names in ``__all__`` of ``hgbt``, ``hgbt.callbacks``,
``hgbt.export`` and ``hgbt.dask``, and of their classes ``__init__`` and
every method and property not starting with ``_`` that hgbt defines (not
those inherited from scikit-learn: ``get_params``, ``score``, ...). That
includes Booster's, Dataset's and EvalHistory's plumbing with public names
(``Booster.prepare``, ``Dataset.construct``, ``EvalHistory.record``, ...),
which the package's layers call across. The estimators' ``__init__`` is
generated from the parameter registry (``hgbt/core/params.py``): its hints
are the registry's.

Hints name some types only under ``if TYPE_CHECKING:`` (pandas, onnx,
treelite, dask, hgbt classes an import cycle keeps out); they resolve here
in the module's namespace with that block run, as a type checker sees it.
"""
import ast
import importlib
import inspect
import sys
import typing

import pytest

MODULES = ("hgbt", "hgbt.callbacks", "hgbt.export", "hgbt.dask")
SKIPPED_PARAMETERS = ("self", "cls")
# names still to annotate: each entry must still lack a hint (a test below
# fails once it has them: then drop it here)
PENDING = set()


def _public_callables():
    """{qualified name: function} of the public API, each function once (a
    method inherited by several classes under its first name)."""
    found, seen = {}, set()

    def add(name, fn):
        if id(fn) not in seen and getattr(fn, "__module__", "").startswith("hgbt"):
            seen.add(id(fn))
            found[name] = fn

    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                add(f"{module_name}.{name}", obj)
            elif inspect.isclass(obj):
                for attr in sorted(dir(obj)):
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    raw = inspect.getattr_static(obj, attr)
                    if isinstance(raw, property):
                        raw = raw.fget
                    elif isinstance(raw, (staticmethod, classmethod)):
                        raw = raw.__func__
                    if inspect.isfunction(raw):
                        add(f"{module_name}.{name}.{attr}", raw)
    return found


PUBLIC = _public_callables()


def _missing_hints(fn):
    """The parameters (and 'return') of ``fn`` without a hint in its signature."""
    signature = inspect.signature(fn)
    missing = [p.name for p in signature.parameters.values()
               if p.name not in SKIPPED_PARAMETERS
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


_NAMESPACES = {}


def _type_checking_namespace(module_name):
    """The globals of a module with its ``if TYPE_CHECKING:`` blocks run."""
    if module_name not in _NAMESPACES:
        module = sys.modules[module_name]
        namespace = dict(vars(module))
        for node in ast.parse(inspect.getsource(module)).body:
            if isinstance(node, ast.If) and ast.unparse(node.test) in (
                    "TYPE_CHECKING", "typing.TYPE_CHECKING"):
                code = compile(ast.Module(body=node.body, type_ignores=[]),
                               module.__file__, "exec")
                exec(code, namespace)  # relative imports: the module's __package__
        _NAMESPACES[module_name] = namespace
    return _NAMESPACES[module_name]


def test_the_walk_finds_the_public_api():
    for name in ("hgbt.HistGBDTRegressor.__init__", "hgbt.HistGBDTClassifier.fit",
                 "hgbt.HistGBDTClassifier.predict_proba", "hgbt.Booster.prepare",
                 "hgbt.Booster.n_iter", "hgbt.Dataset.from_prepared", "hgbt.train",
                 "hgbt.callbacks.EvalHistory.record", "hgbt.callbacks.Callback.after_round",
                 "hgbt.export.to_onnx", "hgbt.dask.DaskHistGBDTRegressor.__init__",
                 "hgbt.partial_dependence"):
        assert name in PUBLIC, name
    # scikit-learn's methods are scikit-learn's to annotate (set_params is
    # hgbt's own: it names hgbt's spelling of the peers' parameters)
    # (but the ranker's and the survival model's score: NDCG over queries,
    # the concordance index: hgbt's own)
    assert not {name.rpartition(".")[2] for name in PUBLIC
                if not name.endswith(("Ranker.score", "Survival.score"))} & {"get_params",
                                                                             "score"}
    assert any(name.endswith("GBDTClassifier.set_params") or name.endswith(
        "GBDTRegressor.set_params") for name in PUBLIC)
    assert PENDING <= set(PUBLIC)


def test_every_public_parameter_and_return_value_is_annotated():
    missing = {name: gaps for name, fn in PUBLIC.items()
               if name not in PENDING and (gaps := _missing_hints(fn))}
    assert not missing, "without type hints: " + "; ".join(
        f"{name} {gaps}" for name, gaps in sorted(missing.items()))


def test_the_pending_names_still_lack_hints():
    # once annotated, they belong to the test above
    assert all(_missing_hints(PUBLIC[name]) for name in PENDING), (
        "annotated now: remove from PENDING "
        f"{sorted(n for n in PENDING if not _missing_hints(PUBLIC[n]))}")


def test_every_hint_resolves():
    for package in ("pandas", "dask.array", "dask.dataframe", "distributed", "onnx",
                    "treelite"):
        pytest.importorskip(package)
    broken = {}
    for name, fn in PUBLIC.items():
        try:
            hints = typing.get_type_hints(
                fn, globalns=_type_checking_namespace(fn.__module__))
        except Exception as exc:  # noqa: BLE001 - reported below, with the name
            broken[name] = f"{type(exc).__name__}: {exc}"
            continue
        # __annotations__ (what get_type_hints reads) and the signature agree
        signature = inspect.signature(fn)
        annotated = {p.name for p in signature.parameters.values()
                     if p.annotation is not inspect.Parameter.empty}
        if signature.return_annotation is not inspect.Signature.empty:
            annotated.add("return")
        if set(hints) - {"self"} != annotated - {"self"}:
            broken[name] = (f"signature hints {sorted(annotated)}, "
                            f"__annotations__ {sorted(hints)}")
    assert not broken, "; ".join(f"{name}: {why}" for name, why in sorted(broken.items()))


@pytest.mark.parametrize("name", ["hgbt.HistGBDTRegressor", "hgbt.HistGBDTClassifier",
                                  "hgbt.dask.DaskHistGBDTRegressor"])
def test_the_estimators_parameters_have_the_registry_hints(name):
    from sklearn.base import clone

    from hgbt.core.params import PARAMS

    module_name, _, class_name = name.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    parameters = inspect.signature(cls.__init__).parameters
    kind = "classifier" if "Classifier" in class_name else "regressor"
    for p in PARAMS:
        if kind in p.estimators:
            assert parameters[p.name].annotation == p.annotation, p.name
    hints = typing.get_type_hints(cls.__init__, globalns=_type_checking_namespace(
        cls.__init__.__module__))
    assert hints["learning_rate"] is float and hints["max_iter"] is int
    assert hints["max_depth"] == typing.Optional[int]
    assert hints["grow_policy"] == typing.Literal["depthwise", "lossguide"]
    assert hints["return"] is type(None)
    # scikit-learn reads the same signature
    model = cls(max_iter=3)
    assert clone(model).get_params() == model.get_params()


def test_hints_follow_the_constraints():
    from numbers import Integral, Real

    from sklearn.utils._param_validation import Interval, StrOptions

    from hgbt.core.params import Param, annotation_of

    assert annotation_of([Interval(Integral, 2, None, closed="left"), None,
                          StrOptions({"auto"})]) == "int | Literal['auto'] | None"
    assert annotation_of([None, Interval(Real, 0, 1, closed="both"), "boolean"]) == (
        "float | bool | None")
    assert annotation_of(["random_state", None]) == "int | np.random.RandomState | None"
    assert Param("x", 1, [int], "A parameter.", "tree").annotation == "int"
    assert Param("x", 1, [int], "A parameter.", "tree", annotation="bool").annotation == "bool"
    with pytest.raises(ValueError, match="declare the parameter's annotation"):
        annotation_of(["sparse matrix"])
