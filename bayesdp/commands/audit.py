"""``bayesdp audit MECHANISM [benchmark options] --runs N [--json]``: lower bounds vs the certificate.

Exit status 0 when the lower bounds stay below the certificate, 1 when one exceeds it (a bug),
2 on bad input.
"""

from __future__ import annotations

from ..cli import ARG_TYPES, emit_json

# kept literal so that building the CLI does not import scipy.stats; tests check it equals
# bayesdp.audit.MECHANISMS
MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path")


def add_parser(sub) -> None:
    p = sub.add_parser("audit", help="empirical privacy audit (lower bounds) on the linear-quadratic benchmark",
                       description="Run the sampler on worst-case neighbouring datasets of the built-in "
                                   "linear-quadratic benchmark and compare lower bounds with the certificate.")
    p.add_argument("mechanism", choices=MECHANISMS, metavar="MECHANISM", help=", ".join(MECHANISMS))
    f, i = ARG_TYPES[float], ARG_TYPES[int]
    p.add_argument("--strong-convexity", type=f, required=True, help="mu of K(x) = mu|x|^2/2 (L = mu)")
    p.add_argument("--grad-bound", type=f, required=True, help="c: |d_i| <= c (worst-case records +-c e_1)")
    p.add_argument("--step-size", type=f, help="gamma")
    p.add_argument("--num-steps", type=i, help="n")
    p.add_argument("--inverse-temperature", type=f, default=1.0, help="beta (default 1)")
    p.add_argument("--batch-size", type=i, help="s (SGLD)")
    p.add_argument("--data-size", type=i, help="m (SGLD)")
    p.add_argument("--dim", type=i, default=1, help="dimension (default 1)")
    p.add_argument("--runs", type=i, required=True, help="runs per dataset")
    p.add_argument("--delta", type=f, default=1e-5, help="delta of the certificate (default 1e-5)")
    p.add_argument("--confidence", type=f, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=i, default=0, help="seed of the sampler noise (the chains are not released)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..audit import audit

    rep = audit(args.mechanism, runs=args.runs, strong_convexity=args.strong_convexity, grad_bound=args.grad_bound,
                step_size=args.step_size, num_steps=args.num_steps, inverse_temperature=args.inverse_temperature,
                batch_size=args.batch_size, data_size=args.data_size, dim=args.dim, delta=args.delta,
                confidence=args.confidence, seed=args.seed)
    if args.json:
        emit_json(rep.to_dict())
    else:
        print(rep.table())
    return 0 if rep.passed else 1
