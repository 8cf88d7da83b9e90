"""Empirical privacy audits: lower bounds measured on the code that runs, checked against the
certificate.  If a lower bound ever exceeds a certificate there is a bug (in the math or the sampler).

>>> from bayesdp.audit import audit
>>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=20_000)
>>> rep.passed
True
"""

from __future__ import annotations

from ..errors import positive_int, probability_open
from ..mechanisms import bound
from .lq import MECHANISMS, LQConfig, bound_options, exact_mu, run_scores
from .stats import audit_scores
from .lq import check_runs_memory, exact_release_epsilon, release_sensitivity
from .models import audit_model, worst_case_neighbours
from .report import AuditReport, check_neighbours

__all__ = ["AuditReport", "audit", "audit_model", "audit_scores", "check_neighbours", "worst_case_neighbours",
           "MECHANISMS"]


def audit(mechanism: str, *, runs: int, strong_convexity: float, grad_bound: float, step_size: float | None = None,
          num_steps: int | None = None, inverse_temperature: float = 1.0, batch_size: int | None = None,
          data_size: int | None = None, dim: int = 1, delta: float = 1e-5, confidence: float = 0.95,
          seed: int = 0, epsilon: float | None = None, burn_in: int = 0) -> AuditReport:
    """Audit `mechanism` on the built-in linear–quadratic benchmark with worst-case neighbours.

    ``release`` audits the Laplace-noised Monte Carlo average (secure noise, pure ``epsilon``-DP by
    the coupling sensitivity); its certificate is ``epsilon`` itself.

    Args:
        mechanism: one of ``posterior``, ``ula-final``, ``ula-path``, ``sgld-final``, ``sgld-path``,
            ``release``.
        runs: independent runs per dataset (the confidence needs a minimum, see
            [`min_runs`][bayesdp.audit.stats.min_runs]).
        strong_convexity: mu of the benchmark potential ``mu |x|^2 / 2 - <d, x>``.
        grad_bound: c, the bound on ``|d|`` (the worst-case records are +-c).
        step_size: gamma (samplers).
        num_steps: chain length (samplers).
        inverse_temperature: beta.
        batch_size: SGLD batch size.
        data_size: SGLD number of records.
        dim: dimension of x.
        delta: the delta of the comparison.
        confidence: of the Clopper-Pearson lower bounds.
        seed: of the benchmark chains (audits publish nothing).
        epsilon: ``release``: the epsilon of the Laplace noise.
        burn_in: ``release``: steps dropped before averaging.

    Returns:
        an [`AuditReport`][bayesdp.audit.AuditReport].

    Raises:
        AssumptionError: unknown mechanism, a missing or invalid constant, too few runs, or no
            certificate for the configuration (refused before any sampling).

    Examples:
        >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
        >>> rep.passed, rep.exact_mu                       # exact: 2 c sqrt(beta / mu) = 1
        (True, 1.0)
    """
    delta = probability_open("delta", delta, "pass a delta strictly between 0 and 1")
    cfg = LQConfig(strong_convexity, grad_bound, step_size, num_steps, inverse_temperature, batch_size, data_size,
                   dim, epsilon, burn_in).validated(mechanism)
    params = {k: v for k, v in cfg.__dict__.items() if v is not None}
    if mechanism == "release":

        check_runs_memory(mechanism, cfg, positive_int("runs", runs))

        sens = release_sensitivity(cfg)
        s1, s0 = run_scores(mechanism, cfg, runs, seed)
        bounds = audit_scores(s1, s0, delta, confidence)
        params["sensitivity"] = sens.distance
        params["exact_epsilon"] = float(exact_release_epsilon(cfg))
        return AuditReport(mechanism=mechanism, bounds=bounds, delta=delta, certified_epsilon=float(epsilon),
                           certified_mu=None, source=f"004 Proposition 3.7 + {sens.source}", exact_mu=None,
                           parameters=params)

    check_runs_memory(mechanism, cfg, positive_int("runs", runs))   # before anything runs
    opts = bound_options(mechanism, cfg)
    report = bound(mechanism, delta=delta, **opts)  # refuses before any sampling if not certifiable
    best = report.best
    s1, s0 = run_scores(mechanism, cfg, runs, seed)
    bounds = audit_scores(s1, s0, delta, confidence)
    return AuditReport(mechanism=mechanism, bounds=bounds, delta=delta, certified_epsilon=report.value(),
                       certified_mu=best.gdp_mu, source=best.source, exact_mu=exact_mu(mechanism, cfg),
                       parameters=params)
