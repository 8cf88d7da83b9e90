"""Small NumPyro models for the sampler tests (independent of models/)."""

import numpyro
import numpyro.distributions as dist


def logistic(X, y=None, prior_scale=1.0):
    d = X.shape[1]
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=X @ theta), obs=y)


def gaussian_mean(y, prior_scale=1.0, noise_scale=1.0):
    """theta ~ N(0, prior_scale^2) in R, y_i ~ N(theta, noise_scale^2)."""
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale))
    with numpyro.plate("records", y.shape[0]):
        numpyro.sample("y", dist.Normal(theta, noise_scale), obs=y)


def positive_scale(y):
    """A constrained latent site: sigma ~ LogNormal(0, 1), y_i ~ N(0, sigma)."""
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("records", y.shape[0]):
        numpyro.sample("y", dist.Normal(0.0, sigma), obs=y)


def discrete_latent(y):
    k = numpyro.sample("k", dist.Bernoulli(0.5))
    with numpyro.plate("records", y.shape[0]):
        numpyro.sample("y", dist.Normal(k * 1.0, 1.0), obs=y)


def logistic_data(m, d, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(np.float32)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)) * 1.001
    theta = rng.normal(size=d)
    y = (rng.uniform(size=m) < 1 / (1 + np.exp(-X @ theta))).astype(np.float32)
    return X, y


def glm_gradient(structure, form, num_chains):
    """grad U_D on the GLM path (bayesdp.samplers.glm): the prior/Jacobian part plus the likelihood in layout
    ``form``, added as the driver adds them."""
    from bayesdp.samplers import glm

    lik, grad_k = glm.likelihood_gradient(structure, form, num_chains), glm.prior_gradient(structure, num_chains)
    return lambda theta, data, a: grad_k(theta, data) + lik(theta, data, a)


def xla_flags(*extra: str) -> str:
    """XLA_FLAGS for a subprocess that needs flags of its own (forced host devices): this run's flags (the suite's
    cheap compilation, tests/conftest.py) without a device count, plus ``extra``."""
    import os

    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f]
    return " ".join(kept + list(extra))
