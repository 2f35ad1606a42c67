"""Write the intersphinx fallback inventories into doc/_inventories/.

    python doc/make_inventories.py

The site links to scikit-learn, NumPy, pandas, Dask and Python through
intersphinx. conf.py asks each project's published ``objects.inv`` first and
falls back to these files, so the site also builds where the documentation
hosts cannot be reached (a machine that reaches only a package index: the
build would otherwise warn, and warnings are errors). Each file lists the
installed package's public names at the URL its documentation uses for them.
"""
import importlib
import inspect
import pkgutil
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent / "_inventories"


def _write(project, version, entries):
    """entries: (name, domain:role, uri[, title]) -> a version 2 Sphinx inventory."""
    entries = sorted({e if len(e) == 4 else (*e, "-") for e in entries})
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n").encode()
    lines = "".join(f"{name} {role} {-1 if role.startswith('std:') else 1} {uri} {title}\n"
                    for name, role, uri, title in entries)
    (OUT / f"{project}.inv").write_bytes(header + zlib.compress(lines.encode()))
    print(f"{project}: {len(entries)} names")


def _role(obj):
    return "py:class" if inspect.isclass(obj) else "py:function"


def _public(module_name):
    module = importlib.import_module(module_name)
    for name in getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]):
        obj = getattr(module, name, None)
        if callable(obj):  # classes and functions
            yield name, obj


def sklearn_entries():
    import sklearn

    for info in pkgutil.iter_modules(sklearn.__path__):
        if info.name.startswith("_") or info.name in {"tests", "externals", "conftest"}:
            continue
        module = f"sklearn.{info.name}"
        try:
            names = list(_public(module))
        except Exception:  # a module that needs an optional package
            continue
        for name, obj in names:
            full = f"{module}.{name}"
            yield full, _role(obj), f"modules/generated/{full}.html#{full}"
    yield "sklearn", "std:doc", "index.html"
    # the labels and terms of scikit-learn's docstrings that hgbt's estimators inherit
    yield "metadata_routing", "std:label", "metadata_routing.html#metadata-routing", \
        "Metadata Routing"
    yield "meta-estimator", "std:term", "glossary.html#term-meta-estimator", "meta-estimator"
    yield "r2_score", "std:label", "modules/model_evaluation.html#r2-score", "R² score"
    yield "accuracy_score", "std:label", "modules/model_evaluation.html#accuracy-score", \
        "Accuracy score"


def numpy_entries():
    for name, obj in _public("numpy"):  # ndarray and dtype among them
        full = f"numpy.{name}"
        yield full, _role(obj), f"reference/generated/{full}.html#{full}"
    yield "numpy.random.Generator", "py:class", \
        "reference/random/generator.html#numpy.random.Generator"


def pandas_entries():
    for name, obj in _public("pandas"):
        full = f"pandas.{name}"
        yield full, _role(obj), f"reference/api/{full}.html#{full}"


def dask_entries():
    for full in ("dask.array.Array", "dask.dataframe.DataFrame", "dask.dataframe.Series"):
        yield full, "py:class", f"generated/{full}.html#{full}"


def python_entries():
    for full, page in (("pathlib.Path", "library/pathlib.html"), ("os.PathLike", "library/os.html"),
                       ("collections.abc.Iterable", "library/collections.abc.html"),
                       ("collections.abc.Callable", "library/collections.abc.html"),
                       ("collections.abc.Iterator", "library/collections.abc.html"),
                       ("threading.Event", "library/threading.html"),
                       ("pickle", "library/pickle.html")):
        role = "py:module" if "." not in full else "py:class"
        yield full, role, f"{page}#{full if role == 'py:class' else 'module-' + full}"
    for name in ("int", "float", "str", "bool", "dict", "list", "tuple", "bytes", "object"):
        role = "py:class"
        yield name, role, f"library/functions.html#{name}"
    for name in ("ValueError", "TypeError", "OSError", "UserWarning", "KeyboardInterrupt"):
        yield name, "py:exception", f"library/exceptions.html#{name}"


def main():
    OUT.mkdir(exist_ok=True)
    import numpy
    import pandas
    import sklearn

    _write("sklearn", sklearn.__version__, sklearn_entries())
    _write("numpy", numpy.__version__, numpy_entries())
    _write("pandas", pandas.__version__, pandas_entries())
    _write("dask", "stable", dask_entries())
    _write("python", f"{sys.version_info[0]}.{sys.version_info[1]}", python_entries())


if __name__ == "__main__":
    main()
