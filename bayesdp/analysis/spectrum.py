"""Proven eigenvalue bounds of symmetric matrices built from float64 data (docs/analysis.md, "Eigenvalues").

A Gaussian prior's strong convexity and smoothness are the smallest and largest eigenvalue of its precision
``(L L^T)^-1`` (a MultivariateNormal) or of a sum ``sum_s M_s^T P_s M_s`` (a hierarchy). LAPACK's eigenvalues of
the float64 matrix are estimates: their error bounds are not rigorous, and the matrix itself is rounded. The
bounds here are proven:

- :class:`Enclosed` carries a float64 matrix and an entrywise bound of its distance to the exact one through
  products and sums (the error of a float dot product of length k is at most ``gamma_k`` times the dot product
  of the absolute values; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5);
- :func:`lambda_min_down` proves ``A - c I`` positive semidefinite for a ``c`` just below LAPACK's estimate by
  running a Cholesky factorisation written out here (the order of its operations is fixed): if it runs to the
  end, ``R^T R = B + dB`` with ``|dB| <= gamma_{n+1} |R|^T |R|`` (Higham, Theorem 10.3), so
  ``lambda_min(B) >= -gamma_{n+1} || |R| ||_2^2``; Weyl's inequality then moves the bound by the spectral norm of
  the enclosure (at most its Frobenius norm);
- :func:`inverse_enclosure` refines a float inverse ``P^`` of ``S = L L^T`` by the residual ``R = I - S P^``
  computed exactly (integers): ``P = P^ (I - R)^-1``, so ``P^ + P^ R`` is within ``||P^|| r^2 / (1 - r)``;
- :func:`inverse_distance_up` bounds ``||P - P^|| `` for ``P = S^-1`` and a float inverse ``P^`` from the
  residual ``R = I - S P^``: ``P - P^ = P R``, so ``||P - P^|| <= ||P^|| r / (1 - r)`` when ``r = ||R|| < 1``.

Underflow: every error bound adds ``k 2^-1000`` per entry (an underflowed product loses at most 2^-1074).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import rounding as r

__all__ = ["Enclosed", "eig_bounds", "inverse_distance_up", "inverse_enclosure", "lambda_min_down"]

U = Fraction(1, 2 ** 53)                   # unit roundoff of float64
_TINY = 2.0 ** -1000                       # per-operation absolute allowance for underflow


def gamma_up(k: int) -> float:
    """``gamma_k = k u / (1 - k u)`` rounded up (u = 2^-53).

    Examples:
        >>> from bayesdp.analysis.spectrum import gamma_up
        >>> gamma_up(1) >= 2.0 ** -53, gamma_up(1) < 1.1103e-16
        (True, True)
    """
    ku = k * U
    if ku >= 1:
        return math.inf
    return r.up(ku / (1 - ku))


def _grow(a: np.ndarray, k: int) -> np.ndarray:
    """An upper bound of the exact value of nonnegative float results ``a`` that each came out of at most ``k``
    roundings of nonnegative terms (``exact <= fl / (1 - gamma_k)``), plus the underflow allowance."""
    f = 1.0 + 2.0 * gamma_up(k + 2)
    return np.nextafter(a * f + (k + 2) * _TINY, math.inf)


@dataclass(frozen=True)
class Enclosed:
    """A float64 matrix ``val`` and a nonnegative ``err`` with ``|exact - val| <= err`` entrywise.

    Examples:
        The exact product of two float matrices lies within the enclosure of their float product:

        >>> import numpy as np
        >>> from fractions import Fraction
        >>> from bayesdp.analysis.spectrum import Enclosed
        >>> a = np.array([[0.1, 0.7], [0.3, 1e-3]])
        >>> p = Enclosed.exact(a) @ Enclosed.exact(a.T)
        >>> exact = sum(Fraction(a[0, k]) * Fraction(a[1, k]) for k in range(2))
        >>> abs(exact - Fraction(p.val[0, 1])) <= Fraction(p.err[0, 1])
        True
    """

    val: np.ndarray
    err: np.ndarray

    @staticmethod
    def exact(a) -> "Enclosed":
        """A float matrix taken as exact (zero error)."""
        a = np.asarray(a, dtype=np.float64)
        return Enclosed(a, np.zeros_like(a))

    @property
    def T(self) -> "Enclosed":
        """The transpose (the same enclosure)."""
        return Enclosed(self.val.T, self.err.T)

    @property
    def finite(self) -> bool:
        """Whether every value and error bound is finite (else nothing is proven)."""
        return bool(np.isfinite(self.val).all() and np.isfinite(self.err).all())

    def __matmul__(self, other: "Enclosed") -> "Enclosed":
        a, ea, b, eb = self.val, self.err, other.val, other.err
        k = a.shape[-1]
        c = a @ b
        aa, ab = np.abs(a), np.abs(b)
        # |exact - c| <= gamma_k |a||b| + ea |b| + |a| eb + ea eb, each product of nonnegative floats rounded
        s = _grow(aa @ ab, k) * gamma_up(k)
        if np.any(ea):
            s = s + _grow(ea @ (ab + eb), k + 1)
        if np.any(eb):
            s = s + _grow(aa @ eb, k)
        return Enclosed(c, _grow(s, 4))

    def __add__(self, other: "Enclosed") -> "Enclosed":
        c = self.val + other.val
        return Enclosed(c, _grow(self.err + other.err + float(U) * np.abs(c), 3))

    def __sub__(self, other: "Enclosed") -> "Enclosed":
        c = self.val - other.val
        return Enclosed(c, _grow(self.err + other.err + float(U) * np.abs(c), 3))

    def symmetric(self) -> "Enclosed":
        """The same exact matrix, if it is symmetric, with a symmetric float part ``(val + val^T) / 2``: the
        exact X = X^T is within ``(err + err^T)/2`` of it, plus the rounding of the mean."""
        v = (self.val + self.val.T) * 0.5
        return Enclosed(v, _grow(0.5 * (self.err + self.err.T) + 2 * float(U) * np.abs(v), 3))


def _cholesky(b: np.ndarray) -> np.ndarray | None:
    """The Cholesky factor R (upper, ``R^T R ~ b``) by the outer-product algorithm, or None if a pivot is not
    positive (or not finite). Written out so that the operations are exactly those of Higham's analysis."""
    a = np.array(b, dtype=np.float64, copy=True)
    n = a.shape[0]
    R = np.zeros_like(a)
    for k in range(n):
        piv = a[k, k]
        if not (math.isfinite(piv) and piv > 0):
            return None
        rkk = math.sqrt(piv)
        R[k, k] = rkk
        row = a[k, k + 1:] / rkk
        R[k, k + 1:] = row
        a[k + 1:, k + 1:] -= np.outer(row, row)
    return R if np.isfinite(R).all() else None


def _shift_bound(v: np.ndarray, c: float) -> float | None:
    """A proven lower bound of ``lambda_min(v) - c`` for a symmetric float64 ``v`` (None if the factorisation of
    ``fl(v - c I)`` breaks down): ``-gamma_{n+1} || |R| ||_2^2 - u max |B_ii|`` (the diagonal subtraction's rounding)."""
    n = v.shape[0]
    B = v - c * np.eye(n)
    R = _cholesky(B)
    if R is None:
        return None
    absR = np.abs(R)
    nr = min(r.norm_up(absR), r.spectral_up(absR))
    loss = Fraction(r.mul_up(gamma_up(n + 1), nr, nr)) + U * Fraction(float(np.abs(np.diag(B)).max())) \
        + Fraction(n * n) * Fraction(_TINY)
    return r.down(-loss)


def lambda_min_down(v: np.ndarray) -> float:
    """A proven lower bound of the smallest eigenvalue of a symmetric float64 matrix ``v`` (-inf if none could be
    proven). LAPACK's estimate less a slack is certified by :func:`_shift_bound`; the slack grows until it is.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.spectrum import lambda_min_down
        >>> lo = lambda_min_down(np.array([[2.0, 1.0], [1.0, 2.0]]))      # eigenvalues 1 and 3
        >>> 1 - 1e-12 < lo <= 1
        True
    """
    v = np.asarray(v, dtype=np.float64)
    n = v.shape[0]
    if n == 0:
        return math.inf
    if not np.isfinite(v).all() or not np.array_equal(v, v.T):
        return -math.inf
    est = float(np.linalg.eigvalsh(v).min())
    scale = float(np.abs(v).max())
    if scale == 0.0:
        return 0.0
    best = -math.inf
    slack = 4 * (n + 1) * float(U) * scale
    for _ in range(12):
        c = est - slack
        loss = _shift_bound(v, c)
        if loss is not None:
            best = max(best, r.down(Fraction(c) + Fraction(loss)))
            break
        slack *= 64
    return best


def eig_bounds(a: Enclosed) -> tuple[float, float]:
    """Proven ``(lo, hi)`` with ``lo <= lambda_min(X)`` and ``lambda_max(X) <= hi`` for every symmetric ``X`` in
    the enclosure ``a`` (Weyl: eigenvalues move by at most the spectral norm of ``X - val``, at most the
    Frobenius norm of ``err``).

    Examples:
        Sigma = L L^T with L = [[1, 0], [1, 1]]: eigenvalues (3 -+ sqrt 5)/2 = 0.381966..., 2.618034...

        >>> import numpy as np
        >>> from bayesdp.analysis.spectrum import Enclosed, eig_bounds
        >>> L = Enclosed.exact([[1.0, 0.0], [1.0, 1.0]])
        >>> lo, hi = eig_bounds(L @ L.T)
        >>> lo <= (3 - 5 ** 0.5) / 2 and hi >= (3 + 5 ** 0.5) / 2, round(lo, 9), round(hi, 9)
        (True, 0.381966011, 2.618033989)
    """
    if not a.finite:
        return -math.inf, math.inf
    s = a.symmetric()
    e = r.norm_up(s.err)
    if not (s.finite and math.isfinite(e)):               # the mean or the norm overflowed: nothing proven
        return -math.inf, math.inf
    e = Fraction(e)
    lo = lambda_min_down(s.val)
    hi_neg = lambda_min_down(-s.val)
    lo = r.down(Fraction(lo) - e) if math.isfinite(lo) else -math.inf
    hi = r.up(-Fraction(hi_neg) + e) if math.isfinite(hi_neg) else math.inf
    return lo, hi


def inverse_distance_up(sigma: Enclosed, p_hat: np.ndarray) -> float:
    """A proven upper bound of ``||S^-1 - p_hat||_2`` for every symmetric ``S`` in the enclosure ``sigma`` (inf
    when the residual ``r = || I - S p_hat ||`` is not proven below 1).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.spectrum import Enclosed, inverse_distance_up
        >>> s = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> d = inverse_distance_up(Enclosed.exact(s), np.linalg.inv(s))
        >>> 0 <= d < 1e-14
        True
    """
    n = p_hat.shape[0]
    res = Enclosed.exact(np.eye(n)) - sigma @ Enclosed.exact(p_hat)
    if not res.finite:
        return math.inf
    rr = Fraction(r.norm_up(np.abs(res.val) + res.err))
    if rr >= 1:
        return math.inf
    pn = Fraction(r.spectral_up(np.abs(p_hat)))
    return r.up(pn * rr / (1 - rr))


_EXACT_RESIDUAL_MAX_N = 64                 # the exact residual costs O(n^3) big-integer products


def _as_integers(a: np.ndarray) -> tuple[np.ndarray, int]:
    """``(A, k)`` with the object array of Python ints ``A = a 2^k`` exactly (a finite float64 array)."""
    pairs = [x.as_integer_ratio() for x in a.reshape(-1).tolist()]
    den = max(d for _, d in pairs)
    k = den.bit_length() - 1
    ints = np.array([num * (den // d) for num, d in pairs], dtype=object).reshape(a.shape)
    return ints, k


def inverse_enclosure(scale_tril: np.ndarray, p_hat: np.ndarray) -> tuple[Enclosed, float]:
    """An enclosure of ``P = (L L^T)^-1`` as ``(E, d)``: ``P`` is within spectral distance ``d`` of a matrix in the
    entrywise enclosure ``E``. Up to ``n = 64`` the residual ``R = I - L L^T P^`` is computed exactly in integers
    and ``E`` encloses ``P^ + P^ R`` (``d = ||P^|| r^2/(1 - r)``, second order in the float inverse's error);
    beyond, ``E`` is ``P^`` itself and ``d`` is :func:`inverse_distance_up` (first order).

    Args:
        scale_tril: the float64 factor L.
        p_hat: a float64 estimate of the inverse.

    Returns:
        ``(E, d)``; where the residual is not proven below 1 (or exceeds the float range), ``d`` is inf and ``E``
        is ``P^`` with zero error.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.spectrum import inverse_enclosure
        >>> L = np.array([[1.0, 0.0], [0.3, 0.1]])
        >>> p_hat = np.linalg.inv(L @ L.T)
        >>> enc, d = inverse_enclosure(L, p_hat)
        >>> d < 1e-20, float(np.abs(enc.err).max()) < 1e-12
        (True, True)
    """
    L = np.asarray(scale_tril, dtype=np.float64)
    p_hat = np.asarray(p_hat, dtype=np.float64)
    n = L.shape[0]
    if n > _EXACT_RESIDUAL_MAX_N or not (np.isfinite(L).all() and np.isfinite(p_hat).all()):
        return Enclosed.exact(p_hat), inverse_distance_up(Enclosed.exact(L) @ Enclosed.exact(L.T), p_hat)
    Li, kl = _as_integers(L)
    Pi, kp = _as_integers(p_hat)
    SP = (Li @ Li.T) @ Pi                                   # = L L^T P^ 2^K exactly
    K = 2 * kl + kp
    one = 1 << K
    res = np.empty((n, n))
    try:
        for i in range(n):
            for j in range(n):
                res[i, j] = float(Fraction((one if i == j else 0) - int(SP[i, j]), one))   # correctly rounded
    except OverflowError:                                   # a residual beyond the float range: nothing proven
        return Enclosed.exact(p_hat), math.inf
    R = Enclosed(res, _grow(float(U) * np.abs(res), 1))
    rr = Fraction(r.norm_up(np.abs(R.val) + R.err))
    if rr >= 1:
        return Enclosed.exact(p_hat), math.inf
    pn = Fraction(r.spectral_up(np.abs(p_hat)))
    enc = Enclosed.exact(p_hat) + Enclosed.exact(p_hat) @ R
    return enc, r.up(pn * rr * rr / (1 - rr))
