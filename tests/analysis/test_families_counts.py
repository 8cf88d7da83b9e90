"""Issue 23, item 3: NegativeBinomial2 / GammaPoisson with a fixed concentration (log link), checked against the
closed-form supremum of the score and an independent brute-force maximum over a fine grid."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

jax.config.update("jax_enable_x64", False)
RNG = np.random.default_rng(11)
m = 20
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 21).astype(float)
DOM = Domain.parse(["X.norm=1", "y.min=0", "y.max=20"])
R = DOM.get("X").certified_norm


def nb2(X, y=None, k=5.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0, 1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(X @ w + b), k), obs=y)


def gamma_poisson(X, y=None, k=5.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.GammaPoisson(k, 2.0 * k / jnp.exp(X @ w)), obs=y)


def nb2_latent_concentration(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    k = numpyro.sample("k", dist.LogNormal(0, 1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(X @ w), k), obs=y)


def nb2_squared_mean(X, y=None, k=5.0):
    # looks like a log link, but log(mean) = 2 (x.w) + log(1 + ...) is not exp of a predictor: not this rule
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(X @ w) ** 2 + 1.0, k), obs=y)


def _brute_score(k, y_max):
    """max over a grid of eta and every integer y of |d/deta log NB2(y | e^eta, k)| (JAX's own log_prob)."""
    eta = jnp.linspace(-30.0, 30.0, 6001)
    f = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda e, y: dist.NegativeBinomial2(jnp.exp(e), k).log_prob(y)), (0, None)),
                         (None, 0)))
    return float(jnp.max(jnp.abs(f(eta, jnp.arange(0.0, y_max + 1)))))


def test_nb2_score_bound_is_the_closed_form_and_attained():
    # sup |psi| = max(k, y_max) = 20 (k = 5); J = [x, 1]: |J| <= sqrt(R^2 + 1); smoothness (k + y_max)/4 |J|^2
    brute = _brute_score(5.0, 20)
    assert brute == pytest.approx(20.0, rel=1e-3) and brute <= 20.0 * (1 + 1e-6)
    an = analyze(nb2, {"X": X, "y": Y}, DOM)
    c = an.constants
    J = np.sqrt(R * R + 1)
    # (declared bounds are used inflated by 1 + 8 * 2^-24 for float data: bayesdp/analysis/domain.py)
    assert c.record_grad_bound == pytest.approx(20.0 * J, rel=1e-6) and c.record_grad_bound >= 20.0 * J
    assert c.record_smoothness == pytest.approx(25.0 / 4 * J * J, rel=1e-6) and c.v_convex is True


def test_concentration_larger_than_the_counts():
    # k = 50 > y_max = 20: sup |psi| = k (mu -> inf at y = 0)
    brute = _brute_score(50.0, 20)
    assert brute == pytest.approx(50.0, rel=1e-2)
    an = analyze(gamma_poisson, {"X": X, "y": Y}, DOM, model_kwargs={"k": 50.0})
    assert an.constants.record_grad_bound == pytest.approx(50.0 * R, rel=1e-6) and an.constants.record_grad_bound >= 50 * R


@pytest.mark.parametrize("model", [nb2_latent_concentration, nb2_squared_mean])
def test_nb2_lookalikes_are_not_certified_by_the_rule(model):
    an = analyze(model, {"X": X, "y": Y}, DOM)
    assert all("NegativeBinomial2/GammaPoisson" not in str(f.to_dict()) for f in an.facts)


def test_nb2_without_a_declared_count_range_is_refused():
    an = analyze(nb2, {"X": X, "y": Y}, Domain.parse(["X.norm=1"]))
    msg = an.first_unproven("per-record gradient bound")
    assert msg is not None and "y.max" in msg


def pooled_binomial(at_bats, hits=None):
    a = numpyro.sample("a", dist.Normal(0, 1))
    with numpyro.plate("N", at_bats.shape[0]):
        numpyro.sample("obs", dist.Binomial(at_bats, logits=a), obs=hits)


def pooled_bernoulli(y):
    a = numpyro.sample("a", dist.Normal(0, 1))
    with numpyro.plate("N", y.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=a), obs=y)


def test_replace_one_difference_at_a_shared_predictor_is_the_true_supremum():
    # a pooled model (the logits read no data): two records see the same eta, so the difference of their gradients
    # is psi(y, n, eta) - psi(y', n', eta) = (n - n') s - (y - y'), s = sigmoid(eta).  Brute force over every pair
    # with y <= n <= 6 and a grid of s: the maximum is 6 = n_hi (not 2 * 6)
    s = np.linspace(0.0, 1.0, 101)
    pairs = [(n, y) for n in range(7) for y in range(n + 1)]
    brute = max(np.max(np.abs((n - n2) * s - (y - y2))) for n, y in pairs for n2, y2 in pairs)
    assert brute == 6.0
    ab = (np.arange(m) % 7).astype(float)
    an = analyze(pooled_binomial, {"at_bats": ab, "hits": np.floor(ab / 2)},
                 Domain.parse(["at_bats.min=0", "at_bats.max=6", "hits.min=0", "hits.max=6"]))
    c = an.constants
    assert c.record_grad_diff == pytest.approx(brute, rel=1e-6) and c.record_grad_diff >= brute
    assert c.record_grad_bound == pytest.approx(6.0, rel=1e-6)
    # Bernoulli: psi - psi' = y' - y: 1, not 2
    an = analyze(pooled_bernoulli, {"y": (np.arange(m) % 2).astype(float)}, Domain.parse(["y.values=0,1"]))
    assert an.constants.record_grad_diff == 1.0 and an.constants.record_grad_bound == 1.0


def test_a_predictor_that_reads_data_keeps_twice_the_bound():
    # logits = a + x: the two records see different eta; sup |psi J - psi' J'| = 2 (eta -> +inf for one record and
    # y = 0, eta' -> -inf for the other with y' = 1 needs different x: the data-free shortcut must not apply)
    def shifted(X, y=None):
        a = numpyro.sample("a", dist.Normal(0, 1))
        with numpyro.plate("N", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=a + 10.0 * X[:, 0]), obs=y)
    an = analyze(shifted, {"X": X, "y": (np.arange(m) % 2).astype(float)}, Domain.parse(["X.norm=1", "y.values=0,1"]))
    assert an.constants.record_grad_diff == pytest.approx(2.0, rel=1e-9)
