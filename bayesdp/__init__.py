"""bayesdp: private Bayesian inference with certified differential privacy.

Quick start::

    >>> import bayesdp
    >>> report = bayesdp.bound("ula-final", strong_convexity=1, smoothness=1, grad_bound=0.5,
    ...                        step_size=0.01, num_steps=10_000, delta=1e-5)
    >>> report.best.source
    '004 Proposition 4.6, optimised window, GDP (docs/tight.md)'
    >>> round(report.value(), 3)
    9.997
"""

from . import _source_tree
from ._version import __version__
from .certificate import BoundReport, Certificate
from .curves import GDP, RDP, ApproxDP, DeltaProfile, PrivacyCurve, compose
from .errors import AssumptionError, BayesDPError, BudgetError, DomainError, ModelError
from .mechanisms import MECHANISMS, bound

__all__ = [
    "ApproxDP", "AssumptionError", "BayesDPError", "BoundReport", "BudgetError", "Certificate",
    "DeltaProfile", "DomainError", "GDP", "MECHANISMS", "ModelError", "PrivacyCurve", "RDP",
    "bound", "compose", "__version__",
]
