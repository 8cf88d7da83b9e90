"""Issue 23, item 1: the number of records written as ``len(x)`` (a Python int at trace time) certifies as with
``x.shape[0]``; a count that is not the data's own (a literal, a model argument, a shifted length, ``int()``) is
refused with what to write.  Expected constants derived in the comments."""

import builtins

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import ModelError

RNG = np.random.default_rng(11)
m, d = 30, 3
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 2).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0,1"])
R = DOM.get("X").certified_norm        # the declared norm 1, inflated by 1 + 8 * 2^-24 (float rows)


def len_plate(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", len(X)):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def len_plate_of_y(X, y):
    # len() of the response, inside a nested function defined by the model
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))

    def likelihood():
        with numpyro.plate("data", len(y)):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)
    likelihood()


def shape_plate(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    N = X.shape[0]
    with numpyro.plate("data", N):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def len_mean(X, y=None):
    # the mean log-likelihood (len as a value): every term divided by the number of records
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", len(X)):
        numpyro.factor("ll", dist.Bernoulli(logits=X @ w).log_prob(y) / len(X))


def len_centred(X, y=None):
    # len() is fine, but each logit reads the mean over all records: not separable
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    eta = X @ w
    with numpyro.plate("data", len(X)):
        numpyro.sample("obs", dist.Bernoulli(logits=eta - jnp.sum(eta) / len(X)), obs=y)


def len_minus_one(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", len(X) - 1):
        numpyro.sample("obs", dist.Bernoulli(logits=X[1:] @ w), obs=y[1:])


def _helper_count(X):
    return len(X)


def len_in_helper(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", _helper_count(X)):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def int_of_shape(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", int(X.shape[0])):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def count_argument(X, y=None, N=30):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", N):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


@pytest.mark.parametrize("model", [len_plate, len_plate_of_y, shape_plate])
@pytest.mark.parametrize("with_data", [True, False])
def test_len_of_a_data_argument_certifies_as_its_leading_dimension(model, with_data):
    # Bernoulli(logits = x.w): per-record gradient (y - sigmoid(x.w)) x, sup norm = sup |x| = R; replace-one
    # difference 2R (y = 1 vs y' = 0 at the same x: |(1 - s) x + s x'| <= R for x' = -x ... up to 2R)
    kw = {"data": {"X": X, "y": Y}} if with_data else {"data_size": m, "record_shapes": {"X": (d,), "y": ()}}
    an = analyze(model, domain=DOM, **kw)
    assert an.constants.record_grad_bound == R
    assert an.constants.record_grad_diff == pytest.approx(2 * R, rel=1e-12)
    assert an.record_plate == ("data", m)


def test_len_is_resolved_only_in_the_analysis_copy_of_the_model():
    # the model the user passed (and its module) still see Python's len: the samplers run the model itself
    analyze(len_plate, {"X": X, "y": Y}, DOM)
    assert "len" not in globals() and len_plate.__globals__ is globals() and builtins.len([1, 2]) == 2
    tr = numpyro.handlers.trace(numpyro.handlers.seed(len_plate, 0)).get_trace(X=X, y=Y)
    assert tr["obs"]["fn"].batch_shape == (m,)


def test_len_as_a_value_is_a_size_dependent_term():
    # terms l_i / m: the per-record gradient bound is R / m at the number of records m (= 30 here)
    an = analyze(len_mean, {"X": X, "y": Y}, DOM)
    g = an.constants.record_grad_bound
    assert g is not None and R / m <= g <= 1.6 * R / m


@pytest.mark.parametrize("model,words", [
    (len_centred, "depends on other records"),
    (len_minus_one, "cannot be analysed"),
    (len_in_helper, r"write X.shape\[0\] instead of len\(X\)"),
    (int_of_shape, r"converts the number of records to a Python int at test_record_counts.py:\d+ \(int_of_shape\) "
                   r"\(`with numpyro.plate\(\"data\", int\(X.shape\[0\]\)\):`\): .*use X.shape\[0\] as it is, "
                   r"without int\(\)"),
    (count_argument, r"take it from the data inside the model: numpyro.plate\('data', X.shape\[0\]\)"),
])
def test_counts_not_tied_to_the_records_are_refused_with_the_rewrite(model, words):
    with pytest.raises(ModelError, match=words) as e:
        analyze(model, {"X": X, "y": Y}, DOM)
    assert "\n" not in str(e.value) and "Traceback" not in str(e.value)


def literal_plate(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", 30):                  # the data's number of records, written as a number
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def test_a_literal_count_equal_to_the_records_is_refused_with_the_reason_and_the_rewrite():
    # refused even though the data has exactly 30 records: a model defined for 30 records fails on an add/remove
    # neighbour with 29 or 31 (docs/models.md, "A number of records written as a number")
    assert X.shape[0] == 30
    with pytest.raises(ModelError, match=r"fixed size 30 meets the records at test_record_counts.py:\d+ "
                                         r"\(literal_plate\).*neighbouring dataset with one record more or fewer.*"
                                         r"numpyro.plate\('data', X.shape\[0\]\)") as e:
        analyze(literal_plate, {"X": X, "y": Y}, DOM)
    assert "\n" not in str(e.value) and "Traceback" not in str(e.value)
