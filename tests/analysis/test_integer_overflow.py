"""Integer arithmetic wraps around (issue 25: tests that catch a wrong certificate).  The bound interpreter computes
in real arithmetic; an integer result whose box leaves its dtype's range is replaced by the whole range, so a
predictor that reads a wrapped value is bounded for every value it may take.  Found by a fuzz helper: with
``g in 0..2000`` (int32), ``g ** 3`` is negative for ``g >= 1291`` (``1291 ** 3 = -2143282125``)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.structure import Bound, Bounds, Run

m = 24
RNG = np.random.default_rng(3)
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
G = (np.arange(m) * 80).astype(np.int32)
Y = (np.arange(m) % 2).astype(float)
WRAPS = {
    "cube": lambda g: g ** 3,
    "product": lambda g: g * g * g,
    "scaled": lambda g: g * 3000000,
    "shifted": lambda g: g + 2147483000,
}


@pytest.mark.parametrize("name", sorted(WRAPS))
def test_a_wrapped_integer_factor_is_bounded_by_what_it_may_be(name):
    wrap = WRAPS[name]
    assert int(np.min([int(wrap(jnp.int32(g))) for g in range(0, 2001, 7)])) < 0    # it does wrap in int32

    def model(X, g, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        c = jnp.where(wrap(g) < 0, 100.0, 1.0)
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=(X @ w) * c), obs=y)
    an = analyze(model, {"X": X, "g": G, "y": Y}, Domain.parse(["X.norm=1", "g.values=0..2000", "y.values=0,1"]))
    R = Domain.parse(["X.norm=1"]).get("X").certified_norm
    # the true supremum: 100 |x| (factor 100 where the value wrapped, |d/deta| -> 1)
    assert an.constants.record_grad_bound >= 100.0 * (1 - 1e-9)
    assert an.constants.record_grad_bound == pytest.approx(100.0 * R, rel=1e-6)


def test_in_range_integer_arithmetic_keeps_its_box():
    closed = jax.make_jaxpr(lambda g: g * 3 + 1)(jnp.int32(0))
    [b] = Run(Bounds()).program(closed, [Bound.box(0.0, 2000.0)])
    assert (float(b.lo), float(b.hi)) == (1.0, 6001.0)
    # out of range: unbounded, naming the equation that may overflow
    closed = jax.make_jaxpr(lambda g: g * 3000000)(jnp.int32(0))
    [b] = Run(Bounds()).program(closed, [Bound.box(0.0, 2000.0)])
    assert not b.bounded() and b.why.primitive.name == "mul"
    # unsigned: wraps below 0
    closed = jax.make_jaxpr(lambda g: g - jnp.uint32(1))(jnp.uint32(0))
    [b] = Run(Bounds()).program(closed, [Bound.box(0.0, 5.0)])
    assert not b.bounded() and b.why.primitive.name == "sub"
    # at the edge of the range: still in it
    closed = jax.make_jaxpr(lambda g: g + 2147481647)(jnp.int32(0))
    [b] = Run(Bounds()).program(closed, [Bound.box(0.0, 2000.0)])
    assert (float(b.lo), float(b.hi)) == (2147481647.0, float(np.iinfo(np.int32).max))
