"""Issue 23: a select chosen by theta (a Huber loss, a leaky ReLU, a cap written with ``jnp.where``) is proven
continuous where its predicate switches (``structure/switch.py``), and its derivative is bounded by narrowing
each case to where it is chosen, also in the derivative program JAX's ``vmap`` builds over a tangent basis.

Every expected bound is derived by hand below: a Huber loss with threshold d has derivative ``psi(r)`` with
``|psi| <= d`` (``d`` as float32 holds it), so the per-record gradient of ``-huber(y - x.w)`` is at most
``d |x| <= d R``, attained at any record with ``|y - x.w| >= d``.  The refusals are real jumps, jumps of one
float, cases that are not functions of the compared value, cases not finite everywhere (reverse mode multiplies
the case not chosen by zero) and values that round."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.structure import Affinity, Run
from bayesdp.analysis.structure import affinity as af

F32 = jnp.float32
D_GLOBAL = jnp.asarray(1.345, F32)          # a module-level array: a constant of the traced program


def _grad_ok(f, n=4):
    """grad_ok of ``f(t)`` for theta ``t`` of shape (n,) (a value per position)."""
    closed = jax.make_jaxpr(f)(jnp.zeros(n, F32))
    [out] = Run(Affinity()).program(closed, [af.A])
    return out.grad_ok


def _grad_ok_data(f, n=4):
    """grad_ok of ``f(t, y)``: theta ``t`` and a data vector ``y``."""
    closed = jax.make_jaxpr(f)(jnp.zeros(n, F32), jnp.zeros(n, F32))
    [out] = Run(Affinity()).program(closed, [af.A, af.C])
    return out.grad_ok


def knots(r, ks=(-1.5, -0.5, 0.5, 1.5), slope=0.25, jump=0.0):
    """A piecewise-linear loss written as nested wheres, one per knot (JAX shares one `_where` body among the
    calls): continuous unless ``jump`` is added past the last knot."""
    out = r
    for i, k in enumerate(ks):
        step = out + slope * (r - k)
        out = jnp.where(r > k, step + jump if jump and i == len(ks) - 1 else step, out)
    return out


@jax.jit
def _times(r, a):
    return a * r                              # one body, entered twice below with different arguments


@jax.jit
def _hinge_of(s, r):
    return jnp.where(s > 0.0, r - 1.0, 0.0)    # s = r - 1 computed by the caller: the same value


@jax.jit
def _hinge_from(c, r):
    return jnp.where(r - 1.0 > 0.0, c, 0.0)    # c = r - 1 computed by the caller


@jax.jit
def _scaled_excess(r):
    return (r - 1.0) * D_GLOBAL               # a call whose body holds the constant D_GLOBAL


@jax.jit
def _divided_excess(r):
    return (r - 1.0) / D_GLOBAL               # a call dividing by the constant D_GLOBAL it holds


@jax.jit
def _plus_one(x):
    return x + 1.0


@jax.jit
def _jit_log(x):
    return jnp.log(x)


def huber(r, d=1.0):
    a = jnp.abs(r)
    return jnp.where(a <= d, 0.5 * r ** 2, d * (a - 0.5 * d))


@jax.jit
def huber_jit(r):
    return huber(r, 1.345)


CONTINUOUS = {
    "huber-1": lambda r: huber(r, 1.0),
    "huber-1.345": lambda r: huber(r, 1.345),      # 0.5 d^2 = d (d - d/2) exactly, for d = float32(1.345)
    "huber-0.1": lambda r: huber(r, 0.1),
    "huber-constant-array": lambda r: huber(r, D_GLOBAL),
    "huber-in-jit": huber_jit,
    "huber-threshold-left": lambda r: jnp.where(1.0 >= jnp.abs(r), 0.5 * r * r, jnp.abs(r) - 0.5),
    "smooth-l1-gt": lambda r: jnp.where(jnp.abs(r) > 1.0, jnp.abs(r) - 0.5, 0.5 * r * r),
    "leaky": lambda r: jnp.where(r > 0, r, 0.01 * r),
    "relu": lambda r: jnp.where(r > 0, r, 0.0),
    "cap": lambda r: jnp.where(r > 2.0, 2.0, r),
    "clip-nested": lambda r: jnp.where(r > 1.0, 1.0, jnp.where(r < -1.0, -1.0, r)) ** 2,
    "shifted-hinge": lambda r: jnp.where(r - 1.0 > 0.0, r - 1.0, 0.0),        # compared value r - 1: its own var
    "tanh-at-zero": lambda r: jnp.where(r > 0, jnp.tanh(r), r),              # tanh(0) = 0 exactly, bounded
    "three-pieces": lambda r: jnp.where(r < -1.0, -2.0 * r - 1.0, jnp.where(r < 1.0, r * r, 2.0 * r - 1.0)),
    "through-custom-jvp": lambda r: jnp.where(r > 1.0, jax.nn.relu(r) - 1.0, 0.0),   # JAX's relu: a custom_jvp
    "knots-shared-body": knots,
    # compared after an exact widening of a float16 value, the sides in float16 arithmetic on that value
    "float16-widened": lambda r: (lambda h: jnp.where(h.astype(F32) > 0.5, h - jnp.float16(0.5),
                                                      jnp.float16(0.0)))(r.astype(jnp.float16)).astype(F32),
    "same-value-into-a-call": lambda r: _hinge_of(r - 1.0, r),
    "same-value-from-a-call": lambda r: _hinge_from(r - 1.0, r),
    "threshold-left-explicit": lambda r: jnp.where(jnp.greater_equal(1.0, jnp.abs(r)), 0.5 * r * r,
                                                   jnp.abs(r) - 0.5),      # ge(1, |r|): the operand on the right
    "threshold-broadcast": lambda r: jnp.where(jax.lax.gt(r, jnp.full_like(r, 1.0)), r - 1.0, 0.0),
    "abs-never-chosen": lambda r: jnp.where(jnp.abs(r) <= -1.0, r, 5.0),   # |r| <= -1 never holds: constant
    "sigmoid-centred": lambda r: jnp.where(r > 0, jax.nn.sigmoid(r) - 0.5, 0.0),   # logistic(0) = 1/2
    "knots-forty": lambda r: knots(r, ks=tuple(np.linspace(-3, 3, 40)), slope=0.1),   # docs: 40 nested wheres
    "through-checkpoint": lambda r: jnp.where(r > 1.0, jax.checkpoint(lambda x: x - 1.0)(r), 0.0),
    "negative-power-of-a-constant": lambda r: jnp.where(r > 1.0, (r - 1.0) * D_GLOBAL ** -2, 0.0),
    "division-meeting-at-a-half": lambda r: jnp.where(r > 1.0, r / 2.0, r - 0.5),
    "division-by-one": lambda r: jnp.where(r > 1.0, r / 1.0, 1.0),
    "one-helper-twice": lambda r: jnp.where(r > 1.0, _times(r, 2.0) - _times(r, 1.0), r),   # 2r - r = r
    "literal-predicate-inside": lambda r: jnp.where(r > 1.0, jnp.where(True, r - 1.0, 5.0), 0.0),
    "call-with-a-constant": lambda r: jnp.where(r > 1.0, _scaled_excess(r), 0.0),
    "square-compared": lambda r: jnp.where(r * r < 1.0, r * r, 2.0 * jnp.abs(r) - 1.0),   # meet at r = +-1
    "power-compared": lambda r: jnp.where(r ** 2 < 1.0, r ** 2, 2.0 * jnp.abs(r) - 1.0),  # integer_pow 2
    "jnp-square-compared": lambda r: jnp.where(jnp.square(r) < 1.0, jnp.square(r), 2.0 * jnp.abs(r) - 1.0),
    "square-quarter": lambda r: jnp.where(r * r < 0.25, r * r, jnp.abs(r) - 0.25),       # meet at r = +-1/2
    "square-capped": lambda r: jnp.where(r ** 2 < 2.0, r ** 2, 2.0),                    # meet at r^2 = 2
    # a body's constant divides: it is not a value of r (a division by r would be refused)
    "call-dividing-by-a-constant": lambda r: jnp.where(r > 1.0, _divided_excess(r), 0.0),
    # one body called with r and with a constant: the second call's value divides, and is not a value of r
    "one-body-with-r-and-a-constant": lambda r: jnp.where(
        r > 1.0, (_plus_one(r) - 2.0) / _plus_one(jnp.full_like(r, 2.0)), 0.0),     # one body: same shapes
    # a value of r-free constants computed after a value of r, then dividing
    "constant-divisor-after-r": lambda r: jnp.where(r > 1.0, (r - 1.0) / (D_GLOBAL * 2.0), 0.0),
    # r * r <= 0 holds at r = 0 only, where the side r is 0: the cases meet at the square root 0
    "square-at-zero": lambda r: jnp.where(r * r <= 0.0, r, 0.0),
    # r ** 0 = 1 also at r = 0 (0 ** 0 = 1, no division): r + 1 - 1 meets r at the switch 0
    "power-zero-at-zero": lambda r: jnp.where(r > 0.0, r + jax.lax.integer_pow(r, 0) - 1.0, r),
    # jnp.select (select_n with an integer index, argmax of the stacked conditions): the cases chosen around 0
    # and 1 meet there (0 = 0, 2 = 2; tests/analysis/test_select_piecewise.py)
    "select-three-way-continuous": lambda r: jnp.select([r < 0.0, r < 1.0], [r, 2.0 * r], r + 1.0),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_selects_that_meet_at_the_switch_are_continuous(name):
    assert _grad_ok(lambda t: CONTINUOUS[name](t * 2.0 - 1.0))


def test_the_huber_and_three_piece_meetings_are_exact_in_fractions():
    """The hand check behind CONTINUOUS: the pieces agree at the switch in exact arithmetic on the float32
    constants (Fractions), not only to rounding."""
    from fractions import Fraction
    d = Fraction(float(np.float32(1.345)))
    assert Fraction(1, 2) * d * d == d * (d - Fraction(1, 2) * d)
    one = Fraction(1)
    assert -2 * (-one) - 1 == (-one) * (-one) and one * one == 2 * one - 1


JUMPS = {
    "jump": lambda r: jnp.where(r > 0, r + 1.0, r),
    "jump-of-one-float": lambda r: jnp.where(r > 0, r + 1e-7, r),
    "huber-off-by-an-ulp": lambda r: jnp.where(jnp.abs(r) <= 1.0, 0.5 * r ** 2,
                                               jnp.abs(r) - float(np.nextafter(np.float32(0.5), 1, dtype=np.float32))),
    "exp-cap-inexact": lambda r: jnp.where(r < 1.0, jnp.exp(r), jnp.exp(1.0) * r),   # exp(1) != float32(e)
    "abs-one-sided": lambda r: jnp.where(jnp.abs(r) < 1.0, r, 1.0),                 # meets at 1, not at -1
    "log-case": lambda r: jnp.where(r > 1.0, jnp.log(r), r - 1.0),     # log(1) = 0 meets, but log(r) is -inf
    "reciprocal-case": lambda r: jnp.where(r > 1.0, 1.0 / r, 2.0 - r),  # meets at 1, infinite at r = 0
    "rolled": lambda r: jnp.where(r > 0, r, jnp.roll(r, 1)),            # another position's value
    "reversed": lambda r: jnp.where(r > 0, r, r[::-1]),
    "float16-round": lambda r: jnp.where(r > 0.1, r.astype(jnp.float16).astype(F32), 0.1),
    "sign": lambda r: jnp.where(r > 0, jnp.sign(r), 0.5),
    "equality": lambda r: jnp.where(r == 0, 0.0, r),                   # continuous, but eq is not a switch rule
    "sum": lambda r: jnp.where(r > 0, r, 0.0 * jnp.sum(r)),             # reads every position
    "cond": lambda r: jax.lax.cond(r[0] > 0, lambda a: a, lambda a: a + 1.0, r),
    # meet exactly at 0, but the side not chosen overflows in float32 (expm1(89) = inf) and reverse mode then
    # multiplies its derivative by zero: nan (a fuzz helper's ELU logits; the exp-linear rate likewise)
    "elu": lambda r: jnp.where(r > 0, r, jnp.expm1(r)),
    "exp-linear": lambda r: jnp.where(r < 0, jnp.exp(r), 1.0 + r),
    "sinh-case": lambda r: jnp.where(r > 0, jnp.sinh(r), r),
    # atan2(0, u) jumps by pi at u = 0: not a continuous primitive
    "atan2": lambda r: jnp.arctan2(jnp.zeros_like(r), r),
    # r^2 < 2 switches at r = +-sqrt(2), not rational: no exact meeting is evaluated for a side reading r
    "square-irrational": lambda r: jnp.where(r * r < 2.0, r * r, 2.0 * jnp.sqrt(2.0) * jnp.abs(r) - 2.0),
    "square-off": lambda r: jnp.where(r * r < 1.0, r * r, 2.0 * jnp.abs(r)),          # 1 against 2 at r = +-1
    "knots-jump-at-the-last": lambda r: knots(r, jump=0.5),                        # a shared body, one jump
    # r (r + 1) < 4 switches where r (r + 1) = 4 (irrational r), where r + 4 is not 4: a jump; read as the
    # square of r it would seem to switch at r = +-2, where both sides agree (6 and 2)
    "product-not-a-square": lambda r: jnp.where(r * (r + 1.0) < 4.0, r * (r + 1.0), r + 4.0),
    # r^2 < 2 switches at +-sqrt(2): 2 against 2 sqrt(2) - 1; at the wrong point 1 both sides would be 1
    "square-irrational-jump": lambda r: jnp.where(r * r < 2.0, r * r, 2.0 * jnp.abs(r) - 1.0),
    # fl16(r) > float16(0.1) switches where r rounds across float16(0.1), not at r = float16(0.1) where the sides
    # meet: a jump of about half a float16 ulp
    "float16-rounded-switch": lambda r: jnp.where(r.astype(jnp.float16) > jnp.float16(0.1),
                                                  r - np.float32(np.float16(0.1)), 0.0),
    # (r - 2) + 1 is not the compared r - 1: at r = 1 it is 0, against 1
    "near-same-value": lambda r: jnp.where(r - 1.0 > 0.0, (r - 2.0) + 1.0, 1.0),
    # r ** 3 is not the compared r ** 2: at r = -1, -1 against 1
    "another-power": lambda r: jnp.where(r ** 2 > 1.0, r ** 3, 1.0),
    "square-one-sided": lambda r: jnp.where(r * r < 1.0, r * r, 2.0 * r - 1.0),   # meets at r = 1, not at -1
    "abs-at-zero": lambda r: jnp.where(jnp.abs(r) <= 0.0, r, 5.0),       # chosen at r = 0 only: 0 against 5
    "scalar-predicate": lambda r: jax.lax.select_n(r[0] > 0.0, -r, r),   # one position chooses for all
    "integer-predicate": lambda r: jax.lax.select_n((r > 0).astype(jnp.int32), r, r + 1.0),
    "zero-to-a-negative-power": lambda r: jnp.where(r > 1.0, (r - 1.0) * jnp.zeros((), F32) ** -1, 0.0),
    "division-by-zero": lambda r: jnp.where(r > 1.0, (r - 1.0) / jnp.zeros((), F32), 0.0),
    "literal-predicate-other-side": lambda r: jnp.where(r > 1.0, jnp.where(False, r - 1.0, 5.0), 0.0),
    "call-with-a-constant-jump": lambda r: jnp.where(r > 1.0, _scaled_excess(r) + 1.0, 0.0),
    # jnp.select: select_n with an integer index (argmax of the stacked conditions) and three cases; this one
    # jumps by 1 at 0 and by 4 at 1
    "select-three-way": lambda r: jnp.select([r < 0.0, r < 1.0], [r, r + 1.0], r + 5.0),
    # log of a value of r inside a call: log is not finite for every r (it meets r - 1 at 1)
    "log-case-in-a-call": lambda r: jnp.where(r > 1.0, _jit_log(r), r - 1.0),
    # a value of r used twice, the second time under log (finite here, but log is refused for values of r)
    "log-of-a-reused-value": lambda r: (lambda u: jnp.where(r > 1.0, u + jnp.log(jnp.abs(u) + 1.0), 0.0))(r - 1.0),
    # 1 / r as a negative power (integer_pow, y = -1), meeting 2 - r at 1, infinite at 0
    "negative-power-case": lambda r: jnp.where(r > 1.0, r ** -1, 2.0 - r),
    # a division by a value of r computed in a call (r + 1 is 0 at r = -1): refused like a division by r
    "division-by-a-call-of-r": lambda r: jnp.where(r > 1.0, (r - 1.0) / _plus_one(r), 0.0),
}


@pytest.mark.parametrize("name", sorted(JUMPS))
def test_jumps_and_unprovable_meetings_are_refused(name):
    assert not _grad_ok(lambda t: JUMPS[name](t * 2.0 - 1.0))


def test_a_weakly_typed_threshold_is_read_as_the_program_s_float32():
    """lax.gt(r, 0.1) keeps a weakly typed 0.1 that the program compares as float32(0.1): it meets the float32
    constant 0.1 of the other side exactly (read as float64 0.1 it would not), and misses float32(0.1)'s
    neighbour."""
    from jax import lax
    assert _grad_ok(lambda t: jnp.where(lax.gt(t, 0.1), t, np.float32(0.1)))
    # the other side a Python float too: jnp.where passes it into its body as a weakly typed literal argument
    assert _grad_ok(lambda t: jnp.where(lax.gt(t, 0.1), t, 0.1))
    assert not _grad_ok(lambda t: jnp.where(lax.gt(t, 0.1), t, np.nextafter(np.float32(0.1), np.float32(1))))


def test_a_case_reading_theta_elsewhere_or_the_data_is_refused():
    # theta * r and r agree at r = 0, but the second case is not a function of r alone: no claim
    assert not _grad_ok(lambda t: jnp.where(t > 0, t, t[0] * t))
    # a threshold read from the data: the switch point is not a fixed number
    assert not _grad_ok_data(lambda t, y: jnp.where(t > y, t - y, 0.0))
    # a case chosen by the data (not theta) is what the narrowing already proved
    assert _grad_ok_data(lambda t, y: jnp.where(y > 0, t, 2.0 * t))
    # the compared value itself not continuous in theta
    assert not _grad_ok(lambda t: jnp.where(jnp.floor(t) > 0.0, jnp.floor(t), 0.0))


def test_numerically_the_proven_cases_are_continuous():
    """Cross-check (not the proof): across the switch the proven cases move by at most their slope times the
    step, while a refused jump moves by its jump."""
    eps = 1e-3                                   # float32: the pieces' slopes are at most 3
    for name in ("huber-1.345", "leaky", "cap", "three-pieces", "smooth-l1-gt"):
        f = CONTINUOUS[name]
        for c in (-1.345, -1.0, 0.0, 1.0, 1.345, 2.0):
            lo, hi = f(jnp.asarray([c - eps], F32)), f(jnp.asarray([c + eps], F32))
            assert abs(float(hi[0] - lo[0])) <= 6 * eps + 1e-6, (name, c)
    lo, hi = JUMPS["jump"](jnp.asarray([-eps], F32)), JUMPS["jump"](jnp.asarray([eps], F32))
    assert float(hi[0] - lo[0]) > 0.99


# ---------------------------------------------------------------------------
# end to end: the per-record gradient bound, exact


U32 = 2.0 ** -24          # float32 unit roundoff


def _square_cap(c, dtype=np.float32):
    """The largest float r with fl(r * r) <= c (the program compares the rounded square), found by stepping
    floats from sqrt(c), and the analyzer's derived bound sqrt(c / (1 - u)), which must lie above it and within
    one part in 10^7."""
    c = dtype(c)
    r = dtype(np.sqrt(np.float64(c)))
    while dtype(r * r) <= c:
        r = np.nextafter(r, dtype(np.inf))
    while dtype(r * r) > c:
        r = np.nextafter(r, dtype(-np.inf))
    derived = float(np.sqrt(np.float64(c) / (1.0 - U32)))
    assert float(r) <= derived <= float(r) * (1 + 1e-7)
    return float(r), derived


def _regression(loss):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("obs", -loss(y - X @ w))
    return model


def _data(m=40, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.arange(1.0, p + 1) / p + 0.3 * rng.normal(size=m), -2, 2)
    return {"X": X.astype(np.float32), "y": y.astype(np.float32)}


DOMAIN = ["X.norm=1", "y.min=-2", "y.max=2"]


@pytest.mark.parametrize("d", [1.0, 1.345, 0.1])
def test_huber_regression_certifies_with_the_exact_gradient_bound(d):
    """sup over theta and the domain of |d/dw huber(y - x.w)| = sup |psi(r)| |x| = d32 * 1: attained at
    x = e_1, y = 2, w = 0 (r = 2 >= d). The bound must be at least that and at most a few roundings above."""
    d32 = float(np.float32(d))
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm              # 1, inflated by the rounding of float32 rows
    rep = analyze(_regression(lambda r: huber(r, d)), _data(), dom)
    G = rep.constants.record_grad_bound
    assert G is not None and d32 * R <= G <= d32 * R * (1 + 1e-9), G
    # the witness, through JAX's own gradient of the float32 program
    rec = {"X": np.eye(3, dtype=np.float32)[:1], "y": np.float32([2.0])}
    g = jax.grad(lambda w: -huber(rec["y"] - rec["X"] @ w, d)[0])(jnp.zeros(3, F32))
    assert float(jnp.linalg.norm(g)) == pytest.approx(d32, rel=1e-7)
    assert "generic" in rep.constants.provenance["record_grad_bound"]


def test_clipped_residual_squared_certifies_at_two():
    """l = clip(r, -1, 1)^2 written with two wheres: |dl/dw| = 2 |clip(r)| |x| <= 2, attained at r = 1 (the
    derivative of the chosen case there: 2 * 1 * 1)."""
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    rep = analyze(_regression(CONTINUOUS["clip-nested"]), _data(), dom)
    G = rep.constants.record_grad_bound
    assert G is not None and 2.0 * R <= G <= 2.0 * R * (1 + 1e-9), G


@pytest.mark.parametrize("name", ["three-pieces", "three-pieces-reversed"])
def test_a_middle_piece_gets_both_ends(name):
    """l = -2r - 1 (r < -1), r^2 (-1 <= r < 1), 2r - 1 (r >= 1), as nested wheres either way round: |l'| <= 2,
    reached at every |r| >= 1. The middle piece's derivative 2r is bounded only with both comparisons: the
    enclosing select's (r >= -1) and its own (r < 1)."""
    pieces = {"three-pieces": CONTINUOUS["three-pieces"],
              "three-pieces-reversed": lambda r: jnp.where(r >= 1.0, 2.0 * r - 1.0,
                                                           jnp.where(r >= -1.0, r * r, -2.0 * r - 1.0))}
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    rep = analyze(_regression(pieces[name]), _data(), dom)
    G = rep.constants.record_grad_bound
    assert G is not None and 2.0 * R <= G <= 2.0 * R * (1 + 1e-9), G


@pytest.mark.parametrize("c, spell", [(1.0, "mul"), (2.0, "pow")])
def test_a_capped_squared_loss_is_narrowed_through_the_square(c, spell):
    """l = min(r^2, c) written jnp.where(r * r < c, r * r, c): where r^2 is chosen, r^2 < c, so |r| <= sqrt(c)
    and |l'| = |2 r| <= 2 sqrt(c) (the sup, approached as r^2 -> c). The sides meet at r^2 = c."""
    def loss(r):
        q = r * r if spell == "mul" else r ** 2
        return jnp.where(q < c, q, c)
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    rep = analyze(_regression(loss), _data(), dom)
    G = rep.constants.record_grad_bound
    r_max, derived = _square_cap(c)            # float32: fl(r * r) < c reaches r_max > sqrt(c) - ...
    assert G is not None and 2.0 * r_max * R <= G <= 2.0 * derived * R * (1 + 1e-9), (G, r_max, derived)


def test_a_square_compared_with_a_side_reading_r_certifies():
    """l = r^2 (r^2 < 1), 2|r| - 1 (else): the sides meet at r = +-1 (the switch of r^2 < 1), |l'| <= 2 (up to the
    rounding of the compared square: 2 sqrt(1 / (1 - u)))."""
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    rep = analyze(_regression(CONTINUOUS["square-compared"]), _data(), dom)
    G = rep.constants.record_grad_bound
    r_max, derived = _square_cap(1.0)
    assert G is not None and 2.0 * R <= G <= 2.0 * derived * R * (1 + 1e-9), G


def test_a_square_compared_from_above_gives_no_claim():
    """r * r >= c holds on two half-lines: nothing is claimed (the derivative of the chosen r * r is unbounded)."""
    rep = analyze(_regression(lambda r: jnp.where(r * r >= 1.0, 1.0, r * r) + jnp.where(r * r >= 1.0, r * r, 1.0)),
                  _data(), Domain.parse(DOMAIN))
    assert rep.constants.record_grad_bound is None


def test_a_jump_is_still_refused_naming_the_site_and_the_comparison():
    rep = analyze(_regression(JUMPS["jump"]), _data(), Domain.parse(DOMAIN))
    assert rep.constants.record_grad_bound is None
    msg = rep.first_unproven()
    assert "'obs'" in msg and "gt at" in msg and "branch or index chosen by theta" in msg


def test_leaky_logits_bernoulli_certifies_within_the_hand_bound():
    """Bernoulli(logits = leaky(x.w)) with slope 1/2 below 0: |d/dw| = |y - sigmoid(z)| |leaky'(z)| |x| <= 1
    (slope 1 where z > 0, 1/2 where z <= 0). As z -> 0+ with y = 0 it approaches 1/2 * 1; as z -> -inf with
    y = 1, 1 * 1/2; so the sup is 1/2 R. The family rule bounds |y - sigmoid| by 1 and |leaky'| by 1 separately,
    so the bound lies between the sup 1/2 R and 1 R."""
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        z = X @ w
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=jnp.where(z > 0, z, 0.5 * z)), obs=y)
    data = _data()
    data["y"] = (data["y"] > 0).astype(np.float32)
    rep = analyze(model, data, Domain.parse(["X.norm=1", "y.values=0,1"]))
    G = rep.constants.record_grad_bound
    R = Domain.parse(["X.norm=1"]).get("X").certified_norm
    assert G is not None and 0.5 * R <= G <= R * (1 + 1e-9), G


def test_random_records_and_theta_stay_under_the_bound():
    """Cross-check of the Huber bound on 2,000 random (theta, record) pairs, many near the switch."""
    d = 1.345
    rep = analyze(_regression(lambda r: huber(r, d)), _data(), Domain.parse(DOMAIN))
    G = rep.constants.record_grad_bound
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True) / rng.uniform(0, 1, size=(2000, 1))
    w = rng.normal(size=(2000, 3)) * 3
    r = np.concatenate([rng.uniform(-3, 3, 1000), d + rng.normal(scale=1e-6, size=1000)])
    y = np.clip(r + np.sum(x * w, axis=1), -2, 2)
    gfun = jax.jit(jax.vmap(jax.grad(lambda w_, x_, y_: -huber(y_ - x_ @ w_, d))))
    g = np.asarray(gfun(jnp.asarray(w, F32), jnp.asarray(x, F32), jnp.asarray(y, F32)))
    assert np.max(np.linalg.norm(g, axis=1)) <= G * (1 + 1e-6)


# ---------------------------------------------------------------------------
# the derivative program: narrowing through vmap's broadcast predicate, transposes and calls


_STEPS = [  # pointwise pieces a case may be built from (continuity is not needed for the bound's soundness)
    lambda v: -v, lambda v: v * 2.5, lambda v: v ** 2, jnp.abs, jnp.tanh, lambda v: v - 0.75,
    lambda v: jnp.maximum(v, -0.5), lambda v: 0.5 * v * v, jnp.exp,
]
_CMPS = [jnp.less, jnp.less_equal, jnp.greater, jnp.greater_equal]


def _random_piece(rng, depth=3):
    c = float(np.float32(rng.uniform(-1.5, 1.5)))
    op = _CMPS[int(rng.integers(len(_CMPS)))]
    absolute, swap = bool(rng.integers(2)), bool(rng.integers(2))
    cases = []
    for _ in range(2):
        if depth > 1 and rng.uniform() < 0.45:
            cases.append(_random_piece(rng, depth - 1))
        else:
            steps = [_STEPS[i] for i in rng.integers(0, len(_STEPS), rng.integers(1, 3))]

            def g(r, steps=steps):
                for s in steps:
                    r = s(r)
                return r
            cases.append(g)

    squared, negated = bool(rng.integers(3) == 0), bool(rng.integers(3) == 0)

    def f(r, c=c, op=op, absolute=absolute, swap=swap, a=cases[0], b=cases[1], squared=squared, negated=negated):
        q = (r * r if squared else jnp.abs(r)) if absolute else r
        q = -q if negated else q
        return jnp.where(op(c, q) if swap else op(q, c), a(r), b(r))
    return f


def _jacobian(piece, p=3):
    def jac(w, X, y, basis):
        return jax.vmap(lambda v: jax.jvp(lambda f: piece(y - X @ f), (w,), (v,))[1], out_axes=-1)(basis)
    return jac


def _check_derivative_bounds(piece, rng, on, n=4, p=3):
    """The bound interpreter on the derivative program of ``-piece(y - x.w)`` (theta in [-2, 2]^3, x in
    [-1, 1]^3, y in [-1, 1]) holds JAX's derivative at 400 points, half of them with r = y - x.w at one of the
    values ``on`` or a float next to it."""
    from bayesdp.analysis.structure import Bound, Bounds
    jac = _jacobian(piece)
    closed = jax.make_jaxpr(jac)(jnp.zeros(p, F32), jnp.zeros((n, p), F32), jnp.zeros(n, F32), jnp.eye(p))
    ins = [Bound.box(np.full(p, -2.0), np.full(p, 2.0)), Bound.box(np.full((n, p), -1.0), np.full((n, p), 1.0)),
           Bound.box(np.full(n, -1.0), np.full(n, 1.0)), Bound.point(np.eye(p))]
    [J] = Run(Bounds()).program(closed, ins)
    w = np.float32(rng.uniform(-2, 2, (400, p)))
    X = np.float32(rng.uniform(-1, 1, (400, n, p)))
    y = np.float32(rng.uniform(-1, 1, (400, n)))
    r_on = np.float32(rng.choice(on, (200, n)) + rng.choice([0.0, 1e-6, -1e-6], (200, n)))
    y[:200] = np.clip(r_on + np.einsum("knp,kp->kn", X[:200], w[:200]), -1, 1)
    vals = np.asarray(jax.vmap(jac, in_axes=(0, 0, 0, None))(w, X, y, jnp.eye(p, dtype=F32)))
    tol = 1e-5 * max(1.0, float(np.max(np.abs(vals))))
    return bool((vals >= J.lo - tol).all() and (vals <= J.hi + tol).all())


@pytest.mark.parametrize("seed", range(10))
def test_derivative_bounds_hold_on_random_piecewise_losses(seed):
    """The bound interpreter on the derivative program JAX builds for the analyzer (forward mode, vmapped over a
    tangent basis) holds every derivative at random points and at points on the switches (theta in [-2, 2]^3,
    x in [-1, 1]^3, y in [-1, 1])."""
    rng = np.random.default_rng(300 + seed)
    for _ in range(5):
        assert _check_derivative_bounds(_random_piece(rng), rng, [-1.5, -1.0, -0.75, 0.0, 0.5, 1.0, 1.5]), seed


def test_a_predicate_broadcast_along_another_axis_does_not_narrow():
    """out[i, j] = r[j] where r[i] > 0, else 1/2: the predicate is broadcast along axis 0 and the case along
    axis 1, so where the case is chosen nothing is known of r[j]: the box keeps r's [-1, 1]. Broadcast along the
    same axis, the case is narrowed to [0, 1] (and 1/2 lies in it)."""
    from jax import lax
    from bayesdp.analysis.structure import Bound, Bounds
    n = 3

    def f(r, case_dims):
        pred = lax.broadcast_in_dim(r > 0, (n, n), (0,))
        case = lax.broadcast_in_dim(r, (n, n), case_dims)
        return lax.select(pred, case, jnp.full((n, n), 0.5, F32))

    pts = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (500, n)), F32)
    for dims, want_lo in (((1,), -1.0), ((0,), 0.0)):
        closed = jax.make_jaxpr(lambda r: f(r, dims))(jnp.zeros(n, F32))
        [b] = Run(Bounds()).program(closed, [Bound.box(np.full(n, -1.0), np.full(n, 1.0))])
        vals = np.asarray(jax.vmap(lambda r: f(r, dims))(pts))
        assert (vals >= b.lo).all() and (vals <= b.hi).all()
        assert (b.lo == want_lo).all() and (b.hi == 1.0).all(), (dims, b.lo)
        if dims == (1,):
            assert vals.min() < -0.9                 # the unnarrowed box is needed


@pytest.mark.parametrize("tau", [0.3, 0.5, 0.9])
def test_pinball_loss_certifies_at_max_tau(tau):
    """The quantile loss rho_tau(r) = tau r (r >= 0), (tau - 1) r (r < 0): |rho'| <= max(tau, 1 - tau), the two
    sides meet at 0; the sup of the per-record gradient is max(float32(tau), -float32(tau - 1)) R: the two slopes
    as the program holds them (Python computes tau - 1, the program keeps it as a float32 literal)."""
    want = max(float(np.float32(tau)), -float(np.float32(tau - 1)))
    dom = Domain.parse(["X.norm=1", "y.min=-2", "y.max=2"])
    R = dom.get("X").certified_norm
    rep = analyze(_regression(lambda r: jnp.where(r >= 0, tau * r, (tau - 1) * r)), _data(), dom)
    G = rep.constants.record_grad_bound
    assert G is not None and want * R <= G <= want * R * (1 + 1e-9), (G, want)


@pytest.mark.parametrize("c", [1.0, 2.0, 0.25])
def test_a_squared_loss_capped_with_minimum(c):
    """l = jnp.minimum(r ** 2, c) (a truncated quadratic): JAX's derivative is 2 r times the weight of min, which
    is 0 unless fl(r^2) <= c, so |l'| <= 2 r_max (r_max the largest float32 with fl(r * r) <= c, about sqrt(c)),
    and the analyzer's bound is 2 sqrt(c / (1 - u))."""
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    rep = analyze(_regression(lambda r: jnp.minimum(r ** 2, c)), _data(), dom)
    G = rep.constants.record_grad_bound
    r_max, derived = _square_cap(c)
    assert G is not None and 2.0 * r_max * R <= G <= 2.0 * derived * R * (1 + 1e-9), (G, r_max, derived)


def test_maximum_weight_narrows_the_other_way():
    """l = -jnp.maximum(-(r * r), -1) = min(r^2, 1) through max: |l'| <= 2; and jnp.maximum(r * r, 1) has
    derivative 2 r where r^2 >= 1: unbounded, refused."""
    dom = Domain.parse(DOMAIN)
    R = dom.get("X").certified_norm
    G = analyze(_regression(lambda r: -jnp.maximum(-(r * r), -1.0)), _data(), dom).constants.record_grad_bound
    r_max, derived = _square_cap(1.0)
    assert G is not None and 2.0 * r_max * R <= G <= 2.0 * derived * R * (1 + 1e-9), G
    assert analyze(_regression(lambda r: jnp.maximum(r * r, 1.0)), _data(), dom).constants.record_grad_bound is None


@pytest.mark.parametrize("seed", range(6))
def test_derivative_bounds_hold_with_min_and_max_weights(seed):
    """Random g(op(a(r), c)) * h(r) with op minimum or maximum and a in {r, |r|, r^2, -r, -r^2}: the derivative
    program's bounds hold on random points and on points at and next to c."""
    rng = np.random.default_rng(500 + seed)
    for _ in range(6):
        c = float(np.float32(rng.uniform(-1.0, 1.5)))
        op = [jnp.minimum, jnp.maximum][int(rng.integers(2))]
        kind = int(rng.integers(5))
        outer = _STEPS[int(rng.integers(len(_STEPS)))]
        times = [lambda r: 1.0, lambda r: r, jnp.tanh][int(rng.integers(3))]
        swap = bool(rng.integers(2))

        def piece(r, c=c, op=op, kind=kind, outer=outer, times=times, swap=swap):
            a = [r, jnp.abs(r), r * r, -r, -(r * r)][kind]
            m = op(c, a) if swap else op(a, c)
            return outer(m) * times(r)
        root = float(np.sqrt(abs(c)))
        assert _check_derivative_bounds(piece, rng, [c, -c, root, -root, 0.0]), (seed, c, op, kind, swap)


def test_a_select_of_three_cases_is_never_claimed_by_the_rule_itself():
    # jnp.select's select_n has an integer index and three cases: continuous_at_switch answers only for two cases
    # (the affinity interpreter asks it for no other; the rule must not claim one on its own either)
    from bayesdp.analysis.structure.switch import continuous_at_switch
    closed = jax.make_jaxpr(lambda r: jnp.select([r < 0.0, r < 1.0], [r, r], r))(jnp.zeros(4, F32))
    run = Run(Affinity())
    run.program(closed, [af.A])
    [eqn] = [e for e in closed.jaxpr.eqns if e.primitive.name == "select_n"]
    assert len(eqn.invars) == 4 and continuous_at_switch(run, eqn) is False


def _chain(r, m):
    """r, then m times + 1 and - 1: 2m equations whose exact value is r again."""
    x = r
    for _ in range(m):
        x = (x + 1.0) - 1.0
    return x


def test_a_case_is_evaluated_through_256_equations_and_no_more():
    # _DEPTH = 256: the exact evaluation of a case at the switch point looks up at most 256 equations; past that
    # the select is not proven (a resource limit: no claim, never a wrong one). The evaluation recurses once per
    # equation, so Python's stack is raised here: the budget, not the stack, must decide (a mutation tool's
    # wrappers add frames to every call)
    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        assert _grad_ok(lambda t: (lambda r: jnp.where(r > 0.0, _chain(r, 128), r))(t * 2.0 - 1.0))
        assert not _grad_ok(lambda t: (lambda r: jnp.where(r > 0.0, _chain(r, 129), r))(t * 2.0 - 1.0))
    finally:
        sys.setrecursionlimit(limit)


def test_a_case_deeper_than_the_python_stack_is_not_proven():
    # |r| < -1 never holds: no switch point, and only the finiteness check reads the cases; a chain of 1200
    # equations exhausts Python's stack before the check's own budget (4 x 256): no claim, and no RecursionError
    assert not _grad_ok(lambda t: (lambda r: jnp.where(jnp.abs(r) < -1.0, _chain(r, 600), r))(t * 2.0 - 1.0))
    assert _grad_ok(lambda t: (lambda r: jnp.where(jnp.abs(r) < -1.0, _chain(r, 100), r))(t * 2.0 - 1.0))


def test_an_integer_piece_of_piecewise_is_exact_only_within_the_float_s_integers():
    # jnp.piecewise converts an integer piece (and its default 0) to float32: exact up to 2^24. 3 meets r + 2 at 1;
    # the default 0 meets r at 0; 2^24 + 1 = 16777217 would meet r + 2^24 at 1, but float32 holds it as 16777216.
    # JAX 0.7.0 (the oldest supported, CI's oldest environment) writes jnp.piecewise so that the rule does not read
    # it: nothing is proven there (sound), so only the refusals are checked on JAX < 0.10
    new_jax = tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 10)
    if new_jax:
        assert _grad_ok(lambda t: (lambda r: jnp.piecewise(r, [r < 1.0], [lambda r: r + 2.0, 3]))(t * 2.0 - 1.0))
        assert _grad_ok(lambda t: (lambda r: jnp.piecewise(r, [r < 0.0], [lambda r: r]))(t * 2.0 - 1.0))
    assert not _grad_ok(lambda t: (lambda r: jnp.piecewise(r, [r < 1.0], [lambda r: r + 16777216.0, 16777217]))(
        t * 2.0 - 1.0))
    assert not _grad_ok(lambda t: (lambda r: jnp.piecewise(r, [r < 1.0], [lambda r: r + 2.0, 4]))(t * 2.0 - 1.0))
    # 2^24 itself is held: it meets r + (2^24 - 1) at 1
    assert not new_jax or _grad_ok(lambda t: (lambda r: jnp.piecewise(r, [r < 1.0], [lambda r: r + 16777215.0, 16777216]))(
        t * 2.0 - 1.0))


def test_select_conditions_combined_with_or_and_not():
    # a dead zone written with | and ~: |r| - 1 outside [-1, 1], 0 inside; the cases meet at -1 and 1 (both 0)
    assert _grad_ok(lambda t: (lambda r: jnp.select([(r < -1.0) | (r > 1.0)], [jnp.abs(r) - 1.0], 0.0))(
        t * 4.0 - 2.0))
    assert _grad_ok(lambda t: (lambda r: jnp.select([~(jnp.abs(r) <= 1.0)], [jnp.abs(r) - 1.0], 0.0))(
        t * 4.0 - 2.0))
    # the same with a jump of 1 outside: refused
    assert not _grad_ok(lambda t: (lambda r: jnp.select([(r < -1.0) | (r > 1.0)], [jnp.abs(r)], 0.0))(
        t * 4.0 - 2.0))
    # r inside (-1, 1), |r| outside: they meet at 1 but not at -1 (-1 against 1)
    assert not _grad_ok(lambda t: (lambda r: jnp.select([(r > -1.0) & (r < 1.0)], [r], jnp.abs(r)))(t * 4.0 - 2.0))
    # r - 1 above 1, 5 below -1, 0 between: a jump at -1 (5 against 0)
    assert not _grad_ok(lambda t: (lambda r: jnp.select([~(r <= 1.0), r < -1.0], [r - 1.0, 5.0], 0.0))(
        t * 4.0 - 2.0))


def test_a_guard_is_read_as_its_value_only_when_both_cases_are_that_value():
    """``jnp.piecewise`` guards each function's argument as ``select_n(p, stop_gradient(x), x)``: ``x``'s value
    everywhere (``switch.guarded``). A select whose first case is ``stop_gradient`` of another value, or another
    function of ``x``, is no such guard: where ``p`` is False its value is that other one. ``f(t) = where(t > -1,
    g(t), t)`` with ``g(t) = where(t > 0, t, h(t))``: at the outer switch ``t = -1`` the cases are ``g(-1) = h(-1)
    = 1`` and ``-1``, a jump of 2; read as ``t`` the inner select would give ``-1`` there, and no jump (a
    continuity claim the mutants ``guarded`` 23 and 24 of docs/mutation.md made)."""
    sel = jax.lax.select           # select_n at the top of the program, as jnp.piecewise writes its guard
    for h in (lambda t: jax.lax.stop_gradient(-t), lambda t: -t):
        assert not _grad_ok(lambda t: sel(t > -1.0, sel(t > 0.0, t, h(t)), t))
    # the same shape without the jump (the outer case -t is 1 at -1, as |t| is): proven continuous
    assert _grad_ok(lambda t: sel(t > -1.0, sel(t > 0.0, t, -t), -t))
    # stop_gradient of a constant (its zero derivative is the true one): g(t) = relu(t) is 0 at -1, the outer case
    # t is -1 there: a jump; with the outer case 0 instead there is none
    zero = lambda t: jax.lax.stop_gradient(jnp.zeros_like(t))
    assert not _grad_ok(lambda t: sel(t > -1.0, sel(t > 0.0, t, zero(t)), t))
    assert _grad_ok(lambda t: sel(t > -1.0, sel(t > 0.0, t, zero(t)), jnp.zeros_like(t)))


# ---------------------------------------------------------------------------
# the survivors of the 2026-11-27 mutation run of switch.py (docs/mutation.md, "switch"): each select below is
# decided by hand; the comment says which wrong claim a mutant made


def test_every_condition_must_be_a_comparison_or_a_combination_of_them():
    """``(t > 0) ^ (t > 1)`` (xor, true on (0, 1]) switches at 0 and 1 but is no and/or/not of comparisons: its
    switch points are not collected, so the select is refused. The case it chooses jumps by 5 at 0; the other
    condition's switch at -1 is continuous. (``_comparisons`` returning True for it: proven continuous.)"""
    xor = jnp.logical_xor
    assert not _grad_ok(lambda t: jnp.select([t < -1.0, xor(t > 0.0, t > 1.0)], [t, t + 5.0], default=t))
    # the same select with the combination written as and/not: its switches are read, and the jump found
    assert not _grad_ok(lambda t: jnp.select([t < -1.0, (t > 0.0) & ~(t > 1.0)], [t, t + 5.0], default=t))
    assert _grad_ok(lambda t: jnp.select([t < -1.0, (t > 0.0) & ~(t > 1.0)], [t, t], default=t))
    # a condition chosen by a where (t > 1 or t < -1): the index is evaluated exactly at any point, but its switches
    # at -1 and 1 (jumps by 5) are not among the leaves of the other condition (at -5, where the cases meet)
    picked = lambda t: jnp.where(t > 0.0, t > 1.0, t < -1.0)
    assert not _grad_ok(lambda t: jnp.select([t < -5.0, picked(t)], [t + 5.0, t + 5.0], default=t))


def test_a_condition_nested_deeper_than_the_combination_limit_is_not_read():
    """``(t > 0) & (t > -1) & ... & (t > -39)`` is ``t > 0``, its leaf ``t > 0`` 39 and-s deep, past the 32 that
    ``_comparisons`` follows: refused, although its case jumps only there (at 0, by 1). (Returning True past the
    limit: the leaves above it switch at -39..-7, where nothing jumps: proven continuous.)"""
    def deep(t):
        c = t > 0.0
        for k in range(1, 40):
            c = c & (t > -float(k))
        return c
    assert not _grad_ok(lambda t: jnp.select([deep(t)], [t + 1.0], default=t))


@pytest.mark.parametrize("ands, proven", [(31, True), (32, True), (33, False)])
def test_the_combination_limit_is_32_and_s_deep(ands, proven):
    """The limit itself: the leaf ``t > 0`` under ``ands`` and-s is read at depth ``ands``, and ``_comparisons``
    reads depth 32 and refuses 33. The cases (``t * 1`` and ``t``) are equal everywhere, so the select is proven
    continuous exactly when every leaf is read. (A limit one lower, a count started at 1 or stepped by 2:
    32 refused; one higher, no count or a count going down: 33 proven.)"""
    def deep(t):
        c = t > 0.0
        for k in range(1, ands + 1):
            c = c & (t > -float(k))
        return c
    assert _grad_ok(lambda t: jnp.select([deep(t)], [t * 1.0], default=t)) is proven


def _row(b, shape):
    return jax.lax.broadcast_in_dim(b, (1,) + shape, tuple(range(1, len(shape) + 1)))


@pytest.mark.parametrize("n, proven", [(8, True), (9, True), (10, False)])
def test_the_rows_of_an_index_are_read_through_8_nested_concatenations(n, proven):
    """``jnp.select``'s index written by hand as ``argmax(concatenate([False, concatenate([c_1, concatenate([c_2,
    ...])])]))``, n conditions in n - 1 nested concatenations under the outer one: the innermost is read at depth
    n - 1, and ``_rows`` reads depth 8 and refuses 9. The cases are equal (``t * 1`` and ``t``): proven exactly
    when every row is read. (A limit one lower, a depth started at 1 or stepped by 2 in ``_unit_rows``: n = 9
    refused; one higher, ``and`` for ``or``, no step or a step down: n = 10 proven.)"""
    def select(t):
        conds = [t > float(k) for k in range(n)]
        arr = _row(conds[-1], t.shape)
        for c in reversed(conds[:-1]):
            arr = jax.lax.concatenate([_row(c, t.shape), arr], 0)
        arr = jax.lax.concatenate([jax.lax.broadcast_in_dim(False, (1,) + t.shape, ()), arr], 0)
        return jax.lax.select_n(jax.lax.argmax(arr, 0, jnp.int32), t, *[t * 1.0] * n)
    assert _grad_ok(select) is proven


@pytest.mark.parametrize("calls, proven", [(5, True), (6, True), (7, False)])
def test_a_piecewise_count_is_read_through_8_nested_calls(calls, proven):
    """``jnp.piecewise``'s index ``clamp(0, argmax(cumsum(rows)), n)`` with the count in ``calls`` nested jit calls
    (``jnp.cumsum`` adds its own): the rows' concatenation is read at depth ``calls + 2``, past 8 refused. Equal
    cases: proven exactly when the rows are read. (A count of calls that resets, does not step or steps down:
    7 proven; one that steps by 2 through calls or through the cumulative sum, or starts at 1: 6 refused.)"""
    def select(t):
        rows = jax.lax.concatenate([jax.lax.broadcast_in_dim(False, (1,) + t.shape, ())]
                                   + [_row(t > float(k), t.shape) for k in range(3)], 0)
        count = lambda r: jnp.cumsum(r.astype(jnp.int32), axis=0)
        for _ in range(calls):
            count = jax.jit(count)
        j = jax.lax.clamp(0, jnp.argmax(count(rows), axis=0).astype(jnp.int32), 3)
        return jax.lax.select_n(j, t, *[t * 1.0] * 3)
    assert _grad_ok(select) is proven


def test_an_index_of_another_shape_or_not_a_select_s_is_refused():
    """A scalar index over vector cases (theta's first coordinate picks the case of every coordinate) and an index
    counted by hand (``(t > 0) + (t > 1)``) are not the index ``jnp.select`` builds: refused, and both jump (by 1
    at t[0] = 0; by 1 at 0 and at 1). (``continuous_select`` returning True for them: proven continuous.)"""
    def scalar_index(t):
        j = jnp.argmax(jnp.stack([False, t[0] < 0.0]))
        return jax.lax.select_n(j, t, t + 1.0)
    assert not _grad_ok(scalar_index)
    counted = lambda t: jax.lax.select_n((t > 0.0).astype(jnp.int32) + (t > 1.0).astype(jnp.int32), t, t + 1.0,
                                         t + 2.0)
    assert not _grad_ok(counted)


def test_conditions_on_the_same_value_computed_twice_are_read_together():
    """``2 t`` computed twice (two equations, one value): the conditions' switches at -1 and 1 are matched to one
    base by value (``_same``), and the Huber-like cases meet at both (0.5). (Matching by identity only: refused.)"""
    def huber2(t):
        r1, r2 = t * 2.0, t * 2.0
        return jnp.select([r1 < -1.0, r2 > 1.0], [-r1 - 0.5, r2 - 0.5], default=r1 * r1 / 2.0)
    assert _grad_ok(huber2)


def test_every_case_must_be_finite_where_it_is_not_chosen():
    """The default ``(t - 1)(t - 2) / t + t`` is chosen on [1, 2] and meets the other cases there (1 at 1, 2 at 2),
    but is infinite at 0, where it is not chosen: reverse mode multiplies it by zero there (NaN). Refused.
    (Not checking the first case of ``select_n``, the default: proven.)"""
    assert not _grad_ok(lambda t: jnp.select([t < 1.0, t > 2.0], [t, t], default=(t - 1.0) * (t - 2.0) / t + t))
    assert _grad_ok(lambda t: jnp.select([t < 1.0, t > 2.0], [t, t], default=(t - 1.0) * (t - 2.0) + t))


def test_a_jump_on_one_side_of_a_switch_is_found():
    """``t <= 3`` chooses its case at 3 itself, so the jump (to ``8 - t``, 5 at 3) is only on the right of 3,
    between the switches 3 and 4 (at 4 every case is 4). The probe between two switches must lie between them
    (``(a + b) / 3`` does not), and the probe right of the last switch right of it: ``t <= 0`` jumps to ``t + 1``
    only on the right of 0."""
    assert not _grad_ok(lambda t: jnp.select([t <= 3.0, t > 4.0], [t, t], default=8.0 - t))
    assert _grad_ok(lambda t: jnp.select([t <= 3.0, t > 4.0], [t, t], default=t))
    assert not _grad_ok(lambda t: jnp.select([t <= 0.0], [t], default=t + 1.0))


def test_a_case_read_from_the_data_is_refused_not_a_crash():
    """A case that is a data value (not a function of theta's compared value): no proof, and no exception out of
    the analysis. (Reading on past an input without a producer: AttributeError.)"""
    assert not _grad_ok_data(lambda t, y: jnp.select([t < 0.0], [y], default=t))


@jax.jit
def _count_rows(rows):
    return jnp.cumsum(rows.astype(jnp.int32), axis=0)      # jnp.piecewise's count, in a call as it writes it


@jax.jit
def _count_across(rows):
    return jnp.cumsum(rows.astype(jnp.int32), axis=1)      # a count along the OTHER axis: across the coordinates


def _piecewise_by_hand(t, hi, cases, count=_count_rows):
    """``jnp.piecewise``'s index written out (``clamp(0, argmax(cumsum([False, c, c])), hi)``) with both
    conditions ``t > 0``: the count jumps from 0 to 2 at 0."""
    c = jax.lax.broadcast_in_dim(t > 0.0, (1,) + t.shape, (1,))
    rows = jnp.concatenate([jnp.zeros((1,) + t.shape, bool), c, c], axis=0)
    idx = jax.lax.clamp(0, jnp.argmax(count(rows), axis=0).astype(jnp.int32), hi)
    return jax.lax.select_n(idx, *cases(t))


def test_a_piecewise_index_clamped_below_its_count_is_read_as_it_is_computed():
    """Clamped at 1 (not at the count 2), the index goes 0 -> 1 at 0: the cases ``t`` and ``t + 7`` there, a jump.
    Clamped at 2 it goes 0 -> 2: ``t`` and ``t``, none. (Taking the clamp at 1 for jnp.piecewise's own, whose
    index is the count: 0 -> 2 read at 0 in both, the jump missed.)"""
    assert not _grad_ok(lambda t: _piecewise_by_hand(t, 1, lambda t: (t, t + 7.0, t)))
    assert _grad_ok(lambda t: _piecewise_by_hand(t, 2, lambda t: (t, t + 7.0, t)))


def test_a_count_across_the_coordinates_is_not_a_piecewise_index():
    """Counted along axis 1, coordinate i's index is 1 once any of t_0..t_i is positive: coordinate 0 jumps from
    ``t`` to ``t + 7`` at t_0 = 0. Read as jnp.piecewise's count (0 -> 2 at each coordinate's own 0: ``t`` and
    ``t``) the jump is missed; not read so, the select is refused."""
    assert not _grad_ok(lambda t: _piecewise_by_hand(t, 2, lambda t: (t, t + 7.0, t), _count_across))


def test_a_select_indexed_by_an_integer_data_array():
    """The index is a record's integer (not a function of theta): no switch in theta, each coordinate's case is
    continuous, so the select is; and an index with no producer is read without an exception."""
    closed = jax.make_jaxpr(lambda t, j: jax.lax.select_n(j, t, t + 1.0, 2.0 * t))(
        jnp.zeros(4, F32), jnp.zeros(4, jnp.int32))
    [out] = Run(Affinity()).program(closed, [af.A, af.C])
    assert out.grad_ok



@jax.jit
def _count_falses(rows):
    ones, zeros = jnp.ones(rows.shape, jnp.int32), jnp.zeros(rows.shape, jnp.int32)
    return jnp.cumsum(jax.lax.select_n(rows, ones, zeros), axis=0)     # counts the rows that do NOT hold


def test_a_count_of_something_else_than_the_rows_is_not_a_piecewise_index():
    """The count of the rows that do not hold: with ``c_1 = t > 0``, ``c_2 = t > 1`` the index is 2 for t <= 1 and 0
    beyond, so the cases ``(2 t, t, t)`` jump at 1 (1 to 2). Read as jnp.piecewise's count (0, 1, 2 on the three
    intervals) the cases meet at 0 and at 1: the jump missed. Refused."""
    def f(t):
        c1 = jax.lax.broadcast_in_dim(t > 0.0, (1,) + t.shape, (1,))
        c2 = jax.lax.broadcast_in_dim(t > 1.0, (1,) + t.shape, (1,))
        rows = jnp.concatenate([jnp.zeros((1,) + t.shape, bool), c1, c2], axis=0)
        idx = jax.lax.clamp(0, jnp.argmax(_count_falses(rows), axis=0).astype(jnp.int32), 2)
        return jax.lax.select_n(idx, 2.0 * t, t, t)
    assert not _grad_ok(f)


def test_an_index_read_off_an_iota_is_no_select_s_index():
    """``argmax`` of an ``iota`` along axis 0 is a constant index (the last row, 1): not ``jnp.select``'s or
    ``jnp.piecewise``'s rows. The inner select is then ``t + 1`` everywhere, so the outer one jumps at 0 (from ``t``
    to ``t + 1``): refused, and without an exception (an ``iota`` taken for a concatenation has no rows:
    ``IndexError``)."""
    def f(t):
        idx = jnp.argmax(jax.lax.broadcasted_iota(jnp.int32, (2,) + t.shape, 0), axis=0).astype(jnp.int32)
        return jax.lax.select(t > 0.0, jax.lax.select_n(idx, t, t + 1.0), t)
    assert not _grad_ok(f)


def test_rows_made_by_reshape_are_read_without_an_exception():
    """jnp.piecewise's rows are broadcasts; rows made by ``reshape`` (the same values) are not read as its rows
    (no ``broadcast_dimensions`` to check), and the analysis does not raise. The cases ``(t, t + 7)`` jump at 0:
    refused either way."""
    def f(t):
        c = (t > 0.0).reshape((1,) + t.shape)
        rows = jnp.concatenate([jnp.zeros((1,) + t.shape, bool), c], axis=0)
        idx = jax.lax.clamp(0, jnp.argmax(_count_rows(rows), axis=0).astype(jnp.int32), 1)
        return jax.lax.select_n(idx, t, t + 7.0)
    assert not _grad_ok(f)


def test_a_select_whose_first_case_is_theta_itself_is_read():
    """The inner select's first case is theta itself (an input: no producer to read a guard from). ``g(t) = t`` up
    to 1, ``2 t - 1`` beyond: continuous at 1, and ``g(0) = 0`` meets the outer case ``t`` at 0. Proven, without
    an exception."""
    sel = jax.lax.select
    assert _grad_ok(lambda t: sel(t > 0.0, sel(t > 1.0, 2.0 * t - 1.0, t), t))


def test_a_guarded_case_must_be_finite_where_it_is_not_chosen():
    """jnp.piecewise's body written at the top of the program: case 0 reads its argument through the guard
    ``select_n(idx == 0, stop_gradient(t), t)``. As ``1 / (t - 5)`` it meets case 1 (``t - 0.2``) at 0, where the
    index switches, but is infinite at 5, where it is not chosen (reverse mode: NaN): refused. As ``t^2 - 0.2``
    (finite everywhere) it is proven. (The guard's dependence on t dropped: the division by a value of t unseen.)"""
    def f(t, case0):
        c = jax.lax.broadcast_in_dim(t > 0.0, (1,) + t.shape, (1,))
        rows = jnp.concatenate([jnp.zeros((1,) + t.shape, bool), c], axis=0)
        idx = jax.lax.clamp(0, jnp.argmax(_count_rows(rows), axis=0).astype(jnp.int32), 1)
        g0 = jax.lax.select_n(idx == 0, jax.lax.stop_gradient(t), t)
        return jax.lax.select_n(idx, case0(g0), t - 0.2)
    assert _grad_ok(lambda t: f(t, lambda x: x * x - 0.2))
    assert not _grad_ok(lambda t: f(t, lambda x: 1.0 / (x - 5.0)))
    assert not _grad_ok(lambda t: f(t, lambda x: (x - 5.0) ** -1))     # the same, as a negative power
