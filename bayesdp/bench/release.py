"""``bayesdp bench release``: where a release spends its time (default), or its utility (``--utility``).

Time breakdown (issue 24): a release of the logistic model at ``--size`` records of ``--dim`` features through
the public entry point (`bayesdp.cli.main`, as ``bayesdp release`` runs it), each in a fresh process, three
times: an empty compilation cache (``cold``), the same cache again (``warm``) and no cache (``off``).  The
release is measured from the outside, so the engine can change beneath it: a sampling profiler (the main
thread's stack every millisecond) attributes the wall time to ``import`` (the imports a release needs, and
any import during it), ``compile`` (XLA compilation and the persistent cache), ``trace`` (JAX tracing and
lowering), ``analysis`` (bayesdp/analysis), ``chain`` (bayesdp/samplers and the device work it waits for),
``noise`` (bayesdp/publish/noise.py), ``ledger`` (bayesdp/budget) and ``other``; JAX's own monitoring events
give the number of compilations and their exact backend time.  ``process_s`` is the wall time of the whole
process, interpreter start included (the time a user waits for the command).

Last draw, warm (``--last-draw``, issue 24 item 4: under 2 s at m = 1e4): in ONE process, ``--rounds`` times,
``bayesdp calibrate MODEL --mechanism ula-final`` (the last-draw plan) and then ``bayesdp release --method final``
(which plans its chain the same way, then runs it), at epsilon 1, 1.01, 1.02, ... (one per round: no round reuses
the plan another round searched), each through `bayesdp.cli.main` with the same sampling
profiler; the first round is cold, the later ones warm.  The breakdown adds ``accounting`` (the privacy
accounting: bayesdp/calibration.py, certificate.py, curves.py, mechanisms/ and theorems/).

Warm, in one process (``--warm``, issue 24's target: at most 0.15 s plus the chain's own time): the default release
of the time breakdown, ``--rounds`` times in ONE process through `bayesdp.cli.main`, at epsilon 1, 1.01, 1.02, ...
(each round plans afresh: no round reuses another's GDP inversion), each against its own ledger, with the same
sampling profiler; the first round is cold.  ``overhead_s`` is a round's time less its ``chain`` share (the
sampler's Python and the device work it waits for), the part the target bounds.

Utility (``--utility``): for the demo model (logistic regression on the bundled Breast Cancer data, prior scale 0.5) the
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

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from ..cli import ARG_TYPES
from ..errors import AssumptionError
from ..publish.data import load_breast_cancer, scale_to_unit_ball
from ..publish.spec import ChainOptions, ReleaseSpec
from ..publish import demo
from dataclasses import replace
import numpy as np

__all__ = ["NAME", "HELP", "EPSILONS", "add_arguments", "run", "format_table"]

NAME = "release"
HELP = ("time breakdown of a release (import, analysis, compile, chain, noise, ledger) in fresh processes; "
        "--utility: released error vs the non-private estimate for the demo model at eps in {0.1, 1, 10}")
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
        {'utility': False, 'last_draw': False, 'warm': False, 'rounds': 3, 'size': 10000, 'dim': 10, 'repeats': 200, 'num_steps': 4000, 'prior_scale': 0.5, 'seed': 0}
    """

    parser.add_argument("--utility", action="store_true", help="the utility benchmark instead of the time breakdown")
    parser.add_argument("--last-draw", action="store_true",
                        help="last-draw calibrate + release, --rounds times in one process (cold, then warm)")
    parser.add_argument("--warm", action="store_true",
                        help="the default release --rounds times in one process (cold, then warm)")
    parser.add_argument("--rounds", type=ARG_TYPES[int], default=3,
                        help="--last-draw, --warm: rounds in the one process")
    parser.add_argument("--size", type=ARG_TYPES[int], default=10_000, help="time breakdown: records m")
    parser.add_argument("--dim", type=ARG_TYPES[int], default=10, help="time breakdown: features d")
    parser.add_argument("--repeats", type=ARG_TYPES[int], default=200, help="--utility: releases per (statistic, eps)")
    parser.add_argument("--num-steps", type=ARG_TYPES[int], default=4000, help="ULA steps per chain")
    parser.add_argument("--prior-scale", type=ARG_TYPES[float], default=0.5, help="prior scale of the demo model")
    parser.add_argument("--seed", type=ARG_TYPES[int], default=0, help="seed of the chain (not of the noise)")


def run(args) -> dict:
    """Run ``bayesdp bench release`` with the parsed options ``args``: JSON-ready results.

    By default the time breakdown of one release in fresh processes (cold, warm and no compilation cache;
    see the module docstring; about 20 s).  With ``args.utility``: one chain of the demo model, then
    ``args.repeats`` releases per statistic and epsilon; the defaults take a few minutes.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.release.add_arguments]' options.

    Returns:
        a dict: the configuration and one breakdown per process (``runs``); with ``utility``, the
            configuration, the chain's time and one row per (statistic, epsilon).

    Raises:
        BayesDPError: invalid options (e.g. ``num_steps`` < 1), refused before the chain runs.

    Examples:
        >>> import argparse
        >>> from bayesdp.errors import BayesDPError
        >>> try:
        ...     run(argparse.Namespace(utility=True, repeats=1, num_steps=0, prior_scale=0.5, seed=0))
        ... except BayesDPError as e:
        ...     print("refused:", type(e).__name__)
        refused: AssumptionError
    """
    from ..analysis.loading import load_model
    from ..analysis.records import validate_records
    from ..publish.methods.base import ChainSource
    if getattr(args, "last_draw", False):
        return _last_draw(args)
    if getattr(args, "warm", False):
        return _warm(args)
    if not getattr(args, "utility", False):
        return _breakdown(args)

    from ..analysis import Domain
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


# The child process: the imports a release needs, then `bayesdp.cli.main(argv)` under a sampling profiler.
_CHILD = r"""
import json, os, sys, threading, time
t_start = time.perf_counter()
cache, argv = sys.argv[1], json.loads(sys.argv[2])
argvs = argv if argv and isinstance(argv[0], list) else [argv]
import bayesdp, bayesdp.cli
t_light = time.perf_counter() - t_start
import jax, numpyro
t_import = time.perf_counter() - t_start
if cache != "off":
    from bayesdp.jax_cache import enable_compilation_cache
    enable_compilation_cache(cache)
import jax.monitoring as mon
events = {}
def on_duration(event, secs, **kw):
    n, s = events.get(event, (0, 0.0))
    events[event] = (n + 1, s + secs)
mon.register_event_duration_secs_listener(on_duration)

SEP = os.sep
def classify(frame):
    cat = None
    while frame is not None:
        f = frame.f_code.co_filename.replace(SEP, "/")
        if "/jax/_src/compiler.py" in f or "/jax/_src/compilation_cache" in f or "/jax/_src/cache_key.py" in f:
            return "compile"
        if "/jax/_src/interpreters/partial_eval.py" in f or "/jax/_src/interpreters/mlir.py" in f:
            return "trace"
        if "importlib._bootstrap" in f or f.startswith("<frozen importlib"):
            return "import"
        if cat is None and "/bayesdp/" in f:
            if "/bayesdp/budget/" in f:
                cat = "ledger"
            elif f.endswith("/bayesdp/publish/noise.py"):
                cat = "noise"
            elif "/bayesdp/analysis/" in f:
                cat = "analysis"
            elif ACCOUNTING and any(a in f for a in ("/bayesdp/calibration.py", "/bayesdp/certificate.py",
                                                      "/bayesdp/curves.py", "/bayesdp/mechanisms/",
                                                      "/bayesdp/theorems/")):
                cat = "accounting"
            elif "/bayesdp/samplers/" in f:
                cat = "chain"
        frame = frame.f_back
    return cat or "other"

ACCOUNTING = len(argvs) > 1
main_id = threading.main_thread().ident
CATS = ("import", "analysis", "compile", "trace", "chain", "noise", "ledger", "other") + (("accounting",) if ACCOUNTING else ())
spent = dict.fromkeys(CATS, 0.0)
stop = threading.Event()
def sampler():
    last = time.perf_counter()
    while not stop.is_set():
        time.sleep(0.001)
        frame = sys._current_frames().get(main_id)
        now = time.perf_counter()
        cat = classify(frame)
        spent[cat] += now - last
        last = now
th = threading.Thread(target=sampler, daemon=True)
import contextlib, io
th.start()
steps = []
for argv in argvs:
    before = (dict(spent), dict(events))
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = bayesdp.cli.main(argv)
    t_release = time.perf_counter() - t0
    ev0 = before[1].get("/jax/core/compile/backend_compile_duration", (0, 0.0))
    ev1 = events.get("/jax/core/compile/backend_compile_duration", (0, 0.0))
    steps.append({"command": argv[0], "rc": rc, "seconds": t_release,
                  "breakdown_s": {k: spent[k] - before[0][k] for k in spent},
                  "compilations": ev1[0] - ev0[0], "backend_compile_s": ev1[1] - ev0[1]})
    if rc != 0:
        break
stop.set(); th.join()
import resource
ev = lambda name: events.get("/jax/core/compile/" + name, (0, 0.0))
print(json.dumps({"rc": rc, "steps": steps, "import_bayesdp_s": t_light, "import_s": t_import, "release_s": t_release,
                  "breakdown_s": spent,
                  "jax": {"compilations": ev("backend_compile_duration")[0],
                          "backend_compile_s": ev("backend_compile_duration")[1],
                          "trace_s": ev("jaxpr_trace_duration")[1],
                          "lower_s": ev("jaxpr_to_mlir_module_duration")[1]},
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                  "released": json.loads(out.getvalue()) if rc == 0 else None}))
"""


def _breakdown(args) -> dict:
    """The time breakdown of one release in fresh processes (cold, warm and no compilation cache)."""
    m, d = int(args.size), int(args.dim)
    if m < 2 or d < 1:
        raise AssumptionError(f"--size {m} / --dim {d}: need at least 2 records and 1 feature")
    out: dict = {"model": "logistic", "size": m, "dim": d, "num_steps": args.num_steps, "runs": []}
    rng = np.random.default_rng(0)   # synthetic data (a benchmark, not a release of anyone's data)
    X = rng.standard_normal((m, d))
    X = (X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))).astype(np.float32)
    y = (rng.uniform(size=m) < 1.0 / (1.0 + np.exp(-X @ np.ones(d)))).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-release-") as tmp:
        data = os.path.join(tmp, "data.npz")
        np.savez(data, X=X, y=y)
        cache = os.path.join(tmp, "jax-cache")
        env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
        env.pop("BAYESDP_JAX_CACHE", None)
        for i, (label, where) in enumerate((("cold", cache), ("warm", cache), ("off", "off"))):
            # the default release a user types (delta > 0: at delta = 0 only the coupling release applies, and at
            # m = 1e4, epsilon = 1 it is predicted worse than the prior and refused, docs/release.md §12)
            argv = _default_release(data, os.path.join(tmp, f"ledger-{i}.json"), "1", args.num_steps)
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", _CHILD, where, json.dumps(argv)], capture_output=True,
                               text=True, env=env)
            wall = time.perf_counter() - t0
            if r.returncode != 0 or not r.stdout.strip():
                raise RuntimeError(f"bench release: the {label} process failed: {r.stderr.strip()[-2000:]}")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            released = res.pop("released")
            if res["rc"] != 0 or released is None:
                raise RuntimeError(f"bench release: the release exited {res['rc']}: {r.stderr.strip()[-2000:]}")
            out.setdefault("method", released.get("method") if isinstance(released, dict) else None)
            out["runs"].append({"cache": label, "process_s": wall, **res})
    return out


def _default_release(data: str, ledger: str, epsilon: str, num_steps: int) -> list:
    """The argv of the default release the time breakdown measures."""
    return ["release", "logistic", "--data", data, "--domain", "X.norm=1", "y.values=0,1", "--epsilon", epsilon,
            "--delta", "1e-6", "--ledger", ledger, "--budget", "10", "--budget-delta", "1e-5",
            "--num-steps", str(int(num_steps)), "--json"]


def _child(tmp: str, argvs: list, what: str) -> dict:
    """Run ``argvs`` in one fresh `_CHILD` process (compilation cache in ``tmp``): its JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.pop("BAYESDP_JAX_CACHE", None)
    r = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(tmp, "jax-cache"), json.dumps(argvs)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0 or not r.stdout.strip():
        raise RuntimeError(f"bench release {what}: the process failed: {r.stderr.strip()[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise RuntimeError(f"bench release {what}: a command exited {res['rc']}: {r.stderr.strip()[-2000:]}")
    return res


def _sizes(args, min_rounds: int) -> tuple[int, int, int]:
    """``(m, d, rounds)`` of the options, refused below 2 records, 1 feature or ``min_rounds`` rounds."""
    m, d, rounds = int(args.size), int(args.dim), int(getattr(args, "rounds", 3))
    if m < 2 or d < 1 or rounds < min_rounds:
        raise AssumptionError(f"--size {m} / --dim {d} / --rounds {rounds}: need at least 2 records, 1 feature "
                              f"and {min_rounds} round{'s' if min_rounds > 1 else ''}"
                              f"{' (the first is cold)' if min_rounds > 1 else ''}")
    return m, d, rounds


def _warm(args) -> dict:
    """The default release ``--rounds`` times in one fresh process (cold, then warm)."""
    m, d, rounds = _sizes(args, min_rounds=2)
    out: dict = {"model": "logistic", "size": m, "dim": d, "num_steps": args.num_steps,
                 "mode": "default release, one process", "target_overhead_s": 0.15, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-release-") as tmp:
        data = _write_data(tmp, m, d)
        argvs = [_default_release(data, os.path.join(tmp, f"ledger-{i}.json"), f"{1 + i / 100:g}", args.num_steps)
                 for i in range(rounds)]
        res = _child(tmp, argvs, "--warm")
    for i, st in enumerate(res["steps"]):
        out["rounds"].append({"round": i, "warm": i > 0, **st,
                              "overhead_s": st["seconds"] - st["breakdown_s"].get("chain", 0.0)})
    out["import_s"] = res["import_s"]
    out["warm_overhead_s_median"] = float(np.median([r["overhead_s"] for r in out["rounds"] if r["warm"]]))
    return out


def _write_data(tmp: str, m: int, d: int) -> str:
    rng = np.random.default_rng(0)   # synthetic data (a benchmark, not a release of anyone's data)
    X = rng.standard_normal((m, d))
    X = (X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))).astype(np.float32)
    y = (rng.uniform(size=m) < 1.0 / (1.0 + np.exp(-X @ np.ones(d)))).astype(np.float32)
    path = os.path.join(tmp, "data.npz")
    np.savez(path, X=X, y=y)
    return path


def _last_draw(args) -> dict:
    """Last-draw calibrate + release ``--rounds`` times in one fresh process (cold, then warm)."""
    m, d, rounds = _sizes(args, min_rounds=1)
    out: dict = {"model": "logistic", "size": m, "dim": d, "mode": "last draw, one process", "rounds": []}
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-release-") as tmp:
        data = _write_data(tmp, m, d)
        common = ["logistic", "--data", data, "--domain", "X.norm=1", "y.values=0,1"]
        argvs = []
        for i in range(rounds):
            # another epsilon each round: a warm round searches its plan afresh (bayesdp.calibrate keeps the plans
            # it found for the same public numbers in the process)
            common_i = [*common, "--epsilon", f"{1 + i / 100:g}"]
            argvs.append(["calibrate", *common_i, "--mechanism", "ula-final", "--json"])
            argvs.append(["release", *common_i, "--method", "final", "--delta", "1e-5",
                          "--ledger", os.path.join(tmp, f"ledger-{i}.json"), "--budget", "10",
                          "--budget-delta", "1e-3", "--json"])
        res = _child(tmp, argvs, "--last-draw")
    steps = res["steps"]
    for i in range(rounds):
        cal, rel = steps[2 * i], steps[2 * i + 1]
        out["rounds"].append({"round": i, "warm": i > 0, "calibrate": cal, "release": rel,
                              "total_s": cal["seconds"] + rel["seconds"]})
    out["import_s"] = res["import_s"]
    out["target_s"] = 2.0
    warm = [r["total_s"] for r in out["rounds"] if r["warm"]]
    out["warm_total_s_min"] = min(warm) if warm else None
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
    if res.get("mode") == "last draw, one process":
        lines = [f"last-draw calibrate + release of the logistic model, m = {res['size']}, d = {res['dim']}, one "
                 f"process (seconds; target {res['target_s']:g} s warm)"]
        for r in res["rounds"]:
            for what in ("calibrate", "release"):
                st = r[what]
                b = "  ".join(f"{k} {v:.3f}" for k, v in sorted(st["breakdown_s"].items(), key=lambda kv: -kv[1])
                              if v >= 0.0005)
                lines.append(f"round {r['round']} ({'warm' if r['warm'] else 'cold'}) {what:<9} {st['seconds']:8.3f}"
                             f"  {b}  ({st['compilations']} compilations)")
        return "\n".join(lines)
    if res.get("mode") == "default release, one process":
        lines = [f"the default release of the logistic model, m = {res['size']}, d = {res['dim']}, "
                 f"{res['num_steps']} steps, in one process (seconds; target: overhead "
                 f"{res['target_overhead_s']:g} s warm)",
                 f"{'round':<10} {'release':>8} {'overhead':>9}  breakdown"]
        for r in res["rounds"]:
            b = "  ".join(f"{k} {v:.3f}" for k, v in sorted(r["breakdown_s"].items(), key=lambda kv: -kv[1])
                          if v >= 0.0005)
            lines.append(f"{r['round']} ({'warm' if r['warm'] else 'cold'})  {r['seconds']:8.3f} {r['overhead_s']:9.3f}"
                         f"  {b}  ({r['compilations']} compilations)")
        return "\n".join(lines)
    if "runs" in res:    # the time breakdown
        lines = [f"release of the logistic model, m = {res['size']}, d = {res['dim']} (seconds; fresh processes)",
                 f"{'cache':<6} {'process':>8} {'import':>7} {'release':>8}  breakdown of the release"]
        for r in res["runs"]:
            b = "  ".join(f"{k} {v:.3f}" for k, v in sorted(r["breakdown_s"].items(), key=lambda kv: -kv[1]))
            lines.append(f"{r['cache']:<6} {r['process_s']:>8.3f} {r['import_s']:>7.3f} {r['release_s']:>8.3f}  {b}"
                         f"  ({r['jax']['compilations']} compilations, {r['jax']['backend_compile_s']:.3f} s)")
        return "\n".join(lines)
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
