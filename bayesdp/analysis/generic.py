"""The generic rule: a per-record term that no family rule covers (docs/analysis.md, "The generic rule").

It applies to a ``numpyro.factor`` inside the plate over records (one log-factor per record) and to an
observed site whose family has no rule (a Laplace, Logistic, Gamma... likelihood, ``probs`` not written as a
sigmoid, a user's own Distribution), and to the families whose rule refuses in general (Normal, Poisson) when
the model makes their gradient bounded.  What it proves, from the program only:

(a) per-record separability and no random numbers: the site-level checks (:mod:`.structure.sites`) that every
    observed site passes (element ``i`` of the site's log-density depends on record ``i`` only);
(b) the log-density ``l_i(theta) = log p(record i | theta)`` (summed over the site's axes other than the
    records) is continuous in theta with JAX's derivative as its (almost-everywhere) derivative (affinity
    interpreter, ``grad_ok``): the gradient the samplers use is the gradient of the potential;
(c) ``G >= sup |grad_theta l_i(theta)|_2`` over ALL theta in R^d and every record of the declared domain: the
    gradient program ``d l_i / d theta`` (forward mode, :meth:`Program.logp_jacobian`) bounded by the bound
    interpreter (boxes and linear forms in the record, outward rounding; relational rules for JAX's derivatives
    of softplus, log1p(exp), logistic, tanh), its row norm by :func:`operator_norm_bound`;
(d) replace-one gradient difference ``sup |grad l(x) - grad l(x')| <= 2 G`` (triangle inequality).

Nothing else is claimed: no convexity, no smoothness (the site's term goes to V as a bounded-gradient,
non-convex, non-smooth term); certificates that need only the gradient difference (the path certificates,
and the final draw by post-processing) apply.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DomainError
from .facts import LikelihoodFacts, Unproven
from .structure import program as sp
from .advice import growth_and_rewrite
from .structure.sites import _violation, support_bound_ranges

# no public names: a step of bayesdp.analysis.analyze (the interface), called by bayesdp.analysis.constants
__all__: list[str] = []

GENERIC = "generic: gradient of logp bounded by interval arithmetic over the domain and all theta"
WHAT = "per-record gradient bound"


def _term(site) -> str:
    return "log-factor" if site.family == "Unit" else "log-density"


def _fixes(site, hint: str) -> str:
    fix = ("pass --clip-norm G to clip per-record gradients, declare bounds on the data the term reads, or rewrite "
           f"the {_term(site)} so that its gradient in theta is bounded")
    return f"{fix}{'; ' + hint if hint else ''}"


def generic_site(program, facts, name: str, domain, m: int, context: str,
                 hint: str = "") -> LikelihoodFacts | Unproven:
    """The generic rule for observed site ``name``; ``context`` says why no family rule applies (it opens a
    refusal), ``hint`` is a rewrite specific to the family (e.g. "write Bernoulli(logits=eta)").

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        name: the observed site.
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        m: the number of records.
        context: why no family rule applies.
        hint: a rewrite specific to the family.

    Returns:
        :class:`~bayesdp.analysis.facts.LikelihoodFacts` (gradient bound only: not convex, not smooth), or
        :class:`~bayesdp.analysis.facts.Unproven` naming what defeats the rule and what to do.

    Raises:
        DomainError: if the declared domain admits a response outside the site's support.
    """
    s = program.sites[name]
    li = program.output(name, "logp")
    aff = facts.aff[li]
    term = _term(s)
    if not aff.grad_ok:
        return Unproven(name, WHAT, f"{context}; the generic rule needs the per-record {term} continuous in theta "
                        f"with JAX's derivative as its derivative, and {sp.how(aff.why_grad)} breaks this (a jump "
                        "such as sign/floor, a branch or index chosen by theta, stop_gradient, or a custom "
                        f"derivative defined outside JAX/NumPyro){sp.switch_hint(aff.why_grad)}; "
                        f"{_fixes(s, hint)}")
    if s.family != "Unit":
        _check_support(program, name, domain, m)
    try:
        blocks, culprit = sp.logp_jacobian_bounds(program, domain, m, name)
    except Exception as exc:  # e.g. forward-mode differentiation not defined (custom_vjp)
        return Unproven(name, WHAT, f"{context}; its {term} could not be differentiated in theta by forward mode "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''})")
    rows = [sp.rows_of(blocks[lat], 1) for lat in program.latent if lat in blocks]
    if not rows:
        return LikelihoodFacts(name, f"{GENERIC} (no latent site)", 0.0, None, False, "no latent coordinate")
    G, how_rows = sp.operator_norm_bound(rows, domain)
    undefined = next((b for b in blocks.values() if b.nan), None)
    if undefined is not None:
        return Unproven(name, WHAT, f"{context}; the generic rule finds the gradient of the per-record {term} in "
                        "theta unbounded or undefined over the declared domain and all theta: it may be an infinity "
                        f"or NaN (from {sp.how(undefined.why)}){_undefined_hint(undefined.why)} (clipping per-record "
                        f"gradients does not help: a clipped NaN is NaN){growth_and_rewrite(program, facts, name)}"
                        f"{'; ' + hint if hint else ''}")
    if not math.isfinite(G):
        why = culprit or next((b.why for b in rows if b.why is not None), None)
        dep = facts.dep[li]
        undeclared = [a for a in sorted(dep.data) if domain.get(a) is None]
        more = (f" (data argument {undeclared[0]} enters it without a declared domain: declare e.g. --domain "
                f"{undeclared[0]}.min=A --domain {undeclared[0]}.max=B)") if undeclared else ""

        return Unproven(name, WHAT, f"{context}; the generic rule finds the gradient of the per-record {term} in "
                        "theta unbounded over the declared domain and all theta (its derivative is unbounded at "
                        f"{sp.how(why)}){more}{growth_and_rewrite(program, facts, name)}; or {_fixes(s, hint)}")
    detail = (f"sup over theta in R^d and the domain of |grad_theta {term}| <= {G:.6g} (Jacobian of the per-record "
              f"{term} bounded by interval and linear-form arithmetic; {how_rows}); replace-one difference <= 2 G "
              f"(triangle inequality); no convexity or smoothness claimed ({context})")
    return LikelihoodFacts(name, GENERIC, G, None, False, detail)


def _undefined_hint(eqn) -> str:
    """What makes a derivative undefined at ``eqn`` (docs/analysis.md, "Undefined values"), and the rewrite."""
    name = getattr(getattr(eqn, "primitive", None), "name", "")
    if name in ("exp", "exp2", "expm1", "sinh"):
        return (": exp overflows in float32 past 88.7 (and then inf / inf or 0 * inf is NaN); write "
                "`jax.nn.softplus(x)` for log(1 + exp(x)) or log1p(exp(x)), `jax.nn.log_sigmoid(x)` for "
                "-log(1 + exp(-x)), or bound the argument, `jnp.exp(jnp.clip(x, -B, B))`")
    if name == "select_n":
        return (": a case of a jnp.where may be NaN or infinite where it is not chosen, and JAX's reverse-mode "
                "derivative multiplies it by zero; make both cases finite everywhere (the double-where: "
                "`jnp.where(c, f(jnp.where(c, x, SAFE)), g(x))`)")
    if name == "convert_element_type":
        return (": a conversion to float16 (or float8) of a value that depends on theta: reverse mode converts the "
                "derivative too, which overflows; compute in float32")
    return (": a log, root, division or power whose argument may reach 0 (or below), or a value beyond the "
            "float32 range")


def _check_support(program, name: str, domain, m: int) -> None:
    """The observed value lies in the family's support over the whole declared domain, like the family rules'
    response check: a declared domain reaching outside the support is an invalid input, refused by name."""

    s = program.sites[name]
    c = s.constraint
    if c is None or getattr(c, "event_dim", 0) != 0 or type(c).__name__.lstrip("_") == "Real":
        return
    b = sp.bound_outputs(program, domain, m, [program.output(name, "value")])[0]
    lo, hi = float(np.min(b.lo)), float(np.max(b.hi))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return      # no declared range: the gradient bound then holds for every real value (or is infinite)
    bad = _violation(c, lo, hi, support_bound_ranges(program, domain, m, name))
    if bad is not None:
        arg = _response_arg(program, name)
        who = f"the domain of {arg}" if arg else "the observed value's range over the domain"
        raise DomainError(f"observed site '{name}' ({s.family}): {who} is [{lo:g}, {hi:g}] but its value {bad} "
                          f"(the {s.family} support); declare {arg or 'the data it is computed from'} within the "
                          "support")
    # the data lie in the declared domain (inputs.py), and integer supports are checked record by record by
    # records.validate_records


def _response_arg(program, name: str) -> str | None:
    """The data argument the observed value IS (the same program input), if any."""
    i = program.output(name, "value")
    var = program.jaxpr.jaxpr.outvars[i]
    for (kind, arg), v in zip(program.inputs, program.jaxpr.jaxpr.invars):
        if kind == "data" and v is var:
            return arg
    return None
