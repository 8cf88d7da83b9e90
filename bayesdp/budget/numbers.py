"""Exact decimals for budgets and charges, and the doubles that noise is calibrated to.

A user's float epsilon is charged as its shortest decimal (``0.1 -> 0.1``); the noise of a release is
calibrated to the largest double not above the charge (:func:`noise_epsilon`), so that the noise never costs
more than the ledger records.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any

from ..errors import BudgetError
import functools
from fractions import Fraction

__all__ = ["to_decimal", "noise_epsilon", "noise_delta", "decimal_at_least", "float_at_most", "float_at_least",
           "show", "EXACT", "exact"]

_UP = decimal.Context(prec=17, rounding=decimal.ROUND_CEILING)
#: exact decimal arithmetic: any rounding raises (budgets and charges have exponents within +-100000)
EXACT = decimal.Context(prec=300000, Emin=-999999, Emax=999999,
                        traps=[decimal.Inexact, decimal.Rounded, decimal.InvalidOperation, decimal.DivisionByZero,
                               decimal.Overflow])


def exact(fn):
    """Run ``fn`` under :data:`EXACT` (sums and differences of charges never round; a rounding raises).

    Args:
        fn: the function.

    Returns:
        The wrapped function.

    Examples:
        >>> exact(lambda a, b: a + b)(Decimal("0.3"), Decimal("5E-324")) > Decimal("0.3")
        True
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with decimal.localcontext(EXACT):
            return fn(*args, **kwargs)
    return wrapper


def to_decimal(value: Any, name: str = "epsilon") -> Decimal:
    """The decimal a user means by ``value``: a float's shortest round-trip decimal (``0.1 -> 0.1``),
    an int, a decimal string or :class:`~decimal.Decimal` as written.  Refuses NaN, inf and bools.

    Args:
        value: the number.
        name: its name in a refusal.

    Returns:
        The exact decimal.

    Raises:
        BudgetError: not a finite number.

    Examples:
        >>> to_decimal(0.1), to_decimal("1e-5", "delta")
        (Decimal('0.1'), Decimal('0.00001'))
        >>> to_decimal(float("nan"))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: epsilon = nan must be finite; pass a finite decimal number
    """
    if isinstance(value, bool):
        raise BudgetError(f"{name} = {value!r} is not a number; pass a decimal number")
    if isinstance(value, Decimal):
        d = value
    elif isinstance(value, int):
        d = Decimal(value)
    elif isinstance(value, float):
        d = Decimal(repr(float(value))) if math.isfinite(value) else Decimal("NaN")
    elif isinstance(value, str):
        try:
            d = Decimal(value.strip())
        except decimal.InvalidOperation:
            raise BudgetError(f"{name} = {value!r} is not a decimal number; pass e.g. 0.1") from None
    else:
        try:
            d = Decimal(repr(float(value)))
        except (TypeError, ValueError, OverflowError):
            raise BudgetError(f"{name} = {value!r} is not a number; pass a decimal number") from None
    if not d.is_finite():
        raise BudgetError(f"{name} = {value!r} must be finite; pass a finite decimal number")
    if d != 0 and abs(d.adjusted()) > 100000:
        raise BudgetError(f"{name} = {value!r} is out of range; pass a number between 1e-100000 and 1e100000")
    return d


def noise_epsilon(epsilon: Any) -> float:
    """The epsilon to calibrate noise to for a release charged ``epsilon``: the largest double not above its
    decimal (``noise_epsilon(0.1) = 0.09999999999999999167``).

    Args:
        epsilon: the charged epsilon (a float is taken at its shortest decimal).

    Returns:
        The largest double not above the charge.

    Raises:
        BudgetError: not a finite number, or above the largest double.

    Examples:
        >>> noise_epsilon(0.1), noise_epsilon("0.25")
        (0.09999999999999999, 0.25)
    """
    return float_at_most(to_decimal(epsilon))


def noise_delta(delta: Any) -> float:
    """The delta to calibrate Gaussian noise to for a release charged ``delta``: the largest double not above.

    Args:
        delta: the charged delta.

    Returns:
        The largest double not above the charge.

    Raises:
        BudgetError: not a finite number.

    Examples:
        >>> noise_delta(1e-5), noise_delta(0)
        (9.999999999999999e-06, 0.0)
    """
    return float_at_most(to_decimal(delta, "delta"))


@exact
def show(d: Decimal) -> str:
    """A decimal as written by a person: ``1.0 -> 1``, ``1E-5 -> 0.00001``.

    Args:
        d: the decimal.

    Returns:
        Its plain string.

    Examples:
        >>> show(Decimal("1.0")), show(Decimal("1E-5"))
        ('1', '0.00001')
    """
    if not d.is_finite():
        return str(d)
    if d == 0:
        return "0"
    d = d.normalize()
    return format(d, "f") if -30 < d.adjusted() < 30 else str(d)


def decimal_at_least(x: float | Fraction) -> Decimal:
    """The shortest decimal of the double ``x`` if it is >= ``x`` exactly, else the smallest
    17-significant-digit decimal above it (for epsilons and deltas computed in floating point).

    Args:
        x: a double (or an exact fraction).

    Returns:
        A decimal ``>= x`` exactly.

    Examples:
        The double 0.1 is 0.1000000000000000055..., above the decimal 0.1:

        >>> decimal_at_least(0.1), decimal_at_least(0.5)
        (Decimal('0.10000000000000001'), Decimal('0.5'))
    """
    if isinstance(x, Fraction):
        d = _UP.divide(Decimal(x.numerator), Decimal(x.denominator))
        return d
    d = Decimal(repr(float(x)))
    exact = Decimal(float(x))
    return d if d >= exact else _UP.plus(exact)


def _float(d: Decimal | Fraction) -> float:
    """``float(d)``, infinite beyond the float range (``float`` of such a Fraction raises OverflowError: the
    Laplace event of sensitivity 1.8e308 at epsilon 0.5 did)."""
    try:
        return float(d)
    except OverflowError:
        return math.inf if d > 0 else -math.inf


def float_at_most(d: Decimal | Fraction) -> float:
    """The largest double <= ``d``.

    Args:
        d: an exact decimal or fraction (finite, at most the largest double).

    Returns:
        The largest double not above ``d``.

    Raises:
        BudgetError: ``d`` is above the largest double.

    Examples:
        >>> from decimal import Decimal
        >>> float_at_most(Decimal("0.1")), float_at_most(Decimal("0.5"))
        (0.09999999999999999, 0.5)
    """
    f = _float(d)
    if math.isinf(f):
        if f > 0:
            raise BudgetError(f"{d} exceeds the largest double; pass at most 1.7976931348623157e308")
        return -math.inf
    if Fraction(f) > Fraction(d):
        f = math.nextafter(f, -math.inf)
    return f


def float_at_least(d: Decimal | Fraction) -> float:
    """The smallest double >= ``d`` (``inf`` above the largest double).

    Args:
        d: an exact decimal or fraction.

    Returns:
        The smallest double not below ``d``.

    Examples:
        >>> from decimal import Decimal
        >>> float_at_least(Decimal("0.1"))
        0.1
    """
    f = _float(d)
    if math.isfinite(f) and Fraction(f) < Fraction(d):
        f = math.nextafter(f, math.inf)
    return f
