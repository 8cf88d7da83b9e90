"""The optimisers and brackets behind the curves' conversions (issue 25, docs/mutation.md "curves").

Every value the conversions return is the bound at some Renyi order (or a bisection end whose exact delta is within
the budget), so a worse search gives a looser bound, never an unsound one.  These tests hold the searches to the
optimum: each number is compared with the infimum or the root worked out here in 50-60-digit mpmath, to 1e-12
(relative) or closer, on curves where the default starting point, window or bracket matters.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from bayesdp.curves import GDP, RDP, ApproxDP, _golden_min, _gdp_epsilon_mp, _verify_gdp_epsilon
from bayesdp.errors import AssumptionError
from test_curves import _cks_inf_mp


def test_golden_min_reaches_the_minimum_and_returns_an_evaluated_value():
    # (t - 1)^2 + 2 on [-5, 5]: 2 to 1e-18 (the bracket shrinks to 1e-10, the value error is its square)
    assert 2.0 <= _golden_min(lambda t: (t - 1.0) ** 2 + 2.0, -5.0, 5.0) <= 2.0 + 1e-18
    # an asymmetric one, minimum off the bracket's golden points: e^t - 2 t, min 2 - 2 log 2 at t = log 2
    seen = []

    def f(t):
        seen.append(t)
        return math.exp(t) - 2.0 * t

    got = _golden_min(f, -3.0, 4.0)
    with mpmath.workdps(50):
        exact = 2 - 2 * mpmath.log(2)
    assert abs(got - exact) <= 4 * math.ulp(0.6)          # f's own rounding: a few ulps either side
    # the value returned is f at a point it evaluated, inside the bracket (any point gives a valid bound)
    assert got in [f(t) for t in list(seen)] and all(-3.0 <= t <= 4.0 for t in seen)
    # the minimum at an end of the bracket: approached to the tolerance
    assert 0.0 <= _golden_min(lambda t: t, 0.0, 1.0) <= 2e-10
    assert 0.0 <= _golden_min(lambda t: -t, -1.0, 0.0) <= 2e-10
    # infinite values are never the minimum: (t - 0.7)^2 only for t <= 0.5, minimum 0.04 at the border
    g = lambda t: (t - 0.7) ** 2 if t <= 0.5 else math.inf  # noqa: E731
    assert 0.04 <= _golden_min(g, 0.0, 1.0) <= 0.04 + 1e-9
    # nor are nan values, even at the first golden point (t = 0.382 on [0, 1]): (t - 0.7)^2 for t >= 0.5
    h = lambda t: (t - 0.7) ** 2 if t >= 0.5 else math.nan  # noqa: E731
    assert 0.0 <= _golden_min(h, 0.0, 1.0) <= 1e-18
    assert _golden_min(lambda t: math.inf, 0.0, 1.0) == math.inf
    # a looser tolerance stops earlier: the result is within it, not at the optimum
    loose = _golden_min(lambda t: (t - 1.0) ** 2, -5.0, 5.0, xatol=1e-2)
    assert 0.0 < loose <= 1e-4


@pytest.mark.parametrize("mu", [1e-45, 1e-58, 1e-62, 1e-200, 1e-290])
def test_gdp_delta_of_a_tiny_mu_is_not_lost_to_cancellation(mu):
    # delta(0) = 2 Phi(mu/2) - 1 = erf(mu/(2 sqrt 2)) (no cancellation in this form); at 60 digits the difference of
    # the two terms near 1/2 came out 0.0 for mu = 1e-62 and 7e-4 (relative) below the exact value for mu = 1e-58
    with mpmath.workdps(400):
        m = mpmath.mpf(mu)
        exact0 = mpmath.erf(m / (2 * mpmath.sqrt(2)))
        d0 = GDP(mu).delta(0.0)
        assert exact0 <= d0 <= exact0 * (1 + mpmath.mpf(2) ** -45)
        # and at eps = mu (the terms still cancel to ~log10(1/mu) digits)
        e = mpmath.mpf(mu)
        exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        d = GDP(mu).delta(mu)
        assert exact <= d <= exact * (1 + mpmath.mpf(2) ** -45)


@pytest.mark.parametrize("mu, eps, lo, hi", [
    (1e200, 1.0, 1 - 1e-15, 1.0),       # Phi(5e199) - e Phi(-5e199): 1 to any precision (mpmath's erfc overflowed)
    (1e200, 1e300, 1 - 1e-15, 1.0),     # Phi(5e199 - 1e100) - e^1e300 Phi(-5e199 - 1e100) <= e^0 / 5e199
    (1e-200, 1.0, 0.0, 1e-300),          # Phi(-1e200): far below the float range; 1e-300 is the stated floor
    (2e6, 1.0, 1 - 1e-15, 1.0),          # b = -1e6 - 5e-7 just beyond the cut-off: the dropped term is tiny
])
def test_gdp_delta_far_tails_are_upper_bounds_and_do_not_crash(mu, eps, lo, hi):
    assert lo <= GDP(mu).delta(eps) <= hi


def test_gdp_epsilon_of_a_tiny_mu_below_delta_at_zero_is_positive_and_meets_the_budget():
    # delta(0) = 4e-63 > 1e-300: epsilon must be positive (it was 0.0: the 60-digit delta(0) was 0) and its exact
    # delta, in 400 digits, within the budget
    eps = GDP(1e-62).epsilon(1e-300)
    assert eps > 0.0
    with mpmath.workdps(400):
        m, e = mpmath.mpf(1e-62), mpmath.mpf(eps)
        assert mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2) <= mpmath.mpf(1e-300)


def _cks_at_mp(kappa: float, delta: float, am1: float):
    """CKS20 Prop. 12 for kappa alpha at alpha = 1 + am1, in 60 digits."""
    with mpmath.workdps(60):
        a, L = 1 + mpmath.mpf(am1), -mpmath.log(mpmath.mpf(delta))
        return mpmath.mpf(kappa) * a + mpmath.log(1 - 1 / a) + (L - mpmath.log(a)) / (a - 1)


def _zero_term(kappa: float) -> RDP:
    """kappa alpha through the grid-and-optimiser route (a function term of 0)."""
    return RDP.linear(kappa) + RDP.from_function(lambda a: 0.0, "0")


def test_rdp_epsilon_grid_route_optimum_between_the_first_two_grid_orders():
    # kappa chosen so that the optimal order is alpha - 1 = 1.02e-4, between the grid's first two points 1e-4 and
    # 1.1007e-4: the first is the grid's best, and only the search between it and the second finds the optimum
    # (the grid value is 4e-8 above it, relative)
    L, x = math.log(1e5), 1.02e-4
    kappa = (L - math.log1p(x)) / x ** 2
    exact = _cks_inf_mp(kappa, 1e-5)
    got = _zero_term(kappa).epsilon(1e-5)
    assert exact <= got <= exact * (1 + 1e-12)


def test_rdp_epsilon_grid_route_optimum_between_the_last_two_grid_orders():
    # delta = 1e-300, optimal order alpha - 1 = 9.3e5, between the grid's last two points 9.085e5 and 1e6 (the grid
    # value is 2.7e-4 above the optimum, relative); eps ~ 1.5e-3, pushed up by 8 ulps of log(1/delta) ~ 691
    L, x = -math.log(1e-300), 9.3e5
    kappa = (L - math.log1p(x)) / x ** 2
    exact = _cks_inf_mp(kappa, 1e-300)
    got = _zero_term(kappa).epsilon(1e-300)
    assert exact <= got <= exact + 1e-11


def test_rdp_epsilon_grid_route_searches_orders_up_to_one_plus_1e6():
    # the optimal order alpha - 1 = 1e8 lies beyond the grid (alpha - 1 <= 1e6): the bound is CKS20's at the grid's
    # last order (a valid bound, 50 times the infimum here), not an error
    kappa = 6.7e-14
    exact = _cks_inf_mp(kappa, 1e-300)
    at_end = _cks_at_mp(kappa, 1e-300, 1e6)
    got = _zero_term(kappa).epsilon(1e-300)
    assert exact <= at_end <= got <= at_end + 1e-11


def test_linear_rdp_epsilon_of_a_huge_kappa_where_every_searched_order_rounds_to_one():
    # kappa = 1e40, delta = 1e-5: the optimal alpha - 1 ~ 3e-20 rounds alpha to 1.0 in floats; those orders give no
    # bound (not an error) and Mironov's kappa + 2 sqrt(kappa log(1/delta)) is returned (1e-38 above the infimum,
    # relative), rounded up (by 2^-46, relative)
    exact = _cks_inf_mp(1e40, 1e-5)
    got = RDP.linear(1e40).epsilon(1e-5)
    assert exact <= got <= exact * (1 + 1e-13)


def test_gdp_epsilon_of_zero_mu_is_zero():
    assert GDP(0.0).epsilon(1e-5) == 0.0 and GDP(0.0).epsilon(0.5) == 0.0


def _gdp_root_mp(mu: float, delta: float):
    """The exact epsilon of mu-GDP at delta (Dong-Roth-Su Cor. 2.13 solved by 60-digit bisection)."""
    with mpmath.workdps(60):
        m, d = mpmath.mpf(mu), mpmath.mpf(delta)
        lo, hi = mpmath.mpf(0), mpmath.mpf(mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1)
        for _ in range(250):
            mid = (lo + hi) / 2
            if mpmath.ncdf(-mid / m + m / 2) - mpmath.exp(mid) * mpmath.ncdf(-mid / m - m / 2) > d:
                lo = mid
            else:
                hi = mid
        return hi


@pytest.mark.parametrize("mu,delta", [(1.0, 0.2), (1.0, 0.3), (1.0, 0.1), (1.0, 1e-5), (2.0, 1e-3), (4.0, 1e-2),
                                      (20.0, 1e-3)])
def test_gdp_epsilon_is_within_2e_14_of_the_exact_root(mu, delta):
    # the float bisection ends within 1e-14 (or 4 ulps) of the root and the 60-digit check keeps it; the 60-digit
    # bisection alone (the fallback where the float formula has no sign change) stops at 1e-13 of it, 2.3e-14 to 8e-14
    # above at these points.  The first two have eps < 1 and delta within a factor e of delta(0); at mu = 4 the root
    # (16.5) is above 1/2 + mu sqrt(2 log(1/delta)) + 1 (13.6), a bracket without mu's square, and at mu = 20 (root
    # 260.9) above mu^2/3 + mu sqrt(2 log(1/delta)) + 1 (208).
    root = _gdp_root_mp(mu, delta)
    got = GDP(mu).epsilon(delta)
    assert root <= got <= root * (1 + mpmath.mpf("2e-14"))
    assert _gdp_epsilon_mp(mu, delta) > root * (1 + mpmath.mpf("2e-14"))     # (so the test tells the two apart)


def test_verify_gdp_epsilon_refuses_what_it_cannot_certify():
    # its callers hand it a point near the root; from eps = 0 its 400 doubling steps (from 1e-300) stay below 3e-180,
    # far from 1-GDP's epsilon at delta = 1e-10 (about 6.1): it refuses rather than return an uncertified epsilon
    with pytest.raises(AssumptionError) as e:
        _verify_gdp_epsilon(1.0, 0.0, 1e-10)
    assert str(e.value) == "could not certify epsilon for mu = 1 at delta = 1e-10"


def test_approx_dp_epsilon_where_one_minus_t_is_exactly_zero():
    # eps0 with exp(-eps0) = 1/2 + 2^-52, so that the lower bound of e^-eps0 (two floats below) is 1/2: with
    # delta0 = 1/4 and delta = 3/4, 1 - t = 1 - (1/2)/(3/4) (3/2) = 0 exactly.  delta(0) = 1/4 + 3/4 (e^eps0 - 1)/(e^eps0
    # + 1) ~ 1/2 <= 3/4: epsilon 0 (and no log of 0)
    x = math.log(2.0) - 2.0 ** -51
    found = [e for e in (x + k * math.ulp(x) for k in range(-8, 9)) if math.exp(-e) == 0.5 + 2.0 ** -52]
    if not found:   # (another libm's exp)
        pytest.skip("no eps0 near log 2 with exp(-eps0) = 1/2 + 2^-52")
    eps0 = found[0]
    with mpmath.workdps(40):
        E = mpmath.exp(mpmath.mpf(eps0))
        assert mpmath.mpf(0.25) + mpmath.mpf(0.75) * (E - 1) / (E + 1) <= mpmath.mpf(0.75)
    assert ApproxDP(eps0, 0.25).epsilon(0.75) == 0.0
