"""Issue #6 routes: exact on the linear–quadratic benchmark, never below it, optimised window."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bayesdp
from bayesdp.errors import AssumptionError
from bayesdp.theorems import tight as TT
from exact import gdp_epsilon, lq_final_mu, lq_path_mu


def test_last_draw_equals_exact_on_quadratic():
    # LITERATURE §8.1: m = L = beta = 1, Delta = 0.1: formula == exact for gamma, n grids
    for gamma in [0.01, 0.1, 0.5]:
        for n in [1, 10, 100, 10_000]:
            cert = TT.last_draw_gdp(1.0, 1.0, 0.1, gamma, n)
            assert cert.gdp_mu == pytest.approx(lq_final_mu(1.0, 0.05, gamma, n), rel=1e-9)
    # §8.1: gamma = 0.01, n = 1e4 -> 0.099750
    assert TT.last_draw_gdp(1.0, 1.0, 0.1, 0.01, 10_000).gdp_mu == pytest.approx(0.099750, abs=1e-6)


def test_posterior_equals_exact_gaussian():
    # pi_D = N(b_D/mu, 1/(beta mu)); |b - b'| <= 2c -> exact mu = 2c sqrt(beta/mu)
    for mu, c, beta in [(1.0, 0.5, 1.0), (0.01, 2.0, 3.0), (100.0, 0.1, 0.5)]:
        cert = TT.posterior_gdp(mu, 2 * c, beta)
        assert cert.gdp_mu == pytest.approx(2 * c / mu / math.sqrt(1 / (beta * mu)), rel=1e-12)
    # LITERATURE §8.2 last column: m = 1, Delta = 0.1 -> eps(1e-5) = 0.341; Delta = 0.5 -> 1.99
    assert TT.posterior_gdp(1.0, 0.1).epsilon(1e-5) == pytest.approx(0.341, abs=1e-3)
    assert TT.posterior_gdp(1.0, 0.5).epsilon(1e-5) == pytest.approx(1.99, abs=5e-3)


def test_path_gdp_equals_exact_path():
    for c, g, n, beta in [(0.05, 0.01, 1000, 1.0), (0.25, 0.01, 10_000, 1.0), (1.0, 0.3, 7, 2.0)]:
        assert TT.path_gdp(2 * c, g, n, beta).gdp_mu == pytest.approx(lq_path_mu(c, g, n, beta), rel=1e-12)
    # LITERATURE §8.2: gamma=0.01, n=1e3, Delta=0.1 -> 0.820 ; n=1e4 -> 2.943
    assert TT.path_gdp(0.1, 0.01, 1000).epsilon(1e-5) == pytest.approx(0.820, abs=1e-3)
    assert TT.path_gdp(0.1, 0.01, 10_000).epsilon(1e-5) == pytest.approx(2.943, abs=1e-3)


def test_window_matches_seeds_continuous_optimum():
    # SEEDS §4.16(j): c=1, L=2, mu=1, gamma=0.1: 004's coupling C = 2c/a = 2.5, c_off = 2c = 2,
    # min_tau C2(tau) = 4 beta C (L C + c_off) = 70 (vs 90.25 at tau = 1); as GDP mu^2 = C2/2.
    cert = TT.window_gdp(2.0, 2.0, 2.5, 0.1, 1000)
    mu2_cont = 70.0 / 2
    # the discrete window (integer steps) is within the grid effect of the continuous optimum
    assert mu2_cont <= cert.gdp_mu ** 2 <= mu2_cont * 1.01
    k = cert.constants["window_steps"]
    assert k in (3, 4)
    # mu(k)^2 = (k gamma A + C)^2 / (2 k gamma), independent re-evaluation
    A, C, g = 2 * 2.5 + 2.0, 2.5, 0.1
    assert cert.gdp_mu ** 2 == pytest.approx(min((kk * g * A + C) ** 2 / (2 * kk * g) for kk in range(1, 1001)))


def test_exact_contraction_extends_step_range_and_is_tighter():
    # gamma = 0.6 > 2 mu / L^2 = 0.5 but < 2/L = 1: paper route invalid, exact route valid
    r = bayesdp.bound("ula-final", strong_convexity=1, smoothness=2, grad_bound=1, step_size=0.6, num_steps=100,
                      delta=1e-5)
    by = {c.source: c for c in r.certificates}
    assert not by["004 Theorem 5.2"].valid and "2*mu/L^2" in by["004 Theorem 5.2"].reason
    ex = by[TT.EXACT_CONTRACTION_SOURCE]
    assert ex.valid
    rho = max(abs(1 - 0.6), abs(1 - 1.2))
    C = 0.6 * 2 / (1 - rho)
    assert ex.constants["C"] == pytest.approx((C * 3 + 2) ** 2)
    # at a step the paper allows, exact <= paper
    r = bayesdp.bound("ula-final", strong_convexity=1, smoothness=2, grad_bound=1, step_size=0.1, num_steps=100,
                      delta=1e-5)
    by = {c.source: c for c in r.certificates}
    assert by[TT.EXACT_CONTRACTION_SOURCE].epsilon(1e-5) <= by["004 Theorem 5.2"].epsilon(1e-5)


def test_contradictory_declarations_name_both_values():
    with pytest.raises(AssumptionError, match=r"smoothness = 0.5 < strong_convexity = 1"):
        bayesdp.bound("ula-final", strong_convexity=1, smoothness=0.5, grad_bound=1, step_size=0.1, num_steps=10,
                      delta=1e-5)
    with pytest.raises(AssumptionError, match=r"--v-convex.*v_smoothness = -1"):
        bayesdp.bound("posterior", strong_convexity=1, smoothness=1, grad_bound=1, v_smoothness=-1,
                      v_convex=True, delta=1e-5)


def test_unmet_route_listed_not_dropped():
    r = bayesdp.bound("ula-final", strong_convexity=1, smoothness=1, grad_bound=0.5, step_size=0.01,
                      num_steps=100, delta=1e-5)
    bok = [c for c in r.certificates if c.source == TT.LAST_DRAW_SOURCE]
    assert len(bok) == 1 and not bok[0].valid and "strongly convex" in bok[0].reason


def test_posterior_refuses_without_strong_convexity():
    with pytest.raises(AssumptionError, match="strongly convex"):
        bayesdp.bound("posterior", strong_convexity=1, smoothness=2, grad_bound=1, v_smoothness=1.5, delta=1e-5)


# -- soundness on the benchmark family: every valid certified route >= exact ------------------

@settings(max_examples=250, deadline=None)
@given(mu=st.floats(0.01, 100.0), L_ratio=st.floats(1.0, 2.0), c=st.floats(1e-3, 5.0),
       g_frac=st.floats(0.01, 0.99), n=st.integers(1, 50_000), logd=st.floats(-25.0, -2.0),
       beta=st.sampled_from([1.0, 0.3, 3.0]), v_decl=st.sampled_from(["none", "linear", "convex"]))
def test_all_ula_final_routes_sound_on_benchmark(mu, L_ratio, c, g_frac, n, logd, beta, v_decl):
    L = mu * L_ratio
    gamma = g_frac * 2 / L  # every step size the exact-contraction routes allow
    delta = math.exp(logd)
    mu_exact = lq_final_mu(mu, c, gamma, n, beta)
    assume(mu_exact < 30)
    exact = gdp_epsilon(mu_exact, delta)
    extra = {"none": {}, "linear": {"v_smoothness": 0.0}, "convex": {"v_convex": True, "v_smoothness": 0.0}}[v_decl]
    try:
        r = bayesdp.bound("ula-final", strong_convexity=mu, smoothness=L, grad_bound=c, step_size=gamma,
                          num_steps=n, inverse_temperature=beta, delta=delta, **extra)
    except AssumptionError:
        return
    for cert in r.certificates:
        if cert.valid and cert.certified:
            assert cert.epsilon(delta) >= exact * (1 - 1e-7) - 1e-9, cert.source
    if v_decl != "none" and gamma <= 2 / (mu + L):
        # Bok-Su-Altschuler is exact on the benchmark when rho = 1 - gamma mu
        if L == mu:
            assert r.value() == pytest.approx(exact, rel=1e-6, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(mu=st.floats(0.01, 100.0), c=st.floats(1e-3, 5.0), logd=st.floats(-25.0, -2.0),
       beta=st.sampled_from([1.0, 0.3, 3.0]))
def test_posterior_route_exact(mu, c, logd, beta):
    delta = math.exp(logd)
    mu_exact = 2 * c * math.sqrt(beta / mu)
    assume(mu_exact < 30)
    r = bayesdp.bound("posterior", strong_convexity=mu, smoothness=mu, grad_bound=c, v_smoothness=0.0,
                      inverse_temperature=beta, delta=delta)
    assert r.value() == pytest.approx(gdp_epsilon(mu_exact, delta), rel=1e-6, abs=1e-9)
