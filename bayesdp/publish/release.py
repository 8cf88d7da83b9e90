"""Release draws that are already in hand (shape (num_draws, dim), UNCONSTRAINED space) with the coupling release's
noise: the entry point for a caller that ran its own unpublished chain and knows its coupling bound.  It goes
through the engine's one tail (:func:`bayesdp.publish.engine.charge`); the public function is
:func:`bayesdp.release`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from .engine import charge, open_accountant
from .methods.base import MethodPlan
from .methods.coupling import coupling_plan, draw_noise
from .result import ReleaseResult
from .spec import ReleaseSpec
from .statistics import Statistic

__all__ = ["release_statistic"]


def release_statistic(draws: np.ndarray, statistic: Statistic, epsilon: float, ledger: Any, *, coupling=None,
                      budget: float | None = None, spec: ReleaseSpec | None = None,
                      chain: Mapping[str, Any] | None = None) -> ReleaseResult:
    """Release the noisy Monte Carlo average of ``statistic`` over ``draws`` (all chains and kept draws: the draws
    the coupling bound covers).  Every check runs before the reservation; over budget, nothing is drawn.

    Args:
        draws: the unconstrained draws ``(num_draws, dim)``.
        statistic: the statistic to release.
        epsilon: > 0.
        ledger: an accountant, a ledger or a ledger path (:func:`~bayesdp.publish.engine.open_accountant`).
        coupling: the coupling bound (004 Proposition 3.7), or None (then ``spec.concentration``).
        budget: the budget of a ledger created at ``ledger``.
        spec: the other options (``delta``, ``noise``, ``level``, ``max_delta``, ``concentration``; its statistic
            and epsilon are ignored).
        chain: the draws' chain design (``inverse_temperature``, ``num_steps``, ``burn_in``, ``thinning``,
            ``num_chains``), for the data-independent Monte Carlo interval (docs/release.md §4.2).

    Returns:
        The :class:`~bayesdp.publish.result.ReleaseResult`.

    Raises:
        AssumptionError: a bad parameter, or no route.
        BudgetError: over budget (nothing drawn, ledger unchanged).

    Examples:
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> res = release_statistic(np.full((50, 1), 0.5), stat, 0.5, "ledger.json", coupling=coupling,
        ...                         budget=1.0)
        >>> round(res.proven_sensitivity, 6), round(res.noise_scale, 6), res.remaining_budget     # b = 1 / 0.5
        (1.0, 2.0, {'epsilon': 0.5, 'delta': 0.0})
    """
    spec = replace(spec or ReleaseSpec(), statistic=statistic, epsilon=epsilon).check()
    plan: MethodPlan = coupling_plan(statistic, coupling, spec, chain, {"chain": "given (draws)"})
    value = statistic.evaluate(np.asarray(draws, dtype=np.float64))
    acct = open_accountant(ledger, budget)
    acct.check(plan.epsilon, plan.delta, curve=plan.curve, event=dict(plan.event))
    return charge(acct, plan, lambda noise_eps: draw_noise(plan, value, noise_eps), "user")
