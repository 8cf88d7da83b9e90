"""Issue 23, item 3: tighter generic bounds for compositions of bounded functions (docs/analysis.md, relational
rules): NumPyro's Bernoulli log_prob in a factor (softplus_parts) and clipped probabilities (clipped_sigmoid_log).
Each bound is compared with the exact supremum (derived in the comments) and with a grid of JAX's own derivative
of the model's log-density (the bound must cover the grid)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(31)
m, d = 30, 3
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 2).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0,1"])
R = DOM.get("X").certified_norm


def clipped(lo, hi):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jnp.clip(jax.nn.sigmoid(X @ w), lo, hi)), obs=y)
    return model


def _grid_sup(lo, hi):
    # d/deta log Bernoulli(y | clip(sigmoid(eta), lo, hi)) at |x| = R along x: JAX's derivative, y in {0, 1}
    def l(eta, y):
        return dist.Bernoulli(probs=jnp.clip(jax.nn.sigmoid(eta), lo, hi)).log_prob(y)
    etas = jnp.linspace(-8.0, 8.0, 16001, dtype=jnp.float32)
    g = jax.jit(jax.vmap(jax.grad(l), in_axes=(0, None)))
    return max(float(np.max(np.abs(np.asarray(g(etas, y), dtype=np.float64)))) for y in (0.0, 1.0)) * R


@pytest.mark.parametrize("lo,hi", [(0.05, 0.95), (0.2, 0.7), (0.01, 0.5)])
def test_clipped_probabilities_get_the_exact_supremum(lo, hi):
    # inside the clip p = s: y = 1: dl/deta = 1 - s <= 1 - lo; y = 0: -s, |.| <= hi; outside: 0.  sup = max(1 - lo, hi)
    # at the ends the program computes with: float32(lo), float32(hi) (float32(0.95) = 0.949999988)
    exact = max(1.0 - float(np.float32(lo)), float(np.float32(hi))) * R
    c = analyze(clipped(lo, hi), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound >= exact and c.record_grad_bound == pytest.approx(exact, rel=1e-9)
    grid = _grid_sup(lo, hi)
    assert grid <= c.record_grad_bound <= 1.001 * grid


def test_factor_of_bernoulli_log_prob_equals_the_sample_statement():
    def factor_model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("ll", dist.Bernoulli(logits=X @ w).log_prob(y))
    assert analyze(factor_model, {"X": X, "y": Y}, DOM).constants.record_grad_bound == R


def test_a_clip_that_can_reach_zero_is_not_the_relation():
    # clip(s, 0, 0.9): log(p) with p = 0 possible: NumPyro's clamp_probs keeps it finite, but the relation needs the
    # last clip's lower end > 0, and NumPyro's clamp then is the last clip (its lower end is tiny): the bound is the
    # exact one of the clamp, 1 - tiny ~ 1 (y = 1), not below the true sup 1
    c = analyze(clipped(0.0, 0.9), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound is None or c.record_grad_bound >= R * 0.999999


def powered(k, lo=None, hi=None):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        p = jax.nn.sigmoid(X @ w) ** k
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=p if lo is None else jnp.clip(p, lo, hi)), obs=y)
    return model


@pytest.mark.parametrize("k,lo,hi,exact", [
    # p = s^2: y = 1: d/deta log s^2 = 2 (1 - s) -> 2 (s -> 0); y = 0: 2 s^2 / (1 + s) -> 1: sup 2 (issue: 4.25e37)
    (2, None, None, 2.0),
    # p = clip(s^3, 0.1, 0.9): y = 1: 3 (1 - s) for s^3 >= L: 3 (1 - L^(1/3)) = 1.6075, L the program's float32 0.1
    (3, 0.1, 0.9, 3.0 * (1.0 - float(np.float32(0.1)) ** (1.0 / 3.0))),
])
def test_powers_of_a_sigmoid_get_the_exact_supremum(k, lo, hi, exact):
    c = analyze(powered(k, lo, hi), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound >= exact * R and c.record_grad_bound == pytest.approx(exact * R, rel=1e-6)

    def l(eta, y):
        p = jax.nn.sigmoid(eta) ** k
        return dist.Bernoulli(probs=p if lo is None else jnp.clip(p, lo, hi)).log_prob(y)
    etas = jnp.linspace(-12.0, 12.0, 24001, dtype=jnp.float32)
    g = jax.jit(jax.vmap(jax.grad(l), in_axes=(0, None)))
    grid = max(float(np.max(np.abs(np.asarray(g(etas, y), dtype=np.float64)))) for y in (0.0, 1.0)) * R
    assert grid <= c.record_grad_bound <= 1.001 * grid
