"""Contraction of a gradient step and the synchronous-coupling distance of two chains.

* :func:`contraction_factor`: for f m-strongly convex and L-smooth,
  ``x -> x - gamma grad f(x)`` is ``max(|1 - gamma m|, |1 - gamma L|)``-Lipschitz, for every
  gamma > 0; tight on quadratics (LITERATURE.md §4; PEPit's tight guarantee).
  It contracts iff ``0 < gamma < 2/L``.
* :func:`paper_contraction_factor`: 004's factor ``1 - gamma a``, ``a = mu - gamma L^2/2``
  (from ``sqrt(1 - 2 gamma mu + gamma^2 L^2) <= 1 - gamma a``, 004 (112)-(116)); needs
  ``gamma < 2 mu / L^2``.
* :func:`coupling_bound`: two chains ``X_{k+1} = Phi_D(X_k) + noise`` driven by the same noise
  with ``|Phi_D(x) - Phi_D'(x)| <= gamma * drift_diff`` and ``Phi_D`` rho-Lipschitz stay within
  ``gamma * drift_diff * (1 - rho^k)/(1 - rho) <= gamma * drift_diff/(1 - rho)`` (LITERATURE §7.1).
"""

from __future__ import annotations

import math

from ..errors import nonnegative, positive, require


def contraction_factor(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """Exact Lipschitz constant ``max(|1 - gamma m|, |1 - gamma L|)`` of the gradient step."""
    g = positive("step_size", step_size)
    m = nonnegative("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    require(L >= m, "smoothness", L, f"must be >= strong_convexity = {m:.6g}")
    return max(abs(1.0 - g * m), abs(1.0 - g * L))


def paper_contraction_factor(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """004's ``1 - gamma (mu - gamma L^2/2)``; requires ``gamma < 2 mu / L^2``."""
    g = positive("step_size", step_size)
    m = positive("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    require(g < 2 * m / (L * L), "step_size", g, f"must be < 2*mu/L^2 = {2 * m / (L * L):.6g} "
            "for 004's contraction factor")
    return 1.0 - g * (m - g * L * L / 2.0)


def coupling_bound(step_size: float, drift_diff: float, rho: float, num_steps: int | None = None) -> float:
    """``sup_k |X_k^D - X_k^D'| <= gamma * drift_diff * (1 - rho^k) / (1 - rho)`` for rho < 1.

    ``num_steps=None`` gives the bound uniform in k: ``gamma * drift_diff / (1 - rho)``.
    """
    g = positive("step_size", step_size)
    d = nonnegative("drift_diff", drift_diff)
    r = nonnegative("rho (contraction factor)", rho)
    require(r < 1.0, "rho (contraction factor)", r, "must be < 1: the gradient step does not contract",
            "use a step size below 2/L, or a strongly convex potential")
    if num_steps is None:
        return g * d / (1.0 - r)
    return g * d * (-math.expm1(num_steps * math.log(r)) if r > 0 else 1.0) / (1.0 - r)
