"""``bayesdp bench certify``: wall time of ``bayesdp certify logistic`` on m x d records (target < 5 s at
100,000 x 100), and the scaling of the analysis in the number of records, with a reference (a plain
numpy pass over the same data) measured in the same run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

NAME = "certify"
HELP = "time of `bayesdp certify logistic` (100,000 x 100 target < 5 s) and scaling in records"


def add_arguments(parser) -> None:
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)


def _data(path, m, d):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, d)).astype(np.float32)
    X /= (np.linalg.norm(X, axis=1, keepdims=True) * 1.001)
    y = (rng.random(m) < 0.5).astype(np.float32)
    np.savez(path, X=X, y=y)
    return X


def run(args) -> dict:
    import numpy as np

    from ..analysis import Domain, analyze
    from ..analysis.loading import builtin_models

    out = {"records": args.records, "features": args.features, "target_seconds": 5.0}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        _data(path, args.records, args.features)
        cmd = [sys.executable, "-m", "bayesdp.cli", "certify", "logistic", "--data", path, "--domain", "X.norm=1",
               "--domain", "y.values=0,1", "--step-size", "1e-4", "--num-steps", "1000", "--batch-size", "100",
               "--json"]
        cli_times, ref_times = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            cli_times.append(time.perf_counter() - t)
            if r.returncode != 0:
                out["error"] = r.stderr.strip()
                break
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import numpy as np, jax, numpyro; "
                            f"f = np.load({path!r}); X = f['X']; (np.einsum('ij,ij->i', X, X) <= 1).all()"],
                           capture_output=True)
            ref_times.append(time.perf_counter() - t)
        out["cli_seconds_median"] = float(np.median(cli_times))
        out["reference_import_and_read_seconds_median"] = float(np.median(ref_times)) if ref_times else None
        out["meets_target"] = out["cli_seconds_median"] < 5.0
    # scaling of the analysis alone (in process, after warm-up)
    model = builtin_models()["logistic"]
    dom = Domain.parse(["X.norm=1", "y.values=0,1"])
    rng = np.random.default_rng(1)
    scaling = []
    for m in (1_000, 10_000, 100_000):
        X = rng.standard_normal((m, args.features))
        X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.001
        y = (rng.random(m) < 0.5).astype(float)
        analyze(model, {"X": X, "y": y}, dom)  # warm-up (compilation)
        t = time.perf_counter()
        analyze(model, {"X": X, "y": y}, dom)
        scaling.append({"records": m, "analysis_seconds": time.perf_counter() - t})
    out["scaling"] = scaling
    return out


def format_table(result: dict) -> str:
    lines = [f"certify logistic {result['records']} x {result['features']}: median "
             f"{result.get('cli_seconds_median', float('nan')):.2f} s (target < 5 s; reference import+read "
             f"{result.get('reference_import_and_read_seconds_median') or float('nan'):.2f} s)"]
    for s in result["scaling"]:
        lines.append(f"  analysis on {s['records']:>7} records: {s['analysis_seconds']:.3f} s")
    return "\n".join(lines)
