"""001 (Bravo, Flores-Mella, Guzmán): PABI with a modulus of continuity, PLA mixing, noisy SGD.

Every result cites its number as ../shared/math/SEEDS.md §3 names it.  Object
(001 §3): ``X_{t+1} = Pi_X[Phi_t(X_t) + xi_t]``, ``xi_t ~ N(0, sigma_t^2 I)``, on a convex
compact X of diameter D; ``phi_t(z) = sqrt(c_t z^2 + h_t)`` bounds the modulus of Phi_t.

Corrections of SEEDS.md §6 applied:

* row 13: 001 Theorem 5.2 needs ``b/n < 1/5`` (Lemma A.18 needs q in (0, 1/5)); enforced;
* row 14: with Poisson batches |B_t| can exceed b; the modulus h is then computed with
  ``eta_eff = eta * max_batch / b`` (``max_batch`` defaults to n, the worst case);
* row 15: the (eps, delta) conversion (22) of Theorem 5.4 is used at
  ``alpha = min(alpha_opt, alpha*)``, never with the paper's 6.25-shortcut (23);
* row 17: the printed lower estimate of Corollary 3.9 is false for c > 1 and is not used.

RDP results whose validity is restricted to ``alpha <= alpha*`` are
[`RDP.from_function`][bayesdp.curves.RDP.from_function] curves returning ``inf`` outside the valid range, so every
conversion only uses valid orders.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..certificate import Certificate
from ..curves import RDP
from ..exact import OUTWARD, down, exact, mp_down as _mp_down, mp_up as _mp_up, up
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from ..errors import probability_open
from .hockey_stick import _check_index

__all__ = ["CASES", "modulus_params", "theorem_3_4_coefficient", "lemma_3_5_shifts", "shift_objective",
           "constant_coefficient", "pabi", "pnsgd_pabi", "pla_kl_bound", "pla_step_threshold", "pla_mixing_time",
           "sgm_bound_applies", "remark_5_3_factor", "theorem_5_2", "theorem_5_4", "noisy_sgd_dp_nonconvex"]

#: the rows of 001 Table 1 accepted by :func:`modulus_params` and :func:`pabi`
CASES = ("convex-lipschitz", "convex-weakly-smooth", "strongly-convex-smooth", "convex-smooth",
         "nonconvex-smooth", "strongly-dissipative")

_ROW = {"convex-lipschitz": 1, "convex-weakly-smooth": 2, "strongly-convex-smooth": 3, "convex-smooth": 4,
        "nonconvex-smooth": 5, "strongly-dissipative": 6}


# ---------------------------------------------------------------------------
# §2 / §3.1: moduli of the gradient map (Table 1)
# ---------------------------------------------------------------------------


def _holder_h(step_size: float, holder_exponent: float, holder_constant: float) -> float:
    """Row (2): ``h = 4 eta^{2/(1-p)} ((1-p)/(1+p)) (M/2)^{2/(1-p)}`` (computed in logs)."""
    if holder_constant == 0.0:
        return 0.0
    import mpmath

    with mpmath.workdps(50):   # 4 eta^(2q) (1-p)/(1+p) (M/2)^(2q) at 50 digits, rounded up
        return _mp_up(_holder_h_mp(mpmath.mpf(step_size), holder_exponent, holder_constant))


def _holder_h_mp(eta, p: float, M: float):
    """Row (2)'s h as an mpmath number (``eta`` one too; the caller sets the precision)."""
    import mpmath

    if M == 0.0:
        return mpmath.mpf(0)
    P = mpmath.mpf(p)
    q = 1 / (1 - P)
    return mpmath.exp(mpmath.log(4) + 2 * q * mpmath.log(eta) + mpmath.log((1 - P) / (1 + P))
                      + 2 * q * mpmath.log(mpmath.mpf(M) / 2))


def modulus_params(case: str, step_size: float, lipschitz: float | None = None, smoothness: float | None = None,
                   strong_convexity: float | None = None, holder_exponent: float | None = None,
                   holder_constant: float | None = None, dissipativity: float | None = None) -> tuple[float, float]:
    """001 §2 / Table 1: ``(c, h)`` with ``||Phi(x) - Phi(y)|| <= sqrt(c ||x - y||^2 + h)``, Phi = x - eta grad f.

    Rows (SEEDS §3.1): (1) ``convex-lipschitz`` c = 1, h = (2 eta L)^2; (2) ``convex-weakly-smooth``
    c = 1, h of the Hölder bound; (3) ``strongly-convex-smooth`` c = 1 - 2 eta kappa + eta^2 beta^2;
    (4) ``convex-smooth`` c = 1 (eta <= 2/beta); (5) ``nonconvex-smooth`` c = (1 + eta beta)^2;
    (6) ``strongly-dissipative`` c as (3), h = 2 eta lambda.

    Args:
        case: one of [`CASES`][bayesdp.theorems.pabi.CASES] (``_`` may replace ``-``).
        step_size: eta > 0.
        lipschitz: L (row 1).
        smoothness: beta (rows 3-6).
        strong_convexity: kappa (rows 3, 6).
        holder_exponent: p in [0, 1) (row 2).
        holder_constant: M (row 2).
        dissipativity: lambda (row 6).

    Returns:
        ``(c, h)``, c rounded up where it is computed.

    Raises:
        AssumptionError: an unknown case, a constant the case needs missing or out of range, or the
            step condition of row (4).

    Examples:
        >>> modulus_params("convex-lipschitz", step_size=0.1, lipschitz=1.0)           # (1, (2 * 0.1 * 1)^2)
        (1.0, 0.04000000000000001)
        >>> c, h = modulus_params("strongly-convex-smooth", 0.1, smoothness=2.0, strong_convexity=1.0)
        >>> round(c, 6), h                                                             # 1 - 0.2 + 0.04
        (0.84, 0.0)
    """
    c = str(case).replace("_", "-")
    if c not in CASES:
        raise AssumptionError(f"case = {case!r} must be one of {', '.join(CASES)}")
    eta = positive("step_size", step_size)

    def req(name, val, what):
        if val is None:
            raise AssumptionError(f"--{name.replace('_', '-')} is required for case {c}: {what}")
        return val

    if c == "convex-lipschitz":
        L = nonnegative("lipschitz", req("lipschitz", lipschitz, "L, the Lipschitz constant of f"))
        return 1.0, up((2 * exact(eta) * exact(L)) ** 2)
    if c == "convex-weakly-smooth":
        p = nonnegative("holder_exponent", req("holder_exponent", holder_exponent, "p in [0, 1)"))
        require(p < 1.0, "holder_exponent", p, "must be in [0, 1) for row (2)",
                "for p = 1 use --case convex-smooth with --smoothness M")
        M = nonnegative("holder_constant", req("holder_constant", holder_constant,
                                                "M with ||grad f(x) - grad f(y)|| <= M ||x - y||^p"))
        return 1.0, _holder_h(eta, p, M)
    beta = positive("smoothness", req("smoothness", smoothness, "beta, the Lipschitz constant of grad f"))
    if c == "convex-smooth":
        require(exact(eta) * exact(beta) <= 2, "step_size", eta,   # eta <= 2/beta, exactly
                f"must be <= 2/smoothness = {2.0 / beta:.6g} for row (4)",
                "choose a smaller step size")
        return 1.0, 0.0
    if c == "nonconvex-smooth":
        return up((1 + exact(eta) * exact(beta)) ** 2), 0.0
    kappa = positive("strong_convexity", req("strong_convexity", strong_convexity, "kappa > 0"))
    # 1 - 2 eta kappa + eta^2 beta^2 exactly, rounded up (the bounds increase with c)
    cq = 1 - 2 * exact(eta) * exact(kappa) + exact(eta) ** 2 * exact(beta) ** 2
    cc = up(cq)
    if c == "strongly-convex-smooth":
        require(kappa <= beta, "strong_convexity", kappa, f"must be <= smoothness = {beta:.6g}",
                "a beta-smooth kappa-strongly convex function has kappa <= beta")
        return max(cc, 0.0), 0.0
    lam = nonnegative("dissipativity", req("dissipativity", dissipativity,
                                           "lambda of <grad f(x) - grad f(y), x - y> >= -lambda + kappa |x - y|^2"))
    require(cc >= 0.0, "strong_convexity", kappa,
            f"gives c = 1 - 2 eta kappa + eta^2 beta^2 = {cc:.6g} < 0: inconsistent constants (need kappa <= beta)")
    return cc, up(2 * exact(eta) * exact(lam))


# ---------------------------------------------------------------------------
# Theorem 3.4 and Lemma 3.5
# ---------------------------------------------------------------------------


def _seq(name: str, x: Sequence[float], T: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    if T is not None:
        require(a.size == T, f"len({name})", a.size, f"must equal T = {T}")
    if not np.all(np.isfinite(a)):
        raise AssumptionError(f"{name} contains a non-finite value; pass finite numbers")
    return a


def theorem_3_4_coefficient(c: Sequence[float], h: Sequence[float], sigma2: Sequence[float], D: float) -> float:
    """001 Theorem 3.4: ``R_alpha(X_T || X'_T) <= alpha * kappa`` with

    ``kappa = (1/2) [P(0,T-1) D^2/S(0) + sum_t h_t P(t+1,T-1)/S(t)]``,
    ``P(a,b) = prod_{l=a}^b c_l``, ``S(t) = sum_{j=t}^{T-1} sigma_j^2 P(j+1,T-1)``; log space.

    Args:
        c: the moduli's c_t > 0, t = 0..T-1.
        h: the moduli's h_t >= 0.
        sigma2: the noise variances sigma_t^2 > 0.
        D: the diameter of the domain, >= 0.

    Returns:
        kappa.

    Raises:
        AssumptionError: lengths differ, a value non-finite or out of range.

    Examples:
        SEEDS §3.3 test vector (001 App. B Fig. 2: D = 5, c = 1, h = 4, sigma = (1, 0.01, 0.4)):
        E(u*) = 74.9822297728862, so kappa = E(u*)/2.

        >>> round(theorem_3_4_coefficient([1, 1, 1], [4, 4, 4], [1, 1e-4, 0.16], D=5.0), 9)
        37.491114886
    """
    cs = _seq("c", c)
    T = cs.size
    require(T >= 1, "T (number of steps)", T, "must be >= 1")
    hs = _seq("h", h, T)
    s2 = _seq("sigma2", sigma2, T)
    require(bool(np.all(cs > 0)), "c", float(cs.min()), "must be > 0 for 001 Theorem 3.4")
    require(bool(np.all(hs >= 0)), "h", float(hs.min()), "must be >= 0")
    require(bool(np.all(s2 > 0)), "sigma2", float(s2.min()), "must be > 0 (noise variances)")
    Dv = nonnegative("diameter", D)
    # logP[t] = log P(t, T-1), t = 0..T (logP[T] = 0)
    logc = np.log(cs)
    logP = np.concatenate([np.cumsum(logc[::-1])[::-1], [0.0]])
    terms = np.log(s2) + logP[1:]                       # log(sigma_j^2 P(j+1, T-1)), j = 0..T-1
    logS = np.logaddexp.accumulate(terms[::-1])[::-1]   # log S(t)
    total = 0.0
    if Dv > 0:
        total += math.exp(2 * math.log(Dv) + logP[0] - logS[0])
    pos = hs > 0
    if np.any(pos):
        total += float(np.sum(np.exp(np.log(hs[pos]) + logP[1:][pos] - logS[pos])))
    return 0.5 * total


def lemma_3_5_shifts(c: Sequence[float], h: Sequence[float], sigma2: Sequence[float], D: float) -> np.ndarray:
    """001 Lemma 3.5: optimal ``u*_0 = D, ..., u*_T = 0``,
    ``u*_t = [sum_{k>=t} P(k+1,T-1) sigma_k^2]/[sum_{j>=t-1} P(j+1,T-1) sigma_j^2] phi_{t-1}(u*_{t-1})``.

    Args:
        c: the moduli's c_t > 0.
        h: the moduli's h_t >= 0.
        sigma2: the noise variances > 0.
        D: the diameter.

    Returns:
        the array ``u*_0, ..., u*_T``.

    Raises:
        AssumptionError: lengths differ or a value is not finite.

    Examples:
        >>> lemma_3_5_shifts([1, 1, 1], [4, 4, 4], [1, 1e-4, 0.16], D=5.0).round(8).tolist()   # SEEDS §3.3
        [5.0, 0.74318152, 2.13228368, 0.0]
    """
    cs = _seq("c", c)
    T = cs.size
    hs, s2 = _seq("h", h, T), _seq("sigma2", sigma2, T)
    logc = np.log(cs)
    logP = np.concatenate([np.cumsum(logc[::-1])[::-1], [0.0]])
    terms = np.log(s2) + logP[1:]
    logS = np.concatenate([np.logaddexp.accumulate(terms[::-1])[::-1], [-np.inf]])
    u = np.zeros(T + 1)
    u[0] = float(D)
    for t in range(1, T):
        u[t] = math.exp(logS[t] - logS[t - 1]) * math.sqrt(cs[t - 1] * u[t - 1] ** 2 + hs[t - 1])
    return u


def shift_objective(u_inner: Sequence[float], c: Sequence[float], h: Sequence[float], sigma2: Sequence[float],
                    D: float) -> float:
    """Problem (P) of 001 §3: ``E(u) = sum_t (phi_{t-1}(u_{t-1}) - u_t)^2/sigma_{t-1}^2`` with u_0 = D, u_T = 0.

    Feasible iff ``0 <= u_t <= phi_{t-1}(u_{t-1})``; returns ``inf`` otherwise.

    Args:
        u_inner: u_1, ..., u_{T-1}.
        c: the moduli's c_t.
        h: the moduli's h_t.
        sigma2: the noise variances.
        D: the diameter (u_0).

    Returns:
        E(u), or ``inf`` for infeasible shifts.

    Examples:
        >>> round(float(shift_objective([0.74318152, 2.13228368], [1, 1, 1], [4, 4, 4], [1, 1e-4, 0.16], 5.0)), 6)
        74.98223
    """
    cs, hs, s2 = np.asarray(c, float), np.asarray(h, float), np.asarray(sigma2, float)
    u = np.concatenate([[float(D)], np.asarray(u_inner, float), [0.0]])
    total = 0.0
    for t in range(1, cs.size + 1):
        ph = math.sqrt(cs[t - 1] * u[t - 1] ** 2 + hs[t - 1])
        if u[t] < 0 or u[t] > ph:
            return math.inf
        total += (ph - u[t]) ** 2 / s2[t - 1]
    return total


_EXACT_TERMS = 2_000_000


def constant_coefficient(c: float, h: float, sigma2: float, D: float, T: int) -> float:
    """Corollaries 3.7-3.9 (exact sums of Theorem 3.4 with constant c, h, sigma^2):

    ``kappa = 1/(2 sigma^2) [D^2 c^T (1-c)/(1-c^T) + h sum_{s=0}^{T-1} c^s/sum_{j<=s} c^j]``,
    with the c = 1 limits ``D^2/T`` and ``h H_T``.  Stable for c > 1 and large T.

    Args:
        c: > 0.
        h: >= 0.
        sigma2: the noise variance > 0.
        D: the diameter >= 0.
        T: the number of steps >= 1.

    Returns:
        kappa, rounded up.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(constant_coefficient(c=1.0, h=0.0, sigma2=1.0, D=1.0, T=4), 6)   # D^2 / (2 T sigma^2)
        0.125
        >>> round(constant_coefficient(0.5, 0.0, 1.0, 1.0, 4), 6)                  # 0.5^4 * 0.5 / (1 - 0.5^4) / 2
        0.016667
    """
    c = positive("c", c)
    h = nonnegative("h", h)
    s2 = positive("sigma2", sigma2)
    D = nonnegative("diameter", D)
    T = positive_int("num_steps", T)
    import mpmath

    with mpmath.workdps(50):
        return _mp_up(_coefficient_sum(c, h, D, T) / (2 * mpmath.mpf(s2)))


def _coefficient_sum(c: float, h: float, D: float, T: int):
    """``D^2 c^T (1-c)/(1-c^T) + h sum_{s=0}^{T-1} c^s/sum_{j<=s} c^j`` (twice :func:`constant_coefficient` times the
    noise variance), an upper bound as an mpmath number: the caller divides by the variance at 50 digits and rounds up.
    In floats D^2, h * sum and the quotient underflowed (a kappa of 0.0 for D = 1e-170, sigma^2 = 1e-300) or lost
    their relative digits as subnormals."""
    import mpmath

    K = min(T, _EXACT_TERMS)              # terms summed exactly; the rest is bounded from above
    s = np.arange(K, dtype=float)
    hsum = 0.0
    with mpmath.workdps(50):
        Dm = mpmath.mpf(D)
        if c == 1.0:
            dterm = Dm ** 2 / T
            if h > 0:
                hsum = float(np.sum(1.0 / (s + 1.0)))
                if T > K:   # sum_{t=K+1}^T 1/t <= ln(T/K)
                    hsum += math.log(T / K)
        else:
            lc = math.log(c)
            # at 50 digits: exp(T log c) in floats is off by ~T |log c| ulps (beyond a float margin for large T)
            TL = T * mpmath.log(mpmath.mpf(c))
            if c < 1.0:
                # c^T (1-c)/(1-c^T) ; c^s/S_s = c^s (1-c)/(1-c^{s+1})  (underflow to 0 is fine)
                dterm = Dm ** 2 * (1 - mpmath.mpf(c)) * mpmath.exp(TL) / -mpmath.expm1(TL)
                if h > 0:
                    hsum = float(np.sum(np.exp(s * lc) * (1.0 - c) / (-np.expm1((s + 1.0) * lc))))
                    if T > K:   # sum_{s>=K} c^s (1-c)/(1-c^{s+1}) <= c^K/(1-c^{K+1})
                        hsum += math.exp(K * lc) / (-math.expm1((K + 1.0) * lc))
            else:
                # c > 1: c^T (1-c)/(1-c^T) = (c-1)/(1-c^{-T}) ; c^s/S_s = (1-1/c)/(1-c^{-(s+1)}), decreasing in s
                dterm = Dm ** 2 * (mpmath.mpf(c) - 1) / -mpmath.expm1(-TL)
                if h > 0:
                    hsum = float(np.sum((1.0 - 1.0 / c) / (-np.expm1(-(s + 1.0) * lc))))
                    if T > K:
                        hsum += (T - K) * (1.0 - 1.0 / c) / (-math.expm1(-(K + 1.0) * lc))
        # the float sum (>= 1 when h > 0; positive terms, a few ulps each) pushed up by OUTWARD
        return dterm + mpmath.mpf(h) * mpmath.mpf(hsum) * (1 + mpmath.mpf(OUTWARD))


def pabi(case: str, noise_scale: float, diameter: float, num_steps: int, step_size: float,
         lipschitz: float | None = None, smoothness: float | None = None, strong_convexity: float | None = None,
         holder_exponent: float | None = None, holder_constant: float | None = None,
         dissipativity: float | None = None, mechanism: str = "pabi") -> Certificate:
    """001 Theorem 3.4 (Corollaries 3.7-3.9, Table 1) for T steps of ``Pi_X[x - eta grad f(x) + N(0, s^2 I)]``.

    Privacy setting: the two datasets lead to initial points in X (diameter D) and the same
    maps afterwards (e.g. the differing record is used only before step 0); released: X_T.
    ``noise_scale`` is the per-coordinate standard deviation s of xi_t.

    Args:
        case: the Table 1 row, one of [`CASES`][bayesdp.theorems.pabi.CASES].
        noise_scale: s > 0.
        diameter: D > 0.
        num_steps: T >= 1.
        step_size: eta > 0.
        lipschitz: L (row 1).
        smoothness: beta (rows 3-6).
        strong_convexity: kappa (rows 3, 6).
        holder_exponent: p (row 2).
        holder_constant: M (row 2).
        dissipativity: lambda (row 6).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * kappa``.

    Raises:
        AssumptionError: as [`modulus_params`][bayesdp.theorems.pabi.modulus_params], or s, D, T out of range.

    Examples:
        Corollary 3.7 with c = 1, h = (2 * 0.1 * 1)^2, D = 1, T = 2, s = 1:
        ``kappa = (D^2/T + h (1 + 1/2))/2 = 0.28``.

        >>> cert = pabi("convex-lipschitz", noise_scale=1.0, diameter=1.0, num_steps=2, step_size=0.1, lipschitz=1.0)
        >>> round(cert.constants["kappa"], 6)
        0.28
    """
    c, h = modulus_params(case, step_size, lipschitz, smoothness, strong_convexity, holder_exponent,
                          holder_constant, dissipativity)
    s = positive("noise_scale", noise_scale, "per-coordinate standard deviation of the Gaussian noise")
    D = positive("diameter", diameter, "diameter of the convex compact domain X")
    T = positive_int("num_steps", num_steps)
    cor = {1: "3.7", 2: "3.7", 3: "3.8", 4: "3.8", 5: "3.8", 6: "3.9"}[_ROW[case.replace("_", "-")]]
    notes = f"Corollary {cor} exact sum, Table 1 row ({_ROW[case.replace('_', '-')]})"
    if c == 0.0:
        # Phi is constant (kappa = beta, eta = 1/beta; h = 0): X_1 has the same law for both.
        kappa = 0.0
        notes += "; c = 0: the gradient map is constant, so the laws coincide after one step"
    else:
        import mpmath

        with mpmath.workdps(50):   # the variance s^2 exactly (50 digits hold 106 bits): a float s * s can round up
            kappa = _mp_up(_coefficient_sum(c, h, D, T) / (2 * mpmath.mpf(s) ** 2))
    return Certificate(
        mechanism=mechanism, source="001 Theorem 3.4", curve=RDP.linear(kappa),
        assumptions={"case": case, "noise_scale": s, "diameter": D, "num_steps": T, "step_size": float(step_size),
                     "lipschitz": lipschitz, "smoothness": smoothness, "strong_convexity": strong_convexity,
                     "holder_exponent": holder_exponent, "holder_constant": holder_constant,
                     "dissipativity": dissipativity,
                     "setting": "same maps for both datasets, initial points in X; release X_T"},
        constants={"c": c, "h": h, "kappa": kappa}, notes=notes,
    )


def pnsgd_pabi(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float,
               noise_scale: float, data_size: int, index: int | None = None, diameter: float | None = None,
               mechanism: str = "pnsgd") -> Certificate:
    """001 Theorem 3.4 applied to one-pass PNSGD after the differing step (SEEDS §5, 3rd bullet).

    Not stated in 001, 002 or 003; derivation in docs/seed_systems.md.  After step i the two
    laws satisfy ``W_inf <= Delta := min(2 eta L, D_K)`` (same noise, nonexpansive projection);
    the r = n - i later steps use the same maps, Lipschitz with
    ``c = min(M^2, 1 - 2 eta rho + eta^2 beta^2)`` (M^2 only when eta < 2/(beta+rho)), h = 0,
    noise variance ``eta^2 sigma^2``.  Corollary 3.8:
    ``kappa = Delta^2 c^r (1-c)/(2 eta^2 sigma^2 (1-c^r))`` (``Delta^2/(2 r eta^2 sigma^2)`` at c = 1);
    i = n: the Gaussian mechanism, ``kappa = Delta^2/(2 eta^2 sigma^2)``.

    Args:
        lipschitz: L > 0.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta > 0.
        noise_scale: sigma > 0.
        data_size: n >= 1.
        index: i in 1..n, or ``None`` for every index (the maximum over i).
        diameter: D_K (caps the initial W_inf when given).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * kappa``.

    Raises:
        AssumptionError: a constant out of range or i not in 1..n.

    Examples:
        SEEDS §1.10's setting (C = 1, sigma = 1, eta = 0.5, beta = 1, rho = 0.5, n = 100): the same as
        002 Theorem 5 at i = n (2) and i = n - 1 (4/3), smaller at i = n - 2 (0.5333 < 0.5443):

        >>> kw = dict(lipschitz=1.0, smoothness=1.0, strong_convexity=0.5, step_size=0.5, noise_scale=1.0,
        ...           data_size=100)
        >>> [round(pnsgd_pabi(**kw, index=i).constants["kappa"], 4) for i in (100, 99, 98)]
        [2.0, 1.3333, 0.5333]
    """

    L = positive("lipschitz", lipschitz)
    beta = positive("smoothness", smoothness)
    rho = nonnegative("strong_convexity", strong_convexity)
    require(rho <= beta, "strong_convexity", rho, f"must be <= smoothness = {beta:.6g}", "check the two constants")
    eta = positive("step_size", step_size)
    s = positive("noise_scale", noise_scale)
    n, i = _check_index(data_size, index)
    delta0 = up(2 * exact(eta) * exact(L))
    if diameter is not None:
        delta0 = min(delta0, positive("diameter", diameter))
    e_, b_, r_ = exact(eta), exact(beta), exact(rho)
    cands = [1 - 2 * e_ * r_ + e_ * e_ * b_ * b_]          # exact rationals; c is rounded up below
    if (rho > 0 and e_ * (b_ + r_) < 2) or (rho == 0 and e_ * b_ <= 2):
        cands.append(1 - 2 * e_ * b_ * r_ / (b_ + r_))
    c = max(0.0, up(min(cands)))

    def kappa_at(r: int) -> float:
        if r == 0:
            # i = n: Gaussian mechanism of the last step; the mean shift 2 eta L is taken before
            # the projection, so it is not capped by the diameter.
            return up(2 * exact(L) ** 2 / exact(s) ** 2)     # (2 eta L)^2/(2 eta^2 s^2): eta cancels
        if c == 0.0:
            return 0.0
        import mpmath

        # the variance (eta s)^2 exactly (a float could underflow to 0 or lose digits as a subnormal)
        with mpmath.workprec(4 * 53 + 10):
            var = (mpmath.mpf(eta) * mpmath.mpf(s)) ** 2
        with mpmath.workdps(50):
            return _mp_up(_coefficient_sum(c, 0.0, delta0, r) / (2 * var))

    if index is None:
        # every index: kappa(r) is non-increasing in r >= 1 (c^r (1-c)/(1-c^r) decreases), so the
        # worst index is i = n or i = n - 1 (the latter matters when c > 1: expansive steps).
        kappa = max(kappa_at(0), kappa_at(1)) if n > 1 else kappa_at(0)
    else:
        kappa = kappa_at(n - i)
    return Certificate(
        mechanism=mechanism, source="001 Theorem 3.4 via SEEDS §5", curve=RDP.linear(kappa),
        assumptions={"noise": "gaussian", "lipschitz": L, "smoothness": beta, "strong_convexity": rho,
                     "step_size": eta, "noise_scale": s, "data_size": n,
                     "index": i if index is not None else "all (max over i)"},
        constants={"c": c, "initial_w_inf": delta0, "kappa": kappa},
        notes="combination not stated in the seed papers; derivation in docs/seed_systems.md",
    )


# ---------------------------------------------------------------------------
# §4: Projected Langevin Algorithm (eq. (9), Lemma 4.1, Theorem 4.2)
# ---------------------------------------------------------------------------


def pla_kl_bound(diameter: float, step_size: float, num_steps: int, h: float) -> float:
    """001 eq. (9): ``KL(X_T || X'_T) <= D^2/(4 eta T) + h ln(T e)/(4 eta)`` (Cor 3.7 at alpha = 1, sigma^2 = 2 eta).

    Args:
        diameter: D >= 0.
        step_size: eta > 0.
        num_steps: T >= 1.
        h: the modulus's h >= 0.

    Returns:
        the KL bound.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> pla_kl_bound(diameter=1.0, step_size=0.25, num_steps=4, h=0.0)     # 1 / (4 * 0.25 * 4)
        0.25
    """
    D, eta, T = nonnegative("diameter", diameter), positive("step_size", step_size), positive_int("num_steps", num_steps)
    # (D / (2 sqrt(eta) sqrt(T)))^2: D^2 / (4 eta T) gave inf / inf = nan when both overflowed
    return (D / (2.0 * math.sqrt(eta) * math.sqrt(T))) ** 2 + nonnegative("h", h) * (math.log(T) + 1.0) / (4 * eta)


def pla_step_threshold(diameter: float, holder_constant: float, holder_exponent: float) -> float:
    """001 Lemma 4.1 Theta: ``(M/2)^{2/(1+p)} [((1-p)/(1+p)) max{16 ln(D (M/2)^{1/(1+p)} e), 27}]^{(1-p)/(1+p)}``;
    p = 1: ``M/2``.

    Args:
        diameter: D > 0.
        holder_constant: M > 0.
        holder_exponent: p in [0, 1].

    Returns:
        Theta (the lemma needs ``1/eta >= Theta``).

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> pla_step_threshold(diameter=1.0, holder_constant=2.0, holder_exponent=1.0)   # M / 2
        1.0
    """
    D = positive("diameter", diameter)
    M = positive("holder_constant", holder_constant)
    p = nonnegative("holder_exponent", holder_exponent)
    require(p <= 1.0, "holder_exponent", p, "must be in [0, 1]")
    if p == 1.0:
        return M / 2.0
    import mpmath

    # at 50 digits, rounded up (the lemma needs 1/eta >= Theta: a float Theta below the exact one admitted step sizes
    # a few ulps too large; the float powers overflowed)
    with mpmath.workdps(50):
        P, Mh = mpmath.mpf(p), mpmath.mpf(M) / 2
        inner = (1 - P) / (1 + P) * max(16 * (mpmath.log(D) + mpmath.log(Mh) / (1 + P) + 1), 27)
        return _mp_up(Mh ** (2 / (1 + P)) * inner ** ((1 - P) / (1 + P)))


def pla_mixing_time(diameter: float, step_size: float, eps_tv: float, holder_constant: float,
                    holder_exponent: float) -> int:
    """001 Theorem 4.2 / eq. (12): ``T_mix,TV(eps) <= ceil(D^2/eta) ceil(log2(1/eps))``, needs 1/eta >= Theta.

    Args:
        diameter: D > 0.
        step_size: eta > 0 with ``1/eta >= Theta`` ([`pla_step_threshold`][bayesdp.theorems.pabi.pla_step_threshold]).
        eps_tv: the target total variation in (0, 1).
        holder_constant: M > 0.
        holder_exponent: p in [0, 1].

    Returns:
        the number of steps.

    Raises:
        AssumptionError: a constant out of range or the step-size condition fails.

    Examples:
        >>> pla_mixing_time(diameter=1.0, step_size=0.5, eps_tv=0.25, holder_constant=2.0, holder_exponent=1.0)
        4
    """
    eta = positive("step_size", step_size)
    th = pla_step_threshold(diameter, holder_constant, holder_exponent)
    require(exact(eta) * exact(th) <= 1, "step_size", eta, f"must satisfy 1/step_size >= Theta = {th:.6g} "
            "(001 Lemma 4.1)", "choose a smaller step size")
    e = positive("eps_tv", eps_tv)
    require(e < 1.0, "eps_tv", e, "must be in (0, 1)")
    # both ceilings exactly (in floats D^2/eta could round below an integer it exceeds, and overflowed)
    q = exact(diameter) ** 2 / exact(eta)
    k = 0
    while Fraction(2) ** k * exact(e) < 1:   # the smallest k with 2^-k <= eps: ceil(log2(1/eps))
        k += 1
    return -((-q.numerator) // q.denominator) * max(1, k)


# ---------------------------------------------------------------------------
# §5: noisy SGD, Lemma A.18, Theorem 5.2, Remark 5.3, Theorem 5.4
# ---------------------------------------------------------------------------


def sgm_bound_applies(alpha: float, q: float, sigma: float) -> bool:
    """001 Lemma A.18 (Mironov et al. 2019 Thm 11) hypotheses at ``alpha``: q in (0, 1/5), sigma >= 4,
    ``alpha <= M sigma^2/2 - log(sigma^2)`` and
    ``alpha <= (M^2 sigma^2/2 - log(5 sigma^2))/(M + log(q alpha) + 1/(2 sigma^2))``,
    ``M = log(1 + 1/(q (alpha - 1)))``; a non-positive denominator counts as failure.

    Args:
        alpha: the Renyi order.
        q: the sampling rate.
        sigma: the noise multiplier.

    Returns:
        whether ``S_alpha(q, sigma) <= 2 alpha q^2/sigma^2`` is established at alpha.

    Examples:
        >>> sgm_bound_applies(2.0, q=0.01, sigma=10.0), sgm_bound_applies(2.0, q=0.3, sigma=10.0)   # q >= 1/5
        (True, False)
    """
    import mpmath

    a, q, s = float(alpha), float(q), float(sigma)
    if not (a > 1 and 0 < q and 5 * Fraction(q) < 1 and s >= 4):
        return False
    # in 50 digits, a comparison within 1e-40 (relative) of equality counts as failure: the float formulas
    # admitted orders a few ulps beyond the exact boundary (tests/test_outward_rounding_audit.py)
    with mpmath.workdps(50):
        A, Q, S = mpmath.mpf(a), mpmath.mpf(q), mpmath.mpf(s)
        tol = mpmath.mpf(10) ** -40
        M = mpmath.log1p(1 / (Q * (A - 1)))
        first = M * S * S / 2 - mpmath.log(S * S)
        if not A <= first - tol * (abs(first) + 1):
            return False
        den = M + mpmath.log(Q * A) + 1 / (2 * S * S)
        if not den > tol:
            return False
        second = (M * M * S * S / 2 - mpmath.log(5 * S * S)) / den
        return bool(A <= second - tol * (abs(second) + 1))


def _R_candidates(T: int, centre: float) -> np.ndarray:
    if T <= 2_000_000:
        return np.arange(1, T + 1, dtype=float)
    grid = np.unique(np.round(np.logspace(0, math.log10(T), 20001)))
    c = int(min(max(centre, 1), T))
    near = np.arange(max(1, c - 10000), min(T, c + 10000) + 1)
    return np.unique(np.concatenate([grid, near, [T]])).astype(float)


def theorem_5_2_tbar(diameter: float, data_size: int, step_size: float, lipschitz: float) -> int:
    """001 Theorem 5.2: ``Tbar = ceil(D n/(4 eta L))`` (no validation; exactly: a float quotient overflowed to inf or
    divided by an eta L that underflowed to 0)."""
    q = exact(diameter) * data_size / (4 * exact(step_size) * exact(lipschitz))
    return -((-q.numerator) // q.denominator)


def remark_5_3_factor(step_size: float, data_size: int, lipschitz: float, holder_constant: float,
                      holder_exponent: float, diameter: float) -> tuple[int, float]:
    """001 Remark 5.3 / Figure 1: ``(Tbar, 2 Tbar + V)``,
    ``V = ((2 Tbar/D)(eta M/2)^{1/(1-p)})^2 ((1-p)/(1+p)) ln(Tbar e)``; p = 1 is the limit V = 0 (needs eta M/2 < 1).

    Args:
        step_size: eta > 0.
        data_size: n >= 1.
        lipschitz: L > 0.
        holder_constant: M > 0.
        holder_exponent: p in [0, 1].
        diameter: D > 0.

    Returns:
        ``(Tbar, 2 Tbar + V)``.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        SEEDS §3.6, Figure 1 (n = 1000, L = 1, M = 2, D = 1, eta = 1e-3, p = 0.2): Tbar = 250000, 2 Tbar + V = 570778.

        >>> tbar, factor = remark_5_3_factor(1e-3, 1000, lipschitz=1.0, holder_constant=2.0, holder_exponent=0.2,
        ...                                  diameter=1.0)
        >>> tbar, round(factor)
        (250000, 570778)
    """
    eta, n = positive("step_size", step_size), positive_int("data_size", data_size)
    L, M = positive("lipschitz", lipschitz), positive("holder_constant", holder_constant)
    p, D = nonnegative("holder_exponent", holder_exponent), positive("diameter", diameter)
    require(p <= 1.0, "holder_exponent", p, "must be in [0, 1]")
    tbar = theorem_5_2_tbar(D, n, eta, L)
    if p == 1.0:
        require(eta * M / 2 < 1, "step_size", eta, "must satisfy eta*M/2 < 1 for the p -> 1 limit")
        return tbar, 2.0 * tbar
    logv = 2 * (math.log(2 * tbar / D) + math.log(eta * M / 2) / (1 - p)) + math.log((1 - p) / (1 + p)) \
        + math.log(math.log(tbar) + 1.0)
    return tbar, 2.0 * tbar + math.exp(logv)


def theorem_5_2(lipschitz: float, holder_exponent: float, holder_constant: float, diameter: float,
                step_size: float, noise_scale: float, data_size: int, batch_size: int, num_steps: int,
                batching: str = "fixed", max_batch: int | None = None, mechanism: str = "noisy-sgd") -> Certificate:
    """001 Theorem 5.2 (+ Remark 5.3): last iterate of projected noisy SGD, convex, L-Lipschitz,
    (p, M)-weakly smooth; noise ``N(0, eta^2 sigma^2 I)``; RDP for ``alpha`` satisfying Lemma A.18.

    ``eps(alpha) = alpha * min(T * 16 L^2/(n^2 sigma^2),
    min_{R in 1..T} [16 L^2 R/(n^2 sigma^2) + D^2/(eta^2 sigma^2 R) + hbar ln(R e)/sigma^2])`` (SEEDS §3.6),
    ``hbar = h(eta_eff)/eta^2`` with h of Table 1 row (2).  Checks b/n < 1/5 (row 13),
    ``sigma >= 8 sqrt(2) L/b``, and batch sizes bounded by b (row 14).

    Args:
        lipschitz: L > 0.
        holder_exponent: p in [0, 1).
        holder_constant: M >= 0.
        diameter: D > 0.
        step_size: eta > 0.
        noise_scale: sigma > 0 (added noise has standard deviation ``eta sigma``).
        data_size: n >= 1.
        batch_size: b with b/n < 1/5.
        num_steps: T >= 1.
        batching: ``"fixed"`` (size-b batches) or ``"poisson"`` (then h uses ``eta * max_batch / b``).
        max_batch: the largest Poisson batch (default n, the worst case).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate]; its RDP curve is ``alpha * kappa`` where Lemma
            A.18 holds, ``inf`` elsewhere.

    Raises:
        AssumptionError: a constant out of range, b/n >= 1/5, sigma below ``8 sqrt(2) L/b``, an unknown
            batching, or no alpha satisfying Lemma A.18.

    Examples:
        With T = 100 < Tbar the composition branch wins: ``kappa = T * 16 L^2/(n^2 sigma^2) = 0.0016``.

        >>> cert = theorem_5_2(lipschitz=1.0, holder_exponent=0.5, holder_constant=1.0, diameter=1.0, step_size=0.01,
        ...                    noise_scale=1.0, data_size=1000, batch_size=20, num_steps=100)
        >>> round(cert.constants["kappa"], 6), round(cert.rdp(2.0), 6)
        (0.0016, 0.0032)
    """
    L = positive("lipschitz", lipschitz)
    p = nonnegative("holder_exponent", holder_exponent)
    require(p < 1.0, "holder_exponent", p, "must be in [0, 1) for 001 Theorem 5.2")
    M = nonnegative("holder_constant", holder_constant)
    D = positive("diameter", diameter)
    eta = positive("step_size", step_size)
    sigma = positive("noise_scale", noise_scale, "sigma (added noise has std step_size * sigma)")
    n = positive_int("data_size", data_size)
    b = positive_int("batch_size", batch_size)
    T = positive_int("num_steps", num_steps)
    require(b <= n, "batch_size", b, f"must be <= data_size = {n}")
    q = b / n
    require(q < 0.2, "batch_size", b, f"gives b/n = {q:.6g}; 001 Theorem 5.2 needs b/n < 1/5 (Lemma A.18, "
            "SEEDS §6 row 13)", "use a smaller batch or more data")
    smin = 8.0 * math.sqrt(2.0) * L / b
    require((exact(sigma) * b) ** 2 >= 128 * exact(L) ** 2,   # the threshold compared exactly
            "noise_scale", sigma, f"must be >= 8*sqrt(2)*L/b = {smin:.6g} (001 Theorem 5.2)",
            "increase the noise")
    if batching == "fixed":
        eta_mult = (1, 1)
        batch_note = "fixed-size batches of size b (|B_t| <= b)"
    elif batching == "poisson":
        mb = n if max_batch is None else positive_int("max_batch", max_batch)
        require(mb <= n, "max_batch", mb, f"must be <= data_size = {n}")
        eta_mult = (max(mb, b), b)   # eta_eff = eta max(mb, b)/b
        batch_note = f"Poisson batches: modulus with eta_eff = eta*{max(mb, b)}/b (SEEDS §6 row 14)"
    else:
        raise AssumptionError(f"batching = {batching!r} must be 'fixed' or 'poisson'")
    import mpmath

    # the three coefficients of kappa(R) = sg R + A/R + hb (ln R + 1) at 50 digits; R chosen by the float values
    # (any R gives a bound), and kappa at that R computed again at 50 digits and rounded up: in floats L^2,
    # sigma^2 and eta^2 sigma^2 underflowed or overflowed (kappa 0.0 at L = 1e-170, NaN at eta = 1e160)
    with mpmath.workdps(50):
        Sg2 = mpmath.mpf(sigma) ** 2
        ETA = mpmath.mpf(eta)
        Hbar = _holder_h_mp(ETA * eta_mult[0] / eta_mult[1], p, M) / ETA ** 2
        SG = 16 * mpmath.mpf(L) ** 2 / (n * n * Sg2)
        A = mpmath.mpf(D) ** 2 / (ETA ** 2 * Sg2)
        HB = Hbar / Sg2
        hbar = _mp_up(Hbar)
        sg, a_, hb = (float(x) for x in (SG, A, HB))
    Rs = _R_candidates(T, float(min(theorem_5_2_tbar(D, n, eta, L), T)))
    with np.errstate(all="ignore"):
        vals = sg * Rs + a_ / Rs + hb * (np.log(Rs) + 1.0)
    k = int(np.argmin(np.where(np.isnan(vals), np.inf, vals)))
    with mpmath.workdps(50):
        R = mpmath.mpf(int(Rs[k]))
        at_r, composed = SG * R + A / R + HB * (mpmath.log(R) + 1), SG * T
        kappa = _mp_up(min(at_r, composed))
    r_best = T if composed <= at_r else int(Rs[k])
    sig_ratio = b * sigma / (2.0 * math.sqrt(2.0) * L)

    def eps(alpha: float) -> float:
        return kappa * alpha if sgm_bound_applies(alpha, q, sig_ratio) else math.inf

    amax = _alpha_max(lambda a: sgm_bound_applies(a, q, sig_ratio))
    require(amax > 1.0, "noise_scale", sigma, "leaves no Renyi order alpha satisfying Lemma A.18",
            "increase the noise or the data size")
    tbar = theorem_5_2_tbar(D, n, eta, L)
    return Certificate(
        mechanism=mechanism, source="001 Theorem 5.2",
        curve=RDP.from_function(eps, f"{kappa:.6g}*alpha for alpha in Lemma A.18's range"),
        assumptions={"lipschitz": L, "holder_exponent": p, "holder_constant": M, "diameter": D, "step_size": eta,
                     "noise_scale": sigma, "data_size": n, "batch_size": b, "num_steps": T, "batching": batch_note,
                     "loss": "convex, L-Lipschitz, (p, M)-weakly smooth for every record"},
        constants={"kappa": kappa, "best_R": r_best, "Tbar": tbar, "hbar": hbar, "alpha_max_grid": amax},
        notes="min over the horizon R of the proof's bound (<= the printed closed form when T > Tbar), "
              "and the composition branch of Remark 5.3",
    )


def _alpha_max(ok) -> float:
    """Largest alpha on a grid with ok(alpha) (diagnostic only; the curve checks every alpha)."""
    best = 1.0
    for a in 1.0 + np.logspace(-3, 5, 400):
        if ok(float(a)):
            best = float(a)
    return best


def theorem_5_4_tbar(step_size: float, smoothness: float) -> int:
    """001 Theorem 5.4: ``Tbar = ceil(ln 2/(2 ln(1 + eta beta)))`` (no validation; at 50 digits: in floats eta beta
    underflowed to 0, a division by zero)."""
    import mpmath

    with mpmath.workdps(50):
        return int(mpmath.ceil(mpmath.log(2) / (2 * mpmath.log1p(mpmath.mpf(step_size) * mpmath.mpf(smoothness)))))


def _check_5_4(lipschitz, smoothness, diameter, step_size, noise_scale, data_size, batch_size):
    L = positive("lipschitz", lipschitz, "L bounds every per-record gradient (e.g. by clipping)")
    beta = positive("smoothness", smoothness)
    D = positive("diameter", diameter)
    eta = positive("step_size", step_size)
    sigma = positive("noise_scale", noise_scale, "sigma (added noise has std step_size * sigma)")
    n = positive_int("data_size", data_size)
    b = positive_int("batch_size", batch_size)
    require(10 * b <= n, "batch_size", b, f"must be <= data_size/10 = {n / 10:.6g} (001 Theorem 5.4)",
            "use a smaller batch or more data")
    smin = 2.0 * math.sqrt(10.0) * L / b
    require((exact(sigma) * b) ** 2 >= 40 * exact(L) ** 2,   # the threshold compared exactly
            "noise_scale", sigma, f"must be >= 2*sqrt(10)*L/b = {smin:.6g} (001 Theorem 5.4)",
            "increase the noise")
    import mpmath

    with mpmath.workdps(50):   # the largest order allowed: rounded down (floats: L * L underflowed to 0)
        alpha_star = _mp_down((b * mpmath.mpf(sigma)) ** 2 / (16 * mpmath.mpf(L) ** 2) * mpmath.log(mpmath.mpf(n) / b))
    return L, beta, D, eta, sigma, n, b, alpha_star


def theorem_5_4(lipschitz: float, smoothness: float, diameter: float, step_size: float, noise_scale: float,
                data_size: int, batch_size: int, num_steps: int, mechanism: str = "noisy-sgd") -> Certificate:
    """001 Theorem 5.4: nonconvex beta-smooth loss with ||grad|| <= L, fixed-size batches without replacement.

    ``eps(alpha) = alpha min_{R in 1..T} [52 L^2 R/(n^2 sigma^2) + D^2 c^R (c-1)/(eta^2 sigma^2 (c^R - 1))]``,
    ``c = (1 + eta beta)^2``, for ``1 < alpha <= alpha* = (b^2 sigma^2/(16 L^2)) ln(n/b)``; b <= n/10,
    ``sigma >= 2 sqrt(10) L/b`` (SEEDS §3.7).

    Args:
        lipschitz: L > 0, the bound on every per-record gradient (e.g. by clipping).
        smoothness: beta > 0.
        diameter: D > 0.
        step_size: eta > 0.
        noise_scale: sigma >= 2 sqrt(10) L/b.
        data_size: n >= 10 b.
        batch_size: b >= 1.
        num_steps: T >= 1.
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate]; its RDP curve is ``alpha * kappa`` for
            alpha <= alpha*, ``inf`` beyond.

    Raises:
        AssumptionError: a constant out of range, b > n/10 or sigma too small.

    Examples:
        SEEDS §3.7's parameters (L = 1, b = 2, n = 1000, sigma = sqrt(10), D = beta = eta = 0.05):
        Tbar = 139, alpha* = 15.5365.

        >>> import math
        >>> cert = theorem_5_4(lipschitz=1.0, smoothness=0.05, diameter=0.05, step_size=0.05,
        ...                    noise_scale=math.sqrt(10), data_size=1000, batch_size=2, num_steps=1000)
        >>> cert.constants["Tbar"], round(cert.constants["alpha_star"], 4), cert.rdp(20.0)
        (139, 15.5365, inf)
    """
    L, beta, D, eta, sigma, n, b, alpha_star = _check_5_4(lipschitz, smoothness, diameter, step_size, noise_scale,
                                                          data_size, batch_size)
    T = positive_int("num_steps", num_steps)
    import mpmath

    # kappa(R) = a R + B (c - 1)/(1 - c^-R): R chosen by the float values, kappa at that R at 50 digits, rounded up
    # (in floats L^2/sigma^2 and D^2/(eta^2 sigma^2) underflowed or overflowed: kappa 0.0 at sigma = 1e160)
    with mpmath.workdps(50):
        Sg2 = mpmath.mpf(sigma) ** 2
        A_ = 52 * mpmath.mpf(L) ** 2 / (n * n * Sg2)
        B_ = mpmath.mpf(D) ** 2 / (mpmath.mpf(eta) ** 2 * Sg2)
        LC = 2 * mpmath.log1p(mpmath.mpf(eta) * mpmath.mpf(beta))           # log c
        a_, b_, lc, c1 = float(A_), float(B_), float(LC), float(mpmath.expm1(LC))
    Rs = _R_candidates(T, float(min(theorem_5_4_tbar(eta, beta), T)))
    with np.errstate(all="ignore"):
        vals = a_ * Rs + b_ * c1 / (-np.expm1(-Rs * lc))
    k = int(np.argmin(np.where(np.isnan(vals), np.inf, vals)))
    with mpmath.workdps(50):
        R = int(Rs[k])
        kappa = _mp_up(A_ * R + B_ * mpmath.expm1(LC) / -mpmath.expm1(-R * LC))
    require(alpha_star > 1.0, "noise_scale", sigma, f"gives alpha* = {alpha_star:.6g} <= 1 (001 Theorem 5.4)")

    def eps(alpha: float) -> float:
        return kappa * alpha if alpha <= alpha_star else math.inf

    return Certificate(
        mechanism=mechanism, source="001 Theorem 5.4",
        curve=RDP.from_function(eps, f"{kappa:.6g}*alpha for alpha <= {alpha_star:.6g}"),
        assumptions={"lipschitz": L, "smoothness": beta, "diameter": D, "step_size": eta, "noise_scale": sigma,
                     "data_size": n, "batch_size": b, "num_steps": T,
                     "batching": "fixed size b, uniformly without replacement",
                     "loss": "beta-smooth, per-record gradient norm <= L (no convexity)"},
        constants={"kappa": kappa, "best_R": int(Rs[k]), "alpha_star": alpha_star,
                   "Tbar": theorem_5_4_tbar(eta, beta)},
        notes="min over the horizon R of the proof's bound (<= the printed closed form when T > Tbar)",
    )


def theorem_5_4_A(lipschitz: float, smoothness: float, diameter: float, step_size: float, data_size: int) -> float:
    """001 eq. (22): ``A = 52 L^2 Tbar/n^2 + 4 D^2 beta/eta + 2 D^2 beta^2`` (no validation), rounded up."""
    import mpmath

    with mpmath.workdps(50):
        return _mp_up(_theorem_5_4_A_mp(lipschitz, smoothness, diameter, step_size, data_size))


def _theorem_5_4_A_mp(lipschitz, smoothness, diameter, step_size, data_size):
    """:func:`theorem_5_4_A` as an mpmath number (the caller sets the precision; floats over- and underflowed)."""
    import mpmath

    L, beta, D = mpmath.mpf(lipschitz), mpmath.mpf(smoothness), mpmath.mpf(diameter)
    tbar = theorem_5_4_tbar(step_size, smoothness)
    return 52 * L ** 2 * tbar / mpmath.mpf(data_size) ** 2 + 4 * D ** 2 * beta / mpmath.mpf(step_size) \
        + 2 * D ** 2 * beta ** 2


def noisy_sgd_dp_nonconvex(delta: float, lipschitz: float, smoothness: float, diameter: float, step_size: float,
                           noise_scale: float, data_size: int, batch_size: int, num_steps: int) -> dict:
    """001 eq. (22) with the corrected validity check (SEEDS §6 row 15).

    ``eps'(alpha) = alpha A/sigma^2 + ln(1/delta)/(alpha - 1)`` at ``alpha = min(alpha_opt, alpha*)``,
    ``alpha_opt = 1 + sigma sqrt(ln(1/delta)/A)``.  Requires T > Tbar (the closed form A is the
    bound at R = Tbar).

    Args:
        delta: in (0, 1).
        lipschitz: L > 0.
        smoothness: beta > 0.
        diameter: D > 0.
        step_size: eta > 0.
        noise_scale: sigma >= 2 sqrt(10) L/b.
        data_size: n >= 10 b.
        batch_size: b >= 1.
        num_steps: T > Tbar.

    Returns:
        a dict with ``epsilon``, the ``alpha`` used, ``alpha_opt``, ``alpha_star``, ``A``, ``Tbar``,
            ``closed_form_valid`` (whether the paper's ``A/sigma^2 + (2/sigma) sqrt(ln(1/delta) A)`` holds)
            and ``paper_shortcut_condition`` (the paper's condition (23), which is wrong).

    Raises:
        AssumptionError: a constant out of range or T <= Tbar.

    Examples:
        SEEDS §3.7's counterexample: delta = 0.0156 meets the paper's shortcut (23) but
        alpha_opt = 50.1 > alpha* = 15.5365, so alpha* is used.

        >>> import math
        >>> r = noisy_sgd_dp_nonconvex(0.0156, lipschitz=1.0, smoothness=0.05, diameter=0.05, step_size=0.05,
        ...                            noise_scale=math.sqrt(10), data_size=1000, batch_size=2, num_steps=1000)
        >>> round(r["alpha_opt"], 1), round(r["alpha"], 4), r["closed_form_valid"], r["paper_shortcut_condition"]
        (50.1, 15.5365, False, True)
    """

    d = probability_open("delta", delta)
    L, beta, D, eta, sigma, n, b, alpha_star = _check_5_4(lipschitz, smoothness, diameter, step_size, noise_scale,
                                                          data_size, batch_size)
    T = positive_int("num_steps", num_steps)
    tbar = theorem_5_4_tbar(eta, beta)
    require(T > tbar, "num_steps", T, f"must be > Tbar = {tbar} for eq. (22)", "use theorem_5_4's RDP curve")
    require(alpha_star > 1.0, "noise_scale", sigma, f"gives alpha* = {alpha_star:.6g} <= 1 (001 Theorem 5.4)")
    import mpmath

    # at 50 digits, rounded up (any order a in (1, alpha*] gives a bound): in floats A underflowed to 0 (a division
    # by zero) and a A/sigma^2 to 0, and ln(1/delta) was inf for a subnormal delta
    with mpmath.workdps(50):
        A_ = _theorem_5_4_A_mp(L, beta, D, eta, n)
        L1D = -mpmath.log(mpmath.mpf(d))
        A, l1d = _mp_up(A_), float(L1D)
        a_opt = float(1 + mpmath.mpf(sigma) * mpmath.sqrt(L1D / A_))
        a = min(max(a_opt, math.nextafter(1.0, 2.0)), alpha_star)   # (a_opt = 1 + tiny rounds to 1.0)
        eps = _mp_up(a * A_ / mpmath.mpf(sigma) ** 2 + L1D / (mpmath.mpf(a) - 1))
    return {"epsilon": eps, "alpha": a, "alpha_opt": a_opt, "alpha_star": alpha_star, "A": A, "Tbar": tbar,
            "closed_form_valid": a_opt <= alpha_star,
            "paper_shortcut_condition": l1d <= 6.25 * A * math.log(n / b) ** 2}
