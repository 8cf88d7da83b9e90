"""004 Section 3: posterior <-> chain <-> noisy Monte Carlo estimate.

* Proposition A.2 / 3.2 / Corollary 3.3: transfer of DP through a TV bound.
* Proposition 3.4 / A.3: TV lower bound when the chain is more private than the posterior.
* Propositions 3.7 / A.5 and 3.10: Laplace noise calibration for a Monte Carlo estimate.

Note (SEEDS §6 row 10): a Laplace variable of scale b has variance ``2 b^2``;
004 §3.2's ``eta/eps`` is wrong and is not used.

Every delta (and epsilon) returned is rounded outward, and the total variation lower bound of Proposition 3.4
inward: the sums and products are exact rationals (``bayesdp.exact``), and ``exp``/``expm1`` (an ulp or two)
are pushed outward by ``round_up``.
"""

from __future__ import annotations

import math

from ..certificate import Certificate
from ..curves import ApproxDP, DeltaProfile
from ..errors import AssumptionError, check_finite, nonnegative, positive, require
from ..exact import down, exact as _q, exp_up, round_up, up


__all__ = ["proposition_a_2", "proposition_3_2_i", "proposition_3_2_ii", "corollary_3_3_threshold",
           "proposition_3_4", "laplace_delta", "laplace_noise_variance", "proposition_3_7", "proposition_3_10"]


def _eps(name: str, value: float) -> float:
    return nonnegative(name, value)


def _delta01(name: str, value: float, closed_right: bool = False) -> float:
    x = check_finite(name, value)
    ok = 0.0 <= x <= 1.0 if closed_right else 0.0 <= x < 1.0
    require(ok, name, x, "must be in [0, 1]" if closed_right else "must be in [0, 1)")
    return x


def proposition_a_2(epsilon: float, delta: float, tv_bound: float, mechanism: str = "tv-transfer",
                    source: str = "004 Proposition A.2") -> Certificate:
    """004 Proposition A.2: if {mu_D} is (eps, delta)-DP and TV(mu_D, nu_D) <= b for every D, {nu_D} is
    (eps, delta + b (e^eps + 1))-DP.

    Args:
        epsilon: eps >= 0 of {mu_D}.
        delta: delta in [0, 1] of {mu_D}.
        tv_bound: b in [0, 1].
        mechanism: the mechanism name recorded in the certificate.
        source: the source label (Proposition 3.2 reuses this function).

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with an [`ApproxDP`][bayesdp.curves.ApproxDP] point
            (delta capped at 1).

    Raises:
        AssumptionError: an input out of range.

    Examples:
        >>> proposition_a_2(epsilon=1.0, delta=1e-6, tv_bound=2e-4).curve.describe()   # 1e-6 + 2e-4 (e + 1)
        '(1, 0.000744656)-DP'
    """
    e = _eps("epsilon_in", epsilon)
    d = _delta01("delta_in", delta, closed_right=True)
    b = _delta01("tv_bound", tv_bound, closed_right=True)
    # b (e^eps + 1), exact but for e^eps (rounded up), then rounded up.  Past eps = 700, without overflow as
    # exp(eps + log b): once b e^eps > e the delta is capped at 1 anyway, and below that the argument carries
    # (|eps| + |log b|) ulps of error (<= 2^-42 relative after exp, as |log b| <= 745): pushed up by 2^-40
    if b == 0:
        term = _q(0.0)
    elif e <= 700.0:
        term = _q(b) * _q(exp_up(e))
    else:
        term = _q(round_up(math.exp(min(e + math.log(b), 1.0)), 2.0 ** -40))
    out = up(_q(d) + _q(b) + term)
    return Certificate(mechanism=mechanism, source=source, curve=ApproxDP(e, min(1.0, out)),
                       assumptions={"epsilon_in": e, "delta_in": d, "tv_bound": b},
                       constants={"delta_out": out})


def proposition_3_2_i(epsilon: float, delta_posterior: float, zeta: float, rate: float,
                      mechanism: str = "tv-transfer") -> Certificate:
    """004 Proposition 3.2(i): posterior (eps, delta)-DP and TV(nu P^n, pi_D) <= zeta R(n)
    (Assumption 3.1, data-uniform) => X_n is (eps, delta + zeta (e^eps + 1) R(n))-DP.

    Args:
        epsilon: eps >= 0 of the posterior.
        delta_posterior: delta in [0, 1] of the posterior.
        zeta: zeta >= 0 of Assumption 3.1 (data-independent).
        rate: R(n) >= 0 with ``zeta * R(n) <= 1``.
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with an [`ApproxDP`][bayesdp.curves.ApproxDP] point.

    Raises:
        AssumptionError: an input out of range or ``zeta * rate > 1``.

    Examples:
        SEEDS §4.3 (eps = 1, delta = 1e-6, zeta = 2, R(n) = 1e-4): delta_out = 7.44656e-4.

        >>> proposition_3_2_i(1.0, delta_posterior=1e-6, zeta=2.0, rate=1e-4).curve.describe()
        '(1, 0.000744656)-DP'
    """
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate", rate)
    tv = up(_q(z) * _q(r))   # the total variation bound zeta R, rounded up (a float product can round below it)
    require(tv <= 1.0, "zeta*rate", tv, "must be <= 1 (it bounds a total variation distance)")
    cert = proposition_a_2(epsilon, delta_posterior, tv, mechanism, "004 Proposition 3.2(i)")
    return Certificate(mechanism=cert.mechanism, source=cert.source, curve=cert.curve,
                       assumptions={**cert.assumptions, "zeta": z, "rate": r,
                                    "convergence": "Assumption 3.1 with zeta, R data-independent"},
                       constants=cert.constants)


def proposition_3_2_ii(epsilon: float, delta_chain: float, zeta: float, rate_limit: float,
                       mechanism: str = "tv-transfer") -> Certificate:
    """004 Proposition 3.2(ii): X_n (eps, delta)-DP for every n and R(n) -> r => the posterior is
    (eps, delta + (1 + e^eps) zeta r)-DP.

    Args:
        epsilon: eps >= 0 of the chain.
        delta_chain: delta in [0, 1] of every X_n.
        zeta: zeta >= 0 of Assumption 3.1.
        rate_limit: r = lim R(n) >= 0 with ``zeta * r <= 1``.
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with an [`ApproxDP`][bayesdp.curves.ApproxDP] point.

    Raises:
        AssumptionError: an input out of range or ``zeta * rate_limit > 1``.

    Examples:
        >>> proposition_3_2_ii(1.0, delta_chain=1e-6, zeta=2.0, rate_limit=1e-4).constants
        {'delta_out': 0.0007446563656918169}
    """
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate_limit", rate_limit)
    tv = up(_q(z) * _q(r))   # the total variation bound zeta R, rounded up (a float product can round below it)
    require(tv <= 1.0, "zeta*rate_limit", tv, "must be <= 1 (it bounds a total variation distance)")
    cert = proposition_a_2(epsilon, delta_chain, tv, mechanism, "004 Proposition 3.2(ii)")
    return Certificate(mechanism=cert.mechanism, source=cert.source, curve=cert.curve,
                       assumptions={**cert.assumptions, "zeta": z, "rate_limit": r},
                       constants=cert.constants)


def corollary_3_3_threshold(epsilon: float, delta: float, zeta: float, rate_limit: float) -> float:
    """004 Corollary 3.3: if the posterior is not (eps, delta')-DP with the returned delta',
    some X_n is not (eps, delta)-DP (asymptotically exact chains cannot beat the posterior).

    Args:
        epsilon: eps >= 0.
        delta: delta in [0, 1].
        zeta: zeta >= 0 of Assumption 3.1.
        rate_limit: r = lim R(n) >= 0.

    Returns:
        ``delta' = delta + (1 + e^eps) zeta r``, rounded up (``inf`` when e^eps leaves the float range and
            zeta r > 0).

    Raises:
        AssumptionError: an input out of range.

    Examples:
        >>> round(corollary_3_3_threshold(1.0, 1e-6, zeta=2.0, rate_limit=1e-4), 9)
        0.000744656
    """
    e = _eps("epsilon", epsilon)
    d = _delta01("delta", delta, closed_right=True)
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate_limit", rate_limit)
    if z == 0.0 or r == 0.0:
        return d
    grow = exp_up(e)
    if math.isinf(grow):
        return math.inf
    return up(_q(d) + (1 + _q(grow)) * _q(z) * _q(r))


def proposition_3_4(epsilon: float, delta_posterior_violated: float, delta_chain: float) -> float:
    """004 Proposition 3.4 / A.3: if X_n is (eps, delta_n)-DP but the posterior is not (eps, delta)-DP
    with delta > delta_n, some dataset has ``TV(nu_D P^n, pi_D) > (delta - delta_n)/(1 + e^eps)``.

    Args:
        epsilon: eps >= 0.
        delta_posterior_violated: the delta the posterior violates, in [0, 1].
        delta_chain: delta_n in [0, 1] of the chain, < delta_posterior_violated.

    Returns:
        the lower bound on the total variation distance, rounded down (0 when e^eps leaves the float range).

    Raises:
        AssumptionError: an input out of range, or delta_posterior_violated <= delta_chain.

    Examples:
        >>> proposition_3_4(epsilon=0.0, delta_posterior_violated=0.5, delta_chain=0.1)   # 0.4 / 2, rounded down
        0.19999999999999998
    """
    e = _eps("epsilon", epsilon)
    d = _delta01("delta_posterior", delta_posterior_violated, closed_right=True)
    dn = _delta01("delta_chain", delta_chain, closed_right=True)
    if not d > dn:
        raise AssumptionError(
            f"delta_posterior = {d:.6g} must be > delta_chain = {dn:.6g} for 004 Proposition 3.4 "
            "(the chain must be strictly more private than the posterior)")
    grow = exp_up(e)
    if math.isinf(grow):
        return 0.0
    return down((_q(d) - _q(dn)) / (1 + _q(grow)))


# -- Laplace noise for a scalar estimate ----------------------------------


def laplace_delta(epsilon: float, sensitivity: float, scale: float) -> float:
    """Exact hockey-stick E_{e^eps} of two Laplace laws of scale b at distance eta
    (003 Lemma 1): ``max(0, 1 - exp((eps - eta/b)/2))``.

    Args:
        epsilon: eps.
        sensitivity: eta, the distance of the two means.
        scale: b > 0 (b = 0, no noise: 1 for eta != 0, 0 for eta = 0).

    Raises:
        AssumptionError: a NaN, or a negative sensitivity or scale.

    Returns:
        the delta of the Laplace mechanism at eps (unvalidated formula), rounded up: the exponent
            ``(eps - eta/b)/2`` is computed exactly and rounded down, expm1 pushed outward.

    Examples:
        >>> round(laplace_delta(0.0, sensitivity=1.0, scale=1.0), 6)    # TV: 1 - e^{-1/2}
        0.393469
    """
    for name, v in (("epsilon", epsilon), ("sensitivity", sensitivity), ("scale", scale)):
        # a NaN went through max(0, nan) = 0: delta 0, the most favourable answer, for an undefined input
        require(not math.isnan(v) and (name == "epsilon" or v >= 0.0), name, v,
                "must be a number" if name == "epsilon" else "must be >= 0",
                "pass the Laplace mechanism's epsilon, its sensitivity and its noise scale")
    if scale == 0.0:        # no noise: two point masses, apart unless eta = 0 (eta/b was a ZeroDivisionError)
        return 1.0 if sensitivity != 0.0 else 0.0
    if not all(math.isfinite(x) for x in (epsilon, sensitivity, scale)):   # no exact value: the float formula
        return max(0.0, -math.expm1((epsilon - sensitivity / scale) / 2.0))
    x = (_q(epsilon) - _q(sensitivity) / _q(scale)) / 2
    if x >= 0:
        return 0.0
    return min(1.0, round_up(-math.expm1(down(x))))


def laplace_noise_variance(scale: float) -> float:
    """Variance of Laplace(scale): ``2 scale^2`` (not 004 §3.2's eta/eps; SEEDS §6 row 10).

    Args:
        scale: b > 0.

    Returns:
        ``2 b^2``.

    Raises:
        AssumptionError: scale <= 0.

    Examples:
        >>> laplace_noise_variance(2.0)
        8.0
    """
    return up(2 * _q(positive("noise_scale", scale)) ** 2)   # exact, rounded up (inf beyond the float range)


def _laplace_route(window: float, extra_delta: float, epsilon: float | None, noise_scale: float | None,
                   what: str) -> tuple[float, float, DeltaProfile]:
    if (epsilon is None) == (noise_scale is None):
        raise AssumptionError(f"{what} needs exactly one of epsilon (to calibrate the Laplace scale) "
                              "and noise_scale")
    if noise_scale is None:
        eps_t = positive("epsilon", epsilon, "the Laplace noise is calibrated to a positive epsilon")
        scale = window / eps_t
        eps_t = up(_q(window) / _q(scale))   # the epsilon of the scale actually used (>= the requested one)
    else:
        scale = positive("noise_scale", noise_scale)
        eps_t = up(_q(window) / _q(scale))
    curve = DeltaProfile(lambda e: min(1.0, up(_q(laplace_delta(e, window, scale)) + _q(extra_delta))),
                         f"Laplace(scale {scale:.6g}) at sensitivity {window:.6g} + {extra_delta:.6g}")
    return scale, eps_t, curve


def proposition_3_7(coupling_window: float, coupling_delta: float, epsilon: float | None = None,
                    noise_scale: float | None = None, mechanism: str = "mc-estimate") -> Certificate:
    """004 Proposition 3.7 / A.5: if some coupling has ``P(|g_D - g_D'| <= eta) >= 1 - delta~``
    (Assumption 3.6) and L satisfies Assumption 3.5 for eta, ``g_D + L`` is (eps, delta + delta~)-DP.

    Laplace noise of scale eta/eps satisfies Assumption 3.5 with (eps, 0); the certificate's curve is
    the exact Laplace profile plus delta~.

    Args:
        coupling_window: eta > 0.
        coupling_delta: delta~ in [0, 1).
        epsilon: calibrate the Laplace scale to eta/epsilon (give this or ``noise_scale``).
        noise_scale: the Laplace scale b (then eps = eta/b).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`DeltaProfile`][bayesdp.curves.DeltaProfile] curve.

    Raises:
        AssumptionError: an input out of range, or both or neither of ``epsilon`` and ``noise_scale``.

    Examples:
        >>> cert = proposition_3_7(coupling_window=1.0, coupling_delta=0.01, epsilon=1.0)
        >>> cert.constants["noise_scale"], cert.delta(1.0)                 # (eps, 0 + delta~)
        (1.0, 0.01)
    """
    eta = positive("coupling_window", coupling_window)
    dt = _delta01("coupling_delta", coupling_delta)
    scale, eps_t, curve = _laplace_route(eta, dt, epsilon, noise_scale, "004 Proposition 3.7")
    return Certificate(
        mechanism=mechanism, source="004 Proposition 3.7", curve=curve,
        assumptions={"coupling_window": eta, "coupling_delta": dt},
        constants={"noise_scale": scale, "noise_variance": 2.0 * scale * scale, "laplace_epsilon": eps_t,
                   "sensitivity": eta, "delta_out": dt},
    )


def proposition_3_10(concentration: float, concentration_delta: float, posterior_sensitivity: float,
                     epsilon: float | None = None, noise_scale: float | None = None,
                     mechanism: str = "mc-estimate") -> Certificate:
    """004 Proposition 3.10: Laplace-noised Monte Carlo estimator.

    Assumption 3.8: ``P(|avg_D - pi_D(f)| <= C) >= 1 - delta~`` for every D (C, delta~ data-independent);
    Assumption 3.9: ``|pi_D(f) - pi_D'(f)| <= gamma_f``.  Laplace of scale ``(2C + gamma_f)/eps``
    gives ``(eps, 2 delta~ - delta~^2)``-DP.  The caller certifies both assumptions.

    Args:
        concentration: C >= 0 of Assumption 3.8.
        concentration_delta: delta~ in [0, 1).
        posterior_sensitivity: gamma_f >= 0 of Assumption 3.9.
        epsilon: calibrate the Laplace scale to ``(2C + gamma_f)/epsilon`` (give this or ``noise_scale``).
        noise_scale: the Laplace scale (then eps = (2C + gamma_f)/scale).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`DeltaProfile`][bayesdp.curves.DeltaProfile] curve.

    Raises:
        AssumptionError: an input out of range, 2C + gamma_f = 0, or both or neither of ``epsilon`` and
            ``noise_scale``.

    Examples:
        SEEDS §4.6: delta~ = 0.01 gives delta_out = 2 * 0.01 - 0.01^2 = 0.0199.

        >>> cert = proposition_3_10(concentration=0.1, concentration_delta=0.01, posterior_sensitivity=0.3, epsilon=1.0)
        >>> cert.constants["noise_scale"], round(cert.delta(1.0), 6)
        (0.5, 0.0199)
    """
    C = nonnegative("concentration", concentration, "declare C of 004 Assumption 3.8")
    dt = _delta01("concentration_delta", concentration_delta)
    gf = nonnegative("posterior_sensitivity", posterior_sensitivity, "declare gamma_f of 004 Assumption 3.9")
    window = up(2 * _q(C) + _q(gf))   # the sensitivity, rounded up (the float sum can round below it)
    if window <= 0:
        raise AssumptionError("2*concentration + posterior_sensitivity = 0: the estimate is data-independent; "
                              "no noise is needed (declare positive constants to calibrate noise)")
    extra = up(2 * _q(dt) - _q(dt) ** 2)
    scale, eps_t, curve = _laplace_route(window, extra, epsilon, noise_scale, "004 Proposition 3.10")
    return Certificate(
        mechanism=mechanism, source="004 Proposition 3.10", curve=curve,
        assumptions={"concentration": C, "concentration_delta": dt, "posterior_sensitivity": gf,
                     "chains": "run independently on D and D'"},
        constants={"noise_scale": scale, "noise_variance": 2.0 * scale * scale, "laplace_epsilon": eps_t,
                   "sensitivity": window, "delta_out": extra},
    )
