"""003 (Asoodeh, Diaz, Calmon): hockey-stick lemmas, Theorems 2-5, Proposition 1.

Reference numbers: SEEDS.md §2.6, §2.9, §2.10 (computed independently), and brute-force
numerical integration of the hockey-stick divergence written here.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from bayesdp.errors import AssumptionError
from bayesdp.theorems import hockey_stick as H

REL = 1e-6


def _hs_numeric(p, q, gamma, lo, hi, breaks=()):
    f = lambda x: max(p(x) - gamma * q(x), 0.0)  # noqa: E731
    pts = sorted(set([lo, *breaks, hi]))
    return sum(integrate.quad(f, a, b, limit=400, epsabs=1e-13, epsrel=1e-11)[0] for a, b in zip(pts, pts[1:]))


@pytest.mark.parametrize("gap,scale,eps", [(1.0, 1.0, 0.3), (2.5, 0.7, 1.0), (0.2, 1.0, 0.5), (3.0, 2.0, 0.0)])
def test_lemma_1_laplace_vs_integration(gap, scale, eps):
    p = stats.laplace(0.0, scale).pdf
    q = stats.laplace(gap, scale).pdf
    num = _hs_numeric(p, q, math.exp(eps), -40 * scale, 40 * scale + gap, breaks=(0.0, gap))
    assert H.laplace_hockey_stick(gap, scale, eps) == pytest.approx(num, abs=1e-9)


@pytest.mark.parametrize("gap,sd,eps", [(1.0, 1.0, 0.3), (2.0, 0.5, 1.0), (0.3, 1.0, 0.1), (1.0, 2.0, 0.0)])
def test_lemma_2_gaussian_vs_integration(gap, sd, eps):
    p = stats.norm(0.0, sd).pdf
    q = stats.norm(gap, sd).pdf
    num = _hs_numeric(p, q, math.exp(eps), -30 * sd, 30 * sd + gap, breaks=(gap / 2,))
    assert H.gaussian_hockey_stick(gap, sd, eps) == pytest.approx(num, rel=1e-7, abs=1e-12)


def test_theta_edges():
    assert H.theta_gamma(0.0, 1.0) == 0.0
    # gamma = 1: theta_1(r) = 1 - 2 Q(r/2) = TV of two unit Gaussians at distance r
    for r in (0.1, 1.0, 3.0):
        assert H.theta_gamma(r, 0.0) == pytest.approx(1 - 2 * stats.norm.sf(r / 2), rel=1e-12)
    # increasing in r, in [0, 1)
    vals = [H.theta_gamma(r, 0.5) for r in np.linspace(0.01, 10, 50)]
    assert all(b >= a for a, b in zip(vals, vals[1:])) and vals[-1] < 1


def test_theorem_2_contraction_gaussian_two_point():
    # eta_gamma(K) for Pi(psi(y) + N(0, s^2)) <= theta(Lip*D/s); two points at distance D realise it without projection
    eps, lip, D, s = 0.5, 0.8, 1.5, 0.9
    coef = H.contraction_coefficient_gaussian(eps, lip, D, s)
    p, q = stats.norm(0, s).pdf, stats.norm(lip * D, s).pdf
    assert coef == pytest.approx(_hs_numeric(p, q, math.exp(eps), -20, 20, (lip * D / 2,)), rel=1e-7)
    assert H.sdpi(0.2, coef) == pytest.approx(0.2 * coef)


def test_step_lipschitz_and_conditions():
    assert H.sc_step_lipschitz(0.5, 0.5, 0.0) == 1.0
    assert H.sc_step_lipschitz(0.7, 0.3, 0.4, allow_infeasible=True) == pytest.approx(math.sqrt(0.76), rel=1e-12)
    with pytest.raises(AssumptionError, match="strong_convexity"):
        H.sc_step_lipschitz(0.7, 0.3, 0.4)                     # Fig. 3: rho > beta (row 21)
    with pytest.raises(AssumptionError, match="step_size"):
        H.sc_step_lipschitz(2.0, 0.5, 0.5)                     # eta = 2/(beta+rho) is excluded (row 20)
    with pytest.raises(AssumptionError, match="step_size"):
        H.sc_step_lipschitz(4.5, 0.5, 0.0)                     # rho = 0: eta <= 2/beta
    # Lipschitz constant of a quadratic gradient step is max(|1-eta rho|, |1-eta beta|) <= M
    for eta, beta, rho in [(0.5, 1.0, 0.5), (0.1, 3.0, 0.2), (1.2, 1.0, 0.6)]:
        exact = max(abs(1 - eta * rho), abs(1 - eta * beta))
        assert exact <= H.sc_step_lipschitz(eta, beta, rho) + 1e-15


def test_theorem_3_example_and_zero_rule():
    # SEEDS §2.6: eps=1, L=1, v=1, M=1, [0,1], eta=0.5, n=40
    assert H.pnsgd_laplace_delta(1, 1, 1, 1, 0.5, 1, 40, 20) == pytest.approx(3.11264e-9, rel=1e-5)
    assert H.pnsgd_laplace_delta(1, 1, 1, 1, 0.5, 1, 40, 40) == pytest.approx(0.393469340, rel=1e-8)
    # independent: product of Lemma 1 factors
    f1 = 1 - math.exp(0.5 - 1.0)
    assert H.pnsgd_laplace_delta(1, 1, 1, 1, 0.5, 1, 40, 20) == pytest.approx(f1 ** 21, rel=1e-12)
    # row 19: at i = n, delta > 0 for eps between M(b-a)/(eta v) = 2 and 2L/v = 4
    assert H.laplace_zero_delta_threshold(2, 1, 1, 0.5, 1, 40, 40) == 4.0
    assert H.laplace_zero_delta_threshold(2, 1, 1, 0.5, 1, 40, 39) == 2.0
    assert H.pnsgd_laplace_delta(3.0, 2, 1, 1, 0.5, 1, 40, 40) > 0
    assert H.pnsgd_laplace_delta(3.0, 2, 1, 1, 0.5, 1, 40, 39) == 0.0
    cert = H.theorem_3(2, 0.5, 0.0, 0.5, 1, 1, 40, 40)
    assert cert.delta(3.0) > 0 and cert.delta(4.0) == 0.0


FIG2 = {1: [7.546523e-19, 1.241172e-25, 1.391532e-36, 6.690924e-68],
        20: [3.060674e-10, 8.399660e-14, 1.497387e-19, 5.412279e-36],
        39: [1.241330e-01, 5.684491e-02, 1.611294e-02, 4.377985e-04]}
FIG2P = {1: [8.622542e-01, 9.772283e-03, 5.584868e-09, 3.613540e-34],
         20: [9.453028e-01, 1.047425e-01, 7.438546e-05, 1.147627e-17],
         39: [1, 1, 8.824969e-01, 3.246525e-01]}
EPS = [0.1, 0.5, 1.0, 2.0]


@pytest.mark.parametrize("i", [1, 20, 39])
def test_theorem_4_and_prop_1_figure_2_table(i):
    t4 = H.theorem_4(1, 0.5, 0.0, 0.5, 2, 1, 40, i)
    p1 = H.proposition_1(1, 0.5, 0.0, 0.5, 2, 40, i)
    for e, d4, dp in zip(EPS, FIG2[i], FIG2P[i]):
        assert t4.delta(e) == pytest.approx(d4, rel=REL)
        assert p1.delta(e) == pytest.approx(dp, rel=REL)
        # Fig. 2 closed form: theta_{e^eps}(1)^{n-i+1}
        assert t4.delta(e) == pytest.approx(H.theta_gamma(1.0, e) ** (41 - i), rel=1e-9)
    assert p1.constants["kappa"] == pytest.approx(1 / (2 * (40 - i)), rel=1e-12)


def test_theorem_4_epsilon_inverts_delta():
    t4 = H.theorem_4(1, 0.5, 0.0, 0.5, 2, 1, 40, 39)
    e = t4.epsilon(1e-3)
    assert t4.delta(e) <= 1e-3 < t4.delta(e * (1 - 1e-6))


def test_theorem_4_worst_index_default():
    every = H.theorem_4(1, 0.5, 0.1, 0.5, 2, 1, 40)
    assert every.delta(1.0) == pytest.approx(max(H.theorem_4(1, 0.5, 0.1, 0.5, 2, 1, 40, i).delta(1.0)
                                                 for i in range(1, 41)), rel=1e-12)


def test_theorem_5_example():
    assert H.theorem_5(1, 0.5, 0.0, 0.5, 2, 1, 40).delta(1.0) == pytest.approx(0.00363480927, rel=REL)
    printed = H.pnsgd_random_stop_delta(1.0, 1, 2, 1, 0.5, 1, 40, tight=False)
    assert printed == pytest.approx(0.00363480927, rel=REL)
    # tight <= printed, and equals the average over stopping times of Theorem 4's index-1 factors
    th1, th2 = H.theta_gamma(1.0, 0.5), H.theta_gamma(0.4, 0.5)
    n = 7
    direct = sum(th1 * th2 ** (t - 1) for t in range(1, n + 1)) / n
    assert H.pnsgd_random_stop_delta(0.5, 1, 2, 0.4, 0.5, 1, n) == pytest.approx(direct, rel=1e-12)


def test_proposition_1_is_mironov_conversion():
    # delta~ = inf_{alpha > 1} exp(-(alpha - 1)(eps - kappa alpha)) (SEEDS §2.8), brute force over alpha
    kappa, eps = 0.05, 0.4
    alphas = np.linspace(1.0001, 50, 400001)
    brute = np.exp(-(alphas - 1) * (eps - kappa * alphas)).min()
    assert H.proposition_1_delta(eps, kappa) == pytest.approx(brute, rel=1e-6)
    assert H.proposition_1_delta(0.04, kappa) == 1.0


# -- figure scripts (examples/fig_003_figure2.py, fig_003_figure3.py) -----------------------------------

import importlib.util  # noqa: E402
import pathlib  # noqa: E402

_EX = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _EX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FIG3 = {20: [4.897910e-08, 1.955125e-10, 3.347619e-14, 1.200830e-24],
        30: [1.806970e-04, 1.082351e-05, 1.306454e-07, 6.313107e-13],
        39: [2.932223e-01, 2.010213e-01, 1.117678e-01, 2.233204e-02]}
FIG3P = {20: [6.720213e-01, 1.840287e-05, 6.985865e-20, 8.798566e-78],
         30: [9.825516e-01, 3.088774e-01, 5.706859e-03, 4.033607e-10],
         39: [1, 1, 1, 9.628143e-01]}


def test_figure_2_script_numbers(tmp_path):
    mod = _load("fig_003_figure2")
    data = mod.figure_data(EPS)
    for i in (1, 20, 39):
        _, d4, dp = data[i]
        assert d4 == pytest.approx(FIG2[i], rel=REL)
        assert dp == pytest.approx(FIG2P[i], rel=REL)
    out = mod.main([str(tmp_path / "f2.png")])
    assert pathlib.Path(out).stat().st_size > 1000


def test_figure_3_script_numbers_infeasible_only_in_python():
    mod = _load("fig_003_figure3")
    data = mod.figure_data(EPS)
    for i in (20, 30, 39):
        _, d4, dp = data[i]
        assert d4 == pytest.approx(FIG3[i], rel=REL)
        assert dp == pytest.approx(FIG3P[i], rel=REL)
    kap = {20: 5.604575e-03, 30: 4.420840e-02, 39: 1.52}
    for i, k in kap.items():
        c = H.proposition_1(1, 0.3, 0.4, 0.7, 1, 40, i, allow_infeasible=True)
        assert c.constants["kappa"] == pytest.approx(k, rel=1e-6)
    with pytest.raises(AssumptionError, match="strong_convexity"):
        H.theorem_4(1, 0.3, 0.4, 0.7, 1, 1, 40, 20)
