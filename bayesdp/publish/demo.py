"""The ``bayesdp demo`` pipeline as a Python function: certify, sample and release noisy posterior
means of a Bayesian logistic regression on the bundled Breast Cancer Wisconsin (Diagnostic) data.

Defaults (reasons in docs/demo.md):

* model ``logistic`` with prior ``w ~ N(0, 0.5^2 I)``; features mapped into the unit ball by the
  public map :func:`bayesdp.publish.data.scale_to_unit_ball`; domain ``X.norm=1, y.values=0,1``;
* ULA, step size ``1/total_smoothness``, 2 chains of 4000 steps, half dropped as burn-in; the chain
  is never published;
* statistic ``profiles``: the predicted probability of malignancy at two PUBLIC reference records (every
  measurement at 25 % resp. 40 % of its public maximum).  Both records lie on the line through the origin
  spanned by ``x_dir = (1, ..., 1)/sqrt(30)`` (``x_p = (2p - 1) x_dir``), so their logits are ``(2p - 1) u``
  with the single number ``u = x_dir . w``: the release is the noisy posterior mean of ``u`` (Lipschitz 1,
  one value) and the two probabilities ``sigmoid((2p - 1) u)`` are computed from it (post-processing: in
  [0, 1], intervals mapped through the monotone sigmoid).  ``profile-means`` releases the posterior means of
  the two probabilities themselves (L1 Lipschitz ``sum_j |x_j| / 4``, clamped to [0, 1]);
  ``coefficients`` the 30 coefficient means (L1 Lipschitz ``sqrt(30)``; much noisier at eps = 1);
* epsilon 1 from a ledger with total budget 2 (a temporary ledger unless ``ledger`` is given).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import AssumptionError, positive, positive_int
from ..resources import check_output_dir, check_state_file
from .data import PUBLIC_UPPER_BOUNDS, load_breast_cancer, scale_to_unit_ball
from .spec import ChainOptions, ReleaseSpec
from .statistics import SiteSpec, Statistic, coordinate_means, probability_at_profiles
from ..certificate import BoundReport

if TYPE_CHECKING:                     # annotations only: the release methods load JAX
    from .methods.base import ChainSource

__all__ = ["run_demo", "format_demo", "DemoResult", "demo_statistic", "reference_profiles", "profile_direction",
           "direction_mean", "derived_probabilities"]

DEFAULT_EPSILON = 1.0
DEFAULT_BUDGET = 2.0
DEFAULT_PRIOR_SCALE = 0.5
DEFAULT_NUM_STEPS = 4000
QUICK_NUM_STEPS = 600
DEFAULT_NUM_CHAINS = 2
DEFAULT_OUT_DIR = "bayesdp-demo"
#: reference profiles: every feature at this fraction of its public upper bound
PROFILE_FRACTIONS = (0.25, 0.40)
DOMAIN = ("X.norm=1", "y.values=0,1")
STATISTICS = ("profiles", "profile-means", "coefficients")
DATASET_LABEL = "bayesdp bundled: Breast Cancer Wisconsin (Diagnostic), 569 records"


def reference_profiles(fractions: Sequence[float] = PROFILE_FRACTIONS) -> tuple[np.ndarray, tuple[str, ...]]:
    """Public reference records in the model's feature space: every raw measurement at ``p`` times its
    public upper bound, mapped by the same public map as the data (no record is used).

    Args:
        fractions: the fractions ``p`` of the public upper bounds, each in [0, 1].

    Returns:
        ``(records (len(fractions), 30), names)``.

    Raises:
        AssumptionError: a fraction outside [0, 1].

    Examples:
        >>> P, names = reference_profiles()
        >>> P.shape, names[0]
        ((2, 30), 'P(malignant | all features at 25% of max)')
    """
    ub = np.asarray(PUBLIC_UPPER_BOUNDS, dtype=np.float64)
    for p in fractions:
        if not 0.0 <= p <= 1.0:
            raise AssumptionError(f"profile fraction = {p!r} must be in [0, 1] (a fraction of the public maximum)")
    raw = np.array([[p * u for u in ub] for p in fractions])
    names = tuple(f"P(malignant | all features at {round(100 * p)}% of max)" for p in fractions)
    return scale_to_unit_ball(raw), names


def profile_direction(dim: int = 30) -> np.ndarray:
    """``x_dir = (1, ..., 1)/sqrt(dim)``: the direction of every reference profile (public).

    Args:
        dim: the number of features.

    Returns:
        The unit vector ``(1, ..., 1)/sqrt(dim)``.

    Examples:
        >>> profile_direction(4).tolist()
        [0.5, 0.5, 0.5, 0.5]
    """
    return np.full(dim, 1.0 / math.sqrt(dim))


def direction_mean(dim: int):
    """The posterior mean of ``u = x_dir . w`` (one value).  ``|u(w) - u(w')| <= |x_dir|_2 |w - w'|_2`` with
    ``|x_dir|_2 = 1`` (Cauchy-Schwarz, attained along x_dir): L1 = L2 Lipschitz constant 1 (rounded up).

    Args:
        dim: the number of coefficients ``w`` (the first ``dim`` unconstrained coordinates).

    Returns:
        The one-value :class:`~bayesdp.publish.statistics.Statistic`.

    Examples:
        >>> stat = direction_mean(4)
        >>> stat.names, round(stat.lipschitz, 6)
        (('u = x_dir . w',), 1.0)
        >>> stat.evaluate(np.ones((3, 4))).tolist()          # x_dir . (1, 1, 1, 1) = 4 / 2
        [2.0]
    """

    xd = profile_direction(dim)
    L = float(np.linalg.norm(xd)) * (1.0 + 1e-12)

    def fn(z: np.ndarray) -> np.ndarray:
        return np.asarray(z, dtype=np.float64)[:, :dim] @ xd[:, None]

    return Statistic(names=("u = x_dir . w",), fn=fn, lipschitz=L,
                     description="posterior mean of u = x_dir . w, x_dir = (1, ..., 1)/sqrt(30) (the direction of "
                                 "both reference records)",
                     lipschitz_source="|x_dir|_2 = 1 (Cauchy-Schwarz; docs/demo.md §3)", l2_lipschitz=L,
                     l2_lipschitz_source="|x_dir|_2 = 1")


def derived_probabilities(u_value: float, u_interval, fractions=PROFILE_FRACTIONS) -> list[dict]:
    """``sigmoid((2p - 1) u)`` at each reference profile, with the interval of ``u`` mapped through the monotone
    map (post-processing of the released u).

    Args:
        u_value: the released u.
        u_interval: its interval ``(lo, hi)``.
        fractions: the reference profiles' fractions (:func:`reference_profiles`).

    Returns:
        One dict per profile: ``name``, ``value``, ``interval`` and ``logit_factor`` ``2p - 1``.

    Examples:
        >>> d = derived_probabilities(0.0, (-1.0, 1.0))[0]          # p = 0.25: sigmoid(-0.5 u)
        >>> d["value"], [round(x, 6) for x in d["interval"]]        # sigmoid(-0.5), sigmoid(0.5)
        (0.5, [0.377541, 0.622459])
    """
    _, names = reference_profiles(fractions)
    out = []
    for p, name in zip(fractions, names):
        c = 2.0 * p - 1.0
        sig = lambda t: 0.5 * (1.0 + math.tanh(0.5 * c * t))  # noqa: E731 - sigmoid(c t), overflow-free
        lo, hi = sorted((sig(u_interval[0]), sig(u_interval[1])))
        out.append({"name": name, "value": sig(u_value), "interval": [lo, hi], "logit_factor": c})
    return out


def demo_statistic(kind: str, dim: int):
    """The statistic the demo releases (docs/demo.md).

    Args:
        kind: ``"profiles"`` (:func:`direction_mean`), ``"profile-means"`` (the probabilities at
            :func:`reference_profiles`) or ``"coefficients"`` (the ``dim`` coefficient means).
        dim: the number of features.

    Returns:
        The :class:`~bayesdp.publish.statistics.Statistic`.

    Raises:
        AssumptionError: an unknown ``kind``.

    Examples:
        >>> stat = demo_statistic("coefficients", 3)
        >>> stat.names, round(stat.lipschitz, 6)                  # sqrt(3)
        (('w[0]', 'w[1]', 'w[2]'), 1.732051)
    """

    if kind == "profiles":
        return direction_mean(dim)
    if kind == "profile-means":
        P, names = reference_profiles()
        return probability_at_profiles(P, names)
    if kind == "coefficients":
        return coordinate_means([SiteSpec("w", dim)])
    raise AssumptionError(f"statistic = {kind!r} must be one of {', '.join(STATISTICS)}")


@dataclass
class DemoRun:
    """One demo release through the engine: the release and, NOT FOR RELEASE, the non-private estimate.

    Attributes:
        result: the :class:`~bayesdp.publish.result.ReleaseResult` (what may be published).
        nonprivate: the non-private Monte Carlo estimate: NEVER publish.
        statistic: the released statistic.
        coupling: the coupling bound.
        report: the analyser's certificate table (what publishing the chain itself would cost).
        timing: seconds spent, by stage.
    """

    result: Any
    nonprivate: np.ndarray
    statistic: Any
    coupling: Any
    report: Any
    timing: dict = field(default_factory=dict)


@dataclass
class DemoResult:
    """What :func:`run_demo` returns: the release, the certificate table, the plots and the ledger's state.

    Attributes:
        run: the :class:`DemoRun` (the release and, NOT FOR RELEASE, the non-private estimate).
        table: the analyzer's certificate table.
        out_dir: where the plots are written.
        plots: the written plot files by name.
        ledger_summary: the ledger's summary after the release.
        ledger_is_temporary: whether the ledger was a temporary one (deleted).
        timing: seconds spent, by stage.
        settings: the demo's settings.

    Examples:
        >>> d = run_demo(quick=True, num_steps=20, num_chains=1, plots=False)
        >>> d.release.names, d.ledger_is_temporary, d.plots
        (('u = x_dir . w',), True, {})
        >>> sorted(d.to_dict())[:3]
        ['certificate_table', 'derived', 'ledger']
    """

    run: Any                           # DemoRun
    table: str                         # the analyzer's certificate table
    out_dir: str
    plots: dict = field(default_factory=dict)
    ledger_summary: dict = field(default_factory=dict)
    ledger_is_temporary: bool = True
    timing: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    @property
    def release(self):
        """The :class:`~bayesdp.publish.release.ReleaseResult` (the published part)."""
        return self.run.result

    @property
    def nonprivate(self) -> np.ndarray:
        """NOT FOR RELEASE: the non-private Monte Carlo estimate before noise."""
        return self.run.nonprivate

    @property
    def derived(self) -> list[dict]:
        """The probabilities computed from the released u (``profiles`` only; post-processing), else []."""
        if self.settings.get("statistic") != "profiles":
            return []
        it = self.release.items[0]
        return derived_probabilities(it.value, it.interval)

    @property
    def derived_nonprivate(self) -> list[float]:
        """NOT FOR RELEASE: the same probabilities from the non-private u."""
        if self.settings.get("statistic") != "profiles":
            return []
        return [d["value"] for d in derived_probabilities(float(self.nonprivate[0]), (0.0, 0.0))]

    def to_dict(self) -> dict:
        """The JSON document ``bayesdp demo --json`` prints (the non-private estimate marked NOT FOR RELEASE).

        Returns:
            A JSON-ready dict.
        """
        out = {"settings": dict(self.settings), "release": self.run.result.to_dict(),
               "derived": {"note": "computed from the released values only (post-processing: no privacy cost)",
                           "probabilities": self.derived},
               "not_for_release_nonprivate_estimate": {
                   "warning": "NOT FOR RELEASE (non-private): shown only to judge the noise",
                   "names": list(self.release.names), "values": [float(v) for v in self.nonprivate]},
               "certificate_table": self.table, "plots": dict(self.plots), "out_dir": self.out_dir,
               "ledger": {"temporary": self.ledger_is_temporary,
                          **{k: v for k, v in self.ledger_summary.items() if k != "releases"}},
               "timing": dict(self.timing)}
        return out


def _privacy_curve_plot(path: str, report, release_cert, epsilon: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    deltas = np.logspace(-10, -1, 60)
    fig, ax = plt.subplots(figsize=(7, 6))
    for name in ("posterior", "ula-final", "ula-path"):
        rep = report.mechanisms.get(name)
        if not isinstance(rep, BoundReport) or rep.best is None:
            continue
        eps = []
        for d in deltas:
            try:
                eps.append(float(rep.best.epsilon(float(d))))
            except Exception:  # noqa: BLE001 - a curve undefined at some delta is simply not drawn there
                eps.append(np.nan)
        ax.plot(deltas, eps, label=f"publishing {name} ({rep.best.source})")
    rel = [float(release_cert.epsilon(float(d))) for d in deltas]
    ax.plot(deltas, rel, "k-", lw=2.5, label=f"this release: noisy means, pure eps = {epsilon:g} ({release_cert.source})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon(delta)")
    ax.set_title("Privacy curves: publishing the chain vs releasing noisy means")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _values_plot(path: str, names, released, nonprivate, intervals, epsilon: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(names)
    x = np.arange(k)
    lo = np.array([iv[0] for iv in intervals])
    hi = np.array([iv[1] for iv in intervals])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * k + 3), 4.5))
    ax.errorbar(x - 0.1, released, yerr=[released - lo, hi - released], fmt="o", color="C0", capsize=3,
                label=f"released (eps = {epsilon:g}) with 95% noise interval")
    ax.plot(x + 0.1, nonprivate, "s", color="C3", label="non-private estimate (NOT FOR RELEASE)")
    ax.set_xticks(x)
    short = [n if len(n) < 24 else n.replace("P(malignant | all features at ", "P(mal. | ").replace(" of max)", ")")
             for n in names]
    ax.set_xticklabels(short, rotation=90 if k > 4 else 0, fontsize=7 if k > 4 else 9)
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_title("Released vs non-private posterior means")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _source(model, name: str, data, prior_scale: float) -> ChainSource:
    """The demo's chain source: the model, the validated records, the public domain, full-batch ULA."""
    from ..analysis import Domain
    from ..analysis.records import validate_records
    from .methods.base import ChainSource

    kw = {"prior_scale": float(prior_scale)}
    data, _ = validate_records(data, model, kw)
    return ChainSource(model=model, data=data, domain=Domain.parse(list(DOMAIN)), model_kwargs=kw, model_name=name,
                       kernel={"sampler": "ula"})


def _release(src: ChainSource, spec: ReleaseSpec, acct, seed) -> DemoRun:
    """The demo's coupling release through the engine, keeping (NOT FOR RELEASE) the non-private estimate."""
    from ..analysis import certify
    from .engine import draw, plan_release
    from .methods import registry

    t0 = time.perf_counter()
    analysed, plan, why, _ = plan_release(src, spec)
    s = plan.settings
    report = certify(src.model, data=dict(src.data), domain=src.domain, step_size=s["step_size"],
                     num_steps=s["num_steps"], model_kwargs=dict(src.model_kwargs), sampler="ula",
                     analysis=analysed.analysis, model_name=src.model_name, require_any=False)
    acct.check(plan.epsilon, plan.delta, curve=plan.curve, event=dict(plan.event))
    t1 = time.perf_counter()
    state = registry()["coupling"].prepare(plan, analysed, seed)
    t2 = time.perf_counter()
    result = draw(analysed, plan, acct, seed, why, state=state)
    return DemoRun(result=result, nonprivate=np.asarray(state[0]), statistic=plan.detail["statistic"],
                   coupling=plan.detail["coupling"], report=report,
                   timing={"analyze_s": t1 - t0, "chain_s": t2 - t1, "release_s": time.perf_counter() - t2})


def run_demo(epsilon: float = DEFAULT_EPSILON, *, out_dir: str | None = None, ledger: str | None = None,
             budget: float = DEFAULT_BUDGET, quick: bool = False, statistic: str = "profiles",
             prior_scale: float = DEFAULT_PRIOR_SCALE, num_steps: int | None = None,
             num_chains: int = DEFAULT_NUM_CHAINS, seed: int | None = None, plots: bool = True) -> DemoResult:
    """Run the demo; write the plots into ``out_dir`` (default ``./bayesdp-demo``, created if missing).

    ``ledger=None`` uses a temporary ledger with total epsilon ``budget`` (deleted afterwards);
    a given ledger file is created with ``budget`` if missing and charged otherwise.

    Args:
        epsilon: the release's epsilon.
        out_dir: where the plots are written.
        ledger: a ledger file to charge (None: a temporary one).
        budget: the total epsilon of a new ledger.
        quick: fewer steps (``QUICK_NUM_STEPS``) unless ``num_steps`` is given.
        statistic: ``"profiles"``, ``"profile-means"`` or ``"coefficients"`` (:func:`demo_statistic`).
        prior_scale: the prior's scale of the coefficients.
        num_steps: ULA steps per chain.
        num_chains: the number of chains.
        seed: a seed of the (unpublished) chains (None: OS CSPRNG keys).
        plots: whether to write the plots.

    Returns:
        The :class:`DemoResult`.

    Raises:
        AssumptionError: a bad parameter or an unusable ``out_dir`` / ``ledger`` path (before anything runs).
        BudgetError: the ledger has not enough budget left.

    Examples:
        >>> d = run_demo(epsilon=1.0, quick=True, num_steps=20, num_chains=1, plots=False)
        >>> d.release.epsilon, d.settings["num_steps"]
        (1.0, 20)
        >>> run_demo(statistic="median")
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: statistic = 'median' must be one of profiles, profile-means, coefficients
    """
    from ..analysis.loading import load_model
    from .engine import open_accountant

    t0 = time.perf_counter()
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if statistic not in STATISTICS:
        raise AssumptionError(f"statistic = {statistic!r} must be one of {', '.join(STATISTICS)}")
    positive("budget", budget, "pass a positive total epsilon")
    positive("prior_scale", prior_scale, "the prior's scale must be positive")
    steps = positive_int("num_steps", num_steps if num_steps is not None else
                         (QUICK_NUM_STEPS if quick else DEFAULT_NUM_STEPS))
    positive_int("num_chains", num_chains)
    out_dir = os.path.abspath(out_dir or DEFAULT_OUT_DIR)
    # every path is checked before anything runs: a bad --out-dir used to fail after the whole run
    if plots:
        check_output_dir(out_dir, "out_dir")
    if ledger is not None:
        check_state_file(ledger, "ledger")
    X, y, _ = load_breast_cancer()
    data = {"X": scale_to_unit_ball(X).astype(np.float32), "y": y.astype(np.float32)}
    model, name = load_model("logistic")
    stat = demo_statistic(statistic, X.shape[1])
    tmp = None
    if ledger is None:
        tmp = tempfile.TemporaryDirectory(prefix="bayesdp-demo-ledger-")
        ledger_path = os.path.join(tmp.name, "ledger.json")
    else:
        ledger_path = ledger
    try:
        acct = open_accountant(ledger_path, budget if (tmp is not None or not os.path.exists(ledger_path)) else None,
                               dataset=DATASET_LABEL)
        spec = ReleaseSpec(stat, epsilon=eps, method="coupling",
                           chain=ChainOptions(num_steps=steps, num_chains=num_chains))
        res = _release(_source(model, name, data, prior_scale), spec, acct, seed)
        summary = acct.summary()
    finally:
        if tmp is not None:
            tmp.cleanup()
    files: dict[str, str] = {}
    t_plot = time.perf_counter()
    if plots:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:   # checked above; a race or a full disk
            raise AssumptionError(f"out_dir {out_dir} cannot be created ({type(exc).__name__}); the release is "
                                  "recorded in the ledger, only the plots are missing") from None
        files["privacy_curve"] = os.path.join(out_dir, "privacy_curve.png")
        files["released_vs_nonprivate"] = os.path.join(out_dir, "released_vs_nonprivate.png")
        _privacy_curve_plot(files["privacy_curve"], res.report, res.result.certificate, eps)
        if statistic == "profiles":
            it = res.result.items[0]
            der = derived_probabilities(it.value, it.interval)
            npv = [d["value"] for d in derived_probabilities(float(res.nonprivate[0]), (0.0, 0.0))]
            _values_plot(files["released_vs_nonprivate"], [d["name"] for d in der], np.array([d["value"] for d in der]),
                         np.array(npv), [d["interval"] for d in der], eps)
        else:
            _values_plot(files["released_vs_nonprivate"], res.result.names, np.asarray(res.result.values),
                         np.asarray(res.nonprivate), [it.interval for it in res.result.items], eps)
    timing = dict(res.timing)
    timing.update(plots_s=time.perf_counter() - t_plot, demo_total_s=time.perf_counter() - t0)
    settings = {"model": "logistic", "prior_scale": float(prior_scale), "domain": list(DOMAIN),
                "statistic": statistic, "epsilon": eps, "budget": budget, "num_steps": steps,
                "num_chains": num_chains, "quick": bool(quick), "data": DATASET_LABEL,
                "data_attribution": "bayesdp/data/ATTRIBUTION.md (CC BY 4.0, Wolberg et al. 1993)"}
    return DemoResult(run=res, table=res.report.table(), out_dir=out_dir, plots=files,
                      ledger_summary={**summary, "ledger": None if tmp is not None else summary.get("ledger")},
                      ledger_is_temporary=tmp is not None, timing=timing, settings=settings)


def format_demo(d: DemoResult) -> str:
    """The text ``bayesdp demo`` prints.

    Args:
        d: the demo's result.

    Returns:
        The report, several lines.

    Examples:
        >>> text = format_demo(run_demo(quick=True, num_steps=20, num_chains=1, plots=False))
        >>> text.splitlines()[1]
        'bayesdp demo: private Bayesian logistic regression'
    """
    r = d.release
    s = d.settings
    run = d.run
    chain = run.result.extra["chain"]
    bar = "=" * 78
    lines = [bar, "bayesdp demo: private Bayesian logistic regression",
             f"data: Breast Cancer Wisconsin (Diagnostic), 569 records x 30 features, CC BY 4.0 "
             f"({s['data_attribution']})",
             f"model: y ~ Bernoulli(sigmoid(x . w)), w ~ N(0, {s['prior_scale']:g}^2 I); features mapped into the "
             "unit ball by a fixed public map", bar, "",
             "1. CERTIFICATE TABLE (analyzer: constants and what publishing the chain itself would cost)", "",
             d.table, "",
             "   The demo does NOT publish the chain: it publishes only noisy averages, whose privacy is",
             "   certified below (the chain runs unpublished, with uncertified=True).", "",
             f"2. RELEASE at epsilon = {r.epsilon:g}, delta = {r.delta:g} (pure DP)", "",
             f"   chain: {chain['sampler']}, step size {chain['step_size']:.6g} ({chain['step_size_rule']}),",
             f"          {chain['num_chains']} chains x {chain['num_steps']} steps, burn-in {chain['burn_in']} per "
             "chain; not published",
             f"          chain keys: {chain['chain_keys']}",
             f"   statistic: {run.statistic.description}",
             f"   Lipschitz constant {run.statistic.lipschitz:.6g} ({run.statistic.lipschitz_source})",
             f"   coupling distance sup_k |X_k - X'_k| <= {run.coupling.distance:.6g} "
             f"({run.coupling.source})" if run.coupling is not None else "   coupling: none",
             f"   {'L1' if len(r.names) > 1 else 'absolute'} sensitivity {r.sensitivity:.6g} (proven "
             f"{r.proven_sensitivity:.6g} + grid rounding {r.sensitivity - r.proven_sensitivity:.3g})",
             f"   Laplace scale = sensitivity / epsilon = {r.noise_scale:.6g} per value; noise variance "
             f"{r.noise_variance:.6g}",
             f"   certificate: {r.source}", ""]
    der = d.derived
    w = max(len(n) for n in list(r.names) + [x["name"] for x in der])
    lines.append(f"   {'released value':<{w}}  {'value':>10}  {'noise scale':>11}  95% interval (noise only)")
    for it in r.items:
        lines.append(f"   {it.name:<{w}}  {it.value:>10.4f}  {it.noise_scale:>11.4g}  "
                     f"[{it.interval[0]:.4f}, {it.interval[1]:.4f}]")
    if r.postprocessing.get("clamp"):
        lines.append(f"   (values clamped to [{r.postprocessing['clamp'][0]:g}, {r.postprocessing['clamp'][1]:g}] and "
                     "intervals clipped: post-processing)")
    if der:
        lines += ["", "   derived from u (post-processing, no privacy cost): P(malignant) = sigmoid((2p - 1) u), the",
                  "   interval of u mapped through the same increasing/decreasing map", ""]
        lines.append(f"   {'derived probability':<{w}}  {'value':>10}  {'':>11}  95% interval (noise only)")
        for x in der:
            lines.append(f"   {x['name']:<{w}}  {x['value']:>10.4f}  {'':>11}  "
                         f"[{x['interval'][0]:.4f}, {x['interval'][1]:.4f}]")
    lines += ["", "3. NOT FOR RELEASE (non-private): the same Monte Carlo estimate before noise, for comparison only",
              ""]
    lines.append(f"   {'NOT FOR RELEASE':<{w}}  {'non-private':>10}  {'released - non-private':>22}")
    for n, v, rv in zip(r.names, d.nonprivate, r.values):
        lines.append(f"   {n:<{w}}  {v:>10.4f}  {rv - v:>22.4f}")
    for x, v in zip(der, d.derived_nonprivate):
        lines.append(f"   {x['name']:<{w}}  {v:>10.4f}  {x['value'] - v:>22.4f}")
    ls = d.ledger_summary
    rb = ls["remaining_budget"]
    lines += ["", "4. LEDGER", "",
              f"   {'temporary ledger (deleted; pass --ledger FILE to keep one)' if d.ledger_is_temporary else ls['ledger']}",
              f"   budget epsilon {ls['budget']['epsilon']:g}; spent {ls['spent']['epsilon']:g} "
              f"({ls['spent']['rule']}); remaining epsilon {rb['epsilon']:g}", ""]
    if d.plots:
        lines.append(f"5. PLOTS written to {d.out_dir}/")
        for p in d.plots.values():
            lines.append(f"   {p}")
        lines.append("")
    lines.append(f"done in {d.timing['demo_total_s']:.1f} s (chain {d.timing.get('chain_s', math.nan):.1f} s); "
                 "what each number means: docs/demo.md")
    return "\n".join(lines)
