"""Issue 23, item 4: a refusal of an unbounded per-record gradient names the site and the growth, and prints the
nearest certifiable model as code; each printed rewrite is certified here (and its constant checked against an
independent value: a closed form, or a brute-force maximum over a fine grid for a lower bound)."""

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import AssumptionError

RNG = np.random.default_rng(7)
m = 20
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
YR = RNG.uniform(-3, 3, m)
YC = (np.arange(m) % 6).astype(float)
DR = Domain.parse(["X.norm=1", "y.min=-3", "y.max=3"])
DC = Domain.parse(["X.norm=1", "y.values=0,1,2,3,4,5"])
R = DR.get("X").certified_norm


def linreg(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Normal(X @ w, sigma), obs=y)


def robust_latent_scale(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(4.0, X @ w, sigma), obs=y)


def poisson_glm(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Poisson(jnp.exp(X @ w)), obs=y)


# the rewrites the refusals print
def robust_fixed_scale(X, y=None, scale=2.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(4.0, X @ w, scale), obs=y)


def normal_bounded_loc(X, y=None, B=3.0, scale=1.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Normal(B * jnp.tanh((X @ w) / B), scale), obs=y)


def poisson_clipped(X, y=None, B=3.0):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.clip(X @ w, -B, B))), obs=y)


@pytest.mark.parametrize("model,data,dom,words", [
    (linreg, YR, DR, ["site 'obs'", "grows linearly in theta", "1/scale^2 as scale -> 0", "sigma",
                      "nearest certifiable model: `with numpyro.plate('data', N): numpyro.sample('obs', "
                      "dist.StudentT(4.0, loc, SCALE), obs=y)`", "B * jnp.tanh(loc / B)"]),
    (robust_latent_scale, YR, DR, ["site 'obs'", "grows like 1/scale as scale -> 0", "sigma",
                                   "dist.StudentT(4.0, loc, SCALE)"]),
    (poisson_glm, YC, DC, ["site 'obs'", "grows like rate = exp(eta)", "jnp.exp(jnp.clip(eta, -B, B))",
                           "dist.Poisson(jax.nn.softplus(eta))"]),
])
def test_unbounded_gradients_name_the_growth_and_print_a_rewrite(model, data, dom, words):
    an = analyze(model, {"X": X, "y": data}, dom)
    msg = an.first_unproven("per-record gradient bound")
    assert msg is not None
    for w in words:
        assert w in msg, w


def test_the_printed_rewrites_certify():
    # Student-t, df = 4, public scale 2: sup |dl/dloc| = (df+1)/(2 s sqrt(df)) = 5/8, times |x| <= R
    an = analyze(robust_fixed_scale, {"X": X, "y": YR}, DR)
    assert an.constants.record_grad_bound == pytest.approx(5 / 8 * R, rel=1e-9)
    assert an.constants.record_grad_bound >= 5 / 8 * R
    # bounded loc 3 tanh(x.w/3), scale 1, |y| <= 3: grad = (y - loc) sech^2(x.w/3) x; the bound must cover the
    # brute-force maximum over a grid of t = x.w/3 and y (|x| = R), and be finite
    an = analyze(normal_bounded_loc, {"X": X, "y": YR}, DR)
    t = np.linspace(-10, 10, 20001)
    brute = max(np.max(np.abs(yv - 3 * np.tanh(t)) / np.cosh(t) ** 2) for yv in (-3.0, 3.0)) * R
    assert brute <= an.constants.record_grad_bound < np.inf
    # clipped log-rate: grad = (exp(c) - y) 1{|x.w| < B} x: sup = max(e^B, y_max - e^-B) R = e^3 R
    an = analyze(poisson_clipped, {"X": X, "y": YC}, DC)
    assert np.exp(3.0) * R <= an.constants.record_grad_bound < np.inf


def test_clipped_log_rate_poisson_is_within_two_of_its_maximum():
    # cancel_factor: JAX's derivative of xlogy(y, exp(c)) is (t exp(c)) y / exp(c) = t y; the bound went from
    # 100x the true maximum e^3 R (interval arithmetic on y/exp(c) * exp(c)) to under 2x
    an = analyze(poisson_clipped, {"X": X, "y": YC}, DC)
    assert np.exp(3.0) * R <= an.constants.record_grad_bound <= 2 * np.exp(3.0) * R


def test_a_refusal_prices_per_record_clipping_at_the_same_settings():
    # Normal(x.w, 1): the gradient grows with theta; the refusal says what --clip-norm 1 would certify at the
    # settings asked for: the same epsilon as certifying with clip_norm=1 (the route a user then takes)
    from bayesdp.analysis import certify

    kw = dict(domain=DR, data_size=1000, dim=X.shape[1], step_size=1e-3, num_steps=1000, delta=1e-5)
    with pytest.raises(AssumptionError) as e:
        certify(linreg, **kw)
    msg = str(e.value)
    clipped = certify(linreg, clip_norm=1.0, **kw).mechanisms["ula-path"].value()
    assert "\n" not in msg and "site 'obs'" in msg
    assert (f"with per-record gradients clipped at norm 1 (--clip-norm 1, clip_norm=1.0) these settings would "
            f"certify ula-path epsilon = {clipped:.6g} at delta = 1e-05") in msg
    # independently: clipping at 1 gives the replace-one gradient difference 2, so the path is mu-GDP with
    # mu = 2 sqrt(n gamma / 2) = sqrt(2) (004's path bound, beta = 1), and epsilon solves Dong-Roth-Su's
    # delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = 1e-5
    from scipy.optimize import brentq
    from scipy.stats import norm
    mu = 2.0 * math.sqrt(1000 * 1e-3 / 2)
    eps = brentq(lambda t: norm.cdf(-t / mu + mu / 2) - math.exp(t) * norm.cdf(-t / mu - mu / 2) - 1e-5, 0.0, 50.0,
                 xtol=1e-14)
    assert eps <= clipped <= eps * (1 + 1e-9)
    # without the chain's settings the refusal says which to pass; with clip_norm given, nothing is added
    with pytest.raises(AssumptionError) as e:
        certify(linreg, domain=DR, data_size=1000, dim=X.shape[1])
    assert "clip_norm=1.0) the chains are certifiable: pass --step-size and --num-steps" in str(e.value)


def cauchy_latent_scale(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Cauchy(X @ w, sigma), obs=y)


def _drs_epsilon(mu, delta):
    """Dong-Roth-Su: the epsilon of mu-GDP at delta, solved with scipy (independent of bayesdp.curves)."""
    from scipy.optimize import brentq
    from scipy.stats import norm
    return brentq(lambda t: norm.cdf(-t / mu + mu / 2) - math.exp(t) * norm.cdf(-t / mu - mu / 2) - delta, 0.0,
                  50.0, xtol=1e-14)


@pytest.mark.parametrize("model, score", [
    (linreg, 5.0 / 4.0),                  # Normal -> StudentT(4, loc, 1): (df + 1) / (2 sqrt(df)) = 5/4
    (robust_latent_scale, 5.0 / 4.0),     # StudentT(4, loc, sigma) -> StudentT(4, loc, 1): its df kept
    (cauchy_latent_scale, 1.0),           # Cauchy(loc, sigma) -> Cauchy(loc, 1): sup 2 r / (1 + r^2) = 1
])
def test_a_refusal_prices_the_student_t_rewrite_with_a_public_scale(model, score):
    # the printed rewrite (advice.py's code) analysed as written: the score in loc is at most `score` / SCALE, loc
    # = x . w has |d loc / d w| = |x| <= R, so the replace-one gradient difference is 2 score R, the path is
    # mu-GDP with mu = 2 score R sqrt(n gamma / 2) (beta = 1), and epsilon solves Dong-Roth-Su at delta
    from bayesdp.analysis import certify

    kw = dict(domain=DR, data_size=1000, dim=X.shape[1], step_size=1e-3, num_steps=1000, delta=1e-5)
    with pytest.raises(AssumptionError) as e:
        certify(model, **kw)
    msg = str(e.value)
    head = "with a public scale SCALE = 1 at site(s) 'obs' (the Student-t rewrite above, df = 4 for a Normal) these "
    assert head + "settings would certify ula-path epsilon = " in msg and "\n" not in msg
    got = float(msg.split(head + "settings would certify ula-path epsilon = ")[1].split()[0])
    eps = _drs_epsilon(2.0 * score * R * math.sqrt(1000 * 1e-3 / 2), 1e-5)
    assert eps * (1 - 1e-6) <= got <= eps * (1 + 1e-5)         # printed to 6 significant digits
    # the wrapped model carries the original's name (functools.wraps): nothing analysed for it is reused for the
    # original, which is refused again, and so is its analysis
    with pytest.raises(AssumptionError, match="no mechanism can be certified"):
        certify(model, **kw)
    assert analyze(model, {"X": X, "y": YR}, DR).constants.record_grad_bound is None      # not proven
    # without the chain's settings the refusal says which to pass
    with pytest.raises(AssumptionError) as e:
        certify(model, domain=DR, data_size=1000, dim=X.shape[1])
    assert ("with a public scale SCALE = 1 at site(s) 'obs' (the Student-t rewrite above, df = 4 for a Normal) the "
            "chains may be certifiable: pass --step-size and --num-steps") in str(e.value)
    # the same number as certifying the rewrite written by hand
    if model is linreg:
        def by_hand(X, y=None):
            w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
            numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
            with numpyro.plate("data", X.shape[0]):
                numpyro.sample("obs", dist.StudentT(4.0, X @ w, 1.0), obs=y)
        assert f"{certify(by_hand, **kw).mechanisms['ula-path'].value():.6g}" == f"{got:.6g}"


def hier_noncentred(X, g, y=None, num_groups=4):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([num_groups]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + (mu + tau * z)[g]), obs=y)


def test_a_refusal_never_names_bayesdp_s_own_source_line():
    # the non-centred intercept tau * z is unbounded in theta through exp, the transform of the positive latent tau
    # that bayesdp's tracing applies: the refusal names that transform, not `exp at tracing.py:LINE (_trace_sites)`
    Xh = np.eye(8, 3) * 0.5
    an = analyze(hier_noncentred, {"X": Xh, "g": (np.arange(8) % 4).astype(np.int32), "y": (np.arange(8) % 2) * 1.0},
                 Domain.parse(["X.norm=1", "g.values=0,1,2,3", "y.values=0,1"]), model_kwargs={"num_groups": 4})
    msg = "; ".join(u.message() for u in an.unproven)
    assert "site 'obs'" in msg and "tracing.py" not in msg and "_trace_sites" not in msg
    assert "`exp` in the transform of a constrained latent site" in msg
