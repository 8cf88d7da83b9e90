"""Calibration to a target (epsilon, delta): the sampler configuration a certificate allows.

``calibrate(model, domain=..., data=Shapes(n), epsilon=1.0, delta=1e-5, mechanism="ula-final")`` returns a
:class:`~bayesdp.plan.Plan` whose certificate (re-computed by the certificate core, every route) is at most
the target, chosen as follows (docs/calibration.md):

* ``posterior``: the largest inverse temperature ``beta <= beta_max`` whose posterior certificate meets the
  target (bisection on the continuous beta: within 1% of the target unless ``beta_max`` already meets it);
* ``ula-final``, ``ula-path``, ``sgld-final``, ``sgld-path``: the step size ``h``, number of steps
  ``n <= max_steps`` and inverse temperature ``beta`` that meet the target and minimise a stated bound on
  the 2-Wasserstein distance of the last draw to the tempered posterior ``pi_beta ∝ exp(-beta U)``.  The
  sampler runs ``theta - h grad U + sqrt(2 h / beta) xi``: ULA on ``beta U`` with step ``gamma = h / beta``.
  When the potential is proven ``mu``-strongly convex and ``L``-smooth the bound is Dalalyan & Karagulyan
  (2019, Theorem 1) with ``m = beta mu``, ``M = beta L``, valid for ``gamma <= 2/(m + M)`` (``h <= 2/(mu + L)``):

      W2(law(theta_n), pi_beta) <= (1 - m gamma)^n W0 + 1.65 (M/m) sqrt(gamma d),

  with ``W0 = |theta*| + sqrt(d/m)`` bounding ``W2(delta_0, pi_beta)`` and ``|theta*| <= G/mu`` (the mode of U
  is within ``|grad V(0)|/mu`` of K's minimiser, assumed at the origin: centred priors; ``G`` = grad_bound).
  The search: a grid over beta and h, the largest feasible n for each (binary search), the smallest bound;
  then beta is increased continuously at that (h, n) (the bound only improves) until the certificate
  reaches the target.  When no bound applies, or its minimum does not halve ``W0`` (a chain that does not
  move achieves ``W0``: the bound is then uninformative, typical of ill-conditioned models), the *mixing
  heuristic* is used and stated in the plan: the largest beta whose chain contracts by ``mu h n >= 5``
  e-folds (it forgets its start) with ``h <= 1/L``, else the most e-folds; without strong convexity the
  longest integration time ``n h`` with ``h <= 1/L``.  For SGLD the minibatch-noise term of the bound is
  not included (its variance depends on the data: a heuristic, stated in the plan);
* ``release``: the Laplace noise scale of a posterior-mean release at the target epsilon for the chain
  configuration given in ``kernel`` (the coupling sensitivity of 004 Proposition 3.7).

An unreachable target is refused with the smallest epsilon that can be reached and what to change.

Every chain plan carries ``plan.diagnostics["contraction"]`` (:func:`contraction_diagnostics`, docs/calibration.md
"Contraction diagnostics"): the e-folds of contraction of two synchronously coupled chains over the planned steps,
**proven** (from the proven strong convexity and smoothness) and **heuristic** (from :func:`heuristic_curvature`,
a public estimate of the likelihood's curvature at m records), and the e-folds the chain needs to forget its start.
A chain that reaches neither says so in one line in ``plan.warnings``.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .errors import AssumptionError, positive, positive_int, probability_open
from .plan import SGLD, ULA, Shapes, _certify, _domain, _plan_from_report, _shapes_from, resolve_model
from .publish.methods.coupling import sampler_constants
from .publish.noise import granularity
from .publish.noiseplan import sensitivity_routes
from .publish.path import heuristic_curvature
from .publish.sensitivity import best_coupling
from .publish.statistics import SiteSpec, coordinate_means
from .analysis import analyze
from .analysis.certify import price
from .analysis.inputs import counts_from_domain
from .certificate import BoundReport
from .curves import compose
from .analysis.session import one_analysis
from .budget.numbers import noise_delta, noise_epsilon

__all__ = ["calibrate", "CalibrationOptions", "MIXING_EFOLDS", "START_TOLERANCE", "heuristic_curvature",
           "contraction_diagnostics"]

_BETA_GRID = 10
_H_GRID = 10


def _epsilon(c, mech: str, delta: float, beta: float, h: float | None, n: int | None, batch: int | None,
             chains: int) -> tuple[float, Any]:
    """Certified epsilon (chains composed) of one configuration, and its best route (inf if none)."""

    cb = replace(c, inverse_temperature=beta)
    rep = price(cb, mech, delta, step_size=h, num_steps=n, batch_size=batch)
    if not isinstance(rep, BoundReport) or rep.best is None:
        return math.inf, rep
    curve = compose([rep.best.curve] * chains) if chains > 1 else rep.best.curve
    try:
        return float(curve.epsilon(delta)), rep
    except Exception:
        return math.inf, rep


def _largest_n(f: Callable[[int], float], target: float, max_steps: int) -> int:
    """The largest n in [1, max_steps] with f(n) <= target (f nondecreasing), 0 if none.

    A bracket ``lo < hi`` with ``f(lo) <= target < f(hi)`` shrinks until ``hi = lo + 1``, as in a binary search, so
    the answer is the binary search's; only the points tried differ.  A certificate's epsilon grows about as a
    power of n (sqrt n for a path over its first steps), so the next point is where the line through
    ``(log lo, log f(lo))`` and ``(log hi, log f(hi))`` reaches ``log target``, and its neighbour on the other side
    is tried at once (the crossing usually lies between them).  After two rounds in a row that did not halve the
    bracket, one bisection.  On docs/calibration.md's benchmarks: 260 -> 146 certificates priced at m = 1e4,
    d = 10, epsilon = 1 (`ula-final`), 402 -> 170 at m = 500, d = 5 (`ula-path`).
    """
    f_lo = f(1)
    if f_lo > target:
        return 0
    f_hi = f(max_steps)
    if f_hi <= target:
        return max_steps
    lo, hi = 1, max_steps
    stalls = 0
    while hi - lo > 1:
        width = hi - lo
        interpolate = stalls < 2 and 0.0 < f_lo <= target < f_hi < math.inf
        if interpolate:
            t = math.log(target / f_lo) / math.log(f_hi / f_lo)
            mid = min(max(int(lo * (hi / lo) ** t), lo + 1), hi - 1)
        else:
            mid = (lo + hi) // 2
        v = f(mid)
        if v <= target:
            lo, f_lo = mid, v
            if interpolate and hi - lo > 1:
                v = f(lo + 1)
                if v <= target:
                    lo, f_lo = lo + 1, v
                else:
                    hi, f_hi = lo + 1, v
        else:
            hi, f_hi = mid, v
            if interpolate and hi - lo > 1:
                v = f(hi - 1)
                if v > target:
                    hi, f_hi = hi - 1, v
                else:
                    lo, f_lo = hi - 1, v
        stalls = stalls + 1 if interpolate and 2 * (hi - lo) > width else 0
    return lo


def _w2(c, beta, h, n, d) -> float | None:
    """Dalalyan & Karagulyan (2019) Theorem 1 for the sampler's chain, or None without strong convexity.

    The sampler runs ``theta - h grad U + sqrt(2 h / beta) xi`` (bayesdp/samplers/kernels.py): ULA on the
    potential ``beta U`` with step ``gamma = h / beta``, so the theorem applies with ``m = beta mu``,
    ``M = beta L`` and step gamma (valid for ``gamma <= 2/(m + M)``, i.e. ``h <= 2/(mu + L)``):
    ``(1 - m gamma)^n W0 + 1.65 (M/m) sqrt(gamma d)``, ``W0 = |theta*| + sqrt(d/m)`` (LITERATURE §7.3).
    """
    mu, L = c.total_strong_convexity, c.total_smoothness
    if mu is None or L is None or c.grad_bound is None:
        return None
    m, M, gamma = beta * mu, beta * L, h / beta
    if gamma > 2.0 / (m + M):
        return math.inf
    r0 = c.grad_bound / mu + math.sqrt(d / m)
    return (1.0 - m * gamma) ** n * r0 + 1.65 * (M / m) * math.sqrt(gamma * d)


@dataclass(frozen=True)
class CalibrationOptions:
    """The less common settings of :func:`calibrate`.

    Args:
        num_steps: for ``mechanism="release"``: the chain's number of steps.
        max_steps: the compute budget (largest number of steps).
        num_chains: chains released together (their certificates compose).
        temper: allow inverse temperatures below the kernel's (default True).
        sites: for ``release``: the latent sites whose means are released (default: all).

    Examples:
        >>> CalibrationOptions(max_steps=500).max_steps
        500
    """

    num_steps: int | None = None
    max_steps: int = 10_000
    num_chains: int = 1
    temper: bool = True
    sites: Sequence[str] | None = None


@one_analysis()   # the model traced and its structure proven once per call (analysis/session.py)
def calibrate(model: Callable | str | None = None, *, domain=None, epsilon: float, delta: float = 1e-5,
              mechanism: str = "ula-final", data: Mapping[str, Any] | Shapes | None = None, kernel=None,
              options: CalibrationOptions | None = None):
    """The configuration that meets a privacy target: see the module docstring.

    Args:
        model: the NumPyro model or its reference (``"logistic"``, ``"file.py:function"``); or in ``kernel``.
        domain: the public domain of one record; or in ``kernel``.
        epsilon: the target epsilon.
        delta: the target delta.
        mechanism: ``posterior``, ``ula-final`` (default, as ``bayesdp calibrate``), ``ula-path``, ``sgld-final``,
            ``sgld-path`` or ``release``.
        data: the data (only their size and shapes are used: the plan never depends on their values), or their
            :class:`~bayesdp.plan.Shapes` (the number of records and the shape of one record) before you have them.
        kernel: :class:`~bayesdp.plan.ULA` / :class:`~bayesdp.plan.SGLD`: its inverse temperature is the largest
            allowed (``options.temper=False`` keeps it fixed), its clip norm, (SGLD) batch size and
            ``model_kwargs`` are used; for ``release`` its step size with ``options.num_steps`` is the chain whose
            mean is released.
        options: :class:`CalibrationOptions` (number of steps, compute budget, chains, tempering, sites).

    Returns:
        a :class:`~bayesdp.plan.Plan` (``release``: the plan of the chain, with the noise scale in its notes).

    Raises:
        AssumptionError: invalid input, or an unreachable target (the message gives the smallest reachable
            epsilon and what to change).

    Examples:
        >>> import bayesdp
        >>> from bayesdp.models import logistic
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> plan = bayesdp.calibrate(logistic, domain=dom, data=bayesdp.Shapes(1000, {"X": (3,), "y": ()}),
        ...                          epsilon=1.0, delta=1e-5, mechanism="posterior")
        >>> 0.99 <= plan.epsilon <= 1.0
        True
    """

    opts = options if options is not None else CalibrationOptions()
    if not isinstance(opts, CalibrationOptions):
        raise AssumptionError(f"options = {options!r} must be bayesdp.CalibrationOptions(...)")
    num_steps, max_steps, num_chains, temper, sites = (opts.num_steps, opts.max_steps, opts.num_chains, opts.temper,
                                                       opts.sites)
    data_size = record_shapes = dim = None
    if isinstance(data, Shapes):
        data_size, record_shapes, dim, data = data.data_size, data.record_shapes, data.dim, None
    if domain is None and kernel is not None:
        domain = kernel.domain
    if model is None and kernel is not None:
        model = kernel.model
    if isinstance(model, str):
        model = resolve_model(model)
    if model is None:
        raise AssumptionError("model = None: pass the NumPyro model (calibrate(model, ...))")

    target = positive("epsilon", epsilon, "pass a positive target epsilon")
    delta = probability_open("delta", delta, "pass a delta strictly between 0 and 1")
    max_steps = positive_int("max_steps", max_steps)
    num_chains = positive_int("num_chains", num_chains)
    if mechanism not in ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path", "release"):
        raise AssumptionError(f"mechanism = {mechanism!r} must be posterior, ula-final, ula-path, sgld-final, "
                              "sgld-path or release")
    sampler = "sgld" if mechanism.startswith("sgld") else "ula"
    kernel = kernel or (SGLD() if sampler == "sgld" else ULA())
    if sampler == "sgld" and kernel.batch_size is None:
        raise AssumptionError("SGLD calibration needs the batch size: kernel=bayesdp.SGLD(batch_size=...)")
    beta_max = positive("inverse_temperature", kernel.inverse_temperature)
    dom = _domain(domain)
    kw = counts_from_domain(model, dom, dict(kernel.model_kwargs or {}))
    shapes = None if data is not None else _shapes_from(None, record_shapes, model, dom, dim)
    an = analyze(model, data=data, domain=dom, model_kwargs=kw, clip_norm=kernel.clip_norm, data_size=data_size,
                 record_shapes=shapes)
    c = an.constants
    d = sum(int(math.prod(s)) if s else 1 for _, s, _ in an.latent_sites)
    batch = kernel.batch_size

    families = tuple(f for _, f in an.observed_sites)

    def plan_for(beta, h, n, bound=None, notes=(), mech=None, check=True):
        k = replace(kernel, step_size=h, inverse_temperature=beta) if h is not None else \
            replace(kernel, inverse_temperature=beta)
        rep = _certify(model, dom, data, data_size, k, n, num_chains, delta, kw, shapes, None)
        diagnostics, warnings = None, ()
        if h is not None and n is not None:
            diag = contraction_diagnostics(c.to_dict(), d, beta, h, n, kernel.sampler, families, kernel.clip_norm)
            diagnostics = {"contraction": diag}
            line = _unreachable_warning(diag, mech or mechanism, n, max_steps)
            warnings = (line,) if line else ()
        p = _plan_from_report(rep, model, dom, rep.analysis.data_size, _shapes_from(data, shapes, model, dom, dim),
                              kw, k, n, num_chains, delta, mech or mechanism, distance_bound=bound, notes=notes,
                              diagnostics=diagnostics, warnings=warnings)
        if check and p.epsilon > target * (1 + 1e-9):   # re-verified by the certificate core on every route
            raise AssumptionError(f"calibration found epsilon {p.epsilon:.6g} > target {target:g} on re-verification "
                                  "(a bug: report it)")
        return p

    if mechanism == "posterior":
        f = lambda b: _epsilon(c, "posterior", delta, b, None, None, None, 1)[0]   # noqa: E731
        e_max = f(beta_max)
        if e_max <= target:
            return plan_for(beta_max, None, None, notes=(
                f"the posterior at inverse temperature {beta_max:g} is already {e_max:.6g}-DP (<= the target): "
                "nothing to temper",))
        if not temper:
            raise AssumptionError(f"the posterior at inverse temperature {beta_max:g} is {e_max:.6g}-DP at delta "
                                  f"{delta:g} > target {target:g}; allow tempering (temper=True; on the command "
                                  "line drop --no-temper) or raise epsilon")
        beta = _bisect_beta(f, target, beta_max)
        if beta is None:
            raise AssumptionError(f"no inverse temperature in (0, {beta_max:g}] reaches epsilon {target:g}: the "
                                  "posterior certificate needs the potential proven strongly convex; see certify")
        return plan_for(beta, None, None, notes=(f"largest inverse temperature with epsilon <= {target:g} "
                                                  "(bisection)",))

    if mechanism == "release":
        return _calibrate_release(model, dom, kernel, num_steps, target, delta, an, plan_for, sites)

    # the search meets the target as a release charges it: the largest doubles not above the decimals written
    # (bayesdp.budget.numbers.noise_epsilon; delta = 1e-5 is searched at 9.999999999999999e-06).  A plan meets the
    # written target all the more (epsilon(delta) decreases in delta; plan_for re-verifies it at ``delta``), and a
    # release charged the same (epsilon, delta), which plans at exactly these doubles, finds this search in
    # _SEARCHES instead of running it again (0.6-0.9 s of a warm last-draw release, docs/testing.md)
    return _calibrate_chain(c, mechanism, noise_delta(delta), noise_epsilon(target), beta_max, temper, max_steps,
                            num_chains, batch, d, plan_for)


def _bisect_beta(f: Callable[[float], float], target: float, beta_hi: float, lo_frac: float = 1e-8):
    """The largest beta in (0, beta_hi] with f(beta) <= target, to within 1% of the target (f increasing)."""
    lo = beta_hi
    while f(lo) > target:
        lo /= 10
        if lo < beta_hi * lo_frac:
            return None
    hi = beta_hi
    for _ in range(80):
        if f(lo) >= 0.99 * target:
            break
        mid = math.sqrt(lo * hi) if hi / lo > 1.5 else (lo + hi) / 2
        if f(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


#: contraction e-folds (mu h n) a chain needs to have forgotten its start, for the mixing heuristic
MIXING_EFOLDS = 5.0


def _r0(c, beta, d) -> float | None:
    """The bound on W2(delta_0, pi_beta) (what a chain that does not move achieves)."""
    mu = c.total_strong_convexity
    if mu is None or c.grad_bound is None:
        return None
    return c.grad_bound / mu + math.sqrt(d / (beta * mu))


#: a chain has forgotten its start when the start's remaining influence (the contracted start distance) is at most
#: this fraction of the target's own spread (docs/calibration.md "Contraction diagnostics")
START_TOLERANCE = 0.1

# heuristic_curvature lives in bayesdp.publish.path (the path release's tuning uses it; publish is below this
# layer) and is re-exported here.


def _efolds(factor: float, n: int) -> float:
    """``-n log(factor)``: e-folds of contraction of n steps with per-step Lipschitz factor ``factor`` (0 if >= 1)."""
    return max(0.0, -n * math.log(max(factor, 1e-300)))


def contraction_diagnostics(constants: Mapping[str, Any], dim: int, inverse_temperature: float, step_size: float,
                            num_steps: int, sampler: str = "ula", families: Sequence[str] = (),
                            clip_norm: float | None = None) -> dict:
    """How far the planned chain forgets its start (docs/calibration.md "Contraction diagnostics").

    Two chains run with the same noise (a synchronous coupling) from starts ``a, b``; the noise cancels in their
    difference, which moves by the gradient map ``x -> x - h grad U(x)``.  For U ``mu``-strongly convex and
    ``L``-smooth that map is Lipschitz with factor ``q = max(|1 - h mu|, |1 - h L|)`` (``1 - h mu`` for
    ``h <= 2/(mu + L)``; Nesterov 2004, Theorem 2.1.15), so ``|a_n - b_n| <= q^n |a_0 - b_0|`` and the W2 distance
    of two chains' laws contracts by ``q^n``: **proven**, ``-n log q`` e-folds.  The **heuristic** contraction
    replaces mu by :func:`heuristic_curvature` (``|1 - h lambda_H|`` per step): what a quadratic potential of that
    curvature contracts, exactly.

    The chain needs ``log(W0 / (tau s))`` e-folds (``tau`` = :data:`START_TOLERANCE`): ``W0`` bounds the distance
    from the start (the origin) to the target ``pi_beta``, ``s`` the target's own spread.  Proven: ``W0 = G/mu +
    sqrt(d / (beta mu))`` (the mode is within ``|grad V(0)| / mu <= G / mu`` of the origin, ``G`` = grad_bound;
    E|theta - theta*|^2 <= d / (beta mu)) and ``s = sqrt(d / (beta L))`` (a lower bound on the spread: Cramér-Rao).
    Heuristic: the same with ``lambda_H`` for both mu and L; it does not grow with m (``G / lambda_H`` ~
    ``4 (d + 2) / R`` for logistic regression), while the proven one must: datasets in the domain move the mode by
    order sqrt(m).

    Args:
        constants: the analysis's constants (``total_strong_convexity``, ``total_smoothness``, ``grad_bound``,
            ``record_smoothness``, ``data_size``; for SGLD ``strong_convexity`` and ``v_convex``).
        dim: the number of parameters d.
        inverse_temperature: the chain's beta (noise ``sqrt(2 h / beta)`` per step).
        step_size: h.
        num_steps: n.
        sampler: ``ula`` or ``sgld`` (a minibatch potential keeps K's strong convexity only, and needs the
            records' potentials convex).
        families: the observed sites' families (for :func:`heuristic_curvature`).
        clip_norm: per-record gradient clipping: the clipped drift is no gradient of a convex potential, so
            nothing is proven (the heuristic stays, labelled).

    Returns:
        ``{"proven": {...}, "heuristic": {...}, "needed": {...}, "reaches_target": {"proven", "heuristic"}}``,
        each e-fold count a float (None where the constants are not proven).

    Raises:
        AssumptionError: a non-positive step size, inverse temperature, number of steps or dimension.

    Examples:
        >>> c = {"total_strong_convexity": 1.0, "total_smoothness": 301.0, "record_smoothness": 0.25,
        ...      "data_size": 1200, "grad_bound": 1200.0}
        >>> diag = contraction_diagnostics(c, 10, 0.05, 1e-3, 2000)
        >>> round(diag["proven"]["efolds"], 6) == round(-2000 * math.log(1 - 1e-3 * 1.0), 6)
        True
        >>> round(diag["heuristic"]["efolds"], 6) == round(-2000 * math.log(1 - 1e-3 * 26.0), 6)
        True
    """
    d = positive_int("dim", dim)
    beta = positive("inverse_temperature", inverse_temperature)
    h = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    L = constants.get("total_smoothness")
    mu = constants.get("total_strong_convexity")
    if sampler == "sgld":
        mu = constants.get("strong_convexity") if constants.get("v_convex") else None
    G = constants.get("grad_bound")
    tau = START_TOLERANCE
    proven: dict[str, Any] = {"label": "proven", "efolds": None, "factor_per_step": None,
                              "constants": {"strong_convexity": mu, "smoothness": L, "step_size": h, "num_steps": n}}
    need_p = need_h = None
    if clip_norm is not None:
        proven["what"] = ("no proven contraction: per-record gradient clipping makes the drift no gradient of a "
                          "convex potential")
    elif mu is not None and L is not None and float(mu) > 0:
        mu, L = float(mu), float(L)
        q = max(abs(1.0 - h * mu), abs(1.0 - h * L))
        proven.update(efolds=_efolds(q, n), factor_per_step=q,
                      what="two chains with the same noise: |a_n - b_n| <= q^n |a_0 - b_0|, q = max(|1 - h mu|, "
                           "|1 - h L|) (gradient map of a mu-strongly convex, L-smooth potential; Nesterov 2004 "
                           "Thm 2.1.15)" + ("; SGLD: K's strong convexity, each minibatch potential convex"
                                            if sampler == "sgld" else ""))
        if G is not None:
            w0 = float(G) / mu + math.sqrt(d / (beta * mu))
            need_p = {"efolds": max(0.0, math.log(w0 / (tau * math.sqrt(d / (beta * L))))), "start_bound": w0,
                      "spread": math.sqrt(d / (beta * L))}
    else:
        proven["what"] = "no proven contraction: the potential is not proven strongly convex and smooth"
    lam = heuristic_curvature(constants, d, beta, families)
    heur: dict[str, Any] = {"label": "heuristic", "efolds": None, "factor_per_step": None, "curvature": lam}
    if lam is not None:
        qh = abs(1.0 - h * lam)
        heur.update(efolds=_efolds(qh, n), factor_per_step=qh,
                    what="|1 - h lambda_H|^n, lambda_H = m_K + m c / (d + 2) (* the chain-spread factor for "
                         "Bernoulli-logit likelihoods): the expected curvature of m records with features uniform in "
                         "the domain's ball; public inputs only, not a bound")
        if G is not None:
            s = math.sqrt(d / (beta * lam))
            w0 = float(G) / lam + s
            need_h = {"efolds": max(0.0, math.log(w0 / (tau * s))), "start_bound": w0, "spread": s}
    else:
        heur["what"] = "no heuristic: the records' curvature is not proven bounded"
    needed = {"proven": need_p, "heuristic": need_h, "start_tolerance": tau,
              "what": f"log(W0 / ({tau:g} s)): the start's influence W0 e^(-efolds) falls below {tau:g} of the "
                      "target's spread s; W0 = |theta*| bound + sqrt(d / (beta curvature)), |theta*| <= G / curvature"}

    def reaches(got, need):
        return None if got["efolds"] is None or need is None else bool(got["efolds"] >= need["efolds"])

    return {"proven": proven, "heuristic": heur, "needed": needed,
            "reaches_target": {"proven": reaches(proven, need_p), "heuristic": reaches(heur, need_h)}}


def _unreachable_warning(diag: Mapping[str, Any], mech: str, n: int, max_steps: int) -> str | None:
    """One line when neither the proven nor the heuristic contraction reaches the e-folds it needs."""
    r = diag["reaches_target"]
    if r["proven"] or r["heuristic"] or (r["proven"] is None and r["heuristic"] is None):
        return None
    parts = [f"{diag[k]['efolds']:.3g} e-folds ({k}; needs {diag['needed'][k]['efolds']:.3g})"
             for k in ("heuristic", "proven") if r[k] is not None]
    fix = ("steps limited by max_steps: raise max_steps" if n >= max_steps else
           "steps limited by the privacy target: raise epsilon")
    return (f"{mech}: the chain cannot reach its target: in {n} steps it contracts " + ", ".join(parts) +
            f" to forget its start ({fix}, or release with method 'path' or 'coupling')")


#: the searches done in this process: public numbers (the constants, the target, the options) -> the configuration
#: found (a pure function of them, so a release that plans what ``calibrate`` planned before does not search again)
_SEARCHES: dict = {}
_SEARCHES_MAX = 64


def _calibrate_chain(c, mech, delta, target, beta_max, temper, max_steps, chains, batch, d, plan_for):
    key = (tuple((f.name, repr(getattr(c, f.name))) for f in fields(c)), mech, delta, target, beta_max, temper,
           max_steps, chains, batch, d)
    found = _SEARCHES.get(key)
    if found is None:
        found = _search_chain(c, mech, delta, target, beta_max, temper, max_steps, chains, batch, d)
        if len(_SEARCHES) >= _SEARCHES_MAX:
            _SEARCHES.pop(next(iter(_SEARCHES)))
        _SEARCHES[key] = found
    beta, h, n, bound, notes = found
    return plan_for(beta, h, n, bound=dict(bound), notes=notes)


def _search_chain(c, mech, delta, target, beta_max, temper, max_steps, chains, batch, d):
    """The configuration ``(beta, h, n, bound, notes)`` of :func:`_calibrate_chain` (public numbers only)."""
    # step sizes: below 2/(m + M) (the W2 bound's validity) when the potential is strongly convex, else below
    # 1/L with the best smoothness proven (heuristic)
    L = c.total_smoothness if c.total_smoothness is not None else c.smoothness
    mu = c.total_strong_convexity
    betas = [beta_max] if not temper else [beta_max * 10 ** (-3 * i / (_BETA_GRID - 1)) for i in range(_BETA_GRID)]
    # candidates: (beta, h, n, w2 bound or None, e-folds beta mu h n or None)
    # the sampler's step h (theta - h grad U + sqrt(2h/beta) xi): contraction 1 - mu h, stable for h <= 2/(mu + L)
    # whatever beta (see _w2)
    if mu is not None and L is not None:
        h_top = 2.0 / (mu + L)
    elif L is not None:
        h_top = 1.0 / L
    else:
        h_top = 1e-2
    hs = [h_top * 10 ** (-4 * j / (_H_GRID - 1)) * (1 - 1e-9) for j in range(_H_GRID)]
    if L is not None:
        hs.append(1.0 / L * (1 - 1e-9))                       # the mixing heuristic's largest step
    hs = sorted(set(hs), reverse=True)
    combos = [(beta, h) for beta in betas for h in hs]
    found: dict = {}                             # combo index -> the largest n that meets the target (0: none)

    def largest(i: int) -> int:
        if i not in found:
            beta, h = combos[i]
            found[i] = _largest_n(lambda k: _epsilon(c, mech, delta, beta, h, k, batch, chains)[0], target,
                                  max_steps)
        return found[i]

    def candidates() -> list:
        return [(beta, h, found[i], _w2(c, beta, h, found[i], d), None if mu is None else mu * h * found[i])
                for i, (beta, h) in enumerate(combos) if found.get(i)]

    # The W2 rule below takes the candidate of least W2 bound, and the bound decreases with n (its contraction
    # factor 1 - mu h is in [0, 1) on this grid): its value at max_steps is a lower bound for the combo's candidate.
    # So the combos are searched in increasing order of that lower bound until it exceeds the least bound found;
    # the others cannot be chosen by the W2 rule.  When the W2 rule does not apply (no bound, or its minimum does
    # not halve r0), the mixing rule needs every candidate: all combos are searched, as they always were.  The
    # result is the full grid search's, with fewer certificates priced.
    lows = [_w2(c, beta, h, max_steps, d) for beta, h in combos]
    if all(w is not None for w in lows) and all(0 < mu * h <= 1 for _, h in combos):
        least = math.inf
        for i in sorted(range(len(combos)), key=lambda i: lows[i]):
            if lows[i] * (1 - 1e-12) > least:
                break
            if largest(i):
                least = min(least, _w2(c, combos[i][0], combos[i][1], found[i], d))
    cands = candidates()
    with_w = [cd for cd in cands if cd[3] is not None]
    best = min(with_w, key=lambda cd: cd[3]) if with_w else None
    if not (best is not None and best[3] <= 0.5 * _r0(c, best[0], d)):
        for i in range(len(combos)):
            largest(i)
        cands = candidates()
    if not cands:
        e_min = _epsilon(c, mech, delta, betas[-1], h_top * 1e-4, 1, batch, chains)[0]
        what = ("allow a lower inverse temperature (temper=True; on the command line drop --no-temper), "
                if not temper else "") + "raise epsilon, raise delta, or release fewer chains"
        raise AssumptionError(f"{mech}: epsilon {target:g} at delta {delta:g} cannot be reached (the smallest "
                              f"certified epsilon found is {e_min:.6g}, one step at inverse temperature "
                              f"{betas[-1]:.3g}); {what}")
    with_w = [cd for cd in cands if cd[3] is not None]
    best = min(with_w, key=lambda cd: cd[3]) if with_w else None
    if best is not None and best[3] <= 0.5 * _r0(c, best[0], d):
        rule = "w2"                              # the Wasserstein bound says something: minimise it
        beta, h, n, w, _ = best
    else:
        # no informative bound (none applies, or its minimum does not halve r0, the bound of a chain that does
        # not move): the mixing heuristic. The largest beta whose chain forgets its start (mu h n >=
        # MIXING_EFOLDS e-folds of contraction) with h <= 1/L; if none does, the most e-folds; without strong
        # convexity, the longest integration time h n with h <= 1/L.
        ok = [cd for cd in cands if L is None or cd[1] * L <= 1.0] or cands
        if mu is not None:
            mixed = [cd for cd in ok if cd[4] >= MIXING_EFOLDS]
            pick = max(mixed, key=lambda cd: (cd[0], cd[4])) if mixed else max(ok, key=lambda cd: (cd[4], cd[0]))
        else:
            pick = max(ok, key=lambda cd: (cd[1] * cd[2], cd[0]))
        rule = "mixing"
        beta, h, n, w, _ = pick
    # raise beta continuously at (h, n): the step's validity, the contraction and the W2 bound's terms do not
    # get worse, and the certificate reaches the target (within 1%)
    if temper and beta < beta_max:
        f = lambda b: _epsilon(c, mech, delta, b, h, n, batch, chains)[0]   # noqa: E731
        b2 = _bisect_beta(f, target, beta_max)
        if b2 is not None and b2 > beta:
            beta = b2
    w = _w2(c, beta, h, n, d)
    if rule == "w2":
        what = ("bound on W2(last draw, tempered posterior), Dalalyan & Karagulyan 2019 Thm 1, with |theta*| <= "
                "grad_bound / mu (prior mode at the origin)")
        if mech.startswith("sgld"):
            what += "; minibatch noise term NOT included (it depends on the data): heuristic for SGLD"
        bound = {"value": w, "what": what, "rule": rule}
    elif mu is not None:
        e = mu * h * n
        bound = {"value": w, "rule": rule, "efolds": e,
                 "what": f"heuristic: the Wasserstein bound (Dalalyan & Karagulyan 2019) is not informative here "
                         f"(its minimum does not halve {_r0(c, beta, d):.4g}, the bound for a chain that does not "
                         f"move); chose the largest inverse temperature whose chain contracts by mu h n = "
                         f"{e:.3g} e-folds at the proven strong convexity mu (>= {MIXING_EFOLDS:g} forgets the start) "
                         "with h <= 1/L (plan.diagnostics: the proven and heuristic contraction)"}
    else:
        bound = {"value": None, "rule": rule,
                 "what": "heuristic: the potential is not proven strongly convex (no Wasserstein bound applies); "
                         f"maximised the integration time n h = {n * h:.4g} with h <= 1/L"}
    notes = [f"searched inverse temperatures <= {beta_max:g}, step sizes, and n <= {max_steps} steps"]
    if n == max_steps and (rule == "w2" or mu is None or mu * h * n < MIXING_EFOLDS):
        notes.append("limited by max_steps: a larger compute budget may improve the plan")
    return beta, h, n, bound, tuple(notes)


def _calibrate_release(model, dom, kernel, num_steps, target, delta, an, plan_for, sites):
    if kernel.step_size is None or num_steps is None:
        raise AssumptionError("release calibration needs the chain: kernel=ULA(step_size=...) and num_steps=...")
    consts = sampler_constants(an.constants.to_dict(), kernel.sampler, kernel.step_size, kernel.batch_size,
                                kernel.clip_norm)
    coupling, failed = best_coupling(**{k: v for k, v in consts.items() if v is not None})
    if coupling is None:
        raise AssumptionError("no coupling bound is proven for this chain ("
                              + "; ".join(f"{s}: {w}" for s, w in failed) + "); use a contracting step size")
    specs = [SiteSpec(n, int(math.prod(s)) if s else 1, constrained=sup != "real") for n, s, sup in an.latent_sites]
    stat = coordinate_means(specs, select=list(sites) if sites else None)
    route = min(sensitivity_routes(stat, coupling, None), key=lambda r: r.sensitivity)
    k = stat.num_coords
    r = granularity(route.sensitivity / target)
    scale = (route.sensitivity + k * r) / target
    p = plan_for(kernel.inverse_temperature, kernel.step_size, num_steps, mech=f"{kernel.sampler}-path", check=False)
    return replace(p, mechanism="release", epsilon=target, delta=0.0, source=route.source, notes=p.notes + (
        f"Laplace noise scale {scale:.6g} per coordinate for the posterior means of "
        f"{', '.join(sites) if sites else 'all sites'} ({k} value(s)): (sensitivity {route.sensitivity:.6g} + "
        f"grid rounding {k * r:.3g}) / epsilon {target:g}; pure epsilon-DP, the chain itself is not published",),
        distance_bound={"value": scale, "what": "Laplace noise scale of each released mean"})
