"""Beta priors on a unit-interval parameter (a zero-inflation gate, a proportion) sampled as a latent site (issue 23,
docs/analysis.md "Beta priors on a gate or a proportion").

The samplers move u = logit g; NumPyro's value is g = clip(sigmoid(u), tiny, 1 - eps), with its Jacobian term
-softplus(u) - softplus(-u) unclipped.

* Prior: inside the clip V(u) = a softplus(-u) + b softplus(u) + c, V' = b g - a (1 - g) in (-a, b); inside the
  clipped tails V' = 2 sigmoid(u) - 1 in (-1, 1): |V'| <= max(a, b, 1), approached as u -> +-inf inside the clip
  (g -> 1: V' -> b, g -> 0: V' -> -a).  V' jumps from ~b to ~1 where the clip starts: smooth (L = 1/2) only for
  a = b = 1; convex iff a <= 1 and b <= 1.
* Likelihood: the score in u of any likelihood of g is dl/dg g (1 - g) times the clip's derivative (0, 1/2, 1): the
  zero-inflated Poisson rule's |dl/db| <= 1 (gate = sigmoid(b)) holds, so the gate's score is bounded near g -> 0 and
  g -> 1 (in u; dl/dg itself is unbounded: -1/(1 - g) at y >= 1); a Bernoulli(probs=p) has |dl/du| = |p - y| <= 1.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.distributions.transforms import biject_to

from _adversarial_models import enable_x64
from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.families import PRIOR_RULES

RNG = np.random.default_rng(41)
m, d = 24, 2
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
LO, HI, YMAX = -1.0, 2.5, 3
Y = (np.arange(m) % (YMAX + 1)).astype(float)
DOM = Domain.parse(["X.norm=1", f"y.values=0..{YMAX}"])
R = DOM.get("X").certified_norm


_T = biject_to(dist.Beta(2.0, 3.0).support)         # the unit interval's transform (the same for every a, b)


def _potential(u, a, b):
    g = _T(u)
    return -(dist.Beta(a, b).log_prob(g) + _T.log_abs_det_jacobian(u, g))


_V_PRIME = jax.jit(jax.vmap(jax.grad(_potential), in_axes=(0, None, None)))


def _v_prime(a, b, us, dtype):
    """dV/du of NumPyro's unconstrained Beta potential -log p(g(u)) - log|dg/du| (JAX's derivative)."""
    return np.asarray(_V_PRIME(jnp.asarray(us, dtype=dtype), jnp.asarray(a, dtype), jnp.asarray(b, dtype)),
                      dtype=np.float64)


@pytest.mark.parametrize("a,b", [(2.0, 3.0), (1.0, 1.0), (0.5, 0.5), (5.0, 0.7), (1.0, 4.0)])
def test_beta_prior_gradient_bound_is_the_supremum(a, b):
    facts = PRIOR_RULES[(dist.Beta, "SigmoidTransform")]({"concentration1": np.array(a),
                                                            "concentration0": np.array(b)})
    bound = max(a, b, 1.0)
    assert facts.v_grad_bound == pytest.approx(bound, rel=1e-12) and facts.v_grad_bound >= bound
    for dtype, ctx in ((jnp.float32, None), (jnp.float64, enable_x64)):
        # float32: the clip starts at u ~ 15.9 (1 - 2^-23) and u ~ -87.3 (the smallest normal); beyond -87 NumPyro's
        # float32 gradient is nan (sigmoid underflows to 0: not a value the bound is about)
        us = np.linspace(-80.0, 80.0, 16001)
        if ctx is None:
            vp = _v_prime(a, b, us, dtype)
        else:
            with ctx(True):
                vp = _v_prime(a, b, us, dtype)
        assert np.all(np.isfinite(vp)) and np.all(np.abs(vp) <= bound * (1 + 1e-6))
        assert np.max(np.abs(vp)) >= bound * 0.999          # approached inside the clip (or in its tails, for 1)
    assert facts.v_convex == (a <= 1 and b <= 1)
    assert (facts.v_smoothness is not None) == (a == 1 and b == 1)


def test_beta_prior_is_not_smooth_where_the_clip_starts():
    # the reason no smoothness is claimed for a != 1 or b != 1: V' jumps from ~b to ~1 (float32: clip at 1 - 2^-23)
    us = np.linspace(15.0, 17.5, 2001)
    vp = _v_prime(2.0, 3.0, us, jnp.float32)
    # V' falls from ~3 to ~1 (in float32 through 2 on the stretch where sigmoid rounds to exactly 1 - eps and
    # JAX's derivative of the clip's tie is 1/2), each step of ~1 between neighbours 1.25e-3 apart: a Lipschitz
    # constant of V' above 700, not (a + b)/4
    assert vp.max() - vp.min() > 1.9 and np.max(np.abs(np.diff(vp))) > 0.9
    vp1 = _v_prime(1.0, 1.0, us, jnp.float32)
    assert np.max(np.abs(np.diff(vp1))) < 1e-3                # Beta(1, 1): V' = 2 sigmoid(u) - 1 is continuous


def zip_beta_gate(X, y=None, a=2.0, b=5.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    gate = numpyro.sample("gate", dist.Beta(a, b))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.ZeroInflatedPoisson(gate, jnp.exp(jnp.clip(X @ w, LO, HI))), obs=y)


def proportion(y=None, a=2.0, b=3.0):
    p = numpyro.sample("p", dist.Beta(a, b))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(probs=p), obs=y)


def test_zip_with_a_beta_gate_is_certified_with_the_exact_supremum():
    # gate logit u on its own site (|J_u| = 1), log-rate clip(x.w): G = sqrt(max(s_pos^2 R^2 + 1, e^5 R^2)) with
    # s_pos = max(3 - e^-1, e^2.5 - 1) (docs/analysis.md, "Zero-inflated Poisson"); prior |V'| <= max(2, 5, 1) = 5
    an = analyze(zip_beta_gate, {"X": X, "y": Y}, DOM)
    c = an.constants
    s_pos = max(YMAX - math.exp(LO), math.exp(HI) - 1)
    exact = math.sqrt(max((s_pos * R) ** 2 + 1.0, (math.exp(HI) * R) ** 2))
    assert c.record_grad_bound >= exact and c.record_grad_bound == pytest.approx(exact, rel=1e-9)
    assert any(f.rule.startswith("ZeroInflatedPoisson") for f in an.facts)
    assert c.prior_v_grad_bound == pytest.approx(5.0, rel=1e-12) and c.prior_v_grad_bound >= 5.0


@pytest.mark.slow
def test_zip_beta_gate_bound_is_reached_by_a_grid_of_the_models_gradient():
    # the per-record gradient in (w, u) at x = R e0, w = (eta / R) e0, u = logit g, NumPyro's own transform and
    # log-density: the grid's maximum (y = 0, eta -> 2.5, u -> -inf) is within 1.001 of the bound
    G = analyze(zip_beta_gate, {"X": X, "y": Y}, DOM).constants.record_grad_bound
    t = biject_to(dist.Beta(2.0, 5.0).support)
    with enable_x64(True):
        def l(w0, u, y):
            return dist.ZeroInflatedPoisson(t(u), jnp.exp(jnp.clip(R * w0, LO, HI))).log_prob(y)
        g = jax.jit(jax.vmap(jax.grad(l, argnums=(0, 1))))
        etas = np.concatenate([np.linspace(LO + 1e-9, HI - 1e-9, 301), [HI - 1e-12]])
        us = np.concatenate([np.linspace(-60.0, 60.0, 241), [-700.0, 36.0, 37.0]])
        E, U, Yg = (v.ravel() for v in np.meshgrid(etas, us, np.arange(0.0, YMAX + 1), indexing="ij"))
        dw, du = g(jnp.asarray(E / R), jnp.asarray(U), jnp.asarray(Yg))
        norm = np.sqrt(np.asarray(dw) ** 2 + np.asarray(du) ** 2)
    ok = np.isfinite(norm)
    assert ok.mean() > 0.95
    top = float(np.max(norm[ok]))
    assert top <= G <= 1.001 * top


def test_bernoulli_with_a_beta_probability_has_the_logits_bound_without_smoothness():
    # |dl/du| = |p - y| (times the clip's derivative) <= 1; shared p: replace-one difference |y' - y| <= 1;
    # the clip is a kink: no smoothness, not convex
    y = (np.arange(m) % 3 == 0).astype(float)
    an = analyze(proportion, {"y": y}, Domain.parse(["y.values=0,1"]))
    c = an.constants
    assert c.record_grad_bound == 1.0 and c.record_grad_diff == 1.0
    assert c.record_smoothness is None and c.v_convex is False
    assert "clip(sigmoid" in c.provenance["record_grad_bound"]
    # and the bound is reached: u -> -inf with y = 1 (score p - 1 -> -1)
    t = biject_to(dist.Beta(2.0, 3.0).support)
    s = jax.grad(lambda u: -dist.Bernoulli(probs=t(u)).log_prob(1.0))(-15.0)
    assert abs(float(s)) == pytest.approx(1.0, abs=1e-6)


def test_a_hand_written_clip_of_a_sigmoid_is_recognised_only_inside_the_unit_interval():
    def gate_clip(X, y=None, lo=0.2, hi=0.9):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        u = numpyro.sample("u", dist.Normal(0.0, 2.0))
        with numpyro.plate("data", X.shape[0]):
            gate = jnp.clip(jax.nn.sigmoid(u), lo, hi)
            numpyro.sample("obs", dist.ZeroInflatedPoisson(gate, jnp.exp(jnp.clip(X @ w, LO, HI))), obs=y)
    an = analyze(gate_clip, {"X": X, "y": Y}, DOM)
    assert any(f.rule.startswith("ZeroInflatedPoisson") for f in an.facts)
    # a "clip" to [-0.5, 1.5] is no clip of a probability: not this rule (NumPyro's gate must lie in [0, 1] anyway)
    an = analyze(gate_clip, {"X": X, "y": Y}, DOM, model_kwargs={"lo": -0.5, "hi": 1.5})
    assert not any(f.rule.startswith("ZeroInflatedPoisson") for f in an.facts)
