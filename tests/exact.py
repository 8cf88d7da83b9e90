"""Independent reference values: exact privacy of Gaussian mechanisms and of ULA on the
linear–quadratic benchmark, written without using bayesdp's conversion code.

Benchmark: K(x) = mu |x|^2 / 2, V_D(x) = -<b_D, x> with |b_D| <= c, replace-one neighbours,
so |b_D - b_D'| <= 2c.  ULA x <- x - gamma (mu x - b_D) + sqrt(2 gamma / beta) z from a fixed x0
is a Gaussian chain: x_n ~ N(m_n(b_D), s_n^2 I) with
    m_n(b) = rho^n x0 + b (1 - rho^n)/mu,      rho = 1 - gamma mu,
    s_n^2  = (2 gamma / beta) (1 - rho^(2n)) / (1 - rho^2),
so the final draw is exactly mu_final-GDP with mu_final = 2c (1 - rho^n) / (mu s_n), attained at
b_D = c e, b_D' = -c e.  The path is an invertible data-independent map of n i.i.d. Gaussians with
mean gamma b_D and sd sqrt(2 gamma / beta): mu_path = 2c gamma sqrt(n) / sqrt(2 gamma / beta).
"""

from __future__ import annotations

import math

from scipy import optimize
from scipy.stats import norm


def gdp_delta(mu: float, eps: float) -> float:
    """Dong–Roth–Su Cor. 2.13 with plain scipy.stats (no log space)."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def gdp_epsilon(mu: float, delta: float) -> float:
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1.0  # zCDP upper bound on eps
    return optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-13)


def lq_final_mu(mu: float, c: float, gamma: float, n: int, beta: float = 1.0) -> float:
    rho = 1.0 - gamma * mu
    mean_diff = 2 * c * (1 - rho ** n) / mu
    var = (2 * gamma / beta) * (1 - rho ** (2 * n)) / (1 - rho ** 2)
    return mean_diff / math.sqrt(var)


def lq_path_mu(c: float, gamma: float, n: int, beta: float = 1.0) -> float:
    return 2 * c * gamma * math.sqrt(n) / math.sqrt(2 * gamma / beta)


def rdp_to_dp_grid(rdp, delta: float, method: str = "cks") -> float:
    """Brute-force minimum over a dense alpha grid (any alpha gives a valid bound)."""
    best = math.inf
    a = 1.0005
    while a < 1e5:
        tau = rdp(a)
        if method == "mironov":
            e = tau + math.log(1 / delta) / (a - 1)
        else:
            e = tau + math.log1p(-1 / a) + (math.log(1 / delta) - math.log(a)) / (a - 1)
        best = min(best, e)
        a *= 1.0005
    return max(best, 0.0)
