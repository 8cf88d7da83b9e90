"""JAX 0.11's derivative weight of ``min`` / ``max``: ``min(x, y)``'s tangent in ``x`` is ``t * w`` with
``w = select_n(y > x, select_n(y == x, 0, 0.5), 1)`` (1 where x < y, 1/2 where x == y, 0 where x > y), and
``max``'s with ``x > y``; JAX <= 0.10 writes ``[x == min(x, y)] / (1 + [y == min(x, y)])``.  Without a rule for
the new form the analyzer lost the relation "``w != 0`` only where ``x <= y``": sound, but a capped squared loss
``jnp.minimum(r ** 2, c)`` was refused (found on the GPU machine's JAX 0.11.2, issue 24).  The JAX installed here
may be older, so these tests install min's and max's derivative rules as JAX 0.11.2 writes them (read off its
jaxprs on that machine) for the test's duration; the exact values are derived by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.interpreters import ad

from bayesdp.analysis import analyze
from bayesdp.analysis.domain import Domain
from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure.bounds import Bound, Bounds

from test_switch_continuity import _data, _regression
from test_switch_continuity import test_derivative_bounds_hold_with_min_and_max_weights as _random_check

F32 = jnp.float32
U32 = 2.0 ** -24


def _weight(first, second, ans):
    """JAX 0.11.2's weight of an operand: select_n(first > second, select_n(first == second, 0, 0.5), 1), the
    constants broadcast to the output's shape (as its jaxprs show)."""
    one, zero, half = (lax.full_like(ans, v) for v in (1.0, 0.0, 0.5))
    return lax.select_n(lax.gt(first, second), lax.select_n(lax.eq(first, second), zero, half), one)


@pytest.fixture
def jax011():
    """min's and max's derivative rules as JAX 0.11.2 writes them, for the test (restored after)."""
    saved = {p: ad.primitive_jvps[p] for p in (lax.min_p, lax.max_p)}
    ad.defjvp2(lax.min_p, lambda g, ans, x, y: lax.mul(g, _weight(y, x, ans)),
               lambda g, ans, x, y: lax.mul(g, _weight(x, y, ans)))
    ad.defjvp2(lax.max_p, lambda g, ans, x, y: lax.mul(g, _weight(x, y, ans)),
               lambda g, ans, x, y: lax.mul(g, _weight(y, x, ans)))
    yield
    ad.primitive_jvps.update(saved)


min_new, max_new = lax.min, lax.max


def one(fn, *ins):
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(b.shape, F32) for b in ins])
    return Run(Bounds(), {"m": 1}).program(closed, list(ins))[0]


def box(lo, hi):
    return Bound.box(np.asarray(lo, np.float64), np.asarray(hi, np.float64))


def test_the_emulation_is_jax_0_11_s_derivative(jax011):
    # the values: 1 below, 1/2 at, 0 above the other operand (both JAX versions agree on these)
    x = jnp.asarray([0.5, 1.0, 2.0], F32)
    _, t = jax.jvp(lambda a: min_new(a, 1.0), (x,), (jnp.ones(3, F32),))
    np.testing.assert_array_equal(np.asarray(t), [1.0, 0.5, 0.0])
    _, t = jax.jvp(lambda a: max_new(a, 1.0), (x,), (jnp.ones(3, F32),))
    np.testing.assert_array_equal(np.asarray(t), [0.0, 0.5, 1.0])
    assert "select_n" in str(jax.make_jaxpr(lambda a, t: jax.jvp(lambda x: min_new(x * x, 1.0), (a,),
                                                                  (t,))[1])(x, x))


# fl(a * a) <= 1 gives |a| <= sqrt(1 / (1 - u)); the derivative 2 a t w is in [-2 s, 2 s] for t in [0, 1]
_S = 2.0 * float(np.sqrt(1.0 / (1.0 - U32)))


@pytest.mark.parametrize("swapped", [False, True])
def test_capped_square_derivative_is_narrowed(jax011, swapped):
    f = (lambda a: min_new(1.0, a * a)) if swapped else (lambda a: min_new(a * a, 1.0))
    out = one(lambda a, t: jax.jvp(f, (a,), (t,))[1], box([-3.0] * 3, [3.0] * 3), box([0.0] * 3, [1.0] * 3))
    # the boxes alone: 2 * 3 * 1 = 6; the relation: |a| <= 1 (up to rounding) wherever w != 0
    assert np.all(out.hi >= 2.0) and np.all(out.hi <= _S + 1e-12), out
    assert np.all(out.lo <= -2.0) and np.all(out.lo >= -_S - 1e-12), out


def test_under_vmap_over_a_tangent_basis(jax011):
    f = lambda a: min_new(a * a, 1.0)
    fn = lambda a, T: jax.vmap(lambda t: jax.jvp(f, (a,), (t,))[1])(T)
    out = one(fn, box([-3.0] * 3, [3.0] * 3), box(np.zeros((3, 3)), np.ones((3, 3))))
    assert out.shape == (3, 3)
    assert np.all(out.hi >= 2.0) and np.all(out.hi <= _S + 1e-12)
    assert np.all(out.lo <= -2.0) and np.all(out.lo >= -_S - 1e-12)


def test_max_weight_narrows_the_other_way_and_a_wrong_side_is_not_narrowed(jax011):
    # -max(-(a a), -1) = min(a a, 1): |derivative| <= 2 s; max(a a, 1): w != 0 where a a >= 1, so 2 a t reaches 6
    neg_cap = lambda a: -max_new(-(a * a), -1.0)
    out = one(lambda a, t: jax.jvp(neg_cap, (a,), (t,))[1], box([-3.0], [3.0]), box([1.0], [1.0]))
    assert out.hi[0] <= _S + 1e-12 and out.lo[0] >= -_S - 1e-12 and out.hi[0] >= 2.0
    floor = lambda a: max_new(a * a, 1.0)
    out = one(lambda a, t: jax.jvp(floor, (a,), (t,))[1], box([-3.0], [3.0]), box([1.0], [1.0]))
    assert out.hi[0] >= 6.0 and out.lo[0] <= -6.0


def test_a_select_that_is_not_a_weight_is_not_narrowed(jax011):
    # the same shape with case 0 not zero (0.25 where neither comparison holds): no relation, the boxes' bound
    def fn(a, t):
        c = a * a
        one_ = jnp.ones_like(c)
        inner = lax.select_n(lax.eq(one_, c), jnp.full_like(c, 0.25), jnp.full_like(c, 0.5))
        return (t * (2.0 * a)) * lax.select_n(lax.gt(one_, c), inner, one_)
    out = one(fn, box([-3.0], [3.0]), box([1.0], [1.0]))
    assert out.hi[0] >= 6.0 and out.lo[0] <= -6.0
    # comparisons of different operands (a > 1 and c == 1): no relation either
    def fn2(a, t):
        c = a * a
        one_ = jnp.ones_like(c)
        inner = lax.select_n(lax.eq(one_, c), jnp.zeros_like(c), jnp.full_like(c, 0.5))
        return (t * (2.0 * a)) * lax.select_n(lax.gt(one_, a), inner, one_)
    out = one(fn2, box([-3.0], [3.0]), box([1.0], [1.0]))
    assert out.hi[0] >= 6.0 and out.lo[0] <= -6.0


@pytest.mark.parametrize("c", [1.0, 0.25])
def test_a_capped_squared_loss_certifies(jax011, c):
    """l = min(r^2, c) with JAX 0.11's weight: |l'| = 2 |r| w |x| <= 2 sqrt(c / (1 - u)) |x|, attained up to
    rounding (r just below sqrt(c), x = e_1); the analyzer must certify within those ends."""
    dom = Domain.parse(["X.norm=1", "y.min=-2", "y.max=2"])
    R = dom.get("X").certified_norm
    G = analyze(_regression(lambda r: jnp.minimum(r ** 2, c)), _data(), dom).constants.record_grad_bound
    derived = float(np.sqrt(np.float64(np.float32(c)) / (1.0 - U32)))
    assert G is not None and 2.0 * float(np.sqrt(c)) * R * (1 - 1e-6) <= G <= 2.0 * derived * R * (1 + 1e-9), G


@pytest.mark.parametrize("seed", range(6))
def test_random_min_and_max_derivatives_hold_their_bounds(jax011, seed):
    """The soundness check of test_switch_continuity (random g(op(a(r), c)) h(r), the derivative program's bounds
    checked at random points and at and next to c) with JAX 0.11's weights."""
    _random_check(seed)
