"""The package layout: subpackages in layers, imports only downwards, no cycles.

core → data → tree → engine → model → persistence → estimators → dask, export:
a module may import from its own layer and the layers below it. The fitted
model (``model/``: the Booster and what reads it) sits between what grows
trees and the estimators; the model format sits below the estimators, which
register their classes with it. Python imports are read
with ``ast``; Cython ``import`` / ``cimport`` lines with a regular
expression (both relative and absolute forms). Imports under
``if TYPE_CHECKING:`` are not counted: they name types for the type hints
(the estimator a callback receives) and never run.
"""
import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hgbt"

# layer of each top-level entry of the package (a subpackage or a module)
LAYERS = {
    "core": 0,
    "datasets": 0,
    "data": 1,
    "tree": 2,
    "engine": 3,
    "model": 4,
    "persistence": 5,
    "estimators": 6,
    "dask": 7,
    "export": 7,
    "inspection": 7,
    "plotting": 7,
    "__init__": 8,
    "callbacks": 8,
    "__main__": 8,
}

_CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\b|c?import\s+([\w.]+))",
                            re.MULTILINE)


def _sources():
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in p.parts)


def _module(path):
    """Dotted name of a source file inside the package (``hgbt.tree._grower``)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(path, level, name):
    """The absolute module named by ``from <level dots><name> import``."""
    if level == 0:
        return name
    base = _module(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imports(path):
    """Absolute names of the hgbt modules a source file imports."""
    text = path.read_text()
    found = []
    if path.suffix == ".py":
        tree = ast.parse(text)
        for node in ast.walk(tree):  # hints' imports never run
            if isinstance(node, ast.If) and ast.unparse(node.test) in (
                    "TYPE_CHECKING", "typing.TYPE_CHECKING"):
                node.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(path, node.level, node.module or "")
                found.append(target)
                # "from .pkg import x": x may be a module
                found += [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                found += [a.name for a in node.names]
    else:
        for relative, absolute in _CYTHON_IMPORT.findall(text):
            name = relative or absolute
            level = len(name) - len(name.lstrip("."))
            found.append(_resolve(path, level, name.lstrip(".")))
    return [f for f in found if f == "hgbt" or f.startswith("hgbt.")]


def _layer(module):
    parts = module.split(".")
    if len(parts) == 1 or parts[1] not in LAYERS:  # the package's face, or a name from it
        return LAYERS["__init__"]
    return LAYERS[parts[1]]


def test_every_entry_has_a_layer():
    entries = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists())
               or p.suffix in (".py", ".pyx", ".pxd")}
    assert entries <= set(LAYERS), f"no layer for {sorted(entries - set(LAYERS))}"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    own = _layer(_module(path))
    upward = [m for m in _imports(path) if m != "hgbt" and _layer(m) > own]
    assert not upward, f"{_module(path)} (layer {own}) imports from above: {upward}"


def test_no_import_cycles():
    graph = {}
    for path in _sources():
        name = _module(path)
        graph.setdefault(name, set()).update(
            m for m in _imports(path) if m != name and m != "hgbt")
    known = set(graph)
    # an import of a package means its __init__; a from-import of a name
    # inside a module resolves to that module
    def target(m):
        while m not in known and "." in m:
            m = m.rsplit(".", 1)[0]
        return m if m in known else None
    edges = {a: {t for t in map(target, bs) if t and t != a} for a, bs in graph.items()}
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_the_rule_test_catches_a_violation(tmp_path):
    """The checker itself: an upward import and a cycle are found."""
    pkg = tmp_path / "hgbt"
    (pkg / "tree").mkdir(parents=True)
    (pkg / "engine").mkdir()
    for sub in ("", "tree", "engine"):
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "tree" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nfrom ..engine import b\n"
        "if TYPE_CHECKING:\n    from ..estimators import c\n")
    (pkg / "engine" / "b.py").write_text("from ..tree.a import x\n")
    (pkg / "tree" / "c.pyx").write_text("from ..engine.b cimport y\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, pkg
    try:
        assert _imports(pkg / "tree" / "a.py") == ["hgbt.engine", "hgbt.engine.b"]
        assert _imports(pkg / "tree" / "c.pyx") == ["hgbt.engine.b"]
        assert _layer("hgbt.engine.b") > _layer("hgbt.tree.a")
        with pytest.raises(pytest.fail.Exception, match="import cycle"):
            test_no_import_cycles()
    finally:
        PACKAGE = saved


def test_importing_an_unbuilt_source_tree_says_how_to_install(tmp_path):
    """A source tree without its compiled kernels (a clone, before pip install)
    fails to import with a message that says what to do, not a bare
    ModuleNotFoundError of an internal module."""
    import os
    import shutil
    import subprocess
    import sys

    shutil.copytree(PACKAGE, tmp_path / "hgbt",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    # an editable install's import hook would find the built package anyway
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if type(f).__name__ != 'MesonpyMetaFinder']\n")
    out = subprocess.run([sys.executable, "-c", "import hgbt"], cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(tmp_path)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "compiled kernels are missing" in out.stderr and "pip install ." in out.stderr


def test_the_installed_package_says_it_is_typed():
    """PEP 561: type checkers read the public API's hints (py.typed installed)."""
    import hgbt

    assert (Path(hgbt.__file__).parent / "py.typed").is_file()
