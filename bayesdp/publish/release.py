"""One private release: statistic -> sensitivity route -> noise choice -> ledger reservation -> secure noise
-> post-processing -> commit.

:func:`release_statistic` is the function the ``bayesdp release`` / ``bayesdp demo`` glue calls
once it has (a) the sampler's draws in unconstrained space, (b) the coupling bound built from the
analyzer's constants and the sampler configuration (:func:`bayesdp.publish.sensitivity.best_coupling`)
and/or user-certified concentration constants (004 Proposition 3.10), and (c) a ledger path.
It never prints; ``ReleaseResult.to_dict()`` is the JSON of ``bayesdp release --json``.

Noise (docs/release.md §3): secure discrete Laplace (pure epsilon, L1 sensitivity) or secure discrete
Gaussian (rho-zCDP, converted to (epsilon, delta); L2 sensitivity; coupling route only).  ``noise="auto"``
picks the one with the smaller expected squared error at the requested (epsilon, delta), computed from the
sensitivities alone (never from the data); the choice and both errors are recorded in the release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..certificate import Certificate
from ..errors import AssumptionError, positive
from ..budget.ledger import Ledger, discrete_gaussian_event, laplace_event, noise_delta, noise_epsilon
from .pipeline import check_level
from .noise import gaussian_calibration, gaussian_interval_halfwidth, gaussian_release, granularity, \
    laplace_interval_halfwidth, laplace_release
from .sensitivity import (CouplingBound, MonteCarloBound, SensitivityRoute, choose_route, concentration_route,
                          coupling_route, monte_carlo_bound)
from .statistics import ReleasedValue, Statistic, describe_values

__all__ = ["release_statistic", "release_value", "release_from_constants", "ReleaseResult", "plan_noise", "NoisePlan",
           "check_noise", "sensitivity_routes"]

NOISES = ("auto", "laplace", "gaussian")

AUTO_RULE = ("auto: the noise with the smaller expected squared error sum_i E[noise_i^2] at the requested (epsilon, "
             "delta), computed from the sensitivities only (Laplace 2 b^2, Gaussian sigma^2 per coordinate)")


@dataclass(frozen=True)
class NoisePlan:
    """The noise a release will draw, decided before the reservation from the sensitivities only.

    Attributes:
        mechanism: ``"laplace"`` or ``"gaussian"``.
        chosen_by: ``"user"`` or the automatic rule (:data:`AUTO_RULE`).
        expected_squared_error: ``{"laplace": ..., "gaussian": ... or None}`` (sum over coordinates).
        event: the ledger's DP event of the mechanism.
        charged_delta: the delta charged (route delta, plus the conversion delta for Gaussian noise).
        gaussian: the Gaussian calibration (:func:`bayesdp.publish.noise.gaussian_calibration`) or None.
        why_not_gaussian: why Gaussian noise was not available (None when it was).
        epsilon: the release's epsilon.
        route_delta: the sensitivity route's delta.

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> route = coupling_route(coupling, stat.lipschitz, stat.l2)           # window L * distance = 1 * 1
        >>> plan = plan_noise(stat, route, epsilon=1.0)
        >>> plan.mechanism, round(plan.expected_squared_error["laplace"], 6)        # 2 b^2, b = 1 / 1
        ('laplace', 2.0)
    """

    mechanism: str
    chosen_by: str
    expected_squared_error: Mapping[str, float | None]
    event: Mapping[str, Any]
    charged_delta: Any
    gaussian: Mapping[str, Any] | None = None
    why_not_gaussian: str | None = None
    epsilon: float = 0.0
    route_delta: float = 0.0

    @property
    def curve(self):
        """The privacy curve the release will be charged with (the ledger's curve rule composes it)."""
        from ..curves import RDP, ApproxDP

        if self.mechanism == "gaussian":
            return RDP.linear(float(self.gaussian["rho"]))
        return ApproxDP(self.epsilon, self.route_delta)

    def to_dict(self) -> dict:
        """The plan as a release reports it (``noise`` of :meth:`ReleaseResult.to_dict`).

        Returns:
            ``mechanism``, ``chosen_by``, ``expected_squared_error`` and ``gaussian_unavailable``.
        """
        return {"mechanism": self.mechanism, "chosen_by": self.chosen_by,
                "expected_squared_error": dict(self.expected_squared_error),
                "gaussian_unavailable": self.why_not_gaussian}


def check_noise(noise: str, delta: Any) -> float:
    """``noise`` in :data:`NOISES` and ``delta`` in [0, 1); Gaussian noise with ``delta = 0`` is refused (one line
    naming the parameter: a zCDP release has no pure epsilon).  Returns delta as a float.

    Args:
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        delta: the delta Gaussian noise may use.

    Returns:
        ``delta`` as a float.

    Raises:
        AssumptionError: an unknown noise, a delta outside [0, 1), or Gaussian noise with delta 0.

    Examples:
        >>> check_noise("auto", 1e-6)
        1e-06
        >>> check_noise("gaussian", 0)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: delta = 0 with noise = 'gaussian': Gaussian noise is not pure epsilon-DP; pass delta > 0 (e.g. --delta 1e-6) or use --noise laplace
    """
    if noise not in NOISES:
        raise AssumptionError(f"noise = {noise!r} must be one of {', '.join(NOISES)}")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise AssumptionError(f"delta = {delta!r} must be a number in [0, 1)") from None
    if not 0.0 <= d < 1.0:
        raise AssumptionError(f"delta = {delta!r} must be in [0, 1); pass e.g. 1e-6 (Gaussian noise) or 0 (Laplace)")
    if noise == "gaussian" and d == 0.0:
        raise AssumptionError("delta = 0 with noise = 'gaussian': Gaussian noise is not pure epsilon-DP; pass "
                              "delta > 0 (e.g. --delta 1e-6) or use --noise laplace")
    return d


def plan_noise(statistic: Statistic, route: SensitivityRoute, epsilon: float, delta: float = 0.0,
               noise: str = "auto") -> NoisePlan:
    """The noise of a release, before anything is drawn or charged: the Laplace calibration always, the
    Gaussian one when ``delta > 0`` and the route is the coupling route (L2 window); ``noise="auto"`` keeps the
    one with the smaller expected squared error (ties: Laplace).  Data independent.

    Args:
        statistic: the released statistic (its number of coordinates).
        route: the sensitivity route (L1 window; L2 window for the coupling route).
        epsilon: the release's epsilon (the noise uses :func:`noise_epsilon` of it).
        delta: the delta the Gaussian conversion may use (0: Laplace only).
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.

    Returns:
        a :class:`NoisePlan`.

    Raises:
        AssumptionError: an unknown noise, a bad delta, or Gaussian noise that is not available.

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> route = coupling_route(coupling, stat.lipschitz, stat.l2)           # window L * distance = 1 * 1
        >>> plan_noise(stat, route, 1.0, delta=1e-5).mechanism       # one value: Laplace is better
        'laplace'
        >>> many = coordinate_means([SiteSpec("w", 100)])            # 100 values, L1 constant 10, L2 constant 1
        >>> plan = plan_noise(many, coupling_route(coupling, many.lipschitz, 1.0), 1.0, delta=1e-5)
        >>> plan.mechanism, plan.charged_delta
        ('gaussian', Decimal('0.00001'))
    """
    from decimal import Decimal

    from ..budget.ledger import decimal_at_least, to_decimal

    d = check_noise(noise, delta)
    k = statistic.num_coords
    eps_noise = noise_epsilon(epsilon)
    r = granularity(route.sensitivity / eps_noise)
    lap_event = laplace_event(route.sensitivity, k * r, eps_noise, route.coupling_delta, coords=k, grid=r)
    b = lap_event["noise_scale"]
    errors: dict[str, float | None] = {"laplace": k * 2.0 * b * b, "gaussian": None}
    why = None
    cal = None
    if d == 0.0:
        why = "delta = 0 (Gaussian noise needs delta > 0)"
    elif route.coupling_delta != 0.0 or route.l2_sensitivity is None:
        why = f"route {route.source!r} has no L2 window (Gaussian noise needs the coupling route)"
    else:
        cal = gaussian_calibration(route.l2_sensitivity, eps_noise, noise_delta(d), k)
        errors["gaussian"] = k * cal["sigma"] ** 2
    if noise == "gaussian" and cal is None:
        raise AssumptionError(f"noise = 'gaussian' is not available: {why}; use noise = 'laplace'")
    if noise == "auto":
        use = "gaussian" if cal is not None and errors["gaussian"] < errors["laplace"] else "laplace"
        chosen_by = AUTO_RULE
    else:
        use, chosen_by = noise, "user"
    route_delta = decimal_at_least(route.coupling_delta) if route.coupling_delta else Decimal(0)
    if use == "laplace":
        return NoisePlan("laplace", chosen_by, errors, lap_event, route.coupling_delta, None, why, float(epsilon),
                         route.coupling_delta)
    event = discrete_gaussian_event(route.l2_sensitivity, cal["grid_rounding"], cal["sigma"], cal["rho"],
                                    cal["delta"], 0.0, coords=k, grid=cal["grid"])
    return NoisePlan("gaussian", chosen_by, errors, event, to_decimal(d, "delta") + route_delta, cal, why,
                     float(epsilon), route.coupling_delta)


@dataclass(frozen=True)
class ReleaseResult:
    """One private release: the published values and everything that justifies them (JSON: :meth:`to_dict`).

    Attributes:
        values: the released values (after clamping to the statistic's range).
        names: one name per value.
        noise_scale: the noise scale per value (Laplace b, or Gaussian sigma).
        noise_variance: the noise variance per value.
        sensitivity: effective L1 (Laplace) or L2 (Gaussian) sensitivity (proven window + grid rounding).
        proven_sensitivity: the route's window before rounding.
        grid: the noise grid r.
        epsilon: the charged epsilon.
        delta: the charged delta.
        source: the certificate's source.
        certificate: the release's :class:`~bayesdp.certificate.Certificate`.
        items: one :class:`~bayesdp.publish.statistics.ReleasedValue` per value (with intervals).
        remaining_budget: the budget left after the release.
        ledger: the ledger's path (None for an in-memory accountant).
        routes: every sensitivity route considered, the chosen one marked.
        ledger_head: the journal line recording this release (docs/ledger.md).
        dp_event: what ran (:mod:`bayesdp.budget.accountant` composes it).
        noise: :meth:`NoisePlan.to_dict`.
        raw_values: the noisy values before clamping (also private).
        postprocessing: the clamping applied.
        monte_carlo: the data-independent Monte Carlo bound (docs/release.md §4.2), or None.
        extra: method-specific public facts (in :meth:`to_dict`).

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> res = release_statistic(np.full((50, 1), 0.5), stat, 1.0, acct, coupling=coupling)
        >>> res.names, res.noise_mechanism, round(res.noise_scale, 6), res.remaining_budget
        (('mu',), 'laplace', 1.0, {'epsilon': 0.0, 'delta': 0.0})
        >>> type(res.to_dp_event()).__name__
        'DiscreteLaplaceDpEvent'
    """

    values: np.ndarray
    names: tuple[str, ...]
    noise_scale: float
    noise_variance: float
    sensitivity: float            # effective L1 (Laplace) or L2 (Gaussian) sensitivity (proven window + grid rounding)
    proven_sensitivity: float     # the route's window before rounding
    grid: float
    epsilon: float
    delta: float
    source: str
    certificate: Certificate
    items: tuple[ReleasedValue, ...]
    remaining_budget: Mapping[str, float]
    ledger: str
    routes: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    ledger_head: Mapping[str, Any] | None = None   # the journal line recording this release (docs/ledger.md)
    dp_event: Mapping[str, Any] | None = None      # what ran (bayesdp.budget.accountant composes it)
    noise: Mapping[str, Any] = field(default_factory=dict)          # NoisePlan.to_dict()
    raw_values: np.ndarray | None = None           # before clamping to the range (also private)
    postprocessing: Mapping[str, Any] = field(default_factory=dict)
    monte_carlo: Mapping[str, Any] | None = None   # the data-independent Monte Carlo bound (docs/release.md §4.2)
    extra: Mapping[str, Any] = field(default_factory=dict)           # method-specific public facts (to_dict)

    @property
    def noise_mechanism(self) -> str:
        """``"laplace"`` or ``"gaussian"``."""
        return str(self.noise.get("mechanism", "laplace"))

    def to_dp_event(self):
        """The release as a dp-accounting ``DpEvent``: one Laplace coordinate is exactly a discrete Laplace mechanism
        (``DiscreteLaplaceDpEvent``: parameter grid/noise_scale, integer sensitivity floor(s/grid) + 1);
        several coordinates are pure epsilon-DP, dominated by binary randomised response
        (``RandomizedResponseDpEvent``, composed by dp-accounting under ``NeighboringRelation.REPLACE_ONE``);
        a Gaussian release is ``rho``-zCDP (``ZCDpEvent``, composed by dp-accounting's RDP accountant)."""
        import math as _m

        from dp_accounting import dp_event

        ev = self.dp_event or {}
        if ev.get("type") == "discrete_gaussian":
            return dp_event.ZCDpEvent(rho=float(ev["rho"]))
        if ev.get("type") == "gdp":          # a path release: mu-GDP, dominated by the Gaussian mechanism 1/mu
            return dp_event.GaussianDpEvent(noise_multiplier=1.0 / float(ev["mu"]))
        if ev.get("coords") == 1 and ev.get("grid") and self.delta == 0:
            return dp_event.DiscreteLaplaceDpEvent(noise_parameter=float(ev["grid"]) / float(ev["noise_scale"]),
                                                   sensitivity=int(_m.floor(float(ev["l1_sensitivity"]) /
                                                                            float(ev["grid"])) + 1))
        if self.delta == 0:
            return dp_event.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + _m.exp(float(self.epsilon))),
                                                      num_buckets=2)
        return dp_event.UnsupportedDpEvent()

    def to_dict(self) -> dict:
        """The JSON of ``bayesdp release --json`` (only public facts: never the non-private estimate).

        Returns:
            A JSON-ready dict.
        """
        gaussian = self.noise_mechanism == "gaussian"
        return {
            "values": [float(v) for v in self.values],
            "names": list(self.names),
            "noise_mechanism": self.noise_mechanism,
            "noise_scale": self.noise_scale,
            "noise_variance": self.noise_variance,
            "sensitivity": self.sensitivity,
            "proven_sensitivity": self.proven_sensitivity,
            "sensitivity_norm": "L2" if gaussian else ("L1" if len(self.names) > 1 else "absolute value"),
            "grid": self.grid,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "source": self.source,
            "noise": dict(self.noise),
            "postprocessing": dict(self.postprocessing),
            "monte_carlo": None if self.monte_carlo is None else dict(self.monte_carlo),
            "remaining_budget": dict(self.remaining_budget),
            "ledger": self.ledger,
            "items": [it.to_dict() for it in self.items],
            "interval_note": INTERVAL_NOTE,
            "certificate": self.certificate.to_dict(epsilon=self.epsilon),
            "routes": [dict(r) for r in self.routes],
            "ledger_head": None if self.ledger_head is None else dict(self.ledger_head),
            **{k: v for k, v in self.extra.items()},
        }


INTERVAL_NOTE = ("'interval' contains the non-private Monte Carlo estimate with the stated probability (noise only); "
                 "'total_interval' contains the chain's expected estimate with the stated probability (noise and a "
                 "data-independent bound on the Monte Carlo fluctuation, docs/release.md §4.2; null when no such "
                 "bound is proven); neither covers the sampler's bias relative to the exact posterior. Both are "
                 "clipped to the statistic's range. The Monte Carlo error estimated from the draws themselves is "
                 "not published: it is computed from the private chain")


def sensitivity_routes(statistic: Statistic, coupling: CouplingBound | None = None,
                       concentration: Mapping[str, float] | None = None) -> list[SensitivityRoute]:
    """All routes available for ``statistic``: coupling (004 Prop 3.7, delta~ = 0) and/or 004 Prop 3.10
    with ``concentration = {"concentration": C, "concentration_delta": delta~, "posterior_sensitivity": gamma_f}``
    (constants for the same statistic and norm: L1 for vectors).

    Args:
        statistic: the released statistic.
        coupling: the coupling bound, or None.
        concentration: user-certified 004 Proposition 3.10 constants, or None.

    Returns:
        The routes (possibly empty).

    Raises:
        AssumptionError: 004 Proposition 3.10 constants for a statistic that is not a Monte Carlo mean.

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> conc = {"concentration": 0.1, "concentration_delta": 1e-6, "posterior_sensitivity": 0.05}
        >>> [round(r.sensitivity, 6) for r in sensitivity_routes(stat, coupling, conc)]     # 1 * 1; 2 C + gamma_f
        [1.0, 0.25]
    """
    routes = []
    if coupling is not None:
        routes.append(coupling_route(coupling, statistic.lipschitz, statistic.l2))
    if concentration is not None:
        if statistic.kind != "mean":
            raise AssumptionError(f"statistic {statistic.description!r} is not a Monte Carlo mean: 004 Proposition "
                                  "3.10 does not apply to it; use the coupling route")
        routes.append(concentration_route(concentration["concentration"], concentration["concentration_delta"],
                                          concentration["posterior_sensitivity"]))
    return routes


def _interval_half_widths(plan: NoisePlan, noise_scale: float, grid: float, level: float, statistic: Statistic,
                          mc: MonteCarloBound | None) -> tuple[float, float | None]:
    """(noise half-width at ``level``, noise + Monte Carlo half-width at ``level`` or None): the total interval
    spends half of ``1 - level`` on the noise and half on the Monte Carlo bound (union bound)."""
    alpha = 1.0 - level
    if plan.mechanism == "gaussian":
        noise_hw = lambda lv: gaussian_interval_halfwidth(noise_scale, grid, lv)  # noqa: E731
    else:
        noise_hw = lambda lv: laplace_interval_halfwidth(noise_scale, lv)  # noqa: E731
    h = noise_hw(level)
    if mc is None or statistic.kind != "mean":
        return h, None
    return h, noise_hw(1.0 - alpha / 2.0) + mc.half_width(statistic.l2, alpha / 2.0)


def release_statistic(draws: np.ndarray, statistic: Statistic, epsilon: float, ledger: str | os.PathLike, *,
                      coupling: CouplingBound | None = None, concentration: Mapping[str, float] | None = None,
                      budget_epsilon: float | None = None, budget_delta: float | None = None, dataset: str | None = None,
                      max_delta: float | None = None, mechanism: str = "mc-estimate", level: float = 0.95,
                      noise: str = "auto", delta: float = 0.0, chain: Mapping[str, Any] | None = None,
                      ) -> ReleaseResult:
    """Release the noisy Monte Carlo average of ``statistic`` over ``draws`` (shape (num_draws, dim),
    UNCONSTRAINED space, all chains and kept draws; the same draws the coupling bound covers).

    Order of operations (bad input or no budget => nothing drawn, ledger unchanged):
    validate epsilon, level, noise and delta; pick the route with the smallest window (``max_delta`` caps the
    route's delta); plan the noise (:func:`plan_noise`: Laplace, or Gaussian when ``delta > 0``, chosen by
    expected squared error unless ``noise`` says); compute the non-private average; open the ledger (create it
    with ``budget_epsilon`` if missing); reserve (epsilon, delta) under the lock — refused if over budget; draw
    the secure noise; clamp to the statistic's range (post-processing); commit.

    ``chain`` (``inverse_temperature``, ``num_steps``, ``burn_in``, ``thinning``, ``num_chains`` of the draws)
    enables the data-independent Monte Carlo bound of the total interval (ULA coupling route only).

    Args:
        draws: the unconstrained draws ``(num_draws, dim)``.
        statistic: the statistic to release.
        epsilon: > 0.
        ledger: a ledger path, :class:`~bayesdp.budget.ledger.Ledger` or accountant.
        coupling: the coupling bound (004 Proposition 3.7), or None.
        concentration: user-certified 004 Proposition 3.10 constants, or None.
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name recorded with a new ledger.
        max_delta: the largest route delta accepted.
        mechanism: the ledger's mechanism label.
        level: the coverage of the intervals.
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        delta: the delta Gaussian noise may use.
        chain: the draws' chain design, for the Monte Carlo bound.

    Returns:
        The :class:`ReleaseResult`.

    Raises:
        AssumptionError: a bad parameter, or no route.
        BudgetError: over budget (nothing drawn, ledger unchanged).

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> res = release_statistic(np.full((50, 1), 0.5), stat, 0.5, "ledger.json", coupling=coupling,
        ...                         budget_epsilon=1.0)
        >>> round(res.proven_sensitivity, 6), round(res.noise_scale, 6), res.remaining_budget     # b = 1 / 0.5
        (1.0, 2.0, {'epsilon': 0.5, 'delta': 0.0})
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    check_level(level)
    check_noise(noise, delta)
    routes = sensitivity_routes(statistic, coupling, concentration)
    route = choose_route(routes, max_delta)
    plan = plan_noise(statistic, route, eps, delta, noise)
    mc = None
    if chain is not None and route.coupling_delta == 0.0:
        mc = monte_carlo_bound(coupling, inverse_temperature=chain["inverse_temperature"],
                               num_steps=chain["num_steps"], burn_in=chain["burn_in"],
                               thinning=chain.get("thinning", 1), num_chains=chain.get("num_chains", 1))
    value = statistic.evaluate(draws)
    return release_value(value, statistic, route, plan, eps, ledger, budget_epsilon=budget_epsilon,
                         budget_delta=budget_delta, dataset=dataset, mechanism=mechanism, level=level, monte_carlo=mc,
                         routes=routes)


def release_value(value: np.ndarray, statistic: Statistic, route: SensitivityRoute, plan: NoisePlan, epsilon: float,
                  ledger: Any, *, budget_epsilon: float | None = None, budget_delta: float | None = None,
                  dataset: str | None = None, mechanism: str = "mc-estimate", level: float = 0.95,
                  monte_carlo: MonteCarloBound | None = None, routes: list[SensitivityRoute] | None = None,
                  committed: Mapping[str, Any] | None = None) -> ReleaseResult:
    """The common tail of every release: the non-private ``value`` (a vector of ``statistic.num_coords`` numbers
    with the windows of ``route``) -> ledger reservation (refused over budget: nothing drawn) -> the secure
    noise of ``plan`` -> clamping to ``statistic.range`` and intervals (post-processing) -> commit.
    ``committed`` adds fields to the ledger's commit line.

    Args:
        value: the non-private values.
        statistic: the statistic they are values of.
        route: the sensitivity route.
        plan: the noise (:func:`plan_noise`).
        epsilon: > 0.
        ledger: a ledger path, :class:`~bayesdp.budget.ledger.Ledger` or accountant.
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name recorded with a new ledger.
        mechanism: the ledger's mechanism label.
        level: the coverage of the intervals.
        monte_carlo: the Monte Carlo bound, or None.
        routes: every route considered (default: ``[route]``).
        committed: more fields for the ledger's commit line.

    Returns:
        The :class:`ReleaseResult`.

    Raises:
        AssumptionError: a bad parameter.
        BudgetError: over budget (nothing drawn).

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex, coupling_route
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> route = coupling_route(coupling, stat.lipschitz, stat.l2)           # window L * distance = 1 * 1
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> res = release_value(np.array([0.5]), stat, route, plan_noise(stat, route, 1.0), 1.0, acct)
        >>> round(res.noise_scale, 6), acct.remaining()
        (1.0, {'epsilon': 0.0, 'delta': 0.0})
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    level = check_level(level)
    # a ledger path, a Ledger, or any accountant with the ledger's interface (PrivacyAccountant)
    led = ledger if hasattr(ledger, "reserve") else Ledger.open(ledger, budget=budget_epsilon,
                                                                budget_delta=budget_delta, dataset=dataset)
    k = statistic.num_coords
    event = dict(plan.event)
    if plan.mechanism == "gaussian":
        g = plan.gaussian
        cert = route.gaussian_certificate(eps, g["delta"], g["rho"], g["sigma"], route.l2_sensitivity, k, mechanism)
    else:
        cert = route.certificate(eps, event["noise_scale"], k, mechanism)
    what = f"{statistic.description} ({k} value{'s' if k > 1 else ''}, {plan.mechanism} noise)"
    with led.reserve(eps, plan.charged_delta, mechanism, cert.source, curve=cert.curve, what=what,
                     event=event) as res:
        res.mark_drawn()
        if plan.mechanism == "gaussian":
            g = plan.gaussian
            noisy = gaussian_release(value, route.l2_sensitivity, g["epsilon"], g["delta"])
            if noisy.noise_scale != g["sigma"] or noisy.rho != g["rho"]:      # the same calibration, drawn
                raise AssumptionError("internal: the Gaussian noise drawn differs from the one charged")
        else:
            noisy = laplace_release(value, route.sensitivity, res.noise_epsilon)
            # consistency: the certificate is re-built at the scale actually used
            cert = route.certificate(eps, noisy.noise_scale, k, mechanism)
        h, h_total = _interval_half_widths(plan, noisy.noise_scale, noisy.grid, level, statistic, monte_carlo)
        items = describe_values(statistic.names, noisy.values, noisy.noise_scale, noisy.noise_variance, level,
                                half_width=h, value_range=statistic.range, total_half_width=h_total)
        published = np.array([it.value for it in items])
        res.commit({"names": list(statistic.names), "values": [float(v) for v in published],
                    "noise_mechanism": plan.mechanism, "noise_scale": noisy.noise_scale,
                    "sensitivity": noisy.effective_sensitivity, "lipschitz": statistic.lipschitz,
                    "l2_lipschitz": statistic.l2, "statistic": statistic.description,
                    **({"raw_values": [float(v) for v in noisy.values]} if statistic.range is not None else {}),
                    **dict(committed or {})})
    summary = res.summary or led.summary()
    post = {"clamp": None if statistic.range is None else list(statistic.range),
            "note": ("values clamped to the statistic's known range after the noise (post-processing: no privacy "
                     "cost; raw_values are the unclamped noisy values, also private)") if statistic.range is not None
            else "none (the statistic has no declared range)"}
    routes = [route] if routes is None else routes
    return ReleaseResult(values=published, names=statistic.names, noise_scale=noisy.noise_scale,
                         noise_variance=noisy.noise_variance, sensitivity=noisy.effective_sensitivity,
                         proven_sensitivity=route.l2_sensitivity if plan.mechanism == "gaussian" else route.sensitivity,
                         grid=noisy.grid, epsilon=eps, delta=float(plan.charged_delta), source=cert.source,
                         certificate=cert, items=tuple(items), remaining_budget=summary["remaining_budget"],
                         ledger=None if getattr(led, "path", None) is None else str(led.path),
                         routes=tuple({"source": rt.source, "sensitivity": rt.sensitivity,
                                       "l2_sensitivity": rt.l2_sensitivity, "delta": rt.coupling_delta,
                                       "chosen": rt is route} for rt in routes),
                         ledger_head=res.head, dp_event=event, noise=plan.to_dict(), raw_values=np.asarray(noisy.values),
                         postprocessing=post, monte_carlo=None if monte_carlo is None else monte_carlo.to_dict())


def release_from_constants(draws: np.ndarray, statistic: Statistic, epsilon: float, ledger: str | os.PathLike,
                           constants: Mapping[str, Any], *, concentration: Mapping[str, float] | None = None,
                           **kwargs: Any) -> ReleaseResult:
    """Glue entry point: build the coupling bound from the analyzer's constants and the sampler
    configuration (keys of :func:`bayesdp.publish.sensitivity.best_coupling`: step_size, sampler,
    total_strong_convexity, total_smoothness, grad_diff, strong_convexity, smoothness, grad_bound,
    record_strong_convexity, record_smoothness, record_grad_diff, record_grad_bound, data_size,
    batch_size; missing keys = unknown), then call :func:`release_statistic`.

    Refuses with one line (nothing drawn, ledger untouched) when no coupling route holds and no
    004 Proposition 3.10 constants were given.

    Args:
        draws: the unconstrained draws ``(num_draws, dim)``.
        statistic: the statistic to release.
        epsilon: > 0.
        ledger: a ledger path, :class:`~bayesdp.budget.ledger.Ledger` or accountant.
        constants: the analyzer's constants and the sampler configuration.
        concentration: user-certified 004 Proposition 3.10 constants, or None.
        **kwargs: the keyword arguments of :func:`release_statistic`.

    Returns:
        The :class:`ReleaseResult`.

    Raises:
        AssumptionError: no route.
        BudgetError: over budget.

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> consts = {"step_size": 0.1, "sampler": "ULA", "total_strong_convexity": 1.0, "total_smoothness": 1.0,
        ...           "grad_diff": 1.0}
        >>> res = release_from_constants(np.full((50, 1), 0.5), coordinate_means([SiteSpec("mu")]), 1.0,
        ...                              PrivacyAccountant(budget=1.0), consts)
        >>> round(res.proven_sensitivity, 6)          # grad_diff / m = 1
        1.0
    """
    from .sensitivity import best_coupling

    positive("epsilon", epsilon, "pass a positive epsilon")
    coupling, failed = best_coupling(**{k: v for k, v in constants.items() if v is not None})
    if coupling is None and concentration is None:
        reasons = "; ".join(f"{src}: {why}" for src, why in failed)
        raise AssumptionError(f"no coupling bound is proven for this sampler configuration ({reasons}); "
                              "use a contracting step size or declare 004 Proposition 3.10 constants")
    return release_statistic(draws, statistic, epsilon, ledger, coupling=coupling, concentration=concentration,
                             **kwargs)
