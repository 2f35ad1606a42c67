"""The package version (``hgbt.__version__``), for modules below the package's face."""
__version__ = "0.1.0.dev0"
