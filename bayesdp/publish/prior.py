"""The prior's own spread: a public reference for "never worse than knowing nothing" (docs/release.md §12).

Before anything is charged, the engine compares a release's predicted squared error with the error of
releasing what the prior alone says, computed from the model's prior sites only (never the data):

* :func:`family_variance`: the variance of one prior family in closed form, per coordinate (``inf`` where the
  family has none: Cauchy, HalfCauchy, StudentT with ``df <= 2``; ``None`` for a family without a rule here);
* :func:`prior_spread`: the variance of every latent coordinate, from the model's program traced with abstract
  data (``bayesdp.analysis.tracing``): a site's parameters are evaluated only when they read no program input
  (neither a latent site nor a data argument: the evaluation itself refuses otherwise), so the numbers are public;
* :func:`reference_variances`: the reference variance of each released value of a statistic: the prior variance
  of the coordinate for a mean, a quantile or a median (the prior's sd is the scale of its error), ``1/4`` for a
  probability (the variance of a fair coin, the largest of any [0, 1] quantity), ``(b - a)^2 / 4`` for a user
  function with a declared range ``(a, b)``; ``None`` where no reference exists (the engine then skips the
  comparison for that value and says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..analysis.structure.evaluate import evaluate_constants
from ..analysis.tracing import trace_program
from ..errors import AssumptionError
from .spec import Function, Mean, Probability, Quantiles

__all__ = ["UninformativeError", "PriorSpread", "family_variance", "prior_spread", "reference_variances",
           "FAMILY_VARIANCE"]


class UninformativeError(AssumptionError):
    """A release refused before anything is charged: its predicted error is no better than the prior's own spread
    (or, for a chain, plan or driver given as is, 10x worse than a fresh release).  ``allow_uninformative=True``
    (``--allow-uninformative``) releases it anyway, with a warning in the result.

    Examples:
        >>> issubclass(UninformativeError, AssumptionError)
        True
    """


def _p(params: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    return np.asarray(params[name], dtype=np.float64)


def _student(p):
    df, s = _p(p, "df"), _p(p, "scale")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(df > 2.0, s * s * df / np.where(df > 2.0, df - 2.0, 1.0), np.inf)


def _inverse_gamma(p):
    a, b = _p(p, "concentration"), _p(p, "rate")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 2.0, b * b / np.where(a > 2.0, (a - 1.0) ** 2 * (a - 2.0), 1.0), np.inf)


def _mvn(p):
    if "scale_tril" in p:
        L = _p(p, "scale_tril")
        return np.sum(L * L, axis=-1)                    # diag(L L^T)_i = sum_j L_ij^2
    if "covariance_matrix" in p:
        return np.diagonal(_p(p, "covariance_matrix"), axis1=-2, axis2=-1).copy()
    return np.diagonal(np.linalg.inv(_p(p, "precision_matrix")), axis1=-2, axis2=-1).copy()


#: family -> (variance of one coordinate from the parameters, the closed form in words)
FAMILY_VARIANCE: dict[str, tuple] = {
    "Normal": (lambda p: _p(p, "scale") ** 2, "scale^2"),
    "Laplace": (lambda p: 2.0 * _p(p, "scale") ** 2, "2 scale^2"),
    "StudentT": (_student, "scale^2 df / (df - 2) for df > 2, infinite otherwise"),
    "Cauchy": (lambda p: np.full(np.shape(_p(p, "scale")), np.inf), "none (infinite)"),
    "HalfCauchy": (lambda p: np.full(np.shape(_p(p, "scale")), np.inf), "none (infinite)"),
    "Logistic": (lambda p: math.pi ** 2 / 3.0 * _p(p, "scale") ** 2, "pi^2 scale^2 / 3"),
    "Gumbel": (lambda p: math.pi ** 2 / 6.0 * _p(p, "scale") ** 2, "pi^2 scale^2 / 6"),
    "Uniform": (lambda p: (_p(p, "high") - _p(p, "low")) ** 2 / 12.0, "(high - low)^2 / 12"),
    "HalfNormal": (lambda p: _p(p, "scale") ** 2 * (1.0 - 2.0 / math.pi), "scale^2 (1 - 2/pi)"),
    "Exponential": (lambda p: 1.0 / _p(p, "rate") ** 2, "1 / rate^2"),
    "Gamma": (lambda p: _p(p, "concentration") / _p(p, "rate") ** 2, "concentration / rate^2"),
    "InverseGamma": (_inverse_gamma, "rate^2 / ((concentration - 1)^2 (concentration - 2)) for concentration > 2"),
    "LogNormal": (lambda p: np.expm1(_p(p, "scale") ** 2) * np.exp(2.0 * _p(p, "loc") + _p(p, "scale") ** 2),
                  "(e^{scale^2} - 1) e^{2 loc + scale^2}"),
    "Beta": (lambda p: (_p(p, "concentration1") * _p(p, "concentration0")
                        / ((_p(p, "concentration1") + _p(p, "concentration0")) ** 2
                           * (_p(p, "concentration1") + _p(p, "concentration0") + 1.0))),
             "a b / ((a + b)^2 (a + b + 1))"),
    "MultivariateNormal": (_mvn, "the covariance's diagonal"),
}


def family_variance(family: str, params: Mapping[str, Any], shape: tuple = ()) -> np.ndarray | None:
    """The prior variance of every coordinate of a site of ``family`` with ``params``, broadcast to ``shape``
    (closed forms: :data:`FAMILY_VARIANCE`); ``inf`` where the family has no finite variance.

    Args:
        family: the NumPyro class name (``"Normal"``, ``"StudentT"``, ...).
        params: the parameters (name -> array).
        shape: the site's value shape.

    Returns:
        The variances (float64, ``shape``), or None for a family without a rule here.

    Examples:
        >>> family_variance("Normal", {"loc": 0.0, "scale": 2.0}, (3,)).tolist()
        [4.0, 4.0, 4.0]
        >>> family_variance("StudentT", {"df": [1.5, 4.0], "loc": 0.0, "scale": 1.0}).tolist()
        [inf, 2.0]
        >>> family_variance("VonMises", {"loc": 0.0, "concentration": 1.0}) is None
        True
    """
    rule = FAMILY_VARIANCE.get(family)
    if rule is None:
        return None
    v = np.asarray(rule[0]({k: np.asarray(x, dtype=np.float64) for k, x in params.items()}), dtype=np.float64)
    return np.broadcast_to(v, tuple(shape)).astype(np.float64) if tuple(shape) else v


@dataclass(frozen=True)
class PriorSpread:
    """The prior variance of every latent coordinate (named as the statistics name them: ``w[0]``, ``sigma``),
    with why a coordinate has none.

    Attributes:
        variance: coordinate name -> variance (``inf``: the prior has none).
        missing: coordinate name -> why no variance is known (an unidentified prior).
        families: site -> ``"Normal: scale^2"`` (how each site's variance was found).

    Examples:
        >>> s = PriorSpread({"mu": 1.0}, {"tau": "no rule for a VonMises prior"})
        >>> s.of("mu"), s.of("tau"), s.of("nu")
        (1.0, None, None)
    """

    variance: Mapping[str, float]
    missing: Mapping[str, str] = field(default_factory=dict)
    families: Mapping[str, str] = field(default_factory=dict)

    def of(self, name: str) -> float | None:
        """The prior variance of coordinate ``name`` (``inf`` when infinite), or None when unknown."""
        return self.variance.get(name)

    def why_not(self, name: str) -> str:
        """Why coordinate ``name`` has no finite prior variance (one phrase)."""
        if name in self.missing:
            return self.missing[name]
        site = name.split("[", 1)[0]
        if site in self.missing:
            return self.missing[site]
        v = self.variance.get(name)
        if v is not None and not math.isfinite(v):
            return "its prior has no finite variance"
        return "not a coordinate of a latent site"


def _names(site: str, size: int) -> list[str]:
    return [site] if size == 1 else [f"{site}[{i}]" for i in range(size)]


def prior_spread(model, data_shapes: Mapping[str, tuple], data_dtypes: Mapping[str, Any],
                 model_kwargs: Mapping[str, Any] | None, data_size: int, model_name: str | None = None
                 ) -> PriorSpread:
    """The prior variance of every latent coordinate of ``model``, from its program traced with abstract data of
    these shapes (the data's values never enter).

    A site's variance is known when its family has a closed form (:data:`FAMILY_VARIANCE`), it is neither scaled
    nor masked, and its parameters read no program input (no other latent site: a hierarchical prior; no data
    argument); otherwise the site's coordinates are listed in ``missing`` with the reason.

    Args:
        model: the NumPyro model.
        data_shapes: data argument -> the shape of one record.
        data_dtypes: data argument -> dtype.
        model_kwargs: the model's hyperparameters.
        data_size: the number of records (a prior may depend on it).
        model_name: for messages.

    Returns:
        The :class:`PriorSpread`.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.models import logistic
        >>> s = prior_spread(logistic, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32}, {}, 100)
        >>> s.variance, s.families["w"]
        ({'w[0]': 1.0, 'w[1]': 1.0}, 'Normal: scale^2')
    """
    program = trace_program(model, dict(data_shapes), dict(data_dtypes), dict(model_kwargs or {}), model_name)
    variance: dict[str, float] = {}
    missing: dict[str, str] = {}
    families: dict[str, str] = {}
    for name in program.latent:
        s = program.sites[name]
        try:
            size = int(np.prod([int(n) for n in s.value_shape])) if s.value_shape else 1
        except (TypeError, ValueError):        # a shape with the symbolic record count: a per-record latent site
            missing[name] = f"site '{name}' has one value per record: no prior reference"
            continue
        coords = _names(name, size)

        def skip(why: str) -> None:
            for c in coords:
                missing[c] = why

        rule = FAMILY_VARIANCE.get(s.family)
        if s.family == "ImproperUniform":
            skip(f"site '{name}' has an improper prior (ImproperUniform): no variance")
            continue
        if rule is None:
            skip(f"site '{name}': no variance rule for a {s.family} prior")
            continue
        if getattr(s, "scaled", False) or getattr(s, "masked", False):
            skip(f"site '{name}': a scaled or masked prior is not its family's law")
            continue
        wanted = {k: program.output(name, f"param:{k}") for k in s.params}
        if any(i is None for i in wanted.values()):
            skip(f"site '{name}': its parameters were not traced")
            continue
        try:
            vals = evaluate_constants(program.jaxpr, list(wanted.values()), int(data_size))
        except ValueError:
            skip(f"site '{name}': its {s.family} parameters depend on other latent sites or on the data (a "
                 "hierarchical prior: its marginal variance is not derived here)")
            continue
        try:
            v = family_variance(s.family, dict(zip(wanted, vals)), tuple(s.value_shape))
        except (KeyError, ValueError, np.linalg.LinAlgError) as exc:
            skip(f"site '{name}': its {s.family} variance could not be evaluated ({type(exc).__name__})")
            continue
        flat = np.asarray(v, dtype=np.float64).reshape(-1)
        if flat.size != size or np.any(np.isnan(flat)) or np.any(flat < 0):
            skip(f"site '{name}': its {s.family} variance is not defined for these parameters")
            continue
        families[name] = f"{s.family}: {rule[1]}"
        for c, x in zip(coords, flat):
            variance[c] = float(x)
    return PriorSpread(variance, missing, families)


def reference_variances(statistic_object: Any, statistic, spread: PriorSpread) -> list[tuple[float | None, str]]:
    """The reference variance of each released value (module docstring), with what it is.

    Args:
        statistic_object: what the spec holds (``Mean``, ``Quantiles``/``Median``, ``Probability``, ``Function``
            or a prebuilt :class:`~bayesdp.publish.statistics.Statistic`).
        statistic: the built statistic (its ``names`` and ``range``).
        spread: the prior's :class:`PriorSpread`.

    Returns:
        One ``(variance or None, what)`` per released value; None: no reference (``what`` says why).

    Examples:
        >>> from bayesdp.publish.spec import Mean, Probability, Quantiles
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means, coordinate_quantiles
        >>> sp = PriorSpread({"w[0]": 4.0, "w[1]": float("inf")})
        >>> [v for v, _ in reference_variances(Mean(), coordinate_means([SiteSpec("w", 2)]), sp)]
        [4.0, None]
        >>> [v for v, _ in reference_variances(Quantiles((0.1, 0.9)), coordinate_quantiles([SiteSpec("w", 2)],
        ...                                    (0.1, 0.9)), sp)]
        [4.0, 4.0, None, None]
    """
    names = list(statistic.names)
    if isinstance(statistic_object, Probability):
        return [(0.25, "1/4: the variance of a fair coin (the largest of a [0, 1] quantity)")] * len(names)
    if isinstance(statistic_object, (Mean, Quantiles)):
        out = []
        for n in names:
            coord = n.rsplit(" q", 1)[0] if isinstance(statistic_object, Quantiles) else n
            v = spread.of(coord)
            if v is None or not math.isfinite(v):
                out.append((None, f"{coord}: {spread.why_not(coord)}"))
            else:
                out.append((v, f"the prior variance of {coord}"))
        return out
    rng = getattr(statistic, "range", None)
    if rng is not None:
        a, b = rng
        return [((b - a) ** 2 / 4.0, f"(b - a)^2/4 of the declared range [{a:g}, {b:g}]")] * len(names)
    what = "a user function" if isinstance(statistic_object, Function) else "a prebuilt statistic"
    return [(None, f"{n}: {what} without a declared range has no prior reference") for n in names]
