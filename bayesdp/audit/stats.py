"""Lower bounds on privacy from samples of a score on two neighbouring datasets.

* Clopper–Pearson one-shot bound (Jagielski, Ullman, Oprea 2020; Nasr et al. 2021):
  for a test "guess D when score > t", with one-sided Clopper–Pearson upper bounds FPR+, FNR+,
  ``eps_LB = max(log((1 - delta - FNR+)/FPR+), log((1 - delta - FPR+)/FNR+), 0)``
  holds with confidence 1 - alpha (LITERATURE.md §6; (eps, delta)-DP implies
  FPR + e^eps FNR >= 1 - delta and FNR + e^eps FPR >= 1 - delta, Kairouz et al. 2015).
* Gaussian-DP lower bound (Nasr, Hayes, Steinke, et al. 2023):
  ``mu_LB = Phi^-1(1 - FPR+) - Phi^-1(FNR+)``: a mu-GDP mechanism has
  FNR >= Phi(Phi^-1(1 - FPR) - mu) for every test, so a test with (FPR, FNR) forces
  mu >= Phi^-1(1 - FPR) - Phi^-1(FNR); upper confidence bounds on both rates keep it a lower bound.
Thresholds are quantiles of a pilot split (the first 10 % of each side's runs), fixed before the
counts on the remaining runs; the confidence level is split over all thresholds and both rates
(Bonferroni), so the reported bounds hold simultaneously.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm

from ..curves import GDP
from ..errors import AssumptionError


__all__ = ["clopper_pearson_upper", "AuditBounds", "min_runs", "audit_scores", "PILOT_FRACTION"]

#: fraction of each side's runs used only to choose the threshold grid
PILOT_FRACTION = 0.1


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) upper confidence bound on a binomial proportion k/n.

    Args:
        k: observed count, 0 <= k <= n.
        n: trials, >= 1.
        alpha: one-sided error level in (0, 1).

    Returns:
        the upper bound (1 when k = n).

    Raises:
        AssumptionError: n < 1.

    Examples:
        >>> round(clopper_pearson_upper(0, 100, 0.05), 6)   # k = 0: 1 - alpha^(1/n)
        0.029513
    """
    if n <= 0:
        raise AssumptionError(f"runs = {n} must be >= 1")
    if k >= n:
        return 1.0
    return float(beta_dist.ppf(1.0 - alpha, k + 1, n - k))


@dataclass(frozen=True)
class AuditBounds:
    """Lower bounds of one audit, from a threshold test on the scores.

    Attributes:
        epsilon_lower_bound: largest epsilon refuted at ``confidence`` (Clopper-Pearson, Bonferroni over
            the thresholds).
        mu_lower_bound: largest GDP mu refuted, ``Phi^-1(1 - FPR) - Phi^-1(FNR)`` at the upper bounds.
        epsilon_from_mu: epsilon at delta of ``mu_lower_bound``-GDP.
        threshold: the threshold giving ``mu_lower_bound``.
        fpr_upper: its false-positive rate upper bound.
        fnr_upper: its false-negative rate upper bound.
        confidence: of the bounds.
        runs: runs per dataset.
        thresholds_scanned: size of the threshold grid.

    Examples:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> b = audit_scores(rng.normal(2.0, 1.0, 5_000), rng.normal(0.0, 1.0, 5_000), delta=1e-5)
        >>> b.runs, bool(0 < b.mu_lower_bound < 2.0)      # true mu = 2: a lower bound below it
        (5000, True)
    """
    epsilon_lower_bound: float
    mu_lower_bound: float
    epsilon_from_mu: float
    threshold: float
    fpr_upper: float
    fnr_upper: float
    confidence: float
    runs: int
    thresholds_scanned: int


def min_runs(confidence: float, thresholds: int) -> int:
    """Smallest number of runs per dataset for which a perfect test gives a non-trivial bound:
    with k = 0 errors the CP upper bound is 1 - (alpha')^(1/n); we need it < 1/2.

    Args:
        confidence: of the bounds, in (0, 1).
        thresholds: number of thresholds (Bonferroni).

    Returns:
        the number of runs.

    Examples:
        >>> min_runs(0.95, 64)                               # ceil(log2(2 * 64 / 0.05))
        12
    """
    alpha = (1.0 - confidence) / (2 * thresholds)
    return int(math.ceil(math.log(alpha) / math.log(0.5)))


def audit_scores(scores_d: np.ndarray, scores_d_prime: np.ndarray, delta: float, confidence: float = 0.95,
                 thresholds: int = 64) -> AuditBounds:
    """Lower bounds from scores of the mechanism's output on D (positives) and D' (negatives).

    The test guesses "D" when the score exceeds a threshold; a larger score must point towards D.

    Args:
        scores_d: the score of each run on D.
        scores_d_prime: the score of each run on D'.
        delta: of the epsilon lower bound, in [0, 1).
        confidence: in (0, 1).
        thresholds: size of the threshold grid (chosen on a pilot split of 10 % of the runs).

    Returns:
        [`AuditBounds`][bayesdp.audit.stats.AuditBounds].

    Raises:
        AssumptionError: a parameter out of range, non-finite or constant scores, or too few runs.

    Examples:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> b = audit_scores(rng.normal(1.0, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000), delta=1e-5)
        >>> 0.8 < b.mu_lower_bound < 1.0                     # true mu = 1: a lower bound just below it
        True
    """
    s1 = np.asarray(scores_d, dtype=float).ravel()
    s0 = np.asarray(scores_d_prime, dtype=float).ravel()
    if not (0.0 < confidence < 1.0):
        raise AssumptionError(f"confidence = {confidence} must be in (0, 1)")
    if not (0.0 <= delta < 1.0):
        raise AssumptionError(f"delta = {delta} must be in [0, 1)")
    if not (np.isfinite(s1).all() and np.isfinite(s0).all()):
        raise AssumptionError("the score has non-finite values; check the statistic and the runs")
    if np.ptp(np.concatenate([s1, s0])) == 0.0:
        raise AssumptionError("the score is constant over all runs: it cannot distinguish the datasets; "
                              "choose a statistic that depends on the output")
    # thresholds are chosen on a separate pilot split, so that the Bonferroni correction is over a grid
    # fixed before the counts it is applied to
    runs = min(s1.size, s0.size)
    p1, p0 = max(1, int(PILOT_FRACTION * s1.size)), max(1, int(PILOT_FRACTION * s0.size))
    pilot = np.concatenate([s1[:p1], s0[:p0]])
    s1, s0 = s1[p1:], s0[p0:]
    n1, n0 = s1.size, s0.size
    need = min_runs(confidence, thresholds)
    if min(n1, n0) < need:
        total = int(np.ceil(need / (1.0 - PILOT_FRACTION))) + 1
        raise AssumptionError(f"runs = {min(n1 + p1, n0 + p0)} is too few for confidence {confidence} over "
                              f"{thresholds} thresholds; use at least {total} runs per dataset")
    qs = np.unique(np.quantile(pilot, np.linspace(0.0, 1.0, thresholds + 2)[1:-1]))
    alpha = (1.0 - confidence) / (2 * len(qs))
    s1_sorted, s0_sorted = np.sort(s1), np.sort(s0)
    eps_lb, best = 0.0, None
    for t in qs:
        fp = n0 - int(np.searchsorted(s0_sorted, t, side="right"))   # D' runs with score > t
        fn = int(np.searchsorted(s1_sorted, t, side="right"))        # D runs with score <= t
        fpr = clopper_pearson_upper(fp, n0, alpha)
        fnr = clopper_pearson_upper(fn, n1, alpha)
        if fpr > 0 and 1 - delta - fnr > 0:
            eps_lb = max(eps_lb, math.log((1 - delta - fnr) / fpr))
        if fnr > 0 and 1 - delta - fpr > 0:
            eps_lb = max(eps_lb, math.log((1 - delta - fpr) / fnr))
        mu = max(0.0, float(norm.isf(fpr) - norm.ppf(fnr)))
        if best is None or mu > best[0]:
            best = (mu, t, fpr, fnr)
    mu_lb, t, fpr, fnr = best
    eps_mu = GDP(mu_lb).epsilon(delta) if delta > 0 else (math.inf if mu_lb > 0 else 0.0)
    return AuditBounds(epsilon_lower_bound=eps_lb, mu_lower_bound=mu_lb, epsilon_from_mu=eps_mu, threshold=float(t),
                       fpr_upper=fpr, fnr_upper=fnr, confidence=confidence, runs=runs,
                       thresholds_scanned=len(qs))
