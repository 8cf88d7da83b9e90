"""The models people write (issue #14): group intercepts, hierarchical Gaussian priors, scale parameters, masks,
probs=sigmoid(...), and refusals that name every blocking site with a fix the command accepts.  Every expected
constant is derived by hand in the comment next to it."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

from bayesdp.analysis import Domain, analyze, certify
from bayesdp.analysis.loading import builtin_models
from bayesdp.cli import main
from bayesdp.errors import BayesDPError, ModelError

M = builtin_models()
RNG = np.random.default_rng(3)
m, d, G = 40, 3, 4
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y = (np.arange(m) % 2).astype(float)
GRP = np.arange(m) % G
RUN = dict(step_size=1e-3, num_steps=50, batch_size=5)
# a declared norm R is used as R (1 + NORM_RTOL), rounded up (float data at the bound: bayesdp/analysis/domain.py)
R1 = Domain.parse(["X.norm=1"]).get("X").certified_norm


def _two_by_two(a, b, dd):
    """Eigenvalues of [[a, -b], [-b, dd]]."""
    root = math.sqrt((a - dd) ** 2 + 4 * b * b)
    return (a + dd - root) / 2, (a + dd + root) / 2


def test_hierarchical_logistic_constants():
    # logits = x.w + alpha[g]: J = [x, e_g] on disjoint coordinates -> |J| = sqrt(|x|^2 + 1) <= sqrt(R^2 + 1)
    # (Pythagoras, not sqrt(R^2 + G) from a box over the G intercepts).  Prior: mu ~ N(0, s_mu^2),
    # alpha_k ~ N(mu, tau^2): precision over (alpha, mu): alpha block I/tau^2, cross -1/tau^2, mu: 1/s_mu^2 + G/tau^2.
    # Vectors of alpha orthogonal to 1 (mu = 0): eigenvalue 1/tau^2; on span(1/sqrt(G) 1, e_mu) the 2x2 matrix
    # [[1/tau^2, -sqrt(G)/tau^2], [-sqrt(G)/tau^2, 1/s_mu^2 + G/tau^2]]; w: 1/s_w^2.
    tau, s_mu, s_w = 0.5, 2.0, 1.5
    R = R1
    an = analyze(M["hierarchical_logistic"], {"X": X, "g": GRP, "y": Y},
                 Domain.parse(["X.norm=1", "g.values=0,1,2,3", "y.values=0,1"]),
                 model_kwargs={"num_groups": G, "group_scale": tau, "mean_scale": s_mu, "prior_scale": s_w})
    c = an.constants
    lo2, hi2 = _two_by_two(1 / tau ** 2, math.sqrt(G) / tau ** 2, 1 / s_mu ** 2 + G / tau ** 2)
    eig = [lo2, hi2, 1 / tau ** 2, 1 / s_w ** 2]
    assert c.strong_convexity == pytest.approx(min(eig), rel=1e-9) and c.strong_convexity <= min(eig)
    assert c.smoothness == pytest.approx(max(eig), rel=1e-9) and c.smoothness >= max(eig)
    assert c.record_grad_bound == pytest.approx(math.sqrt(R * R + 1), rel=1e-12)
    assert c.record_grad_bound >= math.sqrt(R * R + 1)
    assert c.record_smoothness == pytest.approx((R * R + 1) / 4, rel=1e-12) and c.v_convex is True
    assert "joint Gaussian prior of mu, alpha, w" in c.provenance["strong_convexity"]


def test_group_intercept_bound_is_attained():
    # sup over theta of |grad l| = |sigmoid - y| |J| -> |J| = sqrt(|x|^2 + 1) at |x| = R (independent check)
    x = jnp.array([1.0, 0.0, 0.0])
    def loss(theta):
        w, alpha = theta[:3], theta[3:]
        return -dist.Bernoulli(logits=x @ w + alpha[2]).log_prob(1.0)
    g = jax.grad(loss)(jnp.concatenate([jnp.array([-30.0, 0, 0]), jnp.full(4, -30.0)]))
    assert float(jnp.linalg.norm(g)) == pytest.approx(math.sqrt(2), rel=1e-6)


def test_cli_reads_the_number_of_groups_from_the_public_domain(capsys):
    rc = main(["certify", "hierarchical_logistic", "--no-data", "--data-size", "100", "--dim", "3", "--domain",
               "X.norm=1", "--domain", "g.values=0,1,2,3,4", "--domain", "y.values=0,1", "--step-size", "1e-3",
               "--num-steps", "10", "--json"])
    assert rc == 0
    import json
    out = json.loads(capsys.readouterr().out)
    sites = {s["name"]: s["shape"] for s in out["model"]["latent_sites"]}
    assert sites["alpha"] == [5]


def test_linear_regression_with_clipping_and_lognormal_scale():
    # sigma ~ LogNormal(0, 0.5): in u = log sigma the potential is (u - 0)^2/(2 * 0.25) exactly (the Jacobian
    # cancels the 1/sigma of the density): precision 4.  w ~ N(0, 1): precision 1.  K = diag(1, 1, 1, 4).
    # The Normal likelihood is refused without clipping; with clip_norm G: record bound G, diff 2G.
    with pytest.raises(BayesDPError, match=r"'obs'.*Normal.*--clip-norm"):
        certify(M["linear"], {"X": X, "y": RNG.standard_normal(m)}, ["X.norm=1"], model_kwargs={"noise_scale": 0.5},
                **RUN)
    an = analyze(M["linear"], {"X": X, "y": RNG.standard_normal(m)}, Domain.parse(["X.norm=1"]),
                 model_kwargs={"noise_scale": 0.5}, clip_norm=2.0)
    c = an.constants
    assert (c.strong_convexity, c.smoothness) == (1.0, 4.0)
    assert (c.record_grad_bound, c.record_grad_diff) == (2.0, 4.0)


def test_lognormal_potential_in_log_space_is_the_quadratic():
    # independent check of the rule: -log p(sigma = e^u) - u for LogNormal(0.3, 0.5) equals (u - 0.3)^2/(2*0.25)
    # up to a constant, for every u
    d_ = dist.LogNormal(0.3, 0.5)
    us = np.linspace(-4, 4, 9)
    pot = np.array([-float(d_.log_prob(jnp.exp(u))) - u for u in us])
    quad = (us - 0.3) ** 2 / (2 * 0.25)
    np.testing.assert_allclose(pot - pot[0], quad - quad[0], atol=2e-5)


def test_halfcauchy_prior_is_a_bounded_convex_v():
    # V(u) = log(1 + e^{2u}/s^2) - u: |V'| < 1 and 0 < V'' <= 1 (max at e^{2u} = s^2), for every scale
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        tau = numpyro.sample("tau", dist.HalfCauchy(3.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.StudentT(4.0, X @ w, 1.0), obs=y)
        return tau
    an = analyze(model, {"X": X, "y": RNG.standard_normal(m)}, Domain.parse(["X.norm=1"]))
    c = an.constants
    assert c.prior_v_grad_bound == 1.0 and c.strong_convexity is None      # no K part on log tau
    # numerical cross-check of the closed forms at a grid (not used by the analyzer)
    s = 3.0
    u = np.linspace(-10, 10, 2001)
    v1 = 2 * np.exp(2 * u) / (s * s + np.exp(2 * u)) - 1
    v2 = 4 * s * s * np.exp(2 * u) / (s * s + np.exp(2 * u)) ** 2
    assert np.abs(v1).max() < 1 and 0 < v2.min() and v2.max() <= 1 + 1e-12


def test_unbounded_positive_prior_is_refused_but_the_path_is_certified():
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Normal(X @ w, sigma), obs=y)
    rep = certify(model, {"X": X, "y": RNG.standard_normal(m)}, ["X.norm=1"], clip_norm=1.0, **RUN)
    u = rep.analysis.first_unproven("prior decomposition")
    assert "'sigma'" in u and "HalfNormal" in u and "LogNormal" in u and "positive" in u
    assert rep.mechanisms["ula-path"].best is not None                   # needs only the likelihood
    assert rep.mechanisms["ula-final"].best is not None                   # post-processing of the path
    assert "post-processing" in rep.mechanisms["ula-final"].best.source


def test_masked_logistic_constants():
    # masked records contribute 0: the bounds of the unmasked logistic model still hold (R, 2R, R^2/4, convex)
    obs = (np.arange(m) % 3 > 0).astype(np.int32)
    an = analyze(M["masked_logistic"], {"X": X, "y": Y, "observed": obs},
                 Domain.parse(["X.norm=1", "y.values=0,1", "observed.values=0,1"]))
    c = an.constants
    assert c.record_grad_bound == R1 and c.record_grad_diff == 2 * R1 and c.v_convex is True
    assert c.record_smoothness == pytest.approx(R1 * R1 / 4, rel=1e-15) and c.record_smoothness >= R1 * R1 / 4


def test_mask_depending_on_theta_is_refused():
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]), handlers.mask(mask=X @ w > 0):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)
    with pytest.raises(ModelError, match=r"'obs': its mask depends on the latent site\(s\) w"):
        analyze(model, {"X": X, "y": Y}, Domain.parse(["X.norm=1", "y.values=0,1"]))


def test_obs_mask_is_refused_naming_the_users_site_and_the_fix():
    def model(X, y=None, keep=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y, obs_mask=keep)
    with pytest.raises(ModelError, match=r"observed site 'obs' uses obs_mask=.*numpyro.handlers.mask"):
        analyze(model, {"X": X, "y": Y, "keep": np.arange(m) % 2 == 0},
                Domain.parse(["X.norm=1", "y.values=0,1", "keep.values=0,1"]))


def test_probs_written_as_sigmoid_is_the_logistic_rule():
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jax.nn.sigmoid(X @ w)), obs=y)
    c = analyze(model, {"X": X, "y": Y}, Domain.parse(["X.norm=1", "y.values=0,1"])).constants
    # the logits rule's gradient bound; NumPyro's Bernoulli(probs=...) clamps p to [tiny, 1 - eps], so at y = 0 the
    # score of the program falls from ~1 to 0 where sigmoid(eta) rounds past 1 - eps: no smoothness, not convex
    assert c.record_grad_bound == R1 and c.v_convex is False and c.record_smoothness is None
    score = jax.vmap(jax.grad(lambda e: -dist.Bernoulli(probs=jax.nn.sigmoid(e)).log_prob(0.0)))(
        jnp.linspace(14.0, 19.0, 11, dtype=jnp.float32))
    assert float(score[0]) > 0.99 and float(score[-1]) == 0.0          # a jump of the gradient: not L-smooth
    assert "write logits=" in c.provenance["record_grad_bound"]

    def other(X, y=None):
        W = numpyro.sample("W", dist.Normal(0, 1).expand([X.shape[1], 3]).to_event(2))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Categorical(probs=jax.nn.softmax(X @ W, axis=-1)), obs=y)
    an = analyze(other, {"X": X, "y": np.arange(m) % 3}, Domain.parse(["X.norm=1", "y.values=0,1,2"]))
    assert "Categorical(logits=eta)" in an.first_unproven()


def test_discrete_latent_is_refused_before_anything_else():
    # the NumPyro tutorial's mixture: an integer latent per record used as an index (tracing fills it with
    # integers, so the refusal is about the discrete site, not an indexing TypeError)
    def mixture(X, y=None):
        loc = numpyro.sample("loc", dist.Normal(0, 1).expand([2]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            z = numpyro.sample("z", dist.Categorical(jnp.ones(2) / 2))
            numpyro.sample("obs", dist.Normal(loc[z], 1.0), obs=y)
    with pytest.raises(ModelError, match=r"^discrete latent site 'z': .*enumerate it out or marginalise it"):
        analyze(mixture, {"X": X, "y": RNG.standard_normal(m)}, Domain.parse(["X.norm=1"]))


def test_every_blocking_site_is_listed_at_once():
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(jnp.mean(X), 1.0).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=(X - X.mean(0)) @ w), obs=y)
        numpyro.factor("extra", -jnp.sum(w ** 2))
    with pytest.raises(ModelError) as exc:
        analyze(model, {"X": X, "y": Y}, Domain.parse(["X.norm=1", "y.values=0,1"]))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("3 problems block the analysis")
    assert "'w' has a data-dependent prior" in msg and "'obs'" in msg and "'extra' is a numpyro.factor" in msg


def test_no_advice_names_an_option_that_certify_lacks(capsys):
    # the posterior route needs V convex or smooth: the message is in the model's terms, not `bound`'s options
    rc = main(["certify", "sparse_logistic", "--no-data", "--data-size", "50", "--dim", "3", "--domain", "X.norm=1",
               "--domain", "y.values=0,1", "--step-size", "1e-3", "--num-steps", "10"])
    out = capsys.readouterr().out
    assert rc == 0
    # the refusal is there, in the model's terms (a Laplace prior has no strongly convex part) ...
    assert "posterior   not certified: strong_convexity is required" in out
    assert "site 'w' has a Laplace prior" in out
    # ... and the report is the real one: the path's epsilon is that of mu-GDP with mu = grad_diff sqrt(n gamma / 2)
    # (Bernoulli-logits score <= 1, |x| <= 1: grad_diff = 2), computed independently in tests/exact.py
    from exact import gdp_epsilon
    eps = float(out.split("ula-path    epsilon = ")[1].split()[0])
    assert eps == pytest.approx(gdp_epsilon(2 * math.sqrt(1e-3 * 10 / 2), 1e-5), rel=1e-5)
    for opt in ("--v-convex", "--v-smoothness", "--strong-convexity", "--grad-bound", "--linear-v"):
        assert opt not in out
