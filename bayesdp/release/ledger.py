"""Privacy budget ledger: one JSON file per dataset, atomic writes, an exclusive lock.

File format (``format = "bayesdp-ledger"``, ``version = 1``)::

    {"format": "bayesdp-ledger", "version": 1, "dataset": "...", "created": "...",
     "budget": {"epsilon": E, "delta": D},
     "releases": [{"id": 1, "status": "pending"|"committed"|"aborted", "time": "...",
                   "mechanism": "...", "source": "...", "epsilon": e, "delta": d,
                   "curve": null | {"kind": "approx", "epsilon": e, "delta": d}
                                  | {"kind": "gdp", "mu": mu} | {"kind": "rdp_linear", "kappa": k},
                   "what": "...", "released": {...}}]}

Every entry, whatever its status, is charged: a ``pending`` entry is written BEFORE any noise is
drawn (two-phase ``reserve -> draw -> commit``), so a process killed after drawing still has its
spend recorded.  An entry is removed only when its reservation ends with an exception before
:meth:`Reservation.mark_drawn` was called (nothing was drawn, nothing can have leaked).

Composition (docs/release.md §5):

* basic (sequential) composition: epsilons and deltas add — always available;
* curve composition: when every entry carries an RDP-capable curve (pure DP, GDP, linear RDP),
  the curves are composed with :func:`bayesdp.curves.compose` and converted at the ledger's delta.

A release is admitted iff the ledger with the new entry fits the budget by at least one of the
two rules (each is a valid bound on the total, so the smaller one is).  Sums are exact (rational
arithmetic on the stored doubles): no tolerance, no overspend by rounding.

Concurrency: ``fcntl.flock`` on ``FILE.lock`` is held from the budget check to the end of the
reservation; writes are write-temp + fsync + ``os.replace`` + directory fsync, so a reader or a
killed writer only ever sees the old or the new complete file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

from ..curves import GDP, RDP, ApproxDP, PrivacyCurve, compose
from ..errors import AssumptionError, BayesDPError, BudgetError

FORMAT = "bayesdp-ledger"
VERSION = 1
STATUSES = ("pending", "committed", "aborted")
LOCK_TIMEOUT_S = 120.0


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------
# curves <-> JSON
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


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def _bad(path: Path, what: str) -> BudgetError:
    return BudgetError(f"ledger {path}: {what}; the file is corrupt or not a bayesdp ledger (it was left unchanged)")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate(doc: Any, path: Path) -> dict:
    """Check the whole document; raise a one-line :class:`BudgetError` on any defect."""
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
    return doc


# ---------------------------------------------------------------------------
# accounting
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Spent:
    basic_epsilon: float
    basic_delta: float
    curve_epsilon: float | None   # composed curve converted at the budget delta (None: not available)
    fits_basic: bool
    fits_curve: bool

    @property
    def fits(self) -> bool:
        return self.fits_basic or self.fits_curve


def account(releases: list[dict], budget_epsilon: float, budget_delta: float) -> Spent:
    eps_sum = sum((Fraction(r["epsilon"]) for r in releases), Fraction(0))
    delta_sum = sum((Fraction(r["delta"]) for r in releases), Fraction(0))
    fits_basic = eps_sum <= Fraction(budget_epsilon) and delta_sum <= Fraction(budget_delta)
    curve_eps = None
    fits_curve = False
    if releases and budget_delta > 0:
        curves = [curve_from_json(r.get("curve")) for r in releases]
        if all(c is not None and c.has_rdp for c in curves):
            try:
                curve_eps = float(compose(curves).epsilon(budget_delta))
            except AssumptionError:
                curve_eps = None
            if curve_eps is not None and math.isfinite(curve_eps):
                fits_curve = curve_eps <= budget_epsilon
            else:
                curve_eps = None
    return Spent(basic_epsilon=float(eps_sum), basic_delta=float(delta_sum), curve_epsilon=curve_eps,
                 fits_basic=fits_basic, fits_curve=fits_curve)


def summarize(doc: dict) -> dict:
    """JSON summary shared by ``bayesdp ledger show`` and the release output."""
    E, D = doc["budget"]["epsilon"], doc["budget"]["delta"]
    sp = account(doc["releases"], E, D)
    options = []
    if sp.basic_delta <= D:
        options.append(("basic composition", sp.basic_epsilon, D - sp.basic_delta))
    if sp.curve_epsilon is not None and (not options or sp.curve_epsilon < sp.basic_epsilon * (1 - 1e-3)):
        # reported only when it improves on basic composition materially (it uses the whole budget delta)
        options.append(("curve composition (RDP/GDP)", sp.curve_epsilon, 0.0))
    if options:
        rule, spent_eps, left_delta = min(options, key=lambda o: o[1])
    else:
        rule, spent_eps, left_delta = "basic composition", sp.basic_epsilon, D - sp.basic_delta
    return {
        "ledger": doc.get("path"),
        "dataset": doc.get("dataset"),
        "budget": {"epsilon": E, "delta": D},
        "spent": {"epsilon": spent_eps, "rule": rule,
                  "basic": {"epsilon": sp.basic_epsilon, "delta": sp.basic_delta},
                  "curve_epsilon_at_budget_delta": sp.curve_epsilon},
        "remaining_budget": {"epsilon": E - spent_eps, "delta": left_delta},
        "within_budget": sp.fits or not doc["releases"],
        "num_releases": len(doc["releases"]),
        "releases": doc["releases"],
    }


# ---------------------------------------------------------------------------
# file I/O
# ---------------------------------------------------------------------------


def _atomic_write(path: Path, doc: dict) -> None:
    data = json.dumps(doc, indent=1, allow_nan=False).encode()
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
    dfd = os.open(str(path.parent), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@contextlib.contextmanager
def _locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(str(lock_path), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise BudgetError(f"ledger {path}: cannot open lock file {lock_path} ({e.strerror}); check the directory") \
            from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise BudgetError(f"ledger {path}: still locked by another release after {timeout:.0f} s; "
                                      "retry later") from None
                time.sleep(0.01)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BudgetError(f"ledger {path} does not exist; pass --budget to create it") from None
    except OSError as e:
        raise BudgetError(f"ledger {path}: cannot read ({e.strerror})") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _bad(path, "not valid JSON") from None
    return validate(doc, path)


class Reservation:
    """Handle of a pending ledger entry (see :meth:`Ledger.reserve`)."""

    def __init__(self, ledger: "Ledger", entry_id: int):
        self.ledger = ledger
        self.entry_id = entry_id
        self.drawn = False
        self.released: dict | None = None
        self.summary: dict | None = None

    def mark_drawn(self) -> None:
        """Call immediately BEFORE drawing any privacy noise: from then on the entry stays charged."""
        self.drawn = True

    def commit(self, released: dict) -> None:
        """Record what was released (written when the reservation closes)."""
        self.drawn = True
        self.released = released


class Ledger:
    """A privacy budget ledger file.  Use :meth:`open`, then :meth:`reserve` for each release."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).absolute()

    # -- opening ---------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, budget_epsilon: float | None = None, budget_delta: float | None = None,
             dataset: str | None = None) -> "Ledger":
        """Open an existing ledger, or create it when ``budget_epsilon`` is given and the file does not exist.

        An existing ledger keeps its own budget (``budget_epsilon`` is then ignored unless it differs:
        a different value is refused rather than silently dropped; ``budget_delta=None`` is not compared
        and means 0 at creation).  ``dataset``, when given, must
        match the ledger's dataset label.
        """
        led = cls(path)
        if budget_epsilon is not None:
            be = float(budget_epsilon)
            if not (math.isfinite(be) and be > 0):
                raise BudgetError(f"budget = {budget_epsilon!r} must be a positive finite epsilon")
            bd = 0.0 if budget_delta is None else float(budget_delta)
            if not (math.isfinite(bd) and 0 <= bd < 1):
                raise BudgetError(f"budget delta = {budget_delta!r} must be in [0, 1)")
        if not led.path.parent.is_dir():
            raise BudgetError(f"ledger {led.path}: directory {led.path.parent} does not exist")
        with _locked(led.path):
            if not led.path.exists():
                if budget_epsilon is None:
                    raise BudgetError(f"ledger {led.path} does not exist; pass --budget to create it")
                doc = {"format": FORMAT, "version": VERSION, "dataset": dataset, "created": _now(),
                       "budget": {"epsilon": float(budget_epsilon),
                                  "delta": 0.0 if budget_delta is None else float(budget_delta)},
                       "releases": []}
                _atomic_write(led.path, doc)
            else:
                doc = _read(led.path)
                if budget_epsilon is not None and (
                        doc["budget"]["epsilon"] != float(budget_epsilon)
                        or (budget_delta is not None and doc["budget"]["delta"] != float(budget_delta))):
                    raise BudgetError(
                        f"--budget = {budget_epsilon!r} (delta {budget_delta!r}) differs from the existing ledger's "
                        f"budget epsilon {doc['budget']['epsilon']!r} (delta {doc['budget']['delta']!r}) in "
                        f"{led.path}; a ledger's budget cannot be changed: drop --budget")
            if dataset is not None and doc.get("dataset") not in (None, dataset):
                raise BudgetError(f"ledger {led.path} belongs to dataset {doc.get('dataset')!r}, not {dataset!r}; "
                                  "use that dataset's ledger")
        return led

    def read(self) -> dict:
        """Validated content (no lock needed: files are replaced atomically)."""
        doc = _read(self.path)
        doc["path"] = str(self.path)
        return doc

    def summary(self) -> dict:
        return summarize(self.read())

    # -- spending --------------------------------------------------------
    def check(self, epsilon: float, delta: float = 0.0, curve: PrivacyCurve | None = None) -> dict:
        """Raise :class:`BudgetError` if a release of (epsilon, delta) would not fit now (no write)."""
        doc = self.read()
        self._admit(doc, epsilon, delta, curve)
        return doc

    def _admit(self, doc: dict, epsilon: float, delta: float, curve: PrivacyCurve | None) -> dict:
        e = float(epsilon)
        if not (math.isfinite(e) and e > 0):
            raise BudgetError(f"epsilon = {epsilon!r} must be > 0; pass a positive epsilon")
        d = float(delta)
        if not (math.isfinite(d) and 0 <= d < 1):
            raise BudgetError(f"delta = {delta!r} must be in [0, 1)")
        entry = {"epsilon": e, "delta": d, "curve": curve_to_json(curve)}
        E, D = doc["budget"]["epsilon"], doc["budget"]["delta"]
        sp = account(doc["releases"] + [entry], E, D)
        if not sp.fits:
            s = summarize(doc)
            left = s["remaining_budget"]
            raise BudgetError(
                f"release of epsilon = {e:.6g}, delta = {d:.3g} exceeds the budget of ledger {self.path} "
                f"(epsilon {E:.6g}, delta {D:.3g}; remaining epsilon {left['epsilon']:.6g}, delta {left['delta']:.3g}); "
                "nothing was drawn: lower epsilon or use a new budget for new data")
        return entry

    @contextlib.contextmanager
    def reserve(self, epsilon: float, delta: float, mechanism: str, source: str, curve: PrivacyCurve | None = None,
                what: str = "") -> Iterator[Reservation]:
        """Two-phase spend under the lock: check and write a ``pending`` entry, yield, then commit.

        Inside the block call ``res.mark_drawn()`` before drawing noise and ``res.commit(released)``
        after.  If the block raises before ``mark_drawn`` the entry is removed (nothing was drawn);
        after it, the entry stays charged as ``aborted``.
        """
        with _locked(self.path):
            doc = _read(self.path)
            entry = self._admit(doc, epsilon, delta, curve)
            new_id = 1 + max((r["id"] for r in doc["releases"]), default=0)
            entry.update({"id": new_id, "status": "pending", "time": _now(), "mechanism": str(mechanism),
                          "source": str(source), "what": str(what), "released": None})
            # keep key order readable
            entry = {k: entry[k] for k in ("id", "status", "time", "mechanism", "source", "epsilon", "delta",
                                           "curve", "what", "released")}
            doc["releases"].append(entry)
            _atomic_write(self.path, doc)
            res = Reservation(self, new_id)
            try:
                yield res
            except BaseException:
                doc = _read(self.path)
                if res.drawn:
                    _set_status(doc, new_id, "aborted", None)
                else:
                    doc["releases"] = [r for r in doc["releases"] if r["id"] != new_id]
                _atomic_write(self.path, doc)
                raise
            doc = _read(self.path)
            if res.released is not None:
                _set_status(doc, new_id, "committed", res.released)
            elif res.drawn:
                _set_status(doc, new_id, "aborted", None)
            else:
                doc["releases"] = [r for r in doc["releases"] if r["id"] != new_id]
            _atomic_write(self.path, doc)
            doc["path"] = str(self.path)
            res.summary = summarize(doc)


def _set_status(doc: dict, entry_id: int, status: str, released: dict | None) -> None:
    for r in doc["releases"]:
        if r["id"] == entry_id:
            r["status"] = status
            r["released"] = released
            return
