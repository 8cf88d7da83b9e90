"""Mechanisms answered by ``bayesdp bound``: importing this package registers them all."""

from . import langevin  # noqa: F401  (registers the 004 mechanisms)
from .registry import MECHANISMS, Mechanism, Option, Route, bound, get_mechanism, register

__all__ = ["MECHANISMS", "Mechanism", "Option", "Route", "bound", "get_mechanism", "register"]
