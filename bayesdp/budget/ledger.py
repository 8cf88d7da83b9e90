"""The privacy budget ledger: one SQLite file per dataset, append-only and hash-chained (docs/ledger.md).

Table ``entries`` holds one row per event, never updated or deleted (triggers ``RAISE(ABORT)``): ``seq`` (0, 1,
...), ``kind`` (``header``, ``reserve``, ``commit``, ``abort``, ``cancel``, ``resolve``), ``entry`` (the id of the
reserve the row is about: its ``seq``), ``body`` (canonical JSON; exact decimals as strings; every row carries
the running totals ``state``), ``prev`` (the previous row's hash) and ``hash`` = SHA-256 of
``prev|seq|kind|entry|body``.  Row 0 is the header (budget, dataset).  Table ``verified`` keeps the last row a
writer verified, so that each release re-checks only the rows written since (constant cost).

A release: ``BEGIN IMMEDIATE`` (one writer at a time, whatever name the file is opened by), verify the new rows,
admit the charge, write the ``reserve`` row, ``COMMIT`` (rollback journal, ``synchronous=FULL``): only then is
noise drawn.  Its outcome is a new row in a new transaction: ``commit`` (values), ``abort`` (failed after the
draw; charged) or ``cancel`` (ended before any draw; refunded; it must reveal the random secret whose hash the
reserve row holds, so that nobody but the reserving process can cancel).  A reserve with no outcome stays charged
(``pending``); ``bayesdp ledger resolve`` records that it was looked at (still charged).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

from ..errors import BudgetError
from ..resources import fsync, remove_stale_temporaries
from .accountant import (Entry, Reservation, _Budgeted, _budget, checked_charge, compose, consistency_problem, now,
                         over_budget, reserved_event)
from .events import discrete_gaussian_event, event_from_json, laplace_event
from .numbers import decimal_at_least, exact, float_at_most, noise_delta, noise_epsilon, show, to_decimal
from dataclasses import replace

__all__ = ["Ledger", "Reservation", "to_decimal", "decimal_at_least", "float_at_most", "noise_epsilon", "noise_delta",
           "laplace_event", "discrete_gaussian_event"]

FORMAT = "bayesdp-ledger-sqlite"
VERSION = 1
APPLICATION_ID = 0x62647031          # "bdp1"
LOCK_TIMEOUT_S = 120.0
ZERO_HASH = "0" * 64
#: rows at the end of the ledger that every release re-verifies, besides those written since the last verified one
TAIL_ROWS = 64
SQLITE_MAGIC = b"SQLite format 3\x00"
KINDS = ("header", "reserve", "commit", "abort", "cancel", "resolve")

_SCHEMA = """
CREATE TABLE entries(seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, entry INTEGER NOT NULL, body TEXT NOT NULL,
                     prev TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX entries_by_entry ON entries(entry);
CREATE TABLE verified(one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL,
                      header TEXT NOT NULL);
CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'ledger rows are immutable'); END;
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'ledger rows are immutable'); END;
"""


def _kill_point(name: str) -> None:
    """Tests only: ``BAYESDP_TEST_KILL_AT=name`` makes the process SIGKILL itself at this write point."""
    if os.environ.get("BAYESDP_TEST_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _canon(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def row_hash(prev: str, seq: int, kind: str, entry: int, body: str) -> str:
    """SHA-256 of one row: ``prev|seq|kind|entry|body`` (hex).

    Args:
        prev: the previous row's hash.
        seq: the row's position.
        kind: its kind.
        entry: the entry it concerns.
        body: its canonical JSON body.

    Returns:
        The hex digest.

    Examples:
        >>> len(row_hash("0" * 64, 0, "header", 0, "{}"))
        64
    """
    return hashlib.sha256(f"{prev}|{seq}|{kind}|{entry}|{body}".encode("utf-8")).hexdigest()


@exact
def _state_add(st: dict, e: Decimal, d: Decimal, sign: int) -> dict:
    return {"charged": st["charged"] + sign, "epsilon": show(Decimal(st["epsilon"]) + sign * e),
            "delta": show(Decimal(st["delta"]) + sign * d)}


_STATE0 = {"charged": 0, "epsilon": "0", "delta": "0"}


class _Replay:
    """Checks rows in order and rebuilds the entries (``track``) and the running state."""

    def __init__(self, path: Path, prev: str, state: dict, lookup=None, track: bool = True):
        self.path, self.prev, self.state, self.lookup, self.track = path, prev, state, lookup, track
        self.entries: dict[int, Entry] = {}
        self.reserves: dict[int, Entry] = {}
        self.secret: dict[int, str] = {}
        self.outcomes: dict[int, list[str]] = {}
        self.cancelled = 0
        self.last_seq = -1
        self.header: dict | None = None

    def bad(self, seq: int, what: str) -> BudgetError:
        return _tamper(self.path, f"row {seq}: {what}")

    def _history(self, entry: int) -> tuple[Entry | None, str | None, list[str]]:
        if entry in self.reserves:
            return self.reserves[entry], self.secret[entry], self.outcomes.get(entry, [])
        if self.lookup is None:
            return None, None, []
        return self.lookup(entry)

    def feed(self, seq: int, kind: str, entry: int, body: str, prev: str, h: str) -> None:
        if seq != self.last_seq + 1:
            raise self.bad(seq, f"follows row {self.last_seq} (rows missing)")
        if prev != self.prev:
            raise self.bad(seq, "does not chain to the row before it (prev hash differs)")
        if row_hash(prev, seq, kind, entry, body) != h:
            raise self.bad(seq, "its hash does not match its content (edited)")
        try:
            b = json.loads(body)
        except ValueError:
            raise self.bad(seq, "its body is not JSON") from None
        if not isinstance(b, dict) or _canon(b) != body:
            raise self.bad(seq, "its body is not canonical JSON")
        if kind == "header":
            if seq != 0:
                raise self.bad(seq, "a second header")
            self._header(seq, b)
        elif seq == 0:
            raise self.bad(seq, "the first row is not the header")
        else:
            self._event(seq, kind, entry, b)
        if b.get("state") != self.state:
            raise self.bad(seq, f"its running totals {b.get('state')} differ from the rows before ({self.state})")
        self.prev, self.last_seq = h, seq

    def _header(self, seq: int, b: dict) -> None:
        if b.get("format") != FORMAT or b.get("version") != VERSION:
            raise self.bad(seq, f"not a {FORMAT} v{VERSION} header")
        try:
            _budget(b["budget"]["epsilon"], b["budget"]["delta"])
        except (KeyError, TypeError, BudgetError):
            raise self.bad(seq, "malformed budget") from None
        self.header = b

    def _event(self, seq: int, kind: str, entry: int, b: dict) -> None:
        if kind == "reserve":
            if entry != seq:
                raise self.bad(seq, f"a reserve must have entry = seq, not {entry}")
            try:
                e, d = Decimal(b["epsilon"]), Decimal(b["delta"])
                ev = event_from_json(b["event"])
                if not (e.is_finite() and d.is_finite() and e > 0 and 0 <= d < 1):
                    raise ValueError
            except (KeyError, TypeError, ValueError, ArithmeticError, BudgetError):
                raise self.bad(seq, "malformed reserve") from None
            why = consistency_problem(e, d, None, ev)
            if why:
                raise self.bad(seq, f"entry {seq} is inconsistent: {why}")
            self.state = _state_add(self.state, e, d, 1)
            self.reserves[seq] = Entry(seq, e, d, ev)
            if self.track:
                self.entries[seq] = Entry(seq, e, d, ev, str(b.get("mechanism", "")), str(b.get("source", "")),
                                          str(b.get("what", "")), "pending", b.get("time"), str(b.get("admitted_by")))
            self.secret[seq] = b.get("secret_hash", "")
            self.outcomes[seq] = []
            return
        if kind not in KINDS:
            raise self.bad(seq, f"unknown kind {kind!r}")
        res, secret_hash, outs = self._history(entry)
        if res is None and secret_hash is None:
            raise self.bad(seq, f"{kind} of entry {entry}, which has no reserve row before it")
        if kind == "cancel":
            if outs:
                raise self.bad(seq, f"cancel of entry {entry} after its {outs[-1]}")
            if hashlib.sha256(str(b.get("secret", "")).encode()).hexdigest() != secret_hash:
                raise self.bad(seq, f"cancel of entry {entry} does not reveal its reservation's secret (forged)")
            self.state = _state_add(self.state, res.epsilon, res.delta, -1)
            self.cancelled += 1
            self.entries.pop(entry, None)
        elif kind == "resolve":
            if outs:
                raise self.bad(seq, f"resolve of entry {entry} after its {outs[-1]}")
        elif any(o in ("commit", "abort", "cancel") for o in outs):
            raise self.bad(seq, f"{kind} of entry {entry} after its {outs[-1]}")
        elif kind == "commit":
            why = consistency_problem(res.epsilon, res.delta, None, res.event, b.get("released"))
            if why:
                raise self.bad(seq, f"entry {entry} is inconsistent: {why}")
        self.outcomes.setdefault(entry, []).append(kind)
        if self.track and entry in self.entries:
            en = self.entries[entry]
            status = {"commit": "committed", "abort": "aborted", "resolve": "resolved"}[kind] \
                if kind != "cancel" else en.status
            self.entries[entry] = Entry(en.id, en.epsilon, en.delta, en.event, en.mechanism, en.source, en.what,
                                        status, en.time, en.admitted_by,
                                        b.get("released") if kind == "commit" else en.released,
                                        str(b.get("note", b.get("reason", en.note)) or ""))


def _tamper(path: Path, what: str) -> BudgetError:
    return BudgetError(f"ledger {path}: {what}; the file was edited, truncated or damaged (tamper check failed; "
                       "it was left unchanged): restore it from a copy")


def _io(path: Path, e: BaseException, what: str) -> BudgetError:
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    return BudgetError(f"ledger {path}: cannot {what} ({msg}); check the disk and the file's permissions")


class Ledger(_Budgeted):
    """A privacy budget ledger file: the :class:`~bayesdp.budget.accountant.Accountant` protocol on SQLite.

    Use :meth:`open` (creates it with ``budget=``), then :meth:`reserve` for each release or :meth:`spend`.

    Args:
        path: an existing ledger file (any name of it: symlinks resolve to one file).

    Raises:
        BudgetError: a missing file, a file with several hard links, an old journal, or not a ledger.

    Examples:
        >>> import os, tempfile
        >>> led = Ledger.open(os.path.join(tempfile.mkdtemp(), "ledger.db"), budget=1.0, dataset="trial")
        >>> _ = led.spend((0.25, 0.0), what="a count released elsewhere")
        >>> led.remaining()
        {'epsilon': 0.75, 'delta': 0.0}
    """

    persistent = True

    def __init__(self, path: str | os.PathLike):
        self.given = Path(path)
        self.path = Path(os.path.realpath(path))
        self._check_file()
        with self._connect() as con:
            row = con.execute("SELECT body FROM entries WHERE seq = 0").fetchone()
        if row is None:
            raise _tamper(self.path, "no header row")
        try:
            h = json.loads(row[0])
            self.budget_epsilon, self.budget_delta = _budget(h["budget"]["epsilon"], h["budget"]["delta"])
        except (ValueError, KeyError, TypeError, BudgetError):
            raise _tamper(self.path, "malformed header") from None
        self.dataset = h.get("dataset")

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # -- files -------------------------------------------------------------
    def _check_file(self) -> None:
        p = self.path
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise BudgetError(f"ledger {self.given} does not exist; check the path, or create it with a budget "
                              "(`bayesdp ledger create FILE --budget E`, or Ledger.open(path, budget=E))") from None
        except OSError as e:
            raise _io(p, e, "read it") from None
        if st.st_nlink > 1:
            raise BudgetError(f"ledger {p} has {st.st_nlink} hard links; a ledger must have one name (other names "
                              "would take other locks): remove the extra links, use a symlink instead")
        try:
            with open(p, "rb") as f:
                head = f.read(4096)
        except OSError as e:
            raise _io(p, e, "read it") from None
        if head[:16] != SQLITE_MAGIC:
            # an earlier bayesdp's journal: JSON lines whose first names the format ("bayesdp-ledger...")
            if head[:1] == b"{" and b'"bayesdp-ledger' in head.split(b"\n", 1)[0]:
                raise BudgetError(f"ledger {p} is a JSON journal of an earlier bayesdp; convert it once with "
                                  f"`bayesdp ledger import {p} NEW.db` and use NEW.db")
            raise BudgetError(f"ledger {p} is not a bayesdp ledger (not an SQLite file); check the path")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            con = sqlite3.connect(str(self.path), timeout=LOCK_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as e:
            raise _io(self.path, e, "open it") from None
        try:
            try:
                con.execute("PRAGMA journal_mode=DELETE")
                con.execute("PRAGMA synchronous=FULL")
                if con.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                    raise BudgetError(f"ledger {self.path} is an SQLite file but not a bayesdp ledger; check the path")
            except sqlite3.DatabaseError as e:
                raise _io(self.path, e, "read it") from None
            yield con
        finally:
            con.close()

    @classmethod
    def open(cls, path: str | os.PathLike, budget: Any = None, budget_delta: Any = None,
             dataset: str | None = None) -> "Ledger":
        """Open a ledger, or create it when ``budget`` is given and the file does not exist.

        Budgets are decimals (a float at its shortest decimal).  An existing ledger keeps its budget: a different
        ``budget`` (or ``budget_delta`` when given) or ``dataset`` is refused.

        Args:
            path: the ledger file.
            budget: the budget's epsilon (creates the ledger; checked against an existing one).
            budget_delta: the budget's delta (default 0 at creation).
            dataset: the dataset label (recorded at creation, checked after).

        Returns:
            The :class:`Ledger`.

        Raises:
            BudgetError: a bad budget, a missing directory, a missing file without a budget, a budget or dataset
                that differs from the existing ledger's, a file that cannot be written, or a damaged file.
        """
        real = Path(os.path.realpath(path))
        if budget is not None:
            E, D = _budget(budget, budget_delta)
            if not os.path.lexists(real):
                _create(real, E, D, dataset)
        led = cls(path)
        if budget is not None and (led.budget_epsilon != E or (budget_delta is not None and led.budget_delta != D)):
            raise BudgetError(f"budget = {budget!r} (budget_delta {budget_delta!r}) differs from the budget of "
                              f"ledger {led.path} (epsilon {show(led.budget_epsilon)}, delta {show(led.budget_delta)});"
                              " a ledger's budget cannot be changed: drop --budget")
        if dataset is not None and led.dataset not in (None, dataset):
            raise BudgetError(f"ledger {led.path} belongs to dataset {led.dataset!r}, not {dataset!r}; use that "
                              "dataset's ledger")
        return led

    # -- reading -----------------------------------------------------------
    def _replay(self, con: sqlite3.Connection) -> _Replay:
        rp = _Replay(self.path, ZERO_HASH, dict(_STATE0))
        for row in con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries ORDER BY seq"):
            rp.feed(*row)
        if rp.header is None:
            raise _tamper(self.path, "no header row")
        return rp

    def _lookup(self, con: sqlite3.Connection, before: int):
        def lookup(entry: int):
            rows = con.execute("SELECT seq, kind, body FROM entries WHERE entry = ? AND seq < ? ORDER BY seq",
                               (entry, before)).fetchall()
            if not rows or rows[0][1] != "reserve":
                return None, None, []
            b = json.loads(rows[0][2])
            en = Entry(entry, Decimal(b["epsilon"]), Decimal(b["delta"]), event_from_json(b["event"]))
            return en, b.get("secret_hash", ""), [k for _, k, _ in rows[1:]]
        return lookup

    def _verify_new(self, con: sqlite3.Connection) -> tuple[int, str, dict]:
        """Verify, inside the caller's transaction, the header, the rows after the last verified one and the last
        :data:`TAIL_ROWS` rows (constant cost); (seq, hash, state) of the last row."""
        v = con.execute("SELECT seq, hash, header FROM verified WHERE one = 1").fetchone()
        hdr = con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries WHERE seq = 0").fetchone()
        last = con.execute("SELECT max(seq) FROM entries").fetchone()[0]
        if v is None or hdr is None or last is None:
            raise _tamper(self.path, "the verified head or the header is missing")
        if hdr[5] != v[2] or row_hash(hdr[4], hdr[0], hdr[1], hdr[2], hdr[3]) != hdr[5]:
            raise _tamper(self.path, "the header differs from the one verified")
        start = max(0, min(int(v[0]), last - TAIL_ROWS))
        if start == 0:
            rp = _Replay(self.path, ZERO_HASH, dict(_STATE0), track=False)
            first = -1
        else:
            a = con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries WHERE seq = ?", (start,)).fetchone()
            try:
                st = json.loads(a[3])["state"]
                ok = a[5] == row_hash(a[4], *a[:4]) and set(st) == set(_STATE0) and isinstance(st["charged"], int) \
                    and all(Decimal(st[k]).is_finite() for k in ("epsilon", "delta"))
            except (TypeError, ValueError, KeyError, ArithmeticError):
                ok = False
            if not ok:
                raise _tamper(self.path, f"row {start}: its hash or running totals are malformed")
            rp = _Replay(self.path, a[5], st, track=False)
            rp.last_seq = first = start
        rows = con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries WHERE seq > ? ORDER BY seq",
                           (first,)).fetchall()
        for row in rows:
            rp.lookup = self._lookup(con, row[0])
            rp.feed(*row)
        at = con.execute("SELECT hash FROM entries WHERE seq = ?", (v[0],)).fetchone()
        if at is None or at[0] != v[1]:
            raise _tamper(self.path, f"row {v[0]}, the last verified, is missing or changed")
        return rp.last_seq, rp.prev, rp.state

    def _charged_rows(self, con: sqlite3.Connection) -> list[Entry]:
        """Charged entries, read without re-verifying (the caller verified them)."""
        out: dict[int, Entry] = {}
        for seq, kind, entry, body in con.execute("SELECT seq, kind, entry, body FROM entries WHERE kind IN "
                                                  "('reserve', 'cancel') ORDER BY seq"):
            if kind == "reserve":
                b = json.loads(body)
                out[seq] = Entry(seq, Decimal(b["epsilon"]), Decimal(b["delta"]), event_from_json(b["event"]))
            else:
                out.pop(entry, None)
        return list(out.values())

    def _charged(self) -> list[Entry]:
        with self._connect() as con:
            return [e for e in self._replay(con).entries.values()]

    @property
    def entries(self) -> list[Entry]:
        """Every charged entry (the whole file verified).

        Returns:
            The entries, oldest first.
        """
        return self._charged()

    def summary(self) -> dict:
        """Budget, spent, remaining, every entry, pending entries and the head; the whole file is verified.

        Returns:
            The summary (``budget``, ``spent``, ``remaining_budget``, ``entries``, ``pending``, ``head``, ...).

        Raises:
            BudgetError: a damaged or tampered file.
        """
        with self._connect() as con:
            rp = self._replay(con)
        return self._full_summary(rp)

    def _full_summary(self, rp: _Replay) -> dict:
        entries = list(rp.entries.values())
        c = compose([(e.epsilon, e.delta, e.event) for e in entries], self.budget_epsilon, self.budget_delta)
        s = self._summary(entries, c)
        s.update({"ledger": str(self.path), "path": str(self.path), "format": f"{FORMAT} v{VERSION}",
                  "dataset": rp.header.get("dataset"), "cancelled": rp.cancelled,
                  "head": {"seq": rp.last_seq, "sha256": rp.prev}, "imported_from": rp.header.get("imported_from")})
        s["warnings"] = [] if not s["pending"] else [
            f"{len(s['pending'])} pending entr{'y' if len(s['pending']) == 1 else 'ies'} "
            f"({', '.join(map(str, s['pending'][:10]))}{' ...' if len(s['pending']) > 10 else ''}): charged; a "
            "crash (or a release still running) left their outcome unknown: `bayesdp ledger resolve` marks them spent"]
        return s

    def verify(self, head: str | None = None) -> dict:
        """Verify every row; with ``head`` (a hash printed earlier by a release, ``show`` or ``verify`` and kept
        elsewhere) also require that row to be in the chain: detects a rollback to an older copy and a rewritten
        chain.  Records the verified head.

        Args:
            head: a 64-digit hex hash, or None.

        Returns:
            The summary (:meth:`summary`).

        Raises:
            BudgetError: a malformed head, a damaged or tampered file, or a head no longer in the chain.
        """
        h = None
        if head is not None:
            h = head.strip().lower()
            if not re.fullmatch(r"[0-9a-f]{64}", h):
                raise BudgetError(f"--head = {head!r} must be a 64-digit sha256 printed by a release or `bayesdp "
                                  "ledger show`")
        with self._connect() as con:
            rp = self._replay(con)
            if h is not None and con.execute("SELECT 1 FROM entries WHERE hash = ?", (h,)).fetchone() is None:
                raise _tamper(self.path, f"the anchored head {h[:16]}... is not in the chain (rows were removed, the "
                                         "file was rolled back to an older copy, or the chain was rewritten)")
        return self._full_summary(rp)

    def pending(self) -> list[dict]:
        """Entries whose reserve has no outcome (a crash, or a release still running); they are charged.

        Returns:
            The pending entries as dicts.
        """
        return [e.as_dict() for e in self._charged() if e.status == "pending"]

    # -- writing -----------------------------------------------------------
    @contextlib.contextmanager
    def _write(self, con: sqlite3.Connection, what: str):
        """One ``BEGIN IMMEDIATE`` transaction: yields (append, seq, hash, state) after verifying the new rows."""
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise _io(self.path, e, f"lock it to {what}") from None
        try:
            seq, h, state = self._verify_new(con)
            cur = {"seq": seq, "hash": h, "state": state}

            def append(kind: str, entry: int, body: dict) -> dict:
                b = _canon({**body, "state": cur["state"] if "state" not in body else body["state"]})
                s = cur["seq"] + 1
                hh = row_hash(cur["hash"], s, kind, entry, b)
                con.execute("INSERT INTO entries(seq, kind, entry, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)",
                            (s, kind, entry, b, cur["hash"], hh))
                con.execute("UPDATE verified SET seq = ?, hash = ? WHERE one = 1", (s, hh))
                cur.update(seq=s, hash=hh, state=json.loads(b)["state"])
                return cur
            yield append, cur
            _kill_point(f"{what}-before-commit")
            con.execute("COMMIT")
        except BaseException as e:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise _io(self.path, e, what) from None
            raise

    @contextlib.contextmanager
    def reserve(self, epsilon: Any, delta: Any, mechanism: str, source: str, curve=None, what: str = "",
                event=None) -> Iterator[Reservation]:
        """Two-phase spend: the ``reserve`` row is committed before the block runs (noise is drawn inside it),
        its outcome is a new row after.

        Inside the block call ``res.mark_drawn()`` before drawing noise, calibrate the noise to
        ``res.noise_epsilon`` and call ``res.commit(released)`` after.  If the block raises before
        ``mark_drawn`` the entry is cancelled (refunded); after it, it stays charged (``abort``).

        Args:
            epsilon: the charge's epsilon (decimal; a float at its shortest decimal).
            delta: its delta.
            mechanism: the mechanism's label.
            source: the certificate's source.
            curve: its privacy curve.
            what: what is released, in words.
            event: the DP event (default: the curve's, else the (epsilon, delta) pair).

        Returns:
            A context manager yielding the :class:`~bayesdp.budget.accountant.Reservation`.

        Raises:
            BudgetError: over budget, an event costing more than the charge, a damaged file, or a write that
                failed (nothing charged when the reserve row could not be written).
        """
        e, d = checked_charge(epsilon, delta)
        ev = reserved_event(e, d, curve, event)
        secret = secrets.token_hex(16)
        with self._connect() as con:
            with self._write(con, "reserve") as (append, cur):
                charged = self._charged_rows(con) if self._needs_composition(cur["state"], e, d) else None
                rule = self._admit_state(cur["state"], charged, e, d, ev)
                append("reserve", cur["seq"] + 1, {
                    "epsilon": show(e), "delta": show(d), "mechanism": str(mechanism), "source": str(source),
                    "what": str(what), "event": ev.to_json(), "admitted_by": rule, "time": now(),
                    "secret_hash": hashlib.sha256(secret.encode()).hexdigest(),
                    "state": _state_add(cur["state"], e, d, 1)})
                entry = cur["seq"]
            _kill_point("reserve-committed")
            res = Reservation(entry, e, d, noise_epsilon(e))
            try:
                yield res
            except BaseException as exc:
                self._outcome(con, entry, e, d, ev, "abort" if res.drawn else "cancel", secret,
                              reason=f"{type(exc).__name__} after noise was drawn")
                raise
            if res.released is not None:
                why = consistency_problem(e, d, None, ev, res.released)
                if why:
                    self._outcome(con, entry, e, d, ev, "abort", secret, reason=f"inconsistent: {why}")
                    raise BudgetError(f"release {entry} not returned: {why}; it stays charged as aborted (a bug: "
                                      "report it)")
                cur2 = self._outcome(con, entry, e, d, ev, "commit", secret, released=res.released)
            else:
                cur2 = self._outcome(con, entry, e, d, ev, "abort" if res.drawn else "cancel", secret,
                                     reason="no values committed")
            res.head = {"seq": cur2["seq"], "sha256": cur2["hash"]}
            res.summary = self._fast_summary(con, cur2["state"])
            res.summary["head"] = res.head

    def _outcome(self, con, entry: int, e: Decimal, d: Decimal, ev, kind: str, secret: str, **body) -> dict:
        body = {k: v for k, v in body.items() if k == "released" or kind != "commit"}
        try:
            with self._write(con, "commit" if kind == "commit" else "outcome") as (append, cur):
                prior = [k for (k,) in con.execute("SELECT kind FROM entries WHERE entry = ? AND seq > ?",
                                                    (entry, entry))]
                if kind == "cancel" and prior:
                    # resolved meanwhile (`bayesdp ledger resolve` saw it pending): it stays charged
                    kind, body = "abort", {"reason": "ended before the draw, but resolved meanwhile: stays charged"}
                if kind == "cancel":
                    append("cancel", entry, {"secret": secret, "time": now(),
                                             "state": _state_add(cur["state"], e, d, -1)})
                else:
                    append(kind, entry, {**body, "time": now()})
                out = dict(cur)
            _kill_point("outcome-committed")
            return out
        except BudgetError as err:
            raise BudgetError(f"{str(err).rstrip('.')}; release {entry} stays charged (pending: `bayesdp ledger "
                              "resolve` records it)") from None

    @exact
    def _needs_composition(self, state: dict, e: Decimal, d: Decimal) -> bool:
        return not (Decimal(state["epsilon"]) + e <= self.budget_epsilon
                    and Decimal(state["delta"]) + d <= self.budget_delta) and self.budget_delta > 0

    @exact
    def _admit_state(self, state: dict, charged: list[Entry] | None, e: Decimal, d: Decimal, ev) -> str:
        if charged is None:        # the exact sums decide: constant cost
            se, sd = Decimal(state["epsilon"]) + e, Decimal(state["delta"]) + d
            if se <= self.budget_epsilon and sd <= self.budget_delta:
                return (f"basic composition: exact sums epsilon {show(se)} <= {show(self.budget_epsilon)}, "
                        f"delta {show(sd)} <= {show(self.budget_delta)}")
            left = {"epsilon": max(0.0, float(self.budget_epsilon - Decimal(state["epsilon"]))),
                    "delta": max(0.0, float(self.budget_delta - Decimal(state["delta"])))}
            raise over_budget(e, d, f" of ledger {self.path}", self.budget_epsilon, self.budget_delta, left)
        return self._admit(charged, e, d, ev, f" of ledger {self.path}")

    def _where(self) -> str:
        return f" of ledger {self.path}"

    def check(self, epsilon: Any, delta: Any = 0.0, curve=None, event=None) -> dict:
        """Raise :class:`BudgetError` if a release of (epsilon, delta) would not fit now (nothing written).

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            curve: its privacy curve.
            event: its DP event.

        Returns:
            ``{"admitted_by": rule}``.

        Raises:
            BudgetError: it does not fit, costs more than the charge, or the file is damaged.
        """
        e, d = checked_charge(epsilon, delta)
        ev = reserved_event(e, d, curve, event)
        with self._connect() as con:
            con.execute("BEGIN")
            try:
                _, _, state = self._verify_new(con)
                charged = self._charged_rows(con) if self._needs_composition(state, e, d) else None
                return {"admitted_by": self._admit_state(state, charged, e, d, ev)}
            finally:
                con.execute("ROLLBACK")

    @exact
    def _fast_summary(self, con, state: dict) -> dict:
        charged = self._charged_rows(con) if self.budget_delta > 0 else None
        if charged is None:
            c = compose([], self.budget_epsilon, self.budget_delta)

            c = replace(c, epsilon_sum=Decimal(state["epsilon"]), delta_sum=Decimal(state["delta"]),
                        count=state["charged"])
        else:
            c = compose([(x.epsilon, x.delta, x.event) for x in charged], self.budget_epsilon, self.budget_delta)
        s = self._summary([], c)
        s.update({"ledger": str(self.path), "path": str(self.path), "dataset": self.dataset})
        return s

    def resolve(self, ids: list[int] | None = None, note: str = "") -> dict:
        """Record that pending entries (all, or ``ids``) were looked at: ``resolve`` rows; they stay charged.

        Args:
            ids: the entries to resolve (default: every pending one).
            note: a note recorded with them.

        Returns:
            ``{"resolved": [ids], "summary": ...}``.

        Raises:
            BudgetError: an id that is not pending, or a damaged file.
        """
        with self._connect() as con:
            rp = self._replay(con)
            pending = [i for i, en in rp.entries.items() if en.status == "pending"]
            chosen: list[int] = []
            for i in (pending if ids is None else ids):
                if ids is not None and i not in rp.entries:
                    raise BudgetError(f"--id {i}: no entry {i} in ledger {self.path}; see `bayesdp ledger show "
                                      f"{self.path}`")
                if ids is not None and rp.entries[i].status != "pending":
                    raise BudgetError(f"--id {i}: entry {i} is {rp.entries[i].status}, not pending; only pending "
                                      "entries can be resolved")
                if i not in chosen:
                    chosen.append(i)
            if chosen:
                with self._write(con, "resolve") as (append, cur):
                    for i in chosen:
                        append("resolve", i, {"note": str(note), "time": now()})
        return {"resolved": chosen, "summary": self.summary()}


def _create(real: Path, E: Decimal, D: Decimal, dataset: str | None, imported_from: dict | None = None,
            rows: list[tuple[str, int, dict]] | None = None) -> None:
    """Write a new ledger at ``real`` through a temporary file and a hard link (never over an existing file)."""
    if not real.parent.is_dir():
        raise BudgetError(f"ledger {real}: directory {real.parent} does not exist")
    # temporaries of a creation by a killed process (``.NAME.PID.RANDOM.tmp`` and its SQLite journal)
    remove_stale_temporaries(real, re.escape(f".{real.name}.") + r"(\d+)\.[0-9a-f]+\.tmp(?:-journal)?")
    tmp = real.with_name(f".{real.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        con = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("PRAGMA synchronous=FULL")
            con.execute(f"PRAGMA application_id={APPLICATION_ID}")
            con.executescript(_SCHEMA)
            con.execute("BEGIN IMMEDIATE")
            header = {"format": FORMAT, "version": VERSION, "dataset": dataset, "created": now(),
                      "budget": {"epsilon": show(E), "delta": show(D)}, "imported_from": imported_from,
                      "state": dict(_STATE0)}
            prev, seq = ZERO_HASH, 0
            body = _canon(header)
            h0 = h = row_hash(prev, 0, "header", 0, body)
            con.execute("INSERT INTO entries VALUES (0, 'header', 0, ?, ?, ?)", (body, prev, h))
            for kind, entry, b in rows or []:
                seq += 1
                prev = h
                body = _canon(b)
                h = row_hash(prev, seq, kind, entry, body)
                con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", (seq, kind, entry, body, prev, h))
            con.execute("INSERT INTO verified VALUES (1, ?, ?, ?)", (seq, h, h0))
            con.execute("COMMIT")
        finally:
            con.close()
        _kill_point("create-before-link")
        os.link(tmp, real)
    except FileExistsError:
        pass                                      # created meanwhile by another process: open that one
    except (OSError, sqlite3.Error) as e:
        raise _io(real, e, "create it") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        with contextlib.suppress(OSError):
            os.unlink(str(tmp) + "-journal")
    with contextlib.suppress(OSError):
        fsync(real.parent)
