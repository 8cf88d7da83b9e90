"""Issue 23, item 2: zero-inflated Poisson with a clipped log-rate (docs/analysis.md, "Zero-inflated Poisson").

Per-record term l = log ZIP(y | g, lambda), lambda = exp(clip(x.w, -3, 7)), y in 0..40, |x| <= R:
  y >= 1: dl/deta = y - lambda, dl/db = -g               (gate g = sigmoid(b))
  y = 0:  dl/deta = -(1-g) lambda q / D, dl/db = g (1-g) (1-q) / D,  q = e^-lambda, D = g + (1-g) q
With u = g / D (so (1-g) q / D = 1 - u): y = 0 gives dl/deta = -lambda (1 - u), |dl/db| <= (1 - q) u.  The sup of
|grad|^2 = (dl/deta)^2 R^2 + (dl/db)^2 (a latent gate logit b on its own site) is the largest of
  y >= 1: s_pos^2 R^2 + 1 with s_pos = max(y_hi - lambda_lo, lambda_hi - 1)  (g -> 1)
  y = 0:  lambda_hi^2 R^2  (g -> 0; the y = 0 expression is convex in u, so at most its endpoints)
here max((e^7 - 1)^2 R^2 + 1, e^14 R^2) = e^14 R^2 (R ~ 1): the bound is e^7 R, the exact supremum, approached at
y = 0, eta -> 7, g -> 0 (g << e^-1097); a grid cannot reach it and stops at y = 1, eta -> 7, g -> 1:
sqrt((e^7 - 1)^2 R^2 + 1), within 1.001.  For a public gate g0 the y = 0 score is at most
sup (1 - g0) lambda / (g0 e^lambda + 1 - g0) (decreasing in g), so the bound is max(s_pos, that) R.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import DomainError

RNG = np.random.default_rng(29)
m, d = 30, 2
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 7).astype(float)
DOM = Domain.parse(["X.norm=1", "y.values=0..40"])
R = DOM.get("X").certified_norm
LO, HI, YMAX = -3.0, 7.0, 40.0


def zip_latent_gate(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.ZeroInflatedPoisson(jax.nn.sigmoid(a), jnp.exp(jnp.clip(X @ w, LO, HI))), obs=y)


def zip_public_gate(X, y=None, gate=0.3):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.ZeroInflatedPoisson(gate, jnp.exp(jnp.clip(X @ w, LO, HI))), obs=y)


def zip_unclipped(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.ZeroInflatedPoisson(0.3, jnp.exp(X @ w)), obs=y)


def zip_gate_shares_w(X, y=None):
    # the gate reads the same latent site as the rate: the triangle inequality S |J_eta| + |J_b|
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.ZeroInflatedPoisson(jax.nn.sigmoid(X @ w), jnp.exp(jnp.clip(X @ w, LO, HI))),
                       obs=y)


def _grid_max():
    """max over a grid of (y, eta, b) of |grad_(w, a) l| at |x| = R, with the model's own log-density (NumPyro's
    ZeroInflatedPoisson, float64), x = R e0 and w = (eta / R) e0."""
    with jax.enable_x64(True):
        def l(w0, a, y):
            lam = jnp.exp(jnp.clip(R * w0, LO, HI))
            return dist.ZeroInflatedPoisson(jax.nn.sigmoid(a), lam).log_prob(y)
        g = jax.jit(jax.vmap(jax.grad(l, argnums=(0, 1)), in_axes=(0, 0, 0)))
        etas = np.concatenate([np.linspace(LO + 1e-9, HI - 1e-9, 41), [HI - 1e-12]])
        bs = np.linspace(-40.0, 40.0, 81)
        ys = np.arange(0.0, YMAX + 1)
        E, B, Yg = (a.ravel() for a in np.meshgrid(etas, bs, ys, indexing="ij"))
        dw, da = g(jnp.asarray(E / R), jnp.asarray(B), jnp.asarray(Yg))
        norm = np.sqrt(np.asarray(dw) ** 2 + np.asarray(da) ** 2)
    # NumPyro's log(g + (1 - g) e^-lambda) is 0/0 where both underflow (y = 0, b very negative, eta large)
    assert np.isfinite(norm).mean() > 0.9
    return float(np.nanmax(norm))


@pytest.mark.slow
def test_latent_gate_bound_is_the_derived_one_and_within_1_001_of_the_grid_maximum():
    c = analyze(zip_latent_gate, {"X": X, "y": Y}, DOM).constants
    derived = max(math.exp(HI) * R, math.sqrt(((math.exp(HI) - 1) * R) ** 2 + 1.0))     # = e^7 R
    assert c.record_grad_bound >= derived and c.record_grad_bound == pytest.approx(derived, rel=1e-9)
    top = _grid_max()
    # the grid's maximum is at y = 1, eta -> 7, g -> 1: sqrt((e^7 - 1)^2 R^2 + 1)
    assert top == pytest.approx(math.sqrt(((math.exp(HI) - 1) * R) ** 2 + 1.0), rel=1e-6)
    assert top <= c.record_grad_bound <= 1.001 * top
    assert c.record_grad_diff == pytest.approx(2 * c.record_grad_bound, rel=1e-12)


def test_public_gate_bound_is_the_exact_supremum():
    # gate 0.3: y >= 1 gives |y - lambda| <= max(40 - e^-3, e^7 - 1) = e^7 - 1 (y = 1, eta -> 7); y = 0 gives at most
    # sup 0.7 lambda / (0.3 e^lambda + 0.7) = 0.46 (lambda ~ 1): the bound is (e^7 - 1) R
    an = analyze(zip_public_gate, {"X": X, "y": Y}, DOM)
    g = an.constants.record_grad_bound
    exact = (math.exp(HI) - 1) * R
    assert g >= exact and g == pytest.approx(exact, rel=1e-9)
    assert any("ZeroInflatedPoisson" in f.rule for f in an.facts)


def test_shared_latent_site_uses_the_triangle_inequality():
    # eta = clip(x.w), b = x.w: |J_eta|, |J_b| <= R on the same coordinates: max(s_pos R + R, lambda_hi R, R)
    # = max((e^7 - 1) R + R, e^7 R) = e^7 R
    g = analyze(zip_gate_shares_w, {"X": X, "y": Y}, DOM).constants.record_grad_bound
    assert g == pytest.approx(math.exp(HI) * R, rel=1e-9) and g >= math.exp(HI) * R
    # sound: at y = 1, g -> 1 (x.w -> inf is clipped for eta only beyond 7): gradient (y - lambda) x - g x,
    # at x.w = 7 - 0: |1 - e^7 - sigmoid(7)| R
    assert g >= (math.exp(HI) - 1 + 1 / (1 + math.exp(-HI))) * R


@pytest.mark.slow
def test_random_theta_and_records_never_exceed_the_bound():
    bound = analyze(zip_latent_gate, {"X": X, "y": Y}, DOM).constants.record_grad_bound
    rs = np.random.default_rng(3)
    n = 4000
    xs = rs.standard_normal((n, d))
    xs *= (rs.uniform(0.2, 1.0, n) / np.linalg.norm(xs, axis=1))[:, None]
    ws = rs.standard_normal((n, d)) * rs.choice([0.5, 3.0, 10.0], n)[:, None]
    a = rs.standard_normal(n) * rs.choice([1.0, 10.0], n)
    ys = rs.integers(0, 41, n).astype(float)

    def l(w, a, x, y):
        return dist.ZeroInflatedPoisson(jax.nn.sigmoid(a), jnp.exp(jnp.clip(x @ w, LO, HI))).log_prob(y)
    with jax.enable_x64(True):
        dw, da = jax.jit(jax.vmap(jax.grad(l, argnums=(0, 1))))(jnp.asarray(ws), jnp.asarray(a), jnp.asarray(xs),
                                                                jnp.asarray(ys))
        norms = np.sqrt(np.sum(np.asarray(dw) ** 2, axis=1) + np.asarray(da) ** 2)
    # NumPyro's log(g + (1 - g) e^-lambda) is 0/0 where both underflow (y = 0, g tiny, lambda large): those points
    # are the limits the bound covers; every finite gradient is below it
    ok = np.isfinite(norms)
    assert ok.mean() > 0.99 and float(np.max(norms[ok])) <= bound


def test_unclipped_log_rate_is_refused_with_the_clip():
    an = analyze(zip_unclipped, {"X": X, "y": Y}, DOM)
    msg = an.first_unproven()
    assert an.constants.record_grad_bound is None
    assert msg is not None and "site 'obs'" in msg and "clip the log-rate" in msg


def test_a_gate_of_one_and_negative_counts_are_refused():
    # a gate of 1 gives every count y > 0 probability 0: not the ZIP rule (the generic rule sees the rest)
    an = analyze(zip_public_gate, {"X": X, "y": Y}, DOM, model_kwargs={"gate": 1.0})
    assert not any("ZeroInflatedPoisson" in f.rule for f in an.facts)
    assert any("ZeroInflatedPoisson" in f.rule for f in analyze(zip_public_gate, {"X": X, "y": Y}, DOM,
                                                                model_kwargs={"gate": 0.999}).facts)
    with pytest.raises(DomainError, match="obs"):
        analyze(zip_public_gate, domain=Domain.parse(["X.norm=1", "y.values=-1..40"]), data_size=m, dim=d)


def test_counts_without_a_declared_range_are_not_certified_by_the_rule():
    an = analyze(zip_public_gate, {"X": X, "y": Y}, Domain.parse(["X.norm=1"]))
    msg = an.first_unproven()
    assert an.constants.record_grad_bound is None and "y.values=0..B" in msg


# -- the same rule for a Poisson with a clipped log-rate (issue 23 item 3: clipped exp links) -------------------
def poisson_clipped(X, y=None, B=3.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.clip(X @ w, -B, B))), obs=y)


@pytest.mark.parametrize("ys,exact", [
    # dl/deta = y - e^eta on the clip's open interval (0 outside): sup |.| = max(e^B - y_lo, y_hi - e^-B)
    ("y.values=0..10", math.exp(3.0)),                     # y = 0, eta -> 3
    ("y.values=5..10", math.exp(3.0) - 5.0),               # y = 5, eta -> 3
    ("y.values=0..40", 40.0 - math.exp(-3.0)),             # y = 40, eta -> -3
])
def test_clipped_poisson_bound_is_the_exact_supremum(ys, exact):
    yv = np.clip(Y, *[float(v) for v in ys.split("=")[1].split("..")])
    an = analyze(poisson_clipped, {"X": X, "y": yv}, Domain.parse(["X.norm=1", ys]))
    g = an.constants.record_grad_bound
    assert g >= exact * R and g == pytest.approx(exact * R, rel=1e-9)
    assert any(f.rule.startswith("Poisson(rate = exp(eta))") for f in an.facts)
    # a grid of (eta, y) at |x| = R with JAX's derivative of NumPyro's Poisson log-density reaches it
    lo, hi = (float(v) for v in ys.split("=")[1].split(".."))
    etas = np.linspace(-3.0 + 1e-5, 3.0 - 1e-5, 301)     # inside the clip in float32 too
    E, Yg = (a.ravel() for a in np.meshgrid(etas, np.arange(lo, hi + 1), indexing="ij"))
    d = jax.jit(jax.vmap(jax.grad(lambda w0, y: dist.Poisson(jnp.exp(jnp.clip(R * w0, -3.0, 3.0))).log_prob(y))))(
        jnp.asarray(E / R, dtype=jnp.float32), jnp.asarray(Yg, dtype=jnp.float32))
    top = float(np.max(np.abs(np.asarray(d, dtype=np.float64))))
    assert top <= g * (1 + 1e-6) and g <= 1.0001 * top


def test_unclipped_poisson_stays_refused_with_the_growth():
    def poisson_glm(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Poisson(jnp.exp(X @ w)), obs=y)
    an = analyze(poisson_glm, {"X": X, "y": Y}, DOM)
    assert an.constants.record_grad_bound is None and "exp(eta)" in an.first_unproven()
