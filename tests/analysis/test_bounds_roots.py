"""The k-th roots and the power tangent's factor in bounds.clipped_sigmoid_log, checked exactly.

The rule maps a clip [L, U] of p = s^k to [L^(1/k), U^(1/k)] for s.  The float power ``x ** (1.0 / k)`` is not
within a few floats of the root when 1/k is rounded (k = 3) and x is small: at x = 1e-300 it is 1.3e-14 relative
(about 58 floats) ABOVE the cube root, so two floats down (the rule before) was not a lower root.  The roots are
now checked with exact rational arithmetic; the reference here is mpmath at 60 digits."""

from fractions import Fraction

import mpmath
import pytest

from bayesdp.analysis.structure.bounds import _root_dn, _root_up

mpmath.mp.dps = 60


@pytest.mark.parametrize("x", [1e-300, 1e-200, 1e-38, 3e-10, 0.05, 0.1, 0.5, 0.9, 0.95, 0.999, 1.0, 0.0])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_roots_bracket_the_exact_root(x, k):
    lo, hi = _root_dn(x, k), _root_up(x, k)
    assert Fraction(lo) ** k <= Fraction(x) <= Fraction(hi) ** k
    t = mpmath.root(mpmath.mpf(x), k)
    assert mpmath.mpf(lo) <= t <= mpmath.mpf(hi)
    # and not far: the lower root within a few floats (2 outward; the exact check lowers only where needed); the
    # upper one keeps the float power's own excess (up to 1.3e-14 relative at x = 1e-300, k = 3: sound, looser)
    if x > 0:
        assert (t - mpmath.mpf(lo)) / t < 1e-15 and (mpmath.mpf(hi) - t) / t < 2e-14


def test_the_float_power_alone_is_not_a_lower_root():
    # why the exact check is there: the float cube root of 1e-300, two floats down, is still above the root
    import math
    r = math.nextafter(math.nextafter((1e-300) ** (1.0 / 3), 0.0), 0.0)
    assert Fraction(r) ** 3 > Fraction(1e-300)
    assert Fraction(_root_dn(1e-300, 3)) ** 3 <= Fraction(1e-300)


@pytest.mark.parametrize("x, k", [(2.0 ** 900, 3), (1e300, 3), (1e250, 3), (1e200, 7)])
def test_upper_roots_of_large_numbers_climb_to_the_smallest_float_above_the_root(x, k):
    # above 1 the rounded 1/k (below 1/3 for k = 3) makes the float power fall BELOW the root: at 2^900 by about
    # 52 floats, so two floats up is not an upper root and the exact loop has to climb (checked here, so the test
    # exercises the loop); it stops at the first float whose k-th power reaches x
    import math
    start = math.nextafter(math.nextafter(x ** (1.0 / k), math.inf), math.inf)
    assert Fraction(start) ** k < Fraction(x)
    hi = _root_up(x, k)
    assert Fraction(hi) ** k >= Fraction(x) > Fraction(math.nextafter(hi, 0.0)) ** k
    assert mpmath.mpf(hi) >= mpmath.root(mpmath.mpf(x), k)


def test_an_exact_root_is_returned_exactly():
    # 2^900 = (2^300)^3: the loop reaches 2^300, whose cube equals x, and stops there (not one float beyond)
    assert _root_up(2.0 ** 900, 3) == 2.0 ** 300
    lo = _root_dn(2.0 ** 900, 3)
    assert lo <= 2.0 ** 300 and Fraction(lo) ** 3 <= Fraction(2.0 ** 900)
