"""Batched Bernoulli-GLM gradient (bayesdp.samplers.glm): structural affinity proof, the same gradient as the
general NumPyro path (including logits = 0), and the same ULA steps as the general path and as the certified
update x - gamma grad U + sqrt(2 gamma / beta) z."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.samplers import ModelPotential, Sampler
from bayesdp.samplers import driver, glm, gradients

from _sampler_models import gaussian_mean, glm_gradient, logistic, logistic_data


def intercept_features(X, y=None):
    """Affine predictor with an offset, a second latent site and a nonlinear function of the data only."""
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=jnp.tanh(X) @ theta / 2.0 + b - 1.0), obs=y)


def squared(X, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=X @ theta ** 2), obs=y)


def scaled_by_latent(X, y=None):
    s = numpyro.sample("s", dist.Normal(1.0, 1.0))  # real support: the product s * (X theta) is bilinear
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=s * (X @ theta)), obs=y)


def positive_scale(X, y=None):
    s = numpyro.sample("s", dist.HalfNormal(1.0))  # exp transform of the unconstrained coordinate
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=(X @ theta) + s), obs=y)


def probs(X, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(probs=jax.nn.sigmoid(X @ theta)), obs=y)


def masked(X, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=X @ theta).mask(X[:, 0] > -10), obs=y)


def two_sites(X, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=X @ theta), obs=y)
        numpyro.sample("y2", dist.Bernoulli(logits=X @ theta), obs=y)


def piecewise(X, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("records", X.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=jnp.maximum(X @ theta, 0.0)), obs=y)


def _pot(model, m=40, d=3, seed=0):
    X, y = logistic_data(m, d, seed=seed)
    return ModelPotential(model, {"X": X, "y": y})


@pytest.mark.parametrize("model", [logistic, intercept_features])
def test_affine_bernoulli_models_detected(model):
    structure, why = glm.detect(_pot(model))
    assert structure is not None, why
    assert structure.site == "y"


@pytest.mark.parametrize("model, reason", [
    (squared, "integer_pow"), (scaled_by_latent, "`mul at test_glm.py"), (positive_scale, "exp"),
    (probs, "BernoulliProbs"), (masked, "MaskedDistribution"), (two_sites, "2 likelihood sites"),
    (piecewise, "max"),
])
def test_non_affine_or_other_likelihoods_refused(model, reason):
    structure, why = glm.detect(_pot(model))
    assert structure is None
    assert reason in why


def test_gaussian_likelihood_refused():
    y = np.linspace(-1, 1, 10).astype(np.float32)
    structure, why = glm.detect(ModelPotential(gaussian_mean, {"y": y}))
    assert structure is None and "not BernoulliLogits" in why


def test_affinity_proof_on_plain_functions():
    x = jnp.ones(3)
    A = jnp.ones((4, 3))
    assert glm.affine_in_first_argument(lambda t, A: (A @ t + 1.0, A), x, A) == [True, False]
    assert glm.affine_in_first_argument(lambda t, A: jnp.where(A[:, 0] > 0, A @ t, -2.0 * (A @ t)), x, A) == [True]
    for op, f in (("sin", lambda t, A: A @ jnp.sin(t)), ("mul", lambda t, A: (A @ t) * (A @ t)),
                  ("div", lambda t, A: A @ t / t[0]), ("gt", lambda t, A: jnp.where(A @ t > 0, A @ t, 0.0)),
                  ("convert_element_type", lambda t, A: A[t.astype(jnp.int32)[0]])):
        with pytest.raises(glm.NotAffine, match=rf"^`{op} at test_glm\.py:\d+ \(\S*<lambda>\)` is not linear in theta$"):
            glm.affine_in_first_argument(f, x, A)


@pytest.mark.parametrize("model", [logistic, intercept_features])
@pytest.mark.parametrize("num_chains", [1, 3])
def test_glm_gradient_equals_numpyro_gradient(model, num_chains):
    pot = _pot(model, m=50, d=4, seed=3)
    structure, _ = glm.detect(pot)
    general = jax.jit(lambda th: gradients.build(pot, batch_size=None, clipped=False)(None, th, pot.data))
    rng = np.random.default_rng(0)
    thetas = np.concatenate([np.zeros((1, pot.dim)), rng.normal(size=(num_chains * 2, pot.dim))])
    thetas = jnp.asarray(thetas[:num_chains] if num_chains > 1 else thetas[:1], jnp.float32)
    thetas_rand = jnp.asarray(rng.normal(size=(num_chains, pot.dim)), jnp.float32)
    forms = glm.FORMS_SINGLE + (glm.FEATURES_SUM,) if num_chains == 1 else glm.ALL_FORMS
    for form in forms:
        a = glm.arrays(structure, pot.data, pot.dim, jnp.float32)
        g = jax.jit(glm_gradient(structure, form, num_chains))
        for th in (thetas, thetas_rand):
            x = th[0] if num_chains == 1 else th
            expected = np.stack([np.asarray(general(t)) for t in th])
            got = np.asarray(g(x, pot.data, a)).reshape(expected.shape)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=form)


def test_glm_gradient_at_logits_zero_is_half_minus_y():
    """theta = 0 gives logits = 0 exactly: d l_i / d eta = sigmoid(0) - y_i = 1/2 - y_i (NumPyro's own formula
    differentiates to -y_i there; both paths must give the exact value)."""
    X, y = logistic_data(30, 3, seed=2)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    structure, _ = glm.detect(pot)
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32)
    got = np.asarray(glm_gradient(structure, glm.FEATURES, 1)(jnp.zeros(3), pot.data, a))
    expected = X.astype(np.float64).T @ (0.5 - y.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    full = gradients.build(pot, batch_size=None, clipped=False)
    np.testing.assert_allclose(np.asarray(full(None, jnp.zeros(3), pot.data)), expected,
                               rtol=1e-5, atol=1e-6)


def test_choose_form_returns_a_form_and_is_cached():
    pot = _pot(logistic, m=100, d=3)
    structure, _ = glm.detect(pot)
    f = glm.choose_form(structure, pot.data, 3, 4, jnp.float32, cache_key="t", steps=4, repeats=1)
    assert f in glm.FORMS_CHAINS
    assert glm.choose_form(structure, pot.data, 3, 4, jnp.float32, cache_key="t") == f
    assert glm.choose_form(structure, pot.data, 3, 1, jnp.float32, steps=4, repeats=1) in glm.FORMS_SINGLE
    assert glm.choose_form(structure, pot.data, 3, 4, jnp.float32, forms=(glm.ROWS,)) == glm.ROWS


def test_choose_form_remembers_its_measurement_in_bayesdp_s_cache_folder(tmp_path, monkeypatch):
    """A fresh process measures the layouts (0.2 s of a CLI release) and keeps the choice in the folder of
    bayesdp's compilation cache (a JSON map, mode 0600); once two processes in a row chose the same layout, it is
    read back instead of measuring (one timing on a busy machine once kept a layout 0.69x as fast as the best);
    nothing is kept when bayesdp's cache is off; an unreadable file means measuring again."""
    import json
    import os
    import stat

    pot = _pot(logistic, m=100, d=3)
    structure, _ = glm.detect(pot)
    forms = (glm.ROWS, glm.FEATURES)
    monkeypatch.setattr(glm, "in_use", lambda: None)                   # cache off: nothing written
    glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms, steps=4, repeats=1)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(glm, "in_use", lambda: tmp_path)
    first = glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms, steps=4, repeats=1)
    path = tmp_path / glm.FORMS_FILE
    saved = json.loads(path.read_text())
    assert list(saved.values()) == [{"form": first, "agree": 1}] and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [glm.FORMS_FILE]         # no temporary file left
    (key,) = saved
    assert key.endswith("|y|100|3|1|float32|rows,features")                 # site and shapes, no data
    other = glm.FEATURES if first == glm.ROWS else glm.ROWS
    # one earlier measurement (and the format before confirmations, a bare name) is not enough: measured again,
    # and the count goes up only where the new measurement agrees
    for earlier in ({"form": other, "agree": 1}, other):
        path.write_text(json.dumps({key: earlier}))
        got = glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms, steps=4, repeats=1)
        assert json.loads(path.read_text())[key] == {"form": got, "agree": 2 if got == other else 1}
    # a damaged count (not a whole number >= 0) counts as no agreement: measured, and never a crash, also when the
    # measurement agrees with the saved layout (made so: the first layout measured fastest)
    with monkeypatch.context() as mp:
        mp.setattr(glm.np, "argmin", lambda values: 0)
        for bad in ("x", -5, 2.5, True):
            path.write_text(json.dumps({key: {"form": forms[0], "agree": bad}}))
            assert glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms, steps=4, repeats=1) == forms[0]
            assert json.loads(path.read_text())[key] == {"form": forms[0], "agree": 1}
    # two agreeing processes before this one: read back, nothing measured (a measurement would jit)
    path.write_text(json.dumps({key: {"form": other, "agree": glm.CONFIRMATIONS}}))
    monkeypatch.setattr(glm.jax, "jit", lambda *a, **k: pytest.fail("measured although a choice was confirmed"))
    assert glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms) == other
    monkeypatch.undo()
    monkeypatch.setattr(glm, "in_use", lambda: tmp_path)
    path.write_text("{not json")                                               # unreadable: measured again
    assert glm.choose_form(structure, pot.data, 3, 1, jnp.float32, forms=forms, steps=4, repeats=1) in forms
    assert json.loads(path.read_text())[key]["form"] in forms


def _general_only(monkeypatch):
    monkeypatch.setattr(glm, "detect", lambda potential: (None, "disabled in the test"))


@pytest.mark.parametrize("num_chains", [1, 3])
@pytest.mark.parametrize("model", [logistic, intercept_features])
def test_sampler_glm_path_equals_general_path(monkeypatch, num_chains, model):
    X, y = logistic_data(80, 3, seed=4)
    kw = dict(sampler="ula", step_size=1e-2, num_steps=60, num_chains=num_chains, release="path",
              uncertified=True, init="prior", init_key=jax.random.key(9))
    fast = Sampler(model, {"X": X, "y": y}, **kw).run(jax.random.key(5))
    assert fast.gradient_path.startswith("batched GLM gradient")
    with monkeypatch.context() as mp:
        _general_only(mp)
        slow = Sampler(model, {"X": X, "y": y}, **kw).run(jax.random.key(5))
    assert slow.gradient_path.startswith("general")
    np.testing.assert_allclose(fast.get_unconstrained_samples(), slow.get_unconstrained_samples(), rtol=1e-4,
                               atol=1e-5)


def test_first_ula_steps_are_the_certified_update():
    """x_1 = x_0 - gamma grad U(x_0) + sqrt(2 gamma / beta) z, z of chain c = the block's N(0, I) draws of its key."""
    X, y = logistic_data(50, 3, seed=6)
    gamma, beta, K = 0.01, 2.0, 2
    x0 = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0]])  # the second chain starts at logits = 0
    s = Sampler(logistic, {"X": X, "y": y}, step_size=gamma, inverse_temperature=beta, num_steps=2, num_chains=K,
                release="path", uncertified=True, init=x0)
    out = s.run(jax.random.key(7)).get_unconstrained_samples()
    assert s.gradient_path.startswith("batched GLM gradient")
    keys = jax.random.split(jax.random.key(7), K)
    Xd, yd = X.astype(np.float64), y.astype(np.float64)
    for c in range(K):
        z = np.asarray(jax.random.normal(jax.random.fold_in(keys[c], 0), (2, 3), jnp.float32), np.float64)
        x = x0[c]
        for t in range(2):
            g = Xd.T @ (1 / (1 + np.exp(-Xd @ x)) - yd) + x  # prior N(0, 1)
            x = x - gamma * g + np.sqrt(2 * gamma / beta) * z[t]
            np.testing.assert_allclose(out[c, t], x, rtol=1e-4, atol=1e-5)


def test_ula_vectorized_equals_sequential_with_glm_path():
    X, y = logistic_data(60, 3)
    kw = dict(sampler="ula", step_size=1e-2, num_steps=50, num_chains=3, uncertified=True, release="path",
              init="prior", init_key=jax.random.key(2))
    a = Sampler(logistic, {"X": X, "y": y}, chain_method="vectorized", **kw).run(jax.random.key(4))
    b = Sampler(logistic, {"X": X, "y": y}, chain_method="sequential", **kw).run(jax.random.key(4))
    assert a.gradient_path.startswith("batched") and b.gradient_path.startswith("batched")
    np.testing.assert_allclose(a.get_unconstrained_samples(), b.get_unconstrained_samples(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(sampler="ula", clip_norm=0.5), dict(sampler="sgld", batch_size=10),
                                dict(sampler="sgld", batch_size=10, clip_norm=0.5)])
def test_clipped_and_minibatch_runs_keep_the_general_path(kw):
    X, y = logistic_data(40, 3)
    s = Sampler(logistic, {"X": X, "y": y}, step_size=1e-3, num_steps=5, uncertified=True, **kw)
    s.run(jax.random.key(0))
    assert s.gradient_path.startswith("general")


def test_glm_path_does_not_recompile_between_runs():
    X, y = logistic_data(40, 3)
    s = Sampler(logistic, {"X": X, "y": y}, step_size=1e-3, num_steps=7, num_chains=2, uncertified=True)
    s.run(jax.random.key(0))
    n = driver.TRACE_COUNT["n"]
    s.run(jax.random.key(1))
    X2, y2 = logistic_data(40, 3, seed=1)
    Sampler(logistic, {"X": X2, "y": y2}, step_size=1e-3, num_steps=7, num_chains=2, uncertified=True).run(
        jax.random.key(0))
    assert driver.TRACE_COUNT["n"] == n


# -- layouts per backend, memory ------------------------------------------------------------------------------

def test_backend_forms():
    # an accelerator measures the copy layouts (no CPU-cache blocking) while the copy is allowed, else rows only
    assert glm.backend_forms("gpu", 1, 10, None)[0] == (glm.ROWS, glm.FEATURES, glm.FEATURES_SUM)
    assert glm.backend_forms("tpu", 8, 10, None)[0] == (glm.ROWS, glm.FEATURES, glm.ROWS_FEATURES, glm.FEATURES_SUM)
    forms, why = glm.backend_forms("gpu", 8, glm.MAX_COPY_BYTES + 1, None)
    assert forms == (glm.ROWS,) and "exceeds max_copy_bytes" in why
    assert glm.backend_forms("gpu", 1, 10, 0)[0] == (glm.ROWS,)
    assert glm.backend_forms("gpu", 1, 10, 10)[0] == glm.ACCEL_FORMS_SINGLE      # at the limit: allowed
    assert glm.FEATURES_SUM in glm.NEEDS_COPY and glm.FEATURES_SUM not in glm.FORMS_CHAINS   # not a CPU candidate
    assert glm.backend_forms("cpu", 1, 10, None)[0] == glm.FORMS_SINGLE
    assert glm.backend_forms("cpu", 8, 10, None)[0] == glm.FORMS_CHAINS
    forms, why = glm.backend_forms("cpu", 1, glm.MAX_COPY_BYTES + 1, None)
    assert forms == (glm.ROWS, glm.ROW_BLOCKS) and "exceeds max_copy_bytes" in why
    assert glm.backend_forms("cpu", 1, 10, 0)[0] == (glm.ROWS, glm.ROW_BLOCKS)
    assert not set(glm.backend_forms("cpu", 1, 10, 0)[0]) & glm.NEEDS_COPY


@pytest.mark.parametrize("num_chains", [1, 3])
def test_row_blocks_with_a_last_block_overlapping(monkeypatch, num_chains):
    # 50 records in blocks of 16: the last block is rows 34..49, of which 34..47 were summed already (masked)
    monkeypatch.setattr(glm, "BLOCK_ROWS", 16)
    pot = _pot(intercept_features, m=50, d=4, seed=5)
    structure, _ = glm.detect(pot)
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32, features=False)
    assert set(a) == {"y"}
    rng = np.random.default_rng(1)
    th = jnp.asarray(rng.normal(size=(num_chains, pot.dim)), jnp.float32)
    general = jax.jit(lambda t: gradients.build(pot, batch_size=None, clipped=False)(None, t, pot.data))
    expected = np.stack([np.asarray(general(t)) for t in th])
    x = th[0] if num_chains == 1 else th
    got = np.asarray(jax.jit(glm_gradient(structure, glm.ROW_BLOCKS, num_chains))(x, pot.data, a))
    np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-5, atol=1e-5)
    valid = jnp.arange(50) < 37   # a mask (records sharded with padding): only rows 0..36 count
    lik = jax.jit(glm.likelihood_gradient(structure, glm.ROW_BLOCKS, num_chains))
    sub = {k: v[:37] for k, v in pot.data.items()}
    ref = jax.jit(glm.likelihood_gradient(structure, glm.ROWS, num_chains))
    np.testing.assert_allclose(np.asarray(lik(x, pot.data, a, valid)),
                               np.asarray(ref(x, sub, {"y": a["y"][:37]})), rtol=1e-5, atol=1e-5)


def test_feature_major_copy_in_blocks_is_exact(monkeypatch):
    # blocks of 3 rows of JT for dim 7: blocks start at 0, 3 and 4 (the last one overlaps, recomputing rows)
    X, y = logistic_data(40, 7, seed=2)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    structure, _ = glm.detect(pot)
    monkeypatch.setattr(glm, "BLOCK_BYTES", 3 * 40 * 4)
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32)
    np.testing.assert_array_equal(np.asarray(a["JT"]), X.T)
    np.testing.assert_array_equal(np.asarray(a["c"]), 0.0)
    np.testing.assert_array_equal(np.asarray(a["y"]), y)


def test_no_copy_above_max_copy_bytes_and_gpu_layout(monkeypatch):
    X, y = logistic_data(80, 3, seed=4)
    kw = dict(sampler="ula", step_size=1e-2, num_steps=30, num_chains=2, release="path", uncertified=True)
    ref = Sampler(logistic, {"X": X, "y": y}, **kw).run(jax.random.key(1))
    lean = Sampler(logistic, {"X": X, "y": y}, max_copy_bytes=0, **kw).run(jax.random.key(1))
    assert "exceeds max_copy_bytes" in lean.gradient_path
    aux = lean._programs[2][1]
    assert set(aux) == {"y"}                       # no copy of the design
    monkeypatch.setattr(glm, "FORCE_BACKEND", "gpu")
    gpu_lean = Sampler(logistic, {"X": X, "y": y}, max_copy_bytes=0, **kw).run(jax.random.key(1))
    assert "layout 'rows' (gpu: a feature-major copy (0 MiB) exceeds max_copy_bytes" in gpu_lean.gradient_path
    assert set(gpu_lean._programs[2][1]) == {"y"}
    gpu = Sampler(logistic, {"X": X, "y": y}, **kw).run(jax.random.key(1))
    assert "(gpu: fastest measured layout)" in gpu.gradient_path
    assert any(f"layout {f!r} (gpu:" in gpu.gradient_path for f in glm.ACCEL_FORMS_CHAINS)
    for s in (lean, gpu_lean, gpu):
        np.testing.assert_allclose(s.get_unconstrained_samples(), ref.get_unconstrained_samples(), rtol=1e-4,
                                   atol=1e-5)
    with pytest.raises(Exception, match="max_copy_bytes = -1"):
        Sampler(logistic, {"X": X, "y": y}, max_copy_bytes=-1, **kw)


def test_certificate_states_the_arithmetic():
    X, y = logistic_data(20, 2)
    s = Sampler(logistic, {"X": X, "y": y}, step_size=1e-3, num_steps=3, uncertified=True)
    assert "Precision.HIGHEST" in s.certificate["assumptions"]["arithmetic"]


@pytest.mark.parametrize("num_chains", [1, 3])
def test_features_sum_masked_rows_and_in_the_sampler(monkeypatch, num_chains):
    """The accelerators' reduction layout: with a mask (records sharded with padding) only the valid rows count,
    and a sampler made to use it (as on a GPU) draws what the row-major layout draws, to float rounding."""
    pot = _pot(intercept_features, m=50, d=4, seed=6)
    structure, _ = glm.detect(pot)
    a = glm.arrays(structure, pot.data, pot.dim, jnp.float32, features=True)
    rng = np.random.default_rng(2)
    th = jnp.asarray(rng.normal(size=(num_chains, pot.dim)), jnp.float32)
    x = th[0] if num_chains == 1 else th
    valid = jnp.arange(50) < 41
    sub = {k: v[:41] for k, v in pot.data.items()}
    # the row-major layout on the valid rows alone (itself checked against NumPyro's gradient above)
    ref = np.asarray(jax.jit(glm.likelihood_gradient(structure, glm.ROWS, num_chains))(x, sub, {"y": a["y"][:41]}))
    got = np.asarray(jax.jit(glm.likelihood_gradient(structure, glm.FEATURES_SUM, num_chains))(x, pot.data, a, valid))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    X, y = logistic_data(60, 3, seed=4)
    runs = {}
    for form in (glm.ROWS, glm.FEATURES_SUM):
        monkeypatch.setattr(glm, "backend_forms", lambda *args, form=form: ((form,), "test"))
        s = Sampler(logistic, {"X": X, "y": y}, step_size=1e-2, num_steps=20, num_chains=num_chains,
                    uncertified=True)
        runs[form] = s.run(jax.random.key(3)).get_unconstrained_samples()
        assert f"layout {form!r}" in s.gradient_path
    np.testing.assert_allclose(runs[glm.FEATURES_SUM], runs[glm.ROWS], rtol=1e-4, atol=1e-5)
