"""One exception hierarchy for bayesdp.

Every message is one line that names the parameter or model site, the value
given, the condition that fails and what the user can do.  The CLI turns any
[`BayesDPError`][bayesdp.errors.BayesDPError] into that line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any

__all__ = ["BayesDPError", "AssumptionError", "DomainError", "ModelError", "BudgetError", "require", "check_finite",
           "positive", "nonnegative", "positive_int", "probability_open", "clip_advice", "CLIP_ADVICE"]


class BayesDPError(ValueError):
    """Base class of every error bayesdp raises on bad input.

    Its message is one line: parameter or site, value, violated condition, what to do.  The CLI
    prints it and exits with status 2.

    Examples:
        >>> import bayesdp
        >>> try:
        ...     bayesdp.bound("ula-path", grad_diff=1.0, step_size=-0.1, num_steps=10, delta=1e-5)
        ... except bayesdp.BayesDPError as e:
        ...     print(type(e).__name__)
        AssumptionError
    """


class AssumptionError(BayesDPError):
    """A hypothesis of a theorem (or of the library) does not hold.

    Raised by every theorem, curve and mechanism on a constant out of range: the message names the
    parameter, its value, the condition and the fix.

    Examples:
        >>> from bayesdp.theorems.girsanov import theorem_5_4
        >>> theorem_5_4(grad_diff=1.0, step_size=0.1, num_steps=0)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: num_steps = 0 must be an integer >= 1; pass a whole number >= 1
    """


class DomainError(BayesDPError):
    """Data lie outside the declared public domain, or the domain is invalid.

    Examples:
        >>> import numpy as np
        >>> import bayesdp
        >>> domain = bayesdp.Domain(X=bayesdp.norm_bound(1.0))
        >>> try:
        ...     domain.check({"X": np.array([[3.0, 4.0]])})     # a row of norm 5 > 1
        ... except bayesdp.BayesDPError as e:
        ...     print(type(e).__name__)
        DomainError
    """


class ModelError(BayesDPError):
    """The NumPyro model cannot be analysed (unsupported or unproven site).

    Examples:
        >>> import numpyro, numpyro.distributions as dist
        >>> import bayesdp
        >>> def prior_only(X):                                   # no likelihood: nothing to certify
        ...     numpyro.sample("w", dist.Normal(0.0, 1.0))
        >>> try:
        ...     bayesdp.certify(prior_only, domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0)),
        ...                     shapes=bayesdp.Shapes(10, {"X": (2,)}))
        ... except bayesdp.BayesDPError as e:
        ...     print(type(e).__name__)
        ModelError
    """


class BudgetError(BayesDPError):
    """A release would exceed the privacy budget, or the ledger is invalid.

    Examples:
        >>> import bayesdp
        >>> acct = bayesdp.PrivacyAccountant(budget=1.0)
        >>> _ = acct.spend((0.6, 0.0))
        >>> try:
        ...     acct.spend((0.6, 0.0))                              # 0.6 + 0.6 > 1: nothing is charged
        ... except bayesdp.BudgetError as e:
        ...     print(type(e).__name__)
        BudgetError
    """


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value) if isinstance(value, str) else str(value)


def require(condition: bool, name: str, value: Any, needs: str, fix: str = "") -> None:
    """Raise [`AssumptionError`][bayesdp.errors.AssumptionError] unless ``condition`` holds.

    Args:
        condition: what must hold.
        name: the parameter, e.g. ``"step_size"``.
        value: its value (shown in the message).
        needs: the condition in words, e.g. ``"must be in (0, 2*mu/L^2) = (0, 0.5)"``.
        fix: what to do, appended after ``;``.

    Raises:
        AssumptionError: ``"{name} = {value} {needs}; {fix}"`` when ``condition`` is false.

    Examples:
        >>> require(0.7 < 0.5, "step_size", 0.7, "must be < 0.5", "pass a smaller step size")
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: step_size = 0.7 must be < 0.5; pass a smaller step size
    """
    if not condition:
        msg = f"{name} = {_fmt(value)} {needs}"
        if fix:
            msg += f"; {fix}"
        raise AssumptionError(msg)


def check_finite(name: str, value: Any) -> float:
    """``value`` as a finite float.

    Args:
        name: the parameter, shown in the message.
        value: anything ``float()`` accepts (a number or a numeric string).

    Returns:
        ``float(value)``.

    Raises:
        AssumptionError: not a number, or infinite / NaN.

    Examples:
        >>> check_finite("delta", "1e-5")
        1e-05
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AssumptionError(f"{name} = {value!r} is not a number; pass a finite real value") from None
    if not math.isfinite(x):
        raise AssumptionError(f"{name} = {x!r} must be finite; pass a finite real value")   # x: no np.float64(...)
    return x


def positive(name: str, value: Any, fix: str = "") -> float:
    """``value`` as a float > 0; otherwise [`AssumptionError`][bayesdp.errors.AssumptionError] naming ``name``
    (``fix`` appended).

    Args:
        name: the parameter, shown in the message.
        value: the value to check.
        fix: what to do, appended to the message.

    Returns:
        ``float(value)``.

    Raises:
        AssumptionError: not a finite number > 0.

    Examples:
        >>> positive("step_size", 0.01)
        0.01
    """
    x = check_finite(name, value)
    require(x > 0, name, x, "must be > 0", fix or "pass a positive number")
    return x


def nonnegative(name: str, value: Any, fix: str = "") -> float:
    """``value`` as a float >= 0; otherwise [`AssumptionError`][bayesdp.errors.AssumptionError] naming ``name``
    (``fix`` appended).

    Args:
        name: the parameter, shown in the message.
        value: the value to check.
        fix: what to do, appended to the message.

    Returns:
        ``float(value)``.

    Raises:
        AssumptionError: not a finite number >= 0.

    Examples:
        >>> nonnegative("grad_bound", 0)
        0.0
    """
    x = check_finite(name, value)
    require(x >= 0, name, x, "must be >= 0", fix)
    return x


def positive_int(name: str, value: Any, fix: str = "") -> int:
    """``value`` as an int >= 1 (``10.0`` is accepted, ``10.5`` and ``True`` are not).

    Args:
        name: the parameter, shown in the message.
        value: the value to check.
        fix: what to do, appended to the message.

    Returns:
        ``int(value)``.

    Raises:
        AssumptionError: not an integer >= 1.

    Examples:
        >>> positive_int("num_steps", 1e3)
        1000
    """
    fix = fix or "pass a whole number >= 1"
    if isinstance(value, bool):
        raise AssumptionError(f"{name} = {value!r} must be an integer >= 1; {fix}")
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        raise AssumptionError(f"{name} = {value!r} must be an integer >= 1; {fix}") from None
    if not math.isfinite(as_float) or as_float != int(as_float):
        raise AssumptionError(f"{name} = {value!r} must be an integer >= 1; {fix}")
    n = int(as_float)
    require(n >= 1, name, n, "must be an integer >= 1", fix)
    return n


def probability_open(name: str, value: Any, fix: str = "") -> float:
    """A value in the open interval (0, 1), e.g. delta.

    Args:
        name: the parameter, shown in the message.
        value: the value to check.
        fix: what to do, appended to the message.

    Returns:
        ``float(value)``.

    Raises:
        AssumptionError: not a finite number in (0, 1).

    Examples:
        >>> probability_open("delta", 1e-5)
        1e-05
    """
    x = check_finite(name, value)
    require(0 < x < 1, name, x, "must be in (0, 1)", fix or "pass a number strictly between 0 and 1")
    return x


#: the end of a "data outside the declared domain" message: how to clip, in the vocabulary of the caller
#: (the Python API by default; ``bayesdp certify`` names its --clip-to-domain flag, commands without a
#: clipping option name none: advice only names options the command has).  Set with :func:`clip_advice`.
CLIP_ADVICE: contextvars.ContextVar[str] = contextvars.ContextVar(
    "bayesdp_clip_advice", default=", or clip to the domain (Domain.clip(data), or PrivateMCMC.run(..., clip_to_domain=True))")


@contextlib.contextmanager
def clip_advice(text: str):
    """Within this block, domain errors end with ``text`` (e.g. ``", or clip with --clip-to-domain"``,
    or ``""`` for a command without a clipping option).

    Args:
        text: the advice, read by the domain check through [`CLIP_ADVICE`][bayesdp.errors.CLIP_ADVICE].

    Returns:
        a context manager; the previous advice is restored on exit.

    Examples:
        >>> with clip_advice(", or clip with --clip-to-domain"):
        ...     CLIP_ADVICE.get()
        ', or clip with --clip-to-domain'
        >>> CLIP_ADVICE.get()[:15]
        ', or clip to th'
    """
    token = CLIP_ADVICE.set(text)
    try:
        yield
    finally:
        CLIP_ADVICE.reset(token)
