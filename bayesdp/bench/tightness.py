"""``bayesdp bench tightness``: bayesdp's best certificate vs the exact privacy on the
linear–quadratic benchmark, and vs the seed routes.

Benchmark: K(x) = mu |x|^2/2 (L = mu), V_D(x) = -<b_D, x>, |b_D| <= c, ULA from a fixed x0,
replace-one neighbours (|b_D - b_D'| <= 2c).  The final draw and the path are Gaussian mechanisms:
    final: mu_exact = 2c (1 - rho^n) / (mu * sd_n), rho = 1 - gamma mu,
           sd_n^2 = (2 gamma/beta)(1 - rho^(2n))/(1 - rho^2);
    path:  mu_exact = 2c sqrt(beta n gamma / 2).
Exact epsilon at delta from Dong–Roth–Su Cor. 2.13 (computed here independently with
scipy.stats.norm and brentq).
"""

from __future__ import annotations

import math
import random

from ..errors import BayesDPError
from ..theorems.paper_constants import C3_as_printed, eps_delta_C4_form
from ..mechanisms import bound

__all__ = ["NAME", "HELP", "MUS", "CS", "STEP_FRACTIONS", "NUM_STEPS", "DELTA", "add_arguments",
           "exact_epsilon", "run", "format_table"]

NAME = "tightness"
HELP = "best certificate vs exact privacy on the linear-quadratic benchmark (and vs the seed routes)"

MUS = (0.01, 0.1, 1.0, 10.0, 100.0)
CS = (0.1, 1.0)
STEP_FRACTIONS = (0.01, 0.1, 0.5)   # gamma = f / mu  (< 2 mu / L^2 = 2 / mu)
NUM_STEPS = (10, 1000, 100_000)
DELTA = 1e-5


def add_arguments(p) -> None:
    """Add the options of ``bayesdp bench tightness`` to the argparse sub-parser ``p``.

    Args:
        p: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench tightness")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'random_draws': 10000, 'seed': 0}
    """
    p.add_argument("--random-draws", type=int, default=10_000,
                   help="random parameter draws for the soundness check (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the parameter draws")


def _gdp_delta_plain(mu: float, eps: float) -> float:
    if mu == 0:
        return 0.0
    from scipy.stats import norm   # imported when the bench runs, not when the CLI parser is built

    a = norm.logcdf(-eps / mu + mu / 2)
    b = eps + norm.logcdf(-eps / mu - mu / 2)
    return math.exp(a) * -math.expm1(min(b - a, 0.0))


def exact_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon(delta) of mu-GDP, by root finding on Dong-Roth-Su Cor. 2.13 in plain float
    arithmetic (an independent check of [`bayesdp.curves.GDP.epsilon`][bayesdp.curves.GDP.epsilon]).

    Args:
        mu: the GDP parameter >= 0.
        delta: in (0, 1).

    Returns:
        epsilon (0 when mu-GDP already gives delta at epsilon = 0).

    Examples:
        >>> round(exact_epsilon(1.0, 1e-5), 4)
        4.3772
    """
    if _gdp_delta_plain(mu, 0.0) <= delta:
        return 0.0
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1
    from scipy import optimize

    return optimize.brentq(lambda e: math.log(max(_gdp_delta_plain(mu, e), 1e-320)) - math.log(delta), 0, hi,
                           xtol=1e-12)


def _exact_mu(kind: str, mu: float, c: float, gamma: float, n: int, beta: float = 1.0) -> float:
    """The exact GDP mu of ULA's final draw (``ula-final``) or path (``ula-path``) on the benchmark."""
    from ..audit.lq import LQConfig, exact_mu   # the audit package loads JAX

    return exact_mu(kind, LQConfig(mu, c, step_size=gamma, num_steps=n, inverse_temperature=beta))


def _supported_thm52(mu, c, gamma, n) -> float:
    """004 Theorem 5.2 with the supported constant and the paper's own conversion (C/4 form)."""
    a = mu - gamma * mu * mu / 2
    T = n * gamma
    C = 4 * c * c * T if T < 1 else 4 * c * c * ((mu + 1) / a + 1) ** 2
    return eps_delta_C4_form(C, DELTA)


def _row(mu: float, c: float, f: float, n: int) -> dict:
    gamma = f / mu
    common = dict(strong_convexity=mu, smoothness=mu, grad_bound=c, step_size=gamma, num_steps=n, delta=DELTA)
    ex_final = exact_epsilon(_exact_mu("ula-final", mu, c, gamma, n), DELTA)
    ex_path = exact_epsilon(_exact_mu("ula-path", mu, c, gamma, n), DELTA)
    final = bound("ula-final", v_smoothness=0.0, **common)
    nonconvex = bound("ula-final", **common)
    path = bound("ula-path", grad_diff=2 * c, step_size=gamma, num_steps=n, delta=DELTA)
    routes = {cert.source: cert.epsilon(DELTA) for cert in final.certificates if cert.valid and cert.certified}
    sup52 = _supported_thm52(mu, c, gamma, n)
    a = mu - gamma * mu * mu / 2
    printed52 = eps_delta_C4_form(C3_as_printed(c, mu, mu, gamma), DELTA)  # as stated, for every n
    path_rdp = next(x for x in path.certificates if x.source == "004 Theorem 5.4")
    C5 = 4 * c * c * n * gamma
    return {
        "strong_convexity": mu, "grad_bound": c, "step_size": gamma, "num_steps": n, "delta": DELTA,
        "final_exact": ex_final, "final_best": final.value(), "final_best_source": final.best.source,
        "final_ratio": final.value() / ex_final if ex_final > 0 else None,
        "final_004_thm52_printed": printed52, "final_004_thm52_supported": sup52,
        "final_004_printed_ratio": printed52 / ex_final if ex_final > 0 else None,
        "final_routes": routes,
        "nonconvex_best": nonconvex.value(), "nonconvex_best_source": nonconvex.best.source,
        "nonconvex_vs_004_supported": nonconvex.value() / sup52,
        "path_exact": ex_path, "path_best": path.value(), "path_best_source": path.best.source,
        "path_ratio": path.value() / ex_path if ex_path > 0 else None,
        "path_004_thm54_own_conversion": eps_delta_C4_form(C5, DELTA),
        "path_004_thm54_ratio": eps_delta_C4_form(C5, DELTA) / ex_path,
        "path_004_thm54_cks": path_rdp.epsilon(DELTA),
        "a": a,
    }


def _soundness(draws: int, seed: int) -> dict:
    rng = random.Random(seed)
    checked = violations = 0
    worst = None
    for _ in range(draws):
        mu = 10 ** rng.uniform(-2, 2)
        L = mu * rng.uniform(1.0, 2.0)
        c = 10 ** rng.uniform(-3, 0.7)
        gamma = rng.uniform(0.01, 0.99) * 2 / L
        n = int(10 ** rng.uniform(0, 5))
        delta = 10 ** rng.uniform(-12, -1)
        beta = rng.choice([0.3, 1.0, 3.0])
        decl = rng.choice([{}, {"v_smoothness": 0.0}, {"v_convex": True}])
        mu_ex = _exact_mu("ula-final", mu, c, gamma, n, beta)
        if mu_ex > 30:
            continue
        ex = exact_epsilon(mu_ex, delta)
        try:
            r = bound("ula-final", strong_convexity=mu, smoothness=L, grad_bound=c, step_size=gamma, num_steps=n,
                      inverse_temperature=beta, delta=delta, **decl)
            p = bound("ula-path", grad_diff=2 * c, step_size=gamma, num_steps=n, inverse_temperature=beta,
                      delta=delta)
        except BayesDPError:
            continue
        ex_path = exact_epsilon(_exact_mu("ula-path", mu, c, gamma, n, beta), delta)
        checked += 1
        for cert in r.certificates:
            if cert.valid and cert.certified and cert.epsilon(delta) < ex * (1 - 1e-7) - 1e-9:
                violations += 1
                worst = {"source": cert.source, "mu": mu, "L": L, "c": c, "gamma": gamma, "n": n}
        for cert in p.certificates:
            if cert.valid and cert.epsilon(delta) < ex_path * (1 - 1e-7) - 1e-9:
                violations += 1
                worst = {"source": cert.source, "path": True, "c": c, "gamma": gamma, "n": n}
    return {"draws": draws, "checked": checked, "violations": violations, "example_violation": worst}


def run(args) -> dict:
    """Run ``bayesdp bench tightness`` with the parsed options ``args``: JSON-ready results.

    Every configuration of the grid [`MUS`][bayesdp.bench.tightness.MUS] x [`CS`][bayesdp.bench.tightness.CS] x
    [`STEP_FRACTIONS`][bayesdp.bench.tightness.STEP_FRACTIONS] x [`NUM_STEPS`][bayesdp.bench.tightness.NUM_STEPS] is
    certified and compared with the exact epsilon, then ``args.random_draws`` random configurations check soundness
    (no certified epsilon below the exact one).

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.tightness.add_arguments]' options.

    Returns:
        ``{"summary": ..., "rows": [...]}``.

    Examples:
        The grid alone (no random draws; a few seconds):

        >>> import argparse
        >>> res = run(argparse.Namespace(random_draws=0, seed=0))
        >>> len(res["rows"]), res["summary"]["final_ok"], res["summary"]["path_ok"]
        (90, True, True)
    """
    rows = [_row(mu, c, f, n) for mu in MUS for c in CS for f in STEP_FRACTIONS for n in NUM_STEPS]
    fr = [r["final_ratio"] for r in rows if r["final_ratio"] is not None]
    pr = [r["path_ratio"] for r in rows if r["path_ratio"] is not None]
    nc = [r["nonconvex_vs_004_supported"] for r in rows]
    summary = {
        "final_best_over_exact_max": max(fr), "final_target": 1.001, "final_ok": max(fr) <= 1.001,
        "path_best_over_exact_max": max(pr), "path_target": 1.001, "path_ok": max(pr) <= 1.001,
        "nonconvex_best_over_004_supported_max": max(nc), "nonconvex_target": 0.85, "nonconvex_ok": max(nc) <= 0.85,
        "004_thm52_printed_over_exact_range": [min(r["final_004_printed_ratio"] for r in rows),
                                               max(r["final_004_printed_ratio"] for r in rows)],
        "004_thm54_over_exact_range": [min(r["path_004_thm54_ratio"] for r in rows),
                                       max(r["path_004_thm54_ratio"] for r in rows)],
    }
    summary["soundness"] = _soundness(args.random_draws, args.seed)
    return {"summary": summary, "rows": rows}


def format_table(result: dict) -> str:
    """``result`` (what [`run`][bayesdp.bench.tightness.run] returned) as the readable table printed without ``--json``.

    Args:
        result: the result of [`run`][bayesdp.bench.tightness.run].

    Returns:
        the table: one line per grid row, then the summary.

    Examples:
        >>> print(format_table({"rows": [], "summary": {"final_ok": True}}).splitlines()[-1])
        final_ok: True
    """
    lines = [f"{'mu':>7} {'c':>4} {'gamma':>8} {'n':>7} | {'final exact':>11} {'best':>9} {'ratio':>7} "
             f"{'004 5.2*':>9} | {'nonconvex':>9} {'/5.2*':>6} | {'path exact':>10} {'best':>9} {'ratio':>7}"]
    for r in result["rows"]:
        lines.append(f"{r['strong_convexity']:7g} {r['grad_bound']:4g} {r['step_size']:8.3g} {r['num_steps']:7d} | "
                     f"{r['final_exact']:11.5g} {r['final_best']:9.5g} {r['final_ratio'] or 0:7.4f} "
                     f"{r['final_004_thm52_supported']:9.4g} | {r['nonconvex_best']:9.4g} "
                     f"{r['nonconvex_vs_004_supported']:6.3f} | {r['path_exact']:10.5g} {r['path_best']:9.5g} "
                     f"{r['path_ratio'] or 0:7.4f}")
    s = result["summary"]
    lines.append("")
    for k, v in s.items():
        lines.append(f"{k}: {v}")
    return "\n".join(lines)
