"""Concrete evaluation of values PROVEN constant (free of theta and of the data).

A prior parameter that the dependence interpreter has proven to read neither theta nor any data
argument has one value for every input; this evaluates it on the analysed program itself (its
symbolic record count bound to the actual number of records ``m``: a prior may legitimately
depend on it), one equation at a time (JAX's own per-primitive executables, compiled once per process
for each operation and shape, not one program compiled per analysis).  Only the equations those outputs
need are evaluated.  Evaluating a proven constant is not a probe: no structural fact is decided here.
"""

from __future__ import annotations

import numpy as np

from .interpreter import CALL_BODIES, _open, is_dropvar

# no public names: a step of bayesdp.analysis.analyze (the interface), used by bayesdp.analysis.constants only
__all__: list[str] = []


def _subst(value, m: int):
    """A parameter with every symbolic dimension evaluated at ``m`` records."""
    if isinstance(value, tuple):
        return tuple(_subst(v, m) for v in value)
    if isinstance(value, list):
        return [_subst(v, m) for v in value]
    if type(value).__name__ == "_DimExpr":
        return int(value._evaluate({"m": m}))
    return value


def _needed(eqns, outvars) -> set:
    from jax.extend import core as jcore

    need = {v for v in outvars if not isinstance(v, jcore.Literal)}
    keep = set()
    for eqn in reversed(eqns):
        if any(v in need for v in eqn.outvars if not is_dropvar(v)):
            keep.add(id(eqn))
            need.update(v for v in eqn.invars if not isinstance(v, jcore.Literal))
    return keep, need


def _run(eqns, constvars, consts, invars, args, outvars, m: int):
    import jax.numpy as jnp
    from jax.extend import core as jcore

    env = dict(zip(constvars, consts))
    env.update(zip(invars, args))

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    keep, _ = _needed(eqns, outvars)
    for eqn in eqns:
        if id(eqn) not in keep:
            continue
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name in CALL_BODIES and CALL_BODIES[name] in eqn.params:
            body, bconsts = _open(eqn.params[CALL_BODIES[name]])
            outs = _run(body.eqns, body.constvars, bconsts, body.invars, ins, body.outvars, m)
        elif name == "dim_as_value":
            outs = [jnp.asarray(_subst(eqn.params["dim"], m), dtype=eqn.outvars[0].aval.dtype)]
        else:
            res = eqn.primitive.bind(*ins, **{k: _subst(v, m) for k, v in eqn.params.items()})
            outs = list(res) if eqn.primitive.multiple_results else [res]
        for v, o in zip(eqn.outvars, outs):
            if not is_dropvar(v):
                env[v] = o
    return [read(v) for v in outvars]


def evaluate_constants(closed, wanted: list[int], m: int, inputs: list | None = None) -> list[np.ndarray]:
    """Values of ``closed.jaxpr.outvars[wanted]`` at ``m`` records.  Without ``inputs`` they must read no
    program input; with ``inputs`` (one array per program input, at ``m`` records), the caller has proven
    that the wanted values do not depend on them (e.g. the Jacobian of an affine, data-free value), so
    any inputs give the same values.

    Args:
        closed: the program (a ``ClosedJaxpr``), symbolic record count ``m``.
        wanted: indices of the outputs to evaluate.
        m: the number of records the symbolic dimensions take.
        inputs: one array per program input, or None.

    Returns:
        The wanted values, as arrays.

    Raises:
        ValueError: without ``inputs``, if a wanted value reads a program input.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure.evaluate import evaluate_constants
        >>> closed = jax.make_jaxpr(lambda: jnp.arange(3.0) * 2.0)()
        >>> evaluate_constants(closed, [0], m=1)[0].tolist()
        [0.0, 2.0, 4.0]
    """

    jaxpr, consts = _open(closed)
    outvars = [jaxpr.outvars[i] for i in wanted]
    _, need = _needed(jaxpr.eqns, outvars)
    if inputs is None:
        if any(v in need for v in jaxpr.invars):
            raise ValueError("evaluate_constants: these values read program inputs (not proven constant)")
        outs = _run(jaxpr.eqns, jaxpr.constvars, consts, [], [], outvars, m)
    else:
        outs = _run(jaxpr.eqns, jaxpr.constvars, consts, jaxpr.invars, list(inputs), outvars, m)
    return [np.asarray(o) for o in outs]
