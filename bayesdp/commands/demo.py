"""``bayesdp demo``: certify, sample and release noisy posterior means of a Bayesian logistic
regression on the bundled Breast Cancer Wisconsin (Diagnostic) data at epsilon = 1 (docs/demo.md).

Prints the certificate table, the released values with their noise scale and intervals, the
non-private estimates marked NOT FOR RELEASE, and writes two PNG plots into ``--out-dir``
(default ``./bayesdp-demo``).  Runs in well under a minute on 2 CPU cores.
"""

from __future__ import annotations

from ..cli import ARG_TYPES
from . import _common as c
from ..errors import AssumptionError
from ..resources import check_output_dir, check_state_file
from .certify import prepare_jax
from ..publish import demo as d


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="private Bayesian logistic regression on a bundled real dataset (eps = 1)",
                       description="Certify, sample and release noisy posterior means of a Bayesian logistic "
                                   "regression on the bundled Breast Cancer Wisconsin (Diagnostic) data.")
    p.add_argument("--epsilon", type=ARG_TYPES[float], default=d.DEFAULT_EPSILON, help="epsilon of the release (1)")
    p.add_argument("--out-dir", default=None, help=f"directory of the plots (default ./{d.DEFAULT_OUT_DIR})")
    p.add_argument("--ledger", default=None, metavar="FILE",
                   help="keep the spend in this ledger (default: a temporary ledger)")
    p.add_argument("--budget", type=ARG_TYPES[float], default=d.DEFAULT_BUDGET,
                   help=f"total epsilon of a new ledger (default {d.DEFAULT_BUDGET:g})")
    p.add_argument("--stat", choices=d.STATISTICS, default="profiles",
                   help="profiles (default): P(malignant) at two public reference records, computed from the noisy "
                        "posterior mean of their common direction; profile-means: the posterior means of the two "
                        "probabilities; coefficients: the 30 coefficient means")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], default=d.DEFAULT_PRIOR_SCALE,
                   help=f"prior scale s of w ~ N(0, s^2 I) (default {d.DEFAULT_PRIOR_SCALE:g})")
    p.add_argument("--num-steps", type=ARG_TYPES[int], help=f"ULA steps per chain (default {d.DEFAULT_NUM_STEPS})")
    p.add_argument("--quick", action="store_true", help=f"{d.QUICK_NUM_STEPS} steps (tests, smoke runs)")
    p.add_argument("--seed", type=ARG_TYPES[int], help="seed of the unpublished chain (the noise is never seeded)")
    p.add_argument("--no-plots", action="store_true", help="do not write the PNG plots")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _check_options(args) -> None:
    c.positive_opt(args, "epsilon", "pass a positive epsilon")
    c.positive_opt(args, "budget", "pass a positive total epsilon")
    c.positive_opt(args, "prior_scale", "the prior's scale must be positive")
    c.count_opt(args, "num_steps")
    c.seed_opt(args)
    if args.no_plots and args.out_dir is not None:
        raise AssumptionError("--out-dir is where the plots go; drop it or drop --no-plots")
    if not args.no_plots:
        check_output_dir(args.out_dir or d.DEFAULT_OUT_DIR, "--out-dir")
    if args.ledger is not None:
        check_state_file(args.ledger, "--ledger")


def run(args) -> int:
    _check_options(args)

    prepare_jax()
    res = d.run_demo(args.epsilon, out_dir=args.out_dir, ledger=args.ledger, budget=args.budget, quick=args.quick,
                     statistic=args.stat, prior_scale=args.prior_scale, num_steps=args.num_steps, seed=args.seed,
                     plots=not args.no_plots)
    c.emit(args, res, lambda: d.format_demo(res))
    return 0
