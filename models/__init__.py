"""Reference NumPyro models for bayesdp (``bayesdp certify NAME``).

Every built-in model takes its per-record features as keyword ``X`` (records x
features), its responses as ``y`` (one per record) and keyword hyperparameters
(``prior_scale`` ...).  ``bayesdp_data`` on each function declares the number of
per-record axes of each data argument (used to build shapes when certifying
before sampling, ``--no-data``).  Expected constants are derived by hand in
tests/analysis/test_models.py and docs/analysis.md.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

__all__ = ["logistic", "softmax", "robust", "sparse_logistic", "poisson", "hierarchical_logistic", "linear",
           "masked_logistic", "BUILTIN"]


def _data(**ndims):
    def deco(fn):
        fn.bayesdp_data = dict(ndims)
        return fn
    return deco


def _counts(**from_domain):
    """Hyperparameters that default to the number of declared values of a data argument (e.g. num_classes from
    ``y.values``): ``bayesdp.analysis.inputs.counts_from_domain`` reads this."""
    def deco(fn):
        fn.bayesdp_counts = dict(from_domain)
        return fn
    return deco


@_data(X=1, y=0)
def logistic(X, y=None, prior_scale=1.0):
    """Bayesian logistic regression: w ~ N(0, prior_scale^2 I), y_i ~ Bernoulli(logits = x_i . w).

    Args:
        X: (records, features) features.
        y: (records,) 0/1 labels (``None``: sampled).
        prior_scale: the prior's standard deviation.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(logistic, {"w": jnp.zeros(2)}, X=X, y=jnp.array([1.0, 0.0]), batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # w = 0: each label has probability 1/2, 2 log(1/2)
        -1.3863
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    logits = numpyro.deterministic("logits", jnp.dot(X, w))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Bernoulli(logits=logits), obs=y)


@_counts(num_classes="y")
@_data(X=1, y=0)
def softmax(X, y=None, num_classes=2, prior_scale=1.0):
    """Softmax regression: W ~ N(0, prior_scale^2) (features x classes), y_i ~ Categorical(logits = x_i W).

    ``num_classes`` defaults, under ``bayesdp certify``, to the number of values declared for ``y``.

    Args:
        X: (records, features) features.
        y: (records,) integer labels in 0..num_classes-1 (``None``: sampled).
        num_classes: the number of classes.
        prior_scale: the prior's standard deviation.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(softmax, {"W": jnp.zeros((2, 3))}, X=X, y=jnp.array([0, 2]), num_classes=3,
        ...                     batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # W = 0: each class has probability 1/3, 2 log(1/3)
        -2.1972
    """
    m, d = X.shape
    W = numpyro.sample("W", dist.Normal(0.0, prior_scale).expand([d, int(num_classes)]).to_event(2))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Categorical(logits=jnp.dot(X, W)), obs=y)


@_data(X=1, y=0)
def robust(X, y=None, prior_scale=1.0, df=4.0, noise_scale=1.0):
    """Robust linear regression: w ~ N(0, prior_scale^2 I), y_i ~ StudentT(df, x_i . w, noise_scale).

    Args:
        X: (records, features) features.
        y: (records,) responses (``None``: sampled).
        prior_scale: the prior's standard deviation.
        df: the Student t degrees of freedom.
        noise_scale: the Student t scale.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(robust, {"w": jnp.zeros(2)}, X=X, y=jnp.zeros(2), batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # 2 log t_4(0) = 2 log(3/8)
        -1.9617
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.StudentT(df, jnp.dot(X, w), noise_scale), obs=y)


@_data(X=1, y=0)
def sparse_logistic(X, y=None, prior_scale=1.0):
    """Logistic regression with a Laplace(0, prior_scale) prior on each weight (sparsity).

    Args:
        X: (records, features) features.
        y: (records,) 0/1 labels (``None``: sampled).
        prior_scale: the Laplace prior's scale.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(sparse_logistic, {"w": jnp.zeros(2)}, X=X, y=jnp.array([1.0, 0.0]),
        ...                     batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # 2 log(1/2)
        -1.3863
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Laplace(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Bernoulli(logits=jnp.dot(X, w)), obs=y)


@_data(X=1, y=0)
def poisson(X, y=None, prior_scale=1.0):
    """Poisson regression with log link: refused by the analyzer unless gradients are clipped.

    Args:
        X: (records, features) features.
        y: (records,) counts (``None``: sampled).
        prior_scale: the prior's standard deviation.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(poisson, {"w": jnp.zeros(2)}, X=X, y=jnp.zeros(2), batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # rate e^0 = 1: 2 log P(0 | 1) = -2
        -2.0
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.dot(X, w))), obs=y)


@_counts(num_groups="g")
@_data(X=1, g=0, y=0)
def hierarchical_logistic(X, g, y=None, num_groups=2, prior_scale=1.0, group_scale=1.0, mean_scale=1.0):
    """Hierarchical logistic regression with group intercepts (centred form).

    mu ~ N(0, mean_scale^2), alpha_k ~ N(mu, group_scale^2) for k < num_groups, w ~ N(0, prior_scale^2 I),
    y_i ~ Bernoulli(logits = x_i . w + alpha[g_i]) with g_i an integer group index.

    Args:
        X: (records, features) features.
        g: (records,) group indices in 0..num_groups-1.
        y: (records,) 0/1 labels (``None``: sampled).
        num_groups: the number of groups (defaults, under ``bayesdp certify``, to the values declared for ``g``).
        prior_scale: the weights' prior standard deviation.
        group_scale: the intercepts' standard deviation around mu.
        mean_scale: mu's prior standard deviation.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> params = {"w": jnp.zeros(2), "mu": 0.0, "alpha": jnp.zeros(2)}
        >>> ll = log_likelihood(hierarchical_logistic, params, X=X, g=jnp.array([0, 1]), y=jnp.array([1.0, 0.0]),
        ...                     batch_ndims=0)
        >>> round(float(ll["obs"].sum()), 4)              # all logits 0: 2 log(1/2)
        -1.3863
    """
    m, d = X.shape
    mu = numpyro.sample("mu", dist.Normal(0.0, mean_scale))
    with numpyro.plate("groups", int(num_groups)):
        alpha = numpyro.sample("alpha", dist.Normal(mu, group_scale))
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Bernoulli(logits=jnp.dot(X, w) + alpha[g]), obs=y)


@_data(X=1, y=0)
def linear(X, y=None, prior_scale=1.0, noise_loc=0.0, noise_scale=1.0):
    """Linear regression with an unknown noise scale: w ~ N(0, prior_scale^2 I), sigma ~ LogNormal(noise_loc,
    noise_scale), y_i ~ Normal(x_i . w, sigma).

    The Normal likelihood has no bounded gradient: certified with per-record gradient clipping
    (``--clip-norm G``); sigma's LogNormal prior is a Gaussian in log sigma.

    Args:
        X: (records, features) features.
        y: (records,) responses (``None``: sampled).
        prior_scale: the weights' prior standard deviation.
        noise_loc: the mean of log sigma.
        noise_scale: the standard deviation of log sigma.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(linear, {"w": jnp.zeros(2), "sigma": 1.0}, X=X, y=jnp.zeros(2), batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # 2 log N(0 | 0, 1) = -log(2 pi)
        -1.8379
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(noise_loc, noise_scale))
    with numpyro.plate("data", m):
        numpyro.sample("obs", dist.Normal(jnp.dot(X, w), sigma), obs=y)


@_data(X=1, y=0, observed=0)
def masked_logistic(X, y=None, observed=None, prior_scale=1.0):
    """Logistic regression where records with observed = 0 are dropped (numpyro.handlers.mask): their label
    may be anything in the domain, their term is 0.

    Args:
        X: (records, features) features.
        y: (records,) 0/1 labels (``None``: sampled).
        observed: (records,) 1 for a record that counts, 0 for one that is dropped.
        prior_scale: the prior's standard deviation.

    Examples:
        >>> import jax.numpy as jnp
        >>> from numpyro.infer.util import log_likelihood
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> ll = log_likelihood(masked_logistic, {"w": jnp.zeros(2)}, X=X, y=jnp.array([1.0, 0.0]),
        ...                     observed=jnp.array([1.0, 0.0]), batch_ndims=0)["obs"]
        >>> round(float(ll.sum()), 4)                     # only the first record counts: log(1/2)
        -0.6931
    """
    m, d = X.shape
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    with numpyro.plate("data", m), numpyro.handlers.mask(mask=observed > 0):
        numpyro.sample("obs", dist.Bernoulli(logits=jnp.dot(X, w)), obs=y)


#: the built-in models by the name ``bayesdp certify NAME`` takes
BUILTIN = {
    "logistic": logistic,
    "softmax": softmax,
    "robust": robust,
    "sparse_logistic": sparse_logistic,
    "poisson": poisson,
    "hierarchical_logistic": hierarchical_logistic,
    "linear": linear,
    "masked_logistic": masked_logistic,
}
