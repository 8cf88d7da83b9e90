"""Constants: the decomposition ``U_D = K + V_D`` and its numbers, each with its provenance.

* :func:`prior_site`: a latent site's prior term through its family rule (parameters proven
  constant, then evaluated);
* :func:`likelihood_site`: an observed site's per-record gradient bound, smoothness and convexity
  from its family rule, the proven affinity of its predictor, the bound of the predictor's
  Jacobian over the declared domain, and the intervals of its fixed parameters and response;
* :func:`combine`: the constants the certificates need (names fixed, see docs/analysis.md).
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass

import numpy as np
import numpyro.distributions as dist

from ..errors import DomainError
from . import rounding as r
from .spectrum import Enclosed, eig_bounds, inverse_enclosure
from .facts import Constants, Fact, LikelihoodFacts, Unproven
from .generic import GENERIC, _response_arg, generic_site
from .families import (GAUSSIAN_RULES, LIKELIHOOD_RULES, PRIOR_RULES, UNBOUNDED_POSITIVE, GaussianTerm,
                       Unsupported)
from .structure import program as sp
from .structure.affinity import AFFINE, CONST
from .structure.bounds import Bound, Bounds, _exact_convert
from .structure.evaluate import evaluate_constants
from .structure.interpreter import Run, conc
from .advice import growth_and_rewrite
from .families import student_score_sq
from dataclasses import replace
import inspect

# no public names: steps of bayesdp.analysis.analyze (the interface): prior_site, likelihood_site, combine
__all__: list[str] = []

#: families parametrised by probabilities whose rule is the logit family's when probs = sigmoid(logits)
PROBS_AS_LOGITS = {dist.BernoulliProbs: dist.BernoulliLogits, dist.BinomialProbs: dist.BinomialLogits}
#: families ruled in eta = log of this parameter (up to a theta-free constant and sign)
LOG_LINK = {dist.NegativeBinomial2: "rate", dist.GammaPoisson: "rate"}


# ---------------------------------------------------------------------------
# priors


@dataclass
class GaussianSite:
    """A Gaussian prior term of one site: residual r = u_s - loc(theta), -log p = r^T P r / 2 + const, with
    ``B = d loc / d theta`` (n_s x D, all latent coordinates) when loc depends on other latent sites.

    Args:
        site: the latent site.
        term: its :class:`~bayesdp.analysis.families.GaussianTerm`.
        B: ``d loc / d theta`` (n_s x D), or None when loc is constant.
        B_err: an entrywise bound of ``|exact B - B|`` (None: B is exact).
    """

    site: str
    term: GaussianTerm
    B: np.ndarray | None
    B_err: np.ndarray | None = None


def _loc_jacobian(program, name: str, m: int = 1) -> tuple[np.ndarray, np.ndarray] | None:
    """``d loc / d theta`` (n_s x D) of a site whose loc is proven affine in theta and data-free, enclosed:
    ``(value, error)`` with ``|exact - value| <= error`` entrywise, from the interval interpreter on the Jacobian
    program (outward rounded; theta and the data anywhere, which the constant does not read). A point evaluation
    would return the coefficient as the program's dtype rounds it (``mu * 0.3 * 0.7`` in float32 gives 0.21000001,
    not the exact product of the two float32 constants), which the eigenvalue proof must not take as exact.
    None when an entry is not bounded."""
    closed, outputs = program.jacobian([(name, "loc")])
    ins = [Bound.top(program.sites[n].unconstrained_shape) if kind == "theta"
           else Bound.top((1,) + tuple(program.data_shapes[n])) for kind, n in program.inputs]
    outs = Run(Bounds(), sp.derivative_context(program, closed, m)).program(closed, ins)
    n_s = int(np.prod(program.sites[name].unconstrained_shape)) or 1
    los, his = [], []
    for lat in program.latent:
        b = outs[outputs[(name, "loc", lat)]]
        los.append(np.asarray(b.lo, np.float64).reshape(n_s, -1))
        his.append(np.asarray(b.hi, np.float64).reshape(n_s, -1))
    lo, hi = np.concatenate(los, axis=1), np.concatenate(his, axis=1)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    mid = 0.5 * lo + 0.5 * hi
    err = np.maximum(hi - mid, mid - lo)
    err = np.where(err > 0, np.nextafter(err * (1 + 2.0 ** -50), np.inf), 0.0)   # the subtractions' rounding
    return mid, err


def prior_site(program, facts, structure, name: str, m: int):
    """A latent site's prior through its family rule: :class:`GaussianSite`, PriorFacts (a V term) or Unproven.

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        structure: its :class:`~bayesdp.analysis.structure.sites.SiteStructure`.
        name: the latent site.
        m: the number of records (a prior may depend on it).

    Returns:
        A :class:`GaussianSite`, a :class:`~bayesdp.analysis.families.PriorFacts` or an
        :class:`~bayesdp.analysis.facts.Unproven`.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.structure.sites import check_sites
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> facts = prove(program)
        >>> domain = Domain.parse(["X.norm=1", "y.values=0,1"])
        >>> from bayesdp.analysis.constants import prior_site
        >>> site = prior_site(program, facts, check_sites(program, facts), "w", 100)
        >>> site.term.precision.tolist(), site.B is None          # Normal(0, 1): precision 1
        ([1.0, 1.0], True)
    """
    s = program.sites[name]
    what = "prior decomposition"
    rule = PRIOR_RULES.get((s.dist_type, s.transform))
    if rule is None:
        if s.family in UNBOUNDED_POSITIVE and s.transform == "ExpTransform":
            return Unproven(name, what, f"a {s.family} prior on a {s.support} parameter has, in the unconstrained "
                            "coordinate the samplers use (u = log of the parameter), a potential whose gradient is "
                            f"unbounded ({UNBOUNDED_POSITIVE[s.family] or 'grows like e^u'}); use a LogNormal prior (a "
                            "Gaussian in log-space) or a HalfCauchy prior, or fix the parameter as a model argument; "
                            "path certificates (ula-path, sgld-path) need only the likelihood and stay available")
        if s.support != "real":
            return Unproven(name, what, f"no rule for a {s.family} prior on a {s.support} parameter (its "
                            "unconstrained potential includes the Jacobian term -log|det J_T|); use a Normal, "
                            "LogNormal or HalfCauchy prior, or fix the parameter as a model argument")
        return Unproven(name, what, f"no rule for a {s.family} prior")
    deps = {k: facts.dep[program.output(name, f"param:{k}")] for k in s.params}
    theta_params = {k: d for k, d in deps.items() if d.theta}
    gaussian = rule in (GAUSSIAN_RULES.values())
    blocking = [k for k in theta_params if not (gaussian and k == "loc")]
    if blocking:
        d = theta_params[blocking[0]]
        fix = ("write the non-centred form (e.g. numpyro.infer.reparam.LocScaleReparam) and clip per-record "
               "gradients, or fix it as a model argument" if gaussian else "no rule covers a hierarchical "
               f"{s.family} prior; use a Normal prior whose loc is affine in the other sites, or fix it")
        return Unproven(name, what, f"its {blocking[0]} depends on the latent site(s) "
                        f"{', '.join(sorted(d.theta))} (through {sp.how(d.via_theta)}); {fix}")
    wanted = {k: program.output(name, f"param:{k}") for k in s.params if k not in theta_params}
    size_dep = any(facts.dep[i].size for i in wanted.values())
    values = evaluate_constants(program.jaxpr, list(wanted.values()), m if size_dep else 1)
    params = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), np.shape(v)) for k, v in zip(wanted, values)}
    try:
        res = rule(params)
    except Unsupported as exc:
        return Unproven(name, what, str(exc))
    if not isinstance(res, GaussianTerm):
        return res
    B = None
    if "loc" in theta_params:
        a = facts.aff[program.output(name, "param:loc")]
        if a.kind != AFFINE:
            return Unproven(name, what, f"its loc depends on the latent sites but is not affine in them "
                            f"({sp.how(a.why)}); a Gaussian prior's loc must be affine in the other sites")
        enclosed = _loc_jacobian(program, name, m)
        if enclosed is None:
            return Unproven(name, what, "its loc is affine in the other latent sites, but the interval arithmetic "
                            "could not bound its coefficients; write the loc as a plain linear expression")
        B, B_err = enclosed
        return GaussianSite(name, res, B, B_err)
    return GaussianSite(name, res, B)


def gaussian_k(program, gauss: list, others: list) -> tuple:
    """(mu, L, provenance) of K = the sum of the Gaussian terms, a quadratic form over every latent
    coordinate: mu = lambda_min(Q), L = lambda_max(Q) for Q = sum_s M_s^T P_s M_s, M_s = E_s - B_s.
    Without hierarchy and with diagonal precisions, Q is diagonal and the bounds are exact.

    Args:
        program: the traced program.
        gauss: the :class:`GaussianSite` of every Gaussian prior.
        others: ``(site, rule)`` of the latent sites with no K part (their coordinates have no curvature in K).

    Returns:
        ``(mu, L, provenance of mu, provenance of L)``.
    """
    names = ", ".join(g.site for g in gauss)
    rules = sorted({g.term.rule for g in gauss})
    if not any(g.B is not None for g in gauss):
        lo = min(g.term.bounds[0] for g in gauss)
        hi = max(g.term.bounds[1] for g in gauss)
        lsite = max(gauss, key=lambda g: g.term.bounds[1])
        msite = min(gauss, key=lambda g: g.term.bounds[0])
        prov_L = f"{lsite.term.rule} @ {lsite.site} (max over blocks)"
        if others:
            return None, hi, (f"unproven: site '{others[0][0]}' ({others[0][1]}) has no strongly convex part, so K is "
                              "not strongly convex in its coordinates"), prov_L
        return lo, hi, f"{msite.term.rule} @ {msite.site} (min over blocks)", prov_L
    offsets, D = {}, 0
    for lat in program.latent:
        n = int(np.prod(program.sites[lat].unconstrained_shape)) or 1
        offsets[lat] = (D, n)
        D += n
    lo, hi = joint_precision_bounds([(g.term, offsets[g.site], g.B, g.B_err) for g in gauss], D)
    what = (f"joint Gaussian prior of {names} ({', '.join(rules)}; eigenvalues of the joint precision, proven: "
            "enclosed products, verified Cholesky)")
    if not lo > 0:
        return None, hi, (f"unproven: the joint Gaussian prior of {names} is not provably strongly convex in every "
                          f"coordinate (the proven lower bound of its precision's smallest eigenvalue is {lo:.3g})"), what
    return lo, hi, what, what


def joint_precision_bounds(parts: list, D: int) -> tuple[float, float]:
    """Proven bounds ``(lo, hi)`` of the eigenvalues of ``Q = sum_s M_s^T P_s M_s`` over ``D`` latent coordinates,
    ``M_s = E_s - B_s`` (``E_s`` selects the site's coordinates, ``B_s`` its loc's Jacobian): ``Q`` is split into
    ``Q^ = sum_s M_s^T P^_s M_s`` with enclosures ``P^_s`` of the precisions (products enclosed exactly,
    :class:`~bayesdp.analysis.spectrum.Enclosed`) and the rest, whose norm is at most
    ``sum_s ||M_s||_2^2 ||P_s - P^_s||_2`` (a diagonal ``1/scale^2`` is within ``4 u`` of its float; a full
    ``(L L^T)^-1`` within the distance of :func:`~bayesdp.analysis.spectrum.inverse_enclosure`).

    Args:
        parts: ``(GaussianTerm, (offset, n), B or None, entrywise error of B or None)`` per Gaussian site.
        D: the number of latent coordinates.

    Returns:
        ``(lo, hi)``, rounded outward (``lo`` may be <= 0 or -inf where nothing positive is proven).

    Examples:
        alpha ~ Normal(mu, 1), mu ~ Normal(0, 1): Q = [[2, -1], [-1, 1]] (coordinates mu, alpha), eigenvalues
        (3 -+ sqrt 5)/2:

        >>> import numpy as np
        >>> from bayesdp.analysis.families import PRIOR_RULES
        >>> from bayesdp.analysis.constants import joint_precision_bounds
        >>> import numpyro.distributions as dist
        >>> normal = PRIOR_RULES[(dist.Normal, "IdentityTransform")]({"scale": np.array([1.0])})
        >>> parts = [(normal, (0, 1), None, None), (normal, (1, 1), np.array([[1.0, 0.0]]), None)]
        >>> lo, hi = joint_precision_bounds(parts, 2)
        >>> lo <= (3 - 5 ** 0.5) / 2 < lo + 1e-12, hi - 1e-12 < (3 + 5 ** 0.5) / 2 <= hi
        (True, True)
    """
    Q = Enclosed.exact(np.zeros((D, D)))
    slack = Fraction(0)
    for term, (o, n), B, B_err in parts:
        E = np.zeros((n, D))
        E[:, o:o + n] = np.eye(n)
        if B is not None:
            B = np.asarray(B, np.float64)
            B = Enclosed(B, np.zeros_like(B) if B_err is None else np.asarray(B_err, np.float64))
        M = Enclosed.exact(E) if B is None else Enclosed.exact(E) - B
        if term.diagonal:
            p_hat = np.asarray(term.precision, np.float64).reshape(-1)
            dist_p = r.mul_up(4 * 2.0 ** -53, float(np.abs(p_hat).max()))     # |1/s^2 - fl(1/fl(s s))| <= 2.01 u
            P = Enclosed.exact(np.diag(p_hat))
        else:
            P, dist_p = inverse_enclosure(term.scale_tril, term.precision)
        if not math.isfinite(dist_p):
            return -math.inf, math.inf
        Q = Q + M.T @ (P @ M)
        mn = r.spectral_up(np.abs(M.val) + M.err)
        slack += Fraction(r.mul_up(mn, mn, dist_p))
    lo, hi = eig_bounds(Q)
    return (r.down(Fraction(lo) - slack) if math.isfinite(lo) else -math.inf,
            r.up(Fraction(hi) + slack) if math.isfinite(hi) else math.inf)


# ---------------------------------------------------------------------------
# likelihoods


def _interval(b) -> tuple[float, float]:
    return float(np.min(b.lo)), float(np.max(b.hi))


def likelihood_site(program, facts, name: str, domain, m: int, arrays) -> LikelihoodFacts | Unproven:
    """The per-record facts of observed site ``name`` (:func:`_likelihood_site`), multiplied by the factor ``c > 0``
    of a ``numpyro.handlers.scale`` by a public constant: the site's term is ``c l_i``, so its gradient bound and
    smoothness are ``c`` times those of ``l_i`` (rounded up) and its convexity is unchanged.

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        name: the observed site.
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        m: the number of records.
        arrays: the validated data, or None (the bounds never read it).

    Returns:
        :class:`~bayesdp.analysis.facts.LikelihoodFacts`, or :class:`~bayesdp.analysis.facts.Unproven` with why.

    Raises:
        DomainError: if the declared range of the response exceeds the family's support, or (with ``arrays``)
            a record's response lies outside it.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.constants import likelihood_site
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> lik = likelihood_site(program, prove(program), "obs", Domain.parse(["X.norm=1", "y.values=0,1"]), 100,
        ...                       None)
        >>> round(lik.grad_bound, 6)
        1.0
    """
    out = _likelihood_site(program, facts, name, domain, m, arrays)
    c = program.sites[name].scale_value if program.sites[name].scaled else None
    if c is None or c == 1.0 or not isinstance(out, LikelihoodFacts):
        return out

    return replace(out, grad_bound=r.mul_up(out.grad_bound, c),
                   grad_diff=None if out.grad_diff is None else r.mul_up(out.grad_diff, c),
                   smoothness=None if out.smoothness is None else r.mul_up(out.smoothness, c),
                   detail=f"{out.detail}; times the public scale {c:g} of numpyro.handlers.scale (rounded up)")


def sp_data_of_blocks(blocks) -> list:
    """For each Jacobian block, whether it carries a linear form in the records (it reads data)."""
    return [getattr(bl, "lin", None) is not None for bl in blocks.values()]


def _up(x):
    return np.nextafter(x, np.inf)


def _dn(x):
    return np.nextafter(x, -np.inf)


#: relative error allowed for libm's expm1 (well under 1 ulp in glibc and macOS; 1e-12 is thousands of ulps)
_LIBM_REL = 1e-12


def _one_entry(program, name: str, z) -> bool:
    """Whether a record of site ``name`` has ONE loc, ONE scale and ``z`` has one entry per record (the joint
    bounds treat one residual and one scale per record)."""
    for k in ("loc", "scale"):
        i = program.output(name, f"param:{k}")
        if i is None or int(np.prod(conc(program.jaxpr.out_avals[i].shape))) != 1:
            return False
    return int(np.prod(conc(z.aval.shape))) == 1


def floored_student_bound(nu_lo: float, nu_hi: float, s_lo: float, c: float, g_loc: float, g_z: float,
                          disjoint: bool, cells: int = 4000) -> float:
    """An upper bound of the per-record gradient norm of a Student-t likelihood whose scale is
    ``s = c + softplus(z)`` (``c`` a public number, ``s >= s_lo >= c``), jointly over the residual and the scale
    (docs/analysis.md, "Student-t / Cauchy with a latent scale bounded below").

    With ``x = r/s``: ``dl/dloc = a(x)/s``, ``dl/ds = b(x)/s``, ``a = (nu+1) x/(nu + x^2)``, ``b = nu (1 - x^2)/(nu +
    x^2)``; ``ds/dz = sigmoid(z) = 1 - exp(-softplus(z)) = 1 - exp(-(s - c)) =: g(s)``, increasing in ``s``.  So
    ``|grad| <= (|a| G_loc + |b| g(s) G_z)/s`` (triangle), or ``sqrt(a^2 G_loc^2 + b^2 g(s)^2 G_z^2)/s`` when loc
    and z depend on disjoint latent sites (``disjoint``, one ``nu``).  In the second case, with ``u = 1/(nu + x^2)``
    in ``(0, 1/nu]``, ``a^2 G_loc^2 + b^2 w = A u^2 + B u + C`` (``alpha = G_loc^2 (nu+1)^2``, ``w = g^2 G_z^2``,
    ``A = w nu^2 (nu+1)^2 - alpha nu``, ``B = alpha - 2 w nu^2 (nu+1)``, ``C = w nu^2``): its supremum is ``C -
    B^2/(4A)`` (at most) when ``A < 0``, ``max(w, C)`` (the ends) when ``A >= 0``.  Over ``s``: cells ``[s1, s2]``
    (geometric in ``s - s_lo`` from 1e-6 to ``1e4 max(1, s_lo)``) bound ``1/s <= 1/s1`` and ``g(s) <= g(s2)``;
    beyond the last point ``g <= 1``.  Every operation is rounded outward (``nextafter``; ``expm1`` inflated by
    ``_LIBM_REL``).

    Args:
        nu_lo: the smallest ``df`` over the domain (1 for Cauchy).
        nu_hi: the largest ``df``.
        s_lo: a lower bound of the scale over theta and the domain (``>= c > 0``).
        c: the public floor ``c``.
        g_loc: an upper bound of ``|d loc / d theta|`` at one record.
        g_z: an upper bound of ``|d z / d theta|`` at one record.
        disjoint: loc and ``z`` depend on disjoint latent sites (and ``nu_lo == nu_hi``).
        cells: the number of cells in ``s``.

    Returns:
        The bound (a float, rounded up; ``inf`` if it overflows).

    Raises:
        Nothing: every input is a float the caller has checked.

    Examples:
        >>> b = floored_student_bound(4.0, 4.0, 0.5, 0.5, 1.0, 1.0, True)
        >>> 2.5 <= b <= 2.5 * (1 + 1e-9)     # (df+1)/(2 s0 sqrt(df)): the limit u -> -inf, the supremum here
        True
    """
    top = 1e4 * max(1.0, s_lo)
    d = np.concatenate([[0.0], np.geomspace(1e-6, top, cells)])
    s1 = _dn(s_lo + d[:-1])
    s2 = _up(s_lo + d[1:])
    s1 = np.maximum(s1, s_lo) if s_lo > 0 else s1
    s1[0] = s_lo
    s_end = _dn(s_lo + d[-1])
    with np.errstate(all="ignore"):
        g2 = np.minimum(1.0, _up(-np.expm1(-_up(np.maximum(s2 - c, 0.0))) * (1 + _LIBM_REL)))
        g2 = np.concatenate([g2, [1.0]])
        s1 = np.concatenate([s1, [s_end]])
        if disjoint and nu_lo == nu_hi:
            nu = nu_lo
            w = _up(_up(g2 * g2) * _up(g_z * g_z))
            alpha = _up(_up(g_loc * g_loc) * _up((nu + 1) * (nu + 1)))
            alpha_lo = _dn(_dn(g_loc * g_loc) * _dn((nu + 1) * (nu + 1)))
            k1, k1d = _up(_up(nu * nu) * _up((nu + 1) * (nu + 1))), _dn(_dn(nu * nu) * _dn((nu + 1) * (nu + 1)))
            k2, k2d = _up(2 * _up(nu * nu) * (nu + 1)), _dn(2 * _dn(nu * nu) * (nu + 1))
            # Phi(w) = sup_u (A u^2 + B u + C) increases with w (F = alpha(u - nu u^2) + w (nu((1+nu)u - 1))^2):
            # Phi at the float w (>= the cell's g^2 G_z^2) bounds the cell; w is one number, A and B intervals only
            # from rounding
            w_lo = w
            a_hi = _up(_up(w * k1) - _dn(alpha_lo * nu))
            a_lo = _dn(_dn(w_lo * k1d) - _up(alpha * nu))
            b_hi, b_lo = _up(alpha - _dn(w_lo * k2d)), _dn(alpha_lo - _up(w * k2))
            b_abs = np.maximum(np.abs(b_hi), np.abs(b_lo))
            c_hi = _up(w * _up(nu * nu))
            ends = np.maximum(w, c_hi)
            neg = a_hi < 0
            vertex = _up(c_hi + _up(_up(b_abs * b_abs) / _dn(4 * -np.where(neg, a_hi, -1.0))))
            crude = _up(_up(alpha / _dn(4 * nu)) + _up(w * max(1.0, _up(nu * nu))))
            # A < 0: the vertex u_v = B/(2|A|) lies in (0, 1/nu) unless B <= 0 (then the maximum is at u = 0) or
            # B >= 2|A|/nu (then at u = 1/nu): the ends
            outside = (b_hi <= 0) | ((b_lo > 0) & (b_lo >= _up(_up(2 * -a_lo) / nu)))
            phi = np.where(neg, np.where(outside, ends, np.maximum(vertex, ends)), np.where(a_lo >= 0, ends, crude))
            vals = _up(_up(np.sqrt(phi)) / s1)
        else:
            a_m = max(r.div_up(nu + 1, r.mul_up(2, r.sqrt_down(nu))) for nu in (nu_lo, nu_hi))
            b_m = max(1.0, nu_hi)
            vals = _up(_up(r.mul_up(a_m, g_loc) + _up(_up(b_m * g2) * g_z)) / s1)
    out = float(np.max(vals))
    if not math.isfinite(out):
        return math.inf
    return out


def _student_latent_scale(program, facts, name: str, domain, m: int) -> LikelihoodFacts | None:
    """Student-t / Cauchy likelihood whose scale depends on theta but is bounded below by ``s_lo > 0`` over all
    theta and the domain (a floor: ``s = s0 + softplus(u)``), with ``df`` fixed.

    ``l = log s + (nu+1)/2 log(1 + r^2/(nu s^2))``, ``r = y - loc``: ``|dl/dloc| = (nu+1)|r|/(nu s^2 + r^2) <=
    (nu+1)/(2 s sqrt(nu))`` and ``dl/ds = (1 - (nu+1) q)/s`` with ``q = r^2/(nu s^2 + r^2)`` in ``[0, 1)``, so
    ``|dl/ds| <= max(1, nu)/s``.  With ``s >= s_lo`` (the scale's box) and the Jacobians of loc and scale bounded
    (``G_loc``, ``G_s``): ``|grad| <= max_nu (nu+1)/(2 s_lo sqrt(nu)) G_loc + max(1, nu_hi)/s_lo G_s`` (triangle
    inequality).  No smoothness or convexity is claimed.  None when a hypothesis fails (the caller refuses)."""

    s = program.sites[name]
    cauchy = s.dist_type is dist.Cauchy
    params = ["loc", "scale"]
    for k in params:
        a = facts.aff[program.output(name, f"param:{k}")]
        if not a.grad_ok:
            return None
    idx = [program.output(name, "param:scale")] + ([] if cauchy else [program.output(name, "param:df")])
    if not cauchy:
        dd, da = facts.dep[idx[1]], facts.aff[idx[1]]
        if dd.theta or da.kind != CONST:
            return None
    bs = sp.bound_outputs(program, domain, m, idx)
    s_lo = float(np.min(bs[0].lo))
    if not (math.isfinite(s_lo) and s_lo > 0):
        return None
    nu_lo, nu_hi = (1.0, 1.0) if cauchy else (float(np.min(bs[1].lo)), float(np.max(bs[1].hi)))
    if not (nu_lo > 0 and math.isfinite(nu_hi)):
        return None
    try:
        blocks = sp.jacobian_bounds(program, domain, m, [(name, k) for k in params])
    except Exception:  # noqa: BLE001 - e.g. forward mode undefined: not proven
        return None
    pred_shape = conc(program.jaxpr.out_avals[program.output(name, "param:loc")].shape)
    G = {}
    for k in params:
        rows = [sp.rows_of(blocks[(name, k, lat)], len(pred_shape)) for lat in program.latent
                if (name, k, lat) in blocks]
        G[k] = sp.operator_norm_bound(rows, domain)[0] if rows else 0.0
        if not math.isfinite(G[k]):
            return None
    a_loc = r.sqrt_up(max(student_score_sq(nu_lo, s_lo), student_score_sq(nu_hi, s_lo)))
    b_s = r.div_up(max(1.0, nu_hi), s_lo)
    bound = r.add_up(r.mul_up(a_loc, G["loc"]), r.mul_up(b_s, G["scale"]))
    fam = "Cauchy" if cauchy else "StudentT"
    detail = (f"{fam} with a latent scale bounded below: scale >= {s_lo:.6g} over theta and the domain, df in "
              f"[{nu_lo:g}, {nu_hi:g}]; |dl/dloc| <= (df+1)/(2 scale sqrt(df)) <= {a_loc:.6g}, |dl/dscale| <= "
              f"max(1, df)/scale <= {b_s:.6g}; |J_loc| <= {G['loc']:.6g}, |J_scale| <= {G['scale']:.6g}; "
              "no convexity or smoothness claimed")
    joint = _floored_joint(program, facts, name, domain, m, s_lo, nu_lo, nu_hi, G["loc"],
                           {lat: blocks[(name, "loc", lat)] for lat in program.latent if (name, "loc", lat) in blocks})
    if joint is not None and joint[0] < bound:
        bound, how_joint = joint
        detail += (f"; jointly over the residual and the scale (the scale is {how_joint}; docs/analysis.md, "
                   f"'Student-t / Cauchy with a latent scale bounded below', the joint bound): {bound:.6g}")
    return LikelihoodFacts(name, f"{fam}(loc, scale) likelihood, latent scale with a floor", bound, None, False,
                           detail)


def _columns(bound, n_lead: int) -> np.ndarray:
    """The latent coordinates (columns) a Jacobian block can be nonzero in: its box's, and its linear form's
    constant part's and coefficients' (a column outside is 0 for every record of the domain)."""
    b = sp.rows_of(bound, n_lead)
    cols = np.any((np.asarray(b.lo) != 0) | (np.asarray(b.hi) != 0), axis=0)
    if b.lin is not None:
        f = b.lin
        cols = cols | np.any((np.asarray(f.clo) != 0) | (np.asarray(f.chi) != 0), axis=0)
        for lo_, hi_ in f.A.values():
            cols = cols | np.any((np.asarray(lo_) != 0) | (np.asarray(hi_) != 0), axis=(0, 2))
    return cols


def _disjoint_blocks(a: dict, na: int, b: dict, nb: int) -> bool:
    """Whether two Jacobians (latent site -> block) are nonzero on disjoint latent coordinates (then orthogonal)."""
    for lat in set(a) & set(b):
        ca, cb = _columns(a[lat], na), _columns(b[lat], nb)
        if ca.shape != cb.shape or np.any(ca & cb):
            return False
    return True


def _floored_joint(program, facts, name: str, domain, m: int, s_lo: float, nu_lo: float, nu_hi: float,
                   g_loc: float, loc_blocks: dict | None = None):
    """``(bound, how)`` of :func:`floored_student_bound` when the scale of site ``name`` is ``c + softplus(z)``
    with ``c`` a number written in the program (:func:`~bayesdp.analysis.structure.program.softplus_floor_input`)
    and ``z``'s Jacobian bounded over theta and the domain; None otherwise (the product rule stands)."""
    scale_var = program.jaxpr.jaxpr.outvars[program.output(name, "param:scale")]
    got = sp.softplus_floor_input(program, scale_var)
    if got is None:
        return None
    z, c = got
    if not (math.isfinite(c) and c > 0):
        return None
    if not _one_entry(program, name, z):
        return None
    s_lo = max(s_lo, c)                      # s = c + softplus(z) >= c (softplus >= 0; rounding is monotone)
    try:
        ext = sp.prove(program, program.with_outputs([z]))
        zd, za = ext.dep[-1], ext.aff[-1]
        if not za.grad_ok:
            return None
        blocks = sp.var_jacobian_bounds(program, domain, m, z)
    except Exception:  # noqa: BLE001 - e.g. forward mode undefined: not proven, the product rule stands
        return None
    z_shape = conc(z.aval.shape)
    rows = [sp.rows_of(blocks[lat], len(z_shape)) for lat in program.latent if lat in blocks]
    g_z = sp.operator_norm_bound(rows, domain)[0] if rows else 0.0
    if not math.isfinite(g_z):
        return None
    loc_sites = set(facts.dep[program.output(name, "param:loc")].theta)
    disjoint = not (loc_sites & set(zd.theta))
    if not disjoint and loc_blocks is not None:
        # sites shared (one vector latent): orthogonal if the two Jacobians use disjoint coordinates of it
        n_loc = len(conc(program.jaxpr.out_avals[program.output(name, "param:loc")].shape))
        try:
            disjoint = _disjoint_blocks(loc_blocks, n_loc, blocks, len(z_shape))
        except (ValueError, AttributeError):  # shapes not as assumed: not proven disjoint
            disjoint = False
    disjoint = disjoint and nu_lo == nu_hi
    b = floored_student_bound(nu_lo, nu_hi, s_lo, c, g_loc, g_z, disjoint)
    how_ = (f"{c:g} + softplus(z), |J_z| <= {g_z:.6g}, d scale/dz = sigmoid(z) = 1 - exp(-(scale - {c:g})); "
            + ("loc and z on disjoint latent sites: sqrt(a^2 |J_loc|^2 + b^2 g^2 |J_z|^2)/scale" if disjoint else
               "(|a| |J_loc| + |b| g |J_z|)/scale"))
    return (b, how_) if math.isfinite(b) else None


def tanh_input(program, var):
    """If ``var`` is ``A * tanh(eta)`` (either order; ``A`` a number written in the program; through ops that keep
    its elements), ``(eta, A)``; else None."""
    v = var
    for _ in range(16):
        e = program.producer(v)
        if e is None:
            return None
        name = e.primitive.name
        if name == "mul" and len(e.invars) == 2:
            for a, b in (e.invars, e.invars[::-1]):
                amp = sp._literal_value(program, a)
                t = program.producer(b) if amp is not None else None
                if t is not None and t.primitive.name == "tanh" and sp._element_count(b) == sp._element_count(v) and \
                        not hasattr(t.invars[0], "val") and sp._element_count(t.invars[0]) == sp._element_count(b):
                    return t.invars[0], amp
            return None
        if name in sp._SHAPE_KEEPING and sp._element_count(e.invars[0]) == sp._element_count(v):
            v = e.invars[0]
            continue
        return None
    return None


def floored_normal_bound(y_lo: float, y_hi: float, loc_cells: list, s_lo: float, c: float, g_z: float,
                         cells: int = 600) -> float:
    """An upper bound of the per-record gradient norm of a Normal likelihood with a bounded location and a scale
    ``s = c + softplus(z)`` (``c`` public, ``s >= s_lo >= c``), loc and ``z`` on disjoint latent sites
    (docs/analysis.md, "Normal with a bounded location and a floored latent scale").

    ``l = log s + r^2/(2 s^2)``, ``r = y - loc``: ``|grad|^2 = r^2 |J_loc|^2/s^4 + (1/s - r^2/s^3)^2 g(s)^2 |J_z|^2``
    with ``g(s) = ds/dz = 1 - exp(-(s - c))``.  ``loc_cells`` is a list of ``(loc_lo, loc_hi, K)``: over the
    part of theta where loc lies in ``[loc_lo, loc_hi]``, ``|J_loc|^2 <= K``.  On a cell ``[s1, s2]`` x a loc cell,
    with ``rho = r^2`` in ``[0, rho_hi]`` (``rho_hi`` the largest ``(y - loc)^2`` at the boxes' corners: convex),
    ``|1/s - rho/s^3| <= D(rho)``, the larger end of the interval ``[1/s2 - rho/s1^3, 1/s1 - rho/s2^3]``, and
    ``U(rho) = rho K/s1^4 + D(rho)^2 g(s2)^2 |J_z|^2`` is convex in ``rho`` (a sum of convex functions): its
    maximum is at ``rho = 0`` or ``rho_hi``.  Beyond the last ``s`` point ``g <= 1``.  Every operation rounded
    outward.

    Args:
        y_lo: the response's smallest value over the domain.
        y_hi: its largest.
        loc_cells: ``(loc_lo, loc_hi, K)`` covering every value of loc over theta and the domain.
        s_lo: a lower bound of the scale (``>= c > 0``).
        c: the public floor.
        g_z: an upper bound of ``|d z/d theta|`` at one record.
        cells: the number of cells in ``s``.

    Returns:
        The bound (a float, rounded up; ``inf`` if it overflows).

    Raises:
        Nothing: every input is a float the caller has checked.

    Examples:
        >>> b = floored_normal_bound(-3.0, 3.0, [(-2.0, 2.0, 4.0)], 0.5, 0.5, 1.0)
        >>> 40.0 <= b <= 40.0 * 1.05          # r = 5, |J_loc| = 2 at s = s0: 5 * 2 / 0.25
        True
    """
    top = 1e4 * max(1.0, s_lo)
    d = np.concatenate([[0.0], np.geomspace(1e-6, top, cells)])
    s1 = np.concatenate([np.maximum(_dn(s_lo + d[:-1]), s_lo), [_dn(s_lo + d[-1])]])
    s2 = np.concatenate([_up(s_lo + d[1:]), [np.inf]])
    with np.errstate(all="ignore"):
        g2 = np.minimum(1.0, _up(-np.expm1(-_up(np.maximum(s2 - c, 0.0))) * (1 + _LIBM_REL)))
        g2[-1] = 1.0
        w = _up(_up(g2 * g2) * _up(g_z * g_z))
        inv_lo, inv_hi = np.where(np.isinf(s2), 0.0, _dn(1.0 / s2)), _up(1.0 / s1)
        c1_lo = _dn(_dn(s1 * s1) * s1)                      # s1^3, s2^3 rounded down/up
        c2_hi = np.where(np.isinf(s2), np.inf, _up(_up(s2 * s2) * s2))
        s1_4 = _dn(_dn(s1 * s1) * _dn(s1 * s1))
        best = 0.0
        for lo, hi, K in loc_cells:
            dist_hi = max(_up(abs(y - l)) for y in (y_lo, y_hi) for l in (lo, hi))   # |y - loc| at a corner
            rho = float(_up(dist_hi * dist_hi))
            for rr in (0.0, rho):
                q_lo = np.where(np.isinf(c2_hi), 0.0, _dn(rr / c2_hi))
                q_hi = _up(rr / c1_lo)
                dd = np.maximum(np.abs(_up(inv_hi - q_lo)), np.abs(_dn(inv_lo - q_hi)))
                u = _up(_up(_up(rr * K) / s1_4) + _up(_up(dd * dd) * w))
                best = max(best, float(np.max(_up(np.sqrt(u)))))
    return best if math.isfinite(best) else math.inf


def _normal_floored(program, facts, name: str, domain, m: int) -> LikelihoodFacts | None:
    """Normal likelihood whose loc is bounded over theta and the domain and whose scale is ``c + softplus(z)``
    (``c`` a public number), loc and z on disjoint latent sites: :func:`floored_normal_bound`, with the loc cells
    of ``A * tanh(eta)`` (``|J_loc| = |A| (1 - t^2) |J_eta|``, ``t = tanh(eta)`` in cells of ``[-1, 1]``) when
    loc is written so, else one cell (loc's box, ``sup |J_loc|``).  None when a hypothesis fails."""
    s = program.sites[name]
    if s.dist_type is not dist.Normal or s.wrappers and any(
            w not in ("Independent", "ExpandedDistribution", "MaskedDistribution") for w in s.wrappers):
        return None
    loc_i, scale_i, value_i = (program.output(name, "param:loc"), program.output(name, "param:scale"),
                               program.output(name, "value"))
    if loc_i is None or scale_i is None or value_i is None:
        return None
    if not (facts.aff[loc_i].grad_ok and facts.aff[scale_i].grad_ok):
        return None
    got = sp.softplus_floor_input(program, program.jaxpr.jaxpr.outvars[scale_i])
    if got is None:
        return None
    z, c = got
    if not (math.isfinite(c) and c > 0) or not _one_entry(program, name, z):
        return None
    try:
        bs = sp.bound_outputs(program, domain, m, [loc_i, scale_i, value_i])
        ext = sp.prove(program, program.with_outputs([z]))
        if not ext.aff[-1].grad_ok:
            return None
        zb = sp.var_jacobian_bounds(program, domain, m, z)
        lb = sp.jacobian_bounds(program, domain, m, [(name, "loc")])
    except Exception:  # noqa: BLE001 - forward mode undefined, ...: not proven
        return None
    loc_lo, loc_hi = float(np.min(bs[0].lo)), float(np.max(bs[0].hi))
    y_lo, y_hi = float(np.min(bs[2].lo)), float(np.max(bs[2].hi))
    s_lo = max(float(np.min(bs[1].lo)), c)
    if not all(math.isfinite(v) for v in (loc_lo, loc_hi, y_lo, y_hi)):
        return None
    if set(facts.dep[loc_i].theta) & set(ext.dep[-1].theta):
        return None
    z_rows = [sp.rows_of(zb[lat], len(conc(z.aval.shape))) for lat in program.latent if lat in zb]
    g_z = sp.operator_norm_bound(z_rows, domain)[0] if z_rows else 0.0
    loc_shape = conc(program.jaxpr.out_avals[loc_i].shape)
    l_rows = [sp.rows_of(lb[(name, "loc", lat)], len(loc_shape)) for lat in program.latent if (name, "loc", lat) in lb]
    g_loc = sp.operator_norm_bound(l_rows, domain)[0] if l_rows else 0.0
    if not (math.isfinite(g_z) and math.isfinite(g_loc)):
        return None
    loc_cells = [(loc_lo, loc_hi, r.mul_up(g_loc, g_loc))]
    how_loc = f"loc in [{loc_lo:.6g}, {loc_hi:.6g}], |J_loc| <= {g_loc:.6g}"
    th = tanh_input(program, program.jaxpr.jaxpr.outvars[loc_i])
    if th is not None:
        eta, amp = th
        try:
            eb = sp.var_jacobian_bounds(program, domain, m, eta)
            e_rows = [sp.rows_of(eb[lat], len(conc(eta.aval.shape))) for lat in program.latent if lat in eb]
            g_eta = sp.operator_norm_bound(e_rows, domain)[0] if e_rows else 0.0
        except Exception:  # noqa: BLE001
            g_eta = math.inf
        if math.isfinite(g_eta) and math.isfinite(amp):
            # t = tanh(eta) in cells of [-1, 1]: loc = A t in [A t1, A t2] (ordered), |J_loc| <= |A| max(1 - t^2) G_eta
            ts = np.linspace(-1.0, 1.0, 401)
            cells_ = []
            for t1, t2 in zip(ts[:-1], ts[1:]):
                t_near = 0.0 if t1 <= 0.0 <= t2 else min(abs(t1), abs(t2))
                sech2 = float(_up(1.0 - _dn(t_near * t_near)))
                k = r.mul_up(abs(amp), sech2, g_eta)
                lo_, hi_ = sorted((float(_dn(amp * t1)), float(_up(amp * t2))))
                lo_, hi_ = min(lo_, float(_dn(amp * t2))), max(hi_, float(_up(amp * t1)))
                cells_.append((lo_, hi_, r.mul_up(k, k)))
            loc_cells = cells_
            how_loc = (f"loc = {amp:g} tanh(eta), |J_loc| = |{amp:g}| (1 - tanh(eta)^2) |J_eta|, |J_eta| <= "
                       f"{g_eta:.6g}, in 400 cells of tanh(eta)")
    b = floored_normal_bound(y_lo, y_hi, loc_cells, s_lo, c, g_z)
    if not math.isfinite(b):
        return None
    detail = (f"Normal with a bounded location and a floored latent scale {c:g} + softplus(z) (scale >= {s_lo:.6g}, "
              f"|J_z| <= {g_z:.6g}, d scale/dz = 1 - exp(-(scale - {c:g}))); {how_loc}; response in [{y_lo:g}, "
              f"{y_hi:g}]; sqrt(r^2 |J_loc|^2/s^4 + (1/s - r^2/s^3)^2 g^2 |J_z|^2) over cells of s and loc, convex in "
              "r^2 (docs/analysis.md); no convexity or smoothness claimed")
    return LikelihoodFacts(name, "Normal(loc, scale) likelihood, bounded location, latent scale with a floor", b, None,
                           False, detail)


def _likelihood_site(program, facts, name: str, domain, m: int, arrays) -> LikelihoodFacts | Unproven:
    """An observed site's per-record gradient bound, smoothness and convexity: its family rule applied to its
    predictor (proven affine, Jacobian bounded over the declared domain), else the generic rule.

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        name: the observed site.
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        m: the number of records.
        arrays: the validated data, or None (the bounds never read it).

    Returns:
        :class:`~bayesdp.analysis.facts.LikelihoodFacts`, or :class:`~bayesdp.analysis.facts.Unproven` with why.

    Raises:
        DomainError: if the declared range of the response exceeds the family's support, or (with ``arrays``)
            a record's response lies outside it.

    Examples:
        Logistic regression, rows of norm <= 1: gradient <= 1, smoothness <= 1/4 (inflated for float data):

        >>> import numpy as np
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.structure.sites import check_sites
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> facts = prove(program)
        >>> domain = Domain.parse(["X.norm=1", "y.values=0,1"])
        >>> from bayesdp.analysis.constants import likelihood_site
        >>> lik = likelihood_site(program, facts, "obs", domain, 100, None)
        >>> round(lik.grad_bound, 6), round(lik.smoothness, 6), lik.convex
        (1.0, 0.25, True)
    """
    s = program.sites[name]
    what = "per-record gradient bound"
    rule = LIKELIHOOD_RULES.get(s.dist_type)
    pred_var = None
    clipped_probs = False
    clip_range = None
    logits_hint = f"write {s.family.replace('Probs', '')}(logits=eta) with eta the predictor (the family's rule needs " \
                  "the logits)"

    def generic(context: str, hint: str = ""):
        # no family rule applies: the generic rule (bounded gradient only, no convexity or smoothness)
        return generic_site(program, facts, name, domain, m, context, hint)
    if s.family == "Unit":
        return generic("a numpyro.factor (a free-form per-record log-density term: no family rule)")
    if s.dist_type in PROBS_AS_LOGITS:
        # probs = sigmoid(eta): the family in its natural parameter eta (logistic / binomial-logit rule)
        rule = LIKELIHOOD_RULES[PROBS_AS_LOGITS[s.dist_type]]
        probs_var = program.jaxpr.jaxpr.outvars[program.output(name, "param:probs")]
        pred_var = sp.sigmoid_input(program, probs_var)
        if pred_var is None:
            # clip(sigmoid(u)): a unit-interval latent site (e.g. p ~ Beta(a, b)) or a hand-written clip used as
            # probs; its derivative is the logits rule's times the clip's (0, 1/2 or 1), with s in [lo, hi] where
            # the clip lets it through
            got = sp.clipped_sigmoid_input(program, _one_value(program, probs_var))
            if got is not None:
                pred_var, clip_range = got[0], (got[1], got[2])
        # NumPyro's probs log-densities clamp the probability (clamp_probs: clip(p, tiny, 1 - eps)), so the score
        # falls from about 1 to 0 where sigmoid(eta) rounds past 1 - eps (|eta| ~ 16 in float32, 36 in float64): the
        # logits rule's gradient bound holds (the clamp's derivative is 0, 1/2 or 1), its smoothness and convexity
        # do not (a jump of the gradient); write logits=eta for them
        clipped_probs = pred_var is not None
        if pred_var is None:
            return generic("its probs is not jax.nn.sigmoid of a predictor (the logits rule does not apply)",
                           logits_hint)
    if s.dist_type in LOG_LINK:
        # the family in eta = log(mean) (or -log(rate) up to a theta-free constant), found from the program
        var = program.jaxpr.jaxpr.outvars[program.output(name, f"param:{LOG_LINK[s.dist_type]}")]
        pred_var = sp.log_link_input(program, var)
        if pred_var is None:
            return generic(f"its {LOG_LINK[s.dist_type]} is not exp of a predictor (times a theta-free factor): the "
                           "log-link rule does not apply",
                           "write NegativeBinomial2(mean=jnp.exp(eta), concentration=k) with k a public constant")
    if rule is None and s.family in ZI_FAMILIES:
        out = _zip_site(program, facts, name, domain, m)
        if isinstance(out, LikelihoodFacts):
            return out
        return generic(f"the zero-inflated Poisson rule does not apply ({out})",
                       "write ZeroInflatedPoisson(gate, jnp.exp(jnp.clip(eta, lo, hi))) with gate a public constant or "
                       "jax.nn.sigmoid of a predictor, and declare the counts' range (--domain y.values=0..B)")
    if rule is None:
        return generic(f"no family rule for a {s.family} likelihood",
                       logits_hint if s.family.endswith("Probs") else "")
    if rule.refuse and s.family == "Poisson":
        out = _zip_site(program, facts, name, domain, m)
        if isinstance(out, LikelihoodFacts):
            return out        # a rate bounded over theta and the domain (a clipped log-rate): its own rule
    if rule.refuse and s.family == "Normal":
        out = _normal_floored(program, facts, name, domain, m)
        if isinstance(out, LikelihoodFacts):
            return out        # a bounded location and a floored latent scale: its own rule
    if rule.refuse:
        return generic(f"{rule.refuse} in general")
    extra = [w for w in s.wrappers if w not in ("Independent", "ExpandedDistribution", "MaskedDistribution")]
    if extra:
        return generic(f"no family rule for a {extra[0]} around a {s.family} likelihood")
    if pred_var is None:
        pred_i = program.output(name, f"param:{rule.predictor}")
        pd, pa = facts.dep[pred_i], facts.aff[pred_i]
        pred_aval = program.jaxpr.out_avals[pred_i]
    else:
        ext = sp.prove(program, program.with_outputs([pred_var]))
        pd, pa, pred_aval = ext.dep[-1], ext.aff[-1], pred_var.aval

    # fixed parameters: theta-free, bounded over the domain
    fixed_i = {}
    for attr in rule.fixed:
        i = program.output(name, f"param:{attr}")
        d, a = facts.dep[i], facts.aff[i]
        if (d.theta or a.kind != CONST) and s.dist_type in (dist.StudentT, dist.Cauchy) and attr == "scale":
            # a latent scale bounded below over all theta and the domain (a floor): its own rule
            out = _student_latent_scale(program, facts, name, domain, m)
            if isinstance(out, LikelihoodFacts):
                return out
        if d.theta or a.kind != CONST:
            how_ = f"through {sp.how(d.via_theta)}" + (f", then {sp.how(a.why)}" if a.why is not None else "")
            if not a.grad_ok and a.why_grad is not None and a.why_grad is not a.why:
                how_ += f"; hidden from the gradient by {sp.how(a.why_grad)}"

            return Unproven(name, what, f"its {attr} depends on the latent sites ({how_}); {rule.family} needs a "
                            f"fixed {attr}{growth_and_rewrite(program, facts, name)}; or fix it as a model argument, "
                            "compute it from the data only, or clip per-record gradients (--clip-norm G)")
        fixed_i[attr] = i
    value_i = program.output(name, "value")
    bounds = sp.bound_outputs(program, domain, m, list(fixed_i.values()) + [value_i])
    fixed = {attr: _interval(b) for attr, b in zip(fixed_i, bounds)}
    # the elementwise boxes too, for rules that need more than the hull (OrderedLogistic: ordered cutpoints)
    fixed.update({f"_box:{attr}": (np.asarray(b.lo), np.asarray(b.hi)) for attr, b in zip(fixed_i, bounds)})
    resp = _interval(bounds[-1])
    pred_shape = conc(pred_aval.shape)
    try:
        lo_s, hi_s, integer = rule.support(fixed, pred_shape) if rule.support is not None else (-math.inf, math.inf,
                                                                                                  False)
    except Unsupported as exc:
        return Unproven(name, what, str(exc))
    arg = _response_arg(program, name)
    if rule.support is not None:
        if not (math.isfinite(resp[0]) and math.isfinite(resp[1])):
            if arg is None:
                return Unproven(name, what, f"its observed value is unbounded over the declared domain (through "
                                f"{sp.how(bounds[-1].why)}); declare the range of the data it is computed from")
            resp = (lo_s, hi_s)
        elif resp[0] < lo_s or resp[1] > hi_s:
            who = f"domain of {arg}" if arg else "the observed value's range over the domain"
            raise DomainError(f"{who} = [{resp[0]:g}, {resp[1]:g}] exceeds the {rule.family} support "
                              f"[{lo_s:g}, {hi_s:g}] of site '{name}'; declare {arg or 'the response'} within the "
                              "support")
        if arrays is not None and arg is not None:
            y = np.asarray(arrays[arg], dtype=np.float64)
            bad = (y < lo_s) | (y > hi_s) | ((np.floor(y) != y) if integer else False)
            if np.any(bad):
                i = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
                raise DomainError(f"data {arg}[{i}] is outside the {rule.family} support [{lo_s:g}, {hi_s:g}] of "
                                  f"site '{name}'; fix the data")
    try:
        unit_score = float(rule.score_bound(fixed, resp))
        if clip_range is not None and s.dist_type in (dist.BernoulliProbs, dist.BinomialProbs):
            # s = sigmoid(eta) in [lo, hi] where the clip's derivative is not 0: psi = n s - y in
            # [n_lo lo - y_hi, n_hi hi - y_lo] (Bernoulli: n = 1)
            n_lo, n_hi = fixed.get("total_count", (1.0, 1.0))
            lo_c, hi_c = (Fraction(v) for v in clip_range)
            unit_score = min(unit_score, max(r.up(Fraction(n_hi) * hi_c - Fraction(resp[0])),
                                             r.up(Fraction(resp[1]) - Fraction(n_lo) * lo_c), 0.0))

        takes_y = len(inspect.signature(rule.hessian_bound).parameters) >= 2
        unit_hess = float(rule.hessian_bound(fixed, resp) if takes_y else rule.hessian_bound(fixed))
    except Unsupported as exc:
        return Unproven(name, what, str(exc))

    # the predictor's Jacobian in theta, bounded over the domain (and over theta when not affine)
    affine = pa.kind in (AFFINE, CONST)
    if not affine and not pa.grad_ok:
        return Unproven(name, what, f"its {rule.predictor} is not proven continuous in theta with JAX's derivative "
                        f"as its derivative ({sp.how(pa.why_grad)}: a jump such as sign/floor or a branch chosen by "
                        "theta, an unknown primitive, stop_gradient (jax.lax.cond under jax.vmap inserts one: use "
                        f"jnp.where) or a custom derivative){sp.switch_hint(pa.why_grad)}; write an affine or "
                        "Lipschitz predictor, or clip "
                        "per-record gradients (--clip-norm G)")
    try:
        if pred_var is None:
            blocks = sp.jacobian_bounds(program, domain, m, [(name, rule.predictor)])
            blocks = {lat: blocks[(name, rule.predictor, lat)] for lat in program.latent
                      if (name, rule.predictor, lat) in blocks}
        else:
            blocks = sp.var_jacobian_bounds(program, domain, m, pred_var)
    except Exception as exc:  # e.g. forward-mode differentiation not defined (custom_vjp)
        return Unproven(name, what, f"its {rule.predictor} could not be differentiated in theta "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''})")
    n_lead = len(pred_shape)
    rows = [sp.rows_of(blocks[lat], n_lead) for lat in program.latent if lat in blocks]
    jop, how_rows = sp.operator_norm_bound(rows, domain)
    if not math.isfinite(jop):
        why = next((b.why for b in rows if b.why is not None), None)
        unbounded_args = [a for a in sorted(pd.data) if domain.get(a) is None]
        if unbounded_args:
            fix = (f"argument {unbounded_args[0]} enters it but has no declared domain; declare e.g. --domain "
                   f"{unbounded_args[0]}.norm=R or --domain {unbounded_args[0]}.min=A --domain "
                   f"{unbounded_args[0]}.max=B")
        elif not affine:
            fix = (f"it is not affine in the latent sites ({sp.how(pa.why)}) and its Jacobian is unbounded in theta; "
                   "write an affine predictor or clip per-record gradients (--clip-norm G)")
        else:
            fix = "bound the data it is computed from (declare the domain) or clip per-record gradients (--clip-norm G)"
        return Unproven(name, what, f"the Jacobian of its {rule.predictor} in theta is unbounded over the declared "
                        f"domain (through {sp.how(why)}); {fix}")
    units = int(np.prod(pred_shape)) if pred_shape else 1
    if rule.event_ndim:
        units //= max(1, int(np.prod(pred_shape[len(pred_shape) - rule.event_ndim:])))
    units = max(1, units)
    b = r.mul_up(jop, r.sqrt_up(units), unit_score)
    h = r.mul_up(jop, jop, unit_hess) if affine and not clipped_probs else None
    convex = bool(rule.convex and affine and not clipped_probs)
    kind = "affine" if affine else f"not affine ({sp.how(pa.why)}): Lipschitz bound, no smoothness or convexity"
    detail = (f"grad = J^T psi, sup|J| = {jop:.6g} over the domain ({how_rows}), {rule.predictor} {kind} in theta "
              f"(proven on the program), sup|psi| = {math.sqrt(units) * unit_score:.6g} ({units} unit(s)), "
              f"sup|d psi/d eta| = {unit_hess:.6g}")
    src = rule.rule if affine else f"{rule.family} likelihood, {rule.predictor} Lipschitz in theta"
    if pred_var is not None and s.dist_type in LOG_LINK:
        src += f" ({LOG_LINK[s.dist_type]} = theta-free factor * exp(-+{rule.predictor}))"
    elif pred_var is not None and clip_range is not None:
        src += (f" (probs = clip(sigmoid({rule.predictor}), {clip_range[0]:g}, {clip_range[1]:g}), e.g. a "
                "unit-interval latent site; the clip's and NumPyro's clamp_probs' kinks: no smoothness or "
                "convexity claimed)")
    elif pred_var is not None:
        src += (f" (probs = sigmoid({rule.predictor}); NumPyro's clamp_probs is a kink: no smoothness or convexity "
                "claimed, write logits= for them)")
    diff = None
    if rule.diff_bound is not None and not pd.data and not any(a for a in sp_data_of_blocks(blocks)):
        # the predictor reads no data: two records see the same eta and the same J, so the replace-one difference
        # is J^T (psi(y, eta) - psi(y', eta)), at most ||J|| sqrt(units) sup|psi - psi'| (the family's diff_bound)
        try:
            diff = r.mul_up(jop, r.sqrt_up(units), float(rule.diff_bound(fixed, resp)))
        except Unsupported:
            diff = None
        if diff is not None and diff >= r.mul_up(2, b):
            diff = None
        if diff is not None:
            detail += (f"; the {rule.predictor} reads no data (one eta for every record): replace-one difference "
                       f"<= {diff:.6g} (sup over two responses of |psi - psi'| at a shared eta)")
    return LikelihoodFacts(name, src, b, h, convex, detail, diff)


ZIP_RULE = ("ZeroInflatedPoisson(gate or gate_logits, rate = exp(eta)), rate bounded over theta and the domain: "
            "the exact sup of the score over counts, rates and gates")
POISSON_BOUNDED_RULE = "Poisson(rate = exp(eta)), rate bounded over theta and the domain"


ZI_FAMILIES = ("ZeroInflatedPoisson", "ZeroInflatedProbs", "ZeroInflatedLogits")


def _sigmoid_out(b: float, up: bool) -> float:
    """sigmoid(b) rounded outward (``up``: an upper bound), for a finite or infinite ``b``."""
    if b == -math.inf:
        return 0.0
    if b == math.inf:
        return 1.0
    v = 1.0 / (1.0 + math.exp(-b)) if b >= -700 else math.exp(b)
    v = r.libm_out(v, up, extra=2)         # exp (libm), then add and divide
    return min(1.0, v) if up else max(0.0, v)


def zip_zero_score_sup(g_lo: float, lam_lo: float, lam_hi: float, pieces: int = 512, rounds: int = 6) -> float:
    """An upper bound of ``sup (1 - g) lambda q / (g + (1 - g) q)`` (``q = e^-lambda``) over ``g in [g_lo, 1)`` and
    ``lambda in [lam_lo, lam_hi]``: the score in ``log lambda`` of a zero count under a zero-inflated Poisson with
    a theta-free gate.  It decreases in ``g`` (it is ``lambda q / (g / (1 - g) + q)``), so its sup is at ``g_lo``:
    ``f(lambda) = (1 - g_lo) lambda / (g_lo e^lambda + 1 - g_lo)``; on each piece ``[a, b]`` of a subdivision of the
    rate interval ``f <= (1 - g_lo) b / (g_lo e^a + 1 - g_lo)`` (numerator and denominator increase with lambda),
    each operation rounded outward (``e^a`` from below by two ulps).  The pieces whose bound can be the largest are
    split again (``rounds`` times); every piece's bound enters the maximum, so the result bounds ``f`` on the whole
    interval.  ``g_lo = 0`` gives ``lam_hi`` exactly.

    Args:
        g_lo: lower bound of the gate (in ``[0, 1)``).
        lam_lo: lower bound of the rate (``>= 0``).
        lam_hi: upper bound of the rate (finite).
        pieces: pieces of the first subdivision, and of each split.
        rounds: refinements of the pieces that can hold the maximum.

    Returns:
        The upper bound (a float, rounded up).

    Examples:
        >>> from bayesdp.analysis.constants import zip_zero_score_sup
        >>> zip_zero_score_sup(0.0, 0.5, 3.0)
        3.0
        >>> 0.51360 < zip_zero_score_sup(0.3, 0.0, 20.0) < 0.51365    # sup at lambda = 1.5136: 0.513603...
        True
    """
    if g_lo <= 0.0:
        return float(lam_hi)
    lam_lo = max(0.0, float(lam_lo))
    one_g_up, one_g_dn = r.up(1 - r.Fraction(g_lo)), r.down(1 - r.Fraction(g_lo))

    def ub(a, b):
        with np.errstate(over="ignore"):
            e_a = np.exp(a)
            for _ in range(r.LIBM_ULPS):                     # libm's exp, moved down (never below 0)
                e_a = np.nextafter(e_a, 0.0)
            den = np.nextafter(np.nextafter(g_lo * e_a, 0.0) + one_g_dn, 0.0)
            num = np.nextafter(one_g_up * b, np.inf)
            return np.nextafter(num / den, np.inf)          # den >= 1 - g_lo > 0; inf / inf never: den only grows

    def f(x):
        with np.errstate(over="ignore"):
            return (1 - g_lo) * x / (g_lo * np.exp(x) + 1 - g_lo)
    pts = np.linspace(lam_lo, lam_hi, pieces + 1)
    pts[0], pts[-1] = lam_lo, lam_hi
    lo, hi = pts[:-1], pts[1:]
    done = 0.0                                           # the largest bound of the pieces no longer split
    best = 0.0                                           # f at the points seen: an estimate of the sup from below
    for k in range(rounds + 1):
        u = ub(lo, hi)
        if k == rounds:
            break
        best = max(best, float(np.max(f(np.concatenate([lo, hi])))))
        keep = u >= best * (1 - 1e-6)                    # the pieces whose bound can be the largest
        if np.count_nonzero(keep) > 64:                  # split at most the 64 largest bounds
            keep = np.zeros_like(keep)
            keep[np.argsort(u)[-64:]] = True
        done = max(done, float(np.max(u[~keep]))) if np.any(~keep) else done
        sub = [np.linspace(a, b, pieces + 1) for a, b in zip(lo[keep], hi[keep])]
        lo = np.concatenate([q[:-1] for q in sub])
        hi = np.concatenate([q[1:] for q in sub])
    return max(done, float(np.max(u)))


def _zip_site(program, facts, name: str, domain, m: int) -> LikelihoodFacts | str:
    """The zero-inflated Poisson rule (docs/analysis.md, "Zero-inflated Poisson"): ``rate = c exp(+-eta)`` with
    ``c`` theta-free and the rate bounded over all theta and the domain (a clipped log-rate), the gate a theta-free
    number in ``[0, 1)``, ``sigmoid(b)`` or given by its logits ``b`` (``ZeroInflatedDistribution(Poisson(rate),
    gate_logits=b)``).  The per-record gradient is ``t_eta grad eta + t_b grad b`` with the scores ``t`` of the
    count ``y``; its sup over counts, rates and gates is the largest of the ``y >= 1`` case (``|y - lambda| <=
    s_pos``, ``|t_b| = g < 1``) and the ``y = 0`` case (``|t_eta| <= lambda_hi``, or :func:`zip_zero_score_sup` for
    a theta-free gate).  Returns the facts, or why the rule does not apply (a string)."""
    s = program.sites[name]
    if [w for w in s.wrappers if w not in ("Independent", "ExpandedDistribution", "MaskedDistribution")]:
        return "a wrapper around the likelihood"
    zi = s.family in ZI_FAMILIES
    logits = zi and "gate_logits" in s.params
    if not ((zi and ("gate" in s.params or logits)) or s.family == "Poisson") or "rate" not in s.params:
        return f"{s.family} is not ZeroInflatedPoisson(gate, rate), a zero-inflated Poisson or Poisson(rate)"
    if s.family == "Poisson" and getattr(s.dist_type, "arg_constraints", {}).keys() != {"rate"}:
        return "a Poisson with other parameters"
    outvars = program.jaxpr.jaxpr.outvars
    rate_i, value_i = program.output(name, "param:rate"), program.output(name, "value")
    gate_i = program.output(name, "param:gate_logits" if logits else "param:gate") if zi else rate_i
    # (clip(exp(eta), lo, hi), the same function of reals, is not taken: exp(eta) is an infinity in float32 past 88.7,
    # and JAX's derivative multiplies it by the clip's 0, NaN; its rate's box is undefined below)
    eta = sp.log_link_input(program, _one_value(program, outvars[rate_i]))
    if eta is None:
        return "its rate is not exp of a predictor (times a theta-free factor)"
    gd, ga = facts.dep[gate_i], facts.aff[gate_i]
    b_var = None
    if zi and (gd.theta or ga.kind != CONST):
        if logits:
            b_var = _one_value(program, outvars[gate_i])
        else:
            gv = _one_value(program, outvars[gate_i])
            # a gate sigmoid(b), or a unit-interval latent site's value (clip(sigmoid(u)): a Beta prior): the score in
            # b is dl/dg g (1 - g) times the clip's derivative (0, 1/2 or 1), so the bounds below hold for it too
            b_var = sp.sigmoid_input(program, gv) or (sp.clipped_sigmoid_input(program, gv) or (None,))[0]
        if b_var is None:
            return "its gate depends on the latent sites but is not jax.nn.sigmoid of a predictor (or gate_logits)"
    _check_zip_support(program, name, domain, m)
    rate_b, gate_b, y_b = sp.bound_outputs(program, domain, m, [rate_i, gate_i, value_i])
    lam_lo, lam_hi = max(0.0, float(np.min(rate_b.lo))), float(np.max(rate_b.hi))
    y_lo, y_hi = max(0.0, float(np.min(y_b.lo))), float(np.max(y_b.hi))
    if not math.isfinite(lam_hi):
        return ("its rate is unbounded over theta and the domain (the score y - rate grows like exp(eta)); clip the "
                "log-rate: jnp.exp(jnp.clip(eta, lo, hi)) with public lo, hi")
    if not math.isfinite(y_hi):
        return "its counts have no declared upper bound (declare e.g. --domain y.values=0..B)"
    g_lo = g_hi = 0.0
    if zi and b_var is None:
        if logits:
            g_lo, g_hi = _sigmoid_out(float(np.min(gate_b.lo)), False), _sigmoid_out(float(np.max(gate_b.hi)), True)
            if not math.isfinite(float(np.max(gate_b.hi))):
                g_hi = 1.0
        else:
            g_lo, g_hi = max(0.0, float(np.min(gate_b.lo))), float(np.max(gate_b.hi))
        if not g_hi < 1.0:
            return (f"its gate can be {g_hi:g} over the domain: a gate of 1 gives every count "
                    "y > 0 probability 0; use a gate below 1")
    pred = [eta] + ([b_var] if b_var is not None else [])
    ext = sp.prove(program, program.with_outputs(pred))
    for k, v in enumerate(pred):
        a = ext.aff[len(ext.aff) - len(pred) + k]
        if not a.grad_ok:
            return (f"its {'log-rate' if k == 0 else 'gate logit'} is not proven continuous in theta with JAX's "
                    f"derivative as its derivative ({sp.how(a.why_grad)})")
    jac, used = [], []
    for v in pred:
        if int(np.prod(conc(v.aval.shape))) != 1:
            return "its rate or gate has more than one entry per record"
        blocks = sp.var_jacobian_bounds(program, domain, m, v)
        rows = [sp.rows_of(blocks[lat], len(conc(v.aval.shape))) for lat in program.latent if lat in blocks]
        if not rows:
            jac.append(0.0)
            used.append(set())
            continue
        j, _ = sp.operator_norm_bound(rows, domain)
        if not math.isfinite(j):
            return "the Jacobian in theta of its log-rate or gate logit is unbounded over the domain"
        jac.append(j)
        used.append({lat for lat in program.latent if lat in blocks and not (
            np.all(np.asarray(blocks[lat].lo) == 0) and np.all(np.asarray(blocks[lat].hi) == 0))})
    F = r.Fraction
    if not zi:
        # Poisson: |y - lambda| on the box, attained at a corner
        S = max(r.up(F(lam_hi) - F(y_lo)), r.up(F(y_hi) - F(lam_lo)), 0.0)
        G = r.mul_up(S, jac[0])
        diff, diff_txt = None, "replace-one difference <= 2 G"
        if not facts.dep[rate_i].data:
            # the rate reads no data: two records share lambda and J, the difference is (y' - y) grad eta
            diff = r.mul_up(r.up(F(y_hi) - F(y_lo)), jac[0])
            diff_txt = (f"the rate reads no data (one lambda for every record): replace-one difference <= (y_hi - y_lo) "
                        f"|J_eta| = {diff:.6g}")
            if diff >= r.mul_up(2, G):
                diff, diff_txt = None, "replace-one difference <= 2 G"
        detail = (f"l = y log lambda - lambda - log y!: dl/d log lambda = y - lambda, |.| <= S = max(lambda_hi - y_lo, "
                  f"y_hi - lambda_lo) = {S:.6g} (lambda in [{lam_lo:.6g}, {lam_hi:.6g}], y in [{y_lo:g}, {y_hi:g}]), "
                  f"sup|J_eta| = {jac[0]:.6g}; |grad| <= S |J_eta| = {G:.6g}; {diff_txt}; no "
                  "smoothness or convexity claimed")
        return LikelihoodFacts(name, POISSON_BOUNDED_RULE, G, None, False, detail, diff)
    # counts y >= 1 (integers: the support, checked record by record): |y - lambda| <= s_pos, |dl/db| = g < 1
    pos = y_hi >= 1.0
    y1 = max(1.0, y_lo)
    s_pos = max(r.up(F(y_hi) - F(lam_lo)), r.up(F(lam_hi) - F(y1)), 0.0) if pos else 0.0
    # a zero count (in the domain when y_lo = 0): |dl/d log lambda| <= lambda_hi (latent gate, g -> 0) or the sup of
    # (1 - g) lambda q / D at the gate's lower bound (theta-free gate); |dl/db| = g (1 - g)(1 - q) / D
    zero = y_lo <= 0.0
    t0 = (lam_hi if b_var is not None else zip_zero_score_sup(g_lo, lam_lo, lam_hi)) if zero else 0.0
    S = max(s_pos, t0)
    if b_var is None:
        G = r.mul_up(S, jac[0])
        how_ = "max(s_pos, t0) |J_eta|"
    elif not (used[0] & used[1]):
        # |grad|^2 = t_eta^2 |J_eta|^2 + t_b^2 |J_b|^2; y >= 1: s_pos^2 J_eta^2 + J_b^2 (g -> 1); y = 0: with u = g / D,
        # t_eta = lambda (1 - u) (1 - g) ... <= lambda (1 - u), t_b <= (1 - q) u: convex in u, at most an endpoint
        sq = lambda a, b: r.add_up(r.mul_up(a, a, b, b))  # noqa: E731
        cand = [r.add_up(sq(s_pos, jac[0]), sq(1.0, jac[1]))] if pos else []
        if zero:
            cand += [sq(lam_hi, jac[0]), sq(1.0, jac[1])]
        G = r.sqrt_up(max(cand))
        how_ = ("sqrt(max(s_pos^2 |J_eta|^2 + |J_b|^2, lambda_hi^2 |J_eta|^2)) (log-rate and gate logit read "
                "disjoint latent sites)")
    else:
        cand = [r.add_up(r.mul_up(s_pos, jac[0]), jac[1])] if pos else []
        if zero:
            cand += [r.mul_up(lam_hi, jac[0]), jac[1]]
        G = max(cand)
        how_ = "max(s_pos |J_eta| + |J_b|, lambda_hi |J_eta|) (triangle inequality)"
    gate_txt = ("gate theta-free in [%.6g, %.6g]" % (g_lo, g_hi) if b_var is None else
                f"|dl/db| < 1 for gate = sigmoid(b){' (gate_logits)' if logits else ''}, sup|J_b| = {jac[1]:.6g}")
    detail = (f"l = log ZIP(y | g, lambda): y >= 1: |dl/d log lambda| = |y - lambda| <= s_pos = max(y_hi - lambda_lo, "
              f"lambda_hi - max(1, y_lo)) = {s_pos:.6g}; y = 0: |dl/d log lambda| <= t0 = {t0:.6g} "
              f"(lambda in [{lam_lo:.6g}, {lam_hi:.6g}], y in [{y_lo:g}, {y_hi:g}]), {gate_txt}, "
              f"sup|J_eta| = {jac[0]:.6g}; |grad| <= {how_} = {G:.6g}; replace-one difference <= 2 G; no "
              "smoothness or convexity claimed")
    return LikelihoodFacts(name, ZIP_RULE, G, None, False, detail)


def _one_value(program, var):
    """``var`` followed back through broadcasts, reshapes and conversions of ONE value per record (or one value
    for all records): every entry of ``var`` for a record is that value."""
    for _ in range(16):
        e = program.producer(var)
        if e is None or e.primitive.name not in ("broadcast_in_dim", "reshape", "convert_element_type", "squeeze",
                                                 "copy", "expand_dims") or hasattr(e.invars[0], "val"):
            return var
        if int(np.prod(conc(e.invars[0].aval.shape))) != 1 or int(np.prod(conc(var.aval.shape))) != 1:
            return var
        if e.primitive.name == "convert_element_type" and not _exact_convert(e):
            return var              # an integer, or a narrowing conversion (it rounds the value)
        var = e.invars[0]
    return var


def _check_zip_support(program, name: str, domain, m: int) -> None:
    """The declared counts are non-negative (the support), else the domain is refused by name."""
    from .generic import _check_support

    _check_support(program, name, domain, m)


# ---------------------------------------------------------------------------
# combination


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def combine(program, priors: dict, liks: list, clip_norm: float | None, observed: list, m: int, data_given: bool,
            size_dependent: list, notes: list) -> tuple[Constants, list, list]:
    """The constants of ``U_D = K + V_D`` from the per-site results; returns (constants, facts, unproven).

    Args:
        program: the traced program.
        priors: latent site -> :func:`prior_site`'s result.
        liks: :func:`likelihood_site`'s result for each observed site (empty with clipping).
        clip_norm: the per-record gradient clipping norm, or None.
        observed: the observed sites.
        m: the number of records.
        data_given: whether the data was given (else certified before sampling).
        size_dependent: sites whose terms depend on the number of records.
        notes: notes for the report (appended to).

    Returns:
        ``(constants, facts, unproven)``.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.structure.sites import check_sites
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> facts = prove(program)
        >>> domain = Domain.parse(["X.norm=1", "y.values=0,1"])
        >>> from bayesdp.analysis.constants import combine, likelihood_site, prior_site
        >>> structure = check_sites(program, facts)
        >>> priors = {"w": prior_site(program, facts, structure, "w", 100)}
        >>> liks = [likelihood_site(program, facts, "obs", domain, 100, None)]
        >>> c, _, unproven = combine(program, priors, liks, None, ["obs"], 100, False, [], [])
        >>> c.strong_convexity, round(c.grad_bound, 6), unproven        # 100 records * 1, inflated
        (1.0, 100.000048, [])
    """
    facts: list[Fact] = []
    unproven: list[Unproven] = []
    prov: dict[str, str] = {}
    v_grads, v_smooth, gauss, no_k_sites = [], [], [], []
    v_convex_prior = True
    for ln, pf in priors.items():
        if isinstance(pf, Unproven):
            unproven.append(pf)
            continue
        if isinstance(pf, GaussianSite):
            gauss.append(pf)
            t = pf.term
            facts.append(Fact(ln, "K precision eigenvalue bounds", list(t.bounds), t.rule,
                              t.detail + ("; loc affine in other latent sites (joint precision)" if pf.B is not None
                                          else "")))
            continue
        no_k_sites.append((ln, pf.rule.split(" ->")[0]))
        if pf.v_grad_bound > 0 or pf.v_smoothness != 0.0:
            v_grads.append((pf.v_grad_bound, ln, pf.rule))
            v_smooth.append((pf.v_smoothness, ln, pf.rule))
            v_convex_prior = v_convex_prior and pf.v_convex
            facts.append(Fact(ln, "prior V grad bound", pf.v_grad_bound, pf.rule, pf.detail))
            facts.append(Fact(ln, "prior V smoothness", pf.v_smoothness, pf.rule, pf.detail))
            facts.append(Fact(ln, "prior V convex", pf.v_convex, pf.rule))
    prior_unproven = any(isinstance(p, Unproven) for p in priors.values())
    lik_bound, lik_smooth, lik_convex, lik_terms = 0.0, 0.0, True, []
    lik_diff, diff_terms = 0.0, []
    lik_unproven = False
    for lf in liks:
        if not isinstance(lf, Unproven) and not lf.grad_bound <= _FLOAT32_MAX:
            # past float32's largest number the program's gradient may itself be an infinity (a log-density scaled by
            # 1e20): no bound of the values the samplers compute (adv20)
            lf = Unproven(lf.site, "per-record gradient bound", f"its rule ({lf.rule}) bounds the gradient by "
                          f"{lf.grad_bound:.3g}, past float32's largest number 3.4e38, where the float32 gradient "
                          "may be an infinity; rescale the log-density (a smaller handlers.scale or predictor)")
        if isinstance(lf, Unproven):
            unproven.append(lf)
            lik_unproven = True
            continue
        facts.append(Fact(lf.site, "record grad bound", lf.grad_bound, lf.rule, lf.detail))
        facts.append(Fact(lf.site, "record smoothness", lf.smoothness, lf.rule, lf.detail))
        facts.append(Fact(lf.site, "convex in theta", lf.convex, lf.rule))
        lik_bound = r.add_up(lik_bound, lf.grad_bound)
        lik_diff = r.add_up(lik_diff, lf.grad_diff if lf.grad_diff is not None else r.mul_up(2, lf.grad_bound))
        diff_terms.append(lf.grad_diff is not None)
        lik_smooth = None if (lik_smooth is None or lf.smoothness is None) else r.add_up(lik_smooth, lf.smoothness)
        lik_convex = lik_convex and lf.convex
        lik_terms.append(f"{lf.rule} @ {lf.site}")

    c = Constants(data_size=m)
    if prior_unproven:
        u = next(x for x in unproven if x.what == "prior decomposition")
        mu = L = None
        prov["strong_convexity"] = prov["smoothness"] = "unproven: " + u.message()
    elif not gauss:
        mu = L = None
        prov["strong_convexity"] = prov["smoothness"] = (
            f"unproven: no latent site has a strongly convex prior part (site '{no_k_sites[0][0]}' has a "
            f"{no_k_sites[0][1]})")
    else:
        mu, L, prov["strong_convexity"], prov["smoothness"] = gaussian_k(program, gauss, no_k_sites)
    c.strong_convexity, c.smoothness = mu, L

    if prior_unproven:
        pvg, pvs = None, None
        prov["prior_v_grad_bound"] = prov["strong_convexity"]
    else:
        pvg = r.hypot_up([g for g, _, _ in v_grads])
        pvs = 0.0 if all(s is not None for s, _, _ in v_smooth) else None
        if pvs is not None and v_smooth:
            pvs = max(s for s, _, _ in v_smooth)
        prov["prior_v_grad_bound"] = (" + ".join(f"{r} @ {s}" for _, s, r in v_grads) + " (root sum of squares "
                                      "over blocks)") if v_grads else "no prior term in V"
    c.prior_v_grad_bound = pvg

    G = clip_norm
    if G is not None:
        c.record_grad_bound, c.record_grad_diff, c.record_smoothness = G, r.mul_up(2, G), None
        lik_convex = False
        src = f"per-record gradient clipping at clip_norm = {G:g} @ " + ", ".join(observed)
        prov["record_grad_bound"] = src
        prov["record_grad_diff"] = src + " (2 * clip_norm)"
        prov["record_smoothness"] = "unproven: clipped gradients are not known to be Lipschitz"
        notes.append(f"per-record likelihood gradients are clipped at norm {G:g}: the certificates hold for the "
                     "clipped sampler, which no longer targets the exact posterior")
    elif lik_unproven:
        u = next(x for x in unproven if x.what == "per-record gradient bound")
        msg = "unproven: " + u.message()
        prov["record_grad_bound"] = prov["record_grad_diff"] = prov["record_smoothness"] = msg
        lik_convex = False
    else:
        c.record_grad_bound = lik_bound
        c.record_grad_diff = min(r.mul_up(2, lik_bound), lik_diff)
        c.record_smoothness = lik_smooth
        src = " + ".join(lik_terms)
        prov["record_grad_bound"] = src
        prov["record_grad_diff"] = src + (" (2 * record_grad_bound: sup over two records)" if not any(diff_terms)
                                          else " (replace-one difference at a shared predictor: the family's "
                                          "sup |psi - psi'|, 2 * the site's bound elsewhere)")
        rough = [f"'{lf.site}' ({lf.rule})" for lf in liks if lf.smoothness is None]
        prov["record_smoothness"] = src if lik_smooth is not None else \
            "unproven: no smoothness is proven for site " + ", ".join(rough) + (
                "; the generic rule bounds the gradient only" if any(GENERIC in x for x in rough) else
                ": a predictor is not affine in theta")

    rgb, rgd = c.record_grad_bound, c.record_grad_diff
    if rgb is not None and pvg is not None:
        c.grad_bound = r.add_up(r.mul_up(m, rgb), pvg)
        prov["grad_bound"] = (f"data_size * record_grad_bound + prior_v_grad_bound = {m} * {rgb:.6g} + {pvg:.6g} "
                              f"[{prov['record_grad_bound']}; {prov['prior_v_grad_bound']}]")
    else:
        prov["grad_bound"] = prov["record_grad_bound"] if rgb is None else prov["prior_v_grad_bound"]
    c.grad_diff = rgd
    prov["grad_diff"] = ("record_grad_diff (replace-one; the prior is data-independent) "
                         f"[{prov['record_grad_diff']}]") if rgd is not None else prov["record_grad_diff"]
    if size_dependent and rgb is not None:
        site, via = size_dependent[0]
        c.grad_diff_add_remove = None
        prov["grad_diff_add_remove"] = (f"unproven: site '{site}' depends on the number of records (through "
                                        f"{sp.how(via)}), so adding or removing a record changes every term")
    else:
        c.grad_diff_add_remove = rgb
        prov["grad_diff_add_remove"] = ("record_grad_bound (add/remove one record) "
                                        f"[{prov['record_grad_bound']}]") if rgb is not None else \
            prov["record_grad_bound"]

    if c.record_smoothness is not None and pvs is not None:
        c.v_smoothness = r.add_up(r.mul_up(m, c.record_smoothness), pvs)
        prov["v_smoothness"] = f"data_size * record_smoothness + prior V smoothness = {m} * " \
                               f"{c.record_smoothness:.6g} + {pvs:.6g}"
    elif c.record_smoothness is None:
        prov["v_smoothness"] = "unproven: " + prov["record_smoothness"].removeprefix("unproven: ")
    elif prior_unproven:
        prov["v_smoothness"] = prov["prior_v_grad_bound"]
    else:
        rough = ", ".join(f"'{s_}'" for sm, s_, _ in v_smooth if sm is None)
        prov["v_smoothness"] = f"unproven: the prior part of V is not smooth at site {rough}"

    c.v_convex = bool(lik_convex and v_convex_prior and not prior_unproven and (G is None and not lik_unproven))
    prov["v_convex"] = ("every likelihood and prior-V term is convex" if c.v_convex else
                        "not proven convex: " + ("gradients are clipped" if G is not None else
                                                 "a likelihood or prior-V term is non-convex or unproven"))
    if mu is None:
        c.total_strong_convexity = None
        prov["total_strong_convexity"] = "unproven: " + prov["strong_convexity"].removeprefix("unproven: ")
    elif c.v_convex:
        c.total_strong_convexity = mu
        prov["total_strong_convexity"] = "strong_convexity of K + 0 (V convex)"
    elif c.v_smoothness is not None and mu - c.v_smoothness > 0:
        c.total_strong_convexity = r.sub_down(mu, c.v_smoothness)
        prov["total_strong_convexity"] = "strong_convexity of K - v_smoothness (V only smooth)"
    else:
        c.total_strong_convexity = None
        prov["total_strong_convexity"] = ("unproven: V is not convex and strong_convexity - v_smoothness = "
                                          f"{mu - c.v_smoothness:.6g} <= 0" if c.v_smoothness is not None else
                                          "unproven: V is neither proven convex nor smooth")
    if L is not None and c.v_smoothness is not None:
        c.total_smoothness = r.add_up(L, c.v_smoothness)
        prov["total_smoothness"] = "smoothness of K + v_smoothness"
    else:
        prov["total_smoothness"] = "unproven: " + (prov["v_smoothness"].removeprefix("unproven: ")
                                                   if c.v_smoothness is None else "K has no smooth part")
    prov["inverse_temperature"] = "sampler configuration (1 = Bayesian posterior)"
    prov["data_size"] = "number of records in the data" if data_given else "declared data_size"
    c.provenance = prov
    return c, facts, unproven

