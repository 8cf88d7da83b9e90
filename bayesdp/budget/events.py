"""DP events: immutable descriptions of what ran, as the budget layer composes them (docs/ledger.md).

Every event is a frozen dataclass with

* ``minimal_charge(delta)``: the smallest (epsilon, delta) pair, as exact decimals, that the event may be
  charged at (a charge below it is refused before anything is written);
* ``pld_event()``: a dp-accounting event with the same privacy loss distribution (composed by
  ``dp_accounting.pld.PLDAccountant``), or ``None``; then ``pld_pair()`` is the (epsilon, delta) pair whose dominating PLD is composed instead
  (``None``: the PLD rule does not apply); ``own_delta`` (a
  sensitivity route's failure probability) is added by the union bound;
* ``rdp_event()``: a dp-accounting event whose Renyi curve dominates it (``RdpAccountant``), or ``None``;
* ``to_json()`` / :func:`event_from_json`: the canonical form stored in the ledger.

Events read like mappings (``ev["noise_scale"]``, ``dict(ev)``) of their JSON form, so that callers that
print or store them need not know the classes.

The events and why each dominating event is sound:

* :class:`DiscreteLaplaceEvent` (the secure release of :func:`bayesdp.publish.noise.laplace_release`):
  epsilon ``(l1_sensitivity + grid_rounding) / noise_scale``; one coordinate on a grid ``r`` is exactly
  dp-accounting's ``DiscreteLaplaceDpEvent(a = r / noise_scale, n = floor(s / r) + 1)`` (grid indices of
  neighbours differ by at most ``n``; ``a`` rounded UP), several coordinates are taken as a pure epsilon pair;
* an (epsilon, delta) pair (a plain pair, a curve at one point, a discrete Gaussian at its charge) is composed
  by the PLD of the Kairouz-Oh-Viswanath mechanism that dominates every (epsilon, delta)-DP mechanism
  (dp-accounting's ``from_privacy_parameters``);
* :class:`GDPEvent` (mu-GDP): by definition dominated by the Gaussian mechanism of noise multiplier
  ``1 / mu`` (rounded down); Renyi curve ``alpha mu^2 / 2``;
* :class:`ZCDPEvent` and :class:`DiscreteGaussianEvent` (rho-zCDP, CKS20 Theorem 14): Renyi curve
  ``alpha rho`` (``ZCDpEvent``); for the PLD rule, the (epsilon, delta) pair they are charged at;
* pure epsilon-DP events have Renyi curve ``alpha epsilon^2 / 2`` (epsilon-DP implies epsilon^2/2-zCDP,
  Bun-Steinke 2016 Prop. 1.4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal
from fractions import Fraction
from typing import Any, ClassVar

from ..errors import BudgetError
from .numbers import EXACT, decimal_at_least, float_at_least, to_decimal
from ..curves import GDP, RDP, ApproxDP, PrivacyCurve

__all__ = ["DiscreteLaplaceEvent", "DiscreteGaussianEvent", "LaplaceEvent", "GDPEvent", "ZCDPEvent",
           "EpsilonDeltaEvent", "Event", "event_from_json", "as_event", "curve_event", "laplace_event",
           "discrete_gaussian_event"]

#: the largest integer sensitivity (grid steps) for which dp-accounting's discrete-Laplace PLD is built (it
#: enumerates every step); a finer grid is composed as its pure epsilon pair
DL_MAX_SENSITIVITY = 10 ** 6




def _finite(name: str, x: Any, lo: float = 0.0, strict: bool = True) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise BudgetError(f"event: {name} = {x!r} is not a number; pass a finite number") from None
    if isinstance(x, bool) or not math.isfinite(v) or not (v > lo if strict else v >= lo):
        raise BudgetError(f"event: {name} = {x!r} must be finite and {'>' if strict else '>='} {lo:g}")
    return v


def _delta(name: str, x: Any) -> float:
    v = _finite(name, x, 0.0, strict=False)
    if not v < 1:
        raise BudgetError(f"event: {name} = {x!r} must be in [0, 1)")
    return v


def _grid(r: Any) -> None:
    if r is not None and not float(r) >= 2.2250738585072014e-308:
        raise BudgetError(f"event: grid = {r!r} is below the smallest normal double: values cannot be rounded to it "
                          "and the noise cannot be drawn; lower epsilon")


class _Event(Mapping):
    """Shared behaviour: a read-only mapping of the JSON form; immutable."""

    type: ClassVar[str] = ""
    own_delta: float = 0.0

    def to_json(self) -> dict:
        """Its canonical JSON form (``type`` and the fields; decimals as strings)."""
        out = {"type": self.type}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Decimal):
                v = _dstr(v)
            if f.name in self._optional and v in (None, 0.0, ""):
                continue
            out[f.name] = v
        return out

    _optional: ClassVar[tuple] = ()

    def __getitem__(self, key):
        return self.to_json()[key]

    def __iter__(self):
        return iter(self.to_json())

    def __len__(self):
        return len(self.to_json())

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        return None

    def pld_pair(self):
        """The (epsilon, delta) pair whose dominating PLD the PLD rule composes when there is no PLD event (None: none)."""
        return None

    def __hash__(self):
        return hash((self.type, tuple(sorted((k, str(v)) for k, v in self.to_json().items()))))

    def __eq__(self, other):
        if isinstance(other, Mapping):
            return dict(self.to_json()) == dict(other.items()) if not isinstance(other, _Event) else \
                self.to_json() == other.to_json()
        return NotImplemented


def _dstr(d: Decimal) -> str:
    return "0" if d == 0 else str(d)


@dataclass(frozen=True, eq=False)
class DiscreteLaplaceEvent(_Event):
    """The secure discrete-Laplace release (:func:`laplace_event` builds it).

    Attributes:
        l1_sensitivity: proven L1 sensitivity.
        grid_rounding: charged grid rounding.
        noise_scale: the noise scale b.
        delta: the sensitivity route's own delta.
        coords: number of coordinates (with ``grid``: the exact one-coordinate PLD).
        grid: the grid spacing r.

    Examples:
        >>> ev = DiscreteLaplaceEvent(1.0, 0.0, 2.0)
        >>> ev.minimal_charge(0)
        (Decimal('0.5'), Decimal('0'))
    """

    type: ClassVar[str] = "laplace"
    l1_sensitivity: float
    grid_rounding: float
    noise_scale: float
    delta: float = 0.0
    coords: int | None = None
    grid: float | None = None
    _optional: ClassVar[tuple] = ("coords", "grid")

    def __post_init__(self):
        _finite("l1_sensitivity", self.l1_sensitivity)
        _finite("grid_rounding", self.grid_rounding, strict=False)
        b = _finite("noise_scale", self.noise_scale)
        if b < 2.2250738585072014e-308:
            raise BudgetError(f"laplace event: noise_scale = {b!r} is below the smallest normal double: the noise "
                              "cannot be drawn; lower epsilon")
        _delta("delta", self.delta)
        _grid(self.grid)

    @property
    def own_delta(self) -> float:
        """The delta outside the event's curve (a sensitivity route's failure probability), added by the union bound."""
        return float(self.delta)

    def epsilon_exact(self) -> Fraction:
        """Its epsilon ``(l1_sensitivity + grid_rounding) / noise_scale``, exactly."""
        return (Fraction(self.l1_sensitivity) + Fraction(self.grid_rounding)) / Fraction(self.noise_scale)

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""
        return decimal_at_least(self.epsilon_exact()), Decimal(float(self.delta))

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        from dp_accounting import dp_event

        if self.coords == 1 and self.grid:
            r, b, s = Fraction(self.grid), Fraction(self.noise_scale), Fraction(self.l1_sensitivity)
            a = float_at_least(r / b)
            n = math.floor(s / r) + 1
            if math.isfinite(a) and n <= DL_MAX_SENSITIVITY and Fraction(a) * n <= self.epsilon_exact() * (1 + Fraction(1, 10 ** 12)):
                return dp_event.DiscreteLaplaceDpEvent(noise_parameter=a, sensitivity=n)
        return None

    def pld_pair(self):
        """The (epsilon, delta) pair whose dominating PLD the PLD rule composes when there is no PLD event (None: none)."""
        return self.epsilon_exact(), Fraction(0)

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        from dp_accounting import dp_event

        e = float_at_least(self.epsilon_exact())
        return dp_event.ZCDpEvent(rho=float_at_least(Fraction(e) ** 2 / 2))


@dataclass(frozen=True, eq=False)
class DiscreteGaussianEvent(_Event):
    """The secure discrete-Gaussian release (:func:`discrete_gaussian_event` builds it): ``rho``-zCDP
    (CKS20 Theorem 14), charged at its (epsilon, delta) at ``conversion_delta`` plus its own ``delta``.

    Examples:
        >>> DiscreteGaussianEvent(1.0, 0.0, 2.0, 0.125, 1e-6).rho
        0.125
    """

    type: ClassVar[str] = "discrete_gaussian"
    l2_sensitivity: float
    grid_rounding: float
    sigma: float
    rho: float
    conversion_delta: float
    delta: float = 0.0
    coords: int | None = None
    grid: float | None = None
    _optional: ClassVar[tuple] = ("coords", "grid")

    def __post_init__(self):
        s = _finite("l2_sensitivity", self.l2_sensitivity)
        g = _finite("grid_rounding", self.grid_rounding, strict=False)
        sg = _finite("sigma", self.sigma)
        r = _finite("rho", self.rho)
        cd = _finite("conversion_delta", self.conversion_delta)
        if not cd < 1:
            raise BudgetError(f"discrete Gaussian event: conversion_delta = {cd!r} must be in (0, 1)")
        _delta("delta", self.delta)
        _grid(self.grid)
        e = Fraction(s) + Fraction(g)
        if e * e / (2 * Fraction(sg) ** 2) > Fraction(r):
            raise BudgetError(f"discrete Gaussian event: rho = {r!r} is below (sensitivity + rounding)^2 / (2 sigma^2)")

    @property
    def own_delta(self) -> float:
        """The delta outside the event's curve (a sensitivity route's failure probability), added by the union bound."""
        return float(self.delta)

    def _eps(self) -> float:
        return float(RDP.linear(float(self.rho)).epsilon(float(self.conversion_delta)))

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""

        return decimal_at_least(self._eps()), EXACT.add(Decimal(float(self.conversion_delta)), Decimal(float(self.delta)))

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        return None

    def pld_pair(self):
        """The (epsilon, delta) pair whose dominating PLD the PLD rule composes when there is no PLD event (None: none)."""
        return Fraction(self.minimal_charge()[0]), Fraction(self.conversion_delta)

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(rho=float(self.rho))


@dataclass(frozen=True, eq=False)
class LaplaceEvent(_Event):
    """The continuous Laplace mechanism of noise multiplier ``b / sensitivity`` (dp-accounting's
    ``LaplaceDpEvent``).

    Examples:
        >>> LaplaceEvent(2.0).minimal_charge(0)
        (Decimal('0.5'), Decimal('0'))
    """

    type: ClassVar[str] = "laplace_continuous"
    noise_multiplier: float

    def __post_init__(self):
        _finite("noise_multiplier", self.noise_multiplier)

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""
        return decimal_at_least(1 / Fraction(self.noise_multiplier)), Decimal(0)

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        from dp_accounting import dp_event

        return dp_event.LaplaceDpEvent(noise_multiplier=float(self.noise_multiplier))

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        return self.pld_event()


@dataclass(frozen=True, eq=False)
class GDPEvent(_Event):
    """A mu-GDP mechanism (Dong-Roth-Su): composed exactly with other GDP events (mu's add in quadrature),
    and as the Gaussian mechanism of noise multiplier ``1 / mu`` by dp-accounting.

    Examples:
        >>> GDPEvent(0.5).to_json()
        {'type': 'gdp', 'mu': 0.5}
    """

    type: ClassVar[str] = "gdp"
    mu: float

    def __post_init__(self):
        _finite("mu", self.mu)

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""

        d = float(delta or 0.0)
        if d <= 0:
            raise BudgetError(f"a {self.mu!r}-GDP event has no pure epsilon: charge it at a delta > 0")
        return decimal_at_least(float(GDP(float(self.mu)).epsilon(d))), Decimal(repr(d))

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        from dp_accounting import dp_event

        nm = 1.0 / float(self.mu)
        if Fraction(nm) * Fraction(self.mu) > 1:
            nm = math.nextafter(nm, 0.0)
        return dp_event.GaussianDpEvent(noise_multiplier=nm)

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        return self.pld_event()


@dataclass(frozen=True, eq=False)
class ZCDPEvent(_Event):
    """A rho-zCDP mechanism (Renyi curve ``alpha rho``; e.g. a linear RDP curve).

    Examples:
        >>> ZCDPEvent(0.5).to_json()
        {'type': 'zcdp', 'rho': 0.5}
    """

    type: ClassVar[str] = "zcdp"
    rho: float

    def __post_init__(self):
        _finite("rho", self.rho)

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""

        d = float(delta or 0.0)
        if d <= 0:
            raise BudgetError(f"a {self.rho!r}-zCDP event has no pure epsilon: charge it at a delta > 0")
        return decimal_at_least(float(RDP.linear(float(self.rho)).epsilon(d))), Decimal(repr(d))

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        return None

    def pld_pair(self):
        """The (epsilon, delta) pair whose dominating PLD the PLD rule composes when there is no PLD event (None: none)."""
        return None

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(rho=float(self.rho))


@dataclass(frozen=True, eq=False)
class EpsilonDeltaEvent(_Event):
    """A generic (epsilon, delta)-DP mechanism (exact decimals): a plain pair, or a privacy curve (e.g. a
    Girsanov curve) taken at one point.

    Examples:
        >>> EpsilonDeltaEvent(Decimal("0.5"), Decimal("1e-6")).to_json()
        {'type': 'epsilon_delta', 'epsilon': '0.5', 'delta': '0.000001'}
    """

    type: ClassVar[str] = "epsilon_delta"
    epsilon: Decimal
    delta: Decimal = Decimal(0)
    source: str = ""
    _optional: ClassVar[tuple] = ("source",)

    def __post_init__(self):
        e, d = to_decimal(self.epsilon, "epsilon"), to_decimal(self.delta, "delta")
        if e < 0 or not 0 <= d < 1:
            raise BudgetError(f"epsilon = {self.epsilon!r}, delta = {self.delta!r}: need epsilon >= 0 and delta in "
                              "[0, 1)")

        object.__setattr__(self, "epsilon", e.normalize(EXACT) if e != 0 else Decimal(0))
        object.__setattr__(self, "delta", d.normalize(EXACT) if d != 0 else Decimal(0))

    def minimal_charge(self, delta=None):
        """The smallest (epsilon, delta) it may be charged at (a curve taken at ``delta``), as exact decimals."""
        return self.epsilon, self.delta

    def pld_event(self):
        """The dp-accounting event with its privacy loss distribution, or None."""
        return None

    def pld_pair(self):
        """The (epsilon, delta) pair whose dominating PLD the PLD rule composes when there is no PLD event (None: none)."""
        return Fraction(self.epsilon), Fraction(self.delta)

    @property
    def own_delta(self) -> float:
        """The delta outside the event's curve (a sensitivity route's failure probability), added by the union bound."""
        return 0.0

    def rdp_event(self):
        """The dp-accounting event whose Renyi curve dominates it, or None."""
        from dp_accounting import dp_event

        if self.delta != 0:
            return None
        e = float_at_least(self.epsilon)
        return dp_event.ZCDpEvent(rho=float_at_least(Fraction(e) ** 2 / 2))

    def to_json(self) -> dict:
        """Its canonical JSON form (``type`` and the fields; decimals as strings)."""
        out = {"type": self.type, "epsilon": _dstr(self.epsilon), "delta": _dstr(self.delta)}
        if self.source:
            out["source"] = self.source
        return out


Event = DiscreteLaplaceEvent | DiscreteGaussianEvent | LaplaceEvent | GDPEvent | ZCDPEvent | EpsilonDeltaEvent
_TYPES = {c.type: c for c in (DiscreteLaplaceEvent, DiscreteGaussianEvent, LaplaceEvent, GDPEvent, ZCDPEvent,
                              EpsilonDeltaEvent)}


def event_from_json(d: Mapping) -> Event:
    """The event of a JSON form (:meth:`to_json`), checked.

    Args:
        d: the mapping, with ``type``.

    Returns:
        The event.

    Raises:
        BudgetError: no or an unknown ``type``, or malformed parameters.

    Examples:
        >>> event_from_json({"type": "gdp", "mu": 0.5})
        GDPEvent(mu=0.5)
        >>> event_from_json({"mu": 0.5})
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: DP event {'mu': 0.5} has no 'type'; pass one of discrete_gaussian, epsilon_delta, gdp, laplace, laplace_continuous, zcdp
    """
    if isinstance(d, _Event):
        return d
    kinds = ", ".join(sorted(_TYPES))
    if not isinstance(d, Mapping) or "type" not in d:
        raise BudgetError(f"DP event {d!r} has no 'type'; pass one of {kinds}")
    cls = _TYPES.get(d["type"])
    if cls is None:
        raise BudgetError(f"DP event type = {d['type']!r} is unknown; pass one of {kinds}")
    names = {f.name for f in fields(cls)}
    extra = set(d) - names - {"type"}
    if extra:
        raise BudgetError(f"DP event {d['type']!r}: unknown field(s) {sorted(extra)}; allowed: {sorted(names)}")
    try:
        return cls(**{k: v for k, v in d.items() if k != "type"})
    except TypeError as e:
        raise BudgetError(f"DP event {d['type']!r}: {e}; allowed fields: {sorted(names)}") from None


def curve_event(curve, delta: Any = None) -> Event:
    """The event of a privacy curve: GDP and linear Renyi curves exactly, an (epsilon, delta) curve as its pair,
    any other curve (a Girsanov curve) at its point ``(curve.epsilon(delta), delta)``.

    Args:
        curve: a :class:`bayesdp.curves.PrivacyCurve`.
        delta: the delta at which another curve is taken (> 0).

    Returns:
        The event.

    Raises:
        BudgetError: another curve without a positive delta.

    Examples:
        >>> from bayesdp.curves import GDP, ApproxDP
        >>> curve_event(GDP(0.5)), curve_event(ApproxDP(1.0))
        (GDPEvent(mu=0.5), EpsilonDeltaEvent(epsilon=Decimal('1'), delta=Decimal('0'), source=''))
    """

    if isinstance(curve, GDP):
        return GDPEvent(float(curve.mu))
    if isinstance(curve, ApproxDP):
        return EpsilonDeltaEvent(Decimal(repr(float(curve.eps0))), decimal_at_least(float(curve.delta0)))
    if isinstance(curve, RDP) and curve.is_linear:
        return ZCDPEvent(float(curve.kappa))
    d = float(delta or 0.0)
    if not d > 0:
        raise BudgetError(f"a {type(curve).__name__} curve is charged at a point: pass delta > 0")
    return EpsilonDeltaEvent(decimal_at_least(float(curve.epsilon(d))), decimal_at_least(d),
                             source=f"{type(curve).__name__} at delta {d!r}")


def as_event(x: Any, delta: Any = None) -> Event:
    """An event from an event, its JSON form, a dp-accounting event (Gaussian, Laplace, zCDP) or a privacy curve.

    Args:
        x: what to convert.
        delta: the delta at which a curve without an exact event is taken.

    Returns:
        The event.

    Raises:
        BudgetError: something that is not a DP event.

    Examples:
        >>> from dp_accounting import dp_event
        >>> as_event(dp_event.GaussianDpEvent(2.0))
        GDPEvent(mu=0.5)
    """
    if isinstance(x, _Event):
        return x
    if isinstance(x, Mapping):
        return event_from_json(x)
    from dp_accounting import dp_event

    if isinstance(x, dp_event.GaussianDpEvent):
        return GDPEvent(float_at_least(1 / Fraction(_finite("noise_multiplier", x.noise_multiplier))))
    if isinstance(x, dp_event.LaplaceDpEvent):
        return LaplaceEvent(float(x.noise_multiplier))
    if isinstance(x, dp_event.ZCDpEvent) and not x.xi:
        return ZCDPEvent(float(x.rho))
    if isinstance(x, PrivacyCurve):
        return curve_event(x, delta)
    raise BudgetError(f"cannot account for {type(x).__name__}: pass a certificate, a chain, a release, a DP event "
                      "(Gaussian, Laplace, zCDP) or an (epsilon, delta) pair")


def laplace_event(sensitivity: float, grid_rounding: float, noise_epsilon: float, delta: float = 0.0,
                  coords: int | None = None, grid: float | None = None) -> DiscreteLaplaceEvent:
    """DP event of :func:`bayesdp.publish.noise.laplace_release`: Laplace noise of scale
    ``(sensitivity + grid_rounding) / noise_epsilon`` (rounded up to a double, as noise.py reports it) on a
    statistic of proven L1 sensitivity ``sensitivity``; ``delta`` is the sensitivity route's delta.

    Args:
        sensitivity: the proven L1 sensitivity (> 0).
        grid_rounding: the charged grid rounding (>= 0).
        noise_epsilon: the epsilon the noise is calibrated to (> 0).
        delta: the sensitivity route's delta.
        coords: the number of released coordinates.
        grid: the grid spacing r.

    Returns:
        The event.

    Raises:
        BudgetError: a non-finite or out-of-range parameter, or a noise scale too small to draw.

    Examples:
        >>> dict(laplace_event(1.0, 0.0, 0.5))          # scale (1 + 0) / 0.5
        {'type': 'laplace', 'l1_sensitivity': 1.0, 'grid_rounding': 0.0, 'noise_scale': 2.0, 'delta': 0.0}
    """
    s = _finite("sensitivity", sensitivity)
    g = _finite("grid rounding", grid_rounding, strict=False)
    e = _finite("epsilon", noise_epsilon)
    scale = float_at_least((Fraction(s) + Fraction(g)) / Fraction(e))
    both = coords is not None and grid is not None
    return DiscreteLaplaceEvent(s, g, scale, float(delta), int(coords) if both else None,
                                float(grid) if both else None)


def discrete_gaussian_event(l2_sensitivity: float, grid_rounding: float, sigma: float, rho: float,
                            conversion_delta: float, delta: float = 0.0, coords: int | None = None,
                            grid: float | None = None) -> DiscreteGaussianEvent:
    """DP event of :func:`bayesdp.publish.noise.gaussian_release`: the discrete Gaussian of scale ``sigma`` on
    a statistic of proven L2 sensitivity; ``rho >= (l2_sensitivity + grid_rounding)^2 / (2 sigma^2)`` (CKS20
    Theorem 14); charged ``RDP.linear(rho).epsilon(conversion_delta)`` at delta ``conversion_delta + delta``.

    Args:
        l2_sensitivity: the proven L2 sensitivity (> 0).
        grid_rounding: the charged grid rounding (>= 0).
        sigma: the noise scale (> 0).
        rho: the zCDP parameter charged.
        conversion_delta: the delta of the conversion to (epsilon, delta), in (0, 1).
        delta: the sensitivity route's own delta.
        coords: the number of released coordinates.
        grid: the grid spacing r.

    Returns:
        The event.

    Raises:
        BudgetError: a non-finite or out-of-range parameter, or ``rho`` below what the noise gives.

    Examples:
        >>> ev = discrete_gaussian_event(1.0, 0.0, 2.0, 0.125, 1e-6)     # rho = 1^2 / (2 * 2^2)
        >>> ev["rho"], ev["conversion_delta"]
        (0.125, 1e-06)
        >>> discrete_gaussian_event(1.0, 0.0, 2.0, 0.1, 1e-6)
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: discrete Gaussian event: rho = 0.1 is below (sensitivity + rounding)^2 / (2 sigma^2)
    """
    both = coords is not None and grid is not None
    return DiscreteGaussianEvent(float(l2_sensitivity), float(grid_rounding), float(sigma), float(rho),
                                 float(conversion_delta), float(delta), int(coords) if both else None,
                                 float(grid) if both else None)
