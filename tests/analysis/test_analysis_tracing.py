"""Tracing: the model is traced once, abstractly, with a symbolic number of records; the analysis works
on one record's shapes and never on the data (so it cannot grow with the number of records) and gives
the same constants whatever the float precision.  Structural only: tests never time anything."""

import json
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.loading import builtin_models
from bayesdp.analysis.tracing import trace_program
from bayesdp.errors import ModelError

M = builtin_models()
RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 3))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y01 = (np.arange(40) % 2).astype(float)
DOM = ["X.norm=1", "y.values=0,1"]


def test_program_is_symbolic_in_the_number_of_records():
    p = trace_program(M["logistic"], {"X": (3,), "y": ()}, {"X": jnp.float32, "y": jnp.float32})
    shapes = [v.aval.shape for v in p.jaxpr.jaxpr.invars]
    # theta has a fixed shape; every data argument has the symbolic record count as its leading axis
    assert shapes[0] == (3,)
    assert all(not isinstance(s[0], int) and str(s[0]) == "m" for s in shapes[1:])
    assert p.sites["obs"].record_plates[0][0] == "data"


def test_per_record_constants_do_not_depend_on_the_number_of_records():
    dom = Domain.parse(DOM)
    small = analyze(M["logistic"], {"X": X, "y": Y01}, dom).constants
    huge = analyze(M["logistic"], None, dom, data_size=10**12, dim=3).constants   # never materialised
    R = dom.get("X").certified_norm             # 1 inflated by 1 + NORM_RTOL (float data at the bound)
    assert huge.record_grad_bound == small.record_grad_bound == R
    assert huge.grad_bound == pytest.approx(10**12 * R, rel=1e-15) and small.grad_bound == pytest.approx(40 * R)
    assert huge.grad_bound >= 10**12 * R and small.grad_bound >= 40 * R
    assert huge.strong_convexity == small.strong_convexity == 1.0


_X64 = """
import json, sys
import numpy as np
from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.loading import builtin_models
M = builtin_models()
rng = np.random.default_rng(0)
X = rng.standard_normal((30, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
out = {}
for name, dom, kw, y in [("logistic", ["X.norm=1", "y.values=0,1"], {"prior_scale": 0.3}, np.arange(30) % 2),
                         ("softmax", ["X.norm=1", "y.values=0,1,2"], {"num_classes": 3}, np.arange(30) % 3),
                         ("robust", ["X.norm=1"], {"df": 3.0, "noise_scale": 0.7}, rng.standard_normal(30))]:
    c = analyze(M[name], {"X": X, "y": y}, Domain.parse(dom), model_kwargs=kw).constants.to_dict()
    c.pop("provenance")
    out[name] = c
print(json.dumps(out))
"""


def test_same_constants_with_x64_on_and_off():
    res = []
    for flag in ("0", "1"):
        env = {**os.environ, "JAX_ENABLE_X64": flag, "JAX_PLATFORMS": "cpu"}
        r = subprocess.run([sys.executable, "-c", _X64], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        res.append(json.loads(r.stdout.strip().splitlines()[-1]))
    for name in res[0]:
        for k, v in res[0][name].items():
            w = res[1][name][k]
            if isinstance(v, float):
                # hyperparameters are float32 constants in one run and float64 in the other: the constants
                # differ by the float32 rounding of the hyperparameters only
                assert w == pytest.approx(v, rel=3e-7), (name, k)
            else:
                assert v == w, (name, k)


def m_invalid_scale_from_data(X, y=None):
    # the Student-t scale is computed from the data and is negative for every record of the domain:
    # refused by interval arithmetic over the domain (no record is ever evaluated)
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(3.0, X @ w, -1.0 - X[:, 0] ** 2), obs=y)


def m_scale_zero_somewhere(X, y=None):
    # scale = |x_0|: valid (> 0) on typical records but 0 at records of the domain with x_0 = 0
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.StudentT(3.0, X @ w, jnp.abs(X[:, 0])), obs=y)


def m_python_branch_on_latent(X, y=None):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sign = 1.0 if float(w[0]) >= 0 else -1.0
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=sign * (X @ w)), obs=y)


def m_numpy_on_data(X, y=None):
    # numpy on a data argument would hide the data from the program (it would become a constant)
    Xn = np.asarray(X)
    w = numpyro.sample("w", dist.Normal(0, 1).expand([Xn.shape[1]]).to_event(1))
    with numpyro.plate("data", Xn.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=Xn @ w), obs=y)


def test_invalid_parameters_over_the_domain_are_refused():
    with pytest.raises(ModelError, match=r"'obs': its scale can be -2 .*\[-2, -1\]\) but must be > 0"):
        analyze(m_invalid_scale_from_data, {"X": X, "y": Y01}, Domain.parse(["X.norm=1"]))
    with pytest.raises(ModelError, match=r"'obs': its scale can be 0 .*must be > 0"):
        analyze(m_scale_zero_somewhere, {"X": X, "y": Y01}, Domain.parse(["X.norm=1"]))


def test_untraceable_models_are_refused_with_the_cause():
    dom = Domain.parse(DOM)
    with pytest.raises(ModelError, match=r"m_numpy_on_data cannot be analysed .*NumPy at test_analysis_tracing.py:\d+ .*use jax.numpy"):
        analyze(m_numpy_on_data, {"X": X, "y": Y01}, dom)
    with pytest.raises(ModelError, match=r"m_python_branch_on_latent cannot be analysed .*control flow .* at "
                       r"test_analysis_tracing.py:\d+ .*jnp.where or jax.lax.cond"):
        analyze(m_python_branch_on_latent, {"X": X, "y": Y01}, dom)


def test_cli_jax_settings_only_in_the_cli_process(monkeypatch):
    from bayesdp import jax_cache
    from bayesdp.commands import certify as cmd

    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    assert not jax_cache.is_cli_process()      # pytest calling main() in process: no process-wide settings
    cmd.prepare_jax()
    assert "JAX_PLATFORMS" not in os.environ
    monkeypatch.setenv("BAYESDP_JAX_CACHE", "0")
    assert jax_cache.disabled_by_env()
    monkeypatch.setenv("BAYESDP_JAX_CACHE", "/some/dir")
    assert not jax_cache.disabled_by_env() and str(jax_cache.cache_dir()) == "/some/dir"


