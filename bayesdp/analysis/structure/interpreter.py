"""The driver every abstract interpreter shares: walk a jaxpr equation by equation.

An abstract interpreter (:class:`Interpreter`) is a lattice of abstract values plus ONE table
``rules`` from primitive name to rule ``rule(run, eqn, ins) -> outs``.  This module walks the
program (the pattern of JAX's ``eval_jaxpr`` and of its guide "Writing custom Jaxpr
interpreters"): literals and closed-over constants become abstract values, every equation
applies its rule, and sub-programs are entered recursively:

* call-like primitives (``jit``/``pjit``, ``closed_call``, ``remat``, ``custom_jvp_call``,
  ``custom_vjp_call``): the body is interpreted with the call's abstract inputs (an
  interpreter may override this by putting the primitive in its own table);
* ``cond``: every branch is interpreted and the results are joined, then the interpreter's
  :meth:`Interpreter.control` adds the influence of the branch index;
* ``while`` and ``scan``: the loop-carried values are iterated to a fixed point of the join
  (with :meth:`Interpreter.widen` after a few rounds), except a ``scan`` whose trip count is a
  fixed number up to ``UNROLL_MAX`` (``fori_loop`` with constant bounds, ``scan`` over parameters):
  its body is interpreted once per iteration in order, carrying the exact abstract value of each
  iteration (no join, no widening: the abstract value after iteration k describes every concrete
  value after iteration k); the scanned inputs enter as one slice
  standing for every iteration (:meth:`Interpreter.scan_slice`) and the stacked outputs
  leave through :meth:`Interpreter.scan_stack`.

A primitive with no rule goes to :meth:`Interpreter.unknown`, which must be conservative
(the top of the lattice for anything the inputs could influence).  Nothing here evaluates
the program on numbers: every statement an interpreter makes holds for all inputs that its
abstract inputs describe.

The record count is a *symbolic* dimension (``jax.export.symbolic_shape``): the program is
traced once for every number of records, and the axes whose size is that symbol are the
record axes (see :mod:`bayesdp.analysis.tracing`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Interpreter", "Run", "conc", "where"]


def is_dropvar(v) -> bool:
    """Whether ``v`` is an equation output the program discards (printed ``_`` in a jaxpr).

    ``jax.extend.core.DropVar`` is missing from JAX 0.7.0 (which bayesdp supports), where the class
    lives in ``jax._src.core`` alone.
    """
    from jax.extend import core as jcore

    cls = getattr(jcore, "DropVar", None)
    if cls is None:
        from jax._src import core as src_core

        cls = src_core.DropVar
    return isinstance(v, cls)

CALL_BODIES = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
               "eval_jaxpr": "call_jaxpr",   # JAX after 0.11.0: closed_call and core_call became eval_jaxpr
               "remat": "jaxpr", "remat2": "jaxpr", "checkpoint": "jaxpr", "custom_jvp_call": "call_jaxpr",
               "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr"}

LOOP_ROUNDS = 8          # fixed-point rounds before widening
UNROLL_MAX = 64          # a scan with a fixed trip count up to this is interpreted iteration by iteration


# ---------------------------------------------------------------------------
# shapes with a symbolic record count


def is_const_dim(d) -> bool:
    return isinstance(d, (int, np.integer))


def conc(shape, m: int = 1) -> tuple[int, ...]:
    """The shape with every symbolic dimension (a record axis, or an expression in the record
    count) replaced by one slot (``m=1``) or evaluated at ``m``.

    Args:
        shape: a shape whose dimensions are ints or symbolic dimensions in the record count ``m``.
        m: the number of records to evaluate the symbolic dimensions at (1: one slot per record axis).

    Returns:
        The concrete shape, a tuple of ints.

    Examples:
        >>> import jax
        >>> from bayesdp.analysis.structure.interpreter import conc
        >>> shape = jax.export.symbolic_shape("m, 3")
        >>> conc(shape), conc(shape, m=5)
        ((1, 3), (5, 3))
    """
    out = []
    for d in shape:
        if is_const_dim(d):
            out.append(int(d))
        elif m == 1:
            out.append(1)
        else:
            out.append(int(d._evaluate({"m": m})))
    return tuple(out)


# ---------------------------------------------------------------------------
# where an equation comes from (for messages)

def _internal_dirs() -> tuple[str, ...]:
    import numpyro

    package_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # bayesdp/
    return (os.path.dirname(numpyro.__file__), package_dir)


def where(eqn, user_only: bool = False) -> str:
    """``primitive at file.py:LINE (function)`` for the user's line that produced ``eqn``, for messages.

    Args:
        eqn: an equation of a jaxpr.
        user_only: give no location unless it is in the model's own code (outside NumPyro and bayesdp).

    Returns:
        The primitive's name, followed by `` at file:LINE (function)`` where a location is known.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure.interpreter import where
        >>> closed = jax.make_jaxpr(lambda x: jnp.sin(x))(1.0)
        >>> where(closed.jaxpr.eqns[0])
        'sin at ...'
    """
    from jax._src import source_info_util as siu

    name = eqn.primitive.name
    try:
        internal = _internal_dirs()
        frames = list(siu.user_frames(eqn.source_info.traceback))
        user = [f for f in frames if not f.file_name.startswith(internal)]
        f = user[0] if user else (None if user_only or not frames else frames[0])
    except Exception:
        f = None
    if f is None:
        return name
    return f"{name} at {os.path.basename(f.file_name)}:{f.start_line} ({f.function_name})"


# ---------------------------------------------------------------------------
# the interpreter interface


class Interpreter:
    """An abstract domain: a lattice of abstract values and one table ``rules`` from primitive name to rule.

    Subclasses set ``name``, ``rules`` (primitive name -> ``rule(run, eqn, ins) -> outs``, one abstract value
    per input and per output of the equation) and override the hooks below; :class:`Run` walks a program
    with it.  :meth:`literal`, :meth:`unknown` and :meth:`join` must be defined; :meth:`unknown` must be
    conservative (the top of the lattice for anything the inputs could influence).

    Examples:
        A two-point lattice "may depend on the first input" with no rule at all (every primitive goes to
        :meth:`unknown`, which says an output depends on the input when an operand does):

        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure.interpreter import Interpreter, Run
        >>> class Depends(Interpreter):
        ...     name = "depends"
        ...     def literal(self, value, aval): return False
        ...     def unknown(self, run, eqn, ins): return [any(ins)] * len(eqn.outvars)
        ...     def join(self, a, b): return a or b
        >>> closed = jax.make_jaxpr(lambda x, c: (jnp.sin(x) + 2.0 * c, c * c))(1.0, 1.0)
        >>> Run(Depends()).program(closed, [True, False])
        [True, False]
    """

    name = "abstract"
    rules: dict[str, Callable] = {}

    def literal(self, value, aval):
        """The abstract value of a literal of the program.

        Args:
            value: the literal's value.
            aval: its abstract array (shape and dtype).

        Returns:
            The abstract value (subclasses must define it).

        Raises:
            NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def constant(self, value, aval):
        """The abstract value of a closed-over constant of the program (by default as a literal).

        Args:
            value: the constant's value (an array).
            aval: its abstract array (shape and dtype).

        Returns:
            The abstract value.
        """
        return self.literal(value, aval)

    def unknown(self, run: "Run", eqn, ins: list) -> list:
        """The outputs of an equation whose primitive has no rule: must be conservative.

        Args:
            run: the interpretation in progress.
            eqn: the equation.
            ins: the abstract values of its inputs.

        Returns:
            One abstract value per output of ``eqn`` (subclasses must define it).

        Raises:
            NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def join(self, a, b):
        """The least upper bound of two abstract values (branches, loop iterations).

        Args:
            a: an abstract value.
            b: an abstract value of the same variable.

        Returns:
            An abstract value describing everything ``a`` or ``b`` describes (subclasses must define it).

        Raises:
            NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def same(self, a, b) -> bool:
        """Whether two abstract values are equal (the fixed-point test of loops).

        Args:
            a: an abstract value.
            b: an abstract value.

        Returns:
            ``a == b`` unless a subclass says otherwise.
        """
        return a == b

    def widen(self, run: "Run", value, aval):
        """A value above ``value`` that makes a loop reach its fixed point (after a few rounds of joins).

        Args:
            run: the interpretation in progress.
            value: the loop-carried abstract value.
            aval: its abstract array.

        Returns:
            The widened value (by default ``value`` itself).
        """
        return value

    def control(self, run: "Run", eqn, outs: list, decider) -> list:
        """Outputs of a branch/loop whose path is chosen by ``decider`` (the cond index or the
        while predicate).

        Args:
            run: the interpretation in progress.
            eqn: the ``cond`` or ``while`` equation.
            outs: the joined abstract outputs of its branches or loop body.
            decider: the abstract value of the index or predicate.

        Returns:
            The outputs with the influence of ``decider`` added (by default ``outs`` unchanged).
        """
        return outs

    def scan_slice(self, run: "Run", value, aval_full, aval_slice):
        """The abstract value of one slice of a scanned input, standing for every iteration.

        Args:
            run: the interpretation in progress.
            value: the abstract value of the whole scanned input.
            aval_full: the abstract array of the whole input.
            aval_slice: the abstract array of one slice.

        Returns:
            The slice's abstract value (by default ``value`` itself).
        """
        return value

    def scan_stack(self, run: "Run", value, aval_slice, aval_full):
        """The abstract value of a scan's stacked output, from the value of one slice (every iteration).

        Args:
            run: the interpretation in progress.
            value: the abstract value of one slice of the output.
            aval_slice: the abstract array of one slice.
            aval_full: the abstract array of the stacked output.

        Returns:
            The stacked output's abstract value (by default ``value`` itself).
        """
        return value


@dataclass
class Run:
    """One interpretation: the interpreter and anything its rules need (``context``).

    Args:
        interp: the abstract interpreter.
        context: anything its rules read (e.g. the declared domain; ``"record"``: a :class:`Record` to fill).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure import Bound, Bounds, Run
        >>> closed = jax.make_jaxpr(lambda x: x * x)(0.0)
        >>> [b] = Run(Bounds()).program(closed, [Bound.box(-1.0, 2.0)])
        >>> float(b.lo), float(b.hi)          # a square: [0, 4] (the interval product would give [-2, 4])
        (0.0, 4.0)
    """

    interp: Interpreter
    context: dict = field(default_factory=dict)
    #: the equation that produced each variable and its current abstract value (sub-programs included; a
    #: body interpreted again overwrites them): what a rule relating an equation's operands reads
    producers: dict = field(default_factory=dict, repr=False)
    values: dict = field(default_factory=dict, repr=False)
    #: an input of a call's body -> the caller's variable it is bound to (the same value: a call passes its
    #: arguments unchanged; loop bodies are not listed, their inputs change from one iteration to the next)
    aliases: dict = field(default_factory=dict, repr=False)
    #: id of a call's body -> the caller's variables it was last entered with (None: a branch or a loop body):
    #: a rule may follow a call's output into the body only when that call is the body's latest entry
    entered: dict = field(default_factory=dict, repr=False)
    #: a constant of a program or body -> its concrete value (what a rule may read exactly: ``switch``)
    consts: dict = field(default_factory=dict, repr=False)

    def producer(self, v):
        """The equation that produced variable ``v`` (None for a literal or a program input)."""
        from jax.extend import core as jcore

        return None if isinstance(v, jcore.Literal) else self.producers.get(v)

    def value(self, v):
        """The current abstract value of variable or literal ``v``."""
        from jax.extend import core as jcore

        if isinstance(v, jcore.Literal):
            return self.interp.literal(v.val, v.aval)
        return self.values.get(v)

    def body_output(self, e, v):
        """The variable of call ``e``'s body that its output ``v`` returns, when ``e`` is the body's latest entry
        (its values and bindings are then this call's); None otherwise."""
        body = e.params.get(CALL_BODIES.get(e.primitive.name, "jaxpr"))
        if body is None:
            return None
        inner = getattr(body, "jaxpr", body)
        got = self.entered.get(id(inner))
        if got is None or len(got) != len(e.invars) or any(a is not b for a, b in zip(got, e.invars)):
            return None
        return inner.outvars[list(e.outvars).index(v)]

    def origin(self, v):
        """The caller's variable that call-body input ``v`` is bound to, followed out through nested calls
        (``v`` itself when it is not a call's input): both hold the same value."""
        from jax.extend import core as jcore

        for _ in range(64):
            if isinstance(v, jcore.Literal):
                return v
            w = self.aliases.get(v)
            if w is None:
                return v
            v = w
        return v

    # -- entry points -----------------------------------------------------------
    def program(self, closed, inputs: list) -> list:
        """Interpret a whole program.

        Args:
            closed: a ``ClosedJaxpr`` (or an open jaxpr).
            inputs: one abstract value per program input.

        Returns:
            One abstract value per program output.

        Raises:
            ValueError: if the number of inputs is not the program's.
        """
        jaxpr, consts = _open(closed)
        self._bind(jaxpr, None)
        # the program's own inputs (theta, data: finite reals), for rules that need to know them
        self.context.setdefault("program_inputs", frozenset(jaxpr.invars))
        return self._jaxpr(jaxpr, consts, inputs)

    def call(self, body, inputs: list, args=None) -> list:
        """Interpret a sub-program (the body of a call, a branch, a loop) with the given inputs.

        Args:
            body: a ``ClosedJaxpr`` or an open jaxpr.
            inputs: one abstract value per input of ``body``.
            args: the caller's variables bound to the body's inputs when the body is a call's (they hold
                the same values: :meth:`origin`); None for a branch or a loop body.

        Returns:
            One abstract value per output of ``body``.
        """
        jaxpr, consts = _open(body)
        self._bind(jaxpr, args)
        return self._jaxpr(jaxpr, consts, inputs)

    # -- the walk -------------------------------------------------------------------
    def _jaxpr(self, jaxpr, consts, inputs) -> list:
        from jax.extend import core as jcore

        interp = self.interp
        env = self.values

        def read(v):
            if isinstance(v, jcore.Literal):
                return interp.literal(v.val, v.aval)
            return env[v]

        for v, c in zip(jaxpr.constvars, consts):
            env[v] = interp.constant(c, v.aval)
            self.consts[v] = c
        if len(inputs) != len(jaxpr.invars):
            raise ValueError(f"{interp.name}: {len(inputs)} inputs for {len(jaxpr.invars)} program inputs")
        for v, x in zip(jaxpr.invars, inputs):
            env[v] = x
        record = self.context.get("record")       # the equations in order, and where they are called from
        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            outs = self.equation(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                if not is_dropvar(v):
                    env[v] = o
                    self.producers[v] = eqn
            if record is not None:
                record.add(eqn)
        return [read(v) for v in jaxpr.outvars]

    def equation(self, eqn, ins: list) -> list:
        """Interpret one equation: its rule, else a call's body, control flow, or :meth:`Interpreter.unknown`.

        Args:
            eqn: the equation.
            ins: the abstract values of its inputs.

        Returns:
            One abstract value per output of ``eqn``.
        """
        record = self.context.get("record")
        if record is None:
            return self._equation(eqn, ins)
        record.calls.append(eqn)
        try:
            return self._equation(eqn, ins)
        finally:
            record.calls.pop()

    def _equation(self, eqn, ins: list) -> list:
        interp = self.interp
        name = eqn.primitive.name
        rule = interp.rules.get(name)
        if rule is not None:
            outs = rule(self, eqn, ins)
            checked = getattr(interp, "checked", None)
            return outs if checked is None else checked(eqn, outs, ins, self)
        if name in CALL_BODIES and CALL_BODIES[name] in eqn.params:
            return self.call(eqn.params[CALL_BODIES[name]], ins, args=eqn.invars)
        if name == "cond":
            return self._cond(eqn, ins)
        if name == "while":
            return self._while(eqn, ins)
        if name == "scan":
            return self._scan(eqn, ins)
        return interp.unknown(self, eqn, ins)

    def _bind(self, jaxpr, args):
        """Record that the inputs of ``jaxpr`` are the caller's variables ``args`` (forget any earlier
        binding when ``args`` is None: the same body object may be entered elsewhere as a branch or a loop)."""
        from jax.extend import core as jcore

        if args is not None and len(args) != len(jaxpr.invars):
            args = None
        self.entered[id(jaxpr)] = None if args is None else tuple(args)
        for k, v in enumerate(jaxpr.invars):
            a = None if args is None else args[k]
            if a is None:
                self.aliases.pop(v, None)
            else:
                self.aliases[v] = a           # a literal argument too: origin() then gives the literal

    # -- control flow ---------------------------------------------------------------
    def _join_all(self, lists: list[list]) -> list:
        out = list(lists[0])
        for other in lists[1:]:
            out = [self.interp.join(a, b) for a, b in zip(out, other)]
        return out

    def _cond(self, eqn, ins):
        index, ops = ins[0], ins[1:]
        results = [self.call(br, ops) for br in self.branches(eqn, index)]
        return self.interp.control(self, eqn, self._join_all(results), index)

    def branches(self, eqn, index):
        """The branches of a ``cond`` that the index can select (an interpreter that knows the
        index's range may narrow this: :meth:`Interpreter.cond_branches`)."""
        narrow = getattr(self.interp, "cond_branches", None)
        brs = list(eqn.params["branches"])
        return narrow(self, brs, index) if narrow is not None else brs

    def _fixpoint(self, step, carry, avals):
        interp = self.interp
        for k in range(4 * LOOP_ROUNDS):
            new = [interp.join(a, b) for a, b in zip(carry, step(carry))]
            if k >= LOOP_ROUNDS:
                # widened: step(carry) <= new <= widen(new), so widen(new) == carry is a post-fixed point
                new = [interp.widen(self, c, av) for c, av in zip(new, avals)]
            if all(interp.same(a, b) for a, b in zip(new, carry)):
                return new
            carry = new
        raise RuntimeError(f"{interp.name}: loop did not reach a fixed point")

    def _while(self, eqn, ins):
        p = eqn.params
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
        avals = [v.aval for v in eqn.outvars]

        def step(carry):
            pred = self.call(cond_j, list(cconsts) + list(carry))[0]
            new = self.call(body_j, list(bconsts) + list(carry))
            return self.interp.control(self, eqn, new, pred)

        carry = self._fixpoint(step, list(init), avals)
        pred = self.call(cond_j, list(cconsts) + list(carry))[0]
        return self.interp.control(self, eqn, carry, pred)

    def _scan(self, eqn, ins):
        p = eqn.params
        nconst, ncarry = scan_counts(p)
        consts, init, xs = ins[:nconst], ins[nconst:nconst + ncarry], ins[nconst + ncarry:]
        body = p["jaxpr"]
        bj, _ = _open(body)
        x_in_avals = [v.aval for v in bj.invars[nconst + ncarry:]]
        x_full_avals = [v.aval for v in eqn.invars[nconst + ncarry:]]
        slices = [self.interp.scan_slice(self, x, af, asl) for x, af, asl in zip(xs, x_full_avals, x_in_avals)]
        carry_avals = [v.aval for v in eqn.outvars[:ncarry]]
        ys_slices: list = []

        def step(carry):
            out = self.call(body, list(consts) + list(carry) + slices)
            ys_slices[:] = [out[ncarry:]] if not ys_slices else [
                [self.interp.join(a, b) for a, b in zip(ys_slices[0], out[ncarry:])]]
            return out[:ncarry]

        length = p.get("length")
        if isinstance(length, (int, np.integer)) and 0 < int(length) <= UNROLL_MAX:
            # a fixed trip count: interpret the iterations in order (exact sequencing, sound per iteration)
            carry = list(init)
            for _ in range(int(length)):
                carry = step(carry)
            return list(carry) + self._stack(eqn, bj, ncarry, ys_slices[0])
        carry = self._fixpoint(step, list(init), carry_avals)
        out = self.call(body, list(consts) + list(carry) + slices)
        ys = out[ncarry:] if not ys_slices else [self.interp.join(a, b) for a, b in zip(ys_slices[0], out[ncarry:])]
        return list(carry) + self._stack(eqn, bj, ncarry, ys)

    def _stack(self, eqn, bj, ncarry, ys):
        y_slice_avals = [v.aval for v in bj.outvars[ncarry:]]
        y_full_avals = [v.aval for v in eqn.outvars[ncarry:]]
        return [self.interp.scan_stack(self, y, asl, af) for y, asl, af in zip(ys, y_slice_avals, y_full_avals)]


@dataclass
class Record:
    """How one interpretation went, for explaining a result afterwards (``Run(interp, {"record": Record()})``;
    the values of the variables are the run's :attr:`Run.values`): the equations in the order they were first
    interpreted (sub-programs included) and the call equation each one was interpreted in."""

    order: list = field(default_factory=list)
    parent: dict = field(default_factory=dict)      # id(eqn) -> the call equation whose body holds it
    calls: list = field(default_factory=list)       # the equations being interpreted (innermost last)
    _seen: set = field(default_factory=set)

    def add(self, eqn) -> None:
        if id(eqn) not in self._seen:
            self._seen.add(id(eqn))
            self.order.append(eqn)
            if self.calls:
                self.parent[id(eqn)] = self.calls[-1]

    def where(self, eqn) -> str:
        """:func:`where` of ``eqn``; for an equation with no line of the model (e.g. inside JAX's own
        derivative rules), also the nearest enclosing call that has one."""
        own = where(eqn, user_only=True)
        p = self.parent.get(id(eqn))
        while " at " not in own and p is not None:
            w = where(p, user_only=True)
            if " at " in w:
                name = p.params.get("name") if isinstance(p.params.get("name"), str) else None
                return f"{own} inside {p.primitive.name}({name}) at {w.split(' at ', 1)[1]}" if name else \
                    f"{own} inside {w}"
            p = self.parent.get(id(p))
        return own


def scan_counts(params) -> tuple[int, int]:
    """(number of constants, number of carries) of a ``scan`` equation's ``params``: JAX < 0.11 names them
    ``num_consts`` and ``num_carry``; JAX >= 0.11 gives ``ft_in``, a flat tree of the three groups (constants,
    carry, scanned inputs), whose ``unpack()`` splits it and ``len`` counts a group's leaves."""
    if "num_consts" in params:
        return int(params["num_consts"]), int(params["num_carry"])
    consts, carry, _xs = params["ft_in"].unpack()
    return len(consts), len(carry)


def _open(body):
    """(jaxpr, consts) of a ClosedJaxpr or an open Jaxpr."""
    if hasattr(body, "jaxpr") and hasattr(body, "consts"):
        return body.jaxpr, list(body.consts)
    return body, []


