"""Issue 23: ``jnp.where(y >= 0, y, 0)`` (missing labels coded -1, masked out) certifies: where ``select_n``
chooses the compared variable, the comparison holds there, so the case's box is narrowed to the half-line it
implies.  The tests below fix every expected range by hand and try to fool the rule (the other branch, a
different variable, a negated copy, a broadcast predicate, a narrowing conversion, a predicate computed in
a loop body, the same body entered as a loop body)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.structure import Bound, Bounds, Run
from bayesdp.errors import DomainError


def _range(f, lo, hi, n=3):
    closed = jax.make_jaxpr(f)(jnp.zeros(n, jnp.float32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.full(n, lo), np.full(n, hi))])
    return float(b.lo.min()), float(b.hi.max())


@pytest.mark.parametrize("f, want", [
    (lambda y: jnp.where(y >= 0, y, 0), (0.0, 1.0)),            # chosen where y >= 0
    (lambda y: jnp.where(0 <= y, y, 0), (0.0, 1.0)),            # operands swapped
    (lambda y: jnp.where(y < 0, 0, y), (0.0, 1.0)),             # the false case
    (lambda y: jnp.where(y > 0.5, y, 5.0), (0.5, 5.0)),         # [0.5, 1] and {5}
    (lambda y: jnp.where(y <= -0.25, y, -3.0), (-3.0, -0.25)),  # [-1, -0.25] and {-3}
    (lambda y: jnp.where(y == 0.25, y, 0.0), (0.0, 0.25)),      # {0.25} and {0}
    (lambda y: jnp.where(y != 0.25, 0.0, y), (0.0, 0.25)),
    (lambda y: jnp.where(y >= 0, y, 0) * 2.0, (0.0, 2.0)),      # the narrowed box flows on
    (lambda y: jnp.where(y >= 0, y.astype(jnp.float64) if jax.config.jax_enable_x64 else y, 0), (0.0, 1.0)),
    (lambda y: jnp.where(y >= 0, 0, y), (-1.0, 0.0)),           # y chosen where y < 0: [-1, 0]
    (lambda y: jnp.where(jnp.less_equal(0.25, y), y, 0), (0.0, 1.0)),        # le 0.25 y: the constant first
    (lambda y: jnp.where(jnp.greater(0.25, y), 1.0, y), (0.25, 1.0)),        # gt 0.25 y false: y >= 0.25
    (lambda y: jnp.where(jax.lax.le(jnp.full_like(y, 0.5), y), y, 0.5), (0.5, 1.0)),  # a broadcast constant
    (lambda y: (lambda h: jnp.where(h >= 0, h.astype(jnp.float32), 0))(y.astype(jnp.float16)), (0.0, 1.0)),
    (lambda y: jnp.where(y.astype(jnp.int8) >= 0, y.astype(jnp.int8).astype(jnp.float32), 0), (-1.0, 1.0)),
])
def test_narrowed_ranges(f, want):
    """Each range by hand over y in [-1, 1]. The float16 row narrows through the exact widening float16 ->
    float32 of the compared value; the int8 row does not (an integer conversion is not followed, and the two
    ``astype`` calls are two variables)."""
    assert _range(f, -1.0, 1.0) == want


def test_narrowed_by_a_variable_bound():
    """``jnp.where(y >= t, y, t)`` with t in [0.2, 0.4] (a same-shape variable): y's case is [0.2, 1]."""
    def f(v):
        y, t = v[:3], v[3:]
        return jnp.where(y >= t, y, t)
    closed = jax.make_jaxpr(f)(jnp.zeros(6, jnp.float32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.r_[np.full(3, -1.0), np.full(3, 0.2)],
                                                   np.r_[np.full(3, 1.0), np.full(3, 0.4)])])
    assert (float(b.lo.min()), float(b.hi.max())) == (0.2, 1.0)


@pytest.mark.parametrize("f", [
    lambda y: jnp.where(y >= 0, -y, 0),                  # the case is not the compared variable
    lambda y: jnp.where(y[:1] >= 0, y, 0),               # a broadcast predicate: position 0 decides all
    lambda y: jnp.where(jnp.roll(y, 1) >= 0, y, 0),      # another record's value decides
    lambda y: jnp.where(y.astype(jnp.float16) >= 0.1, y, 0),   # compared after a rounding conversion
])
def test_not_narrowed(f):
    """Nothing narrows unless the predicate compares the chosen case itself, position by position."""
    lo, hi = _range(f, -1.0, 1.0)
    assert lo == -1.0 and hi == 1.0


def test_rounding_conversion_not_followed():
    """float16(y) >= 0.1 does not give y >= 0.1 (nor the converse): y = float32(0.1) rounds to
    0.0999755859375 in float16, so no narrowing through a narrowing conversion."""
    assert float(np.float16(np.float32(0.1))) < 0.1
    lo, hi = _range(lambda y: jnp.where(y >= 0.1, y.astype(jnp.float16), 0), -1.0, 1.0)
    assert lo == -1.0


def test_inside_a_loop_body():
    """The rule holds per iteration: a where in a fori_loop body over a carried value."""
    def f(y):
        return jax.lax.fori_loop(0, 3, lambda i, v: jnp.where(v >= 0, v, 0) * 0.5 + y, y)
    # v0 = y in [-1,1]; v_{k+1} = 0.5 max(v_k, 0) + y: v1 in [-1, 1.5], v2 in [-1, 1.75], v3 in [-1, 1.875]
    assert _range(f, -1.0, 1.0) == (-1.0, 1.875)


def test_body_entered_as_loop_body_forgets_binding():
    """A call binds its body's inputs to the caller's variables; a body entered without a call (a branch,
    a loop body) must not keep an earlier call's binding."""
    from bayesdp.analysis.structure.interpreter import Run as R_

    closed = jax.make_jaxpr(lambda y: jnp.where(y >= 0, y, 0))(jnp.zeros(3, jnp.float32))
    run = R_(Bounds())
    run.program(closed, [Bound.box(np.full(3, -1.0), np.full(3, 1.0))])
    body = closed.jaxpr.eqns[1].params["jaxpr"]
    assert all(run.origin(v) is not v for v in body.jaxpr.invars[:2])
    run.call(body, [Bound.box(np.zeros(3), np.ones(3)), Bound.box(np.full(3, -1.0), np.ones(3)),
                    Bound.point(np.zeros(()))])
    assert all(run.origin(v) is v for v in body.jaxpr.invars)


RNG = np.random.default_rng(3)
m = 30
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = RNG.integers(-1, 2, m).astype(np.float32)
DOM = Domain.parse(["X.norm=1", "y.values=-1,0,1"])


def mask_missing(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]), handlers.mask(mask=y >= 0):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=jnp.where(y >= 0, y, 0))


def mask_wrong_branch(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=jnp.where(y >= 0, 0, y))


def test_masked_missing_labels_certify():
    """Bernoulli(logits = x.w) with labels in {0, 1}: per-record gradient |y - sigmoid(x.w)| |x| <= |x| <= R;
    the masked-out records (-1) contribute 0."""
    an = analyze(mask_missing, {"X": X, "y": Y}, DOM)
    R = DOM.get("X").certified_norm
    g = an.constants.record_grad_bound
    assert g >= R and g == pytest.approx(R, rel=1e-12)


def test_wrong_branch_still_refused():
    """where(y >= 0, 0, y) observes -1: outside the Bernoulli support, refused naming the site."""
    with pytest.raises(DomainError, match=r"\[-1, 0\] exceeds the Bernoulli\(logits\) support \[0, 1\] of site .obs."):
        analyze(mask_wrong_branch, {"X": X, "y": Y}, DOM)


_OPS = {"ge": (jnp.greater_equal, np.greater_equal), "gt": (jnp.greater, np.greater),
        "le": (jnp.less_equal, np.less_equal), "lt": (jnp.less, np.less), "eq": (jnp.equal, np.equal),
        "ne": (jnp.not_equal, np.not_equal)}


@pytest.mark.parametrize("seed", range(8))
def test_sound_on_random_selects(seed):
    """Random comparison, constant, order of the operands, branch and boxes: every value the program computes on
    points of the box (its ends, the constant, random points) lies in the computed range."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        name = str(rng.choice(list(_OPS)))
        op, np_op = _OPS[name]
        lo, hi = (float(v) for v in np.sort(np.float32(rng.uniform(-3, 3, 2))))   # float32 ends: the points' own
        c = float(np.float32(rng.choice([rng.uniform(-4, 4), lo, hi, 0.0])))
        z = float(np.float32(rng.uniform(-5, 5)))
        swap, branch = bool(rng.integers(2)), int(rng.integers(2))

        def f(y, op=op, c=c, z=z, swap=swap, branch=branch):
            pred = op(c, y) if swap else op(y, c)
            return jnp.where(pred, y, z) if branch else jnp.where(pred, z, y)

        got_lo, got_hi = _range(f, lo, hi, n=4)
        pts = np.float32(np.r_[lo, hi, np.clip(c, lo, hi), rng.uniform(lo, hi, 60)])
        assert lo <= pts.min() and pts.max() <= hi
        pred = np_op(np.float32(c), pts) if swap else np_op(pts, np.float32(c))   # NumPy, float32: the values
        vals = np.where(pred, pts, np.float32(z)) if branch else np.where(pred, np.float32(z), pts)
        assert got_lo <= vals.min() and vals.max() <= got_hi, (name, lo, hi, c, z, swap, branch)
