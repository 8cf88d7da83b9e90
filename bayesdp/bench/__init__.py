"""Benchmarks run by ``bayesdp bench NAME [--json]``.

Each module in this package defines ``NAME`` (the sub-command), ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> object`` returning JSON-serialisable
results (a list of rows or a dict).  Benchmarks print JSON with ``--json`` and a
readable table otherwise; tests never time anything.
"""
