"""Command-line interface: a thin layer over the library.

Every command turns a [`bayesdp.errors.BayesDPError`][bayesdp.errors.BayesDPError] (and argparse's own
errors) into one line on stderr and exit status 2; it never prints a traceback
or a partial certificate on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Callable, Sequence

from . import jax_cache as _jax_cache
from .errors import BayesDPError, clip_advice
from . import commands
from ._version import __version__
import importlib
import pkgutil

__all__ = ["main", "build_parser", "OneLineParser", "UsageError", "command_modules"]


def command_modules() -> list[str]:
    """Every module of ``bayesdp.commands``: each has ``add_parser(subparsers)`` setting ``func``.

    Returns:
        the dotted module names, sorted.

    Examples:
        >>> "bayesdp.commands.bound" in command_modules()
        True
    """
    return [f"bayesdp.commands.{m.name}" for m in sorted(pkgutil.iter_modules(commands.__path__),
                                                          key=lambda m: m.name)
            if not m.name.startswith("_")]


class UsageError(Exception):
    """Raised by the parser instead of printing usage and exiting.

    [`main`][bayesdp.cli.main] prints it as one line and returns 2.

    Examples:
        >>> try:
        ...     build_parser().parse_args(["bound", "ula-path", "--grad-diff", "1"])
        ... except UsageError as e:
        ...     print(e)
        bayesdp bound ula-path: one of the arguments --delta --epsilon is required
    """


class OneLineParser(argparse.ArgumentParser):
    """argparse parser whose errors are one line (no usage dump), exit status 2.

    Takes the arguments of ``argparse.ArgumentParser``.

    Examples:
        >>> p = OneLineParser(prog="demo")
        >>> _ = p.add_argument("--n", type=int)
        >>> p.parse_args(["--n", "x"])
        Traceback (most recent call last):
        ...
        bayesdp.cli.UsageError: demo: argument --n: invalid int value: 'x'
    """

    def error(self, message: str):  # noqa: D401 - argparse API
        """Raise [`UsageError`][bayesdp.cli.UsageError] with ``"{prog}: {message}"`` (argparse calls this on bad
        arguments).

        Args:
            message: argparse's message.

        Raises:
            UsageError: always.

        Examples:
            >>> OneLineParser(prog="demo").error("bad")
            Traceback (most recent call last):
            ...
            bayesdp.cli.UsageError: demo: bad
        """
        raise UsageError(f"{self.prog}: {message}")


def _number(kind: type, what: str, ok: Callable[[float], bool]) -> Callable[[str], object]:
    def convert(text: str):
        try:
            x = float(text)
        except ValueError:
            x = math.nan
        if not ok(x):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return kind(x)
    return convert


#: argparse ``type=`` converters whose errors are one line (NaN and non-integers refused)
ARG_TYPES: dict[type, Callable[[str], object]] = {
    float: _number(float, "a number", lambda x: not math.isnan(x)),
    int: _number(int, "an integer", lambda x: math.isfinite(x) and x == int(x))}


def build_parser() -> OneLineParser:
    """The ``bayesdp`` argument parser with every sub-command of [`command_modules`][bayesdp.cli.command_modules].

    Returns:
        a [`OneLineParser`][bayesdp.cli.OneLineParser]; ``parse_args`` gives a namespace whose ``func(args)`` runs
            the command.

    Examples:
        >>> args = build_parser().parse_args(["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.01",
        ...                                   "--num-steps", "100", "--delta", "1e-5"])
        >>> args.command, args.mechanism, args.step_size
        ('bound', 'ula-path', 0.01)
    """

    parser = OneLineParser(prog="bayesdp", description="Private Bayesian inference with certified DP.")

    parser.add_argument("--version", action="version", version=f"bayesdp {__version__}")
    _jax_cache.add_flag(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for mod_name in command_modules():
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def emit_json(obj) -> None:
    """Print ``obj`` as indented JSON (non-finite numbers refused; unknown objects as ``str``).

    Args:
        obj: a JSON-ready object.

    Examples:
        >>> emit_json({"epsilon": 1.5})
        {
          "epsilon": 1.5
        }
    """
    print(json.dumps(obj, indent=2, allow_nan=False, default=str))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bayesdp`` with the arguments ``argv``; the console script's entry point.

    Bad input (a [`BayesDPError`][bayesdp.errors.BayesDPError] or a usage error) prints one line
    ``error: ...`` on stderr and returns 2: never a traceback, never a partial certificate.

    Args:
        argv: the arguments after ``bayesdp`` (default ``sys.argv[1:]``).

    Returns:
        the exit status: 0 on success, 2 on bad input, 130 when interrupted.

    Examples:
        >>> main(["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.01", "--num-steps", "100",
        ...       "--delta", "1e-5"])   # doctest: +ELLIPSIS
        ula-path: privacy at delta = 1e-05
        ...
        best (GDP composition of the path (Dong-Roth-Su Cor. 3.3)): epsilon = 2.94323   (* marks the best route)
        0
        >>> main(["bound", "ula-path", "--grad-diff", "1", "--step-size", "-0.01", "--num-steps", "100",
        ...       "--delta", "1e-5"])   # stderr: error: step_size = -0.01 must be > 0
        2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        _jax_cache.from_cli(args)
        with clip_advice(""):   # a command with a clipping option (certify) names it itself
            return int(args.func(args) or 0)
    except (UsageError, BayesDPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:     # the operating system refused a file: one line naming it, no traceback
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"error: {where}{exc.strerror or exc} ({type(exc).__name__}); check the path, its permissions and "
              "the free space", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
