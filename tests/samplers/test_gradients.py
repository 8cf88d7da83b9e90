"""Gradient estimators: hand-computed clipping, minibatch scaling (uniformity of the batches: test_minibatch.py)."""

import jax
import jax.numpy as jnp
import numpy as np

from bayesdp.samplers import ModelPotential, clip_rows, sample_without_replacement
from bayesdp.samplers import gradients

from _sampler_models import logistic, logistic_data


def test_clip_rows_hand_computed():
    g = jnp.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [-6.0, 8.0]])
    out = np.asarray(clip_rows(g, 1.0))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0], [-0.6, 0.8]], rtol=1e-6)


def _record_grads_numpy(X, y, theta):
    p = 1 / (1 + np.exp(-X @ theta))
    return (p - y)[:, None] * X  # grad of l_i = log(1+e^z) - y z


def _setup(m=40, d=3, seed=0):
    X, y = logistic_data(m, d, seed=seed)
    X = X * 3.0  # make some record gradients exceed the clip norm
    pot = ModelPotential(logistic, {"X": X, "y": y}, {"prior_scale": 1.5})
    data = {"X": jnp.asarray(X), "y": jnp.asarray(y)}
    return X.astype(np.float64), y.astype(np.float64), pot, data


def test_full_batch_clipped_matches_hand_computation():
    X, y, pot, data = _setup()
    theta = np.array([1.0, -2.0, 0.5])
    G = 0.4
    per = _record_grads_numpy(X, y, theta)
    norms = np.linalg.norm(per, axis=1)
    assert (norms > G).any() and (norms < G).any()
    clipped = per * np.minimum(1.0, G / norms)[:, None]
    expected = theta / 1.5 ** 2 + clipped.sum(axis=0)
    fn = jax.jit(gradients.build(pot, batch_size=None, clipped=True))
    got = fn(jax.random.key(0), jnp.asarray(theta, jnp.float32), data, jnp.float32(G))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)


def test_minibatch_estimators_use_the_drawn_indices():
    X, y, pot, data = _setup()
    m, s = X.shape[0], 7
    theta = np.array([0.5, 0.2, -1.0])
    key = jax.random.key(11)
    idx = np.asarray(sample_without_replacement(key, m, s))
    per = _record_grads_numpy(X, y, theta)
    prior = theta / 1.5 ** 2
    for clipped, G in ((False, None), (True, 0.3)):
        rows = per[idx] if G is None else per[idx] * np.minimum(1.0, G / np.linalg.norm(per[idx], axis=1))[:, None]
        expected = prior + (m / s) * rows.sum(axis=0)
        fn = jax.jit(gradients.build(pot, batch_size=s, clipped=clipped))
        got = fn(key, jnp.asarray(theta, jnp.float32), data, jnp.float32(G or 0.0))
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-4)


def test_minibatch_of_full_size_is_full_gradient():
    X, y, pot, data = _setup()
    theta = jnp.array([0.1, 0.2, 0.3])
    full = jax.jit(gradients.build(pot, batch_size=None, clipped=False))(jax.random.key(0), theta, data, 0.0)
    mb = jax.jit(gradients.build(pot, batch_size=X.shape[0], clipped=False))(jax.random.key(3), theta, data, 0.0)
    np.testing.assert_allclose(np.asarray(mb), np.asarray(full), rtol=1e-5, atol=1e-5)
