"""``potential._trace(..., abstract=True)``: the model traced by ``jax.make_jaxpr`` (nothing compiled), its sites'
shapes and distributions as on the record itself; a model that needs concrete values is run eagerly instead, and a
model's own error is raised as before (issue 24: each eager operation was a program to lower in a fresh process)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.errors import ModelError
from bayesdp.samplers import ModelPotential
from bayesdp.samplers.potential import _trace


def logistic(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def branching(X, y=None):
    if float(jnp.sum(X)) > 1e9:            # needs a concrete X
        raise ValueError("unreachable")
    logistic(X, y)


DATA = {"X": np.zeros((2, 3), np.float32), "y": np.ones(2, np.float32)}


@pytest.mark.parametrize("model, abstract_values", [(logistic, True), (branching, False)])
def test_sites_match_the_eager_trace(model, abstract_values):
    got, eager = _trace(model, DATA, {}, abstract=True), _trace(model, DATA, {})
    assert list(got) == list(eager)
    for name in eager:
        assert jnp.shape(got[name]["value"]) == jnp.shape(eager[name]["value"])
        assert type(got[name]["fn"]) is type(eager[name]["fn"])
    assert isinstance(got["w"]["value"], jax.core.Tracer) is abstract_values


def test_the_model_s_own_error_is_reported():
    def broken(X, y=None):
        raise RuntimeError("the model's own error")
    with pytest.raises(RuntimeError, match="the model's own error"):
        _trace(broken, DATA, {}, abstract=True)
    with pytest.raises(ModelError, match="failed when traced with one record .*the model's own error"):
        ModelPotential(broken, DATA)


def test_a_potential_of_a_model_needing_concrete_values_is_built():
    pot = ModelPotential(branching, DATA)
    assert pot.dim == 3 and [s.name for s in pot.sites] == ["w"]
