"""Mechanisms answered by ``bayesdp bound``.

Importing this package imports every module in it; each module registers its
mechanisms with [`register`][bayesdp.mechanisms.register] (one module per family of results).
"""

import importlib as _importlib
import pkgutil as _pkgutil

from .registry import MECHANISMS, Mechanism, Option, Route, bound, get_mechanism, register

for _m in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name not in ("registry",) and not _m.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["MECHANISMS", "Mechanism", "Option", "Route", "bound", "get_mechanism", "register"]
