"""Abstract interpreters over the model's traced program (jaxpr), each one table from primitive
to rule: :mod:`.dependence` (theta / data argument / record), :mod:`.affinity` (affine in theta),
:mod:`.bounds` (intervals and linear forms over the declared domain); :mod:`.interpreter` is the
driver they share and :mod:`.evaluate` evaluates values proven constant."""

from .affinity import Aff, Affinity
from .bounds import Bound, Bounds, Lin
from .dependence import COUPLED, Dep, Dependence
from .interpreter import Interpreter, Run, conc, where
from . import bounds as _bounds, rational as _rational, switch as _switch

# the rules bounds reads from the modules built on it (bounds.HOOKS: importing them from bounds would be a cycle)
_bounds.HOOKS.update(rational_tangent=_rational.rational_tangent, select_conditions=_switch.select_conditions)

__all__ = ["Aff", "Affinity", "Bound", "Bounds", "COUPLED", "Dep", "Dependence", "Interpreter", "Lin", "Run", "conc", "where"]
