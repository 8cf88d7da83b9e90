"""Import little (issue 24, item 1): what `import bayesdp`, `bayesdp --help` and `bayesdp bound` load, and the
closed form that replaced ``scipy.signal.lfilter`` in `monte_carlo_bound` (same maths, checked against the
recursion's definition in 50-digit arithmetic)."""

import dataclasses
import json
import os
import subprocess
import sys

import mpmath
import pytest

from bayesdp.publish.sensitivity import coupling_strongly_convex, monte_carlo_bound

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("jax", "numpyro", "scipy.signal", "pandas", "pyarrow", "matplotlib", "arviz")

_LOADED = """
import json, runpy, sys
argv = json.loads(sys.argv[1])
if argv is None:
    import bayesdp
    rc = 0
else:
    from bayesdp.cli import main
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
print(json.dumps({"rc": rc, "loaded": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("jax", "numpyro", "pandas", "pyarrow", "matplotlib", "arviz") or m == "scipy.signal")}))
"""


@pytest.mark.parametrize("argv", [
    None,                                          # import bayesdp
    ["--help"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.01", "--num-steps", "100", "--delta", "1e-5"],
    ["bound", "ula-final", "--strong-convexity", "1", "--smoothness", "1", "--grad-bound", "0.5", "--step-size",
     "0.01", "--num-steps", "10000", "--delta", "1e-5"],
], ids=["import", "help", "bound-path", "bound-final"])
def test_light_commands_import_no_heavy_module(argv):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))   # bayesdp as this process imports it
    r = subprocess.run([sys.executable, "-c", _LOADED, json.dumps(argv)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0
    assert got["loaded"] == []


def test_the_probe_sees_a_heavy_module_when_one_is_loaded():
    """The probe above is not blind: with scipy.signal imported first, it reports exactly that module."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", "import scipy.signal\n" + _LOADED, json.dumps(None)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"rc": 0, "loaded": ["scipy.signal"]}
    # and the scipy.optimize probe below lists scipy.optimize once it is imported
    code = "import scipy.optimize, sys, bayesdp; print(sorted(m for m in sys.modules if m.startswith('scipy.optimize')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "'scipy.optimize'" in r.stdout


def test_import_bayesdp_leaves_scipy_out():
    """scipy.optimize (0.5 s, half of `import bayesdp` before) is imported only where a curve is optimised, and
    scipy.special (with scipy's array-API layer, 0.2-0.4 s) only where a Gaussian tail is evaluated."""
    code = "import sys, bayesdp; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_gdp_path_release_imports_neither_dp_accounting_nor_scipy_optimize(tmp_path):
    """A default release (path, GDP) from the CLI: the ledger's composition of Gaussian-DP charges is the exact GDP
    rule (PLD and Renyi, which need dp-accounting and its 0.5 s import of scipy.signal and scipy.stats, bound the
    same curve from above), and the curves' roots and minima need no scipy.optimize (0.1 s): neither is imported."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    X = (X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))).astype(np.float32)
    np.savez(tmp_path / "d.npz", X=X, y=(rng.random(300) < 0.5).astype(np.float32))
    common = ["release", "logistic", "--data", str(tmp_path / "d.npz"), "--domain", "X.norm=1", "y.values=0,1",
              "--epsilon", "4", "--budget", "10", "--json"]
    old = '("jax", "numpyro", "pandas", "pyarrow", "matplotlib", "arviz") or m == "scipy.signal"'
    probe = _LOADED.replace(old, '("dp_accounting",) or m in ("scipy.optimize", "scipy.signal")')
    assert probe != _LOADED
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def loaded(argv):
        r = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    gdp = loaded(common + ["--delta", "1e-6", "--budget-delta", "1e-5", "--ledger", str(tmp_path / "l.db")])
    assert gdp == {"rc": 0, "loaded": []}, gdp
    # the same probe sees dp_accounting when a ledger with a delta budget holds a non-Gaussian event (Laplace noise)
    lap = loaded(common + ["--method", "coupling", "--noise", "laplace", "--budget-delta", "1e-5",
                           "--ledger", str(tmp_path / "l2.db"), "--allow-uninformative"])
    assert lap["rc"] == 0 and "dp_accounting" in lap["loaded"], lap


def _exact_lipschitz(rho, step_size, beta, n, burn_in, thinning, chains):
    """The definition (docs/release.md §4.2) in 50-digit arithmetic: w_j = 1[j kept] + rho w_{j+1}, run
    backwards step by step, then s sqrt(c sum w_j^2) / (c N)."""
    with mpmath.workdps(50):
        t = thinning
        kept = set(range((burn_in + 1) * t, (n // t) * t + 1, t))
        last = max(kept)
        r = mpmath.mpf(rho)
        w, total = mpmath.mpf(0), mpmath.mpf(0)
        for j in range(last, 0, -1):
            w = (1 if j in kept else 0) + r * w
            total += w * w
        s = mpmath.sqrt(2 * mpmath.mpf(step_size) / beta)
        return s * mpmath.sqrt(chains * total) / (chains * len(kept))


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.9, 0.999, 1 - 2.0 ** -30])
@pytest.mark.parametrize("n, burn_in, thinning, chains", [(1, 0, 1, 1), (50, 0, 1, 1), (400, 7, 3, 2),
                                                          (999, 50, 10, 4), (2000, 999, 1, 1)])
def test_monte_carlo_bound_equals_the_recursion(rho, n, burn_in, thinning, chains):
    step = 0.1
    mu = (1.0 - rho) / step                     # rho = |1 - step mu| with m = L = mu
    b = coupling_strongly_convex(step, mu, mu, grad_diff=1.0)
    b = dataclasses.replace(b, contraction=rho)   # exactly rho (1 - step mu rounds)
    mc = monte_carlo_bound(b, inverse_temperature=2.0, num_steps=n, burn_in=burn_in, thinning=thinning,
                           num_chains=chains)
    exact = _exact_lipschitz(rho, step, 2.0, n, burn_in, thinning, chains)
    assert mc.lipschitz_noise >= exact                       # an upper bound of the exact value ...
    assert mc.lipschitz_noise <= exact * (1 + 1e-11)         # ... and a tight one
