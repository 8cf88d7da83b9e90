"""Private release from Python: the same pipeline as ``bayesdp release`` / ``bayesdp demo``.

Bayesian logistic regression on the bundled Breast Cancer Wisconsin (Diagnostic) data (CC BY 4.0,
bayesdp/data/ATTRIBUTION.md); releases, at epsilon = 1, the posterior mean of three coefficients
with secure Laplace noise calibrated to the synchronous-coupling sensitivity (004 Proposition 3.7),
charged to a ledger file.  The chain is run in memory and never published.

    python examples/release_logistic.py [LEDGER.json]
"""

import os
import sys
import tempfile

import numpy as np

from bayesdp.analysis.loading import load_model
from bayesdp.release import pipeline
from bayesdp.release.data import load_breast_cancer, scale_to_unit_ball
from bayesdp.release.pipeline import coordinate_subset_means, site_specs


def main(ledger: str) -> None:
    X, y, names = load_breast_cancer()
    data = {"X": scale_to_unit_ball(X).astype(np.float32), "y": y.astype(np.float32)}  # public map, |x| <= 1
    model, name = load_model("logistic")
    # three coefficients chosen before looking at the data: mean radius, mean texture, worst concave points
    coords = ["w[0]", "w[1]", "w[27]"]
    res = pipeline.run(
        model, data, domain=["X.norm=1", "y.values=0,1"],
        statistic=lambda smp, an: coordinate_subset_means(site_specs(smp, an), coords),  # L1 Lipschitz sqrt(3)
        epsilon=1.0, ledger=ledger, budget_epsilon=3.0, dataset="breast cancer (bundled)",
        sampler="ula", num_steps=4000, num_chains=2, model_kwargs={"prior_scale": 0.5}, model_name=name)
    r = res.result
    print(f"{r.source}: epsilon {r.epsilon:g}, L1 sensitivity {r.sensitivity:.4g}, Laplace scale {r.noise_scale:.4g}")
    for it, feature in zip(r.items, (names[0], names[1], names[27])):
        print(f"  {it.name:<6} ({feature:<22}) released {it.value:8.4f}   95% interval "
              f"[{it.interval[0]:.3f}, {it.interval[1]:.3f}]")
    print(f"remaining budget: epsilon {r.remaining_budget['epsilon']:g} in {r.ledger}")
    # res.nonprivate holds the estimate before noise: NOT FOR RELEASE (compare only, never publish)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(os.path.join(tmp, "ledger.json"))
