"""Certified ULA and SGLD on a NumPyro logistic regression: each run carries its certificate.

Run:  python examples/sample_logistic.py            (about 15 s on 2 CPU cores)
Same from the shell:
    bayesdp sample logistic --data d.npz --domain X.norm=1.0 y.values=0,1 --sampler ula \
        --step-size 1e-4 --num-steps 2000 --num-chains 4 --out run.nc
"""

import json

import numpy as np

from bayesdp.analysis.loading import load_model
from bayesdp.samplers import Sampler

logistic, _ = load_model("logistic")  # the built-in NumPyro model of models/ (w ~ N(0, I), y ~ Bernoulli(logits))

# Public domain of one record: |x| <= 1, y in {0, 1}.  The data must lie in it (checked).
rng = np.random.default_rng(0)
m, d = 2_000, 5
X = rng.normal(size=(m, d)).astype(np.float32)
X /= np.maximum(1.0, 1.001 * np.linalg.norm(X, axis=1, keepdims=True))
w_true = np.array([2.0, -1.0, 0.5, 0.0, 1.5])
y = (rng.uniform(size=m) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float32)

for config in (dict(sampler="ula"),  # full batch: the last-draw certificate is strong
               dict(sampler="sgld", batch_size=100, clip_norm=0.1)):  # minibatches, clipped record gradients
    sampler = Sampler(logistic, {"X": X, "y": y}, step_size=1e-4, num_steps=2_000, num_chains=4, release="final",
                      domain=["X.norm=1.0", "y.values=0,1"], delta=1e-5, **config)
    # The certificate is computed before anything runs; an uncovered configuration raises instead.
    cert = sampler.certificate
    print(f"{cert['mechanism']}: epsilon = {cert['epsilon']:.4g} at delta = {cert['delta']:g} for "
          f"{cert['configuration']['num_chains']} released chains ({', '.join(cert['sources'])})")
    sampler.run()  # keys from the OS CSPRNG: the released draws cannot be recomputed by anyone
    print(f"compile {sampler.timing['compile_s']:.2f} s, {sampler.timing['steps_per_s']:.0f} steps/s")
    print({k: v.mean(axis=0).round(2) for k, v in sampler.get_samples().items()})
    idata = sampler.to_inference_data()  # only the released draws; certificate in posterior.attrs
    assert json.loads(idata.posterior.attrs["bayesdp_certificate"])["certified"]
