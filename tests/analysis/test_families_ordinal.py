"""Issue 23, item 3: OrderedLogistic with fixed increasing cutpoints: psi = 1 - u - v in (-1, 1), d psi/d eta =
u(1-u) + v(1-v) <= 1/2 (docs/analysis.md), checked against a brute-force maximum of JAX's own log_prob."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(13)
m = 24
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = np.arange(m) % 4
DOM = Domain.parse(["X.norm=1", "y.values=0,1,2,3"])
R = DOM.get("X").certified_norm
CUTS = jnp.array([-1.0, 0.0, 1.5])


def ordinal(X, y=None, cuts=CUTS):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.OrderedLogistic(X @ w, cuts), obs=y)


def ordinal_cuts_from_data(X, y=None):
    # cutpoints shifted by a record's feature: their boxes overlap over the domain, ordering not proven
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    cuts = CUTS[None, :] + 2.0 * X[:, :1]
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.OrderedLogistic(X @ w, cuts * jnp.array([1.0, -1.0, 1.0])), obs=y)


def test_score_and_hessian_against_brute_force():
    eta = jnp.linspace(-40.0, 40.0, 8001)
    # jitted: one program each (run op by op, the vmapped derivatives took 5-10 s)
    score = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda e, y: dist.OrderedLogistic(e, CUTS).log_prob(y)), (0, None)),
                             (None, 0)))(eta, jnp.arange(4))
    hess = jax.jit(jax.vmap(jax.vmap(jax.grad(jax.grad(lambda e, y: dist.OrderedLogistic(e, CUTS).log_prob(y))),
                                     (0, None)), (None, 0)))(eta, jnp.arange(4))
    assert float(jnp.max(jnp.abs(score))) == pytest.approx(1.0, abs=1e-4)
    assert float(jnp.max(jnp.abs(score))) <= 1.0 + 1e-6
    assert float(jnp.max(-hess)) <= 0.5 + 1e-6 and float(jnp.min(-hess)) >= -1e-6    # convex, smoothness 1/2
    an = analyze(ordinal, {"X": X, "y": Y}, DOM)
    c = an.constants
    assert c.record_grad_bound == pytest.approx(R, rel=1e-12) and c.record_grad_bound >= R
    assert c.record_smoothness == pytest.approx(R * R / 2, rel=1e-12) and c.v_convex is True


def test_unordered_or_overlapping_cutpoints_are_refused():
    an = analyze(ordinal, {"X": X, "y": Y}, DOM, model_kwargs={"cuts": jnp.array([0.5, 0.0, 1.0])})
    assert "strictly increasing" in an.first_unproven("per-record gradient bound")
    an = analyze(ordinal_cuts_from_data, {"X": X, "y": Y}, DOM)
    assert "strictly increasing" in an.first_unproven("per-record gradient bound")


def test_label_outside_the_classes_is_refused():
    with pytest.raises(Exception, match="support"):
        analyze(ordinal, {"X": X, "y": Y}, Domain.parse(["X.norm=1", "y.values=0,1,2,3,4"]))
