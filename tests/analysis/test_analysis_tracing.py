"""The jit tracing path (one XLA compilation per model instead of one per primitive) gives exactly the
analysis of the eager path, keeps numpyro's argument validation, and falls back to eager tracing for
models it cannot trace.  Structural only: tests never time anything."""

import json
import os
import sys

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesdp.analysis  # noqa: F401  (registers the module below)
from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.loading import builtin_models
from bayesdp.errors import ModelError

A = sys.modules["bayesdp.analysis.analyze"]
M = builtin_models()
RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 3))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
Y01 = (np.arange(40) % 2).astype(float)
CASES = [
    ("logistic", {"X": X, "y": Y01}, ["X.norm=1", "y.values=0,1"], {}, None),
    ("softmax", {"X": X, "y": np.arange(40) % 3}, ["X.norm=1", "y.values=0,1,2"], {"num_classes": 3}, None),
    ("robust", {"X": X, "y": RNG.standard_normal(40)}, ["X.norm=1"], {"df": 3.0}, None),
    ("sparse_logistic", {"X": X, "y": Y01}, ["X.min=-1", "X.max=1", "y.values=0,1"], {}, None),
    ("poisson", {"X": X, "y": np.arange(40) % 3}, ["X.norm=1"], {}, None),
    ("poisson", {"X": X, "y": np.arange(40) % 3}, ["X.norm=1"], {}, 2.0),
]


def _run(case):
    name, data, dom, kw, clip = case
    return json.dumps(analyze(M[name], data, Domain.parse(dom), model_kwargs=kw, clip_norm=clip).to_dict(),
                      sort_keys=True, default=str)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[4]}" for c in CASES])
def test_jit_and_eager_paths_agree(case, monkeypatch):
    used = []
    orig_t, orig_j = A._jit_traces, A._jit_jacobians

    def spy_t(*a, **k):
        r = orig_t(*a, **k)
        used.append(r is not None)
        return r

    def spy_j(*a, **k):
        r = orig_j(*a, **k)
        used.append(r is not None)
        return r

    monkeypatch.setattr(A, "_jit_traces", spy_t)
    monkeypatch.setattr(A, "_jit_jacobians", spy_j)
    fast = _run(case)
    assert used and all(used)             # the built-in models never fall back to eager tracing
    monkeypatch.setattr(A, "_jit_traces", lambda *a, **k: None)
    monkeypatch.setattr(A, "_jit_jacobians", lambda *a, **k: None)
    assert _run(case) == fast


def m_invalid_scale_from_data(X, y=None):
    # the likelihood scale is computed from the data and is negative: numpyro's argument validation
    # (on by default) must still reject it although the jit path traces the data
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Normal(X @ w, -1.0 - X[:, 0] ** 2), obs=y)


def m_python_branch_on_latent(X, y=None):
    # Python control flow on a latent value cannot be traced under jit (before as now, the Jacobian in
    # theta is taken under jit, so this predictor is reported unproven, with the same message)
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sign = 1.0 if float(w[0]) >= 0 else 1.0
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=sign * (X @ w)), obs=y)


def m_numpy_on_data(X, y=None):
    # numpy on the data arguments: not traceable with the data as jit arguments, fine eagerly
    Xn = np.asarray(X)
    w = numpyro.sample("w", dist.Normal(0, 1).expand([Xn.shape[1]]).to_event(1))
    with numpyro.plate("data", Xn.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=Xn @ w), obs=y)


def test_argument_validation_is_kept():
    with pytest.raises(ModelError, match="invalid scale"):
        analyze(m_invalid_scale_from_data, {"X": X, "y": Y01}, Domain.parse(["X.norm=1"]))


def test_untraceable_model_falls_back_to_eager(monkeypatch):
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    an = analyze(m_numpy_on_data, {"X": X, "y": Y01}, dom)
    ref = analyze(M["logistic"], {"X": X, "y": Y01}, dom)
    assert not an.unproven
    assert an.constants.record_grad_bound == pytest.approx(ref.constants.record_grad_bound)
    assert an.constants.strong_convexity == pytest.approx(ref.constants.strong_convexity)
    fast = analyze(m_python_branch_on_latent, {"X": X, "y": Y01}, dom)
    monkeypatch.setattr(A, "_jit_traces", lambda *a, **k: None)
    monkeypatch.setattr(A, "_jit_jacobians", lambda *a, **k: None)
    slow = analyze(m_python_branch_on_latent, {"X": X, "y": Y01}, dom)
    assert fast.to_dict() == slow.to_dict() and fast.unproven and fast.constants.strong_convexity == 1.0


def test_repeated_analysis_reuses_compiled_functions():
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    analyze(M["logistic"], {"X": X, "y": Y01}, dom)
    n = len(A._JIT_CACHE)
    analyze(M["logistic"], {"X": X[:20], "y": Y01[:20]}, dom)
    assert len(A._JIT_CACHE) == n


def test_cli_jax_settings_only_in_the_cli_process(monkeypatch):
    from bayesdp.commands import certify as cmd

    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    assert not cmd._is_cli_process()      # pytest calling main() in process: no process-wide settings
    cmd.prepare_jax()
    assert "JAX_PLATFORMS" not in os.environ
    monkeypatch.setenv(cmd.CACHE_ENV, "0")
    assert cmd._cache_dir() is None
    monkeypatch.setenv(cmd.CACHE_ENV, "/some/dir")
    assert cmd._cache_dir() == "/some/dir"
