"""Routes tighter than the seed papers (issue #6); derivations in docs/tight.md.

* [`total_potential_constants`][bayesdp.theorems.tight.total_potential_constants]: strong convexity / smoothness of
  ``U_D = K + V_D`` from K's constants and V's (``v_smoothness`` L_V, ``v_convex``).
* [`path_gdp`][bayesdp.theorems.tight.path_gdp]: a ULA/SGLD path whose per-step drift difference is bounded for
  every history is an adaptive composition of Gaussian mechanisms: ``mu = Delta_step sqrt(beta n gamma / 2)``
  (Dong–Roth–Su 2022 Cor. 3.3; LITERATURE.md §3.3).
* [`last_draw_gdp`][bayesdp.theorems.tight.last_draw_gdp]: Bok, Su, Altschuler 2024 (shifted interpolation) for a
  strongly convex, smooth total potential: ``mu_n = Delta sqrt(gamma beta/2) sqrt((1+rho)/(1-rho)
  (1-rho^n)/(1+rho^n))``, ``rho = max(|1 - gamma m|, |1 - gamma L|)`` (LITERATURE.md §2.1, §4); exact on quadratics.
* [`posterior_gdp`][bayesdp.theorems.tight.posterior_gdp]: Gopi, Lee, Liu 2022: ``U_D`` m-strongly convex and
  ``|grad U_D - grad U_D'| <= Delta`` give ``Delta sqrt(beta/m)``-GDP for one exact posterior draw
  (LITERATURE.md §1(e)); exact on quadratics.
* [`window_gdp`][bayesdp.theorems.tight.window_gdp]: 004 Proposition 4.6's perturbation argument on the discrete
  chain with a window of k steps instead of time 1, as an adaptive Gaussian composition, minimised over k (SEEDS.md
  §4.16(j); proof in docs/tight.md).
* [`kv_coupling_bound`][bayesdp.theorems.tight.kv_coupling_bound]: ``sup_k |X_k - X'_k|`` for ``U = K + V`` with
  ``|grad V| <= c``: 004's ``2c/a`` (paper factor) and ``2 gamma c/(1 - rho_K)`` with the exact factor ``rho_K =
  max(|1 - gamma mu|, |1 - gamma L|)`` (valid for every gamma < 2/L).
"""

from __future__ import annotations

import math

from ..certificate import Certificate
from ..curves import GDP, RDP
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from .girsanov import _linear, final_constant
from ..exact import down, exact as _q, mul_up, one_minus_power, power_of_contraction, round_up, sqrt_up, up
from .gradient_step import contraction_factor, contraction_gap, coupling_bound, paper_margin_exact

__all__ = ["total_potential_constants", "posterior_gdp", "path_gdp", "last_draw_gdp", "kv_coupling_bound",
           "theorem_5_2_exact_contraction", "window_gdp"]

POSTERIOR_SOURCE = "Gopi-Lee-Liu 2022 (posterior GDP)"
LAST_DRAW_SOURCE = "Bok-Su-Altschuler 2024 (last-draw GDP)"
PATH_GDP_SOURCE = "GDP composition of the path (Dong-Roth-Su Cor. 3.3)"
WINDOW_SOURCE = "004 Proposition 4.6, optimised window, GDP (docs/tight.md)"
EXACT_CONTRACTION_SOURCE = "004 Theorem 5.2, exact contraction factor (docs/tight.md)"


def total_potential_constants(strong_convexity: float, smoothness: float, v_smoothness: float | None,
                              v_convex: bool) -> tuple[float | None, float | None, str]:
    """(m, L, how) for ``U = K + V``: K mu-strongly convex and L_K-smooth; V L_V-smooth, maybe convex.

    m = mu + 0 if V convex, else mu - L_V (needs L_V declared); L = L_K + L_V (needs L_V).
    Returns None where a constant is not established.

    Args:
        strong_convexity: mu > 0 of K.
        smoothness: L_K >= mu.
        v_smoothness: L_V >= 0 of V, or ``None`` when not declared.
        v_convex: V is declared convex.

    Returns:
        ``(m, L, how)``: the total strong convexity (``None`` if not shown > 0), the total smoothness
            (``None`` without L_V) and one line saying how they were obtained.

    Raises:
        AssumptionError: mu <= 0, L_K < mu or L_V < 0.

    Examples:
        >>> total_potential_constants(1.0, 2.0, v_smoothness=0.5, v_convex=False)[:2]   # (1 - 0.5, 2 + 0.5)
        (0.5, 2.5)
        >>> total_potential_constants(1.0, 2.0, v_smoothness=None, v_convex=False)[:2]
        (None, None)
    """
    mu = positive("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    require(L >= mu, "smoothness", L, f"must be >= strong_convexity = {mu:.6g} (mu <= L for an L-smooth "
            "mu-strongly convex K)", "check both constants")
    lv = None
    if v_smoothness is not None:
        lv = nonnegative("v_smoothness", v_smoothness,
                         "declare L_V >= 0, the Lipschitz constant of grad V (0 for linear V)")
    if v_convex:
        m = mu
        how = "V convex: m = mu"
    elif lv is not None:
        m = down(_q(mu) - _q(lv))   # a lower bound of mu - L_V (the float difference can round above it)
        how = f"V {lv:.6g}-smooth, not declared convex: m = mu - L_V"
    else:
        return None, None, "V's smoothness and convexity not declared"
    total_L = None if lv is None else up(_q(L) + _q(lv))
    if m <= 0:
        return None, total_L, f"mu - L_V = {m:.6g} <= 0: U_D is not shown strongly convex"
    return m, total_L, how + ("" if lv is None else f", L = L_K + L_V = {total_L:.6g}")


def posterior_gdp(total_strong_convexity: float, grad_diff: float, inverse_temperature: float = 1.0,
                  mechanism: str = "posterior") -> Certificate:
    """Gopi–Lee–Liu 2022: pi_D ∝ exp(-beta U_D), U_D m-strongly convex, |grad U_D - grad U_D'| <= Delta
    => one exact posterior draw is Delta*sqrt(beta/m)-GDP.  No smoothness needed.

    (F = beta U_D is beta*m-strongly convex and F - F' is beta*Delta-Lipschitz, so the exponential
    mechanism is (beta Delta / sqrt(beta m))-GDP.)  Tight for Gaussian location families
    (LITERATURE.md §1(e)).

    Args:
        total_strong_convexity: m > 0 of U_D (for every dataset).
        grad_diff: Delta >= 0, ``sup_x |grad U_D(x) - grad U_D'(x)|``.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`GDP`][bayesdp.curves.GDP] curve.

    Raises:
        AssumptionError: m <= 0, Delta < 0 or beta <= 0.

    Examples:
        The Gaussian location family ``U_D(x) = m x^2/2 - b_D x`` with ``|b_D - b_D'| = 2`` and m = 4 has
        posteriors N(b_D/4, 1/4): exactly ``(2/4) / (1/2) = 1``-GDP.

        >>> round(posterior_gdp(total_strong_convexity=4.0, grad_diff=2.0).gdp_mu, 6)
        1.0
    """
    m = positive("total_strong_convexity", total_strong_convexity,
                 "the posterior route needs a strongly convex potential U_D")
    d = nonnegative("grad_diff", grad_diff)
    beta = positive("inverse_temperature", inverse_temperature)
    mu = mul_up(d, sqrt_up(up(_q(beta) / _q(m))))
    return Certificate(mechanism=mechanism, source=POSTERIOR_SOURCE, curve=GDP(mu),
                       assumptions={"total_strong_convexity": m, "grad_diff": d, "inverse_temperature": beta,
                                    "sampler": "exact draw from pi_D (not ULA/SGLD)"},
                       constants={"gdp_mu": mu})


def path_gdp(step_drift_diff: float, step_size: float, num_steps: int, inverse_temperature: float = 1.0,
             mechanism: str = "ula-path", note: str = "") -> Certificate:
    """Path of x <- x + gamma f_D(x, A) + sqrt(2 gamma/beta) z with |f_D(x, A) - f_D'(x, A)| <= Delta_step
    for every x and every (data-independent) minibatch A.

    Each step is, given the history, a Gaussian mechanism with sensitivity gamma*Delta_step and sd
    sqrt(2 gamma/beta), i.e. Delta_step*sqrt(gamma beta/2)-GDP; adaptive composition (Dong-Roth-Su
    Cor. 3.3) gives ``mu = Delta_step sqrt(beta n gamma/2)``.  Its RDP curve is exactly 004 Theorem
    5.4/5.8's.

    Args:
        step_drift_diff: Delta_step >= 0.
        step_size: gamma > 0.
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.
        note: free text recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`GDP`][bayesdp.curves.GDP] curve.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(path_gdp(step_drift_diff=1.0, step_size=0.01, num_steps=100).gdp_mu, 6)   # sqrt(100 * 0.01 / 2)
        0.707107
    """
    d = nonnegative("grad_diff", step_drift_diff)
    g = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    beta = positive("inverse_temperature", inverse_temperature)
    mu = mul_up(d, sqrt_up(mul_up(beta, n, g, 0.5)))
    return Certificate(mechanism=mechanism, source=PATH_GDP_SOURCE, curve=GDP(mu),
                       assumptions={"step_drift_diff": d, "step_size": g, "num_steps": n,
                                    "inverse_temperature": beta, "x0": "common, data-independent"},
                       constants={"gdp_mu": mu, "step_gdp_mu": mul_up(d, sqrt_up(mul_up(g, beta, 0.5)))}, notes=note)


def last_draw_gdp(total_strong_convexity: float, total_smoothness: float, grad_diff: float, step_size: float,
                  num_steps: int, inverse_temperature: float = 1.0, mechanism: str = "ula-final") -> Certificate:
    """Bok–Su–Altschuler 2024: ULA on an m-strongly convex, L-smooth U_D (both datasets) with
    |grad U_D - grad U_D'| <= Delta, from a common data-independent start, releases a final draw that is
    mu_n-GDP.

    ``mu_n = Delta sqrt(gamma beta/2) sqrt((1+rho)/(1-rho) * (1-rho^n)/(1+rho^n))`` with the
    exact contraction factor ``rho = max(|1 - gamma m|, |1 - gamma L|) < 1`` (needs gamma < 2/L);
    exact on quadratics (LITERATURE.md §2.1, §4).

    Args:
        total_strong_convexity: m > 0 of U_D.
        total_smoothness: L >= m of U_D.
        grad_diff: Delta >= 0.
        step_size: gamma in (0, 2/L).
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`GDP`][bayesdp.curves.GDP] curve.

    Raises:
        AssumptionError: a constant out of range, gamma >= 2/L, or mu_n overflows.

    Examples:
        On the linear-quadratic benchmark (m = L = 1, Delta = 2c = 1) the bound equals the exact mu of
        the final draw, [`bayesdp.audit.lq.exact_mu`][bayesdp.audit.lq.exact_mu] (0.9975):

        >>> cert = last_draw_gdp(total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0, step_size=0.01,
        ...                      num_steps=10_000)
        >>> round(cert.gdp_mu, 4)
        0.9975
    """
    m = positive("total_strong_convexity", total_strong_convexity)
    L = positive("total_smoothness", total_smoothness)
    require(L >= m, "total_smoothness", L, f"must be >= total_strong_convexity = {m:.6g}")
    d = nonnegative("grad_diff", grad_diff)
    g = positive("step_size", step_size)
    require(g < 2.0 / L, "step_size", g, f"must be < 2/L_total = {2.0 / L:.6g} for the gradient step of U_D "
            "to contract (Bok-Su-Altschuler route)", "choose a smaller step size")
    n = positive_int("num_steps", num_steps)
    beta = positive("inverse_temperature", inverse_temperature)
    rho = contraction_factor(g, m, L)
    gap = contraction_gap(g, m, L)   # 1 - rho, exact then rounded down (no cancellation at gamma m ~ 1e-15)
    require(gap > 0.0, "step_size", g, f"gives 1 - rho = {gap:.3g}: the gradient step of U_D does not contract",
            "choose a step size in (0, 2/L_total)")
    step_mu = mul_up(d, sqrt_up(mul_up(g, beta, 0.5)))
    # (1 + rho)/(1 - rho) * (1 - rho^n)/(1 + rho^n) with 1 - rho = gap and rho^n = exp(n log1p(-gap)),
    # each factor accurate to a few ulps; mu is then rounded outward (theorems/exact.py)
    factor = (2.0 - gap) * one_minus_power(gap, n) / (gap * (1.0 + power_of_contraction(gap, n)))
    mu = round_up(mul_up(step_mu, sqrt_up(factor)))
    if not math.isfinite(mu):
        raise AssumptionError(f"last-draw GDP parameter overflows (Delta = {d:.6g}, step_size = {g:.6g}); the "
                              "constants are outside the float range")
    return Certificate(mechanism=mechanism, source=LAST_DRAW_SOURCE, curve=GDP(mu),
                       assumptions={"total_strong_convexity": m, "total_smoothness": L, "grad_diff": d,
                                    "step_size": g, "num_steps": n, "inverse_temperature": beta,
                                    "x0": "common, data-independent"},
                       constants={"gdp_mu": mu, "rho": rho, "step_gdp_mu": step_mu})


def kv_coupling_bound(strong_convexity: float, smoothness: float, drift_offset: float, step_size: float,
                      exact: bool) -> float:
    """sup_k |X_k^D - X_k^D'| for U = K + V, |grad V_D(x) - grad V_D'(y)| <= drift_offset (= 2c).

    exact=False: 004's recursion e <- (1 - gamma a) e + gamma*offset, a = mu - gamma L^2/2 (gamma < 2mu/L^2).
    exact=True:  e <- rho_K e + gamma*offset with rho_K = max(|1-gamma mu|, |1-gamma L|) (gamma < 2/L).

    Args:
        strong_convexity: mu > 0 of K.
        smoothness: L > 0 of K.
        drift_offset: the offset >= 0 (2c under 004 Assumption 5.1).
        step_size: gamma > 0, in the range of the chosen factor.
        exact: use the exact contraction factor of grad K instead of 004's.

    Returns:
        the coupling bound, rounded up.

    Raises:
        AssumptionError: a constant out of range, or gamma outside the factor's range.

    Examples:
        SEEDS §4.11's constants (mu = 1, L = 2, c = 1, gamma = 0.1): 004's 2c/a = 2.5; the exact
        factor 0.9 gives 0.1 * 2 / 0.1 = 2.

        >>> round(kv_coupling_bound(1.0, 2.0, drift_offset=2.0, step_size=0.1, exact=False), 6)
        2.5
        >>> round(kv_coupling_bound(1.0, 2.0, drift_offset=2.0, step_size=0.1, exact=True), 6)
        2.0
    """
    mu = positive("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    off = nonnegative("drift_offset", drift_offset)
    g = positive("step_size", step_size)
    if exact:
        require(g < 2.0 / L, "step_size", g, f"must be in (0, 2/L) = (0, {2.0 / L:.6g}) for the gradient "
                "step of K to contract", "choose a smaller step size, or release the path")
        return coupling_bound(g, off, gap=contraction_gap(g, mu, L))
    hi = 2.0 * mu / (L * L)
    a = paper_margin_exact(g, mu, L)       # mu - gamma L^2/2, exact
    require(a > 0, "step_size", g, f"must be in (0, 2*mu/L^2) = (0, {hi:.6g}) for 004's contraction factor")
    out = up(_q(off) / a)
    if not math.isfinite(out):
        raise AssumptionError(f"coupling bound drift_offset / (mu - gamma L^2/2) overflows (step_size = {g:.6g} "
                              f"is within rounding of 2*mu/L^2 = {hi:.6g}); choose a smaller step size")
    return out


def theorem_5_2_exact_contraction(strong_convexity: float, smoothness: float, grad_bound: float,
                                  step_size: float, num_steps: int, inverse_temperature: float = 1.0,
                                  batch_size: int = 1, linear_v: bool = False,
                                  mechanism: str = "ula-final") -> Certificate:
    """004 Theorem 5.2/5.6/5.7's proof with the exact contraction factor of grad K.

    Coupling: e_{k+1} <= rho_K e_k + gamma * offset, offset = 2c (2c/s with linear v), so
    C = gamma*offset/(1 - rho_K) for every gamma < 2/L; then Proposition 4.6 (T >= 1) with the same
    offset: ``C2 = beta (C (L+1) + offset)^2``; T < 1: Proposition 4.5 branch ``beta offset^2 T``
    (derivation in docs/tight.md).

    Args:
        strong_convexity: mu > 0 of K.
        smoothness: L > 0 of K.
        grad_bound: c >= 0.
        step_size: gamma in (0, 2/L).
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        batch_size: s >= 1 (used with ``linear_v``).
        linear_v: grad_x v(x, d) does not depend on x (offset 2c/s).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the linear RDP curve ``alpha * C / 4``.

    Raises:
        AssumptionError: a constant out of range or gamma >= 2/L.

    Examples:
        SEEDS §4.11's constants: C = 2 (instead of 2.5), so ``C2 = (2 * 3 + 2)^2 = 64`` (instead of 90.25).

        >>> cert = theorem_5_2_exact_contraction(1.0, 2.0, grad_bound=1.0, step_size=0.1, num_steps=100)
        >>> round(cert.constants["C"], 6)
        64.0
    """
    mu = positive("strong_convexity", strong_convexity)
    L = positive("smoothness", smoothness)
    c = nonnegative("grad_bound", grad_bound)
    n = positive_int("num_steps", num_steps)
    beta = positive("inverse_temperature", inverse_temperature)
    s = positive_int("batch_size", batch_size)
    offset = up(2 * _q(c) / s) if linear_v else 2.0 * c
    C = kv_coupling_bound(mu, L, offset, step_size, exact=True)
    K, note = final_constant(offset, C, L, beta, n * step_size, n, step_size)   # Prop 4.6, T < 1 -> Prop 4.5 branch
    return Certificate(mechanism=mechanism, source=EXACT_CONTRACTION_SOURCE, curve=_linear(K),
                       assumptions={"strong_convexity": mu, "smoothness": L, "grad_bound": c, "step_size": step_size,
                                    "num_steps": n, "inverse_temperature": beta, "batch_size": s,
                                    "linear_v": bool(linear_v), "x0": "common, data-independent"},
                       constants={"C": K, "coupling_bound": C, "drift_offset": offset,
                                  "rho_K": contraction_factor(step_size, mu, L)}, notes=note)


def _sqrt_rational_up(q) -> float:
    """A float >= sqrt(q) for a rational q >= 0, within ~2^-60 (relative) plus the final rounding up (integer
    square root of q scaled by 4^k; no underflow of a tiny q's float)."""
    if q <= 0:
        return 0.0
    k = max(0, (124 - q.numerator.bit_length() + q.denominator.bit_length()) // 2)
    x, rem = divmod(q.numerator * 4 ** k, q.denominator)
    s = math.isqrt(x)
    if rem or s * s != x:
        s += 1                            # s > sqrt(q 4^k) unless q 4^k is a perfect square (then s is its root)
    return up(_q(1) * s / 2 ** k)


def window_gdp(drift_lipschitz: float, drift_offset: float, coupling_bound: float, step_size: float,
               num_steps: int, inverse_temperature: float = 1.0, mechanism: str = "ula-final",
               note: str = "") -> Certificate:
    """Final draw of a chain x <- x + gamma f_D(x) + sqrt(2 gamma/beta) z, by 004 Proposition 4.6's
    argument on a window of the last k steps, as an adaptive Gaussian composition.

    f_D may depend on a data-independent minibatch; (20) |f_D(x) - f_D'(y)| <= L|x - y| + c_off and
    (21) sup_k |X_k - X'_k| <= C under the synchronous coupling.  For a window of the last k steps the
    perturbed-chain argument (docs/tight.md, SEEDS §4.16(j)) gives
    ``mu(k) = sqrt(k) gamma (L C + c_off + C/(k gamma)) / s``, s = sqrt(2 gamma/beta); minimised over
    k in {1, ..., n}.

    Args:
        drift_lipschitz: L >= 0 of (20).
        drift_offset: c_off >= 0 of (20).
        coupling_bound: C >= 0 of (21).
        step_size: gamma > 0.
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.
        note: free text recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with a [`GDP`][bayesdp.curves.GDP] curve
            (``constants["window_steps"]`` is the best k).

    Raises:
        AssumptionError: a constant out of range, or the bound is not finite.

    Examples:
        SEEDS §4.16(j) (c = 1, L = 2, mu = 1, gamma = 0.1: C = 2.5, c_off = 2): the continuous optimum
        ``C2 = 4 beta C (L C + c_off) = 70``, i.e. mu = sqrt(70/2) = 5.916; on the grid of steps k = 4:

        >>> cert = window_gdp(drift_lipschitz=2.0, drift_offset=2.0, coupling_bound=2.5, step_size=0.1, num_steps=100)
        >>> cert.constants["window_steps"], round(cert.gdp_mu, 4)
        (4, 5.9256)
    """
    L = nonnegative("drift_lipschitz", drift_lipschitz)
    off = nonnegative("drift_offset", drift_offset)
    C = nonnegative("coupling_bound", coupling_bound)
    g = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    beta = positive("inverse_temperature", inverse_temperature)
    # mu(k)^2 = beta (k gamma A + C)^2 / (2 k gamma), A = L C + c_off, in exact rationals (no underflow of
    # A gamma, no overflow of k* = C/(A gamma)); mu is the square root of its upper float, pushed up
    qA, qC, qg, qb = _q(L) * _q(C) + _q(off), _q(C), _q(g), _q(beta)

    def mu2_of(k: int):
        return qb * (k * qg * qA + qC) ** 2 / (2 * k * qg)

    if qA > 0:
        k_star = qC / (qA * qg)          # the continuous minimiser of mu(k)^2
        cands = {1, n, max(1, min(n, math.floor(k_star))), max(1, min(n, math.ceil(k_star)))}
    else:
        cands = {n}
    k_best = min(cands, key=mu2_of)
    mu = _sqrt_rational_up(mu2_of(k_best))
    if not math.isfinite(mu):
        raise AssumptionError("window bound is not finite; check the constants")
    return Certificate(mechanism=mechanism, source=WINDOW_SOURCE, curve=GDP(mu),
                       assumptions={"drift_lipschitz": L, "drift_offset": off, "coupling_bound": C,
                                    "step_size": g, "num_steps": n, "inverse_temperature": beta,
                                    "x0": "common, data-independent"},
                       constants={"gdp_mu": mu, "window_steps": k_best, "window_time": k_best * g}, notes=note)
