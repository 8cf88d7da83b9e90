"""``bayesdp calibrate MODEL --domain ... (--data FILE | --no-data --data-size M --dim D) --epsilon E
[--mechanism M] [--out plan.json [--overwrite]] [--json]``: the configuration that meets a privacy target (a plan).

The plan (JSON) is what ``bayesdp certify --plan``, ``bayesdp sample --plan`` and the Python API
(:class:`bayesdp.Plan`) take.  Calibration and its re-verification: :mod:`bayesdp.calibration`.
"""

from __future__ import annotations

import sys

from ..cli import ARG_TYPES, emit_json
from . import _common as c
from ..errors import AssumptionError
from ..resources import check_output_file, write_file
from dataclasses import replace
from .certify import prepare_jax


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="find the sampler configuration (step size, steps, temperature) that meets "
                                         "a target epsilon",
                       description="Calibrate to a target (epsilon, delta): the inverse temperature of the posterior, "
                                   "or the ULA/SGLD step size, number of steps and inverse temperature minimising a "
                                   "stated distance bound, or the noise scale of a release; re-verified by the "
                                   "certificate core.  Writes a plan (--out).")
    p.add_argument("model", metavar="MODEL", help="built-in model name or path/to/file.py:function")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--data", metavar="FILE", help="NPZ, CSV or Parquet (only its size and shapes are used)")
    g.add_argument("--no-data", action="store_true", help="calibrate before the data (needs --data-size)")
    p.add_argument("--domain", action="extend", nargs="+", default=[], metavar="ARG.KEY=VALUE",
                   help="public bound on one record: X.norm=R, X.min=A, X.max=B, y.values=0,1")
    p.add_argument("--x-columns", help="CSV/Parquet: comma-separated feature columns (argument X)")
    p.add_argument("--y-column", help="CSV/Parquet: response column (argument y)")
    p.add_argument("--data-size", type=ARG_TYPES[int], help="number of records (with --no-data)")
    p.add_argument("--dim", type=ARG_TYPES[int], help="features per record (with --no-data)")
    p.add_argument("--epsilon", type=ARG_TYPES[float], required=True, help="target epsilon")
    p.add_argument("--delta", type=ARG_TYPES[float], default=1e-5, help="target delta (default 1e-5)")
    p.add_argument("--mechanism", default="ula-final",
                   choices=("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path", "release"),
                   help="what is released (default ula-final, as bayesdp.calibrate)")
    p.add_argument("--max-steps", type=ARG_TYPES[int], default=10_000, help="compute budget: largest number of steps")
    p.add_argument("--inverse-temperature", type=ARG_TYPES[float], default=1.0,
                   help="the largest inverse temperature allowed (default 1)")
    p.add_argument("--no-temper", action="store_true", help="keep --inverse-temperature fixed")
    p.add_argument("--batch-size", type=ARG_TYPES[int], help="SGLD minibatch size")
    p.add_argument("--clip-norm", type=ARG_TYPES[float], help="per-record gradient clipping")
    p.add_argument("--num-chains", type=ARG_TYPES[int], default=1, help="chains released together")
    p.add_argument("--step-size", type=ARG_TYPES[float], help="release: the chain's step size")
    p.add_argument("--num-steps", type=ARG_TYPES[int], help="release: the chain's number of steps")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], help="prior scale of a built-in model")
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="other model hyperparameter (number), e.g. num_classes=3 (repeat)")
    p.add_argument("--out", metavar="PLAN.json", help="write the plan to this file (a new file; never the data, "
                                                      "the model file or a ledger)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args) -> int:

    from .. import plan as plan_mod
    from ..analysis.loading import load_data, load_model
    c.positive_opt(args, "epsilon", "pass a positive target epsilon")
    c.open_unit_opt(args, "delta", "1e-5")
    c.count_opt(args, "max_steps")
    c.count_opt(args, "num_chains")
    c.count_opt(args, "data_size")
    c.count_opt(args, "dim")
    c.count_opt(args, "batch_size")
    c.count_opt(args, "num_steps")
    c.positive_opt(args, "inverse_temperature")
    c.positive_opt(args, "clip_norm")
    c.positive_opt(args, "step_size")
    c.csv_opts(args)
    if args.no_data and args.data_size is None:
        raise AssumptionError("--data-size is required with --no-data: the number of records")
    if args.mechanism.startswith("sgld") and args.batch_size is None:
        raise AssumptionError(f"--mechanism {args.mechanism} needs --batch-size (records per minibatch)")
    if args.mechanism == "release" and (args.step_size is None or args.num_steps is None):
        raise AssumptionError("--mechanism release needs the chain whose mean is released: --step-size and "
                              "--num-steps")
    if args.overwrite and not args.out:
        raise AssumptionError("--overwrite applies to --out PLAN.json; drop it or pass --out")
    inputs = _inputs(args)
    if args.out:
        check_output_file(args.out, "--out", overwrite=args.overwrite, overwrite_flag="--overwrite", inputs=inputs)
    kw = c.model_kwargs(args)
    prepare_jax()
    from ..analysis import Domain
    from ..calibration import CalibrationOptions, calibrate

    model, name = load_model(args.model)
    data = None if args.no_data else load_data(args.data, args.x_columns, args.y_column)
    kcls = plan_mod.SGLD if args.mechanism.startswith("sgld") else plan_mod.ULA
    kern = dict(step_size=args.step_size, inverse_temperature=args.inverse_temperature, clip_norm=args.clip_norm)
    if kcls is plan_mod.SGLD:
        kern["batch_size"] = args.batch_size
    plan = calibrate(model, domain=Domain.parse(args.domain), epsilon=args.epsilon, delta=args.delta,
                     mechanism=args.mechanism, data=plan_mod.Shapes(args.data_size, dim=args.dim) if args.no_data else data,
                     kernel=kcls(**kern, model_kwargs=kw),
                     options=CalibrationOptions(num_steps=args.num_steps, max_steps=args.max_steps,
                                                num_chains=args.num_chains, temper=not args.no_temper))
    plan = _named(plan, name, args.model)
    if args.out:
        write_file(args.out, plan.to_json() + "\n", overwrite=args.overwrite, inputs=inputs)
    for line in plan.warnings:            # one line each (also in the JSON's "warnings")
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        emit_json(plan.to_dict())
    else:
        print(plan.table(warnings=False))
        if args.out:
            print(f"plan written to {args.out}")
    return 0


def _named(plan, name: str, spec: str):
    """The plan refers to the model as the command line named it (built-in name or file.py:function)."""

    return replace(plan, model=spec if ":" in spec else name)


def _inputs(args) -> dict:
    """The files this command reads, which ``--out`` must not replace."""
    model_file = args.model.rsplit(":", 1)[0] if ":" in args.model else None
    return {"--data": None if args.no_data else args.data, "MODEL": model_file}
