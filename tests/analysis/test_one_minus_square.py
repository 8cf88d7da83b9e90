"""The primitive ``one_minus_square(u)`` = 1 - u^2, in which JAX 0.11.2 writes the derivative of tanh
(``t * one_minus_square(tanh(x))``; JAX <= 0.11.0 writes ``(t + t u)(1 - u)``, the relation ``one_minus_square``
of bounds.py).  Without a rule the analyzer treated it as unknown: every model with a tanh was refused on that
JAX (found on the GPU machine, issue 24).  The JAX installed here may not have it, so the tests bind a primitive
of that name (the interpreters match primitives by name) with the same abstract value; the ends are derived by
hand: 1 - u^2 over [lo, hi] is [1 - max u^2, 1 - min u^2]."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.extend.core import Primitive
from jax import lax
from jax.interpreters import ad

from bayesdp.analysis import analyze
from bayesdp.analysis.domain import Domain
from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import bounds as B
from bayesdp.analysis.structure.bounds import Bound, Bounds, data_input

INF = np.inf
F32 = jnp.float32

oms_p = Primitive("one_minus_square")
oms_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
oms_p.def_impl(lambda x: (1 - x) * (1 + x))
ad.defjvp(oms_p, lambda t, x: -2.0 * x * t)


def oms(x):
    return oms_p.bind(x)


@jax.custom_jvp
def tanh_new(x):
    """tanh whose derivative is written as JAX 0.11.2 writes tanh's: t * one_minus_square(tanh(x))."""
    return jnp.tanh(x)


@tanh_new.defjvp
def _tanh_new_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, t * oms(y)


def one(fn, *ins):
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(b.shape, F32) for b in ins])
    return Run(Bounds(), {"m": 1}).program(closed, list(ins))[0]


def box(lo, hi):
    return Bound.box(np.asarray(lo, np.float64), np.asarray(hi, np.float64))


@pytest.mark.parametrize("lo, hi, want", [
    ([-0.5], [0.25], ([0.75], [1.0])),      # holds 0: the upper end 1; max |u| = 0.5: 1 - 0.25
    ([-1.0], [1.0], ([0.0], [1.0])),        # tanh's box: (1 - 1)(1 + 1) = 0 exactly, never below
    ([1.5], [2.0], ([-3.0], [-1.25])),      # positive box: 1 - 4 and 1 - 2.25
    ([-2.0], [-1.5], ([-3.0], [-1.25])),    # negative box: the same by symmetry
    ([3.0], [INF], ([-INF], [-8.0])),       # unbounded: the lower end -inf, the upper 1 - 9
    ([-INF], [INF], ([-INF], [1.0])),
    ([INF], [INF], ([-INF], [-INF])),       # u = inf exactly: 1 - u^2 = -inf at both ends (not unbounded above)
])
def test_ends(lo, hi, want):
    out = one(oms, box(lo, hi))
    np.testing.assert_array_equal(out.lo, want[0])
    np.testing.assert_array_equal(out.hi, want[1])


def test_inexact_ends_are_rounded_outward():
    # u in [0.1, 0.3]: 1 - 0.09 and 1 - 0.01 are not floats; the ends hold the exact values (fractions)
    from fractions import Fraction
    out = one(oms, box([0.1], [0.3]))
    assert Fraction(out.lo[0]) <= 1 - Fraction(0.3) ** 2 <= Fraction(out.lo[0]) + Fraction(2 ** -50)
    assert Fraction(out.hi[0]) - Fraction(2 ** -50) <= 1 - Fraction(0.1) ** 2 <= Fraction(out.hi[0])


def test_random_boxes_hold_every_value():
    rng = np.random.default_rng(7)
    from fractions import Fraction
    for _ in range(200):
        a, b = np.sort(rng.uniform(-3, 3, 2))
        out = one(oms, box([a], [b]))
        for u in np.linspace(a, b, 7):
            v = 1 - Fraction(float(u)) ** 2
            assert Fraction(out.lo[0]) <= v <= Fraction(out.hi[0])


def test_tanh_derivative_in_the_new_form():
    # d tanh(a) in direction t = 3 over all a: [0, 3] (sech^2 in [0, 1]), as the relation gives for the old form
    out = one(lambda a, t: jax.jvp(tanh_new, (a,), (t,))[1], box([-INF], [INF]), box([3.0], [3.0]))
    np.testing.assert_array_equal(out.lo, [0.0])
    np.testing.assert_array_equal(out.hi, [3.0])
    # the tangent's form is kept, scaled by [1 - max u^2, 1 - min u^2] = [0.75, 0.75] for u = 0.5
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda t, u: t * oms(u), x, box([[0.5, 0.5]], [[0.5, 0.5]]))
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], 0.75 * np.eye(2))
    np.testing.assert_array_equal(hi[0], 0.75 * np.eye(2))


def _bernoulli(link):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=3.0 * link(X @ w)), obs=y)
    return model


def _tanh_jvp_as_in_jax_0_11_2(primals, tangents, **params):
    """JAX 0.11.2's derivative of tanh_p: the tangent times one_minus_square of the answer."""
    (x,), (t,) = primals, tangents
    ans = lax.tanh_p.bind(x, **params)
    if type(t) is ad.Zero:
        return ans, t
    return ans, t * oms(ans)


@pytest.fixture
def fresh_traces():
    """JAX caches traced programs: none traced under the replaced derivative may outlive the test."""
    jax.clear_caches()
    yield
    jax.clear_caches()


def test_a_model_with_tanh_in_the_new_form_certifies_like_the_old(monkeypatch, fresh_traces):
    # logits 3 tanh(x.w), y in {0, 1}: |d log p / d eta| <= 1 times 3 sech^2 <= 3, times |x| <= R: 3 R.  Without
    # the rule one_minus_square is an unknown primitive: the model is refused (as it was on JAX 0.11.2)
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (20, 3)).astype(np.float32)
    y = rng.integers(0, 2, 20).astype(np.float32)
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    R = dom.get("X").certified_norm
    old = analyze(_bernoulli(jnp.tanh), {"X": X, "y": y}, dom).constants.record_grad_bound
    monkeypatch.setitem(ad.primitive_jvps, lax.tanh_p, _tanh_jvp_as_in_jax_0_11_2)
    program = jax.make_jaxpr(lambda a, t: jax.jvp(jnp.tanh, (a,), (t,))[1])(1.0, 1.0)
    assert "one_minus_square" in {e.primitive.name for e in program.jaxpr.eqns}
    new = analyze(_bernoulli(jnp.tanh), {"X": X, "y": y}, dom).constants.record_grad_bound
    assert old is not None and new is not None and new >= 3.0 * R
    assert new == pytest.approx(3.0 * R, rel=1e-6) and new == pytest.approx(old, rel=1e-6)
    monkeypatch.setitem(B.RULES, "one_minus_square", B.unknown_rule)
    assert analyze(_bernoulli(jnp.tanh), {"X": X, "y": y}, dom).constants.record_grad_bound is None
