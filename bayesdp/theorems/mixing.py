"""002/000 (Balle, Barthe, Gaboardi, Geumlek 2019): amplification by mixing and diffusion.

Every result cites its number as ../shared/math/SEEDS.md §1 names it
(e.g. ``"002 Theorem 1(3)"``).  Corrections of SEEDS.md §6 applied:

* row 23: 002 Example 3 prints ``alpha Delta^2/(2 sigma_2^2)``; the proof gives
  ``alpha Delta^2/(2 sigma_*^2)`` with ``sigma_*^2 = s1^2 + s2^2/L^2`` (implemented).
* row 24: the OU SDE is printed with ``sqrt(2 rho) dW``; the stated semigroup
  ``P_t(x) = N(e^{-theta t} x, (rho^2/theta)(1 - e^{-2 theta t}) I)`` is used.
* row 26: 000 Lemma 9 states ``(gamma, eps)-Dobrushin => gamma-Dobrushin``; only the
  reverse holds.  :func:`implied_conditions` encodes the correct direction.

Example 2's certificate over all adjacent pairs takes the minimum over the
interpolation point theta (derivation in docs/seed_systems.md, SEEDS §1.6).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..certificate import Certificate
from ..curves import RDP, ApproxDP
from ..exact import round_up
from ..errors import AssumptionError, nonnegative, positive, positive_int, require

CONDITIONS = ("dobrushin", "dobrushin-eps", "doeblin", "ultra-mixing")

_SOURCES = {"dobrushin": "002 Theorem 1(1)", "dobrushin-eps": "002 Theorem 1(2)",
            "doeblin": "002 Theorem 1(3)", "ultra-mixing": "002 Theorem 1(4)"}


# ---------------------------------------------------------------------------
# Definition 1 / Lemma 9 and Theorem 1
# ---------------------------------------------------------------------------


def implied_conditions(condition: str) -> tuple[str, ...]:
    """Conditions implied by ``condition`` with the same gamma (002 Fig. 1, 000 Lemma 9 corrected).

    ultra-mixing => Doeblin => Dobrushin => (gamma, eps)-Dobrushin for every eps.  The
    converse of the last step is false (SEEDS §6 row 26): (gamma, eps)-Dobrushin implies nothing.
    """
    chain = ("ultra-mixing", "doeblin", "dobrushin", "dobrushin-eps")
    c = _norm_condition(condition)
    return chain[chain.index(c):]


def _norm_condition(condition: str) -> str:
    c = str(condition).replace("_", "-")
    if c not in CONDITIONS:
        raise AssumptionError(f"condition = {condition!r} must be one of {', '.join(CONDITIONS)}")
    return c


def required_dobrushin_eps(eps: float, delta: float) -> float:
    """002 Theorem 1(2): ``eps~ = log(1 + (e^eps - 1)/delta)``; ``+inf`` if delta = 0 (footnote 3)."""
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    if d == 0.0:
        return math.inf
    return math.log1p(math.expm1(e) / d)


def doeblin_amplifies_delta(eps: float, delta: float, gamma: float) -> bool:
    """002 remark after Theorem 1: Doeblin gives delta' <= delta iff
    ``gamma <= delta e^eps/((1 - delta)(e^eps - 1))`` or gamma = 1."""
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    g = nonnegative("gamma", gamma)
    if g == 1.0 or e == 0.0 or d >= 1.0:
        return True
    return g <= d * math.exp(e) / ((1.0 - d) * math.expm1(e))


def amplify_by_mixing(eps: float, delta: float, gamma: float, condition: str) -> tuple[float, float]:
    """002 Theorem 1 (1)-(4): the (eps', delta') of ``K o M`` for an (eps, delta)-DP M.

    (1) gamma-Dobrushin, (2) (gamma, eps~)-Dobrushin with eps~ = :func:`required_dobrushin_eps`:
    ``(eps, gamma delta)``; (3) gamma-Doeblin: ``eps' = log(1 + gamma (e^eps - 1))``,
    ``delta' = gamma (1 - e^{eps' - eps}(1 - delta))``; (4) gamma-ultra-mixing: same eps',
    ``delta' = gamma delta e^{eps' - eps}``.
    """
    c = _norm_condition(condition)
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    require(d <= 1.0, "delta_in", d, "must be in [0, 1]")
    g = nonnegative("gamma", gamma, "declare the mixing coefficient of the kernel")
    require(g <= 1.0, "gamma", g, "must be in [0, 1] (a mixing coefficient)")
    if c in ("dobrushin", "dobrushin-eps"):
        return e, g * d
    eps_p = math.log1p(g * math.expm1(e))
    beta = math.exp(eps_p - e)
    if c == "doeblin":
        return eps_p, min(1.0, max(0.0, g * (1.0 - beta * (1.0 - d))))
    return eps_p, g * d * beta


def theorem_1(epsilon_in: float, delta_in: float, gamma: float, condition: str,
              mechanism: str = "mixing") -> Certificate:
    """002 Theorem 1: amplification by one mixing post-processing step; an ApproxDP point."""
    c = _norm_condition(condition)
    eps_p, delta_p = amplify_by_mixing(epsilon_in, delta_in, gamma, c)
    consts = {"epsilon_out": eps_p, "delta_out": delta_p}
    notes = ""
    assumptions = {"epsilon_in": float(epsilon_in), "delta_in": float(delta_in), "gamma": float(gamma),
                   "condition": c}
    if c == "dobrushin-eps":
        et = required_dobrushin_eps(epsilon_in, delta_in)
        consts["required_dobrushin_eps"] = et
        assumptions["kernel"] = f"(gamma, {et:.6g})-Dobrushin: sup E_(e^eps~)(K(x)||K(x')) <= gamma"
        notes = "the kernel must be (gamma, eps~)-Dobrushin with eps~ = log(1 + (e^eps - 1)/delta)"
    if c == "doeblin":
        consts["doeblin_amplifies_delta"] = float(doeblin_amplifies_delta(epsilon_in, delta_in, gamma))
    return Certificate(mechanism=mechanism, source=_SOURCES[c], curve=ApproxDP(eps_p, delta_p),
                       assumptions=assumptions, constants=consts, notes=notes)


# ---------------------------------------------------------------------------
# Examples 1-3 and Lemma 3
# ---------------------------------------------------------------------------


def iterated_gaussian_rdp(alpha: float, sensitivity: float, s1: float, s2: float) -> float:
    """002 Example 1: ``alpha Delta^2/(2 (s1^2 + s2^2))``."""
    return alpha * sensitivity ** 2 / (2.0 * (s1 ** 2 + s2 ** 2))


def example_1(sensitivity: float, s1: float, s2: float, mechanism: str = "iterated-gaussian") -> Certificate:
    """002 Example 1: ``N(f(D), s1^2 I)`` followed by ``K(x) = N(x, s2^2 I)``: linear RDP."""
    d = nonnegative("sensitivity", sensitivity)
    a = positive("s1", s1)
    b = nonnegative("s2", s2)
    kappa = d * d / (2.0 * (a * a + b * b))
    return Certificate(mechanism=mechanism, source="002 Example 1", curve=RDP.linear(kappa),
                       assumptions={"sensitivity": d, "s1": a, "s2": b}, constants={"kappa": kappa})


def lipschitz_gaussian_kernel_rdp(alpha: float, sensitivity: float, s1: float, s2: float, lipschitz: float) -> float:
    """002 Example 3 (corrected, SEEDS §6 row 23): ``alpha Delta^2/(2 sigma_*^2)``,
    ``sigma_*^2 = s1^2 + s2^2/L^2``; L = 0 (constant kernel) gives 0."""
    L = nonnegative("lipschitz", lipschitz)
    if L == 0.0:
        return 0.0
    return alpha * sensitivity ** 2 / (2.0 * (s1 ** 2 + s2 ** 2 / L ** 2))


def example_3(sensitivity: float, s1: float, s2: float, lipschitz: float,
              mechanism: str = "lipschitz-gaussian-kernel") -> Certificate:
    """002 Example 3: ``N(f(D), s1^2 I)`` then ``K(x) = N(psi(x), s2^2 I)``, psi L-Lipschitz."""
    d = nonnegative("sensitivity", sensitivity)
    a = positive("s1", s1)
    b = positive("s2", s2)
    kappa = lipschitz_gaussian_kernel_rdp(1.0, d, a, b, lipschitz)
    sigma_star2 = math.inf if lipschitz == 0 else a * a + b * b / lipschitz ** 2
    return Certificate(mechanism=mechanism, source="002 Example 3", curve=RDP.linear(kappa),
                       assumptions={"sensitivity": d, "s1": a, "s2": b, "lipschitz": float(lipschitz)},
                       constants={"kappa": kappa, "sigma_star_sq": sigma_star2},
                       notes="denominator 2*sigma_*^2 (printed sigma_2 is a typo, SEEDS §6 row 23)")


def _log_g(alpha: float, z: float) -> float:
    """log g_alpha(z), ``g_alpha(z) = alpha/(2alpha-1) e^{z(alpha-1)} + (alpha-1)/(2alpha-1) e^{-z alpha}``."""
    a = alpha
    t1 = math.log(a / (2 * a - 1)) + z * (a - 1)
    t2 = math.log((a - 1) / (2 * a - 1)) - z * a
    m = max(t1, t2)
    return m + math.log(math.exp(t1 - m) + math.exp(t2 - m))


def laplace_rdp(alpha: float, z: float) -> float:
    """Laplace mechanism RDP (Mironov 2017 Cor. 2, quoted in 002 Example 2): ``log(g_alpha(z))/(alpha-1)``,
    z = Delta/lambda."""
    a = float(alpha)
    if not a > 1:
        raise AssumptionError(f"alpha = {a:.6g} must be > 1 (Renyi order)")
    return _log_g(a, nonnegative("z = Delta/lambda", z)) / (a - 1.0)


def iterated_laplace_rdp(alpha: float, sensitivity: float, lam1: float, lam2: float, n_grid: int = 2001) -> float:
    """002 Example 2 over all adjacent pairs (SEEDS §1.6):
    ``min_{theta in [0,1]} log(g_alpha(theta Delta/lam1) g_alpha((1-theta) Delta/lam2))/(alpha-1)``.

    Any theta gives a valid bound, so a grid minimum is sound; a local refinement
    around the best grid point only tightens it.
    """
    a = float(alpha)
    if not a > 1:
        raise AssumptionError(f"alpha = {a:.6g} must be > 1 (Renyi order)")
    d = nonnegative("sensitivity", sensitivity)
    l1 = positive("lam1", lam1)
    l2 = positive("lam2", lam2)
    thetas = np.linspace(0.0, 1.0, n_grid)

    def f(t: float) -> float:
        return (_log_g(a, t * d / l1) + _log_g(a, (1.0 - t) * d / l2)) / (a - 1.0)

    vals = [f(t) for t in thetas]
    k = int(np.argmin(vals))
    best = vals[k]
    from scipy import optimize
    lo, hi = thetas[max(k - 1, 0)], thetas[min(k + 1, n_grid - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        if res.success:
            best = min(best, float(res.fun))
    return best


def lap2_pdf(x: float, lam1: float, lam2: float) -> float:
    """000 eq. (6): density of the sum of independent Laplace(0, lam1) and Laplace(0, lam2)."""
    l1 = positive("lam1", lam1)
    l2 = positive("lam2", lam2)
    ax = abs(float(x))
    if math.isclose(l1, l2, rel_tol=1e-12):
        lam = 0.5 * (l1 + l2)
        return math.exp(-ax / lam) * (lam + ax) / (4.0 * lam * lam)
    return (l1 * math.exp(-ax / l1) - l2 * math.exp(-ax / l2)) / (2.0 * (l1 * l1 - l2 * l2))


def iterated_laplace_pure_eps(sensitivity: float, lam1: float, lam2: float) -> float:
    """002 Lemma 3: ``K o M`` is exactly ``Delta/max(lam1, lam2)``-DP (and no better)."""
    return nonnegative("sensitivity", sensitivity) / max(positive("lam1", lam1), positive("lam2", lam2))


def example_2(sensitivity: float, lam1: float, lam2: float, mechanism: str = "iterated-laplace") -> list[Certificate]:
    """002 Example 2 (RDP, min over theta) and 002 Lemma 3 (exact pure DP) for iterated Laplace."""
    d = nonnegative("sensitivity", sensitivity)
    l1 = positive("lam1", lam1)
    l2 = positive("lam2", lam2)
    pure = iterated_laplace_pure_eps(d, l1, l2)
    rdp = RDP.from_function(lambda a: min(iterated_laplace_rdp(a, d, l1, l2, 401), pure),
                            "002 Example 2 (min over theta), capped by Lemma 3")
    assumptions = {"sensitivity": d, "lam1": l1, "lam2": l2}
    return [Certificate(mechanism=mechanism, source="002 Example 2", curve=rdp, assumptions=assumptions,
                        notes="min over the interpolation point theta (docs/seed_systems.md)"),
            Certificate(mechanism=mechanism, source="002 Lemma 3", curve=ApproxDP(pure, 0.0),
                        assumptions=assumptions, constants={"pure_epsilon": pure})]


# ---------------------------------------------------------------------------
# Theorem 4 and Theorem 5
# ---------------------------------------------------------------------------


def theorem_4_path_rdp(alpha: float, lipschitz: float, noise_std: float, w_inf: Sequence[float]) -> float:
    """002 Theorem 4 (2): ``alpha L^2/(2 sigma^2) sum_{i=1}^r L^{2(r-i)} W_inf(mu_i, mu_{i-1})^2``
    for any interpolating path mu_0 = mu, ..., mu_r = nu (``w_inf`` = its r step lengths)."""
    L = nonnegative("lipschitz", lipschitz)
    s = positive("noise_std", noise_std)
    w = [nonnegative("W_inf", x) for x in w_inf]
    r = len(w)
    require(r >= 1, "len(w_inf)", r, "must be >= 1 (number of kernels r)")
    return alpha * L * L / (2 * s * s) * sum(L ** (2 * (r - i)) * w[i - 1] ** 2 for i in range(1, r + 1))


def pabi_contractive_rdp(alpha: float, w_inf: float, lipschitz: float, num_kernels: int, noise_std: float,
                         tight: bool = False) -> float:
    """002 Theorem 4 (3): ``alpha Delta^2 L^{r+1}/(2 r sigma^2)`` for L <= 1, ``W_inf(mu, nu) = Delta``.

    ``tight=True``: the value of the proof's path before ``phi(L) <= 1/r`` (SEEDS §1.8),
    ``alpha r Delta^2 L^{2r}(1-L)^2/(2 sigma^2 (1-L^r)^2)`` (L = 1: ``alpha Delta^2/(2 r sigma^2)``).
    """
    L = nonnegative("lipschitz", lipschitz)
    require(L <= 1.0, "lipschitz", L, "must be <= 1 for 002 Theorem 4 (3)", "use Theorem 4 (2) with a path")
    r = positive_int("num_kernels", num_kernels)
    s = positive("noise_std", noise_std)
    d = nonnegative("W_inf", w_inf)
    if not tight:
        return round_up(alpha * d * d * L ** (r + 1) / (2.0 * r * s * s))
    if L == 1.0:
        return round_up(alpha * d * d / (2.0 * r * s * s))
    if L == 0.0:
        return 0.0
    # r L^{2r} (1-L)^2/(1-L^r)^2 is increasing in L; 1 - L is exact for L >= 1/2 (Sterbenz) and
    # 1 - L^r = -expm1(r log L) has no cancellation when L is close to 1
    one_minus_lr = -math.expm1(r * math.log(L))
    return round_up(alpha * r * d * d * math.exp(2 * r * math.log(L)) * ((1.0 - L) / one_minus_lr) ** 2
                    / (2.0 * s * s))


def noisy_proj_sgd_index_kappa(lipschitz: float, noise_scale: float, contraction: float, data_size: int,
                               index: int, tight: bool = False) -> float:
    """002 Theorem 5: eps_i with ``L = contraction`` = sqrt(1 - 2 eta beta rho/(beta+rho)).

    ``eps_n = 2 C^2/sigma^2``; ``eps_i = 2 C^2/((n-i) sigma^2) L^{n-i+1}`` for i < n (the
    printed ``(1 - 2 eta beta rho/(beta+rho))^{(n-i+1)/2}`` is ``L^{n-i+1}``).
    """
    C, s, M, n, i = lipschitz, noise_scale, contraction, data_size, index
    r = n - i
    if r == 0:
        return 2.0 * C * C / (s * s)
    # Theorem 4 (3) with W_inf = 2 eta C and noise std eta sigma: eta cancels.
    return pabi_contractive_rdp(1.0, 2.0 * C, M, r, s, tight=tight)


def theorem_5(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float, noise_scale: float,
              data_size: int, index: int | None = None, tight: bool = False, allow_infeasible: bool = False,
              mechanism: str = "pnsgd") -> Certificate:
    """002 Theorem 5 (NoisyProjSGD, one pass, release x_n): ``(alpha, alpha eps_i)``-RDP at index i.

    Loss C-Lipschitz, beta-smooth, rho-strongly convex; ``eta <= 2/(beta + rho)``
    (checked by :func:`bayesdp.theorems.hockey_stick.sc_step_lipschitz`, strict as in 003).
    ``index=None``: every index (worst i = n).
    """
    from .hockey_stick import _check_index, sc_step_lipschitz

    C = positive("lipschitz", lipschitz)
    s = positive("noise_scale", noise_scale, "sigma of Z (added noise has std step_size * sigma)")
    M = sc_step_lipschitz(step_size, smoothness, strong_convexity, allow_infeasible)
    n, i = _check_index(data_size, index)
    kappa = noisy_proj_sgd_index_kappa(C, s, M, n, i, tight)
    return Certificate(
        mechanism=mechanism, source="002 Theorem 5", curve=RDP.linear(kappa),
        assumptions={"lipschitz": C, "smoothness": float(smoothness), "strong_convexity": float(strong_convexity),
                     "step_size": float(step_size), "noise_scale": s, "data_size": n,
                     "index": i if index is not None else "all (worst i = n)"},
        constants={"M": M, "eps_i": kappa},
        notes="tight path value (SEEDS §1.10)" if tight else "",
    )


# ---------------------------------------------------------------------------
# Theorem 6, Corollary 7 (Ornstein-Uhlenbeck) and Theorem 8
# ---------------------------------------------------------------------------


def brownian_rdp(alpha: float, time: float, sensitivity: float) -> float:
    """002 Theorem 6 / Examples 4-5 (Brownian motion, P_t(x) = N(x, 2t I)): ``alpha Delta^2/(4 t)``."""
    t = positive("time", time)
    return alpha * nonnegative("sensitivity", sensitivity) ** 2 / (4.0 * t)


def ou_lambda(theta: float, rho: float, time: float, sensitivity: float) -> float:
    """002 Corollary 7: ``Lambda(t) = theta Delta^2/(2 rho^2 (e^{2 theta t} - 1))``."""
    th = positive("theta", theta, "the OU mean-reversion rate must be > 0")
    r = positive("rho", rho, "the OU diffusion coefficient must be > 0")
    t = positive("time", time, "the diffusion time must be > 0 (t -> 0 gives no privacy)")
    d = nonnegative("sensitivity", sensitivity)
    return th * d * d / (2.0 * r * r * math.expm1(2.0 * th * t))


def ou_rdp(alpha: float, theta: float, rho: float, time: float, sensitivity: float) -> float:
    """002 Corollary 7: ``alpha Lambda(t)``."""
    return alpha * ou_lambda(theta, rho, time, sensitivity)


def ou_mse(theta: float, rho: float, time: float, dimension: int, f_norm: float) -> float:
    """002 eq. (4): ``(1 - e^{-theta t})^2 ||f(D)||^2 + (d rho^2/theta)(1 - e^{-2 theta t})``."""
    th, r, t = positive("theta", theta), positive("rho", rho), positive("time", time)
    d = positive_int("dimension", dimension)
    f = nonnegative("f_norm", f_norm)
    return math.expm1(-th * t) ** 2 * f * f - d * r * r / th * math.expm1(-2.0 * th * t)


def gaussian_equiv_mse(theta: float, rho: float, time: float, dimension: int) -> float:
    """002 Theorem 8: Gaussian mechanism with the same RDP: ``E_GM = d rho^2 (e^{2 theta t} - 1)/theta``."""
    th, r, t = positive("theta", theta), positive("rho", rho), positive("time", time)
    d = positive_int("dimension", dimension)
    return d * r * r * math.expm1(2.0 * th * t) / th


def ou_calibrate(eps: float, dimension: int, sensitivity: float, radius: float) -> tuple[float, float]:
    """002 Theorem 8 calibration: ``theta = log(1 + d Delta^2/(2 eps R^2))``,
    ``rho^2 = theta Delta^2/(2 eps (e^{2 theta} - 1))``: ``(alpha, alpha eps)``-RDP at t = 1."""
    e = positive("epsilon", eps)
    d = positive_int("dimension", dimension)
    D = positive("sensitivity", sensitivity)
    R = positive("radius", radius)
    th = math.log1p(d * D * D / (2.0 * e * R * R))
    rho2 = th * D * D / (2.0 * e * math.expm1(2.0 * th))
    return th, math.sqrt(rho2)


def theorem_8_applies(theta: float, rho: float, dimension: int, radius: float) -> bool:
    """002 Theorem 8 hypothesis ``theta R^2 <= 4 d rho^2`` (then E_OU/E_GM <= 1 for all t >= 0)."""
    return positive("theta", theta) * radius ** 2 <= 4.0 * positive_int("dimension", dimension) * rho ** 2


def corollary_7(theta: float, rho: float, time: float, sensitivity: float, dimension: int | None = None,
                f_norm: float | None = None, radius: float | None = None, mechanism: str = "ou") -> Certificate:
    """002 Corollary 7 (OU mechanism ``e^{-theta t} f(D) + N(0, (rho^2/theta)(1 - e^{-2 theta t}) I)``).

    With ``dimension`` and ``f_norm`` (or ``radius`` = sup ||f(D)||, worst case) the
    constants also report the MSE of the OU mechanism (002 eq. (4)) and of the Gaussian
    mechanism with the same RDP (002 Theorem 8), and whether Theorem 8's hypothesis holds.
    """
    lam = ou_lambda(theta, rho, time, sensitivity)
    consts: dict[str, float] = {"Lambda": lam, "output_scale": math.exp(-theta * time),
                                "noise_variance": -rho * rho / theta * math.expm1(-2.0 * theta * time)}
    notes = "semigroup as stated (SDE dX = -theta X dt + sqrt(2) rho dW; printed sqrt(2 rho) is a typo)"
    if dimension is not None:
        d = positive_int("dimension", dimension)
        consts["mse_gaussian"] = gaussian_equiv_mse(theta, rho, time, d)
        norm = f_norm if f_norm is not None else radius
        if norm is not None:
            if f_norm is not None and radius is not None:
                require(f_norm <= radius, "f_norm", f_norm, f"must be <= radius = {radius:.6g}")
            consts["mse_ou"] = ou_mse(theta, rho, time, d, norm)
            consts["mse_ratio"] = consts["mse_ou"] / consts["mse_gaussian"]
        if radius is not None:
            consts["theorem_8_applies"] = float(theorem_8_applies(theta, rho, d, nonnegative("radius", radius)))
    elif f_norm is not None or radius is not None:
        raise AssumptionError("--dimension is required to report the MSE (002 eq. (4) needs d)")
    return Certificate(mechanism=mechanism, source="002 Corollary 7", curve=RDP.linear(lam),
                       assumptions={"theta": float(theta), "rho": float(rho), "time": float(time),
                                    "sensitivity": float(sensitivity)},
                       constants=consts, notes=notes)
