"""Reproduce 003 Figure 3 (Theorem 4 vs Proposition 1, i = 20, 30, 39) -- with a warning.

The paper's parameters (sigma = 1, rho = 0.4, eta = 0.7, L = 1, beta = 0.3, D_K = 1, n = 40) are
INFEASIBLE: a beta-smooth rho-strongly convex loss needs rho <= beta (SEEDS.md §6 row 21), so no loss
satisfies the hypotheses and the curves certify nothing.  They are evaluated only through the
Python-only ``allow_infeasible=True`` argument, as regression numbers; the CLI refuses them.
Usage: python examples/fig_003_figure3.py [out.png]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fig_003_figure2 import figure_data as _figure_data  # noqa: E402
from fig_003_figure2 import plot  # noqa: E402

PARAMS = dict(lipschitz=1.0, smoothness=0.3, strong_convexity=0.4, step_size=0.7, noise_scale=1.0, diameter=1.0,
              data_size=40)
INDICES = (20, 30, 39)
NOTE = "INFEASIBLE parameters (rho=0.4 > beta=0.3): regression only, certifies nothing"


def figure_data(eps_grid=None) -> dict:
    return _figure_data(eps_grid, PARAMS, INDICES, allow_infeasible=True)


def main(argv=None) -> str:
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "fig_003_figure3.png"
    plot(figure_data(), path, "003 Figure 3 -- " + NOTE)
    return path


if __name__ == "__main__":
    print(NOTE, file=sys.stderr)
    print(main())
