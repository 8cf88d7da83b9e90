"""The dependence and affinity interpreters, primitive by primitive (each table entry has a case here:
adding a primitive to a table without a case fails ``test_every_*_rule_has_a_case``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export, lax
from jax._src.ad_util import add_jaxvals_p

from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import affinity as af
from bayesdp.analysis.structure import dependence as dp

(M,) = export.symbolic_shape("m")
F32, I32 = jnp.float32, jnp.int32


def _dep(fn, *specs):
    """Dependence of fn's outputs on data arguments X0, X1... (records on axis 0)."""
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in specs])
    ins = [dp.data_input(f"X{i}") if not isinstance(s[0], int) else dp.NONE for i, (s, _) in enumerate(specs)]
    return Run(dp.Dependence()).program(closed, ins)


# -- element-wise primitives: element i of the result depends on record i only -------------------

UNARY_F = ("neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh logistic sin cos tan asin acos atan "
           "sinh cosh asinh acosh atanh sqrt rsqrt cbrt abs lgamma digamma bessel_i0e bessel_i1e erf erfc erf_inv "
           "square real imag conj copy stop_gradient").split()
BINARY_F = "add sub mul div rem max min atan2 nextafter pow igamma igammac igamma_grad_a polygamma zeta".split()
COMPARE = "eq ne lt le gt ge".split()
BOOL = "and or xor".split()
INT_UNARY = "population_count clz".split()
INT_BINARY = "shift_left shift_right_arithmetic shift_right_logical".split()
def _one_minus_square_p():
    """JAX 0.11.2's primitive (tanh's derivative); a primitive of that name where this JAX has none."""
    from jax.extend.core import Primitive

    prim = getattr(lax, "one_minus_square_p", None)
    if prim is None:
        prim = Primitive("one_minus_square")
        prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    return prim


_OMS = _one_minus_square_p()
SPECIAL_ELEMENTWISE = {
    "one_minus_square": lambda x: _OMS.bind(x),
    "not": lambda x: lax.bitwise_not(x > 0),
    "select_n": lambda x: lax.select_n(x > 0, x, -x),
    "clamp": lambda x: lax.clamp(0.0, x, 1.0),
    "convert_element_type": lambda x: x.astype(I32),
    "integer_pow": lambda x: lax.integer_pow(x, 3),
    "reduce_precision": lambda x: lax.reduce_precision(x, 5, 7),
    "add_any": lambda x: add_jaxvals_p.bind(x, x),
    "complex": lambda x: lax.complex(x, x),
    "regularized_incomplete_beta": lambda x: lax.betainc(x, x, x),
}
TAG_ONLY = {"sharding_constraint", "mesh_cast", "reshard"}      # sharding annotations: identities


def _elementwise_fn(name):
    if name in SPECIAL_ELEMENTWISE:
        return SPECIAL_ELEMENTWISE[name], F32
    prim = getattr(lax, f"{name}_p")
    if name in UNARY_F:
        if name in ("real", "imag", "conj"):
            return (lambda x: prim.bind(lax.complex(x, x))) if name != "conj" else \
                (lambda x: prim.bind(lax.complex(x, x), input_dtype=np.complex64)), F32
        return (lambda x: prim.bind(x)), F32
    if name in BINARY_F:
        return (lambda x: prim.bind(x, x)), F32
    if name in COMPARE:
        return (lambda x: prim.bind(x, x)), F32
    if name in BOOL:
        return (lambda x: prim.bind(x > 0, x < 1)), F32
    if name in INT_UNARY:
        return (lambda x: prim.bind(x)), I32
    if name in INT_BINARY:
        return (lambda x: prim.bind(x, x)), I32
    raise KeyError(name)


@pytest.mark.parametrize("name", sorted(set(dp.ELEMENTWISE) - TAG_ONLY))
def test_elementwise_keeps_the_record_axis(name):
    fn, dtype = _elementwise_fn(name)
    closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((M, 3), dtype))
    assert name in {e.primitive.name for e in closed.jaxpr.eqns}, f"case for {name} does not use it"
    out = Run(dp.Dependence()).program(closed, [dp.data_input("X")])
    assert all(o.record == 0 and o.data == {"X"} for o in out), (name, out)


# -- structural primitives: where the records go ---------------------------------------------------

X = ((M, 3), F32)
STRUCTURAL = {
    # name: (function, specs, expected record axis of output 0; COUPLED = mixes records)
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, M, 3), (1, 2)), [X], 1),
    "transpose": (lambda x: x.T, [X], 1),
    "squeeze": (lambda x: lax.squeeze(x[:, :1], (1,)), [X], 0),
    "reshape": (lambda x: x.reshape(x.shape[0], 3, 1), [X], 0),
    "rev": (lambda x: x[::-1], [X], dp.COUPLED),
    "slice": (lambda x: lax.slice(x, (1, 0), (x.shape[0], 3)), [X], dp.COUPLED),
    "dynamic_slice": (lambda x: lax.dynamic_slice_in_dim(x, 1, 2, axis=1), [X], 0),
    "pad": (lambda x: jnp.pad(x, ((1, 0), (0, 0))), [X], dp.COUPLED),
    "concatenate": (lambda x: jnp.concatenate([x, x], axis=1), [X], 0),
    "split": (lambda x: jnp.split(x, [1], axis=1)[1], [X], 0),
    # JAX >= 0.8's primitives (older JAX writes them otherwise: skipped there); more in test_stack_columns.py
    "stack": (lambda x: jnp.stack([x, x], axis=1), [X], 0),
    "unstack": (lambda x: jnp.unstack(x, axis=1)[0], [X], 0),
    "dot_general": (lambda x: x @ jnp.ones((3, 2)), [X], 0),
    "gather": (lambda x, g: jnp.arange(5.0)[g] * x[:, 0], [X, ((M,), I32)], 0),
    "scatter": (lambda x: x.at[0].set(1.0), [X], dp.COUPLED),
    "scatter-add": (lambda x: x.at[0].add(1.0), [X], dp.COUPLED),
    "scatter-mul": (lambda x: x.at[0].multiply(2.0), [X], dp.COUPLED),
    "scatter-min": (lambda x: x.at[0].min(2.0), [X], dp.COUPLED),
    "scatter-max": (lambda x: x.at[0].max(2.0), [X], dp.COUPLED),
    "dynamic_update_slice": (lambda x: lax.dynamic_update_slice(x, jnp.zeros((1, 3)), (0, 0)), [X], dp.COUPLED),
    "iota": (lambda x: x[:, 0] + jnp.arange(x.shape[0]), [X], 0),
    "dim_as_value": (lambda x: x[:, 0] / x.shape[0], [X], 0),
    "reduce_sum": (lambda x: x.sum(0), [X], dp.COUPLED),
    "reduce_max": (lambda x: x.max(1), [X], 0),
    "reduce_min": (lambda x: x.min(0), [X], dp.COUPLED),
    "reduce_prod": (lambda x: x.prod(1), [X], 0),
    "reduce_and": (lambda x: (x > 0).all(1), [X], 0),
    "reduce_or": (lambda x: (x > 0).any(0), [X], dp.COUPLED),
    "reduce_xor": (lambda x: lax.reduce_xor_p.bind(x > 0, axes=(1,)), [X], 0),
    "argmax": (lambda x: jnp.argmax(x, axis=0), [X], dp.COUPLED),
    "argmin": (lambda x: jnp.argmin(x, axis=1), [X], 0),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), [X], dp.COUPLED),
    "cumprod": (lambda x: jnp.cumprod(x, axis=1), [X], 0),
    "cummax": (lambda x: lax.cummax(x, axis=0), [X], dp.COUPLED),
    "cummin": (lambda x: lax.cummin(x, axis=1), [X], 0),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=0), [X], dp.COUPLED),
    "sort": (lambda x: jnp.sort(x, axis=0), [X], dp.COUPLED),
    "top_k": (lambda x: lax.top_k(x, 2)[0], [X], 0),
    "optimization_barrier": (lambda x: lax.optimization_barrier(x), [X], 0),
    "device_put": (lambda x: jax.device_put(x), [X], 0),
}
RANDOM = {"random_seed", "random_bits", "random_split", "random_fold_in", "random_wrap", "random_unwrap",
          "threefry2x32", "rng_uniform", "rng_bit_generator"}


def test_every_dependence_rule_has_a_case():
    covered = set(dp.ELEMENTWISE) | set(STRUCTURAL) | RANDOM
    assert set(dp.RULES) <= covered, sorted(set(dp.RULES) - covered)


def _uses(fn, specs, name) -> bool:
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in specs])

    def names(j):
        out = set()
        for e in j.eqns:
            out.add(e.primitive.name)
            for p in e.params.values():
                if hasattr(p, "eqns") or hasattr(p, "jaxpr"):
                    out |= names(getattr(p, "jaxpr", p))
        return out
    return name in names(closed.jaxpr)


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_structural_rule(name):
    fn, specs, expected = STRUCTURAL[name]
    if name in ("stack", "unstack") and not hasattr(lax, f"{name}_p"):
        pytest.skip(f"JAX < 0.8 has no {name} primitive")
    assert _uses(fn, specs, name), f"case for {name} does not use it"
    out = _dep(fn, *specs)[0]
    assert out.record == expected, (name, out.record)
    if name in ("iota", "dim_as_value", "reduce_sum", "cumsum"):
        assert out.size or out.record == dp.COUPLED


def test_random_numbers_are_tracked():
    out = _dep(lambda x: x + jax.random.normal(jax.random.key(0), x.shape), X)[0]
    assert out.random
    assert not _dep(lambda x: x + 1.0, X)[0].random          # and only random numbers are


def test_records_and_arguments_are_tracked_through_calls_and_control_flow():
    def fn(x, y):
        z = jax.jit(lambda a: a * 2)(x[:, 0])                               # a call: body interpreted
        w = lax.cond(True, lambda a: a + 1, lambda a: a - 1, y)             # data-free index: branches joined
        s, _ = lax.scan(lambda c, r: (c + r, None), 0.0, x[:, 1])           # a scan over the records
        return z, w, s
    z, w, s = _dep(fn, X, ((M,), F32))
    assert z.record == 0 and z.data == {"X0"}
    assert w.record == 0 and w.data == {"X1"}
    assert s.coupled and s.data == {"X0"}
    # a branch chosen by a data value: the choice mixes records
    out = _dep(lambda x: lax.cond(x.sum() > 0, lambda a: a, lambda a: -a, x), X)[0]
    assert out.coupled
    # a latent value never becomes data, and vice versa
    closed = jax.make_jaxpr(lambda t, x: (t * 2, x * t))(jax.ShapeDtypeStruct((), F32), jax.ShapeDtypeStruct((M,), F32))
    a, b = Run(dp.Dependence()).program(closed, [dp.theta_input("w"), dp.data_input("X")])
    assert a.theta == {"w"} and not a.data and b.theta == {"w"} and b.data == {"X"} and b.record == 0


# -- affinity ------------------------------------------------------------------------------------------

T = ((3,), F32)
AFFINITY = {
    # name: (function of (theta, x), expected kind of output 0)
    "neg": (lambda t, x: -t, af.AFFINE), "reshape": (lambda t, x: t.reshape(3, 1), af.AFFINE),
    "broadcast_in_dim": (lambda t, x: jnp.broadcast_to(t, (2, 3)), af.AFFINE),
    "transpose": (lambda t, x: jnp.broadcast_to(t, (2, 3)).T, af.AFFINE),
    "squeeze": (lambda t, x: t.reshape(3, 1)[:, 0], af.AFFINE), "rev": (lambda t, x: t[::-1], af.AFFINE),
    "slice": (lambda t, x: t[1:], af.AFFINE), "pad": (lambda t, x: jnp.pad(t, 1), af.AFFINE),
    "concatenate": (lambda t, x: jnp.concatenate([t, x]), af.AFFINE),
    "reduce_sum": (lambda t, x: t.sum(), af.AFFINE), "cumsum": (lambda t, x: jnp.cumsum(t), af.AFFINE),
    "copy": (lambda t, x: lax.copy_p.bind(t), af.AFFINE),
    # is_finite of a program input (finite everywhere) is constantly true: the where picks t (issue 23)
    "is_finite": (lambda t, x: jnp.where(jnp.isfinite(t), t, 0.0), af.AFFINE),
    "reduce_precision": (lambda t, x: lax.reduce_precision(t, 8, 23), af.AFFINE),
    "add": (lambda t, x: t + x, af.AFFINE), "sub": (lambda t, x: t - x, af.AFFINE),
    "add_any": (lambda t, x: add_jaxvals_p.bind(t, x), af.AFFINE),
    "split": (lambda t, x: jnp.split(t, [1])[1], af.AFFINE),
    "stack": (lambda t, x: jnp.stack([t, x]), af.AFFINE), "unstack": (lambda t, x: jnp.unstack(t)[1], af.AFFINE),
    "real": (lambda t, x: lax.real(lax.complex(t, x)), af.OTHER),        # complex is not in the table
    "mul": (lambda t, x: t * x, af.AFFINE), "dot_general": (lambda t, x: x @ t, af.AFFINE),
    "div": (lambda t, x: t / (1.0 + x * x), af.AFFINE), "select_n": (lambda t, x: jnp.where(x > 0, t, -t), af.AFFINE),
    "gather": (lambda t, x: t[jnp.array([2, 0])], af.AFFINE),
    "dynamic_slice": (lambda t, x: lax.dynamic_slice(t, (1,), (2,)), af.AFFINE),
    "dynamic_update_slice": (lambda t, x: lax.dynamic_update_slice(t, x[:1], (1,)), af.AFFINE),
    "scatter-add": (lambda t, x: x.at[jnp.array([0, 0])].add(t[:2]), af.AFFINE),
    "scatter": (lambda t, x: x.at[jnp.array([1])].set(t[:1]), af.AFFINE),
    "convert_element_type": (lambda t, x: t.astype(jnp.float16), af.AFFINE),
    "optimization_barrier": (lambda t, x: lax.optimization_barrier(t), af.AFFINE),
    "device_put": (lambda t, x: jax.device_put(t), af.AFFINE),
    "custom_jvp_call": (lambda t, x: jax.nn.relu(t), af.OTHER),
    "custom_vjp_call": (lambda t, x: _cvjp(t), af.OTHER),
    "custom_vjp_call_jaxpr": (lambda t, x: _cvjp(t), af.OTHER),
    "stop_gradient": (lambda t, x: lax.stop_gradient(t), af.OTHER),
    "sharding_constraint": (lambda t, x: t, af.AFFINE), "mesh_cast": (lambda t, x: t, af.AFFINE),
    "reshard": (lambda t, x: t, af.AFFINE),
}


@jax.custom_vjp
def _cvjp(t):
    return t * 2.0


_cvjp.defvjp(lambda t: (t * 2.0, None), lambda r, g: (g * 3.0,))


def test_every_affinity_rule_has_a_case():
    assert set(af.RULES) <= set(AFFINITY), sorted(set(af.RULES) - set(AFFINITY))


def _aff(fn):
    closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((3,), F32), jax.ShapeDtypeStruct((3,), F32))
    return Run(af.Affinity()).program(closed, [af.A, af.C])


@pytest.mark.parametrize("name", sorted(AFFINITY))
def test_affinity_rule(name):
    fn, expected = AFFINITY[name]
    assert _aff(fn)[0].kind == expected, name


@pytest.mark.parametrize("fn", [
    lambda t, x: t * t, lambda t, x: x @ (t * t), lambda t, x: 1.0 / t, lambda t, x: jnp.where(t > 0, t, 0.0),
    lambda t, x: jnp.clip(t, -1, 1), lambda t, x: jnp.maximum(t, x), lambda t, x: jnp.abs(t),
    lambda t, x: jnp.tanh(t), lambda t, x: x[jnp.argmax(t)], lambda t, x: t.astype(jnp.int32).astype(F32),
    lambda t, x: lax.cond(t[0] > 0, lambda a: a, lambda a: -a, t), lambda t, x: t + 1e-6 * t ** 3,
], ids=["square", "square-in-dot", "reciprocal", "where-theta", "clip", "maximum", "abs", "tanh",
        "theta-index", "to-int", "cond-theta", "tiny-cubic"])
def test_non_affine_programs_are_caught(fn):
    out = _aff(fn)[0]
    assert out.kind == af.OTHER and out.why is not None


def test_custom_derivatives_outside_jax_are_not_trusted():
    @jax.custom_jvp
    def lying(t):
        return t * 2.0
    lying.defjvps(lambda g, ans, t: g * 0.0)
    assert not _aff(lambda t, x: lying(t))[0].grad_ok
    assert _aff(lambda t, x: jax.nn.relu(t))[0].grad_ok          # JAX's own rule: trusted
    out = _aff(lambda t, x: t + lax.stop_gradient(100.0 * t))[0]
    assert not out.grad_ok and out.why_grad is not None
