"""Two local CPU processes joined by ``jax.distributed`` (JAX's multi-controller runtime): records split over the
processes (each passes only its own records, counts 40 and 23; ULA and SGLD), chains split over the processes
(ULA), keys from the OS CSPRNG agreed by all; the draws and certificates equal those of one process holding all the data."""

import json
import os
import socket
import subprocess
import sys

import numpy as np

from bayesdp.samplers import Sampler

from _sampler_models import logistic, logistic_data, xla_flags

WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import jax
pid, port = int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid, initialization_timeout=60)
import numpy as np
from _sampler_models import logistic, logistic_data
from bayesdp.samplers import Sampler, glm
glm.FORCE_BACKEND = "gpu"   # the accelerator layout ("rows", no copy): no layout measurement, a shorter test
X, y = logistic_data(63, 3)
cut = (0, 40, 63)[pid:pid + 2]
mine = {"X": X[cut[0]:cut[1]], "y": y[cut[0]:cut[1]]}
dom = ["X.norm=1.0", "y.values=0,1"]
out = {"devices": jax.device_count(), "process": jax.process_index()}
ula = Sampler(logistic, mine, shard_data=True, step_size=1e-3, num_steps=30, num_chains=2, release="path", domain=dom)
out["ula_shard"] = ula.run(0).get_unconstrained_samples().tolist()
out["ula_eps"], out["ula_path"] = ula.certificate["epsilon"], ula.gradient_path
out["placement"] = ula.certificate["assumptions"]["placement"]
out["secure"] = ula.run().get_unconstrained_samples().tolist()       # OS CSPRNG keys: process 0's, everywhere
out["secure_label"] = ula.key_source
sgld = Sampler(logistic, mine, shard_data=True, sampler="sgld", batch_size=8, clip_norm=0.5, step_size=1e-3,
               num_steps=30, release="path", domain=dom)
out["sgld_shard"] = sgld.run(0).get_unconstrained_samples().tolist()
out["sgld_eps"] = sgld.certificate["epsilon"]
par = Sampler(logistic, {"X": X, "y": y}, chain_method="parallel", step_size=1e-3, num_steps=30, num_chains=2,
              release="path", uncertified=True)
out["ula_parallel"] = par.run(0).get_unconstrained_samples().tolist()
print("RESULT " + json.dumps(out), flush=True)
jax.distributed.shutdown()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = xla_flags()  # one device per process
    port = str(_free_port())
    return [subprocess.Popen([sys.executable, "-c", WORKER, here, str(pid), port], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for pid in (0, 1)]


def _collect(procs, timeout=240):
    outs = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=timeout)
            lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
            outs.append((p.returncode, json.loads(lines[-1][7:]) if lines else None, stderr[-3000:]))
    finally:
        for p in procs:  # never leave a worker behind (a peer that died leaves the other waiting)
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


def test_two_processes_match_one_process():  # about 10 s on 2 cores (three processes compile)
    procs = _launch()   # the workers start while this process computes the single-process reference
    X, y = logistic_data(63, 3)
    dom = ["X.norm=1.0", "y.values=0,1"]
    ula = Sampler(logistic, {"X": X, "y": y}, step_size=1e-3, num_steps=30, num_chains=2, release="path",
                  domain=dom).run(0)
    sgld = Sampler(logistic, {"X": X, "y": y}, sampler="sgld", batch_size=8, clip_norm=0.5, step_size=1e-3,
                   num_steps=30, release="path", domain=dom).run(0)
    results = _collect(procs)
    for rc, out, err in results:
        assert rc == 0 and out is not None, err
    a, b = results[0][1], results[1][1]
    assert a["devices"] == 2 and {a["process"], b["process"]} == {0, 1}
    assert "records split over 2 device(s) in 2 process(es): 40 rows per device, 17 padded row(s)" in a["placement"]
    assert a["ula_path"].startswith("batched GLM gradient")
    for out in (a, b):
        np.testing.assert_allclose(out["ula_shard"], ula.get_unconstrained_samples(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out["sgld_shard"], sgld.get_unconstrained_samples(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(out["ula_parallel"], ula.get_unconstrained_samples(), rtol=1e-4, atol=1e-5)
        assert out["ula_eps"] == ula.certificate["epsilon"] and out["sgld_eps"] == sgld.certificate["epsilon"]
        assert out["secure_label"].startswith("OS CSPRNG")
    assert a["secure"] == b["secure"]                       # both processes ran process 0's CSPRNG keys
    assert not np.allclose(a["secure"], a["ula_shard"])
