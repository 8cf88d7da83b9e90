"""The public data domain: bounds on one record, declared by the user, independent of the data.

Syntax (one entry per ``--domain`` flag, or a list for :meth:`Domain.parse`)::

    X.norm=1.0        Euclidean norm of each record's row of argument X is <= 1.0
    X.min=-1          every entry of each record of X is >= -1
    X.max=1           every entry of each record of X is <= 1
    y.values=0,1      every entry of y is one of the listed values
    y.values=0..45    every entry of y is an integer from 0 to 45 (both included); ranges and single values
                      may be mixed (y.values=-1,0..9); in Python: Domain(y=values(range(46)))

The analyzer never reads a bound off the private data.  Data outside the
declared domain is an error (:class:`bayesdp.errors.DomainError`) before
anything is computed, unless the user asks for clipping to the domain
(``clip=True``), which is recorded (how many records were changed).

Floating-point data at the declared norm
----------------------------------------
Rows normalised to the declared norm in floating point (``X / norm(X, axis=1) * R`` in float32 is what
users do) come out a few units in the last place above ``R``.  :meth:`Domain.check` accepts a row of a
floating-point array whose norm (computed in float64 from the stored values) is at most
``R (1 + NORM_ACCEPT_RTOL)``, ``NORM_ACCEPT_RTOL = 6 * 2^-24`` (6 float32 unit roundoffs; measured: rows
normalised in float32 exceed R by at most 3.5 unit roundoffs for 1 <= d <= 10^4), and certificates use
``R (1 + NORM_RTOL)``, ``NORM_RTOL = 8 * 2^-24 ~ 4.8e-7``: the two roundoffs between them cover the samplers'
cast of float64 rows to float32 (one roundoff) and the float64 sums of the check.  (Until 2026-11-27 rows
were accepted up to ``R (1 + NORM_RTOL)`` itself: a float64 row accepted there and cast to float32 could
exceed the certified bound by 5.6e-8 relative.)
Integer arrays and the per-entry bounds (``min``/``max``/``values``) are checked exactly.

A certificate must hold for the data actually used, which includes those rows and the samplers' cast
of float64 data to float32 (each entry moves by a relative 2^-24 at most, so a row's norm and its
largest entry grow by that factor at most).  The bounds a certificate may use are therefore the
*inflated* ones: :meth:`ArgDomain.row_norm_bound` (every candidate bound times ``1 + NORM_RTOL``,
rounded up) and :meth:`ArgDomain.certified_norm`.  The declared numbers (``ArgDomain.norm``, ``lo``,
``hi``) are what the user wrote and are reported as such; no constant may be computed from them
directly.  (:meth:`ArgDomain.value_range`, the range of a response, is the declared one: responses
are checked exactly and class labels / 0-1 values are exact in float32.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import CLIP_ADVICE, DomainError, clip_advice  # noqa: F401 - clip_advice re-exported

__all__ = ["ArgDomain", "Domain", "NORM_ACCEPT_RTOL", "NORM_RTOL", "box", "norm_bound", "values"]

KEYS = ("norm", "min", "max", "values")

#: the inflation of every bound a
#: certificate uses: 8 float32 unit roundoffs (module docstring)
NORM_RTOL = 8 * 2.0 ** -24
#: relative tolerance of :meth:`Domain.check` for floating-point rows: two roundoffs below NORM_RTOL (docstring)
NORM_ACCEPT_RTOL = 6 * 2.0 ** -24


def _inflate(x: float) -> float:
    """``x (1 + NORM_RTOL)`` rounded up (x >= 0)."""
    return math.nextafter(x * (1.0 + NORM_RTOL), math.inf)


@dataclass(frozen=True)
class ArgDomain:
    """Bounds on one record of one model argument (as declared; see the module docstring for the inflated
    bounds a certificate uses).  Built by :class:`Domain` from its spec.

    Args:
        name: the model argument.
        norm: declared bound on the Euclidean norm of each record's row, or None.
        lo: declared lower bound of every entry, or None.
        hi: declared upper bound of every entry, or None.
        values: the values every entry is one of, or None.

    Examples:
        >>> from bayesdp.analysis import ArgDomain
        >>> x = ArgDomain("X", norm=1.0)
        >>> x.describe(), x.certified_norm > 1.0          # inflated by 1 + NORM_RTOL for float data
        ('X.norm=1', True)
        >>> ArgDomain("y", values=(0.0, 1.0)).value_range()
        (0.0, 1.0)
    """

    name: str
    norm: float | None = None
    lo: float | None = None
    hi: float | None = None
    values: tuple[float, ...] | None = None

    # -- derived bounds ------------------------------------------------------
    def row_norm_bound(self, size: int) -> float | None:
        """sup |x| over one record with ``size`` entries, from every declared bound (the smallest),
        INFLATED by ``1 + NORM_RTOL`` (rounded up): the bound a certificate may use, true for every record
        :meth:`Domain.check` accepts, also after the samplers' cast to float32 (module docstring).

        Args:
            size: the number of entries of one record.

        Returns:
            The inflated bound, or None when nothing bounds the row.
        """
        cands = []
        if self.norm is not None:
            cands.append(self.norm)
        if self.lo is not None and self.hi is not None:
            cands.append(math.sqrt(size) * max(abs(self.lo), abs(self.hi)))
        if self.values is not None:
            cands.append(math.sqrt(size) * max(abs(v) for v in self.values))
        return _inflate(min(cands)) if cands else None

    @property
    def certified_norm(self) -> float | None:
        """The declared norm inflated by ``1 + NORM_RTOL`` (rounded up), or None: the norm bound a
        certificate must use for the rows :meth:`Domain.check` accepts."""
        return None if self.norm is None else _inflate(self.norm)

    def value_range(self) -> tuple[float, float] | None:
        """(inf, sup) of one entry, when entries are bounded.

        Returns:
            The declared ``(low, high)`` of an entry, or None when unbounded.
        """
        if self.values is not None:
            lo, hi = min(self.values), max(self.values)
            if self.lo is not None:
                lo = max(lo, self.lo)
            if self.hi is not None:
                hi = min(hi, self.hi)
            return lo, hi
        if self.lo is not None and self.hi is not None:
            return self.lo, self.hi
        return None

    def describe(self) -> str:
        """The bounds in the command line's words.

        Returns:
            E.g. ``X.min=-1 X.max=1`` (empty when nothing is declared).
        """
        parts = []
        if self.norm is not None:
            parts.append(f"{self.name}.norm={self.norm:g}")
        if self.lo is not None:
            parts.append(f"{self.name}.min={self.lo:g}")
        if self.hi is not None:
            parts.append(f"{self.name}.max={self.hi:g}")
        if self.values is not None:
            parts.append(f"{self.name}.values=" + _compact(self.values))
        return " ".join(parts)

    def to_dict(self) -> dict:
        """The declared bounds, JSON-ready.

        Returns:
            ``{"norm"|"min"|"max"|"values": ...}`` for each declared bound.
        """
        out: dict[str, Any] = {}
        if self.norm is not None:
            out["norm"] = self.norm
        if self.lo is not None:
            out["min"] = self.lo
        if self.hi is not None:
            out["max"] = self.hi
        if self.values is not None:
            out["values"] = list(self.values)
        return out


def _compact(vals: tuple) -> str:
    """Sorted values in the command line's words, runs of 3 or more consecutive integers as ``A..B``."""
    parts: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        if vals[i] == math.floor(vals[i]):
            while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
                j += 1
        parts.append(f"{vals[i]:g}..{vals[j]:g}" if j - i >= 2 else ",".join(f"{v:g}" for v in vals[i:j + 1]))
        i = j + 1
    return ",".join(parts)


def _num(name: str, text: Any) -> float:
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise DomainError(f"domain {name} = {text!r} is not a number; pass e.g. --domain {name}=1.0") from None
    if not math.isfinite(x):
        raise DomainError(f"domain {name} = {text!r} must be finite; declare a finite public bound")
    return x


#: the most values an integer range ``A..B`` may list (a wider range is a box: ``min``/``max``)
MAX_RANGE = 100_000


def _flat(raw: Any) -> list:
    """The items of a ``values`` spec, with ranges and nested sequences (``values(range(46))``) flattened."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        return [raw]
    if isinstance(raw, np.ndarray):
        return list(raw.ravel())
    return [v for item in raw for v in _flat(item)]


def _value_items(name: str, text: Any) -> list[float]:
    """One listed value, or the integers ``A, A+1, ..., B`` of a range ``A..B`` (both ends included)."""
    if isinstance(text, str) and ".." in text:
        ends = text.strip().split("..")
        lo, hi = (_num(name, ends[0]), _num(name, ends[1])) if len(ends) == 2 else (0.5, 0.5)
        if lo != math.floor(lo) or hi != math.floor(hi):
            raise DomainError(f"domain {name} range {text.strip()!r} must be A..B with integers A <= B (the integers "
                              f"A to B, both included), e.g. {name}=0..45")
        if not lo <= hi:
            raise DomainError(f"domain {name} range {text.strip()!r} is empty ({lo:g} > {hi:g}); write A..B with "
                              "A <= B")
        if hi - lo + 1 > MAX_RANGE:
            raise DomainError(f"domain {name} range {text.strip()!r} lists {hi - lo + 1:.0f} values (more than "
                              f"{MAX_RANGE}); declare a box instead: {name.rsplit('.', 1)[0]}.min={lo:g} "
                              f"{name.rsplit('.', 1)[0]}.max={hi:g}")
        return [float(v) for v in range(int(lo), int(hi) + 1)]
    return [_num(name, text)]


def _make(name: str, spec: Mapping[str, Any]) -> ArgDomain:
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise DomainError(f"domain key {name}.{unknown[0]} is unknown; use {name}.norm, {name}.min, "
                          f"{name}.max or {name}.values")
    norm = lo = hi = None
    values = None
    if spec.get("norm") is not None:
        norm = _num(f"{name}.norm", spec["norm"])
        if not norm > 0:
            raise DomainError(f"domain {name}.norm = {norm:g} must be > 0; declare a positive bound on the "
                              f"norm of each record of {name}")
    if spec.get("min") is not None:
        lo = _num(f"{name}.min", spec["min"])
    if spec.get("max") is not None:
        hi = _num(f"{name}.max", spec["max"])
    if (lo is None) != (hi is None):
        missing = "max" if hi is None else "min"
        raise DomainError(f"domain {name}.{missing} is missing; per-entry bounds need both {name}.min and "
                          f"{name}.max")
    if lo is not None and not lo < hi:
        raise DomainError(f"domain {name}.min = {lo:g} must be < {name}.max = {hi:g}; declare a non-empty "
                          "interval")
    if spec.get("values") is not None:
        raw = spec["values"]
        items = raw.split(",") if isinstance(raw, str) else list(_flat(raw))
        items = [t for t in items if not (isinstance(t, str) and t.strip() == "")]
        if not items:
            raise DomainError(f"domain {name}.values is empty; list the allowed values, e.g. {name}.values=0,1")
        vals = tuple(sorted({v for t in items for v in _value_items(f"{name}.values", t)}))
        values = vals
        if lo is not None and (vals[0] < lo or vals[-1] > hi):
            raise DomainError(f"domain {name}.values lie outside [{name}.min, {name}.max] = [{lo:g}, {hi:g}]; "
                              "make the declarations consistent")
    if norm is None and lo is None and values is None:
        raise DomainError(f"domain for {name} declares nothing; use {name}.norm, {name}.min/max or {name}.values")
    return ArgDomain(name=name, norm=norm, lo=lo, hi=hi, values=values)


@dataclass(frozen=True)
class Domain:
    """Public bounds on one record, per model argument.

    ``Domain(X=norm_bound(1.0), y=values(0, 1))`` (keyword per data argument), ``Domain({"X": {"norm":
    1.0}, "y": {"values": [0, 1]}})`` or ``Domain.parse(["X.norm=1.0", "y.values=0,1"])``.

    Args:
        spec: argument name -> ``{"norm"|"min"|"max"|"values": ...}`` (or an :class:`ArgDomain`).
        **args: the same, one keyword per data argument (merged over ``spec``).

    Raises:
        DomainError: if a bound is malformed (not a number, ``min > max``, a non-positive norm, an unknown
            key...), naming the argument and the bound.

    Examples:
        >>> Domain(X=norm_bound(1.0), y=values(0, 1)).describe()
        'X.norm=1 y.values=0,1'
        >>> Domain(X=box(-1, 1)).get("X").row_norm_bound(4) > 2.0      # sqrt(4) * 1, inflated (float data)
        True
    """

    spec: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, spec: Mapping[str, Any] | None = None, /, **args: Any):
        object.__setattr__(self, "spec", {**dict(spec or {}), **args})
        self.__post_init__()

    def __post_init__(self):
        args: dict[str, ArgDomain] = {}
        for name, s in dict(self.spec).items():
            if isinstance(s, ArgDomain):
                args[name] = s
                continue
            if not isinstance(s, Mapping):
                raise DomainError(f"domain for {name} = {s!r} must be a mapping such as {{'norm': 1.0}}")
            args[str(name)] = _make(str(name), s)
        object.__setattr__(self, "_args", args)

    @staticmethod
    def parse(entries: Iterable[str] | str | None) -> "Domain":
        """A domain from the command line's words, e.g. ``["X.norm=1", "y.values=0,1"]``.

        Args:
            entries: ``ARG.KEY=VALUE`` words (KEY one of norm, min, max, values), one word, or None (empty).

        Returns:
            The :class:`Domain`.

        Raises:
            DomainError: if an entry is not ``ARG.KEY=VALUE``, its key is unknown, it is declared twice, or
                its value is invalid.

        Examples:
            >>> Domain.parse(["X.norm=1", "y.values=0,1"]).describe()
            'X.norm=1 y.values=0,1'
        """
        if entries is None:
            return Domain({})
        if isinstance(entries, str):
            entries = [entries]
        spec: dict[str, dict[str, Any]] = {}
        for e in entries:
            text = str(e).strip()
            if "=" not in text or "." not in text.split("=", 1)[0]:
                raise DomainError(f"domain entry {text!r} is not ARG.KEY=VALUE; use e.g. X.norm=1.0, X.min=-1, "
                                  "X.max=1 or y.values=0,1")
            lhs, rhs = text.split("=", 1)
            arg, key = lhs.rsplit(".", 1)
            arg, key = arg.strip(), key.strip()
            if not arg:
                raise DomainError(f"domain entry {text!r} names no argument; use e.g. X.norm=1.0")
            if key not in KEYS:
                raise DomainError(f"domain key {arg}.{key} is unknown; use {arg}.norm, {arg}.min, {arg}.max or "
                                  f"{arg}.values")
            if key in spec.get(arg, {}):
                raise DomainError(f"domain {arg}.{key} is declared twice; declare it once")
            spec.setdefault(arg, {})[key] = rhs.strip()
        return Domain(spec)

    # -- queries -------------------------------------------------------------
    @property
    def args(self) -> dict[str, ArgDomain]:
        """The bounds of each data argument, by name."""
        return dict(self._args)  # type: ignore[attr-defined]

    def __contains__(self, name: str) -> bool:
        return name in self._args  # type: ignore[attr-defined]

    def get(self, name: str) -> ArgDomain | None:
        """The bounds of data argument ``name`` (None when undeclared)."""
        return self._args.get(name)  # type: ignore[attr-defined]

    def __bool__(self) -> bool:
        return bool(self._args)  # type: ignore[attr-defined]

    def describe(self) -> str:
        """The domain in the command line's words (``X.norm=1 y.values=0,1``)."""
        return " ".join(a.describe() for a in self._args.values())  # type: ignore[attr-defined]

    def to_dict(self) -> dict:
        """``{argument: {"norm"|"min"|"max"|"values": ...}}``, JSON-ready (what a plan stores)."""
        return {k: a.to_dict() for k, a in self._args.items()}  # type: ignore[attr-defined]

    # -- data check ------------------------------------------------------------
    def clip(self, data: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The data clipped into the domain, record by record (norm: the row rescaled onto the ball; min/max:
        entries clamped).  Clipping is a per-record map, so a chain run on the clipped data keeps its
        certificate; it changes the data, so the estimate is of the clipped data's posterior.  What
        ``PrivateMCMC.run(..., clip_to_domain=True)`` and ``bayesdp certify --clip-to-domain`` do.

        Args:
            data: argument name -> array with one record per row (arguments not declared are returned as
                they are).

        Returns:
            the data with every declared argument inside its bounds.

        Raises:
            DomainError: a value outside a declared finite set of values (it cannot be clipped to).

        Examples:
            >>> import numpy as np
            >>> clipped = Domain(X=norm_bound(1.0)).clip({"X": np.array([[3.0, 4.0], [0.3, 0.4]])})
            >>> np.round(clipped["X"], 12).tolist(), bool(np.linalg.norm(clipped["X"][0]) <= 1.0)
            ([[0.6, 0.8], [0.3, 0.4]], True)
        """
        return self.check(data, clip=True)[0]

    def check(self, data: Mapping[str, np.ndarray], clip: bool = False) -> tuple[dict[str, np.ndarray], dict]:
        """Verify every record lies in the domain (vectorised, O(records)).

        Returns ``(data, clipped)``: the data (clipped copies when ``clip``) and, per
        argument, how many records clipping changed.  Raises :class:`DomainError`
        naming the argument, the first offending record and the bound otherwise.
        A finite set of values cannot be clipped to: such data is always an error.

        Args:
            data: argument name -> array with one record per row (arguments not declared are not checked).
            clip: clip records into the declared bounds (norm: rescale the row; min/max: clamp entries)
                instead of refusing them.

        Returns:
            ``(data, clipped)``: the (possibly clipped) arrays and argument -> number of records changed.

        Raises:
            DomainError: a record lies outside the domain (and ``clip`` is False, or the bound is a set of
                values), naming the argument, the record and the bound.

        Examples:
            >>> import numpy as np
            >>> data, clipped = Domain(X=box(-1, 1)).check({"X": np.array([[0.5, 2.0], [0.1, 0.2]])}, clip=True)
            >>> data["X"].tolist(), clipped
            ([[0.5, 1.0], [0.1, 0.2]], {'X': 1})
        """
        out = dict(data)
        record: dict[str, int] = {}
        for name, dom in self._args.items():  # type: ignore[attr-defined]
            if name not in data:
                continue
            src = np.asarray(data[name])
            if not clip:
                # checked CHECK_ROWS records at a time, each block in float64 as the whole was: the same verdict and
                # the same first offending record, without a float64 copy of the whole array (twice a float32 data
                # set: the command line's peak memory, issue 24)
                rows_of = src.reshape(src.shape[0], -1)
                for r0 in range(0, rows_of.shape[0], CHECK_ROWS):
                    _check_records(name, dom, rows_of[r0:r0 + CHECK_ROWS], src.dtype, r0, clip=False)
                continue
            changed, flat = _check_records(name, dom, src, src.dtype, 0, clip=True)
            if changed.any():
                out[name] = flat.reshape(src.shape)
                record[name] = int(changed.sum())
        return out, record


#: records checked at a time by :meth:`Domain.check` without clipping (a float64 block of 2 MB at 128 features)
CHECK_ROWS = 2048


def _check_records(name: str, dom, arr: np.ndarray, dtype, offset: int, clip: bool) -> tuple[np.ndarray, np.ndarray]:
    """Check the records ``arr`` of argument ``name`` (record ``offset`` is its first row) against ``dom``, in
    float64: ``(changed, flat)``, the rows clipping changed and the rows as a float64 (records, entries) array (with
    ``clip``: clipped into the bounds); an offending record raises :class:`DomainError` naming it (without ``clip``,
    or for a set of values)."""
    floating = np.issubdtype(np.dtype(dtype), np.floating)
    a = np.asarray(arr, dtype=np.float64)
    m = a.shape[0]
    flat = a.reshape(m, -1)
    changed = np.zeros(m, dtype=bool)
    if dom.values is not None:
        ok = np.isin(flat, np.asarray(dom.values)).all(axis=1)
        if not ok.all():
            i = int(np.argmin(ok))
            bad = flat[i][~np.isin(flat[i], np.asarray(dom.values))][0]
            raise DomainError(f"data {name}[{offset + i}] contains {bad:g}, not in the declared {name}.values = "
                              f"{{{', '.join(f'{v:g}' for v in dom.values)}}}; fix the data or declare "
                              "the values it can take")
    if dom.lo is not None:
        bad = (flat < dom.lo) | (flat > dom.hi)
        rows = bad.any(axis=1)
        if rows.any():
            if not clip:
                i = int(np.argmax(rows))
                v = flat[i][bad[i]][0]
                raise DomainError(f"data {name}[{offset + i}] has entry {v:g} outside the declared [{name}.min, "
                                  f"{name}.max] = [{dom.lo:g}, {dom.hi:g}]; fix the data or widen the "
                                  "public bounds" + CLIP_ADVICE.get())
            flat = np.clip(flat, dom.lo, dom.hi)
            changed |= rows
    if dom.norm is not None:
        sq = np.einsum("ij,ij->i", flat, flat)
        # floating rows normalised to the bound are accepted up to R (1 + NORM_ACCEPT_RTOL) (docstring)
        limit = dom.norm * (1.0 + NORM_ACCEPT_RTOL) if floating else dom.norm
        rows = sq > limit * limit
        if rows.any():
            if not clip:
                i = int(np.argmax(rows))
                raise DomainError(f"data {name}[{offset + i}] has norm {math.sqrt(sq[i]):.9g} > declared "
                                  f"{name}.norm = {dom.norm:g} (tolerance {NORM_ACCEPT_RTOL:.2g} relative for "
                                  "floating-point rows); fix the data or declare a larger public bound"
                                  + CLIP_ADVICE.get())
            scale = np.ones(m)
            scale[rows] = dom.norm / np.sqrt(sq[rows])
            flat = flat * scale[:, None]
            # rounding can leave a norm a few ulps above the bound: shrink until it holds
            for _ in range(8):
                sq = np.einsum("ij,ij->i", flat, flat)
                over = sq > dom.norm * dom.norm
                if not over.any():
                    break
                flat[over] *= (1.0 - 1e-15)
            changed |= rows
    return changed, flat


def norm_bound(radius: float) -> dict:
    """Each record of the argument (a row) has Euclidean norm <= ``radius``: ``Domain(X=norm_bound(1.0))``.

    Args:
        radius: the bound on each row's norm (checked by :class:`Domain`).

    Returns:
        The spec ``{"norm": radius}``.

    Examples:
        >>> Domain(X=norm_bound(1.0)).describe()
        'X.norm=1'
    """
    return {"norm": radius}


def box(low: float, high: float) -> dict:
    """Every entry of each record lies in [``low``, ``high``]: ``Domain(X=box(-1, 1))``.

    Args:
        low: the lower bound of every entry.
        high: the upper bound of every entry.

    Returns:
        The spec ``{"min": low, "max": high}``.

    Examples:
        >>> Domain(X=box(-1, 1)).describe()
        'X.min=-1 X.max=1'
    """
    return {"min": low, "max": high}


def values(*allowed: Any) -> dict:
    """Every entry is one of ``allowed``: ``Domain(y=values(0, 1))``; a ``range`` (or any sequence) is its values:
    ``Domain(hits=values(range(46)))`` is the integers 0 to 45.

    Args:
        *allowed: the values an entry may take (numbers, ranges or sequences of numbers).

    Returns:
        The spec ``{"values": [...]}``.

    Examples:
        >>> Domain(y=values(0, 1)).to_dict()
        {'y': {'values': [0.0, 1.0]}}
        >>> Domain(hits=values(range(46))).get("hits").value_range()
        (0.0, 45.0)
    """
    return {"values": [v for a in allowed for v in _flat(a)]}
