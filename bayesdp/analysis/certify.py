"""``certify``: analysis constants -> every mechanism's certificates, via the certificate core.

Never re-implements a bound: each mechanism is priced by :func:`bayesdp.bound`
with the analysis constants (SGLD uses the 004 loss ``l~ = K + data_size * l_d +
V_prior``, so ``grad_bound = data_size * record_grad_bound + prior bound`` and
``grad_diff = data_size * record_grad_diff``, 004 (31), (36)).  Options a
mechanism does not (yet) take are not passed (e.g. ``v_smoothness``/``v_convex``
before issue #6 lands).  A mechanism that cannot be certified carries an
``error`` string naming the site/parameter and the failed assumption.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ..certificate import BoundReport, Certificate
from ..errors import AssumptionError, BayesDPError, probability_open
from .analyze import Analysis, analyze, check_arithmetic
from .structure import floats
from ..errors import positive
from ..mechanisms import MECHANISMS, bound
from .session import one_analysis

__all__ = ["CertifyReport", "MECHANISM_KEYS", "certify", "price"]

#: the mechanisms :func:`certify` prices, in report order
MECHANISM_KEYS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path")

# 004 Proposition 3.4, limitation: a quantitative warning needs a certified *lower* bound on the posterior's
# privacy loss (the posterior is NOT (eps, delta)-DP); the core provides only upper bounds,
# so the report states the proposition's content without inventing a number.
PROP_3_4_NOTE = ("004 Proposition 3.4: if a chain's final draw is certified (eps, delta_n)-DP while the exact "
                 "posterior is not (eps, delta)-DP with delta > delta_n, the chain is at total variation > "
                 "(delta - delta_n)/(1 + e^eps) from the posterior for some dataset; a certificate much smaller "
                 "than the posterior's privacy loss therefore signals a biased sampler (no posterior lower bound "
                 "is computed here)")


@dataclass
class CertifyReport:
    """What :func:`certify` found: the analysis and, per mechanism, its certificates or why there are none.

    Args:
        analysis: the :class:`~bayesdp.analysis.analyze.Analysis` the mechanisms were priced with.
        mechanisms: mechanism key (``MECHANISM_KEYS``) -> :class:`~bayesdp.certificate.BoundReport`, or a string
            saying why it is not certified.
        delta: the delta of every certificate.
        sampler: the sampler configuration priced (step size, steps, batch size, inverse temperature, clipping).
        warnings: notes for the report.

    Examples:
        >>> from bayesdp.analysis import Domain, certify
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> report = certify(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2,
        ...                  step_size=1e-3, num_steps=100, sampler="ula")
        >>> sorted(report.certified()), report.mechanisms["sgld-path"]
        (['posterior', 'ula-final', 'ula-path'], 'not requested (sampler = ula)')
        >>> report.table().splitlines()[0]
        'model logistic: latent w[2]; observed obs (BernoulliLogits); record plate data (size 100)'
    """

    analysis: Analysis
    mechanisms: dict
    delta: float
    sampler: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def certified(self) -> dict:
        """The mechanisms that have a report.

        Returns:
            Mechanism key -> :class:`~bayesdp.certificate.BoundReport`.
        """
        return {k: v for k, v in self.mechanisms.items() if isinstance(v, BoundReport)}

    @property
    def best(self) -> tuple[str, BoundReport] | None:
        """``(mechanism, report)`` of the sampler mechanism with the smallest epsilon (the exact posterior
        excluded), or None when no chain is certified."""
        cands = [(k, v) for k, v in self.certified().items() if v.best is not None and k != "posterior"]
        return min(cands, key=lambda kv: kv[1].value()) if cands else None

    def to_dict(self) -> dict:
        """The report as a JSON-ready dict (what ``bayesdp certify --json`` prints).

        Returns:
            ``{"model", "constants", "sampler", "delta", "mechanisms", "warnings"}``; a mechanism without a
            certificate is ``{"error": reason}``.
        """
        mechs: dict[str, Any] = {}
        for k in MECHANISM_KEYS:
            v = self.mechanisms.get(k)
            mechs[k] = v.to_dict() if isinstance(v, BoundReport) else {"error": str(v)}
        return {
            "model": self.analysis.to_dict(),
            "constants": self.analysis.constants.to_dict(),
            "sampler": dict(self.sampler),
            "delta": self.delta,
            "mechanisms": mechs,
            "warnings": list(self.warnings),
        }

    def table(self) -> str:
        """The report as text: the model, the domain, every constant with its provenance, each mechanism's
        epsilon and best route (or why not certified), the notes.

        Returns:
            The multi-line table.
        """
        an = self.analysis
        c = an.constants
        lines = [f"model {an.model_name}: latent " + ", ".join(f"{n}{list(s)}" for n, s, _ in an.latent_sites)
                 + "; observed " + ", ".join(f"{n} ({f})" for n, f in an.observed_sites)
                 + f"; record plate {an.record_plate[0]} (size {an.record_plate[1]})",
                 f"domain: {an.domain.describe() or '-'}", "", "constants (provenance)"]
        names = ("strong_convexity", "smoothness", "grad_bound", "grad_diff", "grad_diff_add_remove",
                 "total_strong_convexity", "total_smoothness", "record_grad_bound", "record_grad_diff",
                 "v_smoothness", "v_convex", "inverse_temperature", "data_size")
        w = max(len(n) for n in names)
        for n in names:
            v = getattr(c, n)
            sv = "null" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
            lines.append(f"  {n:<{w}}  {sv:>12}  {c.provenance.get(n, '')}")
        for u in an.unproven:
            lines.append(f"  UNPROVEN {u.message()}")
        lines += ["", f"mechanisms at delta = {self.delta:.3g}"]
        for k in MECHANISM_KEYS:
            v = self.mechanisms.get(k)
            if isinstance(v, BoundReport) and v.best is not None:
                lines.append(f"  {k:<11} epsilon = {v.value():<12.6g} best route {v.best.source}")
                if k.endswith("-final") and "post-processing of the path" in v.best.source:
                    why = [c.reason for c in v.certificates if not c.valid and c.reason][:2]
                    if why:
                        lines.append(f"  {'':<11} (no final-draw route applied: {'; '.join(why)})")
            else:
                lines.append(f"  {k:<11} not certified: {v}")
        for note in an.notes + self.warnings:
            lines.append(f"note: {note}")
        return "\n".join(lines)


def _call_bound(mech: str, delta: float, params: Mapping[str, Any]):

    if mech not in MECHANISMS:
        return f"mechanism {mech!r} is not available in this version of the certificate core"
    known = {o.dest for o in MECHANISMS[mech].options}
    args = {k: v for k, v in params.items() if k in known and v is not None}
    try:
        return bound(mech, delta=delta, **args)
    except BayesDPError as exc:
        return in_model_terms(str(exc))


# options of `bayesdp bound` that `certify` does not have: the analysis proves (or not) these constants
_CONSTANT_OPTIONS = ("v-convex", "v-smoothness", "strong-convexity", "smoothness", "grad-bound", "grad-diff",
                     "linear-v", "total-strong-convexity", "total-smoothness")


def in_model_terms(msg: str) -> str:
    """A core message re-worded for a model: advice to declare a constant (an option of `bayesdp bound`)
    becomes what the analysis did not prove.

    Args:
        msg: a message of the certificate core.

    Returns:
        The message with ``--option`` names replaced by the constants' names.

    Examples:
        >>> from bayesdp.analysis.certify import in_model_terms
        >>> in_model_terms("requires --strong-convexity > 0")
        'requires strong_convexity > 0'
    """
    msg = msg.replace("declare --v-convex and/or --v-smoothness L_V (0 for linear V)",
                      "the analysis proved V neither convex nor smooth for this model (see v_convex and "
                      "v_smoothness in the constants' provenance)")
    msg = msg.replace("declare --v-smoothness L_V", "v_smoothness is not proven for this model (see its provenance)")
    for opt in _CONSTANT_OPTIONS:
        msg = re.sub(rf"--{opt}\b", opt.replace("-", "_"), msg)
    return msg


def _post_processing(final_mech: str, final, path):
    """The last draw is a function of the path, so the path's certificate holds for it (post-processing):
    a final-draw report never worse than the path's, saying which route it used and why a final-draw route
    did not apply."""
    if not isinstance(path, BoundReport) or path.best is None:
        return final
    via = " (path certificate: the last draw is post-processing of the path)"
    have = {c.source for c in final.certificates} if isinstance(final, BoundReport) else set()
    extra = [replace(c, mechanism=final_mech, source=c.source + via) for c in path.certificates
             if c.valid and c.source not in have and c.source + via not in have]
    if isinstance(final, BoundReport):
        if final.best is not None and final.value() <= path.value():
            return final
        return BoundReport(final.mechanism, final.parameters, list(final.certificates) + extra, delta=final.delta)
    reason = str(final)
    return BoundReport(final_mech, path.parameters,
                       [Certificate.invalid(final_mech, "final-draw theorems (004 Theorems 5.2/5.4, last draw)",
                                            reason)] + extra, delta=path.delta)


def price(c, mech: str, delta: float, *, step_size: float | None = None, num_steps: int | None = None,
          batch_size: int | None = None):
    """The certificate core's report for mechanism ``mech`` with the analysis constants ``c`` (at their
    ``inverse_temperature``), or a string saying why it cannot be priced.  The final-draw mechanisms fall
    back to the path's certificate (post-processing).  SGLD uses the 004 loss
    ``l~ = K + data_size * l_d + V_prior`` (004 (31), (36)).

    Args:
        c: the analysis :class:`~bayesdp.analysis.facts.Constants`.
        mech: one of ``MECHANISM_KEYS``.
        delta: the delta of the certificates.
        step_size: the chain's step size (chains).
        num_steps: the chain's number of steps (chains).
        batch_size: records per minibatch (SGLD).

    Returns:
        A :class:`~bayesdp.certificate.BoundReport`, or a string saying why the mechanism cannot be priced
        (a constant not proven, a missing option, the core's refusal in the model's terms).

    Examples:
        >>> from bayesdp.analysis import Domain, analyze
        >>> from bayesdp.analysis.certify import price
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> c = analyze(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2).constants
        >>> price(c, "ula-path", 1e-5, step_size=1e-3, num_steps=100).mechanism
        'ula-path'
        >>> price(c, "sgld-path", 1e-5, step_size=1e-3, num_steps=100)
        'batch_size is required for SGLD: pass --batch-size S (records per minibatch)'
    """
    beta = c.inverse_temperature
    common = {"step_size": step_size, "num_steps": num_steps, "inverse_temperature": beta}

    def missing(*names: str) -> str | None:
        for n in names:
            if getattr(c, n) is None:
                return f"{n} not proven ({c.provenance.get(n, 'unproven')})"
        return None
    if mech == "posterior":
        return missing("grad_diff") or _call_bound("posterior", delta, {
            "strong_convexity": c.strong_convexity, "smoothness": c.smoothness, "grad_bound": c.grad_bound,
            "grad_diff": c.grad_diff, "inverse_temperature": beta, "v_smoothness": c.v_smoothness,
            "v_convex": c.v_convex, "total_strong_convexity": c.total_strong_convexity,
            "total_smoothness": c.total_smoothness, "data_size": c.data_size})
    if mech in ("ula-final", "ula-path"):
        path = missing("grad_diff") or _call_bound("ula-path", delta, {**common, "grad_diff": c.grad_diff})
        if mech == "ula-path":
            return path
        final = missing("strong_convexity", "smoothness", "grad_bound") or _call_bound("ula-final", delta, {
            **common, "strong_convexity": c.strong_convexity, "smoothness": c.smoothness,
            "grad_bound": c.grad_bound, "grad_diff": c.grad_diff, "v_smoothness": c.v_smoothness,
            "v_convex": c.v_convex})
        return _post_processing("ula-final", final, path)
    if mech in ("sgld-final", "sgld-path"):
        if batch_size is None:
            return "batch_size is required for SGLD: pass --batch-size S (records per minibatch)"
        sg = {**common, "batch_size": batch_size, "data_size": c.data_size}
        path = missing("record_grad_diff") or _call_bound("sgld-path", delta, {**sg, "grad_diff": c.sgld_grad_diff})
        if mech == "sgld-path":
            return path
        final = missing("strong_convexity", "smoothness", "grad_bound") or _call_bound("sgld-final", delta, {
            **sg, "strong_convexity": c.strong_convexity, "smoothness": c.smoothness,
            "grad_bound": c.sgld_grad_bound, "grad_diff": c.sgld_grad_diff, "v_smoothness": c.v_smoothness,
            "v_convex": c.v_convex})
        return _post_processing("sgld-final", final, path)
    return f"mechanism {mech!r} is not one of {', '.join(MECHANISM_KEYS)}"


@one_analysis()   # the model traced and its structure proven once per call (analysis/session.py)
def certify(model: Callable, data: Mapping[str, Any] | None = None, domain=None, step_size: float | None = None,
            num_steps: int | None = None, batch_size: int | None = None, inverse_temperature: float = 1.0,
            clip_norm: float | None = None, delta: float = 1e-5, model_kwargs: Mapping[str, Any] | None = None,
            data_size: int | None = None, dim: int | None = None, clip_to_domain: bool = False,
            sampler: str | None = None, analysis: Analysis | None = None, model_name: str | None = None,
            require_any: bool = True, record_shapes: Mapping[str, Any] | None = None,
            arithmetic: str | None = None) -> CertifyReport:
    """Analyse ``model`` and certify the posterior, ULA final draw/path and SGLD final draw/path.

    Each mechanism is certified independently (a step size invalid for ``ula-final`` does not
    prevent ``ula-path``).  ``sampler`` in {None, "ula", "sgld"} restricts the chains priced.
    Raises a one-line :class:`~bayesdp.errors.BayesDPError` if the input is invalid, or (with
    ``require_any``) if no mechanism at all can be certified.

    Args:
        model: a NumPyro model (see :func:`~bayesdp.analysis.analyze.analyze`).
        data: per-record model arguments, or None to certify before sampling (with ``data_size``).
        domain: the public bounds on one record.
        step_size: the chain's step size.
        num_steps: the chain's number of steps.
        batch_size: records per minibatch (SGLD).
        inverse_temperature: beta of the sampled distribution (1: the Bayesian posterior).
        clip_norm: per-record gradient clipping norm.
        delta: the delta of every certificate, in (0, 1).
        model_kwargs: the model's other keyword arguments.
        data_size: the number of records, without data.
        dim: the length of a record's row, without data.
        clip_to_domain: clip the data into the domain rather than refuse it.
        sampler: ``"ula"`` or ``"sgld"`` to price that chain only, ``"none"`` for the posterior only,
            None or ``"all"`` for every mechanism.
        analysis: an :class:`~bayesdp.analysis.analyze.Analysis` already computed (the model is then not
            analysed again).
        model_name: the name to report.
        require_any: refuse when no mechanism at all can be certified.
        record_shapes: without data, the shape of one record of each data argument.
        arithmetic: ``"real"`` or ``"float"`` (the program's float rounding modelled; see
            :func:`~bayesdp.analysis.analyze.analyze`), for every analysis this call makes; None (the default):
            the enclosing ``bayesdp.analysis.arithmetic(...)``, else real.

    Returns:
        The :class:`CertifyReport`.

    Raises:
        AssumptionError: if ``delta``, ``sampler`` or ``inverse_temperature`` is invalid, or (with
            ``require_any``) no mechanism can be certified (naming every blocking site).
        DomainError: see :func:`~bayesdp.analysis.analyze.analyze`.
        ModelError: see :func:`~bayesdp.analysis.analyze.analyze`.

    Examples:
        >>> from bayesdp.analysis import Domain, certify
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> report = certify(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2,
        ...                  step_size=1e-3, num_steps=100, batch_size=10)
        >>> sorted(report.certified()) == sorted(["posterior", "ula-final", "ula-path", "sgld-final", "sgld-path"])
        True
        >>> certify(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2, delta=2.0)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: delta = 2 must be in (0, 1); ...
    """
    d = probability_open("delta", delta, "pass a delta strictly between 0 and 1, e.g. 1e-5")
    if sampler not in (None, "ula", "sgld", "all", "none"):
        raise AssumptionError(f"sampler = {sampler!r} must be one of ula, sgld (or none: the posterior only)")
    with floats.arithmetic(check_arithmetic(arithmetic)):
        return _certify(model, data, domain, step_size, num_steps, batch_size, inverse_temperature, clip_norm, d,
                        model_kwargs, data_size, dim, clip_to_domain, sampler, analysis, model_name, require_any,
                        record_shapes)


def _certify(model, data, domain, step_size, num_steps, batch_size, inverse_temperature, clip_norm, d, model_kwargs,
             data_size, dim, clip_to_domain, sampler, analysis, model_name, require_any, record_shapes):
    an = analysis if analysis is not None else analyze(
        model, data=data, domain=domain, model_kwargs=model_kwargs, clip_norm=clip_norm, data_size=data_size,
        dim=dim, clip_to_domain=clip_to_domain, model_name=model_name, record_shapes=record_shapes)
    beta = positive("inverse_temperature", inverse_temperature)
    c = replace(an.constants, inverse_temperature=beta, provenance=dict(an.constants.provenance))
    an.constants = c

    want_ula = sampler in (None, "all", "ula")
    want_sgld = sampler in (None, "all", "sgld")
    mechs: dict[str, Any] = {"posterior": price(c, "posterior", d)}
    for mech, wanted in (("ula-final", want_ula), ("ula-path", want_ula), ("sgld-final", want_sgld),
                         ("sgld-path", want_sgld)):
        mechs[mech] = (price(c, mech, d, step_size=step_size, num_steps=num_steps, batch_size=batch_size)
                       if wanted else f"not requested (sampler = {sampler})")

    warnings = []
    if an.clipped:
        warnings.append(f"gradients clipped at {an.clip_norm:g} per record: the sampler does not target the exact "
                        "posterior")
    warnings.append(PROP_3_4_NOTE)
    rep = CertifyReport(analysis=an, mechanisms=mechs, delta=d, warnings=warnings,
                        sampler={"step_size": step_size, "num_steps": num_steps, "batch_size": batch_size,
                                 "inverse_temperature": beta, "clip_norm": an.clip_norm, "sampler": sampler})
    if require_any and not any(isinstance(v, BoundReport) for v in mechs.values()):
        msgs = [u.message() for u in an.unproven]          # every blocking site at once
        if not msgs:
            msgs = [str(mechs[k]) for k in MECHANISM_KEYS if k in mechs and not str(mechs[k]).startswith("not ")][:1]
        if clip_norm is None and analysis is None and any(u.what == "per-record gradient bound" for u in an.unproven):
            t_sites = {u.site: fam for u in an.unproven for n, fam in an.observed_sites
                       if u.what == "per-record gradient bound" and n == u.site and fam in _T_REWRITES}
            if t_sites:
                msgs.append(_student_t_alternative(model, t_sites, data, domain, model_kwargs, data_size, dim,
                                                   clip_to_domain, model_name, record_shapes, d, beta, step_size,
                                                   num_steps, batch_size, want_ula, want_sgld))
            msgs.append(_clipped_alternative(model, data, domain, model_kwargs, data_size, dim, clip_to_domain,
                                             model_name, record_shapes, d, beta, step_size, num_steps, batch_size,
                                             want_ula, want_sgld))
        raise AssumptionError("no mechanism can be certified: " + "; ".join(msgs))
    return rep


#: the families whose refusal prices the Student-t rewrite with a public scale (bayesdp.analysis.advice's code)
_T_REWRITES = ("Normal", "StudentT", "Cauchy")
#: the public scale and degrees of freedom of that rewrite (a Normal becomes StudentT(4, loc, 1); a StudentT or a
#: Cauchy keeps its family and degrees of freedom, with the scale 1): the GDP mu is proportional to 1 / scale
ALTERNATIVE_SCALE, ALTERNATIVE_DF = 1.0, 4.0


def _with_public_scale(model, sites: Mapping[str, str]):
    """``model`` with each observed site in ``sites`` (name -> family) given a public scale: a Normal becomes
    ``StudentT(4, loc, 1)``, a StudentT or Cauchy keeps its family (and df) with scale 1; the location as the model
    computes it.  A NumPyro effect handler around the model (its signature kept), so the analyzer traces the
    rewritten program itself, as it would the user's rewrite."""
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.primitives import Messenger

    class _PublicScale(Messenger):
        def process_message(self, msg):
            if msg["type"] != "sample" or msg["name"] not in sites:
                return
            fn = msg["fn"]
            base = fn
            while hasattr(base, "base_dist"):
                base = base.base_dist
            loc = jnp.broadcast_to(base.loc, fn.batch_shape + fn.event_shape)
            fam = sites[msg["name"]]
            new = (dist.Cauchy(loc, ALTERNATIVE_SCALE) if fam == "Cauchy" else
                   dist.StudentT(getattr(base, "df", ALTERNATIVE_DF) if fam == "StudentT" else ALTERNATIVE_DF, loc,
                                 ALTERNATIVE_SCALE))
            msg["fn"] = new.to_event(len(fn.event_shape)) if fn.event_shape else new

    @functools.wraps(model)
    def rewritten(*args, **kwargs):
        with _PublicScale():
            return model(*args, **kwargs)
    return rewritten


def _student_t_alternative(model, sites, data, domain, model_kwargs, data_size, dim, clip_to_domain, model_name,
                           record_shapes, d, beta, step_size, num_steps, batch_size, want_ula, want_sgld) -> str:
    """What the nearest certifiable model of bayesdp.analysis.advice (the Student-t likelihood with a public scale)
    would certify at the same settings: the model rewritten by :func:`_with_public_scale`, analysed again and its
    chain mechanisms priced (public inputs only); one sentence."""
    names = ", ".join(f"'{n}'" for n in sites)
    head = (f"with a public scale SCALE = {ALTERNATIVE_SCALE:g} at site(s) {names} (the Student-t rewrite above, "
            f"df = {ALTERNATIVE_DF:g} for a Normal)")
    if step_size is None or num_steps is None:
        return (f"{head} the chains may be certifiable: pass --step-size and --num-steps (step_size=, num_steps=) to "
                "see their epsilon")
    return _priced(head, "the path's GDP mu is proportional to 1 / SCALE", lambda: analyze(
        _with_public_scale(model, sites), data=data, domain=domain, model_kwargs=model_kwargs, data_size=data_size,
        dim=dim, clip_to_domain=clip_to_domain, model_name=model_name, record_shapes=record_shapes),
        d, beta, step_size, num_steps, batch_size, want_ula, want_sgld)


def _priced(head, tail, analyse, d, beta, step_size, num_steps, batch_size, want_ula, want_sgld) -> str:
    """One sentence: ``head``, then the chain mechanisms that the model ``analyse()`` returns would certify at these
    settings (``tail`` in parentheses), or why it is still refused."""
    try:
        an = analyse()
    except BayesDPError as exc:
        return f"{head} the model is still refused ({str(exc).splitlines()[0]})"
    except (AttributeError, TypeError, ValueError):      # a distribution the handler cannot rebuild (no .loc)
        return f"{head}: not priced here (the rewritten model could not be analysed automatically)"
    c = replace(an.constants, inverse_temperature=beta, provenance=dict(an.constants.provenance))
    got = []
    for mech, wanted in (("ula-path", want_ula), ("sgld-path", want_sgld)):
        rep = price(c, mech, d, step_size=step_size, num_steps=num_steps, batch_size=batch_size) if wanted else None
        if isinstance(rep, BoundReport) and rep.best is not None:
            got.append(f"{mech} epsilon = {rep.value():.6g}")
    if not got:
        why = "; ".join(u.message() for u in an.unproven[:1])
        return f"{head} no chain mechanism is certified at these settings either" + (f" ({why})" if why else "")
    return f"{head} these settings would certify {', '.join(got)} at delta = {d:g} ({tail})"


#: the clipping norm of the alternative a refusal prices (the path's GDP mu is linear in the norm; epsilon grows with it)
ALTERNATIVE_CLIP = 1.0


def _clipped_alternative(model, data, domain, model_kwargs, data_size, dim, clip_to_domain, model_name,
                         record_shapes, d, beta, step_size, num_steps, batch_size, want_ula, want_sgld) -> str:
    """What per-record gradient clipping would certify at the same settings: the model analysed again with
    ``clip_norm = 1`` (public inputs only, as the refusal itself) and its chain mechanisms priced, e.g. ``"with
    per-record gradients clipped at norm 1 (--clip-norm 1, clip_norm=1.0) these settings would certify ula-path
    epsilon = 6.57 at delta = 1e-05 (...)"``; always one sentence (no line break)."""
    g = ALTERNATIVE_CLIP
    head = f"with per-record gradients clipped at norm {g:g} (--clip-norm {g:g}, clip_norm={g!r})"
    if step_size is None or num_steps is None:
        return (f"{head} the chains are certifiable: pass --step-size and --num-steps (step_size=, num_steps=) to "
                "see their epsilon")
    return _priced(head, "the clipped chain no longer targets the exact posterior; the path's GDP mu is "
                   "proportional to the norm", lambda: analyze(
                       model, data=data, domain=domain, model_kwargs=model_kwargs, clip_norm=g, data_size=data_size,
                       dim=dim, clip_to_domain=clip_to_domain, model_name=model_name, record_shapes=record_shapes),
                   d, beta, step_size, num_steps, batch_size, want_ula, want_sgld)
