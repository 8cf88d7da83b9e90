"""``bayesdp sample MODEL --data FILE --domain ... --sampler ula|sgld ... --out FILE.nc``.

Runs ULA or SGLD exactly as certified (the certificate is computed first, from the same
configuration; an uncovered configuration exits with status 2 unless ``--uncertified``), then
writes the released draws as ArviZ InferenceData (NetCDF) whose ``posterior`` group carries the
attribute ``bayesdp_certificate`` (the certificate as a JSON string).  Divergence exits with
status 2 and writes nothing.
"""

from __future__ import annotations

import gc
import importlib.util

import numpy as np

from .. import _arviz
from ..cli import ARG_TYPES, emit_json
from ..errors import AssumptionError
from ..resources import check_output_file, return_freed_memory, write_file
from . import _common as c
from ._common import apply_plan, infer_num_classes, model_kwargs
from .certify import prepare_jax


def add_model_data_arguments(p) -> None:
    """MODEL, --data, CSV column options, --domain and --plan, shared by `sample` and `release`."""
    p.add_argument("model", metavar="MODEL", nargs="?",
                   help="built-in model name (models/) or path/to/file.py:function (or --plan)")
    p.add_argument("--plan", metavar="PLAN.json", help="a plan from `bayesdp calibrate --out`: model, domain and "
                                                     "sampler settings come from it")
    p.add_argument("--data", metavar="FILE", required=True,
                   help="NPZ (arrays named like the model arguments), CSV or Parquet")
    p.add_argument("--x-columns", help="CSV/Parquet: comma-separated feature columns (argument X)")
    p.add_argument("--y-column", help="CSV/Parquet: response column (argument y)")
    p.add_argument("--domain", action="extend", nargs="+", default=[], metavar="ARG.KEY=VALUE",
                   help="public bound on one record: X.norm=R, y.values=0,1 ... (several, or repeat the flag)")


def add_parser(sub) -> None:
    p = sub.add_parser("sample", help="run ULA/SGLD on a NumPyro model exactly as certified, write ArviZ .nc",
                       description="Certify, then run ULA or SGLD on a NumPyro model; the released draws and "
                                   "the certificate are written to an ArviZ NetCDF file.")
    add_model_data_arguments(p)
    p.add_argument("--sampler", choices=("ula", "sgld"), help="ULA (full batch) or SGLD (minibatches)")
    c.add_chain_options(p)
    p.add_argument("--num-chains", type=ARG_TYPES[int], default=1, help="chains (released chains compose)")
    p.add_argument("--chain-method", choices=("vectorized", "parallel", "sequential"), default="vectorized",
                   help="vectorized (vmap), parallel (sharded over devices) or sequential")
    p.add_argument("--shard-data", action="store_true",
                   help="split the records over the devices (any record count: padded rows are masked out); with "
                        "several processes each process passes only its own records in --data")
    p.add_argument("--coordinator-address", metavar="HOST:PORT",
                   help="join a run over several processes (jax.distributed, docs/distributed.md): the address of "
                        "process 0; needs --num-processes and --process-id")
    p.add_argument("--num-processes", type=ARG_TYPES[int], help="number of processes of the run (with "
                                                                 "--coordinator-address)")
    p.add_argument("--process-id", type=ARG_TYPES[int], help="this process's index, 0 .. --num-processes - 1")
    p.add_argument("--max-copy-bytes", type=ARG_TYPES[int], default=None,
                   help="largest copy of the design the ULA GLM path may make (default 64 MiB; 0: never copy)")
    p.add_argument("--release", choices=("final", "path", "thinned"), default="final",
                   help="what is released: final draw of each chain, the whole path, or a thinned path")
    p.add_argument("--thinning", type=ARG_TYPES[int], default=1, help="keep every k-th draw (with --release thinned)")
    p.add_argument("--init", choices=("zeros", "prior"), default="zeros",
                   help="data-independent initialisation: zeros (unconstrained space) or a prior draw")
    p.add_argument("--seed", type=ARG_TYPES[int], default=None,
                   help="PRNG seed of the chains (default: keys from the OS CSPRNG). A seed makes the released "
                        "draws reproducible by anyone who knows it: outputs then say 'reproducible seed: not "
                        "private'")
    p.add_argument("--init-seed", type=ARG_TYPES[int], default=None,
                   help="PRNG seed of the prior draw (--init prior; default 1: the initial point is data "
                        "independent, so a public seed costs no privacy)")
    p.add_argument("--delta", type=ARG_TYPES[float], default=1e-5, help="report epsilon at this delta")
    p.add_argument("--uncertified", action="store_true",
                   help="run even if no certificate covers the configuration (outputs marked certified: false)")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], help="prior scale of a built-in model")
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="other numeric model hyperparameter, e.g. num_classes=3 (repeat)")
    p.add_argument("--progress-bar", action="store_true", help="show a progress bar")
    p.add_argument("--out", metavar="FILE.nc", help="write ArviZ InferenceData (NetCDF) here (checked before "
                                                    "sampling: the folder must exist and the file must not)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--json", action="store_true", help="print the certificate and timing as JSON")
    p.set_defaults(func=run)


def _check_options(args) -> None:
    """Every option and the output path, before anything is read, traced or run."""

    c.sampler_opts(args)
    c.open_unit_opt(args, "delta", "1e-5")
    c.seed_opt(args)
    c.seed_opt(args, "init_seed")
    c.csv_opts(args)
    c.data_file_opt(args)
    if args.release != "thinned" and args.thinning != 1:
        raise AssumptionError(f"--thinning {args.thinning} applies to --release thinned; pass --release thinned or "
                              "drop --thinning")
    if args.release == "thinned" and args.num_steps % args.thinning:
        raise AssumptionError(f"--thinning {args.thinning} does not divide --num-steps {args.num_steps}; pick "
                              "--num-steps a multiple of --thinning")
    if args.init != "prior" and args.init_seed is not None:
        raise AssumptionError("--init-seed applies to --init prior; drop it or pass --init prior")
    if not args.uncertified and not args.domain:
        raise AssumptionError("--domain is required for a certified run: public bounds on one record, e.g. "
                              "--domain X.norm=1 y.values=0,1 (or pass --uncertified to run without a guarantee)")
    _check_processes(args)
    if args.max_copy_bytes is not None and args.max_copy_bytes < 0:
        raise AssumptionError(f"--max-copy-bytes {args.max_copy_bytes} must be >= 0 (0: never copy the design)")
    if args.overwrite and not args.out:
        raise AssumptionError("--overwrite applies to --out FILE.nc; drop it or pass --out")
    if args.out:
        check_output_file(args.out, "--out", overwrite=args.overwrite, overwrite_flag="--overwrite",
                          inputs=_inputs(args))
        if importlib.util.find_spec("h5netcdf") is None:   # the NetCDF engine bayesdp writes with
            raise AssumptionError(f"--out {args.out}: writing NetCDF needs the h5netcdf package, which is not "
                                  f"installed; pip install h5netcdf, or drop --out")


def _check_processes(args) -> None:
    """--coordinator-address, --num-processes and --process-id: all three or none, consistent."""

    given = [f for f in ("coordinator_address", "num_processes", "process_id") if getattr(args, f) is not None]
    if not given:
        return
    if len(given) != 3:
        missing = [f"--{f.replace('_', '-')}" for f in ("coordinator_address", "num_processes", "process_id")
                   if f not in given]
        raise AssumptionError(f"--{given[0].replace('_', '-')} needs {' and '.join(missing)} (a run over several "
                              "processes names the coordinator, the number of processes and this process's index)")
    host, _, port = str(args.coordinator_address).rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise AssumptionError(f"--coordinator-address {args.coordinator_address} is not HOST:PORT with a port in "
                              "1..65535; pass e.g. --coordinator-address 10.0.0.1:1234")
    if args.num_processes < 1:
        raise AssumptionError(f"--num-processes {args.num_processes} must be >= 1")
    if not 0 <= args.process_id < args.num_processes:
        raise AssumptionError(f"--process-id {args.process_id} must be in 0 .. {args.num_processes - 1} "
                              f"(--num-processes {args.num_processes})")


def _join_processes(args) -> None:
    """jax.distributed.initialize, before JAX does anything else in this process."""
    if args.coordinator_address is None:
        return
    import jax

    try:
        jax.distributed.initialize(args.coordinator_address, num_processes=args.num_processes,
                                   process_id=args.process_id)
    except Exception as exc:  # noqa: BLE001 - the runtime's own error, in one line
        raise AssumptionError(f"--coordinator-address {args.coordinator_address}: joining {args.num_processes} "
                              f"processes as process {args.process_id} failed ({type(exc).__name__}: "
                              f"{(str(exc).splitlines() or [''])[0][:200]}); start every process with the same "
                              "address and --num-processes") from None


def _inputs(args) -> dict:
    """The files this command reads, which ``--out`` must not replace."""
    model = getattr(args, "model", None) or ""
    return {"--data": args.data, "--plan": getattr(args, "plan", None),
            "MODEL": model.rsplit(":", 1)[0] if ":" in model else None}


def _write_netcdf(sampler, args) -> None:
    """Write through a temporary file in the same folder, fsync and rename (:func:`bayesdp.resources.write_file`):
    a failure (disk full ...) never leaves a partial file at ``--out``."""
    from ..api import chain_inference_data

    idata = chain_inference_data(sampler)     # the same data as PrivateMCMC.to_inference_data()
    write_file(args.out, lambda tmp: _arviz.to_netcdf(idata, tmp), overwrite=args.overwrite, inputs=_inputs(args))


#: data files from this size (bytes, as the samplers hold them) on have SGLD's program compiled before they are read
COMPILE_FIRST_BYTES = 32 << 20


def _compile_before_loading(args, model, settings: dict) -> float:
    """SGLD on an NPZ or Parquet file of at least :data:`COMPILE_FIRST_BYTES`, certified against a domain, in one
    process: compile the chain's program on zeros of the file's shapes (read from its headers; the operating
    system's zero pages: no memory until written) before the records are read, then hand the memory the
    compilation freed back to the operating system.  The run on the records reuses the program.  The command's
    peak memory is then the records plus what JAX keeps, not plus what it used while compiling (issue 24: SGLD
    at most 1.2 times the data).  Nothing is read from the records; if anything fails here (zeros outside the
    declared domain), the run compiles as before.  The seconds spent compiling."""
    from ..analysis.loading import aligned_zeros, record_shapes
    from ..analysis.records import validate_records
    from ..samplers import Sampler

    if (args.sampler != "sgld" or not args.domain or args.shard_data or args.num_processes
            or args.coordinator_address):
        return 0.0
    shapes = record_shapes(args.data, args.x_columns, args.y_column)
    if not shapes or sum(int(np.prod(s, dtype=np.int64)) * t.itemsize for s, t in shapes.values()) < \
            COMPILE_FIRST_BYTES:
        return 0.0
    try:
        zeros, _ = validate_records({k: aligned_zeros(s, t) for k, (s, t) in shapes.items()}, model,
                                    settings["model_kwargs"])
        seconds = Sampler(model, zeros, **settings).compile()
    except Exception:  # noqa: BLE001 - the run on the records compiles and reports any error itself
        return 0.0
    finally:
        zeros = None
        gc.collect()
        return_freed_memory()
    return seconds


def run(args) -> int:
    from ..analysis.inputs import counts_from_domain
    from ..analysis.loading import load_data, load_model
    from ..analysis.records import validate_records
    plan = apply_plan(args)
    missing = [f for f in ("model", "sampler", "step_size", "num_steps") if getattr(args, f, None) is None]
    if missing:
        raise AssumptionError(f"{'MODEL' if missing[0] == 'model' else '--' + missing[0].replace('_', '-')} is "
                              "required (or --plan PLAN.json)")
    _check_options(args)
    kw = model_kwargs(args)
    _join_processes(args)
    prepare_jax()
    import jax

    from ..samplers import Sampler

    model, name = load_model(args.model)
    if args.domain:        # counts such as num_classes come from the PUBLIC domain
        from ..analysis import Domain

        kw = counts_from_domain(model, Domain.parse(args.domain), kw)
    settings = dict(sampler=args.sampler, step_size=args.step_size, num_steps=args.num_steps,
                    inverse_temperature=args.inverse_temperature, batch_size=args.batch_size,
                    clip_norm=args.clip_norm, num_chains=args.num_chains, chain_method=args.chain_method,
                    release=args.release, thinning=args.thinning, init=args.init,
                    init_key=jax.random.key(1 if args.init_seed is None else args.init_seed)
                    if args.init == "prior" else None,
                    domain=args.domain or None, delta=args.delta, uncertified=args.uncertified,
                    model_kwargs=kw, progress_bar=args.progress_bar, shard_data=args.shard_data,
                    max_copy_bytes=args.max_copy_bytes)
    compile_s = _compile_before_loading(args, model, settings)
    data, m = validate_records(load_data(args.data, args.x_columns, args.y_column))   # structure, finite
    if not args.domain:    # --uncertified without a domain: nothing is certified, the labels may say
        infer_num_classes(name, kw, data)
    data, m = validate_records(data, model, kw)                                        # labels
    if args.batch_size is not None and args.batch_size > m and not (args.shard_data and jax.process_count() > 1):
        raise AssumptionError(f"--batch-size {args.batch_size} exceeds the {m} records; batches are drawn without "
                              f"replacement: pass 1 <= --batch-size <= {m}")
    sampler = Sampler(model, data, **settings)
    if plan is not None:       # the run's own certificate (with the data) must not exceed the plan's
        eps = sampler.certificate.get("epsilon")
        if m != plan.data_size or eps is None or eps > plan.epsilon * (1 + 1e-9):
            raise AssumptionError(f"--plan {args.plan} was certified at epsilon {plan.epsilon:.6g} for "
                                  f"{plan.data_size} records; this run ({m} records) is certified at epsilon {eps}: "
                                  "calibrate a plan for this data")
    sampler.run(args.seed)   # None: OS CSPRNG keys; a seed: reproducible, marked in every output
    sampler.timing["compile_s"] += compile_s
    sampler.free_data()      # the records are not needed for the outputs: ArviZ and the writer don't sit on them
    del data
    if jax.process_index() != 0:   # several processes: every one holds the same draws; process 0 reports
        return 0
    if args.out:
        _write_netcdf(sampler, args)
    if args.json:
        emit_json({"certificate": sampler.certificate, "chain_keys": sampler.key_source, "timing": sampler.timing,
                   "out": args.out,
                   "samples_shape": {k: list(v.shape) for k, v in sampler.get_samples(group_by_chain=True).items()}})
    else:
        sampler.print_summary()
        if args.out:
            print(f"wrote {args.out} (posterior.attrs['bayesdp_certificate'])")
    return 0
