"""The path release: the Monte Carlo estimate of a full-batch ULA chain whose whole path is private, at the largest
inverse temperature whose GDP certificate meets (epsilon, delta) (Dong-Roth-Su Cor. 3.3; docs/release.md §8).  The
chain's Gaussian steps are the privacy noise: the budget is reserved before it runs and no noise is added.
"""

from __future__ import annotations

from dataclasses import replace
import math
from typing import Any

import numpy as np

from ...budget.ledger import noise_delta, noise_epsilon, to_decimal
from ...errors import AssumptionError
from ..path import (mser_burn_in, chain_error_items, noiseless_items, path_certificate, path_error_terms, path_inverse_temperature,
                    path_num_steps, path_terms_from_values, start_bias_from_values, tune_path)
from ..sensitivity import best_coupling, monte_carlo_bound
from ..statistics import min_draws_for_quantiles, with_credible_intervals
from .base import Analysed, ChainSource, Drawn, MethodPlan, register
from .coupling import sampler_constants
from ...samplers import Sampler

__all__ = ["PathMethod"]

#: the l2 constant's source of coordinate means of real-support (unconstrained) sites (statistics.coordinate_means)
_IDENTITY = "1: identity on real-support sites"


class PathMethod:
    """The path release (module docstring).

    Examples:
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> PathMethod().applies(ChainSource(model=None, data={}, domain=None, given="chain")) is None
        False
    """

    name = "path"
    auto = True

    def applies(self, source: ChainSource) -> str | None:
        """None when this method releases from ``source``, else why not."""
        if source.given == "chain":
            return "the chain already ran with its own temperature: its draws are released by the coupling method"
        if not source.full_batch_ula:
            return "the path certificate covers full-batch ULA without clipping"
        if source.given == "plan" and getattr(source.plan, "mechanism", None) == "ula-path":
            return None                     # the plan's chain as given, its temperature included
        if float(source.kernel.get("inverse_temperature", 1.0)) != 1.0:
            return "the path release sets the inverse temperature from the budget; give a kernel at temperature 1"
        return None

    def plan(self, an: Analysed, spec) -> MethodPlan:
        """The settings, the charge and the predicted error (public inputs only)."""
        if spec.delta <= 0:
            raise AssumptionError("delta = 0: the chain's Gaussian steps are not pure epsilon-DP; pass delta in (0, 1)")
        if spec.noise != "auto":
            raise AssumptionError(f"noise = {spec.noise!r} was asked for: the path release adds no noise")
        if spec.thinning != 1 or spec.concentration is not None or spec.max_delta is not None:
            raise AssumptionError("thinning, concentration and max_delta apply to the coupling release only")
        c_ = an.constants
        gd = c_.get("grad_diff")
        if gd is None:
            raise AssumptionError("grad_diff is not proven for this model and domain: the path certificate needs it")
        src = an.source
        stat = an.statistic
        k = stat.num_coords
        fams = tuple(f for _, f in getattr(an.analysis, "observed_sites", None) or ())
        eps, delta = spec.epsilon, spec.delta
        given_plan = src.given == "plan" and getattr(src.plan, "mechanism", None) == "ula-path"
        step = src.kernel.get("step_size")
        n = spec.num_steps if spec.num_steps is not None else (int(src.num_steps) if src.num_steps is not None
                                                                 else None)
        c = spec.num_chains or src.num_chains
        b = spec.burn_in
        min_kept = min_draws_for_quantiles(stat.quantile_levels) if stat.quantile_levels else 1
        tuned = None
        if not given_plan and (step is None or n is None or c is None or b is None):
            # the settings left open minimise the predicted total error (docs/release.md §8.4; public inputs only)
            tuned = tune_path(c_, an.dim, noise_epsilon(eps), float(noise_delta(delta)), fams, k, stat.l2,
                              step_size=step, num_steps=n, burn_in=b, num_chains=c, min_kept=min_kept)
        rule = "given" if step is not None else None
        if step is None:
            L = c_.get("total_smoothness")
            if L is None:
                raise AssumptionError("step_size is not given and total_smoothness is not proven; pass a step size "
                                      "(data independent)")
            if tuned is not None:
                step, rule = tuned["step_size"], (f"{tuned['step_size'] * float(L):.3g} / total_smoothness: "
                                                  "minimises the predicted error (§8.4; data independent)")
            else:
                step, rule = 1.0 / float(L), "1 / total_smoothness (data independent: from the domain's constants)"
        if n is not None:
            n_rule = "given" if spec.num_steps is not None else f"the {src.given}'s"
        elif tuned is not None:
            n, n_rule = tuned["num_steps"], "minimises the predicted error (§8.4)"
        else:
            n, n_rule = path_num_steps(c_, an.dim, step), "ten relaxation times of the curvature proxy (§8.2)"
        if c is None:
            c = tuned["num_chains"] if tuned is not None else 1
        if given_plan and b is None and step is not None:
            # the plan's chain as given (its temperature included): only the burn-in is tuned (§8.4)
            tuned = tune_path(c_, an.dim, noise_epsilon(eps), float(noise_delta(delta)), fams, k, stat.l2,
                              step_size=step, num_steps=n, num_chains=c, min_kept=min_kept,
                              inverse_temperature=float(src.kernel.get("inverse_temperature", 1.0)))
        if b is None:
            b = tuned["burn_in"] if tuned is not None and tuned["num_steps"] == n else n // 2
        if not 0 <= b < n:
            raise AssumptionError(f"burn_in = {b} must be in [0, {n}) (steps per chain)")
        if given_plan:
            beta = float(src.kernel.get("inverse_temperature", 1.0))       # the plan's, as given
            cert = path_certificate(float(gd), step, n, beta, c)
            if not cert.epsilon(float(noise_delta(delta))) <= noise_epsilon(eps):
                raise AssumptionError(f"the ula-path plan's path certificate (GDP mu = {cert.curve.mu:.6g}) does not "
                                      f"meet epsilon = {eps:g} at delta = {delta:g}; calibrate a plan for this budget")
        else:
            beta, cert = path_inverse_temperature(noise_epsilon(eps), noise_delta(delta), float(gd), step, n, c)
        mu = float(cert.curve.mu)
        coupling, _ = best_coupling(**{k_: v for k_, v in sampler_constants(c_, "ula", step, None, None).items()
                                       if v is not None})
        mc = monte_carlo_bound(coupling, inverse_temperature=beta, num_steps=n, burn_in=b, thinning=1, num_chains=c)
        if stat.quantile_levels and c * (n - b) < min_kept:
            raise AssumptionError(f"quantiles at levels {', '.join(f'{q:g}' for q in stat.quantile_levels)} need at "
                                  f"least {min_kept} kept draws; the path keeps "
                                  f"{c * (n - b)} (num_chains x (num_steps - burn_in)): raise num_steps or num_chains")
        # the predicted error term by term (§8.4): the chain's randomness as Gaussian noise per value (§11), the
        # start's bias left in the average (§11.4), the tempering and discretisation biases
        predicted = _predicted_terms(c_, an.dim, beta, float(step), n, b, c, fams, stat)
        rmse = predicted.pop("rmse")
        # beside the heuristic: the proven sub-Gaussian scale of the Monte Carlo part alone, P(|F - E F| >= t) <=
        # 2 exp(-t^2 / (2 scale^2)) (§4.2; worst-case contraction, so wide; no bias)
        proven_mc = None if mc is None else float(stat.l2) * float(mc.lipschitz_noise)
        settings = {"sampler": "ULA", "step_size": float(step), "step_size_rule": rule, "num_steps": int(n),
                    "num_steps_rule": n_rule, "burn_in": int(b),
                    # left open: at least the tuned one, raised from the path itself when the chain arrives later
                    "burn_in_rule": "given" if spec.burn_in is not None else "adaptive",
                    "num_chains": int(c), "thinning": 1,
                    "inverse_temperature": beta, "gdp_mu": mu, "grad_diff": float(gd), **predicted,
                    "proven_monte_carlo_scale": proven_mc}
        return MethodPlan(
            method="path", settings=settings, predicted_rmse=rmse,
            predicted_label="heuristic",
            predicted_basis="the exact variance of the average of the kept draws of ULA on a quadratic of the public "
                            "heuristic curvature, at the temperature the budget allows, the start's bias left in the "
                            "average and the tempering and discretisation biases, in quadrature (docs/release.md "
                            "§8.4, §11); not a bound (the proven bound on the Monte Carlo part alone: "
                            "settings['proven_monte_carlo_scale'], §4.2)",
            epsilon=eps, delta=to_decimal(delta, "delta"), curve=cert.curve, event={"type": "gdp", "mu": mu},
            mechanism="path-average", source_label=cert.source,
            what=f"{stat.description} ({k} value{'s' if k > 1 else ''}, path of a private chain)",
            detail={"certificate": cert, "monte_carlo": mc, "statistic": stat, "level": spec.level,
                    "chain_is_noise": True})

    def prepare(self, plan: MethodPlan, an: Analysed, rng_key) -> Any:
        """Nothing: the chain runs after the reservation (its steps are the noise)."""
        return None

    def run(self, plan: MethodPlan, an: Analysed, state, rng_key, noise_epsilon: float) -> Drawn:
        """The release's randomness, drawn after the reservation."""

        src, s, d = an.source, plan.settings, plan.detail
        smp = Sampler(src.model, dict(src.data), step_size=s["step_size"], num_steps=s["num_steps"],
                      inverse_temperature=s["inverse_temperature"], num_chains=s["num_chains"], release="path",
                      init="zeros", uncertified=True, model_kwargs=dict(src.model_kwargs))
        smp.run(rng_key)
        path = np.asarray(smp.get_unconstrained_samples(group_by_chain=True))
        stat, mc, level = d["statistic"], d["monte_carlo"], d["level"]
        fams = tuple(fam for _, fam in getattr(an.analysis, "observed_sites", None) or ())
        if s["burn_in_rule"] == "adaptive":
            # the burn-in read off the path itself (post-processing of the private path, docs/release.md §8.4):
            # never below the planned one; the error terms follow it
            need = min_draws_for_quantiles(stat.quantile_levels) if stat.quantile_levels else 1
            b = mser_burn_in(path, s["burn_in"], s["num_steps"] - -(-need // s["num_chains"]))
            if b != s["burn_in"]:
                again = _predicted_terms(an.constants, an.dim, s["inverse_temperature"], s["step_size"],
                                         s["num_steps"], b, s["num_chains"], fams, stat)
                s = {**s, "burn_in": b, "predicted_rmse": again.pop("rmse"), **again}
            s = {**s, "burn_in_planned": plan.settings["burn_in"]}
        draws = path[:, s["burn_in"]:, :]
        value = stat.evaluate(draws.reshape(-1, draws.shape[-1]).astype(np.float64))
        h = None if mc is None or stat.kind != "mean" else mc.half_width(stat.l2, 1.0 - level)
        items = noiseless_items(stat, value, level, h)
        terms = s.get("predicted_terms") or {}
        f, spread = terms.get("transient_fraction"), terms.get("start_spread")
        read_off = None
        if (stat.kind == "mean" and stat.l2_lipschitz_source == _IDENTITY and f is not None and spread is not None
                and 0.0 <= f < 1.0):
            # coordinate means of unconstrained coordinates: the start's bias, and the mode's distance from the
            # curvature's peak, read off the released values too (post-processing, docs/release.md §8.4), never
            # below the public prediction
            seen = path_terms_from_values(an.constants, an.dim, s["inverse_temperature"], s["step_size"],
                                          s["num_steps"], s["burn_in"], s["num_chains"], fams, value)
            sd, bias, isd = s["equivalent_noise_sd"], s.get("predicted_bias"), None
            if seen is not None and seen.get("mode_variance") is not None:
                f = max(f, seen["transient_fraction"])
                isd = seen["noise_sd"]
                bias = None if bias is None or seen["bias"] is None else max(bias, seen["bias"])
                read_off = {"mode_variance": seen["mode_variance"], "curvature": seen["curvature"],
                            "along_mode_curvature": seen["along_mode_curvature"], "transient_fraction": f,
                            "noise_sd": max(sd or 0.0, isd), "bias": bias}
            trs = start_bias_from_values(value, f, spread, max(sd or 0.0, isd or 0.0))
            items = tuple(it for j, one in enumerate(items) for it in chain_error_items(
                [one], sd, level, stat.range, "path", stat, trs[j], bias, isd))
            if read_off is not None:
                note = (f"; read off the released values (post-processing): the mode sits "
                        f"{math.sqrt(read_off['mode_variance']):.3g} per direction from the curvature's peak, the "
                        f"curvature is {read_off['curvature']:.3g} ({read_off['along_mode_curvature']:.3g} along the "
                        f"mode), so the average keeps {f:.2g} of the start's offset (docs/release.md §8.4)")
                items = tuple(replace(it, error_interval_basis=it.error_interval_basis + note)
                              if it.error_interval is not None and it.error_interval_basis else it for it in items)
        else:
            items = chain_error_items(items, s["equivalent_noise_sd"], level, stat.range, "path", stat,
                                      s.get("start_transient"), s.get("predicted_bias"))
        if s.get("predicted_rmse") is not None:       # the prediction at the burn-in used, not the planned one
            items = tuple(replace(it, predicted_rmse=s["predicted_rmse"]) for it in items)
        items = _with_design_assumption(items, terms)
        items = with_credible_intervals(items, stat, s["inverse_temperature"])
        published = np.array([it.value for it in items])
        info = {**s, "chain_keys": smp.key_source, "interval_terms": read_off,
                "note": ("the chain's path is private (its Gaussian steps are the noise, Dong-Roth-Su composition); "
                         "the released numbers are a statistic of it (post-processing); no noise is added")}
        cert = d["certificate"]
        fields = dict(values=published, names=stat.names, noise_scale=0.0, noise_variance=0.0,
                      sensitivity=s["grad_diff"], proven_sensitivity=s["grad_diff"], grid=0.0, source=cert.source,
                      certificate=cert, items=items, routes=({"source": cert.source, "gdp_mu": s["gdp_mu"],
                                                              "chosen": True},),
                      noise={"mechanism": "path", "expected_squared_error": {}, "gaussian_unavailable": None},
                      raw_values=np.asarray(value),
                      postprocessing={"clamp": None if stat.range is None else list(stat.range),
                                      "note": "a statistic of the private path (post-processing)"},
                      monte_carlo=None if mc is None else mc.to_dict(),
                      extra={"path": info, "statistic": {
                          "description": f"statistic of the private path ({len(items)} value(s))", "lipschitz": None,
                          "lipschitz_source": "no Lipschitz constant: the whole path is private (docs/release.md §8)"}})
        commit = {"names": list(stat.names), "values": [float(v) for v in published], "noise_mechanism": "path",
                  "gdp_mu": s["gdp_mu"], "inverse_temperature": s["inverse_temperature"],
                  "statistic": stat.description}
        return Drawn(fields=fields, commit=commit)


def _predicted_terms(c_, dim, beta, step, n, b, c, fams, stat) -> dict:
    """The predicted error terms of a path average (docs/release.md §8.4) as the settings list them: per value
    (``predicted_terms``) and for one coordinate (the equivalent noise sd, the start's transient, the bias; for
    quantiles); ``rmse`` the whole prediction per value. Public inputs and the chain's settings only."""
    terms = path_error_terms(c_, dim, beta, step, n, b, c, fams, stat.num_coords, stat.l2)
    one = path_error_terms(c_, dim, beta, step, n, b, c, fams, 1, 1.0) if stat.quantile_levels else terms
    out = {"equivalent_noise_sd": None if one is None else one["noise_sd"],
           "start_transient": None if one is None else one["start_transient"],
           "predicted_bias": None if one is None else one["bias"],
           "predicted_terms": None if terms is None else {
               key: terms[key] for key in ("curvature", "noise_sd", "start_transient", "transient_fraction",
                                           "transient_fraction_prior_curvature", "start_spread", "tempering_bias",
                                           "discretisation_bias", "bias", "rmse")},
           "rmse": None if terms is None else terms["rmse"]}
    return out


def _with_design_assumption(items, terms: dict) -> tuple:
    """The error interval's basis states what it assumes about the design (docs/release.md §8.4, "design"): the
    start's bias is predicted at the curvature ``lambda`` in every direction (the records' information spread
    evenly); in a direction only the prior informs, the chain keeps the larger fraction ``f_weak`` of the start's
    offset (public inputs; nothing here reads the data)."""
    lam, f, f_weak = (terms.get(k) for k in ("curvature", "transient_fraction", "transient_fraction_prior_curvature"))
    if lam is None or f is None or f_weak is None or not f_weak > f:
        return tuple(items)
    note = (f"; assumes every direction of theta gets the curvature {lam:.3g} (the records' information spread "
            f"evenly over the directions): the average keeps {f:.2g} of the start's offset there, but {f_weak:.2g} "
            "in a direction only the prior informs, so with strongly correlated features the interval can be too "
            "narrow (docs/release.md §8.4, design)")
    return tuple(replace(it, error_interval_basis=it.error_interval_basis + note)
                 if it.error_interval is not None and it.error_interval_basis else it for it in items)


register(PathMethod())
