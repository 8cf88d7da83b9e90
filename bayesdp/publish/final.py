"""Last-draw release: publish a statistic of the final draw of one full-batch ULA chain run at the largest inverse
temperature whose last-draw certificate meets (epsilon, delta) (docs/release.md §10).

The chain is the one ``bayesdp.calibrate(model, mechanism="ula-final", ...)`` plans from public quantities only
(record count, record shapes, the domain): step size, number of steps, inverse temperature ``beta`` and the
certificate (the best ``ula-final`` route, e.g. Bok-Su-Altschuler's last-draw GDP, LITERATURE.md §2).  The chain
runs from a data-independent start with keys from the OS CSPRNG; its final draw is ``(epsilon, delta)``-DP by that
certificate, and any statistic of it is post-processing: no noise is added, no Lipschitz constant or range is
needed.  This is bayesdp's certified counterpart of "one posterior sample" (Wang, Fienberg and Smola 2015): a draw
of the tempered posterior ``exp(-beta U_D)``, up to ULA's bias.

Before the chain runs the budget is reserved, and the run's own certificate (computed by the analyzer with the
data's record count) is checked against the plan's: a run certified above the plan is refused.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, positive

__all__ = ["final_inverse_temperature_proxy", "predicted_final_error", "release_final_model"]


def final_inverse_temperature_proxy(constants: Mapping[str, Any], epsilon: float, delta: float) -> float | None:
    """A public proxy for the inverse temperature a last-draw release gets at (epsilon, delta):
    ``beta = mu^2 m_K / grad_diff^2``, ``mu = gdp_mu(epsilon, delta)``, the temperature at which the exact
    tempered posterior is ``mu``-GDP (Gopi-Lee-Liu: ``mu = grad_diff sqrt(beta / m_K)``, LITERATURE.md §1(e);
    ``m_K`` = ``total_strong_convexity``).  Used
    only to PREDICT the error for ``method="auto"``; the release itself takes the calibrated temperature.

    Args:
        constants: the analyzer's constants (``total_strong_convexity``, ``grad_diff``).
        epsilon: the target epsilon.
        delta: the target delta, in (0, 1).

    Returns:
        the proxy, or None when a constant is not proven.

    Examples:
        >>> from bayesdp.publish.path import gdp_mu
        >>> beta = final_inverse_temperature_proxy({"total_strong_convexity": 4.0, "grad_diff": 2.0}, 1.0, 1e-5)
        >>> round(beta / gdp_mu(1.0, 1e-5) ** 2, 12)                # m_K / grad_diff^2 = 4 / 4
        1.0
    """
    from .path import gdp_mu

    mk, g = constants.get("total_strong_convexity"), constants.get("grad_diff")
    if mk is None or g is None or not float(mk) > 0 or not float(g) > 0:
        return None
    mu = gdp_mu(epsilon, delta)
    return mu * mu * float(mk) / (float(g) ** 2)


def predicted_final_error(constants: Mapping[str, Any], dim: int, epsilon: float, delta: float, num_coords: int,
                          l2_lipschitz: float) -> float | None:
    """Predicted squared error of a last-draw release of a statistic with ``num_coords`` values and Euclidean
    constant ``l2_lipschitz``: ``min(k, dim) l2^2 / (beta lambda_p)``, the variance of one draw of a Gaussian of
    curvature ``lambda_p`` (:func:`~bayesdp.publish.path.curvature_proxy`) at the proxy temperature
    (:func:`final_inverse_temperature_proxy`).  A public prediction for the ``auto`` rule, not a bound.

    Against :func:`~bayesdp.publish.path.predicted_path_error` (``2 k l2^2 grad_diff^2 / (mu^2 lambda_p^2)``) the
    ratio is ``lambda_p / (2 m_K)``: the last draw is predicted to win when the records add less curvature than the
    prior has (docs/release.md §10).

    Args:
        constants: the analyzer's constants.
        dim: the number of parameters.
        epsilon: the target epsilon.
        delta: the target delta, in (0, 1).
        num_coords: the number of released values k.
        l2_lipschitz: the statistic's Euclidean Lipschitz constant.

    Returns:
        the prediction, or None when a constant is not proven.

    Examples:
        >>> from bayesdp.publish.path import predicted_path_error
        >>> c = {"total_strong_convexity": 4.0, "total_smoothness": 146.25, "grad_diff": 2.0}
        >>> f = predicted_final_error(c, 30, 1.0, 1e-5, 30, 1.0)
        >>> p = predicted_path_error(c, 30, 1.0, 1e-5, 30, 1.0)
        >>> round(f / p, 6) == round((4.0 + (146.25 - 4.0) / 120) / (2 * 4.0), 6)     # lambda_p / (2 m_K)
        True
    """
    from .path import curvature_proxy

    beta = final_inverse_temperature_proxy(constants, epsilon, delta)
    lam = curvature_proxy(constants, dim)
    if beta is None or lam is None or not math.isfinite(l2_lipschitz):
        return None
    return min(int(num_coords), int(dim)) * float(l2_lipschitz) ** 2 / (beta * lam)


def release_final_model(model: Callable, data: Mapping[str, Any], *, domain, statistic: Any = "mean",
                        epsilon: float, delta: float, ledger: Any, model_kwargs: Mapping[str, Any] | None = None,
                        value_range=None, level: float = 0.95, seed: int | None = None, max_steps: int = 10_000,
                        budget_epsilon=None, budget_delta=None, dataset: str | None = None,
                        chosen_by: str = "user", model_name: str | None = None, analysis=None):
    """Last-draw release of ``statistic`` (``"mean"``: every coordinate; a
    :class:`~bayesdp.publish.statistics.Statistic`; or a builder ``(sampler, analysis) -> Statistic``): plan the
    chain with :func:`bayesdp.calibrate` (``mechanism="ula-final"``, public quantities only), reserve the budget,
    run the chain (keys from the OS CSPRNG unless ``seed``), release the statistic of its final draw.  Every refusal
    happens before the chain runs.

    Args:
        model: the NumPyro model.
        data: the model's data arguments by name.
        domain: the public domain of one record (a :class:`~bayesdp.analysis.Domain` or its string form).
        statistic: what is released.
        epsilon: the charge.
        delta: the charge's delta, in (0, 1) (a last draw is not pure epsilon-DP).
        ledger: a ledger, an accountant or a ledger path.
        model_kwargs: the model's hyperparameters.
        value_range: a public range the released values are clamped to (post-processing).
        level: kept for the interface of the other methods (a single draw has no Monte Carlo interval).
        seed: a seed for the chain: reproducible, hence NOT private (the output says so).
        max_steps: the largest number of steps the plan may use.
        budget_epsilon: budget of a new ledger file.
        budget_delta: delta budget of a new ledger file.
        dataset: the dataset's name, recorded in a new ledger file.
        chosen_by: why this method (recorded).
        model_name: the model's name, for messages.
        analysis: a precomputed analysis of ``model`` on ``data``.

    Returns:
        a :class:`~bayesdp.publish.release.ReleaseResult` (``extra["final"]`` holds the chain's plan).

    Raises:
        AssumptionError: delta not in (0, 1), no plan meets (epsilon, delta), or the run's certificate exceeds
            the plan's.
        BudgetError: the ledger cannot pay (epsilon, delta).

    Examples:
        >>> import numpy as np, bayesdp
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(200) < 0.5).astype(float)
        >>> acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
        >>> res = release_final_model(logistic, {"X": X, "y": y}, domain=["X.norm=1", "y.values=0,1"],
        ...                           epsilon=1.0, delta=1e-6, ledger=acct, max_steps=2000)
        >>> res.values.shape, res.certificate.epsilon(1e-6) <= 1.0, res.extra["method"]
        ((2,), True, 'final')
    """
    from decimal import Decimal

    from ..analysis import Domain, analyze
    from ..analysis.records import validate_records
    from ..calibration import calibrate
    from ..certificate import Certificate
    from ..curves import GDP
    from ..samplers import ModelPotential, Sampler
    from .aggregate import _SitesOnly
    from ..budget.ledger import Ledger, noise_delta, noise_epsilon, to_decimal
    from .pipeline import check_level, resolve_statistic, unconstrained_draws
    from .release import ReleaseResult
    from .path import noiseless_items

    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} with method = 'final': a chain's last draw is not pure epsilon-DP; "
                              "pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'")
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    level = check_level(level)
    data, _ = validate_records(data, model, model_kwargs)
    dom = Domain.parse(list(domain)) if isinstance(domain, (list, tuple)) else domain
    if analysis is None:
        analysis = analyze(model, data=data, domain=dom, model_kwargs=model_kwargs, model_name=model_name)
    pot = ModelPotential(model, data, model_kwargs)
    stat = resolve_statistic(statistic, _SitesOnly(pot), analysis, value_range)
    stat.check(pot.dim)
    d_charge = to_decimal(delta, "delta")
    # the plan: public quantities only (record count and shapes, the domain), never the data's values
    plan = calibrate(model, domain=dom, epsilon=noise_epsilon(eps), delta=noise_delta(delta), mechanism="ula-final",
                     data=data, max_steps=max_steps, model_kwargs=model_kwargs)
    if plan.gdp_mu is None:
        raise AssumptionError(f"the last-draw plan's certificate ({plan.source}) is not a GDP curve; a last-draw "
                              "release needs one (full-batch ULA on a strongly convex, smooth potential): use "
                              "method 'path' or 'coupling'")
    mu = float(plan.gdp_mu)
    curve, event = GDP(mu), {"type": "gdp", "mu": mu}
    cert = Certificate(mechanism="ula-final", source=plan.source, curve=curve,
                       assumptions={"plan": "bayesdp.calibrate(mechanism='ula-final')", "x0": "zeros",
                                    "released": "a statistic of the final draw (post-processing)"},
                       constants={"gdp_mu": mu, "inverse_temperature": plan.inverse_temperature,
                                  "step_size": plan.step_size, "num_steps": plan.num_steps},
                       notes="the chain's own Gaussian steps are the privacy noise; no noise is added")
    smp = Sampler(model, data, step_size=plan.step_size, num_steps=plan.num_steps,
                  inverse_temperature=plan.inverse_temperature, num_chains=1, release="final", init="zeros",
                  domain=dom, delta=float(noise_delta(delta)), model_kwargs=model_kwargs)
    run_eps = smp.certificate.get("epsilon")
    if run_eps is None or run_eps > plan.epsilon * (1 + 1e-9) or run_eps > eps:
        raise AssumptionError(f"the run's certificate (epsilon = {run_eps}) exceeds the plan's ({plan.epsilon:.6g}) "
                              "or the charge; the domain or the model differ from the plan's")
    led = ledger if hasattr(ledger, "reserve") else Ledger.open(ledger, budget=budget_epsilon,
                                                                budget_delta=budget_delta, dataset=dataset)
    led.check(eps, d_charge, curve=curve, event=event)
    k = stat.num_coords
    what = f"{stat.description}, evaluated at the last draw of a private chain ({k} value{'s' if k > 1 else ''})"
    with led.reserve(eps, d_charge, "ula-final", plan.source, curve=curve, what=what, event=event) as res:
        res.mark_drawn()                      # the chain's Gaussian steps are the noise
        smp.run(seed)
        draw = unconstrained_draws(smp)[:, -1, :].astype(np.float64)      # (1, dim): the final draw
        value = stat.evaluate(draw)
        items = noiseless_items(stat, value, level)
        published = np.array([it.value for it in items])
        res.commit({"names": list(stat.names), "values": [float(v) for v in published],
                    "noise_mechanism": "final draw", "inverse_temperature": plan.inverse_temperature,
                    "statistic": stat.description})
    summary = res.summary or led.summary()
    info = {"inverse_temperature": plan.inverse_temperature, "step_size": plan.step_size,
            "num_steps": plan.num_steps, "gdp_mu": plan.gdp_mu, "plan_epsilon": plan.epsilon,
            "run_epsilon": run_eps, "chain_keys": smp.key_source, "distance_bound": plan.distance_bound,
            "note": ("the chain's final draw is private (its certificate: " + plan.source + "); the released "
                     "numbers are a statistic of it (post-processing); no noise is added")}
    return ReleaseResult(values=published, names=stat.names, noise_scale=0.0, noise_variance=0.0,
                         sensitivity=float(analysis.constants.to_dict().get("grad_diff") or math.nan),
                         proven_sensitivity=float(analysis.constants.to_dict().get("grad_diff") or math.nan),
                         grid=0.0, epsilon=eps, delta=float(Decimal(d_charge)), source=plan.source, certificate=cert,
                         items=tuple(items), remaining_budget=summary["remaining_budget"],
                         ledger=None if getattr(led, "path", None) is None else str(led.path),
                         routes=({"source": plan.source, "gdp_mu": plan.gdp_mu, "chosen": True},),
                         ledger_head=res.head, dp_event=event,
                         noise={"mechanism": "final draw", "chosen_by": chosen_by, "expected_squared_error": {},
                                "gaussian_unavailable": None},
                         raw_values=np.asarray(value),
                         postprocessing={"clamp": None if stat.range is None else list(stat.range),
                                         "note": "a statistic of the chain's private final draw (post-processing)"},
                         monte_carlo=None, extra={"method": "final", "final": info})
