"""003 (Asoodeh, Diaz, Calmon): E_gamma (hockey-stick) contraction of projected noisy SGD.

Every result cites its number as ../shared/math/SEEDS.md §2 names it.  All
delta(eps) bounds are [`DeltaProfile`][bayesdp.curves.DeltaProfile] curves; products of
many hockey-stick factors are computed in log space (underflow to 0 is fine).

Corrections of SEEDS.md §6 applied here:

* row 20: 003 Theorems 3, 4, 5 omit the step-size condition of Lemma 4; the
  contraction constant ``M = sqrt(1 - 2 eta beta rho/(beta + rho))`` is a valid
  Lipschitz constant of the gradient step only for ``eta < 2/(beta + rho)``
  (``eta <= 2/beta`` when rho = 0, where M = 1).  Enforced.
* row 21: ``rho <= beta`` (a beta-smooth rho-strongly convex loss needs it); the
  paper's Figure 3 violates it.  Only ``allow_infeasible=True`` (figure script and
  regression tests; never the CLI) skips this check.
* row 19: the "delta = 0" rule of 003 Theorem 3 holds for ``eps >= 2L/v`` at
  i = n, and for ``eps >= min{2L/v, M(b-a)/(eta v)}`` only when i < n.

Noise convention (003 eq. (12)): ``Y_{t+1} = Pi_K(Y_t - eta (grad l(Y_t, x_{t+1}) + Z))``
with ``Z ~ N(0, sigma^2 I)`` (Gaussian) or ``Z ~ Laplace(0, v)`` (scale v, 1-D),
so the added noise has standard deviation ``eta * sigma`` (scale ``eta * v``).
"""

from __future__ import annotations

import math

from ..certificate import Certificate
from ..curves import DeltaProfile, _gdp_delta_mp
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from ..exact import down, exact, mp_up as _mp_up, mul_up, round_up, sqrt_up, up

__all__ = ["laplace_hockey_stick", "log_theta", "theta_gamma", "gaussian_hockey_stick",
           "contraction_coefficient_gaussian", "contraction_coefficient_laplace", "sdpi", "sc_step_lipschitz",
           "theorem_3", "theorem_4", "theorem_5", "proposition_1"]

# ---------------------------------------------------------------------------
# Lemma 1 and Lemma 2 / Definition 1: hockey-stick divergences
# ---------------------------------------------------------------------------


def laplace_hockey_stick(mean_gap: float, scale: float, eps: float) -> float:
    """003 Lemma 1: ``E_{e^eps}(L(m1, v) || L(m2, v)) = [1 - exp((v eps - |m1 - m2|)/(2 v))]_+``.

    Args:
        mean_gap: ``m1 - m2`` (its absolute value is used).
        scale: the Laplace scale v > 0 (variance ``2 v^2``), 1-D.
        eps: epsilon >= 0 (gamma = e^eps).

    Returns:
        the hockey-stick divergence, in [0, 1).

    Raises:
        AssumptionError: scale <= 0 or eps < 0.

    Examples:
        >>> round(laplace_hockey_stick(mean_gap=2.0, scale=1.0, eps=1.0), 6)   # 1 - e^{(1 - 2)/2}
        0.393469
        >>> laplace_hockey_stick(2.0, 1.0, eps=2.0)                            # eps >= gap/v: no mass
        0.0
    """
    gap = abs(float(mean_gap))
    v = positive("scale (Laplace scale v)", scale)
    e = nonnegative("epsilon", eps)
    # x = (v eps - gap)/(2 v) exactly, rounded down, and -expm1(x) (a few ulps) rounded up: an upper bound (the
    # float x could land above the exact one, and the value below it)
    q = (exact(v) * exact(e) - exact(gap)) / (2 * exact(v))
    if q >= 0:
        return 0.0
    return min(1.0, round_up(-math.expm1(max(-800.0, down(q)))))


def log_theta(r: float, eps: float) -> float:
    """log of 003 Definition 1 ``theta_{e^eps}(r) = Q(eps/r - r/2) - e^eps Q(eps/r + r/2)``.

    ``theta_{e^eps}(0) = 0`` (limit), so ``log_theta(0, eps) = -inf``.  Computed
    with ``log_ndtr`` so that products of many factors stay accurate.

    Args:
        r: the mean gap over the noise standard deviation, >= 0.
        eps: epsilon >= 0.

    Returns:
        ``log theta_{e^eps}(r)`` (``-inf`` where theta underflows or r = 0).

    Raises:
        AssumptionError: r < 0 or eps < 0.

    Examples:
        >>> round(log_theta(1.0, 0.0), 6)          # log(1 - 2 Q(1/2))
        -0.959916
    """
    r = nonnegative("r (mean gap / noise std)", r)
    e = nonnegative("epsilon", eps)
    if r == 0.0:
        return -math.inf
    a = e / r - r / 2.0
    b = e / r + r / 2.0
    from scipy import special   # (function-level: importing the theorems does not import scipy)

    la = float(special.log_ndtr(-a))          # log Q(a)
    if la == -math.inf:   # Q(a) underflows (a huge): so does theta <= Q(a); lb - la would be NaN
        return -math.inf
    lb = e + float(special.log_ndtr(-b))      # log (e^eps Q(b))
    diff = lb - la
    if diff >= 0.0:   # rounding at theta ~ 0
        return -math.inf
    return la + math.log(-math.expm1(diff))


def theta_gamma(r: float, eps: float) -> float:
    """003 Definition 1: ``theta_{e^eps}(r)``; r >= 0, eps >= 0; values in [0, 1).

    Args:
        r: the mean gap over the noise standard deviation, >= 0.
        eps: epsilon >= 0.

    Returns:
        ``Q(eps/r - r/2) - e^eps Q(eps/r + r/2)`` in 60-digit arithmetic, rounded up (the float formula of
            [`log_theta`][bayesdp.theorems.hockey_stick.log_theta] cancels and landed up to 7e-8 (relative) below
            it at r ~ 1e-6); 0 at r = 0.

    Raises:
        AssumptionError: r < 0 or eps < 0.

    Examples:
        >>> round(theta_gamma(1.0, 0.0), 6)        # gamma = 1: TV(N(0,1), N(1,1)) = 1 - 2 Q(1/2)
        0.382925
        >>> theta_gamma(0.0, 1.0)
        0.0
    """
    r = nonnegative("r (mean gap / noise std)", r)
    e = nonnegative("epsilon", eps)
    return _theta_up(r, e)


def gaussian_hockey_stick(mean_gap: float, noise_std: float, eps: float) -> float:
    """003 Lemma 2: ``E_{e^eps}(N(m1, s^2 I) || N(m2, s^2 I)) = theta_{e^eps}(|m2 - m1|/s)``.

    Args:
        mean_gap: ``|m2 - m1|`` (its absolute value is used).
        noise_std: s > 0.
        eps: epsilon >= 0.

    Returns:
        the hockey-stick divergence, in [0, 1).

    Raises:
        AssumptionError: s <= 0 or eps < 0.

    Examples:
        >>> round(gaussian_hockey_stick(mean_gap=2.0, noise_std=2.0, eps=0.0), 6)   # theta_1(1)
        0.382925
    """
    s = positive("noise_std", noise_std)
    return theta_gamma(_ratio_up([abs(float(mean_gap))], [s]) if mean_gap else 0.0, eps)   # theta increases in r


# ---------------------------------------------------------------------------
# Theorem 2: E_gamma contraction coefficient of a (projected) noisy map
# ---------------------------------------------------------------------------


def contraction_coefficient_gaussian(eps: float, lipschitz: float, diameter: float, noise_std: float) -> float:
    """003 Theorem 2 for ``K(y) = Pi_K(psi(y) + N(0, s^2 I))`` on a set of diameter D_K.

    ``eta_{e^eps}(K) = sup_{y1, y2} E_{e^eps}(K(y1) || K(y2)) <= theta_{e^eps}(Lip(psi) D_K / s)``
    (projection is post-processing; theta is increasing in r).

    Args:
        eps: epsilon >= 0.
        lipschitz: the Lipschitz constant of psi, >= 0.
        diameter: D_K > 0.
        noise_std: s > 0.

    Returns:
        an upper bound of the E_{e^eps} contraction coefficient.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(contraction_coefficient_gaussian(eps=0.0, lipschitz=1.0, diameter=1.0, noise_std=1.0), 6)
        0.382925
    """
    lip = nonnegative("lipschitz (of the map psi)", lipschitz)
    d = positive("diameter", diameter)
    s = positive("noise_std", noise_std)
    return theta_gamma(_ratio_up([lip, d], [s]) if lip else 0.0, eps)   # r rounded up (theta increases in r)


def contraction_coefficient_laplace(eps: float, lipschitz: float, diameter: float, scale: float) -> float:
    """003 Theorem 2 with Lemma 1 for the 1-D Laplace kernel ``Pi_[a,b](psi(y) + L(0, scale))``.

    Args:
        eps: epsilon >= 0.
        lipschitz: the Lipschitz constant of psi, >= 0.
        diameter: b - a > 0.
        scale: the Laplace scale > 0.

    Returns:
        ``[1 - exp((scale eps - Lip D)/(2 scale))]_+``.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> round(contraction_coefficient_laplace(eps=0.0, lipschitz=1.0, diameter=2.0, scale=1.0), 6)  # 1 - 1/e
        0.632121
    """
    lip = nonnegative("lipschitz (of the map psi)", lipschitz)
    d = positive("diameter", diameter)
    return laplace_hockey_stick(_ratio_up([lip, d], []) if lip else 0.0, scale, eps)   # increasing in the gap


def sdpi(e_gamma_in: float, coefficient: float) -> float:
    """003 Theorem 2 (SDPI): ``E_gamma(mu K || nu K) <= eta_gamma(K) E_gamma(mu || nu)``.

    Args:
        e_gamma_in: ``E_gamma(mu || nu)`` >= 0.
        coefficient: ``eta_gamma(K)`` in [0, 1].

    Returns:
        the bound on ``E_gamma(mu K || nu K)``.

    Raises:
        AssumptionError: a negative input or a coefficient > 1.

    Examples:
        >>> sdpi(0.5, 0.2)
        0.1
    """
    e_in = nonnegative("E_gamma(mu||nu)", e_gamma_in)
    c = nonnegative("eta_gamma(K)", coefficient)
    require(c <= 1.0, "eta_gamma(K)", c, "must be <= 1 (a contraction coefficient)")
    return mul_up(e_in, c)   # rounded up


# ---------------------------------------------------------------------------
# Lemma 4 / 002 Lemma 18: contraction of a gradient step
# ---------------------------------------------------------------------------


def sc_step_lipschitz(step_size: float, smoothness: float, strong_convexity: float,
                      allow_infeasible: bool = False) -> float:
    """003 Lemma 4 (= 002 Lemma 18): ``M = sqrt(1 - 2 eta beta rho/(beta + rho))``.

    Requires beta > 0, 0 <= rho <= beta (SEEDS §6 row 21; skipped only with
    ``allow_infeasible=True`` for regression of the paper's Figure 3) and
    ``0 < eta < 2/(beta + rho)`` (row 20; ``eta <= 2/beta`` if rho = 0, then M = 1).

    Args:
        step_size: eta > 0.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        allow_infeasible: skip the check rho <= beta (regression of 003 Figure 3 only).

    Returns:
        M in [0, 1], rounded up.

    Raises:
        AssumptionError: a constant out of range or the step-size condition fails.

    Examples:
        >>> round(sc_step_lipschitz(step_size=0.5, smoothness=1.0, strong_convexity=0.5), 6)   # sqrt(2/3)
        0.816497
        >>> sc_step_lipschitz(0.5, 1.0, 0.0)       # rho = 0: nonexpansive
        1.0
    """
    beta = positive("smoothness", smoothness, "declare beta > 0, the smoothness of the loss")
    rho = nonnegative("strong_convexity", strong_convexity)
    eta = positive("step_size", step_size)
    if not allow_infeasible:
        require(rho <= beta, "strong_convexity", rho,
                f"must be <= smoothness = {beta:.6g} (a beta-smooth rho-strongly convex loss has rho <= beta)",
                "check the two constants")
    if rho == 0.0:
        require(exact(eta) * exact(beta) <= 2, "step_size", eta, f"must be <= 2/smoothness = {2.0 / beta:.6g} "
                "for the gradient step to be nonexpansive (003 Lemma 4, SEEDS §6 row 20)",
                "choose a smaller step size")
        return 1.0
    hi = 2.0 / (beta + rho)
    require(exact(eta) * (exact(beta) + exact(rho)) < 2, "step_size", eta, f"must be < 2/(smoothness + "
            f"strong_convexity) = {hi:.6g} (003 Lemma 4; the condition 003 Theorems 3-5 omit, SEEDS §6 row 20)",
            "choose a smaller step size")
    # 1 - 2 eta beta rho/(beta + rho) exactly, rounded up (M is a Lipschitz constant: an upper bound)
    q = 1 - 2 * exact(eta) * exact(beta) * exact(rho) / (exact(beta) + exact(rho))
    if q < 0:  # only reachable with allow_infeasible
        raise AssumptionError(f"1 - 2 eta beta rho/(beta+rho) = {float(q):.6g} is negative; the constants are "
                              "infeasible")
    return min(1.0, sqrt_up(up(q)))


def _ratio_up(num: list, den: list) -> float:
    """prod(num) / prod(den) of positive floats, exactly, rounded up."""
    q = exact(1)
    for x in num:
        q *= exact(x)
    for x in den:
        q /= exact(x)
    return up(q)


def _theta_up(r: float, eps: float) -> float:
    """An upper bound of theta_{e^eps}(r) for r >= 0 an upper bound of the mean gap (theta increases with r): the
    GDP delta at mu = r in 60-digit arithmetic, rounded up."""
    if r == 0.0:
        return 0.0
    return min(1.0, float(_gdp_delta_mp(r, eps)))


def _check_index(data_size: int, index: int | None) -> tuple[int, int]:
    n = positive_int("data_size", data_size)
    if index is None:
        return n, n   # worst index (i = n): the bound then holds for every index
    i = positive_int("index", index)
    require(i <= n, "index", i, f"must be in 1..data_size = {n}", "pass the position of the record in the pass")
    return n, i


# ---------------------------------------------------------------------------
# Theorem 3: Laplace noise, 1-D
# ---------------------------------------------------------------------------


def pnsgd_laplace_delta(eps: float, lipschitz: float, noise_scale: float, contraction: float,
                        step_size: float, diameter: float, data_size: int, index: int) -> float:
    """003 Theorem 3 value: ``[1 - e^{eps/2 - L/v}]_+ ([1 - e^{eps/2 - M(b-a)/(2 eta v)}]_+)^{n-i}``.

    Unvalidated formula (used by [`theorem_3`][bayesdp.theorems.hockey_stick.theorem_3], which checks the hypotheses).
    """
    e = nonnegative("epsilon", eps)
    L, v = lipschitz, noise_scale
    # the signs exactly, the values at 50 digits, rounded up (the float formula could land below)
    x1 = exact(e) / 2 - exact(L) / exact(v)
    if x1 >= 0:
        return 0.0
    import mpmath

    def mp_of(q):   # the exact rational exponent to 50 digits: computed as E/2 - L/v at 50 digits, the difference
        return mpmath.mpf(q.numerator) / q.denominator   # cancelled (to 1e-32) and the delta landed below the exact one

    with mpmath.workdps(50):
        first = -mpmath.expm1(mp_of(x1))
        k = data_size - index
        if k == 0:
            return min(1.0, _mp_up(first))
        x2 = exact(e) / 2 - exact(contraction) * exact(diameter) / (2 * exact(step_size) * exact(v))
        if x2 >= 0:
            return 0.0
        second = -mpmath.expm1(mp_of(x2))
        return min(1.0, _mp_up(first * second ** k))


def laplace_zero_delta_threshold(lipschitz: float, noise_scale: float, contraction: float, step_size: float,
                                 diameter: float, data_size: int, index: int) -> float:
    """Smallest eps with delta = 0 in 003 Theorem 3 (corrected rule, SEEDS §6 row 19).

    ``2L/v`` for i = n; ``min{2L/v, M(b-a)/(eta v)}`` for i < n.
    """
    t1 = _ratio_up([2.0, lipschitz], [noise_scale])   # thresholds: rounded up
    if index == data_size:
        return t1
    return min(t1, _ratio_up([contraction, diameter], [step_size, noise_scale]))


def theorem_3(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float,
              noise_scale: float, diameter: float, data_size: int, index: int | None = None,
              allow_infeasible: bool = False, mechanism: str = "pnsgd") -> Certificate:
    """003 Theorem 3: PNSGD with Laplace noise on K = [a, b] (d = 1), (eps, delta)-DP at index i.

    ``delta(eps) = [1 - e^{eps/2 - L/v}]_+ ([1 - e^{eps/2 - M(b-a)/(2 eta v)}]_+)^{n-i}`` with
    ``M = sqrt(1 - 2 eta beta rho/(beta+rho))`` and the step condition of Lemma 4 (which the paper
    omits, SEEDS §6 row 20).  Algorithm (003 eq. (12)): ``Y_{t+1} = Pi_K(Y_t - eta (grad l(Y_t, x_{t+1}) + Z))``,
    ``Z ~ Laplace(0, v)``, one pass in a fixed order, release ``Y_n``.

    Args:
        lipschitz: L > 0, the Lipschitz constant of the loss in y.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta, with ``eta < 2/(beta + rho)`` (``<= 2/beta`` if rho = 0).
        noise_scale: v > 0, the Laplace scale of Z (added noise has scale ``eta v``).
        diameter: b - a > 0.
        data_size: n >= 1 (records, one step each).
        index: i in 1..n, the position of the differing record; ``None`` certifies every index (the
            worst one, i = n).
        allow_infeasible: skip the check rho <= beta (regression of 003 Figure 3 only).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] whose curve is the
            [`DeltaProfile`][bayesdp.curves.DeltaProfile] above; ``constants["zero_delta_epsilon"]`` is the
            smallest eps with delta = 0 (corrected rule, SEEDS §6 row 19).

    Raises:
        AssumptionError: a constant out of range, the step-size condition fails, or i not in 1..n.

    Examples:
        SEEDS §2.6 (eps = 1, L = 1, v = 1, M = 1, [a, b] = [0, 1], eta = 0.5, n = 40): delta = 3.11264e-9
        at i = 20 and 0.393469340 at i = 40.

        >>> cert = theorem_3(lipschitz=1.0, smoothness=1.0, strong_convexity=0.0, step_size=0.5,
        ...                  noise_scale=1.0, diameter=1.0, data_size=40, index=20)
        >>> print(f"{cert.delta(1.0):.5e}")
        3.11264e-09
        >>> round(theorem_3(1.0, 1.0, 0.0, 0.5, 1.0, 1.0, data_size=40).delta(1.0), 9)   # every index
        0.39346934
    """
    L = positive("lipschitz", lipschitz)
    v = positive("noise_scale", noise_scale, "the Laplace scale v of Z (added noise has scale step_size * v)")
    D = positive("diameter", diameter, "b - a of the interval K = [a, b]")
    M = sc_step_lipschitz(step_size, smoothness, strong_convexity, allow_infeasible)
    eta = float(step_size)
    n, i = _check_index(data_size, index)
    fn = lambda e: pnsgd_laplace_delta(e, L, v, M, eta, D, n, i)  # noqa: E731
    return Certificate(
        mechanism=mechanism, source="003 Theorem 3",
        curve=DeltaProfile(fn, f"003 Theorem 3 delta(eps), index {i} of {n}"),
        assumptions={"noise": "laplace", "dimension": 1, "lipschitz": L, "smoothness": float(smoothness),
                     "strong_convexity": float(strong_convexity), "step_size": eta, "noise_scale": v,
                     "diameter": D, "data_size": n, "index": i if index is not None else "all (worst i = n)",
                     "step_condition": "eta < 2/(beta+rho) (SEEDS §6 row 20)"},
        constants={"M": M, "zero_delta_epsilon": laplace_zero_delta_threshold(L, v, M, eta, D, n, i)},
    )


# ---------------------------------------------------------------------------
# Theorem 4: Gaussian noise
# ---------------------------------------------------------------------------


def pnsgd_gauss_log_delta(eps: float, lipschitz: float, noise_scale: float, contraction: float,
                          step_size: float, diameter: float, data_size: int, index: int) -> float:
    """log of 003 Theorem 4: ``theta(2L/sigma) * theta(M D_K/(eta sigma))^{n-i}`` (unvalidated formula)."""
    lt1 = log_theta(2.0 * lipschitz / noise_scale, eps)
    k = data_size - index
    if k == 0 or lt1 == -math.inf:
        return lt1
    lt2 = log_theta(contraction * diameter / (step_size * noise_scale), eps)
    if lt2 == -math.inf:
        return -math.inf
    return lt1 + k * lt2


def pnsgd_gauss_delta(eps: float, lipschitz: float, noise_scale: float, contraction: float, step_size: float,
                      diameter: float, data_size: int, index: int) -> float:
    """003 Theorem 4 delta at eps (see ``pnsgd_gauss_log_delta``; unvalidated formula)."""
    # theta(r) increases with r: r rounded up, each theta an upper bound (60 digits), the product rounded up
    t1 = _theta_up(_ratio_up([2.0, lipschitz], [noise_scale]), eps)
    k = data_size - index
    if k == 0 or t1 == 0.0:
        return t1
    t2 = _theta_up(_ratio_up([contraction, diameter], [step_size, noise_scale]), eps)
    if t2 == 0.0:
        return 0.0
    import mpmath

    with mpmath.workdps(50):
        return min(1.0, _mp_up(mpmath.mpf(t1) * mpmath.mpf(t2) ** k))


def _gauss_inputs(lipschitz, smoothness, strong_convexity, step_size, noise_scale, diameter, allow_infeasible):
    L = positive("lipschitz", lipschitz)
    s = positive("noise_scale", noise_scale, "sigma of Z (added noise has std step_size * sigma)")
    D = positive("diameter", diameter, "D_K, the diameter of the compact convex set K")
    M = sc_step_lipschitz(step_size, smoothness, strong_convexity, allow_infeasible)
    return L, s, D, M, float(step_size)


def theorem_4(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float,
              noise_scale: float, diameter: float, data_size: int, index: int | None = None,
              allow_infeasible: bool = False, mechanism: str = "pnsgd") -> Certificate:
    """003 Theorem 4: PNSGD with Gaussian noise, (eps, delta)-DP at index i.

    ``delta(eps) = theta_{e^eps}(2L/sigma) * theta_{e^eps}(M D_K/(eta sigma))^{n-i}`` with
    ``M = sqrt(1 - 2 eta beta rho/(beta+rho))`` under the step condition of Lemma 4 (SEEDS §2.7,
    §6 row 20).  ``index=None`` certifies every index (the worst one, i = n).

    Args:
        lipschitz: L > 0, the Lipschitz constant of the loss in y.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta, with ``eta < 2/(beta + rho)`` (``<= 2/beta`` if rho = 0).
        noise_scale: sigma > 0 (added noise ``N(0, eta^2 sigma^2 I)``).
        diameter: D_K > 0, the diameter of the compact convex set K.
        data_size: n >= 1.
        index: i in 1..n, or ``None`` for every index.
        allow_infeasible: skip the check rho <= beta (regression of 003 Figure 3 only).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] whose curve is a
            [`DeltaProfile`][bayesdp.curves.DeltaProfile].

    Raises:
        AssumptionError: a constant out of range, the step-size condition fails, or i not in 1..n.

    Examples:
        003 Figure 2 (sigma = 2, L = 1, beta = 0.5, eta = 0.5, rho = 0, D_K = 1, n = 40; SEEDS §2.10
        table, eps = 1): delta = 1.391532e-36 at i = 1 and 1.611294e-02 at i = 39.

        >>> fig2 = dict(lipschitz=1.0, smoothness=0.5, strong_convexity=0.0, step_size=0.5, noise_scale=2.0,
        ...             diameter=1.0, data_size=40)
        >>> print(f"{theorem_4(**fig2, index=1).delta(1.0):.6e}", f"{theorem_4(**fig2, index=39).delta(1.0):.6e}")
        1.391532e-36 1.611294e-02
    """
    L, s, D, M, eta = _gauss_inputs(lipschitz, smoothness, strong_convexity, step_size, noise_scale, diameter,
                                    allow_infeasible)
    n, i = _check_index(data_size, index)
    fn = lambda e: pnsgd_gauss_delta(e, L, s, M, eta, D, n, i)  # noqa: E731
    return Certificate(
        mechanism=mechanism, source="003 Theorem 4",
        curve=DeltaProfile(fn, f"003 Theorem 4 delta(eps), index {i} of {n}"),
        assumptions={"noise": "gaussian", "lipschitz": L, "smoothness": float(smoothness),
                     "strong_convexity": float(strong_convexity), "step_size": eta, "noise_scale": s,
                     "diameter": D, "data_size": n, "index": i if index is not None else "all (worst i = n)",
                     "step_condition": "eta < 2/(beta+rho) (SEEDS §6 row 20)"},
        constants={"M": M, "r_first": _ratio_up([2.0, L], [s]),                  # rounded up (floats: division by
                   "r_contraction": _ratio_up([M, D], [eta, s]) if M else 0.0},  # an eta s that underflowed to 0)
    )


# ---------------------------------------------------------------------------
# Theorem 5: randomly stopped PNSGD
# ---------------------------------------------------------------------------


def pnsgd_random_stop_delta(eps: float, lipschitz: float, noise_scale: float, contraction: float,
                            step_size: float, diameter: float, data_size: int, tight: bool = True) -> float:
    """003 Theorem 5: ``(1/n) theta(2L/sigma) / (1 - th)``, th = theta(M D_K/(eta sigma)) (unvalidated formula).

    ``tight=True`` uses the value the proof gives at the worst index i = 1,
    ``(1/n) theta(2L/sigma) (1 - th^n)/(1 - th)`` (SEEDS §2.9), which is <= the printed one.
    """
    # theta(r) increases with r and the geometric sum with theta: upper bounds throughout (60 digits)
    t1 = _theta_up(_ratio_up([2.0, lipschitz], [noise_scale]), eps)
    if t1 == 0.0:
        return 0.0
    th = _theta_up(_ratio_up([contraction, diameter], [step_size, noise_scale]), eps)
    n = data_size
    import mpmath

    with mpmath.workdps(50):
        T1, TH = mpmath.mpf(t1), mpmath.mpf(th)
        if th == 0.0:
            geom = mpmath.mpf(1)
        elif tight:   # (1 - th^n)/(1 - th) = sum_{j<n} th^j <= n
            geom = min(mpmath.mpf(n), (1 - TH ** n) / (1 - TH)) if th < 1.0 else mpmath.mpf(n)
        elif th < 1.0:
            geom = 1 / (1 - TH)
        else:
            return 1.0
        return min(1.0, _mp_up(T1 * geom / n))


def theorem_5(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float,
              noise_scale: float, diameter: float, data_size: int, tight: bool = True,
              allow_infeasible: bool = False, mechanism: str = "pnsgd") -> Certificate:
    """003 Theorem 5: PNSGD stopped at T ~ Unif{1..n} (independent), release Y_T; every index.

    ``delta(eps) = (1/n) theta(2L/sigma) (1 - th^n)/(1 - th)``, ``th = theta(M D_K/(eta sigma))``
    (``tight=True``, the value of the proof at the worst index i = 1, SEEDS §2.9) or the printed
    ``(1/n) theta(2L/sigma) / (1 - th)``.

    Args:
        lipschitz: L > 0.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta, with ``eta < 2/(beta + rho)`` (``<= 2/beta`` if rho = 0).
        noise_scale: sigma > 0.
        diameter: D_K > 0.
        data_size: n >= 1.
        tight: the geometric sum truncated at n terms (default) instead of the printed ``1/(1 - th)``.
        allow_infeasible: skip the check rho <= beta (regression of 003 Figure 3 only).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] whose curve is a
            [`DeltaProfile`][bayesdp.curves.DeltaProfile].

    Raises:
        AssumptionError: a constant out of range or the step-size condition fails.

    Examples:
        SEEDS §2.9 (003 Figure 2 parameters, eps = 1): delta = 0.00363480927 (both forms).

        >>> cert = theorem_5(lipschitz=1.0, smoothness=0.5, strong_convexity=0.0, step_size=0.5,
        ...                  noise_scale=2.0, diameter=1.0, data_size=40)
        >>> round(cert.delta(1.0), 11)
        0.00363480927
    """
    L, s, D, M, eta = _gauss_inputs(lipschitz, smoothness, strong_convexity, step_size, noise_scale, diameter,
                                    allow_infeasible)
    n = positive_int("data_size", data_size)
    fn = lambda e: pnsgd_random_stop_delta(e, L, s, M, eta, D, n, tight)  # noqa: E731
    return Certificate(
        mechanism=mechanism, source="003 Theorem 5",
        curve=DeltaProfile(fn, "003 Theorem 5 delta(eps), random stop"),
        assumptions={"noise": "gaussian", "random_stop": "T ~ Unif{1..n}, independent", "lipschitz": L,
                     "smoothness": float(smoothness), "strong_convexity": float(strong_convexity),
                     "step_size": eta, "noise_scale": s, "diameter": D, "data_size": n,
                     "step_condition": "eta < 2/(beta+rho) (SEEDS §6 row 20)"},
        constants={"M": M},
        notes=("geometric sum truncated at n terms (value of the proof at the worst index i = 1, SEEDS §2.9)"
               if tight else "printed form 1/(1 - theta)"),
    )


# ---------------------------------------------------------------------------
# Proposition 1: 002 Theorem 5 converted to (eps, delta)
# ---------------------------------------------------------------------------


def proposition_1_kappa(lipschitz: float, noise_scale: float, contraction: float, data_size: int,
                        index: int) -> float:
    """003 Proposition 1 kappa: ``2L^2/((n-i) sigma^2) M^{n-i+1}`` (i < n), ``2L^2/sigma^2`` (i = n) (unvalidated)."""
    k = data_size - index
    if k == 0:
        return _ratio_up([2.0, lipschitz, lipschitz], [noise_scale, noise_scale])
    import mpmath

    with mpmath.workdps(50):   # rounded up
        L, s = mpmath.mpf(lipschitz), mpmath.mpf(noise_scale)
        return _mp_up(2 * L * L / (s * s) / k * mpmath.mpf(contraction) ** (k + 1))


def proposition_1_delta(eps: float, kappa: float) -> float:
    """``exp(-(eps - kappa)^2/(4 kappa))`` for eps > kappa, else 1 (no bound); 0 when kappa = 0."""
    if kappa == 0.0:
        return 0.0
    if eps <= kappa:
        return 1.0
    import mpmath

    with mpmath.workdps(50):   # rounded up
        E, K = mpmath.mpf(eps), mpmath.mpf(kappa)
        return min(1.0, _mp_up(mpmath.exp(-(E - K) ** 2 / (4 * K))))


def proposition_1(lipschitz: float, smoothness: float, strong_convexity: float, step_size: float,
                  noise_scale: float, data_size: int, index: int | None = None,
                  allow_infeasible: bool = False, mechanism: str = "pnsgd") -> Certificate:
    """003 Proposition 1: 002 Theorem 5 (RDP ``alpha * kappa``) converted with Mironov's bound.

    ``delta(eps) = exp(-(eps - kappa)^2/(4 kappa))`` for eps > kappa (1 otherwise), with
    ``kappa = 2L^2/((n-i) sigma^2) M^{n-i+1}`` for i < n and ``2L^2/sigma^2`` for i = n (SEEDS §2.8).
    The same RDP curve is certified as ``002 Theorem 5`` (see [`bayesdp.theorems.mixing`][bayesdp.theorems.mixing]),
    whose CKS conversion is never worse.

    Args:
        lipschitz: L > 0.
        smoothness: beta > 0.
        strong_convexity: rho in [0, beta].
        step_size: eta, with ``eta < 2/(beta + rho)`` (``<= 2/beta`` if rho = 0).
        noise_scale: sigma > 0.
        data_size: n >= 1.
        index: i in 1..n, or ``None`` for every index (the worst, i = n).
        allow_infeasible: skip the check rho <= beta (regression of 003 Figure 3 only).
        mechanism: the mechanism name recorded in the certificate.

    Returns:
        a [`Certificate`][bayesdp.certificate.Certificate] whose curve is a
            [`DeltaProfile`][bayesdp.curves.DeltaProfile] (``constants["kappa"]``).

    Raises:
        AssumptionError: a constant out of range, the step-size condition fails, or i not in 1..n.

    Examples:
        003 Figure 2 (SEEDS §2.10): kappa = 0.025 at i = 20, where delta~(1) = 7.438546e-05.

        >>> cert = proposition_1(lipschitz=1.0, smoothness=0.5, strong_convexity=0.0, step_size=0.5,
        ...                      noise_scale=2.0, data_size=40, index=20)
        >>> cert.constants["kappa"], f"{cert.delta(1.0):.6e}"
        (0.025, '7.438546e-05')
    """
    L = positive("lipschitz", lipschitz)
    s = positive("noise_scale", noise_scale, "sigma of Z (added noise has std step_size * sigma)")
    M = sc_step_lipschitz(step_size, smoothness, strong_convexity, allow_infeasible)
    n, i = _check_index(data_size, index)
    kappa = proposition_1_kappa(L, s, M, n, i)
    return Certificate(
        mechanism=mechanism, source="003 Proposition 1",
        curve=DeltaProfile(lambda e: proposition_1_delta(e, kappa), f"003 Proposition 1, kappa = {kappa:.6g}"),
        assumptions={"noise": "gaussian", "lipschitz": L, "smoothness": float(smoothness),
                     "strong_convexity": float(strong_convexity), "step_size": float(step_size),
                     "noise_scale": s, "data_size": n, "index": i if index is not None else "all (worst i = n)",
                     "step_condition": "eta < 2/(beta+rho) (SEEDS §6 row 20)"},
        constants={"M": M, "kappa": kappa},
    )
