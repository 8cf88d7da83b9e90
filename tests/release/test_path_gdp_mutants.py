"""The GDP inversion of the path release, ``bayesdp.publish.path.gdp_mu`` (issue 25): the returned mu is the
largest whose curve meets the budget, checked against Dong-Roth-Su Cor. 2.13 evaluated here in mpmath."""

import math

import mpmath
import pytest

from bayesdp.curves import GDP
from bayesdp.publish.path import gdp_mu

# mu from 2.5e-5 to 14.7: the bracket [0, 1] is doubled for the large ones (50 and 200 need mu > 2); below 1 the
# power of 2 that starts the bisection is itself found by bisection (2.5e-5 starts at 2^-16).  (Much smaller
# epsilons are not in the list: there GDP.epsilon's own outward rounding exceeds the 1e-9 asked below.)
CASES = [(1.0, 1e-5), (0.1, 1e-6), (3.0, 1e-9), (0.5, 0.01), (10.0, 1e-12), (0.02, 1e-3), (50.0, 1e-5),
         (200.0, 1e-10), (1e-4, 1e-5)]


def _delta_mp(mu: float, eps: float):
    """delta(eps) of mu-GDP (Dong-Roth-Su 2022 Cor. 2.13) in 50-digit arithmetic."""
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def _mu_star_mp(eps: float, delta: float):
    """The exact mu with delta_mu(eps) = delta (delta increases in mu), by 50-digit bisection."""
    with mpmath.workdps(50):
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while _delta_mp(hi, eps) < delta:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if _delta_mp(mid, eps) < delta:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


@pytest.mark.parametrize("eps,delta", CASES)
def test_gdp_mu_meets_the_budget_and_is_within_1e9_of_it(eps, delta):
    mu = gdp_mu(eps, delta)
    e = GDP(mu).epsilon(delta)
    assert e <= eps                                       # never just above the budget (upper bracket end)
    assert e >= eps * (1 - 1e-9)                          # and not wastefully below it
    # independently: the exact delta at eps is within the budget, and mu is within 1e-9 of the exact root
    assert _delta_mp(mu, eps) <= delta
    mu_star = _mu_star_mp(eps, delta)
    assert mu <= mu_star
    assert mu >= mu_star * (1 - 1e-9)


def test_gdp_mu_literature_value():
    # Dong-Roth-Su: 1-GDP is (eps, delta) with delta(1) = Phi(-1/2) - e Phi(-3/2) = 0.12693...
    d1 = float(_delta_mp(1.0, 1.0))
    assert d1 == pytest.approx(0.126936, abs=1e-6)
    assert gdp_mu(1.0, d1 * (1 + 1e-12)) == pytest.approx(1.0, rel=1e-9)
    assert math.isclose(float(_mu_star_mp(1.0, d1)), 1.0, rel_tol=1e-12)


DELTA_FIX = ("must be in (0, 1) for a path release (the chain's Gaussian steps are not pure epsilon-DP); pass e.g. "
             "delta=1e-6 or use method='coupling'")


@pytest.mark.parametrize("eps,delta,message", [
    (0.0, 1e-5, "epsilon = 0 must be > 0; pass a positive epsilon"),
    (-1.0, 1e-5, "epsilon = -1 must be > 0; pass a positive epsilon"),
    (1.0, 0.0, f"delta = 0.0 {DELTA_FIX}"),
    (1.0, 1.0, f"delta = 1.0 {DELTA_FIX}"),
    (1.0, 1.5, f"delta = 1.5 {DELTA_FIX}"),
    (1.0, "0.1", f"delta = '0.1' {DELTA_FIX}"),
    # mu-GDP has epsilon(delta) = 0 only for mu <= ~2.5 delta (TV <= delta); at delta = 1e-200 the 200 halvings of
    # the bracket do not reach it and epsilon = 1e-300 needs a smaller mu: refused, not mu = 0
    (1e-300, 1e-200, "epsilon = 1e-300 is too small at delta = 1e-200"),
])
def test_gdp_mu_refusals(eps, delta, message):
    from bayesdp.errors import AssumptionError

    with pytest.raises(AssumptionError) as e:
        gdp_mu(eps, delta)
    assert str(e.value) == message


# -- the contract to the float (the bisection runs on the floats themselves) -------------------------------------------

@pytest.mark.parametrize("eps,delta", CASES + [(1e-3, 1e-200), (1e4, 1e-5)])
def test_gdp_mu_is_a_boundary_float_of_the_budget(eps, delta):
    # the returned mu meets the budget and the next float above it does not
    mu = gdp_mu(eps, delta)
    assert GDP(mu).epsilon(delta) <= eps < GDP(math.nextafter(mu, math.inf)).epsilon(delta)


@pytest.mark.slow          # 3 s: every epsilon near mu = 2.8e-56 is a 60-digit bisection
def test_gdp_mu_is_a_boundary_float_far_below_one():
    # mu = 2.8e-56, about 2^-184: the former search found the power of 2 by bisection and then ran the 200 - 184 = 16
    # halvings left of 200, and returned a mu 3.4e-6 (relative) below the boundary, not within 1e-12 of it
    mu = gdp_mu(1e-55, 1e-60)
    assert GDP(mu).epsilon(1e-60) <= 1e-55 < GDP(math.nextafter(mu, math.inf)).epsilon(1e-60)


@pytest.mark.parametrize("m,delta", [(0.25, 1e-5), (1.0, 1e-6), (3.0, 1e-9), (0.01, 1e-3), (7.5, 1e-12)])
def test_a_budget_met_with_equality_counts_as_met(m, delta):
    # epsilon's rounded values repeat over runs of adjacent mu; a budget equal to one of them (GDP(m)'s own epsilon)
    # is met on that run, so the boundary is the run's last float, not the float below its first
    e = GDP(m).epsilon(delta)
    mu = gdp_mu(e, delta)
    assert GDP(mu).epsilon(delta) <= e < GDP(math.nextafter(mu, math.inf)).epsilon(delta)
    assert mu >= m * (1 - 1e-9)


def test_gdp_mu_refuses_below_its_floor_2_to_the_minus_200():
    from bayesdp.errors import AssumptionError

    # at delta = 1e-70 mu = 2^-200 has epsilon > 0 (its total variation, about 0.4 2^-200 = 2.5e-61, exceeds delta);
    # a budget just below it is met at mu = 2^-201, but the search does not go below 2^-200: refused
    d = 1e-70
    e0 = GDP(2.0 ** -200).epsilon(d)
    assert e0 > 0 and GDP(2.0 ** -201).epsilon(d) <= e0 * (1 - 1e-6)
    with pytest.raises(AssumptionError) as e:
        gdp_mu(e0 * (1 - 1e-6), d)
    assert str(e.value) == f"epsilon = {e0 * (1 - 1e-6):.6g} is too small at delta = 1e-70"


def test_gdp_mu_certifies_few_points_and_is_memoised(monkeypatch):
    """The bisection on the certified epsilon starts from the float formula's crossing: at most 20 certified
    evaluations for epsilon >= 0.01 and 32 below, where the float formula loses digits (a plain bisection from
    2^-200 to inf takes 63), the same contract, and a repeated budget costs
    none (a pure function of two floats)."""
    import bayesdp.publish.path as path_mod

    calls = []
    real = path_mod.GDP

    class Counting(real):
        def epsilon(self, delta):
            calls.append(self.mu)
            return real.epsilon(self, delta)

    monkeypatch.setattr(path_mod, "GDP", Counting)
    path_mod._gdp_mu.cache_clear()
    for eps, delta in CASES:
        calls.clear()
        mu = gdp_mu(eps, delta)
        assert 2 <= len(calls) <= (20 if eps >= 0.01 else 32), (eps, delta, len(calls))
        assert GDP(mu).epsilon(delta) <= eps < GDP(math.nextafter(mu, math.inf)).epsilon(delta)
        calls.clear()
        assert gdp_mu(eps, delta) == mu and calls == []
