"""Privacy budget ledger: an append-only, hash-chained journal per dataset (docs/ledger.md).

File format (``format = "bayesdp-ledger-journal"``, ``version = 2``): one JSON object per line,
ASCII, ending in ``,"sum":"<sha256 hex>"}``, where ``sum`` is the SHA-256 of the line's bytes
without that suffix (with ``}`` put back), and every line carries ``"prev"``, the ``sum`` of the
line before it (the header's ``prev`` is 64 zeros) and ``"seq"``, its position.  Line 0 is the
header (budget as exact decimal strings, dataset, creation time); the others are events:

``reserve``  a new entry: its charge (``epsilon``, ``delta``: decimal strings), what it releases
             (``mechanism`` label, ``source``, ``what``), its privacy curve and its DP event
             (``dp_event``: ``{"type": "laplace", "l1_sensitivity", "grid_rounding", "noise_scale",
             "delta"}`` or ``{"type": "epsilon_delta", "epsilon", "delta"}``) -- written BEFORE any
             noise is drawn; until a later line says otherwise the entry is ``pending`` and charged;
``commit``   the entry's released values (status ``committed``);
``abort``    the release failed after noise was drawn (status ``aborted``, still charged);
``cancel``   the release ended before any noise was drawn (refunded; only directly after its reserve);
``resolve``  a pending entry left by a crash is accepted as spent (``bayesdp ledger resolve``);
``torn``     acknowledges an incomplete line left by a writer killed inside ``write()``.

Every line also carries ``state``, the running totals after it (charged entries, exact sums of
the charges, and the sums the curve composition needs), so that a release reads the header and
the last lines only: its cost does not grow with the number of past entries.  Writers append one
line with one ``write()`` on an ``O_APPEND`` descriptor and ``fsync``; the file is never rewritten
(except once, atomically, to migrate a version-1 file).

Checks (docs/ledger.md §3): every line's checksum, the chain (``prev``, ``seq``), each state
transition, each entry's self-consistency (its charge is at least what its curve and its noise
scale and sensitivity give) and each event's legality (commit only of a pending entry, ...).
``bayesdp ledger show`` / :meth:`Ledger.verify` replay the whole journal; a release replays the
header and the last :data:`TAIL_BYTES` of the journal.  Any failure is refused as tampering.
This is tamper-EVIDENCE against edits, not a signature: anyone who rewrites the chain
consistently from some line to the end (or drops whole lines at the end) is detected only
against an anchor kept elsewhere (the ``head`` printed by every release and by ``show``,
checked by ``bayesdp ledger verify FILE --head SHA``).

Accounting: budgets and charges are decimals, sums exact (``fractions``/``decimal``, never binary
doubles): a budget of 1.0 admits exactly ten releases of 0.1.  A user's float epsilon is charged
as its shortest decimal (0.1 -> "0.1") and the noise of a release is calibrated to
:attr:`Reservation.noise_epsilon`, the largest double not above the charge.  Composition rules as
before (docs/release.md §5): basic composition, or curve composition when every entry has an
RDP-capable curve; a release is admitted iff the ledger including it fits by one of them.

Concurrency: a :mod:`filelock` lock on ``FILE.lock`` is held from the budget check to the end of
the reservation (noise drawn inside), so a pending entry seen by a writer holding the lock
belongs to a dead process.  Version-1 files (one JSON document) are read and checked as before
and converted to a journal on the first write.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal
import hashlib
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import filelock

from ..curves import GDP, RDP, ApproxDP, PrivacyCurve, compose
from ..errors import AssumptionError, BayesDPError, BudgetError

__all__ = ["Ledger", "Reservation", "to_decimal", "decimal_at_least", "float_at_most", "noise_epsilon", "noise_delta",
           "laplace_event", "discrete_gaussian_event"]

FORMAT = "bayesdp-ledger"             # version 1: one JSON document (read, migrated on first write)
VERSION = 1
JOURNAL_FORMAT = "bayesdp-ledger-journal"
JOURNAL_VERSION = 2
STATUSES = ("pending", "committed", "aborted")          # version-1 statuses
LOCK_TIMEOUT_S = 120.0
#: bytes at the end of the journal a writer re-verifies before appending (plus the header).
TAIL_BYTES = 256 * 1024
ZERO_HASH = "0" * 64
_SUFFIX_LEN = len(',"sum":"') + 64 + len('"}')
EVENTS = ("header", "reserve", "commit", "abort", "cancel", "resolve", "torn")

# exact decimal arithmetic: any rounding raises (the precision covers every double exactly)
_CTX = decimal.Context(prec=5000, Emin=-999999, Emax=999999,
                       traps=[decimal.Inexact, decimal.Rounded, decimal.InvalidOperation, decimal.DivisionByZero,
                              decimal.Overflow])
_D0 = Decimal(0)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------
# decimals: charges, budgets, the noise epsilon
# ---------------------------------------------------------------------------


def to_decimal(value: Any, name: str = "epsilon") -> Decimal:
    """The decimal a user means by ``value``: a float's shortest round-trip decimal (``0.1 -> 0.1``),
    an int, a decimal string or :class:`~decimal.Decimal` as written.  Refuses NaN, inf and bools.

    Args:
        value: the number.
        name: its name in a refusal.

    Returns:
        The exact decimal.

    Raises:
        BudgetError: not a finite number.

    Examples:
        >>> to_decimal(0.1), to_decimal("1e-5", "delta")
        (Decimal('0.1'), Decimal('0.00001'))
        >>> to_decimal(float("nan"))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: epsilon = nan must be finite; pass a finite decimal number
    """
    if isinstance(value, bool):
        raise BudgetError(f"{name} = {value!r} is not a number; pass a decimal number")
    if isinstance(value, Decimal):
        d = value
    elif isinstance(value, int):
        d = Decimal(value)
    elif isinstance(value, float):
        d = Decimal(repr(float(value))) if math.isfinite(value) else Decimal("NaN")
    elif isinstance(value, str):
        try:
            d = Decimal(value.strip())
        except decimal.InvalidOperation:
            raise BudgetError(f"{name} = {value!r} is not a decimal number; pass e.g. 0.1") from None
    else:
        try:
            d = Decimal(repr(float(value)))
        except (TypeError, ValueError):
            raise BudgetError(f"{name} = {value!r} is not a number; pass a decimal number") from None
    if not d.is_finite():
        raise BudgetError(f"{name} = {value!r} must be finite; pass a finite decimal number")
    return d


def decimal_at_least(x: float) -> Decimal:
    """The shortest decimal of the double ``x`` if it is >= ``x`` exactly, else the smallest
    17-significant-digit decimal above it (for deltas computed in floating point).

    Args:
        x: a double.

    Returns:
        A decimal ``>= x`` exactly.

    Examples:
        The double 0.1 is 0.1000000000000000055..., above the decimal 0.1:

        >>> decimal_at_least(0.1), decimal_at_least(0.5)
        (Decimal('0.10000000000000001'), Decimal('0.5'))
    """
    d = Decimal(repr(float(x)))
    exact = Decimal(float(x))
    if d >= exact:
        return d
    return decimal.Context(prec=17, rounding=decimal.ROUND_CEILING).plus(exact)


def float_at_most(d: Decimal) -> float:
    """The largest double <= ``d`` (round toward zero for d >= 0).

    Args:
        d: an exact decimal.

    Returns:
        The largest double not above ``d``.

    Examples:
        >>> from decimal import Decimal
        >>> float_at_most(Decimal("0.1")), float_at_most(Decimal("0.5"))
        (0.09999999999999999, 0.5)
    """
    f = float(d)
    if Fraction(f) > Fraction(d):
        f = math.nextafter(f, -math.inf)
    return f


def float_at_least(d: Decimal | Fraction) -> float:
    """The smallest double >= ``d``."""
    f = float(d)
    if Fraction(f) < Fraction(d):
        f = math.nextafter(f, math.inf)
    return f


def noise_epsilon(epsilon: Any) -> float:
    """The epsilon to calibrate noise to for a release charged ``epsilon``: the largest double not
    above its decimal (``noise_epsilon(0.1) = 0.09999999999999999167``, since the double 0.1 is
    0.1000000000000000055...).  The noise then never costs more than the ledger records.

    Args:
        epsilon: the charged epsilon (a float is taken at its shortest decimal).

    Returns:
        The largest double not above the charge.

    Raises:
        BudgetError: not a finite number.

    Examples:
        >>> noise_epsilon(0.1), noise_epsilon("0.25")
        (0.09999999999999999, 0.25)
    """
    return float_at_most(to_decimal(epsilon))


def noise_delta(delta: Any) -> float:
    """The delta to calibrate Gaussian noise to for a release charged ``delta``: the largest double not above
    its decimal (as :func:`noise_epsilon`), so that the conversion never uses more delta than is recorded.

    Args:
        delta: the charged delta.

    Returns:
        The largest double not above the charge.

    Raises:
        BudgetError: not a finite number.

    Examples:
        >>> noise_delta(1e-5), noise_delta(0)
        (9.999999999999999e-06, 0.0)
    """
    return float_at_most(to_decimal(delta, "delta"))


def _dstr(d: Decimal) -> str:
    """Canonical string of an exact decimal (no exponent games: ``str`` of the normalised value)."""
    if d == 0:
        return "0"
    return str(d)


def _dec(x: Any, where: str, path: Path) -> Decimal:
    if not isinstance(x, str):
        raise _tamper(path, f"{where} is not a decimal string")
    try:
        d = Decimal(x)
    except decimal.InvalidOperation:
        raise _tamper(path, f"{where} = {x!r} is not a decimal") from None
    if not d.is_finite():
        raise _tamper(path, f"{where} = {x!r} is not finite")
    return d


# ---------------------------------------------------------------------------
# curves and DP events <-> JSON
# ---------------------------------------------------------------------------


def curve_to_json(curve: PrivacyCurve | None) -> dict | None:
    """Serialisable form of the curves the ledger can compose; ``None`` for others."""
    if isinstance(curve, ApproxDP):
        return {"kind": "approx", "epsilon": curve.eps0, "delta": curve.delta0}
    if isinstance(curve, GDP):
        return {"kind": "gdp", "mu": curve.mu}
    if isinstance(curve, RDP) and curve.is_linear:
        return {"kind": "rdp_linear", "kappa": curve.kappa}
    return None


def curve_from_json(d: dict | None) -> PrivacyCurve | None:
    if d is None:
        return None
    kind = d.get("kind")
    if kind == "approx":
        return ApproxDP(float(d["epsilon"]), float(d["delta"]))
    if kind == "gdp":
        return GDP(float(d["mu"]))
    if kind == "rdp_linear":
        return RDP.linear(float(d["kappa"]))
    raise ValueError(f"unknown curve kind {kind!r}")


def laplace_event(sensitivity: float, grid_rounding: float, noise_epsilon: float, delta: float = 0.0,
                  coords: int | None = None, grid: float | None = None) -> dict:
    """DP event of :func:`bayesdp.publish.noise.laplace_release`: Laplace noise of scale
    ``(sensitivity + grid_rounding) / noise_epsilon`` (rounded up to a double, as noise.py reports
    it) on a statistic of proven L1 sensitivity ``sensitivity``; ``grid_rounding`` (= k r) is the
    charged grid rounding; ``delta`` the sensitivity route's delta (004 Proposition 3.10), 0 for
    the coupling route.  Its epsilon is ``(sensitivity + grid_rounding) / noise_scale`` exactly.

    Args:
        sensitivity: the proven L1 sensitivity (> 0).
        grid_rounding: the charged grid rounding (>= 0).
        noise_epsilon: the epsilon the noise is calibrated to (> 0).
        delta: the sensitivity route's delta.
        coords: the number of released coordinates (with ``grid``: lets the accountant use the discrete
            mechanism's exact PLD for one coordinate).
        grid: the grid spacing r.

    Returns:
        The event dict.

    Raises:
        BudgetError: a non-finite or out-of-range parameter.

    Examples:
        >>> laplace_event(1.0, 0.0, 0.5)          # scale (1 + 0) / 0.5
        {'type': 'laplace', 'l1_sensitivity': 1.0, 'grid_rounding': 0.0, 'noise_scale': 2.0, 'delta': 0.0}
    """
    s, g, e = float(sensitivity), float(grid_rounding), float(noise_epsilon)
    if not (math.isfinite(s) and s > 0 and math.isfinite(g) and g >= 0 and math.isfinite(e) and e > 0):
        raise BudgetError(f"laplace event: sensitivity = {s!r}, grid rounding = {g!r}, epsilon = {e!r} must be "
                          "finite with sensitivity > 0, grid rounding >= 0 and epsilon > 0")
    scale = float_at_least((Fraction(s) + Fraction(g)) / Fraction(e))
    ev = {"type": "laplace", "l1_sensitivity": s, "grid_rounding": g, "noise_scale": scale, "delta": float(delta)}
    if coords is not None and grid is not None:   # the discrete mechanism's own PLD (accountant.py) needs them
        ev["coords"], ev["grid"] = int(coords), float(grid)
    return ev


def discrete_gaussian_event(l2_sensitivity: float, grid_rounding: float, sigma: float, rho: float,
                            conversion_delta: float, delta: float = 0.0, coords: int | None = None,
                            grid: float | None = None) -> dict:
    """DP event of :func:`bayesdp.publish.noise.gaussian_release`: the discrete Gaussian of scale ``sigma`` (value
    units) on a statistic of proven L2 sensitivity ``l2_sensitivity``, with the charged grid rounding
    ``grid_rounding >= sqrt(k) r``; it is ``rho``-zCDP with ``rho >= (l2_sensitivity + grid_rounding)^2 / (2
    sigma^2)`` (CKS20 Theorem 14), and is charged ``RDP.linear(rho).epsilon(conversion_delta)`` at delta
    ``conversion_delta + delta`` (``delta``: the sensitivity route's own delta, 0 for the coupling route).

    Args:
        l2_sensitivity: the proven L2 sensitivity (> 0).
        grid_rounding: the charged grid rounding (>= 0).
        sigma: the noise scale in value units (> 0).
        rho: the zCDP parameter charged, at least ``(l2_sensitivity + grid_rounding)^2 / (2 sigma^2)``.
        conversion_delta: the delta of the conversion to (epsilon, delta), in (0, 1).
        delta: the sensitivity route's own delta.
        coords: the number of released coordinates.
        grid: the grid spacing r.

    Returns:
        The event dict.

    Raises:
        BudgetError: a non-finite or out-of-range parameter, or ``rho`` below what the noise gives.

    Examples:
        >>> ev = discrete_gaussian_event(1.0, 0.0, 2.0, 0.125, 1e-6)     # rho = 1^2 / (2 * 2^2)
        >>> ev["rho"], ev["conversion_delta"]
        (0.125, 1e-06)
        >>> discrete_gaussian_event(1.0, 0.0, 2.0, 0.1, 1e-6)
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: discrete Gaussian event: rho = 0.1 is below (sensitivity + rounding)^2 / (2 sigma^2)
    """
    s, g, sg, r, cd = (float(v) for v in (l2_sensitivity, grid_rounding, sigma, rho, conversion_delta))
    if not (all(math.isfinite(v) for v in (s, g, sg, r, cd)) and s > 0 and g >= 0 and sg > 0 and r > 0
            and 0 < cd < 1):
        raise BudgetError(f"discrete Gaussian event: sensitivity = {s!r}, grid rounding = {g!r}, sigma = {sg!r}, "
                          f"rho = {r!r}, delta = {cd!r} must be finite with sensitivity, sigma, rho > 0 and delta in "
                          "(0, 1)")
    if _dg_rho(s, g, sg) > Fraction(r):
        raise BudgetError(f"discrete Gaussian event: rho = {r!r} is below (sensitivity + rounding)^2 / (2 sigma^2)")
    ev = {"type": "discrete_gaussian", "l2_sensitivity": s, "grid_rounding": g, "sigma": sg, "rho": r,
          "conversion_delta": cd, "delta": float(delta)}
    if coords is not None and grid is not None:
        ev["coords"], ev["grid"] = int(coords), float(grid)
    return ev


def _dg_rho(s: float, g: float, sigma: float) -> Fraction:
    """``(s + g)^2 / (2 sigma^2)`` exactly."""
    e = Fraction(s) + Fraction(g)
    return e * e / (2 * Fraction(sigma) ** 2)


def _dg_problem(eps: Decimal, delta: Decimal, ev: dict, released: dict | None) -> str | None:
    """Why an entry charged (eps, delta) contradicts its discrete-Gaussian event (None when consistent): its
    rho must cover its noise exactly, its epsilon at the conversion delta must not exceed the charge, and the
    charged delta must cover the conversion delta plus the route's own delta (exact binary values)."""
    try:
        s, g, sg, r, cd, d = (ev[k] for k in ("l2_sensitivity", "grid_rounding", "sigma", "rho", "conversion_delta",
                                              "delta"))
        if not all(_finite(v) for v in (s, g, sg, r, cd, d)) or not (s > 0 and g >= 0 and sg > 0 and r > 0
                                                                      and 0 < cd < 1 and 0 <= d <= 1):
            return "its dp_event is malformed"
        if _dg_rho(s, g, sg) > Fraction(r):
            return f"its dp_event's rho {r!r} is below what its noise gives ((sensitivity + rounding)^2 / (2 sigma^2))"
        if Decimal(cd) + Decimal(d) > delta:
            return (f"its dp_event needs delta {float(Decimal(cd) + Decimal(d)):.6g} (conversion + route) but it is "
                    f"charged {_dstr(delta)}")
        ce = RDP.linear(r).epsilon(cd)
    except (KeyError, TypeError, ValueError, BayesDPError):
        return "its dp_event is malformed"
    if not ce <= float(eps) * (1 + 1e-9):
        return f"its dp_event gives epsilon {ce:.6g} at delta {cd:.6g} but it is charged {_dstr(eps)}"
    if released and "noise_scale" in released:
        b = released["noise_scale"]
        if not _finite(b) or Fraction(b) < Fraction(sg):
            return f"its released noise scale {b!r} is below its dp_event's sigma {sg!r}"
    return None


def _event_cost(ev: dict) -> tuple[Decimal, Decimal, Decimal | None]:
    """(epsilon numerator, delta, epsilon denominator or None) a DP event costs, exactly: its epsilon
    is ``num / den`` (Laplace: ``(l1_sensitivity + grid_rounding) / noise_scale``).  Raises
    KeyError/TypeError/ValueError if malformed."""
    t = ev["type"]
    if t == "laplace":
        s, g, b, d = (ev[k] for k in ("l1_sensitivity", "grid_rounding", "noise_scale", "delta"))
        for v in (s, g, b, d):
            if not _finite(v):
                raise ValueError("non-finite laplace parameter")
        if not (s > 0 and g >= 0 and b > 0 and 0 <= d <= 1):
            raise ValueError("laplace parameters out of range")
        return _CTX.add(Decimal(s), Decimal(g)), Decimal(d), Decimal(b)
    if t == "epsilon_delta":
        e, d = Decimal(ev["epsilon"]), Decimal(ev["delta"])
        if not (e.is_finite() and d.is_finite()):
            raise ValueError("non-finite epsilon_delta")
        return e, d, None
    raise ValueError(f"unknown dp_event type {t!r}")


def _exceeds(num: Decimal, den: Decimal | None, eps: Decimal) -> bool:
    """num / den > eps, exactly."""
    return num > eps if den is None else num > _CTX.multiply(eps, den)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _consistency_problem(eps: Decimal, delta: Decimal, curve: dict | None, dp_event: dict | None,
                         released: dict | None = None) -> str | None:
    """Why an entry charged (eps, delta) contradicts its own curve, DP event or released noise scale
    (None when consistent).  The charge must be at least what each of them says (exact comparisons)."""
    if isinstance(dp_event, dict) and dp_event.get("type") == "discrete_gaussian":
        why = _dg_problem(eps, delta, dp_event, released)
        if why:
            return why
        dp_event = None
    if isinstance(dp_event, dict) and dp_event.get("type") in ("gdp", "gaussian", "laplace_continuous"):
        # events charged through the accountant interface (Ledger.spend): their curve at the charged delta
        try:
            t = dp_event["type"]
            if t == "laplace_continuous":
                nm = float(dp_event["noise_multiplier"])
                ce, cd = (1.0 / nm if nm > 0 else math.inf), 0.0
            else:
                mu = float(dp_event["mu"]) if t == "gdp" else (float(dp_event["l2_sensitivity"])
                                                                / float(dp_event["sigma"]))
                if not (math.isfinite(mu) and mu > 0):
                    return "its dp_event is malformed"
                from ..curves import GDP

                ce, cd = (GDP(mu).epsilon(float(delta)) if delta > 0 else math.inf), 0.0
        except (KeyError, TypeError, ValueError, ZeroDivisionError, BayesDPError):
            return "its dp_event is malformed"
        if not ce <= float(eps) * (1 + 1e-9):
            return f"its dp_event gives epsilon {ce:.6g} at delta {_dstr(delta)} but it is charged {_dstr(eps)}"
        dp_event = None
    if dp_event is not None:
        try:
            num, ed, den = _event_cost(dp_event)
        except (KeyError, TypeError, ValueError, decimal.InvalidOperation):
            return "its dp_event is malformed"
        if _exceeds(num, den, eps):
            return (f"its noise gives epsilon {float(num) / float(den or 1):.17g} (sensitivity / noise scale) but it "
                    f"is charged {_dstr(eps)}")
        if ed > delta:
            return f"its dp_event has delta {float(ed):.6g} but it is charged {_dstr(delta)}"
        if released and den is not None and "noise_scale" in released:
            b = released["noise_scale"]
            if not _finite(b) or b <= 0:
                return "its released noise_scale is not a positive number"
            if _exceeds(num, Decimal(b), eps):
                return (f"its released noise scale {b!r} gives epsilon {float(num) / b:.17g} but it is charged "
                        f"{_dstr(eps)}")
    if curve is not None:
        kind = curve.get("kind") if isinstance(curve, dict) else None
        try:
            if kind == "approx":
                ce, cd = float(curve["epsilon"]), float(curve["delta"])
                if not (math.isfinite(ce) and math.isfinite(cd)):
                    return "its curve is malformed"
                # the curve holds the user's double; its shortest decimal is what is charged
                if Decimal(repr(ce)) > eps or Decimal(repr(cd)) > delta:
                    return f"its curve says ({ce!r}, {cd!r})-DP but it is charged ({_dstr(eps)}, {_dstr(delta)})"
                return None
            c = curve_from_json(curve)
        except (ValueError, KeyError, TypeError, BayesDPError):
            return "its curve is malformed"
        try:
            ce = c.epsilon(float(delta)) if delta > 0 else math.inf
        except AssumptionError:
            ce = math.inf
        if not ce <= float(eps) * (1 + 1e-9):   # numerical conversion of the curve, checked loosely
            return f"its curve gives epsilon {ce:.6g} at delta {_dstr(delta)} but it is charged {_dstr(eps)}"
    return None


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def _bad(path: Path, what: str) -> BudgetError:
    return BudgetError(f"ledger {path}: {what}; the file is corrupt or not a bayesdp ledger (it was left unchanged)")


def _tamper(path: Path, what: str) -> BudgetError:
    return BudgetError(f"ledger {path}: {what}; the journal was edited, reordered, truncated or damaged "
                       "(tamper check failed; it was left unchanged): restore it from a copy")


# ---------------------------------------------------------------------------
# running state (one per line)
# ---------------------------------------------------------------------------


_DECIMAL_KEYS = ("epsilon", "delta", "pure", "mu2", "kappa")


def _state0() -> dict:
    return {"last_id": 0, "charged": 0, "epsilon": "0", "delta": "0", "no_rdp": 0, "non_gdp": 0,
            "pure": "0", "mu2": "0", "kappa": "0"}


def _curve_terms(curve: dict | None, eps: Decimal) -> tuple[bool, bool, Decimal, Decimal, Decimal]:
    """(has an RDP curve, is GDP, pure epsilon, mu^2, kappa) of one entry's curve, exactly.  A pure-DP
    entry counts with its charged epsilon (at least its curve's and its noise's)."""
    if curve is None:
        return False, False, _D0, _D0, _D0
    kind = curve.get("kind")
    if kind == "gdp":
        mu = Decimal(float(curve["mu"]))
        return True, True, _D0, _CTX.multiply(mu, mu), _D0
    if kind == "rdp_linear":
        return True, False, _D0, _D0, Decimal(float(curve["kappa"]))
    if kind == "approx" and float(curve["delta"]) == 0.0:
        return True, False, eps, _D0, _D0
    return False, False, _D0, _D0, _D0


def _charge(state: dict, eps: Decimal, delta: Decimal, curve: dict | None, sign: int = 1,
            new_id: int | None = None) -> dict:
    """State after adding (sign=1) or removing (sign=-1) one entry's charge."""
    has_rdp, is_gdp, pure, mu2, kappa = _curve_terms(curve, eps)
    op = _CTX.add if sign > 0 else _CTX.subtract
    s = dict(state)
    s["charged"] = state["charged"] + sign
    s["epsilon"] = _dstr(op(Decimal(state["epsilon"]), eps))
    s["delta"] = _dstr(op(Decimal(state["delta"]), delta))
    s["no_rdp"] = state["no_rdp"] + (0 if has_rdp else sign)
    s["non_gdp"] = state["non_gdp"] + (0 if is_gdp else sign)
    s["pure"] = _dstr(op(Decimal(state["pure"]), pure))
    s["mu2"] = _dstr(op(Decimal(state["mu2"]), mu2))
    s["kappa"] = _dstr(op(Decimal(state["kappa"]), kappa))
    if new_id is not None:
        s["last_id"] = new_id
    return s


@dataclass(frozen=True)
class Spent:
    basic_epsilon: Decimal
    basic_delta: Decimal
    curve_epsilon: float | None   # composed curve converted at the budget delta (None: not available)
    fits_basic: bool
    fits_curve: bool

    @property
    def fits(self) -> bool:
        """Whether the charges fit the budget by basic or by curve composition."""
        return self.fits_basic or self.fits_curve


def _account(state: dict, budget_epsilon: Decimal, budget_delta: Decimal) -> Spent:
    eps, delta = Decimal(state["epsilon"]), Decimal(state["delta"])
    fits_basic = eps <= budget_epsilon and delta <= budget_delta
    curve_eps, fits_curve = None, False
    if state["charged"] > 0 and budget_delta > 0 and state["no_rdp"] == 0:
        mu2, kappa, pure = Decimal(state["mu2"]), Decimal(state["kappa"]), Decimal(state["pure"])
        mu = None
        if mu2 > 0:
            mu = float(_CTX_SQRT.sqrt(mu2))
            if Fraction(mu) ** 2 < Fraction(mu2):
                mu = math.nextafter(mu, math.inf)
        # the composed RDP curve is alpha (sum mu^2 / 2 + sum kappa) + sum pure eps (Mironov 2017 Prop. 1;
        # GDP alone composes exactly: mu's add in quadrature, Dong-Roth-Su Cor. 3.3)
        parts: list[PrivacyCurve] = []
        if mu is not None:
            parts.append(GDP(mu))
        if kappa > 0:
            parts.append(RDP.linear(float_at_least(kappa)))
        if pure > 0:
            parts.append(ApproxDP(float_at_least(pure), 0.0))
        try:
            if state["non_gdp"] == 0:
                curve_eps = float(GDP(mu if mu is not None else 0.0).epsilon(float_at_most(budget_delta)))
            elif parts:
                curve_eps = float(compose(parts).epsilon(float_at_most(budget_delta)))
            else:
                curve_eps = 0.0
        except (AssumptionError, ValueError):
            curve_eps = None
        if curve_eps is not None and math.isfinite(curve_eps):
            fits_curve = Fraction(curve_eps) <= Fraction(budget_epsilon)
        else:
            curve_eps = None
    return Spent(basic_epsilon=eps, basic_delta=delta, curve_epsilon=curve_eps, fits_basic=fits_basic,
                 fits_curve=fits_curve)


_CTX_SQRT = decimal.Context(prec=60, rounding=decimal.ROUND_CEILING)


def account(releases: list[dict], budget_epsilon: Any, budget_delta: Any) -> Spent:
    """Spent budget of a list of entries (dicts with ``epsilon``, ``delta``, ``curve``); numbers may
    be floats (charged at their shortest decimal) or decimal strings."""
    state = _state0()
    for r in releases:
        state = _charge(state, _entry_dec(r, "epsilon"), _entry_dec(r, "delta"), r.get("curve"))
    return _account(state, to_decimal(budget_epsilon, "budget epsilon"), to_decimal(budget_delta, "budget delta"))


def _entry_dec(r: dict, key: str) -> Decimal:
    exact = r.get(f"{key}_exact")
    return Decimal(exact) if exact is not None else to_decimal(r[key], key)


# ---------------------------------------------------------------------------
# line encoding
# ---------------------------------------------------------------------------


def encode_line(body: dict) -> bytes:
    """One journal line (no newline): canonical JSON of ``body`` with ``"sum"`` appended last."""
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")
    return raw[:-1] + b',"sum":"' + hashlib.sha256(raw).hexdigest().encode("ascii") + b'"}'


def decode_line(line: bytes) -> dict | None:
    """The body of a journal line (with ``"sum"``) if its checksum holds, else ``None``."""
    if len(line) <= _SUFFIX_LEN or not line.endswith(b'"}') or line[-_SUFFIX_LEN:-66] != b',"sum":"':
        return None
    body = line[:-_SUFFIX_LEN] + b"}"
    digest = line[-66:-2]
    try:
        if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
            return None
        obj = json.loads(body.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or "sum" in obj:
        return None
    obj["sum"] = digest.decode("ascii")
    return obj


_FRAGMENT = re.compile(rb'^\{"seq":(\d+),"event":"([a-z]+)"(?:,"id":(\d+))?(?:,"epsilon":"([^"]*)")?'
                       rb'(?:,"delta":"([^"]*)",)?')


def _fragment_info(frag: bytes) -> dict:
    """What can be read from the start of an incomplete line (keys are written in a fixed order)."""
    info: dict[str, Any] = {"sha256": hashlib.sha256(frag).hexdigest(), "length": len(frag), "event": None}
    m = _FRAGMENT.match(frag)
    if m:
        info["event"] = m.group(2).decode("ascii")
        if m.group(3):
            info["id"] = int(m.group(3))
        if m.group(4) is not None and m.group(5) is not None:   # both complete (delta is followed by ',')
            try:
                e, d = Decimal(m.group(4).decode()), Decimal(m.group(5).decode())
                if e.is_finite() and d.is_finite() and e >= 0 and d >= 0:
                    info["epsilon"], info["delta"] = _dstr(e), _dstr(d)
            except decimal.InvalidOperation:
                pass
    return info


# ---------------------------------------------------------------------------
# replay (full or tail)
# ---------------------------------------------------------------------------


class _Replay:
    """Checks a run of journal lines and rebuilds the entries (full) or only the state (tail).

    ``full``: lines start at the header; every entry is tracked.  Tail mode: the first complete
    line is the base (trusted as the start of the window); events about entries reserved before
    the window are checked only for their state transition.
    """

    def __init__(self, path: Path, full: bool, track: bool = True):
        self.path = path
        self.full = full
        self.track = track
        self.header: dict | None = None
        self.last: dict | None = None            # last valid line
        self.prev_kind: str | None = None
        self.entries: dict[int, dict] = {}        # id -> entry (full mode, or those in the window)
        self.order: list[int] = []
        self.fragments: list[bytes] = []          # invalid lines after the last valid one (awaiting a torn ack)
        self.cancelled = 0
        self.lines = 0

    # -- helpers -----------------------------------------------------------
    def _t(self, what: str) -> BudgetError:
        seq = "?" if self.last is None else self.last["seq"] + 1
        return _tamper(self.path, f"line {seq}: {what}")

    def feed(self, raw: bytes) -> None:
        self.lines += 1
        obj = decode_line(raw)
        if obj is None:
            if self.last is None and not self.full:
                return   # tail mode: the window may start with garbage acknowledged later; skip
            if self.last is None:
                raise _tamper(self.path, "line 0 (header) fails its checksum")
            self.fragments.append(raw)
            return
        try:
            self._feed_valid(obj)
        except BudgetError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, ArithmeticError) as exc:
            raise self._t(f"malformed {obj.get('event')!r} line ({type(exc).__name__})") from None

    def _feed_valid(self, obj: dict) -> None:
        if self.last is None:
            self._first(obj)
            return
        if self.fragments and obj.get("event") != "torn":
            raise self._t(f"{len(self.fragments)} line(s) before it fail their checksum (edited or truncated)")
        if obj.get("prev") != self.last["sum"]:
            raise self._t("its prev hash does not match the line before it (a line was deleted, inserted, "
                          "reordered or edited)")
        if obj.get("seq") != self.last["seq"] + 1:
            raise self._t(f"seq = {obj.get('seq')!r}, expected {self.last['seq'] + 1} (lines deleted or reordered)")
        self._apply(obj)

    def feed_all(self, lines: list[bytes], frag: bytes) -> None:
        """Feed complete lines and the unterminated end ``frag``; check how the run ends."""
        for ln in lines:
            self.feed(ln)
        if self.last is None:
            raise _tamper(self.path, "no valid line (empty, or the header is damaged)")
        if frag:
            self.fragments.append(frag)
        self.check_end(bool(frag))

    def _first(self, obj: dict) -> None:
        if self.full:
            if obj.get("seq") != 0 or obj.get("event") != "header" or obj.get("prev") != ZERO_HASH:
                raise _tamper(self.path, "line 0 is not a journal header")
            self._check_header(obj)
            if obj.get("state") != _state0():
                raise _tamper(self.path, "the header's state is not empty")
            self.header = obj
        else:
            if not isinstance(obj.get("state"), dict) or not isinstance(obj.get("seq"), int):
                raise _tamper(self.path, f"line {obj.get('seq')!r} has no state")
            self._check_state_shape(obj["state"])
            if obj.get("event") == "reserve":
                self._track_reserve(obj)
        self.last = obj
        self.prev_kind = obj.get("event")

    def _check_header(self, h: dict) -> None:
        if h.get("format") != JOURNAL_FORMAT or h.get("version") != JOURNAL_VERSION:
            raise _bad(self.path, f"format {h.get('format')!r} version {h.get('version')!r}, this bayesdp reads "
                                  f"{JOURNAL_FORMAT!r} version {JOURNAL_VERSION}")
        b = h.get("budget")
        if not isinstance(b, dict):
            raise _tamper(self.path, "the header has no budget")
        e, d = _dec(b.get("epsilon"), "budget.epsilon", self.path), _dec(b.get("delta"), "budget.delta", self.path)
        if not (e > 0 and 0 <= d < 1):
            raise _tamper(self.path, f"budget ({b.get('epsilon')}, {b.get('delta')}) is out of range")

    def _check_state_shape(self, s: dict) -> None:
        if set(s) != set(_state0()):
            raise _tamper(self.path, "a line's state has unexpected keys")
        for k in ("last_id", "charged", "no_rdp", "non_gdp"):
            if not isinstance(s[k], int) or isinstance(s[k], bool) or s[k] < 0:
                raise _tamper(self.path, f"state.{k} = {s[k]!r} is not a count")
        for k in ("epsilon", "delta", "pure", "mu2", "kappa"):
            if _dec(s[k], f"state.{k}", self.path) < 0:
                raise _tamper(self.path, f"state.{k} is negative")

    def _expect_state(self, obj: dict, state: dict) -> None:
        """The line's running totals must equal ``state`` (counts exactly, decimals by value)."""
        got = obj.get("state")
        if got == state:
            return
        if not isinstance(got, dict) or set(got) != set(state):
            raise self._t(f"the {obj.get('event')} line has malformed running totals")
        bad = []
        for k, v in state.items():
            if k in _DECIMAL_KEYS:
                try:
                    same = isinstance(got[k], str) and Decimal(got[k]) == Decimal(v)
                except decimal.InvalidOperation:
                    same = False
            else:
                same = type(got[k]) is int and got[k] == v
            if not same:
                bad.append(k)
        if bad:
            raise self._t(f"the running totals of this {obj.get('event')} line ({', '.join(bad)}) do not follow from "
                          "the lines before it")

    def _track_reserve(self, obj: dict) -> dict:
        entry = {"id": obj["id"], "status": "pending", "time": obj.get("time"), "mechanism": obj.get("mechanism"),
                 "source": obj.get("source"), "epsilon_exact": obj["epsilon"], "delta_exact": obj["delta"],
                 "epsilon": float(Decimal(obj["epsilon"])), "delta": float(Decimal(obj["delta"])),
                 "curve": obj.get("curve"), "dp_event": obj.get("dp_event"), "what": obj.get("what", ""),
                 "released": None, "legacy": bool(obj.get("legacy", False))}
        if self.track:
            self.entries[obj["id"]] = entry
            self.order.append(obj["id"])
        return entry

    # -- events -----------------------------------------------------------------
    def _apply(self, obj: dict) -> None:
        kind = obj.get("event")
        st = self.last["state"]
        if kind == "reserve":
            i = obj.get("id")
            if not isinstance(i, int) or isinstance(i, bool) or i <= st["last_id"]:
                raise self._t(f"reserve id {i!r} is not above the previous id {st['last_id']}")
            for k in ("mechanism", "source", "time"):
                if not isinstance(obj.get(k), str):
                    raise self._t(f"reserve {i} has no {k}")
            eps, delta = _dec(obj.get("epsilon"), "epsilon", self.path), _dec(obj.get("delta"), "delta", self.path)
            if eps < 0 or not 0 <= delta <= 1:
                raise self._t(f"reserve {i} charges ({obj['epsilon']}, {obj['delta']}) out of range")
            why = _consistency_problem(eps, delta, obj.get("curve"), obj.get("dp_event"))
            if why:
                raise self._t(f"entry {i} is inconsistent: {why}")
            self._expect_state(obj, _charge(st, eps, delta, obj.get("curve"), new_id=i))
            self._track_reserve(obj)
        elif kind in ("commit", "abort", "resolve"):
            i = obj.get("id")
            e = self.entries.get(i)
            if e is None and self.full:
                raise self._t(f"{kind} of unknown entry {i!r}")
            if e is not None:
                if e["status"] != "pending":
                    raise self._t(f"{kind} of entry {i}, which is {e['status']}, not pending")
                if kind == "commit":
                    rel = obj.get("released")
                    if not isinstance(rel, dict):
                        raise self._t(f"commit {i} has no released values")
                    why = _consistency_problem(Decimal(e["epsilon_exact"]), Decimal(e["delta_exact"]), None,
                                               e["dp_event"], rel)
                    if why:
                        raise self._t(f"entry {i} is inconsistent: {why}")
                    e["released"] = rel
                e["status"] = {"commit": "committed", "abort": "aborted", "resolve": "resolved"}[kind]
                if kind == "resolve":
                    e["resolved"] = {"time": obj.get("time"), "note": obj.get("note", "")}
                if kind == "abort":
                    e["reason"] = obj.get("reason", "")
            self._expect_state(obj, st)
        elif kind == "cancel":
            i = obj.get("id")
            prev = self.last
            if prev.get("event") != "reserve" or prev.get("id") != i:
                raise self._t(f"cancel of entry {i!r} does not directly follow its reserve")
            if any(obj.get(k) != prev.get(k) for k in ("epsilon", "delta", "curve")):
                raise self._t(f"cancel of entry {i} does not repeat its charge")
            self._expect_state(obj, _charge(st, Decimal(prev["epsilon"]), Decimal(prev["delta"]), prev.get("curve"),
                                            sign=-1))
            if self.track and i in self.entries:
                del self.entries[i]
                self.order.remove(i)
            self.cancelled += 1
        elif kind == "torn":
            self._apply_torn(obj, st)
        else:
            raise self._t(f"unknown event {kind!r}")
        self.last = obj
        self.prev_kind = kind

    def _apply_torn(self, obj: dict, st: dict) -> None:
        frs = obj.get("fragments")
        if not isinstance(frs, list) or len(frs) != len(self.fragments) or not frs:
            raise self._t("torn line does not acknowledge exactly the incomplete line(s) before it")
        state = st
        for f, raw in zip(frs, self.fragments):
            info = _fragment_info(raw)
            if not isinstance(f, dict) or f.get("sha256") != info["sha256"] or f.get("length") != info["length"]:
                raise self._t("torn line does not match the incomplete line before it")
            state = self._torn_charge(state, info)
        self._expect_state(obj, state)
        self.fragments = []

    def _torn_charge(self, state: dict, info: dict) -> dict:
        """An incomplete reserve whose charge is readable stays charged (status torn)."""
        if info.get("event") == "reserve" and "epsilon" in info and info.get("id", 0) > state["last_id"]:
            i = info["id"]
            eps, delta = Decimal(info["epsilon"]), Decimal(info["delta"])
            if self.track:
                self.entries[i] = {"id": i, "status": "torn", "time": None, "mechanism": "unknown (incomplete line)",
                                   "source": "", "epsilon_exact": info["epsilon"], "delta_exact": info["delta"],
                                   "epsilon": float(eps), "delta": float(delta), "curve": None, "dp_event": None,
                                   "what": "reserve line cut by a crash: charged", "released": None, "legacy": False}
                self.order.append(i)
            return _charge(state, eps, delta, None, new_id=i)
        return state

    # -- results -------------------------------------------------------------
    def check_end(self, open_fragment: bool) -> None:
        """Invalid lines at the end are the trace of a killed writer only if the last one is unterminated
        (a torn write) and any complete ones before it are explained by a torn repair cut in turn."""
        if not self.fragments:
            return
        complete = self.fragments[:-1] if open_fragment else self.fragments
        if not open_fragment or (complete and _fragment_info(self.fragments[-1])["event"] != "torn"):
            raise _tamper(self.path, f"line {self.last['seq'] + 1} fails its checksum (edited or damaged)")

    def state_with_fragments(self) -> dict:
        """The state counting readable incomplete reserves at the end (as a repair would record)."""
        state = self.last["state"]
        track, self.track = self.track, False
        try:
            for raw in self.fragments:
                state = self._torn_charge(state, _fragment_info(raw))
        finally:
            self.track = track
        return state


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines (without newline) and the trailing incomplete fragment."""
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


# ---------------------------------------------------------------------------
# version-1 files
# ---------------------------------------------------------------------------


def validate(doc: Any, path: Path) -> dict:
    """Check a version-1 document; raise a one-line :class:`BudgetError` on any defect, including an
    entry whose epsilon contradicts its own curve or noise scale and sensitivity."""
    if not isinstance(doc, dict):
        raise _bad(path, "top level is not a JSON object")
    if doc.get("format") != FORMAT:
        raise _bad(path, f"format = {doc.get('format')!r}, expected {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise _bad(path, f"version = {doc.get('version')!r}, this bayesdp reads version {VERSION}")
    b = doc.get("budget")
    if not isinstance(b, dict) or not _finite(b.get("epsilon")) or not b["epsilon"] > 0:
        raise _bad(path, "budget.epsilon missing or not a positive finite number")
    if not _finite(b.get("delta")) or not 0 <= b["delta"] < 1:
        raise _bad(path, "budget.delta missing or not in [0, 1)")
    rel = doc.get("releases")
    if not isinstance(rel, list):
        raise _bad(path, "releases is not a list")
    ids = set()
    for i, r in enumerate(rel):
        if not isinstance(r, dict):
            raise _bad(path, f"releases[{i}] is not an object")
        if r.get("status") not in STATUSES:
            raise _bad(path, f"releases[{i}].status = {r.get('status')!r}")
        if not isinstance(r.get("id"), int) or r["id"] in ids:
            raise _bad(path, f"releases[{i}].id missing or duplicated")
        ids.add(r["id"])
        for key in ("mechanism", "source", "time"):
            if not isinstance(r.get(key), str):
                raise _bad(path, f"releases[{i}].{key} missing")
        if not _finite(r.get("epsilon")) or r["epsilon"] < 0:
            raise _bad(path, f"releases[{i}].epsilon is not a finite number >= 0")
        if not _finite(r.get("delta")) or not 0 <= r["delta"] <= 1:
            raise _bad(path, f"releases[{i}].delta is not in [0, 1]")
        try:
            curve_from_json(r.get("curve"))
        except (ValueError, KeyError, TypeError, BayesDPError):
            raise _bad(path, f"releases[{i}].curve is not a valid curve") from None
        why = _legacy_consistency(r)
        if why:
            raise _tamper(path, f"releases[{i}] (id {r['id']}) is inconsistent: {why}")
    return doc


def _legacy_consistency(r: dict) -> str | None:
    """Version-1 entries hold doubles: the curve's epsilon must not exceed the entry's, nor the
    released sensitivity / noise scale (relative 1e-12 for the rounding of the two reported doubles)."""
    eps, delta = r["epsilon"], r["delta"]
    c = r.get("curve")
    if isinstance(c, dict) and c.get("kind") == "approx":
        if c["epsilon"] > eps or c["delta"] > delta:
            return f"its curve says ({c['epsilon']!r}, {c['delta']!r})-DP but it is charged ({eps!r}, {delta!r})"
    elif c is not None:
        cc = curve_from_json(c)
        try:
            ce = cc.epsilon(delta) if delta > 0 else math.inf
        except AssumptionError:
            ce = math.inf
        if not ce <= eps * (1 + 1e-9):
            return f"its curve gives epsilon {ce:.6g} at delta {delta!r} but it is charged {eps!r}"
    rel = r.get("released")
    if isinstance(rel, dict) and _finite(rel.get("noise_scale")) and _finite(rel.get("sensitivity")):
        if rel["noise_scale"] <= 0 or rel["sensitivity"] / rel["noise_scale"] > eps * (1 + 1e-12):
            return (f"its released sensitivity {rel['sensitivity']!r} / noise scale {rel['noise_scale']!r} gives "
                    f"epsilon {rel['sensitivity'] / rel['noise_scale']:.17g} but it is charged {eps!r}")
    return None


def _legacy_lines(doc: dict, raw: bytes) -> list[bytes]:
    """The journal equivalent of a version-1 document.  Entries are charged the exact binary value
    of their stored doubles (the epsilon their noise was calibrated to); the budget its shortest
    decimal (what the user typed)."""
    b = doc["budget"]
    header = {"seq": 0, "event": "header", "format": JOURNAL_FORMAT, "version": JOURNAL_VERSION,
              "dataset": doc.get("dataset"), "created": doc.get("created") or _now(),
              "budget": {"epsilon": _dstr(to_decimal(float(b["epsilon"]))),
                         "delta": _dstr(to_decimal(float(b["delta"])))},
              "migrated_from": {"format": FORMAT, "version": VERSION, "sha256": hashlib.sha256(raw).hexdigest(),
                                "time": _now(), "entries": len(doc["releases"])},
              "state": _state0(), "prev": ZERO_HASH}
    lines = [encode_line(header)]
    last, state, seq = lines[0], _state0(), 0
    for r in sorted(doc["releases"], key=lambda r: r["id"]):
        eps, delta = Decimal(float(r["epsilon"])), Decimal(float(r["delta"]))
        state = _charge(state, eps, delta, r.get("curve"), new_id=r["id"])
        seq += 1
        body = {"seq": seq, "event": "reserve", "id": r["id"], "epsilon": _dstr(eps), "delta": _dstr(delta),
                "time": r["time"], "mechanism": r["mechanism"], "source": r["source"], "what": r.get("what", ""),
                "curve": r.get("curve"), "dp_event": {"type": "epsilon_delta", "epsilon": _dstr(eps),
                                                      "delta": _dstr(delta)},
                "legacy": True, "state": state, "prev": _sum_of(last)}
        last = encode_line(body)
        lines.append(last)
        if r["status"] in ("committed", "aborted"):
            seq += 1
            ev = {"seq": seq, "event": "commit" if r["status"] == "committed" else "abort", "id": r["id"],
                  "time": r["time"]}
            if r["status"] == "committed":
                ev["released"] = r.get("released") if isinstance(r.get("released"), dict) else {}
            else:
                ev["reason"] = "aborted (version-1 ledger)"
            ev.update(state=state, prev=_sum_of(last))
            last = encode_line(ev)
            lines.append(last)
    return lines


def _sum_of(line: bytes) -> str:
    return line[-66:-2].decode("ascii")


# ---------------------------------------------------------------------------
# file access
# ---------------------------------------------------------------------------


def _read_bytes(path: Path, limit: int = -1) -> bytes:
    """The file's bytes (the first ``limit`` when given), or a one-line :class:`BudgetError`."""
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except FileNotFoundError:
        raise BudgetError(f"ledger {path} does not exist; check the path, or create it with a budget (--budget E "
                          "on the command line, budget_epsilon=E in Python)") from None
    except IsADirectoryError:
        raise BudgetError(f"ledger {path} is a directory; pass a ledger file") from None
    except OSError as e:
        raise BudgetError(f"ledger {path}: cannot read ({e.strerror})") from None


def _is_journal(head: bytes) -> bool:
    return head.startswith(b'{"seq":0,"event":"header"')


def _legacy_doc(raw: bytes, path: Path) -> dict:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _bad(path, "not valid JSON nor a ledger journal") from None
    return validate(doc, path)


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        dfd = os.open(str(d), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


@dataclass
class _Full:
    """A fully replayed journal (or a version-1 document read as one)."""

    header: dict
    replay: _Replay
    legacy: dict | None = None      # the version-1 document, when the file is one
    fragment: bytes = b""           # an unterminated last line


def _replay_full(path: Path, data: bytes | None = None) -> _Full:
    """Replay and check the whole journal (a version-1 file is checked and replayed as its conversion)."""
    raw = _read_bytes(path) if data is None else data
    legacy = None
    if not _is_journal(raw[:64]):
        legacy = _legacy_doc(raw, path)
        raw = b"\n".join(_legacy_lines(legacy, raw)) + b"\n"
    lines, frag = _split(raw)
    rp = _Replay(path, full=True)
    rp.feed_all(lines, frag)
    return _Full(header=rp.header, replay=rp, legacy=legacy, fragment=frag)


def _entries_list(rp: _Replay) -> list[dict]:
    return [rp.entries[i] for i in rp.order]


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------


def _budget(header: dict) -> tuple[Decimal, Decimal]:
    b = header["budget"]
    return Decimal(b["epsilon"]), Decimal(b["delta"])


def _head(last: dict) -> dict:
    return {"seq": last["seq"], "sha256": last["sum"]}


def summarize_state(header: dict, state: dict, path: Path | str | None = None) -> dict:
    """Budget, spent and remaining from a running state (no per-entry list)."""
    E, D = _budget(header)
    sp = _account(state, E, D)
    options = []
    if sp.basic_delta <= D:
        options.append(("basic composition", Fraction(sp.basic_epsilon), Fraction(D - sp.basic_delta)))
    if sp.curve_epsilon is not None and (
            not options or Fraction(sp.curve_epsilon) < Fraction(sp.basic_epsilon) * Fraction(999, 1000)):
        # reported only when it improves on basic composition materially (it uses the whole budget delta)
        options.append(("curve composition (RDP/GDP)", Fraction(sp.curve_epsilon), Fraction(0)))
    if options:
        rule, spent_eps, left_delta = min(options, key=lambda o: o[1])
    else:
        rule, spent_eps, left_delta = ("basic composition", Fraction(sp.basic_epsilon),
                                       Fraction(D - sp.basic_delta))
    left_eps = Fraction(E) - spent_eps
    return {
        "ledger": None if path is None else str(path),
        "format": f"{JOURNAL_FORMAT} v{JOURNAL_VERSION}",
        "dataset": header.get("dataset"),
        "budget": {"epsilon": float(E), "delta": float(D)},
        "spent": {"epsilon": float(spent_eps), "rule": rule,
                  "basic": {"epsilon": float(sp.basic_epsilon), "delta": float(sp.basic_delta)},
                  "curve_epsilon_at_budget_delta": sp.curve_epsilon},
        "remaining_budget": {"epsilon": float(left_eps), "delta": float(left_delta)},
        "exact": {"budget": {"epsilon": _dstr(E), "delta": _dstr(D)},
                  "spent_basic": {"epsilon": _dstr(sp.basic_epsilon), "delta": _dstr(sp.basic_delta)},
                  "remaining_basic": {"epsilon": _dstr(_CTX.subtract(E, sp.basic_epsilon)),
                                      "delta": _dstr(_CTX.subtract(D, sp.basic_delta))}},
        "within_budget": sp.fits or state["charged"] == 0,
        "num_releases": state["charged"],
    }


def _summary_full(full: _Full, path: Path) -> dict:
    rp = full.replay
    state = rp.state_with_fragments()
    s = summarize_state(full.header, state, path)
    entries = _entries_list(rp)
    s["releases"] = entries
    s["pending"] = [e["id"] for e in entries if e["status"] == "pending"]
    s["cancelled"] = rp.cancelled
    s["head"] = _head(rp.last)
    E, D = _budget(full.header)
    if D > 0 and entries:
        # the PLD composition (bayesdp.budget.accountant): reported when it improves on the other rules
        from .accountant import composed_epsilon, rdp_composed_epsilon

        evs = [e.get("dp_event") or {"type": "epsilon_delta", "epsilon": e["epsilon_exact"], "delta": e["delta_exact"]}
               for e in entries]
        try:
            ep = composed_epsilon(evs, float_at_most(D))
        except BudgetError:
            ep = math.inf
        try:
            er = rdp_composed_epsilon(evs, float_at_most(D))
        except BayesDPError:
            er = math.inf
        s["spent"]["pld_epsilon_at_budget_delta"] = ep if math.isfinite(ep) else None
        s["spent"]["rdp_epsilon_at_budget_delta"] = er if math.isfinite(er) else None
        # like the curve rule: only a material improvement (it uses the whole budget delta)
        for value, rule in ((ep, "PLD composition (dp-accounting)"), (er, "Renyi composition of the DP events")):
            if math.isfinite(value) and value < s["spent"]["epsilon"] * 0.999:
                s["spent"]["epsilon"], s["spent"]["rule"] = value, rule
                s["remaining_budget"] = {"epsilon": max(0.0, float(E) - value), "delta": 0.0}
                s["within_budget"] = s["within_budget"] or value <= float(E)
    warnings = []
    if full.legacy is not None:
        s["format"] = f"{FORMAT} v{VERSION} (converted to a journal on the next write)"
    if rp.fragments:
        warnings.append(f"{len(rp.fragments)} incomplete line(s) at the end ({sum(len(f) for f in rp.fragments)} "
                        "bytes): a write interrupted by a crash (or in progress); the next write acknowledges it, "
                        "readable charges stay counted")
    if s["pending"]:
        warnings.append(f"{len(s['pending'])} pending entr{'y' if len(s['pending']) == 1 else 'ies'} "
                        f"({', '.join(map(str, s['pending'][:10]))}{' ...' if len(s['pending']) > 10 else ''}): "
                        "charged; a crash left their outcome unknown: `bayesdp ledger resolve` marks them spent")
    s["warnings"] = warnings
    return s


def summarize(doc: dict) -> dict:
    """Summary of a document returned by :meth:`Ledger.read` (kept for callers of version 1)."""
    return Ledger(doc["path"]).summary()


# ---------------------------------------------------------------------------
# the ledger
# ---------------------------------------------------------------------------


class Reservation:
    """Handle of a pending ledger entry (see :meth:`Ledger.reserve`).

    Attributes:
        ledger: the ledger.
        entry_id: the entry's id.
        epsilon: the charge (exact decimal).
        delta: the charged delta (exact decimal).
        noise_epsilon: the epsilon to calibrate noise to: the largest double not above the charge.
        drawn: whether noise may have been drawn (the entry then stays charged).
        released: what was released (set by :meth:`commit`).
        summary: the ledger's summary once the reservation is closed.
        head: the journal's head once the reservation is closed.

    Examples:
        >>> led = Ledger.open("ledger.jsonl", budget_epsilon=1.0)
        >>> with led.reserve(0.1, 0, "laplace", "an example") as res:
        ...     res.mark_drawn()                 # immediately before drawing noise at res.noise_epsilon
        ...     res.commit({"value": 1.5})
        >>> res.noise_epsilon, res.summary["remaining_budget"]["epsilon"]
        (0.09999999999999999, 0.9)
    """

    def __init__(self, ledger: "Ledger", entry_id: int, epsilon: Decimal, delta: Decimal):
        self.ledger = ledger
        self.entry_id = entry_id
        self.epsilon = epsilon          # the charge (exact decimal)
        self.delta = delta
        #: the epsilon to calibrate noise to: the largest double not above the charged epsilon
        self.noise_epsilon = float_at_most(epsilon)
        self.drawn = False
        self.released: dict | None = None
        self.summary: dict | None = None
        self.head: dict | None = None

    def mark_drawn(self) -> None:
        """Call immediately BEFORE drawing any privacy noise: from then on the entry stays charged."""
        self.drawn = True

    def commit(self, released: dict) -> None:
        """Record what was released (written when the reservation closes).

        Args:
            released: the released values and what describes them (JSON-ready).
        """
        self.drawn = True
        self.released = released


class _Writer:
    """Append access under the lock: the header and the verified tail (or the whole journal), then one
    line per event.  Nothing is written before the first :meth:`append`: a refusal leaves the file
    unchanged; the first append first converts a version-1 file and acknowledges incomplete lines."""

    def __init__(self, path: Path, full: bool = False):
        self.path = path
        self.full_replay: _Full | None = None
        self.migration: bytes | None = None
        self.fd: int | None = None
        if not _is_journal(_read_start(path)):
            raw = _read_bytes(path)
            doc = _legacy_doc(raw, path)
            lines = _legacy_lines(doc, raw)
            self.migration = b"\n".join(lines) + b"\n"
            full = True
        if full:
            self.full_replay = _replay_full(path, None if self.migration is None else self.migration)
            rp, self.open_fragment = self.full_replay.replay, bool(self.full_replay.fragment)
        else:
            rp, self.open_fragment = _tail_replay(path)
        self.header = rp.header
        self.rp = rp
        self.last = rp.last
        self.state = rp.state_with_fragments()
        self.repair: dict | None = None
        if rp.fragments:
            self.repair = {"seq": self.last["seq"] + 1, "event": "torn", "time": _now(),
                           "fragments": [_fragment_info(f) for f in rp.fragments],
                           "state": self.state, "prev": self.last["sum"]}

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _open(self) -> None:
        if self.migration is not None:
            _atomic_write(self.path, self.migration)
            self.migration = None
        self.fd = os.open(str(self.path), os.O_WRONLY | os.O_APPEND)
        if self.repair is not None:
            body, self.repair = self.repair, None
            self._write((b"\n" if self.open_fragment else b"") + encode_line(body) + b"\n", body)

    def _write(self, data: bytes, body: dict) -> None:
        try:
            n = os.write(self.fd, data)
            if n != len(data):
                raise OSError(28, "short write (disk full?)")
            os.fsync(self.fd)
        except OSError as e:
            raise BudgetError(f"ledger {self.path}: cannot append ({e.strerror}); the entry stays as it was "
                              "(a partial line is acknowledged by the next write)") from None
        body = dict(body)
        body["sum"] = _sum_of(data.rstrip(b"\n"))
        self.last = body
        self.state = body["state"]

    def append(self, body: dict) -> dict:
        if self.fd is None:
            self._open()
        state = body.get("state") or self.state
        out = {"seq": self.last["seq"] + 1, "event": body["event"]}
        out.update({k: v for k, v in body.items() if k not in ("seq", "event", "state", "prev")})
        out["state"] = state
        out["prev"] = self.last["sum"]
        self._write(encode_line(out) + b"\n", out)
        return out


def _read_start(path: Path) -> bytes:
    return _read_bytes(path, 64)


def _tail_replay(path: Path) -> tuple[_Replay, bool]:
    """Replay of the header and the last :data:`TAIL_BYTES` (more if a line is longer) of a journal.

    Returns the replay (``header`` set; entries tracked only within the window) and whether the
    file ends with an unterminated line."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BudgetError(f"ledger {path}: cannot read ({e.strerror})") from None
    with f:
        first = f.readline()
        hp = _Replay(path, full=True)
        if not first.endswith(b"\n"):
            raise _tamper(path, "line 0 (header) is incomplete")
        hp.feed(first[:-1])
        second = f.readline()
        if second.endswith(b"\n"):
            body = decode_line(second[:-1])
            if body is not None and body.get("prev") != hp.header["sum"]:
                raise _tamper(path, "line 1: its prev hash does not match the header (the header was edited)")
        size = os.fstat(f.fileno()).st_size
        window = TAIL_BYTES
        while True:
            start = max(len(first), size - window)
            f.seek(start)
            data = f.read(size - start)
            if start > len(first):
                cut = data.find(b"\n")
                data = data[cut + 1:] if cut >= 0 else b""
            lines, frag = _split(data)
            if start == len(first) or any(decode_line(ln) is not None for ln in lines):
                break
            window *= 4
    if start == len(first):
        rp = hp                      # the whole journal fits in the window: a full replay
    else:
        rp = _Replay(path, full=False)
        rp.header = hp.header
    rp.feed_all(lines, frag)
    return rp, bool(frag)


class Ledger:
    """A privacy budget ledger file (docs/ledger.md).  Use :meth:`open`, then :meth:`reserve` for each release,
    or the interface of :class:`bayesdp.PrivacyAccountant` (:meth:`spend`, :meth:`spent`, :meth:`remaining`).

    Examples:
        >>> import os, tempfile
        >>> led = Ledger.open(os.path.join(tempfile.mkdtemp(), "ledger.json"), budget_epsilon=1.0, dataset="trial")
        >>> _ = led.spend((0.25, 0.0), what="a count released elsewhere")
        >>> led.remaining()
        {'epsilon': 0.75, 'delta': 0.0}
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).absolute()

    # -- locking -----------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, timeout: float | None = None) -> Iterator[None]:
        timeout = LOCK_TIMEOUT_S if timeout is None else timeout
        lock_path = self.path.with_name(self.path.name + ".lock")
        lock = filelock.FileLock(str(lock_path), timeout=timeout)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise BudgetError(f"ledger {self.path}: still locked by another release after {timeout:.0f} s; "
                              "retry later") from None
        except OSError as e:
            raise BudgetError(f"ledger {self.path}: cannot open lock file {lock_path} ({e.strerror}); check the "
                              "directory") from None
        try:
            self._clean_temporaries()
            yield
        finally:
            lock.release()

    def _clean_temporaries(self) -> None:
        """Temporary files of this ledger left by killed writers (made only under the lock, which we hold)."""
        with contextlib.suppress(OSError):
            for p in self.path.parent.glob(f".{self.path.name}.*.tmp"):
                with contextlib.suppress(OSError):
                    p.unlink()

    # -- opening ---------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, budget_epsilon: Any = None, budget_delta: Any = None,
             dataset: str | None = None) -> "Ledger":
        """Open an existing ledger, or create it when ``budget_epsilon`` is given and the file does not exist.

        Budgets are decimals (a float is taken at its shortest decimal, ``0.1`` -> ``0.1``; strings
        and :class:`~decimal.Decimal` as written).  An existing ledger keeps its own budget: a
        different ``budget_epsilon`` (or ``budget_delta``, when given) is refused rather than
        silently dropped; ``budget_delta=None`` means 0 at creation.  ``dataset``, when given, must
        match the ledger's dataset label.  Opening never writes to an existing file.

        Args:
            path: the ledger file.
            budget_epsilon: the budget's epsilon, to create the ledger (or to check an existing one's).
            budget_delta: the budget's delta.
            dataset: the dataset label (recorded at creation, checked after).

        Returns:
            The :class:`Ledger`.

        Raises:
            BudgetError: a bad budget, a missing directory, a missing file without a budget, a budget or
                dataset that differs from the existing ledger's, or a damaged or tampered file.
        """
        led = cls(path)
        be = bd = None
        if budget_epsilon is not None:
            be = to_decimal(budget_epsilon, "budget")
            if not be > 0:
                raise BudgetError(f"budget = {budget_epsilon!r} must be a positive finite epsilon")
            bd = _D0 if budget_delta is None else to_decimal(budget_delta, "budget delta")
            if not 0 <= bd < 1:
                raise BudgetError(f"budget delta = {budget_delta!r} must be in [0, 1)")
        if not led.path.parent.is_dir():
            raise BudgetError(f"ledger {led.path}: directory {led.path.parent} does not exist")
        if not led.path.exists():
            if be is None:
                raise BudgetError(f"ledger {led.path} does not exist; check the path, or create it with a budget "
                                  "(--budget E on the command line, budget_epsilon=E in Python)")
            with led._locked():
                if not led.path.exists():
                    header = {"seq": 0, "event": "header", "format": JOURNAL_FORMAT, "version": JOURNAL_VERSION,
                              "dataset": dataset, "created": _now(),
                              "budget": {"epsilon": _dstr(be), "delta": _dstr(bd)}, "migrated_from": None,
                              "state": _state0(), "prev": ZERO_HASH}
                    _atomic_write(led.path, encode_line(header) + b"\n")
        header = led._header()
        E, D = _budget(header)
        if be is not None and (E != be or (budget_delta is not None and D != bd)):
            raise BudgetError(
                f"--budget = {budget_epsilon!r} (delta {budget_delta!r}) differs from the existing ledger's "
                f"budget epsilon {_dstr(E)} (delta {_dstr(D)}) in {led.path}; a ledger's budget cannot be "
                "changed: drop --budget")
        if dataset is not None and header.get("dataset") not in (None, dataset):
            raise BudgetError(f"ledger {led.path} belongs to dataset {header.get('dataset')!r}, not {dataset!r}; "
                              "use that dataset's ledger")
        return led

    def _header(self) -> dict:
        return self._fast()[0]

    def _fast(self) -> tuple[dict, dict, dict]:
        """(header, state, last line) from the header and the verified tail, without the lock and
        without writing (incomplete lines at the end count as a repair would count them)."""
        if not _is_journal(_read_start(self.path)):
            full = _replay_full(self.path)
            return full.header, full.replay.state_with_fragments(), full.replay.last
        rp, _ = _tail_replay(self.path)
        return rp.header, rp.state_with_fragments(), rp.last

    # -- reading -------------------------------------------------------------
    def read(self) -> dict:
        """Validated content (the whole journal replayed and checked; no lock needed).

        Returns:
            The ledger's content as a dict.

        Raises:
            BudgetError: a damaged or tampered file.
        """
        full = _replay_full(self.path)
        b = full.header["budget"]
        return {"format": JOURNAL_FORMAT, "version": JOURNAL_VERSION, "dataset": full.header.get("dataset"),
                "created": full.header.get("created"), "migrated_from": full.header.get("migrated_from"),
                "budget": {"epsilon": float(Decimal(b["epsilon"])), "delta": float(Decimal(b["delta"])),
                           "epsilon_exact": b["epsilon"], "delta_exact": b["delta"]},
                "releases": _entries_list(full.replay), "head": _head(full.replay.last), "path": str(self.path)}

    def summary(self) -> dict:
        """Budget, spent, remaining, every entry, pending entries and the head; the whole journal is checked.

        Returns:
            The summary (``budget``, ``spent``, ``remaining_budget``, ``releases``, ``pending``, ``head``, ...).

        Raises:
            BudgetError: a damaged or tampered file.
        """
        return _summary_full(_replay_full(self.path), self.path)

    def verify(self, head: str | None = None) -> dict:
        """Replay and check the whole journal; with ``head`` (a line's sha256 printed earlier by a
        release or ``show``), also require that line to still be in the journal (an external anchor:
        detects rollback and consistent rewrites since it was printed).  Returns the summary.

        Args:
            head: a sha256 printed earlier, or None.

        Returns:
            The summary (:meth:`summary`).

        Raises:
            BudgetError: a malformed head, a damaged or tampered file, or a head no longer in the journal.
        """
        full = _replay_full(self.path)
        if head is not None:
            h = head.strip().lower()
            if not re.fullmatch(r"[0-9a-f]{64}", h):
                raise BudgetError(f"--head = {head!r} must be a 64-digit sha256 printed by a release or "
                                  "`bayesdp ledger show`")
            if full.legacy is not None:
                raise BudgetError(f"ledger {self.path} is a version-1 file: it has no chain to anchor; it becomes a "
                                  "journal on its next write")
            if not _contains_sum(self.path, h):
                raise _tamper(self.path, f"the anchored head {h[:16]}... is not in the journal (entries were removed "
                                         "or the chain was rewritten since it was printed)")
        return _summary_full(full, self.path)

    def pending(self) -> list[dict]:
        """Entries left ``pending`` by a writer that died between its reservation and its commit.

        Returns:
            The pending entries.
        """
        return [e for e in _entries_list(_replay_full(self.path).replay) if e["status"] == "pending"]

    # -- the accountant's interface (bayesdp.PrivacyAccountant) --------------------
    def spend(self, item: Any, *, epsilon: Any = None, delta: Any = None, what: str = "") -> dict:
        """Charge ``item`` (a certificate, a release result, a DP event or an (epsilon, delta) pair), as
        :meth:`bayesdp.PrivacyAccountant.spend`: one reserve and commit, recorded in the journal.

        Args:
            item: what to charge.
            epsilon: an epsilon to charge instead (at least the item's).
            delta: the delta at which a curve is charged.
            what: what was released, in words (recorded).

        Returns:
            :meth:`summary` after the charge.

        Raises:
            BudgetError: over budget (nothing written), or an item that cannot be accounted for.
        """
        from .accountant import charge_of

        _, D = _budget(self._header())
        e, d, ev = charge_of(item, D, epsilon=epsilon, delta=delta)
        with self.reserve(e, d, ev.get("type", "event"), type(item).__name__, what=what, event=ev) as res:
            res.mark_drawn()
            res.commit({"spent": what or type(item).__name__})
        return self.summary()

    def spent(self) -> dict:
        """Spent budget: ``epsilon`` (by the rule that spends least), the sums, and the PLD composition's
        epsilon at the budget's delta (keys of :meth:`bayesdp.PrivacyAccountant.spent`).

        Returns:
            ``epsilon``, ``epsilon_sum``, ``delta_sum``, ``epsilon_pld`` and ``epsilon_rdp``.
        """
        s = self.summary()
        return {"epsilon": s["spent"]["epsilon"], "epsilon_sum": s["spent"]["basic"]["epsilon"],
                "delta_sum": s["spent"]["basic"]["delta"],
                "epsilon_pld": s["spent"].get("pld_epsilon_at_budget_delta"),
                "epsilon_rdp": s["spent"].get("rdp_epsilon_at_budget_delta")}

    def remaining(self) -> dict:
        """What is left: ``{"epsilon": ..., "delta": ...}``.

        Returns:
            The remaining epsilon and delta.
        """
        return dict(self.summary()["remaining_budget"])

    # -- spending --------------------------------------------------------
    def check(self, epsilon: Any, delta: Any = 0.0, curve: PrivacyCurve | None = None,
              event: dict | None = None) -> dict:
        """Raise :class:`BudgetError` if a release of (epsilon, delta) would not fit now (no write).

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            curve: its privacy curve.
            event: its DP event.

        Returns:
            The budget and the current running state.

        Raises:
            BudgetError: it does not fit, or the file is damaged or tampered.
        """
        header, state, _ = self._fast()
        self._admit(header, state, *_charges(epsilon, delta), curve_to_json(curve), event)
        return {"budget": header["budget"], "state": state}

    def _pld_fits(self, e: Decimal, d: Decimal, event: dict | None, E: Decimal, D: Decimal) -> bool:
        """The composition rule for (epsilon, delta) budgets (:mod:`bayesdp.budget.accountant`): the privacy
        loss distributions of every charged entry's DP event and the new one, composed by dp-accounting.
        Only consulted when the running sums do not fit (it replays the whole journal)."""
        from .accountant import fits

        if D <= 0:
            return False
        entries = [{"epsilon": Decimal(en.get("epsilon_exact") or repr(en["epsilon"])),
                    "delta": Decimal(en.get("delta_exact") or repr(en["delta"])), "dp_event": en.get("dp_event")}
                   for en in _entries_list(_replay_full(self.path).replay) if en.get("status") != "cancelled"]
        entries.append({"epsilon": e, "delta": d, "dp_event": event})
        return fits(entries, E, D)[0]

    def _admit(self, header: dict, state: dict, e: Decimal, d: Decimal, curve: dict | None,
               event: dict | None = None) -> dict:
        new = _charge(state, e, d, curve, new_id=state["last_id"] + 1)
        E, D = _budget(header)
        if not _account(new, E, D).fits and not self._pld_fits(e, d, event, E, D):
            left = summarize_state(header, state)["remaining_budget"]
            raise BudgetError(
                f"release of epsilon = {_dstr(e)}, delta = {float(d):.3g} exceeds the budget of ledger {self.path} "
                f"(epsilon {_dstr(E)}, delta {float(D):.3g}; remaining epsilon {left['epsilon']:.6g}, delta "
                f"{left['delta']:.3g}); nothing was drawn: lower epsilon or use a new budget for new data")
        return new

    @contextlib.contextmanager
    def reserve(self, epsilon: Any, delta: Any, mechanism: str, source: str, curve: PrivacyCurve | None = None,
                what: str = "", event: dict | None = None) -> Iterator[Reservation]:
        """Two-phase spend under the lock: check and append a ``pending`` entry, yield, then commit.

        Inside the block call ``res.mark_drawn()`` before drawing noise, calibrate the noise to
        ``res.noise_epsilon`` (never above the charge) and call ``res.commit(released)`` after.  If
        the block raises before ``mark_drawn`` the entry is refunded (a ``cancel`` line: nothing was
        drawn); after it, it stays charged as ``aborted``.  ``event`` describes the mechanism
        (:func:`laplace_event`, or ``{"type": "epsilon_delta", ...}`` by default); it must not cost
        more than the charge (refused before anything is written).

        Args:
            epsilon: the charge's epsilon (decimal; a float at its shortest decimal).
            delta: its delta.
            mechanism: the mechanism's label.
            source: the certificate's source.
            curve: its privacy curve.
            what: what is released, in words.
            event: the DP event (default: the (epsilon, delta) pair).

        Returns:
            A context manager yielding the :class:`Reservation`.

        Raises:
            BudgetError: over budget, an event that costs more than the charge, or a damaged file (nothing written).
        """
        e, d = _charges(epsilon, delta)
        cj = curve_to_json(curve)
        ev = event if event is not None else {"type": "epsilon_delta", "epsilon": _dstr(e), "delta": _dstr(d)}
        why = _consistency_problem(e, d, cj, ev)
        if why:
            raise BudgetError(f"release of epsilon = {_dstr(e)}, delta = {_dstr(d)} refused: {why}; nothing was "
                              "drawn: charge at least what the mechanism costs")
        with self._locked():
            w = _Writer(self.path)
            try:
                new_state = self._admit(w.header, w.state, e, d, cj, ev)
                new_id = new_state["last_id"]
                reserve_body = {"event": "reserve", "id": new_id, "epsilon": _dstr(e), "delta": _dstr(d),
                                "time": _now(), "mechanism": str(mechanism), "source": str(source),
                                "what": str(what), "curve": cj, "dp_event": ev, "state": new_state}
                w.append(reserve_body)
                res = Reservation(self, new_id, e, d)
                try:
                    yield res
                except BaseException as exc:
                    if res.drawn:
                        w.append({"event": "abort", "id": new_id, "time": _now(),
                                  "reason": f"{type(exc).__name__} after noise was drawn"})
                    else:
                        self._cancel(w, reserve_body)
                    raise
                if res.released is not None:
                    why = _consistency_problem(e, d, None, ev, res.released)
                    if why:
                        w.append({"event": "abort", "id": new_id, "time": _now(), "reason": f"inconsistent: {why}"})
                        raise BudgetError(f"release {new_id} not returned: {why}; it stays charged as aborted "
                                          "(a bug: report it)")
                    w.append({"event": "commit", "id": new_id, "time": _now(), "released": res.released})
                elif res.drawn:
                    w.append({"event": "abort", "id": new_id, "time": _now(), "reason": "no values committed"})
                else:
                    self._cancel(w, reserve_body)
                res.summary = summarize_state(w.header, w.state, self.path)
                res.head = _head(w.last)
                res.summary["head"] = res.head
            finally:
                w.close()

    @staticmethod
    def _cancel(w: _Writer, reserve_body: dict) -> None:
        st = _charge(w.state, Decimal(reserve_body["epsilon"]), Decimal(reserve_body["delta"]),
                     reserve_body["curve"], sign=-1)
        w.append({"event": "cancel", "id": reserve_body["id"], "epsilon": reserve_body["epsilon"],
                  "delta": reserve_body["delta"], "curve": reserve_body["curve"], "time": _now(), "state": st})

    def resolve(self, ids: list[int] | None = None, note: str = "") -> dict:
        """Mark pending entries (all, or ``ids``) as spent: ``resolve`` lines; they stay charged.

        A pending entry is one whose release was killed between its reservation and its commit:
        noise may have been drawn and values printed, so it is never refunded.  Also acknowledges an
        incomplete last line.  Returns ``{"resolved": [ids], "summary": ...}``.

        Args:
            ids: the entries to resolve (default: every pending one).
            note: a note recorded with them.

        Returns:
            ``{"resolved": [ids], "summary": ...}``.

        Raises:
            BudgetError: an id that is not pending, or a damaged file.
        """
        with self._locked():
            w = _Writer(self.path, full=True)
            try:
                entries = w.full_replay.replay.entries
                pending = [i for i in w.full_replay.replay.order if entries[i]["status"] == "pending"]
                if ids is None:
                    chosen = pending
                else:
                    chosen = []
                    for i in ids:
                        if i not in entries:
                            raise BudgetError(f"--id {i}: no entry {i} in ledger {self.path}; see "
                                              f"`bayesdp ledger show {self.path}`")
                        if entries[i]["status"] != "pending":
                            raise BudgetError(f"--id {i}: entry {i} is {entries[i]['status']}, not pending; only "
                                              "pending entries can be resolved")
                        if i not in chosen:
                            chosen.append(i)
                for i in chosen:
                    w.append({"event": "resolve", "id": i, "time": _now(), "note": str(note)})
                if not chosen and w.repair is not None:
                    w._open()           # acknowledge an incomplete last line even when nothing is pending
            finally:
                w.close()
        return {"resolved": chosen, "summary": self.summary()}


def _charges(epsilon: Any, delta: Any) -> tuple[Decimal, Decimal]:
    e = to_decimal(epsilon, "epsilon")
    if not e > 0:
        raise BudgetError(f"epsilon = {epsilon!r} must be > 0; pass a positive epsilon")
    if isinstance(delta, float):
        if not math.isfinite(delta):
            raise BudgetError(f"delta = {delta!r} must be in [0, 1)")
        d = decimal_at_least(delta)
    else:
        d = to_decimal(delta, "delta")
    if not 0 <= d < 1:
        raise BudgetError(f"delta = {delta!r} must be in [0, 1)")
    return e, d


def _contains_sum(path: Path, h: str) -> bool:
    needle = f',"sum":"{h}"}}'.encode("ascii")
    with open(path, "rb") as f:
        for line in f:
            if line.rstrip(b"\n").endswith(needle):
                return True
    return False
