"""Coupling sensitivity: closed forms, exact simulations of coupled chains, refusals."""

import math

import numpy as np
import pytest

from bayesdp.errors import AssumptionError
from bayesdp.publish import sensitivity as S


def test_route_a_closed_form():
    # rho = max(|1-0.1*1|, |1-0.1*4|) = 0.9 ; C = 0.1*0.5/0.1 = 0.5 = grad_diff/m
    b = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    assert b.contraction == pytest.approx(0.9)
    assert b.distance == pytest.approx(0.5)
    # gamma beyond 2/(m+L): rho = |1 - 0.45*4| = 0.8 ; C = 0.45*0.5/0.2 = 1.125
    b = S.coupling_strongly_convex(0.45, 1.0, 4.0, 0.5)
    assert b.contraction == pytest.approx(0.8)
    assert b.distance == pytest.approx(1.125)
    assert b.source == "coupling (LITERATURE §7.1)"


def _coupled_sup(grad_d, grad_dp, step, n, d, rng, x0=None):
    x = np.zeros(d) if x0 is None else x0.copy()
    xp = x.copy()
    sup = 0.0
    s = math.sqrt(2 * step)
    for _ in range(n):
        xi = rng.standard_normal(d)
        x = x - step * grad_d(x) + s * xi
        xp = xp - step * grad_dp(xp) + s * xi
        sup = max(sup, float(np.linalg.norm(x - xp)))
    return sup


def test_route_a_tight_on_gaussian_mean_shift():
    # U_D = m/2 |x - a|^2, U_D' = m/2 |x - a'|^2 with m|a - a'| = Delta: e_k -> Delta/m exactly.
    rng = np.random.default_rng(0)
    m, L, step = 2.0, 2.0, 0.1
    a = np.array([0.3, -0.1, 0.2])
    ap = a + np.array([0.05, 0.0, -0.02])
    delta = m * np.linalg.norm(a - ap)
    bound = S.coupling_strongly_convex(step, m, L, delta).distance
    sup = _coupled_sup(lambda x: m * (x - a), lambda x: m * (x - ap), step, 400, 3, rng)
    assert sup <= bound * (1 + 1e-9)
    assert sup >= 0.999 * bound  # the bound is attained in the limit
    assert bound == pytest.approx(np.linalg.norm(a - ap))


def test_route_a_logistic_potential_simulation():
    # strongly convex non-quadratic: U_D(x) = m/2|x|^2 + sum_i log(1 + exp(-y_i z_i.x)), |z_i| <= 1
    rng = np.random.default_rng(1)
    n, d, m = 30, 2, 1.0
    z = rng.normal(size=(n, d))
    z /= np.maximum(1, np.linalg.norm(z, axis=1))[:, None]
    y = rng.choice([-1.0, 1.0], size=n)
    zp, yp = z.copy(), y.copy()
    zp[0] = -z[0] / np.linalg.norm(z[0])
    yp[0] = -y[0]

    def grad(zz, yy):
        def g(x):
            t = yy * (zz @ x)
            return m * x - (zz * (yy / (1 + np.exp(t)))[:, None]).sum(0)
        return g

    L = m + 0.25 * n  # |hess log(1+e^-t)| <= 1/4, |z|<=1
    delta = 2.0  # each record's gradient has norm <= 1, replace-one
    step = 1.0 / L
    bound = S.coupling_strongly_convex(step, m, L, delta).distance
    sup = _coupled_sup(grad(z, y), grad(zp, yp), step, 2000, d, rng)
    assert sup <= bound


def test_route_b_k_plus_v_closed_form_and_tightness():
    # rho_K = max(|1-0.1*1|, |1-0.1*2|) = 0.9 ; C = 2*0.1*c/(0.1) = 2c
    b = S.coupling_k_plus_v(0.1, 1.0, 2.0, 0.3)
    assert b.distance == pytest.approx(0.6)
    # 004's own constant 2c/a with a = mu - gamma L^2/2 = 0.8 is larger: 0.75
    assert b.distance < 2 * 0.3 / (1.0 - 0.1 * 4 / 2)
    # attained: V_D = c x, V_D' = -c x, K = mu/2 x^2 (1-D): e_k -> 2c/mu
    rng = np.random.default_rng(2)
    c, mu = 0.3, 1.0
    sup = _coupled_sup(lambda x: mu * x + c, lambda x: mu * x - c, 0.1, 500, 1, rng)
    assert sup <= b.distance * (1 + 1e-9)
    assert sup >= 0.999 * b.distance
    # non-convex V: V_D = c cos(x1), V_D' = -c sin(x1); bound still holds
    sup = _coupled_sup(lambda x: mu * x - c * np.sin(x), lambda x: mu * x - c * np.cos(x) * 1.0, 0.1, 800, 1, rng)
    assert sup <= b.distance


def test_route_b_valid_beyond_004_step_condition():
    # gamma = 0.6 > 2 mu/L^2 = 0.5 (004's condition fails) but < 2/L = 1: rho_K = max(0.4, |1-1.2|) = 0.4
    b = S.coupling_k_plus_v(0.6, 1.0, 2.0, 0.3)
    assert b.contraction == pytest.approx(0.4)
    assert b.distance == pytest.approx(2 * 0.6 * 0.3 / 0.6)


def test_sgld_shared_batches_simulation():
    # K = mu/2 x^2, l_i = 1/2 (x - d_i)^2 (record smoothness = strong convexity = 1), |d_i| <= 1.
    rng = np.random.default_rng(3)
    m_data, s, mu, step = 20, 4, 0.5, 0.02
    d = rng.uniform(-1, 1, m_data)
    dp = d.copy()
    dp[0] = -1.0 if d[0] > 0 else 1.0
    rec_diff = abs(d[0] - dp[0])
    bound = S.coupling_strongly_convex_sgld(step, mu, mu, 1.0, 1.0, rec_diff, m_data, s)
    # minibatch potential: (mu + m_data)-strongly convex and smooth -> rho = 1 - step*(mu + m_data)
    assert bound.contraction == pytest.approx(1 - step * (mu + m_data))
    assert bound.distance == pytest.approx(step * (m_data / s) * rec_diff / (step * (mu + m_data)))
    x = xp = 0.0
    sup = 0.0
    for _ in range(3000):
        A = rng.choice(m_data, size=s, replace=False)
        if rng.uniform() < 0.5:
            A[0] = 0  # include the replaced record often
            A = np.unique(A)
            while len(A) < s:
                A = np.unique(np.append(A, rng.integers(m_data)))
        xi = rng.standard_normal()
        x = x - step * (mu * x + (m_data / s) * np.sum(x - d[A])) + math.sqrt(2 * step) * xi
        xp = xp - step * (mu * xp + (m_data / s) * np.sum(xp - dp[A])) + math.sqrt(2 * step) * xi
        sup = max(sup, abs(x - xp))
    assert sup <= bound.distance
    # always including record 0 attains the bound in the limit
    x = xp = 0.0
    for _ in range(2000):
        A = np.concatenate([[0], rng.choice(np.arange(1, m_data), size=s - 1, replace=False)])
        x = x - step * (mu * x + (m_data / s) * np.sum(x - d[A]))
        xp = xp - step * (mu * xp + (m_data / s) * np.sum(xp - dp[A]))
    assert abs(x - xp) == pytest.approx(bound.distance, rel=1e-6)


def test_sgld_refuses_unknown_record_convexity():
    with pytest.raises(AssumptionError, match="record_strong_convexity"):
        S.coupling_strongly_convex_sgld(0.01, 1.0, 1.0, None, 1.0, 1.0, 100, 10)


@pytest.mark.parametrize("call", [
    lambda: S.coupling_strongly_convex(0.6, 1.0, 4.0, 1.0),   # gamma >= 2/L
    lambda: S.coupling_k_plus_v(1.0, 1.0, 2.0, 1.0),          # gamma = 2/L_K: rho = 1
    lambda: S.coupling_strongly_convex(0.1, 0.0, 4.0, 1.0),   # not strongly convex
    lambda: S.coupling_strongly_convex(0.1, 5.0, 4.0, 1.0),   # m > L
])
def test_non_contracting_refused(call):
    with pytest.raises(AssumptionError) as e:
        call()
    assert "\n" not in str(e.value)


def test_best_coupling_picks_smaller_and_reports_failures():
    best, failed = S.best_coupling(step_size=0.1, sampler="ULA", total_strong_convexity=1.0, total_smoothness=4.0,
                                   grad_diff=0.5, strong_convexity=1.0, smoothness=2.0, grad_bound=0.3)
    # route A: 0.5 ; route B: 2*0.1*0.3/(1-0.9) = 0.6
    assert best.distance == pytest.approx(0.5)
    assert best.source == S.SOURCE_STRONGLY_CONVEX
    assert failed == []
    best, failed = S.best_coupling(step_size=0.7, sampler="ULA", total_strong_convexity=1.0, total_smoothness=4.0,
                                   grad_diff=0.5)
    assert best is None and len(failed) == 2


def test_statistic_window_and_prop_3_10_route():
    b = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    r1 = S.coupling_route(b, lipschitz=math.sqrt(4))  # 4 coordinate means: sqrt(4) * 0.5 = 1.0
    assert r1.sensitivity == pytest.approx(1.0)
    assert r1.coupling_delta == 0.0
    assert r1.source == "004 Proposition 3.7 + coupling (LITERATURE §7.1)"
    r2 = S.concentration_route(0.1, 0.01, 0.05)  # 004 Prop 3.10: window 0.25, delta 0.0199 (SEEDS §4.6)
    assert r2.sensitivity == pytest.approx(0.25)
    assert r2.coupling_delta == pytest.approx(0.0199)
    assert S.choose_route([r1, r2]) is r2
    assert S.choose_route([r1, r2], max_delta=0.0) is r1
    cert = r1.certificate(epsilon=1.0, noise_scale=1.0 + 4 * 2.0 ** -40, num_coords=4)
    assert cert.valid and cert.source.startswith("004 Proposition 3.7")
    assert cert.delta(1.0) == 0.0
    with pytest.raises(AssumptionError, match=r"^noise_scale = 0\.5 is too small for epsilon = 1 at sensitivity 1"):
        r1.certificate(epsilon=1.0, noise_scale=0.5, num_coords=4)  # noise too small
    with pytest.raises(AssumptionError, match=r"^no sensitivity route: the sampler configuration has no proven "
            r"coupling bound and no concentration constants"):
        S.choose_route([])


def test_best_coupling_sgld_routes():
    base = dict(step_size=0.001, sampler="SGLD", strong_convexity=1.0, smoothness=1.0, record_smoothness=0.25,
                record_grad_diff=2.0, data_size=100, batch_size=10)
    # record terms not declared convex: SGLD route A refused, route B absent
    best, failed = S.best_coupling(**base)
    assert best is None and any("record_strong_convexity" in why for _, why in failed)
    best, _ = S.best_coupling(**base, record_strong_convexity=0.0)
    # mu_A = 1, L_A = 1 + 100*0.25 = 26; rho = 1 - 0.001 ; C = 0.001*(100/10)*2/0.001 = 20
    assert best.distance == pytest.approx(20.0)
    # prior term outside K without declared smoothness: route A refused
    best, failed = S.best_coupling(**base, record_strong_convexity=0.0, prior_v_grad_bound=0.5)
    assert best is None
    # ... and with a declared smoothness but no declared convexity (review finding 3): still refused
    best, failed = S.best_coupling(**base, record_strong_convexity=0.0, prior_v_grad_bound=0.5,
                                   prior_v_smoothness=0.1)
    assert best is None and any("prior_v_convex" in why for _, why in failed)
    # convex and smooth prior term: L_A = 26 + 0.1, route A applies with the same rho at this step size
    best, _ = S.best_coupling(**base, record_strong_convexity=0.0, prior_v_grad_bound=0.5, prior_v_smoothness=0.1,
                              prior_v_convex=True)
    assert best.source == S.SOURCE_SGLD and best.distance == pytest.approx(20.0)
    # route B for SGLD: c = 100 * 0.01 + 0.5 = 1.5 ; C = 2*0.001*1.5/0.001 = 3
    best, _ = S.best_coupling(**base, grad_bound=1.5, record_grad_bound=0.01, prior_v_grad_bound=0.5)
    assert best.source == S.SOURCE_K_PLUS_V and best.distance == pytest.approx(3.0)


def test_best_coupling_refuses_clipping():
    best, failed = S.best_coupling(step_size=0.1, sampler="ULA", total_strong_convexity=1.0, total_smoothness=4.0,
                                   grad_diff=0.5, clip_norm=1.0)
    assert best is None and "clip_norm" in failed[0][1]


# -- issue 25: the minibatch smoothness is L_K + m * L_rec (not m * mu_rec, s * L_rec or L_K alone) ---------

def test_sgld_minibatch_smoothness_exact_and_large_step_contraction():
    # K: 1-strongly convex, 1-smooth; records: 2-strongly convex, 2.5-smooth; m = 100, s = 10.
    # By hand: minibatch potential (1 + 200)-strongly convex and (1 + 250) = 251-smooth.
    b = S.coupling_strongly_convex_sgld(0.0079, 1.0, 1.0, record_strong_convexity=2.0, record_smoothness=2.5,
                                        record_grad_diff=0.3, data_size=100, batch_size=10)
    assert b.assumptions["minibatch_smoothness"] == 251.0
    assert b.assumptions["minibatch_strong_convexity"] == 201.0
    # gamma = 0.0079 is past 2/(201 + 251): rho = |1 - 0.0079 * 251| = 0.9829 (the smoothness end), and
    # the distance is gamma * (m/s) * drec / (1 - rho) = 0.0079 * 3 / 0.0171
    assert b.contraction == pytest.approx(0.9829, rel=1e-12)
    assert b.distance == pytest.approx(0.0079 * 3.0 / 0.0171, rel=1e-9)


def test_sgld_refuses_step_past_two_over_batch_smoothness_251():
    # batch smoothness 1 + 100 * 2.5 = 251: gamma = 0.01 > 2/251 = 0.00797 does not contract -> refused
    with pytest.raises(AssumptionError, match=r"step_size = 0\.01 .*2/minibatch_smoothness = 0\.00796813") as e:
        S.coupling_strongly_convex_sgld(0.01, 1.0, 1.0, record_strong_convexity=0.0, record_smoothness=2.5,
                                        record_grad_diff=1.0, data_size=100, batch_size=10)
    assert "\n" not in str(e.value)
    # just below 2/251 it is accepted, with rho = 251 * gamma - 1 (the smoothness end)
    b = S.coupling_strongly_convex_sgld(0.0079, 1.0, 1.0, record_strong_convexity=0.0, record_smoothness=2.5,
                                        record_grad_diff=1.0, data_size=100, batch_size=10)
    assert b.contraction == pytest.approx(max(1 - 0.0079, 251 * 0.0079 - 1), rel=1e-12)


# -- issue 25: every coupling route against its closed form, re-derived here at random settings ----------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _rho_gap(g, m, L):
    """LITERATURE.md §4: the gradient step of an m-strongly convex L-smooth function is
    max(|1 - g m|, |1 - g L|)-Lipschitz."""
    rho = max(abs(1 - g * m), abs(1 - g * L))
    return rho, 1 - rho


@settings(max_examples=200, deadline=None)
# (d subnormal: the reference g d / gap below, computed in floats, loses its relative precision there)
@given(m=st.floats(0.05, 20.0), ratio=st.floats(1.0, 5.0), frac=st.floats(0.01, 0.99),
       d=st.floats(0.0, 10.0, allow_subnormal=False),
       mu_rec=st.floats(0.0, 2.0), extra=st.floats(0.0, 3.0), n=st.integers(1, 200), s=st.integers(1, 20),
       pv=st.floats(0.0, 2.0), lf=st.floats(0.1, 5.0), l2=st.one_of(st.none(), st.floats(0.1, 5.0)))
def test_coupling_routes_match_their_closed_forms(m, ratio, frac, d, mu_rec, extra, n, s, pv, lf, l2):
    L = m * ratio
    g = frac * 2 / L                                                        # any step below 2/L contracts
    rho, gap = _rho_gap(g, m, L)
    # route A (ULA): gamma * grad_diff / (1 - rho)
    a = S.coupling_strongly_convex(g, m, L, d)
    assert a.contraction == pytest.approx(rho, rel=1e-12, abs=1e-15)
    assert a.distance == pytest.approx(g * d / gap, rel=1e-9) and a.distance >= g * d / gap * (1 - 1e-12)
    assert (a.drift_step_diff, a.step_size, a.source) == (d, g, S.SOURCE_STRONGLY_CONVEX)
    # route B (K + V): 2 gamma c / (1 - rho_K)
    b = S.coupling_k_plus_v(g, m, L, d, sampler="SGLD")
    assert b.distance == pytest.approx(2 * g * d / gap, rel=1e-9) and b.drift_step_diff == 2 * d
    assert b.assumptions == {"sampler": "SGLD", "strong_convexity": m, "smoothness": L, "grad_bound": d,
                             "coupling": "same start (data-independent), same Gaussian noise"}
    # SGLD with shared batches: the minibatch potential is (m + n mu_rec)-strongly convex and
    # (L + n L_rec + pv)-smooth, the per-step difference (n/s) * record_grad_diff
    s = min(s, n)
    L_rec = mu_rec + extra
    mb, Lb = m + n * mu_rec, L + n * L_rec + pv
    gs = frac * 2 / Lb
    rho_b, gap_b = _rho_gap(gs, mb, Lb)
    c = S.coupling_strongly_convex_sgld(gs, m, L, mu_rec, L_rec, d, n, s, prior_v_smoothness=pv)
    assert c.assumptions["minibatch_strong_convexity"] == pytest.approx(mb, rel=1e-12)
    assert c.assumptions["minibatch_smoothness"] == pytest.approx(Lb, rel=1e-12)
    assert c.contraction == pytest.approx(rho_b, rel=1e-9, abs=1e-15)
    assert c.drift_step_diff == pytest.approx(n / s * d, rel=1e-12)
    assert c.distance == pytest.approx(gs * (n / s) * d / gap_b, rel=1e-6)
    # the statistic's windows (004 Proposition 3.7 with delta~ = 0): L1 lipschitz * distance, L2 l2_lipschitz * it
    r = S.coupling_route(a, lf, l2)
    assert r.sensitivity == pytest.approx(lf * a.distance, rel=1e-12) and r.coupling_delta == 0.0
    assert r.l2_sensitivity == pytest.approx((lf if l2 is None else l2) * a.distance, rel=1e-12)
    assert r.l2_sensitivity >= (lf if l2 is None else l2) * a.distance
    assert r.assumptions["lipschitz"] == lf and r.assumptions["coupling_distance"] == a.distance


@pytest.mark.parametrize("call,message", [
    (lambda: S.coupling_strongly_convex(0.6, 1.0, 4.0, 1.0),
     "step_size = 0.6 must be < 2/total_smoothness = 0.5: the gradient step does not contract (rho = 1.4) and no "
     "coupling bound is proven; lower the step size"),
    (lambda: S.coupling_k_plus_v(1.0, 1.0, 2.0, 1.0),
     "step_size = 1 must be < 2/smoothness = 1: the gradient step does not contract (rho = 1) and no coupling "
     "bound is proven; lower the step size"),
    (lambda: S.coupling_strongly_convex(0.1, 0.0, 4.0, 1.0),
     "total_strong_convexity = 0 must be > 0; the coupling bound needs a strongly convex (part of the) potential"),
    (lambda: S.coupling_strongly_convex(0.1, 5.0, 4.0, 1.0), "total_smoothness = 4 must be >= total_strong_convexity = 5"),
    (lambda: S.coupling_strongly_convex_sgld(0.01, 1.0, 1.0, 0.5, 0.25, 1.0, 10, 5),
     "record_smoothness = 0.25 must be >= record_strong_convexity = 0.5"),
    (lambda: S.coupling_strongly_convex(0.1, 1.0, 4.0, -1.0), "grad_diff = -1 must be >= 0"),
    (lambda: S.coupling_k_plus_v(0.1, 1.0, 2.0, -1.0), "grad_bound = -1 must be >= 0"),
    (lambda: S.coupling_route(S.coupling_k_plus_v(0.1, 1.0, 2.0, 1.0), 0.0),
     "lipschitz = 0 must be > 0; declare the statistic's Lipschitz constant"),
])
def test_coupling_refusals_name_parameter_value_and_condition(call, message):
    with pytest.raises(AssumptionError) as e:
        call()
    assert str(e.value) == message


def test_laplace_route_certificate_states_what_it_proves():
    # route A window: lipschitz 2 * distance 0.5 = 1 (rounded up); Laplace scale 1.25 -> eps_noise = 1/1.25 = 0.8
    b = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    r = S.coupling_route(b, lipschitz=2.0, l2_lipschitz=1.0)
    cert = r.certificate(epsilon=0.9, noise_scale=1.25, num_coords=4)
    assert (cert.mechanism, cert.source) == ("mc-estimate", "004 Proposition 3.7 + coupling (LITERATURE §7.1)")
    assert (cert.curve.eps0, cert.curve.delta0) == (0.9, 0.0)              # the claimed point (0.9, 0), not 0.8
    k = cert.constants
    assert (k["noise_scale"], k["epsilon"], k["delta_out"]) == (1.25, 0.9, 0.0)
    assert k["noise_variance"] == pytest.approx(2 * 1.25 ** 2, rel=1e-15)      # Laplace: 2 b^2
    assert k["sensitivity"] == pytest.approx(1.0, rel=1e-12) and k["sensitivity"] >= 1.0
    assert k["laplace_epsilon"] == pytest.approx(k["sensitivity"] / 1.25, rel=1e-12)
    a = cert.assumptions
    assert a["num_coords"] == 4 and a["lipschitz"] == 2.0 and a["coupling_delta"] == 0.0
    assert a["coupling_window"] == k["sensitivity"] and a["coupling_grad_diff"] == 0.5
    assert cert.notes == ("L1 sensitivity; discretised Laplace noise per coordinate (grid rounding charged to the "
                          "sensitivity)")
    assert r.certificate(epsilon=0.9, noise_scale=1.25, num_coords=4, mechanism="x").mechanism == "x"
    # scale exactly window / epsilon is enough (up to the 1e-12 rounding allowance); a smaller one is refused
    w = k["sensitivity"]
    assert r.certificate(epsilon=0.5, noise_scale=w / 0.5, num_coords=1).curve.eps0 == 0.5
    with pytest.raises(AssumptionError) as e:
        r.certificate(epsilon=0.5, noise_scale=w / 0.5 * (1 - 1e-9), num_coords=1)
    assert str(e.value).startswith("noise_scale = 2 is too small for epsilon = 0.5 at sensitivity 1")
    with pytest.raises(AssumptionError, match="epsilon = 0 must be > 0; pass a positive number"):
        r.certificate(epsilon=0.0, noise_scale=1.0, num_coords=1)
    # Prop 3.10's route adds its delta to the claimed point; its window 2 * 0.1 + 0.05 is rounded up (the doubles
    # 0.1 and 0.05 are above 1/10 and 1/20, so the window is the float after 0.25, issue 25)
    w2 = math.nextafter(0.25, 1.0)
    c2 = S.concentration_route(0.1, 0.01, 0.05).certificate(epsilon=1.0, noise_scale=w2, num_coords=2)
    assert (c2.curve.eps0, c2.curve.delta0) == (1.0, pytest.approx(0.0199)) and c2.source == "004 Proposition 3.10"
    assert c2.assumptions["coupling_window"] == w2 and c2.assumptions["concentration"] == 0.1
    with pytest.raises(AssumptionError, match="noise_scale = 0.25 is too small"):
        S.concentration_route(0.1, 0.01, 0.05).certificate(epsilon=1.0, noise_scale=0.25, num_coords=2)


def test_sample_and_aggregate_route_keeps_only_its_own_hypotheses():
    r = S.SensitivityRoute(source="sample-and-aggregate", sensitivity=0.5, coupling_delta=0.0,
                           assumptions={"route": "sample-and-aggregate", "chunks": 4})
    cert = r.certificate(epsilon=1.0, noise_scale=0.5, num_coords=3)
    assert cert.assumptions == {"route": "sample-and-aggregate", "chunks": 4, "num_coords": 3}   # no coupling window
    assert r.delta_at() == 0.0 and S.concentration_route(0.1, 0.01, 0.05).delta_at() == pytest.approx(0.0199)


def test_gaussian_route_certificate_and_refusals():
    from bayesdp.curves import RDP

    b = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    r = S.coupling_route(b, lipschitz=2.0, l2_lipschitz=1.0)
    rho = 0.01
    eps = RDP.linear(rho).epsilon(1e-5)          # CKS20 Prop. 12 of rho-zCDP: the smallest epsilon it certifies
    g = r.gaussian_certificate(epsilon=eps, delta=1e-5, rho=rho, sigma=5.0, l2_window=0.5, num_coords=3)
    assert (g.mechanism, g.source) == ("mc-estimate", "004 Proposition 3.7 + coupling (LITERATURE §7.1) + CKS20 "
                                                      "Theorem 14")
    assert g.curve.is_linear and g.curve.kappa == rho
    assert g.constants == {"noise_scale": 5.0, "noise_variance": 25.0, "rho": rho, "sensitivity": 0.5,
                           "epsilon": eps, "delta": 1e-5}
    assert {k: g.assumptions[k] for k in ("num_coords", "l2_window", "coupling_delta", "lipschitz")} == {
        "num_coords": 3, "l2_window": 0.5, "coupling_delta": 0.0, "lipschitz": 2.0}
    assert g.notes == ("L2 sensitivity; discretised Gaussian noise per coordinate (grid rounding sqrt(k) r charged to "
                       "the sensitivity); rho-zCDP, converted by CKS20 Proposition 12")
    assert r.gaussian_certificate(eps, 1e-5, rho, 5.0, 0.5, 3, mechanism="y").mechanism == "y"
    with pytest.raises(AssumptionError) as e:
        r.gaussian_certificate(eps * (1 - 1e-6), 1e-5, rho, 5.0, 0.5, 3)
    assert str(e.value).startswith("noise_scale = 5 is too small for epsilon = ") and "(rho = 0.01)" in str(e.value)
    with pytest.raises(AssumptionError) as e:
        S.concentration_route(0.1, 0.01, 0.05).gaussian_certificate(1.0, 1e-5, rho, 5.0, 0.5, 3)
    assert str(e.value) == ("Gaussian noise needs the coupling route (004 Proposition 3.7 with delta~ = 0); route "
                            "'004 Proposition 3.10' adds delta 0.0199: use Laplace noise")
    with pytest.raises(AssumptionError, match="rho = 0 must be > 0; pass a positive number"):
        r.gaussian_certificate(1.0, 1e-5, 0.0, 5.0, 0.5, 3)
    with pytest.raises(AssumptionError, match="epsilon = 0 must be > 0; pass a positive number"):
        r.gaussian_certificate(0.0, 1e-5, rho, 5.0, 0.5, 3)


_SGLD = dict(step_size=0.01, strong_convexity=1.0, smoothness=1.0, record_strong_convexity=0.0, record_smoothness=1.0,
             record_grad_diff=1.0, data_size=10, batch_size=5)


@pytest.mark.parametrize("change,message", [
    (dict(record_strong_convexity=None), "record_strong_convexity = None: the SGLD coupling bound needs every "
     "likelihood term to be convex; use full-batch ULA or declare the record terms convex"),
    (dict(record_strong_convexity=-1.0), "record_strong_convexity = -1 must be >= 0"),
    (dict(record_smoothness=-1.0), "record_smoothness = -1 must be >= 0"),
    (dict(data_size=0), "data_size = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(batch_size=0), "batch_size = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(batch_size=11), "batch_size = 11 must be <= data_size = 10"),
    (dict(strong_convexity=0.0), "strong_convexity = 0 must be > 0; pass a positive number"),
    (dict(smoothness=-1.0), "smoothness = -1 must be > 0; pass a positive number"),
    (dict(prior_v_smoothness=-1.0), "prior_v_smoothness = -1 must be >= 0"),
    (dict(record_grad_diff=-1.0), "record_grad_diff = -1 must be >= 0"),
])
def test_sgld_coupling_refusals(change, message):
    with pytest.raises(AssumptionError) as e:
        S.coupling_strongly_convex_sgld(**{**_SGLD, **change})
    assert str(e.value) == message


def test_couplings_record_their_hypotheses():
    same = "same start (data-independent), same Gaussian noise"
    a = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    assert a.assumptions == {"sampler": "ULA", "total_strong_convexity": 1.0, "total_smoothness": 4.0,
                             "grad_diff": 0.5, "coupling": same}
    assert S.coupling_k_plus_v(0.1, 1.0, 2.0, 0.3).assumptions["sampler"] == "ULA"      # the default sampler
    assert S.coupling_k_plus_v(0.1, 1.0, 2.0, 0.3).step_size == 0.1
    b = S.coupling_strongly_convex_sgld(**_SGLD)
    assert b.step_size == 0.01
    assert b.assumptions == {"sampler": "SGLD", "strong_convexity": 1.0, "smoothness": 1.0,
                             "record_strong_convexity": 0.0, "record_smoothness": 1.0, "record_grad_diff": 1.0,
                             "data_size": 10, "batch_size": 5, "minibatch_strong_convexity": 1.0,
                             "minibatch_smoothness": 11.0,
                             "coupling": "same start, same Gaussian noise, same minibatch indices"}
    r = S.coupling_route(a, 2.0, 0.5)
    assert {k: r.assumptions[k] for k in ("lipschitz", "l2_lipschitz", "coupling_sampler")} == {
        "lipschitz": 2.0, "l2_lipschitz": 0.5, "coupling_sampler": "ULA"}
    with pytest.raises(AssumptionError) as e:
        S.coupling_route(a, 1.0, 0.0)
    assert str(e.value) == "l2_lipschitz = 0 must be > 0; pass a positive number"


def test_contraction_refusals_name_step_and_smoothness():
    with pytest.raises(AssumptionError) as e:
        S.coupling_strongly_convex(0.0, 1.0, 4.0, 1.0)
    assert str(e.value) == "step_size = 0 must be > 0; pass a positive number"
    with pytest.raises(AssumptionError) as e:
        S.coupling_strongly_convex(0.1, 1.0, -1.0, 1.0)
    assert str(e.value) == "total_smoothness = -1 must be > 0; pass a positive number"


def test_a_laplace_scale_a_hair_too_small_is_refused_not_claimed_at_the_requested_epsilon():
    """The certificate claims ApproxDP(epsilon): a noise scale whose own epsilon (sensitivity / scale) exceeds epsilon
    by any amount is refused (it was accepted up to a relative 1e-12 before: docs/mutation.md)."""
    from bayesdp.errors import AssumptionError
    from bayesdp.publish.sensitivity import coupling_k_plus_v, coupling_route

    route = coupling_route(coupling_k_plus_v(0.1, 1.0, 1.0, grad_bound=0.5), lipschitz=2.0)
    eta = route.sensitivity
    ok = route.certificate(1.0, eta * (1 + 1e-15), num_coords=1)
    assert ok.constants["epsilon"] == 1.0 and ok.constants["laplace_epsilon"] <= 1.0
    with pytest.raises(AssumptionError, match="is too small for epsilon"):
        route.certificate(1.0, eta * (1 - 1e-13), num_coords=1)
