"""Bounds over the declared domain: interval and linear-form arithmetic with outward rounding.

Abstract value :class:`Bound` of one array (the program is instantiated at ONE record: every
record axis, i.e. every axis whose size is symbolic, becomes a single slot that stands for every
position along it):

* ``lo``/``hi``: a box, elementwise ``lo <= value <= hi`` (float64, rounded outward with
  ``nextafter``; booleans are 0/1);
* ``lin`` (optional, :class:`Lin`): a linear form in the record, ``value = c + sum_a A_a x_a``
  where ``x_a`` is the record of data argument ``a`` (flattened) and ``c``, ``A_a`` may depend on
  anything but lie in the boxes ``[clo, chi]``, ``[Alo, Ahi]``.  The form is what makes norm bounds
  tight: for ``|x| <= R``, ``sup |A x| <= ||A||_2 R`` where a box gives ``sqrt(d) R``.

Every rule is sound for all inputs in the abstract inputs (exact real arithmetic on the traced
program; the runtime's own float rounding is outside, see docs/analysis.md).  A primitive with no
rule gives an unbounded box (and records itself in ``why``); ops that move values along a record
axis (slices with an offset, reversal, sorting, reductions over records...) keep the box (the slot
is the hull over every position) but drop the linear form, which is only valid for the record at
the same position.  Loops are iterated with widening to the unbounded box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ...exact import up as _exact_up
from ..rounding import LIBM_ULPS   # floats moved outward after a libm function (numpy's exp, log, tanh, ...)
from ..rounding import spectral_up as _spectral_up

from . import floats
from .interpreter import CALL_BODIES, Interpreter, conc, is_const_dim
from .dependence import record_iota
import itertools

__all__ = ["Bound", "Bounds", "Lin"]

#: Two rules that live in modules built on this one (they import it, so it cannot import them without a cycle):
#: ``rational_tangent`` (:mod:`.rational`) and ``select_conditions`` (:mod:`.switch`).  The package's
#: ``__init__`` sets them once both are imported, and it runs before any import of this module returns.
HOOKS: dict = {}

INF = np.inf
_ENUM_MAX = 4096           # index combinations enumerated for a gather with interval indices


# ---------------------------------------------------------------------------
# outward-rounded interval arithmetic on float64 arrays


def _dn(x):
    return np.nextafter(x, -INF)


def _up(x):
    return np.nextafter(x, INF)


def _fix(lo, hi):
    lo = np.where(np.isnan(lo), -INF, lo)
    hi = np.where(np.isnan(hi), INF, hi)
    return lo, hi


def _f64(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == bool:
        return a.astype(np.float64)
    if np.issubdtype(a.dtype, np.complexfloating):
        raise TypeError("complex")
    return a.astype(np.float64)


def _two_sum(a, b):
    """s = fl(a + b) and its exact error (Knuth's TwoSum): a + b = s + err exactly (nan if not finite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bv = s - a
        av = s - bv
        return s, (a - av) + (b - bv)


def _split(a):
    c = 134217729.0 * a                    # Veltkamp: a = hi + lo with 26-bit halves
    hi = c - (c - a)
    return hi, a - hi


#: below this magnitude a product may have lost bits to underflow, and Dekker's error term is not exact (it is
#: exact when e_a + e_b >= e_min + 52 = -970; Boldo and Muller, "Exact and approximated error of the FMA", 2011)
_TINY_PROD = 2.0 ** -969
_ETA = 2.0 ** -1074       # the smallest subnormal: a product's underflow loses less than half of it


def _two_prod(a, b):
    """p = fl(a * b) and its exact error (Dekker): a * b = p + err exactly (nan if not finite, or if the product
    is so small that underflow may have lost bits: the caller then rounds outward unconditionally)."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        return p, np.where(np.abs(p) < _TINY_PROD, np.nan, err)


def _lo(s, err):
    """A lower bound of s + err: s itself when the rounding was exact or downward."""
    with np.errstate(invalid="ignore"):
        return np.where(err >= 0, s, _dn(s))


def _hi(s, err):
    with np.errstate(invalid="ignore"):
        return np.where(err <= 0, s, _up(s))


def iv_add(alo, ahi, blo, bhi):
    """Directed rounding from the exact error of each sum: exact sums stay exact."""
    return _fix(_lo(*_two_sum(alo, blo)), _hi(*_two_sum(ahi, bhi)))


def iv_neg(lo, hi):
    return -hi, -lo


def iv_mul(alo, ahi, blo, bhi):
    los, his = [], []
    for a in (alo, ahi):
        for b in (blo, bhi):
            p, e = _two_prod(a, b)
            zero = (a == 0) | (b == 0)             # 0 * anything = 0 exactly (also 0 * inf)
            los.append(np.where(zero, 0.0, _lo(p, e)))
            his.append(np.where(zero, 0.0, _hi(p, e)))
    lo = np.minimum(np.minimum(los[0], los[1]), np.minimum(los[2], los[3]))
    hi = np.maximum(np.maximum(his[0], his[1]), np.maximum(his[2], his[3]))
    return _fix(lo, hi)


def iv_recip(lo, hi):
    ok = (lo > 0) | (hi < 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rlo = np.where(ok, _dn(1.0 / np.where(ok, hi, 1.0)), -INF)
        rhi = np.where(ok, _up(1.0 / np.where(ok, lo, 1.0)), INF)
    return rlo, rhi


def _absmax(lo, hi):
    return np.maximum(np.abs(lo), np.abs(hi))


def _dg(a, b, dn):
    """numpy dot_general (lax semantics): output = batch, lhs free, rhs free."""
    (lc, rc), (lb, rb) = dn
    lf = [i for i in range(a.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(b.ndim) if i not in rc and i not in rb]
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [None] * a.ndim
    lb_ = [None] * b.ndim
    for i, j in zip(lb, rb):
        la[i] = lb_[j] = next(letters)
    for i, j in zip(lc, rc):
        la[i] = lb_[j] = next(letters)
    for i in lf:
        la[i] = next(letters)
    for j in rf:
        lb_[j] = next(letters)
    out = [la[i] for i in lb] + [la[i] for i in lf] + [lb_[j] for j in rf]
    return np.einsum(f"{''.join(la)},{''.join(lb_)}->{''.join(out)}", a, b, optimize=True)


def _absdot(a, b, dn):
    """Upper bound of |a . b| for entrywise |a| <= a, |b| <= b (nonnegative, possibly inf), with 0 * inf = 0."""
    ia, ib = np.isinf(a), np.isinf(b)
    fa, fb = np.where(ia, 0.0, a), np.where(ib, 0.0, b)
    with np.errstate(over="ignore"):
        r = _dg(fa, fb, dn)
    if ia.any() or ib.any():
        hit = _dg(ia.astype(np.float64), (b > 0).astype(np.float64), dn) + \
            _dg((a > 0).astype(np.float64), ib.astype(np.float64), dn)
        r = np.where(hit > 0, INF, r)
    return r


def _contraction_length(shape, dn) -> int:
    (lc, _), _ = dn
    return int(np.prod([shape[i] for i in lc])) if lc else 1


_U = 2.0 ** -53          # unit roundoff of float64


def _pow2(a) -> bool:
    """Every entry is 0 or +-2^j: products with it are exact."""
    mant = np.frexp(a)[0]
    return bool(np.all((a == 0) | (np.abs(mant) == 0.5)))


def _mid_rad(lo, hi):
    # halves first: (lo + hi) / 2 overflows to inf for ends above 2^1023 (a point 1.5e308 had midpoint inf); a
    # point is its own midpoint exactly (halving a subnormal may round)
    mid = np.where(lo == hi, lo, lo / 2 + hi / 2)
    rad = _up(np.maximum(hi - mid, mid - lo))
    return mid, np.where(lo == hi, 0.0, rad)


def iv_dot(alo, ahi, blo, bhi, dn):
    """Interval dot_general in midpoint-radius form, with a bound on the float64 rounding of the midpoint
    product (``(k + 4) u sum |a_i b_i| + k eta`` for k nonzero terms, eta the smallest subnormal for the
    underflow of the products; none when there is one term and the product is exact).  Every end is also
    within ``sum |a_i| |b_i|``, bounded above the same way (its float64 sum may round below the exact one)."""
    aa, ba = _absmax(alo, ahi), _absmax(blo, bhi)
    mag = _absdot(aa, ba, dn)
    k = _dg((aa > 0).astype(np.float64), (ba > 0).astype(np.float64), dn)
    exact0 = k == 0                        # every product has a zero factor
    with np.errstate(over="ignore", invalid="ignore"):
        err_mag = (k + 4) * _U * mag * (1 + 8 * _U) + k * _ETA
        magu = _up(mag + err_mag)          # >= sum |a_i| |b_i| (exact)
    if not (np.isfinite(alo).all() and np.isfinite(ahi).all() and np.isfinite(blo).all() and np.isfinite(bhi).all()):
        return np.where(exact0, 0.0, -magu), np.where(exact0, 0.0, magu)
    am, ar = _mid_rad(alo, ahi)
    bm, br = _mid_rad(blo, bhi)
    has_rad = bool(np.any(ar) or np.any(br))
    with np.errstate(over="ignore", invalid="ignore"):         # an overflow gives inf ends, then unbounded
        mid = _dg(am, bm, dn)
        rad = (_dg(np.abs(am), br, dn) + _dg(ar, np.abs(bm), dn) + _dg(ar, br, dn)) if has_rad else np.zeros_like(mid)
        rad = np.where(rad == 0, 0.0, _up(rad * (1 + (k + 4) * _U))) + np.where(has_rad, 3 * k * _ETA, 0.0)
    exact_products = (bool(np.all(alo == ahi)) and _pow2(alo)) or (bool(np.all(blo == bhi)) and _pow2(blo))
    # a product by a power of two is exact unless it underflows (or overflows)
    exact = (k <= 1) & exact_products & (rad == 0) & (mag >= 2.0 ** -1022) & (mag < INF)
    err = np.where(exact, 0.0, err_mag)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = np.where(exact, mid, _dn(mid - rad - err))
        hi = np.where(exact, mid, _up(mid + rad + err))
    return _fix(np.where(exact0, 0.0, np.maximum(lo, -magu)), np.where(exact0, 0.0, np.minimum(hi, magu)))


def iv_hull(alo, ahi, blo, bhi):
    return np.minimum(alo, blo), np.maximum(ahi, bhi)


# ---------------------------------------------------------------------------
# abstract values


@dataclass(eq=False)
class Lin:
    """A linear form in the record: ``value = c + sum_a A[a] x_a`` with ``c in [clo, chi]`` and
    ``A[a] in [A[a][0], A[a][1]]`` (shape ``value.shape + (p_a,)``).

    Args:
        clo: lower bound of the constant part ``c`` (the value's shape).
        chi: upper bound of ``c``.
        A: data argument name -> (lower, upper) bounds of its coefficients, ``x_a`` being that argument's
            record flattened to ``p_a`` entries.

    Examples:
        The form of ``3 x`` for a record ``x`` of two entries, taken by its first entry:

        >>> import numpy as np
        >>> from bayesdp.analysis.structure.bounds import Lin
        >>> coef = np.array([3.0, 0.0])
        >>> f = Lin(np.zeros(()), np.zeros(()), {"x": (coef, coef)})
        >>> f.A["x"][1].tolist()
        [3.0, 0.0]
    """

    clo: np.ndarray
    chi: np.ndarray
    A: dict

    def struct(self, fn) -> "Lin":
        """Apply a structural op ``fn(array, extra_trailing_dims)`` to c and every A.

        Args:
            fn: a reshape/transpose/broadcast-like op; its second argument is the number of trailing axes
                (0 for ``c``, 1 for the coefficients) it must leave alone.

        Returns:
            The transformed form.
        """
        return Lin(fn(self.clo, 0), fn(self.chi, 0), {k: (fn(lo, 1), fn(hi, 1)) for k, (lo, hi) in self.A.items()})


@dataclass(eq=False)
class Bound:
    """The abstract value of one array over the declared domain: a box, optionally a linear form in the record.

    Every value the array takes, for every input the program's abstract inputs describe, satisfies
    ``lo <= value <= hi`` elementwise (float64, rounded outward) and, when ``lin`` is set, equals its linear
    form for some constant part and coefficients in the form's boxes.

    Args:
        lo: elementwise lower bound.
        hi: elementwise upper bound.
        lin: the linear form in the record (:class:`Lin`), or None.
        why: what made the bound unbounded or loose (an equation), for messages.
        nrm: optional, axis k -> N (the value's shape with axis k of size 1), an upper bound of the
            Euclidean norm along axis k of the value's *constant part* (the value itself when it has no
            linear form), e.g. a row gathered from the identity has norm <= 1 although its box is [0, 1]^n.
        nan: the value may be undefined somewhere: NaN, or an actual infinity (a literal ``inf``, ``log(0)``,
            ``1 / 0``), which IEEE arithmetic turns into NaN (``0 * inf``, ``inf - inf``).  The box of such a
            bound is unbounded, and every rule's output from it is too (see :meth:`Bounds.checked`): an
            unbounded box alone stands for finite reals of unknown size, for which ``0 * x = 0`` and
            ``tanh(x)`` is in [-1, 1] hold, and a NaN would make both false.

    Examples:
        >>> from bayesdp.analysis.structure import Bound
        >>> b = Bound.box([-1.0, 0.0], [1.0, 2.0])
        >>> b.shape, b.bounded(), b.is_point()
        ((2,), True, False)
        >>> Bound.top((3,)).bounded()
        False
    """

    lo: np.ndarray
    hi: np.ndarray
    lin: Lin | None = None
    why: object = field(default=None)
    nrm: dict | None = None
    nan: bool = False

    @property
    def shape(self):
        """The array's shape (one slot per record axis)."""
        return self.lo.shape

    @staticmethod
    def box(lo, hi, why=None) -> "Bound":
        """The box ``[lo, hi]`` with no linear form.

        Args:
            lo: elementwise lower bound (array-like).
            hi: elementwise upper bound (array-like).
            why: what the bound comes from, for messages.

        Returns:
            The bound.
        """
        lo, hi = _f64(lo), _f64(hi)
        return Bound(lo, hi, None, why)

    @staticmethod
    def point(value) -> "Bound":
        """The bound of a known value (``lo == hi == value``).

        Args:
            value: the value (array-like).

        Returns:
            The bound.
        """
        v = _f64(value)
        return Bound(v, v)

    @staticmethod
    def top(shape, why=None) -> "Bound":
        """The unbounded box of the given shape.

        Args:
            shape: the array's shape.
            why: what made it unbounded (an equation), for messages.

        Returns:
            The bound ``[-inf, inf]`` everywhere.
        """
        return Bound(np.full(shape, -INF), np.full(shape, INF), None, why)

    def as_lin(self) -> Lin:
        """The linear form, or the box as a form with no coefficient.

        Returns:
            A :class:`Lin`.
        """
        return self.lin if self.lin is not None else Lin(self.lo, self.hi, {})

    @staticmethod
    def undefined(shape, why=None) -> "Bound":
        """The bound of a value that may be undefined (NaN, or an actual infinity): unbounded, ``nan`` set.

        Args:
            shape: the array's shape.
            why: the equation where it may become undefined, for messages.

        Returns:
            The bound ``[-inf, inf]`` everywhere, with ``nan`` True.
        """
        return Bound(np.full(shape, -INF), np.full(shape, INF), None, why, None, True)

    def bounded(self) -> bool:
        """Whether every entry has a finite lower and upper bound (and the value is never undefined).

        Returns:
            True when the box is finite.
        """
        return bool(not self.nan and np.isfinite(self.lo).all() and np.isfinite(self.hi).all())

    def is_point(self) -> bool:
        """Whether the box is a single value.

        Returns:
            True when ``lo == hi`` everywhere.
        """
        return bool(np.array_equal(self.lo, self.hi))


def _why(ins, eqn=None):
    return next((b.why for b in ins if b.why is not None), None) or eqn


def _finish(eqn, ins, lo, hi, lin=None) -> Bound:
    lo, hi = _fix(np.asarray(lo, np.float64), np.asarray(hi, np.float64))
    why = _why(ins)
    if why is None and not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        why = eqn
    return Bound(lo, hi, lin if (lin is not None and lin.A) else None, why)


def _norm_keep(arr, k):
    """Upper bound of the 2-norm of a finite float64 array along axis k (keepdims)."""
    a = np.asarray(arr, dtype=np.float64)
    n = a.shape[k]
    with np.errstate(over="ignore"):
        # the float sum's rounding (relative) and the squares' underflow (absolute, under eta/2 each)
        sq = np.sum(a * a, axis=k, keepdims=True) * (1 + (n + 2) * _U) + n * _ETA
    return _up(np.sqrt(_up(sq)))


def c_norm(b: "Bound", k: int, shape=None):
    """Norm bound along axis k of the constant part of ``b`` (broadcast to ``shape``), or None."""
    shape = tuple(shape) if shape is not None else b.shape
    if b.nrm and k in b.nrm and tuple(b.shape) == shape:
        return b.nrm[k]
    if b.lin is None:
        lo, hi = b.lo, b.hi
    else:
        lo, hi = b.lin.clo, b.lin.chi
    if not (np.array_equal(lo, hi) and np.isfinite(lo).all()):
        return None
    return _norm_keep(np.broadcast_to(lo, shape), k)


def _with_nrm(out: "Bound", nrm: dict | None) -> "Bound":
    out.nrm = {k: v for k, v in (nrm or {}).items() if v is not None} or None
    return out


def _zeros_like_A(shape, p):
    z = np.zeros(tuple(shape) + (p,))
    return z, z


def lin_add(a: Lin, b: Lin, shape) -> Lin:
    clo, chi = iv_add(np.broadcast_to(a.clo, shape), np.broadcast_to(a.chi, shape),
                      np.broadcast_to(b.clo, shape), np.broadcast_to(b.chi, shape))
    A = {}
    for k in set(a.A) | set(b.A):
        p = (a.A.get(k) or b.A.get(k))[0].shape[-1]
        alo, ahi = a.A.get(k) or _zeros_like_A(shape, p)
        blo, bhi = b.A.get(k) or _zeros_like_A(shape, p)
        full = tuple(shape) + (p,)
        A[k] = iv_add(np.broadcast_to(alo, full), np.broadcast_to(ahi, full),
                      np.broadcast_to(blo, full), np.broadcast_to(bhi, full))
    return Lin(clo, chi, A)


def lin_neg(a: Lin) -> Lin:
    return Lin(-a.chi, -a.clo, {k: (-hi, -lo) for k, (lo, hi) in a.A.items()})


def lin_scale(slo, shi, a: Lin, shape) -> Lin:
    """``s * (c + A x)`` for ``s`` in the box [slo, shi] (broadcast elementwise)."""
    clo, chi = iv_mul(np.broadcast_to(slo, shape), np.broadcast_to(shi, shape),
                      np.broadcast_to(a.clo, shape), np.broadcast_to(a.chi, shape))
    A = {}
    for k, (lo, hi) in a.A.items():
        full = tuple(shape) + (lo.shape[-1],)
        A[k] = iv_mul(np.broadcast_to(np.asarray(slo)[..., None], full), np.broadcast_to(np.asarray(shi)[..., None], full),
                      np.broadcast_to(lo, full), np.broadcast_to(hi, full))
    return Lin(clo, chi, A)


def lin_hull(forms: list[Lin], shape) -> Lin:
    """A form valid for each of ``forms`` (entrywise hull of c and of every A; a missing A is 0)."""
    keys = set().union(*(f.A for f in forms))
    clo = np.broadcast_to(forms[0].clo, shape)
    chi = np.broadcast_to(forms[0].chi, shape)
    for f in forms[1:]:
        clo, chi = iv_hull(clo, chi, np.broadcast_to(f.clo, shape), np.broadcast_to(f.chi, shape))
    A = {}
    for k in keys:
        p = next(f.A[k][0].shape[-1] for f in forms if k in f.A)
        full = tuple(shape) + (p,)
        los = [np.broadcast_to(f.A[k][0], full) if k in f.A else np.zeros(full) for f in forms]
        his = [np.broadcast_to(f.A[k][1], full) if k in f.A else np.zeros(full) for f in forms]
        A[k] = (np.minimum.reduce(los), np.maximum.reduce(his))
    return Lin(clo, chi, A)


def lin_box(lin: Lin, domain_boxes: dict) -> tuple[np.ndarray, np.ndarray]:
    """The box a linear form implies: entry = c + sum_j A_j x_j with x_j in its box."""
    lo, hi = lin.clo, lin.chi
    for k, (Alo, Ahi) in lin.A.items():
        xlo, xhi = domain_boxes[k]
        plo, phi = iv_mul(Alo, Ahi, xlo, xhi)
        lo, hi = iv_add(lo, hi, _dn(plo.sum(-1)) - _sum_err(plo), _up(phi.sum(-1)) + _sum_err(phi))
    return lo, hi


def _sum_err(x):
    with np.errstate(invalid="ignore"):
        e = x.shape[-1] * 2.3e-16 * np.abs(x).sum(-1) if x.size else np.zeros(x.shape[:-1])
    return np.where(np.isfinite(e), e, 0.0)


# ---------------------------------------------------------------------------
# structural ops on arrays with extra trailing axes (the `A` of a linear form)


def _bcast(arr, out_shape, dims, extra):
    lead = arr.ndim - extra
    tail = arr.shape[lead:]
    expanded = [1] * len(out_shape)
    for i, d in enumerate(dims):
        expanded[d] = arr.shape[i]
    return np.broadcast_to(arr.reshape(tuple(expanded) + tail), tuple(out_shape) + tail)


def _lead_index(arr, extra, index):
    return arr[tuple(index) + (slice(None),) * extra]


def _sym(shape) -> list[int]:
    return [i for i, d in enumerate(shape) if not is_const_dim(d)]


def _ishape(v) -> tuple:
    return tuple(v.aval.shape)


def _oshape(eqn, i=0) -> tuple:
    return conc(eqn.outvars[i].aval.shape)


def _hull_all(b: Bound, shape, eqn, ins) -> Bound:
    """Every entry of ``b``, anywhere: the out-of-place fallback (box of all values, no form)."""
    if b.lo.size == 0:
        return _finish(eqn, ins, np.zeros(shape), np.zeros(shape))
    return _finish(eqn, ins, np.full(shape, b.lo.min()), np.full(shape, b.hi.max()))


# ---------------------------------------------------------------------------
# rules


def _elementwise_box(fn):
    """A rule from a box function ``fn(*[(lo, hi)]) -> (lo, hi)`` (no linear form)."""
    def rule(run, eqn, ins):
        shape = _oshape(eqn)
        args = [(np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape)) for b in ins]
        with np.errstate(all="ignore"):
            lo, hi = fn(*args)
        return [_finish(eqn, ins, np.broadcast_to(lo, shape), np.broadcast_to(hi, shape))]
    return rule


def _overflow_at(f):
    """``dtype -> x``: the largest argument at which ``f`` (increasing) is finite in ``dtype``."""
    return lambda dt: float(f(np.float64(np.finfo(dt).max))) * (1 - 1e-6)      # libm's error near the end


def _monotone(f, increasing=True, domain=(-INF, INF), ulps=2, image=(-INF, INF), open_ends=(False, False),
              overflow=None):
    """Monotone f on ``domain``, closed unless ``open_ends`` says an end is excluded (where f is infinite: log
    at 0); an input box reaching outside the domain gives an undefined result (``Bound.nan``: sqrt of a
    negative is NaN, and ``0 * sqrt(x)`` is then NaN too, not 0).  ``image``: a closed interval containing
    every value of f (e.g. [0, inf] for exp): the outward rounding never leaves it.  ``overflow``: ``dtype -> x``,
    the argument past which the program's float result is an infinity (exp past 88.72 in float32): an input box
    reaching past it is undefined too (``0 * exp(r * r)`` is NaN at r = 10; the case of a select that is not
    chosen is differentiated all the same, adv19)."""
    def box(a):
        lo, hi = a
        with np.errstate(all="ignore"):
            flo, fhi = (f(lo), f(hi)) if increasing else (f(hi), f(lo))
        for _ in range(ulps):
            flo, fhi = _dn(flo), _up(fhi)
        return np.clip(flo, *image), np.clip(fhi, *image)
    inner = _elementwise_box(box)

    def rule(run, eqn, ins):
        lo, hi = ins[0].lo, ins[0].hi
        below = (lo <= domain[0]) if open_ends[0] else (lo < domain[0])
        above = (hi >= domain[1]) if open_ends[1] else (hi > domain[1])
        if open_ends[0] and domain[0] == 0 and np.any(below) and not np.any(above) and \
                _positive(run, eqn.invars[0]):
            # log(exp(x)), log(logistic(x)): > 0 though the box reaches 0 (or a rounding below it): the box from
            # 0 up, whose image starts at f(0) (log 0 = -inf: unbounded below, as the real values are)
            b = ins[0]
            return inner(run, eqn, [Bound(np.maximum(b.lo, 0.0), np.maximum(b.hi, 0.0))])
        if overflow is not None and _is_float(eqn) and \
                np.any(hi > overflow(np.dtype(eqn.outvars[0].aval.dtype))):
            above = True
        if np.any(below) or np.any(above):
            return [Bound.undefined(_oshape(eqn), eqn)]
        return inner(run, eqn, ins)
    return rule


def _contains_zero(b: "Bound") -> bool:
    return bool(np.any((b.lo <= 0) & (b.hi >= 0)))


_POSITIVE_OF_ANY = frozenset({"exp", "exp2", "logistic"})
# not reduce_precision or a narrowing conversion: float16(exp(-20)) and int32(exp(-1)) are 0 (adv19)
_SAME_SIGN = frozenset({"convert_element_type", "copy", "broadcast_in_dim", "reshape", "squeeze", "transpose",
                        "slice", "rev", "expand_dims", "sqrt"})


def _positive(run, v, depth=0) -> bool:
    """Every real value of ``v`` is > 0, though its box may reach 0 (``exp(x)``, ``logistic(x)``, ``softplus(x)``
    for x unbounded): ``v`` is exp / exp2 / logistic of anything, logaddexp with an operand >= 0, a sum of such
    a value and one >= 0, or one moved, converted to the same or a wider float, or square-rooted.

    The analysis is of the real program: float32 ``exp(-104)`` is 0 (and ``1 / exp(-104)`` an infinity) where the
    real value is positive; docs/analysis.md, "Undefined values". Products and quotients are not taken: their
    float32 values underflow at moderate arguments (``exp(r) ** 8`` at r = -14, adv19)."""
    if run is None or depth > 32:
        return False
    b = run.value(v)
    if isinstance(b, Bound) and not b.nan and np.all(b.lo > 0):
        return True
    if isinstance(v, _literal_type()):
        return False
    v = run.origin(v)
    e = run.producer(v)
    if e is None:
        return False
    name = e.primitive.name
    if name in _POSITIVE_OF_ANY:
        return True
    if name in _SAME_SIGN:
        if name == "convert_element_type" and not _exact_convert(e):
            return False
        return _positive(run, e.invars[0], depth + 1)
    if name in ("add", "add_any") and floats.modelled():
        # XLA may regroup the chain of sums (``(1 - s) + 1e-9`` as ``(1 + 1e-9) - s``, 0 at s = 1): positive in
        # any order when every term is added, none is negative, and one is positive
        leaves = _add_chain(run, e)
        return all(sg > 0 and _nonnegative(run, w) for w, sg, _ in leaves) and \
            any(_positive(run, w, depth + 1) for w, _, _ in leaves)
    if name in ("add", "add_any"):
        a, c = e.invars
        return any(_positive(run, x, depth + 1) and _nonnegative(run, y) for x, y in ((a, c), (c, a)))
    if name == "custom_jvp_call" and _jax_function(e, "logaddexp"):
        args = e.invars[e.params.get("num_consts", 0):]
        return any(_nonnegative(run, w) for w in args)         # logaddexp(a, b) > max(a, b)
    if name in _CALLS:
        w = run.body_output(e, v)
        return w is not None and _positive(run, w, depth + 1)
    return False


def _nonnegative(run, v) -> bool:
    b = run.value(v)
    return isinstance(b, Bound) and not b.nan and bool(np.all(b.lo >= 0))


def _nonzero(run, v, b: "Bound") -> bool:
    """``v`` (bound ``b``) is never 0: its box leaves out 0, or it is :func:`_positive`."""
    return not _contains_zero(b) or (run is not None and v is not None and _positive(run, v))


def _is_float(eqn) -> bool:
    return np.issubdtype(eqn.outvars[0].aval.dtype, np.floating)


def add(run, eqn, ins):
    a, b = ins
    shape = _oshape(eqn)
    lo, hi = iv_add(np.broadcast_to(a.lo, shape), np.broadcast_to(a.hi, shape),
                    np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape))
    lin = lin_add(a.as_lin(), b.as_lin(), shape) if (a.lin is not None or b.lin is not None) else None
    out = _finish(eqn, ins, lo, hi, lin)
    if a.nrm or b.nrm:                         # |c_a + c_b| <= |c_a| + |c_b| along each tracked axis
        nrm = {}
        apart = _apart(a, b, shape)
        for k in set(a.nrm or {}) | set(b.nrm or {}):
            na, nb = c_norm(a, k, shape), c_norm(b, k, shape)
            cands = [_sum_norm_over(a, na, b, k, shape), _sum_norm_over(b, nb, a, k, shape)]
            if na is not None and nb is not None:
                # where one constant part is exactly 0 at every position, the squares add (Pythagoras)
                cands.append(_up(np.sqrt(_up(_up(na * na) + _up(nb * nb)))) if apart else _up(na + nb))
            cands = [c for c in cands if c is not None]
            if cands:
                nrm[k] = np.minimum.reduce([np.broadcast_to(c, cands[0].shape) for c in cands])
        _with_nrm(out, nrm)
    return related(run, eqn, [out])


def _sum_norm_over(a: "Bound", na, b: "Bound", k: int, shape):
    """A bound of the norm along ``k`` of ``c_a + c_b`` (constant parts) from ``a``'s norm bound ``na`` and the
    boxes on ``b``'s support ``S`` (where ``c_b`` is not exactly 0): ``|c_a + c_b|^2 = |c_a|^2 - sum_S c_a^2 +
    sum_S (c_a + c_b)^2 <= na^2 - sum_S min c_a^2 + sum_S max (c_a + c_b)^2`` (``mu + alpha[g] - 2 mu``: the
    one-hot row keeps its norm, the shared coordinate is re-counted at its new value), or None."""
    if na is None:
        return None
    fa, fb = a.as_lin(), b.as_lin()
    alo, ahi = np.broadcast_to(fa.clo, shape), np.broadcast_to(fa.chi, shape)
    blo, bhi = np.broadcast_to(fb.clo, shape), np.broadcast_to(fb.chi, shape)
    if not all(np.isfinite(x).all() for x in (alo, ahi, blo, bhi)):
        return None
    on = ~((blo == 0) & (bhi == 0))
    n = shape[k] if len(shape) else 1
    tight = (1 + (n + 2) * _U)
    amin = np.where((alo <= 0) & (ahi >= 0), 0.0, np.minimum(alo * alo, ahi * ahi))
    slo, shi = iv_add(alo, ahi, blo, bhi)
    smax = np.maximum(slo * slo, shi * shi)
    with np.errstate(over="ignore"):
        drop = _dn(np.sum(np.where(on, _dn(amin), 0.0), axis=k, keepdims=True) / tight)
        add_ = _up(np.sum(np.where(on, _up(smax), 0.0), axis=k, keepdims=True) * tight)
        sq = _up(_up(_up(np.asarray(na, dtype=np.float64) ** 2) - np.maximum(drop, 0.0)) + add_)
    return _up(np.sqrt(np.maximum(sq, 0.0)))


def _apart(a: "Bound", b: "Bound", shape) -> bool:
    """At every position at least one of the constant parts of ``a`` and ``b`` is exactly 0 (their supports are
    disjoint: a one-hot row of one site's columns plus another site's)."""
    fa, fb = a.as_lin(), b.as_lin()
    za = (np.broadcast_to(fa.clo, shape) == 0) & (np.broadcast_to(fa.chi, shape) == 0)
    zb = (np.broadcast_to(fb.clo, shape) == 0) & (np.broadcast_to(fb.chi, shape) == 0)
    return bool(np.all(za | zb))


def sub(run, eqn, ins):
    a, b = ins
    nb = Bound(-b.hi, -b.lo, lin_neg(b.lin) if b.lin is not None else None, b.why, b.nrm)
    return related(run, eqn, add(run, eqn, [a, nb]))


def neg(run, eqn, ins):
    b = ins[0]
    return [Bound(-b.hi, -b.lo, lin_neg(b.lin) if b.lin is not None else None, b.why, b.nrm)]


def mul(run, eqn, ins):
    a, b = ins
    shape = _oshape(eqn)
    lo, hi = iv_mul(np.broadcast_to(a.lo, shape), np.broadcast_to(a.hi, shape),
                    np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape))
    # b in its box times a's form, or a in its box times b's form (both valid when both have one): the one
    # with bounded coefficients (a derivative ``x * psi(y - x.w)``: psi's form reads x and y with unbounded
    # coefficients, x's own is bounded), else the one that reads more of the record
    forms = [f for f in (None if a.lin is None else lin_scale(b.lo, b.hi, a.lin, shape),
                         None if b.lin is None else lin_scale(a.lo, a.hi, b.lin, shape)) if f is not None]
    lin = None
    if forms:
        lin = max(forms, key=lambda f: (_finite_form(f), _form_size(f)))
    x0, x1 = eqn.invars
    if not isinstance(x0, _literal_type()) and run.origin(x0) is run.origin(x1):
        # r * r: a square, never negative ([-1, 2] * [-1, 2] would give [-2, 4])
        slo, shi = _ipow_box(2)((np.broadcast_to(a.lo, shape), np.broadcast_to(a.hi, shape)))
        lo, hi = np.maximum(lo, slo), np.minimum(hi, shi)
    out = _finish(eqn, ins, lo, hi, lin)
    nrm = {}
    for v, s_ in ((a, b), (b, a)):              # |s * c| <= max|s| |c| along the axis, s a box
        if v.nrm and s_.lin is None and tuple(v.shape) == tuple(shape):
            smax = np.broadcast_to(_absmax(s_.lo, s_.hi), shape)
            for k, n in v.nrm.items():
                nrm[k] = _up(n * smax.max(axis=k, keepdims=True))
    return related(run, eqn, [_with_nrm(out, nrm)])


def _finite_form(f: Lin | None) -> bool:
    return f is not None and bool(np.isfinite(f.clo).all() and np.isfinite(f.chi).all()) and \
        all(np.isfinite(lo).all() and np.isfinite(hi).all() for lo, hi in f.A.values())


def _form_size(f: Lin) -> int:
    """How many record coordinates a form reads (the product of two forms keeps the larger one, the other
    operand entering by its box: ``y * x`` with y in [-1, 1] keeps the form of the feature vector x)."""
    return sum(int(lo.shape[-1]) for lo, _ in f.A.values())


def div(run, eqn, ins):
    if _is_float(eqn) and not _nonzero(run, eqn.invars[1], ins[1]):
        # x / 0 is an infinity or NaN (0 / 0 too: the box rule's 0 * (1 / d) = 0 is no proof), unless a relational
        # rule bounds the quotient from the program (the softplus ratio, a removable point of the rational walk)
        out = related(run, eqn, [Bound.top(_oshape(eqn), eqn)])
        return out if out[0].bounded() else [Bound.undefined(out[0].shape, eqn)]
    return _div(run, eqn, ins)


def _div(run, eqn, ins):
    a, b = ins
    shape = _oshape(eqn)
    rlo, rhi = iv_recip(np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape))
    if np.issubdtype(eqn.outvars[0].aval.dtype, np.integer):
        # integer division truncates toward zero: |a/b| <= |a| / min|b|
        m = _absmax(a.lo, a.hi) * _absmax(rlo, rhi)
        return [_finish(eqn, ins, -np.floor(m), np.floor(m))]
    lo, hi = iv_mul(np.broadcast_to(a.lo, shape), np.broadcast_to(a.hi, shape), rlo, rhi)
    lin = lin_scale(rlo, rhi, a.lin, shape) if (a.lin is not None and b.lin is None) else None
    out = _finish(eqn, ins, lo, hi, lin)
    if a.nrm and b.lin is None and tuple(a.shape) == tuple(shape):
        # |c / s| <= max|1/s| |c| along the axis, s a box (its reciprocal's box rlo, rhi)
        smax = _absmax(rlo, rhi)
        if np.isfinite(smax).all():
            _with_nrm(out, {k: _up(n * smax.max(axis=k, keepdims=True)) for k, n in a.nrm.items()})
    return related(run, eqn, [out])


def _scalar_or(shape, b):
    return np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape)


def max_(run, eqn, ins):
    a, b = ins
    shape = _oshape(eqn)
    (alo, ahi), (blo, bhi) = _scalar_or(shape, a), _scalar_or(shape, b)
    lin = None
    if a.lin is not None or b.lin is not None:
        lin = lin_hull([a.as_lin(), b.as_lin()], shape)        # the result is one of the two
    return [_finish(eqn, ins, np.maximum(alo, blo), np.maximum(ahi, bhi), lin)]


def min_(run, eqn, ins):
    a, b = ins
    shape = _oshape(eqn)
    (alo, ahi), (blo, bhi) = _scalar_or(shape, a), _scalar_or(shape, b)
    lin = None
    if a.lin is not None or b.lin is not None:
        lin = lin_hull([a.as_lin(), b.as_lin()], shape)
    return [_finish(eqn, ins, np.minimum(alo, blo), np.minimum(ahi, bhi), lin)]


def clamp(run, eqn, ins):
    lo_b, x, hi_b = ins
    shape = _oshape(eqn)
    (llo, lhi), (xlo, xhi), (hlo, hhi) = _scalar_or(shape, lo_b), _scalar_or(shape, x), _scalar_or(shape, hi_b)
    out_lo = np.minimum(np.maximum(xlo, llo), hlo)
    out_hi = np.minimum(np.maximum(xhi, lhi), hhi)
    lin = lin_hull([x.as_lin(), lo_b.as_lin(), hi_b.as_lin()], shape) if x.lin is not None else None
    return [_finish(eqn, ins, out_lo, out_hi, lin)]


def abs_(run, eqn, ins):
    b = ins[0]
    lo, hi = b.lo, b.hi
    out_lo = np.where(lo >= 0, lo, np.where(hi <= 0, -hi, 0.0))
    out_hi = np.maximum(np.abs(lo), np.abs(hi))
    lin = lin_hull([b.lin, lin_neg(b.lin)], b.shape) if b.lin is not None else None   # |v| = +-v
    return [_finish(eqn, ins, out_lo, out_hi, lin)]


def sign(run, eqn, ins):
    b = ins[0]
    return [_finish(eqn, ins, np.sign(b.lo), np.sign(b.hi))]


def _ipow_box(k):
    def box(a):
        lo, hi = a
        if k == 0:
            return np.ones_like(lo), np.ones_like(hi)
        if k < 0:
            rlo, rhi = iv_recip(lo, hi)
            return _ipow_box(-k)((rlo, rhi))
        if k == 1:
            return np.array(lo, dtype=np.float64, copy=True), np.array(hi, dtype=np.float64, copy=True)
        with np.errstate(over="ignore"):
            plo, phi = lo ** k, hi ** k
        # a power computed exactly in float64 (a constant: 2.0 ** 2) stays a point; the others are rounded out
        elo, ehi = _exact_power(lo, plo, k), _exact_power(hi, phi, k)
        if k % 2 == 1:
            out, exact = (plo, phi), (elo, ehi)
        else:
            first = np.abs(lo) <= np.abs(hi)
            out = (np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(plo, phi)), np.maximum(plo, phi))
            exact = (np.where(first, elo, ehi), np.where(first, ehi, elo))
        lo_, hi_ = out
        for _ in range(k.bit_length() + 1):
            lo_, hi_ = _dn(lo_), _up(hi_)
        lo_, hi_ = np.where(exact[0], out[0], lo_), np.where(exact[1], out[1], hi_)
        return np.where(out[0] == 0, 0.0, lo_) if k % 2 == 0 else lo_, hi_
    return box


def _exact_power(x, p, k: int, limit: int = 64) -> np.ndarray:
    """Where the float64 ``p = x ** k`` is exactly ``x ** k`` (checked with Fractions, for at most ``limit``
    finite entries: constants; larger arrays are reported inexact)."""
    x, p = np.asarray(x, dtype=np.float64), np.asarray(p, dtype=np.float64)
    out = np.zeros(np.broadcast(x, p).shape, dtype=bool)
    if out.size > limit:
        return out
    xb, pb = np.broadcast_to(x, out.shape), np.broadcast_to(p, out.shape)
    for i in np.ndindex(out.shape):
        if math.isfinite(xb[i]) and math.isfinite(pb[i]):
            out[i] = Fraction(float(pb[i])) == Fraction(float(xb[i])) ** k
    return out


def _one_minus_square_box(a):
    """1 - u^2 over u in [lo, hi]: 1 - M^2 <= 1 - u^2 <= 1 - m^2 with M = max |u| and m = min |u| (0 when the box
    holds 0), each end written (1 - s)(1 + s) at the point s with every sum and product rounded outward (exact
    where exact: 1 - 1 = 0, so tanh's box [-1, 1] gives [0, 1]); an infinite M gives -inf."""
    lo, hi = a
    big = np.maximum(np.abs(lo), np.abs(hi))
    small = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    ones = np.ones_like(big)

    def at(s):
        fin = np.isfinite(s)
        s = np.where(fin, s, 0.0)
        plo, phi = iv_mul(*iv_add(ones, ones, -s, -s), *iv_add(ones, ones, s, s))
        return np.where(fin, plo, -INF), np.where(fin, phi, -INF)

    return at(big)[0], at(small)[1]


def one_minus_square_op(run, eqn, ins):
    """The primitive ``one_minus_square(u)`` = 1 - u^2 (JAX 0.11.2 writes tanh's derivative as
    ``t * one_minus_square(tanh(x))``; earlier versions as ``(t + t u)(1 - u)``, the relation
    :func:`one_minus_square`): [1 - max u^2, 1 - min u^2], each end written (1 - s)(1 + s) and rounded outward
    (:func:`_one_minus_square_box`; exact where the relation, which rounds the square first, moves a few floats)."""
    return _elementwise_box(_one_minus_square_box)(run, eqn, ins)


#: the highest power of an unbounded value taken as a finite real: float32 ``r ** 8`` overflows only past
#: ``|r| = 6.6e4``, ``r ** 999`` already at ``|r| = 1.1`` (an infinity, and ``0 * r ** 999`` is NaN; adv19)
MAX_UNBOUNDED_POWER = 8


def _overflows(eqn, k: int, x: "Bound") -> bool:
    """``x ** k`` may be an infinity in the program's float: ``x`` unbounded and ``|k| > MAX_UNBOUNDED_POWER`` (a
    finite box whose power passes the float's largest number is undefined by :meth:`Bounds.checked`, as every
    rule's output is)."""
    return _is_float(eqn) and not x.bounded() and abs(k) > MAX_UNBOUNDED_POWER


def integer_pow(run, eqn, ins):
    k = int(eqn.params["y"])
    if k < 0 and _is_float(eqn) and not _nonzero(run, eqn.invars[0], ins[0]):      # 0 ** -k is an infinity
        return [Bound.undefined(_oshape(eqn), eqn)]
    if _overflows(eqn, k, ins[0]):
        return [Bound.undefined(_oshape(eqn), eqn)]
    return _elementwise_box(_ipow_box(k))(run, eqn, ins)


def square(run, eqn, ins):
    return _elementwise_box(_ipow_box(2))(run, eqn, ins)


def pow_(run, eqn, ins):
    x, y = ins
    shape = _oshape(eqn)
    (xlo, xhi), (ylo, yhi) = _scalar_or(shape, x), _scalar_or(shape, y)
    if y.is_point() and np.all(np.floor(ylo) == ylo) and np.all(np.abs(ylo) < 64) and np.unique(ylo).size == 1:
        k = int(ylo.reshape(-1)[0])
        if k < 0 and _is_float(eqn) and _contains_zero(x):
            return [Bound.undefined(shape, eqn)]
        out = _elementwise_box(_ipow_box(k))(run, eqn, [x])[0]
        return [Bound.undefined(shape, eqn) if _overflows(eqn, k, x) else out]
    # a negative base to a power that may not be an integer is NaN, 0 to a negative power an infinity
    whole = (ylo == yhi) & (np.floor(ylo) == ylo)
    if np.any((xlo < 0) & ~whole) or np.any((xlo <= 0) & (xhi >= 0) & (ylo < 0)):
        return [Bound.undefined(shape, eqn)]
    # an overflow: |x|^y past the float's largest number at a corner (y unbounded above with |x| > 1, 2 ** (r * r))
    if _is_float(eqn):
        big = float(np.log(np.finfo(np.dtype(eqn.outvars[0].aval.dtype)).max)) * (1 - 1e-6)
        with np.errstate(all="ignore"):
            logs = [y * np.log(np.abs(x)) for x in (xlo, xhi) for y in (ylo, yhi)]
        if any(np.any(np.nan_to_num(v, nan=0.0) > big) for v in logs):
            return [Bound.undefined(shape, eqn)]
    pos = xlo > 0
    with np.errstate(all="ignore"):
        c = [np.power(a, b) for a in (xlo, xhi) for b in (ylo, yhi)]
    lo = np.where(pos, _dn(_dn(np.minimum.reduce(c))), -INF)
    hi = np.where(pos, _up(_up(np.maximum.reduce(c))), INF)
    return [_finish(eqn, ins, lo, hi)]


def _cmp(op):
    def box(a, b):
        (alo, ahi), (blo, bhi) = a, b
        if op == "lt":
            t, f = ahi < blo, alo >= bhi
        elif op == "le":
            t, f = ahi <= blo, alo > bhi
        elif op == "gt":
            t, f = alo > bhi, ahi <= blo
        elif op == "ge":
            t, f = alo >= bhi, ahi < blo
        elif op == "eq":
            t, f = (alo == ahi) & (blo == bhi) & (alo == blo), (ahi < blo) | (alo > bhi)
        else:  # ne
            f, t = (alo == ahi) & (blo == bhi) & (alo == blo), (ahi < blo) | (alo > bhi)
        return np.where(f, 0.0, np.where(t, 1.0, 0.0)), np.where(t, 1.0, np.where(f, 0.0, 1.0))
    return _elementwise_box(box)


def _is_bool(v) -> bool:
    return np.dtype(v.aval.dtype) == np.bool_


def _logic(op):
    def rule(run, eqn, ins):
        if not all(_is_bool(v) for v in eqn.invars):
            return unknown_rule(run, eqn, ins)
        shape = _oshape(eqn)
        bs = [(np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape)) for b in ins]
        if op == "not":
            (lo, hi), = bs
            return [_finish(eqn, ins, 1 - hi, 1 - lo)]
        (alo, ahi), (blo, bhi) = bs
        if op == "and":
            return [_finish(eqn, ins, np.minimum(alo, blo), np.minimum(ahi, bhi))]
        if op == "or":
            return [_finish(eqn, ins, np.maximum(alo, blo), np.maximum(ahi, bhi))]
        definite = (alo == ahi) & (blo == bhi)
        val = np.abs(alo - blo)
        return [_finish(eqn, ins, np.where(definite, val, 0.0), np.where(definite, val, 1.0))]
    return rule


#: a comparison with its operands swapped (``c op a`` is ``a FLIP[op] c``)
_FLIP = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt", "eq": "eq", "ne": "ne"}
#: (comparison, its truth) -> which side of the other operand the compared variable lies on (closed hulls)
_SIDE = {("ge", 1): "above", ("gt", 1): "above", ("ge", 0): "below", ("gt", 0): "below",
         ("le", 1): "below", ("lt", 1): "below", ("le", 0): "above", ("lt", 0): "above",
         ("eq", 1): "equal", ("ne", 0): "equal"}


_EXACT_FLOATS = ("float16", "float32", "float64")    # NumPy's IEEE binary floats: each holds every value of those
                                                     # before it (more precision and more exponent range)


def _exact_convert(e) -> bool:
    """``e`` converts to the same or a wider IEEE float of the same shape: the value is unchanged. Other formats
    (bfloat16, the float8s: e.g. float8_e8m0fnu -> float16 underflows 2^-30 to 0) are not followed."""
    if tuple(e.invars[0].aval.shape) != tuple(e.outvars[0].aval.shape):
        return False
    src, dst = np.dtype(e.invars[0].aval.dtype).name, np.dtype(e.outvars[0].aval.dtype).name
    # exact conversions only (to the same or a wider float): a narrowing one rounds y >= c below c
    return src in _EXACT_FLOATS and dst in _EXACT_FLOATS and _EXACT_FLOATS.index(dst) >= _EXACT_FLOATS.index(src)


def _float_same(run, v):
    """``v`` followed out of calls and through exact float conversions of the same shape (same value)."""
    for _ in range(16):
        v = run.origin(v)
        e = run.producer(v)
        if e is None or e.primitive.name != "convert_element_type" or not _exact_convert(e):
            return v
        v = e.invars[0]
    return v


#: element-wise primitives whose output at position i is a function of their operands at position i alone: a
#: case of a select is computed again through them from a narrowed variable (``_reevaluated``)
_POINTWISE = frozenset({"add", "add_any", "sub", "mul", "div", "neg", "abs", "sign", "max", "min", "integer_pow", "square",
                        "stop_gradient",
                        "exp", "log", "log1p", "expm1", "tanh", "logistic", "sqrt", "rsqrt", "clamp", "copy",
                        "convert_element_type", "select_n", "lt", "le", "gt", "ge", "eq", "ne", "and", "or",
                        "not"})
_REEVAL_MAX = 64             # equations computed again per case, at most


#: calls whose body a recomputation follows (``Run.body_output``)
_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "eval_jaxpr", "remat", "remat2", "checkpoint"})
#: equations that move positions, followed with the positions they move (``_moved``)
_MOVES = frozenset({"broadcast_in_dim", "transpose"})


def _moved(e, projs, oshape, rshape):
    """Which axis of ``r`` each axis of ``e``'s output reads (None: a size-1 or copied axis), from its operands'
    (``projs``; None for an operand not computed from ``r``); None when two operands read ``r`` on different
    axes at one position, or an axis of ``r`` is read twice or not at all."""
    name = e.primitive.name
    rank = len(oshape)
    out = [None] * rank
    if name == "broadcast_in_dim":
        p, src = projs[0], _ishape(e.invars[0])
        for i, d in enumerate(e.params["broadcast_dimensions"]):
            out[d] = p[i] if src[i] == oshape[d] else None
    elif name == "transpose":
        p = projs[0]
        out = [p[i] for i in e.params["permutation"]]
    else:                                       # element-wise, operands of the output's rank
        for w, p in zip(e.invars, projs):
            if p is None:
                continue
            for a in range(rank):
                if p[a] is None or _ishape(w)[a] != oshape[a]:
                    continue                    # a size-1 operand axis copied along the output's
                if out[a] is not None and out[a] != p[a]:
                    return None
                out[a] = p[a]
    used = [b for b in out if b is not None]
    if len(used) != len(set(used)) or any(rshape[b] != 1 and b not in used for b in range(len(rshape))):
        return None
    return tuple(out)


def _reevaluated(run, v, base, narrowed: "Bound", memo: dict, budget: list):
    """The bound of ``v`` computed again with variable ``base`` in ``narrowed``, and which axis of ``base``
    each axis of ``v`` reads: ``(bound, proj)``, ``proj`` None (and ``v``'s own bound) where ``v`` is not
    computed from ``base`` through the equations followed.

    Followed back from ``v``: equations in ``_POINTWISE`` (exact conversions only), whose operands of the
    output's rank are followed, and ``broadcast_in_dim`` / ``transpose`` (``_MOVES``), which move positions.
    ``proj`` records the move (``_moved``), so that position j of every value followed is computed from one
    position of ``base``, the one ``proj`` names; a value that would read ``base`` at two positions is not
    computed again. Any other operand keeps its whole bound: sound whatever it depends on. The result is
    intersected with ``v``'s own box; its form (and norm facts) are the recomputed ones when it has a form, else
    ``v``'s.
    """
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return run.value(v), None
    v = run.origin(v)
    if isinstance(v, jcore.Literal):                # a call's literal argument
        return run.value(v), None
    if v is base:
        return narrowed, tuple(range(len(_ishape(base))))
    if v in memo:
        return memo[v]
    full = run.value(v)
    e = run.producer(v)
    memo[v] = (full, None)
    if e is not None and e.primitive.name in _CALLS and budget[0] > 0:
        w = run.body_output(e, v)              # the body's own variable (this call is its latest entry)
        if w is None:
            return full, None
        budget[0] -= 1
        got, proj = _reevaluated(run, w, base, narrowed, memo, budget)
        if proj is not None:
            src = got if got.lin is not None else full
            memo[v] = (Bound(np.maximum(got.lo, full.lo), np.minimum(got.hi, full.hi), src.lin, full.why,
                             src.nrm, got.nan), proj)
        return memo[v]
    if e is None or len(e.outvars) != 1 or budget[0] <= 0 or e.primitive.name not in RULES:
        return full, None
    name = e.primitive.name
    if name not in _POINTWISE and name not in _MOVES or \
            (name == "convert_element_type" and not _exact_convert(e)):
        return full, None
    budget[0] -= 1
    oshape = _ishape(e.outvars[0])
    ins, projs = [], []
    for k, w in enumerate(e.invars):
        b, pw = run.value(w), None
        follow = k == 0 if name in _MOVES else len(_ishape(w)) == len(oshape)
        if follow and not isinstance(w, jcore.Literal):
            nb, pw = _reevaluated(run, w, base, narrowed, memo, budget)
            if pw is not None:
                b = nb
        ins.append(b)
        projs.append(pw)
    if all(p is None for p in projs):
        return full, None
    proj = _moved(e, projs, oshape, _ishape(base))
    if proj is None:
        return full, None
    if name == "select_n" and len(ins) == 3:
        # a nested select: each case narrowed by its own predicate too, from r as narrowed here when the
        # predicate compares r itself at the positions this select reads it (a middle piece r * r between
        # -1 and 1 gets both ends); one budget for the whole nest
        ins = [ins[0]] + [_narrowed_case(run, e, k, ins[1 + k], (base, narrowed, proj), budget)
                          for k in range(2)]
        out = _select_defined(run, e, ins)[0]
    else:
        out = run.interp.checked(e, RULES[name](run, e, ins), ins, run)[0]
    if out.nan:
        memo[v] = (out, proj)
        return memo[v]
    lo, hi = np.maximum(out.lo, full.lo), np.minimum(out.hi, full.hi)
    src = out if out.lin is not None else full
    memo[v] = (Bound(lo, hi, src.lin, full.why, src.nrm), proj)
    return memo[v]


def _ieee_eps(v):
    """(unit roundoff, smallest normal) of ``v``'s dtype when it is an IEEE float NumPy knows, else None."""
    name = np.dtype(v.aval.dtype).name if hasattr(v, "aval") else None
    return (floats.unit_roundoff(name), float(np.finfo(name).tiny)) if name in _EXACT_FLOATS else None


def _sqrt_above(x):
    """An upper bound of sqrt(x) (x >= 0): IEEE sqrt is correctly rounded, so the float itself when its square is
    x exactly (Dekker's product), else one float up."""
    s = np.sqrt(x)
    p, err = _two_prod(s, s)
    return np.where((p == x) & (err == 0), s, _up(s))


def _squared_operand(run, e):
    """``r`` when equation ``e`` computes ``r * r`` (``integer_pow`` 2, ``square``, or ``mul`` of one variable by
    itself, of the same shape), else None."""
    if e is None or len(e.outvars) != 1:
        return None
    name = e.primitive.name
    if name == "square" or name == "integer_pow" and e.params.get("y") == 2:
        r = e.invars[0]
    elif name == "mul" and len(e.invars) == 2 and not isinstance(e.invars[0], _literal_type()) and \
            run.origin(e.invars[0]) is run.origin(e.invars[1]):
        r = e.invars[0]
    else:
        return None
    if isinstance(r, _literal_type()) or _ishape(r) != _ishape(e.outvars[0]):
        return None
    return _float_same(run, r)


def _through_moves(run, v):
    """``v`` followed back through ``broadcast_in_dim`` / ``transpose`` (and out of calls): the variable reached
    and which of its axes each axis of ``v`` reads (None: a copied axis), or (None, None)."""
    proj = tuple(range(len(_ishape(v))))
    for _ in range(16):
        v = run.origin(v)
        if isinstance(v, _literal_type()):
            return None, None
        pe = run.producer(v)
        if pe is None or pe.primitive.name not in _MOVES:
            return v, proj
        inner = tuple(range(len(_ishape(pe.invars[0]))))
        step = _moved(pe, [inner], _ishape(pe.outvars[0]), _ishape(pe.invars[0]))
        if step is None:
            return None, None
        proj = tuple(None if proj[a] is None else step[proj[a]] for a in range(len(proj)))
        v = pe.invars[0]
    return None, None


def _predicate(run, pv):
    """The comparison that produced boolean ``pv``, and which axis of its output each axis of ``pv`` reads
    (through ``broadcast_in_dim`` / ``transpose``: a predicate JAX's ``vmap`` broadcast over a tangent basis),
    or (None, None)."""
    v, proj = _through_moves(run, pv)
    pe = None if v is None else run.producer(v)
    if pe is None or pe.primitive.name not in _FLIP or len(pe.invars) != 2:
        return None, None
    return pe, proj


def _narrowed_case(run, eqn, k, case: "Bound", outer=None, budget=None) -> "Bound":
    """Case ``k`` of ``select_n`` where it is chosen, narrowed by the predicate that chooses it.

    ``jnp.where(y >= c, y, z)`` is ``select_n(y >= c, z, y)``: at every position where case 1 (``y``) is
    chosen the predicate is true there, so ``y >= c`` there, and the output's box is the hull of
    ``[max(lo_y, lo_c), hi_y]`` and ``z``'s box. Likewise ``jnp.where(jnp.abs(r) < c, f(r), g(r))`` (a Huber
    loss): where ``f(r)`` is chosen, ``|r| <= c_hi``, and ``f(r)`` is computed again from ``r`` in
    ``[-c_hi, c_hi]`` through the element-wise equations that lead to it (``_reevaluated``).

    Proven for a boolean predicate of the output's shape produced by a comparison of ``r`` or ``|r|`` with an
    operand whose box is known (a scalar or of ``r``'s shape), ``r`` of the comparison's shape (the same
    variable, entered into a call, or converted exactly to a wider float), possibly moved to the output's
    positions by ``broadcast_in_dim`` / ``transpose`` (JAX's ``vmap`` over a tangent basis does this to the
    derivative's select): position j of the predicate and of every value computed again reads ``r`` at the same
    position (``proj``). Comparisons are of real numbers (the domain holds no NaN), and the hull keeps the end
    (``y > c`` gives ``y >= c``). ``|r| >= c`` gives two half-lines, whose hull is not narrower: no claim.
    Anything else: the case unchanged.

    ``outer``: ``(r, its narrowed bound, proj)`` when this select is computed again inside an enclosing select's
    case (``_reevaluated``): where this predicate compares the same ``r`` at the positions ``proj`` names, the
    narrowing starts from that bound (both comparisons hold there). ``budget``: the recomputation budget, shared
    with the enclosing one.
    """
    pv = eqn.invars[0]
    oshape = _ishape(eqn.outvars[0])           # symbolic: the record axis is the symbol m
    if not _is_bool(pv) or len(eqn.invars) != 3 or _ishape(pv) != oshape:
        return case
    pe, pproj = _predicate(run, pv)
    if pe is None:
        return case
    return _narrowed_by(run, eqn.invars[1 + k], case, _narrowings(run, pe, k, pproj, outer), pproj,
                        _ishape(pe.outvars[0]), budget)


def _narrowed_by(run, cv, case: "Bound", narrowings, pproj, cshape, budget=None) -> "Bound":
    """Case ``cv`` (bound ``case``) computed again from the first ``(r, narrowed bound of r)`` of ``narrowings``
    whose recomputation reads ``r`` at the positions the predicate does (``pproj``; ``cshape`` the predicate's
    shape), intersected with ``case``; ``case`` itself when none does."""
    for base, narrowed in narrowings:
        got, proj = _reevaluated(run, cv, base, narrowed, {}, [_REEVAL_MAX] if budget is None else budget)
        if _lines_up(proj, pproj, cshape):
            if got.nan:
                return got
            out = Bound(np.maximum(got.lo, case.lo), np.minimum(got.hi, case.hi), got.lin if got.lin is not None
                        else case.lin, case.why, got.nrm if got.lin is not None else case.nrm)
            return _rational_case(run, cv, out, base, narrowed, lambda pr: _lines_up(pr, pproj, cshape))
    return case


def _select_cases(run, eqn, ins):
    """``jnp.select(conds, cases, default)``, i.e. ``select_n(j, default, case_1, ...)`` with ``j = argmax(stack(
    [False, c_1, ...]))`` (possibly moved by ``vmap`` over a tangent basis): case ``k`` is chosen only where
    ``c_k`` holds and ``c_1 ... c_(k-1)`` do not, the default where none does (``jnp.piecewise``: no later one,
    :func:`.switch.select_conditions`). Each case is computed again from
    ``r`` narrowed by every comparison those imply (``_narrowings`` chained through ``outer``: ``-1 <= r < 1`` for
    the middle piece of a three-piece loss), as a ``jnp.where`` case is; conditions that are not comparisons (or
    ``and`` of comparisons that hold, ``or`` of comparisons that fail, ``not``) narrow nothing."""
    iv, pproj = _through_moves(run, eqn.invars[0])
    got = None if iv is None else HOOKS["select_conditions"](run, iv)
    if got is None or len(got[0]) != len(ins) - 2:
        return ins
    conds, last = got
    cshape = _ishape(iv)
    out = [ins[0]]
    for k in range(len(ins) - 1):
        # jnp.select: c_k and no earlier one; jnp.piecewise: c_k and no later one; the default: none
        others = conds if not k else conds[k:] if last else conds[:k - 1]
        facts = [(c, 0) for c in others] + ([(conds[k - 1], 1)] if k else [])
        comps = [pt for c, truth in facts for pt in _implied(run, c, truth)]
        narrowed = {}                          # r -> its bound where every comparison holds
        for pe, truth in comps:
            for base, nb in list(_narrowings(run, pe, truth, pproj)):
                if base in narrowed:
                    nb = Bound(np.maximum(nb.lo, narrowed[base].lo), np.minimum(nb.hi, narrowed[base].hi),
                               nb.lin, nb.why, nb.nrm)
                narrowed[base] = nb
        out.append(_narrowed_by(run, eqn.invars[1 + k], ins[1 + k], list(narrowed.items()), pproj, cshape)
                   if narrowed else ins[1 + k])
    return out


def _implied(run, c, truth, depth=0):
    """The comparisons (equation, truth) that boolean ``c`` having value ``truth`` implies: itself, both sides
    of a true ``and`` or a false ``or``, the operand of ``not`` negated; nothing from anything else."""
    if isinstance(c, _literal_type()) or depth > 16:
        return []
    e = run.producer(run.origin(c))
    if e is None:
        return []
    name = e.primitive.name
    if name in _FLIP and len(e.invars) == 2 and _ishape(e.outvars[0]) == _ishape(c):
        return [(e, truth)]
    if not all(_is_bool(w) for w in e.invars):
        return []
    if name == "not":
        return _implied(run, e.invars[0], 1 - truth, depth + 1)
    if name == "and" and truth == 1 or name == "or" and truth == 0:
        return [x for w in e.invars for x in _implied(run, w, truth, depth + 1)]
    return []


def _rational_case(run, v, case: "Bound", base, narrowed: "Bound", lines_up) -> "Bound":
    """A derivative case ``t * P(r) / Q(r)`` with ``r`` the narrowed variable: bounded over the narrowed interval
    (:mod:`.rational`; Tukey's biweight, whose derivative is a polynomial of r on |r| <= c), intersected; only
    when the case reads ``r`` at the positions the predicate compares (``lines_up`` of the walk's projection)."""
    if isinstance(v, _literal_type()) or case.lin is None:
        return case                              # no linear form: not a tangent of the record
    got = HOOKS["rational_tangent"](run, v, case.shape, override=(base, narrowed, lines_up))
    if got is None or not np.max(_absmax(got[0], got[1])) < np.max(_absmax(case.lo, case.hi)) * (1 - 1e-9):
        return case                              # no narrower: the recomputed case (and its form) stays
    return Bound(np.maximum(case.lo, got[0]), np.minimum(case.hi, got[1]), got[2] if got[2] is not None
                 else case.lin, case.why, case.nrm if got[2] is None else None)


def _lines_up(proj, pproj, cshape) -> bool:
    """A value computed again reads ``r`` (``proj``) at the positions the predicate reads it (``pproj``), each
    axis of ``r`` once."""
    return proj is not None and all(p is None or p == q for p, q in zip(proj, pproj)) and \
        all(q is None or q in proj or cshape[q] == 1 for q in pproj)


def _narrowings(run, pe, k, pproj, outer=None, pairs=None):
    """For comparison ``pe`` with truth ``k`` (1 true, 0 false): each ``(r, narrowed bound of r)`` it implies,
    ``r`` the compared variable (or the operand of ``|r|`` or ``r * r``), for one operand order then the other
    (``pairs``: the ``(compared, other, op)`` to use instead)."""
    cshape = _ishape(pe.outvars[0])
    if pairs is None:
        pairs = ((pe.invars[0], pe.invars[1], pe.primitive.name),
                 (pe.invars[1], pe.invars[0], _FLIP[pe.primitive.name]))
    for a, b, op in pairs:
        side, other = _SIDE.get((op, k)), run.value(b)
        if side is None or other is None or _ishape(b) not in ((), cshape):
            continue
        base = _float_same(run, a)
        # -r, |r| and r * r are followed for IEEE floats only (an integer's -INT_MIN and |INT_MIN| wrap to
        # INT_MIN, and 65536 * 65536 to 0 in int32)
        for _ in range(4):                      # -r <= c: r >= -c (negation is exact)
            ae = run.producer(base)
            if isinstance(base, _literal_type()) or ae is None or ae.primitive.name != "neg" or \
                    _ishape(ae.invars[0]) != _ishape(base) or _ieee_eps(base) is None:
                break
            base = _float_same(run, ae.invars[0])
            other = Bound(-np.asarray(other.hi), -np.asarray(other.lo))
            side = {"above": "below", "below": "above"}.get(side, side)
        ae = run.producer(base)
        absolute = ae is not None and ae.primitive.name == "abs" and _ieee_eps(base) is not None
        squared = _squared_operand(run, ae) if _ieee_eps(base) is not None else None
        if absolute:
            base = _float_same(run, ae.invars[0])
        elif squared is not None:               # fl(r * r) <= c: |r| <= sqrt(c) up to rounding (a capped square)
            u, tiny = _ieee_eps(base)
            # round to nearest: fl(r^2) = r^2 (1 + d), |d| <= u, unless r^2 is below the smallest normal (a
            # subnormal, or 0 where the CPU flushes subnormals): r^2 <= max(c / (1 - u), tiny)
            c2 = np.maximum(_up(np.maximum(other.hi, 0.0) / (1.0 - u)), tiny)
            base, absolute = squared, True
            other = Bound(np.zeros_like(other.lo), _sqrt_above(c2))
        if isinstance(base, _literal_type()) or _ishape(base) != cshape:
            continue
        shape = conc(cshape)
        blo, bhi = np.broadcast_to(other.lo, shape), np.broadcast_to(other.hi, shape)
        r = run.value(base)
        if outer is not None and outer[0] is base and outer[2] is not None and tuple(outer[2]) == tuple(pproj):
            r = outer[1]                        # r where the enclosing case is chosen: narrower still
        lo, hi = np.broadcast_to(r.lo, shape), np.broadcast_to(r.hi, shape)
        if absolute:
            if side == "above":
                continue
            lo, hi = np.maximum(lo, -bhi), np.minimum(hi, bhi)
        else:
            if side in ("above", "equal"):
                lo = np.maximum(lo, blo)
            if side in ("below", "equal"):
                hi = np.minimum(hi, bhi)
        yield base, Bound(lo, hi, r.lin, r.why, r.nrm)


def _literal_type():
    from jax.extend import core as jcore

    return jcore.Literal


def select_n(run, eqn, ins):
    """The hull of the cases each position may choose (each narrowed by its predicate); undefined
    (``Bound.nan``) as :func:`_select_defined` says, in a derivative program when any case is before narrowing."""
    shape = _oshape(eqn)
    if ins[0].nan:                                     # an index converted from a NaN: any case
        ins = [Bound.top(ins[0].shape, ins[0].why)] + list(ins[1:])
    bad = next((c for c in ins[1:] if c.nan), None)
    if bad is not None and _reverse(run, eqn.outvars[0]):
        return [Bound.undefined(shape, bad.why or eqn)]
    if len(ins) == 3 and _is_bool(eqn.invars[0]):     # jnp.where(y >= c, y, z): where y is chosen, y >= c
        ins = [ins[0]] + [_narrowed_case(run, eqn, k, c) for k, c in enumerate(ins[1:])]
    elif not _is_bool(eqn.invars[0]):                  # jnp.select: case k where c_k holds and no earlier one
        ins = _select_cases(run, eqn, ins)
    return _select_defined(run, eqn, ins)


def _reverse(run, v) -> bool:
    """``v`` is a value of a derivative program (forward mode) whose cotangent the samplers' reverse mode computes:
    it depends on theta (the context's ``reverse`` predicate, set by ``program.derivative_context``)."""
    dependent = run.context.get("reverse") if run is not None else None
    return bool(dependent is not None and dependent(v))


def _select_defined(run, eqn, ins):
    """``_select_hull``, or undefined when a case that a position may choose is undefined; in a derivative program
    (:func:`_reverse`) when any case is, chosen or not: the derivative programs the analysis bounds are forward
    mode (a select of tangents), but the samplers differentiate in reverse mode, which multiplies the derivative
    of the case not chosen by a zero cotangent (``jnp.where(y > 5, log(r), r)`` at r = 0: ``0 * (1 / 0)`` is
    NaN; adv19). A select of values computes no arithmetic with the case not chosen (``jnp.where(y == 0, 0,
    1 / y)`` is defined)."""
    shape = _oshape(eqn)
    strict = _reverse(run, eqn.outvars[0])
    plo, phi = np.broadcast_to(ins[0].lo, shape), np.broadcast_to(ins[0].hi, shape)
    for k, c in enumerate(ins[1:]):
        if c.nan and (strict or np.any((plo <= k) & (phi >= k))):
            return [Bound.undefined(shape, c.why or eqn)]
    return _select_hull(run, eqn, [ins[0]] + [Bound.top(c.shape) if c.nan else c for c in ins[1:]])


def _select_hull(run, eqn, ins):
    """The hull of the cases a position may choose (no narrowing: what ``_reevaluated`` computes again with,
    whose operands are already narrowed, so that nested selects cost linear time)."""
    pred, cases = ins[0], list(ins[1:])
    shape = _oshape(eqn)
    plo, phi = np.broadcast_to(pred.lo, shape), np.broadcast_to(pred.hi, shape)
    los = [np.broadcast_to(c.lo, shape) for c in cases]
    his = [np.broadcast_to(c.hi, shape) for c in cases]
    lo = np.full(shape, INF)
    hi = np.full(shape, -INF)
    for k in range(len(cases)):
        can = (plo <= k) & (phi >= k)
        lo = np.where(can, np.minimum(lo, los[k]), lo)
        hi = np.where(can, np.maximum(hi, his[k]), hi)
    lin = None
    if any(c.lin is not None for c in cases):
        forms = [c.as_lin() for c in cases]
        if np.array_equal(plo, phi):                 # every element's case is known: pick it
            full = [lin_hull([f], shape) for f in forms]
            keys = set().union(*(f.A for f in full))
            idx = plo.astype(int)
            clo = np.choose(idx, [f.clo for f in full])
            chi = np.choose(idx, [f.chi for f in full])
            A = {}
            for k in keys:
                p = next(f.A[k][0].shape[-1] for f in full if k in f.A)
                z = np.zeros(tuple(shape) + (p,))
                A[k] = (np.choose(idx[..., None], [f.A[k][0] if k in f.A else z for f in full]),
                        np.choose(idx[..., None], [f.A[k][1] if k in f.A else z for f in full]))
            lin = Lin(clo, chi, A)
        else:
            lin = lin_hull(forms, shape)
    return [_finish(eqn, ins, lo, hi, lin)]


def convert(run, eqn, ins):
    b = ins[0]
    dt = np.dtype(eqn.params["new_dtype"])
    src = np.dtype(eqn.invars[0].aval.dtype)
    if dt == np.bool_:
        t = (b.lo > 0) | (b.hi < 0)
        f = (b.lo == 0) & (b.hi == 0)
        return [_finish(eqn, ins, np.where(t, 1.0, 0.0), np.where(f, 0.0, 1.0))]
    if np.issubdtype(dt, np.integer) and not np.issubdtype(src, np.integer) and src != np.bool_:
        info = np.iinfo(dt)
        lo, hi = np.trunc(b.lo), np.trunc(b.hi)
        ok = (lo >= info.min) & (hi <= info.max)
        return [_finish(eqn, ins, np.where(ok, lo, -INF), np.where(ok, hi, INF))]
    if _narrower_range(src, dt) and _reverse(run, eqn.invars[0]):
        # in a derivative program, a float of smaller range (float16, float8): reverse mode converts the cotangent
        # too, and 1 / p in float16 is an infinity for p < 1.5e-5 (Bernoulli probs in float16 has a NaN gradient
        # at eta = -16, where this forward-mode program is finite; adv19)
        return [Bound.undefined(_oshape(eqn), eqn)]
    rounded = _rounding_convert(src, dt, b.lo, b.hi)
    if rounded is not None:
        return [_finish(eqn, ins, *rounded, lin=b.lin)]
    return [Bound(b.lo, b.hi, b.lin, b.why, b.nrm)]


def _narrower_range(src, dst) -> bool:
    """``dst`` is a float whose largest number is below ``src``'s (float32 -> float16 or a float8; not bfloat16,
    whose range is float32's)."""
    if not np.issubdtype(np.dtype(src), np.floating) and np.dtype(src).name not in ("bfloat16",):
        return False
    try:
        import jax.numpy as jnp

        return float(jnp.finfo(dst).max) < 0.5 * float(jnp.finfo(src).max)      # bfloat16: 0.996 of float32
    except (TypeError, ValueError):
        return False


def _rounding_convert(src, dst, lo, hi):
    """The box of a conversion to a float that may round (a narrower float: float32 -> float16 or bfloat16, a
    float8; an integer beyond its mantissa), or None when every value converts exactly (the same or a wider IEEE
    float). Rounding to nearest is monotone, so ``[fl(lo), fl(hi)]`` holds every converted value; an end that is
    not itself representable is moved one relative ``eps`` further out (against a conversion that rounds twice);
    a value beyond the largest float becomes infinite. A format without negative values or zero
    (float8_e8m0fnu) keeps nothing: the unbounded box."""
    if np.dtype(dst) == np.bool_ or np.issubdtype(np.dtype(dst), np.integer):
        return None
    s, d = np.dtype(src).name, np.dtype(dst).name
    if s in _EXACT_FLOATS and d in _EXACT_FLOATS and _EXACT_FLOATS.index(d) >= _EXACT_FLOATS.index(s):
        return None
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    try:
        import jax.numpy as jnp

        fi = jnp.finfo(dst)
        if float(fi.min) >= 0 or "e8m0" in d:
            raise ValueError(d)
        eps = float(fi.eps)
        with np.errstate(all="ignore"):
            flo = np.asarray(lo, dtype=np.dtype(dst)).astype(np.float64)
            fhi = np.asarray(hi, dtype=np.dtype(dst)).astype(np.float64)
    except Exception:       # no signed zero-holding format, or one NumPy cannot convert to: nothing kept
        return np.full(lo.shape, -INF), np.full(hi.shape, INF)
    with np.errstate(all="ignore"):
        nlo = np.where(flo == lo, lo, _dn(flo - np.abs(flo) * eps))
        nhi = np.where(fhi == hi, hi, _up(fhi + np.abs(fhi) * eps))
    nlo = np.where(np.isnan(flo), -INF, nlo)
    nhi = np.where(np.isnan(fhi), INF, nhi)
    return nlo, nhi


def identity(run, eqn, ins):
    return list(ins[:len(eqn.outvars)])


def reduce_precision(run, eqn, ins):
    b = ins[0]
    rel = 2.0 ** -int(eqn.params["mantissa_bits"])
    lo = b.lo - np.abs(b.lo) * rel
    hi = b.hi + np.abs(b.hi) * rel
    return [_finish(eqn, ins, _dn(lo), _up(hi))]


def _structural(op):
    """A rule for a structural op given ``op(eqn, array, extra) -> array`` valid on the slots; the
    linear form survives only when ``position_preserving(eqn)``."""
    fn, keeps = op

    def rule(run, eqn, ins):
        b = ins[0]
        lo, hi = fn(eqn, b.lo, 0), fn(eqn, b.hi, 0)
        lin = None
        if b.lin is not None and keeps(eqn):
            lin = b.lin.struct(lambda a, extra: fn(eqn, a, extra))
        out = Bound(np.asarray(lo), np.asarray(hi), lin, b.why)
        if b.nrm and (b.lin is None or lin is not None):
            _with_nrm(out, _move_nrm(eqn, b.nrm, out.shape))
        return [out]
    return rule


def _move_nrm(eqn, nrm: dict, out_shape) -> dict:
    """Norm facts through a structural op (keepdims arrays: the norm axis has size 1)."""
    name = eqn.primitive.name
    out = {}
    for k, n in nrm.items():
        if name == "transpose":
            perm = tuple(eqn.params["permutation"])
            out[perm.index(k)] = np.transpose(n, perm)
        elif name == "broadcast_in_dim":
            dims = eqn.params["broadcast_dimensions"]
            copies = _ishape(eqn.outvars[0])[dims[k]]
            if _ishape(eqn.invars[0])[k] != 1 or copies == 1:
                copies = 1
            elif not is_const_dim(copies):
                continue                       # one entry made every record's: no fact kept
            target = list(out_shape)
            target[dims[k]] = 1
            out[dims[k]] = _bcast(n, tuple(target), dims, 0)
            if copies != 1:
                # an axis of size 1 made `copies` long: `copies` equal entries, norm sqrt(copies) times as large
                out[dims[k]] = _up(out[dims[k]] * _up(np.sqrt(np.float64(copies))))
        elif name == "squeeze":
            dims = sorted(int(d) % n.ndim for d in eqn.params["dimensions"])
            if k in dims:
                continue
            out[k - sum(1 for d in dims if d < k)] = np.squeeze(n, axis=tuple(dims))
        elif name == "rev":
            dims = tuple(d for d in eqn.params["dimensions"] if d != k)
            out[k] = np.flip(n, axis=dims) if dims else n
        elif name == "slice":
            p = eqn.params
            strides = p.get("strides") or (1,) * n.ndim
            src = _ishape(eqn.invars[0])
            idx = [slice(None) if (a == k or not is_const_dim(src[a])) else
                   slice(int(p["start_indices"][a]), int(p["limit_indices"][a]), int(strides[a]))
                   for a in range(n.ndim)]
            out[k] = n[tuple(idx)]                 # a sub-vector along k has a smaller norm
    return out


def _always(eqn):
    return True


def _bcast_op(eqn, arr, extra):
    return _bcast(arr, _oshape(eqn), eqn.params["broadcast_dimensions"], extra)


def _transpose_op(eqn, arr, extra):
    perm = tuple(eqn.params["permutation"])
    return np.transpose(arr, perm + tuple(range(len(perm), len(perm) + extra)))


def _squeeze_op(eqn, arr, extra):
    n = arr.ndim - extra
    return np.squeeze(arr, axis=tuple(int(d) % n for d in eqn.params["dimensions"]))


def _rev_op(eqn, arr, extra):
    dims = tuple(d for d in eqn.params["dimensions"] if is_const_dim(_ishape(eqn.invars[0])[d]))
    return np.flip(arr, axis=dims) if dims else arr


def _rev_keeps(eqn):
    shape = _ishape(eqn.invars[0])
    return all(is_const_dim(shape[d]) for d in eqn.params["dimensions"])


def reshape(run, eqn, ins):
    b = ins[0]
    shape = _oshape(eqn)
    src = _ishape(eqn.invars[0])
    if b.lo.size != int(np.prod(shape)) or eqn.params.get("dimensions") is not None:
        return [_hull_all(b, shape, eqn, ins)]
    lo, hi = b.lo.reshape(shape), b.hi.reshape(shape)
    lin = None
    if b.lin is not None:
        # positions are preserved when every symbolic axis keeps its row-major stride position
        dst = _ishape(eqn.outvars[0])
        if len(_sym(src)) == len(_sym(dst)):
            lin = b.lin.struct(lambda a, extra: a.reshape(shape + a.shape[a.ndim - extra:]))
    out = Bound(lo, hi, lin, b.why)
    if b.nrm and (b.lin is None or lin is not None):
        cs = b.lo.shape
        nrm = {}
        for k, n in b.nrm.items():
            before, after = int(np.prod(cs[:k])), int(np.prod(cs[k + 1:]))
            for j, d in enumerate(shape):
                if d == cs[k] and int(np.prod(shape[:j])) == before and int(np.prod(shape[j + 1:])) == after:
                    nrm[j] = n.reshape(shape[:j] + (1,) + shape[j + 1:])
                    break
        _with_nrm(out, nrm)
    return [out]


def _slice_op(eqn, arr, extra):
    p = eqn.params
    src = _ishape(eqn.invars[0])
    strides = p.get("strides") or (1,) * len(src)
    idx = []
    for ax, d in enumerate(src):
        if not is_const_dim(d):
            idx.append(slice(None))
        else:
            idx.append(slice(int(p["start_indices"][ax]), int(p["limit_indices"][ax]), int(strides[ax])))
    return _lead_index(arr, extra, idx)


def _slice_keeps(eqn):
    p = eqn.params
    src = _ishape(eqn.invars[0])
    strides = p.get("strides") or (1,) * len(src)
    return all(is_const_dim(d) or (p["start_indices"][ax] == 0 and strides[ax] == 1 and p["limit_indices"][ax] == d)
               for ax, d in enumerate(src))


def squeeze_rule(run, eqn, ins):
    return _structural((_squeeze_op, _always))(run, eqn, ins)


def reduce_sum(run, eqn, ins):
    b = ins[0]
    axes = tuple(int(a) for a in eqn.params["axes"])
    src = _ishape(eqn.invars[0])
    m = run.context.get("m", 1)
    n_sym = 1
    for a in axes:
        if not is_const_dim(src[a]):
            n_sym *= conc((src[a],), m)[0]
    n = max(1, int(np.prod([b.lo.shape[a] for a in axes])) if axes else 1)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = b.lo.sum(axis=axes), b.hi.sum(axis=axes)
        # float64 summation error <= n u sum |terms| (separately for each end; 0 when the terms are 0)
        elo, ehi = ((n - 1) * _U * np.abs(b.lo).sum(axis=axes) * 2, (n - 1) * _U * np.abs(b.hi).sum(axis=axes) * 2)
    elo, ehi = np.where(np.isfinite(elo), elo, 0.0), np.where(np.isfinite(ehi), ehi, 0.0)
    lo, hi = np.where(elo == 0, lo, _dn(lo - elo)), np.where(ehi == 0, hi, _up(hi + ehi))
    if n_sym > 1:
        lo, hi = iv_mul(lo, hi, np.float64(n_sym), np.float64(n_sym))
    lin = None
    if b.lin is not None and n_sym == 1 and all(is_const_dim(src[a]) for a in axes):
        lin = b.lin.struct(lambda a, extra: a.sum(axis=axes))
    return [_finish(eqn, ins, lo, hi, lin)]


def _reduce_extreme(kind):
    def rule(run, eqn, ins):
        b = ins[0]
        axes = tuple(int(a) for a in eqn.params["axes"])
        f = np.max if kind == "max" else np.min
        if any(b.lo.shape[a] == 0 for a in axes):
            # a reduction over an empty axis is its identity (e.g. NumPyro's ordered-cutpoints check with one
            # cutpoint): -inf / +inf for floats, the integer type's extreme, False / True for booleans
            dt = np.dtype(eqn.outvars[0].aval.dtype)
            if dt == np.bool_:
                ident = 0.0 if kind == "max" else 1.0
            elif np.issubdtype(dt, np.integer):
                ident = float(np.iinfo(dt).min if kind == "max" else np.iinfo(dt).max)
            else:
                ident = -INF if kind == "max" else INF
            shape = _oshape(eqn)
            return [_finish(eqn, ins, np.full(shape, ident), np.full(shape, ident))]
        return [_finish(eqn, ins, f(b.lo, axis=axes), f(b.hi, axis=axes))]
    return rule


def reduce_bool(kind):
    def rule(run, eqn, ins):
        if not _is_bool(eqn.invars[0]):
            return unknown_rule(run, eqn, ins)
        b = ins[0]
        axes = tuple(int(a) for a in eqn.params["axes"])
        f = np.min if kind == "and" else np.max
        if any(b.lo.shape[a] == 0 for a in axes):        # over an empty axis: the identity (all: True, any: False)
            ident = 1.0 if kind == "and" else 0.0
            return [_finish(eqn, ins, np.full(_oshape(eqn), ident), np.full(_oshape(eqn), ident))]
        return [_finish(eqn, ins, f(b.lo, axis=axes), f(b.hi, axis=axes))]
    return rule


def arg_extreme(run, eqn, ins):
    axes = tuple(int(a) for a in eqn.params["axes"])
    src = _ishape(eqn.invars[0])
    n = conc((src[axes[0]],), run.context.get("m", 1))[0]
    shape = _oshape(eqn)
    return [_finish(eqn, ins, np.zeros(shape), np.full(shape, float(n - 1)))]


def cumulative(run, eqn, ins):
    b = ins[0]
    name = eqn.primitive.name
    axis = int(eqn.params["axis"])
    src = _ishape(eqn.invars[0])
    if not is_const_dim(src[axis]):
        n = conc((src[axis],), run.context.get("m", 1))[0]
        if name == "cumsum":
            lo, hi = iv_hull(b.lo, b.hi, *iv_mul(b.lo, b.hi, np.float64(n), np.float64(n)))
            return [_finish(eqn, ins, lo, hi)]
        if name in ("cummax", "cummin"):
            return [_finish(eqn, ins, b.lo, b.hi)]
        return [Bound.top(b.shape, eqn)]
    rev = bool(eqn.params.get("reverse", False))

    def scan(a, f):
        a = np.flip(a, axis) if rev else a
        out = f(a, axis=axis)
        return np.flip(out, axis) if rev else out
    if name == "cumsum":
        n = b.lo.shape[axis]
        elo = (n - 1) * _U * 2 * scan(np.abs(b.lo), np.cumsum)
        ehi = (n - 1) * _U * 2 * scan(np.abs(b.hi), np.cumsum)
        elo, ehi = np.where(np.isfinite(elo), elo, 0.0), np.where(np.isfinite(ehi), ehi, 0.0)
        slo, shi = scan(b.lo, np.cumsum), scan(b.hi, np.cumsum)
        lo, hi = np.where(elo == 0, slo, _dn(slo - elo)), np.where(ehi == 0, shi, _up(shi + ehi))
        lin = b.lin.struct(lambda a, extra: scan(a, np.cumsum)) if b.lin is not None else None
        return [_finish(eqn, ins, lo, hi, lin)]
    if name == "cummax":
        return [_finish(eqn, ins, scan(b.lo, np.maximum.accumulate), scan(b.hi, np.maximum.accumulate))]
    if name == "cummin":
        return [_finish(eqn, ins, scan(b.lo, np.minimum.accumulate), scan(b.hi, np.minimum.accumulate))]
    if name == "cumlogsumexp":
        # increasing in every input: the scans of the ends bound it.  Each step (numpy's logaddexp: libm's exp and
        # log1p and an add) errs by LIBM_ULPS + 2 floats of its result at most and passes the error before it on
        # with a factor <= 1 (d/da logaddexp(a, x) = sigmoid(a - x)): n (LIBM_ULPS + 2) floats of the largest
        # magnitude along the axis bound the accumulated error
        f, n = np.logaddexp.accumulate, b.lo.shape[axis]

        def err(v):
            big = np.max(np.abs(np.where(np.isfinite(v), v, 0.0)), axis=axis, keepdims=True)
            return n * (LIBM_ULPS + 2) * np.spacing(big)
        slo, shi = scan(b.lo, f), scan(b.hi, f)
        with np.errstate(invalid="ignore", over="ignore"):
            lo = np.where(np.isfinite(slo), _dn(slo - err(slo)), slo)
            hi = np.where(np.isfinite(shi), _up(shi + err(shi)), shi)
        return [_finish(eqn, ins, lo, hi)]
    return [Bound.top(b.shape, eqn)]


def sort(run, eqn, ins):
    dim = int(eqn.params["dimension"])
    outs = []
    for b in ins:
        lo = np.broadcast_to(b.lo.min(axis=dim, keepdims=True), b.shape)
        hi = np.broadcast_to(b.hi.max(axis=dim, keepdims=True), b.shape)
        outs.append(_finish(eqn, [b], lo, hi))
    return outs


def top_k(run, eqn, ins):
    b = ins[0]
    shape = _oshape(eqn, 0)
    lo = np.broadcast_to(b.lo.min(axis=-1, keepdims=True), shape)
    hi = np.broadcast_to(b.hi.max(axis=-1, keepdims=True), shape)
    n = b.shape[-1]
    return [_finish(eqn, ins, lo, hi), _finish(eqn, ins, np.zeros(_oshape(eqn, 1)), np.full(_oshape(eqn, 1), n - 1.0))]


def concatenate(run, eqn, ins):
    dim = int(eqn.params["dimension"])
    src = _ishape(eqn.invars[0])
    shape = _oshape(eqn)
    if not is_const_dim(_ishape(eqn.outvars[0])[dim]):
        lo = np.minimum.reduce([b.lo for b in ins])
        hi = np.maximum.reduce([b.hi for b in ins])
        return [_finish(eqn, ins, np.broadcast_to(lo, shape), np.broadcast_to(hi, shape))]
    del src
    out = _concat_slots(eqn, ins, dim)
    return [_with_nrm(out, {dim: _concat_norm(run, eqn, ins, dim)})]


#: calls whose bodies ``_same`` does not compare (a custom_vjp call is compared by its parameters)
_SAME_CALLS = frozenset(CALL_BODIES) - {"custom_vjp_call", "custom_vjp_call_jaxpr"}


def _literal_equal(u, v) -> bool:
    from jax.extend import core as jcore

    return isinstance(u, jcore.Literal) and isinstance(v, jcore.Literal) and \
        np.dtype(u.aval.dtype) == np.dtype(v.aval.dtype) and np.array_equal(np.asarray(u.val), np.asarray(v.val))


def _same(run, u, v, depth: int = 8) -> bool:
    """``u`` and ``v`` are computed by the same equation from the same operands (``r - 1`` written twice: JAX
    does not merge them), followed ``depth`` equations back."""
    from jax.extend import core as jcore

    if v is None:
        return False
    if not isinstance(u, jcore.Literal):
        u = run.origin(u)
    if not isinstance(v, jcore.Literal):
        v = run.origin(v)
    if isinstance(u, jcore.Literal) or isinstance(v, jcore.Literal):
        return _literal_equal(u, v)
    if u is v:
        return True
    a, b = run.producer(u), run.producer(v)
    if depth <= 0 or a is None or b is None or a.primitive is not b.primitive or len(a.outvars) != 1 or \
            len(b.outvars) != 1 or a.primitive.name in _SAME_CALLS or len(a.invars) != len(b.invars) or \
            tuple(u.aval.shape) != tuple(v.aval.shape) or u.aval.dtype != v.aval.dtype:
        return False
    try:
        if a.params != b.params:
            return False
    except Exception:  # noqa: BLE001 - parameters that do not compare (arrays): not the same
        return False
    return all(_same(run, x, y, depth - 1) for x, y in zip(a.invars, b.invars))


def _concat_norm(run, eqn, ins, dim: int):
    """A bound of the norm along ``dim`` of the constant part of a concatenation, or None: the operands' own
    (:func:`c_norm`, else their constant parts' boxes) by Pythagoras, except that ``cos(z)`` and ``sin(z)`` of one ``z`` (same variable, same shape: random
    Fourier or Hilbert-space features, ``jnp.concatenate([jnp.cos(x f), jnp.sin(x f)], axis=1)``) count together
    as ``sqrt(n)``, ``n`` the size of ``z`` along ``dim`` (``cos^2 + sin^2 = 1`` entry by entry, real
    arithmetic)."""
    lit = _literal_type()
    kinds = []
    for v in eqn.invars:
        e = None if isinstance(v, lit) else run.producer(v)
        kinds.append((e.primitive.name, e.invars[0]) if e is not None and
                     e.primitive.name in ("cos", "sin") and not isinstance(e.invars[0], lit) else None)
    # a value that is its constant part, computed in float32 or float64 (a float16 cos and sin, each rounded by
    # up to 2^-11, have norms up to 1 + 5e-4: a rounding the real-arithmetic fact would hide)
    kinds = [k if b.lin is None and np.dtype(v.aval.dtype) in (np.float32, np.float64) else None
             for k, b, v in zip(kinds, ins, eqn.invars)]
    paired, squares = set(), []
    shape = list(_oshape(eqn))
    shape[dim] = 1
    for i, ki in enumerate(kinds):
        if i in paired or ki is None or ki[0] != "cos":
            continue
        for j, kj in enumerate(kinds):
            if j not in paired and kj is not None and kj[0] == "sin" and _same(run, ki[1], kj[1]) and \
                    _ishape(eqn.invars[i]) == _ishape(eqn.invars[j]):
                paired |= {i, j}
                squares.append(np.full(shape, float(ins[i].shape[dim])))
                break
    if not paired:
        return None
    for i, b in enumerate(ins):
        if i in paired:
            continue
        n = c_norm(b, dim)
        if n is None:                       # the box of the constant part (the value's, without a form)
            f = b.as_lin()
            clo, chi = np.broadcast_to(f.clo, b.shape), np.broadcast_to(f.chi, b.shape)
            if not (np.isfinite(clo).all() and np.isfinite(chi).all()):
                return None
            n = _norm_keep(_absmax(clo, chi), dim)
        squares.append(_up(np.asarray(n, dtype=np.float64) ** 2))
    total = squares[0]
    for q in squares[1:]:
        total = _up(total + q)
    return _up(np.sqrt(_up(total)))


def _concat_slots(eqn, ins, dim: int) -> Bound:
    """Concatenation along a constant-size axis ``dim``: boxes and linear forms side by side (each entry keeps its
    operand's bound and form exactly)."""
    lo = np.concatenate([b.lo for b in ins], axis=dim)
    hi = np.concatenate([b.hi for b in ins], axis=dim)
    lin = None
    if any(b.lin is not None for b in ins):
        forms = [b.as_lin() for b in ins]
        keys = set().union(*(f.A for f in forms))
        A = {}
        for k in keys:
            p = next(f.A[k][0].shape[-1] for f in forms if k in f.A)
            parts_lo, parts_hi = [], []
            for f, b in zip(forms, ins):
                z = np.zeros(b.shape + (p,))
                flo, fhi = f.A.get(k, (z, z))
                parts_lo.append(np.broadcast_to(flo, b.shape + (p,)))
                parts_hi.append(np.broadcast_to(fhi, b.shape + (p,)))
            A[k] = (np.concatenate(parts_lo, axis=dim), np.concatenate(parts_hi, axis=dim))
        lin = Lin(np.concatenate([np.broadcast_to(f.clo, b.shape) for f, b in zip(forms, ins)], axis=dim),
                  np.concatenate([np.broadcast_to(f.chi, b.shape) for f, b in zip(forms, ins)], axis=dim), A)
    return _finish(eqn, ins, lo, hi, lin)


def stack(run, eqn, ins):
    """``stack(xs, axis)`` (JAX >= 0.8's primitive): each operand gets a unit axis at ``axis`` and the results are
    concatenated along it (older JAX writes it so), boxes and linear forms entry by entry.  A norm fact of the
    operands along another axis ``k`` (every operand has one) survives: slice j of the output along ``axis`` is
    operand j, whose norm along ``k`` is bounded by its own fact."""
    axis = int(eqn.params["axis"])

    def expand(b: Bound) -> Bound:
        lin = b.lin.struct(lambda a, extra: np.expand_dims(a, axis)) if b.lin is not None else None
        return Bound(np.expand_dims(b.lo, axis), np.expand_dims(b.hi, axis), lin, b.why)
    out = _concat_slots(eqn, [expand(b) for b in ins], axis)
    if ins and all(b.nrm for b in ins):
        keys = set.intersection(*(set(b.nrm) for b in ins))
        if all(b.lin is None for b in ins) or all(b.lin is not None for b in ins):
            _with_nrm(out, {k + (1 if k >= axis else 0): np.concatenate([np.expand_dims(b.nrm[k], axis) for b in ins],
                                                                        axis=axis) for k in keys})
    return [out]


def unstack(run, eqn, ins):
    """``unstack(x, axis)`` (JAX >= 0.8's primitive): output k is slice k of ``x`` along the constant-size
    ``axis``, with its box, its linear form and its norm facts along the other axes (a slice of the rows keeps
    each row)."""
    b = ins[0]
    axis = int(eqn.params["axis"])
    outs = []
    for k in range(b.shape[axis]):
        lin = b.lin.struct(lambda a, extra, k=k: np.take(a, k, axis=axis)) if b.lin is not None else None
        out = Bound(np.take(b.lo, k, axis=axis), np.take(b.hi, k, axis=axis), lin, b.why)
        if b.nrm:
            _with_nrm(out, {j - (1 if j > axis else 0): np.take(n, k, axis=axis)
                            for j, n in b.nrm.items() if j != axis})
        outs.append(out)
    return outs


def split(run, eqn, ins):
    b = ins[0]
    axis = int(eqn.params["axis"])
    sizes = eqn.params["sizes"]
    src = _ishape(eqn.invars[0])
    if not is_const_dim(src[axis]):
        return [_hull_all(b, _oshape(eqn, i), eqn, ins) for i in range(len(eqn.outvars))]
    cuts = np.cumsum([int(s) for s in sizes])[:-1]
    los, his = np.split(b.lo, cuts, axis=axis), np.split(b.hi, cuts, axis=axis)
    outs = []
    for i, (lo, hi) in enumerate(zip(los, his)):
        lin = None
        if b.lin is not None:
            lin = b.lin.struct(lambda a, extra, i=i: np.split(a, cuts, axis=axis)[i])
        out = Bound(lo, hi, lin, b.why)
        if b.nrm:
            _with_nrm(out, {k: (n if k == axis else np.split(n, cuts, axis=axis)[i]) for k, n in b.nrm.items()})
        outs.append(out)
    return outs


def _pad_np(arr, cfg, fill, extra, src_shape):
    """lax.pad on the leading axes of ``arr`` (interior and negative padding; symbolic axes untouched)."""
    out = np.asarray(arr)
    for a, (l, h, inter) in enumerate(cfg):
        if not is_const_dim(src_shape[a]):
            continue
        l, h, inter = int(l), int(h), int(inter)
        n = out.shape[a]
        if inter > 0 and n > 1:
            shape = list(out.shape)
            shape[a] = n + (n - 1) * inter
            tmp = np.full(shape, fill, dtype=np.float64)
            idx = [slice(None)] * out.ndim
            idx[a] = slice(None, None, inter + 1)
            tmp[tuple(idx)] = out
            out = tmp
        for side, amount in ((0, l), (1, h)):
            if amount > 0:
                shape = list(out.shape)
                shape[a] = amount
                block = np.full(shape, fill, dtype=np.float64)
                out = np.concatenate([block, out] if side == 0 else [out, block], axis=a)
            elif amount < 0:
                idx = [slice(None)] * out.ndim
                idx[a] = slice(-amount, None) if side == 0 else slice(None, out.shape[a] + amount)
                out = out[tuple(idx)]
    del extra
    return out


def pad(run, eqn, ins):
    b, pv = ins
    cfg = eqn.params["padding_config"]
    src = _ishape(eqn.invars[0])
    shape = _oshape(eqn)
    if any(not is_const_dim(src[a]) and tuple(cfg[a]) != (0, 0, 0) for a in range(len(src))):
        lo = min(float(b.lo.min()), float(pv.lo.min())) if b.lo.size else float(pv.lo.min())
        hi = max(float(b.hi.max()), float(pv.hi.max())) if b.hi.size else float(pv.hi.max())
        return [_finish(eqn, ins, np.full(shape, lo), np.full(shape, hi))]
    plo, phi = float(pv.lo.reshape(-1)[0]), float(pv.hi.reshape(-1)[0])
    lo, hi = _pad_np(b.lo, cfg, plo, 0, src), _pad_np(b.hi, cfg, phi, 0, src)
    lin = None
    if b.lin is not None and pv.lin is None:
        f = b.lin
        lin = Lin(_pad_np(f.clo, cfg, plo, 0, src), _pad_np(f.chi, cfg, phi, 0, src),
                  {k: (_pad_np(alo, cfg, 0.0, 1, src), _pad_np(ahi, cfg, 0.0, 1, src)) for k, (alo, ahi) in f.A.items()})
    return [_finish(eqn, ins, lo, hi, lin)]


def iota(run, eqn, ins):
    shape_sym = _ishape(eqn.outvars[0])
    shape = conc(shape_sym)
    dim = int(eqn.params["dimension"])
    if not is_const_dim(shape_sym[dim]):
        n = conc((shape_sym[dim],), run.context.get("m", 1))[0]
        return [_finish(eqn, ins, np.zeros(shape), np.full(shape, float(n - 1)))]
    v = np.broadcast_to(np.arange(shape[dim], dtype=np.float64).reshape(
        [shape[dim] if i == dim else 1 for i in range(len(shape))]), shape)
    return [Bound.point(v)]


def dim_as_value(run, eqn, ins):
    m = run.context.get("m", 1)
    return [Bound.point(np.float64(conc((eqn.params["dim"],), m)[0]))]


# -- indexing with abstract indices --------------------------------------------------


def _index_candidates(lo, hi, axis=-1):
    """Every integer index vector within the box of each element's index vector (last axis), or
    None when there are too many."""
    lo_i, hi_i = np.floor(lo), np.ceil(hi)
    if not (np.isfinite(lo_i).all() and np.isfinite(hi_i).all()):
        return None
    vmin, vmax = lo_i.reshape(-1, lo_i.shape[-1]).min(0), hi_i.reshape(-1, hi_i.shape[-1]).max(0)
    counts = (vmax - vmin + 1).astype(np.int64)
    total = int(np.prod(counts)) if counts.size else 1
    if total > _ENUM_MAX:
        return None
    grids = np.meshgrid(*[np.arange(a, b + 1) for a, b in zip(vmin, vmax)], indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=-1) if grids else np.zeros((1, 0))


def _gather_sources(eqn, operand_shape, indices: np.ndarray) -> np.ndarray:
    """Flat operand index of every output element (-1: filled), by JAX's own gather on an iota."""
    import jax
    import jax.numpy as jnp

    p = eqn.params
    src = jnp.arange(int(np.prod(operand_shape)), dtype=jnp.int32).reshape(operand_shape)
    sizes = tuple(conc(p["slice_sizes"]))
    mode = p["mode"]
    kw = {"fill_value": -1} if "FILL" in str(mode).upper() else {}
    out = jax.lax.gather(src, jnp.asarray(indices, jnp.int32), p["dimension_numbers"], sizes, mode=mode,
                         indices_are_sorted=False, unique_indices=False, **kw)
    return np.asarray(out)


def gather(run, eqn, ins):
    op, idx = ins
    shape = _oshape(eqn)
    oshape = op.shape
    osym = _sym(_ishape(eqn.invars[0]))
    dn = eqn.params["dimension_numbers"]
    if (osym == [0] and tuple(dn.start_index_map) == (0,) and tuple(dn.collapsed_slice_dims) == (0,)
            and tuple(dn.offset_dims) == tuple(range(1, len(oshape))) and tuple(shape) == tuple(oshape)
            and eqn.params["slice_sizes"][1:] == tuple(_ishape(eqn.invars[0])[1:])):

        if record_iota(run, eqn.invars[1]):
            # X[idx] with idx = arange(m) (the plate's own index): element i is record i, the operand itself
            return [op]
    moves_records = any(a in dn.start_index_map or a in dn.collapsed_slice_dims for a in osym)
    cands = _index_candidates(idx.lo, idx.hi)
    if cands is None or op.lo.size == 0:
        return [_hull_all(op, shape, eqn, ins)]
    # an index into a record axis is in bounds for the m records (0 <= v <= m - slice size), not for the one slot
    # that stands for them: in bounds it reaches the slot (index 0), out of bounds it stays out (-1; JAX's fill
    # mode then fills, its clip mode takes a record: the slot)
    src_sym = _ishape(eqn.invars[0])
    m = run.context.get("m", 1)
    sym_pos = [(j, int(a)) for j, a in enumerate(dn.start_index_map) if not is_const_dim(src_sym[a])]
    if any(conc(eqn.params["slice_sizes"])[a] != 1 for _, a in sym_pos):
        return [_hull_all(op, shape, eqn, ins)] if not _fills(eqn) else [Bound.top(shape, eqn)]
    real_dim, real_size = conc(src_sym, m), conc(eqn.params["slice_sizes"], m)
    lo = np.full(shape, INF)
    hi = np.full(shape, -INF)
    filled = np.zeros(shape, bool)
    flo, fhi = op.lo.reshape(-1), op.hi.reshape(-1)
    src_list = []
    ilo, ihi = np.floor(idx.lo), np.ceil(idx.hi)
    for v in cands:
        within = np.all((ilo <= v) & (ihi >= v), axis=-1)           # index vectors that can equal v
        if not within.any():
            continue
        vs = np.array(v, dtype=np.int64)
        for j, a in sym_pos:
            vs[j] = 0 if 0 <= vs[j] <= real_dim[a] - real_size[a] else -1
        ind = np.broadcast_to(vs, idx.shape)
        srcs = _gather_sources(eqn, oshape, ind)
        mask = _out_mask(eqn, within, shape)
        ok = mask & (srcs >= 0)
        s = np.where(srcs >= 0, srcs, 0)
        lo = np.where(ok, np.minimum(lo, flo[s]), lo)
        hi = np.where(ok, np.maximum(hi, fhi[s]), hi)
        filled |= mask & (srcs < 0)
        src_list.append((mask, s, srcs >= 0))
    if filled.any():
        fv = eqn.params.get("fill_value")
        fv = np.nan if fv is None and np.issubdtype(eqn.outvars[0].aval.dtype, np.inexact) else (fv or 0)
        lo = np.where(filled, np.minimum(lo, fv), lo)
        hi = np.where(filled, np.maximum(hi, fv), hi)
    never = lo > hi                              # no candidate reached these elements: no claim
    lo, hi = np.where(never, -INF, lo), np.where(never, INF, hi)
    lin = None
    if op.lin is not None and not moves_records and not filled.any() and src_list and not never.any():
        forms = []
        for mask, s, _ok in src_list:
            f = op.lin
            A = {k: (alo.reshape(-1, alo.shape[-1])[s], ahi.reshape(-1, ahi.shape[-1])[s]) for k, (alo, ahi) in f.A.items()}
            forms.append((mask, Lin(f.clo.reshape(-1)[s], f.chi.reshape(-1)[s], A)))
        lin = _masked_hull(forms, shape)
    out = _finish(eqn, ins, lo, hi, lin)
    if op.lin is None and op.is_point() and not filled.any() and not never.any() and src_list:
        # rows of a constant table (e.g. of the identity: one-hot rows): the norm along each axis taken
        # from the operand is at most the largest norm of a row that can be gathered
        nrm = {}
        for k in dn.offset_dims:
            best = None
            for mask, s_, _ok in src_list:
                n = _norm_keep(np.where(mask, flo[s_], 0.0), k)
                best = n if best is None else np.maximum(best, n)
            nrm[int(k)] = best
        _with_nrm(out, nrm)
    return [out]


def _fills(eqn) -> bool:
    """The gather fills out-of-bounds slices (JAX's ``mode="fill"``) rather than clamping their starts."""
    return "FILL" in str(eqn.params["mode"]).upper()


def _out_mask(eqn, within_idx, out_shape):
    """Broadcast a mask over the indices' batch elements to the output (offset axes added)."""
    offset = list(eqn.params["dimension_numbers"].offset_dims)
    batch_axes = [i for i in range(len(out_shape)) if i not in offset]
    m = within_idx.reshape(within_idx.shape)
    expanded = [1] * len(out_shape)
    for i, a in enumerate(batch_axes):
        expanded[a] = m.shape[i] if i < m.ndim else 1
    return np.broadcast_to(m.reshape(expanded), out_shape)


def _masked_hull(forms, shape) -> Lin:
    """Hull over the candidate forms that apply (mask) at each element."""
    keys = set().union(*(f.A for _, f in forms))
    clo = np.full(shape, INF)
    chi = np.full(shape, -INF)
    A = {}
    for k in keys:
        p = next(f.A[k][0].shape[-1] for _, f in forms if k in f.A)
        A[k] = [np.full(tuple(shape) + (p,), INF), np.full(tuple(shape) + (p,), -INF)]
    for mask, f in forms:
        clo = np.where(mask, np.minimum(clo, f.clo), clo)
        chi = np.where(mask, np.maximum(chi, f.chi), chi)
        for k in keys:
            p = A[k][0].shape[-1]
            flo, fhi = f.A.get(k, (np.zeros(tuple(shape) + (p,)), np.zeros(tuple(shape) + (p,))))
            mk = mask[..., None]
            A[k][0] = np.where(mk, np.minimum(A[k][0], flo), A[k][0])
            A[k][1] = np.where(mk, np.maximum(A[k][1], fhi), A[k][1])
    return Lin(clo, chi, {k: (v[0], v[1]) for k, v in A.items()})


def dynamic_slice(run, eqn, ins):
    op, starts = ins[0], ins[1:]
    shape = _oshape(eqn)
    src = _ishape(eqn.invars[0])
    sizes = conc(eqn.params["slice_sizes"])
    ranges = []
    for a, s in enumerate(starts):
        lo_, hi_ = float(s.lo.reshape(-1)[0]), float(s.hi.reshape(-1)[0])
        if not is_const_dim(src[a]):
            ranges.append([0])
            continue
        if not (np.isfinite(lo_) and np.isfinite(hi_)):
            return [_hull_all(op, shape, eqn, ins)]
        maxstart = op.shape[a] - sizes[a]
        cl = sorted({min(max(int(v), 0), maxstart) for v in range(int(math.floor(lo_)), int(math.ceil(hi_)) + 1)}) \
            if hi_ - lo_ < _ENUM_MAX else None
        if cl is None:
            return [_hull_all(op, shape, eqn, ins)]
        ranges.append(cl)
    if int(np.prod([len(r) for r in ranges])) > _ENUM_MAX:
        return [_hull_all(op, shape, eqn, ins)]
    # a window along a record axis shorter than the axis (x[i] over the records) reads other records than the one
    # at the same position: the box of the slot holds, the form does not
    psizes = eqn.params["slice_sizes"]
    moves = any(not is_const_dim(src[a]) and (is_const_dim(psizes[a]) or not _same_dim(psizes[a], src[a]))
                for a in range(len(src)))
    los, his, forms = [], [], []
    for combo in itertools.product(*ranges):
        sl = [slice(c, c + sz) if is_const_dim(src[a]) else slice(None) for a, (c, sz) in enumerate(zip(combo, sizes))]
        los.append(op.lo[tuple(sl)])
        his.append(op.hi[tuple(sl)])
        if op.lin is not None and not moves:
            forms.append(op.lin.struct(lambda a, extra, sl=sl: _lead_index(a, extra, sl)))
    lin = lin_hull(forms, shape) if forms else None
    return [_finish(eqn, ins, np.broadcast_to(np.minimum.reduce(los), shape),
                    np.broadcast_to(np.maximum.reduce(his), shape), lin)]


def _same_dim(a, b) -> bool:
    """Two (symbolic) dimensions are provably equal."""
    try:
        return bool(a == b)
    except Exception:          # an inconclusive comparison of symbolic dimensions: not provably equal
        return False


def dynamic_update_slice(run, eqn, ins):
    op, upd = ins[0], ins[1]
    shape = _oshape(eqn)
    lo = np.minimum(op.lo, upd.lo.min()) if upd.lo.size else op.lo
    hi = np.maximum(op.hi, upd.hi.max()) if upd.hi.size else op.hi
    return [_finish(eqn, ins, np.broadcast_to(lo, shape), np.broadcast_to(hi, shape))]


def _sum_dn(x) -> float:
    """A lower bound of the exact sum of the entries of ``x`` (float64, no NaN, no +inf): the correctly rounded
    sum (``math.fsum``), one float lower unless it is exact (the sign of the exact residual, also by fsum)."""
    v = np.asarray(x, np.float64).ravel().tolist()
    try:
        r = math.fsum(v)
    except OverflowError:                      # a partial sum beyond the floats: the sum is below -max
        return -INF
    if not math.isfinite(r):
        return r
    return r if math.fsum(v + [-r]) >= 0.0 else float(_dn(r))


def _sum_up(x) -> float:
    """An upper bound of the exact sum of the entries of ``x`` (no NaN, no -inf)."""
    return -_sum_dn(-np.asarray(x, np.float64))


def scatter_add(run, eqn, ins):
    """Each entry of the operand plus any subset of the updates (out-of-bounds ones dropped, duplicates added):
    between the operand's end plus the sum of the updates' negative (positive) parts, over every record when the
    updates have a record axis; every sum and product rounded outward."""
    op, upd = ins[0], ins[2]
    neg = _sum_dn(np.minimum(upd.lo, 0.0)) if upd.lo.size else 0.0
    pos = _sum_up(np.maximum(upd.hi, 0.0)) if upd.hi.size else 0.0
    if _sym(_ishape(eqn.invars[2])):
        m = np.float64(run.context.get("m", 1))
        neg = iv_mul(np.float64(neg), np.float64(neg), m, m)[0]
        pos = iv_mul(np.float64(pos), np.float64(pos), m, m)[1]
    lo, hi = iv_add(op.lo, op.hi, np.float64(neg), np.float64(pos))
    return [_finish(eqn, ins, lo, hi)]


def scatter(run, eqn, ins):
    op, upd = ins[0], ins[2]
    shape = _oshape(eqn)
    lo = np.minimum(op.lo, upd.lo.min()) if upd.lo.size else op.lo
    hi = np.maximum(op.hi, upd.hi.max()) if upd.hi.size else op.hi
    return [_finish(eqn, ins, np.broadcast_to(lo, shape), np.broadcast_to(hi, shape))]


def dot_general(run, eqn, ins):
    a, b = ins
    dn = eqn.params["dimension_numbers"]
    (lc, rc), (lb, rb) = dn
    lsym = _ishape(eqn.invars[0])
    m = run.context.get("m", 1)
    n_sym = 1
    for ax in lc:
        if not is_const_dim(lsym[ax]):
            n_sym *= conc((lsym[ax],), m)[0]
    lo, hi = iv_dot(a.lo, a.hi, b.lo, b.hi, dn)
    if n_sym > 1:
        lo, hi = iv_mul(lo, hi, np.float64(n_sym), np.float64(n_sym))
    lin = None
    if n_sym == 1 and (a.lin is None) != (b.lin is None):
        if a.lin is None:       # box(a) . form(b): b's trailing p axis is the last rhs free axis
            f = b.lin
            clo, chi = iv_dot(a.lo, a.hi, f.clo, f.chi, dn)
            A = {k: iv_dot(a.lo, a.hi, alo, ahi, dn) for k, (alo, ahi) in f.A.items()}
        else:                   # form(a) . box(b): a's p axis is the last lhs free axis: move it last
            f = a.lin
            clo, chi = iv_dot(f.clo, f.chi, b.lo, b.hi, dn)
            A = {}
            n_lfree = f.clo.ndim - len(lc) - len(lb)
            pos = len(lb) + n_lfree
            for k, (alo, ahi) in f.A.items():
                plo, phi = iv_dot(alo, ahi, b.lo, b.hi, dn)
                A[k] = (np.moveaxis(plo, pos, -1), np.moveaxis(phi, pos, -1))
        lin = Lin(clo, chi, A)
    out = _finish(eqn, ins, lo, hi, lin)
    return [_with_nrm(out, _dot_norm(a, b, dn, out.shape)) if n_sym == 1 else out]


def _dot_norm(a: "Bound", b: "Bound", dn, out_shape):
    """Norm facts of a 2-D product ``x M^T`` or ``M x`` (one contracted axis, no batch axis) with ``M`` a known
    matrix (a point: e.g. the identity of a tangent basis) and ``x`` a value with a norm fact along the contracted
    axis: each output row (column) is ``M`` applied to a row (column) of ``x``, of norm at most ``||M||_op`` times
    that row's (column's) norm (for the constant part when ``x`` has a linear form: the product's constant part
    is ``x``'s times ``M``)."""
    (lc, rc), (lb, rb) = dn
    if lb or rb or len(lc) != 1 or a.lo.ndim != 2 or b.lo.ndim != 2 or len(out_shape) != 2:
        return None
    for x, M, xc, xpos in ((a, b, lc[0], 0), (b, a, rc[0], 1)):
        if not (M.lin is None and M.is_point() and x.nrm and xc in x.nrm):
            continue
        if not np.isfinite(M.lo).all():
            continue
        op = _spectral_up(np.abs(M.lo))
        n = np.asarray(x.nrm[xc], dtype=np.float64)          # x's shape with the contracted axis of size 1
        n = n.reshape(-1)                                    # one number per free index of x
        n = n.reshape((-1, 1)) if xpos == 0 else n.reshape((1, -1))
        return {1 - xpos: _up(n * op)}
    return None


# ---------------------------------------------------------------------------
# relational rules: the operands of an equation computed from the SAME value, a relation that boxes of the
# operands lose (the dependency problem of interval arithmetic).  JAX's derivatives of common log-densities
# are such expressions: softplus / log_sigmoid / logaddexp differentiate to exp(a - logaddexp(a, b)) =
# sigmoid(a - b) in [0, 1] (boxes: exp([-inf, inf]) = [0, inf]); log1p(exp(t)) and log(1 + exp(t)) to
# t' exp(t) / (exp(t) + 1) = t' sigmoid(t); the logistic function to s (1 - s) in [0, 1/4].  Each rule
# recognises its pattern from the producers of the equation's operands (``run.producer``; value-preserving
# broadcasts, reshapes, transposes and float conversions are seen through when they are the same on both sides,
# and an operand broadcast implicitly by an equation of the pattern is not matched) and
# returns a bound that holds for every input (real arithmetic, rounded outward); the equation's result is the
# intersection with its box rule's.  A rule that does not match changes nothing.


_SAME_VALUE = ("broadcast_in_dim", "reshape", "copy", "convert_element_type", "transpose", "squeeze")


def _chain(run, v):
    """(base variable, structural equations from the base to ``v``): ``v`` is the base's entries moved by
    value-preserving ops (broadcasts, reshapes, transposes, squeezes, copies, exact float conversions)."""
    steps = []
    for _ in range(16):
        e = run.producer(v)
        if e is None or e.primitive.name not in _SAME_VALUE:
            break
        if e.primitive.name == "convert_element_type" and not _exact_convert(e):
            break                       # a conversion that rounds (or an integer one) changes the value
        if e.primitive.name == "reshape" and e.params.get("dimensions") is not None:
            break
        steps.append(e)
        v = e.invars[0]
    return v, steps[::-1]


def _same_value(x, y) -> bool:
    """Two chains (base, steps) give the same value at every position: the same base moved by the same ops,
    or a scalar base (every position holds the one value)."""
    (bx, sx), (by, sy) = x, y
    if bx is not by or hasattr(bx, "val"):
        return False
    if not tuple(getattr(bx.aval, "shape", ())):
        return True
    return len(sx) == len(sy) and all(a.primitive is b.primitive and a.params == b.params and
                                      a.outvars[0].aval.shape == b.outvars[0].aval.shape for a, b in zip(sx, sy))


def _const_point(run, v):
    """The value of ``v`` when it is one known number (a literal or a broadcast of one), else None."""
    b = run.value(_chain(run, v)[0])
    if b is None or not b.is_point() or b.lo.size == 0:
        return None
    vals = np.unique(b.lo)
    return float(vals[0]) if vals.size == 1 else None


def _jax_function(eqn, name: str) -> bool:
    """``eqn`` calls JAX's own ``name`` through a custom derivative (its value and rule are JAX's)."""
    if eqn is None or eqn.primitive.name != "custom_jvp_call":
        return False
    body = eqn.params.get("call_jaxpr")
    info = str(getattr(getattr(getattr(body, "jaxpr", body), "debug_info", None), "func_src_info", "") or "")
    return info.startswith(name + " ") and "/jax/" in info.replace("\\", "/")


def _replaced_inf(run, v):
    """x when ``v`` is JAX's ``_replace_inf(x)`` = select_n(x == +inf, x, 0) (equal to x for every real x),
    else ``v``."""
    e = run.producer(v)
    if e is None or e.primitive.name != "select_n" or len(e.invars) != 3:
        return v
    pred, x, z = e.invars
    pe = run.producer(pred)
    if pe is not None and pe.primitive.name == "eq" and pe.invars[0] is x and \
            _const_point(run, pe.invars[1]) == INF and _const_point(run, z) == 0.0:
        return x
    return v


def _box_of(run, v, shape):
    b = run.value(v)
    return np.broadcast_to(b.lo, shape), np.broadcast_to(b.hi, shape)


def _whole(v, eqn) -> bool:
    """Operand ``v`` of ``eqn`` is not broadcast by it (same shape as the output, or a scalar): its positions
    are the output's, so a chain through ``eqn`` follows every entry."""
    shape = tuple(v.aval.shape)
    return not shape or shape == tuple(eqn.outvars[0].aval.shape)


def logaddexp_gap(run, eqn, shape):
    """``a - logaddexp(a, b)`` (either operand through ``_replace_inf``) = -softplus(b - a) in
    [-softplus(b_hi - a_lo), -softplus(b_lo - a_hi)] <= 0 (b's range over all its entries; JAX's derivative of
    softplus, log_sigmoid and logaddexp: exp of it is sigmoid(a - b) in [0, 1]), for b bounded: b finite.

    An unbounded b may be +inf (``-log(y + 2)`` at ``y = -2``): then ``l = +inf``, ``_replace_inf(l) = 0`` and the
    program's "gap" is ``a - 0 = a``, not <= 0 (found by an adversarial model, 2026-11-27). So an unbounded b is taken
    only when it is ``-a`` (log-cosh, ``logaddexp(r, -r)``): b = +inf then means a = -inf, whose term is ``-inf - 0``,
    and ``a = b = -inf`` (the one NaN of logaddexp's select) cannot happen; the lower end is then -inf and the upper one
    still <= 0, so ``exp(r - l) - exp(-r - l)`` has both exponentials in [0, 1] whatever r."""
    u, v = (_replaced_inf(run, x) for x in eqn.invars)
    c = run.producer(v)
    if not _jax_function(c, "logaddexp"):
        return None
    args = c.invars[c.params.get("num_consts", 0):]
    if len(args) != 2 or not any(u is x for x in args) or tuple(u.aval.shape) != tuple(c.outvars[0].aval.shape):
        return None
    bv = args[1] if u is args[0] else args[0]
    other = run.value(bv)
    (alo, ahi), blo, bhi = _box_of(run, u, shape), float(np.min(other.lo)), float(np.max(other.hi))
    if math.isnan(blo) or math.isnan(bhi):
        return None
    if not (math.isfinite(blo) and math.isfinite(bhi)) and not _negation_of(run, bv, u):
        return None                                 # b may be +inf: the gap may be a itself
    with np.errstate(all="ignore"):
        lo, hi = -np.logaddexp(0.0, bhi - alo), -np.logaddexp(0.0, blo - ahi)
    for _ in range(LIBM_ULPS + 2):                 # numpy's logaddexp: libm's exp and log1p, and an add
        lo, hi = _dn(lo), _up(hi)
    # inf - inf (both ends infinite the same way): no end known there; the gap is <= 0 for all reals anyway
    lo, hi = np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), 0.0, hi)
    return lo, np.minimum(hi, 0.0)


def _negation_of(run, b, a) -> bool:
    """``b`` is ``-a`` (a ``neg`` of the same value, either way round), each followed out of calls."""
    lit = _literal_type()
    if isinstance(a, lit) or isinstance(b, lit):
        return False
    a, b = run.origin(a), run.origin(b)
    for x, y in ((b, a), (a, b)):
        e = run.producer(x)
        if e is not None and e.primitive.name == "neg" and not isinstance(e.invars[0], lit) and \
                run.origin(e.invars[0]) is y:
            return True
    return False


def ratio_of_sum(run, eqn, shape):
    """``(t * e) / (e + c)`` with e >= 0, c >= 0, e + c > 0: t * r, r = e / (e + c) in [e_lo/(e_lo + c_hi),
    e_hi/(e_hi + c_lo)] in [0, 1] (increasing in e, decreasing in c); the form of t is kept (JAX's derivative of
    log1p(exp(t)) and log(1 + exp(t)))."""
    n, d = eqn.invars
    ne = run.producer(n)
    dbase, dsteps = _chain(run, d)
    de = run.producer(dbase)
    if ne is None or de is None or ne.primitive.name != "mul" or de.primitive.name != "add":
        return None
    for t, q in (ne.invars, ne.invars[::-1]):
        for e, c in (de.invars, de.invars[::-1]):
            if not _whole(e, de):
                continue
            eb, es = _chain(run, e)
            if not _same_value(_chain(run, q), (eb, es + dsteps)):
                continue
            elo, ehi = _box_of(run, q, shape)
            cb = run.value(c)
            clo, chi = float(np.min(cb.lo)), float(np.max(cb.hi))
            if not (np.all(elo >= 0) and clo >= 0 and (clo > 0 or np.all(elo > 0))):
                continue
            with np.errstate(all="ignore"):
                rlo = np.where(elo == 0, 0.0, elo / (elo + chi))
                rhi = np.where(np.isinf(ehi), 1.0, ehi / (ehi + clo))
            rlo = np.clip(_dn(_dn(np.where(np.isnan(rlo), 0.0, rlo))), 0.0, 1.0)
            rhi = np.clip(_up(_up(np.where(np.isnan(rhi), 1.0, rhi))), 0.0, 1.0)
            tb = run.value(t)
            lo, hi = iv_mul(np.broadcast_to(tb.lo, shape), np.broadcast_to(tb.hi, shape), rlo, rhi)
            lin = lin_scale(rlo, rhi, tb.lin, shape) if tb.lin is not None else None
            return lo, hi, lin
    return None


def concave_product(run, eqn, shape):
    """``u * (c - u)`` for a number c: a concave parabola in u, over u in [lo, hi] at least its smaller end value
    and at most its value at the vertex u = c/2 when inside, else at an end (JAX's derivative of the logistic
    function: s (1 - s) in [0, 1/4])."""
    for u, w in (eqn.invars, eqn.invars[::-1]):
        wb, wsteps = _chain(run, w)
        we = run.producer(wb)
        if we is None or we.primitive.name != "sub" or not _whole(we.invars[1], we):
            continue
        ub, usteps = _chain(run, we.invars[1])
        if not _same_value((ub, usteps + wsteps), _chain(run, u)):
            continue
        c = _const_point(run, we.invars[0])
        if c is None or not math.isfinite(c):
            continue
        lo, hi = _box_of(run, u, shape)
        ends = [iv_mul(x, x, *iv_add(np.full(shape, c), np.full(shape, c), -x, -x)) for x in (lo, hi)]
        with np.errstate(invalid="ignore"):
            ends = [(np.where(np.isinf(x), -INF, elo), np.where(np.isinf(x), -INF, ehi))
                    for x, (elo, ehi) in zip((lo, hi), ends)]
        flo = np.minimum(ends[0][0], ends[1][0])
        fhi = np.maximum(ends[0][1], ends[1][1])
        # the vertex c/2: exact for a normal c; for a subnormal c the halving may round, so both neighbours
        v_lo, v_hi = (c / 2, c / 2) if abs(c) >= 2.0 ** -1021 else (float(_dn(c / 2)), float(_up(c / 2)))
        vm = np.float64(max(abs(v_lo), abs(v_hi)))
        peak = iv_mul(vm, vm, vm, vm)[1]
        fhi = np.where((lo <= v_hi) & (v_lo <= hi), peak, fhi)     # the vertex value bounds every value
        return flo, fhi
    return None


def one_minus_square(run, eqn, shape):
    """``(t + t u) * (1 - u)`` = t (1 - u^2), 1 - u^2 in [1 - max u^2, 1 - min u^2] (JAX's derivative of tanh:
    t (1 + tanh)(1 - tanh) = t sech^2 in [0, 1] t, where boxes give [0, 4] t); the form of t is kept."""
    for p, q in (eqn.invars, eqn.invars[::-1]):
        pe = run.producer(p)
        qb, qsteps = _chain(run, q)
        qe = run.producer(qb)
        if pe is None or qe is None or pe.primitive.name != "add" or qe.primitive.name != "sub" or \
                _const_point(run, qe.invars[0]) != 1.0 or conc(p.aval.shape) != tuple(shape) or \
                not _whole(qe.invars[1], qe):
            continue
        ub, usteps = _chain(run, qe.invars[1])
        for t1, m in (pe.invars, pe.invars[::-1]):
            me = run.producer(m)
            if me is None or me.primitive.name != "mul" or conc(m.aval.shape) != tuple(shape):
                continue
            for t2, u in (me.invars, me.invars[::-1]):
                if not (_same_value(_chain(run, t1), _chain(run, t2)) and
                        _same_value(_chain(run, u), (ub, usteps + qsteps))):
                    continue
                sq_lo, sq_hi = _ipow_box(2)(_box_of(run, u, shape))
                klo, khi = iv_add(np.ones(shape), np.ones(shape), -sq_hi, -sq_lo)
                tb = run.value(t1)
                lo, hi = iv_mul(np.broadcast_to(tb.lo, shape), np.broadcast_to(tb.hi, shape), klo, khi)
                return lo, hi, (lin_scale(klo, khi, tb.lin, shape) if tb.lin is not None else None)
    return None


#: relational rules by primitive: (run, eqn, output shape) -> (lo, hi[, form]) or None
def _float_base(run, v):
    """``v`` with float-to-float conversions (same value, same shape) looked through."""
    for _ in range(8):
        e = run.producer(v)
        if e is None or e.primitive.name != "convert_element_type" or not (
                np.issubdtype(np.dtype(e.invars[0].aval.dtype), np.floating)
                and np.issubdtype(np.dtype(e.outvars[0].aval.dtype), np.floating)):
            return v
        v = e.invars[0]
    return v


def cancel_factor(run, eqn, shape):
    """``(f_1 * ... * d * ... * f_k) / d`` with ``d`` the same variable in the numerator's product and as the
    denominator (float conversions looked through, both with the output's shape or both scalars) and ``d``'s box
    excluding 0: the product of the other factors' boxes (exact for every real input with ``d != 0``).  JAX's
    derivative of ``xlogy(y, exp(c))`` (a Poisson log-density) is ``(t exp(c)) y / exp(c)``, whose box is
    ``[0, y_hi e^(c_hi - c_lo)]`` where the value is ``t y``."""
    n, d = eqn.invars
    dv = run.value(d)
    if dv is None or np.any((dv.lo <= 0) & (dv.hi >= 0)):
        return None
    dshape = tuple(conc(d.aval.shape))

    def key(v):
        # equal keys: equal values position by position (one base moved by the same value-preserving steps)
        base, steps = _chain(run, v)
        return base, tuple((e.primitive.name, repr(sorted(e.params.items()))) for e in steps)
    dkey = key(d)

    def quot(v, depth):
        if tuple(conc(v.aval.shape)) == dshape and key(v) == dkey:
            return np.ones(shape), np.ones(shape)
        e = run.producer(_float_base(run, v))
        if e is None or e.primitive.name != "mul" or depth > 8:
            return None
        a, b = e.invars
        for x, y in ((a, b), (b, a)):
            q = quot(x, depth + 1)
            if q is not None:
                ylo, yhi = _box_of(run, y, shape)
                return iv_mul(q[0], q[1], ylo, yhi)
        return None
    if tuple(conc(n.aval.shape)) != tuple(shape):
        return None
    try:
        return quot(n, 0)
    except ValueError:          # shapes that do not broadcast as assumed: no relation
        return None


def custom_jvp_call(run, eqn, ins):
    """A call with a custom derivative: its body, except JAX's own ``logaddexp(a, b)`` (``jax.nn.softplus(u) =
    logaddexp(u, 0)``), whose value on reals is ``max(a, b) <= logaddexp(a, b) <= max(a, b) + log 2``, increasing
    in both: the box ``[max(a_lo, b_lo), logaddexp(a_hi, b_hi)]`` (the body's ``isnan`` branch, taken only for NaN
    operands, would otherwise join ``a + b`` and lose the lower bound)."""
    body = eqn.params["call_jaxpr"]
    outs = run.call(body, ins)
    if not _jax_function(eqn, "logaddexp") or len(outs) != 1 or outs[0].nan:
        return outs
    args = ins[eqn.params.get("num_consts", 0):]
    if len(args) != 2:
        return outs
    shape = _oshape(eqn)
    a, b = args
    with np.errstate(all="ignore"):
        lo = np.maximum(np.broadcast_to(a.lo, shape), np.broadcast_to(b.lo, shape))
        hi = np.logaddexp(np.broadcast_to(a.hi, shape), np.broadcast_to(b.hi, shape))
    for _ in range(LIBM_ULPS + 2):                 # numpy's logaddexp: libm's exp and log1p, and an add
        lo, hi = _dn(lo), _up(hi)
    o = outs[0]
    if floats.modelled():
        # in float arithmetic the lower end holds (max(a, b) plus a value >= 0, rounded to nearest, is >= max(a, b),
        # a float); the upper end is the body's, whose rounding is modelled
        hi = o.hi
    lo, hi = np.maximum(lo, o.lo), np.minimum(hi, o.hi)
    return [Bound(lo, hi, o.lin, o.why if not (np.isfinite(lo).all() and np.isfinite(hi).all()) else None)]


def _base(run, v):
    return _chain(run, v)[0]


def _prod(run, v, name):
    e = run.producer(_base(run, v))
    return e if e is not None and e.primitive.name == name else None


def softplus_parts(run, eqn, shape):
    """JAX's derivative of ``jnp.clip(r, 0) + jnp.log1p(jnp.exp(-jnp.abs(r)))`` (= softplus(r): NumPyro's
    binary cross-entropy with logits, the Bernoulli/Binomial-logits log-density) in direction t: ``u + q`` with
    ``u`` the clip's derivative ``t [r > 0]`` (``t/2`` at r = 0) and ``q = -select(r >= 0, -t, t) e / (e + 1)``,
    ``e = exp(-|r|)``: for r > 0, ``t - t e/(1 + e) = t sigmoid(r)``; for r < 0, ``t e/(1 + e) = t sigmoid(r)``;
    at r = 0, ``t/2 - t/2 = 0``.  So ``u + q = t f`` with f in [sigmoid(r_lo), sigmoid(r_hi)] (r's range over all
    its entries), widened down to 0 when that range contains 0; the form of t is kept (scaled like
    :func:`ratio_of_sum`)."""
    for u, q in (eqn.invars, eqn.invars[::-1]):
        ce = run.producer(u)
        if ce is None or ce.primitive.name not in ("jit", "pjit") or ce.params.get("name") != "clip" or \
                len(ce.invars) != 3 or len(ce.outvars) != 2 or ce.outvars[1] is not u or \
                _const_point(run, ce.invars[1]) != 0.0:
            continue
        if _clip_kinds(ce) != ("max",):
            continue
        r, t = ce.invars[0], ce.invars[2]
        de = run.producer(q)
        if de is None or de.primitive.name != "div":
            continue
        num, den = de.invars
        ne, ae = _prod(run, num, "mul"), _prod(run, den, "add")
        if ne is None or ae is None:
            continue
        ex = [x for x in ae.invars if _const_point(run, x) == 1.0]
        e_var = [x for x in ae.invars if _const_point(run, x) != 1.0]
        if len(ex) != 1 or len(e_var) != 1:
            continue
        e_var = _base(run, e_var[0])
        if not _exp_neg_abs(run, e_var, r):
            continue
        nums = [_base(run, x) for x in ne.invars]
        if e_var not in nums:
            continue
        other = nums[1] if nums[0] is e_var and nums[1] is not e_var else nums[0]
        ng = run.producer(other)
        if ng is None or ng.primitive.name != "neg":
            continue
        se = run.producer(ng.invars[0])
        if se is None or se.primitive.name != "select_n" or len(se.invars) != 3:
            continue
        pred, neg_t, pos_t = se.invars
        pe = run.producer(_base(run, pred))
        nt = run.producer(neg_t)
        if pe is None or pe.primitive.name != "ge" or pe.invars[0] is not r or _const_point(run, pe.invars[1]) != 0.0 \
                or pos_t is not t or nt is None or nt.primitive.name != "neg" or nt.invars[0] is not t:
            continue
        rb = run.value(r)
        rlo, rhi = float(np.min(rb.lo)), float(np.max(rb.hi))
        if math.isnan(rlo) or math.isnan(rhi):
            return None
        # sigmoid(x) = 1 / (1 + e^-x); below -700 (where e^-x overflows) 0 bounds it below and e^x above
        with np.errstate(all="ignore"):
            flo, fhi = 1.0 / (1.0 + math.exp(-rlo)) if rlo > -700 else 0.0, \
                1.0 / (1.0 + math.exp(-rhi)) if rhi > -700 else math.exp(rhi)
        for _ in range(4):
            flo, fhi = _dn(flo), _up(fhi)
        flo = 0.0 if rlo <= 0.0 <= rhi else max(0.0, float(flo))
        fhi = min(1.0, float(fhi))
        flo_a, fhi_a = np.full(shape, flo), np.full(shape, fhi)
        tb = run.value(t)
        lo, hi = iv_mul(np.broadcast_to(tb.lo, shape), np.broadcast_to(tb.hi, shape), flo_a, fhi_a)
        lin = lin_scale(flo_a, fhi_a, tb.lin, shape) if tb.lin is not None else None
        return lo, hi, lin
    return None


def _root_dn(x: float, k: int) -> float:
    """A float r >= 0 with r^k <= x exactly (so r <= x^(1/k)), for x >= 0: the float power two floats down, then
    lowered while the exact check fails."""
    r = max(0.0, float(_dn(_dn(x ** (1.0 / k)))))
    while r > 0.0 and Fraction(r) ** k > Fraction(x):
        r = max(0.0, float(_dn(r)))
    return r


def _root_up(x: float, k: int) -> float:
    """A float r with r^k >= x exactly (so r >= x^(1/k)), for x >= 0: the float power two floats up, then raised
    while the exact check fails."""
    r = float(_up(_up(x ** (1.0 / k))))
    while Fraction(r) ** k < Fraction(x):
        r = float(_up(r))
    return r


def _clip_kinds(call) -> tuple:
    """The ``max``/``min`` primitives of a ``jnp.clip`` call's body, in order (``("max",)`` for ``clip(x, lo)``,
    ``("max", "min")`` for ``clip(x, lo, hi)``)."""
    body = call.params.get("jaxpr")
    body = getattr(body, "jaxpr", body)
    return tuple(e.primitive.name for e in getattr(body, "eqns", ()) if e.primitive.name in ("max", "min"))


def _clip_call(run, v, index):
    """The ``jnp.clip(x, lo, hi)`` call (both bounds numbers, under ``jax.jvp``: outputs value and derivative) whose
    output ``index`` is ``v``, with (lo, hi); else None."""
    e = run.producer(v)
    if e is None or e.primitive.name not in ("jit", "pjit") or e.params.get("name") != "clip" or \
            len(e.invars) != 4 or len(e.outvars) != 2 or e.outvars[index] is not v or \
            _clip_kinds(e) != ("max", "min"):
        return None
    lo, hi = _const_point(run, e.invars[1]), _const_point(run, e.invars[2])
    if lo is None or hi is None or not lo <= hi:
        return None
    return e, lo, hi


def _sigmoid_tangent(run, tv, s) -> object:
    """t when ``tv`` is JAX's derivative of ``s = logistic(z)`` in direction t, ``t * (s * (1 - s))``; else None."""
    e = run.producer(tv)
    if e is None or e.primitive.name != "mul":
        return None
    for t, v in (e.invars, e.invars[::-1]):
        ve = run.producer(_base(run, v))
        if ve is None or ve.primitive.name != "mul":
            continue
        for a, b in (ve.invars, ve.invars[::-1]):
            be = run.producer(b)
            if a is s and be is not None and be.primitive.name == "sub" and _const_point(run, be.invars[0]) == 1.0 \
                    and be.invars[1] is s:
                return t
    return None


def clipped_sigmoid_log(run, eqn, shape):
    """JAX's derivative of ``log(p)`` or ``log(1 - p)`` for ``p = clip(...clip(sigmoid(z) [** n], lo_1, hi_1)..., lo_k,
    hi_k)`` (a clipped probability, or a power n in 2..4 of a sigmoid, then NumPyro's ``clamp_probs``; for a power
    the factors below are ``n (1 - s)`` and ``n s^n / (1 + ... + s^(n-1))``, increasing in s, with the ends
    ``[L^(1/n), U^(1/n)]``): ``(T * f_1 ... f_j) / P`` or
    ``(-T * f_1 ... f_j) / (1 - P)`` with ``P`` the last clip's value and ``T`` its derivative ``t s (1 - s) w``,
    ``w`` the product of the clips' weights (1 strictly inside every clip, 1/2 or 1/4 at an end, 0 outside).
    Where ``w > 0``, ``s`` lies in every ``[lo_i, hi_i]`` so ``P = s``: ``T / P = t (1 - s) w`` in ``t [0, 1 - L]``,
    ``L = max(lo_i, s_lo)``, and ``T / (1 - P) = t s w`` in ``t [0, U]``, ``U = min(hi_i, s_hi)``; where ``w = 0``
    both are 0 (``P`` and ``1 - P`` are proven nonzero: ``lo_k > 0``, ``hi_k < 1``).  The result is ``t`` (its
    linear form kept) times the range of ``+-f_1 ... f_j`` times that factor."""
    n, d = eqn.invars
    d = _base(run, d)
    one_minus = False
    de = run.producer(d)
    if de is not None and de.primitive.name == "add" and any(_const_point(run, x) == 1.0 for x in de.invars):
        other = [x for x in de.invars if _const_point(run, x) != 1.0]
        ne = run.producer(other[0]) if len(other) == 1 else None
        if ne is None or ne.primitive.name != "neg":
            return None
        d, one_minus = _base(run, ne.invars[0]), True
    last = _clip_call(run, d, 0)
    if last is None:
        return None
    # the chain of clips down to the sigmoid, value and derivative side by side
    call, lo, hi = last
    L, U, T = lo, hi, call.outvars[1]
    if not (lo > 0.0 and hi < 1.0):
        return None
    x, tv = call.invars[0], call.invars[3]
    for _ in range(8):
        inner = _clip_call(run, x, 0)
        if inner is None:
            break
        c2, lo2, hi2 = inner
        if c2.outvars[1] is not tv:
            return None
        L, U = max(L, lo2), min(U, hi2)
        x, tv = c2.invars[0], c2.invars[3]
    # an optional power p = s^k between the sigmoid and the clips: JAX's derivative is T_s * (k s^(k-1))
    k = 1
    xe = run.producer(x)
    if xe is not None and xe.primitive.name == "integer_pow":
        k = int(xe.params["y"])
        if k not in (2, 3, 4):
            return None
        base_s = xe.invars[0]
        pe = run.producer(tv)
        if pe is None or pe.primitive.name != "mul":
            return None
        found = None
        for prev, fac in (pe.invars, pe.invars[::-1]):
            fe = run.producer(_base(run, fac))
            if fe is None or fe.primitive.name != "mul":
                continue
            for c_, v_ in (fe.invars, fe.invars[::-1]):
                if _const_point(run, c_) != float(k):
                    continue
                ve = run.producer(v_)
                # s^(k-1): s itself for k = 2, or integer_pow[y=k-1] of s (jax < 0.8 writes s^1 so for k = 2)
                if (k == 2 and v_ is base_s) or (ve is not None and ve.primitive.name == "integer_pow" and
                                                 int(ve.params["y"]) == k - 1 and ve.invars[0] is base_s):
                    found = prev
        if found is None:
            return None
        x, tv = base_s, found
        # w > 0 needs s^k in [L, U]: s in [L^(1/k), U^(1/k)], rounded outward (two floats, then checked exactly:
        # the float power with exponent 1/k, itself rounded, is off by many floats for tiny L)
        L, U = _root_dn(max(L, 0.0), k), min(1.0, _root_up(U, k))
        xe = run.producer(x)
    if xe is None or xe.primitive.name != "logistic":
        return None
    t = _sigmoid_tangent(run, tv, x)
    if t is None:
        return None
    sb = run.value(x)
    L, U = max(L, float(np.min(sb.lo))), min(U, float(np.max(sb.hi)))
    if not L <= U:
        flo, fhi = 0.0, 0.0
    elif one_minus:
        # T/(1 - P) = k t s^k (1 - s) w / (1 - s^k) = t k s^k / (1 + s + ... + s^(k-1)) w, increasing in s
        # (a float evaluation's error grows with k: the exact value rounded up bounds it whatever the rounding)
        g = k * U ** k / sum(U ** j for j in range(k))
        uq = Fraction(U)
        flo, fhi = 0.0, max(float(_up(_up(_up(g)))), _exact_up(k * uq ** k / sum(uq ** j for j in range(k))))
    else:
        # T/P = t k (1 - s) w
        flo, fhi = 0.0, max(float(_up(_up(k * (1.0 - L)))), _exact_up(k * (1 - Fraction(L))))

    # the numerator: a product containing T (value) or -T (1 - P case), the other factors' boxes multiplied
    def other_factors(v, depth):
        v = _float_base(run, v)
        if v is T and not one_minus:
            return np.ones(shape), np.ones(shape)
        e = run.producer(v)
        if e is None or depth > 8:
            return None
        if one_minus and e.primitive.name == "neg" and e.invars[0] is T:
            return -np.ones(shape), -np.ones(shape)
        if e.primitive.name != "mul":
            return None
        a, b = e.invars
        for p_, q_ in ((a, b), (b, a)):
            got = other_factors(p_, depth + 1)
            if got is not None:
                qlo, qhi = _box_of(run, q_, shape)
                return iv_mul(got[0], got[1], qlo, qhi)
        return None
    if tuple(conc(n.aval.shape)) != tuple(shape):
        return None
    try:
        rest = other_factors(n, 0)
    except ValueError:
        return None
    if rest is None:
        return None
    klo, khi = iv_mul(rest[0], rest[1], np.full(shape, flo), np.full(shape, fhi))
    tb = run.value(t)
    lo, hi = iv_mul(np.broadcast_to(tb.lo, shape), np.broadcast_to(tb.hi, shape), klo, khi)
    lin = lin_scale(klo, khi, tb.lin, shape) if tb.lin is not None and np.all(np.isfinite(klo)) and \
        np.all(np.isfinite(khi)) else None
    return lo, hi, lin


def _softplus_value(run, c):
    """(a, None) when ``c`` is JAX's ``logaddexp(a, 0)`` (``jnp.logaddexp(a, 0.0)``, the body of
    ``jax.nn.softplus``), (a, call) when ``c`` is output 0 of a call named ``softplus`` whose body returns such a
    value and its derivative (checked by :func:`_softplus_tangent`); else None."""
    e = run.producer(c)
    if e is None:
        return None
    if _jax_function(e, "logaddexp"):
        args = e.invars[e.params.get("num_consts", 0):]
        if len(args) == 2 and _const_point(run, args[1]) == 0.0 and \
                tuple(args[0].aval.shape) == tuple(c.aval.shape):
            return args[0], None
        return None
    if e.primitive.name in ("jit", "pjit") and e.params.get("name") == "softplus" and len(e.outvars) == 2 and \
            len(e.invars) == 2 and e.outvars[0] is c:
        inner_c = run.body_output(e, c)
        got = None if inner_c is None else _softplus_value(run, inner_c)
        if got is not None and got[1] is None and _body_input(run, e, got[0]) == 0:
            return e.invars[0], e
    return None


def _body_input(run, call, v):
    """The position of ``v`` among the inputs of ``call``'s body (its latest entry), else None."""
    body = call.params.get(CALL_BODIES.get(call.primitive.name, "jaxpr"))
    inner = getattr(body, "jaxpr", body)
    for i, x in enumerate(getattr(inner, "invars", ())):
        if x is v:
            return i
    return None


def _softplus_tangent(run, T, a, c):
    """(x, steps) when ``T`` is JAX's derivative of ``c = logaddexp(a, 0)`` in a direction: ``x * exp(a - c)``
    (``_logaddexp_jvp``: each of ``a``, ``c`` through ``_replace_inf``; ``exp(...)`` moved by ``steps``, value-
    preserving broadcasts, to ``x``'s shape), plus a term that is 0 (the second argument's zero tangent); else
    None.  ``T / c`` is then ``x`` times ``sigmoid(a) / softplus(a)`` at the positions ``steps`` give."""
    e = run.producer(T)
    if e is not None and e.primitive.name == "add":
        zero = [v for v in e.invars if _is_zero(run, v)]
        rest = [v for v in e.invars if not _is_zero(run, v)]
        if len(zero) == 1 and len(rest) == 1 and _whole(rest[0], e):
            e = run.producer(rest[0])
    if e is None or e.primitive.name != "mul" or tuple(e.outvars[0].aval.shape) != tuple(T.aval.shape):
        return None
    for x, y in (e.invars, e.invars[::-1]):
        if not _whole(x, e):
            continue
        base, steps = _chain(run, y)
        ee = run.producer(base)
        if ee is None or ee.primitive.name != "exp":
            continue
        se = run.producer(ee.invars[0])
        if se is None or se.primitive.name != "sub":
            continue
        if _replaced_inf(run, se.invars[0]) is a and _replaced_inf(run, se.invars[1]) is c:
            return x, steps
    return None


def _is_zero(run, v) -> bool:
    b = run.value(v)
    return b is not None and b.is_point() and b.lin is None and bool(np.all(b.lo == 0.0))


def _factors_besides(run, n, target, shape, depth: int = 0):
    """The box of the product of the factors of ``n`` (a tree of ``mul`` of ``target``'s shape, through float
    conversions) other than one occurrence of ``target``, or None when ``target`` is not such a factor."""
    n = _float_base(run, n)
    if n is target:
        return np.ones(shape), np.ones(shape)
    e = run.producer(n)
    if e is None or depth > 8 or e.primitive.name != "mul" or _ishape(e.outvars[0]) != _ishape(target):
        return None
    a, b = e.invars
    for p_, q_ in ((a, b), (b, a)):
        got = _factors_besides(run, p_, target, shape, depth + 1)
        if got is not None:
            qlo, qhi = _box_of(run, q_, shape)
            return iv_mul(got[0], got[1], qlo, qhi)
    return None


def _factor_leaves(run, n, depth: int = 0) -> list:
    """The factors of ``n`` in its tree of same-shape ``mul`` (through float conversions), ``n`` included."""
    n = _float_base(run, n)
    out = [n]
    e = run.producer(n)
    if e is not None and depth <= 8 and e.primitive.name == "mul" and _ishape(e.outvars[0]) == _ishape(n):
        for v in e.invars:
            if not isinstance(v, _literal_type()) and _ishape(v) == _ishape(n):
                out += _factor_leaves(run, v, depth + 1)
    return out


def softplus_ratio(run, eqn, shape):
    """``(T * f_1 ... f_j) / c`` with ``c = softplus(a)`` (``jax.nn.softplus``, or ``jnp.logaddexp(a, 0.0)``) and
    ``T`` its derivative in a direction, ``x * exp(a - c)``, where ``exp(a - c)`` reaches ``x``'s positions by the
    same moves as ``c`` reaches the quotient's (so each entry divides by its own ``c``): ``T / c = x sigmoid(a) /
    softplus(a)``, and ``sigmoid(a) / softplus(a)`` is in ``(0, 1]`` (``log(1 + u) >= u / (1 + u)`` for ``u = e^a
    > 0``).  The result is ``x`` (its linear form kept) times ``[0, 1]`` times the other factors' boxes: the
    Poisson score ``y rate' / rate`` of a softplus rate is at most ``y |x|``."""
    n, d = eqn.invars
    c, dsteps = _chain(run, d)
    got = _softplus_value(run, c)
    if got is None:
        return None
    a, call = got
    tan = None
    if call is None:            # jnp.logaddexp(a, 0.0) inline: its derivative is a factor of the numerator
        for T in _factor_leaves(run, n):
            tan = _softplus_tangent(run, T, a, c)
            if tan is not None:
                break
    else:
        T = call.outvars[1]
        inner_T, inner_c = run.body_output(call, T), run.body_output(call, c)
        ia = None if inner_T is None or inner_c is None else _softplus_value(run, inner_c)
        if ia is not None and ia[1] is None:
            tan = _softplus_tangent(run, inner_T, ia[0], inner_c)
    if tan is None:
        return None
    x, steps = tan
    # each entry of T divides by its own c: exp(a - c) and c moved to T's shape by the same steps
    if _ishape(T) != _ishape(eqn.outvars[0]) or _ishape(n) != _ishape(T) or len(steps) != len(dsteps) or not all(
            s1.primitive is s2.primitive and s1.params == s2.params and
            s1.outvars[0].aval.shape == s2.outvars[0].aval.shape for s1, s2 in zip(steps, dsteps)):
        return None
    rest = _factors_besides(run, n, T, shape)
    if rest is None:
        return None
    klo, khi = iv_mul(rest[0], rest[1], np.zeros(shape), np.ones(shape))
    xb = run.value(x)
    if xb is None:
        return None
    lo, hi = iv_mul(np.broadcast_to(xb.lo, shape), np.broadcast_to(xb.hi, shape), klo, khi)
    lin = lin_scale(klo, khi, xb.lin, shape) if xb.lin is not None and np.all(np.isfinite(klo)) and \
        np.all(np.isfinite(khi)) else None
    return lo, hi, lin


def _exp_neg_abs(run, e_var, r) -> bool:
    """``e_var`` is ``exp(-|r|)``."""
    ee = run.producer(e_var)
    if ee is None or ee.primitive.name != "exp":
        return False
    ne = run.producer(ee.invars[0])
    if ne is None or ne.primitive.name != "neg":
        return False
    ab = run.producer(ne.invars[0])
    return ab is not None and ab.primitive.name == "abs" and ab.invars[0] is r


def min_weight(run, eqn, shape):
    """``f * w`` with ``w`` JAX's derivative weight of ``min(a, y)`` in ``a`` (``[a == min(a, y)] / (1 + [y ==
    min(a, y)])``, moved by broadcasts/transposes under ``vmap``), or of ``max``: ``w`` is 0 unless ``a <= y``
    (``a >= y`` for max), so the product is 0 or ``f`` computed where ``a <= y`` times ``w``'s box. ``a`` may be
    ``r``, ``|r|`` or ``r * r`` (``_narrowings``): ``jnp.minimum(r ** 2, c)``, a capped squared loss, has
    derivative ``2 r w`` with ``|r| <= sqrt(c)`` wherever ``w != 0``."""
    lit = _literal_type()
    oshape = _ishape(eqn.outvars[0])
    for f, x in ((eqn.invars[0], eqn.invars[1]), (eqn.invars[1], eqn.invars[0])):
        if isinstance(f, lit) or isinstance(x, lit) or _ishape(f) != oshape or len(_ishape(x)) != len(oshape):
            continue
        w, xproj = _through_moves(run, x)
        if w is None:
            continue
        we = run.producer(w)
        rv = we.invars[0] if we is not None and we.primitive.name == "div" else w
        rv = run.origin(rv)
        se = None if isinstance(rv, lit) else run.producer(rv)
        if se is None or se.primitive.name != "select_n" or len(se.invars) != 3:
            continue
        pe, pproj, pairs = _weight_support(run, se)
        if not pairs:
            continue
        # output axis -> x's axis -> w's (= the select's, the predicate's) axis -> the comparison's axis
        xs = _ishape(x)
        out_proj = tuple(None if xs[i] != oshape[i] or xproj[i] is None else pproj[xproj[i]]
                         for i in range(len(oshape)))
        for base, narrowed in _narrowings(run, pe, 1, out_proj, pairs=pairs):
            got, proj = _reevaluated(run, f, base, narrowed, {}, [_REEVAL_MAX])
            if not _lines_up(proj, out_proj, _ishape(pe.outvars[0])):
                continue
            xb = run.value(x)
            plo, phi = iv_mul(np.broadcast_to(got.lo, shape), np.broadcast_to(got.hi, shape),
                              np.broadcast_to(xb.lo, shape), np.broadcast_to(xb.hi, shape))
            lin = None
            if got.lin is not None:                 # 0, or f's form scaled by w's box
                z = np.zeros(shape)
                lin = lin_hull([lin_scale(xb.lo, xb.hi, got.lin, shape), Lin(z, z, {})], shape)
            return np.minimum(plo, 0.0), np.maximum(phi, 0.0), lin
    return None


def _weight_support(run, se):
    """Where the select ``se`` (a derivative weight of ``min`` / ``max``) can be nonzero, as ``(pe, pproj, pairs)``:
    ``pairs`` the ``(compared, other, "le" | "ge")`` relations that hold there (for :func:`_narrowings`), ``pe``
    the comparison whose shape and axes (``pproj``) they have; ``(None, None, [])`` for another select.

    * JAX before 0.11: ``select_n(a == min(a, y), 0, 1)`` (divided by a select of 1 or 2): nonzero only where
      ``a == min(a, y)``, i.e. ``a <= y`` (``a >= y`` for ``max``).
    * JAX 0.11: ``select_n(u > v, select_n(u == v, 0, h), k)``: nonzero only where ``u > v`` or ``u == v``, i.e.
      ``u >= v`` (``min(a, y)``'s weight in ``a`` is ``y > a``, ``y == a``: ``a <= y``).  The relation holds
      whatever ``h`` and ``k`` are: the select's case 0 is exactly 0 when neither comparison is true."""
    lit = _literal_type()
    none = (None, None, [])
    pe, pproj = _predicate(run, se.invars[0])
    if pe is None:
        return none
    if pe.primitive.name == "eq":
        if not _is_zero(run, se.invars[1]):             # chosen where the predicate is false
            return none
        pairs = []
        for a, g in ((pe.invars[0], pe.invars[1]), (pe.invars[1], pe.invars[0])):
            ge = None if isinstance(g, lit) else run.producer(run.origin(g))
            if ge is None or ge.primitive.name not in ("min", "max") or isinstance(a, lit):
                continue
            for a2, y2 in ((ge.invars[0], ge.invars[1]), (ge.invars[1], ge.invars[0])):
                if not isinstance(a2, lit) and run.origin(a2) is run.origin(a):
                    pairs.append((a, y2, "le" if ge.primitive.name == "min" else "ge"))
        return pe, pproj, pairs
    if pe.primitive.name not in _CMP_ORDER:
        return none
    inner = se.invars[1]
    ie = None if isinstance(inner, lit) else run.producer(run.origin(inner))
    if ie is None or ie.primitive.name != "select_n" or len(ie.invars) != 3 or not _is_zero(run, ie.invars[1]):
        return none
    qe, qproj = _predicate(run, ie.invars[0])
    if qe is None or qe.primitive.name != "eq" or qproj is None or pproj is None or tuple(qproj) != tuple(pproj):
        return none

    def key(v):
        return ("lit", np.asarray(v.val).tobytes()) if isinstance(v, lit) else ("var", id(run.origin(v)))

    if sorted(map(key, pe.invars)) != sorted(map(key, qe.invars)):
        return none
    u, v = pe.invars
    op = "ge" if pe.primitive.name in ("gt", "ge") else "le"       # P or u == v
    return pe, pproj, [(u, v, op), (v, u, _FLIP[op])]


_CMP_ORDER = frozenset({"gt", "ge", "lt", "le"})


_RATIONAL_AT = frozenset({"add", "add_any", "sub", "mul", "div"})
RELATIONS = {"sub": (logaddexp_gap,), "div": (ratio_of_sum, cancel_factor, clipped_sigmoid_log, softplus_ratio),
             "mul": (concave_product, one_minus_square, min_weight), "add": (softplus_parts,)}


def _rational(run, eqn, shape):
    """``t * P(r) / Q(r)`` bounded over r's interval (:mod:`.rational`)."""
    got = HOOKS["rational_tangent"](run, eqn.outvars[0], shape, eqn=eqn)
    if got is not None:
        run.context.setdefault("rational", set()).add(eqn.outvars[0])
    return got


def _rational_only(run, eqn):
    """The rational rule's bound of ``eqn``'s output (an operand may be undefined: the rule reads the program, not
    the operands' bounds, and takes a pole only where the program's value is the rational function's), or None."""
    if eqn.primitive.name not in _RATIONAL_AT or len(eqn.outvars) != 1 or floats.modelled():
        return None
    shape = _oshape(eqn)
    try:
        got = _rational(run, eqn, shape)
    except (TypeError, ValueError, AttributeError):
        return None
    if got is None or not (np.isfinite(got[0]).all() and np.isfinite(got[1]).all()):
        return None
    lin = got[2] if len(got) > 2 and got[2] is not None else None
    return [Bound(np.array(got[0], np.float64), np.array(got[1], np.float64), lin if (lin is not None and lin.A)
                  else None)]


def related(run, eqn, outs):
    """The box rule's result ``outs`` intersected with every relational rule that matches ``eqn``; a result
    still unbounded is tried as a tangent times a rational function of one value (:mod:`.rational`)."""
    if floats.modelled():
        # the relational rules and the rational walk rest on real identities (``(r + 1e4)^2 - 1e8 - 2e4 r = r^2``)
        # whose float values may be far from them: not used in float arithmetic
        return outs
    rules = RELATIONS.get(eqn.primitive.name, ())
    marked = run.context.setdefault("rational", set())     # values the rational rule bounded: a sum of them
    reads_marked = any(not hasattr(w, "val") and w in marked for w in eqn.invars)   # may be bounded better as one
    if eqn.primitive.name in _RATIONAL_AT and len(eqn.outvars) == 1:
        rules = rules + (_rational,)
    if not rules or run.producer(eqn.invars[0]) is None and run.producer(eqn.invars[1]) is None:
        return outs
    out = outs[0]
    shape = out.shape
    for rule in rules:
        if rule is _rational and out.bounded() and not reads_marked:
            continue                        # the last resort: bounded already (its form is kept)
        try:
            got = rule(run, eqn, shape)
        except (TypeError, ValueError, AttributeError):   # shapes the pattern does not expect: no claim
            got = None
        if got is None:
            continue
        lo, hi = np.maximum(out.lo, got[0]), np.minimum(out.hi, got[1])
        lin = got[2] if len(got) > 2 and got[2] is not None else out.lin
        out = Bound(lo, hi, lin if (lin is not None and lin.A) else None, out.why if not np.isfinite(
            np.concatenate([lo.ravel(), hi.ravel()])).all() else None, out.nrm)
    return [out]


# the primitives whose outputs are defined whatever their operands: comparisons (a NaN compares unequal, an
# infinity compares as the extended reals do) and is_finite
_NAN_BLIND = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "is_finite"})


def _undefined_through(run, eqn, ins, outs):
    """A rule's outputs ``outs``, made undefined when an input is (see :meth:`Bounds.checked`)."""
    bad = next((b for b in ins if isinstance(b, Bound) and b.nan), None)
    if bad is None or eqn.primitive.name in _NAN_BLIND or eqn.primitive.name == "select_n":
        return list(outs)
    got = _rational_only(run, eqn) if run is not None else None
    if got is not None:
        return got
    return [Bound.undefined(_oshape(eqn, i), bad.why or eqn) for i in range(len(eqn.outvars))]


def random_rule(run, eqn, ins):
    return [Bound.top(_oshape(eqn, i), eqn) for i in range(len(eqn.outvars))]


def unknown_rule(run, eqn, ins):
    """A primitive with no rule: any value, NaN included."""
    return [Bound.undefined(_oshape(eqn, i), eqn) for i in range(len(eqn.outvars))]


def is_finite(run, eqn, ins):
    b = ins[0]
    fin = np.isfinite(b.lo) & np.isfinite(b.hi)
    return [_finish(eqn, ins, np.where(fin, 1.0, 0.0), np.ones(b.shape))]


def _rounding(f):
    def box(a):
        lo, hi = a
        return f(lo), f(hi)
    return _elementwise_box(box)


def _periodic(a):
    lo, hi = a
    return np.full(lo.shape, -1.0), np.full(hi.shape, 1.0)


def _atan2(a, b):
    return np.full(a[0].shape, -np.pi - 1e-12), np.full(a[0].shape, np.pi + 1e-12)


def _nextafter(a, b):
    lo, hi = a
    return _dn(lo), _up(hi)


def _rem_box(a, b):
    bm = _absmax(*b)
    return -bm, bm


def _rem(run, eqn, ins):
    if _is_float(eqn) and _contains_zero(ins[1]):      # fmod(x, 0) is NaN
        return [Bound.undefined(_oshape(eqn), eqn)]
    return _elementwise_box(_rem_box)(run, eqn, ins)


try:                                          # scipy is a dependency: erf and friends
    from scipy import special as _sp
except Exception:  # pragma: no cover
    _sp = None

RULES = {
    "custom_jvp_call": custom_jvp_call,
    "add": add, "add_any": add, "sub": sub, "neg": neg, "mul": mul, "div": div, "max": max_, "min": min_,
    "clamp": clamp, "abs": abs_, "sign": sign, "integer_pow": integer_pow, "square": square, "one_minus_square": one_minus_square_op, "pow": pow_,
    "select_n": select_n, "convert_element_type": convert, "copy": identity,
    "optimization_barrier": identity, "device_put": identity, "sharding_constraint": identity, "mesh_cast": identity, "reshard": identity,
    "stop_gradient": identity, "real": identity, "reduce_precision": reduce_precision,
    "exp": _monotone(np.exp, ulps=LIBM_ULPS, image=(0, INF), overflow=_overflow_at(np.log)),
    "exp2": _monotone(np.exp2, ulps=LIBM_ULPS, image=(0, INF), overflow=_overflow_at(np.log2)),
    "log": _monotone(np.log, ulps=LIBM_ULPS, domain=(0, INF), open_ends=(True, False)),
    "log1p": _monotone(np.log1p, ulps=LIBM_ULPS, domain=(-1, INF), open_ends=(True, False)), "expm1": _monotone(np.expm1, ulps=LIBM_ULPS, image=(-1, INF),
                                                                      overflow=_overflow_at(np.log1p)),
    "tanh": _monotone(np.tanh, ulps=LIBM_ULPS, image=(-1, 1)),
    "logistic": _monotone(lambda x: 1 / (1 + np.exp(-x)), ulps=LIBM_ULPS + 2, image=(0, 1)),
    "sqrt": _monotone(np.sqrt, domain=(0, INF), image=(0, INF)),
    "rsqrt": _monotone(lambda x: 1 / np.sqrt(x), increasing=False, domain=(0, INF), ulps=4, image=(0, INF),
                      open_ends=(True, False)),
    "cbrt": _monotone(np.cbrt, ulps=LIBM_ULPS), "atan": _monotone(np.arctan, ulps=LIBM_ULPS),
    "asinh": _monotone(np.arcsinh, ulps=LIBM_ULPS),
    "sinh": _monotone(np.sinh, ulps=LIBM_ULPS, overflow=_overflow_at(np.arcsinh)), "asin": _monotone(np.arcsin, ulps=LIBM_ULPS, domain=(-1, 1)),
    "acos": _monotone(np.arccos, increasing=False, ulps=LIBM_ULPS, domain=(-1, 1)),
    "acosh": _monotone(np.arccosh, ulps=LIBM_ULPS, domain=(1, INF)), "atanh": _monotone(np.arctanh, ulps=LIBM_ULPS, domain=(-1, 1),
                                                                                  open_ends=(True, True)),
    "sin": _elementwise_box(_periodic), "cos": _elementwise_box(_periodic), "atan2": _elementwise_box(_atan2),
    "floor": _rounding(np.floor), "ceil": _rounding(np.ceil), "round": _rounding(np.round),
    "nextafter": _elementwise_box(_nextafter), "rem": _rem, "is_finite": is_finite,
    "lt": _cmp("lt"), "le": _cmp("le"), "gt": _cmp("gt"), "ge": _cmp("ge"), "eq": _cmp("eq"), "ne": _cmp("ne"),
    "and": _logic("and"), "or": _logic("or"), "not": _logic("not"), "xor": _logic("xor"),
    "broadcast_in_dim": _structural((_bcast_op, _always)), "transpose": _structural((_transpose_op, _always)),
    "squeeze": squeeze_rule, "rev": _structural((_rev_op, _rev_keeps)), "slice": _structural((_slice_op, _slice_keeps)),
    "reshape": reshape, "concatenate": concatenate, "stack": stack, "unstack": unstack, "split": split, "pad": pad, "iota": iota,
    "dim_as_value": dim_as_value, "reduce_sum": reduce_sum, "reduce_max": _reduce_extreme("max"),
    "reduce_min": _reduce_extreme("min"), "reduce_and": reduce_bool("and"), "reduce_or": reduce_bool("or"),
    "argmax": arg_extreme, "argmin": arg_extreme, "cumsum": cumulative, "cummax": cumulative, "cummin": cumulative,
    "cumlogsumexp": cumulative, "cumprod": cumulative, "sort": sort, "top_k": top_k, "gather": gather,
    "dynamic_slice": dynamic_slice, "dynamic_update_slice": dynamic_update_slice, "scatter-add": scatter_add,
    "scatter": scatter, "dot_general": dot_general,
    **{name: random_rule for name in ("random_seed", "random_bits", "random_split", "random_fold_in", "random_wrap",
                                      "random_unwrap", "threefry2x32", "rng_uniform", "rng_bit_generator")},
}
if _sp is not None:
    RULES.update({"erf": _monotone(_sp.erf, ulps=4), "erfc": _monotone(_sp.erfc, increasing=False, ulps=4),
                  "erf_inv": _monotone(_sp.erfinv, domain=(-1, 1), ulps=4, open_ends=(True, True)),
                  "digamma": _monotone(_sp.digamma, domain=(np.finfo(float).tiny, INF), ulps=8)})


def _in_float_range(eqn, b: Bound, dt) -> Bound:
    """A float output's bound with the program's float range: a finite end past the largest number is an overflow
    (an infinity: undefined, ``1e20 * 1e20`` in float32); an end nearer 0 than the smallest normal number may be 0
    (XLA flushes subnormals to zero on CPUs and GPUs: ``r * r + 1e-40`` is ``r * r`` there), so the box is widened
    to 0. Unbounded ends stand for reals of unknown size, as everywhere (docs/analysis.md, "Undefined values")."""
    try:
        import jax.numpy as jnp

        fi = jnp.finfo(dt)
    except (TypeError, ValueError):
        return b
    big, tiny = float(fi.max), float(fi.tiny)
    lo, hi = b.lo, b.hi
    fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
    if np.any(fin_lo & (np.abs(lo) > big)) or np.any(fin_hi & (np.abs(hi) > big)):
        return Bound.undefined(b.shape, eqn)
    sub_lo = (lo > 0) & (lo < tiny)
    sub_hi = (hi < 0) & (hi > -tiny)
    if not (np.any(sub_lo) or np.any(sub_hi)):
        return b
    return Bound(np.where(sub_lo, 0.0, lo), np.where(sub_hi, 0.0, hi), b.lin, b.why, b.nrm)


def _sum_terms(run, eqn, ins):
    """``(n, S)`` for a summing primitive: at most ``n`` roundings reach each output entry, and ``S`` (the output's
    shape) bounds the sum of the magnitudes of its terms (every product and partial sum is at most ``S``); a record
    axis summed counts ``m`` (the context's record count) times."""
    name = eqn.primitive.name
    m = run.context.get("m", 1) if run is not None else 1
    if name == "reduce_sum":
        b = ins[0]
        axes = tuple(int(a) for a in eqn.params["axes"])
        src = _ishape(eqn.invars[0])
        n_sym = int(np.prod([conc((src[a],), m)[0] for a in axes if not is_const_dim(src[a])] or [1]))
        mag = _absmax(b.lo, b.hi)
        with np.errstate(over="ignore", invalid="ignore"):
            S = np.sum(mag, axis=axes) * n_sym
        # a term that is exactly 0 adds nothing, and rounds nothing: k nonzero terms, k - 1 roundings
        return np.maximum(np.sum(mag > 0, axis=axes) * n_sym - 1, 0), S
    if name == "dot_general":
        a, b = ins
        dn = eqn.params["dimension_numbers"]
        lsym = _ishape(eqn.invars[0])
        n_sym = int(np.prod([conc((lsym[ax],), m)[0] for ax in dn[0][0] if not is_const_dim(lsym[ax])] or [1]))
        aa, ba = _absmax(a.lo, a.hi), _absmax(b.lo, b.hi)
        S = _absdot(aa, ba, dn) * n_sym
        k = _dg((aa > 0).astype(np.float64), (ba > 0).astype(np.float64), dn) * n_sym     # nonzero products
        exact_products = (bool(np.all(a.lo == a.hi)) and _pow2(a.lo)) or (bool(np.all(b.lo == b.hi)) and _pow2(b.lo))
        # k products and k - 1 sums (Higham's gamma_k), or the sums alone when every product is exact (a factor
        # 0 or a power of two: a tangent basis)
        return np.maximum(k - 1, 0) if exact_products else k, S
    if name == "cumsum":
        b = ins[0]
        axis = int(eqn.params["axis"])
        src = _ishape(eqn.invars[0])
        n_sym = 1 if is_const_dim(src[axis]) else conc((src[axis],), m)[0]
        with np.errstate(over="ignore", invalid="ignore"):
            S = np.broadcast_to(np.sum(_absmax(b.lo, b.hi), axis=axis, keepdims=True) * n_sym, b.lo.shape)
        return b.lo.shape[axis] * n_sym - 1, S
    op, upd = ins[0], ins[2]                    # scatter-add: the operand plus any subset of the updates
    n_sym = m if _sym(_ishape(eqn.invars[2])) else 1
    with np.errstate(over="ignore", invalid="ignore"):
        S = _absmax(op.lo, op.hi) + (float(np.sum(_absmax(upd.lo, upd.hi))) * n_sym if upd.lo.size else 0.0)
    return int(upd.lo.size) * n_sym, S


_ADDS = ("add", "sub", "add_any", "neg")


def _add_chain(run, eqn, limit: int = 64) -> list:
    """The terms of the chain of additions ending at ``eqn``, each with its sign (followed back through ``add``,
    ``sub`` and ``neg`` of the output's shape, at most ``limit`` terms): the operands XLA may regroup."""
    from jax.extend import core as jcore

    leaves, todo = [], [(v, sg, False) for v, sg in _signed_operands(eqn, 1)]
    while todo:
        v, sg, moved = todo.pop()
        e = None if isinstance(v, jcore.Literal) else run.producer(v)
        if e is not None and e.primitive.name in _ADD_MOVES:
            # XLA regroups across reshapes, slices and broadcasts too (``((y + B)[:, None] - B)[:, 0]`` is y, adv22)
            todo.append((e.invars[0], sg, True))
        elif e is not None and e.primitive.name in _ADDS and len(leaves) + len(todo) + len(e.invars) <= limit:
            todo.extend((w, g, moved) for w, g in _signed_operands(e, sg))
        else:
            leaves.append((v, sg, moved))
    return leaves


#: moves an addition chain is followed through: a term read through one of them counts at its largest magnitude,
#: wherever it is
_ADD_MOVES = ("reshape", "squeeze", "expand_dims", "broadcast_in_dim", "slice", "transpose", "rev", "copy")


def _exp_rewrite(run, eqn, u: float) -> float:
    """The relative error XLA's rewrite of ``exp(a) * exp(b)`` (``exp(a) / exp(b)``) as ``exp(a + b)`` (``exp(a -
    b)``) may add to a product of two exponentials, or 0 when an operand is not an exponential. The sum rounds,
    ``s (1 + d)`` with ``|d| <= u`` and ``|s| <= A = |a|max + |b|max``, so ``exp(s (1 + d)) = exp(s) exp(s d)`` is
    off by ``|exp(s d) - 1| <= 1.01 u A`` while ``u A <= 0.01`` (``exp2``: ``ln 2`` times that); the function's own
    ``k`` floats add ``2 k u`` (:data:`.floats.ULPS`)."""
    prods = [run.producer(v) if not hasattr(v, "val") else None for v in eqn.invars]
    if len(prods) != 2 or not all(e is not None and e.primitive.name in ("exp", "exp2") for e in prods):
        return 0.0
    args = [run.value(e.invars[0]) for e in prods]
    if any(a is None or a.nan for a in args):
        return INF
    with np.errstate(over="ignore", invalid="ignore"):
        A = float(sum(np.max(_absmax(a.lo, a.hi)) if a.lo.size else 0.0 for a in args))
    if not u * A <= 0.01:
        return INF
    return 1.01 * u * A + 2 * max(floats.ULPS[e.primitive.name] for e in prods) * u


def _mul_chain(run, eqn, limit: int = 64) -> int:
    """The number of factors of the chain of products and quotients ending at ``eqn`` (followed back through ``mul``
    and ``div`` of the output's shape, at most ``limit``): the operands XLA may regroup."""
    from jax.extend import core as jcore

    shape = _ishape(eqn.outvars[0])
    n, todo = 0, list(eqn.invars)
    while todo:
        v = todo.pop()
        e = None if isinstance(v, jcore.Literal) else run.producer(v)
        if e is not None and e.primitive.name in ("mul", "div") and _ishape(v) == shape and \
                n + len(todo) + len(e.invars) <= limit:
            todo.extend(e.invars)
        else:
            n += 1
    return n


def _signed_operands(e, sg: int) -> list:
    name = e.primitive.name
    if name == "neg":
        return [(e.invars[0], -sg)]
    if name == "sub":
        return [(e.invars[0], sg), (e.invars[1], -sg)]
    return [(w, sg) for w in e.invars]


def _float_error(run, eqn, b: Bound, ins, dt):
    """``(on_grid, rel, err)``: how far the program's float result of ``eqn`` may be from the real value its rule
    bounds (:mod:`.floats`, docs/analysis.md "Float rounding"), or None when the float result is exact.
    ``on_grid``: correctly rounded (the real box rounded to nearest at both ends holds it). ``rel(x)``: a bound of the
    error at a value ``x`` (elementwise), increasing-compatible (``x - rel(x)`` and ``x + rel(x)`` increase with x), so
    each end of the box moves by its own error; None when the error is not relative to the value. ``err``: the
    error at every value (the output's shape), for a linear form's constant and, without ``rel``, the box."""
    name = eqn.primitive.name
    u = floats.unit_roundoff(dt)
    if name in floats.EXACT:
        return None
    if u is None:                               # a float8 format: no model of its arithmetic
        return False, None, np.full(b.shape, INF)
    mag = _absmax(b.lo, b.hi)

    def relative(c, floor=0.0):
        return (lambda x: c * np.maximum(np.abs(x), floor)), c * np.maximum(mag, floor)
    if name == "convert_element_type":
        if _exact_convert(eqn):
            return None                         # the same or a wider float: exact
        return True, None, u * mag
    if name in ("add", "sub", "add_any"):
        # XLA regroups sums (``(C1 - a) + C2`` is compiled as ``(C1 + C2) - a``): any order of the chain's terms,
        # Higham's gamma_{n-1} times the sum of their magnitudes; a term that is exactly 0 at a position adds
        # nothing there, in any order: one nonzero term is exact, two are one correctly rounded operation
        leaves = _add_chain(run, eqn) if run is not None else [(w, 1, False) for w in eqn.invars]
        S, cnt = np.zeros(b.shape), np.zeros(b.shape)
        for w, _, moved in leaves:
            lb = run.value(w) if run is not None else ins[eqn.invars.index(w)]
            if lb is None or not isinstance(lb, Bound) or lb.nan:
                return False, None, np.full(b.shape, INF)
            with np.errstate(over="ignore", invalid="ignore"):
                a = _absmax(lb.lo, lb.hi)
                a = np.full(b.shape, np.max(a) if a.size else 0.0) if moved else np.broadcast_to(a, b.shape)
                S, cnt = S + a, cnt + (a > 0)
        if np.all(cnt <= 2):
            return True, None, np.where(cnt <= 1, 0.0, u * mag)
        with np.errstate(over="ignore", invalid="ignore"):
            return False, None, np.where(cnt <= 1, 0.0, np.where(cnt == 2, u * mag, floats.gamma(
                np.maximum(cnt - 1, 1), u) * S))
    if name in ("mul", "div") and any(_exact_factor(x) for x in (ins[1:] if name == "div" else ins)):
        return None                             # by 0 or a power of two (a sign, a half): exact
    if name in ("mul", "div"):
        # XLA folds products by constants ((y * 0.1) * 10 is compiled as y * RN(0.1 * 10)) and divides by a constant
        # as a product by its rounded reciprocal (y / 3 as y * RN(1/3)): a chain of n factors errs by at most
        # gamma_{2n} relative, in any grouping; a plain product of two factors is correctly rounded, but may be
        # contracted into a fused multiply-add, which adds its exact value: the box holds both
        n = _mul_chain(run, eqn) if run is not None else 2
        slack = _exp_rewrite(run, eqn, u) if run is not None else 0.0
        if name == "mul" and n <= 2 and slack == 0:
            return "hull", None, u * mag
        return (False,) + relative(floats.gamma(2 * n, u) + slack)
    if name == "square":                        # one product, possibly contracted into a fused multiply-add
        return "hull", None, u * mag
    if name in floats.CORRECTLY_ROUNDED:
        return True, None, u * mag
    if name in floats.ULPS:                     # a float of x is at most 2 u |x|
        return (False,) + relative(floats.ULPS[name] * 2 * u, 1.0 if name in floats.ABSOLUTE else 0.0)
    if name == "integer_pow":
        return (False,) + relative(floats.gamma(abs(int(eqn.params["y"])) + 1, u))
    if name == "one_minus_square":
        # fl(1 - fl(x^2)) errs by <= 2 u (|v| + x^2) (1 + 4 u) for v = 1 - x^2: <= 2 u (1 + 2 |v|) (1 + 4 u)
        c = 2 * u * (1 + 4 * u)
        return False, (lambda x: c * (1 + 2 * np.abs(x))), c * (1 + 2 * mag)
    if name in floats.SUMS:
        n, S = _sum_terms(run, eqn, ins)
        with np.errstate(over="ignore", invalid="ignore"):
            return False, None, np.where(np.asarray(n) > 0, floats.gamma(n, u) * S, 0.0)
    if name in ("cumprod", "cumlogsumexp"):
        return (False,) + relative(floats.gamma(8 * ins[0].lo.shape[int(eqn.params["axis"])] + 8, u))
    return False, None, np.full(b.shape, INF)   # a primitive the model does not know: no bound


def _exact_factor(x) -> bool:
    """``x`` is a known array of zeros and signed powers of two (a product by it, or a quotient by a nonzero one,
    is exact unless it overflows or underflows, which ``_in_float_range`` checks)."""
    return isinstance(x, Bound) and not x.nan and x.is_point() and bool(np.isfinite(x.lo).all()) and _pow2(x.lo)


def _to_runtime(run, eqn, b: Bound, ins, dt) -> Bound:
    """``b`` (the real bound of ``eqn``'s float output) widened by the program's own rounding (:func:`_float_error`):
    the box, a linear form's constant, and the norm facts of the constant part."""
    if not floats.modelled():
        return b
    got = _float_error(run, eqn, b, ins, dt)
    if got is None:
        return b
    on_grid, rel, err = got
    err = np.broadcast_to(np.where(np.isnan(err), INF, err), b.shape)
    if on_grid == "hull":       # the rounded and the exact values (a product a fused multiply-add reads exactly)
        lo, hi = np.minimum(b.lo, floats.nearest(b.lo, dt)), np.maximum(b.hi, floats.nearest(b.hi, dt))
    elif on_grid:               # round to nearest is monotone: [RN(lo), RN(hi)] (a point stays a point)
        lo, hi = floats.nearest(b.lo, dt), floats.nearest(b.hi, dt)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            elo, ehi = (rel(b.lo), rel(b.hi)) if rel is not None else (err, err)
            elo, ehi = np.where(np.isnan(elo), INF, elo), np.where(np.isnan(ehi), INF, ehi)
            glo, ghi = floats.grid_out(_dn(b.lo - elo), _up(b.hi + ehi), dt)
        lo, hi = np.where(elo == 0, b.lo, glo), np.where(ehi == 0, b.hi, ghi)
        if not (np.isfinite(elo).all() and np.isfinite(ehi).all()) and b.bounded():
            return Bound.top(b.shape, eqn)
    image = floats.IMAGE.get(eqn.primitive.name)
    if image is not None:
        lo, hi = np.clip(lo, *image), np.clip(hi, *image)
    lin, nrm = b.lin, b.nrm
    moved = bool(np.any(err != 0))
    if lin is not None and moved:
        with np.errstate(over="ignore", invalid="ignore"):
            lin = Lin(np.where(err == 0, lin.clo, _dn(lin.clo - err)), np.where(err == 0, lin.chi, _up(lin.chi + err)),
                      lin.A)
    if nrm and moved:
        nrm = {k: _up(v + _norm_keep(err, k)) for k, v in nrm.items()}
    return Bound(lo, hi, lin, b.why, nrm, b.nan)


def _defined_point(arr) -> Bound:
    """The point bound of a known array; undefined (``Bound.nan``) when it holds a NaN or an infinity, the box
    kept for infinities alone (the pattern rules read ``x == inf`` in JAX's ``_replace_inf``)."""
    b = Bound.point(arr)
    if np.isnan(b.lo).any():
        return Bound.undefined(b.shape)
    if not np.isfinite(b.lo).all():
        b.nan = True
        return b
    a = np.asarray(arr)
    if np.issubdtype(a.dtype, np.floating) and a.size:
        tiny = float(np.finfo(a.dtype).tiny) if a.dtype.kind == "f" else 0.0
        sub = (b.lo != 0) & (np.abs(b.lo) < tiny)
        if np.any(sub):          # a subnormal number: flushed to zero where it is read (as in _in_float_range)
            return Bound(np.where(sub & (b.lo > 0), 0.0, b.lo), np.where(sub & (b.hi < 0), 0.0, b.hi))
    return b


class Bounds(Interpreter):
    """The bound interpreter: every array's :class:`Bound` over the declared domain.

    One table, ``RULES`` (primitive name -> rule); a primitive with no rule gives the unbounded box and is
    recorded in the bound's ``why``.  Loops are widened to the unbounded box.

    Examples:
        >>> import jax
        >>> from bayesdp.analysis.structure import Bound, Bounds, Run
        >>> closed = jax.make_jaxpr(lambda x: 2.0 * x + 1.0)(0.0)
        >>> [b] = Run(Bounds()).program(closed, [Bound.box(-1.0, 1.0)])
        >>> float(b.lo), float(b.hi)
        (-1.0, 3.0)
    """

    name = "bounds"
    rules = RULES

    def literal(self, value, aval):
        """The point bound of a literal, broadcast to its shape.

        Args:
            value: the literal.
            aval: its abstract array.

        Returns:
            A point :class:`Bound`.
        """
        # in the program's own dtype first: a weak-typed Python float (JAX's TypedFloat, e.g. ``lax.le(y, 0.1)``
        # or a float passed to a jitted helper such as ``jnp.clip``'s ends) holds the float64 0.1, while the
        # program computes with float32(0.1) = 0.10000000149...
        try:
            arr = np.asarray(value, dtype=np.dtype(aval.dtype))
        except (TypeError, ValueError):
            arr = np.asarray(value)
        return _defined_point(np.broadcast_to(arr, conc(aval.shape)))

    def constant(self, value, aval):
        """The point bound of a closed-over constant (unbounded when it is not a number, e.g. a PRNG key).

        Args:
            value: the constant.
            aval: its abstract array.

        Returns:
            A :class:`Bound`.
        """
        try:
            return _defined_point(np.asarray(value))
        except Exception:           # e.g. a PRNG key: not a number
            return Bound.top(conc(aval.shape))

    def checked(self, eqn, outs: list, ins: list = (), run=None) -> list:
        """The rules' outputs, with an integer output whose box leaves its dtype's range made unbounded (``why``
        this equation): the rules compute in real arithmetic, and an integer that overflows wraps around (int32
        ``1291 ** 3`` is negative), so any value of the dtype may come out.  An input that may be undefined
        (``Bound.nan``) makes every output undefined, except for the comparisons and ``is_finite``, whose
        boolean outputs are defined for every operand (a NaN compares unequal).

        Args:
            eqn: the equation.
            outs: its outputs' bounds, from its rule.
            ins: its inputs' bounds.
            run: the interpretation in progress (for the rational rule, which alone may bound a value computed
                from an undefined one: ``t r / (1 / (r + 3))``, whose divisor is ``1 / 0 = inf`` at r = -3, is
                ``0`` there, the value of ``t r (r + 3)``; see :mod:`.rational`).

        Returns:
            The bounds, each within its output's dtype.
        """
        out = _undefined_through(run, eqn, ins, outs)
        for i, v in enumerate(eqn.outvars):
            try:
                dt = np.dtype(v.aval.dtype)
            except TypeError:               # a PRNG key: not a number
                continue
            b = out[i] if i < len(out) else None
            if isinstance(b, Bound) and not b.nan and np.issubdtype(dt, np.floating):
                b = out[i] = _in_float_range(eqn, _to_runtime(run, eqn, b, ins, dt), dt)
            if isinstance(b, Bound) and (np.isnan(b.lo).any() or np.isnan(b.hi).any()):
                # a NaN end (an end computed as inf - inf, or a function's value off its domain) knows nothing:
                # the unbounded end, as in :meth:`join` (a NaN compares false and would pass any later check)
                b = out[i] = Bound(np.where(np.isnan(b.lo), -INF, b.lo), np.where(np.isnan(b.hi), INF, b.hi),
                                   None, b.why or eqn, None, b.nan)
            if dt == np.bool_ or not np.issubdtype(dt, np.integer) or not isinstance(b, Bound):
                continue
            info = np.iinfo(dt)
            if not (np.isfinite(b.lo).all() and np.isfinite(b.hi).all()):
                continue                    # already unbounded: it keeps the equation that made it so
            if np.any(b.lo < info.min) or np.any(b.hi > info.max):
                out[i] = Bound.top(b.shape, eqn)
        return out

    def unknown(self, run, eqn, ins):
        """Unbounded outputs for a primitive with no rule.

        Args:
            run: the interpretation in progress.
            eqn: the equation.
            ins: the bounds of its inputs.

        Returns:
            One unbounded :class:`Bound` per output, ``why`` naming the equation.
        """
        return unknown_rule(run, eqn, ins)

    def join(self, a: Bound, b: Bound) -> Bound:
        """The hull of two bounds (box hull; linear forms joined coefficient-wise).

        Args:
            a: a bound.
            b: a bound of the same shape.

        Returns:
            A :class:`Bound` containing both.
        """
        lo, hi = iv_hull(a.lo, a.hi, b.lo, b.hi)
        # a NaN end (e.g. inf - inf inside a widened loop) knows nothing: the unbounded end, so that loops converge
        lo, hi = np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)
        lin = None
        if a.lin is not None or b.lin is not None:
            lin = lin_hull([a.as_lin(), b.as_lin()], lo.shape)
        if a.nan or b.nan:
            return Bound.undefined(lo.shape, a.why or b.why)
        return Bound(lo, hi, lin if (lin is not None and lin.A) else None, a.why or b.why)

    def same(self, a: Bound, b: Bound) -> bool:
        """Whether two bounds are identical (boxes and linear forms).

        Args:
            a: a bound.
            b: a bound.

        Returns:
            True when they are equal.
        """
        if a.nan != b.nan or not (np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)):
            return False
        if (a.lin is None) != (b.lin is None):
            return False
        if a.lin is None:
            return True
        la, lb = a.lin, b.lin
        return (set(la.A) == set(lb.A) and np.array_equal(la.clo, lb.clo) and np.array_equal(la.chi, lb.chi)
                and all(np.array_equal(la.A[k][0], lb.A[k][0]) and np.array_equal(la.A[k][1], lb.A[k][1])
                        for k in la.A))

    def widen(self, run, value: Bound, aval):
        """Widening of a loop-carried bound: the unbounded box.

        Args:
            run: the interpretation in progress.
            value: the loop-carried bound.
            aval: its abstract array.

        Returns:
            The unbounded :class:`Bound` of its shape.
        """
        return Bound(np.full(value.shape, -INF), np.full(value.shape, INF), None, value.why, None, value.nan)

    def cond_branches(self, run, branches, index: Bound):
        """The branches of a ``cond`` that the bounds of its index allow.

        Args:
            run: the interpretation in progress.
            branches: the ``cond``'s branches.
            index: the bound of its index.

        Returns:
            The branches ``floor(lo) .. ceil(hi)`` (clamped to the valid range), all of them when unbounded.
        """
        lo, hi = float(index.lo.min()), float(index.hi.max())
        n = len(branches)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return branches
        a, b = min(max(int(math.floor(lo)), 0), n - 1), min(max(int(math.ceil(hi)), 0), n - 1)
        return branches[a:b + 1]

    def scan_slice(self, run, value: Bound, aval_full, aval_slice):
        """One slice of a scanned input standing for every iteration: the hull over the scanned axis.

        Args:
            run: the interpretation in progress.
            value: the bound of the whole input.
            aval_full: its abstract array.
            aval_slice: the abstract array of one slice.

        Returns:
            The slice's :class:`Bound`.
        """
        lo, hi = value.lo.min(axis=0), value.hi.max(axis=0)
        lin = None
        if value.lin is not None and is_const_dim(aval_full.shape[0]):
            f = value.lin
            lin = Lin(f.clo.min(axis=0), f.chi.max(axis=0), {k: (a.min(axis=0), b.max(axis=0)) for k, (a, b) in f.A.items()})
        return Bound(lo, hi, lin, value.why, None, value.nan)

    def scan_stack(self, run, value: Bound, aval_slice, aval_full):
        """A scan's stacked output: the bound of one slice broadcast along the stacked axis.

        Args:
            run: the interpretation in progress.
            value: the bound of one slice (every iteration).
            aval_slice: the abstract array of one slice.
            aval_full: the abstract array of the stacked output.

        Returns:
            The stacked output's :class:`Bound`.
        """
        shape = conc(aval_full.shape)
        lo = np.broadcast_to(value.lo, shape)
        hi = np.broadcast_to(value.hi, shape)
        lin = None
        if value.lin is not None:
            lin = value.lin.struct(lambda a, extra: np.broadcast_to(a, (shape[0],) + a.shape))
        return Bound(lo, hi, lin, value.why, None, value.nan)


def data_input(shape_conc: tuple, arg: str, lo, hi, floating: bool = True) -> Bound:
    """The abstract value of data argument ``arg`` at one record: its box and the identity form (``floating``: a
    float argument, whose subnormal values XLA reads as 0)."""
    lo = np.broadcast_to(_f64(lo), shape_conc).copy()
    hi = np.broadcast_to(_f64(hi), shape_conc).copy()
    p = int(np.prod(shape_conc[1:])) if len(shape_conc) > 1 else 1
    eye = np.eye(p).reshape(tuple(shape_conc) + (p,))
    # XLA reads a record nearer 0 than float32's smallest normal number as 0 (CPUs flush subnormal inputs, adv22):
    # the box reaches 0 there. The form's record is the record as the program reads it, whose entries are the
    # declared ones or 0: inside the declared norm ball still
    if floating:
        tiny = float(np.finfo(np.float32).tiny)
        lo, hi = np.where((lo > 0) & (lo < tiny), 0.0, lo), np.where((hi < 0) & (hi > -tiny), 0.0, hi)
    return Bound(lo, hi, Lin(np.zeros(shape_conc), np.zeros(shape_conc), {arg: (eye, eye)}))
