"""Sample-and-aggregate (Nissim-Raskhodnikova-Smith 2007; docs/release.md §7): the records split into k disjoint
chunks, one full-batch ULA chain per chunk, each chunk's estimate clamped to the public range, the average released
with secure noise of window ``(b - a) / k`` per coordinate.  Not chosen automatically (it needs a range).
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import AssumptionError
from ..aggregate import aggregate_estimate, aggregate_info, aggregate_route, check_chunks, choose_chunks
from ..noiseplan import plan_noise
from .base import Analysed, ChainSource, Drawn, MethodPlan, register
from .coupling import DEFAULT_NUM_STEPS, draw_noise

__all__ = ["AggregateMethod"]


class AggregateMethod:
    """Sample-and-aggregate (module docstring).

    Examples:
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> AggregateMethod().applies(ChainSource(model=None, data={}, domain=None, given="chain")) is None
        False
    """

    name = "sample-aggregate"
    auto = False

    def applies(self, source: ChainSource) -> str | None:
        """None when this method releases from ``source``, else why not."""
        if source.given == "chain":
            return "the chain already ran on all the records: sample-and-aggregate runs one chain per chunk"
        if not source.full_batch_ula or float(source.kernel.get("inverse_temperature", 1.0)) != 1.0:
            return ("sample-and-aggregate runs full-batch ULA at inverse temperature 1 per chunk; use a ULA kernel "
                    "without clipping")
        return None

    def plan(self, an: Analysed, spec) -> MethodPlan:
        """The settings, the charge and the predicted error (public inputs only)."""
        stat = an.statistic
        if stat.range is None:
            raise AssumptionError("range = None: sample-and-aggregate clamps each chunk's estimate to the public range "
                                  "of the released values; pass range=(a, b)")
        if (spec.thinning != 1 or spec.concentration is not None or spec.max_delta is not None
                or spec.num_chains not in (None, 1)):
            raise AssumptionError("thinning, concentration, max_delta and num_chains do not apply to "
                                  "sample-and-aggregate (one full-batch ULA chain per chunk)")
        src = an.source
        step = src.kernel.get("step_size")
        if step is None:
            L = an.constants.get("total_smoothness")
            if L is None:
                raise AssumptionError("step_size is not given and total_smoothness is not proven for this model; "
                                      "pass a step size (data independent)")
            step = 1.0 / float(L)
        m = int(an.potential.data_size)
        if spec.chunks is None:
            k, rule = choose_chunks(m, stat.num_coords, an.dim, spec.epsilon, spec.delta, spec.noise)
        else:
            k, rule = check_chunks(spec.chunks, m), "given"
        n = spec.num_steps or src.num_steps or DEFAULT_NUM_STEPS
        if spec.burn_in is not None and not 0 <= spec.burn_in < n:
            raise AssumptionError(f"burn_in = {spec.burn_in} must be in [0, {n})")
        route = aggregate_route(stat.num_coords, stat.range, k)
        noise = plan_noise(stat, route, spec.epsilon, spec.delta, spec.noise)
        kk = stat.num_coords
        if noise.mechanism == "gaussian":
            g = noise.gaussian
            cert = route.gaussian_certificate(spec.epsilon, g["delta"], g["rho"], g["sigma"], route.l2_sensitivity,
                                              kk, "sample-and-aggregate")
        else:
            cert = route.certificate(spec.epsilon, noise.event["noise_scale"], kk, "sample-and-aggregate")
        settings = {"sampler": "ULA", "step_size": float(step), "num_steps": int(n), "burn_in": spec.burn_in,
                    "chunks": k, "chunks_rule": rule, "partition": spec.partition, "noise": noise.mechanism}
        return MethodPlan(
            method="sample-aggregate", settings=settings,
            predicted_rmse=math.sqrt(noise.expected_squared_error[noise.mechanism] / kk), predicted_label="heuristic",
            predicted_basis="the added noise's exact standard deviation; the chunks' own error is not included",
            epsilon=spec.epsilon, delta=noise.charged_delta, curve=cert.curve, event=dict(noise.event),
            mechanism="sample-and-aggregate", source_label=cert.source,
            what=f"{stat.description} ({kk} value{'s' if kk > 1 else ''}, {noise.mechanism} noise)",
            detail={"route": route, "routes": [route], "noise": noise, "certificate": cert, "monte_carlo": None,
                    "statistic": stat, "level": spec.level, "chain_is_noise": False})

    def prepare(self, plan: MethodPlan, an: Analysed, rng_key) -> Any:
        """The chunk chains and the clamped average (non-private, never published): before the reservation."""
        s = plan.settings
        return aggregate_estimate(plan.detail["statistic"], dict(an.source.data), s["chunks"], estimator="ula",
                                  potential=an.potential, step_size=s["step_size"], num_steps=s["num_steps"],
                                  burn_in=s["burn_in"], partition_rule=s["partition"], rng_key=rng_key,
                                  rule=s["chunks_rule"])

    def run(self, plan: MethodPlan, an: Analysed, agg, rng_key, noise_epsilon: float) -> Drawn:
        """The secure noise on the clamped average, drawn after the reservation."""
        a, b = plan.detail["statistic"].range
        extra = {"sample_and_aggregate": aggregate_info(agg),
                 "statistic": {"description": f"the statistic on each of {agg.chunks} chunks' posteriors, clamped to "
                                              f"[{a:g}, {b:g}], averaged", "lipschitz": None,
                               "lipschitz_source": "no Lipschitz constant: the window is (b - a)/k per coordinate "
                                                   "(docs/release.md §7)"}}
        return draw_noise(plan, agg.value, noise_epsilon, extra,
                          committed={"chunks": agg.chunks, "chunk_size": agg.chunk_size})


register(AggregateMethod())
