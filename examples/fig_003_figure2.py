"""Reproduce 003 (Asoodeh, Diaz, Calmon) Figure 2: delta against epsilon, 003 Theorem 4 vs 003 Proposition 1
(= 002 Theorem 5 converted) for indices i = 1, 20, 39.

Parameters (SEEDS.md §2.10): sigma = 2, L = 1, beta = 0.5, eta = 0.5, rho = 0 (M = 1), D_K = 1, n = 40.
Usage: python examples/fig_003_figure2.py [out.png]
"""

from __future__ import annotations

import sys

import numpy as np

from bayesdp.theorems import hockey_stick as H

PARAMS = dict(lipschitz=1.0, smoothness=0.5, strong_convexity=0.0, step_size=0.5, noise_scale=2.0, diameter=1.0,
              data_size=40)
INDICES = (1, 20, 39)


def figure_data(eps_grid=None, params=PARAMS, indices=INDICES, allow_infeasible=False) -> dict:
    """{i: (eps, delta_theorem_4, delta_proposition_1)} with delta arrays over ``eps_grid``."""
    eps = np.linspace(0.05, 2.0, 40) if eps_grid is None else np.asarray(eps_grid, float)
    p = dict(params)
    out = {}
    for i in indices:
        t4 = H.theorem_4(p["lipschitz"], p["smoothness"], p["strong_convexity"], p["step_size"], p["noise_scale"],
                         p["diameter"], p["data_size"], i, allow_infeasible=allow_infeasible)
        p1 = H.proposition_1(p["lipschitz"], p["smoothness"], p["strong_convexity"], p["step_size"],
                             p["noise_scale"], p["data_size"], i, allow_infeasible=allow_infeasible)
        out[i] = (eps, np.array([t4.delta(e) for e in eps]), np.array([p1.delta(e) for e in eps]))
    return out


def plot(data: dict, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for k, (i, (eps, d4, dp)) in enumerate(sorted(data.items())):
        col = f"C{k}"
        ax.semilogy(eps, np.maximum(d4, 1e-300), "-", color=col, label=f"003 Thm 4, i={i}")
        ax.semilogy(eps, np.maximum(dp, 1e-300), "--", color=col, label=f"003 Prop 1, i={i}")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> str:
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "fig_003_figure2.png"
    plot(figure_data(), path, "003 Figure 2: sigma=2, L=1, beta=0.5, eta=0.5, rho=0, D_K=1, n=40")
    return path


if __name__ == "__main__":
    print(main())
