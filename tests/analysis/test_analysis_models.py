"""Reference models: constants derived by hand (docs/analysis.md), checked against the analyzer.

Every expected value below is a closed form written from the model's math, not from the code.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze, certify
from bayesdp.analysis.loading import builtin_models

M = builtin_models()


def _rows(m, d, R, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * R * rng.uniform(0.1, 1.0, (m, 1))


def test_logistic_constants():
    # U = |w|^2/(2 s^2) + sum_i l_i, grad l_i = (sigmoid(x.w) - y) x:
    # mu = L = 1/s^2 = 4; record_grad_bound = R = 2; record_grad_diff = 2R = 4; record_smoothness = R^2/4 = 1;
    # grad_bound = m R = 100; v_smoothness = m R^2/4 = 50; V convex -> total mu = 4, total L = 54.
    m, R, s = 50, 2.0, 0.5
    X = _rows(m, 3, R)
    y = (np.arange(m) % 2).astype(float)
    an = analyze(M["logistic"], data={"X": X, "y": y}, domain=Domain.parse([f"X.norm={R}", "y.values=0,1"]),
                 model_kwargs={"prior_scale": s})
    c = an.constants
    assert c.strong_convexity == pytest.approx(4.0) and c.smoothness == pytest.approx(4.0)
    assert c.record_grad_bound == pytest.approx(2.0, rel=1e-6)
    assert c.record_grad_diff == pytest.approx(4.0, rel=1e-6)
    assert c.grad_diff == pytest.approx(4.0, rel=1e-6) and c.grad_diff_add_remove == pytest.approx(2.0, rel=1e-6)
    assert c.grad_bound == pytest.approx(100.0, rel=1e-6)
    assert c.v_smoothness == pytest.approx(50.0, rel=1e-6) and c.v_convex is True
    assert c.total_strong_convexity == pytest.approx(4.0) and c.total_smoothness == pytest.approx(54.0, rel=1e-6)
    assert c.data_size == m and an.record_plate == ("data", m)
    assert [n for n, _, _ in an.latent_sites] == ["w"] and an.observed_sites[0][0] == "obs"
    assert "Normal prior" in c.provenance["strong_convexity"] and "@ w" in c.provenance["strong_convexity"]
    assert "@ obs" in c.provenance["record_grad_bound"]


def test_logistic_bound_is_approached():
    # the sup R is approached: x = R e1, y = 1, theta = -t e1, t -> inf gives |grad l| -> R (independent check)
    R = 2.0
    x = jnp.array([R, 0.0, 0.0])

    def loss(theta):
        return -dist.Bernoulli(logits=jnp.dot(x, theta)).log_prob(1.0)

    g = jax.grad(loss)(jnp.array([-20.0, 0.0, 0.0]))
    assert float(jnp.linalg.norm(g)) == pytest.approx(R, rel=1e-6)


def test_box_domain_gives_sqrt_d_bound():
    # |x| <= sqrt(d) max(|min|, |max|) = sqrt(3) for X in [-1, 1]^3
    X = np.random.default_rng(1).uniform(-1, 1, (20, 3))
    y = np.zeros(20)
    an = analyze(M["logistic"], data={"X": X, "y": y}, domain=Domain.parse(["X.min=-1", "X.max=1", "y.values=0,1"]))
    assert an.constants.record_grad_bound == pytest.approx(math.sqrt(3), rel=1e-6)


def test_softmax_constants():
    # grad l = (p - e_y) (x) x, |p - e_y| <= sqrt(2): record_grad_bound = sqrt(2) R;
    # Hessian (diag p - p p^T) (x) x x^T, lambda_max <= 1/2: record_smoothness = R^2/2; convex.
    m, R, s = 30, 1.5, 2.0
    X = _rows(m, 4, R)
    y = np.arange(m) % 3
    an = analyze(M["softmax"], data={"X": X, "y": y}, domain=Domain.parse([f"X.norm={R}", "y.values=0,1,2"]),
                 model_kwargs={"prior_scale": s, "num_classes": 3})
    c = an.constants
    assert c.strong_convexity == pytest.approx(0.25) and c.smoothness == pytest.approx(0.25)
    assert c.record_grad_bound == pytest.approx(math.sqrt(2) * R, rel=1e-6)
    assert c.record_smoothness == pytest.approx(R * R / 2, rel=1e-6)
    assert c.v_convex and c.total_strong_convexity == pytest.approx(0.25)
    assert c.total_smoothness == pytest.approx(0.25 + m * R * R / 2, rel=1e-6)


def _t_score_sup(nu, sigma):
    # brute force: sup_r (nu+1)|r|/(nu sigma^2 + r^2) on a fine grid
    r = np.linspace(0, 50 * sigma, 2_000_001)
    return float(np.max((nu + 1) * r / (nu * sigma ** 2 + r * r)))


def _t_hess_sup(nu, sigma):
    r = np.linspace(0, 50 * sigma, 2_000_001)
    return float(np.max(np.abs((nu + 1) * (nu * sigma ** 2 - r * r) / (nu * sigma ** 2 + r * r) ** 2)))


def test_robust_constants():
    # Student-t(nu = 4, scale 0.5) location score: sup |psi| = (nu+1)/(2 sigma sqrt(nu)) = 2.5 (brute force below);
    # |d psi/d loc| <= (nu+1)/(nu sigma^2) = 5; V non-convex, smooth: total mu = 1/s^2 - m * 5 R^2 (s = 0.1, m = 10).
    nu, sigma, s, m, R = 4.0, 0.5, 0.1, 10, 1.0
    assert _t_score_sup(nu, sigma) == pytest.approx(2.5, rel=1e-6)
    assert _t_hess_sup(nu, sigma) == pytest.approx(5.0, rel=1e-6)
    X = _rows(m, 2, R)
    y = np.random.default_rng(2).standard_normal(m) * 10
    an = analyze(M["robust"], data={"X": X, "y": y}, domain=Domain.parse([f"X.norm={R}"]),
                 model_kwargs={"prior_scale": s, "df": nu, "noise_scale": sigma})
    c = an.constants
    assert c.record_grad_bound == pytest.approx(2.5 * R, rel=1e-6)
    assert c.record_smoothness == pytest.approx(5.0 * R * R, rel=1e-6)
    assert c.v_convex is False
    assert c.v_smoothness == pytest.approx(m * 5.0, rel=1e-6)
    # the certificate uses R (1 + 8 * 2^-24) (float32 rows at the declared norm, domain.py): v_smoothness ~ R^2
    assert c.total_strong_convexity == pytest.approx(100.0 - 50.0 * (1 + 8 * 2.0 ** -24) ** 2, rel=1e-6)
    # with a weak prior the total strong convexity is not proven
    an2 = analyze(M["robust"], data={"X": X, "y": y}, domain=Domain.parse([f"X.norm={R}"]),
                  model_kwargs={"prior_scale": 1.0, "df": nu, "noise_scale": sigma})
    assert an2.constants.total_strong_convexity is None
    assert an2.constants.strong_convexity == pytest.approx(1.0)


def test_sparse_logistic_constants():
    # Laplace(0, b) prior on d = 4 weights: grad V_prior = sign(w)/b, |.| <= sqrt(d)/b = 4 (b = 0.5), convex, not smooth;
    # K = 0: strong convexity not proven.  grad_bound = m R + 4.
    m, R, b = 12, 1.0, 0.5
    X = _rows(m, 4, R)
    y = (np.arange(m) % 2).astype(float)
    an = analyze(M["sparse_logistic"], data={"X": X, "y": y}, domain=Domain.parse(["X.norm=1", "y.values=0,1"]),
                 model_kwargs={"prior_scale": b})
    c = an.constants
    assert c.prior_v_grad_bound == pytest.approx(4.0)
    assert c.grad_bound == pytest.approx(m * R + 4.0, rel=1e-6)
    assert c.strong_convexity is None and c.total_strong_convexity is None
    assert c.v_smoothness is None and c.total_smoothness is None and c.v_convex is True
    assert "w" in c.provenance["strong_convexity"]
    rep = certify(M["sparse_logistic"], data={"X": X, "y": y}, domain=Domain.parse(["X.norm=1", "y.values=0,1"]),
                  model_kwargs={"prior_scale": b}, step_size=1e-3, num_steps=100, batch_size=4)
    # no final-draw theorem applies (K is not strongly convex), but the last draw is post-processing of the path:
    # its certificate is the path's, and the report says why the final-draw routes did not apply (issue #14)
    final, path = rep.mechanisms["ula-final"], rep.mechanisms["ula-path"]
    assert path.best is not None and final.value() == path.value()
    assert "post-processing of the path" in final.best.source
    assert any((not c.valid) and "strong_convexity" in c.reason for c in final.certificates)


def test_poisson_refused_and_clipped():
    m = 8
    X = _rows(m, 2, 1.0)
    y = np.arange(m, dtype=float)
    dom = Domain.parse(["X.norm=1"])
    from bayesdp.errors import BayesDPError
    with pytest.raises(BayesDPError, match="site 'obs'.*Poisson"):
        certify(M["poisson"], data={"X": X, "y": y}, domain=dom, step_size=1e-3, num_steps=10)
    # clipping at G = 3: record_grad_bound = 3, record_grad_diff = 6, grad_bound = 3 m, V not convex/smooth
    an = analyze(M["poisson"], data={"X": X, "y": y}, domain=dom, clip_norm=3.0)
    c = an.constants
    assert an.clipped and c.record_grad_bound == 3.0 and c.record_grad_diff == 6.0
    assert c.grad_bound == pytest.approx(3.0 * m) and c.v_smoothness is None and c.v_convex is False
    assert c.total_strong_convexity is None and c.total_smoothness is None
    assert any("no longer targets the exact posterior" in n for n in an.notes)


def test_intercept_and_mvn_prior():
    # logits = x.w + b: J = [x, 1] with x orthogonal to the intercept column: sup|J| = sqrt(R^2 + 1).
    # w ~ MVN(0, C), C = [[2, .5], [.5, 1]]: eig(C) = (3 -+ sqrt 2)/2 -> precision eig 2/(3 +- sqrt 2); b ~ N(0, 2).
    C = np.array([[2.0, 0.5], [0.5, 1.0]])

    def model(X, y=None):
        w = numpyro.sample("w", dist.MultivariateNormal(jnp.zeros(2), covariance_matrix=jnp.asarray(C)))
        b = numpyro.sample("b", dist.Normal(0.0, 2.0))
        lin = numpyro.deterministic("lin", X @ w + b)
        with numpyro.plate("N", X.shape[0]):
            numpyro.sample("y", dist.Bernoulli(logits=lin), obs=y)

    R = 3.0
    X = _rows(10, 2, R)
    an = analyze(model, data={"X": X, "y": np.ones(10)}, domain=Domain.parse(["X.norm=3", "y.values=0,1"]))
    c = an.constants
    assert c.record_grad_bound == pytest.approx(math.sqrt(R * R + 1), rel=1e-5)
    assert c.strong_convexity == pytest.approx(min(2 / (3 + math.sqrt(2)), 0.25), rel=1e-5)
    assert c.smoothness == pytest.approx(2 / (3 - math.sqrt(2)), rel=1e-5)
    assert "lin" in an.deterministic_sites


def test_no_data_matches_data():
    m = 40
    X = _rows(m, 3, 1.0)
    y = np.zeros(m)
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    a = analyze(M["logistic"], data={"X": X, "y": y}, domain=dom).constants.to_dict()
    b = analyze(M["logistic"], data=None, data_size=m, dim=3, domain=dom).constants.to_dict()
    a.pop("provenance"), b.pop("provenance")
    assert a == b


def test_certify_passes_core_constants():
    # certify must price each mechanism exactly as bayesdp.bound with the analysis constants (004 (31)/(36) for SGLD)
    from bayesdp import bound
    m = 20
    X = _rows(m, 2, 1.0)
    y = (np.arange(m) % 2).astype(float)
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    rep = certify(M["logistic"], data={"X": X, "y": y}, domain=dom, step_size=1e-3, num_steps=50, batch_size=5,
                  delta=1e-5)
    c = rep.analysis.constants
    ref = bound("ula-path", grad_diff=2.0, step_size=1e-3, num_steps=50, delta=1e-5)
    assert rep.mechanisms["ula-path"].value() == pytest.approx(ref.value())
    ref = bound("sgld-path", grad_diff=m * 2.0, step_size=1e-3, num_steps=50, batch_size=5, data_size=m, delta=1e-5)
    assert rep.mechanisms["sgld-path"].value() == pytest.approx(ref.value())
    assert c.sgld_grad_bound == pytest.approx(m * 1.0)
    d = rep.to_dict()
    assert set(d["mechanisms"]) == {"posterior", "ula-final", "ula-path", "sgld-final", "sgld-path"}
    for k in ("strong_convexity", "smoothness", "grad_bound", "grad_diff", "total_strong_convexity",
              "total_smoothness", "provenance"):
        assert k in d["constants"]
    assert d["mechanisms"]["ula-path"] == rep.mechanisms["ula-path"].to_dict()
    assert "constants (provenance)" in rep.table()
