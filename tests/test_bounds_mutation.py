"""Exact endpoints of the bound interpreter's rules (bayesdp/analysis/structure/bounds.py), for mutation testing
(issue 25, docs/mutation.md).

tests/analysis/test_structure_bounds.py checks that every rule's box CONTAINS the values on random boxes; that
cannot see a rule that is looser than it claims, nor a linear form or a norm fact that is dropped.  Here every
rule is evaluated on small boxes whose image is known by hand: the endpoints are asserted exactly, the outward
rounding as the documented number of ``nextafter`` steps (``dn``/``up`` below), the linear form's coefficients
as the derivative of the (linear) program, and soundness against exact rationals (``fractions.Fraction``).

Every test runs with numpy raising on division by zero, overflow and invalid operations: the interval arithmetic handles inf and NaN itself (the
``errstate`` guards inside bounds.py), so no floating-point error may escape it whatever the caller's numpy
error state.
"""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export, lax

from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import bounds as B
from bayesdp.analysis.structure.bounds import Bound, Bounds, Lin, data_input

F32 = jnp.float32
I32 = jnp.int32
BOOL = jnp.bool_
INF = np.inf
U = 2.0 ** -53
ETA = 2.0 ** -1074      # the smallest subnormal


from _ulps import _raise_on_fp_errors, dn, up  # noqa: F401 (the autouse fixture applies here)


def interp(fn, ins, dtypes=None, m=1, shapes=None):
    """The bounds of ``fn``'s outputs for input bounds ``ins`` (traced at float32 unless ``dtypes``)."""
    dtypes = dtypes or [F32] * len(ins)
    shapes = shapes or [b.shape for b in ins]
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in zip(shapes, dtypes)])
    return Run(Bounds(), {"m": m}).program(closed, list(ins))


def one(fn, *ins, **kw):
    outs = interp(fn, ins, **kw)
    return outs[0]


def box(lo, hi):
    return Bound.box(np.asarray(lo, np.float64), np.asarray(hi, np.float64))


def eq(out, lo, hi):
    np.testing.assert_array_equal(out.lo, np.asarray(lo, np.float64))
    np.testing.assert_array_equal(out.hi, np.asarray(hi, np.float64))


# ---------------------------------------------------------------------------
# outward-rounded interval arithmetic


def test_two_sum_and_two_prod_are_error_free():
    # a + b = s + err and a * b = p + err exactly (Knuth, Dekker with Veltkamp's 2^27 + 1 split)
    rng = np.random.default_rng(25)
    a = rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)
    b = rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)
    s, es = B._two_sum(a, b)
    p, ep = B._two_prod(a, b)
    for i in range(400):
        fa, fb = Fraction(float(a[i])), Fraction(float(b[i]))
        assert Fraction(float(s[i])) + Fraction(float(es[i])) == fa + fb
        assert Fraction(float(p[i])) + Fraction(float(ep[i])) == fa * fb
    hi, lo = B._split(np.float64(1.0 + 2.0 ** -40))
    assert hi + lo == 1.0 + 2.0 ** -40 and hi == 1.0 and lo == 2.0 ** -40


def test_two_sum_and_two_prod_of_infinities_raise_nothing():
    s, e = B._two_sum(np.array([INF, 1e308]), np.array([-INF, 1e308]))
    assert np.isnan(s[0]) and s[1] == INF
    p, e = B._two_prod(np.array([INF, 1e200]), np.array([0.0, 1e200]))
    assert np.isnan(p[0]) and p[1] == INF
    assert B._lo(np.array([1.0]), np.array([np.nan]))[0] == dn(1.0)
    assert B._hi(np.array([1.0]), np.array([np.nan]))[0] == up(1.0)


def test_iv_add_exact_directed_and_nan_ends():
    assert B.iv_add(np.float64(1), np.float64(1), np.float64(2), np.float64(2)) == (3.0, 3.0)
    # 0.1 + 0.2 rounds up to 0.30000000000000004: the lower end is the float below it, the upper end itself
    lo, hi = B.iv_add(np.float64(0.1), np.float64(0.1), np.float64(0.2), np.float64(0.2))
    assert hi == 0.1 + 0.2 and lo == dn(0.1 + 0.2)
    assert Fraction(float(lo)) < Fraction(0.1) + Fraction(0.2) < Fraction(float(hi))
    # -inf + inf is NaN: that end knows nothing (unbounded), it is not a number nor the other infinity
    lo, hi = B.iv_add(np.array([-INF, 0.0]), np.array([1.0, INF]), np.array([INF, 0.0]), np.array([2.0, -INF]))
    assert lo.tolist() == [-INF, 0.0] and hi.tolist() == [3.0, INF]


def test_iv_neg_and_hull():
    assert B.iv_neg(np.float64(-1.0), np.float64(2.0)) == (-2.0, 1.0)
    lo, hi = B.iv_hull(np.array([0.0, 5.0]), np.array([1.0, 6.0]), np.array([-1.0, 2.0]), np.array([0.5, 3.0]))
    assert lo.tolist() == [-1.0, 2.0] and hi.tolist() == [1.0, 6.0]


def test_iv_mul_zero_times_infinity_is_zero():
    z = np.array([0.0])
    assert B.iv_mul(z, z, np.array([-INF]), np.array([INF])) == (0.0, 0.0)
    lo, hi = B.iv_mul(np.array([0.0]), np.array([1.0]), np.array([1.0]), np.array([INF]))
    assert (lo[0], hi[0]) == (0.0, INF)
    lo, hi = B.iv_mul(np.array([-2.0]), np.array([3.0]), np.array([-5.0]), np.array([4.0]))
    assert (lo[0], hi[0]) == (-15.0, 12.0)
    # 0.1 * 3 rounds up (0.30000000000000004): lower end one float below
    lo, hi = B.iv_mul(np.array([0.1]), np.array([0.1]), np.array([3.0]), np.array([3.0]))
    assert hi[0] == 0.1 * 3 and lo[0] == dn(0.1 * 3)


def test_iv_recip_ends_and_boxes_containing_zero():
    lo, hi = B.iv_recip(np.array([2.0, -4.0, 0.5]), np.array([4.0, -2.0, 0.8]))
    # 1/x is decreasing: [1/hi, 1/lo], each rounded one float outward
    assert lo.tolist() == [dn(0.25), dn(-0.5), dn(1 / 0.8)]
    assert hi.tolist() == [up(0.5), up(-0.25), up(2.0)]
    for l_, h_ in ((0.0, 1.0), (-1.0, 0.0), (-1.0, 0.5), (-1.0, 1.0), (-INF, INF)):
        lo, hi = B.iv_recip(np.array([l_]), np.array([h_]))
        assert (lo[0], hi[0]) == (-INF, INF), (l_, h_)


def test_mid_rad_and_pow2():
    mid, rad = B._mid_rad(np.array([1.0, 2.0, -3.0]), np.array([3.0, 2.0, -1.0]))
    assert mid.tolist() == [2.0, 2.0, -2.0] and rad.tolist() == [up(1.0), 0.0, up(1.0)]
    assert B._pow2(np.array([0.0, 0.5, -4.0, 1024.0]))
    assert not B._pow2(np.array([0.5, 3.0]))


DN_MATVEC = (((1,), (0,)), ((), ()))


def test_iv_dot_exact_and_rounded_ends():
    # one term, a power of two times a point: exact, no rounding
    lo, hi = B.iv_dot(np.array([[0.5]]), np.array([[0.5]]), np.array([3.0]), np.array([3.0]), DN_MATVEC)
    assert (lo[0], hi[0]) == (1.5, 1.5)
    # one term, a product that is not exact (0.1 * 3): err = (1 + 4) u |0.1 * 3| (1 + 8u)
    lo, hi = B.iv_dot(np.array([[0.1]]), np.array([[0.1]]), np.array([3.0]), np.array([3.0]), DN_MATVEC)
    mag = 0.1 * 3.0
    err = 5 * U * mag * (1 + 8 * U) + ETA
    assert lo[0] == dn(mag - err) and hi[0] == up(mag + err)
    # three point terms 1*1 + 1*2 + 1*3 = 6: err = (3 + 4) u 6 (1 + 8u), the ends rounded one more float out
    a = np.ones((1, 3))
    b = np.array([1.0, 2.0, 3.0])
    lo, hi = B.iv_dot(a, a, b, b, DN_MATVEC)
    err = 7 * U * 6.0 * (1 + 8 * U) + 3 * ETA
    assert lo[0] == dn(6.0 - err) and hi[0] == up(6.0 + err)
    assert 6 - Fraction(float(lo[0])) >= 7 * Fraction(U) * 6 and Fraction(float(hi[0])) - 6 >= 7 * Fraction(U) * 6
    lo, hi = B.iv_dot(-a, -a, b, b, DN_MATVEC)
    assert lo[0] == dn(-6.0 - err) and hi[0] == up(-6.0 + err)
    # a radius: [1, 3] . [2, 2] = [2, 6] (mid 4, radius 2 widened by (1 + (k + 4) u), then err)
    lo, hi = B.iv_dot(np.array([[1.0]]), np.array([[3.0]]), np.array([2.0]), np.array([2.0]), DN_MATVEC)
    rad = up(up(1.0) * 2.0 * (1 + 5 * U)) + 3 * ETA
    err = 5 * U * 6.0 * (1 + 8 * U) + ETA
    assert lo[0] == dn(4.0 - rad - err) and hi[0] == min(up(4.0 + rad + err), up(6.0 + err))
    assert lo[0] <= 2.0 and hi[0] >= 6.0
    # both operands with radius: [1, 3] . [1, 3] = [1, 9]
    lo, hi = B.iv_dot(np.array([[1.0]]), np.array([[3.0]]), np.array([1.0]), np.array([3.0]), DN_MATVEC)
    assert lo[0] <= 1.0 and hi[0] >= 9.0 and hi[0] == up(9.0 + 5 * U * 9.0 * (1 + 8 * U))
    # a zero factor in every term: exactly 0
    lo, hi = B.iv_dot(np.array([[0.0, 0.0]]), np.array([[0.0, 0.0]]), np.array([-5.0, 7.0]), np.array([5.0, 9.0]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (0.0, 0.0)


def test_iv_dot_counts_only_nonzero_terms():
    # k counts the terms whose both factors can be nonzero: [1, 0.1] . [0.1, 0] has k = 1; 0.1 = 0.1 * 1 is exact
    # but the operands are no power of two, so err = 5 u 0.1 (1 + 8u)
    a = np.array([[1.0, 0.1]])
    b = np.array([0.1, 0.0])
    lo, hi = B.iv_dot(a, a, b, b, DN_MATVEC)
    err = 5 * U * 0.1 * (1 + 8 * U) + ETA
    assert lo[0] == dn(0.1 - err) and hi[0] == up(0.1 + err)
    # with a factor in (0, 1) as a count: 0.5 must count as nonzero (k = 2: err = 6 u mag)
    a = np.array([[0.5, 0.5]])
    b = np.array([0.5, 0.5])
    lo, hi = B.iv_dot(a, a, b, b, DN_MATVEC)
    err = 6 * U * 0.5 * (1 + 8 * U) + 2 * ETA
    assert lo[0] == dn(0.5 - err) and hi[0] == up(0.5 + err)


def test_iv_dot_point_operands_only_one_of_which_is_a_power_of_two():
    # exact needs k <= 1 and one operand a point of powers of two: [0.5] . [0.1] is exact (k = 1)
    lo, hi = B.iv_dot(np.array([[0.5]]), np.array([[0.5]]), np.array([0.1]), np.array([0.1]), DN_MATVEC)
    assert (lo[0], hi[0]) == (0.05, 0.05)
    lo, hi = B.iv_dot(np.array([[0.1]]), np.array([[0.1]]), np.array([0.5]), np.array([0.5]), DN_MATVEC)
    assert (lo[0], hi[0]) == (0.05, 0.05)
    # a box operand of powers of two is not exact (it has a radius)
    lo, hi = B.iv_dot(np.array([[0.5]]), np.array([[1.0]]), np.array([0.1]), np.array([0.1]), DN_MATVEC)
    assert lo[0] < 0.05 and hi[0] > 0.1
    # 0.1 . 0.1: neither is a power of two; k = 1 but inexact
    lo, hi = B.iv_dot(np.array([[0.1]]), np.array([[0.1]]), np.array([0.1]), np.array([0.1]), DN_MATVEC)
    assert lo[0] < 0.1 * 0.1 < hi[0]


def test_iv_dot_with_infinite_ends():
    # [-inf, inf] * 0 + 1 * 2 = 2: the inf entry meets a zero, so only the magnitude 2 counts (no midpoint form)
    lo, hi = B.iv_dot(np.array([[-INF, 1.0]]), np.array([[INF, 1.0]]), np.array([0.0, 2.0]), np.array([0.0, 2.0]),
                      DN_MATVEC)
    magu = up(2.0 + 5 * U * 2.0 * (1 + 8 * U))          # sum |a_i| |b_i| = 2 (k = 1), bounded above
    assert (lo[0], hi[0]) == (-magu, magu)
    lo, hi = B.iv_dot(np.array([[0.0, 2.0]]), np.array([[0.0, 2.0]]), np.array([-INF, 1.0]), np.array([INF, 1.0]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (-magu, magu)
    # one infinite entry meeting a nonzero one: unbounded
    lo, hi = B.iv_dot(np.array([[1.0, 1.0]]), np.array([[INF, 1.0]]), np.array([1.0, 1.0]), np.array([1.0, 1.0]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (-INF, INF)
    lo, hi = B.iv_dot(np.array([[1.0, 1.0]]), np.array([[1.0, 1.0]]), np.array([1.0, -INF]), np.array([1.0, 1.0]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (-INF, INF)
    # infinite ends whose every term has a zero factor: exactly 0
    lo, hi = B.iv_dot(np.array([[-INF]]), np.array([[INF]]), np.array([0.0]), np.array([0.0]), DN_MATVEC)
    assert (lo[0], hi[0]) == (0.0, 0.0)


def test_iv_dot_batch_dimensions_against_einsum():
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (2, 3, 4)).astype(float)
    b = rng.integers(-4, 5, (2, 4, 5)).astype(float)
    dn_ = (((2,), (1,)), ((0,), (0,)))
    lo, hi = B.iv_dot(a, a, b, b, dn_)
    exact = np.einsum("bij,bjk->bik", a, b)                  # small integers: exact
    assert lo.shape == (2, 3, 5)
    assert np.all(lo <= exact) and np.all(hi >= exact)
    assert np.all(hi - lo <= 1e-12 * np.maximum(1, np.abs(exact)))
    # contraction on the lhs's first axis, the rhs's last: a.T @ b
    a2 = rng.integers(-4, 5, (3, 2)).astype(float)
    b2 = rng.integers(-4, 5, (4, 3)).astype(float)
    lo, hi = B.iv_dot(a2, a2, b2, b2, (((0,), (1,)), ((), ())))
    exact = a2.T @ b2.T
    assert lo.shape == (2, 4) and np.all(lo <= exact) and np.all(hi >= exact)
    assert np.all(hi - lo <= 1e-12 * np.maximum(1, np.abs(exact)))
    assert B._contraction_length((3, 2), (((0,), (1,)), ((), ()))) == 3
    assert B._contraction_length((2, 3, 4), dn_) == 4
    assert B._contraction_length((2, 3), (((), ()), ((), ()))) == 1


def test_absdot_treats_zero_times_infinity_as_zero():
    dn_ = DN_MATVEC
    r = B._absdot(np.array([[INF, 1.0]]), np.array([0.0, 2.0]), dn_)
    assert r.tolist() == [2.0]
    r = B._absdot(np.array([[0.0, 1.0]]), np.array([INF, 2.0]), dn_)
    assert r.tolist() == [2.0]
    r = B._absdot(np.array([[INF, 1.0]]), np.array([1.0, 2.0]), dn_)
    assert r.tolist() == [INF]
    r = B._absdot(np.array([[0.5, 1.0]]), np.array([INF, 2.0]), dn_)
    assert r.tolist() == [INF]


# ---------------------------------------------------------------------------
# norm facts and linear forms


def test_norm_keep_bounds_the_euclidean_norm_from_above_and_tightly():
    a = np.array([[3.0, 4.0], [5.0, 12.0]])
    n1 = B._norm_keep(a, 1)                       # row norms 5 and 13
    assert n1.shape == (2, 1)
    for got, exact in zip(n1[:, 0], (5.0, 13.0)):
        assert exact <= got <= exact * (1 + 8 * U)
    n0 = B._norm_keep(a, 0)                       # column norms sqrt(34), sqrt(160)
    assert n0.shape == (1, 2)
    for got, sq in zip(n0[0], (34, 160)):
        assert Fraction(float(got)) ** 2 >= sq and got <= math.sqrt(sq) * (1 + 8 * U)
    # (n + 2) u of the sum of squares: at n = 2, sqrt(25 (1 + 4u)) rounded up twice
    assert n1[0, 0] == up(np.sqrt(up(25.0 * (1 + 4 * U))))


def test_c_norm_of_a_point_a_form_and_a_recorded_fact():
    b = Bound.point(np.array([[3.0, 4.0]]))
    n = B.c_norm(b, 1)
    assert n.shape == (1, 1) and 5.0 <= n[0, 0] <= 5.0 * (1 + 8 * U)
    n = B.c_norm(b, 1, (2, 2))                      # broadcast to two rows first
    assert n.shape == (2, 1) and np.all(n >= 5.0) and np.all(n <= 5.0 * (1 + 8 * U))
    n = B.c_norm(b, 0, (2, 2))                      # columns of [[3, 4], [3, 4]]: 3 sqrt 2, 4 sqrt 2
    assert n.shape == (1, 2) and n[0, 0] >= 3 * math.sqrt(2) and n[0, 1] >= 4 * math.sqrt(2)
    assert n[0, 1] <= 4 * math.sqrt(2) * (1 + 8 * U)
    assert B.c_norm(Bound.box([[0.0, 1.0]], [[1.0, 1.0]]), 1) is None          # not a point
    assert B.c_norm(Bound.point(np.array([[INF, 1.0]])), 1) is None             # not finite
    # a form: the norm of its constant part, not of the box
    x = data_input((1, 2), "X", -1.0, 1.0)
    x.lin.clo[:] = x.lin.chi[:] = np.array([[0.0, 2.0]])
    n = B.c_norm(x, 1)
    assert 2.0 <= n[0, 0] <= 2.0 * (1 + 8 * U)
    x.lin.chi[:] = np.array([[1.0, 2.0]])
    assert B.c_norm(x, 1) is None
    # a recorded fact is used as it is (at the bound's own shape only)
    fact = np.array([[0.25]])
    b = Bound(np.zeros((1, 3)), np.ones((1, 3)), nrm={1: fact})
    assert B.c_norm(b, 1) is fact
    assert B.c_norm(b, 0) is None
    assert B.c_norm(b, 1, (2, 3)) is None
    assert B._with_nrm(Bound.point(np.zeros(2)), {0: None}).nrm is None
    assert B._with_nrm(Bound.point(np.zeros(2)), {0: fact}).nrm == {0: fact}


def test_lin_box_is_the_box_of_c_plus_a_x():
    # value = c + A x with c in [1, 2], A = [2, -3], x in [-1, 1] x [0, 2]: [1 - 2 - 6, 2 + 2 + 0] = [-7, 4]
    lin = Lin(np.array([1.0]), np.array([2.0]), {"X": (np.array([[2.0, -3.0]]), np.array([[2.0, -3.0]]))})
    lo, hi = B.lin_box(lin, {"X": (np.array([-1.0, 0.0]), np.array([1.0, 2.0]))})
    assert -7.0 - 1e-13 <= lo[0] <= -7.0 and 4.0 <= hi[0] <= 4.0 + 1e-13
    # coefficients in a box: A in [[-1, 1]] times x in [2, 3]: [-3, 3]
    lin = Lin(np.zeros(1), np.zeros(1), {"X": (np.array([[-1.0]]), np.array([[1.0]]))})
    lo, hi = B.lin_box(lin, {"X": (np.array([2.0]), np.array([3.0]))})
    assert -3.0 - 1e-13 <= lo[0] <= -3.0 and 3.0 <= hi[0] <= 3.0 + 1e-13
    # two arguments add up
    lin = Lin(np.zeros(1), np.zeros(1), {"X": (np.ones((1, 1)), np.ones((1, 1))), "Y": (np.ones((1, 1)), np.ones((1, 1)))})
    lo, hi = B.lin_box(lin, {"X": (np.array([1.0]), np.array([2.0])), "Y": (np.array([10.0]), np.array([20.0]))})
    assert 11.0 - 1e-12 <= lo[0] <= 11.0 and 22.0 <= hi[0] <= 22.0 + 1e-12


def test_sum_err_bounds_the_summation_error():
    x = np.array([[1.0, -2.0, 3.0], [0.0, 0.0, 0.0]])
    e = B._sum_err(x)
    assert e.shape == (2,) and e[0] == 3 * 2.3e-16 * 6.0 and e[1] == 0.0
    assert e[0] >= 2 * U * 6.0                                # at least (n - 1) u sum |x|
    assert B._sum_err(np.array([[INF, 1.0]])).tolist() == [0.0]      # an infinite sum needs no allowance
    assert B._sum_err(np.zeros((3, 0))).tolist() == [0.0, 0.0, 0.0]


def test_lin_add_scale_neg_hull():
    shape = (1,)
    a = Lin(np.array([1.0]), np.array([2.0]), {"X": (np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]]))})
    b = Lin(np.array([0.5]), np.array([0.5]), {"Y": (np.array([[3.0]]), np.array([[4.0]]))})
    s = B.lin_add(a, b, shape)
    assert (s.clo.tolist(), s.chi.tolist()) == ([1.5], [2.5])
    assert s.A["X"][0].tolist() == [[1.0, 0.0]] and s.A["Y"][1].tolist() == [[4.0]]
    n = B.lin_neg(a)
    assert (n.clo.tolist(), n.chi.tolist()) == ([-2.0], [-1.0]) and n.A["X"][0].tolist() == [[-1.0, -0.0]]
    sc = B.lin_scale(np.array([-1.0]), np.array([2.0]), a, shape)
    assert (sc.clo.tolist(), sc.chi.tolist()) == ([-2.0], [4.0])
    assert sc.A["X"][0].tolist() == [[-1.0, 0.0]] and sc.A["X"][1].tolist() == [[2.0, 0.0]]
    h = B.lin_hull([a, b], shape)
    assert (h.clo.tolist(), h.chi.tolist()) == ([0.5], [2.0])
    assert h.A["X"][0].tolist() == [[0.0, 0.0]] and h.A["X"][1].tolist() == [[1.0, 0.0]]
    assert h.A["Y"][0].tolist() == [[0.0]] and h.A["Y"][1].tolist() == [[4.0]]


# ---------------------------------------------------------------------------
# elementwise rules


def _mono(name, lo, hi):
    rule = B.RULES[name]
    fn = {"exp": lax.exp, "log": lax.log, "log1p": lax.log1p, "tanh": lax.tanh, "asin": lax.asin,
          "acos": lax.acos, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "logistic": lax.logistic, "expm1": lax.expm1,
          "atanh": lax.atanh}[name]
    del rule
    return one(fn, box([lo], [hi]))


def test_monotone_rules_round_outward_by_their_ulps():
    k = B.LIBM_ULPS                                       # a libm function: its value moved out by k floats
    out = _mono("exp", 0.0, 1.0)
    assert (out.lo[0], out.hi[0]) == (dn(1.0, k), up(np.exp(1.0), k))
    out = _mono("log", 1.0, 2.0)
    assert (out.lo[0], out.hi[0]) == (dn(0.0, k), up(np.log(2.0), k))
    out = _mono("logistic", 0.0, 0.0)                     # two more for the composed 1 / (1 + exp(-x))
    assert (out.lo[0], out.hi[0]) == (dn(0.5, k + 2), up(0.5, k + 2))
    out = _mono("rsqrt", 1.0, 4.0)                        # decreasing, four ulps (sqrt is correctly rounded)
    assert (out.lo[0], out.hi[0]) == (dn(0.5, 4), up(1.0, 4))
    out = _mono("acos", 0.0, 1.0)                         # decreasing
    assert (out.lo[0], out.hi[0]) == (dn(0.0, k), up(np.arccos(0.0), k))
    out = _mono("asin", -1.0, 1.0)                        # the closed domain [-1, 1]
    assert (out.lo[0], out.hi[0]) == (dn(-np.pi / 2, k), up(np.pi / 2, k))


def test_monotone_rules_clip_to_their_image_and_refuse_outside_their_domain():
    k = B.LIBM_ULPS
    out = _mono("exp", -800.0, -700.0)                    # exp(-800) = 0: never below 0
    assert out.lo[0] == 0.0 and out.hi[0] == up(np.exp(-700.0), k)
    out = _mono("tanh", 20.0, 30.0)                       # tanh = 1.0 in float64: never above 1
    assert out.hi[0] == 1.0 and out.lo[0] == dn(np.tanh(20.0), k)
    out = _mono("expm1", -50.0, 0.0)
    assert out.lo[0] == -1.0 and out.hi[0] == up(0.0, k)
    out = _mono("log", 1.0, INF)
    assert out.lo[0] == dn(0.0, k) and out.hi[0] == INF and not out.nan
    out = _mono("log", 5e-324, 1.0)                       # the least positive float: inside the open domain
    assert out.lo[0] == dn(np.log(5e-324), k) and out.hi[0] == up(0.0, k) and not out.nan
    out = _mono("sqrt", 0.0, 4.0)                         # sqrt's domain is closed at 0
    assert out.lo[0] == 0.0 and out.hi[0] >= 2.0 and not out.nan
    out = _mono("asin", -1.0, 1.0)                        # and asin's at both ends
    assert not out.nan and out.hi[0] >= np.pi / 2
    # outside the domain, or at an end where f is infinite (log 0 = -inf, rsqrt 0 = inf, atanh 1 = inf, log1p -1):
    # undefined, so that 0 * f(x) is not taken to be 0
    for name, lo, hi in (("log", -1.0, 2.0), ("log", -INF, 2.0), ("sqrt", -0.5, 1.0), ("asin", -1.5, 0.5),
                         ("asin", 0.0, 1.5), ("log1p", -2.0, 1.0), ("atanh", 0.5, 1.5), ("log", 0.0, 1.0),
                         ("rsqrt", 0.0, 1.0), ("atanh", -1.0, 0.0), ("atanh", 0.0, 1.0), ("log1p", -1.0, 0.0)):
        out = _mono(name, lo, hi)
        assert (out.lo[0], out.hi[0]) == (-INF, INF) and out.nan, (name, lo, hi)
        assert out.why is not None and out.why.primitive.name == name


def test_abs_sign_clamp_max_min_exact_boxes():
    out = one(lax.abs, box([-3.0, 1.0, -3.0, 0.0, 0.5, -3.0], [2.0, 2.0, -1.0, 2.0, 2.0, 0.5]))
    eq(out, [0.0, 1.0, 1.0, 0.0, 0.5, 0.0], [3.0, 2.0, 3.0, 2.0, 2.0, 3.0])
    out = one(lax.sign, box([-2.0, 0.5, -3.0, 0.0], [3.0, 2.0, -1.0, 0.0]))
    eq(out, [-1.0, 1.0, -1.0, 0.0], [1.0, 1.0, -1.0, 0.0])
    out = one(lambda x: lax.clamp(-1.0, x, 2.0), box([-3.0, 1.0, -5.0, 3.0], [0.5, 5.0, -2.0, 4.0]))
    eq(out, [-1.0, 1.0, -1.0, 2.0], [0.5, 2.0, -1.0, 2.0])
    out = one(lax.max, box([-3.0, 1.0], [0.5, 5.0]), box([-1.0, 2.0], [0.0, 3.0]))
    eq(out, [-1.0, 2.0], [0.5, 5.0])
    out = one(lax.min, box([-3.0, 1.0], [0.5, 5.0]), box([-1.0, 2.0], [0.0, 3.0]))
    eq(out, [-3.0, 1.0], [0.0, 3.0])
    # a rule's unbounded result names its equation
    for fn in (lax.abs, lambda x: lax.clamp(-INF, x, 2.0), lambda x: lax.max(x, 1.0),
               lambda x: lax.min(x, 1.0), lambda x: x * 2.0, lambda x: x + 1.0, lambda x: 1.0 / x):
        out = one(fn, Bound.top((2,)))
        assert out.why is not None and hasattr(out.why, "primitive"), fn


def test_abs_clamp_max_min_keep_the_hull_of_the_forms():
    x = data_input((1, 2), "X", -1.0, 1.0)
    eye = np.eye(2).reshape(1, 2, 2)
    z = np.zeros((1, 2, 2))
    out = one(lax.abs, x)
    np.testing.assert_array_equal(out.lin.A["X"][0], -eye)
    np.testing.assert_array_equal(out.lin.A["X"][1], eye)
    eq(out, [[0.0, 0.0]], [[1.0, 1.0]])
    for fn in (lambda v: lax.clamp(-0.5, v, 0.5), lambda v: lax.max(v, 0.0), lambda v: lax.max(0.0, v),
               lambda v: lax.min(v, 0.0), lambda v: lax.min(0.0, v)):
        out = one(fn, x)
        assert out.lin is not None
        np.testing.assert_array_equal(out.lin.A["X"][0], z)
        np.testing.assert_array_equal(out.lin.A["X"][1], eye)
    out = one(lambda v: lax.clamp(-0.5, v, 0.5), x)
    eq(out, [[-0.5, -0.5]], [[0.5, 0.5]])
    np.testing.assert_array_equal(out.lin.clo, [[-0.5, -0.5]])
    np.testing.assert_array_equal(out.lin.chi, [[0.5, 0.5]])
    out = one(lambda v: lax.max(v, 0.0), x)
    eq(out, [[0.0, 0.0]], [[1.0, 1.0]])
    out = one(lambda v: lax.min(0.0, v), x)
    eq(out, [[-1.0, -1.0]], [[0.0, 0.0]])


def test_integer_powers_exact_boxes():
    def ipow(k, lo, hi):
        return one(lambda x: lax.integer_pow(x, k), box([lo], [hi]))
    # an end whose float64 power is exact stays exact (constants such as LocScaleReparam's scale ** 1 stay
    # points); an inexact one moves bit_length(k) + 1 floats outward.  Odd: monotone
    out = ipow(3, -2.0, 1.0)
    assert (out.lo[0], out.hi[0]) == (-8.0, 1.0)
    out = ipow(3, -1.1, 0.3)            # 1.1 ** 3 and 0.3 ** 3 are not floats
    assert (out.lo[0], out.hi[0]) == (dn((-1.1) ** 3, 3), up(0.3 ** 3, 3))
    assert Fraction(out.lo[0]) < Fraction(-1.1) ** 3 and Fraction(out.hi[0]) > Fraction(0.3) ** 3
    # even: 0 exactly when the box contains 0, else the smaller end's power
    out = ipow(2, -2.0, 1.0)
    assert (out.lo[0], out.hi[0]) == (0.0, 4.0)
    out = ipow(2, -1.0, 1.0)
    assert (out.lo[0], out.hi[0]) == (0.0, 1.0)
    out = ipow(2, 0.5, 2.0)
    assert (out.lo[0], out.hi[0]) == (0.25, 4.0)
    out = ipow(2, -3.0, -1.0)
    assert (out.lo[0], out.hi[0]) == (1.0, 9.0)
    out = ipow(2, 0.1, 0.3)             # the smaller end's power, both inexact
    assert (out.lo[0], out.hi[0]) == (dn(0.1 ** 2, 3), up(0.3 ** 2, 3))
    out = ipow(2, -0.3, -0.1)           # negative ends: the smaller |end| is the upper one
    assert (out.lo[0], out.hi[0]) == (dn(0.1 ** 2, 3), up(0.3 ** 2, 3))
    out = ipow(2, -0.1, 2.0)            # an exact upper end beside an inexact (unused) lower one
    assert (out.lo[0], out.hi[0]) == (0.0, 4.0)
    out = ipow(2, 0.1, 2.0)
    assert (out.lo[0], out.hi[0]) == (dn(0.1 ** 2, 3), 4.0)
    out = ipow(4, -1.0, 2.0)
    assert (out.lo[0], out.hi[0]) == (0.0, 16.0)
    out = ipow(5, 1.0, 2.0)
    assert (out.lo[0], out.hi[0]) == (1.0, 32.0)
    out = ipow(5, 1.1, 2.0)
    assert (out.lo[0], out.hi[0]) == (dn(1.1 ** 5, 4), 32.0)
    out = ipow(1, -0.1, 0.3)            # x ** 1 is x
    assert (out.lo[0], out.hi[0]) == (-0.1, 0.3)
    # negative: the reciprocal's box (one float out) to the power |k|
    out = ipow(-1, 2.0, 4.0)
    assert (out.lo[0], out.hi[0]) == (dn(0.25), up(0.5))
    out = ipow(-2, 2.0, 4.0)
    assert (out.lo[0], out.hi[0]) == (dn(dn(0.25) ** 2, 3), up(up(0.5) ** 2, 3))
    out = ipow(-2, -1.0, 1.0)               # 0 ** -2 is an infinity: undefined
    assert (out.lo[0], out.hi[0]) == (-INF, INF) and out.nan
    out = ipow(-1, 0.0, 1.0)
    assert (out.lo[0], out.hi[0]) == (-INF, INF) and out.nan
    out = ipow(-2, 1.0, 2.0)
    assert (out.lo[0], out.hi[0]) == (dn(dn(0.5) ** 2, 3), up(up(1.0) ** 2, 3)) and not out.nan
    out = one(lax.square, box([-2.0], [1.0]))
    assert (out.lo[0], out.hi[0]) == (0.0, 4.0)
    out = one(lax.square, box([-0.3], [0.1]))
    assert (out.lo[0], out.hi[0]) == (0.0, up(0.3 ** 2, 3))
    out = one(lambda x: x ** 0, box([-2.0], [1.0]))
    assert (out.lo[0], out.hi[0]) == (1.0, 1.0)
    # a large array is not checked entry by entry: every end is rounded out
    big = one(lambda x: lax.integer_pow(x, 2), box([1.0] * 65, [2.0] * 65))
    assert big.lo[0] == dn(1.0, 3) and big.hi[0] == up(4.0, 3)


def test_pow_with_a_box_exponent_and_with_an_integer_point():
    out = one(lax.pow, box([1.0, 2.0], [2.0, 4.0]), box([1.0, -1.0], [2.0, 0.5]))
    # x^y over the corners: [1, 4] and [2^-1 .. 4^0.5] = [0.25 .. 2]; two floats outward
    eq(out, [dn(1.0, 2), dn(0.25, 2)], [up(4.0, 2), up(2.0, 2)])
    out = one(lax.pow, box([-1.0], [2.0]), box([0.5], [1.0]))    # (-1) ** 0.5 is NaN
    eq(out, [-INF], [INF])
    assert out.nan
    out = one(lax.pow, box([0.0], [2.0]), box([0.5], [1.0]))     # 0 ** 0.5 = 0: defined, not bounded here
    eq(out, [-INF], [INF])
    assert not out.nan
    out = one(lax.pow, box([0.0], [2.0]), box([-1.0], [1.0]))    # 0 ** -1 is an infinity
    assert out.nan
    # an integer exponent known exactly: the integer power's rule (even power of a box containing 0: [0, ...])
    out = one(lambda x: lax.pow(x, jnp.full((1,), 2.0, F32)), box([-2.0], [1.0]))
    assert (out.lo[0], out.hi[0]) == (0.0, 4.0)
    out = one(lambda x: lax.pow(x, jnp.full((1,), 2.0, F32)), box([-0.3], [0.1]))
    assert (out.lo[0], out.hi[0]) == (0.0, up(0.3 ** 2, 3))
    # a point exponent that is not an integer, or not the same everywhere: the corner rule
    out = one(lambda x: lax.pow(x, jnp.array([0.5], F32)), box([4.0], [9.0]))
    assert (out.lo[0], out.hi[0]) == (dn(2.0, 2), up(3.0, 2))
    out = one(lambda x: lax.pow(x, jnp.array([2.0, 3.0], F32)), box([-2.0, 1.0], [1.0, 2.0]))
    assert (out.lo[0], out.hi[0]) == (-INF, INF) and (out.lo[1], out.hi[1]) == (dn(1.0, 2), up(8.0, 2))
    out = one(lambda x: lax.pow(x, jnp.array([100.0], F32)), box([1.0], [2.0]))
    assert (out.lo[0], out.hi[0]) == (dn(1.0, 2), up(2.0 ** 100, 2))


CMP = {"lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge, "eq": lax.eq, "ne": lax.ne}
# (a box, b box) -> the definite results, derived by hand: (lo, hi) of 1.0 * (a op b)
CMP_CASES = [
    ((0.0, 1.0), (2.0, 3.0), {"lt": (1, 1), "le": (1, 1), "gt": (0, 0), "ge": (0, 0), "eq": (0, 0), "ne": (1, 1)}),
    ((2.0, 3.0), (0.0, 1.0), {"lt": (0, 0), "le": (0, 0), "gt": (1, 1), "ge": (1, 1), "eq": (0, 0), "ne": (1, 1)}),
    ((0.0, 1.0), (1.0, 2.0), {"lt": (0, 1), "le": (1, 1), "gt": (0, 0), "ge": (0, 1), "eq": (0, 1), "ne": (0, 1)}),
    ((1.0, 2.0), (0.0, 1.0), {"lt": (0, 0), "le": (0, 1), "gt": (0, 1), "ge": (1, 1), "eq": (0, 1), "ne": (0, 1)}),
    ((0.0, 2.0), (1.0, 3.0), {"lt": (0, 1), "le": (0, 1), "gt": (0, 1), "ge": (0, 1), "eq": (0, 1), "ne": (0, 1)}),
    ((1.0, 1.0), (1.0, 1.0), {"lt": (0, 0), "le": (1, 1), "gt": (0, 0), "ge": (1, 1), "eq": (1, 1), "ne": (0, 0)}),
    ((1.0, 1.0), (2.0, 2.0), {"lt": (1, 1), "le": (1, 1), "gt": (0, 0), "ge": (0, 0), "eq": (0, 0), "ne": (1, 1)}),
]


@pytest.mark.parametrize("op", sorted(CMP))
def test_comparisons_decide_exactly_what_the_boxes_decide(op):
    a = box([c[0][0] for c in CMP_CASES], [c[0][1] for c in CMP_CASES])
    b = box([c[1][0] for c in CMP_CASES], [c[1][1] for c in CMP_CASES])
    out = one(lambda x, y: CMP[op](x, y).astype(F32), a, b)
    eq(out, [c[2][op][0] for c in CMP_CASES], [c[2][op][1] for c in CMP_CASES])


LOGIC = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}
# boolean boxes: F = [0, 0], T = [1, 1], X = [0, 1]
BOOLS = [(0, 0), (1, 1), (0, 1)]


@pytest.mark.parametrize("op", sorted(LOGIC))
def test_logic_on_boolean_boxes(op):
    pairs = [(p, q) for p in BOOLS for q in BOOLS]
    a = box([p[0] for p, _ in pairs], [p[1] for p, _ in pairs])
    b = box([q[0] for _, q in pairs], [q[1] for _, q in pairs])
    out = one(lambda x, y: LOGIC[op](x, y).astype(F32), a, b, dtypes=[BOOL, BOOL])
    want = []
    for p, q in pairs:
        vals = {int(LOGIC[op](bool(x), bool(y))) for x in range(p[0], p[1] + 1) for y in range(q[0], q[1] + 1)}
        want.append((min(vals), max(vals)))
    eq(out, [w[0] for w in want], [w[1] for w in want])


def test_not_and_logic_on_integers():
    out = one(lambda x: (~x).astype(F32), box([0, 1, 0], [0, 1, 1]), dtypes=[BOOL])
    eq(out, [1.0, 0.0, 0.0], [1.0, 0.0, 1.0])
    # bitwise ops on integers have no rule: unbounded, naming the equation
    for fn in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y):
        out = one(fn, box([0, 1], [3, 1]), box([0, 1], [3, 1]), dtypes=[I32, I32])
        eq(out, [-INF, -INF], [INF, INF])
        assert out.why is not None
    out = one(lambda x: ~x, box([0], [3]), dtypes=[I32])
    eq(out, [-INF], [INF])
    out = one(lambda x: jnp.all(x, axis=0).astype(F32), box([0, 1], [3, 1]), dtypes=[I32])
    assert (out.lo, out.hi) == (0.0, 1.0)


def test_select_n_picks_or_hulls_its_cases():
    pred = box([0, 1, 0], [0, 1, 1])
    a = box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    b = box([5.0, 5.0, 5.0], [6.0, 6.0, 6.0])
    out = one(lambda p, x, y: lax.select_n(p, x, y), pred, a, b, dtypes=[BOOL, F32, F32])
    eq(out, [0.0, 5.0, 0.0], [1.0, 6.0, 6.0])
    # three cases with an int32 index
    out = one(lambda p, x, y, z: lax.select_n(p, x, y, z), box([0, 1, 2, 0], [0, 2, 2, 2]), a.__class__.box(
        np.zeros(4), np.ones(4)), Bound.box(np.full(4, 5.0), np.full(4, 6.0)), Bound.box(np.full(4, -3.0),
        np.full(4, -2.0)), dtypes=[I32, F32, F32, F32])
    eq(out, [0.0, -3.0, -3.0, -3.0], [1.0, 6.0, -2.0, 6.0])


def test_select_n_with_forms():
    x = data_input((1, 2), "X", -1.0, 1.0)
    eye = np.eye(2).reshape(1, 2, 2)
    z = np.zeros((1, 2, 2))
    # predicate known per element: element 0 takes x (its form), element 1 the constant 3
    out = one(lambda p, v: lax.select_n(p, v, jnp.full((1, 2), 3.0, F32)), box([[0, 1]], [[0, 1]]), x,
              dtypes=[BOOL, F32])
    eq(out, [[-1.0, 3.0]], [[1.0, 3.0]])
    np.testing.assert_array_equal(out.lin.A["X"][0], np.array([[[1.0, 0.0], [0.0, 0.0]]]))
    np.testing.assert_array_equal(out.lin.A["X"][1], np.array([[[1.0, 0.0], [0.0, 0.0]]]))
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 3.0]])
    np.testing.assert_array_equal(out.lin.chi, [[0.0, 3.0]])
    # predicate unknown: the hull of the forms
    out = one(lambda p, v: lax.select_n(p, v, jnp.full((1, 2), 3.0, F32)), box([[0, 0]], [[1, 1]]), x,
              dtypes=[BOOL, F32])
    np.testing.assert_array_equal(out.lin.A["X"][0], z)
    np.testing.assert_array_equal(out.lin.A["X"][1], eye)
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 0.0]])
    np.testing.assert_array_equal(out.lin.chi, [[3.0, 3.0]])


def test_select_n_keeps_interval_coefficients_and_forms_beside_boxes():
    """A case whose form has an interval coefficient (u x, u in [1, 2] theta-free: A = [1, 2] I) keeps both ends
    where the predicate picks it; a case with a form beside one without (a box [3, 4]) still gives a form."""
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda p, u, v: lax.select_n(p, u * v, jnp.full((1, 2), 3.0, F32)), box([[0, 1]], [[0, 1]]),
              box([[1.0, 1.0]], [[2.0, 2.0]]), x, dtypes=[BOOL, F32, F32])
    np.testing.assert_array_equal(out.lin.A["X"][0], np.array([[[1.0, 0.0], [0.0, 0.0]]]))
    np.testing.assert_array_equal(out.lin.A["X"][1], np.array([[[2.0, 0.0], [0.0, 0.0]]]))
    out = one(lambda p, w, v: lax.select_n(p, v, w), box([[0, 0]], [[1, 1]]), box([[3.0, 3.0]], [[4.0, 4.0]]), x,
              dtypes=[BOOL, F32, F32])
    assert out.lin is not None
    # every case with a form: x where the predicate is 0, -x where it is 1
    both = one(lambda p, v: lax.select_n(p, v, -v), box([[0, 1]], [[0, 1]]), x, dtypes=[BOOL, F32])
    np.testing.assert_array_equal(both.lin.A["X"][0], np.array([[[1.0, 0.0], [0.0, -1.0]]]))
    np.testing.assert_array_equal(out.lin.A["X"][0], np.zeros((1, 2, 2)))
    np.testing.assert_array_equal(out.lin.A["X"][1], np.eye(2).reshape(1, 2, 2))
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 0.0]])
    np.testing.assert_array_equal(out.lin.chi, [[4.0, 4.0]])


def test_select_n_known_predicate_with_a_case_without_form():
    """The picked forms when one case has none (a box): its coefficients are zeros of the record's size p = 3, not
    of the output's shape (1, 2)."""
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda p, w, v: lax.select_n(p, v[:, :2], w), box([[1, 0]], [[1, 0]]), box([[3.0, 3.0]], [[4.0, 4.0]]),
              x, dtypes=[BOOL, F32, F32])
    # element 0 picks the box (case 1), element 1 the record's entry 1 (case 0 = v[:, :2])
    np.testing.assert_array_equal(out.lin.A["X"][0], np.array([[[0, 0, 0], [0, 1, 0]]]))
    np.testing.assert_array_equal(out.lin.A["X"][1], np.array([[[0, 0, 0], [0, 1, 0]]]))
    np.testing.assert_array_equal(out.lin.clo, [[3.0, 0.0]])
    np.testing.assert_array_equal(out.lin.chi, [[4.0, 0.0]])


def test_convert_element_type_boxes():
    out = one(lambda x: x.astype(BOOL).astype(F32), box([1.0, 0.0, -1.0, -2.0, 0.0], [2.0, 0.0, 1.0, -1.0, 3.0]))
    eq(out, [1.0, 0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0, 1.0])
    out = one(lambda x: x.astype(I32).astype(F32), box([-2.7, 0.5, 0.0, -3e9], [3.9, 0.9, 3e9, 0.0]))
    eq(out, [-2.0, 0.0, -INF, -INF], [3.0, 0.0, INF, INF])
    assert out.why is not None
    # int -> float and float -> float keep the box and the form
    out = one(lambda x: x.astype(F32), box([-3.0], [4.0]), dtypes=[I32])
    eq(out, [-3.0], [4.0])
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda v: v.astype(jnp.float16), x)
    np.testing.assert_array_equal(out.lin.A["X"][0], np.eye(2).reshape(1, 2, 2))


def test_reduce_precision_widens_by_its_mantissa():
    out = one(lambda x: lax.reduce_precision(x, 5, 7), box([1.0, -2.0], [2.0, -1.0]))
    eq(out, [dn(1.0 - 2.0 ** -7), dn(-2.0 - 2.0 * 2.0 ** -7)], [up(2.0 + 2.0 * 2.0 ** -7), up(-1.0 + 2.0 ** -7)])


def test_is_finite_rounding_rules_and_other_elementwise_boxes():
    out = one(lambda x: lax.is_finite(x).astype(F32), Bound(np.array([0.0, -INF]), np.array([1.0, 0.0])))
    eq(out, [1.0, 0.0], [1.0, 1.0])
    out = one(lax.floor, box([-1.5, 0.2], [2.5, 0.7]))
    eq(out, [-2.0, 0.0], [2.0, 0.0])
    out = one(lax.ceil, box([-1.5, 0.2], [2.5, 0.7]))
    eq(out, [-1.0, 1.0], [3.0, 1.0])
    out = one(lax.sin, box([0.0], [0.1]))
    eq(out, [-1.0], [1.0])
    out = one(lax.atan2, box([0.0], [1.0]), box([1.0], [2.0]))
    eq(out, [-np.pi - 1e-12], [np.pi + 1e-12])
    out = one(lax.nextafter, box([1.0], [2.0]), box([0.0], [3.0]))
    eq(out, [dn(1.0)], [up(2.0)])
    out = one(lax.rem, box([-10.0], [10.0]), box([-3.0], [2.0]))       # fmod(x, 0) is NaN
    eq(out, [-INF], [INF])
    assert out.nan
    out = one(lax.rem, box([-10.0], [10.0]), box([-3.0], [-1.0]))
    eq(out, [-3.0], [3.0])
    out = one(lambda x: lax.rng_uniform(0.0, 1.0, (2,)) + x, box([0.0, 0.0], [1.0, 1.0]))
    eq(out, [-INF, -INF], [INF, INF])


def test_mul_div_add_sub_exact_boxes():
    out = one(lax.mul, box([-2.0, 1.0], [3.0, 2.0]), box([-5.0, -1.0], [4.0, 3.0]))
    eq(out, [-15.0, -2.0], [12.0, 6.0])
    out = one(lax.div, box([1.0, -2.0], [2.0, 4.0]), box([2.0, 4.0], [4.0, 8.0]))
    # a / b = a * [1/b_hi, 1/b_lo] with the reciprocal's ends one float out, then the product's rounding
    lo, hi = B.iv_mul(np.array([1.0, -2.0]), np.array([2.0, 4.0]), np.array([dn(0.25), dn(0.125)]),
                      np.array([up(0.5), up(0.25)]))
    eq(out, lo, hi)
    assert out.lo[0] <= 0.25 and out.hi[0] >= 1.0 and out.lo[1] <= -0.5 and out.hi[1] >= 1.0
    out = one(lax.div, box([1.0], [2.0]), box([-1.0], [1.0]))
    eq(out, [-INF], [INF])
    # integer division: |a / b| <= |a| / min |b|, truncated
    out = one(lambda a, b: lax.div(a, b), box([-7.0], [5.0]), box([2.0], [3.0]), dtypes=[I32, I32])
    eq(out, [-3.0], [3.0])
    out = one(lax.sub, box([1.0, -INF], [2.0, 0.0]), box([0.5, 1.0], [3.0, 2.0]))
    eq(out, [-2.0, -INF], [1.5, -1.0])
    out = one(lax.neg, box([1.0], [2.0]))
    eq(out, [-2.0], [-1.0])
    out = one(lax.add, box([0.1], [1.0]), box([0.2], [2.0]))
    eq(out, [dn(0.1 + 0.2)], [3.0])


def test_linear_forms_through_arithmetic():
    x = data_input((1, 2), "X", -1.0, 1.0)
    eye = np.eye(2).reshape(1, 2, 2)
    # (x * 3 - x / 2 + 1) has form 2.5 x + 1
    out = one(lambda v: v * 3.0 - v / 2.0 + 1.0, x)
    np.testing.assert_allclose(out.lin.A["X"][0], 2.5 * eye, rtol=1e-15)
    np.testing.assert_allclose(out.lin.A["X"][1], 2.5 * eye, rtol=1e-15)
    assert np.all(out.lin.A["X"][0] <= 2.5 * eye) and np.all(out.lin.A["X"][1] >= 2.5 * eye)
    np.testing.assert_array_equal(out.lin.clo, [[1.0, 1.0]])
    # a box times a form keeps the form scaled by the box; the other order too
    for fn in (lambda v, s: v * s, lambda v, s: s * v):
        out = one(fn, x, box([[-2.0, 0.5]], [[1.0, 0.5]]))
        np.testing.assert_array_equal(out.lin.A["X"][0], np.array([[[-2.0, 0.0], [0.0, 0.5]]]))
        np.testing.assert_array_equal(out.lin.A["X"][1], np.array([[[1.0, 0.0], [0.0, 0.5]]]))
    # neg, sub of two forms
    out = one(lambda v: -v, x)
    np.testing.assert_array_equal(out.lin.A["X"][0], -eye)
    out = one(lambda v: 1.0 - v, x)
    np.testing.assert_array_equal(out.lin.A["X"][1], -eye)
    np.testing.assert_array_equal(out.lin.chi, [[1.0, 1.0]])
    # a form divided by a box: scaled by the reciprocal's box; divided by a form: no form
    out = one(lambda v: v / 4.0, x)
    assert out.lin is not None and np.all(out.lin.A["X"][1] >= 0.25 * eye)
    out = one(lambda v: v / (v + 3.0), x)
    assert out.lin is None


# ---------------------------------------------------------------------------
# reductions and scans


def test_reduce_sum_rounds_each_end_by_its_own_terms():
    # ends summed separately; allowance (n - 1) u sum|end terms| * 2, nothing when the allowance is 0
    out = one(lambda x: jnp.sum(x, axis=1), box([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]]))
    elo = 2 * U * 6.0 * 2
    assert out.lo[0] == dn(6.0 - elo) and out.hi[0] == up(6.0 + elo)
    assert out.lo[1] == 0.0 and out.hi[1] == up(4.0 + 2 * U * 4.0 * 2)
    # the lower end's allowance from |lo| only, the upper's from |hi| only
    out = one(lambda x: jnp.sum(x, axis=0), box([-1.0, -2.0], [0.0, 0.0]))
    assert out.lo == dn(-3.0 - 1 * U * 3.0 * 2) and out.hi == 0.0
    out = one(lambda x: jnp.sum(x, axis=0), box([0.0, 0.0], [1.0, 2.0]))
    assert out.lo == 0.0 and out.hi == up(3.0 + 1 * U * 3.0 * 2)
    # one term: nothing to round
    out = one(lambda x: jnp.sum(x, axis=0), box([0.1], [0.3]))
    assert (out.lo, out.hi) == (0.1, 0.3)
    # an infinite end stays infinite, the other is still rounded
    out = one(lambda x: jnp.sum(x, axis=0), Bound(np.array([-INF, 1.0]), np.array([1.0, 2.0])))
    assert out.lo == -INF and out.hi == up(3.0 + 1 * U * 3.0 * 2)
    # sum over both axes
    out = one(lambda x: jnp.sum(x), box([[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]))
    assert out.lo == dn(4.0 - 3 * U * 4.0 * 2) and out.hi == up(4.0 + 3 * U * 4.0 * 2)


def test_reduce_sum_over_records_multiplies_and_keeps_forms_over_fixed_axes():
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda x: jnp.sum(x, axis=0))(jax.ShapeDtypeStruct((m, 2), F32))
    [out] = Run(Bounds(), {"m": 7}).program(closed, [box([[-1.0, 0.5]], [[2.0, 1.0]])])
    eq(out, [-7.0, 3.5], [14.0, 7.0])
    assert out.lin is None
    [out] = Run(Bounds(), {"m": 1}).program(closed, [box([[-1.0, 0.5]], [[2.0, 1.0]])])
    eq(out, [-1.0, 0.5], [2.0, 1.0])
    # over a fixed axis: the form's coefficients summed (d/dx sum x = 1 for each entry)
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v: jnp.sum(v, axis=1), x)
    np.testing.assert_array_equal(out.lin.A["X"][0], [[1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(out.lin.A["X"][1], [[1.0, 1.0, 1.0]])
    closed = jax.make_jaxpr(lambda v: jnp.sum(v, axis=0))(jax.ShapeDtypeStruct((m, 3), F32))
    [out] = Run(Bounds(), {"m": 1}).program(closed, [data_input((1, 3), "X", -1.0, 1.0)])
    assert out.lin is None                    # a sum over the records is no form of one record


def test_reduce_max_min_and_or_argmax():
    b = box([[1.0, -5.0, 0.0], [2.0, 2.0, 2.0]], [[3.0, 4.0, 0.5], [2.0, 2.0, 7.0]])
    eq(one(lambda x: jnp.max(x, axis=1), b), [1.0, 2.0], [4.0, 7.0])
    eq(one(lambda x: jnp.min(x, axis=1), b), [-5.0, 2.0], [0.5, 2.0])
    eq(one(lambda x: jnp.max(x, axis=0), b), [2.0, 2.0, 2.0], [3.0, 4.0, 7.0])
    bb = box([[0, 1, 1], [0, 0, 0], [1, 1, 1]], [[1, 1, 1], [0, 1, 0], [1, 1, 1]])
    eq(one(lambda x: jnp.all(x, axis=1).astype(F32), bb, dtypes=[BOOL]), [0.0, 0.0, 1.0], [1.0, 0.0, 1.0])
    eq(one(lambda x: jnp.any(x, axis=1).astype(F32), bb, dtypes=[BOOL]), [1.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    eq(one(lambda x: jnp.argmax(x, axis=1).astype(F32), b), [0.0, 0.0], [2.0, 2.0])
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda x: jnp.argmin(x, axis=0).astype(F32))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 9}).program(closed, [box([0.0], [1.0])])
    eq(out, 0.0, 8.0)


def test_reduce_or_and_of_integers_contain_the_bitwise_value():
    # reduce_or / reduce_and of int32 operands are bitwise (1 | 2 = 3, 3 & 5 = 1), not logical: the rule has no
    # claim, and the bound must contain the value
    ints = box([1.0, 2.0], [1.0, 2.0])
    out = one(lambda x: lax.reduce_or_p.bind(x, axes=(0,)).astype(F32), ints, dtypes=[I32])
    assert out.lo <= 3.0 <= out.hi
    out = one(lambda x: lax.reduce_and_p.bind(x, axes=(0,)).astype(F32), box([3.0, 5.0], [3.0, 5.0]), dtypes=[I32])
    assert out.lo <= 1.0 <= out.hi


def test_all_and_any_over_an_axis_of_size_one_and_an_empty_axis():
    # over an axis of size 1 the value is the entry itself: [0, 1] stays [0, 1] (not the identity)
    bb = box([[0.0], [1.0]], [[1.0], [1.0]])
    eq(one(lambda x: jnp.all(x, axis=1).astype(F32), bb, dtypes=[BOOL]), [0.0, 1.0], [1.0, 1.0])
    eq(one(lambda x: jnp.any(x, axis=1).astype(F32), box([[0.0], [0.0]], [[1.0], [0.0]]), dtypes=[BOOL]),
       [0.0, 0.0], [1.0, 0.0])
    # over an empty axis: all() is True, any() is False (the identities), exactly
    empty = box(np.zeros((2, 0)), np.zeros((2, 0)))
    eq(one(lambda x: jnp.all(x, axis=1).astype(F32), empty, dtypes=[BOOL]), [1.0, 1.0], [1.0, 1.0])
    eq(one(lambda x: jnp.any(x, axis=1).astype(F32), empty, dtypes=[BOOL]), [0.0, 0.0], [0.0, 0.0])


def test_cumulative_scans():
    b = box([1.0, -2.0, 0.5, 3.0], [2.0, 1.0, 0.5, 4.0])
    out = one(lambda x: lax.cumsum(x, 0), b)
    slo, shi = np.cumsum([1.0, -2.0, 0.5, 3.0]), np.cumsum([2.0, 1.0, 0.5, 4.0])
    elo, ehi = 3 * U * 2 * np.cumsum([1.0, 2.0, 0.5, 3.0]), 3 * U * 2 * np.cumsum([2.0, 1.0, 0.5, 4.0])
    eq(out, [dn(s - e) for s, e in zip(slo, elo)], [up(s + e) for s, e in zip(shi, ehi)])
    out = one(lambda x: lax.cumsum(x, 0, reverse=True), b)
    slo, shi = np.cumsum([3.0, 0.5, -2.0, 1.0])[::-1], np.cumsum([4.0, 0.5, 1.0, 2.0])[::-1]
    elo, ehi = 3 * U * 2 * np.cumsum([3.0, 0.5, 2.0, 1.0])[::-1], 3 * U * 2 * np.cumsum([4.0, 0.5, 1.0, 2.0])[::-1]
    eq(out, [dn(s - e) for s, e in zip(slo, elo)], [up(s + e) for s, e in zip(shi, ehi)])
    eq(one(lambda x: lax.cummax(x, 0), b), [1.0, 1.0, 1.0, 3.0], [2.0, 2.0, 2.0, 4.0])
    eq(one(lambda x: lax.cummax(x, 0, reverse=True), b), [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0])
    eq(one(lambda x: lax.cummin(x, 0), b), [1.0, -2.0, -2.0, -2.0], [2.0, 1.0, 0.5, 0.5])
    eq(one(lambda x: lax.cummin(x, 0, reverse=True), b), [-2.0, -2.0, 0.5, 3.0], [0.5, 0.5, 0.5, 4.0])
    # cumlogsumexp: the scans of the ends, moved out by n (LIBM_ULPS + 2) floats of the largest magnitude along the
    # axis (n = 2 steps of numpy's logaddexp, each within LIBM_ULPS + 2 floats, the earlier error passed on with a
    # factor <= 1), then one float
    out = one(lambda x: lax.cumlogsumexp(x, 0), box([0.0, 0.0], [0.0, 1.0]))
    k = 2 * (B.LIBM_ULPS + 2)
    elo, ehi = k * np.spacing(np.log(2.0)), k * np.spacing(np.logaddexp(0.0, 1.0))
    eq(out, [dn(0.0 - elo), dn(np.log(2.0) - elo)], [up(0.0 + ehi), up(np.logaddexp(0.0, 1.0) + ehi)])
    out = one(lambda x: lax.cumprod(x, 0), b)
    eq(out, [-INF] * 4, [INF] * 4)
    assert out.why is not None
    # the form of a cumulative sum over a fixed axis: lower-triangular ones
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v: lax.cumsum(v, 1), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], np.tril(np.ones((3, 3))))
    # along the record axis: the hull of one record and m of them (cumsum), the box itself (cummax / cummin)
    (m,) = export.symbolic_shape("m")
    for f, want in ((lambda v: lax.cumsum(v, 0), ([-5.0], [10.0])), (lambda v: lax.cummax(v, 0), ([-1.0], [2.0])),
                    (lambda v: lax.cummin(v, 0), ([-1.0], [2.0])), (lambda v: lax.cumprod(v, 0), ([-INF], [INF]))):
        closed = jax.make_jaxpr(f)(jax.ShapeDtypeStruct((m,), F32))
        [out] = Run(Bounds(), {"m": 5}).program(closed, [box([-1.0], [2.0])])
        eq(out, *want)
    closed = jax.make_jaxpr(lambda v: lax.cumsum(v, 0))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 5}).program(closed, [box([1.0], [2.0])])
    eq(out, [1.0], [10.0])


def test_sort_and_top_k():
    out = interp(lambda x: lax.sort(x, dimension=0), [box([1.0, -2.0, 0.0], [2.0, 5.0, 0.5])])[0]
    eq(out, [-2.0] * 3, [5.0] * 3)
    out = interp(lambda x: lax.sort(x, dimension=1), [box([[1.0, -2.0], [0.0, 3.0]], [[2.0, 5.0], [0.5, 4.0]])])[0]
    eq(out, [[-2.0, -2.0], [0.0, 0.0]], [[5.0, 5.0], [4.0, 4.0]])
    vals, idx = interp(lambda x: lax.top_k(x, 2), [box([[1.0, -2.0, 0.0]], [[2.0, 5.0, 0.5]])])
    eq(vals, [[-2.0, -2.0]], [[5.0, 5.0]])
    eq(idx, [[0.0, 0.0]], [[2.0, 2.0]])


# ---------------------------------------------------------------------------
# structural rules


def test_structural_rules_move_boxes_and_forms():
    b = box([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]])
    eq(one(lambda x: lax.transpose(x, (1, 0)), b), b.lo.T, b.hi.T)
    eq(one(lambda x: lax.rev(x, (1,)), b), b.lo[:, ::-1], b.hi[:, ::-1])
    eq(one(lambda x: lax.slice(x, (0, 1), (2, 3), (1, 2)), b), b.lo[:, 1:3:2], b.hi[:, 1:3:2])
    eq(one(lambda x: lax.reshape(x, (3, 2)), b), b.lo.reshape(3, 2), b.hi.reshape(3, 2))
    eq(one(lambda x: lax.broadcast_in_dim(x, (2, 2, 3), (0, 2)), b), np.broadcast_to(b.lo[:, None], (2, 2, 3)),
       np.broadcast_to(b.hi[:, None], (2, 2, 3)))
    eq(one(lambda x: lax.squeeze(x, (0,)), box([[1.0, 2.0]], [[3.0, 4.0]])), [1.0, 2.0], [3.0, 4.0])
    # the forms move with the values
    x = data_input((1, 3), "X", -1.0, 1.0)
    eye = np.eye(3)
    out = one(lambda v: lax.rev(v, (1,)), x)
    np.testing.assert_array_equal(out.lin.A["X"][0][0], eye[::-1])
    out = one(lambda v: lax.slice(v, (0, 1), (1, 3)), x)
    np.testing.assert_array_equal(out.lin.A["X"][0][0], eye[1:3])
    out = one(lambda v: lax.transpose(v, (1, 0)), x)
    np.testing.assert_array_equal(out.lin.A["X"][0][:, 0], eye)
    out = one(lambda v: lax.reshape(v, (3, 1)), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][:, 0], eye)
    out = one(lambda v: lax.squeeze(v, (0,)), x)
    np.testing.assert_array_equal(out.lin.A["X"][1], eye)
    out = one(lambda v: lax.broadcast_in_dim(v, (2, 1, 3), (1, 2)), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][1, 0], eye)


def test_structural_rules_along_the_record_axis():
    (m,) = export.symbolic_shape("m")
    x = data_input((1, 2), "X", -1.0, 1.0)
    # reversing or slicing the record axis moves records: the box stays, the form goes
    for f in (lambda v: lax.rev(v, (0,)), lambda v: v[1:]):
        closed = jax.make_jaxpr(f)(jax.ShapeDtypeStruct((m, 2), F32))
        [out] = Run(Bounds(), {"m": 4}).program(closed, [x])
        eq(out, [[-1.0, -1.0]], [[1.0, 1.0]])
        assert out.lin is None
    # reversing a fixed axis of a record keeps the form
    closed = jax.make_jaxpr(lambda v: lax.rev(v, (1,)))(jax.ShapeDtypeStruct((m, 2), F32))
    [out] = Run(Bounds(), {"m": 4}).program(closed, [x])
    np.testing.assert_array_equal(out.lin.A["X"][0][0], np.eye(2)[::-1])
    # reshaping that keeps the record axis keeps the form; one that mixes records into a fixed axis drops it
    closed = jax.make_jaxpr(lambda v: v.reshape(v.shape[0], 2, 1))(jax.ShapeDtypeStruct((m, 2), F32))
    [out] = Run(Bounds(), {"m": 4}).program(closed, [x])
    np.testing.assert_array_equal(out.lin.A["X"][0][0, :, 0], np.eye(2))


def test_reshape_with_dimensions_or_sizes_that_differ_is_the_hull():
    b = box([[1.0, 2.0], [3.0, 4.0]], [[1.5, 2.5], [3.5, 4.5]])
    out = one(lambda v: lax.reshape(v, (4,), dimensions=(1, 0)), b)
    eq(out, [1.0] * 4, [4.5] * 4)
    assert out.lin is None


def test_concatenate_split_pad_iota():
    a = box([1.0, 2.0], [1.5, 2.5])
    b = box([-3.0], [-2.0])
    eq(one(lambda x, y: lax.concatenate([x, y], 0), a, b), [1.0, 2.0, -3.0], [1.5, 2.5, -2.0])
    outs = interp(lambda x: lax.split(x, (1, 2, 1), 0), [box([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 3.5, 4.5])])
    eq(outs[0], [1.0], [1.5])
    eq(outs[1], [2.0, 3.0], [2.5, 3.5])
    eq(outs[2], [4.0], [4.5])
    # pad: low 1, high -1 (drops the last), interior 1
    out = one(lambda x: lax.pad(x, 0.5, ((1, -1, 1),)), box([1.0, 2.0, 3.0], [1.5, 2.5, 3.5]))
    eq(out, [0.5, 1.0, 0.5, 2.0, 0.5], [0.5, 1.5, 0.5, 2.5, 0.5])
    out = one(lambda x: lax.pad(x, -1.0, ((2, 1, 0),)), box([1.0], [2.0]))
    eq(out, [-1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 2.0, -1.0])
    out = one(lambda x: lax.pad(x, 0.0, ((-1, 0, 0), (0, 1, 0))), box([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]))
    eq(out, [[3.0, 4.0, 0.0]], [[3.0, 4.0, 0.0]])
    # padding value from a box
    out = one(lambda x, p: lax.pad(x, p, ((1, 0, 0),)), box([1.0], [2.0]), box([], []).__class__.box(-3.0, 3.0))
    eq(out, [-3.0, 1.0], [3.0, 2.0])
    eq(one(lambda x: x + lax.iota(F32, 3), box([0.0] * 3, [0.0] * 3)), [0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    out = one(lambda x: x + lax.broadcasted_iota(F32, (2, 3), 1), box(np.zeros((2, 3)), np.zeros((2, 3))))
    eq(out, [[0.0, 1.0, 2.0]] * 2, [[0.0, 1.0, 2.0]] * 2)
    # forms: concatenated and padded with zero coefficients
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda v: lax.concatenate([v, jnp.ones((1, 1), F32)], 1), x)
    np.testing.assert_array_equal(out.lin.A["X"][0][0], [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 0.0, 1.0]])
    out = one(lambda v: lax.pad(v, 2.0, ((0, 0, 0), (1, 0, 0))), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(out.lin.chi, [[2.0, 0.0, 0.0]])
    outs = interp(lambda v: lax.split(v, (1, 1), 1), [x])
    np.testing.assert_array_equal(outs[1].lin.A["X"][0][0], [[0.0, 1.0]])


def test_concatenate_pad_split_iota_along_the_record_axis():
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda x, y: lax.concatenate([x, y], 0))(jax.ShapeDtypeStruct((m,), F32),
                                                                       jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 3}).program(closed, [box([0.0], [1.0]), box([5.0], [6.0])])
    eq(out, [0.0], [6.0])
    closed = jax.make_jaxpr(lambda x: lax.pad(x, -2.0, ((1, 0, 0),)))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 3}).program(closed, [box([0.0], [1.0])])
    eq(out, [-2.0], [1.0])
    closed = jax.make_jaxpr(lambda x: x + lax.iota(F32, x.shape[0]))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 6}).program(closed, [box([0.0], [0.0])])
    eq(out, [0.0], [5.0])


# ---------------------------------------------------------------------------
# indexing with interval indices


def test_gather_with_interval_indices_is_the_hull_of_the_reachable_entries():
    op = box([0.0, 10.0, 20.0, 30.0, 40.0], [1.0, 11.0, 21.0, 31.0, 41.0])
    # index in [1.2, 2.7] -> floor/ceil: entries 1..3 (the box of the index, widened to integers)
    out = one(lambda a, i: a[i], op, box([1.0, 0.0, 4.0], [3.0, 0.0, 4.0]), dtypes=[F32, I32])
    eq(out, [10.0, 0.0, 40.0], [31.0, 1.0, 41.0])
    # negative indices wrap (jnp semantics): -1 is the last
    out = one(lambda a, i: a[i], op, box([-1.0], [-1.0]), dtypes=[F32, I32])
    eq(out, [40.0], [41.0])
    # a row of a 2-d operand
    op2 = box([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    out = one(lambda a, i: a[i], op2, box([0.0], [1.0]), dtypes=[F32, I32])
    eq(out, [[0.0, 1.0]], [[2.0, 3.0]])
    # an unbounded index: every entry
    out = one(lambda a, i: a[i], op, Bound(np.array([-INF]), np.array([INF])), dtypes=[F32, I32])
    eq(out, [0.0], [41.0])
    # filling out-of-range indices with a value
    out = one(lambda a, i: a.at[i].get(mode="fill", fill_value=-7.0), op, box([3.0], [6.0]), dtypes=[F32, I32])
    eq(out, [-7.0], [41.0])


def test_gather_keeps_the_form_of_a_record_and_the_norm_of_a_constant_table():
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v, i: v[:, i], x, box([0.0], [1.0]), dtypes=[F32, I32])
    eq(out, [[-1.0]], [[1.0]])
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(hi[0], [[1.0, 1.0, 0.0]])
    # a row of the identity: the box is [0, 1]^3 but the row's norm is <= 1
    out = one(lambda i: jnp.eye(3, dtype=F32)[i], box([0.0], [2.0]), dtypes=[I32])
    eq(out, [[0.0] * 3], [[1.0] * 3])
    assert set(out.nrm) == {1} and 1.0 <= out.nrm[1].max() <= 1.0 + 1e-15


def test_index_candidates_and_gather_sources():
    c = B._index_candidates(np.array([[0.2, 1.0]]), np.array([[1.5, 1.0]]))
    assert c.tolist() == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    c = B._index_candidates(np.array([[0.0], [3.0]]), np.array([[1.0], [3.0]]))
    assert c.tolist() == [[0.0], [1.0], [2.0], [3.0]]
    assert B._index_candidates(np.array([[0.0]]), np.array([[INF]])) is None
    assert B._index_candidates(np.array([[0.0]]), np.array([[4095.0]])).shape == (4096, 1)
    assert B._index_candidates(np.array([[0.0]]), np.array([[4096.0]])) is None


def test_dynamic_slice_update_and_scatters():
    op = box([0.0, 10.0, 20.0, 30.0, 40.0], [1.0, 11.0, 21.0, 31.0, 41.0])
    # start in [1, 2]: the slices op[1:3] and op[2:4], elementwise hull
    out = one(lambda a, i: lax.dynamic_slice(a, (i,), (2,)), op, box(1.0, 2.0), dtypes=[F32, I32],
              shapes=[(5,), ()])
    eq(out, [10.0, 20.0], [21.0, 31.0])
    # starts past the end are clamped (start <= 5 - 2 = 3), negative ones to 0
    out = one(lambda a, i: lax.dynamic_slice(a, (i,), (2,)), op, box(2.0, 9.0), dtypes=[F32, I32], shapes=[(5,), ()])
    eq(out, [20.0, 30.0], [31.0, 41.0])
    # a negative start counts from the end (i + 5), so [-5, 0] reaches every start 0..3
    out = one(lambda a, i: lax.dynamic_slice(a, (i,), (2,)), op, box(-5.0, 0.0), dtypes=[F32, I32], shapes=[(5,), ()])
    eq(out, [0.0, 10.0], [31.0, 41.0])
    out = one(lambda a, i: lax.dynamic_slice(a, (i,), (2,)), op, box(0.0, 0.0), dtypes=[F32, I32], shapes=[(5,), ()])
    eq(out, [0.0, 10.0], [1.0, 11.0])
    out = one(lambda a, i: lax.dynamic_slice(a, (i,), (2,)), op, Bound(np.float64(-INF), np.float64(INF)),
              dtypes=[F32, I32], shapes=[(5,), ()])
    eq(out, [0.0, 0.0], [41.0, 41.0])
    # the form of a record through a slice at a known offset
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v, i: lax.dynamic_slice(v, (0, i), (1, 2)), x, box(1.0, 1.0), dtypes=[F32, I32],
              shapes=[(1, 3), ()])
    np.testing.assert_array_equal(out.lin.A["X"][0][0], np.eye(3)[1:3])
    out = one(lambda a, u, i: lax.dynamic_update_slice(a, u, (i,)), op, box([-5.0, 100.0], [-4.0, 101.0]),
              box(0.0, 3.0), dtypes=[F32, F32, I32], shapes=[(5,), (2,), ()])
    eq(out, [-5.0, -5.0, -5.0, -5.0, -5.0], [101.0, 101.0, 101.0, 101.0, 101.0])
    out = one(lambda a, u, i: a.at[i].add(u), op, box([-1.0, 2.0], [3.0, 5.0]), box([0, 0], [4, 4]),
              dtypes=[F32, F32, I32])
    # every sum here is exact: so are the ends (the sums are rounded outward only when inexact:
    # tests/test_bounds_mutation_gather.py)
    eq(out, [0.0 - 1.0, 10.0 - 1.0, 19.0, 29.0, 39.0], [1.0 + 8.0, 19.0, 29.0, 39.0, 49.0])
    out = one(lambda a, u, i: a.at[i].set(u), op, box([-1.0, 2.0], [3.0, 5.0]), box([0, 0], [4, 4]),
              dtypes=[F32, F32, I32])
    eq(out, [-1.0, -1.0, -1.0, -1.0, -1.0], [5.0, 11.0, 21.0, 31.0, 41.0])


def test_dot_general_rule_with_forms_and_records():
    # x w for a record x in [-1, 1]^3 and a point w: form w^T, box |w| row sums
    w = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, 4.0]])
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v, ww: v @ ww, x, Bound.point(w))
    np.testing.assert_array_equal(out.lin.A["X"][0][0], w.T)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], w.T)
    assert out.lo[0, 0] <= -2.0 and out.hi[0, 0] >= 2.0 and out.hi[0, 0] <= 2.0 + 1e-14
    assert out.hi[0, 1] >= 6.5 and out.hi[0, 1] <= 6.5 + 1e-14
    # the other order: w^T x^T, form on the right
    out = one(lambda ww, v: ww.T @ v.T, Bound.point(w), x)
    np.testing.assert_array_equal(out.lin.A["X"][0][:, 0], w.T)
    # contraction over the record axis: the one-record box times m
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda a, b: a @ b)(jax.ShapeDtypeStruct((2, m), F32), jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 10}).program(closed, [box([[1.0], [2.0]], [[1.0], [2.0]]), box([0.5], [1.0])])
    assert out.lo[0] <= 5.0 and out.lo[0] >= 5.0 - 1e-12 and out.hi[1] >= 20.0 and out.hi[1] <= 20.0 + 1e-12
    assert out.lin is None
    # two forms: no form
    out = one(lambda a, b: a @ b.T, x, data_input((1, 3), "Y", -1.0, 1.0))
    assert out.lin is None and out.hi[0, 0] >= 3.0


# ---------------------------------------------------------------------------
# the interpreter's lattice operations


def test_bounds_join_same_widen():
    it = Bounds()
    a = box([0.0, 1.0], [1.0, 2.0])
    b = box([-1.0, 1.5], [0.5, 3.0])
    j = it.join(a, b)
    eq(j, [-1.0, 1.0], [1.0, 3.0])
    j = it.join(Bound(np.array([np.nan]), np.array([1.0])), Bound(np.array([0.0]), np.array([np.nan])))
    eq(j, [-INF], [INF])
    x = data_input((1, 2), "X", -1.0, 1.0)
    y = Bound(x.lo, x.hi, B.lin_scale(np.full((1, 2), 2.0), np.full((1, 2), 2.0), x.lin, (1, 2)), "w")
    j = it.join(x, y)
    np.testing.assert_array_equal(j.lin.A["X"][0][0], np.eye(2))
    np.testing.assert_array_equal(j.lin.A["X"][1][0], 2 * np.eye(2))
    assert j.why == "w"
    j = it.join(x, box([[5.0, 5.0]], [[5.0, 5.0]]))
    np.testing.assert_array_equal(j.lin.A["X"][0][0], np.zeros((2, 2)))
    np.testing.assert_array_equal(j.lin.chi, [[5.0, 5.0]])
    assert it.join(a, b).lin is None
    assert it.same(a, box([0.0, 1.0], [1.0, 2.0]))
    assert not it.same(a, box([0.0, 1.0], [1.0, 2.5]))
    assert not it.same(a, box([0.0, 1.5], [1.0, 2.0]))
    assert it.same(x, data_input((1, 2), "X", -1.0, 1.0))
    assert not it.same(x, box(x.lo, x.hi))
    assert not it.same(box(x.lo, x.hi), x)
    assert not it.same(x, y)
    assert not it.same(x, data_input((1, 2), "Z", -1.0, 1.0))
    z = data_input((1, 2), "X", -1.0, 1.0)
    z.lin.chi[:] = 1.0
    assert not it.same(x, z)
    z = data_input((1, 2), "X", -1.0, 1.0)
    z.lin.clo[:] = -1.0
    assert not it.same(x, z)
    z = data_input((1, 2), "X", -1.0, 1.0)
    z.lin.A["X"] = (z.lin.A["X"][0] * 0, z.lin.A["X"][1])
    assert not it.same(x, z)
    w = it.widen(None, box([0.0, 1.0], [1.0, 2.0]), None)
    eq(w, [-INF, -INF], [INF, INF])


def test_bounds_cond_scan_literal_constant():
    it = Bounds()
    br = ["b0", "b1", "b2", "b3"]
    assert it.cond_branches(None, br, box([1.2], [2.0])) == ["b1", "b2"]
    assert it.cond_branches(None, br, box([-3.0], [0.0])) == ["b0"]
    assert it.cond_branches(None, br, box([2.5, 0.0], [9.0, 1.0])) == br
    assert it.cond_branches(None, br, box([3.0], [3.0])) == ["b3"]
    assert it.cond_branches(None, br, Bound(np.array([1.0]), np.array([INF]))) == br
    v = box([[0.0, 1.0], [-1.0, 3.0]], [[2.0, 1.5], [0.0, 4.0]])
    av_full = jax.core.ShapedArray((2, 2), F32)
    av_slice = jax.core.ShapedArray((2,), F32)
    s = it.scan_slice(None, v, av_full, av_slice)
    eq(s, [-1.0, 1.0], [2.0, 4.0])
    st = it.scan_stack(None, box([0.0, 1.0], [2.0, 3.0]), av_slice, jax.core.ShapedArray((3, 2), F32))
    eq(st, [[0.0, 1.0]] * 3, [[2.0, 3.0]] * 3)
    x = data_input((1, 2), "X", -1.0, 1.0)
    x.lin.clo[:] = [[-1.0, 0.0]]
    s = it.scan_slice(None, x, jax.core.ShapedArray((1, 2), F32), av_slice)
    eq(s, [-1.0, -1.0], [1.0, 1.0])
    np.testing.assert_array_equal(s.lin.A["X"][0], np.eye(2))
    np.testing.assert_array_equal(s.lin.clo, [-1.0, 0.0])
    np.testing.assert_array_equal(s.lin.chi, [0.0, 0.0])
    st = it.scan_stack(None, x, jax.core.ShapedArray((1, 2), F32), jax.core.ShapedArray((3, 1, 2), F32))
    assert st.lin.A["X"][0].shape == (3, 1, 2, 2)
    np.testing.assert_array_equal(st.lin.A["X"][1][2, 0], np.eye(2))
    # through a program: a scan over a fixed-length input, and a cond whose index is known
    out = one(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs)[1], box([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    assert out.lo[2] <= 3.0 <= out.hi[2]
    out = one(lambda i, x: lax.switch(i, [lambda v: v + 1.0, lambda v: v * 10.0, lambda v: -v], x),
              box(1.0, 1.0), box([1.0], [2.0]), dtypes=[I32, F32], shapes=[(), (1,)])
    eq(out, [10.0], [20.0])
    out = one(lambda x: x + jnp.asarray([1.5, 2.5], F32), box([0.0, 0.0], [0.0, 0.0]))
    eq(out, [1.5, 2.5], [1.5, 2.5])
    assert it.constant(jax.random.key(0), jax.core.ShapedArray((), jnp.float32)).lo == -INF


def test_bound_constructors_and_data_input():
    b = Bound.top((2,))
    assert b.lo.tolist() == [-INF, -INF] and b.hi.tolist() == [INF, INF] and not b.bounded()
    assert Bound.top((2,), "w").why == "w"
    assert Bound.box(0.0, 1.0, "v").why == "v"
    assert Bound.box(np.array([True, False]), np.array([True, True])).lo.dtype == np.float64
    with pytest.raises(TypeError):
        Bound.box(np.array([1j]), np.array([2j]))
    assert Bound(np.array([0.0]), np.array([INF])).bounded() is False
    assert Bound(np.array([-INF]), np.array([0.0])).bounded() is False
    assert Bound.point(np.array([1.0, 2.0])).is_point() and not Bound.box([0.0], [1.0]).is_point()
    x = data_input((1, 2, 2), "X", -1.0, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert x.hi.tolist() == [[[1.0, 2.0], [3.0, 4.0]]] and x.lin.A["X"][0].shape == (1, 2, 2, 4)
    np.testing.assert_array_equal(x.lin.A["X"][0].reshape(4, 4), np.eye(4))
    x = data_input((1,), "X", 0.0, 1.0)
    assert x.lin.A["X"][0].shape == (1, 1)


# ---------------------------------------------------------------------------
# soundness of the interval arithmetic for every input, with hypothesis (exact rationals as the reference)

from hypothesis import given, settings, strategies as st  # noqa: E402

_F = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_subnormal=False)
_T = st.floats(min_value=0.0, max_value=1.0)


def _ivl(x, y):
    return (x, y) if x <= y else (y, x)


def _at(lo, hi, t):
    """A rational point of [lo, hi]."""
    return Fraction(lo) + (Fraction(hi) - Fraction(lo)) * Fraction(t)


@settings(max_examples=200, deadline=None)
@given(_F, _F, _F, _F, _T, _T)
def test_iv_add_and_mul_contain_every_sum_and_product(a1, a2, b1, b2, s, t):
    (alo, ahi), (blo, bhi) = _ivl(a1, a2), _ivl(b1, b2)
    x, y = _at(alo, ahi, s), _at(blo, bhi, t)
    A = [np.array([v]) for v in (alo, ahi, blo, bhi)]
    lo, hi = B.iv_add(*A)
    assert Fraction(float(lo[0])) <= x + y <= Fraction(float(hi[0]))
    lo, hi = B.iv_mul(*A)
    assert Fraction(float(lo[0])) <= x * y <= Fraction(float(hi[0]))
    # tight: the ends are the exact corner extremes rounded at most one float outward (two for a product that
    # underflows: its float is 0 and its error unknown)
    corners = [Fraction(p) * Fraction(q) for p in (alo, ahi) for q in (blo, bhi)]
    assert Fraction(float(up(lo[0], 2))) >= min(corners) and Fraction(float(dn(hi[0], 2))) <= max(corners)
    if all(abs(c) >= 2 ** -960 or c == 0 for c in corners):
        assert Fraction(float(up(lo[0]))) >= min(corners) and Fraction(float(dn(hi[0]))) <= max(corners)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e6), st.floats(min_value=1e-6, max_value=1e6), _T, st.booleans())
def test_iv_recip_contains_every_reciprocal(a1, a2, t, negative):
    lo_, hi_ = _ivl(a1, a2)
    if negative:
        lo_, hi_ = -hi_, -lo_
    x = _at(lo_, hi_, t)
    lo, hi = B.iv_recip(np.array([lo_]), np.array([hi_]))
    assert Fraction(float(lo[0])) <= 1 / x <= Fraction(float(hi[0]))
    assert Fraction(float(up(lo[0], 2))) >= 1 / Fraction(hi_) and Fraction(float(dn(hi[0], 2))) <= 1 / Fraction(lo_)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_F, _F, _F, _F, _T, _T), min_size=1, max_size=4), st.booleans())
def test_iv_dot_contains_every_dot_product(terms, points):
    alo, ahi, blo, bhi, xs, ys = [], [], [], [], [], []
    for a1, a2, b1, b2, s, t in terms:
        (l1, h1), (l2, h2) = _ivl(a1, a2), _ivl(b1, b2)
        if points:
            h1, h2 = l1, l2
        alo.append(l1), ahi.append(h1), blo.append(l2), bhi.append(h2)
        xs.append(_at(l1, h1, s)), ys.append(_at(l2, h2, t))
    lo, hi = B.iv_dot(np.array([alo]), np.array([ahi]), np.array(blo), np.array(bhi), DN_MATVEC)
    exact = sum(x * y for x, y in zip(xs, ys))
    assert Fraction(float(lo[0])) <= exact <= Fraction(float(hi[0]))


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=-50, max_value=50), st.floats(min_value=-50, max_value=50), _T)
def test_monotone_rules_contain_the_function_on_the_box(a1, a2, t):
    import mpmath

    lo_, hi_ = _ivl(a1, a2)
    x = float(_at(lo_, hi_, t))
    for f, mp in ((lax.exp, mpmath.exp), (lax.tanh, mpmath.tanh), (lax.atan, mpmath.atan), (lax.logistic,
                  lambda v: 1 / (1 + mpmath.exp(-v))), (lax.asinh, mpmath.asinh)):
        out = one(f, box([lo_], [hi_]))
        with mpmath.workdps(40):
            v = mp(mpmath.mpf(x))
            assert mpmath.mpf(float(out.lo[0])) <= v <= mpmath.mpf(float(out.hi[0])), (f, lo_, hi_, x)


def test_log_sigmoid_gradient_is_bounded_by_the_feature_norm():
    # d/dtheta log sigmoid(x . theta) = (1 - sigmoid(x . theta)) x: for |x_j| <= R its sup over theta is R per
    # coordinate, reached as x . theta -> -inf.  The form keeps x with a factor in [0, 1] (not the box's
    # [0, inf] of exp / (1 + exp)): coefficients within [0, 1] on the diagonal, 0 elsewhere
    R = 2.5
    def prog(x, th):
        return jax.grad(lambda t: jax.nn.log_sigmoid(jnp.sum(x[0] * t)))(th)
    x = data_input((1, 3), "X", -R, R)
    out = one(prog, x, Bound.top((3,)))
    assert out.lin is not None
    lo, hi = out.lin.A["X"]
    top = 1 + B.LIBM_ULPS * np.finfo(float).eps          # 1 moved out by the libm margin (the floats above 1)
    assert np.all(lo == 0.0) and np.all(hi >= np.eye(3)) and np.all(hi <= np.eye(3) * top)
    assert np.all(out.hi >= R) and np.all(out.hi <= R * top) and np.all(out.lo <= -R)


# ---------------------------------------------------------------------------
# soundness bugs found by the tests above (fixed in bounds.py): each case failed before the fix


def test_iv_mul_of_an_underflowing_product_is_not_claimed_exact():
    # 5.04e-189 * 1.93e-267 = 9.7e-456 underflows to 0.0, and Dekker's error term is then 0 too: the product was
    # claimed to be exactly [0, 0], which excludes the true (positive) value
    a, b = 5.035633110786563e-189, 1.9294609863284886e-267
    lo, hi = B.iv_mul(np.array([a]), np.array([a]), np.array([b]), np.array([b]))
    assert Fraction(float(lo[0])) <= Fraction(a) * Fraction(b) <= Fraction(float(hi[0]))
    assert (lo[0], hi[0]) == (-ETA, ETA)
    lo, hi = B.iv_mul(np.array([2.0 ** -600]), np.array([2.0 ** -600]), np.array([-(2.0 ** -600)]),
                      np.array([-(2.0 ** -600)]))
    assert lo[0] < 0.0 < hi[0]


def test_iv_dot_upper_end_is_above_the_exact_sum_when_float_summation_rounds_down():
    # 1 + n * 0.4 ulp(1): every float addition rounds back down to 1, so the float sum of |a_i b_i| is n * 0.4 ulps
    # below the exact one; the ends were clipped to one float above that float sum, below the exact value
    t = 0.4 * 2.0 ** -52
    for n in (10, 100, 1000):
        a = np.ones((1, n + 1))
        b = np.array([1.0] + [t] * n)
        exact = 1 + n * Fraction(t)
        lo, hi = B.iv_dot(a, a, b, b, DN_MATVEC)
        assert Fraction(float(lo[0])) <= exact <= Fraction(float(hi[0])), n
        lo, hi = B.iv_dot(-a, -a, b, b, DN_MATVEC)
        assert Fraction(float(lo[0])) <= -exact <= Fraction(float(hi[0])), n
        # with an infinite entry meeting a zero: the magnitude bound alone
        a2, b2 = np.concatenate([a, [[INF]]], axis=1), np.concatenate([b, [0.0]])
        lo, hi = B.iv_dot(np.zeros_like(a2), a2, b2, b2, DN_MATVEC)
        assert Fraction(float(lo[0])) <= 0 and exact <= Fraction(float(hi[0])), n
        # through the dot_general rule
        out = one(lambda x, y: x @ y, Bound.point(a), Bound.point(b))
        assert Fraction(float(out.lo[0])) <= exact <= Fraction(float(out.hi[0])), n


def test_iv_dot_of_underflowing_products_is_not_claimed_zero():
    # 2^-600 * 2^-600 = 2^-1200 underflows: both the "exact product by a power of two" and the "every product has a
    # zero factor" (magnitude 0.0) shortcuts claimed exactly 0
    x = np.array([[2.0 ** -600]])
    y = np.array([2.0 ** -600])
    lo, hi = B.iv_dot(x, x, y, y, DN_MATVEC)
    assert lo[0] < 0.0 < hi[0]
    x = np.array([[1e-200, 1e-200, 1e-200]])
    y = np.array([1e-200, -1e-200, 1e-200])
    lo, hi = B.iv_dot(x, x, y, y, DN_MATVEC)
    assert Fraction(float(lo[0])) <= Fraction(1e-200) * Fraction(1e-200) <= Fraction(float(hi[0]))
    lo, hi = B.iv_dot(x, x * 2, y, y, DN_MATVEC)          # with a radius
    assert Fraction(float(lo[0])) <= Fraction(1e-200) * Fraction(1e-200) <= Fraction(float(hi[0]))
    assert lo[0] < 0.0 < hi[0]


def test_norm_keep_covers_squares_that_underflow():
    # e^2 = 2.25e-324 rounds to 0.0 (under half the smallest subnormal): the sum of three such squares was 0.0 and
    # its rounding up one subnormal (4.9e-324) below the exact 6.75e-324
    e = 1.5e-162
    n = B._norm_keep(np.array([[e, e, e]]), 1)
    assert Fraction(float(n[0, 0])) ** 2 >= 3 * Fraction(e) ** 2
    n = B._norm_keep(np.full((1, 50), e), 1)
    assert Fraction(float(n[0, 0])) ** 2 >= 50 * Fraction(e) ** 2


# ---------------------------------------------------------------------------
# cases found by mutation runs (docs/mutation.md, bounds)


def test_iv_dot_radius_in_either_operand_and_zero_terms():
    # a point, b a box: the radius comes from b alone; [2] . [1, 3] = [2, 6]
    lo, hi = B.iv_dot(np.array([[2.0]]), np.array([[2.0]]), np.array([1.0]), np.array([3.0]), DN_MATVEC)
    assert lo[0] <= 2.0 and hi[0] >= 6.0 and hi[0] - 6.0 <= 1e-14 and 2.0 - lo[0] <= 1e-14
    # every term has a zero factor, neither operand a power of two: exactly 0 (not one float either side)
    lo, hi = B.iv_dot(np.array([[0.0, 3.0]]), np.array([[0.0, 3.0]]), np.array([5.0, 0.0]), np.array([5.0, 0.0]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (0.0, 0.0)


def test_lin_box_and_sum_err_on_several_leading_axes():
    # value shape (2, 2), p = 3: entry (i, j) = c + sum_q A[i, j, q] x_q with x in [0, 1]^3
    A = np.arange(12.0).reshape(2, 2, 3) - 5.0
    lin = Lin(np.zeros((2, 2)), np.zeros((2, 2)), {"X": (A, A)})
    lo, hi = B.lin_box(lin, {"X": (np.zeros(3), np.ones(3))})
    want_lo, want_hi = np.minimum(A, 0).sum(-1), np.maximum(A, 0).sum(-1)
    assert lo.shape == (2, 2) and np.all(lo <= want_lo) and np.all(hi >= want_hi)
    assert np.all(want_lo - lo <= 1e-13) and np.all(hi - want_hi <= 1e-13)
    lin = Lin(np.zeros(2), np.zeros(2), {"X": (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]))})
    lo, hi = B.lin_box(lin, {"X": (np.zeros(2), np.ones(2))})
    assert np.all(lo <= 0.0) and np.all(lo >= -1e-300) and 3.0 <= hi[0] <= 3.0 + 1e-14 and 7.0 <= hi[1] <= 7.0 + 1e-14
    e = B._sum_err(np.ones((2, 3, 4)))
    assert e.shape == (2, 3) and np.all(e == 4 * 2.3e-16 * 4.0)
    assert B._sum_err(np.zeros((2, 3, 0))).shape == (2, 3)


def test_lin_hull_and_add_with_coefficient_boxes_on_two_axes():
    shape = (1, 2)
    lo_a = np.array([[[1.0, -1.0, 0.0], [2.0, 0.0, 0.0]]])
    hi_a = np.array([[[1.5, -0.5, 0.0], [2.0, 1.0, 0.0]]])
    a = Lin(np.zeros(shape), np.zeros(shape), {"X": (lo_a, hi_a)})
    b = Lin(np.ones(shape), np.ones(shape), {})
    h = B.lin_hull([a, b], shape)
    np.testing.assert_array_equal(h.A["X"][0], np.minimum(lo_a, 0))
    np.testing.assert_array_equal(h.A["X"][1], np.maximum(hi_a, 0))
    h = B.lin_hull([b, a], shape)
    np.testing.assert_array_equal(h.A["X"][0], np.minimum(lo_a, 0))
    s = B.lin_add(b, a, shape)
    np.testing.assert_array_equal(s.A["X"][0], lo_a)
    np.testing.assert_array_equal(s.A["X"][1], hi_a)


def test_pow_integer_exponent_limit_and_shapes():
    # |y| < 64: the integer power's rule; y = 64 and beyond: the corner rule (base > 0 only)
    out = one(lambda x: lax.pow(x, jnp.full((1,), 63.0, F32)), box([1.0], [2.0]))
    assert (out.lo[0], out.hi[0]) == (1.0, 2.0 ** 63)                  # exact powers stay exact
    out = one(lambda x: lax.pow(x, jnp.full((1,), 63.0, F32)), box([1.1], [1.3]))
    assert (out.lo[0], out.hi[0]) == (dn(1.1 ** 63, 7), up(1.3 ** 63, 7))
    out = one(lambda x: lax.pow(x, jnp.full((1,), 64.0, F32)), box([1.0], [2.0]))
    assert (out.lo[0], out.hi[0]) == (dn(1.0, 2), up(2.0 ** 64, 2))
    out = one(lambda x: lax.pow(x, jnp.full((2,), 2.0, F32)), box([-2.0, 1.1], [1.0, 3.0]))
    eq(out, [0.0, dn(1.1 ** 2, 3)], [4.0, 9.0])
    out = one(lambda x: lax.pow(x, jnp.full((2, 2), 3.0, F32)), box([[-1.0, 1.0], [0.0, 2.0]], [[1.0, 2.0], [1.0, 2.1]]))
    eq(out, [[-1.0, 1.0], [0.0, 8.0]], [[1.0, 8.0], [1.0, up(2.1 ** 3, 3)]])
    out = one(lax.pow, box([-1.0], [2.0]), box([0.5], [1.0]))
    assert out.why is not None and out.why.primitive.name == "pow"


def test_unbounded_results_name_their_equation():
    for fn, name in ((lambda x: lax.reduce_precision(x, 5, 7), "reduce_precision"), (lax.exp, "exp"),
                     (lambda x: x.astype(I32).astype(F32), "convert_element_type"), (lambda x: jnp.sum(x), "reduce_sum"),
                     (lambda x: lax.cumsum(x, 0), "cumsum"), (lambda x: jnp.max(x), "reduce_max"),
                     (lambda x: lax.sort(x, dimension=0), "sort"), (lambda x: x @ x, "dot_general"),
                     (lambda x: lax.pad(x, 0.0, ((1, 0, 0),)), "pad"), (lambda x: lax.concatenate([x, x], 0), "concatenate")):
        out = one(fn, Bound.top((2,)))
        assert not out.bounded() and out.why is not None and out.why.primitive.name == name, name
    # the first input's own reason is kept
    out = one(lambda x: x + 1.0, Bound.top((2,), "the prior"))
    assert out.why == "the prior"


def test_record_count_defaults_to_one_and_multiplies_only_above_one():
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda v: lax.cumsum(v, 0))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds()).program(closed, [box([1.0], [2.0])])         # no record count given: one record
    eq(out, [1.0], [2.0])
    closed = jax.make_jaxpr(lambda a, b: a @ b)(jax.ShapeDtypeStruct((1, m), F32), jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds()).program(closed, [box([[1.0]], [[1.0]]), box([0.5], [1.0])])
    assert 0.5 - 1e-15 <= out.lo[0] <= 0.5 and 1.0 <= out.hi[0] <= 1.0 + 1e-15
    [out] = Run(Bounds(), {"m": 2}).program(closed, [box([[1.0]], [[1.0]]), box([0.5], [1.0])])
    assert 1.0 - 1e-14 <= out.lo[0] <= 1.0 and 2.0 <= out.hi[0] <= 2.0 + 1e-14


def test_cumulative_scans_on_two_axes_and_infinite_ends():
    b = box([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    out = one(lambda x: lax.cumsum(x, 1, reverse=True), b)
    assert out.lo[0].tolist() == [dn(6.0 - 2 * U * 2 * 6.0), dn(5.0 - 2 * U * 2 * 5.0), dn(3.0 - 2 * U * 2 * 3.0)]
    assert out.lo[1].tolist() == [0.0, 0.0, 0.0]                # all-zero ends need no rounding
    assert out.hi[1].tolist() == [up(3.0 + 2 * U * 2 * 3.0), up(2.0 + 2 * U * 2 * 2.0), up(1.0 + 2 * U * 2 * 1.0)]
    out = one(lambda x: lax.cumsum(x, 0), Bound(np.array([-INF, 1.0]), np.array([1.0, 2.0])))
    eq(out, [-INF, -INF], [up(1.0 + U * 2 * 1.0), up(3.0 + U * 2 * 3.0)])
    out = one(lambda x: lax.cumsum(x, 0), Bound(np.array([1.0, 1.0]), np.array([INF, 2.0])))
    eq(out, [dn(1.0 - U * 2), dn(2.0 - U * 2 * 2.0)], [INF, INF])
    eq(one(lambda x: lax.cummax(x, 1, reverse=True), b), [[3.0, 3.0, 3.0], [0.0, 0.0, 0.0]], [[3.0, 3.0, 3.0], [1.0] * 3])
    for f, name in ((lambda x: lax.cummax(x, 0), "cummax"), (lambda x: lax.cummin(x, 0), "cummin"),
                    (lambda x: lax.cumlogsumexp(x, 0), "cumlogsumexp"), (lambda x: lax.cumprod(x, 0), "cumprod"),
                    (lambda x: lax.integer_pow(x, 2), "integer_pow"), (lax.square, "square"),
                    (lambda x: lax.top_k(x, 1)[0], "top_k")):
        out = one(f, Bound.top((2,)))
        assert out.why is not None and out.why.primitive.name == name, name


def test_top_k_on_three_axes():
    lo = np.arange(24.0).reshape(3, 2, 4)
    vals, idx = interp(lambda x: lax.top_k(x, 2), [box(lo, lo + 0.5)])
    eq(vals, np.broadcast_to(lo.min(-1, keepdims=True), (3, 2, 2)), np.broadcast_to(lo.max(-1, keepdims=True) + 0.5,
                                                                                   (3, 2, 2)))
    eq(idx, np.zeros((3, 2, 2)), np.full((3, 2, 2), 3.0))
    vals, idx = interp(lambda x: lax.top_k(x, 1), [box(lo, lo + 0.5)])
    assert vals.shape == (3, 2, 1) and idx.shape == (3, 2, 1)


def test_concatenate_on_the_second_axis_and_of_two_forms():
    a = box([[1.0, 2.0], [3.0, 4.0]], [[1.5, 2.5], [3.5, 4.5]])
    b = box([[9.0], [8.0]], [[9.5], [8.5]])
    eq(one(lambda x, y: lax.concatenate([x, y], 1), a, b), [[1.0, 2.0, 9.0], [3.0, 4.0, 8.0]],
       [[1.5, 2.5, 9.5], [3.5, 4.5, 8.5]])
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v: lax.concatenate([v[:, :2], v[:, 2:], 2.0 * v[:, :1]], 1), x)
    eye = np.eye(3)
    want = np.stack([eye[0], eye[1], eye[2], 2 * eye[0]])
    np.testing.assert_array_equal(out.lin.A["X"][0][0], want)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], want)
    out = one(lambda v: lax.concatenate([v[:, :2], jnp.full((1, 1), 3.0, F32)], 1), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(out.lin.chi, [[0.0, 0.0, 3.0]])


def test_split_along_records_and_of_a_box_then_used():
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda v: lax.split(v, (1, v.shape[0] - 1), 0))(jax.ShapeDtypeStruct((m,), F32))
    outs = Run(Bounds(), {"m": 4}).program(closed, [box([-1.0], [2.0])])
    assert len(outs) == 2 and all((o.lo.tolist(), o.hi.tolist()) == ([-1.0], [2.0]) for o in outs)
    out = one(lambda v: lax.split(v, (1, 2), 0)[1] * 2.0 + 1.0, box([0.0, 1.0, 2.0], [0.5, 1.5, 2.5]))
    eq(out, [3.0, 5.0], [4.0, 6.0])
    out = one(lambda v: lax.split(v, (1, 1), 0)[0], Bound.top((2,), "the prior"))
    assert out.why == "the prior"


def test_pad_fixed_axes_of_records_and_forms():
    (m,) = export.symbolic_shape("m")
    # the record axis unpadded, a fixed axis padded: slot by slot
    closed = jax.make_jaxpr(lambda v: lax.pad(v, 5.0, ((0, 0, 0), (1, 0, 1))))(jax.ShapeDtypeStruct((m, 2), F32))
    [out] = Run(Bounds(), {"m": 4}).program(closed, [box([[0.0, 1.0]], [[0.5, 1.5]])])
    eq(out, [[5.0, 0.0, 5.0, 1.0]], [[5.0, 0.5, 5.0, 1.5]])
    # the record axis padded: the hull of the values and the padding
    closed = jax.make_jaxpr(lambda v: lax.pad(v, 5.0, ((1, 0, 0),)))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds(), {"m": 4}).program(closed, [box([0.0], [1.0])])
    eq(out, [0.0], [5.0])
    # negative low padding on a length-3 axis, interior padding of a length-2 axis
    out = one(lambda v: lax.pad(v, 0.0, ((-1, 0, 0),)), box([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    eq(out, [2.0, 3.0], [2.0, 3.0])
    out = one(lambda v: lax.pad(v, -1.0, ((0, -1, 2),)), box([1.0, 2.0], [1.0, 2.0]))
    eq(out, [1.0, -1.0, -1.0], [1.0, -1.0, -1.0])
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda v: lax.pad(v, 2.0, ((0, 0, 0), (1, 1, 0))), x)
    np.testing.assert_array_equal(out.lin.clo, [[2.0, 0.0, 0.0, 2.0]])
    np.testing.assert_array_equal(out.lin.chi, [[2.0, 0.0, 0.0, 2.0]])
    want = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    np.testing.assert_array_equal(out.lin.A["X"][0][0], want)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], want)


def test_dot_general_forms_with_batch_axes_and_their_constant_parts():
    x = data_input((1, 3), "X", -1.0, 1.0)
    x.lin.clo[:] = x.lin.chi[:] = np.array([[1.0, 0.0, 0.0]])          # x = e_0 + the record
    w = np.arange(6.0).reshape(1, 3, 2)
    out = one(lambda v, ww: lax.dot_general(v, ww, (((1,), (1,)), ((0,), (0,)))), x, Bound.point(w))
    np.testing.assert_array_equal(out.lin.A["X"][0][0], w[0].T)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], w[0].T)
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 1.0]])            # e_0 . w = w[0, 0, :]
    np.testing.assert_array_equal(out.lin.chi, [[0.0, 1.0]])


def test_integer_pow_zero_and_overflow():
    out = one(lambda x: lax.integer_pow(x, 0), box([-2.0, 0.0], [1.0, 0.0]))
    eq(out, [1.0, 1.0], [1.0, 1.0])
    # past the float32 range the value is an infinity: undefined (0 * it is NaN)
    out = one(lambda x: lax.integer_pow(x, 2), box([1e200], [1e201]))
    assert out.nan and (out.lo[0], out.hi[0]) == (-INF, INF)
    out = one(lambda x: lax.integer_pow(x, 2), box([1e19], [1.8e19]))          # 3.24e38 < float32's 3.4028e38
    assert not out.nan and out.hi[0] >= 1.8e19 ** 2
    out = one(lambda x: lax.integer_pow(x, 2), box([1e19], [1.9e19]))          # 3.61e38: an infinity
    assert out.nan
    # an unbounded value to a power above 8: taken as overflowing (r ** 999 is inf at r = 2)
    assert one(lambda x: lax.integer_pow(x, 9), box([-INF], [INF])).nan
    assert not one(lambda x: lax.integer_pow(x, 8), box([-INF], [INF])).nan
    out = _mono("exp", 700.0, 800.0)
    assert out.nan
    out = _mono("exp", 80.0, 88.0)                                          # exp(88) = 1.65e38: finite
    assert not out.nan and out.hi[0] >= np.exp(88.0)
    assert _mono("exp", 80.0, 88.75).nan                                    # exp(88.75) = inf in float32


def test_reduce_sum_record_counts_and_float_errors():
    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda v: jnp.sum(v))(jax.ShapeDtypeStruct((m,), F32))
    [out] = Run(Bounds()).program(closed, [box([1.0], [2.0])])        # no record count given: one record
    eq(out, 1.0, 2.0)
    [out] = Run(Bounds(), {"m": 2}).program(closed, [box([1.0], [2.0])])
    eq(out, 2.0, 4.0)
    # a sum over two record axes (a pairwise table): m^2 terms
    closed = jax.make_jaxpr(lambda v: jnp.sum(v))(jax.ShapeDtypeStruct((m, m), F32))
    [out] = Run(Bounds(), {"m": 3}).program(closed, [box([[1.0]], [[2.0]])])
    eq(out, 9.0, 18.0)
    # overflow and -inf + inf: no floating-point error escapes, the ends are infinite / unbounded
    out = one(lambda v: jnp.sum(v), box([0.0, 0.0], [1e308, 1e308]))
    eq(out, 0.0, INF)
    out = one(lambda v: jnp.sum(v), Bound.point(np.array([-INF, INF])))
    eq(out, -INF, INF)


def test_bound_predicates_and_widening_keep_the_reason():
    assert Bound.box([0.0, -1.0], [1.0, 2.0]).bounded()
    assert not Bound(np.array([0.0, -INF]), np.array([1.0, 2.0])).bounded()
    assert not Bound(np.array([0.0, 0.0]), np.array([1.0, INF])).bounded()
    w = Bounds().widen(None, Bound.box([0.0], [1.0], "the loop"), None)
    assert w.why == "the loop" and not w.bounded()
    # same: the lower coefficients compared with the lower ones
    x = data_input((1, 2), "X", -1.0, 1.0)
    y = data_input((1, 2), "X", -1.0, 1.0)
    y.lin.A["X"] = (np.zeros_like(x.lin.A["X"][0]), x.lin.A["X"][1])
    assert not Bounds().same(y, x) and not Bounds().same(x, y)


def test_norm_facts_through_arithmetic_and_structure():
    # a row of the 3x3 identity gathered at an unknown index: box [0, 1]^3, Euclidean norm <= 1 along axis 1
    def row(i):
        return jnp.eye(3, dtype=F32)[i]
    ib = box([0.0], [2.0])
    def fact(fn, axis=1):
        out = one(lambda i: fn(row(i)), ib, dtypes=[I32])
        return out.nrm[axis] if out.nrm and axis in out.nrm else None
    n = fact(lambda r: r)
    assert n.shape == (1, 1) and 1.0 <= n[0, 0] <= 1.0 + 1e-15
    # |s c| <= max|s| |c| for a box s (either order), |c_a + c_b| <= |c_a| + |c_b|, |-c| = |c|
    n = fact(lambda r: r * jnp.asarray([[2.0, -3.0, 1.0]], F32))
    assert 3.0 <= n[0, 0] <= 3.0 * (1 + 1e-15)
    n = fact(lambda r: jnp.asarray([[2.0, -3.0, 1.0]], F32) * r)
    assert 3.0 <= n[0, 0] <= 3.0 * (1 + 1e-15)
    n = fact(lambda r: r + 2.0 * r)
    assert 3.0 <= n[0, 0] <= 3.0 * (1 + 1e-14)
    n = fact(lambda r: r - r)
    assert 2.0 <= n[0, 0] <= 2.0 * (1 + 1e-14)
    n = fact(lambda r: -r)
    assert 1.0 <= n[0, 0] <= 1.0 + 1e-15
    # a sum with a constant (a point: its own norm, sqrt 3 for ones) and with a box (no fact)
    n = fact(lambda r: r + jnp.ones((1, 3), F32))
    assert 1.0 + math.sqrt(3.0) <= n[0, 0] <= (1.0 + math.sqrt(3.0)) * (1 + 1e-14)
    # plus a box [0, 1]^3 (no fact of its own): |c_a|^2 - sum min c_a^2 + sum max (c_a + c_b)^2 over the box's
    # support = 1 - 0 + 3 * 2^2, so sqrt(13); the true supremum, e_i + (1, 1, 1), is sqrt(6)
    n = one(lambda i, b: row(i) + b, ib, box([[0.0] * 3], [[1.0] * 3]), dtypes=[I32, F32]).nrm[1]
    assert math.sqrt(13.0) <= n[0, 0] <= math.sqrt(13.0) * (1 + 1e-14) and n[0, 0] >= math.sqrt(6.0)
    # a sum re-counting one coordinate: e_i - 2 e_0 has norm at most sqrt(1 - 0 + (1 - 2)^2)... over the
    # coordinate 0's box [0, 1] (e_i's entry there): 1 - 0 + max((0 - 2)^2, (1 - 2)^2) = 5, where the triangle
    # inequality gives 1 + 2 = 3 (the true supremum: i != 0 gives sqrt(1 + 4) = sqrt(5))
    n = fact(lambda r: r - jnp.asarray([[2.0, 0.0, 0.0]], F32))
    assert math.sqrt(5.0) <= n[0, 0] <= math.sqrt(5.0) * (1 + 1e-14)
    # structure: the fact moves with its axis
    out = one(lambda i: row(i).T, ib, dtypes=[I32])
    assert set(out.nrm) == {0} and out.nrm[0].shape == (1, 1)
    out = one(lambda i: row(i).reshape(3), ib, dtypes=[I32])
    assert set(out.nrm) == {0} and out.nrm[0].shape == (1,)
    out = one(lambda i: lax.broadcast_in_dim(row(i), (2, 1, 3), (1, 2)), ib, dtypes=[I32])
    assert set(out.nrm) == {2} and out.nrm[2].shape == (2, 1, 1)
    outs = interp(lambda i: lax.split(row(i), (1, 2), 1), [ib], dtypes=[I32])
    assert all(set(o.nrm) == {1} and 1.0 <= o.nrm[1][0, 0] <= 1.0 + 1e-15 for o in outs)


def test_iv_dot_exact_shortcut_needs_a_normal_finite_product():
    # 0.5 * (1.5 2^-1022 + 2^-1074): a power of two times a normal number, but the product is subnormal and
    # loses its last bit; and 2 * 1.5e308 overflows: neither is exact, and both ends must hold the real product
    b = 1.5 * 2.0 ** -1022 + 2.0 ** -1074
    lo, hi = B.iv_dot(np.array([[0.5]]), np.array([[0.5]]), np.array([b]), np.array([b]), DN_MATVEC)
    assert Fraction(float(lo[0])) <= Fraction(1, 2) * Fraction(b) <= Fraction(float(hi[0]))
    lo, hi = B.iv_dot(np.array([[2.0]]), np.array([[2.0]]), np.array([1.5e308]), np.array([1.5e308]), DN_MATVEC)
    assert lo[0] <= 1.5e308 and hi[0] == INF
    # a point above 2^1023 is its own midpoint (its midpoint was inf, and the lower end of 1.5e308 * 1 above it)
    lo, hi = B.iv_dot(np.array([[1.5e308]]), np.array([[1.5e308]]), np.array([1.0]), np.array([1.0]), DN_MATVEC)
    assert lo[0] <= 1.5e308 <= hi[0]
    lo, hi = B.iv_dot(np.array([[1.5e308]]), np.array([[1.7e308]]), np.array([0.5]), np.array([0.5]), DN_MATVEC)
    assert lo[0] <= 0.75e308 and hi[0] >= 0.85e308 and np.isfinite(hi[0])
    mid, rad = B._mid_rad(np.array([1.5e308, 5e-324, -1.7e308]), np.array([1.7e308, 5e-324, 1.7e308]))
    assert mid.tolist() == [1.6e308, 5e-324, 0.0] and rad[1] == 0.0 and rad[2] >= 1.7e308
    assert Fraction(float(rad[0])) >= max(Fraction(1.7e308) - Fraction(float(mid[0])), Fraction(float(mid[0])) - Fraction(1.5e308))
    # the smallest normal product is exact
    lo, hi = B.iv_dot(np.array([[0.5]]), np.array([[0.5]]), np.array([2.0 ** -1021]), np.array([2.0 ** -1021]),
                      DN_MATVEC)
    assert (lo[0], hi[0]) == (2.0 ** -1022, 2.0 ** -1022)


def test_hull_all_is_the_hull_of_every_entry():
    out = B._hull_all(Bound.box([2.0], [3.0]), (2, 2), None, [])
    eq(out, np.full((2, 2), 2.0), np.full((2, 2), 3.0))
    out = B._hull_all(Bound.box([2.0, -1.0], [3.0, 0.0]), (3,), None, [])
    eq(out, [-1.0] * 3, [3.0] * 3)
    out = B._hull_all(Bound.box(np.zeros((0,)), np.zeros((0,))), (2,), None, [])
    eq(out, [0.0, 0.0], [0.0, 0.0])
    out = B._hull_all(Bound.top((2,)), (1,), "eqn", [Bound.top((2,))])
    assert out.why == "eqn"


def test_structural_ops_keep_the_reason_of_an_unbounded_operand():
    # log of [0, 1] is unbounded below, made so by the log; moved by a structural op it is still the log's doing
    b = box([[0.0, 1.0]], [[1.0, 2.0]])
    ops = [lambda y: y.T, lambda y: y.reshape(2), lambda y: lax.rev(y, (1,)), lambda y: y[0],
           lambda y: jnp.broadcast_to(y, (3, 2)), lambda y: y[:, :1]]
    for op in ops:
        out = one(lambda x: op(jnp.log(x)), b)
        assert not out.bounded() and out.why is not None and out.why.primitive.name == "log", out.why


def test_exact_power_is_the_mask_of_powers_that_are_floats():
    # by hand, with Fractions: 3^2 = 9 and (-2)^2 = 4 are floats; 0.1^2 is not (0.1's square needs more than 53
    # bits); 2^-600 squared underflows to 0 (not 2^-1200); 1e200^2 overflows to inf; inf and nan are never exact
    x = np.array([3.0, 0.1, -2.0, 2.0 ** -600, 1e200, INF, np.nan])
    with np.errstate(all="ignore"):
        p = x ** 2
    got = B._exact_power(x, p, 2)
    assert got.dtype == np.bool_ and got.shape == (7,)
    assert got.tolist() == [True, False, True, False, False, False, False]
    # the float that was computed is what is checked: 4 + 1 ulp is not 2^2
    assert B._exact_power(np.array([2.0, 2.0]), np.array([4.0, up(4.0)]), 2).tolist() == [True, False]
    # odd k: 1.5^3 = 3.375 exactly, (-0.5)^3 = -0.125 exactly, (1/3)^3 is not a float
    x = np.array([1.5, -0.5, 1.0 / 3.0])
    assert B._exact_power(x, x ** 3, 3).tolist() == [True, True, False]
    # broadcasting: a scalar base against an array of powers, and an array of bases against one power
    assert B._exact_power(2.0, np.array([4.0, 5.0]), 2).tolist() == [True, False]
    assert B._exact_power(np.array([[2.0], [-2.0], [3.0]]), 4.0, 2).tolist() == [[True], [True], [False]]
    # at most `limit` entries are checked: 64 are (every 1.0^2 exact), 65 are reported inexact; and limit itself
    assert B._exact_power(np.ones(64), np.ones(64), 2).all()
    assert not B._exact_power(np.ones(65), np.ones(65), 2).any()
    assert B._exact_power(np.ones(3), np.ones(3), 2, limit=3).all()
    assert not B._exact_power(np.ones(3), np.ones(3), 2, limit=2).any()
    assert B._exact_power(np.ones(65), np.ones(65), 2, limit=65).all()


def test_checked_makes_an_integer_result_outside_its_dtype_unbounded():
    # the rules compute in real arithmetic; an integer that leaves its dtype's range wraps around, so the output
    # may be any value of the dtype: unbounded, naming the equation.  The dtype's own ends are inside it.
    S = jax.ShapeDtypeStruct
    ck = Bounds().checked
    mul8, lt8 = jax.make_jaxpr(lambda a, b: (a * b, a < b))(S((2,), jnp.int8), S((2,), jnp.int8)).jaxpr.eqns

    def top(out, eqn):
        return out.shape == (2,) and np.all(out.lo == -INF) and np.all(out.hi == INF) and out.why is eqn

    ends = box([-128.0, 0.0], [0.0, 127.0])
    assert ck(mul8, [ends])[0] is ends
    assert top(ck(mul8, [box([-129.0, 0.0], [0.0, 127.0])])[0], mul8)       # one entry one below the range
    assert top(ck(mul8, [box([-128.0, 0.0], [0.0, 128.0])])[0], mul8)       # one entry one above
    (mulu8,) = jax.make_jaxpr(lambda a: a * a)(S((2,), jnp.uint8)).jaxpr.eqns
    ok = box([0.0, 0.0], [255.0, 1.0])
    assert ck(mulu8, [ok])[0] is ok
    assert top(ck(mulu8, [box([-1.0, 0.0], [0.0, 1.0])])[0], mulu8)
    (mul32,) = jax.make_jaxpr(lambda a: a * a)(S((2,), jnp.int32)).jaxpr.eqns
    ok = box([-2.0 ** 31, 0.0], [0.0, 2.0 ** 31 - 1])
    assert ck(mul32, [ok])[0] is ok
    assert top(ck(mul32, [box([0.0, 0.0], [2.0 ** 31, 0.0])])[0], mul32)
    # an end that is already infinite keeps the equation that made it so (the finite end below the range too)
    earlier = Bound(np.array([-1e9, 0.0]), np.array([INF, 0.0]), None, "earlier")
    assert ck(mul8, [earlier])[0] is earlier
    # booleans (a 0/1 box whatever a rule says) are not checked; floats within their range neither
    b = box([0.0, 0.0], [5.0, 1.0])
    assert ck(lt8, [b])[0] is b
    (fmul,) = jax.make_jaxpr(lambda a: a * a)(S((2,), F32)).jaxpr.eqns
    b = box([1e30, -1e30], [1e31, 0.0])
    assert ck(fmul, [b])[0] is b
    # a float past its range is an overflow (an infinity: undefined); one nearer 0 than the smallest normal reaches 0
    over = ck(fmul, [box([1e40, -1e40], [1e41, 0.0])])[0]
    assert over.nan and np.all(over.lo == -INF) and np.all(over.hi == INF) and over.why is fmul
    sub = ck(fmul, [box([1e-40, -2.0], [1.0, -1e-45])])[0]
    assert list(sub.lo) == [0.0, -2.0] and list(sub.hi) == [1.0, 0.0] and not sub.nan
    # several outputs: top_k's float values are left, its int32 indices checked
    (tk,) = jax.make_jaxpr(lambda a: lax.top_k(a, 2))(S((3,), F32)).jaxpr.eqns
    v, i_ok, i_bad = box([1e30, 1e30], [1e31, 1e31]), box([0.0, 0.0], [2.0, 2.0]), box([0.0, 0.0], [2.0 ** 31, 2.0])
    got = ck(tk, [v, i_ok])
    assert got[0] is v and got[1] is i_ok
    got = ck(tk, [v, i_bad])
    assert got[0] is v and top(got[1], tk)
    assert ck(tk, [v]) == [v]                                                  # fewer outputs than outvars
    assert ck(mul8, [None]) == [None]                                          # not a Bound: left
    # a PRNG key output (no numpy dtype) before an integer one: the integer one is still checked
    key_struct = jax.eval_shape(jax.random.key, 0)                            # traced, not run: nothing compiles
    (call,) = jax.make_jaxpr(jax.jit(lambda k, a: (k, a * a)))(key_struct, S((2,), jnp.int32)).jaxpr.eqns
    key = Bound.top(())
    got = ck(call, [key, box([0.0, 0.0], [2.0 ** 31, 0.0])])
    assert got[0] is key and top(got[1], call)
    # an output already unbounded before one that leaves its range: the second is still checked
    (two,) = jax.make_jaxpr(jax.jit(lambda a, b: (a * a, b * b)))(S((2,), jnp.int32), S((2,), jnp.int32)).jaxpr.eqns
    earlier = Bound.top((2,), "earlier")
    got = ck(two, [earlier, box([0.0, 0.0], [2.0 ** 31, 0.0])])
    assert got[0] is earlier and top(got[1], two)
