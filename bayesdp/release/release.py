"""One private release: statistic -> sensitivity route -> ledger reservation -> secure noise -> commit.

:func:`release_statistic` is the function the ``bayesdp release`` / ``bayesdp demo`` glue calls
once it has (a) the sampler's draws in unconstrained space, (b) the coupling bound built from the
analyzer's constants and the sampler configuration (:func:`bayesdp.release.sensitivity.best_coupling`)
and/or user-certified concentration constants (004 Proposition 3.10), and (c) a ledger path.
It never prints; ``ReleaseResult.to_dict()`` is the JSON of ``bayesdp release --json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..certificate import Certificate
from ..errors import AssumptionError, positive
from .ledger import Ledger, laplace_event, noise_epsilon
from .noise import laplace_release
from .sensitivity import CouplingBound, SensitivityRoute, choose_route, concentration_route, coupling_route
from .statistics import ReleasedValue, Statistic, describe_values


@dataclass(frozen=True)
class ReleaseResult:
    values: np.ndarray
    names: tuple[str, ...]
    noise_scale: float
    noise_variance: float
    sensitivity: float            # effective L1 sensitivity (proven window + grid rounding)
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
    dp_event: Mapping[str, Any] | None = None      # what ran (bayesdp.release.accountant composes it)

    def to_dp_event(self):
        """The release as a dp-accounting ``DpEvent``: one coordinate is exactly a discrete Laplace mechanism
        (``DiscreteLaplaceDpEvent``: parameter grid/noise_scale, integer sensitivity floor(s/grid) + 1);
        several coordinates are pure epsilon-DP, dominated by binary randomised response
        (``RandomizedResponseDpEvent``, composed by dp-accounting under ``NeighboringRelation.REPLACE_ONE``)."""
        import math as _m

        from dp_accounting import dp_event

        ev = self.dp_event or {}
        if ev.get("coords") == 1 and ev.get("grid") and self.delta == 0:
            return dp_event.DiscreteLaplaceDpEvent(noise_parameter=float(ev["grid"]) / float(ev["noise_scale"]),
                                                   sensitivity=int(_m.floor(float(ev["l1_sensitivity"]) /
                                                                            float(ev["grid"])) + 1))
        if self.delta == 0:
            return dp_event.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + _m.exp(float(self.epsilon))),
                                                      num_buckets=2)
        return dp_event.UnsupportedDpEvent()

    def to_dict(self) -> dict:
        return {
            "values": [float(v) for v in self.values],
            "names": list(self.names),
            "noise_scale": self.noise_scale,
            "noise_variance": self.noise_variance,
            "sensitivity": self.sensitivity,
            "proven_sensitivity": self.proven_sensitivity,
            "sensitivity_norm": "L1" if len(self.names) > 1 else "absolute value",
            "grid": self.grid,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "source": self.source,
            "remaining_budget": dict(self.remaining_budget),
            "ledger": self.ledger,
            "items": [it.to_dict() for it in self.items],
            "interval_note": "each interval contains the non-private Monte Carlo estimate with the stated probability "
                             "(Laplace noise only; Monte Carlo error not included)",
            "certificate": self.certificate.to_dict(epsilon=self.epsilon),
            "routes": [dict(r) for r in self.routes],
            "ledger_head": None if self.ledger_head is None else dict(self.ledger_head),
        }


def sensitivity_routes(statistic: Statistic, coupling: CouplingBound | None = None,
                       concentration: Mapping[str, float] | None = None) -> list[SensitivityRoute]:
    """All routes available for ``statistic``: coupling (004 Prop 3.7, delta~ = 0) and/or 004 Prop 3.10
    with ``concentration = {"concentration": C, "concentration_delta": delta~, "posterior_sensitivity": gamma_f}``
    (constants for the same statistic and norm: L1 for vectors)."""
    routes = []
    if coupling is not None:
        routes.append(coupling_route(coupling, statistic.lipschitz))
    if concentration is not None:
        if statistic.kind != "mean":
            raise AssumptionError(f"statistic {statistic.description!r} is not a Monte Carlo mean: 004 Proposition "
                                  "3.10 does not apply to it; use the coupling route")
        routes.append(concentration_route(concentration["concentration"], concentration["concentration_delta"],
                                          concentration["posterior_sensitivity"]))
    return routes


def release_statistic(draws: np.ndarray, statistic: Statistic, epsilon: float, ledger: str | os.PathLike, *,
                      coupling: CouplingBound | None = None, concentration: Mapping[str, float] | None = None,
                      budget_epsilon: float | None = None, budget_delta: float | None = None, dataset: str | None = None,
                      max_delta: float | None = None, mechanism: str = "mc-estimate", level: float = 0.95,
                      ) -> ReleaseResult:
    """Release the noisy Monte Carlo average of ``statistic`` over ``draws`` (shape (num_draws, dim),
    UNCONSTRAINED space, all chains and kept draws; the same draws the coupling bound covers).

    Order of operations (bad input or no budget => nothing drawn, ledger unchanged):
    validate epsilon; pick the route with the smallest window (``max_delta`` caps the route's delta);
    compute the non-private average; open the ledger (create it with ``budget_epsilon`` if missing);
    reserve (epsilon, delta) under the lock — refused if over budget; draw the secure noise; commit.
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):   # before the reservation
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    routes = sensitivity_routes(statistic, coupling, concentration)
    route = choose_route(routes, max_delta)
    value = statistic.evaluate(draws)
    # a ledger path, a Ledger, or any accountant with the ledger's interface (PrivacyAccountant)
    led = ledger if hasattr(ledger, "reserve") else Ledger.open(ledger, budget_epsilon=budget_epsilon,
                                                                budget_delta=budget_delta, dataset=dataset)
    k = statistic.num_coords
    # the certificate needs the final noise scale, which depends only on (window, eps, k): compute it
    # before reserving so that the ledger entry carries the exact curve.
    from .noise import granularity

    # the noise is calibrated to the largest double not above the epsilon the ledger charges (a decimal)
    eps_noise = noise_epsilon(eps)
    r = granularity(route.sensitivity / eps_noise)
    event = laplace_event(route.sensitivity, k * r, eps_noise, route.coupling_delta, coords=k, grid=r)
    cert = route.certificate(eps, event["noise_scale"], k, mechanism)
    what = f"{statistic.description} ({k} value{'s' if k > 1 else ''})"
    with led.reserve(eps, route.coupling_delta, mechanism, route.source, curve=cert.curve, what=what,
                     event=event) as res:
        res.mark_drawn()
        noisy = laplace_release(value, route.sensitivity, res.noise_epsilon)
        # consistency: the certificate is re-built at the scale actually used
        cert = route.certificate(eps, noisy.noise_scale, k, mechanism)
        items = describe_values(statistic.names, noisy.values, noisy.noise_scale, noisy.noise_variance, level)
        res.commit({"names": list(statistic.names), "values": [float(v) for v in noisy.values],
                    "noise_scale": noisy.noise_scale, "sensitivity": noisy.effective_sensitivity,
                    "lipschitz": statistic.lipschitz, "statistic": statistic.description})
    summary = res.summary or led.summary()
    return ReleaseResult(values=noisy.values, names=statistic.names, noise_scale=noisy.noise_scale,
                         noise_variance=noisy.noise_variance, sensitivity=noisy.effective_sensitivity,
                         proven_sensitivity=route.sensitivity, grid=noisy.grid, epsilon=eps,
                         delta=route.coupling_delta, source=route.source, certificate=cert, items=tuple(items),
                         remaining_budget=summary["remaining_budget"],
                         ledger=None if getattr(led, "path", None) is None else str(led.path),
                         routes=tuple({"source": rt.source, "sensitivity": rt.sensitivity, "delta": rt.coupling_delta,
                                       "chosen": rt is route} for rt in routes),
                         ledger_head=res.head, dp_event=event)


def release_from_constants(draws: np.ndarray, statistic: Statistic, epsilon: float, ledger: str | os.PathLike,
                           constants: Mapping[str, Any], *, concentration: Mapping[str, float] | None = None,
                           **kwargs: Any) -> ReleaseResult:
    """Glue entry point: build the coupling bound from the analyzer's constants and the sampler
    configuration (keys of :func:`bayesdp.release.sensitivity.best_coupling`: step_size, sampler,
    total_strong_convexity, total_smoothness, grad_diff, strong_convexity, smoothness, grad_bound,
    record_strong_convexity, record_smoothness, record_grad_diff, record_grad_bound, data_size,
    batch_size; missing keys = unknown), then call :func:`release_statistic`.

    Refuses with one line (nothing drawn, ledger untouched) when no coupling route holds and no
    004 Proposition 3.10 constants were given.
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
