"""``bayesdp ledger show|create|resolve|verify|import``: inspect, create, resolve, check and convert a ledger.

* ``show FILE [--json] [--all]``: budget, spent, remaining, pending entries, the last entries and the head
  hash (every entry with ``--all`` or ``--json``); the whole file is verified first.
* ``create FILE --budget E [--budget-delta D] [--dataset NAME]``: a new ledger (decimal budget).
* ``resolve FILE [--id N ...] [--note TEXT]``: record that pending entries left by a crash were looked at
  (they stay charged).
* ``verify FILE [--head SHA]``: verify every row, and that an anchored head (kept elsewhere) is in the chain.
* ``import OLD NEW``: convert a JSON-lines journal of an earlier bayesdp into a new SQLite ledger.
"""

from __future__ import annotations

from ..cli import ARG_TYPES, OneLineParser, emit_json
from ._common import emit
from ..budget.ledger import Ledger
from ..errors import BudgetError
from ..budget.journal_import import import_journal
from decimal import Decimal, InvalidOperation
from pathlib import Path
import argparse

SHOW_LAST = 20


def _decimal(text: str) -> str:
    """A budget as the user wrote it (kept exact: ``0.1`` stays 0.1)."""

    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not d.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} must be finite")
    return text.strip()


def add_parser(sub) -> None:
    p = sub.add_parser("ledger", help="privacy budget ledger: show spending, create, resolve, verify",
                       description="Inspect, create, resolve, verify or import a privacy budget ledger (one SQLite "
                                   "file per dataset: append-only rows in a hash chain; docs/ledger.md).  Keep the "
                                   "head hash that show/verify/releases print somewhere else: `verify --head` then "
                                   "detects a rollback or a rewritten file.")
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=OneLineParser)
    lsub.required = True
    s = lsub.add_parser("show", help="budget, spent, remaining, pending entries and the last releases")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print one JSON object (every entry)")
    s.add_argument("--all", action="store_true", help=f"list every entry (default: pending ones and the last "
                                                      f"{SHOW_LAST})")
    s.set_defaults(func=run_show)
    c = lsub.add_parser("create", help="create a new ledger with a total budget")
    c.add_argument("file", metavar="FILE")
    c.add_argument("--budget", type=_decimal, required=True, help="total epsilon of the ledger (a decimal)")
    c.add_argument("--budget-delta", type=_decimal, default="0", help="total delta of the ledger (default 0)")
    c.add_argument("--dataset", default=None, help="label of the dataset this ledger accounts for")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=run_create)
    r = lsub.add_parser("resolve", help="mark pending entries left by a crash as spent (they stay charged)")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--id", type=ARG_TYPES[int], action="append", dest="ids", metavar="N",
                   help="resolve only entry N (repeatable; default: every pending entry)")
    r.add_argument("--note", default="", help="why (recorded in the ledger)")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(func=run_resolve)
    v = lsub.add_parser("verify", help="verify every row (hash chain, totals, entries); with --head, an anchor")
    v.add_argument("file", metavar="FILE")
    v.add_argument("--head", metavar="SHA", default=None,
                   help="a head sha256 printed earlier (release JSON 'ledger_head', `show`, `verify`) and kept "
                        "elsewhere: it must still be in the chain (detects a rollback to an older copy)")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(func=run_verify)
    m = lsub.add_parser("import", help="convert a JSON-lines journal of an earlier bayesdp into a new ledger")
    m.add_argument("old", metavar="OLD")
    m.add_argument("new", metavar="NEW")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=run_import)


def _row(r: dict) -> str:
    time = r["time"] or "?"
    return (f"{r['id']:>6}  {r['status']:<9}  {time:<25}  {r['epsilon']:>9.4g}  {r['delta']:>9.3g}  "
            f"{r['source']} / {r.get('what', '')}")


def _table(s: dict, show_all: bool = True) -> str:
    b, sp, rem = s["budget"], s["spent"], s["remaining_budget"]
    ex = s.get("exact", {})
    lines = [f"ledger    {s['ledger']}", f"format    {s.get('format', '')}", f"dataset   {s['dataset']}",
             f"budget    epsilon {ex.get('budget', {}).get('epsilon', b['epsilon'])}   delta {b['delta']:.3g}",
             f"spent     epsilon {sp['epsilon']:.6g}   ({sp['rule']}; basic: epsilon "
             f"{ex.get('spent_basic', {}).get('epsilon', sp['basic']['epsilon'])}, delta {sp['basic']['delta']:.3g})",
             f"remaining epsilon {rem['epsilon']:.6g}   delta {rem['delta']:.3g}",
             f"releases  {s['num_releases']} charged ({len(s.get('pending', []))} pending), "
             f"{s.get('cancelled', 0)} cancelled before drawing"]
    if s.get("head"):
        lines.append(f"head      row {s['head']['seq']}  sha256 {s['head']['sha256']}  (keep it elsewhere: "
                     "`verify --head` detects a rollback)")
    for w in s.get("warnings", []):
        lines.append(f"warning   {w}")
    rel = s.get("entries", [])
    if rel:
        shown = rel if show_all else rel[-SHOW_LAST:]
        shown_ids = {r["id"] for r in shown}
        pend = [r for r in rel if r["status"] == "pending" and r["id"] not in shown_ids]
        lines.append("")
        lines.append(f"{'id':>6}  {'status':<9}  {'time':<25}  {'epsilon':>9}  {'delta':>9}  source / what")
        if pend:
            lines += [_row(r) for r in pend]
            lines.append(f"{'':>6}  ...")
        elif len(shown) < len(rel):
            lines.append(f"{'':>6}  ... {len(rel) - len(shown)} earlier entries (--all lists them)")
        lines += [_row(r) for r in shown]
    return "\n".join(lines)


def run_show(args) -> int:
    s = Ledger(args.file).summary()
    emit(args, s, lambda: _table(s, show_all=args.all))
    return 0


def run_create(args) -> int:
    if Path(args.file).exists():
        raise BudgetError(f"ledger {args.file} already exists; use `bayesdp ledger show {args.file}`")
    s = Ledger.open(args.file, budget=args.budget, budget_delta=args.budget_delta, dataset=args.dataset).summary()
    emit(args, s, lambda: _table(s))
    return 0


def run_resolve(args) -> int:
    out = Ledger(args.file).resolve(ids=args.ids, note=args.note)
    if args.json:
        emit_json(out)
    else:
        ids = out["resolved"]
        print(f"resolved {len(ids)} pending entr{'y' if len(ids) == 1 else 'ies'}"
              f"{': ' + ', '.join(map(str, ids)) if ids else ' (none was pending)'}; they stay charged")
        print(_table(out["summary"], show_all=False))
    return 0


def run_verify(args) -> int:
    s = Ledger(args.file).verify(head=args.head)
    if args.json:
        emit_json({"ok": True, "ledger": s["ledger"], "head": s["head"], "num_releases": s["num_releases"],
                   "pending": s["pending"], "warnings": s["warnings"], "anchored": args.head is not None})
    else:
        print(f"ok: {s['ledger']}: {s['head']['seq'] + 1} rows, hash chain, running totals and every entry "
              f"consistent{'; the anchored head is in the chain' if args.head else ''}; head sha256 "
              f"{s['head']['sha256']}")
        for w in s["warnings"]:
            print(f"warning: {w}")
    return 0


def run_import(args) -> int:
    s = import_journal(args.old, args.new)
    if args.json:
        emit_json(s)
    else:
        print(f"imported {args.old} into {args.new}: {s['num_releases']} charged entries "
              f"({s['imported_from']['cancelled']} cancelled before drawing, not copied); the journal's head "
              f"{s['imported_from']['head'][:16]}... is recorded in the header")
        print(_table(s, show_all=False))
    return 0
