"""``bayesdp bench certify``: wall time of ``bayesdp certify logistic`` on m x d records (target < 5 s at
100,000 x 100, issue #3), and the scaling of the analysis in the number of records, with a reference (a
fresh process importing jax and numpyro and reading and checking the same data) measured in the same run.

The target is judged on the *cold* CLI: a fresh process with an empty persistent compilation cache
(``BAYESDP_JAX_CACHE`` pointed at a new directory each time), i.e. a user's first run.  The warm-cache time
(second run of the command) is reported next to it.  Runs are interleaved (cold, warm, reference) so that
the machine's noise hits all three alike; medians are reported."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import numpy as np

__all__ = ["NAME", "HELP", "TARGET_SECONDS", "add_arguments", "run", "format_table"]

NAME = "certify"
HELP = "time of `bayesdp certify logistic` (100,000 x 100 target < 5 s) and scaling in records"
TARGET_SECONDS = 5.0


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench certify`` to the argparse sub-parser ``parser``.

    Args:
        parser: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench certify")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'records': 100000, 'features': 100, 'repeats': 5}
    """
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)


def _data(path, m, d):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, d)).astype(np.float32)
    X /= (np.linalg.norm(X, axis=1, keepdims=True) * 1.001)
    y = (rng.random(m) < 0.5).astype(np.float32)
    np.savez(path, X=X, y=y)
    return X


def _timed(cmd, env=None) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t, r


def run(args) -> dict:
    """Run ``bayesdp bench certify`` with the parsed options ``args``: JSON-ready
    results (medians, targets and the reference measured in the same run).

    ``args.repeats`` cold and warm runs of the CLI (fresh processes) are timed against a reference
    process that imports JAX and NumPyro and reads the data; then the analysis alone is timed on
    1,000, 10,000 and 100,000 records.  The defaults take a few minutes.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.certify.add_arguments]' options.

    Returns:
        a dict: the medians, ``meets_target``, ``target`` and ``scaling``.

    Examples:
        ``--repeats 0`` skips the CLI timings (the target is then not met) and times the analysis only:

        >>> import argparse
        >>> res = run(argparse.Namespace(records=10, features=2, repeats=0))
        >>> res["meets_target"], [row["records"] for row in res["scaling"]]
        (False, [1000, 10000, 100000])
    """
    from ..analysis.loading import builtin_models

    from ..analysis import Domain, analyze

    out: dict = {"records": args.records, "features": args.features, "repeats": args.repeats,
                 "target_seconds": TARGET_SECONDS}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        _data(path, args.records, args.features)
        head = [sys.executable, "-m", "bayesdp.cli", "certify", "logistic"]
        tail = ["--domain", "X.norm=1", "--domain", "y.values=0,1", "--step-size", "1e-4", "--num-steps", "1000",
                "--batch-size", "100", "--json"]
        cmd = head + ["--data", path] + tail
        nodata = head + ["--no-data", "--data-size", str(args.records), "--dim", str(args.features)] + tail
        ref = [sys.executable, "-c", "import numpy as np, jax, numpyro; "
               f"f = np.load({path!r}); X = f['X']; (np.einsum('ij,ij->i', X, X) <= 1).all()"]
        base_env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
        warm_dir = os.path.join(tmp, "cache-warm")
        cold, warm, ref_times, cold_nodata = [], [], [], []
        for i in range(args.repeats):
            env = {**base_env, "BAYESDP_JAX_CACHE": os.path.join(tmp, f"cache-cold-{i}")}
            t, r = _timed(cmd, env)
            if r.returncode != 0:
                out["error"] = r.stderr.strip()
                break
            cold.append(t)
            env = {**base_env, "BAYESDP_JAX_CACHE": warm_dir}
            if i == 0:
                _timed(cmd, env)   # fills the warm cache
            t, r = _timed(cmd, env)
            warm.append(t)
            env = {**base_env, "BAYESDP_JAX_CACHE": os.path.join(tmp, f"cache-nodata-{i}")}
            t, r = _timed(nodata, env)
            if r.returncode != 0:
                out["error"] = r.stderr.strip()
                break
            cold_nodata.append(t)
            ref_times.append(_timed(ref)[0])
        med = (lambda xs: float(np.median(xs)) if xs else None)
        out["cli_seconds_median"] = med(cold)
        out["cli_seconds"] = [round(t, 3) for t in cold]
        out["cli_warm_cache_seconds_median"] = med(warm)
        out["cli_no_data_seconds_median"] = med(cold_nodata)
        out["cli_no_data_seconds"] = [round(t, 3) for t in cold_nodata]
        out["reference_import_and_read_seconds_median"] = med(ref_times)
        out["meets_target"] = (bool(cold) and "error" not in out and out["cli_seconds_median"] < TARGET_SECONDS
                               and out["cli_no_data_seconds_median"] < TARGET_SECONDS)
        out["target"] = {"what": f"bayesdp certify logistic on {args.records} x {args.features} (with the data, "
                                 "and --no-data), cold (fresh process, empty compilation cache), median wall time",
                         "seconds": TARGET_SECONDS,
                         "measured_seconds": max(out["cli_seconds_median"] or 0, out["cli_no_data_seconds_median"] or 0),
                         "met": out["meets_target"]}
    # scaling of the analysis alone (in process, after a warm-up): the analysis works on one record's shapes,
    # so what grows with the records is reading the data and the domain check
    model = builtin_models()["logistic"]
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    rng = np.random.default_rng(1)
    scaling = []
    for m in (1_000, 10_000, 100_000):
        X = rng.standard_normal((m, args.features))
        X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.001
        y = (rng.random(m) < 0.5).astype(float)
        analyze(model, {"X": X, "y": y}, dom)  # warm-up (compilation)
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            analyze(model, {"X": X, "y": y}, dom)
            ts.append(time.perf_counter() - t)
        scaling.append({"records": m, "analysis_seconds": float(np.median(ts))})
    out["scaling"] = scaling
    return out


def format_table(result: dict) -> str:
    """``result`` (what [`run`][bayesdp.bench.certify.run] returned) as the readable table printed without ``--json``.

    Args:
        result: the result of [`run`][bayesdp.bench.certify.run].

    Returns:
        the table.

    Examples:
        >>> res = {"records": 100000, "features": 100, "cli_seconds_median": 3.2, "meets_target": True,
        ...        "cli_no_data_seconds_median": 2.9, "cli_warm_cache_seconds_median": 2.1,
        ...        "reference_import_and_read_seconds_median": 1.4,
        ...        "scaling": [{"records": 1000, "analysis_seconds": 0.21}]}
        >>> print(format_table(res).splitlines()[1])
          analysis on    1000 records: 0.210 s
    """
    nan = float("nan")
    lines = [f"certify logistic {result['records']} x {result['features']}: median cold "
             f"{result.get('cli_seconds_median') or nan:.2f} s (target < {TARGET_SECONDS:g} s: "
             f"{'met' if result.get('meets_target') else 'NOT met'}), --no-data "
             f"{result.get('cli_no_data_seconds_median') or nan:.2f} s, warm cache "
             f"{result.get('cli_warm_cache_seconds_median') or nan:.2f} s, reference import+read "
             f"{result.get('reference_import_and_read_seconds_median') or nan:.2f} s"]
    if result.get("error"):
        lines.append(f"  error: {result['error']}")
    for s in result["scaling"]:
        lines.append(f"  analysis on {s['records']:>7} records: {s['analysis_seconds']:.3f} s")
    return "\n".join(lines)
