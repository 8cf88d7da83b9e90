"""Float arithmetic (``analyze(..., arithmetic="float")``, bayesdp/analysis/structure/floats.py, docs/analysis.md
"Float rounding"): the program's own float32 rounding modelled.

The numbers asserted are derived by hand: the float32 neighbours of 1/3 are 11184810 / 2^25 and 11184811 / 2^25;
``1 + 2^-24`` is a tie that rounds to even (1); float32 ``1e7 * ((1 + 2e-7) - 1)`` is ``1e7 * 2^-22 = 2.384...``
(the float32 sum ``1 + 2e-7`` is ``1 + 2 * 2^-23``); the compiled ``log((1 - sigmoid(r)) + 1e-9)`` is ``-inf`` at
r = 17 (XLA folds ``1 + 1e-9`` to 1), checked numerically below, not assumed."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.loading import load_model
from bayesdp.analysis.structure import floats
from bayesdp.analysis.structure.bounds import RULES, Bound, Bounds
from bayesdp.analysis.structure.interpreter import Run
from bayesdp.errors import AssumptionError
from test_adversarial_undefined import _regression

f32 = np.float32
sig = jax.nn.sigmoid
DOMAIN = Domain.parse(["X.norm=1", "y.min=-2", "y.max=2"])


def _data():
    X = np.eye(3, dtype=f32)[[0, 1, 2, 0]]
    return {"X": X, "y": np.array([1.0, -1.0, 0.5, 2.0], f32)}


def _G(loss, arithmetic):
    rep = analyze(_regression(loss), _data(), DOMAIN, arithmetic=arithmetic)
    G = rep.constants.record_grad_bound
    if G is None:
        assert rep.unproven[0].site == "obs" and rep.unproven[0].reason
    return G


def test_nearest_and_grid_out_are_the_float32_neighbours():
    third = np.array([1 / 3])
    assert floats.nearest(third, np.float32)[0] == 11184811 / 2 ** 25 == float(f32(1 / 3))
    lo, hi = floats.grid_out(third, third, np.float32)
    assert (lo[0], hi[0]) == (11184810 / 2 ** 25, 11184811 / 2 ** 25)
    ties = floats.nearest(np.array([1 + 2 ** -24, 1 + 3 * 2 ** -24, -(1 + 2 ** -24)]), np.float32)
    assert ties.tolist() == [1.0, 1 + 2 ** -22, -1.0]            # ties to even
    exact = np.array([0.5, -3.0, 0.0, np.inf])
    assert floats.nearest(exact, np.float32).tolist() == exact.tolist()
    assert floats.grid_out(exact, exact, np.float32)[0].tolist() == exact.tolist()
    assert floats.nearest(third, np.float64)[0] == 1 / 3
    assert floats.unit_roundoff(np.float32) == 2.0 ** -24 and floats.unit_roundoff(np.float16) == 2.0 ** -11
    u = 2.0 ** -24
    assert floats.gamma(2, u) >= 2 * u / (1 - 2 * u) and floats.gamma(2, u) <= 2 * u / (1 - 2 * u) * (1 + 1e-15)
    assert floats.gamma(2 ** 24, u) == np.inf


def test_every_rule_has_a_rounding_model():
    special = {"integer_pow", "one_minus_square", "cumprod", "cumlogsumexp"}
    known = floats.EXACT | floats.CORRECTLY_ROUNDED | set(floats.ULPS) | floats.SUMS | special
    assert set(RULES) - known == set()
    assert not (floats.EXACT & (floats.CORRECTLY_ROUNDED | set(floats.ULPS) | floats.SUMS))


def test_the_arithmetic_is_scoped_and_checked():
    assert not floats.modelled()
    with floats.arithmetic("float"):
        assert floats.modelled()
    assert not floats.modelled()
    for bad in ("double", "", "Float"):
        with pytest.raises(AssumptionError, match=rf"arithmetic={bad!r}: not one of 'real', 'float'"):
            analyze(_regression(lambda r, y: r), _data(), DOMAIN, arithmetic=bad)


def test_a_sum_xla_regroups_is_refused_in_float_arithmetic():
    loss = lambda r, y: jnp.log((1 - sig(r)) + 1e-9)                      # noqa: E731
    g = jax.jit(jax.grad(lambda w, x, yy: -loss(yy - x @ w, yy)))(jnp.asarray([-16.0, 0, 0], jnp.float32),
                                                                  jnp.asarray([1.0, 0, 0], jnp.float32),
                                                                  jnp.float32(1.0))
    assert not np.all(np.isfinite(np.asarray(g)))                       # compiled: log(1 - sigmoid(17)) = -inf
    assert _G(loss, "real") is not None                                 # the real-arithmetic certificate (adv21, J)
    assert _G(loss, "float") is None


@pytest.mark.parametrize("name,loss", [
    ("absorption", lambda r, y: r + 0.0 / ((1.0 + 1e-9 * (1 + sig(r))) - 1.0)),
    ("saturation", lambda r, y: jnp.log(1 - jnp.tanh(10 * jnp.tanh(r)))),
    ("log1p of a rounded sum", lambda r, y: jnp.log1p(1e-9 - sig(r))),
])
def test_values_rounding_makes_undefined_are_refused(name, loss):
    assert _G(loss, "float") is None


def test_a_cancellation_is_bounded_by_its_float_value():
    loss = lambda r, y: r * 1e7 * ((1 + 1e-7 * y) - 1)                 # noqa: E731  real gradient y, |y| <= 2
    # the gradient in r is 1e7 ((1 + 1e-7 y) - 1), evaluated op by op in float32 at y = 2 (NumPy's float32: the
    # same IEEE operations; JAX's own value depends on how its version folds the constants)
    g = f32(1e7) * ((f32(1) + f32(1e-7) * f32(2)) - f32(1))
    assert float(g) == pytest.approx(1e7 * 2 ** -22, rel=1e-6)          # 2.38: above the real sup 2
    G_real, G_float = _G(loss, "real"), _G(loss, "float")
    assert G_real < 1e7 * 2 ** -22                                      # the real certificate is wrong here
    assert G_float >= 1e7 * 2 ** -22


def test_ordinary_models_keep_their_constants_up_to_rounding():
    model, _ = load_model("logistic")
    d = Domain.parse(["X.norm=1", "y.values=0,1"])
    real = analyze(model, domain=d, data_size=100, dim=2).constants
    flt = analyze(model, domain=d, data_size=100, dim=2, arithmetic="float").constants
    for k in ("record_grad_bound", "grad_diff", "strong_convexity", "smoothness"):
        a, b = getattr(real, k), getattr(flt, k)
        assert a <= b <= a * (1 + 2.0 ** -16), (k, a, b)
    huber = lambda r, y: jnp.where(jnp.abs(r) < 1, r * r / 2, jnp.abs(r) - 0.5)     # noqa: E731
    Gr, Gf = _G(huber, "real"), _G(huber, "float")
    assert 1.0 <= Gr <= Gf <= Gr * (1 + 2.0 ** -16)
    rep = analyze(model, domain=d, data_size=100, dim=2, arithmetic="float")
    assert any(n.startswith("arithmetic: float") for n in rep.notes)
    assert rep.constants.provenance["record_grad_bound"].endswith("; in float arithmetic (docs/analysis.md, "
                                                                  "'Float rounding')")
    assert "float arithmetic" not in analyze(model, domain=d, data_size=100, dim=2).constants.provenance[
        "record_grad_bound"]


def test_the_cli_certifies_in_float_arithmetic_and_refuses_a_bad_choice(capsys):
    from bayesdp.cli import main

    args = ["certify", "logistic", "--no-data", "--data-size", "50", "--dim", "2", "--domain", "X.norm=1",
            "--domain", "y.values=0,1", "--step-size", "1e-3", "--num-steps", "10", "--json"]
    assert main(args) == 0
    real = json.loads(capsys.readouterr().out)["constants"]
    assert main(args + ["--arithmetic", "float"]) == 0
    flt = json.loads(capsys.readouterr().out)["constants"]
    assert real["grad_bound"] <= flt["grad_bound"] <= real["grad_bound"] * (1 + 2.0 ** -16)
    assert main(args + ["--arithmetic", "double"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'double'" in err and "Traceback" not in err


def test_every_analysis_inside_the_context_inherits_its_arithmetic():
    from bayesdp.analysis import arithmetic, certify

    model, _ = load_model("logistic")
    d = Domain.parse(["X.norm=1", "y.values=0,1"])

    def float_note(rep):
        return any(n.startswith("arithmetic: float") for n in rep.analysis.notes)
    with arithmetic("float"):
        assert float_note(certify(model, domain=d, data_size=100, dim=2))
        assert not float_note(certify(model, domain=d, data_size=100, dim=2, arithmetic="real"))
    assert not float_note(certify(model, domain=d, data_size=100, dim=2))
    assert float_note(certify(model, domain=d, data_size=100, dim=2, arithmetic="float"))


def _float_box(f, *boxes):
    closed = jax.make_jaxpr(f)(*[f32(0)] * len(boxes))
    with floats.arithmetic("float"):
        return Run(Bounds(), {"m": 1}).program(closed, [Bound.box(lo, hi) for lo, hi in boxes])[0]


def test_a_product_of_exponentials_holds_xla_s_exp_of_the_sum():
    # XLA compiles exp(a) * exp(b) as exp(a + b): the float32 sum rounds (40 + 40.2 by 2^-18), and exp turns that
    # into a relative error of as much; the box must hold exp(RN(a + b)) within exp's own 4 floats
    a, b = f32(40.0), f32(40.2)
    s = float(a + b)                                            # NumPy's float32 sum: RN(a + b)
    out = _float_box(lambda x, y: jnp.exp(x) * jnp.exp(y), (float(a), float(a)), (float(b), float(b)))
    e = np.exp(s)
    assert out.lo[()] <= e * (1 - 8 * 2.0 ** -24) and out.hi[()] >= e * (1 + 8 * 2.0 ** -24)
    real = np.exp(float(a)) * np.exp(float(b))
    assert out.lo[()] <= real <= out.hi[()]
    assert abs(s - (float(a) + float(b))) > 0                  # the sum does round: the case is not vacuous


def test_products_chains_and_fused_products_hold_every_compiled_value():
    # y / 3 as y * RN(1/3) (NumPy float32 gives the compiled value), (y * 0.1) * 10 as y * RN(RN(0.1) * 10), and the
    # exact product a fused multiply-add reads: each inside its box
    y = f32(1.999999)
    out = _float_box(lambda v: v / 3.0, (float(y), float(y)))
    assert out.lo[()] <= float(y * f32(1 / 3)) <= out.hi[()] and out.lo[()] <= float(y) / 3 <= out.hi[()]
    out = _float_box(lambda v: (v * 0.1) * 10.0, (float(y), float(y)))
    assert out.lo[()] <= float(y * (f32(0.1) * f32(10))) <= out.hi[()]
    assert out.lo[()] <= float((y * f32(0.1)) * f32(10)) <= out.hi[()]
    y = f32(1.0002445)
    out = _float_box(lambda v: v * v, (float(y), float(y)))
    assert out.lo[()] <= float(y) ** 2 <= out.hi[()] and out.lo[()] <= float(y * y) <= out.hi[()]
    assert float(y) ** 2 != float(y * y)                        # the product rounds: the hull is needed
    assert _float_box(lambda v: v * 0.5, (float(y), float(y))).is_point()    # a power of two: exact


def test_a_sum_chain_through_a_reshape_is_regrouped():
    B = float(2 ** 25 + 4)
    out = _float_box(lambda v: (((v + B)[None] - B)[0]) - 3.0, (2.5, 3.5))
    assert out.lo[()] <= 2.5 - 3.0                              # XLA folds (y + B) - B to y: y - 3 reaches -0.5
    two = _float_box(lambda v, w: v + w, (1.0, 1.0), (float(f32(1 / 3)), float(f32(1 / 3))))
    assert two.is_point() and two.lo[()] == float(f32(1.0) + f32(1 / 3))   # two terms: correctly rounded, a point
