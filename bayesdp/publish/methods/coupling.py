"""The coupling release: the Monte Carlo estimate of an UNPUBLISHED chain plus secure noise calibrated to its
sensitivity (004 Proposition 3.7 by synchronous coupling, or user-certified 004 Proposition 3.10 constants;
docs/release.md §1-4).  The chain runs before the reservation (it publishes nothing); the noise is drawn after it
from the OS CSPRNG whatever the chain's key.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from ...errors import AssumptionError
from ..noise import gaussian_release, laplace_release
from ..noiseplan import error_half_width, interval_half_widths, plan_noise, sensitivity_routes
from ..path import chain_noise_sd
from ..sensitivity import best_coupling, choose_route, monte_carlo_bound
from ..statistics import describe_values, min_draws_for_quantiles, with_credible_intervals, with_error_intervals
from .base import Analysed, ChainSource, Drawn, MethodPlan, register
from ...samplers import Sampler

__all__ = ["CouplingMethod", "sampler_constants", "coupling_plan", "draw_noise", "DEFAULT_NUM_STEPS"]

#: steps of a chain run for a coupling release when neither the spec nor a plan says
DEFAULT_NUM_STEPS = 2000


def sampler_constants(constants: Mapping[str, Any], sampler: str, step_size: float, batch_size: int | None,
                      clip_norm: float | None) -> dict:
    """The analyser's constants with the sampler's configuration: the keyword arguments of
    :func:`~bayesdp.publish.sensitivity.best_coupling`.

    Args:
        constants: the analyser's constants.
        sampler: ``"ula"`` or ``"sgld"``.
        step_size: gamma.
        batch_size: SGLD's batch size.
        clip_norm: a gradient clipping norm.

    Returns:
        The constants (``v_convex`` turned into ``record_strong_convexity = 0``: every record's term is convex).

    Examples:
        >>> sampler_constants({"grad_diff": 1.0, "v_convex": True}, "ula", 0.1, None, None)["record_strong_convexity"]
        0.0
    """
    c = {k: v for k, v in constants.items() if k != "provenance"}
    c.update(step_size=step_size, sampler=sampler.upper(), batch_size=batch_size, clip_norm=clip_norm)
    if constants.get("v_convex") is True:
        c["record_strong_convexity"] = 0.0
    return c


def coupling_plan(statistic, coupling, spec, design: Mapping[str, Any] | None, settings: Mapping[str, Any],
                  mechanism: str = "mc-estimate") -> MethodPlan:
    """The coupling release's plan for a statistic and a coupling bound: the route, the noise, the charge and the
    predicted error (the noise's exact standard deviation per value; the Monte Carlo error and the chain's bias
    are not included: a heuristic).

    Args:
        statistic: the statistic.
        coupling: the coupling bound, or None (then ``spec.concentration`` must be given).
        spec: the checked spec.
        design: the kept draws' chain design (``inverse_temperature``, ``num_steps``, ``burn_in``, ``thinning``,
            ``num_chains``) for the Monte Carlo interval, or None.
        settings: the public settings to report.
        mechanism: the ledger's mechanism label.

    Returns:
        The :class:`~bayesdp.publish.methods.base.MethodPlan`.

    Raises:
        AssumptionError: no Lipschitz constant, no route.

    Examples:
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex
        >>> from bayesdp.publish.spec import ReleaseSpec
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> c = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> p = coupling_plan(coordinate_means([SiteSpec("mu")]), c, ReleaseSpec(epsilon=1.0).check(), None, {})
        >>> p.predicted_rmse == math.sqrt(2.0) * p.event["noise_scale"]         # Laplace: sqrt(2) b
        True
    """
    if not math.isfinite(statistic.lipschitz):
        raise AssumptionError("the statistic has no declared Lipschitz constant: the coupling release needs one "
                              "(Function(fn, lipschitz=L)); path, last-draw and sample-and-aggregate need none")
    routes = sensitivity_routes(statistic, coupling, spec.concentration)
    if not routes:
        raise AssumptionError("no sensitivity route: no coupling bound is proven for this chain and no 004 "
                              "Proposition 3.10 constants were given")
    route = choose_route(routes, spec.max_delta)
    noise = plan_noise(statistic, route, spec.epsilon, spec.delta, spec.noise)
    k = statistic.num_coords
    if noise.mechanism == "gaussian":
        g = noise.gaussian
        cert = route.gaussian_certificate(spec.epsilon, g["delta"], g["rho"], g["sigma"], route.l2_sensitivity, k,
                                          mechanism)
    else:
        cert = route.certificate(spec.epsilon, noise.event["noise_scale"], k, mechanism)
    mc = None
    if design is not None and route.coupling_delta == 0.0 and coupling is not None:
        mc = monte_carlo_bound(coupling, inverse_temperature=design["inverse_temperature"],
                               num_steps=design["num_steps"], burn_in=design["burn_in"],
                               thinning=design.get("thinning", 1), num_chains=design.get("num_chains", 1))
    rmse = math.sqrt(noise.expected_squared_error[noise.mechanism] / k)
    return MethodPlan(
        method="coupling", settings={**settings, "noise": noise.mechanism}, predicted_rmse=rmse,
        predicted_label="heuristic",
        predicted_basis="the added noise's exact standard deviation; the Monte Carlo error and the chain's bias "
                        "are not included",
        epsilon=spec.epsilon, delta=noise.charged_delta, curve=cert.curve, event=dict(noise.event),
        mechanism=mechanism, source_label=cert.source,
        what=f"{statistic.description} ({k} value{'s' if k > 1 else ''}, {noise.mechanism} noise)",
        detail={"route": route, "routes": routes, "noise": noise, "certificate": cert, "monte_carlo": mc,
                "statistic": statistic, "level": spec.level, "coupling": coupling, "chain_is_noise": False})


def draw_noise(plan: MethodPlan, value: np.ndarray, noise_epsilon: float, extra: Mapping[str, Any] | None = None,
               committed: Mapping[str, Any] | None = None) -> Drawn:
    """The secure noise of a coupling-type plan on the non-private ``value`` (inside the reservation), clamped to
    the statistic's range (post-processing), with its intervals.

    Args:
        plan: the plan (:func:`coupling_plan` or sample-and-aggregate's).
        value: the non-private values.
        noise_epsilon: the ledger's noise epsilon.
        extra: method-specific public facts.
        committed: more fields for the ledger's commit line.

    Returns:
        The :class:`~bayesdp.publish.methods.base.Drawn` values.

    Raises:
        AssumptionError: the Gaussian noise drawn differs from the one charged (internal).

    Examples:
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex
        >>> from bayesdp.publish.spec import ReleaseSpec
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> stat = coordinate_means([SiteSpec("mu")]).with_range((0.0, 1.0))
        >>> c = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> plan = coupling_plan(stat, c, ReleaseSpec(stat, epsilon=1.0).check(), None, {})
        >>> bool(0.0 <= draw_noise(plan, np.array([0.5]), 1.0).fields["values"][0] <= 1.0)     # clamped to the range
        True
    """
    d = plan.detail
    stat, route, noise, cert, mc = d["statistic"], d["route"], d["noise"], d["certificate"], d["monte_carlo"]
    k = stat.num_coords
    if noise.mechanism == "gaussian":
        g = noise.gaussian
        noisy = gaussian_release(value, route.l2_sensitivity, g["epsilon"], g["delta"])
        if noisy.noise_scale != g["sigma"] or noisy.rho != g["rho"]:      # the same calibration, drawn
            raise AssumptionError("internal: the Gaussian noise drawn differs from the one charged")
    else:
        noisy = laplace_release(value, route.sensitivity, noise_epsilon)
        cert = route.certificate(plan.epsilon, noisy.noise_scale, k, plan.mechanism)    # at the scale drawn
    h, h_total = interval_half_widths(noise, noisy.noise_scale, noisy.grid, d["level"], stat, mc)
    items = describe_values(stat.names, noisy.values, noisy.noise_scale, noisy.noise_variance, d["level"],
                            half_width=h, value_range=stat.range, total_half_width=h_total)
    h_err, basis = error_half_width(noise, noisy.noise_scale, noisy.grid, d["level"], stat, mc, d.get("mc_sd"))
    items = with_error_intervals(items, h_err, basis, stat.range)
    published = np.array([it.value for it in items])
    commit = {"names": list(stat.names), "values": [float(v) for v in published],
              "noise_mechanism": noise.mechanism, "noise_scale": noisy.noise_scale,
              "sensitivity": noisy.effective_sensitivity, "lipschitz": stat.lipschitz, "l2_lipschitz": stat.l2,
              "statistic": stat.description,
              **({"raw_values": [float(v) for v in noisy.values]} if stat.range is not None else {}),
              **dict(committed or {})}
    post = {"clamp": None if stat.range is None else list(stat.range),
            "note": ("values clamped to the statistic's known range after the noise (post-processing: no privacy "
                     "cost; raw_values are the unclamped noisy values, also private)") if stat.range is not None
            else "none (the statistic has no declared range)"}
    fields = dict(values=published, names=stat.names, noise_scale=noisy.noise_scale,
                  noise_variance=noisy.noise_variance, sensitivity=noisy.effective_sensitivity,
                  proven_sensitivity=route.l2_sensitivity if noise.mechanism == "gaussian" else route.sensitivity,
                  grid=noisy.grid, source=cert.source, certificate=cert, items=tuple(items),
                  routes=tuple({"source": rt.source, "sensitivity": rt.sensitivity, "l2_sensitivity": rt.l2_sensitivity,
                                "delta": rt.coupling_delta, "chosen": rt is route} for rt in d["routes"]),
                  noise=noise.to_dict(), raw_values=np.asarray(noisy.values), postprocessing=post,
                  monte_carlo=None if mc is None else mc.to_dict(), extra=dict(extra or {}))
    return Drawn(fields=fields, commit=commit)


class CouplingMethod:
    """The coupling release (module docstring).

    Examples:
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> CouplingMethod().applies(ChainSource(model=None, data={}, domain=None, given="chain")) is None
        True
    """

    name = "coupling"
    auto = True

    def applies(self, source: ChainSource) -> str | None:
        """None when this method releases from ``source``, else why not."""
        return None

    def _design(self, an: Analysed, spec) -> dict:
        src = an.source
        if src.given == "chain":
            chains, kept, _ = src.draws.shape
            if src.run_kind == "final":
                return {"num_steps": src.num_steps, "num_chains": chains, "burn_in": 0, "thinning": src.num_steps,
                        "kept": kept, "run_kind": "final"}
            b = kept // 2 if spec.burn_in is None else spec.burn_in
            if not 0 <= b < kept:
                raise AssumptionError(f"burn_in = {spec.burn_in} must be in [0, {kept}) (draws per chain)")
            return {"num_steps": src.num_steps, "num_chains": chains, "burn_in": b, "thinning": src.thinning,
                    "kept": kept, "run_kind": src.run_kind}
        n = spec.num_steps or src.num_steps or DEFAULT_NUM_STEPS
        thin = spec.thinning
        if n % thin:
            raise AssumptionError(f"thinning = {thin} does not divide num_steps = {n}; pick num_steps a multiple of "
                                  "thinning")
        kept = n // thin
        b = kept // 2 if spec.burn_in is None else spec.burn_in
        if not 0 <= b < kept:
            raise AssumptionError(f"burn_in = {b} must be < the {kept} draws kept per chain (num_steps / thinning); "
                                  "lower burn_in")
        return {"num_steps": n, "num_chains": spec.num_chains or src.num_chains or 1, "burn_in": b,
                "thinning": thin, "kept": kept, "run_kind": "thinned" if thin > 1 else "path"}

    def plan(self, an: Analysed, spec) -> MethodPlan:
        """The settings, the charge and the predicted error (public inputs only)."""
        src = an.source
        kern = dict(src.kernel)
        step, rule = kern.get("step_size"), "given"
        if step is None:
            L = an.constants.get("total_smoothness")
            if L is None:
                raise AssumptionError("step_size not given and total_smoothness is not proven for this model; pass a "
                                      "step size (it must be data independent)")
            step, rule = 1.0 / float(L), "1 / total_smoothness (data independent: from the domain's constants)"
        design = self._design(an, spec)
        consts = sampler_constants(an.constants, src.sampler, step, kern.get("batch_size"), kern.get("clip_norm"))
        coupling, failed = best_coupling(**{k: v for k, v in consts.items() if v is not None})
        if coupling is None and spec.concentration is None:
            raise AssumptionError("no coupling bound is proven for this chain's configuration ("
                                  + "; ".join(f"{s}: {w}" for s, w in failed) + "); use a contracting step size or "
                                  "declare 004 Proposition 3.10 constants")
        beta = float(kern.get("inverse_temperature", 1.0))
        mc_design = {"inverse_temperature": beta, "num_steps": design["num_steps"], "burn_in": design["burn_in"],
                     "thinning": design["thinning"], "num_chains": design["num_chains"]}
        settings = {"sampler": src.sampler.upper(), "step_size": step, "step_size_rule": rule,
                    "num_steps": design["num_steps"], "burn_in": design["burn_in"],
                    "num_chains": design["num_chains"], "thinning": design["thinning"],
                    "inverse_temperature": beta, "batch_size": kern.get("batch_size"),
                    "clip_norm": kern.get("clip_norm"), "chain": "given (ran)" if src.given == "chain" else "run here"}
        stat = an.statistic
        draws_used = design["num_chains"] * (design["kept"] - design["burn_in"])
        if stat.quantile_levels and draws_used < min_draws_for_quantiles(stat.quantile_levels):
            raise AssumptionError(f"quantiles at levels {', '.join(f'{q:g}' for q in stat.quantile_levels)} need at "
                                  f"least {min_draws_for_quantiles(stat.quantile_levels)} draws; this chain gives "
                                  f"{draws_used} after the burn-in: run more steps or chains")
        # the Monte Carlo error as a public heuristic (docs/release.md §11), for the error interval when no proven
        # bound applies
        if design["run_kind"] == "final":
            mc_sd = chain_noise_sd(an.constants, an.dim, stat.num_coords, stat.l2, beta, float(step), 1,
                                   design["num_chains"], last_draw=True)
        else:
            mc_sd = chain_noise_sd(an.constants, an.dim, stat.num_coords, stat.l2, beta, float(step),
                                   design["thinning"] * (design["kept"] - design["burn_in"]), design["num_chains"])
        p = coupling_plan(stat, coupling, spec, mc_design, settings)
        return replace(p, detail={**p.detail, "design": design, "failed": failed, "mc_sd": mc_sd})

    def prepare(self, plan: MethodPlan, an: Analysed, rng_key) -> Any:
        """Run the unpublished chain (or take the given one's draws) and evaluate the statistic: non-private,
        never published; done before the reservation."""

        src, s, design = an.source, plan.settings, plan.detail["design"]
        if src.given == "chain":
            draws, keys = src.draws, src.key_label
        else:
            smp = Sampler(src.model, dict(src.data), sampler=src.sampler, step_size=s["step_size"],
                          num_steps=s["num_steps"], inverse_temperature=s["inverse_temperature"],
                          batch_size=s["batch_size"], clip_norm=s["clip_norm"], num_chains=s["num_chains"],
                          release=design["run_kind"], thinning=s["thinning"], init="zeros", uncertified=True,
                          model_kwargs=dict(src.model_kwargs))
            smp.run(rng_key)
            draws, keys = np.asarray(smp.get_unconstrained_samples(group_by_chain=True)), smp.key_source
        draws = np.asarray(draws)[:, design["burn_in"]:, :]
        flat = draws.reshape(-1, draws.shape[-1]).astype(np.float64)
        return plan.detail["statistic"].evaluate(flat), keys

    def run(self, plan: MethodPlan, an: Analysed, state, rng_key, noise_epsilon: float) -> Drawn:
        """The release's randomness, drawn after the reservation."""
        value, keys = state
        coupling = plan.detail["coupling"]
        stat = plan.detail["statistic"]
        chain = {"published": False, **{k: v for k, v in plan.settings.items() if k != "noise"}, "init": "zeros",
                 "chain_keys": keys,
                 "note": ("the chain is not published; the release's privacy comes from the coupling sensitivity "
                          "(004 Proposition 3.7) and the noise, drawn from the OS CSPRNG whatever the chain's key")}
        extra = {"chain": chain, "coupling": None if coupling is None else coupling.to_dict(),
                 "statistic": {"description": stat.description, "lipschitz": stat.lipschitz,
                               "lipschitz_source": stat.lipschitz_source}}
        drawn = draw_noise(plan, value, noise_epsilon, extra)
        items = with_credible_intervals(drawn.fields["items"], stat, plan.settings["inverse_temperature"])
        return replace(drawn, fields={**drawn.fields, "items": items})


register(CouplingMethod())
