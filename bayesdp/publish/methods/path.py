"""The path release: the Monte Carlo estimate of a full-batch ULA chain whose whole path is private, at the largest
inverse temperature whose GDP certificate meets (epsilon, delta) (Dong-Roth-Su Cor. 3.3; docs/release.md §8).  The
chain's Gaussian steps are the privacy noise: the budget is reserved before it runs and no noise is added.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...budget.ledger import noise_delta, noise_epsilon, to_decimal
from ...errors import AssumptionError
from ..path import (chain_error_items, chain_noise_sd, noiseless_items, path_certificate, path_inverse_temperature,
                    path_num_steps, start_transient)
from ..sensitivity import best_coupling, monte_carlo_bound
from ..statistics import min_draws_for_quantiles, with_credible_intervals
from .base import Analysed, ChainSource, Drawn, MethodPlan, register
from .coupling import sampler_constants
from ...samplers import Sampler

__all__ = ["PathMethod"]


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
        step, rule = src.kernel.get("step_size"), "given"
        if step is None:
            L = c_.get("total_smoothness")
            if L is None:
                raise AssumptionError("step_size is not given and total_smoothness is not proven; pass a step size "
                                      "(data independent)")
            step, rule = 1.0 / float(L), "1 / total_smoothness (data independent: from the domain's constants)"
        if spec.num_steps is not None:
            n, n_rule = spec.num_steps, "given"
        elif src.num_steps is not None:
            n, n_rule = int(src.num_steps), f"the {src.given}'s"
        else:
            n, n_rule = path_num_steps(c_, an.dim, step), "ten relaxation times of the curvature proxy (§8.2)"
        c = spec.num_chains or src.num_chains or 1
        b = n // 2 if spec.burn_in is None else spec.burn_in
        if not 0 <= b < n:
            raise AssumptionError(f"burn_in = {b} must be in [0, {n}) (steps per chain)")
        eps, delta = spec.epsilon, spec.delta
        if src.given == "plan" and getattr(src.plan, "mechanism", None) == "ula-path":
            beta = float(src.kernel.get("inverse_temperature", 1.0))       # the plan's, as given
            cert = path_certificate(float(gd), step, n, beta, c)
            if not cert.epsilon(float(noise_delta(delta))) <= noise_epsilon(eps):
                raise AssumptionError(f"the ula-path plan's path certificate (GDP mu = {cert.curve.mu:.6g}) does not "
                                      f"meet epsilon = {eps:g} at delta = {delta:g}; calibrate a plan for this budget")
        else:
            beta, cert = path_inverse_temperature(noise_epsilon(eps), noise_delta(delta), float(gd), step, n, c)
        mu = float(cert.curve.mu)
        coupling, _ = best_coupling(**{k: v for k, v in sampler_constants(c_, "ula", step, None, None).items()
                                       if v is not None})
        mc = monte_carlo_bound(coupling, inverse_temperature=beta, num_steps=n, burn_in=b, thinning=1, num_chains=c)
        stat = an.statistic
        k = stat.num_coords
        if stat.quantile_levels and c * (n - b) < min_draws_for_quantiles(stat.quantile_levels):
            raise AssumptionError(f"quantiles at levels {', '.join(f'{q:g}' for q in stat.quantile_levels)} need at "
                                  f"least {min_draws_for_quantiles(stat.quantile_levels)} kept draws; the path keeps "
                                  f"{c * (n - b)} (num_chains x (num_steps - burn_in)): raise num_steps or num_chains")
        # the chain's randomness as Gaussian noise per value (docs/release.md §11); at the default burn-in n/2 it
        # is predicted_path_error's 2 grad_diff^2 / (mu^2 lambda_p^2) per direction
        sd = chain_noise_sd(c_, an.dim, k, stat.l2, beta, float(step), n - b, c)
        if stat.quantile_levels:       # each quantile reads one coordinate: its mean's noise, scaled per level (§11)
            eq_sd = chain_noise_sd(c_, an.dim, 1, 1.0, beta, float(step), n - b, c)
        else:
            eq_sd = sd
        # the start's bias left in the average (§11.4): a chain too short to forget its start is not predicted
        # accurate (its draws stay near 0 whatever the data)
        tr = start_transient(c_, an.dim, k, stat.l2, float(step), n, b)
        tr_one = start_transient(c_, an.dim, 1, 1.0, float(step), n, b) if stat.quantile_levels else tr
        rmse = None if sd is None else sd if tr is None else math.hypot(sd, tr)
        settings = {"sampler": "ULA", "step_size": float(step), "step_size_rule": rule, "num_steps": int(n),
                    "num_steps_rule": n_rule, "burn_in": int(b), "num_chains": int(c), "thinning": 1,
                    "inverse_temperature": beta, "gdp_mu": mu, "grad_diff": float(gd), "equivalent_noise_sd": eq_sd,
                    "start_transient": tr_one}
        return MethodPlan(
            method="path", settings=settings, predicted_rmse=rmse,
            predicted_label="heuristic",
            predicted_basis="the variance of an Ornstein-Uhlenbeck path average at the curvature proxy, the "
                            "temperature the budget allows and the kept steps, and the start's bias left in the "
                            "average, in quadrature (docs/release.md §9, §11); not a bound",
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
        draws = np.asarray(smp.get_unconstrained_samples(group_by_chain=True))[:, s["burn_in"]:, :]
        stat, mc, level = d["statistic"], d["monte_carlo"], d["level"]
        value = stat.evaluate(draws.reshape(-1, draws.shape[-1]).astype(np.float64))
        h = None if mc is None or stat.kind != "mean" else mc.half_width(stat.l2, 1.0 - level)
        items = noiseless_items(stat, value, level, h)
        items = chain_error_items(items, s["equivalent_noise_sd"], level, stat.range, "path", stat,
                                  s.get("start_transient"))
        items = with_credible_intervals(items, stat, s["inverse_temperature"])
        published = np.array([it.value for it in items])
        info = {**s, "chain_keys": smp.key_source,
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


register(PathMethod())
