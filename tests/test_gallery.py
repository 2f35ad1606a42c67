"""The example gallery (doc/examples/plot_*.py) runs, each script drawing a
figure, and the API reference (doc/api.rst) names every public name.

The site itself is not built here (Sphinx is the ``doc`` extra, and the build
takes minutes): these are the parts of it that can go stale without a build.
"""
import importlib
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "doc" / "examples").glob("plot_*.py"))
API = ROOT / "doc" / "api.rst"
# Public modules, each with its __all__; hgbt.dask needs the dask extra.
PUBLIC_MODULES = ("hgbt", "hgbt.callbacks", "hgbt.datasets", "hgbt.export", "hgbt.inspection",
                  "hgbt.persistence", "hgbt.plotting", "hgbt.dask")


def test_the_gallery_has_at_least_twelve_examples():
    assert len(EXAMPLES) >= 12
    for path in EXAMPLES:  # sphinx-gallery's layout: an RST title in the docstring
        assert re.match(r'"""\n?(.+)\n=+\n', path.read_text()), path.name


def _cells(source):
    """The script's cells as sphinx-gallery splits them (at ``# %%`` lines)."""
    return re.split(r"^# %%.*$", source, flags=re.M)


def _drawn(figure):
    """What a figure shows, coarsely: its axes and their artists."""
    return tuple(len(ax.get_children()) for ax in figure.axes)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_gallery_example_runs_and_draws(path, tmp_path, monkeypatch):
    """Run cell by cell, as the site's build does: it saves and closes the
    open figures after each cell, so a figure drawn on in a later cell would
    appear incomplete on the page."""
    matplotlib = pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__", "__file__": str(path)}
    captured = []  # (cell, figure, what it showed when the cell ended)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning in an example is a bug in it
            for i, cell in enumerate(_cells(path.read_text())):
                code = compile(cell, f"{path.name}, cell {i}", "exec")
                exec(code, namespace)
                captured += [(i, figure, _drawn(figure))
                             for figure in map(plt.figure, plt.get_fignums())]
                plt.close("all")
        assert captured, f"{path.name} drew no figure"
        for cell, figure, seen in captured:
            assert _drawn(figure) == seen, (
                f"{path.name}: a figure shown after cell {cell} is drawn on later")
    finally:
        plt.close("all")


def _documented_names():
    text = API.read_text()
    names = set(re.findall(r"^   (\w+)$", text, flags=re.M))          # autosummary entries
    names |= set(re.findall(r"^\.\. py:data:: (\w+)$", text, flags=re.M))
    return names


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_the_api_reference_names_every_public_name(module_name):
    if module_name == "hgbt.dask":
        pytest.importorskip("distributed")
    module = importlib.import_module(module_name)
    public = set(module.__all__) - {"__version__"}
    missing = public - _documented_names()
    assert not missing, f"doc/api.rst lacks {sorted(missing)} of {module_name}"
