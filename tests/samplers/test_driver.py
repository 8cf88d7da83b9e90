"""Driver: exact Gaussian laws of ULA/SGLD, release consistency, chains, recompilation, divergence, bad input."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.errors import AssumptionError
from bayesdp.samplers import DivergenceError, Sampler
from bayesdp.samplers import driver

from _sampler_models import gaussian_mean, logistic, logistic_data

Y = np.array([0.3, 1.1, -0.4, 2.0, 0.7, 1.5, -1.0, 0.2, 0.9, 1.3], np.float32)
TAU, SIGMA = 2.0, 1.5
H = 1 / TAU ** 2 + len(Y) / SIGMA ** 2          # Hessian of U_D
B = float(Y.astype(float).sum()) / SIGMA ** 2   # U_D'(theta) = H theta - B
KW = {"prior_scale": TAU, "noise_scale": SIGMA}


def _gauss(**kw):
    base = dict(sampler="ula", uncertified=True, model_kwargs=KW)
    base.update(kw)
    return Sampler(gaussian_mean, {"y": Y}, **base)


def _ula_moments(gamma, n, beta):
    """Exact law of ULA from x0 = 0 on U = H x^2/2 - B x: mean and variance after n steps."""
    r = 1 - gamma * H
    mean = (B / H) * (1 - r ** n)
    var = (2 * gamma / beta) * (1 - r ** (2 * n)) / (1 - r ** 2)
    return mean, var


def _check_moments(draws, mean, var, k):
    draws = np.asarray(draws, np.float64)
    assert abs(draws.mean() - mean) < 5 * np.sqrt(var / k)
    assert abs(draws.var(ddof=1) / var - 1) < 5 * np.sqrt(2 / k)


def test_ula_exact_gaussian_law_finite_n():
    gamma, n, beta, k = 0.3 / H, 6, 2.0, 4000
    s = _gauss(step_size=gamma, num_steps=n, inverse_temperature=beta, num_chains=k).run(jax.random.key(0))
    draws = s.get_samples()["theta"]
    assert draws.shape == (k,)
    _check_moments(draws, *_ula_moments(gamma, n, beta), k)


def test_ula_stationary_law():
    # stationary N(B/H, 2 / (beta H (2 - gamma H))): the ULA bias of the variance is visible at gamma H = 0.8
    gamma, beta, k = 0.8 / H, 1.0, 4000
    s = _gauss(step_size=gamma, num_steps=60, inverse_temperature=beta, num_chains=k).run(jax.random.key(1))
    _check_moments(s.get_samples()["theta"], B / H, 2 / (beta * H * (2 - gamma * H)), k)


def test_sgld_law_shows_sampling_without_replacement():
    # the estimate is H theta - (m/s) sum_{i in A} y_i / sigma^2: same mean recursion as ULA, and extra variance
    # gamma^2 (m/s)^2 s v (m-s)/(m-1) / sigma^4 per step (v = population variance of y: WITHOUT replacement)
    # beta = 1000 makes the minibatch noise dominate the Langevin noise
    m, s_, gamma, n, k, beta = len(Y), 5, 0.3 / H, 8, 6000, 1000.0
    v = float(Y.astype(float).var())
    c_batch = (m / s_) ** 2 * s_ * v * (m - s_) / (m - 1) / SIGMA ** 4
    r = 1 - gamma * H

    def var_of(c):
        return (gamma ** 2 * c + 2 * gamma / beta) * (1 - r ** (2 * n)) / (1 - r ** 2)

    mean = (B / H) * (1 - r ** n)
    smp = _gauss(sampler="sgld", batch_size=s_, step_size=gamma, num_steps=n, num_chains=k,
                 inverse_temperature=beta).run(jax.random.key(2))
    _check_moments(smp.get_samples()["theta"], mean, var_of(c_batch), k)
    # sampling WITH replacement would give the factor (m-1)/(m-s) = 1.8 on the batch term: rejected by the check
    assert abs(var_of(c_batch) / var_of(c_batch * (m - 1) / (m - s_)) - 1) > 10 * np.sqrt(2 / k)


def test_releases_are_consistent():
    kw = dict(step_size=0.1 / H, num_steps=1024, num_chains=3)
    key = jax.random.key(3)
    path = _gauss(release="path", **kw).run(key).get_samples(group_by_chain=True)["theta"]
    final = _gauss(release="final", **kw).run(key).get_samples(group_by_chain=True)["theta"]
    thin = _gauss(release="thinned", thinning=4, **kw).run(key).get_samples(group_by_chain=True)["theta"]
    assert path.shape == (3, 1024) and final.shape == (3, 1) and thin.shape == (3, 256)
    np.testing.assert_allclose(final[:, 0], path[:, -1], rtol=1e-6)
    np.testing.assert_allclose(thin, path[:, 3::4], rtol=1e-6)


def test_vectorized_equals_sequential_chains():
    X, y = logistic_data(60, 3)
    kw = dict(sampler="sgld", batch_size=10, clip_norm=0.5, step_size=1e-3, num_steps=100, num_chains=2,
              uncertified=True, release="path")
    a = Sampler(logistic, {"X": X, "y": y}, chain_method="vectorized", **kw).run(jax.random.key(4))
    b = Sampler(logistic, {"X": X, "y": y}, chain_method="sequential", **kw).run(jax.random.key(4))
    np.testing.assert_allclose(a.get_samples(True)["theta"], b.get_samples(True)["theta"], rtol=1e-5, atol=1e-6)


def test_first_step_depends_on_data_only_through_gradient():
    X1, y1 = logistic_data(40, 3, seed=5)
    X2, y2 = logistic_data(40, 3, seed=6)
    # (any fixed x0; x0 = 0 is covered by test_potential.test_logistic_gradient_exact_at_zero)
    gamma, x0 = 0.01, np.array([0.1, -0.2, 0.3])
    outs = []
    for X, y in ((X1, y1), (X2, y2)):
        s = Sampler(logistic, {"X": X, "y": y}, step_size=gamma, num_steps=1, release="path", uncertified=True,
                    init=x0)
        outs.append(s.run(jax.random.key(7)).get_samples()["theta"][0])
    g = [X.astype(float).T @ (1 / (1 + np.exp(-X.astype(float) @ x0)) - y) + x0 for X, y in ((X1, y1), (X2, y2))]
    np.testing.assert_allclose(outs[0] - outs[1], -gamma * (g[0] - g[1]), rtol=1e-4, atol=1e-6)


def test_numpyro_bernoulli_kink_at_zero():
    """Documents the upstream NumPyro behaviour the samplers avoid (potential.bernoulli_logits_log_prob):
    d/dz log Bernoulli(y=0 | logits=z) is -sigmoid(z) = -0.5 at z = 0, but autodiff of NumPyro's clip/abs formula
    returns 0 there (exactly at 0 only, i.e. at the default initialisation of a logistic regression)."""
    import numpyro.distributions as dist

    f = jax.grad(lambda z: dist.Bernoulli(logits=z).log_prob(0.0))
    assert float(f(1e-6)) == pytest.approx(-0.5, abs=1e-5)
    assert float(f(0.0)) == 0.0  # if NumPyro fixes this, remove the caveat in docs/samplers.md


def test_user_and_prior_initialisation():
    s = _gauss(step_size=1e-9, num_steps=1, init=[5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert s.run(jax.random.key(0)).get_samples()["theta"][0] == pytest.approx(5.0, abs=1e-3)
    assert "user" in s.certificate["assumptions"]["initialisation"]
    p = _gauss(step_size=0.01, num_steps=2, init="prior", init_key=jax.random.key(9), num_chains=2)
    assert "prior" in p.certificate["configuration"]["init"]
    keys = jax.random.split(jax.random.key(9), 2)
    expected = [float(p.potential.init_prior(k)[0]) for k in keys]  # one prior draw per chain, own keys
    np.testing.assert_allclose(np.asarray(p._init_positions)[:, 0], expected, rtol=1e-6)
    assert expected[0] != expected[1]
    assert p.num_samples == 1 and _gauss(step_size=0.01, num_steps=8, release="thinned", thinning=4).num_samples == 2
    with pytest.raises(AssumptionError, match="init_key"):
        _gauss(step_size=0.01, num_steps=2, init="prior")


def test_no_recompilation_between_runs_with_same_shapes():
    X, y = logistic_data(50, 4, seed=8)
    kw = dict(step_size=1e-3, num_steps=100, num_chains=2, uncertified=True)
    Sampler(logistic, {"X": X, "y": y}, **kw).run(jax.random.key(0))
    before = driver.TRACE_COUNT["n"]
    X2, y2 = logistic_data(50, 4, seed=9)
    s = Sampler(logistic, {"X": X2, "y": y2}, **{**kw, "step_size": 2e-3}).run(jax.random.key(1))
    assert driver.TRACE_COUNT["n"] == before
    assert s.timing["compile_s"] < 0.05


def test_divergence_raises_with_step_number():
    s = _gauss(step_size=3.0 / H, num_steps=1000, num_chains=2)  # |1 - gamma H| = 2: doubling until overflow
    with pytest.raises(DivergenceError) as info:
        s.run(jax.random.key(0))
    msg = str(info.value)
    step = int(re.search(r"non-finite position at step (\d+)", msg).group(1))
    assert 100 <= step <= 140 and "\n" not in msg  # float32 overflows at about 2^128
    with pytest.raises(AssumptionError, match="no released samples"):
        s.get_samples()


def test_warning_when_chain_does_not_move():
    with pytest.warns(RuntimeWarning, match="not moved"):
        _gauss(step_size=1e-20, num_steps=3).run(jax.random.key(0))


@pytest.mark.parametrize("kw, pattern", [
    (dict(sampler="sgld", batch_size=11), "exceeds data_size = 10"),
    (dict(sampler="sgld", batch_size=0), "batch_size = 0 must be an integer >= 1"),
    (dict(sampler="sgld"), "batch_size = None"),
    (dict(batch_size=3), "uses the full batch"),
    (dict(step_size=-0.1), "step_size = -0.1 must be > 0"),
    (dict(release="all"), "release = 'all'"),
    (dict(release="thinned", thinning=3), "does not divide num_steps"),
    (dict(num_chains=0), "num_chains = 0"),
    (dict(init=[1.0, 2.0]), r"init has shape \(2,\)"),
    (dict(clip_norm=float("nan")), "clip_norm"),
])
def test_bad_configuration_one_line(kw, pattern):
    base = dict(step_size=0.01, num_steps=10)
    base.update(kw)
    with pytest.raises(AssumptionError, match=pattern) as info:
        _gauss(**base)
    assert "\n" not in str(info.value)


def test_progress_bar_under_vmap(capsys):
    _gauss(step_size=0.01, num_steps=200, num_chains=2, progress_bar=True, progress_every=50).run(jax.random.key(0))
    err = capsys.readouterr().err
    # one bar for the vectorized chains, counting steps (200), not chain-steps (400), and it reaches the end
    assert "ula (2 chain(s)): 100%" in err and "| 200/200 [" in err and "/400" not in err, err


def test_summary_and_shapes():
    s = _gauss(step_size=0.05, num_steps=400, num_chains=2, release="path").run(jax.random.key(0))
    text = s.print_summary()
    assert "r_hat" in text and "ess_bulk" in text and "NOT CERTIFIED" in text
    assert s.get_samples(group_by_chain=True)["theta"].shape == (2, 400)
    assert s.get_samples()["theta"].shape == (800,)


@pytest.mark.parametrize("clip", [None, 0.4])
def test_first_sgld_steps_are_the_documented_update(clip):
    """x_{t+1} = x_t - gamma (x_t / tau^2 + (m/s) sum_{i in A_t} clip((x_t - y_i) / sigma^2)) + sqrt(2 gamma / beta) z_t
    with chain c's stream: k_b = fold_in(split(key, K)[c], b), (k_idx, k_noise) = split(k_b),
    A_t = minibatch.batch_indices(k_idx, m, s, L)[t], z_t = normal(k_noise, (L, dim))[t]."""
    from bayesdp.samplers import minibatch

    m, s, gamma, beta, n, K = len(Y), 4, 0.05, 2.0, 5, 2
    smp = _gauss(sampler="sgld", batch_size=s, step_size=gamma, num_steps=n, num_chains=K, inverse_temperature=beta,
                 release="path", clip_norm=clip, init=[0.3]).run(jax.random.key(8))
    out = smp.get_unconstrained_samples()[..., 0]
    keys = jax.random.split(jax.random.key(8), K)
    y = Y.astype(np.float64)
    for c in range(K):
        k_idx, k_noise = jax.random.split(jax.random.fold_in(keys[c], 0))
        batches = np.asarray(minibatch.batch_indices(k_idx, m, s, n))
        z = np.asarray(jax.random.normal(k_noise, (n, 1), jnp.float32), np.float64)[:, 0]
        x = 0.3
        for t in range(n):
            g_i = (x - y[batches[t]]) / SIGMA ** 2
            if clip is not None:
                g_i = np.clip(g_i, -clip, clip)
            x = x - gamma * (x / TAU ** 2 + (m / s) * g_i.sum()) + np.sqrt(2 * gamma / beta) * z[t]
            assert out[c, t] == pytest.approx(x, rel=1e-4, abs=1e-5)
