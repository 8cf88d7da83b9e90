"""Certified ULA and SGLD on a NumPyro logistic regression: each run carries its certificate.

Run:  python examples/sample_logistic.py            (about 20 s on 2 CPU cores)
Same from the shell:
    bayesdp sample logistic --data d.npz --domain X.norm=1.0 y.values=0,1 --sampler ula \
        --step-size 1e-4 --num-steps 2000 --num-chains 4 --out run.nc
"""

import json

import numpy as np

import bayesdp
from bayesdp.models import logistic  # the built-in NumPyro model (w ~ N(0, I), y ~ Bernoulli(logits=X w))

# Public domain of one record: |x| <= 1, y in {0, 1}.  The data must lie in it (checked, never clamped).
domain = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
rng = np.random.default_rng(0)
m, d = 2_000, 5
X = rng.normal(size=(m, d)).astype(np.float32)
X /= np.maximum(1.0, 1.001 * np.linalg.norm(X, axis=1, keepdims=True))
w_true = np.array([2.0, -1.0, 0.5, 0.0, 1.5])
y = (rng.uniform(size=m) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float32)

for kernel in (bayesdp.ULA(logistic, domain=domain, step_size=1e-4),   # full batch: a strong last-draw certificate
               bayesdp.SGLD(logistic, domain=domain, step_size=1e-4, batch_size=100, clip_norm=0.1)):
    mcmc = bayesdp.PrivateMCMC(kernel, num_steps=2_000, num_chains=4, release="final", delta=1e-5)
    mcmc.run(X=X, y=y)  # keys from the OS CSPRNG: the released draws cannot be recomputed by anyone
    cert = mcmc.certificate
    print(f"{cert['mechanism']}: epsilon = {cert['epsilon']:.4g} at delta = {cert['delta']:g} for "
          f"{cert['configuration']['num_chains']} released chains ({', '.join(cert['sources'])})")
    print({k: v.mean(axis=0).round(2) for k, v in mcmc.get_samples().items()})
    idata = mcmc.to_inference_data()  # only the released draws; the certificate in posterior.attrs
    assert json.loads(idata.posterior.attrs["bayesdp_certificate"])["certified"]
