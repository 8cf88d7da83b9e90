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
    (lambda y: jnp.where(y >= 0, -y, 0), (-1.0, 0.0)),          # -y computed again from y in [0, 1]
    (lambda y: jnp.where(jnp.abs(y) >= 0.5, y * 2, 0), (-2.0, 2.0)),      # |y| >= 0.5: two half-lines, no claim
    (lambda y: jnp.where(jnp.less_equal(0.25, y), y, 0), (0.0, 1.0)),        # le 0.25 y: the constant first
    (lambda y: jnp.where(jnp.greater(0.25, y), 1.0, y), (0.25, 1.0)),        # gt 0.25 y false: y >= 0.25
    (lambda y: jnp.where(jax.lax.le(jnp.full_like(y, 0.5), y), y, 0.5), (0.5, 1.0)),  # a broadcast constant
    (lambda y: jnp.where(y.astype(jnp.int8) >= 0, y.astype(jnp.int8).astype(jnp.float32), 0), (-1.0, 1.0)),
    (lambda y: jnp.where(y * y >= 0.25, y, 0.0), (-1.0, 1.0)),          # two half-lines: no claim
    (lambda y: jnp.where(-y >= 0.5, y, -0.5), (-1.0, -0.5)),            # -y >= 1/2: y <= -1/2
])

def test_narrowed_ranges(f, want):
    """Each range by hand over y in [-1, 1]. The float16 row narrows through the exact widening float16 ->
    float32 of the compared value; the int8 row does not (an integer conversion is not followed, and the two
    ``astype`` calls are two variables)."""
    assert _range(f, -1.0, 1.0) == want

#: sqrt(1/4 / (1 - u)), u the float32 unit roundoff: the program compares the rounded square fl(y * y)
_HALF = float(np.sqrt(0.25 / (1.0 - 2.0 ** -24)))


@pytest.mark.parametrize("f, scale", [
    (lambda y: jnp.where(y * y <= 0.25, y, 0.0), 1.0),          # y^2 <= 1/4: |y| <= 1/2, up to rounding
    (lambda y: jnp.where(y ** 2 < 0.25, 2 * y, 0.0), 2.0),      # integer_pow 2, recomputed: 2y
    (lambda y: jnp.where(y * y > 0.25, 0.0, y), 1.0),           # the false side of >
    (lambda y: jnp.where(-(y * y) > -0.25, y, 0.0), 1.0),       # -y^2 > -1/4: |y| <= 1/2
])
def test_narrowed_through_a_square(f, scale):
    """Over y in [-1, 1]: the largest float32 chosen is 1/2 (fl(y * y) <= 1/4 for y = 0.5 and not above); the box
    is scale * [-_HALF, _HALF] (rounded up by a float or two), never narrower."""
    lo, hi = _range(f, -1.0, 1.0)
    assert scale * 0.5 <= hi <= scale * _HALF * (1 + 1e-15) and -scale * _HALF * (1 + 1e-15) <= lo <= -scale * 0.5
    ys = np.float32(np.r_[np.linspace(-1, 1, 2001), np.nextafter(np.float32(0.5), np.float32(1)), 0.5, -0.5])
    vals = np.asarray(jax.vmap(f)(jnp.asarray(ys)))
    assert lo <= vals.min() and vals.max() <= hi


def test_computed_again_through_a_monotone_function():
    """exp(2 y) where y <= 0.5 is at most e (outward rounding of libm's exp: a few floats above), not e^2."""
    lo, hi = _range(lambda y: jnp.where(y <= 0.5, jnp.exp(2 * y), 0), -1.0, 1.0)
    assert lo == 0.0 and np.e <= hi <= np.e * (1 + 1e-14)
    # |y| < 0.5 chooses y^2, computed again from y in [-0.5, 0.5]: [0, 0.25] (the power rounded outward)
    lo, hi = _range(lambda y: jnp.where(jnp.abs(y) < 0.5, y ** 2, 0.25), -1.0, 1.0)
    assert lo == 0.0 and 0.25 <= hi <= 0.25 * (1 + 1e-14)


def test_an_operand_reached_twice_keeps_its_bound():
    """``g = 3 t`` (another input, not the compared y) enters the case twice: its bound is the same both times."""
    def f(v):
        y, t = v[:3], v[3:]
        g = t * 3.0
        return jnp.where(y >= 0, y + g + g, -10.0)
    closed = jax.make_jaxpr(f)(jnp.zeros(6, jnp.float32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.r_[np.full(3, -1.0), np.full(3, 0.5)],
                                                   np.r_[np.full(3, 1.0), np.full(3, 1.0)])])
    # y in [0, 1] where chosen, 2 g in [3, 6]: [3, 7]; and -10
    assert (float(b.lo.min()), float(b.hi.max())) == (-10.0, 7.0)


def test_the_recomputed_case_keeps_a_bounded_form():
    """``u x`` chosen where |u| < 0.5, u unbounded, x a data input with its identity form: the case's form is x
    times [-0.5, 0.5] (its own form, u unbounded, has unbounded coefficients)."""
    from bayesdp.analysis.structure.bounds import data_input

    closed = jax.make_jaxpr(lambda u, x: jnp.where(jnp.abs(u) < 0.5, u * x, 0.0))(
        jnp.zeros((1, 2), jnp.float32), jnp.zeros((1, 2), jnp.float32))
    x = data_input((1, 2), "X", -1.0, 1.0)
    [b] = Run(Bounds()).program(closed, [Bound.box(np.full((1, 2), -np.inf), np.full((1, 2), np.inf)), x])
    assert (float(b.lo.min()), float(b.hi.max())) == (-0.5, 0.5)
    lo, hi = b.lin.A["X"]
    np.testing.assert_array_equal(lo, np.array([[[-0.5, 0.0], [0.0, -0.5]]]))
    np.testing.assert_array_equal(hi, np.array([[[0.5, 0.0], [0.0, 0.5]]]))


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
    lambda y: jnp.where(y >= 0, jax.lax.rev(y, (0,)), 0),   # a reversal moves positions: y[n-1-i] where y_i >= 0
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
    0.0999755859375 in float16, so the narrowing is not followed through a conversion that rounds."""
    assert float(np.float16(np.float32(0.1))) < 0.1
    assert _range(lambda y: jnp.where(y >= 0.1, y.astype(jnp.float16), 0), -1.0, 1.0) == (-1.0, 1.0)
    # the exact widening float16 -> float32 of the compared float16 value is followed
    assert _range(lambda y: (lambda h: jnp.where(h >= 0, h.astype(jnp.float32), 0))(y.astype(jnp.float16)),
                  -1.0, 1.0) == (0.0, 1.0)


def test_a_rounding_conversion_s_box_holds_the_rounded_values():
    """float16 of y in [0.1, 0.2]: the ends round to 0.0999755859375 and 0.199951171875 (monotone rounding),
    each moved one relative eps (2^-10) out as they are not float16 numbers; exact ends stay (float16(1) = 1)."""
    lo, hi = _range(lambda y: y.astype(jnp.float16).astype(jnp.float32), 0.1, 0.2)
    assert lo <= float(np.float16(0.1)) < 0.1 and lo >= float(np.float16(0.1)) * (1 - 2.0 ** -10) * (1 - 1e-15)
    assert 0.2 <= hi <= float(np.float16(0.2)) * (1 + 2.0 ** -10) * (1 + 1e-15)
    assert _range(lambda y: y.astype(jnp.float16).astype(jnp.float32), -1.0, 1.0) == (-1.0, 1.0)
    # beyond float16's largest number: infinite
    assert _range(lambda y: y.astype(jnp.float16).astype(jnp.float32), 0.0, 7e4)[1] == np.inf


def test_conversions_that_underflow_or_lose_the_sign_keep_nothing():
    """float8_e8m0fnu has no zero and no sign: its box is unbounded (2^-30 -> e8m0 -> float16 underflows to 0,
    which a real-arithmetic box [2^-30, 2^-28] would miss)."""
    f = lambda y: jnp.where(y.astype(jnp.float8_e8m0fnu).astype(jnp.float16) <= 0, 5.0, y)
    closed = jax.make_jaxpr(f)(jnp.zeros(1, jnp.float32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.array([2.0 ** -30]), np.array([2.0 ** -28]))])
    assert b.lo[0] <= 2.0 ** -30 <= b.hi[0] and float(f(jnp.array([2.0 ** -30], jnp.float32))[0]) == 5.0
    # a float16 underflow: [2^-30, 2^-28] converts to [0, 2^-24]-ish, so y chosen where float16(y) > 0 is not
    # claimed for y = 2^-30 (float16(2^-30) = 0 picks 5)
    g = lambda y: jnp.where(y.astype(jnp.float16) > 0, y, 5.0)
    closed = jax.make_jaxpr(g)(jnp.zeros(1, jnp.float32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.array([2.0 ** -30]), np.array([2.0 ** -28]))])
    assert b.hi[0] >= 5.0 and float(g(jnp.array([2.0 ** -30], jnp.float32))[0]) == 5.0


def test_weak_typed_float_literals_are_the_program_s_float32():
    """``lax.le(y, 0.1)`` compares with float32(0.1) = 0.10000000149...: y = float32(0.1) is chosen, so the
    range reaches float32(0.1), not the float64 0.1 below it (a literal read as float64 was unsound: a fuzz
    helper's model amplified it to a certified 0.51 against a float32 gradient of 2)."""
    from jax import lax

    f = lambda y: jnp.where(lax.le(y, 0.1), y, -1.0)
    lo, hi = _range(f, -1.0, 1.0)
    v = float(f(jnp.array([np.float32(0.1)]))[0])
    assert v == float(np.float32(0.1)) > 0.1 and lo == -1.0 and hi >= v
    # a float passed to a jitted helper is such a literal too
    cap = jax.jit(lambda e, c: jnp.where(e <= c, e, c))
    lo, hi = _range(lambda y: cap(y, 0.1), -1.0, 1.0)
    assert hi == float(np.float32(0.1))


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


_CHAIN = [  # (jnp, NumPy float32) pointwise steps a case may be computed through
    (lambda v: -v, lambda v: -v),
    (lambda v: v * 2.5, lambda v: v * np.float32(2.5)),
    (lambda v: v ** 2, lambda v: v ** 2),
    (lambda v: jnp.abs(v), np.abs),
    (lambda v: jnp.exp(v), np.exp),
    (lambda v: jnp.tanh(v), np.tanh),
    (lambda v: v - 0.75, lambda v: v - np.float32(0.75)),
    (lambda v: jnp.maximum(v, -0.5), lambda v: np.maximum(v, np.float32(-0.5))),
]


@pytest.mark.parametrize("seed", range(8))
def test_sound_on_random_cases_computed_from_the_compared_value(seed):
    """A case computed from y through 1-3 random pointwise steps, chosen by a comparison of y or |y| with a
    constant: every value on points of the box lies in the computed range."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(15):
        name = str(rng.choice(list(_OPS)))
        op, np_op = _OPS[name]
        lo, hi = (float(v) for v in np.sort(np.float32(rng.uniform(-2, 2, 2))))
        c = float(np.float32(rng.choice([rng.uniform(-2.5, 2.5), lo, hi, 0.0, abs(lo)])))
        z = float(np.float32(rng.uniform(-3, 3)))
        absolute, swap, branch = bool(rng.integers(2)), bool(rng.integers(2)), int(rng.integers(2))
        steps = [_CHAIN[i] for i in rng.integers(0, len(_CHAIN), rng.integers(1, 4))]

        def f(y, op=op, c=c, z=z, absolute=absolute, swap=swap, branch=branch, steps=steps):
            a = jnp.abs(y) if absolute else y
            pred = op(c, a) if swap else op(a, c)
            g = y
            for s, _ in steps:
                g = s(g)
            return jnp.where(pred, g, z) if branch else jnp.where(pred, z, g)

        got_lo, got_hi = _range(f, lo, hi, n=4)
        pts = np.float32(np.r_[lo, hi, np.clip([c, -c], lo, hi), rng.uniform(lo, hi, 60)])
        a = np.abs(pts) if absolute else pts
        pred = np_op(np.float32(c), a) if swap else np_op(a, np.float32(c))
        g = pts.astype(np.float64)
        for _, s in steps:
            g = s(g)
        vals = np.where(pred, g, z) if branch else np.where(pred, z, g)
        tol = 1e-6 * max(1.0, float(np.max(np.abs(vals))))      # float32 evaluation of exp/tanh vs float64 bounds
        assert got_lo - tol <= vals.min() and vals.max() <= got_hi + tol, (name, lo, hi, c, absolute, swap, branch)


def test_weak_literal_amplified_gradient_is_covered():
    """The fuzz helper's model: t = where(z <= 0.1, z, 0) (a weakly typed 0.1), s = max(1e9 (t - float32(0.1)) + 2,
    0) multiplies the logits. At z = float32(0.1), t - float32(0.1) = 0 and s = 2: the gradient reaches 2 |x| = 2;
    read as float64 0.1, t looked at most 0.1 and s at most 0.51."""
    from jax import lax

    def model(X, z, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
        t = jnp.where(lax.le(z, 0.1), z, 0.0)
        s = jnp.maximum(1e9 * (t - jnp.float32(0.1)) + 2.0, 0.0)
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=(X @ w) * s), obs=y)

    X1 = np.array([[1.0, 0.0, 0.0]] * 4, np.float32)
    an = analyze(model, {"X": X1, "z": np.full(4, 0.1, np.float32), "y": np.ones(4, np.float32)},
                 Domain.parse(["X.norm=1", "z.min=0", "z.max=1", "y.values=0,1"]))

    def ll(w):
        t = jnp.where(lax.le(jnp.float32(0.1), 0.1), jnp.float32(0.1), 0.0)
        s = jnp.maximum(1e9 * (t - jnp.float32(0.1)) + 2.0, 0.0)
        return dist.Bernoulli(logits=(jnp.asarray(X1[0]) @ w) * s).log_prob(1.0)
    g = float(jnp.linalg.norm(jax.grad(ll)(jnp.array([-10.0, 0.0, 0.0], jnp.float32))))
    assert g == pytest.approx(2.0, rel=1e-6) and an.constants.record_grad_bound >= g * (1 - 1e-6)


def _range_of(f, lo, hi, dtype):
    closed = jax.make_jaxpr(f)(jnp.zeros((), dtype))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.float64(lo), np.float64(hi))])
    return float(b.lo), float(b.hi)


def test_a_square_compared_after_rounding_holds_the_program_s_values():
    """The program compares fl(r * r), not r^2 (a fuzz helper's cases): r = 1 + 2^-23 has fl32(r * r) = 1 + 2^-22
    exactly, so it is chosen by r * r <= 1 + 2^-22 although r > sqrt(1 + 2^-22); float16 r = 5.875 has
    fl16(34.515625) = 34.5; and where the CPU flushes subnormals, fl(r * r) = 0 <= c for every |r| < 2^-63. The box
    is widened by the unit roundoff and the smallest normal, and holds every value."""
    c = np.float32(1 + 2.0 ** -22)
    f = lambda r: jnp.where(r * r <= c, r, 0.0)
    lo, hi = _range_of(f, -4.0, 4.0, jnp.float32)
    r1 = np.float32(1 + 2.0 ** -23)
    assert np.float32(r1) * np.float32(r1) == c and float(f(r1)) == float(r1)
    assert hi >= float(r1) and hi <= 1.0000003 and lo <= -float(r1)
    c16 = np.float16(34.5)
    g = lambda r: jnp.where(r * r <= c16, r, jnp.float16(0))
    lo, hi = _range_of(g, -8.0, 8.0, jnp.float16)
    assert float(g(jnp.float16(5.875))) == 5.875 and hi >= 5.875 and hi <= 5.8775
    # a threshold of 0 (or subnormal): |r| up to 2^-63 may be chosen
    lo, hi = _range_of(lambda r: jnp.where(r * r <= 0.0, r, 0.0), -1.0, 1.0, jnp.float32)
    assert hi >= 2.0 ** -63 and lo <= -(2.0 ** -63) and hi <= 1.1 * 2.0 ** -63


def test_integer_squares_negations_and_abs_are_not_followed():
    """int32 wraps: 65536 * 65536 = 0 <= 4 and |INT_MIN| = -INT_MIN = INT_MIN: no narrowing through them."""
    f = lambda r: jnp.where(r * r <= 4, r, 0)
    closed = jax.make_jaxpr(f)(jnp.zeros((), jnp.int32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.float64(-1e5), np.float64(1e5))])
    assert int(f(jnp.int32(65536))) == 65536 and float(b.hi) >= 65536
    g = lambda r: jnp.where(-r <= 0, r, 0)
    closed = jax.make_jaxpr(g)(jnp.zeros((), jnp.int32))
    [b] = Run(Bounds()).program(closed, [Bound.box(np.float64(-2.0 ** 31), np.float64(2.0 ** 31 - 1))])
    assert float(b.lo) <= -2.0 ** 31
