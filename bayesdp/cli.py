"""Command-line interface: a thin layer over the library.

Every command turns a :class:`bayesdp.errors.BayesDPError` (and argparse's own
errors) into one line on stderr and exit status 2; it never prints a traceback
or a partial certificate on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Callable, Sequence

from .errors import BayesDPError, clip_advice


def command_modules() -> list[str]:
    """Every module of :mod:`bayesdp.commands`: each has ``add_parser(subparsers)`` setting ``func``."""
    import pkgutil

    from . import commands

    return [f"bayesdp.commands.{m.name}" for m in sorted(pkgutil.iter_modules(commands.__path__),
                                                          key=lambda m: m.name)
            if not m.name.startswith("_")]


class UsageError(Exception):
    """Raised by the parser instead of printing usage and exiting."""


class OneLineParser(argparse.ArgumentParser):
    """argparse parser whose errors are one line (no usage dump), exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message}")


def _float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if math.isnan(x):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    return x


def _int(text: str) -> int:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not math.isfinite(x) or x != int(x):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(x)


ARG_TYPES: dict[type, Callable[[str], object]] = {float: _float, int: _int}


def build_parser() -> OneLineParser:
    import importlib

    parser = OneLineParser(prog="bayesdp", description="Private Bayesian inference with certified DP.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"bayesdp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for mod_name in command_modules():
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def emit_json(obj) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False, default=str))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        with clip_advice(""):   # a command with a clipping option (certify) names it itself
            return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BayesDPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
