"""The replace-one difference sup |grad l(r) - grad l(r')| over two records r, r' (issue 23): below 2 G where the
predictor reads no data, so both records see the same eta and the same Jacobian J and the difference is
J^T (psi(y, eta) - psi(y', eta)).  Each family's sup of |psi(y, eta) - psi(y', eta)| is derived in its comment and
compared with JAX's derivative of NumPyro's own log-density over a grid of eta and of pairs of responses; where the
predictor reads the data (two records see different J) the difference stays 2 G, and a model whose predictor reads
the data is checked to get it.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from _adversarial_models import enable_x64
from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(7)
m = 30
CUTS = np.array([-1.0, 0.5, 2.0])


def ordered(y=None, cuts=CUTS):
    a = numpyro.sample("a", dist.Normal(0.0, 1.5))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.OrderedLogistic(a, jnp.asarray(cuts)), obs=y)


def ordered_x(X, y=None, cuts=CUTS):
    w = numpyro.sample("w", dist.Normal(0.0, 1.5).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.OrderedLogistic(X @ w, jnp.asarray(cuts)), obs=y)


def negbin(y=None, k=2.0):
    a = numpyro.sample("a", dist.Normal(0.0, 1.5))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(a), k), obs=y)


def poisson_clipped(y=None, B=2.0):
    a = numpyro.sample("a", dist.Normal(0.0, 1.5))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.clip(a, -B, B))), obs=y)


def poisson_exposure(t, y=None, B=2.0):
    a = numpyro.sample("a", dist.Normal(0.0, 1.5))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.Poisson(t * jnp.exp(jnp.clip(a, -B, B))), obs=y)


def _psi_spread(logp, ys, etas):
    """max over eta of max_y psi - min_y psi, psi = d(-log p(y | eta))/d eta (float64, JAX's derivative)."""
    with enable_x64(True):
        g = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda e, y: -logp(e, y)), in_axes=(None, 0)), in_axes=(0, None)))
        psi = np.asarray(g(jnp.asarray(etas), jnp.asarray(ys, dtype=jnp.float64)))
    return float(np.max(psi.max(axis=1) - psi.min(axis=1)))


@pytest.mark.parametrize("cuts", [CUTS, np.array([0.3]), np.array([-4.0, -3.0, 0.0, 5.0])],
                         ids=["K=4", "K=2", "K=5"])
def test_ordered_logistic_shared_predictor_difference_is_one_plus_tanh(cuts):
    # psi(y) - psi(y') <= 1 + tanh((c_{K-1} - c_1)/4), attained at y = 0, y' = K - 1, eta = (c_1 + c_{K-1})/2
    K = len(cuts) + 1
    y = (np.arange(m) % K).astype(float)
    c = analyze(ordered, {"y": y}, Domain.parse([f"y.values=0..{K - 1}"]), model_kwargs={"cuts": cuts}).constants
    exact = 1 + math.tanh((cuts[-1] - cuts[0]) / 4)
    assert c.record_grad_bound == 1.0
    assert c.record_grad_diff >= exact and c.record_grad_diff == pytest.approx(exact, rel=1e-12)
    etas = np.concatenate([np.linspace(-30, 30, 6001), [(cuts[0] + cuts[-1]) / 2]])
    spread = _psi_spread(lambda e, yy: dist.OrderedLogistic(e, jnp.asarray(cuts)).log_prob(yy.astype(jnp.int32)),
                         np.arange(K), etas)
    assert spread <= c.record_grad_diff and spread == pytest.approx(exact, rel=1e-9)


def test_ordered_logistic_with_covariates_keeps_twice_the_bound():
    # x.w differs between the records: psi J - psi' J' reaches 2 sup|psi| |J| (J' -> J with psi -> 1, psi' -> -1)
    X = RNG.uniform(-1, 1, (m, 2))
    y = (np.arange(m) % 4).astype(float)
    c = analyze(ordered_x, {"X": X, "y": y}, Domain.parse(["X.min=-1", "X.max=1", "y.values=0..3"])).constants
    assert c.record_grad_diff == pytest.approx(2 * c.record_grad_bound, rel=1e-12)


def test_negative_binomial_intercept_difference_is_the_response_range():
    # shared mu = e^a: psi(y) - psi(y') = k (y' - y)/(k + mu) -> y_hi - y_lo as mu -> 0; |psi| <= max(k, y_hi)
    y = (np.arange(m) % 21).astype(float)
    an = analyze(negbin, {"y": y}, Domain.parse(["y.values=0..20"]))
    c = an.constants
    assert c.record_grad_bound == pytest.approx(20.0, rel=1e-12)
    assert c.record_grad_diff == pytest.approx(20.0, rel=1e-12) and c.record_grad_diff >= 20.0
    spread = _psi_spread(lambda e, yy: dist.NegativeBinomial2(jnp.exp(e), 2.0).log_prob(yy),
                         np.array([0.0, 20.0]), np.linspace(-40, 10, 501))
    assert spread <= c.record_grad_diff * (1 + 1e-12) and spread == pytest.approx(20.0, rel=1e-9)   # float64 eval


@pytest.mark.slow
def test_negative_binomial_with_a_per_record_concentration_is_bounded_by_its_range():
    def nb_k(k, y=None):
        a = numpyro.sample("a", dist.Normal(0.0, 1.5))
        with numpyro.plate("data", y.shape[0]):
            numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(a), k), obs=y)
    y = (np.arange(m) % 11).astype(float)
    k = 1.0 + (np.arange(m) % 3)
    c = analyze(nb_k, {"k": k, "y": y}, Domain.parse(["k.min=1", "k.max=3", "y.values=0..10"])).constants
    # psi in (-y_hi, k_hi): difference < k_hi + y_hi = 13 (below 2 max(k_hi, y_hi) = 20); reached as the two
    # records' psi approach k_hi (y = 0, k = 3, mu -> inf) and -y_hi (y = 10, mu -> 0): not at one mu, so 13 is
    # an upper bound, and 2 max(3, 10) = 20 would be the previous one
    assert c.record_grad_diff == pytest.approx(13.0, rel=1e-12)
    with enable_x64(True):
        psi = jax.jit(jax.vmap(jax.grad(lambda e, kk, yy: -dist.NegativeBinomial2(jnp.exp(e), kk).log_prob(yy))))
        E, K, Yg = (v.ravel() for v in np.meshgrid(np.linspace(-40.0, 40.0, 801), np.linspace(1, 3, 5),
                                                   np.arange(0.0, 11.0), indexing="ij"))
        vals = np.asarray(psi(jnp.asarray(E), jnp.asarray(K), jnp.asarray(Yg))).reshape(801, -1)   # (eta, pairs)
    assert float(np.max(vals.max(axis=1) - vals.min(axis=1))) <= c.record_grad_diff


def test_bounded_poisson_intercept_difference_is_the_response_range():
    # shared lambda: psi(y) - psi(y') = y - y', so the difference is (y_hi - y_lo) |J| with |J| = 1 (clip' <= 1)
    y = (np.arange(m) % 9).astype(float)
    c = analyze(poisson_clipped, {"y": y}, Domain.parse(["y.values=0..8"])).constants
    assert c.record_grad_bound == pytest.approx(8.0 - math.exp(-2.0), rel=1e-12)     # max(e^2, 8 - e^-2)
    assert c.record_grad_diff >= 8.0 and c.record_grad_diff == pytest.approx(8.0, rel=1e-12)
    spread = _psi_spread(lambda e, yy: dist.Poisson(jnp.exp(jnp.clip(e, -2.0, 2.0))).log_prob(yy),
                         np.array([0.0, 8.0]), np.linspace(-1.99, 1.99, 101))
    assert spread == pytest.approx(8.0, rel=1e-9)


def test_a_per_record_exposure_makes_the_rates_differ_and_keeps_twice_the_bound():
    # rate = t_i e^a: two records see different lambdas, so the shared-predictor argument does not apply
    y = (np.arange(m) % 9).astype(float)
    t = 0.5 + (np.arange(m) % 3) / 2.0
    c = analyze(poisson_exposure, {"t": t, "y": y}, Domain.parse(["t.min=0.5", "t.max=1.5", "y.values=0..8"])).constants
    assert c.record_grad_diff == pytest.approx(2 * c.record_grad_bound, rel=1e-12)


def test_device_put_of_public_cutpoints_is_the_identity():
    """``jax.device_put`` (what ``jnp.asarray`` of a constant traces to before JAX 0.8) copies its operand: the
    cutpoints stay bounded and the constants are those of the plain model (they were refused on JAX 0.7)."""
    def ordered_put(y=None, cuts=CUTS):
        a = numpyro.sample("a", dist.Normal(0.0, 1.5))
        with numpyro.plate("data", y.shape[0]):
            numpyro.sample("obs", dist.OrderedLogistic(a, jax.device_put(jnp.asarray(cuts))), obs=y)

    y = (np.arange(m) % 4).astype(float)
    dom = Domain.parse(["y.values=0..3"])
    c = analyze(ordered_put, {"y": y}, dom).constants
    assert c.record_grad_bound == 1.0
    assert c.record_grad_diff == pytest.approx(1 + math.tanh((CUTS[-1] - CUTS[0]) / 4), rel=1e-12)
