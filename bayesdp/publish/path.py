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

import functools
import math
import struct
from fractions import Fraction
from statistics import NormalDist     # the standard library's

import numpy as np
from typing import Any, Mapping, Sequence

from ..certificate import Certificate
from ..curves import GDP, gdp_log_delta
from ..errors import AssumptionError, positive, positive_int, require
from ..exact import down as _down
from ..mechanisms.registry import bound
from .statistics import ReleasedValue, _clip_interval, two_sided_normal_quantile, with_error_intervals

__all__ = ["mser_burn_in", "path_certificate", "path_inverse_temperature", "gdp_mu", "path_num_steps", "curvature_proxy",
           "noiseless_items", "chain_noise_sd", "chain_error_items", "start_transient",
           "heuristic_curvature", "ar1_average_variance", "transient_fraction", "skewness_bias_scale",
           "path_error_terms", "tune_path", "last_draw_error_terms", "start_bias_from_values",
           "path_terms_from_values", "along_mode_curvature"]

SOURCE = "GDP composition of the path (Dong-Roth-Su Cor. 3.3)"


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` with ``GDP(mu).epsilon(delta) <= epsilon``, to the float: ``mu`` with
    ``GDP(mu).epsilon(delta) <= epsilon < GDP(m).epsilon(delta)`` for ``m`` the next float above ``mu``, found by
    bisection on the floats from ``2^-200`` (which must meet the budget) to inf, started at the float formula's
    crossing (13-30 certified evaluations of ``epsilon`` instead of 63; memoised).

    Args:
        epsilon: > 0.
        delta: in (0, 1).

    Returns:
        mu.

    Raises:
        AssumptionError: epsilon not > 0, delta not in (0, 1), or epsilon too small at delta (not met at
            ``mu = 2^-200``).

    Examples:
        >>> import math
        >>> mu = gdp_mu(1.0, 1e-5)
        >>> GDP(mu).epsilon(1e-5) <= 1.0 < GDP(math.nextafter(mu, math.inf)).epsilon(1e-5)
        True
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} must be in (0, 1) for a path release (the chain's Gaussian steps "
                              "are not pure epsilon-DP); pass e.g. delta=1e-6 or use method='coupling'")
    return _gdp_mu(eps, float(delta))


def _bits(x: float) -> int:
    """The bit pattern of a float >= 0 (positive floats are ordered as their bit patterns)."""
    return int.from_bytes(struct.pack("<d", x), "little")


def _float(b: int) -> float:
    return struct.unpack("<d", b.to_bytes(8, "little"))[0]


@functools.lru_cache(maxsize=1024)
def _gdp_mu(eps: float, d: float) -> float:
    """:func:`gdp_mu` at checked inputs (a pure function of two floats: memoised, as releases at one budget repeat).

    The answer is a float ``mu`` with ``meets(mu)`` and not ``meets(next float)``, where ``meets`` is the certified
    ``GDP(mu).epsilon(d) <= eps`` (a float root of delta(eps), then checked in 60 digits: about 1 ms).  Bisecting
    on ``meets`` from ``2^-200`` to inf takes 63 steps.  So the float formula's crossing is found first (63 steps
    of ``gdp_log_delta``, microseconds each); it lies within about 1e-13 relative of ``meets``'s, and a bracket of
    ``meets`` around it (2^10 ulps each side, widened 16 times while it does not hold) is bisected: 13-20 certified
    steps for epsilon >= 0.01, up to about 30 below (the float formula loses digits as mu shrinks).  Whatever the
    guess, the answer keeps the invariant.
    """
    def meets(mu: float) -> bool:
        return GDP(mu).epsilon(d) <= eps

    floor = 2.0 ** -200
    if not meets(floor):
        raise AssumptionError(f"epsilon = {eps:.6g} is too small at delta = {d:.3g}")
    bottom, top = _bits(floor), _bits(math.inf)      # inf is taken as not meeting the budget
    log_d = math.log(d)
    lo, hi = bottom, top
    while hi - lo > 1:                               # the float formula's crossing (a guess)
        mid = (lo + hi) // 2
        if gdp_log_delta(_float(mid), eps) <= log_d:
            lo = mid
        else:
            hi = mid
    guess, width = lo, 1 << 10
    lo = max(bottom, guess - width)
    while not meets(_float(lo)):                     # meets(floor) holds: this ends
        width <<= 4
        lo = max(bottom, guess - width)
    width = 1 << 10
    hi = min(top, guess + width)
    while hi < top and meets(_float(hi)):
        lo = hi
        width <<= 4
        hi = min(top, guess + width)
    while hi - lo > 1:                               # meets(lo), not meets(hi)
        mid = (lo + hi) // 2
        if meets(_float(mid)):
            lo = mid
        else:
            hi = mid
    return _float(lo)


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
    if c == 1:
        mu = mu_chain
    elif mu_chain >= 1e-290:
        mu = math.sqrt(c) * mu_chain * (1 + 1e-12)
    else:   # a subnormal product loses the relative 1e-12 (sqrt(536112) * 3.66e-318 was rounded below): scaled by 2^600
        mu = math.nextafter(math.ldexp(math.sqrt(c) * math.ldexp(mu_chain, 600) * (1 + 1e-12), -600), math.inf)
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
    # exact quotient rounded down (the float one divided by zero, or lost its digits, when c g^2 gamma n under- or
    # overflowed: a ZeroDivisionError, or no beta found at grad_diff 1e152 and step 5e-273); the largest float caps it
    exact = Fraction(2) * Fraction(mu) ** 2 / (c * Fraction(g) ** 2 * Fraction(s) * n) * (1 - Fraction(1, 10 ** 9))
    beta = _down(exact)
    if not beta > 0:
        raise AssumptionError(f"the inverse temperature 2 mu^2 / (c grad_diff^2 gamma n) = {float(exact):.3g} is below "
                              f"the smallest float at epsilon = {epsilon:g}; raise epsilon or lower grad_diff")
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


def start_bias_from_values(values, fraction: float, spread: float, noise_sd: float = 0.0) -> list[float]:
    """The start's bias per released coordinate mean, read off the released values themselves (post-processing;
    docs/release.md §8.4): the average of a chain started at 0 keeps the fraction ``f`` of the start's offset, so
    its value ``v_j ~= (1 - f) theta*_j`` plus the chain's noise of sd ``sigma`` and the bias ``f |theta*_j|`` is
    estimated as ``f sqrt(max(0, v_j^2 - sigma^2)) / (1 - f)`` (``E v_j^2 = (1 - f)^2 theta*_j^2 + sigma^2``); never
    below the public prediction ``f D`` (``D`` the prior's spread).

    Args:
        values: the released (unclamped) coordinate means of unconstrained coordinates.
        fraction: f in [0, 1).
        spread: D.
        noise_sd: sigma, the chain's noise sd per value (0: none subtracted).

    Returns:
        ``f max(D, sqrt(max(0, v_j^2 - sigma^2)) / (1 - f))`` per value.

    Raises:
        AssumptionError: f not in [0, 1), D or sigma negative.

    Examples:
        >>> start_bias_from_values([0.2, -3.0], 0.5, 1.0)             # 0.5 max(1, 0.4), 0.5 max(1, 6)
        [0.5, 3.0]
        >>> start_bias_from_values([0.2, -5.0], 0.5, 1.0, 3.0)        # 0.5 max(1, 0), 0.5 max(1, 2 * 4)
        [0.5, 4.0]
    """
    f, d, sd = float(fraction), float(spread), float(noise_sd)
    require(0.0 <= f < 1.0, "fraction", fraction, "must be in [0, 1)")
    require(d >= 0.0, "spread", spread, "must be >= 0")
    require(sd >= 0.0, "noise_sd", noise_sd, "must be >= 0")
    return [f * max(d, math.sqrt(max(0.0, float(v) ** 2 - sd * sd)) / (1.0 - f)) for v in values]


def chain_error_items(items, sd: float | None, level: float, value_range, what: str, statistic,
                      transient: float | None = None, bias: float | None = None,
                      interval_sd: float | None = None) -> tuple:
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
        bias: the predicted tempering and discretisation bias per value (:func:`path_error_terms`), added in
            quadrature as well (None: not included).
        interval_sd: the noise sd the interval of a mean uses in place of ``sd`` when larger (the path release's
            read off its released values, :func:`path_terms_from_values`); ``equivalent_noise_sd`` stays ``sd``.

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
    tr = transient if transient is not None and transient > 0 else 0.0
    bi = bias if bias is not None and bias > 0 else 0.0
    isd = max(sd, interval_sd) if interval_sd is not None else sd
    if tr > 0 or bi > 0:
        parts = ([f"the start's predicted bias {tr:.3g}"] if tr > 0 else []) + \
                ([f"the predicted tempering and discretisation bias {bi:.3g}"] if bi > 0 else [])
        missing = ("; the bias of ULA's step and of the temperature is not included" if bias is None else "")
        return with_error_intervals(
            items, two_sided_normal_quantile(level) * math.sqrt(isd * isd + tr * tr + bi * bi),
            f"the {what}'s randomness as Gaussian noise of sd equivalent_noise_sd and " + " and ".join(parts) +
            " in quadrature (heuristic: Ornstein-Uhlenbeck picture at the public curvature, docs/release.md §8.4, "
            "§11), value +- z sqrt(sd^2 + bias^2)" + missing, value_range, sd)
    return with_error_intervals(
        items, two_sided_normal_quantile(level) * isd,
        f"the {what}'s randomness as Gaussian noise of sd equivalent_noise_sd (heuristic: Ornstein-Uhlenbeck "
        "picture at the public curvature, docs/release.md §8.4, §11), value +- z sd" +
        ("" if bias is not None else "; the chain's bias (ULA's step, the temperature, the start) is not included"),
        value_range, sd)


# ---------------------------------------------------------------------------------------------------------------
# Tuning by a predicted total error (issue 22 item 2; docs/release.md §8.4)

# likelihood families whose curvature at the linear predictor eta decays away from eta = 0 in a known way:
# BernoulliLogits: -log p(y | eta) has curvature sigmoid'(eta) <= 1/4, and for eta ~ N(0, v) the probit
# approximation gives E sigmoid'(eta) ~= sigmoid'(0) / sqrt(1 + pi v / 8) (MacKay 1992); the family's sup of the
# curvature is 1/4, so the squared norm bound of d eta / d theta is 4 * record_smoothness.
_CURVATURE_DECAY = {"BernoulliLogits": 0.25}
# |phi''''(0)| / sup phi'' of the same families (phi = -log p(y | eta)): the slope at eta = 0 of the third derivative
# phi''' = sigmoid'(eta) (1 - 2 sigmoid(eta)) ~= -eta / 8 is 1/8, over the sup 1/4 of phi'' (skewness_bias_scale)
_FOURTH_OVER_SUP = {"BernoulliLogits": (1.0 / 8.0) / 0.25 ** 2}


def mser_burn_in(draws, min_burn_in: int = 0, max_burn_in: int | None = None) -> int:
    """The burn-in that the marginal standard error rule (MSER, White 1997) picks from a chain's own draws.

    ``argmin_b sum_t |z_t - mean(z_b..)|^2 / (n - b)^2`` over ``b`` in ``[min_burn_in, n // 2]``, ``z_t`` the
    draws at step ``t`` averaged over the chains: the truncation that minimises the squared standard error of the
    kept average as the kept draws themselves estimate it (a start far from the mode inflates it until the chain
    has arrived). Applied to a private path it is post-processing (the whole path is certified, docs/release.md
    §8.4): no charge, whatever the draws.

    Args:
        draws: the draws, shape ``(chains, steps, dim)``.
        min_burn_in: the smallest burn-in allowed (the public setting).
        max_burn_in: the largest burn-in allowed below half the steps (e.g. to keep the draws quantiles need).

    Returns:
        The burn-in; ``min_burn_in`` when it is already past the largest allowed, or when a draw is not finite.

    Examples:
        >>> import numpy as np
        >>> z = np.r_[np.linspace(10.0, 0.0, 20), np.zeros(80)]          # a transient of 20 steps, then still
        >>> mser_burn_in(z[None, :, None] + 0.01 * np.sin(np.arange(100))[None, :, None])   # z is 0 from step 19
        19
        >>> mser_burn_in(np.zeros((1, 100, 2)), 7)
        7
        >>> mser_burn_in(z[None, :, None], 0, 12)                            # at most 12
        12
    """
    z = np.asarray(draws, np.float64)
    if z.ndim != 3:
        raise ValueError(f"draws of shape {z.shape}: expected (chains, steps, dim)")
    z = z.mean(axis=0)
    n = z.shape[0]
    lo, hi = int(min_burn_in), n // 2 if max_burn_in is None else min(n // 2, int(max_burn_in))
    if lo >= hi or not np.all(np.isfinite(z)):        # a diverged chain: nothing to read off
        return lo
    tail1 = np.cumsum(z[::-1], axis=0)[::-1]               # sum_{t >= b} z_t
    tail2 = np.cumsum((z * z)[::-1], axis=0)[::-1]
    b = np.arange(lo, hi + 1)
    k = (n - b).astype(np.float64)
    ss = np.sum(tail2[b] - tail1[b] ** 2 / k[:, None], axis=1)
    return int(b[int(np.argmin(ss / (k * k)))])


def _feature_norm2(c_rec: float, families: Sequence[str], d: int) -> float:
    """``E |d eta / d theta|^2 = R^2 d / (d + 2)`` for features uniform in the ball of radius ``R``, ``R^2 = c /
    sup phi''`` (``c`` the proven ``record_smoothness``, ``sup phi''`` the families' :data:`_CURVATURE_DECAY`)."""
    return float(c_rec) / min(_CURVATURE_DECAY[f] for f in families) * d / (d + 2)


def _checked_mode_variance(mode_variance) -> float | None:
    """``mode_variance`` as a float (None stays None), refused unless finite and >= 0."""
    if mode_variance is None:
        return None
    s2 = float(mode_variance)
    require(math.isfinite(s2) and s2 >= 0.0, "mode_variance", mode_variance, "must be finite and >= 0")
    return s2


def heuristic_curvature(constants: Mapping[str, Any], dim: int, inverse_temperature: float | None = None,
                        families: Sequence[str] = (), mode_variance: float = 0.0) -> float | None:
    """A public estimate of the posterior's typical curvature (docs/calibration.md "Contraction diagnostics",
    docs/release.md §8.4):

        lambda_H = m_K + m c / (d + 2) * g,

    ``m_K`` the proven strong convexity of the data-independent part (``total_strong_convexity``, 0 when not
    proven), ``m`` the number of records, ``c`` the proven largest curvature one record adds (``record_smoothness``;
    for logistic regression with ``|x| <= R``, ``R^2 / 4``).  A record's Hessian is ``phi''(x . theta) x x^T`` with
    ``phi'' <= c / R^2``; for features uniform in the ball of radius R (the least informative design the domain
    allows) ``E x x^T = R^2 I / (d + 2)``, so ``m c / (d + 2)`` is the Fisher information of m records at the
    curvature's peak (theta = 0 for logistic regression) in every direction.  ``g <= 1`` corrects for the chain's
    spread at inverse temperature beta when every likelihood is Bernoulli with logits: the chain's draws spread as
    ``N(theta*, I / (beta lambda_H))``, so the predictor ``x . theta`` varies by ``v = E|x|^2 / (beta lambda_H)``
    (``E|x|^2 = R^2 d / (d + 2)``), and ``E sigmoid'(eta) ~= sigmoid'(0) / sqrt(1 + pi v / 8)`` (the probit
    approximation, MacKay 1992); ``g = 1 / sqrt(1 + pi v / 8)`` is solved with lambda_H as a fixed point (the
    largest, by iteration from ``g = 1``).  With ``mode_variance`` ``s_*^2`` the mode itself is taken to sit at
    ``s_*`` per direction from the curvature's peak (the path release's predictions use the prior's spread
    ``1 / m_K``, the public stand-in of §11.4): ``v = E|x|^2 (1 / (beta lambda_H) + s_*^2)``.  Other families:
    ``g = 1``.  Public inputs only (the domain's
    constants, m, d, beta), never the data; a heuristic, not a bound (the data's design and mode move it:
    tests/test_calibration_diagnostics.py measures it on logistic regression).

    Args:
        constants: the analysis's constants (``total_strong_convexity``, ``record_smoothness`` or
            ``total_smoothness``, ``data_size``).
        dim: the number of parameters d.
        inverse_temperature: the chain's beta (None: no spread correction).
        families: the families of the observed sites (``Analysis.observed_sites``).
        mode_variance: ``s_*^2``, the mode's squared distance per direction from the peak (default 0).

    Returns:
        lambda_H, or None when the records' curvature is not proven bounded.

    Raises:
        AssumptionError: ``dim`` not a positive integer, or ``inverse_temperature`` not positive.

    Examples:
        >>> c = {"total_strong_convexity": 1.0, "record_smoothness": 0.25, "data_size": 1200}
        >>> heuristic_curvature(c, 10)                                   # 1 + 1200 * 0.25 / 12
        26.0
        >>> lam = heuristic_curvature(c, 10, 0.05, ["BernoulliLogits"])     # the fixed point
        >>> v = (4 * 0.25 * 10 / 12) / (0.05 * lam)
        >>> abs(lam - (1 + 25 / math.sqrt(1 + math.pi * v / 8))) < 1e-9
        True
    """
    d = positive_int("dim", dim)
    m_k = float(constants.get("total_strong_convexity") or 0.0)
    m = constants.get("data_size")
    c_rec = constants.get("record_smoothness")
    if c_rec is None and constants.get("total_smoothness") is not None and m:
        c_rec = max(0.0, float(constants["total_smoothness"]) - m_k) / float(m)
    if c_rec is None or not m:
        return None
    records = float(m) * float(c_rec) / (d + 2)
    fams = list(families)
    if inverse_temperature is None or not records > 0 or not fams or any(f not in _CURVATURE_DECAY for f in fams):
        return m_k + records if m_k + records > 0 else None
    beta = positive("inverse_temperature", inverse_temperature)
    s2 = _checked_mode_variance(0.0 if mode_variance is None else mode_variance)
    r2 = _feature_norm2(c_rec, fams, d)
    lam = m_k + records
    for _ in range(200):
        new = m_k + records / math.sqrt(1.0 + math.pi * r2 * (1.0 / (beta * lam) + s2) / 8.0)
        if abs(new - lam) <= 1e-13 * lam:
            lam = new
            break
        lam = new
    return lam if lam > 0 else None


def ar1_average_variance(rho: float, innovation_variance: float, num_steps: int, burn_in: int) -> float:
    """The exact variance of the average of ``X_{b+1}, ..., X_n`` of the AR(1) chain ``X_t = rho X_{t-1} + a +
    s xi_t`` started at a fixed ``X_0`` (``s^2`` = ``innovation_variance``, ``xi_t`` independent standard normal):
    ULA at step ``gamma`` on a quadratic of curvature ``lambda`` (``rho = 1 - gamma lambda``, ``s^2 = 2 gamma /
    beta``; docs/release.md §8.4).  The average is ``(s / N) sum_j w_j xi_j`` with ``w_j = sum_{t >= max(j, b+1)}^n
    rho^(t - j)``, ``N = n - b``; summing the geometric series,

        sum_{j <= b+1} w_j^2 = ((1 - rho^N) / (1 - rho))^2 (1 - rho^(2(b+1))) / (1 - rho^2),
        sum_{j > b+1} w_j^2 = (1 - rho)^-2 [(N - 1) - 2 rho (1 - rho^(N-1)) / (1 - rho)
                                            + rho^2 (1 - rho^(2(N-1))) / (1 - rho^2)].

    Args:
        rho: the autoregression coefficient, ``|rho| < 1``.
        innovation_variance: ``s^2`` > 0.
        num_steps: n.
        burn_in: b in [0, n).

    Returns:
        The variance (inf when ``|rho| >= 1``: ULA diverges on that quadratic).

    Raises:
        AssumptionError: a bad argument.

    Examples:
        >>> ar1_average_variance(0.0, 2.0, 10, 5)                   # independent draws: s^2 / N
        0.4
        >>> round(ar1_average_variance(0.5, 1.0, 2, 0), 12)         # (X1 + X2)/2 = ((1 + 0.5) xi_1 + xi_2) / 2
        0.8125
    """
    s2 = positive("innovation_variance", innovation_variance)
    n = positive_int("num_steps", num_steps)
    b = int(burn_in)
    require(0 <= b < n, "burn_in", b, f"must be in [0, {n})")
    r = float(rho)
    if not abs(r) < 1.0:
        return math.inf
    N = n - b
    if r == 0.0:
        return s2 / N
    one = 1.0 - r
    head = ((1.0 - r ** N) / one) ** 2 * (1.0 - r ** (2 * (b + 1))) / (1.0 - r * r)
    tail = ((N - 1) - 2.0 * r * (1.0 - r ** (N - 1)) / one + r * r * (1.0 - r ** (2 * (N - 1))) / (1.0 - r * r)) \
        / (one * one)
    return s2 * (head + tail) / (N * N)


def transient_fraction(rho: float, num_steps: int, burn_in: int) -> float:
    """``f = (1/N) sum_{t=b+1}^{n} rho^t``: the fraction of the start's distance to the stationary mean that the
    average of the kept draws keeps (docs/release.md §11.4), ``N = n - b``.

    Args:
        rho: the autoregression coefficient, ``|rho| < 1``.
        num_steps: n.
        burn_in: b in [0, n).

    Returns:
        f (inf when ``|rho| >= 1``).

    Raises:
        AssumptionError: a bad argument.

    Examples:
        >>> transient_fraction(0.5, 2, 0)                                # (0.5 + 0.25) / 2
        0.375
    """
    n = positive_int("num_steps", num_steps)
    b = int(burn_in)
    require(0 <= b < n, "burn_in", b, f"must be in [0, {n})")
    r = float(rho)
    if not abs(r) < 1.0:
        return math.inf
    if r == 0.0:
        return 0.0
    return abs((r ** (b + 1)) * (1.0 - r ** (n - b)) / ((1.0 - r) * (n - b)))


def skewness_bias_scale(constants: Mapping[str, Any], dim: int, curvature: float,
                        families: Sequence[str] = (), mode_variance: float | None = None) -> float | None:
    """``a``: a public estimate, per direction, of how far the mean of the tempered posterior ``exp(-beta U)``
    moves per unit of temperature ``1/beta`` (docs/release.md §8.4).  Laplace's expansion of the mean about the
    mode ``theta*`` gives ``E_beta theta - theta* = -(1 / (2 beta)) H^-1 (T : H^-1) + O(beta^-2)``, ``H`` the
    Hessian and ``T`` the third derivative of U at the mode; so ``E_beta theta - E_1 theta ~= (1/beta - 1) a``.
    For a GLM ``T : H^-1 = sum_i phi'''(eta_i) (x_i' H^-1 x_i) x_i``; with ``H = lambda I``, ``phi'''(eta) ~=
    phi''''(0) eta`` near the curvature's peak, features uniform in the ball of radius R (``E |x|^2 x x^T = R^4 I /
    (d + 4)``) and the prior's spread ``1/sqrt(m_K)`` per direction as the public stand-in for ``theta*``:

        a = m |phi''''(0)| R^4 / (2 (d + 4) lambda^2 sqrt(m_K)),

    ``R^2 = c / sup phi''`` (``c`` = ``record_smoothness``); for Bernoulli-logits ``|phi''''(0)| R^4 = 2 c^2``.
    0 when the potential is proven quadratic (``total_strong_convexity == total_smoothness``: the Hessian is
    constant); None (not predicted) for families without a rule.  A heuristic, not a bound.

    Args:
        constants: the analysis's constants (``total_strong_convexity``, ``total_smoothness``,
            ``record_smoothness``, ``data_size``).
        dim: the number of parameters d.
        curvature: lambda (:func:`heuristic_curvature`).
        families: the observed sites' families.
        mode_variance: the squared distance per direction from the peak to ``theta*`` that stands in for
            ``1 / m_K`` (None: ``1 / m_K``; :func:`path_terms_from_values` passes the released values' own).

    Returns:
        a, 0, or None.

    Raises:
        AssumptionError: ``dim`` or ``curvature`` not positive.

    Examples:
        >>> c = {"total_strong_convexity": 1.0, "total_smoothness": 2501.0, "record_smoothness": 0.25,
        ...      "data_size": 10000}
        >>> round(skewness_bias_scale(c, 10, 200.0, ["BernoulliLogits"]), 12)   # 1e4 * 2 * 0.25^2 / (2 * 14 * 4e4)
        0.001116071429
    """
    m_k, L = constants.get("total_strong_convexity"), constants.get("total_smoothness")
    if m_k is not None and L is not None and float(m_k) > 0 and float(L) <= float(m_k):
        return 0.0
    m, c_rec = constants.get("data_size"), constants.get("record_smoothness")
    fams = list(families)
    p2 = _prior_spread2(constants)
    if p2 is None or not m or c_rec is None or not fams or any(f not in _FOURTH_OVER_SUP for f in fams):
        return None
    d = positive_int("dim", dim)
    lam = positive("curvature", curvature)
    k4r4 = max(_FOURTH_OVER_SUP[f] for f in fams) * float(c_rec) ** 2
    s2 = p2 if mode_variance is None else max(p2, _checked_mode_variance(mode_variance))
    return float(m) * k4r4 * math.sqrt(s2) / (2.0 * (d + 4) * lam * lam)


def _prior_spread2(constants) -> float | None:
    """``1 / m_K``: the public stand-in for the squared distance, per direction, from the start (0) to the posterior
    mean: K's own strong convexity (``strong_convexity``, the prior's) when proven, else the whole potential's
    (``total_strong_convexity``); None when neither is positive."""
    for key in ("strong_convexity", "total_strong_convexity"):
        v = constants.get(key)
        if v is not None and float(v) > 0:
            return 1.0 / float(v)
    return None


def _curvature(constants, dim, beta, families, mode_variance=None):
    """The curvature the predictions use: lambda_H with the mode at the prior's spread (or at ``mode_variance``
    when larger; within the proven [m_K, L]), else the proxy lambda_p; None without a proven strong convexity (no
    prior spread stands in for the start's distance, and the chain need not contract)."""
    m_k = constants.get("total_strong_convexity")
    if m_k is None or not float(m_k) > 0:
        return None
    s2 = _prior_spread2(constants) or 0.0
    if mode_variance is not None:
        s2 = max(s2, float(mode_variance))
    lam = heuristic_curvature(constants, dim, beta, families, s2)
    if lam is None:
        return curvature_proxy(constants, dim)
    L, m_k = constants.get("total_smoothness"), constants.get("total_strong_convexity")
    if L is not None:
        lam = min(lam, float(L))
    if m_k is not None:
        lam = max(lam, float(m_k))
    return lam


def path_error_terms(constants: Mapping[str, Any], dim: int, inverse_temperature: float, step_size: float,
                     num_steps: int, burn_in: int, num_chains: int = 1, families: Sequence[str] = (),
                     num_coords: int = 1, l2_lipschitz: float = 1.0,
                     mode_variance: float | None = None) -> dict | None:
    """The predicted error of a path release, term by term, per released value (docs/release.md §8.4), from public
    inputs only, in the Ornstein-Uhlenbeck picture at the curvature ``lambda`` (:func:`heuristic_curvature` at the
    chain's ``beta``, clipped to the proven ``[m_K, L]``; :func:`curvature_proxy` when it is not available):

    * ``noise_variance``: the chain's randomness (the release noise and the Monte Carlo error at once): the exact
      variance of the average of the kept draws of the AR(1) chain ``rho = 1 - gamma lambda``, ``s^2 = 2 gamma /
      beta`` (:func:`ar1_average_variance`), over ``c`` chains;
    * ``start_transient``: the start's bias left in the average, ``f / sqrt(m_K)`` (:func:`transient_fraction`,
      §11.4);
    * ``tempering_bias``: ``|1/beta - 1| a`` (:func:`skewness_bias_scale`): the tempered posterior's mean against
      the posterior's;
    * ``discretisation_bias``: ``a (1 / (1 - gamma lambda / 2) - 1) / beta``: ULA's stationary law at step gamma
      spreads ``1 / (1 - gamma lambda / 2)`` times wider than ``exp(-beta U)`` on a quadratic (§11.1), and its mean
      moves with the spread as the temperature's does (O(gamma));

    ``rmse = l2 sqrt(min(k, d) / k) sqrt(noise_variance + start_transient^2 + bias^2)`` with ``bias =
    a |1 / (beta (1 - gamma lambda / 2)) - 1|`` (the two biases add with their signs).  Exact for a quadratic
    potential whose curvature is lambda (both biases 0); a prediction, not a bound, otherwise.

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        inverse_temperature: beta.
        step_size: gamma.
        num_steps: n.
        burn_in: b.
        num_chains: c.
        families: the observed sites' families.
        num_coords: k, the statistic's number of values.
        l2_lipschitz: the statistic's Euclidean constant.
        mode_variance: the mode's squared distance per direction from the curvature's peak, in place of the
            prior's spread ``1 / m_K`` when larger (None: ``1 / m_K``, the public prediction; the error interval
            passes the released values' own, :func:`path_terms_from_values`).

    Returns:
        ``{"curvature", "noise_sd", "start_transient", "transient_fraction", "transient_fraction_prior_curvature",
        "start_spread", "tempering_bias", "discretisation_bias", "bias", "rmse", "mse_per_direction"}`` (per value;
        ``transient_fraction`` f and ``start_spread`` D per direction; ``transient_fraction_prior_curvature`` the
        fraction f at the curvature ``m_K`` alone, a direction the records do not inform, None without a proven
        ``m_K``; a bias None when not predicted), or None when no curvature is proven.

    Raises:
        AssumptionError: a bad argument.

    Examples:
        >>> c = {"total_strong_convexity": 4.0, "total_smoothness": 4.0}         # a quadratic of curvature 4
        >>> t = path_error_terms(c, 1, 0.5, 0.25, 2, 0)          # rho = 0: independent draws, s^2 = 1
        >>> round(t["noise_sd"] ** 2, 12), t["start_transient"], t["bias"]
        (0.5, 0.0, 0.0)
    """
    if not math.isfinite(l2_lipschitz):
        return None
    beta, g = positive("inverse_temperature", inverse_temperature), positive("step_size", step_size)
    n, c = positive_int("num_steps", num_steps), positive_int("num_chains", num_chains)
    k = positive_int("num_coords", num_coords)
    mode_variance = _checked_mode_variance(mode_variance)
    lam = _curvature(constants, dim, beta, families, mode_variance)
    if lam is None:
        return None
    rho = 1.0 - g * lam
    var = ar1_average_variance(rho, 2.0 * g / beta, n, burn_in) / c
    p2 = _prior_spread2(constants)
    tr = None if p2 is None else transient_fraction(rho, n, burn_in) * math.sqrt(p2)
    a = skewness_bias_scale(constants, dim, lam, families, mode_variance)
    if a is None or not g * lam < 2.0:
        temp = disc = bias = None if a is None else math.inf
    else:
        spread = 1.0 / (1.0 - g * lam / 2.0)
        temp, disc = a * abs(1.0 / beta - 1.0), a * (spread - 1.0) / beta
        bias = a * abs(spread / beta - 1.0)
    per = float(l2_lipschitz) * math.sqrt(min(k, int(dim)) / k)
    mse = var + (tr or 0.0) ** 2 + (bias or 0.0) ** 2
    # the same fraction in a direction the records do not inform (curvature m_K, the prior's alone): what the
    # prediction assumes away by spreading the records' information evenly over the directions (§8.4, "design")
    m_k = float(constants.get("total_strong_convexity") or 0.0)
    f_weak = transient_fraction(1.0 - g * m_k, n, burn_in) if 0.0 < g * m_k < 2.0 else None
    return {"curvature": lam, "noise_sd": per * math.sqrt(var), "start_transient": None if tr is None else per * tr,
            "transient_fraction_prior_curvature": f_weak,
            "transient_fraction": transient_fraction(rho, n, burn_in), "start_spread": None if p2 is None else
            math.sqrt(p2), "tempering_bias": None if temp is None else per * temp,
            "discretisation_bias": None if disc is None else per * disc, "bias": None if bias is None else per * bias,
            "rmse": per * math.sqrt(mse), "mse_per_direction": mse}


def along_mode_curvature(constants: Mapping[str, Any], dim: int, inverse_temperature: float, curvature: float,
                         mode_variance: float, families: Sequence[str] = ()) -> float:
    """The curvature along the mode's own direction ``u = theta* / |theta*|``, the direction of the start's offset
    (the chain starts at 0), in the picture of :func:`heuristic_curvature` (docs/release.md §8.4, "The interval reads
    the start off the released value").  With ``sigmoid'(t) ~= sigmoid'(0) exp(-pi t^2 / 16)`` (the probit
    approximation), ``z = x . u ~ N(0, r^2 / d)``, the predictor ``x . theta = |theta*| z + w`` with ``w`` the
    chain's spread (variance ``v_w = r^2 / (beta lambda)``) and ``v_m = r^2 s_*^2`` the mode's share:

        E[sigmoid'(x . theta) z^2] / (E[sigmoid'(x . theta)] E[z^2]) = 1 / (1 + (pi v_m / 8) / (1 + pi v_w / 8)),

    (Gaussian integrals: ``E[exp(-k z^2) z^2] = s^2 (1 + 2 k s^2)^(-3/2)`` against ``s^2 (1 + 2 k s^2)^(-1/2)``),
    so the records' part of lambda is that factor smaller along ``u``: the records that the mode predicts
    confidently add little curvature in its direction.  ``r^2 = E|x|^2`` as in :func:`heuristic_curvature`.  The
    curvature itself for families without a rule.  Within the proven ``[m_K, L]``.

    Args:
        constants: the analysis's constants.
        dim: d.
        inverse_temperature: beta.
        curvature: lambda (:func:`heuristic_curvature` at ``mode_variance``).
        mode_variance: ``s_*^2`` per direction.
        families: the observed sites' families.

    Returns:
        lambda along the mode.

    Raises:
        AssumptionError: ``mode_variance`` negative or not finite, ``dim`` or ``inverse_temperature`` not positive.

    Examples:
        >>> c = {"total_strong_convexity": 1.0, "record_smoothness": 0.25, "data_size": 1000}
        >>> lam = along_mode_curvature(c, 10, 1e12, 21.0, 12 / (10 * math.pi), ["BernoulliLogits"])
        >>> round(lam, 9)          # v_m = (10 / 12) * 12 / (10 pi) = 1 / pi: factor 1 / (1 + 1/8); 1 + 20 * 8 / 9
        18.777777778
    """
    fams = list(families)
    s2 = _checked_mode_variance(mode_variance)
    m_k = float(constants.get("total_strong_convexity") or 0.0)
    c_rec = constants.get("record_smoothness")
    lam = float(curvature)
    if c_rec is None or not fams or any(f not in _CURVATURE_DECAY for f in fams) or not lam > m_k:
        return lam
    d = positive_int("dim", dim)
    beta = positive("inverse_temperature", inverse_temperature)
    r2 = _feature_norm2(c_rec, fams, d)
    v_w, v_m = r2 / (beta * lam), r2 * s2
    par = m_k + (lam - m_k) / (1.0 + (math.pi * v_m / 8.0) / (1.0 + math.pi * v_w / 8.0))
    return max(par, m_k)


def path_terms_from_values(constants: Mapping[str, Any], dim: int, inverse_temperature: float, step_size: float,
                           num_steps: int, burn_in: int, num_chains: int, families: Sequence[str],
                           values) -> dict | None:
    """:func:`path_error_terms` per coordinate mean (``k = 1``, ``l2 = 1``) with the mode read off the released
    values (post-processing of the release; docs/release.md §8.4, "The interval reads the start off the released
    value").  The average keeps the fraction ``f`` of the start's offset, so ``v_j ~= (1 - f) theta*_j`` plus the
    chain's noise of sd ``sigma``: the mode sits ``s_*^2 = max(0, mean_j v_j^2 - sigma^2) / (1 - f)^2`` per direction
    from the curvature's peak (``f`` and ``sigma`` the public ones).  Where that exceeds the prior's spread ``1 / m_K``
    the curvature ``lambda_H`` is lower; the start's offset lies along the mode, where the curvature is lower still
    (:func:`along_mode_curvature`), so the fraction ``f`` is computed there.  One step, not a fixed point (solving
    ``f`` and ``s_*`` together feeds back and overshoots: docs/release.md §8.4).  The noise and the biases keep the
    isotropic ``lambda_H`` at ``s_*^2``.

    Args:
        constants: the analysis's constants (as :func:`path_error_terms`).
        dim: the number of parameters.
        inverse_temperature: beta.
        step_size: gamma.
        num_steps: n.
        burn_in: b.
        num_chains: c.
        families: the observed sites' families.
        values: the released (unclamped) coordinate means of unconstrained coordinates.

    Returns:
        :func:`path_error_terms`'s dict with ``transient_fraction`` along the mode, ``mode_variance`` and
        ``along_mode_curvature`` added; or :func:`path_error_terms`'s own result (None without a curvature) when the
        values are empty or not finite.  The caller keeps each term at least the public prediction's.

    Examples:
        >>> c = {"total_strong_convexity": 1.0, "strong_convexity": 1.0, "total_smoothness": 251.0,
        ...      "record_smoothness": 0.25, "data_size": 1000}
        >>> pub = path_error_terms(c, 10, 1.0, 0.004, 100, 10, 1, ["BernoulliLogits"])
        >>> far = path_terms_from_values(c, 10, 1.0, 0.004, 100, 10, 1, ["BernoulliLogits"], [3.0] * 10)
        >>> far["curvature"] < pub["curvature"] and far["transient_fraction"] > pub["transient_fraction"]
        True
        >>> far["along_mode_curvature"] < far["curvature"]
        True
    """
    args = (constants, dim, inverse_temperature, step_size, num_steps, burn_in, num_chains, families, 1, 1.0)
    t = path_error_terms(*args)
    v = np.asarray(values, np.float64).ravel()
    if t is None or v.size == 0 or not np.all(np.isfinite(v)):
        return t
    v2 = float(np.mean(v * v))
    g, n, b = float(step_size), int(num_steps), int(burn_in)
    f = t["transient_fraction"]
    if not 0.0 <= f < 1.0:
        return t
    s2 = max(0.0, v2 - t["noise_sd"] ** 2) / (1.0 - f) ** 2
    t = path_error_terms(*args, mode_variance=s2)
    lam_par = along_mode_curvature(constants, dim, inverse_temperature, t["curvature"], s2, families)
    f = transient_fraction(1.0 - g * lam_par, n, b) if 0.0 < g * lam_par < 2.0 else t["transient_fraction"]
    return {**t, "transient_fraction": f, "mode_variance": s2, "along_mode_curvature": lam_par}


#: the step sizes the tuning tries, as fractions of 1 / total_smoothness (the largest step stable for every dataset)
PATH_STEP_FRACTIONS = (1.0, 0.5, 0.25)
def tune_path(constants: Mapping[str, Any], dim: int, epsilon: float, delta: float, families: Sequence[str] = (),
              num_coords: int = 1, l2_lipschitz: float = 1.0, step_size: float | None = None,
              num_steps: int | None = None, burn_in: int | None = None, num_chains: int | None = None,
              min_kept: int = 1, max_steps: int = PATH_MAX_STEPS,
              inverse_temperature: float | None = None) -> dict | None:
    """The path release's settings that minimise the predicted total error :func:`path_error_terms` at the
    temperature the budget allows, ``beta = 2 mu^2 / (c grad_diff^2 gamma n)`` (§8.1), from public inputs only
    (docs/release.md §8.4).  Settings given are kept; the others are searched:

    * chains: ``c = 1`` (the noise variance ``2 gamma^2 n c sum w^2 / (2 mu^2 / grad_diff^2 N^2 c)`` does not depend
      on c at a fixed budget while beta falls as 1/c: more chains only make each hotter);
    * step: ``gamma = f / total_smoothness`` for f in :data:`PATH_STEP_FRACTIONS` (``1/L`` is the largest step every
      dataset of the domain keeps stable); a smaller step is taken only when it lowers the prediction by more than
      1 % (it costs ``1/f`` times the compute);
    * steps and burn-in: n in [:data:`PATH_MIN_STEPS`, ``max_steps``] on a geometric grid (ratio 1.1) and b on a grid
      of fractions of n, then every integer (n, b) around the best point (n within 10 %, b within 10 % + 2).

    Args:
        constants: the analysis's constants (``grad_diff``, ``total_smoothness``, ...).
        dim: the number of parameters.
        epsilon: > 0.
        delta: in (0, 1).
        families: the observed sites' families.
        num_coords: k.
        l2_lipschitz: the statistic's Euclidean constant.
        step_size: gamma fixed by the user (None: searched).
        num_steps: n fixed by the user (None: searched).
        burn_in: b fixed by the user (None: searched).
        num_chains: c fixed by the user (None: searched).
        min_kept: the least kept draws per chain x chains (quantile requests).
        max_steps: the largest n searched.
        inverse_temperature: a chain's beta fixed as given (a ``ula-path`` plan's, with its step, steps and
            chains: only the burn-in is searched); None: ``2 mu^2 / (c grad_diff^2 gamma n)``.

    Returns:
        ``{"step_size", "num_steps", "burn_in", "num_chains", "inverse_temperature", "terms"}``
        (``terms``: :func:`path_error_terms`), or None when ``grad_diff``, the step or the curvature is not proven.

    Raises:
        AssumptionError: a bad argument.

    Examples:
        >>> c = {"grad_diff": 2.0, "total_strong_convexity": 1.0, "total_smoothness": 2501.0,
        ...      "record_smoothness": 0.25, "data_size": 10000}
        >>> t = tune_path(c, 10, 1.0, 1e-6, ["BernoulliLogits"])
        >>> t["num_chains"], t["step_size"] == 1 / 2501.0, 200 < t["num_steps"] < 2000
        (1, True, True)
    """
    gd = constants.get("grad_diff")
    L = constants.get("total_smoothness")
    if gd is None or not float(gd) > 0:
        return None
    mu = gdp_mu(epsilon, delta)
    budget = 2.0 * mu * mu / float(gd) ** 2                # beta c gamma n
    if step_size is not None:
        steps = [positive("step_size", step_size)]
    elif L is None:
        return None
    else:
        steps = [f / float(L) for f in PATH_STEP_FRACTIONS]
    c = 1 if num_chains is None else positive_int("num_chains", num_chains)
    top = max(int(max_steps), PATH_MIN_STEPS)
    fams = tuple(families)
    start = math.sqrt(_prior_spread2(constants) or 0.0)
    fixed_b = None if burn_in is None else int(burn_in)
    memo: dict = {}

    if inverse_temperature is not None:
        positive("inverse_temperature", inverse_temperature)
        require(step_size is not None and num_steps is not None and num_chains is not None, "inverse_temperature",
                inverse_temperature, "is fixed only with step_size, num_steps and num_chains (a plan's chain)")

    def beta_of(g, n):
        return float(inverse_temperature) if inverse_temperature is not None else budget / (c * g * n)

    def best_b(g, n, coarse=False):
        """(mse, b): the best burn-in at (g, n), every b at once (the closed forms, vectorised); ``coarse``: b on a
        geometric grid only (the search's first pass)."""
        if (g, n, coarse) in memo:
            return memo[g, n, coarse]
        beta = beta_of(g, n)
        lam = _curvature(constants, dim, beta, fams)
        if lam is None:
            raise _NoCurvature
        rho = 1.0 - g * lam
        hi = n - max(1, -(-int(min_kept) // c))          # the largest b keeping min_kept draws over c chains
        if not abs(rho) < 1.0 or hi < 0 or (fixed_b is not None and not 0 <= fixed_b <= hi):
            memo[g, n, coarse] = (math.inf, 0)
            return memo[g, n, coarse]
        if fixed_b is not None:
            b = np.array([float(fixed_b)])
        elif coarse:
            b = np.unique(np.minimum(hi, np.floor(np.concatenate([np.arange(8.0), 8.0 * 1.15 ** np.arange(80)]))))
        else:
            b = np.arange(0, hi + 1, dtype=np.float64)
        N = n - b
        s2 = 2.0 * g / beta
        if rho == 0.0:
            var, tr = s2 / N, np.zeros_like(N)
        else:
            one = 1.0 - rho
            head = ((1.0 - rho ** N) / one) ** 2 * (1.0 - rho ** (2 * (b + 1))) / (1.0 - rho * rho)
            tail = ((N - 1) - 2.0 * rho * (1.0 - rho ** (N - 1)) / one
                    + rho * rho * (1.0 - rho ** (2 * (N - 1))) / (1.0 - rho * rho)) / (one * one)
            var = s2 * (head + tail) / (N * N)
            tr = np.abs(rho ** (b + 1) * (1.0 - rho ** N) / (one * N)) * start
        a = skewness_bias_scale(constants, dim, lam, fams)
        bias = 0.0 if a is None else a * abs(1.0 / (beta * (1.0 - g * lam / 2.0)) - 1.0)
        e = var / c + tr * tr + bias * bias
        j = int(np.argmax(e <= np.min(e) * (1.0 + _TIE)))           # ties (to rounding): the smallest burn-in
        memo[g, n, coarse] = (float(e[j]), int(b[j]))
        return memo[g, n, coarse]

    try:
        best = None                                   # (mse, g, n, b)
        for g in steps:
            if num_steps is not None:
                n0 = positive_int("num_steps", num_steps)
            else:
                grid, x = [], float(PATH_MIN_STEPS)
                while x < top:
                    grid.append(int(round(x)))
                    x *= 1.1
                grid = sorted(set(grid + [top]))
                n0 = _first_min(grid, lambda n: best_b(g, n, True)[0])
                lo, hi = max(PATH_MIN_STEPS, int(n0 / 1.1)), min(top, int(n0 * 1.1) + 1)
                while hi - lo > 2:                   # integer ternary search between the grid's neighbours
                    m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
                    if best_b(g, m1)[0] <= best_b(g, m2)[0]:
                        hi = m2
                    else:
                        lo = m1
                n0 = _first_min(sorted({n0, *range(lo, hi + 1)}), lambda n: best_b(g, n)[0])
            e, b0 = best_b(g, n0)
            if math.isfinite(e) and (best is None or e < best[0] * (1.0 - 0.01)):
                best = (e, g, n0, b0)
    except _NoCurvature:
        return None
    if best is None:
        return None
    _, g, n, b = best
    beta = beta_of(g, n)
    return {"step_size": g, "num_steps": n, "burn_in": b, "num_chains": c, "inverse_temperature": beta,
            "terms": path_error_terms(constants, dim, beta, g, n, b, c, fams, num_coords, l2_lipschitz)}


#: two predictions within this relative difference are a tie (rounding): the smaller setting is taken
_TIE = 1e-9


def _first_min(values, f):
    """The first of ``values`` whose ``f`` is within :data:`_TIE` of the smallest."""
    es = [f(v) for v in values]
    lo = min(es)
    return next(v for v, e in zip(values, es) if e <= lo * (1.0 + _TIE))


class _NoCurvature(Exception):
    """No curvature is proven: nothing to tune."""


def last_draw_error_terms(constants: Mapping[str, Any], dim: int, inverse_temperature: float,
                          step_size: float | None = None, num_steps: int | None = None, families: Sequence[str] = (),
                          num_coords: int = 1, l2_lipschitz: float = 1.0) -> dict | None:
    """The predicted error of a last-draw release, term by term, per released value (docs/release.md §10.1), in
    the picture of :func:`path_error_terms`: the draw ``X_n`` of the AR(1) chain from 0 has variance ``s^2 (1 -
    rho^(2n)) / (1 - rho^2)`` (``s^2 = 2 gamma / beta``; ``1 / (beta lambda)`` without a step: the exact tempered
    Gaussian), keeps ``rho^n`` of the start's distance (the prior's spread per direction) and carries the bias
    ``a |1 / (beta (1 - gamma lambda / 2)) - 1|`` (:func:`skewness_bias_scale`).

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        inverse_temperature: beta.
        step_size: gamma (None: the exact tempered posterior, no start).
        num_steps: n (with ``step_size``).
        families: the observed sites' families.
        num_coords: k.
        l2_lipschitz: the statistic's Euclidean constant.

    Returns:
        ``{"curvature", "noise_sd", "start_transient", "bias", "rmse"}`` per value, or None without a curvature.

    Raises:
        AssumptionError: a bad argument.

    Examples:
        >>> c = {"total_strong_convexity": 4.0, "total_smoothness": 4.0}
        >>> round(last_draw_error_terms(c, 1, 0.5)["noise_sd"] ** 2, 12)              # 1 / (beta lambda)
        0.5
    """
    if not math.isfinite(l2_lipschitz):
        return None
    beta = positive("inverse_temperature", inverse_temperature)
    k = positive_int("num_coords", num_coords)
    lam = _curvature(constants, dim, beta, families)
    if lam is None:
        return None
    if step_size is None:
        g, var, tr = 0.0, 1.0 / (beta * lam), 0.0
    else:
        g, n = positive("step_size", step_size), positive_int("num_steps", num_steps)
        rho = 1.0 - g * lam
        if not abs(rho) < 1.0:
            return {"curvature": lam, "noise_sd": math.inf, "start_transient": math.inf, "bias": None,
                    "rmse": math.inf}
        var = (2.0 * g / beta) * (1.0 - rho ** (2 * n)) / (1.0 - rho * rho)
        tr = abs(rho) ** n * math.sqrt(_prior_spread2(constants) or 0.0)
    a = skewness_bias_scale(constants, dim, lam, families)
    bias = None if a is None else a * abs(1.0 / (beta * (1.0 - g * lam / 2.0)) - 1.0)
    per = float(l2_lipschitz) * math.sqrt(min(k, int(dim)) / k)
    return {"curvature": lam, "noise_sd": per * math.sqrt(var), "start_transient": per * tr,
            "bias": None if bias is None else per * bias,
            "rmse": per * math.sqrt(var + tr * tr + (bias or 0.0) ** 2)}
