"""Path release: the Monte Carlo estimate of a full-batch ULA chain whose whole path is private (DP-SGLD without
subsampling, i.e. noisy gradient descent with Langevin noise; docs/release.md §8).

Every step ``X_{k+1} = X_k - gamma grad U_D(X_k) + sqrt(2 gamma / beta) xi`` is, given the history, a Gaussian
mechanism whose mean moves by at most ``gamma * grad_diff`` between neighbouring datasets: it is
``grad_diff sqrt(gamma beta / 2)``-GDP, and the n steps compose adaptively to
``mu = grad_diff sqrt(beta gamma n / 2)`` (Dong-Roth-Su Cor. 3.3; LITERATURE.md §3.3; ``bayesdp.bound("ula-path")``),
``sqrt(c) mu`` for c independent chains.  Any statistic of the path (its average after a burn-in, quantiles, ...)
is a post-processing: no Lipschitz constant, no range and no added noise are needed.  The inverse temperature is
the largest whose certificate meets (epsilon, delta) for the chain's step size and number of steps; the chain's
own Gaussian steps are the privacy noise, so its keys come from the OS CSPRNG (a seed makes it reproducible and
the output says so: not private).

It is reserved in the ledger BEFORE the chain runs (the chain draws the noise) and charged the certificate's GDP
curve (a ``gdp`` event: PLD and Renyi composition apply).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from ..certificate import Certificate
from ..curves import GDP
from ..errors import AssumptionError, positive, positive_int, require

__all__ = ["release_path_model", "release_path", "path_certificate", "path_inverse_temperature", "gdp_mu",
           "path_num_steps", "curvature_proxy", "predicted_path_error", "choose_method", "auto_method",
           "noiseless_items"]

SOURCE = "GDP composition of the path (Dong-Roth-Su Cor. 3.3)"


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` (to a relative 1e-12) with ``GDP(mu).epsilon(delta) <= epsilon``.

    Args:
        epsilon: > 0.
        delta: in (0, 1).

    Returns:
        mu.

    Raises:
        AssumptionError: epsilon not > 0, delta not in (0, 1), or epsilon too small at delta.

    Examples:
        >>> mu = gdp_mu(1.0, 1e-5)
        >>> GDP(mu).epsilon(1e-5) <= 1.0 < GDP(mu * (1 + 1e-9)).epsilon(1e-5)
        True
    """
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} must be in (0, 1) for a path release (the chain's Gaussian steps "
                              "are not pure epsilon-DP); pass e.g. delta=1e-6 or use method='coupling'")
    d = float(delta)
    lo, hi = 0.0, 1.0
    while GDP(hi).epsilon(d) <= eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if GDP(mid).epsilon(d) <= eps:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    if not lo > 0:
        raise AssumptionError(f"epsilon = {eps:.6g} is too small at delta = {d:.3g}")
    return lo


def path_certificate(grad_diff: float, step_size: float, num_steps: int, inverse_temperature: float,
                     num_chains: int = 1, mechanism: str = "path-average") -> Certificate:
    """The GDP certificate of ``num_chains`` independent full-batch ULA paths (``bayesdp.bound("ula-path")``'s GDP
    route per chain, chains composed: ``mu = sqrt(c) mu_chain``).

    Args:
        grad_diff: the proven bound on the change of the potential's gradient between neighbouring datasets.
        step_size: gamma.
        num_steps: n, steps per chain.
        inverse_temperature: beta.
        num_chains: c, independent chains.
        mechanism: the certificate's mechanism label.

    Returns:
        The GDP :class:`~bayesdp.certificate.Certificate`.

    Raises:
        AssumptionError: a bad parameter, or no GDP path certificate for it.

    Examples:
        >>> cert = path_certificate(2.0, step_size=0.01, num_steps=1000, inverse_temperature=1.0)
        >>> round(cert.curve.mu, 6)                          # 2 sqrt(1 * 0.01 * 1000 / 2) = sqrt(20)
        4.472136
        >>> round(path_certificate(2.0, 0.01, 1000, 1.0, num_chains=4).curve.mu, 6)      # sqrt(4) sqrt(20)
        8.944272
    """
    from ..mechanisms.registry import bound

    c = positive_int("num_chains", num_chains)
    rep = bound("ula-path", grad_diff=grad_diff, step_size=step_size, num_steps=num_steps,
                inverse_temperature=inverse_temperature, delta=1e-5)
    gdp = [ct for ct in rep.certificates if ct.valid and isinstance(ct.curve, GDP)]
    require(bool(gdp), "inverse_temperature", inverse_temperature, "has no GDP path certificate")
    mu_chain = float(gdp[0].curve.mu)
    mu = mu_chain if c == 1 else math.sqrt(c) * mu_chain * (1 + 1e-12)
    return Certificate(mechanism=mechanism, source=SOURCE + (f", {c} chains composed" if c > 1 else ""),
                       curve=GDP(mu),
                       assumptions={**gdp[0].assumptions, "num_chains": c, "x0": "common, data-independent",
                                    "released": "a statistic of the path (post-processing)"},
                       constants={"gdp_mu": mu, "gdp_mu_per_chain": mu_chain, "inverse_temperature":
                                  float(inverse_temperature)},
                       notes="the chain's own Gaussian steps are the privacy noise; no noise is added")


def path_inverse_temperature(epsilon: float, delta: float, grad_diff: float, step_size: float, num_steps: int,
                             num_chains: int = 1) -> tuple[float, Certificate]:
    """The largest inverse temperature (to a relative 1e-9) whose path certificate meets (epsilon, delta):
    ``beta = 2 mu^2 / (c grad_diff^2 gamma n)`` with ``mu = gdp_mu(epsilon, delta)``, re-verified through
    :func:`path_certificate`.

    Args:
        epsilon: > 0.
        delta: in (0, 1).
        grad_diff: the proven gradient difference between neighbouring datasets.
        step_size: gamma.
        num_steps: n, steps per chain.
        num_chains: c, independent chains.

    Returns:
        ``(beta, the path certificate at beta)``.

    Raises:
        AssumptionError: a bad parameter.

    Examples:
        >>> beta, cert = path_inverse_temperature(1.0, 1e-5, grad_diff=2.0, step_size=0.01, num_steps=1000)
        >>> cert.epsilon(1e-5) <= 1.0 and abs(cert.curve.mu - gdp_mu(1.0, 1e-5)) < 1e-6
        True
    """
    mu = gdp_mu(epsilon, delta)
    g = positive("grad_diff", grad_diff)
    s = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    c = positive_int("num_chains", num_chains)
    beta = 2.0 * mu * mu / (c * g * g * s * n) * (1.0 - 1e-9)
    for _ in range(60):
        cert = path_certificate(g, s, n, beta, c)
        if cert.epsilon(float(delta)) <= float(epsilon):
            return beta, cert
        beta *= 1.0 - 1e-9
    raise AssumptionError(f"no inverse temperature meets epsilon = {epsilon:g} at delta = {delta:g}")  # unreachable


def release_path(statistic, epsilon: float, delta: float, ledger: Any, *, run: Callable[[float], tuple],
                 grad_diff: float, step_size: float, num_steps: int, num_chains: int = 1, burn_in: int = 0,
                 thinning: int = 1, coupling=None, level: float = 0.95, budget_epsilon=None, budget_delta=None,
                 dataset: str | None = None, chosen_by: str = "user"):
    """Calibrate the temperature, reserve the budget, run the chain (``run(beta) -> (kept draws (N, dim),
    key label)``), release ``statistic`` of the draws, commit.  Refusals happen before the chain runs.

    ``coupling`` (the ULA contraction of LITERATURE §7.1, if proven) gives the data-independent Monte Carlo
    interval (docs/release.md §4.2) at the chain's temperature; without it no interval is given.

    Args:
        statistic: the :class:`~bayesdp.publish.statistics.Statistic` of the draws.
        epsilon: > 0.
        delta: in (0, 1).
        ledger: a ledger path, :class:`~bayesdp.budget.ledger.Ledger` or accountant.
        run: ``run(beta) -> (kept draws (N, dim), key label)``: the full-batch ULA chain at inverse temperature
            beta (its keys from the OS CSPRNG for a private release).
        grad_diff: the proven gradient difference between neighbouring datasets.
        step_size: gamma of the chain.
        num_steps: steps per chain.
        num_chains: independent chains.
        burn_in: steps dropped per chain (for the Monte Carlo interval).
        thinning: keep every ``thinning``-th draw (for the Monte Carlo interval).
        coupling: the proven ULA contraction, or None.
        level: the coverage of the Monte Carlo interval.
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name recorded with a new ledger.
        chosen_by: how the path method was chosen (recorded).

    Returns:
        The :class:`~bayesdp.publish.release.ReleaseResult` (``extra["path"]``: the temperature, mu, the chain).

    Raises:
        AssumptionError: a bad parameter.
        BudgetError: over budget (the chain does not run).

    Examples:
        A stand-in chain (any ``run`` works; a real one is :func:`release_path_model`'s):

        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> acct = PrivacyAccountant(budget=1.0, budget_delta=1e-5)
        >>> res = release_path(coordinate_means([SiteSpec("mu")]), 1.0, 1e-5, acct,
        ...                    run=lambda beta: (np.full((10, 1), 0.5), "fixed draws"),
        ...                    grad_diff=2.0, step_size=0.01, num_steps=1000)
        >>> res.values.tolist(), res.noise_scale                   # the chain's steps were the noise
        ([0.5], 0.0)
        >>> beta = res.extra["path"]["inverse_temperature"]        # 2 mu^2 / (grad_diff^2 gamma n)
        >>> round(beta / (2 * gdp_mu(1.0, 1e-5) ** 2 / (4 * 0.01 * 1000)), 6)
        1.0
    """
    from decimal import Decimal

    from ..budget.ledger import Ledger, noise_delta, noise_epsilon, to_decimal
    from .pipeline import check_level
    from .release import ReleaseResult
    from .sensitivity import monte_carlo_bound

    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    level = check_level(level)
    d_charge = to_decimal(delta, "delta")
    d_noise = noise_delta(delta)
    beta, cert = path_inverse_temperature(noise_epsilon(eps), d_noise, grad_diff, step_size, num_steps, num_chains)
    mu = float(cert.curve.mu)
    event = {"type": "gdp", "mu": mu}
    mc = monte_carlo_bound(coupling, inverse_temperature=beta, num_steps=num_steps, burn_in=burn_in,
                           thinning=thinning, num_chains=num_chains)
    led = ledger if hasattr(ledger, "reserve") else Ledger.open(ledger, budget=budget_epsilon,
                                                                budget_delta=budget_delta, dataset=dataset)
    led.check(eps, d_charge, curve=cert.curve, event=event)
    k = statistic.num_coords
    what = f"{statistic.description} ({k} value{'s' if k > 1 else ''}, path of a private chain)"
    with led.reserve(eps, d_charge, "path-average", cert.source, curve=cert.curve, what=what, event=event) as res:
        res.mark_drawn()                      # the chain's Gaussian steps are the noise
        draws, keys = run(beta)
        value = statistic.evaluate(draws)
        h = None if mc is None or statistic.kind != "mean" else mc.half_width(statistic.l2, 1.0 - level)
        items = noiseless_items(statistic, value, level, h)
        published = np.array([it.value for it in items])
        res.commit({"names": list(statistic.names), "values": [float(v) for v in published],
                    "noise_mechanism": "path", "gdp_mu": mu, "inverse_temperature": beta,
                    "statistic": statistic.description})
    summary = res.summary or led.summary()
    info = {"inverse_temperature": beta, "gdp_mu": mu, "step_size": float(step_size), "num_steps": int(num_steps),
            "num_chains": int(num_chains), "burn_in": int(burn_in), "thinning": int(thinning), "chain_keys": keys,
            "grad_diff": float(grad_diff),
            "note": ("the chain's path is private (its Gaussian steps are the noise, Dong-Roth-Su composition); the "
                     "released numbers are a statistic of it (post-processing); no noise is added")}
    return ReleaseResult(values=published, names=statistic.names, noise_scale=0.0, noise_variance=0.0,
                         sensitivity=float(grad_diff), proven_sensitivity=float(grad_diff), grid=0.0, epsilon=eps,
                         delta=float(Decimal(d_charge)), source=cert.source, certificate=cert, items=tuple(items),
                         remaining_budget=summary["remaining_budget"],
                         ledger=None if getattr(led, "path", None) is None else str(led.path),
                         routes=({"source": cert.source, "gdp_mu": mu, "chosen": True},),
                         ledger_head=res.head, dp_event=event,
                         noise={"mechanism": "path", "chosen_by": chosen_by, "expected_squared_error": {},
                                "gaussian_unavailable": None},
                         raw_values=np.asarray(value),
                         postprocessing={"clamp": None if statistic.range is None else list(statistic.range),
                                         "note": "a statistic of the private path (post-processing)"},
                         monte_carlo=None if mc is None else mc.to_dict(),
                         extra={"method": "path", "path": info})


def noiseless_items(statistic, value, level: float, half_width: float | None = None) -> tuple:
    """The released values of a release without added noise (path, last draw): each value clamped to the
    statistic's range (post-processing), with the Monte Carlo interval ``value +- half_width`` clipped to it when
    a half-width is known.

    Args:
        statistic: the released :class:`~bayesdp.publish.statistics.Statistic`.
        value: its values on the chain's draws.
        level: the level of the intervals.
        half_width: the interval's half-width, or None (no interval).

    Returns:
        a tuple of :class:`~bayesdp.publish.statistics.ReleasedValue`.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> st = coordinate_means([SiteSpec("w", 2)]).with_range((-1.0, 1.0))
        >>> [(it.value, it.raw_value, it.interval) for it in noiseless_items(st, [0.5, 3.0], 0.95, 1.0)]
        [(0.5, 0.5, (-0.5, 1.0)), (1.0, 3.0, (-1.0, 1.0))]

        ([2, 4] misses the range: the whole range is the interval, as in ``_clip_interval``.)
    """
    from .statistics import ReleasedValue, _clip_interval

    items = []
    for n, v in zip(statistic.names, value):
        v = float(v)
        shown = v if statistic.range is None else min(max(v, statistic.range[0]), statistic.range[1])
        iv = None if half_width is None else _clip_interval(v, half_width, statistic.range)
        items.append(ReleasedValue(name=n, value=shown, noise_scale=0.0, noise_variance=0.0, interval=iv,
                                   level=level, raw_value=v, total_interval=iv))
    return tuple(items)


def sampler_runner(model: Callable, data: Mapping[str, Any], *, step_size: float, num_steps: int, num_chains: int,
                   burn_in: int, thinning: int = 1, model_kwargs=None, seed: int | None = None
                   ) -> Callable[[float], tuple]:
    """``run(beta) -> (kept draws (N, dim), key label)``: bayesdp's ULA sampler at inverse temperature beta, keys
    from the OS CSPRNG unless ``seed``."""
    from ..samplers import Sampler
    from .pipeline import unconstrained_draws

    def run(beta: float):
        smp = Sampler(model, data, step_size=step_size, num_steps=num_steps, inverse_temperature=beta,
                      num_chains=num_chains, release="thinned" if thinning > 1 else "path", thinning=thinning,
                      init="zeros", uncertified=True, model_kwargs=model_kwargs)
        smp.run(seed)
        draws = unconstrained_draws(smp)[:, burn_in:, :]
        return draws.reshape(-1, draws.shape[-1]).astype(np.float64), smp.key_source

    return run


#: the path release's default number of steps: this many relaxation times of the curvature proxy
PATH_RELAXATION_TIMES = 10.0
PATH_MIN_STEPS, PATH_MAX_STEPS = 50, 20_000


def curvature_proxy(constants: Mapping[str, Any], dim: int) -> float | None:
    """``lambda_p = m_K + (L - m_K) / (4 dim)``: the curvature every dataset has (``total_strong_convexity``
    m_K, the prior's for a GLM) plus a quarter of the largest curvature the records can add
    (``total_smoothness - total_strong_convexity``), spread evenly over the ``dim`` parameters.  A public proxy
    (domain constants only, never the data) for the curvature of a typical posterior; it sets the path release's
    number of steps and the ``auto`` choice (docs/release.md §9).  None when the constants are not proven.

    Args:
        constants: the analysis's constants (``total_smoothness``, ``total_strong_convexity``).
        dim: the number of parameters.

    Returns:
        lambda_p, or None.

    Examples:
        >>> curvature_proxy({"total_smoothness": 126.0, "total_strong_convexity": 1.0}, 5)    # 1 + 125 / 20
        7.25
    """
    L, mu = constants.get("total_smoothness"), constants.get("total_strong_convexity")
    if L is None or mu is None or not mu > 0:
        return None
    return float(mu) + max(0.0, float(L) - float(mu)) / (4.0 * positive_int("dim", dim))


def path_num_steps(constants: Mapping[str, Any], dim: int, step_size: float | None = None) -> int:
    """The default number of steps of a path release: ``ceil(10 / (step_size lambda_p))`` (ten relaxation times of
    the proxy curvature, :func:`curvature_proxy`), clipped to [50, 20000]; ``step_size`` defaults to
    ``1 / total_smoothness``.  With the privacy budget fixed, ``beta n`` is fixed: steps beyond convergence make
    the chain hotter without averaging it better (docs/release.md §8.2).

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        step_size: gamma (default ``1 / total_smoothness``).

    Returns:
        The number of steps (2000 when the constants are not proven).

    Examples:
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0}
        >>> path_num_steps(consts, 5)             # ceil(10 / (7.25 / 126)) = ceil(173.8)
        174
    """
    lam = curvature_proxy(constants, dim)
    L = constants.get("total_smoothness")
    if lam is None or L is None:
        return 2000
    g = float(step_size) if step_size is not None else 1.0 / float(L)
    n = math.ceil(PATH_RELAXATION_TIMES / (g * lam))
    return int(min(max(n, PATH_MIN_STEPS), PATH_MAX_STEPS))


def predicted_path_error(constants: Mapping[str, Any], dim: int, epsilon: float, delta: float, num_coords: int,
                         l2_lipschitz: float) -> float | None:
    """Predicted squared error of a path release of a statistic with ``num_coords`` values and Euclidean constant
    ``l2_lipschitz``: ``min(k, dim) l2^2 * 2 grad_diff^2 / (mu^2 lambda_p^2)`` — the variance of the average of an
    Ornstein-Uhlenbeck path of curvature ``lambda_p`` at the inverse temperature the budget allows (``beta T =
    2 mu^2 / grad_diff^2``, ``mu`` the GDP parameter of (epsilon, delta)).  A public prediction for the ``auto``
    rule, not a bound.

    Args:
        constants: the analysis's constants (``grad_diff`` and those of :func:`curvature_proxy`).
        dim: the number of parameters.
        epsilon: > 0.
        delta: in (0, 1).
        num_coords: k, the statistic's number of values.
        l2_lipschitz: the statistic's Euclidean constant.

    Returns:
        The predicted squared error, or None when the constants are not proven.

    Examples:
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0, "grad_diff": 2.0}
        >>> err = predicted_path_error(consts, 5, 1.0, 1e-5, num_coords=1, l2_lipschitz=1.0)
        >>> round(err / (2 * 2.0 ** 2 / (gdp_mu(1.0, 1e-5) ** 2 * 7.25 ** 2)), 9)
        1.0
    """
    lam = curvature_proxy(constants, dim)
    gd = constants.get("grad_diff")
    if lam is None or gd is None or not math.isfinite(l2_lipschitz):
        return None
    mu = gdp_mu(epsilon, delta)
    return min(int(num_coords), int(dim)) * l2_lipschitz ** 2 * 2.0 * float(gd) ** 2 / (mu * mu * lam * lam)


def choose_method(constants: Mapping[str, Any], dim: int, epsilon: float, delta: float, statistic=None,
                  noise: str = "auto", sampler: str = "ula", coupling_error: float | None = None,
                  allow_final: bool = True) -> tuple[str, str]:
    """``(method, why)`` of ``method="auto"`` from public quantities only (docs/release.md §9, §10): when delta > 0,
    the noise is not forced and the chain is full-batch ULA with a proven ``grad_diff``, the smallest of the
    last-draw release's predicted squared error (``final``, :func:`~bayesdp.publish.final.predicted_final_error`,
    when the strong convexity is proven), the path release's (:func:`predicted_path_error`) and the coupling
    release's noise error ``coupling_error`` (exact: the noise variance; None or inf: no coupling release);
    otherwise ``coupling``.

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        epsilon: > 0.
        delta: >= 0.
        statistic: the statistic (None: one value of Euclidean constant 1).
        noise: the requested noise (``"auto"`` leaves the choice open).
        sampler: ``"ula"`` or another sampler (no path certificate).
        coupling_error: the coupling release's expected squared error.

    Returns:
        ``("path" or "coupling", the reason in words)``.

    Examples:
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0, "grad_diff": 2.0}
        >>> choose_method(consts, 5, 1.0, 1e-5, coupling_error=200.0)[0], choose_method(consts, 5, 1.0, 0.0)[0]
        ('path', 'coupling')
    """
    if delta <= 0:
        return "coupling", "auto: delta = 0 (pure epsilon-DP: the coupling release with Laplace noise)"
    if noise != "auto":
        return "coupling", f"auto: noise = {noise!r} was asked for (a coupling release)"
    if sampler != "ula" or constants.get("grad_diff") is None:
        return "coupling", "auto: no path certificate for this chain (full-batch ULA with a proven grad_diff)"
    k = 1 if statistic is None else statistic.num_coords
    l2 = 1.0 if statistic is None else statistic.l2
    pred = predicted_path_error(constants, dim, epsilon, delta, k, l2 if statistic is not None else 1.0)
    if pred is None:
        return "coupling", "auto: the path release's error cannot be predicted (constants not proven)"
    from .final import predicted_final_error

    fin = predicted_final_error(constants, dim, epsilon, delta, k, l2 if statistic is not None else 1.0) \
        if allow_final else None
    ce = coupling_error if coupling_error is not None and math.isfinite(coupling_error) else math.inf
    if fin is not None and fin < pred and fin < ce:
        return "final", (f"auto: the last-draw release's predicted squared error {fin:.3g} is below the path "
                         f"release's {pred:.3g} and the coupling release's noise {ce:.3g} (docs/release.md §10)")
    if pred < ce:
        return "path", (f"auto: the path release's predicted squared error {pred:.3g} is below the coupling "
                        f"release's noise {ce:.3g}")
    return "coupling", (f"auto: the coupling release's noise {ce:.3g} is below the path release's "
                        f"predicted squared error {pred:.3g}")


def release_path_model(model: Callable, data: Mapping[str, Any], *, domain, statistic: Any = "mean",
                       epsilon: float, delta: float, ledger: Any, step_size: float | None = None,
                       num_steps: int | None = None, num_chains: int = 1, burn_in: int | None = None,
                       model_kwargs: Mapping[str, Any] | None = None, value_range=None, level: float = 0.95,
                       seed: int | None = None, budget_epsilon=None, budget_delta=None, dataset: str | None = None,
                       chosen_by: str = "user", model_name: str | None = None, analysis=None):
    """Path release of ``statistic`` for a model and data: analysis (``grad_diff``, the default step size
    ``1 / total_smoothness`` and number of steps :func:`path_num_steps`, the ULA contraction of the Monte Carlo
    interval), the statistic (``"mean"``, a
    :class:`~bayesdp.publish.statistics.Statistic` or a builder ``(sampler, analysis) -> Statistic``), then
    :func:`release_path`.  Every refusal happens before the chain runs.

    Args:
        model: the NumPyro model.
        data: the records.
        domain: the public domain (a :class:`~bayesdp.analysis.Domain` or its strings).
        statistic: ``"mean"``, a Statistic, or a builder ``(sampler, analysis) -> Statistic``.
        epsilon: > 0.
        delta: in (0, 1).
        ledger: a ledger path, :class:`~bayesdp.budget.ledger.Ledger` or accountant.
        step_size: gamma (default ``1 / total_smoothness``).
        num_steps: steps per chain (default :func:`path_num_steps`).
        num_chains: independent chains.
        burn_in: steps dropped per chain (default: half).
        model_kwargs: keyword arguments of the model.
        value_range: a declared range of the released values (clamped to it).
        level: the coverage of the Monte Carlo interval.
        seed: a seed of the chain: reproducible, NOT private (default: OS CSPRNG keys).
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name recorded with a new ledger.
        chosen_by: how the path method was chosen (recorded).
        model_name: the model's name in the analysis.
        analysis: an analysis already made for this model, data and domain.

    Returns:
        The :class:`~bayesdp.publish.release.ReleaseResult`.

    Raises:
        AssumptionError: delta not in (0, 1), no proven ``grad_diff``, or another bad parameter.
        BudgetError: over budget (the chain does not run).

    Examples:
        >>> from bayesdp.models import logistic
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(200) < 0.5).astype(float)
        >>> acct = PrivacyAccountant(budget=1.0, budget_delta=1e-5)
        >>> res = release_path_model(logistic, {"X": X, "y": y}, domain=["X.norm=1", "y.values=0,1"],
        ...                          epsilon=1.0, delta=1e-5, ledger=acct, num_steps=100)
        >>> res.names, res.noise_scale, acct.remaining()["epsilon"]
        (('w[0]', 'w[1]', 'w[2]'), 0.0, 0.0)
    """
    from ..analysis import Domain, analyze
    from ..analysis.records import validate_records
    from ..samplers import ModelPotential
    from .aggregate import _SitesOnly
    from .pipeline import _sampler_constants, resolve_statistic
    from .sensitivity import best_coupling

    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} with method = 'path': the chain's Gaussian steps are not pure "
                              "epsilon-DP; pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'")
    positive("epsilon", epsilon, "pass a positive epsilon")
    c = positive_int("num_chains", num_chains)
    data, _ = validate_records(data, model, model_kwargs)
    if analysis is None:
        dom = Domain.parse(list(domain)) if isinstance(domain, (list, tuple)) else domain
        analysis = analyze(model, data=data, domain=dom, model_kwargs=model_kwargs, model_name=model_name)
    consts = analysis.constants.to_dict()
    if consts.get("grad_diff") is None:
        raise AssumptionError("grad_diff is not proven for this model and domain: the path certificate needs it")
    if step_size is None:
        L = consts.get("total_smoothness")
        require(L is not None, "step_size", None, "is not given and total_smoothness is not proven",
                "pass a step size (data independent)")
        step_size = 1.0 / float(L)
    step_size = positive("step_size", step_size)
    pot = ModelPotential(model, data, model_kwargs)
    n = path_num_steps(consts, pot.dim, step_size) if num_steps is None else positive_int("num_steps", num_steps)
    coupling, _ = best_coupling(**{k: v for k, v in _sampler_constants(consts, "ula", step_size, None, None).items()
                                   if v is not None})
    stat = resolve_statistic(statistic, _SitesOnly(pot), analysis, value_range)
    stat.check(pot.dim)
    b = n // 2 if burn_in is None else int(burn_in)
    require(0 <= b < n, "burn_in", b, f"must be in [0, {n}) (steps per chain)")
    run = sampler_runner(model, data, step_size=step_size, num_steps=n, num_chains=c, burn_in=b,
                         model_kwargs=model_kwargs, seed=seed)
    return release_path(stat, epsilon, delta, ledger, run=run, grad_diff=float(consts["grad_diff"]),
                        step_size=step_size, num_steps=n, num_chains=c, burn_in=b, coupling=coupling, level=level,
                        budget_epsilon=budget_epsilon, budget_delta=budget_delta, dataset=dataset,
                        chosen_by=chosen_by)


def auto_method(constants: Mapping[str, Any], dim: int, statistic, epsilon: float, delta: float,
                noise: str = "auto", sampler: str = "ula", step_size: float | None = None,
                allow_final: bool = True) -> tuple[str, str]:
    """:func:`choose_method` with the coupling release's exact noise error for ``statistic`` (the noise ``auto``
    would pick, at the coupling bound of ``step_size``, default ``1 / total_smoothness``); no coupling release
    (no bound, no Lipschitz constant) counts as an infinite error.

    Args:
        constants: the analysis's constants.
        dim: the number of parameters.
        statistic: the :class:`~bayesdp.publish.statistics.Statistic` to release.
        epsilon: > 0.
        delta: >= 0.
        noise: the requested noise.
        sampler: the sampler.
        step_size: gamma of the coupling release (default ``1 / total_smoothness``).

    Returns:
        ``(method, the reason in words)``.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0, "grad_diff": 2.0}
        >>> stat = coordinate_means([SiteSpec("w", 5)])
        >>> auto_method(consts, 5, stat, 1.0, 1e-5)[0], auto_method(consts, 5, stat, 1.0, 0.0)[0]
        ('path', 'coupling')
    """
    from .pipeline import _sampler_constants
    from .release import plan_noise
    from .sensitivity import best_coupling, coupling_route

    err = math.inf
    L = constants.get("total_smoothness")
    g = step_size if step_size is not None else (1.0 / float(L) if L else None)
    if g is not None and math.isfinite(statistic.lipschitz):
        coupling, _ = best_coupling(**{k: v for k, v in _sampler_constants(constants, sampler, g, None, None).items()
                                       if v is not None})
        if coupling is not None:
            plan = plan_noise(statistic, coupling_route(coupling, statistic.lipschitz, statistic.l2), epsilon,
                              delta if noise in ("auto", "gaussian") else 0.0, noise)
            err = plan.expected_squared_error[plan.mechanism]
    return choose_method(constants, dim, epsilon, delta, statistic, noise, sampler, err, allow_final)
