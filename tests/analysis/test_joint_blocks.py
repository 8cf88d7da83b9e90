"""One-hot rows spread over several latent sites (issue 23, item 3: "2-D gathers and LocScaleReparam lose one-hot
norms").  JAX's ``jacfwd`` computes the Jacobian of a predictor over all latent coordinates at once and then splits
its last axis into the sites' blocks; a row of the blocks side by side is that row of the whole, so the whole's
row bound (with its norm facts: a gathered row of a constant table has norm 1, not the norm of its box) bounds
the blocks together.  Each certified constant is compared with the exact supremum of the predictor's gradient
norm, found by enumerating the declared group indices (the predictors are affine in theta, so the gradient does
not depend on theta) with the record's feature at the declared norm, and adversarial variants check that the
joint bound never goes below the truth."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer.reparam import LocScaleReparam

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(23)
m = 24
G, H = 5, 3
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
IDX = {"g": np.arange(m) % G, "h": np.arange(m) % H}
Y = (np.arange(m) % 2).astype(float)


def _w(X):
    return numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))


def loc_scale(X, g, y=None, scale=2.0):
    w = _w(X)
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("groups", G):
        with handlers.reparam(config={"alpha": LocScaleReparam(0)}):
            alpha = numpyro.sample("alpha", dist.Normal(mu, scale))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + alpha[g]), obs=y)


def gather_2d(X, g, h, y=None):
    w = _w(X)
    A = numpyro.sample("A", dist.Normal(0.0, 1.0).expand([G, H]).to_event(2))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + A[g, h]), obs=y)


def two_sites_same_index(X, g, y=None):
    w = _w(X)
    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([G]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([G]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + a[g] + 3.0 * b[g]), obs=y)


def one_site_two_indices(X, g, h, y=None):
    # a[g] + a[h]: the two one-hot rows add, norm 2 when g == h (a bound of 1 per row would be wrong)
    w = _w(X)
    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([G]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + a[g] + a[h]), obs=y)


def shared_and_group(X, g, y=None):
    # mu + alpha[g] - 2 mu: the shared site appears twice, its coefficient -1
    w = _w(X)
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0).expand([G]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + mu + alpha[g] - 2.0 * mu), obs=y)


def _rest_norm(fn, sizes, indices):
    """max over the declared indices of the norm of d logit / d theta without the w part (affine in theta: the
    gradient is constant), in float64 by jax.jacfwd on a flat theta."""
    best = 0.0
    for combo in itertools.product(*[range(n) for n in indices.values()]):
        kw = dict(zip(indices, combo))
        jac = jax.jacfwd(lambda th: fn(th, **kw))(jnp.zeros(sum(sizes)))
        best = max(best, float(np.linalg.norm(np.asarray(jac, dtype=np.float64))))
    return best


CASES = {
    # name: model, data args, domain, logit without w as a function of the flat non-w theta, sizes, indices
    "loc_scale": (loc_scale, ["g"], ["g.values=0..4"],
                  lambda th, g: th[0] + 2.0 * th[1 + g], [1, G], {"g": G}),
    "gather_2d": (gather_2d, ["g", "h"], ["g.values=0..4", "h.values=0..2"],
                  lambda th, g, h: th.reshape(G, H)[g, h], [G * H], {"g": G, "h": H}),
    "two_sites_same_index": (two_sites_same_index, ["g"], ["g.values=0..4"],
                             lambda th, g: th[g] + 3.0 * th[G + g], [G, G], {"g": G}),
    "one_site_two_indices": (one_site_two_indices, ["g", "h"], ["g.values=0..4", "h.values=0..2"],
                             lambda th, g, h: th[g] + th[h], [G], {"g": G, "h": H}),
    "shared_and_group": (shared_and_group, ["g"], ["g.values=0..4"],
                         lambda th, g: th[0] + th[1 + g] - 2.0 * th[0], [1, G], {"g": G}),
}
# the exact suprema of the non-w part, by hand: sqrt(1 + 4), 1, sqrt(1 + 9), 2 (g = h), sqrt(1 + 1)
BY_HAND = {"loc_scale": math.sqrt(5.0), "gather_2d": 1.0, "two_sites_same_index": math.sqrt(10.0),
           "one_site_two_indices": 2.0, "shared_and_group": math.sqrt(2.0)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_bound_is_the_supremum_over_the_groups(name):
    model, args, dom, rest, sizes, indices = CASES[name]
    domain = Domain.parse(["X.norm=1", "y.values=0,1", *dom])
    R = domain.get("X").certified_norm
    brute = _rest_norm(rest, sizes, indices)
    assert brute == pytest.approx(BY_HAND[name], rel=1e-12)
    want = math.sqrt(R * R + brute * brute)         # the w part (norm <= R) on other coordinates; |psi| <= 1
    c = analyze(model, {"X": X, "y": Y, **{a: IDX[a] for a in args}}, domain).constants
    assert c.record_grad_bound >= want * (1 - 1e-9)
    assert c.record_grad_bound == pytest.approx(want, rel=1e-6)
