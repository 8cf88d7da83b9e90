"""Contraction of a gradient step and the synchronous-coupling distance of two chains.

* [`contraction_factor`][bayesdp.theorems.gradient_step.contraction_factor]: for f m-strongly convex and L-smooth,
  ``x -> x - gamma grad f(x)`` is ``max(|1 - gamma m|, |1 - gamma L|)``-Lipschitz, for every
  gamma > 0; tight on quadratics (LITERATURE.md §4; PEPit's tight guarantee).
  It contracts iff ``0 < gamma < 2/L``.
* 004's factor ``1 - gamma a``, ``a = mu - gamma L^2/2`` (from ``sqrt(1 - 2 gamma mu + gamma^2 L^2) <= 1 - gamma
  a``, 004 (112)-(116)), needs ``gamma < 2 mu / L^2`` and is never smaller than the exact factor above, so it is
  not used; its margin ``a`` is ``paper_margin_exact``
  (004's step condition, theorems.girsanov and theorems.tight).
* [`coupling_bound`][bayesdp.theorems.gradient_step.coupling_bound]: two chains ``X_{k+1} = Phi_D(X_k) + noise``
  driven by the same noise with ``|Phi_D(x) - Phi_D'(x)| <= gamma * drift_diff`` and ``Phi_D`` rho-Lipschitz stay
  within ``gamma * drift_diff * (1 - rho^k)/(1 - rho) <= gamma * drift_diff/(1 - rho)`` (LITERATURE §7.1).
"""

from __future__ import annotations

from ..errors import AssumptionError, nonnegative, positive, require
from ..exact import contraction_gap_exact, down, exact, one_minus_power, round_up, up

__all__ = ["contraction_factor", "contraction_gap", "coupling_bound"]


def contraction_factor(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """Exact Lipschitz constant ``max(|1 - gamma m|, |1 - gamma L|)`` of the gradient step.

    For f m-strongly convex and L-smooth, ``x -> x - gamma grad f(x)`` is rho-Lipschitz with this rho
    for every gamma > 0, tight on quadratics (LITERATURE.md §4); it contracts (rho < 1) iff
    ``0 < gamma < 2/L``.

    Args:
        step_size: gamma > 0.
        strong_convexity: m >= 0.
        smoothness: L > 0, L >= m.

    Returns:
        rho, computed exactly and rounded up.

    Raises:
        AssumptionError: gamma <= 0, m < 0, L <= 0 or L < m.

    Examples:
        >>> contraction_factor(step_size=0.1, strong_convexity=1.0, smoothness=2.0)   # max(0.9, 0.8)
        0.9
        >>> contraction_factor(1.5, 1.0, 2.0)                                          # |1 - 3| = 2: no contraction
        2.0
    """
    g = positive("step_size", step_size)
    m = nonnegative("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    require(L >= m, "smoothness", L, f"must be >= strong_convexity = {m:.6g}")
    return up(1 - contraction_gap_exact(g, m, L))   # exact max(|1 - gm|, |1 - gL|), rounded up


def contraction_gap(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """``1 - rho = min(gamma m, 2 - gamma L)`` (rho the exact factor of
    [`contraction_factor`][bayesdp.theorems.gradient_step.contraction_factor]).

    Computed in exact rational arithmetic and rounded DOWN: no cancellation when gamma m ~ 1e-15
    (``1.0 - rho`` in floats loses every digit there).  ``<= 0`` when the step does not contract.

    Args:
        step_size: gamma > 0.
        strong_convexity: m >= 0.
        smoothness: L > 0, L >= m.

    Returns:
        a lower bound of ``1 - rho``.

    Raises:
        AssumptionError: gamma <= 0, m < 0, L <= 0 or L < m.

    Examples:
        >>> contraction_gap(0.1, 1.0, 2.0), contraction_gap(1.5, 1.0, 2.0)   # min(0.1, 1.8); min(1.5, -1)
        (0.1, -1.0)
    """
    g = positive("step_size", step_size)
    m = nonnegative("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    require(L >= m, "smoothness", L, f"must be >= strong_convexity = {m:.6g}")
    return down(contraction_gap_exact(g, m, L))


def paper_margin_exact(step_size: float, strong_convexity: float, smoothness: float):
    """004's ``a = mu - gamma L^2/2`` as an exact rational (no cancellation near gamma = 2 mu/L^2)."""
    g, m, L = exact(step_size), exact(strong_convexity), exact(smoothness)
    return m - g * L * L / 2


def coupling_bound(step_size: float, drift_diff: float, rho: float | None = None, num_steps: int | None = None,
                   *, gap: float | None = None) -> float:
    """``sup_k |X_k^D - X_k^D'| <= gamma * drift_diff * (1 - rho^k) / (1 - rho)`` for rho < 1.

    Two chains ``X_{k+1} = Phi_D(X_k) + noise`` driven by the same noise, with
    ``|Phi_D(x) - Phi_D'(x)| <= gamma * drift_diff`` and ``Phi_D`` rho-Lipschitz (LITERATURE §7.1).
    ``num_steps=None`` gives the bound uniform in k: ``gamma * drift_diff / (1 - rho)``.  Pass
    ``gap = 1 - rho`` (e.g. [`contraction_gap`][bayesdp.theorems.gradient_step.contraction_gap]) rather than ``rho``
    when rho is close to 1: the float ``rho`` itself has lost the digits of ``1 - rho``.  The result is rounded up.

    Args:
        step_size: gamma > 0.
        drift_diff: the per-point drift difference, >= 0.
        rho: the contraction factor in [0, 1) (give this or ``gap``).
        num_steps: k >= 1, or ``None`` for the bound uniform in k.
        gap: ``1 - rho`` in (0, 1] (keyword only; preferred over ``rho``).

    Returns:
        the coupling distance bound, rounded up.

    Raises:
        AssumptionError: a constant out of range, rho >= 1 or gap <= 0, or the bound overflows.
        TypeError: neither ``rho`` nor ``gap`` given.

    Examples:
        >>> round(coupling_bound(0.1, 2.0, rho=0.9), 6)               # 0.1 * 2 / (1 - 0.9)
        2.0
        >>> round(coupling_bound(0.1, 2.0, rho=0.9, num_steps=1), 6)  # one step: gamma * drift_diff
        0.2
    """
    g = positive("step_size", step_size)
    d = nonnegative("drift_diff", drift_diff)
    if gap is None:
        if rho is None:
            raise TypeError("coupling_bound needs rho or gap")
        r = nonnegative("rho (contraction factor)", rho)
        require(r < 1.0, "rho (contraction factor)", r, "must be < 1: the gradient step does not contract",
                "use a step size below 2/L, or a strongly convex potential")
        gap = 1.0 - r  # exact for r >= 1/2 (Sterbenz); a relative error <= 2^-53 below
    require(gap > 0.0, "1 - rho (contraction gap)", gap, "must be > 0: the gradient step does not contract",
            "use a step size below 2/L, or a strongly convex potential")
    gap = min(float(gap), 1.0)
    frac = 1.0 if num_steps is None else one_minus_power(gap, num_steps)
    # exact product and quotient (no underflow to 0 for tiny gamma * drift_diff), then outward rounding
    # for the few-ulp error of one_minus_power
    out = round_up(up(exact(g) * exact(d) * exact(frac) / exact(gap))) if d > 0 else 0.0
    if not out < float("inf"):
        raise AssumptionError(f"coupling bound gamma * drift_diff / (1 - rho) = {g:.6g} * {d:.6g} / {gap:.6g} "
                              "overflows; the constants are outside the float range")
    return out
