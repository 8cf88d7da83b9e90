"""Chains and records sharded over 4 forced host devices (subprocess: XLA_FLAGS must precede jax import)."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import jax, numpy as np
from _sampler_models import logistic, logistic_data
from bayesdp.samplers import Sampler
assert jax.device_count() == 4, jax.devices()
X, y = logistic_data(64, 3)
kw = dict(step_size=1e-3, num_steps=50, num_chains=4, uncertified=True, release="path")
out = {}
configs = {"vectorized": {}, "parallel": {"chain_method": "parallel"},
           "shard_data": {"shard_data": True}, "both": {"chain_method": "parallel", "shard_data": True},
           "sgld_parallel": {"chain_method": "parallel", "sampler": "sgld", "batch_size": 8, "clip_norm": 0.5},
           "sgld_vectorized": {"sampler": "sgld", "batch_size": 8, "clip_norm": 0.5}}
for name in sys.argv[2].split(","):
    extra = configs[name]
    s = Sampler(logistic, {"X": X, "y": y}, **{**kw, **extra}).run(jax.random.key(0))
    out[name] = s.get_samples(group_by_chain=True)["theta"].tolist()
try:
    Sampler(logistic, {"X": X, "y": y}, **{**kw, "num_chains": 3, "chain_method": "parallel"})
    out["error"] = None
except Exception as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


def _run(names):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, "-c", SCRIPT, here, ",".join(names)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_chains_and_records_sharded_match_vectorized():  # a subprocess with a fresh JAX: about 4 s
    import numpy as np

    out = _run(["vectorized", "both"])
    np.testing.assert_allclose(np.asarray(out["both"]), np.asarray(out["vectorized"]), rtol=1e-4, atol=1e-5)
    assert "not a multiple of the 4 devices" in out["error"]


@pytest.mark.slow
def test_sharded_runs_match_vectorized():
    import numpy as np

    out = _run(["vectorized", "parallel", "shard_data", "both", "sgld_parallel", "sgld_vectorized"])
    ref = np.asarray(out["vectorized"])
    assert ref.shape == (4, 50, 3)
    for name in ("parallel", "shard_data", "both"):
        np.testing.assert_allclose(np.asarray(out[name]), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["sgld_parallel"]), np.asarray(out["sgld_vectorized"]), rtol=1e-4,
                               atol=1e-5)
    assert "not a multiple of the 4 devices" in out["error"]
