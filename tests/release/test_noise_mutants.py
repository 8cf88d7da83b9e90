"""Noise calibration of bayesdp/publish/noise.py against values computed here independently (issue 25):
zCDP inversion with 60-digit mpmath, the Gaussian calibration in exact rationals, the grid by hand."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from bayesdp.curves import RDP
from bayesdp.errors import AssumptionError
from bayesdp.publish import noise as N


def _zcdp_eps_mp(rho: float, delta: float):
    """inf over alpha > 1 of CKS20 Prop. 12 for rho-zCDP (curve rho * alpha), 60 digits, by bisection on the
    increasing derivative rho - (L - log alpha)/(alpha - 1)^2."""
    with mpmath.workdps(60):
        k, L = mpmath.mpf(rho), -mpmath.log(mpmath.mpf(delta))
        lo, hi = mpmath.mpf(1), 1 + mpmath.sqrt(L / k)
        for _ in range(230):
            mid = (lo + hi) / 2
            if k * (mid - 1) ** 2 - L + mpmath.log(mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        return k * a + mpmath.log(1 - 1 / a) + (L - mpmath.log(a)) / (a - 1)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.1, 1e-6), (5.0, 1e-9), (0.5, 0.01), (30.0, 1e-5)])
def test_zcdp_rho_is_the_largest_rho_within_the_budget(eps, delta):
    rho = N.zcdp_rho(eps, delta)
    assert _zcdp_eps_mp(rho, delta) <= eps                         # within the budget (exact conversion)
    assert _zcdp_eps_mp(rho * (1 + 1e-9), delta) > eps              # and the largest such, to 1e-9
    assert RDP.linear(rho).epsilon(delta) <= eps


@pytest.mark.parametrize("eps,delta,message", [
    (0.0, 1e-5, "epsilon = 0 must be > 0; pass a positive epsilon"),
    (1.0, 1.0, "delta = 1.0 must be in (0, 1) for Gaussian noise (a zCDP release has no pure epsilon); pass e.g. "
               "delta=1e-6 or use Laplace noise"),
    (1.0, 0, "delta = 0 must be in (0, 1) for Gaussian noise (a zCDP release has no pure epsilon); pass e.g. "
             "delta=1e-6 or use Laplace noise"),
    (1.0, "x", "delta = 'x' must be in (0, 1) for Gaussian noise (a zCDP release has no pure epsilon); pass e.g. "
               "delta=1e-6 or use Laplace noise"),
])
def test_zcdp_rho_refusals(eps, delta, message):
    with pytest.raises(AssumptionError) as e:
        N.zcdp_rho(eps, delta)
    assert str(e.value) == message


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 16, 1000, 10 ** 12 + 1])
def test_sqrt_up_is_the_smallest_double_above_sqrt_k(k):
    q = N._sqrt_up(k)
    assert q * q >= k
    r = math.isqrt(k)
    if r * r == k:
        assert q == r                                               # exact for perfect squares
    else:
        below = Fraction(math.nextafter(float(q), 0.0))
        assert below * below < k                                    # the next double down is below sqrt(k)


@pytest.mark.parametrize("sens,eps,delta,k", [(1.0, 1.0, 1e-5, 1), (0.3, 0.5, 1e-6, 3), (7.0, 2.0, 1e-9, 10),
                                              (1e-3, 0.1, 1e-5, 2)])
def test_gaussian_calibration_in_exact_rationals(sens, eps, delta, k):
    c = N.gaussian_calibration(sens, eps, delta, k)
    rho_t = N.zcdp_rho(eps, delta)
    assert c["rho_target"] == rho_t and (c["epsilon"], c["delta"]) == (eps, delta)
    # the grid: the power of two 2^(ceil(log2(sens / sqrt(2 rho))) - 40)
    nominal = sens / math.sqrt(2 * rho_t)
    assert c["grid"] == 2.0 ** (math.ceil(math.log2(nominal)) - 40)
    r = Fraction(c["grid"])
    # rounding charged: >= sqrt(k) r and the smallest double that is
    g = Fraction(c["grid_rounding"])
    assert g * g >= k * r * r and Fraction(math.nextafter(c["grid_rounding"], 0.0)) ** 2 < k * r * r
    eff = Fraction(sens) + g
    assert Fraction(c["effective_sensitivity"]) >= eff
    assert c["effective_sensitivity"] == pytest.approx(float(eff), rel=1e-15)
    # sigma: the smallest double with eff^2 <= 2 rho_t sigma^2
    s = Fraction(c["sigma"])
    assert eff * eff <= 2 * Fraction(rho_t) * s * s
    below = Fraction(math.nextafter(c["sigma"], 0.0))
    assert eff * eff > 2 * Fraction(rho_t) * below * below
    # the rho actually spent: eff^2 / (2 sigma^2), rounded up, never above the target
    spent = eff * eff / (2 * s * s)
    assert Fraction(c["rho"]) >= spent and c["rho"] <= rho_t
    assert c["rho"] == pytest.approx(float(spent), rel=1e-15)
    assert c["sigma2_grid"] == (s / r) ** 2


def test_gaussian_calibration_refuses_zero_sensitivity():
    with pytest.raises(AssumptionError) as e:
        N.gaussian_calibration(0.0, 1.0, 1e-5, 1)
    assert str(e.value) == "l2_sensitivity = 0 must be > 0; a zero sensitivity needs no noise; check the statistic"


def test_gaussian_release_arithmetic_with_the_noise_fixed(monkeypatch):
    # the noise draw replaced by a recorder returning 0 and then 3: each released value is r (round(x / r) + G)
    # with the calibrated sigma_grid^2, and the record carries the calibration (computed separately here)
    draws = []

    def fake(sigma2):
        draws.append(sigma2)
        return 0 if len(draws) == 1 else 3

    monkeypatch.setattr(N, "sample_discrete_gaussian", fake)
    vals = [0.25, -1.5]
    rel = N.gaussian_release(vals, l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
    cal = N.gaussian_calibration(0.1, 1.0, 1e-5, 2)
    r = cal["grid"]
    assert draws == [cal["sigma2_grid"], cal["sigma2_grid"]]
    assert list(rel.values) == [r * round(0.25 / r), r * (round(-1.5 / r) + 3)]
    assert (rel.sensitivity, rel.epsilon, rel.delta, rel.num_coords, rel.grid) == (0.1, 1.0, 1e-5, 2, r)
    assert (rel.effective_sensitivity, rel.grid_rounding, rel.noise_scale, rel.rho) == (
        cal["effective_sensitivity"], cal["grid_rounding"], cal["sigma"], cal["rho"])


@pytest.mark.parametrize("values,sens,message", [
    ([], 0.1, "values is empty; pass at least one number to release"),
    ([1.0, float("inf")], 0.1, "values[1] = inf must be finite; pass a finite real value"),
    ([1e308], 1e-300, "values[0] = 1e+308 overflows the noise grid 5.43e-312; rescale the statistic"),
])
def test_gaussian_release_refusals(values, sens, message):
    with pytest.raises(AssumptionError) as e, np.errstate(over="ignore"):
        N.gaussian_release(values, l2_sensitivity=sens, epsilon=1.0, delta=1e-5)
    assert str(e.value).replace("np.float64(inf)", "inf") == message


def test_gaussian_release_flattens_its_input(monkeypatch):
    # a 2 x 2 statistic is released as 4 coordinates (k = 4 in the charged rounding sqrt(k) r)
    monkeypatch.setattr(N, "sample_discrete_gaussian", lambda sigma2: 0)
    rel = N.gaussian_release([[0.25, -1.5], [2.0, 0.0]], l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
    r = rel.grid
    assert rel.num_coords == 4 and rel.values.shape == (4,)
    assert list(rel.values) == [r * round(x / r) for x in (0.25, -1.5, 2.0, 0.0)]
    assert rel.grid_rounding == N.gaussian_calibration(0.1, 1.0, 1e-5, 4)["grid_rounding"] >= 2 * r
