"""``bayesdp certify MODEL --data FILE --domain ARG.KEY=VALUE ... [--json]``.

MODEL is a built-in name (models/: logistic, softmax, robust, sparse_logistic, poisson) or
``path/to/file.py:function``.  FILE is NPZ (each array is the model argument of the same
name), CSV or Parquet (``--x-columns a,b,c --y-column label``).  ``--no-data --data-size M [--dim D]``
certifies before sampling.  Exit status 2 with one line when nothing can be certified.
"""

from __future__ import annotations

from ..cli import ARG_TYPES
from . import _common as c
from ..errors import AssumptionError
from ..errors import clip_advice
from ..jax_cache import from_cli
from ._common import model_kwargs


def prepare_jax() -> None:
    """Process-wide JAX settings for the ``bayesdp`` command only (never for in-process callers): the
    persistent compilation cache (bayesdp/jax_cache.py; `bayesdp.cli.main` turns it on already, this is
    idempotent).  The backend is left to JAX (``bayesdp sample`` must use a GPU where there is one)."""
    from_cli()


def add_parser(sub) -> None:
    p = sub.add_parser("certify", help="analyse a NumPyro model and certify posterior / ULA / SGLD releases",
                       description="Derive certified constants from a NumPyro model and a public data domain, "
                                   "then certify the posterior, ULA and SGLD final draw and path.")
    p.add_argument("model", metavar="MODEL", nargs="?", help="built-in model name or path/to/file.py:function")
    p.add_argument("--plan", metavar="PLAN.json", help="certify this plan (from `bayesdp calibrate --out`): "
                                                     "model, domain, size and sampler settings come from it")
    g = p.add_mutually_exclusive_group(required=False)
    g.add_argument("--data", metavar="FILE", help="NPZ (arrays named like the model arguments), CSV or Parquet")
    g.add_argument("--no-data", action="store_true", help="certify before sampling (needs --data-size)")
    p.add_argument("--domain", action="extend", nargs="+", default=[], metavar="ARG.KEY=VALUE",
                   help="public bound on one record: X.norm=R, X.min=A, X.max=B, y.values=0,1 (several, or "
                        "repeat the flag; as for sample and release)")
    p.add_argument("--clip-to-domain", action="store_true",
                   help="clip data to the declared domain instead of refusing (recorded in the report)")
    c.add_model_options(p)
    p.add_argument("--data-size", type=ARG_TYPES[int], help="number of records (with --no-data)")
    p.add_argument("--dim", type=ARG_TYPES[int], help="features per record (with --no-data)")
    p.add_argument("--sampler", choices=("ula", "sgld"), help="price only this sampler (default: both)")
    c.add_chain_options(p)
    p.add_argument("--delta", type=ARG_TYPES[float], default=1e-5, help="report epsilon at this delta")
    p.add_argument("--arithmetic", choices=("real", "float"), default="real",
                   help="real: constants of the program in real arithmetic (default); float: its float32 rounding "
                        "modelled too (XLA's rounding, its regrouping of sums, its functions' errors): refuses "
                        "programs whose float value may be undefined or far from the real one (docs/analysis.md)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _check_options(args) -> None:
    """Every option, by flag name, before any file is read (issue #13: certify used to exit 0 with a
    negative step size, 0 steps or a batch larger than the data, the error only inside its table)."""

    c.sampler_opts(args, sgld_needs_batch=False)
    c.open_unit_opt(args, "delta", "1e-5")
    c.count_opt(args, "data_size")
    c.count_opt(args, "dim")
    c.csv_opts(args)
    c.data_file_opt(args)
    if not args.no_data and (args.data_size is not None or args.dim is not None):
        raise AssumptionError("--data-size / --dim describe the data with --no-data; with --data FILE they come "
                              "from the file: drop them")
    if args.no_data and args.clip_to_domain:
        raise AssumptionError("--clip-to-domain clips data read with --data; it has no effect with --no-data: "
                              "drop it")


def run(args) -> int:
    from ..analysis.inputs import counts_from_domain
    from ..analysis.loading import load_data, load_model
    from ..analysis.records import validate_records
    if args.plan:
        return _run_plan(args)
    if not args.model:
        raise AssumptionError("MODEL is required (or --plan PLAN.json)")
    if not args.data and not args.no_data:
        raise AssumptionError("one of --data FILE or --no-data is required (or --plan PLAN.json)")
    _check_options(args)
    if args.no_data and args.data_size is None:
        raise AssumptionError("--data-size is required with --no-data: the number of records")
    kw = model_kwargs(args)
    prepare_jax()
    from ..analysis import Domain, certify

    model, name = load_model(args.model)
    domain = Domain.parse(args.domain)
    kw = counts_from_domain(model, domain, kw)      # e.g. num_classes from y.values (public), if not given
    if args.no_data:
        data, m = None, args.data_size
    else:
        data, m = validate_records(load_data(args.data, args.x_columns, args.y_column), model, kw)
    if args.batch_size is not None and args.batch_size > m:
        raise AssumptionError(f"--batch-size {args.batch_size} exceeds the {m} records; batches are drawn without "
                              f"replacement: pass 1 <= --batch-size <= {m}")
    with clip_advice(", or clip to the domain with --clip-to-domain (recorded in the report)"):
        rep = certify(model, data=data, domain=domain, step_size=args.step_size, num_steps=args.num_steps,
                      batch_size=args.batch_size, inverse_temperature=args.inverse_temperature,
                      clip_norm=args.clip_norm, delta=args.delta, model_kwargs=kw,
                      data_size=args.data_size if args.no_data else None, dim=args.dim,
                      clip_to_domain=args.clip_to_domain, sampler=args.sampler, model_name=name,
                      arithmetic=args.arithmetic)
    c.emit(args, rep)
    return 0


def _run_plan(args) -> int:
    """``certify --plan``: the Python API's :func:`bayesdp.certify` on the plan (identical certificates)."""
    from ..plan import Plan, certify

    extra = [f for f in ("model", "data", "no_data", "step_size", "num_steps", "batch_size", "clip_norm",
                         "data_size", "dim") if getattr(args, f, None)]
    if getattr(args, "arithmetic", "real") != "real":
        raise AssumptionError("--arithmetic float is not available with --plan yet (a plan is certified in real "
                              "arithmetic): certify MODEL --domain ... --arithmetic float instead")
    if extra or args.domain:
        raise AssumptionError(f"--plan holds the model, the domain and the sampler settings; drop "
                              f"{', '.join('--' + f.replace('_', '-') for f in extra) or '--domain'}")
    prepare_jax()

    rep = certify(Plan.load(args.plan))
    c.emit(args, rep)
    return 0
