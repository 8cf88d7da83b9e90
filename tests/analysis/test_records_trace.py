"""``records._observed_discrete_sites`` traces the model abstractly (``jax.make_jaxpr``: nothing compiled; run on
concrete arrays each of the model's operations was a small program to lower and fetch, 13 for a logistic
regression, issue 24) and runs it on the record only where the abstract trace cannot answer: a support whose
bounds the program computed (a Binomial's total_count), or a model that needs concrete values.  The sites found are
the same either way."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from bayesdp.analysis import records


def _recording(model):
    calls = []

    def wrapped(**kw):
        calls.append(isinstance(next(iter(kw.values())), jax.core.Tracer))
        return model(**kw)
    return wrapped, calls


def logistic(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def binomial(X, n, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Binomial(total_count=n, logits=X @ w), obs=y)


def softmax(X, y=None, num_classes=3):
    W = numpyro.sample("W", dist.Normal(0, 1).expand([X.shape[1], num_classes]).to_event(2))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Categorical(logits=X @ W), obs=y)


def branching(X, y=None):
    if float(jnp.sum(X)) > 100.0:          # Python control flow on a value: needs concrete data
        raise ValueError("unreachable for the data here")
    logistic(X, y)


ONE = {"X": np.zeros((1, 2), np.float32), "y": np.ones(1, np.float32)}


def test_logistic_is_traced_abstractly_only():
    model, calls = _recording(logistic)
    got = records._observed_discrete_sites(model, ONE, {})
    assert calls == [True]                                   # one abstract trace, never run on the record
    (name, arg, support, family, to_int), = got
    assert (name, arg, family, to_int) == ("obs", "y", "BernoulliLogits", False) and support is constraints.boolean


def test_softmax_bounds_from_shapes_stay_on_the_abstract_path():
    model, calls = _recording(lambda **kw: softmax(**kw, num_classes=4))
    (name, arg, support, family, to_int), = records._observed_discrete_sites(model, ONE, {})
    assert calls == [True] and (name, arg, to_int) == ("obs", "y", True)
    assert (support.lower_bound, support.upper_bound) == (0, 3)


def test_a_computed_bound_is_read_from_the_model_run_on_the_record():
    one = {"X": np.zeros((1, 2), np.float32), "n": np.full(1, 7.0, np.float32), "y": np.ones(1, np.float32)}
    model, calls = _recording(binomial)
    (name, arg, support, family, _), = records._observed_discrete_sites(model, one, {})
    assert calls == [True, False]                            # abstract first, then on the record
    assert (name, arg, family) == ("obs", "y", "BinomialLogits")
    assert not isinstance(support.upper_bound, jax.core.Tracer) and float(np.asarray(support.upper_bound)[0]) == 7.0


def test_a_model_that_needs_concrete_values_is_run_on_the_record():
    model, calls = _recording(branching)
    (name, arg, support, _, _), = records._observed_discrete_sites(model, ONE, {})
    assert calls == [True, False] and (name, arg) == ("obs", "y") and support is constraints.boolean


def test_a_failing_model_gives_no_sites():
    def broken(X, y=None):
        raise RuntimeError("the model's own error")
    assert records._observed_discrete_sites(broken, ONE, {}) == []
