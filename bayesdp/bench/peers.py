"""``bayesdp bench peers``: bayesdp's default release against what a user would pick instead, side by side.

Bayesian logistic regression, prior ``N(0, I)``, records ``(x, y)`` with ``|x| <= 1`` and ``y`` in {0, 1}, on

* ``synthetic``: d = 10, ``x ~ N(0, I/d)`` mapped into the unit ball, ``y ~ Bernoulli(sigmoid(x . theta))`` with
  a fixed ``theta`` (:data:`THETA`), m in {1e3, 1e4, 1e5}, a fresh dataset per repetition and a fresh test set;
* ``breast-cancer``: the bundled data (d = 30), standardised by the bundled public map into the unit ball
  (``bayesdp.publish.data.scale_to_unit_ball``), a fixed train/test split (:data:`BC_TEST_FRACTION`, by
  index), the repetitions re-running every private method on the same training records.

For epsilon in {0.5, 1, 4} and delta = 1e-6 (pure-epsilon methods ignore delta), every method releases a
posterior-mean estimate; its error is the squared distance (summed over coordinates) to the non-private NUTS
posterior mean (NumPyro, the reference). Methods:

* ``bayesdp-python``: ``bayesdp.release(kernel, "mean", data=..., ...)`` with every default;
* ``bayesdp-cli``: ``bayesdp release logistic --data F --domain X.norm=1 y.values=0,1 --stat mean --json``
  (the same CLI code, called in-process);
* ``documented``: the flow README.md teaches (see :func:`documented_flow`);
* ``noisy-gd``: noisy full-batch gradient descent on the negative log posterior (100 steps, step 1/L with
  L = m/4 + 1 the public smoothness, per-record gradients of norm <= 1 so the sum has replace-one L2
  sensitivity 2), Gaussian noise calibrated exactly for the 100-fold composition (its GDP parameter);
* ``output-perturbation``: the MAP estimate (1-strongly convex objective: replace-one sensitivity 2 / 1) plus
  Gaussian noise calibrated exactly for one Gaussian mechanism (the analytic Gaussian mechanism);
* ``diffprivlib``: ``diffprivlib.models.LogisticRegression(epsilon, data_norm=1, fit_intercept=False, C=1)``
  (pure epsilon; C = 1 is the prior N(0, I) in scikit-learn's objective), when installed
  (``pip install -e ".[bench]"``);
* ``prior-mean``: zero (knowing nothing).

A refusal scores as the prior mean's error. Reported per cell: the median error of each method, its ratio to the
best peer, test accuracy, seconds, and for bayesdp's results that carry one the coverage of the NUTS mean by the
released ``error_interval`` and its mean width. The peers' settings are fixed in advance from public inputs.
Nothing here is released: the data are simulated or bundled, and the seeds only make the benchmark repeatable.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import os
import tempfile
import time

import numpy as np

from ..budget.accountant import PrivacyAccountant
from ..errors import BayesDPError
from ..cli import main
from ..publish.data import load_breast_cancer, scale_to_unit_ball
import warnings
from .utility import posterior_mean, synthetic
from ..publish.path import gdp_mu

__all__ = ["NAME", "HELP", "THETA", "SIZES", "EPSILONS", "DELTA", "GD_STEPS", "add_arguments", "synthetic_d10",
           "breast_cancer_split", "gaussian_noise_multiplier", "noisy_gd", "output_perturbation", "map_estimate",
           "documented_flow", "run", "format_table"]

NAME = "peers"
HELP = "error of bayesdp's default release against noisy GD, output perturbation, diffprivlib and the prior mean"
SIZES = (1_000, 10_000, 100_000)
EPSILONS = (0.5, 1.0, 4.0)
DELTA = 1e-6
GD_STEPS = 100
BC_TEST_FRACTION = 0.2
#: the true coefficients of the synthetic data (fixed in advance; |theta| ~ 3)
THETA = (1.2, -0.8, 0.5, 1.0, -1.1, 0.3, 0.9, -0.4, 0.7, -1.3)
DOMAIN = ("X.norm=1", "y.values=0,1")


def add_arguments(parser) -> None:
    """Options of ``bayesdp bench peers``.

    Args:
        parser: the argparse sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--quick"])
        >>> a.quick, a.datasets
        (True, 20)
    """
    parser.add_argument("--quick", action="store_true",
                        help="one size (1e3), epsilon 1, 2 datasets, no breast cancer: a smoke run")
    parser.add_argument("--datasets", type=int, default=20, help="datasets (repetitions) per cell (default 20)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="record counts of the synthetic data")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS), help="the epsilons")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI flow (it repeats the Python one)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated data (nothing is released)")
    parser.add_argument("--theta-scale", type=float, default=1.0,
                        help="the synthetic data's true coefficients times this (default 1; 3: a strong signal)")


# ---------------------------------------------------------------------------
# data


def synthetic_d10(m: int, seed: int, theta_scale: float = 1.0) -> dict:
    """``m`` training records and ``m`` test records of the synthetic logistic model.

    Args:
        m: the number of records.
        seed: NumPy seed (a benchmark: nothing is released).
        theta_scale: the true coefficients ``THETA`` times this (3: a strong signal, the mode far beyond the
            prior's spread; docs/release.md §8.4).

    Returns:
        ``{"X", "y", "X_test", "y_test"}`` (float32; every row of X in the unit ball).

    Examples:
        >>> d = synthetic_d10(5, 0)
        >>> d["X"].shape, bool((np.linalg.norm(d["X"], axis=1) <= 1).all())
        ((5, 10), True)
    """
    d = synthetic(2 * m, seed, np.asarray(THETA) * float(theta_scale))   # 2m records of bench utility's generator
    return {"X": d["X"][:m], "y": d["y"][:m], "X_test": d["X"][m:], "y_test": d["y"][m:]}


def breast_cancer_split() -> dict:
    """The bundled Breast Cancer data in the unit ball, split by index into train and test (the last 20 %).

    Returns:
        ``{"X", "y", "X_test", "y_test"}``.

    Examples:
        >>> d = breast_cancer_split()
        >>> d["X"].shape[1], d["X"].shape[0] + d["X_test"].shape[0]
        (30, 569)
    """

    X, y, _ = load_breast_cancer()
    X = scale_to_unit_ball(X)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) * (1 + 1e-6))   # clip to the declared norm
    X, y = X.astype(np.float32), y.astype(np.float32)
    k = int(round(len(y) * (1 - BC_TEST_FRACTION)))
    return {"X": X[:k], "y": y[:k], "X_test": X[k:], "y_test": y[k:]}


# ---------------------------------------------------------------------------
# the reference and the peers


def _grad(w, X, y):
    """Gradient of the negative log posterior: sum_i (sigmoid(x_i w) - y_i) x_i + w."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) + w


def map_estimate(X: np.ndarray, y: np.ndarray, iters: int = 200) -> np.ndarray:
    """The MAP of logistic regression with prior N(0, I), by Newton's method (float64).

    Args:
        X: features.
        y: labels.
        iters: at most this many Newton steps.

    Returns:
        the MAP estimate.

    Examples:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([1.0, 0.0])
        >>> w = map_estimate(X, y)
        >>> bool(np.allclose(w + 1 / (1 + np.exp(-w)) - [1, 0], 0, atol=1e-10))   # w_j = y_j - sigmoid(w_j)
        True
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        g = X.T @ (p - y) + w
        H = (X * (p * (1 - p))[:, None]).T @ X + np.eye(X.shape[1])
        step = np.linalg.solve(H, g)
        w -= step
        if np.linalg.norm(step) < 1e-12:
            break
    return w


@functools.lru_cache(maxsize=None)
def gaussian_noise_multiplier(epsilon: float, delta: float, count: int) -> float:
    """The smallest noise multiplier z (noise sd / L2 sensitivity) whose ``count``-fold Gaussian mechanism is
    (epsilon, delta)-DP, exactly: ``count`` Gaussian mechanisms of noise multiplier z compose to exactly
    ``sqrt(count) / z``-GDP (Dong-Roth-Su Cor. 3.3), so z = sqrt(count) / mu with mu the largest GDP parameter
    at (epsilon, delta) (``bayesdp.publish.path.gdp_mu``: the analytic Gaussian mechanism, Balle-Wang 2018);
    rounded up.  dp-accounting's PLD accountant gives the same z within its pessimistic discretisation, 3,000
    times slower at 100 compositions.  Cached: it depends on public settings only.

    Args:
        epsilon: the target epsilon.
        delta: the target delta.
        count: the number of compositions.

    Returns:
        the noise multiplier.

    Examples:
        >>> z = gaussian_noise_multiplier(1.0, 1e-5, 1)
        >>> 3.5 < z < 4.0        # the analytic Gaussian mechanism: z = 3.73 at (1, 1e-5)
        True
    """

    return math.nextafter(math.sqrt(count) / gdp_mu(epsilon, delta), math.inf)


def noisy_gd(X, y, epsilon, delta, rng, steps: int = GD_STEPS) -> np.ndarray:
    """Noisy full-batch gradient descent on the negative log posterior (the peer; see the module docstring).

    Args:
        X: features (rows in the unit ball).
        y: labels.
        epsilon: the target epsilon.
        delta: the target delta.
        rng: a NumPy generator (a benchmark; a real release would use a CSPRNG).
        steps: gradient steps.

    Returns:
        the final iterate.

    Examples:
        >>> d = synthetic_d10(200, 0)
        >>> noisy_gd(d["X"], d["y"], 4.0, 1e-6, np.random.default_rng(0)).shape
        (10,)
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    m, d = X.shape
    sigma = 2.0 * gaussian_noise_multiplier(epsilon, delta, steps)      # replace-one L2 sensitivity of the sum: 2
    eta = 1.0 / (m / 4.0 + 1.0)
    w = np.zeros(d)
    for _ in range(steps):
        w -= eta * (_grad(w, X, y) + sigma * rng.standard_normal(d))
    return w


def output_perturbation(X, y, epsilon, delta, rng) -> np.ndarray:
    """The MAP plus Gaussian noise for replace-one L2 sensitivity 2 (strong convexity 1 of the prior).

    Args:
        X: features.
        y: labels.
        epsilon: the target epsilon.
        delta: the target delta.
        rng: a NumPy generator.

    Returns:
        the noisy MAP.

    Examples:
        >>> d = synthetic_d10(100, 0)
        >>> w = output_perturbation(d["X"], d["y"], 1.0, 1e-6, np.random.default_rng(0))
        >>> w.shape
        (10,)
    """
    sigma = 2.0 * gaussian_noise_multiplier(epsilon, delta, 1)
    return map_estimate(X, y) + sigma * rng.standard_normal(np.shape(X)[1])


class Unavailable(Exception):
    """A peer that cannot run here (not installed, or it fails to import): left out of the cell, never scored."""


def _diffprivlib(X, y, epsilon, seed):
    try:
        from diffprivlib.models import LogisticRegression
    except ImportError as exc:
        raise Unavailable(f"diffprivlib: {exc}; pip install -e \".[bench]\"") from None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(epsilon=epsilon, data_norm=1.0, fit_intercept=False, C=1.0, random_state=seed)
        clf.fit(np.asarray(X, np.float64), np.asarray(y).astype(int))
    return np.asarray(clf.coef_, np.float64).ravel()


def _nuts_mean(X, y, seed):
    mean, _ = posterior_mean({"X": X, "y": y}, 1.0, seed=seed, num_samples=1000)
    return mean


# ---------------------------------------------------------------------------
# bayesdp's flows


def _domain():
    from ..analysis.domain import Domain, norm_bound, values
    return Domain(X=norm_bound(1.0), y=values(0, 1))


def _accountant(epsilon, delta):
    return PrivacyAccountant(budget=epsilon, budget_delta=delta)


def _items(res):
    out = res.to_dict() if hasattr(res, "to_dict") else dict(res)
    return out.get("items") or []


def _python_default(X, y, epsilon, delta):
    from ..models import logistic
    from ..plan import ULA
    from ..api import release

    res = release(ULA(logistic, domain=_domain()), "mean", data={"X": X, "y": y}, epsilon=epsilon, delta=delta,
                  accountant=_accountant(epsilon, delta))
    return np.asarray(res.values, np.float64), _items(res)


def documented_flow(X, y, epsilon, delta):
    """The flow README.md teaches for a posterior mean (kept in step with the README by tests/test_readme_examples.py).

    Args:
        X: features.
        y: labels.
        epsilon: the release's epsilon.
        delta: the release's delta.

    Returns:
        ``(values, items)``.

    Examples:
        Not run here (it runs a chain):

        >>> values, items = documented_flow(synthetic_d10(1000, 0)["X"], synthetic_d10(1000, 0)["y"], 1.0, 1e-6)  # doctest: +SKIP
    """
    return _python_default(X, y, epsilon, delta)


def _cli_default(X, y, epsilon, delta):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=X, y=y)
        ledger = os.path.join(tmp, "ledger")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):   # a refusal: scored
            rc = main(["release", "logistic", "--data", path, "--domain", *DOMAIN, "--stat", "mean", "--epsilon",
                       repr(epsilon), "--delta", repr(delta), "--ledger", ledger, "--budget", repr(epsilon),
                       "--budget-delta", repr(delta), "--json"])
        if rc != 0:
            return None
        out = json.loads(buf.getvalue())
    return np.asarray(out["values"], np.float64), out.get("items") or []


# ---------------------------------------------------------------------------
# the run


def _accuracy(w, X, y):
    return float(np.mean(((np.asarray(X, np.float64) @ w) > 0) == (np.asarray(y) > 0.5)))


def _cells(args):
    if args.quick:
        return [("synthetic", 1_000, 1.0)], 2
    cells = [("synthetic", m, e) for m in args.sizes for e in args.epsilons]
    cells += [("breast-cancer", None, e) for e in args.epsilons]
    return cells, args.datasets


def run(args) -> dict:
    """Run the benchmark; JSON-ready rows (one per cell) and the settings.

    Args:
        args: the parsed options (:func:`add_arguments`).

    Returns:
        ``{"settings": ..., "cells": [...]}``.

    Examples:
        Not run here (minutes):

        >>> import argparse; p = argparse.ArgumentParser(); add_arguments(p)   # doctest: +SKIP
        >>> run(p.parse_args(["--quick"]))["cells"][0]["m"]                    # doctest: +SKIP
        1000
    """
    if args.datasets < 1:
        raise BayesDPError(f"--datasets {args.datasets} must be >= 1; pass a positive number of datasets per cell")
    bad = [m for m in args.sizes if m < 2]
    if bad:
        raise BayesDPError(f"--sizes {bad[0]} must be >= 2 records; pass record counts of at least 2")
    scale = getattr(args, "theta_scale", 1.0)
    if not (math.isfinite(scale) and scale > 0):
        raise BayesDPError(f"--theta-scale {scale:g} must be finite and > 0; pass a positive factor (1: the default "
                           "coefficients)")
    bad = [e for e in args.epsilons if not (math.isfinite(e) and e > 0)]
    if bad:
        raise BayesDPError(f"--epsilons {bad[0]} must be finite and > 0; pass positive epsilons")
    cells, reps = _cells(args)
    flows = {"bayesdp-python": _python_default, "documented": documented_flow}
    if not args.no_cli:
        flows["bayesdp-cli"] = _cli_default
    rows = []
    ref_cache: dict = {}
    bc = breast_cancer_split() if any(c[0] == "breast-cancer" for c in cells) else None
    for data_name, m, eps in cells:
        errs: dict[str, list] = {}
        acc: dict[str, list] = {}
        secs: dict[str, list] = {}
        cover: dict[str, list] = {}
        widths: dict[str, list] = {}
        refused: dict[str, int] = {}
        unavailable: dict[str, str] = {}
        for r in range(reps):
            if data_name == "synthetic":
                data = synthetic_d10(m, seed=args.seed * 100_003 + r * 7919 + m, theta_scale=scale)
                key = (m, r)
            else:
                data, key = bc, ("bc",)
            if key not in ref_cache:
                ref_cache[key] = _nuts_mean(data["X"], data["y"], seed=r)
            ref = ref_cache[key]
            rng = np.random.default_rng(args.seed * 1_000_003 + r)
            X, y = data["X"], data["y"]
            prior = np.zeros(X.shape[1])

            def score(name, fn):
                t0 = time.perf_counter()
                try:
                    out = fn()
                except BayesDPError:           # a refusal scores as the prior mean
                    out = None
                except Unavailable as exc:
                    unavailable[name] = str(exc)
                    return
                secs.setdefault(name, []).append(time.perf_counter() - t0)
                items = []
                if isinstance(out, tuple):
                    out, items = out
                if out is None:
                    refused[name] = refused.get(name, 0) + 1
                    out = prior
                errs.setdefault(name, []).append(float(np.sum((out - ref) ** 2)))
                acc.setdefault(name, []).append(_accuracy(out, data["X_test"], data["y_test"]))
                for j, it in enumerate(items):
                    iv = it.get("error_interval") if isinstance(it, dict) else None
                    if iv is not None and j < ref.size:
                        cover.setdefault(name, []).append(float(iv[0] <= ref[j] <= iv[1]))
                        widths.setdefault(name, []).append(float(iv[1] - iv[0]))

            for name, flow in flows.items():
                score(name, lambda flow=flow: flow(X, y, eps, DELTA))
            score("noisy-gd", lambda: noisy_gd(X, y, eps, DELTA, rng))
            score("output-perturbation", lambda: output_perturbation(X, y, eps, DELTA, rng))
            score("diffprivlib", lambda: _diffprivlib(X, y, eps, int(rng.integers(2**31))))
            score("prior-mean", lambda: prior)
        med = {k: float(np.median(v)) for k, v in errs.items()}
        peers = [v for k, v in med.items() if k in ("noisy-gd", "output-perturbation", "diffprivlib")]
        best_peer = min(peers) if peers else None
        rows.append({
            "data": data_name, "m": int(data["X"].shape[0]) if data_name != "synthetic" else m,
            "dim": int(data["X"].shape[1]), "epsilon": eps, "delta": DELTA, "datasets": reps,
            "median_error": med,
            "ratio_to_best_peer": {k: (v / best_peer if best_peer else None) for k, v in med.items()},
            "test_accuracy": {k: float(np.median(v)) for k, v in acc.items()},
            "seconds": {k: float(np.median(v)) for k, v in secs.items()},
            "refused": refused, "unavailable": unavailable,
            "coverage": {k: {"intervals": len(v), "covered": int(sum(v)), "rate": float(np.mean(v)),
                             "mean_width": float(np.mean(widths[k]))} for k, v in cover.items()},
        })
    return {"settings": {"prior": "N(0, I)", "domain": list(DOMAIN), "gd_steps": GD_STEPS, "delta": DELTA,
                         "theta_scale": scale,
                         "reference": "NumPyro NUTS, 2 chains x 1000 draws"}, "cells": rows}


def format_table(result: dict) -> str:
    """A readable table of the median errors (one row per cell).

    Args:
        result: what :func:`run` returned.

    Returns:
        the table.

    Examples:
        >>> print(format_table({"cells": [{"data": "synthetic", "m": 1000, "epsilon": 1.0,
        ...                                "median_error": {"prior-mean": 4.2, "noisy-gd": 2.8}}]}))
        data         m       eps   noisy-gd  prior-mean
        synthetic    1000    1     2.8       4.2
    """
    names = sorted({k for c in result["cells"] for k in c["median_error"]})
    lines = [f"{'data':<12} {'m':<7} {'eps':<5} " + "  ".join(f"{n:<10}" for n in names).rstrip()]
    for c in result["cells"]:
        lines.append(f"{c['data']:<12} {c['m']:<7} {c['epsilon']:<5g} " + "  ".join(
            f"{c['median_error'].get(n, float('nan')):<10.3g}" for n in names).rstrip())
    return "\n".join(lines)
