"""Reproduce 001 (Bravo, Flores-Mella, Guzmán) Figure 1: the factor 2*Tbar + V of Remark 5.3 / Theorem 1.2
(the RDP bound is 16 alpha L^2/(n^2 sigma^2) * min{T, 2 Tbar + V}) against the step size eta in
[n^-1, n^-1/5], for n = 1000, L = 1, M = 2, D = 1, p in {0.2, 0.4, 0.6, 1}.

The dump's y-axis (10^0.9 ... 10^1.2) suggests the paper plots ln(2 Tbar + V) on a log axis; we plot
2 Tbar + V itself on a log axis (SEEDS.md §3.6).  Usage: python examples/fig_001_figure1.py [out.png]
"""

from __future__ import annotations

import sys

import numpy as np

from bayesdp.theorems import pabi as P

N, L, M, D = 1000, 1.0, 2.0, 1.0
EXPONENTS = (0.2, 0.4, 0.6, 1.0)


def figure_data(etas=None) -> dict:
    """{p: (eta, Tbar, 2 Tbar + V)} over ``etas`` (default: 60 log-spaced points in [1/n, n^-1/5])."""
    if etas is None:
        eta = np.exp(np.linspace(np.log(1.0 / N), np.log(N ** -0.2), 60))
    else:
        eta = np.asarray(etas, float)
    out = {}
    for p in EXPONENTS:
        vals = [P.remark_5_3_factor(float(e), N, L, M, p, D) for e in eta]
        out[p] = (eta, np.array([v[0] for v in vals]), np.array([v[1] for v in vals]))
    return out


def main(argv=None) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "fig_001_figure1.png"
    fig, ax = plt.subplots(figsize=(6, 4))
    for p, (eta, _, y) in figure_data().items():
        ax.loglog(eta, y, label=f"p = {p:g}")
    ax.set_xlabel("step size eta")
    ax.set_ylabel("2 Tbar + V  (RDP = 16 alpha L^2/(n sigma)^2 x this)")
    ax.set_title("001 Figure 1 (n=1000, L=1, M=2, D=1)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    print(main())
