"""Sphinx configuration of hgbt's documentation site.

Build (from the repository root, after ``pip install ".[doc]"``)::

    sphinx-build -W --keep-going -b html doc doc/_build/html

Warnings are errors. ``python doc/check_site.py`` then checks the built site
in a headless Chromium (images, search, internal links) and its external links.
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The installed hgbt, not the unbuilt source tree (``python -m sphinx`` run
# from the repository root puts it first on the path).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE.parent]

import hgbt  # noqa: E402

project = "hgbt"
author = "the hgbt developers"
copyright = "2026, the hgbt developers"
release = hgbt.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "_inventories", "examples", "images/README.md",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json"]

# The Markdown pages: headings get anchors (the pages link to #section-names).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# The API reference: one page per public name, its methods with their parameters.
autosummary_generate = True
# undoc-members: class attributes a subclass inherits (a callback's `reason`)
autodoc_default_options = {"members": True, "inherited-members": True, "undoc-members": True,
                           # an exception's own members, from Python
                           "exclude-members": "add_note,args,with_traceback"}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# Cross-references to the libraries hgbt works with. Each project's published
# inventory first; a local copy (doc/make_inventories.py) where it cannot be
# reached, so that an offline build does not warn.
intersphinx_timeout = 10


def _inventory(name, url):
    return url, (None, str(HERE / "_inventories" / f"{name}.inv"))


intersphinx_mapping = {
    "python": _inventory("python", "https://docs.python.org/3/"),
    "numpy": _inventory("numpy", "https://numpy.org/doc/stable/"),
    "sklearn": _inventory("sklearn", "https://scikit-learn.org/stable/"),
    "pandas": _inventory("pandas", "https://pandas.pydata.org/docs/"),
    "dask": _inventory("dask", "https://docs.dask.org/en/stable/"),
}

# The gallery: every figure is drawn by its example's code at build time.
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("hgbt",),
    "backreferences_dir": "generated/backreferences",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "matplotlib_animations": False,
    # HGBT_DOC_PLOT=0 builds the pages without running the examples (quick edits)
    "plot_gallery": os.environ.get("HGBT_DOC_PLOT", "1") != "0",
}

html_theme = "pydata_sphinx_theme"
html_title = f"hgbt {release}"
html_static_path = []
# light unless the reader chose otherwise (the theme logs an error without it)
html_context = {"default_mode": "light"}
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}

linkcheck_timeout = 15
linkcheck_anchors = False
