"""Chains and records over devices (bayesdp.samplers.sharding): the layout with padding, exact masking, and whole
runs on 4 forced host devices (a subprocess: XLA_FLAGS must precede the jax import) that equal the unsharded
run for record counts the devices do not divide, with the same certificate."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.samplers import ModelPotential, glm, gradients
from bayesdp.samplers.sharding import RecordLayout

from _sampler_models import logistic, logistic_data, xla_flags


# -- the layout (pure) ------------------------------------------------------------------------------------

def test_layout_one_process_pads_at_the_end():
    lay = RecordLayout.build([5], [4])          # 5 records on 4 devices: 2 rows each, the last device empty
    assert (lay.shard_size, lay.padded_size, lay.valid_rows) == (2, 8, (2, 2, 1, 0))
    np.testing.assert_array_equal(np.asarray(lay.rows(jnp.arange(5))), np.arange(5))
    lay = RecordLayout.build([64], [4])
    assert (lay.shard_size, lay.valid_rows) == (16, (16, 16, 16, 16))


def test_layout_several_processes_maps_records_to_their_rows():
    # process 0: records 0..2 on 2 devices, process 1: records 3..9 on 2 devices; L = max(ceil(3/2), ceil(7/2)) = 4
    lay = RecordLayout.build([3, 7], [2, 2])
    assert (lay.data_size, lay.shard_size, lay.padded_size) == (10, 4, 16)
    assert lay.valid_rows == (3, 0, 4, 3)
    rows = np.asarray(lay.rows(jnp.arange(10)))
    np.testing.assert_array_equal(rows, [0, 1, 2, 8, 9, 10, 11, 12, 13, 14])
    valid = np.concatenate([np.arange(lay.shard_size) < v for v in lay.valid_rows])
    assert valid[rows].all() and valid.sum() == 10         # every record on a valid row, every valid row a record
    assert lay.host_rows(1, 8, 12) == (0, 4) and lay.host_rows(1, 12, 16) == (4, 7)
    assert lay.host_rows(0, 4, 8) == (3, 3)                 # device 1 of process 0: padding only


def test_layout_refuses_a_process_without_records():
    from bayesdp.errors import AssumptionError

    with pytest.raises(AssumptionError, match="process 1 passed 0 records"):
        RecordLayout.build([4, 0], [1, 1])


# -- masking is exact ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("clipped", [False, True])
def test_padded_rows_contribute_exactly_nothing(clipped):
    X, y = logistic_data(12, 3, seed=3)
    pot = ModelPotential(logistic, {"X": X, "y": y})
    lik = jax.jit(gradients.masked_likelihood(pot, clipped))
    theta = jnp.asarray([0.4, -1.0, 2.0], jnp.float32)
    # rows 9..11 are padding: copies of row 0 scaled up (finite, with gradients far above the clip)
    Xp = np.concatenate([X[:9], 50 * X[:1].repeat(3, 0)])
    valid = jnp.arange(12) < 9
    got = np.asarray(lik(theta, {"X": jnp.asarray(Xp), "y": jnp.asarray(y)}, valid, jnp.float32(0.3)))
    # other padding, the same valid rows: the same floats (a padded row's term is an exact zero, whatever its
    # values; the same length keeps the backend's summation order, which on a GPU depends on the length)
    other = np.concatenate([X[:9], -7 * X[1:2].repeat(3, 0)])
    other_y = np.concatenate([y[:9], 1 - y[9:]])
    again = np.asarray(lik(theta, {"X": jnp.asarray(other), "y": jnp.asarray(other_y)}, valid, jnp.float32(0.3)))
    np.testing.assert_array_equal(got, again)
    only = np.asarray(lik(theta, {"X": jnp.asarray(X[:9]), "y": jnp.asarray(y[:9])}, jnp.ones(9, bool),
                          jnp.float32(0.3)))
    # the 9 rows alone: equal up to the order of the sum (bitwise on a CPU; 1 ulp apart on an H100)
    np.testing.assert_allclose(got, only, rtol=4e-7, atol=0)
    p = 1 / (1 + np.exp(-X[:9].astype(float) @ np.asarray(theta, float)))
    per = (p - y[:9])[:, None] * X[:9].astype(float)
    if clipped:
        per = per * np.minimum(1.0, 0.3 / np.linalg.norm(per, axis=1))[:, None]
    np.testing.assert_allclose(got, per.sum(axis=0), rtol=1e-5, atol=1e-6)


# -- whole runs on 4 devices --------------------------------------------------------------------------------

SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import jax, numpy as np
from _sampler_models import gaussian_mean, logistic, logistic_data
from bayesdp.samplers import Sampler, glm
assert jax.device_count() == 4, jax.devices()
cases = json.loads(sys.argv[2])
out = {}
for name, (m, extra, placements) in cases.items():
    X, y = logistic_data(m, 3, seed=m)
    if extra.pop("force_backend", None):
        glm.FORCE_BACKEND = "gpu"
    data = {"y": (X[:, 0] * 2).astype(np.float32)} if extra.pop("gaussian", False) else {"X": X, "y": y}
    model = gaussian_mean if "X" not in data else logistic
    kw = dict(step_size=1e-3, num_steps=40, num_chains=4, release="path", **extra)
    if "domain" not in kw:
        kw["uncertified"] = True
    ref = Sampler(model, data, **kw).run(jax.random.key(0))
    row = {"ref": ref.get_unconstrained_samples().tolist(), "path": ref.gradient_path,
           "eps": ref.certificate["epsilon"]}
    for p in placements:
        s = Sampler(model, data, **{**kw, **p}).run(jax.random.key(0))
        row[json.dumps(p)] = {"draws": s.get_unconstrained_samples().tolist(), "path": s.gradient_path,
                              "eps": s.certificate["epsilon"], "placement": s.certificate["assumptions"]["placement"]}
    glm.FORCE_BACKEND = None
    out[name] = row
try:
    Sampler(logistic, {"X": X, "y": y}, step_size=1e-3, num_steps=5, num_chains=3, chain_method="parallel",
            uncertified=True)
    out["error"] = None
except Exception as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""

SHARD = {"shard_data": True}
PARALLEL = {"chain_method": "parallel"}
BOTH = {"shard_data": True, "chain_method": "parallel"}
DOMAIN = ["X.norm=1.0", "y.values=0,1"]


def _run(cases):
    env = dict(os.environ, XLA_FLAGS=xla_flags("--xla_force_host_platform_device_count=4"), JAX_PLATFORMS="cpu")
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, "-c", SCRIPT, here, json.dumps(cases)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _check(out, name, exact=False):
    row = out[name]
    ref = np.asarray(row["ref"])
    for key, got in row.items():
        if key in ("ref", "path", "eps"):
            continue
        draws = np.asarray(got["draws"])
        assert draws.shape == ref.shape
        if exact:      # SGLD: the batches are fetched bit for bit, the gradient code is the unsharded one
            np.testing.assert_allclose(draws, ref, rtol=1e-6, atol=1e-7, err_msg=f"{name} {key}")
        else:          # full-batch sums: per-device partial sums, then a psum (float rounding only)
            np.testing.assert_allclose(draws, ref, rtol=1e-4, atol=1e-5, err_msg=f"{name} {key}")
        assert got["eps"] == row["eps"]
        yield key, got


def test_sharded_runs_equal_unsharded_for_any_record_count():  # one subprocess, about 15 s on 2 cores
    out = _run({
        # 5 records on 4 devices: rows (2, 2, 1, 0); the GLM path sharded, with its certificate
        "ula_glm_5": [5, {"domain": DOMAIN}, [SHARD, BOTH]],
        # 63 records, clipped per-record gradients of the padded rows masked
        "ula_clip_63": [63, {"clip_norm": 0.5}, [SHARD]],
        "sgld_63": [63, {"sampler": "sgld", "batch_size": 8, "clip_norm": 0.5, "domain": DOMAIN},
                    [SHARD, PARALLEL]],
    })
    for key, got in _check(out, "ula_glm_5"):
        assert got["path"].startswith("batched GLM gradient"), got["path"]
        assert "2 rows per device, 3 padded row(s)" in got["placement"]
    assert out["ula_glm_5"]["eps"] is not None
    list(_check(out, "ula_clip_63"))
    list(_check(out, "sgld_63", exact=True))
    assert out["sgld_63"]["eps"] is not None
    assert "not a multiple of the 4 devices" in out["error"]


# in two subprocesses (record counts below and above the devices' multiples), so that the slow tier's workers share
# them
@pytest.mark.slow
@pytest.mark.parametrize("counts", [(4, 7), (64, 101)], ids=["small", "large"])
def test_every_placement_and_estimator_sharded(counts):
    cases = {}
    for m in counts:
        cases[f"ula_glm_{m}"] = [m, {}, [SHARD, PARALLEL, BOTH]]
        # a GPU's rules: no copy allowed (rows), and a copy allowed (the accelerator's layouts, measured)
        cases[f"ula_glm_rows_{m}"] = [m, {"force_backend": True, "max_copy_bytes": 0}, [SHARD, PARALLEL]]
        cases[f"ula_glm_accel_{m}"] = [m, {"force_backend": True}, [SHARD, PARALLEL]]
        cases[f"ula_general_{m}"] = [m, {"gaussian": True}, [SHARD, PARALLEL, BOTH]]
        cases[f"ula_clip_{m}"] = [m, {"clip_norm": 0.3}, [SHARD, PARALLEL]]
        cases[f"sgld_{m}"] = [m, {"sampler": "sgld", "batch_size": min(m, 8)}, [SHARD, PARALLEL, BOTH]]
        cases[f"sgld_clip_{m}"] = [m, {"sampler": "sgld", "batch_size": min(m, 3), "clip_norm": 0.5},
                                   [SHARD, PARALLEL]]
    out = _run(cases)
    for name in cases:
        list(_check(out, name, exact=name.startswith("sgld")))
        if name.startswith("ula_glm_rows"):
            assert all("'rows'" in g["path"] for k, g in out[name].items() if k.startswith("{"))
        if name.startswith("ula_glm_accel"):
            assert all(any(f"layout {f!r} (gpu:" in g["path"] for f in glm.ACCEL_FORMS_CHAINS)
                       for k, g in out[name].items() if k.startswith("{"))
