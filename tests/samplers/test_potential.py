"""Potential of a NumPyro model: closed-form gradients, Jacobian terms, record split, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayesdp.errors import AssumptionError, DomainError, ModelError
from bayesdp.samplers import ModelPotential, validate_data

from _sampler_models import discrete_latent, gaussian_mean, logistic, logistic_data, positive_scale


def test_logistic_gradient_matches_closed_form():
    X, y = logistic_data(200, 4, seed=1)
    prior_scale = 2.0
    pot = ModelPotential(logistic, {"X": X, "y": y}, {"prior_scale": prior_scale})
    theta = np.array([0.3, -1.0, 0.5, 2.0])
    g = np.asarray(jax.jit(jax.grad(pot.potential))(jnp.asarray(theta, jnp.float32)))
    Xd, yd = X.astype(np.float64), y.astype(np.float64)
    expected = Xd.T @ (1 / (1 + np.exp(-Xd @ theta)) - yd) + theta / prior_scale ** 2
    np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-4)
    # prior part alone: theta / prior_scale^2
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(pot.prior_potential))(jnp.asarray(theta, jnp.float32))),
                               theta / prior_scale ** 2, rtol=1e-5)


def test_constrained_site_includes_jacobian():
    # sigma = exp(u); U(u) = -log LogNormal(sigma; 0, 1) - u - sum_i log N(y_i; 0, sigma)
    y = np.array([0.5, -1.2, 2.0], np.float32)
    pot = ModelPotential(positive_scale, {"y": y})
    assert pot.dim == 1
    for u in (-0.7, 0.0, 0.9):
        sigma = np.exp(u)
        expected = -(stats.lognorm(s=1.0).logpdf(sigma) + u + stats.norm(0, sigma).logpdf(y.astype(float)).sum())
        assert float(jax.jit(pot.potential)(jnp.array([u], jnp.float32))) == pytest.approx(expected, rel=1e-5)
        np.testing.assert_allclose(np.asarray(pot.unflatten(jnp.array([u]))["sigma"]), sigma, rtol=1e-6)


def test_record_losses_sum_to_likelihood():
    X, y = logistic_data(50, 3, seed=2)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    th = jnp.array([0.2, -0.4, 1.0])
    per = jax.jit(jax.vmap(lambda r: pot.record_loss(th, r)))({"X": jnp.asarray(X), "y": jnp.asarray(y)})
    z = X.astype(float) @ np.asarray(th, float)
    expected = np.logaddexp(0, z) - y * z  # -log Bernoulli(y | sigmoid z)
    np.testing.assert_allclose(np.asarray(per), expected, rtol=1e-5, atol=1e-6)
    lik = float(jax.jit(lambda t: pot.potential(t) - pot.prior_potential(t))(th))
    assert lik == pytest.approx(expected.sum(), rel=1e-5)


def test_gaussian_potential_quadratic():
    y = np.array([1.0, 2.0, -0.5], np.float32)
    pot = ModelPotential(gaussian_mean, {"y": y}, {"prior_scale": 2.0, "noise_scale": 0.5})
    H = 1 / 4 + 3 / 0.25
    b = y.sum() / 0.25
    grad = jax.jit(jax.grad(pot.potential))
    for t in (-1.0, 0.3, 2.0):
        assert float(grad(jnp.array([t], jnp.float32))[0]) == pytest.approx(H * t - b, rel=1e-5)


def test_prior_draw_init_is_data_independent():
    X1, y1 = logistic_data(30, 3, seed=3)
    X2, y2 = logistic_data(30, 3, seed=4)
    p1 = ModelPotential(logistic, {"X": X1, "y": y1})
    p2 = ModelPotential(logistic, {"X": X2, "y": y2})
    k = jax.random.key(5)
    np.testing.assert_array_equal(np.asarray(p1.init_prior(k)), np.asarray(p2.init_prior(k)))


def test_discrete_latent_refused():
    with pytest.raises(ModelError, match="latent site 'k' is discrete"):
        ModelPotential(discrete_latent, {"y": np.zeros(3, np.float32)})


@pytest.mark.parametrize("data, err, pattern", [
    ({"X": np.ones((3, 2)), "y": np.ones(4)}, AssumptionError, "same leading dimension"),
    ({"X": np.array([["a", "b"]]), "y": np.ones(1)}, AssumptionError, "not numeric"),
    ({"X": np.array([[1.0, np.nan]]), "y": np.ones(1)}, DomainError, r"non-finite value nan at index \(0, 1\)"),
    ({"X": np.float32(1.0)}, AssumptionError, "leading record axis"),
    ({}, AssumptionError, "non-empty dict"),
])
def test_bad_data_one_line(data, err, pattern):
    with pytest.raises(err, match=pattern) as info:
        validate_data(data)
    assert "\n" not in str(info.value)


def test_float64_data_becomes_float32():
    out, m = validate_data({"X": np.ones((4, 2)), "y": np.arange(4)})
    assert m == 4 and out["X"].dtype == np.float32


def test_fast_bernoulli_logits_matches_numpyro_and_has_exact_derivative():
    import numpyro.distributions as dist

    from bayesdp.samplers.potential import bernoulli_logits_log_prob

    z = jnp.array([-30.0, -2.5, -1e-3, 0.0, 1e-3, 0.7, 4.0, 30.0])
    for yv in (0.0, 1.0):
        y = jnp.full_like(z, yv)
        np.testing.assert_allclose(np.asarray(bernoulli_logits_log_prob(z, y)),
                                   np.asarray(dist.Bernoulli(logits=z).log_prob(y)), rtol=1e-6, atol=1e-6)
        g = jax.jit(jax.vmap(jax.grad(bernoulli_logits_log_prob), in_axes=(0, 0)))(z, y)
        expected = yv - 1 / (1 + np.exp(-np.asarray(z, np.float64)))  # d/dz [y z - log(1 + e^z)]
        np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-7)
    assert float(jax.grad(bernoulli_logits_log_prob)(0.0, 0.0)) == -0.5  # NumPyro's autodiff gives 0 here


def test_logistic_gradient_exact_at_zero():
    X, y = logistic_data(100, 3, seed=3)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    g = np.asarray(jax.jit(jax.grad(pot.potential))(jnp.zeros(3)))
    np.testing.assert_allclose(g, X.astype(float).T @ (0.5 - y), rtol=1e-5, atol=1e-5)


def test_likelihood_not_split_by_records_refused():
    import numpyro
    import numpyro.distributions as dist

    def pooled(y):  # one observed site for the whole dataset: not a sum over records
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0))
        numpyro.sample("total", dist.Normal(theta * y.shape[0], 1.0), obs=jnp.sum(y))

    pot = ModelPotential(pooled, {"y": np.array([1.0, 2.0, 3.0], np.float32)})
    with pytest.raises(ModelError, match="not the sum of its per-record likelihoods"):
        pot.check_decomposition()


@pytest.mark.parametrize("x64", [False, True])
def test_big_endian_members_are_converted_to_native_order(x64):
    """A big-endian array (an NPZ written on another machine) reaches JAX in native byte order with the same
    values, in 32- and in 64-bit mode (JAX refuses non-native arrays: this crashed with a TypeError)."""
    X = np.arange(6, dtype=">f8").reshape(3, 2) / 7.0
    y = np.array([0, 1, 1], dtype=">i8")
    prev = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", x64)
    try:
        out, m = validate_data({"X": X, "y": y})
        assert m == 3 and out["X"].dtype.isnative and out["y"].dtype.isnative
        np.testing.assert_array_equal(out["X"], X.astype(np.float64 if x64 else np.float32))
        np.testing.assert_array_equal(out["y"], [0, 1, 1])
        assert float(jnp.sum(jnp.asarray(out["X"]))) == pytest.approx(15 / 7, rel=1e-6)
    finally:
        jax.config.update("jax_enable_x64", prev)
