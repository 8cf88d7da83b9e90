"""The libm margin of the interval rules (rounding.LIBM_ULPS) against values computed by mpmath at 40 digits:
point boxes of every libm-evaluated monotone rule, and cumlogsumexp over a long axis, whose rounding errors
accumulate along the scan (it moved 2 floats whatever the length before)."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from jax import lax

from bayesdp.analysis.rounding import LIBM_ULPS
from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure.bounds import Bound, Bounds

F32 = jnp.float32


def _x64():
    """JAX's float64 mode as a context (jax.enable_x64 from JAX 0.8; jax.experimental.enable_x64 before)."""
    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:
        from jax.experimental import enable_x64 as ctx
    return ctx(True)


def one(fn, lo, hi):
    """The bound of ``fn`` on ``[lo, hi]`` traced in float64 (the points go to exp(700) and 1e-300: a float32
    program's range would make them infinities or zeros, ``Bounds.checked``)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    with _x64():
        closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct(lo.shape, np.float64))
        return Run(Bounds(), {"m": 1}).program(closed, [Bound.box(lo, hi)])[0]


CASES = {  # name: (jax function, mpmath function, sampler of points in the domain)
    "exp": (lax.exp, mpmath.exp, lambda r: r.uniform(-700, 700, 300)),
    "log": (lax.log, mpmath.log, lambda r: np.exp(r.uniform(-700, 700, 300))),
    "log1p": (lax.log1p, mpmath.log1p, lambda r: np.expm1(r.uniform(-30, 30, 300))),
    "expm1": (lax.expm1, mpmath.expm1, lambda r: r.uniform(-40, 40, 300)),
    "tanh": (lax.tanh, mpmath.tanh, lambda r: r.uniform(-20, 20, 300)),
    "sinh": (lax.sinh, mpmath.sinh, lambda r: r.uniform(-700, 700, 300)),
    "asinh": (lax.asinh, mpmath.asinh, lambda r: np.sinh(r.uniform(-30, 30, 300))),
    "acosh": (lax.acosh, mpmath.acosh, lambda r: np.cosh(r.uniform(0, 30, 300))),
    "atanh": (lax.atanh, mpmath.atanh, lambda r: np.tanh(r.uniform(-15, 15, 300))),
    "atan": (lax.atan, mpmath.atan, lambda r: np.sinh(r.uniform(-30, 30, 300))),
    "asin": (lax.asin, mpmath.asin, lambda r: r.uniform(-1, 1, 300)),
    "acos": (lax.acos, mpmath.acos, lambda r: r.uniform(-1, 1, 300)),
    "cbrt": (lax.cbrt, lambda x: mpmath.sign(x) * mpmath.cbrt(abs(x)), lambda r: np.sinh(r.uniform(-700, 700, 300))),
    "logistic": (lax.logistic, lambda x: 1 / (1 + mpmath.exp(-x)), lambda r: r.uniform(-700, 700, 300)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_point_boxes_hold_the_exact_value(name):
    fn, exact, points = CASES[name]
    xs = points(np.random.default_rng(sum(map(ord, name))))
    out = one(fn, xs, xs)
    with mpmath.workdps(40):
        for x, lo, hi in zip(xs, out.lo, out.hi):
            v = exact(mpmath.mpf(float(x)))
            assert mpmath.mpf(float(lo)) <= v <= mpmath.mpf(float(hi)), (name, x, lo, hi)
            # and the box is no wider than the margin says (a few floats more for the clip to the image)
            if np.isfinite(lo) and np.isfinite(hi) and v != 0:
                assert (mpmath.mpf(float(hi)) - mpmath.mpf(float(lo))) / abs(v) < (2 * LIBM_ULPS + 8) * 2.0 ** -52


def test_cumlogsumexp_over_a_long_axis_holds_the_exact_scan():
    rng = np.random.default_rng(3)
    n = 200
    a = rng.uniform(-30, 30, n)
    b = a + rng.uniform(0, 2, n)
    out = one(lambda x: lax.cumlogsumexp(x, 0), a, b)
    with mpmath.workdps(40):
        acc_lo = acc_hi = mpmath.mpf("-inf")
        for i in range(n):
            acc_lo = mpmath.log(mpmath.exp(acc_lo) + mpmath.exp(mpmath.mpf(float(a[i]))))
            acc_hi = mpmath.log(mpmath.exp(acc_hi) + mpmath.exp(mpmath.mpf(float(b[i]))))
            assert mpmath.mpf(float(out.lo[i])) <= acc_lo and acc_hi <= mpmath.mpf(float(out.hi[i])), i


def test_sqrt_and_norm_of_extreme_exact_values():
    """sqrt_up / sqrt_down of Fractions beyond the float range's squares: float(q) underflows to 0 below 1e-308
    (the old start stepped one float at a time towards 1e-300: a fuzz helper's hang) and overflows above 1e308.
    Each result is the closest float on its side, checked in exact arithmetic; norm_up([1e-300]) is 1e-300 and
    norm_up([1e200, 1e200]) is sqrt(2) 1e200 rounded up."""
    import math
    import random
    from fractions import Fraction as F

    from bayesdp.analysis.rounding import norm_up, sqrt_down, sqrt_up

    assert norm_up([1e-300]) == 1e-300
    assert norm_up([1e200, 1e200]) == sqrt_up(2 * F(1e200) ** 2) and norm_up([1e200, 1e200]) > 1.414e200
    assert sqrt_up(F(10) ** 700) == math.inf and sqrt_down(F(10) ** 700) == float(np.finfo(np.float64).max)
    nxt = lambda x, d: float(np.nextafter(x, d))
    rng = random.Random(0)
    for _ in range(500):
        q = F(rng.randint(1, 10 ** 20), rng.randint(1, 10 ** 20)) * F(10) ** rng.randint(-640, 600)
        u, d = sqrt_up(q), sqrt_down(q)
        assert F(u) ** 2 >= q and (u == 0 or F(nxt(u, -math.inf)) ** 2 < q), q
        assert F(d) ** 2 <= q and F(nxt(d, math.inf)) ** 2 > q, q
