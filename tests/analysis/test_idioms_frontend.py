"""Issue 23, item 1: front-end idioms proven from the program (a vectorised likelihood without a plate, the plate's
own index, loops over parameters), each with an adversarial model that looks like the idiom but is not separable.
Expected constants are derived in the comments."""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import ModelError

RNG = np.random.default_rng(5)
m, d = 25, 3
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 2).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0,1"])
R = DOM.get("X").certified_norm


def no_plate(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Bernoulli(logits=X @ w + b), obs=y)


def no_plate_centred(X, y=None):
    # looks vectorised, but every logit reads the mean over all records: not separable
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    eta = X @ w
    numpyro.sample("obs", dist.Bernoulli(logits=eta - jnp.mean(eta)), obs=y)


def no_plate_to_event(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    numpyro.sample("obs", dist.Bernoulli(logits=X @ w).to_event(1), obs=y)


def no_plate_reversed(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    numpyro.sample("obs", dist.Bernoulli(logits=X[::-1] @ w), obs=y)


def test_vectorised_likelihood_without_plate_certifies_with_the_inferred_axis():
    # logits = x.w + b: |J| = sqrt(|x|^2 + 1) <= sqrt(R^2 + 1) (Pythagoras), Bernoulli score <= 1
    an = analyze(no_plate, {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound == pytest.approx(np.sqrt(R * R + 1), rel=1e-12)
    assert an.constants.record_grad_bound >= np.sqrt(R * R + 1)
    note = " ".join(an.notes)
    assert "site 'obs' has no plate over records" in note and "unit of privacy" in note
    assert "axis 0 of every data argument (X, y)" in note
    # the same model with a plate has the same constants
    def with_plate(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        b = numpyro.sample("b", dist.Normal(0, 1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w + b), obs=y)
    assert analyze(with_plate, {"X": X, "y": Y}, DOM).constants.record_grad_bound == an.constants.record_grad_bound


@pytest.mark.parametrize("model,words", [
    (no_plate_centred, "depends on other records"),
    (no_plate_reversed, "depends on other records"),
    (no_plate_to_event, "one multivariate term over all records"),
])
def test_vectorised_lookalikes_that_couple_records_are_refused(model, words):
    with pytest.raises(ModelError, match=words):
        analyze(model, {"X": X, "y": Y}, DOM)


def plate_index(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0], subsample_size=None) as idx:
        numpyro.sample("obs", dist.Bernoulli(logits=X[idx] @ w), obs=y[idx])


def plate_index_shifted(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]) as idx:
        numpyro.sample("obs", dist.Bernoulli(logits=X[(idx + 1) % X.shape[0]] @ w), obs=y)


def plate_index_reversed(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]) as idx:
        numpyro.sample("obs", dist.Bernoulli(logits=X[idx[::-1]] @ w), obs=y)


def plate_subsampled(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0], subsample_size=5) as idx:
        numpyro.sample("obs", dist.Bernoulli(logits=X[idx] @ w), obs=y[idx])


def test_the_plates_own_index_is_the_identity_on_records():
    # X[idx] with idx = arange(m) is X: the same constant as X @ w, |grad| <= R (the linear form is kept)
    an = analyze(plate_index, {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound == pytest.approx(R, rel=1e-12) and an.constants.record_grad_bound >= R


@pytest.mark.parametrize("model,words", [
    (plate_index_shifted, "depends on other records"),
    (plate_index_reversed, "depends on other records"),
    (plate_subsampled, "scaled"),
])
def test_index_lookalikes_are_refused(model, words):
    with pytest.raises(ModelError, match=words):
        analyze(model, {"X": X, "y": Y}, DOM)


def factor_of_log_prob(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.factor("ll", dist.Bernoulli(logits=X @ w).log_prob(y))


def factor_guarded_by_is_finite_of_a_log(X, y=None):
    # is_finite of a value that CAN be infinite (log of a non-negative number that reaches 0) is a real branch
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    z = jnp.log(jnp.abs(X @ w))
    with numpyro.plate("data", X.shape[0]):
        numpyro.factor("ll", jnp.where(jnp.isfinite(z), jnp.tanh(X @ w), jnp.sign(X @ w)))


def test_factor_of_a_known_familys_log_prob_certifies():
    # NumPyro's Bernoulli log_prob guards infinite logits with is_finite(logits); logits = X @ w is finite for
    # every theta, so the guard is constant and the generic rule applies.  True sup of |grad| = |x| sup|sigmoid - y|
    # = R; the generic rule's interval bound must be >= R (sound) and finite
    an = analyze(factor_of_log_prob, {"X": X, "y": Y}, DOM)
    g = an.constants.record_grad_bound
    assert g is not None and R <= g <= 1.6 * R


def test_is_finite_of_a_possibly_infinite_value_stays_a_branch():
    an = analyze(factor_guarded_by_is_finite_of_a_log, {"X": X, "y": Y}, DOM)
    msg = an.first_unproven("per-record gradient bound")
    assert msg is not None and "jump" in msg


def scaled_by_constant(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.handlers.scale(scale=0.5):
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def scaled_by_data(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.handlers.scale(scale=1.0 / X.shape[0]):
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def scaled_prior(X, y=None):
    with numpyro.handlers.scale(scale=0.5):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def test_scale_by_a_public_constant_scales_the_likelihood_constants():
    # the site's term is 0.5 l_i: gradient 0.5 R, smoothness 0.5 R^2/4, still convex
    an = analyze(scaled_by_constant, {"X": X, "y": Y}, DOM)
    c = an.constants
    assert c.record_grad_bound == pytest.approx(0.5 * R, rel=1e-12) and c.record_grad_bound >= 0.5 * R
    assert c.record_smoothness == pytest.approx(0.5 * R * R / 4, rel=1e-12) and c.v_convex is True


@pytest.mark.parametrize("model", [scaled_by_data, scaled_prior])
def test_scale_by_the_number_of_records_or_on_a_prior_is_refused(model):
    with pytest.raises(ModelError, match="scaled"):
        analyze(model, {"X": X, "y": Y}, DOM)


def test_scale_ten_gives_ten_times_the_unscaled_constants():
    # the review finding of test_analysis_bad_inputs.m_scaled: the sampler applies the scale, so must the constants
    import sys

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from test_analysis_bad_inputs import DOM as BAD_DOM, X as BX, Y as BY, m_scaled

    dom = Domain.parse(BAD_DOM)
    scaled = analyze(m_scaled, {"X": BX, "y": BY}, dom).constants

    def unscaled(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([2]).to_event(1))
        with numpyro.plate("d", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)
    base = analyze(unscaled, {"X": BX, "y": BY}, dom).constants
    assert scaled.record_grad_bound == pytest.approx(10 * base.record_grad_bound, rel=1e-12)
    assert scaled.record_grad_bound >= 10 * base.record_grad_bound
    assert scaled.record_smoothness == pytest.approx(10 * base.record_smoothness, rel=1e-12)
