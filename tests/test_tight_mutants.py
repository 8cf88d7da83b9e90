"""theorems/tight.py against independently derived numbers (issue 25, docs/mutation.md).

Each certificate's constant is recomputed here in 50-digit mpmath from the formula of its source
(Gopi-Lee-Liu, Dong-Roth-Su Cor. 3.3, Bok-Su-Altschuler, 004 Theorem 5.2 with the exact contraction
factor, the window argument of docs/tight.md) and must be an upper bound within 1e-12 (relative) of it.
Refusals are checked word for word, and the branches (V convex or not, T < 1, linear v, an empty window
term) each at a point where a wrong branch gives another number.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayesdp.errors import AssumptionError
from bayesdp.theorems import tight as TT

mp.mp.dps = 50
COMMON = "common, data-independent"


def _upper_close(got: float, exact, rel: float = 1e-12) -> None:
    """``got`` is an upper bound of the real number ``exact`` and within ``rel`` of it."""
    exact = mp.mpf(exact)
    assert mp.mpf(got) >= exact, (got, exact)
    assert mp.mpf(got) <= exact * (1 + mp.mpf(rel)) + mp.mpf("1e-300"), (got, exact)


# -- total_potential_constants ------------------------------------------------------------------------


@pytest.mark.parametrize("lv,convex,expected", [
    (0.5, False, (0.5, 2.5, "V 0.5-smooth, not declared convex: m = mu - L_V, L = L_K + L_V = 2.5")),
    (0.5, True, (1.0, 2.5, "V convex: m = mu, L = L_K + L_V = 2.5")),
    (None, True, (1.0, None, "V convex: m = mu")),
    (None, False, (None, None, "V's smoothness and convexity not declared")),
    (1.5, False, (None, 3.5, "mu - L_V = -0.5 <= 0: U_D is not shown strongly convex")),
    # m = mu - L_V = 0 exactly: not strongly convex (the boundary belongs to the refusal branch)
    (1.0, False, (None, 3.0, "mu - L_V = 0 <= 0: U_D is not shown strongly convex")),
    (0.0, False, (1.0, 2.0, "V 0-smooth, not declared convex: m = mu - L_V, L = L_K + L_V = 2")),
])
def test_total_potential_constants_every_branch(lv, convex, expected):
    assert TT.total_potential_constants(1.0, 2.0, v_smoothness=lv, v_convex=convex) == expected


def test_total_potential_constants_equal_smoothness_is_admitted():
    # mu = L is allowed (a quadratic K); L_V = 0.25 gives m = 0.75, L = 1.25
    assert TT.total_potential_constants(1.0, 1.0, 0.25, False)[:2] == (0.75, 1.25)


@pytest.mark.parametrize("args,message", [
    ((0.0, 2.0, None, False), "strong_convexity = 0 must be > 0; pass a positive number"),
    ((1.0, -1.0, None, False), "smoothness = -1 must be > 0; pass a positive number"),
    ((1.0, 0.5, None, False), "smoothness = 0.5 must be >= strong_convexity = 1 (mu <= L for an L-smooth "
                              "mu-strongly convex K); check both constants"),
    ((1.0, 2.0, -1.0, False), "v_smoothness = -1 must be >= 0; declare L_V >= 0, the Lipschitz constant of "
                              "grad V (0 for linear V)"),
])
def test_total_potential_constants_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        TT.total_potential_constants(*args)
    assert str(e.value) == message


# -- posterior_gdp (Gopi-Lee-Liu: Delta sqrt(beta/m)) ---------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(m=st.floats(1e-3, 1e3), d=st.floats(0.0, 1e3), beta=st.floats(1e-2, 1e2))
def test_posterior_gdp_is_delta_sqrt_beta_over_m(m, d, beta):
    cert = TT.posterior_gdp(m, d, beta)
    exact = mp.mpf(d) * mp.sqrt(mp.mpf(beta) / mp.mpf(m))
    _upper_close(cert.gdp_mu, exact)
    assert cert.constants == {"gdp_mu": cert.gdp_mu}


def test_posterior_gdp_by_hand_and_record():
    # beta/m = 2.5/0.4 = 6.25, sqrt = 2.5, times Delta = 3: 7.5 (rounded up by at most a few ulps)
    cert = TT.posterior_gdp(0.4, 3.0, 2.5, mechanism="m")
    assert 7.5 <= cert.gdp_mu <= 7.5 * (1 + 1e-15)
    assert cert.mechanism == "m" and cert.source == TT.POSTERIOR_SOURCE
    assert cert.assumptions == {"total_strong_convexity": 0.4, "grad_diff": 3.0, "inverse_temperature": 2.5,
                                "sampler": "exact draw from pi_D (not ULA/SGLD)"}
    assert TT.posterior_gdp(1.0, 0.0).gdp_mu == 0.0
    assert TT.posterior_gdp(4.0, 2.0).mechanism == "posterior"


@pytest.mark.parametrize("args,message", [
    ((0.0, 1.0, 1.0), "total_strong_convexity = 0 must be > 0; the posterior route needs a strongly convex "
                      "potential U_D"),
    ((1.0, -1.0, 1.0), "grad_diff = -1 must be >= 0"),
    ((1.0, 1.0, 0.0), "inverse_temperature = 0 must be > 0; pass a positive number"),
])
def test_posterior_gdp_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        TT.posterior_gdp(*args)
    assert str(e.value) == message


# -- path_gdp (Dong-Roth-Su Cor. 3.3: Delta sqrt(beta n gamma / 2)) -------------------------------------


@settings(max_examples=60, deadline=None)
@given(d=st.floats(0.0, 1e3), g=st.floats(1e-6, 10.0), n=st.integers(1, 10**7), beta=st.floats(1e-2, 1e2))
def test_path_gdp_is_the_composition_of_n_gaussian_steps(d, g, n, beta):
    cert = TT.path_gdp(d, g, n, beta)
    step = mp.mpf(d) * mp.sqrt(mp.mpf(g) * mp.mpf(beta) / 2)
    _upper_close(cert.gdp_mu, step * mp.sqrt(n))
    _upper_close(cert.constants["step_gdp_mu"], step)


def test_path_gdp_by_hand_and_record():
    # Delta = 2, gamma = 0.5, n = 9, beta = 4: step mu = 2 sqrt(0.5 * 4 / 2) = 2; path mu = 2 sqrt(9) = 6
    cert = TT.path_gdp(2.0, 0.5, 9, 4.0, mechanism="m", note="a note")
    assert 6.0 <= cert.gdp_mu <= 6.0 * (1 + 1e-15)
    assert 2.0 <= cert.constants["step_gdp_mu"] <= 2.0 * (1 + 1e-15)
    assert cert.mechanism == "m" and cert.source == TT.PATH_GDP_SOURCE and cert.notes == "a note"
    assert set(cert.constants) == {"gdp_mu", "step_gdp_mu"} and cert.constants["gdp_mu"] == cert.gdp_mu
    assert cert.assumptions == {"step_drift_diff": 2.0, "step_size": 0.5, "num_steps": 9,
                                "inverse_temperature": 4.0, "x0": COMMON}
    default = TT.path_gdp(1.0, 0.01, 100)
    assert default.mechanism == "ula-path" and default.notes == ""


@pytest.mark.parametrize("args,message", [
    ((-1.0, 0.1, 10, 1.0), "grad_diff = -1 must be >= 0"),
    ((1.0, 0.0, 10, 1.0), "step_size = 0 must be > 0; pass a positive number"),
    ((1.0, 0.1, 0, 1.0), "num_steps = 0 must be an integer >= 1; pass a whole number >= 1"),
    ((1.0, 0.1, 10, -2.0), "inverse_temperature = -2 must be > 0; pass a positive number"),
])
def test_path_gdp_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        TT.path_gdp(*args)
    assert str(e.value).startswith(message)


# -- last_draw_gdp (Bok-Su-Altschuler) --------------------------------------------------------------------


def _bsa_mu(m, L, d, g, n, beta):
    m, L, d, g, beta = (mp.mpf(x) for x in (m, L, d, g, beta))
    rho = max(abs(1 - g * m), abs(1 - g * L))
    return d * mp.sqrt(g * beta / 2) * mp.sqrt((1 + rho) / (1 - rho) * (1 - rho ** n) / (1 + rho ** n))


@settings(max_examples=80, deadline=None)
@given(m=st.floats(1e-2, 10.0), ratio=st.floats(1.0, 20.0), frac=st.floats(1e-3, 0.999), d=st.floats(1e-3, 10.0),
       n=st.integers(1, 10**6), beta=st.floats(0.1, 10.0))
def test_last_draw_gdp_is_bok_su_altschuler(m, ratio, frac, d, n, beta):
    L = m * ratio
    g = frac * 2.0 / L
    cert = TT.last_draw_gdp(m, L, d, g, n, beta)
    _upper_close(cert.gdp_mu, _bsa_mu(m, L, d, g, n, beta), rel=1e-11)
    rho = max(abs(1 - mp.mpf(g) * m), abs(1 - mp.mpf(g) * L))
    _upper_close(cert.constants["rho"], rho, rel=1e-15)
    _upper_close(cert.constants["step_gdp_mu"], mp.mpf(d) * mp.sqrt(mp.mpf(g) * beta / 2))


def test_last_draw_gdp_by_hand_and_record():
    # m = 1, L = 3, gamma = 0.5: rho = max(0.5, 0.5) = 0.5; n = 2: (1.5/0.5) (0.75/1.25) = 1.8;
    # step mu = Delta sqrt(gamma beta / 2) = 2 sqrt(0.5 * 4 / 2) = 2, mu = 2 sqrt(1.8)
    cert = TT.last_draw_gdp(1.0, 3.0, 2.0, 0.5, 2, 4.0, mechanism="m")
    _upper_close(cert.gdp_mu, 2 * mp.sqrt(mp.mpf("1.8")))
    assert cert.constants["rho"] == 0.5 and cert.constants["step_gdp_mu"] >= 2.0
    assert cert.mechanism == "m" and cert.source == TT.LAST_DRAW_SOURCE
    assert set(cert.constants) == {"gdp_mu", "rho", "step_gdp_mu"} and cert.constants["gdp_mu"] == cert.gdp_mu
    assert cert.assumptions == {"total_strong_convexity": 1.0, "total_smoothness": 3.0, "grad_diff": 2.0,
                                "step_size": 0.5, "num_steps": 2, "inverse_temperature": 4.0, "x0": COMMON}
    # n = 1: the factor is exactly 1 and the bound is one Gaussian step
    one = TT.last_draw_gdp(1.0, 3.0, 2.0, 0.5, 1, 4.0)
    assert 2.0 <= one.gdp_mu <= 2.0 * (1 + 1e-13)
    assert one.mechanism == "ula-final"
    # rho from the smoothness end: m = 1, L = 3, gamma = 0.6: |1 - 0.6| = 0.4 < |1 - 1.8| = 0.8
    assert TT.last_draw_gdp(1.0, 3.0, 1.0, 0.6, 5).constants["rho"] == pytest.approx(0.8, rel=1e-15)
    # m = L: the step must be < 2/L (the boundary 2/L itself is refused)
    assert TT.last_draw_gdp(2.0, 2.0, 1.0, 0.5, 3).constants["rho"] == 0.0


@pytest.mark.parametrize("kwargs,message", [
    (dict(total_strong_convexity=0.0), "total_strong_convexity = 0 must be > 0; pass a positive number"),
    (dict(total_smoothness=0.0), "total_smoothness = 0 must be > 0; pass a positive number"),
    (dict(total_smoothness=0.5), "total_smoothness = 0.5 must be >= total_strong_convexity = 1"),
    (dict(grad_diff=-1.0), "grad_diff = -1 must be >= 0"),
    (dict(step_size=0.0), "step_size = 0 must be > 0; pass a positive number"),
    (dict(step_size=1.0), "step_size = 1 must be < 2/L_total = 1 for the gradient step of U_D to contract "
                          "(Bok-Su-Altschuler route); choose a smaller step size"),
    (dict(num_steps=0), "num_steps = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(inverse_temperature=0.0), "inverse_temperature = 0 must be > 0; pass a positive number"),
    # gamma m = 1e-10 * 1e-320 is below the smallest subnormal: the gap rounds down to 0 and is refused
    (dict(total_strong_convexity=1e-320, step_size=1e-10), "step_size = 1e-10 gives 1 - rho = 0: the gradient "
                                                           "step of U_D does not contract; choose a step size in "
                                                           "(0, 2/L_total)"),
    # step mu = 1e300 (gamma beta/2 = 1), factor ~ 2/gap = 2e20: the product leaves the float range
    (dict(grad_diff=1e300, total_strong_convexity=1e-20, total_smoothness=1.0, step_size=1.0, num_steps=10**22,
          inverse_temperature=2.0),
     "last-draw GDP parameter overflows (Delta = 1e+300, step_size = 1); the constants are outside the "
     "float range"),
])
def test_last_draw_gdp_refusals(kwargs, message):
    base = dict(total_strong_convexity=1.0, total_smoothness=2.0, grad_diff=1.0, step_size=0.1, num_steps=10)
    with pytest.raises(AssumptionError) as e:
        TT.last_draw_gdp(**{**base, **kwargs})
    assert str(e.value).startswith(message)


# -- kv_coupling_bound -------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(mu=st.floats(1e-2, 10.0), ratio=st.floats(1.0, 10.0), off=st.floats(0.0, 10.0), frac=st.floats(1e-3, 0.999))
def test_kv_coupling_bound_both_factors(mu, ratio, off, frac):
    L = mu * ratio
    mu_, L_, off_ = mp.mpf(mu), mp.mpf(L), mp.mpf(off)
    g = frac * 2.0 / L
    gap = min(mp.mpf(g) * mu_, 2 - mp.mpf(g) * L_)
    _upper_close(TT.kv_coupling_bound(mu, L, off, g, exact=True), mp.mpf(g) * off_ / gap)
    g = frac * 2.0 * mu / (L * L)
    a = mu_ - mp.mpf(g) * L_ ** 2 / 2
    if a > 0:
        _upper_close(TT.kv_coupling_bound(mu, L, off, g, exact=False), off_ / a)


def test_kv_coupling_bound_by_hand():
    # SEEDS §4.11: mu = 1, L = 2, offset 2, gamma = 0.1: 2/(1 - 0.2) = 2.5; exact 0.1 * 2/0.1 = 2
    _upper_close(TT.kv_coupling_bound(1.0, 2.0, 2.0, 0.1, exact=False), 2 / (1 - mp.mpf(0.1) * 2), rel=1e-15)
    assert 2.0 <= TT.kv_coupling_bound(1.0, 2.0, 2.0, 0.1, exact=True) <= 2.0 * (1 + 1e-13)
    # the exact factor at gamma = 0.75 > 2 mu/L^2 = 0.5: rho = max(0.25, 0.5), C = 0.75 * 2 / 0.5 = 3
    assert 3.0 <= TT.kv_coupling_bound(1.0, 2.0, 2.0, 0.75, exact=True) <= 3.0 * (1 + 1e-13)
    assert TT.kv_coupling_bound(1.0, 2.0, 0.0, 0.1, exact=False) == 0.0


@pytest.mark.parametrize("args,message", [
    ((0.0, 2.0, 1.0, 0.1, True), "strong_convexity = 0 must be > 0; pass a positive number"),
    ((1.0, 0.0, 1.0, 0.1, True), "smoothness = 0 must be > 0; pass a positive number"),
    ((1.0, 2.0, -1.0, 0.1, True), "drift_offset = -1 must be >= 0"),
    ((1.0, 2.0, 1.0, 0.0, True), "step_size = 0 must be > 0; pass a positive number"),
    ((1.0, 2.0, 1.0, 1.0, True), "step_size = 1 must be in (0, 2/L) = (0, 1) for the gradient step of K to "
                                 "contract; choose a smaller step size, or release the path"),
    ((1.0, 2.0, 1.0, 0.5, False), "step_size = 0.5 must be in (0, 2*mu/L^2) = (0, 0.5) for 004's contraction "
                                  "factor"),
    # mu = 2, L = 4: 2 mu/L^2 = 0.25 (not 2/mu/L^2 = 0.0625)
    ((2.0, 4.0, 1.0, 0.25, False), "step_size = 0.25 must be in (0, 2*mu/L^2) = (0, 0.25) for 004's contraction "
                                   "factor"),
    ((1.0, 2.0, 1e300, math.nextafter(0.5, 0.0), False),
     "coupling bound drift_offset / (mu - gamma L^2/2) overflows (step_size = 0.5 is within rounding of "
     "2*mu/L^2 = 0.5); choose a smaller step size"),
])
def test_kv_coupling_bound_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        TT.kv_coupling_bound(*args)
    assert str(e.value) == message


# -- theorem_5_2_exact_contraction --------------------------------------------------------------------------


def test_theorem_5_2_exact_contraction_by_hand():
    # SEEDS §4.11 constants: C = 2, C2 = beta (C (L + 1) + 2c)^2 = (2 * 3 + 2)^2 = 64; beta = 2 doubles it
    for beta, C2 in [(1.0, 64.0), (2.0, 128.0)]:
        cert = TT.theorem_5_2_exact_contraction(1.0, 2.0, 1.0, 0.1, 100, inverse_temperature=beta, mechanism="m")
        _upper_close(cert.constants["C"], C2, rel=1e-12)
        _upper_close(cert.constants["coupling_bound"], 2.0, rel=1e-13)
        assert cert.constants["drift_offset"] == 2.0 and cert.constants["rho_K"] == pytest.approx(0.9, rel=1e-15)
        assert cert.curve.rdp(3.0) == pytest.approx(3.0 * C2 / 4.0, rel=1e-12)
        assert cert.mechanism == "m" and cert.source == TT.EXACT_CONTRACTION_SOURCE
        assert cert.assumptions == {"strong_convexity": 1.0, "smoothness": 2.0, "grad_bound": 1.0, "step_size": 0.1,
                                    "num_steps": 100, "inverse_temperature": beta, "batch_size": 1,
                                    "linear_v": False, "x0": COMMON}
    # linear v with c = 2, batch s = 4: offset 2c/s = 1, C = 0.1 * 1/0.1 = 1, C2 = (1 * 3 + 1)^2 = 16
    lin = TT.theorem_5_2_exact_contraction(1.0, 2.0, 2.0, 0.1, 100, batch_size=4, linear_v=True)
    assert lin.constants["drift_offset"] == 1.0 and lin.mechanism == "ula-final"
    _upper_close(lin.constants["C"], 16.0, rel=1e-12)
    assert lin.assumptions["batch_size"] == 4 and lin.assumptions["linear_v"] is True
    # the batch only matters with linear v
    assert TT.theorem_5_2_exact_contraction(1.0, 2.0, 1.0, 0.1, 100, batch_size=4).constants["drift_offset"] == 2.0


def test_theorem_5_2_exact_contraction_short_horizon():
    # T = n gamma = 0.5 < 1: Proposition 4.5's branch beta offset^2 T = 3 * 4 * 0.5 = 6
    cert = TT.theorem_5_2_exact_contraction(1.0, 2.0, 1.0, 0.1, 5, inverse_temperature=3.0)
    _upper_close(cert.constants["C"], 6.0, rel=1e-12)
    note = "T = n*gamma < 1: Proposition 4.5 branch (B.6), C = beta*c_off^2*T"
    assert cert.notes == note
    assert TT.theorem_5_2_exact_contraction(1.0, 2.0, 1.0, 0.1, 100).notes == ""
    # n = 3, gamma = 1/3: the float product is 1.0 but the exact n gamma is below 1, where Proposition 4.6 is not
    # proved: the horizon is decided on the exact product (Prop 4.5 branch, C = 4 c^2 T = 4 with T rounded to 1)
    third = TT.theorem_5_2_exact_contraction(1.0, 2.0, 1.0, 1 / 3, 3)
    assert 3 * (1 / 3) == 1.0 and third.notes == note
    _upper_close(third.constants["C"], 4.0, rel=1e-12)


@pytest.mark.parametrize("kwargs,message", [
    (dict(strong_convexity=0.0), "strong_convexity = 0 must be > 0; pass a positive number"),
    (dict(smoothness=0.0), "smoothness = 0 must be > 0; pass a positive number"),
    (dict(grad_bound=-1.0), "grad_bound = -1 must be >= 0"),
    (dict(num_steps=0), "num_steps = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(inverse_temperature=0.0), "inverse_temperature = 0 must be > 0; pass a positive number"),
    (dict(batch_size=0), "batch_size = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(step_size=1.0), "step_size = 1 must be in (0, 2/L) = (0, 1)"),
])
def test_theorem_5_2_exact_contraction_refusals(kwargs, message):
    base = dict(strong_convexity=1.0, smoothness=2.0, grad_bound=1.0, step_size=0.1, num_steps=10)
    with pytest.raises(AssumptionError) as e:
        TT.theorem_5_2_exact_contraction(**{**base, **kwargs})
    assert str(e.value).startswith(message)


# -- window_gdp -------------------------------------------------------------------------------------------


def _window_bruteforce(L, off, C, g, n, beta):
    A = mp.mpf(L) * C + off
    sd = mp.sqrt(2 * mp.mpf(g) / beta)
    vals = [(mp.sqrt(k) * g * (A + C / (k * mp.mpf(g))) / sd, k) for k in range(1, n + 1)]
    return min(vals)


@settings(max_examples=60, deadline=None)
@given(L=st.floats(0.0, 10.0), off=st.floats(0.0, 10.0), C=st.floats(0.0, 50.0), g=st.floats(1e-3, 1.0),
       n=st.integers(1, 300), beta=st.floats(0.1, 10.0))
def test_window_gdp_is_the_minimum_over_every_window(L, off, C, g, n, beta):
    cert = TT.window_gdp(L, off, C, g, n, beta)
    best, _ = _window_bruteforce(L, off, C, g, n, beta)
    _upper_close(cert.gdp_mu, best, rel=1e-12)
    k = cert.constants["window_steps"]
    assert 1 <= k <= n
    assert cert.constants["window_time"] == k * g
    assert cert.constants["gdp_mu"] == cert.gdp_mu


def test_window_gdp_by_hand_and_record():
    # SEEDS §4.16(j): A = L C + c_off = 7, C = 2.5, gamma = 0.1: mu(k)^2 = (0.7 k + 2.5)^2/(0.2 k), k* = 3.57;
    # k = 4: 5.3^2/0.8 = 35.1125, k = 3: 4.6^2/0.6 = 35.2667
    cert = TT.window_gdp(2.0, 2.0, 2.5, 0.1, 100, mechanism="m", note="n")
    assert cert.constants["window_steps"] == 4 and cert.constants["window_time"] == 0.4
    _upper_close(cert.gdp_mu, mp.sqrt(mp.mpf("35.1125")), rel=1e-13)
    assert cert.mechanism == "m" and cert.notes == "n" and cert.source == TT.WINDOW_SOURCE
    assert cert.assumptions == {"drift_lipschitz": 2.0, "drift_offset": 2.0, "coupling_bound": 2.5, "step_size": 0.1,
                                "num_steps": 100, "inverse_temperature": 1.0, "x0": COMMON}
    default = TT.window_gdp(2.0, 2.0, 2.5, 0.1, 100)
    assert default.mechanism == "ula-final" and default.notes == ""
    # beta = 4 halves sd: mu doubles
    _upper_close(TT.window_gdp(2.0, 2.0, 2.5, 0.1, 100, 4.0).gdp_mu, 2 * mp.sqrt(mp.mpf("35.1125")), rel=1e-13)
    # one step: the only window is k = 1 (k* = 3.57 is clamped to n), mu(1)^2 = (0.7 + 2.5)^2/0.2 = 51.2
    one = TT.window_gdp(2.0, 2.0, 2.5, 0.1, 1)
    assert one.constants["window_steps"] == 1
    _upper_close(one.gdp_mu, mp.sqrt(mp.mpf("51.2")), rel=1e-13)
    # the window is capped at n: n = 3 < k* = 3.57 takes k = 3
    assert TT.window_gdp(2.0, 2.0, 2.5, 0.1, 3).constants["window_steps"] == 3
    # k* = C/(A gamma) = 0.1/0.22 below 1 (C = 0.1, A = 2.2): k = 1, mu(1)^2 = (0.22 + 0.1)^2 / 0.2 = 0.512
    small = TT.window_gdp(2.0, 2.0, 0.1, 0.1, 100)
    assert small.constants["window_steps"] == 1
    _upper_close(small.gdp_mu, mp.sqrt(mp.mpf("0.512")), rel=1e-13)
    # k* = 3.57 exactly between: floor and ceil both tried (k = 4 wins above; C = 2.1 gives A = 6.2, k* = 3.39
    # and mu(3)^2 = 3.96^2/0.6 = 26.14 < mu(4)^2 = 4.58^2/0.8 = 26.22)
    assert TT.window_gdp(2.0, 2.0, 2.1, 0.1, 100).constants["window_steps"] == 3
    # A = 0 (no drift Lipschitz term, no offset): the longest window, mu = C / sqrt(n gamma * 2 gamma/beta)...
    flat = TT.window_gdp(0.0, 0.0, 2.0, 0.5, 8)
    # mu(n) = sqrt(n) gamma (C/(n gamma)) / sqrt(2 gamma) = C / (sqrt(n) sqrt(2 gamma)) = 2 / (sqrt(8) * 1) = 0.7071
    assert flat.constants["window_steps"] == 8
    _upper_close(flat.gdp_mu, 2 / mp.sqrt(8), rel=1e-13)
    assert TT.window_gdp(0.0, 0.0, 0.0, 0.5, 8).gdp_mu == 0.0


@pytest.mark.parametrize("kwargs,message", [
    (dict(drift_lipschitz=-1.0), "drift_lipschitz = -1 must be >= 0"),
    (dict(drift_offset=-1.0), "drift_offset = -1 must be >= 0"),
    (dict(coupling_bound=-1.0), "coupling_bound = -1 must be >= 0"),
    (dict(step_size=0.0), "step_size = 0 must be > 0; pass a positive number"),
    (dict(num_steps=0), "num_steps = 0 must be an integer >= 1; pass a whole number >= 1"),
    (dict(inverse_temperature=0.0), "inverse_temperature = 0 must be > 0; pass a positive number"),
    (dict(drift_lipschitz=1e300, coupling_bound=1e300), "window bound is not finite; check the constants"),
])
def test_window_gdp_refusals(kwargs, message):
    base = dict(drift_lipschitz=2.0, drift_offset=2.0, coupling_bound=2.5, step_size=0.1, num_steps=10)
    with pytest.raises(AssumptionError) as e:
        TT.window_gdp(**{**base, **kwargs})
    assert str(e.value).startswith(message)


def test_window_gdp_at_the_ends_of_the_float_range():
    # L C + c_off = 5e-324 (the smallest double) and gamma = 1: k* = C/(A gamma) = 2e323 overflows a float; the
    # window is then n (mu(k) decreases up to k*): mu = sqrt(beta (n gamma A + C)^2/(2 n gamma)) ~ C/sqrt(2 n gamma)
    cert = TT.window_gdp(0.0, 5e-324, 1.0, 1.0, 4)
    assert cert.constants["window_steps"] == 4
    _upper_close(cert.gdp_mu, (4 * mp.mpf(5e-324) + 1) / mp.sqrt(8), rel=1e-13)
    # A gamma = 2.5e-324 underflows to 0 as a float: still a window, and mu = gamma A sqrt(k)/sqrt(2 gamma) > 0
    cert = TT.window_gdp(0.0, 5e-324, 0.0, 0.5, 1)
    exact = mp.mpf(0.5) * mp.mpf(5e-324) / mp.sqrt(1)
    assert cert.gdp_mu > 0 and _upper_close(cert.gdp_mu, exact, rel=1e-12) is None


def test_sqrt_rational_up_is_an_upper_bound_within_one_float():
    from fractions import Fraction as Q

    cases = [Q(4), Q(2), Q(1, 3), Q(3, 2) ** 2 + Q(1, 2 ** 200), Q(3, 2) ** 2 - Q(1, 2 ** 200),
             Q(5e-324) ** 2, Q(10) ** 300, Q(7, 10 ** 650), Q(0)]
    for q in cases:
        r = TT._sqrt_rational_up(q)
        assert Q(r) ** 2 >= q                                          # an upper bound, compared exactly
        assert q == 0 or Q(math.nextafter(math.nextafter(r, 0.0), 0.0)) ** 2 < q   # within one float of it
    assert TT._sqrt_rational_up(Q(9, 4)) == 1.5                         # exact squares stay exact
