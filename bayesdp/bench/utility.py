"""``bayesdp bench utility``: mean squared error of released posterior means, bayesdp against the alternatives.

For Bayesian logistic regression (``logistic``, features in the unit ball, ``y`` in {0, 1}) on the bundled
Breast Cancer data (m = 569, d = 30, prior scale 0.5, the demo's model) and on synthetic data with known
parameters (d = 5, prior scale 1, m in {500, 5000, 50000}), for epsilon in {0.25, 0.5, 1, 2, 4} and
delta = 1e-5 where a method needs one, the mean squared error ``E |released - posterior mean|^2`` (summed over
the coordinates) of:

* ``coupling+laplace`` / ``coupling+gaussian``: bayesdp's release of one unpublished ULA chain's mean (2000 steps,
  step ``1/total_smoothness``, half burn-in) with secure Laplace / discrete-Gaussian noise calibrated to the
  coupling sensitivity (docs/release.md §1-3);
* ``sample-aggregate``: bayesdp's sample-and-aggregate (docs/release.md §7), chunks by its rule, each estimate
  clamped to a declared range, noise chosen by the same rule as the release;
* ``path``: bayesdp's path release (docs/release.md §8) as the release engine plans it: step size, steps, burn-in
  and chains that minimise its predicted error (§8.4), at the largest inverse temperature whose path certificate
  (Dong-Roth-Su GDP composition) meets (epsilon, delta); the average of the kept draws, no added noise;
* ``final``: bayesdp's last-draw release (docs/release.md §10): the final draw of the chain that
  ``bayesdp.calibrate(..., mechanism="ula-final")`` plans at (epsilon, delta) (step size, steps and inverse
  temperature from public quantities; the certificate of its last draw, e.g. Bok-Su-Altschuler GDP);
* ``posterior-sample``: one draw of the tempered posterior ``exp(-beta U)`` ("one posterior sample", Wang,
  Fienberg, Smola 2015), beta from ``bayesdp.calibrate(..., mechanism="posterior")`` (Gopi-Lee-Liu GDP of the
  exact posterior; the draw is simulated by a long ULA chain at that temperature, i.e. approximately);
* ``dp-sgld``: the average of the second half of a full-batch Langevin path (noisy gradient descent with
  Langevin noise, 2000 steps, step ``1/total_smoothness``) at the inverse temperature whose ``n`` Gaussian steps
  (per-step sensitivity ``step * grad_diff``) meet (epsilon, delta) by dp-accounting's PLD accountant; the path
  is private, its average a post-processing.

What is simulated and what is computed: the posterior mean is NumPyro NUTS (non-private reference); the
Monte Carlo error of every chain-based estimate is simulated (``--repeats`` independent chains, or chunkings);
the noise part of the additive mechanisms (coupling, sample-and-aggregate) is computed exactly from the noise
variance (``2 b^2`` per coordinate for Laplace, ``sigma^2`` for the discrete Gaussian) and added to the
simulated squared error of the non-private estimate (the noise is independent and has mean zero).  The one
posterior sample and DP-SGLD are simulated entirely.

``default`` is the method the release engine plans with ``method="auto"`` (:func:`default_pick`; what
``bayesdp.release`` and ``bayesdp release`` run), computed from public quantities only; the table reports its
MSE over the best method's (target: <= 1.25).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from ..budget.ledger import noise_delta, noise_epsilon
from ..publish.spec import ReleaseSpec
from ..publish.statistics import SiteSpec, coordinate_means
from ..cli import ARG_TYPES
from ..publish.noiseplan import plan_noise
from ..publish.sensitivity import best_coupling, coupling_route

__all__ = ["NAME", "HELP", "EPSILONS", "SIZES", "DELTA", "METHODS", "BAYESDP_METHODS", "TARGET_RATIO",
           "add_arguments", "synthetic", "posterior_mean", "chain_draws", "dpsgld_inverse_temperature",
           "default_pick", "run", "plot", "format_table"]

NAME = "utility"
HELP = "MSE of released posterior means: coupling+Laplace/Gaussian, sample-and-aggregate, one posterior sample, DP-SGLD"
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
SIZES = (500, 5000, 50000)
DELTA = 1e-5
SYNTH_THETA = (2.0, -1.5, 1.0, 0.5, -1.0)
SYNTH_PRIOR = 1.0
BUNDLED_PRIOR = 0.5
#: declared public range of every coefficient for sample-and-aggregate (chunk estimates are clamped to it)
SA_RANGE = {"synthetic": (-4.0, 4.0), "bundled": (-2.0, 2.0)}
DOMAIN = ("X.norm=1", "y.values=0,1")
METHODS = ("coupling+laplace", "coupling+gaussian", "sample-aggregate", "path", "final", "posterior-sample", "dp-sgld")
#: the methods bayesdp releases with (the others are baselines)
BAYESDP_METHODS = ("coupling+laplace", "coupling+gaussian", "sample-aggregate", "path", "final")
TARGET_RATIO = 1.25


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench utility`` to the argparse sub-parser ``parser``.

    Args:
        parser: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench utility")
        >>> add_arguments(p)
        >>> args = p.parse_args(["--quick"])
        >>> args.quick, args.datasets, args.seed
        (True, 'synthetic,bundled', 0)
    """

    parser.add_argument("--quick", action="store_true",
                        help="smoke test: synthetic m = 500 and the bundled data at epsilon 1, few repeats, short chains")
    parser.add_argument("--repeats", type=ARG_TYPES[int], default=None,
                        help="independent chains per simulated estimate (default 16; --quick 4)")
    parser.add_argument("--num-steps", type=ARG_TYPES[int], default=None,
                        help="steps of every chain (default 2000; --quick 400)")
    parser.add_argument("--sizes", default=None, help="synthetic sizes, comma-separated (default 500,5000,50000)")
    parser.add_argument("--epsilons", default=None, help="comma-separated (default 0.25,0.5,1,2,4)")
    parser.add_argument("--datasets", default="synthetic,bundled", help="synthetic and/or bundled")
    parser.add_argument("--out", default="bayesdp-bench-utility.png", help="PNG plot (written; '' for none)")
    parser.add_argument("--seed", type=ARG_TYPES[int], default=0,
                        help="seed of the data and of the simulated chains (a benchmark: nothing is released)")


# ---------------------------------------------------------------------------
# data and reference


def synthetic(m: int, seed: int = 0, theta=SYNTH_THETA) -> dict:
    """``m`` records: ``x ~ N(0, I/d)`` mapped into the unit ball (``x / max(1, |x|)``, a fixed public map) and
    ``y ~ Bernoulli(sigmoid(x . theta))`` with the known ``theta``.

    Args:
        m: the number of records.
        seed: the seed of NumPy's generator (a benchmark: nothing is released).
        theta: the true coefficients (their number is d).

    Returns:
        ``{"X": (m, d) float32, "y": (m,) float32}``.

    Examples:
        >>> import numpy as np
        >>> data = synthetic(4)
        >>> data["X"].shape, bool((np.linalg.norm(data["X"], axis=1) <= 1).all()), set(data["y"].tolist()) <= {0.0, 1.0}
        ((4, 5), True, True)
    """
    rng = np.random.default_rng(seed)
    th = np.asarray(theta, dtype=np.float64)
    X = rng.normal(size=(m, th.size)) / math.sqrt(th.size)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) * (1 + 1e-6))
    y = (rng.random(m) < 1.0 / (1.0 + np.exp(-X @ th))).astype(np.float32)
    return {"X": X.astype(np.float32), "y": y}


def _plain_logistic(X, y, prior_scale):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([X.shape[1]]).to_event(1))
    numpyro.sample("obs", dist.Bernoulli(logits=jnp.dot(X, w)), obs=y)


def posterior_mean(data: dict, prior_scale: float, seed: int, num_samples: int) -> tuple[np.ndarray, float]:
    """NumPyro NUTS (the non-private reference): the posterior mean of ``w`` and its Monte Carlo standard error
    (largest over coordinates, from the spread of 2 chains' means).

    Args:
        data: ``{"X", "y"}``.
        prior_scale: the prior's standard deviation.
        seed: the seed of the NUTS chains.
        num_samples: draws per chain (and half as many warm-up steps).

    Returns:
        ``(mean, standard_error)``.

    Examples:
        Not run here (NUTS compiles for several seconds):

        >>> mean, se = posterior_mean(synthetic(500), 1.0, seed=0, num_samples=500)   # doctest: +SKIP
        >>> mean.shape                                                                  # doctest: +SKIP
        (5,)
    """
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(_plain_logistic), num_warmup=num_samples // 2, num_samples=num_samples, num_chains=2,
                chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.key(seed), X=data["X"], y=data["y"], prior_scale=prior_scale)
    w = np.asarray(mcmc.get_samples(group_by_chain=True)["w"], dtype=np.float64)
    means = w.mean(axis=1)
    return w.reshape(-1, w.shape[-1]).mean(axis=0), float(np.max(np.abs(means[0] - means[1])) / 2.0)


# ---------------------------------------------------------------------------
# chains


def chain_draws(data, prior_scale, step_size, num_steps, inverse_temperature, num_chains, release, seed):
    """(chains, draws, dim) from bayesdp's Sampler (unconstrained = constrained for ``w``).

    Uncertified ULA on ``bayesdp.models.logistic`` (a benchmark: nothing is released).

    Args:
        data: ``{"X", "y"}``.
        prior_scale: the prior's standard deviation.
        step_size: the step size.
        num_steps: the number of steps.
        inverse_temperature: beta.
        num_chains: the number of chains.
        release: ``"final"`` or ``"path"``.
        seed: the int seed of the chains.

    Returns:
        float64 ``(chains, draws, dim)``.

    Examples:
        >>> chain_draws(synthetic(20), 1.0, 0.01, 3, 1.0, 2, "path", seed=0).shape
        (2, 3, 5)
    """
    from ..models import logistic
    from ..samplers import Sampler

    smp = Sampler(logistic, data, step_size=step_size, num_steps=num_steps, inverse_temperature=inverse_temperature,
                  num_chains=num_chains, release=release, uncertified=True, model_kwargs={"prior_scale": prior_scale})
    smp.run(seed)
    return np.asarray(smp.get_unconstrained_samples(group_by_chain=True), dtype=np.float64)


def dpsgld_inverse_temperature(epsilon: float, delta: float, step_size: float, num_steps: int,
                               grad_diff: float) -> float:
    """The largest inverse temperature beta whose path of ``num_steps`` full-batch Langevin steps is
    (epsilon, delta)-DP by dp-accounting's PLD accountant: each step is the Gaussian mechanism of sensitivity
    ``step_size * grad_diff`` (replacing one record moves the drift by at most that) and noise
    ``sqrt(2 step_size / beta)``, i.e. noise multiplier ``sqrt(2 / (step_size beta)) / grad_diff``, composed
    ``num_steps`` times (adaptively).

    Args:
        epsilon: the target epsilon.
        delta: the target delta.
        step_size: the step size.
        num_steps: the number of steps.
        grad_diff: the bound on the change of the full gradient when one record is replaced.

    Returns:
        beta (bisection to a relative 1e-4; 0 when even beta near 0 does not meet the target).

    Examples:
        The composition of ``n`` Gaussian steps is ``mu``-GDP with ``mu = sqrt(n step beta / 2) grad_diff``;
        the Gaussian mechanism's exact delta at epsilon = 1 is then the target 1e-5 (the accountant is
        slightly pessimistic):

        >>> import math
        >>> from scipy.stats import norm
        >>> beta = dpsgld_inverse_temperature(1.0, 1e-5, step_size=0.1, num_steps=10, grad_diff=1.0)
        >>> mu = math.sqrt(10 * 0.1 * beta / 2)
        >>> round(float(norm.cdf(-1 / mu + mu / 2) - math.e * norm.cdf(-1 / mu - mu / 2)) / 1e-5, 2)
        1.0
    """
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.pld import pld_privacy_accountant

    def eps_of(beta: float) -> float:
        z = math.sqrt(2.0 / (step_size * beta)) / grad_diff
        # the sensitivity is normalised to 1 above (it already covers a replaced record): the plain Gaussian
        # mechanism, which is dp-accounting's GaussianDpEvent under ADD_OR_REMOVE_ONE
        acc = pld_privacy_accountant.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
        acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), num_steps))
        return float(acc.get_epsilon(delta))

    lo, hi = 0.0, 1.0
    while eps_of(hi) <= epsilon:
        lo, hi = hi, hi * 4.0
        if hi > 1e12:
            return lo
    for _ in range(40):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 4.0
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
        if lo > 0 and hi / lo < 1.0 + 1e-4:
            break
    return lo


# ---------------------------------------------------------------------------
# the default pick


def default_pick(plan) -> tuple[str, str]:
    """The column of the table that ``bayesdp release`` / ``bayesdp.release`` (with a kernel) would fill by default:
    the method of the release engine's own ``method="auto"`` plan (:func:`bayesdp.publish.engine.plan_release`:
    the smallest predicted error, from public inputs only), the coupling release named with its noise.

    Args:
        plan: the engine's :class:`~bayesdp.publish.methods.base.MethodPlan` for ``method="auto"``.

    Returns:
        ``(method, why)``: one of :data:`BAYESDP_METHODS` and the reason.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> default_pick(NS(method="coupling", settings={"noise": "gaussian"}, predicted_rmse=0.1))
        ('coupling+gaussian', 'auto: the engine plans coupling (predicted rmse per value 0.1)')
        >>> default_pick(NS(method="path", settings={}, predicted_rmse=None))[0]
        'path'
    """
    name = {"coupling": f"coupling+{plan.settings.get('noise')}", "sample-aggregate": "sample-aggregate"}.get(
        plan.method, plan.method)
    pred = "" if plan.predicted_rmse is None else f" (predicted rmse per value {plan.predicted_rmse:.3g})"
    return name, f"auto: the engine plans {plan.method}{pred}"


# ---------------------------------------------------------------------------
# one setting


def _setting(name: str, data: dict, prior_scale: float, epsilons, args, repeats: int, num_steps: int,
             seed: int) -> list[dict]:
    from ..analysis import Domain, analyze
    from ..calibration import calibrate
    from ..models import logistic
    from ..plan import ULA, Shapes
    from ..publish.aggregate import aggregate_estimate, aggregate_route, choose_chunks
    from ..calibration import CalibrationOptions
    from ..publish.engine import plan_release
    from ..publish.methods.base import ChainSource
    from ..samplers import ModelPotential
    t0 = time.perf_counter()
    m, d = data["X"].shape
    shapes = {"X": (d,), "y": ()}
    dom = Domain.parse(list(DOMAIN))
    kw = {"prior_scale": prior_scale}
    consts = analyze(logistic, data=data, domain=dom, model_kwargs=kw).constants.to_dict()
    L, grad_diff = float(consts["total_smoothness"]), float(consts["grad_diff"])
    step = 1.0 / L
    coupling, _ = best_coupling(step_size=step, sampler="ULA", total_strong_convexity=consts["total_strong_convexity"],
                                total_smoothness=L, grad_diff=grad_diff)
    stat = coordinate_means([SiteSpec("w", d)])
    route = coupling_route(coupling, stat.lipschitz, stat.l2)
    ref, ref_se = posterior_mean(data, prior_scale, seed, 500 if args.quick else 2000)
    t_ref = time.perf_counter() - t0
    half = num_steps // 2

    def sq_err(est):                      # (R, d) estimates -> mean squared error over the repeats
        e = np.asarray(est) - ref
        return float(np.mean(np.sum(e * e, axis=-1)))

    # coupling: one chain per release; R independent chains give the Monte Carlo part
    draws = chain_draws(data, prior_scale, step, num_steps, 1.0, repeats, "path", seed + 1)
    mc_coupling = sq_err(draws[:, half:, :].mean(axis=1))
    pot = ModelPotential(logistic, data, kw)
    source = ChainSource(model=logistic, data=data, domain=dom, model_kwargs=kw,
                         kernel={"sampler": "ula", "step_size": None, "inverse_temperature": 1.0, "batch_size": None,
                                 "clip_norm": None}, given="kernel",
                         plan_final=lambda e, dl, mx: calibrate(logistic, domain=dom, epsilon=e, delta=dl,
                                                                mechanism="ula-final", data=Shapes(m, shapes),
                                                                kernel=ULA(model_kwargs=kw),
                                                                options=CalibrationOptions(max_steps=mx)))

    def engine_plan(eps, method):          # what bayesdp.release(ULA(...), "mean", ...) plans (nothing run)
        return plan_release(source, ReleaseSpec("mean", epsilon=eps, delta=DELTA, method=method))[1]
    sa_stat = stat.with_range(SA_RANGE[name])
    rows = []
    for eps in epsilons:
        t1 = time.perf_counter()
        row = {"dataset": name, "m": m, "d": d, "epsilon": eps, "delta": DELTA, "mse": {}, "details": {}}
        lap = plan_noise(stat, route, eps, 0.0, "laplace")
        gau = plan_noise(stat, route, eps, DELTA, "gaussian")
        row["mse"]["coupling+laplace"] = mc_coupling + lap.expected_squared_error["laplace"]
        row["mse"]["coupling+gaussian"] = mc_coupling + gau.expected_squared_error["gaussian"]
        row["details"]["coupling"] = {"monte_carlo_sq_error": mc_coupling,
                                      "laplace_noise_sq_error": lap.expected_squared_error["laplace"],
                                      "gaussian_noise_sq_error": gau.expected_squared_error["gaussian"],
                                      "l1_window": route.sensitivity, "l2_window": route.l2_sensitivity}
        # sample-and-aggregate (the chunkings are simulated; the noise is computed)
        k, rule = choose_chunks(m, d, d, eps, DELTA, "auto")
        sa_route = aggregate_route(d, SA_RANGE[name], k)
        sa_plan = plan_noise(sa_stat, sa_route, eps, DELTA, "auto")
        sa_noise = sa_plan.expected_squared_error[sa_plan.mechanism]
        sa_reps = max(1, repeats // 8)
        sa_est = [aggregate_estimate(sa_stat, data, k, potential=pot, step_size=step, num_steps=num_steps,
                                     rng_key=seed + 100 + r, rule=rule).value for r in range(sa_reps)]
        row["mse"]["sample-aggregate"] = sq_err(sa_est) + sa_noise
        row["details"]["sample-aggregate"] = {"chunks": k, "chunk_size": m // k, "noise": sa_plan.mechanism,
                                              "noise_sq_error": sa_noise, "estimate_sq_error": sq_err(sa_est),
                                              "range": list(SA_RANGE[name]), "repeats": sa_reps}
        # one posterior sample at the calibrated temperature (simulated)
        plan = calibrate(logistic, domain=dom, data=Shapes(m, {"X": (d,), "y": ()}), epsilon=eps,
                         delta=DELTA, mechanism="posterior", kernel=ULA(model_kwargs=kw))
        beta_post = float(plan.inverse_temperature)
        post = chain_draws(data, prior_scale, step, num_steps, beta_post, repeats, "final", seed + 2)[:, -1, :]
        row["mse"]["posterior-sample"] = sq_err(post)
        row["details"]["posterior-sample"] = {"inverse_temperature": beta_post, "certified_epsilon": plan.epsilon}
        # bayesdp's path release (simulated): the temperature from bayesdp's own path certificate

        # bayesdp's last-draw release (simulated as the engine's last-draw method runs it: the ula-final plan's chain)
        fplan = calibrate(logistic, domain=dom, data=Shapes(m, {"X": (d,), "y": ()}),
                          epsilon=noise_epsilon(eps), delta=noise_delta(DELTA), mechanism="ula-final",
                          kernel=ULA(model_kwargs=kw))
        fin = chain_draws(data, prior_scale, fplan.step_size, fplan.num_steps, fplan.inverse_temperature, repeats,
                          "final", seed + 5)[:, -1, :]
        row["mse"]["final"] = sq_err(fin)
        row["details"]["final"] = {"inverse_temperature": float(fplan.inverse_temperature),
                                   "step_size": float(fplan.step_size), "num_steps": int(fplan.num_steps),
                                   "certified_epsilon": fplan.epsilon, "source": fplan.source}

        # the path release as the engine plans it (docs/release.md §8.4: the settings that minimise its predicted
        # error), simulated: the average of the kept draws of its chain
        ps = engine_plan(eps, "path").settings
        n_path, b_path, beta_b = int(ps["num_steps"]), int(ps["burn_in"]), float(ps["inverse_temperature"])
        pb = chain_draws(data, prior_scale, float(ps["step_size"]), n_path, beta_b, repeats * int(ps["num_chains"]),
                         "path", seed + 4)[:, b_path:, :].reshape(repeats, -1, d)
        row["mse"]["path"] = sq_err(pb.mean(axis=1))
        row["details"]["path"] = {"inverse_temperature": beta_b, "gdp_mu": float(ps["gdp_mu"]),
                                  "num_steps": n_path, "burn_in": b_path, "num_chains": int(ps["num_chains"]),
                                  "step_size": float(ps["step_size"])}
        # DP-SGLD: path average at the dp-accounting temperature (simulated)
        beta_path = dpsgld_inverse_temperature(eps, DELTA, step, num_steps, grad_diff)
        path = chain_draws(data, prior_scale, step, num_steps, beta_path, repeats, "path", seed + 3)
        row["mse"]["dp-sgld"] = sq_err(path[:, half:, :].mean(axis=1))
        row["details"]["dp-sgld"] = {"inverse_temperature": beta_path, "num_steps": num_steps,
                                     "accounting": "dp-accounting PLD, Gaussian per step"}
        best = min(row["mse"], key=row["mse"].get)
        pick, why = default_pick(engine_plan(eps, "auto"))
        row.update(best=best, default=pick, default_why=why, default_over_best=row["mse"][pick] / row["mse"][best],
                   reference_se=ref_se, seconds=time.perf_counter() - t1)
        rows.append(row)
    rows[0]["details"]["setup_seconds"] = t_ref
    return rows


def run(args) -> dict:
    """Run ``bayesdp bench utility`` with the parsed options ``args``: JSON-ready results (and the PNG).

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.utility.add_arguments]' options.

    Returns:
        a dict with one row per (dataset, m, epsilon) (``mse`` per method, ``best``, ``default``,
        ``default_over_best``), ``target_met`` and ``worst_default_over_best``.

    Examples:
        Not run here (even ``--quick`` runs NUTS and many chains: minutes):

        >>> import argparse
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> args = p.parse_args(["--quick", "--out", ""])
        >>> res = run(args)                                         # doctest: +SKIP
        >>> [(r["dataset"], r["m"]) for r in res["rows"]]           # doctest: +SKIP
        [('bundled', 569), ('synthetic', 500)]
    """
    t0 = time.perf_counter()
    quick = bool(args.quick)
    repeats = args.repeats or (4 if quick else 16)
    num_steps = args.num_steps or (400 if quick else 2000)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else ((500,) if quick else SIZES)
    epsilons = tuple(float(e) for e in args.epsilons.split(",")) if args.epsilons else ((1.0,) if quick else EPSILONS)
    datasets = [s.strip() for s in args.datasets.split(",") if s.strip()]
    rows = []
    if "bundled" in datasets:
        from ..datasets import breast_cancer     # loads the analyser (JAX)

        rows += _setting("bundled", breast_cancer().data, BUNDLED_PRIOR, epsilons, args, repeats, num_steps, args.seed)
    if "synthetic" in datasets:
        for m in sizes:
            rows += _setting("synthetic", synthetic(m, args.seed), SYNTH_PRIOR, epsilons, args, repeats, num_steps,
                             args.seed)
    worst = max(r["default_over_best"] for r in rows)
    out = {"benchmark": "utility", "quick": quick, "repeats": repeats, "num_steps": num_steps, "delta": DELTA,
           "methods": list(METHODS), "target": f"default within {TARGET_RATIO}x of the best MSE at every (epsilon, m)",
           "target_met": worst <= TARGET_RATIO, "worst_default_over_best": worst, "rows": rows,
           "seconds": time.perf_counter() - t0}
    if args.out:
        out["plot"] = plot(rows, args.out)
    return out


def plot(rows: list[dict], path: str) -> str:
    """MSE against epsilon, one panel per (dataset, m), every method; the default pick circled.

    Args:
        rows: the rows of :func:`run`.
        path: the PNG file to write.

    Returns:
        the absolute path written, or a message when matplotlib is missing.

    Examples:
        >>> mse = dict(zip(METHODS, [1.0, 0.5, 2.0, 0.25, 0.3, 4.0, 8.0]))
        >>> row = {"dataset": "synthetic", "m": 500, "epsilon": 1.0, "mse": mse, "default": "path"}
        >>> out = plot([row], "utility.png")
        >>> out.endswith("utility.png") or out.startswith("skipped")
        True
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "skipped: matplotlib is not installed (pip install matplotlib)"
    panels = sorted({(r["dataset"], r["m"]) for r in rows}, key=lambda p: (p[0] != "bundled", p[1]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.0), squeeze=False)
    for ax, (ds, m) in zip(axes[0], panels):
        sel = sorted((r for r in rows if r["dataset"] == ds and r["m"] == m), key=lambda r: r["epsilon"])
        eps = [r["epsilon"] for r in sel]
        for j, meth in enumerate(METHODS):
            ax.plot(eps, [r["mse"][meth] for r in sel], marker="os^vPDx"[j], label=meth,
                    ls="-" if meth in BAYESDP_METHODS else "--")
        ax.plot(eps, [r["mse"][r["default"]] for r in sel], "o", ms=12, mfc="none", mec="k", label="bayesdp default")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps, [f"{e:g}" for e in eps])          # the measured epsilons, no overlapping minor labels
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("epsilon (delta = 1e-5 where needed)")
        ax.set_title(f"{ds}, m = {m}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("MSE of the released posterior mean")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return os.path.abspath(path)


def format_table(res: dict) -> str:
    """``res`` as the readable table printed without ``--json``.

    Args:
        res: the dict :func:`run` returned.

    Returns:
        the table's text.

    Examples:
        >>> mse = dict(zip(METHODS, [1.0, 0.5, 2.0, 0.25, 0.3, 4.0, 8.0]))
        >>> row = {"dataset": "synthetic", "m": 500, "epsilon": 1.0, "mse": mse, "best": "path", "default": "path",
        ...        "default_over_best": 1.0}
        >>> res = {"delta": 1e-5, "repeats": 4, "num_steps": 400, "rows": [row], "target_met": True,
        ...        "target": "default within 1.25x of the best MSE at every (epsilon, m)",
        ...        "worst_default_over_best": 1.0, "seconds": 12.0}
        >>> print(format_table(res))
        MSE of the released posterior mean vs the non-private one (sum over coordinates), delta = 1e-05, 4 repeats, 400 steps
        dataset         m   eps  coupling+laplace coupling+gaussian  sample-aggregate              path             final  posterior-sample           dp-sgld           default  ratio
        synthetic     500     1                1               0.5                 2              0.25*              0.3                 4                 8               path      1
        * best; target default within 1.25x of the best MSE at every (epsilon, m): met (worst ratio 1); 12 s
    """
    head = f"{'dataset':<10} {'m':>6} {'eps':>5} " + " ".join(f"{m:>17}" for m in METHODS) + \
        f" {'default':>17} {'ratio':>6}"
    lines = [f"MSE of the released posterior mean vs the non-private one (sum over coordinates), delta = {res['delta']:g}"
             f", {res['repeats']} repeats, {res['num_steps']} steps", head]
    for r in res["rows"]:
        cells = " ".join(f"{r['mse'][m]:>16.4g}{'*' if m == r['best'] else ' '}" for m in METHODS)
        lines.append(f"{r['dataset']:<10} {r['m']:>6} {r['epsilon']:>5g} {cells} {r['default']:>17} "
                     f"{r['default_over_best']:>6.3g}")
    lines.append(f"* best; target {res['target']}: {'met' if res['target_met'] else 'NOT met'} (worst ratio "
                 f"{res['worst_default_over_best']:.3g}); {res['seconds']:.0f} s"
                 + (f"; plot {res['plot']}" if res.get("plot") else ""))
    return "\n".join(lines)
