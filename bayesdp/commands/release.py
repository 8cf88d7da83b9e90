"""``bayesdp release MODEL --data FILE --domain ... --stat mean --epsilon E --ledger FILE [--budget B] [--json]``.

The flags become the same kernel (``bayesdp.ULA`` / ``bayesdp.SGLD``) and :class:`~bayesdp.publish.spec.ReleaseSpec`
that Python builds, and :func:`bayesdp.release` runs them through the one release engine
(:mod:`bayesdp.publish.engine`): CLI and Python choose the same method with the same settings.  Every check of the
flags runs before anything is read; the ledger is checked before any chain runs and charged before any
randomness of the release is drawn.  Every refusal is one line on stderr, exit status 2, nothing drawn and the
ledger unchanged.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import replace

from ..cli import ARG_TYPES, emit_json
from ..errors import AssumptionError
from ..publish.spec import (ChainOptions, Coupling, Function, Mean, Median, Probability, Quantiles, ReleaseSpec,
                            SampleAggregate)
from ..publish.result import quality_lines
from ..publish.statistics import check_range
from ..resources import check_state_file
from . import _common as c
from ._common import apply_plan, model_kwargs
from .certify import prepare_jax
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
                        "real-support coordinate; or a user function f(samples) -> values of ONE draw's samples "
                        "dict in the constrained space (as in Python: bayesdp.Function), with --lipschitz for the "
                        "coupling method")
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
                   help="number of steps n (default: the method's rule, the same as in Python: coupling and "
                        "sample-aggregate 2000; path the count minimising its predicted error, docs/release.md §8.4)")
    p.add_argument("--burn-in", type=ARG_TYPES[int], help="kept draws dropped per chain (default: half; path: minimising its "
                   "predicted error, raised from the path itself when the chain arrives later, docs/release.md §8.4)")
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
                   help="PRNG seed of the chain(s) run here; default: OS CSPRNG keys. Never recorded. Added noise "
                        "(coupling, sample-aggregate) always comes from the OS CSPRNG; for path and final releases the "
                        "chain's steps ARE the privacy noise: a seed makes the release reproducible and NOT private, "
                        "so it is refused against a --ledger file (a persistent ledger never takes a release that is "
                        "not private)")
    p.add_argument("--allow-uninformative", action="store_true",
                   help="release even when the predicted error is no better than the prior's own spread (or, with "
                        "--plan, 10x worse than a fresh release); without it such a release is refused before "
                        "anything is charged (docs/release.md §12); the warning goes to stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _concentration(args):

    given = [args.concentration, args.concentration_delta, args.posterior_sensitivity]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise AssumptionError("004 Proposition 3.10 needs all of --concentration, --concentration-delta and "
                              "--posterior-sensitivity; pass the three or none")
    return {"concentration": args.concentration, "concentration_delta": args.concentration_delta,
            "posterior_sensitivity": args.posterior_sensitivity}


def _user_statistic(spec: str, lipschitz: float | None, names, l2_lipschitz: float | None, need: bool):
    """``path/to/file.py:function`` as a :class:`~bayesdp.publish.spec.Function` of one draw's samples dict (the
    constrained space, as in Python).

    Args:
        spec: ``path/to/file.py:function``.
        lipschitz: the declared Euclidean -> L1 constant.
        names: one name per output value (default: the function's name).
        l2_lipschitz: the declared Euclidean -> Euclidean constant.
        need: refuse a function without ``lipschitz`` (the coupling method needs it).

    Returns:
        The statistic object.

    Raises:
        AssumptionError: a malformed spec, a missing file or function, a file that fails to import, or no
            declared constant where one is needed.
    """

    if ":" not in spec or not spec.rsplit(":", 1)[0].endswith(".py"):
        raise AssumptionError(f"--stat {spec!r} is not mean, median, quantiles, probability nor path/to/file.py:function")
    if lipschitz is None and need:
        raise AssumptionError(f"--stat {spec}: statistic has no declared Lipschitz constant; pass --lipschitz L "
                              "(|f(s) - f(s')|_1 <= L |s - s'|_2 over the samples), or use --method path, final or "
                              "sample-aggregate")
    path, func = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise AssumptionError(f"--stat {spec}: file {path} does not exist; pass path/to/file.py:function")
    try:
        from ..analysis.loading import exec_user_file

        mod = exec_user_file("bayesdp_user_statistic_" + str(abs(hash(os.path.abspath(path)))), path)
    except Exception as exc:  # noqa: BLE001 - the user's file, reported in one line
        raise AssumptionError(f"--stat {spec}: the file failed to import ({type(exc).__name__}); fix it") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise AssumptionError(f"--stat {spec}: no function {func!r} in {path}")
    return Function(fn, lipschitz=lipschitz, names=tuple(names) if names else (func,), l2_lipschitz=l2_lipschitz,
                    description=func)


def _statistic(args):
    """The statistic object of the flags (the same classes as Python's)."""

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
    if args.stat == "median":
        return Median()
    if args.stat == "quantiles":
        try:
            levels = [float(x) for x in args.q.split(",") if x.strip()]
        except ValueError:
            raise AssumptionError(f"--q {args.q!r} must be comma-separated numbers in (0, 1), e.g. "
                                  "0.05,0.5,0.95") from None
        return Quantiles(levels)
    if args.stat == "probability":
        if not (args.width > 0 and math.isfinite(args.threshold)):
            raise AssumptionError(f"--width {args.width:g} must be > 0 and --threshold finite; pass e.g. --width 0.1")
        return Probability(args.threshold, args.width)
    if args.stat == "mean":
        if args.lipschitz is not None or args.stat_names or args.l2_lipschitz is not None:
            raise AssumptionError("--lipschitz / --l2-lipschitz / --stat-names apply to a user statistic (--stat "
                                  "FILE.py:FUNC), not to --stat mean (its constants are derived)")
        if args.coords:
            coords = [c.strip() for c in args.coords.split(",") if c.strip()]
            if not coords:
                raise AssumptionError("--coords is empty; name the coordinates, e.g. --coords w[0],w[3]")
            if len(set(coords)) != len(coords):
                raise AssumptionError(f"--coords {','.join(coords)} lists a coordinate twice; list each once")
            return Mean(coords=coords)
        return Mean()
    if args.coords:
        raise AssumptionError("--coords applies to --stat mean only")
    names = [n.strip() for n in args.stat_names.split(",")] if args.stat_names else None
    return _user_statistic(args.stat, args.lipschitz, names, args.l2_lipschitz, need=args.method == "coupling" or args.max_delta is not None
                           or args.concentration is not None)


def build_spec(args, plan=None):
    """The :class:`~bayesdp.publish.spec.ReleaseSpec` of the flags, checked (nothing read or run yet).  With a plan
    its steps and chains come from the plan (as ``bayesdp.release(plan, ...)``).

    Args:
        args: the parsed flags.
        plan: the ``--plan``, or None.

    Returns:
        The checked spec.

    Raises:
        AssumptionError: a bad flag (one line).
    """

    conc = _concentration(args)
    if args.method == "sample-aggregate":
        method = SampleAggregate(chunks=args.chunks, partition=args.partition)
    elif args.method == "coupling" or (args.method == "auto" and (conc is not None or args.max_delta is not None)):
        method = Coupling(max_delta=args.max_delta, concentration=conc)     # route options: a coupling release
    else:
        method = args.method
    chain = ChainOptions(num_steps=None if plan is not None else args.num_steps,
                         num_chains=None if plan is not None or args.num_chains == 1 else args.num_chains,
                         burn_in=args.burn_in, thinning=args.thinning)
    stat = _statistic(args)
    rng = value_range(args.range)
    if rng is not None:
        stat = replace(stat, range=rng)           # the public range belongs to the statistic
    return ReleaseSpec(stat, epsilon=args.epsilon, delta=args.noise_delta, noise=args.noise, method=method,
                       level=args.level, chain=chain, allow_uninformative=args.allow_uninformative).check()


def value_range(pair, flag: str = "--range") -> tuple[float, float] | None:
    """``[A, B]`` as a checked range (one line naming ``flag`` otherwise)."""

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
    lines += ["", *quality_lines(out)]
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain" + ("s were" if out.get("sample_and_aggregate") else " itself was") +
              " not published (only the values above)"]
    keys = out.get("chain", {}).get("chain_keys")
    if keys:
        lines.append(f"chain keys: {keys}")
    return "\n".join(lines)


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
    lines += ["", *quality_lines(out)]
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain was not published (only the values above, a statistic of its final draw)",
              f"chain keys: {f['chain_keys']}"]
    return "\n".join(lines)


def format_path(out: dict) -> str:
    p = out["path"]
    lines = [f"released (epsilon = {out['epsilon']:g}, delta = {out['delta']:g}; {out['source']})",
             f"method: path ({out['method']['chosen_by']}): ULA, step size {p['step_size']:.6g}, {p['num_chains']} "
             f"chain(s) x {p['num_steps']} steps, burn-in {p['burn_in']}"
             + (f" (read off the path; planned {p['burn_in_planned']})" if p.get("burn_in_planned") not in
                (None, p["burn_in"]) else "") + ", inverse temperature "
             f"{p['inverse_temperature']:.6g} (the largest whose path is {p['gdp_mu']:.4g}-GDP); no noise added", ""]
    w = max(len(it["name"]) for it in out["items"])
    lines.append(f"  {'name':<{w}}  {'value':>12}  Monte Carlo interval ({out['items'][0]['level']:.0%}, chain's "
                 "expectation)")
    for it in out["items"]:
        iv = it["interval"]
        lines.append(f"  {it['name']:<{w}}  {it['value']:>12.6g}  " +
                     ("n/a" if iv is None else f"[{iv[0]:.6g}, {iv[1]:.6g}]"))
    lines += ["", *quality_lines(out)]
    rb = out["remaining_budget"]
    lines += ["", f"ledger {out['ledger']}: remaining epsilon {rb['epsilon']:.6g}, delta {rb['delta']:.3g}",
              "the chain was not published (only the values above)", f"chain keys: {p['chain_keys']}"]
    return "\n".join(lines)


def _check_options(args) -> None:
    """Every option, the ledger path and the statistic's file, before anything is read or run: a bad
    argument must never cost budget (issue #13: --level 1.5 was checked after the noise was drawn)."""

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
    # with --plan, the chain's settings are the plan's (apply_plan refuses flags that contradict it)
    from_plan = ({"step_size", "num_steps", "batch_size", "clip_norm", "inverse_temperature", "sampler", "num_chains"}
                 if getattr(args, "plan", None) else set())
    if args.method == "path":
        if not args.noise_delta:
            raise AssumptionError("--delta 0 with --method path: the chain's Gaussian steps are not pure epsilon-DP; "
                                  "pass --delta > 0 (e.g. --delta 1e-6) or use --method coupling")
        for dest, bad in (("concentration", args.concentration is not None), ("clip_norm", args.clip_norm is not None),
                          ("batch_size", args.batch_size is not None), ("max_delta", args.max_delta is not None),
                          ("inverse_temperature", args.inverse_temperature != 1.0), ("sampler", args.sampler != "ula"),
                          ("noise", args.noise != "auto")):
            if bad and dest not in from_plan:
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
                          ("num_steps", args.num_steps is not None), ("burn_in", args.burn_in is not None),
                          ("thinning", args.thinning != 1), ("num_chains", args.num_chains != 1)):
            if bad and dest not in from_plan:
                raise AssumptionError(f"{c._flag(dest)} does not apply to --method final (one full-batch ULA chain "
                                      "planned by bayesdp calibrate --mechanism ula-final; no noise is added); drop it")
    steps = args.num_steps if args.num_steps is not None else 2000
    if args.burn_in is not None and args.num_steps is not None and args.burn_in >= steps // args.thinning:
        raise AssumptionError(f"--burn-in {args.burn_in} must be < the {steps // args.thinning} draws kept "
                              "per chain (--num-steps / --thinning); lower --burn-in")
    if args.thinning > 1 and steps % args.thinning:
        raise AssumptionError(f"--thinning {args.thinning} does not divide --num-steps {args.num_steps}; pick "
                              "--num-steps a multiple of --thinning")
    if not args.domain:
        raise AssumptionError("--domain is required: public bounds on one record, e.g. --domain X.norm=1 "
                              "y.values=0,1")
    check_state_file(args.ledger, "--ledger")


def run(args) -> int:

    from .. import api
    from ..analysis.loading import load_data, load_model
    from ..analysis.records import validate_records
    from ..publish.aggregate import check_chunks
    from ..publish.engine import open_accountant
    plan = apply_plan(args)    # --plan: the plan's model, domain and settings, as release(plan, ...) in Python
    if not args.model:
        raise AssumptionError("MODEL is required (or --plan PLAN.json)")
    _check_options(args)
    spec = build_spec(args, plan)
    kw = model_kwargs(args)

    prepare_jax()

    model, name = load_model(args.model)
    data, m = validate_records(load_data(args.data, args.x_columns, args.y_column))
    if args.batch_size is not None and args.batch_size > m:
        raise AssumptionError(f"--batch-size {args.batch_size} exceeds the {m} records; batches are drawn without "
                              f"replacement: pass 1 <= --batch-size <= {m}")
    if args.chunks is not None:
        check_chunks(args.chunks, m, "--chunks")
    source = kernel_of(args, model, kw) if plan is None else plan
    created = not os.path.lexists(args.ledger)
    acct = open_accountant(args.ledger, args.budget, args.budget_delta, args.dataset or os.path.basename(args.data))
    t0 = time.perf_counter()
    try:
        res = api.release(source, spec, data=data, accountant=acct, rng_key=args.seed)
    except BaseException:
        if created and not acct.entries:        # refused before any charge: leave no empty ledger behind
            with contextlib.suppress(OSError):
                os.unlink(args.ledger)
        raise
    out = res.to_dict()
    out["timing"] = {"total_s": time.perf_counter() - t0}
    for w in res.extra.get("warnings", ()):
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        emit_json(out)
        return 0
    method = out["method"]["method"]
    if method == "path":
        print(format_path(out))
    elif method == "final":
        print(format_final(out))
    else:
        print(format_release(out))
        if method == "sample-aggregate":
            agg = out["sample_and_aggregate"]
            print(f"sample-and-aggregate: {agg['chunks']} chunks of {agg['chunk_size']} records ({agg['chunks_rule']});"
                  " the chunk draws were not published")
    return 0


def kernel_of(args, model, model_kwargs):
    """The kernel the flags describe (``bayesdp.ULA`` / ``bayesdp.SGLD`` with the model and the domain).

    Args:
        args: the parsed flags.
        model: the model function.
        model_kwargs: its hyperparameters.

    Returns:
        The kernel.
    """
    from .. import plan as plan_mod
    common = dict(model=model, step_size=args.step_size, inverse_temperature=args.inverse_temperature,
                  clip_norm=args.clip_norm, domain=list(args.domain), model_kwargs=model_kwargs)
    if args.sampler == "sgld":
        return plan_mod.SGLD(**common, batch_size=args.batch_size)
    return plan_mod.ULA(**common)


