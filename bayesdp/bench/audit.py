"""``bayesdp bench audit``: the big audits (10^5 runs per dataset) of every benchmark mechanism."""

from __future__ import annotations

import time
import numpy as np

__all__ = ["NAME", "HELP", "CONFIGS", "MODEL_CASES", "add_arguments", "run", "format_table"]

NAME = "audit"
HELP = "empirical lower bounds vs certificates: linear-quadratic benchmark (10^5 runs) and reference models"

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
    ("release", dict(strong_convexity=1.0, grad_bound=0.5, step_size=0.1, num_steps=200, burn_in=50, epsilon=1.0)),
]

#: reference models x mechanisms audited with the real samplers (runs scaled from --runs)
MODEL_CASES = [
    ("logistic", "ula-final", {}), ("logistic", "ula-path", {}), ("logistic", "sgld-final", {"batch_size": 8}),
    ("logistic", "sgld-path", {"batch_size": 8}), ("robust", "ula-final", {}), ("robust", "ula-path", {}),
    ("softmax", "ula-final", {}), ("softmax", "ula-path", {}), ("sparse_logistic", "ula-path", {}),
    ("poisson", "ula-path", {"clip_norm": 1.0}), ("poisson", "sgld-path", {"clip_norm": 1.0, "batch_size": 8}),
]


def _model_data(name, m=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    X *= 0.99 / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    if name in ("logistic", "sparse_logistic"):
        return {"X": X, "y": (rng.random(m) < 0.5).astype(np.int32)}, ["X.norm=1", "y.values=0,1"], {}
    if name == "softmax":
        return ({"X": X, "y": rng.integers(0, 3, m).astype(np.int32)}, ["X.norm=1", "y.values=0,1,2"],
                {"num_classes": 3})
    if name == "robust":
        return {"X": X, "y": np.clip(rng.normal(size=m), -2, 2)}, ["X.norm=1", "y.min=-2", "y.max=2"], {}
    return {"X": X, "y": rng.poisson(1.0, m).astype(np.int32)}, ["X.norm=1", "y.min=0", "y.max=10"], {}


def add_arguments(p) -> None:
    """Add the options of ``bayesdp bench audit`` to the argparse sub-parser ``p``.

    Args:
        p: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench audit")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'runs': 100000, 'model_runs': 20000}
    """
    p.add_argument("--runs", type=int, default=100_000, help="runs per dataset (default 100000)")
    p.add_argument("--model-runs", type=int, default=20_000, help="runs per dataset for the models (default 20000)")


def run(args) -> list[dict]:
    """Run ``bayesdp bench audit`` with the parsed options ``args``: JSON-ready results.

    Every configuration of [`CONFIGS`][bayesdp.bench.audit.CONFIGS] is audited on the linear-quadratic benchmark with
    ``args.runs`` runs per dataset, and every case of [`MODEL_CASES`][bayesdp.bench.audit.MODEL_CASES] on a
    reference model with the real samplers (``args.model_runs`` runs); the defaults take minutes.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.audit.add_arguments]' options.

    Returns:
        one dict per audit ([`bayesdp.audit.AuditReport.to_dict`][bayesdp.audit.AuditReport.to_dict], plus
            ``seconds`` and ``mu_lb_over_exact``).

    Raises:
        AssumptionError: invalid options (refused before anything runs).

    Examples:
        >>> import argparse
        >>> run(argparse.Namespace(runs=0, model_runs=0))
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: runs = 0 must be an integer >= 1; pass a whole number >= 1
    """
    from bayesdp.models import BUILTIN
    from ..audit import audit   # scipy.stats: imported only when the bench runs

    rows = []
    for mech, kw in CONFIGS:
        t0 = time.perf_counter()
        rep = audit(mech, runs=args.runs, seed=11, **kw)
        d = rep.to_dict()
        d["seconds"] = time.perf_counter() - t0
        d["mu_lb_over_exact"] = (rep.bounds.mu_lower_bound / rep.exact_mu) if rep.exact_mu else None
        rows.append(d)

    from ..audit import audit_model

    for name, mech, kw in MODEL_CASES:
        data, domain, mkw = _model_data(name)
        t0 = time.perf_counter()
        rep = audit_model(mech, BUILTIN[name], data, domain=domain, runs=args.model_runs, step_size=0.05,
                          num_steps=100, model_kwargs=mkw or None, model_name=name, seed=5, **kw)
        d = rep.to_dict()
        d["seconds"] = time.perf_counter() - t0
        d["mu_lb_over_exact"] = None
        rows.append(d)
    return rows


def format_table(rows) -> str:
    """``rows`` (what [`run`][bayesdp.bench.audit.run] returned) as the readable table printed without ``--json``.

    Args:
        rows: the result of [`run`][bayesdp.bench.audit.run].

    Returns:
        the table.

    Examples:
        >>> row = {"benchmark": "linear-quadratic benchmark", "mechanism": "posterior", "certified_epsilon": 4.377,
        ...        "epsilon_lower_bound": 1.57, "mu_lower_bound": 0.87, "certified_mu": 1.0, "exact_mu": 1.0,
        ...        "passed": True, "seconds": 0.5}
        >>> print(format_table([row]).splitlines()[1])
        linear-quadratic benchmark   posterior       4.377      1.57     0.87        1        1   True    0.5
    """
    out = [f"{'benchmark':<28} {'mechanism':<11} {'cert eps':>9} {'CP eps LB':>9} {'mu LB':>8} {'cert mu':>8} {'exact mu':>8} "
           f"{'passed':>6} {'s':>6}"]
    for r in rows:
        out.append(f"{r['benchmark'][:28]:<28} {r['mechanism']:<11} {r['certified_epsilon']:9.4g} {r['epsilon_lower_bound']:9.4g} "
                   f"{r['mu_lower_bound']:8.4g} {r['certified_mu'] or float('nan'):8.4g} "
                   f"{r['exact_mu'] or float('nan'):8.4g} {str(r['passed']):>6} {r['seconds']:6.1f}")
    return "\n".join(out)
