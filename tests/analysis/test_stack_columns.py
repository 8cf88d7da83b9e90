"""Design matrices stacked from per-record columns (issue 23): ``jnp.stack`` / ``jnp.unstack`` (primitives of
JAX >= 0.8; older JAX writes them as broadcasts, concatenates, slices and squeezes), ``jnp.column_stack`` and
``jnp.concatenate``.  Row i of a stacked matrix is made of record i's entries only, so the record axis survives;
the norm of a stacked row is bounded from its parts (Pythagoras over disjoint coordinates, rounded outward).
Models written to fool the rules (a column of another record, a flattening that moves records across rows) are
refused naming the operation.  Every expected constant is derived in the comment next to it."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax import export

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import affinity as af
from bayesdp.analysis.structure import dependence as dp
from bayesdp.analysis.structure.bounds import Bound, Bounds
from bayesdp.errors import ModelError

(M,) = export.symbolic_shape("m")
F32 = jnp.float32
RNG = np.random.default_rng(11)
m = 12
A_ = RNG.uniform(-1, 1, m)
B_ = RNG.uniform(-1, 1, m)
Z_ = RNG.uniform(-1, 1, m)
X_ = RNG.standard_normal((m, 2))
X_ /= np.linalg.norm(X_, axis=1, keepdims=True) * 1.01
Y_ = (np.arange(m) % 2).astype(float)
BOX = ["a.min=-1", "a.max=1", "b.min=-1", "b.max=1", "y.values=0,1"]
R1 = Domain.parse(["X.norm=1"]).get("X").certified_norm


def _prims(fn, *specs) -> set:
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in specs])
    return {e.primitive.name for e in closed.jaxpr.eqns}


def _dep(fn, *specs):
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in specs])
    ins = [dp.data_input(f"X{i}") if not isinstance(s[0], int) else dp.NONE for i, (s, _) in enumerate(specs)]
    return Run(dp.Dependence()).program(closed, ins)


COL = ((M,), F32)
MAT = ((M, 3), F32)
# name -> (function, specs, expected record axis of output 0 (COUPLED: records mixed), primitive it must use
# on JAX >= 0.8 (None: any JAX))
DEPENDENCE = {
    "stack rows": (lambda a, b: jnp.stack([a, b], axis=1), [COL, COL], 0, "stack"),
    "stack on axis 0": (lambda a, b: jnp.stack([a, b], axis=0), [COL, COL], 1, "stack"),
    "stack of matrices, last axis": (lambda x, y: jnp.stack([x, y], axis=-1), [MAT, MAT], 0, "stack"),
    "stack of matrices, axis 0": (lambda x, y: jnp.stack([x, y], axis=0), [MAT, MAT], 1, "stack"),
    "stack with a public column": (lambda a: jnp.stack([a, jnp.ones_like(a)], axis=1), [COL], 0, "stack"),
    "column_stack": (lambda a, b: jnp.column_stack([a, b]), [COL, COL], 0, None),
    "unstack columns": (lambda x: jnp.unstack(x, axis=1)[2], [MAT], 0, "unstack"),
    "unstack axis 0 of a transposed matrix": (lambda x: jnp.unstack(x.T, axis=0)[1], [MAT], 0, "unstack"),
    # fooling attempts: another record's column, a shifted column, a statistic of all records
    "stack with a reversed column": (lambda a, b: jnp.stack([a, b[::-1]], axis=1), [COL, COL], dp.COUPLED, "stack"),
    "stack with a rolled column": (lambda a, b: jnp.stack([a, jnp.roll(b, 1)], axis=1), [COL, COL], dp.COUPLED,
                                   "stack"),
    "stack with the mean": (lambda a, b: jnp.stack([a, b - b.mean()], axis=1), [COL, COL], dp.COUPLED, "stack"),
    "stack on axis 0 then flattened": (lambda a, b: jnp.stack([a, b]).reshape(-1), [COL, COL], dp.COUPLED, "stack"),
    "stack rows then transposed and reshaped": (lambda a, b: jnp.stack([a, b], axis=1).T.reshape(a.shape[0], 2),
                                                [COL, COL], dp.COUPLED, "stack"),
    "stack of a row-major and a transposed matrix": (
        lambda x, y: jnp.stack([x[:, :2] @ jnp.ones((2, 2)), y[:, :2]], axis=0), [MAT, MAT], 1, "stack"),
}


@pytest.mark.parametrize("name", sorted(DEPENDENCE))
def test_stack_and_unstack_keep_the_record_axis(name):
    fn, specs, expected, prim = DEPENDENCE[name]
    if prim is not None and prim not in _prims(fn, *specs):
        pytest.skip(f"this JAX writes {prim} with other primitives (their rules are tested on their own)")
    out = _dep(fn, *specs)[0]
    assert out.record == expected, (name, out.record)


def test_operands_with_records_on_two_axes_stay_coupled():
    # outer(a, b) has records on axes 0 AND 1 (coupled already): stacking it keeps it coupled
    out = _dep(lambda a, b: jnp.stack([a[:, None] * b[None, :], a[:, None] * a[None, :]], axis=0), COL, COL)[0]
    assert out.record == dp.COUPLED


def test_stack_and_unstack_are_linear_for_affinity():
    closed = jax.make_jaxpr(lambda t, x: jnp.unstack(jnp.stack([t, x], axis=1), axis=0)[1])(
        jax.ShapeDtypeStruct((3,), F32), jax.ShapeDtypeStruct((3,), F32))
    assert Run(af.Affinity()).program(closed, [af.A, af.C])[0].kind == af.AFFINE


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_and_unstack_bounds_are_sound_and_exact_on_boxes(axis):
    # a stack moves entries: the box of each entry is its operand's box exactly; an unstack takes them back
    rng = np.random.default_rng(5 + axis)
    shape = (2, 3)
    boxes = []
    for _ in range(3):
        u, v = rng.uniform(-3, 3, shape), rng.uniform(-3, 3, shape)
        boxes.append((np.minimum(u, v), np.maximum(u, v)))

    def fn(p, q, r):
        s = jnp.stack([p, q, r], axis=axis)
        return s, jnp.unstack(s, axis=axis)[1]
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(shape, F32)] * 3)
    s_b, q_b = Run(Bounds(), {"m": 7}).program(closed, [Bound.box(lo, hi) for lo, hi in boxes])
    lo_ref = np.stack([b[0] for b in boxes], axis=axis)
    hi_ref = np.stack([b[1] for b in boxes], axis=axis)
    np.testing.assert_array_equal(s_b.lo, lo_ref)
    np.testing.assert_array_equal(s_b.hi, hi_ref)
    np.testing.assert_array_equal(q_b.lo, boxes[1][0])
    np.testing.assert_array_equal(q_b.hi, boxes[1][1])
    f = jax.jit(fn)
    for _ in range(50):
        pts = [lo + (hi - lo) * rng.random(shape) for lo, hi in boxes]
        s, q = (np.asarray(v, np.float64) for v in f(*[jnp.asarray(p, F32) for p in pts]))
        tol = 4e-7 * np.maximum(1.0, np.abs(s))
        assert ((s >= s_b.lo - tol) & (s <= s_b.hi + tol)).all()


def _glm(build, d):
    """Bernoulli-logits regression on a design matrix ``build(**data)`` with d columns."""
    def model(y=None, **data):
        X = build(**data)
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
        with numpyro.plate("data", y.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)
    return model


def _bound(build, d, data, domain):
    an = analyze(_glm(build, d), {**data, "y": Y_}, Domain.parse(domain))
    return an.constants.record_grad_bound


# Bernoulli logits: grad_w l = (sigmoid(x.w) - y) x, sup over w of |sigmoid - y| = 1, so sup |grad| = sup |x|.
@pytest.mark.parametrize("build", [
    lambda a, b: jnp.stack([a, b], axis=1),
    lambda a, b: jnp.stack([a, b], axis=0).T,
    lambda a, b: jnp.column_stack([a, b]),
    lambda a, b: jnp.concatenate([a[:, None], b[:, None]], axis=1),
], ids=["stack", "stack-axis0-T", "column_stack", "concatenate"])
def test_two_box_columns_give_the_exact_norm(build):
    # |x| = sqrt(a^2 + b^2) <= sqrt(2) on [-1, 1]^2, attained at a corner
    G = _bound(build, 2, {"a": A_, "b": B_}, BOX)
    assert G >= math.sqrt(2) and G == pytest.approx(math.sqrt(2), rel=1e-12)


def test_a_public_column_adds_by_pythagoras():
    # x = (a, b, 1): |x| <= sqrt(1 + 1 + 1)
    G = _bound(lambda a, b: jnp.stack([a, b, jnp.ones_like(a)], axis=1), 3, {"a": A_, "b": B_}, BOX)
    assert G >= math.sqrt(3) and G == pytest.approx(math.sqrt(3), rel=1e-12)


def test_a_norm_ball_and_a_box_column_combine_by_pythagoras():
    # x = (X_1, X_2, z) with |X| <= R (declared norm), |z| <= 1: |x| <= sqrt(R^2 + 1), not the box's sqrt(2R^2 + 1)
    dom = ["X.norm=1", "z.min=-1", "z.max=1", "y.values=0,1"]
    data = {"X": X_, "z": Z_}
    truth = math.sqrt(R1 * R1 + 1)
    for build in (lambda X, z: jnp.stack([X[:, 0], X[:, 1], z], axis=1),
                  lambda X, z: jnp.stack([*jnp.unstack(X, axis=1), z], axis=1),
                  lambda X, z: jnp.column_stack([X, z])):
        G = _bound(build, 3, data, dom)
        assert G >= truth and G == pytest.approx(truth, rel=1e-12)


def test_a_nonlinear_column_uses_its_box():
    # x = (a, tanh(3 b)): |x| <= sqrt(1 + tanh(3)^2)
    G = _bound(lambda a, b: jnp.stack([a, jnp.tanh(3.0 * b)], axis=1), 2, {"a": A_, "b": B_}, BOX)
    truth = math.sqrt(1 + math.tanh(3.0) ** 2)
    assert G >= truth and G == pytest.approx(truth, rel=1e-9)


@pytest.mark.parametrize("build", [
    lambda a, b: jnp.stack([a, b[::-1]], axis=1),
    lambda a, b: jnp.stack([a, jnp.roll(b, 1)], axis=1),
    lambda a, b: jnp.stack([a, b / jnp.max(jnp.abs(b))], axis=1),
    lambda a, b: jnp.stack([a, b], axis=0).reshape(a.shape[0], 2),
], ids=["reversed", "rolled", "scaled-by-max", "reshaped-not-transposed"])
def test_a_stack_that_mixes_records_is_refused_naming_the_operation(build):
    with pytest.raises(ModelError, match="depends on other records") as err:
        _bound(build, 2, {"a": A_, "b": B_}, BOX)
    assert "`" in str(err.value) and "obs" in str(err.value)
