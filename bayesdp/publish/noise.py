"""Secure Laplace and Gaussian noise for released numbers (safe against Mironov 2012's floating-point attack).

The released value is never ``x + float Laplace``.  Following Google's differential-privacy
library and OpenDP (LITERATURE.md §5.3), each coordinate is

    y = r * (round(x / r) + G),     G ~ discrete Laplace, P(G = k) ∝ exp(-|k| / b_grid),

on a power-of-two grid ``r`` with ``b_grid = (sensitivity + k r) / (epsilon r)`` (``k`` = number
of coordinates; ``sensitivity`` is the L1 sensitivity of the vector).  Rounding moves each
coordinate by at most ``r/2`` so the grid indices of two neighbouring values differ, in L1, by at
most ``sensitivity/r + k``: the grid rounding is charged to the sensitivity (docs/release.md §3).
The output is then a function of integers drawn exactly; pure ``epsilon``-DP holds exactly.

Gaussian noise (:func:`gaussian_release`) is the same construction with the discrete Gaussian
``P(G = k) ∝ exp(-k^2 / (2 sigma_grid^2))`` (Canonne, Kamath, Steinke 2020, Algorithm 3, built on the
discrete Laplace sampler): the grid indices of two neighbouring vectors differ, in L2, by at most
``(l2_sensitivity + sqrt(k) r)/r`` and the multivariate discrete Gaussian with that shift is
``rho``-zCDP with ``rho = shift^2 / (2 sigma_grid^2)`` (CKS20 Theorem 14; docs/release.md §3.2).

Randomness: all bits come from :mod:`secrets` (the OS CSPRNG).  No function here accepts a seed,
and neither NumPy's nor JAX's generator is ever used.  The integer samplers are Canonne, Kamath,
Steinke (NeurIPS 2020), Algorithm 2 (discrete Laplace via an exact geometric) and Algorithm 3
(discrete Gaussian by rejection from the discrete Laplace), in exact integer / rational arithmetic
(LITERATURE.md §5.2; OpenDP's ``cks20`` pseudocode).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..errors import AssumptionError, check_finite, positive
from ..curves import RDP
from ..exact import up

__all__ = ["laplace_release", "NoisyRelease", "laplace_interval_halfwidth", "gaussian_release", "GaussianNoisyRelease",
           "gaussian_calibration", "gaussian_interval_halfwidth", "zcdp_rho", "granularity", "sample_discrete_laplace",
           "sample_discrete_gaussian", "GRANULARITY_PARAM_LOG2"]

#: Google's granularity parameter: r = 2^ceil(log2(scale / 2^40)) (LITERATURE.md §5.3).
GRANULARITY_PARAM_LOG2 = 40


# ---------------------------------------------------------------------------
# Exact samplers (CKS20), all randomness from `secrets`
# ---------------------------------------------------------------------------


def _bernoulli(num: int, den: int) -> bool:
    """True with probability num/den exactly (0 <= num <= den, den >= 1)."""
    return secrets.randbelow(den) < num


def _bernoulli_exp1(num: int, den: int) -> bool:
    """True with probability exp(-num/den) for 0 <= num/den <= 1 (CKS20 Alg. 1, first part)."""
    k = 1
    while _bernoulli(num, den * k):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(num: int, den: int) -> bool:
    """True with probability exp(-num/den) for any num/den >= 0 (CKS20 Alg. 1)."""
    while num > den:
        if not _bernoulli_exp1(1, 1):
            return False
        num -= den
    return _bernoulli_exp1(num, den)


def sample_discrete_laplace(scale: Fraction | int) -> int:
    """One draw of the discrete Laplace law ``P(Y = y) ∝ exp(-|y| / scale)`` on the integers.

    CKS20 Algorithm 2 with ``scale = t/s`` (exact rational): draw ``U ~ Unif{0..t-1}`` until
    ``Bernoulli(exp(-U/t))`` succeeds, ``V ~ Geometric(1 - e^-1)``, ``X = (U + tV) // s``, a
    uniform sign, and reject (negative sign, X = 0).  Randomness from :mod:`secrets` only.

    Args:
        scale: the scale ``b > 0`` as an exact ``Fraction`` or ``int``.

    Returns:
        one integer draw.

    Raises:
        AssumptionError: scale <= 0.

    Examples:
        >>> from fractions import Fraction
        >>> isinstance(sample_discrete_laplace(Fraction(3, 2)), int)
        True
    """
    sc = Fraction(scale)
    if not sc > 0:
        raise AssumptionError(f"discrete Laplace scale = {float(sc):.6g} must be > 0")
    t, s = sc.numerator, sc.denominator
    while True:
        u = secrets.randbelow(t)
        if not _bernoulli_exp(u, t):
            continue
        v = 0
        while _bernoulli_exp1(1, 1):
            v += 1
        x = (u + t * v) // s
        negative = secrets.randbits(1) == 1
        if negative and x == 0:
            continue
        return -x if negative else x


# ---------------------------------------------------------------------------
# Grid and release
# ---------------------------------------------------------------------------


def granularity(nominal_scale: float) -> float:
    """Power-of-two grid ``r = 2^ceil(log2(nominal_scale / 2^40))`` (Google DP's choice).

    About 2^40 grid points per noise scale: rounding to the grid costs a relative
    ``2^-40`` of sensitivity.  Computed exactly with ``frexp`` (no float log).

    Args:
        nominal_scale: the Laplace scale sensitivity / epsilon, > 0.

    Returns:
        the grid step r, a power of two.

    Raises:
        AssumptionError: nominal_scale not a positive finite number.

    Examples:
        >>> granularity(1.0) == 2.0 ** -40
        True
    """
    b = positive("noise_scale", nominal_scale)
    mant, exp = math.frexp(b)  # b = mant * 2^exp, mant in [0.5, 1)
    # ceil(log2(b)) = exp - 1 if b is an exact power of two, else exp
    ceil_log2 = exp - 1 if mant == 0.5 else exp
    # never below the smallest subnormal 2^-1074 (2^-1083 underflowed to a zero grid: a ZeroDivisionError at
    # sensitivity / epsilon = 1e-320); a coarser grid is still exact, its rounding is charged to the sensitivity
    return math.ldexp(1.0, max(ceil_log2 - GRANULARITY_PARAM_LOG2, -1074))


@dataclass(frozen=True)
class NoisyRelease:
    """Result of :func:`laplace_release`.  ``values`` are the only numbers meant for publication.

    Attributes:
        values: the released numbers (multiples of ``grid``).
        sensitivity: L1 sensitivity of the statistic as proven (before rounding).
        effective_sensitivity: ``sensitivity + num_coords * grid`` (the rounding is charged).
        noise_scale: Laplace scale per coordinate, ``effective_sensitivity / epsilon``.
        epsilon: the pure-DP epsilon.
        grid: the grid step r.
        num_coords: number of released coordinates.

    Examples:
        >>> r = laplace_release([0.5], sensitivity=1.0, epsilon=2.0)
        >>> round(r.noise_scale, 6), round(r.noise_variance, 6)        # 1 / 2 and 2 * (1/2)^2
        (0.5, 0.5)
    """

    values: np.ndarray           # released numbers (multiples of ``grid``)
    sensitivity: float           # L1 sensitivity of the statistic as proven (before rounding)
    effective_sensitivity: float  # sensitivity + num_coords * grid (the rounding is charged)
    noise_scale: float           # Laplace scale per coordinate: effective_sensitivity / epsilon
    epsilon: float
    grid: float                  # r
    num_coords: int

    @property
    def noise_variance(self) -> float:
        """Variance per coordinate.  Discrete Laplace of grid scale b_g = scale/r has variance
        ``r^2 * 2q/(1-q)^2`` with ``q = exp(-1/b_g)``; this is <= ``2 scale^2`` (the continuous
        Laplace variance, SEEDS §6 row 10), and equal to it up to a relative 2^-80 at r = scale 2^-40."""
        z = self.grid / self.noise_scale
        return self.grid ** 2 * 2.0 * math.exp(-z) / math.expm1(-z) ** 2


def laplace_release(values: Sequence[float] | np.ndarray, sensitivity: float, epsilon: float) -> NoisyRelease:
    """Release ``values`` (a vector of L1 sensitivity ``sensitivity``) with pure ``epsilon``-DP.

    Each coordinate becomes ``r (round(x/r) + G)``, ``G`` discrete Laplace with grid scale
    ``(sensitivity + k r)/(epsilon r)``; the Laplace scale in value units is
    ``(sensitivity + k r)/epsilon``, exactly the proven sensitivity plus the documented grid
    rounding, over epsilon.  Noise from :mod:`secrets` only (no seed accepted).
    Proof: docs/release.md §3 (the discrete Laplace law is ``epsilon``-DP for integer inputs at L1
    distance ``(sensitivity + k r)/r``; rounding to the nearest grid point is 1/2-Lipschitz per
    coordinate up to ties, bounded by ``r`` per coordinate here).

    Args:
        values: the non-private numbers (finite), one release of ``len(values)`` coordinates.
        sensitivity: their proven L1 sensitivity, > 0.
        epsilon: > 0.

    Returns:
        a :class:`NoisyRelease`; only its ``values`` are meant for publication.

    Raises:
        AssumptionError: no values, a non-finite value, sensitivity or epsilon not > 0, or a value too
            large for the grid.

    Examples:
        >>> r = laplace_release([0.25, -1.5], sensitivity=0.1, epsilon=1.0)
        >>> r.num_coords, r.grid == 2.0 ** -43, r.noise_scale == 0.1 + 2 * r.grid   # r = 2^ceil(log2(0.1 / 2^40))
        (2, True, True)
        >>> all(float(v / r.grid).is_integer() for v in r.values)   # noise is random; values on the grid
        True
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise AssumptionError("values is empty; pass at least one number to release")
    for i, v in enumerate(x):
        check_finite(f"values[{i}]", v)
    sens = positive("sensitivity", sensitivity, "a zero sensitivity needs no noise; check the statistic")
    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    k = int(x.size)
    nominal = sens / eps
    r = granularity(nominal)
    # exact rational scale in grid units: (sens + k r) / (eps r)
    eff = Fraction(sens) + k * Fraction(r)
    grid_scale = eff / (Fraction(eps) * Fraction(r))
    scale_f = up(eff / Fraction(eps))
    if not math.isfinite(scale_f):          # before any draw (float() of it raised OverflowError after drawing)
        raise AssumptionError(f"the noise scale (sensitivity + grid rounding) / epsilon = ({sens:.6g} + {k} * {r:.3g})"
                              f" / {eps:.6g} is beyond the float range; rescale the statistic or raise epsilon")
    out = np.empty(k, dtype=np.float64)
    for i, v in enumerate(x):
        q = v / r  # exact: r is a power of two (no overflow: |v| <= 1.8e308 and r >= 2^-1074)
        if not math.isfinite(q):
            raise AssumptionError(f"values[{i}] = {v:.6g} overflows the noise grid {r:.3g}; rescale the statistic")
        idx = int(np.rint(q))  # round half to even: still within r/2 of v/r... counted as r below
        out[i] = r * float(idx + sample_discrete_laplace(grid_scale))
    # float rounding of the report must not understate: the exact sum rounded up (a float comparison with
    # sens + k * r compares two roundings of the same number, which never differ)
    eff_f = up(eff)
    return NoisyRelease(values=out, sensitivity=sens, effective_sensitivity=eff_f, noise_scale=scale_f,
                        epsilon=eps, grid=r, num_coords=k)


def laplace_interval_halfwidth(noise_scale: float, level: float = 0.95) -> float:
    """Half-width t with ``P(|L| > t) = 1 - level`` for continuous Laplace(scale): ``t = b log(1/(1-level))``.

    For the discrete Laplace on the grid, ``P(|r G| > t) <= P(|G| >= ceil(t/r))`` is
    ``2q^n/(1+q)`` with ``n = ceil(t/r)``, ``q = e^{-r/b}``, which is <= ``e^{-t/b}`` up to a
    relative 2^-40 (docs/release.md §4); the interval is widened by one grid step to cover it.

    Args:
        noise_scale: the Laplace scale b > 0.
        level: coverage in (0, 1).

    Returns:
        the half-width ``b log(1/(1 - level))`` plus one grid step.

    Raises:
        AssumptionError: noise_scale not > 0 or level not in (0, 1).

    Examples:
        >>> round(laplace_interval_halfwidth(1.0, 0.95), 6)    # log(20)
        2.995732
    """
    b = positive("noise_scale", noise_scale)
    if not 0.0 < level < 1.0:
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    return b * math.log(1.0 / (1.0 - level)) + granularity(b)


# ---------------------------------------------------------------------------
# Gaussian noise: the discrete Gaussian of CKS20 on the same kind of grid
# ---------------------------------------------------------------------------


def sample_discrete_gaussian(sigma2: Fraction | int) -> int:
    """One draw of the discrete Gaussian ``P(Y = y) ∝ exp(-y^2 / (2 sigma2))`` on the integers.

    CKS20 Algorithm 3, exact: ``t = floor(sigma) + 1``; repeat ``Y ~ discrete Laplace(scale t)``,
    ``C ~ Bernoulli(exp(-(|Y| - sigma2/t)^2 / (2 sigma2)))`` until ``C``; return ``Y``.  ``sigma2`` is an exact
    rational; ``floor(sqrt(p/q)) = isqrt(p // q)``.  Randomness from :mod:`secrets` only.

    Args:
        sigma2: the variance parameter ``sigma^2 > 0`` as an exact ``Fraction`` or ``int``.

    Returns:
        one integer draw.

    Raises:
        AssumptionError: sigma2 <= 0.

    Examples:
        >>> isinstance(sample_discrete_gaussian(Fraction(9, 4)), int)
        True
    """
    s2 = Fraction(sigma2)
    if not s2 > 0:
        raise AssumptionError(f"discrete Gaussian sigma^2 = {float(s2):.6g} must be > 0")
    t = math.isqrt(s2.numerator // s2.denominator) + 1
    while True:
        y = sample_discrete_laplace(t)
        dev = abs(y) - s2 / t
        x = dev * dev / (2 * s2)
        if _bernoulli_exp(x.numerator, x.denominator):
            return y


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ``rho`` (to a relative 1e-12) whose zCDP curve gives at most ``epsilon`` at ``delta``:
    ``RDP.linear(rho).epsilon(delta) <= epsilon`` (CKS20 Proposition 12 conversion, :mod:`bayesdp.curves`).

    Args:
        epsilon: > 0.
        delta: in (0, 1).

    Returns:
        rho > 0.

    Raises:
        AssumptionError: epsilon not > 0 or delta not in (0, 1).

    Examples:
        >>> from bayesdp.curves import RDP
        >>> rho = zcdp_rho(1.0, 1e-5)
        >>> RDP.linear(rho).epsilon(1e-5) <= 1.0 < RDP.linear(rho * (1 + 1e-9)).epsilon(1e-5)
        True
    """

    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise AssumptionError(f"delta = {delta!r} must be in (0, 1) for Gaussian noise (a zCDP release has no pure "
                              "epsilon); pass e.g. delta=1e-6 or use Laplace noise")
    d = float(delta)
    f = lambda r: RDP.linear(r).epsilon(d)  # noqa: E731 - increasing in r
    lo, hi = 0.0, eps
    while f(hi) <= eps:
        lo, hi = hi, 2.0 * hi
    if lo == 0.0:
        # bracket from above by halving (rho can be hundreds of halvings below epsilon: the conversion's outward
        # rounding adds ~1e-13 to every epsilon above the Bretagnolle-Huber region, so a smaller epsilon is met
        # only there, near rho = delta^2; bisection from [0, epsilon] ran out of steps before reaching it)
        while hi > 0.0 and f(hi) > eps:
            hi *= 0.5
        if hi > 0.0:
            lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) <= eps:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    if not lo > 0:
        raise AssumptionError(f"epsilon = {eps:.6g} is too small for Gaussian noise at delta = {d:.3g}: no noise "
                              "scale gives it; pass a larger epsilon or delta")
    return lo


def _sqrt_up(k: int) -> Fraction:
    """A rational upper bound on sqrt(k), exact when k is a perfect square (a double, pushed up)."""
    r = math.isqrt(k)
    if r * r == k:
        return Fraction(r)
    f = math.sqrt(k)
    while Fraction(f) ** 2 < k:
        f = math.nextafter(f, math.inf)
    return Fraction(f)


@dataclass(frozen=True)
class GaussianNoisyRelease:
    """Result of :func:`gaussian_release`.  ``values`` are the only numbers meant for publication.

    Attributes:
        values: the released numbers (multiples of ``grid``).
        sensitivity: L2 sensitivity of the statistic as proven (before rounding).
        effective_sensitivity: ``sensitivity + grid_rounding`` (the L2 rounding ``sqrt(k) r`` is charged).
        grid_rounding: ``sqrt(k) r`` rounded up (a double).
        noise_scale: sigma per coordinate in value units (``r * sigma_grid``, a double, exact).
        rho: the zCDP parameter ``effective_sensitivity^2 / (2 sigma^2)`` (rounded up).
        epsilon: the epsilon at ``delta`` the noise was calibrated to (``RDP.linear(rho).epsilon(delta)``).
        delta: the conversion delta.
        grid: the grid step r.
        num_coords: number of released coordinates.

    Examples:
        >>> r = gaussian_release([0.5], l2_sensitivity=1.0, epsilon=1.0, delta=1e-5)
        >>> r.rho <= zcdp_rho(1.0, 1e-5), round(r.noise_variance, 6) == round(r.noise_scale ** 2, 6)
        (True, True)
    """

    values: np.ndarray
    sensitivity: float
    effective_sensitivity: float
    grid_rounding: float
    noise_scale: float
    rho: float
    epsilon: float
    delta: float
    grid: float
    num_coords: int

    @property
    def noise_variance(self) -> float:
        """Variance per coordinate: ``<= sigma^2`` (the discrete Gaussian's variance is below the continuous
        one's, CKS20; equal to it up to a relative ``e^{-2 pi^2 sigma_grid^2}``, negligible at sigma_grid ~ 2^40)."""
        return self.noise_scale ** 2


def gaussian_calibration(l2_sensitivity: float, epsilon: float, delta: float, num_coords: int) -> dict:
    """Everything :func:`gaussian_release` draws with, computed before any noise (the ledger entry needs it):
    ``rho`` (:func:`zcdp_rho`), the grid ``r = granularity(sensitivity / sqrt(2 rho))``, the charged rounding
    ``g >= sqrt(k) r`` and the smallest double ``sigma`` with ``(sensitivity + g)^2 <= 2 rho sigma^2`` exactly.

    Args:
        l2_sensitivity: the proven L2 sensitivity, > 0.
        epsilon: > 0.
        delta: in (0, 1).
        num_coords: k, the number of released coordinates.

    Returns:
        ``{"rho_target", "rho", "grid", "grid_rounding", "sigma", "sigma2_grid" (Fraction),
        "effective_sensitivity", "epsilon", "delta"}``.

    Raises:
        AssumptionError: a sensitivity or epsilon not > 0, delta not in (0, 1).

    Examples:
        >>> c = gaussian_calibration(1.0, 1.0, 1e-5, 1)
        >>> c["rho_target"] == zcdp_rho(1.0, 1e-5), c["grid_rounding"] == c["grid"]      # sqrt(1) r
        (True, True)
        >>> round(c["sigma"], 4)                           # (1 + r) / sqrt(2 rho), rho = 0.0305566
        4.0451
        >>> (1.0 + c["grid_rounding"]) ** 2 / (2 * c["sigma"] ** 2) <= c["rho"] <= c["rho_target"]
        True
    """
    sens = positive("l2_sensitivity", l2_sensitivity, "a zero sensitivity needs no noise; check the statistic")
    k = int(num_coords)
    rho_t = zcdp_rho(epsilon, delta)
    r = granularity(sens / math.sqrt(2.0 * rho_t))
    R = Fraction(r)
    root_k = _sqrt_up(k)
    g = float(root_k * R)
    while Fraction(g) < root_k * R:
        g = math.nextafter(g, math.inf)
    eff = Fraction(sens) + Fraction(g)
    rho_F = Fraction(rho_t)
    sigma = up(eff) / math.sqrt(2.0 * rho_t)
    if not math.isfinite(sigma) or not r > 0:   # Fraction(inf) below raised OverflowError
        raise AssumptionError(f"the noise scale (l2_sensitivity + grid rounding) / sqrt(2 rho) = ({sens:.6g} + {g:.3g}) "
                              f"/ sqrt(2 * {rho_t:.6g}) is beyond the float range; rescale the statistic or raise "
                              "epsilon")
    while eff * eff > 2 * rho_F * Fraction(sigma) ** 2:
        sigma = math.nextafter(sigma, math.inf)
        if not math.isfinite(sigma):
            raise AssumptionError(f"the noise scale for l2_sensitivity {sens:.6g} at rho = {rho_t:.6g} is beyond "
                                  "the float range; rescale the statistic or raise epsilon")
    rho_exact = eff * eff / (2 * Fraction(sigma) ** 2)          # <= rho_t
    rho = float(rho_exact)
    if Fraction(rho) < rho_exact:
        rho = math.nextafter(rho, math.inf)
    sigma_grid = Fraction(sigma) / R                             # exact: r is a power of two
    eff_f = up(eff)
    return {"rho_target": rho_t, "rho": rho, "grid": r, "grid_rounding": g, "sigma": sigma,
            "sigma2_grid": sigma_grid * sigma_grid, "effective_sensitivity": eff_f, "epsilon": float(epsilon),
            "delta": float(delta)}


def gaussian_release(values: Sequence[float] | np.ndarray, l2_sensitivity: float, epsilon: float,
                     delta: float) -> GaussianNoisyRelease:
    """Release ``values`` (a vector of L2 sensitivity ``l2_sensitivity``) with ``rho``-zCDP, hence
    ``(epsilon, delta)``-DP, by the discrete Gaussian on a power-of-two grid.

    Each coordinate becomes ``r (round(x/r) + G)``, ``G`` discrete Gaussian with ``sigma_grid = sigma / r``;
    the grid indices of neighbouring vectors differ by at most ``(l2_sensitivity + sqrt(k) r)/r`` in L2
    (``|round(u) - u| <= 1/2`` per coordinate on each side), so CKS20 Theorem 14 gives
    ``rho = (l2_sensitivity + sqrt(k) r)^2 / (2 sigma^2)``-zCDP, with ``rho`` the largest whose CKS20
    Proposition 12 conversion is at most ``epsilon`` at ``delta`` (docs/release.md §3.2).  Noise from
    :mod:`secrets` only (no seed accepted).

    Args:
        values: the non-private numbers (finite).
        l2_sensitivity: their proven L2 sensitivity, > 0.
        epsilon: > 0.
        delta: in (0, 1) (Gaussian noise has no pure epsilon).

    Returns:
        a :class:`GaussianNoisyRelease`; only its ``values`` are meant for publication.

    Raises:
        AssumptionError: no values, a non-finite value, a sensitivity or epsilon not > 0, delta not in (0, 1).

    Examples:
        >>> r = gaussian_release([0.25, -1.5], l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
        >>> r.num_coords, all(float(v / r.grid).is_integer() for v in r.values)
        (2, True)
        >>> (0.1 + r.grid_rounding) ** 2 / (2 * r.noise_scale ** 2) <= r.rho
        True
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise AssumptionError("values is empty; pass at least one number to release")
    for i, v in enumerate(x):
        check_finite(f"values[{i}]", v)
    cal = gaussian_calibration(l2_sensitivity, epsilon, delta, x.size)
    r = cal["grid"]
    out = np.empty(x.size, dtype=np.float64)
    for i, v in enumerate(x):
        q = v / r
        if not math.isfinite(q):
            raise AssumptionError(f"values[{i}] = {v:.6g} overflows the noise grid {r:.3g}; rescale the statistic")
        out[i] = r * float(int(np.rint(q)) + sample_discrete_gaussian(cal["sigma2_grid"]))
    return GaussianNoisyRelease(values=out, sensitivity=float(l2_sensitivity),
                                effective_sensitivity=cal["effective_sensitivity"], grid_rounding=cal["grid_rounding"],
                                noise_scale=cal["sigma"], rho=cal["rho"], epsilon=float(epsilon), delta=float(delta),
                                grid=r, num_coords=int(x.size))


def gaussian_interval_halfwidth(sigma: float, grid: float, level: float = 0.95) -> float:
    """Half-width h with ``P(|r G + (r round(x/r) - x)| > h) <= 1 - level`` for the grid noise of
    :func:`gaussian_release` (G discrete Gaussian, ``sigma = r sigma_grid``): ``h = sigma z + 2 r`` with
    ``2 c Phi_bar(z) = 1 - level`` and ``c = 1 / (1 - 1/(sqrt(2 pi) sigma_grid))`` (docs/release.md §4: the
    discrete tail ``P(G >= m) <= c Phi_bar((m - 1)/sigma_grid)``).

    Args:
        sigma: the noise scale in value units, > 0.
        grid: the grid step r, with ``sigma / r > 1``.
        level: coverage in (0, 1).

    Returns:
        the half-width.

    Raises:
        AssumptionError: sigma or grid not > 0, ``sigma/grid <= 1``, or level not in (0, 1).

    Examples:
        >>> round(gaussian_interval_halfwidth(1.0, 2.0 ** -40, 0.95), 6)     # the normal quantile 1.959964
        1.959964
    """
    from scipy.stats import norm

    sg = positive("noise_scale", sigma) / positive("grid", grid)
    if not sg > 1.0:
        raise AssumptionError(f"noise_scale / grid = {sg:.6g} must be > 1 (the grid is far finer than the noise)")
    if not 0.0 < level < 1.0:
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    c = 1.0 / (1.0 - 1.0 / (math.sqrt(2.0 * math.pi) * sg))
    z = float(norm.isf((1.0 - level) / (2.0 * c))) * (1.0 + 1e-12)
    return sigma * z + 2.0 * grid
