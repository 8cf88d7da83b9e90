"""One-off conversion of the JSON-lines journals of earlier bayesdp versions into the SQLite ledger
(``bayesdp ledger import OLD NEW``, :func:`import_journal`).

The reading code below is the earlier runtime's, kept only here: the old file (format
``bayesdp-ledger-journal`` v2, or the one-document ``bayesdp-ledger`` v1) is replayed and verified in full
(checksums, chain, running totals, each entry's consistency) before anything is written; the new ledger
records every charged entry (pending, committed, aborted, resolved: all stay charged) and, in its header, the
old file's path, head hash and number of cancelled entries.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..curves import GDP, RDP, ApproxDP, PrivacyCurve
from ..errors import AssumptionError, BayesDPError, BudgetError
from .events import EpsilonDeltaEvent, event_from_json
from .ledger import Ledger, _create, _state_add, _STATE0
from .numbers import show
from .numbers import to_decimal

__all__ = ["import_journal"]

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
                          "on the command line, budget=E in Python)") from None
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



def import_journal(old: str | os.PathLike, new: str | os.PathLike) -> dict:
    """Read and verify an old JSON-lines journal, and write its charges into a new SQLite ledger.

    Args:
        old: the journal file (read only).
        new: the new ledger's path (must not exist).

    Returns:
        The new ledger's summary.

    Raises:
        BudgetError: an unreadable, damaged or tampered journal, an existing ``new``, or a write that failed.

    Examples:
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> import_journal(os.path.join(d, "missing.jsonl"), os.path.join(d, "new.db"))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: journal ... does not exist; check the path
    """

    src = Path(old).absolute()
    dst = Path(os.path.realpath(new))
    if not src.is_file():
        raise BudgetError(f"journal {src} does not exist; check the path")
    if os.path.lexists(dst):
        raise BudgetError(f"ledger {dst} already exists; pass a new file name")
    full = _replay_full(src)
    b = full.header["budget"]
    E, D = Decimal(b["epsilon"]), Decimal(b["delta"])
    rows: list[tuple[str, int, dict]] = []
    state = dict(_STATE0)
    seq = 0
    for en in _entries_list(full.replay):
        if en["status"] == "cancelled":
            continue
        e, d = Decimal(en["epsilon_exact"]), Decimal(en["delta_exact"])
        ev = en.get("dp_event")
        try:
            event = event_from_json(ev) if ev else EpsilonDeltaEvent(e, d)
        except BudgetError:
            event = EpsilonDeltaEvent(e, d)
        seq += 1
        rid = seq
        state = _state_add(state, e, d, 1)
        rows.append(("reserve", rid, {"epsilon": show(e), "delta": show(d), "mechanism": str(en.get("mechanism", "")),
                                      "source": str(en.get("source", "")), "what": str(en.get("what", "")),
                                      "event": event.to_json(), "admitted_by": f"imported from {src}",
                                      "time": en.get("time"), "secret_hash": "", "state": state}))
        outcome = {"committed": "commit", "aborted": "abort", "resolved": "resolve"}.get(en["status"])
        if outcome:
            seq += 1
            body = {"time": en.get("time"), "state": state}
            if outcome == "commit":
                body["released"] = en.get("released")
            else:
                body["note" if outcome == "resolve" else "reason"] = "imported"
            rows.append((outcome, rid, body))
    info = {"path": str(src), "head": full.replay.last["sum"], "cancelled": full.replay.cancelled}
    _create(dst, E, D, full.header.get("dataset"), imported_from=info, rows=rows)
    return Ledger(dst).verify()

