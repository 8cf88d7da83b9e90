"""The package version, written in this one place (pyproject.toml reads it as ``bayesdp._version.__version__``)."""

__version__ = "0.1.0"
