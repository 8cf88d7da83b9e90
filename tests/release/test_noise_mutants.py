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
    # rho = 0.0305566 (the doctest of gaussian_calibration), 0.1 / sqrt(2 rho) = 0.4045 in (2^-2, 2^-1]: r = 2^-41
    r = 2.0 ** -41
    assert cal["grid"] == r
    assert draws == [(Fraction(rel.noise_scale) / Fraction(r)) ** 2] * 2 == [cal["sigma2_grid"]] * 2
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
    assert str(e.value) == message


def test_gaussian_release_flattens_its_input(monkeypatch):
    # a 2 x 2 statistic is released as 4 coordinates (k = 4 in the charged rounding sqrt(k) r)
    monkeypatch.setattr(N, "sample_discrete_gaussian", lambda sigma2: 0)
    rel = N.gaussian_release([[0.25, -1.5], [2.0, 0.0]], l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
    r = rel.grid
    assert rel.num_coords == 4 and rel.values.shape == (4,)
    assert list(rel.values) == [r * round(x / r) for x in (0.25, -1.5, 2.0, 0.0)]
    assert rel.grid_rounding == N.gaussian_calibration(0.1, 1.0, 1e-5, 4)["grid_rounding"] >= 2 * r


# ---------------------------------------------------------------------------------------------------------------
# The full mutation run of noise (docs/mutation.md, "noise"): granularity, laplace_release, zcdp_rho's bracket and
# refusal, _sqrt_up past double precision, gaussian_calibration's push-ups, float32 inputs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale,message", [
    (0.0, "noise_scale = 0 must be > 0; pass a positive number"),
    (-1.0, "noise_scale = -1 must be > 0; pass a positive number"),
    (math.nan, "noise_scale = nan must be finite; pass a finite real value"),
])
def test_granularity_refusals(scale, message):
    with pytest.raises(AssumptionError) as e:
        N.granularity(scale)
    assert str(e.value) == message


@pytest.mark.parametrize("values,sens,eps,message", [
    ([], 1.0, 1.0, "values is empty; pass at least one number to release"),
    ([1.0], 0.0, 1.0, "sensitivity = 0 must be > 0; a zero sensitivity needs no noise; check the statistic"),
    ([1.0], 1.0, 0.0, "epsilon = 0 must be > 0; pass a positive epsilon"),
    ([1.0], 1.0, -2.0, "epsilon = -2 must be > 0; pass a positive epsilon"),
    # the grid of 1e-300: 2^-997 < 1e-300 <= 2^-996, so r = 2^(-996 - 40) = 2^-1036 = 1.36e-312
    ([1e308], 1e-300, 1.0, f"values[0] = 1e+308 overflows the noise grid {2.0 ** -1036:.3g}; rescale the statistic"),
])
def test_laplace_release_refusals(values, sens, eps, message):
    with pytest.raises(AssumptionError) as e, np.errstate(over="ignore"):
        N.laplace_release(values, sensitivity=sens, epsilon=eps)
    assert str(e.value) == message


def _recorder(monkeypatch, name, outputs):
    """Replace the module's integer sampler ``name`` by one that records its argument and returns ``outputs``
    in turn (the released values can then be checked exactly)."""
    calls = []

    def fake(scale):
        calls.append(scale)
        return outputs[len(calls) - 1]

    monkeypatch.setattr(N, name, fake)
    return calls


def test_laplace_release_arithmetic_with_the_noise_fixed(monkeypatch):
    # sensitivity 0.7, epsilon 0.5, k = 3: nominal scale 1.4 in (1, 2], so r = 2^(1 - 40) = 2^-39 (by hand); the
    # discrete Laplace gets the exact grid scale (0.7 + 3 r) / (0.5 r); the draws 0, 3, -2 are added to the
    # rounded grid indices
    calls = _recorder(monkeypatch, "sample_discrete_laplace", [0, 3, -2])
    xs = [0.3, -1.2, 5.0]
    rel = N.laplace_release(xs, sensitivity=0.7, epsilon=0.5)
    r = 2.0 ** -39
    scale = (Fraction(0.7) + 3 * Fraction(r)) / (Fraction(1, 2) * Fraction(r))
    assert calls == [scale, scale, scale]
    assert list(rel.values) == [r * (round(0.3 / r) + 0), r * (round(-1.2 / r) + 3), r * (round(5.0 / r) - 2)]
    assert (rel.sensitivity, rel.epsilon, rel.num_coords, rel.grid) == (0.7, 0.5, 3, r)
    # 0.7 + 3 * 2^-39 is a double (0.7's last bit is 2^-53), so it is reported exactly; the scale is that over 0.5
    assert Fraction(rel.effective_sensitivity) == Fraction(0.7) + 3 * Fraction(r)
    assert Fraction(rel.noise_scale) == 2 * (Fraction(0.7) + 3 * Fraction(r))


def test_laplace_release_flattens_its_input(monkeypatch):
    # a 2 x 2 statistic is released as k = 4 coordinates: the rounding 4 r is charged (0.1 / 1: r = 2^(-3 - 40)
    # since 2^-4 < 0.1 <= 2^-3)
    _recorder(monkeypatch, "sample_discrete_laplace", [0, 0, 0, 0])
    rel = N.laplace_release([[0.25, -1.5], [2.0, 0.0]], sensitivity=0.1, epsilon=1.0)
    r = 2.0 ** -43
    assert rel.num_coords == 4 and rel.values.shape == (4,) and rel.grid == r
    assert list(rel.values) == [r * round(x / r) for x in (0.25, -1.5, 2.0, 0.0)]
    eff = Fraction(0.1) + 4 * Fraction(r)
    assert Fraction(rel.effective_sensitivity) >= eff > Fraction(math.nextafter(rel.effective_sensitivity, 0.0))


def test_laplace_release_reports_the_smallest_doubles_above_the_exact_sensitivity_and_scale(monkeypatch):
    """Regression: the reported effective sensitivity was float(sens + k r) rounded to nearest, which can be below
    the exact sum (the push-up compared two roundings of the same number and never fired)."""
    _recorder(monkeypatch, "sample_discrete_laplace", [0])
    # sensitivity 1 + 2^-52, epsilon 3e4: nominal 3.3e-5 in (2^-15, 2^-14], so r = 2^-54, and the exact
    # 1 + 2^-52 + 2^-54 lies between the doubles 1 + 2^-52 and 1 + 2^-51 (nearer the first)
    sens, eps = 1.0 + 2.0 ** -52, 3e4
    rel = N.laplace_release([0.0], sensitivity=sens, epsilon=eps)
    assert rel.grid == 2.0 ** -54
    assert rel.effective_sensitivity == 1.0 + 2.0 ** -51
    exact_scale = (Fraction(1) + Fraction(1, 2 ** 52) + Fraction(1, 2 ** 54)) / Fraction(eps)
    assert Fraction(rel.noise_scale) >= exact_scale > Fraction(math.nextafter(rel.noise_scale, 0.0))


def test_laplace_noise_scale_is_pushed_up_when_the_division_rounds_down(monkeypatch):
    # 0.7 over 0.7 is 1, an exact power of two: r = 2^-40; (0.7 + 3 r) / 0.7 rounds down as a double (checked
    # here), so the reported scale must be the next double up
    _recorder(monkeypatch, "sample_discrete_laplace", [0, 0, 0])
    rel = N.laplace_release([1.0, 2.0, 3.0], sensitivity=0.7, epsilon=0.7)
    r = 2.0 ** -40
    exact_scale = (Fraction(0.7) + 3 * Fraction(r)) / Fraction(0.7)
    assert Fraction(float(exact_scale)) < exact_scale                   # this case does exercise the push-up
    assert rel.grid == r
    assert Fraction(rel.noise_scale) >= exact_scale > Fraction(math.nextafter(rel.noise_scale, 0.0))


def test_float32_values_are_divided_by_the_grid_in_double_precision(monkeypatch):
    # JAX statistics arrive as float32; x / r must not be computed in float32, where 3e38 / 2^-40 overflows
    x = np.array([3e38, -1.5], dtype=np.float32)
    _recorder(monkeypatch, "sample_discrete_laplace", [0, 0])
    rel = N.laplace_release(x, sensitivity=1.0, epsilon=1.0)           # r = 2^-40: both values lie on the grid
    assert list(rel.values) == [float(x[0]), -1.5]
    _recorder(monkeypatch, "sample_discrete_gaussian", [0, 0])
    gr = N.gaussian_release(x, l2_sensitivity=1.0, epsilon=1.0, delta=1e-5)
    assert gr.grid <= 2.0 ** -30 and list(gr.values) == [float(x[0]), -1.5]


@pytest.mark.parametrize("eps,delta", [(4.0, 0.9), (1.0, 0.9), (3.0, 0.8), (0.5, 0.5)])
def test_zcdp_rho_above_epsilon_at_a_large_delta(eps, delta):
    # at a large delta the conversion of rho = epsilon is within the budget, so the bracket must grow past epsilon
    assert _zcdp_eps_mp(eps, delta) <= eps
    rho = N.zcdp_rho(eps, delta)
    assert rho > eps
    assert _zcdp_eps_mp(rho, delta) <= eps < _zcdp_eps_mp(rho * (1 + 1e-9), delta)


def test_zcdp_rho_refuses_an_epsilon_no_rho_reaches():
    # rho-zCDP gives epsilon >= 2 sqrt(rho log(1/delta)) - ... > 1e-300 for every rho > 1e-300 * 2^-200
    with pytest.raises(AssumptionError) as e:
        N.zcdp_rho(1e-300, 1e-200)
    assert str(e.value) == ("epsilon = 1e-300 is too small for Gaussian noise at delta = 1e-200: no noise scale "
                            "gives it; pass a larger epsilon or delta")


@pytest.mark.parametrize("root", [2 ** 53 + 1, 10 ** 17 + 3, 3 ** 40])
def test_sqrt_up_is_exact_for_perfect_squares_beyond_double_precision(root):
    # the square of a 54+ bit integer is not a double: float(k) rounds and math.sqrt(float(k)) is not the root
    assert N._sqrt_up(root * root) == root


def test_gaussian_calibration_by_hand_at_rho_one_half(monkeypatch):
    # with the target rho = 1/2 (zcdp_rho replaced), sensitivity 1 and k = 1 every quantity is exact:
    # r = granularity(1 / sqrt(1)) = 2^-40, g = r, eff = 1 + 2^-40, sigma = eff / sqrt(2 rho) = eff exactly (the
    # smallest double with eff^2 <= sigma^2), the rho spent eff^2 / (2 sigma^2) = 1/2 exactly (not pushed up),
    # sigma_grid = (1 + 2^-40) 2^40 = 2^40 + 1
    monkeypatch.setattr(N, "zcdp_rho", lambda epsilon, delta: 0.5)
    c = N.gaussian_calibration(1.0, 3.0, 1e-5, 1)
    r = 2.0 ** -40
    assert (c["rho_target"], c["grid"], c["grid_rounding"]) == (0.5, r, r)
    assert c["effective_sensitivity"] == 1.0 + r and c["sigma"] == 1.0 + r
    assert c["rho"] == 0.5
    assert c["sigma2_grid"] == Fraction(2 ** 40 + 1) ** 2
    assert (c["epsilon"], c["delta"]) == (3.0, 1e-5)


@pytest.mark.parametrize("k", [6, 7])
def test_gaussian_grid_rounding_is_pushed_up_in_the_subnormal_range(k):
    # sensitivity 1e-300: the grid is subnormal (2^-1036), where sqrt(k) r is not a double and float() can round
    # it down (checked here); the charged rounding must still be the smallest double >= sqrt(k) r
    c = N.gaussian_calibration(1e-300, 1.0, 1e-5, k)
    r = Fraction(c["grid"])
    assert c["grid"] < 2.0 ** -1022
    assert Fraction(float(N._sqrt_up(k) * r)) ** 2 < k * r * r         # this case does exercise the push-up
    g = Fraction(c["grid_rounding"])
    assert g * g >= k * r * r > Fraction(math.nextafter(c["grid_rounding"], 0.0)) ** 2


def test_gaussian_effective_sensitivity_is_pushed_up_when_the_sum_rounds_down():
    # 0.3 + g (g = sqrt(5) r rounded up) is not a double, and float() rounds it down (checked here)
    c = N.gaussian_calibration(0.3, 1.0, 1e-5, 5)
    eff = Fraction(0.3) + Fraction(c["grid_rounding"])
    assert Fraction(float(eff)) < eff                                   # this case does exercise the push-up
    assert Fraction(c["effective_sensitivity"]) >= eff > Fraction(math.nextafter(c["effective_sensitivity"], 0.0))


def test_zcdp_rho_below_the_conversion_s_rounding_reaches_the_bretagnolle_huber_region():
    # below ~1.1e-13 (8 ulps of log(1/delta) that the conversion adds to every epsilon it computes) an epsilon is
    # met only where Bretagnolle-Huber gives (0, delta)-DP: sqrt(1 - e^-rho) <= delta, rho <= -log(1 - delta^2),
    # i.e. rho = delta^2 = 1e-80 here.  Bisection from [0, epsilon] needed ~220 halvings and stopped at 200
    # with "epsilon too small"; now the bracket is found by halving first
    rho = N.zcdp_rho(1e-13, 1e-40)
    assert rho <= 1e-80 and rho == pytest.approx(1e-80, rel=1e-9)
    assert RDP.linear(rho).epsilon(1e-40) == 0.0
    with pytest.raises(AssumptionError, match=r"epsilon = 4.94066e-324 is too small .*pass a larger epsilon or delta"):
        N.zcdp_rho(5e-324, 0.5 ** 1074 * 2 ** 60)     # delta^2 underflows: no rho > 0 is small enough
