"""A select chosen by theta, proven continuous where its predicate switches.

``jnp.where(jnp.abs(r) <= d, 0.5 * r**2, d * (jnp.abs(r) - d / 2))`` (a Huber loss), ``jnp.where(r > 0, r,
0.01 * r)`` (a leaky ReLU) and ``jnp.where(r > c, c, r)`` (a cap) are ``select_n(p, b, a)`` with a predicate
``p = r OP c`` that depends on theta. Each is continuous in theta, and JAX's derivative is its derivative
almost everywhere, when

1. ``r`` is continuous in theta (its own ``grad_ok``), and ``c`` is a number fixed by the program (a literal or
   a constant: no theta, no data);
2. both cases are continuous in theta (their ``grad_ok``), and each is a function of ``r`` alone: position i of
   the case is computed from position i of ``r`` and fixed numbers, through the element-wise operations below;
3. the two cases agree where the predicate switches: ``A(c) = B(c)`` (and ``A(-c) = B(-c)`` for a predicate on
   ``|r|``), computed in exact rational arithmetic (:class:`fractions.Fraction`) from the literals' values in
   the program's dtype. An operation that is not exact at that point (``exp(1)``, a rounding conversion) is no
   proof: the select stays a possible jump.

Then along any segment in theta the output is the case chosen on each side, the two meet on the switch set, and
the output is continuous; derivation and the Lipschitz argument in docs/analysis.md ("A select chosen by
theta"). The cases must also be finite for every real ``r`` (JAX's reverse-mode derivative of a select
multiplies the case not chosen by zero, and ``0 * inf`` is ``nan``): a case that depends on ``r`` is built from
operations finite everywhere; a division or a negative power only of fixed numbers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .bounds import _exact_convert, _float_same, _same, _squared_operand
from .interpreter import CALL_BODIES, _open

# (continuous_select, guarded and select_conditions are the structure package's own helpers, read by affinity and
# bounds; not listed)
__all__ = ["continuous_at_switch"]

_CMP = frozenset({"lt", "le", "gt", "ge"})
#: calls whose body is followed: every call the interpreter enters, except custom_vjp (its forward function is
#: not what reverse mode differentiates)
_CALLS = frozenset(CALL_BODIES) - {"custom_vjp_call", "custom_vjp_call_jaxpr"}
_DEPTH = 256         # equations followed per case, at most (a piecewise function of 12 knots: about 80)


class _NoProof(Exception):
    """The case is not a function of ``r`` alone, or not exact at the switch point."""


def _number(a, dtype):
    """A size-1 array as the program holds it: a bool, or the exact value of the float in ``dtype`` (a weakly
    typed Python float is float32 in a float32 program)."""
    a = np.asarray(a)
    if a.size != 1:
        raise _NoProof
    if np.dtype(dtype) == np.bool_:
        return bool(a.item())
    x = float(a.astype(dtype).item())
    if not np.isfinite(x):
        raise _NoProof
    return Fraction(x)


def _shape(v) -> tuple:
    return tuple(v.aval.shape)


def _body(e):
    """(jaxpr, consts) of call ``e``'s body."""
    return _open(e.params[CALL_BODIES[e.primitive.name]])


_PRODUCERS = object()      # a scope's key for the equations of its body, by output variable


def _scope(inner, e, parent, consts=None) -> dict:
    """The bindings of call ``e``'s body ``inner``: its inputs to the caller's variables (in ``parent``), its
    constants (their values, or None where only their presence matters), and its own equations (a body the
    interpreter did not enter, e.g. a custom_jvp function's, has no recorded producers)."""
    sub = {w: ("var", a, parent) for w, a in zip(inner.invars, e.invars)}
    sub.update({w: ("const", c) for w, c in zip(inner.constvars, consts or [None] * len(inner.constvars))})
    sub[_PRODUCERS] = {o: q for q in inner.eqns for o in q.outvars}
    return sub


def _producer(run, v, scope):
    return run.producer(v) if scope is None else scope[_PRODUCERS].get(v)


#: element-wise operations evaluated exactly on rationals (``_Case``); the comparisons are those of a nested
#: select's predicate (a nested select chosen by theta is itself proven only for these: ``eq``/``ne``, ``and`` of
#: two comparisons, are refused before; booleans of constants alone are folded by JAX into literals)
_EXACT = {"add": lambda a, b: a + b, "add_any": lambda a, b: a + b, "sub": lambda a, b: a - b,
          "mul": lambda a, b: a * b, "neg": lambda a: -a, "abs": abs, "max": max, "min": min,
          "sign": lambda a: Fraction((a > 0) - (a < 0)), "square": lambda a: a * a,
          "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
          "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "stop_gradient": lambda a: a,
          "clamp": lambda lo, x, hi: min(max(x, lo), hi),
          "copy": lambda a: a, "copy_p": lambda a: a,
          "broadcast_in_dim": lambda a: a}
#: functions not rational, evaluated at the one point where they are: (argument, value)
_AT = {"exp": (0, 1), "exp2": (0, 1), "tanh": (0, 0), "sin": (0, 0), "sinh": (0, 0), "atan": (0, 0),
       "expm1": (0, 0), "erf": (0, 0), "logistic": (0, Fraction(1, 2)), "cos": (0, 1), "log": (1, 0),
       "log1p": (0, 0)}


class _Case:
    """Evaluates a case exactly at ``r = s``: ``value(v)``, a Fraction or a bool."""

    def __init__(self, run, base, s, oshape):
        self.run, self.base, self.s, self.oshape = run, base, s, oshape
        self.budget = _DEPTH
        self.memo = {}         # (id of a variable, id of its scope) -> (value, the scope kept alive)

    def value(self, v, scope=None):
        from jax.extend import core as jcore

        if isinstance(v, jcore.Literal):
            return _number(v.val, v.aval.dtype)
        key = (id(v), id(scope))
        if key not in self.memo:
            self.memo[key] = (self._value(v, scope), scope)
        return self.memo[key][0]

    def _value(self, v, scope):
        from jax.extend import core as jcore

        if scope is not None and v in scope:
            bound = scope[v]
            if bound[0] == "const":
                return _number(bound[1], v.aval.dtype)
            return self.value(bound[1], bound[2])
        if scope is None:
            v = self.run.origin(v)
            if isinstance(v, jcore.Literal):
                return _number(v.val, v.aval.dtype)
            if v is self.base or _same(self.run, v, self.base):
                return self.s
            if v in self.run.consts:
                return _number(self.run.consts[v], v.aval.dtype)
        e = _producer(self.run, v, scope)
        self.budget -= 1
        if e is None or self.budget < 0:
            raise _NoProof                       # an input (theta or the data), or too long
        if scope is None and e.primitive.name in ("select_n", "clamp", "argmax"):
            x, _ = guarded(self.run, v)
            if x is not None:
                return self.value(x)             # jnp.piecewise's guard: x's value
            sel = select_conditions(self.run, v) if e.primitive.name != "select_n" else None
            if sel is not None:
                return _index_value(self, sel[0], sel[1], None)
        if e.primitive.name in _CALLS:
            inner, consts = _body(e)
            return self.value(inner.outvars[e.outvars.index(v)], _scope(inner, e, scope, consts))
        if len(e.outvars) != 1 or _shape(e.outvars[0]) not in (self.oshape, ()):
            raise _NoProof                       # not element-wise in r
        for w in e.invars:
            if _shape(w) not in (self.oshape, ()):
                raise _NoProof
        return self._apply(e, [self.value(w, scope) for w in e.invars])

    def _apply(self, e, vals):
        name = e.primitive.name
        if name in _EXACT:
            return _EXACT[name](*vals)
        if name == "integer_pow":
            y = int(e.params["y"])
            if y < 0 and vals[0] == 0:
                raise _NoProof
            return vals[0] ** y
        if name == "div":
            if vals[1] == 0:
                raise _NoProof
            return vals[0] / vals[1]
        if name == "select_n":
            if isinstance(vals[0], bool):
                return vals[2] if vals[0] else vals[1]
            if isinstance(vals[0], Fraction) and vals[0].denominator == 1 and 0 <= vals[0] < len(vals) - 1:
                return vals[1 + int(vals[0])]    # an integer index (jnp.select, jnp.piecewise)
            raise _NoProof
        if name == "convert_element_type":
            # (a boolean of theta made a number, (r > 0) * r, is refused before: a step in theta)
            if _exact_convert(e):
                return vals[0]
            src, dst = np.dtype(e.invars[0].aval.dtype), np.dtype(e.outvars[0].aval.dtype)
            if np.issubdtype(src, np.integer) and np.issubdtype(dst, np.floating) and \
                    not isinstance(vals[0], bool) and vals[0].denominator == 1 and \
                    abs(vals[0]) <= 2 ** (np.finfo(dst).nmant + 1):
                return vals[0]                   # an integer the float holds exactly (jnp.piecewise's default 0)
            raise _NoProof                       # a conversion that may round
        if name in ("and", "or", "not") and all(isinstance(x, bool) for x in vals):
            return {"and": lambda a, b: a and b, "or": lambda a, b: a or b, "not": lambda a: not a}[name](*vals)
        if name in _AT and len(vals) == 1 and vals[0] == _AT[name][0]:
            return Fraction(_AT[name][1])
        raise _NoProof


def continuous_at_switch(run, eqn) -> bool:
    """Whether ``select_n(p, a, b)`` (``eqn``) is proven continuous in theta where ``p`` switches (the module's
    conditions 1-3); the caller checks that ``r`` and both cases are themselves continuous (``grad_ok``).

    Args:
        run: the affinity interpretation in progress (its producers, call bindings and constants).
        eqn: the ``select_n`` equation.

    Returns:
        True when proven; False otherwise (no claim).

    Examples:
        The affinity interpreter asks it for each select chosen by theta:

        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure import Affinity, Run
        >>> from bayesdp.analysis.structure.affinity import A
        >>> def grad_ok(f):
        ...     closed = jax.make_jaxpr(f)(jnp.zeros(3))
        ...     return Run(Affinity()).program(closed, [A])[0].grad_ok
        >>> grad_ok(lambda r: jnp.where(jnp.abs(r) <= 1.0, 0.5 * r ** 2, jnp.abs(r) - 0.5))    # Huber
        True
        >>> grad_ok(lambda r: jnp.where(r > 0, r + 1.0, r))                                       # a jump
        False
    """
    from jax.extend import core as jcore

    if len(eqn.invars) != 3:
        return False
    oshape = _shape(eqn.outvars[0])
    pv = eqn.invars[0]
    if isinstance(pv, jcore.Literal) or np.dtype(pv.aval.dtype) != np.bool_ or _shape(pv) != oshape:
        return False
    pe = run.producer(run.origin(pv))
    if pe is None or pe.primitive.name not in _CMP:
        return False
    for base, points in _switches(run, pe, oshape):
        if _meet(run, eqn, base, points, oshape):
            return True
    return False


def _switches(run, pe, oshape):
    """For comparison ``pe`` (``r OP c``, ``|r| OP c`` or ``r * r OP c`` with ``c`` a number fixed by the program):
    each ``(r, switch points)``, ``r`` continuous in theta (``grad_ok``) of the select's shape; the comparison's
    truth is constant on each open interval of ``r`` between its switch points."""
    from jax.extend import core as jcore

    for a, b in ((pe.invars[0], pe.invars[1]), (pe.invars[1], pe.invars[0])):
        try:
            c = _Case(run, None, None, oshape).value(b)          # no base: theta and the data are not numbers
        except _NoProof:
            continue
        if isinstance(c, bool):
            continue
        base = _float_same(run, a)
        ae = run.producer(base)
        tries = [(base, [c])]
        if ae is not None and ae.primitive.name == "abs":
            tries = [(_float_same(run, ae.invars[0]), [c, -c] if c >= 0 else [])]     # |r| < 0: never
        else:
            sq, root = _squared_operand(run, ae), _exact_sqrt(c)
            if sq is not None and root is not None:     # r * r OP c, c a square: the switch is r = +-sqrt(c)
                tries.insert(0, (sq, [root, -root]))
        for base, points in tries:
            if isinstance(base, jcore.Literal) or _shape(base) != oshape:
                continue
            r = run.value(base)
            if r is None or not getattr(r, "grad_ok", False):
                continue
            yield base, points


def select_conditions(run, jv):
    """``([c_1, ..., c_n], last)`` when integer ``jv`` is the index of ``jnp.select`` (``argmax(stack([False, c_1,
    ..., c_n]))``: 1 + the first condition that holds, ``last`` False) or of ``jnp.piecewise`` (``clamp(0,
    argmax(cumsum([False, c_1, ..., c_n])), n)``: 1 + the last condition that holds, ``last`` True), 0 where none
    holds, each ``c_k`` a boolean of ``jv``'s shape; else None."""
    from jax.extend import core as jcore

    if isinstance(jv, jcore.Literal):
        return None
    shape = _shape(jv)
    e = run.producer(run.origin(jv))
    last = e is not None and e.primitive.name == "clamp"
    if last:                                     # jnp.piecewise: clamp(0, argmax(cumsum(...)), n)
        lo, hi = (_Case(run, None, None, shape).value(w) if isinstance(w, jcore.Literal) else None
                  for w in (e.invars[0], e.invars[2]))
        e = run.producer(run.origin(e.invars[1]))
    if e is None or e.primitive.name != "argmax" or tuple(e.params.get("axes", ())) != (0,):
        return None
    rows = _rows(run, e.invars[0], shape, cumulative=last)
    if rows is None:
        return None
    if last and (lo != 0 or hi != len(rows) - 1):
        return None
    try:
        if _Case(run, None, None, shape).value(rows[0]) is not False:
            return None                          # the first row must be False: the default when none holds
    except _NoProof:
        return None
    return rows[1:], last


def _rows(run, v, shape, cumulative: bool, depth: int = 0):
    """The booleans of ``shape`` stacked along axis 0 into ``v``: a ``stack`` (``jnp.select``), or, when
    ``cumulative``, the running count of a ``concatenate`` of ``(1,) + shape`` broadcasts (``jnp.piecewise``, the
    cumulative sum in a call); None otherwise."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal) or depth > 8:
        return None
    v = run.origin(v)
    e = run.producer(v)
    if e is None:
        return None
    name = e.primitive.name
    if cumulative:
        if name in CALL_BODIES:
            w = run.body_output(e, v)
            return None if w is None else _rows(run, w, shape, True, depth + 1)
        if name == "cumsum" and e.params.get("axis") == 0 and not e.params.get("reverse"):
            ce = run.producer(run.origin(e.invars[0]))
            if ce is None or ce.primitive.name != "convert_element_type" or \
                    np.dtype(ce.invars[0].aval.dtype) != np.bool_:
                return None
            return _rows(run, ce.invars[0], shape, False, depth + 1)
        return None
    if name == "stack" and e.params.get("axis") == 0:
        rows = list(e.invars)
    elif name == "concatenate" and e.params.get("dimension") == 0:
        rows = []
        for w in e.invars:
            got = _unit_rows(run, w, shape, depth)
            if got is None:
                return None
            rows += got
    else:
        return None
    if any(not isinstance(c, jcore.Literal) and (np.dtype(c.aval.dtype) != np.bool_ or _shape(c) != shape)
           for c in rows):
        return None
    return rows


def _unit_rows(run, w, shape, depth):
    """The rows of a ``concatenate`` operand: a ``(1,) + shape`` broadcast of one boolean, or a concatenation of
    them (the conditions jnp.piecewise passes into its body)."""
    from jax.extend import core as jcore

    if isinstance(w, jcore.Literal):
        return None
    w = run.origin(w)
    e = run.producer(w)
    if e is None:
        return None
    if e.primitive.name == "concatenate" and e.params.get("dimension") == 0:
        return _rows(run, w, shape, False, depth + 1)
    if e.primitive.name == "broadcast_in_dim" and _shape(w) == (1,) + tuple(shape):
        src = e.invars[0]
        dims = tuple(e.params["broadcast_dimensions"])
        if isinstance(src, jcore.Literal) or _shape(src) == ():
            return [src] if dims == () else None
        if _shape(src) == tuple(shape) and dims == tuple(range(1, len(shape) + 1)):
            return [src]
    return None


def guarded(run, v):
    """``x`` when ``v`` is ``select_n(p, stop_gradient(x), x)`` (jnp.piecewise's argument to each function: the same
    value as ``x`` everywhere, with ``x``'s derivative where ``p`` holds), else None; also the predicate ``p``."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return None, None
    e = run.producer(run.origin(v))
    if e is None or e.primitive.name != "select_n" or len(e.invars) != 3 or \
            np.dtype(e.invars[0].aval.dtype) != np.bool_:
        return None, None
    se = run.producer(run.origin(e.invars[1])) if not isinstance(e.invars[1], jcore.Literal) else None
    if se is None or se.primitive.name != "stop_gradient" or isinstance(e.invars[2], jcore.Literal) or \
            run.origin(se.invars[0]) is not run.origin(e.invars[2]):
        return None, None
    return e.invars[2], e.invars[0]


def _comparisons(run, v, out, depth=0):
    """The comparisons boolean ``v`` combines with ``and``/``or``/``not`` (appended to ``out``); False when it is
    anything else."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal) or depth > 32:
        return False
    e = run.producer(run.origin(v))
    if e is None:
        return False
    if e.primitive.name in _CMP:
        out.append(e)
        return True
    if e.primitive.name in ("and", "or", "not") and all(np.dtype(w.aval.dtype) == np.bool_ for w in e.invars):
        return all(_comparisons(run, w, out, depth + 1) for w in e.invars)
    return False


def continuous_select(run, eqn) -> bool:
    """Whether ``jnp.select(conds, cases, default)`` (``eqn``: ``select_n(j, default, case_1, ...)``, ``j`` the
    index :func:`select_conditions` reads) is proven continuous in theta, every condition a comparison of one
    value ``r`` (or ``|r|``, ``r * r``) with fixed numbers, or ``and``/``or``/``not`` of such: every case a function
    of ``r`` alone, finite, and at each switch point ``s`` of any condition the cases chosen just left of ``s``, at
    ``s`` and just right of it equal at ``s`` (exact arithmetic). The chosen case is constant on each open
    interval between switch points (every condition is), so those three are the whole story at ``s``; docs/analysis.md,
    "A select of several cases". The caller checks that every case is itself continuous (``grad_ok``)."""
    from jax.extend import core as jcore

    jv = eqn.invars[0]
    oshape = _shape(eqn.outvars[0])
    if isinstance(jv, jcore.Literal) or _shape(jv) != oshape:
        return False
    got = select_conditions(run, jv)
    if got is None or len(got[0]) != len(eqn.invars) - 2:
        return False
    conds = got[0]
    leaves = []
    if not all(_comparisons(run, c, leaves) for c in conds):
        return False
    first = list(_switches(run, leaves[0], oshape))
    for base, _ in first:
        points = set()
        for pe in leaves:
            got = next((pts for b, pts in _switches(run, pe, oshape) if b is base or _same(run, b, base)), None)
            if got is None:
                break
            points.update(got)
        else:
            if _chosen_meet(run, eqn, jv, base, sorted(points), oshape):
                return True
    return False


def _chosen_meet(run, eqn, jv, base, points, oshape) -> bool:
    """Every case a finite function of ``base`` alone, and the cases chosen around each switch point equal there."""
    try:
        for k in range(1, len(eqn.invars)):
            _finite_in_r(run, base, eqn.invars[k], oshape)
        if not points:
            return True
        probes = [points[0] - 1] + [(a + b) / 2 for a, b in zip(points, points[1:])] + [points[-1] + 1]
        index = [_index(run, base, jv, p, oshape) for p in probes]
        for i, s in enumerate(points):
            chosen = {index[i], _index(run, base, jv, s, oshape), index[i + 1]}
            vals = {_Case(run, base, s, oshape).value(eqn.invars[1 + k]) for k in chosen}
            if len(vals) != 1 or any(isinstance(x, bool) for x in vals):
                return False
    except (_NoProof, RecursionError):          # a case deeper than Python's stack: no proof
        return False
    return True


def _index(run, base, jv, s, oshape) -> int:
    """The select's index at ``r = s``: 1 + the first condition that holds (``jnp.select``) or the last one
    (``jnp.piecewise``), else 0."""
    return int(_Case(run, base, s, oshape).value(jv))


def _index_value(case, conds, last, scope):
    """The index from the conditions' values (exact)."""
    got = 0
    for k, c in enumerate(conds):
        x = case.value(c, scope)
        if not isinstance(x, bool):
            raise _NoProof
        if x:
            got = k + 1
            if not last:
                break
    return Fraction(got)


def _meet(run, eqn, base, points, oshape) -> bool:
    """Both cases are functions of ``base`` alone, finite, and equal at each switch point (condition 2-4)."""
    try:
        for s in points:
            got = [_Case(run, base, s, oshape).value(eqn.invars[1 + k]) for k in range(2)]
            if any(isinstance(x, bool) for x in got) or got[0] != got[1]:
                return False
        for k in range(2):
            _finite_in_r(run, base, eqn.invars[1 + k], oshape)    # a function of r alone, finite
    except (_NoProof, RecursionError):          # a case deeper than Python's stack: no proof
        return False
    return True


def _exact_sqrt(c: Fraction) -> Fraction | None:
    """sqrt(c) when it is rational (c = p^2 / q^2), else None."""
    if c < 0:
        return None
    p, q = math.isqrt(c.numerator), math.isqrt(c.denominator)
    return Fraction(p, q) if p * p == c.numerator and q * q == c.denominator else None



_FINITE_IN_R = frozenset({
    "add", "add_any", "sub", "mul", "neg", "abs", "max", "min", "sign", "copy", "copy_p", "broadcast_in_dim",
    "square", "integer_pow", "div", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "select_n",
    "convert_element_type", "tanh", "sin", "cos", "atan", "erf", "logistic"})
#: not listed although finite on the reals: exp, exp2, expm1, sinh, cosh overflow in float32 (exp from 88.7), and
#: reverse mode then multiplies the case not chosen by zero: 0 * inf = nan (a fuzz helper's ELU logits)


def _finite_in_r(run, base, v, oshape, scope=None, memo=None, depth=None) -> bool:
    """Whether the case depends on ``r`` (True) or not (False); raise :class:`_NoProof` unless it is a function
    of ``r`` alone (every leaf ``r``, a literal or a constant, every branch of a nested select included) and
    finite for every real ``r``: an operation reading a value computed from ``r`` must be finite for every
    finite operand (a division only by fixed numbers, a power only non-negative)."""
    from jax.extend import core as jcore

    memo = {} if memo is None else memo
    depth = [_DEPTH * 4] if depth is None else depth
    if isinstance(v, jcore.Literal):
        return False
    if scope is not None and v in scope:
        bound = scope[v]
        return False if bound[0] == "const" else _finite_in_r(run, base, bound[1], oshape, bound[2], memo, depth)
    if scope is None:
        v = run.origin(v)
        if isinstance(v, jcore.Literal) or v in run.consts:
            return False
        if v is base or _same(run, v, base):
            return True
    key = (id(v), id(scope))
    if key in memo:
        return memo[key][0]
    e = _producer(run, v, scope)
    depth[0] -= 1
    if e is None or depth[0] < 0:
        raise _NoProof
    name = e.primitive.name
    x = guarded(run, v)[0] if scope is None else None
    if x is not None:                    # jnp.piecewise's guard: x's value (its predicate is not read)
        dep = _finite_in_r(run, base, x, oshape, scope, memo, depth)
        memo[key] = (dep, scope)
        return dep
    if name in _CALLS:
        inner, _ = _body(e)
        dep = _finite_in_r(run, base, inner.outvars[e.outvars.index(v)], oshape, _scope(inner, e, scope), memo,
                           depth)
    else:
        if len(e.outvars) != 1 or _shape(e.outvars[0]) not in (oshape, ()):
            raise _NoProof
        deps = []
        for w in e.invars:
            if not isinstance(w, jcore.Literal) and _shape(w) not in (oshape, ()):
                raise _NoProof
            deps.append(_finite_in_r(run, base, w, oshape, scope, memo, depth))
        dep = max(deps) if deps else 0
        if dep:
            if name not in _FINITE_IN_R:
                raise _NoProof                   # log(r), 1/sqrt(r): not finite for every r
            if name == "div" and deps[1] or name == "integer_pow" and int(e.params["y"]) < 0:
                raise _NoProof
            dep = _growth(e, deps)
            if dep > MAX_DEGREE:
                raise _NoProof                   # r ** 256 is an infinity at r = 1.5 in float32
    memo[key] = (dep, scope)          # the scope kept alive: its id is not reused while the memo lives
    return dep


#: the highest degree of a case's growth in ``r`` taken as finite for every real ``r`` (float32 ``r ** 8`` overflows
#: past ``|r| = 6.6e4``; ``r ** 256`` past 1.4, where the case not chosen is still differentiated, adv19)
MAX_DEGREE = 8
_BOUNDED_OF_R = frozenset({"tanh", "sin", "cos", "atan", "erf", "logistic", "sign", "lt", "le", "gt", "ge", "eq",
                           "ne", "and", "or", "not"})


def _growth(e, deps) -> int:
    """A bound on the degree of growth in ``r`` of ``e``'s output (a polynomial bound ``C (1 + |r|)^k``) from its
    operands' (0: no ``r``); a bounded function of ``r`` counts 1."""
    name = e.primitive.name
    if name in _BOUNDED_OF_R:
        return 1
    if name == "mul":
        return sum(deps)
    if name == "square":
        return 2 * deps[0]
    if name == "integer_pow":
        return int(e.params["y"]) * deps[0]
    return max(deps)
