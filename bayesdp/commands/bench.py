"""``bayesdp bench NAME [options] [--json]``: speed, memory and tightness measurements."""

from __future__ import annotations

import importlib
import pkgutil

from ..cli import OneLineParser, emit_json
from .. import bench


def _bench_modules():
    for m in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            mod = importlib.import_module(f"bayesdp.bench.{m.name}")
            if hasattr(mod, "NAME") and hasattr(mod, "run"):
                yield mod


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks (speed, memory, tightness) printed as JSON",
                       description="Run a benchmark; results are measured side by side with a reference.")
    bsub = p.add_subparsers(dest="bench", metavar="NAME", parser_class=OneLineParser)
    bsub.required = True
    for mod in _bench_modules():
        bp = bsub.add_parser(mod.NAME, help=getattr(mod, "HELP", ""))
        if hasattr(mod, "add_arguments"):
            mod.add_arguments(bp)
        bp.add_argument("--json", action="store_true", help="print JSON")
        bp.set_defaults(func=_runner(mod))


def _runner(mod):
    def run(args) -> int:
        result = mod.run(args)
        if args.json:
            emit_json(result)
        elif hasattr(mod, "format_table"):
            print(mod.format_table(result))
        else:
            emit_json(result)
        return 0

    return run
