"""A derivative value that is a tangent times a rational function of ONE primal value, bounded over the reals.

The derivative of a robust loss written with elementary operations, e.g. the Geman-McClure factor
``-(r**2) / (1 + r**2)`` with ``r = y - x.theta``, is ``t * g(r)`` with ``t`` the tangent of ``r`` (``-x`` along a
basis direction: bounded, with a linear form in the record) and ``g(r) = -2 r / (1 + r^2)^2`` bounded on the whole
real line although ``r`` is not (theta is anywhere). Interval arithmetic bounds ``2 r`` and ``(1 + r^2)^2`` apart
and loses everything; this rule follows the value back through ``+ - * /``, ``integer_pow``, ``square`` and moves
(``broadcast_in_dim``, ``transpose``, exact float conversions, calls), and when it is exactly ``t * P(r) / Q(r)``
in real arithmetic, with the polynomials' coefficients the program's own numbers (exact rationals, the literals'
values in their dtype), it bounds ``P / Q`` over ``r``'s interval:

* ``Q`` has no zero on the interval (every division of the program divides by a factor of ``Q``: none divides by
  zero), checked with the bounds below, which must exclude 0; a divisor's own denominator may vanish:
  ``a / (B / C)`` moves ``C`` into the numerator (``x ** -k`` likewise ``x``'s denominator), and where ``C = 0``
  (``B != 0``: ``B`` is a factor of ``Q``) the program computes ``a / inf = 0``, which is ``a C / B`` there;
* on ``|r| <= 4`` (intersected with the interval): ``K`` pieces, ``P`` and ``Q`` on each by Horner's scheme in
  outward-rounded interval arithmetic (an enclosure of each polynomial on the piece), their quotient likewise;
  pieces near the extremes split again;
* on ``|r| >= 4`` with ``deg P <= deg Q = n`` (needed for an unbounded interval): ``u = 1/r`` lies in ``[-1/4,
  1/4]`` and ``P(r)/Q(r) = P~(u)/Q~(u)``, ``P~(u) = u^n P(1/u)``, ``Q~(u) = u^n Q(1/u)`` (both multiplied by
  ``u^n != 0``), polynomials with ``Q~(0) = q_n != 0``: enclosed on the bounded ``u`` interval as above.

The hull is an enclosure of ``g`` over the interval, and ``t * g`` is bounded as ``t`` times it, keeping ``t``'s
linear form in the record. Position ``j`` of the value reads ``r`` and ``t`` each at one position (the moves are
followed with :func:`bounds._moved`, which refuses two reads of ``r`` at different positions): the value at ``j``
is ``t_j g(r_k)``, and ``g(r_k)`` lies in ``g``'s enclosure over the hull of ``r``'s box. Anything else (a third
variable, ``t`` squared, a division by a value of ``t``, a degree above 32, a leaf that is neither): no claim.
Derivation: docs/analysis.md, "A tangent times a rational function".
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import bounds as _b

# (rational_tangent is read by bounds through bounds.HOOKS, set by the package's __init__; not reference API)
__all__: list[str] = []

_MAX_DEG = 32
_TINY = float(np.finfo(np.float32).tiny)
_PIECES = 2048
_ROUNDS, _SPLIT = 4, 16      # pieces near the extremes split into 16, up to 3 times
_BUDGET = 256
_OPS = frozenset({"add", "add_any", "sub", "mul", "div", "neg", "integer_pow", "square", "copy", "copy_p", "sqrt",
                  "rsqrt", "exp"})


class _No(Exception):
    """The value is not of the rule's form (a leaf or an operation it does not take): no claim."""


def _padd(a, b):
    n = max(len(a), len(b))
    return _trim(tuple((a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)))


def _pmul(a, b):
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return _trim(tuple(out))


def _trim(p):
    p = list(p)
    while len(p) > 1 and p[-1] == 0:
        p.pop()
    if len(p) - 1 > _MAX_DEG:
        raise _No
    return tuple(p)


def _pneg(a):
    return tuple(-x for x in a)


class _Walk:
    """``value(v)``: ``(k, P, Q, proj_r, proj_t, e, x)``, v = t^k P(r) / Q(r) S(r)^e exp(E(r))^x at every position
    (k, e in {0, 1}, x an integer; ``S = sqrt(R)``, ``R`` the walk's one radicand, a polynomial, set by the first
    ``sqrt`` / ``rsqrt``; ``E`` the walk's one exponent, a polynomial of degree >= 1, set by the first ``exp``), and
    which axis of ``r`` / ``t`` each axis of ``v`` reads (None: ``v`` does not read it)."""

    def __init__(self, run, r, t):
        self.run, self.r, self.t = run, r, t
        self.R = None               # the radicand: every sqrt / rsqrt of the walk takes the root of this polynomial
        self.E = None               # the exponent: every exp of the walk is exp of this polynomial
        self.overflow = False       # an operand is undefined only as an exp may overflow: max E checked at the end
        self.xmax = 0               # the largest power of exp(E) of a value of the walk
        self.memo, self.budget = {}, _BUDGET
        self.anchors = []           # (value, proj_t, c): values equal to c * t, c a nonzero number: their bounds
                                    # carry t's form

    def value(self, v):
        from jax.extend import core as jcore

        if not isinstance(v, jcore.Literal):
            v = self.run.origin(v)
        if isinstance(v, jcore.Literal):
            return 0, (_number(v.val, v.aval.dtype),), (Fraction(1),), None, None, 0, 0
        if v in self.memo:
            return self.memo[v]
        ident = tuple(range(len(_b._ishape(v))))
        if v is self.r:
            out = (0, (Fraction(0), Fraction(1)), (Fraction(1),), ident, None, 0, 0)
        elif v is self.t:
            out = (1, (Fraction(1),), (Fraction(1),), None, ident, 0, 0)
        else:
            out = self._eqn(v)
        if out[0] == 1 and len(out[1]) == len(out[2]) == 1 and out[1][0] != 0 and out[5] == 0 and out[6] == 0:
            self.anchors.append((v, out[4], out[1][0] / out[2][0]))
        self.memo[v] = out
        return out

    def _eqn(self, v):
        run = self.run
        e = _producer(run, v)
        point = _point(run, v)
        if point is not None:
            return 0, (point,), (Fraction(1),), None, None, 0, 0
        if e is None:
            raise _No                              # another input: not a function of r and t alone
        self.budget -= 1
        if self.budget < 0 or len(e.outvars) != 1 or not np.issubdtype(np.dtype(e.outvars[0].aval.dtype), np.floating):
            raise _No                               # an integer's division truncates, its sums wrap
        name = e.primitive.name
        if name in _b._CALLS:
            w = run.body_output(e, v)
            if w is None:
                raise _No
            return self.value(w)
        oshape = _b._ishape(e.outvars[0])
        if name in _b._MOVES or name == "convert_element_type":
            if name == "convert_element_type" and not _b._exact_convert(e):
                raise _No
            k, P, Q, pr, pt, ex, xp = self.value(e.invars[0])
            mv = (lambda p, leaf: None if p is None else _b._moved(e, [p], oshape, _b._ishape(leaf)))
            if name == "convert_element_type":
                return k, P, Q, pr, pt, ex, xp
            if not _b._ishape(self.r) and pr is not None:
                pr = (None,) * len(_b._ishape(e.invars[0]))
            if not _b._ishape(self.t) and pt is not None:
                pt = (None,) * len(_b._ishape(e.invars[0]))
            nr, nt = mv(pr, self.r), mv(pt, self.t)
            if pr is not None and nr is None or pt is not None and nt is None:
                raise _No
            return k, P, Q, nr, nt, ex, xp
        if name not in _OPS:
            raise _No
        for w in e.invars:
            if _b._ishape(w) not in ((), oshape) and len(_b._ishape(w)) != len(oshape):
                raise _No
        for i, w in enumerate(e.invars):
            # an operand that may be undefined (NaN, or an infinity: 1 / 0, rsqrt of a negative) is taken only
            # as a divisor, ``a / (B / C)`` with C = 0 (a / inf = 0); elsewhere ``0 * (1 / r)`` would be read as
            # the polynomial 0, and ``1 / r - 1 / r`` as 0, where the program computes NaN
            b = run.value(w)
            if getattr(b, "nan", False) and not (name == "div" and i == 1):
                if not _from_exp(b):
                    raise _No
                self.overflow = True        # exp(E) may be an infinity for the boxes; E's maximum decides
        ins = [self.value(w) for w in e.invars]
        pr = _proj(e, [x[3] for x in ins], oshape, self.r)
        pt = _proj(e, [x[4] for x in ins], oshape, self.t)
        ex, xp = 0, 0                               # the powers of S = sqrt(R) (before reduction) and of exp(E)
        if name in ("copy", "copy_p"):
            k, P, Q, ex, xp = ins[0][0], ins[0][1], ins[0][2], ins[0][5], ins[0][6]
        elif name == "neg":
            k, P, Q, ex, xp = ins[0][0], _pneg(ins[0][1]), ins[0][2], ins[0][5], ins[0][6]
        elif name in ("add", "add_any", "sub"):
            (ka, Pa, Qa), (kb, Pb, Qb) = ins[0][:3], ins[1][:3]
            ea, eb = ins[0][5], ins[1][5]
            if ka != kb and not (_zero(Pa) or _zero(Pb)):
                raise _No                           # a sum of a tangent and a primal value: not t * g(r)
            if (ea != eb or ins[0][6] != ins[1][6]) and not (_zero(Pa) or _zero(Pb)):
                raise _No                           # a rational value plus S (or exp(E)) times one: not one term
            if name == "sub":
                Pb = _pneg(Pb)
            k = ka if not _zero(Pa) else kb
            ex, xp = (ea, ins[0][6]) if not _zero(Pa) else (eb, ins[1][6])
            P, Q = (_padd(_pmul(Pa, Qb), _pmul(Pb, Qa)), _pmul(Qa, Qb)) if Qa != Qb else (_padd(Pa, Pb), Qa)
        elif name == "mul":
            (ka, Pa, Qa), (kb, Pb, Qb) = ins[0][:3], ins[1][:3]
            k = ka + kb
            if k > 1:
                raise _No
            P, Q, ex, xp = _pmul(Pa, Pb), _pmul(Qa, Qb), ins[0][5] + ins[1][5], ins[0][6] + ins[1][6]
        elif name == "div":
            (ka, Pa, Qa), (kb, Pb, Qb) = ins[0][:3], ins[1][:3]
            if kb != 0:
                raise _No                           # a division by a value of t
            if ins[1][6]:
                raise _No                           # by exp(E)^x: 0 in float32 where E < -104 / x (adv19)
            k, P, Q, ex, xp = ka, _pmul(Pa, Qb), _pmul(Qa, Pb), ins[0][5] - ins[1][5], ins[0][6] - ins[1][6]
        elif name == "square" or name == "integer_pow":
            y = 2 if name == "square" else int(e.params["y"])
            k0, P0, Q0 = ins[0][:3]
            if k0 and y != 1 and not (y == 0):
                raise _No
            if y == 0:
                k, P, Q = 0, (Fraction(1),), (Fraction(1),)     # x ** 0 = 1 (also at 0)
            else:
                base_p, base_q = (P0, Q0) if y > 0 else (Q0, P0)
                P, Q = (Fraction(1),), (Fraction(1),)
                for _ in range(abs(y)):
                    P, Q = _pmul(P, base_p), _pmul(Q, base_q)
                k, ex, xp = k0, ins[0][5] * y, ins[0][6] * y
        elif name in ("sqrt", "rsqrt"):
            k0, P0, Q0 = ins[0][:3]
            if k0 or ins[0][5] or ins[0][6] or len(Q0) != 1 or Q0[0] == 0:
                raise _No                           # the root of a tangent, of a root or exp, of a ratio
            R = _trim(tuple(c / Q0[0] for c in P0))
            if self.R is None:
                self.R = R
            elif self.R != R:
                raise _No                           # a second radicand
            k, P, Q, ex = 0, (Fraction(1),), (Fraction(1),), (1 if name == "sqrt" else -1)
        elif name == "exp":
            k0, P0, Q0 = ins[0][:3]
            if k0 or ins[0][5] or ins[0][6] or len(Q0) != 1 or Q0[0] == 0:
                raise _No                           # exp of a tangent, of a root or exp, of a ratio
            E = _trim(tuple(c / Q0[0] for c in P0))
            if len(E) < 2:
                raise _No                           # a constant exponent (no decay to prove anything with)
            if self.E is None:
                self.E = E
            elif self.E != E:
                raise _No                           # a second exponent
            k, P, Q, xp = 0, (Fraction(1),), (Fraction(1),), 1
        else:
            raise _No
        P, Q, ex = self._reduced(P, Q, ex)
        if _zero(P):
            k, ex, xp = 0, 0, 0
        self.xmax = max(self.xmax, abs(xp))
        return k, P, Q, pr, pt, ex, xp

    def _reduced(self, P, Q, ex):
        """``P / Q S^ex`` as ``P' / Q' S^e`` with e in {0, 1}: S^2 = R moves into the numerator, S^-1 = S / R."""
        if ex == 0:
            return P, Q, 0
        half, odd = divmod(ex, 2)                   # ex = 2 half + odd, odd in {0, 1} (half < 0 for ex < 0)
        for _ in range(abs(half)):
            if half > 0:
                P = _pmul(P, self.R)
            else:
                Q = _pmul(Q, self.R)
        return P, Q, odd


def _proj(e, projs, oshape, leaf):
    """Which axis of ``leaf`` each axis of element-wise ``e``'s output reads (:func:`bounds._moved`), None when no
    operand reads it; raises :class:`_No` where the reads disagree."""
    if all(p is None for p in projs):
        return None
    if not _b._ishape(leaf):
        return (None,) * len(oshape)          # a scalar leaf: every position reads the one value
    if any(p is not None and len(_b._ishape(w)) != len(oshape) for w, p in zip(e.invars, projs)):
        raise _No
    got = _b._moved(e, projs, oshape, _b._ishape(leaf))
    if got is None:
        raise _No
    return got


def _from_exp(b) -> bool:
    """The bound is undefined because an ``exp`` may overflow (its ``why`` is that equation), nothing else."""
    return getattr(getattr(b.why, "primitive", None), "name", None) == "exp"


def _no_overflow(w, lo: float, hi: float, v) -> bool:
    """Every exp(E)^x the walk computed is finite in ``v``'s float for r in [lo, hi]: ``x max E`` below the
    argument where exp overflows (the boxes could not tell: ``exp(r^2 - r^4)`` has the box exponent [-inf, inf],
    the polynomial's maximum 1/4)."""
    if w.E is None:
        return False
    top = _poly_max(w.E, lo, hi)
    if top is None:
        return False
    limit = float(np.log(np.finfo(np.dtype(v.aval.dtype)).max)) * (1 - 1e-6)
    return max(1, w.xmax) * max(top, 0.0) <= limit


def _poly_max(E, lo: float, hi: float) -> float | None:
    """An upper bound of the polynomial ``E`` on [lo, hi] (infinite ends allowed), or None. Where an end is
    infinite, E must fall there (even degree n, leading coefficient a_n < 0): for ``|r| >= B0 = max(1, S / |a_n|)``,
    ``S = sum_{i<n} |a_i|``, ``E(r) <= |r|^(n-1) (a_n |r| + S) <= 0``; the rest is enclosed on [-B0, B0]."""
    E = _trim(E)
    n = len(E) - 1
    if np.isfinite(lo) and np.isfinite(hi):
        got = _enclose(E, (Fraction(1),), lo, hi)
        return None if got is None else float(got[1])
    if n < 1 or n % 2 or E[-1] >= 0:
        return None                               # E grows at an infinite end (or is constant: not the walk's)
    S = sum(abs(c) for c in E[:-1])
    B0 = float(_b._up(float(max(Fraction(1), S / abs(E[-1])))))
    a, b = max(lo, -B0), min(hi, B0)
    if a > b:
        return 0.0
    got = _enclose(E, (Fraction(1),), a, b)
    return None if got is None else max(float(got[1]), 0.0)


def _zero(P) -> bool:
    return all(x == 0 for x in P)


def _number(val, dtype):
    a = np.asarray(val)
    if a.size != 1:
        raise _No
    try:
        x = float(a.astype(dtype).item())
    except (TypeError, ValueError):
        raise _No from None
    if not np.isfinite(x):
        raise _No
    if x != 0 and abs(x) < _TINY:
        raise _No                   # a subnormal number: flushed to zero where the program reads it (CPUs, GPUs)
    return Fraction(x)


def _pending(run) -> dict:
    """The equation whose rule asks (its output has no recorded producer yet): output -> equation; kept in the run
    (not the module), so that analyses in other threads do not see it."""
    return run.context.setdefault("rational_pending", {})


def _producer(run, v):
    return _pending(run).get(v) or run.producer(v)


def _point(run, v):
    """The one number every entry of ``v`` holds (a constant, a literal broadcast), exactly, or None."""
    if v in _pending(run):
        return None                                  # its recorded value, if any, is an earlier entry's
    b = run.value(v)
    if b is None or not b.is_point() or not b.lo.size:
        return None
    x = float(b.lo.flat[0])
    return Fraction(x) if np.isfinite(x) and np.all(b.lo == x) else None


def _scan(run, v, stop, below, budget):
    """The variables the rational walk stops at (inputs, values of other operations, those in ``stop``), as a
    frozenset; ``below``: every variable visited -> the leaves under it."""
    from jax.extend import core as jcore

    if isinstance(v, jcore.Literal):
        return frozenset()
    v = run.origin(v)
    if isinstance(v, jcore.Literal):
        return frozenset()
    if v in below:
        return below[v]
    budget[0] -= 1
    if budget[0] < 0:
        raise _No
    e = _producer(run, v)
    size = below.setdefault(_SIZE, {})
    size[v] = 1
    if v in stop:
        got = frozenset([v])
    elif _point(run, v) is not None:
        got = frozenset()
    elif e is not None and e.primitive.name in _b._CALLS and run.body_output(e, v) is not None:
        got = _scan(run, run.body_output(e, v), stop, below, budget)
        size[v] = 1 + size.get(run.origin(run.body_output(e, v)), 0)
    elif e is not None and len(e.outvars) == 1 and (
            e.primitive.name in _OPS or e.primitive.name in _b._MOVES or
            e.primitive.name == "convert_element_type" and _b._exact_convert(e)):
        got = frozenset().union(*(_scan(run, w, stop, below, budget) for w in e.invars))
        size[v] = 1 + sum(size.get(run.origin(w), 0) for w in e.invars if not hasattr(w, "val"))
    else:
        got = frozenset([v])
    below[v] = got
    return got


_PAIRS = 32          # (r, t) pairs tried per value
_SIZE = object()     # the key of _scan's record of each value's size (equations under it, counted per path)


def _roles(run, v):
    """Candidate ``(r, t)`` pairs: two values the walk from ``v`` can stop at and reach nothing else, ``r``
    computed from some of the leaves (``r = y - x.w - b`` from the data and theta) and ``t`` from the rest (a
    tangent, or a sum of tangents: ``-x.e - e_b``), the smallest such values first."""
    below = {}
    leaves = _scan(run, v, frozenset(), below, [_BUDGET])
    size = below.pop(_SIZE)
    if not 2 <= len(leaves) <= 12:
        return
    ov = run.origin(v)
    rep = {}                       # each set of leaves -> the smallest value computed from exactly those
    for u, got in below.items():
        if got and u is not ov and (got not in rep or size[u] < size[rep[got]]):
            rep[got] = u
    reps = sorted(rep.values(), key=lambda u: size[u])
    tried = 0
    for r in reps:
        for t in reps:
            if r is t or below[r] | below[t] != leaves:
                continue
            tried += 1
            if tried > _PAIRS:
                return
            if _scan(run, v, frozenset([r, t]), {}, [_BUDGET]) == frozenset([r, t]):
                yield r, t


def _iv_poly(P, lo, hi):
    """An enclosure of polynomial P (Fraction coefficients) on [lo, hi] (arrays), Horner in outward rounding."""
    shape = np.shape(lo)
    plo, phi = np.zeros(shape), np.zeros(shape)
    for c in reversed(P):
        x = float(c)
        clo = np.full(shape, x if Fraction(x) <= c else float(_b._dn(x)))
        chi = np.full(shape, x if Fraction(x) >= c else float(_b._up(x)))
        plo, phi = _b.iv_mul(plo, phi, lo, hi)
        plo, phi = _b.iv_add(plo, phi, clo, chi)
    return plo, phi


def _enclose(P, Q, lo: float, hi: float):
    """[glo, ghi] containing P/Q on [lo, hi] (infinite ends allowed), or None (Q may vanish, or P/Q unbounded).

    ``|r| <= 4`` directly; ``|r| >= 4`` through ``u = 1/r``: there ``P(r)/Q(r) = P~(u)/Q~(u)`` with ``P~(u) = u^n
    P(1/u) = sum p_i u^(n-i)`` and ``Q~`` likewise (``n = deg Q >= deg P``; num and den times ``u^n != 0``), a
    rational function of ``u`` in ``[-1/4, 1/4]`` whose denominator is ``q_n != 0`` at ``u = 0``: the tails are
    enclosed like the middle, on a bounded interval, at no loss."""
    n, dp = len(Q) - 1, len(P) - 1
    parts = []
    if dp > n:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return None                          # grows like r^(deg P - deg Q)
        parts.append((P, Q, lo, hi))
    else:
        Pt, Qt = _reversed(P, n), _reversed(Q, n)                                # u^n P(1/u), u^n Q(1/u)
        if max(lo, -4.0) <= min(hi, 4.0):
            parts.append((P, Q, max(lo, -4.0), min(hi, 4.0)))
        if hi > 4.0:                              # r in [max(lo, 4), hi]: u in [1/hi, 1/max(lo, 4)]
            a = max(lo, 4.0)
            parts.append((Pt, Qt, 0.0 if np.isinf(hi) else float(_b._dn(1.0 / hi)), float(_b._up(1.0 / a))))
        if lo < -4.0:                             # r in [lo, min(hi, -4)]: u in [1/min(hi, -4), 1/lo]
            b = min(hi, -4.0)
            parts.append((Pt, Qt, float(_b._dn(1.0 / b)), 0.0 if np.isinf(lo) else float(_b._up(1.0 / lo))))
    hull = [np.inf, -np.inf]
    for P1, Q1, a, b in parts:
        got = _pieces(_trim(P1), _trim(Q1), a, b)
        if got is None:
            return None
        hull = [min(hull[0], got[0]), max(hull[1], got[1])]
    return hull


def _enclose_root(P, Q, ex, R, lo: float, hi: float):
    """[glo, ghi] containing ``g = P / Q * sqrt(R)^ex`` (ex in {0, 1}) on [lo, hi], or None.

    Where the walk took a root (``R`` not None), ``R > 0`` on the whole interval is required first: ``1 / R``
    enclosed (so ``R`` has no zero on the interval, which is connected: one sign throughout) and ``R > 0`` at one
    point of it, exactly; the program's ``sqrt`` is then real and its ``rsqrt`` or division by a root finite. For
    ``ex = 1``: ``g^2 = P^2 R / Q^2`` (a rational function) enclosed in ``[h_lo, h_hi]`` gives ``|g| <= sqrt(h_hi)``,
    and ``g`` has the sign of ``P / Q`` (enclosed too, when it is bounded): ``[sqrt(h_lo), sqrt(h_hi)]`` where
    ``P / Q >= 0``, its negative where ``<= 0``, else ``[-sqrt(h_hi), sqrt(h_hi)]``; the roots rounded outward."""
    if R is not None:
        if _enclose((Fraction(1),), R, lo, hi) is None:
            return None                           # R may vanish on the interval
        at = Fraction(0) if lo <= 0 <= hi else Fraction(lo if np.isfinite(lo) else hi)
        if not sum(c * at ** i for i, c in enumerate(R)) > 0:
            return None                           # negative throughout
    if ex == 0:
        return _enclose(P, Q, lo, hi)
    h = _enclose(_pmul(_pmul(P, P), R), _pmul(Q, Q), lo, hi)
    if h is None:
        return None
    top = float(_b._up(np.sqrt(max(h[1], 0.0))))
    bot = float(_b._dn(np.sqrt(max(h[0], 0.0))))
    sign = _enclose(P, Q, lo, hi)
    if sign is not None and sign[0] >= 0:
        return [bot, top]
    if sign is not None and sign[1] <= 0:
        return [-top, -bot]
    return [-top, top]


def _pieces(P, Q, mid_lo, mid_hi, F=None):
    """[glo, ghi] containing P/Q (times exp(F) when ``F`` is given) on the bounded [mid_lo, mid_hi], or None (Q may
    vanish there, or exp(F) may pass e^_EXP_MAX)."""
    hull = [np.inf, -np.inf]
    if not (np.isfinite(mid_lo) and np.isfinite(mid_hi)):
        return None
    edges = np.linspace(mid_lo, mid_hi, _PIECES + 1)
    elo, ehi = edges[:-1].copy(), edges[1:].copy()
    elo[0], ehi[-1] = mid_lo, mid_hi
    elo, ehi = np.minimum(elo, ehi), np.maximum(elo, ehi)    # each piece [lo, hi] (the ends are shared)
    sign = None
    for rnd in range(_ROUNDS):
        plo, phi = _iv_poly(P, elo, ehi)
        qlo, qhi = _iv_poly(Q, elo, ehi)
        # |Q| at least float32's smallest normal number: a smaller one is flushed to zero (r^2 + 1e-40 is 0 at r = 0);
        # on a tail piece Q~(u) = u^n Q(1/u) with |u| <= 1/4, so |Q| >= 4^n |Q~| there
        pos, neg = bool(np.all(qlo > _TINY)), bool(np.all(qhi < -_TINY))
        if not (pos or neg) or sign not in (None, pos):
            return None                          # Q may vanish (or change sign) on the interval
        sign = pos
        rlo, rhi = _b.iv_recip(qlo, qhi)
        glo, ghi = _b.iv_mul(plo, phi, rlo, rhi)
        if F is not None:
            flo, fhi = _iv_poly(F, elo, ehi)
            if not np.all(fhi <= _EXP_MAX):
                return None                      # past e^80: float32's exp would overflow near there
            glo, ghi = _b.iv_mul(glo, ghi, *_exp_iv(flo, fhi))
        if not (np.all(np.isfinite(glo)) and np.all(np.isfinite(ghi))):
            return None
        # pieces whose enclosure reaches past the values at their midpoints (a float estimate, used only to
        # choose which pieces to split) are split; every other piece's enclosure enters the hull now
        mids = _values(P, Q, (elo + ehi) / 2, F)
        top, bot = float(np.max(mids)), float(np.min(mids))
        tol = 1e-4 * max(abs(top), abs(bot), 1e-300)
        split = ((ghi > top + tol) | (glo < bot - tol)) if rnd + 1 < _ROUNDS else np.zeros(elo.shape, bool)
        if split.sum() * _SPLIT > 8 * _PIECES:
            split[:] = False
        done = ~split
        if done.any():
            hull = [min(hull[0], float(glo[done].min())), max(hull[1], float(ghi[done].max()))]
        if not split.any():
            break
        a, b = elo[split], ehi[split]
        w = (b - a) / _SPLIT
        elo = np.concatenate([a + i * w for i in range(_SPLIT)])
        ehi = np.concatenate([a + (i + 1) * w for i in range(_SPLIT - 1)] + [b])
        elo, ehi = np.minimum(elo, ehi), np.maximum(elo, ehi)
        # the sub-pieces cover [a, b]: consecutive ends are the same floats (a + i w), the last ends at b
    return hull


def _values(P, Q, xs, F=None):
    with np.errstate(all="ignore"):
        g = np.polyval([float(c) for c in reversed(P)], xs) / np.polyval([float(c) for c in reversed(Q)], xs)
        if F is not None:
            g = g * np.exp(np.polyval([float(c) for c in reversed(F)], xs))
    return np.where(np.isfinite(g), g, 0.0)


#: the largest exponent an enclosure of exp(F) may reach (float32's exp overflows past 88.7)
_EXP_MAX = 80.0
_TAIL_PIECES = 256


def _exp_iv(lo, hi):
    """[exp(lo), exp(hi)] rounded outward (numpy's exp: libm, LIBM_ULPS floats)."""
    with np.errstate(all="ignore"):
        a, b = np.exp(lo), np.exp(hi)
    for _ in range(_b.LIBM_ULPS):
        a, b = _b._dn(a), _b._up(b)
    return np.maximum(a, 0.0), b


def _side(c, side: int):
    """Coefficients of p(side * s) in s."""
    return tuple(x * side ** i for i, x in enumerate(c))


def _reversed(c, n: int):
    """``u^n c(1/u)`` for ``n >= deg c``: coefficient j is ``c_(n-j)``."""
    return tuple(c[n - j] if 0 <= n - j < len(c) else Fraction(0) for j in range(n + 1))


def _tail(P, Q, F, B: float):
    """``T >= sup |P/Q exp(F)|`` over ``r >= B`` (F of degree n >= 1 on that side, ``B >= 1``), or None.

    With ``u = 1/r`` in ``(0, 1/B]``: ``F(r) = r^n F~(u)``, ``F~(u) = u^n F(1/u)``, a polynomial with ``F~(0) = f_n``;
    ``F~ <= -c < 0`` on ``[0, 1/B]`` (enclosed on pieces; else the caller tries twice ``B``) gives ``F(r) <= -c
    r^n``. ``P/Q = r^d P~(u)/Q~(u)`` (``d = deg P - deg Q``, ``P~(u) = u^deg P P(1/u)``, ``Q~`` likewise,
    ``Q~(0) = q_deg Q != 0``) with ``|P~/Q~| <= M`` on ``[0, 1/B]``. So ``|g| <= M r^d e^{-c r^n}``, which
    decreases on ``r >= B`` once ``B^n >= d / (c n)`` (the caller raises ``B`` until it does); its value at ``B``,
    rounded up, is ``T``."""
    n, dp, dq = len(F) - 1, len(P) - 1, len(Q) - 1
    u_hi = float(_b._up(1.0 / B))
    edges = np.linspace(0.0, u_hi, _TAIL_PIECES + 1)
    elo, ehi = edges[:-1].copy(), edges[1:].copy()
    ehi[-1] = u_hi
    _, ft_hi = _iv_poly(_reversed(F, n), elo, ehi)
    c = -float(np.max(ft_hi))
    if not c > 0:
        return None, 2.0 * B     # F~ not proven negative on [0, 1/B] (a Gaussian centred past B): try a larger B
    m = _pieces(_trim(_reversed(P, dp)), _trim(_reversed(Q, dq)), 0.0, u_hi)
    if m is None:
        return None, None
    M = float(_b._up(max(abs(m[0]), abs(m[1]))))
    d = dp - dq
    if d > 0 and Fraction(B) ** n * Fraction(c) * n < d:
        return None, float((d / (c * n)) ** (1.0 / n))   # not yet decreasing at B: the caller raises B
    Bd = float(_b._up(float(Fraction(B) ** d)))                   # B^d exactly, then rounded up
    cBn = float(_b._dn(_b._dn(c) * float(_b._dn(float(Fraction(B) ** n)))))
    _, e = _exp_iv(-cBn, -cBn)
    return float(_b._up(_b._up(M * Bd) * float(e))), None


def _enclose_exp(P, Q, F, lo: float, hi: float):
    """[glo, ghi] containing ``g = P / Q exp(F)`` on [lo, hi] (F of degree >= 1), or None: on ``[-B, B]`` (with the
    interval) in pieces as :func:`_pieces`, each enclosure of ``exp(F)`` at most ``e^_EXP_MAX``; beyond ``B`` on an
    end the interval reaches, the tail bound of :func:`_tail` (needs ``F -> -inf`` there), as ``[-T, T]``; ``B``
    starts at 4 and grows until ``F~ < 0`` on ``[0, 1/B]`` and ``M r^d e^{-c r^n}`` decreases past it (at most 8
    times, to at most 10^6)."""
    B = 4.0
    for _ in range(8):
        tails, again = [], None
        for side, end in ((1, hi), (-1, lo)):
            if side * end <= B:
                continue
            T, need = _tail(_side(P, side), _side(Q, side), _side(F, side), B)
            if T is None and need is None:
                return None
            if need is not None:
                again = need
                break
            tails.append(T)
        if again is None:
            break
        B = float(np.ceil(again)) + 1.0
        if B > 1e6:
            return None
    else:
        return None
    hull = [np.inf, -np.inf]
    a, b = max(lo, -B), min(hi, B)
    if a <= b:
        got = _pieces(P, Q, a, b, F)
        if got is None:
            return None
        hull = [got[0], got[1]]
    for T in tails:
        if not np.isfinite(T):
            return None
        hull = [min(hull[0], -T), max(hull[1], T)]
    return hull if hull[0] <= hull[1] else None


def rational_tangent(run, v, shape, override=None, eqn=None):
    """``(lo, hi, form)`` for ``v = t * P(r) / Q(r)`` (module docstring), or None.

    Args:
        run: the bound interpretation in progress.
        v: the derivative value.
        shape: its concrete shape.
        override: ``(r, Bound, lines_up)``: ``r``'s bound where ``v`` is used (a select's case narrowed by its
            predicate), valid where ``lines_up(proj)`` holds for the positions of ``r`` that ``v`` reads.
        eqn: the equation producing ``v`` when its rule asks (before the run records it).

    Returns:
        The box and the linear form of ``v`` (``t``'s form scaled), or None (no claim).
    """
    if eqn is not None:
        _pending(run)[eqn.outvars[0]] = eqn
    try:
        for r, t in _roles(run, v):
            try:
                w = _Walk(run, r, t)
                k, P, Q, pr, pt, ex, xp = w.value(v)
            except _No:
                continue
            if k != 1 or pt is None:
                continue
            anchor = next(((a, c) for a, p, c in w.anchors if p == pt and _b._ishape(a) == _b._ishape(v)), None)
            if anchor is None:
                continue
            anchor, c = anchor               # v = (c t) * (P / (c Q))
            Q = _pmul(Q, (c,))
            if override is not None and override[0] is r:
                if not override[2](pr):
                    continue                  # r read elsewhere than where the predicate narrowed it
                rb = override[1]
            else:
                rb = run.value(r)
            if rb is None:
                continue
            if w.R is not None and w.E is not None:
                continue                      # a root and an exponential in one value: not bounded here
            rlo, rhi = float(np.min(rb.lo)), float(np.max(rb.hi))
            if w.overflow and not _no_overflow(w, rlo, rhi, v):
                continue
            g = _enclose_root(P, Q, ex, w.R, rlo, rhi) if not xp else \
                _enclose_exp(P, Q, tuple(c * xp for c in w.E), rlo, rhi)
            if g is None:
                continue
            tb = run.value(anchor)
            glo, ghi = np.full(shape, g[0]), np.full(shape, g[1])
            lo, hi = _b.iv_mul(np.broadcast_to(tb.lo, shape), np.broadcast_to(tb.hi, shape), glo, ghi)
            lin = _b.lin_scale(glo, ghi, tb.lin, shape) if tb.lin is not None else None
            return lo, hi, lin
    except (_No, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    finally:
        _pending(run).clear()
    return None
