"""Small exact / directed-rounding helpers for the arithmetic of certificates.

A certificate's constants must be upper bounds of the true ones, so wherever a formula contains a
difference of nearly equal numbers (``1 - rho`` with ``rho = 1 - gamma m``, ``mu - gamma L^2/2`` near
the step-size limit, ``1 - exp(-x)`` ...) it is computed here either exactly (in rational arithmetic on
the binary values of the inputs, :class:`fractions.Fraction`) and then rounded in the conservative
direction, or with ``expm1`` / ``log1p``, whose results are accurate to a few units in the last place
(ulps) and are then pushed outward by :func:`round_up`.

Nothing here is a bound by itself: every function computes one well-defined real number and rounds it
in the direction named in its docstring.
"""

from __future__ import annotations

import math
from fractions import Fraction

#: relative outward rounding applied to a value computed with a few correctly rounded operations
#: (expm1, log1p, exp, sqrt, products): 2^-46 ~ 1.4e-14 covers a few hundred ulps of accumulated error.
OUTWARD = 2.0 ** -46


def exact(x: float) -> Fraction:
    """The exact rational value of a finite float (an intermediate that overflowed to inf or NaN is
    refused in one line: no certificate can be computed from it)."""
    x = float(x)
    if not math.isfinite(x):
        from .errors import AssumptionError

        raise AssumptionError(f"an intermediate constant is {x}: the constants are outside the float range; "
                              "rescale them")
    return Fraction(x)


def down(q: Fraction) -> float:
    """The largest float <= q (the largest finite float when q exceeds the float range; 0.0 for a
    positive q below the smallest subnormal)."""
    try:
        x = float(q)
    except OverflowError:
        return -math.inf if q < 0 else 1.7976931348623157e308
    if Fraction(x) > q:
        x = math.nextafter(x, -math.inf)
    return x


def up(q: Fraction) -> float:
    """The smallest float >= q (``inf`` when q exceeds the float range)."""
    try:
        x = float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf
    if Fraction(x) < q:
        x = math.nextafter(x, math.inf)
    return x


def round_up(x: float, rel: float = OUTWARD) -> float:
    """``x`` pushed away from zero upward by the relative amount ``rel`` (x >= 0 assumed): an upper
    bound of a value computed as ``x`` with a relative error below ``rel``."""
    if x <= 0.0 or not math.isfinite(x):
        return x
    return math.nextafter(x * (1.0 + rel), math.inf)


def round_down(x: float, rel: float = OUTWARD) -> float:
    """``x`` (>= 0) shrunk by the relative amount ``rel``: a lower bound of a value computed as ``x``."""
    if x <= 0.0 or not math.isfinite(x):
        return x
    return math.nextafter(x * (1.0 - rel), 0.0)


def contraction_gap_exact(step_size: float, strong_convexity: float, smoothness: float) -> Fraction:
    """``1 - rho`` for ``rho = max(|1 - gamma m|, |1 - gamma L|)`` (m <= L), exactly:
    ``1 - rho = min(gamma m, 2 - gamma L)`` (``1 - |1 - t| = min(t, 2 - t)`` and t -> min(t, 2 - t) is
    increasing then decreasing, so the minimum over t in [gamma m, gamma L] is at an end)."""
    g, m, L = exact(step_size), exact(strong_convexity), exact(smoothness)
    return min(g * m, 2 - g * L)


def contraction_gap(step_size: float, strong_convexity: float, smoothness: float) -> float:
    """``1 - rho`` rounded DOWN (a lower bound: every bound divides by it)."""
    return down(contraction_gap_exact(step_size, strong_convexity, smoothness))


def one_minus_power(gap: float, n: int) -> float:
    """``1 - (1 - gap)^n`` for gap in [0, 1] without cancellation: ``-expm1(n log1p(-gap))``
    (a few ulps; callers round the final bound outward)."""
    if gap >= 1.0:
        return 1.0
    if gap <= 0.0:
        return 0.0
    return -math.expm1(n * math.log1p(-gap))


def power_of_contraction(gap: float, n: int) -> float:
    """``(1 - gap)^n`` as ``exp(n log1p(-gap))`` (0 when gap = 1)."""
    if gap >= 1.0:
        return 0.0
    return math.exp(n * math.log1p(-gap))


def mul_up(*factors: float) -> float:
    """The product of non-negative floats, exact then rounded UP (no underflow to 0 of a positive
    product, ``inf`` beyond the float range)."""
    q = Fraction(1)
    for f in factors:
        q *= exact(f)
    return up(q)


def sqrt_up(x: float) -> float:
    """An upper bound of ``sqrt(x)`` for x >= 0 (correctly rounded sqrt, pushed up one ulp)."""
    if x <= 0.0:
        return 0.0
    return math.nextafter(math.sqrt(x), math.inf)
