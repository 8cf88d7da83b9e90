"""``bayesdp ledger show FILE [--json]`` and ``bayesdp ledger create FILE --budget E [--delta D]``."""

from __future__ import annotations

from ..cli import ARG_TYPES, OneLineParser, emit_json


def add_parser(sub) -> None:
    p = sub.add_parser("ledger", help="privacy budget ledger: show spending, create a ledger",
                       description="Inspect or create a privacy budget ledger (one JSON file per dataset).")
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=OneLineParser)
    lsub.required = True
    s = lsub.add_parser("show", help="budget, spent, remaining and every release")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=run_show)
    c = lsub.add_parser("create", help="create a new ledger with a total budget")
    c.add_argument("file", metavar="FILE")
    c.add_argument("--budget", type=ARG_TYPES[float], required=True, help="total epsilon of the ledger")
    c.add_argument("--delta", type=ARG_TYPES[float], default=0.0, help="total delta of the ledger (default 0)")
    c.add_argument("--dataset", default=None, help="label of the dataset this ledger accounts for")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=run_create)


def _table(s: dict) -> str:
    b, sp, rem = s["budget"], s["spent"], s["remaining_budget"]
    lines = [f"ledger    {s['ledger']}", f"dataset   {s['dataset']}",
             f"budget    epsilon {b['epsilon']:.6g}   delta {b['delta']:.3g}",
             f"spent     epsilon {sp['epsilon']:.6g}   ({sp['rule']}; basic: epsilon {sp['basic']['epsilon']:.6g}, "
             f"delta {sp['basic']['delta']:.3g})",
             f"remaining epsilon {rem['epsilon']:.6g}   delta {rem['delta']:.3g}",
             f"releases  {s['num_releases']}"]
    if s["releases"]:
        lines.append("")
        lines.append(f"{'id':>4}  {'status':<9}  {'time':<25}  {'epsilon':>9}  {'delta':>9}  source / what")
        for r in s["releases"]:
            lines.append(f"{r['id']:>4}  {r['status']:<9}  {r['time']:<25}  {r['epsilon']:>9.4g}  {r['delta']:>9.3g}  "
                         f"{r['source']} / {r.get('what', '')}")
    return "\n".join(lines)


def run_show(args) -> int:
    from ..release.ledger import Ledger

    s = Ledger(args.file).summary()
    if args.json:
        emit_json(s)
    else:
        print(_table(s))
    return 0


def run_create(args) -> int:
    from pathlib import Path

    from ..errors import BudgetError
    from ..release.ledger import Ledger

    if Path(args.file).exists():
        raise BudgetError(f"ledger {args.file} already exists; use `bayesdp ledger show {args.file}`")
    s = Ledger.open(args.file, budget_epsilon=args.budget, budget_delta=args.delta, dataset=args.dataset).summary()
    if args.json:
        emit_json(s)
    else:
        print(_table(s))
    return 0
