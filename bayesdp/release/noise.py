"""Secure Laplace noise for released numbers (safe against Mironov 2012's floating-point attack).

The released value is never ``x + float Laplace``.  Following Google's differential-privacy
library and OpenDP (LITERATURE.md §5.3), each coordinate is

    y = r * (round(x / r) + G),     G ~ discrete Laplace, P(G = k) ∝ exp(-|k| / b_grid),

on a power-of-two grid ``r`` with ``b_grid = (sensitivity + k r) / (epsilon r)`` (``k`` = number
of coordinates; ``sensitivity`` is the L1 sensitivity of the vector).  Rounding moves each
coordinate by at most ``r/2`` so the grid indices of two neighbouring values differ, in L1, by at
most ``sensitivity/r + k``: the grid rounding is charged to the sensitivity (docs/release.md §3).
The output is then a function of integers drawn exactly; pure ``epsilon``-DP holds exactly.

Randomness: all bits come from :mod:`secrets` (the OS CSPRNG).  No function here accepts a seed,
and neither NumPy's nor JAX's generator is ever used.  The integer sampler is Canonne, Kamath,
Steinke (NeurIPS 2020), Algorithm 2 (discrete Laplace via an exact geometric), in exact integer /
rational arithmetic (LITERATURE.md §5.2; OpenDP's ``cks20`` pseudocode).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..errors import AssumptionError, check_finite, positive

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


def discrete_laplace_pmf(y: np.ndarray | int, scale: float) -> np.ndarray:
    """``P(Y = y) = (1 - q)/(1 + q) q^|y|`` with ``q = exp(-1/scale)`` (for tests and docs).

    Args:
        y: integer(s).
        scale: b > 0.

    Returns:
        the probabilities, an array shaped like ``y``.

    Examples:
        >>> round(float(discrete_laplace_pmf(0, 1.0)), 6)   # (1 - e^-1) / (1 + e^-1) = tanh(1/2)
        0.462117
    """
    q = math.exp(-1.0 / scale)
    return (1.0 - q) / (1.0 + q) * np.power(q, np.abs(np.asarray(y, dtype=float)))


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
    return math.ldexp(1.0, ceil_log2 - GRANULARITY_PARAM_LOG2)


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
    out = np.empty(k, dtype=np.float64)
    for i, v in enumerate(x):
        q = v / r  # exact: r is a power of two (no overflow: |v| <= 1.8e308 and r >= 2^-1074)
        if not math.isfinite(q):
            raise AssumptionError(f"values[{i}] = {v:.6g} overflows the noise grid {r:.3g}; rescale the statistic")
        idx = int(np.rint(q))  # round half to even: still within r/2 of v/r... counted as r below
        out[i] = r * float(idx + sample_discrete_laplace(grid_scale))
    eff_f = float(eff)
    if eff_f < sens + k * r:  # float rounding of the report must not understate
        eff_f = math.nextafter(eff_f, math.inf)
    scale_f = float(eff / Fraction(eps))
    if Fraction(scale_f) < eff / Fraction(eps):
        scale_f = math.nextafter(scale_f, math.inf)
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
