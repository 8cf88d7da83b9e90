"""Small exact / directed-rounding helpers for the arithmetic of certificates.

A certificate's constants must be upper bounds of the true ones, so wherever a formula contains a
difference of nearly equal numbers (``1 - rho`` with ``rho = 1 - gamma m``, ``mu - gamma L^2/2`` near
the step-size limit, ``1 - exp(-x)`` ...) it is computed here either exactly (in rational arithmetic on
the binary values of the inputs, ``fractions.Fraction``) and then rounded in the conservative
direction, or with ``expm1`` / ``log1p``, whose results are accurate to a few units in the last place
(ulps) and are then pushed outward by [`round_up`][bayesdp.exact.round_up].

Nothing here is a bound by itself: every function computes one well-defined real number and rounds it
in the direction named in its docstring.
"""

from __future__ import annotations

import math
from fractions import Fraction
from .errors import AssumptionError

__all__ = ["OUTWARD", "exact", "down", "up", "round_up", "contraction_gap_exact", "contraction_gap",
           "one_minus_power", "power_of_contraction", "mul_up", "sqrt_up", "sqrt_exact_up", "exp_up", "mp_up",
           "mp_down"]

#: relative outward rounding applied to a value computed with a few correctly rounded operations
#: (expm1, log1p, exp, sqrt, products): 2^-46 ~ 1.4e-14 covers a few hundred ulps of accumulated error.
OUTWARD = 2.0 ** -46


def exact(x: float) -> Fraction:
    """The exact rational value of a finite float (an intermediate that overflowed to inf or NaN is
    refused in one line: no certificate can be computed from it).

    Args:
        x: a finite float (or anything ``float()`` accepts).

    Returns:
        the ``Fraction`` equal to the binary value of ``x``.

    Raises:
        AssumptionError: ``x`` is infinite or NaN.

    Examples:
        >>> exact(0.1)                       # the double nearest 0.1, exactly
        Fraction(3602879701896397, 36028797018963968)
        >>> exact(0.5) * 3
        Fraction(3, 2)
    """
    x = float(x)
    if not math.isfinite(x):

        raise AssumptionError(f"an intermediate constant is {x}: the constants are outside the float range; "
                              "rescale them")
    return Fraction(x)


def down(q: Fraction) -> float:
    """The largest float <= q (the largest finite float when q exceeds the float range; 0.0 for a
    positive q below the smallest subnormal).

    Args:
        q: an exact rational.

    Returns:
        a float ``x`` with ``x <= q``, the nearest one below.

    Examples:
        >>> from fractions import Fraction
        >>> down(Fraction(1, 3)), up(Fraction(1, 3))   # the two doubles around 1/3
        (0.3333333333333333, 0.33333333333333337)
    """
    try:
        x = float(q)
    except OverflowError:
        return -math.inf if q < 0 else 1.7976931348623157e308
    if Fraction(x) > q:
        x = math.nextafter(x, -math.inf)
    return x


def up(q: Fraction) -> float:
    """The smallest float >= q (``inf`` when q exceeds the float range).

    Args:
        q: an exact rational.

    Returns:
        a float ``x`` with ``x >= q``, the nearest one above.

    Examples:
        >>> from fractions import Fraction
        >>> up(Fraction(1, 3)) >= Fraction(1, 3) >= down(Fraction(1, 3))
        True
        >>> up(Fraction(10) ** 400)
        inf
    """
    try:
        x = float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf
    if Fraction(x) < q:
        x = math.nextafter(x, math.inf)
    return x


def round_up(x: float, rel: float = OUTWARD) -> float:
    """``x`` pushed away from zero upward by the relative amount ``rel`` (x >= 0 assumed): an upper
    bound of a value computed as ``x`` with a relative error below ``rel``.

    Args:
        x: a computed value, >= 0 (0, negative and non-finite values are returned unchanged).
        rel: the relative error to cover (default [`OUTWARD`][bayesdp.exact.OUTWARD] = 2^-46).

    Returns:
        ``x * (1 + rel)`` rounded up to the next float.

    Examples:
        >>> round_up(1.0)                    # 1 + 2^-46, one more ulp
        1.0000000000000144
        >>> round_up(0.0)
        0.0
    """
    if x <= 0.0 or not math.isfinite(x):
        return x
    return math.nextafter(x * (1.0 + rel), math.inf)


def contraction_gap_exact(step_size: float, strong_convexity: float, smoothness: float) -> Fraction:
    """``1 - rho`` for ``rho = max(|1 - gamma m|, |1 - gamma L|)`` (m <= L), exactly:
    ``1 - rho = min(gamma m, 2 - gamma L)`` (``1 - |1 - t| = min(t, 2 - t)`` and t -> min(t, 2 - t) is
    increasing then decreasing, so the minimum over t in [gamma m, gamma L] is at an end).

    Args:
        step_size: gamma.
        strong_convexity: m.
        smoothness: L (>= m; not checked here, see
            [`bayesdp.theorems.gradient_step.contraction_gap`][bayesdp.theorems.gradient_step.contraction_gap]).

    Returns:
        the exact rational ``min(gamma m, 2 - gamma L)`` (<= 0 when the step does not contract).

    Raises:
        AssumptionError: an input is infinite or NaN.

    Examples:
        >>> contraction_gap_exact(0.5, 1.0, 3.0)   # min(0.5 * 1, 2 - 0.5 * 3)
        Fraction(1, 2)
        >>> contraction_gap_exact(1.0, 1.0, 3.0)   # 2 - gamma L = -1: no contraction
        Fraction(-1, 1)
    """
    g, m, L = exact(step_size), exact(strong_convexity), exact(smoothness)
    return min(g * m, 2 - g * L)


def contraction_gap(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """``1 - rho`` rounded DOWN (a lower bound: every bound divides by it).

    Args:
        step_size: gamma.
        strong_convexity: m.
        smoothness: L.

    Returns:
        the largest float <= ``min(gamma m, 2 - gamma L)``.

    Raises:
        AssumptionError: an input is infinite or NaN.

    Examples:
        >>> contraction_gap(1e-16, 1.0, 1.0)       # floats: 1 - (1 - 1e-16) = 1.1102230246251565e-16
        1e-16
    """
    return down(contraction_gap_exact(step_size, strong_convexity, smoothness))


def one_minus_power(gap: float, n: int) -> float:
    """``1 - (1 - gap)^n`` for gap in [0, 1] without cancellation: ``-expm1(n log1p(-gap))``
    (a few ulps; callers round the final bound outward).

    Args:
        gap: ``1 - rho``, in [0, 1] (values outside are clamped to the ends' results 0 and 1).
        n: the exponent, >= 0.

    Returns:
        ``1 - (1 - gap)^n`` in [0, 1].

    Examples:
        >>> one_minus_power(0.5, 3)                # 1 - 1/8
        0.875
        >>> one_minus_power(1e-20, 10)             # floats: 1 - (1 - 1e-20)**10 = 0.0
        1e-19
    """
    if gap >= 1.0:
        return 1.0
    if gap <= 0.0:
        return 0.0
    return -math.expm1(n * math.log1p(-gap))


def power_of_contraction(gap: float, n: int) -> float:
    """``(1 - gap)^n`` as ``exp(n log1p(-gap))`` (0 when gap = 1).

    Args:
        gap: ``1 - rho``, in [0, 1].
        n: the exponent, >= 0.

    Returns:
        ``rho^n`` to a few ulps.

    Examples:
        >>> round(power_of_contraction(0.5, 3), 6)
        0.125
        >>> power_of_contraction(1.0, 3)
        0.0
    """
    if gap >= 1.0:
        return 0.0
    return math.exp(n * math.log1p(-gap))


def mul_up(*factors: float) -> float:
    """The product of non-negative floats, exact then rounded UP (no underflow to 0 of a positive
    product, ``inf`` beyond the float range).

    Args:
        *factors: finite floats >= 0.

    Returns:
        the smallest float >= the exact product.

    Raises:
        AssumptionError: a factor is infinite or NaN.

    Examples:
        >>> mul_up(0.5, 0.25, 8.0)
        1.0
        >>> mul_up(1e-200, 1e-200)                 # floats: 1e-200 * 1e-200 = 0.0
        5e-324
    """
    q = Fraction(1)
    for f in factors:
        q *= exact(f)
    return up(q)


def sqrt_up(x: float) -> float:
    """An upper bound of ``sqrt(x)`` for x >= 0 (correctly rounded sqrt, pushed up one ulp).

    Args:
        x: >= 0 (0 and negative values give 0.0).

    Returns:
        a float >= ``sqrt(x)``.

    Examples:
        >>> sqrt_up(4.0)
        2.0000000000000004
    """
    if x <= 0.0:
        return 0.0
    return math.nextafter(math.sqrt(x), math.inf)


def exp_up(x: float) -> float:
    """An upper bound of ``e^x``: exactly 1 at 0, ``exp`` (accurate to an ulp) pushed up by
    [`round_up`][bayesdp.exact.round_up] elsewhere, ``inf`` beyond the float range and the smallest positive float
    instead of an underflow to 0 (``e^x > 0``: a delta of 1e-400 is reported as 5e-324, never as 0).

    Args:
        x: a float (``-inf`` gives 0, the exact value; NaN gives ``inf``, no bound, as
            [`bayesdp.analysis.rounding.div_up`][bayesdp.analysis.rounding.div_up] does: a NaN passes no check, and the
            smallest positive float it gave before passes every one).

    Returns:
        a float >= ``e^x``.

    Examples:
        >>> exp_up(0.0), exp_up(1.0) > 2.718281828459045, exp_up(-800.0), exp_up(710.0)
        (1.0, True, 5e-324, inf)
    """
    if x == 0.0:
        return 1.0
    if x == -math.inf:
        return 0.0
    if x > 709.0 or math.isnan(x):       # beyond the float range (math.exp raises OverflowError), or undefined
        return math.inf
    v = math.exp(x)
    return round_up(v) if v > 0.0 else math.nextafter(0.0, 1.0)


def sqrt_exact_up(q) -> float:
    """The square root of an exact rational ``q >= 0``, rounded up: exact when it is a float, else at most one ulp
    above the correctly rounded value.

    Args:
        q: a ``Fraction`` or an integer, >= 0.

    Returns:
        a float >= ``sqrt(q)``.

    Examples:
        >>> from fractions import Fraction
        >>> sqrt_exact_up(4), sqrt_exact_up(3), Fraction(sqrt_exact_up(3)) ** 2 >= 3
        (2.0, 1.7320508075688774, True)
    """
    q = Fraction(q)
    s = math.sqrt(up(q))   # correctly rounded, of a float >= q: the next float up is >= sqrt(q)
    return s if Fraction(s) ** 2 >= q else math.nextafter(s, math.inf)


def mp_up(v) -> float:
    """A float >= the exact value that the mpmath number ``v`` approximates to at least 30 significant digits (the
    caller's precision, less any cancellation): the nearest float, pushed up unless it is above ``v (1 + 1e-30)``.

    Examples:
        >>> import mpmath
        >>> with mpmath.workdps(50):
        ...     x = mp_up(mpmath.mpf(1) / 3)
        >>> Fraction(x) >= Fraction(1, 3)
        True
    """
    import mpmath

    f = float(v)
    if mpmath.mpf(f) < v * (1 + mpmath.mpf(10) ** -30):
        f = math.nextafter(f, math.inf)
    return f


def mp_down(v) -> float:
    """A float <= the exact value that the mpmath number ``v >= 0`` approximates to at least 30 significant digits
    (:func:`mp_up`'s mirror).

    Examples:
        >>> import mpmath
        >>> with mpmath.workdps(50):
        ...     x = mp_down(mpmath.mpf(2) / 3)
        >>> Fraction(x) <= Fraction(2, 3)
        True
    """
    import mpmath

    f = float(v)
    if mpmath.mpf(f) > v * (1 - mpmath.mpf(10) ** -30):
        f = math.nextafter(f, 0.0)
    return f
