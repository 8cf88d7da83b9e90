"""The runtime's float rounding: how far each primitive's float result may lie from its real value.

The bound rules (:mod:`.bounds`) compute the real-arithmetic image of their operands' boxes.  The program the samplers
run computes in its own float type (float32 by default), and each operation rounds.  :meth:`.Bounds.checked` widens
every float output by the error this module states for its primitive (docs/analysis.md, "Float rounding"):

* ``EXACT``: the float result is the real result of the float operands (moves, selects, comparisons, ``neg``,
  ``abs``, ``max``, ``floor``, ``rem`` ...): nothing is added;
* ``CORRECTLY_ROUNDED`` (IEEE 754's basic operations): round to nearest is monotone, so ``[RN(lo), RN(hi)]`` holds
  every result (a point stays a point), and a linear form's constant moves by the unit roundoff times the largest
  magnitude. XLA's rewrites narrow this (``bounds._float_error``): a chain of additions may be regrouped (Higham's
  ``gamma_{n-1}`` below), a chain of products and quotients too (``gamma_{2n}`` relative: ``y / 3`` is compiled as
  ``y * RN(1/3)``), and a product may be contracted into a fused multiply-add (its box keeps the exact value);
* ``ULPS`` (XLA's elementwise functions, not correctly rounded): ``k`` floats of the result (relative), or of
  ``max(|result|, 1)`` for the functions in ``ABSOLUTE`` (their error near a root is absolute); ``k`` is about four
  times the largest error measured on XLA's CPU backend over 800,000 float32 arguments (docs/analysis.md);
* sums (``reduce_sum``, ``dot_general``, ``cumsum``): ``gamma_n sum |terms|`` with ``gamma_n = n u / (1 - n u)``
  (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 3.1, any order of summation);
* ``integer_pow`` ``x^k``: ``gamma_{|k|+1}`` relative (repeated squaring and one division);
* ``IMAGE``: a closed interval every float result lies in (``tanh`` in [-1, 1] also in float32): the widened box is
  clipped to it, so ``1 - tanh(x)`` stays >= 0 as it is in float32.

Nothing here depends on matmul precision: the samplers multiply at ``precision=HIGHEST`` (true float32 products and
sums). This is a model of XLA's behaviour, measured and attacked (tests/analysis/test_adversarial_rounding.py and
test_adversarial_float_mode.py), not a proof about it: docs/analysis.md, "Float rounding", lists its assumptions.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

__all__ = ["ARITHMETICS", "ABSOLUTE", "arithmetic", "modelled", "CORRECTLY_ROUNDED", "EXACT", "IMAGE", "SUMS", "ULPS", "gamma", "grid_out", "nearest",
           "unit_roundoff"]

INF = np.inf

#: the arithmetic the bound rules assume: ``"real"`` (the default: every constant bounds the program in real
#: arithmetic) or ``"float"`` (the program's own float rounding modelled, as this module states)
ARITHMETICS = ("real", "float")
_ARITHMETIC: ContextVar[str] = ContextVar("bayesdp_arithmetic", default="real")


@contextmanager
def arithmetic(kind: str):
    """Bound the programs interpreted inside in arithmetic ``kind`` (one of :data:`ARITHMETICS`).

    Args:
        kind: ``"real"`` or ``"float"``.

    Yields:
        None.

    Examples:
        >>> from bayesdp.analysis.structure import floats
        >>> with floats.arithmetic("float"):
        ...     floats.modelled()
        True
        >>> floats.modelled()
        False
    """
    if kind not in ARITHMETICS:
        raise ValueError(f"arithmetic={kind!r} is not one of {', '.join(ARITHMETICS)}")
    token = _ARITHMETIC.set(kind)
    try:
        yield
    finally:
        _ARITHMETIC.reset(token)


def modelled() -> bool:
    """Whether the float rounding of the program is modelled (inside ``arithmetic("float")``).

    Returns:
        True in float arithmetic.

    Examples:
        >>> from bayesdp.analysis.structure.floats import modelled
        >>> modelled()                      # the default arithmetic is real
        False
    """
    return _ARITHMETIC.get() == "float"

#: primitives whose float output is a real function of the float operands computed exactly (moved, chosen,
#: compared, or an exact operation such as ``neg``, ``abs``, ``max``, ``floor`` or ``rem``, IEEE's fmod); a call
#: with a custom derivative is its body's equations, each checked on its own
EXACT = frozenset({
    "abs", "neg", "sign", "max", "min", "clamp", "floor", "ceil", "round", "nextafter", "rem", "select_n",
    "copy", "optimization_barrier", "device_put", "sharding_constraint", "mesh_cast", "reshard", "stop_gradient",
    "real", "broadcast_in_dim", "transpose", "squeeze", "rev", "slice", "reshape", "concatenate", "stack", "unstack",
    "split", "pad", "iota", "dim_as_value", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin",
    "cummax", "cummin", "sort", "top_k", "gather", "dynamic_slice", "dynamic_update_slice", "scatter",
    "is_finite", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "xor", "custom_jvp_call",
    "reduce_precision",        # its rule rounds to the narrower mantissa itself and keeps no linear form
    "random_seed", "random_bits", "random_split", "random_fold_in", "random_wrap", "random_unwrap", "threefry2x32",
    "rng_uniform", "rng_bit_generator",
})

#: IEEE 754's correctly rounded operations (``square`` is one product, ``convert_element_type`` one rounding)
CORRECTLY_ROUNDED = frozenset({"add", "add_any", "sub", "mul", "div", "sqrt", "square", "convert_element_type"})

#: floats of error of XLA's elementwise functions, relative to the result (measured largest error on XLA's CPU
#: backend in float32, then the allowance): exp 1.1 -> 4, exp2 67 -> 256, log 1.1 -> 4, log1p 2.4 -> 8,
#: expm1 5.7 -> 24, tanh 3.9 -> 16, logistic 2.2 -> 8, rsqrt 1.0 -> 4, cbrt 0.94 -> 4, atan 5.3 -> 24,
#: asinh 2.8 -> 12, sinh 24 -> 96, asin 2.0 -> 8, acos 1.8 -> 8, atanh 2.4 -> 12, acosh 3.0 -> 12,
#: erf 5.0 -> 24, erfc 63 -> 256, erf_inv 17 (of max(1, |x|)) -> 64, digamma 8.2 (of max(1, |x|)) -> 64,
#: sin and cos 0.56 -> 4 (their boxes are [-1, 1] whatever the argument), atan2 (box [-pi, pi]) 8,
#: pow 183 (at 1.3^300; it grows with |y log x| <= 88.7) -> 512, one_minus_square (1 - u^2: two roundings) 2,
#: cumlogsumexp and cumprod: per step, see :func:`op_error`
ULPS = {
    "exp": 4, "exp2": 256, "log": 4, "log1p": 8, "expm1": 24, "tanh": 16, "logistic": 8, "rsqrt": 4, "cbrt": 4,
    "atan": 24, "asinh": 12, "sinh": 96, "asin": 8, "acos": 8, "atanh": 12, "acosh": 12, "erf": 24, "erfc": 256,
    "erf_inv": 64, "digamma": 64, "sin": 4, "cos": 4, "atan2": 8, "pow": 512,
}

#: functions whose error is relative to ``max(|result|, 1)`` (absolute near a root: digamma at 1.4616)
ABSOLUTE = frozenset({"erf_inv", "digamma"})

#: summations: ``gamma_n`` times the sum of the terms' magnitudes
SUMS = frozenset({"reduce_sum", "dot_general", "cumsum", "scatter-add"})

#: closed intervals that every float result of the function lies in (checked at the extremes of float32 on XLA's
#: CPU backend; erf is not here: XLA's float32 erf reaches 1.0000001)
IMAGE = {
    "exp": (0.0, INF), "exp2": (0.0, INF), "tanh": (-1.0, 1.0), "logistic": (0.0, 1.0), "erfc": (0.0, 2.0),
    "expm1": (-1.0, INF), "sqrt": (0.0, INF), "rsqrt": (0.0, INF), "sin": (-1.0, 1.0), "cos": (-1.0, 1.0),
    "square": (0.0, INF),
}

#: the float formats with their (precision p in bits, largest exponent) where NumPy does not know them
_BITS = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}


def unit_roundoff(dt) -> float | None:
    """The unit roundoff ``u = 2^-p`` of float type ``dt`` (p its precision in bits), or None when it is not an IEEE
    binary float this module knows (float8 formats: their conversions round, see ``_rounding_convert``).

    Args:
        dt: a NumPy (or ml_dtypes) dtype.

    Returns:
        ``u``, e.g. ``2^-24`` for float32.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.structure.floats import unit_roundoff
        >>> unit_roundoff(np.float32) == 2.0 ** -24, unit_roundoff(np.int32)
        (True, None)
    """
    p = _BITS.get(np.dtype(dt).name)
    return None if p is None else 2.0 ** -p


def gamma(n, u: float):
    """Higham's ``gamma_n = n u / (1 - n u)`` (elementwise; inf when ``n u >= 1``).

    Args:
        n: the number of roundings (array-like).
        u: the unit roundoff.

    Returns:
        ``gamma_n``, rounded up.

    Examples:
        >>> from bayesdp.analysis.structure.floats import gamma
        >>> u = 2.0 ** -24
        >>> bool(gamma(2, u) >= 2 * u / (1 - 2 * u)), float(gamma(2 ** 24, u))
        (True, inf)
    """
    n = np.asarray(n, np.float64)
    with np.errstate(divide="ignore"):
        g = np.where(n * u < 1, n * u / np.maximum(1 - n * u, 0.0), INF)
    return np.nextafter(g, INF)


def grid_out(lo, hi, dt):
    """``[lo, hi]`` rounded outward to the floats of ``dt``: the largest float <= lo and the smallest >= hi (an end
    that is a float of ``dt`` stays), computed exactly in float64 (scaling by powers of two).

    Args:
        lo: lower ends (float64 array; infinities pass through).
        hi: upper ends.
        dt: the float type (its precision in :data:`_BITS`).

    Returns:
        ``(lo, hi)`` on the grid of ``dt``.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.structure.floats import grid_out
        >>> lo, hi = grid_out(np.array([1 / 3]), np.array([1 / 3]), np.float32)
        >>> bool(lo[0] == np.nextafter(np.float32(1 / 3), np.float32(0)) and hi[0] == np.float32(1 / 3)), \\
        ...     grid_out(np.array([0.5]), np.array([2.0]), np.float32)
        (True, (array([0.5]), array([2.])))
    """
    p = _BITS[np.dtype(dt).name]
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    return _to_grid(lo, p, np.floor), _to_grid(hi, p, np.ceil)


def nearest(x, dt):
    """``x`` rounded to the nearest float of ``dt`` (ties to even), as IEEE 754 rounds a correctly rounded
    operation's exact result (float64 for float32: NumPy's conversion rounds to nearest, and a float64 end that is
    itself rounded outward stays on its side unless it rounds onto the float past it, which monotonicity allows).

    Args:
        x: float64 array (infinities pass through; past the largest float of ``dt`` gives an infinity).
        dt: the float type.

    Returns:
        The rounded values, as float64.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.structure.floats import nearest
        >>> nearest(np.array([1 + 2.0 ** -24, 1 / 3]), np.float32).tolist() == [1.0, float(np.float32(1 / 3))]
        True
    """
    x = np.asarray(x, np.float64)
    p = _BITS[np.dtype(dt).name]
    if p == 53:
        return x
    fin = np.isfinite(x) & (x != 0)
    xs = np.where(fin, x, 1.0)
    m, e = np.frexp(xs)
    q = np.ldexp(m, p)                     # the float's mantissa is q rounded to an integer (half to even)
    return np.where(fin, np.ldexp(np.rint(q), e - p), x)


def _to_grid(x, p: int, rnd):
    fin = np.isfinite(x) & (x != 0)
    xs = np.where(fin, x, 1.0)
    m, e = np.frexp(xs)                     # x = m 2^e, 1/2 <= |m| < 1: p bits of m are the float's mantissa
    q = rnd(np.ldexp(m, p))                 # exact: m 2^p has at most 53 bits, floor and ceil of it are exact
    return np.where(fin, np.ldexp(q, e - p), x)
