"""004 Section 3: posterior <-> chain <-> noisy Monte Carlo estimate.

* Proposition A.2 / 3.2 / Corollary 3.3: transfer of DP through a TV bound.
* Proposition 3.4 / A.3: TV lower bound when the chain is more private than the posterior.
* Propositions 3.7 / A.5 and 3.10: Laplace noise calibration for a Monte Carlo estimate.

Note (SEEDS §6 row 10): a Laplace variable of scale b has variance ``2 b^2``;
004 §3.2's ``eta/eps`` is wrong and is not used.
"""

from __future__ import annotations

import math

from ..certificate import Certificate
from ..curves import ApproxDP, DeltaProfile
from ..errors import AssumptionError, check_finite, nonnegative, positive, require


def _eps(name: str, value: float) -> float:
    return nonnegative(name, value)


def _delta01(name: str, value: float, closed_right: bool = False) -> float:
    x = check_finite(name, value)
    ok = 0.0 <= x <= 1.0 if closed_right else 0.0 <= x < 1.0
    require(ok, name, x, "must be in [0, 1]" if closed_right else "must be in [0, 1)")
    return x


def proposition_a_2(epsilon: float, delta: float, tv_bound: float, mechanism: str = "tv-transfer",
                    source: str = "004 Proposition A.2") -> Certificate:
    """If {mu_D} is (eps, delta)-DP and TV(mu_D, nu_D) <= b for every D, {nu_D} is
    (eps, delta + b (e^eps + 1))-DP."""
    e = _eps("epsilon_in", epsilon)
    d = _delta01("delta_in", delta, closed_right=True)
    b = _delta01("tv_bound", tv_bound, closed_right=True)
    # b (e^eps + 1) without overflow: once b e^eps > e the delta is capped at 1 anyway
    out = d + b + (math.exp(min(e + math.log(b), 1.0)) if b > 0 else 0.0)
    return Certificate(mechanism=mechanism, source=source, curve=ApproxDP(e, min(1.0, out)),
                       assumptions={"epsilon_in": e, "delta_in": d, "tv_bound": b},
                       constants={"delta_out": out})


def proposition_3_2_i(epsilon: float, delta_posterior: float, zeta: float, rate: float,
                      mechanism: str = "tv-transfer") -> Certificate:
    """Posterior (eps, delta)-DP and TV(nu P^n, pi_D) <= zeta R(n) (Assumption 3.1, data-uniform)
    => X_n is (eps, delta + zeta (e^eps + 1) R(n))-DP."""
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate", rate)
    require(z * r <= 1.0, "zeta*rate", z * r, "must be <= 1 (it bounds a total variation distance)")
    cert = proposition_a_2(epsilon, delta_posterior, z * r, mechanism, "004 Proposition 3.2(i)")
    return Certificate(mechanism=cert.mechanism, source=cert.source, curve=cert.curve,
                       assumptions={**cert.assumptions, "zeta": z, "rate": r,
                                    "convergence": "Assumption 3.1 with zeta, R data-independent"},
                       constants=cert.constants)


def proposition_3_2_ii(epsilon: float, delta_chain: float, zeta: float, rate_limit: float,
                       mechanism: str = "tv-transfer") -> Certificate:
    """X_n (eps, delta)-DP for every n and R(n) -> r => posterior is (eps, delta + (1 + e^eps) zeta r)-DP."""
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate_limit", rate_limit)
    require(z * r <= 1.0, "zeta*rate_limit", z * r, "must be <= 1 (it bounds a total variation distance)")
    cert = proposition_a_2(epsilon, delta_chain, z * r, mechanism, "004 Proposition 3.2(ii)")
    return Certificate(mechanism=cert.mechanism, source=cert.source, curve=cert.curve,
                       assumptions={**cert.assumptions, "zeta": z, "rate_limit": r},
                       constants=cert.constants)


def corollary_3_3_threshold(epsilon: float, delta: float, zeta: float, rate_limit: float) -> float:
    """004 Corollary 3.3: if the posterior is not (eps, delta')-DP with the returned delta',
    some X_n is not (eps, delta)-DP (asymptotically exact chains cannot beat the posterior)."""
    e = _eps("epsilon", epsilon)
    d = _delta01("delta", delta, closed_right=True)
    z = nonnegative("zeta", zeta)
    r = nonnegative("rate_limit", rate_limit)
    return d + (1.0 + math.exp(e)) * z * r


def proposition_3_4(epsilon: float, delta_posterior_violated: float, delta_chain: float) -> float:
    """004 Proposition 3.4 / A.3: if X_n is (eps, delta_n)-DP but the posterior is not (eps, delta)-DP
    with delta > delta_n, some dataset has ``TV(nu_D P^n, pi_D) > (delta - delta_n)/(1 + e^eps)``."""
    e = _eps("epsilon", epsilon)
    d = _delta01("delta_posterior", delta_posterior_violated, closed_right=True)
    dn = _delta01("delta_chain", delta_chain, closed_right=True)
    if not d > dn:
        raise AssumptionError(
            f"delta_posterior = {d:.6g} must be > delta_chain = {dn:.6g} for 004 Proposition 3.4 "
            "(the chain must be strictly more private than the posterior)")
    return (d - dn) / (1.0 + math.exp(e))


# -- Laplace noise for a scalar estimate ----------------------------------


def laplace_delta(epsilon: float, sensitivity: float, scale: float) -> float:
    """Exact hockey-stick E_{e^eps} of two Laplace laws of scale b at distance eta
    (003 Lemma 1): ``max(0, 1 - exp((eps - eta/b)/2))``."""
    return max(0.0, -math.expm1((epsilon - sensitivity / scale) / 2.0))


def laplace_noise_variance(scale: float) -> float:
    """Variance of Laplace(scale): ``2 scale^2`` (not 004 §3.2's eta/eps; SEEDS §6 row 10)."""
    return 2.0 * positive("noise_scale", scale) ** 2


def _laplace_route(window: float, extra_delta: float, epsilon: float | None, noise_scale: float | None,
                   what: str) -> tuple[float, float, DeltaProfile]:
    if (epsilon is None) == (noise_scale is None):
        raise AssumptionError(f"{what} needs exactly one of epsilon (to calibrate the Laplace scale) "
                              "and noise_scale")
    if noise_scale is None:
        eps_t = positive("epsilon", epsilon, "the Laplace noise is calibrated to a positive epsilon")
        scale = window / eps_t
    else:
        scale = positive("noise_scale", noise_scale)
        eps_t = window / scale
    curve = DeltaProfile(lambda e: min(1.0, laplace_delta(e, window, scale) + extra_delta),
                         f"Laplace(scale {scale:.6g}) at sensitivity {window:.6g} + {extra_delta:.6g}")
    return scale, eps_t, curve


def proposition_3_7(coupling_window: float, coupling_delta: float, epsilon: float | None = None,
                    noise_scale: float | None = None, mechanism: str = "mc-estimate") -> Certificate:
    """004 Proposition 3.7 / A.5: if some coupling has ``P(|g_D - g_D'| <= eta) >= 1 - delta~``
    (Assumption 3.6) and L satisfies Assumption 3.5 for eta, ``g_D + L`` is (eps, delta + delta~)-DP.
    Laplace noise of scale eta/eps satisfies Assumption 3.5 with (eps, 0)."""
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
    """
    C = nonnegative("concentration", concentration, "declare C of 004 Assumption 3.8")
    dt = _delta01("concentration_delta", concentration_delta)
    gf = nonnegative("posterior_sensitivity", posterior_sensitivity, "declare gamma_f of 004 Assumption 3.9")
    window = 2.0 * C + gf
    if window <= 0:
        raise AssumptionError("2*concentration + posterior_sensitivity = 0: the estimate is data-independent; "
                              "no noise is needed (declare positive constants to calibrate noise)")
    extra = 2.0 * dt - dt * dt
    scale, eps_t, curve = _laplace_route(window, extra, epsilon, noise_scale, "004 Proposition 3.10")
    return Certificate(
        mechanism=mechanism, source="004 Proposition 3.10", curve=curve,
        assumptions={"concentration": C, "concentration_delta": dt, "posterior_sensitivity": gf,
                     "chains": "run independently on D and D'"},
        constants={"noise_scale": scale, "noise_variance": 2.0 * scale * scale, "laplace_epsilon": eps_t,
                   "sensitivity": window, "delta_out": extra},
    )
