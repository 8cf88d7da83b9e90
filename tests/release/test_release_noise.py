"""Secure discrete Laplace noise: exact law, grid accounting, no seeding."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from bayesdp.errors import AssumptionError
from bayesdp.publish import noise


def _chi2_against_dlap(draws, scale, tail=12):
    """Chi-square of integer draws against P(Y=y) = (1-q)/(1+q) q^|y| (q = e^{-1/scale}).  The two tail bins
    Y <= -t and Y >= t (t <= tail) are chosen so that every bin expects at least 5 draws (the chi-square
    approximation; bins expecting ~0.01 draws made the test fail by chance)."""
    draws = np.asarray(draws)
    n = len(draws)
    q = math.exp(-1.0 / scale)
    t = tail
    while t > 1 and q ** t / (1 + q) * n < 5:      # P(Y >= t) = q^t / (1 + q)
        t -= 1
    ys = np.arange(-t + 1, t)
    pmf = (1 - q) / (1 + q) * q ** np.abs(ys)
    p_tail = q ** t / (1 + q)
    obs = [np.sum(draws <= -t)] + [np.sum(draws == y) for y in ys] + [np.sum(draws >= t)]
    exp = np.concatenate([[p_tail], pmf, [p_tail]]) * n
    assert abs(exp.sum() - len(draws)) < 1e-6 * len(draws)
    return stats.chisquare(obs, exp).pvalue


def test_discrete_laplace_law_chi_square():
    scale = Fraction(5, 2)
    draws = [noise.sample_discrete_laplace(scale) for _ in range(20000)]
    assert _chi2_against_dlap(draws, 2.5) > 1e-4
    # power: the same draws are rejected against a clearly different scale
    assert _chi2_against_dlap(draws, 3.5) < 1e-6
    # moments: mean 0, variance 2q/(1-q)^2
    q = math.exp(-1 / 2.5)
    var = 2 * q / (1 - q) ** 2
    assert abs(np.mean(draws)) < 5 * math.sqrt(var / len(draws))
    assert abs(np.var(draws) / var - 1) < 0.06


def test_discrete_laplace_small_scale_rational():
    # scale 1/3 (non-integer t/s branch): P(0) = (1-q)/(1+q), q = e^-3
    draws = np.array([noise.sample_discrete_laplace(Fraction(1, 3)) for _ in range(20000)])
    q = math.exp(-3)
    p0 = (1 - q) / (1 + q)
    se = math.sqrt(p0 * (1 - p0) / len(draws))
    assert abs(np.mean(draws == 0) - p0) < 5 * se
    assert _chi2_against_dlap(draws, 1 / 3, tail=4) > 1e-4


def test_bernoulli_exp_probability():
    n = 40000
    hits = sum(noise._bernoulli_exp(7, 4) for _ in range(n))  # exp(-1.75)
    p = math.exp(-1.75)
    assert abs(hits / n - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_granularity_power_of_two():
    assert noise.granularity(1.0) == 2.0 ** -40
    assert noise.granularity(1.5) == 2.0 ** -39
    assert noise.granularity(2.0 ** 40) == 1.0
    assert noise.granularity(3.0e-3) == 2.0 ** (math.ceil(math.log2(3e-3)) - 40)


def test_release_accounts_grid_rounding():
    rel = noise.laplace_release([0.3, -1.2, 5.0], sensitivity=0.7, epsilon=0.5)
    r = rel.grid
    assert r == 2.0 ** -39        # the power of two 2^(ceil(log2(1.4)) - 40), by hand
    assert rel.effective_sensitivity >= 0.7 + 3 * r
    assert rel.effective_sensitivity - (0.7 + 3 * r) < 1e-15
    assert rel.noise_scale == pytest.approx((0.7 + 3 * r) / 0.5, rel=1e-15)
    assert rel.noise_scale >= (0.7 + 3 * r) / 0.5
    # released values lie on the grid
    assert np.all(np.mod(rel.values, r) == 0)
    # variance <= 2 scale^2 and equal to it to ~1e-20 relative
    assert rel.noise_variance <= 2 * rel.noise_scale ** 2
    assert rel.noise_variance == pytest.approx(2 * rel.noise_scale ** 2, rel=1e-9)


def test_release_noise_law_in_value_units():
    # (y - x)/scale should be standard Laplace (grid 2^-40 of the scale is invisible to a KS test).
    x = 0.123456789
    rel_scale = []
    for _ in range(4000):
        rel = noise.laplace_release([x], sensitivity=1.0, epsilon=2.0)
        rel_scale.append((rel.values[0] - x) / rel.noise_scale)
    assert stats.kstest(rel_scale, stats.laplace.cdf).pvalue > 1e-4
    assert stats.kstest(np.array(rel_scale) * 1.5, stats.laplace.cdf).pvalue < 1e-4


def test_two_releases_differ_even_with_fixed_global_seeds():
    import jax  # noqa: F401  (global state must not matter)

    outs = []
    for _ in range(2):
        np.random.seed(0)
        outs.append(noise.laplace_release([1.0, 2.0], sensitivity=1.0, epsilon=1.0).values)
    assert not np.array_equal(outs[0], outs[1])


def test_no_seed_parameter():
    import inspect

    for fn in (noise.laplace_release, noise.sample_discrete_laplace):
        params = inspect.signature(fn).parameters
        assert not any("seed" in p or "rng" in p or "key" in p for p in params)


@pytest.mark.parametrize("kwargs", [dict(sensitivity=1.0, epsilon=0.0), dict(sensitivity=1.0, epsilon=-1.0),
                                    dict(sensitivity=0.0, epsilon=1.0), dict(sensitivity=math.nan, epsilon=1.0)])
def test_bad_parameters_refused(kwargs):
    with pytest.raises(AssumptionError) as e:
        noise.laplace_release([1.0], **kwargs)
    assert "\n" not in str(e.value)


def test_non_finite_value_refused():
    with pytest.raises(AssumptionError, match=r"values\[1\]"):
        noise.laplace_release([1.0, math.inf], sensitivity=1.0, epsilon=1.0)


def test_interval_covers_laplace_quantile():
    b = 2.0
    t = noise.laplace_interval_halfwidth(b, 0.95)
    assert t >= b * math.log(20)
    assert t - b * math.log(20) <= 2.0 ** -39    # the grid of scale 2 is 2^(ceil(log2 2) - 40) (see above)
    # continuous Laplace check: P(|L| > b log 20) = 0.05 exactly
    assert stats.laplace.sf(b * math.log(20), scale=b) * 2 == pytest.approx(0.05)
