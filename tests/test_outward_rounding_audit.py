"""Issue 25 audit: constants that a certificate rests on are rounded outward.

Each test compares a constant with its exact real value, computed in rational arithmetic on the float
inputs (``fractions.Fraction``); the inputs were chosen (by a search over random decimal inputs) so
that the plain float formula lands on the unsafe side of the exact value.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

from bayesdp.mechanisms.registry import bound
from bayesdp.theorems import girsanov as G
from bayesdp.theorems import tight as TT
from bayesdp.theorems import transfer as T
from bayesdp.theorems.transfer import laplace_delta
from bayesdp.exact import up


def _route(report, source):
    return next(c for c in report.certificates if c.source == source)


# -- 004 Girsanov constants (RDP slope C/4) --------------------------------------------------------


def test_proposition_4_5_C1_is_an_upper_bound():
    c, beta, T_ = 0.5, 0.84, 2.31           # float c*c*beta*T is below the exact product
    assert c * c * beta * T_ < F(c) * F(c) * F(beta) * F(T_)
    C1 = G.proposition_4_5(c, beta, T_).constants["C1"]
    assert F(C1) >= F(c) * F(c) * F(beta) * F(T_)


def test_proposition_4_6_constants_are_upper_bounds():
    beta, c, T_ = 2.853, 2.814, 0.225       # T < 1 branch: beta c^2 T
    assert beta * c * c * T_ < F(beta) * F(c) ** 2 * F(T_)
    C = G.proposition_4_6(1.0, c, 1.0, beta, T_).constants["C"]
    assert F(C) >= F(beta) * F(c) ** 2 * F(T_)
    beta, Cc, L, off = 2.12, 2.2, 1.8, 2.7  # T >= 1 branch: beta (C (L + 1) + c)^2
    exact = F(beta) * (F(Cc) * (F(L) + 1) + F(off)) ** 2
    assert beta * (Cc * (L + 1.0) + off) ** 2 < exact
    C2 = G.proposition_4_6(L, off, Cc, beta, 2.0).constants["C2"]
    assert F(C2) >= exact


def test_theorem_5_4_C5_is_an_upper_bound():
    d, n, g, beta = 0.165, 555, 0.0013, 2.09
    exact = F(d) ** 2 * n * F(g) * F(beta)
    assert d * d * n * g * beta < exact
    assert F(G.theorem_5_4(d, g, n, beta).constants["C5"]) >= exact


def test_theorem_5_8_C8_is_an_upper_bound():
    beta, d, n, g, s = 2.205, 0.74, 962, 0.015, 24
    exact = F(beta) * F(d) ** 2 * n * F(g) / (s * s)
    assert beta * d * d * n * g / (s * s) < exact
    assert F(G.theorem_5_8(d, g, n, s, 1000, beta).constants["C8"]) >= exact


def test_girsanov_horizon_from_step_size_is_rounded_up():
    g, n = 0.01097, 363                      # float g*n is below the exact horizon
    assert g * n < F(g) * n
    rep = bound("girsanov-path", delta=1e-5, grad_diff=1.0, step_size=g, num_steps=n)
    cert = _route(rep, "004 Proposition 4.5")
    assert F(cert.assumptions["time"]) >= F(g) * n
    assert F(cert.constants["C1"]) >= F(g) * n


# -- total potential, SGLD offsets ------------------------------------------------------------------


def test_total_potential_constants_round_outward():
    mu, lv = 0.8, 0.231                      # float mu - lv is above the exact difference
    assert mu - lv > F(mu) - F(lv)
    m, _, _ = TT.total_potential_constants(mu, 1.0, lv, False)
    assert F(m) <= F(mu) - F(lv)
    L, lv = 2.79, 0.2529                     # float L + lv is below the exact sum
    assert L + lv < F(L) + F(lv)
    _, Lt, _ = TT.total_potential_constants(1.0, L, lv, True)
    assert F(Lt) >= F(L) + F(lv)


def test_exact_contraction_linear_v_offset_is_rounded_up():
    c, s = 2.8, 13                           # float 2c/s is below the exact quotient
    assert 2.0 * c / s < 2 * F(c) / s
    cert = TT.theorem_5_2_exact_contraction(1.0, 2.0, c, 0.1, 100, batch_size=s, linear_v=True)
    assert F(cert.constants["drift_offset"]) >= 2 * F(c) / s


def test_sgld_window_linear_v_offset_is_rounded_up():
    c, s = 2.8, 13
    rep = bound("sgld-final", delta=1e-5, strong_convexity=1.0, smoothness=2.0, grad_bound=c, step_size=0.1,
                num_steps=100, batch_size=s, data_size=100, linear_v=True)
    cert = _route(rep, TT.WINDOW_SOURCE)
    assert F(cert.assumptions["drift_offset"]) >= 2 * F(c) / s


def test_sgld_path_gdp_per_step_drift_is_rounded_up():
    d, s = 1.213, 34                         # float d/s is below the exact quotient
    assert d / s < F(d) / s
    rep = bound("sgld-path", delta=1e-5, grad_diff=d, step_size=0.01, num_steps=10, batch_size=s, data_size=100)
    cert = _route(rep, TT.PATH_GDP_SOURCE)
    assert F(cert.assumptions["step_drift_diff"]) >= F(d) / s


# -- 004 Propositions 3.7 / 3.10 (Laplace) ----------------------------------------------------------


def test_proposition_3_10_sensitivity_is_rounded_up():
    C, gf = 2.768, 0.773                     # float 2C + gf is below the exact sum
    assert 2.0 * C + gf < 2 * F(C) + F(gf)
    cert = T.proposition_3_10(C, 0.01, gf, epsilon=1.0)
    assert F(cert.constants["sensitivity"]) >= 2 * F(C) + F(gf)


def test_proposition_3_7_delta_profile_adds_upward():
    w, scale, dt, e = 1.62, 2.39, 0.11499999999999999, 0.57
    ld = laplace_delta(e, w, scale)
    assert ld + dt < F(ld) + F(dt)           # the float sum is below the exact sum
    cert = T.proposition_3_7(w, dt, noise_scale=scale)
    assert F(cert.curve.delta(e)) >= F(ld) + F(dt)


def test_proposition_3_10_delta_profile_adds_upward():
    C, gf, scale, dt, e = 2.3, 1.2, 2.4000000000000004, 0.003, 0.173
    extra = up(2 * F(dt) - F(dt) ** 2)
    ld = laplace_delta(e, 2.0 * C + gf, scale)
    assert ld + extra < F(ld) + F(extra)
    cert = T.proposition_3_10(C, dt, gf, noise_scale=scale)
    assert F(cert.curve.delta(e)) >= F(ld) + F(extra)


# -- publish: sensitivity windows -------------------------------------------------------------------


def test_sgld_k_plus_v_grad_bound_sum_is_rounded_up():
    from bayesdp.publish.sensitivity import SOURCE_K_PLUS_V, coupling_k_plus_v, best_coupling
    m, rg, pv = 134, 1.7, 2.99               # float m * rg + pv is below the exact sum
    exact = m * F(rg) + F(pv)
    assert m * rg + pv < exact
    b, failed = best_coupling(sampler="SGLD", step_size=0.1, strong_convexity=1.0, smoothness=1.0, grad_bound=1.0,
                              record_grad_bound=rg, data_size=m, prior_v_grad_bound=pv)
    assert b.source == SOURCE_K_PLUS_V
    assert F(b.assumptions["grad_bound"]) >= exact
    assert b.distance >= coupling_k_plus_v(0.1, 1.0, 1.0, float(exact), "SGLD").distance


def test_aggregate_windows_are_rounded_up():
    from bayesdp.publish.aggregate import aggregate_route
    a, b, k = -0.8, 2.617, 26                # float (b - a)/k is below the exact quotient
    exact = (F(b) - F(a)) / k
    assert (b - a) / k < exact
    r = aggregate_route(1, (a, b), k)
    assert F(r.sensitivity) >= exact and F(r.l2_sensitivity) >= exact
    a, b, k, d = -1.9, 2.1, 22, 9            # L2 window sqrt(9) (b - a)/k: the float product 3 w is below
    w = (b - a) / k
    assert 3 * w < 3 * F(w)
    r = aggregate_route(d, (a, b), k)
    assert F(r.l2_sensitivity) >= 3 * (F(b) - F(a)) / k
    assert F(r.sensitivity) >= d * (F(b) - F(a)) / k


# -- certificate -> dp-accounting event -------------------------------------------------------------


def test_curve_dp_event_noise_parameters_round_down():
    import mpmath
    from bayesdp.certificate import curve_dp_event
    from bayesdp.curves import GDP, ApproxDP
    mu = 1.193                               # float 1/mu is above the exact 1/mu: it would claim more noise
    assert 1.0 / mu > 1 / F(mu)
    assert F(curve_dp_event(GDP(mu)).noise_multiplier) <= 1 / F(mu)
    eps = 0.478                              # float 2/(1 + exp(eps)) is above the exact value
    with mpmath.workdps(60):
        exact = 2 / (1 + mpmath.exp(mpmath.mpf(eps)))
        assert mpmath.mpf(2.0 / (1.0 + math.exp(eps))) > exact
        assert mpmath.mpf(curve_dp_event(ApproxDP(eps)).noise_parameter) <= exact


# -- 002 (mixing) ---------------------------------------------------------------------------------


def _mp(x):
    import mpmath
    return mpmath.mpf(x)


def test_002_theorem_1_pairs_are_rounded_up():
    import mpmath
    from bayesdp.theorems import mixing as X
    g, d = 0.9443333333333334, 0.01991       # Dobrushin: float g * delta is below the exact product
    assert g * d < F(g) * F(d)
    assert F(X.theorem_1(1.0, d, g, "dobrushin").constants["delta_out"]) >= F(g) * F(d)
    with mpmath.workdps(50):
        e, g = 0.18, 0.7999999999999999      # eps' = log1p(g expm1(eps)): the float value is below
        exact = mpmath.log1p(_mp(g) * mpmath.expm1(_mp(e)))
        assert _mp(math.log1p(g * math.expm1(e))) < exact
        assert _mp(X.theorem_1(e, 0.0, g, "doeblin").constants["epsilon_out"]) >= exact
        for cond, (e, d, g) in (("doeblin", (1.906, 0.011399999999999999, 0.9443333333333334)),
                                ("ultra-mixing", (2.0, 0.0043, 0.8733333333333334))):
            E, D, G = _mp(e), _mp(d), _mp(g)
            beta = G + (1 - G) * mpmath.exp(-E)
            exact = G * (1 - beta * (1 - D)) if cond == "doeblin" else G * D * beta
            assert _mp(X.theorem_1(e, d, g, cond).constants["delta_out"]) >= exact, cond


def test_002_examples_1_and_3_kappa_rounded_up():
    from bayesdp.theorems import mixing as X
    d, a, b = 1.677, 0.823, 0.73
    exact = F(d) ** 2 / (2 * (F(a) ** 2 + F(b) ** 2))
    assert d * d / (2.0 * (a * a + b * b)) < exact
    assert F(X.example_1(d, a, b).constants["kappa"]) >= exact
    d, a, b, L = 0.63, 0.6, 0.502, 0.4666666666666666
    exact = F(d) ** 2 / (2 * (F(a) ** 2 + F(b) ** 2 / F(L) ** 2))
    assert d ** 2 / (2.0 * (a ** 2 + b ** 2 / L ** 2)) < exact
    assert F(X.example_3(d, a, b, L).constants["kappa"]) >= exact


def test_002_theorem_5_last_index_kappa_rounded_up():
    from bayesdp.theorems import mixing as X
    C, s = 1.0, 1.664                        # index = n: 2 C^2 / s^2 as a float is below the exact value
    assert 2.0 * C * C / (s * s) < 2 * F(C) ** 2 / F(s) ** 2
    cert = X.theorem_5(C, 1.0, 0.5, 0.1, s, 10, index=10)
    assert F(cert.constants["eps_i"]) >= 2 * F(C) ** 2 / F(s) ** 2


def test_002_corollary_7_lambda_rounded_up():
    import mpmath
    from bayesdp.theorems import mixing as X
    th, rho, t, d = 1.496, 0.61, 2.9, 2.85
    with mpmath.workdps(50):
        exact = _mp(th) * _mp(d) ** 2 / (2 * _mp(rho) ** 2 * mpmath.expm1(2 * _mp(th) * _mp(t)))
        assert _mp(th * d * d / (2.0 * rho * rho * math.expm1(2.0 * th * t))) < exact
        assert _mp(X.corollary_7(th, rho, t, d).constants["Lambda"]) >= exact


def test_002_laplace_rdp_rounded_up():
    import mpmath
    from bayesdp.theorems import mixing as X
    a, z = 2.162, 0.254
    with mpmath.workdps(50):
        A, Z = _mp(a), _mp(z)
        exact = mpmath.log(A / (2 * A - 1) * mpmath.exp(Z * (A - 1))
                           + (A - 1) / (2 * A - 1) * mpmath.exp(-Z * A)) / (A - 1)
        assert _mp(X._log_g(a, z) / (a - 1.0)) < exact
        assert _mp(X.laplace_rdp(a, z)) >= exact


# -- 001 (PABI) -----------------------------------------------------------------------------------


def test_001_modulus_params_rounded_up():
    import mpmath
    from bayesdp.theorems import pabi as P
    eta, L = 0.1, 1.2                        # convex-Lipschitz h = (2 eta L)^2: the float is below
    assert (2.0 * eta * L) ** 2 < (2 * F(eta) * F(L)) ** 2
    assert F(P.modulus_params("convex-lipschitz", eta, lipschitz=L)[1]) >= (2 * F(eta) * F(L)) ** 2
    eta, beta = 0.0268, 0.7                  # nonconvex-smooth c = (1 + eta beta)^2
    assert (1.0 + eta * beta) ** 2 < (1 + F(eta) * F(beta)) ** 2
    assert F(P.modulus_params("nonconvex-smooth", eta, smoothness=beta)[0]) >= (1 + F(eta) * F(beta)) ** 2
    eta, lam = 0.1668, 0.995                 # strongly-dissipative h = 2 eta lambda
    assert 2.0 * eta * lam < 2 * F(eta) * F(lam)
    h = P.modulus_params("strongly-dissipative", eta, smoothness=1.0, strong_convexity=0.5, dissipativity=lam)[1]
    assert F(h) >= 2 * F(eta) * F(lam)
    eta, p, M = 0.21000000000000002, 0.07, 0.97    # convex-weakly-smooth h = 4 eta^(2q) (1-p)/(1+p) (M/2)^(2q)
    with mpmath.workdps(50):
        Pm = _mp(p)
        q = 1 / (1 - Pm)
        exact = 4 * _mp(eta) ** (2 * q) * (1 - Pm) / (1 + Pm) * (_mp(M) / 2) ** (2 * q)
        qf = 1.0 / (1.0 - p)
        old = math.exp(math.log(4.0) + 2 * qf * math.log(eta) + math.log((1 - p) / (1 + p))
                       + 2 * qf * math.log(M / 2.0))
        assert _mp(old) < exact
        h = P.modulus_params("convex-weakly-smooth", eta, holder_exponent=p, holder_constant=M)[1]
        assert _mp(h) >= exact


def test_001_pnsgd_pabi_constants_rounded_outward():
    from bayesdp.theorems import pabi as P
    eta, s = 0.0624, 1.8                     # the noise variance (eta s)^2 as a float is ABOVE the exact value
    assert (eta * s) ** 2 > (F(eta) * F(s)) ** 2
    L = 1.2
    cert = P.pnsgd_pabi(L, 1.0, 0.5, eta, s, 10, index=10)   # the last index: kappa = (2 eta L)^2 / (2 s2)
    exact = (2 * F(eta) * F(L)) ** 2 / (2 * (F(eta) * F(s)) ** 2)
    assert F(cert.constants["kappa"]) >= exact
    eta, L = 0.1, 1.2                        # the initial W_inf 2 eta L: the float is below
    assert 2.0 * eta * L < 2 * F(eta) * F(L)
    assert F(P.pnsgd_pabi(L, 1.0, 0.5, eta, 1.0, 10).constants["initial_w_inf"]) >= 2 * F(eta) * F(L)


def test_001_constant_coefficient_large_power_rounded_up():
    import mpmath
    from bayesdp.theorems import pabi as P
    c, T = 0.454, 823                        # c^T (1 - c)/(1 - c^T): exp(T log c) is off by ~T|log c| ulps
    with mpmath.workdps(50):
        C = _mp(c)
        exact = (1 - C) * C ** T / (1 - C ** T)
        assert _mp(P.constant_coefficient(c, 0.0, 0.5, 1.0, T)) >= exact


# -- 003 (hockey-stick) ---------------------------------------------------------------------------


def _theta_exact(r, e):
    import mpmath
    return mpmath.ncdf(-e / r + r / 2) - mpmath.exp(e) * mpmath.ncdf(-e / r - r / 2)


def test_003_theorem_3_delta_rounded_up():
    import mpmath
    from bayesdp.theorems import hockey_stick as H
    e, L, v, eta, D, n, i = 0.13, 2.4, 2.1, 0.5, 0.27999999999999997, 40, 9   # M = 1 (rho = 0)
    cert = H.theorem_3(L, 1.0, 0.0, eta, v, D, n, i)
    with mpmath.workdps(50):
        first = -mpmath.expm1(_mp(e) / 2 - _mp(L) / _mp(v))
        second = -mpmath.expm1(_mp(e) / 2 - _mp(D) / (2 * _mp(eta) * _mp(v)))
        assert _mp(cert.delta(e)) >= first * second ** (n - i)
    L, v = 1.32, 0.44                        # the zero-delta threshold 2L/v: the float is below
    assert 2.0 * L / v < 2 * F(L) / F(v)
    assert F(H.theorem_3(L, 1.0, 0.0, 0.5, v, 100.0, 10, 10).constants["zero_delta_epsilon"]) >= 2 * F(L) / F(v)


def test_003_theorem_4_delta_rounded_up():
    import mpmath
    from bayesdp.theorems import hockey_stick as H
    e, L, s, eta, D, n, i = 3.0, 0.882, 2.0, 0.5, 0.71, 40, 39
    cert = H.theorem_4(L, 1.0, 0.0, eta, s, D, n, i)
    with mpmath.workdps(60):
        exact = _theta_exact(2 * _mp(L) / _mp(s), _mp(e)) * _theta_exact(_mp(D) / (_mp(eta) * _mp(s)), _mp(e))
        assert _mp(cert.delta(e)) >= exact


def test_003_proposition_1_rounded_up():
    import mpmath
    from bayesdp.theorems import hockey_stick as H
    L, s, M, n, i = 0.361, 1.9, 0.801, 40, 24
    with mpmath.workdps(50):
        exact = 2 * _mp(L) ** 2 / _mp(s) ** 2 / (n - i) * _mp(M) ** (n - i + 1)
        assert _mp(H.proposition_1_kappa(L, s, M, n, i)) >= exact
        e, k = 3.8, 0.96
        assert _mp(H.proposition_1_delta(e, k)) >= mpmath.exp(-(_mp(e) - _mp(k)) ** 2 / (4 * _mp(k)))


# -- curves.compose ---------------------------------------------------------------------------------


def test_compose_rounds_up():
    from bayesdp.curves import GDP, ApproxDP, compose
    a, b = 0.8, 1.86                         # sqrt(a^2 + b^2) in floats is below the exact root
    assert F(math.sqrt(a * a + b * b)) ** 2 < F(a) ** 2 + F(b) ** 2
    assert F(compose([GDP(a), GDP(b)]).mu) ** 2 >= F(a) ** 2 + F(b) ** 2
    e1, e2, d1, d2 = 2.814, 0.9, 0.00299, 0.002411     # float sums below the exact sums
    assert e1 + e2 < F(e1) + F(e2) and d1 + d2 < F(d1) + F(d2)
    c = compose([ApproxDP(e1, d1), ApproxDP(e2, d2)])
    assert F(c.eps0) >= F(e1) + F(e2) and F(c.delta0) >= F(d1) + F(d2)


# -- step-size conditions eta <= 2/beta, ReleaseResult.to_dp_event -----------------------------------


def test_step_size_condition_2_over_beta_is_exact():
    import pytest
    from bayesdp.errors import AssumptionError
    from bayesdp.theorems import hockey_stick as H
    from bayesdp.theorems import pabi as P
    beta = 0.3
    eta = 2.0 / beta                         # the float 2/beta is ABOVE the exact 2/beta
    assert F(eta) * F(beta) > 2
    with pytest.raises(AssumptionError, match="must be <= 2/smoothness"):
        H.sc_step_lipschitz(eta, beta, 0.0)
    with pytest.raises(AssumptionError, match="must be <= 2/smoothness"):
        P.modulus_params("convex-smooth", eta, smoothness=beta)
    eta = math.nextafter(eta, 0.0)           # the float below is within the condition
    assert H.sc_step_lipschitz(eta, beta, 0.0) == 1.0


def test_release_result_dp_event_parameters_round_in_the_safe_direction():
    import mpmath
    import numpy as np
    from bayesdp.publish.result import ReleaseResult

    def result(**kw):
        base = dict(values=np.zeros(1), names=("a",), noise_scale=1.0, noise_variance=2.0, sensitivity=1.0,
                    proven_sensitivity=1.0, grid=0.0, epsilon=1.0, delta=0.0, source="s", certificate=None,
                    items=(), remaining_budget={}, ledger="")
        base.update(kw)
        return ReleaseResult(**base)

    mu = 1.193                               # 1/mu: the float is above the exact value
    assert F(result(dp_event={"type": "gdp", "mu": mu}).to_dp_event().noise_multiplier) <= 1 / F(mu)
    eps = 0.478                              # 2/(1 + e^eps): the float is above the exact value
    with mpmath.workdps(60):
        exact = 2 / (1 + mpmath.exp(_mp(eps)))
        assert _mp(result(epsilon=eps, dp_event={"coords": 2}).to_dp_event().noise_parameter) <= exact
    g, b = 2.0 ** -15, 1.5                   # discrete Laplace parameter grid / noise_scale: rounded up
    assert g / b < F(g) / F(b)
    ev = result(dp_event={"coords": 1, "grid": g, "noise_scale": b, "l1_sensitivity": 1.0}).to_dp_event()
    assert F(ev.noise_parameter) >= F(g) / F(b)


def test_002_theorem_5_tight_kappa_large_power_rounded_up():
    import mpmath
    from bayesdp.theorems import mixing as X
    L, r = 0.708, 259                        # r L^(2r) ((1 - L)/(1 - L^r))^2 / 2: exp(2 r log L) is off by ~2r|log L| ulps
    with mpmath.workdps(50):
        Lm = _mp(L)
        exact = r * Lm ** (2 * r) * ((1 - Lm) / (1 - Lm ** r)) ** 2 / 2
        assert _mp(X.pabi_contractive_rdp(1.0, 1.0, L, r, 1.0, tight=True)) >= exact


def test_gaussian_certificate_refuses_a_curve_above_the_stated_epsilon_by_any_amount():
    # the check allowed the curve's epsilon to exceed the release's by a relative 1e-9 (the certificate then
    # recorded the smaller epsilon); the calibration never needs that slack (noise.gaussian_calibration)
    import pytest
    from bayesdp.curves import RDP
    from bayesdp.errors import AssumptionError
    from bayesdp.publish.sensitivity import coupling_route, coupling_strongly_convex

    route = coupling_route(coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0,
                                                    grad_diff=1.0), lipschitz=1.0)
    rho, delta = 0.05, 1e-5
    e = RDP.linear(rho).epsilon(delta)
    cert = route.gaussian_certificate(e, delta, rho, sigma=1.0, l2_window=1.0, num_coords=1)
    assert cert.constants["epsilon"] == e
    with pytest.raises(AssumptionError, match="noise_scale"):
        route.gaussian_certificate(e * (1 - 1e-12), delta, rho, sigma=1.0, l2_window=1.0, num_coords=1)


def test_sgm_bound_hypotheses_refuse_orders_just_beyond_the_exact_boundary():
    # 001 Lemma A.18's second condition alpha <= (M^2 s^2/2 - log(5 s^2)) / (M + log(q alpha) + 1/(2 s^2)),
    # M = log(1 + 1/(q (alpha - 1))): at these orders (found by bisection on the exact boundary, then stepping by
    # ulps) the float formulas said it holds and 60-digit arithmetic says it does not
    import mpmath
    from bayesdp.theorems.pabi import sgm_bound_applies

    def exact_second(a, q, s):
        with mpmath.workdps(60):
            A, Q, S = mpmath.mpf(a), mpmath.mpf(q), mpmath.mpf(s)
            M = mpmath.log1p(1 / (Q * (A - 1)))
            return A <= (M * M * S * S / 2 - mpmath.log(5 * S * S)) / (M + mpmath.log(Q * A) + 1 / (2 * S * S))

    for a, q, s in ((89.33269953473366, 0.026394842137243833, 42.9819518991127),
                    (28.709593762397787, 0.1241510718446022, 40.28127415223361),
                    (5.125586155902881, 0.14507093558455103, 4.096878454151092)):
        assert not exact_second(a, q, s)
        assert not sgm_bound_applies(a, q, s)
    # away from the boundary the answer is unchanged
    assert sgm_bound_applies(2.0, 0.01, 10.0) and not sgm_bound_applies(2.0, 0.3, 10.0)
    assert not sgm_bound_applies(2.0, 0.01, 3.9)


def test_linear_rdp_slope_of_a_subnormal_constant_is_not_rounded_to_zero():
    # alpha C / 4 with C = 5e-324 (the smallest subnormal): the float C / 4.0 is 0.0, below the exact 1.25e-324
    assert 5e-324 / 4.0 == 0.0
    assert F(G._linear(5e-324).kappa) >= F(5e-324) / 4
    assert G._linear(1.0).kappa == 0.25                      # exact for normal floats, unchanged


def test_rdp_composition_and_gdp_as_rdp_round_up():
    # composing linear RDP curves adds their slopes; mu-GDP as RDP has slope mu^2/2: both float results can land
    # below the exact values (1.1^2/2 and 1.43 + 1.75 here)
    from bayesdp.curves import GDP, RDP
    assert 1.1 ** 2 / 2 < F(1.1) ** 2 / 2
    assert F(GDP(1.1).as_rdp().kappa) >= F(1.1) ** 2 / 2
    assert F(GDP(1.1).rdp(3.0)) >= 3 * F(1.1) ** 2 / 2
    a, b = 1.43, 1.75
    assert F(a + b) < F(a) + F(b)
    assert F((RDP.linear(a) + RDP.linear(b)).kappa) >= F(a) + F(b)


def test_laplace_rdp_of_a_tiny_scale_ratio_keeps_its_digits():
    # log g_alpha(z) = log(1 + alpha z^2/2 + ...) loses about 2 log10(1/z) digits: at z = 1e-40 a fixed 80 digits
    # left none; the value is alpha z^2 / 2 to first order (1e-80 at alpha = 2), never below the exact one
    import mpmath
    from bayesdp.theorems.mixing import laplace_rdp
    for z in (1e-40, 1e-12):
        v = laplace_rdp(2.0, z)
        with mpmath.workdps(300):
            A, Z = mpmath.mpf(2), mpmath.mpf(z)
            exact = mpmath.log(A / (2 * A - 1) * mpmath.exp(Z * (A - 1)) + (A - 1) / (2 * A - 1) * mpmath.exp(-Z * A))
            assert exact <= mpmath.mpf(v) <= exact * (1 + mpmath.mpf(10) ** -14)


def test_iterated_laplace_rdp_of_a_tiny_scale_ratio_is_never_below_the_exact_bound():
    # 002 Example 2 at Delta/lambda ~ 1e-41: each log g cancels about 82 digits, and a fixed 80 returned 0.0 for
    # the exact minimum 4.5e-82 (Delta = 3e-41, alpha = 2).  Any theta gives a valid bound, so the returned value
    # must be at least the exact minimum (at theta = 1/2 for lam1 = lam2, by symmetry and log-convexity of g)
    import mpmath
    from bayesdp.theorems.mixing import iterated_laplace_rdp
    for d in (3e-41, 7e-42, 1e-40, 5e-39, 1e-200):
        for a in (1.5, 2.0, 10.0):
            v = iterated_laplace_rdp(a, d, 1.0, 1.0)
            with mpmath.workdps(900):
                A, Z = mpmath.mpf(a), mpmath.mpf(d) / 2
                lg = mpmath.log(A / (2 * A - 1) * mpmath.exp(Z * (A - 1)) + (A - 1) / (2 * A - 1) * mpmath.exp(-Z * A))
                exact = 2 * lg / (A - 1)
                assert exact > 0 and mpmath.mpf(v) >= exact, (d, a, v, exact)


def test_002_theorem_4_kappa_does_not_underflow_or_overflow_to_zero():
    # alpha Delta^2 L^(r+1)/(2 r sigma^2) in floats: L^(r+1) underflowed to 0 (r = 7000, L = 0.825 here: 002 Theorem 5
    # certified eps_i = 0.0 for a Lipschitz constant 1e150, exact 4.5e-289), or sigma^2 overflowed to inf (Delta =
    # 1e100, sigma = 1e200: 0.0 for the exact 1.0e-202); a subnormal L^(r+1) lost its relative digits
    import mpmath
    from bayesdp.theorems import mixing as X

    def exact(a, d, L, r, s, tight):
        with mpmath.workdps(60):
            return mpmath.mpf(a) * mpmath.mpf(d) ** 2 * (1 if tight else mpmath.mpf(L) ** (r + 1)) / (
                2 * r * mpmath.mpf(s) ** 2)

    for a, d, L, r, s, tight in ((1.0, 2e150, 0.8250286473253903, 7000, 1.0, False), (1.0, 1e100, 0.5, 3, 1e200, False),
                                 (1.0, 1e100, 1.0, 3, 1e200, True), (3.0, 1e150, 0.9, 7000, 1.0, False),
                                 (2.0, 1.0, 0.7, 5, 1.0, False)):
        v = X.pabi_contractive_rdp(a, d, L, r, s, tight=tight)
        ex = exact(a, d, L, r, s, tight)
        assert ex <= mpmath.mpf(v) <= ex * (1 + mpmath.mpf(10) ** -14), (a, d, L, r, s, tight, v, ex)
    cert = X.theorem_5(1e150, 1.0, 0.19, 1.0, 1.0, 7001, 1)
    M = cert.constants["M"]
    assert mpmath.mpf(cert.constants["eps_i"]) >= exact(1.0, 2e150, M, 7000, 1.0, False) > 0


def test_004_final_constant_with_a_subnormal_inverse_temperature_is_never_below_the_exact_one():
    # beta c_off^2 T and beta (C (L + 1) + c_off)^2 in floats: beta * c_off is subnormal here and loses its relative
    # digits, so the rounded-up float product still landed below the exact constant (2.298172622863e-305 for the
    # exact 2.298172622868e-305); 004 Theorem 5.2 at beta = 5.73e-321 inherited it.  And the exact-contraction
    # route's alpha K/4 with a subnormal K was 0.0
    from bayesdp.theorems.tight import theorem_5_2_exact_contraction
    for beta, c, T in ((5.73e-321, 80847965.23897447, 0.6134819824801316),
                       (1.136e-321, 10443564.510624988, 0.8623831927780725)):
        C, _ = G.final_constant(c, 0.0, 1.0, beta, T)
        assert F(C) >= F(beta) * F(c) ** 2 * F(T)
    for beta, c, cp, L in ((5.73e-321, 80847965.23897447, 1e5, 0.5), (1.136e-321, 1e5, 10443564.510624988, 2.0)):
        C, _ = G.final_constant(c, cp, L, beta, 2.0)
        assert F(C) >= F(beta) * (F(cp) * (F(L) + 1) + F(c)) ** 2
    beta, c = 5.73e-321, 80847965.23897447
    cert = G.theorem_5_2(1.0, 1.0, c, 0.1, 5, inverse_temperature=beta)       # n gamma < 1: beta (2c)^2 n gamma
    assert F(cert.constants["C6*"]) >= F(beta) * 4 * F(c) ** 2 * 5 * F(0.1)
    assert G.final_constant(2.0, 1.0, 1.0, 1.0, 2.0) == (16.0, "")            # normal inputs: exact, unchanged
    cert = theorem_5_2_exact_contraction(1.0, 2.0, grad_bound=1.0, step_size=0.1, num_steps=1,
                                         inverse_temperature=5e-324)
    assert cert.constants["C"] > 0 and F(cert.curve.kappa) >= F(cert.constants["C"]) / 4


def test_001_constant_coefficient_never_underflows_below_the_exact_kappa():
    # (D^2 c^T (1-c)/(1-c^T) + h sum)/(2 sigma^2) in floats: D^2 = 1e-340 underflowed to 0 (kappa 0.0 for the exact
    # 5e-41), or the subnormal D^2 = 1e-320 lost its digits (4.99994e-21 for the exact 5e-21); pabi's variance s * s
    # was a subnormal float too (kappa 5.00241e-11 for the exact 5.00247e-11), and pnsgd_pabi's variance
    # (eta sigma)^2 underflowed to 0 (a ZeroDivisionError at i = n, a refusal at i < n)
    from bayesdp.theorems import pabi as P
    for D, s2 in ((1e-160, 1e-300), (1.1e-160, 3e-300), (1e-170, 1e-300)):
        assert F(P.constant_coefficient(1.0, 0.0, s2, D, 1)) >= F(D) ** 2 / (2 * F(s2))
    assert F(P.constant_coefficient(2.0, 0.0, 1e-300, 1e-165, 1)) >= F(1e-165) ** 2 / (2 * F(1e-300))   # c^1(1-c)/(1-c^1) = 1
    assert F(P.constant_coefficient(0.5, 1e-320, 1e-300, 0.0, 1)) >= F(1e-320) / (2 * F(1e-300))        # h * 1
    cert = P.pabi("convex-lipschitz", 1e-155, 1e-160, 1, 1e-170, lipschitz=1e-5)
    h = F(cert.constants["h"])
    assert F(cert.constants["kappa"]) >= (F(1e-160) ** 2 + h) / (2 * F(1e-155) ** 2)
    assert P.pnsgd_pabi(1.0, 1.0, 0.5, 1e-170, 1.0, 10, 10).constants["kappa"] == 2.0     # 2 L^2/sigma^2
    assert F(P.pnsgd_pabi(1.0, 1.0, 0.5, 1e-170, 1.0, 10, 5).constants["kappa"]) >= F(2) / 5   # c = 1: (2 L)^2/(2 r)
    assert round(P.constant_coefficient(1.0, 0.04, 1.0, 1.0, 2), 12) == 0.28               # ordinary inputs unchanged


def test_003_hockey_stick_helpers_are_upper_bounds():
    # theta_{e^eps}(r) = Q(eps/r - r/2) - e^eps Q(eps/r + r/2) in floats cancels: contraction_coefficient_gaussian
    # (documented as an upper bound) landed 7e-8 (relative) below the exact value at r = 1.6e-6; it was NaN at eps =
    # 1e160.  Lemma 1's Laplace value, its contraction coefficient and the SDPI product were float expressions too
    import mpmath
    from bayesdp.theorems import hockey_stick as H

    def theta(r, e):
        with mpmath.workdps(100):
            R, E = mpmath.mpf(r), mpmath.mpf(e)
            return mpmath.ncdf(-E / R + R / 2) - mpmath.exp(E) * mpmath.ncdf(-E / R - R / 2)

    for r, e in ((1.6228343044437797e-06, 1.4500791842340582e-05), (1.6610657455683716e-06, 8.897461419829293e-06),
                 (5.4864302741818775e-06, 2.2772283579832188e-05), (1.0, 0.5)):
        assert mpmath.mpf(H.contraction_coefficient_gaussian(e, r, 1.0, 1.0)) >= theta(r, e)
        assert mpmath.mpf(H.theta_gamma(r, e)) >= theta(r, e)
        assert mpmath.mpf(H.gaussian_hockey_stick(-r, 1.0, e)) >= theta(r, e)
    assert H.theta_gamma(10.0, 1e160) >= 0.0 and H.contraction_coefficient_gaussian(1e160, 1.0, 10.0, 1.0) >= 0.0
    assert abs(H.theta_gamma(1.0, 0.0) - 0.38292492254802624) < 1e-15
    with mpmath.workdps(60):
        for gap, v, e in ((0.3, 0.1, 1.0), (1e-300, 1.0, 0.0), (2.0, 1.0, 1.0), (0.7, 0.3, 0.1)):
            G_, V, E = mpmath.mpf(gap), mpmath.mpf(v), mpmath.mpf(e)
            exact_ = max(0, -mpmath.expm1((V * E - G_) / (2 * V)))
            assert mpmath.mpf(H.laplace_hockey_stick(gap, v, e)) >= exact_
        assert mpmath.mpf(H.contraction_coefficient_laplace(0.1, 0.3, 0.7, 0.3)) >= \
            -mpmath.expm1((mpmath.mpf(0.3) * mpmath.mpf(0.1) - mpmath.mpf(0.3) * mpmath.mpf(0.7)) / (2 * mpmath.mpf(0.3)))
    assert F(H.sdpi(0.1, 0.3)) >= F(0.1) * F(0.3)


def test_001_theorems_5_2_and_5_4_kappa_never_underflow_below_the_exact_bound():
    # kappa(R) in floats: L^2 sigma^2, eta^2 sigma^2 under- or overflowed.  Theorem 5.4 at sigma = 1e155, L = 1e100
    # certified kappa = 1e-191 (exact >= 52 L^2/(n^2 sigma^2) = 5.2e-115 at R = 1); Theorem 5.2 at L = 1e-170,
    # sigma = 1e-160 gave 0.0 (exact >= 16 L^2 R/(n^2 sigma^2)), and NaN at eta = sigma = 1e160; eq. (22) divided
    # by an A that underflowed to 0 (a ZeroDivisionError)
    import mpmath
    import warnings
    from bayesdp.theorems import pabi as P
    warnings.simplefilter("ignore")
    with mpmath.workdps(60):
        c = P.theorem_5_4(1e100, 1e-200, 1e50, 1e-10, 1e155, 1000, 2, 10)
        assert mpmath.mpf(c.constants["kappa"]) >= 52 * mpmath.mpf(1e100) ** 2 / (10 ** 6 * mpmath.mpf(1e155) ** 2)
        c = P.theorem_5_2(1e-170, 0.5, 1.0, 1.0, 1.0, 1e-160, 1000, 20, 10)
        assert mpmath.mpf(c.constants["kappa"]) >= 16 * mpmath.mpf(1e-170) ** 2 / (10 ** 6 * mpmath.mpf(1e-160) ** 2)
        c = P.theorem_5_2(1.0, 0.5, 1.0, 1e50, 1e160, 1e160, 1000, 20, 10)
        assert c.constants["kappa"] > 0 and not math.isnan(c.constants["kappa"])
        r = P.noisy_sgd_dp_nonconvex(1e-5, 1e-170, 1.0, 1e-170, 1.0, 1e160, 1000, 2, 1000)
        a, A = mpmath.mpf(r["alpha"]), P._theorem_5_4_A_mp(1e-170, 1.0, 1e-170, 1.0, 1000)
        assert 1 < a <= r["alpha_star"] and mpmath.mpf(r["epsilon"]) >= a * A / mpmath.mpf(1e160) ** 2 - \
            mpmath.log(mpmath.mpf(1e-5)) / (a - 1)
    # ordinary inputs: unchanged (the docstrings' values)
    c = P.theorem_5_4(1.0, 1.0, 1.0, 0.01, math.sqrt(10), 1000, 2, 1000)
    assert c.constants["Tbar"] == 35 and abs(c.constants["kappa"] - 20.1032010566994) < 1e-12


def test_rdp_epsilon_near_delta_one_is_never_below_the_exact_cks_infimum():
    # CKS20's log(1 - 1/alpha) as log1p(-1/alpha) lost ulp(1)/(alpha - 1) to the rounding of 1/alpha; at delta close
    # to 1 the optimal order has alpha - 1 ~ 1e-6 and epsilon came out 2.8e-11 below the exact infimum over alpha
    # (178.74637478572404 for 178.74637478575226 at kappa = 192.56, delta = 0.999999)
    import mpmath
    from bayesdp.curves import RDP

    def cks_inf(k, d):   # golden section on t = log(alpha - 1), 60 digits
        with mpmath.workdps(60):
            K, L = mpmath.mpf(k), -mpmath.log(mpmath.mpf(d))
            f = lambda t: K * (1 + mpmath.exp(t)) + t - mpmath.log1p(mpmath.exp(t)) + \
                (L - mpmath.log1p(mpmath.exp(t))) / mpmath.exp(t)   # noqa: E731
            a, b = mpmath.mpf(-40), mpmath.mpf(10)
            r = (mpmath.sqrt(5) - 1) / 2
            for _ in range(240):
                c, d_ = b - r * (b - a), a + r * (b - a)
                a, b = (a, d_) if f(c) <= f(d_) else (c, b)
            return f((a + b) / 2)

    for k, d in ((192.5616928003377, 0.999999), (101.9171165220939, 0.999999),
                 (36.4041427818836, 0.9999322592084545), (112.30286945613703, 0.9999953454623733)):
        ex = cks_inf(k, d)
        assert mpmath.mpf(RDP.linear(k).epsilon(d)) >= ex, (k, d)
    assert round(RDP.linear(0.5).epsilon(1e-5), 4) == 4.7284


def test_conversions_at_extreme_valid_inputs_answer_instead_of_failing():
    # GDP: delta(eps) had a floor of 1e-300, so epsilon(delta) raised for every delta below it (delta = 7.2e-311);
    # for mu ~ 1e115 the float bracket mu^2/2 + ... rounded below mu^2/2 and epsilon was inf.  RDP.delta at
    # eps = 1.8e308 raised OverflowError (exp of the search variable), and the NaN of an infinite margin left the
    # trivial Bretagnolle-Huber value 0.73
    import mpmath
    from bayesdp.curves import GDP, RDP

    def gdp_delta(mu, e):
        with mpmath.workdps(100):
            m, E = mpmath.mpf(mu), mpmath.mpf(e)
            a, b = (m * m / 2 - E) / m, -(m * m / 2 + E) / m
            return mpmath.ncdf(a) - (mpmath.exp(E) * mpmath.ncdf(b) if b > -1e6 else 0)

    for mu, d in ((57.81120036108058, 7.235546842341e-311), (1.0, 5e-324), (8.499093640951789e+114, 3.39e-06)):
        e = GDP(mu).epsilon(d)
        assert math.isfinite(e) and gdp_delta(mu, e) <= d
    assert 0 < GDP(1.0).delta(40.0) < 1e-300 and mpmath.mpf(GDP(1.0).delta(40.0)) >= gdp_delta(1.0, 40.0)
    assert RDP.linear(0.7479953816787762).delta(1.7976931348623157e+308) == 5e-324
    assert RDP.linear(1e300).delta(1.7e308) == 5e-324


def test_002_ou_calibration_never_exceeds_the_stated_epsilon():
    # 002 Theorem 8's calibration rho^2 = theta Delta^2/(2 eps (e^(2 theta) - 1)) in floats: about half of the
    # calibrations had Lambda(1) = theta Delta^2/(2 rho^2 (e^(2 theta) - 1)) above eps (by 2.6e-16 relative here);
    # rho is now rounded up.  The OU constants and Example 3's sigma_*^2 raised OverflowError / ZeroDivisionError
    import mpmath
    from bayesdp.theorems import mixing as X
    for e, d, D, R in ((0.0036815425415063744, 61, 162.43243215372686, 0.1925517642858755),
                       (0.003234983060323743, 32, 0.0011986299841722909, 0.01997003393117686),
                       (0.024969614075845324, 99, 0.21708202768798038, 37.286581265540285)):
        th, rho = X.ou_calibrate(e, d, D, R)
        with mpmath.workdps(50):
            T = mpmath.mpf(th)
            assert T * mpmath.mpf(D) ** 2 / (2 * mpmath.mpf(rho) ** 2 * mpmath.expm1(2 * T)) <= mpmath.mpf(e)
    assert X.theorem_8_applies(1.0, 1.0, 1, 2.0) and not X.theorem_8_applies(1.0, 1.0, 1, 1e200)
    assert X.example_3(9.7e-09, 1.25e-40, 8.3e-63, 1.7976931348623157e+308).constants["sigma_star_sq"] >= 1.25e-40 ** 2
    c = X.corollary_7(1e-300, 1.0, 1.0, 1e-160, dimension=3, f_norm=1.0, radius=1e200)
    assert c.constants["theorem_8_applies"] == 0.0 and c.constants["mse_gaussian"] > 0


def test_002_required_dobrushin_eps_is_rounded_down():
    # eps~ = log(1 + (e^eps - 1)/delta) is a requirement on the kernel (sup E_(e^eps~)(K(x)||K(x')) <= gamma): a larger
    # eps~ asks less.  The float value was above the exact one in half of the cases, and inf (vacuous) at delta =
    # 1e-310
    import mpmath
    from bayesdp.theorems import mixing as X
    for e, d in ((0.00469700714216162, 0.012146788498291674), (0.30003742906400177, 2.2332825420553974e-07),
                 (1.0, 1e-310), (1000.0, 1e-5)):
        v = X.required_dobrushin_eps(e, d)
        with mpmath.workdps(50):
            assert math.isfinite(v) and mpmath.mpf(v) <= mpmath.log1p(mpmath.expm1(mpmath.mpf(e)) / mpmath.mpf(d))
    assert round(X.required_dobrushin_eps(1.0, 1e-5), 6) == 12.054256
    assert X.doeblin_amplifies_delta(1000.0, 0.5, 0.9) and not X.doeblin_amplifies_delta(1.0, 1e-5, 0.1)


def test_002_rdp_formula_values_are_upper_bounds():
    # Example 1's, Theorem 4 (2)'s, Theorem 6's and Corollary 7's RDP values were plain float expressions: below the
    # exact value by an ulp at ordinary inputs (alpha Delta^2/(4 t) at 3, 0.7, 0.3), 0.0 where a square underflowed
    # (Delta = 1e-170), an OverflowError where one overflowed
    import mpmath
    from bayesdp.theorems import mixing as X
    assert F(X.brownian_rdp(3.0, 0.3, 0.7)) >= 3 * F(0.7) ** 2 / (4 * F(0.3))
    assert F(X.brownian_rdp(1.0, 1e-300, 1e-170)) >= F(1e-170) ** 2 / (4 * F(1e-300))
    assert F(X.iterated_gaussian_rdp(3.0, 0.1, 0.3, 0.7)) >= 3 * F(0.1) ** 2 / (2 * (F(0.3) ** 2 + F(0.7) ** 2))
    assert X.iterated_gaussian_rdp(1.35e218, 2.75e-40, 6.56e-287, 4.9e255) > 0
    with mpmath.workdps(50):
        L, w = mpmath.mpf(0.3), [mpmath.mpf(0.7), mpmath.mpf(0.9)]
        assert mpmath.mpf(X.theorem_4_path_rdp(3.0, 0.3, 0.7, [0.7, 0.9])) >= \
            3 * L ** 2 / (2 * mpmath.mpf(0.7) ** 2) * (L ** 2 * w[0] ** 2 + w[1] ** 2)
        lam = mpmath.mpf(0.3) * mpmath.mpf(0.7) ** 2 / (2 * mpmath.mpf(1.3) ** 2 * mpmath.expm1(2 * mpmath.mpf(0.3) * 3))
        assert mpmath.mpf(X.ou_rdp(3.0, 0.3, 1.3, 3.0, 0.7)) >= 3 * lam


def test_extreme_valid_inputs_do_not_crash_the_certificates():
    # found by fuzzing over 1e-300..1e300 and subnormals: 003 Theorem 4's recorded ratios divided by an eta sigma
    # that underflowed to 0; RDP.delta of a curve whose best log delta is > 709 raised OverflowError in exp; the
    # Laplace variance 2 b^2 raised OverflowError
    from bayesdp.curves import RDP
    from bayesdp.theorems import hockey_stick as H
    from bayesdp.theorems import transfer as T
    c = H.theorem_4(1e-300, 3.9e-06, 1.1e-292, 0.06, 5e-324, 8e-51, 3, 2)
    assert F(c.constants["r_first"]) >= 2 * F(1e-300) / F(5e-324)
    assert RDP.from_function(lambda a: 1e6 * a).delta(1.0) == 1.0
    assert T.laplace_noise_variance(1e160) == math.inf and T.laplace_noise_variance(2.0) == 8.0


def test_003_theorem_3_delta_with_a_cancelling_exponent_is_never_below_the_exact_one():
    # eps/2 - L/v at 50 digits: with L/v within 1e-32 (relative) of eps/2 the difference kept ~18 digits, and the
    # rounded-up delta still landed below the exact one (2.3665827156630606e-30 for 2.36658271566306064e-30)
    import mpmath
    from bayesdp.theorems.hockey_stick import pnsgd_laplace_delta, theorem_3
    for a, b in ((1, 96), (1, 112), (1, 128), (1, 288), (3, 100), (7, 250)):
        f, v, L = 1 + a * 2.0 ** -52, 1 - b * 2.0 ** -53, 1 + (2 * a - b) * 2.0 ** -53
        with mpmath.workdps(300):
            x = mpmath.mpf(2 * f) / 2 - mpmath.mpf(L) / mpmath.mpf(v)
            assert x < 0
            assert mpmath.mpf(pnsgd_laplace_delta(2 * f, L, v, 1.0, 1.0, 1.0, 1, 1)) >= -mpmath.expm1(x)
            assert mpmath.mpf(theorem_3(L, 1.0, 0.0, 1.0, v, 1.0, 1).curve.delta(2 * f)) >= -mpmath.expm1(x)
    assert abs(pnsgd_laplace_delta(1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 40, 20) - 3.112639611967467e-09) < 1e-23


def test_001_pla_step_threshold_and_mixing_time_round_outward():
    # Lemma 4.1's Theta (the lemma needs 1/eta >= Theta) was a float below the exact value in half of the cases, so
    # step sizes a few ulps too large were admitted; Theorem 4.2's ceil(D^2/eta) in floats could round below an
    # integer that D^2/eta exceeds (one step too few), and D^2 overflowed (OverflowError for D = 1e200)
    import mpmath
    from bayesdp.theorems import pabi as P
    for D, M, p in ((602.7973847443578, 548.4504981677203, 0.05655136772680869),
                    (0.07005160308859322, 110.86902369977537, 0.8538343854854736)):
        with mpmath.workdps(60):
            Pm, Mh = mpmath.mpf(p), mpmath.mpf(M) / 2
            inner = (1 - Pm) / (1 + Pm) * max(16 * (mpmath.log(D) + mpmath.log(Mh) / (1 + Pm) + 1), 27)
            assert mpmath.mpf(P.pla_step_threshold(D, M, p)) >= Mh ** (2 / (1 + Pm)) * inner ** ((1 - Pm) / (1 + Pm))
    for D, eta in ((0.8296839705591799, 7.734990628718984e-06), (28.972489969955177, 0.0017349534435516375)):
        q = F(D) ** 2 / F(eta)
        assert P.pla_mixing_time(D, eta, 0.25, 1e-3, 1.0) >= 2 * q        # ceil(log2(4)) = 2
    assert P.pla_mixing_time(2.0, 0.5, 0.25, 1.0, 1.0) == 16 and P.pla_mixing_time(1e200, 1e-10, 0.5, 1.0, 1.0) > 0


def test_002_lemma_3_pure_epsilon_is_rounded_up():
    # Delta / max(lam1, lam2) as a float quotient rounds to nearest, below the exact value here (1.3 / 7.6); it is
    # the certified pure epsilon of 002 Lemma 3 and the cap of Example 2's curve
    from bayesdp.theorems import mixing as X
    assert F(1.3 / 7.6) < F(1.3) / F(7.6)
    assert F(X.iterated_laplace_pure_eps(1.3, 7.6, 0.2)) >= F(1.3) / F(7.6)
    assert F(X.example_2(1.3, 0.2, 7.6)[1].constants["pure_epsilon"]) >= F(1.3) / F(7.6)
    assert X.iterated_laplace_pure_eps(1.0, 2.0, 1.0) == 0.5


# -- issue 25 fuzz, second pass: the release layer and the analysis' rounding helpers ------------------------------


def test_rounding_helpers_at_the_float_limits_answer_outward_instead_of_raising():
    from bayesdp.analysis import rounding as R
    assert R.mul_up(1e300, 1e300) == math.inf and R.add_up(1.7e308, 1.7e308) == math.inf
    assert R.div_up(1e300, 1e-300) == math.inf and R.up(F(10) ** 400) == math.inf
    assert R.down(F(10) ** 400) == 1.7976931348623157e308 and R.sub_down(-1e308, 1e308) == -math.inf
    assert R.up(-F(10) ** 400) == -1.7976931348623157e308 and R.down(-F(10) ** 400) == -math.inf


def test_norm_and_spectral_bounds_of_many_tiny_entries_do_not_underflow():
    import numpy as np
    from bayesdp.analysis.rounding import norm_up, spectral_up
    for x in (1e-200, 1e-160, 3e-310):                 # squares underflow (1e-200) or lose digits (1e-160)
        v = np.full(5000, x)                            # > 4096 entries: the float path
        exact = 5000 * F(x) ** 2
        r = norm_up(v)
        assert F(r) ** 2 >= exact and r <= 1.001 * math.sqrt(5000) * x
    assert norm_up(np.full(5000, 1e300)) < math.inf    # squares overflowed; the norm 7e301 is a float
    s = spectral_up(np.full((70, 70), 1e-200))          # the exact spectral norm is 70e-200
    assert F(s) >= 70 * F(1e-200) and s <= 1.001 * 70e-200


def test_noise_calibration_at_extreme_valid_inputs_draws_or_refuses_cleanly():
    import pytest
    from bayesdp.budget.events import laplace_event
    from bayesdp.errors import AssumptionError, BudgetError
    from bayesdp.publish.noise import gaussian_calibration, granularity, laplace_release
    assert granularity(1e-320) == 5e-324                 # 2^-1103 underflowed to a zero grid (ZeroDivisionError)
    r = laplace_release([0.0], 3.536788041277391e-31, 4.4153172465149324e282)
    assert F(r.noise_scale) >= (F(r.sensitivity) + F(r.grid)) / F(r.epsilon) and r.grid > 0
    c = gaussian_calibration(1.3060566706217448e-171, 9.369826173463496e287, 0.9999999999999439, 100)
    eff = F(1.3060566706217448e-171) + F(c["grid_rounding"])
    assert c["grid"] > 0 and F(c["grid_rounding"]) >= 10 * F(c["grid"]) and eff ** 2 <= 2 * F(c["rho"]) * F(c["sigma"]) ** 2
    # scales beyond the float range are refused (they raised OverflowError, the Laplace one after drawing)
    with pytest.raises(AssumptionError):
        laplace_release([0.0], 4.9682246641955024e-152, 3.293562970319753e-298)
    with pytest.raises(AssumptionError):
        gaussian_calibration(1.5019633762098877e130, 2.2250738585072014e-308, 6.755109978366346e-99, 3)
    with pytest.raises(BudgetError):
        laplace_event(1.7976931348623157e308, 1e300, 0.5)


def _mc_lipschitz_exact(g, m, L, beta, n, burn_in, c):
    """sqrt(2 g / beta) sqrt(c sum_j w_j^2) / (c N) of docs/release.md §4.2 (thinning 1), closed-form geometric sums
    in mpmath at the exact contraction 1 - min(g m, 2 - g L)."""
    import mpmath as mp
    gap = min(F(g) * F(m), 2 - F(g) * F(L))
    with mp.workdps(60 + 2 * max(0, -math.floor(math.log10(gap)))):
        lr = mp.log1p(-mp.mpf(gap.numerator) / gap.denominator)
        om = lambda k: -mp.expm1(k * lr)                                  # noqa: E731 - 1 - rho^k
        N, k1 = n - burn_in, burn_in + 1
        q = mp.exp(lr)
        s2 = ((N - 1) - 2 * q * om(N - 1) / om(1) + q * q * om(2 * (N - 1)) / om(2)) / om(1) ** 2
        sum_w2 = (om(N) / om(1)) ** 2 * om(2 * k1) / om(2) + s2
        return mp.sqrt(2 * mp.mpf(g) / mp.mpf(beta)) * mp.sqrt(c * sum_w2) / (c * N)


def test_monte_carlo_bound_never_underflows_below_the_exact_constant():
    import mpmath as mp
    from bayesdp.publish.sensitivity import coupling_strongly_convex, monte_carlo_bound
    for g, m, L, beta, n, burn_in, c in [
            (3.545351826115441e-10, 9.160578352952802, 3209.1111470780957, 1.7976931348623157e308, 100000, 68502, 4),
            (1.565e-320, 0.01100028551876219, 0.6388740327393145, 0.9171346141147778, 100000, 67259, 4),
            (4.296244109312498e-202, 2.5928447873559435, 928.2276880986204, 1.7976931348623157e308, 1000, 817, 1000)]:
        b = coupling_strongly_convex(g, m, L, grad_diff=1.0)
        lip = monte_carlo_bound(b, inverse_temperature=beta, num_steps=n, burn_in=burn_in, num_chains=c).lipschitz_noise
        exact = _mc_lipschitz_exact(g, m, L, beta, n, burn_in, c)
        assert mp.mpf(lip) >= exact and mp.mpf(lip) <= exact * 1.001     # was 1.6e-7 and 3.4e-5 below, and 0.0
    b = coupling_strongly_convex(0.25, 1.0, 1.0, grad_diff=1.0)       # ordinary inputs: as tight as before
    lip = monte_carlo_bound(b, inverse_temperature=1.0, num_steps=1000, burn_in=10).lipschitz_noise
    exact = _mc_lipschitz_exact(0.25, 1.0, 1.0, 1.0, 1000, 10, 1)
    assert exact <= mp.mpf(lip) <= exact * (1 + 1e-11)


def test_coupling_route_window_of_a_subnormal_distance_is_not_zero():
    from bayesdp.publish.sensitivity import CouplingBound, coupling_route
    b = CouplingBound(distance=1e-323, source="x", contraction=0.5, step_size=0.1, drift_step_diff=1.0)
    r = coupling_route(b, 0.03357280084960253, 3.977197617093579e-08)    # float products: 0.0
    assert F(r.sensitivity) >= F(0.03357280084960253) * F(1e-323) > 0
    assert F(r.l2_sensitivity) >= F(3.977197617093579e-08) * F(1e-323) > 0


def test_path_certificate_of_many_chains_with_a_subnormal_mu_is_never_below_sqrt_c_mu():
    from bayesdp.publish.path import path_certificate
    for gd, c in [(1.636825e-318, 536112), (1.74835e-319, 146041), (5.80909e-318, 792520), (1e-300, 3)]:
        cert = path_certificate(gd, 0.01, 1000, 1.0, num_chains=c)
        mu_chain, mu = cert.constants["gdp_mu_per_chain"], cert.curve.mu
        assert F(mu) ** 2 >= c * F(mu_chain) ** 2 and mu <= 1.0001 * math.sqrt(c) * mu_chain + 2e-323


def test_monte_carlo_half_width_of_tiny_constants_is_not_zero():
    import mpmath as mp
    from bayesdp.publish.sensitivity import MonteCarloBound
    assert MonteCarloBound(1e-200, "x").half_width(1e-200, 0.05) == 5e-324     # the float product was 0.0
    t = MonteCarloBound(1.7e-160, "x").half_width(1.3e-160, 0.05)      # subnormal: rounded to nearest before
    with mp.workdps(40):
        exact = mp.mpf(1.7e-160) * mp.mpf(1.3e-160) * mp.sqrt(2 * mp.log(40))
    assert exact <= mp.mpf(t) <= exact + 1e-323
    assert MonteCarloBound(1e200, "x").half_width(1e200, 0.05) == math.inf


def test_negative_binomial_smoothness_at_the_float_limits_is_inf_not_a_crash():
    from bayesdp.analysis import families as Fm
    from bayesdp.analysis.rounding import div_down, div_up
    fixed = {"concentration": (1.0, 1.7976931348623157e308)}
    assert Fm._nb_hess(fixed, (0.0, 1.7976931348623157e308)) == math.inf      # (k + y)/4: add_up gave inf, div_up
    assert div_up(math.inf, 4) == math.inf and div_down(math.inf, 4) == math.inf  # raised OverflowError on it
    # an undefined quotient of infinities (two add_up results beyond the floats) bounds nothing: inf above, -inf below
    # (IEEE's NaN would pass every comparison a caller tests it with)
    for a, b in ((math.inf, math.inf), (math.inf, -math.inf), (math.nan, 2.0), (1.0, math.nan)):
        assert div_up(a, b) == math.inf and div_down(a, b) == -math.inf, (a, b)
    assert div_up(-math.inf, 4) == -math.inf and div_down(1.0, math.inf) == 0.0
    assert Fm._nb_hess(fixed, (0.0, 1e308)) == math.inf


@pytest.mark.filterwarnings("error::RuntimeWarning")     # no numpy warning reaches the user either
def test_prior_rules_at_extreme_scales_answer_instead_of_raising():
    import numpy as np
    import numpyro.distributions as dist
    from bayesdp.analysis.families import PRIOR_RULES
    term = PRIOR_RULES[(dist.Normal, "IdentityTransform")]({"scale": np.array([1e-200, 1.0])})
    assert term.bounds == (1.0, math.inf)                  # 1/scale^2 = 1e400: OverflowError before
    facts = PRIOR_RULES[(dist.StudentT, "IdentityTransform")]({"scale": np.array([1e-200]), "df": np.array([1e-300])})
    assert facts.v_grad_bound == math.inf and facts.v_smoothness == math.inf
    facts = PRIOR_RULES[(dist.StudentT, "IdentityTransform")]({"scale": np.array([1e200]), "df": np.array([1e-300])})
    assert F(facts.v_grad_bound) ** 2 >= (1 + F(1e-300)) ** 2 / (4 * F(1e200) ** 2 * F(1e-300))
    assert F(facts.v_smoothness) >= (1 + F(1e-300)) / (F(1e-300) * F(1e200) ** 2)


def test_noise_plan_with_a_gaussian_scale_whose_square_overflows_picks_laplace():
    from bayesdp.publish.noiseplan import plan_noise
    from bayesdp.publish.sensitivity import SensitivityRoute
    from bayesdp.publish.statistics import SiteSpec, coordinate_means
    route = SensitivityRoute("x", 2.522349677868569e-123, 0.0, {}, 1.6028583419435804e183)
    plan = plan_noise(coordinate_means([SiteSpec("mu")]), route, 1.3445552375958275e-16, 0.5)   # sigma ~ 1e199
    assert plan.mechanism == "laplace" and plan.expected_squared_error["gaussian"] == math.inf


def test_path_inverse_temperature_with_under_or_overflowing_constants_answers_or_refuses():
    import pytest
    from bayesdp.errors import AssumptionError
    from bayesdp.publish.path import path_inverse_temperature
    # c grad_diff^2 gamma n underflowed to 0 (ZeroDivisionError) or beta overflowed (refused as inf): the largest float
    for eps, d, gd, g, n, c in [(268.1918243637645, 7.487423087944676e-17, 8.527478558399274e-267, 2.89466658410975e-275,
                                 10, 1000), (1.0, 1e-5, 1e-160, 1e-160, 10, 3)]:
        beta, cert = path_inverse_temperature(eps, d, gd, g, n, c)
        assert beta == 1.7976931348623157e308 and cert.epsilon(d) <= eps
    with pytest.raises(AssumptionError):          # beta below the smallest float: refused with a reason (it was 0)
        path_inverse_temperature(145.96606725637358, 2.339666880518576e-150, 5.304915836999655e240,
                                 2.0412232687497332e-39, 1000000, 3)


def test_laplace_delta_without_noise_is_the_point_masses_hockey_stick():
    # scale 0: the two outputs are the points 0 and eta, so E_{e^eps} = 1 when they differ (the set {0} has
    # probability 1 under one and 0 under the other) and 0 when eta = 0; eta / b was a ZeroDivisionError
    assert laplace_delta(0.5, 1.0, 0.0) == 1.0 and laplace_delta(50.0, 1e-300, 0.0) == 1.0
    assert laplace_delta(0.5, 0.0, 0.0) == 0.0
    # and the formula just above 0: 1 - exp((eps - eta/b)/2) -> 1 as b -> 0
    assert laplace_delta(0.5, 1.0, 1e-300) == 1.0


@pytest.mark.parametrize("args,name", [((math.nan, 1.0, 1.0), "epsilon"), ((0.5, math.nan, 1.0), "sensitivity"),
                                       ((0.5, 1.0, math.nan), "scale"), ((0.5, 1.0, -1.0), "scale"),
                                       ((0.5, -1.0, 1.0), "sensitivity")])
def test_laplace_delta_refuses_undefined_inputs(args, name):
    # a NaN went through max(0, nan) = 0: delta 0 for an undefined input; a negative scale computed a number
    from bayesdp.errors import AssumptionError

    with pytest.raises(AssumptionError, match=rf"^{name} = "):
        laplace_delta(*args)
