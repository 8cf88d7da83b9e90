"""002/000 (Balle, Barthe, Gaboardi, Geumlek): Theorem 1, Examples 1-3, Lemma 3, Theorems 4, 5, Cor 7, Thm 8.

Reference numbers: SEEDS.md §1.2, §1.10, §1.12, §1.13, and brute-force numerics written here.
"""

import math

import numpy as np
import pytest
from scipy import integrate

from bayesdp.errors import AssumptionError
from bayesdp.theorems import mixing as X

REL = 1e-6


def test_theorem_1_example_values():
    # SEEDS §1.2: eps=1, delta=1e-5, gamma=0.1
    assert X.amplify_by_mixing(1, 1e-5, 0.1, "dobrushin") == (1.0, pytest.approx(1e-6, rel=1e-12))
    assert X.amplify_by_mixing(1, 1e-5, 0.1, "dobrushin-eps")[1] == pytest.approx(1e-6, rel=1e-12)
    assert X.required_dobrushin_eps(1, 1e-5) == pytest.approx(12.054256, rel=REL)
    e3, d3 = X.amplify_by_mixing(1, 1e-5, 0.1, "doeblin")
    assert (e3, d3) == (pytest.approx(0.158565079, rel=REL), pytest.approx(0.0568912814, rel=REL))
    e4, d4 = X.amplify_by_mixing(1, 1e-5, 0.1, "ultra_mixing")
    assert (e4, d4) == (pytest.approx(0.158565079, rel=REL), pytest.approx(4.31091497e-7, rel=REL))


def test_theorem_1_edges_and_doeblin_threshold():
    assert X.required_dobrushin_eps(1, 0) == math.inf
    assert X.amplify_by_mixing(0.0, 0.01, 0.3, "doeblin") == (0.0, pytest.approx(0.003, rel=1e-12))
    assert X.amplify_by_mixing(0.7, 0.01, 0.0, "ultra-mixing") == (0.0, 0.0)
    assert X.amplify_by_mixing(0.7, 0.01, 1.0, "doeblin") == (pytest.approx(0.7), pytest.approx(0.01))
    thr = 1e-5 * math.e / ((1 - 1e-5) * (math.e - 1))
    assert thr == pytest.approx(1.58199e-5, rel=1e-5)
    for g in (0.5 * thr, 0.999 * thr):
        assert X.doeblin_amplifies_delta(1, 1e-5, g) and X.amplify_by_mixing(1, 1e-5, g, "doeblin")[1] <= 1e-5
    for g in (1.01 * thr, 0.5):
        assert not X.doeblin_amplifies_delta(1, 1e-5, g) and X.amplify_by_mixing(1, 1e-5, g, "doeblin")[1] > 1e-5
    with pytest.raises(AssumptionError, match="gamma"):
        X.amplify_by_mixing(1, 1e-5, 1.2, "doeblin")
    with pytest.raises(AssumptionError, match="condition"):
        X.amplify_by_mixing(1, 1e-5, 0.2, "mixing")


def test_lemma_9_direction():
    # row 26: (gamma, eps)-Dobrushin implies nothing else; Dobrushin implies (gamma, eps)-Dobrushin
    assert X.implied_conditions("dobrushin-eps") == ("dobrushin-eps",)
    assert "dobrushin-eps" in X.implied_conditions("dobrushin")
    assert X.implied_conditions("ultra-mixing") == ("ultra-mixing", "doeblin", "dobrushin", "dobrushin-eps")


def test_theorem_1_doeblin_on_randomized_response():
    # brute force: binary randomized response M (eps, 0)-DP, K = Doeblin kernel (1-g) omega + g * identity
    eps, g = 1.0, 0.3
    p = math.exp(eps) / (1 + math.exp(eps))
    omega = np.array([0.5, 0.5])
    for P, Q in [(np.array([p, 1 - p]), np.array([1 - p, p]))]:
        PK, QK = (1 - g) * omega + g * P, (1 - g) * omega + g * Q
        e_out, d_out = X.amplify_by_mixing(eps, 0.0, g, "doeblin")
        true_delta = np.maximum(PK - math.exp(e_out) * QK, 0).sum()
        assert true_delta <= d_out + 1e-15


def test_example_1_and_3():
    assert X.iterated_gaussian_rdp(3.0, 2.0, 1.0, 0.5) == pytest.approx(3 * 4 / (2 * 1.25))
    c = X.example_3(1.0, 1.0, 2.0, 0.5)
    # sigma_*^2 = s1^2 + s2^2/L^2 = 1 + 16 = 17 (corrected denominator, row 23)
    assert c.constants["sigma_star_sq"] == pytest.approx(17.0)
    assert c.rdp(2.0) == pytest.approx(2 / (2 * 17))
    # min over theta of theta^2/s1^2 + L^2 (1-theta)^2/s2^2 equals 1/sigma_*^2 (brute force)
    th = np.linspace(0, 1, 200001)
    assert (th ** 2 + 0.25 * (1 - th) ** 2 / 4).min() == pytest.approx(1 / 17, rel=1e-8)
    # linear psi(x) = L x: exact Gaussian RDP of N(L u, L^2 s1^2 + s2^2) vs the bound
    exact = 2.0 * (0.5 * 1.0) ** 2 / (2 * (0.25 * 1 + 4))
    assert exact <= c.rdp(2.0) + 1e-15


@pytest.mark.parametrize("x", [0.0, 0.3, 1.7, 5.0])
@pytest.mark.parametrize("l1,l2", [(1.0, 1.0), (1.0, 0.5), (0.3, 2.0)])
def test_lap2_density_vs_convolution(x, l1, l2):
    # the Laplace densities written out (a frozen scipy distribution built per evaluation made this 2 s a case)
    f = lambda y: math.exp(-abs(y) / l1 - abs(x - y) / l2) / (4 * l1 * l2)  # noqa: E731
    num = sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
              for a, b in [(-60, min(0, x)), (min(0, x), max(0, x)), (max(0, x), 60)] if b > a)
    assert X.lap2_pdf(x, l1, l2) == pytest.approx(num, rel=1e-9)


@pytest.mark.parametrize("x,l1,l2", [(0.0, 1e-300, 1e-300), (0.0, 1e-160, 2e-160), (5.0, 1e308, 1e308),
                                      (1e300, 1.0, 2.0), (1.0, 1e-200, 1.0), (1e-3, 1e5, 3e5), (2.0, 3e307, 1e308)])
def test_lap2_density_at_extreme_scales(x, l1, l2):
    # eq. (6) in 50 digits; the float formulas divided by 4 lam^2 (ZeroDivisionError below lam = 1e-154, a wrong
    # 5th digit at 1e-160 from a subnormal lam^2) and multiplied lam by e^(-x/lam) (nan above 1e154)
    import mpmath

    with mpmath.workdps(50):
        a, m1, m2 = mpmath.mpf(abs(x)), mpmath.mpf(l1), mpmath.mpf(l2)
        ref = (mpmath.exp(-a / m1) * (m1 + a) / (4 * m1 * m1) if m1 == m2 else
               (m1 * mpmath.exp(-a / m1) - m2 * mpmath.exp(-a / m2)) / (2 * (m1 * m1 - m2 * m2)))
    got = X.lap2_pdf(x, l1, l2)
    assert math.copysign(1.0, got) == 1.0 and got == pytest.approx(float(ref), rel=1e-12, abs=1e-320)


def test_lemma_3_tail_ratio():
    # log Lap2(x)/Lap2(x + Delta) -> Delta / max(l1, l2) as x -> inf
    l1, l2, d = 0.5, 1.3, 1.0
    r = math.log(X.lap2_pdf(60, l1, l2) / X.lap2_pdf(61, l1, l2))
    assert r == pytest.approx(d / max(l1, l2), rel=1e-9)          # = 1 / 1.3: the density's far tail
    # Lemma 3's pure-DP epsilon is that limit, Delta / max(l1, l2), in either order of the scales
    assert X.iterated_laplace_pure_eps(d, l1, l2) == pytest.approx(d / 1.3, rel=1e-15)
    assert X.iterated_laplace_pure_eps(2.0, 1.3, 0.5) == pytest.approx(2.0 / 1.3, rel=1e-15)


def test_laplace_rdp_vs_integration():
    # Mironov's closed form vs numerical Renyi divergence of Lap(0,1) and Lap(z,1)
    for a, z in [(2.0, 1.0), (3.5, 0.4)]:
        f = lambda y: (0.5 * math.exp(-abs(y))) ** a * (0.5 * math.exp(-abs(y - z))) ** (1 - a)  # noqa: E731
        num = sum(integrate.quad(f, lo, hi, epsabs=1e-14)[0] for lo, hi in [(-50, 0), (0, z), (z, 50)])
        assert X.laplace_rdp(a, z) == pytest.approx(math.log(num) / (a - 1), rel=1e-8)


def test_example_2_min_over_theta():
    a, d, l1, l2 = 3.0, 1.0, 1.0, 1.0
    v = X.iterated_laplace_rdp(a, d, l1, l2)
    # brute force over theta, from Mironov's g_alpha written out here (not the module's laplace_rdp); symmetric
    # case: theta = 1/2 by convexity
    ths = np.linspace(0, 1, 20001)

    def log_g(z):
        return np.log(a / (2 * a - 1) * np.exp(z * (a - 1)) + (a - 1) / (2 * a - 1) * np.exp(-z * a))

    brute = float(np.min((log_g(ths * d / l1) + log_g((1 - ths) * d / l2)) / (a - 1)))
    assert v == pytest.approx(brute, rel=1e-9)
    assert v < X.laplace_rdp(a, 1.0)                      # amplification
    # the bound dominates the true Renyi divergence of the iterated mechanism (numerical, Lap2 densities)
    f = lambda y: X.lap2_pdf(y, l1, l2) ** a * X.lap2_pdf(y - d, l1, l2) ** (1 - a)  # noqa: E731
    num = sum(integrate.quad(f, lo, hi, epsabs=1e-14, limit=200)[0] for lo, hi in [(-80, 0), (0, d), (d, 80)])
    assert math.log(num) / (a - 1) <= v + 1e-12


def test_theorem_5_example():
    # SEEDS §1.10: C=1, sigma=1, eta=0.5, beta=1, rho=0.5, n=100
    vals = {1: 3.16834e-11, 50: 1.29340e-6, 99: 1.333333, 100: 2.0}
    for i, v in vals.items():
        c = X.theorem_5(1, 1, 0.5, 0.5, 1, 100, i)
        assert c.constants["eps_i"] == pytest.approx(v, rel=1e-5)
        assert c.rdp(3.0) == pytest.approx(3 * v, rel=1e-5)
    # printed formula, independently
    i, n = 50, 100
    printed = 2 / (n - i) * (1 - 2 * 0.5 * 1 * 0.5 / 1.5) ** ((n - i + 1) / 2)
    assert X.theorem_5(1, 1, 0.5, 0.5, 1, n, i).constants["eps_i"] == pytest.approx(printed, rel=1e-12)
    # tight <= printed
    assert X.theorem_5(1, 1, 0.5, 0.5, 1, n, i, tight=True).constants["eps_i"] <= printed


def test_theorem_4_phi_bound_and_path():
    # r * phi(L) <= 1 (AM-GM) <=> tight <= printed (3)
    for L in (0.1, 0.5, 0.9, 0.999):
        for r in (1, 2, 7, 50):
            assert X.pabi_contractive_rdp(1, 1, L, r, 1, tight=True) <= X.pabi_contractive_rdp(1, 1, L, r, 1) * (1 + 1e-12)
    # the tight value is Theorem 4 (2) on the geometric path of the proof: brute-force minimum over paths
    L, r, Dl, s = 0.7, 3, 1.0, 1.0
    from scipy import optimize

    def path_value(w):
        w = np.abs(w)
        steps = np.append(w, Dl - w.sum())     # lengths summing to Delta (W_inf triangle inequality)
        if steps[-1] < 0:
            return 1e9
        return X.theorem_4_path_rdp(1.0, L, s, steps)

    best = min(optimize.minimize(path_value, x0, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14}).fun
               for x0 in ([0.3, 0.3], [0.1, 0.2], [0.5, 0.1]))
    # the optimum over paths is Delta^2 / sum_k L^{-2k} (Cauchy-Schwarz), i.e. 001 Corollary 3.8 with c = L^2
    # (SEEDS §5); the proof's geometric path of 002 (the "tight" value) is above it
    optimum = Dl ** 2 * L ** (2 * r) * (1 - L ** 2) / (2 * s ** 2 * (1 - L ** (2 * r)))
    assert best == pytest.approx(optimum, rel=1e-6)
    assert X.pabi_contractive_rdp(1.0, Dl, L, r, s, tight=True) >= optimum
    from bayesdp.theorems.pabi import constant_coefficient
    assert constant_coefficient(L ** 2, 0.0, s ** 2, Dl, r) == pytest.approx(optimum, rel=1e-12)
    with pytest.raises(AssumptionError, match=r"^lipschitz = 1\.2 must be <= 1 for 002 Theorem 4 \(3\)"):
        X.pabi_contractive_rdp(1.0, 1.0, 1.2, 3, 1.0)


def test_corollary_7_and_brownian():
    assert X.ou_lambda(1, 1, 0.5, 1) == pytest.approx(0.290988353, rel=REL)
    # exact Gaussian RDP of N(e^{-theta t} u, v) vs N(e^{-theta t} u', v)
    th, rho, t, d = 0.7, 1.3, 0.9, 2.0
    var = rho ** 2 / th * (1 - math.exp(-2 * th * t))
    assert X.ou_rdp(2.0, th, rho, t, d) == pytest.approx(2.0 * (math.exp(-th * t) * d) ** 2 / (2 * var), rel=1e-12)
    assert X.brownian_rdp(2.0, 0.5, 1.0) == pytest.approx(2.0 * 1 / (2 * 2 * 0.5))   # Gaussian with var 2t
    with pytest.raises(AssumptionError, match="time"):
        X.ou_lambda(1, 1, 0.0, 1)


@pytest.mark.parametrize("d,Dl,eps,R,ratio,egm", [(10, 1, 0.5, 2, 0.285714, 10), (100, 0.3, 1, 1, 0.181818, 4.5)])
def test_theorem_8_calibration(d, Dl, eps, R, ratio, egm):
    th, rho = X.ou_calibrate(eps, d, Dl, R)
    assert X.ou_lambda(th, rho, 1.0, Dl) == pytest.approx(eps, rel=1e-9)
    assert X.gaussian_equiv_mse(th, rho, 1.0, d) == pytest.approx(egm, rel=1e-9)
    a = d * Dl ** 2 / (2 * eps * R ** 2)
    assert X.ou_mse(th, rho, 1.0, d, R) / egm == pytest.approx(1 / (1 + a), rel=1e-9)
    assert X.ou_mse(th, rho, 1.0, d, R) / egm == pytest.approx(ratio, rel=1e-5)   # SEEDS prints 6 digits
    assert X.ou_mse(th, rho, 1.0, d, R) == pytest.approx(d * Dl ** 2 * R ** 2 / (2 * eps * R ** 2 + d * Dl ** 2),
                                                         rel=1e-9)
    c = X.corollary_7(th, rho, 1.0, Dl, dimension=d, radius=R)
    assert c.constants["mse_ratio"] == pytest.approx(1 / (1 + a), rel=1e-9)
    # the calibration does not imply Theorem 8's hypothesis theta R^2 <= 4 d rho^2 (it fails in both examples)
    assert c.constants["theorem_8_applies"] == float(th * R ** 2 <= 4 * d * rho ** 2) == 0.0
    assert X.theorem_8_applies(0.1, 1.0, 1, 1.0)


def test_ou_mse_by_monte_carlo():
    rng = np.random.default_rng(0)
    th, rho, t, d = 0.8, 0.6, 0.7, 3
    f = np.array([1.0, -0.5, 0.25])
    out = math.exp(-th * t) * f + rng.normal(0, math.sqrt(rho ** 2 / th * (1 - math.exp(-2 * th * t))), (200000, d))
    mse = ((out - f) ** 2).sum(axis=1).mean()
    assert X.ou_mse(th, rho, t, d, float(np.linalg.norm(f))) == pytest.approx(mse, rel=0.01)
