"""Issue 23 (the clipped exp link): ``Poisson(jnp.clip(jnp.exp(eta), lo, hi))`` with public ``0 < lo <= hi``.  Its rate is
``exp(clip(eta, log lo, log hi))`` and ``dl/deta = (rate - y) d log rate/d eta`` with ``d log rate/d eta`` in ``[0, 1]``
(0 where the clip is active), so ``|grad| <= max(hi - y_lo, y_hi - lo) |x|``: with lo = 0.1, hi = 20, y in 0..5 and
|x| <= R, ``20 R``, approached at y = 0 as eta -> log 20 from below (docs/analysis.md).  The certified bound must equal
it and cover a brute-force maximum of JAX's own gradient; a clip reaching 0 or no upper end stays refused."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(5)
m = 12
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 6).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0..5"])


def _model(lo, hi):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Poisson(jnp.clip(jnp.exp(X @ w), lo, hi)), obs=y)
    return model


def _brute(lo, hi, R):
    """max over eta in a grid and y in 0..5 of |d/d eta log Poisson(y | clip(exp(eta), lo, hi))| R (JAX's gradient)."""
    g = jax.jit(jax.vmap(jax.grad(lambda e, y: dist.Poisson(jnp.clip(jnp.exp(e), lo, hi)).log_prob(y)),
                         in_axes=(0, None)))
    eta = jnp.linspace(-6.0, 6.0, 4801)
    return max(float(jnp.max(jnp.abs(g(eta, float(y))))) for y in range(6)) * R


def test_clipped_exp_rate_certifies_at_its_supremum():
    an = analyze(_model(0.1, 20.0), {"X": X, "y": Y}, DOM)
    G = an.constants.record_grad_bound
    R = DOM.get("X").certified_norm
    assert 20.0 * R <= G <= 20.0 * R * (1 + 1e-9)
    assert _brute(0.1, 20.0, R) <= G


@pytest.mark.parametrize("lo,hi", [(0.0, 20.0), (0.1, np.inf)])
def test_clips_that_do_not_bound_the_rate_away_from_0_and_inf_are_refused(lo, hi):
    an = analyze(_model(lo, hi), {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound is None
    assert an.first_unproven("per-record gradient bound") is not None
