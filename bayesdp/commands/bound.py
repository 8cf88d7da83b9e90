"""``bayesdp bound MECHANISM [options] (--delta D | --epsilon E) [--json]``."""

from __future__ import annotations

import argparse

from ..cli import ARG_TYPES, OneLineParser
from ._common import emit
from ..mechanisms import MECHANISMS, bound


def add_parser(sub) -> None:
    p = sub.add_parser("bound", help="privacy calculator: every certificate for a mechanism",
                       description="Compute every certificate that applies to a mechanism and report the best.")
    msub = p.add_subparsers(dest="mechanism", metavar="MECHANISM", parser_class=OneLineParser)
    msub.required = True
    for name in sorted(MECHANISMS):
        mech = MECHANISMS[name]
        mp = msub.add_parser(name, help=mech.summary, description=mech.summary + ("\n\n" + mech.description
                             if mech.description else ""), epilog=mech.epilog or None,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        for opt in mech.options:
            if opt.is_flag:
                mp.add_argument(opt.flag, dest=opt.dest, action="store_true", help=opt.help)
            else:
                mp.add_argument(opt.flag, dest=opt.dest, type=ARG_TYPES.get(opt.type, opt.type),
                                default=None, choices=opt.choices, help=opt.help,
                                metavar=opt.dest.upper())
        q = mp.add_mutually_exclusive_group(required=True)
        q.add_argument("--delta", type=ARG_TYPES[float], help="report epsilon at this delta")
        q.add_argument("--epsilon", type=ARG_TYPES[float], help="report delta at this epsilon")
        mp.add_argument("--json", action="store_true", help="print one JSON object")
        mp.set_defaults(func=run)


def run(args) -> int:
    mech = MECHANISMS[args.mechanism]
    params = {o.dest: getattr(args, o.dest) for o in mech.options}
    params = {k: v for k, v in params.items() if v is not None and v is not False}
    report = bound(args.mechanism, delta=args.delta, epsilon=args.epsilon, **params)
    emit(args, report)
    return 0
