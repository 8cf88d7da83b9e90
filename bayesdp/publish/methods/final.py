"""The last-draw release: a statistic of the final draw of one full-batch ULA chain planned from public quantities
only (``bayesdp.calibrate(mechanism="ula-final")``, passed in by the layer above as ``source.plan_final``, or the
user's ``ula-final`` plan as given), at the largest inverse temperature whose last-draw certificate meets
(epsilon, delta) (docs/release.md §10).  The chain's Gaussian steps are the noise: no noise is added.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...budget.ledger import noise_delta, noise_epsilon, to_decimal
from ...certificate import Certificate
from ...curves import GDP
from ...errors import AssumptionError
from ..final import final_inverse_temperature_proxy, predicted_final_error
from ..path import chain_error_items, last_draw_error_terms, noiseless_items
from .base import Analysed, ChainSource, Drawn, MethodPlan, register
from ...samplers import Sampler

__all__ = ["FinalMethod"]


class FinalMethod:
    """The last-draw release (module docstring).

    Examples:
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> FinalMethod().applies(ChainSource(model=None, data={}, domain=None, given="chain")) is None
        False
    """

    name = "final"
    auto = True

    def applies(self, source: ChainSource) -> str | None:
        """None when this method releases from ``source``, else why not."""
        if source.given == "chain":
            return "the chain already ran: its draws are released by the coupling method"
        if not source.full_batch_ula:
            return "the last-draw certificate covers full-batch ULA without clipping"
        if source.given == "plan":
            if getattr(source.plan, "mechanism", None) != "ula-final":
                return "the plan is not a ula-final plan (its settings are honoured: a last draw needs its own plan)"
            return None
        if source.given != "kernel":
            return "the driver pins the chain's settings; the last-draw release plans its own chain"
        if source.plan_final is None:
            return "no last-draw planner was given"
        return None

    def plan(self, an: Analysed, spec) -> MethodPlan:
        """The settings, the charge and the predicted error (public inputs only)."""
        if an.statistic.kind != "mean":
            raise AssumptionError(f"statistic {an.statistic.description!r} is estimated from many draws (a quantile "
                                  "is never read off one draw): the last-draw release cannot answer it; use method "
                                  "'path' or 'coupling' (method='auto' picks one)")
        if spec.delta <= 0:
            raise AssumptionError("delta = 0: a chain's last draw is not pure epsilon-DP; pass delta in (0, 1)")
        if spec.noise != "auto":
            raise AssumptionError(f"noise = {spec.noise!r} was asked for: the last-draw release adds no noise")
        if (spec.thinning != 1 or spec.concentration is not None or spec.max_delta is not None
                or spec.burn_in is not None or spec.num_steps is not None or spec.num_chains not in (None, 1)):
            raise AssumptionError("burn_in, num_steps, num_chains, thinning, concentration and max_delta do not apply "
                                  "to the last-draw release (one chain planned by bayesdp.calibrate)")
        src = an.source
        eps, delta = spec.epsilon, spec.delta
        ne, nd = noise_epsilon(eps), float(noise_delta(delta))
        if src.given == "plan":
            pl = src.plan
            if pl.gdp_mu is None or not GDP(float(pl.gdp_mu)).epsilon(nd) <= ne:
                raise AssumptionError(f"the ula-final plan's certificate (GDP mu = {pl.gdp_mu}) does not meet epsilon "
                                      f"= {eps:g} at delta = {delta:g}; calibrate a plan for this budget")
            planned_by = "the user's ula-final plan (as given)"
        elif spec.method_name != "final":        # the plan is costly: made only once this method is chosen
            return self._deferred(an, spec)
        else:
            # the charged epsilon and delta: calibrate searches at (ne, nd), as `bayesdp calibrate` with the same
            # numbers did, and finds that search again in a warm process
            pl = src.plan_final(eps, delta, spec.max_steps)
            if pl.gdp_mu is not None and not GDP(float(pl.gdp_mu)).epsilon(nd) <= ne:
                raise AssumptionError(f"the last-draw plan's certificate (GDP mu = {pl.gdp_mu}) does not meet epsilon "
                                      f"= {eps:g} at delta = {delta:g} (a bug: report it)")
            planned_by = "bayesdp.calibrate(mechanism='ula-final')"
        if pl.gdp_mu is None:
            raise AssumptionError(f"the last-draw plan's certificate ({pl.source}) is not a GDP curve; a last-draw "
                                  "release needs one (full-batch ULA on a strongly convex, smooth potential): use "
                                  "method 'path' or 'coupling'")
        mu = float(pl.gdp_mu)
        curve = GDP(mu)
        cert = Certificate(mechanism="ula-final", source=pl.source, curve=curve,
                           assumptions={"plan": planned_by, "x0": "zeros",
                                        "released": "a statistic of the final draw (post-processing)"},
                           constants={"gdp_mu": mu, "inverse_temperature": pl.inverse_temperature,
                                      "step_size": pl.step_size, "num_steps": pl.num_steps},
                           notes="the chain's own Gaussian steps are the privacy noise; no noise is added")
        stat = an.statistic
        k = stat.num_coords
        # one draw of the planned chain at its own temperature, step and steps, as Gaussian noise, the start's bias
        # left in it and the chain's bias, at the public curvature (docs/release.md §10.1, §11)
        fams = tuple(f for _, f in getattr(an.analysis, "observed_sites", None) or ())
        terms = last_draw_error_terms(an.constants, an.dim, float(pl.inverse_temperature), float(pl.step_size),
                                      int(pl.num_steps), fams, k, stat.l2)
        if terms is None:
            pred = predicted_final_error(an.constants, an.dim, eps, delta, k, stat.l2)
            sd, tr, bias = None if pred is None else math.sqrt(pred / k), None, None
        else:
            sd, tr, bias = terms["noise_sd"], terms["start_transient"], terms["bias"]
        settings = {"sampler": "ULA", "step_size": pl.step_size, "num_steps": pl.num_steps, "num_chains": 1,
                    "burn_in": 0, "inverse_temperature": pl.inverse_temperature, "gdp_mu": mu,
                    "plan_epsilon": pl.epsilon, "planned_by": planned_by, "distance_bound": pl.distance_bound,
                    "equivalent_noise_sd": sd, "start_transient": tr, "predicted_bias": bias,
                    "plan_warnings": list(getattr(pl, "warnings", None) or ())}
        return MethodPlan(
            method="final", settings=settings,
            predicted_rmse=None if sd is None else math.sqrt(sd * sd + (tr or 0.0) ** 2 + (bias or 0.0) ** 2),
            predicted_label="heuristic",
            predicted_basis="the spread of one draw of the planned ULA chain on a Gaussian at the public heuristic "
                            "curvature, at the plan's temperature, step and steps, the start's bias left in it and the "
                            "tempering and discretisation bias, in quadrature (docs/release.md §10.1, §11); not a "
                            "bound",
            epsilon=eps, delta=to_decimal(delta, "delta"), curve=curve, event={"type": "gdp", "mu": mu},
            mechanism="ula-final", source_label=pl.source,
            what=f"{stat.description}, evaluated at the last draw of a private chain ({k} value{'s' if k > 1 else ''})",
            detail={"certificate": cert, "statistic": stat, "level": spec.level, "chain_is_noise": True,
                    "noise_delta": nd})

    def _deferred(self, an: Analysed, spec) -> MethodPlan:
        """The prediction alone (for ``auto``): the chain is planned once this method is chosen."""
        stat = an.statistic
        k = stat.num_coords
        beta = final_inverse_temperature_proxy(an.constants, spec.epsilon, spec.delta)
        fams = tuple(f for _, f in getattr(an.analysis, "observed_sites", None) or ())
        terms = None if beta is None else last_draw_error_terms(an.constants, an.dim, beta, None, None, fams, k,
                                                                stat.l2)
        return MethodPlan(
            method="final", settings={"planned_by": "bayesdp.calibrate(mechanism='ula-final'), once chosen"},
            predicted_rmse=None if terms is None else terms["rmse"], predicted_label="heuristic",
            predicted_basis="the spread of one draw of the tempered posterior on a Gaussian at the public heuristic "
                            "curvature and the proxy temperature, and the tempering bias (docs/release.md §10.1); not "
                            "a bound",
            epsilon=spec.epsilon, delta=to_decimal(spec.delta, "delta"), curve=None, event={}, mechanism="ula-final",
            source_label="", what="", detail={"deferred": True})

    def prepare(self, plan: MethodPlan, an: Analysed, rng_key) -> Any:
        """The sampler, with the run's own certificate (from the data's record count) checked against the plan's."""

        src, s = an.source, plan.settings
        smp = Sampler(src.model, dict(src.data), step_size=s["step_size"], num_steps=s["num_steps"],
                      inverse_temperature=s["inverse_temperature"], num_chains=1, release="final", init="zeros",
                      domain=src.domain, delta=plan.detail["noise_delta"], model_kwargs=dict(src.model_kwargs))
        run_eps = smp.certificate.get("epsilon")
        if run_eps is None or run_eps > s["plan_epsilon"] * (1 + 1e-9) or run_eps > plan.epsilon:
            raise AssumptionError(f"the run's certificate (epsilon = {run_eps}) exceeds the plan's "
                                  f"({s['plan_epsilon']:.6g}) or the charge; the domain or the model differ from the "
                                  "plan's")
        return smp, run_eps

    def run(self, plan: MethodPlan, an: Analysed, state, rng_key, noise_epsilon: float) -> Drawn:
        """The release's randomness, drawn after the reservation."""
        smp, run_eps = state
        s, d = plan.settings, plan.detail
        smp.run(rng_key)
        draw = np.asarray(smp.get_unconstrained_samples(group_by_chain=True))[:, -1, :].astype(np.float64)
        stat = d["statistic"]
        value = stat.evaluate(draw)
        items = noiseless_items(stat, value, d["level"])
        items = chain_error_items(items, s["equivalent_noise_sd"], d["level"], stat.range, "last draw", stat,
                                  s.get("start_transient"), s.get("predicted_bias"))
        published = np.array([it.value for it in items])
        gd = float(an.constants.get("grad_diff") or math.nan)
        info = {**s, "run_epsilon": run_eps, "chain_keys": smp.key_source,
                "note": ("the chain's final draw is private (its certificate: " + plan.source_label + "); the "
                         "released numbers are a statistic of it (post-processing); no noise is added")}
        fields = dict(values=published, names=stat.names, noise_scale=0.0, noise_variance=0.0, sensitivity=gd,
                      proven_sensitivity=gd, grid=0.0, source=plan.source_label, certificate=d["certificate"],
                      items=items, routes=({"source": plan.source_label, "gdp_mu": s["gdp_mu"], "chosen": True},),
                      noise={"mechanism": "final draw", "expected_squared_error": {}, "gaussian_unavailable": None},
                      raw_values=np.asarray(value),
                      postprocessing={"clamp": None if stat.range is None else list(stat.range),
                                      "note": "a statistic of the chain's private final draw (post-processing)"},
                      monte_carlo=None,
                      extra={"final": info,
                             "warnings": [f"the last-draw plan: {w}" for w in s.get("plan_warnings", ())],
                             "statistic": {
                          "description": f"statistic of the final draw of a private chain ({len(items)} value(s))",
                          "lipschitz": None,
                          "lipschitz_source": "no Lipschitz constant: the final draw is private (docs/release.md §10)"}})
        commit = {"names": list(stat.names), "values": [float(v) for v in published], "noise_mechanism": "final draw",
                  "inverse_temperature": s["inverse_temperature"], "statistic": stat.description}
        return Drawn(fields=fields, commit=commit)


register(FinalMethod())
