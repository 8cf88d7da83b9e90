"""Packaging: every subpackage of bayesdp/ is listed in pyproject.toml (the list is explicit because
models/ installs as bayesdp.models), the version lives in one place, the licence and py.typed ship."""

import os
import tomllib

import pytest

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


def test_models_map_by_packaging_not_by_a_meta_path_finder():
    import sys

    import bayesdp.models

    assert not os.path.exists(os.path.join(ROOT, "bayesdp", "_source_tree.py"))
    assert not any(getattr(f, "__name__", type(f).__name__) == "_ModelsFinder" for f in sys.meta_path)
    assert bayesdp.models.__spec__.name == "bayesdp.models"


@pytest.mark.slow
def test_a_wheel_installs_models_as_bayesdp_models(tmp_path):
    """Build the wheel (pip fetches setuptools>=77 for the isolated build), install it into a fresh virtual
    environment without dependencies, and import bayesdp.models from the installed copy."""
    import subprocess
    import sys

    import shutil

    src, wheels, venv = tmp_path / "src", tmp_path / "wheels", tmp_path / "venv"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__", "site"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # nothing but the venv's own bayesdp
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
                   check=True, cwd=tmp_path, env=env, timeout=600)
    (whl,) = wheels.glob("bayesdp-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env,
                   timeout=300)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(whl)], check=True,
                   cwd=tmp_path, env=env, timeout=300)
    out = subprocess.run([py, "-c", "import bayesdp, bayesdp.models; print(bayesdp.__file__); "
                          "print(bayesdp.models.__file__); print(sorted(bayesdp.models.BUILTIN))"],
                         check=True, capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=300).stdout.split("\n")
    site = str(venv)
    assert out[0].startswith(site) and out[1].startswith(site)
    assert out[1].endswith(os.path.join("bayesdp", "models", "__init__.py"))
    assert "logistic" in out[2]
