"""002/000 (Balle, Barthe, Gaboardi, Geumlek 2019): amplification by mixing and diffusion.

Every result cites its number as ../shared/math/SEEDS.md §1 names it
(e.g. ``"002 Theorem 1(3)"``).  Corrections of SEEDS.md §6 applied:

* row 23: 002 Example 3 prints ``alpha Delta^2/(2 sigma_2^2)``; the proof gives
  ``alpha Delta^2/(2 sigma_*^2)`` with ``sigma_*^2 = s1^2 + s2^2/L^2`` (implemented).
* row 24: the OU SDE is printed with ``sqrt(2 rho) dW``; the stated semigroup
  ``P_t(x) = N(e^{-theta t} x, (rho^2/theta)(1 - e^{-2 theta t}) I)`` is used.
* row 26: 000 Lemma 9 states ``(gamma, eps)-Dobrushin => gamma-Dobrushin``; only the
  reverse holds.  [`implied_conditions`][bayesdp.theorems.mixing.implied_conditions] encodes the correct direction.

Example 2's certificate over all adjacent pairs takes the minimum over the
interpolation point theta (derivation in docs/seed_systems.md, SEEDS §1.6).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..certificate import Certificate
from ..curves import RDP, ApproxDP
from ..exact import exact as _q, mp_down as _mp_down, mp_up as _mp_up, round_up, up
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from .hockey_stick import _check_index, sc_step_lipschitz

__all__ = ["CONDITIONS", "implied_conditions", "required_dobrushin_eps", "doeblin_amplifies_delta",
           "amplify_by_mixing", "theorem_1", "iterated_gaussian_rdp", "example_1", "lipschitz_gaussian_kernel_rdp",
           "example_3", "laplace_rdp", "iterated_laplace_rdp", "lap2_pdf", "iterated_laplace_pure_eps", "example_2",
           "theorem_4_path_rdp", "pabi_contractive_rdp", "theorem_5", "brownian_rdp", "ou_lambda", "ou_rdp",
           "ou_mse", "gaussian_equiv_mse", "ou_calibrate", "theorem_8_applies", "corollary_7"]

#: the mixing conditions of 002 Definition 1 accepted by :func:`theorem_1`
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

    Args:
        condition: one of [`CONDITIONS`][bayesdp.theorems.mixing.CONDITIONS] (``_`` may replace ``-``).

    Returns:
        ``condition`` followed by the conditions it implies.

    Raises:
        AssumptionError: an unknown condition.

    Examples:
        >>> implied_conditions("doeblin")
        ('doeblin', 'dobrushin', 'dobrushin-eps')
        >>> implied_conditions("dobrushin-eps")
        ('dobrushin-eps',)
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
    """002 Theorem 1(2): ``eps~ = log(1 + (e^eps - 1)/delta)``; ``+inf`` if delta = 0 (footnote 3).

    Args:
        eps: epsilon >= 0 of the mechanism M.
        delta: delta >= 0 of M.

    Returns:
        the eps~ for which the kernel must be (gamma, eps~)-Dobrushin.

    Raises:
        AssumptionError: a negative input.

    Examples:
        >>> round(required_dobrushin_eps(1.0, 1e-5), 6)       # SEEDS §1.2
        12.054256
    """
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    if d == 0.0:
        return math.inf
    import mpmath

    # at 50 digits, rounded DOWN: eps~ is a requirement on the kernel (E_(e^eps~) <= gamma), and a larger eps~ asks
    # less (the float formula overflowed to inf, a vacuous requirement, for delta = 1e-310)
    with mpmath.workdps(50):
        return _mp_down(mpmath.log1p(mpmath.expm1(mpmath.mpf(e)) / mpmath.mpf(d)))


def doeblin_amplifies_delta(eps: float, delta: float, gamma: float) -> bool:
    """002 remark after Theorem 1: Doeblin gives delta' <= delta iff
    ``gamma <= delta e^eps/((1 - delta)(e^eps - 1))`` or gamma = 1.

    Args:
        eps: epsilon >= 0 of M.
        delta: delta >= 0 of M.
        gamma: the Doeblin coefficient >= 0.

    Returns:
        whether Theorem 1(3) does not increase delta.

    Raises:
        AssumptionError: a negative input.

    Examples:
        SEEDS §1.2 (eps = 1, delta = 1e-5): the threshold is 1.58199e-5.

        >>> doeblin_amplifies_delta(1.0, 1e-5, gamma=0.1), doeblin_amplifies_delta(1.0, 1e-5, gamma=1e-5)
        (False, True)
    """
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    g = nonnegative("gamma", gamma)
    if g == 1.0 or e == 0.0 or d >= 1.0:
        return True
    import mpmath

    with mpmath.workdps(50):   # (floats: OverflowError past eps = 709)
        E, D = mpmath.mpf(e), mpmath.mpf(d)
        return bool(g <= D / ((1 - D) * -mpmath.expm1(-E)))


def amplify_by_mixing(eps: float, delta: float, gamma: float, condition: str) -> tuple[float, float]:
    """002 Theorem 1 (1)-(4): the (eps', delta') of ``K o M`` for an (eps, delta)-DP M.

    (1) gamma-Dobrushin, (2) (gamma, eps~)-Dobrushin with eps~ =
    [`required_dobrushin_eps`][bayesdp.theorems.mixing.required_dobrushin_eps]: ``(eps, gamma delta)``; (3)
    gamma-Doeblin: ``eps' = log(1 + gamma (e^eps - 1))``, ``delta' = gamma (1 - e^{eps' - eps}(1 - delta))``; (4)
    gamma-ultra-mixing: same eps', ``delta' = gamma delta e^{eps' - eps}``.

    Args:
        eps: epsilon >= 0 of M.
        delta: delta in [0, 1] of M.
        gamma: the mixing coefficient of the kernel K, in [0, 1].
        condition: one of [`CONDITIONS`][bayesdp.theorems.mixing.CONDITIONS].

    Returns:
        ``(eps', delta')``.

    Raises:
        AssumptionError: an input out of range or an unknown condition.

    Examples:
        SEEDS §1.2 (eps = 1, delta = 1e-5, gamma = 0.1): Doeblin gives (0.158565079, 0.0568912814),
        ultra-mixing (0.158565079, 4.31091497e-7).

        >>> [round(x, 9) for x in amplify_by_mixing(1.0, 1e-5, 0.1, "doeblin")]
        [0.158565079, 0.056891281]
        >>> [float(f"{x:.9g}") for x in amplify_by_mixing(1.0, 1e-5, 0.1, "ultra-mixing")]
        [0.158565079, 4.31091497e-07]
    """
    c = _norm_condition(condition)
    e = nonnegative("epsilon_in", eps)
    d = nonnegative("delta_in", delta)
    require(d <= 1.0, "delta_in", d, "must be in [0, 1]")
    g = nonnegative("gamma", gamma, "declare the mixing coefficient of the kernel")
    require(g <= 1.0, "gamma", g, "must be in [0, 1] (a mixing coefficient)")
    if c in ("dobrushin", "dobrushin-eps"):
        return e, up(_q(g) * _q(d))
    import mpmath

    with mpmath.workdps(50):   # eps' and delta' at 50 digits, each rounded up (a larger pair is also valid)
        E, G, D = mpmath.mpf(e), mpmath.mpf(g), mpmath.mpf(d)
        eps_p = mpmath.log1p(G * mpmath.expm1(E))
        beta = G + (1 - G) * mpmath.exp(-E)      # e^(eps' - eps), exactly
        if c == "doeblin":
            # 1 - beta (1 - delta) = (1 - gamma)(1 - e^-eps) + beta delta (no cancellation)
            return _mp_up(eps_p), min(1.0, _mp_up(G * ((1 - G) * -mpmath.expm1(-E) + beta * D)))
        return _mp_up(eps_p), min(1.0, _mp_up(G * D * beta))


def theorem_1(epsilon_in: float, delta_in: float, gamma: float, condition: str,
              mechanism: str = "mixing") -> Certificate:
    """002 Theorem 1: amplification by one mixing post-processing step; an ApproxDP point.

    Args:
        epsilon_in: epsilon >= 0 of the mechanism M.
        delta_in: delta in [0, 1] of M.
        gamma: the mixing coefficient of the kernel K, in [0, 1].
        condition: the kernel's mixing condition, one of [`CONDITIONS`][bayesdp.theorems.mixing.CONDITIONS]
            (``"dobrushin-eps"``: the kernel must be (gamma, eps~)-Dobrushin with eps~ =
            [`required_dobrushin_eps`][bayesdp.theorems.mixing.required_dobrushin_eps]).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] (source ``"002 Theorem 1(k)"``) with an
            [`ApproxDP`][bayesdp.curves.ApproxDP] curve.

    Raises:
        AssumptionError: an input out of range or an unknown condition.

    Examples:
        >>> cert = theorem_1(epsilon_in=1.0, delta_in=1e-5, gamma=0.1, condition="doeblin")
        >>> cert.source, cert.curve.describe()
        ('002 Theorem 1(3)', '(0.158565, 0.0568913)-DP')
    """
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
    """002 Example 1: ``alpha Delta^2/(2 (s1^2 + s2^2))``.

    Args:
        alpha: the Renyi order.
        sensitivity: Delta, the L2 sensitivity of f.
        s1: the standard deviation of the first Gaussian ``N(f(D), s1^2 I)``.
        s2: the standard deviation of the kernel ``N(x, s2^2 I)``.

    Returns:
        the RDP value at alpha (unvalidated formula; [`example_1`][bayesdp.theorems.mixing.example_1] validates).

    Examples:
        >>> iterated_gaussian_rdp(2.0, sensitivity=1.0, s1=1.0, s2=1.0)   # 2 * 1 / (2 * 2)
        0.5
    """
    den = 2 * (_q(s1) ** 2 + _q(s2) ** 2)
    # exact, rounded up (floats: OverflowError, 0.0 for an underflowed square)
    return up(_q(alpha) * _q(sensitivity) ** 2 / den) if den else math.inf


def example_1(sensitivity: float, s1: float, s2: float, mechanism: str = "iterated-gaussian") -> Certificate:
    """002 Example 1: ``N(f(D), s1^2 I)`` followed by ``K(x) = N(x, s2^2 I)``: linear RDP.

    ``kappa = Delta^2/(2 (s1^2 + s2^2))``, tight (the Gaussian mechanism of variance s1^2 + s2^2).

    Args:
        sensitivity: Delta >= 0.
        s1: > 0.
        s2: >= 0.
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * kappa``.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> cert = example_1(sensitivity=1.0, s1=1.0, s2=1.0)
        >>> cert.constants, cert.rdp(2.0)
        ({'kappa': 0.25}, 0.5)
    """
    d = nonnegative("sensitivity", sensitivity)
    a = positive("s1", s1)
    b = nonnegative("s2", s2)
    kappa = up(_q(d) ** 2 / (2 * (_q(a) ** 2 + _q(b) ** 2)))   # rounded up
    return Certificate(mechanism=mechanism, source="002 Example 1", curve=RDP.linear(kappa),
                       assumptions={"sensitivity": d, "s1": a, "s2": b}, constants={"kappa": kappa})


def lipschitz_gaussian_kernel_rdp(alpha: float, sensitivity: float, s1: float, s2: float, lipschitz: float) -> float:
    """002 Example 3 (corrected, SEEDS §6 row 23): ``alpha Delta^2/(2 sigma_*^2)``,
    ``sigma_*^2 = s1^2 + s2^2/L^2``; L = 0 (constant kernel) gives 0.

    Args:
        alpha: the Renyi order.
        sensitivity: Delta.
        s1: the standard deviation of ``N(f(D), s1^2 I)``.
        s2: the standard deviation of the kernel ``N(psi(x), s2^2 I)``.
        lipschitz: L >= 0, the Lipschitz constant of psi.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: L < 0.

    Examples:
        >>> lipschitz_gaussian_kernel_rdp(2.0, 1.0, s1=1.0, s2=1.0, lipschitz=0.5)   # sigma_*^2 = 1 + 1/0.25
        0.2
    """
    L = nonnegative("lipschitz", lipschitz)
    if L == 0.0:
        return 0.0
    return up(_q(alpha) * _q(sensitivity) ** 2 / (2 * (_q(s1) ** 2 + _q(s2) ** 2 / _q(L) ** 2)))


def example_3(sensitivity: float, s1: float, s2: float, lipschitz: float,
              mechanism: str = "lipschitz-gaussian-kernel") -> Certificate:
    """002 Example 3: ``N(f(D), s1^2 I)`` then ``K(x) = N(psi(x), s2^2 I)``, psi L-Lipschitz.

    The proof gives ``alpha Delta^2/(2 sigma_*^2)``, ``sigma_*^2 = s1^2 + s2^2/L^2`` (the printed
    ``sigma_2`` is a typo, SEEDS §1.7 and §6 row 23).

    Args:
        sensitivity: Delta >= 0.
        s1: > 0.
        s2: > 0.
        lipschitz: L >= 0.
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * kappa``.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> example_3(sensitivity=1.0, s1=1.0, s2=1.0, lipschitz=0.5).constants
        {'kappa': 0.1, 'sigma_star_sq': 5.0}
    """
    d = nonnegative("sensitivity", sensitivity)
    a = positive("s1", s1)
    b = positive("s2", s2)
    kappa = lipschitz_gaussian_kernel_rdp(1.0, d, a, b, lipschitz)
    # exact, rounded up (inf beyond the float range: the float expression raised OverflowError or ZeroDivisionError)
    sigma_star2 = math.inf if lipschitz == 0 else up(_q(a) ** 2 + _q(b) ** 2 / _q(lipschitz) ** 2)
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


def _log_g_mp(a, z):
    """``_log_g`` in mpmath (the caller sets the precision)."""
    import mpmath

    return mpmath.log(a / (2 * a - 1) * mpmath.exp(z * (a - 1)) + (a - 1) / (2 * a - 1) * mpmath.exp(-z * a))


def laplace_rdp(alpha: float, z: float) -> float:
    """Laplace mechanism RDP (Mironov 2017 Cor. 2, quoted in 002 Example 2): ``log(g_alpha(z))/(alpha-1)``,
    z = Delta/lambda, ``g_alpha(z) = alpha/(2alpha-1) e^{z(alpha-1)} + (alpha-1)/(2alpha-1) e^{-z alpha}``.

    Args:
        alpha: the Renyi order > 1.
        z: Delta/lambda >= 0.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: alpha <= 1 or z < 0.

    Examples:
        >>> import math
        >>> round(laplace_rdp(2.0, 1.0), 6) == round(math.log(2 / 3 * math.e + math.exp(-2) / 3), 6)
        True
        >>> round(laplace_rdp(2.0, 1.0), 6)
        0.619124
    """
    a = float(alpha)
    if not a > 1:
        raise AssumptionError(f"alpha = {a:.6g} must be > 1 (Renyi order)")
    z = nonnegative("z = Delta/lambda", z)
    import mpmath

    # rounded up (the float log-sum-exp is off by a few ulps of its terms). log g = log(1 + O(z^2)) cancels about
    # 2 log10(1/z) digits: 50 digits plus those keep the 30 that mp_up needs for every z
    with mpmath.workdps(50 + (2 * math.ceil(-math.log10(z)) if 0 < z < 1 else 0)):
        A = mpmath.mpf(a)
        return _mp_up(max(mpmath.mpf(0), _log_g_mp(A, mpmath.mpf(z)) / (A - 1)))


def iterated_laplace_rdp(alpha: float, sensitivity: float, lam1: float, lam2: float, n_grid: int = 2001) -> float:
    """002 Example 2 over all adjacent pairs (SEEDS §1.6):
    ``min_{theta in [0,1]} log(g_alpha(theta Delta/lam1) g_alpha((1-theta) Delta/lam2))/(alpha-1)``.

    Any theta gives a valid bound, so a grid minimum is sound; a local refinement
    around the best grid point only tightens it.

    Args:
        alpha: the Renyi order > 1.
        sensitivity: Delta >= 0 (L1 sensitivity of f).
        lam1: the scale of ``Lap(f(D), lam1)``, > 0.
        lam2: the scale of the kernel ``Lap(x, lam2)``, > 0.
        n_grid: points of the theta grid.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: alpha <= 1 or a constant out of range.

    Examples:
        With lam1 = lam2 the minimum is at theta = 1/2 (log-convexity of g), below one Laplace step:

        >>> round(float(iterated_laplace_rdp(2.0, 1.0, 1.0, 1.0)), 6), round(2 * laplace_rdp(2.0, 0.5), 6)
        (0.400608, 0.400608)
        >>> round(laplace_rdp(2.0, 1.0), 6)
        0.619124
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
    best, best_t = vals[k], float(thetas[k])
    from scipy import optimize
    lo, hi = thetas[max(k - 1, 0)], thetas[min(k + 1, n_grid - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        if res.success and float(res.fun) < best:
            best, best_t = float(res.fun), min(1.0, max(0.0, float(res.x)))
    import mpmath

    # the bound at the chosen theta, exactly split and rounded up (floats: a few ulps).  Each log g(z) = log(1 +
    # O(z^2)) cancels about 2 log10(1/z) digits, so the precision grows with them as in laplace_rdp (a fixed 80
    # digits returned 0 for Delta/lambda = 3e-41, below the exact 4.5e-82)
    A, T_, D = mpmath.mpf(a), mpmath.mpf(best_t), mpmath.mpf(d)
    with mpmath.workdps(20):     # the magnitudes only (a float quotient would underflow to 0 below 1e-308)
        zs = [z for z in (T_ * D / mpmath.mpf(l1), (1 - T_) * D / mpmath.mpf(l2)) if 0 < z < 1]
        cancel = 2 * int(mpmath.ceil(-mpmath.log10(min(zs)))) if zs else 0
    with mpmath.workdps(60 + cancel):
        v = (_log_g_mp(A, T_ * D / mpmath.mpf(l1)) + _log_g_mp(A, (1 - T_) * D / mpmath.mpf(l2))) / (A - 1)
        return _mp_up(max(mpmath.mpf(0), v))


def lap2_pdf(x: float, lam1: float, lam2: float) -> float:
    """000 eq. (6): density of the sum of independent Laplace(0, lam1) and Laplace(0, lam2).

    Args:
        x: the point.
        lam1: > 0.
        lam2: > 0 (the equal-scale branch is used when ``lam1 ~ lam2`` to relative 1e-12).

    Returns:
        the density at x.

    Raises:
        AssumptionError: a scale <= 0.

    Examples:
        >>> lap2_pdf(0.0, 1.0, 1.0)                         # (lam + 0) / (4 lam^2)
        0.25
        >>> round(lap2_pdf(0.0, 1.0, 2.0), 6)              # (1 - 2) / (2 (1 - 4))
        0.166667
    """
    l1 = positive("lam1", lam1)
    l2 = positive("lam2", lam2)
    ax = abs(float(x))
    # written with the ratios u = |x| / lam and r = lam2 / lam1 < 1, never lam^2: the plain formulas divided by
    # 4 lam^2 (0 for lam below 1e-154: ZeroDivisionError) and multiplied lam by e^(-u) (inf * 0 = nan above 1e154)
    if math.isclose(l1, l2, rel_tol=1e-12):
        lam = 0.5 * l1 + 0.5 * l2
        u = ax / lam
        return math.exp(-u) * (1.0 + u) * (0.25 / lam)
    if l1 < l2:
        l1, l2 = l2, l1
    r = l2 / l1
    return (math.exp(-ax / l1) - r * math.exp(-ax / l2)) * (0.5 / l1) / ((1.0 - r) * (1.0 + r))


def iterated_laplace_pure_eps(sensitivity: float, lam1: float, lam2: float) -> float:
    """002 Lemma 3: ``K o M`` is exactly ``Delta/max(lam1, lam2)``-DP (and no better).

    Args:
        sensitivity: Delta >= 0.
        lam1: > 0.
        lam2: > 0.

    Returns:
        the pure epsilon.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> iterated_laplace_pure_eps(1.0, 1.0, 2.0)
        0.5
    """
    d, lam = nonnegative("sensitivity", sensitivity), max(positive("lam1", lam1), positive("lam2", lam2))
    return up(_q(d) / _q(lam))   # exact, rounded up (the float quotient rounds to nearest: below it half the time)


def example_2(sensitivity: float, lam1: float, lam2: float, mechanism: str = "iterated-laplace") -> list[Certificate]:
    """002 Example 2 (RDP, min over theta) and 002 Lemma 3 (exact pure DP) for iterated Laplace.

    Args:
        sensitivity: Delta >= 0.
        lam1: > 0.
        lam2: > 0.
        mechanism: the mechanism name recorded in the certificates.

    Returns:
        two [`Certificate`][bayesdp.certificate.Certificate] objects: the RDP curve (capped by Lemma 3's
            epsilon) and the pure-DP point.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> rdp, pure = example_2(sensitivity=1.0, lam1=1.0, lam2=2.0)
        >>> rdp.source, pure.source, pure.curve.describe()
        ('002 Example 2', '002 Lemma 3', 'pure 0.5-DP')
        >>> rdp.rdp(1000.0) <= 0.5                         # large orders: Lemma 3's cap
        True
    """
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
    for any interpolating path mu_0 = mu, ..., mu_r = nu (``w_inf`` = its r step lengths).

    Args:
        alpha: the Renyi order.
        lipschitz: L >= 0 of the maps psi_i.
        noise_std: sigma > 0.
        w_inf: the r >= 1 step lengths ``W_inf(mu_i, mu_{i-1})``.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: a constant out of range or an empty path.

    Examples:
        >>> round(theorem_4_path_rdp(2.0, lipschitz=0.5, noise_std=1.0, w_inf=[1.0, 1.0]), 12)   # 2 * 0.25 / 2 * 1.25
        0.3125
    """
    L = nonnegative("lipschitz", lipschitz)
    s = positive("noise_std", noise_std)
    w = [nonnegative("W_inf", x) for x in w_inf]
    r = len(w)
    require(r >= 1, "len(w_inf)", r, "must be >= 1 (number of kernels r)")
    import mpmath

    with mpmath.workdps(50):   # rounded up (floats: under- and overflow of the powers and squares)
        Lm = mpmath.mpf(L)
        tot = mpmath.fsum(Lm ** (2 * (r - i)) * mpmath.mpf(w[i - 1]) ** 2 for i in range(1, r + 1))
        return _mp_up(mpmath.mpf(alpha) * Lm ** 2 / (2 * mpmath.mpf(s) ** 2) * tot)


def pabi_contractive_rdp(alpha: float, w_inf: float, lipschitz: float, num_kernels: int, noise_std: float,
                         tight: bool = False) -> float:
    """002 Theorem 4 (3): ``alpha Delta^2 L^{r+1}/(2 r sigma^2)`` for L <= 1, ``W_inf(mu, nu) = Delta``.

    ``tight=True``: the value of the proof's path before ``phi(L) <= 1/r`` (SEEDS §1.8),
    ``alpha r Delta^2 L^{2r}(1-L)^2/(2 sigma^2 (1-L^r)^2)`` (L = 1: ``alpha Delta^2/(2 r sigma^2)``).

    Args:
        alpha: the Renyi order.
        w_inf: Delta = ``W_inf(mu, nu)`` >= 0.
        lipschitz: L in [0, 1].
        num_kernels: r >= 1.
        noise_std: sigma > 0.
        tight: use the exact path value.

    Returns:
        the RDP value at alpha, rounded up.

    Raises:
        AssumptionError: L > 1 or a constant out of range.

    Examples:
        SEEDS §1.10 (002 Theorem 5 at i = n - 1: Delta = 2 eta C, noise eta sigma, L^2 = 2/3): 4/3.

        >>> import math
        >>> round(pabi_contractive_rdp(1.0, w_inf=2.0, lipschitz=math.sqrt(2 / 3), num_kernels=1, noise_std=1.0), 6)
        1.333333
        >>> round(pabi_contractive_rdp(2.0, 1.0, 1.0, num_kernels=4, noise_std=1.0, tight=True), 6)   # 2/(2*4)
        0.25
    """
    L = nonnegative("lipschitz", lipschitz)
    require(L <= 1.0, "lipschitz", L, "must be <= 1 for 002 Theorem 4 (3)", "use Theorem 4 (2) with a path")
    r = positive_int("num_kernels", num_kernels)
    s = positive("noise_std", noise_std)
    d = nonnegative("W_inf", w_inf)
    import mpmath

    # at 50 digits (mpmath's exponent range has no underflow or overflow), rounded up: in floats L^(r+1) underflowed
    # to 0 (or s * s overflowed) while the whole product is a normal float, and the bound came out as 0.0
    if not tight or L == 1.0:
        with mpmath.workdps(50):
            v = mpmath.mpf(alpha) * mpmath.mpf(d) ** 2 * (mpmath.mpf(L) ** (r + 1) if not tight else 1)
            return _mp_up(v / (2 * r * mpmath.mpf(s) ** 2))
    if L == 0.0:
        return 0.0
    # r L^{2r} (1-L)^2/(1-L^r)^2 is increasing in L; 1 - L is exact for L >= 1/2 (Sterbenz) and
    # 1 - L^r = -expm1(r log L) has no cancellation when L is close to 1
    # at 50 digits: exp(2 r log L) in floats is off by ~2r|log L| ulps (beyond round_up's margin for large r)
    with mpmath.workdps(50):
        Lm = mpmath.mpf(L)
        rl = r * mpmath.log(Lm)
        v = mpmath.mpf(alpha) * r * mpmath.mpf(d) ** 2 * mpmath.exp(2 * rl) * ((1 - Lm) / -mpmath.expm1(rl)) ** 2
        return _mp_up(v / (2 * mpmath.mpf(s) ** 2))


def noisy_proj_sgd_index_kappa(lipschitz: float, noise_scale: float, contraction: float, data_size: int,
                               index: int, tight: bool = False) -> float:
    """002 Theorem 5: eps_i with ``L = contraction`` = sqrt(1 - 2 eta beta rho/(beta+rho)) (no validation).

    ``eps_n = 2 C^2/sigma^2``; ``eps_i = 2 C^2/((n-i) sigma^2) L^{n-i+1}`` for i < n (the
    printed ``(1 - 2 eta beta rho/(beta+rho))^{(n-i+1)/2}`` is ``L^{n-i+1}``).
    """
    C, s, M, n, i = lipschitz, noise_scale, contraction, data_size, index
    r = n - i
    if r == 0:
        return up(2 * _q(C) ** 2 / _q(s) ** 2)
    # Theorem 4 (3) with W_inf = 2 eta C and noise std eta sigma: eta cancels.
    return pabi_contractive_rdp(1.0, 2.0 * C, M, r, s, tight=tight)


def theorem_5(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float, noise_scale: float,
              data_size: int, index: int | None = None, tight: bool = False, allow_infeasible: bool = False,
              mechanism: str = "pnsgd") -> Certificate:
    """002 Theorem 5 (NoisyProjSGD, one pass, release x_n): ``(alpha, alpha eps_i)``-RDP at index i.

    Loss C-Lipschitz, beta-smooth, rho-strongly convex; ``eta <= 2/(beta + rho)``
    (checked by
    [`bayesdp.theorems.hockey_stick.sc_step_lipschitz`][bayesdp.theorems.hockey_stick.sc_step_lipschitz], strict as
    in 003). ``eps_n = 2 C^2/sigma^2``; ``eps_i = 2 C^2/((n-i) sigma^2) L^{n-i+1}`` for i < n with ``L = sqrt(1 - 2
    eta beta rho/(beta+rho))`` (SEEDS §1.10).

    Args:
        lipschitz: C > 0.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta < 2/(beta + rho).
        noise_scale: sigma > 0 (added noise ``N(0, eta^2 sigma^2 I)``).
        data_size: n >= 1.
        index: i in 1..n, or ``None`` for every index (worst i = n).
        tight: the exact path value (SEEDS §1.10, ``<= eps_i``).
        allow_infeasible: skip the check rho <= beta (regression only).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * eps_i``.

    Raises:
        AssumptionError: a constant out of range, the step-size condition fails, or i not in 1..n.

    Examples:
        SEEDS §1.10 (C = 1, sigma = 1, eta = 0.5, beta = 1, rho = 0.5, n = 100): eps_1 = 3.16834e-11,
        eps_50 = 1.29340e-6, eps_100 = 2.

        >>> kw = dict(lipschitz=1.0, smoothness=1.0, strong_convexity=0.5, step_size=0.5, noise_scale=1.0,
        ...           data_size=100)
        >>> [f"{theorem_5(**kw, index=i).constants['eps_i']:.5e}" for i in (1, 50, 100)]
        ['3.16834e-11', '1.29340e-06', '2.00000e+00']
    """

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
    """002 Theorem 6 / Examples 4-5 (Brownian motion, P_t(x) = N(x, 2t I)): ``alpha Delta^2/(4 t)``.

    Args:
        alpha: the Renyi order.
        time: t > 0.
        sensitivity: Delta >= 0.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: t <= 0 or Delta < 0.

    Examples:
        >>> brownian_rdp(2.0, time=1.0, sensitivity=2.0)    # 2 * 4 / 4
        2.0
    """
    t = positive("time", time)
    return up(_q(alpha) * _q(nonnegative("sensitivity", sensitivity)) ** 2 / (4 * _q(t)))   # exact, rounded up


def ou_lambda(theta: float, rho: float, time: float, sensitivity: float) -> float:
    """002 Corollary 7: ``Lambda(t) = theta Delta^2/(2 rho^2 (e^{2 theta t} - 1))``.

    Args:
        theta: the mean-reversion rate > 0.
        rho: the diffusion coefficient > 0.
        time: t > 0.
        sensitivity: Delta >= 0.

    Returns:
        Lambda(t) (the mechanism is ``(alpha, alpha Lambda(t))``-RDP).

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(ou_lambda(theta=1.0, rho=1.0, time=0.5, sensitivity=1.0), 9)   # SEEDS §1.12
        0.290988353
    """
    th = positive("theta", theta, "the OU mean-reversion rate must be > 0")
    r = positive("rho", rho, "the OU diffusion coefficient must be > 0")
    t = positive("time", time, "the diffusion time must be > 0 (t -> 0 gives no privacy)")
    d = nonnegative("sensitivity", sensitivity)
    import mpmath

    with mpmath.workdps(50):   # rounded up (expm1 of a float product can land on either side)
        T_, R_ = mpmath.mpf(th), mpmath.mpf(r)
        return _mp_up(T_ * mpmath.mpf(d) ** 2 / (2 * R_ * R_ * mpmath.expm1(2 * T_ * mpmath.mpf(t))))


def ou_rdp(alpha: float, theta: float, rho: float, time: float, sensitivity: float) -> float:
    """002 Corollary 7: ``alpha Lambda(t)``.

    Args:
        alpha: the Renyi order.
        theta: the mean-reversion rate > 0.
        rho: the diffusion coefficient > 0.
        time: t > 0.
        sensitivity: Delta >= 0.

    Returns:
        the RDP value at alpha.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(ou_rdp(2.0, 1.0, 1.0, 0.5, 1.0), 9)
        0.581976707
    """
    return up(_q(alpha) * _q(ou_lambda(theta, rho, time, sensitivity)))   # Lambda rounded up; the product too


def ou_mse(theta: float, rho: float, time: float, dimension: int, f_norm: float) -> float:
    """002 eq. (4): ``(1 - e^{-theta t})^2 ||f(D)||^2 + (d rho^2/theta)(1 - e^{-2 theta t})``.

    Args:
        theta: > 0.
        rho: > 0.
        time: t > 0.
        dimension: d >= 1.
        f_norm: ``||f(D)||`` >= 0.

    Returns:
        the mean squared error of the OU mechanism.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        SEEDS §1.13 ((d, Delta, eps, R) = (10, 1, 0.5, 2), calibrated): E_OU(1) = 40/14 at ||f(D)|| = R.

        >>> theta, rho = ou_calibrate(0.5, dimension=10, sensitivity=1.0, radius=2.0)
        >>> round(ou_mse(theta, rho, 1.0, 10, f_norm=2.0), 6)
        2.857143
    """
    th, r, t = positive("theta", theta), positive("rho", rho), positive("time", time)
    d = positive_int("dimension", dimension)
    f = nonnegative("f_norm", f_norm)
    import mpmath

    with mpmath.workdps(30):   # (floats: inf * 0 = NaN, OverflowError)
        TT = mpmath.mpf(th) * mpmath.mpf(t)
        return float(mpmath.expm1(-TT) ** 2 * mpmath.mpf(f) ** 2
                     - d * mpmath.mpf(r) ** 2 / mpmath.mpf(th) * mpmath.expm1(-2 * TT))


def gaussian_equiv_mse(theta: float, rho: float, time: float, dimension: int) -> float:
    """002 Theorem 8: Gaussian mechanism with the same RDP: ``E_GM = d rho^2 (e^{2 theta t} - 1)/theta``.

    Args:
        theta: > 0.
        rho: > 0.
        time: t > 0.
        dimension: d >= 1.

    Returns:
        the mean squared error of the equivalent Gaussian mechanism.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> theta, rho = ou_calibrate(0.5, dimension=10, sensitivity=1.0, radius=2.0)
        >>> round(gaussian_equiv_mse(theta, rho, 1.0, 10), 6)     # SEEDS §1.13: d Delta^2 / (2 eps) = 10
        10.0
    """
    th, r, t = positive("theta", theta), positive("rho", rho), positive("time", time)
    d = positive_int("dimension", dimension)
    import mpmath

    with mpmath.workdps(30):   # (floats overflowed: OverflowError; inf beyond the float range)
        return float(d * mpmath.mpf(r) ** 2 * mpmath.expm1(2 * mpmath.mpf(th) * mpmath.mpf(t)) / mpmath.mpf(th))


def ou_calibrate(eps: float, dimension: int, sensitivity: float, radius: float) -> tuple[float, float]:
    """002 Theorem 8 calibration: ``theta = log(1 + d Delta^2/(2 eps R^2))``,
    ``rho^2 = theta Delta^2/(2 eps (e^{2 theta} - 1))``: ``(alpha, alpha eps)``-RDP at t = 1.

    Args:
        eps: the target RDP slope > 0.
        dimension: d >= 1.
        sensitivity: Delta > 0.
        radius: R > 0, ``sup_D ||f(D)||``.

    Returns:
        ``(theta, rho)``.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> theta, rho = ou_calibrate(eps=1.0, dimension=100, sensitivity=0.3, radius=1.0)
        >>> round(ou_lambda(theta, rho, 1.0, 0.3), 6)                 # SEEDS §1.13: Lambda(1) = eps
        1.0
    """
    e = positive("epsilon", eps)
    d = positive_int("dimension", dimension)
    D = positive("sensitivity", sensitivity)
    R = positive("radius", radius)
    import mpmath

    # at 50 digits (floats divided by an e R^2 that underflowed to 0, or overflowed); rho rounded UP: any theta > 0
    # with rho^2 >= theta Delta^2/(2 eps (e^(2 theta) - 1)) gives Lambda(1) <= eps, and a float rho below that
    # claimed eps for a slightly larger Lambda
    with mpmath.workdps(50):
        Dm, E = mpmath.mpf(D), mpmath.mpf(e)
        th = _mp_up(mpmath.log1p(d * Dm ** 2 / (2 * E * mpmath.mpf(R) ** 2)))
        if not 0.0 < th < math.inf:
            raise AssumptionError(f"theta = log(1 + d Delta^2/(2 eps R^2)) = {th:.6g} is outside the float range; "
                                  "rescale the constants")
        T_ = mpmath.mpf(th)
        rho = _mp_up(mpmath.sqrt(T_ * Dm ** 2 / (2 * E * mpmath.expm1(2 * T_))))
    if not 0.0 < rho < math.inf:
        raise AssumptionError(f"rho = {rho:.6g} is outside the float range; rescale the constants")
    return th, rho


def theorem_8_applies(theta: float, rho: float, dimension: int, radius: float) -> bool:
    """002 Theorem 8 hypothesis ``theta R^2 <= 4 d rho^2`` (then E_OU/E_GM <= 1 for all t >= 0).

    Args:
        theta: > 0.
        rho: the diffusion coefficient.
        dimension: d >= 1.
        radius: R, ``sup_D ||f(D)||``.

    Returns:
        whether the hypothesis holds.

    Raises:
        AssumptionError: theta <= 0 or d not an integer >= 1.

    Examples:
        >>> theorem_8_applies(theta=1.0, rho=1.0, dimension=1, radius=2.0)     # 4 <= 4
        True
    """
    th, d = positive("theta", theta), positive_int("dimension", dimension)
    return _q(th) * _q(radius) ** 2 <= 4 * d * _q(rho) ** 2   # exactly (floats: OverflowError, ties decided wrongly)


def corollary_7(theta: float, rho: float, time: float, sensitivity: float, dimension: int | None = None,
                f_norm: float | None = None, radius: float | None = None, mechanism: str = "ou") -> Certificate:
    """002 Corollary 7 (OU mechanism ``e^{-theta t} f(D) + N(0, (rho^2/theta)(1 - e^{-2 theta t}) I)``).

    ``(alpha, alpha Lambda(t))``-RDP with ``Lambda(t) = theta Delta^2/(2 rho^2 (e^{2 theta t} - 1))``;
    the semigroup is used as stated (the printed SDE's ``sqrt(2 rho)`` is a typo, SEEDS §6 row 24).
    With ``dimension`` and ``f_norm`` (or ``radius`` = sup ||f(D)||, worst case) the
    constants also report the MSE of the OU mechanism (002 eq. (4)) and of the Gaussian
    mechanism with the same RDP (002 Theorem 8), and whether Theorem 8's hypothesis holds.

    Args:
        theta: > 0.
        rho: > 0.
        time: t > 0.
        sensitivity: Delta >= 0.
        dimension: d >= 1 (for the MSEs).
        f_norm: ``||f(D)||`` (for the OU MSE).
        radius: ``sup_D ||f(D)||`` (for the OU MSE when ``f_norm`` is not given, and Theorem 8's test).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * Lambda(t)``.

    Raises:
        AssumptionError: a constant out of range, ``f_norm > radius``, or ``f_norm``/``radius`` without
            ``dimension``.

    Examples:
        >>> cert = corollary_7(theta=1.0, rho=1.0, time=0.5, sensitivity=1.0)
        >>> round(cert.constants["Lambda"], 9), round(cert.rdp(2.0), 9)
        (0.290988353, 0.581976707)
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
            g_ = consts["mse_gaussian"]
            consts["mse_ratio"] = consts["mse_ou"] / g_ if 0.0 < g_ < math.inf else math.nan
        if radius is not None:
            consts["theorem_8_applies"] = float(theorem_8_applies(theta, rho, d, nonnegative("radius", radius)))
    elif f_norm is not None or radius is not None:
        raise AssumptionError("--dimension is required to report the MSE (002 eq. (4) needs d)")
    return Certificate(mechanism=mechanism, source="002 Corollary 7", curve=RDP.linear(lam),
                       assumptions={"theta": float(theta), "rho": float(rho), "time": float(time),
                                    "sensitivity": float(sensitivity)},
                       constants=consts, notes=notes)
