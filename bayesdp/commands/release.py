"""``bayesdp release MODEL --data FILE --domain ... --stat mean --epsilon E --ledger FILE [--budget B] [--json]``.

Certify -> sample -> release (bayesdp/publish/pipeline.py): the chain runs in memory and is never
published; the released numbers are Monte Carlo averages of a Lipschitz statistic plus secure
discretised Laplace noise calibrated to the coupling sensitivity (004 Proposition 3.7 with
delta~ = 0, docs/release.md), or to user-certified 004 Proposition 3.10 constants.  The ledger is
checked before the chain runs and charged before the noise is drawn.  Every refusal is one line on
stderr, exit status 2, nothing drawn and the ledger unchanged.
"""

from __future__ import annotations

import math
import os

from ..cli import ARG_TYPES, emit_json
from .sample import add_model_data_arguments


def add_parser(sub) -> None:
    p = sub.add_parser("release", help="release noisy posterior means under a privacy budget ledger",
                       description="Run ULA/SGLD (not published) and release Laplace-noised Monte Carlo estimates "
                                   "of a Lipschitz statistic, pure eps-DP by synchronous coupling; the spend is "
                                   "recorded in a ledger.")
    add_model_data_arguments(p)
    # statistic
    p.add_argument("--stat", default="mean", metavar="mean|median|quantiles|probability|FILE.py:FUNC",
                   help="'mean': posterior mean of every coordinate (or of --coords); 'median', 'quantiles' (with "
                        "--q) or 'probability' (P(theta > --threshold), smoothed by a ramp of --width) of every "
                        "real-support coordinate; or a user function of the unconstrained draws (n, dim) -> (n, k) "
                        "with --lipschitz")
    p.add_argument("--q", metavar="Q1,Q2,...", help="with --stat quantiles: levels in (0, 1), e.g. 0.05,0.5,0.95")
    p.add_argument("--threshold", type=ARG_TYPES[float], help="with --stat probability: the threshold t")
    p.add_argument("--width", type=ARG_TYPES[float],
                   help="with --stat probability: width of the ramp that smooths the indicator (noise ~ 1/width)")
    p.add_argument("--coords", help="with --stat mean: only these coordinates, e.g. w[0],w[3] (L1 Lipschitz sqrt(k))")
    p.add_argument("--lipschitz", type=ARG_TYPES[float],
                   help="declared Lipschitz constant of a user statistic: |f(z)-f(z')|_1 <= L |z-z'|_2")
    p.add_argument("--l2-lipschitz", type=ARG_TYPES[float],
                   help="declared Euclidean constant of a user statistic: |f(z)-f(z')|_2 <= L2 |z-z'|_2 (Gaussian "
                        "noise; default: --lipschitz)")
    p.add_argument("--stat-names", help="comma-separated names of the user statistic's outputs")
    p.add_argument("--range", nargs=2, type=ARG_TYPES[float], metavar=("A", "B"),
                   help="public range [A, B] of every released value: values clamped to it, intervals clipped "
                        "(post-processing; probabilities have 0 1 already); required by sample-aggregate")
    p.add_argument("--level", type=ARG_TYPES[float], default=0.95, help="interval level (default 0.95)")
    # privacy
    p.add_argument("--epsilon", type=ARG_TYPES[float], required=True, help="epsilon of this release")
    p.add_argument("--noise", choices=("auto", "laplace", "gaussian"), default="auto",
                   help="auto (default): the noise with the smaller expected squared error at (--epsilon, --delta), "
                        "from the sensitivities only; laplace: pure epsilon-DP; gaussian: needs --delta > 0")
    p.add_argument("--delta", dest="noise_delta", type=ARG_TYPES[float], default=0.0,
                   help="delta Gaussian noise may spend (default 0: Laplace only)")
    p.add_argument("--method", choices=("auto", "coupling", "path", "final", "sample-aggregate"), default="auto",
                   help="auto (default): with --delta > 0 the method of smallest predicted error among path, final "
                        "and coupling, else coupling (docs/release.md §9-10); coupling: the Monte Carlo estimate of "
                        "one unpublished chain plus noise calibrated by synchronous coupling; path: the estimate of a "
                        "chain whose whole path is private (no noise added; needs --delta > 0); final: the final draw "
                        "of a chain planned by bayesdp calibrate --mechanism ula-final (no noise added; needs --delta "
                        "> 0); sample-aggregate: one chain per disjoint chunk of the records, each estimate clamped "
                        "to --range")
    p.add_argument("--chunks", type=ARG_TYPES[int],
                   help="with --method sample-aggregate: number of chunks k (default: chosen from the budget, "
                        "docs/release.md §7.2)")
    p.add_argument("--partition", choices=("random", "index"), default="random",
                   help="with --method sample-aggregate: chunks by index after a CSPRNG permutation (default) or in "
                        "index order")
    p.add_argument("--ledger", metavar="FILE", required=True, help="privacy budget ledger (JSON) of this dataset")
    p.add_argument("--budget", type=ARG_TYPES[float], help="total epsilon of the ledger when it does not exist yet")
    p.add_argument("--budget-delta", type=ARG_TYPES[float], help="total delta of a new ledger (default 0)")
    p.add_argument("--dataset", help="dataset label recorded in the ledger (default: the data file's name)")
    p.add_argument("--concentration", type=ARG_TYPES[float],
                   help="004 Proposition 3.10: certified L1 concentration C of the estimate (with "
                        "--concentration-delta and --posterior-sensitivity)")
    p.add_argument("--concentration-delta", type=ARG_TYPES[float], help="004 Proposition 3.10: delta~")
    p.add_argument("--posterior-sensitivity", type=ARG_TYPES[float], help="004 Proposition 3.10: gamma_f")
    p.add_argument("--max-delta", type=ARG_TYPES[float], help="refuse sensitivity routes with a larger delta")
    # sampler (as bayesdp certify / sample)
    p.add_argument("--sampler", choices=("ula", "sgld"), default="ula", help="ULA (default) or SGLD")
    p.add_argument("--step-size", type=ARG_TYPES[float],
                   help="step size gamma (default 1/total_smoothness from the domain's constants)")
    p.add_argument("--num-steps", type=ARG_TYPES[int], default=None,
                   help="number of steps n (default 2000; --method path: ten relaxation times of the curvature "
                        "proxy, docs/release.md §8.2)")
    p.add_argument("--burn-in", type=ARG_TYPES[int], help="kept draws dropped per chain (default: half)")
    p.add_argument("--thinning", type=ARG_TYPES[int], default=1, help="keep every k-th draw")
    p.add_argument("--num-chains", type=ARG_TYPES[int], default=1, help="chains averaged together")
    p.add_argument("--batch-size", type=ARG_TYPES[int], help="SGLD minibatch size s")
    p.add_argument("--inverse-temperature", type=ARG_TYPES[float], default=1.0, help="beta (default 1)")
    p.add_argument("--clip-norm", type=ARG_TYPES[float],
                   help="clip each record's likelihood gradient (no coupling bound: needs Prop. 3.10 constants)")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], help="prior scale of a built-in model")
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="other numeric model hyperparameter, e.g. num_classes=3 (repeat)")
    p.add_argument("--seed", type=ARG_TYPES[int],
                   help="PRNG seed of the (unpublished) chain; default: OS CSPRNG keys. Never recorded; the privacy "
                        "noise is never seeded")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _concentration(args):
    from ..errors import AssumptionError

    given = [args.concentration, args.concentration_delta, args.posterior_sensitivity]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise AssumptionError("004 Proposition 3.10 needs all of --concentration, --concentration-delta and "
                              "--posterior-sensitivity; pass the three or none")
    return {"concentration": args.concentration, "concentration_delta": args.concentration_delta,
            "posterior_sensitivity": args.posterior_sensitivity}


def _statistic(args):
    from ..errors import AssumptionError
    from ..publish.pipeline import coordinate_subset_means, load_user_statistic, site_specs

    from ..publish.statistics import coordinate_quantiles, exceedance_probabilities, quantile_levels

    named = args.stat in ("mean", "median", "quantiles", "probability")
    if (args.q is not None) != (args.stat == "quantiles"):
        raise AssumptionError("--q goes with --stat quantiles (and --stat quantiles needs --q, e.g. --q 0.05,0.5,0.95)")
    if ((args.threshold is not None or args.width is not None) != (args.stat == "probability")
            or (args.stat == "probability" and (args.threshold is None or args.width is None))):
        raise AssumptionError("--threshold and --width go together with --stat probability, e.g. --stat probability "
                              "--threshold 0 --width 0.1")
    if named and args.stat != "mean" and (args.lipschitz is not None or args.stat_names or args.coords
                                          or args.l2_lipschitz is not None):
        raise AssumptionError(f"--lipschitz / --l2-lipschitz / --stat-names / --coords do not apply to --stat "
                              f"{args.stat} (its constants are derived; it covers every real-support coordinate)")
    if args.stat in ("median", "quantiles"):
        try:
            levels = [0.5] if args.stat == "median" else [float(x) for x in args.q.split(",") if x.strip()]
        except ValueError:
            raise AssumptionError(f"--q {args.q!r} must be comma-separated numbers in (0, 1), e.g. "
                                  "0.05,0.5,0.95") from None
        levels = quantile_levels(levels)
        return lambda smp, an: coordinate_quantiles(site_specs(smp, an), levels)
    if args.stat == "probability":
        c_positive = args.width is not None and args.width > 0 and math.isfinite(args.threshold)
        if not c_positive:
            raise AssumptionError(f"--width {args.width:g} must be > 0 and --threshold finite; pass e.g. --width 0.1")
        return lambda smp, an: exceedance_probabilities(site_specs(smp, an), args.threshold, args.width)
    if args.stat == "mean":
        if args.lipschitz is not None or args.stat_names or args.l2_lipschitz is not None:
            raise AssumptionError("--lipschitz / --l2-lipschitz / --stat-names apply to a user statistic (--stat "
                                  "FILE.py:FUNC), not to --stat mean (its constants are derived)")
        if args.coords:
            return lambda smp, an: coordinate_subset_means(site_specs(smp, an), args.coords.split(","))
        return "mean"
    if args.coords:
        raise AssumptionError("--coords applies to --stat mean only")
    names = [n.strip() for n in args.stat_names.split(",")] if args.stat_names else None
    return load_user_statistic(args.stat, args.lipschitz, names, args.l2_lipschitz,
                               require_lipschitz=args.method != "sample-aggregate")


def value_range(pair, flag: str = "--range") -> tuple[float, float] | None:
    """``[A, B]`` as a checked range (one line naming ``flag`` otherwise)."""
    from ..errors import AssumptionError
    from ..publish.statistics import check_range

    if pair is None:
        return None
    try:
        return check_range(pair, flag)
    except AssumptionError:
        raise AssumptionError(f"{flag} {pair[0]:g} {pair[1]:g} must be finite with A < B; pass the public range of "
                              f"the released values, e.g. {flag} -3 3") from None


def format_release(out: dict) -> str:
    gaussian = out.get("noise_mechanism") == "gaussian"
    noise = out.get("noise") or {}
    how = "chosen by the user" if noise.get("chosen_by") == "user" else "smaller expected squared error"
    st = out["statistic"]
    lip = (f"Lipschitz {st['lipschitz']:.6g}: {st['lipschitz_source']}" if st.get("lipschitz") is not None
           else st["lipschitz_source"])
    lines = [f"released (epsilon = {out['epsilon']:g}, delta = {out['delta']:g}; {out['source']})",
             f"statistic: {st['description']}  ({lip})",
             f"{out['sensitivity_norm']} sensitivity {out['sensitivity']:.6g} (proven {out['proven_sensitivity']:.6g} "
             f"+ grid rounding), {'Gaussian sigma' if gaussian else 'Laplace scale'} {out['noise_scale']:.6g} per "
             f"value, noise variance {out['noise_variance']:.6g}",
             f"noise: {out.get('noise_mechanism', 'laplace')} ({how})"]
    if out.get("postprocessing", {}).get("clamp"):
        a, b = out["postprocessing"]["clamp"]
        lines.append(f"values clamped to [{a:g}, {b:g}] (post-processing)")
    lines.append("")
    w = max(len(it["name"]) for it in out["items"])
    total = any(it.get("total_interval") for it in out["items"])
    lines.append(f"  {'name':<{w}}  {'value':>12}  {'noise scale':>12}  interval ({out['items'][0]['level']:.0%}, "
                 "noise only)" + ("   with Monte Carlo bound" if total else ""))
    for it in out["items"]:
        lo, hi = it["interval"]
        row = f"  {it['name']:<{w}}  {it['value']:>12.6g}  {it['noise_scale']:>12.6g}  [{lo:.6g}, {hi:.6g}]"
        if it.get("total_interval"):
            tlo, thi = it["total_interval"]
            row += f"   [{tlo:.6g}, {thi:.6g}]"
        lines.append(row)
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain" + ("s were" if out.get("sample_and_aggregate") else " itself was") +
              " not published (only the values above)"]
    keys = out.get("chain", {}).get("chain_keys")
    if keys:
        lines.append(f"chain keys: {keys}")
    return "\n".join(lines)


def _check_options(args) -> None:
    """Every option, the ledger path and the statistic's file, before anything is read or run: a bad
    argument must never cost budget (issue #13: --level 1.5 was checked after the noise was drawn)."""
    from ..errors import AssumptionError
    from ..resources import check_state_file
    from . import _common as c

    c.positive_opt(args, "epsilon", "pass a positive epsilon")
    c.open_unit_opt(args, "level", "0.95")
    c.positive_opt(args, "budget", "pass a positive total epsilon")
    c.half_open_unit_opt(args, "budget_delta")
    c.half_open_unit_opt(args, "max_delta")
    c.positive_opt(args, "lipschitz", "declare a positive Lipschitz constant")
    c.positive_opt(args, "l2_lipschitz", "declare a positive Lipschitz constant")
    d = args.noise_delta
    if not (isinstance(d, float) and math.isfinite(d) and 0.0 <= d < 1.0):
        raise AssumptionError(f"--delta {d!r} must be in [0, 1); pass e.g. --delta 1e-6 (Gaussian noise) or 0")
    if args.noise == "gaussian" and not args.noise_delta:
        raise AssumptionError("--delta 0 with --noise gaussian: Gaussian noise is not pure epsilon-DP; pass --delta "
                              "> 0 (e.g. --delta 1e-6) or use --noise laplace")
    value_range(args.range)
    c.positive_opt(args, "concentration")
    c.open_unit_opt(args, "concentration_delta", "1e-6")
    c.positive_opt(args, "posterior_sensitivity")
    c.sampler_opts(args)
    c.nonnegative_opt(args, "burn_in")
    c.seed_opt(args)
    c.csv_opts(args)
    c.data_file_opt(args)
    c.count_opt(args, "chunks")
    if args.method == "sample-aggregate":
        if args.range is None and args.stat != "probability":
            raise AssumptionError("--range is required by --method sample-aggregate: each chunk's estimate is clamped "
                                  "to the public range of the released values; pass e.g. --range -3 3")
        for dest, bad in (("concentration", args.concentration is not None), ("clip_norm", args.clip_norm is not None),
                          ("batch_size", args.batch_size is not None), ("max_delta", args.max_delta is not None),
                          ("thinning", args.thinning != 1), ("num_chains", args.num_chains != 1),
                          ("inverse_temperature", args.inverse_temperature != 1.0),
                          ("sampler", args.sampler != "ula")):
            if bad:
                raise AssumptionError(f"{c._flag(dest)} does not apply to --method sample-aggregate (one full-batch "
                                      "ULA chain at inverse temperature 1 per chunk); drop it")
    elif args.chunks is not None or args.partition != "random":
        raise AssumptionError("--chunks / --partition apply to --method sample-aggregate only")
    if args.method == "path":
        if not args.noise_delta:
            raise AssumptionError("--delta 0 with --method path: the chain's Gaussian steps are not pure epsilon-DP; "
                                  "pass --delta > 0 (e.g. --delta 1e-6) or use --method coupling")
        for dest, bad in (("concentration", args.concentration is not None), ("clip_norm", args.clip_norm is not None),
                          ("batch_size", args.batch_size is not None), ("max_delta", args.max_delta is not None),
                          ("inverse_temperature", args.inverse_temperature != 1.0), ("sampler", args.sampler != "ula"),
                          ("noise", args.noise != "auto")):
            if bad:
                raise AssumptionError(f"{c._flag(dest)} does not apply to --method path (full-batch ULA at the "
                                      "inverse temperature the budget allows; no noise is added); drop it")
    if args.method == "final":
        if not args.noise_delta:
            raise AssumptionError("--delta 0 with --method final: a chain's last draw is not pure epsilon-DP; pass "
                                  "--delta > 0 (e.g. --delta 1e-6) or use --method coupling")
        for dest, bad in (("concentration", args.concentration is not None), ("clip_norm", args.clip_norm is not None),
                          ("batch_size", args.batch_size is not None), ("max_delta", args.max_delta is not None),
                          ("inverse_temperature", args.inverse_temperature != 1.0), ("sampler", args.sampler != "ula"),
                          ("noise", args.noise != "auto"), ("step_size", args.step_size is not None),
                          ("num_steps", getattr(args, "steps_given", False)), ("burn_in", args.burn_in is not None),
                          ("thinning", args.thinning != 1), ("num_chains", args.num_chains != 1)):
            if bad:
                raise AssumptionError(f"{c._flag(dest)} does not apply to --method final (one full-batch ULA chain "
                                      "planned by bayesdp calibrate --mechanism ula-final; no noise is added); drop it")
    if args.burn_in is not None and args.burn_in >= args.num_steps // args.thinning:
        raise AssumptionError(f"--burn-in {args.burn_in} must be < the {args.num_steps // args.thinning} draws kept "
                              "per chain (--num-steps / --thinning); lower --burn-in")
    if args.thinning > 1 and args.num_steps % args.thinning:
        raise AssumptionError(f"--thinning {args.thinning} does not divide --num-steps {args.num_steps}; pick "
                              "--num-steps a multiple of --thinning")
    if not args.domain:
        raise AssumptionError("--domain is required: public bounds on one record, e.g. --domain X.norm=1 "
                              "y.values=0,1")
    check_state_file(args.ledger, "--ledger")


def run(args) -> int:
    from ..errors import AssumptionError
    from ._common import apply_plan, model_kwargs

    apply_plan(args)         # --plan: the chain whose mean is released is the plan's (model, domain, settings)
    if not args.model:
        raise AssumptionError("MODEL is required (or --plan PLAN.json)")
    path_steps = args.num_steps             # None: the path release picks its own
    args.steps_given = args.num_steps is not None
    if args.num_steps is None:
        args.num_steps = 2000
    _check_options(args)
    kw = model_kwargs(args)
    conc = _concentration(args)
    if args.method == "auto" and (not args.noise_delta or args.noise != "auto" or conc is not None
                                  or args.sampler != "ula" or args.clip_norm is not None
                                  or args.inverse_temperature != 1.0 or args.max_delta is not None):
        args.method, args.method_why = "coupling", "auto: the options ask for a coupling release"
    if args.method != "auto":
        stat = _statistic(args)
    from .certify import prepare_jax

    prepare_jax()
    from ..analysis.loading import load_data, load_model
    from ..analysis.records import validate_records
    from ..publish import pipeline

    model, name = load_model(args.model)
    data, m = validate_records(load_data(args.data, args.x_columns, args.y_column))
    from ..analysis import Domain
    from ..analysis.inputs import counts_from_domain

    kw = counts_from_domain(model, Domain.parse(args.domain), kw)   # e.g. num_classes from y.values (public)
    if args.batch_size is not None and args.batch_size > m:
        from ..errors import AssumptionError

        raise AssumptionError(f"--batch-size {args.batch_size} exceeds the {m} records; batches are drawn without "
                              f"replacement: pass 1 <= --batch-size <= {m}")
    if args.method == "auto":
        from ..analysis import analyze
        from ..publish.aggregate import _SitesOnly
        from ..publish.path import auto_method
        from ..publish.pipeline import coordinate_means, site_specs
        from ..publish.statistics import Statistic
        from ..samplers import ModelPotential

        args.method = "path"            # the statistic of a path release needs no Lipschitz constant
        stat = _statistic(args)
        an = analyze(model, data=data, domain=Domain.parse(args.domain), model_kwargs=kw, model_name=name)
        pot = ModelPotential(model, data, kw)
        st = (stat if isinstance(stat, Statistic) else coordinate_means(site_specs(_SitesOnly(pot), an))
              if stat == "mean" else stat(_SitesOnly(pot), an)).with_range(value_range(args.range))
        pinned = (args.step_size is not None or args.steps_given or args.burn_in is not None or args.thinning != 1
                  or args.num_chains != 1)      # the chain is the user's: the last-draw release plans its own
        args.method, args.method_why = auto_method(an.constants.to_dict(), pot.dim, st, args.epsilon,
                                                   args.noise_delta, args.noise, step_size=args.step_size,
                                                   allow_final=not pinned)
        stat = _statistic(args)
    if args.method == "sample-aggregate":
        return _run_aggregate(args, model, name, data, m, kw, stat)
    if args.method == "path":
        args.num_steps = path_steps
        return _run_path(args, model, name, data, kw, stat)
    if args.method == "final":
        return _run_final(args, model, name, data, kw, stat)
    res = pipeline.run(model, data, domain=args.domain, statistic=stat, epsilon=args.epsilon, ledger=args.ledger,
                       budget_epsilon=args.budget, budget_delta=args.budget_delta,
                       dataset=args.dataset or os.path.basename(args.data), sampler=args.sampler,
                       step_size=args.step_size, num_steps=args.num_steps, burn_in=args.burn_in,
                       batch_size=args.batch_size, inverse_temperature=args.inverse_temperature,
                       clip_norm=args.clip_norm, num_chains=args.num_chains, thinning=args.thinning,
                       model_kwargs=kw, model_name=name, concentration=conc, max_delta=args.max_delta,
                       level=args.level, seed=args.seed, noise=args.noise, noise_delta=args.noise_delta,
                       value_range=value_range(args.range))
    out = res.to_dict()
    out["method"] = {"method": "coupling", "chosen_by": getattr(args, "method_why", "user")}
    if args.json:
        emit_json(out)
    else:
        print(format_release(out))
    return 0


def _run_path(args, model, name, data, kw, stat) -> int:
    """``--method path``: the chain at the inverse temperature the budget allows; reserved before it runs."""
    import time

    from ..publish.path import release_path_model

    t0 = time.perf_counter()
    res = release_path_model(model, data, domain=args.domain, statistic=stat, epsilon=args.epsilon,
                             delta=args.noise_delta, ledger=args.ledger, step_size=args.step_size,
                             num_steps=args.num_steps, num_chains=args.num_chains, burn_in=args.burn_in,
                             model_kwargs=kw, value_range=value_range(args.range), level=args.level, seed=args.seed,
                             budget_epsilon=args.budget, budget_delta=args.budget_delta,
                             dataset=args.dataset or os.path.basename(args.data),
                             chosen_by=getattr(args, "method_why", "user"), model_name=name)
    out = res.to_dict()
    out["method"] = {"method": "path", "chosen_by": getattr(args, "method_why", "user")}
    desc = res.items and (f"{len(res.items)} value(s)")
    out["statistic"] = {"description": f"statistic of the private path ({desc})", "lipschitz": None,
                        "lipschitz_source": "no Lipschitz constant: the whole path is private (docs/release.md §8)"}
    out["timing"] = {"total_s": time.perf_counter() - t0}
    if args.json:
        emit_json(out)
    else:
        print(format_path(out))
    return 0


def _run_final(args, model, name, data, kw, stat) -> int:
    """``--method final``: the chain bayesdp calibrate plans for the final draw; reserved before it runs."""
    import time

    from ..publish.final import release_final_model

    t0 = time.perf_counter()
    res = release_final_model(model, data, domain=args.domain, statistic=stat, epsilon=args.epsilon,
                              delta=args.noise_delta, ledger=args.ledger, model_kwargs=kw,
                              value_range=value_range(args.range), level=args.level, seed=args.seed,
                              budget_epsilon=args.budget, budget_delta=args.budget_delta,
                              dataset=args.dataset or os.path.basename(args.data),
                              chosen_by=getattr(args, "method_why", "user"), model_name=name)
    out = res.to_dict()
    out["method"] = {"method": "final", "chosen_by": getattr(args, "method_why", "user")}
    out["statistic"] = {"description": f"statistic of the final draw of a private chain ({len(res.items)} value(s))",
                        "lipschitz": None,
                        "lipschitz_source": "no Lipschitz constant: the final draw is private (docs/release.md §10)"}
    out["timing"] = {"total_s": time.perf_counter() - t0}
    if args.json:
        emit_json(out)
    else:
        print(format_final(out))
    return 0


def format_final(out: dict) -> str:
    """The readable form of a ``--method final`` release."""
    f = out["final"]
    lines = [f"released (epsilon = {out['epsilon']:g}, delta = {out['delta']:g}; {out['source']})",
             f"method: final ({out['method']['chosen_by']}): ULA, step size {f['step_size']:.6g}, 1 chain x "
             f"{f['num_steps']} steps, inverse temperature {f['inverse_temperature']:.6g} (planned by bayesdp "
             f"calibrate --mechanism ula-final; the final draw is {f['gdp_mu']:.4g}-GDP); no noise added", ""]
    w = max(len(it["name"]) for it in out["items"])
    lines.append(f"  {'name':<{w}}  {'value':>12}")
    for it in out["items"]:
        lines.append(f"  {it['name']:<{w}}  {it['value']:>12.6g}")
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain was not published (only the values above, a statistic of its final draw)",
              f"chain keys: {f['chain_keys']}"]
    return "\n".join(lines)


def format_path(out: dict) -> str:
    p = out["path"]
    lines = [f"released (epsilon = {out['epsilon']:g}, delta = {out['delta']:g}; {out['source']})",
             f"method: path ({out['method']['chosen_by']}): ULA, step size {p['step_size']:.6g}, {p['num_chains']} "
             f"chain(s) x {p['num_steps']} steps, burn-in {p['burn_in']}, inverse temperature "
             f"{p['inverse_temperature']:.6g} (the largest whose path is {p['gdp_mu']:.4g}-GDP); no noise added", ""]
    w = max(len(it["name"]) for it in out["items"])
    lines.append(f"  {'name':<{w}}  {'value':>12}  Monte Carlo interval ({out['items'][0]['level']:.0%}, chain's "
                 "expectation)")
    for it in out["items"]:
        iv = it["interval"]
        lines.append(f"  {it['name']:<{w}}  {it['value']:>12.6g}  " +
                     ("n/a" if iv is None else f"[{iv[0]:.6g}, {iv[1]:.6g}]"))
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain was not published (only the values above)", f"chain keys: {p['chain_keys']}"]
    return "\n".join(lines)


def _run_aggregate(args, model, name, data, m, kw, stat) -> int:
    """``--method sample-aggregate``: checks (chunks against the records, the ledger) before any chain runs."""
    import time

    from ..publish.aggregate import aggregate_info, check_chunks, sample_and_aggregate

    if args.chunks is not None:
        check_chunks(args.chunks, m, "--chunks")
    t0 = time.perf_counter()
    res, agg = sample_and_aggregate(
        model, data, statistic=stat, value_range=value_range(args.range), epsilon=args.epsilon, ledger=args.ledger,
        domain=args.domain, delta=args.noise_delta, noise=args.noise, chunks=args.chunks, step_size=args.step_size,
        num_steps=args.num_steps, burn_in=args.burn_in, model_kwargs=kw, budget_epsilon=args.budget,
        budget_delta=args.budget_delta, dataset=args.dataset or os.path.basename(args.data), level=args.level,
        seed=args.seed, partition_rule=args.partition, model_name=name)
    out = res.to_dict()
    out["sample_and_aggregate"] = aggregate_info(agg)
    a, b = res.postprocessing["clamp"]
    out["statistic"] = {"description": f"{res.items[0].name if len(res.items) == 1 else 'the statistic'} on each of "
                                       f"{agg.chunks} chunks' posteriors, clamped to [{a:g}, {b:g}], averaged",
                        "lipschitz": None,
                        "lipschitz_source": "no Lipschitz constant: the window is (b - a)/k per coordinate "
                                            "(docs/release.md §7)"}
    out["timing"] = {"total_s": time.perf_counter() - t0, **agg.timing}
    if args.json:
        emit_json(out)
    else:
        print(format_release(out))
        print(f"sample-and-aggregate: {agg.chunks} chunks of {agg.chunk_size} records ({agg.rule}); the chunk "
              "draws were not published")
    return 0
