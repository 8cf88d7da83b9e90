"""Registry of the mechanisms answered by ``bayesdp bound`` and [`bayesdp.bound`][bayesdp.mechanisms.registry.bound].

A mechanism is a name, a list of options (flag names are fixed: other tools
rely on them) and a function that turns the options into *routes*.  A route
is one theorem applied to the options; it yields a [`Certificate`][bayesdp.certificate.Certificate], or an
invalid certificate carrying the reason when a hypothesis fails.  A mechanism
refuses (raises) only when none of its *primary* routes is valid: secondary
routes (e.g. a path bound used for a final draw by data processing) are listed
but do not make an otherwise unsupported configuration acceptable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..certificate import BoundReport, Certificate, numerical_failure
from ..errors import AssumptionError, BayesDPError

__all__ = ["Option", "Route", "Mechanism", "MECHANISMS", "register", "get_mechanism", "need", "evaluate", "bound"]


@dataclass(frozen=True)
class Option:
    """One command-line option of a mechanism (also a keyword of [`bound`][bayesdp.mechanisms.registry.bound]).

    Args:
        flag: e.g. ``"--step-size"``; the keyword is [`dest`][bayesdp.mechanisms.registry.Option.dest] (``step_size``).
        help: one line for ``--help``.
        type: parses the command-line text.
        default: used when the option is not given.
        is_flag: a switch without a value.
        choices: allowed values.

    Examples:
        >>> Option("--step-size", "eta").dest
        'step_size'
    """

    flag: str
    help: str
    type: Callable[[str], Any] = float
    default: Any = None
    is_flag: bool = False
    choices: Sequence[str] | None = None

    @property
    def dest(self) -> str:
        """The keyword name: the flag without dashes, ``-`` -> ``_``.

        Examples:
            >>> Option("--inverse-temperature", "beta").dest
            'inverse_temperature'
        """
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Route:
    """One theorem for a mechanism: ``build()`` returns its [`Certificate`][bayesdp.certificate.Certificate] or raises
    [`BayesDPError`][bayesdp.errors.BayesDPError] when a hypothesis fails.

    Only *primary* routes can make a configuration acceptable (see the module docstring);
    ``certified=False`` marks estimates.

    Args:
        source: the theorem's label, shown for an invalid route too.
        build: a function of no arguments returning the certificate.
        primary: whether a valid certificate of this route makes the configuration acceptable.
        certified: ``False`` for estimates (never chosen as best).

    Examples:
        >>> from bayesdp.theorems.girsanov import theorem_5_4
        >>> route = Route("004 Theorem 5.4", lambda: theorem_5_4(grad_diff=1.0, step_size=0.01, num_steps=100))
        >>> route.build().constants          # C5 = 1 * 100 * 0.01, rounded up (the double 0.01 is above 1/100)
        {'C5': 1.0000000000000002}
    """

    source: str
    build: Callable[[], Certificate]
    primary: bool = True
    certified: bool = True


@dataclass(frozen=True)
class Mechanism:
    """A mechanism of ``bayesdp bound``: its name, options and a function from the option values to
    its routes (registered with [`register`][bayesdp.mechanisms.registry.register], listed in
    [`MECHANISMS`][bayesdp.mechanisms.registry.MECHANISMS]).

    Args:
        name: the sub-command of ``bayesdp bound`` and the first argument of
            [`bound`][bayesdp.mechanisms.registry.bound].
        summary: one line for ``--help``.
        options: the command-line options (their ``dest`` are the keywords of
            [`bound`][bayesdp.mechanisms.registry.bound]).
        routes: maps ``{dest: value}`` (defaults filled in) to the list of [`Route`][bayesdp.mechanisms.registry.Route].
        description: the help text of the sub-command.
        epilog: text printed after the options in ``--help``.
        extra: flags read by [`bound`][bayesdp.mechanisms.registry.bound] (``epsilon_calibrates_noise``).

    Examples:
        >>> m = get_mechanism("ula-path")
        >>> m.summary, [o.dest for o in m.options][:3]
        ('ULA whole path (004 Theorem 5.4)', ['grad_bound', 'grad_diff', 'step_size'])
    """

    name: str
    summary: str
    options: tuple[Option, ...]
    routes: Callable[[Mapping[str, Any]], list[Route]]
    description: str = ""
    epilog: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


#: every registered mechanism by name (filled when :mod:`bayesdp.mechanisms` is imported)
MECHANISMS: dict[str, Mechanism] = {}


def register(mech: Mechanism) -> Mechanism:
    """Add ``mech`` to [`MECHANISMS`][bayesdp.mechanisms.registry.MECHANISMS] (a name may be registered once) and
    return it.

    Args:
        mech: the mechanism.

    Returns:
        ``mech`` (so that ``register`` can wrap a definition).

    Raises:
        RuntimeError: the name is taken.

    Examples:
        >>> from bayesdp.theorems.girsanov import theorem_5_4
        >>> toy = Mechanism("toy-path", "a path bound", (Option("--grad-diff", "Delta"),),
        ...                 routes=lambda p: [Route("004 Theorem 5.4", lambda: theorem_5_4(p["grad_diff"], 0.01, 100))])
        >>> register(toy) is toy, round(bound("toy-path", grad_diff=1.0, delta=1e-5).best.rdp(2.0), 6)
        (True, 0.5)
        >>> register(toy)
        Traceback (most recent call last):
        ...
        RuntimeError: mechanism 'toy-path' registered twice
        >>> del MECHANISMS["toy-path"]                                 # leave the registry as it was
    """
    if mech.name in MECHANISMS:
        raise RuntimeError(f"mechanism {mech.name!r} registered twice")
    MECHANISMS[mech.name] = mech
    return mech


def get_mechanism(name: str) -> Mechanism:
    """The registered mechanism called ``name``.

    Args:
        name: a key of [`MECHANISMS`][bayesdp.mechanisms.registry.MECHANISMS] (``bayesdp bound --help`` lists them).

    Returns:
        the [`Mechanism`][bayesdp.mechanisms.registry.Mechanism].

    Raises:
        AssumptionError: no such mechanism (the message lists the known ones).

    Examples:
        >>> get_mechanism("ula-final").name
        'ula-final'
    """
    if name not in MECHANISMS:
        known = ", ".join(sorted(MECHANISMS))
        raise AssumptionError(f"mechanism {name!r} is unknown; choose one of: {known}")
    return MECHANISMS[name]


def need(params: Mapping[str, Any], dest: str, what: str = "") -> Any:
    """A required option: raise a one-line error naming its flag when missing.

    Args:
        params: the option values by keyword.
        dest: the keyword (``step_size`` for ``--step-size``).
        what: what the option is, appended to the message.

    Returns:
        ``params[dest]``.

    Raises:
        AssumptionError: ``params[dest]`` is missing or ``None``.

    Examples:
        >>> need({"step_size": 0.1}, "step_size")
        0.1
        >>> need({}, "step_size", "gamma of the chain")
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --step-size is required: gamma of the chain
    """
    v = params.get(dest)
    if v is None:
        flag = "--" + dest.replace("_", "-")
        raise AssumptionError(f"{flag} is required{': ' + what if what else ''}")
    return v


def evaluate(mech_name: str, routes: Sequence[Route]) -> list[Certificate]:
    """Build every route's certificate; a route that raises becomes an invalid certificate.

    Args:
        mech_name: the mechanism's name (recorded in invalid certificates).
        routes: the routes to build.

    Returns:
        one certificate per route, in order.

    Raises:
        AssumptionError: no primary route is valid and certified (the first primary route's reason).

    Examples:
        >>> from bayesdp.theorems.girsanov import theorem_5_4
        >>> routes = [Route("004 Theorem 5.4", lambda: theorem_5_4(1.0, 0.01, 100)),
        ...           Route("004 Theorem 5.4", lambda: theorem_5_4(1.0, -0.01, 100), primary=False)]
        >>> [(c.valid, c.reason) for c in evaluate("toy", routes)]
        [(True, None), (False, 'step_size = -0.01 must be > 0; pass a positive number')]
    """
    certs: list[Certificate] = []
    primary_errors: list[str] = []
    any_primary_valid = False
    for r in routes:
        try:
            cert = r.build()
        except BayesDPError as exc:
            cert = Certificate.invalid(mech_name, r.source, str(exc), certified=r.certified)
            if r.primary:
                primary_errors.append(str(exc))
        except (ArithmeticError, ValueError) as exc:
            # a route whose arithmetic leaves the float range (overflow, division by an underflowed
            # constant) certifies nothing: an invalid route with a one-line reason, never a traceback
            why = numerical_failure(exc)
            cert = Certificate.invalid(mech_name, r.source, why, certified=r.certified)
            if r.primary:
                primary_errors.append(why)
        else:
            if r.primary and cert.valid and cert.certified:
                any_primary_valid = True
        certs.append(cert)
    if not any_primary_valid:
        msg = primary_errors[0] if primary_errors else f"no certificate covers this {mech_name} configuration"
        raise AssumptionError(msg)
    return certs


def bound(mechanism: str, *, delta: float | None = None, epsilon: float | None = None,
          **params: Any) -> BoundReport:
    """Every route of ``mechanism`` for the named constants, queried at delta or epsilon: the Python
    form of ``bayesdp bound MECHANISM ...``.

    Args:
        mechanism: a name in [`MECHANISMS`][bayesdp.mechanisms.registry.MECHANISMS] (``bayesdp bound --help`` lists
            them), e.g. ``"ula-final"``, ``"ula-path"``, ``"sgld-final"``.
        delta: query epsilon at this delta in (0, 1) ...
        epsilon: ... or delta at this epsilon > 0 (exactly one of the two).
        **params: the mechanism's constants by keyword (the flags without dashes, ``-`` -> ``_``:
            ``step_size``, ``num_steps``, ``strong_convexity``, ``grad_bound`` ...).

    Returns:
        a [`BoundReport`][bayesdp.certificate.BoundReport]: every route with its source, and ``best``.

    Raises:
        AssumptionError: unknown mechanism or option, a required constant missing, or no primary
            route's hypotheses hold (the message names the parameter and the condition).

    Examples:
        >>> from bayesdp import bound
        >>> r = bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
        >>> r.best.source
        'GDP composition of the path (Dong-Roth-Su Cor. 3.3)'
        >>> round(r.value(), 4)      # mu = grad_diff * sqrt(step_size * num_steps / 2) = sqrt(0.5)
        2.9432
    """
    mech = get_mechanism(mechanism)
    known = {o.dest for o in mech.options}
    unknown = sorted(set(params) - known)
    if unknown:
        raise AssumptionError(f"{mechanism} does not take option(s) {', '.join(unknown)}; "
                              f"it takes: {', '.join(sorted(known))}")
    # validate the query before computing anything
    BoundReport(mechanism=mechanism, parameters={}, certificates=(), delta=delta, epsilon=epsilon)
    full = {o.dest: (False if o.is_flag else o.default) for o in mech.options}
    full.update({k: v for k, v in params.items() if v is not None})
    if mech.extra.get("epsilon_calibrates_noise"):
        full["epsilon"] = epsilon  # the noise is calibrated to the queried epsilon
    routes = mech.routes(full)
    certs = evaluate(mechanism, routes)
    given = {k: v for k, v in full.items() if v is not None and v is not False and k in known}
    return BoundReport(mechanism=mechanism, parameters=given, certificates=tuple(certs), delta=delta,
                       epsilon=epsilon)
