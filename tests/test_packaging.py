"""Packaging: every subpackage of bayesdp/ is listed in pyproject.toml (the list is explicit because
models/ installs as bayesdp.models), the version lives in one place, the licence and py.typed ship."""

import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_every_subpackage_is_listed():
    tool = _pyproject()["tool"]["setuptools"]
    listed = set(tool["packages"])
    found = {"bayesdp.models", "bayesdp.data"}
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "bayesdp")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        if "__init__.py" in filenames:
            found.add(os.path.relpath(dirpath, ROOT).replace(os.sep, "."))
    assert listed == found, f"pyproject.toml [tool.setuptools] packages: add {sorted(found - listed)}, " \
                            f"remove {sorted(listed - found)}"
    assert tool["package-dir"] == {"bayesdp.models": "models"}


def test_version_licence_and_typing_marker():
    import bayesdp
    from bayesdp._version import __version__

    meta = _pyproject()
    assert "version" in meta["project"]["dynamic"] and "version" not in meta["project"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bayesdp._version.__version__"}
    assert bayesdp.__version__ == __version__ and __version__.count(".") == 2
    assert meta["project"]["license"] == "Apache-2.0"
    assert open(os.path.join(ROOT, "LICENSE")).read().lstrip().startswith("Apache License")
    assert os.path.isfile(os.path.join(ROOT, "bayesdp", "py.typed"))
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["bayesdp"]


def test_builtin_models_import_as_bayesdp_models():
    import bayesdp.models

    assert os.path.realpath(bayesdp.models.__file__).endswith(os.path.join("models", "__init__.py"))
    assert {"logistic", "softmax", "robust", "sparse_logistic", "poisson"} <= set(bayesdp.models.BUILTIN)
