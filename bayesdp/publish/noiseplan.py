"""The noise of a release, decided before anything is charged, from the sensitivities only (docs/release.md §3):
secure discrete Laplace (pure epsilon, L1 sensitivity) or secure discrete Gaussian (rho-zCDP, converted to (epsilon,
delta); L2 sensitivity; coupling route only).  ``noise="auto"`` picks the one with the smaller expected squared error
at the requested (epsilon, delta), computed from the sensitivities alone (never from the data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..budget.ledger import discrete_gaussian_event, laplace_event, noise_delta, noise_epsilon
from ..errors import AssumptionError
from .noise import gaussian_calibration, gaussian_interval_halfwidth, granularity, laplace_interval_halfwidth
from .sensitivity import CouplingBound, MonteCarloBound, SensitivityRoute, concentration_route, coupling_route
from .spec import check_noise
from .statistics import Statistic, two_sided_normal_quantile
from ..budget.ledger import decimal_at_least, to_decimal
from ..curves import RDP, ApproxDP
from decimal import Decimal

__all__ = ["NoisePlan", "plan_noise", "sensitivity_routes", "interval_half_widths", "error_half_width", "AUTO_RULE"]

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
        errors["gaussian"] = k * cal["sigma"] * cal["sigma"]    # inf beyond the floats (** raised OverflowError)
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


def interval_half_widths(plan: NoisePlan, noise_scale: float, grid: float, level: float, statistic: Statistic,
                          mc: MonteCarloBound | None) -> tuple[float, float | None]:
    """(noise half-width at ``level``, noise + Monte Carlo half-width at ``level`` or None): the total interval
    spends half of ``1 - level`` on the noise and half on the Monte Carlo bound (union bound).

    Args:
        plan: the noise plan.
        noise_scale: the drawn noise's scale.
        grid: its grid.
        level: the coverage.
        statistic: the statistic (a Monte Carlo interval for means only).
        mc: the Monte Carlo bound, or None.

    Returns:
        ``(noise half-width, total half-width or None)``.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> plan = NoisePlan("laplace", "user", {}, {}, 0.0)
        >>> round(interval_half_widths(plan, 1.0, 0.0, 0.95, coordinate_means([SiteSpec("mu")]), None)[0], 6)
        2.995732
    """
    alpha = 1.0 - level
    if plan.mechanism == "gaussian":
        noise_hw = lambda lv: gaussian_interval_halfwidth(noise_scale, grid, lv)  # noqa: E731
    else:
        noise_hw = lambda lv: laplace_interval_halfwidth(noise_scale, lv)  # noqa: E731
    h = noise_hw(level)
    if mc is None or statistic.kind != "mean":
        return h, None
    return h, noise_hw(1.0 - alpha / 2.0) + mc.half_width(statistic.l2, alpha / 2.0)


def error_half_width(plan: NoisePlan, noise_scale: float, grid: float, level: float, statistic: Statistic,
                     mc: MonteCarloBound | None, mc_sd: float | None) -> tuple[float, str]:
    """The half-width of a noised release's ``error_interval`` at ``level`` (docs/release.md §11) and what it
    includes: the noise's exact quantile (Laplace ``b log(1/(1 - level))``, Gaussian ``sigma z``, plus the grid),
    and, for a Monte Carlo mean, the Monte Carlo error: the proven data-independent bound of §4.2 when there is one,
    else the public heuristic standard deviation ``mc_sd`` (§11: the Ornstein-Uhlenbeck picture at the curvature
    proxy) through the normal quantile; the two split ``1 - level`` in halves (union bound).  The chain's bias
    relative to the exact posterior (ULA's step, the temperature) is not bounded and not included.

    Args:
        plan: the noise plan.
        noise_scale: the drawn noise's scale.
        grid: its grid.
        level: the coverage.
        statistic: the statistic (Monte Carlo terms for means only).
        mc: the proven Monte Carlo bound, or None.
        mc_sd: the heuristic Monte Carlo standard deviation per value, or None.

    Returns:
        ``(half-width, basis)``.

    Examples:
        >>> import math
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> plan = NoisePlan("laplace", "user", {}, {}, 0.0)
        >>> h, basis = error_half_width(plan, 1.0, 0.0, 0.9, coordinate_means([SiteSpec("mu")]), None, None)
        >>> round(h - math.log(10.0), 6), basis.startswith("release noise")     # the Laplace quantile, not z
        (0.0, True)
    """
    alpha = 1.0 - level
    if plan.mechanism == "gaussian":
        noise_hw = lambda lv: gaussian_interval_halfwidth(noise_scale, grid, lv)  # noqa: E731
        what = "release noise (Gaussian quantile, exact)"
    else:
        noise_hw = lambda lv: laplace_interval_halfwidth(noise_scale, lv)  # noqa: E731
        what = "release noise (Laplace quantile b log(1/(1 - level)), exact)"
    if statistic.kind != "mean":
        return noise_hw(level), (what + "; the Monte Carlo error of a quantile and the chain's bias are not "
                                 "included")
    if mc is not None:
        return (noise_hw(1.0 - alpha / 2.0) + mc.half_width(statistic.l2, alpha / 2.0),
                what + " + Monte Carlo error (proven data-independent bound, docs/release.md §4.2), union bound; "
                       "the chain's bias is not included")
    if mc_sd is not None and math.isfinite(mc_sd):
        return (noise_hw(1.0 - alpha / 2.0) + two_sided_normal_quantile(1.0 - alpha / 2.0) * mc_sd,
                what + " + Monte Carlo error (heuristic: public Ornstein-Uhlenbeck prediction, docs/release.md §11), "
                       "union bound; the chain's bias is not included")
    return noise_hw(level), what + "; the Monte Carlo error and the chain's bias are not included (no prediction)"
