"""Issue 23, item 3: a Student-t likelihood whose scale is latent with a public floor (sigma = s0 + softplus(u)):
|dl/dloc| <= (df+1)/(2 s0 sqrt(df)), |dl/dscale| <= max(1, df)/scale (docs/analysis.md).  The certified bound must
cover an independent brute-force maximum of |grad| over a grid; without a floor the model stays refused."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(17)
m = 16
X = RNG.standard_normal((m, 1))
X /= np.abs(X) * 1.01
Y = RNG.uniform(-3, 3, m)
DOM = Domain.parse(["X.norm=1", "y.min=-3", "y.max=3"])
S0, DF = 0.5, 4.0


def floored(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    u = numpyro.sample("u", dist.Normal(0, 1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(DF, X @ w, S0 + jax.nn.softplus(u)), obs=y)


def unfloored(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    u = numpyro.sample("u", dist.Normal(0, 1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(DF, X @ w, jax.nn.softplus(u)), obs=y)


def _brute():
    """max over a grid of (w, u, y) with |x| = 1 of |grad_(w, u) log t(y | x w, s0 + softplus(u))|."""
    def lp(th, y):
        return dist.StudentT(DF, th[0], S0 + jax.nn.softplus(th[1])).log_prob(y)
    g = jax.grad(lp)
    w = jnp.linspace(-8.0, 8.0, 161)
    u = jnp.linspace(-12.0, 6.0, 181)
    W, U = jnp.meshgrid(w, u)
    th = jnp.stack([W.ravel(), U.ravel()], axis=1)
    best = 0.0
    for y in np.linspace(-3.0, 3.0, 13):
        gr = jax.vmap(lambda t: g(t, y))(th)
        best = max(best, float(jnp.max(jnp.linalg.norm(gr, axis=1))))
    return best


def test_floored_scale_certifies_and_covers_the_brute_force_maximum():
    an = analyze(floored, {"X": X, "y": Y}, DOM)
    G = an.constants.record_grad_bound
    R = DOM.get("X").certified_norm
    # closed form of the rule: (df+1)/(2 s0 sqrt(df)) R + max(1, df)/s0 * sup|sigmoid| = 2.5 R + 8
    assert G == pytest.approx(2.5 * R + 8.0, rel=1e-6)
    assert _brute() <= G
    assert an.constants.record_smoothness is None and an.constants.v_convex is not True


def test_without_a_floor_the_scale_stays_refused_with_its_growth():
    an = analyze(unfloored, {"X": X, "y": Y}, DOM)
    msg = an.first_unproven("per-record gradient bound")
    assert msg is not None and "grows like 1/scale as scale -> 0" in msg
