"""Certificate arithmetic at the edges (issue #13, item 2).

Every value is compared with the same formula evaluated in 50-digit arithmetic (mpmath) on the exact
binary values of the inputs: a certified constant must be >= the exact one (conservative) and close to
it (no digits lost to ``1 - rho`` computed by subtraction).  Conversions to (epsilon, delta) are checked
against the exact mu-GDP trade-off (Dong-Roth-Su Cor. 2.13) in 50 digits.
"""

import subprocess
import sys

import mpmath
import numpy as np
import pytest

from bayesdp.curves import GDP, RDP, ApproxDP
from bayesdp.theorems import girsanov as G
from bayesdp.theorems import tight as TT
from bayesdp.theorems.gradient_step import contraction_gap, coupling_bound
from bayesdp.theorems.hockey_stick import pnsgd_random_stop_delta, sc_step_lipschitz
from bayesdp.theorems.mixing import pabi_contractive_rdp

mpmath.mp.dps = 50
F = mpmath.mpf


def _mp_rho(g, m, L):
    g, m, L = F(g), F(m), F(L)
    return max(abs(1 - g * m), abs(1 - g * L))


def _mp_last_draw_mu(m, L, d, g, n, beta=1.0):
    rho = _mp_rho(g, m, L)
    rn = rho ** n
    return F(d) * mpmath.sqrt(F(g) * F(beta) / 2) * mpmath.sqrt((1 + rho) / (1 - rho) * (1 - rn) / (1 + rn))


def _mp_gdp_delta(mu, eps):
    mu, eps = F(mu), F(eps)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def _mp_gdp_epsilon(mu, delta):
    """exact epsilon(delta) of mu-GDP (50 digits: a bracketing root finder on the monotone delta(eps), then the
    root moved up by 1e-40 relative and checked to achieve delta: an upper end of a bracket 1e-40 wide, as 200
    bisection steps gave, at a tenth of the evaluations)."""
    if _mp_gdp_delta(mu, 0) <= delta:
        return F(0)
    lo, hi = F(0), F(mu) ** 2 / 2 + F(mu) * mpmath.sqrt(2 * mpmath.log(1 / F(delta))) + 1
    root = mpmath.findroot(lambda e: mpmath.log(_mp_gdp_delta(mu, e) / F(delta)), (lo, hi), solver="anderson",
                           verify=False)
    up = root * (1 + F(10) ** -40) + F(10) ** -60
    assert lo <= root <= hi and _mp_gdp_delta(mu, up) <= delta < _mp_gdp_delta(mu, root * (1 - F(10) ** -30))
    return up


GAMMA_MU = [1e-15, 1e-12, 1e-9]


@pytest.mark.parametrize("gm", GAMMA_MU)
@pytest.mark.parametrize("n", [1, 1000, 18_610, 10 ** 9])
def test_last_draw_gdp_against_mpmath(gm, n):
    m, L, d = 0.37, 2.9, 1.3
    g = gm / m
    cert = TT.last_draw_gdp(m, L, d, g, n)
    exact = _mp_last_draw_mu(m, L, d, g, n)
    mu = cert.constants["gdp_mu"]
    assert mu >= exact
    assert mu == pytest.approx(float(exact), rel=1e-12)


def test_issue_example_epsilon_not_below_exact():
    # the issue's report: gamma mu = 5.686e-13 (18,610 steps), delta = 1e-12: the float subtraction gave
    # an epsilon below the exact one
    m, L, d, n = 1.0, 1.0, 1.0, 18_610
    g = 5.686e-13
    cert = TT.last_draw_gdp(m, L, d, g, n)
    exact_mu = _mp_last_draw_mu(m, L, d, g, n)
    exact_eps = _mp_gdp_epsilon(exact_mu, F("1e-12"))
    eps = cert.epsilon(1e-12)
    assert eps >= exact_eps
    assert eps == pytest.approx(float(exact_eps), rel=1e-9)


@pytest.mark.parametrize("gm", GAMMA_MU)
def test_contraction_gap_and_coupling_bound(gm):
    m, L, off = 0.5, 3.0, 2.0
    g = gm / m
    gap = contraction_gap(g, m, L)
    exact_gap = 1 - _mp_rho(g, m, L)
    assert gap <= exact_gap and gap == pytest.approx(float(exact_gap), rel=1e-15)
    # uniform-in-k bound gamma * off / (1 - rho) = off / m here (rho = 1 - gamma m)
    C = coupling_bound(g, off, gap=gap)
    exact_C = F(g) * F(off) / exact_gap
    assert C >= exact_C and C == pytest.approx(float(exact_C), rel=1e-12)
    # the k-step bound gamma off (1 - rho^k)/(1 - rho)
    for k in (1, 10 ** 6, 10 ** 15):
        Ck = coupling_bound(g, off, num_steps=k, gap=gap)
        exact_Ck = F(g) * F(off) * (1 - (1 - exact_gap) ** k) / exact_gap
        assert Ck >= exact_Ck and Ck == pytest.approx(float(exact_Ck), rel=1e-12)
    # the exact-contraction route of 004 Theorem 5.2 (K + V) uses the same gap
    kv = TT.kv_coupling_bound(m, L, off, g, exact=True)
    assert kv >= exact_C and kv == pytest.approx(float(exact_C), rel=1e-12)


@pytest.mark.parametrize("frac", [1 - 1e-15, 1 - 1e-12, 1 - 1e-9, 0.5])
def test_paper_margin_near_the_step_limit(frac):
    # 004's a = mu - gamma L^2/2 near gamma = 2 mu / L^2: exact (no cancellation), bound 2c/a >= exact
    mu, L, c = 0.7, 1.9, 0.8
    g = frac * 2 * mu / (L * L)
    cert = G.theorem_5_2(mu, L, c, g, 10)
    exact_a = F(mu) - F(g) * F(L) ** 2 / 2
    assert cert.constants["a"] <= exact_a and cert.constants["a"] == pytest.approx(float(exact_a), rel=1e-15)
    exact_coupling = 2 * F(c) / exact_a
    assert cert.constants["coupling_bound"] >= exact_coupling
    assert cert.constants["coupling_bound"] == pytest.approx(float(exact_coupling), rel=1e-14)


def test_theorem_5_2_branch_decided_on_the_exact_horizon():
    # n * gamma = 1 - 2^-60 exactly is < 1 (Prop 4.5 branch) although the float product rounds to 1.0
    n = 3
    g = (1 - 2.0 ** -52) / 3   # 3 * g rounds to 1.0 in floats
    assert F(n) * F(g) < 1
    cert = G.theorem_5_2(1.0, 1.0, 0.1, g, n)
    assert "Proposition 4.5 branch" in cert.notes


@pytest.mark.parametrize("eta_rho", [1e-15, 1e-12, 1e-9])
def test_lemma_4_lipschitz_is_an_upper_bound(eta_rho):
    beta, rho = 2.0, 0.5
    eta = eta_rho / rho
    M = sc_step_lipschitz(eta, beta, rho)
    exact = mpmath.sqrt(1 - 2 * F(eta) * F(beta) * F(rho) / (F(beta) + F(rho)))
    assert M >= exact and M == pytest.approx(float(exact), rel=1e-15)


def test_random_stop_geometric_sum_near_theta_one():
    # theta -> 1 (1 - theta ~ 6e-14 at r = 15): (1 - th^n)/(1 - th) via expm1, against mpmath
    L, s, M, eta, D, n, eps = 1.0, 0.1, 1.0, 1.0, 1.5, 50, 0.01
    got = pnsgd_random_stop_delta(eps, L, s, M, eta, D, n)
    th = _mp_gdp_delta(F(M) * F(D) / (F(eta) * F(s)), F(eps))   # theta_{e^eps}(r) is the GDP delta at mu = r
    t1 = _mp_gdp_delta(2 * F(L) / F(s), F(eps))
    exact = t1 / n * (1 - th ** n) / (1 - th)
    assert got >= exact * (1 - 1e-12)
    assert got == pytest.approx(float(exact), rel=1e-9)
    # theta rounds to 1 in floats (r = 1e6): the sum of n powers of theta is bounded by n, not a ZeroDivision
    assert pnsgd_random_stop_delta(eps, L, s, M, 1e-3, 100.0, n) <= 1.0


@pytest.mark.parametrize("gap", [1e-15, 1e-12, 1e-9])
def test_pabi_contractive_tight_near_one(gap):
    Lc = 1.0 - gap
    r, d, s = 1000, 2.0, 1.0
    got = pabi_contractive_rdp(1.0, d, Lc, r, s, tight=True)
    Lm = F(Lc)
    exact = r * F(d) ** 2 * Lm ** (2 * r) * (1 - Lm) ** 2 / (2 * F(s) ** 2 * (1 - Lm ** r) ** 2)
    assert got >= exact and got == pytest.approx(float(exact), rel=1e-10)


# -- conversions to (epsilon, delta) are conservative --------------------------------------------------

MUS = list(np.logspace(-3, 2, 41)) + [0.01, 0.02, 0.03, 0.04]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-5, 1e-3, 0.1]


@pytest.mark.parametrize("mu", MUS)
def test_gdp_epsilon_and_delta_conservative(mu):
    g = GDP(float(mu))
    for d in DELTAS:
        eps = g.epsilon(d)
        assert _mp_gdp_delta(mu, eps) <= d, (mu, d, eps)   # the reported epsilon really achieves delta
        exact = _mp_gdp_epsilon(mu, d)
        assert eps >= exact and eps <= exact * (1 + 1e-9) + 1e-12
    for e in [0.0, 1e-3, 0.1, 1.0, 3.0, 10.0]:
        assert g.delta(e) >= _mp_gdp_delta(mu, e)


@pytest.mark.parametrize("mu", [1e-3, 0.03, 1.0, 30.0])
def test_linear_rdp_conversion_conservative(mu):
    # the RDP curve alpha mu^2/2 of mu-GDP: its (eps, delta) conversion can never be below the exact GDP one
    r = RDP.linear(mu * mu / 2)
    for d in DELTAS:
        assert r.epsilon(d) >= _mp_gdp_epsilon(mu, d)
    for e in [0.01, 1.0, 10.0]:
        assert r.delta(e) >= _mp_gdp_delta(mu, e)


def test_approx_dp_inversion_without_cancellation():
    # eps(delta) of an (eps0, 0)-DP point just below delta(0): eps0 + log(1 - t) with t close to 1
    a = ApproxDP(1e-9, 0.0)
    for d in (1e-12, 1e-10, 4.9e-10):
        eps = a.epsilon(d)
        t = F(d) * (1 + mpmath.exp(-F(1e-9)))
        exact = F(1e-9) + mpmath.log(1 - t)
        assert eps >= exact
        assert a.delta(eps) <= d * (1 + 1e-12)


def test_huge_rdp_curve_gives_a_number():
    # a linear RDP curve far outside the usual range: a number (maybe inf), never an exception
    assert RDP.linear(6.6e63).epsilon(0.1) >= 6.6e63
    assert RDP.linear(1e-300).epsilon(1e-5) >= 0.0
    assert 0.0 <= RDP.linear(5.0).delta(1e300) <= 1.0


# -- tiny and huge parameters: a number or one line, never a traceback ----------------------------------

EXTREME = [
    ["ula-final", "--strong-convexity", "1", "--smoothness", "2", "--grad-bound", "1", "--step-size", "1e-17",
     "--num-steps", "100", "--delta", "1e-5"],
    ["ula-final", "--strong-convexity", "1", "--smoothness", "2", "--grad-bound", "1", "--v-convex",
     "--v-smoothness", "0", "--step-size", "1e-300", "--num-steps", "100", "--delta", "1e-5"],
    ["ula-final", "--strong-convexity", "1e-300", "--smoothness", "1e300", "--grad-bound", "1e300",
     "--step-size", "1e-300", "--num-steps", "1000000000000000000", "--delta", "1e-300"],
    ["sgld-final", "--strong-convexity", "1e-17", "--smoothness", "1e17", "--grad-bound", "1e-9", "--step-size",
     "1e300", "--num-steps", "1000000000000", "--batch-size", "1000000000000", "--data-size",
     "1000000000000000000", "--delta", "1e-300"],
    ["ula-path", "--grad-bound", "1e-300", "--step-size", "1", "--num-steps", "1000000000000",
     "--inverse-temperature", "0.001", "--epsilon", "1e300"],
    ["posterior", "--strong-convexity", "1e-300", "--smoothness", "0.5", "--grad-bound", "1", "--v-convex",
     "--v-smoothness", "1e-300", "--delta", "1e-300"],
    ["tv-transfer", "--epsilon-in", "1e9", "--delta-in", "1e-300", "--tv-bound", "1e-17", "--epsilon", "1"],
]


@pytest.mark.parametrize("argv", EXTREME, ids=lambda a: a[0] + "-" + "-".join(a[6:9]))
def test_extreme_parameters_number_or_one_line(argv):
    p = subprocess.run([sys.executable, "-m", "bayesdp.cli", "bound", *argv, "--json"], capture_output=True,
                       text=True, timeout=300)
    assert "Traceback" not in p.stderr
    assert p.returncode in (0, 2), p.stderr
    if p.returncode == 2:
        assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    else:
        import json

        out = json.loads(p.stdout)
        v = out["epsilon"] if out.get("delta") is not None and "--delta" in argv else out["delta"]
        assert v is None or (isinstance(v, float) and v >= 0)
