"""Norm facts through feature maps (issue 23, item 3): ``jnp.concatenate([jnp.cos(z), jnp.sin(z)], axis=1)`` has
row norm ``sqrt(n)`` (``cos^2 + sin^2 = 1``), carried through a division by a number and a product with a known
matrix (the tangent basis of the Jacobian, or a fixed mixing matrix ``M``: ``||M x|| <= ||M||_op ||x||``).  Each
certified constant is checked against a brute-force supremum of the true feature norm over the record's domain,
and look-alikes that are not such pairs keep the features' boxes."""

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(5)
m = 24
X = RNG.uniform(-1, 1, (m, 2))
Y = RNG.uniform(-3, 3, m)
DOM = Domain.parse(["X.min=-1", "X.max=1", "y.min=-3", "y.max=3"])
FREQS = np.arange(1.0, 5.0)
STUDENT = 1.25            # sup |Student-t(4, loc, 1) score in loc| = (df + 1) / (2 sqrt(df))


def _model(features, M=None):
    def model(X, y=None):
        phi = features(X)
        k = phi.shape[1]
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([k if M is None else M.shape[1]]).to_event(1))
        loc = phi @ (beta if M is None else jnp.asarray(M) @ beta)
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.StudentT(4.0, loc, 1.0), obs=y)
    return model


def _brute_norm(features, M=None):
    """max over a fine grid of x in [-1, 1]^2 of ||phi(x)|| (or ||M^T phi(x)||): the features in float32 (JAX's
    default), the norms in float64, so the result is the true value to about 1e-7 relative."""
    g = np.linspace(-1.0, 1.0, 401)
    xs = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    phi = np.asarray(features(jnp.asarray(xs)), dtype=np.float64)
    if M is not None:
        phi = phi @ M
    return float(np.max(np.linalg.norm(phi, axis=1)))


def rff(X):
    z = X[:, :1] * FREQS
    return jnp.concatenate([jnp.cos(z), jnp.sin(z)], axis=1) / 2.0


def rff_written_twice(X):          # z computed twice: JAX does not merge them, the analyzer compares them
    return jnp.concatenate([jnp.cos(X[:, :1] * FREQS), jnp.sin(X[:, :1] * FREQS)], axis=1)


def rff_with_extra(X):             # the pair, then sin(z) again and the raw features: 4 + 4 + 2 = 10 columns
    z = X[:, :1] * FREQS
    return jnp.concatenate([jnp.sin(z), X, jnp.cos(z), jnp.sin(z)], axis=1)


def not_a_pair_frequency(X):       # cos(z) with sin(2 z): not one z, so each entry keeps its box
    z = X[:, :1] * FREQS
    return jnp.concatenate([jnp.cos(z), jnp.sin(2.0 * z)], axis=1)


def not_a_pair_shift(X):           # cos(z) with sin(z + 0.5)
    z = X[:, :1] * FREQS
    return jnp.concatenate([jnp.cos(z), jnp.sin(z + 0.5)], axis=1)


def rff_float16(X):               # the pair computed in float16: each entry rounded by up to 2^-11, norms to 1.0004
    z = (X[:, :1] * FREQS).astype(jnp.float16)
    return jnp.concatenate([jnp.cos(z), jnp.sin(z)], axis=1).astype(jnp.float32)


def two_cosines(X):
    z = X[:, :1] * FREQS
    return jnp.concatenate([jnp.cos(z), jnp.cos(z)], axis=1)


@pytest.mark.parametrize("features, norm", [
    (rff, 1.0),                                  # sqrt(4) / 2
    (rff_written_twice, 2.0),                    # sqrt(4)
    # 14 columns: sin^2 + cos^2 + sin^2 <= 2 per frequency (the pair counts 1, the other sin its box), and X's
    # linear term sqrt(2) on other columns: sqrt(4 * 2 + 2) = sqrt(10), where the boxes give sqrt(14) (the true
    # sup is smaller only because sin(z) = 1 at every frequency at once is impossible)
    (rff_with_extra, math.sqrt(10.0)),
    (not_a_pair_frequency, math.sqrt(8.0)),      # the boxes: 8 entries in [-1, 1]
    (not_a_pair_shift, math.sqrt(8.0)),
    (two_cosines, math.sqrt(8.0)),
    (rff_float16, math.sqrt(8.0)),               # not paired in float16: the boxes (a fuzz helper found 2.00044)
])
def test_feature_norms(features, norm):
    c = analyze(_model(features), {"X": X, "y": Y}, DOM).constants
    assert c.record_grad_bound == pytest.approx(STUDENT * norm, rel=1e-9)
    assert c.record_grad_bound >= STUDENT * _brute_norm(features) * (1 - 1e-6)    # never below the true sup


def test_the_pair_is_exact_and_the_lookalikes_are_not_below_their_supremum():
    # rff's norm is 1 at every x (attained): the certificate is the supremum; the look-alikes' true norms are
    # below their boxes', e.g. cos(z), cos(z) has norm sqrt(2 sum cos^2) < sqrt(8) except at z = 0
    assert _brute_norm(rff) == pytest.approx(1.0, abs=1e-6)
    assert _brute_norm(two_cosines) == pytest.approx(math.sqrt(8.0), rel=1e-6)     # x = 0: every cos = 1


@pytest.mark.parametrize("M", [np.eye(8), 2.0 * np.eye(8), RNG.standard_normal((8, 3)),
                               np.diag([3.0, 1, 1, 1, 1, 1, 1, 1])[:, :5]])
def test_a_fixed_matrix_after_the_features_scales_the_norm_by_its_operator_norm(M):
    # loc = phi(x) . (M beta): d loc / d beta = M^T phi(x), of norm <= ||M||_op ||phi(x)|| = ||M||_op
    c = analyze(_model(rff, M), {"X": X, "y": Y}, DOM).constants
    op = float(np.linalg.norm(M, 2))
    assert c.record_grad_bound >= STUDENT * _brute_norm(rff, M) * (1 - 1e-6)
    # the bound is the smaller of || |M| ||_op ||phi|| (>= ||M||_op: |M| entrywise) and the norm of the box of
    # M^T phi, entry j in sum_i |M_ij| [-1/2, 1/2]
    want = min(float(np.linalg.norm(np.abs(M), 2)), float(np.linalg.norm(0.5 * np.abs(M).sum(axis=0))))
    assert c.record_grad_bound == pytest.approx(STUDENT * want, rel=1e-6)
    assert float(np.linalg.norm(np.abs(M), 2)) >= op * (1 - 1e-12)
