"""``bayesdp bench release``: utility of the private release for the demo model.

For the demo model (logistic regression on the bundled Breast Cancer data, prior scale 0.5) the
chain runs once; then, for each statistic (``profiles``: P(malignant) at the two public reference
records; ``coefficients``: the 30 coefficient means) and each eps in {0.1, 1, 10}, ``--repeats``
releases are drawn through the real release path (throw-away ledger with a large budget, secure
noise) and compared with the non-private Monte Carlo estimate of the same draws.

Reported per (statistic, eps): the proven sensitivity and the noise scale (= sensitivity / eps), the
mean absolute error and the RMSE of the released values against the non-private estimate, the
reference RMSE ``sqrt(2) * scale`` of continuous Laplace noise (the discretised noise has variance
``<= 2 scale^2``, docs/release.md §3) measured side by side, the empirical coverage of the 95 %
intervals, and the mean |non-private value| for scale.  Errors are those of the privacy noise only:
the Monte Carlo error of the chain is the same for the private and the non-private estimate.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from ..analysis.loading import load_model
from ..analysis.records import validate_records
from ..cli import ARG_TYPES
from ..publish.data import load_breast_cancer, scale_to_unit_ball
from ..publish.methods.base import ChainSource
from ..publish.spec import ChainOptions, ReleaseSpec
from dataclasses import replace
import numpy as np

__all__ = ["NAME", "HELP", "EPSILONS", "add_arguments", "run", "format_table"]

NAME = "release"
HELP = "released error vs the non-private estimate for the demo model at eps in {0.1, 1, 10}"
EPSILONS = (0.1, 1.0, 10.0)


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench release`` to the argparse sub-parser ``parser``.

    Args:
        parser: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench release")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'repeats': 200, 'num_steps': 4000, 'prior_scale': 0.5, 'seed': 0}
    """

    parser.add_argument("--repeats", type=ARG_TYPES[int], default=200, help="releases per (statistic, eps)")
    parser.add_argument("--num-steps", type=ARG_TYPES[int], default=4000, help="ULA steps per chain")
    parser.add_argument("--prior-scale", type=ARG_TYPES[float], default=0.5, help="prior scale of the demo model")
    parser.add_argument("--seed", type=ARG_TYPES[int], default=0, help="seed of the chain (not of the noise)")


def run(args) -> dict:
    """Run ``bayesdp bench release`` with the parsed options ``args``: JSON-ready results.

    One chain of the demo model, then ``args.repeats`` releases per statistic and epsilon (see the
    module docstring); the defaults take a few minutes.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.release.add_arguments]' options.

    Returns:
        a dict with the configuration, the chain's time and one row per (statistic, epsilon).

    Raises:
        BayesDPError: invalid options (e.g. ``num_steps`` < 1), refused before the chain runs.

    Examples:
        >>> import argparse
        >>> from bayesdp.errors import BayesDPError
        >>> try:
        ...     run(argparse.Namespace(repeats=1, num_steps=0, prior_scale=0.5, seed=0))
        ... except BayesDPError as e:
        ...     print("refused:", type(e).__name__)
        refused: AssumptionError
    """


    from ..analysis import Domain
    from ..publish import demo
    from ..publish.engine import draw, open_accountant, plan_release
    from ..publish.methods import registry

    X, y, _ = load_breast_cancer()
    model, name = load_model("logistic")
    kw = {"prior_scale": float(args.prior_scale)}
    data, _ = validate_records({"X": scale_to_unit_ball(X).astype(np.float32), "y": y.astype(np.float32)}, model, kw)
    src = ChainSource(model=model, data=data, domain=Domain.parse(list(demo.DOMAIN)), model_kwargs=kw,
                      model_name=name, kernel={"sampler": "ula"})
    out: dict = {"model": "logistic (demo)", "prior_scale": args.prior_scale, "num_steps": args.num_steps,
                 "num_chains": demo.DEFAULT_NUM_CHAINS, "repeats": args.repeats, "epsilons": list(EPSILONS),
                 "rows": []}
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-release-") as tmp:
        out["chain_s"] = 0.0
        for kind in demo.STATISTICS:
            stat = demo.demo_statistic(kind, X.shape[1])
            acct = open_accountant(os.path.join(tmp, f"ledger-{kind}.json"), 2.0 * args.repeats * sum(EPSILONS),
                                   dataset="bench")
            t0 = time.perf_counter()
            spec = ReleaseSpec(stat, epsilon=max(EPSILONS), method="coupling",
                               chain=ChainOptions(args.num_steps, demo.DEFAULT_NUM_CHAINS)).check()
            analysed, plan, _, _ = plan_release(src, spec)
            t_chain = time.perf_counter()
            state = registry()["coupling"].prepare(plan, analysed, args.seed)     # the unpublished chain, once
            out["chain_s"] += time.perf_counter() - t_chain
            truth = np.asarray(state[0])
            for eps in EPSILONS:
                errs, covered = [], []
                t1 = time.perf_counter()
                plan_e = registry()["coupling"].plan(analysed, replace(spec, epsilon=eps))
                for _ in range(args.repeats):
                    r = draw(analysed, plan_e, acct, None, "user", state=state)
                    e = np.asarray(r.values) - truth
                    errs.append(e)
                    covered.append([it.interval[0] <= t <= it.interval[1] for it, t in zip(r.items, truth)])
                E = np.asarray(errs)
                out["rows"].append({
                    "statistic": kind, "epsilon": eps, "num_values": int(E.shape[1]),
                    "proven_sensitivity": r.proven_sensitivity, "sensitivity": r.sensitivity,
                    "noise_scale": r.noise_scale,
                    "mean_abs_error": float(np.mean(np.abs(E))),
                    "rmse": float(math.sqrt(np.mean(E ** 2))),
                    "reference_rmse_laplace": math.sqrt(2.0) * r.noise_scale,
                    "coverage_95": float(np.mean(covered)),
                    "mean_abs_nonprivate_value": float(np.mean(np.abs(truth))),
                    "seconds_per_release": (time.perf_counter() - t1) / args.repeats,
                })
            out.setdefault("prepare_s", {})[kind] = time.perf_counter() - t0
    return out


def format_table(res: dict) -> str:
    """``res`` (what [`run`][bayesdp.bench.release.run] returned) as the readable table printed without ``--json``.

    Args:
        res: the result of [`run`][bayesdp.bench.release.run].

    Returns:
        the table.

    Examples:
        >>> res = {"prior_scale": 0.5, "num_chains": 4, "num_steps": 4000, "repeats": 200, "rows": []}
        >>> print(format_table(res).splitlines()[0][:66])
        demo model (logistic, prior scale 0.5), 4 chains x 4000 steps, 200
    """
    lines = [f"demo model (logistic, prior scale {res['prior_scale']:g}), {res['num_chains']} chains x "
             f"{res['num_steps']} steps, {res['repeats']} releases per row; errors vs the non-private estimate",
             f"{'statistic':<13} {'eps':>5} {'k':>3} {'sensitivity':>12} {'scale':>10} {'MAE':>10} {'RMSE':>10} "
             f"{'sqrt2*scale':>11} {'cover95':>8} {'|value|':>8}"]
    for r in res["rows"]:
        lines.append(f"{r['statistic']:<13} {r['epsilon']:>5g} {r['num_values']:>3} {r['sensitivity']:>12.5g} "
                     f"{r['noise_scale']:>10.4g} {r['mean_abs_error']:>10.4g} {r['rmse']:>10.4g} "
                     f"{r['reference_rmse_laplace']:>11.4g} {r['coverage_95']:>8.3f} "
                     f"{r['mean_abs_nonprivate_value']:>8.3g}")
    return "\n".join(lines)
