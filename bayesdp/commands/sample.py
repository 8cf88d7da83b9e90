"""``bayesdp sample MODEL --data FILE --domain ... --sampler ula|sgld ... --out FILE.nc``.

Runs ULA or SGLD exactly as certified (the certificate is computed first, from the same
configuration; an uncovered configuration exits with status 2 unless ``--uncertified``), then
writes the released draws as ArviZ InferenceData (NetCDF) whose ``posterior`` group carries the
attribute ``bayesdp_certificate`` (the certificate as a JSON string).  Divergence exits with
status 2 and writes nothing.
"""

from __future__ import annotations

from ..cli import ARG_TYPES, emit_json


def add_model_data_arguments(p) -> None:
    """MODEL, --data, CSV column options and --domain, shared by `sample` and `release`."""
    p.add_argument("model", metavar="MODEL", help="built-in model name (models/) or path/to/file.py:function")
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
    p.add_argument("--sampler", choices=("ula", "sgld"), required=True, help="ULA (full batch) or SGLD (minibatches)")
    p.add_argument("--step-size", type=ARG_TYPES[float], required=True, help="step size gamma")
    p.add_argument("--num-steps", type=ARG_TYPES[int], required=True, help="number of steps n")
    p.add_argument("--batch-size", type=ARG_TYPES[int], help="SGLD minibatch size s (without replacement)")
    p.add_argument("--inverse-temperature", type=ARG_TYPES[float], default=1.0, help="beta (default 1)")
    p.add_argument("--clip-norm", type=ARG_TYPES[float], help="clip each record's likelihood gradient at this norm")
    p.add_argument("--num-chains", type=ARG_TYPES[int], default=1, help="chains (released chains compose)")
    p.add_argument("--chain-method", choices=("vectorized", "parallel", "sequential"), default="vectorized",
                   help="vectorized (vmap), parallel (sharded over devices) or sequential")
    p.add_argument("--shard-data", action="store_true", help="shard the records over devices (full-batch gradient)")
    p.add_argument("--release", choices=("final", "path", "thinned"), default="final",
                   help="what is released: final draw of each chain, the whole path, or a thinned path")
    p.add_argument("--thinning", type=ARG_TYPES[int], default=1, help="keep every k-th draw (with --release thinned)")
    p.add_argument("--init", choices=("zeros", "prior"), default="zeros",
                   help="data-independent initialisation: zeros (unconstrained space) or a prior draw")
    p.add_argument("--seed", type=ARG_TYPES[int], default=0, help="PRNG seed of the chains")
    p.add_argument("--init-seed", type=ARG_TYPES[int], default=1, help="PRNG seed of the prior draw (--init prior)")
    p.add_argument("--delta", type=ARG_TYPES[float], default=1e-5, help="report epsilon at this delta")
    p.add_argument("--uncertified", action="store_true",
                   help="run even if no certificate covers the configuration (outputs marked certified: false)")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], help="prior scale of a built-in model")
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="other numeric model hyperparameter, e.g. num_classes=3 (repeat)")
    p.add_argument("--progress-bar", action="store_true", help="show a progress bar")
    p.add_argument("--out", metavar="FILE.nc", help="write ArviZ InferenceData (NetCDF) here")
    p.add_argument("--json", action="store_true", help="print the certificate and timing as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from .certify import _model_kwargs

    try:
        from .certify import prepare_jax
    except ImportError:  # pragma: no cover - the certify command is optional
        prepare_jax = None
    if prepare_jax is not None:
        prepare_jax()
    import jax

    from ..analysis.loading import load_data, load_model
    from ..errors import AssumptionError
    from ..samplers import Sampler

    if args.out:
        try:
            import h5py  # noqa: F401 - ArviZ writes NetCDF4 through h5netcdf -> h5py
        except ImportError:
            raise AssumptionError(f"--out {args.out}: writing NetCDF needs the h5py package, which is not "
                                  f"installed; pip install h5py, or drop --out") from None
    model, name = load_model(args.model)
    data = load_data(args.data, args.x_columns, args.y_column)
    kw = _model_kwargs(args)
    if name == "softmax" and "num_classes" not in kw and "y" in data:
        kw["num_classes"] = int(max(data["y"])) + 1 if len(data["y"]) else 2
    sampler = Sampler(model, data, sampler=args.sampler, step_size=args.step_size, num_steps=args.num_steps,
                      inverse_temperature=args.inverse_temperature, batch_size=args.batch_size,
                      clip_norm=args.clip_norm, num_chains=args.num_chains, chain_method=args.chain_method,
                      release=args.release, thinning=args.thinning, init=args.init,
                      init_key=jax.random.key(args.init_seed) if args.init == "prior" else None,
                      domain=args.domain or None, delta=args.delta, uncertified=args.uncertified,
                      model_kwargs=kw, progress_bar=args.progress_bar, shard_data=args.shard_data)
    sampler.run(jax.random.key(args.seed))
    if args.out:
        sampler.to_inference_data().to_netcdf(args.out)
    if args.json:
        emit_json({"certificate": sampler.certificate, "timing": sampler.timing, "out": args.out,
                   "samples_shape": {k: list(v.shape) for k, v in sampler.get_samples(group_by_chain=True).items()}})
    else:
        sampler.print_summary()
        if args.out:
            print(f"wrote {args.out} (posterior.attrs['bayesdp_certificate'])")
    return 0
