"""The python examples of the site's pages (doc/*.md) run.

Each ```python block runs on its own, in a fresh namespace, in a temporary
working directory. A block with a line ``# requires: NAME`` is
skipped while the optional package NAME needs is not installed (see
REQUIREMENTS; tests/requirements.txt installs them all, so CI runs every block
but LightGBM's). doc/dask.md's example needs a cluster: tests/test_dask.py
runs it as a script.
"""
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "doc" / "sklearn.md"
DOCS = tuple(sorted(p for p in (ROOT / "doc").glob("*.md") if p.name != "dask.md"))
PAGE = {p.stem: p for p in DOCS}


def _installed(*modules):
    # the optional packages of an extra (pyproject.toml); CI installs them
    import importlib.util

    return lambda: all(importlib.util.find_spec(m) is not None for m in modules)


REQUIREMENTS = {"sklearn_callbacks": _installed("sklearn.callback"),  # scikit-learn >= 1.9
                "onnx": _installed("skl2onnx", "onnx", "onnxruntime"),
                "treelite": _installed("treelite"),
                "shap": _installed("shap"),
                "lightgbm": _installed("lightgbm")}
# Libraries imported before warnings become errors: shap's import warns under
# newer matplotlib, which is no fault of an example.
IMPORTED_FIRST = {"shap"}


def _blocks(docs=(DOC,)):
    blocks = []
    for doc in docs:
        text = doc.read_text()
        for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            line = text.count("\n", 0, match.start()) + 2  # first code line
            blocks.append(pytest.param(match.group(1), id=f"{doc.stem}-line{line}"))
    return blocks


def _requirements(code):
    return re.findall(r"^#\s*requires:\s*([\w, ]+)$", code, flags=re.M)


def test_the_doc_has_examples_and_known_markers():
    assert len([p.values[0] for p in _blocks()]) >= 10
    blocks = [p.values[0] for p in _blocks(DOCS)]
    markers = {name.strip() for code in blocks for group in _requirements(code)
               for name in group.split(",")}
    assert markers <= set(REQUIREMENTS), markers - set(REQUIREMENTS)


def test_sparse_doc_has_examples():
    assert len(_blocks((PAGE["sparse"],))) >= 2


def test_training_doc_has_examples():
    assert len(_blocks((PAGE["training"],))) >= 4


def test_explain_doc_has_examples():
    assert len(_blocks((PAGE["explain"],))) >= 4


def test_native_doc_has_examples():
    assert len(_blocks((PAGE["native"],))) >= 3


def test_plots_doc_has_examples_and_images():
    text = PAGE["plots"].read_text()
    assert len(_blocks((PAGE["plots"],))) >= 3
    images = re.findall(r"\]\((images/[\w.]+\.png)\)", text)
    assert len(images) == 4
    for image in images:  # committed, small
        assert 0 < (ROOT / "doc" / image).stat().st_size < 120_000


@pytest.mark.parametrize("code", _blocks(DOCS))
def test_doc_example_runs(code, tmp_path, monkeypatch):
    for group in _requirements(code):
        for name in (n.strip() for n in group.split(",")):
            if not REQUIREMENTS[name]():
                pytest.skip(f"needs {name}, which is missing here")
            if name in IMPORTED_FIRST:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(name)
    if "enable_sklearn_recursion()" in code:
        # it changes scikit-learn for the whole process: a fresh interpreter
        prelude = ("import warnings\nimport hgbt, sklearn.inspection\n"
                   "warnings.simplefilter('error')\n")
        result = subprocess.run([sys.executable, "-c", prelude + code], cwd=tmp_path,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        return
    monkeypatch.chdir(tmp_path)  # examples may write files (model.joblib, ...)
    with warnings.catch_warnings():
        # A warning in an example is a bug in it (e.g. a search whose fits
        # failed and scored NaN).
        warnings.simplefilter("error")
        exec(compile(code, "doc example", "exec"), {"__name__": "__doc_example__"})
    if "matplotlib" in code:
        import matplotlib.pyplot as plt

        plt.close("all")
