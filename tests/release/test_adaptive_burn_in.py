"""Issue 22: the path release's burn-in, left open, is raised from the path itself by the marginal standard error
rule (MSER, White 1997): post-processing of the private path, so the charge is the planned one. The rule against a
brute-force argmin written here; the release's burn-in, charge and error terms."""

import numpy as np
import pytest

from bayesdp.analysis import Domain
from bayesdp.budget.accountant import PrivacyAccountant
from bayesdp.models import logistic
from bayesdp.publish.engine import execute, plan_release
from bayesdp.publish.methods.base import ChainSource
from bayesdp.publish.path import mser_burn_in
from bayesdp.publish.spec import ChainOptions, ReleaseSpec


def _brute(draws, lo):
    """argmin over b in [lo, n // 2] of the kept chain-averaged draws' summed variance / (n - b), first on ties."""
    z = np.asarray(draws, np.float64).mean(axis=0)
    n = z.shape[0]
    if lo >= n // 2:
        return lo
    best, arg = np.inf, None
    for b in range(lo, n // 2 + 1):
        kept = z[b:]
        v = float(np.sum((kept - kept.mean(axis=0)) ** 2)) / (n - b) ** 2
        if arg is None or v < best - 1e-12 * abs(best):
            best, arg = v, b
    return arg


def test_a_step_transient_is_cut_where_it_ends():
    """[5] * 30 then a small oscillation: the kept draws' spread is least once the step is dropped, at b = 30."""
    z = np.r_[np.full(30, 5.0), 0.01 * (-1.0) ** np.arange(170)]
    assert mser_burn_in(z[None, :, None]) == 30 == _brute(z[None, :, None], 0)


def test_still_chain_keeps_the_planned_burn_in():
    """An alternating +-1 chain has kept variance 1/(n - b) (up to one draw): least at the smallest b allowed."""
    z = (-1.0) ** np.arange(200)
    assert mser_burn_in(z[None, :, None], 0) == 0
    assert mser_burn_in(z[None, :, None], 17) == 17


def test_capped_at_half_the_steps_and_above_the_floor():
    """A linear drift never settles: (n - b)/12 per the kept variance falls with b, so the cap n // 2 is chosen;
    a floor past the cap is returned as it is."""
    z = np.arange(101.0)[::-1]
    assert mser_burn_in(z[None, :, None]) == 50
    assert mser_burn_in(z[None, :, None], 70) == 70


def test_chains_are_averaged_first():
    """Two chains with opposite transients average to a still path: nothing to cut."""
    z = np.r_[np.full(20, 4.0), np.zeros(80)]
    both = np.stack([z, -z])[:, :, None]
    assert mser_burn_in(both) == 0
    assert mser_burn_in(both[:1]) == 20


@pytest.mark.parametrize("seed", range(6))
def test_against_brute_force_on_random_paths(seed):
    rng = np.random.default_rng(seed)
    c, n, d = rng.integers(1, 4), rng.integers(4, 90), rng.integers(1, 5)
    decay = np.exp(-np.arange(n) / rng.uniform(1, 20))[None, :, None] * rng.normal(0, 5, (1, 1, d))
    draws = decay + rng.standard_normal((c, n, d))
    lo = int(rng.integers(0, n))
    assert mser_burn_in(draws, lo) == _brute(draws, lo)


def test_bad_shape_refused():
    with pytest.raises(ValueError, match="chains, steps, dim"):
        mser_burn_in(np.zeros((10, 2)))


def _far_mode_data(m=3000, seed=0):
    """Logistic data whose posterior mode is far from the prior's mean 0 (|theta| about 8): the chain from 0 needs
    well over the planned burn-in to arrive."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    theta = np.array([6.0, -4.0, 3.0, 2.0])
    y = (rng.random(m) < 1 / (1 + np.exp(-X @ theta))).astype(float)
    return {"X": X, "y": y}


DOM = Domain.parse(["X.norm=1", "y.values=0,1"])


def test_release_raises_the_burn_in_and_charges_the_plan():
    src = ChainSource(logistic, _far_mode_data(), DOM)
    spec = ReleaseSpec("mean", epsilon=4.0, delta=1e-6, method="path", allow_uninformative=True)
    _, plan, _, _ = plan_release(src, spec)
    acct = PrivacyAccountant(budget=4.0, budget_delta=1e-6)
    res = execute(src, spec, acct)
    s = res.to_dict()["path"]
    assert s["burn_in_rule"] == "adaptive" and s["burn_in_planned"] == plan.settings["burn_in"]
    assert plan.settings["burn_in"] < s["burn_in"] <= s["num_steps"] // 2
    # the charge is the plan's: the burn-in is read off the certified path
    assert s["gdp_mu"] == plan.settings["gdp_mu"] and acct.remaining()["epsilon"] == pytest.approx(0.0, abs=1e-9)
    # the error terms are those of the chosen burn-in: fewer kept draws than planned, a larger noise sd
    assert s["equivalent_noise_sd"] > plan.settings["equivalent_noise_sd"]
    assert s["predicted_terms"]["noise_sd"] > plan.settings["predicted_terms"]["noise_sd"]
    # each value's predicted error is the one at the burn-in used (the plan's stays in the plan)
    assert s["predicted_rmse"] == s["predicted_terms"]["rmse"] != plan.predicted_rmse
    assert all(it.predicted_rmse == s["predicted_rmse"] for it in res.items)
    assert res.extra["method"]["predicted_rmse"] == plan.predicted_rmse


def test_given_burn_in_is_kept():
    src = ChainSource(logistic, _far_mode_data(), DOM)
    spec = ReleaseSpec("mean", epsilon=4.0, delta=1e-6, method="path", allow_uninformative=True,
                       chain=ChainOptions(burn_in=3))
    res = execute(src, spec, PrivacyAccountant(budget=4.0, budget_delta=1e-6))
    s = res.to_dict()["path"]
    assert s["burn_in_rule"] == "given" and s["burn_in"] == 3 and "burn_in_planned" not in s


def test_capped_by_a_largest_burn_in():
    z = np.arange(101.0)[::-1]
    assert mser_burn_in(z[None, :, None], 0, 30) == 30            # a drift: the largest allowed
    assert mser_burn_in(z[None, :, None], 40, 30) == 40            # the floor wins: nothing to choose


def test_quantiles_keep_the_draws_they_need():
    """Quantiles at 0.01 and 0.99 need ceil(2 / 0.01) = 200 kept draws: of 300 steps at most 100 are burned in,
    whatever the path."""
    from bayesdp.publish.spec import Quantiles

    src = ChainSource(logistic, _far_mode_data(), DOM)
    spec = ReleaseSpec(Quantiles([0.01, 0.99]), epsilon=4.0, delta=1e-6, method="path", allow_uninformative=True,
                       chain=ChainOptions(num_steps=300))
    res = execute(src, spec, PrivacyAccountant(budget=4.0, budget_delta=1e-6))
    s = res.to_dict()["path"]
    assert s["burn_in_rule"] == "adaptive" and s["burn_in_planned"] <= s["burn_in"] <= 100


def test_a_diverged_chain_keeps_the_planned_burn_in():
    z = np.r_[np.full(30, 5.0), np.zeros(70)]
    z[80] = np.nan
    assert mser_burn_in(z[None, :, None], 4) == 4
    z[80] = np.inf
    assert mser_burn_in(z[None, :, None], 4) == 4


def test_float32_draws_are_summed_in_float64():
    """Draws near 3000 in float32 (a chain's own dtype) with a step of 5 for 30 steps, then +-0.01: the kept spread
    after the step (1.7e-2 in all) is far below float32's cancellation in sum z^2 - (sum z)^2 / k (about 1e2)."""
    z = np.r_[np.full(30, 3005.0), 3000.0 + 0.01 * (-1.0) ** np.arange(170)].astype(np.float32)
    assert mser_burn_in(z[None, :, None]) == 30


def test_a_largest_burn_in_between_a_third_and_half():
    z = np.arange(101.0)[::-1]
    assert mser_burn_in(z[None, :, None], 0, 45) == 45
