"""Path release: the Monte Carlo estimate of a full-batch ULA chain whose whole path is private (DP-SGLD without
subsampling, i.e. noisy gradient descent with Langevin noise; docs/release.md §8).

Every step ``X_{k+1} = X_k - gamma grad U_D(X_k) + sqrt(2 gamma / beta) xi`` is, given the history, a Gaussian
mechanism whose mean moves by at most ``gamma * grad_diff`` between neighbouring datasets: it is
``grad_diff sqrt(gamma beta / 2)``-GDP, and the n steps compose adaptively to
``mu = grad_diff sqrt(beta gamma n / 2)`` (Dong-Roth-Su Cor. 3.3; LITERATURE.md §3.3; ``bayesdp.bound("ula-path")``),
``sqrt(c) mu`` for c independent chains.  Any statistic of the path (its average after a burn-in, quantiles, ...)
is a post-processing: no Lipschitz constant, no range and no added noise are needed.  The inverse temperature is
the largest whose certificate meets (epsilon, delta) for the chain's step size and number of steps; the chain's
own Gaussian steps are the privacy noise, so its keys come from the OS CSPRNG (a seed makes it reproducible and
the output says so: not private).

It is reserved in the ledger BEFORE the chain runs (the chain draws the noise) and charged the certificate's GDP
curve (a ``gdp`` event: PLD and Renyi composition apply).
"""

from __future__ import annotations

import math
from statistics import NormalDist     # the standard library's
from typing import Any, Mapping

from ..certificate import Certificate
from ..curves import GDP
from ..errors import AssumptionError, positive, positive_int, require
from ..mechanisms.registry import bound
from .statistics import ReleasedValue, _clip_interval, two_sided_normal_quantile, with_error_intervals

__all__ = ["path_certificate", "path_inverse_temperature", "gdp_mu", "path_num_steps", "curvature_proxy",
           "predicted_path_error", "noiseless_items", "chain_noise_sd", "chain_error_items", "start_transient"]

SOURCE = "GDP composition of the path (Dong-Roth-Su Cor. 3.3)"


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` (to a relative 1e-12) with ``GDP(mu).epsilon(delta) <= epsilon``.

    Args:
        epsilon: > 0.
        delta: in (0, 1).

    Returns:
        mu.

    Raises:
        AssumptionError: epsilon not > 0, delta not in (0, 1), or epsilon too small at delta.

    Examples:
        >>> mu = gdp_mu(1.0, 1e-5)
        >>> GDP(mu).epsilon(1e-5) <= 1.0 < GDP(mu * (1 + 1e-9)).epsilon(1e-5)
        True
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} must be in (0, 1) for a path release (the chain's Gaussian steps "
                              "are not pure epsilon-DP); pass e.g. delta=1e-6 or use method='coupling'")
    d = float(delta)
    lo, hi = 0.0, 1.0
    while GDP(hi).epsilon(d) <= eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if GDP(mid).epsilon(d) <= eps:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    if not lo > 0:
        raise AssumptionError(f"epsilon = {eps:.6g} is too small at delta = {d:.3g}")
    return lo


def path_certificate(grad_diff: float, step_size: float, num_steps: int, inverse_temperature: float,
                     num_chains: int = 1, mechanism: str = "path-average") -> Certificate:
    """The GDP certificate of ``num_chains`` independent full-batch ULA paths (``bayesdp.bound("ula-path")``'s GDP
    route per chain, chains composed: ``mu = sqrt(c) mu_chain``).

    Args:
        grad_diff: the proven bound on the change of the potential's gradient between neighbouring datasets.
        step_size: gamma.
        num_steps: n, steps per chain.
        inverse_temperature: beta.
        num_chains: c, independent chains.
        mechanism: the certificate's mechanism label.

    Returns:
        The GDP :class:`~bayesdp.certificate.Certificate`.

    Raises:
        AssumptionError: a bad parameter, or no GDP path certificate for it.

    Examples:
        >>> cert = path_certificate(2.0, step_size=0.01, num_steps=1000, inverse_temperature=1.0)
        >>> round(cert.curve.mu, 6)                          # 2 sqrt(1 * 0.01 * 1000 / 2) = sqrt(20)
        4.472136
        >>> round(path_certificate(2.0, 0.01, 1000, 1.0, num_chains=4).curve.mu, 6)      # sqrt(4) sqrt(20)
        8.944272
    """
    c = positive_int("num_chains", num_chains)
    rep = bound("ula-path", grad_diff=grad_diff, step_size=step_size, num_steps=num_steps,
                inverse_temperature=inverse_temperature, delta=1e-5)
    gdp = [ct for ct in rep.certificates if ct.valid and isinstance(ct.curve, GDP)]
    require(bool(gdp), "inverse_temperature", inverse_temperature, "has no GDP path certificate")
    mu_chain = float(gdp[0].curve.mu)
    mu = mu_chain if c == 1 else math.sqrt(c) * mu_chain * (1 + 1e-12)
    return Certificate(mechanism=mechanism, source=SOURCE + (f", {c} chains composed" if c > 1 else ""),
                       curve=GDP(mu),
                       assumptions={**gdp[0].assumptions, "num_chains": c, "x0": "common, data-independent",
                                    "released": "a statistic of the path (post-processing)"},
                       constants={"gdp_mu": mu, "gdp_mu_per_chain": mu_chain, "inverse_temperature":
                                  float(inverse_temperature)},
                       notes="the chain's own Gaussian steps are the privacy noise; no noise is added")


def path_inverse_temperature(epsilon: float, delta: float, grad_diff: float, step_size: float, num_steps: int,
                             num_chains: int = 1) -> tuple[float, Certificate]:
    """The largest inverse temperature (to a relative 1e-9) whose path certificate meets (epsilon, delta):
    ``beta = 2 mu^2 / (c grad_diff^2 gamma n)`` with ``mu = gdp_mu(epsilon, delta)``, re-verified through
    :func:`path_certificate`.

    Args:
        epsilon: > 0.
        delta: in (0, 1).
        grad_diff: the proven gradient difference between neighbouring datasets.
        step_size: gamma.
        num_steps: n, steps per chain.
        num_chains: c, independent chains.

    Returns:
        ``(beta, the path certificate at beta)``.

    Raises:
        AssumptionError: a bad parameter.

    Examples:
        >>> beta, cert = path_inverse_temperature(1.0, 1e-5, grad_diff=2.0, step_size=0.01, num_steps=1000)
        >>> cert.epsilon(1e-5) <= 1.0 and abs(cert.curve.mu - gdp_mu(1.0, 1e-5)) < 1e-6
        True
    """
    mu = gdp_mu(epsilon, delta)
    g = positive("grad_diff", grad_diff)
    s = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    c = positive_int("num_chains", num_chains)
    beta = 2.0 * mu * mu / (c * g * g * s * n) * (1.0 - 1e-9)
    for _ in range(60):
        cert = path_certificate(g, s, n, beta, c)
        if cert.epsilon(float(delta)) <= float(epsilon):
            return beta, cert
        beta *= 1.0 - 1e-9
    raise AssumptionError(f"no inverse temperature meets epsilon = {epsilon:g} at delta = {delta:g}")  # unreachable


def noiseless_items(statistic, value, level: float, half_width: float | None = None) -> tuple:
    """The released values of a release without added noise (path, last draw): each value clamped to the
    statistic's range (post-processing), with the Monte Carlo interval ``value +- half_width`` clipped to it when
    a half-width is known.

    Args:
        statistic: the released :class:`~bayesdp.publish.statistics.Statistic`.
        value: its values on the chain's draws.
        level: the level of the intervals.
        half_width: the interval's half-width, or None (no interval).

    Returns:
        a tuple of :class:`~bayesdp.publish.statistics.ReleasedValue`.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> st = coordinate_means([SiteSpec("w", 2)]).with_range((-1.0, 1.0))
        >>> [(it.value, it.raw_value, it.interval) for it in noiseless_items(st, [0.5, 3.0], 0.95, 1.0)]
        [(0.5, 0.5, (-0.5, 1.0)), (1.0, 3.0, (-1.0, 1.0))]

        ([2, 4] misses the range: the whole range is the interval, as in ``_clip_interval``.)
    """

    items = []
    for n, v in zip(statistic.names, value):
        v = float(v)
        shown = v if statistic.range is None else min(max(v, statistic.range[0]), statistic.range[1])
        iv = None if half_width is None else _clip_interval(v, half_width, statistic.range)
        items.append(ReleasedValue(name=n, value=shown, noise_scale=0.0, noise_variance=0.0, interval=iv,
                                   level=level, raw_value=v, total_interval=iv))
    return tuple(items)


#: the path release's default number of steps: this many relaxation times of the curvature proxy
PATH_RELAXATION_TIMES = 10.0
PATH_MIN_STEPS, PATH_MAX_STEPS = 50, 20_000


def curvature_proxy(constants: Mapping[str, Any], dim: int) -> float | None:
    """``lambda_p = m_K + (L - m_K) / (4 dim)``: the curvature every dataset has (``total_strong_convexity``
    m_K, the prior's for a GLM) plus a quarter of the largest curvature the records can add
    (``total_smoothness - total_strong_convexity``), spread evenly over the ``dim`` parameters.  A public proxy
    (domain constants only, never the data) for the curvature of a typical posterior; it sets the path release's
    number of steps and the ``auto`` choice (docs/release.md §9).  None when the constants are not proven.

    Args:
        constants: the analysis's constants (``total_smoothness``, ``total_strong_convexity``).
        dim: the number of parameters.

    Returns:
        lambda_p, or None.

    Examples:
        >>> curvature_proxy({"total_smoothness": 126.0, "total_strong_convexity": 1.0}, 5)    # 1 + 125 / 20
        7.25
    """
    L, mu = constants.get("total_smoothness"), constants.get("total_strong_convexity")
    if L is None or mu is None or not mu > 0:
        return None
    return float(mu) + max(0.0, float(L) - float(mu)) / (4.0 * positive_int("dim", dim))


def path_num_steps(constants: Mapping[str, Any], dim: int, step_size: float | None = None) -> int:
    """The default number of steps of a path release: ``ceil(10 / (step_size lambda_p))`` (ten relaxation times of
    the proxy curvature, :func:`curvature_proxy`), clipped to [50, 20000]; ``step_size`` defaults to
    ``1 / total_smoothness``.  With the privacy budget fixed, ``beta n`` is fixed: steps beyond convergence make
    the chain hotter without averaging it better (docs/release.md §8.2).

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        step_size: gamma (default ``1 / total_smoothness``).

    Returns:
        The number of steps (2000 when the constants are not proven).

    Examples:
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0}
        >>> path_num_steps(consts, 5)             # ceil(10 / (7.25 / 126)) = ceil(173.8)
        174
    """
    lam = curvature_proxy(constants, dim)
    L = constants.get("total_smoothness")
    if lam is None or L is None:
        return 2000
    g = float(step_size) if step_size is not None else 1.0 / float(L)
    n = math.ceil(PATH_RELAXATION_TIMES / (g * lam))
    return int(min(max(n, PATH_MIN_STEPS), PATH_MAX_STEPS))


def predicted_path_error(constants: Mapping[str, Any], dim: int, epsilon: float, delta: float, num_coords: int,
                         l2_lipschitz: float) -> float | None:
    """Predicted squared error of a path release of a statistic with ``num_coords`` values and Euclidean constant
    ``l2_lipschitz``: ``min(k, dim) l2^2 * 2 grad_diff^2 / (mu^2 lambda_p^2)`` — the variance of the average of an
    Ornstein-Uhlenbeck path of curvature ``lambda_p`` at the inverse temperature the budget allows (``beta T =
    2 mu^2 / grad_diff^2``, ``mu`` the GDP parameter of (epsilon, delta)).  A public prediction for the ``auto``
    rule, not a bound.

    Args:
        constants: the analysis's constants (``grad_diff`` and those of :func:`curvature_proxy`).
        dim: the number of parameters.
        epsilon: > 0.
        delta: in (0, 1).
        num_coords: k, the statistic's number of values.
        l2_lipschitz: the statistic's Euclidean constant.

    Returns:
        The predicted squared error, or None when the constants are not proven.

    Examples:
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0, "grad_diff": 2.0}
        >>> err = predicted_path_error(consts, 5, 1.0, 1e-5, num_coords=1, l2_lipschitz=1.0)
        >>> round(err / (2 * 2.0 ** 2 / (gdp_mu(1.0, 1e-5) ** 2 * 7.25 ** 2)), 9)
        1.0
    """
    lam = curvature_proxy(constants, dim)
    gd = constants.get("grad_diff")
    if lam is None or gd is None or not math.isfinite(l2_lipschitz):
        return None
    mu = gdp_mu(epsilon, delta)
    return min(int(num_coords), int(dim)) * l2_lipschitz ** 2 * 2.0 * float(gd) ** 2 / (mu * mu * lam * lam)



def chain_noise_sd(constants: Mapping[str, Any], dim: int, num_coords: int, l2_lipschitz: float,
                   inverse_temperature: float, step_size: float, kept_steps: int, num_chains: int = 1,
                   last_draw: bool = False) -> float | None:
    """The standard deviation, per released value, of the Gaussian noise that a chain's own randomness amounts to
    (``equivalent_noise_sd``; docs/release.md §11), from public inputs only, in the Ornstein-Uhlenbeck picture of
    §8.2 at the curvature proxy ``lambda_p`` (:func:`curvature_proxy`): ULA at step ``gamma`` on a quadratic of
    curvature ``lambda`` is the AR(1) chain ``X' = (1 - gamma lambda) X + sqrt(2 gamma / beta) xi``, whose
    stationary variance is ``s^2 = 1 / (beta lambda (1 - gamma lambda / 2))`` (one draw: the last-draw release)
    and whose average over ``N`` kept steps has variance ``2 / (beta lambda^2 gamma N)`` (the long-run variance
    ``(2 gamma / beta) / (gamma lambda)^2`` over N; at most ``s^2``), divided by ``c`` independent chains.  Both
    are exact for a quadratic potential with ``lambda_p`` its curvature (the average's up to the start's
    transient).  Per value: times ``l2 sqrt(min(k, dim) / k)``, the statistic's Euclidean constant spread over
    its ``k`` values.  A prediction, not a bound.

    Args:
        constants: the analysis's constants (those of :func:`curvature_proxy`).
        dim: the number of parameters.
        num_coords: k, the statistic's number of values.
        l2_lipschitz: the statistic's Euclidean constant.
        inverse_temperature: beta.
        step_size: gamma.
        kept_steps: N, the steps kept per chain (after the burn-in; ignored for ``last_draw``).
        num_chains: c.
        last_draw: one draw per chain (the last-draw release) instead of the path's average.

    Returns:
        The standard deviation, or None when the constants are not proven.

    Examples:
        >>> consts = {"total_smoothness": 4.0, "total_strong_convexity": 4.0}            # lambda_p = 4
        >>> round(chain_noise_sd(consts, 1, 1, 1.0, 0.5, 0.25, 100), 12)      # sqrt(2 / (0.5 * 16 * 0.25 * 100))
        0.1
        >>> round(chain_noise_sd(consts, 1, 1, 1.0, 0.5, 0.25, 1, last_draw=True) ** 2, 12)   # 1 / (0.5*4*0.5)
        1.0
    """
    lam = curvature_proxy(constants, dim)
    if lam is None or not math.isfinite(l2_lipschitz):
        return None
    beta, g = positive("inverse_temperature", inverse_temperature), positive("step_size", step_size)
    c = positive_int("num_chains", num_chains)
    k = positive_int("num_coords", num_coords)
    stationary = 1.0 / (beta * lam * (1.0 - g * lam / 2.0)) if g * lam < 2.0 else math.inf
    if last_draw:
        var = stationary
    else:
        var = min(stationary, 2.0 / (beta * lam * lam * g * positive_int("kept_steps", kept_steps)))
    per = float(l2_lipschitz) * math.sqrt(min(k, int(dim)) / k)
    return per * math.sqrt(var / c)


def start_transient(constants: Mapping[str, Any], dim: int, num_coords: int, l2_lipschitz: float, step_size: float,
                    num_steps: int, burn_in: int) -> float | None:
    """The root-mean-square bias, per released value, that the chain's start leaves in the average of its kept
    draws (docs/release.md §11.4), from public inputs only.  The chain starts at 0; in the Ornstein-Uhlenbeck
    picture at the curvature proxy ``lambda_p`` its mean after ``t`` steps is ``(1 - gamma lambda_p)^t`` of the
    way from the posterior mean back to the start, so the average of draws ``b + 1 .. n`` keeps the fraction
    ``f = (1/N) sum_{t=b+1}^{n} (1 - gamma lambda_p)^t`` (``N = n - b``; a geometric sum).  The start's distance to
    the posterior mean is data-dependent; its public stand-in is the spread of the data-independent part K, at
    most ``1 / m_K`` per direction (K is ``m_K``-strongly convex: Brascamp-Lieb), so the prediction is
    ``f / sqrt(m_K)`` per direction, times ``l2 sqrt(min(k, dim) / k)`` per value as in :func:`chain_noise_sd`.
    ``lambda_p`` underestimates the curvature (docs/calibration.md), so ``f`` errs high: a chain too short to
    forget its start is never predicted accurate.  A prediction, not a bound.

    Args:
        constants: the analysis's constants (``total_strong_convexity`` and those of :func:`curvature_proxy`).
        dim: the number of parameters.
        num_coords: k, the statistic's number of values.
        l2_lipschitz: the statistic's Euclidean constant.
        step_size: gamma.
        num_steps: n, steps per chain.
        burn_in: b, the draws dropped per chain.

    Returns:
        The root-mean-square bias per value, or None when ``m_K`` or the curvature proxy is not proven.

    Examples:
        >>> consts = {"total_smoothness": 4.0, "total_strong_convexity": 4.0}            # lambda_p = m_K = 4
        >>> round(start_transient(consts, 1, 1, 1.0, 0.125, 2, 0), 12)        # (0.5 + 0.25) / 2 / sqrt(4)
        0.1875
    """
    lam = curvature_proxy(constants, dim)
    m_k = constants.get("total_strong_convexity")
    if lam is None or m_k is None or not float(m_k) > 0 or not math.isfinite(l2_lipschitz):
        return None
    g = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    b = int(burn_in)
    require(0 <= b < n, "burn_in", b, f"must be in [0, {n})")
    r = 1.0 - g * lam
    if abs(r) >= 1.0:
        return math.inf
    # sum_{t=b+1}^{n} r^t = r^{b+1} (1 - r^{n-b}) / (1 - r)
    frac = (r ** (b + 1)) * (1.0 - r ** (n - b)) / ((1.0 - r) * (n - b)) if r != 0.0 else 0.0
    k = positive_int("num_coords", num_coords)
    per = float(l2_lipschitz) * math.sqrt(min(k, int(dim)) / k)
    return per * abs(frac) / math.sqrt(float(m_k))


def chain_error_items(items, sd: float | None, level: float, value_range, what: str, statistic,
                      transient: float | None = None) -> tuple:
    """The items of a release whose randomness is the chain (path, last draw) with ``equivalent_noise_sd = sd``
    and ``error_interval = value +- z sd`` (``z`` the two-sided normal quantile at ``level``; docs/release.md
    §11), for a mean; a quantile of the draws gets no error interval (its basis says why).

    Args:
        items: the released values.
        sd: the equivalent noise sd (:func:`chain_noise_sd`), or None.
        level: the level.
        value_range: the statistic's range, or None.
        what: the chain, in words (for the basis).
        statistic: the released statistic.
        transient: the start's predicted bias per value (:func:`start_transient`), added in quadrature to ``sd``
            for the interval of a mean (None: not included).

    Returns:
        The items.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> st = coordinate_means([SiteSpec("w", 1)])
        >>> it = chain_error_items(noiseless_items(st, [0.5], 0.95), 1.0, 0.95, None, "path", st)[0]
        >>> [round(x, 6) for x in it.error_interval], it.equivalent_noise_sd            # 0.5 -/+ 1.959964
        ([-1.459964, 2.459964], 1.0)
    """
    if statistic.kind != "mean":
        levels = statistic.quantile_levels
        basis = (f"none: a quantile of the {what}'s draws estimates the quantile of the chain's own (tempered) "
                 "distribution; no interval for the posterior's is predicted")
        if not levels or sd is None:
            return with_error_intervals(items, None, basis, value_range)
        # a sample quantile's sd is the mean's times sqrt(q (1 - q)) / phi(z_q) (Gaussian asymptotics, same draws)
        nd = NormalDist()
        out = []
        for j, it in enumerate(items):
            q = levels[j % len(levels)]
            out += with_error_intervals([it], None, basis, value_range,
                                        sd * math.sqrt(q * (1.0 - q)) / nd.pdf(nd.inv_cdf(q)))
        return tuple(out)
    if sd is None:
        return with_error_intervals(items, None, "none: the curvature proxy is not proven for this model",
                                    value_range)
    if transient is not None and transient > 0:
        return with_error_intervals(
            items, two_sided_normal_quantile(level) * math.hypot(sd, transient),
            f"the {what}'s randomness as Gaussian noise of sd equivalent_noise_sd and the start's predicted bias "
            f"{transient:.3g} in quadrature (heuristic: Ornstein-Uhlenbeck picture at the public curvature proxy, "
            "docs/release.md §11), value +- z sqrt(sd^2 + bias^2); the bias of ULA's step and of the temperature is "
            "not included", value_range, sd)
    return with_error_intervals(
        items, two_sided_normal_quantile(level) * sd,
        f"the {what}'s randomness as Gaussian noise of sd equivalent_noise_sd (heuristic: Ornstein-Uhlenbeck "
        "picture at the public curvature proxy, docs/release.md §11), value +- z sd; the chain's bias (ULA's step, "
        "the temperature, the start) is not included", value_range, sd)
