"""Zero-inflated Poisson with the gate given by its logits, ``ZeroInflatedDistribution(Poisson(rate),
gate_logits=b)`` (NumPyro's ``ZeroInflatedLogits``), and by ``gate=`` (``ZeroInflatedProbs``) (issue 23): the same
rule as ``ZeroInflatedPoisson(sigmoid(b), rate)`` (docs/analysis.md, "Zero-inflated Poisson"), whose bound is the
exact supremum of the score over counts, rates and gates:

  y >= 1: |dl/deta| = |y - lambda| <= s_pos = max(y_hi - lambda_lo, lambda_hi - 1), |dl/db| = g < 1;
  y = 0:  dl/deta = -lambda (1 - u), |dl/db| <= (1 - e^-lambda) u with u = g / (g + (1 - g) e^-lambda) in [0, 1];
  latent b on its own site: G = sqrt(max(s_pos^2 R^2 + 1, lambda_hi^2 R^2));
  theta-free gate g0: G = max(s_pos, sup_lambda (1 - g0) lambda / (g0 e^lambda + 1 - g0)) R.

Each bound is compared with a brute-force maximum of JAX's own gradient of NumPyro's log-density (float64) over a
grid of (y, eta, b) that reaches the supremum (small rates: the gate can go below e^-lambda_hi in float64).
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
from bayesdp.analysis.constants import zip_zero_score_sup

RNG = np.random.default_rng(31)
m, d = 24, 2
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
LO, HI, YMAX = -1.0, 2.5, 3
Y = (np.arange(m) % (YMAX + 1)).astype(float)
DOM = Domain.parse(["X.norm=1", f"y.values=0..{YMAX}"])
R = DOM.get("X").certified_norm


def zip_logits(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    with numpyro.plate("data", X.shape[0]):
        rate = jnp.exp(jnp.clip(X @ w, LO, HI))
        numpyro.sample("obs", dist.ZeroInflatedDistribution(dist.Poisson(rate), gate_logits=a), obs=y)


def zip_probs(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    with numpyro.plate("data", X.shape[0]):
        rate = jnp.exp(jnp.clip(X @ w, LO, HI))
        numpyro.sample("obs", dist.ZeroInflatedDistribution(dist.Poisson(rate), gate=jax.nn.sigmoid(a)), obs=y)


def zip_public_logits(X, y=None, b0=-0.85, lo=-1.0, hi=1.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        rate = jnp.exp(jnp.clip(X @ w, lo, hi))
        numpyro.sample("obs", dist.ZeroInflatedDistribution(dist.Poisson(rate), gate_logits=b0), obs=y)


def _grid_max(logits: bool, lo=LO, hi=HI, ymax=YMAX, b0=None):
    """max over a grid of (y, eta, b) of |grad_(w, a) l| at x = R e0, w = (eta / R) e0 (float64)."""
    with enable_x64(True):
        def l(w0, a, y):
            rate = jnp.exp(jnp.clip(R * w0, lo, hi))
            gl = a if b0 is None else b0 + 0.0 * a
            if logits:
                return dist.ZeroInflatedDistribution(dist.Poisson(rate), gate_logits=gl).log_prob(y)
            return dist.ZeroInflatedDistribution(dist.Poisson(rate), gate=jax.nn.sigmoid(gl)).log_prob(y)
        g = jax.jit(jax.vmap(jax.grad(l, argnums=(0, 1))))
        etas = np.concatenate([np.linspace(lo + 1e-9, hi - 1e-9, 351), [hi - 1e-12, lo + 1e-12]])
        bs = np.concatenate([np.linspace(-60.0, 40.0, 201), [-700.0]])
        E, B, Yg = (a.ravel() for a in np.meshgrid(etas, bs, np.arange(0.0, ymax + 1), indexing="ij"))
        dw, da = g(jnp.asarray(E / R), jnp.asarray(B), jnp.asarray(Yg))
        norm = np.sqrt(np.asarray(dw) ** 2 + np.asarray(da) ** 2)
    assert np.isfinite(norm).mean() > 0.95
    return float(np.nanmax(norm))


@pytest.mark.slow
@pytest.mark.parametrize("model,logits", [(zip_logits, True), (zip_probs, False)], ids=["gate_logits", "gate"])
def test_latent_gate_logits_get_the_exact_supremum(model, logits):
    an = analyze(model, {"X": X, "y": Y}, DOM)
    assert any(f.rule.startswith("ZeroInflatedPoisson(gate or gate_logits") for f in an.facts)
    lam_hi, lam_lo = math.exp(HI), math.exp(LO)
    s_pos = max(YMAX - lam_lo, lam_hi - 1)
    exact = math.sqrt(max((s_pos * R) ** 2 + 1.0, (lam_hi * R) ** 2))       # = e^2.5 R (y = 0, g -> 0)
    G = an.constants.record_grad_bound
    assert G >= exact and G == pytest.approx(exact, rel=1e-9)
    top = _grid_max(logits)
    assert top <= G <= 1.001 * top


@pytest.mark.slow
def test_public_gate_logits_get_the_exact_supremum_far_below_lambda_hi():
    # g0 = sigmoid(-0.85) ~ 0.2994, lambda in [e^-1, e], y in 0..3: s_pos = max(3 - e^-1, e - 1) = 3 - e^-1;
    # the y = 0 score is at most sup 0.7 lambda / (0.3 e^lambda + 0.7) ~ 0.46: G = (3 - e^-1) R, where the former
    # bound max(lambda_hi, y_hi - lambda_lo) R was the same; with y in 0..1 it is (e - 1) R against e R (1.58x)
    an = analyze(zip_public_logits, {"X": X, "y": Y}, DOM)
    G = an.constants.record_grad_bound
    exact = (3 - math.exp(-1.0)) * R
    assert G >= exact and G == pytest.approx(exact, rel=1e-9)
    assert G <= 1.001 * _grid_max(True, -1.0, 1.0, 3, b0=-0.85)
    y01 = np.clip(Y, 0, 1)
    an = analyze(zip_public_logits, {"X": X, "y": y01}, Domain.parse(["X.norm=1", "y.values=0..1"]))
    G = an.constants.record_grad_bound
    exact = (math.e - 1) * R
    assert G >= exact and G == pytest.approx(exact, rel=1e-9)
    top = _grid_max(True, -1.0, 1.0, 1, b0=-0.85)
    assert top <= G <= 1.001 * top


@pytest.mark.parametrize("g_lo,lam_lo,lam_hi", [
    (0.3, math.exp(-1.0), math.e), (0.3, 0.0, 20.0), (1e-4, 0.5, 12.0), (0.9, 1.0, 3.0), (0.05, 0.0, 60.0),
])
def test_zero_count_score_bound_is_above_and_close_to_a_dense_maximum(g_lo, lam_lo, lam_hi):
    # the bound is a proof (interval pieces); a dense evaluation of the same function stays below it and within 1e-3
    lam = np.linspace(lam_lo, lam_hi, 400001)
    f = (1 - g_lo) * lam / (g_lo * np.exp(lam) + 1 - g_lo)
    ub = zip_zero_score_sup(g_lo, lam_lo, lam_hi)
    assert float(f.max()) <= ub <= float(f.max()) * 1.001
    # and the function is the zero count's score at gate g_lo: JAX's derivative of log(g + (1 - g) e^-lambda)
    with enable_x64(True):
        t = jax.grad(lambda ll: jnp.log(g_lo + (1 - g_lo) * jnp.exp(-jnp.exp(ll))))(jnp.log(lam_hi))
    assert abs(float(t)) == pytest.approx(float(f[-1]), rel=1e-9)
    assert zip_zero_score_sup(0.0, lam_lo, lam_hi) == lam_hi


def test_gate_logits_bound_without_the_grid():
    # the fast tier's check of the same constant as the slow grid test: sqrt(max(s_pos^2 R^2 + 1, e^5 R^2))
    G = analyze(zip_logits, {"X": X, "y": Y}, DOM).constants.record_grad_bound
    exact = math.sqrt(max(((math.exp(HI) - 1) * R) ** 2 + 1.0, (math.exp(HI) * R) ** 2))
    assert G >= exact and G == pytest.approx(exact, rel=1e-9)


def test_a_zero_inflated_negative_binomial_is_not_taken_for_a_poisson():
    def zinb(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        a = numpyro.sample("a", dist.Normal(0.0, 2.0))
        with numpyro.plate("data", X.shape[0]):
            base = dist.NegativeBinomial2(jnp.exp(jnp.clip(X @ w, LO, HI)), 2.0)
            numpyro.sample("obs", dist.ZeroInflatedDistribution(base, gate_logits=a), obs=y)
    an = analyze(zinb, {"X": X, "y": Y}, DOM)
    assert not any(f.rule.startswith("ZeroInflatedPoisson") for f in an.facts)


def test_a_gate_logit_with_an_unbounded_jacobian_is_not_certified_by_the_rule():
    def zip_sq(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        a = numpyro.sample("a", dist.Normal(0.0, 2.0))
        with numpyro.plate("data", X.shape[0]):
            rate = jnp.exp(jnp.clip(X @ w, LO, HI))
            numpyro.sample("obs", dist.ZeroInflatedDistribution(dist.Poisson(rate), gate_logits=a * a), obs=y)
    an = analyze(zip_sq, {"X": X, "y": Y}, DOM)
    assert not any(f.rule.startswith("ZeroInflatedPoisson") for f in an.facts)
