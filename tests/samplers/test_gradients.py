"""Gradient estimators: hand-computed clipping, minibatch scaling, without-replacement uniformity."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

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


def test_indices_distinct_and_in_range():
    draw = jax.jit(jax.vmap(lambda k: sample_without_replacement(k, 1_000_000, 100)))
    idx = np.asarray(draw(jax.random.split(jax.random.key(0), 200)))
    assert idx.min() >= 0 and idx.max() < 1_000_000
    assert all(len(set(row)) == 100 for row in idx)


def test_subsets_uniform_chi_square():
    # m = 6, s = 3: each of the 20 subsets has probability 1/20 under uniform sampling without replacement
    m, s, n = 6, 3, 40_000
    draw = jax.jit(jax.vmap(lambda k: sample_without_replacement(k, m, s)))
    idx = np.sort(np.asarray(draw(jax.random.split(jax.random.key(1), n))), axis=1)
    assert (np.diff(idx, axis=1) > 0).all()  # without replacement
    subsets = {c: i for i, c in enumerate(itertools.combinations(range(m), s))}
    counts = np.bincount([subsets[tuple(r)] for r in idx.tolist()], minlength=len(subsets))
    chi2 = ((counts - n / 20) ** 2 / (n / 20)).sum()
    assert chi2 < stats.chi2(df=19).ppf(1 - 1e-4)
    # and the marginal of each index is s/m
    np.testing.assert_allclose(np.bincount(idx.ravel(), minlength=m) / n, s / m, atol=5 * math.sqrt(0.25 / n))


def test_independent_across_steps():
    # pairs of consecutive batches (m = 4, s = 2): all 36 ordered pairs of subsets equally likely
    m, s, n = 4, 2, 36_000
    draw = jax.jit(jax.vmap(lambda k: sample_without_replacement(k, m, s)))
    keys = jax.random.split(jax.random.key(2), 2 * n)
    idx = np.sort(np.asarray(draw(keys)), axis=1).reshape(n, 2, s)
    subsets = {c: i for i, c in enumerate(itertools.combinations(range(m), s))}
    codes = [subsets[tuple(a)] * 6 + subsets[tuple(b)] for a, b in idx.tolist()]
    counts = np.bincount(codes, minlength=36)
    chi2 = ((counts - n / 36) ** 2 / (n / 36)).sum()
    assert chi2 < stats.chi2(df=35).ppf(1 - 1e-4)
