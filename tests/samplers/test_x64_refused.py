"""A private chain runs the program the analyzer proved: the model traced with float32 parameters and data.  In
JAX's 64-bit mode the samplers would run it on float64 arrays, where a Python float literal keeps more digits, so
the certificate would cover another program (found by an adversarial model: ``(u * 1.00000017 - u) * 1e7`` is
``1.192 u`` in float32, the certified bound 1.19209, and ``1.7 u`` in float64).  Certified chains and releases are
refused in 64-bit mode; uncertified chains run."""

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import AssumptionError


def cancel(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    u = X @ w
    eta = (u * 1.00000017 - u) * 1e7
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=eta), obs=y)


X = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]])
Y = np.array([0.0, 1.0])
DOM = Domain.parse(["X.norm=1", "y.values=0,1"])


@pytest.fixture
def x64():
    prev = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


def test_the_float32_program_is_what_is_certified():
    # the literal as float32 is 1.00000011920928955078125: (u (1 + 2^-23) - u) 1e7 = 1.1920929 u, so the record's
    # gradient is sigmoid(eta) - y times 1.1920929 x, at most 1.1920929 |x| (= 1 here); in float64 it is 1.7 |x|
    b = analyze(cancel, {"X": X, "y": Y}, DOM).constants.record_grad_bound
    assert float(np.float32(1.00000017)) - 1 == 2.0 ** -23
    assert (2.0 ** -23) * 1e7 <= b <= (2.0 ** -23) * 1e7 * (1 + 1e-6)
    assert b < 1.7


def test_a_certified_chain_is_refused_in_64_bit_mode(x64):
    from bayesdp.samplers import Sampler

    with pytest.raises(AssumptionError, match=r"64-bit mode is on .* pass uncertified=True"):
        Sampler(cancel, {"X": X, "y": Y}, step_size=1e-3, num_steps=10, domain=DOM)
    s = Sampler(cancel, {"X": X, "y": Y}, step_size=1e-3, num_steps=10, uncertified=True)
    s.run(jax.random.PRNGKey(0))
    assert not s.certificate["certified"]


def test_a_release_is_refused_in_64_bit_mode_before_anything_is_charged(x64):
    import bayesdp
    from bayesdp.models import logistic

    rng = np.random.default_rng(0)
    Xr = rng.standard_normal((200, 2))
    Xr /= np.linalg.norm(Xr, axis=1, keepdims=True)
    acct = bayesdp.PrivacyAccountant(budget=4.0, budget_delta=1e-6)
    with pytest.raises(AssumptionError, match="the path release: JAX's 64-bit mode is on") as e:
        bayesdp.release(bayesdp.ULA(logistic, domain=DOM), "mean", data={"X": Xr, "y": (Xr[:, 0] > 0) * 1.0},
                        epsilon=4.0, delta=1e-6, accountant=acct)
    assert "uncertified" not in str(e.value)
    assert acct.remaining()["epsilon"] == 4.0
