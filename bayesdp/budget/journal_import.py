"""One-off conversion of the JSON-lines journals of earlier bayesdp versions into the SQLite ledger
(``bayesdp ledger import OLD NEW``, :func:`import_journal`).

One reader and one verifier, both kept only here: the old file (format ``bayesdp-ledger-journal`` v2) is read
line by line and verified in full before anything is written: each line's checksum, the hash chain, the
sequence, the running totals (count, epsilon, delta; exact decimals) and each entry's consistency with its own
DP event, curve and released noise scale (:func:`bayesdp.budget.accountant.consistency_problem`, the check the
ledger itself applies).  The new ledger records every charged entry (pending, committed, aborted, resolved: all
stay charged) and, in its header, the old file's path, head hash and number of cancelled entries.  Anything
else (a damaged or incomplete line, a torn-write record, another format) is refused and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from decimal import Decimal
from pathlib import Path
from ..curves import GDP, RDP, ApproxDP, PrivacyCurve
from ..errors import BayesDPError, BudgetError
from .accountant import _budget, consistency_problem
from .events import EpsilonDeltaEvent, event_from_json
from .ledger import Ledger, _create, _state_add, _STATE0
from .numbers import show

__all__ = ["import_journal"]

JOURNAL_FORMAT = "bayesdp-ledger-journal"
JOURNAL_VERSION = 2
ZERO_HASH = "0" * 64
_SUFFIX_LEN = len(',"sum":"') + 64 + len('"}')
_OUTCOMES = {"commit": "committed", "abort": "aborted", "resolve": "resolved"}


def _tamper(path: Path, what: str) -> BudgetError:
    return BudgetError(f"journal {path}: {what}; the journal was edited, reordered, truncated or damaged "
                       "(tamper check failed; nothing was written): restore it from a copy")


def _decode_line(line: bytes) -> dict | None:
    """The body of a journal line (canonical JSON with ``"sum"``, the SHA-256 of the rest, appended last) if
    its checksum holds, else ``None``."""
    if len(line) <= _SUFFIX_LEN or not line.endswith(b'"}') or line[-_SUFFIX_LEN:-66] != b',"sum":"':
        return None
    body, digest = line[:-_SUFFIX_LEN] + b"}", line[-66:-2].decode("ascii", "replace")
    if hashlib.sha256(body).hexdigest() != digest:
        return None
    try:
        obj = json.loads(body.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or "sum" in obj:
        return None
    obj["sum"] = digest
    return obj


def _curve(d: dict | None) -> PrivacyCurve | None:
    """The privacy curve of an old entry's JSON ``curve`` (approx, gdp or linear Renyi)."""
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


def _read(path: Path) -> tuple[dict, list[dict], dict, int]:
    """Replay and verify the whole journal: (header, charged entries in order, last line, cancelled count)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BudgetError(f"journal {path}: cannot read ({e.strerror}); check the path") from None
    lines = data.split(b"\n")
    if lines[-1]:
        raise _tamper(path, "the last line is incomplete (a torn write, which import does not convert)")
    header = last = None
    entries: dict[int, dict] = {}
    cancelled, n, e_sum, d_sum = 0, 0, Decimal(0), Decimal(0)
    for seq, raw in enumerate(lines[:-1]):
        obj = _decode_line(raw)
        if obj is None:
            raise _tamper(path, f"line {seq} fails its checksum")
        if obj.get("seq") != seq or obj.get("prev") != (ZERO_HASH if last is None else last["sum"]):
            raise _tamper(path, f"line {seq} does not chain to the line before it (lines deleted, inserted, "
                                "reordered or edited)")
        kind, i = obj.get("event"), obj.get("id")
        try:
            if seq == 0:
                if kind != "header" or obj.get("format") != JOURNAL_FORMAT or obj.get("version") != JOURNAL_VERSION:
                    raise BudgetError(f"journal {path} is not a {JOURNAL_FORMAT} v{JOURNAL_VERSION} file; this "
                                      "import reads only that format")
                try:
                    _budget(obj["budget"]["epsilon"], obj["budget"]["delta"])
                except BudgetError as e:
                    raise _tamper(path, f"the header's {e}") from None
                header = obj
            elif kind == "reserve":
                e, d = Decimal(obj["epsilon"]), Decimal(obj["delta"])
                ev = obj.get("dp_event")
                ev = event_from_json(ev) if ev else EpsilonDeltaEvent(e, d)
                why = ("its charge is out of range" if not (e.is_finite() and d.is_finite() and e > 0 and 0 <= d < 1)
                       else consistency_problem(e, d, _curve(obj.get("curve")), ev))
                if why or i in entries or not isinstance(i, int):
                    raise _tamper(path, f"line {seq}: entry {i!r} is inconsistent: {why or 'a repeated id'}")
                entries[i] = dict(obj, event=ev, status="pending")
                n, e_sum, d_sum = n + 1, e_sum + e, d_sum + d
            elif kind == "cancel":
                if last.get("event") != "reserve" or last.get("id") != i:
                    raise _tamper(path, f"line {seq}: the cancel of entry {i!r} does not directly follow its reserve")
                en = entries.pop(i)
                n, e_sum, d_sum = n - 1, e_sum - Decimal(en["epsilon"]), d_sum - Decimal(en["delta"])
                cancelled += 1
            elif kind in _OUTCOMES:
                en = entries.get(i)
                if en is None or en["status"] != "pending":
                    raise _tamper(path, f"line {seq}: {kind} of entry {i!r}, which is not pending")
                why = (consistency_problem(Decimal(en["epsilon"]), Decimal(en["delta"]), None, en["event"],
                                           obj.get("released")) if kind == "commit" else None)
                if why:
                    raise _tamper(path, f"line {seq}: entry {i} is inconsistent: {why}")
                en.update(status=_OUTCOMES[kind], released=obj.get("released"))
            else:
                raise _tamper(path, f"line {seq}: event {kind!r} is not converted by import")
            st = obj["state"]
            if (st["charged"], Decimal(st["epsilon"]), Decimal(st["delta"])) != (n, e_sum, d_sum):
                raise _tamper(path, f"line {seq}: its running totals do not follow from the lines before it")
        except BudgetError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, ArithmeticError, BayesDPError) as exc:
            raise _tamper(path, f"line {seq}: a malformed {kind!r} line ({type(exc).__name__})") from None
        last = obj
    if header is None:
        raise _tamper(path, "no header line")
    return header, list(entries.values()), last, cancelled


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
    header, entries, last, cancelled = _read(src)
    rows: list[tuple[str, int, dict]] = []
    state = dict(_STATE0)
    for en in entries:
        e, d = Decimal(en["epsilon"]), Decimal(en["delta"])
        rid = len(rows) + 1
        state = _state_add(state, e, d, 1)
        rows.append(("reserve", rid, {"epsilon": show(e), "delta": show(d), "mechanism": str(en.get("mechanism", "")),
                                      "source": str(en.get("source", "")), "what": str(en.get("what", "")),
                                      "event": en["event"].to_json(), "admitted_by": f"imported from {src}",
                                      "time": en.get("time"), "secret_hash": "", "state": state}))
        outcome = {v: k for k, v in _OUTCOMES.items()}.get(en["status"])
        if outcome:
            body = {"time": en.get("time"), "state": state}
            if outcome == "commit":
                body["released"] = en.get("released")
            else:
                body["note" if outcome == "resolve" else "reason"] = "imported"
            rows.append((outcome, rid, body))
    info = {"path": str(src), "head": last["sum"], "cancelled": cancelled}
    b = header["budget"]
    _create(dst, Decimal(b["epsilon"]), Decimal(b["delta"]), header.get("dataset"), imported_from=info, rows=rows)
    return Ledger(dst).verify()
