"""The bound interpreter, primitive by primitive: every rule of its table is checked against concrete
evaluation at random points of random input boxes (and the box corners).  A primitive added to the table
without a case here fails :func:`test_every_rule_has_a_case`.

The bounds are for exact real arithmetic on the program; the concrete evaluation runs in float32, so the
check allows float32 rounding (a relative 4e-7) and nothing else.
"""

import math
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src.ad_util import add_jaxvals_p

from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import bounds as B
from bayesdp.analysis.structure.bounds import RULES, Bound, Bounds, data_input, iv_add, iv_mul

F32 = jnp.float32
I32 = jnp.int32

# name -> (function of the inputs, [(shape, dtype, low, high)] per input); ranges are where boxes are drawn
P = (-3.0, 3.0)
POS = (0.1, 4.0)
UNIT = (-0.95, 0.95)
CASES = {
    # JAX's logaddexp is a custom_jvp_call: its own box [max(a, b), logaddexp(a_hi, b_hi)] (issue 23: softplus floors)
    "custom_jvp_call": (lambda a, b: jnp.logaddexp(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "add": (lambda a, b: lax.add(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "add_any": (lambda a, b: add_jaxvals_p.bind(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "sub": (lambda a, b: lax.sub(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "neg": (lambda a: lax.neg(a), [((4,), F32, *P)]),
    "mul": (lambda a, b: lax.mul(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "div": (lambda a, b: lax.div(a, b), [((4,), F32, *P), ((4,), F32, *POS)]),
    "max": (lambda a, b: lax.max(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "min": (lambda a, b: lax.min(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "clamp": (lambda a: lax.clamp(-1.0, a, 2.0), [((4,), F32, *P)]),
    "abs": (lambda a: lax.abs(a), [((4,), F32, *P)]),
    "sign": (lambda a: lax.sign(a), [((4,), F32, *P)]),
    "integer_pow": (lambda a: lax.integer_pow(a, 3) + lax.integer_pow(a, 2) + lax.integer_pow(a, -2), [((4,), F32, *POS)]),
    "square": (lambda a: lax.square(a), [((4,), F32, *P)]),
    "pow": (lambda a, b: lax.pow(a, b), [((4,), F32, *POS), ((4,), F32, -2.0, 2.0)]),
    "select_n": (lambda p, a, b: lax.select_n(p > 0, a, b), [((4,), F32, *P), ((4,), F32, *P), ((4,), F32, *P)]),
    "convert_element_type": (lambda a: lax.convert_element_type(a, I32).astype(F32) + (a > 0).astype(F32),
                             [((4,), F32, *P)]),
    "copy": (lambda a: lax.copy_p.bind(a), [((4,), F32, *P)]),
    "reduce_precision": (lambda a: lax.reduce_precision(a, 5, 7), [((4,), F32, *P)]),
    "exp": (lambda a: lax.exp(a), [((4,), F32, *P)]),
    "exp2": (lambda a: lax.exp2(a), [((4,), F32, *P)]),
    "log": (lambda a: lax.log(a), [((4,), F32, *POS)]),
    "log1p": (lambda a: lax.log1p(a), [((4,), F32, *POS)]),
    "expm1": (lambda a: lax.expm1(a), [((4,), F32, *P)]),
    "tanh": (lambda a: lax.tanh(a), [((4,), F32, *P)]),
    "logistic": (lambda a: lax.logistic(a), [((4,), F32, *P)]),
    "sqrt": (lambda a: lax.sqrt(a), [((4,), F32, *POS)]),
    "rsqrt": (lambda a: lax.rsqrt(a), [((4,), F32, *POS)]),
    "cbrt": (lambda a: lax.cbrt(a), [((4,), F32, *P)]),
    "atan": (lambda a: lax.atan(a), [((4,), F32, *P)]),
    "asinh": (lambda a: lax.asinh(a), [((4,), F32, *P)]),
    "sinh": (lambda a: lax.sinh(a), [((4,), F32, *P)]),
    "asin": (lambda a: lax.asin(a), [((4,), F32, *UNIT)]),
    "acos": (lambda a: lax.acos(a), [((4,), F32, *UNIT)]),
    "acosh": (lambda a: lax.acosh(a), [((4,), F32, 1.0, 4.0)]),
    "atanh": (lambda a: lax.atanh(a), [((4,), F32, *UNIT)]),
    "sin": (lambda a: lax.sin(a), [((4,), F32, *P)]),
    "cos": (lambda a: lax.cos(a), [((4,), F32, *P)]),
    "atan2": (lambda a, b: lax.atan2(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "floor": (lambda a: lax.floor(a), [((4,), F32, *P)]),
    "ceil": (lambda a: lax.ceil(a), [((4,), F32, *P)]),
    "round": (lambda a: lax.round(a), [((4,), F32, *P)]),
    "nextafter": (lambda a, b: lax.nextafter(a, b), [((4,), F32, *P), ((4,), F32, *P)]),
    "rem": (lambda a, b: lax.rem(a, b), [((4,), F32, *P), ((4,), F32, *POS)]),
    "is_finite": (lambda a: lax.is_finite(a).astype(F32), [((4,), F32, *P)]),
    "erf": (lambda a: lax.erf(a), [((4,), F32, *P)]),
    "erfc": (lambda a: lax.erfc(a), [((4,), F32, *P)]),
    "erf_inv": (lambda a: lax.erf_inv(a), [((4,), F32, *UNIT)]),
    "digamma": (lambda a: lax.digamma(a), [((4,), F32, *POS)]),
    "lt": (lambda a, b: (a < b).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "le": (lambda a, b: (a <= b).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "gt": (lambda a, b: (a > b).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "ge": (lambda a, b: (a >= b).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "eq": (lambda a, b: (jnp.floor(a) == jnp.floor(b)).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "ne": (lambda a, b: (jnp.floor(a) != jnp.floor(b)).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "and": (lambda a, b: ((a > 0) & (b > 0)).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "or": (lambda a, b: ((a > 0) | (b > 0)).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "not": (lambda a: (~(a > 0)).astype(F32), [((4,), F32, *P)]),
    "xor": (lambda a, b: ((a > 0) ^ (b > 0)).astype(F32), [((4,), F32, *P), ((4,), F32, *P)]),
    "broadcast_in_dim": (lambda a: lax.broadcast_in_dim(a, (2, 4, 3), (1,)), [((4,), F32, *P)]),
    "transpose": (lambda a: lax.transpose(a, (1, 0)), [((2, 3), F32, *P)]),
    "squeeze": (lambda a: lax.squeeze(a, (1,)), [((3, 1), F32, *P)]),
    "rev": (lambda a: lax.rev(a, (0,)), [((4,), F32, *P)]),
    "slice": (lambda a: lax.slice(a, (1,), (4,), (2,)), [((5,), F32, *P)]),
    "reshape": (lambda a: lax.reshape(a, (3, 2)), [((2, 3), F32, *P)]),
    "concatenate": (lambda a, b: lax.concatenate([a, b], 0), [((2,), F32, *P), ((3,), F32, *P)]),
    "split": (lambda a: lax.split(a, (1, 3), 0)[1], [((4,), F32, *P)]),
    "pad": (lambda a: lax.pad(a, 0.5, ((1, -1, 1),)), [((3,), F32, *P)]),
    "iota": (lambda a: a + lax.iota(F32, 4), [((4,), F32, *P)]),
    "reduce_sum": (lambda a: jnp.sum(a, axis=1), [((2, 3), F32, *P)]),
    "reduce_max": (lambda a: jnp.max(a, axis=1), [((2, 3), F32, *P)]),
    "reduce_min": (lambda a: jnp.min(a, axis=1), [((2, 3), F32, *P)]),
    "reduce_and": (lambda a: jnp.all(a > 0, axis=1).astype(F32), [((2, 3), F32, *P)]),
    "reduce_or": (lambda a: jnp.any(a > 0, axis=1).astype(F32), [((2, 3), F32, *P)]),
    "argmax": (lambda a: jnp.argmax(a, axis=1).astype(F32), [((2, 3), F32, *P)]),
    "argmin": (lambda a: jnp.argmin(a, axis=1).astype(F32), [((2, 3), F32, *P)]),
    "cumsum": (lambda a: lax.cumsum(a, 0), [((4,), F32, *P)]),
    "cummax": (lambda a: lax.cummax(a, 0, reverse=True), [((4,), F32, *P)]),
    "cummin": (lambda a: lax.cummin(a, 0), [((4,), F32, *P)]),
    "cumlogsumexp": (lambda a: lax.cumlogsumexp(a, 0), [((4,), F32, *P)]),
    "cumprod": (lambda a: lax.cumprod(a, 0), [((4,), F32, *P)]),
    "sort": (lambda a: lax.sort(a, 0), [((4,), F32, *P)]),
    "top_k": (lambda a: lax.top_k(a, 2)[0] + lax.top_k(a, 2)[1].astype(F32), [((4,), F32, *P)]),
    "gather": (lambda a, i: a[jnp.floor(i).astype(I32)], [((5,), F32, *P), ((3,), F32, 0.0, 4.99)]),
    "dynamic_slice": (lambda a, i: lax.dynamic_slice(a, (jnp.floor(i[0]).astype(I32),), (2,)),
                      [((5,), F32, *P), ((1,), F32, 0.0, 4.99)]),
    "dynamic_update_slice": (lambda a, u, i: lax.dynamic_update_slice(a, u, (jnp.floor(i[0]).astype(I32),)),
                             [((5,), F32, *P), ((2,), F32, *P), ((1,), F32, 0.0, 4.99)]),
    "scatter-add": (lambda a, u, i: a.at[jnp.floor(i).astype(I32)].add(u),
                    [((5,), F32, *P), ((3,), F32, *P), ((3,), F32, 0.0, 4.99)]),
    "scatter": (lambda a, u, i: a.at[jnp.floor(i).astype(I32)].set(u),
                [((5,), F32, *P), ((3,), F32, *P), ((3,), F32, 0.0, 4.99)]),
    "dot_general": (lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), [((2, 3), F32, *P), ((3, 4), F32, *P)]),
    "optimization_barrier": (lambda a: lax.optimization_barrier(a), [((4,), F32, *P)]),
    "stop_gradient": (lambda a: lax.stop_gradient(a), [((4,), F32, *P)]),
    "real": (lambda a: lax.real(lax.complex(a, a)), [((4,), F32, *P)]),
}
# special functions whose float32 implementations are accurate to a few ulps, not one
LOOSE = {"digamma", "erf_inv", "erf", "erfc", "lgamma", "acosh", "atanh", "asin", "acos", "cbrt", "pow",
         "logistic", "cumlogsumexp"}
# primitives whose rule is "unbounded" by design (random numbers), or that only re-tag arrays
TOP = {"random_bits", "random_fold_in", "random_seed", "random_split", "random_unwrap", "random_wrap",
       "threefry2x32", "rng_bit_generator", "rng_uniform"}
TAGS = {"sharding_constraint", "mesh_cast", "reshard", "dim_as_value",   # identities / symbolic: tested elsewhere
        "one_minus_square",         # JAX 0.11.2 only: tests/analysis/test_one_minus_square.py
        "stack", "unstack",         # JAX >= 0.8 only: tests/analysis/test_stack_columns.py
        "device_put"}               # tests/analysis/test_replace_one_difference.py (jnp.asarray before JAX 0.8)


def test_every_rule_has_a_case():
    assert set(RULES) <= set(CASES) | TOP | TAGS, sorted(set(RULES) - set(CASES) - TOP - TAGS)


def _boxes(rng, specs):
    boxes = []
    for shape, dtype, lo, hi in specs:
        a, b = rng.uniform(lo, hi, shape), rng.uniform(lo, hi, shape)
        boxes.append((np.minimum(a, b), np.maximum(a, b)))
    return boxes


def _points(rng, boxes, n):
    pts = [[lo + (hi - lo) * rng.random(lo.shape) for lo, hi in boxes] for _ in range(n)]
    pts += [[lo for lo, _ in boxes], [hi for _, hi in boxes]]
    return pts


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_is_sound_on_random_boxes(name):
    fn, specs = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d, _, _ in specs])
    assert name in {e.primitive.name for e in closed.jaxpr.eqns} | {
        e2.primitive.name for e in closed.jaxpr.eqns for p in e.params.values() if hasattr(p, "jaxpr")
        for e2 in getattr(p.jaxpr, "eqns", [])}, f"the case for {name} does not use {name}"
    f = jax.jit(fn)
    for _ in range(6):
        boxes = _boxes(rng, specs)
        ins = [Bound.box(lo, hi) for lo, hi in boxes]
        out = Run(Bounds(), {"m": 7}).program(closed, ins)[0]
        for pt in _points(rng, boxes, 60):
            v = np.asarray(f(*[np.asarray(x, np.float32) for x in pt]), dtype=np.float64)
            tol = (1e-5 if name in LOOSE else 4e-7) * np.maximum(1.0, np.abs(v))
            ok = (v >= out.lo - tol) & (v <= out.hi + tol) | np.isnan(v) & ~(np.isfinite(out.lo) & np.isfinite(out.hi))
            assert ok.all(), (name, pt, v, out.lo, out.hi)


def test_linear_forms_are_sound_and_tight():
    # data argument x (one record, 3 entries) in [-1, 1]^3: value = A x exactly for linear programs
    def prog(x, w):
        return lax.dot_general(x, w, (((1,), (0,)), ((), ()))) * 2.0 - lax.broadcast_in_dim(x[:, 0], (1, 2), (0,))
    w = np.array([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0]])
    closed = jax.make_jaxpr(prog)(jax.ShapeDtypeStruct((1, 3), F32), jax.ShapeDtypeStruct((3, 2), F32))
    x_in = data_input((1, 3), "X", -1.0, 1.0)
    out = Run(Bounds(), {"m": 1}).program(closed, [x_in, Bound.point(w)])[0]
    A = out.lin.A["X"][0]
    expect = 2.0 * w.T - np.array([[1.0, 0, 0], [1.0, 0, 0]])        # d out / d x, exactly
    np.testing.assert_array_equal(A[0], expect)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], expect)
    np.testing.assert_array_equal(out.lin.clo, 0.0)


def test_directed_rounding_brackets_the_exact_result():
    from fractions import Fraction

    rng = np.random.default_rng(1)
    for _ in range(500):
        a, b = (rng.standard_normal(2) * 10.0 ** rng.integers(-8, 8, 2)).tolist()
        for op, exact in ((iv_add, Fraction(a) + Fraction(b)), (iv_mul, Fraction(a) * Fraction(b))):
            lo, hi = op(np.float64(a), np.float64(a), np.float64(b), np.float64(b))
            assert Fraction(float(lo)) <= exact <= Fraction(float(hi))
            assert float(hi) - float(lo) <= 2 * math.ulp(abs(float(exact)))    # at most one ulp each way
    # exact operations stay exact
    assert iv_add(np.float64(1), np.float64(1), np.float64(2), np.float64(2)) == (3.0, 3.0)
    assert iv_mul(np.float64(0.5), np.float64(0.5), np.float64(3), np.float64(3)) == (1.5, 1.5)


def test_record_axis_is_one_slot_standing_for_every_record():
    from jax import export

    (m,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda x: (jnp.sum(x), jnp.cumsum(x), jnp.arange(x.shape[0]) * 1.0, x.shape[0] * 1.0))(
        jax.ShapeDtypeStruct((m,), F32))
    s, c, pos, size = Run(Bounds(), {"m": 1000}).program(closed, [Bound.box(np.array([0.0]), np.array([2.0]))])
    assert (s.lo, s.hi) == (0.0, 2000.0)            # a sum over m records of values in [0, 2]
    assert (c.lo[0], c.hi[0]) == (0.0, 2000.0)
    assert (pos.lo[0], pos.hi[0]) == (0.0, 999.0)   # any position
    assert (size.lo, size.hi) == (1000.0, 1000.0)




# ---------------------------------------------------------------------------
# relational rules (bounds.RELATIONS): JAX's derivatives of softplus / log1p(exp) / sigmoid, where boxes of the
# operands lose that they are computed from one value.  Each case: (program of inputs, input ranges, the exact
# range of the output over all inputs in the ranges, a near-miss program the rule must NOT match); the near miss
# has a wider true range, so a misfiring rule fails the soundness check on random points.

UNB = (-60.0, 60.0)        # drawn boxes; the exact-range claim is checked with a fully unbounded input below
RELATION_CASES = {
    # d softplus(a) = exp(a - logaddexp(a, 0)) t = sigmoid(a) t: in [0, 1] t for every real a
    "logaddexp_gap": (lambda a, t: jax.jvp(jax.nn.softplus, (a,), (t,))[1], (0.0, 1.0),
                      lambda a, b, t: jnp.exp(a - jnp.logaddexp(b, 0.0)) * t),
    # d log1p(exp(a)) = t exp(a) / (exp(a) + 1): in [0, 1] t
    "ratio_of_sum": (lambda a, t: jax.jvp(lambda x: jnp.log1p(jnp.exp(x)), (a,), (t,))[1], (0.0, 1.0),
                     lambda a, b, t: t * jnp.exp(a) / (jnp.exp(b) + 1.0)),
    # d sigmoid(a) = t s (1 - s): in [0, 1/4] t
    "concave_product": (lambda a, t: jax.jvp(jax.nn.sigmoid, (a,), (t,))[1], (0.0, 0.25),
                        lambda a, b, t: jax.nn.sigmoid(a) * (1.0 - jax.nn.sigmoid(b)) * t),
    # d tanh(a) = (t + t tanh(a)) (1 - tanh(a)) = t sech^2(a): in [0, 1] t
    "one_minus_square": (lambda a, t: jax.jvp(jnp.tanh, (a,), (t,))[1], (0.0, 1.0),
                         lambda a, b, t: (t + t * jnp.tanh(a)) * (1.0 - jnp.tanh(b))),
    # d [clip(a, 0) + log1p(exp(-|a|))] = t sigmoid(a) (NumPyro's binary cross-entropy with logits = softplus(a); JAX
    # gives 0 at a = 0 exactly): in [0, 1] t.  Near miss: the exp of another value |b|
    "softplus_parts": (lambda a, t: jax.jvp(lambda x: jnp.clip(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))), (a,), (t,))[1],
                       (0.0, 1.0),
                       lambda a, b, t: jax.jvp(lambda x: jnp.clip(x, 0), (a,), (t,))[1]
                       - lax.select(a >= 0, -t, t) * jnp.exp(-jnp.abs(b)) / (jnp.exp(-jnp.abs(b)) + 1.0)),
    # d log(clip(sigmoid(a), 0.05, 0.95)) = t (1 - s) inside the clip, 0 outside: in [0, 0.95] t (the box rules give
    # t s (1 - s) / clip in [0, 1/4] / [0.05, 0.95] = [0, 5] t).  Near miss: the value divided by ANOTHER clip
    "clipped_sigmoid_log": (lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x), 0.05, 0.95)), (a,),
                                                 (t,))[1], (0.0, 1.0 - float(np.float32(0.05))),   # 1 - L, L the program's float32 0.05
                            lambda a, b, t: jax.jvp(lambda x: jnp.clip(jax.nn.sigmoid(x), 0.05, 0.95), (a,), (t,))[1]
                            / jnp.clip(jax.nn.sigmoid(b), 0.05, 0.95)),
    # (t e) / e = t for e = exp(clip(a)) != 0 (JAX's derivative of xlogy(y, exp(c)), a Poisson log-density): [1, 1] t
    "cancel_factor": (lambda a, t: (lambda e: (t * e) / e)(jnp.exp(jnp.clip(a, -3.0, 3.0))), (1.0, 1.0),
                      lambda a, b, t: (t * jnp.exp(jnp.clip(a, -3.0, 3.0))) / jnp.exp(jnp.clip(b, -3.0, 3.0))),
    # d log(softplus(a)) = t sigmoid(a) / softplus(a): in (0, 1] t (sigmoid <= softplus; the boxes give
    # [0, 1] t / (0, inf) = [0, inf]: the Poisson score of a softplus rate).  Near miss: the derivative of
    # softplus(a) divided by softplus(b)
    "softplus_ratio": (lambda a, t: jax.jvp(lambda x: jnp.log(jax.nn.softplus(x)), (a,), (t,))[1], (0.0, 1.0),
                       lambda a, b, t: jax.jvp(jax.nn.softplus, (a,), (t,))[1] / jax.nn.softplus(b)),
    # d min(a^2, 1) = 2 a t w, JAX's weight w of min nonzero only where fl(a^2) <= 1: in [-2, 2] t up to the rounding
    # of the square, 2 sqrt(1 / (1 - u)) with u the float32 unit roundoff (the boxes give 2 a in [-inf, inf]).
    # Near miss: 2 a t times the weight of min(b^2, 1)
    "min_weight": (lambda a, t: jax.jvp(lambda x: jnp.minimum(x ** 2, 1.0), (a,), (t,))[1],
                   (-2.0 * math.sqrt(1.0 / (1.0 - 2.0 ** -24)), 2.0 * math.sqrt(1.0 / (1.0 - 2.0 ** -24))),
                   lambda a, b, t: jax.jvp(lambda x: jnp.minimum(x, 1.0), (b * b,), (2.0 * a * t,))[1]),
}


def test_every_relation_has_a_case():
    from bayesdp.analysis.structure.bounds import RELATIONS

    names = {r.__name__ for rules in RELATIONS.values() for r in rules}
    assert names == set(RELATION_CASES), names ^ set(RELATION_CASES)


def _interpret(fn, boxes):
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(lo.shape, F32) for lo, _ in boxes])
    return Run(Bounds(), {"m": 1}).program(closed, [Bound.box(lo, hi) for lo, hi in boxes])[0]


@pytest.mark.parametrize("name", sorted(RELATION_CASES))
def test_relation_is_tight_for_every_real_input(name):
    fn, (lo, hi), _ = RELATION_CASES[name]
    # a over all of R (where exp(a) is finite in float32 for the hand-written log1p(exp(a)): a <= 88), tangent
    # t = 1: the exact range of the derivative (the box rules alone give [0, inf])
    top = 88.0 if name == "ratio_of_sum" else np.inf
    out = _interpret(fn, [(np.full(3, -np.inf), np.full(3, top)), (np.ones(3), np.ones(3))])
    assert np.all(out.lo <= lo) and np.all(out.lo >= lo - 1e-12), (out.lo, lo)
    assert np.all(out.hi >= hi) and np.all(out.hi <= hi + 1e-12), (out.hi, hi)


def test_a_hand_written_log1p_exp_past_exp_s_overflow_is_undefined():
    """exp(89) is an infinity in float32, and the derivative exp(a) / (exp(a) + 1) is inf / inf = NaN there."""
    fn = RELATION_CASES["ratio_of_sum"][0]
    assert np.isnan(float(fn(jnp.float32(89.0), jnp.float32(1.0))))
    out = _interpret(fn, [(np.full(3, -np.inf), np.full(3, 89.0)), (np.ones(3), np.ones(3))])
    assert out.nan and not out.bounded()


@pytest.mark.parametrize("name", sorted(RELATION_CASES))
def test_relation_is_sound_on_random_boxes_and_near_misses(name):
    fn, _, near_miss = RELATION_CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for prog, n_in in ((fn, 2), (near_miss, 3)):
        f = jax.jit(prog)
        for _ in range(8):
            boxes = _boxes(rng, [((4,), F32, *UNB)] * (n_in - 1) + [((4,), F32, -2.0, 2.0)])
            out = _interpret(prog, boxes)
            for pt in _points(rng, boxes, 80):
                with np.errstate(all="ignore"):
                    v = np.asarray(f(*[np.asarray(x, np.float32) for x in pt]), dtype=np.float64)
                tol = 1e-5 * np.maximum(1.0, np.abs(v))
                ok = (v >= out.lo - tol) & (v <= out.hi + tol) | ~np.isfinite(v)
                assert ok.all(), (name, prog is near_miss, pt, v, out.lo, out.hi)


def test_softplus_parts_at_zero_and_on_one_sided_boxes():
    # JAX's derivative is exactly 0 at a = 0 (t/2 - t/2): a box containing 0 must contain 0; a box of a > 0 gives
    # t [sigmoid(a_lo), sigmoid(a_hi)], and the value at the box's ends is inside it
    fn = RELATION_CASES["softplus_parts"][0]
    f = jax.jit(fn)
    for lo, hi in ((0.0, 2.0), (-3.0, 0.0), (0.5, 2.0), (-4.0, -1.0), (-np.inf, -1.0)):
        out = _interpret(fn, [(np.full(2, lo), np.full(2, hi)), (np.ones(2), np.ones(2))])
        for a in (lo, hi, 0.5 * (lo + hi) if np.isfinite(lo) else hi - 1):
            if not np.isfinite(a):
                continue
            v = float(np.asarray(f(jnp.full(2, a, F32), jnp.ones(2, F32)))[0])
            assert out.lo[0] - 1e-6 <= v <= out.hi[0] + 1e-6, (lo, hi, a, v, out.lo, out.hi)
        sig = lambda x: 1.0 / (1.0 + math.exp(-x)) if np.isfinite(x) else float(x > 0)
        want_lo = 0.0 if lo <= 0.0 <= hi else sig(lo)
        assert out.lo[0] == pytest.approx(want_lo, abs=1e-12) and out.hi[0] == pytest.approx(sig(hi), abs=1e-12)


def test_clipped_sigmoid_log_of_one_minus_and_of_nested_clips():
    # d log1p(-p) = -t s inside the clips: [-U, 0] t with U = min(hi_i, s_hi); clips nested (NumPyro's clamp_probs
    # after the model's own clip) take the tightest ends; a box of a inside the clip gives the exact [1 - s_hi,
    # 1 - s_lo] only up to the lower end 0 (the rule keeps 0: w may vanish)
    def one_minus(a, t):
        return jax.jvp(lambda x: jnp.log1p(-jnp.clip(jnp.clip(jax.nn.sigmoid(x), 0.1, 0.9), 0.05, 0.8)), (a,), (t,))[1]

    def log_nested(a, t):
        return jax.jvp(lambda x: jnp.log(jnp.clip(jnp.clip(jax.nn.sigmoid(x), 0.1, 0.9), 0.05, 0.8)), (a,), (t,))[1]
    full = [(np.full(2, -np.inf), np.full(2, np.inf)), (np.ones(2), np.ones(2))]
    out = _interpret(one_minus, full)
    # the clip ends are the program's float32 numbers (weakly typed literals): U = float32(0.8) and 1 - L with
    # L = float32(0.1)
    e8, e9 = float(np.float32(0.8)), 1.0 - float(np.float32(0.1))
    assert np.all(out.lo >= -e8 - 1e-12) and np.all(out.lo <= -e8) and np.all(out.hi == 0.0)
    out = _interpret(log_nested, full)
    assert np.all(out.hi >= e9) and np.all(out.hi <= e9 + 1e-12) and np.all(out.lo == 0.0)
    rng = np.random.default_rng(7)
    for prog in (one_minus, log_nested):
        f = jax.jit(prog)
        for _ in range(6):
            boxes = _boxes(rng, [((4,), F32, *UNB), ((4,), F32, -2.0, 2.0)])
            out = _interpret(prog, boxes)
            for pt in _points(rng, boxes, 80):
                v = np.asarray(f(*[np.asarray(x, np.float32) for x in pt]), dtype=np.float64)
                tol = 1e-5 * np.maximum(1.0, np.abs(v))
                assert ((v >= out.lo - tol) & (v <= out.hi + tol)).all(), (pt, v, out.lo, out.hi)


def _enable_x64():
    """jax.enable_x64(True) (jax >= 0.8), jax.experimental.enable_x64() before."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64

    return enable_x64()


@pytest.mark.parametrize("k", [2, 3])
def test_clipped_sigmoid_log_of_a_power_of_the_sigmoid(k):
    # p = clamp(s^k): d log p = t k (1 - s) in [0, k] t over all reals; d log1p(-p) = -t k s^k / (1 + ... + s^(k-1))
    # in [-1, 0] t (its sup is at s -> 1); the box rules give 1/p unbounded.  Random boxes: sound.
    def logp(a, t):
        return jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x) ** k, 1e-30, 1 - 1e-7)), (a,), (t,))[1]

    def log1mp(a, t):
        return jax.jvp(lambda x: jnp.log1p(-jnp.clip(jax.nn.sigmoid(x) ** k, 1e-30, 1 - 1e-7)), (a,), (t,))[1]
    full = [(np.full(2, -np.inf), np.full(2, np.inf)), (np.ones(2), np.ones(2))]
    out = _interpret(logp, full)
    # sup k (1 - s) over s^k >= 1e-30: k (1 - 1e-30^(1/k)), below k by 1e-15 k (k = 2) / 1e-10 k (k = 3)
    assert np.all(out.lo == 0.0) and np.all(out.hi >= k * (1 - 1e-30 ** (1 / k))) and np.all(out.hi <= k)
    out = _interpret(log1mp, full)
    assert np.all(out.hi == 0.0) and np.all(out.lo <= -1.0 + 1e-6) and np.all(out.lo >= -1.0 - 1e-6)
    rng = np.random.default_rng(k)
    for prog in (logp, log1mp):
        f = jax.jit(prog)
        for _ in range(6):
            boxes = _boxes(rng, [((4,), F32, -12.0, 12.0), ((4,), F32, -2.0, 2.0)])
            out = _interpret(prog, boxes)
            for pt in _points(rng, boxes, 80):
                # evaluated in float64: the bounds are for exact arithmetic, and 1 - s^k cancels in float32
                with _enable_x64():
                    v = np.asarray(f(*[np.asarray(x, np.float64) for x in pt]), dtype=np.float64)
                tol = 1e-9 * np.maximum(1.0, np.abs(v))
                ok = (v >= out.lo - tol) & (v <= out.hi + tol) | ~np.isfinite(v)
                assert ok.all(), (k, pt, v, out.lo, out.hi)


def test_relation_keeps_the_linear_form_of_the_tangent():
    # d softplus(x . w) / dw = sigmoid(x . w) x (one record x in [-1, 1]^3, w anywhere): the form of x survives,
    # scaled by [0, 1] (so |grad| <= |x|, where a box would give sqrt(3))
    def prog(x, w):
        return jax.jacfwd(lambda v: jax.nn.softplus(x @ v))(w)
    closed = jax.make_jaxpr(prog)(jax.ShapeDtypeStruct((1, 3), F32), jax.ShapeDtypeStruct((3,), F32))
    out = Run(Bounds(), {"m": 1}).program(closed, [data_input((1, 3), "X", -1.0, 1.0), Bound.top((3,))])[0]
    assert out.lin is not None
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], np.zeros((3, 3)))
    top = 1 + B.LIBM_ULPS * np.finfo(float).eps                                   # [0, 1], rounded outward
    assert np.all(hi[0] >= np.eye(3)) and np.all(hi[0] <= np.eye(3) * top)
