"""The release engine: one flow for every method, for the command line and for Python alike (docs/release.md §0).

``execute(source, spec, accountant, rng_key)``:

1. ``spec.check()``: every check of the release's parameters (nothing analysed, run or charged yet);
2. the analysis, ONCE per release (:func:`analyse`: the model's constants, its potential, the statistic), passed to
   the choice, the plans and the runs;
3. choose (:func:`choose`): the requested method, or with ``method="auto"`` the smallest predicted error among the
   registered methods that apply to the source (a chain that ran: only the methods that release that chain);
4. the accountant's check (refused over budget: nothing run, nothing drawn);
   then, before anything is charged (:func:`check_release`, docs/release.md §12): a chain, plan or driver given
   as is must not be predicted 10x worse than a fresh release, and the prediction must beat the prior's own spread,
   unless ``spec.allow_uninformative``;
5. ``prepare`` (publishes nothing: the unpublished chain of a coupling release), reserve, ``run`` (the secure noise,
   or the private chain whose steps are the noise), commit (:func:`charge`);
6. the :class:`~bayesdp.publish.result.ReleaseResult`, each value with its method's predicted error.

The accountant comes from :func:`open_accountant`, the one place a ledger is opened from a path.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..budget import as_accountant
from ..errors import AssumptionError, BayesDPError, BudgetError
from .methods import registry
from .methods.base import Analysed, ChainSource, Drawn, MethodPlan
from .result import ReleaseResult
from .prior import UninformativeError, prior_spread, reference_variances
from .spec import ChainOptions, Mean, Median, ReleaseSpec, build_statistic
from ..analysis import analyze
from ..samplers import ModelPotential
from ..samplers.certify import require_32bit_mode
from ..analysis.session import one_analysis

__all__ = ["execute", "analyse", "choose", "charge", "draw", "open_accountant", "plan_release", "check_release",
           "check_informative", "check_given", "GIVEN_RATIO"]

#: a chain, plan or driver given as is is refused when its predicted squared error is this many times a fresh
#: release's (issue 22 item 1; docs/release.md §12.3)
GIVEN_RATIO = 10.0
#: the largest epsilon a spec accepts (``ReleaseSpec.check``): the search for a useful epsilon stops there
_EPS_MAX = 1e6


def open_accountant(accountant: Any, budget: float | None = None, budget_delta: float | None = None,
                    dataset: str | None = None):
    """The accountant a release charges: an accountant or a ledger as given, or the ledger at a path (created
    with ``budget`` when it does not exist).  The one place the engine opens a ledger.

    Args:
        accountant: an object with ``reserve`` and ``check`` (:class:`~bayesdp.budget.accountant.PrivacyAccountant`,
            :class:`~bayesdp.budget.ledger.Ledger`) or a ledger path.
        budget: the total epsilon of a new ledger.
        budget_delta: its delta.
        dataset: the dataset's name recorded in a new ledger.

    Returns:
        The accountant.

    Raises:
        AssumptionError: no accountant.
        BudgetError: a ledger path that does not exist, without ``budget``.

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> open_accountant(acct) is acct
        True
    """
    if accountant is None:
        raise AssumptionError("accountant = None: pass accountant=bayesdp.PrivacyAccountant(budget=...) or a ledger "
                              "(bayesdp.Ledger.open(path, budget=...) or its path)")
    return as_accountant(accountant, budget=budget, budget_delta=budget_delta, dataset=dataset)


def analyse(source: ChainSource, spec: ReleaseSpec) -> Analysed:
    """The data-independent part of a release, once: the analysis (constants from the domain and the record count),
    the potential and the statistic.

    Args:
        source: the chain source.
        spec: the checked spec.

    Returns:
        The :class:`~bayesdp.publish.methods.base.Analysed` bundle.

    Raises:
        BayesDPError: the analyser's refusals, or a statistic the model cannot support.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> an = analyse(src, ReleaseSpec("mean", epsilon=1.0).check())
        >>> an.dim, an.statistic.names
        (2, ('w[0]', 'w[1]'))
    """

    an = analyze(source.model, data=dict(source.data), domain=source.domain, model_kwargs=dict(source.model_kwargs),
                 clip_norm=source.kernel.get("clip_norm"), model_name=source.model_name)
    pot = ModelPotential(source.model, dict(source.data), dict(source.model_kwargs))
    stat = build_statistic(spec.statistic, pot, an, spec.range)
    return Analysed(source=source, analysis=an, potential=pot, statistic=stat, constants=an.constants.to_dict())


def choose(analysed: Analysed, spec: ReleaseSpec) -> tuple[MethodPlan, str, list[dict]]:
    """The method and its plan: the requested one, or (``method="auto"``) the smallest predicted error among the
    registered methods that apply to the source and may be chosen automatically.

    Args:
        analysed: the analysis bundle.
        spec: the checked spec.

    Returns:
        ``(plan, why, considered)``: ``considered`` lists every method looked at, its prediction or why it was
        left out.

    Raises:
        AssumptionError: the requested method does not apply or cannot be planned; no method applies.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> spec = ReleaseSpec("mean", epsilon=1.0).check()            # delta = 0: only the coupling release
        >>> plan, why, considered = choose(analyse(src, spec), spec)
        >>> plan.method, [c["method"] for c in considered if "not_applicable" in c]
        ('coupling', ['path', 'final', 'sample-aggregate'])
    """
    methods = registry()
    src = analysed.source
    if spec.method_name != "auto":
        m = methods[spec.method_name]
        why_not = m.applies(src)
        if why_not is not None:
            raise AssumptionError(f"method = {spec.method_name!r} does not apply: {why_not}")
        plan = m.plan(analysed, spec)
        return plan, "user", [plan.summary()]
    considered, plans = [], []
    for name, m in methods.items():
        why_not = m.applies(src) if m.auto else "not chosen automatically (ask for it with method=...)"
        if why_not is None:
            try:
                plan = m.plan(analysed, spec)
            except AssumptionError as exc:
                why_not = str(exc)
            else:
                plans.append(plan)
                considered.append(plan.summary())
                continue
        considered.append({"method": name, "not_applicable": why_not})
    if not plans:
        reasons = "; ".join(f"{c['method']}: {c['not_applicable']}" for c in considered)
        raise AssumptionError(f"no release method applies to this source and spec ({reasons})")

    def key(p: MethodPlan) -> float:
        return math.inf if p.predicted_rmse is None else float(p.predicted_rmse)

    best = min(plans, key=key)      # ties: registration order (coupling first)
    if best.detail.get("deferred"):  # a costly plan made only once chosen (the last draw's calibration)
        best = methods[best.method].plan(analysed, replace(spec, method=best.method))
    others = ", ".join(f"{p.method} {p.predicted_rmse:.3g}" for p in plans
                       if p is not best and p.predicted_rmse is not None)
    why = (f"auto: the smallest predicted root-mean-square error per value among the methods that apply "
           f"({best.method} {key(best):.3g} {best.predicted_label}" + (f"; {others}" if others else "") + ")")
    return best, why, considered


def charge(accountant: Any, plan: MethodPlan, run: Callable[[float], Drawn], chosen_by: str = "user",
           private: bool = True) -> ReleaseResult:
    """The common tail of every release: reserve the plan's charge, draw (``run(noise_epsilon)``), commit, and the
    :class:`~bayesdp.publish.result.ReleaseResult` with the plan's predicted error on every value.

    Args:
        accountant: the accountant (:func:`open_accountant`).
        plan: the method's plan (its charge: epsilon, delta, curve, event, certificate source).
        run: draws the release's randomness; receives the ledger's noise epsilon.
        chosen_by: why this method (recorded).
        private: False when an explicit key made the privacy noise reproducible.

    Returns:
        The release.

    Raises:
        BudgetError: over budget (nothing drawn).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.methods.coupling import coupling_plan, draw_noise
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> c = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> plan = coupling_plan(stat, c, ReleaseSpec(stat, epsilon=1.0).check(), None, {})
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> res = charge(acct, plan, lambda noise_eps: draw_noise(plan, np.array([0.5]), noise_eps))
        >>> res.items[0].predicted_rmse == plan.predicted_rmse, acct.remaining()["epsilon"]
        (True, 0.0)
    """
    if not private:          # the chain's noise is the privacy noise and an explicit key made it reproducible
        refuse = getattr(accountant, "refuse_not_private", None)
        if refuse is None or not hasattr(accountant, "exhaust"):
            raise BudgetError("a release whose privacy noise is seeded needs an accountant that can be exhausted "
                              "(bayesdp.PrivacyAccountant); run it without rng_key / --seed")
        refuse(None, f"this {plan.method} release")
    with accountant.reserve(plan.epsilon, plan.delta, plan.mechanism, plan.source_label, curve=plan.curve,
                            what=plan.what, event=dict(plan.event)) as res:
        res.mark_drawn()
        drawn = run(res.noise_epsilon)
        res.commit(dict(drawn.commit))
    if not private:
        accountant.exhaust(f"a seeded {plan.method} release")
    summary = res.summary or accountant.summary()
    f = dict(drawn.fields)
    # the plan's prediction, unless the run made its own at the settings it used (a path burn-in read off the path)
    items = tuple(replace(it, predicted_rmse=plan.predicted_rmse if it.predicted_rmse is None else it.predicted_rmse,
                          predicted_label=plan.predicted_label) for it in f.pop("items"))
    extra = dict(f.pop("extra", {}))
    extra["method"] = {**plan.summary(), "chosen_by": chosen_by}
    return ReleaseResult(items=items, epsilon=plan.epsilon, delta=float(plan.delta), remaining_budget=
                         summary["remaining_budget"],
                         ledger=None if getattr(accountant, "path", None) is None else str(accountant.path),
                         ledger_head=res.head, dp_event=dict(plan.event), extra=extra, private=private, **f)


def plan_release(source: ChainSource, spec: ReleaseSpec) -> tuple[Analysed, MethodPlan, str, list[dict]]:
    """Steps 1-3 of the module docstring: check, analyse once, choose.  Nothing is run or charged.

    Args:
        source: the chain source.
        spec: the spec (checked here).

    Returns:
        ``(analysed, plan, why, considered)``.

    Raises:
        AssumptionError: a bad parameter, or no method applies.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> _, plan, why, _ = plan_release(src, ReleaseSpec("mean", epsilon=1.0, delta=1e-6))
        >>> plan.method, plan.predicted_label, why.startswith("auto")
        ('path', 'heuristic', True)
    """
    spec = spec if spec.checked else spec.check()
    analysed = analyse(source, spec)
    plan, why, considered = choose(analysed, spec)
    return analysed, plan, why, considered


def _predicted(analysed: Analysed, spec: ReleaseSpec, method_name: str) -> float | None:
    """The predicted root-mean-square error per value of ``method_name`` for ``spec`` (``"auto"``: the smallest
    among the methods ``auto`` may choose for this source), from public inputs only; nothing is run (a last-draw
    prediction is made without its calibration)."""
    methods = registry()
    names = [n for n, m in methods.items() if m.auto] if method_name == "auto" else [method_name]
    best = None
    for n in names:
        m = methods[n]
        if m.applies(analysed.source) is not None:
            continue
        try:       # the last-draw method's plan alone (its calibration is made only once it is chosen)
            p = m.plan(analysed, replace(spec, method="auto") if n == "final" else spec)
        except BayesDPError:
            continue
        if p.predicted_rmse is not None and math.isfinite(p.predicted_rmse):
            best = float(p.predicted_rmse) if best is None else min(best, float(p.predicted_rmse))
    return best


def _ceil2(x: float) -> float:
    """``x`` rounded UP to two significant digits (so that the advice is never below what is needed)."""
    if not (x > 0 and math.isfinite(x)):
        return x
    e = math.floor(math.log10(x)) - 1
    return math.ceil(x / 10.0 ** e * (1 - 1e-12)) * 10.0 ** e


def _useful_epsilon(analysed: Analysed, spec: ReleaseSpec, method_name: str, target_rmse: float) -> float | None:
    """The smallest epsilon (to 5%, rounded up to two digits) at which the predicted error per value drops below
    ``target_rmse`` (bisection in log epsilon over the method's own plan; public inputs only), or None when no
    epsilon up to 1e6 would."""

    def ok(e: float) -> bool:
        r = _predicted(analysed, replace(spec, epsilon=e), method_name)
        return r is not None and r < target_rmse

    lo, hi = float(spec.epsilon), _EPS_MAX
    if not ok(hi):
        return None
    while hi / lo > 1.05:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return _ceil2(hi)


#: the delta a pure-DP refusal suggests trying (a common choice well below 1 / m for m up to 1e5)
_SUGGESTED_DELTA = 1e-6


def _useful_delta(analysed: Analysed, spec: ReleaseSpec, target_rmse: float) -> bool:
    """Whether the same release at ``delta = 1e-6`` is predicted below ``target_rmse`` (public inputs only)."""
    try:
        r = _predicted(analysed, replace(spec, delta=_SUGGESTED_DELTA).check(), spec.method_name)
    except BayesDPError:
        return False
    return r is not None and r < target_rmse


def _useful_records(analysed: Analysed, spec: ReleaseSpec, method_name: str, target_rmse: float
                    ) -> tuple[int | None, str]:
    """The smallest record count (to 10%, rounded up to two digits) at which the predicted error per value drops
    below ``target_rmse`` at the same epsilon: the model re-analysed WITHOUT data at a larger count (public: the
    domain, the records' shapes, the count), searched by factors of 4 then bisection; ``(None, why)`` when more
    records do not lower the prediction (it stops falling) or none up to 1e9 would."""
    src = analysed.source
    shapes = {k: tuple(np.shape(v))[1:] for k, v in src.data.items()}
    m0 = int(analysed.analysis.data_size or 0)
    if m0 < 1:
        return None, "the record count is unknown"

    def pred(m: int) -> float | None:
        try:
            an = analyze(src.model, data=None, domain=src.domain, model_kwargs=dict(src.model_kwargs),
                         clip_norm=src.kernel.get("clip_norm"), data_size=m, record_shapes=shapes,
                         model_name=src.model_name)
        except BayesDPError:
            return None
        return _predicted(replace(analysed, analysis=an, constants=an.constants.to_dict()), spec, method_name)

    last = _predicted(analysed, spec, method_name)
    lo, hi = m0, 4 * m0
    while True:
        r = pred(hi)
        if r is None or last is None:
            return None, "its prediction at more records could not be made"
        if r < target_rmse:
            break
        if r > 0.95 * last:
            return None, "more records would not lower this method's prediction"
        if hi > 1e9:
            return None, "no record count up to 1e9 would"
        lo, hi, last = hi, 4 * hi, r
    while hi / lo > 1.1:
        mid = int(math.sqrt(lo * hi))
        r = pred(mid)
        lo, hi = (lo, mid) if (r is not None and r < target_rmse) else (mid, hi)
    return int(_ceil2(float(hi))), ""


def _spread(analysed: Analysed):
    """The prior's spread of the source's model (:func:`~bayesdp.publish.prior.prior_spread`): shapes and the record
    count only."""
    src = analysed.source
    shapes = {k: tuple(np.shape(v))[1:] for k, v in src.data.items()}
    dtypes = {k: (np.int32 if np.issubdtype(np.asarray(v).dtype, np.integer) else
                  np.bool_ if np.asarray(v).dtype == bool else np.float32) for k, v in src.data.items()}
    m = analysed.analysis.data_size or (len(next(iter(src.data.values()))) if src.data else 1)
    return prior_spread(src.model, shapes, dtypes, dict(src.model_kwargs), int(m), src.model_name)


def check_informative(analysed: Analysed, plan: MethodPlan, spec: ReleaseSpec) -> dict:
    """Never worse than knowing nothing, silently (docs/release.md §12.1): the plan's predicted squared error summed
    over the released values against the prior's total variance over the same values (public: the model's prior
    sites only).  Values without a reference (a prior without a finite variance, an unidentified prior, a user
    function without a range) are left out of both sums and named in a warning; with none left the check is
    skipped with a warning.  Never a silent pass.

    Args:
        analysed: the analysis bundle.
        plan: the chosen plan (its ``predicted_rmse``).
        spec: the checked spec (``allow_uninformative``).

    Returns:
        ``{"checked", "predicted_squared_error", "prior_variance", "values_compared", "useful_epsilon",
        "warnings"}`` (JSON-ready).

    Raises:
        UninformativeError: predicted squared error >= the prior's total variance, without
            ``spec.allow_uninformative`` (one line: both numbers and the epsilon that would make it useful).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> an, plan, _, _ = plan_release(src, ReleaseSpec("mean", epsilon=0.5))     # coupling, Laplace noise
        >>> check_informative(an, plan, ReleaseSpec("mean", epsilon=0.5).check())
        Traceback (most recent call last):
        ...
        bayesdp.publish.prior.UninformativeError: ...
    """
    stat = analysed.statistic
    k = stat.num_coords
    out: dict = {"checked": False, "warnings": [], "rule": "predicted squared error summed over the released values "
                 "< the prior's total variance over the same values (docs/release.md §12.1)"}
    warn = out["warnings"]
    if plan.predicted_rmse is None or not math.isfinite(plan.predicted_rmse):
        warn.append(f"prior check skipped: the {plan.method} release has no predicted error to compare with the "
                    "prior's spread")
        return out
    try:
        spread = _spread(analysed)
    except Exception as exc:  # noqa: BLE001 - an advisory reading of the prior: skipped with a labelled warning
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        warn.append(f"prior check skipped: the model's prior sites could not be read ({type(exc).__name__}: "
                    f"{first})")
        return out
    refs = reference_variances(spec.statistic, stat, spread)
    compared = [v for v, _ in refs if v is not None]
    left_out = [what for v, what in refs if v is None]
    if left_out:
        warn.append(f"prior check skipped for {len(left_out)} of the {k} values (" + "; ".join(left_out[:3])
                    + (" ..." if len(left_out) > 3 else "") + ")" + ("" if compared else
                                                                      ": nothing was compared"))
    if not compared:
        return out
    rmse = float(plan.predicted_rmse)
    mse, var = len(compared) * rmse * rmse, float(sum(compared))
    out.update(checked=True, predicted_squared_error=mse, prior_variance=var, values_compared=len(compared),
               predicted_label=plan.predicted_label)
    if mse < var:
        return out
    target = math.sqrt(var / len(compared))
    eps = _useful_epsilon(analysed, spec, spec.method_name, target)
    m_need, m_why = _useful_records(analysed, spec, spec.method_name, target)
    out["useful_epsilon"], out["useful_records"] = eps, m_need
    fix = (f"it would beat the prior from epsilon = {eps:g}" if eps is not None
           else "no epsilon up to 1e6 would make it beat the prior")
    fix += (f", or at this epsilon from {m_need} records" if m_need is not None else f" ({m_why} at this epsilon)")
    if not spec.delta > 0 and _useful_delta(analysed, spec, target):
        fix += f", or at this epsilon with delta = {_SUGGESTED_DELTA:g} (approximate DP)"
    what = (f"the {plan.method} release is predicted worse than knowing nothing: predicted squared error "
            f"{mse:.3g} summed over {len(compared)} value(s) ({plan.predicted_label}) >= the prior's total variance "
            f"{var:.3g} over the same values; {fix}")
    if not spec.allow_uninformative:
        raise UninformativeError(f"{what}; nothing was charged; pass allow_uninformative=True "
                                 "(ReleaseSpec(..., allow_uninformative=True), CLI --allow-uninformative) to release "
                                 "it anyway")
    warn.append(what + "; released because allow_uninformative=True")
    return out


def _fresh_source(src: ChainSource) -> ChainSource:
    """The source of a fresh release of the same model, domain and records with every setting open (a kernel at
    temperature 1, full-batch ULA, no clipping): what ``bayesdp.release(bayesdp.ULA(model, domain=...), ...)``
    plans."""

    def not_run(*_args):              # only predictions are made: a last-draw plan is never calibrated here
        raise AssumptionError("internal: the fresh release is only predicted")

    return replace(src, kernel={"sampler": "ula", "step_size": None, "inverse_temperature": 1.0, "batch_size": None,
                                "clip_norm": None},
                   given="kernel", num_steps=None, num_chains=None, draws=None, run_kind="path", thinning=1,
                   plan=None, plan_final=src.plan_final or not_run)


def check_given(analysed: Analysed, plan: MethodPlan, spec: ReleaseSpec) -> dict | None:
    """A chain, plan or driver given as is (docs/release.md §12.3): its predicted squared error against a fresh
    release's (same model, domain, records and statistic; every setting open; public inputs only, nothing run).

    Args:
        analysed: the analysis bundle.
        plan: the chosen plan.
        spec: the checked spec.

    Returns:
        None for a kernel (nothing given as is), else ``{"given", "predicted_rmse", "fresh_predicted_rmse",
        "ratio", "warnings"}``.

    Raises:
        UninformativeError: the given source's predicted squared error is at least :data:`GIVEN_RATIO` times the
            fresh release's, without ``spec.allow_uninformative`` (one line: both predictions and the call).

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> check_given(NS(source=NS(given="kernel")), None, None) is None
        True
    """
    src = analysed.source
    if src.given == "kernel":
        return None
    out: dict = {"given": src.given, "warnings": [], "predicted_rmse": plan.predicted_rmse}
    fresh = _fresh_source(src)
    try:
        fresh_an = (replace(analysed, source=fresh) if src.kernel.get("clip_norm") is None
                    else analyse(fresh, spec))
    except BayesDPError as exc:
        out["warnings"].append(f"fresh-release comparison skipped: {str(exc)[:200]}")
        return out
    fresh_spec = replace(spec, method="auto", noise="auto", chain=ChainOptions(max_steps=spec.max_steps))
    best = _predicted(fresh_an, fresh_spec, "auto")
    out["fresh_predicted_rmse"] = best
    if plan.predicted_rmse is None or best is None or not best > 0:
        out["warnings"].append("fresh-release comparison skipped: no predicted error to compare")
        return out
    ratio = (float(plan.predicted_rmse) / best) ** 2
    out["ratio"] = ratio
    if ratio < GIVEN_RATIO:
        return out
    k = analysed.statistic.num_coords
    stat = spec.statistic
    stat_s = ("'mean'" if stat == Mean() else "'median'" if stat == Median() else repr(stat))
    what = (f"the {src.given} given as is ({plan.method} release) is predicted {ratio:.3g}x worse than a fresh "
            f"release: predicted squared error {k * plan.predicted_rmse ** 2:.3g} against {k * best * best:.3g} "
            f"summed over the {k} value(s) ({plan.predicted_label})")
    call = (f"bayesdp.release(bayesdp.ULA(model, domain=domain), {stat_s}, data=data, epsilon={spec.epsilon:g}, "
            f"delta={float(spec.delta):g}, accountant=...)")
    if not spec.allow_uninformative:
        raise UninformativeError(f"{what}; nothing was charged; the better answer: {call}; or pass "
                                 "allow_uninformative=True to release it as given")
    out["warnings"].append(f"{what}; released as given because allow_uninformative=True (better: {call})")
    return out


def check_release(analysed: Analysed, plan: MethodPlan, spec: ReleaseSpec) -> dict:
    """Both checks before anything is charged (:func:`check_given`, then :func:`check_informative`).

    Args:
        analysed: the analysis bundle.
        plan: the chosen plan.
        spec: the checked spec.

    Returns:
        ``{"prior": ..., "given": ..., "warnings": [...]}`` (what the result records under ``extra``).

    Raises:
        UninformativeError: either check refuses (nothing charged).

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> plan = NS(predicted_rmse=None, method="path")
        >>> check_release(NS(source=NS(given="kernel"), statistic=NS(num_coords=1)), plan, None)["warnings"]
        ["prior check skipped: the path release has no predicted error to compare with the prior's spread"]
    """
    given = check_given(analysed, plan, spec)
    prior = check_informative(analysed, plan, spec)
    warnings = list(given["warnings"] if given else []) + list(prior["warnings"])
    return {"prior": {k: v for k, v in prior.items() if k != "warnings"},
            "given": None if given is None else {k: v for k, v in given.items() if k != "warnings"},
            "warnings": warnings}


def draw(analysed: Analysed, plan: MethodPlan, accountant: Any, rng_key=None, chosen_by: str = "user",
         state: Any = None) -> ReleaseResult:
    """Steps 4-6 of the module docstring for a chosen plan: the accountant's check, ``prepare`` (unless its
    ``state`` is given), reserve, ``run``, commit.

    Args:
        analysed: the analysis bundle.
        plan: the chosen plan.
        accountant: the accountant (:func:`open_accountant`).
        rng_key: an explicit key of the chains run here (module docstring), or None (OS CSPRNG).
        chosen_by: why this method (recorded).
        state: the result of the method's ``prepare`` when the caller ran it already.

    Returns:
        The release.

    Raises:
        BudgetError: over budget (nothing run, nothing drawn).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> analysed, plan, why, _ = plan_release(src, ReleaseSpec("mean", epsilon=1.0, chain=ChainOptions(200)))
        >>> res = draw(analysed, plan, PrivacyAccountant(budget=1.0), chosen_by=why)
        >>> res.names, res.private
        (('w[0]', 'w[1]'), True)
    """
    require_32bit_mode(f"the {plan.method} release", False)    # the chain runs the program the analysis proved
    accountant.check(plan.epsilon, plan.delta, curve=plan.curve, event=dict(plan.event))
    method = registry()[plan.method]
    if state is None:
        state = method.prepare(plan, analysed, rng_key)
    return charge(accountant, plan, lambda noise_eps: method.run(plan, analysed, state, rng_key, noise_eps),
                  chosen_by, private=not (rng_key is not None and plan.detail.get("chain_is_noise", False)))


@one_analysis()   # the model traced and its structure proven once per call (analysis/session.py)
def execute(source: ChainSource, spec: ReleaseSpec, accountant: Any, rng_key=None) -> ReleaseResult:
    """One release (the module docstring's steps).

    Args:
        source: the chain source (from the layer above).
        spec: the release spec.
        accountant: the accountant (:func:`open_accountant`).
        rng_key: an explicit key of the chains run here (a seed): their noise becomes reproducible; a path or
            last-draw release is then NOT private and says so; the added noise always comes from the OS CSPRNG.

    Returns:
        The :class:`~bayesdp.publish.result.ReleaseResult`.

    Raises:
        AssumptionError: a bad parameter or no method (nothing charged).
        BudgetError: over budget (nothing run, nothing drawn).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis import Domain
        >>> from bayesdp.models import logistic
        >>> from bayesdp.publish.methods.base import ChainSource
        >>> from bayesdp.publish.spec import ChainOptions, ReleaseSpec
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> src = ChainSource(logistic, {"X": X, "y": (rng.random(200) < 0.5).astype(float)},
        ...                   Domain.parse(["X.norm=1", "y.values=0,1"]))
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> acct = PrivacyAccountant(budget=0.5, budget_delta=1e-6)
        >>> spec = ReleaseSpec("mean", epsilon=0.5, delta=1e-6, method="path", chain=ChainOptions(num_steps=100))
        >>> execute(src, spec, acct)                       # 200 records: predicted worse than the prior (§12)
        Traceback (most recent call last):
        ...
        bayesdp.publish.prior.UninformativeError: the path release is predicted worse than knowing nothing: ...
        >>> res = execute(src, replace(spec, allow_uninformative=True), acct)
        >>> res.extra["method"]["settings"]["num_steps"], res.noise_scale, acct.remaining()["epsilon"]
        (100, 0.0, 0.0)
    """
    spec = spec if spec.checked else spec.check()
    acct = open_accountant(accountant)
    analysed, plan, why, considered = plan_release(source, spec)
    acct.check(plan.epsilon, plan.delta, curve=plan.curve, event=dict(plan.event))     # over budget: refused first
    checks = check_release(analysed, plan, spec)         # before anything is charged (docs/release.md §12)
    res = draw(analysed, plan, acct, rng_key, why)
    extra = dict(res.extra)
    extra["method"] = {**extra["method"], "considered": considered}
    extra["informative"] = {"prior": checks["prior"], "given": checks["given"]}
    extra["warnings"] = list(extra.get("warnings", ())) + checks["warnings"]
    return replace(res, extra=extra)
