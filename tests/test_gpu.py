"""Checks that only mean something on an accelerator (issue #13, item 6): with JAX's default settings a
GPU runs float32 matrix products in TF32 (10-bit mantissa), so any constant or gradient check that went
through a default-precision product depended on the device.  bayesdp traces the potential and the GLM
products at HIGHEST precision (bayesdp/samplers/potential.py, glm.py); these tests verify it on the
device itself.  Marked ``gpu``: skipped where JAX sees no GPU (tests/conftest.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.samplers import ModelPotential, Sampler, glm, gradients

from samplers._sampler_models import glm_gradient, logistic, logistic_data  # noqa: E402

pytestmark = pytest.mark.gpu


def _data(m=200, d=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (rng.uniform(size=m) < 0.5).astype(np.float32)
    return X, y


def test_device_is_a_gpu():
    assert jax.default_backend() == "gpu"


def test_glm_jacobian_is_the_features_bitwise():
    # J = d(X w)/dw = X: a TF32 product with the identity would round every feature to 10 mantissa bits
    X, y = _data()
    pot = ModelPotential(logistic, {"X": X, "y": y})
    structure, why = glm.detect(pot)
    assert structure is not None, why
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32)
    np.testing.assert_array_equal(np.asarray(a["JT"]).T, X)


@pytest.mark.parametrize("num_chains", [1, 4])
def test_glm_and_general_gradients_match_float64(num_chains):
    X, y = _data(seed=1)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    structure, _ = glm.detect(pot)
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32)
    rng = np.random.default_rng(2)
    th = rng.normal(size=(num_chains, pot.dim)).astype(np.float32)
    Xd, yd = X.astype(np.float64), y.astype(np.float64)
    ref = np.stack([Xd.T @ (1 / (1 + np.exp(-Xd @ t)) - yd) + t for t in th.astype(np.float64)])
    general = jax.jit(lambda t: gradients.build(pot, batch_size=None, clipped=False)(None, t, pot.data))
    got_general = np.stack([np.asarray(general(jnp.asarray(t))) for t in th])
    np.testing.assert_allclose(got_general, ref, rtol=1e-5, atol=1e-5)
    forms = glm.FORMS_SINGLE + (glm.FEATURES_SUM,) if num_chains == 1 else glm.ALL_FORMS
    for form in forms:
        g = jax.jit(glm_gradient(structure, form, num_chains))
        x = jnp.asarray(th[0] if num_chains == 1 else th)
        got = np.asarray(g(x, pot.data, a)).reshape(ref.shape)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=form)


def test_first_ula_step_matches_float64_on_device():
    X, y = logistic_data(100, 8, seed=3)
    gamma = 1e-2
    s = Sampler(logistic, {"X": X, "y": y}, step_size=gamma, num_steps=1, release="path", uncertified=True,
                init=np.full(8, 0.1))
    out = s.run(jax.random.key(0)).get_unconstrained_samples()[0, 0]
    chain_key = jax.random.split(jax.random.key(0), 1)[0]   # the driver's key of chain 0
    z = np.asarray(jax.random.normal(jax.random.fold_in(chain_key, 0), (1, 8), jnp.float32), np.float64)[0]
    Xd, yd, x = X.astype(np.float64), y.astype(np.float64), np.full(8, 0.1)
    g = Xd.T @ (1 / (1 + np.exp(-Xd @ x)) - yd) + x
    np.testing.assert_allclose(out, x - gamma * g + np.sqrt(2 * gamma) * z, rtol=1e-5, atol=1e-6)


def test_analyzer_accepts_logistic_on_device():
    # issue #13: on a GPU the analyzer refused ordinary logistic models ("Jacobian ... not affine")
    from bayesdp.analysis import Domain, analyze
    from bayesdp.analysis.loading import builtin_models

    X, y = _data(m=50, d=4, seed=4)
    an = analyze(builtin_models()["logistic"], data={"X": X, "y": y}, domain=Domain.parse(["X.norm=1",
                                                                                            "y.values=0,1"]))
    # |(sigmoid(x.w) - y) x| <= R for y in {0, 1}, so two records' gradients differ by at most 2 R, with the
    # declared R = 1 inflated by 1 + 8 * 2^-24 for float32 rows (domain.py); the N(0, 1) prior is 1-strongly convex
    assert an.constants.grad_diff == pytest.approx(2 * (1 + 8 * 2.0 ** -24), rel=1e-12)
    assert an.constants.strong_convexity == pytest.approx(1.0, rel=1e-12)
