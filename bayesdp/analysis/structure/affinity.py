"""Affinity in theta: is a value constant in theta, affine in theta, or neither?

For fixed data, a program built only from operations that are linear in their theta-dependent
operands computes an affine function of theta (exactly, in real arithmetic).  Abstract values:
:data:`CONST` (theta-free: it may depend on the data), :data:`AFFINE`, :data:`OTHER` (not proven
affine).  The table:

* linear in every operand (sums, negation, reshapes, broadcasts, transposes, slices, padding,
  concatenation, reductions by summation, conversions between float types...);
* linear in one operand when the others are theta-free (``mul``, ``dot_general``; ``div`` by a
  theta-free denominator; ``gather``/``dynamic_slice``/``select_n``/scatter-add with theta-free
  indices or predicate: for fixed data they pick fixed entries);
* anything else applied to a theta-dependent value is :data:`OTHER` (``max``, ``min``, ``abs``,
  ``select_n`` with a theta-dependent predicate, ``clamp``, ``tanh``, ``exp``, ``integer_pow``,
  calls with a custom derivative, ...), and records the equation that lost affinity.

A ``cond`` whose index is theta-free is affine if every branch is (the branch is fixed by the
data); loops iterate to a fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .interpreter import Interpreter
from .interpreter import CALL_BODIES
from .switch import continuous_at_switch, continuous_select, guarded
import numpy as np

__all__ = ["A", "AFFINE", "Aff", "Affinity", "C", "CONST", "OTHER"]

CONST, AFFINE, OTHER = 0, 1, 2
_NAMES = {CONST: "constant", AFFINE: "affine", OTHER: "not affine"}


@dataclass(frozen=True)
class Aff:
    """The abstract value of one array for :class:`Affinity`: constant, affine or not affine in theta.

    ``C`` and ``A`` are the values of a theta-free input and of theta itself.

    Args:
        kind: ``CONST`` (theta-free), ``AFFINE`` or ``OTHER`` (not proven affine).
        grad_ok: the value is a continuous function of theta and JAX's derivative of it is its
            (almost-everywhere) derivative -- False after a jump (``sign``, ``floor``, a select or an index
            chosen by theta...), a primitive not known to be continuous, ``stop_gradient`` of a
            theta-dependent value, or a custom derivative defined outside JAX/NumPyro.
        why: the equation that lost affinity (for messages).
        why_grad: the equation that lost ``grad_ok``.
        always: for a boolean proven to take one value for every input (``is_finite`` of a value finite
            everywhere), that value; None otherwise.

    Examples:
        >>> from bayesdp.analysis.structure.affinity import AFFINE, Aff, A
        >>> str(A), Aff(AFFINE) == A
        ('affine', True)
    """

    kind: int
    grad_ok: bool = True
    why: object = field(default=None, compare=False)
    why_grad: object = field(default=None, compare=False)
    always: bool | None = None      # a boolean proven to have this value everywhere (None: not known)

    def __str__(self):
        return _NAMES[self.kind]


C = Aff(CONST)
A = Aff(AFFINE)


def _grad(ins: list[Aff]) -> tuple[bool, object]:
    bad = next((a for a in ins if not a.grad_ok), None)
    return (True, None) if bad is None else (False, bad.why_grad)


def _other(eqn, ins, grad_ok: bool | None = None) -> Aff:
    prior = next((a.why for a in ins if a.kind == OTHER and a.why is not None), None)
    ok, why_grad = _grad(ins)
    if grad_ok is False and ok:
        ok, why_grad = False, eqn
    return Aff(OTHER, ok, prior or eqn, why_grad)


def linear(run, eqn, ins):
    kind = max((a.kind for a in ins), default=CONST)
    if kind == OTHER:
        out = _other(eqn, ins)
    else:
        ok, why_grad = _grad(ins)
        out = Aff(kind, ok, None, why_grad)
    return [out] * len(eqn.outvars)


def _theta_free_then_linear(n_linear: int):
    """The first ``n_linear`` operands may be affine; the rest (indices, predicates) must be CONST."""
    def rule(run, eqn, ins):
        lin, ctrl = ins[:n_linear], ins[n_linear:]
        if any(a.kind != CONST for a in ctrl):
            return [_other(eqn, ins)] * len(eqn.outvars)
        return linear(run, eqn, lin)
    return rule


def select_n(run, eqn, ins):
    pred, cases = ins[0], ins[1:]
    if pred.always is not None and len(cases) == 2:
        # the predicate is the same boolean everywhere: the selected case only (select_n(True, a, b) = b)
        return [cases[1] if pred.always else cases[0]]
    if pred.kind != CONST:
        if len(cases) == 2 and all(c.grad_ok for c in cases) and continuous_at_switch(run, eqn):
            ok, why_grad = _grad(cases)                 # the cases meet where theta switches them (switch.py)
            return [Aff(OTHER, ok, _other(eqn, ins).why, why_grad)]
        if np.dtype(eqn.invars[0].aval.dtype) != np.bool_ and continuous_select(run, eqn):
            # jnp.select / jnp.piecewise: a case is judged where it is chosen (k), its guards seen through
            cases = [c if c.grad_ok else _regrade(run, eqn.invars[1 + k], eqn.invars[0], k, {}) or c
                     for k, c in enumerate(cases)]
            if all(c.grad_ok for c in cases):
                return [Aff(OTHER, True, _other(eqn, ins).why, None)]
        return [_other(eqn, ins, grad_ok=False)]        # a branch chosen by theta: possibly a jump
    return linear(run, eqn, cases)


def _regrade(run, v, jv, k, memo, depth=0):
    """The :class:`Aff` of case ``k`` of the select with index ``jv`` where the case is chosen: each
    ``select_n(jv == k, stop_gradient(x), x)`` (jnp.piecewise's guard of the function's argument) is ``x`` there,
    in value and in JAX's derivative (the select passes ``x``'s tangent where ``jv == k``); every other equation's
    rule applied again to its operands so judged. None when not computed (a call's body: no claim)."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return C
    v = run.origin(v)
    a = run.value(v)
    if a is None or a.grad_ok or depth > 64:
        return a
    if v in memo:
        return memo[v]
    x, p = guarded(run, v)
    if x is not None and _index_is(run, p, jv, k):
        memo[v] = run.value(run.origin(x))
        return memo[v]
    e = run.producer(v)
    if e is None or e.primitive.name not in RULES and e.primitive.name in CALL_BODIES:
        return a
    ins = [_regrade(run, w, jv, k, memo, depth + 1) for w in e.invars]
    if any(b is None for b in ins):
        return a
    rule = RULES.get(e.primitive.name, nonlinear)
    memo[v] = rule(run, e, ins)[list(e.outvars).index(v)]
    return memo[v]


def _index_is(run, p, jv, k) -> bool:
    """Boolean ``p`` is ``jv == k`` (the same index variable, the literal ``k``)."""
    from jax.extend import core as jcore

    e = None if isinstance(p, jcore.Literal) else run.producer(run.origin(p))
    if e is None or e.primitive.name != "eq":
        return False
    for a, b in (e.invars, e.invars[::-1]):
        if not isinstance(a, jcore.Literal) and run.origin(a) is run.origin(jv) and isinstance(b, jcore.Literal):
            val = np.asarray(b.val)
            return val.size == 1 and val.item() == k
    return False


def bilinear(run, eqn, ins):
    a, b = ins[0], ins[1]
    if a.kind != CONST and b.kind != CONST:
        return [_other(eqn, ins)]
    return linear(run, eqn, [a, b])


def div(run, eqn, ins):
    num, den = ins
    if den.kind != CONST:
        return [_other(eqn, ins)]
    return linear(run, eqn, [num])


def gather(run, eqn, ins):
    op, idx = ins
    if idx.kind != CONST:
        return [_other(eqn, ins, grad_ok=False)]
    return linear(run, eqn, [op])


def scatter_add(run, eqn, ins):
    op, idx, upd = ins[0], ins[1], ins[2]
    if idx.kind != CONST:
        return [_other(eqn, ins, grad_ok=False)]
    return linear(run, eqn, [op, upd])


def convert(run, eqn, ins):

    dt = np.dtype(eqn.params["new_dtype"])
    if ins[0].kind != CONST and not np.issubdtype(dt, np.inexact):
        return [_other(eqn, ins, grad_ok=False)]       # rounding to an integer or a boolean: a step
    return linear(run, eqn, ins)


#: primitives continuous (and differentiated exactly by JAX almost everywhere) in their operands (not atan2: its
#: branch cut, atan2(0, u) jumps by pi at u = 0)
CONTINUOUS = set(("exp exp2 log log1p expm1 tanh logistic sin cos tan atan asin acos asinh acosh atanh sinh cosh "
                  "sqrt rsqrt cbrt abs max min clamp integer_pow pow square one_minus_square erf erfc erf_inv lgamma digamma mul "
                  "dot_general reduce_max reduce_min reduce_prod cumprod cummax cummin cumlogsumexp "
                  "logaddexp").split())


def nonlinear(run, eqn, ins):
    if all(a.kind == CONST for a in ins):
        return [C] * len(eqn.outvars)
    continuous = eqn.primitive.name in CONTINUOUS
    return [_other(eqn, ins, grad_ok=None if continuous else False)] * len(eqn.outvars)


def stop_gradient(run, eqn, ins):
    if all(a.kind == CONST for a in ins):
        return [C]
    return [_other(eqn, ins, grad_ok=False)]


_TRUSTED = ("/jax/", "/jaxlib/", "/numpyro/")


def _rule_source(eqn) -> str:
    """Where the function with the custom derivative is defined (its rule is defined with it)."""
    body = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
    info = getattr(getattr(body, "jaxpr", body), "debug_info", None)
    return str(getattr(info, "func_src_info", "") or "")


def custom_derivative(run, eqn, ins):
    """A call with a custom derivative: not affine (the derivative JAX uses is the rule's, not the
    primal's); its derivative is trusted only when the rule is defined inside JAX or NumPyro."""
    if all(a.kind == CONST for a in ins):
        return [C] * len(eqn.outvars)
    src = _rule_source(eqn).replace("\\", "/")
    trusted = any(t in src for t in _TRUSTED)
    return [_other(eqn, ins, grad_ok=None if trusted else False)] * len(eqn.outvars)


#: primitives that map finite real operands to a finite real result for EVERY finite operand (real arithmetic)
FINITE = set(("neg add sub mul dot_general add_any reduce_sum broadcast_in_dim reshape transpose squeeze slice "
              "concatenate stack unstack pad convert_element_type copy select_n exp tanh logistic sin cos abs max min clamp "
              "reduce_max reduce_min square one_minus_square").split())


def finite_everywhere(run, v, depth: int = 0) -> bool:
    """Whether ``v`` is PROVEN finite for every value of the program's inputs (theta real, data finite: both are
    checked), from its producers: literals that are finite, the program's own inputs, and ``FINITE`` primitives
    of such values (``integer_pow`` with a non-negative exponent too)."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return bool(np.all(np.isfinite(np.asarray(v.val, dtype=np.float64))))
    if depth > 64:
        return False
    e = run.producer(v)
    if e is None:
        return v in run.context.get("program_inputs", frozenset())
    name = e.primitive.name
    if name == "integer_pow" and e.params["y"] < 0 or name not in FINITE | {"integer_pow"}:
        return False
    return all(finite_everywhere(run, u, depth + 1) for u in e.invars)


def is_finite(run, eqn, ins):
    """``is_finite(x)``: constantly True (theta-free) when ``x`` is finite for every input (NumPyro's log-densities
    guard infinite logits with it); otherwise a theta-dependent boolean (a step)."""
    if finite_everywhere(run, eqn.invars[0]):
        return [Aff(CONST, always=True)]
    if ins[0].kind == CONST:
        return [C]
    return [_other(eqn, ins, grad_ok=False)]


def identity(run, eqn, ins):
    return list(ins[:len(eqn.outvars)])


LINEAR = ("neg reshape broadcast_in_dim transpose squeeze rev slice pad concatenate stack unstack reduce_sum cumsum copy "
          "reduce_precision add sub add_any split sharding_constraint mesh_cast reshard real").split()

RULES = {name: linear for name in LINEAR}
RULES.update({
    "mul": bilinear, "dot_general": bilinear, "div": div, "select_n": select_n, "gather": gather,
    "dynamic_slice": _theta_free_then_linear(1), "dynamic_update_slice": _theta_free_then_linear(2),
    "scatter-add": scatter_add, "scatter": scatter_add,
    "convert_element_type": convert, "optimization_barrier": identity, "device_put": identity,
    # a custom derivative: the derivative the sampler differentiates with is not the primal's
    "custom_jvp_call": custom_derivative, "custom_vjp_call": custom_derivative,
    "custom_vjp_call_jaxpr": custom_derivative, "stop_gradient": stop_gradient, "is_finite": is_finite,
})


class Affinity(Interpreter):
    """The affinity interpreter: is each value constant, affine or not affine in theta (one table ``RULES``).

    A primitive with no rule is not affine in a theta-dependent operand (and not known continuous).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure import Affinity, Run
        >>> from bayesdp.analysis.structure.affinity import A, C
        >>> closed = jax.make_jaxpr(lambda t, x: (2.0 * t + x, jnp.exp(t)))(0.0, 0.0)
        >>> [str(a) for a in Run(Affinity()).program(closed, [A, C])]
        ['affine', 'not affine']
    """

    name = "affinity"
    rules = RULES

    def literal(self, value, aval):
        """A literal is theta-free.

        Args:
            value: the literal.
            aval: its abstract array.

        Returns:
            ``C``.
        """
        return C

    def unknown(self, run, eqn, ins):
        """A primitive with no rule: not affine (nor known continuous) where an operand depends on theta.

        Args:
            run: the interpretation in progress.
            eqn: the equation.
            ins: the :class:`Aff` of its inputs.

        Returns:
            One :class:`Aff` per output.
        """
        return nonlinear(run, eqn, ins)

    def join(self, a: Aff, b: Aff) -> Aff:
        """The larger kind of the two; ``grad_ok`` only if both are.

        Args:
            a: an abstract value.
            b: an abstract value.

        Returns:
            The joined :class:`Aff`.
        """
        hi = a if a.kind >= b.kind else b
        if a.always != b.always:
            hi = Aff(hi.kind, hi.grad_ok, hi.why, hi.why_grad)
        if a.grad_ok and b.grad_ok:
            return hi
        bad = a if not a.grad_ok else b
        return Aff(hi.kind, False, hi.why, bad.why_grad)

    def control(self, run, eqn, outs, decider: Aff):
        """Outputs of a branch or loop: unchanged when the path is theta-free, else not affine (a jump).

        Args:
            run: the interpretation in progress.
            eqn: the ``cond`` or ``while`` equation.
            outs: the joined outputs.
            decider: the :class:`Aff` of the index or predicate.

        Returns:
            The outputs.
        """
        if decider.kind == CONST:
            return outs
        # the path is chosen by a theta-dependent value: a step function of theta
        return [_other(eqn, [o, decider], grad_ok=False) for o in outs]
