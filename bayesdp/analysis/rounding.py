"""Directed rounding of the analysis' closed forms: every constant is an upper (or lower) bound of
the exact real value, and exact whenever the exact value is a float.

The arithmetic is done on the exact rationals of the float inputs (:class:`fractions.Fraction`)
and rounded once, in the stated direction; square roots are rounded by checking the square.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def _q(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(float(x))


def up(q) -> float:
    """The smallest float >= the exact value ``q`` (a Fraction or a number)."""
    if not isinstance(q, Fraction) and not math.isfinite(float(q)):
        return float(q)
    q = _q(q)
    f = float(q)
    if Fraction(f) < q:
        f = float(np.nextafter(f, math.inf))
    return f


def down(q) -> float:
    """The largest float <= the exact value ``q``."""
    if not isinstance(q, Fraction) and not math.isfinite(float(q)):
        return float(q)
    q = _q(q)
    f = float(q)
    if Fraction(f) > q:
        f = float(np.nextafter(f, -math.inf))
    return f


def _finite(*xs) -> bool:
    return all(isinstance(x, Fraction) or math.isfinite(float(x)) for x in xs)


def mul_up(*xs) -> float:
    """Upper bound of the product of nonnegative ``xs``."""
    if not _finite(*xs):
        return math.inf if all(float(x) != 0 for x in xs) else 0.0
    q = Fraction(1)
    for x in xs:
        q *= _q(x)
    return up(q)


def add_up(*xs) -> float:
    if not _finite(*xs):
        return math.inf
    return up(sum((_q(x) for x in xs), Fraction(0)))


def sub_down(a, b) -> float:
    if not _finite(a, b):
        return -math.inf
    return down(_q(a) - _q(b))


def div_up(a, b) -> float:
    return up(_q(a) / _q(b))


def div_down(a, b) -> float:
    return down(_q(a) / _q(b))


def sqrt_up(q) -> float:
    """Upper bound of sqrt(q) for a nonnegative Fraction or float."""
    if isinstance(q, float) and not math.isfinite(q):
        return q
    q = _q(q)
    s = math.sqrt(float(q))
    while Fraction(s) * Fraction(s) < q:
        s = float(np.nextafter(s, math.inf))
    return s


def sqrt_down(q) -> float:
    """Lower bound of sqrt(q) for a nonnegative Fraction or float."""
    q = _q(q)
    s = math.sqrt(float(q))
    while s > 0 and Fraction(s) * Fraction(s) > q:
        s = float(np.nextafter(s, -math.inf))
    return s


def spectral_up(a: np.ndarray) -> float:
    """Upper bound of the spectral norm of a nonnegative matrix: exact (the largest entry) when every row
    and column has at most one nonzero (a scaled partial permutation), else the float64 SVD value
    inflated by its error bound, and never above the (exactly rounded) Frobenius norm."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0 or not np.any(a):
        return 0.0
    if not np.isfinite(a).all():
        return math.inf
    nz = a != 0
    if a.ndim == 2 and nz.sum(axis=0).max() <= 1 and nz.sum(axis=1).max() <= 1:
        return float(np.abs(a).max())
    sigma = float(np.linalg.norm(a, 2)) * (1 + 64 * max(a.shape) * 2.3e-16)
    return min(float(np.nextafter(sigma, math.inf)), norm_up(a))


def norm_up(values) -> float:
    """Upper bound of the Euclidean norm of an array (exact arithmetic on the floats)."""
    v = np.abs(np.asarray(values, dtype=np.float64)).reshape(-1)
    if not np.isfinite(v).all():
        return math.inf
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    if v.size > 4096:                      # large: float sum with a rigorous relative bound
        s = float(np.sum(v * v))
        return float(np.nextafter(math.sqrt(s * (1 + (v.size + 2) * 2.3e-16)), math.inf))
    return sqrt_up(sum((Fraction(float(x)) ** 2 for x in v), Fraction(0)))


def hypot_up(values) -> float:
    """Upper bound of sqrt(sum of squares) of nonnegative scalars."""
    return norm_up(np.asarray([float(x) for x in values]))
