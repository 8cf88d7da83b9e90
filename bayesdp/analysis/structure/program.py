"""The interpreters applied to a traced model (:class:`bayesdp.analysis.tracing.Program`).

:func:`prove` runs the dependence and affinity interpreters once over the whole program (every
site's log-density, parameters and values).  :func:`bound_outputs` and :func:`jacobian_bounds`
run the bound interpreter at one record with the data arguments ranging over the declared
domain and theta over all of R^d; :func:`operator_norm_bound` turns the bounds of a Jacobian
into a bound on its operator norm (rows combined by the tightest rule that holds).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from .affinity import Aff, Affinity
from .affinity import A as AFFINE_IN
from .affinity import C as CONST_IN
from .bounds import Bound, Bounds, c_norm, data_input, _exact_convert, _jax_function
from .dependence import Dep, Dependence
from .dependence import data_input as dep_data
from .dependence import theta_input
from .. import rounding as rd
from ..domain import NORM_RTOL
from .interpreter import CALL_BODIES, Record, Run, conc, where

__all__ = ["ProgramFacts", "prove"]


@dataclass
class ProgramFacts:
    """Dependence and affinity of every output of the program (indexed like ``program.outputs``).

    Args:
        dep: the :class:`~bayesdp.analysis.structure.dependence.Dep` of each program output.
        aff: the :class:`~bayesdp.analysis.structure.affinity.Aff` of each program output.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> dep, aff = prove(program).of(program, "obs", "param:logits")
        >>> sorted(dep.theta), sorted(dep.data), dep.record, str(aff)
        (['w'], ['X'], 0, 'affine')
    """

    dep: list
    aff: list

    def of(self, program, site: str, what: str) -> tuple[Dep, Aff]:
        """The dependence and affinity of output ``(site, what)`` of ``program``.

        Args:
            program: the :class:`~bayesdp.analysis.tracing.Program` these facts are about.
            site: a sample site's name.
            what: ``"logp"``, ``"value"``, ``"param:NAME"`` or ``"mask"``.

        Returns:
            ``(dep, aff)`` of that output.
        """
        i = program.output(site, what)
        return self.dep[i], self.aff[i]


def prove(program, closed=None) -> ProgramFacts:
    """Dependence and affinity of every output of the program (or of ``closed``, the same program with
    other outputs, e.g. :meth:`Program.with_outputs`).

    Runs :class:`~bayesdp.analysis.structure.Dependence` and :class:`~bayesdp.analysis.structure.Affinity`
    once each over the program, latent sites as theta inputs and data arguments with their records on axis 0.

    Args:
        program: a traced :class:`~bayesdp.analysis.tracing.Program`.
        closed: the program's jaxpr with other outputs (default: ``program.jaxpr``).

    Returns:
        The :class:`ProgramFacts`.

    Examples:
        The logistic model's logits ``X @ w`` are affine in ``w`` and depend on record i only:

        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> facts = prove(program)
        >>> dep, aff = facts.of(program, "obs", "param:logits")
        >>> dep.coupled, str(aff), len(facts.dep) == len(program.outputs)
        (False, 'affine', True)
    """
    closed = program.jaxpr if closed is None else closed
    dep_in = [theta_input(n) if kind == "theta" else dep_data(n) for kind, n in program.inputs]
    aff_in = [AFFINE_IN if kind == "theta" else CONST_IN for kind, n in program.inputs]
    deps = Run(Dependence()).program(closed, dep_in)
    affs = Run(Affinity()).program(closed, aff_in)
    return ProgramFacts(deps, affs)


def how(eqn) -> str:
    """`primitive at file.py:LINE (function)` for messages (or a plain description).  An operation that bayesdp's
    tracing itself adds, the transform of a constrained latent site from the samplers' real coordinate (e.g. ``exp``
    for a positive scale), is named as such, never by bayesdp's own file and line."""
    if eqn is None:
        return "an operation of the model"
    if isinstance(eqn, str):
        return eqn
    if _in_latent_transform(eqn):
        return (f"`{eqn.primitive.name}` in the transform of a constrained latent site (e.g. a positive scale) "
                "from the real coordinate the samplers use")
    return f"`{where(eqn)}`"


def switch_hint(eqn) -> str:
    """For a comparison that breaks continuity (a ``jnp.where`` chosen by theta whose sides were not proven to
    meet), what to do; '' otherwise."""
    if eqn is None or isinstance(eqn, str) or eqn.primitive.name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        return ""
    return ("; a jnp.where chosen by theta is proven continuous only when its two sides are functions of the "
            "compared value alone, finite everywhere, and equal in exact arithmetic at the threshold, as in "
            "jnp.where(jnp.abs(r) <= d, 0.5 * r**2, d * (jnp.abs(r) - d / 2)) (docs/analysis.md, 'A select "
            "chosen by theta'); a jnp.select or jnp.piecewise likewise, its conditions all on one value r, its "
            "pieces meeting where any condition switches (docs/analysis.md, 'A select of several cases'); "
            "'finite everywhere' counts float32: a side with exp (an infinity past 88.7), a log, a root, a division "
            "by r or a power of r above 8 is not, since JAX's reverse-mode derivative multiplies the side not "
            "chosen by zero (0 * inf is NaN)")


def _in_latent_transform(eqn) -> bool:
    """``eqn`` was traced inside bayesdp's own transform of the latent sites, not in the model's code: the innermost
    frame outside NumPyro (whose transform some versions show first) is ``tracing._trace_sites``."""
    import numpyro
    from jax._src import source_info_util as siu

    try:
        frames = list(siu.user_frames(eqn.source_info.traceback))
    except Exception:       # no traceback recorded: nothing to say
        return False
    numpyro_dir = os.path.dirname(os.path.abspath(numpyro.__file__))
    for f in frames:
        if os.path.abspath(f.file_name).startswith(numpyro_dir):
            continue
        return f.function_name == "_trace_sites" and f.file_name.endswith("tracing.py")
    return False


# ---------------------------------------------------------------------------
# the domain as abstract inputs


def domain_box(domain, arg: str, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per-entry box of one record of ``arg`` from every declared bound (unbounded if none)."""
    lo = np.full(shape, -np.inf)
    hi = np.full(shape, np.inf)
    dom = domain.get(arg) if domain is not None else None
    if dom is None:
        return lo, hi
    # the bounds a certificate may use are the declared ones inflated by 1 + NORM_RTOL (float data at the
    # bound, and the samplers' cast to float32: bayesdp/analysis/domain.py); listed values and min/max are
    # exact where float32 holds them
    if dom.norm is not None:
        R = dom.certified_norm
        lo, hi = np.maximum(lo, -R), np.minimum(hi, R)
    if dom.lo is not None:
        lo, hi = np.maximum(lo, _inflate_out(dom.lo, -1)), np.minimum(hi, _inflate_out(dom.hi, 1))
    if dom.values is not None:       # a listed value float32 cannot hold moves in the samplers' cast
        lo, hi = np.maximum(lo, _inflate_out(min(dom.values), -1)), np.minimum(hi, _inflate_out(max(dom.values), 1))
    return lo, hi


def _inflate_out(x: float, direction: int) -> float:
    """``x`` moved outward (down for direction -1, up for +1) by the relative NORM_RTOL, rounded outward; ``x``
    itself when it is a float32 number: entries are checked exactly against ``[min, max]`` (:meth:`Domain.check`)
    and rounding to float32 is monotone and fixes float32 numbers, so an entry ``v <= x`` (``v >= x``) stays
    ``<= x`` (``>= x``) after the samplers' cast; only an endpoint float32 cannot hold can be crossed."""

    if float(np.float32(x)) == x:
        return x
    y = x + direction * abs(x) * NORM_RTOL
    return math.nextafter(y, direction * math.inf) if y != x else x


def domain_inputs(program, domain) -> list[Bound]:
    out = []
    invars = program.jaxpr.jaxpr.invars
    for i, (kind, n) in enumerate(program.inputs):
        if kind == "theta":
            out.append(Bound.top(program.sites[n].unconstrained_shape))
        else:
            shape = (1,) + tuple(program.data_shapes[n])
            lo, hi = domain_box(domain, n, shape)
            floating = i >= len(invars) or np.issubdtype(np.dtype(invars[i].aval.dtype), np.floating)
            out.append(data_input(shape, n, lo, hi, floating))
    return out


def derivative_context(program, closed, m: int, tangent: bool = False) -> dict:
    """The bound interpreter's context for a derivative program ``closed`` (forward mode; its inputs those of
    ``program``, then the tangent basis when ``tangent``): ``reverse``, a predicate on the program's variables,
    true for a value that depends on theta (or the tangent), whose cotangent the samplers' reverse mode computes
    (dependence interpreter; a variable it did not reach counts as dependent). The bound rules read it through
    ``bounds._reverse``: a select of such values is undefined when any case is, chosen or not, and a conversion of
    one to float16 is undefined."""
    deps = Run(Dependence())
    dep_in = [theta_input(n) if kind == "theta" else dep_data(n) for kind, n in program.inputs]
    deps.program(closed, dep_in + ([theta_input(_TANGENT)] if tangent else []))

    def dependent(v) -> bool:
        d = deps.value(v)
        return d is None or bool(d.theta)
    return {"m": m, "reverse": dependent}


def bound_outputs(program, domain, m: int, wanted: list[int]) -> list[Bound]:
    """Bounds of ``program`` outputs ``wanted`` at one record over the domain (theta anywhere)."""
    outs = Run(Bounds(), {"m": m}).program(program.jaxpr, domain_inputs(program, domain))
    return [outs[i] for i in wanted]


def jacobian_bounds(program, domain, m: int, wanted: list[tuple[str, str]]) -> dict:
    """Bounds of ``d param / d theta`` at one record for each (site, param) in ``wanted``:
    (site, param, latent site) -> :class:`Bound` of shape param shape + latent shape."""
    closed, outputs = program.jacobian(wanted)
    run = Run(Bounds(), derivative_context(program, closed, m))
    outs = run.program(closed, domain_inputs(program, domain))
    _attach_joint(run, closed, outs, outputs)
    return {k: outs[i] for k, i in outputs.items()}


_RESHAPING = ("reshape", "squeeze", "expand_dims")


def _attach_joint(run, closed, outs, outputs) -> None:
    """Give each Jacobian block the whole Jacobian it was split from (attribute ``joint``: the Bound of the value
    before JAX's ``jacfwd`` split its last, tangent, axis into the latent sites' blocks), when every block of a
    (site, param) or of the log-density is one part of one ``split`` along that last axis, reshaped.  A row of
    the blocks put side by side is that row of the whole, so the whole's row bound bounds theirs together
    (:func:`operator_norm_bound`): a norm fact of the whole (a one-hot row spread over two sites' columns,
    ``mu + 2 z[g]``) is not lost in the split."""
    groups: dict = {}
    for i in outputs.values():
        v = closed.jaxpr.outvars[i]
        for _ in range(8):
            e = run.producer(v)
            if e is None or e.primitive.name not in _RESHAPING or e.params.get("dimensions") is not None:
                break
            v = e.invars[0]
        e = run.producer(v)
        if e is None or e.primitive.name != "split":
            continue
        src = e.invars[0]
        if int(e.params["axis"]) != len(src.aval.shape) - 1:
            continue
        groups.setdefault(id(e), (e, []))[1].append(i)
    for e, idx in groups.values():
        whole = run.value(e.invars[0])
        if whole is None:
            continue
        for i in idx:
            outs[i].joint = whole


def var_jacobian_bounds(program, domain, m: int, var) -> dict:
    """Bounds of ``d var / d theta`` at one record for a variable of the program: latent site -> Bound."""
    closed, outputs = program.var_jacobian(var)
    run = Run(Bounds(), derivative_context(program, closed, m))
    outs = run.program(closed, domain_inputs(program, domain))
    _attach_joint(run, closed, outs, outputs)
    return {k: outs[i] for k, i in outputs.items()}


_TANGENT = "\x00tangent"      # the pseudo-site of the tangent basis (dependence interpreter)


def logp_jacobian_bounds(program, domain, m: int, site: str) -> tuple[dict, object]:
    """Bounds of the gradient in theta of ``site``'s per-record log-density at one record over the domain (theta
    anywhere): latent site -> :class:`Bound` of shape (1,) + latent shape; and, when a bound is infinite, the
    equation of the derivative program that made it so (:func:`derivative_culprit`, described), else None."""
    closed, outputs = program.logp_jacobian(site)
    D = int(conc(closed.in_avals[-1].shape)[0])
    run = Run(Bounds(), {**derivative_context(program, closed, m, tangent=True), "record": Record()})
    outs = run.program(closed, domain_inputs(program, domain) + [Bound.point(np.eye(D))])
    _attach_joint(run, closed, outs, outputs)
    blocks = {k: outs[i] for k, i in outputs.items()}
    culprit = None
    if not all(b.bounded() for b in blocks.values()):
        culprit = derivative_culprit(program, closed, run)
    return blocks, culprit


def derivative_culprit(program, closed, bounds: Run):
    """The first equation of a derivative program (inputs: theta, data, tangent basis) whose output is a
    derivative value (it depends on the tangent basis) with an infinite bound although every derivative value
    it reads is bounded: the operation that made the derivative unbounded (e.g. the ``mul`` of a bounded tangent
    by an unbounded primal value, from the derivative of ``x ** 2`` or ``exp``), described for a message.
    ``bounds``: the bound interpreter's run over ``closed``, with a :class:`Record`."""
    deps = Run(Dependence())
    dep_in = [theta_input(n) if kind == "theta" else dep_data(n) for kind, n in program.inputs]
    deps.program(closed, dep_in + [theta_input(_TANGENT)])

    def tangent(v) -> bool:
        d = deps.value(v)
        return d is not None and _TANGENT in d.theta

    def bounded(v) -> bool:
        b = bounds.value(v)
        return b is not None and b.bounded()
    record = bounds.context["record"]
    for eqn in record.order:
        if any(tangent(v) and not bounded(v) for v in eqn.outvars) and \
                all(bounded(v) for v in eqn.invars if tangent(v)):
            return f"`{record.where(eqn)}`"
    return None


_SHAPE_KEEPING = ("broadcast_in_dim", "reshape", "convert_element_type", "copy", "squeeze")


def _keeps_values(e) -> bool:
    """``e`` moves values without changing them: a broadcast, reshape, copy or squeeze, or a conversion to the
    same or a wider float (a narrowing one rounds: float16(sigmoid(eta)) is 1 where sigmoid(eta) is not, and the
    probs rule's score bound fails)."""
    name = e.primitive.name
    return name in _SHAPE_KEEPING and (name != "convert_element_type" or _exact_convert(e))


def _identity_input(program, e, v):
    """The operand of ``e`` (producing ``v``) when ``e`` is ``x * 1`` or ``x + 0`` (either order) or ``x - 0``, with
    the number written in the program (a literal or a closed-over scalar constant) and ``x`` of ``v``'s elements:
    exactly ``x`` in floating point, value and derivative (NumPyro writes ``Uniform(0, 1)``'s transform as
    ``0 + 1 * clip(sigmoid(u))``); else None."""
    name = e.primitive.name
    unit = {"mul": 1.0, "add": 0.0, "sub": 0.0}.get(name)
    if unit is None or len(e.invars) != 2:
        return None
    pairs = [(e.invars[0], e.invars[1])] if name == "sub" else [(e.invars[0], e.invars[1]),
                                                                (e.invars[1], e.invars[0])]
    for x, c in pairs:
        # (_literal_value is None unless c holds one number)
        if not hasattr(x, "val") and _literal_value(program, c) == unit and _element_count(x) == _element_count(v):
            return x
    return None


def _element_count(v) -> tuple[int, int]:
    """``(elements, symbolic dimensions)`` of a jaxpr variable's shape: a shape-keeping op (a broadcast that adds
    no element, a reshape, a conversion) whose input and output have the same count keeps every element."""
    return int(np.prod(conc(v.aval.shape))), sum(1 for d in v.aval.shape if not isinstance(d, (int, np.integer)))


def sigmoid_input(program, var):
    """If ``var`` is ``logistic(z)`` (through ops that keep its elements: broadcasts that add no element,
    reshapes, conversions), the variable z; else None."""

    v = var
    for _ in range(16):
        e = program.producer(v)
        if e is None:
            return None
        name = e.primitive.name
        if name == "logistic":
            return e.invars[0] if not hasattr(e.invars[0], "val") else None
        if name in CALL_BODIES and CALL_BODIES[name] in e.params:
            body = e.params[CALL_BODIES[name]]
            body = getattr(body, "jaxpr", body)
            if len(body.eqns) == 1 and body.eqns[0].primitive.name == "logistic" and \
                    body.eqns[0].invars[0] is body.invars[0] and len(e.invars) == 1:
                return e.invars[0]
            return None
        if _keeps_values(e) and _element_count(e.invars[0]) == _element_count(v):
            v = e.invars[0]
            continue
        x = _identity_input(program, e, v)
        if x is not None:
            v = x
            continue
        return None
    return None


def softplus_floor_input(program, var):
    """If ``var`` is ``c + jax.nn.softplus(z)`` (either order; through ops that keep its elements or broadcast ONE
    value) with ``c`` a number written in the program (a literal or a closed-over scalar constant: public, never
    the data), ``(z, c)``; else None.  ``jax.nn.softplus`` is ``logaddexp(z, 0)`` (a custom_jvp whose derivative
    is ``sigmoid(z)``), seen as a call named ``softplus`` or as the ``logaddexp`` call itself."""


    def logaddexp_zero(e):                  # a custom_jvp_call logaddexp(z, 0): z
        if not _jax_function(e, "logaddexp") or len(e.invars) != 2 or e.params.get("num_consts", 0):
            return None
        z, zero = e.invars
        return z if _literal_value(program, zero) == 0.0 and not hasattr(z, "val") else None

    def softplus_of(u):
        e = program.producer(u)
        if e is None:
            return None
        name = e.primitive.name
        if name in CALL_BODIES and CALL_BODIES[name] in e.params and e.params.get("name") == "softplus" \
                and len(e.invars) == 1:
            body = e.params[CALL_BODIES[name]]
            body = getattr(body, "jaxpr", body)
            if len(body.eqns) != 1 or list(body.outvars) != list(body.eqns[0].outvars):
                return None
            inner = body.eqns[0]
            if not _jax_function(inner, "logaddexp") or len(inner.invars) != 2 or inner.params.get("num_consts", 0) \
                    or inner.invars[0] is not body.invars[0] or not hasattr(inner.invars[1], "val") or \
                    float(np.asarray(inner.invars[1].val)) != 0.0:
                return None
            return e.invars[0] if not hasattr(e.invars[0], "val") else None
        return logaddexp_zero(e)

    v = var
    for _ in range(16):
        e = program.producer(v)
        if e is None:
            return None
        name = e.primitive.name
        if name == "add" and len(e.invars) == 2:
            for a, b in (e.invars, e.invars[::-1]):
                c = _literal_value(program, a)
                z = softplus_of(b) if c is not None else None
                if z is not None and not _theta_free(program, z):
                    return z, c
            return None
        if _keeps_values(e) and (_element_count(e.invars[0]) == _element_count(v) or (
                name == "broadcast_in_dim" and int(np.prod(conc(e.invars[0].aval.shape))) == 1)):
            v = e.invars[0]
            continue
        return None
    return None


def _literal_value(program, v):
    """The number a literal or a closed-over scalar constant holds (None otherwise)."""
    if hasattr(v, "val"):
        try:        # in the program's own dtype: a weakly typed 0.3 is float32(0.3) there, not the float64 0.3
            a = np.asarray(v.val, dtype=np.dtype(v.aval.dtype))
        except (TypeError, ValueError):
            a = np.asarray(v.val)
        return float(a) if a.size == 1 else None
    consts = dict(zip(program.jaxpr.jaxpr.constvars, program.jaxpr.consts))
    if v in consts:
        a = np.asarray(consts[v])
        return float(a.reshape(-1)[0]) if a.size == 1 else None
    return None


def _through_clip(program, v):
    """(inner variable, lo, hi) of min(hi, max(lo, inner)) at top level, or of a clip call."""
    e = program.producer(v)
    if e is None:
        return None
    name = e.primitive.name
    if name in CALL_BODIES and CALL_BODIES[name] in e.params and e.params.get("name") == "clip":
        inner = getattr(e.params[CALL_BODIES[name]], "jaxpr", e.params[CALL_BODIES[name]])
        eq = inner.eqns
        if len(e.invars) != 3 or len(inner.outvars) != 1 or \
                any(x.primitive.name not in ("max", "min", "convert_element_type") for x in eq) or \
                [x.primitive.name for x in eq].count("max") != 1 or [x.primitive.name for x in eq].count("min") != 1:
            return None
        made = {x.outvars[0]: x for x in eq}

        def source(u):                       # through conversions, to a body input
            while u in made and made[u].primitive.name == "convert_element_type":
                u = made[u].invars[0]
            return u
        mn = made.get(inner.outvars[0])
        if mn is None or mn.primitive.name != "min":
            return None
        mx = made.get(mn.invars[1])
        if mx is None or mx.primitive.name != "max" or source(mn.invars[0]) is not inner.invars[2] or \
                source(mx.invars[0]) is not inner.invars[1] or source(mx.invars[1]) is not inner.invars[0]:
            return None
        return e.invars[0], _literal_value(program, e.invars[1]), _literal_value(program, e.invars[2])
    if name == "min":
        a, b = e.invars
        hi = _literal_value(program, a)
        inner_min = b
        e2 = program.producer(inner_min)
        if hi is None or e2 is None or e2.primitive.name != "max":
            return None
        if e.invars[1] is not e2.outvars[0]:
            return None
        lo = _literal_value(program, e2.invars[0])
        return e2.invars[1], lo, hi
    return None


def clipped_sigmoid_input(program, var):
    """If ``var`` is ``clip(logistic(z), lo, hi)`` with literal ``0 <= lo <= hi <= 1`` (NumPyro's sigmoid transform
    of a unit-interval latent site, ``_clipped_expit``: ``min(hi, max(lo, logistic(u)))``, inside its ``clip`` call
    or inlined), through ops that keep its elements, ``(z, lo, hi)``; else None.  Its derivative in z is
    ``logistic'(z)`` times 0, 1/2 or 1 (JAX's derivative of max/min: 1/2 at a tie): a rule that bounds the score
    of ``sigmoid(z)`` bounds this one, but not its smoothness (the clip is a kink)."""


    def through_clip(v):
        return _through_clip(program, v)

    v = var
    for _ in range(16):
        got = through_clip(v)
        if got is not None:
            inner, lo, hi = got
            if lo is None or hi is None or not (0.0 <= lo <= hi <= 1.0):
                return None
            z = sigmoid_input(program, inner)
            return None if z is None else (z, lo, hi)
        e = program.producer(v)
        if e is None:
            return None
        if _keeps_values(e) and _element_count(e.invars[0]) == _element_count(v):
            v = e.invars[0]
            continue
        x = _identity_input(program, e, v)
        if x is not None:
            v = x
            continue
        return None
    return None


def _theta_free(program, v, memo=None, depth: int = 0) -> bool:
    """Whether top-level variable ``v`` is computed without any latent input (literals, constants, data only)."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return True
    memo = {} if memo is None else memo
    if v in memo:
        return memo[v]
    if depth > 200:
        return False
    e = program.producer(v)
    if e is None:
        theta_vars = {iv for (kind, _), iv in zip(program.inputs, program.jaxpr.jaxpr.invars) if kind == "theta"}
        out = v not in theta_vars
    else:
        out = all(_theta_free(program, u, memo, depth + 1) for u in e.invars)
    memo[v] = out
    return out


def log_link_input(program, var):
    """If ``log(var) = c + z`` or ``c - z`` elementwise with ``c`` theta-free (``var`` is ``exp(z)``, or a
    theta-free factor times or over such a value, e.g. NumPyro's ``rate = concentration / mean`` with ``mean =
    jnp.exp(z)``, through ops that keep its elements), the variable ``z``; else None.  ``d log(var) / d theta =
    +- d z / d theta``: the same norm."""

    def one(u):
        return not hasattr(u, "val") and int(np.prod(conc(u.aval.shape))) == 1 and not any(
            not isinstance(d, (int, np.integer)) for d in u.aval.shape)
    v = var
    memo: dict = {}
    for _ in range(32):
        e = program.producer(v)
        if e is None:
            return None
        name = e.primitive.name
        if name == "exp":
            z = e.invars[0]
            return z if not hasattr(z, "val") and not _theta_free(program, z, memo) else None
        if name in ("div", "mul") and len(e.invars) == 2:
            a, b = e.invars
            # the theta-dependent operand has the result's entries, or ONE entry (broadcast by the operation)
            if _theta_free(program, a, memo) and not _theta_free(program, b, memo) and (_element_count(b) == _element_count(v) or one(b)):
                v = b
                continue
            if _theta_free(program, b, memo) and not _theta_free(program, a, memo) and (_element_count(a) == _element_count(v) or one(a)):
                v = a
                continue
            return None
        if _keeps_values(e) and (_element_count(e.invars[0]) == _element_count(v) or (
                name == "broadcast_in_dim" and int(np.prod(conc(e.invars[0].aval.shape))) == 1)):
            # (a broadcast of ONE value, e.g. an intercept-only log-mean to every record: each entry is that value)
            v = e.invars[0]
            continue
        return None
    return None


# ---------------------------------------------------------------------------
# norms of a Jacobian over the domain


def _domain_radii(domain, arg: str, p: int):
    """(R, v): sup of the record norm of ``arg`` (None if not declared) and the per-entry sup |x_j|."""
    lo, hi = domain_box(domain, arg, (p,))
    v = np.maximum(np.abs(lo), np.abs(hi))
    dom = domain.get(arg) if domain is not None else None
    R = dom.row_norm_bound(p) if dom is not None else None
    return R, v


def _source_bounds(row_c: tuple, c_norm_bound, row_A: dict, domain) -> list[tuple[float, np.ndarray, str]]:
    """(bound, support over coordinates, name) of each source of one row of one block: its constant part
    (the smaller of the norm of its box and its tracked norm) and every argument's term."""
    clo, chi = row_c
    cm = np.maximum(np.abs(clo), np.abs(chi))
    out = []
    if np.any(cm):
        b = rd.norm_up(cm)
        if c_norm_bound is not None:
            b = min(b, float(c_norm_bound))
        out.append((b, cm > 0, "constant part"))
    for arg, (alo, ahi) in row_A.items():
        am = np.maximum(np.abs(alo), np.abs(ahi))            # (D, p)
        if not np.any(am):
            continue
        R, v = _domain_radii(domain, arg, am.shape[-1])
        cands = []
        if R is not None and math.isfinite(R):
            cands.append(rd.mul_up(rd.spectral_up(am), R))
        if np.isfinite(v).all():
            cands.append(rd.norm_up(_matvec_up(am, v)))
        out.append((min(cands) if cands else math.inf, np.any(am > 0, axis=-1), arg))
    return out


def _matvec_up(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Upper bound of a @ v for nonnegative a, v (float64 with a rigorous relative error bound)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = a @ v
    n = a.shape[-1]
    return np.nextafter(out * (1 + (n + 2) * 2.3e-16), np.inf)


def _group(sources) -> float:
    """Sources on overlapping coordinates add (triangle inequality); groups on disjoint coordinates
    combine by Pythagoras."""
    n = len(sources)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i in range(n):
        for j in range(i + 1, n):
            if np.any(sources[i][1] & sources[j][1]):
                parent[find(i)] = find(j)
    groups: dict = {}
    for i, (b, _, _) in enumerate(sources):
        groups[find(i)] = rd.add_up(groups.get(find(i), 0.0), b)
    return rd.hypot_up(list(groups.values()))


def operator_norm_bound(blocks: list[Bound], domain) -> tuple[float, str]:
    """sup over the domain (and theta) of ``||J||_op`` for ``J = [blocks...]`` concatenated along the
    columns (one block per latent site: disjoint coordinates, so a row's squared norm is the sum over
    blocks).  Each block is (rows, cols) (:func:`rows_of`)."""
    U = blocks[0].shape[0]
    row_bounds, rules = [], set()
    supports = [[] for _ in range(U)]
    for u in range(U):
        per_block = []
        for b in blocks:
            f = b.as_lin()
            clo, chi = np.broadcast_to(f.clo, b.shape)[u], np.broadcast_to(f.chi, b.shape)[u]
            cn = c_norm(b, 1)
            cn_u = None if cn is None else cn[u, 0]
            box = rd.norm_up(np.maximum(np.abs(b.lo[u]), np.abs(b.hi[u])))
            if b.lin is None and cn_u is not None:
                box = min(box, float(cn_u))
            sources = _source_bounds((clo, chi), cn_u, {a: (lo[u], hi[u]) for a, (lo, hi) in f.A.items()}, domain)
            lin_b = _group(sources) if sources else 0.0
            per_block.append(min(box, lin_b))
            rules.add("linear form" if lin_b <= box else "box")
            supports[u].append(np.maximum(np.abs(b.lo[u]), np.abs(b.hi[u])) > 0)
        row_bounds.append(rd.hypot_up(per_block))
    rows_support = [np.concatenate(s_) for s_ in supports]
    disjoint = all(not np.any(rows_support[i] & rows_support[j]) for i in range(U) for j in range(i + 1, U))
    if U == 1 or disjoint:
        op = max(row_bounds) if row_bounds else 0.0
        how_rows = "rows on disjoint coordinates: max of row norms" if U > 1 else "one row"
    else:
        op = rd.hypot_up(row_bounds)
        how_rows = "Frobenius over rows"
    how = f"{how_rows}; latent sites combined by Pythagoras; row bounds from the {', '.join(sorted(rules))}"
    joint = getattr(blocks[0], "joint", None)
    if len(blocks) > 1 and joint is not None and all(getattr(b, "joint", None) is joint for b in blocks) and \
            joint.shape[0] == U:
        # the blocks are column blocks of one matrix: its operator norm bounds theirs side by side
        op_joint, how_joint = operator_norm_bound([joint], domain)
        if op_joint < op:
            return op_joint, f"the sites' blocks as one matrix: {how_joint}"
    return op, how


def rows_of(bound: Bound, n_lead: int) -> Bound:
    """Reshape a Jacobian block (param dims..., latent dims...) to (rows, cols), ``n_lead`` param dims."""
    rows = int(np.prod(bound.shape[:n_lead])) if n_lead else 1
    cols = int(np.prod(bound.shape[n_lead:])) if bound.lo.ndim > n_lead else 1
    lin = None
    if bound.lin is not None:
        f = bound.lin
        lin = type(f)(f.clo.reshape(rows, cols), f.chi.reshape(rows, cols),
                      {k: (a.reshape(rows, cols, a.shape[-1]), b.reshape(rows, cols, b.shape[-1]))
                       for k, (a, b) in f.A.items()})
    out = Bound(bound.lo.reshape(rows, cols), bound.hi.reshape(rows, cols), lin, bound.why)
    if bound.nrm and bound.lo.ndim == n_lead + 1 and n_lead in bound.nrm:   # one latent axis: its norm
        out.nrm = {1: bound.nrm[n_lead].reshape(rows, 1)}
    joint = getattr(bound, "joint", None)
    if joint is not None and joint.lo.ndim == n_lead + 1 and joint.lo.shape[:n_lead] == bound.lo.shape[:n_lead]:
        cache = joint.__dict__.setdefault("_rows", {})
        if n_lead not in cache:
            cache[n_lead] = rows_of(joint, n_lead)     # the same rows, every latent column
        out.joint = cache[n_lead]
    return out


def record_axis(shape) -> int | None:
    """The axis of ``shape`` that is the record count (None if none, or if several)."""
    axes = [i for i, d in enumerate(shape) if not isinstance(d, (int, np.integer))]
    return axes[0] if len(axes) == 1 else None

