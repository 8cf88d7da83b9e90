"""Privacy curves: conversions against independent formulas and numerical integration."""

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from bayesdp.curves import GDP, RDP, ApproxDP, DeltaProfile, compose
from bayesdp.errors import AssumptionError
from exact import gdp_delta, gdp_epsilon, rdp_to_dp_grid


def hockey_stick_gauss_numeric(mu: float, eps: float) -> float:
    """E_{e^eps}(N(mu,1) || N(0,1)) by quadrature of [p - e^eps q]_+."""
    f = lambda x: max(0.0, norm.pdf(x, loc=mu) - math.exp(eps) * norm.pdf(x))  # noqa: E731
    val, _ = integrate.quad(f, -40, 40 + mu, limit=400, points=[mu / 2 + eps / mu])
    return val


@pytest.mark.parametrize("mu,eps", [(0.5, 0.0), (1.0, 0.5), (1.0, 2.0), (3.0, 1.0), (0.2, 0.1)])
def test_gdp_delta_matches_quadrature(mu, eps):
    assert GDP(mu).delta(eps) == pytest.approx(hockey_stick_gauss_numeric(mu, eps), rel=1e-6, abs=1e-12)


def test_gdp_epsilon_literature_values():
    # LITERATURE.md §1(b) and §8.4: mu = 1, delta = 1e-5 -> eps = 4.377 (exact GDP)
    assert GDP(1.0).epsilon(1e-5) == pytest.approx(4.377, abs=1e-3)
    # §8.2: path GDP mu = 0.1*sqrt(10/2), delta=1e-5 -> 0.820; mu=0.5*sqrt(100/2) -> 20.7
    assert GDP(0.1 * math.sqrt(5.0)).epsilon(1e-5) == pytest.approx(0.820, abs=1e-3)
    assert GDP(0.5 * math.sqrt(50.0)).epsilon(1e-5) == pytest.approx(20.7, abs=0.05)
    # the same three to 12 digits, and never below: epsilon solving the exact GDP tradeoff
    # Phi(-e/mu + mu/2) - e^e Phi(-e/mu - mu/2) = delta (Dong-Roth-Su Cor. 2.13), bisected in 40-digit mpmath
    for mu in (1.0, 0.1 * math.sqrt(5.0), 0.5 * math.sqrt(50.0)):
        with mpmath.workdps(40):
            m, lo, hi = mpmath.mpf(mu), mpmath.mpf(0), mpmath.mpf(100)
            for _ in range(200):
                mid = (lo + hi) / 2
                if mpmath.ncdf(-mid / m + m / 2) - mpmath.exp(mid) * mpmath.ncdf(-mid / m - m / 2) > mpmath.mpf("1e-5"):
                    lo = mid
                else:
                    hi = mid
            got = GDP(mu).epsilon(1e-5)
            assert hi <= got <= hi * (1 + mpmath.mpf("1e-12")), (mu, got, hi)


def test_rdp_conversions_literature_values():
    # LITERATURE.md §8.4: rho-zCDP (linear RDP kappa = rho) -> eps at delta=1e-5
    for rho, mir, cks in [(0.05, 1.568, 1.308), (0.5, 5.299, 4.728)]:
        assert RDP.linear(rho).epsilon(1e-5, method="mironov") == pytest.approx(mir, abs=1e-3)
        assert RDP.linear(rho).epsilon(1e-5) == pytest.approx(cks, abs=1e-3)
    # §8.2 path RDP->Mironov/CKS for gamma=0.01, n=1e3, Delta=0.1: kappa = mu^2/2 = 0.025
    assert RDP.linear(0.025).epsilon(1e-5, method="mironov") == pytest.approx(1.098, abs=1e-3)
    assert RDP.linear(0.025).epsilon(1e-5) == pytest.approx(0.897, abs=1e-3)


@pytest.mark.parametrize("kappa", [1e-4, 0.01, 0.3, 2.0, 50.0, 400.0])
@pytest.mark.parametrize("delta", [1e-15, 1e-8, 1e-5, 0.1])
def test_linear_rdp_epsilon_equals_grid_minimum(kappa, delta):
    rdp = lambda a: kappa * a  # noqa: E731
    got = RDP.linear(kappa).epsilon(delta)
    ref = rdp_to_dp_grid(rdp, delta)
    assert got <= ref + 1e-7 * max(1.0, ref)  # the optimiser is at least as good as a dense grid
    assert got >= ref - 1e-3 * max(1.0, ref)  # and it is the same minimum
    mir = RDP.linear(kappa).epsilon(delta, method="mironov")
    assert mir == pytest.approx(kappa + 2 * math.sqrt(kappa * math.log(1 / delta)), rel=1e-12)
    assert got <= mir


def test_general_rdp_curve_uses_all_orders():
    # A curve that is only finite for alpha <= 3: conversion must still be the grid minimum.
    f = lambda a: 0.2 * a if a <= 3 else math.inf  # noqa: E731
    c = RDP.from_function(f, "capped")
    ref = rdp_to_dp_grid(f, 1e-3)
    assert c.epsilon(1e-3) == pytest.approx(ref, rel=2e-3)
    assert c.rdp(2.0) == pytest.approx(0.4)
    assert c.rdp(4.0) == math.inf


def test_mironov_004_form():
    # SEEDS §0: inf over alpha of alpha*C/4 + log(1/delta)/(alpha-1) = C/4 + sqrt(C log(1/delta))
    for C, d in [(90.25, 1e-5), (0.1, 1e-6), (7.0, 0.01)]:
        closed = C / 4 + math.sqrt(C * math.log(1 / d))
        assert RDP.linear(C / 4).epsilon(d, method="mironov") == pytest.approx(closed, rel=1e-12)
        assert rdp_to_dp_grid(lambda a: a * C / 4, d, "mironov") == pytest.approx(closed, rel=1e-6)


def test_extreme_ranges_no_warnings_no_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mu in [1e-6, 1e-2, 1.0, 10.0, 40.0]:
            for d in [1e-15, 1e-10, 1e-5, 0.5]:
                e = GDP(mu).epsilon(d)
                assert math.isfinite(e) and e >= 0
                assert GDP(mu).delta(e) <= d * (1 + 1e-9)
        for kappa in [1e-9, 1.0, 250.0, 1e3]:
            for d in [1e-15, 1e-5]:
                e = RDP.linear(kappa).epsilon(d)
                assert math.isfinite(e) and e >= kappa  # RDP at alpha->inf is >= kappa*alpha-... sanity
        # epsilon up to 1e3: delta queries stay finite and in [0, 1]
        for eps in [0.0, 1.0, 100.0, 1e3]:
            for c in [GDP(5.0), RDP.linear(30.0), ApproxDP(2.0, 1e-6)]:
                v = c.delta(eps)
                assert 0.0 <= v <= 1.0 and not math.isnan(v)
        assert GDP(5.0).delta(1e3) < 1e-100 and GDP(50.0).delta(1e3) > 0.99


@settings(max_examples=200, deadline=None)
@given(mu=st.floats(1e-3, 30.0), logd=st.floats(-34.0, -0.7))
def test_gdp_roundtrip_and_soundness(mu, logd):
    d = math.exp(logd)
    g = GDP(mu)
    e = g.epsilon(d)
    assert g.delta(e) <= d * (1 + 1e-9) + 1e-300  # the reported eps is an upper bound
    if e > 0:
        # and tight: slightly smaller eps violates delta
        assert g.delta(max(0.0, e * (1 - 1e-6) - 1e-9)) >= d * (1 - 1e-6)


@settings(max_examples=150, deadline=None)
@given(mu1=st.floats(1e-2, 10.0), mu2=st.floats(1e-2, 10.0), e=st.floats(0.0, 20.0))
def test_gdp_monotone(mu1, mu2, e):
    lo, hi = sorted([mu1, mu2])
    assert GDP(lo).delta(e) <= GDP(hi).delta(e) + 1e-15
    assert GDP(hi).delta(e) >= GDP(hi).delta(e + 0.5) - 1e-15


@settings(max_examples=150, deadline=None)
@given(kappa=st.floats(1e-4, 100.0), e=st.floats(0.0, 200.0))
def test_rdp_roundtrip(kappa, e):
    c = RDP.linear(kappa)
    d = c.delta(e)
    if 1e-300 < d < 1:
        # epsilon(delta(e)) <= e up to optimiser tolerance: the delta query is itself a valid bound
        assert c.epsilon(d) <= e * (1 + 1e-6) + 1e-6


def test_gdp_vs_rdp_of_same_gaussian():
    # an exact Gaussian curve is never worse than its RDP relaxation
    for mu in [0.1, 1.0, 5.0]:
        for d in [1e-10, 1e-5, 1e-2]:
            assert GDP(mu).epsilon(d) <= GDP(mu).as_rdp().epsilon(d) + 1e-12
            assert GDP(mu).epsilon(d) == pytest.approx(gdp_epsilon(mu, d), rel=1e-7, abs=1e-10)


def test_approx_dp_region():
    # pure eps-DP: delta(eps') = (e^eps - e^eps')/(1 + e^eps) (randomised response), 0 at eps' >= eps
    c = ApproxDP(1.0)
    assert c.delta(1.0) == 0.0
    assert c.delta(0.0) == pytest.approx((math.e - 1) / (1 + math.e))
    assert c.epsilon(c.delta(0.3)) == pytest.approx(0.3)
    a = ApproxDP(1.0, 1e-3)
    assert a.delta(2.0) == 1e-3
    assert a.delta(0.5) == pytest.approx(1e-3 + (1 - 1e-3) * (math.e - math.exp(0.5)) / (1 + math.e))
    assert a.epsilon(1e-4) == math.inf
    # randomised response with p = e/(1+e) is exactly 1-DP: brute-force its hockey-stick
    p = math.e / (1 + math.e)
    for e2 in [0.0, 0.2, 0.7]:
        brute = max(0.0, p - math.exp(e2) * (1 - p)) + max(0.0, (1 - p) - math.exp(e2) * p)
        assert c.delta(e2) == pytest.approx(brute)


def test_delta_profile_inversion():
    prof = DeltaProfile(lambda e: math.exp(-e), "exp")
    assert prof.epsilon(1e-5) == pytest.approx(math.log(1e5), rel=1e-10)
    assert prof.delta(prof.epsilon(1e-3)) <= 1e-3


def test_composition():
    g = compose([GDP(0.3), GDP(0.4)])
    assert isinstance(g, GDP) and g.mu == pytest.approx(0.5)
    r = compose([RDP.linear(0.1), GDP(1.0)])
    assert r.rdp(3.0) == pytest.approx(0.3 + 1.5)
    p = compose([ApproxDP(0.5, 1e-6), ApproxDP(0.25, 1e-6)])
    assert p.eps0 == 0.75 and p.delta0 == pytest.approx(2e-6)
    k = compose([GDP(0.2)] * 4)
    assert k.mu == pytest.approx(0.4)
    with pytest.raises(AssumptionError, match=r"curves of kinds \['approx', 'gdp'\] cannot be composed exactly"):
        compose([GDP(1.0), ApproxDP(1.0, 1e-5)])


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, 2.0, float("nan"), float("inf")])
def test_bad_delta_rejected(bad):
    with pytest.raises(AssumptionError, match="delta"):
        GDP(1.0).epsilon(bad)
    with pytest.raises(AssumptionError, match="delta"):
        RDP.linear(1.0).epsilon(bad)


def test_bad_curve_parameters():
    with pytest.raises(AssumptionError, match=r"^mu \(GDP parameter\) = -1 must be >= 0"):
        GDP(-1.0)
    with pytest.raises(AssumptionError, match=r"^kappa \(linear RDP coefficient\) = nan must be finite"):
        RDP.linear(float("nan"))
    with pytest.raises(AssumptionError, match=r"^alpha = 1 must be > 1 \(Renyi order\)"):
        RDP.linear(1.0).rdp(1.0)
    with pytest.raises(AssumptionError, match=r"^epsilon = -0\.5 must be >= 0"):
        GDP(1.0).delta(-0.5)
    assert np.isclose(gdp_delta(2.0, 1.0), GDP(2.0).delta(1.0))


def test_gdp_epsilon_tiny_mu_is_an_upper_bound():
    # reviewer's case: double precision cancels in delta(eps) for tiny mu; the 80-digit value is 1.15727206e-08
    e = GDP(1.2593422698076837e-09).epsilon(2.6438649830437966e-30)
    assert 1.15727206e-08 <= e <= 1.15727206e-08 * (1 + 1e-5)


# -- issue 25: the RDP -> (eps, delta) conversion is rounded outward -----------------------------------

def _cks_inf_mp(kappa: float, delta: float, shift: float = 0.0):
    """inf over alpha > 1 of CKS20 Prop. 12 for the curve ``shift + kappa * alpha``, in 60-digit arithmetic,
    independently of bayesdp: d/dalpha = kappa - (L - log alpha)/(alpha - 1)^2 (L = log(1/delta)) is
    increasing, negative at alpha -> 1 and >= 0 at 1 + sqrt(L/kappa): bisection on that bracket."""
    import mpmath

    with mpmath.workdps(60):
        k, L = mpmath.mpf(kappa), -mpmath.log(mpmath.mpf(delta))
        lo, hi = mpmath.mpf(1), 1 + mpmath.sqrt(L / k)
        for _ in range(230):
            mid = (lo + hi) / 2
            if k * (mid - 1) ** 2 - L + mpmath.log(mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        return mpmath.mpf(shift) + k * a + mpmath.log(1 - 1 / a) + (L - mpmath.log(a)) / (a - 1)


def _outward_cases(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return [(float(10 ** rng.uniform(-4, 3)), float(10 ** rng.uniform(-12, -2))) for _ in range(n)]


def test_linear_rdp_epsilon_never_below_exact_mpmath():
    # without the outward rounding about half of these cases return a float just below the exact infimum
    # (the optimiser's value is within an ulp or two of it, on either side); with it, none does
    import mpmath

    below = []
    for kappa, delta in _outward_cases(200, 0):
        eps = RDP.linear(kappa).epsilon(delta)
        exact = _cks_inf_mp(kappa, delta)
        if eps < exact:
            below.append((kappa, delta, eps, float(exact)))
        assert mpmath.mpf(eps) <= exact * (1 + mpmath.mpf("1e-11"))     # and it is the optimum, not just a bound
    assert below == []


def test_nonlinear_rdp_epsilon_never_below_exact_mpmath():
    # the grid-and-optimiser route (a curve with a function term): shift + kappa*alpha has the exact infimum
    # shift + (the linear one); the shift is exactly representable
    import mpmath

    below = []
    for kappa, delta in _outward_cases(60, 1):
        curve = RDP.linear(kappa) + RDP.from_function(lambda a: 0.25, "0.25")
        eps = curve.epsilon(delta)
        exact = _cks_inf_mp(kappa, delta, shift=0.25)
        if eps < exact:
            below.append((kappa, delta, eps, float(exact)))
        assert mpmath.mpf(eps) <= exact * (1 + mpmath.mpf("1e-6"))
    assert below == []


def test_linear_rdp_mironov_epsilon_never_below_exact_mpmath():
    # Mironov 2017 Prop. 3 at its optimum for a linear curve: kappa + 2 sqrt(kappa log(1/delta)), exactly
    import mpmath

    below = []
    for kappa, delta in _outward_cases(200, 2):
        eps = RDP.linear(kappa).epsilon(delta, method="mironov")
        with mpmath.workdps(60):
            k = mpmath.mpf(kappa)
            exact = k + 2 * mpmath.sqrt(k * -mpmath.log(mpmath.mpf(delta)))
        if eps < exact:
            below.append((kappa, delta, eps, float(exact)))
    assert below == []


def _cks_delta_mp(kappa: float, eps: float):
    """min(Bretagnolle-Huber sqrt(1 - e^-kappa), inf over alpha > 1 of CKS20 Prop. 12's delta) for the curve
    kappa*alpha, in 60-digit arithmetic: log delta(alpha) = (alpha-1)(kappa alpha - eps + log(1 - 1/alpha))
    - log alpha has the increasing derivative kappa (2 alpha - 1) - eps + log(1 - 1/alpha): bisection."""
    import mpmath

    with mpmath.workdps(60):
        k, e = mpmath.mpf(kappa), mpmath.mpf(eps)
        d = lambda a: k * (2 * a - 1) - e + mpmath.log(1 - 1 / a)  # noqa: E731
        lo, hi = mpmath.mpf(1), mpmath.mpf(2)
        while d(hi) < 0:
            hi *= 2
        for _ in range(260):
            mid = (lo + hi) / 2
            if d(mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        cks = mpmath.exp((a - 1) * (k * a - e + mpmath.log(1 - 1 / a)) - mpmath.log(a))
        return min(cks, mpmath.sqrt(-mpmath.expm1(-k)), mpmath.mpf(1))


def test_linear_rdp_delta_never_below_exact_mpmath():
    import mpmath

    rng = np.random.default_rng(3)
    below = []
    for _ in range(150):
        kappa = float(10 ** rng.uniform(-4, 2))
        eps = float(kappa * 10 ** rng.uniform(-1, 1.5))
        d = RDP.linear(kappa).delta(eps)
        exact = _cks_delta_mp(kappa, eps)
        if d < exact:
            below.append((kappa, eps, d, float(exact)))
        # tight where the optimum order is searched: eps > kappa (below, the Bretagnolle-Huber bound is used) and
        # kappa >= 0.01 (for tiny kappa the CKS optimum alpha ~ 1/sqrt(2 kappa) lies outside the searched window:
        # a looser delta, never a smaller one)
        if eps > kappa >= 0.01:
            assert mpmath.mpf(d) <= exact * (1 + mpmath.mpf("1e-9")) + mpmath.mpf("1e-300")
    assert below == []


# -- issue 25: composition, the (eps, delta) region against values derived here --------------

def test_compose_every_rule_by_hand():
    # RDP curves add (Mironov 2017 Prop. 1); a GDP(mu) is the RDP curve alpha mu^2 / 2; pure eps0-DP is the
    # constant RDP curve eps0 (D_alpha <= D_inf)
    two = compose([RDP.linear(0.5), RDP.linear(0.25)])
    assert isinstance(two, RDP) and two.rdp(3.0) == pytest.approx(2.25, rel=1e-15)
    mixed = compose([RDP.linear(0.5), GDP(1.0)])
    assert mixed.rdp(2.0) == pytest.approx(2 * 0.5 + 2 * 0.5, rel=1e-15)
    pure = compose([RDP.linear(0.5), ApproxDP(0.3, 0.0), GDP(2.0)])
    assert isinstance(pure, RDP)
    assert pure.rdp(2.0) == pytest.approx(1.0 + 0.3 + 2 * 2.0, rel=1e-15)
    assert pure.rdp(5.0) == pytest.approx(2.5 + 0.3 + 5 * 2.0, rel=1e-15)
    assert compose([ApproxDP(0.3, 0.0), ApproxDP(0.2, 0.0)]).rdp(7.0) == pytest.approx(0.5, rel=1e-15)
    # (eps, delta) points: basic composition, delta capped at 1
    a = compose([ApproxDP(0.3, 1e-6), ApproxDP(0.2, 2e-6)])
    assert isinstance(a, ApproxDP) and (a.eps0, a.delta0) == (pytest.approx(0.5), pytest.approx(3e-6))
    assert compose([ApproxDP(0.1, 0.7), ApproxDP(0.1, 0.6)]).delta0 == 1.0
    # refusals
    with pytest.raises(AssumptionError) as e:
        compose([])
    assert str(e.value) == "compose() needs at least one curve"
    with pytest.raises(AssumptionError) as e:
        compose([RDP.linear(0.5), ApproxDP(0.3, 1e-6)])
    assert str(e.value) == ("curves of kinds ['approx', 'rdp'] cannot be composed exactly; convert each to an "
                            "(eps, delta) pair first")


def _approx_epsilon_mp(eps0: float, delta0: float, delta: float):
    """The (eps0, delta0)-DP region (Kairouz-Oh-Viswanath): delta(eps) = delta0 + (1 - delta0)(e^eps0 - e^eps) /
    (1 + e^eps0) below eps0, inverted in 60-digit arithmetic."""
    with mpmath.workdps(60):
        e0, d0, d = mpmath.mpf(eps0), mpmath.mpf(delta0), mpmath.mpf(delta)
        t = (d - d0) / (1 - d0) * (1 + mpmath.exp(-e0))
        return mpmath.mpf(0) if t >= 1 else max(mpmath.mpf(0), e0 + mpmath.log(1 - t))


@pytest.mark.parametrize("eps0,delta0", [(1.0, 0.0), (1.0, 1e-5), (0.1, 0.3), (5.0, 1e-9), (2.0, 0.5)])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-3, 0.05, 0.3, 0.6, 0.9])
def test_approx_dp_epsilon_is_the_exact_region_inverse(eps0, delta0, delta):
    p = ApproxDP(eps0, delta0)
    e = p.epsilon(delta)
    if delta < delta0:
        assert e == math.inf
        return
    exact = _approx_epsilon_mp(eps0, delta0, delta)
    assert e >= exact and e <= exact + 1e-12
    assert 0.0 <= e <= eps0
    # and delta(epsilon) at that epsilon is within the asked delta (the region, evaluated in mpmath)
    with mpmath.workdps(60):
        de = mpmath.mpf(delta0) + (1 - mpmath.mpf(delta0)) * (mpmath.exp(eps0) - mpmath.exp(e)) / (1 + mpmath.exp(eps0))
    assert de <= delta * (1 + 1e-12) or e == eps0


def test_approx_dp_edges():
    assert ApproxDP(1.0, 1e-5).epsilon(1e-5) == 1.0             # delta = delta0: eps0 itself, not inf
    assert ApproxDP(1.0, 1e-5).delta(1.0) == 1e-5               # at eps0 exactly delta0 (not rounded up)
    assert ApproxDP(1.0, 1e-5).delta(2.0) == 1e-5
    assert ApproxDP(1.0, 1.0).epsilon(0.5) == math.inf           # delta0 = 1 > every delta in (0, 1)
    # t >= 1: delta at least the total variation bound (e^eps0 - 1)/(e^eps0 + 1): epsilon 0
    tv = math.expm1(1.0) / (math.e + 1)
    assert ApproxDP(1.0, 0.0).epsilon(tv * (1 + 1e-9)) == 0.0
    assert ApproxDP(1.0, 0.0).delta(0.0) == pytest.approx(tv, rel=1e-12) and ApproxDP(1.0, 0.0).delta(0.0) <= 1.0
    assert ApproxDP(0.0, 0.9).delta(0.0) == 0.9
    assert ApproxDP(0.3, 0.0).rdp(4.0) == 0.3 and ApproxDP(0.3, 1e-6).rdp(4.0) == math.inf
    with pytest.raises(AssumptionError) as e:
        ApproxDP(1.0, 1.5)
    assert str(e.value) == "delta = 1.5 must be in [0, 1]"


def test_rdp_delta_bretagnolle_huber_and_zero_curves():
    # eps <= kappa: the Bretagnolle-Huber bound delta <= sqrt(1 - e^-KL), KL = kappa (the linear curve at alpha 1)
    for kappa, eps in [(0.5, 0.5), (2.0, 1.0), (1e-3, 0.0), (10.0, 3.0)]:
        d = RDP.linear(kappa).delta(eps)
        with mpmath.workdps(60):
            bh = mpmath.sqrt(-mpmath.expm1(-mpmath.mpf(kappa)))
        assert d >= bh and d == pytest.approx(float(bh), rel=1e-12)
    assert RDP.linear(0.0).delta(0.0) == 0.0 and RDP.linear(0.0).epsilon(1e-9) == 0.0
    assert GDP(2.0).rdp(3.0) == 6.0 and GDP(0.5).as_rdp().rdp(4.0) == 0.5        # alpha mu^2 / 2


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-3), (3.0, 1e-9), (0.05, 0.01)])
def test_gdp_epsilon_60_digit_fallback(mu, delta):
    # the fallback bisection returns a point whose exact delta is within the budget, and within 1e-11 of the root
    from bayesdp.curves import _gdp_epsilon_mp

    def delta_mp(e):
        with mpmath.workdps(60):
            m, x = mpmath.mpf(mu), mpmath.mpf(e)
            return mpmath.ncdf(-x / m + m / 2) - mpmath.exp(x) * mpmath.ncdf(-x / m - m / 2)

    e = _gdp_epsilon_mp(mu, delta)
    assert delta_mp(e) <= delta < delta_mp(e * (1 - 1e-11))
    assert e == pytest.approx(gdp_epsilon(mu, delta), rel=1e-9)


@pytest.mark.parametrize("kappa,eps", [(0.5, 3.0), (0.05, 1.0), (2.0, 12.0), (0.01, 0.4)])
def test_nonlinear_rdp_delta_and_mironov_route_against_mpmath(kappa, eps):
    # kappa alpha + 0.25 is CKS20's linear case at eps - 0.25 (the grid-and-optimiser route; no Bretagnolle-Huber):
    # log delta(alpha) = (alpha-1)(kappa alpha + 0.25 - eps + log(1 - 1/alpha)) - log alpha
    curve = RDP.linear(kappa) + RDP.from_function(lambda a: 0.25, "0.25")
    e2 = eps - 0.25
    with mpmath.workdps(60):
        k, e = mpmath.mpf(kappa), mpmath.mpf(e2)
        h = lambda a: (a - 1) * (k * a - e + mpmath.log(1 - 1 / a)) - mpmath.log(a)  # noqa: E731
        dh = lambda a: k * (2 * a - 1) - e + mpmath.log(1 - 1 / a)  # noqa: E731
        lo, hi = mpmath.mpf(1), mpmath.mpf(2)
        while dh(hi) < 0:
            hi *= 2
        for _ in range(260):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if dh(mid) < 0 else (lo, mid)
        exact = min(mpmath.mpf(1), mpmath.exp(h((lo + hi) / 2)))
    d = curve.delta(eps)
    assert d >= exact and d <= exact * (1 + 1e-6)
    # Mironov 2017 Prop. 3 on the same curve: inf over alpha of kappa alpha + 0.25 + L/(alpha - 1)
    # = 0.25 + kappa + 2 sqrt(kappa L)
    with mpmath.workdps(60):
        m_exact = mpmath.mpf(0.25) + kappa + 2 * mpmath.sqrt(mpmath.mpf(kappa) * mpmath.log(mpmath.mpf(1e5)))
    m = curve.epsilon(1e-5, method="mironov")
    assert m >= m_exact and m <= m_exact * (1 + 1e-6)
    assert curve.epsilon(1e-5) < m                          # CKS20 is strictly better than Mironov here


# -- issue 25: the survivors of the curves mutation run (docs/mutation.md, curves) ----------------------------


@pytest.mark.parametrize("call,message", [
    (lambda: RDP.linear(1.0).epsilon(0.0), "delta = 0 must be in (0, 1); pass a delta strictly between 0 and 1, "
                                           "e.g. 1e-5"),
    (lambda: GDP(1.0).delta(-1.0), "epsilon = -1 must be >= 0; pass a non-negative epsilon"),
    (lambda: GDP(1.0).delta(float("nan")), "epsilon = nan must be finite; pass a finite real value"),
    (lambda: RDP.linear(1.0).rdp(1.0), "alpha = 1 must be > 1 (Renyi order); pass alpha > 1"),
    (lambda: RDP.from_function(lambda a: float("nan"), "bad").rdp(2.0), "RDP term 'bad' returned NaN at alpha = 2"),
    (lambda: RDP.linear(1.0).epsilon(1e-5, method="x"), "method = 'x' must be 'cks' or 'mironov'"),
    (lambda: GDP(0.5).rdp(1.0), "alpha = 1 must be > 1 (Renyi order); pass alpha > 1"),
])
def test_curve_refusals_word_for_word(call, message):
    with pytest.raises(AssumptionError) as e:
        call()
    assert str(e.value) == message


def test_gdp_rdp_curve_is_alpha_mu_squared_over_two():
    # mu = 0.5 (where mu^2 and 2 mu differ): alpha mu^2/2 at alpha = 1.5 and 3
    assert GDP(0.5).rdp(1.5) == 1.5 * 0.25 / 2 and GDP(0.5).rdp(3.0) == 3 * 0.25 / 2
    assert GDP(0.5).rdp(1.0 + 2 ** -40) == pytest.approx(0.125, rel=1e-11)     # any order above 1


def test_exp_up_at_the_ends():
    # one exp_up for the curves and the transfer theorems (bayesdp/exact.py; each had its own until 2026-11-27, and
    # the transfer one returned 0.0, below e^x, for x under -745)
    from fractions import Fraction

    from bayesdp.exact import exp_up

    assert exp_up(-math.inf) == 0.0                                     # delta exactly 0
    assert exp_up(-800.0) == 5e-324                                      # underflow: the smallest positive double
    assert exp_up(0.0) == 1.0                                            # e^0 exactly
    assert exp_up(710.0) == math.inf
    assert exp_up(math.nan) == math.inf                                  # no bound (it gave 5e-324, below any e^x)
    for x in (math.log(0.5), -1e-300, 1e-300, 1.0, -37.5, 700.0):         # above e^x: 40-digit check
        import mpmath

        with mpmath.workdps(40):
            assert Fraction(exp_up(x)) >= Fraction(str(mpmath.exp(mpmath.mpf(x)))) * (1 - Fraction(1, 10 ** 35))


def test_deltas_never_above_one_and_zero_mu_gives_zero():
    assert GDP(0.0).delta(0.5) == 0.0 and GDP(0.0).delta(0.0) == 0.0
    # delta(0) of 100-GDP is 1 - 2 Phi(-50): its 60-digit value pushed up by 2^-50 would exceed 1
    assert GDP(100.0).delta(0.0) == 1.0
    assert RDP.linear(1e6).delta(0.0) == 1.0 and RDP.linear(100.0).delta(1e-3) == 1.0
    big = RDP.linear(50.0) + RDP.from_function(lambda a: 0.25, "0.25")     # non-linear route at delta ~ 1
    assert 0.99 < big.delta(1e-3) <= 1.0
    # no order gives a finite bound: delta 1
    assert RDP.from_function(lambda a: math.inf, "inf").delta(1.0) == 1.0
    # (eps0, 1)-DP below eps0: the randomised-response region is all of [0, 1]
    assert ApproxDP(1.0, 1.0).delta(0.5) == 1.0 and ApproxDP(1.0, 1.0).delta(1.0) == 1.0


def test_compose_labels_pure_dp_terms():
    assert compose([ApproxDP(0.5), RDP.linear(1.0)]).describe() == "RDP eps(alpha) = 1*alpha + 0.5 (pure DP)"


def test_bretagnolle_huber_threshold_gives_zero():
    # for a linear curve kappa alpha, delta(0) <= sqrt(1 - e^-kappa) (Bretagnolle-Huber): at that delta (rounded up)
    # and above, epsilon is 0
    from bayesdp.exact import round_up

    for kappa in (1.0, 0.3, 2.5):
        d = round_up(math.sqrt(-math.expm1(-kappa)))
        with mpmath.workdps(40):
            assert mpmath.mpf(d) >= mpmath.sqrt(1 - mpmath.exp(-kappa))
        assert RDP.linear(kappa).epsilon(d) == 0.0


def test_gdp_epsilon_is_zero_exactly_from_delta_at_zero():
    for mu in (1.0, 0.3):
        d0 = GDP(mu).delta(0.0)
        assert GDP(mu).epsilon(d0) == 0.0 and GDP(mu).epsilon(math.nextafter(d0, 0.0)) > 0.0


@settings(max_examples=150, deadline=None)
@given(mu=st.floats(0.01, 20.0), eps=st.floats(0.0, 60.0))
def test_gdp_delta_and_log_delta_against_mpmath(mu, eps):
    from bayesdp.curves import gdp_log_delta

    with mpmath.workdps(60):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        if exact < mpmath.mpf("1e-290"):
            return
        d = GDP(mu).delta(eps)
        assert mpmath.mpf(d) >= exact and mpmath.mpf(d) <= exact * (1 + mpmath.mpf(2) ** -45)
        lg = gdp_log_delta(mu, eps)
        assert math.isfinite(lg) and abs(mpmath.mpf(lg) - mpmath.log(exact)) <= 1e-6 * max(1, abs(mpmath.log(exact)))


def test_approx_dp_epsilon_near_delta_at_zero_is_not_below_the_exact_inverse():
    # 1 - t ~ e^-eps0 (delta just below delta(0)): in floats t's rounding alone made eps 1e-12 too small
    # (eps0 = 10, exact eps 5.06e-13, computed 1.37e-13)
    for eps0, target in [(10.0, 1e-13), (20.0, 1e-12), (5.0, 3e-14), (15.0, 2e-10), (1.0, 1e-15)]:
        t = -math.expm1(target - eps0)
        delta = t / (1 + math.exp(-eps0))
        got = ApproxDP(eps0, 0.0).epsilon(delta)
        with mpmath.workdps(60):
            T = mpmath.mpf(delta) * (1 + mpmath.exp(-mpmath.mpf(eps0)))
            exact = max(mpmath.mpf(0), mpmath.mpf(eps0) + mpmath.log1p(-T))
        assert mpmath.mpf(got) >= exact and got <= float(exact) + 64 * math.ulp(eps0)


@settings(max_examples=150, deadline=None)
@given(eps0=st.floats(0.0, 20.0), d0=st.floats(0.0, 0.5), frac=st.floats(0.0, 1.0))
def test_approx_dp_epsilon_is_the_inverse_of_its_region_rounded_up(eps0, d0, frac):
    # delta(eps) = d0 + (1 - d0)(e^eps0 - e^eps)/(1 + e^eps0) for eps < eps0; solve for eps at a delta in (d0, 1)
    delta = d0 + (1 - d0) * frac
    if not 0 < delta < 1:
        return
    got = ApproxDP(eps0, d0).epsilon(delta)
    with mpmath.workdps(60):
        E0, D0, D = mpmath.mpf(eps0), mpmath.mpf(d0), mpmath.mpf(delta)
        t = (D - D0) / (1 - D0) * (1 + mpmath.exp(-E0))
        exact = mpmath.mpf(0) if t >= 1 else max(mpmath.mpf(0), E0 + mpmath.log1p(-t))
    assert mpmath.mpf(got) >= exact and got <= eps0
    assert mpmath.mpf(got) <= exact + 1e-12 * max(1.0, eps0)
