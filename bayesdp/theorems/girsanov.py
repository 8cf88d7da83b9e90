"""004 (Bertazzi, Johnston, Roberts, Durmus), Sections 4 and 5: Girsanov bounds.

Every function is one theorem: named constants in, [`Certificate`][bayesdp.certificate.Certificate] out.
All 004 bounds are linear RDP curves ``eps(alpha) = alpha * C / 4`` (their
``eps_delta = C/4 + sqrt(C log(1/delta))`` is Mironov's conversion of that
curve, which [`bayesdp.curves.RDP`][bayesdp.curves.RDP] reproduces with ``method="mironov"``
and improves with the CKS conversion).

Constants are the ones the proofs support (../shared/math/SEEDS.md §4.16 and
§6 rows 1–8), not the printed ones where they differ:

* Theorems 5.2/5.6: the drift offset of Proposition 4.6 (20) is ``2c``, so
  ``C3* = 4 c^2 ((L+1)/a + 1)^2``, ``C6* = beta * C3*`` with ``a = mu - gamma L^2/2``;
* Theorem 5.7: ``C7* = (4 beta c^2/s^2)((L+1)/a + 1)^2`` with the ``C/4`` form;
* Proposition 4.6 is proved for ``T >= 1``; for ``T < 1`` it falls back to
  Proposition 4.5 with ``c = c_off`` (B.6), which is also tighter there.

The printed constants live in [`bayesdp.theorems.paper_constants`][bayesdp.theorems.paper_constants] for
regression tests only.
"""

from __future__ import annotations

import math

from ..certificate import Certificate
from ..curves import RDP
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from ..exact import down, exact, up
from .gradient_step import paper_margin_exact

__all__ = ["proposition_4_5", "proposition_4_6", "theorem_5_2", "theorem_5_4", "theorem_5_6", "theorem_5_8",
           "posterior_limit_estimate"]

# ---------------------------------------------------------------------------
# validation helpers shared by the theorems of this module
# ---------------------------------------------------------------------------


def check_strongly_convex_part(strong_convexity: float, smoothness: float) -> tuple[float, float]:
    """mu > 0 and L >= mu (an L-smooth mu-strongly convex K needs mu <= L)."""
    mu = positive("strong_convexity", strong_convexity, "declare mu > 0 of the strongly convex part K")
    L = positive("smoothness", smoothness, "declare L > 0, the Lipschitz constant of grad K")
    require(L >= mu, "smoothness", L, f"must be >= strong_convexity = {mu:.6g} (an L-smooth mu-strongly "
            "convex function has mu <= L)", "check the two constants")
    return mu, L


def check_final_step_size(step_size: float, mu: float, L: float, source: str) -> float:
    """004 Theorems 5.2/5.6/5.7: gamma in (0, 2 mu / L^2), strictly."""
    g = positive("step_size", step_size)
    hi = up(2 * exact(mu) / (exact(L) * exact(L)))
    # the condition decided exactly (a float 2*mu/L^2 can round either way)
    require(paper_margin_exact(g, mu, L) > 0, "step_size", g, f"must be in (0, 2*mu/L^2) = (0, {hi:.6g}) for "
            f"{source}", "choose a smaller step size, or release the path (ula-path / sgld-path)")
    require(contraction_margin(mu, L, g) > 0, "step_size", g, f"is within rounding of 2*mu/L^2 = {hi:.6g} "
            f"(mu - gamma L^2/2 underflows) for {source}", "choose a smaller step size")
    return g


def contraction_margin(mu: float, L: float, step_size: float) -> float:
    """``a = mu - gamma L^2 / 2`` of 004 (112)-(116), exact then rounded DOWN (every bound divides by
    it); > 0 under the step condition."""
    return down(paper_margin_exact(step_size, mu, L))


def _over(num: float, den: float) -> float:
    """``num / den`` (both >= 0, den > 0) exactly, rounded up; a one-line refusal when it overflows."""
    out = up(exact(num) / exact(den))
    if not out < float("inf"):
        raise AssumptionError(f"{num:.6g} / {den:.6g} overflows: the constants are outside the float range")
    return out


def _linear(C: float) -> RDP:
    """``alpha C / 4``: C/4 is exact for every normal float; rounded up where it is subnormal."""
    return RDP.linear(up(exact(C) / 4) if math.isfinite(C) else C / 4.0)


# ---------------------------------------------------------------------------
# Section 4: diffusions with bounded drift difference
# ---------------------------------------------------------------------------


def proposition_4_5(drift_diff: float, inverse_temperature: float, time: float,
                    mechanism: str = "girsanov-path") -> Certificate:
    """004 Proposition 4.5: the path on [0, T] is (alpha, alpha*C1/4)-RDP, ``C1 = c^2 beta T``.

    Setting (004 (16)-(18)): ``dX = f_D(X_kappa(t), eta) dt + sqrt(2/beta) dW`` from a common,
    data-independent start, with ``|f_D(x, eta) - f_D'(x, eta)| <= c`` for all x, eta; the whole
    path (X_t), t in [0, T], is released.  Equivalent to ``eps_delta = C1/4 + sqrt(C1 log(1/delta))``
    (Mironov's conversion, SEEDS §4.9); the certificate's curve also converts with CKS.

    Args:
        drift_diff: c of (18), the sup of the drift difference at the same point (>= 0).
        inverse_temperature: beta > 0 (noise ``sqrt(2/beta) dW``).
        time: the horizon T > 0 (``step_size * num_steps`` for an Euler chain).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the linear RDP curve ``alpha * C1 / 4``.

    Raises:
        AssumptionError: c < 0, beta <= 0 or T <= 0 (or not finite).

    Examples:
        >>> cert = proposition_4_5(drift_diff=1.0, inverse_temperature=1.0, time=4.0)
        >>> cert.constants["C1"], cert.rdp(2.0)                   # C1 = 1 * 1 * 4; alpha C1 / 4
        (4.0, 2.0)
        >>> round(cert.curve.epsilon(1e-5, method="mironov"), 6)  # C1/4 + sqrt(C1 log(1e5))
        7.78614
    """
    c = nonnegative("grad_diff", drift_diff, "declare the sup of the drift difference (18)")
    beta = positive("inverse_temperature", inverse_temperature)
    T = positive("time", time, "the horizon T = step_size * num_steps must be > 0")
    C1 = up(exact(c) * exact(c) * exact(beta) * exact(T))   # rounded up (a float product can round below)
    return Certificate(
        mechanism=mechanism, source="004 Proposition 4.5", curve=_linear(C1),
        assumptions={"drift_diff": c, "inverse_temperature": beta, "time": T,
                     "x0": "common, data-independent", "noise": "sqrt(2/beta) dW shared"},
        constants={"C1": C1},
    )


def proposition_4_6(drift_lipschitz: float, drift_offset: float, coupling_bound: float,
                    inverse_temperature: float, time: float, drift_diff: float | None = None,
                    mechanism: str = "girsanov-final") -> Certificate:
    """004 Proposition 4.6: the final value X_T is (alpha, alpha*C2/4)-RDP.

    ``C2 = beta (C (L+1) + c_off)^2`` with (20) ``|f_D(x,s) - f_D'(y,s)| <= L|x-y| + c_off``
    and (21) ``sup_t |X_t^D - X_t^D'| <= C`` under the synchronous coupling.
    The proof needs T >= 1; for T < 1 the paper (B.6) uses Proposition 4.5 with
    ``c = drift_diff`` (default ``c_off``, which bounds it by (20) at x = y): ``C = beta c^2 T``
    (SEEDS §4.16(b)).

    Args:
        drift_lipschitz: L of (20), >= 0.
        drift_offset: the additive offset c_off of (20), >= 0 (2c under 004 Assumption 5.1, SEEDS §4.16(c)).
        coupling_bound: C of (21), >= 0.
        inverse_temperature: beta > 0.
        time: the horizon T > 0.
        drift_diff: for T < 1, the sup of the drift difference at the same point (default ``drift_offset``).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the linear RDP curve ``alpha * C / 4``
            (``constants["C2"]``, or ``constants["C"]`` on the T < 1 branch).

    Raises:
        AssumptionError: a constant negative, beta or T not positive.

    Examples:
        SEEDS §4.11 (c = 1, L = 2, mu = 1, gamma = 0.1): c_off = 2c = 2, C = 2c/a = 2.5 with
        a = mu - gamma L^2/2 = 0.8, so ``C2 = (2.5 * 3 + 2)^2``:

        >>> proposition_4_6(drift_lipschitz=2.0, drift_offset=2.0, coupling_bound=2.5,
        ...                 inverse_temperature=1.0, time=10.0).constants
        {'C2': 90.25}
        >>> proposition_4_6(2.0, 2.0, 2.5, inverse_temperature=1.0, time=0.5).constants   # beta c_off^2 T
        {'C': 2.0}
    """
    L = nonnegative("smoothness", drift_lipschitz, "declare the Lipschitz constant L of the drift in (20)")
    c_off = nonnegative("grad_diff", drift_offset, "declare the additive offset c of (20)")
    C = nonnegative("coupling_bound", coupling_bound, "declare C of (21)")
    beta = positive("inverse_temperature", inverse_temperature)
    T = positive("time", time)
    c_path = c_off if drift_diff is None else nonnegative("drift_diff", drift_diff)
    assumptions = {"drift_lipschitz": L, "drift_offset": c_off, "coupling_bound": C,
                   "inverse_temperature": beta, "time": T}
    if T < 1.0:
        C1 = up(exact(beta) * exact(c_path) * exact(c_path) * exact(T))
        return Certificate(mechanism=mechanism, source="004 Proposition 4.6", curve=_linear(C1),
                           assumptions=assumptions, constants={"C": C1},
                           notes="T < 1: Proposition 4.5 branch (B.6), C = beta*c^2*T")
    C2 = up(exact(beta) * (exact(C) * (exact(L) + 1) + exact(c_off)) ** 2)
    return Certificate(mechanism=mechanism, source="004 Proposition 4.6", curve=_linear(C2),
                       assumptions=assumptions, constants={"C2": C2})


# ---------------------------------------------------------------------------
# Section 5: ULA and SGLD
# ---------------------------------------------------------------------------


def final_constant(c_off: float, coupling: float, L: float, beta: float, T: float,
                   num_steps: int | None = None, step_size: float | None = None) -> tuple[float, str]:
    """Prop 4.6 with the T < 1 branch: returns (C, note), C rounded up.  With ``num_steps`` and
    ``step_size`` the branch is decided on the exact ``T = n * gamma`` (a float product can round
    a T just below 1 up to 1.0, where Prop 4.6 is not proved).
    """
    T_exact = exact(T) if num_steps is None else exact(num_steps) * exact(step_size)
    # exact products, rounded up (in floats a subnormal intermediate such as beta * c_off lost its relative digits,
    # and the constant landed below the exact one); beyond the float range C is inf (refused by RDP), never a raise
    if T_exact < 1:
        return (up(exact(beta) * exact(c_off) ** 2 * T_exact),
                "T = n*gamma < 1: Proposition 4.5 branch (B.6), C = beta*c_off^2*T")
    if not math.isfinite(coupling):
        return math.inf, ""
    return up(exact(beta) * (exact(coupling) * (exact(L) + 1) + exact(c_off)) ** 2), ""


def theorem_5_2(strong_convexity: float, smoothness: float, grad_bound: float, step_size: float,
                num_steps: int, inverse_temperature: float = 1.0, mechanism: str = "ula-final") -> Certificate:
    """004 Theorem 5.2 (ULA final draw, non-convex V, uniform in n), supported constant.

    Assumption 5.1: ``U_D = K + V_D``, grad K L-Lipschitz and mu-strongly monotone,
    ``sup |grad V_D| <= c`` for every dataset; ``gamma in (0, 2 mu / L^2)``.
    ``C3* = 4 c^2 ((L+1)/a + 1)^2``, ``a = mu - gamma L^2 / 2`` (SEEDS §4.16(c)-(d); the printed
    ``C3 = c^2 (2(L+1)/a + 1)^2`` understates it, SEEDS §6 row 1).  For ``n gamma < 1`` the
    Proposition 4.5 branch ``C = 4 c^2 n gamma`` is used (SEEDS §4.16(b)).

    With ``inverse_temperature != 1`` (noise ``sqrt(2 gamma / beta)``) full-batch
    ULA is SGLD with batch size = data size, so 004 Theorem 5.6 applies and gives
    ``C6* = beta * C3*``; the source label says so.

    Args:
        strong_convexity: mu > 0 of K.
        smoothness: L >= mu, the Lipschitz constant of grad K.
        grad_bound: c >= 0, ``sup_x |grad V_D(x)|`` for every dataset.
        step_size: gamma in (0, 2 mu / L^2), strictly.
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] (source ``"004 Theorem 5.2"``, or ``"004 Theorem 5.6"``
            when beta != 1) with the linear RDP curve ``alpha * C3* / 4``.

    Raises:
        AssumptionError: mu <= 0, L < mu, c < 0, gamma outside (0, 2 mu/L^2), n not an integer >= 1,
            beta <= 0.

    Examples:
        SEEDS §4.11 (c = 1, L = 2, mu = 1, gamma = 0.1, delta = 1e-5): C3* = 90.25, eps_delta = 54.7967,
        eps_alpha(2) = 45.125.

        >>> cert = theorem_5_2(strong_convexity=1.0, smoothness=2.0, grad_bound=1.0, step_size=0.1, num_steps=100)
        >>> cert.source, round(cert.constants["C3*"], 6)
        ('004 Theorem 5.2', 90.25)
        >>> round(cert.curve.epsilon(1e-5, method="mironov"), 4), round(cert.rdp(2.0), 4)
        (54.7967, 45.125)
    """
    mu, L = check_strongly_convex_part(strong_convexity, smoothness)
    c = nonnegative("grad_bound", grad_bound, "declare c = sup |grad V_D| (004 Assumption 5.1)")
    beta = positive("inverse_temperature", inverse_temperature)
    source = "004 Theorem 5.2" if beta == 1.0 else "004 Theorem 5.6"
    gamma = check_final_step_size(step_size, mu, L, source)
    n = positive_int("num_steps", num_steps)
    a = contraction_margin(mu, L, gamma)
    coupling = _over(2.0 * c, a)                   # sup_n |e_n| <= 2c/a  (C.1, (116))
    C, note = final_constant(2.0 * c, coupling, L, beta, n * gamma, n, gamma)
    if beta != 1.0:
        note = ("full-batch ULA with inverse temperature beta is SGLD with batch size = data size; "
                + note).rstrip("; ")
    return Certificate(
        mechanism=mechanism, source=source, curve=_linear(C),
        assumptions={"strong_convexity": mu, "smoothness": L, "grad_bound": c, "step_size": gamma,
                     "num_steps": n, "inverse_temperature": beta, "x0": "common, data-independent"},
        constants={"C3*" if beta == 1.0 else "C6*": C, "a": a, "coupling_bound": coupling,
                   "drift_offset": 2.0 * c},
        notes=note,
    )


def theorem_5_4(grad_diff: float, step_size: float, num_steps: int, inverse_temperature: float = 1.0,
                mechanism: str = "ula-path") -> Certificate:
    """004 Theorem 5.4 (ULA whole path): ``C5 = c^2 n gamma`` (times beta for general temperature).

    Assumption 5.3: ``|grad U_D(x) - grad U_D'(x)| <= c`` for all x (``grad_diff``).
    No step-size or convexity condition.  Proposition 4.5 with T = n*gamma.

    Args:
        grad_diff: c >= 0 of Assumption 5.3 (2 * grad_bound under Assumption 5.1, SEEDS §4.12).
        step_size: gamma > 0.
        num_steps: n >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the linear RDP curve ``alpha * C5 / 4``.

    Raises:
        AssumptionError: c < 0, gamma <= 0, n not an integer >= 1, beta <= 0.

    Examples:
        >>> cert = theorem_5_4(grad_diff=1.0, step_size=0.01, num_steps=1000)
        >>> cert.constants["C5"], cert.rdp(2.0)   # 1 * 1000 * 0.01 rounded up (the double 0.01 is above 1/100)
        (10.000000000000002, 5.000000000000001)
    """
    d = nonnegative("grad_diff", grad_diff, "declare Delta = sup |grad U_D - grad U_D'| (004 Assumption 5.3)")
    gamma = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    beta = positive("inverse_temperature", inverse_temperature)
    C5 = up(exact(d) * exact(d) * n * exact(gamma) * exact(beta))
    return Certificate(
        mechanism=mechanism, source="004 Theorem 5.4", curve=_linear(C5),
        assumptions={"grad_diff": d, "step_size": gamma, "num_steps": n, "inverse_temperature": beta,
                     "x0": "common, data-independent"},
        constants={"C5": C5},
    )


def check_batch(batch_size: int, data_size: int) -> tuple[int, int]:
    """``(batch_size, data_size)`` as integers with ``1 <= batch_size <= data_size`` (else AssumptionError)."""
    s = positive_int("batch_size", batch_size)
    m = positive_int("data_size", data_size)
    require(s <= m, "batch_size", s, f"must be <= data_size = {m}", "use a batch no larger than the dataset")
    return s, m


def theorem_5_6(strong_convexity: float, smoothness: float, grad_bound: float, step_size: float,
                num_steps: int, batch_size: int, data_size: int, inverse_temperature: float = 1.0,
                linear_v: bool = False, mechanism: str = "sgld-final") -> Certificate:
    """004 Theorem 5.6 (SGLD final draw) or, with ``linear_v``, Theorem 5.7.

    Assumption 5.5: ``l(x,d) = v(x,d) + k(x)``, grad k L-Lipschitz, mu-strongly monotone,
    ``|grad_x v(x,d)| <= c``; minibatches of fixed size s, uniform without replacement.
    Supported constants (SEEDS §4.16(f)-(g), §6 rows 2-5):
    ``C6* = 4 beta c^2 ((L+1)/a + 1)^2`` and, when ``grad_x v(x, d)`` does not depend on x,
    ``C7* = (4 beta c^2 / s^2) ((L+1)/a + 1)^2``, both with the ``C/4`` form.

    Args:
        strong_convexity: mu > 0 of k.
        smoothness: L >= mu, the Lipschitz constant of grad k.
        grad_bound: c >= 0, ``sup |grad_x v(x, d)|`` over x and records d.
        step_size: gamma in (0, 2 mu / L^2), strictly.
        num_steps: n >= 1.
        batch_size: s, 1 <= s <= data_size.
        data_size: m >= 1.
        inverse_temperature: beta > 0 (default 1).
        linear_v: ``grad_x v(x, d)`` does not depend on x (Theorem 5.7); the caller must have proven it
            (``bayesdp certify`` derives it from the model).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] (source ``"004 Theorem 5.6"`` or ``"004 Theorem 5.7"``)
            with the linear RDP curve ``alpha * C / 4``.

    Raises:
        AssumptionError: a constant out of range, gamma outside (0, 2 mu/L^2), or s > m.

    Examples:
        SEEDS §4.14 (c = 1, beta = 1, s = 100, L = mu = 1, gamma = 1e-3, delta = 1e-5): the supported
        eps_delta is 0.204553 (the printed constant gives 0.172223, which understates it).

        >>> cert = theorem_5_6(strong_convexity=1.0, smoothness=1.0, grad_bound=1.0, step_size=1e-3,
        ...                    num_steps=10_000, batch_size=100, data_size=1000, linear_v=True)
        >>> cert.source, round(cert.curve.epsilon(1e-5, method="mironov"), 6)
        ('004 Theorem 5.7', 0.204553)
        >>> round(theorem_5_6(1.0, 2.0, 1.0, 0.1, 100, batch_size=10, data_size=100).constants["C6*"], 6)
        90.25
    """
    mu, L = check_strongly_convex_part(strong_convexity, smoothness)
    c = nonnegative("grad_bound", grad_bound, "declare c = sup |grad_x v(x, d)| (004 Assumption 5.5)")
    source = "004 Theorem 5.7" if linear_v else "004 Theorem 5.6"
    gamma = check_final_step_size(step_size, mu, L, source)
    n = positive_int("num_steps", num_steps)
    s, m = check_batch(batch_size, data_size)
    beta = positive("inverse_temperature", inverse_temperature)
    a = contraction_margin(mu, L, gamma)
    if linear_v:
        offset = up(2 * exact(c) / s)              # (129): only the replaced index differs
        coupling = up(2 * exact(c) / (s * exact(a)))   # (131) with the sign corrected
        name = "C7*"
    else:
        offset = 2.0 * c
        coupling = _over(2.0 * c, a)
        name = "C6*"
    C, note = final_constant(offset, coupling, L, beta, n * gamma, n, gamma)
    return Certificate(
        mechanism=mechanism, source=source, curve=_linear(C),
        assumptions={"strong_convexity": mu, "smoothness": L, "grad_bound": c, "step_size": gamma,
                     "num_steps": n, "batch_size": s, "data_size": m, "inverse_temperature": beta,
                     "linear_v": bool(linear_v),
                     "minibatches": "fixed size, uniform without replacement, independent across steps",
                     "x0": "common, data-independent"},
        constants={name: C, "a": a, "coupling_bound": coupling, "drift_offset": offset},
        notes=note,
    )


def theorem_5_8(grad_diff: float, step_size: float, num_steps: int, batch_size: int, data_size: int,
                inverse_temperature: float = 1.0, mechanism: str = "sgld-path") -> Certificate:
    """004 Theorem 5.8 (SGLD whole path): ``C8 = beta c^2 n gamma / s^2`` with the C/4 form.

    (36): ``|grad_x l(x, d) - grad_x l(x, d')| <= c`` for all x (``grad_diff``).
    The printed ``C8 + sqrt(C8 log(1/delta))`` is looser; Prop 4.5 gives the C/4 form (SEEDS §4.16(h)).

    Args:
        grad_diff: c >= 0 of (36), per record.
        step_size: gamma > 0.
        num_steps: n >= 1.
        batch_size: s, 1 <= s <= data_size.
        data_size: m >= 1.
        inverse_temperature: beta > 0 (default 1).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] with the linear RDP curve ``alpha * C8 / 4``.

    Raises:
        AssumptionError: a constant out of range or s > m.

    Examples:
        SEEDS §4.15 (beta = 1, c = 1, s = 10, n = 1000, gamma = 0.01): C8 = 0.1.

        >>> theorem_5_8(grad_diff=1.0, step_size=0.01, num_steps=1000, batch_size=10, data_size=100).constants
        {'C8': 0.1}
    """
    d = nonnegative("grad_diff", grad_diff, "declare Delta = sup |grad l(x,d) - grad l(x,d')| (004 (36))")
    gamma = positive("step_size", step_size)
    n = positive_int("num_steps", num_steps)
    s, m = check_batch(batch_size, data_size)
    beta = positive("inverse_temperature", inverse_temperature)
    C8 = up(exact(beta) * exact(d) * exact(d) * n * exact(gamma) / (s * s))
    return Certificate(
        mechanism=mechanism, source="004 Theorem 5.8", curve=_linear(C8),
        assumptions={"grad_diff": d, "step_size": gamma, "num_steps": n, "batch_size": s, "data_size": m,
                     "inverse_temperature": beta,
                     "minibatches": "fixed size, uniform without replacement, independent across steps",
                     "x0": "common, data-independent"},
        constants={"C8": C8},
    )


def posterior_limit_estimate(strong_convexity: float, smoothness: float, grad_bound: float,
                             inverse_temperature: float = 1.0, mechanism: str = "posterior") -> Certificate:
    """004 "posterior limit" C4 after Theorem 5.2 — an UNCERTIFIED heuristic.

    The paper prints ``C4 = c(2(L+1)/mu + 1)``; it must be squared and use the
    offset 2c: ``C4* = 4 c^2 ((L+1)/mu + 1)^2`` (SEEDS §4.16(e)).  The paper only
    says the gamma -> 0 limit "suggests" it; it is never reported as a certificate
    (``certified=False``: shown in reports, never chosen as best).

    Args:
        strong_convexity: mu > 0 of K.
        smoothness: L >= mu.
        grad_bound: c >= 0.
        inverse_temperature: beta > 0 (default 1; the constant is multiplied by beta).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        an uncertified [`Certificate`][bayesdp.certificate.Certificate] with the curve ``alpha * C4* / 4``.

    Raises:
        AssumptionError: mu <= 0, L < mu, c < 0 or beta <= 0.

    Examples:
        SEEDS §4.16(e) (c = 0.5, L = mu = 1): C4* = 4 * 0.25 * (2 + 1)^2 = 9.

        >>> est = posterior_limit_estimate(strong_convexity=1.0, smoothness=1.0, grad_bound=0.5)
        >>> est.constants, est.certified
        ({'C4*': 9.0}, False)
    """
    mu, L = check_strongly_convex_part(strong_convexity, smoothness)
    c = nonnegative("grad_bound", grad_bound)
    beta = positive("inverse_temperature", inverse_temperature)
    t = (L + 1.0) / mu + 1.0
    C4 = beta * 4.0 * c * c * t * t
    return Certificate(
        mechanism=mechanism, source="004 posterior limit (C4, estimate)", curve=_linear(C4),
        assumptions={"strong_convexity": mu, "smoothness": L, "grad_bound": c, "inverse_temperature": beta},
        constants={"C4*": C4}, certified=False,
        notes="heuristic gamma -> 0 limit of Theorem 5.2 (squared, offset 2c); NOT a certificate",
    )


def path_c_from_grad_bound(grad_bound: float, grad_diff: float | None) -> tuple[float, str]:
    """Drift difference for a path bound: Delta if declared, else 2c (Assumption 5.1 => 5.3 with 2c).

    When both are declared the smaller is used: both are valid upper bounds.
    """
    two_c = 2.0 * grad_bound
    if grad_diff is None:
        return two_c, "2*grad_bound (Assumption 5.1 implies 5.3 with 2c)"
    if grad_diff <= two_c:
        return grad_diff, "grad_diff"
    return two_c, "2*grad_bound (smaller than the declared grad_diff)"

