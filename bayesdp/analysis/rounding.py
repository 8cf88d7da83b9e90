"""Directed rounding of the analysis' closed forms: every constant is an upper (or lower) bound of
the exact real value, and exact whenever the exact value is a float.

The arithmetic is done on the exact rationals of the float inputs (:class:`fractions.Fraction`)
and rounded once, in the stated direction; square roots are rounded by checking the square.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["LIBM_ULPS", "add_up", "div_down", "div_up", "down", "hypot_up", "libm_out", "mul_up", "norm_up",
           "spectral_up", "sqrt_down", "sqrt_up", "sub_down", "up"]

#: floats to move a value computed by a libm function (exp, log, tanh, ... of numpy or math) outward: no libm
#: promises correct rounding, and numpy's own 2-ulp accuracy test fails for float64 cbrt on glibc's scalar code
#: (numpy pull request 31333); 8 leaves room for a few-ulp libm (docs/analysis.md, "Rounding")
LIBM_ULPS = 8


def _q(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(float(x))


def up(q) -> float:
    """The smallest float >= the exact value ``q`` (a Fraction or a number).

    Args:
        q: the exact value (a :class:`fractions.Fraction`, an int or a float; infinities pass through).

    Returns:
        The float rounded up.

    Examples:
        >>> from fractions import Fraction
        >>> from bayesdp.analysis.rounding import up
        >>> up(Fraction(1, 3)) > 1 / 3, up(0.5)      # the float 1/3 lies below 1/3
        (True, 0.5)
    """
    if not isinstance(q, Fraction) and not math.isfinite(float(q)):
        return float(q)
    q = _q(q)
    try:
        f = float(q)
    except OverflowError:                  # beyond the largest float (a product of two 1e300 in mul_up)
        return math.inf if q > 0 else -_FMAX
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)     # inf above the largest float (numpy's nextafter warns there)
    return f


def down(q) -> float:
    """The largest float <= the exact value ``q``.

    Args:
        q: the exact value (a :class:`fractions.Fraction`, an int or a float; infinities pass through).

    Returns:
        The float rounded down.

    Examples:
        >>> from fractions import Fraction
        >>> from bayesdp.analysis.rounding import down
        >>> down(Fraction(1, 3)) == 1 / 3, down(0.5)
        (True, 0.5)
    """
    if not isinstance(q, Fraction) and not math.isfinite(float(q)):
        return float(q)
    q = _q(q)
    try:
        f = float(q)
    except OverflowError:
        return _FMAX if q > 0 else -math.inf
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def libm_out(x: float, up: bool, extra: int = 0) -> float:
    """``x``, the float result of a libm function (or of a few operations around one), moved :data:`LIBM_ULPS`
    ``+ extra`` floats up (``up``) or down: an upper or lower bound of the exact value for a libm within a few
    ulps.

    Args:
        x: the computed value.
        up: True for an upper bound, False for a lower bound.
        extra: floats more, for the operations around the libm call (one per rounded add, multiply or divide).

    Returns:
        The moved float (infinities pass through).

    Examples:
        >>> import math
        >>> from bayesdp.analysis.rounding import LIBM_ULPS, libm_out
        >>> v = libm_out(math.exp(1.0), up=True)
        >>> v > math.e and v == math.e + LIBM_ULPS * math.ulp(math.e)
        True
    """
    x = float(x)
    for _ in range(LIBM_ULPS + extra):
        x = float(np.nextafter(x, math.inf if up else -math.inf))
    return x


def _finite(*xs) -> bool:
    return all(isinstance(x, Fraction) or math.isfinite(float(x)) for x in xs)


def mul_up(*xs) -> float:
    """Upper bound of the product of nonnegative ``xs``.

    Args:
        *xs: nonnegative numbers or Fractions (an infinite factor gives inf, or 0 if another factor is 0).

    Returns:
        The exact product rounded up.

    Examples:
        >>> from bayesdp.analysis.rounding import mul_up
        >>> mul_up(0.1, 3), mul_up(0.5, 4)
        (0.30000000000000004, 2.0)
    """
    if not _finite(*xs):
        return math.inf if all(float(x) != 0 for x in xs) else 0.0
    q = Fraction(1)
    for x in xs:
        q *= _q(x)
    return up(q)


def add_up(*xs) -> float:
    """Upper bound of the sum of ``xs``.

    Args:
        *xs: numbers or Fractions (any infinite term gives inf).

    Returns:
        The exact sum rounded up.

    Examples:
        >>> from bayesdp.analysis.rounding import add_up
        >>> add_up(0.1, 0.2), add_up(1, 2)
        (0.30000000000000004, 3.0)
    """
    if not _finite(*xs):
        return math.inf
    return up(sum((_q(x) for x in xs), Fraction(0)))


def sub_down(a, b) -> float:
    """Lower bound of ``a - b``.

    Args:
        a: a number or Fraction.
        b: a number or Fraction (an infinite operand gives -inf).

    Returns:
        The exact difference rounded down.

    Examples:
        >>> from bayesdp.analysis.rounding import sub_down
        >>> sub_down(0.3, 0.1), sub_down(3, 1)
        (0.19999999999999998, 2.0)
    """
    if not _finite(a, b):
        return -math.inf
    return down(_q(a) - _q(b))


def div_up(a, b) -> float:
    """Upper bound of ``a / b``.

    Args:
        a: a number or Fraction (an infinite operand gives IEEE's quotient; inf where it is undefined).
        b: a nonzero number or Fraction.

    Returns:
        The exact quotient rounded up.

    Raises:
        ZeroDivisionError: if ``b`` is 0.

    Examples:
        >>> from bayesdp.analysis.rounding import div_up
        >>> div_up(1, 3) > 1 / 3, div_up(1, 4)
        (True, 0.25)
    """
    if not _finite(a, b):                  # an infinite operand (an add_up beyond the floats): IEEE's quotient,
        v = float(a) / float(b)            # and inf where that is undefined (inf / inf, a NaN operand): a NaN
        return math.inf if math.isnan(v) else v     # bound would pass every comparison it is tested with
    return up(_q(a) / _q(b))


def div_down(a, b) -> float:
    """Lower bound of ``a / b``.

    Args:
        a: a number or Fraction (an infinite operand gives IEEE's quotient; -inf where it is undefined).
        b: a nonzero number or Fraction.

    Returns:
        The exact quotient rounded down.

    Raises:
        ZeroDivisionError: if ``b`` is 0.

    Examples:
        >>> from bayesdp.analysis.rounding import div_down
        >>> div_down(1, 3) == 1 / 3, div_down(1, 4)
        (True, 0.25)
    """
    if not _finite(a, b):
        v = float(a) / float(b)
        return -math.inf if math.isnan(v) else v
    return down(_q(a) / _q(b))


def sqrt_up(q) -> float:
    """Upper bound of sqrt(q) for a nonnegative Fraction or float.

    Args:
        q: a nonnegative number or Fraction (inf passes through).

    Returns:
        The smallest float whose square is >= ``q`` (exact when sqrt(q) is a float).

    Examples:
        >>> from bayesdp.analysis.rounding import sqrt_up
        >>> sqrt_up(4), sqrt_up(2) ** 2 >= 2
        (2.0, True)
    """
    if isinstance(q, float) and not math.isfinite(q):
        return q
    q = _q(q)
    s = _sqrt_near(q)
    if not math.isfinite(s):
        return s
    while Fraction(s) * Fraction(s) < q:
        s = float(np.nextafter(s, math.inf))
        if not math.isfinite(s):
            return s
    while s > 0 and Fraction(d := float(np.nextafter(s, -math.inf))) ** 2 >= q:
        s = d
    return s


def _sqrt_near(q: Fraction) -> float:
    """A float within a few units in the last place of sqrt(q) >= 0, for any Fraction: an integer square root
    of q scaled to about 110 bits (``float(q)`` would underflow to 0 below 1e-308, or overflow above 1e308, and
    the steps to the answer from there would never end: a fuzz helper's ``norm_up([1e-300])``)."""
    if q <= 0:
        return 0.0
    k = (110 - (q.numerator.bit_length() - q.denominator.bit_length())) // 2
    n = (q.numerator << (2 * k)) // q.denominator if k >= 0 else q.numerator // (q.denominator << (-2 * k))
    try:
        return math.ldexp(float(math.isqrt(n)), -k)
    except OverflowError:
        return math.inf


def sqrt_down(q) -> float:
    """Lower bound of sqrt(q) for a nonnegative Fraction or float.

    Args:
        q: a finite nonnegative number or Fraction.

    Returns:
        The largest float whose square is <= ``q`` (exact when sqrt(q) is a float).

    Examples:
        >>> from bayesdp.analysis.rounding import sqrt_down, sqrt_up
        >>> sqrt_down(4), sqrt_down(2) < sqrt_up(2)
        (2.0, True)
    """
    q = _q(q)
    s = _sqrt_near(q)
    if not math.isfinite(s):
        s = _FMAX
    while s > 0 and Fraction(s) * Fraction(s) > q:
        s = float(np.nextafter(s, -math.inf))
    while s < _FMAX and Fraction(u := float(np.nextafter(s, math.inf))) ** 2 <= q:
        s = u
    return s


_FMAX = float(np.finfo(np.float64).max)


def spectral_up(a: np.ndarray) -> float:
    """Upper bound of the spectral norm of a nonnegative matrix: exact (the largest entry) when every row
    and column has at most one nonzero (a scaled partial permutation), else the Collatz-Wielandt bound
    ``||A||_2^2 = rho(A^T A) <= max_i (A^T A x)_i / x_i`` for any positive x (true for every nonnegative matrix),
    at x from the float64 SVD refined by power steps, each product's rounding bounded upward; never above the
    (exactly rounded) Frobenius norm.

    Args:
        a: a nonnegative matrix (array-like).

    Returns:
        An upper bound of its largest singular value (inf if an entry is not finite, 0 for a zero matrix).

    Examples:
        >>> from bayesdp.analysis.rounding import spectral_up
        >>> spectral_up([[3.0, 0.0], [0.0, 2.0]]), spectral_up([[1.0, 1.0], [1.0, 1.0]])   # exact: 3 and 2
        (3.0, 2.0)
    """
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0 or not np.any(a):
        return 0.0
    if not np.isfinite(a).all():
        return math.inf
    nz = a != 0
    if a.ndim == 2 and nz.sum(axis=0).max() <= 1 and nz.sum(axis=1).max() <= 1:
        return float(np.abs(a).max())
    frob = norm_up(a)
    if a.ndim != 2:
        return frob
    a = np.abs(a)
    m, n = a.shape
    try:
        x = np.abs(np.linalg.svd(a, full_matrices=False)[2][0])
    except np.linalg.LinAlgError:
        x = np.ones(n)
    for _ in range(3):                     # power steps on A^T A: closer to the Perron vector
        x = np.maximum(x, 1e-6 * float(x.max()))
        x = a.T @ (a @ x)
        if not (np.isfinite(x).all() and x.max() > 0):
            return frob
        x = x / float(x.max())
    x = np.maximum(x, 1e-6)
    # each dot product of nonnegative terms: exact <= fl / (1 - gamma_k) <= fl (1 + 2 gamma_{k+2}); then the ratio
    g = lambda v, k: np.nextafter(v * (1 + 2 * (k + 2) * 2.3e-16) + (k + 2) * 2.0 ** -1000, math.inf)  # noqa: E731
    y = g(a.T @ g(a @ x, n), m)
    rho = float(np.max(g(y / x, 1)))
    if not math.isfinite(rho):
        return frob
    return min(sqrt_up(Fraction(rho)), frob)


def norm_up(values) -> float:
    """Upper bound of the Euclidean norm of an array (exact arithmetic on the floats).

    Args:
        values: an array (any shape; flattened).

    Returns:
        The norm rounded up (inf if an entry is not finite).

    Examples:
        >>> from bayesdp.analysis.rounding import norm_up
        >>> norm_up([3.0, -4.0]), norm_up([[1.0, 1.0], [1.0, 1.0]])
        (5.0, 2.0)
    """
    v = np.abs(np.asarray(values, dtype=np.float64)).reshape(-1)
    if not np.isfinite(v).all():
        return math.inf
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    if v.size > 4096:                      # large: float sum with a rigorous relative bound
        # scaled by a power of two so that the largest entry is in [1/2, 1): squares neither overflow nor, for the
        # entries that matter, underflow (unscaled, 5000 entries of 1e-200 gave 5e-324); each scaled entry moves by
        # at most 2^-1075 (a subnormal rounding), each square or product then by at most 2^-1073 in all
        e = math.frexp(float(v.max()))[1]
        w = np.ldexp(v, -e)
        s = float(np.sum(w * w)) * (1 + (v.size + 2) * 2.3e-16) + v.size * 2.0 ** -1070
        with np.errstate(over="ignore"):       # beyond the largest float: inf, an upper bound
            r = float(np.ldexp(np.nextafter(math.sqrt(s), math.inf), e))
        return float(np.nextafter(r, math.inf))
    return sqrt_up(sum((Fraction(float(x)) ** 2 for x in v), Fraction(0)))


def hypot_up(values) -> float:
    """Upper bound of sqrt(sum of squares) of nonnegative scalars.

    Args:
        values: an iterable of nonnegative scalars.

    Returns:
        The Euclidean norm rounded up.

    Examples:
        >>> from bayesdp.analysis.rounding import hypot_up
        >>> hypot_up([3, 4]), hypot_up([1.0])
        (5.0, 1.0)
    """
    return norm_up(np.asarray([float(x) for x in values]))
