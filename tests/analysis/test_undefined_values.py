"""Values that may be undefined (``Bound.nan``): NaN, or an actual infinity that IEEE arithmetic turns into NaN.

Until 2026-11-28 the bound interpreter gave ``sqrt`` of a box reaching below 0 the unbounded box, and ``0 * x``
the point 0 for any box, so ``r + 0 * sqrt(r * r - 1)`` was certified at G = 1 (up to rounding) although JAX's
gradient is NaN for every ``|r| < 1``: ``0 * (r / sqrt(r^2 - 1)) = 0 * NaN``. Likewise ``0 * log(r * r)`` (NaN
at r = 0) and ``tanh(log(r * r - 1))`` (tanh of a NaN is NaN, but tanh of the unbounded box is [-1, 1]).

Every case below is a regression of test_select_piecewise.py (``rho`` applied to the residual ``y - x theta``);
each one's gradient is checked to be NaN at a point the domain holds (JAX's own ``grad`` in float32), and the
analyzer must refuse it, naming the site. The last group must still certify: the undefined flag is not raised by
a box that only touches 0 when the real value is positive (``log(sigmoid(eta))``, ``y / softplus(eta)``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from test_select_piecewise import _analyse, _true_max

S = jnp.sqrt

UNDEFINED = {
    # (loss rho(r), a residual where JAX's gradient of rho is NaN)
    "0*sqrt(r*r-1)": (lambda r: r + 0.0 * S(r * r - 1.0), 0.5),
    "0*log(r*r)": (lambda r: r + 0.0 * jnp.log(r * r), 0.0),
    "0*(1/r)": (lambda r: r + 0.0 * (1.0 / r), 0.0),
    "0*r**-2": (lambda r: r + 0.0 * r ** -2, 0.0),
    "0*rsqrt(r*r)": (lambda r: r + 0.0 * jax.lax.rsqrt(r * r), 0.0),
    "tanh(log(r*r-1))": (lambda r: r + jnp.tanh(jnp.log(r * r - 1.0)), 0.5),
    "0*arcsin(r)": (lambda r: r + 0.0 * jnp.arcsin(r), 2.0),
    "0*arctanh(tanh(r))": (lambda r: r + 0.0 * jnp.arctanh(jnp.tanh(r)), 20.0),
    "0*r**0.5": (lambda r: r + 0.0 * jnp.power(r, 0.5), -1.0),
    "0*log1p(-r*r)": (lambda r: r + 0.0 * jnp.log1p(-r * r), 1.0),
    "0*inf*r": (lambda r: r + 0.0 * (jnp.inf * r), 1.0),
    "0*fmod(1,r)": (lambda r: r + 0.0 * jnp.fmod(1.0, r) * r, 0.0),
    "where(|r|>1, sqrt(r*r-1), 0)": (lambda r: r + jnp.where(jnp.abs(r) > 1.0, S(r * r - 1.0), 0.0), 0.5),
    "logistic(0*log(r*r))": (lambda r: r + jax.nn.sigmoid(0.0 * jnp.log(r * r)), 0.0),
    "norm": (lambda r: S(r * r), 0.0),
    # exp overflows past 88.72 in float32: inf / inf, 0 * inf
    "log(1+exp(r))": (lambda r: jnp.log(1.0 + jnp.exp(r)), 100.0),
    "log1p(exp(r))": (lambda r: jnp.log1p(jnp.exp(r)), 100.0),
    "where(r<0, exp(r), 1+r)": (lambda r: jnp.where(r < 0, jnp.exp(r), 1.0 + r), 100.0),
    "0*exp(r*r)": (lambda r: r + 0.0 * jnp.exp(r * r), 10.0),
    # a power above 8 of an unbounded value is taken as overflowing (r ** 11 is inf at r = 1e4; a power up to 8
    # overflows only past |r| = 6.6e4, the analysis's cut)
    "0*r**12": (lambda r: r + 0.0 * r ** 12, 1e4),
}


@pytest.mark.parametrize("name", sorted(UNDEFINED))
def test_a_gradient_that_is_nan_somewhere_is_refused(name):
    loss, r0 = UNDEFINED[name]
    g = jax.grad(loss)(jnp.float32(r0))
    assert not np.isfinite(float(g)), (name, float(g))         # the program really is NaN (or inf) there
    rep, _ = _analyse(loss)
    assert rep.constants.record_grad_bound is None, (name, rep.constants.record_grad_bound)
    assert rep.unproven and rep.unproven[0].site == "obs" and rep.unproven[0].reason


DEFINED = {
    # (loss, rho in float64 for the true maximum of |rho'|): boxes that touch 0 where the real value does not
    "log-cosh": (lambda r: jnp.logaddexp(r, -r), lambda r: np.logaddexp(r, -r)),
    "sqrt(1+r*r)": (lambda r: S(1.0 + r * r), lambda r: np.sqrt(1.0 + r * r)),
    "huber": (lambda r: jnp.where(jnp.abs(r) < 1.0, 0.5 * r * r, jnp.abs(r) - 0.5),
              lambda r: np.where(np.abs(r) < 1.0, 0.5 * r * r, np.abs(r) - 0.5)),
}


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_bounded_losses_whose_boxes_touch_zero_still_certify(name):
    loss, rho = DEFINED[name]
    rep, R = _analyse(loss)
    G = rep.constants.record_grad_bound
    true = R * _true_max(rho, span=60.0, n=240_001)
    assert G is not None, (name, rep.unproven)
    assert true * (1 - 1e-6) <= G <= 1.1 * true, (name, G, true)


def test_bernoulli_with_probabilities_from_a_sigmoid_still_certifies():
    """``Bernoulli(probs=sigmoid(eta))``: NumPyro's log-probability is ``xlogy(y, p) + xlog1py(1 - y, -p)``, whose
    derivative divides by ``p`` and reads ``log(p)``, with ``p``'s box reaching 0 (eta is anywhere). The real
    value of ``sigmoid`` is positive (``_positive``), so the score ``y - p`` is bounded by 1: G = R, as for
    ``Bernoulli(logits=eta)``."""
    import numpyro
    import numpyro.distributions as dist

    from bayesdp.analysis import Domain, analyze

    rng = np.random.default_rng(3)
    X = rng.standard_normal((16, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01

    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jax.nn.sigmoid(X @ w)), obs=y)

    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    rep = analyze(model, {"X": X, "y": (np.arange(16) % 2).astype(float)}, dom)
    R = dom.get("X").certified_norm
    assert rep.constants.record_grad_bound == pytest.approx(R, rel=1e-6)


def test_the_log_of_a_positive_value_whose_box_reaches_below_zero_has_no_nan_end():
    """``softplus``'s box is rounded out to ``[-5e-324, ...]``; its log is defined (softplus > 0 on the reals), and
    its box must be numbers: ``[-inf, log(hi)]``, not ``log(-5e-324) = nan`` (which compares false with
    everything and would pass any later check)."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds

    for f, hi in ((lambda x: jnp.log(jax.nn.softplus(x)), np.log(np.logaddexp(0.0, 2.0))),
                  (lambda x: jnp.log(jax.nn.sigmoid(x)), -np.log1p(np.exp(-2.0)))):
        closed = jax.make_jaxpr(f)(0.0)
        [b] = Run(Bounds()).program(closed, [Bound.box(-np.inf, 2.0)])
        assert not b.nan and not np.isnan(b.lo).any() and not np.isnan(b.hi).any(), (b.lo, b.hi)
        assert b.lo[()] == -np.inf and hi <= b.hi[()] <= hi + 1e-6, (b.lo, b.hi)


POSITIVE = {
    # (f(x) for x a float32 scalar of box [-inf, inf], whether _positive proves f(x) > 0 for every real x)
    "exp": (jnp.exp, True),
    "exp2": (jnp.exp2, True),
    "sigmoid": (jax.nn.sigmoid, True),
    "softplus": (jax.nn.softplus, True),                             # logaddexp(x, 0) > max(x, 0) >= 0
    "logaddexp(x, 2)": (lambda x: jnp.logaddexp(x, 2.0), True),
    "logaddexp(x, -1)": (lambda x: jnp.logaddexp(x, -1.0), False),     # -> -1 as x -> -inf
    "exp + 1": (lambda x: jnp.exp(x) + 1.0, True),
    "1 + exp": (lambda x: 1.0 + jnp.exp(x), True),
    "exp + exp": (lambda x: jnp.exp(x) + jnp.exp(-x), False),          # positive, but no operand's box is >= 0
    "exp - 1": (lambda x: jnp.exp(x) - 1.0, False),
    "exp + x": (lambda x: jnp.exp(x) + x, False),
    "exp * exp": (lambda x: jnp.exp(x) * jnp.exp(x), False),           # underflows to 0 at x = -60
    "exp / 2": (lambda x: jnp.exp(x) / 2.0, False),
    "sqrt(exp)": (lambda x: jnp.sqrt(jnp.exp(x)), True),
    "float16(exp)": (lambda x: jnp.exp(x).astype(jnp.float16), False),  # 0 at x = -20
    "broadcast(exp)": (lambda x: jnp.broadcast_to(jnp.exp(x), (3,)), True),
    "exp[None]": (lambda x: jnp.exp(x)[None], True),
    "jit(exp)": (lambda x: jax.jit(jnp.exp)(x), True),
    "x": (lambda x: x, False),
    "tanh": (jnp.tanh, False),
    "x * x": (lambda x: x * x, False),
    "-exp": (lambda x: -jnp.exp(x), False),
    "abs(exp)": (lambda x: jnp.abs(jnp.exp(x)), False),                # not followed: no claim
    "relu(x * x)": (lambda x: jax.nn.relu(x * x), False),              # a custom_jvp that is not logaddexp: 0 at 0
    "exp + 0": (lambda x: jnp.exp(x) + 0.0, True),                      # the sum rule (the box reaches 0)
    "32 moves": (lambda x: _moves(jnp.exp(x), 16), True),               # the depth cut: 32 steps followed
    "34 moves": (lambda x: _moves(jnp.exp(x), 17), False),              # 34 are not
    "33 sums": (lambda x: _sums(jnp.exp(x), 33), False),
    "32 sums": (lambda x: _sums(jnp.exp(x), 32), True),
    "jit(tanh)": (lambda x: jax.jit(jnp.tanh)(x), False),              # a call is followed, not taken: 0 at 0
    # the depth cut through a call's body: the call is a step (exp 32 steps down is followed, 33 not)
    "jit(31 moves)": (lambda x: jax.jit(lambda y: _moves(jnp.exp(y), 15)[None])(x), True),
    "jit(32 moves)": (lambda x: jax.jit(lambda y: _moves(jnp.exp(y), 16))(x), False),
    # add_any, the sum that JAX's transposition writes for a cotangent read twice, is a sum as add is
    "add_any(exp, 1)": (lambda x: _cotangent_sum(jnp.exp(x), jnp.ones_like(x)), True),
    "add_any(1, exp)": (lambda x: _cotangent_sum(jnp.ones_like(x), jnp.exp(x)), True),
    "add_any(exp, x)": (lambda x: _cotangent_sum(jnp.exp(x), x), False),
}


def _cotangent_sum(a, b):
    """``add_any(a, b)``: the cotangent of ``u`` in ``u -> (u, u)`` for the output cotangents ``(a, b)``."""
    return jax.vjp(lambda u: (u, u), jnp.zeros_like(a))[1]((a, b))[0]


def _moves(v, pairs):
    for _ in range(pairs):                      # broadcast_in_dim, then squeeze: two steps each
        v = jnp.squeeze(v[None])
    return v


def _sums(v, n):
    for _ in range(n):
        v = v + 0.0
    return v


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_positive_proves_exactly_the_listed_shapes(name):
    """``bounds._positive``: the real value is > 0 although the box may reach 0 (docs/analysis.md, "Undefined
    values"); products, quotients and narrowing conversions are not taken (float32 underflow)."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds, _positive

    f, expected = POSITIVE[name]
    closed = jax.make_jaxpr(f)(jnp.float32(0.0))
    run = Run(Bounds())
    run.program(closed, [Bound.box(-np.inf, np.inf)])
    assert _positive(run, closed.jaxpr.outvars[0]) is expected


def test_the_add_any_and_jit_entries_of_the_positive_table_are_what_they_say():
    """The ``add_any`` entries above do reach ``_positive`` as ``add_any`` (not ``add``), their values are the
    float sums, and the jits' bodies are exp and 31 (32) moves."""
    for name in ("add_any(exp, 1)", "add_any(1, exp)", "add_any(exp, x)"):
        f, _ = POSITIVE[name]
        closed = jax.make_jaxpr(f)(jnp.float32(0.0))
        assert closed.jaxpr.eqns[-1].primitive.name == "add_any", (name, closed)
    x = jnp.float32(0.5)
    assert float(POSITIVE["add_any(exp, 1)"][0](x)) == pytest.approx(np.exp(0.5) + 1, rel=1e-6)
    assert float(POSITIVE["add_any(exp, x)"][0](jnp.float32(-2.0))) < 0           # exp(-2) - 2
    for name, moves in (("jit(31 moves)", 31), ("jit(32 moves)", 32)):
        [call] = jax.make_jaxpr(POSITIVE[name][0])(x).jaxpr.eqns
        body = call.params["jaxpr"].jaxpr
        assert call.primitive.name == "jit" and [e.primitive.name for e in body.eqns][:1] == ["exp"]
        assert len(body.eqns) == 1 + moves and all(e.primitive.name in ("broadcast_in_dim", "squeeze")
                                                   for e in body.eqns[1:]), body


def test_positive_of_literals_and_without_a_run():
    """A literal is positive when its box is (0.5 and 2, not 0, -1, or the undefined +inf); no run, no claim."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds, _positive

    for c, expected in ((0.5, True), (2.0, True), (0.0, False), (-1.0, False), (np.inf, False)):
        closed = jax.make_jaxpr(lambda x: x * c)(jnp.float32(0.0))
        run = Run(Bounds())
        run.program(closed, [Bound.box(-np.inf, np.inf)])
        literal = closed.jaxpr.eqns[0].invars[1]
        assert _positive(run, literal) is expected, c
    assert _positive(None, closed.jaxpr.outvars[0]) is False


def test_a_where_with_an_exp_side_is_refused_saying_why():
    """``jnp.where(r < 0, exp(r), 1 + r)`` is continuous, but its gradient is NaN past r = 88.7 (reverse mode
    multiplies the exp side's inf by zero): refused, and the message says that finite counts float32."""
    loss = lambda r: jnp.where(r < 0, jnp.exp(r), 1.0 + r)
    assert np.isnan(float(jax.grad(loss)(jnp.float32(100.0))))
    rep, _ = _analyse(loss)
    assert rep.constants.record_grad_bound is None
    assert "exp (an infinity past 88.7)" in rep.unproven[0].reason, rep.unproven[0].reason


def test_a_quotient_by_a_positive_value_stays_defined_and_integer_powers_do_not_overflow_as_floats():
    """``1 / exp(x)``: the divisor's box reaches 0 but its real value is positive (``_nonzero`` through
    ``_positive``): defined, unbounded above, so ``tanh`` of it is in [0, 1]. An integer power of an unbounded
    integer is not taken as a float overflow (integers wrap: ``Bounds.checked`` makes them unbounded, not
    undefined)."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds

    closed = jax.make_jaxpr(lambda x: jnp.tanh(1.0 / jnp.exp(x)))(jnp.float32(0.0))
    [b] = Run(Bounds()).program(closed, [Bound.box(-np.inf, 80.0)])          # exp below its overflow
    assert not b.nan and b.lo[()] <= np.exp(-80.0) and 1.0 <= b.hi[()] <= 1.0 + 1e-12
    closed = jax.make_jaxpr(lambda x: jnp.tanh(1.0 / x))(jnp.float32(0.0))      # a divisor that may be 0: undefined
    [b] = Run(Bounds()).program(closed, [Bound.box(-np.inf, np.inf)])
    assert b.nan
    closed = jax.make_jaxpr(lambda n: n ** 9)(jnp.int32(0))
    [b] = Run(Bounds()).program(closed, [Bound.box(-np.inf, np.inf)])
    assert not b.nan and not b.bounded()


def test_the_strict_select_rule_holds_only_for_theta_dependent_values_of_a_derivative_program():
    """``select_n(p, r, log(r))`` with ``p`` never true: a forward program (no ``reverse`` predicate in the
    context) or a value the predicate says does not depend on theta takes only the case chosen (defined, ``r``'s
    box); a theta-dependent value of a derivative program is undefined (reverse mode differentiates ``log(r)`` at
    ``r = 0`` too)."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds

    closed = jax.make_jaxpr(lambda r, p: jnp.where(p, jnp.log(r), r))(jnp.float32(1.0), True)
    ins = [Bound.box(-2.0, 3.0), Bound.box(0.0, 0.0)]
    for context, undefined in (({}, False), ({"reverse": lambda v: False}, False),
                               ({"reverse": lambda v: True}, True)):
        [b] = Run(Bounds(), context).program(closed, ins)
        assert b.nan is undefined, context
        if not undefined:
            assert (float(b.lo), float(b.hi)) == (-2.0, 3.0)


def test_reverse_asks_the_context_about_the_value_itself():
    """``_reverse(run, v)``: whether the context's ``reverse`` predicate holds of ``v`` (no predicate, or no run:
    False). ``select_n(p, r, log(r))`` with ``p`` never true: strict (undefined) only when the predicate holds of
    the select's own output, since reverse mode differentiates ``log`` at ``r = 0`` although it is not chosen
    (JAX's gradient is NaN there, the value -1 at r = -1 is finite)."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds, _reverse

    f = lambda p, r: lax.select_n(p, r, jnp.log(r))
    assert np.isnan(float(jax.grad(lambda r: f(False, r))(jnp.float32(0.0))))
    assert float(f(False, jnp.float32(-1.0))) == -1.0
    closed = jax.make_jaxpr(f)(True, jnp.float32(1.0))
    out, log = closed.jaxpr.outvars[0], closed.jaxpr.eqns[0].outvars[0]
    assert closed.jaxpr.eqns[-1].primitive.name == "select_n"
    ins = [Bound.box(0.0, 0.0), Bound.box(-2.0, 3.0)]
    for dependent, undefined in (({out}, True), ({log}, False), (set(), False)):
        run = Run(Bounds(), {"reverse": lambda v: v in dependent})
        [b] = run.program(closed, ins)
        assert _reverse(run, out) is undefined and _reverse(run, log) is (log in dependent)
        assert b.nan is undefined, dependent
        if not undefined:
            assert (float(b.lo), float(b.hi)) == (-2.0, 3.0)
    assert _reverse(None, out) is False
    assert _reverse(Run(Bounds()), out) is False                            # a forward program: no predicate


def test_a_select_is_undefined_where_a_chosen_case_is_and_names_it():
    """Forward mode: ``select_n(p, log(r), r)`` and ``select_n(p, r, log(r))`` with ``r`` in [-2, 3] (``log`` is
    NaN for r < 0). Undefined exactly when ``p``'s box lets a position choose the ``log`` case (case 0 when
    ``p`` may be 0, case 1 when it may be 1), the reason naming the log; else ``r``'s box, blamed on nothing
    (the log not chosen is no reason). Positionwise: one position that may choose the log is enough."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds

    assert np.isnan(float(lax.select_n(False, jnp.log(jnp.float32(-1.0)), jnp.float32(-1.0))))
    assert float(lax.select_n(True, jnp.log(jnp.float32(-1.0)), jnp.float32(-1.0))) == -1.0
    for log_case, cases in ((0, lambda r: (jnp.log(r), r)), (1, lambda r: (r, jnp.log(r)))):
        closed = jax.make_jaxpr(lambda p, r: lax.select_n(p, *cases(r)))(True, jnp.float32(1.0))
        for plo, phi in ((0.0, 0.0), (1.0, 1.0), (0.0, 1.0)):
            [b] = Run(Bounds()).program(closed, [Bound.box(plo, phi), Bound.box(-2.0, 3.0)])
            undefined = plo <= log_case <= phi
            assert b.nan is undefined, (log_case, plo, phi)
            if undefined:
                assert b.why is not None and b.why.primitive.name == "log", b.why
            else:
                assert (float(b.lo), float(b.hi)) == (-2.0, 3.0) and b.why is None, (b.lo, b.hi, b.why)
    closed = jax.make_jaxpr(lambda p, r: lax.select_n(p, jnp.log(r), r))(jnp.ones(3, bool), jnp.ones(3))
    for lo, undefined in (([1.0, 1.0, 1.0], False), ([1.0, 0.0, 1.0], True)):
        [b] = Run(Bounds()).program(closed, [Bound.box(np.array(lo), np.ones(3)), Bound.box(-2.0, 3.0)])
        assert b.nan is undefined and b.lo.shape == (3,), lo


def test_select_defined_in_a_derivative_program_is_undefined_when_any_case_is():
    """``_select_defined`` itself (``select_n`` checks the strict rule before narrowing its cases; a nested select
    reevaluated on a narrowed operand reaches only ``_select_defined``): for a theta-dependent output any
    undefined case makes it undefined, chosen or not; else only a case a position may choose."""
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds, _select_defined

    closed = jax.make_jaxpr(lambda p, a, b: lax.select_n(p, a, b))(True, jnp.float32(1.0), jnp.float32(1.0))
    [eqn] = closed.jaxpr.eqns
    out = eqn.outvars[0]
    bad = Bound.undefined((), "the log")
    for p, case0, case1 in ((Bound.box(0.0, 0.0), Bound.box(-2.0, 3.0), bad),
                            (Bound.box(1.0, 1.0), bad, Bound.box(-2.0, 3.0))):
        for dependent, undefined in (({out}, True), (set(), False)):
            [b] = _select_defined(Run(Bounds(), {"reverse": lambda v: v in dependent}), eqn, [p, case0, case1])
            assert b.nan is undefined, (dependent, float(p.lo))
            if undefined:
                assert b.why == "the log"
            else:
                assert (float(b.lo), float(b.hi)) == (-2.0, 3.0)
