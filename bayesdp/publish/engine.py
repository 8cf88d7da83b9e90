"""The release engine: one flow for every method, for the command line and for Python alike (docs/release.md §0).

``execute(source, spec, accountant, rng_key)``:

1. ``spec.check()``: every check of the release's parameters (nothing analysed, run or charged yet);
2. the analysis, ONCE per release (:func:`analyse`: the model's constants, its potential, the statistic), passed to
   the choice, the plans and the runs;
3. choose (:func:`choose`): the requested method, or with ``method="auto"`` the smallest predicted error among the
   registered methods that apply to the source (a chain that ran: only the methods that release that chain);
4. the accountant's check (refused over budget: nothing run, nothing drawn);
5. ``prepare`` (publishes nothing: the unpublished chain of a coupling release), reserve, ``run`` (the secure noise,
   or the private chain whose steps are the noise), commit (:func:`charge`);
6. the :class:`~bayesdp.publish.result.ReleaseResult`, each value with its method's predicted error.

The accountant comes from :func:`open_accountant`, the one place a ledger is opened from a path.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

from ..budget import as_accountant
from ..errors import AssumptionError, BudgetError
from .methods import registry
from .methods.base import Analysed, ChainSource, Drawn, MethodPlan
from .result import ReleaseResult
from .spec import ReleaseSpec, build_statistic
from ..analysis import analyze
from ..samplers import ModelPotential

__all__ = ["execute", "analyse", "choose", "charge", "draw", "open_accountant", "plan_release"]


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
    items = tuple(replace(it, predicted_rmse=plan.predicted_rmse, predicted_label=plan.predicted_label)
                  for it in f.pop("items"))
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
    accountant.check(plan.epsilon, plan.delta, curve=plan.curve, event=dict(plan.event))
    method = registry()[plan.method]
    if state is None:
        state = method.prepare(plan, analysed, rng_key)
    return charge(accountant, plan, lambda noise_eps: method.run(plan, analysed, state, rng_key, noise_eps),
                  chosen_by, private=not (rng_key is not None and plan.detail.get("chain_is_noise", False)))


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
        >>> acct = PrivacyAccountant(budget=1.0, budget_delta=1e-6)
        >>> spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="path", chain=ChainOptions(num_steps=100))
        >>> res = execute(src, spec, acct)
        >>> res.extra["method"]["settings"]["num_steps"], res.noise_scale, acct.remaining()["epsilon"]
        (100, 0.0, 0.0)
    """
    spec = spec if spec.checked else spec.check()
    acct = open_accountant(accountant)
    analysed, plan, why, considered = plan_release(source, spec)
    res = draw(analysed, plan, acct, rng_key, why)
    extra = dict(res.extra)
    extra["method"] = {**extra["method"], "considered": considered}
    return replace(res, extra=extra)
