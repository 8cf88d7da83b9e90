"""001 (Bravo, Flores-Mella, Guzmán): Theorem 3.4 / Lemma 3.5, Table 1, §4 PLA, Theorems 5.2 / 5.4.

Reference numbers: SEEDS.md §3.3, §3.6, §3.7; exact Gaussian cases and Nelder-Mead written here.
"""

import math

import mpmath
import numpy as np
import pytest
from scipy import optimize

from bayesdp.errors import AssumptionError
from bayesdp.theorems import mixing as X
from bayesdp.theorems import pabi as P


def test_theorem_3_4_test_vector():
    # SEEDS §3.3: D=5, c=1, h=4, T=3, sigma = (1, 0.01, 0.4) standard deviations
    c, h, s2 = [1, 1, 1], [4, 4, 4], [1, 1e-4, 0.16]
    assert 2 * P.theorem_3_4_coefficient(c, h, s2, 5) == pytest.approx(74.9822297728862, rel=1e-9)
    u = P.lemma_3_5_shifts(c, h, s2, 5)
    assert u[1:3] == pytest.approx([0.74318152, 2.13228368], rel=1e-7)
    assert P.shift_objective(u[1:3], c, h, s2, 5) == pytest.approx(74.9822297728862, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lemma_3_5_is_optimal_nelder_mead(seed):
    rng = np.random.default_rng(seed)
    T = 4
    c = rng.uniform(0.3, 1.8, T)
    h = rng.uniform(0.0, 2.0, T)
    s2 = rng.uniform(0.05, 2.0, T)
    D = 2.0
    closed = 2 * P.theorem_3_4_coefficient(c, h, s2, D)
    u = P.lemma_3_5_shifts(c, h, s2, D)
    assert P.shift_objective(u[1:T], c, h, s2, D) == pytest.approx(closed, rel=1e-10)
    best = math.inf
    for _ in range(5):
        x0 = rng.uniform(0, 1, T - 1)
        res = optimize.minimize(lambda v: P.shift_objective(v, c, h, s2, D), x0, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
        best = min(best, res.fun)
    assert best >= closed * (1 - 1e-7)
    assert best == pytest.approx(closed, rel=1e-4)


@pytest.mark.parametrize("a,T", [(0.6, 5), (1.0, 4), (1.3, 6)])
def test_corollary_3_8_exact_for_linear_gaussian(a, T):
    # Phi(x) = a x, X_0 = D vs 0, noise N(0, s^2): X_T ~ N(a^T D, s^2 sum_k a^{2k}) vs N(0, same):
    # exact Renyi = alpha (a^T D)^2/(2 s^2 sum_{k<T} a^{2k}) -- attained by Corollary 3.8 with c = a^2.
    D, s2 = 1.7, 0.8
    exact = (a ** T * D) ** 2 / (2 * s2 * sum(a ** (2 * k) for k in range(T)))
    assert P.constant_coefficient(a * a, 0.0, s2, D, T) == pytest.approx(exact, rel=1e-12)
    assert P.theorem_3_4_coefficient([a * a] * T, [0] * T, [s2] * T, D) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("c", [0.5, 1.0, 1.5])
def test_corollaries_exact_sums_and_upper_estimates(c):
    h, s2, D, T = 0.3, 2.0, 1.5, 7
    val = P.constant_coefficient(c, h, s2, D, T)
    assert val == pytest.approx(P.theorem_3_4_coefficient([c] * T, [h] * T, [s2] * T, D), rel=1e-12)
    S = [sum(c ** j for j in range(t + 1)) for t in range(T)]
    direct = (D * D * c ** T / S[-1] + h * sum(c ** t / S[t] for t in range(T))) / (2 * s2)
    assert val == pytest.approx(direct, rel=1e-12)
    # Cor 3.7 / 3.9 upper estimates (ln(T e), ln(e S_{T-1})) dominate
    if c == 1.0:
        assert val <= (D * D / T + h * math.log(T * math.e)) / (2 * s2)
    else:
        assert val <= (D * D * c ** T * (1 - c) / (1 - c ** T) + h * math.log(math.e * (1 - c ** T) / (1 - c))) / (2 * s2)
    # large T stays finite
    assert math.isfinite(P.constant_coefficient(c, h, s2, D, 10 ** 6))


def test_table_1_moduli():
    eta, L = 0.1, 2.0
    assert P.modulus_params("convex-lipschitz", eta, lipschitz=L) == (1.0, pytest.approx((2 * eta * L) ** 2))
    # row (2) at p = 0, M = 2L reduces to row (1)
    assert P.modulus_params("convex-weakly-smooth", eta, holder_exponent=0.0, holder_constant=2 * L)[1] == \
        pytest.approx((2 * eta * L) ** 2, rel=1e-12)
    # rows (3), (5), (6) against random quadratics f(x) = x^T A x / 2 (+ bounded perturbation for (6))
    rng = np.random.default_rng(3)
    ev = np.array([0.5, 1.0, 2.0])
    A = np.diag(ev)
    for case, kw in [("strongly-convex-smooth", dict(smoothness=2.0, strong_convexity=0.5)),
                     ("nonconvex-smooth", dict(smoothness=2.0)),
                     ("strongly-dissipative", dict(smoothness=2.0, strong_convexity=0.5, dissipativity=0.0))]:
        c, h = P.modulus_params(case, 0.3, **kw)
        for _ in range(50):
            x, y = rng.normal(size=3), rng.normal(size=3)
            Ahere = A if case != "nonconvex-smooth" else np.diag([-2.0, 1.0, 2.0])
            diff = (x - y) - 0.3 * Ahere @ (x - y)
            assert diff @ diff <= c * (x - y) @ (x - y) + h + 1e-12
    with pytest.raises(AssumptionError, match="step_size"):
        P.modulus_params("convex-smooth", 1.0, smoothness=5.0)
    with pytest.raises(AssumptionError, match="holder_exponent"):
        P.modulus_params("convex-weakly-smooth", 0.1, holder_exponent=1.0, holder_constant=1.0)
    with pytest.raises(AssumptionError, match="--lipschitz"):
        P.modulus_params("convex-lipschitz", 0.1)


def test_pabi_certificate_and_c_zero():
    cert = P.pabi("strongly-convex-smooth", 1.0, 2.0, 10, 0.5, smoothness=2.0, strong_convexity=2.0)
    assert cert.constants["c"] == 0.0 and cert.rdp(2.0) == 0.0   # eta = 1/beta, kappa = beta: constant map
    cert = P.pabi("convex-lipschitz", 1.0, 1.0, 100, 0.1, lipschitz=1.0)
    H = sum(1 / t for t in range(1, 101))
    assert cert.rdp(2.0) == pytest.approx(2.0 / 2 * (1 / 100 + 0.04 * H), rel=1e-12)


def test_pnsgd_route_vs_002():
    # SEEDS §5: 001's value <= 002's tight path value <= 002 Theorem 5; exact formula
    L, beta, rho, eta, s, n = 1.0, 1.0, 0.5, 0.5, 1.0, 100
    M2 = 1 - 2 * eta * beta * rho / (beta + rho)
    c = min(M2, 1 - 2 * eta * rho + eta ** 2 * beta ** 2)
    for i in (1, 50, 99, 100):
        k001 = P.pnsgd_pabi(L, beta, rho, eta, s, n, i).rdp(2.0) / 2.0
        k002 = X.theorem_5(L, beta, rho, eta, s, n, i).constants["eps_i"]
        k002t = X.theorem_5(L, beta, rho, eta, s, n, i, tight=True).constants["eps_i"]
        r = n - i
        exact = 2 * L ** 2 / s ** 2 if r == 0 else 2 * L ** 2 * c ** r * (1 - c) / (s ** 2 * (1 - c ** r))
        assert k001 == pytest.approx(exact, rel=1e-10)
        assert k001 <= k002t * (1 + 1e-12) <= k002 * (1 + 1e-12)
    # expansive step (c > 1): the worst index is i = n - 1, not i = n
    every = P.pnsgd_pabi(1.0, 0.5, 0.1, 5.0, 2.0, 40, None, 100.0).rdp(2.0)
    assert every == pytest.approx(max(P.pnsgd_pabi(1.0, 0.5, 0.1, 5.0, 2.0, 40, i, 100.0).rdp(2.0)
                                      for i in range(1, 41)), rel=1e-12)


def test_lemma_4_1_and_mixing_time():
    assert P.pla_step_threshold(1.0, 3.0, 1.0) == 1.5
    D, M = 2.0, 4.0   # p = 0: (M/2)^2 max{16 ln(D (M/2) e), 27}
    assert P.pla_step_threshold(D, M, 0.0) == pytest.approx(4 * max(16 * math.log(D * 2 * math.e), 27), rel=1e-12)
    th = P.pla_step_threshold(D, M, 0.0)
    eta = 1 / th
    assert P.pla_mixing_time(D, eta, 0.01, M, 0.0) == math.ceil(D ** 2 / eta) * 7
    with pytest.raises(AssumptionError, match="step_size"):
        P.pla_mixing_time(D, 2 * eta, 0.01, M, 0.0)
    assert P.pla_kl_bound(1.0, 0.1, 10, 0.0) == pytest.approx(1 / 4)
    # eq. (9) with h: D^2/(4 eta T) + h ln(T e)/(4 eta); and where D^2 and 4 eta T both overflow (it was nan)
    assert P.pla_kl_bound(3.0, 0.5, 7, 0.2) == pytest.approx(9 / 14 + 0.2 * (math.log(7) + 1) / 2, rel=1e-14)
    assert P.pla_kl_bound(1e200, 1e300, 10 ** 10, 0.0) == pytest.approx(2.5e89, rel=1e-14)   # 1e400 / 4e310


FIG1 = {1e-3: (250000, [570778, 500144, 500000, 500000]),
        1000 ** -0.6: (15774, [255347, 36097.6, 31550.7, 31548]),
        1000 ** -0.2: (996, [663173, 136403, 9832.64, 1992])}


@pytest.mark.parametrize("eta", list(FIG1))
def test_figure_1_values(eta):
    tbar, vals = FIG1[eta]
    for p, v in zip((0.2, 0.4, 0.6, 1.0), vals):
        t, y = P.remark_5_3_factor(eta, 1000, 1.0, 2.0, p, 1.0)
        assert t == tbar
        assert y == pytest.approx(v, rel=1e-5)   # SEEDS prints 6 significant digits
    # independent formula for V
    p = 0.4
    V = ((2 * tbar / 1.0) * (eta * 2.0 / 2) ** (1 / (1 - p))) ** 2 * ((1 - p) / (1 + p)) * math.log(tbar * math.e)
    assert P.remark_5_3_factor(eta, 1000, 1.0, 2.0, p, 1.0)[1] == pytest.approx(2 * tbar + V, rel=1e-12)


def test_lemma_a_18_conditions():
    assert P.sgm_bound_applies(2.0, 0.01, 10.0)
    assert not P.sgm_bound_applies(2.0, 0.25, 10.0)      # q >= 1/5
    assert not P.sgm_bound_applies(2.0, 0.01, 3.9)       # sigma < 4
    assert not P.sgm_bound_applies(1e4, 0.01, 10.0)      # alpha too large
    # direct check of the two inequalities at one point
    a, q, s = 5.0, 0.05, 6.0
    M = math.log(1 + 1 / (q * (a - 1)))
    ok = a <= M * s * s / 2 - math.log(s * s) and a <= (M * M * s * s / 2 - math.log(5 * s * s)) / (
        M + math.log(q * a) + 1 / (2 * s * s))
    assert P.sgm_bound_applies(a, q, s) == ok


def _t52(**kw):
    base = dict(lipschitz=1.0, holder_exponent=0.5, holder_constant=2.0, diameter=1.0, step_size=0.01,
                noise_scale=2.0, data_size=10000, batch_size=100, num_steps=5000)
    base.update(kw)
    return P.theorem_5_2(**base)


def test_theorem_5_2_conditions_and_value():
    with pytest.raises(AssumptionError, match="b/n"):
        _t52(data_size=400)                                    # row 13
    with pytest.raises(AssumptionError, match="noise_scale"):
        _t52(noise_scale=0.1)
    cert = _t52()
    n, s, L, D, eta, p, M = 10000, 2.0, 1.0, 1.0, 0.01, 0.5, 2.0
    tbar = math.ceil(D * n / (4 * eta * L))
    hbar = 4 * eta ** (2 * p / (1 - p)) * ((1 - p) / (1 + p)) * (M / 2) ** (2 / (1 - p))
    T = 5000
    # T < Tbar here: the bound is min over R <= T; brute force independently
    Rs = np.arange(1, T + 1)
    brute = min((16 * L ** 2 * Rs / (n * s) ** 2 + D ** 2 / (eta ** 2 * s ** 2 * Rs) + hbar * np.log(Rs * math.e) / s ** 2).min(),
                16 * L ** 2 * T / (n * s) ** 2)
    assert cert.constants["kappa"] == pytest.approx(brute, rel=1e-12)
    assert cert.constants["Tbar"] == tbar
    assert cert.rdp(2.0) == pytest.approx(2 * brute)
    assert cert.rdp(1e6) == math.inf                            # outside Lemma A.18
    # T > Tbar: <= the printed closed form
    big = _t52(num_steps=3 * tbar)
    closed = 16 * L ** 2 * tbar / n ** 2 / s ** 2 + D ** 2 / (eta ** 2 * tbar) / s ** 2 + hbar * math.log(tbar * math.e) / s ** 2
    assert big.constants["kappa"] <= closed * (1 + 1e-12)
    # Poisson batches: h with eta_eff = eta * max_batch / b (row 14) gives a larger bound
    pois = _t52(num_steps=3 * tbar, batching="poisson", max_batch=200)
    assert pois.constants["hbar"] == pytest.approx(hbar * 2 ** (2 / (1 - p)), rel=1e-12)
    assert pois.constants["kappa"] >= big.constants["kappa"]


def test_theorem_5_4_counterexample_row_15():
    # SEEDS §3.7: L=1, b=2, n=1000, sigma=2 sqrt10/b, D=beta=eta=0.05, delta=0.0156
    sigma = 2 * math.sqrt(10) / 2
    out = P.noisy_sgd_dp_nonconvex(0.0156, 1.0, 0.05, 0.05, 0.05, sigma, 1000, 2, 1000)
    assert out["Tbar"] == 139
    assert out["A"] == pytest.approx(0.0172405, rel=1e-6)
    assert out["alpha_star"] == pytest.approx(15.5365, rel=1e-5)
    assert out["alpha_opt"] == pytest.approx(50.1, rel=1e-3)
    assert out["paper_shortcut_condition"] and not out["closed_form_valid"]
    a = out["alpha_star"]
    assert out["epsilon"] == pytest.approx(a * out["A"] / sigma ** 2 + math.log(1 / 0.0156) / (a - 1), rel=1e-12)
    paper = out["A"] / sigma ** 2 + 2 / sigma * math.sqrt(math.log(1 / 0.0156) * out["A"])
    assert out["epsilon"] > paper                               # the paper's form is not established here


def test_theorem_5_4_certificate():
    sigma = 4.0
    cert = P.theorem_5_4(1.0, 0.05, 0.05, 0.05, sigma, 1000, 2, 1000)
    A = P.theorem_5_4_A(1.0, 0.05, 0.05, 0.05, 1000)
    assert cert.constants["kappa"] <= A / sigma ** 2
    astar = (4 * sigma ** 2 / 16) * math.log(500)
    assert cert.constants["alpha_star"] == pytest.approx(astar)
    assert cert.rdp(astar * 1.01) == math.inf and math.isfinite(cert.rdp(astar * 0.99))
    with pytest.raises(AssumptionError, match="batch_size"):
        P.theorem_5_4(1.0, 0.05, 0.05, 0.05, sigma, 1000, 101, 1000)
    with pytest.raises(AssumptionError, match="noise_scale"):
        P.theorem_5_4(1.0, 0.05, 0.05, 0.05, 1.0, 1000, 2, 1000)


def test_figure_1_script_numbers(tmp_path):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "fig_001_figure1.py"
    spec = importlib.util.spec_from_file_location("fig_001_figure1", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = mod.figure_data(list(FIG1))
    for k, (p, (eta, tb, y)) in enumerate(sorted(data.items())):
        for j, e in enumerate(FIG1):
            assert tb[j] == FIG1[e][0]
            assert y[j] == pytest.approx(FIG1[e][1][k], rel=1e-5)   # SEEDS: 6 significant digits
    # independent evaluation at p = 0.2, eta = 1e-3 to 1e-6
    tbar = 250000
    V = ((2 * tbar) * (1e-3) ** 1.25) ** 2 * (0.8 / 1.2) * math.log(tbar * math.e)
    assert data[0.2][2][0] == pytest.approx(2 * tbar + V, rel=1e-6)
    out = mod.main([str(tmp_path / "f1.png")])
    assert pathlib.Path(out).stat().st_size > 1000


@pytest.mark.parametrize("c", [0.5, 1.0, 1.5])
def test_constant_coefficient_tail_bound_is_upper(c, monkeypatch):
    exact = P.constant_coefficient(c, 0.3, 2.0, 1.5, 1000)
    # the exact sum, directly (test_corollaries_exact_sums_and_upper_estimates' formula, in 30-digit arithmetic):
    # (D^2 c^T / S_T + h sum_t c^t / S_t) / (2 s^2), S_t = sum_{j <= t} c^j
    with mpmath.workdps(30):
        h, s2, D, T, cc = mpmath.mpf("0.3"), mpmath.mpf(2), mpmath.mpf("1.5"), 1000, mpmath.mpf(c)
        S, acc = [], mpmath.mpf(0)
        for t in range(T):
            acc += cc ** t
            S.append(acc)
        direct = (D * D * cc ** T / S[-1] + h * mpmath.fsum(cc ** t / S[t] for t in range(T))) / (2 * s2)
    assert exact == pytest.approx(float(direct), rel=1e-12)
    monkeypatch.setattr(P, "_EXACT_TERMS", 10)
    capped = P.constant_coefficient(c, 0.3, 2.0, 1.5, 1000)
    assert exact <= capped <= exact * 1.02
