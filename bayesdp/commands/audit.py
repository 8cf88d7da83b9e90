"""``bayesdp audit MECHANISM [benchmark or model options] --runs N [--json]``: lower bounds vs the certificate.

Without ``--model`` the built-in linear–quadratic benchmark runs with the constants of
``bayesdp bound`` (``--strong-convexity``, ``--grad-bound``, ``--step-size``, ``--num-steps`` ...).
With ``--model NAME --data FILE --domain ...`` the real samplers run on the model with worst-case
neighbours built from the domain (or ``--data-prime FILE``).

Exit status 0 when the lower bounds stay below the certificate, 1 when one exceeds it (a bug),
2 on bad input.
"""

from __future__ import annotations

from ..cli import ARG_TYPES
from . import _common as c
from ..errors import AssumptionError
from ._common import data_file_opt
from ._common import model_kwargs

# kept literal so that building the CLI does not import scipy.stats; tests check it equals
# bayesdp.audit.MECHANISMS
MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path", "release")


def add_parser(sub) -> None:
    p = sub.add_parser("audit", help="empirical privacy audit: lower bounds measured on the real samplers",
                       description="Run the sampler (or release) on neighbouring datasets, measure lower bounds "
                                   "on the privacy loss and compare them with the certificate.")
    p.add_argument("mechanism", choices=MECHANISMS, metavar="MECHANISM", help=", ".join(MECHANISMS))
    f, i = ARG_TYPES[float], ARG_TYPES[int]
    b = p.add_argument_group("linear-quadratic benchmark (default)")
    b.add_argument("--strong-convexity", type=f, help="mu of K(x) = mu|x|^2/2 (L = mu)")
    b.add_argument("--grad-bound", type=f, help="c: |d_i| <= c (worst-case records +-c e_1)")
    b.add_argument("--data-size", type=i, help="m (SGLD)")
    b.add_argument("--dim", type=i, default=1, help="dimension (default 1)")
    b.add_argument("--epsilon", type=f, help="release: epsilon of the Laplace noise")
    b.add_argument("--burn-in", type=i, default=0, help="release: steps discarded before averaging")
    m = p.add_argument_group("model (real samplers on a NumPyro model)")
    m.add_argument("--model", help="built-in model name or path/to/file.py:function")
    m.add_argument("--data", metavar="FILE", help="NPZ, CSV or Parquet with the dataset D")
    m.add_argument("--data-prime", metavar="FILE", help="the neighbouring dataset D' (default: worst case from "
                                                         "the domain)")
    m.add_argument("--domain", action="extend", nargs="+", default=[], metavar="ARG.KEY=VALUE",
                   help="public bounds on one record (as for certify)")
    c.add_model_options(m)
    c.add_chain_options(p.add_argument_group("sampler"))
    p.add_argument("--runs", type=i, required=True, help="runs per dataset")
    p.add_argument("--delta", type=f, default=1e-5, help="delta of the certificate (default 1e-5)")
    p.add_argument("--confidence", type=f, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=i, default=0,
                   help="seed of the sampler noise (default 0: an audit is an internal, reproducible experiment; "
                        "its chains are never released, only the lower bounds)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _run_model(args):
    from ..analysis.loading import load_data, load_model
    from ..analysis.records import validate_records
    from ..audit import audit_model

    if args.data is None:
        raise AssumptionError("--data is required with --model (the dataset D)")

    data_file_opt(args)
    data_file_opt(args, "data_prime")
    if args.step_size is None or args.num_steps is None:
        raise AssumptionError(f"--step-size and --num-steps are required for {args.mechanism}")

    kw = model_kwargs(args)
    model, name = load_model(args.model)
    data, _ = validate_records(load_data(args.data, args.x_columns, args.y_column), model, kw)
    data_prime = (validate_records(load_data(args.data_prime, args.x_columns, args.y_column), model, kw)[0]
                  if args.data_prime else None)
    return audit_model(args.mechanism, model, data, domain=args.domain, runs=args.runs, step_size=args.step_size,
                       num_steps=args.num_steps, data_prime=data_prime, batch_size=args.batch_size,
                       inverse_temperature=args.inverse_temperature, clip_norm=args.clip_norm,
                       model_kwargs=kw, delta=args.delta, confidence=args.confidence,
                       seed=args.seed, model_name=name)


def _check_options(args) -> None:
    c.count_opt(args, "runs")
    c.open_unit_opt(args, "delta", "1e-5")
    c.open_unit_opt(args, "confidence", "0.95")
    c.positive_opt(args, "strong_convexity")
    c.nonnegative_opt(args, "grad_bound")
    c.count_opt(args, "data_size")
    c.count_opt(args, "dim")
    c.positive_opt(args, "epsilon")
    c.nonnegative_opt(args, "burn_in")
    c.positive_opt(args, "step_size", "pass a positive step size")
    c.count_opt(args, "num_steps")
    c.count_opt(args, "batch_size")
    c.positive_opt(args, "inverse_temperature")
    c.positive_opt(args, "clip_norm", "pass a positive clipping norm, or omit it")
    c.seed_opt(args)
    c.csv_opts(args)
    model_only = ("data", "data_prime", "x_columns", "y_column", "prior_scale", "clip_norm")
    if args.model is None:
        given = [f"--{k.replace('_', '-')}" for k in model_only if getattr(args, k) is not None] + \
            (["--domain"] if args.domain else []) + (["--model-arg"] if args.model_arg else [])
        if given:
            raise AssumptionError(f"{', '.join(given)}: only for a model audit (--model NAME); drop "
                                  f"{'it' if len(given) == 1 else 'them'} or pass --model")


def run(args) -> int:
    _check_options(args)
    if args.model is not None:
        rep = _run_model(args)
    else:
        from ..audit import audit

        if args.strong_convexity is None or args.grad_bound is None:
            raise AssumptionError("the benchmark needs --strong-convexity and --grad-bound (or audit a model with "
                                  "--model NAME --data FILE --domain ...)")
        rep = audit(args.mechanism, runs=args.runs, strong_convexity=args.strong_convexity,
                    grad_bound=args.grad_bound, step_size=args.step_size, num_steps=args.num_steps,
                    inverse_temperature=args.inverse_temperature, batch_size=args.batch_size,
                    data_size=args.data_size, dim=args.dim, delta=args.delta, confidence=args.confidence,
                    seed=args.seed, epsilon=args.epsilon, burn_in=args.burn_in)
    c.emit(args, rep)
    return 0 if rep.passed else 1
