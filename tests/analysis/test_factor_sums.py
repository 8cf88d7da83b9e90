"""Issue 23, item 1 (separable reductions): ``numpyro.factor`` OUTSIDE the plate with a sum over the records, the
common custom-likelihood idiom, certifies as the same factor inside the plate when its summands are proven to
read their own record only; sums whose terms mix records are refused.  Expected constants derived in comments."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.tracing import trace_program
from bayesdp.errors import ModelError

RNG = np.random.default_rng(23)
m, d = 40, 3
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 2).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0,1"])
R = DOM.get("X").certified_norm        # 1 inflated by 1 + 8 * 2^-24 (float rows)


def _w(X):
    return numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))


def summed_bernoulli(X, y=None):
    numpyro.factor("ll", jnp.sum(dist.Bernoulli(logits=X @ _w(X)).log_prob(y)))


def plated_bernoulli(X, y=None):
    w = _w(X)
    with numpyro.plate("data", X.shape[0]):
        numpyro.factor("ll", dist.Bernoulli(logits=X @ w).log_prob(y))


def summed_by_hand(X, y=None):
    # the Bernoulli log-likelihood written out: sum_i y_i eta_i - log(1 + e^eta_i), as two sums
    eta = X @ _w(X)
    numpyro.factor("ll", jnp.sum(y * eta) - jnp.sum(jnp.logaddexp(0.0, eta)))


def summed_method_negated(X, y=None):
    # -(sum of losses), with .sum() over a per-record loss of two columns (summed with it) and a constant factor
    eta = X @ _w(X)
    loss = jnp.concatenate([jnp.logaddexp(0.0, eta)[:, None], -y[:, None] * eta[:, None]], axis=1)
    numpyro.factor("ll", -(loss.sum() * 2.0) / 2.0)


def summed_mean(X, y=None):
    # the mean over the records (jnp.mean): terms l_i / m
    numpyro.factor("ll", jnp.mean(dist.Bernoulli(logits=X @ _w(X)).log_prob(y)))


def summed_in_jit(X, y=None):
    @jax.jit
    def ll(w, X, y):
        return jnp.sum(dist.Bernoulli(logits=X @ w).log_prob(y))
    numpyro.factor("ll", ll(_w(X), X, y))


# -- look-alikes whose terms mix records -----------------------------------------------------------------
def summed_cumsum(X, y=None):
    numpyro.factor("ll", jnp.sum(jnp.cumsum(dist.Bernoulli(logits=X @ _w(X)).log_prob(y))))


def summed_cross_products(X, y=None):
    lp = dist.Bernoulli(logits=X @ _w(X)).log_prob(y)
    numpyro.factor("ll", jnp.sum(lp * lp[::-1]))


def summed_centred(X, y=None):
    eta = X @ _w(X)
    numpyro.factor("ll", jnp.sum(dist.Bernoulli(logits=eta - jnp.mean(eta)).log_prob(y)))


def sum_squared(X, y=None):
    numpyro.factor("ll", -jnp.sum(jnp.logaddexp(0.0, X @ _w(X))) ** 2)


def product_of_sums(X, y=None):
    eta = X @ _w(X)
    numpyro.factor("ll", jnp.sum(y * eta) * jnp.sum(jnp.tanh(eta)) / 1e3)


def dot_over_records(X, y=None):
    # y . eta is a sum over records, but written as a contraction (not reduce_sum): not split, refused
    eta = X @ _w(X)
    numpyro.factor("ll", jnp.dot(y, eta) - jnp.sum(jnp.logaddexp(0.0, eta)))


def sum_plus_prior_term(X, y=None):
    w = _w(X)
    numpyro.factor("ll", jnp.sum(dist.Bernoulli(logits=X @ w).log_prob(y)) - jnp.sum(w ** 4))


def _an(model):
    return analyze(model, {"X": X, "y": Y}, DOM)


def test_summed_factor_certifies_as_the_plated_factor():
    plated = _an(plated_bernoulli).constants
    an = _an(summed_bernoulli)
    c = an.constants
    assert (c.record_grad_bound, c.record_grad_diff, c.grad_diff) == \
        (plated.record_grad_bound, plated.record_grad_diff, plated.grad_diff)
    # the true sup of |(y - sigmoid(x.w)) x| is R, and it is what the sample statement with obs gets (its family
    # rule) and what the generic rule gets through bounds.softplus_parts (NumPyro's Bernoulli log_prob)
    def sampled(X, y=None):
        w = _w(X)
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("ll", dist.Bernoulli(logits=X @ w), obs=y)
    s = _an(sampled).constants
    assert c.record_grad_bound == s.record_grad_bound == R
    assert c.record_grad_diff == pytest.approx(s.record_grad_diff, rel=1e-12)
    note = " ".join(an.notes)
    assert "site 'll' is a numpyro.factor of a sum over the records" in note and "unit of privacy" in note


def test_the_program_holds_the_summands_and_they_add_up_to_the_factor():
    program = trace_program(summed_bernoulli, {"X": (d,), "y": ()}, {"X": np.float32, "y": np.float32})
    assert program.summed == ("ll",)
    i = program.output("ll", "logp")
    assert "m" in str(program.jaxpr.out_avals[i].shape)
    w = np.array([0.3, -1.2, 0.7], dtype=np.float32)
    # the program is symbolic in the number of records: exported, then called on the 40 records
    f = jax.jit(jax.extend.core.jaxpr_as_fun(program.jaxpr))
    theta, data = program.abstract_inputs()
    exp = jax.export.export(f)(theta["w"], data["X"], data["y"])
    terms = np.asarray(exp.call(w, X.astype(np.float32), Y.astype(np.float32))[i], dtype=np.float64)
    eta = X @ w.astype(np.float64)
    exact = Y * eta - np.logaddexp(0.0, eta)                 # log Bernoulli(y | sigmoid(eta)), record by record
    np.testing.assert_allclose(terms, exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", [summed_by_hand, summed_method_negated])
def test_sums_written_by_hand_get_the_exact_logistic_constant(model):
    # per-record term y eta - log(1 + e^eta), eta = x.w: gradient (y - sigmoid(eta)) x: sup R exactly (the interval
    # rules for logaddexp's derivative, sigmoid, are exact at the ends), replace-one difference 2R
    c = _an(model).constants
    assert c.record_grad_bound == pytest.approx(R, rel=1e-12) and c.record_grad_bound >= R
    assert c.record_grad_diff == pytest.approx(2 * R, rel=1e-12)


def test_the_mean_is_a_size_dependent_sum():
    # terms l_i / m: gradient R / m at m = 40
    c = _an(summed_mean).constants
    assert R / m <= c.record_grad_bound <= 1.6 * R / m


def test_a_sum_inside_a_jit_is_split_too():
    assert _an(summed_in_jit).constants.record_grad_bound == _an(summed_bernoulli).constants.record_grad_bound


@pytest.mark.parametrize("model,words", [
    (summed_cumsum, "running sum over the records"),
    (summed_cross_products, "depends on other records"),
    (summed_centred, "depends on other records"),
    (sum_squared, "neither one term per record nor jnp.sum over the records"),
    (product_of_sums, "neither one term per record nor jnp.sum over the records"),
    (dot_over_records, "neither one term per record nor jnp.sum over the records"),
    (sum_plus_prior_term, "neither one term per record nor jnp.sum over the records"),
])
def test_sums_whose_terms_mix_records_are_refused(model, words):
    with pytest.raises(ModelError, match=words) as e:
        _an(model)
    assert "site 'll'" in str(e.value) and "\n" not in str(e.value)
