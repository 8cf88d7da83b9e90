"""Privacy curves: one small set of types every certificate in bayesdp uses.

NumPy/SciPy only (no JAX).  All conversions work in log space and return
*upper bounds*: an epsilon (or delta) that is at least the true one for the
curve.  Where a conversion optimises over a free parameter (the Renyi order
alpha), every value of that parameter gives a valid bound, so the optimiser
affects tightness only, never soundness.

Types
-----
[`RDP`][bayesdp.curves.RDP]        a Renyi-DP curve eps(alpha), alpha > 1: a sum of linear
                    terms ``kappa * alpha`` and arbitrary callables.
[`GDP`][bayesdp.curves.GDP]        mu-Gaussian DP (Dong, Roth, Su 2022).
[`ApproxDP`][bayesdp.curves.ApproxDP]   a single (eps, delta) pair; ``ApproxDP(eps, 0)`` is pure DP.
[`DeltaProfile`][bayesdp.curves.DeltaProfile]  an arbitrary non-increasing delta(eps) (e.g. 003's
                    hockey-stick bounds).

Conversions (see docs/curves.md for the derivations and citations)
------------------------------------------------------------------
* GDP -> (eps, delta): exact, Dong–Roth–Su Cor. 2.13
  ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.
* RDP -> (eps, delta): Canonne–Kamath–Steinke 2020 Prop. 12
  ``eps = tau + log(1 - 1/alpha) - log(delta*alpha)/(alpha - 1)``, minimised
  over alpha; Mironov 2017 Prop. 3 ``eps = tau + log(1/delta)/(alpha - 1)`` as
  the documented fallback (``method="mironov"``); for curves with a KL limit
  also ``delta <= sqrt(1 - exp(-KL))`` (Bretagnolle–Huber).
* (eps0, delta0)-DP -> delta(eps) for eps < eps0: the region of the
  randomised-response pair (Kairouz–Oh–Viswanath 2015), derived in docs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .errors import AssumptionError, check_finite, nonnegative, probability_open
from .exact import exact as _exact, exp_up, mp_up, round_up, sqrt_exact_up, up as _up

__all__ = ["PrivacyCurve", "RDP", "GDP", "ApproxDP", "DeltaProfile", "compose",
           "gdp_log_delta", "REPORT_ALPHAS"]

#: Renyi orders listed in every certificate's JSON.
REPORT_ALPHAS: tuple[float, ...] = (1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)

# Grid of (alpha - 1) used by numeric optimisation over alpha for general curves.
_ALPHA_M1_GRID = np.concatenate([np.logspace(-4, 6, 241)])


def _check_delta(delta: float) -> float:
    return probability_open("delta", delta, "pass a delta strictly between 0 and 1, e.g. 1e-5")


def _check_epsilon(epsilon: float) -> float:
    e = check_finite("epsilon", epsilon)
    if e < 0:
        raise AssumptionError(f"epsilon = {e:.6g} must be >= 0; pass a non-negative epsilon")
    return e


class PrivacyCurve:
    """Interface shared by all curves ([`RDP`][bayesdp.curves.RDP], [`GDP`][bayesdp.curves.GDP],
    [`ApproxDP`][bayesdp.curves.ApproxDP], [`DeltaProfile`][bayesdp.curves.DeltaProfile]).  Subclasses are
    immutable.

    Every query returns an upper bound: ``epsilon(delta)`` is an epsilon at least the true one of the
    curve, ``delta(epsilon)`` a delta at least the true one.

    Examples:
        >>> from bayesdp.curves import GDP
        >>> curve = GDP(1.0)
        >>> round(curve.epsilon(1e-5), 4), curve.gdp_mu, curve.has_rdp
        (4.3772, 1.0, True)
    """

    kind: str = "curve"

    # -- queries ---------------------------------------------------------
    def epsilon(self, delta: float) -> float:  # pragma: no cover - interface
        """An epsilon such that the curve implies (epsilon, delta)-DP.

        Args:
            delta: in (0, 1).

        Returns:
            epsilon >= 0 (``math.inf`` when the curve gives no finite epsilon at this delta).

        Raises:
            AssumptionError: delta is not in (0, 1).

        Examples:
            >>> round(GDP(1.0).epsilon(1e-5), 4)
            4.3772
        """
        raise NotImplementedError

    def delta(self, epsilon: float) -> float:  # pragma: no cover - interface
        """A delta such that the curve implies (epsilon, delta)-DP.

        Args:
            epsilon: >= 0.

        Returns:
            delta in [0, 1].

        Raises:
            AssumptionError: epsilon is negative or not finite.

        Examples:
            >>> round(GDP(1.0).delta(0.0), 6)        # TV(N(0, 1), N(1, 1)) = 2 Phi(1/2) - 1
            0.382925
        """
        raise NotImplementedError

    def rdp(self, alpha: float) -> float:
        """Renyi-DP value at order ``alpha`` (``math.inf`` when not available).

        Args:
            alpha: the Renyi order > 1.

        Returns:
            eps(alpha), or ``math.inf``.

        Examples:
            >>> GDP(1.0).rdp(2.0), ApproxDP(1.0, 1e-5).rdp(2.0)
            (1.0, inf)
        """
        return math.inf

    @property
    def gdp_mu(self) -> float | None:
        """mu of a mu-GDP guarantee, ``None`` for curves that are not GDP.

        Examples:
            >>> GDP(0.5).gdp_mu, RDP.linear(0.5).gdp_mu
            (0.5, None)
        """
        return None

    @property
    def has_rdp(self) -> bool:
        """Whether [`rdp`][bayesdp.curves.PrivacyCurve.rdp] gives finite values (a Renyi-DP curve is known).

        Examples:
            >>> GDP(1.0).has_rdp, ApproxDP(1.0).has_rdp, ApproxDP(1.0, 1e-5).has_rdp
            (True, True, False)
        """
        return False

    def rdp_list(self, alphas: Sequence[float] = REPORT_ALPHAS) -> list[list[float]] | None:
        """``[[alpha, eps(alpha)], ...]`` at ``alphas`` (``None`` in place of infinity), or ``None``
        without an RDP curve: the form certificates' JSON uses.

        Args:
            alphas: the Renyi orders (default [`REPORT_ALPHAS`][bayesdp.curves.REPORT_ALPHAS]).

        Returns:
            the list, or ``None``.

        Examples:
            >>> GDP(1.0).rdp_list([2.0, 4.0])
            [[2.0, 1.0], [4.0, 2.0]]
        """
        if not self.has_rdp:
            return None
        return [[float(a), _json_float(self.rdp(a))] for a in alphas]

    def describe(self) -> str:  # pragma: no cover - overridden
        """One line naming the curve, e.g. ``'1-GDP'``.

        Returns:
            the description.

        Examples:
            >>> GDP(1.0).describe(), ApproxDP(1.0, 1e-5).describe()
            ('1-GDP', '(1, 1e-05)-DP')
        """
        return self.kind

    def to_dict(self) -> dict:
        """JSON-ready summary: kind, description, GDP mu and the RDP list.

        Returns:
            ``{"kind", "description", "gdp_mu", "rdp"}``.

        Examples:
            >>> d = GDP(0.5).to_dict()
            >>> d["kind"], d["description"], d["rdp"][1]           # alpha = 2: 2 * 0.5^2 / 2
            ('gdp', '0.5-GDP', [2.0, 0.25])
        """
        return {"kind": self.kind, "description": self.describe(), "gdp_mu": self.gdp_mu,
                "rdp": self.rdp_list()}


def _golden_min(f: Callable[[float], float], lo: float, hi: float, xatol: float = 1e-10) -> float:
    """The smallest finite value of ``f`` at the points a golden-section search of ``[lo, hi]`` evaluates (to
    ``xatol``; inf when none is finite).  Every value returned is ``f`` at some point of ``[lo, hi]``: where ``f``
    is a valid bound at every point (an epsilon or a delta at any Renyi order), so is the result, whatever ``f``'s
    shape; unimodality only makes it the minimum.  (Not scipy.optimize: its import is 0.1-0.5 s of a release.)

    Examples:
        >>> abs(_golden_min(lambda t: (t - 1.0) ** 2 + 2.0, -5.0, 5.0) - 2.0) < 1e-18
        True
    """
    def val(t: float) -> float:
        v = f(t)
        return v if math.isfinite(v) else math.inf

    r = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - r * (b - a), a + r * (b - a)
    fc, fd = val(c), val(d)
    best = min(fc, fd)
    while b - a > xatol and a < c < d < b:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - r * (b - a)
            fc = val(c)
            best = min(best, fc)
        else:
            a, c, fc = c, d, fd
            d = a + r * (b - a)
            fd = val(d)
            best = min(best, fd)
    return best


def _json_float(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------------------
# Renyi DP
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _FnTerm:
    fn: Callable[[float], float]
    label: str


@dataclass(frozen=True)
class RDP(PrivacyCurve):
    """Renyi-DP curve ``eps(alpha) = alpha * kappa + sum_j f_j(alpha)``.

    ``kappa`` collects all linear terms (the common case: 004's bounds are
    ``alpha * C / 4``; a mu-GDP mechanism has ``kappa = mu**2 / 2``).  Arbitrary
    curves are given as callables ``f(alpha)`` that must be valid RDP bounds for
    every alpha > 1 (return ``math.inf`` where no bound is known).

    Args:
        kappa: the linear coefficient, >= 0.
        terms: further terms (use [`from_function`][bayesdp.curves.RDP.from_function]).

    Raises:
        AssumptionError: kappa is negative or not finite.

    Examples:
        >>> from bayesdp.curves import RDP
        >>> curve = RDP.linear(0.5)            # e.g. 1-GDP: kappa = mu^2 / 2
        >>> curve.rdp(2.0), curve.is_linear
        (1.0, True)
        >>> round(curve.epsilon(1e-5), 4)
        4.7284
    """

    kappa: float = 0.0
    terms: tuple[_FnTerm, ...] = ()
    kind: str = field(default="rdp", init=False)

    def __post_init__(self):
        k = nonnegative("kappa (linear RDP coefficient)", self.kappa)
        object.__setattr__(self, "kappa", k)

    @staticmethod
    def linear(kappa: float) -> "RDP":
        """``eps(alpha) = kappa * alpha`` for every alpha > 1.

        Args:
            kappa: the slope, >= 0 (a mu-GDP mechanism has kappa = mu^2 / 2; 004's bounds kappa = C / 4).

        Returns:
            the linear curve.

        Raises:
            AssumptionError: kappa negative or not finite.

        Examples:
            >>> RDP.linear(0.25).rdp(4.0)
            1.0
        """
        return RDP(kappa=kappa)

    @staticmethod
    def from_function(fn: Callable[[float], float], label: str = "custom") -> "RDP":
        """A curve from a callable ``fn(alpha)``, which must be a valid RDP bound at every alpha > 1.

        Args:
            fn: alpha -> eps(alpha); ``math.inf`` where no bound is known.
            label: shown by [`describe`][bayesdp.curves.RDP.describe].

        Returns:
            the curve (conversions optimise over alpha numerically).

        Examples:
            >>> RDP.from_function(lambda a: 0.1 * a * a, "0.1 alpha^2").rdp(2.0)
            0.4
        """
        return RDP(kappa=0.0, terms=(_FnTerm(fn, label),))

    @property
    def is_linear(self) -> bool:
        """Whether the curve is ``kappa * alpha`` only (closed-form conversions apply).

        Examples:
            >>> RDP.linear(0.5).is_linear, RDP.from_function(lambda a: 0.1 * a * a).is_linear
            (True, False)
        """
        return not self.terms

    @property
    def has_rdp(self) -> bool:
        """Always ``True``.

        Examples:
            >>> RDP.linear(0.5).has_rdp
            True
        """
        return True

    def rdp(self, alpha: float) -> float:
        """eps(alpha).

        Args:
            alpha: the Renyi order > 1.

        Returns:
            ``kappa * alpha`` plus every term at alpha.

        Raises:
            AssumptionError: alpha <= 1, or a term returned NaN.

        Examples:
            >>> (RDP.linear(0.5) + RDP.from_function(lambda a: 1.0, "1")).rdp(2.0)
            2.0
        """
        a = float(alpha)
        if not a > 1:
            raise AssumptionError(f"alpha = {a:.6g} must be > 1 (Renyi order); pass alpha > 1")
        total = self.kappa * a
        for t in self.terms:
            v = float(t.fn(a))
            if math.isnan(v):
                raise AssumptionError(f"RDP term {t.label!r} returned NaN at alpha = {a:.6g}")
            total += v
        return total

    def __add__(self, other: "RDP") -> "RDP":
        """Composition: the slopes add (their sum rounded up: a float sum can land below it) and the terms join."""
        return RDP(kappa=_up(_exact(self.kappa) + _exact(other.kappa)), terms=self.terms + other.terms)

    def describe(self) -> str:
        """``'RDP eps(alpha) = ...'`` with the linear coefficient and the terms' labels.

        Returns:
            the description.

        Examples:
            >>> (RDP.linear(0.5) + RDP.from_function(lambda a: 1.0, "1")).describe()
            'RDP eps(alpha) = 0.5*alpha + 1'
        """
        parts = []
        if self.kappa or not self.terms:
            parts.append(f"{self.kappa:.6g}*alpha")
        parts += [t.label for t in self.terms]
        return "RDP eps(alpha) = " + " + ".join(parts)

    # -- conversions -----------------------------------------------------
    def _eps_at(self, alpha: float, log1_delta: float, method: str) -> float:
        if not alpha > 1.0:   # 1 + tiny rounds to 1 for huge curves: no bound at that order
            return math.inf
        tau = self.rdp(alpha)
        if not math.isfinite(tau):
            return math.inf
        am1 = alpha - 1.0   # exact below 2^53
        ulp = math.ulp
        if method == "mironov":
            q = log1_delta / am1
            return tau + q + 4.0 * (ulp(tau) + ulp(q))
        # CKS20 Prop. 12:  tau + log(1 - 1/alpha) + (log(1/delta) - log(alpha)) / (alpha - 1), with log(1 - 1/alpha)
        # = log(am1) - log(alpha): log1p(-1/alpha) lost ulp(1)/am1 to the rounding of 1/alpha (for delta = 0.999999 the
        # optimum has am1 ~ 7e-5, and epsilon came out 2.8e-11 below the exact infimum), and every term's rounding
        # error is added (the sum cancels)
        la = math.log(alpha)
        l1 = math.log(am1) - la
        q = (log1_delta - la) / am1
        err = ulp(tau) + ulp(l1) + ulp(q) + (ulp(log1_delta) + ulp(la)) / am1
        return tau + l1 + q + 4.0 * err

    def epsilon(self, delta: float, method: str = "cks") -> float:
        """Smallest eps (over alpha) such that the curve implies (eps, delta)-DP.

        Args:
            delta: in (0, 1).
            method: ``"cks"`` (Canonne-Kamath-Steinke 2020 Prop. 12, the default; for linear curves
                also the Bretagnolle-Huber bound) or ``"mironov"`` (Mironov 2017 Prop. 3).

        Returns:
            epsilon >= 0, an upper bound.

        Raises:
            AssumptionError: delta not in (0, 1), or an unknown method.

        Examples:
            >>> round(RDP.linear(0.5).epsilon(1e-5, method="mironov"), 4)
            5.2985
        """
        d = _check_delta(delta)
        if method not in ("cks", "mironov"):
            raise AssumptionError(f"method = {method!r} must be 'cks' or 'mironov'")
        if self.is_linear:   # a pure function of (kappa, delta, method): memoised (issue 24)
            return _linear_rdp_epsilon(self.kappa, d, method)
        log1_delta = -math.log(d)
        return max(0.0, self._outward(self._minimise(lambda a: self._eps_at(a, log1_delta, method)), log1_delta))

    def _linear_epsilon(self, d: float, method: str) -> float:
        """:meth:`epsilon` of the linear curve ``kappa * alpha`` (closed forms and one bounded minimisation)."""
        log1_delta = -math.log(d)
        k = self.kappa
        if k == 0.0:
            return 0.0
        mironov = k + 2.0 * math.sqrt(k * log1_delta)
        if method == "mironov":   # rounded outward like every other conversion (an upper bound)
            return self._outward(mironov, log1_delta)
        if d >= round_up(math.sqrt(-math.expm1(-k))):  # Bretagnolle–Huber: delta(0) <= sqrt(1 - e^-KL)
            return 0.0
        a_star = 1.0 + math.sqrt(log1_delta / k)
        best = min(mironov, self._eps_at(a_star, log1_delta, "cks"))
        f = lambda t: self._eps_at(1.0 + math.exp(t), log1_delta, "cks")  # noqa: E731
        t0 = 0.5 * (math.log(log1_delta) - math.log(k))   # log(a_star - 1) without rounding a_star to 1
        best = min(best, _golden_min(f, t0 - 6.0, t0 + 6.0))
        return max(0.0, self._outward(best, log1_delta))

    @staticmethod
    def _outward(eps: float, log1_delta: float) -> float:
        """eps computed as a sum of a few terms of size <= max(eps, log(1/delta)), each within a few
        ulps: pushed up relatively and by 8 ulps of the largest term (cancellation)."""
        if not math.isfinite(eps):
            return eps
        return round_up(eps) + 8.0 * math.ulp(max(1.0, log1_delta))

    @staticmethod
    def _minimise(objective: Callable[[float], float]) -> float:
        vals = np.array([objective(1.0 + x) for x in _ALPHA_M1_GRID])
        if not np.isfinite(vals).any():
            return math.inf
        i = int(np.nanargmin(np.where(np.isfinite(vals), vals, np.inf)))
        best = float(vals[i])
        lo = math.log(_ALPHA_M1_GRID[max(i - 1, 0)])
        hi = math.log(_ALPHA_M1_GRID[min(i + 1, len(_ALPHA_M1_GRID) - 1)])

        def finite(t: float) -> float:  # the optimiser's parabolic steps need finite values
            v = objective(1.0 + math.exp(t))
            return v if math.isfinite(v) else 1e300

        if hi > lo:
            best = min(best, _golden_min(finite, lo, hi))
        return best

    def _log_delta_at(self, alpha: float, eps: float) -> float:
        if not alpha > 1.0:
            return math.inf
        tau = self.rdp(alpha)
        if not math.isfinite(tau):
            return math.inf
        # CKS20 Prop. 12 (<= Mironov's exp(-(alpha-1)(eps-tau)) for every alpha).  Each term is within a few ulps;
        # the sum is pushed up by 8 ulps of the largest intermediate (cancellation), as in _outward: an error of
        # an ulp of log(delta) ~ -375 is a relative 6e-14 in delta, below the exact value without this
        am1, l1 = alpha - 1.0, math.log1p(-1.0 / alpha)
        size = am1 * (abs(tau) + abs(eps) + abs(l1)) + math.log(alpha)
        v = am1 * (tau - eps + l1) - math.log(alpha)
        if v == -math.inf:   # below -1.8e308 (the margin, an ulp of an infinite size, would make it NaN)
            return -1e300
        return v + 8.0 * math.ulp(max(1.0, size))

    def delta(self, epsilon: float) -> float:
        """Smallest delta (over alpha, CKS20 Prop. 12; Bretagnolle-Huber for linear curves) such that
        the curve implies (epsilon, delta)-DP.

        Args:
            epsilon: >= 0.

        Returns:
            delta in [0, 1], rounded up.

        Raises:
            AssumptionError: epsilon negative or not finite.

        Examples:
            >>> round(RDP.linear(0.5).delta(4.0), 6)
            0.000196
        """
        e = _check_epsilon(epsilon)
        if self.is_linear:
            k = self.kappa
            if k == 0.0:
                return 0.0
            # Bretagnolle–Huber: delta(eps) <= delta(0) = TV <= sqrt(1 - exp(-KL)).
            best = 0.5 * math.log(-math.expm1(-k))
            best += 4.0 * math.ulp(max(1.0, abs(best)))   # expm1 and log: a few ulps, pushed up
            if e > k:
                a_star = (e + k) / (2.0 * k)
                best = min(best, self._log_delta_at(max(a_star, 1.0 + 1e-12), e))
                f = lambda t: self._log_delta_at(1.0 + math.exp(t), e) if t < 709.0 else math.inf  # noqa: E731
                t0 = math.log(max(a_star - 1.0, 1e-12))
                if math.isfinite(t0):   # a_star overflows for eps >> kappa: the closed form above suffices
                    best = min(best, _golden_min(f, t0 - 6.0, t0 + 6.0))
            return min(1.0, exp_up(best))
        log_d = self._minimise(lambda a: self._log_delta_at(a, e))
        return min(1.0, exp_up(log_d)) if math.isfinite(log_d) else 1.0


# ---------------------------------------------------------------------------
# Gaussian DP
# ---------------------------------------------------------------------------


def gdp_log_delta(mu: float, eps: float) -> float:
    """log of the exact delta(eps) of mu-GDP (Dong–Roth–Su Cor. 2.13), computed in log space.

    Args:
        mu: > 0.
        eps: >= 0.

    Returns:
        ``log(Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2))``; ``-inf`` where delta underflows.

    Examples:
        >>> import math
        >>> round(math.exp(gdp_log_delta(1.0, 0.0)), 6)   # TV distance of N(0,1) and N(1,1)
        0.382925
    """
    from scipy import special   # (function-level: `import bayesdp` and the commands that need no GDP skip scipy)

    a = special.log_ndtr(-eps / mu + mu / 2.0)
    b = eps + special.log_ndtr(-eps / mu - mu / 2.0)
    diff = b - a
    if diff >= 0.0:  # rounding at delta ~ 0; the true value is > 0 but below float range
        return -math.inf
    return float(a + math.log(-math.expm1(diff)))


#: Every reported delta(eps) and every epsilon(delta) of a GDP curve is checked in 60-digit arithmetic: the
#: two terms of delta(eps) cancel to many digits in double precision (the relative error of the float formula
#: grows like 1e-16/mu; it overshot delta by relative errors up to 1e-9 for mu in [1e-3, 1e2], issue #13).


@functools.lru_cache(maxsize=1 << 16)
def _gdp_delta_mp(mu: float, eps: float):
    """delta(eps) of mu-GDP in 60-digit arithmetic (more where the two terms cancel), rounded up to a float (a pure
    function of two floats: memoised, since calibration and method choice evaluate the same points again, issue 24).

    The two terms of delta cancel: at ``dps`` digits the difference keeps about ``dps - log10(Phi(a)/delta)`` of
    them (for mu = 1e-62, delta(0) = 4e-63 is the difference of two numbers near 1/2, and 60 digits gave 0.0; for mu
    = 1e-58 a value 7e-4 below the exact one).  So the precision is raised until at least 25 digits are left.
    """
    import mpmath

    for dps in (60, 240, 960):
        with mpmath.workdps(dps):
            m, e = mpmath.mpf(mu), mpmath.mpf(eps)
            a, b = -e / m + m / 2, -e / m - m / 2
            # far tails (mpmath's erfc overflows for arguments near 1e200): delta <= Phi(a) <= Phi(-1e6) < 5e-324,
            # the smallest positive float; Phi(a) <= 1; and dropping the subtracted term e^eps Phi(b) >= 0 keeps val an
            # upper bound, loose by at most 1/|b| < 1e-6 (e^(eps - b^2/2) <= 1 by the AM-GM inequality)
            if a < -1e6:
                return 5e-324
            first = mpmath.mpf(1) if a > 1e6 else mpmath.ncdf(a)
            val = first - (0 if b < -1e6 else mpmath.exp(e) * mpmath.ncdf(b))
            if val > first * mpmath.mpf(10) ** (25 - dps):   # relative error of val below 2e-25
                # rounded up, down to the subnormals (a floor of 1e-300 here left GDP.epsilon no answer for a delta
                # below it: it raised at delta = 1e-310)
                return mp_up(val * (1 + mpmath.mpf(10) ** -24))
    return 1.0   # the trivial bound, where even 960 digits leave fewer than 25 (no such float mu, eps is known)


def _gdp_epsilon_mp(mu: float, delta: float) -> float:
    """epsilon(delta) of mu-GDP by bisection on the 60-digit delta(eps) (fallback when the float root
    finder cannot bracket the root); returns a point whose delta is <= the requested one."""
    # mu-GDP is (mu^2/2)-zCDP, which gives (rho + 2 sqrt(rho log(1/delta)), delta)-DP: eps <= hi (+1 to spare)
    lo, hi = 0.0, mu * mu / 2.0 + mu * math.sqrt(2.0 * -math.log(delta)) + 1.0
    for _ in range(64):   # beyond mu ~ 1e16 the float hi rounds to the float nearest mu^2/2, which can be below it
        if not math.isfinite(hi) or _gdp_delta_mp(mu, hi) <= delta:
            break
        hi = math.nextafter(hi * (1.0 + 2.0 ** -40), math.inf)
    if not (math.isfinite(hi) and _gdp_delta_mp(mu, hi) <= delta):   # no bound rather than a wrong one
        return math.inf
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = 0.5 * (lo + hi)
        if _gdp_delta_mp(mu, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def _verify_gdp_epsilon(mu: float, eps: float, delta: float) -> float:
    """Step eps up until the 60-digit delta(eps) (rounded up) is <= delta: the float root of
    [`gdp_log_delta`][bayesdp.curves.gdp_log_delta] can sit on either side of the true one (cancellation,
    log_ndtr's ulps)."""
    step = max(eps * 2.0 ** -44, 1e-300)
    for _ in range(400):
        if _gdp_delta_mp(mu, eps) <= delta:
            return eps
        eps += step
        step *= 2.0
    raise AssumptionError(f"could not certify epsilon for mu = {mu:.6g} at delta = {delta:.6g}")


@dataclass(frozen=True)
class GDP(PrivacyCurve):
    """mu-Gaussian differential privacy (Dong, Roth, Su 2022): the mechanism is no easier to
    distinguish on neighbouring data than N(0, 1) from N(mu, 1).

    Args:
        mu: >= 0.

    Raises:
        AssumptionError: mu negative or not finite.

    Examples:
        >>> from bayesdp.curves import GDP
        >>> g = GDP(1.0)
        >>> round(g.epsilon(1e-5), 4), round(g.delta(1.0), 5)
        (4.3772, 0.12694)
        >>> g.rdp(2.0)
        1.0
    """

    mu: float
    kind: str = field(default="gdp", init=False)

    def __post_init__(self):
        object.__setattr__(self, "mu", nonnegative("mu (GDP parameter)", self.mu))

    @property
    def gdp_mu(self) -> float:
        """mu.

        Examples:
            >>> GDP(0.5).gdp_mu
            0.5
        """
        return self.mu

    @property
    def has_rdp(self) -> bool:
        """Always ``True``: mu-GDP implies the RDP curve ``alpha * mu^2 / 2``.

        Examples:
            >>> GDP(1.0).has_rdp
            True
        """
        return True

    def rdp(self, alpha: float) -> float:
        """``alpha * mu^2 / 2``.

        Args:
            alpha: the Renyi order > 1.

        Returns:
            eps(alpha).

        Raises:
            AssumptionError: alpha <= 1.

        Examples:
            >>> GDP(2.0).rdp(3.0)
            6.0
        """
        a = float(alpha)
        if not a > 1:
            raise AssumptionError(f"alpha = {a:.6g} must be > 1 (Renyi order); pass alpha > 1")
        return _up(_exact(a) * _exact(self.mu) ** 2 / 2)      # rounded up

    def as_rdp(self) -> RDP:
        """The RDP curve ``alpha * mu^2 / 2`` implied by mu-GDP (for composing with RDP curves).

        Returns:
            a linear [`RDP`][bayesdp.curves.RDP] curve.

        Examples:
            >>> GDP(1.0).as_rdp().describe()
            'RDP eps(alpha) = 0.5*alpha'
        """
        return RDP.linear(_up(_exact(self.mu) ** 2 / 2))     # rounded up (mu^2 as a float can land below)

    def describe(self) -> str:
        """``'<mu>-GDP'``.

        Returns:
            the description.

        Examples:
            >>> GDP(0.5).describe()
            '0.5-GDP'
        """
        return f"{self.mu:.6g}-GDP"

    def delta(self, epsilon: float) -> float:
        """Exact delta(epsilon) of mu-GDP (Dong-Roth-Su Cor. 2.13), in 60-digit arithmetic, rounded up.

        Args:
            epsilon: >= 0.

        Returns:
            ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

        Raises:
            AssumptionError: epsilon negative or not finite.

        Examples:
            >>> round(GDP(1.0).delta(1.0), 5)
            0.12694
        """
        e = _check_epsilon(epsilon)
        if self.mu == 0.0:
            return 0.0
        # 60-digit arithmetic, rounded up: the float formula under-reports delta by up to 1e-9 (relative)
        return min(1.0, max(0.0, float(_gdp_delta_mp(self.mu, e))))

    def epsilon(self, delta: float) -> float:
        """The exact epsilon(delta) of mu-GDP, rounded up (its delta is <= the one asked for).

        Args:
            delta: in (0, 1).

        Returns:
            epsilon >= 0 (0 when delta >= delta(0)).

        Raises:
            AssumptionError: delta not in (0, 1).

        Examples:
            >>> g = GDP(1.0)
            >>> round(g.epsilon(0.1), 6), g.delta(g.epsilon(0.1)) <= 0.1
            (1.160334, True)
        """
        d = _check_delta(delta)
        if self.mu == 0.0:
            return 0.0
        return _gdp_epsilon(self.mu, d)   # a pure function of (mu, delta): memoised (issue 24)

    def _epsilon(self, d: float) -> float:
        """:meth:`epsilon` at a checked ``d`` in (0, 1)."""
        mu = self.mu
        if mu == 0.0 or self.delta(0.0) <= d:
            return 0.0
        target = math.log(d)
        # Upper bracket: GDP => (mu^2/2)-zCDP => eps <= mu^2/2 + mu*sqrt(2 log(1/delta)) (+1 to spare).
        hi = mu * mu / 2.0 + mu * math.sqrt(2.0 * -target) + 1.0
        if not math.isfinite(hi):
            return math.inf
        lo = 0.0
        g = lambda e: gdp_log_delta(mu, e) - target  # noqa: E731
        if not (g(lo) > 0.0 and g(hi) <= 0.0):
            # no sign change of the float formula: it disagrees with the 60-digit one at 0 (delta near delta(0)), or
            # is nan at hi (tiny mu): bisect in 60 digits
            return _gdp_epsilon_mp(mu, d)
        # bisection of the decreasing log delta(eps) (no scipy.optimize: its import is 0.1-0.5 s of a release's
        # start-up), keeping g(lo) > 0 >= g(hi); hi is then an upper end within brentq's old tolerance
        while True:
            mid = 0.5 * (lo + hi)
            if hi - lo <= max(1e-14, 4 * np.finfo(float).eps * hi) or not lo < mid < hi:
                break
            if g(mid) > 0.0:
                lo = mid
            else:
                hi = mid
        # hi has g(hi) <= 0 (the bracket's end, kept by the bisection): in floats its delta is within the budget;
        # the float root may be below the true one, so the 60-digit delta decides
        return _verify_gdp_epsilon(mu, hi, d)


@functools.lru_cache(maxsize=1 << 16)
def _gdp_epsilon(mu: float, delta: float) -> float:
    """``GDP(mu).epsilon(delta)``, memoised: calibration and method choice convert the same curves again."""
    return GDP(mu)._epsilon(delta)


@functools.lru_cache(maxsize=1 << 16)
def _linear_rdp_epsilon(kappa: float, delta: float, method: str) -> float:
    """``RDP.linear(kappa).epsilon(delta, method)``, memoised (as :func:`_gdp_epsilon`)."""
    return RDP(kappa=kappa)._linear_epsilon(delta, method)


# ---------------------------------------------------------------------------
# Approximate DP points and delta profiles
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ApproxDP(PrivacyCurve):
    """A single (eps0, delta0) guarantee.  ``delta0 = 0`` is pure eps-DP.

    Queries below eps0 use the extreme points of the (eps0, delta0) privacy
    region (randomised response, Kairouz–Oh–Viswanath 2015; derivation in
    docs/curves.md): ``delta(eps) = delta0 + (1 - delta0)(e^eps0 - e^eps)/(1 + e^eps0)``.

    Args:
        eps0: >= 0.
        delta0: in [0, 1].

    Raises:
        AssumptionError: eps0 negative or either value not finite, or delta0 outside [0, 1].

    Examples:
        >>> from bayesdp.curves import ApproxDP
        >>> p = ApproxDP(1.0)                  # pure 1-DP
        >>> p.is_pure, p.delta(1.0), round(p.delta(0.0), 4)
        (True, 0.0, 0.4621)
        >>> ApproxDP(1.0, 1e-5).epsilon(1e-5)
        1.0
    """

    eps0: float
    delta0: float = 0.0
    kind: str = field(default="approx", init=False)

    def __post_init__(self):
        object.__setattr__(self, "eps0", nonnegative("epsilon", self.eps0))
        d = check_finite("delta", self.delta0)
        if not 0.0 <= d <= 1.0:
            raise AssumptionError(f"delta = {d:.6g} must be in [0, 1]")
        object.__setattr__(self, "delta0", d)

    @property
    def is_pure(self) -> bool:
        """Whether delta0 = 0 (pure epsilon-DP, which has the RDP curve eps(alpha) <= eps0).

        Examples:
            >>> ApproxDP(1.0).is_pure, ApproxDP(1.0, 1e-5).is_pure
            (True, False)
        """
        return self.delta0 == 0.0

    @property
    def has_rdp(self) -> bool:
        """``True`` for pure DP (its RDP curve is eps0 at every order), else ``False``.

        Examples:
            >>> ApproxDP(1.0).has_rdp, ApproxDP(1.0, 1e-5).has_rdp
            (True, False)
        """
        return self.is_pure

    def rdp(self, alpha: float) -> float:
        # D_alpha <= D_infinity = eps0 for pure DP; nothing for delta0 > 0.
        """eps0 for pure DP (``D_alpha <= D_inf``), ``math.inf`` when delta0 > 0.

        Args:
            alpha: the Renyi order (any).

        Returns:
            eps0 or ``math.inf``.

        Examples:
            >>> ApproxDP(1.0).rdp(2.0), ApproxDP(1.0, 1e-5).rdp(2.0)
            (1.0, inf)
        """
        return self.eps0 if self.is_pure else math.inf

    def describe(self) -> str:
        """``'pure <eps0>-DP'`` or ``'(<eps0>, <delta0>)-DP'``.

        Returns:
            the description.

        Examples:
            >>> ApproxDP(1.0).describe(), ApproxDP(1.0, 1e-5).describe()
            ('pure 1-DP', '(1, 1e-05)-DP')
        """
        if self.is_pure:
            return f"pure {self.eps0:.6g}-DP"
        return f"({self.eps0:.6g}, {self.delta0:.6g})-DP"

    def delta(self, epsilon: float) -> float:
        """delta0 at epsilon >= eps0; below eps0 the randomised-response region (class docstring).

        Args:
            epsilon: >= 0.

        Returns:
            delta in [0, 1], rounded up.

        Raises:
            AssumptionError: epsilon negative or not finite.

        Examples:
            >>> p = ApproxDP(1.0, 1e-5)
            >>> p.delta(2.0), round(p.delta(0.5), 6)        # 1e-5 + (1 - 1e-5)(e - e^0.5)/(1 + e)
            (1e-05, 0.287656)
        """
        e = _check_epsilon(epsilon)
        if e >= self.eps0:
            return self.delta0
        # (e^eps0 - e^eps)/(1 + e^eps0) = (1 - e^(eps-eps0)) / (1 + e^-eps0)
        frac = -math.expm1(e - self.eps0) / (1.0 + math.exp(-self.eps0))
        return min(1.0, round_up(self.delta0 + (1.0 - self.delta0) * frac))

    def epsilon(self, delta: float) -> float:
        """The inverse of [`delta`][bayesdp.curves.ApproxDP.delta]; ``math.inf`` for delta < delta0.

        Args:
            delta: in (0, 1).

        Returns:
            epsilon in [0, eps0], rounded up.

        Raises:
            AssumptionError: delta not in (0, 1).

        Examples:
            >>> p = ApproxDP(1.0, 1e-5)
            >>> round(p.epsilon(0.1), 6), p.epsilon(1e-6)
            (0.852919, inf)
        """
        d = _check_delta(delta)
        if d < self.delta0:   # (delta0 = 1 included: d < 1)
            return math.inf
        # invert delta(eps) above: eps = eps0 + log(1 - t), t = (d - d0)/(1 - d0) (1 + e^-eps0).  1 - t is
        # computed exactly (from a lower bound of e^-eps0, so it is an upper bound): in floats, t's own rounding
        # (2^-53) is a relative error 2^-53/(1 - t) of 1 - t, which near delta(0) (1 - t ~ e^-eps0) made eps
        # 1e-12 too small.  Then the log (an ulp) and the sum with eps0 (4 ulps of eps0) are rounded outward.
        e_lo = math.nextafter(math.nextafter(math.exp(-self.eps0), 0.0), 0.0)   # <= e^-eps0 (exp: < 1 ulp)
        u = 1 - (_exact(d) - _exact(self.delta0)) / (1 - _exact(self.delta0)) * (1 + _exact(e_lo))
        if u <= 0:
            return 0.0
        return min(self.eps0, max(0.0, round_up(self.eps0 + math.log(_up(u))) + 4.0 * math.ulp(self.eps0)))


@dataclass(frozen=True)
class DeltaProfile(PrivacyCurve):
    """A non-increasing function eps -> delta(eps), valid for every eps >= 0 (e.g. 003's
    hockey-stick bounds).  Values are clipped to [0, 1]; epsilon(delta) is found by bisection and
    rounded up.

    Args:
        fn: epsilon -> delta, non-increasing, a valid delta at every epsilon >= 0.
        label: shown by [`describe`][bayesdp.curves.DeltaProfile.describe].

    Examples:
        >>> import math
        >>> from bayesdp.curves import DeltaProfile
        >>> p = DeltaProfile(lambda e: math.exp(-e), "e^-eps")
        >>> p.delta(0.0), round(p.epsilon(1e-3), 6)
        (1.0, 6.907755)
    """

    fn: Callable[[float], float]
    label: str = "delta profile"
    kind: str = field(default="delta_profile", init=False)

    def describe(self) -> str:
        """The profile's label.

        Returns:
            the label.

        Examples:
            >>> DeltaProfile(lambda e: 0.0, "zero").describe()
            'zero'
        """
        return self.label

    def delta(self, epsilon: float) -> float:
        """``fn(epsilon)`` clipped to [0, 1].

        Args:
            epsilon: >= 0.

        Returns:
            delta in [0, 1].

        Raises:
            AssumptionError: epsilon negative or not finite, or ``fn`` returned NaN.

        Examples:
            >>> import math
            >>> round(DeltaProfile(lambda e: math.exp(-e)).delta(1.0), 6)
            0.367879
        """
        e = _check_epsilon(epsilon)
        v = float(self.fn(e))
        if math.isnan(v):
            raise AssumptionError(f"{self.label}: delta({e:.6g}) is NaN")
        return min(1.0, max(0.0, v))

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon (bisection, rounded up) with delta(epsilon) <= delta; ``math.inf`` past 1e9.

        Args:
            delta: in (0, 1).

        Returns:
            epsilon >= 0.

        Raises:
            AssumptionError: delta not in (0, 1).

        Examples:
            >>> import math
            >>> round(DeltaProfile(lambda e: math.exp(-e)).epsilon(0.01), 6)    # log(100)
            4.60517
        """
        d = _check_delta(delta)
        if self.delta(0.0) <= d:
            return 0.0
        hi = 1.0
        while self.delta(hi) > d:
            hi *= 2.0
            if hi > 1e9:
                return math.inf
        lo = 0.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= d:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-13 * max(1.0, hi):
                break
        return hi  # delta(hi) <= d: a valid upper bound on eps


# ---------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------


def compose(curves: Iterable[PrivacyCurve]) -> PrivacyCurve:
    """Adaptive composition of mechanisms with the given curves.

    * all GDP: mu's add in quadrature (Dong–Roth–Su Cor. 3.3);
    * all with an RDP curve (RDP, GDP, pure DP): RDP curves add (Mironov 2017 Prop. 1);
    * all (eps, delta) points: basic composition (eps's and delta's add).

    Args:
        curves: the mechanisms' curves, at least one.

    Returns:
        [`GDP`][bayesdp.curves.GDP], [`RDP`][bayesdp.curves.RDP] or [`ApproxDP`][bayesdp.curves.ApproxDP], by the
            first rule above that applies.

    Raises:
        AssumptionError: no curve given, or a mix no rule covers (e.g. a [`DeltaProfile`][bayesdp.curves.DeltaProfile]).

    Examples:
        >>> from bayesdp.curves import GDP, ApproxDP, compose
        >>> compose([GDP(3.0), GDP(4.0)]).mu
        5.0
        >>> compose([ApproxDP(1.0, 1e-6), ApproxDP(0.5, 1e-6)]).describe()
        '(1.5, 2e-06)-DP'
    """
    cs = list(curves)
    if not cs:
        raise AssumptionError("compose() needs at least one curve")
    if all(isinstance(c, GDP) for c in cs):
        return GDP(sqrt_exact_up(sum((_exact(c.mu) ** 2 for c in cs), _exact(0.0))))   # exact sum, root rounded up
    if all(isinstance(c, (RDP, GDP)) for c in cs):
        out = RDP.linear(0.0)
        for c in cs:
            out = out + (c.as_rdp() if isinstance(c, GDP) else c)
        return out
    if all(c.has_rdp for c in cs):
        out = RDP.linear(0.0)
        for c in cs:
            if isinstance(c, RDP):
                out = out + c
            elif isinstance(c, GDP):
                out = out + c.as_rdp()
            else:
                eps0 = c.eps0
                out = out + RDP.from_function(lambda a, e=eps0: e, f"{eps0:.6g} (pure DP)")
        return out
    if all(isinstance(c, ApproxDP) for c in cs):
        return ApproxDP(_up(sum((_exact(c.eps0) for c in cs), _exact(0.0))),      # exact sums, rounded up
                        min(1.0, _up(sum((_exact(c.delta0) for c in cs), _exact(0.0)))))
    kinds = sorted({c.kind for c in cs})
    raise AssumptionError(
        f"curves of kinds {kinds} cannot be composed exactly; convert each to an (eps, delta) pair first"
    )
