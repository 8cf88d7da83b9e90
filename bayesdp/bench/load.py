"""``bayesdp bench load``: time and peak memory of ``bayesdp.analysis.loading.load_data`` on a
500,000 x 30 CSV and Parquet file (targets, issue #16: at most 1.5 s and a peak of at most twice the
final arrays), with pandas reading the same file into the same arrays as the reference, measured in the
same run.

The file holds 29 feature columns (standard normal draws written at full precision, as
``DataFrame.to_csv`` writes them, about 19 characters each) and a 0/1 label column;
``--x-columns x0,...,x28 --y-column label`` turns it into ``X`` (500,000 x 29) and ``y`` (500,000),
float32 (what the samplers compute in; 60 MB together), in the aligned buffers the samplers read in place.
The pandas reference reads the columns as float64 and casts them to float32 (the samplers' input), as
bayesdp itself did before issue 24; the arrays' bytes must agree (``same_values_as_reference``).  Every
measurement runs in a fresh process that first imports NumPy, pandas, pyarrow and bayesdp, so that the
import cost is not counted: the time is the wall time of the load alone, the peak memory the growth of the
process's peak resident set during the load (Linux ``/proc/self/status`` ``VmHWM``, reset through
``/proc/self/clear_refs`` just before).  The loaders run interleaved, ``--repeats`` times each; medians are
reported, and the arrays of both loaders are compared value by value.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from ..cli import ARG_TYPES
from ..errors import AssumptionError
import numpy as np

__all__ = ["NAME", "HELP", "TARGET_SECONDS", "TARGET_PEAK_RATIO", "add_arguments", "write_files", "run",
           "format_table"]

NAME = "load"
HELP = "load_data on a 500,000 x 30 CSV/Parquet file: time and peak memory vs pandas (targets 1.5 s, 2x)"
TARGET_SECONDS = 1.5
TARGET_PEAK_RATIO = 2.0

# Run in a fresh interpreter: argv = path, format, loader, x columns, y column.
_CHILD = r"""
import hashlib, json, resource, sys, time
import numpy as np, pandas as pd, pyarrow, pyarrow.csv, pyarrow.parquet
from bayesdp.analysis.loading import load_data

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(key)

path, fmt, loader, xcols, ycol = sys.argv[1:6]
from bayesdp.analysis.loading import sampler_float_dtype
X_DTYPE = sampler_float_dtype()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # peak resident set := current
base = status("VmRSS")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c = cpu()
t = time.perf_counter()
if loader == "bayesdp":
    d = load_data(path, x_columns=xcols, y_column=ycol)
    X, y = d["X"], d["y"]
else:
    cols = xcols.split(",") + [ycol]
    df = pd.read_csv(path, usecols=cols) if fmt == "csv" else pd.read_parquet(path, columns=cols)
    X = df[xcols.split(",")].to_numpy(dtype=np.float64).astype(X_DTYPE)
    y = df[ycol].to_numpy(dtype=np.float64).astype(X_DTYPE)
    del df
seconds = time.perf_counter() - t
cpu_seconds = cpu() - c
peak = status("VmHWM") - base
h = hashlib.sha256(np.ascontiguousarray(X).tobytes() + np.ascontiguousarray(y).tobytes()).hexdigest()
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_bytes": peak,
                  "array_bytes": X.nbytes + y.nbytes,
                  "shape": [list(X.shape), list(y.shape)], "sha256": h}))
"""


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench load`` to the argparse sub-parser ``parser``.

    Args:
        parser: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench load")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'rows': 500000, 'columns': 30, 'repeats': 3, 'formats': 'csv,parquet'}
    """

    parser.add_argument("--rows", type=ARG_TYPES[int], default=500_000, help="records in the file")
    parser.add_argument("--columns", type=ARG_TYPES[int], default=30, help="columns (features + the label)")
    parser.add_argument("--repeats", type=ARG_TYPES[int], default=3, help="fresh processes per loader and format")
    parser.add_argument("--formats", default="csv,parquet", help="comma-separated: csv, parquet")


def write_files(directory: str, rows: int, columns: int, formats=("csv", "parquet"), seed: int = 0) -> dict:
    """Write the benchmark table (``columns - 1`` features ``x0 ...`` and ``label``) in each format.

    Args:
        directory: where the files go (``bench.csv``, ``bench.parquet``).
        rows: number of records.
        columns: number of columns, the label included (at least 2).
        formats: any of ``"csv"`` and ``"parquet"``.
        seed: seed of the synthetic values (these data are not private).

    Returns:
        ``{format: path}``.

    Examples:
        >>> import tempfile
        >>> paths = write_files(tempfile.mkdtemp(), rows=10, columns=3, formats=("csv",))
        >>> open(paths["csv"]).readline().strip()
        '"x0","x1","label"'
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    cols = {f"x{j}": rng.standard_normal(rows) for j in range(columns - 1)}
    cols["label"] = (rng.random(rows) < 0.5).astype(np.float64)
    table = pa.table(cols)
    paths = {}
    for fmt in formats:
        paths[fmt] = os.path.join(directory, f"bench.{fmt}")
        if fmt == "csv":
            pcsv.write_csv(table, paths[fmt])
        elif fmt == "parquet":
            pq.write_table(table, paths[fmt])
        else:
            raise ValueError(f"format {fmt!r}: use csv or parquet")
    return paths


def _measure(path: str, fmt: str, loader: str, xcols: str) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, path, fmt, loader, xcols, "label"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{loader} on {fmt} failed: {tail}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(args) -> dict:
    """Run ``bayesdp bench load`` with the parsed options ``args``: JSON-ready
    results (medians, targets and the reference measured in the same run).

    Each loader runs ``args.repeats`` times per format in fresh processes (see the module docstring);
    the defaults take about a minute.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.load.add_arguments]' options.

    Returns:
        a dict with one row per format (times, peak memory, ``meets_target``) and ``meets_target``.

    Raises:
        AssumptionError: an unknown format, rows < 1, columns < 2, repeats < 1, or no Linux /proc.

    Examples:
        >>> import argparse
        >>> run(argparse.Namespace(rows=10, columns=3, repeats=1, formats="csv,xml"))
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --formats 'csv,xml': 'xml' is not csv or parquet; pass csv,parquet
    """

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    for f in formats:
        if f not in ("csv", "parquet"):
            raise AssumptionError(f"--formats {args.formats!r}: {f!r} is not csv or parquet; pass csv,parquet")
    if args.columns < 2 or args.rows < 1 or args.repeats < 1:
        raise AssumptionError(f"--rows {args.rows} --columns {args.columns} --repeats {args.repeats}: need rows >= 1, "
                              "columns >= 2 (features + label), repeats >= 1")
    if not os.path.exists("/proc/self/clear_refs"):
        raise AssumptionError("bayesdp bench load measures peak memory through Linux /proc/self; run it on Linux")
    xcols = ",".join(f"x{j}" for j in range(args.columns - 1))
    out: dict = {"rows": args.rows, "columns": args.columns, "repeats": args.repeats,
                 "target_seconds": TARGET_SECONDS, "target_peak_over_array": TARGET_PEAK_RATIO,
                 "reference": "pandas.read_csv (C engine) / pandas.read_parquet, then DataFrame.to_numpy (float64), "
                              "cast to the samplers' float32",
                 "formats": []}
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-load-") as tmp:
        paths = write_files(tmp, args.rows, args.columns, formats)
        for fmt in formats:
            runs: dict = {"bayesdp": [], "pandas": []}
            for _ in range(args.repeats):
                for loader in runs:  # interleaved, so that the machine's noise hits both alike
                    runs[loader].append(_measure(paths[fmt], fmt, loader, xcols))
            row = {"format": fmt, "file_bytes": os.path.getsize(paths[fmt]),
                   "array_bytes": runs["bayesdp"][0]["array_bytes"],
                   "same_values_as_reference": len({r["sha256"] for rs in runs.values() for r in rs}) == 1}
            for loader, rs in runs.items():
                row[loader] = {"seconds_median": statistics.median(r["seconds"] for r in rs),
                               "peak_bytes_median": statistics.median(r["peak_bytes"] for r in rs),
                               "cpu_seconds_median": statistics.median(r["cpu_seconds"] for r in rs),
                               "seconds": [round(r["seconds"], 4) for r in rs],
                               "peak_bytes": [r["peak_bytes"] for r in rs]}
                row[loader]["peak_over_array"] = row[loader]["peak_bytes_median"] / row["array_bytes"]
            b = row["bayesdp"]
            row["meets_target"] = (b["seconds_median"] <= TARGET_SECONDS
                                   and b["peak_over_array"] <= TARGET_PEAK_RATIO and row["same_values_as_reference"])
            out["formats"].append(row)
    out["meets_target"] = all(r["meets_target"] for r in out["formats"])
    return out


def format_table(result: dict) -> str:
    """``result`` (what [`run`][bayesdp.bench.load.run] returned) as the readable table printed without ``--json``.

    Args:
        result: the result of [`run`][bayesdp.bench.load.run].

    Returns:
        the table.

    Examples:
        >>> m = {"seconds_median": 0.9, "peak_bytes_median": 180e6, "peak_over_array": 1.5}
        >>> res = {"rows": 500000, "columns": 30, "repeats": 3,
        ...        "formats": [{"format": "csv", "bayesdp": m, "pandas": m, "array_bytes": 120e6,
        ...                     "same_values_as_reference": True, "meets_target": True}]}
        >>> print(format_table(res).splitlines()[-1])
          csv: arrays 120.0 MB, same values as pandas: True, target met
    """
    lines = [f"load_data on {result['rows']:,} x {result['columns']} (median of {result['repeats']} fresh "
             f"processes; targets <= {TARGET_SECONDS:g} s and peak <= {TARGET_PEAK_RATIO:g}x the arrays)",
             f"  {'format':8} {'loader':8} {'seconds':>8} {'peak MB':>8} {'peak/array':>10}"]
    for r in result["formats"]:
        for loader in ("bayesdp", "pandas"):
            m = r[loader]
            lines.append(f"  {r['format']:8} {loader:8} {m['seconds_median']:8.3f} {m['peak_bytes_median'] / 1e6:8.1f} "
                         f"{m['peak_over_array']:10.2f}")
        lines.append(f"  {r['format']}: arrays {r['array_bytes'] / 1e6:.1f} MB, same values as pandas: "
                     f"{r['same_values_as_reference']}, target {'met' if r['meets_target'] else 'NOT met'}")
    return "\n".join(lines)
