"""``bayesdp bench audit``: the big audits (10^5 runs per dataset) of every benchmark mechanism."""

from __future__ import annotations

import time

from ..audit import audit

NAME = "audit"
HELP = "empirical lower bounds vs certificates on the linear-quadratic benchmark, 10^5 runs"

CONFIGS = [
    ("posterior", dict(strong_convexity=1.0, grad_bound=0.5)),
    ("posterior", dict(strong_convexity=0.1, grad_bound=0.1)),
    ("ula-final", dict(strong_convexity=1.0, grad_bound=0.5, step_size=0.1, num_steps=200)),
    ("ula-final", dict(strong_convexity=10.0, grad_bound=2.0, step_size=0.05, num_steps=50)),
    ("ula-path", dict(strong_convexity=1.0, grad_bound=0.5, step_size=0.01, num_steps=100)),
    ("sgld-final", dict(strong_convexity=1.0, grad_bound=0.05, step_size=0.01, num_steps=500, batch_size=10,
                        data_size=50)),
    ("sgld-path", dict(strong_convexity=1.0, grad_bound=0.05, step_size=0.01, num_steps=500, batch_size=10,
                       data_size=50)),
]


def add_arguments(p) -> None:
    p.add_argument("--runs", type=int, default=100_000, help="runs per dataset (default 100000)")


def run(args) -> list[dict]:
    rows = []
    for mech, kw in CONFIGS:
        t0 = time.perf_counter()
        rep = audit(mech, runs=args.runs, seed=11, **kw)
        d = rep.to_dict()
        d["seconds"] = time.perf_counter() - t0
        d["mu_lb_over_exact"] = (rep.bounds.mu_lower_bound / rep.exact_mu) if rep.exact_mu else None
        rows.append(d)
    return rows


def format_table(rows) -> str:
    out = [f"{'mechanism':<11} {'cert eps':>9} {'CP eps LB':>9} {'mu LB':>8} {'cert mu':>8} {'exact mu':>8} "
           f"{'passed':>6} {'s':>6}"]
    for r in rows:
        out.append(f"{r['mechanism']:<11} {r['certified_epsilon']:9.4g} {r['epsilon_lower_bound']:9.4g} "
                   f"{r['mu_lower_bound']:8.4g} {r['certified_mu'] or float('nan'):8.4g} "
                   f"{r['exact_mu'] or float('nan'):8.4g} {str(r['passed']):>6} {r['seconds']:6.1f}")
    return "\n".join(out)
