"""One analysis per public call: the model's traced program and its proven structure, reused inside one call.

A release analyses its model several times: to choose the method, to plan it (calibration, certification), to
predict the error at other record counts (never worse than knowing nothing, docs/release.md §12), and to run it.
Every one of those analyses traces the same model with the same shapes and proves the same structure; only the
record count, the domain and the data differ.  Inside :func:`one_analysis` (opened by ``bayesdp.release``,
``bayesdp.calibrate`` and ``bayesdp.certify``), :func:`memo` keeps what does not depend on them: the
:class:`~bayesdp.analysis.tracing.Program` (traced with a SYMBOLIC record count, so the same for every count) and
its :class:`~bayesdp.analysis.structure.program.ProgramFacts` (dependence and affinity of every output, proven for
every count and every record in the domain).  The constants, the domain check of the data and every bound over
the domain are computed again by each analysis.

Nothing is kept between calls: a model may read globals that change between two calls, and the memo ends with
the call that opened it.  Keys hold the identity of the model function and of each model keyword argument (the
memo keeps them alive, so an identity is never reused by another object while it lasts), the data arguments'
per-record shapes and dtypes, and the model's name.  Outside :func:`one_analysis` nothing is memoised.

Examples:
    >>> from bayesdp.analysis.session import memo, one_analysis
    >>> calls = []
    >>> with one_analysis():
    ...     a = memo("demo", ("key",), lambda: calls.append(1) or "value")
    ...     b = memo("demo", ("key",), lambda: calls.append(1) or "value")
    >>> a, b, len(calls)
    ('value', 'value', 1)
    >>> memo("demo", ("key",), lambda: calls.append(1) or "value"), len(calls)     # outside: computed again
    ('value', 2)
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Mapping

import numpy as np

# no public names: a step of bayesdp.analysis.analyze, opened by the public calls (release, calibrate, certify)
__all__: list[str] = []

_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("bayesdp_analysis_memo", default=None)


@contextlib.contextmanager
def one_analysis() -> Iterator[None]:
    """Memoise the data-independent part of the analyses inside this block (a nested block shares the outer one's
    memo; the memo is dropped when the outermost block ends)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def memo(kind: str, key: tuple, make: Callable[[], Any], keep: tuple = ()) -> Any:
    """``make()``, or inside :func:`one_analysis` the value it returned for the same ``(kind, key)`` before.

    Args:
        kind: what is memoised (a name).
        key: a hashable key (an unhashable one is not memoised).
        make: computes the value; what it raises is raised and nothing is kept.
        keep: objects whose identity the key holds, kept alive as long as the memo.

    Returns:
        The value.
    """
    store = _MEMO.get()
    if store is None:
        return make()
    k = (kind,) + tuple(key)
    try:
        hit = store.get(k)
    except TypeError:                      # an unhashable key: not memoised
        return make()
    if hit is not None:
        return hit[0]
    value = make()
    store[k] = (value, keep)
    return value


def program_key(model: Callable, shapes: Mapping[str, tuple], dtypes: Mapping[str, Any],
                model_kwargs: Mapping[str, Any], name: str | None) -> tuple[tuple, tuple]:
    """The key of a model's traced program and the objects whose identity it holds: ``(key, keep)``."""
    kw = tuple(sorted((str(k), id(v)) for k, v in model_kwargs.items()))
    key = (id(model), tuple(sorted((str(a), tuple(int(d) for d in s)) for a, s in shapes.items())),
           tuple(sorted((str(a), np.dtype(t).str) for a, t in dtypes.items())), kw, name)
    return key, (model, tuple(model_kwargs.values()))
