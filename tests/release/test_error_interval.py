"""Every released number says how good it is (issue 22 item 4; docs/release.md §11): ``error_interval``,
``equivalent_noise_sd``, ``credible_interval`` and ``interval_kind``, against independently derived numbers.

* The Laplace quantile of a noised release's interval: ``b log(1/(1 - level))`` (plus one grid step), not
  ``z sqrt(2) b``.
* The chain's equivalent noise against the AR(1) closed forms of ULA on a quadratic.
* Coverage: on a conjugate Gaussian model (Normal prior, Normal likelihood with known sd: the posterior mean in
  closed form), the 90% ``error_interval`` of many seeded path releases (an in-memory accountant each) covers the
  exact posterior mean at a rate consistent with 0.9 (Clopper-Pearson).
* The last-draw release refuses quantiles (``auto`` goes elsewhere); a tempered chain's quantiles are labelled
  tempered, never posterior.
"""

import json
import math
from fractions import Fraction

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy.stats import beta as beta_dist

import bayesdp
from bayesdp.errors import AssumptionError
from bayesdp.publish.engine import choose, draw
from bayesdp.publish.methods.base import Analysed, ChainSource
from bayesdp.publish.methods.final import FinalMethod
from bayesdp.publish.methods.path import PathMethod
from bayesdp.publish.noiseplan import NoisePlan, error_half_width
from bayesdp.publish.path import chain_noise_sd
from bayesdp.publish.release import release_statistic
from bayesdp.publish.sensitivity import coupling_strongly_convex
from bayesdp.publish.spec import ChainOptions, ReleaseSpec
from bayesdp.publish.statistics import (SiteSpec, coordinate_means, coordinate_quantiles, describe_values,
                                        min_draws_for_quantiles, two_sided_normal_quantile, with_credible_intervals)
from bayesdp.samplers import ModelPotential

Z90 = 1.6448536269514722          # Phi^{-1}(0.95): the two-sided 90% normal quantile
# The noise grid for a Laplace scale b in (1, 2]: r = 2^ceil(log2(b / 2^40)) (docs/release.md §3, Google DP's
# granularity), and ceil(log2 b) = 1 there, so r = 2^(1 - 40).  It is ~1e-12 b, below a rel=1e-12 tolerance on the
# half-width, so the tests below also check the grid term on its own, to within 2^-44 (the rounding of a sum of a few
# numbers below 8 is ~1e-15).
GRID_1_2 = 2.0 ** -39


def _grid_step(b):
    """The smallest power of two r with 2^40 r >= b (r = 2^ceil(log2(b / 2^40))), found with exact fractions."""
    target, r = Fraction(b) / 2 ** 40, Fraction(1)
    while r < target:
        r *= 2
    while r / 2 >= target:
        r /= 2
    return float(r)


def gaussian_mean(y, prior_scale=1.0, noise_scale=1.0):
    """Conjugate: theta ~ N(0, s0^2 I), y_i ~ N(theta, sigma^2 I)."""
    d = y.shape[1]
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(theta, noise_scale).to_event(1), obs=y)


def _gaussian(m, d, seed, radius=1.0):
    """Records with |y_i|_2 <= radius; the potential's constants by hand: curvature 1/s0^2 + m/sigma^2 in every
    direction (strong convexity = smoothness), of which the prior's (K's) is 1/s0^2, and a replaced record moves the
    gradient (theta - y_i)/sigma^2 by |y_i - y_i'| / sigma^2 <= 2 radius (s0 = sigma = 1)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.3, 0.5, size=(m, d))
    y /= np.maximum(1.0, np.linalg.norm(y, axis=1, keepdims=True) / radius)
    lam = 1.0 + m
    consts = {"grad_diff": 2.0 * radius, "total_strong_convexity": lam, "total_smoothness": lam,
              "strong_convexity": 1.0}
    return {"y": y}, consts, y.sum(axis=0) / lam          # the exact posterior mean


def ar1_average_variance_brute(rho, s2, n, b):
    """Var of (1/N) sum_{t=b+1}^n X_t for X_t = rho X_{t-1} + s xi_t from a fixed X_0: the weight of xi_j summed
    term by term, w_j = sum_{t >= max(j, b+1)} rho^(t - j) (no closed form used)."""
    total = 0.0
    for j in range(1, n + 1):
        w = sum(rho ** (t - j) for t in range(max(j, b + 1), n + 1))
        total += w * w
    return s2 * total / (n - b) ** 2


def _analysed(data, consts, statistic, kernel=None):
    src = ChainSource(model=gaussian_mean, data=data, domain=None, kernel={"sampler": "ula", **(kernel or {})})
    return Analysed(src, None, ModelPotential(gaussian_mean, data, {}), statistic, consts)


def _path_release(an, seed, epsilon=1.0, level=0.9, chain=None):
    spec = ReleaseSpec("mean", epsilon=epsilon, delta=1e-6, method="path", level=level, chain=chain).check()
    plan = PathMethod().plan(an, spec)
    acct = bayesdp.PrivacyAccountant(budget=epsilon, budget_delta=1e-6)
    return plan, draw(an, plan, acct, rng_key=jax.random.PRNGKey(seed))


def test_normal_quantile():
    assert two_sided_normal_quantile(0.9) == pytest.approx(Z90, abs=1e-12)
    assert two_sided_normal_quantile(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    with pytest.raises(AssumptionError, match="level"):
        two_sided_normal_quantile(1.0)


def test_laplace_error_interval_is_the_laplace_quantile_not_z():
    coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
    stat = coordinate_means([SiteSpec("mu")])
    spec = ReleaseSpec(stat, epsilon=1.0, level=0.9)
    res = release_statistic(np.full((50, 1), 0.5), stat, 1.0, bayesdp.PrivacyAccountant(budget=1.0),
                            coupling=coupling, spec=spec)
    it = res.items[0]
    b = res.noise_scale
    half = (it.error_interval[1] - it.error_interval[0]) / 2.0
    # P(|Laplace(b)| > t) = exp(-t / b) = 0.1  <=>  t = b ln 10, widened by one grid step (docs/release.md §4.1)
    assert 1.0 < b <= 2.0                       # b is just above 1 here: the grid step is GRID_1_2 = 2^-39
    assert half == pytest.approx(b * math.log(10.0) + GRID_1_2, rel=1e-12)
    assert half - b * math.log(10.0) == pytest.approx(GRID_1_2, abs=2.0 ** -44)   # exactly one grid step wider
    assert abs(half - Z90 * math.sqrt(2.0) * b) > 0.01 * b             # not the Gaussian z times the rmse
    assert it.error_interval[0] < it.value < it.error_interval[1]
    assert "Laplace quantile" in it.error_interval_basis and it.equivalent_noise_sd is None
    row = json.loads(json.dumps(res.to_dict()))["items"][0]
    assert row["error_interval"] == list(it.error_interval) and row["predicted_rmse"] == pytest.approx(math.sqrt(2) * b)


def test_noised_error_interval_adds_the_monte_carlo_term_by_a_union_bound():
    plan = NoisePlan("laplace", "user", {}, {}, 0.0)
    mean = coordinate_means([SiteSpec("mu")])
    h, basis = error_half_width(plan, 2.0, 0.0, 0.9, mean, None, 0.3)
    # half of alpha = 0.1 on the noise: 2 ln(20) + grid; half on a Gaussian Monte Carlo error: z(0.95) 0.3
    assert h == pytest.approx(2.0 * math.log(20.0) + GRID_1_2 + 1.959963984540054 * 0.3, rel=1e-12)   # b = 2
    assert h - (2.0 * math.log(20.0) + 1.959963984540054 * 0.3) == pytest.approx(GRID_1_2, abs=2.0 ** -44)
    assert "heuristic" in basis
    quant = coordinate_quantiles([SiteSpec("mu")], [0.05, 0.95])
    hq, basis_q = error_half_width(plan, 2.0, 0.0, 0.9, quant, None, 0.3)
    assert hq == pytest.approx(2.0 * math.log(10.0) + GRID_1_2, rel=1e-12) and "not included" in basis_q
    assert hq - 2.0 * math.log(10.0) == pytest.approx(GRID_1_2, abs=2.0 ** -44)


def test_chain_noise_against_the_ar1_closed_forms():
    lam, beta = 4.0, 0.5
    consts = {"total_strong_convexity": lam, "total_smoothness": lam}          # curvature proxy = lam exactly
    for gamma in (0.05, 0.25, 0.4):
        rho = 1.0 - gamma * lam
        # ULA on U = lam x^2 / 2: X' = rho X + sqrt(2 gamma / beta) xi; stationary var s^2 / (1 - rho^2)
        stationary = (2.0 * gamma / beta) / (1.0 - rho * rho)
        assert chain_noise_sd(consts, 1, 1, 1.0, beta, gamma, 1, last_draw=True) ** 2 == pytest.approx(stationary)
        # long-run variance of the average of N draws: s^2 / (1 - rho)^2 / N, c chains: / c
        n = 10_000
        lr = (2.0 * gamma / beta) / (1.0 - rho) ** 2 / n
        assert chain_noise_sd(consts, 1, 1, 1.0, beta, gamma, n, num_chains=3) ** 2 == pytest.approx(lr / 3)
        # a short average is never predicted noisier than one draw
        assert chain_noise_sd(consts, 1, 1, 1.0, beta, gamma, 1) ** 2 == pytest.approx(min(stationary, lr * n))
    assert chain_noise_sd({"total_smoothness": 4.0}, 1, 1, 1.0, beta, 0.1, 10) is None      # no proven proxy


def test_path_release_items_carry_the_equivalent_noise_and_the_error_interval():
    data, consts, post_mean = _gaussian(m=200, d=3, seed=0)
    an = _analysed(data, consts, coordinate_means([SiteSpec("theta", 3)]))
    plan, res = _path_release(an, seed=0)
    s = plan.settings
    lam = consts["total_strong_convexity"]
    # step 1/lam: the draws are independent, each of variance 2 / (beta lam); their average over n - b kept steps
    assert s["step_size"] == pytest.approx(1.0 / lam)
    sd = math.sqrt(2.0 / (s["inverse_temperature"] * lam * (s["num_steps"] - s["burn_in"])))
    for it in res.items:
        assert it.equivalent_noise_sd == pytest.approx(sd, rel=1e-9)
        assert it.predicted_rmse == pytest.approx(sd, rel=1e-9) and it.predicted_label == "heuristic"
        assert it.error_interval == pytest.approx((it.value - Z90 * sd, it.value + Z90 * sd), rel=1e-9)
        assert it.interval_kind is None and it.credible_interval is None         # a mean: no credible interval
    assert res.noise_scale == 0.0                                                # the field keeps its meaning
    out = json.loads(json.dumps(res.to_dict()))
    assert out["items"][0]["equivalent_noise_sd"] == pytest.approx(sd, rel=1e-9) and out["private"] is False
    text = str(res)
    assert "equiv. noise sd" in text and "error interval (90%)" in text
    df = res.to_dataframe()
    assert df["equivalent_noise_sd"].tolist() == pytest.approx([sd] * 3, rel=1e-9)
    assert "equiv. noise sd" in res._repr_html_()


@pytest.mark.slow
def test_error_interval_covers_the_exact_posterior_mean_at_its_level():
    """1,200 intervals (12 datasets x 100 independent coordinates, one seeded path release each): the 90%
    error_interval covers the exact posterior mean (closed form) at a rate whose 95% Clopper-Pearson interval has
    its lower end >= 0.85 and contains 0.9."""
    covered = total = 0
    for r in range(12):
        data, consts, post_mean = _gaussian(m=500, d=100, seed=100 + r)
        an = _analysed(data, consts, coordinate_means([SiteSpec("theta", 100)]))
        _, res = _path_release(an, seed=1000 + r)
        lo = np.array([it.error_interval[0] for it in res.items])
        hi = np.array([it.error_interval[1] for it in res.items])
        covered += int(np.sum((lo <= post_mean) & (post_mean <= hi)))
        total += len(res.items)
    lower = beta_dist.ppf(0.025, covered, total - covered + 1)
    upper = beta_dist.ppf(0.975, covered + 1, total - covered)
    assert lower >= 0.85 and lower <= 0.9 <= upper, (covered, total, lower, upper)


def _choose(statistic, constants, dim, method="auto"):
    """The engine's choice from the constants alone (the last draw's planner raises once it is chosen)."""
    from types import SimpleNamespace

    class FinalChosen(Exception):
        pass

    def planner(*args):
        raise FinalChosen

    src = ChainSource(model=None, data={}, domain=None, kernel={"sampler": "ula"}, plan_final=planner)
    an = Analysed(src, None, SimpleNamespace(dim=dim, data_size=569), statistic, constants)
    try:
        return choose(an, ReleaseSpec(statistic, epsilon=1.0, delta=1e-5, method=method).check())[0].method
    except FinalChosen:
        return "final"


def test_the_last_draw_refuses_quantiles_and_auto_goes_to_a_method_that_answers():
    weak = {"total_smoothness": 1 / 0.25 + 569 / 4, "total_strong_convexity": 4.0, "grad_diff": 2.0}
    # the mean: the tuned path (docs/release.md §8.4: no burn-in lost, a short chain near its start) is predicted
    # below the last draw here (0.513 against 1.64 per value; §10.1: the path's long-run variance is m_K / lambda
    # times the last draw's), so auto takes it
    assert _choose(coordinate_means([SiteSpec("w", 30)]), weak, 30) == "path"
    quant = coordinate_quantiles([SiteSpec("w", 30)], [0.05, 0.95])
    assert _choose(quant, weak, 30) == "path"                                           # quantiles: rerouted
    with pytest.raises(AssumptionError, match="last-draw release cannot answer") as exc:
        _choose(quant, weak, 30, method="final")
    assert len(str(exc.value).splitlines()) == 1
    an = Analysed(ChainSource(model=None, data={}, domain=None), None, None, quant, weak)
    with pytest.raises(AssumptionError, match="never read off one draw"):
        FinalMethod().plan(an, ReleaseSpec("mean", epsilon=1.0, delta=1e-5, method="final").check())


def test_quantiles_from_too_few_draws_are_refused():
    assert min_draws_for_quantiles([0.05, 0.5, 0.95]) == 40 and min_draws_for_quantiles([0.25, 0.75]) == 8
    data, consts, _ = _gaussian(m=100, d=2, seed=0)
    an = _analysed(data, consts, coordinate_quantiles([SiteSpec("theta", 2)], [0.05, 0.95]))
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="path",
                       chain=ChainOptions(num_steps=60, burn_in=30)).check()
    with pytest.raises(AssumptionError, match="at least 40 kept draws; the path keeps 30"):
        PathMethod().plan(an, spec)
    # a burn-in left open is tuned within the constraint: at least 40 draws kept
    plan = PathMethod().plan(an, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="path",
                                             chain=ChainOptions(num_steps=60)).check())
    assert plan.settings["num_steps"] - plan.settings["burn_in"] >= 40


def test_tempered_labels_reach_the_table_and_the_json():
    """Without a chain: a quantile release's items relabelled by the chain's temperature, printed."""
    from dataclasses import replace

    coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
    quant = coordinate_quantiles([SiteSpec("mu")], [0.05, 0.95])
    draws = np.linspace(-1.0, 1.0, 101)[:, None]
    res = release_statistic(draws, quant, 1.0, bayesdp.PrivacyAccountant(budget=1.0), coupling=coupling)
    cold = replace(res, items=with_credible_intervals(res.items, quant, 1.0))
    hot = replace(res, items=with_credible_intervals(res.items, quant, 0.25))
    lo, hi = sorted(it.value for it in res.items)
    assert [it.credible_interval for it in hot.items] == [(lo, hi)] * 2
    assert [it.interval_kind for it in cold.items] == ["posterior"] * 2 and "TEMPERED" not in str(cold)
    assert [it.interval_kind for it in hot.items] == ["tempered"] * 2
    assert "TEMPERED" in str(hot) and "NOT posterior credible intervals" in str(hot)
    assert "NOT posterior credible intervals" in hot._repr_html_()
    assert hot.to_dict()["items"][1]["interval_kind"] == "tempered"
    assert hot.to_dataframe()["interval_kind"].tolist() == ["tempered"] * 2


@pytest.mark.slow
def test_a_tempered_chain_s_quantiles_are_labelled_tempered():
    data, consts, _ = _gaussian(m=100, d=2, seed=1)
    quant = coordinate_quantiles([SiteSpec("theta", 2)], [0.05, 0.5, 0.95])
    an = _analysed(data, consts, quant)
    plan, res = _path_release(an, seed=3, epsilon=0.5, chain=ChainOptions(num_steps=200))
    beta = plan.settings["inverse_temperature"]
    assert beta < 1.0
    for j in range(2):
        q05, q50, q95 = res.items[3 * j: 3 * j + 3]
        for it in (q05, q50, q95):
            assert it.interval_kind == "tempered" and it.credible_level == pytest.approx(0.9)
            assert it.credible_interval == (min(q05.value, q95.value), max(q05.value, q95.value))
            assert it.error_interval is None and "tempered" in it.error_interval_basis
        # a sample quantile's sd: its coordinate mean's (the AR(1) average's, weights summed by brute force) times
        # sqrt(q (1 - q)) / phi(z_q)
        lam, s = consts["total_strong_convexity"], plan.settings
        mean_sd = math.sqrt(ar1_average_variance_brute(1.0 - s["step_size"] * lam, 2.0 * s["step_size"] / beta,
                                                       s["num_steps"], s["burn_in"]))
        assert q50.equivalent_noise_sd == pytest.approx(mean_sd * 0.5 / 0.3989422804014327, rel=1e-9)
        assert q05.equivalent_noise_sd / q50.equivalent_noise_sd == pytest.approx(
            math.sqrt(0.05 * 0.95) / 0.10313564037537128 / (0.5 / 0.3989422804014327), rel=1e-9)
    text = str(res)
    assert "TEMPERED" in text and "NOT posterior credible intervals" in text and f"{beta:.4g}" in text
    assert json.loads(json.dumps(res.to_dict()))["items"][0]["interval_kind"] == "tempered"
    # at inverse temperature 1 the same spread is a posterior credible interval
    items = describe_values(quant.names[:3], [-1.0, 0.0, 1.0], noise_scale=1.0, noise_variance=2.0)
    assert [it.interval_kind for it in with_credible_intervals(items, quant, 1.0)] == ["posterior"] * 3
    assert with_credible_intervals(items, quant, 1.0)[0].credible_interval == (-1.0, 1.0)


def _logistic_data(m=300, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.1
    y = (rng.random(m) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    return {"X": X, "y": y}


@pytest.mark.slow
def test_cli_prints_and_emits_the_error_interval_and_tempered_labels(tmp_path, capsys):
    from bayesdp.cli import main

    path = tmp_path / "d.npz"
    np.savez(path, **_logistic_data())
    base = ["release", "logistic", "--data", str(path), "--domain", "X.norm=1", "y.values=0,1", "--epsilon", "1",
            "--delta", "1e-6", "--budget", "4", "--budget-delta", "1e-5", "--ledger", str(tmp_path / "l.jsonl"),
            "--method", "path", "--level", "0.9", "--allow-uninformative"]       # 300 records at epsilon 1
    assert main(base + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    st = out["path"]               # the run's settings: the burn-in read off the path, the error terms at it
    assert st["burn_in"] >= out["method"]["settings"]["burn_in"] and st["burn_in_rule"] == "adaptive"
    tr, bias = st["start_transient"], st["predicted_bias"]   # the start's bias (§11.4) and the chain's (§8.4)
    assert tr >= 0 and bias >= 0
    assert st["predicted_terms"]["bias"] == pytest.approx(bias, rel=1e-12)
    f, spread = st["predicted_terms"]["transient_fraction"], st["predicted_terms"]["start_spread"]
    assert tr == pytest.approx(f * spread, rel=1e-12)
    # the interval reads the mode off the released values (§8.4): its squared distance per direction from the
    # curvature's peak s2 = max(0, mean v^2 - sd^2) / (1 - f)^2, the curvature lambda there (the fixed point
    # lambda = m_K + (m c / (d + 2)) / sqrt(1 + pi r2 (1 / (beta lambda) + s2) / 8), m = 300, c = 1/4, d = 2,
    # m_K = 1, r2 = (c / (1/4)) d / (d + 2) = 1/2; the proven c is 1/4 rounded up from float32 inputs, 1e-6
    # relative, hence rel=1e-5 below), along the mode the records' part over
    # 1 + (pi r2 s2 / 8) / (1 + pi r2 / (8 beta lambda)), and the fraction of the start kept at that curvature
    raw = np.array([it["raw_value"] for it in out["items"]])
    sd0 = out["items"][0]["equivalent_noise_sd"]
    seen, beta = out["path"]["interval_terms"], st["inverse_temperature"]
    s2 = max(0.0, float(np.mean(raw ** 2)) - sd0 ** 2) / (1 - f) ** 2
    assert seen["mode_variance"] == pytest.approx(s2, rel=1e-12)
    lam, r2 = seen["curvature"], 0.5
    if s2 > 1.0:                                   # beyond the prior's spread 1 / m_K
        assert lam == pytest.approx(1 + 300 * 0.25 / 4 / math.sqrt(1 + math.pi * r2 * (1 / (beta * lam) + s2) / 8),
                                    rel=1e-5)
    par = 1 + (lam - 1) / (1 + (math.pi * r2 * s2 / 8) / (1 + math.pi * r2 / (8 * beta * lam)))
    assert seen["along_mode_curvature"] == pytest.approx(par, rel=1e-5)
    g, n, b = st["step_size"], st["num_steps"], st["burn_in"]
    rho = 1 - g * par
    f_seen = rho ** (b + 1) * (1 - rho ** (n - b)) / ((1 - rho) * (n - b))
    assert seen["transient_fraction"] == pytest.approx(max(f, f_seen), rel=1e-5)
    planned = out["method"]["settings"]          # the public prediction, made before the run at the planned burn-in
    for it in out["items"]:
        sd = it["equivalent_noise_sd"]           # the terms at the burn-in used: never below the planned ones
        assert sd == pytest.approx(st["equivalent_noise_sd"], rel=1e-12) and sd >= planned["equivalent_noise_sd"] > 0
        rmse = math.sqrt(sd * sd + tr * tr + bias * bias)
        assert it["predicted_rmse"] == pytest.approx(rmse, rel=1e-12)
        assert out["noise_scale"] == 0.0
        # the start's bias read off the released value: f max(D, sqrt(v^2 - sd^2) / (1 - f)) (§8.4), the read-off
        # terms never below the public ones
        fs, nsd, bs = seen["transient_fraction"], seen["noise_sd"], seen["bias"]
        assert fs >= f and nsd >= sd and bs >= bias
        start = fs * max(spread, math.sqrt(max(0.0, it["raw_value"] ** 2 - nsd ** 2)) / (1 - fs))
        half = Z90 * math.sqrt(nsd * nsd + start * start + bs * bs)
        assert it["error_interval"] == pytest.approx([it["value"] - half, it["value"] + half], rel=1e-9)
    assert main(base + ["--stat", "quantiles", "--q", "0.05,0.95", "--num-steps", "200"]) == 0
    text = capsys.readouterr().out
    assert "equiv. noise sd" in text and "TEMPERED interval" in text and "NOT posterior credible intervals" in text


@pytest.mark.slow
def test_last_draw_error_interval_covers_the_exact_posterior_mean_at_its_level():
    """The last-draw release through the engine (its plan from a given ula-final plan, its sampler handed in as the
    prepared state, seeded, an in-memory accountant each): at step 1/lam the final draw of ULA on the conjugate
    Gaussian posterior is N(posterior mean, 2 / (beta lam)) exactly; 1,200 90% intervals (12 datasets x 100
    coordinates) cover the exact posterior mean at a rate consistent with 0.9."""
    from types import SimpleNamespace

    from bayesdp.publish.path import gdp_mu
    from bayesdp.samplers import Sampler

    covered = total = 0
    for r in range(12):
        data, consts, post_mean = _gaussian(m=500, d=100, seed=200 + r)
        lam = consts["total_strong_convexity"]
        pl = SimpleNamespace(mechanism="ula-final", gdp_mu=0.999 * gdp_mu(1.0, 1e-6), inverse_temperature=0.3,
                             step_size=1.0 / lam, num_steps=20, source="test plan", epsilon=1.0, distance_bound=None)
        src = ChainSource(model=gaussian_mean, data=data, domain=None, kernel={"sampler": "ula"}, given="plan",
                          plan=pl)
        an = Analysed(src, None, ModelPotential(gaussian_mean, data, {}), coordinate_means([SiteSpec("theta", 100)]),
                      consts)
        plan = FinalMethod().plan(an, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="final", level=0.9).check())
        sd = math.sqrt(2.0 / (0.3 * lam))
        assert plan.settings["equivalent_noise_sd"] == pytest.approx(sd, rel=1e-9) and plan.predicted_rmse == sd
        smp = Sampler(gaussian_mean, data, step_size=1.0 / lam, num_steps=20, inverse_temperature=0.3, num_chains=1,
                      release="final", init="zeros", uncertified=True)
        res = draw(an, plan, bayesdp.PrivacyAccountant(budget=1.0, budget_delta=1e-6),
                   rng_key=jax.random.PRNGKey(2000 + r), state=(smp, 1.0))
        lo = np.array([it.error_interval[0] for it in res.items])
        hi = np.array([it.error_interval[1] for it in res.items])
        assert res.items[0].equivalent_noise_sd == pytest.approx(sd, rel=1e-9) and res.noise_scale == 0.0
        covered += int(np.sum((lo <= post_mean) & (post_mean <= hi)))
        total += len(res.items)
    lower = beta_dist.ppf(0.025, covered, total - covered + 1)
    upper = beta_dist.ppf(0.975, covered + 1, total - covered)
    assert lower >= 0.85 and lower <= 0.9 <= upper, (covered, total, lower, upper)


def test_sgld_coupling_error_interval_adds_the_public_monte_carlo_prediction():
    """SGLD has no proven Monte Carlo bound: the error interval spends half of 1 - level on the Laplace noise and
    half on the chain's Monte Carlo error predicted from public inputs: logistic regression with prior N(0, 1) and
    |x| <= 1 has m_K = 1 and L = 1 + m/4, so lambda_p = 1 + (m/4)/(4 d); the average over N = 200 kept steps at
    step gamma has variance min(1/(lambda_p (1 - gamma lambda_p/2)), 2/(lambda_p^2 gamma N))."""
    import importlib

    logistic = importlib.import_module("bayesdp.models").logistic
    data, m, d, gamma = _logistic_data(m=150), 150, 2, 0.01
    spec = ReleaseSpec("mean", epsilon=1.0, level=0.9, chain=ChainOptions(num_steps=400),
                       allow_uninformative=True)      # 150 records at epsilon 1: predicted worse than the prior
    res = bayesdp.release(bayesdp.SGLD(logistic, domain=["X.norm=1", "y.values=0,1"], step_size=gamma, batch_size=50),
                          spec, data=data, accountant=bayesdp.PrivacyAccountant(budget=1.0))
    lam = 1.0 + (m / 4.0) / (4 * d)
    mc_sd = math.sqrt(min(1.0 / (lam * (1 - gamma * lam / 2)), 2.0 / (lam * lam * gamma * 200)))
    b = res.noise_scale
    for it in res.items:
        assert it.total_interval is None and "heuristic" in it.error_interval_basis
        half = (it.error_interval[1] - it.error_interval[0]) / 2.0
        # rel 1e-6: the analyser certifies the declared norm rounded up (Domain ... certified_norm)
        assert half == pytest.approx(b * math.log(20.0) + _grid_step(b) + 1.959963984540054 * mc_sd, rel=1e-6)
        assert it.predicted_rmse == pytest.approx(math.sqrt(2.0) * b, rel=1e-12)      # keeps its meaning: the noise
