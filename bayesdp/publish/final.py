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
from typing import Any, Mapping

from .path import curvature_proxy, gdp_mu

__all__ = ["final_inverse_temperature_proxy", "predicted_final_error"]


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

    Against the long-run variance of a path release's average with half the chain burnt in, ``2 k l2^2 grad_diff^2 /
    (mu^2 lambda_p^2)``, the ratio is ``lambda_p / (2 m_K)`` (docs/release.md §10.1).

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
        >>> c = {"total_strong_convexity": 4.0, "total_smoothness": 146.25, "grad_diff": 2.0}
        >>> f = predicted_final_error(c, 30, 1.0, 1e-5, 30, 1.0)
        >>> lam, mu = 4.0 + (146.25 - 4.0) / 120, gdp_mu(1.0, 1e-5)               # lambda_p; beta = mu^2 m_K / 4
        >>> round(f / (30 / (mu * mu * 4.0 / 4.0 * lam)), 9)
        1.0
    """
    beta = final_inverse_temperature_proxy(constants, epsilon, delta)
    lam = curvature_proxy(constants, dim)
    if beta is None or lam is None or not math.isfinite(l2_lipschitz):
        return None
    return min(int(num_coords), int(dim)) * float(l2_lipschitz) ** 2 / (beta * lam)

