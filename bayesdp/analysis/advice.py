"""Refusals a user can act on: how a per-record gradient grows, and the nearest certifiable model as code.

When no rule bounds the gradient of an observed site's per-record log-density, the refusal names the site, states
how the gradient grows (in which parameter, towards which limit: each growth below is read off the family's score,
never probed), and prints the nearest rewrite that the analyzer certifies, as code.  The growth statements:

* Normal(loc, scale): ``d l / d loc = (loc - y) / scale^2`` grows linearly in ``|loc|`` (so in theta for a loc
  affine in theta), and like ``1/scale^2`` as ``scale -> 0`` when the scale is latent;
* StudentT / Cauchy(loc, scale): ``|d l / d loc| <= (df + 1)/(2 scale sqrt(df))`` is bounded in ``loc`` but grows
  like ``1/scale`` as ``scale -> 0``;
* Poisson(rate): ``d l / d log(rate) = rate - y`` grows like ``rate = exp(eta)``, exponentially in theta;
* other families: the generic rule's culprit operation is named; a log-factor computed through ``cosh`` (``log(cosh
  r)``) is told to use ``logaddexp(r, -r)``: ``cosh`` overflows in float32 for ``|r| > 89``, where JAX's derivative
  ``sinh / cosh`` is ``inf / inf``.

The rewrites are ones the analyzer certifies (tests/analysis/test_idioms_advice.py certifies each of them):
a Student-t likelihood with a public scale, a bounded location ``B * tanh(eta / B)`` with a public scale and a
bounded response, a clipped log-rate, and per-record gradient clipping (``--clip-norm``) for anything else.
"""

from __future__ import annotations

# no public names: called by the analyzer's refusals (bayesdp.analysis.generic, bayesdp.analysis.constants)
__all__: list[str] = []


def _latent(facts, program, name: str, param: str) -> list[str]:
    i = program.output(name, f"param:{param}")
    return [] if i is None else sorted(facts.dep[i].theta)


def growth_and_rewrite(program, facts, name: str) -> str:
    """``"; the gradient grows like ...; nearest certifiable model: <code>"`` for observed site ``name``, or ``""``
    when the family has no specific statement (the caller's generic fix applies).

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        name: the observed site.

    Returns:
        The text to append to a refusal (starting with ``"; "``), or ``""``.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.advice import growth_and_rewrite
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.tracing import trace_program
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> growth_and_rewrite(program, prove(program), "obs")      # Bernoulli: bounded, nothing to say
        ''
    """
    s = program.sites[name]
    fam = s.family
    loc_t = _latent(facts, program, name, "loc")
    scale_t = _latent(facts, program, name, "scale")
    plate = "with numpyro.plate('data', N):"
    if fam == "Normal":
        grows = ("the Normal score (loc - y)/scale^2 * d loc/d theta grows linearly in theta as |loc| -> inf"
                 if loc_t else "the Normal score (loc - y)/scale^2 * d loc/d theta is unbounded in theta")
        if scale_t:
            grows += (f", and like 1/scale^2 as scale -> 0 (scale from latent site(s) {', '.join(scale_t)}); a "
                      "floor on the scale does not help while loc is unbounded")
        code = (f"`{plate} numpyro.sample('{name}', dist.StudentT(4.0, loc, SCALE), obs=y)` with SCALE a public "
                "constant (a model argument, --model-arg): the Student-t score is at most (df+1)/(2 SCALE sqrt(df)) "
                f"times |d loc/d theta|; or keep the Normal with a bounded location, `dist.Normal(B * jnp.tanh(loc / "
                "B), SCALE)`, and a declared range of y")
        return f"; {grows}; nearest certifiable model: {code}"
    if fam in ("StudentT", "Cauchy") and scale_t:
        grows = (f"the {fam} score in loc is at most (df+1)/(2 scale sqrt(df)) |d loc/d theta|, which grows like "
                 f"1/scale as scale -> 0 (scale from latent site(s) {', '.join(scale_t)})")
        code = (f"`{plate} numpyro.sample('{name}', dist.{fam}({'4.0, ' if fam == 'StudentT' else ''}loc, SCALE), "
                "obs=y)` with SCALE a public constant (a model argument, --model-arg), and the latent scale removed")
        return f"; {grows}; nearest certifiable model: {code}"
    if fam == "Poisson":
        grows = ("the Poisson score d l/d log(rate) = rate - y grows like rate = exp(eta), exponentially in theta "
                 "for eta affine in theta")
        code = (f"`{plate} numpyro.sample('{name}', dist.Poisson(jnp.exp(jnp.clip(eta, -B, B))), obs=y)` with B a "
                "public constant and a declared range of y (the score is then at most max(y_max, e^B) |d eta/d "
                "theta|), or a softplus rate `dist.Poisson(jax.nn.softplus(eta))` (at most max(y_max, 1) |d eta/d "
                "theta|)")
        return f"; {grows}; nearest certifiable model: {code}"
    if _uses(program.jaxpr.jaxpr, "cosh"):
        return ("; the program computes cosh, which overflows in float32 for |r| > 89, where its derivative sinh/cosh "
                "is inf/inf: if the term is log(cosh(r)) (a log-cosh loss), write it as `jnp.logaddexp(r, -r) - "
                "jnp.log(2.0)`, whose derivative tanh(r) the analyzer bounds by 1 (times |d r/d theta|)")
    return ""


def _uses(jaxpr, name: str, depth: int = 0) -> bool:
    """Whether primitive ``name`` occurs in ``jaxpr`` or in the programs its equations call (a jit, a custom_jvp)."""
    if depth > 32:
        return False
    for e in jaxpr.eqns:
        if e.primitive.name == name:
            return True
        for v in e.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                inner = getattr(sub, "jaxpr", None)
                inner = getattr(inner, "jaxpr", inner)           # a ClosedJaxpr's jaxpr, or a Jaxpr
                if inner is not None and hasattr(inner, "eqns") and _uses(inner, name, depth + 1):
                    return True
    return False
