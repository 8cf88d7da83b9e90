"""Private release from Python: a noisy posterior mean under a privacy budget.

Bayesian logistic regression on the bundled Breast Cancer Wisconsin (Diagnostic) data (CC BY 4.0,
bayesdp/data/ATTRIBUTION.md); releases, at epsilon = 1, the posterior mean of three coefficients
with secure Laplace noise calibrated to the synchronous-coupling sensitivity (004 Proposition 3.7),
charged to a ledger file.  The chain is run in memory and never published.

    python examples/release_logistic.py [LEDGER.json]
"""

import os
import sys
import tempfile

import bayesdp
from bayesdp.models import logistic
from bayesdp.publish.spec import Function


def main(ledger: str) -> None:
    data, domain, features = bayesdp.datasets.breast_cancer()      # a fixed public map puts |x| <= 1
    # three coefficients chosen before looking at the data: mean radius, mean texture, worst concave points
    picked = [0, 1, 27]
    kernel = bayesdp.ULA(logistic, domain=domain, step_size=0.005, model_kwargs={"prior_scale": 0.5})
    mcmc = bayesdp.PrivateMCMC(kernel, num_steps=4000, num_chains=2, release="path")
    mcmc.run(**data)                                                # not published: only the release is
    budget = bayesdp.Ledger.open(ledger, budget=3.0, dataset="breast cancer (bundled)")
    stat = Function(lambda s: s["w"][picked], lipschitz=3 ** 0.5,    # selecting 3 coordinates: sqrt(3)
                    names=[f"w[{j}]" for j in picked])
    r = bayesdp.release(mcmc, stat, epsilon=1.0, accountant=budget)
    print(f"{r.source}: epsilon {r.epsilon:g}, L1 sensitivity {r.sensitivity:.4g}, Laplace scale {r.noise_scale:.4g}")
    for it, j in zip(r.items, picked):
        print(f"  {it.name:<6} ({features[j]:<22}) released {it.value:8.4f}   95% interval "
              f"[{it.interval[0]:.3f}, {it.interval[1]:.3f}]")
    print(f"remaining budget: epsilon {r.remaining_budget['epsilon']:g} in {r.ledger}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(os.path.join(tmp, "ledger.json"))
