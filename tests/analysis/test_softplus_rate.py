"""A Poisson rate written as a softplus of the predictor (issue 23: bounded scores certify).  The score in the
predictor is ``y sigmoid(eta) / softplus(eta) - sigmoid(eta)``: ``sigmoid / softplus`` is in ``(0, 1]`` since
``log(1 + u) >= u / (1 + u)``, so ``|score| <= max(y_max, 1)``, approached as ``eta -> -inf`` (``y_max``) or
``+inf`` (1).  Checked against a brute-force supremum of JAX's own gradient, in the spellings users write, and
against look-alikes that the rule must not read as a softplus ratio."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(17)
m = 24
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y_MAX = 5
Y = (np.arange(m) % (Y_MAX + 1)).astype(float)
DOM = Domain.parse(["X.norm=1", f"y.values=0..{Y_MAX}"])
R = DOM.get("X").certified_norm


def _glm(rate_of, factor=False):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
        eta = X @ w
        with numpyro.plate("data", X.shape[0]):
            if factor:
                rate = rate_of(eta)
                numpyro.factor("obs", y * jnp.log(rate) - rate)
            else:
                numpyro.sample("obs", dist.Poisson(rate_of(eta)), obs=y)
    return model


def _brute_score(rate_of, y_max):
    """max over a grid of eta in [-60, 60] and every count y <= y_max of |d/deta log Poisson(y | rate(eta))|."""
    eta = jnp.linspace(-60.0, 60.0, 24001)
    g = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda e, y: dist.Poisson(rate_of(e)).log_prob(y)), (0, None)), (None, 0)))
    return float(jnp.max(jnp.abs(g(eta, jnp.arange(0.0, y_max + 1)))))


SOFTPLUS = {
    "jax.nn.softplus": jax.nn.softplus,
    "logaddexp": lambda e: jnp.logaddexp(e, 0.0),
}


@pytest.mark.parametrize("name", sorted(SOFTPLUS))
def test_a_softplus_rate_certifies_at_the_supremum(name):
    rate_of = SOFTPLUS[name]
    c = analyze(_glm(rate_of), {"X": X, "y": Y}, DOM).constants
    brute = _brute_score(rate_of, Y_MAX)
    assert brute == pytest.approx(Y_MAX, rel=1e-5)          # y sigmoid / softplus -> y as eta -> -inf
    assert c.record_grad_bound == pytest.approx(Y_MAX * R, rel=1e-6) and c.record_grad_bound >= brute * R * (1 - 1e-6)
    assert c.record_smoothness is None                       # the generic rule claims no smoothness


def test_counts_of_zero_only_give_the_sigmoid_term():
    # y = 0: the score is -sigmoid(eta), at most 1 in absolute value
    c = analyze(_glm(jax.nn.softplus), {"X": X, "y": np.zeros(m)}, Domain.parse(["X.norm=1", "y.values=0"])).constants
    assert c.record_grad_bound == pytest.approx(R, rel=1e-6)


def test_the_same_likelihood_written_as_a_factor():
    c = analyze(_glm(jax.nn.softplus, factor=True), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound == pytest.approx(Y_MAX * R, rel=1e-6)


def test_a_floor_added_to_the_softplus_is_bounded_by_the_boxes():
    # rate = softplus(eta) + 1 >= 1: the division is by a box bounded away from 0, no ratio rule needed; the
    # bound must still cover the true supremum
    rate_of = lambda e: jax.nn.softplus(e) + 1.0     # noqa: E731
    c = analyze(_glm(rate_of), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound is not None and c.record_grad_bound >= _brute_score(rate_of, Y_MAX) * R * (1 - 1e-6)


def test_an_exp_rate_stays_refused():
    an = analyze(_glm(jnp.exp), {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound is None
    assert "exp" in an.first_unproven("per-record gradient bound")


def test_the_ratio_is_at_most_one_everywhere():
    # the fact the rule rests on, in exact-enough arithmetic: sigmoid(a) / softplus(a) in (0, 1] on a wide grid
    # (mpmath-free: log1p and expit in float64 are accurate to a few ulps here; the margin is 1e-12)
    a = np.linspace(-700.0, 700.0, 2_000_001)
    ratio = (1.0 / (1.0 + np.exp(-a))) / np.logaddexp(0.0, a)
    assert np.all(ratio > 0) and np.max(ratio) <= 1.0 + 1e-12
    assert math.isclose(ratio[0], 1.0, rel_tol=1e-9)         # the supremum, approached as a -> -inf
