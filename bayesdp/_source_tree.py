"""``bayesdp.models`` in a source checkout.

The reference models live in ``models/`` at the top of the repository and install as
``bayesdp.models`` (``package-dir`` in pyproject.toml): a wheel holds them in ``bayesdp/models/``
and an editable install maps the name to ``models/``.  When the checkout is used without installing
it (``PYTHONPATH=/path/to/checkout``), nothing maps the name, so this finder does exactly that one
mapping, and only when ``bayesdp/`` has no ``models`` of its own and ``models/__init__.py`` sits
beside it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_MODELS_DIR = _PACKAGE_DIR.parent / "models"
_NAME = "bayesdp.models"


class _ModelsFinder:
    """Meta-path finder answering only for ``bayesdp.models``."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != _NAME:
            return None
        return importlib.util.spec_from_file_location(
            _NAME, _MODELS_DIR / "__init__.py", submodule_search_locations=[str(_MODELS_DIR)])


def _install() -> None:
    if (_PACKAGE_DIR / "models").exists() or not (_MODELS_DIR / "__init__.py").is_file():
        return  # installed from a wheel (bayesdp/models/ is real) or not a checkout
    if not any(isinstance(f, type) and f.__name__ == _ModelsFinder.__name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _ModelsFinder)


_install()
