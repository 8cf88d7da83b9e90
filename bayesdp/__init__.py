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

from ._version import __version__
from .certificate import BoundReport, Certificate
from .curves import GDP, RDP, ApproxDP, DeltaProfile, PrivacyCurve, compose
from .errors import AssumptionError, BayesDPError, BudgetError, DomainError, ModelError
from .mechanisms import MECHANISMS, bound
import importlib

_LAZY = {
    # the model-to-release surface (imports JAX and NumPyro on first use)
    "Domain": ("analysis.domain", "Domain"), "norm_bound": ("analysis.domain", "norm_bound"),
    "box": ("analysis.domain", "box"), "values": ("analysis.domain", "values"),
    "ULA": ("plan", "ULA"), "SGLD": ("plan", "SGLD"), "Plan": ("plan", "Plan"), "certify": ("plan", "certify"),
    "Shapes": ("plan", "Shapes"),
    "PrivateMCMC": ("api", "PrivateMCMC"), "calibrate": ("calibration", "calibrate"),
    "CalibrationOptions": ("calibration", "CalibrationOptions"),
    "PrivacyAccountant": ("budget.accountant", "PrivacyAccountant"), "Ledger": ("budget.ledger", "Ledger"),
    "release": ("api", "release"),
    **{name: ("publish.spec", name) for name in ("ReleaseSpec", "ChainOptions", "Coupling", "SampleAggregate", "Mean",
                                                 "Median", "Quantiles", "Probability", "Function")},
    "enable_compilation_cache": ("jax_cache", "enable_compilation_cache"),
}


def __getattr__(name: str):
    if name == "datasets":   # bundled data

        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:

        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayesdp' has no attribute {name!r}")


def __dir__() -> list[str]:
    """Every public name, the lazily loaded ones included (``dir(bayesdp)``, tab completion)."""
    return sorted(set(globals()) | set(_LAZY) | {"datasets"})


__all__ = [
    "ApproxDP", "AssumptionError", "BayesDPError", "BoundReport", "BudgetError", "Certificate",
    "DeltaProfile", "DomainError", "GDP", "Ledger", "MECHANISMS", "ModelError", "Plan", "PrivacyAccountant",
    "PrivacyCurve", "PrivateMCMC", "RDP", "SGLD", "Shapes", "ULA", "Domain", "bound", "box", "calibrate", "certify",
    "compose", "datasets", "enable_compilation_cache", "norm_bound", "release", "values", "__version__",
    "ReleaseSpec", "ChainOptions", "Coupling", "SampleAggregate", "Mean", "Median", "Quantiles", "Probability",
    "Function", "CalibrationOptions",
]
