"""Issue 23 (the clipped exp link): a Poisson rate ``exp(clip(eta, log lo, log hi))`` with public ``0 < lo <= hi``:
``dl/deta = (rate - y) d log rate/d eta`` with ``d log rate/d eta`` in ``[0, 1]`` (0 where the clip is active), so
``|grad| <= max(hi - y_lo, y_hi - lo) |x|``: with lo = 0.1, hi = 20, y in 0..5 and |x| <= R, ``20 R``, approached at
y = 0 as eta -> log 20 from below (docs/analysis.md).  The certified bound must equal it (up to the float32 rounding
of log 20) and cover a brute-force maximum of JAX's own gradient; a clip reaching 0 or no upper end stays refused.

``jnp.clip(jnp.exp(eta), lo, hi)`` is the same function of real numbers, and was certified at 20 R until 2026-11-28;
in float32 ``exp(eta)`` is an infinity past eta = 88.7, and JAX's reverse-mode derivative there multiplies it by the
clip's zero: NaN. It is refused, naming the exp and the rewrite above."""

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


def _rate_inside(lo, hi):
    with np.errstate(divide="ignore"):          # log 0 = -inf: a clip with no lower end
        a, b = float(np.log(lo)), float(np.log(hi))
    return lambda eta: jnp.exp(jnp.clip(eta, a, b))


def _rate_outside(lo, hi):
    return lambda eta: jnp.clip(jnp.exp(eta), lo, hi)


def _model(lo, hi, rate=_rate_inside):
    rate_of = rate(lo, hi)

    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Poisson(rate_of(X @ w)), obs=y)
    return model


def _brute(rate_of, R, eta=jnp.linspace(-6.0, 6.0, 4801)):
    """max over eta in a grid and y in 0..5 of |d/d eta log Poisson(y | rate(eta))| R (JAX's gradient)."""
    g = jax.jit(jax.vmap(jax.grad(lambda e, y: dist.Poisson(rate_of(e)).log_prob(y)), in_axes=(0, None)))
    return max(float(jnp.max(jnp.abs(g(eta, float(y))))) for y in range(6)) * R


def test_clipped_exp_rate_certifies_at_its_supremum():
    an = analyze(_model(0.1, 20.0), {"X": X, "y": Y}, DOM)
    G = an.constants.record_grad_bound
    R = DOM.get("X").certified_norm
    # float32(log 20) is 2.9957323 > log 20 by 1.4e-8 relative: the rate reaches 20 (1 + 2.7e-8)
    assert 20.0 * R <= G <= 20.0 * R * (1 + 1e-7)
    assert _brute(_rate_inside(0.1, 20.0), R) <= G
    assert _brute(_rate_inside(0.1, 20.0), R, jnp.linspace(-200.0, 200.0, 4001)) <= G      # finite everywhere


def test_the_clip_outside_the_exp_is_refused_naming_the_exp():
    g = jax.grad(lambda e: dist.Poisson(_rate_outside(0.1, 20.0)(e)).log_prob(3.0))
    assert np.isnan(float(g(jnp.float32(89.0)))) and np.isfinite(float(g(jnp.float32(88.0))))
    an = analyze(_model(0.1, 20.0, _rate_outside), {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound is None
    reason = an.first_unproven("per-record gradient bound")
    assert "exp overflows" in reason and "jnp.exp(jnp.clip(x, -B, B))" in reason, reason


@pytest.mark.parametrize("lo,hi", [(0.0, 20.0), (0.1, np.inf)])
def test_clips_that_do_not_bound_the_rate_away_from_0_and_inf_are_refused(lo, hi):
    an = analyze(_model(lo, hi), {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound is None
    assert an.first_unproven("per-record gradient bound") is not None
